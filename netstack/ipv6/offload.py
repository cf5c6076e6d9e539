"""IPv6's GRO and GSO callbacks: the IPv6 layer, and TCP over IPv6.

Theory of operation — GRO: ``ipv6_gro_receive`` is the ``offload_base`` entry
for ETH_P_IPV6 (and, under a SIT tunnel, IPv4's entry for protocol 41 calls it
for the inner header). It takes packets whose next header has a GRO handler
in ``inet6_offloads`` (TCP), after pulling the extension headers registered
with ``INET6_PROTO_GSO_EXTHDR`` — destination options and routing
(``ipv6_gro_pull_exthdrs``); anything else, a hop-by-hop header included
(kernels before 6.6 pulled that one too), is flushed (delivered alone). A
payload length that does not match the packet flushes it. Against each held
skb: a different version/flow label, address or next header/hop limit, or
different extension headers, means another flow (``same_flow = 0``); a
different traffic class flushes the held one. IPv6 has
no IP ID, so the ``flush_id`` an outer IPv4 header (SIT) may have stored is
cleared when the packet is atomic — the line Tom Herbert's 2014 series added
("ipv6: Clear flush_id to make GRO work", under ``Patches.ipip_sit_gro``).
The header's bytes are taken out of a CHECKSUM_COMPLETE sum
(``skb_gro_postpull_rcsum``) and TCP decides the merge: ``tcp6_gro_receive``
checks the checksum over the IPv6 pseudo-header, then the shared
``tcp_gro_receive``. ``ipv6_gro_complete`` rewrites the payload length of a
merged skb; ``tcp6_gro_complete`` stores the pseudo-header sum for
CHECKSUM_PARTIAL and marks it ``SKB_GSO_TCPV6``.

GSO: ``ipv6_gso_segment`` pulls the 40-byte header and the extension headers
(``ipv6_gso_pull_exthdrs``: hop-by-hop, destination options, routing), has
the transport cut the skb (``tcp6_gso_segment`` → ``tcp_gso_segment``, which
copies every header in front of the payload into each segment), then gives
each segment its payload length (extension headers counted); there is no ID
or header checksum to fix, so segments differ only in their payload length
and TCP fields — exactly what sending MSS-sized packets gives. (The Fragment
header rewrite of UDP fragmentation offload, removed from Linux in 4.14, is
not modelled.)

Kernel: net/ipv6/ip6_offload.c (ipv6_gro_receive, ipv6_gro_complete,
ipv6_gso_segment, ipv6_gso_pull_exthdrs, ipv6_gro_pull_exthdrs),
net/ipv6/exthdrs_offload.c, net/ipv6/tcpv6_offload.c (tcp6_*).
"""

from __future__ import annotations

import struct
from types import MethodType
from typing import TYPE_CHECKING, Final

from netstack.core.features import SKB_GSO_TCPV6
from netstack.core.net import PacketOffload
from netstack.core.skbuff import CHECKSUM_PARTIAL, SkBuff
from netstack.gro.core import GRO_RECURSION_LIMIT, NapiGroCb, NetOffload, skb_gro_checksum_validate
from netstack.gro.segment import skb_gso_cb
from netstack.gro.tcp import tcp_gro_complete, tcp_gro_receive, tcp_gso_segment
from netstack.sites import TIMED, kernel, spend
from netstack.wire.checksum import csum_block_sub, csum_partial
from netstack.wire.ethernet import ETH_P_IPV6
from netstack.wire.ipv6 import (
    IPV6_HLEN,
    NEXTHDR_DEST,
    NEXTHDR_HOP,
    NEXTHDR_ROUTING,
    NEXTHDR_TCP,
    addr_at,
    csum_ipv6_pseudo,
)

if TYPE_CHECKING:
    from netstack.ipv6.netns import Ipv6

__all__ = [
    "ipv6_gro_complete",
    "ipv6_gro_receive",
    "ipv6_gso_segment",
    "ipv6_offload_init",
    "tcp6_gro_complete",
    "tcp6_gro_receive",
    "tcp6_gso_segment",
]

_H: Final = struct.Struct("!H")
_I: Final = struct.Struct("!I")
_FLOW_MASK: Final = 0xF00FFFFF  # version and flow label: another flow if they differ
_TCLASS_MASK: Final = 0x0FF00000  # traffic class: flush if it differs
INET6_PROTO_GSO_EXTHDR: Final = 0x1  # an extension header GSO and GRO walk over


