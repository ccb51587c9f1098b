"""CPU op speed against NumPy, measured in the same process (issue 4's table).

    PYTHONPATH=build/release/python .venv/bin/python bench/bench_ops.py [--quick] [--markdown]

Each case runs the same float32 computation in NumPy and in Tessera on the same
data (Tessera's inputs are NumPy's arrays imported zero-copy through DLPack).
Repetitions alternate between the two sides (A, B, A, B, ...) and the median of
each side is kept, so drift of the machine hits both alike. The figure reported
is NumPy's time divided by Tessera's: above 1.0 Tessera is faster. Not run by
the tests (timings never gate them).
"""
import argparse
import math
import statistics
import sys
import time

import numpy as np

import tessera

SIZES = {"1K": 1 << 10, "64K": 1 << 16, "16M": 1 << 24}
# 2-D shapes for the per-row cases (reductions and softmax over the last dim).
ROWS = {"1K": (32, 32), "64K": (256, 256), "16M": (4096, 4096)}


def np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def cases():
    rng = np.random.default_rng(0)
    out = []
    for label, n in SIZES.items():
        a = rng.standard_normal(n, dtype=np.float32)
        b = rng.standard_normal(n, dtype=np.float32)
        ta, tb = tessera.from_dlpack(a), tessera.from_dlpack(b)
        out += [
            ("add", label, lambda a=a, b=b: a + b, lambda ta=ta, tb=tb: ta + tb),
            ("mul", label, lambda a=a, b=b: a * b, lambda ta=ta, tb=tb: ta * tb),
            ("exp", label, lambda a=a: np.exp(a), lambda ta=ta: ta.exp()),
            ("tanh", label, lambda a=a: np.tanh(a), lambda ta=ta: ta.tanh()),
            ("sum", label, lambda a=a: a.sum(), lambda ta=ta: ta.sum()),
        ]
    for label, shape in ROWS.items():
        x = rng.standard_normal(shape, dtype=np.float32)
        tx = tessera.from_dlpack(x)
        out += [
            ("max(dim=-1)", label, lambda x=x: x.max(-1), lambda tx=tx: tx.amax(-1)),
            ("softmax(dim=-1)", label, lambda x=x: np_softmax(x), lambda tx=tx: tx.softmax(-1)),
        ]
    for n in (64, 256, 1024):
        x = rng.standard_normal((n, n), dtype=np.float32)
        y = rng.standard_normal((n, n), dtype=np.float32)
        tx, ty = tessera.from_dlpack(x), tessera.from_dlpack(y)
        out.append(("matmul", str(n), lambda x=x, y=y: x @ y, lambda tx=tx, ty=ty: tx @ ty))
    return out


def per_call(fn, budget):
    """Seconds per call of fn: loops sized to take about `budget` seconds."""
    fn()
    n, t = 1, 0.0
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        t = time.perf_counter() - start
        if t >= budget / 4 or n >= 1 << 20:
            break
        n *= 4
    loops = max(1, int(n * budget / max(t, 1e-9)))
    start = time.perf_counter()
    for _ in range(loops):
        fn()
    return (time.perf_counter() - start) / loops


# Both sides keep worker threads that spin for a while after their last job
# (NumPy's bundled OpenBLAS for ~0.1 s, our OpenMP and OpenBLAS pools too); a
# pause before each side's turn lets the other side's threads go to sleep, so
# neither is measured against the other's spinning threads.
SETTLE_S = 0.3


def measure(np_fn, ts_fn, rounds, budget):
    ts, ns = [], []
    for _ in range(rounds):
        time.sleep(SETTLE_S)
        ns.append(per_call(np_fn, budget))
        time.sleep(SETTLE_S)
        ts.append(per_call(ts_fn, budget))
    return statistics.median(ns), statistics.median(ts)


def fmt_time(s):
    return f"{s * 1e6:.1f} us" if s < 1e-3 else f"{s * 1e3:.2f} ms"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer, shorter repetitions")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.add_argument("--only", help="run only the ops whose name contains this text")
    args = p.parse_args()
    rounds, budget = (3, 0.05) if args.quick else (7, 0.2)
    rows, missing = [], []
    for op, size, np_fn, ts_fn in cases():
        if args.only and args.only not in op:
            continue
        try:
            ts_fn()
        except (AttributeError, NotImplementedError) as e:
            missing.append(f"{op} {size}: {e}")
            continue
        n, t = measure(np_fn, ts_fn, rounds, budget)
        rows.append((op, size, n, t, n / t))
        if not args.markdown:
            print(f"{op:16s} {size:>5s}  numpy {fmt_time(n):>10s}  tessera {fmt_time(t):>10s}  {n / t:5.2f}x",
                  flush=True)
    if not rows:
        sys.exit("no case ran: " + "; ".join(missing))
    geo = math.exp(sum(math.log(r[4]) for r in rows) / len(rows))
    if args.markdown:
        print("| op | size | NumPy | Tessera | speed vs NumPy |")
        print("|---|---|---|---|---|")
        for op, size, n, t, r in rows:
            print(f"| {op} | {size} | {fmt_time(n)} | {fmt_time(t)} | {r:.2f}x |")
        print(f"| **geometric mean** | | | | **{geo:.2f}x** |")
    else:
        print(f"geometric mean over {len(rows)} cases: {geo:.2f}x NumPy's speed")
    for m in missing:
        print("not run:", m, file=sys.stderr)


if __name__ == "__main__":
    main()
