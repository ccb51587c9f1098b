"""Hand-made DLPack capsules (ctypes): the deleter runs exactly once on every
path, and malformed managed tensors are clear exceptions, never crashes."""
import ctypes
import gc

import pytest

import tessera


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))
DLManagedTensorVersioned._fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                                     ("deleter", DELETER), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]

capsule_new = ctypes.pythonapi.PyCapsule_New
capsule_new.restype = ctypes.py_object
capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class DLManagedTensor(ctypes.Structure):
    pass


LEGACY_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", LEGACY_DELETER)]


class Producer:
    """One float32 buffer [0, 1, 2, 3] exported as a versioned managed tensor
    (or, legacy=True, as a legacy one)."""

    def __init__(self, major=1, dtype=(2, 32, 1), ndim=None, device_type=1, flags=0, shape=(4,), byte_offset=0,
                 legacy=False):
        self.calls = 0
        self.legacy = legacy
        self.buf = (ctypes.c_float * 4)(0.0, 1.0, 2.0, 3.0)
        self.shape = (ctypes.c_int64 * len(shape))(*shape)
        self.strides = None
        self.deleter = (LEGACY_DELETER if legacy else DELETER)(self._delete)  # kept alive by self
        m = DLManagedTensor() if legacy else DLManagedTensorVersioned()
        if not legacy:
            m.version = DLPackVersion(major, 0)
            m.flags = flags
        m.deleter = self.deleter
        m.dl_tensor.data = ctypes.cast(self.buf, ctypes.c_void_p)
        m.dl_tensor.device = DLDevice(device_type, 0)
        m.dl_tensor.ndim = len(shape) if ndim is None else ndim
        m.dl_tensor.dtype = DLDataType(*dtype)
        m.dl_tensor.shape = self.shape
        m.dl_tensor.byte_offset = byte_offset
        self.managed = m

    def _delete(self, ptr):
        self.calls += 1

    def capsule(self):
        return capsule_new(ctypes.addressof(self.managed), b"dltensor" if self.legacy else b"dltensor_versioned",
                           None)


def test_consumed_capsule_deleter_once_when_last_view_goes():
    p = Producer()
    t = tessera.from_dlpack(p.capsule())
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert t.data_ptr() == ctypes.addressof(p.buf)
    v = t[1:]
    del t
    gc.collect()
    assert p.calls == 0  # a view still uses the memory
    v.fill_(9.0)
    assert list(p.buf) == [0.0, 9.0, 9.0, 9.0]
    del v
    gc.collect()
    assert p.calls == 1


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(major=2), ValueError, "DLPack 2"),
    (dict(dtype=(5, 64, 1)), TypeError, None),     # complex
    (dict(dtype=(2, 32, 4)), TypeError, None),     # 4 lanes
    (dict(ndim=-1), ValueError, None),
    (dict(device_type=7), ValueError, "not provided"),
    (dict(byte_offset=2), ValueError, "not aligned to the 4 bytes a float32"),  # misaligned first element
    (dict(byte_offset=1, dtype=(2, 64, 1)), ValueError, "not aligned to the 8 bytes a float64"),
    (dict(shape=(1,) * 65), ValueError, "ndim 65 exceeds"),
    (dict(byte_offset=2**64 - 4), ValueError, "overflows the address space"),
    (dict(legacy=True, byte_offset=2), ValueError, "not aligned"),
    (dict(legacy=True, shape=(2, -1)), ValueError, "negative size"),
])
def test_refused_capsules_call_the_deleter_once(kwargs, exc, match):
    p = Producer(**kwargs)
    cap = p.capsule()
    with pytest.raises(exc, match=match):
        tessera.from_dlpack(cap)
    assert p.calls == 1
    with pytest.raises(ValueError, match="already consumed"):
        tessera.from_dlpack(cap)  # ownership moved on the first try, even though it failed
    assert p.calls == 1


def test_legacy_capsule_imports_read_only_and_deletes_once():
    p = Producer(legacy=True)
    t = tessera.from_dlpack(p.capsule())
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0] and t.data_ptr() == ctypes.addressof(p.buf)
    assert t.is_read_only  # the legacy struct cannot say whether writes are allowed
    with pytest.raises(ValueError, match="read-only"):
        t[0] = 100.0
    assert list(p.buf)[:4] == [0.0, 1.0, 2.0, 3.0]
    q = Producer(legacy=True)
    c = tessera.from_dlpack(q.capsule(), copy=True)
    assert q.calls == 1  # the import was copied and released at once
    c[0] = 100.0  # a copy of our own is writable
    assert c.tolist() == [100.0, 1.0, 2.0, 3.0] and list(q.buf)[:4] == [0.0, 1.0, 2.0, 3.0]
    del t
    gc.collect()
    assert p.calls == 1


def test_read_only_flag():
    p = Producer(flags=1)  # DLPACK_FLAG_BITMASK_READ_ONLY
    t = tessera.from_dlpack(p.capsule())
    assert t.is_read_only
    with pytest.raises(ValueError, match="read-only"):
        t.zero_()
    del t
    gc.collect()
    assert p.calls == 1


def test_many_exports_each_deleted_once():
    # Tessera's own capsules: thousands of exports, consumed or not, leave the
    # tensor's use count where it was (every deleter ran exactly once).
    t = tessera.arange(8)
    base = t._use_count()
    for i in range(3000):
        cap = t.__dlpack__(max_version=(1, 0) if i % 2 else None)
        if i % 3 == 0:
            tessera.from_dlpack(cap)
    assert t._use_count() == base + 1  # the last, unconsumed capsule
    del cap
    gc.collect()
    assert t._use_count() == base
    u = tessera.from_dlpack(t)
    assert t._use_count() == base + 1  # the import's storage holds the export
    del u
    assert t._use_count() == base