@kernel("net/ipv6/ip6_offload.c", "ipv6_gro_pull_exthdrs")
def ipv6_gro_pull_exthdrs(ipv6: Ipv6, skb: SkBuff, off: int, proto: int) -> tuple[int, int]:
    """Walk the extension headers GRO may pass over; (next header, offset after them).

    Kernel: net/ipv6/ip6_offload.c, ipv6_gro_pull_exthdrs().
    """
    buf = skb.buf
    offloads = ipv6.inet6_offloads
    while True:
        ops = offloads.get(proto)
        if ops is None or not ops.flags & INET6_PROTO_GSO_EXTHDR:
            break
        if skb.tail - off < 8:
            break
        length = (buf[off + 1] + 1) << 3  # ipv6_optlen()
        if skb.tail - off < length:
            break
        proto = buf[off]
        off += length
    return proto, off


@kernel("net/ipv6/ip6_offload.c", "ipv6_gso_pull_exthdrs")
def ipv6_gso_pull_exthdrs(ipv6: Ipv6, skb: SkBuff, proto: int) -> int:
    """Pull hop-by-hop, destination options and routing headers off ``skb.data``.

    Kernel: net/ipv6/ip6_offload.c, ipv6_gso_pull_exthdrs().
    """
    buf = skb.buf
    offloads = ipv6.inet6_offloads
    while True:
        if proto != NEXTHDR_HOP:
            ops = offloads.get(proto)
            if ops is None or not ops.flags & INET6_PROTO_GSO_EXTHDR:
                break
        off = skb.data
        if skb.tail - off < 8:
            break
        length = (buf[off + 1] + 1) << 3
        if skb.tail - off < length:
            break
        proto = buf[off]
        skb.data = off + length  # __skb_pull()
    return proto


@kernel("net/ipv6/ip6_offload.c", "ipv6_exthdrs_len")
def ipv6_exthdrs_len(ipv6: Ipv6, buf: bytearray, iph: int, end: int) -> tuple[int, int]:
    """The extension headers' length after the header at *iph*, and the protocol after them.

    Kernel: net/ipv6/ip6_offload.c, ipv6_exthdrs_len().
    """
    proto = buf[iph + 6]
    off = iph + IPV6_HLEN
    offloads = ipv6.inet6_offloads
    while True:
        if proto != NEXTHDR_HOP:
            ops = offloads.get(proto)
            if ops is None or not ops.flags & INET6_PROTO_GSO_EXTHDR:
                break
        if end - off < 8:
            break
        proto = buf[off]
        off += (buf[off + 1] + 1) << 3
    return off - iph - IPV6_HLEN, proto


