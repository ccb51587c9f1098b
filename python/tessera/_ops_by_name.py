"""``tessera.ops`` (an OpNamespace): every op by name, with its schema's argument names as keywords.

    tessera.ops.add(x, y, alpha=2)          # the op "add"
    tessera.ops.max.dim(x, 1)               # the overload "max.dim"
    tessera.ops.myplugin.fused_gelu(x)      # a plugin's op "myplugin::fused_gelu"
    tessera.ops.add.schema                  # "add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"

Arguments bind as the schema says (positional, then keywords, then defaults);
a number where the schema wants a Tensor promotes like a Python number. An op
returns a Tensor, or a tuple for ops with several results. Unknown names raise
AttributeError; binding errors (TypeError) name the op and the argument.
Names are looked up when used, so ops a plugin adds later are found too.
"""
from tessera import _C


def _schemas():
    return _C._op_schemas()


class OpPacket:
    """An op and its overloads: call it for the op itself, ``.name`` for "op.name"."""

    def __init__(self, name):
        self._name = name

    def __call__(self, *args, **kwargs):
        return _C._call_op(self._name, args, kwargs)

    @property
    def schema(self):
        return _schemas().get(self._name)

    def __getattr__(self, overload):
        if overload.startswith("__"):
            raise AttributeError(overload)
        full = f"{self._name}.{overload}"
        if full in _schemas():
            return OpPacket(full)
        raise AttributeError(f"tessera.ops: no op named '{full}'")

    def __repr__(self):
        return f"<tessera op {self.schema or self._name}>"


class OpNamespace:
    """Ops by name; a plugin's ops under its name (``myplugin::op`` is ``.myplugin.op``)."""

    def __init__(self, prefix=""):
        self._prefix = prefix

    def _full(self, name):
        return f"{self._prefix}::{name}" if self._prefix else name

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        full = self._full(name)
        if _C._has_op(full):
            return OpPacket(full)
        schemas = _schemas()
        if full in schemas or any(n.startswith(full + ".") for n in schemas):
            return OpPacket(full)
        if any(n.startswith(full + "::") for n in schemas):
            return OpNamespace(full)
        raise AttributeError(f"tessera.ops: no op or namespace named '{full}'")

    def __dir__(self):
        names = set()
        for n in _schemas():
            if self._prefix:
                if not n.startswith(self._prefix + "::"):
                    continue
                n = n[len(self._prefix) + 2 :]
            names.add(n.split("::")[0].split(".")[0])
        return sorted(names)

    def __repr__(self):
        return f"<tessera ops namespace '{self._prefix}'>" if self._prefix else "<tessera.ops>"
