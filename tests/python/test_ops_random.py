"""Random ops: Philox known answers through the public API, statistics
(moments and Kolmogorov-Smirnov tests written with NumPy and math.erf),
reproducibility (seeds, generators, thread counts), argument errors."""
import math
import os
import subprocess
import sys

import pytest

import tessera

np = pytest.importorskip("numpy")

FLOATS = ["float16", "bfloat16", "float32", "float64"]


def values(t):
    return np.asarray(t.to(tessera.float64).tolist(), dtype=np.float64)


def ks_statistic(sample, cdf):
    x = np.sort(sample)
    n = len(x)
    c = cdf(x)
    return max(np.max(np.arange(1, n + 1) / n - c), np.max(c - np.arange(0, n) / n))


# Critical value of the one-sample KS statistic at significance 1e-6 (asymptotic).
def ks_critical(n):
    return math.sqrt(-0.5 * math.log(0.5e-6)) / math.sqrt(n)


normal_cdf = np.vectorize(lambda v: 0.5 * (1.0 + math.erf(v / math.sqrt(2.0))))


def test_known_answer_seed_0():
    # Random123 KAT: Philox4x32-10(counter 0, key 0) = 6627e8d5 e169c58d bc57ac4c 9b00dbd8.
    g = tessera.Generator(0)
    x = tessera.rand(1, generator=g, dtype=tessera.float64).item()
    assert x == ((0xE169C58D << 32 | 0x6627E8D5) >> 11) * 2.0 ** -53
    g.manual_seed(0)
    assert tessera.rand(1, generator=g).item() == (0x6627E8D5 >> 8) * 2.0 ** -24
    g.manual_seed(0)
    r = tessera.randint(-2 ** 63, 2 ** 63 - 1, (1,), generator=g).item()
    assert r % 2 ** 64 == ((0xE169C58D << 32 | 0x6627E8D5) - 2 ** 63) % 2 ** 64


@pytest.mark.parametrize("dtype", FLOATS)
def test_uniform_statistics(dtype):
    n = 200_000
    g = tessera.Generator(1234)
    x = values(tessera.rand(n, generator=g, dtype=getattr(tessera, dtype)))
    assert x.min() >= 0.0 and x.max() < 1.0
    assert abs(x.mean() - 0.5) < 5 * math.sqrt(1 / 12 / n)
    assert abs(x.var() - 1 / 12) < 0.002
    if dtype in ("float32", "float64"):  # coarse dtypes are visibly discrete
        assert ks_statistic(x, lambda v: v) < ks_critical(n)
    t = tessera.empty(n, dtype=getattr(tessera, dtype))
    assert t.uniform_(-3, 5, generator=g) is t
    y = values(t)
    assert y.min() >= -3 and y.max() < 5 and abs(y.mean() - 1) < 0.05


@pytest.mark.parametrize("dtype", FLOATS)
def test_normal_statistics(dtype):
    n = 200_000
    g = tessera.Generator(99)
    x = values(tessera.randn(n, generator=g, dtype=getattr(tessera, dtype)))
    assert abs(x.mean()) < 5 / math.sqrt(n)
    assert abs(x.var() - 1) < 0.02
    if dtype in ("float32", "float64"):
        assert ks_statistic(x, normal_cdf) < ks_critical(n)
    t = tessera.empty(n, dtype=getattr(tessera, dtype)).normal_(2.0, 3.0, generator=g)
    y = values(t)
    assert abs(y.mean() - 2) < 0.05 and abs(y.std() - 3) < 0.05


