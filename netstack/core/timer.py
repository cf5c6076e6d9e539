"""Kernel timers on the host's clock: ``mod_timer``/``del_timer`` in virtual time.

Theory of operation: every Net has one :class:`TimerBase`, a heap of armed
timers ordered by expiry (in jiffies), served by one Trio task that sleeps
until the earliest expiry and then runs every due callback synchronously, as
the timer softirq does. Arming a timer is synchronous and cheap; if it becomes
the earliest, the task is woken to sleep for the shorter time. Re-arming
earlier or deleting leaves a stale heap entry behind, recognised by a
generation number. Re-arming later (TCP pushes its RTO back on every ACK)
only records the new expiry: the queued entry, reaching the head of the heap,
is re-queued under the key an immediate push would have given it (expiry and
arming sequence number), so timers fire in the same order either way.

Kernel: kernel/time/timer.c, include/linux/timer.h.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

from netstack.sites import TIMED, kernel, spend

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = ["TimerBase", "TimerList"]


class TimerList:
    """A timer (kernel: ``struct timer_list``); *function* runs when it expires."""

    __slots__ = ("_base", "_gen", "_queued", "_seq", "expires", "function", "name", "pending")

    def __init__(self, base: TimerBase, function: Callable[[], None], name: str = "") -> None:
        self._base = base
        self.function = function
        self.name = name
        self.expires = 0
        self.pending = False
        self._gen = 0
        self._queued = 0  # the expiry of the live heap entry (<= expires)
        self._seq = 0  # the arming sequence number: the heap's tie-break

    @kernel("mod_timer")
    def mod(self, expires: int) -> bool:
        """(Re)arm for jiffy *expires*; True if it was pending. Kernel: mod_timer()."""
        if TIMED:
            spend("mod_timer")
        was = self.pending
        if was:
            if expires == self.expires:
                return True
            if expires > self._queued:  # later: the queued entry is re-queued when due
                self.expires = expires
                self._seq = next(self._base._seq)
                return True
        self._gen += 1
        self.expires = expires
        self.pending = True
        self._base._push(self)
        return was

    @kernel("del_timer")
    def delete(self) -> bool:
        """Disarm; True if it was pending. Kernel: del_timer()."""
        was = self.pending
        if was:
            self.pending = False
            self._gen += 1
            self._base._stale += 1
        return was

    def __repr__(self) -> str:
        return f"<TimerList {self.name} expires={self.expires} pending={self.pending}>"


class TimerBase:
    """The timers of one Net and the task that fires them."""

    def __init__(self, net: Net) -> None:
        self._net = net
        self._heap: list[tuple[int, int, int, TimerList]] = []
        self._seq = itertools.count()
        self._stale = 0
        self._lot = trio.lowlevel.ParkingLot()
        self._head = -1
        self.fired = 0

    @kernel("timer_setup")
    def timer(self, function: Callable[[], None], name: str = "") -> TimerList:
        """A new, unarmed timer. Kernel: timer_setup()."""
        return TimerList(self, function, name)

    def _push(self, t: TimerList) -> None:
        seq = t._seq = next(self._seq)
        t._queued = t.expires
        heapq.heappush(self._heap, (t.expires, seq, t._gen, t))
        if self._head < 0 or t.expires < self._head:
            self._head = t.expires
            self._lot.unpark_all()
        if self._stale > 64 and self._stale > len(self._heap) // 2:
            self._compact()

    def _compact(self) -> None:
        self._heap = [e for e in self._heap if e[3].pending and e[3]._gen == e[2]]
        heapq.heapify(self._heap)
        self._stale = 0

    def _next_live(self) -> int:
        heap = self._heap
        while heap:
            expires, _, gen, t = heap[0]
            if t.pending and t._gen == gen:
                if t.expires == expires:
                    return expires
                self._requeue(t)
                continue
            heapq.heappop(heap)
            if self._stale:
                self._stale -= 1
        return -1

    def _requeue(self, t: TimerList) -> None:
        """The head entry of *t*, re-armed later since: queue it under its real key."""
        t._queued = t.expires
        heapq.heapreplace(self._heap, (t.expires, t._seq, t._gen, t))

    def run_due(self) -> int:
        """Fire every timer due now; return how many fired."""
        clock = self._net.clock
        now = clock.jiffies
        heap = self._heap
        n = 0
        while heap:
            expires, _, gen, t = heap[0]
            if not (t.pending and t._gen == gen):
                heapq.heappop(heap)
                if self._stale:
                    self._stale -= 1
                continue
            if expires > now:
                break
            if t.expires != expires:
                self._requeue(t)
                continue
            heapq.heappop(heap)
            t.pending = False
            self._net.cpus.run_on(0)
            t.function()
            n += 1
        self.fired += n
        return n

    async def run(self) -> None:
        """The timer task: sleep until the earliest expiry, fire, repeat."""
        clock = self._net.clock
        while True:
            head = self._next_live()
            self._head = head
            if head < 0:
                await self._lot.park()
                continue
            deadline = clock.jiffies_to_time(head)
            if deadline > clock.now():
                with trio.move_on_at(deadline):
                    await self._lot.park()
                continue
            self.run_due()
            model = self._net.cpus.model
            if model is not None and model.running:
                await model.wait(self._net.cpus.current)
            else:
                await trio.lowlevel.checkpoint()

    def pending_count(self) -> int:
        """Armed timers (for tests and ``statistics()``)."""
        return sum(1 for e in self._heap if e[3].pending and e[3]._gen == e[2])
