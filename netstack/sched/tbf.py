"""``tbf``: the token bucket filter — shape a queue to a rate, allowing bursts.

Theory of operation: tokens are kept in nanoseconds of transmission time. The
bucket holds at most ``buffer`` ns (the time to send ``burst`` bytes at
``rate``); it refills with elapsed time. The head packet of the inner queue
(a bfifo of ``limit`` bytes, or any grafted child: ``tbf`` is classful with
one class ``H:1``) may leave when the bucket holds its transmission time
``psched_l2t_ns(rate, len)``; otherwise tbf arms its watchdog for the moment
the deficit will be covered, counts an *overlimit* and returns nothing — the
hrtimer reschedules the root qdisc on NET_TX when that time comes. With a
``peakrate``, a second bucket of ``mtu``/``minburst`` bytes limits how fast
a burst itself drains.

A packet longer than the bucket (``max_size``) can never be sent and is
dropped at enqueue (GSO packets are segmented first if their segments fit).
The ``latency`` option is ``tc``'s: it turns latency into the inner bfifo's
byte limit (``rate * latency + burst``).

Kernel: net/sched/sch_tbf.c.
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Any

from netstack.core.features import NETIF_F_GSO_MASK, SKB_GSO_TCPV4, SKB_GSO_TCPV6
from netstack.core.hrtimer import ktime_get_ns
from netstack.core.netdevice import NET_XMIT_DROP, NET_XMIT_SUCCESS
from netstack.core.qdisc import (
    TC_H_MAKE,
    TC_H_ROOT,
    TCQ_F_BUILTIN,
    TCQ_F_INVISIBLE,
    ClassDump,
    ClassStats,
    Qdisc,
    QdiscWatchdog,
    bstats_update,
    net_xmit_drop_count,
    qdisc_dequeue_peeked,
    qdisc_pkt_len,
    qdisc_purge_queue,
    qdisc_reset,
    qdisc_tree_reduce_backlog,
)
from netstack.core.skbuff import SkBuff, consume_skb
from netstack.core.xmit import netif_skb_features, skb_gso_segment
from netstack.errors import ConfigError
from netstack.sched.fifo import BfifoQdisc, fifo_create_dflt, fifo_set_limit
from netstack.sched.pkt_sched import TbfOptions, TcRatespec, TcTbfQopt
from netstack.sched.psched import PSCHED_NS2TICKS, PSCHED_TICKS2NS, PschedRatecfg, psched_mtu
from netstack.sites import kernel

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetdevQueue

__all__ = ["TbfQdisc"]

U32_MAX = 0xFFFFFFFF


@kernel("skb_gso_mac_seglen")
def skb_gso_mac_seglen(skb: SkBuff) -> int:
    """Length of each segment of a GSO skb, headers included. Kernel: skb_gso_mac_seglen()."""
    hdr_len = skb.transport_header - skb.mac_header
    if skb.gso_type & (SKB_GSO_TCPV4 | SKB_GSO_TCPV6):
        thlen = (skb.buf[skb.transport_header + 12] >> 4) * 4
    else:
        thlen = 8  # UDP
    return hdr_len + thlen + skb.gso_size


def _einval() -> ConfigError:
    return ConfigError("RTNETLINK answers: Invalid argument", errno.EINVAL)


@kernel("net/sched/sch_tbf.c")
class TbfQdisc(Qdisc):
    """Kernel: net/sched/sch_tbf.c, tbf_qdisc_ops."""

    kind = "tbf"
    classful = True
    has_change = True

    def __init__(
        self, net: Net, dev_queue: NetdevQueue | None, handle: int = 0, parent: int = TC_H_ROOT
    ) -> None:
        super().__init__(net, dev_queue, handle, parent)
        self.max_size = 0
        self.buffer = 0  # ns
        self.mtu = 0  # ns
        self.rate = PschedRatecfg()
        self.peak = PschedRatecfg()
        self.tokens = 0
        self.ptokens = 0
        self.t_c = 0
        self.qdisc: Qdisc = net.noop_qdisc
        self.watchdog = QdiscWatchdog(self)

    @kernel("tbf_init")
    def init(self, opt: Any) -> None:
        """Kernel: tbf_init()."""
        if opt is None:
            raise _einval()
        self.t_c = ktime_get_ns(self.net)
        self.change(opt)

    @kernel("tbf_change")
    def change(self, opt: Any) -> None:
        """Apply rate/burst/limit; validate first, change nothing on error.

        Kernel: tbf_change().
        """
        if not isinstance(opt, TbfOptions) or opt.parms is None:
            raise _einval()
        qopt: TcTbfQopt = opt.parms
        buffer = min(PSCHED_TICKS2NS(qopt.buffer), U32_MAX)
        mtu = min(PSCHED_TICKS2NS(qopt.mtu), U32_MAX)
        rate = PschedRatecfg(qopt.rate, opt.rate64 or 0)
        if opt.burst is not None:
            max_size = opt.burst
            buffer = rate.l2t_ns(max_size)
        else:
            max_size = min(rate.t2l(buffer), U32_MAX)
        peak = PschedRatecfg()
        if qopt.peakrate.rate:
            peak = PschedRatecfg(qopt.peakrate, opt.prate64 or 0)
            if peak.rate_bytes_ps <= rate.rate_bytes_ps:
                # pr_warn_ratelimited("sch_tbf: peakrate %llu is lower than or equals to rate")
                raise _einval()
            if opt.pburst is not None:
                max_size = min(max_size, opt.pburst)
                mtu = peak.l2t_ns(opt.pburst)
            else:
                max_size = min(max_size, peak.t2l(mtu))
        dev = self.dev
        if dev is not None and max_size < psched_mtu(dev):
            self.net.log.warning(
                "tbf_burst_below_mtu",
                msg=f"sch_tbf: burst {max_size} is lower than device {dev.name} mtu "
                f"({psched_mtu(dev)}) !",
            )
        if not max_size:
            raise _einval()
        child: Qdisc | None = None
        if self.qdisc is not self.net.noop_qdisc:
            fifo_set_limit(self.qdisc, qopt.limit)
        elif qopt.limit > 0:
            child = fifo_create_dflt(self, BfifoQdisc, qopt.limit)
        if child is not None:
            old = self.qdisc
            qdisc_tree_reduce_backlog(old, old.qlen, old.backlog)
            old.destroy()
            self.qdisc = child
            child.flags |= TCQ_F_INVISIBLE
        self.limit = qopt.limit
        self.mtu = mtu if opt.pburst is not None else PSCHED_TICKS2NS(qopt.mtu)
        self.max_size = max_size
        self.buffer = buffer if opt.burst is not None else PSCHED_TICKS2NS(qopt.buffer)
        self.tokens = self.buffer
        self.ptokens = self.mtu
        self.rate = rate
        self.peak = peak

    @kernel("tbf_segment")
    def _segment(self, skb: SkBuff) -> int:
        """Send a too-big GSO skb as segments that each fit. Kernel: tbf_segment()."""
        prev_len = qdisc_pkt_len(skb)
        features = netif_skb_features(skb) & ~NETIF_F_GSO_MASK
        segs = skb_gso_segment(skb, features)
        if segs is None:
            return self.qdisc_drop(skb)
        nb = 0
        length = 0
        while segs is not None:
            nxt = segs.next
            segs.next = None
            seg_len = qdisc_pkt_len(segs)
            length += seg_len
            ret = self.qdisc.enqueue(segs)
            if ret != NET_XMIT_SUCCESS:
                if net_xmit_drop_count(ret):
                    self.drops += 1
            else:
                nb += 1
                self.backlog += seg_len
            segs = nxt
        self.qlen += nb
        if nb > 1:
            qdisc_tree_reduce_backlog(self, 1 - nb, prev_len - length)
        if segs is not skb:
            consume_skb(skb)
        return NET_XMIT_SUCCESS if nb > 0 else NET_XMIT_DROP

    @kernel("tbf_enqueue")
    def enqueue(self, skb: SkBuff) -> int:
        """Kernel: tbf_enqueue()."""
        length = qdisc_pkt_len(skb)
        if length > self.max_size:
            if skb.gso_size and skb_gso_mac_seglen(skb) <= self.max_size:
                return self._segment(skb)
            return self.qdisc_drop(skb)
        ret = self.qdisc.enqueue(skb)
        if ret != NET_XMIT_SUCCESS:
            if net_xmit_drop_count(ret):
                self.drops += 1
            return ret
        self.backlog += length
        self.qlen += 1
        return NET_XMIT_SUCCESS

    @kernel("tbf_dequeue")
    def dequeue(self) -> SkBuff | None:
        """Send the head packet if the bucket(s) cover it, else arm the watchdog.

        Kernel: tbf_dequeue().
        """
        child = self.qdisc
        skb = child.peek()
        if skb is None:
            return None
        length = qdisc_pkt_len(skb)
        now = ktime_get_ns(self.net)
        toks = min(now - self.t_c, self.buffer)
        ptoks = 0
        peak = self.peak.rate_bytes_ps
        if peak:
            ptoks = min(toks + self.ptokens, self.mtu) - self.peak.l2t_ns(length)
        toks = min(toks + self.tokens, self.buffer) - self.rate.l2t_ns(length)
        if toks >= 0 and ptoks >= 0:
            skb = qdisc_dequeue_peeked(child)
            if skb is None:
                return None
            self.t_c = now
            self.tokens = toks
            self.ptokens = ptoks
            self.backlog -= length
            self.qlen -= 1
            bstats_update(self, skb, length)
            return skb
        self.watchdog.schedule_ns(now + max(-toks, -ptoks))
        # "Maybe we have a shorter packet in the queue, which can be sent now.
        # … We MUST NOT reorder packets under these circumstances."
        self.overlimits += 1
        return None

    @kernel("tbf_reset")
    def reset(self) -> None:
        """Kernel: tbf_reset()."""
        qdisc_reset(self.qdisc)
        super().reset()
        self.t_c = ktime_get_ns(self.net)
        self.tokens = self.buffer
        self.ptokens = self.mtu
        self.watchdog.cancel()

    @kernel("tbf_destroy")
    def destroy(self) -> None:
        """Kernel: tbf_destroy()."""
        self.watchdog.cancel()
        self.qdisc.destroy()
        super().destroy()

    @kernel("tbf_dump")
    def dump(self) -> TbfOptions:
        """Kernel: tbf_dump()."""
        self.backlog = self.qdisc.backlog
        parms = TcTbfQopt(
            rate=self.rate.getrate(),
            peakrate=self.peak.getrate() if self.peak else TcRatespec(),
            limit=self.limit,
            buffer=PSCHED_NS2TICKS(self.buffer),
            mtu=PSCHED_NS2TICKS(self.mtu),
        )
        rate64 = self.rate.rate_bytes_ps if self.rate.rate_bytes_ps >= 1 << 32 else None
        prate64 = (
            self.peak.rate_bytes_ps if self.peak and self.peak.rate_bytes_ps >= 1 << 32 else None
        )
        return TbfOptions(parms, rate64=rate64, prate64=prate64)

    # -- the one class ------------------------------------------------------------------
    @kernel("tbf_find")
    def cl_find(self, classid: int) -> int:
        """Kernel: tbf_find()."""
        return 1

    @kernel("tbf_leaf")
    def cl_leaf(self, cl: int) -> Qdisc | None:
        """Kernel: tbf_leaf()."""
        return self.qdisc

    @kernel("tbf_graft")
    def cl_graft(self, cl: int, new: Qdisc | None) -> Qdisc | None:
        """Kernel: tbf_graft()."""
        if new is None:
            new = self.net.noop_qdisc
        old = self.qdisc
        self.qdisc = new
        if not old.flags & TCQ_F_BUILTIN:
            qdisc_purge_queue(old)
        return old

    @kernel("tbf_walk")
    def cl_walk(self) -> list[int]:
        """Kernel: tbf_walk()."""
        return [1]

    @kernel("tbf_dump_class")
    def cl_dump(self, cl: int) -> ClassDump:
        """Kernel: tbf_dump_class()."""
        return ClassDump(TC_H_MAKE(self.handle, 1), self.handle, self.qdisc.handle)

    def cl_dump_stats(self, cl: int) -> ClassStats | None:
        """tbf reports no class statistics (no dump_stats in its class ops)."""
        return None
