"""``pfifo`` and ``bfifo``: one FIFO limited in packets or bytes.

Kernel: net/sched/sch_fifo.c.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from netstack.core.netdevice import NET_XMIT_SUCCESS
from netstack.core.qdisc import TC_H_ROOT, TCQ_F_CAN_BYPASS, Qdisc
from netstack.core.skbuff import DropReason, SkBuff, kfree_skb

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetdevQueue

__all__ = ["BfifoQdisc", "PfifoQdisc"]


class PfifoQdisc(Qdisc):
    """``pfifo limit N`` (packets; default ``tx_queue_len``). Kernel: pfifo_enqueue()."""

    kind = "pfifo"
    static_flags = TCQ_F_CAN_BYPASS

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
        dev = self.dev
        default = max(dev.tx_queue_len, 1) if dev is not None else 1000
        self.limit = default if limit is None else limit

    def over_limit(self, skb: SkBuff) -> bool:
        return self.qlen >= self.limit

    def enqueue(self, skb: SkBuff) -> int:
        if self.over_limit(skb):
            return self.qdisc_drop(skb)
        self.q.append(skb)
        self.qlen += 1
        self.backlog += skb.tail - skb.data
        return NET_XMIT_SUCCESS

    def dequeue(self) -> SkBuff | None:
        if not self.q:
            return None
        skb = self.q.popleft()
        length = skb.tail - skb.data
        self.qlen -= 1
        self.backlog -= length
        self.bytes += length
        self.packets += 1
        return skb

    def peek(self) -> SkBuff | None:
        return self.q[0] if self.q else None

    def reset(self) -> None:
        while self.q:
            kfree_skb(self.q.popleft(), DropReason.QDISC_DROP)
        super().reset()

    def dump(self) -> str:
        return f"limit {self.limit}p"


class BfifoQdisc(PfifoQdisc):
    """``bfifo limit BYTES`` (default ``tx_queue_len * mtu``). Kernel: bfifo_enqueue()."""

    kind = "bfifo"

    def __init__(
        self,
        net: Net,
        dev_queue: NetdevQueue | None,
        handle: int = 0,
        parent: int = TC_H_ROOT,
        limit: int | None = None,
    ) -> None:
        super().__init__(net, dev_queue, handle, parent, limit=limit)
        if limit is None:
            dev = self.dev
            self.limit = (max(dev.tx_queue_len, 1) * dev.mtu) if dev is not None else 1514000

    def over_limit(self, skb: SkBuff) -> bool:
        return self.backlog + (skb.tail - skb.data) > self.limit

    def dump(self) -> str:
        return f"limit {self.limit}b"
