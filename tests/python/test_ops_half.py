"""float16/bfloat16 conversions and elementwise ops bit for bit: the CPU
plugin converts whole blocks (F16C, AVX-512 or portable vector code,
plugins/cpu/src/convert.hpp), and must round exactly as sdk::Half/BFloat16 do
element by element: nearest even, inf and subnormals kept, a float16 NaN the
quiet NaN of its sign, a bfloat16 NaN its top bits with the quiet bit set.
Lengths are no multiple of any vector width or block size, and special values
sit at both ends; the last test reruns this file at each lower instruction-set
level (TESSERA_CPU_ISA)."""
import os
import subprocess
import sys

import pytest

import tessera as T

np = pytest.importorskip("numpy")

LENGTHS = [1, 7, 9, 15, 17, 33, 511, 513, 1000, 1031, 5000]


def f32_bits(a):
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


def bf16_round(a):
    """float32 -> bfloat16 bits (as uint16): nearest even, NaN quieted."""
    x = f32_bits(a).astype(np.uint64)
    rounded = ((x + 0x7FFF + ((x >> 16) & 1)) >> 16) & 0xFFFF
    nan = (x & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, (x >> 16) | 0x40, rounded).astype(np.uint16)


def bf16_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def half_bits(t):
    """A float16 tensor's bits."""
    return np.from_dlpack(t.contiguous()).copy().view(np.uint16)


def bf16_bits(t):
    """A bfloat16 tensor's bits (widening to float32 is exact)."""
    return (f32_bits(np.from_dlpack(t.to(T.float32).contiguous()).copy()) >> 16).astype(np.uint16)


def want_half(a32):
    """NumPy's float16 rounding, with the NaN rule above (NumPy keeps payloads)."""
    with np.errstate(over="ignore"):
        bits = a32.astype(np.float16).view(np.uint16)
    nan = np.isnan(a32)
    return np.where(nan, (f32_bits(a32) >> 16).astype(np.uint16) & 0x8000 | 0x7E00, bits).astype(np.uint16)


def special_f32():
    """Values that test every branch of the rounding, as float32."""
    v = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-40, -1e-45, 3.4e38, -3.4e38,
         65504.0, 65519.99, 65520.0, -65520.0, 6.1035156e-05, 6.097555e-05, 5.9604645e-08,
         2.9802322e-08, 2.9802326e-08, 8.940697e-08, 1.0 + 2.0**-11, 1.0 + 3 * 2.0**-11,
         1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8, 2.0**-126, 2.0**-133, 1.5 * 2.0**-133]
    a = np.array(v, dtype=np.float32)
    # Signaling and payload NaNs, both signs.
    nans = np.array([0x7F800001, 0xFF800001, 0x7FC00001, 0x7FA00000, 0xFFFFFFFF], dtype=np.uint32).view(np.float32)
    return np.concatenate([a, nans])


