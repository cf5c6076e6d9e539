"""Canonical topologies: functions that build a lab's hosts, links and addresses.

Theory of operation: a *topology function* takes a :class:`~netstack.host.Lab`
and returns what a test wants to hold (hosts, usually). The pytest plugin's
fixtures are these functions applied to the ``lab`` fixture, and
:func:`netstack.testing.topology_fixture` turns any such function — or a lab
file, through :func:`lab_file` — into a fixture. Everything is configured
through the same ``ip``/``sysctl`` commands a user would type.

* :func:`two_hosts`: ``a`` 10.0.0.1/24 — veth — ``b`` 10.0.0.2/24.
* :func:`routed_hosts`: ``h1`` 10.0.1.1 — ``router`` (10.0.1.254 | 10.0.2.254,
  forwarding on) — ``h2`` 10.0.2.2, default routes via the router (gVisor's
  ``SetupRoutedStacks``).
* :func:`gre_sites`: two sites whose routers join their LANs with a GRE
  tunnel across a transit router (needs GRE tunnels; see the function).

Their hosts boot IPv4-only (``net.ipv6.conf.all.disable_ipv6 = 1``), so a
check of "the next frame on this port" sees what the test sent, not IPv6's
router solicitations and DAD probes; a test that wants IPv6 builds its own
hosts (or writes ``0`` to that sysctl).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from netstack.testing.builders import IPV4_ONLY

if TYPE_CHECKING:
    from netstack.host import Host, Lab

__all__ = [
    "GreSites",
    "RoutedHosts",
    "TopologyUnavailable",
    "TwoHosts",
    "gre_sites",
    "lab_file",
    "routed_hosts",
    "two_hosts",
]

Topology = Callable[["Lab"], Any]


class TopologyUnavailable(Exception):
    """The topology needs a feature this netstack does not have (the fixture skips)."""


class TwoHosts(NamedTuple):
    a: Host
    b: Host


class RoutedHosts(NamedTuple):
    h1: Host
    router: Host
    h2: Host


class GreSites(NamedTuple):
    """Site A (``a1`` behind ``ra``) and site B (``b1`` behind ``rb``), transit ``t``."""

    a1: Host
    ra: Host
    t: Host
    rb: Host
    b1: Host


def _config(host: Host, *commands: str) -> None:
    for cmd in commands:
        if cmd.startswith("sysctl "):
            host.sysctl(cmd.split()[-1])
        else:
            host.ip(cmd)


def two_hosts(lab: Lab) -> TwoHosts:
    """``a`` (10.0.0.1/24) and ``b`` (10.0.0.2/24) joined by a veth pair ``eth0``–``eth0``."""
    a, b = lab.add_host("a", sysctls=IPV4_ONLY), lab.add_host("b", sysctls=IPV4_ONLY)
    lab.add_link("a:eth0", "b:eth0")
    _config(a, "addr add 10.0.0.1/24 dev eth0")
    _config(b, "addr add 10.0.0.2/24 dev eth0")
    return TwoHosts(a, b)


def routed_hosts(lab: Lab) -> RoutedHosts:
    """``h1`` — ``router`` — ``h2`` on 10.0.1.0/24 and 10.0.2.0/24, veth links."""
    h1, router, h2 = (lab.add_host(n, sysctls=IPV4_ONLY) for n in ("h1", "router", "h2"))
    lab.add_link("h1:eth0", "router:eth0")
    lab.add_link("router:eth1", "h2:eth0")
    _config(h1, "addr add 10.0.1.1/24 dev eth0", "route add default via 10.0.1.254")
    _config(
        router,
        "addr add 10.0.1.254/24 dev eth0",
        "addr add 10.0.2.254/24 dev eth1",
        "sysctl net.ipv4.ip_forward=1",
    )
    _config(h2, "addr add 10.0.2.2/24 dev eth0", "route add default via 10.0.2.254")
    return RoutedHosts(h1, router, h2)


def gre_sites(lab: Lab) -> GreSites:
    """Two sites joined by a GRE tunnel ``gre1`` between their routers.

    ``a1`` 10.1.0.1/24 — ``ra`` (10.1.0.254 | 192.0.2.1) — ``t`` (192.0.2.254 |
    198.51.100.254) — ``rb`` (198.51.100.1 | 10.2.0.254) — ``b1`` 10.2.0.1/24;
    ``ra`` and ``rb`` carry 10.1.0.0/24 ↔ 10.2.0.0/24 over ``gre1`` (172.16.0.1/30 ↔
    172.16.0.2/30), configured with ``ip link add gre1 type gre remote … local … ttl 64``.

    Raises:
        TopologyUnavailable: this netstack cannot create GRE devices yet.
    """
    from netstack.errors import ConfigError

    names = ("a1", "ra", "t", "rb", "b1")
    a1, ra, t, rb, b1 = (lab.add_host(n, sysctls=IPV4_ONLY) for n in names)
    lab.add_link("a1:eth0", "ra:eth0")
    lab.add_link("ra:eth1", "t:eth0")
    lab.add_link("t:eth1", "rb:eth1")
    lab.add_link("rb:eth0", "b1:eth0")
    _config(a1, "addr add 10.1.0.1/24 dev eth0", "route add default via 10.1.0.254")
    _config(b1, "addr add 10.2.0.1/24 dev eth0", "route add default via 10.2.0.254")
    _config(
        t,
        "addr add 192.0.2.254/24 dev eth0",
        "addr add 198.51.100.254/24 dev eth1",
        "sysctl net.ipv4.ip_forward=1",
    )
    for r, lan, wan, gw in (
        (ra, "10.1.0.254/24", "192.0.2.1/24", "192.0.2.254"),
        (rb, "10.2.0.254/24", "198.51.100.1/24", "198.51.100.254"),
    ):
        _config(
            r,
            f"addr add {lan} dev eth0",
            f"addr add {wan} dev eth1",
            f"route add default via {gw}",
            "sysctl net.ipv4.ip_forward=1",
        )
    try:
        _config(ra, "link add gre1 type gre remote 198.51.100.1 local 192.0.2.1 ttl 64")
        _config(rb, "link add gre1 type gre remote 192.0.2.1 local 198.51.100.1 ttl 64")
    except ConfigError as e:
        raise TopologyUnavailable(
            f"gre_sites needs GRE tunnels: ip link add … type gre: {e}"
        ) from e
    _config(
        ra,
        "link set gre1 up",
        "addr add 172.16.0.1/30 dev gre1",
        "route add 10.2.0.0/24 dev gre1",
    )
    _config(
        rb,
        "link set gre1 up",
        "addr add 172.16.0.2/30 dev gre1",
        "route add 10.1.0.0/24 dev gre1",
    )
    return GreSites(a1, ra, t, rb, b1)


def lab_file(path: str | Path) -> Callable[[Lab], Awaitable[dict[str, Host]]]:
    """A topology function that builds the lab file at *path* (hosts, links, commands).

    Its result is the lab's hosts by name. Steps and checks are not run.
    """

    async def build(lab: Lab) -> dict[str, Host]:
        import trio

        from netstack.labs.labfile import build_lab, load_lab
        from netstack.labs.session import Session

        spec = load_lab(path)
        async with trio.open_nursery() as nursery:
            session = Session(lab, nursery)
            await build_lab(spec, lab, session, captures=False)
            nursery.cancel_scope.cancel()
        return dict(lab.hosts)

    return build
