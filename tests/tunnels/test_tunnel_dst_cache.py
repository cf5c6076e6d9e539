"""The tunnel's dst_cache: a connected tunnel routes its outer packets once.

``ip_tunnel_xmit`` takes the outer route from ``tunnel->dst_cache`` when the
tunnel is "connected" (a fixed remote, no TOS inherited from the inner
packet) and looks it up only when the cache is empty or stale: a FIB or
address change (``rt_genid``), a PMTU exception on the nexthop, or a change
of the tunnel's own parameters (``ip_tunnel_update`` → ``dst_cache_reset``).
Same two-site topology as test_gre_topology (s1 ─ gw1 ═ r ═ gw2 ─ s2).
"""

from __future__ import annotations

from typing import Any

import dpkt
import pytest
import trio.testing
from helpers import build_sites

import netstack
import netstack.host
import netstack.socket
from netstack.ipv4 import ipv4_of
from netstack.wire.ipv4 import IPPROTO_GRE, IPPROTO_IPIP, IPPROTO_IPV6

REMOTE = 0xC6336402  # 198.51.100.2, gw2's end of the tunnel

# every test counts lookups by replacing the method on the Ipv4 instance
pytestmark = pytest.mark.pure_python_layout(
    "replaces ip_route_output_key on the Ipv4 instance (a native one has no __dict__,"
    " and its compiled callers call the method directly)"
)


def count_outer_lookups(
    monkeypatch: pytest.MonkeyPatch, host: netstack.Host, proto: int
) -> list[int]:
    """Count *host*'s ``ip_route_output_key`` calls for the tunnel's outer packets."""
    ipv4 = ipv4_of(host.net)
    real = ipv4.ip_route_output_key
    calls: list[int] = []

    def counting(fl4: Any) -> Any:
        if fl4.daddr == REMOTE and fl4.proto == proto:
            calls.append(fl4.daddr)
        return real(fl4)

    monkeypatch.setattr(ipv4, "ip_route_output_key", counting)
    return calls


@pytest.mark.parametrize(("kind", "proto"), [("gre", IPPROTO_GRE), ("ipip", IPPROTO_IPIP)])
async def test_a_connected_tunnel_routes_its_outer_packets_once(
    lab: netstack.Lab,
    autojump_clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    proto: int,
) -> None:
    h = build_sites(lab, "", kind=kind)
    calls = count_outer_lookups(monkeypatch, h["gw1"], proto)
    assert (await h["s1"].ping("10.2.0.1", count=5, interval=0.1)).received == 5
    assert len(calls) == 1  # the first packet; the other four hit the cache
    t = h["gw1"].dev("gre1").priv
    assert t.dst_cache.rt is not None and t.dst_cache.saddr == 0xC0000201  # 192.0.2.1


