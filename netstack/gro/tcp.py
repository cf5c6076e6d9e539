"""TCP's GRO and GSO callbacks, the parts both IP families share.

Theory of operation — receive (``tcp_gro_receive``, called by
``tcp4_gro_receive``/``tcp6_gro_receive`` once the checksum is checked): find
the held skb of the same port pair; the new segment joins it only if nothing
but the sequence number, the length, and the FIN/PSH/CWR flags differ (flag
word with window and data offset, ACK number, every option byte, the IP-level
``flush``/``flush_id`` verdict), if it is no longer than the flow's MSS (the
first segment's length), and if it starts where the held data ends. A segment
that is shorter than the MSS, or carries PSH/URG/RST/SYN/FIN, is merged (when
it may be) and then completes the flow. ``tcp_gro_complete`` turns the merged
skb into a CHECKSUM_PARTIAL GSO skb of ``count`` segments.

Transmit (``tcp_gso_segment``, under ``tcp4_gso_segment``): cut the payload
into ``gso_size`` pieces (:func:`~netstack.gro.segment.skb_segment`), give
each its sequence number, clear FIN and PSH on all but the last and CWR on
all but the first, and fix each checksum for its own length: the pseudo-header
sum when the device will finish it, the whole checksum otherwise. The
segments are charged to the sending socket, so TCP Small Queues keep seeing
them while they sit in qdiscs.

Kernel: net/ipv4/tcp_offload.c (tcp_gro_receive, tcp_gro_complete,
tcp_gso_segment — shared by net/ipv6/tcpv6_offload.c).
"""

from __future__ import annotations

import struct
from typing import Final

from netstack.core.features import NETIF_F_GSO_ROBUST, SKB_GSO_DODGY, net_gso_ok
from netstack.core.skbuff import CHECKSUM_PARTIAL, SkBuff
from netstack.gro.core import NapiGroCb, skb_gro_receive
from netstack.gro.segment import csum_len_adjust, skb_segment
from netstack.sites import TIMED, kernel, spend
from netstack.wire.checksum import csum_fold, csum_partial

__all__ = ["tcp_gro_complete", "tcp_gro_receive", "tcp_gso_segment"]

_I: Final = struct.Struct("!I")
_H: Final = struct.Struct("!H")

# tcp_flag_word() bits (the 32-bit word at offset 12, host order)
TCP_FLAG_FIN: Final = 0x00010000
TCP_FLAG_SYN: Final = 0x00020000
TCP_FLAG_RST: Final = 0x00040000
TCP_FLAG_PSH: Final = 0x00080000
TCP_FLAG_ACK: Final = 0x00100000
TCP_FLAG_URG: Final = 0x00200000
TCP_FLAG_ECE: Final = 0x00400000
TCP_FLAG_CWR: Final = 0x00800000
_NOT_CWR_FIN_PSH: Final = 0xFFFFFFFF & ~(TCP_FLAG_CWR | TCP_FLAG_FIN | TCP_FLAG_PSH)
_FINAL_FLAGS: Final = TCP_FLAG_URG | TCP_FLAG_PSH | TCP_FLAG_RST | TCP_FLAG_SYN | TCP_FLAG_FIN
SKB_GSO_TCP_ECN: Final = 1 << 2


