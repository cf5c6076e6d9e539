"""Small helpers shared by the tests (importable as ``helpers``: tests/ is on pythonpath)."""

from __future__ import annotations

import netstack
from netstack.ipv4 import ipv4_of
from netstack.wire.ipv4 import aton


def add_addr(host: netstack.Host, dev: str, cidr: str) -> None:
    """``ip addr add CIDR dev DEV`` through the kernel API."""
    addr, _, plen = cidr.partition("/")
    ipv4_of(host.net).add_address(host.dev(dev), aton(addr), int(plen or 32))


def build_sites(lab: netstack.Lab, gre_opts: str, how: str = "link") -> dict[str, netstack.Host]:
    """Two sites joined by GRE across a router.

    s1 (10.1.0.1) ─ gw1 ═ gre1 over 192.0.2.0/24 ─ r ─ 198.51.100.0/24 ═ gw2 ─ s2 (10.2.0.1);
    *gre_opts* are appended to both gateways' ``ip link add``/``ip tunnel add`` (*how*).
    """
    s1, gw1, r, gw2, s2 = (lab.add_host(n) for n in ("s1", "gw1", "r", "gw2", "s2"))
    lab.add_link("s1:eth0", "gw1:eth0")
    lab.add_link("gw1:eth1", "r:eth0")
    lab.add_link("r:eth1", "gw2:eth1")
    lab.add_link("gw2:eth0", "s2:eth0")
    s1.ip("addr add 10.1.0.1/24 dev eth0")
    s1.ip("route add default via 10.1.0.254")
    s2.ip("addr add 10.2.0.1/24 dev eth0")
    s2.ip("route add default via 10.2.0.254")
    gw1.ip("addr add 10.1.0.254/24 dev eth0")
    gw1.ip("addr add 192.0.2.1/24 dev eth1")
    gw1.ip("route add default via 192.0.2.254")
    gw2.ip("addr add 10.2.0.254/24 dev eth0")
    gw2.ip("addr add 198.51.100.2/24 dev eth1")
    gw2.ip("route add default via 198.51.100.254")
    r.ip("addr add 192.0.2.254/24 dev eth0")
    r.ip("addr add 198.51.100.254/24 dev eth1")
    for h in (gw1, r, gw2):
        h.sysctl("net.ipv4.ip_forward=1")
    for gw, local, remote, net_ in (
        (gw1, "192.0.2.1", "198.51.100.2", "10.2.0.0/24"),
        (gw2, "198.51.100.2", "192.0.2.1", "10.1.0.0/24"),
    ):
        if how == "link":
            gw.ip(f"link add gre1 type gre remote {remote} local {local} {gre_opts}")
        else:
            gw.ip(f"tunnel add gre1 mode gre remote {remote} local {local} {gre_opts}")
        gw.ip("link set gre1 up")
        gw.ip(f"route add {net_} dev gre1")
    return {"s1": s1, "gw1": gw1, "r": r, "gw2": gw2, "s2": s2}
