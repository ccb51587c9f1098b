"""Binary pointwise ops against NumPy (hypothesis): arithmetic, comparisons,
logical and bitwise ops, shifts; numbers on either side, Python operators,
in-place and out= forms, and the errors."""
import operator

import pytest

import tessera
from oracle import ALL_DTYPES, SETTINGS, check, elements, strided, to_t

np = pytest.importorskip("numpy")
pytest.importorskip("hypothesis")
from hypothesis import given, strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

INT_DTYPES = [np.uint8, np.int8, np.int16, np.int32, np.int64]
FLOAT_DTYPES = [np.float16, np.float32, np.float64]


def tdtype(np_dtype):
    return getattr(tessera, np.dtype(np_dtype).name)


def is_float(dtype):
    return np.dtype(dtype).kind == "f"


@st.composite
def pair(draw, dtypes=ALL_DTYPES):
    dtype = draw(st.sampled_from(dtypes))
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=0, max_side=4))
    a = draw(strided(dtype, shapes.input_shapes[0]))
    b = draw(strided(dtype, shapes.input_shapes[1]))
    return dtype, a, b


def nonzero(b):
    return np.where(b == 0, 1, b).astype(b.dtype)


# ---------------------------------------------------------------------------
# Arithmetic
# ---------------------------------------------------------------------------

@SETTINGS
@given(pair([d for d in ALL_DTYPES if d is not np.bool_]))
def test_remainder_and_fmod(case):
    dtype, a, b = case
    if not is_float(dtype):
        b = nonzero(b)
    with np.errstate(all="ignore"):
        check(tessera.remainder(to_t(a), to_t(b)), np.remainder(a, b), dtype)
        check(tessera.fmod(to_t(a), to_t(b)), np.fmod(a, b), dtype)
        check(to_t(a) % to_t(b), np.remainder(a, b), dtype)
    assert tessera.remainder(to_t(a), to_t(b)).dtype == tdtype(dtype)


def exact_remainder(a, b):
    """C's fmod (exact), then Python's sign rule, as docs/ops/binary.md gives it."""
    with np.errstate(all="ignore"):
        r = np.fmod(a, b)
        r = np.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)
        return np.where(r == 0, np.copysign(np.zeros_like(r), b), r)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_remainder_and_fmod_are_exact_in_every_layout(dtype):
    # The cpu plugin runs SLEEF's vector fmod, exact while x / y stays inside
    # the type's range and y is normal, and C's fmod in the lanes outside that
    # (huge quotients, subnormal or zero divisors, NaN, infinities): every
    # result bit for bit as C's, dense, against a number either way, strided.
    rng = np.random.default_rng(5)
    tiny = np.finfo(dtype).tiny
    x = np.concatenate([rng.standard_normal(3000) * 10, rng.standard_normal(300) * float(np.finfo(dtype).max) / 1e3,
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 7.0, -7.0, 0.7, -0.7, tiny / 4, 5.0]])
    y = np.concatenate([rng.standard_normal(3000), np.full(300, tiny * 3), [0.7] * 11])
    rng.shuffle(y)
    with np.errstate(all="ignore"):
        x, y = x.astype(dtype), y.astype(dtype)
        y[::97] = tiny / 8  # subnormal divisors (0 in float16's flush-free rounding where it underflows)
        y[5::211] = np.inf
        y[7::233] = 0.0
    comp = np.float32 if dtype == np.float16 else dtype

    def same(got, want):
        got, want = np.asarray(got.tolist(), dtype=dtype), want.astype(dtype)
        nan = np.isnan(want)
        assert np.array_equal(np.isnan(got), nan)
        bits = f"u{np.dtype(dtype).itemsize}"
        assert np.array_equal(got[~nan].view(bits), want[~nan].view(bits))

    xc, yc = x.astype(comp), y.astype(comp)
    with np.errstate(all="ignore"):
        same(tessera.fmod(to_t(x), to_t(y)), np.fmod(xc, yc))
        same(tessera.remainder(to_t(x), to_t(y)), exact_remainder(xc, yc))
        for number in (0.7, -3.0, float(tiny) / 8, 1e-30):
            n = comp(dtype(number))  # a number takes the tensor's dtype first
            same(tessera.fmod(to_t(x), number), np.fmod(xc, n))
            same(tessera.remainder(to_t(x), number), exact_remainder(xc, np.full_like(xc, n)))
            same(tessera.remainder(to_t(np.array(number, dtype=dtype)), to_t(y)), exact_remainder(np.full_like(yc, n), yc))
        wide = np.stack([x, x], 1)
        same(tessera.remainder(to_t(wide)[:, 1], to_t(y)), exact_remainder(xc, yc))


