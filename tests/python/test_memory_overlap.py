"""Aliasing is judged by memory, not by storage identity (issue 13, point 3).

Tensors imported separately through DLPack from overlapping NumPy views share
no Tessera storage, yet in-place ops and copy_ between them must give what they
give for overlapping views of one storage: the result of the same computation
on separate memory. NumPy is the oracle: its ufuncs detect overlap between
operands and buffer as needed, so `np.add(b[d], b[s], out=b[d])` on a copy of
the buffer is the non-aliased result.
"""
import pytest

import tessera

np = pytest.importorskip("numpy")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402

DTYPES = [np.float64, np.float32, np.int64, np.int32, np.int16, np.uint8]


def imp(view):
    return tessera.from_dlpack(view)


# (destination, source) index expressions over a 1-D buffer of 64 elements,
# each pair the same length. The strided ones go through the kernels' general
# loops (no memcpy/memmove to rescue them).
PAIRS = {
    "shift_forward": (np.s_[1:], np.s_[:-1]),
    "shift_backward": (np.s_[:-1], np.s_[1:]),
    "shift_forward_strided": (np.s_[2::2], np.s_[:-2:2]),
    "shift_backward_strided": (np.s_[:-2:2], np.s_[2::2]),
    "reversed": (np.s_[:], np.s_[::-1]),
    "reversed_half": (np.s_[16:48], np.s_[47:15:-1]),
    "partial": (np.s_[0:40], np.s_[24:64]),
    "partial_strided": (np.s_[0:60:3], np.s_[5:65:3]),
}
N = 64


def buffer(dtype):
    return (np.arange(N) % 50 + 1).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_issue_example(dtype):
    a = np.arange(8).astype(dtype)
    x = imp(a)
    x.add_(imp(a[::-1]))
    assert a.tolist() == [7] * 8
    assert x.tolist() == [7] * 8


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_copy_between_overlapping_imports(pair, dtype):
    d, s = PAIRS[pair]
    a = buffer(dtype)
    want = a.copy()
    want[d] = want[s].copy()
    imp(a[d]).copy_(imp(a[s]))
    assert a.tolist() == want.tolist()


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_copy_with_a_dtype_change_between_overlapping_imports(pair):
    # Two imports of one buffer seen with different dtypes of one element size.
    d, s = PAIRS[pair]
    a = buffer(np.int32)
    f = a.view(np.float32)
    f[:] = a.astype(np.float32)  # a now holds the float bit patterns
    want_f = f.copy()
    want_f[d] = (f[s].view(np.int32)).astype(np.float32)
    imp(f[d]).copy_(imp(a[s]))
    assert f.tolist() == want_f.tolist()


