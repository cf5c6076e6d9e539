"""``/proc/net/snmp`` and ``/proc/net/netstat``: the IPv4 and TCP MIBs as the kernel prints them.

Theory of operation: each file is pairs of lines, a header of names and a
line of values, per MIB: ``/proc/net/snmp`` has ``Ip`` (``Forwarding`` and
``DefaultTTL`` first, settings rather than counters), ``Icmp``, ``IcmpMsg``
(only the types seen, sixteen to a pair of lines, none when no ICMP message
was counted), ``Tcp`` (the TCP MIB both families share; ``MaxConn`` is
signed), ``Udp`` and ``UdpLite`` (whose MIB netstack never counts);
``/proc/net/netstat`` has ``TcpExt`` (the ``LINUX_MIB_*`` list, every name
the kernel prints, in its order, including those netstack never counts —
they read 0) and ``IpExt``. ``nstat`` parses exactly these lines, so what
it shows and what ``cat`` shows cannot disagree. A kernel without MPTCP
prints no ``MPTcpExt`` lines, and netstack has no MPTCP.

Kernel: net/ipv4/proc.c (snmp_seq_show(), icmp_put(), icmpmsg_put(),
netstat_seq_show(), snmp4_net_list[]), as of Linux 6.17.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from netstack.core.snmp import UDP_FIELDS
from netstack.ipv4.af_inet import ipv4_of
from netstack.sites import kernel
from netstack.tcp.mib import TcpMib
from netstack.tcp.proto import TCP_NET
from netstack.tcp.sock import RequestSock, TimewaitSock

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = [
    "SNMP4_NET_LIST",
    "SNMP4_TCP_LIST",
    "inuse_by_family",
    "netstat_seq_show",
    "snmp_seq_show",
    "sockstat6_seq_show",
    "sockstat_seq_show",
]

SNMP4_TCP_LIST: Final = (
    "RtoAlgorithm",
    "RtoMin",
    "RtoMax",
    "MaxConn",
    "ActiveOpens",
    "PassiveOpens",
    "AttemptFails",
    "EstabResets",
    "CurrEstab",
    "InSegs",
    "OutSegs",
    "RetransSegs",
    "InErrs",
    "OutRsts",
    "InCsumErrors",
)

SNMP4_NET_LIST: Final = (
    "SyncookiesSent",
    "SyncookiesRecv",
    "SyncookiesFailed",
    "EmbryonicRsts",
    "PruneCalled",
    "RcvPruned",
    "OfoPruned",
    "OutOfWindowIcmps",
    "LockDroppedIcmps",
    "ArpFilter",
    "TW",
    "TWRecycled",
    "TWKilled",
    "PAWSActive",
    "PAWSEstab",
    "BeyondWindow",
    "TSEcrRejected",
    "PAWSOldAck",
    "PAWSTimewait",
    "DelayedACKs",
    "DelayedACKLocked",
    "DelayedACKLost",
    "ListenOverflows",
    "ListenDrops",
    "TCPHPHits",
    "TCPPureAcks",
    "TCPHPAcks",
    "TCPRenoRecovery",
    "TCPSackRecovery",
    "TCPSACKReneging",
    "TCPSACKReorder",
    "TCPRenoReorder",
    "TCPTSReorder",
    "TCPFullUndo",
    "TCPPartialUndo",
    "TCPDSACKUndo",
    "TCPLossUndo",
    "TCPLostRetransmit",
    "TCPRenoFailures",
    "TCPSackFailures",
    "TCPLossFailures",
    "TCPFastRetrans",
    "TCPSlowStartRetrans",
    "TCPTimeouts",
    "TCPLossProbes",
    "TCPLossProbeRecovery",
    "TCPRenoRecoveryFail",
    "TCPSackRecoveryFail",
    "TCPRcvCollapsed",
    "TCPBacklogCoalesce",
    "TCPDSACKOldSent",
    "TCPDSACKOfoSent",
    "TCPDSACKRecv",
    "TCPDSACKOfoRecv",
    "TCPAbortOnData",
    "TCPAbortOnClose",
    "TCPAbortOnMemory",
    "TCPAbortOnTimeout",
    "TCPAbortOnLinger",
    "TCPAbortFailed",
    "TCPMemoryPressures",
    "TCPMemoryPressuresChrono",
    "TCPSACKDiscard",
    "TCPDSACKIgnoredOld",
    "TCPDSACKIgnoredNoUndo",
    "TCPSpuriousRTOs",
    "TCPMD5NotFound",
    "TCPMD5Unexpected",
    "TCPMD5Failure",
    "TCPSackShifted",
    "TCPSackMerged",
    "TCPSackShiftFallback",
    "TCPBacklogDrop",
    "PFMemallocDrop",
    "TCPMinTTLDrop",
    "TCPDeferAcceptDrop",
    "IPReversePathFilter",
    "TCPTimeWaitOverflow",
    "TCPReqQFullDoCookies",
    "TCPReqQFullDrop",
    "TCPRetransFail",
    "TCPRcvCoalesce",
    "TCPOFOQueue",
    "TCPOFODrop",
    "TCPOFOMerge",
    "TCPChallengeACK",
    "TCPSYNChallenge",
    "TCPFastOpenActive",
    "TCPFastOpenActiveFail",
    "TCPFastOpenPassive",
    "TCPFastOpenPassiveFail",
    "TCPFastOpenListenOverflow",
    "TCPFastOpenCookieReqd",
    "TCPFastOpenBlackhole",
    "TCPSpuriousRtxHostQueues",
    "BusyPollRxPackets",
    "TCPAutoCorking",
    "TCPFromZeroWindowAdv",
    "TCPToZeroWindowAdv",
    "TCPWantZeroWindowAdv",
    "TCPSynRetrans",
    "TCPOrigDataSent",
    "TCPHystartTrainDetect",
    "TCPHystartTrainCwnd",
    "TCPHystartDelayDetect",
    "TCPHystartDelayCwnd",
    "TCPACKSkippedSynRecv",
    "TCPACKSkippedPAWS",
    "TCPACKSkippedSeq",
    "TCPACKSkippedFinWait2",
    "TCPACKSkippedTimeWait",
    "TCPACKSkippedChallenge",
    "TCPWinProbe",
    "TCPKeepAlive",
    "TCPMTUPFail",
    "TCPMTUPSuccess",
    "TCPDelivered",
    "TCPDeliveredCE",
    "TCPAckCompressed",
    "TCPZeroWindowDrop",
    "TCPRcvQDrop",
    "TCPWqueueTooBig",
    "TCPFastOpenPassiveAltKey",
    "TcpTimeoutRehash",
    "TcpDuplicateDataRehash",
    "TCPDSACKRecvSegs",
    "TCPDSACKIgnoredDubious",
    "TCPMigrateReqSuccess",
    "TCPMigrateReqFailure",
    "TCPPLBRehash",
    "TCPAORequired",
    "TCPAOBad",
    "TCPAOKeyNotFound",
    "TCPAOGood",
    "TCPAODroppedIcmps",
)
"""``snmp4_net_list[]``: every ``TcpExt`` name, in the kernel's order."""

