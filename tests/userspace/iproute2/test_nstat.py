"""``nstat`` at the prompt: increments since the last run, patterns, ``-a``, ``-z``, ``-j``,
TCP and IPv6 counters, and lab files' ``expect`` on every one of them."""

from __future__ import annotations

import json

import pytest
import trio.testing
from helpers import Term

from netstack.userspace.iproute2.nstat import nstat_counters


async def test_nstat_shows_increments(term: Term, autojump_clock: trio.testing.MockClock) -> None:
    await term.run("h1 ping -c 2 h2")
    _status, out = await term.run("router nstat IpForw*")
    assert out == "#kernel\nIpForwDatagrams                 4                  0.0"
    assert (await term.run("router nstat IpForw*"))[1] == "#kernel"
    await term.run("h1 ping -c 1 h2")
    assert (await term.run("router nstat IpForw*"))[1].split()[-2] == "2"
    assert (await term.run("router nstat -a IpForw*"))[1].split()[-2] == "6"
    assert "IpForwDatagrams" in (await term.run("router nstat -az IpForw*"))[1]


async def test_nstat_reads_the_three_files_in_its_order(
    term: Term, autojump_clock: trio.testing.MockClock
) -> None:
    names = list(nstat_counters(term.session.lab.hosts["h1"].net))
    # snmp (Ip Icmp Tcp Udp UdpLite), then snmp6, then netstat (TcpExt IpExt)
    assert names[0] == "IpInReceives" and "IpForwarding" not in names
    assert names.index("TcpActiveOpens") < names.index("UdpInDatagrams")
    assert names.index("UdpLiteMemErrors") < names.index("TcpExtSyncookiesSent")
    assert names[-1] == "IpExtReasmOverlaps"
    for useless in ("TcpRtoAlgorithm", "TcpRtoMin", "TcpRtoMax", "TcpMaxConn", "TcpCurrEstab"):
        assert useless not in names
    # Ip 20-2, Icmp 29, Tcp 15-5, Udp, UdpLite; snmp6 (there with IPv6 disabled, as in
    # Linux): 33 Ip6, 6 + 30 Icmp6, 9 Udp6 + 8 UdpLite6; TcpExt 135, IpExt 18
    assert len(names) == 18 + 29 + 10 + 9 + 9 + (33 + 36 + 17) + 135 + 18


@pytest.mark.slow
async def test_tcp_counters_after_netperf(
    term: Term, autojump_clock: trio.testing.MockClock
) -> None:
    await term.run("h1 nstat -n")
    await term.run("h1 netperf -H h2 -t TCP_RR -l 1")
    status, out = await term.run("h1 nstat TcpActiveOpens TcpPassiveOpens TcpExtTCPOrigDataSent")
    lines = out.split("\n")
    assert status == 0 and lines[0] == "#kernel"
    assert lines[1] == "TcpActiveOpens                  2                  0.0"
    assert lines[2].startswith("TcpExtTCPOrigDataSent ")
    status, out = await term.run("h2 nstat -a -j TcpPassiveOpens TcpActiveOpens")
    assert json.loads(out) == {"kernel": {"TcpPassiveOpens": 2}}
    assert out == '{"kernel":{"TcpPassiveOpens":2}}'
    status, out = await term.run("h2 nstat -a -j -p TcpPassiveOpens")
    assert out == '{\n    "kernel": {\n        "TcpPassiveOpens": 2\n    }\n}'
    # counters a pattern left out keep their history: their increments show later
    await term.run("h1 nstat -n")
    await term.run("h1 ping -c 1 h2")
    await term.run("h1 nstat Icmp*")
    assert "IpOutRequests" in (await term.run("h1 nstat"))[1]


@pytest.mark.slow
async def test_expect_every_nstat_counter(
    term: Term, autojump_clock: trio.testing.MockClock
) -> None:
    await term.run("h1 netperf -H h2 -t TCP_RR -l 1")
    assert await term.run("h1 expect TcpActiveOpens == 2") == (0, "TcpActiveOpens = 2")
    assert (await term.run("h2 expect TcpExtTCPPureAcks >= 0"))[0] == 0
    assert (await term.run("h2 expect UdpLiteInDatagrams == 0"))[0] == 0
    assert await term.run("h1 expect TcpActivOpens == 2") == (
        1,
        "expect: unknown counter 'TcpActivOpens' (did you mean TcpActiveOpens?)",
    )
    assert await term.run("h1 expect ip6inreceives == 0") == (
        1,
        "expect: unknown counter 'ip6inreceives' (did you mean Ip6InReceives?)",
    )
    assert await term.run("h1 expect eth0.rx_packts > 1") == (
        1,
        "expect: unknown counter 'eth0.rx_packts' (did you mean eth0.rx_packets or "
        "eth0.tx_packets?)",
    )
