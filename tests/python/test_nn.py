"""tessera.nn from Python: Parameter, Module registration and naming,
train/eval, zero_grad, state_dict round trips through .npz (tessera.save /
tessera.load) and interop with numpy.savez / numpy.load, module.to, the
layers against NumPy references, and PyTorch's default initializations."""
import math

import pytest

import tessera
import tessera.nn as nn
import tessera.nn.functional as F

np = pytest.importorskip("numpy")
RNG = np.random.default_rng(5)


def N(t):
    t = t.detach().contiguous()
    if t.dtype == tessera.bfloat16:
        t = t.to(tessera.float32)
    return np.from_dlpack(t)


def T(a, dtype=tessera.float64, requires_grad=False):
    return tessera.tensor(np.asarray(a, dtype=np.float64), dtype=dtype, requires_grad=requires_grad)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 3))
        self.norm = nn.LayerNorm(3)
        self.scale = nn.Parameter(tessera.ones(1))
        self.register_buffer("steps", tessera.zeros(1, dtype=tessera.int64))
        self.not_a_param = tessera.ones(2)  # a plain tensor attribute is not registered

    def forward(self, x):
        return self.norm(self.body(x)) * self.scale


def test_parameter():
    p = nn.Parameter(tessera.zeros(2, 3))
    assert isinstance(p, tessera.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf and p.shape == (2, 3)
    assert "Parameter containing" in repr(p)
    q = nn.Parameter(tessera.zeros(2), requires_grad=False)
    assert not q.requires_grad
    # Shares storage with the data; ops give plain tensors.
    d = tessera.zeros(2)
    r = nn.Parameter(d)
    with tessera.no_grad():
        r.add_(1.0)
    assert N(d).tolist() == [1.0, 1.0]
    assert type(r * 2) is tessera.Tensor
    # In-place methods return the Parameter object itself.
    with tessera.no_grad():
        assert r.mul_(2.0) is r


def test_named_parameters_modules_children_and_buffers():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["scale", "body.0.weight", "body.0.bias", "body.3.weight", "body.3.bias", "norm.weight",
                     "norm.bias"]
    assert len(list(net.parameters())) == 7
    assert [n for n, _ in net.named_modules()] == ["", "body", "body.0", "body.1", "body.2", "body.3", "norm"]
    assert [type(m).__name__ for m in net.children()] == ["Sequential", "LayerNorm"]
    assert [n for n, _ in net.named_buffers()] == ["steps"]
    assert "not_a_param" not in dict(net.named_parameters())
    assert list(net.state_dict().keys()) == ["scale", "steps", "body.0.weight", "body.0.bias", "body.3.weight",
                                             "body.3.bias", "norm.weight", "norm.bias"]
    # Shared parameters are listed once.
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, lin)
    assert len(list(seq.parameters())) == 2
    assert [n for n, _ in seq.named_modules()] == ["", "0"]
    # Reassigning replaces the registration.
    net.scale = nn.Parameter(tessera.ones(1) * 2)
    assert N(dict(net.named_parameters())["scale"]).tolist() == [2.0]
    assert "Linear(in_features=4, out_features=8, bias=True)" in repr(net)


def test_train_eval_and_dropout():
    net = Net()
    assert net.training and all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    x = T(RNG.standard_normal((5, 4)), tessera.float32)
    with tessera.no_grad():
        np.testing.assert_array_equal(N(net(x)), N(net(x)))  # eval: deterministic
    net.train()
    assert all(m.training for m in net.modules())
    d = nn.Dropout(0.5)
    y = d(tessera.ones(1000))
    v = N(y)
    assert set(np.unique(v).tolist()) <= {0.0, 2.0}
    assert 350 < (v == 0).sum() < 650
    d.eval()
    np.testing.assert_array_equal(N(d(tessera.ones(10))), np.ones(10))
    with pytest.raises(ValueError):
        nn.Dropout(1.5)


