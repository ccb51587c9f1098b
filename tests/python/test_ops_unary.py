"""The unary pointwise ops against NumPy (or a NumPy reference written here):
every dtype, 0-d and zero-size shapes, strided inputs, special values, the
function / method / in-place / out= forms, the errors, and the accuracy of the
vectorized exp, expm1, log, tanh and sigmoid over the whole float range."""
import math

import pytest

import tessera
from oracle import ALL_DTYPES, SETTINGS, check, strided, to_t

np = pytest.importorskip("numpy")
pytest.importorskip("hypothesis")
from hypothesis import given, strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

FLOATS = [np.float16, np.float32, np.float64]


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def _softplus(x, beta=1.0, threshold=20.0):
    with np.errstate(over="ignore"):
        return np.where(x * beta > threshold, x, np.log1p(np.exp(beta * x)) / beta)


# Floating ops: float64 references (applied to the input converted exactly to float64).
FLOAT_OPS = {
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2, "log10": np.log10,
    "log1p": np.log1p, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "reciprocal": lambda x: 1 / x,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
    "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "silu": lambda x: x / (1 + np.exp(-x)), "erf": _erf, "gelu": lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
    "softplus": _softplus,
}
# Ops keeping the dtype (bool refused unless listed in BOOL_OK).
SAME_OPS = {"neg": np.negative, "abs": np.abs, "sign": np.sign, "square": np.square, "relu": lambda x: np.maximum(x, 0),
            "floor": np.floor, "ceil": np.ceil, "round": np.round, "trunc": np.trunc}
PREDICATES = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "logical_not": np.logical_not}


def result_dtype(dtype):
    return np.dtype(dtype) if np.dtype(dtype).kind == "f" else np.dtype(np.float32)


def reference(fn, a, out_dtype):
    with np.errstate(all="ignore"):
        return np.asarray(fn(np.asarray(a, dtype=np.float64))).astype(out_dtype)


def any_array(dtypes):
    return st.sampled_from(dtypes).flatmap(lambda d: st.tuples(
        st.just(d), hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5).flatmap(lambda s: strided(d, s))))


@SETTINGS
@given(any_array(ALL_DTYPES), st.sampled_from(sorted(FLOAT_OPS)))
def test_floating_ops(case, op):
    dtype, a = case
    out_dtype = result_dtype(dtype)
    got = getattr(tessera, op)(to_t(a))
    assert got.dtype == getattr(tessera, out_dtype.name)
    check(got, reference(FLOAT_OPS[op], a, out_dtype), out_dtype)
    check(getattr(to_t(a), op)(), reference(FLOAT_OPS[op], a, out_dtype), out_dtype)


@SETTINGS
@given(any_array(ALL_DTYPES), st.sampled_from(sorted(SAME_OPS)))
def test_dtype_preserving_ops(case, op):
    dtype, a = case
    t = to_t(a)
    if np.dtype(dtype) == np.bool_ and op in ("neg", "abs", "relu", "floor", "ceil", "round", "trunc"):
        with pytest.raises(TypeError, match=op):
            getattr(tessera, op)(t)
        return
    got = getattr(tessera, op)(t)
    if np.dtype(dtype) == np.bool_ and op == "square":
        want = a.astype(np.int64) ** 2  # PyTorch: pow(bool, 2) is int64
    elif np.dtype(dtype) == np.bool_ and op == "sign":
        want = a
    elif np.dtype(dtype).kind != "f" and op in ("floor", "ceil", "round", "trunc"):
        want = a  # identity on integers (NumPy's floor would give float64)
    else:
        want = SAME_OPS[op](a)
    assert got.dtype == getattr(tessera, np.asarray(want).dtype.name)
    check(got, want, dtype)


@SETTINGS
@given(any_array(ALL_DTYPES), st.sampled_from(sorted(PREDICATES)))
def test_bool_valued_ops(case, op):
    dtype, a = case
    got = getattr(tessera, op)(to_t(a))
    assert got.dtype == tessera.bool
    check(got, PREDICATES[op](a), np.bool_)


@SETTINGS
@given(any_array([d for d in ALL_DTYPES if np.dtype(d).kind != "f"]))
def test_bitwise_not(case):
    dtype, a = case
    check(tessera.bitwise_not(to_t(a)), np.invert(a), dtype)
    check(~to_t(a), np.invert(a), dtype)


SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1e-3, -1e-3, 1e-30, 1e-40, -1e-42, 3.0, 10.0, -10.0, 40.0,
           -40.0, 88.0, 89.0, -88.0, -104.0, 700.0, -720.0, 746.0, 1e300, -1e300, math.inf, -math.inf, math.nan]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", sorted(FLOAT_OPS) + sorted(set(SAME_OPS) - {"relu"}) + sorted(PREDICATES))
def test_special_values(op, dtype):
    with np.errstate(all="ignore"):
        a = np.asarray(SPECIAL, dtype=np.float64).astype(dtype)
    fn = FLOAT_OPS.get(op) or SAME_OPS.get(op) or PREDICATES[op]
    want = reference(fn, a, np.bool_ if op in PREDICATES else dtype)
    check(getattr(tessera, op)(to_t(a)), want, np.bool_ if op in PREDICATES else dtype)


def test_bfloat16_computes_in_float32_and_rounds_once():
    x = tessera.from_dlpack(np.linspace(-5, 5, 101, dtype=np.float32)).to(tessera.bfloat16)
    xs = np.from_dlpack(x.to(tessera.float32)).astype(np.float64)
    for op in ("exp", "tanh", "sigmoid", "sin", "sqrt", "gelu", "abs", "floor", "neg", "square", "sign"):
        got = getattr(tessera, op)(x)
        assert got.dtype == tessera.bfloat16
        fn = FLOAT_OPS.get(op) or SAME_OPS[op]
        with np.errstate(all="ignore"):
            want = fn(xs)
        np.testing.assert_allclose(np.from_dlpack(got.to(tessera.float32)), want, rtol=8e-3, atol=1e-6)
    assert tessera.isnan(x).tolist() == [False] * 101
    assert tessera.logical_not(x).tolist() == (xs == 0).tolist()


def test_gelu_tanh_softplus_parameters():
    a = np.linspace(-30, 30, 241)
    t = to_t(a)
    check(tessera.gelu(t, approximate="tanh"), _gelu_tanh(a), np.float64)
    check(t.gelu(approximate="tanh"), _gelu_tanh(a), np.float64)
    check(tessera.softplus(t, 2, 3), _softplus(a, 2.0, 3.0), np.float64)
    check(t.softplus(beta=0.5, threshold=1), _softplus(a, 0.5, 1.0), np.float64)
    check(tessera.softplus(t, beta=-1), _softplus(a, -1.0, 20.0), np.float64)


def test_in_place_forms_return_self():
    for op in ("exp", "log", "tanh", "sigmoid", "abs", "floor", "round", "neg", "sqrt", "square", "gelu", "silu"):
        a = np.linspace(0.5, 4, 8)
        t = to_t(a.copy())
        assert getattr(t, op + "_")() is t
        fn = FLOAT_OPS.get(op) or SAME_OPS[op]
        check(t, fn(a), np.float64)
    t = to_t(np.array([0.0, 2.0]))
    assert t.logical_not_() is t  # bool result written back as 0/1
    check(t, [1.0, 0.0], np.float64)
    i = to_t(np.array([-3, 4], dtype=np.int32))
    i.abs_()
    i.floor_()
    i.bitwise_not_()
    assert i.tolist() == [~3, ~4]
    t = to_t(np.array([1.0, 30.0]))
    assert t.softplus_(2) is t and t.gelu_(approximate="tanh") is t


def test_out_keyword_returns_out():
    a = np.array([[0.1, 2.0], [3.0, 9.0]], dtype=np.float32)
    for op in sorted(FLOAT_OPS) + ["abs", "sign", "neg", "relu", "floor", "square"]:
        out = tessera.empty((2, 2), dtype=tessera.float64)
        assert getattr(tessera, op)(to_t(a), out=out) is out
        fn = FLOAT_OPS.get(op) or SAME_OPS[op]
        # Computed in float32, then cast into the float64 out.
        check(out, reference(fn, a, np.float32).astype(np.float64), np.float32)
    out = tessera.empty((2, 2), dtype=tessera.int32)
    tessera.isnan(to_t(a), out=out)
    assert out.tolist() == [[0, 0], [0, 0]]
    assert tessera.exp(to_t(a), out=None).dtype == tessera.float32


