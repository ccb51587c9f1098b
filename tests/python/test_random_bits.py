"""The random ops bit for bit: every op's output against an independent NumPy
implementation of the spec (sdk/include/tessera/sdk/philox.hpp,
docs/ops/random.md): Philox4x32-10, the counter rule and the per-element
transforms, with Box-Muller's log, cos_2pi and sin_2pi written out as philox.hpp does.
NumPy's float64 ufuncs round every +, -, *, / and sqrt to nearest and never
fuse a multiply with an add, so the reference is exact, not approximate.

The CPU plugin computes dense outputs a vector batch at a time and the rest
element by element, so the cases cover what could tell the two apart: counters
whose low word (or the whole 64-bit counter) wraps inside a batch, lengths
that are no multiple of any batch width, two threads (ranges that start
mid-batch), strided outputs, every dtype, and bounds whose rounding reaches
`to` (uniform_ then stores `from`, -0.0 included). Each instruction-set level
of the plugin this CPU and build have runs in a child process (the plugin
picks its level once, when it loads)."""
import json
import os
import subprocess
import sys

import pytest

from cpu_levels import supported_levels

np = pytest.importorskip("numpy")

U64 = np.uint64
M32 = U64(0xFFFFFFFF)

# ---------------------------------------------------------------------------
# The reference: the spec in NumPy
# ---------------------------------------------------------------------------


