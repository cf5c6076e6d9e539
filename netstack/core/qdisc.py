"""The qdisc layer's generic machinery: ``struct Qdisc`` and ``sch_generic``.

Theory of operation — transmit through a queueing discipline::

    dev_queue_xmit ─► __dev_xmit_skb ─┬─ empty + TCQ_F_CAN_BYPASS ─► sch_direct_xmit
      (core/dev.py)   [root lock]     └─ q.enqueue ─► __qdisc_run ─► qdisc_restart*
                                                                  │
    qdisc_restart: dequeue_skb (requeued gso_skb first; bulk dequeue up to the
                   BQL byte budget) ─► sch_direct_xmit:
                     release root lock ─► validate_xmit_skb_list (GSO, csum)
                     ─► HARD_TX_LOCK ─► dev_hard_start_xmit ─► HARD_TX_UNLOCK
                     ─► retake root lock; NETDEV_TX_BUSY ─► dev_requeue_skb

Two seeds are switches here (``Net.patches``): ``qdisc_bulk_dequeue`` (3.18,
Jesper Dangaard Brouer) lets ``dequeue_skb`` take several skbs per root-lock
hold, bounded by ``dql_avail``; ``qdisc_validate_unlocked`` (3.18, Eric
Dumazet) moves ``validate_xmit_skb_list`` from under the root lock (where the
bulk-dequeue series had put it, in ``dequeue_skb``) to after its release.

A qdisc tree: a classful qdisc (prio, tbf, netem) owns classes, each with a
child qdisc (its *leaf*); a child's ``parent`` is its class id
(``major:minor``), the root's is ``TC_H_ROOT``. The class operations
(``Qdisc_class_ops``: find, leaf, graft, walk, dump) are methods prefixed
``cl_``. A child that drops or loses packets outside its parent's enqueue
tells its ancestors with :func:`qdisc_tree_reduce_backlog`, so every level's
``qlen``/``backlog`` stays the sum of what is queued below it. Timers of
shaping disciplines go through a :class:`QdiscWatchdog`, an hrtimer that
reschedules the *root* qdisc on NET_TX when it fires.

Why this lives in ``core`` and not ``sched``: ``dev.c`` and ``sch_generic.c``
call each other in the kernel (``__dev_xmit_skb`` ↔ ``sch_direct_xmit`` ↔
``validate_xmit_skb_list``/``dev_hard_start_xmit``), and ``core`` may not import
``sched``. So ``core`` owns ``struct Qdisc``, the run loop and the builtin
``noop``/``noqueue`` disciplines; ``sched`` holds the disciplines users pick
(pfifo_fast, …) and the ``tc`` API (``sch_api``), registered per Net (kernel:
``register_qdisc``).

Kernel: include/net/sch_generic.h, net/sched/sch_generic.c, net/sched/sch_api.c
(qdisc_lookup, qdisc_tree_reduce_backlog, qdisc_watchdog), net/core/dev.c.
"""

from __future__ import annotations

import errno
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar, Final

import attrs

from netstack.core.firstuse import FirstUse
from netstack.core.netdevice import (
    NET_XMIT_CN,
    NET_XMIT_DROP,
    NET_XMIT_SUCCESS,
    NETDEV_TX_BUSY,
    dev_xmit_complete,
    netif_xmit_frozen_or_stopped,
)
from netstack.core.skbuff import DropReason, SkBuff, kfree_skb, kfree_skb_list
from netstack.core.xmit import dev_hard_start_xmit, validate_xmit_skb_list
from netstack.cpu import SpinLock
from netstack.errors import ConfigError
from netstack.sites import TIMED, kernel, spend

if TYPE_CHECKING:
    from netstack.core.hrtimer import HrTimer
    from netstack.core.net import Net
    from netstack.core.netdevice import NetDevice, NetdevQueue

# Cache lines of a queued skb that validate_xmit_skb reads: the sk_buff's line
# with protocol/ip_summed/encapsulation (netif_skb_features, the checksum test)
# and skb_shared_info's first line (gso_size/gso_segs, nr_frags, frag_list for
# skb_needs_linearize). Timed mode charges their transfer when the CPU that
# dequeues an skb is not the one that queued it.
SKB_VALIDATE_LINES = 2

__all__ = [
    "TCQ_F_BUILTIN",
    "TCQ_F_CAN_BYPASS",
    "TCQ_F_INVISIBLE",
    "TCQ_F_NOPARENT",
    "TCQ_F_ONETXQUEUE",
    "TC_H_INGRESS",
    "TC_H_MAJ",
    "TC_H_MAKE",
    "TC_H_MIN",
    "TC_H_ROOT",
    "TC_H_UNSPEC",
    "ClassStats",
    "NoopQdisc",
    "NoqueueQdisc",
    "Qdisc",
    "QdiscStats",
    "QdiscWatchdog",
    "bstats_update",
    "net_xmit_drop_count",
    "qdisc_dequeue_internal",
    "qdisc_dequeue_peeked",
    "qdisc_lookup",
    "qdisc_peek_dequeued",
    "qdisc_pkt_len",
    "qdisc_purge_queue",
    "qdisc_reset",
    "qdisc_run",
    "qdisc_tree",
    "qdisc_tree_reduce_backlog",
]

