"""Rtable.update_pmtu: __ip_rt_update_pmtu's returns that leave the route as it is.

A tunnel calls it for every packet (tnl_update_pmtu) with an MTU that does not
shrink the route's: the same PMTU learnt less than half an expiry ago is kept
as it is, a larger MTU is ignored, an older one is learnt again (its expiry
pushed back), and an MTU below min_pmtu is learnt locked even when the route
already carries min_pmtu.
"""

from __future__ import annotations

import struct

import trio
import trio.testing

from netstack.core.skbuff import SkBuff
from netstack.host import Lab
from netstack.ipv4 import ipv4_of
from netstack.ipv4.route import Flowi4, Rtable
from netstack.wire.ipv4 import aton


async def test_the_same_pmtu_is_kept_then_learnt_again_after_half_an_expiry(
    autojump_clock: trio.testing.MockClock, lab: Lab
) -> None:
    a, b = lab.add_host("a"), lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0")
    a.ip("addr add 192.0.2.1/24 dev eth0")
    b.ip("addr add 192.0.2.2/24 dev eth0")
    ipv4 = ipv4_of(a.net)
    hz = a.net.clock.hz

    def route() -> Rtable:
        rt = ipv4.ip_route_output_key(Flowi4(aton("192.0.2.2"), 0))
        assert isinstance(rt, Rtable)
        return rt

    def packet() -> SkBuff:
        buf = bytearray(40)
        struct.pack_into("!II", buf, 12, aton("192.0.2.1"), aton("192.0.2.2"))
        skb = SkBuff(buf, 0, 40)
        skb.network_header = 0
        return skb

    rt = route()
    assert rt.rt_pmtu == 0 and rt.mtu() == 1500
    rt.update_pmtu(packet(), 1600)  # larger than the route's: ignored
    assert route().rt_pmtu == 0
    rt.update_pmtu(packet(), 1500)  # the device's MTU, no PMTU yet: learnt
    learnt = route()
    assert learnt.rt_pmtu == 1500
    expires = learnt.expires
    assert expires == a.net.clock.jiffies + ipv4.ip_rt_mtu_expires * hz
    await trio.sleep(ipv4.ip_rt_mtu_expires / 2 - 1)
    learnt.update_pmtu(packet(), 1500)  # less than half an expiry ago: kept as it is
    assert route().expires == expires
    await trio.sleep(2)
    learnt.update_pmtu(packet(), 1500)  # more: learnt again, its expiry pushed back
    again = route()
    assert again.rt_pmtu == 1500
    assert again.expires == a.net.clock.jiffies + ipv4.ip_rt_mtu_expires * hz > expires
    again.update_pmtu(packet(), 1400)  # smaller: learnt
    smaller = route()
    assert smaller.rt_pmtu == 1400 and not smaller.rt_mtu_locked
    smaller.update_pmtu(packet(), ipv4.ip_rt_min_pmtu)
    at_min = route()
    assert at_min.rt_pmtu == ipv4.ip_rt_min_pmtu and not at_min.rt_mtu_locked
    at_min.update_pmtu(packet(), 500)  # below min_pmtu: min_pmtu again, but locked
    locked = route()
    assert locked.rt_pmtu == ipv4.ip_rt_min_pmtu and locked.rt_mtu_locked
