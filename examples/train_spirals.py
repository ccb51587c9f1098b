"""Trains a small MLP on two interleaved spirals with tessera.nn and
tessera.optim, then hands the predictions to NumPy through DLPack and checks
the accuracy there.

    PYTHONPATH=build/release/python python examples/train_spirals.py [--epochs N] [--device cpu]

Exits with status 1 if the training accuracy stays below --target (0.95).
"""
import argparse
import math
import sys
import time

import numpy as np

import tessera
import tessera.nn as nn
import tessera.nn.functional as F


def two_spirals(n_per_class, noise, rng):
    """Points (2n, 2) float32 and labels (2n,) int64: class 1 is class 0 turned
    by 180 degrees, each arm winding two turns."""
    theta = np.sqrt(rng.random(n_per_class)) * 4 * math.pi
    arm = np.stack([-np.cos(theta) * theta, np.sin(theta) * theta], axis=1)
    pts = np.concatenate([arm, -arm]) + rng.normal(0.0, noise, (2 * n_per_class, 2))
    pts /= np.abs(pts).max()
    labels = np.concatenate([np.zeros(n_per_class), np.ones(n_per_class)]).astype(np.int64)
    return pts.astype(np.float32), labels


def best_device():
    types = {d.type for d in tessera.devices()}
    return tessera.device("cuda", 0) if "cuda" in types else tessera.device("cpu", 0)


def progress(epoch, epochs, loss, acc, width=30):
    done = int(width * epoch / epochs)
    bar = "#" * done + "-" * (width - done)
    return f"\r[{bar}] {epoch:5d}/{epochs} loss {loss:.4f} acc {acc * 100:6.2f}%"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=500, help="points per spiral")
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=1500, help="full-batch steps (at most)")
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default=None, help="default: cuda if a plugin provides it, else cpu")
    ap.add_argument("--target", type=float, default=0.95, help="accuracy to reach")
    args = ap.parse_args(argv)

    device = tessera.device(args.device) if args.device else best_device()
    rng = np.random.default_rng(args.seed)
    tessera.manual_seed(args.seed)
    pts, labels = two_spirals(args.points, 0.02, rng)
    # NumPy -> tessera without a copy on the cpu (DLPack), then to the device.
    x = tessera.from_dlpack(pts).to(device)
    y = tessera.from_dlpack(labels).to(device)

    model = nn.Sequential(nn.Linear(2, args.hidden), nn.ReLU(), nn.Linear(args.hidden, args.hidden), nn.ReLU(),
                          nn.Linear(args.hidden, 2)).to(device)
    opt = tessera.optim.Adam(model.parameters(), lr=args.lr)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"two spirals: {len(labels)} points, MLP 2-{args.hidden}-{args.hidden}-2 ({n_params} parameters), "
          f"Adam lr {args.lr}, on {device}")

    start = time.perf_counter()
    acc = 0.0
    epoch = 0
    for epoch in range(1, args.epochs + 1):
        opt.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        opt.step()
        if epoch % 25 == 0 or epoch == args.epochs:
            with tessera.no_grad():
                acc = (logits.argmax(1) == y).sum().item() / len(labels)
            sys.stdout.write(progress(epoch, args.epochs, loss.item(), acc))
            sys.stdout.flush()
            # Stop once the fit is clearly past the target.
            if acc >= max(args.target, 0.995):
                break
    train_s = time.perf_counter() - start
    sys.stdout.write("\n")

    # Predictions to NumPy through DLPack (zero copy on the cpu) and the
    # accuracy computed there.
    model.eval()
    with tessera.no_grad():
        pred = model(x).argmax(1).cpu()
    pred_np = np.from_dlpack(pred)
    accuracy = float((pred_np == labels).mean())
    print(f"summary: {epoch} steps in {train_s:.2f} s ({train_s / epoch * 1e3:.2f} ms/step), final loss "
          f"{loss.item():.4f}, training accuracy {accuracy * 100:.2f}% (NumPy, from DLPack)")
    if accuracy < args.target:
        print(f"accuracy below the target {args.target * 100:.0f}%", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
