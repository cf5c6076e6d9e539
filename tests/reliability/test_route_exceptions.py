"""Issue 13, item 3: route exceptions are bounded per hash chain, so in total.

A flood of ICMPv6 Packet Too Big (or ICMP fragmentation needed) about ever new
destinations made one exception per destination, kept 10 minutes: hundreds of
MB per million frames. The kernel hashes exceptions into
``FIB6_EXCEPTION_BUCKET_SIZE`` (IPv6) / ``FNHE_HASH_SIZE`` (IPv4) chains per
nexthop and drops a chain's oldest entry beyond ``FIB6_MAX_DEPTH`` /
``FNHE_RECLAIM_DEPTH`` plus a random part below the same number.
"""

from __future__ import annotations

import trio

from netstack.host import Host, Lab
from netstack.ipv4 import ipv4_of
from netstack.ipv4.route import (
    FNHE_HASH_SIZE,
    FNHE_RECLAIM_DEPTH,
    Flowi4,
    Rtable,
    ip_rt_update_pmtu,
)
from netstack.ipv6.af_inet6 import ipv6_of
from netstack.ipv6.route import (
    FIB6_EXCEPTION_BUCKET_SIZE,
    FIB6_MAX_DEPTH,
    Flowi6,
    rt6_update_pmtu,
)
from netstack.wire.ipv4 import aton
from netstack.wire.ipv6 import aton as aton6

N = 20_000  # destinations, each reported once


async def host(lab: Lab) -> Host:
    h = lab.add_host("h")
    h.ip("link add dummy0 type dummy")
    h.ip("link set dummy0 up")
    h.ip("addr add 10.0.1.1/24 dev dummy0")
    h.ip("route add default via 10.0.1.254")
    h.ip("-6 addr add 2001:db8:1::1/64 dev dummy0 nodad")
    h.ip("-6 route add default via 2001:db8:1::fe")
    await trio.sleep(1)
    return h


async def test_ipv6_exceptions_bounded(lab: Lab, autojump_clock: object) -> None:
    h = await host(lab)
    ipv6 = ipv6_of(h.net)
    saddr = aton6("2001:db8:1::1")
    base = aton6("2001:db8:77::")
    for i in range(N):
        daddr = base + i
        rt = ipv6.ip6_route_output(Flowi6(daddr, saddr))
        rt6_update_pmtu(ipv6, rt, daddr, saddr, 1280 + i % 100)
        rt.release()
    f = next(f for f in ipv6.fib6.routes() if f.dst_len == 0 and f.nh.gw)
    nh = f.nh
    deepest = 2 * FIB6_MAX_DEPTH - 1  # FIB6_MAX_DEPTH + prandom_u32_max(FIB6_MAX_DEPTH)
    assert len(nh.exception_buckets) <= FIB6_EXCEPTION_BUCKET_SIZE
    assert max(len(c) for c in nh.exception_buckets.values()) <= deepest
    assert sum(len(c) for c in nh.exception_buckets.values()) == len(nh.exceptions)
    assert len(nh.exceptions) <= FIB6_EXCEPTION_BUCKET_SIZE * deepest < N
    assert ipv6.fib_rt_cache == len(nh.exceptions)
    # the newest is kept once it is younger than the rest: within one jiffy
    # rt6_exception_remove_oldest() finds no older stamp than the chain's head
    # (the newest) and drops that, as the kernel does
    await trio.sleep(0.001)
    rt = ipv6.ip6_route_output(Flowi6(base + N, saddr))
    rt6_update_pmtu(ipv6, rt, base + N, saddr, 1300)
    rt.release()
    assert base + N in nh.exceptions
    # they expire with ip6_rt_mtu_expires and the GC takes them all
    await trio.sleep(600 + 60)
    assert not nh.exceptions and ipv6.fib_rt_cache == 0


async def test_ipv4_exceptions_bounded(lab: Lab, autojump_clock: object) -> None:
    h = await host(lab)
    ipv4 = ipv4_of(h.net)
    base = aton("10.77.0.0")
    for i in range(N + 20_000):
        daddr = base + i
        rt = ipv4.ip_route_output_key(Flowi4(daddr))
        assert isinstance(rt, Rtable)
        ip_rt_update_pmtu(ipv4, rt, daddr, 1400 - i % 100)
        rt.release()
    res = ipv4.fib.lookup(base)
    assert res is not None and res.nh is not None
    nh = res.nh
    deepest = 2 * FNHE_RECLAIM_DEPTH  # a chain may reach max_depth + 1 before reclaim
    assert len(nh.fnhe_hash) <= FNHE_HASH_SIZE
    assert max(len(c) for c in nh.fnhe_hash.values()) <= deepest
    assert sum(len(c) for c in nh.fnhe_hash.values()) == len(nh.exceptions)
    assert len(nh.exceptions) <= FNHE_HASH_SIZE * deepest < N + 20_000
    assert base + N + 20_000 - 1 in nh.exceptions
