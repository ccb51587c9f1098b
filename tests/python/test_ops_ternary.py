"""Ternary pointwise ops against NumPy (hypothesis): where, clamp, clamp_min,
clamp_max, lerp, addcmul, addcdiv — broadcasting of all three operands,
numbers, in-place and out= forms, and the errors."""
import pytest

import tessera
from oracle import ALL_DTYPES, SETTINGS, check, elements, strided, to_t

np = pytest.importorskip("numpy")
pytest.importorskip("hypothesis")
from hypothesis import given, strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

NUMERIC = [d for d in ALL_DTYPES if d is not np.bool_]
FLOATS = [np.float16, np.float32, np.float64]


def tdtype(np_dtype):
    return getattr(tessera, np.dtype(np_dtype).name)


@st.composite
def triple(draw, dtypes, first_bool=False):
    dtype = draw(st.sampled_from(dtypes))
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3, min_side=0, max_side=4))
    s0, s1, s2 = shapes.input_shapes
    a = draw(strided(np.bool_ if first_bool else dtype, s0))
    b = draw(strided(dtype, s1))
    c = draw(strided(dtype, s2))
    return dtype, a, b, c


@SETTINGS
@given(triple(ALL_DTYPES, first_bool=True))
def test_where(case):
    dtype, cond, a, b = case
    got = tessera.where(to_t(cond), to_t(a), to_t(b))
    assert got.dtype == tdtype(dtype)
    check(got, np.where(cond, a, b), dtype)
    check(to_t(a).where(to_t(cond), to_t(b)), np.where(cond, a, b), dtype)


def test_where_promotion_numbers_and_forms():
    c = tessera.tensor([True, False, True])
    i = tessera.tensor([1, 2, 3], dtype=tessera.int32)
    f = tessera.tensor([0.5, 1.5, 2.5], dtype=tessera.float16)
    assert tessera.where(c, i, f).dtype == tessera.float16
    assert tessera.where(c, i, f).tolist() == [1.0, 1.5, 3.0]
    assert tessera.where(c, i, 0).dtype == tessera.int32 and tessera.where(c, i, 0).tolist() == [1, 0, 3]
    assert tessera.where(c, 1.5, i).dtype == tessera.float32
    assert tessera.where(c, 1, 0).tolist() == [1, 0, 1] and tessera.where(c, 1, 0).dtype == tessera.int64
    assert tessera.where(c, 1.0, 0).dtype == tessera.float32
    out = tessera.empty(3, dtype=tessera.float64)
    assert tessera.where(c, i, -1, out=out) is out and out.tolist() == [1.0, -1.0, 3.0]
    x = tessera.tensor([1.0, 2.0, 3.0])
    assert x.where_(c, 9) is x and x.tolist() == [1.0, 9.0, 3.0]
    with pytest.raises(TypeError, match="where: condition must be a bool"):
        tessera.where(tessera.tensor([1, 0, 1]), i, i)
    with pytest.raises(ValueError, match="where"):
        tessera.where(c, tessera.ones(2), tessera.ones(3))
    with pytest.raises(ValueError, match="device"):
        tessera.where(c, i, tessera.ones(3, device="meta"))
    with pytest.raises(TypeError, match="cannot be cast"):
        tessera.where(c, i, f, out=tessera.empty(3, dtype=tessera.int32))


@SETTINGS
@given(triple(NUMERIC))
def test_clamp_with_tensor_bounds(case):
    dtype, x, lo, hi = case
    want = np.minimum(np.maximum(x, lo), hi)
    check(tessera.clamp(to_t(x), to_t(lo), to_t(hi)), want, dtype)
    check(to_t(x).clamp(min=to_t(lo)), np.broadcast_to(np.maximum(x, lo), np.broadcast_shapes(x.shape, lo.shape)),
          dtype)
    check(tessera.clamp(to_t(x), max=to_t(hi)), np.minimum(x, hi), dtype)
    check(tessera.clamp_min(to_t(x), to_t(lo)), np.maximum(x, lo), dtype)
    check(tessera.clamp_max(to_t(x), to_t(hi)), np.minimum(x, hi), dtype)


@SETTINGS
@given(st.sampled_from(NUMERIC).flatmap(lambda d: st.tuples(
    st.just(d), hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4).flatmap(lambda s: strided(d, s)))),
    st.sampled_from([None, -3, 2]), st.sampled_from([None, 5, 40]))
def test_clamp_with_numbers(case, lo, hi):
    dtype, x = case
    if lo is None and hi is None:
        with pytest.raises(ValueError, match="at least one of 'min' or 'max'"):
            tessera.clamp(to_t(x))
        return
    if np.dtype(dtype) == np.uint8 and lo is not None and lo < 0:
        lo = 0
    want = np.clip(x, lo, hi)
    check(tessera.clamp(to_t(x), lo, hi), want, dtype)
    assert tessera.clamp(to_t(x), lo, hi).dtype == tdtype(dtype)
    t = to_t(x).clone()
    assert t.clamp_(lo, hi) is t
    check(t, want, dtype)


