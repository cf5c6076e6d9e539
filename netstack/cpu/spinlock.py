"""Spin locks of the emulated kernel, with ``lock_stat``-style counters.

Theory of operation: a :class:`SpinLock` is a model object, not Python
concurrency. The data path takes the kernel's locks (qdisc root lock, busylock,
the tx queue ``_xmit_lock`` behind ``HARD_TX_LOCK``, the neighbour lock) through
these objects so they can be counted and, in timed mode, serialise CPUs. In
functional mode the data path is synchronous, so a lock is never found held by
another CPU; finding it held by the *same* CPU is a deadlock in the kernel and
raises :class:`~netstack.errors.SkbPanic` here.

Counters follow ``/proc/lock_stat``: ``acquisitions``, ``contentions``,
``waittime-total``/``-max`` and ``holdtime-total``/``-max`` (seconds here).

In timed mode (:mod:`netstack.cpu.timed`) the lock also remembers its recent
holds as intervals of virtual time (``holds``, each on its holder's clock): a
CPU that wants it at *t* spins while a hold overlaps ``[t, t + h)``, *h*
being the lock's typical hold (a moving average) — until the end of that
hold. CPUs' clocks are not in lock step — a softirq section runs whole, ahead
of a sender that is behind it in time — so a lock asks "would my hold collide
with one that happened then?", not "when was it last released?"; and of two
CPUs that want it at the same instant, the one whose section ran first has
it. The lock word is a cache line that moves to
each new holder.

Kernel: include/linux/spinlock.h, kernel/locking/lockdep.c (lock_stat).
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Final

import attrs

from netstack.cpu.cpu import Cpu
from netstack.errors import SkbPanic
from netstack.sites import kernel

if TYPE_CHECKING:
    from netstack.cpu.cacheline import CacheLine

__all__ = ["HOLDS_KEPT", "LockStat", "SpinLock"]

HOLDS_KEPT: Final = 64  # holds a timed lock remembers (more than CPUs can be apart)


@attrs.frozen
class LockStat:
    """A snapshot of one lock's ``lock_stat`` line."""

    name: str
    acquisitions: int
    contentions: int
    waittime_total: float
    waittime_max: float
    holdtime_total: float
    holdtime_max: float


class SpinLock:
    """A kernel spin lock (``spinlock_t``) as a bookkeeping object.

    ``owner`` is the id of the holding CPU or -1. ``hold_count`` exists so
    tests can ask "was this lock held while X ran?" without instrumenting X.
    """

    __slots__ = (
        "_holds",
        "acquisitions",
        "contentions",
        "hold_est",
        "hold_start",
        "holdtime_max",
        "holdtime_total",
        "line",
        "name",
        "owner",
        "waittime_max",
        "waittime_total",
    )

    def __init__(self, name: str) -> None:
        self.name = name
        self.owner = -1
        self.hold_start = 0.0
        self.hold_est = 0.0  # timed mode: a moving average of hold times (ns)
        # timed mode: the last HOLDS_KEPT holds as (start, end) in ns
        self._holds: collections.deque[tuple[float, float]] | None = None  # see holds
        self.line: CacheLine | None = None  # timed mode: the lock word's cache line
        self.reset_stats()

    @property
    def holds(self) -> collections.deque[tuple[float, float]]:
        """Timed mode: the last HOLDS_KEPT holds as (start, end) in ns (made on first
        use: a functional lab's hundreds of locks never need one)."""
        holds = self._holds
        if holds is None:
            holds = self._holds = collections.deque(maxlen=HOLDS_KEPT)
        return holds

    def reset_stats(self) -> None:
        """Zero the ``lock_stat`` counters (``echo 0 > /proc/lock_stat``)."""
        self.acquisitions = 0
        self.contentions = 0
        self.waittime_total = 0.0
        self.waittime_max = 0.0
        self.holdtime_total = 0.0
        self.holdtime_max = 0.0

    @property
    @kernel("spin_is_locked")
    def held(self) -> bool:
        """True while some CPU holds the lock. Kernel: spin_is_locked()."""
        return self.owner != -1

    @kernel("spin_lock")
    def lock(self, cpu: Cpu) -> None:
        """Take the lock on *cpu*. Kernel: spin_lock()."""
        if self.owner != -1:
            if self.owner == cpu.id:
                raise SkbPanic(f"spin_lock({self.name}): recursive acquisition on CPU {cpu.id}")
            self.contentions += 1
        model = cpu.model
        if model is not None:
            model.spin_lock(self, cpu)
        self.owner = cpu.id
        self.acquisitions += 1

    @kernel("spin_trylock")
    def trylock(self, cpu: Cpu) -> bool:
        """Take the lock if free; False otherwise. Kernel: spin_trylock()."""
        if self.owner != -1:
            self.contentions += 1
            return False
        model = cpu.model
        if model is not None and not model.spin_trylock(self, cpu):
            return False
        self.owner = cpu.id
        self.acquisitions += 1
        return True

    @kernel("spin_unlock")
    def unlock(self, cpu: Cpu) -> None:
        """Release the lock. Kernel: spin_unlock()."""
        if self.owner != cpu.id:
            raise SkbPanic(f"spin_unlock({self.name}) on CPU {cpu.id}, owner is {self.owner}")
        self.owner = -1
        model = cpu.model
        if model is not None:
            model.spin_unlock(self, cpu)

    def statistics(self) -> LockStat:
        """The lock's ``lock_stat`` counters."""
        return LockStat(
            self.name,
            self.acquisitions,
            self.contentions,
            self.waittime_total,
            self.waittime_max,
            self.holdtime_total,
            self.holdtime_max,
        )

    def __repr__(self) -> str:
        return f"<SpinLock {self.name} owner={self.owner}>"