def test_zero_grad():
    lin = nn.Linear(3, 2)
    lin(tessera.ones(4, 3)).sum().backward()
    assert lin.weight.grad is not None
    lin.zero_grad(set_to_none=False)
    assert N(lin.weight.grad).tolist() == [[0.0] * 3] * 2
    lin.zero_grad()
    assert lin.weight.grad is None and lin.bias.grad is None


def test_linear_against_numpy_and_init_bounds():
    tessera.manual_seed(0)
    lin = nn.Linear(50, 30)
    w, b = N(lin.weight), N(lin.bias)
    bound = 1 / math.sqrt(50)
    assert w.shape == (30, 50) and b.shape == (30,)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert np.abs(w).max() > 0.9 * bound  # uniform over the whole range, not a constant
    assert abs(w.mean()) < 0.2 * bound and abs(w.var() - bound ** 2 / 3) < 0.2 * bound ** 2 / 3
    assert lin.weight.dtype == tessera.float32
    x = RNG.standard_normal((7, 50)).astype(np.float32)
    np.testing.assert_allclose(N(lin(tessera.from_dlpack(x))), x @ w.T + b, rtol=1e-5, atol=1e-5)
    # Reproducible from the tessera generator.
    tessera.manual_seed(0)
    np.testing.assert_array_equal(N(nn.Linear(50, 30).weight), w)
    nb = nn.Linear(3, 2, bias=False)
    assert nb.bias is None and [n for n, _ in nb.named_parameters()] == ["weight"]
    # 3-d input (matmul path).
    x3 = RNG.standard_normal((2, 4, 50)).astype(np.float32)
    with tessera.no_grad():
        np.testing.assert_allclose(N(lin(tessera.from_dlpack(x3))), x3 @ w.T + b, rtol=1e-5, atol=1e-5)


def test_conv2d_module_against_numpy():
    tessera.manual_seed(1)
    conv = nn.Conv2d(2, 3, 3, padding=1, dtype=tessera.float64)
    w, b = N(conv.weight), N(conv.bias)
    assert w.shape == (3, 2, 3, 3)
    bound = 1 / math.sqrt(2 * 9)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    x = RNG.standard_normal((1, 2, 5, 5))
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = np.zeros((1, 3, 5, 5))
    for o in range(3):
        for i in range(5):
            for j in range(5):
                want[0, o, i, j] = (xp[0, :, i:i + 3, j:j + 3] * w[o]).sum() + b[o]
    with tessera.no_grad():
        np.testing.assert_allclose(N(conv(T(x))), want, rtol=1e-10, atol=1e-12)
    assert "Conv2d(2, 3, kernel_size=(3, 3)" in repr(conv)


def test_layer_norm_module_against_numpy():
    ln = nn.LayerNorm(6, dtype=tessera.float64)
    assert N(ln.weight).tolist() == [1.0] * 6 and N(ln.bias).tolist() == [0.0] * 6
    with tessera.no_grad():
        ln.weight.copy_(T(RNG.standard_normal(6)))
        ln.bias.copy_(T(RNG.standard_normal(6)))
    x = RNG.standard_normal((4, 6))
    mu = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    want = (x - mu) / np.sqrt(var + 1e-5) * N(ln.weight) + N(ln.bias)
    with tessera.no_grad():
        np.testing.assert_allclose(N(ln(T(x))), want, rtol=1e-10, atol=1e-10)
    assert nn.LayerNorm(3, elementwise_affine=False).weight is None


