"""Floods of each kind leave every table within its documented bound (issue 13).

    h (10.0.0.2/16, 2001:db8::2/64; a TCP listener on 7000, UDP on 5000) ── Port

Each test writes a flood through the Port in two passes and asserts that the
table the flood grows stays within the bound the kernel sets
(docs/robustness.md lists them), and that once it is there the second pass
leaves the Python heap (``tracemalloc``) where the first left it: the
memory is bounded, not merely slow to grow. The CI size is 1,000 frames per
pass (with the bounds lowered by sysctl where 1,000 would not reach them);
``NETSTACK_RELIABILITY=full`` runs 50,000 per pass with the default bounds
(``benchmarks/floods.py`` runs a million and prints the figures).
"""

from __future__ import annotations

import gc
import os
import tracemalloc
from collections.abc import Iterator
from typing import Any, Final

import pytest
import trio

from netstack.host import Host, Lab, Port
from netstack.ipv4 import ipv4_of
from netstack.ipv4.route import FNHE_HASH_SIZE, FNHE_RECLAIM_DEPTH
from netstack.ipv6.af_inet6 import ipv6_of
from netstack.ipv6.route import FIB6_EXCEPTION_BUCKET_SIZE, FIB6_MAX_DEPTH
from netstack.socket import AF_INET, AF_INET6, SOCK_DGRAM, SOCK_STREAM
from netstack.tcp import TcpSock, tcp_of
from netstack.tcp.sock import RequestSock
from netstack.testing import floods
from netstack.wire.ipv4 import aton
from netstack.wire.ipv6 import aton as aton6

FULL: Final = os.environ.get("NETSTACK_RELIABILITY") == "full"
N: Final = 50_000 if FULL else 1_000  # frames per pass
FLAT: Final = 64 * 1024  # what a second pass may add to the heap, at most
PEER_MAC: Final = bytes.fromhex("020000000001")
H4, H6 = aton("10.0.0.2"), aton6("2001:db8::2")
GW4, GW6 = aton("10.0.0.1"), aton6("2001:db8::1")
BACKLOG: Final = 64

# the lab fixture keeps every frame for a failure's pcaps: that would be the heap's growth
pytestmark = pytest.mark.netstack_nocapture


async def rig(lab: Lab) -> tuple[Host, Port]:
    h = lab.add_host("h")
    port = lab.add_port("h:eth0")
    h.ip("addr add 10.0.0.2/16 dev eth0")
    h.ip("route add default via 10.0.0.1")
    h.ip("neigh add 10.0.0.1 lladdr 02:00:00:00:00:01 dev eth0")
    h.ip("-6 addr add 2001:db8::2/64 dev eth0 nodad")
    h.ip("-6 route add default via 2001:db8::1")
    h.ip("-6 neigh add 2001:db8::1 lladdr 02:00:00:00:00:01 dev eth0")
    await trio.sleep(1)
    return h, port


async def pour(port: Port, frames: Iterator[bytes], traced: bool = False) -> int:
    """Write *frames* into the host, yielding every 64; with *traced*, what the
    heap kept of what they allocated (``tracemalloc``, after a full collection)."""
    gc.collect()
    if traced:
        tracemalloc.start()
    try:
        for i, frame in enumerate(frames):
            port.send_nowait(frame)
            if i % 64 == 63:
                await trio.sleep(0.001)
                port.drain()
        await trio.sleep(0.01)
        port.drain()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] if traced else 0
    finally:
        if traced:
            tracemalloc.stop()


async def two_passes(port: Port, flood: object, *args: object, **kw: object) -> int:
    """Pour ``flood(N, *args, seed=1)``, then ``seed=2`` traced: the second pass's growth."""
    make: object = flood
    assert callable(make)
    await pour(port, make(N, *args, seed=1, **kw))
    return await pour(port, make(N, *args, seed=2, **kw), traced=True)


def mac(h: Host) -> bytes:
    return bytes(h.dev("eth0").dev_addr)


@pytest.mark.parametrize("family", [AF_INET, AF_INET6])
@pytest.mark.slow
async def test_fragment_flood_stays_under_ipfrag_high_thresh(
    lab: Lab, autojump_clock: object, family: int
) -> None:
    h, port = await rig(lab)
    thresh = 4 * 1024 * 1024 if FULL else 512 * 1024
    frags: Any
    if family == AF_INET:
        frags = ipv4_of(h.net).frags
        h.sysctl(f"net.ipv4.ipfrag_high_thresh={thresh}")
        grown = await two_passes(port, floods.frag_flood, mac(h), PEER_MAC, aton("10.0.0.0"), H4)
    else:
        frags = ipv6_of(h.net).frags
        h.sysctl(f"net.ipv6.ip6frag_high_thresh={thresh}")
        flood = floods.frag_flood6
        grown = await two_passes(port, flood, mac(h), PEER_MAC, aton6("2001:db8::"), H6)
    assert frags.mem <= thresh + 4096  # one fragment past the threshold, at most
    assert len(frags.queues) < N
    assert grown < FLAT
    await trio.sleep(61)  # ipfrag_time / ip6frag_time: everything times out
    assert frags.mem == 0 and not frags.queues


