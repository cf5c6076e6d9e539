"""netem's decisions, queue and timing, driven by hand on a downed dummy0.

The decisions are checked against the kernel's algorithm replayed with
``prandom_u32_state`` from the same seed: that is what makes ``seed N``
reproduce Linux's sequence of losses.
"""

from __future__ import annotations

import itertools
from typing import Any

import trio
import trio.testing
from helpers import dummy_host, udp_skb

import netstack
from netstack.core.hrtimer import ktime_get_ns
from netstack.core.netdevice import NET_XMIT_DROP, NET_XMIT_SUCCESS
from netstack.core.prandom import RndState
from netstack.core.qdisc import NET_XMIT_BYPASS
from netstack.core.skbuff import SkBuff
from netstack.sched import NetemQdisc
from netstack.wire.checksum import ip_fast_csum

U32 = 0xFFFFFFFF


def _netem(h: netstack.Host, opts: str) -> NetemQdisc:
    h.tc(f"qdisc add dev dummy0 root netem {opts}")
    q = h.dev("dummy0").qdisc
    assert isinstance(q, NetemQdisc)
    return q


def _pkt(h: netstack.Host, n: int, **kw: Any) -> SkBuff:
    return udp_skb(sport=n, dev=h.dev("dummy0"), **kw)


def _tag(skb: SkBuff) -> int:
    th = skb.transport_header
    return int.from_bytes(skb.buf[th : th + 2], "big")


def _drain(q: NetemQdisc) -> list[int]:
    out = []
    while (skb := q.dequeue()) is not None:
        out.append(_tag(skb))
    return out


