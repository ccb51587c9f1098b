"""The tensor API against NumPy as the oracle."""
import numpy as np
import pytest

import tessera


def arr(t):
    return np.asarray(t.tolist())


def test_dtypes_are_module_attributes():
    assert repr(tessera.float32) == "tessera.float32"
    assert tessera.float is tessera.float32 or tessera.float == tessera.float32
    assert tessera.long == tessera.int64
    assert tessera.int64 != tessera.int32
    assert len({tessera.float32, tessera.float32, tessera.int8}) == 2
    for name in ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]:
        assert repr(getattr(tessera, name)) == "tessera." + name


def test_devices_and_device_objects():
    assert tessera.device("cpu") in tessera.devices()
    d = tessera.device("cpu:0")
    assert d.type == "cpu" and d.index == 0 and str(d) == "cpu:0"
    assert d == tessera.device("cpu", 0)
    with pytest.raises(ValueError):
        tessera.device("nosuchdevice")


def test_properties():
    t = tessera.arange(24, dtype=tessera.float32).view(2, 3, 4)
    assert t.shape == (2, 3, 4) and t.ndim == 3 and t.numel() == 24
    assert t.dtype == tessera.float32 and t.device == tessera.device("cpu")
    assert t.stride() == (12, 4, 1) and t.stride(1) == 4
    assert t.is_contiguous() and not t.transpose(0, 2).is_contiguous()
    assert repr(tessera.tensor([1, 2])) == "tensor([1, 2])"
    assert len(t) == 2


@pytest.mark.parametrize("data", [[1, 2, 3], [[1.5, 2.0], [3.0, -4.0]], [True, False], 7, 2.5, [], [[], []]])
def test_tensor_factory_matches_numpy(data):
    t = tessera.tensor(data)
    n = np.array(data)
    assert t.shape == n.shape
    assert t.tolist() == n.tolist()


def test_tensor_factory_dtype_inference_and_args():
    assert tessera.tensor([1, 2]).dtype == tessera.int64
    assert tessera.tensor([1, 2.0]).dtype == tessera.float32
    assert tessera.tensor([True]).dtype == tessera.bool
    assert tessera.tensor([1, 2], dtype=tessera.float64).dtype == tessera.float64
    assert tessera.tensor([2**62 + 1]).item() == 2**62 + 1  # exact, not through double
    assert tessera.tensor([1], device="cpu").device == tessera.device("cpu")
    with pytest.raises(ValueError, match="ragged"):
        tessera.tensor([[1, 2], [3]])
    with pytest.raises(TypeError):
        tessera.tensor(["a"])


def test_factories():
    assert tessera.zeros(2, 3).tolist() == np.zeros((2, 3)).tolist()
    assert tessera.ones((2, 3), dtype=tessera.int32).dtype == tessera.int32
    assert tessera.full((2,), 7).tolist() == [7, 7]
    assert tessera.empty(4).shape == (4,)
    assert tessera.arange(5).tolist() == list(range(5))
    assert tessera.arange(1, 10, 3).tolist() == list(range(1, 10, 3))
    assert np.allclose(arr(tessera.arange(0.0, 1.0, 0.25)), np.arange(0.0, 1.0, 0.25))


def test_item_and_tolist_types():
    assert isinstance(tessera.tensor(3).item(), int)
    assert isinstance(tessera.tensor(3.0).item(), float)
    assert tessera.tensor(True).item() is True
    with pytest.raises(ValueError):
        tessera.tensor([1, 2]).item()


def test_views_match_numpy():
    n = np.arange(24.0).reshape(2, 3, 4)
    t = tessera.tensor(n.tolist())
    assert arr(t.transpose(0, 2)).tolist() == n.transpose(2, 1, 0).tolist()
    assert arr(t.permute(1, 2, 0)).tolist() == n.transpose(1, 2, 0).tolist()
    assert arr(t.view(6, 4)).tolist() == n.reshape(6, 4).tolist()
    assert arr(t.reshape(-1)).tolist() == n.reshape(-1).tolist()
    assert arr(t.narrow(2, 1, 2)).tolist() == n[:, :, 1:3].tolist()
    assert arr(t.select(1, 2)).tolist() == n[:, 2].tolist()
    assert t.unsqueeze(0).shape == (1, 2, 3, 4)
    assert t.unsqueeze(0).squeeze().shape == (2, 3, 4)
    assert t.unsqueeze(1).squeeze(1).shape == (2, 3, 4)
    assert arr(t.flatten(1)).tolist() == n.reshape(2, 12).tolist()
    assert t[0].t().shape == (4, 3)
    e = tessera.tensor([1, 2, 3]).expand(2, 3)
    assert e.stride() == (0, 1) and e.tolist() == [[1, 2, 3]] * 2
    assert arr(t.transpose(0, 1).contiguous()).tolist() == n.transpose(1, 0, 2).tolist()


def test_views_share_storage():
    t = tessera.zeros(3, 4)
    v = t[1]
    v.fill_(5.0)
    assert t.tolist()[1] == [5.0] * 4
    c = t.clone()
    c.zero_()
    assert t.tolist()[1] == [5.0] * 4


