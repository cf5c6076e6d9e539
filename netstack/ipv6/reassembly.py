"""IPv6 reassembly: fragment queues keyed by (identification, source, destination[, iif]).

Theory of operation: ``ipv6_frag_rcv`` is the handler of next header 44. A
Fragment header without offset and M flag is an atomic fragment: the
header is skipped and the packet goes on. Otherwise the first fragment
must hold every header through the upper-layer one (RFC 8200 §4.5, else
ICMPv6 parameter problem code 3), a non-last fragment must be a multiple
of 8 bytes and nothing may end beyond 65535 (else parameter problem code 0
pointing at the payload length or the fragment offset). Fragments join the
queue of their datagram (link-local and multicast destinations also key on
the interface); the first one arms the queue's timer (``ip6frag_time``,
60 s). Any overlap drops the whole datagram (RFC 5722), an exact duplicate
just the fragment. When the last fragment has arrived and there is no
hole, the datagram is rebuilt in the skb that completed it (as
``skb_morph`` does), without the Fragment header, and handed back to the
header walk of ``ip6_input``. A timeout counts ``ReasmTimeout`` and
``ReasmFails`` and, if the first fragment had arrived, sends ICMPv6 time
exceeded (fragment reassembly time exceeded) to the source.

Kernel: net/ipv6/reassembly.c, net/ipv4/inet_fragment.c, include/net/ipv6_frag.h.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Final

from netstack.core.inet_fragment import IPFRAG_DUP, IPFRAG_OK, FragRuns
from netstack.core.skbuff import CHECKSUM_NONE, DropReason, SkBuff, consume_skb, kfree_skb
from netstack.ipv6.ip6_input import IP6SKB_FRAGMENTED, ip6cb
from netstack.sites import kernel
from netstack.wire.icmpv6 import (
    ICMPV6_EXC_FRAGTIME,
    ICMPV6_HDR_FIELD,
    ICMPV6_HDR_INCOMP,
    ICMPV6_TIME_EXCEED,
)
from netstack.wire.ipv6 import (
    FRAG_HLEN,
    IP6_MF,
    IP6_OFFSET,
    IPV6_ADDR_LINKLOCAL,
    IPV6_ADDR_MULTICAST,
    IPV6_HLEN,
    IPV6_MAXPLEN,
    NEXTHDR_ICMP,
    NEXTHDR_TCP,
    NEXTHDR_UDP,
    addr_at,
    ipv6_addr_type,
    ipv6_skip_exthdr,
)

if TYPE_CHECKING:
    from netstack.core.timer import TimerList
    from netstack.ipv6.netns import Ipv6

__all__ = ["Frag6Queue", "Ip6Frags", "ipv6_frag_rcv"]

_H: Final = struct.Struct("!H")
_HI: Final = struct.Struct("!HI")


class Frag6Queue:
    """One datagram being reassembled (kernel: ``struct frag_queue``)."""

    __slots__ = (
        "first_in",
        "frags",
        "iif",
        "key",
        "last_in",
        "len",
        "max_size",
        "meat",
        "mem",
        "nhoffset",
        "timer",
    )

    def __init__(self, key: tuple[int, int, int, int]) -> None:
        self.key = key
        self.frags = FragRuns()  # (offset, end, skb) in runs, by offset
        self.len = 0
        self.meat = 0
        self.first_in = False
        self.last_in = False
        self.nhoffset = 0
        self.max_size = 0
        self.mem = 0
        self.iif = 0
        self.timer: TimerList | None = None


class Ip6Frags:
    """The IPv6 reassembly queues of one Net (kernel: ``netns_frags`` for IPv6).

    Twin: netstack.ipv4.ip_fragment.IpFrags.
    """

    def __init__(self, ipv6: Ipv6) -> None:
        self.ipv6 = ipv6
        self.queues: dict[tuple[int, int, int, int], Frag6Queue] = {}
        self.mem = 0

    @kernel("inet_frag_kill", "inet_frag_destroy")
    def _kill(self, q: Frag6Queue, reason: DropReason | None) -> None:
        """Kernel: inet_frag_kill() + inet_frag_destroy()."""
        if self.queues.get(q.key) is q:
            del self.queues[q.key]
        if q.timer is not None:
            q.timer.delete()
        for _, _, f in q.frags:
            if reason is None:
                consume_skb(f)
            else:
                kfree_skb(f, reason)
        q.frags.clear()
        self.mem -= q.mem
        q.mem = 0

    @kernel("ip6_frag_expire", "ip6frag_expire_frag_queue")
    def ip6_frag_expire(self, q: Frag6Queue) -> None:
        """The reassembly timer fired.

        Twin: netstack.ipv4.ip_fragment.IpFrags.ip_expire.
        Kernel: ip6_frag_expire() / ip6frag_expire_frag_queue().
        """
        if self.queues.get(q.key) is not q:
            return
        ipv6 = self.ipv6
        mib = ipv6.ip6_mib
        mib.ReasmFails += 1
        mib.ReasmTimeout += 1
        del self.queues[q.key]
        first = q.frags.head()
        if q.first_in and first is not None and first[0] == 0:
            head = first[2]  # inet_frag_pull_head(): freed below with the rest
            dev = ipv6.net.dev_get_by_index(q.iif)
            if dev is not None:
                head.dev = dev
                head.data = head.network_header
                ipv6.icmpv6_send(head, ICMPV6_TIME_EXCEED, ICMPV6_EXC_FRAGTIME, 0)
        self._kill(q, DropReason.FRAG_REASM_TIMEOUT)


@kernel("include/net/ipv6_frag.h", "ipv6frag_thdr_truncated")
def _thdr_truncated(skb: SkBuff, start: int, nexthdr: int) -> bool:
    """Does the first fragment stop before the upper-layer header ends?

    Kernel: include/net/ipv6_frag.h, ipv6frag_thdr_truncated().
    """
    offset, nexthdr, frag_off = ipv6_skip_exthdr(skb.buf, start, nexthdr, skb.tail)
    if offset < 0 or frag_off & IP6_OFFSET:
        return False
    if nexthdr == NEXTHDR_TCP:
        offset += 20
    elif nexthdr == NEXTHDR_UDP:
        offset += 8
    elif nexthdr == NEXTHDR_ICMP:
        offset += 4
    else:
        offset += 1
    return offset > skb.tail


@kernel("net/ipv6/reassembly.c", "ipv6_frag_rcv")
def ipv6_frag_rcv(ipv6: Ipv6, skb: SkBuff) -> int:
    """The Fragment header handler: 1 = go on with (the reassembled) *skb*, -1 = consumed.

    Twin: netstack.ipv4.ip_fragment.IpFrags.ip_defrag.
    Kernel: net/ipv6/reassembly.c, ipv6_frag_rcv().
    """
    mib = ipv6.ip6_mib
    buf = skb.buf
    nh = skb.network_header
    fh = skb.transport_header
    cb = ip6cb(skb)
    mib.ReasmReqds += 1
    if skb.tail < fh + FRAG_HLEN:
        mib.InHdrErrors += 1
        ipv6.icmpv6_param_prob(skb, ICMPV6_HDR_FIELD, fh - nh)
        return -1
    frag_off, ident = _HI.unpack_from(buf, fh + 2)
    if not frag_off & (IP6_OFFSET | IP6_MF):
        # "It is not a fragmented frame" (an atomic fragment)
        skb.transport_header = fh + FRAG_HLEN
        mib.ReasmOKs += 1
        cb.nhoff = fh - nh
        cb.flags |= IP6SKB_FRAGMENTED
        cb.frag_max_size = ((buf[nh + 4] << 8) | buf[nh + 5]) + IPV6_HLEN
        return 1
    # RFC 8200 §4.5: the first fragment must hold all headers through the upper layer
    if _thdr_truncated(skb, fh, buf[nh + 6]):
        mib.InHdrErrors += 1
        ipv6.icmpv6_param_prob(skb, ICMPV6_HDR_INCOMP, 0)
        return -1
    saddr = addr_at(buf, nh + 8)
    daddr = addr_at(buf, nh + 24)
    dev = skb.dev
    iif = dev.ifindex if dev is not None else 0
    if not ipv6_addr_type(daddr) & (IPV6_ADDR_MULTICAST | IPV6_ADDR_LINKLOCAL):
        iif = 0
    key = (ident, saddr, daddr, iif)
    frags = ipv6.frags
    if frags.mem > ipv6.ip6frag_high_thresh:
        # inet_frag_find() finds nothing above the threshold: ipv6_frag_rcv() frees
        # the fragment with kfree_skb() (no reason), as for a failed allocation
        mib.ReasmFails += 1
        kfree_skb(skb, DropReason.NOT_SPECIFIED)
        return -1
    q = frags.queues.get(key)
    if q is None:
        q = Frag6Queue(key)
        frags.queues[key] = q
        clock = ipv6.net.clock
        timer = ipv6.net.timers.timer(lambda: frags.ip6_frag_expire(q), "ip6frag")
        timer.mod(clock.jiffies + ipv6.ip6frag_time * clock.hz)
        q.timer = timer
    return ip6_frag_queue(ipv6, q, skb)


@kernel("ip6_frag_queue")
def ip6_frag_queue(ipv6: Ipv6, q: Frag6Queue, skb: SkBuff) -> int:
    """Insert one fragment; reassemble when complete.

    Twin: netstack.ipv4.ip_fragment.IpFrags.ip_frag_queue.
    Kernel: ip6_frag_queue().
    """
    mib = ipv6.ip6_mib
    frags = ipv6.frags
    buf = skb.buf
    nh = skb.network_header
    fh = skb.transport_header
    frag_off = _H.unpack_from(buf, fh + 2)[0]
    offset = frag_off & IP6_OFFSET
    payload_len = (buf[nh + 4] << 8) | buf[nh + 5]
    end = offset + (payload_len - (fh + FRAG_HLEN - (nh + IPV6_HLEN)))
    if end > IPV6_MAXPLEN:
        mib.InHdrErrors += 1
        ipv6.icmpv6_param_prob(skb, ICMPV6_HDR_FIELD, fh + 2 - nh)
        return -1
    if not frag_off & IP6_MF:
        # "If we already have some bits beyond end or have different end,
        # the segment is corrupted."
        if end < q.len or (q.last_in and end != q.len):
            return _discard_fq(ipv6, q, skb, DropReason.FRAG_OVERLAP)
        q.last_in = True
        q.len = end
    else:
        if end & 0x7:
            # "RFC2460 says always send parameter problem in this case. -DaveM"
            mib.InHdrErrors += 1
            ipv6.icmpv6_param_prob(skb, ICMPV6_HDR_FIELD, 4)
            return -1
        if end > q.len:
            if q.last_in:
                return _discard_fq(ipv6, q, skb, DropReason.FRAG_OVERLAP)
            q.len = end
    if end == offset:
        return _discard_fq(ipv6, q, skb, DropReason.NOT_SPECIFIED)
    # keep only this fragment's data (pskb_trim_rcsum)
    skb.tail = fh + FRAG_HLEN + (end - offset)
    err = q.frags.insert(skb, offset, end)
    if err != IPFRAG_OK:
        if err == IPFRAG_DUP:
            kfree_skb(skb, DropReason.DUP_FRAG)
            return -1
        return _discard_fq(ipv6, q, skb, DropReason.FRAG_OVERLAP)
    dev = skb.dev
    if dev is not None:
        q.iif = dev.ifindex
    q.meat += end - offset
    size = skb.truesize
    q.mem += size
    frags.mem += size
    fragsize = skb.tail - nh
    if fragsize > q.max_size:
        q.max_size = fragsize
    if offset == 0:
        q.nhoffset = ip6cb(skb).nhoff
        q.first_in = True
    if q.first_in and q.last_in and q.meat == q.len:
        return ip6_frag_reasm(ipv6, q, skb)
    dst = skb.dst
    if dst is not None:  # skb_dst_drop()
        skb.dst = None
        dst.release()
    return -1  # queued: the fragment now belongs to the queue


def _discard_fq(ipv6: Ipv6, q: Frag6Queue, skb: SkBuff, reason: DropReason) -> int:
    if reason == DropReason.FRAG_OVERLAP:
        ipv6.reasm_overlaps += 1
    ipv6.frags._kill(q, reason)
    ipv6.ip6_mib.ReasmFails += 1
    kfree_skb(skb, reason)
    return -1


@kernel("ip6_frag_reasm")
def ip6_frag_reasm(ipv6: Ipv6, q: Frag6Queue, skb: SkBuff) -> int:
    """Rebuild the datagram in *skb* (which completed it).

    Kernel: ip6_frag_reasm().
    """
    mib = ipv6.ip6_mib
    frags = ipv6.frags
    lowest = q.frags.head()
    assert lowest is not None
    first = lowest[2]
    fb = first.buf
    fnh = first.network_header
    ffh = first.transport_header
    unfrag = ffh - fnh  # IPv6 header + unfragmentable extension headers
    payload_len = unfrag - IPV6_HLEN + q.len
    if payload_len > IPV6_MAXPLEN:
        ipv6.net.log.debug("ip6_frag_reasm: payload len", payload_len=payload_len)
        frags._kill(q, DropReason.PKT_TOO_BIG)
        mib.ReasmFails += 1
        return -1
    nexthdr = fb[ffh]  # the Fragment header's next header
    headroom = 128  # room for a link-layer header if the datagram is forwarded (MAX_HEADER)
    total = unfrag + q.len
    new = bytearray(headroom + total)
    new[headroom : headroom + unfrag] = fb[fnh:ffh]
    for offset, end, f in q.frags:
        src = f.transport_header + FRAG_HLEN
        start = headroom + unfrag + offset
        new[start : start + (end - offset)] = f.buf[src : src + (end - offset)]
    new[headroom + q.nhoffset] = nexthdr
    _H.pack_into(new, headroom + 4, payload_len)
    # skb_morph(): the completing skb becomes the datagram
    others = [f for _, _, f in q.frags if f is not skb]
    for f in others:
        consume_skb(f)
    frags.mem -= q.mem
    q.mem = 0
    if frags.queues.get(q.key) is q:
        del frags.queues[q.key]
    if q.timer is not None:
        q.timer.delete()
    q.frags.clear()
    ref = skb._dataref
    if ref is not None:
        ref[0] -= 1
        skb._dataref = None
    skb.buf = new
    skb.data = headroom + unfrag
    skb.tail = headroom + total
    skb.network_header = headroom
    skb.transport_header = headroom + unfrag
    skb.mac_header = -1
    skb.ip_summed = CHECKSUM_NONE
    if skb.dst is None and first.dst is not None:
        skb.dst = first.dst.hold()
    cb = ip6cb(skb)
    cb.nhoff = q.nhoffset
    cb.flags |= IP6SKB_FRAGMENTED
    cb.frag_max_size = q.max_size
    mib.ReasmOKs += 1
    return 1
