"""``NetKey``: a typed slot for one subsystem's per-Net state (``net_generic``).

Theory of operation: the kernel gives each ``pernet_operations`` an ``id``
and finds a subsystem's per-namespace state with ``net_generic(net, id)``.
Here each subsystem owns one module-level key — ``TCP_NET: NetKey[Tcp] =
NetKey("tcp")`` — and reads its state back typed with :meth:`NetKey.find` /
:meth:`NetKey.get`, so core names no upper-layer class and no caller casts.
The state lives in ``net.proto_data`` under the key's name (visible by name
when debugging); only a key writes it. This module imports nothing of
netstack at run time, so any module of any layer may hold a key without an
import cycle (``core/net.py`` re-exports it).

Kernel: include/net/netns/generic.h (net_generic).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar, cast

from netstack.sites import kernel

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = ["NetKey"]

T = TypeVar("T")


class NetKey(Generic[T]):
    """A typed slot for one subsystem's per-Net state (kernel: ``net_generic()``)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    @kernel("include/net/netns/generic.h", "net_generic")
    def find(self, net: Net) -> T | None:
        """The state, or None before the subsystem's init ran on *net*.

        Kernel: include/net/netns/generic.h, net_generic().
        """
        return cast("T | None", net.proto_data.get(self.name))

    def get(self, net: Net) -> T:
        """The state; RuntimeError if the subsystem is not installed on *net*."""
        value = self.find(net)
        if value is None:
            raise RuntimeError(f"{self.name} is not installed on {net.name}")
        return value

    def set(self, net: Net, value: T) -> T:
        """Install *value* as the state (the subsystem's ``init`` net op)."""
        net.proto_data[self.name] = value
        return value

    def get_or_create(self, net: Net, factory: Callable[[], T]) -> T:
        """The state, created by *factory* on first use."""
        value = self.find(net)
        if value is None:
            value = self.set(net, factory())
        return value

    def __repr__(self) -> str:
        return f"<NetKey {self.name}>"