def test_errors():
    f = to_t(np.array([1.0, 2.0], dtype=np.float32))
    i = to_t(np.array([1, 2], dtype=np.int64))
    b = to_t(np.array([True, False]))
    with pytest.raises(TypeError, match="sqrt_: result type float32 cannot be cast to the desired output type int64"):
        i.sqrt_()
    with pytest.raises(TypeError, match="bitwise_not: only bool and integer tensors are supported"):
        ~f
    with pytest.raises(TypeError, match="abs: not supported for bool"):
        abs(b)
    with pytest.raises(TypeError, match="use logical_not"):
        -b
    with pytest.raises(ValueError, match="approximate must be 'none' or 'tanh', got 'exact'"):
        tessera.gelu(f, approximate="exact")
    with pytest.raises(ValueError, match="exp_out: out= tensor has shape"):
        tessera.exp(f, out=tessera.empty((3,), dtype=tessera.float32))
    with pytest.raises(TypeError, match="sin_out: result type float32 cannot be cast"):
        tessera.sin(f, out=tessera.empty((2,), dtype=tessera.int32))
    assert not hasattr(i, "isnan_")  # bool-valued predicates have no in-place form
    with pytest.raises(TypeError):
        tessera.exp([1.0, 2.0])


def test_python_operators():
    a = np.array([-2, 0, 5], dtype=np.int16)
    assert abs(to_t(a)).tolist() == [2, 0, 5]
    assert (~to_t(a)).tolist() == [1, -1, -6]
    assert (~to_t(np.array([True, False]))).tolist() == [False, True]


def _ulps(got, want, dtype):
    """|got - want| in units of the dtype's spacing at want (denormals: of the smallest denormal)."""
    with np.errstate(all="ignore"):
        return _ulps_unchecked(got, want, dtype)


def _ulps_unchecked(got, want, dtype):
    want_r = want.astype(dtype)
    both_nan = np.isnan(got) & np.isnan(want_r)
    same_inf = np.isinf(want_r) & (got == want_r)
    spacing = np.spacing(np.abs(want_r).astype(dtype)).astype(np.longdouble)
    err = np.abs(got.astype(np.longdouble) - want) / spacing
    return np.where(both_nan | same_inf, 0, np.nan_to_num(err, nan=1e9, posinf=1e9))


ACCURATE = {"exp": np.exp, "expm1": np.expm1, "log": np.log, "tanh": np.tanh,
            "sigmoid": lambda x: 1 / (1 + np.exp(-x))}


@pytest.mark.parametrize("op", sorted(ACCURATE))
def test_vectorized_math_accuracy_float32(op):
    # Every 4099th float32 bit pattern: all binades, denormals, inf and NaN.
    bits = np.arange(0, 2 ** 32, 4099, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([bits.view(np.float32), np.float32([0, -0.0, np.inf, -np.inf, np.nan, 88.72283, -103.97207])])
    with np.errstate(all="ignore"):
        want = ACCURATE[op](x.astype(np.longdouble))
    got = np.from_dlpack(getattr(tessera, op)(to_t(x)))
    err = _ulps(got, want, np.float32)
    assert np.nanmax(err) <= 4, (x[np.argmax(err)], got[np.argmax(err)], want[np.argmax(err)])
    assert np.array_equal(np.isnan(got), np.isnan(want))


@pytest.mark.parametrize("op", sorted(ACCURATE))
def test_vectorized_math_accuracy_float64(op):
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.integers(0, 2 ** 64, 200000, dtype=np.uint64).view(np.float64),
                        rng.uniform(-800, 800, 200000), rng.uniform(-2, 2, 200000),
                        [0, -0.0, np.inf, -np.inf, np.nan, 709.78, -745.1, 5e-324]])
    with np.errstate(all="ignore"):
        want = ACCURATE[op](x.astype(np.longdouble))
    got = np.from_dlpack(getattr(tessera, op)(to_t(x)))
    err = _ulps(got, want, np.float64)
    assert np.nanmax(err) <= 4, (x[np.argmax(err)], got[np.argmax(err)], want[np.argmax(err)])
    assert np.array_equal(np.isnan(got), np.isnan(want))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", ["floor", "ceil", "round", "trunc"])
