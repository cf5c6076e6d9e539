"""High-resolution timers: ``hrtimer_start``/``hrtimer_cancel`` in nanoseconds.

Theory of operation: the jiffy timer wheel (:mod:`netstack.core.timer`) is too
coarse for the qdisc watchdog — a token bucket at 1 Gbit/s must wake up every
12 µs, netem delays are asked for in microseconds — so the kernel arms an
``hrtimer`` there, on ``CLOCK_MONOTONIC`` in nanoseconds. Each Net has one
:class:`HrTimerBase`: a heap of armed timers ordered by expiry (ns), served by
one Trio task that sleeps until the earliest expiry and then runs every due
callback synchronously, as the hrtimer softirq does. Re-arming or cancelling
leaves a stale heap entry behind, recognised by a generation number. The heap
is :class:`netstack.core.timerqueue.TimerQueue`, shared with the jiffy
timers (the kernel's hrtimer bases keep theirs in a ``timerqueue`` too); this
module supplies the nanosecond clock and ``hrtimer_start``/``hrtimer_cancel``.

Time is ``ktime_get_ns()``: the host clock (Trio's, virtual under the
autojump clock) in integer nanoseconds. A timer fires when the clock has
reached its expiry — never early — so a qdisc that reads the clock in the
callback sees ``now >= expires``, as it does in the kernel.

Kernel: kernel/time/hrtimer.c, include/linux/hrtimer.h.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from netstack.core.timerqueue import TimerQueue, TimerQueueNode
from netstack.sites import kernel

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = ["HrTimer", "HrTimerBase", "ktime_get_ns"]

NSEC_PER_SEC = 1_000_000_000


@kernel("ktime_get_ns")
def ktime_get_ns(net: Net) -> int:
    """The host's monotonic clock in nanoseconds. Kernel: ktime_get_ns()."""
    return round(net.clock.now() * NSEC_PER_SEC)


class HrTimer(TimerQueueNode):
    """A high-resolution timer (kernel: ``struct hrtimer``).

    *function* runs, with no argument, once the clock reaches the expiry
    given to :meth:`start`.
    """

    __slots__ = ("_base", "queued")

    def __init__(self, base: HrTimerBase, function: Callable[[], None], name: str = "") -> None:
        super().__init__(function, name)
        self._base = base
        self.queued = False

    @kernel("hrtimer_start")
    def start(self, expires_ns: int) -> None:
        """Arm (or re-arm) for absolute time *expires_ns*. Kernel: hrtimer_start()."""
        if self.queued and expires_ns == self.expires:
            return
        if self.queued:
            self._base._stale += 1
        self._gen += 1
        self.expires = expires_ns
        self.queued = True
        self._base._push(self)

    @kernel("hrtimer_cancel")
    def cancel(self) -> bool:
        """Disarm; True if it was armed. Kernel: hrtimer_cancel()."""
        was = self.queued
        if was:
            self.queued = False
            self._gen += 1
            self._base._stale += 1
        return was

    @kernel("hrtimer_is_queued")
    def is_queued(self) -> bool:
        """Kernel: hrtimer_is_queued()."""
        return self.queued

    def _expired(self) -> None:
        self.queued = False

    def __repr__(self) -> str:
        return f"<HrTimer {self.name} expires={self.expires} queued={self.queued}>"


class HrTimerBase(TimerQueue[HrTimer]):
    """The high-resolution timers of one Net and the task that fires them."""

    @kernel("hrtimer_setup")
    def timer(self, function: Callable[[], None], name: str = "") -> HrTimer:
        """A new, unarmed timer. Kernel: hrtimer_setup()."""
        return HrTimer(self, function, name)

    def _now(self) -> float:
        return self._net.clock.now()

    def _later(self, expires: int, now: float) -> bool:
        # Compared in the clock's own unit: the task slept until exactly
        # this float, so the timer is due even if ns rounding disagrees.
        return expires / NSEC_PER_SEC > now

    def _deadline(self, expires: int) -> float:
        return expires / NSEC_PER_SEC