TCQ_F_BUILTIN: Final = 1
TCQ_F_INGRESS: Final = 2
TCQ_F_CAN_BYPASS: Final = 4
TCQ_F_MQROOT: Final = 8
TCQ_F_ONETXQUEUE: Final = 0x10
TCQ_F_CPUSTATS: Final = 0x20
TCQ_F_NOPARENT: Final = 0x40
TCQ_F_INVISIBLE: Final = 0x80
TCQ_F_NOLOCK: Final = 0x100
TCQ_F_OFFLOADED: Final = 0x200
TCQ_F_WARN_NONWC: Final = 1 << 16

TC_H_ROOT: Final = 0xFFFFFFFF
TC_H_UNSPEC: Final = 0
TC_H_INGRESS: Final = 0xFFFFFFF1
TC_H_CLSACT: Final = TC_H_INGRESS
TC_H_MAJ_MASK: Final = 0xFFFF0000
TC_H_MIN_MASK: Final = 0x0000FFFF
TC_PRIO_MAX: Final = 15

# enqueue return flags above NET_XMIT_MASK (include/linux/netdevice.h: __NET_XMIT_*;
# the leading underscores dropped: Python mangles them inside class bodies)
NET_XMIT_STOLEN: Final = 0x00010000
NET_XMIT_BYPASS: Final = 0x00020000


@kernel("include/uapi/linux/pkt_sched.h", "TC_H_MAJ")
def TC_H_MAJ(h: int) -> int:
    """Kernel: include/uapi/linux/pkt_sched.h, TC_H_MAJ()."""
    return h & TC_H_MAJ_MASK


@kernel("include/uapi/linux/pkt_sched.h", "TC_H_MIN")
def TC_H_MIN(h: int) -> int:
    """Kernel: include/uapi/linux/pkt_sched.h, TC_H_MIN()."""
    return h & TC_H_MIN_MASK


@kernel("include/uapi/linux/pkt_sched.h", "TC_H_MAKE")
def TC_H_MAKE(maj: int, minor: int) -> int:
    """Kernel: include/uapi/linux/pkt_sched.h, TC_H_MAKE()."""
    return (maj & TC_H_MAJ_MASK) | (minor & TC_H_MIN_MASK)


@kernel("include/net/sch_generic.h", "net_xmit_drop_count")
def net_xmit_drop_count(rc: int) -> bool:
    """Did the enqueue that returned *rc* drop a packet (not steal it)?

    Kernel: include/net/sch_generic.h, net_xmit_drop_count().
    """
    return not rc & NET_XMIT_STOLEN


@attrs.frozen
class QdiscStats:
    """``tc -s qdisc`` counters (``gnet_stats_basic`` + ``gnet_stats_queue``)."""

    kind: str
    handle: int
    parent: int
    bytes: int
    packets: int
    qlen: int
    backlog: int
    drops: int
    requeues: int
    overlimits: int
    bulk_dequeues: int  # netstack: restarts that dequeued more than one skb
    bulk_packets: int  # netstack: skbs dequeued by those restarts
    validations_locked: int  # netstack: validate_xmit_skb_list runs with the root lock held
    validations_unlocked: int  # … and after it was released (qdisc_validate_unlocked)
    validations_remote: int = 0  # netstack, timed mode: validated by a CPU that did not queue it
    skbs: int = 0  # netstack: skbs that left (``packets`` counts a GSO skb as its segments)


@attrs.frozen
class ClassStats:
    """``tc -s class`` counters of one class, and its discipline's class xstats."""

    bytes: int = 0
    packets: int = 0
    qlen: int = 0
    backlog: int = 0
    drops: int = 0
    requeues: int = 0
    overlimits: int = 0
    xstats: Any = None
    has_basic: bool = True  # the class reports Sent bytes/packets (gnet_stats_copy_basic)
    has_queue: bool = True  # … and queue counters (gnet_stats_copy_queue)


@attrs.frozen
class ClassDump:
    """What ``tc class show`` learns about one class (``tcmsg`` + options)."""

    classid: int  # tcm_handle
    parent: int  # tcm_parent
    leaf: int  # tcm_info: the handle of the class's child qdisc
    options: Any = None


