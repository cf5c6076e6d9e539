"""High-resolution timers: ``hrtimer_start``/``hrtimer_cancel`` in nanoseconds.

Theory of operation: the jiffy timer wheel (:mod:`netstack.core.timer`) is too
coarse for the qdisc watchdog — a token bucket at 1 Gbit/s must wake up every
12 µs, netem delays are asked for in microseconds — so the kernel arms an
``hrtimer`` there, on ``CLOCK_MONOTONIC`` in nanoseconds. Each Net has one
:class:`HrTimerBase`: a heap of armed timers ordered by expiry (ns), served by
one Trio task that sleeps until the earliest expiry and then runs every due
callback synchronously, as the hrtimer softirq does. Re-arming or cancelling
leaves a stale heap entry behind, recognised by a generation number.

Time is ``ktime_get_ns()``: the host clock (Trio's, virtual under the
autojump clock) in integer nanoseconds. A timer fires when the clock has
reached its expiry — never early — so a qdisc that reads the clock in the
callback sees ``now >= expires``, as it does in the kernel.

Kernel: kernel/time/hrtimer.c, include/linux/hrtimer.h.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

from netstack.sites import kernel

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = ["HrTimer", "HrTimerBase", "ktime_get_ns"]

NSEC_PER_SEC = 1_000_000_000


@kernel("ktime_get_ns")
def ktime_get_ns(net: Net) -> int:
    """The host's monotonic clock in nanoseconds. Kernel: ktime_get_ns()."""
    return round(net.clock.now() * NSEC_PER_SEC)


class HrTimer:
    """A high-resolution timer (kernel: ``struct hrtimer``).

    *function* runs, with no argument, once the clock reaches the expiry
    given to :meth:`start`.
    """

    __slots__ = ("_base", "_gen", "expires", "function", "name", "queued")

    def __init__(self, base: HrTimerBase, function: Callable[[], None], name: str = "") -> None:
        self._base = base
        self.function = function
        self.name = name
        self.expires = 0
        self.queued = False
        self._gen = 0

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

    def __repr__(self) -> str:
        return f"<HrTimer {self.name} expires={self.expires} queued={self.queued}>"


class HrTimerBase:
    """The high-resolution timers of one Net and the task that fires them."""

    def __init__(self, net: Net) -> None:
        self._net = net
        self._heap: list[tuple[int, int, int, HrTimer]] = []
        self._seq = itertools.count()
        self._stale = 0
        self._lot = trio.lowlevel.ParkingLot()
        self._head = -1
        self.fired = 0

    @kernel("hrtimer_setup")
    def timer(self, function: Callable[[], None], name: str = "") -> HrTimer:
        """A new, unarmed timer. Kernel: hrtimer_setup()."""
        return HrTimer(self, function, name)

    def _push(self, t: HrTimer) -> None:
        heapq.heappush(self._heap, (t.expires, next(self._seq), t._gen, t))
        if self._head < 0 or t.expires < self._head:
            self._head = t.expires
            self._lot.unpark_all()
        if self._stale > 64 and self._stale > len(self._heap) // 2:
            self._heap = [e for e in self._heap if e[3].queued and e[3]._gen == e[2]]
            heapq.heapify(self._heap)
            self._stale = 0

    def _next_live(self) -> int:
        heap = self._heap
        while heap:
            expires, _, gen, t = heap[0]
            if t.queued and t._gen == gen:
                return expires
            heapq.heappop(heap)
            if self._stale:
                self._stale -= 1
        return -1

    def run_due(self, now: float) -> int:
        """Fire every timer whose expiry the clock (*now*, seconds) has reached."""
        heap = self._heap
        n = 0
        while heap:
            expires, _, gen, t = heap[0]
            if not (t.queued and t._gen == gen):
                heapq.heappop(heap)
                if self._stale:
                    self._stale -= 1
                continue
            # Compared in the clock's own unit: the task slept until exactly
            # this float, so the timer is due even if ns rounding disagrees.
            if expires / NSEC_PER_SEC > now:
                break
            heapq.heappop(heap)
            t.queued = False
            self._net.cpus.run_on(0)
            t.function()
            n += 1
        self.fired += n
        return n

    async def run(self) -> None:
        """The hrtimer task: sleep until the earliest expiry, fire, repeat."""
        clock = self._net.clock
        while True:
            head = self._next_live()
            self._head = head
            if head < 0:
                await self._lot.park()
                continue
            deadline = head / NSEC_PER_SEC
            if deadline > clock.now():
                with trio.move_on_at(deadline):
                    await self._lot.park()
                continue
            self.run_due(clock.now())
            await trio.lowlevel.checkpoint()

    def pending_count(self) -> int:
        """Armed timers (for tests)."""
        return sum(1 for e in self._heap if e[3].queued and e[3]._gen == e[2])
