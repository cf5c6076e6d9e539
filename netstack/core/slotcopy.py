"""``attr_copier``: copy a fixed set of attributes from one object to another, fast.

Theory of operation: a device's ``ipv4_devconf``/``ipv6_devconf`` starts as a
copy of ``conf.default`` (the kernel's ``memcpy`` of ``struct ipv4_devconf``
in ``inetdev_init``). A loop of ``setattr(dst, f, getattr(src, f))`` over
seventy fields was a tenth of building a large lab; a function with one plain
assignment per field, generated once per field list, does the same copy in a
fifth of the time. ``attr_zeroer`` is the same for zeroing a set of counters
(a MIB object, a device's stats: a host makes a few dozen of them).
``instance_maker`` builds a slotted object whose fields are mostly the same
every time (the unreachable route a bystander allocates for every ARP request
it overhears) without running the class's ``__init__``: one store per slot,
the constant ones compiled in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["attr_copier", "attr_zeroer", "instance_allocator", "instance_maker", "slot_names"]


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


_LITERAL_TYPES: tuple[type, ...] = (bool, int, float, str, type(None))


def slot_names(cls: type) -> list[str]:
    """Every slot of *cls* and its bases (not ``__dict__`` or ``__weakref__``)."""
    names: list[str] = []
    for klass in reversed(cls.__mro__):
        slots = klass.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and name not in names:
                names.append(name)
    return names


def instance_maker(
    cls: type, params: Iterable[str], constants: dict[str, Any]
) -> Callable[..., Any] | None:
    """``make(*params)``: a new *cls* with each of *params* and *constants* set, no ``__init__``.

    *params* and *constants* together must name every slot of *cls* once (so
    nothing is left unset, as ``__init__`` would leave nothing). Returns None
    for a class that ``object.__new__`` refuses (a native class of the mypyc
    build): the caller then constructs it the ordinary way.

    Raises:
        ValueError: a slot missing or named twice, or a name not a slot.
    """
    try:
        object.__new__(cls)
    except TypeError:
        # asked first: mypyc's native classes need not keep complete __slots__
        return None
    names = list(params)
    slots = slot_names(cls)
    given = names + list(constants)
    if sorted(given) != sorted(slots) or len(set(given)) != len(given):
        raise ValueError(
            f"{cls.__name__}: fields {sorted(given)} are not its slots {sorted(slots)}"
        )
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    lines = [f"    o.{name} = {name}\n" for name in names]
    for name, value in constants.items():
        if type(value) in _LITERAL_TYPES:
            lines.append(f"    o.{name} = {value!r}\n")
        else:  # a function or object: a global of the generated function
            namespace[f"_c_{name}"] = value
            lines.append(f"    o.{name} = _c_{name}\n")
    exec(
        f"def make({', '.join(names)}):\n    o = _new(_cls)\n{''.join(lines)}    return o\n",
        namespace,
    )
    make: Callable[..., Any] = namespace["make"]
    return make


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
