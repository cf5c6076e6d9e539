"""Polls at local_bh_enable (core/napi.py) for a veth without GRO: no fallback.

    a ── veth ── b      (b's GRO off, the default; a's TSO off, GSO on)

With TSO off and GSO on, ``tcp_write_xmit`` hands ``dev_queue_xmit`` a GSO skb that
``validate_xmit_skb`` segments: several data segments reach b's ring in one transmit.
Linux 6.18: a veth without GRO hands each segment to ``__netif_rx``, and the
sender's ``local_bh_enable`` runs ``process_backlog`` on the whole list (the reader
cannot run in between on that CPU; since the 2023 revert of "softirq: Let ksoftirqd
do its job" ``local_bh_enable`` runs pending ``NET_RX`` even with ksoftirqd awake).
So ``do_softirq`` polls b without ``yield_on_data``: the flight is received at the
transmit's ``local_bh_enable`` and b's NAPI task never steps. Before, the poll
stopped after the first segment that woke the reader, the instance went to its task,
and every later transmit of the flight found it scheduled and left it there (1 MB:
741 polls of b, a packet each, and 424 NAPI task steps). A NAPI task's own poll
(``polls_at_bh_enable`` off) still stops after such data: the reader runs between
its polls.
Kernel: net/core/dev.c (netif_rx, process_backlog, net_rx_action),
kernel/softirq.c (__local_bh_enable_ip, do_softirq), drivers/net/veth.c (veth_xmit).
"""

from __future__ import annotations

import pytest
import trio
import trio.lowlevel
import trio.testing
from helpers import bh_clean, warm_udp_pair

import netstack
from netstack.core.sock import AF_INET, SOCK_STREAM
from netstack.testing import builders


class _NapiSteps(trio.abc.Instrument):
    def __init__(self) -> None:
        self.steps = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        if "napi" in task.name:
            self.steps += 1


async def _bulk(on: bool, size: int) -> tuple[int, int, int]:
    """*size* bytes a → b in one ``sendall`` (a's TSO off), b reading in a loop:
    (b's polls, NAPI task steps, b's packets) from the connect on."""
    async with netstack.open_lab(polls_at_bh_enable=on) as lab:
        a, b = lab.add_host("a"), lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0")
        builders.add_addr(a, "eth0", "10.0.0.1/24")
        builders.add_addr(b, "eth0", "10.0.0.2/24")
        a.ethtool("-K eth0 tso off")  # GSO stays on: one transmit, several segments
        srv = b.socket(AF_INET, SOCK_STREAM)
        await srv.bind(("0.0.0.0", 5001))
        srv.listen(1)
        got: list[int] = []

        async def reader() -> None:
            conn, _ = await srv.accept()
            while data := await conn.recv(65536):
                got.append(len(data))
            conn.close()

        napi = b.dev("eth0").priv.napi
        steps = _NapiSteps()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(reader)
            cli = a.socket(AF_INET, SOCK_STREAM)
            await cli.connect(("10.0.0.2", 5001))
            polls, packets = napi.polls, napi.packets
            trio.lowlevel.add_instrument(steps)
            try:
                await cli.sendall(bytes(size))
                cli.close()
            finally:
                trio.lowlevel.remove_instrument(steps)
        assert sum(got) == size
        assert bh_clean()
        return napi.polls - polls, steps.steps, napi.packets - packets


async def test_a_tso_off_flight_is_received_at_the_senders_local_bh_enable(
    autojump_clock: trio.testing.MockClock,
) -> None:
    polls, steps, packets = await _bulk(True, 1 << 20)
    assert steps == 0  # before: 424 (b's instance handed to its task after a segment)
    assert polls == 49  # before: 741
    assert packets > 700  # 1 MB in 1448-byte segments: each poll took a flight


@pytest.mark.parametrize("size", [64 << 10, 256 << 10])
async def test_a_napi_tasks_own_poll_still_stops_after_tcp_data(
    autojump_clock: trio.testing.MockClock, size: int
) -> None:
    # polls_at_bh_enable off: b's NAPI task polls, and its poll ends after a packet
    # that woke the reader (rx_per_xmit), which reads before the next poll
    polls, steps, packets = await _bulk(False, size)
    assert steps > 0 and polls > size // 1448 // 2
    assert packets >= size // 1448


async def test_a_receivers_capture_callback_that_raises_fails_the_lab_not_the_send(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # b's capture callback runs in b's poll, at a's local_bh_enable inside a's
    # sendto_nowait; its exception is b's receive path's (a kernel oops in
    # net_rx_action is the softirq's): b's NAPI task raises it, the lab fails with
    # the callback's traceback, and a's call returns. Before, a's sendto_nowait raised
    # it, the datagram was lost and the lab went on.
    returned = False

    async def scenario() -> None:
        nonlocal returned
        async with netstack.open_lab() as lab:
            _a, b, tx, _rx = await warm_udp_pair(lab)

            def tap(ts: float, frame: bytes, outgoing: bool) -> None:
                if not outgoing and frame.endswith(b"boom"):
                    raise ValueError("a bug in b's tap")

            b.capture("eth0", callback=tap)
            tx.sendto_nowait(b"boom", ("10.0.0.2", 9))
            returned = True
            assert bh_clean() and b.dev("eth0").priv.napi.scheduled
            await trio.sleep(1)  # b's task raises: the lab fails

    with pytest.raises(ValueError, match="a bug in b's tap") as info:
        await scenario()
    assert returned
    frames = [entry.name for entry in info.traceback]
    assert "run" in frames and "tap" in frames  # b's NAPI task; the callback's frame
