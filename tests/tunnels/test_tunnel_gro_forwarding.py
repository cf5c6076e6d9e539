"""A router between two tunnel endpoints merges the tunnel's packets with GRO
and must cut the aggregates again on the way out (``gre_gso_segment``,
``inet_gso_segment`` for IPIP, ``ipv6_gso_segment`` for SIT): the far side
receives well-formed MSS-sized frames whose every checksum verifies.

    a 192.0.2.1 ── nic ── r (GRO on eth0, forwarding) ── nic ── b 198.51.100.2
    tunnel t1 between a and b: gre [key|csum], ipip or sit (or plain IPv6, routed)
"""

from __future__ import annotations

import struct

import dpkt
import pytest
import trio

import netstack
from netstack.core.sock import AF_INET, AF_INET6, SOCK_STREAM
from netstack.gro import gro_statistics


def inner_ok(inner: dpkt.Packet) -> bool:
    """The inner TCP checksum, over the inner header's pseudo-header."""
    if isinstance(inner, dpkt.ip6.IP6):
        seg = bytes(inner)[40 : 40 + inner.plen]
        pseudo = inner.src + inner.dst + struct.pack("!I3xB", len(seg), 6)
    else:
        seg = bytes(inner)[inner.hl * 4 : inner.len]
        pseudo = inner.src + inner.dst + struct.pack("!BBH", 0, 6, len(seg))
    return bool(dpkt.in_cksum(pseudo + seg) == 0)


@pytest.mark.parametrize(
    "tunnel", ["gre", "gre key 7", "gre csum", "gretap", "gretap key 9", "ipip", "sit", "ipv6"]
)
@pytest.mark.slow
async def test_router_resegments_tunnel_aggregates(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, tunnel: str
) -> None:
    a, r, b = lab.add_host("a"), lab.add_host("r"), lab.add_host("b")
    lab.add_link("a:eth0", "r:eth0", kind="nic")
    lab.add_link("r:eth1", "b:eth0", kind="nic")
    a.ip("addr add 192.0.2.1/24 dev eth0")
    r.ip("addr add 192.0.2.254/24 dev eth0")
    r.ip("addr add 198.51.100.254/24 dev eth1")
    b.ip("addr add 198.51.100.2/24 dev eth0")
    a.ip("route add default via 192.0.2.254")
    b.ip("route add default via 198.51.100.254")
    r.sysctl("net.ipv4.ip_forward=1")
    r.ethtool("-K eth1 tso off gso off")  # the router's way out cannot take aggregates
    kind, *opts = tunnel.split()
    v6 = kind in ("sit", "ipv6")
    ends: tuple[tuple[netstack.Host, str, str, int], ...] = (
        (a, "192.0.2.1", "198.51.100.2", 1),
        (b, "198.51.100.2", "192.0.2.1", 2),
    )
    if kind == "ipv6":  # no tunnel: TCPv6 routed by r
        a.ip("-6 addr add 2001:db8:1::1/64 dev eth0 nodad")
        r.ip("-6 addr add 2001:db8:1::fe/64 dev eth0 nodad")
        r.ip("-6 addr add 2001:db8:9::fe/64 dev eth1 nodad")
        b.ip("-6 addr add 2001:db8:9::2/64 dev eth0 nodad")
        a.ip("-6 route add default via 2001:db8:1::fe")
        b.ip("-6 route add default via 2001:db8:9::fe")
        r.sysctl("net.ipv6.conf.all.forwarding=1")
        ends = ()
    for h, me, peer, n in ends:
        h.ip(f"link add t1 type {kind} local {me} remote {peer} {' '.join(opts)}".strip())
        h.ip("link set t1 up")
        h.ip(f"-6 addr add 2001:db8:9::{n}/64 dev t1" if v6 else f"addr add 10.9.0.{n}/24 dev t1")
    await trio.sleep(2)
    family = AF_INET6 if v6 else AF_INET
    srv = b.socket(family, SOCK_STREAM)
    await srv.bind(("::" if v6 else "", 5001))
    srv.listen(1)
    cap = r.capture("eth1")  # a tap after validate_xmit_skb: what goes on the wire
    payload = bytes(range(256)) * 2048
    got = bytearray()
    async with trio.open_nursery() as nursery:

        async def sink() -> None:
            conn, _ = await srv.accept()
            while d := await conn.recv(1 << 17):
                got.extend(d)

        nursery.start_soon(sink)
        c = a.socket(family, SOCK_STREAM)
        await c.connect(("2001:db8:9::2" if v6 else "10.9.0.2", 5001))
        start = trio.current_time()
        await c.sendall(payload)
        c.close()
    assert got == payload
    assert trio.current_time() - start < 1  # no aggregate was lost at r (no RTO)
    assert gro_statistics(r.net, "eth0").merged > 100
    assert r.dev("eth1").stats.tx_dropped == 0
    cap.stop()
    frames = [dpkt.ethernet.Ethernet(f) for _, f, out in cap.frames if out]
    if kind == "ipv6":
        pkts = [e.data for e in frames if isinstance(e.data, dpkt.ip6.IP6) and e.data.nxt == 6]
        assert len(pkts) > len(payload) // 1500
        assert all(len(bytes(p)) <= 1500 and inner_ok(p) for p in pkts)
        return
    outer = [e.data for e in frames if isinstance(e.data, dpkt.ip.IP)]
    assert len(outer) > len(payload) // 1500
    for ip in outer:
        assert len(bytes(ip)) <= 1500
        assert dpkt.in_cksum(bytes(ip)[: ip.hl * 4]) == 0  # outer header checksum
        raw = bytes(ip)[ip.hl * 4 : ip.len]
        if kind in ("gre", "gretap"):
            flags = struct.unpack("!H", raw[:2])[0]
            glen = 4 + (4 if flags & 0x2000 else 0) + (4 if flags & 0x8000 else 0)
            if flags & 0x8000:
                assert dpkt.in_cksum(raw) == 0  # the GRE checksum of each segment
            raw = raw[glen:]
            if kind == "gretap":  # an Ethernet frame inside (ARP ones too)
                if struct.unpack("!H", raw[12:14])[0] != 0x0800:
                    continue
                raw = raw[14:]
        inner = dpkt.ip6.IP6(raw) if v6 else dpkt.ip.IP(raw)
        assert inner_ok(inner)
