"""``attr_copier``: copy a fixed set of attributes from one object to another, fast.

Theory of operation: a device's ``ipv4_devconf``/``ipv6_devconf`` starts as a
copy of ``conf.default`` (the kernel's ``memcpy`` of ``struct ipv4_devconf``
in ``inetdev_init``). A loop of ``setattr(dst, f, getattr(src, f))`` over
seventy fields was a tenth of building a large lab; a function with one plain
assignment per field, generated once per field list, does the same copy in a
fifth of the time. ``attr_zeroer`` is the same for zeroing a set of counters
(a MIB object, a device's stats: a host makes a few dozen of them).
``instance_allocator`` gives ``object.__new__`` to code that writes a
constructor out (one store a slot, each with its final value: the unreachable
route a bystander allocates for every ARP request it overhears, a bridge's
flood clones), or None for a class that refuses it, and ``slot_names`` lists
the slots such a copy must set.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["attr_copier", "attr_zeroer", "instance_allocator", "slot_names"]


def attr_copier(fields: Iterable[str]) -> Callable[[Any, Any], None]:
    """``copy(dst, src)`` that sets ``dst.f = src.f`` for each of *fields*."""
    names = list(fields)
    if not all(name.isidentifier() for name in names):
        raise ValueError(f"not attribute names: {names!r}")
    body = "".join(f"    dst.{name} = src.{name}\n" for name in names) or "    pass\n"
    namespace: dict[str, Any] = {}
    exec(f"def copy(dst, src):\n{body}", namespace)
    copy: Callable[[Any, Any], None] = namespace["copy"]
    return copy


def attr_zeroer(fields: Iterable[str]) -> Callable[[Any], None]:
    """``zero(obj)`` that sets ``obj.f = 0`` for each of *fields*."""
    names = list(fields)
    if not all(name.isidentifier() for name in names):
        raise ValueError(f"not attribute names: {names!r}")
    body = "".join(f"    obj.{name} = 0\n" for name in names) or "    pass\n"
    namespace: dict[str, Any] = {}
    exec(f"def zero(obj):\n{body}", namespace)
    zero: Callable[[Any], None] = namespace["zero"]
    return zero


def slot_names(cls: type) -> list[str]:
    """Every slot of *cls* and its bases (not ``__dict__`` or ``__weakref__``)."""
    names: list[str] = []
    for klass in reversed(cls.__mro__):
        slots = klass.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and name not in names:
                names.append(name)
    return names


def instance_allocator(cls: type) -> Callable[[type], Any] | None:
    """``object.__new__``, to allocate a *cls* without ``__init__`` (its caller then
    sets every slot); None for a class that refuses it (a native class of the
    mypyc build), whose callers construct it the ordinary way."""
    try:
        object.__new__(cls)
    except TypeError:
        return None
    new: Callable[[type], Any] = object.__new__
    return new