def test_normal_pairs_are_independent():
    # Counters 2j and 2j + 1 are Box-Muller's cosine and sine of one block:
    # jointly a standard bivariate normal, so uncorrelated, with a squared
    # radius x^2 + y^2 distributed as chi-square with 2 degrees of freedom
    # (cdf 1 - exp(-r / 2)) and an angle uniform on (-pi, pi].
    n = 200_000
    x = values(tessera.randn(2 * n, generator=tessera.Generator(31), dtype=tessera.float64))
    even, odd = x[0::2], x[1::2]
    assert abs(np.mean(even * odd)) < 5 / math.sqrt(n)
    assert abs(np.mean(x[1:-1:2] * x[2::2])) < 5 / math.sqrt(n)  # across neighbouring blocks
    assert ks_statistic(even ** 2 + odd ** 2, lambda r: 1 - np.exp(-r / 2)) < ks_critical(n)
    assert ks_statistic(np.arctan2(odd, even), lambda a: (a + np.pi) / (2 * np.pi)) < ks_critical(n)


@pytest.mark.parametrize("offset", [0, 1, 2 ** 32 - 1])
def test_normal_calls_continue_one_stream(offset):
    # The value is a function of the counter: calls of odd lengths (starting
    # mid-pair) continue each other exactly as one call, and a strided output
    # gets the same row-major values as a dense one.
    whole = tessera.Generator(4)
    whole.set_offset(offset)
    want = tessera.randn(1001, generator=whole, dtype=tessera.float64).tolist()
    parts = tessera.Generator(4)
    parts.set_offset(offset)
    got = []
    for length in (1, 3, 500, 497):
        got += tessera.randn(length, generator=parts, dtype=tessera.float64).tolist()
    assert got == want
    g = tessera.Generator(4)
    g.set_offset(offset)
    t = tessera.empty(7, 143, dtype=tessera.float64).t().normal_(generator=g)
    assert sum(t.tolist(), []) == want


def test_randint_bernoulli_randperm_dropout():
    g = tessera.Generator(5)
    r = np.asarray(tessera.randint(-3, 7, (100_000,), generator=g).tolist())
    assert r.min() == -3 and r.max() == 6
    counts = np.bincount(r + 3)
    assert np.all(np.abs(counts - 10_000) < 500)
    for dt in ["uint8", "int8", "int16", "int32", "float16", "float32"]:
        v = values(tessera.randint(0, 100, (1000,), generator=g, dtype=getattr(tessera, dt)))
        assert v.min() >= 0 and v.max() < 100 and np.all(v == np.round(v))
    p = np.linspace(0, 1, 11)
    probs = tessera.tensor(np.repeat(p, 20_000).tolist(), dtype=tessera.float64)
    b = values(tessera.bernoulli(probs, generator=g)).reshape(11, -1)
    assert np.all(np.abs(b.mean(axis=1) - p) < 0.015)
    assert set(np.unique(values(tessera.empty(1000, dtype=tessera.bool).bernoulli_(0.3, generator=g)))) <= {0, 1}
    perm = tessera.randperm(1000, generator=g)
    assert perm.dtype == tessera.int64
    assert sorted(perm.tolist()) == list(range(1000))
    assert perm.tolist() != list(range(1000))
    assert tessera.randperm(0).shape == (0,)
    x = tessera.ones(100_000)
    d = values(tessera.dropout(x, 0.2, generator=g))
    assert set(np.unique(d)) <= {0.0, np.float32(1 / 0.8)}
    assert abs((d == 0).mean() - 0.2) < 0.01
    assert values(tessera.dropout(x, 0.5, train=False)).tolist() == values(x).tolist()
    h = values(tessera.dropout(tessera.ones(10_000, dtype=tessera.float16), 0.5, generator=g))
    assert set(np.unique(h)) <= {0.0, 2.0} and abs((h == 0).mean() - 0.5) < 0.03
    assert values(tessera.dropout(x, 1.0)).max() == 0
    assert np.all(values(tessera.dropout(x, 0.0)) == 1)


