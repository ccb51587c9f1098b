import pytest

# The module must come from the build tree (CTest sets PYTHONPATH); fail loudly
# rather than skip if it is missing, since these tests exist to test it.
import tessera  # noqa: F401

np = pytest.importorskip("numpy")