def test_remainder_signs_follow_python():
    a = tessera.tensor([7, -7, 7, -7])
    b = tessera.tensor([3, 3, -3, -3])
    assert (a % b).tolist() == [7 % 3, -7 % 3, 7 % -3, -7 % -3]
    assert a.fmod(b).tolist() == [1, -1, 1, -1]
    f = tessera.tensor([5.5, -5.5, 5.5, -5.5])
    g = tessera.tensor([2.0, 2.0, -2.0, -2.0])
    assert (f % g).tolist() == [5.5 % 2, -5.5 % 2, 5.5 % -2, -5.5 % -2]
    assert tessera.fmod(f, g).tolist() == [1.5, -1.5, 1.5, -1.5]
    # The most negative integer by -1 does not trap.
    m = tessera.tensor([-(2 ** 31)], dtype=tessera.int32)
    assert (m % -1).tolist() == [0] and m.fmod(-1).tolist() == [0]
    # Float remainder by zero is NaN, as in NumPy.
    assert np.isnan((tessera.tensor([1.0]) % 0.0).item())


@SETTINGS
@given(pair([d for d in ALL_DTYPES if d is not np.bool_]))
def test_pow(case):
    dtype, a, b = case
    if is_float(dtype):
        a = np.asarray(np.abs(a), dtype=dtype)  # negative bases with fractional powers are NaN on both sides
        b = np.asarray(b / 25, dtype=dtype)  # keep results finite
        with np.errstate(all="ignore"):
            want = np.power(a.astype(np.float64), b.astype(np.float64)).astype(dtype)  # overflow: inf
        check(tessera.pow(to_t(a), to_t(b)), want, dtype)
    else:
        b = np.asarray(np.abs(b.astype(np.int64)) % 6, dtype=dtype)
        check(tessera.pow(to_t(a), to_t(b)), np.power(a, b), dtype)  # wraps like NumPy
    assert (to_t(a) ** to_t(b)).tolist() == tessera.pow(to_t(a), to_t(b)).tolist() or is_float(dtype)


def test_pow_with_numbers():
    t = tessera.tensor([1, 2, 3])
    assert (t ** 2).tolist() == [1, 4, 9] and (t ** 2).dtype == tessera.int64
    assert (2 ** t).tolist() == [2, 4, 8]
    assert (t ** 0.5).dtype == tessera.float32
    np.testing.assert_allclose((t ** 0.5).tolist(), np.sqrt([1, 2, 3]), rtol=1e-6)
    assert (2.0 ** t).tolist() == [2.0, 4.0, 8.0] and (2.0 ** t).dtype == tessera.float32
    h = tessera.tensor([2.0], dtype=tessera.float16)
    assert (h ** 3).dtype == tessera.float16 and (h ** 3).tolist() == [8.0]
    with pytest.raises(ValueError, match="negative integer powers"):
        t ** -1
    with pytest.raises(ValueError, match="negative integer powers"):
        tessera.pow(t, tessera.tensor([1, -2, 1]))
    with pytest.raises(TypeError, match="pow.*bool"):
        tessera.ones(2, dtype=tessera.bool) ** tessera.ones(2, dtype=tessera.bool)


def _float32_ulps(got, want):
    """|got - want| in float32 spacings at want (float64); 0 where both are the same inf or NaN."""
    with np.errstate(all="ignore"):  # want beyond float's range rounds to inf
        want32 = want.astype(np.float32)
        spacing = np.spacing(np.abs(want32)).astype(np.float64)
        err = np.abs(got.astype(np.float64) - want) / spacing
    same = (np.isnan(got) & np.isnan(want32)) | (np.isinf(want32) & (got == want32))
    return np.where(same, 0, np.nan_to_num(err, nan=1e9, posinf=1e9))


def test_pow_float32_accuracy():
    # float32 pow at AVX-512 is pow_math.hpp's, in double (within 0.51 ulp: one rounding to
    # float); SLEEF's u10 (1 ulp) at AVX2 and on the baseline. Against NumPy's float64 pow:
    # x over a sweep of positive bit patterns (subnormals to the largest float), y of several
    # kinds (normal, wide, integers, scaled so results overflow and underflow, 1/2), x near 1
    # with huge y, and mantissas of exactly 1.5 (where the exponent and the mantissa split).
    rng = np.random.default_rng(7)
    x = np.arange(1, 0x7F800000, 2039, dtype=np.uint32).view(np.float32)
    kind = np.arange(len(x)) % 5
    with np.errstate(divide="ignore"):
        scaled = rng.uniform(-150, 150, len(x)) / np.maximum(np.abs(np.log2(x.astype(np.float64))), 1e-30)
    y = np.select([kind == 0, kind == 1, kind == 2, kind == 3],
                  [rng.standard_normal(len(x)), rng.standard_normal(len(x)) * 30,
                   np.round(rng.standard_normal(len(x)) * 10), scaled], 0.5).astype(np.float32)
    near_one = (np.int64(0x3F800000) + rng.integers(-300, 300, 100000)).astype(np.uint32).view(np.float32)
    x = np.concatenate([x, near_one, np.ldexp(np.float32(1.5), np.arange(-140, 127)).astype(np.float32)])
    y = np.concatenate([y, (rng.standard_normal(100000) * 1e6).astype(np.float32),
                        np.full(267, 0.75, np.float32)])
    got = np.from_dlpack(tessera.pow(to_t(x), to_t(y)))
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), y.astype(np.float64))
    err = _float32_ulps(got, want)
    bound = 0.51 if "avx512 kernels" in tessera.info() else 1
    assert err.max() <= bound, (x[np.argmax(err)], y[np.argmax(err)], got[np.argmax(err)], err.max())


