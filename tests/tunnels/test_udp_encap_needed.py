"""UDP GRO looks a datagram's socket up only while an encapsulation socket exists.

A tunnel's GRO cell runs the decapsulated datagram through ``udp4_gro_receive``.
Only an encapsulation socket (VXLAN's, made by ``setup_udp_tunnel_sock``) has a
GRO handler, so the kernel looks the socket up there only while
``udp_encap_needed_key`` is on (``udp_encap_enable``); otherwise the datagram
is flushed at once and ``udp_rcv`` does the one lookup that delivers it.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
import trio
import trio.testing
from helpers import IPV4_ONLY

import netstack
from netstack import sites
from netstack.gro.core import GroNode
from netstack.ipv4 import ipv4_of
from netstack.ipv4.offload import UDP_ENCAP_NEEDED_KEY


def two_hosts_over_a_tunnel(
    lab: netstack.Lab, kind: str = "ipip", name: str = "t1"
) -> tuple[netstack.Host, netstack.Host]:
    """a and b on one link, joined by a tunnel device *name* of type *kind*."""
    a, b = (lab.add_host(n, sysctls=IPV4_ONLY) for n in ("a", "b"))
    lab.add_link("a:eth0", "b:eth0")
    a.ip("addr add 192.0.2.1/24 dev eth0")
    b.ip("addr add 192.0.2.2/24 dev eth0")
    for h, local, remote, addr in (
        (a, "192.0.2.1", "192.0.2.2", "10.9.0.1/30"),
        (b, "192.0.2.2", "192.0.2.1", "10.9.0.2/30"),
    ):
        h.ip(f"link add {name} type {kind} remote {remote} local {local}")
        h.ip(f"link set {name} up")
        h.ip(f"addr add {addr} dev {name}")
    return a, b


async def send_datagrams(tx: Any, rx: Any, n: int) -> None:
    for i in range(n):
        await tx.sendto(b"%d" % i, ("10.9.0.2", 9000))
        with trio.fail_after(1):
            await rx.recvfrom(100)


async def sockets(a: netstack.Host, b: netstack.Host) -> tuple[Any, Any]:
    rx = b.socket()
    await rx.bind(("0.0.0.0", 9000))
    return a.socket(), rx


@pytest.mark.pure_python_layout(
    "replaces lookup on a UdpTable instance (read-only on a native one)"
)
async def test_no_encap_socket_no_lookup_in_gro(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = two_hosts_over_a_tunnel(lab)
    tx, rx = await sockets(a, b)
    await send_datagrams(tx, rx, 1)  # ARP and routes
    table = ipv4_of(b.net).udp_table
    real = table.lookup
    calls: list[int] = []

    def counting(*args: Any) -> Any:
        calls.append(args[3])
        return real(*args)

    # every __udp4_lib_lookup() charges its cost site, whoever makes it: udp_rcv has
    # the lookup written out, so the table's method alone would miss udp_rcv's
    lookups: list[str] = []

    def charged(site: str, nbytes: int = 0) -> None:
        if site == "__udp4_lib_lookup":
            lookups.append(site)

    monkeypatch.setattr(table, "lookup", counting)
    sites.activate(charged)
    try:
        await send_datagrams(tx, rx, 4)
    finally:
        sites.deactivate(charged)
    assert UDP_ENCAP_NEEDED_KEY.get(b.net).count == 0
    gro = b.dev("t1").napi_list[0].gro
    assert isinstance(gro, GroNode) and gro.received == 5  # each went through the GRO cell
    assert calls == []  # none through the table's method: GRO looked nothing up
    assert len(lookups) == 4  # udp_rcv's, one per datagram


async def test_a_vxlan_socket_switches_the_lookup_on_and_off(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, b = two_hosts_over_a_tunnel(lab)
    key = UDP_ENCAP_NEEDED_KEY.get(b.net)
    b.ip("link add vxlan0 type vxlan id 42 dstport 4789 remote 192.0.2.1 dev eth0")
    assert key.count == 0  # the socket opens with the device
    b.ip("link set vxlan0 up")
    assert key.count == 1
    tx, rx = await sockets(a, b)
    await send_datagrams(tx, rx, 2)  # plain datagrams still delivered (no GRO handler)
    b.ip("link set vxlan0 down")
    assert key.count == 0
    b.ip("link set vxlan0 up")
    b.ip("link del vxlan0")
    assert key.count == 0


@pytest.mark.pure_python_layout(
    "replaces lookup on a UdpTable instance (read-only on a native one)"
)
async def test_an_inner_datagram_is_looked_up_before_its_encap_mark_is_tested(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the key is on, udp4_gro_receive() looks every datagram up, a VXLAN
    frame's inner one too: udp_gro_receive() tests NAPI_GRO_CB(skb)->encap_mark
    only after udp4_gro_lookup_skb() (and timed mode charges that lookup)."""
    a, b = two_hosts_over_a_tunnel(lab, "vxlan id 42 dstport 4789", "vx0")
    b.ethtool("-K eth0 gro on")
    tx, rx = await sockets(a, b)
    await send_datagrams(tx, rx, 1)  # ARP on both layers
    table = ipv4_of(b.net).udp_table
    real = table.lookup
    by_mark = {0: 0, 1: 0}

    def counting(*args: Any) -> Any:
        frame = sys._getframe(1)
        if frame.f_code.co_name == "udp4_gro_receive":
            by_mark[frame.f_locals["cb"].encap_mark] += 1
        return real(*args)

    monkeypatch.setattr(table, "lookup", counting)
    await send_datagrams(tx, rx, 3)
    # unmarked: each outer datagram in eth0's GRO and each decapsulated one in
    # vx0's GRO cell (a fresh cb); marked: each inner datagram inside the outer
    # one's pass through eth0's GRO (vxlan_gro_receive set the mark)
    assert by_mark == {0: 6, 1: 3}
