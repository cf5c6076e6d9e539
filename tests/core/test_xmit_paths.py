"""The transmit path's locks and patches: validation vs the root lock, bulk
dequeue, HARD_TX_LOCK vs NETIF_F_LLTX, veth's ring and backpressure (netstack's
veth always uses its ring; the kernel's only with GRO or XDP on at the peer,
and for the skbs ``veth_skb_is_eligible_for_gro`` takes: the tests say where
the two differ)."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from helpers import add_addr

import netstack
from netstack.core import qdisc as qdisc_mod
from netstack.core import xmit as xmit_mod
from netstack.core.dev import dev_graft_qdisc
from netstack.core.netdevice import NetDevice
from netstack.core.qdisc import TCQ_F_NOPARENT, TCQ_F_ONETXQUEUE
from netstack.core.skbuff import SkBuff
from netstack.sched import PfifoFastQdisc
from netstack.socket import SO_SNDBUF, SOL_SOCKET


def _nic_pair(
    lab: netstack.Lab, patches: netstack.Patches, rate: float | None
) -> tuple[netstack.Host, netstack.Host]:
    a = lab.add_host("a", patches=patches)
    b = lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0", kind="nic", rate=rate)
    add_addr(a, "eth0", "10.0.0.1/24")
    add_addr(b, "eth0", "10.0.0.2/24")
    return a, b


async def _flood(host: netstack.Host, dst: str, count: int, size: int) -> int:
    sock = host.socket()
    sent = 0
    while sent < count:
        sent += await sock.sendmmsg([(b"\xab" * size, (dst, 9))] * min(32, count - sent))
    return sent


@pytest.mark.parametrize("unlocked", [True, False])
async def test_validate_runs_outside_the_root_lock_only_with_the_patch(
    lab: netstack.Lab,
    unlocked: bool,
    autojump_clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, _b = _nic_pair(lab, netstack.Patches(qdisc_validate_unlocked=unlocked), rate=10e6)
    await a.ping("10.0.0.2")  # resolve ARP first
    seen: list[bool] = []
    real = xmit_mod.validate_xmit_skb_list

    eth0 = a.dev("eth0")

    def spy(skb: SkBuff | None, dev: NetDevice) -> SkBuff | None:
        if dev is eth0:
            seen.append(dev.qdisc.lock.held)
        return real(skb, dev)

    monkeypatch.setattr(qdisc_mod, "validate_xmit_skb_list", spy)
    del seen[:]
    await _flood(a, "10.0.0.2", 200, 1000)
    await trio.sleep(1)
    stats = eth0.qdisc.statistics()
    # the 200 datagrams and what a's IPv6 bring-up sent meanwhile (two MLDv2 reports, the
    # DAD probe, a router solicitation); the counters also saw the ARP request and ping
    assert len(seen) == 200 + 4, "validate_xmit_skb_list did not run for every datagram"
    if unlocked:
        assert not any(seen)
        assert stats.validations_locked == 0 and stats.validations_unlocked == len(seen) + 2
    else:
        assert all(seen)
        assert stats.validations_unlocked == 0 and stats.validations_locked == len(seen) + 2


@pytest.mark.parametrize("bulk", [True, False])
async def test_bulk_dequeue_takes_several_skbs_per_root_lock_hold(
    lab: netstack.Lab, bulk: bool, autojump_clock: trio.testing.MockClock
) -> None:
    a, b = _nic_pair(lab, netstack.Patches(qdisc_bulk_dequeue=bulk), rate=10e9)
    await a.ping("10.0.0.2")
    q = a.dev("eth0").qdisc
    sent = await _flood(a, "10.0.0.2", 400, 1000)
    await trio.sleep(1)
    stats = q.statistics()
    # and the ARP request, the ping, a's two MLDv2 reports and its DAD probe
    assert stats.packets == sent + 5
    if bulk:  # 8 dequeues of several skbs each (exact in virtual time)
        assert (stats.bulk_dequeues, stats.bulk_packets) == (8, 181)
    else:
        assert stats.bulk_dequeues == 0 and stats.bulk_packets == 0
    # every datagram arrived (no qdisc drops: the socket's send buffer limits the queue)
    assert b.snmp()["Udp"].NoPorts == sent


async def test_bulk_dequeue_needs_fewer_root_lock_acquisitions(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    acquisitions = {}
    for bulk in (True, False):
        a = lab.add_host(f"a{int(bulk)}", patches=netstack.Patches(qdisc_bulk_dequeue=bulk))
        b = lab.add_host(f"b{int(bulk)}")
        lab.add_link(f"a{int(bulk)}:eth0", f"b{int(bulk)}:eth0", kind="nic", rate=10e9)
        add_addr(a, "eth0", "10.0.0.1/24")
        add_addr(b, "eth0", "10.0.0.2/24")
        await a.ping("10.0.0.2")
        lock = a.dev("eth0").qdisc.lock
        before = lock.acquisitions
        await _flood(a, "10.0.0.2", 400, 1000)
        await trio.sleep(1)
        acquisitions[bulk] = lock.acquisitions - before
    assert acquisitions[True] < acquisitions[False]


async def test_hard_tx_lock_is_taken_unless_the_device_is_lltx(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, b = _nic_pair(lab, netstack.Patches(), rate=None)  # NICs are not LLTX
    lab.add_link("a:veth0", "b:veth0")  # veth is
    add_addr(a, "veth0", "10.9.0.1/24")
    add_addr(b, "veth0", "10.9.0.2/24")
    nic_lock = a.dev("eth0").tx_queues[0]._xmit_lock
    veth_lock = a.dev("veth0").tx_queues[0]._xmit_lock
    assert not a.dev("eth0").lltx and a.dev("veth0").lltx
    r1 = await a.ping("10.0.0.2", count=3, interval=0.1)
    r2 = await a.ping("10.9.0.2", count=3, interval=0.1)
    assert r1.received == 3 and r2.received == 3
    # a:eth0 sends 6 frames: the ARP request, the 3 echo requests, a's MLDv2 report and
    # its DAD probe (IPv6 bring-up). HARD_TX_LOCK is taken once more, as in the kernel:
    # BQL's limit starts at 0 (dql_reset: limit = min_limit), so the ARP request's
    # netdev_tx_sent_queue() sets __QUEUE_STATE_STACK_XOFF until its TX completion 50 us
    # later; the ARP reply arrives first (no rate, no delay) and __neigh_update's flush
    # takes the empty pfifo_fast's bypass into sch_direct_xmit, which takes HARD_TX_LOCK,
    # finds netif_xmit_frozen_or_stopped() and requeues the echo (requeues == 1); the
    # completion wakes the queue and net_tx_action sends it under the lock again.
    assert a.dev("eth0").statistics().tx_packets == 6
    assert a.dev("eth0").qdisc.statistics().requeues == 1
    assert nic_lock.acquisitions == 6 + 1
    assert veth_lock.acquisitions == 0
    assert nic_lock.owner == -1 and a.dev("eth0").tx_queues[0].xmit_lock_owner == -1


async def test_veth_full_ring_drops_without_a_qdisc(
    two_hosts: tuple[netstack.Host, netstack.Host], autojump_clock: trio.testing.MockClock
) -> None:
    a, b = two_hosts
    # by default each sendto's local_bh_enable polls b (net_rx_action in a's call):
    # the ring never holds more than one skb. It fills when b's NAPI runs elsewhere
    # (a threaded NAPI's kthread on another CPU: ____napi_schedule wakes it instead
    # of queueing it on this CPU's poll_list), what polls_at_bh_enable=False models
    b.net.polls_at_bh_enable = False
    # netstack's veth always uses its 256-entry ring and NAPI (a simplification:
    # veth.py's doc); the kernel's veth_xmit only when b has a NAPI (GRO or XDP on
    # at b; with GRO off, a veth's default, none at all: __netif_rx queues to the
    # CPU's backlog, netdev_max_backlog 1000 packets, and these 300 would not drop)
    # and veth_skb_is_eligible_for_gro() takes the skb: with a's TSO on (the
    # default), UDP from a socket only if b has rx-udp-gro-forwarding or
    # rx-gro-list. GRO on at b and TSO off at a: the kernel's ring too (netstack's
    # figures are the same either way)
    b.ethtool("-K eth0 gro on")
    a.ethtool("-K eth0 tso off")
    await a.ping("10.0.0.2")
    sock = a.socket()
    # 256 skbs of truesize 832 in the ring fill the default 212992-byte send buffer
    # (the ring keeps skb->sk, as a veth has since 4.19): room for the burst
    a.sysctl("net.core.wmem_max=1048576")
    sock.setsockopt(SOL_SOCKET, SO_SNDBUF, 1 << 20)
    for _ in range(300):  # one synchronous burst: b's NAPI cannot run
        sock.sendto_nowait(b"x" * 20, ("10.0.0.2", 9))
    await trio.sleep(0.1)
    assert a.dev("eth0").statistics().tx_dropped == 300 - 256
    assert b.snmp()["Udp"].NoPorts == 256
    assert a.drops()["FULL_RING"] == 300 - 256


async def test_veth_ring_fills_only_in_a_burst_from_softirq_context(
    two_hosts: tuple[netstack.Host, netstack.Host], autojump_clock: trio.testing.MockClock
) -> None:
    a, b = two_hosts  # the default: polls at local_bh_enable
    # the kernel's veth uses its ring and NAPI, as netstack's always does, with GRO
    # (or XDP) on at b, for the skbs veth_skb_is_eligible_for_gro() takes: all of
    # them with a's TSO off; with it on (the default), UDP from a socket only if b
    # has rx-udp-gro-forwarding or rx-gro-list, else __netif_rx queues it to the
    # CPU's 1000-packet backlog (the previous test's comment)
    b.ethtool("-K eth0 gro on")
    a.ethtool("-K eth0 tso off")
    await a.ping("10.0.0.2")
    sock = a.socket()
    a.sysctl("net.core.wmem_max=1048576")
    sock.setsockopt(SOL_SOCKET, SO_SNDBUF, 1 << 20)
    for _ in range(300):  # process context: each sendto's local_bh_enable polls b
        sock.sendto_nowait(b"x" * 20, ("10.0.0.2", 9))
    assert b.snmp()["Udp"].NoPorts == 300 and a.dev("eth0").statistics().tx_dropped == 0

    def burst() -> None:  # a timer's callback is softirq context: nothing polls until
        for _ in range(300):  # it returns (__do_softirq goes on from TIMER to NET_RX)
            sock.sendto_nowait(b"x" * 20, ("10.0.0.2", 9))

    a.net.timers.timer(burst, "burst").mod(a.net.clock.jiffies + 1)
    await trio.sleep(0.1)
    assert a.dev("eth0").statistics().tx_dropped == 300 - 256
    assert a.drops()["FULL_RING"] == 300 - 256
    assert b.snmp()["Udp"].NoPorts == 300 + 256


async def test_veth_with_a_qdisc_stops_and_wakes_instead_of_dropping(
    two_hosts: tuple[netstack.Host, netstack.Host], autojump_clock: trio.testing.MockClock
) -> None:
    a, b = two_hosts
    b.net.polls_at_bh_enable = False  # b's NAPI on a CPU of its own: as above
    await a.ping("10.0.0.2")
    dev = a.dev("eth0")
    q = PfifoFastQdisc(a.net, dev.tx_queues[0])
    q.flags |= TCQ_F_ONETXQUEUE | TCQ_F_NOPARENT
    dev_graft_qdisc(dev, 0, q)
    sock = a.socket()
    sock.setsockopt(SOL_SOCKET, SO_SNDBUF, 1 << 20)
    a.sysctl("net.core.wmem_max=1048576")
    sock.setsockopt(SOL_SOCKET, SO_SNDBUF, 1 << 20)
    for _ in range(300):
        sock.sendto_nowait(b"x" * 20, ("10.0.0.2", 9))
    assert q.qlen == 300 - 256  # the ring filled; the rest waits in the qdisc
    await trio.sleep(0.1)
    stats = q.statistics()
    assert dev.statistics().tx_dropped == 0
    assert stats.requeues == 1  # the one NETDEV_TX_BUSY that stopped the queue
    assert stats.qlen == 0 and stats.drops == 0
    assert b.snmp()["Udp"].NoPorts == 300