def test_rounding_is_exact_over_the_whole_range(op, dtype):
    # Halves, values near 2^mantissa and beyond, signed zeros: bit-exact with NumPy, sign of zero included.
    rng = np.random.default_rng(1)
    info = np.finfo(dtype)
    x = np.ldexp(rng.uniform(-1, 1, 20000), rng.integers(-30, info.nmant + 3, 20000)).astype(dtype)
    halves = (np.arange(-40, 40) + 0.5).astype(dtype)
    big = np.asarray([2.0 ** info.nmant - 0.5, -(2.0 ** info.nmant) + 0.5, 2.0 ** info.nmant + 1, 3e4], dtype=np.float64)
    with np.errstate(over="ignore"):
        x = np.concatenate([x, halves, big.astype(dtype), np.asarray([0.0, -0.0, -0.3, 0.3, np.inf, -np.inf, np.nan], dtype)])
    want = {"floor": np.floor, "ceil": np.ceil, "round": np.round, "trunc": np.trunc}[op](x)
    got = np.from_dlpack(getattr(tessera, op)(to_t(x)))
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want))
    # Every other element (the gathering path), and in place.
    got = np.from_dlpack(getattr(tessera, op)(to_t(x)[::2]))
    assert np.array_equal(got, want[::2], equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want[::2]))
    t = to_t(x.copy())
    getattr(t, op + "_")()
    assert np.array_equal(np.from_dlpack(t), want, equal_nan=True)


# The functions SLEEF computes (plugins/cpu/src/sleef_math.hpp; libm on a few lanes of the
# SSE2 baseline; float32 log1p is log1p_math.hpp's, also held to 1 ulp below), against long
# double references: within 3 ulp, NaN where the reference is
# NaN, and the sign of zero kept.
SLEEF_OPS = {"sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
             "sinh": np.sinh, "cosh": np.cosh, "exp2": np.exp2, "log2": np.log2, "log10": np.log10,
             "log1p": np.log1p, "erf": None}


def _sleef_reference(op, x):
    with np.errstate(all="ignore"):
        if op == "erf":  # math.erf: float64, within 1 ulp of it
            return _erf(x.astype(np.float64)).astype(np.longdouble)
        return SLEEF_OPS[op](x.astype(np.longdouble))


def _check_sleef_op(op, x, dtype):
    want = _sleef_reference(op, x)
    got = np.from_dlpack(getattr(tessera, op)(to_t(x)))
    err = _ulps(got, want, dtype)
    assert np.nanmax(err) <= 3, (x[np.argmax(err)], got[np.argmax(err)], want[np.argmax(err)])
    assert np.array_equal(np.isnan(got), np.isnan(want))
    zero = want == 0
    assert np.array_equal(np.signbit(got[zero]), np.signbit(want[zero]))


@pytest.mark.parametrize("op", sorted(SLEEF_OPS))
def test_sleef_math_accuracy_float32(op):
    bits = np.arange(0, 2 ** 32, 4099, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([bits.view(np.float32), np.float32([0, -0.0, np.inf, -np.inf, np.nan, 1, -1, 88.5, -89.5])])
    _check_sleef_op(op, x, np.float32)


@pytest.mark.parametrize("op", sorted(SLEEF_OPS))
def test_sleef_math_accuracy_float64(op):
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.integers(0, 2 ** 64, 100000, dtype=np.uint64).view(np.float64),
                        rng.uniform(-800, 800, 50000), rng.uniform(-2, 2, 50000),
                        [0, -0.0, np.inf, -np.inf, np.nan, 1, -1, 710.4, -710.4, 5e-324]])
    _check_sleef_op(op, x, np.float64)


