"""FibTable.by_dev, the routes by nexthop device that a device event walks,
stays what a walk over every route would find, through every kind of change."""

from __future__ import annotations

import trio.testing

import netstack
from netstack.ipv4.af_inet import ipv4_of
from netstack.ipv4.fib import FibTable


def _by_walk(table: FibTable) -> dict[object, set[int]]:
    out: dict[object, set[int]] = {}
    for fa in table.aliases():
        if fa.fi.nh is not None:
            out.setdefault(fa.fi.nh.dev, set()).add(id(fa))
    return out


def _by_index(table: FibTable) -> dict[object, set[int]]:
    return {dev: {id(fa) for fa in row} for dev, row in table.by_dev.items()}


async def test_the_device_index_follows_every_change(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with netstack.open_lab() as lab:
        a, b = lab.add_host("a"), lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0")
        lab.add_link("a:eth1", "b:eth1")
        fib = ipv4_of(a.net).fib

        def check() -> None:
            for table in fib.tables.values():
                assert _by_index(table) == _by_walk(table)
                for dev, row in table.by_dev.items():
                    assert len(row) == len({id(fa) for fa in row}), dev

        a.ip("addr add 10.0.0.1/24 dev eth0")
        a.ip("addr add 10.0.0.5/24 dev eth0")  # a secondary
        a.ip("addr add 10.1.0.1/24 dev eth1")
        check()
        a.ip("route add 192.168.0.0/16 via 10.0.0.2")
        a.ip("route add 172.16.0.0/12 dev eth1 metric 5")
        a.ip("route replace 192.168.0.0/16 via 10.1.0.2")
        a.ip("route append 172.16.0.0/12 dev eth0 metric 5")
        check()
        a.ip("route del 172.16.0.0/12 dev eth1 metric 5")
        a.ip("addr del 10.0.0.5/24 dev eth0")
        check()
        b.ip("link set eth1 down")  # a's eth1 loses carrier: linkdown
        await trio.sleep(1)
        assert "linkdown" in a.ip("route show 192.168.0.0/16")
        b.ip("link set eth1 up")
        await trio.sleep(1)
        assert "linkdown" not in a.ip("route show 192.168.0.0/16")
        a.ip("link set eth1 down")
        check()
        a.ip("link set eth1 up")
        a.ip("link del eth1")
        check()
        assert all(dev.name != "eth1" for t in fib.tables.values() for dev in t.by_dev)
