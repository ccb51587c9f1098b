"""Reverse-mode automatic differentiation (PyTorch's ``torch.autograd`` API).

The engine is the C++ one (docs/autograd.md); this module is the Python face:
``backward``, ``grad``, custom ``Function``\\ s, ``gradcheck`` /
``gradgradcheck`` and the grad-mode context managers, which also work as
decorators. Every mode is per thread, as in C++: entering ``no_grad()`` on
one thread leaves the others recording.
"""
from __future__ import annotations

import functools
import inspect
import threading

from tessera import _C
from tessera._C import Tensor

__all__ = [
    "backward", "grad", "Function", "FunctionCtx", "gradcheck", "gradgradcheck",
    "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
    "is_inference_mode_enabled", "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
]

is_grad_enabled = _C.is_grad_enabled
is_inference_mode_enabled = _C.is_inference_mode_enabled
is_anomaly_enabled = _C._is_anomaly_enabled


# ---- running backward ----

def _as_list(x):
    if x is None:
        return None
    if isinstance(x, Tensor):
        return [x]
    return list(x)


def _zero_grads(params, set_to_none=True):
    """Clears each tensor's .grad: to None, or to zeros in place (Module and
    Optimizer zero_grad)."""
    for p in params:
        if p.grad is None:
            continue
        if set_to_none:
            p.grad = None
        else:
            p.grad.zero_()


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulates into the leaves' ``.grad`` the gradient of
    ``sum(t * g for t, g in zip(tensors, grad_tensors))``.

    A ``None`` gradient stands for 1 and needs a one-element tensor.
    ``retain_graph`` defaults to ``create_graph``; ``inputs`` limits
    accumulation to those tensors. Misuse is a ``RuntimeError``.
    """
    _C._backward(_as_list(tensors), _as_list(grad_tensors), retain_graph, create_graph, _as_list(inputs))


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False):
    """Returns a tuple with the gradient of the outputs with respect to each
    input (not accumulated into ``.grad``). An unused input gives ``None`` with
    ``allow_unused=True``, else a ``RuntimeError``."""
    return _C._grad(_as_list(outputs), _as_list(inputs), _as_list(grad_outputs), retain_graph, create_graph,
                    allow_unused)


# ---- grad modes ----

class _Mode:
    """A context manager that is also a decorator. Each ``with`` makes a fresh
    C++ guard on the current thread and undoes it on exit, so one object may be
    entered from several threads or nested."""

    def _make_guard(self):
        raise NotImplementedError

    def _stack(self):
        # Per thread: one object may be entered on several threads at once.
        local = self.__dict__.get("_local")
        if local is None:
            local = self.__dict__.setdefault("_local", threading.local())
        if not hasattr(local, "guards"):
            local.guards = []
        return local.guards

    def __enter__(self):
        self._stack().append(self._make_guard())
        return self

    def __exit__(self, *exc):
        self._stack().pop().exit()
        return False

    def _fresh(self):
        return type(self)()

    def __call__(self, fn):
        if inspect.isgeneratorfunction(fn):
            # The mode holds while the generator runs, not while it is suspended.
            @functools.wraps(fn)
            def gen_wrapper(*args, **kwargs):
                gen = fn(*args, **kwargs)
                with self._fresh():
                    request = gen.send(None)
                while True:
                    try:
                        response = yield request
                    except GeneratorExit:
                        with self._fresh():
                            gen.close()
                        raise
                    except BaseException as e:  # noqa: BLE001 (forwarded into the generator)
                        with self._fresh():
                            request = gen.throw(e)
                        continue
                    try:
                        with self._fresh():
                            request = gen.send(response)
                    except StopIteration as stop:
                        return stop.value
            return gen_wrapper

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self._fresh():
                return fn(*args, **kwargs)
        return wrapper


def _bare_decorator(cls):
    """Lets ``@mode`` (without parentheses) decorate like ``@mode()``."""
    def __new__(klass, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], (bool, int)):
            return klass()(args[0])
        return object.__new__(klass)
    cls.__new__ = __new__
    return cls


@_bare_decorator
class no_grad(_Mode):
    """Ops in scope record no history (their results do not require grad)."""

    def __init__(self, orig_func=None):
        pass

    def _make_guard(self):
        return _C._ModeGuard.no_grad()


@_bare_decorator
class enable_grad(_Mode):
    """Re-enables recording inside ``no_grad`` (not inside inference mode)."""

    def __init__(self, orig_func=None):
        pass

    def _make_guard(self):
        return _C._ModeGuard.enable_grad()


@_bare_decorator
class inference_mode(_Mode):
    """Inference mode: no autograd work at all, and tensors made in scope are
    inference tensors (they cannot be saved for a later backward).
    ``inference_mode(False)`` is a no-op scope."""

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def _make_guard(self):
        return _C._ModeGuard.inference_mode(self.mode)

    def _fresh(self):
        return inference_mode(self.mode)


class set_grad_enabled:
    """Sets grad mode on this thread. Takes effect at once when called
    (``set_grad_enabled(False)`` as a statement turns recording off until
    changed again), and as a context manager or decorator restores the
    previous mode at the end."""

    def __init__(self, mode):
        self.mode = bool(mode)
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(self.mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False

    def __call__(self, fn):
        # Used as a decorator: undo the immediate effect of __init__ first.
        _C._set_grad_enabled(self._prev)
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)
        return wrapper


class set_detect_anomaly:
    """Turns anomaly detection on or off (this thread): a backward that produces
    NaN raises ``RuntimeError`` naming the forward op. A context manager and a
    decorator; takes effect when created, like ``set_grad_enabled``."""

    def __init__(self, mode, check_nan=True):
        self.mode = bool(mode)
        self._prev = _C._is_anomaly_enabled()
        _C._set_anomaly_enabled(self.mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _C._set_anomaly_enabled(self._prev)
        return False

    def __call__(self, fn):
        _C._set_anomaly_enabled(self._prev)
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_detect_anomaly(mode):
                return fn(*args, **kwargs)
        return wrapper


class detect_anomaly:
    """Anomaly detection for the scope (``set_detect_anomaly(True)`` as a scope)."""

    def __init__(self, check_nan=True):
        self._stack = []

    def __enter__(self):
        self._stack.append(_C._is_anomaly_enabled())
        _C._set_anomaly_enabled(True)
        return self

    def __exit__(self, *exc):
        _C._set_anomaly_enabled(self._stack.pop())
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly():
                return fn(*args, **kwargs)
        return wrapper


# ---- custom functions ----

class FunctionCtx:
    """The ``ctx`` a Function's forward and backward share. Besides the methods
    below it takes any attribute (``ctx.shape = x.shape``)."""

    def __init__(self, node, needs_input_grad):
        self._node = node
        self.needs_input_grad = needs_input_grad
        self._materialize = True

    def save_for_backward(self, *tensors):
        """Tensors backward needs (inputs or outputs of forward, or None).
        They are checked for in-place changes and freed after a backward
        without ``retain_graph``."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward: expected Tensors or None, got {type(t).__name__}")
        self._node.save_for_backward(list(tensors))

    @property
    def saved_tensors(self):
        """The saved tensors as a tuple; ``RuntimeError`` if one was modified in
        place since, or the graph was already freed by a backward."""
        return self._node.saved_tensors()

    def mark_non_differentiable(self, *tensors):
        """Outputs of forward that have no gradient (indices, masks)."""
        self._node.mark_non_differentiable(list(tensors))

    def set_materialize_grads(self, value):
        """With False, backward gets ``None`` instead of zeros for outputs that
        received no gradient."""
        self._materialize = bool(value)
        self._node.set_materialize_grads(bool(value))


