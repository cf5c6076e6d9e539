"""/proc/net/snmp and /proc/net/netstat: the kernel's lines, names and order, with TCP."""

from __future__ import annotations

import pytest
import trio.testing
from helpers import Term

from netstack.ipv4 import ipv4_of
from netstack.ipv4.proc import SNMP4_NET_LIST, netstat_seq_show, snmp_seq_show

# net/ipv4/proc.c (Linux 6.17): the header lines snmp_seq_show() prints
SNMP_HEADERS = [
    "Ip: Forwarding DefaultTTL InReceives InHdrErrors InAddrErrors ForwDatagrams "
    "InUnknownProtos InDiscards InDelivers OutRequests OutDiscards OutNoRoutes ReasmTimeout "
    "ReasmReqds ReasmOKs ReasmFails FragOKs FragFails FragCreates OutTransmits",
    "Icmp: InMsgs InErrors InCsumErrors InDestUnreachs InTimeExcds InParmProbs InSrcQuenchs "
    "InRedirects InEchos InEchoReps InTimestamps InTimestampReps InAddrMasks InAddrMaskReps "
    "OutMsgs OutErrors OutRateLimitGlobal OutRateLimitHost OutDestUnreachs OutTimeExcds "
    "OutParmProbs OutSrcQuenchs OutRedirects OutEchos OutEchoReps OutTimestamps "
    "OutTimestampReps OutAddrMasks OutAddrMaskReps",
    "Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets "
    "CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors",
    "Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors "
    "IgnoredMulti MemErrors",
    "UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors "
    "IgnoredMulti MemErrors",
]


async def test_snmp_before_any_traffic(term: Term, autojump_clock: trio.testing.MockClock) -> None:
    net = term.session.lab.hosts["h2"].net
    lines = snmp_seq_show(net).split("\n")
    assert lines[-1] == ""  # the file ends with a newline
    assert lines[0::2][:-1] == SNMP_HEADERS  # no IcmpMsg lines while no ICMP was counted
    assert lines[5] == "Tcp: 1 200 120000 -1 0 0 0 0 0 0 0 0 0 0 0"  # MaxConn is signed


@pytest.mark.slow
async def test_snmp_and_netstat_after_ping_and_tcp(
    term: Term, autojump_clock: trio.testing.MockClock
) -> None:
    await term.run("h1 ping -c 2 h2")
    await term.run("h1 netperf -H h2 -t TCP_RR -l 1")
    net = term.session.lab.hosts["h1"].net
    lines = snmp_seq_show(net).split("\n")
    assert lines[4:6] == ["IcmpMsg: InType0 OutType8", "IcmpMsg: 2 2"]
    tcp = dict(zip(lines[6].split()[1:], map(int, lines[7].split()[1:]), strict=True))
    assert tcp["ActiveOpens"] == 2  # netperf's control and test connections
    assert tcp["CurrEstab"] == 0 and tcp["AttemptFails"] == 0
    netstat = netstat_seq_show(net).split("\n")
    names = netstat[0].split()
    assert names[0] == "TcpExt:" and tuple(names[1:]) == SNMP4_NET_LIST
    assert len(SNMP4_NET_LIST) == 135
    assert SNMP4_NET_LIST[:10] == (
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
    )
    assert netstat[2].startswith("IpExt: InNoRoutes InTruncatedPkts InMcastPkts OutMcastPkts ")
    assert netstat[3].split()[7] != "0"  # InOctets
    status, out = await term.run("h1 cat /proc/net/netstat /proc/net/snmp /proc/net/snmp6")
    assert status == 0
    assert out.startswith(netstat[0]) and "\nTcp: 1 200 120000 -1 2 " in out
    status, out = await term.run("h1 cat /proc/net/ptype")
    assert (status, out) == (1, "cat: /proc/net/ptype: No such file or directory")


async def test_icmpmsg_sixteen_types_a_line(
    term: Term, autojump_clock: trio.testing.MockClock
) -> None:
    ipv4 = ipv4_of(term.session.lab.hosts["h1"].net)
    for t in range(18):
        ipv4.icmpmsg.in_types[t] += 1
    lines = snmp_seq_show(term.session.lab.hosts["h1"].net).split("\n")
    msg = [ln for ln in lines if ln.startswith("IcmpMsg:")]
    assert len(msg) == 4
    assert msg[0] == "IcmpMsg: " + " ".join(f"InType{t}" for t in range(16))
    assert msg[2] == "IcmpMsg: InType16 InType17"
    assert msg[3] == "IcmpMsg: 1 1"
