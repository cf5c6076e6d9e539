"""IPv4 reassembly: fragment queues keyed by (saddr, daddr, id, protocol).

Theory of operation: each fragment joins the queue of its datagram; the
first one arms the queue's timer (``ipfrag_time``, 30 s). Fragments are kept
in runs of contiguous fragments sorted by offset
(:class:`~netstack.core.inet_fragment.FragRuns`, the kernel's rb-tree: an
in-order fragment is appended in O(1), any other placed in O(log n)); an
overlap with data already queued drops the whole datagram (as Linux does
since 4.19, RFC 5722's rule for IPv6), a fragment wholly inside data already
queued is a duplicate, dropped alone. When the last fragment (MF clear) has
arrived and there are no holes, the datagram is rebuilt in one skb (header
of the first fragment, total length and checksum fixed) and delivered. A
timer expiry counts ``ReasmFails``/``ReasmTimeout`` and, if the first
fragment had arrived, sends ICMP time exceeded (fragment reassembly). Queued
memory is bounded by ``ipfrag_high_thresh``: beyond it every fragment is
refused until timeouts free memory: ``ReasmFails``, and ``ip_defrag`` frees
it with a plain ``kfree_skb()`` (``NOT_SPECIFIED``, as a Linux 6.18
``skb:kfree_skb`` trace shows at ``ip_defrag``), not as a reassembly
timeout.

Kernel: net/ipv4/ip_fragment.c, net/ipv4/inet_fragment.c.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Final

from netstack.core.dst import skb_dst_drop
from netstack.core.inet_fragment import IPFRAG_DUP, IPFRAG_OK, FragRuns
from netstack.core.skbuff import CHECKSUM_NONE, DropReason, SkBuff, consume_skb, kfree_skb
from netstack.sites import TIMED, kernel, spend
from netstack.wire.checksum import ip_fast_csum
from netstack.wire.icmp import ICMP_EXC_FRAGTIME, ICMP_TIME_EXCEEDED
from netstack.wire.ipv4 import IP_MF, IP_OFFSET

if TYPE_CHECKING:
    from netstack.core.timer import TimerList
    from netstack.ipv4.netns import Ipv4

__all__ = ["IpFrags", "Ipq"]

_H: Final = struct.Struct("!H")
_II: Final = struct.Struct("!II")


class Ipq:
    """One datagram being reassembled (kernel: ``struct ipq``)."""

    __slots__ = ("frags", "has_first", "has_last", "key", "len", "meat", "mem", "timer")

    def __init__(self, key: tuple[int, int, int, int]) -> None:
        self.key = key
        self.frags = FragRuns()  # (offset, end, skb) in runs, by offset
        self.len = 0  # total payload length, known once the last fragment came
        self.meat = 0  # payload bytes received
        self.has_first = False
        self.has_last = False
        self.mem = 0
        self.timer: TimerList | None = None


class IpFrags:
    """The reassembly queues of one Net (kernel: ``netns_frags`` for IPv4).

    Twin: netstack.ipv6.reassembly.Ip6Frags.
    """

    def __init__(self, ipv4: Ipv4) -> None:
        self.ipv4 = ipv4
        self.queues: dict[tuple[int, int, int, int], Ipq] = {}
        self.mem = 0

    @kernel("ip_defrag")
    def ip_defrag(self, skb: SkBuff) -> SkBuff | None:
        """Queue a fragment; return the whole datagram once complete.

        Twin: netstack.ipv6.reassembly.ipv6_frag_rcv.
        Kernel: ip_defrag().
        """
        if TIMED:
            spend("ip_defrag")
        ipv4 = self.ipv4
        ip = ipv4.ip
        ip.ReasmReqds += 1
        buf = skb.buf
        nh = skb.network_header
        ihl = (buf[nh] & 0xF) * 4
        saddr, daddr = _II.unpack_from(buf, nh + 12)
        ident = (buf[nh + 4] << 8) | buf[nh + 5]
        proto = buf[nh + 9]
        key = (saddr, daddr, ident, proto)
        if self.mem > ipv4.ipfrag_high_thresh:
            # inet_frag_find() finds nothing above ipfrag_high_thresh; ip_defrag()
            # frees the fragment with kfree_skb() (no reason) and returns -ENOMEM
            ip.ReasmFails += 1
            kfree_skb(skb, DropReason.NOT_SPECIFIED)
            return None
        q = self.queues.get(key)
        if q is None:
            q = Ipq(key)
            self.queues[key] = q
            timer = ipv4.net.timers.timer(lambda: self.ip_expire(q), "ipfrag")
            timer.mod(ipv4.net.clock.jiffies + ipv4.ipfrag_time * ipv4.net.clock.hz)
            q.timer = timer
        return self.ip_frag_queue(q, skb, ihl, saddr)

    @kernel("net/ipv4/ip_fragment.c", "ip_frag_queue")
    def ip_frag_queue(self, q: Ipq, skb: SkBuff, ihl: int, saddr: int) -> SkBuff | None:
        """Add one fragment to its queue; the datagram once complete.

        Twin: netstack.ipv6.reassembly.ip6_frag_queue.
        Kernel: net/ipv4/ip_fragment.c, ip_frag_queue().
        """
        ipv4 = self.ipv4
        buf = skb.buf
        nh = skb.network_header
        field = (buf[nh + 6] << 8) | buf[nh + 7]
        offset = (field & IP_OFFSET) << 3
        end = offset + (skb.tail - nh - ihl)
        if not field & IP_MF:
            # "If we already have some bits beyond end or have different end,
            # the segment is corrupted."
            if end < q.len or (q.has_last and end != q.len):
                self._fail(q, skb, DropReason.FRAG_OVERLAP)
                return None
            q.has_last = True
            q.len = end
        else:
            if end & 7:
                end &= ~7  # non-last fragments carry multiples of 8
            if end > q.len:
                if q.has_last:  # "Some bits beyond end -> corruption."
                    self._fail(q, skb, DropReason.FRAG_OVERLAP)
                    return None
                q.len = end
        if end == offset:  # discard_qp: the kernel gives no reason either
            self._fail(q, skb, DropReason.NOT_SPECIFIED)
            return None
        skb.tail = nh + ihl + (end - offset)
        err = q.frags.insert(skb, offset, end)
        if err != IPFRAG_OK:
            if err == IPFRAG_DUP:
                kfree_skb(skb, DropReason.DUP_FRAG)
                return None
            ipv4.ipext.ReasmOverlaps += 1
            self._fail(q, skb, DropReason.FRAG_OVERLAP)
            return None
        q.meat += end - offset
        size = skb.truesize
        q.mem += size
        self.mem += size
        if offset == 0:
            q.has_first = True
        if q.has_first and q.has_last and q.meat == q.len:
            if ihl + q.len > 65535:
                # "Oversized IP packet" (the ping of death): counted and dropped
                if ipv4.net.net_ratelimit():  # net_info_ratelimited()
                    ipv4.net.log.info("oversized_ip_packet", saddr=saddr, length=ihl + q.len)
                ipv4.ip.ReasmFails += 1
                self._kill(q, DropReason.PKT_TOO_BIG)
                return None
            return self._reasm(q, skb)
        if skb.dst is not None:
            skb_dst_drop(skb)  # a queued fragment keeps no route
        return None

    def _fail(self, q: Ipq, skb: SkBuff, reason: DropReason) -> None:
        """The discard_qp label: the datagram is dropped. Fragments already queued
        go with *reason* for an overlap (netstack's FRAG_OVERLAP), else they are
        consumed, as inet_frag_destroy() frees a queue killed without INET_FRAG_DROP.
        """
        self.ipv4.ip.ReasmFails += 1
        kfree_skb(skb, reason)
        self._kill(q, reason if reason == DropReason.FRAG_OVERLAP else None)

    def _kill(self, q: Ipq, reason: DropReason | None) -> None:
        self.queues.pop(q.key, None)
        if q.timer is not None:
            q.timer.delete()
        for _, _, f in q.frags:
            if reason is None:
                consume_skb(f)
            else:
                kfree_skb(f, reason)
        self.mem -= q.mem
        q.frags.clear()

    @kernel("ip_frag_reasm")
    def _reasm(self, q: Ipq, last: SkBuff) -> SkBuff:
        """Rebuild the datagram; it takes the route of *last*, the fragment that
        completed it (``ip_frag_queue`` keeps that one's ``_skb_refdst`` across the
        rebuild; the queued ones kept none). Kernel: ip_frag_reasm()."""
        if TIMED:
            spend("ip_frag_reasm")
        lowest = q.frags.head()
        assert lowest is not None
        first = lowest[2]
        fb = first.buf
        nh = first.network_header
        ihl = (fb[nh] & 0xF) * 4
        head = first.data if first.data < nh else nh
        headroom = nh - head
        total = ihl + q.len
        buf = bytearray(headroom + total)
        buf[: headroom + ihl] = fb[head : nh + ihl]
        for offset, end, f in q.frags:
            fnh = f.network_header
            fihl = (f.buf[fnh] & 0xF) * 4
            start = headroom + ihl + offset
            buf[start : start + (end - offset)] = f.buf[fnh + fihl : fnh + fihl + (end - offset)]
        skb = SkBuff(buf, headroom, headroom + total)
        skb.network_header = headroom
        skb.transport_header = headroom + ihl
        skb.mac_header = first.mac_header - head if first.mac_header >= head else -1
        skb.dev = first.dev
        skb.protocol = first.protocol
        skb.pkt_type = first.pkt_type
        skb.priority = first.priority
        skb.ip_summed = CHECKSUM_NONE
        skb.dst = last.dst  # the completing fragment's route passes, with its kind
        skb.dst_noref = last.dst_noref
        last.dst = None
        last.dst_noref = False
        _H.pack_into(buf, headroom + 2, total)
        _H.pack_into(buf, headroom + 6, 0)
        buf[headroom + 10] = 0
        buf[headroom + 11] = 0
        _H.pack_into(buf, headroom + 10, ip_fast_csum(buf, headroom, ihl))
        self._kill(q, None)
        self.ipv4.ip.ReasmOKs += 1
        return skb

    @kernel("ip_expire")
    def ip_expire(self, q: Ipq) -> None:
        """The reassembly timer fired.

        Twin: netstack.ipv6.reassembly.Ip6Frags.ip6_frag_expire.
        Kernel: ip_expire().
        """
        if self.queues.get(q.key) is not q:
            return
        ipv4 = self.ipv4
        ipv4.ip.ReasmFails += 1
        ipv4.ip.ReasmTimeout += 1
        first = q.frags.head()
        if q.has_first and first is not None and first[0] == 0:
            head = first[2]
            head.data = head.network_header
            # "skb has no dst, perform route lookup again"
            buf = head.buf
            nh = head.network_header
            saddr, daddr = _II.unpack_from(buf, nh + 12)
            dev = head.dev
            assert dev is not None
            if not ipv4.ip_route_input_noref(head, daddr, saddr, buf[nh + 1], dev):
                ipv4.icmp_send(head, ICMP_TIME_EXCEEDED, ICMP_EXC_FRAGTIME, 0)
        self._kill(q, DropReason.FRAG_REASM_TIMEOUT)
