"""Tessera against PyTorch on the CPU, one sweep over the op families (issue 19).

    scripts/torch_venv.sh      # once: .venv-torch with PyTorch from PyPI
    export PYTHONPATH=build/release/python TESSERA_PLUGIN_PATH=build/release/lib/tessera/plugins
    OMP_NUM_THREADS=1 .venv-torch/bin/python bench/bench_vs_torch.py
    OMP_NUM_THREADS=2 .venv-torch/bin/python bench/bench_vs_torch.py --filter 'conv|pool' --json /tmp/r.json

Both libraries run in this process on the same data (Tessera imports NumPy's
arrays zero-copy; PyTorch wraps them with from_numpy). Each case alternates the
two (A, B, A, B, ...) over --rounds rounds and keeps each side's median; the
figure is Tessera's time over PyTorch's (below 1.0: Tessera is faster). The
thread count comes from OMP_NUM_THREADS (read by Tessera's CPU plugin when it
loads); PyTorch is set to the same, the plugin's load-aware thread cap is off
and idle OpenMP workers sleep (TESSERA_CPU_LOAD_AWARE=0, OMP_WAIT_POLICY=passive,
unless set). The last line is the geometric mean.

Before timing, each case runs once on both sides and Tessera's result is
checked against PyTorch's (dtype, shape, values within a tolerance for the
dtype; for fwd+bwd cases the gradients; for random ops statistics, as the
streams differ; for training steps the losses of two consecutive steps from
the same initial parameters). A mismatch is flagged on the case's line, an op
that raises is reported and not timed, and either makes the exit status 1.
Not run by the tests (timings never gate them).
"""
import argparse
import json
import math
import os
import re
import statistics
import sys
import time

# Read when the libraries load, so set before importing them. PyTorch keeps its thread count whatever the
# machine's load; so must Tessera's CPU plugin. Two OpenMP runtimes (PyTorch bundles its own libgomp) whose
# idle workers spin starve each other on a busy 2-core machine: ops then take a scheduler slice (~20 ms).
os.environ.setdefault("TESSERA_CPU_LOAD_AWARE", "0")
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import numpy as np  # noqa: E402
import torch  # noqa: E402

import tessera  # noqa: E402

T = tessera
TF = tessera.nn.functional
F = torch.nn.functional

# (rtol, atol relative to the largest expected magnitude) per dtype; other dtypes must match exactly.
TOL = {"float16": (2e-3, 1e-3), "bfloat16": (1.6e-2, 8e-3), "float32": (1e-4, 1e-5), "float64": (1e-10, 1e-12)}


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


def to_numpy(v):
    """(array, dtype name) of a Tessera or PyTorch tensor; float16/bfloat16 widened to float32 (exactly)."""
    name = str(v.dtype).split(".")[-1]
    v = v.detach()
    if isinstance(v, torch.Tensor):
        return (v.float() if name in ("float16", "bfloat16") else v).numpy(), name
    if name in ("float16", "bfloat16"):
        v = v.to(T.float32)  # NumPy has no bfloat16
    return np.asarray(v), name


