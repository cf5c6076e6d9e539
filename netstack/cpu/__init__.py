"""Emulated CPUs: the clock and jiffies, the CPU a data-path section runs on,
and spin locks with ``lock_stat`` counters.

Theory of operation (functional mode, the default): the data path is
synchronous Python, so while one section runs nothing else in the process can
touch emulator state. A :class:`SpinLock` is therefore never contended in
functional mode; taking it is bookkeeping (acquisitions, owner) that makes the
kernel's locking visible and testable. Time is Trio's clock, read through
:class:`Clock`, which turns it into ``jiffies`` at a configurable ``HZ``.

Timed mode (:mod:`netstack.cpu.timed`) gives each CPU a virtual clock and a
cost table and makes locks serialise CPUs in virtual time; the data path does
not change, because it already takes its locks through these objects, runs on
a :class:`Cpu`, and names its costs explicitly (``if TIMED: spend("ip_rcv")``,
:mod:`netstack.sites`).
"""

from netstack.cpu.clock import (
    HZ_DEFAULT,
    Clock,
    time_after,
    time_after_eq,
    time_before,
    time_before_eq,
)
from netstack.cpu.cpu import Cpu, CpuSet
from netstack.cpu.spinlock import LockStat, SpinLock

__all__ = [
    "HZ_DEFAULT",
    "Clock",
    "Cpu",
    "CpuSet",
    "LockStat",
    "SpinLock",
    "time_after",
    "time_after_eq",
    "time_before",
    "time_before_eq",
]
