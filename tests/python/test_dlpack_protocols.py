"""The array protocols at their edges: __dlpack__'s dl_device/stream/max_version
values, legacy (flagless) capsules imported read-only, misaligned imports, and
NumPy access through __array__ and the buffer protocol. NumPy 2 is the oracle
for values, dtypes and copy semantics."""
import ctypes
import gc

import numpy as np
import pytest

import tessera

DLPACK_FLAG_BITMASK_READ_ONLY = 1
DLPACK_FLAG_BITMASK_IS_COPIED = 2


def capsule_name(cap):
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype = ctypes.c_char_p
    get_name.argtypes = [ctypes.py_object]
    return get_name(cap).decode()


def versioned_flags(cap):
    """The flags field of a DLManagedTensorVersioned capsule (DLPack 1.x layout:
    version (2 x u32), manager_ctx, deleter, flags (u64))."""
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    ptr = get(cap, b"dltensor_versioned")
    return ctypes.c_uint64.from_address(ptr + 8 + 2 * ctypes.sizeof(ctypes.c_void_p)).value


# ---- __dlpack__ arguments --------------------------------------------------------------

@pytest.mark.parametrize("dl_device", [(2**32 + 1, 0), (1, 2**32), (1, 2**31), (2**70, 0), (1, -(2**70)), (-1, 0),
                                       (1, -1)])
def test_out_of_range_dl_device_is_a_value_error(dl_device):
    t = tessera.arange(3)
    with pytest.raises(ValueError, match="dl_device") as e:
        t.__dlpack__(max_version=(1, 0), dl_device=dl_device)
    msg = str(e.value)
    for v in dl_device:
        assert (str(v) if abs(v) < 2**200 else "bits") in msg
    with pytest.raises(ValueError):  # the legacy path too
        t.__dlpack__(dl_device=dl_device)


def test_dl_device_that_cannot_be_served_is_a_buffer_error():
    t = tessera.arange(3)
    with pytest.raises(BufferError, match="not provided"):
        t.__dlpack__(max_version=(1, 0), dl_device=(7, 0))  # kDLVulkan: no plugin
    with pytest.raises(BufferError, match="does not exist"):
        t.__dlpack__(max_version=(1, 0), dl_device=(1, 5))  # cpu:5
    with pytest.raises(BufferError, match="copy=False"):
        t.__dlpack__(max_version=(1, 0), dl_device=(2, 0), copy=False)  # another device needs a copy
    with pytest.raises(BufferError, match="meta"):
        tessera.arange(3, device="meta").__dlpack__(max_version=(1, 0), dl_device=(1, 0))


def test_dl_device_and_copy_semantics():
    t = tessera.arange(4, dtype=tessera.float32)
    same = tessera.from_dlpack(t.__dlpack__(max_version=(1, 0), dl_device=(1, 0)))
    assert same.data_ptr() == t.data_ptr()  # no copy for the tensor's own device
    cap = t.__dlpack__(max_version=(1, 0), dl_device=(1, 0), copy=True)
    assert versioned_flags(cap) & DLPACK_FLAG_BITMASK_IS_COPIED
    c = tessera.from_dlpack(cap)
    assert c.data_ptr() != t.data_ptr() and c.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert versioned_flags(t.__dlpack__(max_version=(1, 0), copy=False)) & DLPACK_FLAG_BITMASK_IS_COPIED == 0
    assert versioned_flags(t.__dlpack__(max_version=(1, 0))) == 0


def test_stream_and_max_version_ints_beyond_int64():
    t = tessera.arange(3)
    for stream in (2**64 - 1, 2**70, -(2**70), 0, 1, True, "x"):
        with pytest.raises(ValueError, match="stream"):
            t.__dlpack__(stream=stream)
    t.__dlpack__(stream=-1)
    assert capsule_name(t.__dlpack__(max_version=(2**70, 0))) == "dltensor_versioned"  # any future major
    assert capsule_name(t.__dlpack__(max_version=(-(2**70), 0))) == "dltensor"


# ---- legacy capsules: read-only unless copied ---------------------------------------------