@kernel("net/ipv4/tcp_offload.c", "tcp_gro_receive")
def tcp_gro_receive(head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """Try to merge the TCP segment *skb* into a held skb of its flow.

    Returns the held skb to complete now (its flow ends), or None. Sets
    ``NAPI_GRO_CB(skb).flush`` when *skb* itself must not be held.

    Kernel: net/ipv4/tcp_offload.c, tcp_gro_receive().
    """
    if TIMED:
        spend("tcp_gro_receive")
    cb: NapiGroCb = skb.cb
    off = cb.off
    buf = skb.buf
    tail = skb.tail
    flush = 1
    pp: SkBuff | None = None
    if tail - off < 20:
        cb.flush |= 1
        return None
    thlen = (buf[off + 12] >> 4) * 4
    if thlen < 20 or tail - off < thlen:
        cb.flush |= 1
        return None
    th = off
    cb.off = off + thlen  # skb_gro_pull()
    length = tail - cb.off
    flags = _I.unpack_from(buf, th + 12)[0]
    ports = buf[th : th + 4]
    p: SkBuff | None = None
    for q in head:
        qcb: NapiGroCb = q.cb
        if not qcb.same_flow:
            continue
        th2 = q.transport_header
        if q.buf[th2 : th2 + 4] != ports:
            qcb.same_flow = 0
            continue
        p = q
        break
    mss = 1
    if p is not None:
        pcb: NapiGroCb = p.cb
        pbuf = p.buf
        th2 = p.transport_header
        flush = pcb.flush
        flush |= flags & TCP_FLAG_CWR
        flush |= (flags ^ _I.unpack_from(pbuf, th2 + 12)[0]) & _NOT_CWR_FIN_PSH
        flush |= int(buf[th + 8 : th + 12] != pbuf[th2 + 8 : th2 + 12])  # ack_seq
        if thlen > 20:
            flush |= int(buf[th + 20 : th + thlen] != pbuf[th2 + 20 : th2 + thlen])
        # The second frame decides between an atomic flow with a fixed IP ID
        # and an incrementing ID (4.7+, SKB_GSO_TCP_FIXEDID).
        if pcb.flush_id != 1 or pcb.count != 1 or not pcb.is_atomic:
            flush |= pcb.flush_id
        else:
            pcb.is_atomic = 0
        mss = p.gso_size
        if skb.gso_size:
            flush |= int(mss != skb.gso_size)
        else:
            flush |= int(length - 1 >= mss)
        seq = _I.unpack_from(buf, th + 4)[0]
        seq2 = _I.unpack_from(pbuf, th2 + 4)[0]
        flush |= int((seq2 + (p.tail - pcb.off)) & 0xFFFFFFFF != seq)
        if flush or skb_gro_receive(p, skb):
            mss = 1
        else:
            p.buf[th2 + 13] |= (flags >> 16) & 0x09  # FIN|PSH carried to the aggregate
    if skb.gso_size:
        flush = int(length != cb.count * skb.gso_size)
    else:
        flush = int(length < mss)
    flush |= int(bool(flags & _FINAL_FLAGS))
    if p is not None and (not cb.same_flow or flush):
        pp = p
    cb.flush |= flush
    return pp


@kernel("net/ipv4/tcp_offload.c", "tcp_gro_complete")
def tcp_gro_complete(skb: SkBuff) -> None:
    """Turn a merged skb into a GSO skb the stack can take (or forward).

    Kernel: net/ipv4/tcp_offload.c, tcp_gro_complete().
    """
    th = skb.transport_header
    skb.csum_start = th
    skb.csum_offset = 16
    skb.ip_summed = CHECKSUM_PARTIAL
    cb: NapiGroCb = skb.cb
    skb.gso_segs = cb.count
    if skb.buf[th + 13] & 0x80:  # CWR
        skb.gso_type |= SKB_GSO_TCP_ECN
    if skb.encapsulation:
        skb.inner_transport_header = th


@kernel("net/ipv4/tcp_offload.c", "tcp_gso_segment")
def tcp_gso_segment(skb: SkBuff, features: int) -> SkBuff | None:
    """Segment a TCP GSO skb whose ``data`` is at its TCP header.

    The checksum field must hold the pseudo-header sum of the whole skb
    (CHECKSUM_PARTIAL, as ``tcp_v4_send_check`` leaves it). Returns the
    segment list, *skb* itself when the device may take it as it is (a
    ``SKB_GSO_DODGY`` skb the hardware segments robustly), or None on error.

    Kernel: net/ipv4/tcp_offload.c, tcp_gso_segment().
    """
    th = skb.transport_header
    buf = skb.buf
    if skb.tail - th < 20:
        return None
    thlen = (buf[th + 12] >> 4) * 4
    if thlen < 20 or skb.tail - th < thlen:
        return None
    if skb.ip_summed == CHECKSUM_PARTIAL and skb.csum_start != th:
        return None
    oldlen = skb.tail - skb.data
    skb.data += thlen  # __skb_pull(skb, thlen)
    mss = skb.gso_size
    length = skb.tail - skb.data
    if length <= mss:
        skb.data -= thlen
        return None
    if skb.gso_type & SKB_GSO_DODGY and net_gso_ok(features | NETIF_F_GSO_ROBUST, skb.gso_type):
        skb.gso_segs = (length + mss - 1) // mss  # packet from an untrusted source
        skb.data -= thlen
        return skb
    segs = skb_segment(skb, features, skb.protocol)
    skb.data -= thlen
    if segs is None:
        return None
    check = _H.unpack_from(buf, th + 16)[0]
    seq = _I.unpack_from(buf, th + 4)[0]
    sk = skb.sk
    destructor = skb.destructor
    copy_destructor = destructor is not None and sk is not None
    s: SkBuff | None = segs
    first = True
    while s is not None:
        sb = s.buf
        sth = s.transport_header
        _I.pack_into(sb, sth + 4, seq)
        if s.next is not None:
            sb[sth + 13] &= ~0x09  # th->fin = th->psh = 0
        if not first:
            sb[sth + 13] &= ~0x80  # th->cwr = 0
        seglen = s.tail - sth
        newcheck = csum_len_adjust(check, oldlen, seglen)
        if s.ip_summed == CHECKSUM_PARTIAL:
            _H.pack_into(sb, sth + 16, newcheck)  # gso_reset_checksum()
            s.csum_start = sth
            s.csum_offset = 16
        else:
            _H.pack_into(sb, sth + 16, newcheck)
            _H.pack_into(sb, sth + 16, csum_fold(csum_partial(sb, sth, s.tail)))
        if copy_destructor:  # TCP Small Queues: the segments stay charged to the socket
            s.sk = sk
            size = s.truesize
            s.wmem_charge = size
            sk.sk_wmem_alloc += size
            s.destructor = destructor
        seq = (seq + seglen - thlen) & 0xFFFFFFFF
        first = False
        s = s.next
    return segs
