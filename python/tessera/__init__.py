"""Tessera: a tensor runtime whose device backends are plugins.

The bindings live in the extension ``tessera._C``; this package re-exports them.
"""
from tessera._C import *  # noqa: F401,F403
from tessera._C import __dlpack_version__  # noqa: F401

__all__ = [name for name in dir() if not name.startswith("_")]
