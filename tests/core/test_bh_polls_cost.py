"""Polls at local_bh_enable, functional mode's default: the fixed cost of a poll.

    a ── veth ── b

Every transmit outside softirq runs ``__dev_queue_xmit`` and, at its
``rcu_read_unlock_bh()`` (``local_bh_enable``), ``do_softirq`` → ``net_rx_action``
→ ``napi_poll`` → ``veth_poll`` in the sender's task: a datagram is in the
receiver's queue when ``sendto`` returns, one poll of one packet each. This
path is written out where the pure package pays a Python frame per kernel
function (``dev_queue_xmit`` with ``__dev_queue_xmit``, ``do_softirq`` with
``napi_poll``/``__napi_poll``/``napi_complete_done``, ``veth_xmit`` with
``napi_schedule``, ``veth_poll`` with ``netif_tx_queue_stopped``); these
tests pin what the copies must keep: the counters of each poll, the GRO flush
of ``napi_complete_done`` (only with held skbs: ``n->gro_bitmask``) and of a
full poll in ``__napi_poll``, the hand-over to the instance's task
(``wakeup_softirqd``) of a transmit that raises, and the Python calls one
datagram makes in these modules. Kernel: include/linux/netdevice.h
(dev_queue_xmit), net/core/dev.c (__dev_queue_xmit, net_rx_action,
napi_poll, __napi_poll, napi_complete_done), kernel/softirq.c (do_softirq,
wakeup_softirqd), drivers/net/veth.c (veth_xmit, __veth_xdp_flush, veth_poll).
"""

from __future__ import annotations

import sys
from types import FrameType

import pytest
import trio
import trio.lowlevel
import trio.testing
from helpers import warm_udp_pair

import netstack
from netstack.core import dev as _dev
from netstack.core import napi as _napi
from netstack.core.napi import BH, Napi
from netstack.drivers import veth as _veth
from netstack.testing import builders

_PURE = all(m.__file__ is not None and m.__file__.endswith(".py") for m in (_dev, _napi, _veth))


def _clean() -> bool:
    return not BH.poll_list and BH.state == _napi.BH_ENABLED


@pytest.mark.parametrize("on", [True, False])
async def test_each_datagram_is_one_poll_inside_sendto(
    autojump_clock: trio.testing.MockClock, on: bool
) -> None:
    """On: the datagram is received before ``sendto`` returns, by one poll of one
    packet that completes (``napi_complete_done``); off: b's NAPI task polls it
    after the sender's next checkpoint (a CPU of its own)."""
    async with netstack.open_lab(polls_at_bh_enable=on) as lab:
        _a, b, tx, rx = await warm_udp_pair(lab)  # ARP resolved, tasks started
        await trio.sleep(0.1)
        napi = b.dev("eth0").priv.napi
        before = napi.statistics()
        queue = rx.sock.receive_queue
        for i in range(1, 6):
            tx.sendto_nowait(b"x" * 200, ("10.0.0.2", 9))
            assert len(queue) == (i if on else 0)
            assert _clean()
        if not on:
            assert napi.scheduled
            await trio.lowlevel.checkpoint()
            assert len(queue) == 5
        after = napi.statistics()
        assert not napi.scheduled
        assert after.schedules - before.schedules == (5 if on else 1)
        assert after.polls - before.polls == (5 if on else 1)
        assert after.packets - before.packets == 5
        assert after.full_polls == before.full_polls


class _Gro:
    """A GRO engine that records its flushes (``bitmask``: held skbs)."""

    def __init__(self, bitmask: int) -> None:
        self.bitmask = bitmask
        self.flushes: list[bool] = []

    def receive(self, napi: Napi, skb: object) -> int:
        raise AssertionError("not used")

    def flush(self, napi: Napi, flush_old: bool) -> None:
        self.flushes.append(flush_old)


