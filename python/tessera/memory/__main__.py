"""``python -m tessera.memory SNAPSHOT [--png FILE] [--no-plot]``: prints the
summary of a snapshot file and draws its recorded history as a PNG."""
import argparse
import os
import pickle
import sys

from tessera.memory import load_snapshot, plot_history, summarize


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m tessera.memory",
        description="Summarize a Tessera memory snapshot (tessera.memory.dump_snapshot) and draw its history.")
    parser.add_argument("snapshot", help="a snapshot file: pickle (.pickle) or JSON (.json)")
    parser.add_argument("--png", help="where to draw memory over the recorded history (default: SNAPSHOT.png)")
    parser.add_argument("--no-plot", action="store_true", help="print the summary only")
    args = parser.parse_args(argv)
    try:
        snap = load_snapshot(args.snapshot)
    except (OSError, ValueError, pickle.UnpicklingError) as e:
        print(f"python -m tessera.memory: cannot read {args.snapshot}: {e}", file=sys.stderr)
        return 2
    print(summarize(snap))
    if args.no_plot:
        return 0
    png = args.png or os.path.splitext(args.snapshot)[0] + ".png"
    try:
        drawn = plot_history(snap, png)
    except ImportError:
        print("\nno plot: matplotlib is not installed (pip install matplotlib)", file=sys.stderr)
        return 0
    except ValueError as e:
        print(f"\nno plot: {e}", file=sys.stderr)
        return 0
    print(f"\nwrote {png} ({', '.join(drawn)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
