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
arming sequence number), so timers fire in the same order either way. The
heap itself is :class:`netstack.core.timerqueue.TimerQueue`, shared with the
high-resolution timers; this module supplies the jiffy clock and
``timer_list``'s ``mod_timer``/``del_timer``. After a round of callbacks the
task waits for the timed model, when one runs, to account the CPU it used.

Kernel: kernel/time/timer.c, include/linux/timer.h.
"""

from __future__ import annotations

from collections.abc import Callable

import trio

from netstack.core.timerqueue import TimerQueue, TimerQueueNode
from netstack.sites import TIMED, kernel, spend

__all__ = ["TimerBase", "TimerList"]


class TimerList(TimerQueueNode):
    """A timer (kernel: ``struct timer_list``); *function* runs when it expires."""

    __slots__ = ("_base", "pending")

    def __init__(self, base: TimerBase, function: Callable[[], None], name: str = "") -> None:
        super().__init__(function, name)
        self._base = base
        self.pending = False

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

    def _expired(self) -> None:
        self.pending = False

    def __repr__(self) -> str:
        return f"<TimerList {self.name} expires={self.expires} pending={self.pending}>"


class TimerBase(TimerQueue[TimerList]):
    """The timers of one Net and the task that fires them."""

    @kernel("timer_setup")
    def timer(self, function: Callable[[], None], name: str = "") -> TimerList:
        """A new, unarmed timer. Kernel: timer_setup()."""
        return TimerList(self, function, name)

    def _now(self) -> float:
        return self._net.clock.jiffies

    def _later(self, expires: int, now: float) -> bool:
        return expires > now

    def _deadline(self, expires: int) -> float:
        return self._net.clock.jiffies_to_time(expires)

    async def _after_run(self) -> None:
        model = self._net.cpus.model
        if model is not None and model.running:
            await model.wait(self._net.cpus.current)
        else:
            await trio.lowlevel.checkpoint()
