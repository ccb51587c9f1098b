"""tessera.save / tessera.load: state dicts as NumPy .npz files.

The format is shared with the C++ side (docs/python.md): an uncompressed
.npz (``numpy.savez``) with one member per key (dotted names such as
``"0.weight"``), each a little-endian, C-ordered array of the tensor's dtype;
bfloat16 tensors (which NumPy lacks) are stored as float32, and
``Module.load_state_dict`` casts them back. Tensors reach NumPy through DLPack
(no copy for a contiguous cpu tensor), and come back the same way.
"""
from __future__ import annotations

import os
from collections import OrderedDict

__all__ = ["save", "load"]


def _to_numpy(name, value):
    import numpy as np

    import tessera
    if isinstance(value, tessera.Tensor):
        t = value.detach()
        if t.dtype == tessera.bfloat16:
            t = t.to(tessera.float32)
        if str(t.device.type) != "cpu":
            t = t.cpu()
        a = np.from_dlpack(t)
    elif hasattr(value, "__dlpack__") or isinstance(value, np.ndarray):
        a = np.asarray(value)
    else:
        raise TypeError(f"save: the value of {name!r} is a {type(value).__name__}; expected a Tensor or an array")
    # The shared format: C order, little-endian.
    a = np.ascontiguousarray(a)
    if a.dtype.byteorder == ">" or (a.dtype.byteorder == "=" and np.little_endian is False):
        a = a.astype(a.dtype.newbyteorder("<"))
    return a


def save(obj, f):
    """Writes a mapping of str -> Tensor (a state_dict) to the path or binary
    file ``f`` as an uncompressed .npz. The path is used as given (no
    ``.npz`` suffix is added)."""
    import numpy as np
    if not hasattr(obj, "items"):
        raise TypeError(f"save: expected a mapping of names to tensors (a state_dict), got {type(obj).__name__}")
    arrays = OrderedDict()
    for k, v in obj.items():
        if not isinstance(k, str):
            raise TypeError(f"save: keys must be str, got {type(k).__name__}")
        arrays[k] = _to_numpy(k, v)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:  # a file object: numpy would append .npz to a path
            np.savez(fh, **arrays)
    else:
        np.savez(f, **arrays)


def load(f, map_location=None):
    """Reads a .npz written by ``save`` (or by ``numpy.savez``) into an ordered
    dict of str -> Tensor on the cpu, or on ``map_location`` (a device or a
    device string). The tensors own the loaded arrays' memory (DLPack, no copy
    on the cpu)."""
    import numpy as np

    import tessera
    out = OrderedDict()
    with np.load(f, allow_pickle=False) as z:
        for k in z.files:
            a = z[k]
            if not a.dtype.isnative:
                a = a.astype(a.dtype.newbyteorder("="))
            a = np.ascontiguousarray(a)
            t = tessera.from_dlpack(a)
            if map_location is not None:
                t = t.to(tessera.device(map_location) if isinstance(map_location, str) else map_location)
            out[k] = t
    return out