def test_log1p_float32_within_one_ulp():
    # float32 log1p is log1p_math.hpp's (inlined, at every level): within 1 ulp of the
    # long double log1p over a sweep of bit patterns of [-1, inf), and densely where its
    # cases meet: u = 1 + x crossing sqrt(2) and sqrt(1/2) (the exponent k), x = 1 (the
    # two forms of u's rounding error), 2^-26 (x returned as is), 2^24 (1 + x = x).
    pos = np.arange(0, 0x7F800000, 251, dtype=np.uint32).view(np.float32)
    neg = np.arange(0x80000000, 0xBF800000, 251, dtype=np.uint32).view(np.float32)
    around = [np.float32(v) for v in (np.sqrt(2) - 1, np.sqrt(0.5) - 1, 1, 2.0 ** -26, -2.0 ** -26, 2.0 ** 24, -0.5)]
    steps = np.arange(-3000, 3000, dtype=np.int64)
    dense = [(np.array([c]).view(np.int32).astype(np.int64) + steps).astype(np.int32).view(np.float32) for c in around]
    x = np.concatenate([pos, neg, *dense, np.float32([np.finfo(np.float32).max, 1e-45, -1e-45])])
    want = np.log1p(x.astype(np.longdouble))
    got = np.from_dlpack(tessera.log1p(to_t(x)))
    err = _ulps(got, want, np.float32)
    assert err.max() <= 1, (x[np.argmax(err)], got[np.argmax(err)], want[np.argmax(err)])
    # The C library's special values, the sign of zero kept.
    special = np.float32([0, -0.0, -1, -1.5, -np.inf, np.inf, np.nan])
    got = np.from_dlpack(tessera.log1p(to_t(special)))
    assert np.array_equal(got, np.float32([0, -0.0, -np.inf, np.nan, np.nan, np.inf, np.nan]), equal_nan=True)
    assert np.array_equal(np.signbit(got[:3]), [False, True, True])


def test_tanh_float32_within_two_ulp():
    # float32 tanh is exp_math.hpp's: a polynomial below |x| = 0.625, 1 - 2 / (e^2|x| + 1)
    # above. Within 2 ulp of the long double tanh over a sweep of bit patterns and densely
    # around the switch and where the result rounds to 1 (|x| = 9.01), odd, -0 kept.
    bits = np.arange(0, 0x7F800000, 251, dtype=np.uint32)
    steps = np.arange(-3000, 3000, dtype=np.int64)
    dense = [(np.array([np.float32(c)]).view(np.int32).astype(np.int64) + steps).astype(np.int32).view(np.float32)
             for c in (0.625, 9.0109, 1.0)]
    x = np.concatenate([bits.view(np.float32), *dense, np.float32([np.inf, 20, 1e-45])])
    x = np.concatenate([x, -x])
    want = np.tanh(x.astype(np.longdouble))
    got = np.from_dlpack(tessera.tanh(to_t(x)))
    err = _ulps(got, want, np.float32)
    assert err.max() <= 2, (x[np.argmax(err)], got[np.argmax(err)], want[np.argmax(err)])
    half = len(x) // 2
    assert np.array_equal(got[half:], -got[:half])
    got = np.from_dlpack(tessera.tanh(to_t(np.float32([0, -0.0, np.nan]))))
    assert np.array_equal(np.signbit(got[:2]), [False, True]) and np.isnan(got[2])


def test_exp2_float32_within_one_ulp():
    # float32 exp2 is exp_math.hpp's: n = round(x), 2^(x - n) by exp's polynomial, 2^n by
    # scaling. Within 1 ulp of the long double exp2 (2 on the SSE2 baseline, which has no
    # FMA) over a sweep of bit patterns, and densely where n changes (x = k + 1/2), where
    # the result turns subnormal (-126), reaches the smallest subnormal (-149, -150) and
    # overflows (128).
    bits = np.arange(0, 2 ** 32, 509, dtype=np.uint64).astype(np.uint32)
    steps = np.arange(-3000, 3000, dtype=np.int64)
    dense = [(np.array([np.float32(c)]).view(np.int32).astype(np.int64) + steps).astype(np.int32).view(np.float32)
             for c in (0.5, -0.5, 1.5, -1.5, 100.5, -126.0, -149.0, -150.0, 128.0, 1e-3)]
    x = np.concatenate([bits.view(np.float32), *dense])
    x = x[~np.isnan(x)]
    with np.errstate(all="ignore"):
        want = np.exp2(x.astype(np.longdouble))
    got = np.from_dlpack(tessera.exp2(to_t(x)))
    err = _ulps(got, want, np.float32)
    bound = 2 if "baseline kernels" in tessera.info() else 1
    assert err.max() <= bound, (x[np.argmax(err)], got[np.argmax(err)], want[np.argmax(err)])
    special = np.float32([np.nan, np.inf, -np.inf, 0, -0.0, 128, 127.99999, -149, -150, -1000, 1000])
    got = np.from_dlpack(tessera.exp2(to_t(special)))
    want = np.float32([np.nan, np.inf, 0, 1, 1, np.inf, np.exp2(np.float64(np.float32(127.99999))), 2.0 ** -149, 0,
                       0, np.inf])
    assert np.array_equal(got, want, equal_nan=True)


