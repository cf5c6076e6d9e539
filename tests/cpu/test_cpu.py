"""Clock/jiffies, CPUs and spin locks (functional mode)."""

from __future__ import annotations

import math

import pytest
import trio
import trio.testing

from netstack.cpu import Clock, CpuSet, SpinLock, time_after, time_before
from netstack.errors import SkbPanic


def test_jiffies_follow_the_clock_at_hz() -> None:
    now = [0.0]
    clock = Clock(250, now=lambda: now[0])
    assert clock.jiffies == 0
    now[0] = 1.0
    assert clock.jiffies == 250
    assert clock.msecs_to_jiffies(1) == 1  # rounds up
    assert clock.jiffies_to_msecs(250) == 1000
    assert clock.jiffies_to_clock_t(250) == 100  # USER_HZ


def test_a_timer_tick_maps_back_to_its_jiffy_despite_floats() -> None:
    for hz in (100, 250, 300, 1000):
        t = [0.0]
        clock = Clock(hz, now=lambda t=t: t[0])  # type: ignore[misc]
        for j in range(0, 5000, 7):
            t[0] = clock.jiffies_to_time(j)
            assert clock.jiffies == j


def test_a_mock_clock_read_directly_gives_trios_time_and_jiffies() -> None:
    """Under a MockClock, now() and jiffies read its virtual base while it does not run:
    the same float as current_time(), so the same jiffy (epsilon rule included),
    also on a timer's tick, across jumps, and once it runs at a rate.
    """

    async def main() -> None:
        mock = trio.lowlevel.current_clock()
        assert isinstance(mock, trio.testing.MockClock)
        clock = Clock(300)
        clock.follow_run_clock()
        # the direct read is on (the build's copy keeps the clock's attribute dict)
        direct: tuple[object, ...] = (mock, vars(mock))
        assert any(clock._mock is d for d in direct)

        def check() -> None:
            t = mock.current_time()
            assert clock.now() == t
            assert clock.jiffies == math.floor(t * 300 + 1e-6)

        check()
        for j in range(1, 3000, 7):
            await trio.sleep_until(clock.jiffies_to_time(j))  # on the tick: jiffy j
            check()
            assert clock.jiffies == j
        mock.jump(1.001)
        check()
        mock.rate = 2.0  # a running clock: read through current_time(), which moves on
        before = mock.current_time()
        assert before < clock.now() < mock.current_time()
        mock.rate = 0.0
        check()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_the_system_clock_is_read_through_current_time() -> None:
    async def main() -> None:
        clock = Clock(1000)
        clock.follow_run_clock()
        assert clock._mock is None
        before = trio.current_time()
        assert before <= clock.now() <= trio.current_time()

    trio.run(main)


def test_bad_hz() -> None:
    with pytest.raises(ValueError, match="HZ"):
        Clock(0)


def test_time_comparisons() -> None:
    assert time_after(5, 4) and not time_after(4, 4)
    assert time_before(3, 4)


def test_cpuset_current_and_run_on() -> None:
    cpus = CpuSet(4)
    assert len(cpus) == 4 and cpus.current.id == 0
    assert cpus.run_on(6).id == 2 and cpus.current is cpus[2]
    with pytest.raises(ValueError, match="at least one CPU"):
        CpuSet(0)


def test_spinlock_counts_and_refuses_recursion() -> None:
    cpus = CpuSet(2)
    lock = SpinLock("q")
    lock.lock(cpus[0])
    assert lock.held and lock.owner == 0
    with pytest.raises(SkbPanic, match="recursive"):
        lock.lock(cpus[0])
    assert not lock.trylock(cpus[1])
    with pytest.raises(SkbPanic, match="owner"):
        lock.unlock(cpus[1])
    lock.unlock(cpus[0])
    assert lock.trylock(cpus[1])
    lock.unlock(cpus[1])
    stat = lock.statistics()
    assert (stat.acquisitions, stat.contentions) == (2, 1)