@kernel("net/ipv6/ip6_offload.c", "ipv6_gro_receive")
def ipv6_gro_receive(ipv6: Ipv6, head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """GRO for an IPv6 header at the skb's GRO offset.

    Twin: netstack.ipv4.offload.inet_gro_receive.
    Kernel: net/ipv6/ip6_offload.c, ipv6_gro_receive().
    """
    if TIMED:
        spend("ipv6_gro_receive")
    cb: NapiGroCb = skb.cb
    off = cb.off
    buf = skb.buf
    flush = 1
    pp: SkBuff | None = None
    if skb.tail - off >= IPV6_HLEN and buf[off] >> 4 == 6:
        skb.network_header = off
        hlen = off + IPV6_HLEN
        flush += int(((buf[off + 4] << 8) | buf[off + 5]) != skb.tail - hlen)
        proto = buf[off + 6]
        ops = ipv6.inet6_offloads.get(proto)
        if ops is None or ops.gro_receive is None:
            proto, hlen = ipv6_gro_pull_exthdrs(ipv6, skb, hlen, proto)
            ops = ipv6.inet6_offloads.get(proto)
        cb.off = hlen  # skb_gro_pull()
        skb.transport_header = hlen
        if ops is not None and ops.gro_receive is not None:
            cb.proto = proto
            flush -= 1
            first = _I.unpack_from(buf, off)[0]
            rel = off - skb.data
            # next header, hop limit, addresses and the extension headers: all equal
            # in one flow (memcmp from nexthdr over the network header's length)
            same = buf[off + 6 : hlen]
            nlen = hlen - off
            clear_flush_id = cb.is_atomic and ipv6.net.patches.ipip_sit_gro
            for p in head:
                pcb: NapiGroCb = p.cb
                if not pcb.same_flow:
                    continue
                pbuf = p.buf
                o2 = p.data + rel
                word = first ^ _I.unpack_from(pbuf, o2)[0]
                if word & _FLOW_MASK or pbuf[o2 + 6 : o2 + nlen] != same:
                    pcb.same_flow = 0
                    continue
                # flush if the traffic class (or the hop limit) differs
                pcb.flush |= int(bool(word & _TCLASS_MASK or pbuf[o2 + 7] != buf[off + 7]))
                pcb.flush |= flush
                # No IP ID in IPv6: an outer IPv4 header's verdict must not
                # reach TCP (seed 4, "ipv6: Clear flush_id to make GRO work").
                if clear_flush_id:
                    pcb.flush_id = 0
            cb.is_atomic = 1
            cb.flush |= flush
            if cb.csum_valid:  # skb_gro_postpull_rcsum()
                cb.csum = csum_block_sub(cb.csum, csum_partial(buf, off, hlen), 0)
            cb.recursion_counter += 1  # call_gro_receive()
            if cb.recursion_counter == GRO_RECURSION_LIMIT:
                cb.flush |= 1
            else:
                pp = ops.gro_receive(head, skb)
    cb.flush |= flush  # skb_gro_flush_final()
    return pp


@kernel("net/ipv6/ip6_offload.c", "ipv6_gro_complete")
def ipv6_gro_complete(ipv6: Ipv6, skb: SkBuff, nhoff: int) -> int:
    """Fix the payload length of a merged skb, then let the transport finish.

    Twin: netstack.ipv4.offload.inet_gro_complete.
    Kernel: net/ipv6/ip6_offload.c, ipv6_gro_complete().
    """
    if TIMED:
        spend("ipv6_gro_complete")
    buf = skb.buf
    iph = skb.data + nhoff
    if skb.encapsulation:
        skb.inner_protocol = ETH_P_IPV6
        skb.inner_network_header = iph
    _H.pack_into(buf, iph + 4, skb.tail - iph - IPV6_HLEN)
    extlen, proto = ipv6_exthdrs_len(ipv6, buf, iph, skb.tail)
    ops = ipv6.inet6_offloads.get(proto)
    if ops is None or ops.gro_complete is None:
        return -38  # -ENOSYS
    return ops.gro_complete(skb, nhoff + IPV6_HLEN + extlen)


@kernel("net/ipv6/ip6_offload.c", "ipv6_gso_segment")
def ipv6_gso_segment(ipv6: Ipv6, skb: SkBuff, features: int) -> SkBuff | None:
    """Segment a GSO skb whose ``data`` is at its IPv6 header.

    Twin: netstack.ipv4.offload.inet_gso_segment.
    Kernel: net/ipv6/ip6_offload.c, ipv6_gso_segment().
    """
    if TIMED:
        spend("ipv6_gso_segment")
    skb.network_header = skb.data
    mac = skb.mac_header if skb.mac_header >= 0 else skb.data
    nhoff = skb.network_header - mac
    buf = skb.buf
    nh = skb.data
    if skb.tail - nh < IPV6_HLEN:
        return None
    gcb = skb_gso_cb(skb)
    encap = gcb.encap_level > 0
    if encap and skb.dev is not None:
        features &= skb.dev.hw_enc_features
    gcb.encap_level += IPV6_HLEN
    skb.data = nh + IPV6_HLEN  # __skb_pull(skb, sizeof(*ipv6h))
    proto = ipv6_gso_pull_exthdrs(ipv6, skb, buf[nh + 6])
    skb.transport_header = skb.data
    ops = ipv6.inet6_offloads.get(proto)
    segs = None
    if ops is not None and ops.gso_segment is not None:
        segs = ops.gso_segment(skb, features)
    skb.data = nh
    if segs is None or segs is skb:
        skb.network_header = nh
        return segs
    s: SkBuff | None = segs
    while s is not None:
        iph = s.mac_header + nhoff
        _H.pack_into(s.buf, iph + 4, s.tail - iph - IPV6_HLEN)
        s.network_header = iph
        if encap:  # skb_reset_inner_headers()
            s.inner_network_header = iph
            s.inner_transport_header = s.transport_header
        s = s.next
    return segs


# -- TCP over IPv6 -------------------------------------------------------------------


@kernel("include/net/ip6_checksum.h", "ip6_gro_compute_pseudo")
def ip6_gro_compute_pseudo(skb: SkBuff, proto: int) -> int:
    """The pseudo-header sum for the L4 checksum check during GRO.

    Twin: netstack.ipv4.offload.inet_gro_compute_pseudo.
    Kernel: include/net/ip6_checksum.h, ip6_gro_compute_pseudo().
    """
    buf = skb.buf
    nh = skb.network_header
    cb: NapiGroCb = skb.cb
    return csum_ipv6_pseudo(addr_at(buf, nh + 8), addr_at(buf, nh + 24), skb.tail - cb.off, proto)


@kernel("net/ipv6/tcpv6_offload.c", "tcp6_gro_receive")
def tcp6_gro_receive(head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """Check the TCP checksum (unless the packet is flushed anyway), then merge.

    Twin: netstack.ipv4.offload.tcp4_gro_receive.
    Kernel: net/ipv6/tcpv6_offload.c, tcp6_gro_receive().
    """
    cb: NapiGroCb = skb.cb
    if not cb.flush and not skb_gro_checksum_validate(
        skb, ip6_gro_compute_pseudo(skb, NEXTHDR_TCP)
    ):
        cb.flush = 1
        return None
    return tcp_gro_receive(head, skb)


@kernel("net/ipv6/tcpv6_offload.c", "tcp6_gro_complete")
def tcp6_gro_complete(skb: SkBuff, thoff: int) -> int:
    """Kernel: net/ipv6/tcpv6_offload.c, tcp6_gro_complete().

    Twin: netstack.ipv4.offload.tcp4_gro_complete.
    """
    buf = skb.buf
    nh = skb.network_header
    th = skb.data + thoff
    _H.pack_into(
        buf,
        th + 16,
        csum_ipv6_pseudo(addr_at(buf, nh + 8), addr_at(buf, nh + 24), skb.tail - th, NEXTHDR_TCP),
    )
    skb.gso_type |= SKB_GSO_TCPV6
    tcp_gro_complete(skb)
    return 0


@kernel("net/ipv6/tcpv6_offload.c", "tcp6_gso_segment")
def tcp6_gso_segment(skb: SkBuff, features: int) -> SkBuff | None:
    """Kernel: net/ipv6/tcpv6_offload.c, tcp6_gso_segment().

    Twin: netstack.ipv4.offload.tcp4_gso_segment.
    """
    if not skb.gso_type & SKB_GSO_TCPV6:
        return None
    if skb.tail - skb.data < 20:
        return None
    if skb.ip_summed != CHECKSUM_PARTIAL:
        # __tcp_v6_send_check(): the pseudo-header sum (usually the stack did already)
        buf = skb.buf
        nh = skb.network_header
        th = skb.transport_header
        _H.pack_into(
            buf,
            th + 16,
            csum_ipv6_pseudo(
                addr_at(buf, nh + 8), addr_at(buf, nh + 24), skb.tail - th, NEXTHDR_TCP
            ),
        )
        skb.ip_summed = CHECKSUM_PARTIAL
        skb.csum_start = th
        skb.csum_offset = 16
    return tcp_gso_segment(skb, features)


@kernel("net/ipv6/ip6_offload.c", "ipv6_offload_init")
def ipv6_offload_init(ipv6: Ipv6) -> None:
    """Register the IPv6 and TCPv6 offloads on the Net.

    Twin: netstack.ipv4.offload.ipv4_offload_init.
    Kernel: net/ipv6/ip6_offload.c, ipv6_offload_init() (dev_add_offload,
    tcpv6_offload_init).
    """
    ipv6.inet6_add_offload(
        NEXTHDR_TCP, NetOffload(tcp6_gso_segment, tcp6_gro_receive, tcp6_gro_complete)
    )
    # net/ipv6/exthdrs_offload.c: rthdr_offload, dstopt_offload
    ipv6.inet6_add_offload(NEXTHDR_ROUTING, NetOffload(flags=INET6_PROTO_GSO_EXTHDR))
    ipv6.inet6_add_offload(NEXTHDR_DEST, NetOffload(flags=INET6_PROTO_GSO_EXTHDR))
    ipv6.net.dev_add_offload(
        PacketOffload(
            ETH_P_IPV6,
            gso_segment=MethodType(ipv6_gso_segment, ipv6),
            gro_receive=MethodType(ipv6_gro_receive, ipv6),
            gro_complete=MethodType(ipv6_gro_complete, ipv6),
        )
    )
