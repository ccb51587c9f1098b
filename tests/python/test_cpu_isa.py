"""The CPU plugin's instruction-set levels (plugins/cpu/src/isa.hpp): the
kernels are compiled for baseline x86-64, AVX2 and AVX-512, the best level the
CPU supports runs, TESSERA_CPU_ISA forces a lower one and refuses a bad one.
Each level runs in a child process (the plugin loads once per process), and
every level's results are checked against NumPy and against each other."""
import os
import subprocess
import sys

import pytest

np = pytest.importorskip("numpy")

from cpu_levels import ALL_LEVELS as LEVELS, supported_levels  # noqa: E402

# Ops over lengths that are no multiple of any vector width (tails) and over
# special values; float16/bfloat16 results are exported as float32 (exact).
CHILD = r"""
import sys
import numpy as np
import tessera as T
rng = np.random.default_rng(11)
x = (rng.standard_normal(1003) * 4).astype(np.float32)
x[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40]
y = (rng.standard_normal(1003) * 2).astype(np.float32)
p = np.abs(y) + 0.5
m = rng.standard_normal((37, 129)).astype(np.float32)
w = rng.standard_normal((129, 17)).astype(np.float32)
i = rng.integers(-1000, 1000, 1003).astype(np.int32)
j = rng.integers(-1000, 1000, 1003).astype(np.int32)
t = T.from_dlpack
f32 = lambda a: np.from_dlpack(a.to(T.float32).contiguous()).copy()
out = {
    "exp": T.ops.exp(t(x)), "log": T.ops.log(t(p)), "tanh": T.ops.tanh(t(x)), "sin": T.ops.sin(t(x)),
    "erf": T.ops.erf(t(x)), "gelu": T.ops.gelu(t(x)), "sigmoid": T.ops.sigmoid(t(x)),
    "sqrt": T.ops.sqrt(t(p)), "relu": t(x).relu(), "add": t(x) + t(y), "mul": t(x) * t(y),
    "pow": T.ops.pow(t(p), t(y)), "where": T.where(t(x > y), t(x), t(y)),
    "sum": t(y).sum(), "sum1": t(m).sum(1), "sum0": t(m).sum(0), "amax1": t(m).amax(1),
    "softmax": T.softmax(t(m), 1), "logsumexp": T.logsumexp(t(m), 1), "mm": T.mm(t(m), t(w)),
    "half_add": t(x).to(T.float16) + t(y).to(T.float16), "to_half": t(y).to(T.float16),
    "to_bf16": t(y).to(T.bfloat16), "int_add": t(i) + t(j), "int_mul": t(i) * t(j),
}
inputs = {"in_x": x, "in_y": y, "in_p": p, "in_m": m, "in_w": w, "in_i": i, "in_j": j}
np.savez(sys.argv[1], **{k: f32(v) for k, v in out.items()}, **inputs)
print(T.info())
"""


def run_child(tmp_path, level):
    env = dict(os.environ)
    if level is None:
        env.pop("TESSERA_CPU_ISA", None)
    else:
        env["TESSERA_CPU_ISA"] = level
    out = tmp_path / f"{level}.npz"
    proc = subprocess.run([sys.executable, "-c", CHILD, str(out)], env=env, capture_output=True, text=True,
                          timeout=240)
    return proc, out


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("isa")
    got = {}
    for level in supported_levels():
        proc, out = run_child(tmp, level)
        assert proc.returncode == 0, proc.stderr
        assert f"{level} kernels" in proc.stdout, proc.stdout
        got[level] = dict(np.load(out))
    return got


def test_default_is_the_best_level_the_cpu_supports(tmp_path):
    proc, _ = run_child(tmp_path, None)
    assert proc.returncode == 0, proc.stderr
    assert f"{supported_levels()[-1]} kernels" in proc.stdout, proc.stdout


def test_every_level_agrees_with_numpy(results):
    first = next(iter(results.values()))
    x, y, p, m, w, i, j = (first[f"in_{k}"] for k in "xypmwij")
    x64, y64, m64 = x.astype(np.float64), y.astype(np.float64), m.astype(np.float64)
    e = np.exp(m64 - m64.max(1, keepdims=True))
    with np.errstate(all="ignore"):
        want = {
            "exp": np.exp(x64), "log": np.log(p), "tanh": np.tanh(x64), "sin": np.sin(x64),
            "sigmoid": 1 / (1 + np.exp(-x64)), "sqrt": np.sqrt(p), "relu": np.maximum(x64, 0),
            "add": x64 + y64, "mul": x64 * y64, "pow": np.power(p.astype(np.float64), y64),
            "where": np.where(x > y, x, y), "sum": y64.sum(), "sum1": m64.sum(1), "sum0": m64.sum(0),
            "amax1": m64.max(1), "softmax": e / e.sum(1, keepdims=True),
            "logsumexp": np.log(e.sum(1)) + m64.max(1), "mm": m64 @ w.astype(np.float64),
            "half_add": (x.astype(np.float16) + y.astype(np.float16)).astype(np.float32),
            "to_half": y.astype(np.float16).astype(np.float32), "int_add": i + j, "int_mul": i * j,
        }
    for level, got in results.items():
        np.testing.assert_array_equal(got["in_x"], x)  # every child drew the same inputs
        for name, ref in want.items():
            ref = np.asarray(ref)
            if ref.dtype.kind in "iu":
                np.testing.assert_array_equal(got[name], ref, err_msg=f"{name} at {level}")
            elif name in ("half_add", "to_half", "where", "relu"):
                np.testing.assert_array_equal(got[name], ref.astype(np.float32), err_msg=f"{name} at {level}")
            else:
                np.testing.assert_allclose(got[name], ref, rtol=2e-5, atol=2e-5, err_msg=f"{name} at {level}")


def test_levels_agree_with_each_other(results):
    levels = list(results)
    if len(levels) < 2:
        pytest.skip(f"this CPU runs only {levels}")
    base = results[levels[0]]
    for level in levels[1:]:
        for name, value in results[level].items():
            if name.startswith("in_"):
                continue
            if name in ("half_add", "to_half", "to_bf16", "int_add", "int_mul", "where", "relu"):
                np.testing.assert_array_equal(value, base[name], err_msg=f"{name}: {level} vs {levels[0]}")
            else:
                np.testing.assert_allclose(value, base[name], rtol=1e-5, atol=1e-6,
                                           err_msg=f"{name}: {level} vs {levels[0]}")


@pytest.mark.parametrize("value,message", [
    ("sse9", "TESSERA_CPU_ISA='sse9' is not a level; use one of: baseline, avx2, avx512"),
    ("AVX2", "TESSERA_CPU_ISA='AVX2' is not a level"),
])
def test_an_unknown_level_fails_the_plugin_load_naming_it(tmp_path, value, message):
    proc, _ = run_child(tmp_path, value)
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr


def test_a_level_the_cpu_or_build_lacks_is_refused(tmp_path):
    missing = [lv for lv in LEVELS if lv not in supported_levels()]
    if not missing:
        pytest.skip("this CPU supports, and this build has, every level")
    proc, _ = run_child(tmp_path, missing[0])
    assert proc.returncode != 0
    assert f"TESSERA_CPU_ISA={missing[0]}, but this" in proc.stderr, proc.stderr
