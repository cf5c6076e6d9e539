"""Timed mode: virtual CPUs that spend time, spin on locks and miss in cache.

Theory of operation. In functional mode the data path costs nothing. A
:class:`TimedModel` gives the CPUs of a lab's hosts a virtual clock each
(``Cpu.now``, nanoseconds) and makes the data path spend time on them:

* **functions** — a data-path function that mirrors a costly kernel
  function charges it explicitly (``if TIMED: spend("ip_rcv")``, see
  :mod:`netstack.sites`); while the model measures, :meth:`spend` adds that
  function's cost from the :class:`~netstack.cpu.costs.CostTable`, plus its
  per-byte part for copies and checksums, scaled to the hardware thread's
  speed, to the current CPU's clock and to its profile. Nothing traces
  calls; outside a data-path section (Trio's own code) and in functional
  mode nothing is charged, and the data path pays one global check per
  charge site.
* **locks** — :class:`~netstack.cpu.spinlock.SpinLock` remembers its recent
  holds as intervals of virtual time (``holds``); a CPU whose hold of the
  usual length would collide with one of them spins until it ends
  (:meth:`TimedModel.lock_free_at`): its clock advances, the time is busy
  time booked to ``_raw_spin_lock``, and the lock counts a contention.
  Taking a lock is an atomic write to its cache line.
* **cache lines** — :class:`~netstack.cpu.cacheline.CacheLine` objects sit on
  the fields the kernel shares between CPUs (dst refcounts, the neighbour's
  ``confirmed``, qdisc state); a miss costs the transfer latency between the
  two CPUs on the :class:`Machine`.

Scheduling. Work enters the data path on a CPU through
:meth:`TimedModel.switch_to` (``CpuSet.run_on``): the CPU's clock first
catches up with Trio's clock (the gap is idle time). A task that did work
then waits with :meth:`TimedModel.wait` until Trio's clock reaches the CPU's,
so Trio runs every task — senders, NAPI polls, timers, links — in virtual-time
order: whichever CPU is furthest behind runs next. A section runs whole once
started (the granularity is one operation: a ``sendto``, a NAPI poll); a lock
or line it touches may already carry a later CPU's mark, which that section
then waits for. Ties are broken by CPU index (a 0.1 ps offset) so runs are
identical; Trio's own scheduling randomness is seeded by :meth:`run`.

Kernel: the costs of kernel/locking/spinlock.c, the coherence traffic that
include/linux/cache.h layouts avoid, and perf's view of them.
"""

from __future__ import annotations

import heapq
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager

import attrs
import trio

from netstack.cpu.cacheline import CacheLine, CacheLineStat
from netstack.cpu.costs import CostTable, default_costs
from netstack.cpu.cpu import CONTEXTS, Cpu, CpuSet
from netstack.cpu.spinlock import LockStat, SpinLock
from netstack.sites import activate, deactivate, kernel

__all__ = ["Machine", "Thread", "ThreadBlocked", "TimedModel", "TimedReport", "trio_deterministic"]

SPIN_SITE = "_raw_spin_lock"
_TIE_NS = 1e-4  # ns between CPUs that would wake at the same instant (CPU index order)


