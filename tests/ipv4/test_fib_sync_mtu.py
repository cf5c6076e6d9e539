"""fib_sync_mtu(): a device's MTU change reaches its nexthops' PMTU exceptions.

Linux's fib_netdev_event(NETDEV_CHANGEMTU) runs fib_sync_mtu(dev, orig_mtu)
before rt_cache_flush(): fib_nhc_update_mtu() lowers every exception above the
new MTU, lets one the old MTU limited (``pmtu == orig``) follow it up, and
unlocks a locked one (below ``min_pmtu``) once the MTU is at or below it.
"""

from __future__ import annotations

import trio

from netstack.host import Host, Lab
from netstack.ipv4 import ipv4_of
from netstack.ipv4.fib import FibNh
from netstack.ipv4.route import Flowi4, Rtable, ip_rt_update_pmtu
from netstack.wire.ipv4 import aton

A, B, C = aton("10.9.0.1"), aton("10.9.0.2"), aton("10.9.0.3")


async def host(lab: Lab) -> Host:
    h = lab.add_host("h")
    h.ip("link add dummy0 type dummy")
    h.ip("link set dummy0 up")
    h.ip("addr add 10.0.1.1/24 dev dummy0")
    h.ip("route add default via 10.0.1.254")
    await trio.sleep(1)
    return h


def learn(h: Host, daddr: int, mtu: int) -> None:
    ipv4 = ipv4_of(h.net)
    rt = ipv4.ip_route_output_key(Flowi4(daddr))
    assert isinstance(rt, Rtable)
    ip_rt_update_pmtu(ipv4, rt, daddr, mtu)
    rt.release()


def pmtus(h: Host) -> dict[int, tuple[int, bool]]:
    res = ipv4_of(h.net).fib.lookup(A)
    assert res is not None and isinstance(res.nh, FibNh)
    return {d: (e.pmtu, e.mtu_locked) for d, e in res.nh.exceptions.items()}


async def test_mtu_change_updates_the_exceptions(lab: Lab, autojump_clock: object) -> None:
    h = await host(lab)
    learn(h, A, 1400)
    learn(h, B, 1200)
    learn(h, C, 400)  # below min_pmtu (552): locked at 552
    assert pmtus(h) == {A: (1400, False), B: (1200, False), C: (552, True)}
    h.ip("link set dummy0 mtu 1300")  # A above the new MTU comes down; B, C stay
    assert pmtus(h) == {A: (1300, False), B: (1200, False), C: (552, True)}
    h.ip("link set dummy0 mtu 1500")  # A was limited by the old MTU: follows it up
    assert pmtus(h) == {A: (1500, False), B: (1200, False), C: (552, True)}
    h.ip("link set dummy0 mtu 552")  # at the locked PMTU: unlocked
    assert pmtus(h) == {A: (552, False), B: (552, False), C: (552, False)}