def test_clamp_semantics():
    nan = float("nan")
    x = tessera.tensor([nan, -5.0, 0.5, 5.0])
    got = x.clamp(-1, 1).tolist()
    assert np.isnan(got[0]) and got[1:] == [-1.0, 0.5, 1.0]
    assert np.isnan(x.clamp(min=tessera.tensor(nan)).tolist()).all()  # a NaN bound gives NaN
    assert tessera.clamp(tessera.tensor([1, 5, 9]), 6, 2).tolist() == [2, 2, 2]  # min > max: max wins
    i = tessera.tensor([1, 2, 3])
    assert i.clamp(1.5, 2.5).dtype == tessera.float32  # promoted, as PyTorch
    assert i.clamp(1.5, 2.5).tolist() == [1.5, 2.0, 2.5]
    with pytest.raises(TypeError, match="cannot be cast"):
        i.clone().clamp_(1.5)
    assert i.clamp_min(2).tolist() == [2, 2, 3] and i.clamp_max(2).tolist() == [1, 2, 2]
    j = i.clone()
    assert j.clamp_min_(2) is j and j.tolist() == [2, 2, 3]
    assert j.clamp_max_(tessera.tensor([0, 5, 1])) is j and j.tolist() == [0, 2, 1]
    out = tessera.empty(3)
    assert tessera.clamp(i, 2, 2, out=out) is out and out.tolist() == [2.0, 2.0, 2.0]
    assert tessera.clamp_min(i, 3, out=out) is out and out.tolist() == [3.0, 3.0, 3.0]
    with pytest.raises(ValueError, match="shape"):
        tessera.clamp(i, 0, 1, out=tessera.empty(2))
    with pytest.raises(TypeError):
        tessera.clamp(i, tessera.tensor(0), 1)  # mixed tensor and number bounds, as in PyTorch
    m = tessera.ones(2, 3, device="meta")
    assert tessera.clamp(m, 0, 1).shape == (2, 3)


@SETTINGS
@given(triple(FLOATS))
def test_lerp(case):
    dtype, a, e, w = case
    w = np.asarray(w / 100, dtype=dtype)
    a64, e64, w64 = (v.astype(np.float64) for v in (a, e, w))
    want = np.where(np.abs(w64) < 0.5, a64 + w64 * (e64 - a64), e64 - (e64 - a64) * (1 - w64))
    got = tessera.lerp(to_t(a), to_t(e), to_t(w))
    assert got.dtype == tdtype(dtype)
    rtol = 1e-2 if np.dtype(dtype) == np.float16 else 1e-5
    out = np.asarray(got.tolist(), dtype=np.float64).reshape(want.shape)
    np.testing.assert_allclose(out, want, rtol=rtol, atol=rtol * (1 + np.abs(a64).max(initial=0) + np.abs(e64).max(initial=0)))


def test_lerp_forms_and_errors():
    a = tessera.tensor([0.0, 10.0])
    e = tessera.tensor([10.0, 20.0])
    assert tessera.lerp(a, e, 0.25).tolist() == [2.5, 12.5]
    assert a.lerp(e, 1.0).tolist() == [10.0, 20.0]  # exact at weight 1
    assert a.lerp(e, tessera.tensor([0.0, 0.5])).tolist() == [0.0, 15.0]
    out = tessera.empty(2)
    assert tessera.lerp(a, e, 0.5, out=out) is out and out.tolist() == [5.0, 15.0]
    x = a.clone()
    assert x.lerp_(e, 0.5) is x and x.tolist() == [5.0, 15.0]
    with pytest.raises(TypeError, match="lerp.*floating"):
        tessera.lerp(tessera.tensor([1, 2]), tessera.tensor([1, 2]), 0.5)
    with pytest.raises(TypeError, match="lerp.*end"):
        tessera.lerp(a, e.to(tessera.float64), 0.5)
    with pytest.raises(TypeError, match="lerp.*weight"):
        tessera.lerp(a, e, tessera.tensor([0.5, 0.5], dtype=tessera.float64))
    with pytest.raises(ValueError, match="lerp"):
        tessera.lerp(a, tessera.ones(3), 0.5)


@SETTINGS
@given(triple(NUMERIC), st.sampled_from([1, 2, -1]))
def test_addcmul(case, value):
    dtype, s, x, y = case
    got = tessera.addcmul(to_t(s), to_t(x), to_t(y), value=value)
    assert got.dtype == tdtype(dtype)
    if np.dtype(dtype).kind == "f":
        want = s.astype(np.float64) + value * (x.astype(np.float64) * y.astype(np.float64))
        want = want.astype(dtype).astype(np.float64) if np.dtype(dtype) == np.float16 else want
        rtol = 2e-3 if np.dtype(dtype) == np.float16 else 1e-5
        out = np.asarray(got.tolist(), dtype=np.float64).reshape(want.shape)
        np.testing.assert_allclose(out, want, rtol=rtol, atol=rtol * 100)
    else:
        with np.errstate(all="ignore"):
            want = (s + np.asarray(value).astype(dtype) * (x * y)).astype(dtype)  # wraps like NumPy
        check(got, want, dtype)