def test_pow_float32_special_values_among_ordinary_ones():
    # C's pow special cases (zero, negative and non-finite bases, non-finite exponents), each
    # inside a vector of ordinary lanes (which AVX-512 computes in double), bit for bit as NumPy.
    xs = np.float32([0.0, -0.0, -2.0, -8.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, 0.5])
    ys = np.float32([0.0, -0.0, 1.0, 2.0, 3.0, -1.0, -3.0, 0.5, 1 / 3, np.inf, -np.inf, np.nan])
    sx, sy = (v.ravel() for v in np.meshgrid(xs, ys))
    ordinary = np.float32(1.7)
    x = np.full(len(sx) * 16, ordinary, np.float32)
    y = np.full(len(sx) * 16, np.float32(1.3), np.float32)
    x[5::16], y[5::16] = sx, sy  # one special lane per 16
    got = np.from_dlpack(tessera.pow(to_t(x), to_t(y)))
    with np.errstate(all="ignore"):
        want = np.power(x, y)
    assert np.array_equal(got, want, equal_nan=True), [(a, b, g, w) for a, b, g, w in zip(x, y, got, want)
                                                      if not (g == w or (np.isnan(g) and np.isnan(w)))][:5]
    number = ~np.isnan(want)
    assert np.array_equal(np.signbit(got[number]), np.signbit(want[number]))  # pow(-0, -1) is -inf


@SETTINGS
@given(pair())
def test_maximum_minimum(case):
    dtype, a, b = case
    check(tessera.maximum(to_t(a), to_t(b)), np.maximum(a, b), dtype)
    check(tessera.minimum(to_t(a), to_t(b)), np.minimum(a, b), dtype)
    assert tessera.maximum(to_t(a), to_t(b)).dtype == tdtype(dtype)


def test_maximum_minimum_propagate_nan():
    nan = float("nan")
    a = tessera.tensor([nan, 1.0, 2.0, nan])
    b = tessera.tensor([1.0, nan, 1.0, nan])
    for got in (tessera.maximum(a, b), tessera.minimum(a, b)):
        assert np.isnan(got.tolist()).tolist() == [True, True, False, True]
    assert tessera.maximum(a, b).tolist()[2] == 2.0 and tessera.minimum(a, b).tolist()[2] == 1.0


@SETTINGS
@given(pair())
def test_atan2(case):
    dtype, a, b = case
    got = tessera.atan2(to_t(a), to_t(b))
    want_dtype = dtype if is_float(dtype) else np.float32
    assert got.dtype == tdtype(want_dtype)
    check(got, np.arctan2(a.astype(np.float64), b.astype(np.float64)), want_dtype)


