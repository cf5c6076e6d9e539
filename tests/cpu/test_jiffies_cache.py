"""``jiffies`` under a MockClock that does not run: computed once per virtual instant.

A tunnelled packet reads ``jiffies`` five times (the PMTU exception's expiry,
``__ip_rt_update_pmtu``, ``ip_idents_reserve``) while virtual time stands
still; the clock converts the virtual base to ticks again only once it moved.
"""

from __future__ import annotations

import math

import pytest
import trio
import trio.testing

import netstack.cpu.clock as clock_mod
from netstack.cpu import Clock


@pytest.mark.pure_python_layout(
    "counts conversions by replacing cpu.clock._floor, which the compiled Clock does not read"
)
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
        mock.jump(2.0)
        assert [clock.jiffies for _ in range(5)] == [500] * 5
        assert len(conversions) == 1
        mock.jump(0.004)  # one tick later
        assert (clock.jiffies, clock.jiffies) == (501, 501)
        assert len(conversions) == 2
        await trio.sleep(0.01)  # autojump
        assert clock.jiffies == math.floor(mock.current_time() * 250 + 1e-6) == 503
        assert len(conversions) == 3
        mock.rate = 1.0  # a running clock: every read converts the time it reads
        assert clock.jiffies <= clock.jiffies
        assert len(conversions) == 5
        mock.rate = 0.0
        base = mock.current_time()
        assert clock.jiffies == math.floor(base * 250 + 1e-6)

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_jiffies_follows_every_jump_and_rate_change_of_the_same_instant() -> None:
    """The cache keyed on the virtual base's float object: a jump of 0 (a new float of
    the same value), a rate set and unset (Trio rebases the float) and timers all read
    the clock's time."""

    async def main() -> None:
        mock = trio.lowlevel.current_clock()
        assert isinstance(mock, trio.testing.MockClock)
        clock = Clock(1000)
        clock.follow_run_clock()

        def expected() -> int:
            return math.floor(mock.current_time() * 1000 + 1e-6)

        assert clock.jiffies == expected() == 0
        mock.jump(0)
        assert clock.jiffies == expected() == 0
        mock.jump(0.0015)
        assert clock.jiffies == expected() == 1
        mock.rate = 1000.0  # a running clock: 1 s of virtual time a real millisecond
        start = clock.jiffies
        while clock.jiffies == start:
            pass  # moves on without a jump
        mock.rate = 0.0
        assert clock.jiffies == expected() > start
        for _ in range(20):
            await trio.sleep(0.0005)
            assert clock.jiffies == expected()
            assert clock.jiffies == expected()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
