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

Why this lives in ``core`` and not ``sched``: ``dev.c`` and ``sch_generic.c``
call each other in the kernel (``__dev_xmit_skb`` ↔ ``sch_direct_xmit`` ↔
``validate_xmit_skb_list``/``dev_hard_start_xmit``), and ``core`` may not import
``sched``. So ``core`` owns ``struct Qdisc``, the run loop and the builtin
``noop``/``noqueue`` disciplines; ``sched`` holds the disciplines users pick
(pfifo_fast, …) and registers them per Net (kernel: ``register_qdisc``).

Kernel: include/net/sch_generic.h, net/sched/sch_generic.c, net/core/dev.c.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, ClassVar, Final

import attrs

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

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetDevice, NetdevQueue

__all__ = [
    "TCQ_F_BUILTIN",
    "TCQ_F_CAN_BYPASS",
    "TCQ_F_NOPARENT",
    "TCQ_F_ONETXQUEUE",
    "TC_H_ROOT",
    "NoopQdisc",
    "NoqueueQdisc",
    "Qdisc",
    "QdiscStats",
    "qdisc_run",
]

TCQ_F_BUILTIN: Final = 1
TCQ_F_INGRESS: Final = 2
TCQ_F_CAN_BYPASS: Final = 4
TCQ_F_MQROOT: Final = 8
TCQ_F_ONETXQUEUE: Final = 0x10
TCQ_F_CPUSTATS: Final = 0x20
TCQ_F_NOPARENT: Final = 0x40

TC_H_ROOT: Final = 0xFFFFFFFF
TC_H_UNSPEC: Final = 0
TC_PRIO_MAX: Final = 15


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


class Qdisc:
    """A queueing discipline (kernel: ``struct Qdisc`` + its ``Qdisc_ops``).

    Subclasses implement :meth:`enqueue`, :meth:`dequeue`, :meth:`peek` and
    :meth:`reset` with their discipline; this base holds the generic state:
    the root lock, busylock, running flag, ``gso_skb`` requeue slot and the
    counters.
    """

    kind: ClassVar[str] = ""
    can_enqueue: ClassVar[bool] = True  # False: the kernel's q->enqueue == NULL
    static_flags: ClassVar[int] = 0

    def __init__(
        self, net: Net, dev_queue: NetdevQueue | None, handle: int = 0, parent: int = TC_H_ROOT
    ) -> None:
        self.net = net
        self.dev_queue = dev_queue
        self.handle = handle
        self.parent = parent
        self.flags = self.static_flags
        dev_name = dev_queue.dev.name if dev_queue is not None else "-"
        self.lock = SpinLock(f"{dev_name}:qdisc")  # qdisc_lock(): the root lock
        self.busylock = SpinLock(f"{dev_name}:busylock")
        self.running = False  # __QDISC___STATE_RUNNING / seqcount
        self.state_sched = False  # __QDISC_STATE_SCHED
        self.deactivated = False  # __QDISC_STATE_DEACTIVATED
        self.qlen = 0  # q->q.qlen, including requeued skbs
        self.gso_skb: SkBuff | None = None  # requeued skb (list via next)
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

    # -- the discipline (Qdisc_ops) --------------------------------------------
    def enqueue(self, skb: SkBuff) -> int:
        """Queue *skb*; return NET_XMIT_SUCCESS / NET_XMIT_DROP / NET_XMIT_CN."""
        raise NotImplementedError

    def dequeue(self) -> SkBuff | None:
        """Take the next skb to send, or None."""
        raise NotImplementedError

    def peek(self) -> SkBuff | None:
        """Look at the next skb without taking it."""
        raise NotImplementedError

    def reset(self) -> None:
        """Drop everything queued (kernel: ``qdisc_reset``)."""
        skb = self.gso_skb
        self.gso_skb = None
        if skb is not None:
            kfree_skb_list(skb, DropReason.QDISC_DROP)
        self.qlen = 0
        self.backlog = 0

    def destroy(self) -> None:
        """Free private state (kernel: ``qdisc_destroy``)."""
        self.reset()

    def dump(self) -> str:
        """The options part of ``tc qdisc show`` for this discipline."""
        return ""

    # -- helpers for disciplines -----------------------------------------------
    def qdisc_drop(self, skb: SkBuff, reason: DropReason = DropReason.QDISC_DROP) -> int:
        """Count and free a packet the discipline refuses. Kernel: qdisc_drop()."""
        self.drops += 1
        kfree_skb(skb, reason)
        return NET_XMIT_DROP

    @property
    def dev(self) -> NetDevice | None:
        """Kernel: qdisc_dev()."""
        return self.dev_queue.dev if self.dev_queue is not None else None

    def netif_schedule(self) -> None:
        """Ask NET_TX to run this qdisc later. Kernel: __netif_schedule()."""
        if not self.state_sched and self.can_enqueue:
            self.state_sched = True
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
        )

    def __repr__(self) -> str:
        return f"<Qdisc {self.kind} {self.handle >> 16:x}: qlen={self.qlen}>"


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


