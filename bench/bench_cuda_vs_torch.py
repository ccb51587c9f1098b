"""Tessera's CUDA plugin against PyTorch's CUDA backend, in one process (issue 17 point 7).

    PYTHONPATH=build/release/python python3 bench/bench_cuda_vs_torch.py [--quick]

Cases: softmax and layer_norm forward on 8192x4096 float32 (device time; target:
ratio <= 1.0), the host time of a 1-element add on the current stream (target:
<= 0.5x PyTorch's), and an MLP training step (784-512-512-10, batch 256, SGD;
target <= 1.0x). Inputs are shared through DLPack, so both see the same bytes;
each result is checked against PyTorch's. The contenders alternate within each
repetition; figures are medians. Prints a markdown table of Tessera time /
PyTorch time. Needs a GPU, PyTorch with CUDA and the tessera module.
"""
import statistics
import sys
import time

import tessera

try:
    import torch
except ImportError:  # a benchmark-only dependency: present on GPU machines, absent from the build
    torch = None

QUICK = "--quick" in sys.argv
REPS = 3 if QUICK else 7


def wall(fn, iters, sync):
    fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    sync()
    return (time.perf_counter() - t0) / iters


def host_only(fn, iters):
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - t0) / iters


def versus(ours, theirs, iters, timer):
    o, t = [], []
    for _ in range(REPS):
        o.append(timer(ours, iters))
        t.append(timer(theirs, iters))
    return statistics.median(o), statistics.median(t)


def tsr_sync():
    tessera.cuda.synchronize()


def row(name, ours, theirs, target):
    ratio = ours / theirs
    verdict = "meets" if ratio <= target else "ABOVE"
    print(f"| {name} | {ours * 1e6:.1f} us | {theirs * 1e6:.1f} us | {ratio:.3f} | <= {target} {verdict} |")


def check(name, ours, theirs, tol):
    got = torch.from_dlpack(ours)
    err = (got.float() - theirs.float()).abs().max().item()
    if err > tol:
        raise SystemExit(f"{name}: Tessera differs from PyTorch by {err} (> {tol})")


def main():
    if torch is None:
        print("bench_cuda_vs_torch: PyTorch is not installed; nothing measured")
        return 0
    if not torch.cuda.is_available() or not tessera.cuda.is_available():
        print("bench_cuda_vs_torch: needs a GPU seen by both PyTorch and Tessera:", tessera.cuda.unavailable_reason())
        return 0
    print(f"# Tessera vs PyTorch {torch.__version__} on {torch.cuda.get_device_name(0)}, medians of {REPS}\n")
    print("| case | Tessera | PyTorch | Tessera / PyTorch | target |\n|---|---|---|---|---|")
    rows, cols = (2048, 1024) if QUICK else (8192, 4096)
    tx = torch.randn(rows, cols, device="cuda")
    x = tessera.from_dlpack(tx)

    def both_sync():
        torch.cuda.synchronize()
        tsr_sync()

    timer = lambda fn, n: wall(fn, n, both_sync)  # noqa: E731
    check("softmax", x.softmax(1), tx.softmax(1), 1e-6)
    o, t = versus(lambda: x.softmax(1), lambda: tx.softmax(1), 20, timer)
    row(f"softmax {rows}x{cols} float32", o, t, 1.0)
    w, b = torch.randn(cols, device="cuda"), torch.randn(cols, device="cuda")
    tw, tb = tessera.from_dlpack(w), tessera.from_dlpack(b)
    tln = torch.nn.functional.layer_norm
    check("layer_norm", tessera.layer_norm(x, [cols], tw, tb), tln(tx, [cols], w, b), 1e-4)
    o, t = versus(lambda: tessera.layer_norm(x, [cols], tw, tb), lambda: tln(tx, [cols], w, b), 20, timer)
    row(f"layer_norm {rows}x{cols} float32", o, t, 1.0)

    a1, b1 = tessera.ones([1], device="cuda"), tessera.ones([1], device="cuda")
    ta1, tb1 = torch.ones(1, device="cuda"), torch.ones(1, device="cuda")
    o, t = versus(lambda: a1 + b1, lambda: ta1 + tb1, 20000, host_only)
    both_sync()
    row("1-element add, host time", o, t, 0.5)

    torch.manual_seed(0)
    layers = [torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)]
    tmodel = torch.nn.Sequential(*layers).cuda()
    model = tessera.nn.Sequential(tessera.nn.Linear(784, 512), tessera.nn.ReLU(), tessera.nn.Linear(512, 512),
                                  tessera.nn.ReLU(), tessera.nn.Linear(512, 10)).to("cuda")
    topt = torch.optim.SGD(tmodel.parameters(), lr=0.01, momentum=0.9)
    opt = tessera.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    txb, tyb = torch.randn(256, 784, device="cuda"), torch.randint(0, 10, (256,), device="cuda")
    xb, yb = tessera.from_dlpack(txb), tessera.from_dlpack(tyb)

    def step():
        opt.zero_grad()
        tessera.nn.functional.cross_entropy(model(xb), yb).backward()
        opt.step()

    def tstep():
        topt.zero_grad()
        torch.nn.functional.cross_entropy(tmodel(txb), tyb).backward()
        topt.step()

    o, t = versus(step, tstep, 50, timer)
    row("MLP training step (784-512-512-10, batch 256)", o, t, 1.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
