"""Forward and backward times of nn ops on the CPU plugin (docs/ops/nn.md,
"Backward cost against forward"): each the best of 3 runs of 20 calls, the
backward as (forward + backward) - forward, with an upstream gradient of ones.

    OMP_NUM_THREADS=2 PYTHONPATH=build/release/python \\
      TESSERA_PLUGIN_PATH=build/release/lib/tessera/plugins .venv/bin/python bench/bench_nn_backward.py
"""
import time

import numpy as np

import tessera as T


def best_ms(f, n=20):
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(n):
            f()
        best = min(best, (time.perf_counter() - start) / n)
    return best * 1e3


def fwd_bwd(x, fwd):
    g = T.ones(fwd(x).shape)
    f = best_ms(lambda: fwd(x.detach()))

    def both():
        fwd(x).backward(g)

    return f, best_ms(both) - f


def main():
    rng = np.random.default_rng(0)
    leaf = lambda *shape: T.from_dlpack(rng.standard_normal(shape).astype(np.float32)).requires_grad_()  # noqa: E731
    x, w, b = leaf(256, 1024), leaf(1024), leaf(1024)
    img = leaf(8, 64, 112, 112)
    cases = [
        ("softmax [256,1024]", x, lambda v: T.softmax(v, 1)),
        ("layer_norm [256,1024]", x, lambda v: T.layer_norm(v, [1024], w, b)),
        ("max_pool2d [8,64,112,112] k3 s2 p1", img, lambda v: T.max_pool2d(v, 3, 2, 1)),
        ("max_pool2d [8,64,112,112] k2 s2", img, lambda v: T.max_pool2d(v, 2)),
        ("avg_pool2d [8,64,112,112] k3 s2 p1", img, lambda v: T.avg_pool2d(v, 3, 2, 1)),
    ]
    for name, inp, fwd in cases:
        f, bw = fwd_bwd(inp, fwd)
        print(f"{name:40s} forward {f:8.2f} ms   backward {bw:8.2f} ms")


if __name__ == "__main__":
    main()