BINARY = {
    "add_": np.add,
    "sub_": np.subtract,
    "mul_": np.multiply,
    "maximum_": np.maximum,
    "minimum_": np.minimum,
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("pair", sorted(PAIRS))
@pytest.mark.parametrize("op", sorted(BINARY))
def test_inplace_binary_with_an_overlapping_import(op, pair, dtype):
    d, s = PAIRS[pair]
    a = buffer(dtype)
    want = a.copy()
    BINARY[op](want[d], want[s], out=want[d])
    getattr(imp(a[d]), op)(imp(a[s]))
    assert a.tolist() == want.tolist()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_inplace_ternary_with_overlapping_imports(pair, dtype):
    d, s = PAIRS[pair]
    # addcmul_: self += value * t1 * t2, both factors overlapping self.
    a = buffer(dtype)
    w = a.copy()
    w[d] = w[d] + 2 * w[s] * w[s][::-1]
    imp(a[d]).addcmul_(imp(a[s]), imp(a[s][::-1]), value=2)
    np.testing.assert_allclose(a, w, rtol=1e-6)
    # lerp_: self += weight * (end - self).
    a = buffer(dtype)
    w = a.copy()
    w[d] = w[d] + 0.25 * (w[s] - w[d])
    imp(a[d]).lerp_(imp(a[s]), tessera.full(list(a[d].shape), 0.25, dtype=getattr(tessera, np.dtype(dtype).name)))
    np.testing.assert_allclose(a, w, rtol=1e-6)
    # clamp_min_ with a tensor bound overlapping self.
    a = buffer(dtype)
    w = a.copy()
    w[d] = np.maximum(w[d], w[s])
    imp(a[d]).clamp_min_(imp(a[s]))
    assert a.tolist() == w.tolist()


@pytest.mark.parametrize("dtype", [np.float64, np.int32])
@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_out_overlapping_an_input(pair, dtype):
    d, s = PAIRS[pair]
    # out= over the first input's memory, the second overlapping it.
    a = buffer(dtype)
    want = a.copy()
    want[d] = want[d] * want[s]
    tessera.mul(imp(a[d]), imp(a[s]), out=imp(a[d]))
    assert a.tolist() == want.tolist()
    # out= over the second input's memory.
    a = buffer(dtype)
    want = a.copy()
    want[s] = want[d] + want[s]
    tessera.add(imp(a[d]), imp(a[s]), out=imp(a[s]))
    assert a.tolist() == want.tolist()


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_scatter_and_index_add_with_src_exactly_self(dtype):
    # The kernel writes self at other positions than it reads: even a source
    # that is exactly self (same storage, or another import) must be read first.
    for same_import in (True, False):
        a = np.array([1, 2, 3], dtype=dtype)
        x = imp(a)
        x.scatter_(0, tessera.tensor([2, 0, 1]), x if same_import else imp(a))
        assert a.tolist() == [2, 3, 1]
        a = np.array([1, 2, 3], dtype=dtype)
        x = imp(a)
        x.index_add_(0, tessera.tensor([1, 2, 0]), x if same_import else imp(a))
        assert a.tolist() == [4, 3, 5]


def test_scatter_with_index_overlapping_self():
    a = np.array([2, 0, 1], dtype=np.int64)
    want = a.copy()
    want[a.copy()] = np.array([7, 8, 9])
    x = imp(a)
    x.scatter_(0, imp(a), tessera.tensor([7, 8, 9]))
    assert a.tolist() == want.tolist()


def test_addmm_with_a_matrix_overlapping_self():
    base = np.arange(1, 10, dtype=np.float64)
    a = base.reshape(3, 3)
    want = a + a.T @ a
    imp(a).addmm_(imp(a.T), imp(base.reshape(3, 3)))
    np.testing.assert_allclose(a, want)


def test_views_of_one_storage_that_do_not_overlap_stay_correct():
    a = np.arange(8.0)
    x = imp(a)
    x[:4].add_(x[4:])
    assert a.tolist() == [4, 6, 8, 10, 4, 5, 6, 7]
    x = tessera.arange(8.0)
    x[1:].copy_(x[:-1].clone())
    x[4:].copy_(x[:4])  # disjoint halves of one storage
    assert x.tolist() == [0, 0, 1, 2, 0, 0, 1, 2]


def test_version_counters_of_separate_imports_are_separate():
    # Documented (docs/dlpack.md): an import has its own version counter; writes
    # through another import (or NumPy) of the same memory do not bump it.
    a = np.arange(4.0)
    x, y = imp(a), imp(a)
    v = x._version
    y.add_(1)
    a[0] = 10
    assert x._version == v
    assert x.tolist() == [10, 2, 3, 4]


@st.composite
def overlapping_slices(draw):
    n = draw(st.integers(1, 40))
    length = draw(st.integers(1, n))

    def one():
        step = draw(st.sampled_from([1, 2, 3, -1, -2]))
        span = (length - 1) * abs(step) + 1
        if span > n:
            step = 1 if step > 0 else -1
            span = length
        start = draw(st.integers(0, n - span))
        return slice(start, start + span, step) if step > 0 else slice(start + span - 1, start - 1 if start else None, step)

    return n, one(), one()


@settings(max_examples=200, deadline=None, database=None)
@given(overlapping_slices(), st.sampled_from(["copy_", "add_", "mul_", "sub_"]), st.sampled_from(DTYPES))
def test_any_two_views_of_one_buffer(case, op, dtype):
    n, d, s = case
    a = (np.arange(n) % 7 + 1).astype(dtype)
    want = a.copy()
    if op == "copy_":
        want[d] = want[s].copy()
    else:
        {"add_": np.add, "mul_": np.multiply, "sub_": np.subtract}[op](want[d], want[s], out=want[d])
    getattr(imp(a[d]), op)(imp(a[s]))
    assert a.tolist() == want.tolist()
