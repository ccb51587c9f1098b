"""Shared pieces of the NumPy-oracle suites: dtypes, tolerances, hypothesis
settings and strategies (strided NumPy views imported zero-copy through DLPack),
and the comparisons against NumPy's results."""
import os

import pytest

import tessera

np = pytest.importorskip("numpy")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, settings, strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

DTYPES = [np.int32, np.int64, np.float32, np.float64]
# Every dtype NumPy and Tessera share, for the ops whose semantics agree on all of them.
ALL_DTYPES = [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32, np.float64]
# Tolerances per floating dtype (the result is rounded to the dtype once).
TOLERANCE = {np.dtype(np.float16): (2e-3, 1e-3), np.dtype(np.float32): (2e-6, 1e-5), np.dtype(np.float64): (2e-6, 1e-5)}
# No example database (nothing written into the tree); no timing health checks,
# since CTest runs suites in parallel on shared cores and timings never gate tests.
# Under CI (CI=true) the examples are derandomized, so a run is reproducible;
# elsewhere every run explores new ones.
SETTINGS = settings(max_examples=60, deadline=None, database=None, derandomize=bool(os.environ.get("CI")),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def elements(dtype):
    kind = np.dtype(dtype).kind
    if kind == "f":
        return st.floats(-100, 100, width=np.dtype(dtype).itemsize * 8)
    if kind == "b":
        return st.booleans()
    info = np.iinfo(dtype)
    return st.integers(max(int(info.min), -1000), min(int(info.max), 1000))


@st.composite
def strided(draw, dtype, shape):
    """An array of `shape`, often a non-contiguous view (reversed, stepped, transposed)."""
    kind = draw(st.sampled_from(["plain", "reversed", "stepped", "transposed"]))
    if kind == "transposed" and len(shape) >= 2:
        base = draw(hnp.arrays(dtype, tuple(reversed(shape)), elements=elements(dtype)))
        return base.T
    if kind in ("reversed", "stepped") and len(shape) >= 1:
        step = -1 if kind == "reversed" else 2
        big = (shape[0] * abs(step),) + tuple(shape[1:])
        base = draw(hnp.arrays(dtype, big, elements=elements(dtype)))
        return base[::step] if step > 0 else base[::-1]
    return draw(hnp.arrays(dtype, shape, elements=elements(dtype)))


def to_t(a):
    return tessera.from_dlpack(a)


def check(got, want, dtype):
    want = np.asarray(want)
    assert got.shape == want.shape
    out = np.from_dlpack(got.contiguous()) if got.numel() else np.asarray(got.tolist()).reshape(got.shape)
    if np.dtype(dtype).kind == "f" or want.dtype.kind == "f":
        rtol, atol = TOLERANCE.get(np.dtype(dtype), TOLERANCE[np.dtype(np.float32)])
        np.testing.assert_allclose(out.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol)
    else:
        assert out.tolist() == want.tolist()


def check_accumulated(got, want, abs_terms, n_terms, dtype):
    """Sums and products: the rounding error of a float accumulation grows with
    the magnitude of its terms, not of its (possibly cancelled) result, so the
    bound is n * eps(dtype) * sum |term| (plus check()'s tolerance)."""
    if np.dtype(dtype).kind != "f":
        return check(got, want, dtype)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape
    out = np.asarray(got.tolist(), dtype=np.float64).reshape(want.shape)
    rtol, atol = TOLERANCE[np.dtype(dtype)]
    bound = rtol * np.abs(want) + atol + max(n_terms, 1) * np.finfo(dtype).eps * np.asarray(abs_terms, dtype=np.float64)
    assert np.all(np.abs(out - want) <= bound), (out, want, bound)