@SETTINGS
@given(pair([d for d in ALL_DTYPES if d is not np.bool_]), st.sampled_from(["trunc", "floor"]))
def test_rounding_division(case, mode):
    dtype, a, b = case
    if is_float(dtype):
        b = np.where(np.abs(b) < 1e-2, 1, b).astype(dtype)
        q = a.astype(np.float64) / b.astype(np.float64)
        want = np.trunc(q) if mode == "trunc" else np.floor_divide(a.astype(np.float64), b.astype(np.float64))
        got = tessera.div(to_t(a), to_t(b), rounding_mode=mode)
        # A quotient within rounding of an integer may round either way in the narrower dtype.
        out = np.asarray(got.tolist(), dtype=np.float64).reshape(want.shape)
        assert np.all((np.abs(out - want) <= 1) | np.isclose(out, want, rtol=2e-3))
        assert out.size < 4 or np.mean(out == want) >= 0.5
    else:
        b = nonzero(b)
        want = np.floor_divide(a, b) if mode == "floor" else (np.trunc(a.astype(np.float64) / b)).astype(dtype)
        if mode == "floor":
            check(to_t(a) // to_t(b), want, dtype)
        check(tessera.div(to_t(a), to_t(b), rounding_mode=mode), want, dtype)


def python_divmod_table(a, b):
    """Python's a // b and a % b, a C-style truncated quotient and fmod, element by element
    (exact integers, no NumPy)."""
    fl, rem, tr, fm = [], [], [], []
    for x, y in zip(a.tolist(), b.tolist()):
        fl.append(x // y)
        rem.append(x % y)
        t = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
        tr.append(t)
        fm.append(x - t * y)
    return fl, rem, tr, fm


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64])
def test_integer_division_is_exact_at_the_extremes(dtype):
    # Integers of 32 bits or less divide through one double division (the cpu
    # plugin's trunc_divmod32, vectorized); every quotient and remainder must
    # be the exact integer one, wrapped to the dtype: every int8 / uint8 pair,
    # and the extremes, -1, +-1 neighbours and random values of the wider
    # types, dense, against a number and broadcast, against Python's integers.
    info = np.iinfo(dtype)
    if info.bits == 8:
        grid = np.arange(info.min, info.max + 1)
        a, b = np.meshgrid(grid, grid[grid != 0])
        a, b = a.ravel(), b.ravel()
    else:
        rng = np.random.default_rng(info.bits)
        edges = [info.min, info.min + 1, info.max, info.max - 1, -1, 1, 0, 2, -2, 3, 7, -7,
                 info.max // 2, info.min // 2, 1 << (info.bits - 2)]
        edges = [v for v in edges if info.min <= v <= info.max]
        vals = np.concatenate([edges, rng.integers(info.min, info.max, 3000, endpoint=True),
                               rng.integers(-1000, 1000, 3000)]).clip(info.min, info.max)
        a = np.repeat(vals, 7)
        b = np.tile(np.concatenate([[v for v in edges if v != 0], rng.integers(-50, 50, 7)]), len(vals))[: len(a)]
        b[b == 0] = 5
    a, b = a.astype(dtype), b.astype(dtype)
    fl, rem, tr, fm = (np.array(v, dtype=object) for v in python_divmod_table(a, b))
    def same(got, want):
        want = np.array([((int(x) - info.min) % (1 << info.bits)) + info.min for x in want], dtype=dtype)
        got = np.from_dlpack(got.contiguous())
        assert got.dtype == want.dtype
        bad = np.flatnonzero(got != want)
        assert bad.size == 0, (a[bad[:5]], b[bad[:5]], got[bad[:5]], want[bad[:5]])

    ta, tb = to_t(a), to_t(b)
    same(tessera.remainder(ta, tb), rem)
    same(tessera.fmod(ta, tb), fm)
    same(tessera.div(ta, tb, rounding_mode="floor"), fl)
    same(tessera.div(ta, tb, rounding_mode="trunc"), tr)
    for number in (7, -1, -3) if info.min < 0 else (7, 1, 3):
        nb = np.full_like(b, number)
        fl, rem, tr, fm = python_divmod_table(a, nb)
        same(tessera.remainder(ta, number), rem)
        same(tessera.div(ta, number, rounding_mode="floor"), fl)
    same(tessera.remainder(to_t(a[:1]).expand(len(b)), tb), python_divmod_table(np.repeat(a[:1], len(b)), b)[1])
    with pytest.raises(ValueError, match="remainder.*by zero"):
        tessera.remainder(ta, to_t(np.zeros_like(b)))


# ---------------------------------------------------------------------------
# Comparisons, logical and bitwise ops, shifts
# ---------------------------------------------------------------------------

COMPARISONS = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
               "ge": np.greater_equal}
OPERATORS = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
             "ge": operator.ge}


@SETTINGS
@given(pair(), st.sampled_from(sorted(COMPARISONS)))
def test_comparisons(case, op):
    dtype, a, b = case
    want = COMPARISONS[op](a, b)
    got = getattr(tessera, op)(to_t(a), to_t(b))
    assert got.dtype == tessera.bool
    check(got, want, np.bool_)
    check(OPERATORS[op](to_t(a), to_t(b)), want, np.bool_)
    check(getattr(to_t(a), op)(to_t(b)), want, np.bool_)


def test_comparisons_with_numbers_and_nan():
    t = tessera.tensor([1, 2, 3])
    assert (t < 2.5).tolist() == [True, True, False]
    assert (2 < t).tolist() == [False, False, True]  # reflected through __gt__
    assert (t == 2).tolist() == [False, True, False]
    assert (t != 2).tolist() == [True, False, True]
    n = tessera.tensor([float("nan"), 1.0])
    assert (n == n).tolist() == [False, True] and (n != n).tolist() == [True, False]
    assert (n < 2).tolist() == [False, True]
    # A tensor still hashes by identity and compares with unrelated objects.
    assert hash(t) == hash(t)
    assert (t == "text") is False and (t != None) is True  # noqa: E711