def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 on uint64 arrays holding 32-bit words; keys are ints."""
    c0, c1, c2, c3 = (np.asarray(c, dtype=U64) for c in (c0, c1, c2, c3))
    for _ in range(10):
        p0 = c0 * U64(0xD2511F53)  # < 2^64: exact in uint64
        p1 = c2 * U64(0xCD9E8D57)
        c0, c1, c2, c3 = (p1 >> U64(32)) ^ c1 ^ U64(k0), p1 & M32, (p0 >> U64(32)) ^ c3 ^ U64(k1), p0 & M32
        k0 = (k0 + 0x9E3779B9) & 0xFFFFFFFF
        k1 = (k1 + 0xBB67AE85) & 0xFFFFFFFF
    return c0, c1, c2, c3


def counters(offset, n):
    """The counters of elements 0..n-1 of a call at offset: offset + i, wrapping."""
    return U64(offset) + np.arange(n, dtype=U64)  # uint64 arrays wrap


def blocks_at(seed, counter):
    """Words x0..x3 of the blocks of a uint64 array of counters: words (low,
    high, 0, 0), key (low, high)."""
    zero = np.zeros(counter.shape, dtype=U64)
    return philox4x32_10(counter & M32, counter >> U64(32), zero, zero, seed & 0xFFFFFFFF, seed >> 32)


def blocks(seed, offset, n):
    """Words x0..x3 of elements 0..n-1 of a call with (seed, offset)."""
    return blocks_at(seed, counters(offset, n))


def u64(lo, hi):
    return (hi << U64(32)) | lo


def uniform_float(x0):
    return (x0 >> U64(8)).astype(np.float64) * 2.0 ** -24


def uniform_double(lo, hi):
    return (u64(lo, hi) >> U64(11)).astype(np.float64) * 2.0 ** -53


LN2_HI = float.fromhex("0x1.62e42fee00000p-1")
LN2_LO = float.fromhex("0x1.a39ef35793c76p-33")


def ref_log(x):
    """philox::log, operation for operation (its special cases included)."""
    x = np.asarray(x, dtype=np.float64)
    sub = x < 2.2250738585072014e-308
    xs = np.where(sub, x * 18014398509481984.0, x)
    k = np.where(sub, -54, 0).astype(np.int64)
    b = xs.view(U64)
    k += ((b >> U64(52)) & U64(0x7FF)).astype(np.int64) - 1023
    b = b & U64(0x000FFFFFFFFFFFFF)
    big = b > U64(0x0006A09E667F3BCD)
    b = np.where(big, b | U64(0x3FE0000000000000), b | U64(0x3FF0000000000000))
    k += big.astype(np.int64)
    f = b.view(np.float64) - 1.0
    s = f / (2.0 + f)
    z = s * s
    r = np.full_like(z, 2.0 / 21.0)
    for c in (2.0 / 19.0, 2.0 / 17.0, 2.0 / 15.0, 2.0 / 13.0, 2.0 / 11.0, 2.0 / 9.0, 2.0 / 7.0, 2.0 / 5.0, 2.0 / 3.0):
        r = c + z * r
    r = z * r
    hfsq = (0.5 * f) * f
    dk = k.astype(np.float64)
    tail = s * (hfsq + r) + dk * LN2_LO
    out = dk * LN2_HI + (f - (hfsq - tail))
    with np.errstate(invalid="ignore"):
        out = np.where(x == np.inf, np.inf, out)
        out = np.where(x == 0.0, -np.inf, out)
        out = np.where((x < 0.0) | np.isnan(x), np.nan, out)
    return out


COS = (6.565963114979473e-11, -6.386603083791852e-09, 4.710874778818172e-07, -2.5202042373060607e-05,
       0.0009192602748394266, -0.02086348076335296, 0.25366950790104803, -1.2337005501361697, 1.0)
SIN = (6.0669357311061955e-12, -6.688035109811468e-10, 5.692172921967927e-08, -3.598843235212085e-06,
       0.00016044118478735983, -0.004681754135318688, 0.07969262624616705, -0.6459640975062463)


def ref_cos_2pi(u, quarter_back=0):
    """philox::cos_2pi for finite u, operation for operation; with
    quarter_back=1, philox::sin_2pi (the quadrant one back)."""
    u = np.asarray(u, dtype=np.float64)
    t = u * 4.0
    k_round = 6755399441055744.0
    q = (t + k_round) - k_round
    r = t - q
    quadrant = (q.astype(np.int64) - quarter_back) & 3
    z = r * r
    c = np.full_like(z, COS[0])
    for coef in COS[1:]:
        c = coef + z * c
    s = np.full_like(z, SIN[0])
    for coef in SIN[1:]:
        s = coef + z * s
    s = r * 1.5707963267948966 + (r * z) * s
    p = np.where((quadrant == 0) | (quadrant == 2), c, s)
    return np.where((quadrant == 1) | (quadrant == 2), -p, p)


def standard_normal(seed, offset, n):
    """Counters 2j and 2j + 1 share the block of 2j: its Box-Muller radius
    times cos(2 pi u2) for the even counter, sin(2 pi u2) for the odd one."""
    c = counters(offset, n)
    x0, x1, x2, x3 = blocks_at(seed, c & ~U64(1))
    u1 = 1.0 - uniform_double(x0, x1)
    u2 = uniform_double(x2, x3)
    radius = np.sqrt(-2.0 * ref_log(u1))
    return np.where((c & U64(1)) == 1, radius * ref_cos_2pi(u2, quarter_back=1), radius * ref_cos_2pi(u2))


def to_bf16_as_f32(f32):
    """float32 -> bfloat16 (nearest even; no NaN here), widened back to float32."""
    bits = np.asarray(f32, dtype=np.float32).view(np.uint32)
    bits = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)
    return bits.view(np.float32)


def round_to(values, dtype):
    """float64 values rounded to dtype as the spec says (float first for the
    16-bit types), as the float32/float64 array the child exports."""
    if dtype == "float64":
        return np.asarray(values, dtype=np.float64)
    f = np.asarray(values, dtype=np.float64).astype(np.float32)
    if dtype == "float16":
        return f.astype(np.float16).astype(np.float32)
    if dtype == "bfloat16":
        return to_bf16_as_f32(f)
    assert dtype == "float32"
    return f


def int_to(values, dtype):
    """int64 values converted to dtype (C++ conversion; 16-bit floats via float)."""
    v = np.asarray(values, dtype=np.int64)
    if dtype == "bool":
        return (v != 0).astype(np.uint8)
    if dtype in ("float16", "bfloat16", "float32"):
        return round_to(v.astype(np.float32).astype(np.float64), dtype)
    if dtype == "float64":
        return v.astype(np.float64)
    return v.astype(dtype)


def dropout_input(n):
    """Exact in every floating dtype: multiples of 1/8 in [-6, 6]."""
    return ((np.arange(n) % 97) - 48).astype(np.float64) / 8.0


def reference(case):
    op, dtype, seed, offset, shape = case["op"], case["dtype"], case["seed"], case["offset"], case["shape"]
    n = int(np.prod(shape))
    x0, x1, x2, x3 = blocks(seed, offset, n)
    if op == "uniform":
        lo, hi = case["a"], case["b"]
        rng = hi - lo
        u = uniform_double(x0, x1) if dtype == "float64" else uniform_float(x0)
        out = round_to(lo + rng * u, dtype)
        if rng > 0:
            out = np.where(out.astype(np.float64) >= hi, round_to(np.full(n, lo), dtype), out)
    elif op == "normal":
        out = round_to(case["a"] + case["b"] * standard_normal(seed, offset, n), dtype)
    elif op == "random":
        lo, hi = case["a"], case["b"]
        # from + u64 % (to - from), in wrapping unsigned 64-bit arithmetic
        w = (U64(lo % 2 ** 64) + u64(x0, x1) % U64((hi - lo) % 2 ** 64)).view(np.int64)
        out = int_to(w, dtype)
    elif op == "bernoulli":
        hit = (uniform_double(x0, x1) < case["a"]).astype(np.int64)
        out = int_to(hit, dtype)
    elif op == "bernoulli_tensor":
        p = np.linspace(0.0, 1.0, n)
        out = int_to((uniform_double(x0, x1) < p).astype(np.int64), dtype)
    elif op == "dropout":
        p = case["a"]
        x = dropout_input(n)
        if case.get("strided"):  # the input was a transposed view: its row-major order
            rows, cols = shape
            x = x.reshape(cols, rows).T.reshape(-1)
        drop = uniform_double(x0, x1) < p
        if dtype == "float64":
            kept = x * (1.0 / (1.0 - p))
        else:  # float arithmetic (compute_t), then rounded to the 16-bit types
            kept = (x.astype(np.float32) * np.float32(1.0 / (1.0 - p))).astype(np.float64)
        out = round_to(np.where(drop, 0.0, kept), dtype)
    elif op == "randperm":
        key = u64(x0, x1)
        perm = np.lexsort((np.arange(n), key))  # by key, ties by index
        out = int_to(perm, dtype)
    else:
        raise AssertionError(op)
    return np.asarray(out).reshape(shape)


# ---------------------------------------------------------------------------
# The cases
# ---------------------------------------------------------------------------

FLOATS = ["float16", "bfloat16", "float32", "float64"]
# (seed, offset, shape, strided output)
STREAMS = [
    (0, 0, [37], False),
    (67280421310721, 2 ** 32 - 13, [101], False),            # the low word wraps inside a batch
    (2 ** 64 - 1, 2 ** 64 - 21, [45], False),                 # the whole counter wraps
    (0x0123456789ABCDEF, 2 ** 33 - 7, [20011], False),        # long: two threads, tails
    (99, 2 ** 32 - 10011, [20011], False),                    # wraps near where the second thread starts
    (12345, 2 ** 32 - 100, [13, 29], True),                   # strided output
    (5, 3, [3, 5, 17], False),
]


def make_cases():
    cases = []

    def add(op, dtype, a=None, b=None, streams=STREAMS):
        for seed, offset, shape, strided in streams:
            cases.append(dict(op=op, dtype=dtype, a=a, b=b, seed=seed, offset=offset, shape=shape, strided=strided))

    # Bounds where rounding to the dtype reaches `to` for some elements (see
    # test_cases_reach_the_replacement_by_from), also with from = -0.0.
    near_to = {"float16": (1024.0, 1025.0), "bfloat16": (2.0, 3.0), "float32": (2.0 ** 20, 2.0 ** 20 + 1),
               "float64": (2.0 ** 52, 2.0 ** 52 + 1)}
    for dtype in FLOATS:
        for lo, hi in [(0.0, 1.0), (-3.0, 5.0), (-0.0, 2.0 ** -14), near_to[dtype]]:
            add("uniform", dtype, lo, hi)
        for mean, std in [(0.0, 1.0), (2.0, 3.0), (-1.5, 1e-3)]:
            add("normal", dtype, mean, std)
        for p in [0.3, 0.5]:
            add("dropout", dtype, p)
        add("random", dtype, *((-128, 128) if dtype == "bfloat16" else (0, 1000)))
    for lo, hi in [(0, 1000), (-3, 7), (5, 6), (0, 2 ** 32), (5, 2 ** 40 + 3), (-2 ** 62, 2 ** 62 + 12345),
                   (-2 ** 63, 2 ** 63 - 1)]:
        add("random", "int64", lo, hi)
    for dtype, lo, hi in [("int32", 0, 1000), ("int32", -2 ** 31, 2 ** 31 - 1), ("uint8", 0, 256), ("uint8", 3, 10),
                          ("int16", -100, 100), ("int8", -128, 128), ("bool", 0, 2), ("float64", -2 ** 40, 2 ** 40)]:
        add("random", dtype, lo, hi)
    for dtype in ["float32", "float64", "float16", "bfloat16", "bool", "int64", "uint8"]:
        for p in [0.0, 0.3, 0.999, 1.0]:
            add("bernoulli", dtype, p)
    add("bernoulli_tensor", "float32")
    for dtype in ["int64", "int32", "float32"]:
        add("randperm", dtype, streams=[(s, o, [n], False) for (s, o, _, _), n in zip(STREAMS, [1, 17, 1000, 20011])])
    return cases


CASES = make_cases()

CHILD = r"""
import json, sys
import numpy as np
import tessera as T
cases = json.load(open(sys.argv[1]))
out = {}
for k, c in enumerate(cases):
    g = T.Generator(c["seed"])
    g.set_offset(c["offset"])
    dt = getattr(T, c["dtype"])
    shape, op = c["shape"], c["op"]
    n = int(np.prod(shape))
    if c["strided"]:  # a transposed view: row-major counters, non-contiguous memory
        t = T.empty(shape[1], shape[0], dtype=dt).t()
    else:
        t = T.empty(*shape, dtype=dt)
    if op == "uniform":
        t.uniform_(c["a"], c["b"], generator=g)
    elif op == "normal":
        t.normal_(c["a"], c["b"], generator=g)
    elif op == "random":
        t.random_(c["a"], c["b"], generator=g)
    elif op == "bernoulli":
        t.bernoulli_(c["a"], generator=g)
    elif op == "bernoulli_tensor":
        t.bernoulli_(T.from_dlpack(np.linspace(0.0, 1.0, n).reshape(shape)), generator=g)
    elif op == "dropout":
        x = ((np.arange(n) % 97) - 48).astype(np.float32) / 8
        if c["strided"]:
            x = T.from_dlpack(x.reshape(shape[1], shape[0])).to(dt).t()
        else:
            x = T.from_dlpack(x.reshape(shape)).to(dt)
        t = T.dropout(x, c["a"], True, generator=g)
    elif op == "randperm":
        t = T.randperm(n, generator=g, dtype=dt)
    assert g.get_offset() == (c["offset"] + n) % 2 ** 64
    if c["dtype"] in ("float16", "bfloat16"):
        t = t.to(T.float32)  # exact
    elif c["dtype"] == "bool":
        t = t.to(T.uint8)
    out[str(k)] = np.from_dlpack(t.contiguous()).copy()
