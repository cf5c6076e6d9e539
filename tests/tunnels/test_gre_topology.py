"""GRE between two sites across a router: what goes on the wire, byte for byte.

s1 (10.1.0.1) ── gw1 ══ gre1 over 192.0.2.0/24 ── r ── 198.51.100.0/24 ══ gw2 ── s2 (10.2.0.1)

The capture on gw1's underlay is parsed with dpkt: outer IPv4 (protocol 47,
DF, TTL inherited from the inner packet, valid header checksum), GRE header
(flags, key, sequence numbers 1, 2, 3…, checksum verifying over header and
payload), and the inner packet as s1 sent it less one hop.
"""

from __future__ import annotations

import dpkt
import pytest
import trio
import trio.testing
from helpers import build_sites

import netstack
from netstack.wire.checksum import csum_fold, csum_partial, ip_fast_csum
from netstack.wire.ipv4 import aton


def gre_packets(frames: list[tuple[float, bytes, bool]]) -> list[dpkt.ip.IP]:
    out = []
    for _, frame, outgoing in frames:
        eth = dpkt.ethernet.Ethernet(frame)
        if outgoing and isinstance(eth.data, dpkt.ip.IP) and eth.data.p == 47:
            out.append(eth.data)
    return out


@pytest.mark.parametrize(
    ("opts", "flags", "mtu"),
    [
        ("", 0x0000, 1476),
        ("key 42", 0x2000, 1472),
        ("key 42 seq", 0x3000, 1468),
        ("csum key 42 seq", 0xB000, 1464),
    ],
)
async def test_gre_across_a_router_byte_exact(
    lab: netstack.Lab,
    autojump_clock: trio.testing.MockClock,
    opts: str,
    flags: int,
    mtu: int,
) -> None:
    h = build_sites(lab, opts)
    assert h["gw1"].dev("gre1").mtu == mtu
    cap = h["gw1"].capture("eth1")
    result = await h["s1"].ping("10.2.0.1", count=3, interval=0.1)
    assert result.received == 3
    server = h["s2"].socket()
    await server.bind(("0.0.0.0", 5000))
    client = h["s1"].socket()
    await client.sendto(b"over gre", ("10.2.0.1", 5000))
    with trio.fail_after(1):
        data, peer = await server.recvfrom(100)
    assert (data, peer[0]) == (b"over gre", "10.1.0.1")
    pkts = gre_packets(cap.frames)
    assert len(pkts) == 4  # 3 echo requests and the datagram (replies come the other way)
    for i, ip in enumerate(pkts):
        raw = bytes(ip)
        assert ip_fast_csum(raw, 0, 20) == 0
        assert (ip.src, ip.dst) == (aton("192.0.2.1").to_bytes(4, "big"), bytes([198, 51, 100, 2]))
        assert ip.df and not ip.mf and ip.offset == 0
        gre = ip.data
        assert isinstance(gre, dpkt.gre.GRE)
        assert gre.flags == flags and gre.p == 0x0800
        if flags & 0x2000:
            assert gre.key == 42
        if flags & 0x1000:
            assert gre.seq == i + 1  # o_seqno is incremented before use: the first is 1
        if flags & 0x8000:
            assert csum_fold(csum_partial(bytes(ip.data))) == 0
        inner = gre.data
        assert isinstance(inner, dpkt.ip.IP)
        assert inner.src == bytes([10, 1, 0, 1]) and inner.dst == bytes([10, 2, 0, 1])
        assert inner.ttl == 63  # forwarded once by gw1 before encapsulation
        assert ip.ttl == 63  # ttl inherit: the outer TTL is the inner one
        assert ip.tos == inner.tos
        assert ip_fast_csum(bytes(inner), 0, 20) == 0
    udp = pkts[3].data.data.data
    assert isinstance(udp, dpkt.udp.UDP) and udp.data == b"over gre"
    # both tunnel ends counted the inner bytes
    gw1_stats = h["gw1"].dev("gre1").statistics()
    gw2_stats = h["gw2"].dev("gre1").statistics()
    assert gw1_stats.tx_packets == 4 and gw2_stats.rx_packets == 4
    assert gw1_stats.tx_bytes == gw2_stats.rx_bytes == 3 * 84 + 28 + 8
    assert gw2_stats.tx_packets == 3 and gw1_stats.rx_packets == 3
    assert h["gw1"].drops() == {} and h["gw2"].drops() == {}


async def test_gre_made_with_ip_tunnel_carries_the_same_packets(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = build_sites(lab, "key 7 csum", how="tunnel")
    assert h["gw1"].ip("tunnel show gre1") == (
        "gre1: gre/ip remote 198.51.100.2 local 192.0.2.1 ttl inherit key 7\n"
        "  Checksum in received packet is required.\n"
        "  Checksum output packets.\n"
    )
    cap = h["gw1"].capture("eth1")
    assert (await h["s1"].ping("10.2.0.1", count=2, interval=0.1)).received == 2
    pkts = gre_packets(cap.frames)
    assert [p.data.key for p in pkts] == [7, 7]
    assert all(csum_fold(csum_partial(bytes(p.data))) == 0 for p in pkts)


async def test_ttl_and_tos_fixed_instead_of_inherited(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = build_sites(lab, "ttl 17 tos 0x20")
    cap = h["gw1"].capture("eth1")
    assert (await h["s1"].ping("10.2.0.1", count=1)).received == 1
    (ip,) = gre_packets(cap.frames)
    assert ip.ttl == 17 and ip.tos == 0x20


async def test_tos_inherit_copies_dscp_and_ecn_rules(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """tos inherit: DSCP from the inner header; ECN copied except CE, which goes out ECT(0)."""
    from netstack.socket import IP_TOS, IPPROTO_IP

    h = build_sites(lab, "tos inherit")
    cap = h["gw1"].capture("eth1")
    server = h["s2"].socket()
    await server.bind(("0.0.0.0", 5000))
    client = h["s1"].socket()
    for tos in (0xB8 | 1, 0x20 | 3):  # EF + ECT(1); CS1 + CE
        client.setsockopt(IPPROTO_IP, IP_TOS, tos)
        await client.sendto(b"x", ("10.2.0.1", 5000))
    with trio.fail_after(1):
        await server.recvfrom(10)
        await server.recvfrom(10)
    outer = [p.tos for p in gre_packets(cap.frames)]
    assert outer == [0xB8 | 1, 0x20 | 2]


async def test_no_route_to_the_remote_counts_carrier_errors(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a = lab.add_host("a")
    a.ip("link add gre1 type gre remote 203.0.113.9")
    a.ip("link set gre1 up")
    a.ip("addr add 10.9.0.1/30 dev gre1")
    s = a.socket()
    s.sendto_nowait(b"x", ("10.9.0.2", 9))
    st = a.dev("gre1").statistics()
    assert st.tx_carrier_errors == 1 and st.tx_errors == 1 and st.tx_packets == 0
    assert "TX: Packets    Bytes        Errors DeadLoop NoRoute  NoBufs" in a.ip("-s tunnel show")