class LegacyOnly:
    """A producer that answers every request, versioned or not, with a legacy
    capsule (what JAX does): it cannot say that its memory is immutable."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return self.a.__dlpack__()  # NumPy's legacy "dltensor" capsule

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


class PreVersioned:
    """A producer from before DLPack 1.0: __dlpack__ takes no keywords."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def write_paths(t):
    idx = tessera.tensor([0, 1])
    ones = tessera.ones(t.shape, dtype=t.dtype)
    return {
        "t[0] = 100": lambda: t.__setitem__(0, 100),
        "t[:2] = tensor": lambda: t.__setitem__(slice(0, 2), tessera.ones(2, dtype=t.dtype)),
        "fill_": lambda: t.fill_(1),
        "zero_": lambda: t.zero_(),
        "add_": lambda: t.add_(ones),
        "+=": lambda: t.__iadd__(1),
        "*=": lambda: t.__imul__(2),
        "copy_": lambda: t.copy_(ones),
        "out=": lambda: tessera.add(ones, ones, out=t),
        "out= reduction": lambda: tessera.sum(tessera.ones(2, *t.shape, dtype=t.dtype), 0, out=t),
        "exp_": lambda: t.exp_(),
        "clamp_": lambda: t.clamp_(0, 1),
        "uniform_": lambda: t.uniform_(),
        "masked_fill_": lambda: t.masked_fill_(tessera.ones(t.shape, dtype=tessera.bool), 1.0),
        "index_add_": lambda: t.index_add_(0, idx, tessera.ones(2, dtype=t.dtype)),
        "scatter_": lambda: t.scatter_(0, idx, tessera.ones(2, dtype=t.dtype)),
        "view write": lambda: t.view(2, -1)[1].fill_(5),
        "as_strided write": lambda: t.as_strided((2,), (1,)).fill_(3),
        "detach write": lambda: t.detach().fill_(3),
    }


def assert_read_only(t, a, before):
    assert t.is_read_only
    for name, write in write_paths(t).items():
        with pytest.raises(ValueError, match="read-only"):
            write()
        assert a.tolist() == before, name