class Qdisc:
    """A queueing discipline (kernel: ``struct Qdisc`` + its ``Qdisc_ops``).

    Subclasses implement :meth:`enqueue`, :meth:`dequeue`, :meth:`peek` and
    :meth:`reset` with their discipline, :meth:`init`/:meth:`change` for their
    options (``TCA_OPTIONS``, a value from :mod:`netstack.sched.pkt_sched`)
    and :meth:`dump` to report them. This base holds the generic state: the
    root lock, busylock, running flag, the ``gso_skb`` slot (requeued skbs of
    a root, or the skb a parent peeked at), the reference count and the
    counters.
    """

    kind: ClassVar[str] = ""
    can_enqueue: ClassVar[bool] = True  # False: the kernel's q->enqueue == NULL
    # made on first use (a noqueue qdisc, every veth's, loopback's and bridge's,
    # never takes them), named after the device the qdisc was made for
    lock = FirstUse(lambda q: SpinLock(f"{q._lock_dev}:qdisc"))  # qdisc_lock(): the root lock
    busylock = FirstUse(lambda q: SpinLock(f"{q._lock_dev}:busylock"))
    # timed mode: when each CPU ran the qdisc (the RUNNING bit as intervals)
    run_iv = FirstUse(lambda q: SpinLock(f"{q._lock_dev}:qdisc running"))
    static_flags: ClassVar[int] = 0
    classful: ClassVar[bool] = False  # has Qdisc_class_ops
    has_change: ClassVar[bool] = False  # has Qdisc_ops.change

    @kernel("net/sched/sch_generic.c", "qdisc_alloc")
    def __init__(
        self, net: Net, dev_queue: NetdevQueue | None, handle: int = 0, parent: int = TC_H_ROOT
    ) -> None:
        """Kernel: net/sched/sch_generic.c, qdisc_alloc()."""
        self.net = net
        self.dev_queue = dev_queue
        self.handle = handle
        self.parent = parent
        self.flags = self.static_flags
        self.refcnt = 1
        self.depth = 0  # levels below the root (a tree is at most 8 deep)
        self.limit = 0  # sch->limit, for the disciplines that use it
        # the device's name when the qdisc was made: its locks' names (the locks,
        # lock, busylock and run_iv, are made on first use: FirstUse)
        self._lock_dev = dev_queue.dev.name if dev_queue is not None else "-"
        self.running = False  # __QDISC___STATE_RUNNING / seqcount
        # timed mode: the line of q->__state/q->state (RUNNING, SCHED), read
        # by every sender before it takes the root lock
        self.state_line = net.cacheline("qdisc state")
        self.state_sched = False  # __QDISC_STATE_SCHED
        self.deactivated = False  # __QDISC_STATE_DEACTIVATED
        self.qlen = 0  # q->q.qlen, including requeued skbs
        self.gso_skb: SkBuff | None = None  # requeued or peeked skb (list via next)
        # gnet_stats_basic / gnet_stats_queue
        self.bytes = 0
        self.packets = 0
        self.backlog = 0
        self.drops = 0
        self.requeues = 0
        self.overlimits = 0
        self.bulk_dequeues = 0
        self.bulk_packets = 0
        self.validations_locked = 0
        self.validations_unlocked = 0
        self.validations_remote = 0
        self.skbs = 0

    # -- the discipline (Qdisc_ops) --------------------------------------------
    def init(self, opt: Any) -> None:
        """Set up from ``TCA_OPTIONS`` (None when none were given); raise ConfigError.

        Kernel: Qdisc_ops.init.
        """
        if opt is not None and self.has_change:
            self.change(opt)

    def change(self, opt: Any) -> None:
        """Apply new options to a live qdisc (``tc qdisc change``). Kernel: Qdisc_ops.change."""
        raise ConfigError("Error: Change operation not supported by specified qdisc.", errno.EINVAL)

    def enqueue(self, skb: SkBuff) -> int:
        """Queue *skb*; return NET_XMIT_SUCCESS / NET_XMIT_DROP / NET_XMIT_CN."""
        raise NotImplementedError

    def dequeue(self) -> SkBuff | None:
        """Take the next skb to send, or None."""
        raise NotImplementedError

    def peek(self) -> SkBuff | None:
        """Look at the next skb without taking it (default: qdisc_peek_dequeued)."""
        return qdisc_peek_dequeued(self)

    @kernel("qdisc_reset")
    def reset(self) -> None:
        """Drop everything queued, keep the counters. Kernel: qdisc_reset()."""
        skb = self.gso_skb
        self.gso_skb = None
        if skb is not None:
            kfree_skb_list(skb, DropReason.QUEUE_PURGE)
        self.qlen = 0
        self.backlog = 0

    @kernel("qdisc_destroy")
    def destroy(self) -> None:
        """Free private state, children and timers. Kernel: qdisc_destroy() / ops->destroy."""
        self.reset()

    def dump(self) -> Any:
        """The ``TCA_OPTIONS`` this qdisc reports, or None. Kernel: Qdisc_ops.dump."""
        return None

    def dump_stats(self) -> Any:
        """Discipline-specific statistics (``TCA_XSTATS``), or None.

        Kernel: Qdisc_ops.dump_stats.
        """
        return None

    # -- classes (Qdisc_class_ops) ---------------------------------------------
    def cl_find(self, classid: int) -> int:
        """The class for *classid*, 0 if none. Kernel: Qdisc_class_ops.find."""
        return 0

    def cl_leaf(self, cl: int) -> Qdisc | None:
        """The child qdisc of class *cl*. Kernel: Qdisc_class_ops.leaf."""
        return None

    def cl_graft(self, cl: int, new: Qdisc | None) -> Qdisc | None:
        """Attach *new* to class *cl*; return the old child. Kernel: Qdisc_class_ops.graft."""
        raise ConfigError("RTNETLINK answers: Operation not supported", errno.EOPNOTSUPP)

    def cl_walk(self) -> list[int]:
        """Every class, in the order ``tc class show`` lists them. Kernel: Qdisc_class_ops.walk."""
        return []

    def cl_dump(self, cl: int) -> ClassDump:
        """``tcmsg`` and options of class *cl*. Kernel: Qdisc_class_ops.dump."""
        leaf = self.cl_leaf(cl)
        return ClassDump(TC_H_MAKE(self.handle, cl), self.handle, leaf.handle if leaf else 0)

    def cl_dump_stats(self, cl: int) -> ClassStats | None:
        """Counters of class *cl* (its child's), or None. Kernel: Qdisc_class_ops.dump_stats."""
        return None

    def cl_qlen_notify(self, cl: int) -> None:
        """Class *cl*'s child became empty. Kernel: Qdisc_class_ops.qlen_notify."""

    # -- helpers for disciplines -----------------------------------------------
    @kernel("qdisc_drop")
    def qdisc_drop(self, skb: SkBuff, reason: DropReason = DropReason.QDISC_DROP) -> int:
        """Count and free a packet the discipline refuses. Kernel: qdisc_drop()."""
        self.drops += 1
        kfree_skb(skb, reason)
        return NET_XMIT_DROP

    @property
    @kernel("qdisc_dev")
    def dev(self) -> NetDevice | None:
        """Kernel: qdisc_dev()."""
        return self.dev_queue.dev if self.dev_queue is not None else None

    @kernel("__netif_schedule")
    def netif_schedule(self) -> None:
        """Ask NET_TX to run this qdisc later. Kernel: __netif_schedule()."""
        if not self.state_sched and self.can_enqueue:
            self.state_sched = True
            line = self.state_line
            if line is not None:
                line.write("__netif_schedule", atomic=True)  # test_and_set_bit(SCHED)
            self.net.raise_net_tx(self)

    def statistics(self) -> QdiscStats:
        """Counters as ``tc -s qdisc show`` prints them."""
        return QdiscStats(
            self.kind,
            self.handle,
            self.parent,
            self.bytes,
            self.packets,
            self.qlen,
            self.backlog,
            self.drops,
            self.requeues,
            self.overlimits,
            self.bulk_dequeues,
            self.bulk_packets,
            self.validations_locked,
            self.validations_unlocked,
            self.validations_remote,
            self.skbs,
        )

    def __repr__(self) -> str:
        return f"<Qdisc {self.kind} {self.handle >> 16:x}: qlen={self.qlen}>"


