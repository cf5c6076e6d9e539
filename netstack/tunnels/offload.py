"""GRO and GSO for IP-in-IP, 6in4 and GRE: the ``ipip_offload``, ``sit_offload``
and ``gre_offload`` entries of IPv4's offload table.

Theory of operation: IPv4's ``inet_gro_receive`` looks up the outer header's
protocol in ``inet_offloads``. For IPPROTO_IPIP (4) it finds
``ipip_gro_receive``, which marks the packet as encapsulated (a second
encapsulation is flushed) and runs ``inet_gro_receive`` again on the inner
header: the outer and the inner headers must both match a held packet's, and
the inner TCP header decides the merge. ``ipip_gro_complete`` marks the
aggregate ``encapsulation`` with ``SKB_GSO_IPXIP4`` and completes the inner
header; the outer one was completed by the caller. The merged super-packet
then crosses ``ip_rcv`` and ``ipip_rcv`` once instead of once per segment.

Before Tom Herbert's 2014 patch (``Patches.ipip_sit_gro``) the entry had only
``gso_segment``: outer IPIP packets were flushed from GRO at once and each
went up the stack alone; their inner packets met GRO again only in the
tunnel's ``gro_cells``.

SIT (IPv6 in IPv4, protocol 41) has the same shape: ``sit_gro_receive``
marks the encapsulation and runs ``ipv6_gro_receive`` on the inner header,
which (with the same patch) clears the ``flush_id`` the outer IPv4 header
stored — IPv6 has no IP ID, and without the clearing the outer header's ID
verdict would reach the inner TCP check. ``sit_gro_complete`` marks the
aggregate ``SKB_GSO_IPXIP4`` and completes the inner IPv6 header. Before the
patch ``sit_offload`` too had only ``gso_segment`` (``sit_gso_segment``:
``ipv6_gso_segment`` for the inner header of a ``SKB_GSO_IPXIP4`` skb), so
6in4 packets were flushed from GRO on the physical device and never
aggregated: sit's ``ipip6_rcv`` hands the inner packet to ``netif_rx``,
which has no GRO.

GRE (protocol 47, Jerry Chu's ``gre_offload``, 3.13+, not a seed patch):
``gre_gro_receive`` takes version-0 headers with at most the K and C flags —
any other flag (sequence numbers, routing, another version) flushes — and
whose protocol has an L3 GRO handler (``offload_base``: IPv4, IPv6). A C
packet's checksum is verified first (a bad one flushes). Held packets with
other flags, another protocol or another key are another flow; the inner
header's callbacks decide the merge. ``gre_gro_complete`` marks the
aggregate ``SKB_GSO_GRE`` and completes the inner header; the aggregate's
GRE checksum is stale, and ``gre_parse_header`` takes a CHECKSUM_PARTIAL skb
as verified (``skb_csum_unnecessary``). ``gre_gso_segment`` cuts a GRE
aggregate again when it is forwarded to a device without GRE segmentation:
the inner header's ``gso_segment`` cuts the payload below the copied outer
headers, then each segment's GRE checksum (if any) is computed over its
finished inner packet; the outer IPv4 header is fixed by the
``inet_gso_segment`` that called it.

Kernel: net/ipv4/af_inet.c (ipip_gro_receive, ipip_gro_complete,
ipip_offload, ipv4_offload_init), net/ipv6/ip6_offload.c (sit_gro_receive
— sit_ip6ip6_gro_receive since 4.6 —, sit_gro_complete, sit_offload),
net/ipv4/gre_offload.c (gre_gro_receive, gre_gro_complete, gre_offload_init).
"""

from __future__ import annotations

from types import MethodType
from typing import TYPE_CHECKING