np.savez(sys.argv[2], **out)
print(T.info())
"""

# ---------------------------------------------------------------------------
# Levels and children
# ---------------------------------------------------------------------------




@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("random_bits")
    spec = tmp / "cases.json"
    spec.write_text(json.dumps(CASES))
    got = {}
    for level in supported_levels():
        # Two threads whatever the machine's load, so that ranges split.
        env = dict(os.environ, TESSERA_CPU_ISA=level, OMP_NUM_THREADS="2", TESSERA_CPU_LOAD_AWARE="0")
        out = tmp / f"{level}.npz"
        proc = subprocess.run([sys.executable, "-c", CHILD, str(spec), str(out)], env=env, capture_output=True,
                              text=True, timeout=240)
        assert proc.returncode == 0, proc.stderr
        assert f"{level} kernels" in proc.stdout, proc.stdout
        got[level] = dict(np.load(out))
    return got


def describe(case):
    return (f"{case['op']}({case['a']}, {case['b']}) {case['dtype']} seed={case['seed']:#x} "
            f"offset={case['offset']:#x} shape={case['shape']}{' strided' if case['strided'] else ''}")


def bits(a):
    a = np.asarray(a)
    if a.dtype.kind == "f":
        return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize])
    return a


def test_reference_philox_known_answers():
    # Random123's known answers (as in tests/conformance/sdk_philox_test.cpp).
    kat = [((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
           ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
           ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
            (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]
    for counter, key, want in kat:
        got = philox4x32_10(*(np.array([c], dtype=U64) for c in counter), *key)
        assert [int(w[0]) for w in got] == list(want)
    # The counter rule: counter 0xfedcba9876543210 under seed 0x0123456789abcdef.
    x = blocks(0x0123456789ABCDEF, 0xFEDCBA9876543210, 1)
    y = philox4x32_10(*(np.array([c], dtype=U64) for c in (0x76543210, 0xFEDCBA98, 0, 0)), 0x89ABCDEF, 0x01234567)
    assert [int(w[0]) for w in x] == [int(w[0]) for w in y]


def test_reference_log_and_cos_are_accurate():
    # Not the bits (those are the spec's), only that the transcription is sane.
    x = np.concatenate([np.linspace(2.0 ** -53, 1.0, 10001), [2.0 ** -53, 0.5, 1.0, np.sqrt(0.5)]])
    np.testing.assert_allclose(ref_log(x), np.log(x), rtol=3e-16, atol=1e-300)
    u = np.linspace(0.0, 1.0, 10001, endpoint=False)
    np.testing.assert_allclose(ref_cos_2pi(u), np.cos(2 * np.pi * u), rtol=0, atol=2e-15)
    np.testing.assert_allclose(ref_cos_2pi(u, quarter_back=1), np.sin(2 * np.pi * u), rtol=0, atol=2e-15)
    assert ref_log(np.array([0.0]))[0] == -np.inf and ref_log(np.array([1.0]))[0] == 0.0


@pytest.mark.parametrize("op", ["uniform", "normal", "random", "bernoulli", "dropout", "randperm"])
def test_bits_equal_the_reference_at_every_level(outputs, op):
    checked = 0
    for k, case in enumerate(CASES):
        if not case["op"].startswith(op):
            continue
        want = reference(case)
        for level, got in outputs.items():
            g = got[str(k)]
            assert g.shape == want.shape, f"{describe(case)} at {level}: shape {g.shape}"
            diff = np.flatnonzero(bits(g).reshape(-1) != bits(want.astype(g.dtype)).reshape(-1))
            if diff.size:
                i = diff[0]
                pytest.fail(f"{describe(case)} at {level}: {diff.size} elements differ, first at {i}: "
                            f"got {g.reshape(-1)[i]!r}, want {want.reshape(-1)[i]!r}")
            checked += 1
    assert checked > 0


def test_cases_reach_the_replacement_by_from():
    # uniform_ stores `from` where the value rounded to the dtype reaches `to`:
    # the cases must contain such elements for every dtype, and with from = -0.0
    # for the 16-bit types, or they would not test it.
    hits = {}
    for case in CASES:
        if case["op"] == "uniform":
            n = int(np.prod(case["shape"]))
            x0, x1, _, _ = blocks(case["seed"], case["offset"], n)
            u = uniform_double(x0, x1) if case["dtype"] == "float64" else uniform_float(x0)
            raw = round_to(case["a"] + (case["b"] - case["a"]) * u, case["dtype"])
            key = (case["dtype"], str(case["a"]))
            hits[key] = hits.get(key, 0) + int(np.sum(raw.astype(np.float64) >= case["b"]))
    for dtype in FLOATS:
        assert sum(v for (d, _), v in hits.items() if d == dtype) > 0, (dtype, hits)
    assert hits[("float16", "-0.0")] > 0 and hits[("bfloat16", "-0.0")] > 0, hits
