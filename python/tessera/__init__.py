"""Tessera: a tensor runtime whose device backends are plugins.

The bindings live in the extension ``tessera._C``; this package re-exports them.
"""
from tessera import _C
from tessera._C import *  # noqa: F401,F403
from tessera._C import __dlpack_version__  # noqa: F401

# dtypes, with PyTorch's names and aliases. Bound here rather than in _C so
# that the extension's stub does not shadow the builtins bool/int/float.
bool = _C._dtypes["bool"]  # noqa: A001
uint8 = _C._dtypes["uint8"]
int8 = _C._dtypes["int8"]
int16 = _C._dtypes["int16"]
int32 = _C._dtypes["int32"]
int64 = _C._dtypes["int64"]
float16 = _C._dtypes["float16"]
bfloat16 = _C._dtypes["bfloat16"]
float32 = _C._dtypes["float32"]
float64 = _C._dtypes["float64"]
short = _C._dtypes["short"]
int = _C._dtypes["int"]  # noqa: A001
long = _C._dtypes["long"]
half = _C._dtypes["half"]
float = _C._dtypes["float"]  # noqa: A001
double = _C._dtypes["double"]

# Autograd, nn, optim and serialization: pure Python over _C.
from tessera import autograd  # noqa: E402
from tessera.autograd import (  # noqa: E402,F401
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from tessera import nn, optim  # noqa: E402,F401
from tessera.serialization import load, save  # noqa: E402,F401
from tessera.streams import stream  # noqa: E402,F401
from tessera import memory  # noqa: E402,F401
from tessera import cuda  # noqa: E402,F401
from tessera._ops_by_name import OpNamespace as _OpNamespace  # noqa: E402

ops = _OpNamespace()  # tessera.ops.add(x, y), tessera.ops.myplugin.fused_gelu(x)
from tessera.memory import empty_cache  # noqa: E402,F401

# `from tessera import *` must not shadow the builtins bool/int/float.
__all__ = [name for name in dir() if not name.startswith("_") and name not in ("bool", "int", "float")]