from netstack.core.features import SKB_GSO_GRE, SKB_GSO_IPXIP4
from netstack.core.skbuff import CHECKSUM_PARTIAL
from netstack.core.xmit import skb_checksum_help
from netstack.gro.core import (
    GRO_RECURSION_LIMIT,
    NapiGroCb,
    NetOffload,
    skb_gro_checksum_validate,
)
from netstack.gro.segment import skb_gso_cb
from netstack.ipv4 import ipv4_of
from netstack.ipv4.offload import inet_gro_complete, inet_gro_receive, ipip_gso_segment
from netstack.ipv6 import ipv6_of
from netstack.ipv6.offload import ipv6_gro_complete, ipv6_gro_receive, ipv6_gso_segment
from netstack.sites import TIMED, kernel, spend
from netstack.wire.checksum import csum_block_sub, csum_partial
from netstack.wire.gre import GRE_CSUM, GRE_HLEN, GRE_KEY, gre_checksum
from netstack.wire.ipv4 import IPPROTO_GRE, IPPROTO_IPIP
from netstack.wire.ipv6 import NEXTHDR_IPV6

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.skbuff import SkBuff
    from netstack.ipv4.netns import Ipv4
    from netstack.ipv6.netns import Ipv6

__all__ = [
    "gre_gro_complete",
    "gre_gro_receive",
    "gre_gso_segment",
    "gre_offload_init",
    "ipip_gro_complete",
    "ipip_gro_receive",
    "ipip_offload_init",
    "sit_gro_complete",
    "sit_gro_receive",
    "sit_gso_segment",
    "sit_offload_init",
]


