"""DLPack exchange with NumPy 2.x, both ways, through the Python array API protocol."""
import ctypes
import gc
import tracemalloc

import pytest

import tessera

np = pytest.importorskip("numpy")
if int(np.__version__.split(".")[0]) < 2:
    pytest.skip("NumPy 2.x is needed for versioned DLPack", allow_module_level=True)

DTYPES = {
    "bool": np.bool_, "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "float16": np.float16, "float32": np.float32, "float64": np.float64,
}


def sample(np_dtype, shape):
    n = int(np.prod(shape))
    if np_dtype is np.bool_:
        return (np.arange(n) % 3 == 0).reshape(shape)
    return (np.arange(n) % 100 - (0 if np.dtype(np_dtype).kind == "u" else 50)).astype(np_dtype).reshape(shape)


def data_ptr(a):
    return a.__array_interface__["data"][0]


# ---- NumPy -> Tessera -------------------------------------------------------------

@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (5,), (2, 3, 4)])
def test_numpy_to_tessera(name, shape):
    a = sample(DTYPES[name], shape)
    t = tessera.from_dlpack(a)
    assert t.dtype == getattr(tessera, name)
    assert t.shape == a.shape
    assert t.tolist() == a.tolist()
    if a.size:
        assert t.data_ptr() == data_ptr(a)  # zero copy


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (5,), (2, 3, 4)])
def test_tessera_to_numpy(name, shape):
    src = sample(DTYPES[name], shape)
    t = tessera.tensor(src.tolist(), dtype=getattr(tessera, name))
    a = np.from_dlpack(t)
    assert a.dtype == DTYPES[name]
    assert a.shape == shape
    assert a.tolist() == src.tolist()
    if a.size:
        assert data_ptr(a) == t.data_ptr()