@kernel("net/sched/sch_generic.c")
class NoopQdisc(Qdisc):
    """``noop``: drops everything; attached while a device is down.

    Kernel: net/sched/sch_generic.c, noop_qdisc_ops.
    """

    kind = "noop"
    static_flags = TCQ_F_BUILTIN

    def enqueue(self, skb: SkBuff) -> int:
        kfree_skb(skb, DropReason.QDISC_DROP)
        return NET_XMIT_CN

    def dequeue(self) -> SkBuff | None:
        return None

    def peek(self) -> SkBuff | None:
        return None


@kernel("net/sched/sch_generic.c")
class NoqueueQdisc(Qdisc):
    """``noqueue``: no queue at all; ``dev_queue_xmit`` calls the driver directly.

    The default of virtual devices (``IFF_NO_QUEUE``: veth, dummy, loopback,
    tunnels); ``tc qdisc add dev X root noqueue`` attaches one to any device.

    Kernel: net/sched/sch_generic.c, noqueue_qdisc_ops / noqueue_init.
    """

    kind = "noqueue"
    can_enqueue = False

    def enqueue(self, skb: SkBuff) -> int:  # never called: can_enqueue is False
        kfree_skb(skb, DropReason.QDISC_DROP)
        return NET_XMIT_DROP

    def dequeue(self) -> SkBuff | None:
        return None

    def peek(self) -> SkBuff | None:
        return None