@pytest.mark.parametrize("key", [
    0, -1, slice(None), slice(1, 3), slice(None, None, 2), slice(-2, None), (1, 2), (slice(None), 1),
    (None, 0), (Ellipsis, 1), (0, Ellipsis), (Ellipsis,), (slice(None), None, slice(1, None, 2)),
    (1, slice(5, 10)),
])
def test_indexing_matches_numpy(key):
    n = np.arange(60).reshape(3, 4, 5)
    t = tessera.tensor(n.tolist())
    got = t[key]
    want = n[key]
    assert got.shape == want.shape
    assert got.tolist() == want.tolist()


def test_indexing_errors():
    t = tessera.zeros(2, 3)
    with pytest.raises(IndexError):
        t[2]
    with pytest.raises(IndexError):
        t[0, 0, 0]
    with pytest.raises(IndexError):
        t[..., ...]
    with pytest.raises(TypeError):
        t["x"]
    with pytest.raises(ValueError):
        t[::-1]


def test_setitem():
    t = tessera.zeros(2, 3)
    t[0] = 1.0
    t[1, 1:] = tessera.tensor([2.0, 3.0])
    assert t.tolist() == [[1.0, 1.0, 1.0], [0.0, 2.0, 3.0]]


def test_arithmetic_matches_numpy():
    a_n = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]], dtype=np.float32)
    b_n = np.array([0.5, 2.0, -1.0], dtype=np.float32)
    a, b = tessera.tensor(a_n.tolist()), tessera.tensor(b_n.tolist())
    cases = [
        (a + b, a_n + b_n), (a - b, a_n - b_n), (a * b, a_n * b_n), (a / b, a_n / b_n),
        (a + 2, a_n + 2), (2 + a, 2 + a_n), (3 - a, 3 - a_n), (a * 1.5, a_n * 1.5), (2 / a, 2 / a_n),
        (-a, -a_n), (a.exp(), np.exp(a_n)), (a.relu(), np.maximum(a_n, 0)), (a.neg(), -a_n),
        (tessera.add(a, b, alpha=2), a_n + 2 * b_n), (tessera.sub(a, b), a_n - b_n),
        (tessera.mul(a, b), a_n * b_n), (tessera.div(a, b), a_n / b_n), (tessera.exp(a), np.exp(a_n)),
        (tessera.relu(a), np.maximum(a_n, 0)), (tessera.neg(a), -a_n),
    ]
    for got, want in cases:
        assert got.shape == want.shape
        np.testing.assert_allclose(arr(got), want, rtol=1e-6)


def test_division_rounding_modes():
    a_n = np.array([7, -7, 9, -9])
    b_n = np.array([2, 2, -4, -4])
    a, b = tessera.tensor(a_n.tolist()), tessera.tensor(b_n.tolist())
    assert a.div(b, rounding_mode="floor").tolist() == (a_n // b_n).tolist()
    assert a.div(b, rounding_mode="trunc").tolist() == np.trunc(a_n / b_n).astype(int).tolist()
    np.testing.assert_allclose(arr(a / b), a_n / b_n)
    with pytest.raises(ValueError):
        a.div(b, rounding_mode="nearest")


def test_sum():
    n = np.arange(24.0).reshape(2, 3, 4)
    t = tessera.tensor(n.tolist())
    assert t.sum().item() == n.sum()
    assert arr(t.sum(dim=1)).tolist() == n.sum(axis=1).tolist()
    assert arr(t.sum(dim=(0, 2), keepdim=True)).tolist() == n.sum(axis=(0, 2), keepdims=True).tolist()
    assert tessera.sum(t, 0).shape == (3, 4)
    assert tessera.tensor([1, 2]).sum(dtype=tessera.float64).dtype == tessera.float64
    assert tessera.tensor([True, True]).sum().item() == 2


def test_matmul():
    rng = np.random.default_rng(0)
    a_n, b_n = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    a, b = tessera.tensor(a_n.tolist(), dtype=tessera.float64), tessera.tensor(b_n.tolist(), dtype=tessera.float64)
    np.testing.assert_allclose(arr(a @ b), a_n @ b_n)
    np.testing.assert_allclose(arr(a.mm(b)), a_n @ b_n)
    np.testing.assert_allclose(arr(tessera.matmul(a, b)), a_n @ b_n)
    x_n, y_n = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 2))
    x, y = tessera.tensor(x_n.tolist(), dtype=tessera.float64), tessera.tensor(y_n.tolist(), dtype=tessera.float64)
    np.testing.assert_allclose(arr(x.bmm(y)), x_n @ y_n)
    np.testing.assert_allclose(arr(tessera.bmm(x, y)), x_n @ y_n)
    with pytest.raises(ValueError):
        a @ a


def test_nonzero():
    n = np.array([[0, 3, 0], [4, 0, 5]])
    t = tessera.tensor(n.tolist())
    assert t.nonzero().tolist() == np.argwhere(n).tolist()
    assert tessera.nonzero(t).dtype == tessera.int64


