"""Time for the emulated kernel: Trio's clock, seen as ``jiffies``.

Theory of operation: ``jiffies`` is ``floor(now * HZ)`` of the Trio clock the
host runs on (under ``MockClock`` that is virtual time, starting at 0). A timer
armed for jiffy *j* fires at ``j / HZ`` seconds, i.e. on the first tick at or
after its expiry, as ``mod_timer`` does. Python integers do not wrap, so the
``time_after`` family is plain comparison; they exist so that code reads like
the kernel's.

Under a ``MockClock`` that does not run (``rate`` 0: the autojump clock every
lab and test uses) the time is exactly the clock's virtual base, which
``jiffies`` and ``now()`` read directly: a ping reads the clock some thirty
times, and Trio's ``current_time`` is two Python calls and a
``perf_counter`` per read.

**Held time.** On a clock that runs (Trio's real clock, or any clock
whose every read moves: the benchmarks'), each read is a call into Trio's
clock, and TCP reads it about fourteen times per segment it handles with
its share of the ACKs (``jiffies`` for its timers and stamps,
``tcp_clock_us``, ``ktime_get_seconds``). The kernel refreshes TCP's stamp
a few times per segment (``tcp_mstamp_refresh`` in ``tcp_rcv_established``
or ``tcp_rcv_state_process`` and again in every ``tcp_write_xmit``) and
``jiffies`` is a load that a tick moves at most once a millisecond.
:meth:`Clock.hold` is coarser, an approximation: it reads the time once and
keeps it until :meth:`Clock.release`: the socket layer holds it while one
segment goes through TCP (``tcp_v4_rcv`` / ``tcp_v6_rcv``) and while one
socket call runs (``sendmsg``, ``recvmsg``), code that never awaits, so
every read in between sees the instant the segment or call began (timers
armed meanwhile included), where the kernel's ``tcp_write_xmit`` would read
a later one. Under a
``MockClock`` that does not run, which every lab, test and timed experiment
uses, virtual time cannot move inside such a stretch anyway: holding changes
nothing there, and is skipped.

Kernel: include/linux/jiffies.h, kernel/time/timer.c.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Final

import trio
import trio.testing

from netstack.sites import kernel

_floor: Final = math.floor
HZ_DEFAULT: Final = 1000
USER_HZ: Final = 100


class Clock:
    """The clock of one emulated host.

    Args:
        hz: the tick rate (``CONFIG_HZ``); 100, 250, 300 and 1000 are the
            kernel's choices, any positive integer is accepted.
        now: the time source in seconds; Trio's clock by default. ``clock.now()``
            reads it.
    """

    __slots__ = ("_held", "_j", "_jbase", "_jobj", "_mock", "_now", "hz")

    def __init__(self, hz: int = HZ_DEFAULT, now: Callable[[], float] = trio.current_time) -> None:
        if not isinstance(hz, int) or hz <= 0:
            raise ValueError(f"HZ must be a positive integer, not {hz!r}")
        self.hz = hz
        self._now: Callable[[], float] = now  # seconds on the host's clock
        # the run's MockClock, read directly (the build's copy keeps its attribute dict:
        # scripts/build_compiled.py)
        self._mock: trio.testing.MockClock | None = None
        # jiffies at the MockClock's virtual time _jbase (read again only once it moved)
        self._jbase = -1.0
        self._j = 0
        # the MockClock's _virtual_base object that _j was converted from while it did
        # not run: Trio replaces the float on every jump and every change of rate
        # (the rate setter rebases it), and this reference keeps the old one alive, so
        # while the same object is there, the rate is still 0 and _j is current
        self._jobj: object = None
        # the time hold() read, until release(); -1.0: not held (a clock's time is >= 0)
        self._held = -1.0

    def follow_run_clock(self) -> None:
        """Read the running Trio clock directly rather than through ``trio.current_time``.

        Called from inside ``trio.run`` (``Net.attach``): the same time, one
        Python call instead of three per read — TCP reads the clock about
        thirty times per skb — and under a ``MockClock`` none while it does
        not run (module doc). A clock given its own source keeps it.
        """
        if self._now is trio.current_time:
            clock = trio.lowlevel.current_clock()
            self._now = clock.current_time
            # the attributes read are MockClock's own, checked in case Trio renames them
            if (
                isinstance(clock, trio.testing.MockClock)
                and hasattr(clock, "_virtual_base")
                and hasattr(clock, "_rate")
            ):
                self._mock = clock

    def now(self) -> float:
        """Seconds on the host's clock."""
        mock = self._mock
        # rate 0: current_time() is _virtual_base + 0.0 * (real - real_base), the same float
        if mock is not None and not mock._rate:
            base: float = mock._virtual_base
            return base
        held = self._held
        if held >= 0.0:
            return held
        return self._now()

    def hold(self) -> float:
        """Read the time once; until :meth:`release`, every read returns it (module doc).

        Returns what :meth:`release` takes: the time held before (a hold inside
        a hold keeps the outer one's instant), or -1.0. Nothing is held under a
        ``MockClock`` that does not run: its time cannot move meanwhile.
        """
        held = self._held
        if held < 0.0:
            mock = self._mock
            if mock is None or mock._rate:
                self._held = self._now()
        return held

    def release(self, held: float) -> None:
        """End a :meth:`hold`: *held* is what it returned."""
        self._held = held

    @property
    def jiffies(self) -> int:
        """The tick counter. Kernel: ``jiffies``."""
        # The epsilon keeps j/HZ (when a timer for jiffy j fires) inside jiffy j
        # despite binary floating point (1.001 * 1000 == 1000.9999999999999).
        mock = self._mock
        if mock is not None:
            vbase = mock._virtual_base
            if vbase is self._jobj:  # the same instant, at rate 0: one read, no compare
                return self._j
            if not mock._rate:  # now(), inline: ~23 reads a ping
                base: float = vbase
                self._jobj = vbase
                if base == self._jbase:  # virtual time has not moved since the last read
                    return self._j
                self._jbase = base
                j = self._j = _floor(base * self.hz + 1e-6)
                return j
        base = self._held
        if base >= 0.0:  # held (hold()): the same cache
            if base == self._jbase:
                return self._j
            self._jobj = None
            self._jbase = base
            j = self._j = _floor(base * self.hz + 1e-6)
            return j
        return _floor(self._now() * self.hz + 1e-6)

    def jiffies_to_time(self, j: int) -> float:
        """The clock time at which tick *j* starts (when a timer for *j* fires)."""
        return j / self.hz

    @kernel("msecs_to_jiffies")
    def msecs_to_jiffies(self, ms: float) -> int:
        """Round up, as the kernel does. Kernel: msecs_to_jiffies()."""
        return math.ceil(ms * self.hz / 1000)

    @kernel("jiffies_to_msecs")
    def jiffies_to_msecs(self, j: int) -> int:
        """Kernel: jiffies_to_msecs()."""
        return j * 1000 // self.hz

    @kernel("jiffies_to_clock_t")
    def jiffies_to_clock_t(self, j: int) -> int:
        """Ticks → USER_HZ units, as /proc and ``ip -s neigh`` print.

        Kernel: jiffies_to_clock_t().
        """
        return j * USER_HZ // self.hz


@kernel("time_after")
def time_after(a: int, b: int) -> bool:
    """True if *a* is after *b*. Kernel: time_after()."""
    return a > b


@kernel("time_before")
def time_before(a: int, b: int) -> bool:
    """True if *a* is before *b*. Kernel: time_before()."""
    return a < b


@kernel("time_after_eq")
def time_after_eq(a: int, b: int) -> bool:
    """Kernel: time_after_eq()."""
    return a >= b


@kernel("time_before_eq")
def time_before_eq(a: int, b: int) -> bool:
    """Kernel: time_before_eq()."""
    return a <= b