class QueueFifo:
    """An skb FIFO with byte accounting, the building block of fifo bands.

    Kernel: ``struct qdisc_skb_head`` + __qdisc_enqueue_tail / __qdisc_dequeue_head.
    """

    __slots__ = ("backlog", "q")

    def __init__(self) -> None:
        self.q: deque[SkBuff] = deque()
        self.backlog = 0

    def __len__(self) -> int:
        return len(self.q)


@kernel("net/sched/sch_api.c", "qdisc_watchdog")
class QdiscWatchdog:
    """An hrtimer that reschedules a throttled qdisc's root (tbf, netem).

    Kernel: net/sched/sch_api.c, struct qdisc_watchdog / qdisc_watchdog().
    """

    __slots__ = ("last_expires", "qdisc", "timer")

    @kernel("qdisc_watchdog_init")
    def __init__(self, qdisc: Qdisc) -> None:
        """Kernel: qdisc_watchdog_init()."""
        self.qdisc = qdisc
        self.timer: HrTimer = qdisc.net.hrtimers.timer(self._fire, name=f"watchdog:{qdisc.kind}")
        self.last_expires = 0

    @kernel("qdisc_watchdog", "__netif_schedule", "qdisc_root")
    def _fire(self) -> None:
        """Kernel: qdisc_watchdog() → __netif_schedule(qdisc_root(wd->qdisc))."""
        txq = self.qdisc.dev_queue
        if txq is not None:
            txq.qdisc.netif_schedule()

    @kernel("qdisc_watchdog_schedule_range_ns")
    def schedule_ns(self, expires: int, delta_ns: int = 0) -> None:
        """Wake the qdisc at *expires* ns unless the root is deactivated.

        Kernel: qdisc_watchdog_schedule_range_ns().
        """
        txq = self.qdisc.dev_queue
        if txq is None or txq.qdisc_sleeping.deactivated:
            return
        # An armed timer already within [expires, expires + delta] stays (u64 compare).
        if self.timer.queued and (self.last_expires - expires) % (1 << 64) <= delta_ns:
            return
        self.last_expires = expires
        self.timer.start(expires)

    @kernel("qdisc_watchdog_cancel")
    def cancel(self) -> None:
        """Kernel: qdisc_watchdog_cancel()."""
        self.timer.cancel()


# ---------------------------------------------------------------------------
# Children, peeking and the tree (include/net/sch_generic.h, sch_api.c)
# ---------------------------------------------------------------------------


@kernel("include/net/sch_generic.h", "qdisc_peek_dequeued")
def qdisc_peek_dequeued(sch: Qdisc) -> SkBuff | None:
    """Peek by dequeuing into ``gso_skb`` (still counted as queued).

    Kernel: include/net/sch_generic.h, qdisc_peek_dequeued().
    """
    skb = sch.gso_skb
    if skb is None:
        skb = sch.dequeue()
        if skb is not None:
            sch.gso_skb = skb
            sch.backlog += qdisc_pkt_len(skb)
            sch.qlen += 1
    return skb


@kernel("include/net/sch_generic.h", "qdisc_dequeue_peeked")
def qdisc_dequeue_peeked(sch: Qdisc) -> SkBuff | None:
    """Take the skb a peek left in ``gso_skb``, or dequeue.

    Kernel: include/net/sch_generic.h, qdisc_dequeue_peeked().
    """
    skb = sch.gso_skb
    if skb is not None:
        sch.gso_skb = skb.next
        skb.next = None
        sch.backlog -= qdisc_pkt_len(skb)
        sch.qlen -= 1
        return skb
    return sch.dequeue()


@kernel("include/net/sch_generic.h", "qdisc_dequeue_internal")
def qdisc_dequeue_internal(sch: Qdisc) -> SkBuff | None:
    """Take a peeked skb from ``gso_skb`` first, else dequeue (a qdisc trimming
    itself to a new limit).

    Kernel: include/net/sch_generic.h, qdisc_dequeue_internal().
    """
    skb = sch.gso_skb
    if skb is not None:
        sch.gso_skb = skb.next
        skb.next = None
        sch.qlen -= 1
        sch.backlog -= qdisc_pkt_len(skb)
        return skb
    return sch.dequeue()  # (the kernel's direct=false)


@kernel("qdisc_reset")
def qdisc_reset(q: Qdisc) -> None:
    """Purge *q*'s packets (counted as ``QUEUE_PURGE`` drops). Kernel: qdisc_reset()."""
    q.reset()


def qdisc_tree(root: Qdisc) -> Iterator[Qdisc]:
    """*root* and every qdisc below it, depth first in class order.

    The kernel keeps the non-root qdiscs of a device in ``dev->qdisc_hash``;
    walking the classes reaches the same set, in an order that does not
    depend on hash buckets.
    """
    yield root
    if root.classful:
        for cl in root.cl_walk():
            leaf = root.cl_leaf(cl)
            if leaf is not None and not leaf.flags & TCQ_F_BUILTIN:
                yield from qdisc_tree(leaf)


