"""Autograd from Python: Tensor's autograd properties and methods, backward and
grad against gradients computed by hand in NumPy, hooks, the safety checks
(retain_graph, version counter), grad modes as context managers, decorators
and per thread, anomaly mode, gradcheck/gradgradcheck on a few ops, and the
gradients of a small MLP against a NumPy backward written out by hand."""
import threading

import pytest

import tessera
import tessera.autograd as ag

np = pytest.importorskip("numpy")


def T(a, requires_grad=False, dtype=tessera.float64):
    return tessera.tensor(np.asarray(a, dtype=np.float64), dtype=dtype, requires_grad=requires_grad)


def N(t):
    return np.from_dlpack(t.detach().contiguous())


RNG = np.random.default_rng(1234)


# ---- properties ----

def test_requires_grad_property_and_factories():
    x = tessera.zeros(2, 3)
    assert x.requires_grad is False and x.is_leaf and x.grad_fn is None and x.grad is None
    x.requires_grad = True
    assert x.requires_grad and x.is_leaf
    x.requires_grad = False
    assert not x.requires_grad
    assert x.requires_grad_() is x and x.requires_grad
    assert x.requires_grad_(False) is x and not x.requires_grad
    for t in (tessera.tensor([1.0, 2.0], requires_grad=True), tessera.zeros(2, requires_grad=True),
              tessera.ones(2, requires_grad=True), tessera.empty(2, requires_grad=True),
              tessera.full((2,), 3.0, requires_grad=True), tessera.rand(2, requires_grad=True),
              tessera.randn(2, 2, requires_grad=True), tessera.arange(3.0, requires_grad=True),
              tessera.arange(0.0, 1.0, 0.25, requires_grad=True), tessera.zeros_like(x, requires_grad=True),
              tessera.ones_like(x, requires_grad=True), tessera.empty_like(x, requires_grad=True),
              tessera.full_like(x, 2.0, requires_grad=True), tessera.rand_like(x, requires_grad=True),
              tessera.randn_like(x, requires_grad=True)):
        assert t.requires_grad and t.is_leaf
    assert not tessera.rand(2).requires_grad and not tessera.randn(2, requires_grad=False).requires_grad
    # The generator keyword still works on both rand overloads.
    g1, g2 = tessera.Generator(7), tessera.Generator(7)
    a = tessera.rand(3, generator=g1)
    b = tessera.rand(3, generator=g2, requires_grad=True)
    assert N(a).tolist() == N(b).tolist()
    assert tessera.ones_like(x, dtype=tessera.float64).dtype == tessera.float64


def test_requires_grad_only_on_floating_dtypes():
    with pytest.raises(TypeError, match="floating"):
        tessera.zeros(2, dtype=tessera.int64, requires_grad=True)
    with pytest.raises(TypeError, match="floating"):
        tessera.arange(3, requires_grad=True)
    with pytest.raises(TypeError):
        tessera.tensor([1, 2]).requires_grad_()


def test_grad_fn_names_next_functions_and_output_nr():
    x = T([1.0, 2.0], True)
    y = T([3.0, 4.0], True)
    z = x * y
    w = z + x
    assert not w.is_leaf and w.requires_grad
    assert w.grad_fn.name().startswith("Add")
    assert z.grad_fn.name().startswith("Mul")
    assert w.output_nr == 0
    nf = w.grad_fn.next_functions
    assert isinstance(nf, tuple) and len(nf) == 2
    assert nf[0][0].name() == z.grad_fn.name() and nf[0][1] == 0
    assert nf[1][0].name() == "AccumulateGrad"
    # The same node is the same Python object while alive.
    assert nf[0][0] is z.grad_fn
    mul_next = z.grad_fn.next_functions
    assert [n.name() for n, _ in mul_next] == ["AccumulateGrad", "AccumulateGrad"]
    # An input that does not require grad has no edge: (None, 0).
    c = T([1.0, 1.0])
    assert (x * c).grad_fn.next_functions[1] == (None, 0)
    assert "Backward" in repr(w.grad_fn)


