"""Tessera against PyTorch on the CPU, one sweep over the op families (issue 19).

    scripts/torch_venv.sh      # once: .venv-torch with PyTorch from PyPI
    OMP_NUM_THREADS=1 PYTHONPATH=build/release/python .venv-torch/bin/python bench/bench_vs_torch.py
    OMP_NUM_THREADS=2 PYTHONPATH=build/release/python .venv-torch/bin/python bench/bench_vs_torch.py

Both libraries run in this process on the same data (Tessera imports NumPy's
arrays zero-copy; PyTorch wraps them with from_numpy). Each case alternates the
two (A, B, A, B, ...) over --rounds rounds and keeps each side's median; the
figure is Tessera's time over PyTorch's (below 1.0: Tessera is faster). The
thread count comes from OMP_NUM_THREADS (read by Tessera's CPU plugin when it
loads); PyTorch is set to the same. The last line is the geometric mean.
Not run by the tests (timings never gate them).
"""
import argparse
import math
import os
import statistics
import time

import numpy as np
import torch

import tessera

T = tessera
F = torch.nn.functional


def timed(f, reps):
    f()
    t0 = time.perf_counter()
    for _ in range(reps):
        f()
    return (time.perf_counter() - t0) / reps


def arr(rng, shape, dtype=np.float32, positive=False):
    a = rng.standard_normal(shape).astype(dtype)
    return np.abs(a) + 0.1 if positive else a


def both(a):
    """The same array as a Tessera tensor and a PyTorch tensor."""
    return T.from_dlpack(a), torch.from_numpy(a)


def grad_pair(a):
    """Leaf tensors requiring grad on each side (own copies)."""
    return T.from_dlpack(a.copy()).requires_grad_(), torch.from_numpy(a.copy()).requires_grad_()


def mlp_step_case(rng):
    """One SGD step of a 784-512-512-10 MLP on a batch of 256 (the issue's); each side its own initial weights."""
    x, xt = both(arr(rng, (256, 784)))
    labels = rng.integers(0, 10, 256).astype(np.int64)
    y, yt = T.from_dlpack(labels), torch.from_numpy(labels)
    tnet = T.nn.Sequential(T.nn.Linear(784, 512), T.nn.ReLU(), T.nn.Linear(512, 512), T.nn.ReLU(), T.nn.Linear(512, 10))
    pnet = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(),
                               torch.nn.Linear(512, 10))
    topt = T.optim.SGD(tnet.parameters(), lr=0.01)
    popt = torch.optim.SGD(pnet.parameters(), lr=0.01)

    def tstep():
        topt.zero_grad()
        T.nn.functional.cross_entropy(tnet(x), y).backward()
        topt.step()

    def pstep():
        popt.zero_grad()
        F.cross_entropy(pnet(xt), yt).backward()
        popt.step()

    return ("MLP step 784-512-512-10 b256 (SGD)", tstep, pstep)


