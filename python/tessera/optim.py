"""Optimizers (PyTorch's ``torch.optim`` update rules): SGD, Adam, AdamW.

``step()`` updates the parameters in place under ``no_grad`` from their
``.grad`` (parameters whose grad is None are skipped); ``zero_grad()`` clears
the gradients. Parameters may be given as an iterable of tensors or as a list
of dicts (parameter groups with their own options).
"""
from __future__ import annotations

import math

from tessera._C import Tensor
from tessera.autograd import _zero_grads, no_grad

__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]


class Optimizer:
    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
        self.state = {}  # id(param) -> dict
        self.param_groups = []
        if isinstance(params, Tensor):
            raise TypeError("params must be an iterable of Tensors or of dicts, got a Tensor")
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, group):
        group = dict(group)
        params = group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer parameters must be Tensors, got {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("optimizer parameters must be leaf tensors (not results of ops)")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError("a parameter appears in more than one parameter group")
        group["params"] = params
        for k, v in self.defaults.items():
            group.setdefault(k, v)
        self.param_groups.append(group)

    def zero_grad(self, set_to_none=True):
        """Sets each parameter's .grad to None (default) or to zeros in place."""
        _zero_grads((p for g in self.param_groups for p in g["params"]), set_to_none)

    def _state(self, p):
        return self.state.setdefault(id(p), {})

    def step(self, closure=None):
        loss = None
        if closure is not None:
            from tessera.autograd import enable_grad
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        self._update(p, p.grad, group)
        return loss

    def _update(self, p, grad, group):
        raise NotImplementedError


def _check(name, value, low=0.0):
    if not value >= low:
        raise ValueError(f"invalid {name}: {value}")


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum (heavy-ball or
    Nesterov), dampening and L2 weight decay::

        g = grad + weight_decay * p
        buf = g (first step), else momentum * buf + (1 - dampening) * g
        g = g + momentum * buf (nesterov), else buf
        p -= lr * g
    """

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
                 maximize=False):
        _check("lr", lr)
        _check("momentum", momentum)
        _check("weight_decay", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize))

    def _update(self, p, grad, group):
        g = -grad if group["maximize"] else grad
        if group["weight_decay"] != 0:
            g = g.add(p, alpha=group["weight_decay"])
        momentum = group["momentum"]
        if momentum != 0:
            state = self._state(p)
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = g.detach().clone()
                state["momentum_buffer"] = buf
            else:
                buf.mul_(momentum).add_(g, alpha=1 - group["dampening"])
            g = g.add(buf, alpha=momentum) if group["nesterov"] else buf
        p.add_(g, alpha=-group["lr"])


class Adam(Optimizer):
    """Adam (Kingma & Ba) with bias correction, optional L2 weight decay added
    to the gradient, and AMSGrad::

        g = grad + weight_decay * p
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        v_max = max(v_max, v) (amsgrad)
        p -= lr / (1 - beta1^t) * m / (sqrt(v or v_max) / sqrt(1 - beta2^t) + eps)
    """

    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False,
                 maximize=False):
        _check("lr", lr)
        _check("eps", eps)
        _check("weight_decay", weight_decay)
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"invalid betas: {betas}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize))

    def _update(self, p, grad, group):
        lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        g = -grad if group["maximize"] else grad
        if wd != 0:
            if self._decoupled:
                p.mul_(1 - lr * wd)
            else:
                g = g.add(p, alpha=wd)
        state = self._state(p)
        if not state:
            state["step"] = 0
            state["exp_avg"] = _zeros_like(p)
            state["exp_avg_sq"] = _zeros_like(p)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = _zeros_like(p)
        state["step"] += 1
        t = state["step"]
        m, v = state["exp_avg"], state["exp_avg_sq"]
        m.mul_(beta1).add_(g, alpha=1 - beta1)
        v.mul_(beta2).add_(g * g, alpha=1 - beta2)
        if group["amsgrad"]:
            vmax = state["max_exp_avg_sq"]
            vmax.copy_(vmax.maximum(v))
            v = vmax
        bias_correction1 = 1 - beta1 ** t
        bias_correction2_sqrt = math.sqrt(1 - beta2 ** t)
        denom = (v.sqrt() / bias_correction2_sqrt).add_(eps)
        p.add_(m / denom, alpha=-lr / bias_correction1)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): p *= 1 - lr *
    weight_decay before the Adam step, instead of adding it to the gradient."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False,
                 maximize=False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize)


def _zeros_like(p):
    import tessera
    return tessera.zeros_like(p.detach())
