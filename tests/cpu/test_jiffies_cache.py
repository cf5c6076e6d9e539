"""``jiffies`` under a MockClock that does not run: converted once per virtual instant.

A tunnelled packet reads ``jiffies`` five times (the PMTU exception's expiry,
``__ip_rt_update_pmtu``, ``ip_idents_reserve``) while virtual time stands
still. The run's MockClock converts its virtual base to ticks when it jumps,
and a read is a class attribute of the run's Clock class for that HZ; while
the clock runs at a rate every read converts the time it reads.
"""

from __future__ import annotations

import math

import pytest
import trio
import trio.testing

import netstack.cpu.clock as clock_mod
from netstack.cpu import Clock


def test_jiffies_is_converted_once_per_virtual_instant(monkeypatch: pytest.MonkeyPatch) -> None:
    conversions: list[float] = []

    def floor(x: float) -> int:
        conversions.append(x)
        return math.floor(x)

    monkeypatch.setattr(clock_mod, "_floor", floor)

    async def main() -> None:
        mock = trio.lowlevel.current_clock()
        assert isinstance(mock, trio.testing.MockClock)
        clock = Clock(250)
        clock.follow_run_clock()
        assert clock.jiffies == 0
        assert len(conversions) == 1  # when the clock first follows the run
        mock.jump(2.0)
        assert [clock.jiffies for _ in range(5)] == [500] * 5
        assert len(conversions) == 2
        mock.jump(0.004)  # one tick later
        assert (clock.jiffies, clock.jiffies) == (501, 501)
        assert len(conversions) == 3
        await trio.sleep(0.01)  # autojump
        assert clock.jiffies == math.floor(mock.current_time() * 250 + 1e-6) == 503
        assert len(conversions) == 4
        mock.rate = 1.0  # a running clock: every read converts the time it reads
        assert clock.jiffies <= clock.jiffies
        assert len(conversions) == 6
        mock.rate = 0.0
        base = mock.current_time()
        assert clock.jiffies == math.floor(base * 250 + 1e-6)
        assert len(conversions) == 7  # at the rate change, not at the read

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_clocks_of_one_hz_share_the_runs_ticks_and_runs_do_not() -> None:
    """Two hosts of one HZ read the same count; another HZ has its own; a clock of a
    finished run keeps that run's last count while another run's time moves."""
    clocks: list[Clock] = []

    async def main(delay: float) -> None:
        a, b, c = Clock(1000), Clock(1000), Clock(300)
        for clock in (a, b, c):
            clock.follow_run_clock()
        assert type(a) is type(b) is not type(c)
        await trio.sleep(delay)
        now = trio.current_time()
        assert a.jiffies == b.jiffies == math.floor(now * 1000 + 1e-6)
        assert c.jiffies == math.floor(now * 300 + 1e-6)
        assert a.now() == now
        clocks.append(a)

    trio.run(main, 1.5, clock=trio.testing.MockClock(autojump_threshold=0))
    assert clocks[0].jiffies == 1500
    trio.run(main, 7.25, clock=trio.testing.MockClock(autojump_threshold=0))
    assert (clocks[0].jiffies, clocks[1].jiffies) == (1500, 7250)
    assert type(clocks[0]) is not type(clocks[1])


def test_a_clock_with_its_own_source_or_a_mock_it_does_not_follow_reads_the_source() -> None:
    t = [2.0]
    clock = Clock(100, now=lambda: t[0])

    async def main() -> None:
        clock.follow_run_clock()  # its own source: kept
        assert type(clock) is Clock
        assert clock.jiffies == 200
        t[0] = 3.0
        assert clock.jiffies == 300

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
