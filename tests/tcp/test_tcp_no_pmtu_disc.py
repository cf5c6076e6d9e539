"""``net.ipv4.ip_no_pmtu_disc`` makes every new inet socket IP_PMTUDISC_DONT.

``inet_create`` (and ``inet6_create``, for an AF_INET6 socket's IPv4 part) sets
``inet->pmtudisc`` from the sysctl for every protocol; netstack's UDP did, its
TCP and its AF_INET6 sockets did not, so a TCP sender kept DF on its segments
(and a tunnel copying the inner DF refused them where Linux fragments:
tests/tunnels/test_gretap_gso_mtu.py).

Kernel: net/ipv4/af_inet.c, inet_create(); net/ipv6/af_inet6.c, inet6_create();
include/net/ip.h, ip_dont_fragment().
"""

from __future__ import annotations

import pytest
import trio
import trio.testing
from helpers import connected_tcp

import netstack
from netstack.core.sock import IP_PMTUDISC_DONT, IP_PMTUDISC_WANT
from netstack.socket import AF_INET6, SOCK_DGRAM, SOCK_STREAM
from netstack.testing import builders


@pytest.mark.parametrize("no_pmtu_disc", [0, 1])
async def test_tcp_segments_carry_df_unless_ip_no_pmtu_disc(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, no_pmtu_disc: int
) -> None:
    a, b = builders.pair(lab)
    a.sysctl(f"net.ipv4.ip_no_pmtu_disc={no_pmtu_disc}")
    cap = a.capture("eth0")
    c, _conn = await connected_tcp(a, b, 5001)
    await c.send(b"x" * 3000)
    await trio.sleep(1)
    assert c._sk.pmtudisc == (IP_PMTUDISC_DONT if no_pmtu_disc else IP_PMTUDISC_WANT)
    sent = [data for _, data, outgoing in cap.frames if outgoing and data[12:14] == b"\x08\x00"]
    assert len(sent) >= 3  # SYN, ACK, the data (one GSO skb over the veth)
    assert {bool(data[14 + 6] & 0x40) for data in sent} == {not no_pmtu_disc}


@pytest.mark.parametrize("sock_type", [SOCK_STREAM, SOCK_DGRAM], ids=["tcp6", "udp6"])
@pytest.mark.parametrize("no_pmtu_disc", [0, 1])
async def test_an_ipv6_sockets_ipv4_part_follows_ip_no_pmtu_disc(
    lab: netstack.Lab, no_pmtu_disc: int, sock_type: int
) -> None:
    """``inet6_create`` sets the IPv4 part of an AF_INET6 socket (what a v4-mapped
    peer is sent with) from the same sysctl; the IPv6 part stays IPV6_PMTUDISC_WANT."""
    h = lab.add_host("h")
    h.sysctl(f"net.ipv4.ip_no_pmtu_disc={no_pmtu_disc}")
    sk = h.socket(AF_INET6, sock_type)._sk
    assert sk.pmtudisc == (IP_PMTUDISC_DONT if no_pmtu_disc else IP_PMTUDISC_WANT)