@pytest.mark.parametrize("family", [AF_INET, AF_INET6])
@pytest.mark.slow
async def test_syn_flood_keeps_the_syn_queue_at_the_backlog(
    lab: Lab, autojump_clock: object, family: int
) -> None:
    h, port = await rig(lab)
    srv = h.socket(family, SOCK_STREAM)
    await srv.bind(("", 7000))
    srv.listen(BACKLOG)
    lsk = srv.sock
    assert isinstance(lsk, TcpSock)
    if family == AF_INET:
        src, dst = aton("198.18.0.0"), H4
        grown = await two_passes(port, floods.syn_flood, mac(h), PEER_MAC, src, dst, 7000)
    else:
        src, dst = aton6("2001:db8:99::"), H6
        grown = await two_passes(port, floods.syn_flood6, mac(h), PEER_MAC, src, dst, 7000)
    tcp = tcp_of(h.net)
    reqs = [r for r in tcp.hashinfo.ehash.values() if isinstance(r, RequestSock)]
    assert lsk.syn_queue_len == len(reqs) == BACKLOG + 1
    ext = tcp.snmp()["TcpExt"]
    assert ext.SyncookiesSent == 2 * N - (BACKLOG + 1)  # every other SYN: a cookie, no state
    assert grown < FLAT
    await trio.sleep(120)  # the requests' SYN-ACK retries run out
    assert lsk.syn_queue_len == 0


@pytest.mark.parametrize("family", [AF_INET, AF_INET6])
@pytest.mark.slow
async def test_neighbour_flood_stays_under_gc_thresh3(
    lab: Lab, autojump_clock: object, family: int
) -> None:
    h, port = await rig(lab)
    thresh3 = 1024 if FULL else 256
    if family == AF_INET:
        tbl = ipv4_of(h.net).arp_tbl
        h.sysctl(f"net.ipv4.neigh.default.gc_thresh3={thresh3}")
        grown = await two_passes(port, floods.arp_flood, aton("10.0.0.0"), H4)
    else:
        tbl = ipv6_of(h.net).nd_tbl
        h.sysctl(f"net.ipv6.neigh.default.gc_thresh3={thresh3}")
        grown = await two_passes(port, floods.nd_flood, aton6("2001:db8::"), H6)
    assert len(tbl.hash) <= tbl.gc_thresh3 == thresh3
    assert grown < FLAT


@pytest.mark.slow
async def test_icmp_error_flood_keeps_no_state(lab: Lab, autojump_clock: object) -> None:
    """Errors from ever new sources about our datagrams: counted, nothing kept."""
    h, port = await rig(lab)
    sock = h.socket(AF_INET, SOCK_DGRAM)
    await sock.bind(("0.0.0.0", 5000))
    ipv4 = ipv4_of(h.net)
    grown = await two_passes(port, floods.icmp_err_flood, mac(h), PEER_MAC, aton("198.18.0.0"), H4)
    assert h.nstat()["IcmpInDestUnreachs"] == 2 * N
    assert len(ipv4.peers) == 0 and ipv4.fnhe_created == 0
    assert grown < FLAT


@pytest.mark.slow
async def test_packet_too_big_flood_bounds_route_exceptions(
    lab: Lab, autojump_clock: object
) -> None:
    h, port = await rig(lab)
    sock = h.socket(AF_INET6, SOCK_DGRAM)
    await sock.bind(("::", 5000))
    net6 = aton6("2001:db8:77::")
    await pour(port, floods.ptb_flood(N, mac(h), PEER_MAC, GW6, H6, net6, 5000, seed=1))
    ipv6 = ipv6_of(h.net)
    f = next(f for f in ipv6.fib6.routes() if f.dst_len == 0 and f.nh.gw)
    bound = FIB6_EXCEPTION_BUCKET_SIZE * (2 * FIB6_MAX_DEPTH - 1)
    assert len(f.nh.exceptions) == ipv6.fib_rt_cache <= min(N, bound)
    assert max(len(c) for c in f.nh.exception_buckets.values()) <= 2 * FIB6_MAX_DEPTH - 1


@pytest.mark.slow
async def test_frag_needed_flood_bounds_nexthop_exceptions(
    lab: Lab, autojump_clock: object
) -> None:
    h, port = await rig(lab)
    sock = h.socket(AF_INET, SOCK_DGRAM)
    await sock.bind(("0.0.0.0", 5000))
    net4 = aton("10.77.0.0")
    await pour(port, floods.frag_needed_flood(N, mac(h), PEER_MAC, GW4, H4, net4, 5000, seed=1))
    ipv4 = ipv4_of(h.net)
    res = ipv4.fib.lookup(aton("10.77.0.1"))
    assert res is not None and res.nh is not None
    nh = res.nh
    bound = FNHE_HASH_SIZE * 2 * FNHE_RECLAIM_DEPTH
    assert len(nh.exceptions) <= min(N, bound)
    assert max(len(c) for c in nh.fnhe_hash.values()) <= 2 * FNHE_RECLAIM_DEPTH
