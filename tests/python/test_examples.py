"""Runs the Python examples as a user would and checks what they print. The
timeout is a generous bound against hangs, not a speed requirement."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

pytest.importorskip("numpy")
ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_train_spirals_reaches_95_percent():
    script = ROOT / "examples" / "train_spirals.py"
    # As a user runs it: the CPU plugin's default thread policy (CTest turns
    # load awareness off for the op tests; on shared cores that only slows this down).
    env = {k: v for k, v in os.environ.items() if k != "TESSERA_CPU_LOAD_AWARE"}
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.search(r"training accuracy ([0-9.]+)% \(NumPy, from DLPack\)", r.stdout)
    assert m, r.stdout
    assert float(m.group(1)) >= 95.0
    assert "two spirals:" in r.stdout and "summary:" in r.stdout
