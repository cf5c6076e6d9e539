"""Issue 13, item 2: a learned path MTU belongs to its destination only.

One ICMP "fragmentation needed" (or ICMPv6 Packet Too Big) quoting a datagram
to one destination creates a next-hop exception for that destination
(``update_or_create_fnhe``, ``rt6_insert_exception``); other destinations
behind the same gateway keep the route's MTU, and learn their own. Before the
fix IPv4 wrote the MTU on the nexthop's shared cached route, so every
destination behind the gateway got it, and a later, larger report about
another destination returned early.

    h (10.0.1.1/24, 2001:db8:1::1/64; default via .254 / ::fe) ── Port
"""

from __future__ import annotations

import trio

from netstack.host import Host, Lab, Port
from netstack.ipv4 import ipv4_of
from netstack.ipv4.route import Flowi4, Rtable
from netstack.socket import AF_INET, AF_INET6, SOCK_DGRAM
from netstack.testing import floods
from netstack.wire.ipv4 import aton
from netstack.wire.ipv6 import aton as aton6

GW_MAC = bytes.fromhex("0200000000fe")
H = aton("10.0.1.1")
GW = aton("10.0.1.254")
H6 = aton6("2001:db8:1::1")
GW6 = aton6("2001:db8:1::fe")
SPORT = 5000


async def rig(lab: Lab) -> tuple[Host, Port]:
    h = lab.add_host("h")
    port = lab.add_port("h:eth0")
    h.ip("addr add 10.0.1.1/24 dev eth0")
    h.ip("route add default via 10.0.1.254")
    h.ip("-6 addr add 2001:db8:1::1/64 dev eth0 nodad")
    h.ip("-6 route add default via 2001:db8:1::fe")
    await trio.sleep(1)
    return h, port


def frag_needed(h: Host, dst: str, mtu: int) -> bytes:
    quoted = floods.udp4(H, aton(dst), SPORT, 53, bytes(1472))
    mac = bytes(h.dev("eth0").dev_addr)
    return floods.eth(mac, GW_MAC, 0x0800, floods.icmp_frag_needed(GW, H, mtu, quoted))


def packet_too_big(h: Host, dst: str, mtu: int) -> bytes:
    quoted = floods.udp6(H6, aton6(dst), SPORT, 53, bytes(1400))
    mac = bytes(h.dev("eth0").dev_addr)
    return floods.eth(mac, GW_MAC, 0x86DD, floods.icmp6_packet_too_big(GW6, H6, mtu, quoted))


def route_mtu(h: Host, dst: str) -> int:
    ipv4 = ipv4_of(h.net)
    rt = ipv4.ip_route_output_key(Flowi4(aton(dst)))
    assert isinstance(rt, Rtable)
    try:
        return rt.mtu()
    finally:
        rt.release()


async def test_ipv4_frag_needed_is_per_destination(lab: Lab, autojump_clock: object) -> None:
    h, port = await rig(lab)
    udp = h.socket(AF_INET, SOCK_DGRAM)
    await udp.bind(("0.0.0.0", SPORT))
    victim = h.socket(AF_INET, SOCK_DGRAM)
    await victim.connect(("10.0.2.2", 53))  # a connected socket's cached route
    await port.send(frag_needed(h, "10.0.2.1", 1400))
    await trio.sleep(0.5)
    assert route_mtu(h, "10.0.2.1") == 1400
    assert route_mtu(h, "10.0.2.2") == 1500  # same gateway, not poisoned
    assert victim.sock.dst_cache is not None
    assert not victim.sock.dst_cache.valid() or victim.sock.dst_cache.mtu() == 1500
    assert h.ip("route get 10.0.2.1") == (
        "10.0.2.1 via 10.0.1.254 dev eth0 src 10.0.1.1 uid 0 \n    cache expires 599sec mtu 1400 \n"
    )
    assert h.ip("route get 10.0.2.2") == (
        "10.0.2.2 via 10.0.1.254 dev eth0 src 10.0.1.1 uid 0 \n    cache \n"
    )
    # a larger report about another destination is learnt too (it returned early before)
    await port.send(frag_needed(h, "10.0.2.2", 1450))
    await trio.sleep(0.5)
    assert route_mtu(h, "10.0.2.2") == 1450
    assert route_mtu(h, "10.0.2.1") == 1400
    assert route_mtu(h, "10.0.2.3") == 1500
    assert h.ip("route show cache") == (
        "10.0.2.1 via 10.0.1.254 dev eth0 \n    cache expires 599sec mtu 1400 \n"
        "10.0.2.2 via 10.0.1.254 dev eth0 \n    cache expires 599sec mtu 1450 \n"
    )
    await trio.sleep(600)  # ip_rt_mtu_expires
    assert route_mtu(h, "10.0.2.1") == 1500
    assert route_mtu(h, "10.0.2.2") == 1500


async def test_ipv6_packet_too_big_is_per_destination(lab: Lab, autojump_clock: object) -> None:
    h, port = await rig(lab)
    udp = h.socket(AF_INET6, SOCK_DGRAM)
    await udp.bind(("::", SPORT))
    await port.send(packet_too_big(h, "2001:db8:2::1", 1400))
    await trio.sleep(0.5)
    # the format Linux 6.18 with iproute2 6.1 prints (no "cache" line for IPv6)
    assert h.ip("-6 route get 2001:db8:2::1") == (
        "2001:db8:2::1 from :: via 2001:db8:1::fe dev eth0 src 2001:db8:1::1 metric 1024"
        " expires 599sec mtu 1400 pref medium\n"
    )
    assert h.ip("-6 route get 2001:db8:2::2") == (
        "2001:db8:2::2 from :: via 2001:db8:1::fe dev eth0 src 2001:db8:1::1 metric 1024"
        " pref medium\n"
    )
    await port.send(packet_too_big(h, "2001:db8:2::2", 1450))
    await trio.sleep(0.5)
    assert h.ip("-6 route show cache") == (
        "2001:db8:2::1 via 2001:db8:1::fe dev eth0 metric 1024 expires 599sec mtu 1400"
        " pref medium\n"
        "2001:db8:2::2 via 2001:db8:1::fe dev eth0 metric 1024 expires 599sec mtu 1450"
        " pref medium\n"
    )
