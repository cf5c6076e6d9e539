"""``fq_codel``: per-flow queues served by deficit round robin, each run by CoDel.

Theory of operation: a packet's flow is a hash of its 5-tuple into one of
``flows`` (1024) buckets, each a FIFO with its own CoDel state. A bucket
that becomes active joins the *new flows* list with a ``quantum`` (one MTU)
of credit; dequeue serves new flows before *old flows*, so a sparse flow —
a ping, a DNS query, the first packets of a connection — goes out ahead of
the bulk backlog. A flow that spends its credit moves to the end of the old
list with a fresh quantum (DRR); a new flow that empties moves to the old
list once (so it cannot stay "new" forever), an old one leaves.

CoDel runs on each flow's head packet: once a flow's sojourn time has stayed
above ``target`` (5 ms) for an ``interval`` (100 ms) it drops — or, with
``ecn`` (the default) and an ECN-capable packet, marks CE — at a rate that
grows with the square root of the drop count. When the whole qdisc exceeds
``limit`` packets (10240) or ``memory_limit`` bytes of buffers (32 MB) on
enqueue, it drops half the backlog of the fattest flow (at most
``drop_batch``, 64, packets) from its head.

Modern distributions make fq_codel the default qdisc (``net.core.default_qdisc``);
the kernel's own default stays pfifo_fast.

Kernel: net/sched/sch_fq_codel.c.
"""

from __future__ import annotations

import errno
import zlib
from collections import deque
from typing import TYPE_CHECKING, Any, Final

from netstack.core.hrtimer import ktime_get_ns
from netstack.core.netdevice import NET_XMIT_CN, NET_XMIT_SUCCESS
from netstack.core.qdisc import (
    TC_H_MAJ,
    TC_H_MAKE,
    TC_H_MIN,
    TC_H_ROOT,
    TCQ_F_CAN_BYPASS,
    ClassDump,
    ClassStats,
    Qdisc,
    bstats_update,
    qdisc_dequeue_internal,
    qdisc_pkt_len,
    qdisc_tree_reduce_backlog,
)
from netstack.core.skbuff import DropReason, SkBuff, kfree_skb
from netstack.errors import ConfigError
from netstack.sched.codel import (
    CODEL_DISABLED_THRESHOLD,
    CodelParams,
    CodelStats,
    CodelVars,
    codel_dequeue,
    codel_get_time,
    codel_time_to_us,
    us2time,
)
from netstack.sched.pkt_sched import (
    FQ_CODEL_QUANTUM_MAX,
    FqCodelClassXstats,
    FqCodelOptions,
    FqCodelXstats,
)
from netstack.sched.psched import psched_mtu
from netstack.sites import kernel
from netstack.wire.ethernet import ETH_P_IP, ETH_P_IPV6

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetdevQueue

__all__ = ["FqCodelQdisc", "skb_get_hash"]

_M32: Final = 0xFFFFFFFF
JHASH_INITVAL: Final = 0xDEADBEEF


def _rol32(x: int, n: int) -> int:
    return ((x << n) | (x >> (32 - n))) & _M32


@kernel("include/linux/jhash.h", "jhash_3words")
def jhash_3words(a: int, b: int, c: int, initval: int) -> int:
    """Bob Jenkins' hash of three words. Kernel: include/linux/jhash.h, jhash_3words()."""
    initval = (initval + JHASH_INITVAL + (3 << 2)) & _M32
    a = (a + initval) & _M32
    b = (b + initval) & _M32
    c = (c + initval) & _M32
    c ^= b
    c = (c - _rol32(b, 14)) & _M32
    a ^= c
    a = (a - _rol32(c, 11)) & _M32
    b ^= a
    b = (b - _rol32(a, 25)) & _M32
    c ^= b
    c = (c - _rol32(b, 16)) & _M32
    a ^= c
    a = (a - _rol32(c, 4)) & _M32
    b ^= a
    b = (b - _rol32(a, 14)) & _M32
    c ^= b
    c = (c - _rol32(b, 24)) & _M32
    return c