def mismatch(tv, pv, tol=None):
    """None when Tessera's result tv agrees with PyTorch's pv, else what differs."""
    if isinstance(pv, (tuple, list)):
        if not isinstance(tv, (tuple, list)) or len(tv) != len(pv):
            return f"{type(tv).__name__} result, torch has {len(pv)} results"
        for i, (a, b) in enumerate(zip(tv, pv)):
            err = mismatch(a, b, tol)
            if err:
                return f"[{i}] {err}"
        return None
    if tv is None or pv is None:
        return None if tv is pv else f"result/grad is None on {'Tessera' if tv is None else 'torch'}'s side only"
    a, an = to_numpy(tv)
    b, bn = to_numpy(pv)
    if an != bn:
        return f"dtype {an}, torch {bn}"
    if a.shape != b.shape:
        return f"shape {a.shape}, torch {b.shape}"
    if bn not in TOL:
        bad = np.count_nonzero(a != b)
        return f"{bad} of {b.size} elements differ" if bad else None
    rtol, atol = tol or TOL[bn]
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    scale = float(np.max(np.abs(b64), initial=0.0, where=np.isfinite(b64)))
    err = np.abs(a64 - b64)
    bad = ~(err <= atol * scale + rtol * np.abs(b64)) & ~(a64 == b64) & ~(np.isnan(a64) & np.isnan(b64))
    if not bad.any():
        return None
    i = np.unravel_index(np.argmax(np.where(bad, np.nan_to_num(err, nan=np.inf), -1.0)), a.shape)
    return (f"{np.count_nonzero(bad)} of {b.size} elements off (rtol {rtol:g}, atol {atol:g}*{scale:.3g}), "
            f"worst at {tuple(int(k) for k in i)}: {float(a64[i])!r} vs torch {float(b64[i])!r}")


def stats_check(lo=None, hi=None, tol=0.01):
    """For random ops: each side's own stream, so compare mean and std (and the range)."""
    def check(tv, pv):
        a, an = to_numpy(tv)
        b, bn = to_numpy(pv)
        if an != bn or a.shape != b.shape:
            return f"{an}{list(a.shape)}, torch {bn}{list(b.shape)}"
        a, b = a.astype(np.float64), b.astype(np.float64)
        for what, x, y in (("mean", a.mean(), b.mean()), ("std", a.std(), b.std())):
            if not abs(x - y) <= tol * max(1.0, abs(y)):
                return f"{what} {x:.4f}, torch {y:.4f}"
        if lo is not None and a.min() < lo or hi is not None and a.max() >= hi:
            return f"values in [{a.min()}, {a.max()}], expected [{lo}, {hi})"
        return None
    return check


def dropout_check(x, p):
    """Kept elements are x / (1 - p) and the dropped fraction is near PyTorch's."""
    def check(tv, pv):
        a, an = to_numpy(tv)
        b, _ = to_numpy(pv)
        if an != "float32" or a.shape != x.shape:
            return f"{an}{list(a.shape)}, expected float32{list(x.shape)}"
        kept = a != 0
        if abs(1 - kept.mean() - (b == 0).mean()) > 0.01:
            return f"dropped fraction {1 - kept.mean():.4f}, torch {(b == 0).mean():.4f}"
        return mismatch(T.from_dlpack(a[kept]), torch.from_numpy(x[kept] / np.float32(1 - p)))
    return check


class Case:
    """A timed pair (name, Tessera callable, PyTorch callable) and how to check it.

    By default the results of one call each are compared. grads=[(tessera leaf, torch leaf), ...]:
    the gradients one call each leaves on them instead (the grads are cleared first), of the pair
    check_calls in place of (tf, pf) when given. probe: a callable returning (Tessera values,
    PyTorch values) instead. compare(tv, pv) -> error or None replaces the elementwise comparison."""

    def __init__(self, name, tf, pf, grads=None, check_calls=None, probe=None, compare=None, tol=None):
        self.name, self.tf, self.pf = name, tf, pf
        self.grads, self.check_calls, self.probe, self.compare, self.tol = grads, check_calls, probe, compare, tol

    def check(self):
        if self.probe:
            tv, pv = self.probe()
        elif self.grads:
            for tl, pl in self.grads:
                tl.grad = None
                pl.grad = None
            tf, pf = self.check_calls or (self.tf, self.pf)
            tf()
            pf()
            tv, pv = [tl.grad for tl, _ in self.grads], [pl.grad for _, pl in self.grads]
        else:
            tv, pv = self.tf(), self.pf()
        return self.compare(tv, pv) if self.compare else mismatch(tv, pv, self.tol)


def fwd_bwd(name, tf, pf, *pairs, check_calls=None):
    """A case whose callables run backward; checked on the gradients of the leaf pairs."""
    return Case(name, tf, pf, grads=list(pairs), check_calls=check_calls)