@kernel("qdisc_lookup")
def qdisc_lookup(dev: NetDevice, handle: int) -> Qdisc | None:
    """The qdisc of *dev* with *handle*, anywhere in its tree. Kernel: qdisc_lookup()."""
    if not handle:
        return None
    root = dev.qdisc
    if root.flags & TCQ_F_BUILTIN:
        return None
    for q in qdisc_tree(root):
        if q.handle == handle:
            return q
    return None


@kernel("net/sched/sch_api.c", "qdisc_tree_reduce_backlog")
def qdisc_tree_reduce_backlog(sch: Qdisc, n: int, length: int) -> None:
    """Tell *sch*'s ancestors that *n* packets / *length* bytes left it outside
    their enqueue/dequeue (dropped, or handed on); they count *n* as drops.

    Kernel: net/sched/sch_api.c, qdisc_tree_reduce_backlog().
    """
    drops = max(n, 0)
    dev = sch.dev
    if dev is None:
        return
    while True:
        parentid = sch.parent
        if not parentid or parentid == TC_H_ROOT:
            return
        if sch.flags & TCQ_F_NOPARENT:
            return
        notify = not sch.qlen  # notify the parent only if the child became empty
        parent = qdisc_lookup(dev, TC_H_MAJ(parentid))
        if parent is None:
            return
        sch = parent
        if notify and sch.classful:
            sch.cl_qlen_notify(sch.cl_find(parentid))
        sch.qlen -= n
        sch.backlog -= length
        sch.drops += drops


@kernel("include/net/sch_generic.h", "qdisc_purge_queue")
def qdisc_purge_queue(sch: Qdisc) -> None:
    """Reset *sch* and take what it held off its ancestors' counters.

    Kernel: include/net/sch_generic.h, qdisc_purge_queue().
    """
    qlen, backlog = sch.qlen, sch.backlog
    qdisc_reset(sch)
    qdisc_tree_reduce_backlog(sch, qlen, backlog)


@kernel("include/net/sch_generic.h", "qdisc_tree_flush_backlog")
def qdisc_tree_flush_backlog(sch: Qdisc) -> None:
    """Kernel: include/net/sch_generic.h, qdisc_tree_flush_backlog()."""
    qdisc_tree_reduce_backlog(sch, sch.qlen, sch.backlog)


# ---------------------------------------------------------------------------
# The run loop (net/sched/sch_generic.c)
# ---------------------------------------------------------------------------


def qdisc_validate(q: Qdisc, skb: SkBuff | None, dev: NetDevice) -> SkBuff | None:
    """``validate_xmit_skb_list`` as the qdisc layer calls it, counting whether the
    root lock was held at the time (the mechanism of seed 5)."""
    if skb is None:
        return None
    if q.lock.owner != -1:
        q.validations_locked += 1
    else:
        q.validations_unlocked += 1
    cpu = q.net.cpus.current
    model = cpu.model
    if model is not None and q.state_line is not None:  # timed mode
        index = cpu.index
        s: SkBuff | None = skb
        while s is not None:
            owner = s.xmit_cpu
            if owner >= 0 and owner != index:
                # Queued by another CPU, dequeued here: the lines validate_xmit_skb
                # reads (the sk_buff's header fields, the first of skb_shared_info)
                # are modified in that CPU's cache.
                q.validations_remote += 1
                cpu.charge(
                    "validate_xmit_skb",
                    SKB_VALIDATE_LINES * model.machine.transfer_ns(index, owner),
                )
            s.xmit_cpu = index
            s = s.next
    return validate_xmit_skb_list(skb, dev)


@kernel("include/net/sch_generic.h", "qdisc_run_begin")
def qdisc_run_begin(q: Qdisc) -> bool:
    """Claim the right to dequeue; False if another context runs *q*.

    In timed mode "another context" includes a CPU whose section already
    ran the qdisc at this CPU's time (sections run whole, not in lock step):
    that runner would have dequeued what this CPU queues, so NET_TX is asked
    to run the qdisc when that run is over.

    Kernel: include/net/sch_generic.h, qdisc_run_begin().
    """
    if q.running:
        return False
    line = q.state_line
    if line is not None:  # timed mode
        cpu = q.net.cpus.current
        model = cpu.model
        if model is not None and model.running:
            if model.lock_free_at(q.run_iv, cpu.now) > cpu.now:
                line.read("qdisc_run_begin")
                q.netif_schedule()
                return False
            q.run_iv.hold_start = cpu.now
        line.write("qdisc_run_begin")
    q.running = True
    return True


@kernel("qdisc_run_end")
def qdisc_run_end(q: Qdisc) -> None:
    """Kernel: qdisc_run_end()."""
    q.running = False
    line = q.state_line
    if line is not None:
        line.write("qdisc_run_end")
        cpu = q.net.cpus.current
        model = cpu.model
        if model is not None and model.running:
            model.note_hold(q.run_iv, q.run_iv.hold_start, cpu.now)