@pytest.mark.parametrize("view", [
    lambda a: a.T, lambda a: a[::-1], lambda a: a[:, ::-2], lambda a: a[1:, 2:], lambda a: a[::-1, ::-1],
    lambda a: a[:, 1], lambda a: np.broadcast_to(a[0], (4, 6)),
])
def test_numpy_views_to_tessera(view):
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    a = view(base)
    t = tessera.from_dlpack(a)
    assert t.shape == a.shape
    assert t.stride() == tuple(s // a.itemsize for s in a.strides)
    assert t.tolist() == a.tolist()
    assert t.contiguous().tolist() == a.tolist()
    assert (t + 1).tolist() == (a + 1).tolist()


@pytest.mark.parametrize("view", [
    lambda t: t.t(), lambda t: t[1:, 2:], lambda t: t[:, ::2], lambda t: t.select(1, 3),
    lambda t: t[0].expand(3, 6), lambda t: t.permute(1, 0)[2:],
])
def test_tessera_views_to_numpy(view):
    base = tessera.arange(24, dtype=tessera.float32).view(4, 6)
    t = view(base)
    a = np.from_dlpack(t)
    assert a.shape == t.shape
    assert tuple(s // a.itemsize for s in a.strides) == t.stride()
    assert a.tolist() == t.tolist()


def test_mutation_visible_both_ways():
    a = np.zeros(4, dtype=np.float32)
    t = tessera.from_dlpack(a)
    t[1] = 5.0
    assert a[1] == 5.0
    a[2] = 7.0
    assert t.tolist() == [0.0, 5.0, 7.0, 0.0]

    t2 = tessera.zeros(3, dtype=tessera.int32)
    b = np.from_dlpack(t2)
    b[0] = 9
    assert t2.tolist() == [9, 0, 0]
    t2 += 1
    assert b.tolist() == [10, 1, 1]


def test_reversed_numpy_view_offsets():
    base = np.arange(10, dtype=np.int64)
    t = tessera.from_dlpack(base[8:1:-2])
    assert t.tolist() == [8, 6, 4, 2]
    assert t.stride() == (-2,)
    t.fill_(0)
    assert base.tolist() == [0, 1, 0, 3, 0, 5, 0, 7, 0, 9]


def test_producer_deleted_before_consumer():
    a = np.arange(1000, dtype=np.float64)
    t = tessera.from_dlpack(a)
    del a
    gc.collect()
    assert t.sum().item() == sum(range(1000))

    t2 = tessera.arange(100, dtype=tessera.int64)
    b = np.from_dlpack(t2)
    del t2
    gc.collect()
    assert int(b.sum()) == sum(range(100))


def test_round_trips_do_not_leak():
    a = np.arange(10000, dtype=np.float32)

    def cycle():
        for _ in range(200):
            t = tessera.from_dlpack(a)
            b = np.from_dlpack(t)
            t2 = tessera.from_dlpack(b)
            assert t2.data_ptr() == data_ptr(a)

    cycle()  # warm caches
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(5):
        cycle()
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert after - before < 64 * 1024


def test_read_only_producer():
    a = np.arange(3.0)
    a.flags.writeable = False
    t = tessera.from_dlpack(a)
    assert t.is_read_only
    for mutate in [lambda: t.fill_(1.0), lambda: t.zero_(), lambda: t.__iadd__(1),
                   lambda: t.copy_(tessera.zeros(3, dtype=tessera.float64)), lambda: t[0].fill_(2.0)]:
        with pytest.raises(ValueError, match="read-only"):
            mutate()
    assert (t + 1).tolist() == [1.0, 2.0, 3.0]
    assert a.tolist() == [0.0, 1.0, 2.0]
    # Re-exported to NumPy, the flag travels in the versioned struct.
    b = np.from_dlpack(t)
    assert not b.flags.writeable
    # The legacy struct has no flag: refused rather than silently writable.
    with pytest.raises(BufferError, match="read-only"):
        t.__dlpack__()


# ---- the protocol itself ------------------------------------------------------------

def capsule_name(cap):
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype = ctypes.c_char_p
    get_name.argtypes = [ctypes.py_object]
    return get_name(cap).decode()


def test_capsule_names_follow_max_version():
    t = tessera.arange(3)
    assert capsule_name(t.__dlpack__()) == "dltensor"
    assert capsule_name(t.__dlpack__(max_version=(0, 8))) == "dltensor"
    assert capsule_name(t.__dlpack__(max_version=(1, 0))) == "dltensor_versioned"
    assert capsule_name(t.__dlpack__(max_version=(2, 0))) == "dltensor_versioned"
    assert t.__dlpack_device__() == (1, 0)


@pytest.mark.parametrize("max_version", [None, (1, 0)])
def test_raw_capsules_and_consumed_twice(max_version):
    t = tessera.arange(4)
    cap = t.__dlpack__(max_version=max_version)
    u = tessera.from_dlpack(cap)
    assert u.tolist() == [0, 1, 2, 3] and u.data_ptr() == t.data_ptr()
    assert capsule_name(cap).startswith("used_")
    with pytest.raises(ValueError, match="already consumed"):
        tessera.from_dlpack(cap)


def test_unconsumed_capsules_are_freed():
    t = tessera.arange(4)
    for _ in range(1000):
        t.__dlpack__(max_version=(1, 0))
        t.__dlpack__()
    gc.collect()
    assert t.tolist() == [0, 1, 2, 3]


def test_wrong_inputs():
    make = ctypes.pythonapi.PyCapsule_New
    make.restype = ctypes.py_object
    make.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    buf = ctypes.create_string_buffer(8)
    with pytest.raises(ValueError, match="'something_else'"):
        tessera.from_dlpack(make(ctypes.addressof(buf), b"something_else", None))
    with pytest.raises(TypeError, match="__dlpack__"):
        tessera.from_dlpack([1, 2, 3])
    with pytest.raises(TypeError, match="PyCapsule"):
        class Bad:
            def __dlpack__(self, **kw):
                return 42
        tessera.from_dlpack(Bad())


def test_unsupported_dtype_is_a_clear_error():
    with pytest.raises(TypeError):
        tessera.from_dlpack(np.zeros(3, dtype=np.complex64))
    with pytest.raises(TypeError):
        tessera.from_dlpack(np.zeros(3, dtype=np.uint16))


def test_legacy_producer_fallback():
    class Legacy:
        """A pre-1.0 producer: __dlpack__ takes no keywords."""

        def __init__(self, t):
            self.t = t

        def __dlpack__(self, stream=None):
            return self.t.__dlpack__()

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    src = tessera.arange(5)
    u = tessera.from_dlpack(Legacy(src))
    assert u.tolist() == list(range(5)) and u.data_ptr() == src.data_ptr()
    assert u.is_read_only  # a legacy capsule cannot say the memory may be written
    c = tessera.from_dlpack(Legacy(src), copy=True)
    assert c.data_ptr() != src.data_ptr() and c.tolist() == list(range(5)) and not c.is_read_only


def test_copy_argument():
    t = tessera.arange(4, dtype=tessera.float32)
    a = np.from_dlpack(t, copy=True)
    a[0] = 100
    assert t.tolist()[0] == 0.0
    b = np.from_dlpack(t, copy=False)
    b[0] = 100
    assert t.tolist()[0] == 100.0

    n = np.arange(4.0)
    c = tessera.from_dlpack(n, copy=True)
    c.fill_(1.0)
    assert n.tolist() == [0.0, 1.0, 2.0, 3.0]
    d = tessera.from_dlpack(n, copy=False)
    assert d.data_ptr() == data_ptr(n)


def test_dl_device_and_stream():
    t = tessera.arange(3)
    assert capsule_name(t.__dlpack__(max_version=(1, 0), dl_device=(1, 0))) == "dltensor_versioned"
    with pytest.raises(BufferError, match="not provided"):  # the array API's error for an unservable device
        t.__dlpack__(max_version=(1, 0), dl_device=(7, 0))
    with pytest.raises(ValueError, match="stream"):
        t.__dlpack__(stream=1)
    t.__dlpack__(stream=-1)
    meta = tessera.arange(3, device="meta")
    with pytest.raises(BufferError, match="meta"):
        meta.__dlpack__(max_version=(1, 0))
    with pytest.raises(BufferError, match="meta"):
        meta.__dlpack_device__()
    with pytest.raises(BufferError, match="meta"):
        np.from_dlpack(meta)
    u = tessera.from_dlpack(np.arange(3), device="cpu")
    assert u.device == tessera.device("cpu")
    with pytest.raises(BufferError, match="copy=False"):
        tessera.from_dlpack(np.arange(3), device="meta", copy=False)
    assert tessera.from_dlpack(np.arange(3), device="meta").device.type == "meta"


def test_tessera_to_tessera():
    t = tessera.arange(6).view(2, 3).t()
    u = tessera.from_dlpack(t)
    assert u.data_ptr() == t.data_ptr() and u.stride() == t.stride()
    u.zero_()
    assert t.sum().item() == 0


def test_malformed_protocol_arguments():
    t = tessera.arange(3)
    for kw, what in [(dict(max_version="x"), "max_version"), (dict(max_version=(1,)), "max_version"),
                     (dict(dl_device=(1,)), "dl_device"), (dict(dl_device="cpu"), "dl_device")]:
        with pytest.raises(TypeError, match=what):
            t.__dlpack__(**kw)
    with pytest.raises(TypeError):
        t.__dlpack__(copy="yes")


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/statm"), reason="needs /proc")
def test_round_trips_keep_rss_flat():
    a = np.ones(1 << 16, dtype=np.float64)  # 512 KiB: a leak of one buffer per trip would show

    def cycle(n):
        for _ in range(n):
            t = tessera.from_dlpack(a)
            b = np.from_dlpack(t)
            c = tessera.from_dlpack(np.from_dlpack(t.t() if t.ndim > 1 else t))
            del t, b, c

    cycle(500)
    gc.collect()
    before = rss_bytes()
    cycle(5000)
    gc.collect()
    assert rss_bytes() - before < 8 << 20
