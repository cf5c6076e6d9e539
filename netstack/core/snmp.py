"""SNMP MIB counter objects and their frozen snapshots, shared by every family.

Theory of operation: each MIB (``Ip``, ``Icmp6``, ``Tcp``, ``TcpExt``…) is a
small slotted subclass of :class:`Mib` whose ``__slots__`` are the counter
names as ``/proc/net/snmp``, ``snmp6`` and ``netstat`` print them; the data
path increments them as plain slot writes (``mib.InReceives += 1``) and a
misspelt name raises. :meth:`Mib.snapshot` freezes one into a
:class:`MibSnapshot` for ``statistics()`` and the ``nstat``/``netstat -s``
front ends, readable as ``snap.InReceives`` or ``snap["InReceives"]``. The
families (``ipv4/snmp.py``, ``ipv6/snmp.py``, ``tcp/mib.py``) own only their
field lists, as each kernel file owns its ``snmp4_*_list``/``snmp6_*_list``
while ``include/net/snmp.h`` declares the MIB types once — including
``struct udp_mib``, which IPv4 (``Udp``) and IPv6 (``Udp6``) share, so
:class:`UdpMib` is here too.

Kernel: include/net/snmp.h.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Final

import attrs

from netstack.core.slotcopy import attr_zeroer

__all__ = ["UDP_FIELDS", "Mib", "MibSnapshot", "UdpMib"]


@attrs.frozen
class MibSnapshot:
    """A frozen copy of one MIB: ``snap.InReceives`` or ``snap["InReceives"]``."""

    name: str
    values: tuple[tuple[str, int], ...]

    def __getattr__(self, key: str) -> int:
        for k, v in self.values:
            if k == key:
                return v
        raise AttributeError(key)

    def __getitem__(self, key: str) -> int:
        return int(self.__getattr__(key))

    def as_dict(self) -> dict[str, int]:
        return dict(self.values)


class Mib:
    """Base of the live MIB counter objects: slotted, so a typo raises.

    A subclass's ``__slots__`` and ``FIELDS`` are its field tuple (the counters,
    in their /proc order), and it annotates each as ``int`` for the type
    checker and for the mypyc build, where the annotations make it a native
    class (``scripts/build_compiled.py``; ``tests/core/test_snmp.py`` checks
    the two lists agree); a subclass that only renames a MIB (``Udp6`` is
    ``struct udp_mib`` again) declares ``__slots__ = ()`` and keeps its
    parent's counters.
    """

    __slots__ = ()
    NAME: ClassVar[str] = ""
    FIELDS: ClassVar[tuple[str, ...]] = ()

    _zero: ClassVar[Callable[[Any], None]] = attr_zeroer(())

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        slots = cls.__dict__.get("__slots__", ())
        if slots and slots != cls.FIELDS:  # one field tuple, stated twice: keep in step
            raise TypeError(f"{cls.__name__}: FIELDS is not its __slots__ tuple")
        cls._zero = attr_zeroer(cls.FIELDS)

    def __init__(self) -> None:
        type(self)._zero(self)  # every counter 0 (a generated function: a host makes dozens)

    def snapshot(self) -> MibSnapshot:
        """A frozen copy of the counters."""
        return MibSnapshot(self.NAME, tuple((name, getattr(self, name)) for name in self.FIELDS))


UDP_FIELDS: Final = (
    "InDatagrams",
    "NoPorts",
    "InErrors",
    "OutDatagrams",
    "RcvbufErrors",
    "SndbufErrors",
    "InCsumErrors",
    "IgnoredMulti",
    "MemErrors",
)


class UdpMib(Mib):
    """``struct udp_mib``: the ``Udp:`` lines of /proc/net/snmp (``Udp6`` of snmp6 too)."""

    __slots__ = UDP_FIELDS
    FIELDS = UDP_FIELDS
    NAME = "Udp"
    InDatagrams: int
    NoPorts: int
    InErrors: int
    OutDatagrams: int
    RcvbufErrors: int
    SndbufErrors: int
    InCsumErrors: int
    IgnoredMulti: int
    MemErrors: int
