"""tbf's buckets, watchdog, limits and peakrate, and the psched rate arithmetic."""

from __future__ import annotations

import itertools

import pytest
import trio
import trio.testing
from helpers import dummy_host, udp_skb
from hypothesis import given, settings
from hypothesis import strategies as st

import netstack
from netstack.core.hrtimer import ktime_get_ns
from netstack.core.netdevice import NET_XMIT_DROP, NET_XMIT_SUCCESS
from netstack.core.skbuff import DropReason
from netstack.errors import ConfigError
from netstack.sched import BfifoQdisc, TbfQdisc
from netstack.sched.pkt_sched import TC_LINKLAYER_ATM, TcRatespec
from netstack.sched.psched import PschedRatecfg

FRAME = 1042  # udp_skb(payload=1000): 14 + 20 + 8 + 1000


def test_ratecfg_mult_and_shift_as_the_kernel_computes_them() -> None:
    r = PschedRatecfg(TcRatespec(rate=125_000))  # 1 Mbit/s
    assert (r.mult, r.shift) == (4_194_304_000, 19)
    assert r.l2t_ns(1000) == 8_000_000  # 1000 bytes at 1 Mbit/s: exactly 8 ms
    assert r.t2l(8_000_000) == 1000
    fast = PschedRatecfg(TcRatespec(rate=0xFFFFFFFF), rate64=5_000_000_000)  # 40 Gbit/s
    assert fast.rate_bytes_ps == 5_000_000_000 and fast.mult & (1 << 31)
    assert fast.l2t_ns(1500) == 299  # 300 ns, truncated by the reciprocal multiply
    atm = PschedRatecfg(TcRatespec(rate=125_000, linklayer=TC_LINKLAYER_ATM, overhead=10))
    # 100 + 10 bytes → 3 cells of 53 bytes
    assert atm.l2t_ns(100) == (3 * 53 * atm.mult) >> atm.shift
    assert not PschedRatecfg() and PschedRatecfg().l2t_ns(1500) == 0


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(st.integers(1, 10**11), st.integers(0, 65535))
def test_ratecfg_l2t_is_close_to_exact(rate: int, length: int) -> None:
    r = PschedRatecfg(TcRatespec(rate=min(rate, 0xFFFFFFFF)), rate64=rate)
    exact = length * 10**9 / rate
    # 31 significant bits: within 1 ns + 2^-30 relative (truncation only)
    assert exact * (1 - 2**-30) - 1 <= r.l2t_ns(length) <= exact


async def test_burst_limit_and_overlimits(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    h.tc("qdisc add dev dummy0 root handle 1: tbf rate 1mbit burst 10kb latency 50ms")
    q = h.dev("dummy0").qdisc
    assert isinstance(q, TbfQdisc) and isinstance(q.qdisc, BfifoQdisc)
    # tc: limit = rate * latency + burst = 125000 * 0.05 + 10240
    assert q.limit == q.qdisc.limit == 16490
    assert q.max_size == 10240
    rcs = [q.enqueue(udp_skb(payload=1000, dev=h.dev("dummy0"))) for _ in range(20)]
    assert rcs == [NET_XMIT_SUCCESS] * 15 + [NET_XMIT_DROP] * 5  # 15 * 1042 <= 16490
    assert (q.qlen, q.backlog, q.drops) == (15, 15 * FRAME, 5)
    sent = 0
    while q.dequeue() is not None:
        sent += 1
    assert sent == 9  # a full bucket: 9 * 1042 <= 10240 < 10 * 1042
    assert q.overlimits == 1
    # the watchdog is armed for when the deficit is covered
    deficit = q.rate.l2t_ns(FRAME) - q.tokens
    assert q.watchdog.timer.is_queued()
    assert q.watchdog.timer.expires == ktime_get_ns(h.net) + deficit
    await trio.sleep_until(q.watchdog.timer.expires / 1e9)
    assert q.dequeue() is not None and q.dequeue() is None
    sent += 1
    assert q.overlimits == 2
    await trio.sleep(1)  # the bucket refills up to burst only
    while q.dequeue() is not None:
        sent += 1
    assert sent == 9 + 1 + 5 and q.qlen == 0 and q.backlog == 0
    assert (q.packets, q.bytes) == (15, 15 * FRAME)


async def test_a_packet_larger_than_the_bucket_is_dropped(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    h.tc("qdisc add dev dummy0 root tbf rate 1mbit burst 1000 limit 10000")
    q = h.dev("dummy0").qdisc
    assert isinstance(q, TbfQdisc) and q.max_size == 1000
    assert q.enqueue(udp_skb(payload=1000, dev=h.dev("dummy0"))) == NET_XMIT_DROP
    assert q.enqueue(udp_skb(payload=900, dev=h.dev("dummy0"))) == NET_XMIT_SUCCESS
    assert q.drops == 1 and h.net.drop_reasons[DropReason.QDISC_DROP] == 1


async def test_peakrate_spaces_a_burst(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    h.tc("qdisc add dev dummy0 root tbf rate 1mbit burst 20kb limit 100kb peakrate 2mbit mtu 1514")
    q = h.dev("dummy0").qdisc
    assert isinstance(q, TbfQdisc)
    for _ in range(6):
        q.enqueue(udp_skb(payload=1000, dev=h.dev("dummy0")))
    times = []
    while q.qlen:
        if q.dequeue() is not None:
            times.append(ktime_get_ns(h.net))
            continue
        await trio.sleep_until(q.watchdog.timer.expires / 1e9)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    # the peak bucket holds one 1514-byte MTU: the first two leave 1.9 ms
    # apart, then one per 1042 bytes at 2 Mbit/s (4.168 ms), burst or not
    per_packet = q.peak.l2t_ns(FRAME)
    assert abs(per_packet - 4_168_000) <= 1
    assert gaps[0] == per_packet - (q.mtu - per_packet)
    assert all(abs(g - per_packet) <= 1 for g in gaps[1:])


async def test_change_resizes_the_inner_bfifo(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = dummy_host(lab)
    h.tc("qdisc add dev dummy0 root handle 1: tbf rate 1mbit burst 10kb limit 5000")
    q = h.dev("dummy0").qdisc
    assert isinstance(q, TbfQdisc)
    child = q.qdisc
    h.tc("qdisc change dev dummy0 root handle 1: tbf rate 2mbit burst 10kb limit 3000")
    assert q.qdisc is child and child.limit == 3000 and q.rate.rate_bytes_ps == 250_000
    # a grafted child stays; its limit follows tbf's only if it is a fifo
    h.tc("qdisc add dev dummy0 parent 1:1 handle 10: pfifo limit 7")
    h.tc("qdisc change dev dummy0 root handle 1: tbf rate 2mbit burst 10kb limit 9")
    assert q.qdisc.kind == "pfifo" and q.qdisc.limit == 9
    with pytest.raises(ConfigError, match="must match existing qdisc"):
        h.tc("qdisc replace dev dummy0 parent 1:1 handle 10: fq_codel")  # same handle: a change
    h.tc("qdisc replace dev dummy0 parent 1:1 handle 20: fq_codel")
    h.tc("qdisc change dev dummy0 root handle 1: tbf rate 2mbit burst 10kb limit 5")
    assert q.qdisc.kind == "fq_codel" and q.qdisc.limit == 10240
