"""The CPUs of one host and which one is running the current data-path section.

Theory of operation: every entry into the data path (a socket call, a NAPI
poll, a timer) runs on one :class:`Cpu`; the :class:`CpuSet` of the host
records which one as ``current`` (kernel: ``smp_processor_id()``). Locks record
their owner by CPU id, and ``HARD_TX_LOCK`` stores it in
``txq.xmit_lock_owner`` for the dead-loop check. In functional mode a host has
one CPU unless asked for more, and :meth:`Cpu.charge` costs nothing; timed mode
replaces it with a model that advances the CPU's virtual clock.

Kernel: include/linux/smp.h, kernel/softirq.c (the per-CPU context).
"""

from __future__ import annotations

__all__ = ["Cpu", "CpuSet"]


class Cpu:
    """One emulated CPU.

    Attributes:
        id: the CPU number, as ``smp_processor_id()`` returns it.
        softirq_pending: NET_RX/NET_TX softirq raised on this CPU (bookkeeping).
        xmit_recursion: nesting depth of ``dev_hard_start_xmit`` on virtual
            devices (kernel: ``softnet_data.xmit.recursion``).
    """

    __slots__ = ("id", "softirq_pending", "xmit_recursion")

    def __init__(self, cpu_id: int) -> None:
        self.id = cpu_id
        self.softirq_pending = 0
        self.xmit_recursion = 0

    def charge(self, site: str, nbytes: int = 0) -> None:
        """Account the cost of *site* (a kernel function name) on this CPU.

        Functional mode: free. Timed mode: advances this CPU's virtual clock by
        the cost table's figure for *site* (plus a per-byte part).
        """

    def __repr__(self) -> str:
        return f"<Cpu {self.id}>"


class CpuSet:
    """The CPUs of one host; ``current`` is the one running data-path code now."""

    __slots__ = ("cpus", "current")

    def __init__(self, ncpus: int = 1) -> None:
        if not isinstance(ncpus, int) or ncpus < 1:
            raise ValueError(f"a host needs at least one CPU, not {ncpus!r}")
        self.cpus = tuple(Cpu(i) for i in range(ncpus))
        self.current = self.cpus[0]

    def __len__(self) -> int:
        return len(self.cpus)

    def __getitem__(self, i: int) -> Cpu:
        return self.cpus[i]

    def run_on(self, cpu_id: int) -> Cpu:
        """Make CPU *cpu_id* current (an entry into the data path) and return it."""
        cpu = self.cpus[cpu_id % len(self.cpus)]
        self.current = cpu
        return cpu