LOGICAL = {"logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor}


@SETTINGS
@given(pair(), st.sampled_from(sorted(LOGICAL)))
def test_logical(case, op):
    dtype, a, b = case
    got = getattr(tessera, op)(to_t(a), to_t(b))
    assert got.dtype == tessera.bool
    check(got, LOGICAL[op](a, b), np.bool_)


def test_logical_mixed_dtypes_and_nan():
    a = tessera.tensor([0.0, float("nan"), 2.0, 0.0])
    b = tessera.tensor([1, 0, 3, 0], dtype=tessera.int8)
    assert tessera.logical_and(a, b).tolist() == [False, False, True, False]
    assert tessera.logical_or(a, b).tolist() == [True, True, True, False]
    assert tessera.logical_xor(a, b).tolist() == [True, True, False, False]


BITWISE = {"bitwise_and": (np.bitwise_and, operator.and_), "bitwise_or": (np.bitwise_or, operator.or_),
           "bitwise_xor": (np.bitwise_xor, operator.xor)}


@SETTINGS
@given(pair([np.bool_] + INT_DTYPES), st.sampled_from(sorted(BITWISE)))
def test_bitwise(case, op):
    dtype, a, b = case
    fn, py = BITWISE[op]
    check(getattr(tessera, op)(to_t(a), to_t(b)), fn(a, b), dtype)
    check(py(to_t(a), to_t(b)), fn(a, b), dtype)
    assert getattr(tessera, op)(to_t(a), to_t(b)).dtype == tdtype(dtype)


def shift_reference(a, b, left):
    """PyTorch's shifts: amounts outside [0, bits) give 0 (right shift: the sign fill)."""
    bits = np.dtype(a.dtype).itemsize * 8
    a, b = np.broadcast_arrays(a, b)
    inside = (b >= 0) & (b < bits)
    safe = np.where(inside, b, 0).astype(a.dtype)
    if left:
        shifted = np.left_shift(a, safe)
        return np.where(inside, shifted, 0).astype(a.dtype)
    fill = np.where(a < 0, -1, 0).astype(a.dtype) if np.dtype(a.dtype).kind == "i" else np.zeros_like(a)
    return np.where(inside, np.right_shift(a, safe), fill).astype(a.dtype)


@SETTINGS
@given(st.sampled_from(INT_DTYPES).flatmap(lambda d: st.tuples(
    st.just(d),
    hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=0, max_side=4),
    st.data())))
def test_shifts(case):
    dtype, shapes, data = case
    bits = np.dtype(dtype).itemsize * 8
    a = data.draw(strided(dtype, shapes.input_shapes[0]))
    lo = -2 if np.dtype(dtype).kind == "i" else 0
    b = data.draw(hnp.arrays(dtype, shapes.input_shapes[1], elements=st.integers(lo, bits + 2)))
    with np.errstate(all="ignore"):
        check(tessera.bitwise_left_shift(to_t(a), to_t(b)), shift_reference(a, b, True), dtype)
        check(tessera.bitwise_right_shift(to_t(a), to_t(b)), shift_reference(a, b, False), dtype)
        check(to_t(a) << to_t(b), shift_reference(a, b, True), dtype)
        check(to_t(a) >> to_t(b), shift_reference(a, b, False), dtype)


# ---------------------------------------------------------------------------
# Numbers, promotion, bfloat16
# ---------------------------------------------------------------------------

OPS_WITH_NUMBERS = ["remainder", "fmod", "pow", "maximum", "minimum", "atan2", "eq", "lt", "ge", "logical_and",
                    "logical_xor"]
NUMPY = {"remainder": np.remainder, "fmod": np.fmod, "pow": np.power, "maximum": np.maximum,
         "minimum": np.minimum, "atan2": np.arctan2, "eq": np.equal, "lt": np.less, "ge": np.greater_equal,
         "logical_and": np.logical_and, "logical_xor": np.logical_xor}


def promoted_dtype(op, dtype, number):
    """PyTorch's compute dtype of op(tensor of `dtype`, Python number)."""
    kind = np.dtype(dtype).kind
    if kind != "f" and (isinstance(number, float) or op == "atan2"):
        return np.float32
    return dtype


@SETTINGS
@given(st.sampled_from([d for d in ALL_DTYPES if d is not np.bool_]).flatmap(lambda d: st.tuples(
    st.just(d), hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4).flatmap(lambda s: strided(d, s)))),
    st.sampled_from(OPS_WITH_NUMBERS), st.sampled_from([3, 2.5, -2, 0.75]))
def test_number_operands(case, op, number):
    dtype, a = case
    if op == "pow" and not is_float(dtype) and number == -2:
        number = 2
    promoted = promoted_dtype(op, dtype, number)
    boolean = op in ("eq", "lt", "ge", "logical_and", "logical_xor")
    want_dtype = np.bool_ if boolean else promoted
    calc = np.float64 if is_float(promoted) else promoted
    a_c = a.astype(calc)
    n_c = np.array(number).astype(calc)  # wraps like a C cast (uint8 and -2)
    t = to_t(a)

    def reference(x, y):
        with np.errstate(all="ignore"):
            r = np.asarray(NUMPY[op](x, y))
        return r if boolean else r.astype(want_dtype)  # rounded once to the result dtype

    for got in (getattr(tessera, op)(t, number), getattr(t, op)(number)):
        assert got.dtype == tdtype(want_dtype)
        check(got, reference(a_c, n_c), want_dtype)
    if op in ("remainder", "fmod") and not is_float(promoted) and np.any(a == 0):
        return  # division by zero: an error (tested below)
    if op == "pow" and not is_float(promoted):
        return
    got = getattr(tessera, op)(number, t)
    assert got.dtype == tdtype(want_dtype)
    check(got, reference(n_c, a_c), want_dtype)