@pytest.mark.parametrize("op", ["sin", "cos"])
def test_sin_cos_float32_within_one_ulp(op):
    # float32 sin and cos are sincos_math.hpp's where the level has FMA: x - n pi/2 in FMA
    # steps with its rounding carried, polynomials of degree 2 in r^2; a vector with any
    # |x| > 2048 (or inf, NaN) goes to SLEEF, as everything does on the SSE2 baseline. Within
    # 1 ulp of the long double function over a sweep of bit patterns (huge arguments included),
    # densely around multiples of pi/2 (where the reduced argument nearly cancels) and around
    # 2048; inf and NaN give NaN, +-0 give +-0 (sin) and 1 (cos).
    bits = np.arange(0, 2 ** 32, 509, dtype=np.uint64).astype(np.uint32)
    steps = np.arange(-600, 600, dtype=np.int64)
    centres = [k * np.pi / 2 for k in (1, 2, 3, 4, 7, 100, 355, 1000, 1288, 1303, -1, -5, -710)] + [2048.0, 1e-3]
    dense = [(np.array([np.float32(c)]).view(np.int32).astype(np.int64) + steps).astype(np.int32).view(np.float32)
             for c in centres]
    x = np.concatenate([bits.view(np.float32), *dense])
    x = x[np.isfinite(x)]
    want = getattr(np, op)(x.astype(np.longdouble))
    got = np.from_dlpack(getattr(tessera, op)(to_t(x)))
    err = _ulps(got, want, np.float32)
    assert err.max() <= 1, (x[np.argmax(err)], got[np.argmax(err)], want[np.argmax(err)])
    special = np.float32([np.nan, np.inf, -np.inf, 0.0, -0.0])
    got = np.from_dlpack(getattr(tessera, op)(to_t(special)))
    assert np.isnan(got[:3]).all()
    if op == "sin":
        assert np.array_equal(got[3:], [0.0, -0.0]) and np.array_equal(np.signbit(got[3:]), [False, True])
    else:
        assert np.array_equal(got[3:], [1.0, 1.0])


def test_erf_float32_accuracy_and_special_values():
    # float32 erf is erf_math.hpp's: at AVX-512 and AVX2 one polynomial per interval of
    # [0, 4] (16 or 8 of them), its coefficients picked per lane by a lane permute; on the
    # SSE2 baseline two pieces split at 0.9. Against math.erf (double) on a sweep of bit
    # patterns below 4.5 (subnormals included) and densely around every interval boundary,
    # 0.9, 3.92 (where erf starts rounding to 1) and 4 (the clamp): within 1.1 ulp with a lane
    # permute (1.05 measured over every float32), 2 on the baseline (1.7). erf is odd bit
    # for bit; +-inf give +-1, NaN gives NaN, -0 gives -0.
    bits = np.arange(0, 0x40900000, 1021, dtype=np.uint32)
    steps = np.arange(-400, 400, dtype=np.int64)
    centres = [k / 4 for k in range(1, 17)] + [0.9, 3.92, 1e-3, 2.0 ** -126]
    dense = [(np.array([np.float32(c)]).view(np.int32).astype(np.int64) + steps).astype(np.int32).view(np.float32)
             for c in centres]
    x = np.concatenate([bits.view(np.float32), *dense])
    x = x[x >= 0]
    got = np.from_dlpack(tessera.erf(to_t(x)))
    err = _ulps(got, _erf(x.astype(np.float64)).astype(np.longdouble), np.float32)
    bound = 2 if "baseline kernels" in tessera.info() else 1.1
    assert err.max() <= bound, (x[np.argmax(err)], got[np.argmax(err)], err.max())
    assert np.array_equal(np.from_dlpack(tessera.erf(to_t(-x))), -got)
    special = np.float32([np.inf, -np.inf, 4.0, 5.0, 1e30, -1e30, 0.0, -0.0, np.nan])
    got = np.from_dlpack(tessera.erf(to_t(special)))
    assert np.array_equal(got[:6], [1, -1, 1, 1, 1, -1]) and np.isnan(got[8])
    assert np.array_equal(got[6:8], [0, 0]) and np.array_equal(np.signbit(got[6:8]), [False, True])


