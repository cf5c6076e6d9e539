"""Cache lines shared between CPUs: who holds a copy, who has it modified.

Theory of operation: a :class:`CacheLine` stands for the 64 bytes that hold a
group of kernel fields the kernel keeps together — the dst's refcount, the
neighbour's ``confirmed`` beside what its output path reads, a qdisc's state
word, a tx queue's lock and state. It follows a MESI-like protocol reduced to
what costs time:

* a **read** by a CPU holding a copy (shared or modified) hits; otherwise it
  misses: the line comes from the nearest CPU holding it (or memory) and the
  reader joins the sharers; a modified copy elsewhere is downgraded to shared;
* a **write** (and an atomic, which is a write) by the CPU holding the line
  modified and alone hits; otherwise it misses: every other copy is
  invalidated, the line comes from the farthest holder, and the writer owns
  it modified.

Each transfer of the line from another CPU's cache is a **bounce**; every
store is counted in ``writes`` and the ones that found the line clean or
elsewhere (turning it dirty here) in ``dirtying_writes``. In functional mode
no lines exist: the data path holds ``None`` where a line would be and skips
the access.

Kernel: the cache-coherence cost the kernel's data-structure layout works
around (``____cacheline_aligned_in_smp``, include/linux/cache.h).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from netstack.cpu.timed import TimedModel

__all__ = ["CacheLine", "CacheLineStat"]


@attrs.frozen
class CacheLineStat:
    """A snapshot of one cache line's counters."""

    name: str
    reads: int
    writes: int
    read_misses: int
    write_misses: int
    bounces: int  # transfers of the line from another CPU's cache
    dirtying_writes: int  # stores that made the line modified on a new CPU (or clean → dirty)
    miss_ns: float  # total nanoseconds CPUs waited for this line


class CacheLine:
    """One 64-byte line in timed mode's coherence model."""

    __slots__ = (
        "bounces",
        "dirtying_writes",
        "miss_ns",
        "model",
        "modified",
        "name",
        "read_misses",
        "reads",
        "sharers",
        "write_misses",
        "writes",
    )

    def __init__(self, model: TimedModel, name: str) -> None:
        self.model = model
        self.name = name
        self.sharers = 0  # bitmask of machine CPU indices holding a copy
        self.modified = False  # the single sharer holds it modified
        self.reads = 0
        self.writes = 0
        self.read_misses = 0
        self.write_misses = 0
        self.bounces = 0
        self.dirtying_writes = 0
        self.miss_ns = 0.0

    def read(self, site: str) -> None:
        """The current CPU loads from the line (in kernel function *site*)."""
        self.reads += 1
        model = self.model
        cpu = model.current
        if cpu is None:
            return
        bit = 1 << cpu.index
        sharers = self.sharers
        if sharers & bit:
            return
        self.read_misses += 1
        if sharers:
            self.bounces += 1
            ns = model.nearest_ns(cpu.index, sharers)
        else:
            ns = model.machine.memory_ns
        self.sharers = sharers | bit
        self.modified = False
        self.miss_ns += ns
        cpu.charge(site, ns)

    def write(self, site: str, atomic: bool = False) -> None:
        """The current CPU stores to the line (an atomic RMW if *atomic*)."""
        self.writes += 1
        model = self.model
        cpu = model.current
        if cpu is None:
            return
        bit = 1 << cpu.index
        sharers = self.sharers
        ns = model.machine.atomic_ns if atomic else 0.0
        if sharers == bit:
            if not self.modified:
                self.dirtying_writes += 1
                self.modified = True
            if ns:
                cpu.charge(site, ns)
            return
        self.write_misses += 1
        self.dirtying_writes += 1
        others = sharers & ~bit
        if others:
            self.bounces += 1
            miss = model.farthest_ns(cpu.index, others)
        else:
            miss = model.machine.memory_ns
        self.sharers = bit
        self.modified = True
        self.miss_ns += miss
        cpu.charge(site, ns + miss)

    def statistics(self) -> CacheLineStat:
        return CacheLineStat(
            self.name,
            self.reads,
            self.writes,
            self.read_misses,
            self.write_misses,
            self.bounces,
            self.dirtying_writes,
            self.miss_ns,
        )

    def __repr__(self) -> str:
        return f"<CacheLine {self.name} sharers={self.sharers:#x} modified={self.modified}>"