@kernel("net/core/flow_dissector.c", "__skb_get_hash", "__flow_hash_from_keys")
def skb_get_hash(skb: SkBuff, key: int) -> int:
    """The flow hash of *skb* (computed once, then kept in ``skb.hash``).

    The flow dissector reduces the packet to addresses, ports and protocol,
    ordered so both directions of a flow hash alike, and hashes them with a
    boot-time random key; netstack's key is derived from the host's seed.

    Kernel: net/core/flow_dissector.c, __skb_get_hash() / __flow_hash_from_keys().
    """
    h = skb.hash
    if h:
        return h
    buf = skb.buf
    nh = skb.network_header
    proto = skb.protocol
    saddr = daddr = ports = 0
    l4 = 0
    if proto == ETH_P_IP and nh >= 0 and nh + 20 <= skb.tail:
        ihl = (buf[nh] & 0xF) * 4
        l4 = buf[nh + 9]
        saddr = int.from_bytes(buf[nh + 12 : nh + 16], "big")
        daddr = int.from_bytes(buf[nh + 16 : nh + 20], "big")
        frag = (buf[nh + 6] & 0x1F) << 8 | buf[nh + 7]
        th = nh + ihl
        if not frag and l4 in (6, 17, 132, 136) and th + 4 <= skb.tail:
            ports = int.from_bytes(buf[th : th + 4], "big")
    elif proto == ETH_P_IPV6 and nh >= 0 and nh + 40 <= skb.tail:
        l4 = buf[nh + 6]
        saddr = zlib.crc32(buf[nh + 8 : nh + 24])
        daddr = zlib.crc32(buf[nh + 24 : nh + 40])
        th = nh + 40
        if l4 in (6, 17, 132, 136) and th + 4 <= skb.tail:
            ports = int.from_bytes(buf[th : th + 4], "big")
    sport, dport = ports >> 16, ports & 0xFFFF
    if daddr < saddr or (daddr == saddr and dport < sport):  # __flow_hash_consistentify
        saddr, daddr = daddr, saddr
        sport, dport = dport, sport
    h = jhash_3words(saddr, daddr, (sport << 16 | dport) ^ (l4 << 8) ^ proto, key) or 1
    skb.hash = h
    return h


class FqCodelFlow:
    """One bucket (kernel: ``struct fq_codel_flow``)."""

    __slots__ = ("chain", "cvars", "deficit", "idx", "q")

    def __init__(self, idx: int) -> None:
        self.idx = idx
        self.q: deque[SkBuff] = deque()
        self.chain: deque[FqCodelFlow] | None = None  # the flowchain list it is on
        self.deficit = 0
        self.cvars = CodelVars()


def _einval(msg: str = "") -> ConfigError:
    if msg:
        return ConfigError(f"Error: {msg}.", errno.EINVAL)
    return ConfigError("RTNETLINK answers: Invalid argument", errno.EINVAL)


@kernel("codel_get_enqueue_time")
def _codel_time(skb: SkBuff) -> int:
    """Kernel: codel_get_enqueue_time()."""
    cb: tuple[int, int] = skb.cb
    return cb[0]