def test_rsqrt_float32_within_one_ulp():
    # float32 rsqrt is rsqrt_math.hpp's: at AVX-512 the hardware's estimate and one Newton
    # step, elsewhere 1 / sqrt (2 ulp). Within 1 ulp of the long double 1 / sqrt over a sweep of
    # bit patterns (subnormals included) and densely around powers of two and 1/4 (where
    # the estimate's table wraps), with the special values of 1 / sqrt(x).
    bits = np.arange(0, 0x7F800000, 127, dtype=np.uint32)
    steps = np.arange(-3000, 3000, dtype=np.int64)
    dense = [(np.array([np.float32(c)]).view(np.int32).astype(np.int64) + steps).astype(np.int32).view(np.float32)
             for c in (1.0, 2.0, 0.25, 2.0 ** -126, 2.0 ** 100, 3.0)]
    x = np.concatenate([bits.view(np.float32), *dense, np.float32([1e-45, np.finfo(np.float32).max])])
    with np.errstate(divide="ignore"):
        want = 1 / np.sqrt(x.astype(np.longdouble))
    got = np.from_dlpack(tessera.rsqrt(to_t(x)))
    err = _ulps(got, want, np.float32)
    bound = 1 if "avx512 kernels" in tessera.info() else 2  # two roundings: up to 2^-23 relative
    assert err.max() <= bound, (x[np.argmax(err)], got[np.argmax(err)], want[np.argmax(err)])
    special = np.float32([0, -0.0, np.inf, -np.inf, -1, -1e-45, np.nan])
    got = np.from_dlpack(tessera.rsqrt(to_t(special)))
    assert np.array_equal(got, np.float32([np.inf, -np.inf, 0, np.nan, np.nan, np.nan, np.nan]), equal_nan=True)


def test_exact_gelu_keeps_relative_accuracy_float32():
    # gelu(x) = x Phi(x) = 0.5 x erfc(-x / sqrt 2): for x << 0 the result is tiny and
    # 0.5 x (1 + erf(x / sqrt 2)) would cancel; ours (plugins/cpu/src/erf_math.hpp)
    # stays relatively accurate. The bound allows for rounding x / sqrt 2 to float.
    x = np.concatenate([np.linspace(-14, 10, 200001), -np.geomspace(1e-30, 14, 20001),
                        np.geomspace(1e-30, 10, 20001)]).astype(np.float32)
    got = np.from_dlpack(tessera.gelu(to_t(x))).astype(np.float64)
    want = np.array([0.5 * v * math.erfc(-v / math.sqrt(2)) for v in x.astype(np.float64)])
    normal = np.abs(want) >= np.finfo(np.float32).tiny
    rel = np.abs(got[normal] - want[normal]) / np.abs(want[normal])
    assert rel.max() <= 2e-5, (x[normal][np.argmax(rel)], rel.max())
    # Below float's smallest normal (x < -13): the same relative bound, or 16 subnormal
    # steps (1.4e-45 each) where the result has only a few significant bits left.
    err = np.abs(got[~normal] - want[~normal])
    assert (err <= np.maximum(2e-5 * np.abs(want[~normal]), 16 * 2.0 ** -149)).all()


