"""IPv4's GRO and GSO callbacks: the IPv4 layer, and TCP and UDP over IPv4.

Theory of operation — GRO: ``inet_gro_receive`` is the ``offload_base``
entry for ETH_P_IP. It takes only option-less, unfragmented headers with a
good checksum whose protocol has a GRO handler (``inet_offloads``: TCP, UDP;
IPIP/GRE when tunnels register); any other packet is flushed (delivered
alone). Against each held skb of the same addresses and protocol it flushes
on a TTL, TOS or DF difference or a length mismatch, and stores the IP ID
check in ``flush_id`` so that the transport layer, after it has matched the
ports, decides with only the innermost ID counting (tunnels call this
function again for their inner header). ``inet_gro_complete`` rewrites the
total length and header checksum of a merged skb and calls the transport's
completion (``tcp4_gro_complete``: the pseudo-header checksum for
CHECKSUM_PARTIAL and ``SKB_GSO_TCPV4``).

GSO: ``inet_gso_segment`` pulls the IP header, has the transport cut the skb,
then gives each segment its total length, an incrementing IP ID (unless
``SKB_GSO_TCP_FIXEDID``) and a fresh header checksum. Headers are located by
their offset from the link header, so a tunnel's outer header and the inner
one are each fixed by their own call.

Kernel: net/ipv4/af_inet.c (inet_gro_receive, inet_gro_complete,
inet_gso_segment), net/ipv4/tcp_offload.c (tcp4_*), net/ipv4/udp_offload.c
(udp4_*).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from types import MethodType
from typing import TYPE_CHECKING, Final

from netstack.core.features import (
    SKB_GSO_IPXIP4,
    SKB_GSO_TCP_FIXEDID,
    SKB_GSO_TCPV4,
    SKB_GSO_UDP,
    SKB_GSO_UDP_TUNNEL,
    SKB_GSO_UDP_TUNNEL_CSUM,
)
from netstack.core.net import PacketOffload
from netstack.core.net_generic import NetKey
from netstack.core.skbuff import CHECKSUM_PARTIAL, SkBuff
from netstack.gro.core import (
    GRO_RECURSION_LIMIT,
    NapiGroCb,
    NetOffload,
    skb_gro_checksum_validate,
)
from netstack.gro.segment import skb_gso_cb
from netstack.gro.tcp import tcp_gro_complete, tcp_gro_receive, tcp_gso_segment
from netstack.sites import TIMED, kernel, spend
from netstack.wire.checksum import (
    CSUM_MANGLED_0,
    csum_partial,
    csum_tcpudp_magic,
    csum_tcpudp_nofold,
    ip_fast_csum,
)
from netstack.wire.ethernet import ETH_P_IP
from netstack.wire.ipv4 import IP_DF, IP_MF, IP_OFFSET, IPPROTO_TCP, IPPROTO_UDP

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.ipv4.netns import Ipv4

__all__ = [
    "inet_gro_complete",
    "inet_gro_receive",
    "inet_gso_segment",
    "ipip_gso_segment",
    "ipv4_offload_init",
    "tcp4_gro_complete",
    "tcp4_gro_receive",
    "tcp4_gso_segment",
    "udp4_gro_complete",
    "udp4_gro_receive",
]

_H: Final = struct.Struct("!H")
_II: Final = struct.Struct("!II")
# udp4_gro_receive's read of the UDP length and checksum: a bound method typed with
# what its format gives (compiled code calls it without a lookup by name and reads ints)
_UDP_LEN_CHECK: Final[Callable[[bytearray, int], tuple[int, int]]] = struct.Struct(
    "!4xHH"
).unpack_from
# inet_gro_receive's one look at a header: its five 32-bit words (version/IHL, TOS and
# total length; ID and frag_off; TTL, protocol and checksum; the addresses), typed as
# above. Its ip_fast_csum() sums them: 2**32 is 1 modulo 0xFFFF, so the header read as
# one integer (netstack.wire.checksum's test) and the sum of its words are equal modulo
# 0xFFFF, and both are 0 only for a header of zeros.
_IPH_WORDS: Final[Callable[[bytearray, int], tuple[int, int, int, int, int]]] = struct.Struct(
    "!5I"
).unpack_from
_IP_MF_OFFSET: Final = IP_MF | IP_OFFSET
_NOT_IP_DF: Final = 0xFFFF & ~IP_DF


@kernel(
    "net/ipv4/af_inet.c",
    "inet_gro_receive",
    "include/net/gro.h",
    "call_gro_receive",
    "arch/x86/include/asm/checksum_64.h",
    "ip_fast_csum",
)
def inet_gro_receive(ipv4: Ipv4, head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """GRO for an IPv4 header at the skb's GRO offset.

    The header's first fields come out of one ``struct`` unpack; those only
    the held packets are compared on (ID, TTL, TOS, addresses) are read only
    when there are held packets. ``ip_fast_csum`` (a static inline) and
    ``call_gro_receive`` (the recursion guard around the transport's
    ``gro_receive``; ``indirect_call_gro_receive`` since 5.x) are inline.

    Twin: netstack.ipv6.offload.ipv6_gro_receive.
    Kernel: net/ipv4/af_inet.c, inet_gro_receive(); include/net/gro.h,
    call_gro_receive(); arch/x86/include/asm/checksum_64.h, ip_fast_csum().
    """
    if TIMED:
        spend("inet_gro_receive")
    cb: NapiGroCb = skb.cb
    off = cb.off
    buf = skb.buf
    gro_len = skb.tail - off  # skb_gro_len()
    flush = 1
    pp: SkBuff | None = None
    if gro_len >= 20:
        w0, w1, w2, w3, w4 = _IPH_WORDS(buf, off)
        ver_ihl = w0 >> 24
        tot_len = w0 & 0xFFFF
        frag = w1 & 0xFFFF
        proto = (w2 >> 16) & 0xFF
        ops = ipv4.inet_offloads.get(proto)
        gro_receive = ops.gro_receive if ops is not None else None
        # (not frag & _IP_MF_OFFSET: !ip_is_fragment())
        if gro_receive is not None and ver_ihl == 0x45 and not frag & _IP_MF_OFFSET:
            # ip_fast_csum(), inline: a valid header's words sum to a non-zero
            # multiple of 0xFFFF (as the header read whole, netstack.wire.checksum)
            if TIMED:
                spend("ip_fast_csum")
            n = w0 + w1 + w2 + w3 + w4
            if n % 0xFFFF or not n:
                gro_receive = None  # a bad header checksum: flushed
        else:
            gro_receive = None  # not a protocol with GRO, options, or a fragment: flushed
        if gro_receive is not None:
            cb.proto = proto
            flush = ((tot_len ^ gro_len) | (frag & _NOT_IP_DF)) & 0xFFFF
            if head:
                ident = w1 >> 16
                rel = off - skb.data
                ttl_tos = (w2 >> 24, (w0 >> 16) & 0xFF)
                addrs = buf[off + 12 : off + 20]
                for p in head:
                    pcb: NapiGroCb = p.cb
                    if not pcb.same_flow:
                        continue
                    pbuf = p.buf
                    o2 = p.data + rel
                    if pbuf[o2 + 9] != proto or pbuf[o2 + 12 : o2 + 20] != addrs:
                        pcb.same_flow = 0
                        continue
                    frag2 = (pbuf[o2 + 6] << 8) | pbuf[o2 + 7]
                    # All fields must match except length and checksum.
                    if (pbuf[o2 + 8], pbuf[o2 + 1]) != ttl_tos or (frag ^ frag2) & IP_DF:
                        pcb.flush |= 1
                    pcb.flush |= flush
                    # The IP ID check is stored, and used by the transport once it
                    # knows this packet belongs to the flow; with a tunnel, the
                    # innermost header's call overwrites it.
                    flush_id = (ident - ((pbuf[o2 + 4] << 8) | pbuf[o2 + 5])) & 0xFFFF
                    if not pcb.is_atomic or not frag & IP_DF:
                        flush_id ^= pcb.count
                        flush_id = 0xFFFF if flush_id else 0
                    if cb.is_atomic:
                        pcb.flush_id = flush_id
                    else:
                        pcb.flush_id |= flush_id
            cb.is_atomic = (frag >> 14) & 1  # !!(iph->frag_off & htons(IP_DF))
            cb.flush |= flush
            skb.network_header = off
            off += 20
            cb.off = off  # skb_gro_pull(skb, sizeof(*iph))
            skb.transport_header = off
            # call_gro_receive(), inline: the recursion guard
            depth = cb.recursion_counter + 1
            cb.recursion_counter = depth
            if depth == GRO_RECURSION_LIMIT:
                cb.flush |= 1
            else:
                pp = gro_receive(head, skb)
    cb.flush |= flush  # skb_gro_flush_final()
    return pp


@kernel("net/ipv4/af_inet.c", "inet_gro_complete")
def inet_gro_complete(ipv4: Ipv4, skb: SkBuff, nhoff: int) -> int:
    """Fix the IPv4 header of a merged skb, then let the transport finish.

    Twin: netstack.ipv6.offload.ipv6_gro_complete.
    Kernel: net/ipv4/af_inet.c, inet_gro_complete().
    """
    if TIMED:
        spend("inet_gro_complete")
    buf = skb.buf
    iph = skb.data + nhoff
    proto = buf[iph + 9]
    if skb.encapsulation:
        skb.inner_protocol = ETH_P_IP
        skb.inner_network_header = iph
    _H.pack_into(buf, iph + 2, skb.tail - iph)
    buf[iph + 10] = buf[iph + 11] = 0
    _H.pack_into(buf, iph + 10, ip_fast_csum(buf, iph, (buf[iph] & 0xF) * 4))
    ops = ipv4.inet_offloads.get(proto)
    if ops is None or ops.gro_complete is None:
        return -38  # -ENOSYS
    return ops.gro_complete(skb, nhoff + 20)


@kernel("net/ipv4/af_inet.c", "inet_gso_segment")
def inet_gso_segment(ipv4: Ipv4, skb: SkBuff, features: int) -> SkBuff | None:
    """Segment a GSO skb whose ``data`` is at its IPv4 header.

    Twin: netstack.ipv6.offload.ipv6_gso_segment.
    Kernel: net/ipv4/af_inet.c, inet_gso_segment().
    """
    if TIMED:
        spend("inet_gso_segment")
    skb.network_header = skb.data
    mac = skb.mac_header if skb.mac_header >= 0 else skb.data
    nhoff = skb.network_header - mac
    buf = skb.buf
    nh = skb.data
    if skb.tail - nh < 20:
        return None
    ihl = (buf[nh] & 0xF) * 4
    if ihl < 20 or skb.tail - nh < ihl:
        return None
    ident = (buf[nh + 4] << 8) | buf[nh + 5]
    proto = buf[nh + 9]
    skb.data = nh + ihl  # __skb_pull(skb, ihl)
    gcb = skb_gso_cb(skb)
    encap = gcb.encap_level > 0
    if encap and skb.dev is not None:
        features &= skb.dev.hw_enc_features
    gcb.encap_level += ihl
    skb.transport_header = skb.data
    udpfrag = fixedid = False
    gso_type = skb.gso_type
    if not skb.encapsulation or encap:
        udpfrag = bool(gso_type & SKB_GSO_UDP)
        fixedid = bool(gso_type & SKB_GSO_TCP_FIXEDID)
        if fixedid and not buf[nh + 6] & 0x40:  # FIXEDID needs DF
            skb.data = nh
            return None
    ops = ipv4.inet_offloads.get(proto)
    segs = None
    if ops is not None and ops.gso_segment is not None:
        segs = ops.gso_segment(skb, features)
    skb.data = nh
    if segs is None or segs is skb:
        skb.network_header = nh
        return segs
    offset = 0
    s: SkBuff | None = segs
    while s is not None:
        sb = s.buf
        iph = s.mac_header + nhoff
        if udpfrag:
            field = (offset >> 3) & IP_OFFSET
            if s.next is not None:
                field |= IP_MF
            _H.pack_into(sb, iph + 6, field)
            offset += s.tail - iph - ihl
        elif not fixedid:
            _H.pack_into(sb, iph + 4, ident)
            ident = (ident + (s.gso_segs if s.gso_size else 1)) & 0xFFFF
        _H.pack_into(sb, iph + 2, s.tail - iph)
        sb[iph + 10] = sb[iph + 11] = 0
        _H.pack_into(sb, iph + 10, ip_fast_csum(sb, iph, ihl))  # ip_send_check()
        s.network_header = iph
        if encap:  # skb_reset_inner_headers()
            s.inner_network_header = iph
            s.inner_transport_header = iph + ihl
        s = s.next
    return segs


@kernel("net/ipv4/af_inet.c", "ipip_gso_segment")
def ipip_gso_segment(ipv4: Ipv4, skb: SkBuff, features: int) -> SkBuff | None:
    """Segment the inner IPv4 packet of an IPIP GSO skb (``SKB_GSO_IPXIP4``).

    The outer ``inet_gso_segment`` has pulled the outer header and counted it
    in ``encap_level``; this runs ``inet_gso_segment`` again on the inner
    header, which cuts the TCP payload and fixes the inner IP headers; the
    outer call then gives each segment its outer length, ID and checksum.

    Kernel: net/ipv4/af_inet.c, ipip_gso_segment().
    """
    if not skb.gso_type & SKB_GSO_IPXIP4:
        return None
    return inet_gso_segment(ipv4, skb, features)


# -- TCP over IPv4 -------------------------------------------------------------------


@kernel("include/net/gro.h", "inet_gro_compute_pseudo")
def inet_gro_compute_pseudo(skb: SkBuff, proto: int) -> int:
    """The pseudo-header sum for the L4 checksum check during GRO.

    Twin: netstack.ipv6.offload.ip6_gro_compute_pseudo.
    Kernel: include/net/gro.h, inet_gro_compute_pseudo().
    """
    buf = skb.buf
    saddr, daddr = _II.unpack_from(buf, skb.network_header + 12)
    cb: NapiGroCb = skb.cb
    return csum_tcpudp_nofold(saddr, daddr, skb.tail - cb.off, proto)


@kernel("net/ipv4/tcp_offload.c", "tcp4_gro_receive")
def tcp4_gro_receive(head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """Check the TCP checksum (unless the packet is flushed anyway), then merge.

    Twin: netstack.ipv6.offload.tcp6_gro_receive.
    Kernel: net/ipv4/tcp_offload.c, tcp4_gro_receive().
    """
    cb: NapiGroCb = skb.cb
    if not cb.flush and not skb_gro_checksum_validate(
        skb, inet_gro_compute_pseudo(skb, IPPROTO_TCP)
    ):
        cb.flush = 1
        return None
    return tcp_gro_receive(head, skb)


@kernel("net/ipv4/tcp_offload.c", "tcp4_gro_complete")
def tcp4_gro_complete(skb: SkBuff, thoff: int) -> int:
    """Kernel: net/ipv4/tcp_offload.c, tcp4_gro_complete().

    Twin: netstack.ipv6.offload.tcp6_gro_complete.
    """
    buf = skb.buf
    saddr, daddr = _II.unpack_from(buf, skb.network_header + 12)
    th = skb.data + thoff
    _H.pack_into(buf, th + 16, csum_tcpudp_nofold(saddr, daddr, skb.tail - th, IPPROTO_TCP))
    skb.gso_type |= SKB_GSO_TCPV4
    cb: NapiGroCb = skb.cb
    if cb.is_atomic:
        skb.gso_type |= SKB_GSO_TCP_FIXEDID
    tcp_gro_complete(skb)
    return 0


@kernel("net/ipv4/tcp_offload.c", "tcp4_gso_segment")
def tcp4_gso_segment(skb: SkBuff, features: int) -> SkBuff | None:
    """Kernel: net/ipv4/tcp_offload.c, tcp4_gso_segment().

    Twin: netstack.ipv6.offload.tcp6_gso_segment.
    """
    if not skb.gso_type & SKB_GSO_TCPV4:
        return None
    if skb.tail - skb.data < 20:
        return None
    if skb.ip_summed != CHECKSUM_PARTIAL:
        # Set up the pseudo-header checksum (usually the stack did already).
        buf = skb.buf
        saddr, daddr = _II.unpack_from(buf, skb.network_header + 12)
        th = skb.transport_header
        _H.pack_into(buf, th + 16, csum_tcpudp_nofold(saddr, daddr, skb.tail - th, IPPROTO_TCP))
        skb.ip_summed = CHECKSUM_PARTIAL
        skb.csum_start = th
        skb.csum_offset = 16
    return tcp_gso_segment(skb, features)


# -- UDP over IPv4 -------------------------------------------------------------------


class StaticKey:
    """A ``static_key_false``: a branch taken while its count is positive (kernel:
    jump labels; here per Net, where the kernel's key is global)."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


UDP_ENCAP_NEEDED_KEY: NetKey[StaticKey] = NetKey("udp_encap_needed_key")


class Udp4Gro:
    """What :func:`udp4_gro_receive` is bound to: the Net's IPv4 and its
    ``udp_encap_needed_key`` (kernel: globals)."""

    __slots__ = ("encap_needed", "ipv4")

    def __init__(self, ipv4: Ipv4, encap_needed: StaticKey) -> None:
        self.ipv4 = ipv4
        self.encap_needed = encap_needed


@kernel("net/ipv4/udp.c", "udp_encap_enable")
def udp_encap_enable(net: Net) -> None:
    """An encapsulation socket exists: UDP GRO looks datagrams' sockets up.

    Kernel: net/ipv4/udp.c, udp_encap_enable() (static_branch_inc).
    """
    UDP_ENCAP_NEEDED_KEY.get(net).count += 1


@kernel("net/ipv4/udp.c", "udp_encap_disable")
def udp_encap_disable(net: Net) -> None:
    """Kernel: net/ipv4/udp.c, udp_encap_disable() (static_branch_dec)."""
    UDP_ENCAP_NEEDED_KEY.get(net).count -= 1


@kernel(
    "net/ipv4/udp_offload.c",
    "udp4_gro_receive",
    "udp_gro_receive",
    "include/net/gro.h",
    "__skb_gro_checksum_validate_needed",
)
def udp4_gro_receive(ctx: Udp4Gro, head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """UDP GRO: only for tunnels' sockets (``gro_receive``); others flush.

    Bound as a method of the Net's :class:`Udp4Gro` (its IPv4 and its
    ``udp_encap_needed_key``: one call, where a ``functools.partial`` is two).

    The socket is looked up only while some encapsulation socket exists on the
    Net (``udp_encap_needed_key``): otherwise no datagram can
    have a GRO handler and the lookup is skipped, as in the kernel. The
    checksum is validated, and the pseudo-header summed for it, only when
    ``__skb_gro_checksum_validate_needed`` says so (the kernel's macro
    evaluates ``inet_gro_compute_pseudo`` lazily): not for a checksum a local
    sender left to the device (CHECKSUM_PARTIAL from here on).

    Kernel: net/ipv4/udp_offload.c, udp4_gro_receive() / udp_gro_receive();
    include/net/gro.h, __skb_gro_checksum_validate_needed().
    """
    cb: NapiGroCb = skb.cb
    off = cb.off
    buf = skb.buf
    gro_len = skb.tail - off  # skb_gro_len()
    if gro_len < 8:
        cb.flush = 1
        return None
    ulen, check = _UDP_LEN_CHECK(buf, off)
    if ulen != gro_len:
        # the datagram does not fill the IP payload (trailing bytes): its checksum
        # covers only ulen bytes, so it is left to udp_rcv (udp_gro_receive_segment's
        # "ulen != skb_gro_len(skb)" flush)
        cb.flush = 1
        return None
    if (
        check
        and not cb.flush
        and (skb.ip_summed != CHECKSUM_PARTIAL or skb.csum_start < off)
        and not skb_gro_checksum_validate(skb, inet_gro_compute_pseudo(skb, IPPROTO_UDP))
    ):
        cb.flush = 1
        return None
    cb.is_ipv6 = 0
    if not ctx.encap_needed.count:  # static_branch_unlikely(&udp_encap_needed_key)
        cb.flush |= 1  # no socket with GRO for this datagram: flush it
        return None
    # udp4_gro_lookup_skb() whatever encap_mark: udp_gro_receive() tests it after
    sport, dport = struct.unpack_from("!HH", buf, off)
    saddr, daddr = _II.unpack_from(buf, skb.network_header + 12)
    dev = skb.dev
    sk = ctx.ipv4.udp_table.lookup(saddr, sport, daddr, dport, dev.ifindex if dev else 0)
    gro_receive = getattr(sk, "gro_receive", None)
    if gro_receive is None or cb.encap_mark:
        cb.flush |= 1  # no GRO for this datagram, or it is already a tunnel's inner one
        return None
    cb.encap_mark = 1  # this skb passed once through the tunnel GRO layer
    rel = off - skb.data
    for p in head:
        pcb: NapiGroCb = p.cb
        if not pcb.same_flow:
            continue
        # the held packet's UDP header at the same offset (p->data + off): its
        # transport_header already points at the inner header its GRO reached
        th2 = p.data + rel
        pbuf = p.buf
        # ports match, and the checksums are both zero or both not
        if pbuf[th2 : th2 + 4] != buf[off : off + 4] or (not check) != (
            not (pbuf[th2 + 6] | pbuf[th2 + 7])
        ):
            pcb.same_flow = 0
    cb.off = off + 8
    pp: SkBuff | None = gro_receive(sk, head, skb)
    return pp


@kernel("net/ipv4/udp_offload.c", "udp4_gro_complete", "udp_gro_complete")
def udp4_gro_complete(ipv4: Ipv4, skb: SkBuff, nhoff: int) -> int:
    """Finish a UDP-tunnel aggregate with the tunnel socket's own completion.

    Kernel: net/ipv4/udp_offload.c, udp4_gro_complete() / udp_gro_complete().
    """
    buf = skb.buf
    uh = skb.data + nhoff
    _H.pack_into(buf, uh + 4, skb.tail - uh)
    sport, dport = struct.unpack_from("!HH", buf, uh)
    saddr, daddr = _II.unpack_from(buf, skb.network_header + 12)
    dev = skb.dev
    sk = ipv4.udp_table.lookup(saddr, sport, daddr, dport, dev.ifindex if dev else 0)
    gro_complete = getattr(sk, "gro_complete", None)
    if gro_complete is None:
        return -2  # -ENOENT
    skb.gso_type = SKB_GSO_UDP_TUNNEL_CSUM if buf[uh + 6] | buf[uh + 7] else SKB_GSO_UDP_TUNNEL
    skb.encapsulation = True
    return int(gro_complete(sk, skb, nhoff + 8))


@kernel(
    "net/ipv4/udp_offload.c",
    "udp4_ufo_fragment",
    "skb_udp_tunnel_segment",
    "__skb_udp_tunnel_segment",
)
def skb_udp_tunnel_segment(ipv4: Ipv4, skb: SkBuff, features: int) -> SkBuff | None:
    """Segment a UDP-tunnel GSO skb (VXLAN: ``SKB_GSO_UDP_TUNNEL[_CSUM]``) whose
    ``data`` is at its outer UDP header.

    The tunnel header (UDP + VXLAN, up to ``inner_mac_header``) is skipped,
    the inner protocol's ``gso_segment`` (``ETH_P_TEB``: the Ethernet frame,
    then IP and TCP) cuts the payload below the copied outer headers, then each
    segment gets its UDP length and, with ``_CSUM``, its UDP checksum —
    computed as local checksum offload does when the inner checksum is still
    partial. The outer IPv4 headers are fixed by the ``inet_gso_segment`` that
    called this. Any other UDP GSO skb (UFO, ``SKB_GSO_UDP_L4``) is not
    segmented here.

    Kernel: net/ipv4/udp_offload.c, udp4_ufo_fragment() /
    skb_udp_tunnel_segment() / __skb_udp_tunnel_segment().
    """
    if TIMED:
        spend("__skb_udp_tunnel_segment")
    gso_type = skb.gso_type
    if not skb.encapsulation or not gso_type & (SKB_GSO_UDP_TUNNEL | SKB_GSO_UDP_TUNNEL_CSUM):
        return None
    uh = skb.data
    tnl_hlen = skb.inner_mac_header - uh
    if tnl_hlen < 8 or skb.tail - uh < tnl_hlen:
        return None
    ptype = ipv4.net.offload_base.get(skb.inner_protocol)
    if ptype is None or ptype.gso_segment is None:
        return None
    need_csum = bool(gso_type & SKB_GSO_UDP_TUNNEL_CSUM)
    saddr, daddr = _II.unpack_from(skb.buf, skb.network_header + 12)
    mac = skb.mac_header if skb.mac_header >= 0 else uh
    udp_off = uh - mac
    skb_gso_cb(skb).encap_level += tnl_hlen
    skb.data = uh + tnl_hlen  # __skb_pull(skb, tnl_hlen)
    segs = ptype.gso_segment(skb, features)
    skb.data = uh
    if segs is None or segs is skb:
        return segs
    s: SkBuff | None = segs
    while s is not None:
        sb = s.buf
        u = s.mac_header + udp_off
        s.transport_header = u
        length = s.tail - u
        _H.pack_into(sb, u + 4, length)
        if need_csum:
            sb[u + 6] = sb[u + 7] = 0
            if s.ip_summed == CHECKSUM_PARTIAL:  # the inner checksum is the device's: LCO
                start = s.csum_start
                off = start + s.csum_offset
                inner = ~((sb[off] << 8) | sb[off + 1]) & 0xFFFF
                c = csum_partial(sb, u, start, inner)
            else:
                c = csum_partial(sb, u, s.tail)
            _H.pack_into(
                sb, u + 6, csum_tcpudp_magic(saddr, daddr, length, 17, c) or CSUM_MANGLED_0
            )
        s = s.next
    return segs


@kernel("net/ipv4/af_inet.c", "ipv4_offload_init")
def ipv4_offload_init(ipv4: Ipv4) -> None:
    """Register the IPv4, TCP and UDP offloads on the Net.

    Twin: netstack.ipv6.offload.ipv6_offload_init.
    Kernel: net/ipv4/af_inet.c, ipv4_offload_init() (dev_add_offload,
    tcpv4_offload_init, udpv4_offload_init).
    """
    ipv4.inet_add_offload(
        IPPROTO_TCP, NetOffload(tcp4_gso_segment, tcp4_gro_receive, tcp4_gro_complete)
    )
    ipv4.inet_add_offload(
        IPPROTO_UDP,
        NetOffload(
            MethodType(skb_udp_tunnel_segment, ipv4),
            MethodType(
                udp4_gro_receive,
                Udp4Gro(ipv4, UDP_ENCAP_NEEDED_KEY.set(ipv4.net, StaticKey())),
            ),
            MethodType(udp4_gro_complete, ipv4),
        ),
    )
    ipv4.net.dev_add_offload(
        PacketOffload(
            ETH_P_IP,
            gso_segment=MethodType(inet_gso_segment, ipv4),
            gro_receive=MethodType(inet_gro_receive, ipv4),
            gro_complete=MethodType(inet_gro_complete, ipv4),
        )
    )
