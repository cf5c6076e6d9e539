"""``pfifo_fast``: three FIFO bands chosen by ``skb->priority``, band 0 first.

Theory of operation: ``prio2band`` maps the 16 TC priorities to a band
(interactive traffic, TC_PRIO_INTERACTIVE = 6, goes to band 0; best effort to
band 1; bulk to band 2). A socket's priority comes from ``SO_PRIORITY`` or
from its ``IP_TOS`` (``rt_tos2priority``); a forwarded packet's from its TOS.
Dequeue takes from the lowest non-empty band, found in O(1) from a 3-bit
bitmap. The queue holds at most ``dev->tx_queue_len`` packets in total, read
at every enqueue, so ``ip link set DEV txqueuelen N`` takes effect at once;
beyond that it tail-drops. ``TCQ_F_CAN_BYPASS`` lets an empty pfifo_fast be
skipped entirely (``__dev_xmit_skb``'s bypass). It has no options: ``tc``
shows its fixed priomap.

Kernel: net/sched/sch_generic.c, pfifo_fast_ops (the classic, root-locked
version that the seeds' kernels had; 4.16+ made it lockless with one
``skb_array`` of ``txqueuelen`` per band).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, Final

from netstack.core.netdevice import NET_XMIT_SUCCESS
from netstack.core.qdisc import (
    TC_H_ROOT,
    TC_PRIO_MAX,
    TCQ_F_CAN_BYPASS,
    Qdisc,
    bstats_update,
    qdisc_pkt_len,
)
from netstack.core.skbuff import DropReason, SkBuff, kfree_skb
from netstack.sched.pkt_sched import TcPrioQopt
from netstack.sites import TIMED, kernel, spend

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetdevQueue

__all__ = ["PFIFO_FAST_BANDS", "PRIO2BAND", "PfifoFastQdisc"]

PFIFO_FAST_BANDS: Final = 3
PRIO2BAND: Final = (1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1)
BITMAP2BAND: Final = (-1, 0, 1, 0, 2, 0, 1, 0)


@kernel("net/sched/sch_generic.c")
class PfifoFastQdisc(Qdisc):
    """Kernel: net/sched/sch_generic.c, pfifo_fast."""

    kind = "pfifo_fast"
    static_flags = TCQ_F_CAN_BYPASS

    def __init__(
        self, net: Net, dev_queue: NetdevQueue | None, handle: int = 0, parent: int = TC_H_ROOT
    ) -> None:
        super().__init__(net, dev_queue, handle, parent)
        self.bands: tuple[deque[SkBuff], ...] = tuple(deque() for _ in range(PFIFO_FAST_BANDS))
        self.bitmap = 0

    @kernel("pfifo_fast_init")
    def init(self, opt: Any) -> None:
        """Options are ignored. Kernel: pfifo_fast_init()."""

    @kernel("pfifo_fast_enqueue")
    def enqueue(self, skb: SkBuff) -> int:
        """Kernel: pfifo_fast_enqueue()."""
        if TIMED:
            spend("pfifo_fast_enqueue")
        dev = self.dev_queue.dev if self.dev_queue is not None else None
        if self.qlen < (dev.tx_queue_len if dev is not None else 1000):
            band = PRIO2BAND[skb.priority & TC_PRIO_MAX]
            self.bands[band].append(skb)
            self.bitmap |= 1 << band
            self.qlen += 1
            self.backlog += skb.tail - skb.data if not skb.gso_size else qdisc_pkt_len(skb)
            return NET_XMIT_SUCCESS
        return self.qdisc_drop(skb)

    @kernel("pfifo_fast_dequeue")
    def dequeue(self) -> SkBuff | None:
        """Kernel: pfifo_fast_dequeue()."""
        if TIMED:
            spend("pfifo_fast_dequeue")
        band = BITMAP2BAND[self.bitmap]
        if band < 0:
            return None
        q = self.bands[band]
        skb = q.popleft()
        if not q:
            self.bitmap &= ~(1 << band)
        self.qlen -= 1
        length = skb.tail - skb.data if not skb.gso_size else qdisc_pkt_len(skb)
        self.backlog -= length
        bstats_update(self, skb, length)
        return skb

    @kernel("pfifo_fast_peek")
    def peek(self) -> SkBuff | None:
        """Kernel: pfifo_fast_peek()."""
        band = BITMAP2BAND[self.bitmap]
        return self.bands[band][0] if band >= 0 else None

    @kernel("pfifo_fast_reset")
    def reset(self) -> None:
        """Kernel: pfifo_fast_reset()."""
        for q in self.bands:
            while q:
                kfree_skb(q.popleft(), DropReason.QUEUE_PURGE)
        self.bitmap = 0
        super().reset()

    @kernel("pfifo_fast_dump")
    def dump(self) -> TcPrioQopt:
        """``bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1``. Kernel: pfifo_fast_dump()."""
        return TcPrioQopt(PFIFO_FAST_BANDS, PRIO2BAND)