@pytest.mark.parametrize("via", ["do_softirq", "poll_once"])
@pytest.mark.parametrize(("work", "held", "flushes"), [(3, 0, []), (3, 1, [False]), (4, 1, [True])])
async def test_a_polls_completion_and_gro_flush(
    autojump_clock: trio.testing.MockClock, via: str, work: int, held: int, flushes: list[bool]
) -> None:
    """``do_softirq``'s written-out poll and :meth:`Napi.poll_once` agree: less
    than the weight completes (``napi_complete_done``; the GRO flush only with
    held skbs, ``gro_flush``'s ``gro->bitmask``), the whole weight stays
    scheduled and flushes old flows (``__napi_poll``); ``do_softirq`` hands it
    to the instance's task, which polls it again (ksoftirqd)."""
    async with netstack.open_lab() as lab:
        a, _b = builders.pair(lab)
        done: list[int] = []

        def poll(napi: Napi, budget: int) -> int:
            done.append(budget)
            return work if len(done) == 1 else 0

        napi = Napi(a.dev("eth0"), poll, weight=4, name="probe")
        a.net.start_napi(napi)
        gro = _Gro(held)
        napi.gro = gro
        await trio.testing.wait_all_tasks_blocked()  # its task is parked
        if via == "do_softirq":
            BH.state = _napi.BH_DISABLED  # a transmit's section: schedule() queues it
            try:
                napi.schedule()
                assert list(BH.poll_list) == [napi]
            finally:
                BH.state = _napi.BH_ENABLED
            _napi.do_softirq(a.net)
        else:
            napi.scheduled = True
            napi.poll_once()
        assert _clean()
        assert done == [4]
        assert napi.scheduled == (work == 4)
        assert gro.flushes == flushes
        st = napi.statistics()
        assert (st.polls, st.packets, st.full_polls) == (1, work, int(work == 4))
        await trio.testing.wait_all_tasks_blocked()
        woken = via == "do_softirq" and work == 4
        assert done == ([4, 4] if woken else [4])  # its task polled it again
        assert napi.scheduled == (work == 4 and not woken)
        napi.kill()


@pytest.mark.skipif(not _PURE, reason="a compiled class's method cannot be replaced")
async def test_a_transmit_that_raises_hands_the_poll_list_to_the_tasks(
    autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``veth_xmit`` put b's instance on the poll list, then the transmit raised:
    bottom halves are enabled again, the list is empty, and b's task polls the
    datagram (``wakeup_softirqd``)."""
    async with netstack.open_lab() as lab:
        _a, b, tx, rx = await warm_udp_pair(lab)  # ARP resolved, tasks started
        napi = b.dev("eth0").priv.napi
        xmit = _veth.VethOps.ndo_start_xmit

        def failing(self: _veth.VethOps, skb: object, dev: object) -> int:
            xmit(self, skb, dev)  # type: ignore[arg-type]
            assert list(BH.poll_list) == [napi]
            raise RuntimeError("after the ring")

        monkeypatch.setattr(_veth.VethOps, "ndo_start_xmit", failing)
        with pytest.raises(RuntimeError, match="after the ring"):
            tx.sendto_nowait(b"y", ("10.0.0.2", 9))
        monkeypatch.undo()
        assert _clean()
        assert napi.scheduled and not rx.sock.receive_queue
        await trio.lowlevel.checkpoint()
        assert await rx.recvfrom(100) == (b"y", ("10.0.0.1", tx.getsockname()[1]))
        assert not napi.scheduled


_WATCHED = {
    _dev.__file__: "dev",
    _napi.__file__: "napi",
    _veth.__file__: "veth",
}


@pytest.mark.skipif(not _PURE, reason="the compiled modules' calls are not Python frames")
async def test_one_datagram_makes_four_calls_in_the_device_layer(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """One datagram over veth, polls at local_bh_enable: ``dev_queue_xmit`` (with
    ``__dev_queue_xmit``), ``veth_xmit`` (with ``napi_schedule``), ``do_softirq``
    (with ``napi_poll``), ``veth_poll``; no ``run_on``, no
    ``netif_tx_queue_stopped``, no GRO flush of an empty GRO (netstack/cpu/cpu.py,
    netstack/core/netdevice.py, netstack/gro are not entered at all)."""
    async with netstack.open_lab() as lab:
        _a, _b, tx, rx = await warm_udp_pair(lab)  # ARP resolved, tasks started
        calls: list[str] = []
        others: set[str] = set()

        def profile(frame: FrameType, event: str, arg: object) -> None:
            if event != "call":
                return
            name = frame.f_code.co_filename
            where = _WATCHED.get(name)
            if where is not None:
                calls.append(f"{where}.{frame.f_code.co_name}")
            elif any(
                p in name for p in ("netstack/cpu/cpu.py", "netstack/gro/", "core/netdevice.py")
            ):
                others.add(f"{name}:{frame.f_code.co_name}")

        sys.setprofile(profile)
        try:
            tx.sendto_nowait(b"z" * 200, ("10.0.0.2", 9))
        finally:
            sys.setprofile(None)
        assert calls == [
            "dev.dev_queue_xmit",
            "veth.ndo_start_xmit",
            "napi.do_softirq",
            "veth.veth_poll",
        ]
        assert not others
        assert len(rx.sock.receive_queue) == 1
