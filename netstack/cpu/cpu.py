"""The CPUs of one host and which one is running the current data-path section.

Theory of operation: every entry into the data path (a socket call, a NAPI
poll, a timer) runs on one :class:`Cpu`; the :class:`CpuSet` of the host
records which one as ``current`` (kernel: ``smp_processor_id()``). Locks record
their owner by CPU id, and ``HARD_TX_LOCK`` stores it in
``txq.xmit_lock_owner`` for the dead-loop check.

In functional mode a host has one CPU unless asked for more, ``Cpu.model`` is
None and nothing costs time. In timed mode (:mod:`netstack.cpu.timed`) each CPU
also carries a virtual clock ``now`` (nanoseconds), the context it is running
in (``user``, ``sys`` or ``softirq``) and what it spent where: busy time per
context, idle time, and a profile of self time per kernel function.

Kernel: include/linux/smp.h, kernel/softirq.c (the per-CPU context).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import trio

if TYPE_CHECKING:
    from netstack.cpu.timed import TimedModel

__all__ = ["CONTEXTS", "NR_CPUS", "Cpu", "CpuSet"]

CONTEXTS = ("user", "sys", "softirq")


class Cpu:
    """One emulated CPU.

    Attributes:
        id: the CPU number within its host, as ``smp_processor_id()`` returns it.
        softirq_pending: NET_RX/NET_TX softirq raised on this CPU (bookkeeping).
        xmit_recursion: nesting depth of ``dev_hard_start_xmit`` on virtual
            devices (kernel: ``softnet_data.xmit.recursion``).
        model: the timed-mode model, or None in functional mode.
        index: the CPU's position in the timed model's machine (all hosts'
            CPUs numbered together), -1 in functional mode.
        now: timed mode: this CPU's virtual clock, in nanoseconds.
        ctx: timed mode: the context now running (``user``/``sys``/``softirq``).
        busy: timed mode: nanoseconds spent per context.
        idle: timed mode: nanoseconds with nothing to run.
        spin: timed mode: nanoseconds spent spinning on locks (part of busy).
        profile: timed mode: self nanoseconds per kernel function.
        speed: timed mode: cost multiplier of this hardware thread (1.0 on the
            reference machine; larger is slower).
    """

    __slots__ = (
        "busy",
        "ctx",
        "id",
        "idle",
        "index",
        "model",
        "now",
        "profile",
        "softirq_pending",
        "speed",
        "spin",
        "xmit_recursion",
    )

    def __init__(self, cpu_id: int) -> None:
        self.id = cpu_id
        self.softirq_pending = 0
        self.xmit_recursion = 0
        self.model: TimedModel | None = None
        self.index = -1
        self.now = 0.0
        self.ctx = "sys"
        self.busy = dict.fromkeys(CONTEXTS, 0.0)
        self.idle = 0.0
        self.spin = 0.0
        self.profile: dict[str, float] = {}
        self.speed = 1.0

    def charge(self, site: str, ns: float) -> None:
        """Spend *ns* nanoseconds in *site* (a kernel function name).

        Functional mode: free. Timed mode: advances this CPU's clock and books
        the time to *site* and to the running context. (Costs from the cost
        table are scaled by ``speed`` before they get here; stalls such as
        cache misses are not.)
        """
        if self.model is None:
            return
        self.now += ns
        self.busy[self.ctx] += ns
        prof = self.profile
        prof[site] = prof.get(site, 0.0) + ns

    def __repr__(self) -> str:
        return f"<Cpu {self.id}>"


NR_CPUS: Final = 8192
"""The most CPUs a host can have: ``CONFIG_NR_CPUS`` of a MAXSMP x86-64 kernel, the
value Debian, Fedora and Ubuntu build with. Per-CPU state is allocated up front,
so an unbounded count would hang (a lab file with ``cpus = 1000000000``)."""


class CpuSet:
    """The CPUs of one host; ``current`` is the one running data-path code now."""

    __slots__ = ("cpus", "current", "model")

    def __init__(self, ncpus: int = 1) -> None:
        if not isinstance(ncpus, int) or ncpus < 1:
            raise ValueError(f"a host needs at least one CPU, not {ncpus!r}")
        if ncpus > NR_CPUS:
            raise ValueError(f"a host has at most NR_CPUS ({NR_CPUS}) CPUs, not {ncpus}")
        self.cpus = tuple(Cpu(i) for i in range(ncpus))
        self.current = self.cpus[0]
        self.model: TimedModel | None = None

    def __len__(self) -> int:
        return len(self.cpus)

    def __getitem__(self, i: int) -> Cpu:
        return self.cpus[i]

    def time(self) -> float:
        """Now, in seconds, as the running data-path code sees it.

        Trio's clock in functional mode; in timed mode the current CPU's own
        clock, which runs ahead of Trio's inside a section (a NIC stamps a
        frame's departure with it, not with the instant the section began).
        """
        model = self.model
        if model is not None and model.running and model.current is self.current:
            return self.current.now * 1e-9
        return trio.current_time()

    def run_on(self, cpu_id: int, ctx: str = "softirq") -> Cpu:
        """Make CPU *cpu_id* current (an entry into the data path) and return it.

        *ctx* is the context the code runs in (``sys`` for a system call,
        ``softirq`` for NAPI, timers and the like); timed mode books time to it.
        """
        cpu = self.cpus[cpu_id % len(self.cpus)]
        self.current = cpu
        model = self.model
        if model is not None:
            model.switch_to(cpu, ctx)
        return cpu
