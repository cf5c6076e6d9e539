"""pfifo, bfifo, pfifo_head_drop, pfifo_fast and prio, driven by hand on a downed dummy0."""

from __future__ import annotations

from typing import Any

import trio.testing
from helpers import dummy_host, udp_skb

import netstack
from netstack.core.netdevice import NET_XMIT_CN, NET_XMIT_DROP, NET_XMIT_SUCCESS
from netstack.core.qdisc import TCQ_F_CAN_BYPASS, Qdisc, qdisc_lookup
from netstack.core.skbuff import DropReason, SkBuff
from netstack.sched import PfifoFastQdisc, PfifoQdisc, PrioQdisc


def pkt(h: netstack.Host, sport: int = 0, **kw: Any) -> SkBuff:
    """A UDP frame numbered by its source port, on *h*'s dummy0."""
    return udp_skb(sport=sport, dev=h.dev("dummy0"), **kw)


def _tag(skb: SkBuff) -> int:
    """The UDP source port: a test's packet number."""
    th = skb.transport_header
    return int.from_bytes(skb.buf[th : th + 2], "big")


def _drain(q: Qdisc) -> list[int]:
    out = []
    while (skb := q.dequeue()) is not None:
        out.append(_tag(skb))
    return out


async def test_pfifo_limit_comes_from_txqueuelen_at_creation(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    h.ip("link set dummy0 txqueuelen 3")
    h.tc("qdisc add dev dummy0 root pfifo")
    q = h.dev("dummy0").qdisc
    assert isinstance(q, PfifoQdisc) and q.limit == 3 and q.flags & TCQ_F_CAN_BYPASS
    h.ip("link set dummy0 txqueuelen 1000")  # does not reach an existing pfifo
    rcs = [q.enqueue(pkt(h, i)) for i in range(5)]
    assert rcs == [NET_XMIT_SUCCESS] * 3 + [NET_XMIT_DROP] * 2
    assert (q.qlen, q.backlog, q.drops) == (3, 3 * 142, 2)
    assert _drain(q) == [0, 1, 2]
    assert (q.packets, q.bytes, q.qlen, q.backlog) == (3, 426, 0, 0)
    assert h.net.drop_reasons[DropReason.QDISC_DROP] == 2
    h.tc("qdisc change dev dummy0 root pfifo limit 0")
    assert q.limit == 0 and not q.flags & TCQ_F_CAN_BYPASS


async def test_bfifo_limits_bytes(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    h.tc("qdisc add dev dummy0 root bfifo")
    q = h.dev("dummy0").qdisc
    assert q.limit == 1000 * 1514  # txqueuelen * (mtu + hard_header_len)
    h.tc("qdisc change dev dummy0 root bfifo limit 330")
    assert [q.enqueue(pkt(h, i)) for i in range(3)] == [
        NET_XMIT_SUCCESS,
        NET_XMIT_SUCCESS,
        NET_XMIT_DROP,
    ]
    assert q.backlog == 284 and q.drops == 1
    # a smaller packet still fits in what is left
    assert q.enqueue(pkt(h, 9, payload=0)) == NET_XMIT_SUCCESS
    assert _drain(q) == [0, 1, 9]
    # a limit below one MTU cannot be bypassed
    assert not q.flags & TCQ_F_CAN_BYPASS


async def test_pfifo_head_drop_drops_the_oldest(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    h.tc("qdisc add dev dummy0 root pfifo_head_drop limit 2")
    q = h.dev("dummy0").qdisc
    rcs = [q.enqueue(pkt(h, i)) for i in range(4)]
    assert rcs == [NET_XMIT_SUCCESS, NET_XMIT_SUCCESS, NET_XMIT_CN, NET_XMIT_CN]
    assert (q.qlen, q.drops) == (2, 2)
    assert _drain(q) == [2, 3]
    h.tc("qdisc change dev dummy0 root pfifo_head_drop limit 0")
    assert q.enqueue(pkt(h, 9)) == NET_XMIT_DROP and q.qlen == 0


async def test_pfifo_fast_bands_and_live_txqueuelen(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    h.tc("qdisc add dev dummy0 root pfifo_fast")
    q = h.dev("dummy0").qdisc
    assert isinstance(q, PfifoFastQdisc)
    # TC_PRIO_BULK (2) → band 2, BESTEFFORT (0) → band 1, INTERACTIVE (6) → band 0
    for i, prio in enumerate([2, 0, 6, 2, 0, 6]):
        q.enqueue(pkt(h, i, priority=prio))
    assert q.peek() is not None and _tag(q.peek()) == 2  # type: ignore[arg-type]
    assert _drain(q) == [2, 5, 1, 4, 0, 3]
    # pfifo_fast reads txqueuelen at every enqueue
    h.ip("link set dummy0 txqueuelen 2")
    assert [q.enqueue(pkt(h, i)) for i in range(3)] == [
        NET_XMIT_SUCCESS,
        NET_XMIT_SUCCESS,
        NET_XMIT_DROP,
    ]
    h.ip("link set dummy0 txqueuelen 3")
    assert q.enqueue(pkt(h, 7)) == NET_XMIT_SUCCESS
    # deleting the qdisc purges it: QUEUE_PURGE, not a qdisc drop
    h.tc("qdisc del dev dummy0 root")
    assert h.net.drop_reasons[DropReason.QUEUE_PURGE] == 3
    assert h.net.drop_reasons[DropReason.QDISC_DROP] == 1


async def test_prio_classifies_by_priomap_and_by_classid(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    h.tc("qdisc add dev dummy0 root handle 1: prio")
    q = h.dev("dummy0").qdisc
    assert isinstance(q, PrioQdisc) and q.bands == 3
    q.enqueue(pkt(h, 1, priority=0))  # priomap: band 1 → class 1:2
    q.enqueue(pkt(h, 2, priority=6))  # band 0 → 1:1
    q.enqueue(pkt(h, 3, priority=0x10003))  # major == handle: class 1:3 directly
    q.enqueue(pkt(h, 4, priority=0x20001))  # another major: priomap of 0 → band 1
    q.enqueue(pkt(h, 5, priority=0x10009))  # no such class: prio2band[0] → band 1
    q.enqueue(pkt(h, 6, priority=0x10000))  # minor 0: also prio2band[0]
    assert [c.qlen for c in q.queues] == [1, 4, 1]
    assert q.qlen == 6 and q.backlog == 6 * 142
    stats = {c.dump.classid: c.stats.qlen for c in _classes(h) if c.stats is not None}
    assert stats == {0x10001: 1, 0x10002: 4, 0x10003: 1}
    assert _drain(q) == [2, 1, 4, 5, 6, 3]  # strict priority, FIFO within a band
    assert q.packets == 6 and q.qlen == 0 and q.backlog == 0


def _classes(h: netstack.Host) -> list[netstack.sched.sch_api.ClassInfo]:
    from netstack.sched.sch_api import tc_dump_tclass

    return tc_dump_tclass(h.net, h.dev("dummy0").ifindex)


async def test_prio_child_drops_reach_the_parent(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    h.tc("qdisc add dev dummy0 root handle 1: prio bands 2 priomap 1 1 1 1 1 1 0 0 1 1 1 1 1 1 1 1")
    h.tc("qdisc add dev dummy0 parent 1:2 handle 20: pfifo limit 2")
    h.tc("qdisc add dev dummy0 parent 1:1 handle 10: pfifo_head_drop limit 1")
    q = h.dev("dummy0").qdisc
    child2 = qdisc_lookup(h.dev("dummy0"), 0x200000)
    assert child2 is not None and child2.parent == 0x10002
    rcs = [q.enqueue(pkt(h, i)) for i in range(3)]
    assert rcs == [NET_XMIT_SUCCESS, NET_XMIT_SUCCESS, NET_XMIT_DROP]
    assert (q.qlen, q.drops, child2.drops) == (2, 1, 1)
    # head drop in band 0: NET_XMIT_CN is not counted by prio, but the child
    # tells its ancestors the dropped packet's bytes left (qdisc_tree_reduce_backlog)
    assert q.enqueue(pkt(h, 10, priority=6)) == NET_XMIT_SUCCESS
    assert q.enqueue(pkt(h, 11, priority=6, payload=200)) == NET_XMIT_CN
    assert q.qlen == 3 and q.backlog == 142 * 2 + 242
    assert _drain(q) == [11, 0, 1]


async def test_prio_change_bands_flushes_the_removed_ones(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    h.tc("qdisc add dev dummy0 root handle 1: prio bands 4 priomap 3 3 3 3 3 3 3 3 3 3 3 3 3 3 3 3")
    q = h.dev("dummy0").qdisc
    assert isinstance(q, PrioQdisc)
    for i in range(3):
        q.enqueue(pkt(h, i))
    q.enqueue(pkt(h, 9, priority=0x10001))
    assert [c.qlen for c in q.queues] == [1, 0, 0, 3]
    h.tc("qdisc change dev dummy0 root handle 1: prio bands 2 priomap" + " 0" * 16)
    assert q.bands == 2 and len(q.queues) == 2
    assert (q.qlen, q.drops) == (1, 3)  # the band that went away took its packets with it
    assert h.net.drop_reasons[DropReason.QUEUE_PURGE] == 3
    assert _drain(q) == [9]
