"""SNMP MIB counters of the IPv4 stack, named as ``/proc/net/snmp`` names them.

Theory of operation: each MIB is a small slotted object whose attributes are
the counters (``mib.InReceives += 1`` on the data path, a plain slot write); ``snapshot()``
returns a frozen copy for ``statistics()`` and the ``nstat``/``netstat -s``
front ends (both types live in :mod:`netstack.core.snmp`). ``IcmpMsg``
counts per ICMP type (``InType3``, ``OutType0``…).

Kernel: include/uapi/linux/snmp.h, net/ipv4/proc.c.
"""

from __future__ import annotations

from collections import Counter
from typing import Final

from netstack.core.snmp import Mib, MibSnapshot

__all__ = [
    "ICMP_FIELDS",
    "IPEXT_FIELDS",
    "IP_FIELDS",
    "IcmpMib",
    "IcmpMsgMib",
    "IpExtMib",
    "IpMib",
]

IP_FIELDS: Final = (
    "Forwarding",
    "DefaultTTL",
    "InReceives",
    "InHdrErrors",
    "InAddrErrors",
    "ForwDatagrams",
    "InUnknownProtos",
    "InDiscards",
    "InDelivers",
    "OutRequests",
    "OutDiscards",
    "OutNoRoutes",
    "ReasmTimeout",
    "ReasmReqds",
    "ReasmOKs",
    "ReasmFails",
    "FragOKs",
    "FragFails",
    "FragCreates",
    "OutTransmits",
)
IPEXT_FIELDS: Final = (
    "InNoRoutes",
    "InTruncatedPkts",
    "InMcastPkts",
    "OutMcastPkts",
    "InBcastPkts",
    "OutBcastPkts",
    "InOctets",
    "OutOctets",
    "InMcastOctets",
    "OutMcastOctets",
    "InBcastOctets",
    "OutBcastOctets",
    "InCsumErrors",
    "InNoECTPkts",
    "InECT1Pkts",
    "InECT0Pkts",
    "InCEPkts",
    "ReasmOverlaps",
)
ICMP_FIELDS: Final = (
    "InMsgs",
    "InErrors",
    "InCsumErrors",
    "InDestUnreachs",
    "InTimeExcds",
    "InParmProbs",
    "InSrcQuenchs",
    "InRedirects",
    "InEchos",
    "InEchoReps",
    "InTimestamps",
    "InTimestampReps",
    "InAddrMasks",
    "InAddrMaskReps",
    "OutMsgs",
    "OutErrors",
    "OutRateLimitGlobal",
    "OutRateLimitHost",
    "OutDestUnreachs",
    "OutTimeExcds",
    "OutParmProbs",
    "OutSrcQuenchs",
    "OutRedirects",
    "OutEchos",
    "OutEchoReps",
    "OutTimestamps",
    "OutTimestampReps",
    "OutAddrMasks",
    "OutAddrMaskReps",
)
# ICMP type -> (In counter, Out counter) (net/ipv4/icmp.c icmp_pointers / snmp.h)
ICMP_TYPE_COUNTERS: Final = {
    0: ("InEchoReps", "OutEchoReps"),
    3: ("InDestUnreachs", "OutDestUnreachs"),
    4: ("InSrcQuenchs", "OutSrcQuenchs"),
    5: ("InRedirects", "OutRedirects"),
    8: ("InEchos", "OutEchos"),
    11: ("InTimeExcds", "OutTimeExcds"),
    12: ("InParmProbs", "OutParmProbs"),
    13: ("InTimestamps", "OutTimestamps"),
    14: ("InTimestampReps", "OutTimestampReps"),
    17: ("InAddrMasks", "OutAddrMasks"),
    18: ("InAddrMaskReps", "OutAddrMaskReps"),
}


class IpMib(Mib):
    """The ``Ip:`` lines of /proc/net/snmp (kernel: ``struct ipstats_mib``, shown by
    ``snmp4_ipstats_list``; the ``IpExt:`` half is :class:`IpExtMib`).

    The kernel counts both families in one ``ipstats_mib`` and shows it
    through a display list per family (net/ipv4/proc.c, net/ipv6/proc.c),
    whose names and order differ (``ForwDatagrams`` / ``Ip6OutForwDatagrams``):
    ``IP_FIELDS`` and ``IP6_FIELDS`` are those two lists.

    Twin: netstack.ipv6.snmp.Ip6Mib.
    """

    __slots__ = IP_FIELDS
    FIELDS = IP_FIELDS
    NAME = "Ip"
    Forwarding: int
    DefaultTTL: int
    InReceives: int
    InHdrErrors: int
    InAddrErrors: int
    ForwDatagrams: int
    InUnknownProtos: int
    InDiscards: int
    InDelivers: int
    OutRequests: int
    OutDiscards: int
    OutNoRoutes: int
    ReasmTimeout: int
    ReasmReqds: int
    ReasmOKs: int
    ReasmFails: int
    FragOKs: int
    FragFails: int
    FragCreates: int
    OutTransmits: int


class IpExtMib(Mib):
    """The ``IpExt:`` lines of /proc/net/netstat."""

    __slots__ = IPEXT_FIELDS
    FIELDS = IPEXT_FIELDS
    NAME = "IpExt"
    InNoRoutes: int
    InTruncatedPkts: int
    InMcastPkts: int
    OutMcastPkts: int
    InBcastPkts: int
    OutBcastPkts: int
    InOctets: int
    OutOctets: int
    InMcastOctets: int
    OutMcastOctets: int
    InBcastOctets: int
    OutBcastOctets: int
    InCsumErrors: int
    InNoECTPkts: int
    InECT1Pkts: int
    InECT0Pkts: int
    InCEPkts: int
    ReasmOverlaps: int


class IcmpMib(Mib):
    """The ``Icmp:`` lines of /proc/net/snmp."""

    __slots__ = ICMP_FIELDS
    FIELDS = ICMP_FIELDS
    NAME = "Icmp"
    InMsgs: int
    InErrors: int
    InCsumErrors: int
    InDestUnreachs: int
    InTimeExcds: int
    InParmProbs: int
    InSrcQuenchs: int
    InRedirects: int
    InEchos: int
    InEchoReps: int
    InTimestamps: int
    InTimestampReps: int
    InAddrMasks: int
    InAddrMaskReps: int
    OutMsgs: int
    OutErrors: int
    OutRateLimitGlobal: int
    OutRateLimitHost: int
    OutDestUnreachs: int
    OutTimeExcds: int
    OutParmProbs: int
    OutSrcQuenchs: int
    OutRedirects: int
    OutEchos: int
    OutEchoReps: int
    OutTimestamps: int
    OutTimestampReps: int
    OutAddrMasks: int
    OutAddrMaskReps: int


class IcmpMsgMib:
    """Per-type ICMP counters (``IcmpMsg: InType3 OutType0``)."""

    def __init__(self) -> None:
        self.in_types: Counter[int] = Counter()
        self.out_types: Counter[int] = Counter()

    def snapshot(self) -> MibSnapshot:
        values = [(f"InType{t}", n) for t, n in sorted(self.in_types.items())]
        values += [(f"OutType{t}", n) for t, n in sorted(self.out_types.items())]
        return MibSnapshot("IcmpMsg", tuple(values))