def test_promotion_between_tensors():
    i8 = tessera.tensor([1, 2], dtype=tessera.int8)
    u8 = tessera.tensor([1, 2], dtype=tessera.uint8)
    f16 = tessera.tensor([1, 2], dtype=tessera.float16)
    bf16 = tessera.tensor([1, 2], dtype=tessera.bfloat16)
    assert tessera.maximum(i8, u8).dtype == tessera.int16
    assert tessera.remainder(f16, bf16).dtype == tessera.float32
    assert tessera.bitwise_and(i8, u8).dtype == tessera.int16
    assert tessera.maximum(i8, tessera.tensor(5.0)).dtype == tessera.float32  # 0-d float lifts the category
    assert tessera.maximum(f16, tessera.tensor(5.0, dtype=tessera.float64)).dtype == tessera.float16
    assert (i8 == u8).dtype == tessera.bool


@pytest.mark.parametrize("op", ["remainder", "fmod", "pow", "maximum", "minimum", "atan2", "eq", "gt",
                                "logical_or"])
def test_bfloat16_matches_float32_on_rounded_inputs(op):
    rng = np.random.default_rng(0)
    a = rng.uniform(0.5, 4, size=(3, 5)).astype(np.float32)
    b = rng.uniform(0.5, 3, size=(5,)).astype(np.float32)
    ta, tb = to_t(a).to(tessera.bfloat16), to_t(b).to(tessera.bfloat16)
    ra = np.asarray(ta.to(tessera.float32).tolist(), dtype=np.float32)
    rb = np.asarray(tb.to(tessera.float32).tolist(), dtype=np.float32)
    got = getattr(tessera, op)(ta, tb)
    want = NUMPY.get(op, {"gt": np.greater, "logical_or": np.logical_or}.get(op))(ra, rb)
    if want.dtype == np.bool_:
        assert got.dtype == tessera.bool and got.tolist() == want.tolist()
    else:
        assert got.dtype == tessera.bfloat16
        np.testing.assert_allclose(got.to(tessera.float32).tolist(), want, rtol=1e-2, atol=1e-2)


# ---------------------------------------------------------------------------
# Forms: methods, in-place, out=, operators
# ---------------------------------------------------------------------------

def test_in_place_forms_return_self_and_keep_dtype():
    t = tessera.tensor([1.0, 5.0, 3.0])
    assert t.maximum_(tessera.tensor([2.0, 2.0, 2.0])) is t and t.tolist() == [2.0, 5.0, 3.0]
    assert t.remainder_(2) is t and t.tolist() == [0.0, 1.0, 1.0]
    c = tessera.tensor([1.0, 2.0, 3.0])
    assert c.lt_(2) is c and c.dtype == tessera.float32 and c.tolist() == [1.0, 0.0, 0.0]
    i = tessera.tensor([1, 2, 3])
    assert i.eq_(tessera.tensor([1, 0, 3])) is i and i.tolist() == [1, 0, 1] and i.dtype == tessera.int64
    with pytest.raises(TypeError, match="cannot be cast"):
        tessera.tensor([1, 2]).pow_(0.5)
    with pytest.raises(TypeError, match="cannot be cast"):
        tessera.tensor([1, 2]).atan2_(tessera.tensor([1, 1]))
    with pytest.raises(ValueError, match="shape"):
        tessera.ones(3).maximum_(tessera.ones(2, 3))
    b = tessera.tensor([True, False])
    assert b.logical_xor_(tessera.tensor([True, True])) is b and b.tolist() == [False, True]
    # An operand overlapping self is read before self is written.
    x = tessera.arange(6, dtype=tessera.int64)
    x.maximum_(x.flip(0) if hasattr(x, "flip") else tessera.tensor([5, 4, 3, 2, 1, 0]))
    assert x.tolist() == [5, 4, 3, 3, 4, 5]


