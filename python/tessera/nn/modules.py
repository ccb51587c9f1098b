"""Modules: Parameter, Module and the layers (PyTorch's names, defaults and
initializations; random initial values come from tessera's default generator,
so ``tessera.manual_seed`` makes them reproducible)."""
from __future__ import annotations

import math
from collections import OrderedDict

import tessera
from tessera._C import Tensor
from tessera.autograd import _zero_grads, no_grad
from tessera.nn import functional as F

__all__ = ["Parameter", "Module", "Linear", "Conv2d", "ReLU", "Sequential", "Dropout", "LayerNorm"]


class Parameter(Tensor):
    """A tensor that is a module's parameter: assigning one to a Module
    attribute registers it. It shares ``data``'s storage, is a leaf, and
    requires grad unless ``requires_grad=False``."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = tessera.empty(0)
        return Tensor._make_subclass(cls, data, requires_grad)

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


def _uniform_(t, bound):
    with no_grad():
        t.uniform_(-bound, bound)
    return t


class Module:
    """Base class of layers. Parameters, buffers and submodules assigned as
    attributes are registered in assignment order; their dotted names
    (``"0.weight"``) are the keys of ``state_dict``."""

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())

    # ---- registration ----

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError("Module.__init__() must be called before assigning attributes")
        for d in (self._parameters, self._buffers, self._modules):
            d.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        elif name in self.__dict__.get("_buffer_names", ()) and (value is None or isinstance(value, Tensor)):
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)
            return
        self.__dict__.pop(name, None)

    def __getattr__(self, name):
        d = self.__dict__
        for key in ("_parameters", "_buffers", "_modules"):
            if key in d and name in d[key]:
                return d[key][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for d in (self._parameters, self._buffers, self._modules):
            if name in d:
                del d[name]
                return
        object.__delattr__(self, name)

    def register_parameter(self, name, param):
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"register_parameter: {name} must be a Parameter or None, got {type(param).__name__}")
        self.__dict__.pop(name, None)
        self._parameters[name] = param

    def register_buffer(self, name, tensor):
        """A tensor in the state_dict that is not a parameter (running stats)."""
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer: {name} must be a Tensor or None, got {type(tensor).__name__}")
        self.__dict__.setdefault("_buffer_names", set()).add(name)
        self.__dict__.pop(name, None)
        self._buffers[name] = tensor

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: {name} must be a Module or None, got {type(module).__name__}")
        self._modules[name] = module

    # ---- traversal ----

    def named_modules(self, memo=None, prefix=""):
        """(name, module) for this module ('' ) and every submodule, depth first, each once."""
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            yield from m.named_modules(memo, prefix + ("." if prefix else "") + name)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, kind, prefix, recurse):
        seen = set()
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mod_prefix, m in mods:
            for name, v in getattr(m, kind).items():
                if v is None or id(v) in seen:
                    continue
                seen.add(id(v))
                yield mod_prefix + ("." if mod_prefix else "") + name, v

    def named_parameters(self, prefix="", recurse=True):
        """(dotted name, Parameter), each parameter once (shared ones under their first name)."""
        yield from self._named_members("_parameters", prefix, recurse)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True):
        yield from self._named_members("_buffers", prefix, recurse)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ---- modes and gradients ----

    def train(self, mode=True):
        """Sets training mode on this module and every submodule; returns self."""
        if not isinstance(mode, bool):
            raise ValueError("train: mode must be a bool")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Clears every parameter's .grad (to None, or to zeros in place)."""
        _zero_grads(self.parameters(), set_to_none)

    # ---- state ----

    def state_dict(self, prefix=""):
        """An ordered dict of dotted name -> tensor (parameters, then buffers,
        per module in registration order), detached and sharing storage."""
        out = OrderedDict()
        for mod_prefix, m in self.named_modules(prefix=prefix.rstrip(".")):
            p = mod_prefix + "." if mod_prefix else ""
            for name, v in m._parameters.items():
                if v is not None:
                    out[p + name] = v.detach()
            for name, v in m._buffers.items():
                if v is not None:
                    out[p + name] = v.detach()
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Copies values (tessera tensors, or arrays with __dlpack__ such as
        NumPy's) into the parameters and buffers in place, casting to each
        one's dtype and device (a float32 entry loads into a bfloat16
        parameter). With strict, missing or unexpected keys are a KeyError
        listing them; a shape mismatch is always a ValueError. Returns
        (missing_keys, unexpected_keys)."""
        own = OrderedDict()
        for mod_prefix, m in self.named_modules():
            p = mod_prefix + "." if mod_prefix else ""
            for d in (m._parameters, m._buffers):
                for name, v in d.items():
                    if v is not None:
                        own[p + name] = v
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        if strict and (missing or unexpected):
            raise KeyError(f"load_state_dict: missing keys {missing}, unexpected keys {unexpected}")
        with no_grad():
            for k, dst in own.items():
                if k not in state_dict:
                    continue
                src = state_dict[k]
                if not isinstance(src, Tensor):
                    src = tessera.from_dlpack(src)
                if tuple(src.shape) != tuple(dst.shape):
                    raise ValueError(f"load_state_dict: {k} has shape {tuple(src.shape)} in the state dict but "
                                     f"{tuple(dst.shape)} in the module")
                dst.copy_(src.to(dst.device, dst.dtype))
        return missing, unexpected

    def to(self, device=None, dtype=None):
        """Moves and/or casts every parameter and buffer (floating ones only
        for a dtype); returns self. Parameters are replaced by new Parameter
        objects, so build optimizers after moving the module."""
        if isinstance(device, type(tessera.float32)):
            device, dtype = None, device
        if isinstance(device, str):
            device = tessera.device(device)
        for m in self.modules():
            for name, p in list(m._parameters.items()):
                if p is None:
                    continue
                t = _convert(p, device, dtype)
                if t is not p:
                    m._parameters[name] = Parameter(t, requires_grad=p.requires_grad)
            for name, b in list(m._buffers.items()):
                if b is not None:
                    m._buffers[name] = _convert(b, device, dtype)
        return self

    def cpu(self):
        return self.to("cpu")

    # ---- calling ----

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must implement forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = []
        for name, m in self._modules.items():
            sub = repr(m).replace("\n", "\n  ")
            lines.append(f"({name}): {sub}")
        head = type(self).__name__ + "(" + self.extra_repr()
        if not lines:
            return head + ")"
        return head + "\n  " + "\n  ".join(lines) + "\n)"


def _convert(t, device, dtype):
    d = dtype if (dtype is not None and t.dtype.is_floating_point) else t.dtype
    dev = device if device is not None else t.device
    if d == t.dtype and str(dev) == str(t.device):
        return t
    with no_grad():
        return t.detach().to(dev, d)


def _factory(device, dtype):
    return {"device": device, "dtype": dtype if dtype is not None else tessera.float32}


class Linear(Module):
    """y = x W^T + b. W is (out_features, in_features); W and b start uniform
    in +-1/sqrt(in_features), as PyTorch's default."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        kw = _factory(device, dtype)
        self.weight = Parameter(tessera.empty(out_features, in_features, **kw))
        self.bias = Parameter(tessera.empty(out_features, **kw)) if bias else None
        if not bias:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        # kaiming_uniform_(a=sqrt(5)) reduces to a bound of 1/sqrt(fan_in).
        bound = 1.0 / math.sqrt(self.in_features) if self.in_features > 0 else 0.0
        _uniform_(self.weight, bound)
        if self.bias is not None:
            _uniform_(self.bias, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


class Conv2d(Module):
    """2-D convolution over (N, C, H, W); weight (out, in/groups, kh, kw) and
    bias start uniform in +-1/sqrt(fan_in), fan_in = in/groups * kh * kw."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 device=None, dtype=None):
        super().__init__()
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"Conv2d: in_channels ({in_channels}) and out_channels ({out_channels}) must be "
                             f"divisible by groups ({groups})")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _pair(kernel_size)
        self.stride = _pair(stride)
        self.padding = padding if isinstance(padding, str) else _pair(padding)
        self.dilation = _pair(dilation)
        self.groups = groups
        kw = _factory(device, dtype)
        self.weight = Parameter(tessera.empty(out_channels, in_channels // groups, *self.kernel_size, **kw))
        if bias:
            self.bias = Parameter(tessera.empty(out_channels, **kw))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        fan_in = (self.in_channels // self.groups) * self.kernel_size[0] * self.kernel_size[1]
        bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        _uniform_(self.weight, bound)
        if self.bias is not None:
            _uniform_(self.bias, bound)

    def forward(self, input):
        padding = self.padding if isinstance(self.padding, str) else list(self.padding)
        return F.conv2d(input, self.weight, self.bias, list(self.stride), padding, list(self.dilation), self.groups)

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0, 0):
            s += f", padding={self.padding}"
        if self.dilation != (1, 1):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class ReLU(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Dropout(Module):
    """Zeroes each element with probability p in training mode and scales the
    rest by 1/(1-p); the identity in eval mode."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be in [0, 1], got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class LayerNorm(Module):
    """Normalizes over the last len(normalized_shape) dims; weight starts at 1
    and bias at 0."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        kw = _factory(device, dtype)
        if elementwise_affine:
            self.weight = Parameter(tessera.ones(self.normalized_shape, **kw))
            if bias:
                self.bias = Parameter(tessera.zeros(self.normalized_shape, **kw))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):
        return F.layer_norm(input, list(self.normalized_shape), self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class Sequential(Module):
    """Calls its modules in order; indexable (an int gives a module, a slice a
    new Sequential), iterable, and named "0", "1", ... in state_dict."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, m in modules[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(modules):
                self.add_module(str(i), m)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return Sequential(OrderedDict(list(self._modules.items())[idx]))
        n = len(self)
        if not -n <= idx < n:
            raise IndexError(f"Sequential index {idx} out of range for {n} modules")
        return list(self._modules.values())[idx % n]

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def forward(self, input):
        for m in self._modules.values():
            input = m(input)
        return input