def test_exact_gelu_table_range_float32():
    # At AVX-512 and AVX2, |x| < 4 takes Phi(-|x|) from one polynomial per interval of
    # [0, 4] (32 or 8 of them; erf_math.hpp, tools/fit_gelu_table.py): within 1e-6 relative
    # there (4.7e-7 and 9.6e-7 measured), densely around every interval boundary and +-4,
    # where the general form (2e-5, as on the SSE2 baseline) takes over. A vector holding
    # one lane beyond 4 computes both forms: every other lane keeps its bits.
    steps = np.arange(-300, 300, dtype=np.int64)
    centres = [k / 8 for k in range(1, 33)] + [1e-3, 2.0 ** -126]
    dense = [(np.array([np.float32(c)]).view(np.int32).astype(np.int64) + steps).astype(np.int32).view(np.float32)
             for c in centres]
    x = np.concatenate([*dense, np.linspace(0, 4.5, 100001, dtype=np.float32)])
    x = np.concatenate([x, -x])
    got = np.from_dlpack(tessera.gelu(to_t(x))).astype(np.float64)
    want = np.array([0.5 * v * math.erfc(-v / math.sqrt(2)) for v in x.astype(np.float64)])
    nonzero = want != 0
    rel = np.abs(got[nonzero] - want[nonzero]) / np.abs(want[nonzero])
    table = np.abs(x[nonzero]) < 4
    bound = 2e-5 if "baseline kernels" in tessera.info() else 1e-6
    assert rel[table].max() <= bound, (x[nonzero][table][np.argmax(rel[table])], rel[table].max())
    assert rel[~table].max() <= 2e-5, (x[nonzero][~table][np.argmax(rel[~table])], rel[~table].max())
    assert (got[x == 0] == 0).all()
    mixed = x.copy()
    mixed[::7] = np.float32([10.0, -9.0, np.nan, np.inf])[np.arange(len(mixed[::7])) % 4]
    got_mixed = np.from_dlpack(tessera.gelu(to_t(mixed))).astype(np.float64)
    keep = np.ones(len(x), bool)
    keep[::7] = False
    assert np.array_equal(got_mixed[keep], got[keep])
    tail = got_mixed[::7][:4]
    assert np.isnan(tail[2]) and tail[3] == np.inf
    np.testing.assert_allclose(tail[:2], [10.0, 0.5 * -9.0 * math.erfc(9 / math.sqrt(2))], rtol=2e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ["sin", "erf", "gelu", "sigmoid", "exp", "log1p", "softplus"])
def test_vector_paths_agree(op, dtype):
    # Whole vectors, the zero-padded tail, strided and broadcast inputs (gathered
    # into a buffer) and in-place all give each element the same bits.
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(301) * 4).astype(dtype)
    full = np.from_dlpack(getattr(tessera, op)(to_t(x)))
    for n in list(range(1, 40)) + [63, 64, 65, 255, 256, 257, 300]:
        assert np.array_equal(np.from_dlpack(getattr(tessera, op)(to_t(x[:n].copy()))), full[:n], equal_nan=True), n
    same = lambda got, want: np.array_equal(np.from_dlpack(got.contiguous()), want, equal_nan=True)  # noqa: E731
    assert same(getattr(tessera, op)(to_t(x[::3])), full[::3])
    assert same(getattr(tessera, op)(to_t(x[::-1])), full[::-1])
    assert same(getattr(tessera, op)(to_t(x[:1].copy()).expand(70)), np.repeat(full[:1], 70))
    t = to_t(x.copy())
    getattr(t, op + "_")()
    assert same(t, full)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("op", ["neg", "abs", "exp", "sin", "sigmoid", "floor"])
def test_transposed_inputs_in_tiles(op, dtype):
    # A transposed input of 16384 elements or more runs in tiles of 16 rows by
    # 64 elements (the cpu plugin's run_tiled): every element as the dense
    # path computes it, bit for bit, at tile edges too, and through a slice.
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((130, 301)) * 4).astype(dtype)
    dense = np.from_dlpack(getattr(tessera, op)(to_t(np.ascontiguousarray(x.T))))
    got = getattr(tessera, op)(to_t(x).t())
    assert got.shape == (301, 130)
    assert np.from_dlpack(got.contiguous()).tobytes() == dense.tobytes()
    wide = np.zeros((130, 320), dtype)
    wide[:, :301] = x
    got = getattr(tessera, op)(to_t(wide)[:, :301].t())
    assert np.from_dlpack(got.contiguous()).tobytes() == dense.tobytes()