@kernel("net/core/dev.c", "qdisc_pkt_len_init")
def qdisc_pkt_len(skb: SkBuff) -> int:
    """The length a qdisc accounts for *skb* (all segments of a GSO skb).

    Kernel: net/core/dev.c, qdisc_pkt_len_init() (approximated by gso_segs).
    """
    length = skb.tail - skb.data
    if not skb.gso_size:
        return length
    segs = skb.gso_segs
    if segs > 1:
        hdr_len = skb.transport_header - skb.mac_header if skb.mac_header >= 0 else 0
        length += (segs - 1) * max(hdr_len, 0)
    return length


@kernel("net/sched/sch_generic.c", "dev_requeue_skb")
def dev_requeue_skb(skb: SkBuff, q: Qdisc) -> None:
    """Put back an skb (list) the driver refused; each one counts as a requeue.

    Kernel: net/sched/sch_generic.c, dev_requeue_skb().
    """
    n = 0
    s: SkBuff | None = skb
    while s is not None:
        n += 1
        q.backlog += qdisc_pkt_len(s)
        s = s.next
    q.gso_skb = skb
    q.requeues += n
    q.qlen += n
    q.netif_schedule()


@kernel("net/sched/sch_generic.c", "try_bulk_dequeue_skb")
def try_bulk_dequeue_skb(q: Qdisc, skb: SkBuff, txq: NetdevQueue) -> int:
    """Chain more skbs behind *skb* while the BQL budget lasts; return the count.

    Kernel: net/sched/sch_generic.c, try_bulk_dequeue_skb().
    """
    if TIMED:
        spend("try_bulk_dequeue_skb")
    bytelimit = txq.dql.avail() - (skb.tail - skb.data)
    packets = 1
    tail = skb
    while bytelimit > 0:
        nskb = q.dequeue()
        if nskb is None:
            break
        bytelimit -= nskb.tail - nskb.data
        tail.next = nskb
        tail = nskb
        packets += 1
    tail.next = None
    if packets > 1:
        q.bulk_dequeues += 1
        q.bulk_packets += packets
    return packets


@kernel("net/sched/sch_generic.c", "dequeue_skb")
def dequeue_skb(q: Qdisc) -> tuple[SkBuff | None, bool, int]:
    """Take the next skb (or list) to transmit: ``(skb, validate, packets)``.

    A requeued ``gso_skb`` comes first and is not validated again. With the
    ``qdisc_validate_unlocked`` patch off, the skb is validated here, under
    the root lock, as the 3.18 bulk-dequeue series first did.

    Kernel: net/sched/sch_generic.c, dequeue_skb().
    """
    if TIMED:
        spend("dequeue_skb")
    skb = q.gso_skb
    txq = q.dev_queue
    if txq is None:  # noop: nothing is ever queued (kernel: noop_netdev_queue)
        return None, False, 0
    if skb is not None:
        if netif_xmit_frozen_or_stopped(txq):
            return None, False, 0
        q.gso_skb = None
        n = 0
        s: SkBuff | None = skb
        while s is not None:
            n += 1
            q.backlog -= qdisc_pkt_len(s)
            s = s.next
        q.qlen -= n
        return skb, False, n
    if q.flags & TCQ_F_ONETXQUEUE and netif_xmit_frozen_or_stopped(txq):
        return None, False, 0
    skb = q.dequeue()
    if skb is None:
        return None, False, 0
    packets = 1
    net = q.net
    if q.flags & TCQ_F_ONETXQUEUE and net.patches.qdisc_bulk_dequeue:
        packets = try_bulk_dequeue_skb(q, skb, txq)
    if not net.patches.qdisc_validate_unlocked:
        # Before the seed-5 patch: validated here, with the root lock held.
        return qdisc_validate(q, skb, txq.dev), False, packets
    return skb, True, packets


@kernel("net/sched/sch_generic.c", "sch_direct_xmit")
def sch_direct_xmit(
    skb: SkBuff | None, q: Qdisc, dev: NetDevice, txq: NetdevQueue, validate: bool
) -> bool:
    """Hand *skb* (or a list) to the driver; True means "keep dequeuing".

    Entered and left with the root lock held; releases it around validation
    (with ``qdisc_validate_unlocked``) and the driver call.

    Kernel: net/sched/sch_generic.c, sch_direct_xmit().
    """
    net = q.net
    cpu = net.cpus.current
    root_lock = q.lock
    root_lock.unlock(cpu)
    if TIMED:  # its work is done with the root lock released
        spend("sch_direct_xmit")
    if validate:
        skb = qdisc_validate(q, skb, dev)
    if skb is None:
        root_lock.lock(cpu)
        return True
    ret = NETDEV_TX_BUSY
    lltx = dev.lltx
    if not lltx:  # HARD_TX_LOCK
        txq._xmit_lock.lock(cpu)
        txq.xmit_lock_owner = cpu.id
    if not netif_xmit_frozen_or_stopped(txq):
        skb, ret = dev_hard_start_xmit(skb, dev, txq)
    if not lltx:  # HARD_TX_UNLOCK
        txq.xmit_lock_owner = -1
        txq._xmit_lock.unlock(cpu)
    root_lock.lock(cpu)
    if not dev_xmit_complete(ret):
        assert skb is not None
        dev_requeue_skb(skb, q)
        return False
    return not netif_xmit_frozen_or_stopped(txq)