_ICMPMSG_PERLINE: Final = 16


def _pair(mib: str, items: list[tuple[str, int]]) -> list[str]:
    return [
        f"{mib}: " + " ".join(name for name, _ in items),
        f"{mib}: " + " ".join(str(value) for _, value in items),
    ]


def _tcp_mibs(net: Net) -> tuple[dict[str, int], dict[str, int]]:
    """The TCP MIB and TCP's part of the LINUX MIB (a fresh one's before TCP's first use)."""
    tcp = TCP_NET.find(net)
    if tcp is not None:
        return dict(tcp.mib.snapshot().values), dict(tcp.ext.snapshot().values)
    return dict(TcpMib().snapshot().values), {}


@kernel("net/ipv4/proc.c", "snmp_seq_show")
def snmp_seq_show(net: Net) -> str:
    """The text of ``/proc/net/snmp``. Kernel: net/ipv4/proc.c, snmp_seq_show()."""
    snmp = ipv4_of(net).snmp()
    lines = _pair("Ip", list(snmp["Ip"].values))
    lines += _pair("Icmp", list(snmp["Icmp"].values))
    msgs = [(k, v) for k, v in snmp["IcmpMsg"].values if v]
    for i in range(0, len(msgs), _ICMPMSG_PERLINE):  # icmpmsg_put(): 16 types a line
        lines += _pair("IcmpMsg", msgs[i : i + _ICMPMSG_PERLINE])
    tcp, _ = _tcp_mibs(net)
    lines += _pair("Tcp", [(name, tcp.get(name, 0)) for name in SNMP4_TCP_LIST])
    lines += _pair("Udp", list(snmp["Udp"].values))
    lines += _pair("UdpLite", [(name, 0) for name in UDP_FIELDS])
    return "\n".join(lines) + "\n"