def cases(rng):
    n = 1 << 20
    x, xt = both(arr(rng, n))
    y, yt = both(arr(rng, n))
    p, pt = both(arr(rng, n, positive=True))
    h, ht = both(arr(rng, n).astype(np.float16))
    h2, h2t = both(arr(rng, n).astype(np.float16))
    m, mt = both(arr(rng, (1024, 1024)))
    cond_np = rng.standard_normal(n) > 0
    c, ct = T.from_dlpack(cond_np), torch.from_numpy(cond_np)
    a512, a512t = both(arr(rng, (512, 512)))
    b512, b512t = both(arr(rng, (512, 512)))
    v512, v512t = both(arr(rng, 512))
    bat, batt = both(arr(rng, (16, 128, 128)))
    bat2, bat2t = both(arr(rng, (16, 128, 128)))
    out = [
        # unary
        ("exp 1M", lambda: x.exp(), lambda: xt.exp()),
        ("sin 1M", lambda: T.ops.sin(x), lambda: xt.sin()),
        ("abs 1M", lambda: T.ops.abs(x), lambda: xt.abs()),
        ("sqrt 1M", lambda: T.ops.sqrt(p), lambda: pt.sqrt()),
        ("erf 1M", lambda: T.ops.erf(x), lambda: torch.erf(xt)),
        ("gelu (exact) 1M", lambda: T.ops.gelu(x), lambda: F.gelu(xt)),
        ("sigmoid 1M", lambda: T.ops.sigmoid(x), lambda: xt.sigmoid()),
        ("silu 1M", lambda: T.ops.silu(x), lambda: F.silu(xt)),
        ("relu 1M", lambda: x.relu(), lambda: xt.relu()),
        # binary, ternary
        ("add 1M", lambda: x + y, lambda: xt + yt),
        ("mul 1M", lambda: x * y, lambda: xt * yt),
        ("pow 1M", lambda: T.ops.pow(p, y), lambda: pt.pow(yt)),
        ("float16 add 1M", lambda: h + h2, lambda: ht + h2t),
        ("to(float16) 1M", lambda: x.to(T.float16), lambda: xt.to(torch.float16)),
        ("where 1M", lambda: T.where(c, x, y), lambda: torch.where(ct, xt, yt)),
        ("clamp 1M", lambda: T.clamp(x, -0.5, 0.5), lambda: xt.clamp(-0.5, 0.5)),
        # reductions
        ("sum 1M", lambda: x.sum(), lambda: xt.sum()),
        ("sum dim=1 1024^2", lambda: m.sum(1), lambda: mt.sum(1)),
        ("sum dim=0 1024^2", lambda: m.sum(0), lambda: mt.sum(0)),
        ("mean dim=1 1024^2", lambda: m.mean(1), lambda: mt.mean(1)),
        ("amax dim=1 1024^2", lambda: m.amax(1), lambda: mt.amax(1)),
        ("logsumexp dim=1 1024^2", lambda: T.logsumexp(m, 1), lambda: mt.logsumexp(1)),
        ("softmax dim=1 1024^2", lambda: T.softmax(m, 1), lambda: mt.softmax(1)),
        ("transpose().contiguous() 1024^2", lambda: m.t().contiguous(), lambda: mt.t().contiguous()),
        # linear algebra
        ("mm 512^3", lambda: T.mm(a512, b512), lambda: torch.mm(a512t, b512t)),
        ("matrix x vector 512", lambda: T.matmul(a512, v512), lambda: torch.matmul(a512t, v512t)),
        ("bmm 16x128^3", lambda: T.bmm(bat, bat2), lambda: torch.bmm(batt, bat2t)),
    ]
    # forward + backward
    sm, smt = grad_pair(arr(rng, (256, 1024)))
    out.append(("softmax fwd+bwd 256x1024",
                lambda: T.softmax(sm, 1).sum().backward(), lambda: smt.softmax(1).sum().backward()))
    ln, lnt = grad_pair(arr(rng, (256, 1024)))
    w, wt = grad_pair(np.ones(1024, np.float32))
    bb, bbt = grad_pair(np.zeros(1024, np.float32))
    out.append(("layer_norm fwd+bwd 256x1024",
                lambda: T.layer_norm(ln, [1024], w, bb).sum().backward(),
                lambda: F.layer_norm(lnt, [1024], wt, bbt).sum().backward()))
    for cin, cout, hw in ((3, 16, 32), (64, 64, 16)):
        xi, xit = grad_pair(arr(rng, (8, cin, hw, hw)))
        wk, wkt = grad_pair(arr(rng, (cout, cin, 3, 3)) * 0.1)
        out.append((f"conv2d fwd {cin}->{cout} {hw}^2 b8",
                    lambda xi=xi, wk=wk: T.conv2d(xi.detach(), wk.detach(), padding=1),
                    lambda xit=xit, wkt=wkt: F.conv2d(xit.detach(), wkt.detach(), padding=1)))
        out.append((f"conv2d fwd+bwd {cin}->{cout} {hw}^2 b8",
                    lambda xi=xi, wk=wk: T.conv2d(xi, wk, padding=1).sum().backward(),
                    lambda xit=xit, wkt=wkt: F.conv2d(xit, wkt, padding=1).sum().backward()))
    out.append(mlp_step_case(rng))
    mp, mpt = grad_pair(arr(rng, (8, 32, 32, 32)))
    out.append(("max_pool2d fwd+bwd 8x32x32^2",
                lambda: T.max_pool2d(mp, 2).sum().backward(), lambda: F.max_pool2d(mpt, 2).sum().backward()))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--budget", type=float, default=0.05, help="seconds per side per round")
    args = ap.parse_args()
    threads = int(os.environ.get("OMP_NUM_THREADS", os.cpu_count()))
    torch.set_num_threads(threads)
    rng = np.random.default_rng(0)
    print(f"torch {torch.__version__}, {threads} thread(s), {args.rounds} rounds; Tessera time / PyTorch time")
    ratios = []
    for name, tf, pf in cases(rng):
        reps = max(1, int(args.budget / max(timed(pf, 1), 1e-7)))
        ts, ps = [], []
        for _ in range(args.rounds):
            ts.append(timed(tf, reps))
            ps.append(timed(pf, reps))
        r = statistics.median(ts) / statistics.median(ps)
        ratios.append(r)
        print(f"{name:<34} {r:6.2f}x   ({statistics.median(ps) * 1e6:9.1f} us torch)", flush=True)
    print(f"{'geometric mean':<34} {math.exp(sum(map(math.log, ratios)) / len(ratios)):6.2f}x")


if __name__ == "__main__":
    main()
