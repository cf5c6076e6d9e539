"""Polls at local_bh_enable (core/napi.py): softirq context and failures.

    a ── veth ── b          a ── r ── b

With polls at local_bh_enable (functional mode's default) unless a test opens its
lab with ``polls_at_bh_enable=False`` to compare.

Timer and hrtimer callbacks are softirq context: a transmit in one raises ``NET_RX``,
which ``__do_softirq`` runs after the round of callbacks (``run_timer_softirq``), not
inside the callback: a retransmit's ACK is not received inside
``tcp_retransmit_timer``, and a SYN-ACK resent by ``reqsk_timer_handler`` completes
the handshake after it. A section with bottom halves disabled that raises (a poll, a
transmit, a timer's callback) hands what is on the poll list to the instances'
tasks: nothing is left on the process's list, no instance is left scheduled with
nobody to poll it. A poll that raises at a transmit's ``local_bh_enable`` fails the
lab from its instance's own task; the transmit returns.
Kernel: kernel/softirq.c (__do_softirq, wakeup_softirqd),
kernel/time/timer.c (run_timer_softirq), net/ipv4/tcp_timer.c
(tcp_retransmit_timer), net/ipv4/inet_connection_sock.c (reqsk_timer_handler).
"""

from __future__ import annotations

import pytest
import trio
import trio.testing
from helpers import bh_clean, connected_tcp, warm_udp_pair

import netstack
from netstack.core import napi as _napi
from netstack.core.napi import Napi
from netstack.tcp import tcp_of
from netstack.tcp.sock import TcpSock
from netstack.testing import builders


@pytest.mark.parametrize("hr", [False, True])
async def test_a_timers_transmit_is_polled_after_the_callback(
    autojump_clock: trio.testing.MockClock, hr: bool
) -> None:
    async with netstack.open_lab() as lab:  # the default: polls at local_bh_enable
        a, _b, tx, rx = await warm_udp_pair(lab)
        seen: list[int] = []

        def callback() -> None:
            tx.sendto_nowait(b"t", ("10.0.0.2", 9))
            seen.append(len(rx.sock.receive_queue))  # b's poll has not run yet
            assert _napi.BH.poll_list  # it waits on the list for the round's end

        if hr:
            timer = a.net.hrtimers.timer(callback, "probe")
            timer.start(round(a.net.clock.now() * 1e9) + 1_000_000)
        else:
            jt = a.net.timers.timer(callback, "probe")
            jt.mod(a.net.clock.jiffies + 1)
        await trio.sleep(0.5)
        assert seen == [0]
        assert len(rx.sock.receive_queue) == 1  # polled right after the round
        assert bh_clean()
        assert await rx.recvfrom(100) == (b"t", ("10.0.0.1", tx.getsockname()[1]))


@pytest.mark.parametrize("on", [False, True])
async def test_a_retransmits_ack_is_received_after_the_retransmit_timer(
    autojump_clock: trio.testing.MockClock, on: bool
) -> None:
    # tcp_retransmit_timer retransmits, backs off and rearms; the ACK its retransmit
    # brings is received after it returns and undoes all three (before: received
    # inside it, then the timer backed off and armed a timer with nothing in flight)
    async with netstack.open_lab(polls_at_bh_enable=on) as lab:
        a, b = builders.pair(lab)
        a.sysctl("net.ipv4.tcp_early_retrans=0")
        c, _conn = await connected_tcp(a, b, 80)
        sk = c.sock
        assert isinstance(sk, TcpSock)
        rto = sk.icsk_rto
        a.tc("qdisc add dev eth0 root netem loss 100%")
        await c.send(b"x" * 100)
        a.tc("qdisc del dev eth0 root")
        await trio.sleep(0.5)  # one RTO (200 ms): the retransmit is ACKed
        assert tcp_of(a.net).snmp()["Tcp"].RetransSegs == 1
        assert sk.packets_out == 0 and not sk.rtx_queue
        assert sk.icsk_backoff == 0 and sk.icsk_rto == rto
        assert not sk.retransmit_timer.pending
        assert bh_clean()