def test_functional_forwarding():
    x = RNG.standard_normal((4, 5))
    t = T(x)
    np.testing.assert_allclose(N(F.relu(t)), np.maximum(x, 0))
    lsm = x - x.max(1, keepdims=True) - np.log(np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True))
    np.testing.assert_allclose(N(F.log_softmax(t, 1)), lsm, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(N(F.softmax(t, 1)), np.exp(lsm), rtol=1e-12, atol=1e-12)
    y = np.array([0, 4, 2, 1])
    np.testing.assert_allclose(F.cross_entropy(t, tessera.tensor(y.tolist())).item(), -lsm[np.arange(4), y].mean(),
                               rtol=1e-12)
    np.testing.assert_allclose(F.nll_loss(T(lsm), tessera.tensor(y.tolist())).item(), -lsm[np.arange(4), y].mean(),
                               rtol=1e-12)
    z = RNG.standard_normal((4, 5))
    np.testing.assert_allclose(F.mse_loss(t, T(z)).item(), ((x - z) ** 2).mean(), rtol=1e-12)
    r = T(x)
    assert F.relu(r, inplace=True) is r


def test_state_dict_round_trip_through_npz(tmp_path):
    tessera.manual_seed(3)
    net = Net()
    net.steps.fill_(7)
    path = tmp_path / "model.npz"
    tessera.save(net.state_dict(), path)
    # numpy.load reads it: one array per key, same values, little-endian C order.
    with np.load(path) as z:
        assert sorted(z.files) == sorted(net.state_dict().keys())
        for k, v in net.state_dict().items():
            a = z[k]
            assert a.flags.c_contiguous and a.dtype.byteorder in ("<", "=", "|")
            np.testing.assert_array_equal(a, N(v))
        assert z["steps"].dtype == np.int64
    # Into a fresh model (different initial values).
    tessera.manual_seed(4)
    other = Net()
    assert not np.array_equal(N(other.body[0].weight), N(net.body[0].weight))
    missing, unexpected = other.load_state_dict(tessera.load(path))
    assert missing == [] and unexpected == []
    for (k, a), (_, b) in zip(net.state_dict().items(), other.state_dict().items()):
        np.testing.assert_array_equal(N(a), N(b))
    x = T(RNG.standard_normal((3, 4)), tessera.float32)
    net.eval()
    other.eval()
    with tessera.no_grad():
        np.testing.assert_array_equal(N(net(x)), N(other(x)))
    # Loading keeps the same Parameter objects (optimizers keep working).
    p = other.body[0].weight
    other.load_state_dict(net.state_dict())
    assert other.body[0].weight is p


def test_path_without_npz_suffix_is_kept(tmp_path):
    path = tmp_path / "weights.bin"
    tessera.save({"a": tessera.ones(2)}, str(path))
    assert path.exists() and not (tmp_path / "weights.bin.npz").exists()
    assert N(tessera.load(str(path))["a"]).tolist() == [1.0, 1.0]


def test_numpy_savez_file_loads_into_a_module(tmp_path):
    lin = nn.Linear(3, 2)
    w = RNG.standard_normal((2, 3)).astype(np.float32)
    b = RNG.standard_normal(2).astype(np.float32)
    path = tmp_path / "np.npz"
    np.savez(path, weight=w, bias=b)
    lin.load_state_dict(tessera.load(path))
    np.testing.assert_array_equal(N(lin.weight), w)
    np.testing.assert_array_equal(N(lin.bias), b)
    # Arrays straight from numpy.load work too, and big-endian ones are converted.
    path2 = tmp_path / "be.npz"
    np.savez(path2, weight=w.astype(">f4"), bias=b.astype(">f8"))
    lin2 = nn.Linear(3, 2)
    lin2.load_state_dict(tessera.load(path2))
    np.testing.assert_array_equal(N(lin2.weight), w)
    lin3 = nn.Linear(3, 2)
    with np.load(path) as z:
        lin3.load_state_dict({k: z[k] for k in z.files})
    np.testing.assert_array_equal(N(lin3.weight), w)


def test_bfloat16_saved_as_float32_and_cast_back(tmp_path):
    lin = nn.Linear(4, 3, dtype=tessera.bfloat16)
    assert lin.weight.dtype == tessera.bfloat16
    path = tmp_path / "bf16.npz"
    tessera.save(lin.state_dict(), path)
    with np.load(path) as z:
        assert z["weight"].dtype == np.float32
        np.testing.assert_array_equal(z["weight"], N(lin.weight))
    other = nn.Linear(4, 3, dtype=tessera.bfloat16)
    other.load_state_dict(tessera.load(path))
    assert other.weight.dtype == tessera.bfloat16
    np.testing.assert_array_equal(N(other.weight), N(lin.weight))


def test_load_state_dict_strict_and_shape_errors():
    lin = nn.Linear(3, 2)
    sd = lin.state_dict()
    with pytest.raises(KeyError, match="bias"):
        lin.load_state_dict({"weight": sd["weight"]})
    with pytest.raises(KeyError, match="extra"):
        lin.load_state_dict({**sd, "extra": tessera.ones(1)})
    missing, unexpected = lin.load_state_dict({"weight": sd["weight"], "extra": tessera.ones(1)}, strict=False)
    assert missing == ["bias"] and unexpected == ["extra"]
    with pytest.raises(ValueError, match="shape"):
        lin.load_state_dict({"weight": tessera.ones(2, 2), "bias": sd["bias"]})


def test_module_to_dtype():
    lin = nn.Linear(3, 2)
    w = N(lin.weight).copy()
    assert lin.to(tessera.float64) is lin
    assert lin.weight.dtype == tessera.float64 and isinstance(lin.weight, nn.Parameter)
    assert lin.weight.requires_grad
    np.testing.assert_allclose(N(lin.weight), w)
    lin.to("cpu")
    assert lin.weight.device.type == "cpu"


def test_custom_module_forward_and_backward():
    class Affine(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Parameter(tessera.tensor([2.0], dtype=tessera.float64))

        def forward(self, x):
            return x * self.a

    m = Affine()
    x = T([1.0, 2.0, 3.0])
    m(x).sum().backward()
    np.testing.assert_allclose(N(m.a.grad), [6.0])
    with pytest.raises(NotImplementedError):
        nn.Module()(x)


def test_save_load_file_objects_map_location_and_errors(tmp_path):
    import io
    buf = io.BytesIO()
    sd = {"w": tessera.arange(6.0).view(2, 3).t(), "flag": tessera.tensor([True, False])}  # a transposed view
    tessera.save(sd, buf)
    buf.seek(0)
    got = tessera.load(buf, map_location="cpu")
    assert list(got) == ["w", "flag"]
    np.testing.assert_array_equal(N(got["w"]), np.arange(6.0).reshape(2, 3).T)
    assert got["flag"].dtype == tessera.bool and N(got["flag"]).tolist() == [True, False]
    assert got["w"].device.type == "cpu"
    with pytest.raises(TypeError, match="mapping"):
        tessera.save([tessera.ones(1)], tmp_path / "x.npz")
    with pytest.raises(TypeError, match="keys must be str"):
        tessera.save({1: tessera.ones(1)}, tmp_path / "x.npz")
    with pytest.raises(TypeError, match="expected a Tensor"):
        tessera.save({"a": "text"}, tmp_path / "x.npz")


def test_module_parameters_receive_the_functional_gradients():
    # Each layer's parameters get the gradients of its functional form.
    import tessera.autograd as ag
    tessera.manual_seed(2)
    x4 = T(RNG.standard_normal((2, 2, 5, 5)))
    x2 = T(RNG.standard_normal((3, 6)))
    cases = [
        (nn.Conv2d(2, 3, 3, stride=2, padding=1, dtype=tessera.float64), x4,
         lambda m, x: F.conv2d(x, m.weight, m.bias, 2, 1)),
        (nn.LayerNorm(6, dtype=tessera.float64), x2, lambda m, x: F.layer_norm(x, [6], m.weight, m.bias)),
        (nn.Linear(6, 4, dtype=tessera.float64), x2, lambda m, x: F.linear(x, m.weight, m.bias)),
    ]
    for m, x, f in cases:
        with tessera.no_grad():  # non-trivial LayerNorm affine parameters
            for p in m.parameters():
                p.copy_(T(RNG.standard_normal(p.shape)))
        go = T(RNG.standard_normal(m(x).shape))
        want = ag.grad(f(m, x), list(m.parameters()), grad_outputs=go)
        m.zero_grad()
        m(x).backward(go)
        for p, w in zip(m.parameters(), want):
            np.testing.assert_allclose(N(p.grad), N(w), rtol=1e-12, atol=1e-12)
