"""``pfifo``, ``bfifo`` and ``pfifo_head_drop``: one FIFO limited in packets or bytes.

Theory of operation: a single queue; ``pfifo`` refuses a packet when
``limit`` packets are queued, ``bfifo`` when it would push the backlog over
``limit`` bytes (tail drop), ``pfifo_head_drop`` makes room by dropping the
*oldest* packet instead and returns ``NET_XMIT_CN``. Without options the
limit is the device's ``txqueuelen`` at creation (times the link MTU for
bfifo); ``ip link set … txqueuelen`` later does not change it. A fifo whose
limit can hold a packet may be bypassed when empty (``TCQ_F_CAN_BYPASS``).

These are also the default children of the classful disciplines: prio's
bands are pfifo, tbf's inner queue is a bfifo.

Kernel: net/sched/sch_fifo.c.
"""

from __future__ import annotations

import errno
from collections import deque
from typing import TYPE_CHECKING, Any

from netstack.core.netdevice import NET_XMIT_CN, NET_XMIT_SUCCESS
from netstack.core.qdisc import (
    TC_H_MAKE,
    TC_H_ROOT,
    TCQ_F_CAN_BYPASS,
    Qdisc,
    bstats_update,
    qdisc_pkt_len,
    qdisc_tree_reduce_backlog,
)
from netstack.core.skbuff import DropReason, SkBuff, kfree_skb
from netstack.errors import ConfigError
from netstack.sched.pkt_sched import TcFifoQopt
from netstack.sched.psched import psched_mtu
from netstack.sites import kernel

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetdevQueue

__all__ = ["BfifoQdisc", "PfifoHeadDropQdisc", "PfifoQdisc", "fifo_create_dflt", "fifo_set_limit"]


class PfifoQdisc(Qdisc):
    """``pfifo limit N`` (packets; default ``txqueuelen``). Kernel: pfifo_qdisc_ops."""

    kind = "pfifo"
    has_change = True

    def __init__(
        self,
        net: Net,
        dev_queue: NetdevQueue | None,
        handle: int = 0,
        parent: int = TC_H_ROOT,
        limit: int | None = None,
    ) -> None:
        super().__init__(net, dev_queue, handle, parent)
        self.q: deque[SkBuff] = deque()
        if limit is None:
            self._fifo_init(None)
        else:
            self._fifo_init(TcFifoQopt(limit))

    def _default_limit(self) -> int:
        dev = self.dev
        return dev.tx_queue_len if dev is not None else 1000

    @kernel("net/sched/sch_fifo.c", "__fifo_init")
    def _fifo_init(self, opt: Any) -> None:
        """Kernel: net/sched/sch_fifo.c, __fifo_init()."""
        if opt is None:
            self.limit = self._default_limit()
        elif not isinstance(opt, TcFifoQopt):
            raise ConfigError("RTNETLINK answers: Invalid argument", errno.EINVAL)
        else:
            self.limit = opt.limit & 0xFFFFFFFF
        if self._bypass_ok():
            self.flags |= TCQ_F_CAN_BYPASS
        else:
            self.flags &= ~TCQ_F_CAN_BYPASS

    def _bypass_ok(self) -> bool:
        return self.limit >= 1

    @kernel("fifo_init")
    def init(self, opt: Any) -> None:
        """Kernel: fifo_init()."""
        self._fifo_init(opt)

    @kernel("fifo_init")
    def change(self, opt: Any) -> None:
        """Kernel: fifo_init() (the ``change`` op)."""
        self._fifo_init(opt)

    @kernel("pfifo_enqueue")
    def enqueue(self, skb: SkBuff) -> int:
        """Tail-drop at ``limit`` packets. Kernel: pfifo_enqueue()."""
        if self.qlen < self.limit:
            self.q.append(skb)
            self.qlen += 1
            self.backlog += qdisc_pkt_len(skb)
            return NET_XMIT_SUCCESS
        return self.qdisc_drop(skb)

    @kernel("qdisc_dequeue_head")
    def dequeue(self) -> SkBuff | None:
        """Kernel: qdisc_dequeue_head()."""
        if not self.q:
            return None
        skb = self.q.popleft()
        length = qdisc_pkt_len(skb)
        self.qlen -= 1
        self.backlog -= length
        bstats_update(self, skb, length)
        return skb

    @kernel("qdisc_peek_head")
    def peek(self) -> SkBuff | None:
        """Kernel: qdisc_peek_head()."""
        return self.q[0] if self.q else None

    @kernel("qdisc_reset_queue")
    def reset(self) -> None:
        """Kernel: qdisc_reset_queue()."""
        while self.q:
            kfree_skb(self.q.popleft(), DropReason.QUEUE_PURGE)
        super().reset()

    @kernel("fifo_dump")
    def dump(self) -> TcFifoQopt:
        """Kernel: fifo_dump()."""
        return TcFifoQopt(self.limit)


class BfifoQdisc(PfifoQdisc):
    """``bfifo limit BYTES`` (default ``txqueuelen * (mtu + link header)``).

    Kernel: bfifo_qdisc_ops.
    """

    kind = "bfifo"

    def _default_limit(self) -> int:
        dev = self.dev
        return dev.tx_queue_len * psched_mtu(dev) if dev is not None else 1514000

    def _bypass_ok(self) -> bool:
        dev = self.dev
        return self.limit >= (psched_mtu(dev) if dev is not None else 1514)

    @kernel("bfifo_enqueue")
    def enqueue(self, skb: SkBuff) -> int:
        """Tail-drop beyond ``limit`` bytes. Kernel: bfifo_enqueue()."""
        length = qdisc_pkt_len(skb)
        if self.backlog + length <= self.limit:
            self.q.append(skb)
            self.qlen += 1
            self.backlog += length
            return NET_XMIT_SUCCESS
        return self.qdisc_drop(skb)


class PfifoHeadDropQdisc(PfifoQdisc):
    """``pfifo_head_drop limit N``: when full, drop the oldest packet.

    Kernel: pfifo_head_drop_qdisc_ops.
    """

    kind = "pfifo_head_drop"

    @kernel("pfifo_tail_enqueue")
    def enqueue(self, skb: SkBuff) -> int:
        """Kernel: pfifo_tail_enqueue()."""
        if self.limit == 0:
            return self.qdisc_drop(skb)
        if self.qlen < self.limit:
            return super().enqueue(skb)
        prev_backlog = self.backlog
        if self.q:  # __qdisc_queue_drop_head()
            old = self.q.popleft()
            self.qlen -= 1
            self.backlog -= qdisc_pkt_len(old)
            kfree_skb(old, DropReason.QDISC_DROP)
        self.drops += 1
        self.q.append(skb)
        self.qlen += 1
        self.backlog += qdisc_pkt_len(skb)
        qdisc_tree_reduce_backlog(self, 0, prev_backlog - self.backlog)
        return NET_XMIT_CN


@kernel("fifo_set_limit")
def fifo_set_limit(q: Qdisc, limit: int) -> None:
    """Change a fifo child's limit (tbf keeps its bfifo in step). Kernel: fifo_set_limit()."""
    if isinstance(q, PfifoQdisc):
        q.change(TcFifoQopt(limit))


@kernel("fifo_create_dflt")
def fifo_create_dflt(sch: Qdisc, cls: type[PfifoQdisc], limit: int) -> PfifoQdisc:
    """A fifo child of *sch* (class 1) with *limit*. Kernel: fifo_create_dflt()."""
    q = cls(sch.net, sch.dev_queue, 0, TC_H_MAKE(sch.handle, 1))
    fifo_set_limit(q, limit)
    return q