class Function:
    """Base class of custom differentiable operations::

        class Cube(tessera.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x * x

            @staticmethod
            def backward(ctx, grad):
                x, = ctx.saved_tensors
                return grad * 3 * x * x

        y = Cube.apply(x)

    ``forward`` runs with grad mode off and may take any arguments; it returns
    a Tensor or a tuple (non-Tensor items pass through). ``backward`` gets one
    gradient per output and returns one per argument of forward (``None`` for
    non-Tensor arguments and for inputs without a gradient; trailing ``None``\\ s
    may be left out). With ``create_graph`` backward is itself recorded, so it
    is differentiable when written with tessera ops.
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("Function subclasses must implement a static forward(ctx, *args)")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("Function subclasses must implement a static backward(ctx, *grads)")

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Function is used through its class: call MyFunction.apply(...), not MyFunction()")

    @classmethod
    def apply(cls, *args):
        tensor_pos = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        inputs = [args[i] for i in tensor_pos]
        name = cls.__name__ + "Backward"
        nargs = len(args)
        ctx_box = []

        def run_backward(grads):
            ctx = ctx_box[0]
            result = cls.backward(ctx, *grads)
            if not isinstance(result, tuple):
                result = (result,)
            if len(result) > nargs:
                if any(r is not None for r in result[nargs:]):
                    raise RuntimeError(f"{name}: backward returned {len(result)} gradients, but forward took "
                                       f"{nargs} arguments")
                result = result[:nargs]
            out = []
            for pos in tensor_pos:
                g = result[pos] if pos < len(result) else None
                if g is not None and not isinstance(g, Tensor):
                    raise TypeError(f"{name}: backward returned a {type(g).__name__} as the gradient of "
                                    f"argument {pos}; expected a Tensor or None")
                out.append(g)
            return out

        node = _C._CustomNode(name, run_backward)
        try:
            node.prepare(inputs)
            needs = [False] * nargs
            for k, pos in enumerate(tensor_pos):
                needs[pos] = node.needs_input_grad(k)
            ctx = FunctionCtx(node, tuple(needs))
            ctx_box.append(ctx)
            with no_grad():
                result = cls.forward(ctx, *args)
            is_tuple = isinstance(result, tuple)
            items = list(result) if is_tuple else [result]
            out_pos = [i for i, r in enumerate(items) if isinstance(r, Tensor)]
            if not out_pos:
                raise TypeError(f"{cls.__name__}.forward must return a Tensor or a tuple containing Tensors")
            wired = node.wire(inputs, [items[i] for i in out_pos])
            for i, t in zip(out_pos, wired):
                items[i] = t
        finally:
            node.drop()  # from here the graph (through the outputs) owns the node
        return tuple(items) if is_tuple else items[0]


# ---- gradcheck ----

def _inputs_list(inputs):
    if isinstance(inputs, Tensor):
        return [inputs]
    out = list(inputs)
    for i, t in enumerate(out):
        if not isinstance(t, Tensor):
            raise TypeError(f"gradcheck: input {i} is a {type(t).__name__}; pass Tensors (bind other arguments "
                            f"in the function)")
    return out


def gradcheck(func, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, check_undefined_grad=False):
    """Checks the gradients autograd computes for ``func(*inputs)`` against
    central finite differences. Inputs that require grad must be float64.
    Returns True, or raises ``RuntimeError`` naming the first mismatch
    (returns False instead with ``raise_exception=False``)."""
    return _C._gradcheck(func, _inputs_list(inputs), eps, atol, rtol, raise_exception, check_undefined_grad)


def gradgradcheck(func, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, seed=0):
    """Checks second derivatives: gradcheck of the vector-Jacobian product of
    ``func`` with random float64 output gradients (``seed`` fixes them)."""
    return _C._gradgradcheck(func, _inputs_list(inputs), eps, atol, rtol, raise_exception, seed)
