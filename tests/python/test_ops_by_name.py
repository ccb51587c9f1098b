"""tessera.ops: any op by name, keywords from its schema (tessera::ops::call),
checked against the bound functions and NumPy."""
import pytest

import tessera

np = pytest.importorskip("numpy")


def test_ops_by_name_give_the_bound_functions_results():
    a = tessera.arange(6, dtype=tessera.float32).view([2, 3])
    b = tessera.full([2, 3], 2.0)
    np.testing.assert_array_equal(np.asarray(tessera.ops.add(a, b, alpha=3)), np.asarray(a) + 3 * np.asarray(b))
    np.testing.assert_array_equal(np.asarray(tessera.ops.sum(a, dim=[1], keepdim=True)),
                                  np.asarray(a).sum(axis=1, keepdims=True))
    np.testing.assert_array_equal(np.asarray(tessera.ops.sum(a, dim=0)), np.asarray(a).sum(axis=0))
    np.testing.assert_array_equal(np.asarray(tessera.ops.div(a, b, rounding_mode="floor")),
                                  np.floor(np.asarray(a) / 2))
    r = tessera.ops.arange(0, 5, dtype=tessera.float64)
    assert r.dtype == tessera.float64 and r.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_numbers_promote_and_overloads_and_two_results():
    i = tessera.arange(4, dtype=tessera.int32)
    r = tessera.ops.mul(i, 2.5)
    assert r.dtype == tessera.float32 and r.tolist() == [0.0, 2.5, 5.0, 7.5]
    m = tessera.tensor([[3.0, 1.0, 4.0], [1.0, 5.0, 9.0]])
    values, indices = tessera.ops.max.dim(m, 1)
    assert values.tolist() == [4.0, 9.0] and indices.tolist() == [2, 2]
    assert "max.dim(Tensor self, int dim" in tessera.ops.max.dim.schema


def test_in_place_and_gradients():
    x = tessera.zeros([3])
    y = tessera.ops.add_(x, tessera.ones([3]))
    assert y.data_ptr() == x.data_ptr() and x.tolist() == [1.0, 1.0, 1.0]
    w = tessera.tensor([1.0, 2.0, 3.0], requires_grad=True)
    tessera.ops.sum(tessera.ops.mul(w, w)).backward()
    assert w.grad.tolist() == [2.0, 4.0, 6.0]


def test_errors_name_the_op_and_the_argument():
    a = tessera.ones([2])
    with pytest.raises(AttributeError, match="no op or namespace named 'no_such_op'"):
        tessera.ops.no_such_op
    with pytest.raises(AttributeError, match="no op named 'max.nope'"):
        tessera.ops.max.nope
    with pytest.raises(TypeError, match="add has no argument 'beta'"):
        tessera.ops.add(a, a, beta=1)
    with pytest.raises(TypeError, match="missing argument 'other'"):
        tessera.ops.add(a)
    with pytest.raises(TypeError, match="argument 'dim' \\(int\\) got float"):
        tessera.ops.softmax(a, 1.5)
    with pytest.raises(TypeError, match="cannot be a dict"):
        tessera.ops.add(a, {})
    assert "add" in dir(tessera.ops) and "sum" in dir(tessera.ops)
