"""The heap both timer bases keep: armed timers ordered by expiry, one task to fire them.

Theory of operation: :class:`TimerQueue` is the one implementation behind the
jiffy timers (:class:`netstack.core.timer.TimerBase`, ``struct timer_list``)
and the high-resolution timers (:class:`netstack.core.hrtimer.HrTimerBase`,
``struct hrtimer``); the two differ only in the unit of ``expires`` (jiffies
or nanoseconds), how the clock is read and compared, and what the task does
after a round of callbacks — the hooks a subclass fills in.

A heap entry is ``(expires, seq, gen, timer)``: ordered by expiry, ties by
arming sequence number. Each timer (a :class:`TimerQueueNode`) carries a
generation number bumped whenever it is re-armed to an earlier time or
disarmed, so an entry whose ``gen`` no longer matches is stale and is dropped
when it reaches the head (or by a compaction once more than half the heap,
and more than 64 entries, is stale). An entry whose ``gen`` matches is the
timer's one live entry; a timer leaves the heap only by firing, so such a
timer is always armed. A timer re-armed *later* keeps its entry
(``_queued`` <= ``expires``): reaching the head, the entry is re-queued under
the key an immediate push would have given it, so timers fire in the same
order either way (TCP pushes its RTO back on every ACK).

One Trio task per base sleeps until the earliest live expiry, woken early
when a push makes an earlier head, then runs every due callback
synchronously on CPU 0, as the timer softirq does.

In a lab opened with ``chain_polls=True`` (few task steps: ``Net.attach``)
the task starts at the first push rather than with its host: a host that
never arms a timer of this base never runs it.

Kernel: include/linux/timerqueue.h, lib/timerqueue.c.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

import trio

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = ["TimerQueue", "TimerQueueNode"]


class TimerQueueNode:
    """What a timer keeps for its queue (kernel: ``struct timerqueue_node``)."""

    __slots__ = ("_gen", "_queued", "_seq", "expires", "function", "name")

    def __init__(self, function: Callable[[], None], name: str) -> None:
        self.function = function
        self.name = name
        self.expires = 0
        self._gen = 0
        self._queued = 0  # the expiry of the live heap entry (<= expires)
        self._seq = 0  # the arming sequence number: the heap's tie-break

    def _expired(self) -> None:
        """Its live entry left the heap to fire: mark it no longer armed."""
        raise NotImplementedError


N = TypeVar("N", bound=TimerQueueNode)


class TimerQueue(Generic[N]):
    """Armed timers of one Net in expiry order, and the task that fires them."""

    def __init__(self, net: Net) -> None:
        self._net = net
        self._heap: list[tuple[int, int, int, N]] = []
        self._seq = itertools.count()
        self._stale = 0
        self._lot = trio.lowlevel.ParkingLot()
        self._head = -1
        self.fired = 0
        self._deferred = ""  # the task's name while it waits for the first push

    # -- the hooks of the two bases ---------------------------------------------------------
    def _now(self) -> float:
        """The clock, in what :meth:`_later` compares expiries with."""
        raise NotImplementedError

    def _later(self, expires: int, now: float) -> bool:
        """Whether *expires* is still in the future at *now*."""
        raise NotImplementedError

    def _deadline(self, expires: int) -> float:
        """The clock time (seconds) at which *expires* is due."""
        raise NotImplementedError

    async def _after_run(self) -> None:
        """What the task does after a round of callbacks (yield the CPU)."""
        await trio.lowlevel.checkpoint()

    def defer_task(self, name: str) -> None:
        """Start the task (named *name*) at the first push (the module doc;
        ``Net.attach`` in a lab with chained polls)."""
        if self._heap:  # armed before the host was attached: it is needed now
            self._net.start_deferred(self.run, name)
        else:
            self._deferred = name

    # -- the heap -------------------------------------------------------------------------------
    def _push(self, t: N) -> None:
        seq = t._seq = next(self._seq)
        t._queued = t.expires
        heapq.heappush(self._heap, (t.expires, seq, t._gen, t))
        if self._head < 0 or t.expires < self._head:
            self._head = t.expires
            if self._deferred:  # the first push: the task starts, sleeps until the head
                name, self._deferred = self._deferred, ""
                self._net.start_deferred(self.run, name)
            else:
                self._lot.unpark_all()
        if self._stale > 64 and self._stale > len(self._heap) // 2:
            self._compact()

    def _compact(self) -> None:
        self._heap = [e for e in self._heap if e[3]._gen == e[2]]
        heapq.heapify(self._heap)
        self._stale = 0

    def _next_live(self) -> int:
        heap = self._heap
        while heap:
            expires, _, gen, t = heap[0]
            if t._gen == gen:
                if t.expires == expires:
                    return expires
                self._requeue(t)
                continue
            heapq.heappop(heap)
            if self._stale:
                self._stale -= 1
        return -1

    def _requeue(self, t: N) -> None:
        """The head entry of *t*, re-armed later since: queue it under its real key."""
        t._queued = t.expires
        heapq.heapreplace(self._heap, (t.expires, t._seq, t._gen, t))

    def run_due(self) -> int:
        """Fire every timer due now; return how many fired."""
        now = self._now()
        heap = self._heap
        n = 0
        while heap:
            expires, _, gen, t = heap[0]
            if t._gen != gen:
                heapq.heappop(heap)
                if self._stale:
                    self._stale -= 1
                continue
            if self._later(expires, now):
                break
            if t.expires != expires:
                self._requeue(t)
                continue
            heapq.heappop(heap)
            t._expired()
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
            deadline = self._deadline(head)
            if deadline > clock.now():
                with trio.move_on_at(deadline):
                    await self._lot.park()
                continue
            self.run_due()
            await self._after_run()

    def pending_count(self) -> int:
        """Armed timers (for tests and ``statistics()``)."""
        return sum(1 for e in self._heap if e[3]._gen == e[2])