@kernel("qdisc_restart")
def qdisc_restart(q: Qdisc) -> int:
    """Dequeue and transmit once; return the packets sent (0: stop). Kernel: qdisc_restart()."""
    if TIMED:
        spend("qdisc_restart")
    skb, validate, packets = dequeue_skb(q)
    if packets == 0:
        return 0
    txq = q.dev_queue
    assert txq is not None
    if not sch_direct_xmit(skb, q, txq.dev, txq, validate):
        return 0
    return packets


@kernel("__qdisc_run")
def __qdisc_run(q: Qdisc) -> None:
    """Dequeue until empty, stopped or out of quota. Kernel: __qdisc_run()."""
    if TIMED:
        spend("__qdisc_run")
    quota = q.net.dev_tx_weight()
    while True:
        packets = qdisc_restart(q)
        if not packets:
            return
        quota -= packets
        if quota <= 0:
            q.netif_schedule()
            return


@kernel("qdisc_run")
def qdisc_run(q: Qdisc) -> None:
    """Run *q* if nobody else is. Called with the root lock held. Kernel: qdisc_run()."""
    if qdisc_run_begin(q):
        __qdisc_run(q)
        qdisc_run_end(q)


@kernel("net/core/dev.c", "__dev_xmit_skb")
def __dev_xmit_skb(skb: SkBuff, q: Qdisc, dev: NetDevice, txq: NetdevQueue) -> int:
    """Enqueue *skb* on *q* (or bypass an empty qdisc) and run it.

    Kernel: net/core/dev.c, __dev_xmit_skb().
    """
    if TIMED:
        spend("__dev_xmit_skb")
    cpu = q.net.cpus.current
    root_lock = q.lock
    line = q.state_line
    if line is not None:
        line.read("__dev_xmit_skb")  # qdisc_is_running()
        skb.xmit_cpu = cpu.index  # written here last: hot in this CPU's cache
    contended = q.running
    if contended:
        q.busylock.lock(cpu)
    root_lock.lock(cpu)
    if q.deactivated:
        kfree_skb(skb, DropReason.QDISC_DROP)
        rc = NET_XMIT_DROP
    elif q.flags & TCQ_F_CAN_BYPASS and not q.qlen and qdisc_run_begin(q):
        # Empty qdisc: send directly (counted as passing through the qdisc).
        qdisc_bstats_update(q, skb)
        validate = True
        if not q.net.patches.qdisc_validate_unlocked:
            # Before the seed-5 patch the bypass validated under the root lock too.
            vskb = qdisc_validate(q, skb, dev)
            validate = False
        else:
            vskb = skb
        if sch_direct_xmit(vskb, q, dev, txq, validate):
            if contended:
                q.busylock.unlock(cpu)
                contended = False
            __qdisc_run(q)
        qdisc_run_end(q)
        rc = NET_XMIT_SUCCESS
    else:
        rc = q.enqueue(skb) & 0x0F
        if qdisc_run_begin(q):
            if contended:
                q.busylock.unlock(cpu)
                contended = False
            __qdisc_run(q)
            qdisc_run_end(q)
    root_lock.unlock(cpu)
    if contended:
        q.busylock.unlock(cpu)
    return rc


@kernel("include/net/sch_generic.h", "bstats_update", "skb_is_gso", "skb_shinfo")
def bstats_update(q: Qdisc, skb: SkBuff, length: int) -> None:
    """Count *skb* (of ``qdisc_pkt_len`` *length*) leaving *q*: a GSO skb
    counts as its segments, as ``tc -s`` shows them.

    Kernel: include/net/sch_generic.h, bstats_update() (``skb_is_gso(skb) ?
    skb_shinfo(skb)->gso_segs : 1``).
    """
    if TIMED:
        spend("bstats_update")
    q.bytes += length
    q.packets += skb.gso_segs if skb.gso_size and skb.gso_segs else 1
    q.skbs += 1


@kernel("qdisc_bstats_update")
def qdisc_bstats_update(q: Qdisc, skb: SkBuff) -> None:
    """Count a packet leaving the qdisc. Kernel: qdisc_bstats_update()."""
    if TIMED:
        spend("qdisc_bstats_update")
    bstats_update(q, skb, qdisc_pkt_len(skb))
