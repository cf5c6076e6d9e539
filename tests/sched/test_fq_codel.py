"""CoDel's arithmetic and fq_codel's flows, DRR, drops and ECN, by hand on a downed dummy0."""

from __future__ import annotations

import math
from typing import Any

import pytest
import trio
import trio.testing
from helpers import dummy_host, udp_skb

import netstack
from netstack.core.netdevice import NET_XMIT_CN, NET_XMIT_SUCCESS
from netstack.core.skbuff import DropReason, SkBuff
from netstack.sched import FqCodelQdisc
from netstack.sched.codel import (
    MS2TIME,
    CodelVars,
    codel_control_law,
    codel_newton_step,
    codel_time_to_us,
    us2time,
)
from netstack.sched.fq_codel import skb_get_hash

# -- CoDel ----------------------------------------------------------------------------


def test_codel_time_units() -> None:
    assert MS2TIME(5) == 4882 and MS2TIME(100) == 97656  # ns >> 10
    assert codel_time_to_us(MS2TIME(5)) == 4999  # tc prints it as "5ms" (%.3g)
    assert us2time(5000) == 4882
    assert codel_time_to_us(us2time(100_000)) == 99999


def test_newton_step_converges_to_one_over_sqrt_count() -> None:
    """One Newton step per drop, count growing by one each time (as codel_dequeue does):
    rough at first, then within 0.1% from count 20 on."""
    v = CodelVars()
    v.count = 1
    v.rec_inv_sqrt = 0xFFFF  # ~0U >> REC_INV_SQRT_SHIFT: 1/sqrt(1)
    seen = {}
    for count in range(2, 300):
        v.count = count
        codel_newton_step(v)
        seen[count] = v.rec_inv_sqrt
        if count >= 20:
            assert abs(v.rec_inv_sqrt / 65536 * math.sqrt(count) - 1) < 1e-3
    # Q0.16 values of the kernel's integer arithmetic
    assert (seen[2], seen[3], seen[4], seen[100]) == (32769, 36864, 31968, 6553)


def test_control_law_spaces_drops_by_interval_over_sqrt_count() -> None:
    interval = MS2TIME(100)
    assert codel_control_law(1000, interval, 0xFFFF) == 1000 + interval - 2  # (2^32 - 2^16)/2^32
    half = codel_control_law(0, interval, 0x8000)  # 1/sqrt(4)
    assert half == interval // 2
    # codel time is a u32 that wraps
    assert codel_control_law(0xFFFFFFF0, interval, 0xFFFF) == (0xFFFFFFF0 + interval - 2) & (
        2**32 - 1
    )


# -- fq_codel ---------------------------------------------------------------------------


def _fq(h: netstack.Host, opts: str = "") -> FqCodelQdisc:
    h.tc(f"qdisc add dev dummy0 root handle 1: fq_codel {opts}")
    q = h.dev("dummy0").qdisc
    assert isinstance(q, FqCodelQdisc)
    return q


def _pkt(h: netstack.Host, flow: int, n: int = 0, **kw: Any) -> SkBuff:
    """Flow *flow* is UDP source port 1000 + flow; the packet number rides in the payload."""
    skb = udp_skb(sport=1000 + flow, dev=h.dev("dummy0"), **kw)
    skb.buf[skb.transport_header + 8 : skb.transport_header + 12] = n.to_bytes(4, "big")
    return skb


def _who(skb: SkBuff) -> tuple[int, int]:
    th = skb.transport_header
    return (
        int.from_bytes(skb.buf[th : th + 2], "big") - 1000,
        int.from_bytes(skb.buf[th + 8 : th + 12], "big"),
    )


def test_flow_hash_is_symmetric_and_seeded() -> None:
    a = udp_skb("10.0.0.1", "10.0.0.2", 1111, 2222)
    b = udp_skb("10.0.0.2", "10.0.0.1", 2222, 1111)
    c = udp_skb("10.0.0.1", "10.0.0.2", 1111, 2223)
    assert skb_get_hash(a, 7) == skb_get_hash(b, 7) != skb_get_hash(c, 7)
    d = udp_skb("10.0.0.1", "10.0.0.2", 1111, 2222)
    assert skb_get_hash(d, 8) != skb_get_hash(a, 7)


async def test_defaults(lab: netstack.Lab, autojump_clock: trio.testing.MockClock) -> None:
    h = dummy_host(lab)
    q = _fq(h)
    assert (q.limit, q.flows_cnt, q.quantum, q.memory_limit, q.drop_batch_size) == (
        10240,
        1024,
        1514,  # psched_mtu(): mtu + hard_header_len
        32 << 20,
        64,
    )
    assert q.cparams.ecn and (q.cparams.target, q.cparams.interval) == (MS2TIME(5), MS2TIME(100))