def test_python_operators_and_reflections():
    t = tessera.tensor([5, 6, 7])
    assert (t % 4).tolist() == [1, 2, 3] and (10 % t).tolist() == [0, 4, 3]
    assert (t // 2).tolist() == [2, 3, 3] and (20 // t).tolist() == [4, 3, 2]
    assert (t & 3).tolist() == [1, 2, 3] and (3 & t).tolist() == [1, 2, 3]
    assert (t | 8).tolist() == [13, 14, 15] and (8 | t).tolist() == [13, 14, 15]
    assert (t ^ 1).tolist() == [4, 7, 6] and (1 ^ t).tolist() == [4, 7, 6]
    assert (t << 1).tolist() == [10, 12, 14] and (1 << t).tolist() == [32, 64, 128]
    assert (t >> 1).tolist() == [2, 3, 3] and (256 >> t).tolist() == [8, 4, 2]
    assert (t ** 2).tolist() == [25, 36, 49] and (2 ** t).tolist() == [32, 64, 128]
    b = tessera.tensor([True, False])
    assert (b & True).tolist() == [True, False] and (b | True).tolist() == [True, True]
    assert (b ^ True).tolist() == [False, True]
    for op, want in [("__imod__", [1, 2, 3]), ("__ifloordiv__", [1, 1, 1]), ("__iand__", [4, 4, 4]),
                     ("__ior__", [5, 7, 7]), ("__ixor__", [1, 2, 3]), ("__ilshift__", [40, 48, 56]),
                     ("__irshift__", [1, 1, 1]), ("__ipow__", [25, 36, 49])]:
        x = tessera.tensor([5, 6, 7])
        arg = {"__imod__": 4, "__ifloordiv__": 4, "__iand__": 4, "__ior__": 1, "__ixor__": 4, "__ilshift__": 3,
               "__irshift__": 2, "__ipow__": 2}[op]
        y = getattr(x, op)(arg)
        assert y is x and x.tolist() == want, op
    x = tessera.tensor([5.0, 6.0])
    x //= tessera.tensor([2.0, 4.0])
    x %= 2
    x **= 2
    assert x.tolist() == [0.0, 1.0]


def test_out_forms():
    a = tessera.tensor([1.0, -2.0, 3.0])
    b = tessera.tensor([2.0, 2.0, 2.0])
    for op, want in [("remainder", [1.0, 0.0, 1.0]), ("maximum", [2.0, 2.0, 3.0]), ("pow", [1.0, 4.0, 9.0]),
                     ("add", [3.0, 0.0, 5.0]), ("sub", [-1.0, -4.0, 1.0]), ("mul", [2.0, -4.0, 6.0]),
                     ("div", [0.5, -1.0, 1.5])]:
        out = tessera.empty(3)
        r = getattr(tessera, op)(a, b, out=out)
        assert r is out and out.tolist() == want, op
    out = tessera.empty(3, dtype=tessera.float64)  # the float32 result casts to float64
    assert tessera.add(a, 1, out=out) is out and out.tolist() == [2.0, -1.0, 4.0]
    out = tessera.empty(3, dtype=tessera.bool)
    assert tessera.gt(a, 0, out=out) is out and out.tolist() == [True, False, True]
    out = tessera.empty(3)
    assert tessera.gt(a, 0, out=out) is out and out.tolist() == [1.0, 0.0, 1.0]
    out = tessera.empty(3, dtype=tessera.int64)
    assert tessera.sub(10, tessera.tensor([1, 2, 3]), out=out) is out and out.tolist() == [9, 8, 7]
    assert tessera.div(a, 2, rounding_mode="floor", out=tessera.empty(3)).tolist() == [0.0, -1.0, 1.0]
    with pytest.raises(ValueError, match="shape"):
        tessera.maximum(a, b, out=tessera.empty(2))
    with pytest.raises(TypeError, match="cannot be cast"):
        tessera.maximum(a, b, out=tessera.empty(3, dtype=tessera.int64))
    with pytest.raises(TypeError, match="cannot be cast"):
        tessera.add(a, b, out=tessera.empty(3, dtype=tessera.int32))


def test_methods_cover_every_op():
    a = tessera.tensor([6, 7])
    b = tessera.tensor([4, 2])
    assert a.remainder(b).tolist() == [2, 1] and a.fmod(4).tolist() == [2, 3]
    assert a.pow(b).tolist() == [1296, 49] and a.atan2(b).dtype == tessera.float32
    assert a.maximum(b).tolist() == [6, 7] and a.minimum(b).tolist() == [4, 2]
    assert a.ne(b).tolist() == [True, True] and a.le(6).tolist() == [True, False]
    assert a.gt(b).tolist() == [True, True] and a.ge(7).tolist() == [False, True]
    assert a.logical_and(b).tolist() == [True, True] and a.logical_or(0).tolist() == [True, True]
    assert a.bitwise_and(b).tolist() == [4, 2] and a.bitwise_or(b).tolist() == [6, 7]
    assert a.bitwise_xor(b).tolist() == [2, 5]
    assert a.bitwise_left_shift(1).tolist() == [12, 14] and a.bitwise_right_shift(b).tolist() == [0, 1]
    assert tessera.add(1, tessera.tensor([1, 2])).tolist() == [2, 3]
    assert tessera.mul(2, tessera.tensor([1, 2])).tolist() == [2, 4]
    assert tessera.sub(1, tessera.tensor([1, 2]), alpha=2).tolist() == [-1, -3]
    assert tessera.div(1, tessera.tensor([2, 4])).tolist() == [0.5, 0.25]
    t = tessera.tensor([4.0, 6.0])
    assert t.sub_(1, alpha=2) is t and t.tolist() == [2.0, 4.0]
    assert t.div_(4, rounding_mode="floor") is t and t.tolist() == [0.0, 1.0]


def same_bits(got, want):
    got = np.from_dlpack(got.contiguous())
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.int8, np.bool_])
@pytest.mark.parametrize("shape", [(129, 130), (37, 1031), (300, 70), (1031, 17), (16, 1024)])
def test_operands_crossing_the_output_layout(dtype, shape):
    # One operand runs along the other dim than the output (a + b.T): the cpu
    # plugin walks such problems in tiles of 16 rows by 64 elements (from 16384
    # elements on). Every element must be NumPy's, bit for bit, whatever the
    # tile edges (rows and columns not multiples of the tile), on either side,
    # through a padded slice, in place and with the output itself transposed.
    rng = np.random.default_rng(shape[0])
    def draw(shape):
        if dtype == np.bool_:
            return rng.random(shape) < 0.5
        if np.dtype(dtype).kind == "i":
            return rng.integers(-100, 100, shape).astype(dtype)
        return (rng.standard_normal(shape) * 10).astype(dtype)
    a, b = draw(shape), draw(shape[::-1])
    bt = b.T
    padded = np.zeros((shape[1], shape[0] + 5), dtype)
    padded[:, : shape[0]] = b
    ops = [(tessera.add, np.add)]
    if dtype != np.bool_:
        ops += [(tessera.mul, np.multiply), (tessera.sub, np.subtract)]
    with np.errstate(over="ignore"):
        for top, nop in ops:  # (bool + bool is logical or in both)
            want = nop(a, bt)
            same_bits(top(to_t(a), to_t(b).t()), want)
            same_bits(top(to_t(b).t(), to_t(a)), nop(bt, a))
            same_bits(top(to_t(a), to_t(padded)[:, : shape[0]].t()), want)
        t = to_t(a.copy())
        assert t.add_(to_t(b).t()) is t
        same_bits(t, a + bt)
        sq = draw((130, 130))  # an input that overlaps the output: read as before the write
        t = to_t(sq.copy())
        same_bits(t.add_(t.t()), sq + sq.T)
        out = to_t(np.zeros(shape[::-1], dtype)).t()  # a transposed output, a dense input
        assert tessera.add(to_t(a), to_t(a), out=out) is out
        same_bits(out, a + a)


