"""Faults as a test asks for them: partitions, links down/up, MTU and route changes mid-run."""

from __future__ import annotations

import pytest
import trio

from netstack import Lab
from netstack.errors import TopologyError
from netstack.labs.labfile import build_lab, parse_lab
from netstack.labs.session import Session


def chain(lab: Lab) -> None:
    """a — r — b, and c beside a on r."""
    for n in ("a", "r", "b", "c"):
        lab.add_host(n)
    lab.add_link("a:eth0", "r:eth0")
    lab.add_link("r:eth1", "b:eth0")
    lab.add_link("c:eth0", "r:eth2")
    r = lab["r"]
    r.sysctl("net.ipv4.ip_forward=1")
    for i, (h, net) in enumerate((("a", 1), ("b", 2), ("c", 3))):
        r.ip(f"addr add 10.0.{net}.254/24 dev eth{i}")
        lab[h].ip(f"addr add 10.0.{net}.1/24 dev eth0")
        lab[h].ip(f"route add default via 10.0.{net}.254")


async def test_partition_at_a_virtual_time_then_heal(lab: Lab) -> None:
    chain(lab)
    a, b, c = lab["a"], lab["b"], lab["c"]
    part = lab.partition(["a", "c"], ["b"], at=10.0, until=20.0)
    assert (await a.ping("10.0.2.1", count=1)).received == 1  # t≈0: not cut yet
    await trio.sleep_until(12.0)
    assert part.active is True  # cut at 10 s
    assert (await a.ping("10.0.2.1", count=3, timeout=1)).received == 0
    assert (await c.ping("10.0.2.1", count=1, timeout=1)).received == 0
    assert (await c.ping("10.0.1.1", count=1)).received == 1  # same side: fine
    assert b.drops()["NETFILTER_DROP"] == 4  # the requests vanished on arrival at b
    assert lab["r"].snmp()["Ip"].ForwDatagrams == 2 + 4 + 2  # r forwarded them all
    await trio.sleep_until(20.5)
    assert [p.active for p in lab.partitions] == [False]  # healed at 20 s
    assert (await a.ping("10.0.2.1", count=1)).received == 1
    assert b.drops()["NETFILTER_DROP"] == 4


async def test_partition_misuse(lab: Lab) -> None:
    chain(lab)
    with pytest.raises(TopologyError, match="both sides"):
        lab.partition(["a"], ["a", "b"])
    with pytest.raises(TopologyError, match="no host 'zz'"):
        lab.partition("a", "zz")


async def test_link_down_and_up(lab: Lab) -> None:
    chain(lab)
    a = lab["a"]
    lab.link_down("a:eth0", at=5.0)
    lab.link_up("r:eth0", at=8.0)  # either end names the link
    await trio.sleep_until(6.0)
    assert "state DOWN" in a.ip("link show dev eth0")
    assert "state DOWN" in lab["r"].ip("link show dev eth0")
    async with a.as_current():
        s = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_DGRAM)
        with pytest.raises(OSError, match="Network is unreachable"):
            await s.sendto(b"x", ("10.0.2.1", 9))
    await trio.sleep_until(9.0)
    assert "default" not in a.ip("route show")  # as on Linux: down took the routes away
    a.ip("route add default via 10.0.1.254")
    assert (await a.ping("10.0.2.1", count=1)).received == 1


async def test_mtu_and_route_mid_run(lab: Lab) -> None:
    chain(lab)
    a, r = lab["a"], lab["r"]
    lab.set_mtu("r:eth1", 1280, at=1.0)
    lab.set_route("a", "10.0.2.0/24 via 10.0.1.254 dev eth0 mtu lock 1000", at=2.0)
    await trio.sleep_until(3.0)
    assert "mtu 1280" in r.ip("link show dev eth1")
    assert "mtu 1280" in lab["b"].ip("link show dev eth0")  # both ends of the link
    assert "10.0.2.0/24 via 10.0.1.254 dev eth0 mtu lock 1000" in a.ip("route show")


async def test_names_table_of_a_lab_file(lab: Lab) -> None:
    spec = parse_lab(
        """
[names]
web = "192.0.2.80"
db = ["192.0.2.81", "2001:db8::81"]

[hosts.a]
commands = ["ip addr add 192.0.2.1/24 dev eth0"]
[hosts.b]

[[links]]
ends = ["a:eth0", "b:eth0"]
""",
        "n.toml",
    )
    async with trio.open_nursery() as nursery:
        await build_lab(spec, lab, Session(lab, nursery), captures=False)
    r = lab["a"].context.resolver
    assert [x[4][0] for x in r.getaddrinfo("db", 1, type=1)] == ["192.0.2.81", "2001:db8::81"]
    with pytest.raises(
        Exception,
        match=r"n.toml:1:1: names: name 'web': '300.1.1.1' is not an IPv4 or IPv6 address",
    ):
        parse_lab('[names]\nweb = "300.1.1.1"\n', "n.toml")