@kernel("net/sched/sch_fq_codel.c")
class FqCodelQdisc(Qdisc):
    """Kernel: net/sched/sch_fq_codel.c, fq_codel_qdisc_ops."""

    kind = "fq_codel"
    classful = True
    has_change = True

    def __init__(
        self, net: Net, dev_queue: NetdevQueue | None, handle: int = 0, parent: int = TC_H_ROOT
    ) -> None:
        super().__init__(net, dev_queue, handle, parent)
        dev = self.dev
        mtu = psched_mtu(dev) if dev is not None else 1514
        self.limit = 10 * 1024
        self.flows_cnt = 1024
        self.memory_limit = 32 << 20
        self.drop_batch_size = 64
        self.quantum = mtu
        self.cparams = CodelParams()
        self.cparams.ecn = True
        self.cparams.mtu = mtu
        self.cstats = CodelStats()
        self.flows: list[FqCodelFlow] = []
        self.backlogs: list[int] = []
        self.new_flows: deque[FqCodelFlow] = deque()
        self.old_flows: deque[FqCodelFlow] = deque()
        self.memory_usage = 0
        self.drop_overmemory = 0
        self.drop_overlimit = 0
        self.new_flow_count = 0
        self._cur_flow: FqCodelFlow | None = None  # the flow codel_dequeue() works on
        self.hash_key = zlib.crc32(f"{net.seed}/{net.name}/flow_dissector".encode())

    # -- configuration ----------------------------------------------------------
    @kernel("fq_codel_init")
    def init(self, opt: Any) -> None:
        """Defaults: 10240p, 1024 flows, quantum = MTU, 5 ms / 100 ms, ecn.

        Kernel: fq_codel_init().
        """
        if opt is not None:
            try:
                self.change(opt)
            except ConfigError:
                self.flows_cnt = 0
                raise
        if not self.flows:
            self.flows = [FqCodelFlow(i) for i in range(self.flows_cnt)]
            self.backlogs = [0] * self.flows_cnt
        if self.limit >= 1:
            self.flags |= TCQ_F_CAN_BYPASS
        else:
            self.flags &= ~TCQ_F_CAN_BYPASS

    @kernel("fq_codel_change")
    def change(self, opt: Any) -> None:
        """Kernel: fq_codel_change()."""
        if not isinstance(opt, FqCodelOptions):
            raise _einval()
        if opt.flows is not None:
            if self.flows:
                raise _einval()
            if not opt.flows or opt.flows > 65536:
                self.flows_cnt = opt.flows
                raise _einval()
            self.flows_cnt = opt.flows
        quantum = 0
        if opt.quantum is not None:
            quantum = max(256, opt.quantum)
            if quantum > FQ_CODEL_QUANTUM_MAX:
                raise _einval("Invalid quantum")
        p = self.cparams
        if opt.target is not None:
            p.target = us2time(opt.target)
        if opt.ce_threshold is not None:
            p.ce_threshold = us2time(opt.ce_threshold)
        if opt.ce_threshold_selector is not None:
            p.ce_threshold_selector = opt.ce_threshold_selector & 0xFF
        if opt.ce_threshold_mask is not None:
            p.ce_threshold_mask = opt.ce_threshold_mask & 0xFF
        if opt.interval is not None:
            p.interval = us2time(opt.interval)
        if opt.limit is not None:
            self.limit = opt.limit & _M32
        if opt.ecn is not None:
            p.ecn = bool(opt.ecn)
        if quantum:
            self.quantum = quantum
        if opt.drop_batch_size is not None:
            self.drop_batch_size = max(1, opt.drop_batch_size)
        if opt.memory_limit is not None:
            self.memory_limit = min(1 << 31, opt.memory_limit)
        # A smaller limit takes effect now: dequeue (and free) the excess —
        # through the dequeue path, so the kernel counts them as sent.
        dropped_pkts = dropped_bytes = 0
        while self.qlen > self.limit or self.memory_usage > self.memory_limit:
            skb = qdisc_dequeue_internal(self)
            if skb is None:
                break
            dropped_pkts += 1
            dropped_bytes += qdisc_pkt_len(skb)
            kfree_skb(skb, DropReason.QUEUE_PURGE)
        qdisc_tree_reduce_backlog(self, dropped_pkts, dropped_bytes)

    # -- the data path ------------------------------------------------------------
    @kernel("fq_codel_classify")
    def classify(self, skb: SkBuff) -> int:
        """Bucket number + 1. Kernel: fq_codel_classify() (no filters)."""
        prio = skb.priority
        if TC_H_MAJ(prio) == self.handle and 0 < TC_H_MIN(prio) <= self.flows_cnt:
            return TC_H_MIN(prio)
        return ((skb_get_hash(skb, self.hash_key) * self.flows_cnt) >> 32) + 1

    @kernel("fq_codel_drop")
    def _drop(self, max_packets: int) -> int:
        """Drop up to half the fattest flow's backlog from its head. Kernel: fq_codel_drop()."""
        backlogs = self.backlogs
        idx = max(range(len(backlogs)), key=backlogs.__getitem__)
        threshold = backlogs[idx] >> 1
        flow = self.flows[idx]
        length = mem = i = 0
        while True:
            skb = flow.q.popleft()
            length += qdisc_pkt_len(skb)
            mem += skb.cb[1]
            kfree_skb(skb, DropReason.QDISC_DROP)
            i += 1
            if i >= max_packets or length >= threshold or not flow.q:
                break
        flow.cvars.count = (flow.cvars.count + i) & _M32  # increase codel's signal strength
        backlogs[idx] -= length
        self.memory_usage -= mem
        self.drops += i
        self.backlog -= length
        self.qlen -= i
        return idx

    @kernel("fq_codel_enqueue")
    def enqueue(self, skb: SkBuff) -> int:
        """Kernel: fq_codel_enqueue()."""
        idx = self.classify(skb) - 1
        now = ktime_get_ns(self.net)
        mem_usage = skb.truesize
        skb.cb = (codel_get_time(now), mem_usage)  # codel_set_enqueue_time()
        flow = self.flows[idx]
        flow.q.append(skb)
        length = qdisc_pkt_len(skb)
        self.backlogs[idx] += length
        self.backlog += length
        if flow.chain is None:
            self.new_flows.append(flow)
            flow.chain = self.new_flows
            self.new_flow_count += 1
            flow.deficit = self.quantum
        self.memory_usage += mem_usage
        memory_limited = self.memory_usage > self.memory_limit
        self.qlen += 1
        if self.qlen <= self.limit and not memory_limited:
            return NET_XMIT_SUCCESS
        prev_backlog = self.backlog
        prev_qlen = self.qlen
        # fq_codel_drop() scans every bucket: drop a batch to amortise it.
        ret = self._drop(self.drop_batch_size)
        prev_qlen -= self.qlen
        prev_backlog -= self.backlog
        self.drop_overlimit += prev_qlen
        if memory_limited:
            self.drop_overmemory += prev_qlen
        if ret == idx:
            # This flow lost packets: tell the caller, but the parents keep
            # counting this packet as queued.
            qdisc_tree_reduce_backlog(self, prev_qlen - 1, prev_backlog - length)
            return NET_XMIT_CN
        qdisc_tree_reduce_backlog(self, prev_qlen, prev_backlog)
        return NET_XMIT_SUCCESS

    @kernel("sch_fq_codel.c", "dequeue_func")
    def _flow_dequeue(self, v: CodelVars) -> SkBuff | None:
        """Kernel: sch_fq_codel.c, dequeue_func()."""
        flow = self._cur_flow
        if flow is None or not flow.q:
            return None
        skb = flow.q.popleft()
        length = qdisc_pkt_len(skb)
        self.backlogs[flow.idx] -= length
        self.memory_usage -= skb.cb[1]
        self.qlen -= 1
        self.backlog -= length
        return skb

    @kernel("sch_fq_codel.c", "drop_func")
    def _drop_func(self, skb: SkBuff) -> None:
        """Kernel: sch_fq_codel.c, drop_func()."""
        kfree_skb(skb, DropReason.QDISC_DROP)
        self.drops += 1

    @kernel("__fq_codel_dequeue")
    def _dequeue(self) -> SkBuff | None:
        """New flows first, then old ones, DRR by quantum. Kernel: __fq_codel_dequeue()."""
        now = codel_get_time(ktime_get_ns(self.net))
        while True:
            head = self.new_flows
            if not head:
                head = self.old_flows
                if not head:
                    return None
            flow = head[0]
            if flow.deficit <= 0:
                flow.deficit += self.quantum
                head.popleft()
                self.old_flows.append(flow)
                flow.chain = self.old_flows
                continue
            self._cur_flow = flow
            skb = codel_dequeue(
                self,
                self.cparams,
                flow.cvars,
                self.cstats,
                qdisc_pkt_len,
                _codel_time,
                self._drop_func,
                self._flow_dequeue,
                now,
            )
            if skb is None:
                # force a pass through old_flows to prevent starvation
                head.popleft()
                if head is self.new_flows and self.old_flows:
                    self.old_flows.append(flow)
                    flow.chain = self.old_flows
                else:
                    flow.chain = None
                continue
            length = qdisc_pkt_len(skb)
            bstats_update(self, skb, length)
            flow.deficit -= length
            return skb

    @kernel("fq_codel_dequeue_drop")
    def _dequeue_drop(self) -> None:
        """Tell the parents about CoDel's drops. Kernel: fq_codel_dequeue_drop()."""
        stats = self.cstats
        if stats.drop_count:
            qdisc_tree_reduce_backlog(self, stats.drop_count, stats.drop_len)
            stats.drop_count = 0
            stats.drop_len = 0

    @kernel("fq_codel_dequeue")
    def dequeue(self) -> SkBuff | None:
        """Kernel: fq_codel_dequeue()."""
        skb = self._dequeue()
        self._dequeue_drop()
        return skb

    @kernel("fq_codel_peek")
    def peek(self) -> SkBuff | None:
        """Dequeue into ``gso_skb`` (still queued), then report drops. Kernel: fq_codel_peek()."""
        skb = self.gso_skb
        if skb is None:
            skb = self._dequeue()
            if skb is not None:
                self.gso_skb = skb
                self.backlog += qdisc_pkt_len(skb)
                self.qlen += 1
            self._dequeue_drop()
        return skb

    @kernel("fq_codel_reset")
    def reset(self) -> None:
        """Kernel: fq_codel_reset()."""
        self.new_flows.clear()
        self.old_flows.clear()
        for flow in self.flows:
            while flow.q:
                kfree_skb(flow.q.popleft(), DropReason.QUEUE_PURGE)
            flow.chain = None
            flow.cvars = CodelVars()
        self.backlogs = [0] * len(self.flows)
        self.memory_usage = 0
        super().reset()

    @kernel("fq_codel_dump")
    def dump(self) -> FqCodelOptions:
        """Kernel: fq_codel_dump()."""
        p = self.cparams
        return FqCodelOptions(
            target=codel_time_to_us(p.target),
            limit=self.limit,
            interval=codel_time_to_us(p.interval),
            ecn=int(p.ecn),
            quantum=self.quantum,
            drop_batch_size=self.drop_batch_size,
            memory_limit=self.memory_limit,
            flows=self.flows_cnt,
            ce_threshold=(
                codel_time_to_us(p.ce_threshold)
                if p.ce_threshold != CODEL_DISABLED_THRESHOLD
                else None
            ),
            ce_threshold_selector=p.ce_threshold_selector if p.ce_threshold_mask else None,
            ce_threshold_mask=p.ce_threshold_mask if p.ce_threshold_mask else None,
        )

    @kernel("fq_codel_dump_stats")
    def dump_stats(self) -> FqCodelXstats:
        """Kernel: fq_codel_dump_stats()."""
        return FqCodelXstats(
            maxpacket=self.cstats.maxpacket,
            drop_overlimit=self.drop_overlimit,
            ecn_mark=self.cstats.ecn_mark,
            new_flow_count=self.new_flow_count,
            new_flows_len=len(self.new_flows),
            old_flows_len=len(self.old_flows),
            ce_mark=self.cstats.ce_mark,
            memory_usage=self.memory_usage,
            drop_overmemory=self.drop_overmemory,
        )

    # -- classes: the active flows ----------------------------------------------------
    @kernel("fq_codel_find")
    def cl_find(self, classid: int) -> int:
        """Kernel: fq_codel_find() — flows cannot be addressed for grafting."""
        return 0

    @kernel("fq_codel_walk")
    def cl_walk(self) -> list[int]:
        """Every flow that is on a list. Kernel: fq_codel_walk()."""
        return [i + 1 for i, f in enumerate(self.flows) if f.chain is not None]

    @kernel("fq_codel_dump_class")
    def cl_dump(self, cl: int) -> ClassDump:
        """Kernel: fq_codel_dump_class()."""
        return ClassDump(TC_H_MAKE(self.handle, cl), self.handle, 0)

    @kernel("fq_codel_dump_class_stats")
    def cl_dump_stats(self, cl: int) -> ClassStats:
        """The flow's queue and CoDel state. Kernel: fq_codel_dump_class_stats()."""
        idx = cl - 1
        if not 0 <= idx < len(self.flows):
            return ClassStats(has_basic=False)
        flow = self.flows[idx]
        v = flow.cvars
        drop_next = 0
        if v.dropping:
            now = codel_get_time(ktime_get_ns(self.net))
            delta = (v.drop_next - now) & _M32
            delta = delta - (1 << 32) if delta & 0x80000000 else delta
            drop_next = codel_time_to_us(delta) if delta >= 0 else -codel_time_to_us(-delta)
        xstats = FqCodelClassXstats(
            deficit=flow.deficit,
            ldelay=codel_time_to_us(v.ldelay),
            count=v.count,
            lastcount=v.lastcount,
            dropping=int(v.dropping),
            drop_next=drop_next,
        )
        return ClassStats(
            qlen=len(flow.q), backlog=self.backlogs[idx], xstats=xstats, has_basic=False
        )
