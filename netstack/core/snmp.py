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
while ``include/net/snmp.h`` declares the MIB types once.

Kernel: include/net/snmp.h.
"""

from __future__ import annotations

import attrs

__all__ = ["Mib", "MibSnapshot"]


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
    """Base of the live MIB counter objects: slotted, so a typo raises."""

    __slots__ = ()
    NAME = ""

    def __init__(self) -> None:
        name: str
        for name in self.__slots__:
            setattr(self, name, 0)

    def snapshot(self) -> MibSnapshot:
        """A frozen copy of the counters."""
        slots: tuple[str, ...] = self.__slots__
        return MibSnapshot(self.NAME, tuple((name, getattr(self, name)) for name in slots))
