"""tessera.optim against the update rules computed in NumPy (PyTorch's
formulas written out independently here), over several steps with changing
gradients: SGD (plain, momentum, dampening, Nesterov, weight decay,
maximize), Adam (weight decay, AMSGrad), AdamW; zero_grad; parameter groups;
steps leave no autograd history."""
import math

import pytest

import tessera
import tessera.nn as nn
from tessera import optim

np = pytest.importorskip("numpy")
RNG = np.random.default_rng(11)
STEPS = 5


def N(t):
    return np.from_dlpack(t.detach().contiguous())


def run(opt_factory, numpy_update, shape=(3, 4)):
    """Runs STEPS optimizer steps with gradients drawn here, and the NumPy
    reference `numpy_update(p, g, state) -> p` on the same gradients."""
    p0 = RNG.standard_normal(shape)
    grads = [RNG.standard_normal(shape) for _ in range(STEPS)]
    p = nn.Parameter(tessera.tensor(p0.tolist(), dtype=tessera.float64))
    opt = opt_factory([p])
    ref = p0.copy()
    state = {}
    for k, g in enumerate(grads):
        p.grad = tessera.tensor(g.tolist(), dtype=tessera.float64)
        opt.step()
        ref = numpy_update(ref, g, state)
        np.testing.assert_allclose(N(p), ref, rtol=1e-12, atol=1e-14, err_msg=f"step {k + 1}")
    assert p.is_leaf and p.grad_fn is None and p.requires_grad
    return p, opt


def sgd_ref(lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False):
    def update(p, g, state):
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * p
        if momentum:
            if "buf" not in state:
                state["buf"] = g.copy()
            else:
                state["buf"] = momentum * state["buf"] + (1 - dampening) * g
            g = g + momentum * state["buf"] if nesterov else state["buf"]
        return p - lr * g
    return update


def adam_ref(lr, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.0, amsgrad=False, decoupled=False):
    def update(p, g, state):
        if weight_decay:
            if decoupled:
                p = p * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * p
        t = state["t"] = state.get("t", 0) + 1
        m = state["m"] = b1 * state.get("m", 0.0) + (1 - b1) * g
        v = state["v"] = b2 * state.get("v", 0.0) + (1 - b2) * g * g
        if amsgrad:
            v = state["vmax"] = np.maximum(state.get("vmax", 0.0), v)
        mhat_scale = lr / (1 - b1 ** t)
        denom = np.sqrt(v) / math.sqrt(1 - b2 ** t) + eps
        return p - mhat_scale * m / denom
    return update


@pytest.mark.parametrize("kw", [
    dict(lr=0.1),
    dict(lr=0.05, momentum=0.9),
    dict(lr=0.05, momentum=0.9, dampening=0.3),
    dict(lr=0.05, momentum=0.8, nesterov=True),
    dict(lr=0.1, weight_decay=0.01),
    dict(lr=0.05, momentum=0.9, weight_decay=0.1, nesterov=True),
    dict(lr=0.1, maximize=True),
])
def test_sgd(kw):
    run(lambda ps: optim.SGD(ps, **kw), sgd_ref(**kw))


@pytest.mark.parametrize("kw", [
    dict(lr=0.01),
    dict(lr=0.1, betas=(0.8, 0.99)),
    dict(lr=0.01, weight_decay=0.1),
    dict(lr=0.01, amsgrad=True),
    dict(lr=0.01, eps=1e-3),
])
def test_adam(kw):
    ref_kw = dict(lr=kw["lr"], weight_decay=kw.get("weight_decay", 0.0), amsgrad=kw.get("amsgrad", False),
                  eps=kw.get("eps", 1e-8))
    if "betas" in kw:
        ref_kw["b1"], ref_kw["b2"] = kw["betas"]
    run(lambda ps: optim.Adam(ps, **kw), adam_ref(**ref_kw))


@pytest.mark.parametrize("kw", [dict(lr=0.01), dict(lr=0.01, weight_decay=0.1), dict(lr=0.05, amsgrad=True)])
def test_adamw(kw):
    wd = kw.get("weight_decay", 1e-2)  # AdamW's default decay
    run(lambda ps: optim.AdamW(ps, **kw),
        adam_ref(lr=kw["lr"], weight_decay=wd, amsgrad=kw.get("amsgrad", False), decoupled=True))


def test_parameters_without_grad_are_skipped():
    a = nn.Parameter(tessera.ones(2, dtype=tessera.float64))
    b = nn.Parameter(tessera.ones(2, dtype=tessera.float64))
    opt = optim.SGD([a, b], lr=0.5, momentum=0.9)
    a.grad = tessera.ones(2, dtype=tessera.float64)
    opt.step()
    assert N(a).tolist() == [0.5, 0.5] and N(b).tolist() == [1.0, 1.0]


def test_zero_grad():
    lin = nn.Linear(3, 2)
    opt = optim.SGD(lin.parameters(), lr=0.1)
    lin(tessera.ones(1, 3)).sum().backward()
    assert lin.weight.grad is not None
    opt.zero_grad(set_to_none=False)
    assert N(lin.weight.grad).tolist() == [[0.0] * 3] * 2
    opt.zero_grad()
    assert lin.weight.grad is None and lin.bias.grad is None


def test_param_groups_have_their_own_options():
    a = nn.Parameter(tessera.ones(1, dtype=tessera.float64))
    b = nn.Parameter(tessera.ones(1, dtype=tessera.float64))
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[1]["lr"] == 0.5
    a.grad = tessera.ones(1, dtype=tessera.float64)
    b.grad = tessera.ones(1, dtype=tessera.float64)
    opt.step()
    np.testing.assert_allclose(N(a), [0.9])
    np.testing.assert_allclose(N(b), [0.5])


def test_bad_arguments():
    p = nn.Parameter(tessera.ones(1))
    with pytest.raises(ValueError):
        optim.SGD([p], lr=-1.0)
    with pytest.raises(ValueError):
        optim.SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ValueError):
        optim.Adam([p], betas=(1.0, 0.9))
    with pytest.raises(ValueError):
        optim.Adam([])
    with pytest.raises(TypeError):
        optim.SGD(p, lr=0.1)
    with pytest.raises(ValueError, match="leaf"):
        optim.SGD([p * 2], lr=0.1)


def test_step_with_closure_and_training_reduces_loss():
    # A least-squares fit: the loss must fall under every optimizer.
    X = RNG.standard_normal((32, 3))
    y = X @ np.array([1.5, -2.0, 0.5]) + 0.3
    for make in (lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), lambda ps: optim.Adam(ps, lr=0.05),
                 lambda ps: optim.AdamW(ps, lr=0.05)):
        tessera.manual_seed(0)
        lin = nn.Linear(3, 1, dtype=tessera.float64)
        opt = make(lin.parameters())
        xt = tessera.tensor(X.tolist(), dtype=tessera.float64)
        yt = tessera.tensor(y.reshape(-1, 1).tolist(), dtype=tessera.float64)

        def closure():
            opt.zero_grad()
            d = lin(xt) - yt
            loss = (d * d).sum() / 32.0
            loss.backward()
            return loss

        first = opt.step(closure).item()
        for _ in range(100):
            last = opt.step(closure).item()
        assert last < 0.05 * first
