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

import pytest
import trio.testing
from helpers import build_sites

import netstack
from netstack.ipv4 import ipv4_of
from netstack.wire.ipv4 import IPPROTO_GRE, IPPROTO_IPIP

REMOTE = 0xC6336402  # 198.51.100.2, gw2's end of the tunnel


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