class NoqueueQdisc(Qdisc):
    """``noqueue``: no queue at all; ``dev_queue_xmit`` calls the driver directly.

    The default of virtual devices (``IFF_NO_QUEUE``: veth, dummy, loopback,
    tunnels). Kernel: net/sched/sch_generic.c, noqueue_qdisc_ops / noqueue_init.
    """

    kind = "noqueue"
    can_enqueue = False
    static_flags = TCQ_F_BUILTIN

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
    return validate_xmit_skb_list(skb, dev)


def qdisc_run_begin(q: Qdisc) -> bool:
    """Claim the right to dequeue; False if another context runs *q*. Kernel: qdisc_run_begin()."""
    if q.running:
        return False
    q.running = True
    return True


def qdisc_run_end(q: Qdisc) -> None:
    """Kernel: qdisc_run_end()."""
    q.running = False


def qdisc_pkt_len(skb: SkBuff) -> int:
    """The length a qdisc accounts for *skb* (all segments of a GSO skb).

    Kernel: net/core/dev.c, qdisc_pkt_len_init() (approximated by gso_segs).
    """
    length = skb.tail - skb.data
    segs = skb.gso_segs
    if segs > 1:
        hdr_len = skb.transport_header - skb.mac_header if skb.mac_header >= 0 else 0
        length += (segs - 1) * max(hdr_len, 0)
    return length


def dev_requeue_skb(skb: SkBuff, q: Qdisc) -> None:
    """Put back an skb (list) the driver refused. Kernel: dev_requeue_skb()."""
    n = 0
    s: SkBuff | None = skb
    while s is not None:
        n += 1
        q.backlog += s.tail - s.data
        s = s.next
    q.gso_skb = skb
    q.requeues += 1
    q.qlen += n
    q.netif_schedule()


def try_bulk_dequeue_skb(q: Qdisc, skb: SkBuff, txq: NetdevQueue) -> int:
    """Chain more skbs behind *skb* while the BQL budget lasts; return the count.

    Kernel: net/sched/sch_generic.c, try_bulk_dequeue_skb().
    """
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


def dequeue_skb(q: Qdisc) -> tuple[SkBuff | None, bool, int]:
    """Take the next skb (or list) to transmit: ``(skb, validate, packets)``.

    A requeued ``gso_skb`` comes first and is not validated again. With the
    ``qdisc_validate_unlocked`` patch off, the skb is validated here, under
    the root lock, as the 3.18 bulk-dequeue series first did.

    Kernel: net/sched/sch_generic.c, dequeue_skb().
    """
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
            q.backlog -= s.tail - s.data
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


def qdisc_restart(q: Qdisc) -> int:
    """Dequeue and transmit once; return the packets sent (0: stop). Kernel: qdisc_restart()."""
    skb, validate, packets = dequeue_skb(q)
    if packets == 0:
        return 0
    txq = q.dev_queue
    assert txq is not None
    if not sch_direct_xmit(skb, q, txq.dev, txq, validate):
        return 0
    return packets


def __qdisc_run(q: Qdisc) -> None:
    """Dequeue until empty, stopped or out of quota. Kernel: __qdisc_run()."""
    quota = q.net.dev_tx_weight()
    while True:
        packets = qdisc_restart(q)
        if not packets:
            return
        quota -= packets
        if quota <= 0:
            q.netif_schedule()
            return


def qdisc_run(q: Qdisc) -> None:
    """Run *q* if nobody else is. Called with the root lock held. Kernel: qdisc_run()."""
    if qdisc_run_begin(q):
        __qdisc_run(q)
        qdisc_run_end(q)


def __dev_xmit_skb(skb: SkBuff, q: Qdisc, dev: NetDevice, txq: NetdevQueue) -> int:
    """Enqueue *skb* on *q* (or bypass an empty qdisc) and run it.

    Kernel: net/core/dev.c, __dev_xmit_skb().
    """
    cpu = q.net.cpus.current
    root_lock = q.lock
    contended = q.running
    if contended:
        q.busylock.lock(cpu)
    root_lock.lock(cpu)
    if q.deactivated:
        kfree_skb(skb, DropReason.QDISC_DROP)
        rc = NET_XMIT_DROP
    elif q.flags & TCQ_F_CAN_BYPASS and not q.qlen and qdisc_run_begin(q):
        # Empty qdisc: send directly (counted as passing through the qdisc).
        q.bytes += skb.tail - skb.data
        q.packets += 1
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


def qdisc_bstats_update(q: Qdisc, skb: SkBuff) -> None:
    """Count a packet leaving the qdisc. Kernel: qdisc_bstats_update()."""
    q.bytes += qdisc_pkt_len(skb)
    q.packets += 1