async def test_loss_decisions_replay_the_kernel_prng(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    q = _netem(h, "limit 5000 loss 10% seed 42")
    loss = round(0.10 * U32)  # tc: rint(10% * UINT32_MAX)
    assert q.loss == loss and q.seed == 42
    prng = RndState(42)
    expected = [loss < prng.u32() for _ in range(2000)]  # kept unless loss >= draw
    kept = [q.enqueue(_pkt(h, i)) == NET_XMIT_SUCCESS for i in range(2000)]
    assert kept == expected
    assert q.drops == expected.count(False)
    assert 150 < q.drops < 250
    assert _drain(q) == [i for i in range(2000) if expected[i]]


async def test_a_lost_packet_is_a_bypass_drop(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    q = _netem(h, "loss 100%")
    assert q.enqueue(_pkt(h, 1)) == NET_XMIT_SUCCESS | NET_XMIT_BYPASS
    assert (q.qlen, q.drops) == (0, 1)


async def test_ecn_marks_instead_of_dropping(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    q = _netem(h, "loss 100% ecn")
    ect0 = _pkt(h, 1, tos=0x02)
    assert q.enqueue(ect0) == NET_XMIT_SUCCESS
    assert q.enqueue(_pkt(h, 2, tos=0x00)) == NET_XMIT_SUCCESS | NET_XMIT_BYPASS  # Not-ECT
    assert q.drops == 2  # the kernel counts the mark as a drop too
    (skb,) = list(iter(q.dequeue, None))
    nh = skb.network_header
    assert skb.buf[nh + 1] & 3 == 3  # CE
    assert ip_fast_csum(skb.buf, nh, 20) == 0  # the header checksum was updated


async def test_duplicate_goes_to_the_root_once(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    h.ip("link set dummy0 up")  # the root a duplicate goes to is the active one
    q = _netem(h, "duplicate 100%")
    assert q.enqueue(_pkt(h, 7)) == NET_XMIT_SUCCESS
    # the clone was enqueued at the root (netem itself), marked so that it is not
    # duplicated again
    assert q.qlen == 2
    out = list(iter(q.dequeue, None))
    assert [_tag(s) for s in out] == [7, 7]
    assert sorted(s.tc_depth for s in out) == [0, 1]
    assert out[0].buf is out[1].buf  # a clone shares the data
    assert q.packets == 2


async def test_limit_counts_every_queued_packet(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    q = _netem(h, "limit 5 delay 10ms")
    rcs = [q.enqueue(_pkt(h, i)) for i in range(7)]
    assert rcs == [NET_XMIT_SUCCESS] * 5 + [NET_XMIT_DROP] * 2
    assert (q.qlen, q.drops) == (5, 2)


async def test_delay_holds_packets_and_arms_the_watchdog(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    q = _netem(h, "delay 100ms")
    t0 = ktime_get_ns(h.net)
    q.enqueue(_pkt(h, 1))
    assert q.dequeue() is None
    assert q.watchdog.timer.is_queued() and q.watchdog.timer.expires == t0 + 100_000_000
    await trio.sleep(0.099)
    assert q.dequeue() is None
    await trio.sleep(0.001)
    assert [_tag(s) for s in iter(q.dequeue, None)] == [1]


async def test_jitter_is_uniform_around_the_delay(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    q = _netem(h, "delay 100ms 10ms seed 7")
    sigma = 10_000_000
    prng = RndState(7)
    t0 = ktime_get_ns(h.net)
    for i in range(500):
        q.enqueue(_pkt(h, i))
    # tabledist(): (rnd % (2 * sigma)) + mu - sigma, with no correlation
    expected = sorted(t0 + 100_000_000 + prng.u32() % (2 * sigma) - sigma for _ in range(500))
    assert sorted(t for t, _, _ in q.tfifo) == expected
    assert min(expected) >= t0 + 90_000_000 and max(expected) < t0 + 110_000_000
    # packets leave in time order, so jitter reorders them
    await trio.sleep(0.2)
    out = _drain(q)
    assert sorted(out) == list(range(500)) and out != list(range(500))


async def test_reorder_sends_every_gap_th_packet_at_once(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    q = _netem(h, "delay 10ms reorder 100% gap 5")
    for i in range(12):
        q.enqueue(_pkt(h, i))
    # packets 4 and 9 (the 5th of each gap) skip the delay and jump the queue
    assert _drain(q) == [9, 4]
    assert q.requeues == 2
    await trio.sleep(0.01)
    assert _drain(q) == [0, 1, 2, 3, 5, 6, 7, 8, 10, 11]


async def test_corrupt_flips_exactly_one_bit(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    q = _netem(h, "corrupt 100%")
    originals = {}
    for i in range(50):
        skb = _pkt(h, 1000 + i)
        originals[1000 + i] = bytes(skb.buf[skb.data : skb.tail])
        q.enqueue(skb)
    flipped = 0
    for skb in iter(q.dequeue, None):
        data = bytes(skb.buf[skb.data : skb.tail])
        before = originals.get(_tag(skb))
        if before is None:  # the flipped bit hit the source port
            before = next(v for v in originals.values() if len(v) == len(data))
        diff = sum(bin(a ^ b).count("1") for a, b in zip(before, data, strict=True))
        flipped += diff == 1
    assert flipped == 50  # one bit in every packet (a flip in the port could fool the lookup)


async def test_rate_serialises_packets(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    q = _netem(h, "rate 1mbit")
    t0 = ktime_get_ns(h.net)
    for i in range(4):
        q.enqueue(_pkt(h, i, payload=1000))  # 1042 bytes: 8.336 ms at 1 Mbit/s
    times = sorted(t for t, _, _ in q.tfifo)
    assert times == [t0 + 8_336_000 * k for k in range(1, 5)]
    # with packet overhead and cells (ATM-like: 48-byte cells of 53)
    h.tc("qdisc change dev dummy0 root netem rate 1mbit 10 48 5")
    assert q._packet_time_ns(1042) == ((1052 + 47) // 48) * 53 * 8000


async def test_slot_releases_bursts(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    await trio.sleep(1)
    q = _netem(h, "slot 20ms 20ms packets 2")
    for i in range(6):
        q.enqueue(_pkt(h, i))
    bursts = []
    for _ in range(4):
        bursts.append(_drain(q))
        await trio.sleep(0.02)
    assert bursts == [[0, 1], [2, 3], [4, 5], []]


async def test_gilbert_elliott_follows_its_chain(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    q = _netem(h, "limit 5000 loss gemodel 5% 20% 70% 1% seed 3")
    p, r, one_h, one_k = (round(x * U32) for x in (0.05, 0.20, 0.70, 0.01))
    hh = U32 - one_h  # tc prints "1-h" and sends h; "1-k" goes as it is
    assert q.clg[:4] == [p, r, hh, one_k]
    prng = RndState(3)
    good = True
    expected = []
    for _ in range(3000):  # kernel: loss_gilb_ell()
        if good:
            if prng.u32() < p:
                good = False
            lost = prng.u32() < one_k
        else:
            if prng.u32() < r:
                good = True
            lost = prng.u32() > hh
        expected.append(not lost)
    kept = [q.enqueue(_pkt(h, i)) == NET_XMIT_SUCCESS for i in range(3000)]
    assert kept == expected
    # losses come in bursts: far more back-to-back losses than independent ones would give
    rate = kept.count(False) / len(kept)
    pairs = sum(1 for a, b in itertools.pairwise(kept) if not a and not b)
    assert pairs > 2 * len(kept) * rate**2