@SETTINGS
@given(triple(FLOATS), st.sampled_from([1, 0.5, -2]))
def test_addcdiv(case, value):
    dtype, s, x, y = case
    y = np.where(np.abs(y) < 0.5, 1, y).astype(dtype)
    want = s.astype(np.float64) + value * (x.astype(np.float64) / y.astype(np.float64))
    got = tessera.addcdiv(to_t(s), to_t(x), to_t(y), value=value)
    assert got.dtype == tdtype(dtype)
    rtol = 4e-3 if np.dtype(dtype) == np.float16 else 1e-5
    out = np.asarray(got.tolist(), dtype=np.float64).reshape(want.shape)
    np.testing.assert_allclose(out, want, rtol=rtol, atol=rtol * 300)


def test_addcmul_addcdiv_forms_and_errors():
    s = tessera.tensor([1.0, 2.0])
    x = tessera.tensor([2.0, 3.0])
    y = tessera.tensor([4.0, 6.0])
    assert tessera.addcmul(s, x, y, value=0.5).tolist() == [5.0, 11.0]
    assert s.addcdiv(x, y, value=2).tolist() == [2.0, 3.0]
    out = tessera.empty(2, dtype=tessera.float64)
    assert tessera.addcmul(s, x, y, out=out) is out and out.tolist() == [9.0, 20.0]
    t = s.clone()
    assert t.addcmul_(x, y) is t and t.tolist() == [9.0, 20.0]
    assert t.addcdiv_(x, y) is t and t.tolist() == [9.5, 20.5]
    i = tessera.tensor([1, 2])
    assert tessera.addcmul(i, i, i, value=3).tolist() == [4, 14]
    assert tessera.addcdiv(i, x, i).dtype == tessera.float32
    with pytest.raises(TypeError, match="addcdiv.*integer division"):
        tessera.addcdiv(s, i, i)
    with pytest.raises(TypeError, match="addcmul.*value"):
        tessera.addcmul(i, i, i, value=0.5)
    with pytest.raises(TypeError, match="addcmul.*bool"):
        b = tessera.tensor([True])
        tessera.addcmul(b, b, b)
    with pytest.raises(TypeError, match="cannot be cast"):
        i.clone().addcmul_(x, x)
    with pytest.raises(ValueError, match="addcmul"):
        tessera.addcmul(s, x, tessera.ones(3))


def test_bfloat16():
    rng = np.random.default_rng(1)
    s, x, y = (rng.uniform(0.5, 3, size=(2, 3)).astype(np.float32) for _ in range(3))
    ts, tx, ty = (to_t(v).to(tessera.bfloat16) for v in (s, x, y))
    rs, rx, ry = (np.asarray(t.to(tessera.float32).tolist(), dtype=np.float64) for t in (ts, tx, ty))
    cond = rx > 1.5
    cases = [
        (tessera.where(to_t(cond), ts, tx), np.where(cond, rs, rx)),
        (tessera.clamp(ts, tx, ty), np.minimum(np.maximum(rs, rx), ry)),
        (tessera.lerp(ts, tx, 0.25), rs + 0.25 * (rx - rs)),
        (tessera.addcmul(ts, tx, ty, value=0.5), rs + 0.5 * rx * ry),
        (tessera.addcdiv(ts, tx, ty, value=2), rs + 2 * rx / ry),
    ]
    for got, want in cases:
        assert got.dtype == tessera.bfloat16
        np.testing.assert_allclose(got.to(tessera.float32).tolist(), want, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_transposed_operands_in_tiles(dtype):
    # Operands running across the output's layout (b.T) take the cpu plugin's
    # tiled walk from 16384 elements on: results bit for bit NumPy's.
    rng = np.random.default_rng(6)
    shape = (137, 260)
    a = (rng.standard_normal(shape) * 10).astype(dtype)
    b = (rng.standard_normal(shape[::-1]) * 10).astype(dtype)
    c = rng.random(shape[::-1]) < 0.5
    got = tessera.where(to_t(c).t(), to_t(a), to_t(b).t())
    assert np.from_dlpack(got.contiguous()).tobytes() == np.where(c.T, a, b.T).tobytes()
    got = tessera.clamp(to_t(b).t(), to_t(a) - 3, to_t(a) + 3)
    assert np.from_dlpack(got.contiguous()).tobytes() == np.minimum(np.maximum(b.T, a - 3), a + 3).tobytes()