def mixed_f32(n, seed):
    """Random float32 bit patterns (every exponent: subnormals, inf, NaN) and
    normal values around 1, with the special values at both ends."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    b = (rng.standard_normal(n) * 100).astype(np.float32)
    out = np.where(rng.random(n) < 0.5, a, b).astype(np.float32)
    s = special_f32()
    k = min(n, len(s))
    out[:k] = s[:k]
    out[n - k:] = s[::-1][:k]
    return out


@pytest.mark.parametrize("n", LENGTHS)
def test_float32_to_float16_matches_numpy(n):
    a = mixed_f32(n, n)
    got = half_bits(T.from_dlpack(a).to(T.float16))
    np.testing.assert_array_equal(got, want_half(a))


@pytest.mark.parametrize("n", LENGTHS)
def test_float32_to_bfloat16_rounds_to_nearest_even(n):
    a = mixed_f32(n, n + 1)
    np.testing.assert_array_equal(bf16_bits(T.from_dlpack(a).to(T.bfloat16)), bf16_round(a))


def test_every_float16_widens_exactly():
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    h = bits.view(np.float16)
    got = f32_bits(np.from_dlpack(T.from_dlpack(h).to(T.float32)))
    want = f32_bits(h.astype(np.float32))
    # NaNs keep their payload unquieted: sign, all-ones exponent, mantissa << 13.
    b32 = bits.astype(np.uint32)
    nan = (b32 & 0x7FFF) > 0x7C00
    want = np.where(nan, ((b32 & 0x8000) << 16) | 0x7F800000 | ((b32 & 0x3FF) << 13), want)
    np.testing.assert_array_equal(got, want)
    # And back: every float16 survives the round trip (NaNs become the quiet NaN).
    back = half_bits(T.from_dlpack(h).to(T.float32).to(T.float16))
    np.testing.assert_array_equal(back, np.where(nan, (bits & 0x8000) | 0x7E00, bits).astype(np.uint16))


def test_every_bfloat16_widens_exactly():
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    t = T.from_dlpack(bf16_to_f32(bits)).to(T.bfloat16)  # exact (the low halves are zero) but NaNs get quieted
    want = bf16_to_f32(bf16_round(bf16_to_f32(bits)))
    np.testing.assert_array_equal(f32_bits(np.from_dlpack(t.to(T.float32))), f32_bits(want))


@pytest.mark.parametrize("src", [np.float64, np.int32, np.int64, np.int16, np.uint8, np.bool_])
def test_other_dtypes_to_float16_round_once(src):
    rng = np.random.default_rng(3)
    if src == np.float64:
        a = np.concatenate([rng.standard_normal(1000) * 1e3, [1 + 2.0**-11 + 2.0**-40, 65519.999999, 1e-300,
                                                                2.0**-25 + 2.0**-60, np.nan, np.inf, -0.0]])
    elif src == np.bool_:
        a = rng.random(1003) < 0.5
    else:
        info = np.iinfo(src)
        a = rng.integers(info.min, info.max, 1003, endpoint=True)
        a[:4] = [info.min, info.max, 2049 if info.max > 2049 else 0, 2051 if info.max > 2051 else 1]
    a = np.asarray(a).astype(src)
    got = half_bits(T.from_dlpack(a).to(T.float16))
    with np.errstate(over="ignore"):
        want = a.astype(np.float16).view(np.uint16)
    if src == np.float64:
        want = np.where(np.isnan(a), 0x7E00, want).astype(np.uint16)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dst", [np.float64, np.int32, np.int8, np.uint8, np.bool_])
def test_float16_to_other_dtypes(dst):
    rng = np.random.default_rng(4)
    h = (rng.standard_normal(1003) * 50).astype(np.float16)
    h[:4] = [0.0, -0.0, 6e-8, -100.0]
    if dst in (np.float64, np.bool_):
        h[4:7] = [np.inf, -np.inf, np.nan]
    if dst in (np.int8, np.uint8):  # in range: NumPy's out-of-range casts are the C compiler's
        h = np.clip(np.abs(h) if dst == np.uint8 else h, -127, 127).astype(np.float16)
    got = np.from_dlpack(T.from_dlpack(h).to(getattr(T, np.dtype(dst).name)))
    np.testing.assert_array_equal(got, h.astype(dst))


def test_float16_and_bfloat16_convert_to_each_other():
    a = mixed_f32(1031, 9)
    with np.errstate(over="ignore"):
        h = a.astype(np.float16)
    got = bf16_bits(T.from_dlpack(h).to(T.bfloat16))
    np.testing.assert_array_equal(got, bf16_round(h.astype(np.float32)))
    b = bf16_to_f32(bf16_round(a))
    got = half_bits(T.from_dlpack(b).to(T.bfloat16).to(T.float16))
    np.testing.assert_array_equal(got, want_half(b))


def test_strided_and_transposed_casts():
    a = mixed_f32(64 * 33, 5).reshape(64, 33)
    for view in (lambda x: x.T, lambda x: x[::3, 1::2]):
        got = half_bits(view(T.from_dlpack(a)).to(T.float16))
        np.testing.assert_array_equal(got, want_half(np.ascontiguousarray(view(a))))
        got = bf16_bits(view(T.from_dlpack(a)).to(T.bfloat16))
        np.testing.assert_array_equal(got, bf16_round(np.ascontiguousarray(view(a))))


OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
       "maximum": np.maximum, "minimum": np.minimum}


def binary_inputs(n, seed):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(n) * 30).astype(np.float32)
    b = (rng.standard_normal(n) * 30).astype(np.float32)
    s = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-7, 65504.0, 60000.0, 6e-8, 3e-5, 1.0, 2.0**-14],
                 dtype=np.float32)
    k = min(n, len(s))
    a[:k], b[:k] = s[:k], s[::-1][:k]
    a[n - k:], b[n - k:] = s[:k], np.roll(s, 3)[:k]
    return a, b


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("n", [1, 15, 17, 513, 1031])
def test_float16_binary_bit_exact(op, n):
    a, b = binary_inputs(n, n)
    ha, hb = a.astype(np.float16), b.astype(np.float16)
    with np.errstate(all="ignore"):
        want = OPS[op](ha.astype(np.float32), hb.astype(np.float32))  # exact in float32, then one rounding
        got = half_bits(getattr(T, op)(T.from_dlpack(ha), T.from_dlpack(hb)))
    np.testing.assert_array_equal(got, want_half(want))


@pytest.mark.parametrize("op", sorted(OPS))
def test_float16_binary_signaling_and_payload_nans(op):
    # Dense runs of 16+ take the fused path, which converts without per-vector
    # NaN fix-ups and canonicalizes NaN results afterwards: every NaN result
    # must still be the quiet NaN of its sign, in place too.
    rng = np.random.default_rng(5)
    nan_bits = np.array([0x7D01, 0xFD01, 0x7E01, 0xFE3F, 0x7C01, 0x7FFF, 0xFFFF, 0x7DFF], dtype=np.uint16)
    a = (rng.standard_normal(256) * 4).astype(np.float16)
    b = (rng.standard_normal(256) * 4).astype(np.float16)
    ab, bb = a.view(np.uint16), b.view(np.uint16)
    ab[rng.choice(256, 40, replace=False)] = rng.choice(nan_bits, 40)
    bb[rng.choice(256, 40, replace=False)] = rng.choice(nan_bits, 40)
    with np.errstate(all="ignore"):
        want = want_half(OPS[op](a.astype(np.float32), b.astype(np.float32)))
        np.testing.assert_array_equal(half_bits(getattr(T, op)(T.from_dlpack(a), T.from_dlpack(b))), want)
        if op in ("add", "sub", "mul", "div"):
            t = T.from_dlpack(a.copy())
            getattr(t, f"{op}_")(T.from_dlpack(b))
            np.testing.assert_array_equal(half_bits(t), want)


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("n", [1, 15, 513, 1031])
def test_bfloat16_binary_bit_exact(op, n):
    a, b = binary_inputs(n, n + 7)
    ra, rb = bf16_to_f32(bf16_round(a)), bf16_to_f32(bf16_round(b))
    ta, tb = T.from_dlpack(ra).to(T.bfloat16), T.from_dlpack(rb).to(T.bfloat16)
    with np.errstate(all="ignore"):
        want = OPS[op](ra, rb)
    np.testing.assert_array_equal(bf16_bits(getattr(T, op)(ta, tb)), bf16_round(want))


def test_float16_broadcast_strided_in_place_and_alpha():
    a, b = binary_inputs(40 * 37, 1)
    ha = a.astype(np.float16).reshape(40, 37)
    hb = b.astype(np.float16).reshape(40, 37)
    f = lambda x: x.astype(np.float32)
    cases = [
        (T.from_dlpack(ha) + T.from_dlpack(hb[0]), f(ha) + f(hb[0])),                  # broadcast row
        (T.from_dlpack(ha) * T.from_dlpack(hb[:, :1].copy()), f(ha) * f(hb[:, :1])),    # broadcast column
        (T.from_dlpack(ha).T - T.from_dlpack(hb).T, (f(ha) - f(hb)).T),                 # transposed
        (T.from_dlpack(ha)[::2, 1::3] * T.from_dlpack(hb)[1::2, 2::3], f(ha)[::2, 1::3] * f(hb)[1::2, 2::3]),
        (T.add(T.from_dlpack(ha), T.from_dlpack(hb), alpha=-2.5), f(ha) + np.float32(-2.5) * f(hb)),
    ]
    with np.errstate(all="ignore"):
        for got, want in cases:
            np.testing.assert_array_equal(half_bits(got), want_half(np.ascontiguousarray(want)))
        t = T.from_dlpack(ha.copy())
        t += T.from_dlpack(hb)
        np.testing.assert_array_equal(half_bits(t), want_half(f(ha) + f(hb)))


def test_float16_comparisons_and_ternary_ops():
    a, b = binary_inputs(1031, 2)
    ha, hb = a.astype(np.float16), b.astype(np.float16)
    w = np.linspace(-0.5, 1.5, 1031).astype(np.float16)
    ta, tb, tw = T.from_dlpack(ha), T.from_dlpack(hb), T.from_dlpack(w)
    fa, fb, fw = (x.astype(np.float32) for x in (ha, hb, w))
    for op, ref in (("eq", np.equal), ("lt", np.less), ("ge", np.greater_equal), ("ne", np.not_equal)):
        np.testing.assert_array_equal(np.from_dlpack(getattr(T, op)(ta, tb)), ref(fa, fb))
    with np.errstate(all="ignore"):
        got = half_bits(T.addcmul(ta, tb, tw, value=0.5))
        np.testing.assert_array_equal(got, want_half(fa + np.float32(0.5) * (fb * fw)))
        got = half_bits(T.lerp(ta, tb, tw))
        d = fb - fa
        want = np.where(np.abs(fw) < 0.5, fa + fw * d, fb - d * (np.float32(1) - fw)).astype(np.float32)
        np.testing.assert_array_equal(got, want_half(want))
    cond = a > b
    got = half_bits(T.where(T.from_dlpack(cond), ta, tb))
    np.testing.assert_array_equal(got, np.where(cond, ha, hb).view(np.uint16))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_products_with_transposed_operands(dtype):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((37, 29)).astype(np.float32)
    b = rng.standard_normal((41, 37)).astype(np.float32)  # used transposed
    c = rng.standard_normal((29, 41)).astype(np.float32)
    d = getattr(T, dtype)
    ta, tb, tc = (T.from_dlpack(x).to(d) for x in (a, b, c))
    ra, rb, rc = (np.from_dlpack(t.to(T.float32)) for t in (ta, tb, tc))
    got = np.from_dlpack(T.mm(ta.T, tb.T).to(T.float32))
    np.testing.assert_allclose(got, ra.T @ rb.T, rtol=2e-2, atol=2e-2)
    got = np.from_dlpack(T.addmm(tc, ta.T, tb.T, beta=0.5, alpha=2.0).to(T.float32))
    np.testing.assert_allclose(got, 0.5 * rc + 2.0 * (ra.T @ rb.T), rtol=2e-2, atol=5e-2)


# ---- unary ops and reductions: float16/bfloat16 go through float32 ----
# The documented rule: half(f(float(x))) for unary ops; sums, max and min
# accumulate in float32 with the float32 path's structure, so each result is the
# float32 path's on the widened input, rounded once. Both are checked bit for
# bit against the float32 path, and against NumPy where NumPy rounds the same.

def half_input(dtype, n, seed):
    """Random values with the special ones (NaN, infinities, signed zeros,
    subnormals) at both ends, already representable in `dtype`."""
    a = (np.random.default_rng(seed).standard_normal(n) * 4).astype(np.float32)
    s = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 6e-8, -3e-5, 65504.0, 0.5, -2.5], dtype=np.float32)
    a[:len(s)] = s
    a[-len(s):] = s[::-1]
    return np.from_dlpack(T.from_dlpack(a).to(dtype).to(T.float32)).copy()


def same_bits(got, want):
    """Equal float16/bfloat16 tensors, NaNs equal."""
    g = np.from_dlpack(got.to(T.float32).contiguous())
    w = np.from_dlpack(want.to(T.float32).contiguous())
    assert g.shape == w.shape
    assert np.array_equal(f32_bits(g), f32_bits(w)) or (
        np.array_equal(np.isnan(g), np.isnan(w)) and np.array_equal(f32_bits(g)[~np.isnan(g)], f32_bits(w)[~np.isnan(w)])
    ), (g, w)


UNARY_HALF_OPS = ["floor", "ceil", "round", "trunc", "sqrt", "rsqrt", "reciprocal", "exp", "expm1", "log", "tanh",
                  "sigmoid", "sin", "cos", "erf", "gelu", "silu", "abs", "neg", "square"]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", UNARY_HALF_OPS)
def test_half_unary_ops_round_the_float32_result_once(op, dtype):
    dt = getattr(T, dtype)
    a = half_input(dt, 1031, 5)
    f = lambda t: getattr(T.ops, op)(t)  # noqa: E731
    want = f(T.from_dlpack(a)).to(dt)
    with np.errstate(all="ignore"):
        same_bits(f(T.from_dlpack(a).to(dt)), want)  # dense
        same_bits(f(T.from_dlpack(a).to(dt)[::3]), want[::3])  # strided
        m = T.from_dlpack(a[:1024].reshape(32, 32)).to(dt)
        same_bits(f(m.t()), f(T.from_dlpack(a[:1024].reshape(32, 32)).t()).to(dt))  # transposed
        t = T.from_dlpack(a).to(dt)
        if hasattr(t, op + "_"):
            getattr(t, op + "_")()
            same_bits(t, want)  # in place
        if dtype == "float16" and op in ("floor", "ceil", "trunc", "sqrt", "reciprocal", "neg", "abs", "square"):
            # NumPy's float32 op is correctly rounded: its float16 rounding is the rule's result.
            npf = {"reciprocal": lambda x: np.float32(1) / x, "neg": np.negative}.get(op) or getattr(np, op)
            ref = npf(a.astype(np.float32)).astype(np.float16)
            got = np.from_dlpack(f(T.from_dlpack(a).to(dt)).contiguous())
            assert np.array_equal(got, ref, equal_nan=True)


@pytest.mark.parametrize("op", ["exp", "exp2", "sin", "sigmoid", "log", "tanh", "erf"])
def test_float16_vector_ops_store_nans_as_the_float32_path_does(op):
    # Dense float16 runs of the vectorized math ops convert in registers at AVX-512
    # (sleef_math.hpp's apply_half): signaling and payload NaNs in, NaNs out stored as the
    # float32 path rounds them (sign | 0x7E00), bit for bit; 1031 elements leave a tail.
    rng = np.random.default_rng(3)
    bits = rng.integers(0x2000, 0x4800, 1031).astype(np.uint16) | rng.choice([0, 0x8000], 1031).astype(np.uint16)
    nan_bits = np.array([0x7D01, 0xFD01, 0x7E01, 0xFE3F, 0x7C01, 0x7FFF, 0xFFFF, 0x7DFF], dtype=np.uint16)
    bits[rng.choice(1031, 64, replace=False)] = rng.choice(nan_bits, 64)
    bits[-3:] = nan_bits[:3]  # in the tail too
    h = T.from_dlpack(bits.view(np.float16))
    got = np.from_dlpack(getattr(T, op)(h)).view(np.uint16)
    want = np.from_dlpack(getattr(T, op)(h.to(T.float32)).to(T.float16)).view(np.uint16)
    assert np.array_equal(got, want), np.flatnonzero(got != want)[:8]
    assert ((got & 0x7FFF) > 0x7C00).sum() >= 64


@pytest.mark.parametrize("op", ["exp", "exp2", "sin", "sigmoid", "log", "tanh", "erf"])
def test_bfloat16_vector_ops_round_the_float32_result_once(op):
    # bfloat16 runs of the vectorized math ops (through gather's block conversions): each
    # output is the float32 op on the widened input, rounded by NumPy's rule here (nearest
    # even; a NaN keeps its top bits, quieted), bit for bit. Payload NaNs, infinities, zeros
    # and subnormals in, in the tail too; 1031 elements leave a tail.
    # (A signaling bfloat16 NaN cannot be made from Python: to(bfloat16) quiets it.)
    rng = np.random.default_rng(7)
    n = 1031
    bits = rng.integers(0x3000, 0x4180, n).astype(np.uint16) | rng.choice([0, 0x8000], n).astype(np.uint16)
    special = np.array([0x7FC1, 0xFFE5, 0x7FFF, 0x7F80, 0xFF80, 0x0001, 0x8071, 0x0000, 0x8000, 0x007F],
                       dtype=np.uint16)
    bits[rng.choice(n, 80, replace=False)] = rng.choice(special, 80)
    bits[-4:] = special[:4]
    x32 = bf16_to_f32(bits)
    with np.errstate(all="ignore"):
        want = bf16_round(np.from_dlpack(getattr(T, op)(T.from_dlpack(x32))))
    h = T.from_dlpack(x32).to(T.bfloat16)
    np.testing.assert_array_equal(bf16_bits(h), bits)  # the input is what it says
    got = bf16_bits(getattr(T, op)(h))
    assert np.array_equal(got, want), (np.flatnonzero(got != want)[:8], got[got != want][:8], want[got != want][:8])
    assert ((got & 0x7FFF) > 0x7F80).sum() >= 15


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape, dims", [((1031,), None), ((300, 1031), 1), ((1031, 200), 0), ((700, 64), 0),
                                          ((130, 100), 0), ((8, 96, 40), (0, 2)), ((5, 4, 129), (0, 1))])
def test_half_reductions_match_the_float32_path(shape, dims, dtype):
    dt = getattr(T, dtype)
    n = int(np.prod(shape))
    a = (np.random.default_rng(n).standard_normal(n) * 3).astype(np.float32)
    a = np.from_dlpack(T.from_dlpack(a).to(dt).to(T.float32)).copy().reshape(shape)
    h, f = T.from_dlpack(a).to(dt), T.from_dlpack(a)
    kw = {} if dims is None else {"dim": dims}
    for name in ("sum", "amax", "amin", "mean"):
        same_bits(getattr(h, name)(**kw), getattr(f, name)(**kw).to(dt))
    ref = a.astype(np.float64).sum(axis=dims)  # and the sum itself, against float64
    got = np.from_dlpack(h.sum(**kw).to(T.float32).contiguous())
    np.testing.assert_allclose(got, ref, rtol=1e-2, atol=1e-2 * np.sqrt(n))
    # A NaN anywhere in an output's elements makes that output NaN; one infinity, inf.
    b = a.copy().reshape(-1)
    b[n // 2] = np.nan
    b[n // 3] = np.inf
    hb, fb = T.from_dlpack(b.reshape(shape)).to(dt), T.from_dlpack(b.reshape(shape))
    for name in ("sum", "amax", "amin"):
        same_bits(getattr(hb, name)(**kw), getattr(fb, name)(**kw).to(dt))
    assert np.isnan(np.from_dlpack(hb.sum(**kw).to(T.float32).contiguous())).sum() == np.isnan(
        b.reshape(shape).astype(np.float64).sum(axis=dims)).sum()


LEVEL_NEEDS = {"baseline": set(), "avx2": {"avx2", "fma", "f16c", "bmi1", "bmi2", "popcnt"}}


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            return next((set(line.split(":", 1)[1].split()) for line in f if line.startswith("flags")), set())
    except OSError:
        return set()


@pytest.mark.skipif(os.environ.get("TESSERA_CPU_ISA") is not None, reason="already a forced level")
@pytest.mark.parametrize("level", sorted(LEVEL_NEEDS))
def test_lower_instruction_set_levels(level):
    """Each level has a conversion path of its own: rerun this file there."""
    import platform
    if platform.machine() not in ("x86_64", "AMD64") or not LEVEL_NEEDS[level] <= cpu_flags():
        pytest.skip(f"no {level} level on this machine")
    env = dict(os.environ, TESSERA_CPU_ISA=level)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__],
                          env=env, capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
