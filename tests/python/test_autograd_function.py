"""Custom autograd Functions written in Python: forward/backward wiring, ctx
(saved tensors, needs_input_grad, non-differentiable outputs, materialized
grads, arbitrary attributes), error messages, gradcheck and gradgradcheck of
custom functions, and freeing (no reference cycle through the C++ node)."""
import gc
import weakref

import pytest

import tessera
import tessera.autograd as ag

np = pytest.importorskip("numpy")
RNG = np.random.default_rng(99)


def T(a, requires_grad=False):
    return tessera.tensor(np.asarray(a, dtype=np.float64), dtype=tessera.float64, requires_grad=requires_grad)


def N(t):
    return np.from_dlpack(t.detach().contiguous())


class Cube(ag.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x


class ScaleAdd(ag.Function):
    """a * k + b with a Python number k between the tensors."""

    @staticmethod
    def forward(ctx, a, k, b):
        ctx.k = k  # arbitrary attributes
        ctx.needs = ctx.needs_input_grad
        return a * k + b

    @staticmethod
    def backward(ctx, g):
        return g * ctx.k, None, g


def test_forward_and_backward():
    a = RNG.standard_normal(4)
    x = T(a, True)
    y = Cube.apply(x)
    np.testing.assert_allclose(N(y), a ** 3)
    assert y.requires_grad and y.grad_fn.name() == "CubeBackward"
    assert y.grad_fn.next_functions[0][0].name() == "AccumulateGrad"
    y.sum().backward()
    np.testing.assert_allclose(N(x.grad), 3 * a ** 2, rtol=1e-12)


def test_forward_runs_without_recording():
    seen = []

    class Probe(ag.Function):
        @staticmethod
        def forward(ctx, x):
            seen.append(tessera.is_grad_enabled())
            y = x * 2
            seen.append(y.requires_grad)
            return y

        @staticmethod
        def backward(ctx, g):
            return g * 2

    Probe.apply(T([1.0], True))
    assert seen == [False, False]


def test_non_tensor_arguments_needs_input_grad_and_attributes():
    a, b = T([1.0, 2.0], True), T([3.0, 4.0])
    y = ScaleAdd.apply(a, 5.0, b)
    np.testing.assert_allclose(N(y), [8.0, 14.0])
    y.sum().backward()
    np.testing.assert_allclose(N(a.grad), [5.0, 5.0])
    assert b.grad is None
    # needs_input_grad has one entry per forward argument.
    ctx_needs = []

    class Probe(ag.Function):
        @staticmethod
        def forward(ctx, a, k, b):
            ctx_needs.append(ctx.needs_input_grad)
            return a + b

        @staticmethod
        def backward(ctx, g):
            return g, None, g

    Probe.apply(a, 1, b)
    Probe.apply(T([1.0]), 1, T([1.0], True))
    with tessera.no_grad():
        Probe.apply(a, 1, b)
    assert ctx_needs == [(True, False, False), (False, False, True), (False, False, False)]


def test_no_input_requires_grad_gives_plain_outputs():
    y = Cube.apply(T([2.0]))
    assert not y.requires_grad and y.grad_fn is None
    np.testing.assert_allclose(N(y), [8.0])


def test_multiple_outputs_and_non_differentiable():
    class SplitArg(ag.Function):
        @staticmethod
        def forward(ctx, x):
            idx = tessera.argmax(x)
            ctx.mark_non_differentiable(idx)
            ctx.save_for_backward(x)
            return x * 2, x * x, idx

        @staticmethod
        def backward(ctx, g1, g2, gidx):
            (x,) = ctx.saved_tensors
            return g1 * 2 + g2 * 2 * x

    a = RNG.standard_normal(3)
    x = T(a, True)
    y1, y2, idx = SplitArg.apply(x)
    assert y1.requires_grad and y2.requires_grad and not idx.requires_grad
    assert y1.output_nr == 0 and y2.output_nr == 1
    assert y1.grad_fn is y2.grad_fn
    (y1.sum() + y2.sum()).backward()
    np.testing.assert_allclose(N(x.grad), 2 + 2 * a, rtol=1e-12)
    # Only one output used: the other's gradient is materialized as zeros.
    x.grad = None
    y1, y2, _ = SplitArg.apply(x)
    y2.sum().backward()
    np.testing.assert_allclose(N(x.grad), 2 * a, rtol=1e-12)


def test_set_materialize_grads_false_gives_none():
    got = []

    class Two(ag.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 1, x * 1

        @staticmethod
        def backward(ctx, g1, g2):
            got.append((g1 is None, g2 is None))
            return g1 if g1 is not None else g2

    x = T([1.0, 2.0], True)
    a, b = Two.apply(x)
    a.sum().backward()
    assert got == [(False, True)]


def test_returning_an_input_gives_a_new_alias_with_history():
    class Ident(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 7

    x = T([1.0], True)
    y = Ident.apply(x)
    assert x.is_leaf and x.grad_fn is None
    assert y.grad_fn.name() == "IdentBackward"
    y.sum().backward()
    np.testing.assert_allclose(N(x.grad), [7.0])


def test_backward_errors():
    class TooMany(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g, g

    class WrongShape(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return tessera.ones(5, dtype=tessera.float64)

    class WrongType(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return 3

    class Raises(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            raise ArithmeticError("from backward")

    x = T([1.0, 2.0], True)
    with pytest.raises(RuntimeError, match="TooManyBackward.*2 gradients"):
        TooMany.apply(x).sum().backward()
    with pytest.raises(RuntimeError, match="WrongShapeBackward.*shape"):
        WrongShape.apply(x).sum().backward()
    with pytest.raises(TypeError, match="WrongTypeBackward"):
        WrongType.apply(x).sum().backward()
    with pytest.raises(ArithmeticError, match="from backward"):
        Raises.apply(x).sum().backward()
    with pytest.raises(RuntimeError, match="apply"):
        Cube()


def test_saved_tensor_checks():
    x = T([1.0, 2.0], True)
    y = Cube.apply(x * 1)
    y.sum().backward()
    with pytest.raises(RuntimeError, match="retain_graph|second time"):
        y.sum().backward()

    h = x * 1
    y = Cube.apply(h)
    with tessera.no_grad():
        h.mul_(2.0)
    with pytest.raises(RuntimeError, match="version|modified"):
        y.sum().backward()


def test_saving_an_output():
    class Exp(ag.Function):
        @staticmethod
        def forward(ctx, x):
            r = x.exp()
            ctx.save_for_backward(r)
            return r

        @staticmethod
        def backward(ctx, g):
            (r,) = ctx.saved_tensors
            return g * r

    a = RNG.standard_normal(3)
    x = T(a, True)
    Exp.apply(x).sum().backward()
    np.testing.assert_allclose(N(x.grad), np.exp(a), rtol=1e-12)
    assert ag.gradcheck(Exp.apply, [T(a, True)])
    assert ag.gradgradcheck(Exp.apply, [T(a, True)])


def test_gradcheck_and_gradgradcheck_of_custom_functions():
    assert ag.gradcheck(Cube.apply, [T(RNG.standard_normal((2, 3)), True)])
    assert ag.gradgradcheck(Cube.apply, [T(RNG.standard_normal((2, 3)), True)])
    assert ag.gradcheck(lambda a, b: ScaleAdd.apply(a, 2.5, b),
                        [T(RNG.standard_normal(3), True), T(RNG.standard_normal(3), True)])


def test_double_backward_through_a_custom_function():
    a = RNG.standard_normal(3)
    x = T(a, True)
    (g,) = ag.grad(Cube.apply(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(N(g), 3 * a ** 2, rtol=1e-12)
    (gg,) = ag.grad(g.sum(), x)
    np.testing.assert_allclose(N(gg), 6 * a, rtol=1e-12)


def test_graph_and_ctx_are_freed():
    class Holder:
        pass

    probe = Holder()
    ref = weakref.ref(probe)

    class Keep(ag.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.probe = probe
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    y = Keep.apply(T([1.0], True))
    del probe
    gc.collect()
    assert ref() is not None  # the graph (through y) keeps ctx alive
    del y
    gc.collect()
    assert ref() is None
