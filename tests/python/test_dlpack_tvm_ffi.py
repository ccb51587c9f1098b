"""DLPack exchange with a second framework, apache-tvm-ffi (skipped when absent)."""
import gc

import pytest

import tessera

tvm_ffi = pytest.importorskip("tvm_ffi")


@pytest.mark.parametrize("dtype", [tessera.int8, tessera.int32, tessera.int64, tessera.uint8,
                                   tessera.float16, tessera.float32, tessera.float64])
def test_round_trip_zero_copy(dtype):
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