def test_in_place_operators_keep_identity():
    t = tessera.ones(3)
    ident = id(t)
    t += 1
    t *= 3
    t -= 1
    t /= 5
    t += tessera.tensor([1.0, 2.0, 3.0])
    assert id(t) == ident
    np.testing.assert_allclose(arr(t), [2.0, 3.0, 4.0])
    assert t.fill_(2.0) is t and t.zero_() is t and t.copy_(tessera.ones(3)) is t
    assert t.tolist() == [1.0, 1.0, 1.0]


def test_to_and_contiguous():
    t = tessera.tensor([1.7, -2.2])
    assert t.to(tessera.int32).tolist() == [1, -2]
    assert t.to("cpu").device == tessera.device("cpu")
    assert t.to("cpu", dtype=tessera.float64).dtype == tessera.float64
    m = t.to("meta")
    assert m.device.type == "meta" and m.shape == (2,)


def test_error_mapping():
    with pytest.raises(ValueError, match="view"):
        tessera.zeros(2, 3).view(7)
    with pytest.raises(IndexError):
        tessera.zeros(2).select(0, 5)
    with pytest.raises(IndexError):
        tessera.zeros(2).transpose(0, 3)
    with pytest.raises(TypeError, match="cannot be cast"):
        tessera.ones(2, dtype=tessera.int64).add_(tessera.ones(2))
    with pytest.raises(TypeError, match="bool"):
        tessera.ones(2, 2, dtype=tessera.bool).mm(tessera.ones(2, 2, dtype=tessera.bool))
    with pytest.raises(RuntimeError):
        tessera.load_plugin("/nonexistent/libnothing.so")
    with pytest.raises(ValueError):
        tessera.tensor([1, 2]) + tessera.tensor([1, 2, 3])


def test_bool_and_len_errors():
    with pytest.raises(ValueError):
        bool(tessera.zeros(2))
    with pytest.raises(TypeError):
        len(tessera.tensor(1))


def test_type_stubs_ship_next_to_the_module():
    import pathlib

    import tessera._C as C

    pkg = pathlib.Path(C.__file__).parent
    stub = (pkg / "_C.pyi").read_text()
    assert (pkg / "py.typed").exists()
    for name in ["class Tensor", "def from_dlpack", "def __dlpack__", "def tensor", "def zeros"]:
        assert name in stub


def test_star_import_keeps_builtins():
    ns = {}
    exec("from tessera import *", ns)
    assert "float32" in ns and "tensor" in ns and "Tensor" in ns
    assert "bool" not in ns and "int" not in ns and "float" not in ns


def test_slice_and_as_strided():
    n = np.arange(12).reshape(3, 4)
    t = tessera.tensor(n.tolist())
    assert t.slice(1, 1, 4, 2).tolist() == n[:, 1:4:2].tolist()
    assert t.slice(0, -2).tolist() == n[-2:].tolist()
    s = t.as_strided((2, 2), (1, 4), 1)
    assert s.tolist() == np.lib.stride_tricks.as_strided(n.reshape(-1)[1:], (2, 2), (8, 32)).tolist()
    with pytest.raises(ValueError):
        t.as_strided((100,), (1,))


def test_numpy_scalars_are_numbers():
    t = tessera.arange(3, dtype=tessera.float32)
    assert (t * np.float32(2)).tolist() == [0.0, 2.0, 4.0]
    r = np.float32(2) * t  # NumPy defers to Tensor.__rmul__ (__array_ufunc__ = None)
    assert isinstance(r, tessera.Tensor) and r.tolist() == [0.0, 2.0, 4.0]
    assert (np.int64(1) - t).tolist() == [1.0, 0.0, -1.0]
    assert tessera.full((2,), np.int32(4)).tolist() == [4, 4]
    assert tessera.tensor([np.int32(3), np.int64(4)]).dtype == tessera.int64
    assert tessera.tensor([np.float32(1.5), 2]).tolist() == [1.5, 2.0]
    with pytest.raises(TypeError):
        t + np.ones(3)  # arrays are not scalars: exchange them with from_dlpack
    with pytest.raises(TypeError):
        t + "a"


def test_tensor_from_arrays_copies():
    a = np.arange(6, dtype=np.int16).reshape(2, 3)[:, ::-1]
    t = tessera.tensor(a)
    assert t.dtype == tessera.int16 and t.tolist() == a.tolist() and t.is_contiguous()
    t.fill_(0)
    assert a.tolist() == [[2, 1, 0], [5, 4, 3]]  # a copy, unlike from_dlpack
    assert tessera.tensor(a, dtype=tessera.float64).dtype == tessera.float64
    u = tessera.tensor(t)
    assert u.data_ptr() != t.data_ptr()


def test_matmul_from_threads():
    import threading

    rng = np.random.default_rng(1)
    a_n = rng.standard_normal((64, 64))
    a = tessera.from_dlpack(a_n)
    want = a_n @ a_n
    errors = []

    def work():
        try:
            for _ in range(20):
                np.testing.assert_allclose(np.from_dlpack(a @ a), want, rtol=1e-10)
                np.testing.assert_allclose(np.from_dlpack(tessera.mm(a, a)), want, rtol=1e-10)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