@kernel("net/ipv4/proc.c", "netstat_seq_show")
def netstat_seq_show(net: Net) -> str:
    """The text of ``/proc/net/netstat``. Kernel: net/ipv4/proc.c, netstat_seq_show()."""
    _, ext = _tcp_mibs(net)
    lines = _pair("TcpExt", [(name, ext.get(name, 0)) for name in SNMP4_NET_LIST])
    lines += _pair("IpExt", list(ipv4_of(net).snmp()["IpExt"].values))
    return "\n".join(lines) + "\n"


def inuse_by_family(net: Net) -> dict[str, dict[int, int]]:
    """``sock_prot_inuse_get()`` of TCP and UDP per address family: the hashed sockets
    (a TCP socket from listen()/connect() to close, not its TIME_WAIT or request socks;
    a bound UDP socket)."""
    tcp_inuse = {2: 0, 10: 0}
    tcp = TCP_NET.find(net)
    if tcp is not None:
        for sk in tcp.hashinfo.sockets():
            if not isinstance(sk, TimewaitSock | RequestSock):
                tcp_inuse[sk.family] = tcp_inuse.get(sk.family, 0) + 1
    udp_inuse = {2: 0, 10: 0}
    for usk in ipv4_of(net).udp_table.sockets():
        udp_inuse[usk.family] = udp_inuse.get(usk.family, 0) + 1
    return {"TCP": tcp_inuse, "UDP": udp_inuse}


@kernel("net/ipv4/proc.c", "sockstat_seq_show")
def sockstat_seq_show(net: Net) -> str:
    """The text of ``/proc/net/sockstat``. Kernel: net/ipv4/proc.c, sockstat_seq_show().

    ``mem`` (pages of socket memory) reads 0: netstack does not account memory in pages.
    """
    ipv4 = ipv4_of(net)
    inuse = inuse_by_family(net)
    tcp = TCP_NET.find(net)
    # tcp_sockets_allocated: full sockets alive (TIME-WAIT minisocks are counted in tw)
    alloc = sum(not isinstance(sk, TimewaitSock) for sk in tcp.sockets) if tcp is not None else 0
    orphans = tcp.orphan_count if tcp is not None else 0
    tw = tcp.tw_count if tcp is not None else 0
    ipv6 = getattr(net, "ipv6", None)
    raw6 = len(getattr(ipv6, "raw_sockets", ()))
    used = alloc + sum(inuse["UDP"].values()) + ipv4.raw_sockets + raw6
    return (
        f"sockets: used {used}\n"
        f"TCP: inuse {inuse['TCP'][2]} orphan {orphans} tw {tw} alloc {alloc} mem 0\n"
        f"UDP: inuse {inuse['UDP'][2]} mem 0\n"
        "UDPLITE: inuse 0\n"
        f"RAW: inuse {ipv4.raw_sockets}\n"
        f"FRAG: inuse {len(ipv4.frags.queues)} memory {ipv4.frags.mem}\n"
    )


@kernel("net/ipv6/proc.c", "sockstat6_seq_show")
def sockstat6_seq_show(net: Net) -> str | None:
    """``/proc/net/sockstat6`` (None without IPv6). Kernel: net/ipv6/proc.c, sockstat6_seq_show().

    It is here, beside ``sockstat``, because both count the same inet sockets.
    """
    ipv6 = getattr(net, "ipv6", None)
    if ipv6 is None:
        return None
    inuse = inuse_by_family(net)
    frags = getattr(ipv6, "frags", None)
    nfrags = len(frags.queues) if frags is not None else 0
    return (
        f"TCP6: inuse {inuse['TCP'][10]}\n"
        f"UDP6: inuse {inuse['UDP'][10]}\n"
        "UDPLITE6: inuse 0\n"
        f"RAW6: inuse {len(getattr(ipv6, 'raw_sockets', ()))}\n"
        f"FRAG6: inuse {nfrags} memory {getattr(frags, 'mem', 0)}\n"
    )