@pytest.mark.parametrize("producer", [LegacyOnly, PreVersioned])
def test_legacy_capsules_import_read_only(producer):
    a = np.arange(6, dtype=np.float32)
    t = tessera.from_dlpack(producer(a))
    assert t.data_ptr() == a.ctypes.data  # still zero copy
    assert t.tolist() == a.tolist()
    assert_read_only(t, a, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    # NumPy 2 makes the same choice for the same capsule: the oracle for the rule.
    assert not np.from_dlpack(producer(a)).flags.writeable
    # Reads, and ops making new tensors, work; the flag travels on.
    assert (t * 2).tolist() == (a * 2).tolist()
    assert not np.from_dlpack(t).flags.writeable
    with pytest.raises(BufferError, match="read-only"):
        t.__dlpack__()  # a legacy re-export could not carry the flag


def test_raw_legacy_capsule_imports_read_only():
    a = np.arange(4.0)
    t = tessera.from_dlpack(a.__dlpack__())
    assert t.is_read_only and t.data_ptr() == a.ctypes.data
    with pytest.raises(ValueError, match="read-only"):
        t[0] = 100.0
    assert a[0] == 0.0


@pytest.mark.parametrize("producer", [LegacyOnly, PreVersioned])
def test_copy_true_gives_a_writable_copy_of_a_legacy_capsule(producer):
    a = np.arange(6, dtype=np.float32)
    c = tessera.from_dlpack(producer(a), copy=True)
    assert not c.is_read_only and c.data_ptr() != a.ctypes.data
    c[0] = 100
    assert a[0] == 0.0 and c.tolist()[0] == 100.0
    u = tessera.tensor(producer(a))  # tensor() always copies: writable too
    u.fill_(1)
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_versioned_read_only_flag_guards_every_write_path():
    a = np.arange(6, dtype=np.float32)
    a.flags.writeable = False
    t = tessera.from_dlpack(a)
    assert_read_only(t, a, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    c = tessera.from_dlpack(a, copy=True)
    c.fill_(2)
    assert not c.is_read_only and a.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_writable_versioned_imports_stay_writable():
    a = np.arange(3.0)
    t = tessera.from_dlpack(a)
    t[0] = 7.0
    assert a[0] == 7.0


# ---- misaligned imports ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.float16])
def test_misaligned_numpy_arrays_are_refused(dtype):
    buf = np.zeros(64, dtype=np.uint8)
    a = np.frombuffer(buf.data, dtype=dtype, count=4, offset=1)  # one byte off
    assert not a.flags.aligned
    with pytest.raises(ValueError, match="not aligned") as e:
        tessera.from_dlpack(a)
    assert np.dtype(dtype).name in str(e.value)
    ok = np.frombuffer(buf.data, dtype=dtype, count=4, offset=np.dtype(dtype).itemsize)
    assert tessera.from_dlpack(ok).tolist() == ok.tolist()
    # One-byte dtypes have no alignment to keep.
    b = np.frombuffer(buf.data, dtype=np.uint8, count=4, offset=1)
    assert tessera.from_dlpack(b).data_ptr() == b.ctypes.data


# ---- __array__ and the buffer protocol --------------------------------------------------------

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]


def sample(name, shape=(2, 3)):
    n = int(np.prod(shape))
    a = (np.arange(n) % 2 == 0) if name == "bool" else (np.arange(n) - 2).astype(name)
    return a.reshape(shape)


@pytest.mark.parametrize("name", DTYPES)
def test_asarray_is_zero_copy_with_the_right_dtype(name):
    want = sample(name)
    t = tessera.tensor(want.tolist(), dtype=getattr(tessera, name))
    got = np.asarray(t)
    assert got.dtype == np.dtype(name) and got.dtype != object
    assert got.shape == want.shape and (got == want).all()
    assert got.ctypes.data == t.data_ptr()  # shares the tensor's memory
    got[0, 0] = want[0, 1]
    assert t.tolist()[0][0] == want[0, 1].item()
    m = memoryview(t)
    assert np.dtype(m.format) == np.dtype(name)
    assert m.itemsize == np.dtype(name).itemsize and m.shape == want.shape and not m.readonly
    assert (np.asarray(m) == got).all()


def test_asarray_of_a_256x256_tensor_is_not_an_object_array():
    t = tessera.ones(256, 256)
    a = np.asarray(t)
    assert a.dtype == np.float32 and a.shape == (256, 256) and a.ctypes.data == t.data_ptr()
    assert np.array(t).ctypes.data != t.data_ptr()  # np.array copies by default


def test_copy_semantics_of_array():
    t = tessera.arange(4, dtype=tessera.float64)
    shared = np.asarray(t, copy=False)
    assert shared.ctypes.data == t.data_ptr()
    copied = np.asarray(t, copy=True)
    copied[0] = 100
    assert t.tolist()[0] == 0.0
    conv = np.asarray(t, dtype=np.float32)
    assert conv.dtype == np.float32 and conv.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert t.__array__().ctypes.data == t.data_ptr()
    assert t.__array__(copy=True).ctypes.data != t.data_ptr()
    with pytest.raises(ValueError, match="copy=False"):
        t.__array__(dtype=np.float32, copy=False)
    with pytest.raises(ValueError, match="copy=False"):
        tessera.zeros(2, device="meta").__array__(copy=False)


def test_strided_and_zero_size_and_0d():
    base = np.arange(12, dtype=np.int32).reshape(3, 4)
    t = tessera.from_dlpack(base)
    for view, want in [(t.t(), base.T), (t[:, 1:3], base[:, 1:3]), (t[::2], base[::2])]:
        got = np.asarray(view)
        assert got.tolist() == want.tolist() and got.strides == want.strides
    r = tessera.from_dlpack(base[:, ::-1])  # negative strides
    assert np.asarray(r).tolist() == base[:, ::-1].tolist()
    assert bytes(t.t()) == base.T.tobytes()  # a C-ordered copy through the buffer
    assert np.asarray(tessera.zeros(0, 3)).shape == (0, 3)
    assert memoryview(tessera.zeros(0)).tolist() == []
    z = np.asarray(tessera.tensor(3.5))
    assert z.shape == () and z.item() == 3.5


def test_read_only_tensors_export_read_only():
    a = np.arange(3.0)
    a.flags.writeable = False
    t = tessera.from_dlpack(a)
    assert memoryview(t).readonly
    assert not np.asarray(t).flags.writeable
    assert np.asarray(t, copy=True).flags.writeable
    with pytest.raises((BufferError, TypeError), match="writable|read-only"):
        (ctypes.c_double * 3).from_buffer(t)  # asks for a writable buffer
    (ctypes.c_double * 3).from_buffer(tessera.zeros(3, dtype=tessera.float64))


def test_bfloat16_has_no_numpy_dtype():
    t = tessera.tensor([1.5, -2.25, 3.0]).to(tessera.bfloat16)
    with pytest.raises(TypeError, match="bfloat16"):
        np.asarray(t)
    with pytest.raises(BufferError, match="bfloat16"):
        memoryview(t)
    got = np.asarray(t, dtype=np.float32)  # asked for: converted exactly
    assert got.dtype == np.float32 and got.tolist() == [1.5, -2.25, 3.0]
    with pytest.raises(ValueError, match="copy=False"):
        t.__array__(dtype=np.float32, copy=False)


def test_non_host_tensors():
    m = tessera.zeros(2, device="meta")
    with pytest.raises(BufferError, match="host memory"):
        memoryview(m)
    with pytest.raises(ValueError, match="meta"):
        np.asarray(m)  # copied to the host first, and meta has no data


def test_buffer_keeps_the_memory_alive():
    t = tessera.tensor([1.0, 2.0, 3.0])
    m = memoryview(t)
    del t
    gc.collect()
    tessera.ones(3)  # would reuse a freed block
    assert m.tolist() == [1.0, 2.0, 3.0]
    m.release()