async def test_tos_inherit_routes_every_packet(
    lab: netstack.Lab,
    autojump_clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``tos inherit``: the outer route depends on each inner packet's TOS (not connected)."""
    h = build_sites(lab, "tos inherit")
    calls = count_outer_lookups(monkeypatch, h["gw1"], IPPROTO_GRE)
    assert (await h["s1"].ping("10.2.0.1", count=3, interval=0.1)).received == 3
    assert len(calls) == 3
    assert h["gw1"].dev("gre1").priv.dst_cache.rt is None


async def test_a_route_change_is_seen_by_the_next_packet(
    lab: netstack.Lab,
    autojump_clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A new route to the remote (here with a smaller MTU) bumps rt_genid: the cached
    route fails dst_check and the next packet routes again, over the new route."""
    h = build_sites(lab, "")
    s1, gw1 = h["s1"], h["gw1"]
    calls = count_outer_lookups(monkeypatch, gw1, IPPROTO_GRE)
    assert (await s1.ping("10.2.0.1", count=2, interval=0.1, size=1300)).received == 2
    assert len(calls) == 1
    gw1.ip("route add 198.51.100.2/32 via 192.0.2.254 dev eth1 mtu 1300")
    told = await s1.ping("10.2.0.1", count=1, size=1300)
    assert len(calls) == 2
    # 1300 less the outer IPv4 and GRE headers: the inner DF packet of 1328 is too big
    assert [e.error for e in told.errors] == ["Frag needed and DF set (mtu = 1276)"]


async def test_changing_the_tunnel_resets_its_cache(
    lab: netstack.Lab,
    autojump_clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``ip link set … type gre …`` and ``ip tunnel change`` go through ip_tunnel_update,
    which resets the cache (dst_cache_reset); the next packet routes again."""
    h = build_sites(lab, "")
    s1, gw1 = h["s1"], h["gw1"]
    calls = count_outer_lookups(monkeypatch, gw1, IPPROTO_GRE)
    assert (await s1.ping("10.2.0.1", count=1)).received == 1
    t = gw1.dev("gre1").priv
    rt = t.dst_cache.rt
    assert rt is not None
    refs = rt.refcnt
    gw1.ip("link set gre1 type gre remote 198.51.100.2 local 192.0.2.1 ttl 64")
    assert t.dst_cache.rt is None and rt.refcnt == refs - 1  # the cache's reference dropped
    assert (await s1.ping("10.2.0.1", count=1)).received == 1
    gw1.ip("tunnel change gre1 mode gre remote 198.51.100.2 local 192.0.2.1 ttl 32")
    assert t.dst_cache.rt is None
    assert (await s1.ping("10.2.0.1", count=1)).received == 1
    assert len(calls) == 3
    gw1.ip("link del gre1")  # ip_tunnel_uninit resets it too
    assert t.dst_cache.rt is None


# SIT (sit.c's ipip6_tunnel_xmit) keeps a dst_cache too, and uses it whatever the
# IPv4 destination: a 6to4 packet's outer route is the cached one, only the outer
# destination address is each packet's own.

SIT_REMOTE = 0xC0000202  # 192.0.2.2
RELAY_2 = 0xC0000203  # 192.0.2.3


async def sit_rig(lab: netstack.Lab) -> tuple[netstack.Host, netstack.host.Port, Any]:
    h = lab.add_host("h")
    port = lab.add_port("h:eth0", up=False)
    h.ip("link set eth0 address 02:00:00:00:00:01 up")
    h.ip("addr add 192.0.2.1/24 dev eth0")
    for last in (2, 3):
        h.ip(f"neigh add 192.0.2.{last} lladdr 02:00:00:00:00:0{last} dev eth0 nud permanent")
    h.ip("link add sit1 type sit remote 192.0.2.2 local 192.0.2.1")
    h.ip("link set sit1 up")
    h.ip("-6 addr add 2001:db8:5::1/64 dev sit1")
    await trio.sleep(3)
    port.drain()
    return h, port, h.socket(netstack.socket.AF_INET6)


def count_sit_lookups(monkeypatch: pytest.MonkeyPatch, host: netstack.Host) -> list[int]:
    """*host*'s ``ip_route_output_key`` calls for protocol 41, by destination."""
    ipv4 = ipv4_of(host.net)
    real = ipv4.ip_route_output_key
    calls: list[int] = []

    def counting(fl4: Any) -> Any:
        if fl4.proto == IPPROTO_IPV6:
            calls.append(fl4.daddr)
        return real(fl4)

    monkeypatch.setattr(ipv4, "ip_route_output_key", counting)
    return calls


def outer_dsts(port: netstack.host.Port) -> list[bytes]:
    """The outer IPv4 destinations of the 6in4 frames *port* took."""
    frames = [dpkt.ethernet.Ethernet(f) for f in port.drain()]
    return [e.data.dst for e in frames if isinstance(e.data, dpkt.ip.IP) and e.data.p == 41]


async def test_sit_routes_its_outer_packets_once_until_the_fib_or_the_tunnel_changes(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    h, port, s = await sit_rig(lab)
    calls = count_sit_lookups(monkeypatch, h)
    for _ in range(3):
        await s.sendto(b"x", ("2001:db8:5::2", 9))
    await trio.sleep(0.01)
    assert calls == [SIT_REMOTE]  # the first packet; the other two hit the cache
    t = h.dev("sit1").priv
    assert t.dst_cache.rt is not None and t.dst_cache.saddr == 0xC0000201
    # a FIB change bumps rt_genid: the cached route fails dst_check
    h.ip("route add 192.0.2.2/32 dev eth0")
    await s.sendto(b"x", ("2001:db8:5::2", 9))
    await trio.sleep(0.01)
    assert calls == [SIT_REMOTE] * 2
    # changing the tunnel resets it (ip_tunnel_update → dst_cache_reset)
    rt = t.dst_cache.rt
    refs = rt.refcnt
    h.ip("link set sit1 type sit remote 192.0.2.2 local 192.0.2.1 ttl 64")
    assert t.dst_cache.rt is None and rt.refcnt == refs - 1
    await s.sendto(b"x", ("2001:db8:5::2", 9))
    await trio.sleep(0.01)
    assert calls == [SIT_REMOTE] * 3
    assert outer_dsts(port) == [bytes([192, 0, 2, 2])] * 5
    h.ip("link del sit1")  # ndo_uninit resets it too
    assert t.dst_cache.rt is None


async def test_sit0_reuses_its_cached_route_for_every_6to4_relay(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sit.c caches the outer route whatever the destination: the second 6to4
    relay (192.0.2.3) goes out by the route looked up for the first, with its own
    outer destination address."""
    h, port, s = await sit_rig(lab)
    h.ip("link set sit0 up")
    h.ip("-6 addr add 2002:c000:201::1/16 dev sit0")
    await trio.sleep(3)
    port.drain()
    calls = count_sit_lookups(monkeypatch, h)
    await s.sendto(b"a", ("2002:c000:202::1", 9))
    await s.sendto(b"b", ("2002:c000:203::1", 9))
    await trio.sleep(0.01)
    assert calls == [SIT_REMOTE]
    assert outer_dsts(port) == [bytes([192, 0, 2, 2]), bytes([192, 0, 2, 3])]
    assert h.dev("sit0").statistics().tx_packets == 2
