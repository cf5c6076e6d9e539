"""Polls at local_bh_enable (core/napi.py): failures.

    a ── r ── b

A section with bottom halves disabled that raises (a poll, a
transmit, a timer's callback) hands what is on the poll list to the instances'
tasks: nothing is left on the process's list, no instance is left scheduled with
nobody to poll it. Kernel: kernel/softirq.c (__do_softirq, wakeup_softirqd).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import trio
import trio.testing

import netstack
from netstack.core import napi as _napi
from netstack.core.napi import Napi, set_polls_at_bh_enable
from netstack.testing import builders


@pytest.fixture
def bh_polls() -> Iterator[None]:
    was = set_polls_at_bh_enable(True)
    try:
        yield
    finally:
        set_polls_at_bh_enable(was)


def _clean() -> bool:
    return not _napi.BH.poll_list and _napi.BH.state == _napi.BH_ENABLED


async def test_a_poll_that_raises_leaves_nothing_on_the_poll_list(
    autojump_clock: trio.testing.MockClock, bh_polls: None
) -> None:
    async with netstack.open_lab() as lab:
        a, r, b = builders.routed(lab)
        rx = b.socket(2, 2)
        await rx.bind(("10.0.2.1", 9))
        tx = a.socket(2, 2)
        await tx.sendto(b"warm", ("10.0.2.1", 9))
        await rx.recvfrom(10)
        rnapi: Napi = r.dev("eth0").priv.napi
        real = rnapi.poll

        def fails(napi: Napi, budget: int) -> int:
            real(napi, budget)  # forwards the datagram: b's instance is on the list
            rnapi.poll = real
            raise RuntimeError("a bug in r's receive path")

        rnapi.poll = fails
        with pytest.raises(RuntimeError):
            tx.sendto_nowait(b"x", ("10.0.2.1", 9))
        assert _clean()  # b's instance went to its task (ksoftirqd)
        with trio.fail_after(1):
            assert (await rx.recvfrom(10))[0] == b"x"
        tx.sendto_nowait(b"y", ("10.0.2.1", 9))  # and the next transmit polls as before
        assert len(rx.sock.receive_queue) == 1 and _clean()
