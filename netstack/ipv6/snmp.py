"""SNMP MIB counters of the IPv6 stack, named as ``/proc/net/snmp6`` names them.

Theory of operation: as for IPv4 (a slotted object per MIB, plain slot
increments on the data path, frozen snapshots for ``statistics()``), with
the names of ``/proc/net/snmp6``: ``Ip6InReceives`` is the ``InReceives``
counter of the ``Ip6`` MIB, ``Icmp6InEchos`` the ``InEchos`` counter of
``Icmp6``, ``Udp6InDatagrams`` the ``InDatagrams`` of ``Udp6``. Per-type
ICMPv6 counters appear both by name (``Icmp6InNeighborSolicits``, for every
type RFC 2466 names) and, when non-zero, by number (``Icmp6InType135``).

Kernel: net/ipv6/proc.c (snmp6_ipstats_list, snmp6_icmp6_list,
icmp6type2name, snmp6_udp6_list), include/uapi/linux/snmp.h.
"""

from __future__ import annotations

from collections import Counter
from typing import Final

from netstack.core.snmp import UDP_FIELDS, Mib, UdpMib
from netstack.sites import kernel

__all__ = [
    "ICMP6_FIELDS",
    "ICMP6_TYPE_NAMES",
    "IP6_FIELDS",
    "UDP6_FIELDS",
    "Icmp6Mib",
    "Icmp6MsgMib",
    "Ip6Mib",
    "Udp6Mib",
]

IP6_FIELDS: Final = (
    "InReceives",
    "InHdrErrors",
    "InTooBigErrors",
    "InNoRoutes",
    "InAddrErrors",
    "InUnknownProtos",
    "InTruncatedPkts",
    "InDiscards",
    "InDelivers",
    "OutForwDatagrams",
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
    "InMcastPkts",
    "OutMcastPkts",
    "InOctets",
    "OutOctets",
    "InMcastOctets",
    "OutMcastOctets",
    "InBcastOctets",
    "OutBcastOctets",
    "InNoECTPkts",
    "InECT1Pkts",
    "InECT0Pkts",
    "InCEPkts",
    "OutTransmits",
)
ICMP6_FIELDS: Final = (
    "InMsgs",
    "InErrors",
    "OutMsgs",
    "OutErrors",
    "InCsumErrors",
    "OutRateLimitHost",
)
UDP6_FIELDS: Final = UDP_FIELDS  # struct udp_mib, as IPv4's
# icmp6type2name[] (net/ipv6/proc.c): the types printed by name
ICMP6_TYPE_NAMES: Final = {
    1: "DestUnreachs",
    2: "PktTooBigs",
    3: "TimeExcds",
    4: "ParmProblems",
    128: "Echos",
    129: "EchoReplies",
    130: "GroupMembQueries",
    131: "GroupMembResponses",
    132: "GroupMembReductions",
    133: "RouterSolicits",
    134: "RouterAdvertisements",
    135: "NeighborSolicits",
    136: "NeighborAdvertisements",
    137: "Redirects",
    143: "MLDv2Reports",
}


class Ip6Mib(Mib):
    """The ``Ip6`` lines of /proc/net/snmp6 (kernel: ``struct ipstats_mib``, shown by
    ``snmp6_ipstats_list``).

    Twin: netstack.ipv4.snmp.IpMib.
    """

    __slots__ = IP6_FIELDS
    FIELDS = IP6_FIELDS
    NAME = "Ip6"
    InReceives: int
    InHdrErrors: int
    InTooBigErrors: int
    InNoRoutes: int
    InAddrErrors: int
    InUnknownProtos: int
    InTruncatedPkts: int
    InDiscards: int
    InDelivers: int
    OutForwDatagrams: int
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
    InMcastPkts: int
    OutMcastPkts: int
    InOctets: int
    OutOctets: int
    InMcastOctets: int
    OutMcastOctets: int
    InBcastOctets: int
    OutBcastOctets: int
    InNoECTPkts: int
    InECT1Pkts: int
    InECT0Pkts: int
    InCEPkts: int
    OutTransmits: int


class Icmp6Mib(Mib):
    """The ``Icmp6`` counters of /proc/net/snmp6 (kernel: ``icmpv6_mib``)."""

    __slots__ = ICMP6_FIELDS
    FIELDS = ICMP6_FIELDS
    NAME = "Icmp6"
    InMsgs: int
    InErrors: int
    OutMsgs: int
    OutErrors: int
    InCsumErrors: int
    OutRateLimitHost: int


class Udp6Mib(UdpMib):
    """The ``Udp6`` lines of /proc/net/snmp6: ``struct udp_mib`` under IPv6's name."""

    __slots__ = ()
    NAME = "Udp6"


class Icmp6MsgMib:
    """Per-type ICMPv6 counters (kernel: ``icmpv6msg_mib``)."""

    def __init__(self) -> None:
        self.in_types: Counter[int] = Counter()
        self.out_types: Counter[int] = Counter()

    @kernel("net/ipv6/proc.c", "snmp6_seq_show_icmpv6msg")
    def values(self) -> list[tuple[str, int]]:
        """By name for RFC 2466's types (always), then by number (non-zero only).

        Kernel: net/ipv6/proc.c, snmp6_seq_show_icmpv6msg().
        """
        out: list[tuple[str, int]] = []
        for direction, counter in (("In", self.in_types), ("Out", self.out_types)):
            for t, name in ICMP6_TYPE_NAMES.items():
                out.append((f"{direction}{name}", counter[t]))
        for direction, counter in (("In", self.in_types), ("Out", self.out_types)):
            for t, n in sorted(counter.items()):
                if n:
                    out.append((f"{direction}Type{t}", n))
        return out