def step_case(name, tstep, pstep):
    """A training step returning its (detached) loss; checked on two consecutive steps' losses,
    so the second one tests the gradients and the update."""
    return Case(name, tstep, pstep, probe=lambda: ([tstep(), tstep()], [pstep(), pstep()]), tol=(1e-4, 1e-6))


def mlp_step_case(rng):
    """One SGD step of a 784-512-512-10 MLP on a batch of 256 (the issue's); PyTorch's initial weights on both sides."""
    x, xt = both(arr(rng, (256, 784)))
    labels = rng.integers(0, 10, 256).astype(np.int64)
    y, yt = T.from_dlpack(labels), torch.from_numpy(labels)
    tnet = T.nn.Sequential(T.nn.Linear(784, 512), T.nn.ReLU(), T.nn.Linear(512, 512), T.nn.ReLU(), T.nn.Linear(512, 10))
    pnet = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(),
                               torch.nn.Linear(512, 10))
    tnet.load_state_dict({k: v.detach().numpy() for k, v in pnet.state_dict().items()})
    topt = T.optim.SGD(tnet.parameters(), lr=0.01)
    popt = torch.optim.SGD(pnet.parameters(), lr=0.01)

    def tstep():
        topt.zero_grad()
        loss = TF.cross_entropy(tnet(x), y)
        loss.backward()
        topt.step()
        return loss.detach()

    def pstep():
        popt.zero_grad()
        loss = F.cross_entropy(pnet(xt), yt)
        loss.backward()
        popt.step()
        return loss.detach()

    return step_case("MLP step 784-512-512-10 b256 (SGD)", tstep, pstep)


def cnn_step_case(rng):
    """One SGD step of a small CNN on 28x28 images, batch 64: conv 1->8 3x3, relu, max_pool 2, conv 8->16 3x3,
    relu, max_pool 2, linear 784->10, cross_entropy. Functional on both sides (Tessera has no pooling module)
    with the same initial parameters (uniform in +-1/sqrt(fan_in), as the modules' default)."""
    x, xt = both(arr(rng, (64, 1, 28, 28)))
    labels = rng.integers(0, 10, 64).astype(np.int64)
    y, yt = T.from_dlpack(labels), torch.from_numpy(labels)
    shapes = ((8, 1, 3, 3), (8,), (16, 8, 3, 3), (16,), (10, 784), (10,))
    fans = (9, 9, 72, 72, 784, 784)
    init = [(rng.uniform(-1, 1, s) / math.sqrt(f)).astype(np.float32) for s, f in zip(shapes, fans)]
    tp = [T.from_dlpack(a.copy()).requires_grad_() for a in init]
    pp = [torch.from_numpy(a.copy()).requires_grad_() for a in init]
    topt = T.optim.SGD(tp, lr=0.05)
    popt = torch.optim.SGD(pp, lr=0.05)

    def tstep():
        w1, b1, w2, b2, w3, b3 = tp
        topt.zero_grad()
        h = T.max_pool2d(T.relu(T.conv2d(x, w1, b1, padding=1)), 2)
        h = T.max_pool2d(T.relu(T.conv2d(h, w2, b2, padding=1)), 2)
        loss = TF.cross_entropy(TF.linear(h.flatten(1), w3, b3), y)
        loss.backward()
        topt.step()
        return loss.detach()

    def pstep():
        w1, b1, w2, b2, w3, b3 = pp
        popt.zero_grad()
        h = F.max_pool2d(F.relu(F.conv2d(xt, w1, b1, padding=1)), 2)
        h = F.max_pool2d(F.relu(F.conv2d(h, w2, b2, padding=1)), 2)
        loss = F.cross_entropy(F.linear(h.flatten(1), w3, b3), yt)
        loss.backward()
        popt.step()
        return loss.detach()

    return step_case("CNN step 1-8-16 28^2 b64 (SGD)", tstep, pstep)