def test_zero_size_and_zero_dim():
    e = tessera.ones(0, 3)
    assert tessera.remainder(e, tessera.ones(3)).shape == (0, 3)
    assert (e < tessera.ones(3)).shape == (0, 3)
    s = tessera.tensor(5)
    assert (s % 3).shape == () and (s % 3).item() == 2
    assert tessera.bitwise_left_shift(s, tessera.tensor([1, 2])).tolist() == [10, 20]
    assert tessera.remainder(tessera.ones(0, dtype=tessera.int64), tessera.zeros(0, dtype=tessera.int64)).shape == (0,)


def test_meta_device():
    m = tessera.ones(2, 3, device="meta")
    assert tessera.pow(m, 2).shape == (2, 3)
    assert (m < tessera.ones(3, device="meta")).dtype == tessera.bool


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------

def test_errors():
    i = tessera.tensor([1, 2, 3])
    z = tessera.tensor([1, 0, 1])
    with pytest.raises(ValueError, match="remainder.*by zero"):
        i % z
    with pytest.raises(ValueError, match="fmod.*by zero"):
        tessera.fmod(i, 0)
    with pytest.raises(ValueError, match="by zero"):
        i // z
    with pytest.raises(ValueError, match="by zero"):
        i.remainder_(0)
    assert i.tolist() == [1, 2, 3]  # a failing in-place op leaves self untouched
    with pytest.raises(TypeError, match="bitwise_and.*float32"):
        tessera.ones(2) & tessera.ones(2)
    with pytest.raises(TypeError, match="bitwise_left_shift.*bool"):
        tessera.ones(2, dtype=tessera.bool) << tessera.ones(2, dtype=tessera.bool)
    with pytest.raises(TypeError, match="bitwise_right_shift"):
        tessera.ones(2) >> 1
    with pytest.raises(TypeError, match="remainder.*bool"):
        tessera.ones(2, dtype=tessera.bool) % tessera.ones(2, dtype=tessera.bool)
    with pytest.raises(ValueError, match="maximum.*broadcast|maximum.*shape"):
        tessera.maximum(tessera.ones(2), tessera.ones(3))
    with pytest.raises(ValueError, match="rounding_mode"):
        tessera.div(i, i, rounding_mode="round")
    with pytest.raises(TypeError, match="bool"):
        tessera.div(tessera.ones(2, dtype=tessera.bool), tessera.ones(2, dtype=tessera.bool), rounding_mode="floor")
    with pytest.raises(ValueError, match="device"):
        tessera.eq(tessera.ones(2), tessera.ones(2, device="meta"))
    with pytest.raises(TypeError):
        tessera.maximum(tessera.ones(2), "x")
