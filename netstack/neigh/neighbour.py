"""Neighbour tables and entries: lookup, output paths, hh_cache, timers, GC.

Theory of operation — output::

    ip_finish_output2 ─► neigh_output(n, skb)
        ├─ NUD_CONNECTED and hh_len ─► neigh_hh_output: copy the cached
        │      header (16 bytes at once with the hh_fast_copy patch) ─► dev_queue_xmit
        └─ n.output(n, skb): neigh_resolve_output ─► neigh_event_send
               (the NUD machine: queue + solicit while INCOMPLETE) ─► fill
               hh_cache once ─► dev_hard_header ─► dev_queue_xmit

Entries move through the NUD states of :mod:`netstack.neigh.nud`; this module
performs the actions it asks for: arming the entry's timer on the Net's timer
base, soliciting through the family's ops (ARP), switching ``n.output``
between the resolving and connected functions, queueing packets while
INCOMPLETE (bounded by ``unres_qlen_bytes``, oldest dropped first) and
reporting failure for them (``error_report`` → ICMP host unreachable).

Reachability confirmation from upper layers (``MSG_CONFIRM``, TCP forward
progress) ends in :func:`neigh_confirm`, which writes ``n.confirmed``; with the
``neigh_confirm_elide`` patch only when jiffies changed. Every store is
counted in ``confirm_writes``: each one would dirty the neighbour's cache line.

Proxy entries (``ip neigh add proxy``, :func:`pneigh_lookup`) live in 16
buckets by :func:`pneigh_hash`, as the kernel's ``phash_buckets``. A request
a proxy answers late (ARP's broadcast requests) waits on the table's proxy
queue a random delay below ``proxy_delay`` (:func:`pneigh_enqueue`, at most
``proxy_qlen`` a device); the proxy timer (:func:`neigh_proxy_process`) hands
it back to the family (``proxy_redo``: ARP's ``parp_redo``, ndisc's
``pndisc_redo``). The table's ``pconstructor``/``pdestructor`` run as an
entry is made and freed (ndisc's join and leave the proxied address's
solicited-node group).

The per-family sysctl trees ``net.{ipv4,ipv6}.neigh.{default,DEV}.*`` are one
table registered by :func:`neigh_sysctl_register` for either family (ARP and
ndisc call it), each entry reading and writing the table's ``NeighParms``
with the kernel's unit conversion (seconds, milliseconds, USER_HZ ticks).

Kernel: net/core/neighbour.c, include/net/neighbour.h.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Final

import attrs

from netstack.core.dev import dev_queue_xmit
from netstack.core.dst import skb_dst_drop, skb_dst_force
from netstack.core.ethernet import HH_DATA_ALIGN, HH_DATA_MOD
from netstack.core.net_generic import NetKey
from netstack.core.skbuff import LL_MAX_HEADER, DropReason, SkBuff, kfree_skb
from netstack.core.sysctl import invalid
from netstack.cpu import SpinLock
from netstack.errors import ConfigError
from netstack.neigh.nud import (
    CONNECT,
    DEL_TIMER,
    DROP_FAILED,
    FLUSH_QUEUE,
    INVALIDATE,
    NEIGH_UPDATE_F_ADMIN,
    NEIGH_UPDATE_F_OVERRIDE,
    NOTIFY,
    NUD_CONNECTED,
    NUD_FAILED,
    NUD_IN_TIMER,
    NUD_PERMANENT,
    NUD_PROBE,
    NUD_VALID,
    PROBE,
    PROBE_NOW,
    QUEUE,
    SET_TIMER,
    SUSPECT,
    UPDATE_HH,
    Action,
    NeighParms,
    event_send,
    timer_handler,
    update,
)
from netstack.sites import TIMED, kernel, spend

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetDevice
    from netstack.core.timer import TimerList

__all__ = [
    "NEIGH_TABLES",
    "HhCache",
    "NeighOps",
    "NeighTable",
    "NeighTableStats",
    "Neighbour",
    "neigh_confirm",
    "neigh_event_send",
    "neigh_find_table",
    "neigh_hh_output",
    "neigh_output",
    "neigh_resolve_output",
    "neigh_sysctl_register",
    "neigh_sysctl_unregister",
    "neigh_table_init",
    "neigh_update",
    "pneigh_delete",
    "pneigh_enqueue",
    "pneigh_entries",
    "pneigh_lookup",
]

# neighbour flags (NTF_*)
NTF_USE: Final = 0x01
NTF_SELF: Final = 0x02
NTF_MASTER: Final = 0x04
NTF_PROXY: Final = 0x08
NTF_EXT_LEARNED: Final = 0x10
NTF_ROUTER: Final = 0x80

NEIGH_PERIODIC_REACHABLE_RECOMPUTE: Final = 300  # seconds between reachable_time draws

# -- proxy entries (pneigh) and the proxy queue: proxy ARP and proxy NDP ----------------

PNEIGH_HASHMASK: Final = 0xF
LOCALLY_ENQUEUED: Final = 0x1  # NEIGH_CB(skb)->flags (include/net/neighbour.h)


@attrs.define(eq=False)
class PneighEntry:
    """A proxy entry (kernel: ``struct pneigh_entry``); *dev* None matches every device."""

    key: int
    dev: NetDevice | None
    flags: int = 0
    protocol: int = 0
    permanent: bool = False  # added in state PERMANENT: kept on carrier loss


@attrs.define(eq=False)
class NeighCb:
    """What the proxy queue keeps in ``skb.cb`` (kernel: ``struct neighbour_cb``)."""

    sched_next: int
    flags: int


@kernel("pneigh_hash")
def pneigh_hash(key: int) -> int:
    """The bucket of a key. Kernel: pneigh_hash().

    The kernel reads the key's last four bytes as a native (little-endian) u32.
    """
    h = int.from_bytes((key & 0xFFFFFFFF).to_bytes(4, "big"), "little")
    h ^= h >> 16
    h ^= h >> 8
    h ^= h >> 4
    return h & PNEIGH_HASHMASK


@kernel("pneigh_lookup", "__pneigh_lookup_1", "pneigh_create")
def pneigh_lookup(
    tbl: NeighTable, key: int, dev: NetDevice | None, creat: bool = False
) -> PneighEntry | None:
    """The proxy entry for *key* on *dev* (or on every device); with *creat*, make one
    (None if the table's ``pconstructor`` refuses it).

    Kernel: pneigh_lookup() / __pneigh_lookup_1(), with *creat* pneigh_create()
    (Linux 6.18 splits it out; one net a table here).
    """
    buckets = tbl.phash_buckets
    if buckets is None:
        if not creat:
            return None
        buckets = tbl.phash_buckets = [[] for _ in range(PNEIGH_HASHMASK + 1)]
    bucket = buckets[pneigh_hash(key)]
    for n in bucket:
        if n.key == key and (n.dev is dev or n.dev is None):
            return n
    if not creat:
        return None
    n = PneighEntry(key, dev)
    pconstructor = tbl.pconstructor
    if pconstructor is not None and pconstructor(n):
        return None  # (neigh_add: -ENOBUFS) pndisc_constructor wants a device
    bucket.insert(0, n)  # n->next = tbl->phash_buckets[hash_val]
    return n


@kernel("pneigh_delete")
def pneigh_delete(tbl: NeighTable, key: int, dev: NetDevice | None) -> int:
    """Remove the proxy entry for exactly *key* and *dev*: 0 or -ENOENT. Kernel: pneigh_delete()."""
    if tbl.phash_buckets is None:
        return -2  # -ENOENT
    bucket = tbl.phash_buckets[pneigh_hash(key)]
    for i, n in enumerate(bucket):
        if n.key == key and n.dev is dev:
            del bucket[i]
            pdestructor = tbl.pdestructor
            if pdestructor is not None:
                pdestructor(n)
            return 0
    return -2  # -ENOENT


@kernel("pneigh_ifdown")
def pneigh_ifdown(tbl: NeighTable, dev: NetDevice | None, skip_perm: bool = False) -> None:
    """Forget the proxy entries of *dev* (all with None); with *skip_perm* (carrier
    loss) keep those added as PERMANENT. Kernel: pneigh_ifdown().
    """
    freed: list[PneighEntry] = []
    for bucket in tbl.phash_buckets or ():
        if bucket:
            gone = [
                n
                for n in bucket
                if not (skip_perm and n.permanent) and (dev is None or n.dev is dev)
            ]
            if gone:
                freed += gone
                bucket[:] = [n for n in bucket if n not in gone]
    pdestructor = tbl.pdestructor
    if pdestructor is not None:
        for n in reversed(freed):  # list_add() onto the free list: last found first
            pdestructor(n)


@kernel("pneigh_queue_purge")
def pneigh_queue_purge(tbl: NeighTable) -> None:
    """Drop every request on the proxy queue (one Net a table). Kernel: pneigh_queue_purge()."""
    queue, qlen = tbl.proxy_queue, tbl.proxy_qlen
    if queue is None or qlen is None:
        return
    tbl.proxy_queue = []
    for skb in queue:
        dev = skb.dev
        if dev is not None:
            qlen[dev.ifindex] = qlen.get(dev.ifindex, 1) - 1
        kfree_skb(skb)


@kernel("pneigh_dump_table")
def pneigh_entries(tbl: NeighTable) -> list[PneighEntry]:
    """The proxy entries in dump order: bucket by bucket. Kernel: pneigh_dump_table()."""
    return [n for bucket in tbl.phash_buckets or () for n in bucket]


@kernel("neigh_proxy_delay", "pneigh_enqueue")
def pneigh_enqueue(tbl: NeighTable, dev: NetDevice, skb: SkBuff) -> None:
    """Answer *skb* later: after a random delay below ``proxy_delay``.

    The queue is bounded by ``proxy_qlen`` per device (``p->qlen``); the delay
    is drawn (``get_random_u32_below``) from the Net's seeded random before
    that check, as the kernel does. Kernel: neigh_proxy_delay() / pneigh_enqueue().
    """
    p = tbl.parms_for(dev)
    now = tbl.net.clock.jiffies
    proxy_delay = p.proxy_delay
    sched_next = now + tbl.net.rng.randrange(proxy_delay) if proxy_delay else now
    qlens = tbl.proxy_qlen
    queue = tbl.proxy_queue
    timer = tbl.proxy_timer
    if qlens is None or queue is None or timer is None:  # the table's first
        qlens = tbl.proxy_qlen = {}
        queue = tbl.proxy_queue = []
        # timer_setup(&tbl->proxy_timer, neigh_proxy_process) of neigh_table_init()
        timer = tbl.proxy_timer = tbl.net.timers.timer(
            partial(neigh_proxy_process, tbl), f"{tbl.name}/proxy"
        )
    qlen = qlens.get(dev.ifindex, 0)
    if qlen > p.proxy_qlen:
        kfree_skb(skb)
        return
    skb.cb = NeighCb(sched_next, LOCALLY_ENQUEUED)
    if timer.delete() and timer.expires < sched_next:
        sched_next = timer.expires
    skb_dst_drop(skb)  # a route set without a reference (arp_process's) puts none back
    queue.append(skb)
    qlens[dev.ifindex] = qlen + 1
    timer.mod(sched_next)


@kernel("neigh_proxy_process", "neigh_parms_qlen_dec")
def neigh_proxy_process(tbl: NeighTable) -> None:
    """The proxy timer: redo each queued request that is due.

    Kernel: neigh_proxy_process() / neigh_parms_qlen_dec().
    """
    queue, qlens, timer = tbl.proxy_queue, tbl.proxy_qlen, tbl.proxy_timer
    assert queue is not None
    assert qlens is not None
    assert timer is not None
    now = tbl.net.clock.jiffies
    sched_next = 0
    for skb in list(queue):
        cb: NeighCb = skb.cb
        tdif = cb.sched_next - now
        if tdif <= 0:
            dev = skb.dev
            assert dev is not None
            qlens[dev.ifindex] = qlens.get(dev.ifindex, 1) - 1
            queue.remove(skb)
            redo = tbl.proxy_redo
            if redo is not None and dev.netif_running():
                redo(skb)  # tbl->proxy_redo: parp_redo for ARP, pndisc_redo for ndisc
            else:
                kfree_skb(skb)
        elif not sched_next or tdif < sched_next:
            sched_next = tdif
    timer.delete()
    if sched_next:
        timer.mod(tbl.net.clock.jiffies + sched_next)


class HhCache:
    """A cached link-layer header, right-aligned in 16-byte slots (kernel: ``struct hh_cache``)."""

    __slots__ = ("hh_data", "hh_len")

    def __init__(self) -> None:
        self.hh_len = 0
        self.hh_data = bytearray(HH_DATA_ALIGN(LL_MAX_HEADER))


@attrs.define(eq=False)
class NeighOps:
    """Family callbacks (kernel: ``struct neigh_ops``)."""

    family: int
    solicit: Callable[[Neighbour, SkBuff | None], None] | None
    error_report: Callable[[Neighbour, SkBuff], None] | None
    output: Callable[[Neighbour, SkBuff], int]
    connected_output: Callable[[Neighbour, SkBuff], int]


class Neighbour:
    """One neighbour entry (kernel: ``struct neighbour``).

    Its NUD fields (``nud_state``, ``confirmed``, ``updated``, ``used``,
    ``probes``) are driven by :mod:`netstack.neigh.nud`.
    """

    __slots__ = (
        "arp_queue",
        "arp_queue_len_bytes",
        "confirm_writes",
        "confirmed",
        "created",
        "dead",
        "dev",
        "flags",
        "ha",
        "hh",
        "line",
        "lock",
        "nud_state",
        "ops",
        "output",
        "primary_key",
        "probes",
        "protocol",
        "refcnt",
        "tbl",
        "timer",
        "type",
        "updated",
        "used",
    )

    def __init__(self, tbl: NeighTable, dev: NetDevice, primary_key: int) -> None:
        now = tbl.net.clock.jiffies
        self.tbl = tbl
        self.dev = dev
        self.primary_key = primary_key
        self.ha = bytes(dev.addr_len)
        self.nud_state = 0
        self.confirmed = now - 2 * tbl.parms_for(dev).base_reachable_time
        self.updated = now
        self.used = now
        self.created = now
        self.probes = 0
        # a list: it holds a packet or two while resolving, and an empty deque is
        # 600 B a neighbour (a lab keeps thousands of entries)
        self.arp_queue: list[SkBuff] = []
        self.arp_queue_len_bytes = 0
        self.hh = HhCache()
        self.ops: NeighOps = tbl.default_ops
        self.output: Callable[[Neighbour, SkBuff], int] = neigh_blackhole
        self.type = 1  # RTN_UNICAST
        self.flags = 0
        self.protocol = 0  # who added it (NDA_PROTOCOL: ``ip neigh add … protocol P``)
        self.refcnt = 1
        self.dead = False
        self.confirm_writes = 0
        # hex(), not an f-string's ":#x": the same text (the key is never negative)
        # without a __format__ call, about 2,000 instructions an entry in the build
        self.lock = SpinLock("neigh:" + hex(primary_key))
        # timed mode: the line holding ``confirmed`` beside what lookups and
        # the output path read (next, tbl, parms, nud_state…)
        # (its name, an address formatted, only in timed mode: a lab of 10,000
        # pinging hosts makes 30,000 entries)
        net = tbl.net
        self.line = (
            None
            if net.cpus.model is None
            else net.cacheline(f"neigh {tbl.key_str(primary_key)} {dev.name}")
        )
        self.timer = net.timers.timer(partial(neigh_timer_handler, self), "neigh")

    def __repr__(self) -> str:
        return (
            f"<Neighbour {self.tbl.key_str(self.primary_key)} dev={self.dev.name} "
            f"state={self.nud_state:#x}>"
        )


@attrs.frozen
class NeighTableStats:
    """``ip -s ntable`` / ``/proc/net/stat/arp_cache`` counters, plus netstack's hh counters."""

    entries: int
    allocs: int
    destroys: int
    hash_grows: int
    lookups: int
    hits: int
    res_failed: int
    rcv_probes_mcast: int
    rcv_probes_ucast: int
    periodic_gc_runs: int
    forced_gc_runs: int
    unres_discards: int
    table_fulls: int
    hh_fast_copies: int  # neigh_hh_output took the fixed 16-byte copy
    hh_aligned_copies: int  # … the HH_DATA_ALIGN(hh_len) copy
    confirm_writes: int  # stores to n->confirmed (each dirties its cache line)
    confirm_skipped: int  # confirmations elided because jiffies had not changed


@kernel("neigh_blackhole")
def neigh_blackhole(n: Neighbour, skb: SkBuff) -> int:
    """Output of a dead entry. Kernel: neigh_blackhole()."""
    kfree_skb(skb, DropReason.NEIGH_DEAD)
    return -100  # -ENETDOWN


class NeighTable:
    """A neighbour table of one family on one Net (kernel: ``struct neigh_table``).

    Args:
        net: the Net.
        name: ``arp_cache`` / ``ndisc_cache``.
        family: AF_INET / AF_INET6.
        protocol: the EtherType cached headers carry.
        addr_bits: key width (32 for IPv4, 128 for IPv6).
        constructor: sets up a new entry (``arp_constructor``).
        default_ops: ops until the constructor picks others.
    """

    # Slotted (a lab holds thousands of these); the __dict__ slot takes what is
    # set only later or from outside.
    __slots__ = (
        "__dict__",
        "addr_bits",
        "allocs",
        "confirm_skipped",
        "confirm_writes",
        "constructor",
        "default_ops",
        "destroys",
        "dev_parms",
        "family",
        "forced_gc_runs",
        "gc_interval",
        "gc_thresh1",
        "gc_thresh2",
        "gc_thresh3",
        "gc_timer",
        "hash",
        "hh_aligned_copies",
        "hh_fast_copies",
        "hh_fast_copy",
        "hits",
        "key_str",
        "last_flush",
        "last_rand",
        "lookups",
        "name",
        "net",
        "parms",
        "pconstructor",
        "pdestructor",
        "periodic_gc_runs",
        "phash_buckets",
        "protocol",
        "proxy_qlen",
        "proxy_queue",
        "proxy_redo",
        "proxy_timer",
        "rcv_probes_mcast",
        "rcv_probes_ucast",
        "res_failed",
        "table_fulls",
        "unres_discards",
    )

    def __init__(
        self,
        net: Net,
        name: str,
        family: int,
        protocol: int,
        addr_bits: int,
        constructor: Callable[[Neighbour], bool],
        default_ops: NeighOps,
        parms: NeighParms,
        key_str: Callable[[int], str],
    ) -> None:
        self.net = net
        self.name = name
        self.family = family
        self.protocol = protocol
        self.addr_bits = addr_bits
        self.constructor = constructor
        self.default_ops = default_ops
        self.key_str = key_str
        self.hash: dict[int, Neighbour] = {}
        self.hh_fast_copy = net.patches.hh_fast_copy  # the seed-2 switch, read per packet
        self.parms = self._randomised(parms)
        self.dev_parms: dict[int, NeighParms] = {}
        self.gc_thresh1 = 128
        self.gc_thresh2 = 512
        self.gc_thresh3 = 1024
        self.gc_interval = 30 * net.clock.hz
        now = net.clock.jiffies
        self.last_flush = now
        # Kernel: neigh_table_init() — the first re-draw 20 reachable times on.
        self.last_rand = now + self.parms.reachable_time * 20
        # statistics
        self.allocs = 0
        self.destroys = 0
        self.lookups = 0
        self.hits = 0
        self.res_failed = 0
        self.rcv_probes_mcast = 0
        self.rcv_probes_ucast = 0
        self.periodic_gc_runs = 0
        self.forced_gc_runs = 0
        self.unres_discards = 0
        self.table_fulls = 0
        self.hh_fast_copies = 0
        self.hh_aligned_copies = 0
        self.confirm_writes = 0
        self.confirm_skipped = 0
        self.gc_timer = net.timers.timer(self.neigh_periodic_work, f"{name}/gc")
        # Proxy entries and the proxy queue (proxy ARP, see pneigh_lookup): made when
        # first used, as few labs use them and a lab holds thousands of tables.
        self.phash_buckets: list[list[PneighEntry]] | None = None
        self.proxy_queue: list[SkBuff] | None = None
        self.proxy_qlen: dict[int, int] | None = None  # per device: neigh_parms's qlen
        self.proxy_timer: TimerList | None = None
        self.proxy_redo: Callable[[SkBuff], None] | None = None
        # tbl->pconstructor / pdestructor (ndisc's: the solicited-node group of a
        # proxied address); pconstructor's nonzero answer refuses the entry
        self.pconstructor: Callable[[PneighEntry], int] | None = None
        self.pdestructor: Callable[[PneighEntry], None] | None = None
        self.gc_timer.mod(now + self.parms.reachable_time)  # queue_delayed_work(reachable_time)

    # -- parameters -----------------------------------------------------------------
    @kernel("neigh_rand_reach_time")
    def _randomised(self, p: NeighParms) -> NeighParms:
        """Draw reachable_time in [base/2, 3·base/2). Kernel: neigh_rand_reach_time()."""
        base = p.base_reachable_time
        reach = self.net.rng.randrange(base) + (base >> 1) if base else 0
        return attrs.evolve(p, reachable_time=reach)

    def parms_for(self, dev: NetDevice) -> NeighParms:
        """The device's parameters, or the table default."""
        return self.dev_parms.get(dev.ifindex, self.parms)

    def set_parms(self, dev: NetDevice | None, **changes: int) -> None:
        """Change parameters (sysctl ``net.ipv4.neigh.DEV.*``); re-draws reachable_time."""
        if dev is None:
            old_default = self.parms
            self.parms = self._maybe_rerandomise(self.parms, attrs.evolve(self.parms, **changes))
            # devices that never diverged follow the default
            for ifindex, p in list(self.dev_parms.items()):
                if p == old_default:
                    self.dev_parms[ifindex] = self.parms
        else:
            old = self.parms_for(dev)
            self.dev_parms[dev.ifindex] = self._maybe_rerandomise(old, attrs.evolve(old, **changes))

    def _maybe_rerandomise(self, old: NeighParms, new: NeighParms) -> NeighParms:
        if new.base_reachable_time != old.base_reachable_time:
            return self._randomised(new)
        return new

    @kernel("neigh_parms_alloc")
    def add_dev_parms(self, dev: NetDevice) -> None:
        """A device appeared: it starts with the default parameters. Kernel: neigh_parms_alloc()."""
        self.dev_parms[dev.ifindex] = self.parms

    @kernel("neigh_parms_release")
    def del_dev_parms(self, dev: NetDevice) -> None:
        """Kernel: neigh_parms_release()."""
        self.dev_parms.pop(dev.ifindex, None)

    # -- lookup / create -----------------------------------------------------------------
    def hash_key(self, key: int, dev: NetDevice) -> int:
        return (dev.ifindex << self.addr_bits) | key

    @kernel("neigh_lookup")
    def lookup(self, key: int, dev: NetDevice) -> Neighbour | None:
        """Kernel: neigh_lookup()."""
        self.lookups += 1
        n = self.hash.get((dev.ifindex << self.addr_bits) | key)
        if n is not None:
            self.hits += 1
        return n

    @kernel("__neigh_create")
    def create(self, key: int, dev: NetDevice) -> Neighbour | None:
        """Create (or find) an entry; None if the table is full. Kernel: __neigh_create()."""
        hkey = (dev.ifindex << self.addr_bits) | key
        n = self.hash.get(hkey)
        if n is not None:
            return n
        entries = len(self.hash)
        if entries >= self.gc_thresh3 or (
            entries >= self.gc_thresh2
            and self.net.clock.jiffies > self.last_flush + 5 * self.net.clock.hz
        ):
            if not self.neigh_forced_gc() and len(self.hash) >= self.gc_thresh3:
                self.table_fulls += 1
                if self.net.net_ratelimit():  # net_info_ratelimited()
                    self.net.log.warning(
                        "neighbour_table_overflow", msg=f"{self.name}: neighbor table overflow!"
                    )
                return None
        n = Neighbour(self, dev, key)
        if not self.constructor(n):
            return None
        self.hash[hkey] = n
        self.allocs += 1
        return n

    @kernel("__neigh_lookup")
    def lookup_or_create(self, key: int, dev: NetDevice, creat: bool = True) -> Neighbour | None:
        """Find an entry, creating it if *creat*. Kernel: __neigh_lookup()."""
        n = self.lookup(key, dev)
        if n is not None or not creat:
            return n
        return self.create(key, dev)

    def entries(self, dev: NetDevice | None = None) -> Iterator[Neighbour]:
        """Entries (of *dev*), in creation order."""
        for n in self.hash.values():
            if dev is None or n.dev is dev:
                yield n

    # -- removal ------------------------------------------------------------------------------
    def _unlink(self, n: Neighbour) -> None:
        hkey = (n.dev.ifindex << self.addr_bits) | n.primary_key
        if self.hash.get(hkey) is n:
            del self.hash[hkey]
        n.timer.delete()
        n.dead = True
        n.output = neigh_blackhole
        neigh_purge_queue(n, DropReason.NEIGH_DEAD)
        self.destroys += 1

    @kernel("neigh_forced_gc")
    def neigh_forced_gc(self) -> bool:
        """Free unreferenced FAILED/stale entries. Kernel: neigh_forced_gc()."""
        self.forced_gc_runs += 1
        shrunk = False
        max_clean = len(self.hash) - self.gc_thresh2
        for n in list(self.hash.values()):
            if max_clean <= 0:
                break
            if (
                n.refcnt == 1
                and not n.nud_state & NUD_PERMANENT
                and (n.nud_state == NUD_FAILED or not n.nud_state & NUD_VALID)
            ):
                self._unlink(n)
                shrunk = True
                max_clean -= 1
        self.last_flush = self.net.clock.jiffies
        return shrunk

    @kernel("neigh_periodic_work")
    def neigh_periodic_work(self) -> None:
        """Re-draw reachable_time every 300 s; free idle entries. Kernel: neigh_periodic_work()."""
        net = self.net
        now = net.clock.jiffies
        hz = net.clock.hz
        self.periodic_gc_runs += 1
        if now - self.last_rand > NEIGH_PERIODIC_REACHABLE_RECOMPUTE * hz:  # time_after
            self.last_rand = now
            self.parms = self._randomised(self.parms)
            for ifindex, p in list(self.dev_parms.items()):
                self.dev_parms[ifindex] = self._randomised(p)
        if len(self.hash) >= self.gc_thresh1:
            for n in list(self.hash.values()):
                state = n.nud_state
                if state & (NUD_PERMANENT | NUD_IN_TIMER) or n.flags & NTF_EXT_LEARNED:
                    continue
                if n.used < n.confirmed:
                    n.used = n.confirmed
                if n.refcnt == 1 and (
                    state == NUD_FAILED or now > n.used + self.parms_for(n.dev).gc_staletime
                ):
                    self._unlink(n)
        self.gc_timer.mod(now + max(self.parms.base_reachable_time // 2, 1))

    @kernel("neigh_flush_dev", "neigh_flush_one")
    def neigh_flush_dev(self, dev: NetDevice, skip_perm: bool) -> None:
        """Unlink every entry of *dev*; with *skip_perm* keep the PERMANENT ones.

        Kernel: neigh_flush_dev() / neigh_flush_one().
        """
        for n in [n for n in self.hash.values() if n.dev is dev]:
            if skip_perm and n.nud_state & NUD_PERMANENT:
                continue
            self._unlink(n)

    @kernel("neigh_changeaddr")
    def neigh_changeaddr(self, dev: NetDevice) -> None:
        """*dev*'s address changed (or IFF_NOARP flipped): every entry of it goes.

        Kernel: neigh_changeaddr().
        """
        self.neigh_flush_dev(dev, False)

    @kernel("__neigh_ifdown")
    def _neigh_ifdown(self, dev: NetDevice, skip_perm: bool) -> None:
        """Flush *dev*'s entries, its proxy entries, the proxy queue (one Net a table).

        Kernel: __neigh_ifdown().
        """
        self.neigh_flush_dev(dev, skip_perm)
        pneigh_ifdown(self, dev, skip_perm)
        if self.proxy_queue:
            pneigh_queue_purge(self)
        if self.proxy_timer is not None:  # the queue is empty now
            self.proxy_timer.delete()

    @kernel("neigh_ifdown")
    def neigh_ifdown(self, dev: NetDevice) -> None:
        """*dev* goes down or away: every entry of it goes. Kernel: neigh_ifdown()."""
        self._neigh_ifdown(dev, False)

    @kernel("neigh_carrier_down")
    def neigh_carrier_down(self, dev: NetDevice) -> None:
        """*dev* lost its carrier: its entries go but the PERMANENT ones, and its
        proxy entries but those added PERMANENT (``skip_perm``).

        Kernel: neigh_carrier_down().
        """
        self._neigh_ifdown(dev, True)

    def flush(self, dev: NetDevice | None, state_mask: int) -> int:
        """Delete entries whose state is in *state_mask* (``ip neigh flush``)."""
        victims = [
            n
            for n in self.hash.values()
            if (dev is None or n.dev is dev) and n.nud_state & state_mask
        ]
        for n in victims:
            neigh_update(n, None, NUD_FAILED, NEIGH_UPDATE_F_OVERRIDE | NEIGH_UPDATE_F_ADMIN)
            self._unlink(n)
        return len(victims)

    @kernel("neigh_delete")
    def delete(self, key: int, dev: NetDevice) -> None:
        """``ip neigh del``. Kernel: neigh_delete()."""
        n = self.hash.get((dev.ifindex << self.addr_bits) | key)
        if n is None:
            raise ConfigError("RTNETLINK answers: No such file or directory", 2)
        neigh_update(n, None, NUD_FAILED, NEIGH_UPDATE_F_OVERRIDE | NEIGH_UPDATE_F_ADMIN)
        self._unlink(n)

    def statistics(self) -> NeighTableStats:
        """Table counters."""
        return NeighTableStats(
            len(self.hash),
            self.allocs,
            self.destroys,
            0,
            self.lookups,
            self.hits,
            self.res_failed,
            self.rcv_probes_mcast,
            self.rcv_probes_ucast,
            self.periodic_gc_runs,
            self.forced_gc_runs,
            self.unres_discards,
            self.table_fulls,
            self.hh_fast_copies,
            self.hh_aligned_copies,
            self.confirm_writes,
            self.confirm_skipped,
        )


# ---------------------------------------------------------------------------
# Performing the state machine's actions
# ---------------------------------------------------------------------------


# the Net's neighbour tables by address family (kernel: neigh_tables[], NEIGH_ARP_TABLE …)
NEIGH_TABLES: NetKey[dict[int, NeighTable]] = NetKey("neigh_tables")


@kernel("net/core/neighbour.c", "neigh_table_init")
def neigh_table_init(net: Net, family: int, tbl: NeighTable) -> None:
    """Register *tbl* as the Net's neighbour table of *family* (AF_INET: ARP, AF_INET6: ND).

    Kernel: net/core/neighbour.c, neigh_table_init().
    """
    NEIGH_TABLES.get_or_create(net, dict)[family] = tbl


@kernel("net/core/neighbour.c", "neigh_find_table")
def neigh_find_table(net: Net, family: int) -> NeighTable | None:
    """The Net's neighbour table of *family*, or None.

    Kernel: net/core/neighbour.c, neigh_find_table().
    """
    tables = NEIGH_TABLES.find(net)
    return None if tables is None else tables.get(family)


@kernel("neigh_connect")
def neigh_connect(n: Neighbour) -> None:
    """Use the connected output. Kernel: neigh_connect()."""
    n.output = n.ops.connected_output


@kernel("neigh_suspect")
def neigh_suspect(n: Neighbour) -> None:
    """Use the resolving output. Kernel: neigh_suspect()."""
    n.output = n.ops.output


def neigh_purge_queue(n: Neighbour, reason: DropReason) -> None:
    queue = n.arp_queue
    while queue:
        kfree_skb(queue.pop(0), reason)
    n.arp_queue_len_bytes = 0


@kernel("neigh_probe")
def neigh_probe(n: Neighbour) -> None:
    """Send one solicitation, hinted by the newest queued packet. Kernel: neigh_probe()."""
    skb = n.arp_queue[-1] if n.arp_queue else None
    solicit = n.ops.solicit
    if solicit is not None:
        solicit(n, skb)
    n.probes += 1


@kernel("neigh_invalidate")
def neigh_invalidate(n: Neighbour) -> None:
    """FAILED: report every queued packet as unreachable. Kernel: neigh_invalidate()."""
    n.tbl.res_failed += 1
    report = n.ops.error_report
    queue = n.arp_queue
    while queue and n.nud_state == NUD_FAILED:
        skb = queue.pop(0)
        n.arp_queue_len_bytes -= skb.truesize
        if report is not None:
            report(n, skb)
        else:
            kfree_skb(skb, DropReason.NEIGH_FAILED)
    neigh_purge_queue(n, DropReason.NEIGH_FAILED)


def _queue_skb(n: Neighbour, skb: SkBuff) -> None:
    limit = n.tbl.parms_for(n.dev).queue_len_bytes
    queue = n.arp_queue
    size = skb.truesize
    while n.arp_queue_len_bytes + size > limit and queue:
        old = queue.pop(0)
        n.arp_queue_len_bytes -= old.truesize
        kfree_skb(old, DropReason.NEIGH_QUEUEFULL)
        n.tbl.unres_discards += 1
    skb_dst_force(skb)  # __neigh_event_send(): the queued packet keeps its route
    queue.append(skb)
    n.arp_queue_len_bytes += size


def _flush_queue(n: Neighbour) -> None:
    queue = n.arp_queue
    n.arp_queue = []
    n.arp_queue_len_bytes = 0
    for skb in queue:
        n.output(n, skb)


def _apply(
    n: Neighbour,
    actions: list[Action],
    skb: SkBuff | None = None,
    lladdr: bytes | None = None,
) -> None:
    """Carry out the NUD machine's *actions* on *n*, in their order.

    The tests go by how often each action comes (a ping's resolution: five
    DEL_TIMER, four SET_TIMER, three NOTIFY, two SUSPECT and FLUSH_QUEUE, one
    QUEUE, PROBE_NOW, CONNECT, UPDATE_HH); the actions are distinct, so the
    order of the tests changes nothing but their count. UPDATE_HH (only from
    :func:`neigh_update`, which passes *lladdr*) copies the address where
    ``__neigh_update`` does: after the state and timer, before
    ``neigh_connect``/``neigh_suspect`` and the queue's release.
    """
    for a in actions:
        act = a.act
        if act is DEL_TIMER:
            n.timer.delete()
        elif act is SET_TIMER:
            n.timer.mod(a.arg)
        elif act is NOTIFY:
            # every resolution notifies (three times a ping): no filtered call, no key
            # formatted for nothing; the test asks the stdlib logger the host's
            # structlog logger wraps (``_logger``: netstack_logger's, or the one a user
            # gave the Net) itself, a frame less than through structlog's isEnabledFor
            # (about 4,000 instructions a ping in the build); a plain logger is asked
            log = n.tbl.net.log
            if getattr(log, "_logger", log).isEnabledFor(logging.DEBUG):
                log.debug(
                    "neigh_state_changed",
                    key=n.tbl.key_str(n.primary_key),
                    dev=n.dev.name,
                    state=n.nud_state,
                )
        elif act is SUSPECT:
            neigh_suspect(n)
        elif act is FLUSH_QUEUE:
            _flush_queue(n)
        elif act is UPDATE_HH:
            if lladdr is not None:
                n.ha = bytes(lladdr)
                neigh_update_hhs(n)
        elif act is QUEUE:
            assert skb is not None
            _queue_skb(n, skb)
        elif act is PROBE_NOW or act is PROBE:
            neigh_probe(n)
        elif act is CONNECT:
            neigh_connect(n)
        elif act is INVALIDATE:
            neigh_invalidate(n)
        elif act is DROP_FAILED:
            assert skb is not None
            kfree_skb(skb, DropReason.NEIGH_FAILED)


@kernel("neigh_timer_handler")
def neigh_timer_handler(n: Neighbour) -> None:
    """The entry's timer. Kernel: neigh_timer_handler()."""
    if n.dead:
        return
    tbl = n.tbl
    cpu = tbl.net.cpus.current
    n.lock.lock(cpu)
    actions = timer_handler(n, tbl.parms_for(n.dev), tbl.net.clock.jiffies)
    n.lock.unlock(cpu)
    _apply(n, actions)


@kernel("include/net/neighbour.h", "neigh_event_send")
def neigh_event_send(n: Neighbour, skb: SkBuff | None) -> int:
    """Let the NUD machine see a packet to send; 0 means send it now.

    Kernel: include/net/neighbour.h, neigh_event_send().
    """
    if TIMED:
        spend("neigh_event_send")
    tbl = n.tbl
    now = tbl.net.clock.jiffies
    if n.used != now:
        n.used = now
    if n.nud_state & (NUD_CONNECTED | 0x08 | NUD_PROBE):  # CONNECTED | DELAY | PROBE
        return 0
    if n.dead:
        if skb is not None:
            kfree_skb(skb, DropReason.NEIGH_DEAD)
        return 1
    cpu = tbl.net.cpus.current
    n.lock.lock(cpu)
    rc, actions = event_send(n, tbl.parms_for(n.dev), now)
    n.lock.unlock(cpu)
    _apply(n, actions, skb)
    return rc


@kernel("neigh_update")
def neigh_update(n: Neighbour, lladdr: bytes | None, new: int, flags: int) -> bool:
    """Confirmation or administrative change of an entry. Kernel: neigh_update()."""
    if n.dead:
        return False
    tbl = n.tbl
    has = lladdr is not None or bool(n.nud_state & NUD_VALID) or not n.dev.addr_len
    changed = lladdr is not None and lladdr != n.ha
    cpu = tbl.net.cpus.current
    n.lock.lock(cpu)
    ok, actions = update(
        n,
        tbl.parms_for(n.dev),
        tbl.net.clock.jiffies,
        new,
        lladdr_changed=changed,
        has_lladdr=has,
        flags=flags,
    )
    n.lock.unlock(cpu)
    _apply(n, actions, None, lladdr)
    return ok


@kernel("neigh_update_hhs")
def neigh_update_hhs(n: Neighbour) -> None:
    """Rewrite the cached header after an address change. Kernel: neigh_update_hhs()."""
    hops = n.dev.header_ops
    if n.hh.hh_len and hops is not None:
        hops.cache_update(n.hh, n.dev, n.ha)


@kernel("neigh_event_ns")
def neigh_event_ns(tbl: NeighTable, lladdr: bytes, key: int, dev: NetDevice) -> Neighbour | None:
    """A solicitation from *key* arrived: it is at least STALE. Kernel: neigh_event_ns()."""
    n = tbl.lookup_or_create(key, dev, True)
    if n is not None:
        neigh_update(n, lladdr, 0x04, NEIGH_UPDATE_F_OVERRIDE)  # NUD_STALE
    return n


@kernel("include/net/neighbour.h", "neigh_confirm", "dst_confirm")
def neigh_confirm(n: Neighbour) -> None:
    """Upper-layer proof of reachability: ``n.confirmed = jiffies``.

    With the ``neigh_confirm_elide`` patch (seed 2) the store happens only
    when jiffies changed ("avoid dirtying neighbour"); without it every
    confirmation stores, dirtying the cache line the output path reads.

    Kernel: include/net/neighbour.h, neigh_confirm() (dst_confirm() before 4.11).
    """
    if TIMED:
        spend("neigh_confirm")
    tbl = n.tbl
    net = tbl.net
    now = net.clock.jiffies
    line = n.line
    if net.patches.neigh_confirm_elide:
        if line is not None:
            line.read("neigh_confirm")  # "if (n->confirmed != now)"
        if n.confirmed == now:
            tbl.confirm_skipped += 1
            return
    n.confirmed = now
    n.confirm_writes += 1
    tbl.confirm_writes += 1
    if line is not None:
        line.write("neigh_confirm")


# ---------------------------------------------------------------------------
# Output functions
# ---------------------------------------------------------------------------


@kernel("include/net/neighbour.h", "neigh_hh_output")
def neigh_hh_output(n: Neighbour, skb: SkBuff) -> int:
    """Prepend the cached header and transmit.

    With the ``hh_fast_copy`` patch (seed 2) a header of at most 16 bytes is
    copied as one fixed 16-byte block; without it the copy is
    ``HH_DATA_ALIGN(hh_len)`` bytes via the general path. Both leave the same
    bytes in front of the packet; the counters say which path ran.

    Kernel: include/net/neighbour.h, neigh_hh_output().
    """
    hh = n.hh
    hh_len = hh.hh_len
    data = skb.data
    tbl = n.tbl
    if hh_len <= HH_DATA_MOD and tbl.hh_fast_copy:
        if data < HH_DATA_MOD:
            kfree_skb(skb, DropReason.NOMEM)
            return -1
        skb.buf[data - HH_DATA_MOD : data] = hh.hh_data[:HH_DATA_MOD]
        tbl.hh_fast_copies += 1
    else:
        hh_alen = HH_DATA_ALIGN(hh_len)
        if data < hh_alen:
            kfree_skb(skb, DropReason.NOMEM)
            return -1
        skb.buf[data - hh_alen : data] = hh.hh_data[:hh_alen]
        tbl.hh_aligned_copies += 1
        if TIMED:
            spend("memcpy")  # the out-of-line copy the patch inlined
    skb.data = data - hh_len
    return dev_queue_xmit(skb)


@kernel("include/net/neighbour.h", "neigh_output")
def neigh_output(n: Neighbour, skb: SkBuff) -> int:
    """Transmit through the neighbour. Kernel: include/net/neighbour.h, neigh_output()."""
    if n.nud_state & NUD_CONNECTED and n.hh.hh_len:
        return neigh_hh_output(n, skb)
    return n.output(n, skb)


def _dev_hard_header(n: Neighbour, skb: SkBuff) -> int:
    dev = n.dev
    hops = dev.header_ops
    if hops is None:
        return 0
    # __skb_pull(skb, skb_network_offset(skb)): start again at the network header
    if skb.network_header >= 0:
        skb.data = skb.network_header
    return hops.create(skb, dev, skb.protocol, n.ha, None, skb.tail - skb.data)


@kernel("net/core/neighbour.c", "neigh_resolve_output")
def neigh_resolve_output(n: Neighbour, skb: SkBuff) -> int:
    """Resolve if needed, fill hh_cache once, build the header, transmit.

    Kernel: net/core/neighbour.c, neigh_resolve_output().
    """
    if TIMED:
        spend("neigh_resolve_output")
    if neigh_event_send(n, skb):
        return 0
    dev = n.dev
    hops = dev.header_ops
    if hops is not None and not n.hh.hh_len:
        cpu = n.tbl.net.cpus.current
        n.lock.lock(cpu)
        if not n.hh.hh_len:  # neigh_hh_init()
            hops.cache(n, n.hh, n.tbl.protocol)
        n.lock.unlock(cpu)
    if _dev_hard_header(n, skb) < 0:
        kfree_skb(skb, DropReason.NEIGH_FAILED)
        return -22
    return dev_queue_xmit(skb)


@kernel("neigh_connected_output")
def neigh_connected_output(n: Neighbour, skb: SkBuff) -> int:
    """Build the header from ``n.ha`` and transmit. Kernel: neigh_connected_output()."""
    if _dev_hard_header(n, skb) < 0:
        kfree_skb(skb, DropReason.NEIGH_FAILED)
        return -22
    return dev_queue_xmit(skb)


@kernel("neigh_direct_output")
def neigh_direct_output(n: Neighbour, skb: SkBuff) -> int:
    """No link-layer header: transmit as is. Kernel: neigh_direct_output()."""
    if TIMED:
        spend("neigh_direct_output")
    return dev_queue_xmit(skb)


@kernel("net/core/neighbour.c", "neigh_add")
def neigh_add(
    tbl: NeighTable,
    key: int,
    dev: NetDevice,
    lladdr: bytes | None,
    state: int,
    *,
    replace: bool,
    create: bool,
    exclusive: bool,
    router: bool = False,
    protocol: int = 0,
) -> Neighbour:
    """``ip neigh add|replace|change``; a nonzero *protocol* (NDA_PROTOCOL) is
    recorded whatever the command, 0 keeps the entry's.

    Kernel: net/core/neighbour.c, neigh_add().
    """
    n = tbl.lookup(key, dev)
    if n is None:
        if not create:
            raise ConfigError("RTNETLINK answers: No such file or directory", 2)
        n = tbl.create(key, dev)
        if n is None:
            raise ConfigError("RTNETLINK answers: No buffer space available", 105)
    elif exclusive:
        raise ConfigError("RTNETLINK answers: File exists", 17)
    flags = NEIGH_UPDATE_F_ADMIN
    if replace or n.nud_state == 0 or not n.nud_state & NUD_VALID:
        flags |= NEIGH_UPDATE_F_OVERRIDE
    if protocol:
        n.protocol = protocol
    if router:
        n.flags |= NTF_ROUTER
    if lladdr is None and state & NUD_VALID and not n.nud_state & NUD_VALID and dev.addr_len:
        raise ConfigError("Error: No link layer address given.", 22)
    neigh_update(n, lladdr, state, flags)
    return n


def neigh_stats_line(n: Neighbour, now: int, hz: int) -> tuple[int, int, int, int]:
    """``used/confirmed/updated`` ages in seconds and ``probes``, as ``ip -s neigh`` shows."""
    return ((now - n.used) // hz, (now - n.confirmed) // hz, (now - n.updated) // hz, n.probes)


# neigh sysctl name -> (NeighParms field, unit): "s" seconds, "ms", "uhz" USER_HZ ticks, "n"
# (neigh_sysctl_template.neigh_vars[])
NEIGH_SYSCTLS: Final = {
    "base_reachable_time": ("base_reachable_time", "s"),
    "base_reachable_time_ms": ("base_reachable_time", "ms"),
    "retrans_time": ("retrans_time", "uhz"),
    "retrans_time_ms": ("retrans_time", "ms"),
    "delay_first_probe_time": ("delay_probe_time", "s"),
    "gc_stale_time": ("gc_staletime", "s"),
    "ucast_solicit": ("ucast_probes", "n"),
    "mcast_solicit": ("mcast_probes", "n"),
    "mcast_resolicit": ("mcast_reprobes", "n"),
    "app_solicit": ("app_probes", "n"),
    "unres_qlen_bytes": ("queue_len_bytes", "n"),
    "locktime": ("locktime", "uhz"),
    "proxy_qlen": ("proxy_qlen", "n"),
    "anycast_delay": ("anycast_delay", "uhz"),
    "proxy_delay": ("proxy_delay", "uhz"),
    "interval_probe_time_ms": ("interval_probe_time", "ms"),
}
SKB_TRUESIZE_ETH_FRAME: Final = 2048 + 576  # SKB_TRUESIZE(ETH_FRAME_LEN) on x86_64
_FAMILY_NAMES: Final = {2: "ipv4", 10: "ipv6"}  # AF_INET, AF_INET6


def _sysctl_int(text: str, name: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise invalid(name) from None


def neigh_sysctl_prefix(tbl: NeighTable, dev_name: str | None) -> str:
    """``net.ipv4.neigh.eth0`` / ``net.ipv6.neigh.default``: where the entries live."""
    return f"net.{_FAMILY_NAMES[tbl.family]}.neigh.{dev_name or 'default'}"


@kernel("net/core/neighbour.c", "neigh_sysctl_register")
def neigh_sysctl_register(tbl: NeighTable, dev: NetDevice | None) -> None:
    """``net.{ipv4,ipv6}.neigh.{default,DEV}.*`` for *tbl* (the default parms when *dev* is None).

    The family part of the path comes from the table's family, as the kernel
    takes it from ``neigh_parms_family(p)``; ``gc_thresh1..3`` and
    ``gc_interval`` exist under ``default`` only.

    Kernel: net/core/neighbour.c, neigh_sysctl_register().
    """
    prefix = neigh_sysctl_prefix(tbl, dev.name if dev is not None else None)
    s = tbl.net.sysctl
    hz = tbl.net.clock.hz

    def parms() -> NeighParms:
        return tbl.parms_for(dev) if dev is not None else tbl.parms

    for name, (field, unit) in NEIGH_SYSCTLS.items():

        def get(field: str = field, unit: str = unit) -> str:
            v: int = getattr(parms(), field)
            if unit == "s":
                return str(v // hz)
            if unit == "ms":
                return str(v * 1000 // hz)
            if unit == "uhz":
                return str(v * 100 // hz)
            return str(v)

        def set_(text: str, field: str = field, unit: str = unit, name: str = name) -> None:
            v = _sysctl_int(text, f"{prefix}.{name}")
            if v < 0:
                raise invalid(f"{prefix}.{name}")
            if unit == "s":
                v *= hz
            elif unit == "ms":
                v = v * hz // 1000
            elif unit == "uhz":
                v = v * hz // 100
            tbl.set_parms(dev, **{field: v})

        s.register(f"{prefix}.{name}", get, set_)

    def get_qlen() -> str:
        return str(parms().queue_len_bytes // SKB_TRUESIZE_ETH_FRAME)

    def set_qlen(text: str) -> None:
        v = _sysctl_int(text, f"{prefix}.unres_qlen")
        tbl.set_parms(dev, queue_len_bytes=max(v, 0) * SKB_TRUESIZE_ETH_FRAME)

    s.register(f"{prefix}.unres_qlen", get_qlen, set_qlen)
    if dev is None:
        for name in ("gc_thresh1", "gc_thresh2", "gc_thresh3"):
            s.register_int(f"{prefix}.{name}", tbl, name, minimum=0)

        def get_gc() -> str:
            return str(tbl.gc_interval // hz)

        def set_gc(text: str) -> None:
            tbl.gc_interval = max(_sysctl_int(text, f"{prefix}.gc_interval"), 0) * hz

        s.register(f"{prefix}.gc_interval", get_gc, set_gc)


@kernel("net/core/neighbour.c", "neigh_sysctl_unregister")
def neigh_sysctl_unregister(tbl: NeighTable, dev_name: str) -> None:
    """Drop the ``net.{ipv4,ipv6}.neigh.DEV.*`` entries registered under *dev_name*.

    Kernel: net/core/neighbour.c, neigh_sysctl_unregister().
    """
    tbl.net.sysctl.unregister_prefix(f"{neigh_sysctl_prefix(tbl, dev_name)}.")
