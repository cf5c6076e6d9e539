"""The cost sites of timed mode: which Python function mirrors which kernel function.

Theory of operation: every netstack function that mirrors a kernel function
says so in its docstring's ``Kernel:`` line (``Kernel: net/core/dev.c,
__dev_queue_xmit().``). :func:`kernel_sites` walks the data-path packages and
maps each such function's code object to the first kernel function its line
names; timed mode charges that function's cost from the cost table on every
call. The composition root builds the map because only it may import every
layer.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from types import CodeType, FunctionType
from typing import Final

import netstack

__all__ = ["kernel_name", "kernel_sites"]

_FN: Final = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\(")
# layers whose code never runs on the data path
_SKIP: Final = ("netstack.cli", "netstack.testing", "netstack.experiments", "netstack.userspace")


def kernel_name(doc: str | None) -> str | None:
    """The first ``name()`` on the ``Kernel:`` line of *doc*, if any."""
    if not doc:
        return None
    idx = doc.rfind("Kernel:")
    if idx < 0:
        return None
    m = _FN.search(doc, idx)
    return m.group(1) if m else None


def _functions(obj: object) -> list[FunctionType]:
    out: list[FunctionType] = []
    if isinstance(obj, FunctionType):
        out.append(obj)
    elif isinstance(obj, staticmethod | classmethod):
        f = obj.__func__
        if isinstance(f, FunctionType):
            out.append(f)
    elif isinstance(obj, property):
        out.extend(f for f in (obj.fget, obj.fset) if isinstance(f, FunctionType))
    return out


def kernel_sites() -> dict[CodeType, str]:
    """Code object → kernel function name, for every mirrored function."""
    sites: dict[CodeType, str] = {}
    for info in pkgutil.walk_packages(netstack.__path__, "netstack."):
        if info.name.startswith(_SKIP):
            continue
        module = importlib.import_module(info.name)
        for value in list(vars(module).values()):
            candidates = _functions(value)
            if isinstance(value, type) and value.__module__ == module.__name__:
                for attr in vars(value).values():
                    candidates.extend(_functions(attr))
            for fn in candidates:
                if fn.__module__ != module.__name__:
                    continue
                name = kernel_name(fn.__doc__)
                if name is not None:
                    sites[fn.__code__] = name
    return sites