def test_seeds_and_generators():
    tessera.manual_seed(3)
    a = tessera.rand(10)
    tessera.manual_seed(3)
    assert a.tolist() == tessera.rand(10).tolist()
    assert tessera.initial_seed() == 3
    g1, g2 = tessera.Generator(11), tessera.Generator(12)
    assert tessera.randn(50, generator=g1).tolist() != tessera.randn(50, generator=g2).tolist()
    g = tessera.Generator(7)
    state = g.get_state()
    first = tessera.randn(20, generator=g).tolist()
    assert g.get_offset() == 20
    assert g.set_state(state) is g
    assert tessera.randn(20, generator=g).tolist() == first
    assert g.manual_seed(8) is g and g.initial_seed() == 8
    s = g.seed()
    assert g.initial_seed() == s
    assert tessera.randperm(30, generator=tessera.Generator(1)).tolist() == \
        tessera.randperm(30, generator=tessera.Generator(1)).tolist()


def test_row_major_counters_for_strided_and_broadcast():
    # Element i in row-major order uses counter offset + i, whatever the strides.
    a = tessera.empty(4, 3).t().uniform_(generator=tessera.Generator(21))
    b = tessera.rand(3, 4, generator=tessera.Generator(21))
    assert a.tolist() == b.tolist()
    p = tessera.tensor([0.0, 1.0, 0.0])
    out = tessera.empty(2, 3).bernoulli_(p, generator=tessera.Generator(1))
    assert out.tolist() == [[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]]
    with pytest.raises(ValueError, match="bernoulli_.*broadcast"):
        tessera.empty(3).bernoulli_(tessera.zeros(2, 3))


SCRIPT = """
import tessera
g = tessera.Generator(2024)
out = []
out += tessera.rand(70000, generator=g).tolist()[::97]
out += tessera.randn(70000, generator=g, dtype=tessera.float64).tolist()[::97]
out += tessera.randint(0, 1000, (70000,), generator=g).tolist()[::97]
out += tessera.dropout(tessera.ones(70000), 0.3, generator=g).tolist()[::97]
out += tessera.randperm(5000, generator=g).tolist()[::7]
print(repr(out))
"""


def test_same_results_with_1_and_2_threads():
    runs = []
    for threads in ("1", "2"):
        env = dict(os.environ, OMP_NUM_THREADS=threads)
        res = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        runs.append(res.stdout)
    assert runs[0] == runs[1]


def test_meta_shapes():
    t = tessera.rand(2, 3, device="meta")
    assert t.shape == (2, 3) and t.device.type == "meta"
    assert tessera.randperm(5, device="meta").dtype == tessera.int64
    assert tessera.randn(4, dtype=tessera.float16, device="meta").dtype == tessera.float16


def test_errors():
    with pytest.raises(TypeError, match="rand.*floating"):
        tessera.rand(3, dtype=tessera.int64)
    with pytest.raises(ValueError, match="uniform_.*from"):
        tessera.empty(3).uniform_(2, 1)
    with pytest.raises(ValueError, match="normal_.*std"):
        tessera.empty(3).normal_(0, -1)
    with pytest.raises(TypeError, match="normal_.*floating"):
        tessera.empty(3, dtype=tessera.int32).normal_()
    with pytest.raises(ValueError, match="random_.*from < to"):
        tessera.randint(3, 3, (2,))
    with pytest.raises(ValueError, match="random_.*fit"):
        tessera.randint(0, 1000, (2,), dtype=tessera.int8)
    with pytest.raises(ValueError, match="bernoulli_.*p"):
        tessera.empty(3).bernoulli_(1.5)
    with pytest.raises(ValueError, match="bernoulli_.*probabilities"):
        tessera.bernoulli(tessera.full((3,), 2.0))
    with pytest.raises(TypeError, match="bernoulli.*floating"):
        tessera.bernoulli(tessera.ones(3, dtype=tessera.int64))
    with pytest.raises(ValueError, match="dropout.*between 0 and 1"):
        tessera.dropout(tessera.ones(3), 1.5)
    with pytest.raises(TypeError, match="dropout.*floating"):
        tessera.dropout(tessera.ones(3, dtype=tessera.int64))
    with pytest.raises(ValueError, match="randperm.*non-negative"):
        tessera.randperm(-1)
    with pytest.raises(ValueError, match="set_state"):
        tessera.Generator().set_state(tessera.zeros(3, dtype=tessera.uint8))