@kernel("net/ipv4/af_inet.c", "ipip_gro_receive")
def ipip_gro_receive(ipv4: Ipv4, head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """GRO for the inner IPv4 header of an IPIP packet (one level of encapsulation).

    Kernel: net/ipv4/af_inet.c, ipip_gro_receive().
    """
    cb: NapiGroCb = skb.cb
    if cb.encap_mark:
        cb.flush = 1
        return None
    cb.encap_mark = 1
    return inet_gro_receive(ipv4, head, skb)


@kernel("net/ipv4/af_inet.c", "ipip_gro_complete")
def ipip_gro_complete(ipv4: Ipv4, skb: SkBuff, nhoff: int) -> int:
    """Kernel: net/ipv4/af_inet.c, ipip_gro_complete()."""
    skb.encapsulation = True
    skb.gso_type |= SKB_GSO_IPXIP4
    return inet_gro_complete(ipv4, skb, nhoff)


@kernel("net/ipv4/af_inet.c", "ipv4_offload_init", "inet_add_offload")
def ipip_offload_init(net: Net) -> None:
    """Register ``ipip_offload`` in IPv4's table — with its GRO callbacks
    only under the ``ipip_sit_gro`` patch.

    Kernel: net/ipv4/af_inet.c, ipv4_offload_init() (inet_add_offload(&ipip_offload, ...)).
    """
    ipv4 = ipv4_of(net)
    if net.patches.ipip_sit_gro:
        offload = NetOffload(
            MethodType(ipip_gso_segment, ipv4),
            MethodType(ipip_gro_receive, ipv4),
            MethodType(ipip_gro_complete, ipv4),
        )
    else:
        offload = NetOffload(MethodType(ipip_gso_segment, ipv4))
    ipv4.inet_add_offload(IPPROTO_IPIP, offload)


@kernel("net/ipv6/ip6_offload.c", "sit_gso_segment")
def sit_gso_segment(ipv6: Ipv6, skb: SkBuff, features: int) -> SkBuff | None:
    """Segment a 6in4 GSO skb (``data`` at the inner IPv6 header).

    Kernel: net/ipv6/ip6_offload.c, sit_gso_segment() (4.7+; before, sit_offload
    used ipv6_gso_segment directly).
    """
    if not skb.gso_type & SKB_GSO_IPXIP4:
        return None
    return ipv6_gso_segment(ipv6, skb, features)


@kernel("net/ipv6/ip6_offload.c", "sit_gro_receive", "sit_ip6ip6_gro_receive")
def sit_gro_receive(ipv6: Ipv6, head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """GRO for the inner IPv6 header of a 6in4 packet (one level of encapsulation).

    Kernel: net/ipv6/ip6_offload.c, sit_gro_receive() (4.6+: sit_ip6ip6_gro_receive()).
    """
    cb: NapiGroCb = skb.cb
    if cb.encap_mark:
        cb.flush = 1
        return None
    cb.encap_mark = 1
    return ipv6_gro_receive(ipv6, head, skb)


@kernel("net/ipv6/ip6_offload.c", "sit_gro_complete")
def sit_gro_complete(ipv6: Ipv6, skb: SkBuff, nhoff: int) -> int:
    """Kernel: net/ipv6/ip6_offload.c, sit_gro_complete()."""
    skb.encapsulation = True
    skb.gso_type |= SKB_GSO_IPXIP4  # 3.18: SKB_GSO_SIT
    return ipv6_gro_complete(ipv6, skb, nhoff)


@kernel("net/ipv6/ip6_offload.c", "ipv6_offload_init", "inet_add_offload")
def sit_offload_init(net: Net) -> None:
    """Register ``sit_offload`` for IPPROTO_IPV6 in IPv4's table — with its GRO
    callbacks only under the ``ipip_sit_gro`` patch.

    Kernel: net/ipv6/ip6_offload.c, ipv6_offload_init() (inet_add_offload(&sit_offload,
    IPPROTO_IPV6)).
    """
    ipv4 = ipv4_of(net)
    ipv6 = ipv6_of(net)
    if net.patches.ipip_sit_gro:
        offload = NetOffload(
            MethodType(sit_gso_segment, ipv6),
            MethodType(sit_gro_receive, ipv6),
            MethodType(sit_gro_complete, ipv6),
        )
    else:
        offload = NetOffload(MethodType(sit_gso_segment, ipv6))
    ipv4.inet_add_offload(NEXTHDR_IPV6, offload)


@kernel("net/ipv4/gre_offload.c", "gre_gro_receive")
def gre_gro_receive(net: Net, head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """GRO for a GRE header (version 0, at most a key) and the packet it carries.

    Kernel: net/ipv4/gre_offload.c, gre_gro_receive().
    """
    if TIMED:
        spend("gre_gro_receive")
    cb: NapiGroCb = skb.cb
    flush = 1
    pp: SkBuff | None = None
    off = cb.off
    buf = skb.buf
    if not cb.encap_mark and skb.tail - off >= GRE_HLEN:
        cb.encap_mark = 1
        flags = (buf[off] << 8) | buf[off + 1]
        # Only version 0 and the K and C flags: sequence numbers could be
        # merged, but not segmented again if the aggregate is forwarded.
        ptype = net.offload_base.get((buf[off + 2] << 8) | buf[off + 3])
        grehlen = GRE_HLEN + (4 if flags & GRE_KEY else 0) + (4 if flags & GRE_CSUM else 0)
        if (
            not flags & ~(GRE_KEY | GRE_CSUM)
            and ptype is not None
            and ptype.gro_receive is not None
            and skb.tail - off >= grehlen
            # don't bother verifying the checksum if the packet is flushed anyway
            and (not flags & GRE_CSUM or cb.flush or skb_gro_checksum_validate(skb, 0))
        ):
            rel = off - skb.data
            ident = buf[off : off + 4]  # flags and protocol
            key = buf[off + grehlen - 4 : off + grehlen] if flags & GRE_KEY else b""
            for p in head:
                pcb: NapiGroCb = p.cb
                if not pcb.same_flow:
                    continue
                o2 = p.data + rel
                pbuf = p.buf
                if pbuf[o2 : o2 + 4] != ident or (
                    key and pbuf[o2 + grehlen - 4 : o2 + grehlen] != key
                ):
                    pcb.same_flow = 0  # another tunnel: flags, protocol or key differ
            cb.off = off + grehlen  # skb_gro_pull()
            if cb.csum_valid:  # skb_gro_postpull_rcsum()
                cb.csum = csum_block_sub(cb.csum, csum_partial(buf, off, off + grehlen), 0)
            cb.recursion_counter += 1  # call_gro_receive()
            if cb.recursion_counter == GRO_RECURSION_LIMIT:
                cb.flush |= 1
            else:
                pp = ptype.gro_receive(head, skb)
                flush = 0
    cb.flush |= flush  # skb_gro_flush_final()
    return pp


@kernel("net/ipv4/gre_offload.c", "gre_gro_complete")
def gre_gro_complete(net: Net, skb: SkBuff, nhoff: int) -> int:
    """Kernel: net/ipv4/gre_offload.c, gre_gro_complete()."""
    if TIMED:
        spend("gre_gro_complete")
    buf = skb.buf
    greh = skb.data + nhoff
    skb.encapsulation = True
    skb.gso_type = SKB_GSO_GRE
    flags = (buf[greh] << 8) | buf[greh + 1]
    grehlen = GRE_HLEN + (4 if flags & GRE_KEY else 0) + (4 if flags & GRE_CSUM else 0)
    ptype = net.offload_base.get((buf[greh + 2] << 8) | buf[greh + 3])
    err = -2  # -ENOENT
    if ptype is not None and ptype.gro_complete is not None:
        err = int(ptype.gro_complete(skb, nhoff + grehlen))
    skb.inner_mac_header = greh + grehlen
    return err


@kernel("net/ipv4/gre_offload.c", "gre_gso_segment")
def gre_gso_segment(net: Net, skb: SkBuff, features: int) -> SkBuff | None:
    """Segment a GRE GSO skb whose ``data`` is at its GRE header.

    netstack's ``skb_segment`` copies every header from the link header down,
    so the inner ``gso_segment`` cuts below the outer headers and this layer
    only fixes its own header in each segment (the kernel pulls the tunnel
    header and pushes it back around ``skb_mac_gso_segment``).

    Kernel: net/ipv4/gre_offload.c, gre_gso_segment().
    """
    if TIMED:
        spend("gre_gso_segment")
    if not skb.encapsulation:
        return None
    buf = skb.buf
    greh = skb.data
    if skb.tail - greh < GRE_HLEN:
        return None
    flags = (buf[greh] << 8) | buf[greh + 1]
    grehlen = GRE_HLEN + (4 if flags & GRE_KEY else 0) + (4 if flags & GRE_CSUM else 0)
    ptype = net.offload_base.get((buf[greh + 2] << 8) | buf[greh + 3])
    if ptype is None or ptype.gso_segment is None or skb.tail - greh < grehlen:
        return None
    mac = skb.mac_header if skb.mac_header >= 0 else greh
    gre_off = greh - mac
    skb_gso_cb(skb).encap_level += grehlen
    skb.data = greh + grehlen  # __skb_pull(skb, tnl_hlen)
    segs = ptype.gso_segment(skb, features)
    skb.data = greh
    if segs is None or segs is skb:
        return segs
    s: SkBuff | None = segs
    while s is not None:
        g = s.mac_header + gre_off
        s.transport_header = g
        if flags & GRE_CSUM:
            if s.ip_summed == CHECKSUM_PARTIAL:  # the inner checksum first
                skb_checksum_help(s)
            sb = s.buf
            sb[g + 4] = sb[g + 5] = 0
            c = gre_checksum(sb, g, s.tail)
            sb[g + 4] = c >> 8
            sb[g + 5] = c & 0xFF
        s = s.next
    return segs


@kernel("net/ipv4/gre_offload.c", "gre_offload_init")
def gre_offload_init(net: Net) -> None:
    """Register ``gre_offload`` for IPPROTO_GRE in IPv4's table (built in, no patch).

    Kernel: net/ipv4/gre_offload.c, gre_offload_init().
    """
    ipv4_of(net).inet_add_offload(
        IPPROTO_GRE,
        NetOffload(
            MethodType(gre_gso_segment, net),
            MethodType(gre_gro_receive, net),
            MethodType(gre_gro_complete, net),
        ),
    )