async def test_a_sparse_flow_goes_ahead_of_the_backlog(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    q = _fq(h)
    for i in range(50):
        q.enqueue(_pkt(h, 0, i, payload=1000))
    assert [_who(q.dequeue()) for _ in range(2)] == [(0, 0), (0, 1)]  # type: ignore[arg-type]
    q.enqueue(_pkt(h, 1, 0, payload=50))  # a new flow: served before flow 0's next turn
    out = [_who(s) for s in iter(q.dequeue, None)]
    assert out[0] == (1, 0)
    assert out[1:] == [(0, i) for i in range(2, 50)]
    x = q.dump_stats()
    assert x.new_flow_count == 2 and x.new_flows_len == 0 and x.old_flows_len == 0


async def test_drr_shares_bytes_not_packets(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    q = _fq(h)
    for i in range(100):
        q.enqueue(_pkt(h, 0, i, payload=1000))  # 1042-byte frames
        q.enqueue(_pkt(h, 1, i, payload=200))  # 242-byte frames
        q.enqueue(_pkt(h, 1, 100 + i, payload=200))
    sent = {0: 0, 1: 0}
    for _ in range(120):
        skb = q.dequeue()
        assert skb is not None
        sent[_who(skb)[0]] += len(skb)
    assert abs(sent[0] - sent[1]) <= 2 * q.quantum


async def test_overlimit_drops_half_the_fattest_flow(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    q = _fq(h, "limit 100")
    for i in range(80):
        q.enqueue(_pkt(h, 0, i))
    for i in range(20):
        q.enqueue(_pkt(h, 1, i))
    assert q.qlen == 100
    # the 101st: drop half of flow 0's bytes (40 packets) from its head
    assert q.enqueue(_pkt(h, 1, 20)) == NET_XMIT_SUCCESS
    assert (q.qlen, q.drops, q.drop_overlimit) == (61, 40, 40)
    flow0 = q.flows[q.classify(_pkt(h, 0)) - 1]
    assert flow0.cvars.count == 40  # "tell codel to increase its signal strength"
    assert h.net.drop_reasons[DropReason.QDISC_DROP] == 40
    # when the enqueuing flow is the fattest, the caller hears NET_XMIT_CN
    for i in range(21, 60):
        q.enqueue(_pkt(h, 1, i))
    assert q.qlen == 100
    assert q.enqueue(_pkt(h, 1, 60)) == NET_XMIT_CN
    out = [_who(s) for s in iter(q.dequeue, None)]
    assert out[0] == (0, 40)  # the survivors of flow 0 are its newest packets


async def test_codel_drops_after_an_interval_above_target(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    q = _fq(h, "noecn")
    n = 0
    sent = 0
    # 1 packet in per ms, 1 out per 2 ms: the queue and its sojourn time grow
    for ms in range(400):
        q.enqueue(_pkt(h, 0, n, payload=1000))
        n += 1
        if ms % 2 == 0 and q.dequeue() is not None:
            sent += 1
        await trio.sleep(0.001)
    assert q.cstats.drop_count == 0  # reported to the parents (none) and reset
    # packet k enters at k ms and leaves at 2k ms: sojourn k ms, above 5 ms from ~12 ms; the
    # first drop ~100 ms later (~114 ms), then every 100/sqrt(count) ms: ~214, 285, 343, 393
    assert sent == 200 and q.drops == 5 and q.drops + sent + q.qlen == n
    flow = q.flows[q.classify(_pkt(h, 0)) - 1]
    assert flow.cvars.dropping and flow.cvars.count == 5  # one per drop of this episode
    # the first drop came only once the sojourn time had stayed above 5 ms for 100 ms
    assert q.dump_stats().ecn_mark == 0


async def test_codel_marks_ect_packets_instead(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    q = _fq(h)  # ecn is on by default
    marked = 0
    for ms in range(400):
        q.enqueue(_pkt(h, 0, ms, payload=1000, tos=0x02))  # ECT(0)
        if ms % 2 == 0:
            skb = q.dequeue()
            assert skb is not None
            marked += skb.buf[skb.network_header + 1] & 3 == 3
        await trio.sleep(0.001)
    assert q.drops == 0
    assert marked == 5 and q.dump_stats().ecn_mark == marked  # the drop schedule above, marked


async def test_memory_limit(lab: netstack.Lab, autojump_clock: trio.testing.MockClock) -> None:
    h = dummy_host(lab)
    q = _fq(h, "memory_limit 20000")
    truesize = _pkt(h, 0).truesize
    for i in range(40):
        q.enqueue(_pkt(h, i % 2, i))
    assert q.memory_usage <= 20000 + truesize
    stats = q.dump_stats()
    # truesize 832 (a 576-byte skbuff_small_head head + the sk_buff, as 6.3+): the
    # 25th packet goes over (25 x 832 > 20000) and the fatter flow loses half its
    # bytes (fq_codel_drop), again each time the queue is over; every drop was for
    # memory (768 with a kmalloc-512 head before 6.3: 16 drops)
    assert truesize == 832
    assert (stats.drop_overmemory, stats.drop_overlimit) == (22, 22)


@pytest.mark.slow
async def test_smaller_limit_trims_the_queue_now(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    q = _fq(h)
    for i in range(30):
        q.enqueue(_pkt(h, 0, i))
    h.tc("qdisc change dev dummy0 root handle 1: fq_codel limit 10")
    assert q.qlen == 10 and q.limit == 10
    # as in the kernel, the trimmed packets went out through dequeue: counted as sent
    assert q.packets == 20
    assert h.net.drop_reasons[DropReason.QUEUE_PURGE] == 20
    assert [_who(s)[1] for s in iter(q.dequeue, None)] == list(range(20, 30))


async def test_flows_are_the_classes(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    q = _fq(h)
    q.enqueue(_pkt(h, 0))
    q.enqueue(_pkt(h, 0))
    q.enqueue(_pkt(h, 5))
    walk = q.cl_walk()
    assert len(walk) == 2
    stats = [q.cl_dump_stats(cl) for cl in walk]
    assert sorted(s.qlen for s in stats) == [1, 2]
    assert all(s.xstats.deficit == q.quantum for s in stats)
    # skb->priority naming the qdisc's own handle picks the bucket directly
    q.enqueue(_pkt(h, 9, priority=0x10007))
    assert 7 in q.cl_walk()
