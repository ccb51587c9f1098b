"""out= forms against the allocating forms of the same ops, in one process.

    PYTHONPATH=build/release/python .venv/bin/python bench/bench_out_forms.py [--rounds N]

Each case times `op(..., out=o)` and `op(...)` on the same float32 inputs,
alternating the two (A, B, A, B, ...) and keeping the median of each; the figure
is out='s time over the allocating form's: at most 1.0 means out= costs no more
than a fresh result (it writes into `o` instead of copying a result there).
Not run by the tests (timings never gate them).
"""
import argparse
import statistics
import time

import numpy as np

import tessera


def timed(f, reps):
    f()
    t0 = time.perf_counter()
    for _ in range(reps):
        f()
    return (time.perf_counter() - t0) / reps


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=15)
    args = p.parse_args()
    rng = np.random.default_rng(0)
    n = 1 << 20
    a = tessera.from_dlpack(rng.standard_normal(n, dtype=np.float32))
    b = tessera.from_dlpack(rng.standard_normal(n, dtype=np.float32))
    m = tessera.from_dlpack(rng.standard_normal((1024, 1024), dtype=np.float32))
    k = tessera.from_dlpack(rng.standard_normal((256, 256), dtype=np.float32))
    o = tessera.empty([n])
    orow = tessera.empty([1024])
    ok = tessera.empty([256, 256])
    cases = [
        ("add 1M", lambda: tessera.add(a, b, out=o), lambda: tessera.add(a, b), 20),
        ("mul 1M", lambda: tessera.mul(a, b, out=o), lambda: tessera.mul(a, b), 20),
        ("exp 1M", lambda: tessera.exp(a, out=o), lambda: tessera.exp(a), 10),
        ("sum(dim=1) 1024x1024", lambda: tessera.sum(m, 1, out=orow), lambda: tessera.sum(m, 1), 10),
        ("mm 256x256", lambda: tessera.mm(k, k, out=ok), lambda: tessera.mm(k, k), 10),
    ]
    print(f"{'case':<24} {'out= / allocating':>18}")
    for name, with_out, alloc, reps in cases:
        t_out, t_alloc = [], []
        for _ in range(args.rounds):
            t_out.append(timed(with_out, reps))
            t_alloc.append(timed(alloc, reps))
        print(f"{name:<24} {statistics.median(t_out) / statistics.median(t_alloc):>17.2f}x")


if __name__ == "__main__":
    main()