@pytest.mark.parametrize("on", [False, True])
async def test_a_synack_resent_by_the_request_timer_counts_young_once(
    autojump_clock: trio.testing.MockClock, on: bool
) -> None:
    # reqsk_timer_handler resends the SYN-ACK; the handshake it brings completes after
    # the handler (before: inside it, which then counted the request as no longer
    # young a second time: syn_queue_young -1)
    async with netstack.open_lab(polls_at_bh_enable=on) as lab:
        a, b, _tx, _rx = await warm_udp_pair(lab)  # ARP resolved
        srv = b.socket(2, 1)
        await srv.bind(("", 80))
        srv.listen(8)
        lsk = srv.sock
        assert isinstance(lsk, TcpSock)
        b.tc("qdisc add dev eth0 root netem loss 100%")  # b's first SYN-ACK is lost
        a.tc("qdisc add dev eth0 root netem delay 400ms")  # a's SYN reaches b at 0.4 s
        c = a.socket(2, 1)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(c.connect, ("10.0.0.2", 80))
            await trio.sleep(0.6)
            b.tc("qdisc del dev eth0 root")
            a.tc("qdisc del dev eth0 root")
            a.tc("qdisc add dev eth0 root netem loss 100%")  # a's SYN resent at 1 s: lost
            await trio.sleep(0.6)
            a.tc("qdisc del dev eth0 root")  # b's request timer (1.4 s) resends
        await srv.accept()
        assert tcp_of(b.net).snmp()["TcpExt"].TCPSynRetrans == 1
        assert lsk.syn_queue_len == 0 and lsk.syn_queue_young == 0
        assert bh_clean()


async def test_a_poll_that_raises_leaves_nothing_on_the_poll_list(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # the poll's exception is r's (its NAPI task raises it and the lab fails), not
    # the sender's: sendto_nowait returns, and nothing is left on the poll list
    returned = False

    async def scenario() -> None:
        nonlocal returned
        async with netstack.open_lab() as lab:
            a, r, b = builders.routed(lab)
            rx = b.socket(2, 2)
            await rx.bind(("10.0.2.1", 9))
            tx = a.socket(2, 2)
            await tx.sendto(b"warm", ("10.0.2.1", 9))
            await rx.recvfrom(10)
            rnapi: Napi = r.dev("eth0").priv.napi
            bnapi: Napi = b.dev("eth0").priv.napi
            real = rnapi.poll

            def fails(napi: Napi, budget: int) -> int:
                real(napi, budget)  # forwards the datagram: b's instance is on the list
                raise RuntimeError("a bug in r's receive path")

            rnapi.poll = fails
            tx.sendto_nowait(b"x", ("10.0.2.1", 9))  # returns: the oops is r's
            returned = True
            assert bh_clean()  # b's instance went to its task (ksoftirqd)
            assert rnapi.scheduled and bnapi.scheduled
            await trio.sleep(1)  # r's task raises: the lab fails

    with pytest.raises(RuntimeError, match="r's receive") as info:
        await scenario()
    assert returned
    frames = [entry.name for entry in info.traceback]
    assert "run" in frames and "fails" in frames  # r's task, the original traceback


async def test_a_timer_callback_that_raises_leaves_nothing_on_the_poll_list(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with netstack.open_lab() as lab:
        a, _b, tx, rx = await warm_udp_pair(lab)

        def fails() -> None:
            tx.sendto_nowait(b"t", ("10.0.0.2", 9))  # b's instance: on the list
            raise RuntimeError("a bug in a timer")

        timer = a.net.timers.timer(fails, "probe")
        timer.mod(a.net.clock.jiffies)  # due now: fired here, before the base's task
        with pytest.raises(RuntimeError):
            a.net.timers.run_due()
        assert bh_clean()
        with trio.fail_after(1):
            assert (await rx.recvfrom(10))[0] == b"t"
