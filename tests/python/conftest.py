import os

import pytest

from cpu_levels import cpu_levels


def _cpu_lacks_forced_level():
    """TESSERA_CPU_ISA forcing a level this CPU lacks (the per-level reruns in
    CMakeLists.txt): the plugin would refuse to load, so the run is skipped."""
    level = os.environ.get("TESSERA_CPU_ISA", "")
    return level in ("avx2", "avx512") and level not in cpu_levels()


if _cpu_lacks_forced_level():
    pytest.exit(f"TESSERA_CPU_ISA={os.environ['TESSERA_CPU_ISA']}: this CPU lacks it", returncode=77)


# The module must come from the build tree (CTest sets PYTHONPATH); fail loudly
# rather than skip if it is missing, since these tests exist to test it.
import tessera  # noqa: F401

np = pytest.importorskip("numpy")
