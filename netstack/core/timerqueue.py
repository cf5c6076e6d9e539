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

**Softirq context.** The kernel runs expired timers in ``TIMER_SOFTIRQ``
(``run_timer_softirq``) and hrtimers in hard interrupt context, never inside
another softirq: a transmit in a callback raises ``NET_RX``, which
``__do_softirq`` (or ``irq_exit``) runs after the callbacks return.
:meth:`TimerQueue.run_due` does the same for the polls at ``local_bh_enable``
(``netstack.core.napi``, an opt-in of functional mode): the round's callbacks
run with bottom halves disabled (``napi.BH``), then :func:`do_softirq` polls
what they scheduled. Without the option, or in timed mode, nothing is put on
the list and nothing changes.

**A lab's hub.** In a lab opened with ``chain_polls=True`` (few task steps;
``Net.attach``) no base has a task of its own: one :class:`TimerHub`, the
lab's, sleeps until the earliest head of all its hosts' bases and fires each
base whose head is due (``run_due``, on the host's CPU 0, as the base's task
would), then yields once before it looks again, as the task does after a
round. A push that makes an earlier head moves the deadline of the hub's
sleep (a cancel scope's) instead of waking a task to sleep again, and a
base whose head moved later is looked at when the old head was due, as the
task would be. The same timers at the same times; what changes is the order
in which the bases due at one instant fire (heap order rather than Trio's
order of their tasks), as chained polls change the order of an instant's
packets. 10,000 pinging hosts: 20,000 tasks fewer, and the first step and
cancel scope each host's timer task took.

Kernel: include/linux/timerqueue.h, lib/timerqueue.c.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import trio

from netstack.core.napi import BH, BH_DISABLED, BH_ENABLED, do_softirq, wakeup_softirqd
from netstack.sites import kernel

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = ["TimerHub", "TimerQueue", "TimerQueueNode"]


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
        self._hub: TimerHub | None = None  # the lab's hub fires this base (module doc)
        self._hub_at = -1.0  # the deadline this base's live hub entry has (-1: none)

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

    def use_hub(self, hub: TimerHub) -> None:
        """Let *hub* fire this base instead of a task of its own (the module doc's
        "A lab's hub"; ``Net.attach`` in a lab with chained polls)."""
        self._hub = hub
        head = self._next_live()  # armed before the host was attached
        self._head = head
        if head >= 0:
            hub.arm(self, self._deadline(head))

    def _hub_round(self, hub: TimerHub) -> None:
        """The hub found this base's entry due: what a round of :meth:`run` does."""
        head = self._next_live()
        self._head = head
        if head < 0:
            return
        deadline = self._deadline(head)
        if deadline <= self._net.clock.now():
            self.run_due()
            head = self._next_live()  # what the callbacks armed: after the hub yields
            self._head = head
            if head < 0:
                return
            deadline = self._deadline(head)
        hub.arm(self, deadline)

    # -- the heap -------------------------------------------------------------------------------
    def _push(self, t: N) -> None:
        seq = t._seq = next(self._seq)
        t._queued = t.expires
        heapq.heappush(self._heap, (t.expires, seq, t._gen, t))
        if self._head < 0 or t.expires < self._head:
            self._head = t.expires
            hub = self._hub
            if hub is not None:  # the lab's hub: its sleep ends at this head (module doc)
                hub.arm(self, self._deadline(t.expires))
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

    @kernel(
        "kernel/softirq.c",
        "__do_softirq",
        "kernel/time/timer.c",
        "run_timer_softirq",
        "include/linux/bottom_half.h",
        "local_bh_disable",
        "local_bh_enable",
    )
    def run_due(self) -> int:
        """Fire every timer due now; return how many fired. The callbacks run with
        bottom halves disabled, as the timer softirq does (a hrtimer's in hard
        interrupt context); the NAPI polls their transmits raise run after the
        round, as ``__do_softirq`` goes on from ``TIMER`` to ``NET_RX`` (the
        module doc's "Softirq context"; functional mode with the hosts'
        ``net.polls_at_bh_enable``, else the list stays empty).

        Kernel: kernel/softirq.c, __do_softirq(); kernel/time/timer.c,
        run_timer_softirq(); include/linux/bottom_half.h, local_bh_disable() /
        local_bh_enable().
        """
        bh = BH
        outer = bh.state == BH_ENABLED  # else inside a section already (a test)
        if outer:
            bh.state = BH_DISABLED  # the round is softirq context
        now = self._now()
        heap = self._heap
        n = 0
        try:
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
        except BaseException:
            if outer:
                bh.state = BH_ENABLED
                wakeup_softirqd()  # the list must not outlive the section (napi module doc)
            raise
        if outer:
            bh.state = BH_ENABLED
            if bh.poll_list:  # __do_softirq: NET_RX after TIMER
                do_softirq(self._net)
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


class TimerHub:
    """The one task that fires the timer bases of a lab's hosts (the module doc's
    "A lab's hub"; a lab opened with ``chain_polls=True``)."""

    __slots__ = ("_heap", "_lot", "_nursery", "_seq", "_sleep", "_stale", "_started", "fired")

    def __init__(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery
        # (deadline, arming order, base): an entry is live while the base's _hub_at
        # is its deadline; a base re-armed earlier leaves its later entry stale
        self._heap: list[tuple[float, int, TimerQueue[Any]]] = []
        self._seq = itertools.count()
        self._stale = 0  # stale entries (compacted as a base's heap is)
        self._lot = trio.lowlevel.ParkingLot()
        self._sleep: trio.CancelScope | None = None  # the scope the task sleeps in
        self._started = False  # the task starts at the first entry
        self.fired = 0  # rounds of bases fired (for tests)

    def arm(self, queue: TimerQueue[Any], deadline: float) -> None:
        """*queue*'s head is due at *deadline* (seconds, the run's clock)."""
        heap = self._heap
        if queue._hub_at >= 0:  # its entry until now is stale
            self._stale += 1
            if self._stale > 64 and self._stale > len(heap) // 2:
                heap[:] = [e for e in heap if e[2]._hub_at == e[0] and e[2] is not queue]
                heapq.heapify(heap)
                self._stale = 0
        queue._hub_at = deadline
        earlier = not heap or deadline < heap[0][0]
        heapq.heappush(heap, (deadline, next(self._seq), queue))
        if not earlier:
            return
        sleep = self._sleep
        if sleep is not None:  # asleep until a later entry: wake earlier, no task step
            sleep.deadline = deadline
        elif not self._started:
            self._started = True
            try:
                self._nursery.start_soon(self.run, name="lab/timers")
            except RuntimeError:  # the lab has closed: its hosts' timers with it
                pass
        else:
            self._lot.unpark_all()

    async def run(self) -> None:
        """The hub's task: sleep until the earliest entry, fire what is due, yield."""
        heap = self._heap
        while True:
            if not heap:
                await self._lot.park()
                continue
            now = trio.current_time()
            deadline = heap[0][0]
            if deadline > now:
                sleep = self._sleep = trio.CancelScope(deadline=deadline)
                try:
                    with sleep:
                        await self._lot.park()
                finally:
                    self._sleep = None
                continue
            due: list[TimerQueue[Any]] = []
            while heap and heap[0][0] <= now:
                at, _, queue = heapq.heappop(heap)
                if queue._hub_at == at:  # live (a stale entry's base was re-armed)
                    queue._hub_at = -1.0
                    due.append(queue)
                elif self._stale:
                    self._stale -= 1
            for queue in due:
                queue._hub_round(self)
            self.fired += len(due)
            await trio.lowlevel.checkpoint()