@attrs.frozen
class Machine:
    """The hardware a timed lab runs on.

    CPUs are numbered as Linux numbers them on a multi-socket SMT machine:
    first one hardware thread of every core (socket 0's cores, then socket
    1's…), then the second thread of every core in the same order.

    Attributes:
        name: what it is.
        sockets, cores_per_socket, threads_per_core: the topology.
        ghz: clock rate; costs in the table are for the reference machine's
            ``reference_ghz`` and scale by ``reference_ghz / ghz``.
        smt_slowdown: cost multiplier of a hardware thread whose sibling is
            busy too (two threads share one core's execution units).
        memory_ns: a line that no cache holds.
        smt_ns, core_ns, socket_ns: transfer of a line from the sibling
            thread, another core of the same socket, another socket.
        atomic_ns: extra cost of a locked read-modify-write that hits.
    """

    name: str = "2 x Xeon E5540 (Nehalem-EP), 2.53 GHz"
    sockets: int = 2
    cores_per_socket: int = 4
    threads_per_core: int = 2
    ghz: float = 2.53
    reference_ghz: float = 2.53
    smt_slowdown: float = 1.6
    memory_ns: float = 80.0
    smt_ns: float = 5.0
    core_ns: float = 40.0
    socket_ns: float = 110.0
    atomic_ns: float = 8.0

    @property
    def ncpus(self) -> int:
        return self.sockets * self.cores_per_socket * self.threads_per_core

    def place(self, index: int) -> tuple[int, int, int]:
        """(socket, core, thread) of CPU *index*."""
        cores = self.sockets * self.cores_per_socket
        core = index % cores
        return core // self.cores_per_socket, core, index // cores

    def transfer_ns(self, a: int, b: int) -> float:
        """Moving a line from CPU *b*'s cache to CPU *a*'s."""
        sa, ca, _ = self.place(a)
        sb, cb, _ = self.place(b)
        if ca == cb:
            return self.smt_ns
        if sa == sb:
            return self.core_ns
        return self.socket_ns


class ThreadBlocked(Exception):
    """Raised by a :class:`Thread`'s *op* that cannot go on now (a full socket
    send buffer): the thread sleeps — its CPU idle — until its ``wait``
    returns, then makes the call again. The socket layer's ``SockWouldBlock``
    is one.
    """


@attrs.define
class Thread:
    """A user thread for :meth:`TimedModel.run_threads`: *count* calls of *op*
    on CPU *cpu_id* of *cpuset*. *op* is synchronous; when it raises
    :class:`ThreadBlocked`, the thread awaits *wait* (e.g. the socket's
    ``wait_writable``) before retrying — without *wait*, blocking is an error.
    """

    cpuset: CpuSet
    cpu_id: int
    op: Callable[[], object]
    count: int
    wait: Callable[[], Awaitable[object]] | None = None


@attrs.frozen
class CpuReport:
    """One CPU's share of a timed run (``mpstat``-style, percent of elapsed)."""

    host: str
    cpu: int
    user: float
    sys: float
    softirq: float
    idle: float
    spin: float  # part of sys/softirq spent spinning on locks


@attrs.frozen
class TimedReport:
    """What a timed run did: time, CPUs, profile, locks, cache lines."""

    elapsed_ns: float
    cpus: tuple[CpuReport, ...]
    profile: tuple[tuple[str, float, float], ...]  # (function, ns, percent of busy)
    locks: tuple[LockStat, ...]
    lines: tuple[CacheLineStat, ...]
    busy_ns: float

    def top(self, n: int = 15) -> str:
        """The profile as ``perf top`` prints it."""
        lines = ["  Overhead  Symbol"]
        for name, _ns, pct in self.profile[:n]:
            lines.append(f"  {pct:7.2f}%  [k] {name}")
        return "\n".join(lines)

    def share(self, site: str) -> float:
        """Percent of busy time spent in *site*."""
        for name, _ns, pct in self.profile:
            if name == site:
                return pct
        return 0.0

    def lock(self, name: str) -> LockStat:
        for s in self.locks:
            if s.name == name:
                return s
        raise KeyError(name)

    def line(self, name: str) -> CacheLineStat:
        for s in self.lines:
            if s.name == name:
                return s
        raise KeyError(name)


