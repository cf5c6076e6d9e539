"""``Clock.hold``: one read of a running clock for a stretch of code that never awaits.

TCP holds its host's clock while a segment goes through ``tcp_v4_rcv`` /
``tcp_v6_rcv`` and while a socket call runs (cpu/clock.py, "Held time"): the
kernel reads the clock once per segment (``tcp_mstamp_refresh``) and
``jiffies`` is a load.
"""

from __future__ import annotations

import socket

import trio
import trio.testing

import netstack
from netstack.cpu import Clock


class Source:
    """A time source that moves 1 ms per read and counts its reads."""

    def __init__(self) -> None:
        self.t = 10.0
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        self.t += 0.001
        return self.t


def test_a_held_clock_reads_its_source_once() -> None:
    src = Source()
    clock = Clock(1000, src)
    assert clock.now() < clock.now()  # running: every read moves
    assert src.reads == 2
    held = clock.hold()
    assert held == -1.0
    t = clock.now()
    assert src.reads == 3
    assert [clock.now() for _ in range(3)] == [t] * 3
    assert [clock.jiffies for _ in range(3)] == [int(t * 1000 + 1e-6)] * 3
    inner = clock.hold()  # a hold inside a hold keeps the outer instant
    assert inner == t
    assert clock.now() == t
    clock.release(inner)
    assert clock.now() == t  # still the outer hold
    assert src.reads == 3
    clock.release(held)
    assert clock.now() > t
    assert src.reads == 4


def test_nothing_is_held_under_a_mock_clock_that_does_not_run() -> None:
    async def main() -> None:
        mock = trio.lowlevel.current_clock()
        assert isinstance(mock, trio.testing.MockClock)
        clock = Clock(1000)
        clock.follow_run_clock()
        held = clock.hold()
        assert held == -1.0
        mock.jump(1.5)  # not from TCP (which never awaits while it holds): seen at once
        assert clock.now() == mock.current_time()
        clock.release(held)
        mock.rate = 1.0  # a running MockClock is held like any running clock
        held = clock.hold()
        t = clock.now()
        assert clock.now() == t
        clock.release(held)

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_tcp_releases_the_clock_after_every_segment_and_call() -> None:
    """A transfer on a running clock leaves it unheld (an exception included: a
    send on a reset connection)."""

    async def main() -> None:
        async with netstack.open_lab() as lab:
            a, b = lab.add_host("a"), lab.add_host("b")
            lab.add_link("a:eth0", "b:eth0")
            a.ip("addr add 10.0.0.1/24 dev eth0")
            b.ip("addr add 10.0.0.2/24 dev eth0")
            ls = b.socket(socket.AF_INET, socket.SOCK_STREAM)
            await ls.bind(("10.0.0.2", 80))
            ls.listen()
            c = a.socket(socket.AF_INET, socket.SOCK_STREAM)
            await c.connect(("10.0.0.2", 80))
            s, _ = await ls.accept()
            await c.sendall(b"x" * 100_000)
            got = 0
            while got < 100_000:
                got += len(await s.recv(65536))
            for host in (a, b):
                assert host.net.clock._held == -1.0
            s.close()
            c.close()

    trio.run(main)  # Trio's real clock: it runs
