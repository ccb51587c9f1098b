"""Python-side costs of Tessera, each as a ratio to NumPy measured in the same run.

    PYTHONPATH=build/release/python .venv/bin/python bench/bench_python.py

Repetitions are interleaved (A, B, A, B, ...) and the median of each is kept,
so drift of the machine hits both sides alike. Not run by the tests.
"""
import statistics
import timeit

import numpy as np

import tessera

ROUNDS, NUMBER = 15, 20000


def median_ns(stmts):
    times = {name: [] for name in stmts}
    for _ in range(ROUNDS):
        for name, fn in stmts.items():
            times[name].append(timeit.timeit(fn, number=NUMBER) / NUMBER * 1e9)
    return {name: statistics.median(v) for name, v in times.items()}


def main():
    a = np.arange(4, dtype=np.float32)
    t = tessera.arange(4, dtype=tessera.float32)
    x, y = tessera.ones(1), tessera.ones(1)
    xn, yn = np.ones(1, dtype=np.float32), np.ones(1, dtype=np.float32)
    r = median_ns({
        "np.from_dlpack(ndarray)": lambda: np.from_dlpack(a),
        "np.from_dlpack(tessera)": lambda: np.from_dlpack(t),
        "tessera.from_dlpack(ndarray)": lambda: tessera.from_dlpack(a),
        "numpy a + b (1 element)": lambda: xn + yn,
        "tessera a + b (1 element)": lambda: x + y,
    })
    base = r["np.from_dlpack(ndarray)"]
    print(f"{'case':32s} {'ns':>9s}  ratio")
    for name in ["np.from_dlpack(ndarray)", "np.from_dlpack(tessera)", "tessera.from_dlpack(ndarray)"]:
        print(f"{name:32s} {r[name]:9.0f}  {r[name] / base:5.2f}x np.from_dlpack(ndarray)")
    base = r["numpy a + b (1 element)"]
    for name in ["numpy a + b (1 element)", "tessera a + b (1 element)"]:
        print(f"{name:32s} {r[name]:9.0f}  {r[name] / base:5.2f}x numpy a + b")


if __name__ == "__main__":
    main()
