"""``prio``: N bands, each a class with its own child qdisc, strict priority.

Theory of operation: a packet goes to a band by its ``skb->priority``: a
priority whose major number is this qdisc's handle names the class directly
(``SO_PRIORITY`` 0x10002 → class 1:2), any other priority goes through the
``priomap`` (the 16 TC priorities → band, pfifo_fast's map by default).
Each band ``1:1`` … ``1:N`` holds a child qdisc, a pfifo of ``txqueuelen``
unless one is grafted with ``tc qdisc add … parent 1:2``. Dequeue serves
the lowest non-empty band first, so band 0 can starve the others — the point
of a strict-priority scheduler. The parent counts what its children hold
(``qlen``, ``backlog``) and what it sent; each class reports its child's
counters (``tc -s class show``).

Changing ``bands`` keeps the surviving bands' children and their packets;
bands that disappear are flushed (the drops reach the parents' counters).
Deleting a band's child grafts a fresh default pfifo in its place.

Kernel: net/sched/sch_prio.c.
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Any

from netstack.core.netdevice import NET_XMIT_SUCCESS
from netstack.core.qdisc import (
    TC_H_MAJ,
    TC_H_MAKE,
    TC_H_MIN,
    TC_H_ROOT,
    TC_PRIO_MAX,
    TCQ_F_INVISIBLE,
    ClassDump,
    ClassStats,
    Qdisc,
    bstats_update,
    net_xmit_drop_count,
    qdisc_dequeue_peeked,
    qdisc_pkt_len,
    qdisc_purge_queue,
    qdisc_reset,
    qdisc_tree_flush_backlog,
)
from netstack.core.skbuff import SkBuff
from netstack.errors import ConfigError
from netstack.sched.fifo import PfifoQdisc
from netstack.sched.pkt_sched import TCQ_MIN_PRIO_BANDS, TCQ_PRIO_BANDS, TcPrioQopt
from netstack.sites import kernel

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetdevQueue

__all__ = ["PrioQdisc"]


def _einval() -> ConfigError:
    return ConfigError("RTNETLINK answers: Invalid argument", errno.EINVAL)


@kernel("net/sched/sch_prio.c")
class PrioQdisc(Qdisc):
    """Kernel: net/sched/sch_prio.c, prio_qdisc_ops."""

    kind = "prio"
    classful = True
    has_change = True

    def __init__(
        self, net: Net, dev_queue: NetdevQueue | None, handle: int = 0, parent: int = TC_H_ROOT
    ) -> None:
        super().__init__(net, dev_queue, handle, parent)
        self.bands = 0
        self.prio2band: tuple[int, ...] = (0,) * (TC_PRIO_MAX + 1)
        self.queues: list[Qdisc] = []

    @kernel("qdisc_create_dflt")
    def _default_child(self, band: int) -> Qdisc:
        """A pfifo for band index *band* (class ``band + 1``). Kernel: qdisc_create_dflt()."""
        child = PfifoQdisc(self.net, self.dev_queue, 0, TC_H_MAKE(self.handle, band + 1))
        child.flags |= TCQ_F_INVISIBLE  # qdisc_hash_add(child, true)
        return child

    @kernel("prio_init")
    def init(self, opt: Any) -> None:
        """Kernel: prio_init() — options are required."""
        if opt is None:
            raise _einval()
        self.change(opt)

    @kernel("prio_tune")
    def change(self, opt: Any) -> None:
        """Set bands and priomap; new bands get a pfifo. Kernel: prio_tune()."""
        if not isinstance(opt, TcPrioQopt):
            raise _einval()
        if opt.bands > TCQ_PRIO_BANDS or opt.bands < TCQ_MIN_PRIO_BANDS:
            raise _einval()
        priomap = tuple(opt.priomap) + (0,) * (TC_PRIO_MAX + 1 - len(opt.priomap))
        if any(b >= opt.bands for b in priomap[: TC_PRIO_MAX + 1]):
            raise _einval()
        oldbands = self.bands
        new = [self._default_child(i) for i in range(oldbands, opt.bands)]
        self.bands = opt.bands
        self.prio2band = priomap[: TC_PRIO_MAX + 1]
        for child in self.queues[opt.bands : oldbands]:
            qdisc_tree_flush_backlog(child)
        removed = self.queues[opt.bands :]
        self.queues = self.queues[: opt.bands] + new
        for child in removed:
            child.destroy()

    @kernel("prio_classify")
    def _classify(self, skb: SkBuff) -> Qdisc:
        """Kernel: prio_classify() (no filters attached)."""
        band = skb.priority
        if TC_H_MAJ(band) != self.handle:
            if TC_H_MAJ(band):
                band = 0
            return self.queues[self.prio2band[band & TC_PRIO_MAX]]
        idx = TC_H_MIN(band) - 1
        if idx < 0 or idx >= self.bands:
            return self.queues[self.prio2band[0]]
        return self.queues[idx]

    @kernel("prio_enqueue")
    def enqueue(self, skb: SkBuff) -> int:
        """Kernel: prio_enqueue()."""
        length = qdisc_pkt_len(skb)
        child = self._classify(skb)
        ret = child.enqueue(skb)
        if ret == NET_XMIT_SUCCESS:
            self.backlog += length
            self.qlen += 1
            return NET_XMIT_SUCCESS
        if net_xmit_drop_count(ret):
            self.drops += 1
        return ret

    @kernel("prio_peek")
    def peek(self) -> SkBuff | None:
        """Kernel: prio_peek()."""
        for child in self.queues:
            skb = child.peek()
            if skb is not None:
                return skb
        return None

    @kernel("prio_dequeue")
    def dequeue(self) -> SkBuff | None:
        """Kernel: prio_dequeue()."""
        for child in self.queues:
            skb = qdisc_dequeue_peeked(child)
            if skb is not None:
                length = qdisc_pkt_len(skb)
                bstats_update(self, skb, length)
                self.backlog -= length
                self.qlen -= 1
                return skb
        return None

    @kernel("prio_reset")
    def reset(self) -> None:
        """Kernel: prio_reset()."""
        for child in self.queues:
            qdisc_reset(child)
        super().reset()

    @kernel("prio_destroy")
    def destroy(self) -> None:
        """Kernel: prio_destroy()."""
        for child in self.queues:
            child.destroy()
        super().destroy()

    @kernel("prio_dump")
    def dump(self) -> TcPrioQopt:
        """Kernel: prio_dump()."""
        return TcPrioQopt(self.bands, self.prio2band)

    # -- classes -------------------------------------------------------------------
    @kernel("prio_find")
    def cl_find(self, classid: int) -> int:
        """Kernel: prio_find()."""
        band = TC_H_MIN(classid)
        if band - 1 < 0 or band - 1 >= self.bands:
            return 0
        return band

    @kernel("prio_leaf")
    def cl_leaf(self, cl: int) -> Qdisc | None:
        """Kernel: prio_leaf()."""
        return self.queues[cl - 1]

    @kernel("prio_graft")
    def cl_graft(self, cl: int, new: Qdisc | None) -> Qdisc | None:
        """Kernel: prio_graft() (a deleted child becomes a default pfifo)."""
        band = cl - 1
        if new is None:
            new = self._default_child(band)
        old = self.queues[band]
        self.queues[band] = new
        qdisc_purge_queue(old)  # qdisc_replace()
        return old

    @kernel("prio_walk")
    def cl_walk(self) -> list[int]:
        """Kernel: prio_walk()."""
        return list(range(1, self.bands + 1))

    @kernel("prio_dump_class")
    def cl_dump(self, cl: int) -> ClassDump:
        """Kernel: prio_dump_class()."""
        return ClassDump(TC_H_MAKE(self.handle, cl), self.handle, self.queues[cl - 1].handle)

    @kernel("prio_dump_class_stats")
    def cl_dump_stats(self, cl: int) -> ClassStats:
        """The band's child's counters. Kernel: prio_dump_class_stats()."""
        q = self.queues[cl - 1]
        return ClassStats(q.bytes, q.packets, q.qlen, q.backlog, q.drops, q.requeues, q.overlimits)