def test_grad_set_and_delete():
    x = T([1.0, 2.0], True)
    (x * x).sum().backward()
    np.testing.assert_allclose(N(x.grad), [2.0, 4.0])
    x.grad = T([5.0, 6.0])
    np.testing.assert_allclose(N(x.grad), [5.0, 6.0])
    del x.grad
    assert x.grad is None
    x.grad = T([1.0, 1.0])
    x.grad = None
    assert x.grad is None
    with pytest.raises(ValueError, match="match"):
        x.grad = T([1.0, 2.0, 3.0])
    with pytest.raises(ValueError):
        x.grad = tessera.zeros(2, dtype=tessera.float32)


def test_detach_detach_inplace_version_and_inference():
    x = T([1.0, 2.0], True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    d[0] = 10.0  # shares storage
    assert N(y)[0] == 10.0
    v0 = x._version
    with tessera.no_grad():
        x.add_(1.0)
    assert x._version == v0 + 1
    z = x * 3
    assert z.detach_() is z
    assert not z.requires_grad and z.grad_fn is None
    assert not x.is_inference()
    with tessera.inference_mode():
        i = tessera.ones(2)
    assert i.is_inference()


def test_backward_arguments_and_accumulation():
    a = RNG.standard_normal((3, 4))
    b = RNG.standard_normal((4, 2))
    x, w = T(a, True), T(b, True)
    y = x.mm(w)
    g = RNG.standard_normal((3, 2))
    y.backward(T(g))
    np.testing.assert_allclose(N(x.grad), g @ b.T, rtol=1e-12)
    np.testing.assert_allclose(N(w.grad), a.T @ g, rtol=1e-12)
    # A second backward accumulates.
    x.mm(w).backward(T(g))
    np.testing.assert_allclose(N(x.grad), 2 * g @ b.T, rtol=1e-12)
    # inputs= limits accumulation.
    x.grad = None
    w.grad = None
    x.mm(w).backward(T(g), inputs=[w])
    assert x.grad is None
    np.testing.assert_allclose(N(w.grad), a.T @ g, rtol=1e-12)
    x.mm(w).sum().backward(inputs=x)
    np.testing.assert_allclose(N(x.grad), np.ones((3, 2)) @ b.T, rtol=1e-12)
    # A non-leaf among inputs gets its .grad filled, and nothing below it runs.
    x.grad = None
    h = x.mm(w)
    (h * h).sum().backward(inputs=[h])
    np.testing.assert_allclose(N(h.grad), 2 * a @ b, rtol=1e-12)
    assert x.grad is None


def test_backward_needs_gradient_for_non_scalar():
    x = T([1.0, 2.0], True)
    with pytest.raises(RuntimeError, match="one-element"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="does not require grad"):
        T([1.0]).backward()


def test_autograd_backward_and_grad_functions():
    a = RNG.standard_normal(5)
    x = T(a, True)
    y1 = (x * x).sum()
    y2 = (x.exp()).sum()
    ag.backward([y1, y2])
    np.testing.assert_allclose(N(x.grad), 2 * a + np.exp(a), rtol=1e-12)
    x.grad = None
    y = x * x
    ag.backward(y, grad_tensors=T(np.full(5, 3.0)))
    np.testing.assert_allclose(N(x.grad), 6 * a, rtol=1e-12)
    # grad() returns instead of accumulating.
    x.grad = None
    z = T(RNG.standard_normal(5), True)
    (gx, gz) = ag.grad((x * z).sum(), [x, z])
    assert x.grad is None
    np.testing.assert_allclose(N(gx), N(z))
    np.testing.assert_allclose(N(gz), a)
    # allow_unused.
    u = T([1.0], True)
    with pytest.raises(RuntimeError, match="allow_unused"):
        ag.grad((x * 2).sum(), [x, u])
    gx, gu = ag.grad((x * 2).sum(), [x, u], allow_unused=True)
    assert gu is None
    np.testing.assert_allclose(N(gx), np.full(5, 2.0))
    # grad_outputs.
    (g,) = ag.grad(x * 3, x, grad_outputs=T(np.arange(5.0)))
    np.testing.assert_allclose(N(g), 3 * np.arange(5.0))


def test_double_backward_with_create_graph():
    a = RNG.standard_normal(4)
    x = T(a, True)
    y = (x * x * x).sum()
    (g,) = ag.grad(y, x, create_graph=True)
    assert g.requires_grad
    np.testing.assert_allclose(N(g), 3 * a * a, rtol=1e-12)
    (gg,) = ag.grad(g.sum(), x)
    np.testing.assert_allclose(N(gg), 6 * a, rtol=1e-12)
    # Through Tensor.backward too.
    x2 = T(a, True)
    (x2.exp() * x2).sum().backward(create_graph=True)
    first = x2.grad
    assert first.requires_grad
    np.testing.assert_allclose(N(first), np.exp(a) * (1 + a), rtol=1e-12)
    # A .grad with history refers back to its leaf (a cycle through C++, as in PyTorch): clear it.
    x2.grad = None


# ---- safety checks ----

def test_backward_twice_without_retain_graph_is_a_runtime_error():
    x = T([1.0, 2.0], True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()  # the first kept the graph
    np.testing.assert_allclose(N(x.grad), [4.0, 8.0])
    with pytest.raises(RuntimeError, match="retain_graph"):
        y.backward()


def test_modified_saved_tensor_is_a_runtime_error():
    x = T([1.0, 2.0], True)
    y = x * 2
    z = y * y  # saves y
    y.add_(1.0)
    with pytest.raises(RuntimeError, match="version|modified"):
        z.sum().backward()


def test_inplace_on_leaf_requiring_grad_is_an_error():
    x = T([1.0, 2.0], True)
    with pytest.raises(RuntimeError):
        x.add_(1.0)


def test_non_leaf_cannot_be_unmarked():
    x = T([1.0], True)
    y = x * 2
    with pytest.raises(RuntimeError, match="detach"):
        y.requires_grad = False


# ---- retain_grad and hooks ----

def test_retain_grad():
    a = RNG.standard_normal(3)
    x = T(a, True)
    y = x * 2
    assert not y.retains_grad
    y.retain_grad()
    assert y.retains_grad
    (y * y).sum().backward()
    np.testing.assert_allclose(N(y.grad), 2 * (2 * a), rtol=1e-12)
    z = x * 3
    (z * z).sum().backward()
    assert z.grad is None  # not retained
    with pytest.raises(RuntimeError):
        T([1.0]).retain_grad()


def test_hooks_order_replacement_and_removal():
    x = T([1.0, 2.0], True)
    y = x * 3
    calls = []

    def h1(g):
        calls.append(("h1", N(g).tolist()))

    def h2(g):
        calls.append(("h2", N(g).tolist()))
        return g * 10

    def h3(g):
        calls.append(("h3", N(g).tolist()))

    y.register_hook(h1)
    y.register_hook(h2)
    h = y.register_hook(h3)
    y.sum().backward(retain_graph=True)
    # Registration order; h3 sees h2's replacement; x's grad uses it.
    assert calls == [("h1", [1.0, 1.0]), ("h2", [1.0, 1.0]), ("h3", [10.0, 10.0])]
    np.testing.assert_allclose(N(x.grad), [30.0, 30.0])
    h.remove()
    h.remove()  # harmless twice
    calls.clear()
    x.grad = None
    y.sum().backward()
    assert [c[0] for c in calls] == ["h1", "h2"]


def test_leaf_hook_and_post_accumulate_hook():
    x = T([1.0, 2.0], True)
    seen = []
    x.register_hook(lambda g: g * 2)
    x.register_post_accumulate_grad_hook(lambda t: seen.append(N(t.grad).tolist()))
    (x * x).sum().backward()
    np.testing.assert_allclose(N(x.grad), [4.0, 8.0])
    assert seen == [[4.0, 8.0]]
    with pytest.raises(RuntimeError):
        (x * 2).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(RuntimeError):
        T([1.0]).register_hook(lambda g: g)


def test_hook_handle_as_context_manager():
    x = T([1.0], True)
    with x.register_hook(lambda g: g * 5):
        (x * 1).sum().backward()
    np.testing.assert_allclose(N(x.grad), [5.0])
    x.grad = None
    (x * 1).sum().backward()
    np.testing.assert_allclose(N(x.grad), [1.0])


def test_hook_errors_propagate():
    x = T([1.0], True)

    def bad(g):
        raise KeyError("from the hook")

    x.register_hook(bad)
    with pytest.raises(KeyError, match="from the hook"):
        (x * 2).sum().backward()
    y = T([1.0], True)
    y.register_hook(lambda g: 3)
    with pytest.raises(TypeError, match="hook"):
        (y * 2).sum().backward()


# ---- grad modes ----

def test_no_grad_enable_grad_as_context_managers():
    x = T([1.0], True)
    assert tessera.is_grad_enabled()
    with tessera.no_grad():
        assert not tessera.is_grad_enabled()
        y = x * 2
        with tessera.enable_grad():
            assert tessera.is_grad_enabled()
            z = x * 2
        assert not tessera.is_grad_enabled()
    assert tessera.is_grad_enabled()
    assert not y.requires_grad and z.requires_grad


def test_modes_as_decorators():
    x = T([1.0], True)

    @tessera.no_grad()
    def f():
        assert not tessera.is_grad_enabled()
        return x * 2

    @tessera.no_grad
    def f2():
        return x * 2

    @tessera.enable_grad()
    def g():
        return x * 2

    @tessera.inference_mode()
    def h():
        assert tessera.is_inference_mode_enabled()
        return tessera.ones(1)

    @tessera.set_grad_enabled(False)
    def k():
        return x * 2

    assert tessera.is_grad_enabled()  # defining k did not leave grad off
    assert not f().requires_grad and not f2().requires_grad and not k().requires_grad
    with tessera.no_grad():
        assert g().requires_grad
    assert h().is_inference() and not tessera.is_inference_mode_enabled()
    assert f.__name__ == "f"


def test_decorated_generator_has_the_mode_only_while_running():
    @tessera.no_grad()
    def gen():
        yield tessera.is_grad_enabled()
        yield tessera.is_grad_enabled()

    @tessera.inference_mode
    def bare():
        return tessera.is_inference_mode_enabled()

    g = gen()
    assert next(g) is False
    assert tessera.is_grad_enabled()  # suspended: the caller records
    assert next(g) is False
    with pytest.raises(StopIteration):
        next(g)
    assert tessera.is_grad_enabled()
    assert bare() and not tessera.is_inference_mode_enabled()


def test_one_mode_object_entered_on_several_threads():
    import time
    shared = tessera.no_grad()
    seen = []

    def work():
        for _ in range(50):
            with shared:
                time.sleep(0.0005)  # overlap the threads' scopes
                seen.append(tessera.is_grad_enabled())
            seen.append(tessera.is_grad_enabled())

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen.count(False) == 200 and seen.count(True) == 200
    assert tessera.is_grad_enabled()


def test_set_grad_enabled_statement_and_context():
    x = T([1.0], True)
    tessera.set_grad_enabled(False)
    try:
        assert not tessera.is_grad_enabled()
        assert not (x * 2).requires_grad
    finally:
        tessera.set_grad_enabled(True)
    assert tessera.is_grad_enabled()
    with tessera.set_grad_enabled(False):
        assert not tessera.is_grad_enabled()
    assert tessera.is_grad_enabled()


def test_inference_mode():
    x = T([1.0], True)
    with tessera.inference_mode():
        assert tessera.is_inference_mode_enabled() and not tessera.is_grad_enabled()
        y = x * 2
        assert not y.requires_grad and y.is_inference()
    with tessera.inference_mode(False):
        assert not tessera.is_inference_mode_enabled()
    # An inference tensor cannot be saved for backward outside inference mode.
    with pytest.raises(RuntimeError, match="inference"):
        (x * y).sum().backward()


def test_modes_are_per_thread():
    results = {}
    inside = threading.Event()
    release = threading.Event()

    def worker():
        with tessera.no_grad():
            inside.set()
            release.wait(10)
            results["worker_inside"] = tessera.is_grad_enabled()
        results["worker_after"] = tessera.is_grad_enabled()

    t = threading.Thread(target=worker)
    t.start()
    inside.wait(10)
    # The worker's no_grad does not affect this thread.
    results["main"] = tessera.is_grad_enabled()
    x = T([1.0], True)
    results["main_records"] = (x * 2).requires_grad
    release.set()
    t.join()
    assert results == {"worker_inside": False, "worker_after": True, "main": True, "main_records": True}

    # A new thread starts with grad enabled even when its creator is in no_grad.
    seen = []
    with tessera.no_grad():
        th = threading.Thread(target=lambda: seen.append(tessera.is_grad_enabled()))
        th.start()
        th.join()
    assert seen == [True]


def test_backward_on_threads_with_python_hooks():
    # Backward releases the GIL; hooks called from it take it back.
    errors = []

    def work(seed):
        try:
            r = np.random.default_rng(seed)
            a = r.standard_normal((20, 20))
            x = T(a, True)
            hits = []
            x.register_hook(lambda g: hits.append(1))
            for _ in range(20):
                x.mm(x).sum().backward()
            expect = 20 * (np.ones((20, 20)) @ a.T + a.T @ np.ones((20, 20)))
            np.testing.assert_allclose(N(x.grad), expect, rtol=1e-10)
            assert len(hits) == 20
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_anomaly_mode():
    assert not ag.is_anomaly_enabled()
    with ag.detect_anomaly():
        assert ag.is_anomaly_enabled()
        x = T([0.0], True)
        y = (x / x).sum()  # NaN in the gradient
        with pytest.raises(RuntimeError, match="NaN"):
            y.backward()
    assert not ag.is_anomaly_enabled()
    with ag.set_detect_anomaly(True):
        assert ag.is_anomaly_enabled()
    assert not ag.is_anomaly_enabled()

    @ag.detect_anomaly()
    def f():
        return ag.is_anomaly_enabled()

    assert f() and not ag.is_anomaly_enabled()


# ---- gradcheck ----

def _rand(*shape, requires_grad=True):
    return T(RNG.standard_normal(shape), requires_grad)


@pytest.mark.parametrize("fn,n", [
    (lambda a, b: a * b + a, 2),
    (lambda a, b: a / (b * b + 1.0), 2),
    (lambda a, b: (a - b).exp(), 2),
    (lambda a, b: a.mm(b.t()), 2),
    (lambda a, b: (a * b).sum(), 2),
    (lambda a, b: (a + b).relu(), 2),
])
def test_gradcheck_and_gradgradcheck_from_python(fn, n):
    inputs = [_rand(3, 3) for _ in range(n)]
    assert ag.gradcheck(fn, inputs)
    assert ag.gradgradcheck(fn, inputs)


def test_gradcheck_reports_a_wrong_gradient():
    class Wrong(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, g):
            return g * 3.0  # should be 2x

    x = _rand(3)
    with pytest.raises(RuntimeError, match="mismatch"):
        ag.gradcheck(Wrong.apply, [x])
    assert ag.gradcheck(Wrong.apply, [x], raise_exception=False) is False
    with pytest.raises(RuntimeError, match="float64"):
        ag.gradcheck(lambda a: a * 2, [tessera.ones(2, requires_grad=True)])
    with pytest.raises(TypeError):
        ag.gradcheck(lambda a: a, [1.0])


def test_gradcheck_function_errors_propagate():
    def boom(a):
        raise ValueError("inside the function")

    with pytest.raises(ValueError, match="inside the function"):
        ag.gradcheck(boom, [_rand(2)])


# ---- a small MLP against a NumPy backward written by hand ----

def _log_softmax_np(z):
    m = z.max(axis=1, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=1, keepdims=True))


def _cross_entropy_composed(z, target):
    """Mean cross entropy from pointwise ops and sums (log-softmax written
    out): the same check through the engine without cross_entropy's formula."""
    with tessera.no_grad():
        m = z.max(1, keepdim=True).values
        onehot = (tessera.arange(z.shape[1]).unsqueeze(0) == target.unsqueeze(1)).to(z.dtype)
    s = z - m
    logp = s - s.exp().sum(1, keepdim=True).log()
    return -(onehot * logp).sum() / z.shape[0]


@pytest.mark.parametrize("loss_name", ["cross_entropy", "composed"])
def test_mlp_gradients_match_numpy_by_hand(loss_name):
    """linear -> relu -> linear -> cross_entropy (mean): every parameter's
    gradient against the chain rule written out in NumPy."""
    r = np.random.default_rng(7)
    n, d, h, c = 8, 5, 7, 3
    X = r.standard_normal((n, d))
    y = r.integers(0, c, n)
    W1, b1 = r.standard_normal((h, d)), r.standard_normal(h)
    W2, b2 = r.standard_normal((c, h)), r.standard_normal(c)

    # Forward and backward in NumPy.
    z1 = X @ W1.T + b1
    a1 = np.maximum(z1, 0)
    z2 = a1 @ W2.T + b2
    logp = _log_softmax_np(z2)
    loss = -logp[np.arange(n), y].mean()
    dz2 = np.exp(logp)
    dz2[np.arange(n), y] -= 1
    dz2 /= n
    dW2 = dz2.T @ a1
    db2 = dz2.sum(axis=0)
    da1 = dz2 @ W2
    dz1 = da1 * (z1 > 0)
    dW1 = dz1.T @ X
    db1 = dz1.sum(axis=0)

    F = tessera.nn.functional
    loss_fn = F.cross_entropy if loss_name == "cross_entropy" else _cross_entropy_composed
    tw1, tb1, tw2, tb2 = T(W1, True), T(b1, True), T(W2, True), T(b2, True)
    out = F.linear(F.relu(F.linear(T(X), tw1, tb1)), tw2, tb2)
    L = loss_fn(out, tessera.tensor(y.tolist()))
    np.testing.assert_allclose(L.item(), loss, rtol=1e-12)
    L.backward()
    for got, want in ((tw1, dW1), (tb1, db1), (tw2, dW2), (tb2, db2)):
        np.testing.assert_allclose(N(got.grad), want, rtol=1e-10, atol=1e-12)

    # The same through nn modules.
    model = tessera.nn.Sequential(tessera.nn.Linear(d, h, dtype=tessera.float64), tessera.nn.ReLU(),
                                  tessera.nn.Linear(h, c, dtype=tessera.float64))
    model.load_state_dict({"0.weight": W1, "0.bias": b1, "2.weight": W2, "2.bias": b2})
    loss_fn(model(T(X)), tessera.tensor(y.tolist())).backward()
    np.testing.assert_allclose(N(model[0].weight.grad), dW1, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(N(model[2].bias.grad), db2, rtol=1e-10, atol=1e-12)


# ---- gradcheck of the nn ops from Python ----

F = tessera.nn.functional
TARGET = tessera.tensor([0, 2, 1])


@pytest.mark.parametrize("name,fn,shapes", [
    ("linear", lambda x, w, b: F.linear(x, w, b), [(3, 4), (2, 4), (2,)]),
    ("relu", lambda x: F.relu(x), [(3, 4)]),
    ("softmax", lambda x: F.softmax(x, 1), [(3, 4)]),
    ("log_softmax", lambda x: F.log_softmax(x, 1), [(3, 4)]),
    ("cross_entropy", lambda x: F.cross_entropy(x, TARGET), [(3, 4)]),
    ("nll_loss", lambda x: F.nll_loss(x, TARGET), [(3, 4)]),
    ("mse_loss", lambda x, y: F.mse_loss(x, y), [(3, 4), (3, 4)]),
    ("layer_norm", lambda x, w, b: F.layer_norm(x, [4], w, b), [(3, 4), (4,), (4,)]),
    ("conv2d", lambda x, w, b: F.conv2d(x, w, b, padding=1), [(1, 2, 4, 4), (3, 2, 3, 3), (3,)]),
])
def test_gradcheck_nn_functional(name, fn, shapes):
    inputs = [_rand(*s) for s in shapes]
    assert ag.gradcheck(fn, inputs)
    if name != "conv2d":  # second order on the pointwise-like ops and the losses
        assert ag.gradgradcheck(fn, inputs)


def test_setitem_and_inplace_view_writes_differentiate():
    # y[0] = f(x) through __setitem__: the write becomes part of y's history.
    a = RNG.standard_normal(3)
    x = T(a, True)
    y = x * 1
    y[0] = x[1] * 5
    y.sum().backward()
    # y = [5 x1, x1, x2]
    np.testing.assert_allclose(N(x.grad), [0.0, 6.0, 1.0])
    z = tessera.zeros(2, 3, dtype=tessera.float64)
    z.narrow(1, 0, 1).copy_((x[:2] * x[:2]).unsqueeze(1))
    x.grad = None
    z.sum().backward()
    np.testing.assert_allclose(N(x.grad), [2 * a[0], 2 * a[1], 0.0], rtol=1e-12)
