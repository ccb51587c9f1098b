"""Ops a plugin defines through register_op (ABI 1.3), from Python: the C99 test
plugin tests/plugins/opdef_plugin.c (path in TSRTEST_OPDEF) defines opdef::cube,
opdef::axpy, opdef::sumsq, opdef::minmax and opdef::diagonal. Checked against
NumPy, finite differences (gradcheck, gradgradcheck) and closed forms."""
import os

import pytest

import tessera

np = pytest.importorskip("numpy")

PLUGIN = os.environ.get("TSRTEST_OPDEF")
pytestmark = pytest.mark.skipif(not PLUGIN, reason="TSRTEST_OPDEF (the test plugin's path) is not set: run through ctest")


@pytest.fixture(scope="module", autouse=True)
def opdef():
    if not any(p["name"] == "opdef" for p in _plugins()):
        tessera.load_plugin(PLUGIN)
    yield


def _plugins():
    info = tessera.info()
    return [{"name": line.split()[1]} for line in info.splitlines() if line.startswith("plugin ")]


def rand(*shape, dtype=tessera.float64, seed=0):
    values = np.random.default_rng(seed).standard_normal(shape)
    return tessera.from_dlpack(values.astype(np.float64)).to(dtype)


def test_ops_are_reached_by_namespace_with_schema_keywords():
    x = rand(2, 3)
    a = np.asarray(x)
    np.testing.assert_allclose(np.asarray(tessera.ops.opdef.cube(x)), a ** 3, rtol=1e-12)
    y = rand(3, seed=1)
    np.testing.assert_allclose(np.asarray(tessera.ops.opdef.axpy(x, y, alpha=-2)), a - 2 * np.asarray(y), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(tessera.ops.opdef.sumsq(x, dim=[1], keepdim=True)),
                               (a * a).sum(axis=1, keepdims=True), rtol=1e-12)
    lo, hi = tessera.ops.opdef.minmax(x)
    np.testing.assert_array_equal(np.asarray(lo), a.min(axis=1))
    np.testing.assert_array_equal(np.asarray(hi), a.max(axis=1))
    assert tessera.ops.opdef.axpy.schema == "opdef::axpy(Tensor x, Tensor y, *, Scalar alpha=1) -> Tensor"
    assert "cube" in dir(tessera.ops.opdef)
    with pytest.raises(TypeError, match="opdef::axpy: argument 'alpha' is keyword-only"):
        tessera.ops.opdef.axpy(x, y, 2.0)


def test_on_the_plugins_device_and_on_meta():
    x = rand(4)
    d = x.to("opdef")
    r = tessera.ops.opdef.cube(d)
    assert r.device.type == "opdef"
    np.testing.assert_allclose(np.asarray(r.cpu()), np.asarray(x) ** 3, rtol=1e-12)
    m = tessera.ops.opdef.axpy(tessera.empty([4, 1], device="meta"), tessera.empty([3], device="meta", dtype=tessera.float64))
    assert m.shape == (4, 3) and m.dtype == tessera.float64 and m.device.type == "meta"


def test_gradients_through_the_plugins_derivatives():
    x = rand(2, 3).requires_grad_()
    y = rand(3, seed=2).requires_grad_()
    assert tessera.autograd.gradcheck(lambda a: tessera.ops.opdef.cube(a), (x,))
    assert tessera.autograd.gradgradcheck(lambda a: tessera.ops.opdef.cube(a), (x,))
    assert tessera.autograd.gradcheck(lambda a, b: tessera.ops.opdef.axpy(a, b, alpha=0.5), (x, y))
    z = tessera.ops.opdef.cube(x).sum()
    z.backward()
    np.testing.assert_allclose(np.asarray(x.grad), 3 * np.asarray(x.detach()) ** 2, rtol=1e-12)
    assert not tessera.ops.opdef.sumsq(x).requires_grad


def test_in_place_out_and_view_forms():
    x = rand(3)
    want = np.asarray(x) ** 3
    r = tessera.ops.opdef.cube_(x)
    assert r.data_ptr() == x.data_ptr()
    np.testing.assert_allclose(np.asarray(x), want, rtol=1e-12)
    out = tessera.empty([3], dtype=tessera.float64)
    res = tessera.ops.opdef.cube(rand(3, seed=3), out=out)
    assert res.data_ptr() == out.data_ptr()
    np.testing.assert_allclose(np.asarray(out), np.asarray(rand(3, seed=3)) ** 3, rtol=1e-12)
    m = tessera.arange(9, dtype=tessera.float64).view([3, 3])
    diag = tessera.ops.opdef.diagonal(m)
    diag.fill_(0.0)
    assert m.tolist() == [[0.0, 1.0, 2.0], [3.0, 0.0, 5.0], [6.0, 7.0, 0.0]]


def test_errors_name_the_op_and_plugin():
    with pytest.raises(ValueError, match="opdef::minmax: shape function of plugin 'opdef'.*last dim"):
        tessera.ops.opdef.minmax(tessera.tensor(1.0, dtype=tessera.float64))
    with pytest.raises(NotImplementedError, match="opdef::cube"):
        tessera.ops.opdef.cube(tessera.arange(3, dtype=tessera.int32))
    with pytest.raises(AttributeError, match="opdef::nope"):
        tessera.ops.opdef.nope


def test_unload_retires_the_ops_and_reload_revives_them():
    x = rand(3)
    kept = tessera.ops.opdef.cube(x.to("opdef"))
    tessera.unload_plugin("opdef")
    with pytest.raises(RuntimeError, match="opdef::cube: this op belongs to plugin 'opdef', which was unloaded"):
        tessera.ops.opdef.cube(x)
    np.testing.assert_allclose(np.asarray(kept.cpu()), np.asarray(x) ** 3, rtol=1e-12)
    tessera.load_plugin(PLUGIN)
    np.testing.assert_allclose(np.asarray(tessera.ops.opdef.cube(x)), np.asarray(x) ** 3, rtol=1e-12)
