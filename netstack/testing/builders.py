"""Builders: the small topologies and probes tests write over and over, with their variants.

Theory of operation: where :mod:`.topologies` holds the canonical, fixed
topologies the plugin's fixtures hand out, a *builder* is the same kind of
function with knobs — the link kind, rate, delay and MTU, whether the hosts
boot IPv4-only, the address family — so that a test which needs "two hosts on
a NIC cable with 1 ms delay" or "a router whose next hop has MTU 1000" says so
in one call instead of copying the ten lines that build it:

* :func:`pair`: ``a`` 10.0.0.1/24 — ``b`` 10.0.0.2/24 on one link (IPv6:
  2001:db8::1/64 and ::2/64);
* :func:`routed`: ``a`` 10.0.1.1 — ``r`` (10.0.1.254 | 10.0.2.254) — ``b``
  10.0.2.1, default routes via ``r``, forwarding on (IPv6: 2001:db8:1::1 —
  2001:db8:1::fe | 2001:db8:2::fe — 2001:db8:2::2);
* :func:`add_addr`, :func:`add_route`: ``ip addr add`` and ``ip route add …
  via`` through the kernel API (IPv4) or ``ip -6`` (IPv6);
* :func:`nstat`: one ``nstat -az`` counter, 0 when absent;
* :func:`open_test_lab`: a lab (skb poisoning on) that fails with
  ``trio.TooSlowError`` instead of hanging when a test waits forever.

IPv4 addresses and routes go through the kernel API
(``inet_rtm_newaddr``/``fib_table_insert``, protocol ``boot`` as ``ip``
gives them), so a builder works before any user-space tool is involved.
Hosts boot IPv4-only by default (``net.ipv6.conf.all.disable_ipv6 = 1``, see
:data:`IPV4_ONLY`): a test counting every frame or counter of an IPv4
exchange then does not see IPv6's DAD and router solicitations.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Literal, TypedDict

if TYPE_CHECKING:
    from netstack.drivers.nic import RxCsumMode
    from netstack.host import Host, Lab

__all__ = [
    "IPV4_ONLY",
    "LinkOptions",
    "add_addr",
    "add_route",
    "nstat",
    "open_test_lab",
    "pair",
    "routed",
]

# Linux would also send IPv6 DAD and router solicitations on every link and
# drop the neighbours' solicited-node multicast it has not joined, so hosts of
# tests that count every frame, counter or drop of an IPv4 exchange boot with
# IPv6 off (``sysctl net.ipv6.conf.all.disable_ipv6=1``).
IPV4_ONLY: dict[str, str | int] = {"net.ipv6.conf.all.disable_ipv6": 1}


class LinkOptions(TypedDict, total=False):
    """The keyword arguments of ``Lab.add_link`` a builder passes on."""

    kind: Literal["veth", "nic"]
    rate: float | None
    delay: float
    mtu: int | None
    rx_csum: RxCsumMode


def add_addr(
    host: Host, dev: str, cidr: str, *, broadcast: str | None = None, nodad: bool = False
) -> None:
    """``ip addr add CIDR [brd BROADCAST] dev DEV [nodad]``.

    IPv4 goes through the kernel API (``inet_rtm_newaddr``); an IPv6 *cidr*
    (one with a ``:``) through ``ip -6 addr add``, with *nodad*
    (``IFA_F_NODAD``) usable at once instead of tentative for DAD's second.
    A bare address is a /32 (IPv6: /128).
    """
    if ":" in cidr:
        host.ip(f"-6 addr add {cidr} dev {dev}" + (" nodad" if nodad else ""))
        return
    from netstack.ipv4 import ipv4_of
    from netstack.wire.ipv4 import aton

    addr, _, plen = cidr.partition("/")
    ipv4_of(host.net).add_address(
        host.dev(dev),
        aton(addr),
        int(plen or 32),
        broadcast=aton(broadcast) if broadcast is not None else 0,
    )


def add_route(host: Host, cidr: str, gw: str) -> None:
    """``ip route add CIDR via GW`` (IPv4: kernel API, protocol boot; IPv6: ``ip -6``)."""
    if ":" in cidr or ":" in gw:
        dst = "default" if cidr in ("::/0", "default") else cidr
        host.ip(f"-6 route add {dst} via {gw}")
        return
    from netstack.ipv4 import ipv4_of
    from netstack.ipv4.fib import RouteConfig
    from netstack.wire.ipv4 import aton

    dst, _, plen = cidr.partition("/")
    ipv4_of(host.net).fib.add_route(RouteConfig(aton(dst), int(plen or 32), gw=aton(gw), dev=None))


def nstat(host: Host, name: str) -> int:
    """Counter *name* of ``nstat -az`` on *host* (0 if the host has no such counter)."""
    return host.nstat().get(name, 0)


@contextlib.asynccontextmanager
async def open_test_lab(deadline: float = 300.0) -> AsyncIterator[Lab]:
    """``open_lab(debug_skb=True)`` inside ``trio.fail_after(deadline)``.

    *deadline* is virtual time (the autojump clock gets there at once), so a
    test that waits for something that never comes fails with
    ``trio.TooSlowError`` instead of hanging.
    """
    import trio

    from netstack.host import open_lab

    with trio.fail_after(deadline):
        async with open_lab(debug_skb=True) as lab:
            yield lab


def _boot(lab: Lab, name: str, ipv4_only: bool, seed: int | None = None) -> Host:
    return lab.add_host(name, sysctls=dict(IPV4_ONLY) if ipv4_only else None, seed=seed)


def pair(
    lab: Lab,
    *,
    kind: Literal["veth", "nic"] = "veth",
    rate: float | None = None,
    delay: float = 0.0,
    mtu: int | None = None,
    rx_csum: RxCsumMode = "unnecessary",
    family: Literal[4, 6, "dual"] = 4,
    ipv4_only: bool = True,
    seed: int | None = None,
    addresses: bool = True,
    broadcast: str | None = None,
    nodad: bool = False,
) -> tuple[Host, Host]:
    """Hosts ``a`` and ``b`` joined by one link ``a:eth0`` — ``b:eth0``.

    Args:
        kind, rate, delay, mtu, rx_csum: the link (see ``Lab.add_link``).
        family: 4: ``a`` 10.0.0.1/24, ``b`` 10.0.0.2/24; 6: 2001:db8::1/64,
            2001:db8::2/64; ``"dual"``: both (give ``ipv4_only=False`` too).
        ipv4_only: boot both hosts with IPv6 disabled (:data:`IPV4_ONLY`).
        seed: ``a``'s RNG seed (``b`` gets *seed* + 1); None: the lab's.
        addresses: False leaves both ends without an address.
        broadcast: the IPv4 addresses' broadcast (``brd``), none by default.
        nodad: the IPv6 addresses skip DAD (``nodad``), usable at once.
    """
    a = _boot(lab, "a", ipv4_only, seed)
    b = _boot(lab, "b", ipv4_only, None if seed is None else seed + 1)
    lab.add_link("a:eth0", "b:eth0", kind=kind, rate=rate, delay=delay, mtu=mtu, rx_csum=rx_csum)
    if addresses:
        for n, host in enumerate((a, b), 1):
            if family != 6:
                add_addr(host, "eth0", f"10.0.0.{n}/24", broadcast=broadcast)
            if family != 4:
                add_addr(host, "eth0", f"2001:db8::{n}/64", nodad=nodad)
    return a, b


def routed(
    lab: Lab,
    *,
    kind: Literal["veth", "nic"] = "veth",
    rate: float | None = None,
    delay: float = 0.0,
    mtu: int | None = None,
    next_hop: LinkOptions | None = None,
    family: Literal[4, 6] = 4,
    ipv4_only: bool = True,
    forward: bool = True,
    default_routes: bool = True,
) -> tuple[Host, Host, Host]:
    """``a`` — ``r`` — ``b``: two hosts on two subnets and the router between them.

    IPv4: ``a`` 10.0.1.1/24 — ``r`` eth0 10.0.1.254/24, eth1 10.0.2.254/24 —
    ``b`` 10.0.2.1/24; IPv6: 2001:db8:1::1/64 — 2001:db8:1::fe/64,
    2001:db8:2::fe/64 — 2001:db8:2::2/64.

    Args:
        kind, rate, delay, mtu: both links (see ``Lab.add_link``).
        next_hop: what differs on the second link, ``r:eth1`` — ``b:eth0``
            (for example ``{"mtu": 1000}``).
        family: 4 or 6 (addresses, routes and the forwarding sysctl).
        ipv4_only: boot the three hosts with IPv6 disabled (:data:`IPV4_ONLY`).
        forward: ``r`` forwards (``net.ipv4.ip_forward`` /
            ``net.ipv6.conf.all.forwarding``).
        default_routes: ``a`` and ``b`` get a default route via ``r``.
    """
    a, r, b = (_boot(lab, n, ipv4_only) for n in "arb")
    first = LinkOptions(kind=kind, rate=rate, delay=delay, mtu=mtu)
    lab.add_link("a:eth0", "r:eth0", **first)
    second = first.copy()
    second.update(next_hop or {})
    lab.add_link("r:eth1", "b:eth0", **second)
    if family == 6:
        plan = ("2001:db8:1::1/64", "2001:db8:1::fe/64", "2001:db8:2::fe/64", "2001:db8:2::2/64")
        default, sysctl = "::/0", "net.ipv6.conf.all.forwarding"
    else:
        plan = ("10.0.1.1/24", "10.0.1.254/24", "10.0.2.254/24", "10.0.2.1/24")
        default, sysctl = "0.0.0.0/0", "net.ipv4.ip_forward"
    add_addr(a, "eth0", plan[0])
    add_addr(r, "eth0", plan[1])
    add_addr(r, "eth1", plan[2])
    add_addr(b, "eth0", plan[3])
    if default_routes:
        add_route(a, default, plan[1].partition("/")[0])
        add_route(b, default, plan[2].partition("/")[0])
    r.sysctl(f"{sysctl}={int(forward)}")
    return a, r, b
