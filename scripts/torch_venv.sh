#!/usr/bin/env bash
# Creates .venv-torch with PyTorch (CPU use; PyPI's wheel, several GB) and NumPy,
# for bench/bench_vs_torch.py and interop checks. Never a build dependency: the
# build and the tests use .venv (scripts/bootstrap.sh) only.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv-torch"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import torch, numpy" 2>/dev/null; then
  "$venv/bin/pip" install --quiet torch numpy
fi
"$venv/bin/python" -c "import torch; print('torch', torch.__version__, 'threads', torch.get_num_threads())"