def cases(rng):
    n = 1 << 20
    x_np = arr(rng, n)
    x, xt = both(x_np)
    y, yt = both(arr(rng, n))
    p, pt = both(arr(rng, n, positive=True))
    h, ht = both(arr(rng, n).astype(np.float16))
    h2, h2t = both(arr(rng, n).astype(np.float16))
    xb, xbt = x.to(T.bfloat16), xt.to(torch.bfloat16)  # both round to nearest even: the same bits
    yb, ybt = y.to(T.bfloat16), yt.to(torch.bfloat16)
    m, mt = both(arr(rng, (1024, 1024)))
    m2, m2t = both(arr(rng, (1024, 1024)))
    cond_np = rng.standard_normal(n) > 0
    c, ct = T.from_dlpack(cond_np), torch.from_numpy(cond_np)
    a512, a512t = both(arr(rng, (512, 512)))
    b512, b512t = both(arr(rng, (512, 512)))
    a512b, a512bt = a512.to(T.bfloat16), a512t.to(torch.bfloat16)
    b512b, b512bt = b512.to(T.bfloat16), b512t.to(torch.bfloat16)
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
        ("bfloat16 add 1M", lambda: xb + yb, lambda: xbt + ybt),
        ("where 1M", lambda: T.where(c, x, y), lambda: torch.where(ct, xt, yt)),
        ("clamp 1M", lambda: T.clamp(x, -0.5, 0.5), lambda: xt.clamp(-0.5, 0.5)),
        ("masked_fill 1M", lambda: x.masked_fill(c, 0.0), lambda: xt.masked_fill(ct, 0.0)),
        # casts
        ("to(float16) 1M", lambda: x.to(T.float16), lambda: xt.to(torch.float16)),
        ("float16 to(float32) 1M", lambda: h.to(T.float32), lambda: ht.to(torch.float32)),
        ("to(bfloat16) 1M", lambda: x.to(T.bfloat16), lambda: xt.to(torch.bfloat16)),
        ("bfloat16 to(float32) 1M", lambda: xb.to(T.float32), lambda: xbt.to(torch.float32)),
        # reductions: all, inner and outer dims
        ("sum 1M", lambda: x.sum(), lambda: xt.sum()),
        ("sum dim=1 1024^2", lambda: m.sum(1), lambda: mt.sum(1)),
        ("sum dim=0 1024^2", lambda: m.sum(0), lambda: mt.sum(0)),
        ("sum dim=1 4096x256", lambda: x.view(4096, 256).sum(1), lambda: xt.view(4096, 256).sum(1)),
        ("sum dim=1 16384x64", lambda: x.view(16384, 64).sum(1), lambda: xt.view(16384, 64).sum(1)),
        ("mean dim=1 1024^2", lambda: m.mean(1), lambda: mt.mean(1)),
        ("amax dim=1 1024^2", lambda: m.amax(1), lambda: mt.amax(1)),
        ("amax dim=0 1024^2", lambda: m.amax(0), lambda: mt.amax(0)),
        ("var dim=0 1024^2", lambda: m.var(0), lambda: mt.var(0)),
        ("norm dim=1 1024^2", lambda: m.norm(dim=1), lambda: mt.norm(dim=1)),
        ("logsumexp dim=1 1024^2", lambda: T.logsumexp(m, 1), lambda: mt.logsumexp(1)),
        ("softmax dim=1 1024^2", lambda: T.softmax(m, 1), lambda: mt.softmax(1)),
        ("log_softmax dim=1 1024^2", lambda: T.log_softmax(m, 1), lambda: mt.log_softmax(1)),
        # copies
        ("transpose().contiguous() 1024^2", lambda: m.t().contiguous(), lambda: mt.t().contiguous()),
        ("cat 2x1024^2 dim=0", lambda: T.cat([m, m2], 0), lambda: torch.cat([mt, m2t], 0)),
        ("cat 2x1024^2 dim=1", lambda: T.cat([m, m2], 1), lambda: torch.cat([mt, m2t], 1)),
        # linear algebra
        ("mm 512^3", lambda: T.mm(a512, b512), lambda: torch.mm(a512t, b512t)),
        ("bfloat16 mm 512^3", lambda: T.mm(a512b, b512b), lambda: torch.mm(a512bt, b512bt)),
        ("matrix x vector 512", lambda: T.matmul(a512, v512), lambda: torch.matmul(a512t, v512t)),
        ("bmm 16x128^3", lambda: T.bmm(bat, bat2), lambda: torch.bmm(batt, bat2t)),
    ]
    # indexing: a permutation per row (scatter with repeated indices leaves the winner unspecified)
    perm_np = rng.permuted(np.tile(np.arange(1024, dtype=np.int64), (1024, 1)), axis=1)
    perm, permt = T.from_dlpack(perm_np), torch.from_numpy(perm_np)
    rep_np = rng.integers(0, 1024, (1024, 1024)).astype(np.int64)
    rep, rept = T.from_dlpack(rep_np), torch.from_numpy(rep_np)
    cols_np = rng.integers(0, 1024, 512).astype(np.int64)
    cols, colst = T.from_dlpack(cols_np), torch.from_numpy(cols_np)
    out += [
        ("index_select dim=1 1024^2 512 cols", lambda: T.index_select(m, 1, cols),
         lambda: torch.index_select(mt, 1, colst)),
        ("index_add dim=1 1024^2 512 cols", lambda: T.index_add(m, 1, cols, m2[:, :512]),
         lambda: torch.index_add(mt, 1, colst, m2t[:, :512])),
        ("gather dim=1 1024^2", lambda: T.gather(m, 1, perm), lambda: torch.gather(mt, 1, permt)),
        ("scatter dim=1 1024^2", lambda: T.scatter(m, 1, perm, m2), lambda: torch.scatter(mt, 1, permt, m2t)),
        ("scatter_add dim=1 1024^2", lambda: T.scatter_add(m, 1, rep, m2),
         lambda: torch.scatter_add(mt, 1, rept, m2t)),
    ]
    g, gt = grad_pair(arr(rng, (1024, 1024)))
    out.append(fwd_bwd("gather fwd+bwd 1024^2", lambda: T.gather(g, 1, rep).sum().backward(),
                       lambda: torch.gather(gt, 1, rept).sum().backward(), (g, gt)))
    tok_np = rng.integers(0, 10000, (64, 128)).astype(np.int64)
    tok, tokt = T.from_dlpack(tok_np), torch.from_numpy(tok_np)
    ew, ewt = grad_pair(arr(rng, (10000, 128)))
    out.append(("embedding 10000x128, 64x128 ids", lambda: T.embedding(ew.detach(), tok),
                lambda: F.embedding(tokt, ewt.detach())))
    out.append(fwd_bwd("embedding fwd+bwd 10000x128, 64x128 ids", lambda: T.embedding(ew, tok).sum().backward(),
                       lambda: F.embedding(tokt, ewt).sum().backward(), (ew, ewt)))
    # forward + backward: softmax, norms, losses
    # The checks of softmax and layer_norm backward use a random upstream gradient: after .sum() their
    # input gradients are zero up to rounding, which cannot be compared.
    up, upt = both(arr(rng, (256, 1024)))
    sm, smt = grad_pair(arr(rng, (256, 1024)))
    out.append(fwd_bwd("softmax fwd+bwd 256x1024",
                       lambda: T.softmax(sm, 1).sum().backward(), lambda: smt.softmax(1).sum().backward(), (sm, smt),
                       check_calls=(lambda: (T.softmax(sm, 1) * up).sum().backward(),
                                    lambda: (smt.softmax(1) * upt).sum().backward())))
    ln, lnt = grad_pair(arr(rng, (256, 1024)))
    w, wt = grad_pair(np.ones(1024, np.float32))
    bb, bbt = grad_pair(np.zeros(1024, np.float32))
    out.append(("layer_norm fwd 256x1024", lambda: T.layer_norm(ln.detach(), [1024], w.detach(), bb.detach()),
                lambda: F.layer_norm(lnt.detach(), [1024], wt.detach(), bbt.detach())))
    out.append(fwd_bwd("layer_norm fwd+bwd 256x1024",
                       lambda: T.layer_norm(ln, [1024], w, bb).sum().backward(),
                       lambda: F.layer_norm(lnt, [1024], wt, bbt).sum().backward(),
                       (ln, lnt), (w, wt), (bb, bbt),
                       check_calls=(lambda: (T.layer_norm(ln, [1024], w, bb) * up).sum().backward(),
                                    lambda: (F.layer_norm(lnt, [1024], wt, bbt) * upt).sum().backward())))
    labels_np = rng.integers(0, 1000, 512).astype(np.int64)
    lab, labt = T.from_dlpack(labels_np), torch.from_numpy(labels_np)
    lg, lgt = grad_pair(arr(rng, (512, 1000)))
    out.append(("cross_entropy fwd 512x1000", lambda: T.cross_entropy(lg.detach(), lab),
                lambda: F.cross_entropy(lgt.detach(), labt)))
    out.append(fwd_bwd("cross_entropy fwd+bwd 512x1000", lambda: T.cross_entropy(lg, lab).backward(),
                       lambda: F.cross_entropy(lgt, labt).backward(), (lg, lgt)))
    out.append(fwd_bwd("cross_entropy smoothing=0.1 fwd+bwd 512x1000",
                       lambda: T.cross_entropy(lg, lab, label_smoothing=0.1).backward(),
                       lambda: F.cross_entropy(lgt, labt, label_smoothing=0.1).backward(), (lg, lgt)))
    out.append(fwd_bwd("nll_loss fwd+bwd 512x1000", lambda: T.nll_loss(lg, lab).backward(),
                       lambda: F.nll_loss(lgt, labt).backward(), (lg, lgt)))
    ms, mst = grad_pair(arr(rng, (256, 1024)))
    out.append(fwd_bwd("mse_loss fwd+bwd 256x1024", lambda: T.mse_loss(ms, up).backward(),
                       lambda: F.mse_loss(mst, upt).backward(), (ms, mst)))
    # convolution and pooling at a small-channel and a 64-channel shape
    for cin, cout, hw in ((3, 16, 32), (64, 64, 16)):
        xi, xit = grad_pair(arr(rng, (8, cin, hw, hw)))
        wk, wkt = grad_pair(arr(rng, (cout, cin, 3, 3)) * 0.1)
        out.append((f"conv2d fwd {cin}->{cout} {hw}^2 b8",
                    lambda xi=xi, wk=wk: T.conv2d(xi.detach(), wk.detach(), padding=1),
                    lambda xit=xit, wkt=wkt: F.conv2d(xit.detach(), wkt.detach(), padding=1)))
        out.append(fwd_bwd(f"conv2d fwd+bwd {cin}->{cout} {hw}^2 b8",
                           lambda xi=xi, wk=wk: T.conv2d(xi, wk, padding=1).sum().backward(),
                           lambda xit=xit, wkt=wkt: F.conv2d(xit, wkt, padding=1).sum().backward(),
                           (xi, xit), (wk, wkt)))
    for ch, hw in ((16, 32), (64, 16)):
        pi, pit = grad_pair(arr(rng, (8, ch, hw, hw)))
        for op, tpool, ppool in (("max_pool2d", T.max_pool2d, F.max_pool2d),
                                 ("avg_pool2d", T.avg_pool2d, F.avg_pool2d)):
            out.append((f"{op} fwd 8x{ch}x{hw}^2", lambda pi=pi, tpool=tpool: tpool(pi.detach(), 2),
                        lambda pit=pit, ppool=ppool: ppool(pit.detach(), 2)))
            out.append(fwd_bwd(f"{op} fwd+bwd 8x{ch}x{hw}^2", lambda pi=pi, tpool=tpool: tpool(pi, 2).sum().backward(),
                               lambda pit=pit, ppool=ppool: ppool(pit, 2).sum().backward(), (pi, pit)))
    mp, mpt = grad_pair(arr(rng, (8, 32, 32, 32)))
    out.append(fwd_bwd("max_pool2d fwd+bwd 8x32x32^2",
                       lambda: T.max_pool2d(mp, 2).sum().backward(), lambda: F.max_pool2d(mpt, 2).sum().backward(),
                       (mp, mpt)))
    # random: each side its own stream, checked by statistics
    out += [
        Case("rand 1M", lambda: T.rand(n), lambda: torch.rand(n), compare=stats_check(0.0, 1.0)),
        Case("randn 1M", lambda: T.randn(n), lambda: torch.randn(n), compare=stats_check()),
        Case("randint 0..1000 1M", lambda: T.randint(1000, (n,)), lambda: torch.randint(1000, (n,)),
             compare=stats_check(0, 1000)),
        Case("dropout p=0.5 1M", lambda: T.dropout(x, 0.5, True), lambda: F.dropout(xt, 0.5, True),
             compare=dropout_check(x_np, 0.5)),
    ]
    # training steps
    out.append(mlp_step_case(rng))
    out.append(cnn_step_case(rng))
    return [c if isinstance(c, Case) else Case(*c) for c in out]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--budget", type=float, default=0.05, help="seconds per side per round")
    ap.add_argument("--filter", metavar="REGEX", help="only the cases whose name matches (re.search)")
    ap.add_argument("--json", metavar="PATH", help="write the ratios, the thread count and any failures here")
    ap.add_argument("--check-only", action="store_true", help="check every result against PyTorch's, time nothing")
    args = ap.parse_args()
    threads = int(os.environ.get("OMP_NUM_THREADS", os.cpu_count()))
    torch.set_num_threads(threads)
    rng = np.random.default_rng(0)
    selected = [c for c in cases(rng) if not args.filter or re.search(args.filter, c.name)]
    if not selected:
        sys.exit(f"no case matches {args.filter!r}")
    width = max(34, *(len(c.name) for c in selected))
    print(f"torch {torch.__version__}, {threads} thread(s), {args.rounds} rounds; Tessera time / PyTorch time")
    ratios, failures = {}, {}
    for c in selected:
        try:
            err = c.check()
        except Exception as e:  # an op Tessera (or this script) gets wrong: report it, keep sweeping
            failures[c.name] = f"{type(e).__name__}: {e}"
            print(f"{c.name:<{width}}  ERROR {failures[c.name]}", flush=True)
            continue
        if err:
            failures[c.name] = err
        flag = f"   MISMATCH: {err}" if err else ""
        if args.check_only:
            print(f"{c.name:<{width}}  {'ok' if not err else ''}{flag}", flush=True)
            continue
        reps = max(1, int(args.budget / max(timed(c.pf, 1), 1e-7)))
        ts, ps = [], []
        for _ in range(args.rounds):
            ts.append(timed(c.tf, reps))
            ps.append(timed(c.pf, reps))
        r = statistics.median(ts) / statistics.median(ps)
        ratios[c.name] = r
        print(f"{c.name:<{width}} {r:6.2f}x   ({statistics.median(ps) * 1e6:9.1f} us torch){flag}", flush=True)
    gmean = math.exp(sum(map(math.log, ratios.values())) / len(ratios)) if ratios else float("nan")
    if ratios:
        print(f"{'geometric mean':<{width}} {gmean:6.2f}x")
    if failures:
        print(f"{len(failures)} case(s) failed the check against PyTorch: {', '.join(failures)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"threads": threads, "torch": torch.__version__, "rounds": args.rounds, "cases": ratios,
                       "geometric_mean": gmean if ratios else None, "failures": failures}, f, indent=1)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
