"""DLPack exchange with a second framework, apache-tvm-ffi (skipped when absent)."""
import gc

import pytest

import tessera

tvm_ffi = pytest.importorskip("tvm_ffi")


# Parametrized by name: pytest items that hold extension objects until exit
# make nanobind report them as leaked when another plugin (hypothesis) keeps
# the items alive.
@pytest.mark.parametrize("name", ["int8", "int32", "int64", "uint8", "float16", "float32", "float64"])
def test_round_trip_zero_copy(name):
    dtype = getattr(tessera, name)
    t = tessera.arange(12, dtype=dtype).view(3, 4)
    x = tvm_ffi.from_dlpack(t)
    assert tuple(x.shape) == (3, 4)
    u = tessera.from_dlpack(x)
    assert u.data_ptr() == t.data_ptr()
    assert u.dtype == dtype and u.tolist() == t.tolist()
    u.fill_(1)
    assert t.tolist() == [[1] * 4] * 3


def test_transposed_and_lifetime():
    t = tessera.arange(6, dtype=tessera.float32).view(2, 3).t()
    x = tvm_ffi.from_dlpack(t)
    del t
    gc.collect()
    u = tessera.from_dlpack(x)
    del x
    gc.collect()
    assert u.shape == (3, 2)
    assert u.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