class TimedModel:
    """The timed-mode machine shared by every host of a lab.

    Args:
        machine: the hardware.
        costs: the cost table (one for every experiment).
        trio_seed: seeds Trio's shuffle of tasks woken at one instant; runs
            that differ only in it are repetitions of one experiment.
    """

    def __init__(
        self, machine: Machine | None = None, costs: CostTable | None = None, *, trio_seed: int = 0
    ) -> None:
        self.machine = machine if machine is not None else Machine()
        self.trio_seed = trio_seed
        self.costs = costs if costs is not None else default_costs()
        self._ns = dict(self.costs.functions)
        self._per_byte = dict(self.costs.per_byte)
        self.cpus: list[Cpu] = []
        self.hosts: list[tuple[str, CpuSet]] = []
        self.current: Cpu | None = None
        self.lines: dict[str, CacheLine] = {}
        self.locks: dict[int, SpinLock] = {}
        self._kinds: dict[str, int] = {}
        self.running = False
        self.start_ns = 0.0
        self._base_speed = 1.0
        self._sibling: dict[int, Cpu] = {}

    # -- building -------------------------------------------------------------------------
    def add_cpus(self, host: str, cpuset: CpuSet) -> None:
        """Give *host*'s CPUs places on the machine (in order)."""
        if len(self.cpus) + len(cpuset) > self.machine.ncpus:
            raise ValueError(
                f"{host}: {len(cpuset)} CPUs do not fit: the machine has "
                f"{self.machine.ncpus}, {len(self.cpus)} already taken"
            )
        cpuset.model = self
        for cpu in cpuset.cpus:
            cpu.model = self
            cpu.index = len(self.cpus)
            self.cpus.append(cpu)
        self.hosts.append((host, cpuset))
        self._set_speeds()

    def _set_speeds(self) -> None:
        m = self.machine
        self._base_speed = m.reference_ghz / m.ghz
        by_core: dict[int, list[Cpu]] = {}
        for cpu in self.cpus:
            by_core.setdefault(m.place(cpu.index)[1], []).append(cpu)
            cpu.speed = self._base_speed
        self._sibling = {}
        for group in by_core.values():
            for cpu in group:
                others = [c for c in group if c is not cpu]
                if others:
                    self._sibling[cpu.index] = others[0]

    def _smt_speed(self, cpu: Cpu) -> float:
        """Cost multiplier of *cpu* now: slower while its sibling thread works.

        A sibling that spins (``pause``) or idles leaves the core's execution
        units to this thread; one doing real work takes its share. The share
        of the sibling's time spent working so far weighs ``smt_slowdown``.
        """
        base = self._base_speed
        sib = self._sibling.get(cpu.index)
        if sib is None:
            return base
        span = sib.now - self.start_ns
        if span <= 0:  # the sibling has not run yet
            return base
        work = sum(sib.busy.values()) - sib.spin
        frac = min(1.0, max(0.0, work / span))
        return base * (1.0 + (self.machine.smt_slowdown - 1.0) * frac)

    def line(self, name: str) -> CacheLine:
        """The cache line called *name* (created on first use)."""
        line = self.lines.get(name)
        if line is None:
            line = self.lines[name] = CacheLine(self, name)
        return line

    def new_line(self, kind: str) -> CacheLine:
        """A fresh line for one more structure of *kind* (``"a: dst #3"``)."""
        n = self._kinds[kind] = self._kinds.get(kind, 0) + 1
        return self.line(f"{kind} #{n}")

    # -- running --------------------------------------------------------------------------
    def switch_to(self, cpu: Cpu, ctx: str) -> None:
        """Run data-path code on *cpu* in context *ctx* from now on.

        The CPU's clock catches up with Trio's (the gap was idle), and its
        speed is set for the section it is about to run.
        """
        if not self.running:
            return
        self.current = cpu
        cpu.ctx = ctx
        try:
            t = trio.current_time() * 1e9 - cpu.index * _TIE_NS
        except RuntimeError:  # outside Trio: no wall to catch up with
            t = cpu.now
        if t > cpu.now + 1e-3:
            cpu.idle += t - cpu.now
            cpu.now = t
        cpu.speed = self._smt_speed(cpu)

    def leave(self) -> None:
        """The data-path section is over: stop charging until the next
        :meth:`switch_to` (Trio's own code between sections costs nothing).
        """
        self.current = None

    async def wait(self, cpu: Cpu) -> None:
        """Sleep until Trio's clock reaches *cpu*'s (the CPU is busy until then)."""
        self.leave()
        await trio.sleep_until((cpu.now + cpu.index * _TIE_NS) * 1e-9)

    async def run_threads(self, threads: Sequence[Thread]) -> None:
        """Run several non-blocking threads in one task, in virtual-time order.

        Equivalent to one :meth:`run_thread` task per thread, without paying a
        Trio sleep per call: the thread whose CPU is furthest behind makes its
        next call; Trio gets control whenever it has a task ready to run (a
        NAPI poll a call scheduled) or a deadline due before that CPU's time.
        """
        heap = [
            (t.cpuset.cpus[t.cpu_id].now, t.cpuset.cpus[t.cpu_id].index, k, t.count)
            for k, t in enumerate(threads)
            if t.count > 0
        ]
        heapq.heapify(heap)
        try:
            async with trio.open_nursery() as nursery:  # for the blocked threads' sleeps
                await self._run_heap(threads, heap, nursery)
        except BaseExceptionGroup as eg:  # an op's own error, not wrapped
            if len(eg.exceptions) == 1:
                raise eg.exceptions[0] from None
            raise
        finally:  # also when a deadline around the call cancels it (netperf -l)
            self.leave()

    async def _run_heap(
        self,
        threads: Sequence[Thread],
        heap: list[tuple[float, int, int, int]],
        nursery: trio.Nursery,
    ) -> None:
        costs = self.costs
        blocked = 0
        woken = trio.Event()

        async def sleeper(k: int, left: int, wait: Callable[[], Awaitable[object]]) -> None:
            nonlocal blocked, woken
            cpu = threads[k].cpuset.cpus[threads[k].cpu_id]
            await trio.sleep_until(cpu.now * 1e-9)  # the thread blocked at its CPU's time
            await wait()
            t = trio.current_time() * 1e9 - cpu.index * _TIE_NS
            heapq.heappush(heap, (max(cpu.now, t), cpu.index, k, left))
            blocked -= 1
            woken.set()

        while heap or blocked:
            if not heap:
                self.leave()
                await woken.wait()
                woken = trio.Event()
                continue
            now, index, k, left = heapq.heappop(heap)
            stats = trio.lowlevel.current_statistics()
            if (
                stats.tasks_runnable
                or now * 1e-9 - trio.current_time() >= stats.seconds_to_next_deadline
            ):
                self.leave()
                await trio.sleep_until((now + index * _TIE_NS) * 1e-9)
            t = threads[k]
            cpu = t.cpuset.cpus[t.cpu_id]
            t.cpuset.run_on(t.cpu_id, "user")
            cpu.charge("[user]", costs.user_ns * cpu.speed)
            cpu.ctx = "sys"
            cpu.charge("entry_SYSCALL_64", costs.syscall_ns * cpu.speed)
            try:
                t.op()
            except ThreadBlocked:
                if t.wait is None:
                    raise
                self.leave()
                blocked += 1
                nursery.start_soon(sleeper, k, left, t.wait)
                continue
            if left > 1:
                heapq.heappush(heap, (cpu.now, index, k, left - 1))
        self.leave()

    async def run_thread(
        self, cpuset: CpuSet, cpu_id: int, op: Callable[[], object], count: int
    ) -> None:
        """A user thread pinned to CPU *cpu_id* making *count* system calls *op*.

        Each call pays user-space work and the system-call entry from the cost
        table, runs *op* (synchronous data-path code) in ``sys`` context, then
        waits for virtual time to catch up with the CPU.
        """
        cpu = cpuset.cpus[cpu_id]
        costs = self.costs
        for _ in range(count):
            cpuset.run_on(cpu_id, "user")
            cpu.charge("[user]", costs.user_ns * cpu.speed)
            cpu.ctx = "sys"
            cpu.charge("entry_SYSCALL_64", costs.syscall_ns * cpu.speed)
            op()
            await self.wait(cpu)

    def spend(self, site: str, nbytes: int = 0) -> None:
        """Charge one call of kernel function *site* (and *nbytes* of its
        per-byte work) to the CPU running the current section.

        The target of :func:`netstack.sites.spend` while measuring. Outside a
        section (no current CPU) nothing is charged, and neither is a *site*
        this model's table does not list (a table may price only what an
        experiment studies; that the default table prices every site the data
        path names is a test).
        """
        cpu = self.current
        if cpu is None:
            return
        ns = self._ns.get(site, 0.0)
        if nbytes:
            ns += nbytes * self._per_byte.get(site, 0.0)
        if not ns:
            return
        ns *= cpu.speed
        cpu.now += ns
        cpu.busy[cpu.ctx] += ns
        prof = cpu.profile
        prof[site] = prof.get(site, 0.0) + ns

    def seed_trio(self) -> None:
        """Make Trio's run-queue order repeatable.

        Trio runs the tasks woken at one instant as a batch, in the order its
        deadline heap gave them up — ties broken by the cancel scopes'
        addresses, which differ from one run to the next in a process — and
        reverses the batch at random. Its deterministic mode (the one
        pytest-trio turns on under Hypothesis) sorts each batch by task
        creation order and then shuffles it with a seeded generator: that
        mode, seeded here, makes a timed run repeat exactly whatever ran
        before it. :func:`trio_deterministic` restores the mode afterwards.
        """
        try:
            import trio._core._run as _run

            _run._r.seed(self.trio_seed)
            setattr(_run, "_ALLOW_DETERMINISTIC_SCHEDULING", True)  # noqa: B010 (Final in Trio)
        except (ImportError, AttributeError):  # pragma: no cover - a future Trio
            pass

    @contextmanager
    def measuring(self) -> Iterator[None]:
        """Charge costs while inside; statistics start from zero on entry."""
        self.reset()
        self.seed_trio()
        try:
            t = trio.current_time() * 1e9
        except RuntimeError:
            t = 0.0
        for cpu in self.cpus:
            cpu.now = max(cpu.now, t)
        self.start_ns = t
        self.running = True
        activate(self.spend)
        try:
            yield
        finally:
            deactivate(self.spend)
            self.leave()
            self.running = False

    def reset(self) -> None:
        """Zero every counter (clocks keep running)."""
        for cpu in self.cpus:
            cpu.busy = dict.fromkeys(CONTEXTS, 0.0)
            cpu.idle = 0.0
            cpu.spin = 0.0
            cpu.profile = {}
        for line in self.lines.values():
            line.__init__(self, line.name)  # type: ignore[misc]
        for lock in self.locks.values():
            lock.reset_stats()

    # -- locks ----------------------------------------------------------------------------
    def spin_lock(self, lock: SpinLock, cpu: Cpu) -> None:
        """*cpu* takes *lock*: spin until its holder released it, then own its line."""
        if not self.running:
            return
        self.locks[id(lock)] = lock
        wait = self.lock_free_at(lock, cpu.now) - cpu.now
        if wait > 0:
            lock.contentions += 1
            lock.waittime_total += wait * 1e-9
            lock.waittime_max = max(lock.waittime_max, wait * 1e-9)
            cpu.spin += wait
            cpu.charge(SPIN_SITE, wait)
        line = lock.line
        if line is None:
            line = lock.line = self.line(f"lock {lock.name}")
        line.write(SPIN_SITE, atomic=True)
        lock.hold_start = cpu.now

    @kernel("spin_trylock")
    def spin_trylock(self, lock: SpinLock, cpu: Cpu) -> bool:
        """Kernel: spin_trylock(): fails while another CPU's hold lasts."""
        if not self.running:
            return True
        if self.lock_free_at(lock, cpu.now) > cpu.now:
            self.locks[id(lock)] = lock
            lock.contentions += 1
            # the failed attempt is still an atomic on the lock word's line
            line = lock.line
            if line is None:
                line = lock.line = self.line(f"lock {lock.name}")
            line.write("spin_trylock", atomic=True)
            return False
        self.spin_lock(lock, cpu)
        return True

    def spin_unlock(self, lock: SpinLock, cpu: Cpu) -> None:
        if not self.running:
            return
        hold = cpu.now - lock.hold_start
        lock.holdtime_total += hold * 1e-9
        lock.holdtime_max = max(lock.holdtime_max, hold * 1e-9)
        self.note_hold(lock, lock.hold_start, cpu.now)

    def note_hold(self, lock: SpinLock, start: float, end: float) -> None:
        """Remember that *lock* (or a flag used like one) was held over [start, end]."""
        lock.holds.append((start, end))
        hold = end - start
        lock.hold_est = hold if not lock.hold_est else lock.hold_est + (hold - lock.hold_est) / 8

    def lock_free_at(self, lock: SpinLock, t: float) -> float:
        """When *lock* is free for a CPU that wants it at time *t* (ns).

        A hold of the usual length ``[t, t + hold_est]`` must not overlap a
        remembered hold; while it does, the CPU waits for that hold's end.
        """
        holds = lock.holds
        h = lock.hold_est
        moved = True
        while moved:
            moved = False
            for start, end in holds:
                if start <= t + h and end > t:
                    t = end
                    moved = True
        return t

    # -- reports --------------------------------------------------------------------------
    def nearest_ns(self, index: int, holders: int) -> float:
        """Latency of fetching a line from the nearest of *holders* (a CPU bitmask)."""
        m = self.machine
        return min(m.transfer_ns(index, b) for b in _bits(holders))

    def farthest_ns(self, index: int, holders: int) -> float:
        """Latency of invalidating every copy in *holders* (the farthest answers last)."""
        m = self.machine
        return max(m.transfer_ns(index, b) for b in _bits(holders))

    def report(self) -> TimedReport:
        """What happened since :meth:`measuring` began."""
        end = max((c.now for c in self.cpus), default=self.start_ns)
        elapsed = max(end - self.start_ns, 1e-9)
        cpus = []
        busy_total = 0.0
        profile: dict[str, float] = {}
        for host, cpuset in self.hosts:
            for cpu in cpuset.cpus:
                busy = cpu.busy
                total_busy = sum(busy.values())
                busy_total += total_busy
                cpus.append(
                    CpuReport(
                        host,
                        cpu.id,
                        100 * busy["user"] / elapsed,
                        100 * busy["sys"] / elapsed,
                        100 * busy["softirq"] / elapsed,
                        100 * max(0.0, elapsed - total_busy) / elapsed,
                        100 * cpu.spin / elapsed,
                    )
                )
                for k, v in cpu.profile.items():
                    profile[k] = profile.get(k, 0.0) + v
        ranked = sorted(profile.items(), key=lambda kv: (-kv[1], kv[0]))
        denom = busy_total or 1.0
        return TimedReport(
            elapsed,
            tuple(cpus),
            tuple((k, v, 100 * v / denom) for k, v in ranked),
            tuple(
                sorted(
                    (lk.statistics() for lk in self.locks.values()),
                    key=lambda s: (-s.contentions, s.name),
                )
            ),
            tuple(
                sorted(
                    (ln.statistics() for ln in self.lines.values() if ln.reads or ln.writes),
                    key=lambda s: (-s.bounces, s.name),
                )
            ),
            busy_total,
        )


def _bits(mask: int) -> Iterator[int]:
    i = 0
    while mask:
        if mask & 1:
            yield i
        mask >>= 1
        i += 1


@contextmanager
def trio_deterministic() -> Iterator[None]:
    """Restore Trio's scheduling mode and its scheduling generator on exit (timed
    labs switch the mode on; a lab opened with ``shuffle=False`` replaces the
    generator)."""
    try:
        import trio._core._run as _run

        saved = _run._ALLOW_DETERMINISTIC_SCHEDULING
        saved_r = _run._r
    except (ImportError, AttributeError):  # pragma: no cover - a future Trio
        yield
        return
    try:
        yield
    finally:
        setattr(_run, "_ALLOW_DETERMINISTIC_SCHEDULING", saved)  # noqa: B010 (Final in Trio)
        _run._r = saved_r
