import os

import pytest


def _cpu_lacks_forced_level():
    """TESSERA_CPU_ISA forcing a level this CPU lacks (the per-level reruns in
    CMakeLists.txt): the plugin would refuse to load, so the run is skipped."""
    level = os.environ.get("TESSERA_CPU_ISA", "")
    need = {"avx2": {"avx2", "fma", "f16c", "bmi1", "bmi2", "popcnt"},
            "avx512": {"avx2", "fma", "f16c", "bmi1", "bmi2", "popcnt",
                       "avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}}.get(level)
    if not need:
        return False
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((set(line.split(":", 1)[1].split()) for line in f if line.startswith("flags")), set())
    except OSError:
        return False
    return not need <= flags


if _cpu_lacks_forced_level():
    pytest.exit(f"TESSERA_CPU_ISA={os.environ['TESSERA_CPU_ISA']}: this CPU lacks it", returncode=77)


# The module must come from the build tree (CTest sets PYTHONPATH); fail loudly
# rather than skip if it is missing, since these tests exist to test it.
import tessera  # noqa: F401

np = pytest.importorskip("numpy")
