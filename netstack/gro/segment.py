"""Software GSO: cutting a large skb into MSS-sized segments.

Theory of operation: ``skb_gso_segment`` (core/xmit.py) pulls the link
header and calls the L3 offload (``inet_gso_segment``), which pulls the IP
header and calls the L4 one (``tcp4_gso_segment`` → ``tcp_gso_segment``),
which pulls the TCP header and calls :func:`skb_segment` here. Each segment is
a new skb: a copy of all the headers (link to transport) followed by ``mss``
bytes of payload (the last one shorter), linked by ``next``; its ``data`` is
at the link header again. The layers then fix their own headers on the way
back out: TCP the sequence numbers, flags and checksums, IP the total length,
the incrementing ID and the header checksum.

Whether a segment's L4 checksum is left to the device (CHECKSUM_PARTIAL) or
computed now depends on the device's features, as ``skb_segment`` decides
with ``can_checksum_protocol``.

Kernel: net/core/skbuff.c (skb_segment), include/linux/skbuff.h
(SKB_GSO_CB, gso_make_checksum, gso_reset_checksum).
"""

from __future__ import annotations

from typing import Final

from netstack.core.features import can_checksum_protocol
from netstack.core.skbuff import CHECKSUM_NONE, CHECKSUM_PARTIAL, SkBuff
from netstack.sites import TIMED, kernel, spend

__all__ = ["GSO_BY_FRAGS", "SkbGsoCb", "csum_len_adjust", "skb_gso_cb", "skb_segment"]

GSO_BY_FRAGS: Final = 0xFFFF


class SkbGsoCb:
    """Scratch of an skb being segmented (kernel: ``struct skb_gso_cb``, ``SKB_GSO_CB``).

    ``encap_level`` counts the bytes of tunnel headers already pulled, so the
    inner layers know they are encapsulated (and use ``hw_enc_features``).
    """

    __slots__ = ("encap_level",)

    def __init__(self) -> None:
        self.encap_level = 0


@kernel("SKB_GSO_CB")
def skb_gso_cb(skb: SkBuff) -> SkbGsoCb:
    """The skb's GSO scratch, created on first use. Kernel: SKB_GSO_CB()."""
    cb = skb.cb
    if not isinstance(cb, SkbGsoCb):
        cb = skb.cb = SkbGsoCb()
    return cb


def csum_len_adjust(check: int, oldlen: int, newlen: int) -> int:
    """Move a stored pseudo-header sum from length *oldlen* to *newlen*.

    The pseudo-header contributes its length as a 16-bit-word sum, so the
    folded sum in a CHECKSUM_PARTIAL header changes by ``newlen - oldlen`` in
    ones'-complement arithmetic (kernel: the ``delta`` of tcp_gso_segment).
    """
    s = check + (~((oldlen >> 16) + (oldlen & 0xFFFF)) & 0xFFFF)
    s += (newlen >> 16) + (newlen & 0xFFFF)
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return (s & 0xFFFF) + (s >> 16)


@kernel("net/core/skbuff.c", "skb_segment")
def skb_segment(head_skb: SkBuff, features: int, proto: int) -> SkBuff | None:
    """Cut *head_skb* (``data`` at its payload) into ``gso_size`` segments.

    *proto* is the L3 EtherType whose checksum offload the device is asked
    about. Returns the first segment of a ``next``-linked list; each has the
    headers from ``mac_header`` to ``data`` copied in front of its payload,
    ``data`` at its link header, and the header offsets and metadata of the
    original. None on error.

    Kernel: net/core/skbuff.c, skb_segment().
    """
    if TIMED:
        spend("skb_segment")
    mss = head_skb.gso_size
    mac = head_skb.mac_header
    data = head_skb.data
    tail = head_skb.tail
    if mss <= 0 or mac < 0 or mac > data:
        return None
    doffset = data - mac
    buf = head_skb.buf
    hdr = buf[mac:data]
    csum = can_checksum_protocol(features, proto)
    summed = CHECKSUM_PARTIAL if csum else CHECKSUM_NONE
    headroom = mac
    nh = head_skb.network_header - mac
    th = head_skb.transport_header - mac
    first: SkBuff | None = None
    prev: SkBuff | None = None
    protocol = head_skb.protocol
    priority = head_skb.priority
    dev = head_skb.dev
    qm = head_skb.queue_mapping
    h = head_skb.hash
    dst = head_skb.dst
    mark = head_skb.mark
    offset = data
    while offset < tail:
        size = tail - offset
        if size > mss:
            size = mss
        start = headroom + doffset
        nbuf = bytearray(start + size)
        nbuf[headroom:start] = hdr
        nbuf[start:] = buf[offset : offset + size]
        nskb = SkBuff(nbuf, headroom, start + size)
        nskb.mac_header = headroom
        nskb.network_header = headroom + nh
        nskb.transport_header = headroom + th
        nskb.protocol = protocol
        nskb.priority = priority
        nskb.dev = dev
        nskb.queue_mapping = qm
        if h:
            nskb.hash = h
        if mark:
            nskb.mark = mark
        if dst is not None:
            nskb.dst = dst.hold()  # __copy_skb_header(): skb_dst_copy()
        nskb.ip_summed = summed
        if prev is None:
            first = nskb
        else:
            prev.next = nskb
        prev = nskb
        offset += size
    return first
