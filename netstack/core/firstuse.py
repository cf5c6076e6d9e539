"""``FirstUse``: an attribute made the first time it is read.

Theory of operation: a non-data descriptor (``__get__`` only) on the class
makes the value with its factory the first time an instance's attribute is
read and stores it in the instance's ``__dict__``, which from then on answers
the lookup before the class is consulted: after the first read it costs what
any instance attribute costs, and assigning the attribute simply stores it.
The instance needs a ``__dict__`` (a slotted class lists ``"__dict__"`` in
its slots; CPython allocates the dictionary only when something is stored).

What it is for: kernel structures that every device or Net carries but most
never use in a functional lab — a noqueue qdisc's locks, the transmit lock of
an LLTX device's queue, its byte queue limits, a CPU's backlog queue. A lab of
10,000 hosts makes tens of thousands of each; made on first use they cost
nothing until a lab needs them, and behave the same when it does.

This is an emulator device, not a kernel one: it has no ``Kernel:`` line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

__all__ = ["FirstUse"]

T = TypeVar("T")


class FirstUse(Generic[T]):
    """``attr = FirstUse(factory)``: ``obj.attr`` is ``factory(obj)``, made once, on first read."""

    __slots__ = ("factory", "name")

    def __init__(self, factory: Callable[[Any], T]) -> None:
        self.factory = factory
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> FirstUse[T]: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...

    def __get__(self, obj: object | None, owner: type | None = None) -> T | FirstUse[T]:
        if obj is None:
            return self
        value = self.factory(obj)
        obj.__dict__[self.name] = value
        return value
