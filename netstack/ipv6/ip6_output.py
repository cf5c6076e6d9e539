"""IPv6 output: headers, the route to the first hop, source fragmentation, neighbours.

Theory of operation::

    ip6_make_skb (UDP, ping, ICMPv6) ─► ip6_local_out: payload length
      ─► dst.output = ip6_output (IPv6 disabled on the device? discard)
      ─► ip6_finish_output: bigger than the path MTU (the device MTU for
         IPV6_PMTUDISC_PROBE sockets) ─► ip6_fragment; a GSO skb whose
         segments do not fit ─► segmented here, each through ip6_fragment
      ─► ip6_finish_output2: multicast: loop a copy back if this host is a
         member of the group, never beyond node-local scope; the first hop
         (rt6_nexthop: gateway or destination) ─► nd_tbl entry, created on
         first use ─► sock_confirm_neigh (MSG_CONFIRM) ─► neigh_output
         (neigh_hh_output with the cached 0x86DD header once resolved)

Fragmentation at the source (RFC 8200 §4.5): a packet may be fragmented
only by its source, and only when the socket allows it (``ignore_df``:
IPV6_PMTUDISC_WANT or DONT, the default); otherwise ICMPv6 Packet Too Big
is sent to the (local) sender and the packet dropped. The unfragmentable
part (the IPv6 header and hop-by-hop, routing and destination options that
precede a routing header) is repeated in each fragment, followed by a
Fragment header with one random identification per datagram
(``ipv6_select_ident``) and 8-byte aligned offsets.

Kernel: net/ipv6/ip6_output.c, net/ipv6/output_core.c, include/net/ipv6.h.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any, Final

from netstack.core.dev import dev_loopback_xmit
from netstack.core.features import NETIF_F_GSO_MASK
from netstack.core.netdevice import IFF_LOOPBACK
from netstack.core.skbuff import (
    CHECKSUM_PARTIAL,
    DropReason,
    SkBuff,
    consume_skb,
    kfree_skb,
)
from netstack.core.xmit import (
    netif_skb_features,
    skb_checksum_help,
    skb_gso_segment,
    skb_gso_validate_network_len,
)
from netstack.ipv6.constants import IPV6_PMTUDISC_PROBE
from netstack.ipv6.flowlabel import ip6_autoflowlabel, ip6_make_flowlabel
from netstack.ipv6.route import rt6_nexthop
from netstack.neigh.neighbour import neigh_confirm, neigh_output
from netstack.sites import kernel
from netstack.wire.ethernet import ETH_P_IPV6
from netstack.wire.icmpv6 import ICMPV6_PKT_TOOBIG
from netstack.wire.ipv6 import (
    FRAG_HDR,
    FRAG_HLEN,
    IP6_MF,
    IPV6_ADDR_SCOPE_NODELOCAL,
    IPV6_HLEN,
    NEXTHDR_DEST,
    NEXTHDR_FRAGMENT,
    NEXTHDR_HOP,
    NEXTHDR_ROUTING,
    ip6_flow_hdr,
    put_addr,
)

if TYPE_CHECKING:
    from netstack.core.sock import Sock
    from netstack.ipv6.netns import Ipv6
    from netstack.ipv6.route import Rt6Info

__all__ = [
    "ip6_finish_output",
    "ip6_finish_output2",
    "ip6_fragment",
    "ip6_local_out",
    "ip6_make_skb",
    "ip6_output",
    "ipv6_select_ident",
]

_H: Final = struct.Struct("!H")
_HBB: Final = struct.Struct("!HBB")
EMSGSIZE: Final = 90


@kernel("ip6_dst_hoplimit")
def ip6_dst_hoplimit(rt: Any) -> int:
    """The route's hop limit metric, else the device's hop_limit.

    Kernel: ip6_dst_hoplimit().
    """
    hl = getattr(rt, "metric_hoplimit", 0)
    if hl:
        return int(hl)
    idev = getattr(rt, "rt6i_idev", None)
    if idev is not None:
        return int(idev.cnf.hop_limit)
    ipv6 = getattr(rt, "ipv6", None)
    return int(ipv6.devconf_all.hop_limit) if ipv6 is not None else 64


@kernel("ipv6_select_ident")
def ipv6_select_ident(ipv6: Ipv6) -> int:
    """A fragment identification: random, never 0.

    Twin: netstack.ipv4.ip_output.ip_select_ident.
    Kernel: ipv6_select_ident().
    """
    rng = ipv6.net.rng
    ident = 0
    while not ident:
        ident = rng.getrandbits(32)
    return ident


@kernel("net/ipv6/ip6_output.c", "ip6_make_skb", "__ip6_make_skb")
def ip6_make_skb(
    ipv6: Ipv6,
    rt: Rt6Info,
    saddr: int,
    daddr: int,
    proto: int,
    payload_len: int,
    *,
    hlimit: int,
    tclass: int = 0,
    flowlabel: int = 0,
    autoflowlabel: int = -1,
    fl_sport: int = 0,
    fl_dport: int = 0,
    sk: Sock | None = None,
    ignore_df: bool = True,
) -> SkBuff:
    """An skb with an IPv6 header and room for *payload_len* bytes of *proto*.

    The transport header starts at ``skb.transport_header``; the caller
    fills it. *rt*'s reference passes to the skb. The flow label is
    *flowlabel* if set, else an automatic one (``ip6_make_flowlabel``) from
    the flow's hash: *fl_sport*/*fl_dport* are the flow's ports (for ICMPv6
    ``fl6_icmp_type``/``code`` share the destination port's bytes);
    *autoflowlabel* is the socket's ``IPV6_AUTOFLOWLABEL`` (-1: not set).

    Twin: netstack.ipv4.ip_output.ip_make_skb.
    Kernel: net/ipv6/ip6_output.c, ip6_make_skb() / __ip6_make_skb().
    """
    dev = rt.dev
    assert dev is not None
    hh_len = ((dev.hard_header_len + dev.needed_headroom) & ~15) + 16  # LL_RESERVED_SPACE
    total = IPV6_HLEN + payload_len
    skb = SkBuff(bytearray(hh_len + total), hh_len, hh_len + total)
    skb.network_header = hh_len
    skb.transport_header = hh_len + IPV6_HLEN
    skb.protocol = ETH_P_IPV6
    buf = skb.buf
    if not flowlabel and ipv6.auto_flowlabels:
        flowlabel = ip6_make_flowlabel(
            ipv6,
            ipv6.flow_hash.flowi6(saddr, daddr, fl_sport, fl_dport, proto),
            0,
            ip6_autoflowlabel(ipv6, autoflowlabel),
        )
    ip6_flow_hdr(buf, hh_len, tclass, flowlabel)
    _HBB.pack_into(buf, hh_len + 4, payload_len & 0xFFFF, proto, hlimit)
    put_addr(buf, hh_len + 8, saddr)
    put_addr(buf, hh_len + 24, daddr)
    if sk is not None:
        skb.priority = sk.sk_priority
        if sk.sk_mark:
            skb.mark = sk.sk_mark
    skb.ignore_df = ignore_df
    skb.dst = rt
    return skb


@kernel("net/ipv6/output_core.c", "ip6_local_out", "__ip6_local_out")
def ip6_local_out(ipv6: Ipv6, skb: SkBuff) -> int:
    """Finish the header of a locally generated packet and send it.

    Twin: netstack.ipv4.ip_output.ip_local_out.
    Kernel: net/ipv6/output_core.c, ip6_local_out() / __ip6_local_out().
    """
    nh = skb.network_header
    length = skb.tail - nh - IPV6_HLEN
    if length > 0xFFFF:
        length = 0
    _H.pack_into(skb.buf, nh + 4, length)
    skb.protocol = ETH_P_IPV6
    ipv6.ip6_mib.OutRequests += 1
    dst = skb.dst
    assert dst is not None
    return int(dst.output(skb))


@kernel("net/ipv6/ip6_output.c", "ip6_output")
def ip6_output(ipv6: Ipv6, skb: SkBuff) -> int:
    """``dst.output`` of IPv6 routes.

    Twin: netstack.ipv4.ip_output.ip_output.
    Kernel: net/ipv6/ip6_output.c, ip6_output().
    """
    rt: Any = skb.dst
    dev = rt.dev
    idev = rt.rt6i_idev
    skb.protocol = ETH_P_IPV6
    skb.dev = dev
    if idev is None or idev.cnf.disable_ipv6:
        ipv6.ip6_mib.OutDiscards += 1
        kfree_skb(skb, DropReason.IPV6DISABLED)
        return 0
    return ip6_finish_output(ipv6, skb)


@kernel("ip6_skb_dst_mtu")
def ip6_skb_dst_mtu(skb: SkBuff) -> int:
    """The MTU to fragment to: the device's for PMTUDISC_PROBE sockets.

    Kernel: ip6_skb_dst_mtu().
    """
    dst: Any = skb.dst
    sk = skb.sk
    if sk is not None and getattr(sk, "pmtudisc6", 0) >= IPV6_PMTUDISC_PROBE:
        return int(dst.dev.mtu)
    return int(dst.mtu())


@kernel("__ip6_finish_output")
def ip6_finish_output(ipv6: Ipv6, skb: SkBuff) -> int:
    """Fragment when bigger than the path MTU; a GSO skb as long only if its
    segments do not fit (:func:`ip6_finish_output_gso`).

    Twin: netstack.ipv4.ip_output.ip_finish_output.
    Kernel: __ip6_finish_output().
    """
    mtu = ip6_skb_dst_mtu(skb)
    if skb.tail - skb.data > mtu:  # (a GSO skb no longer than the MTU validates)
        if skb.gso_size:
            return ip6_finish_output_gso(ipv6, skb, mtu)
        return ip6_fragment(ipv6, skb)
    return ip6_finish_output2(ipv6, skb)


@kernel("ip6_finish_output_gso")
def ip6_finish_output_gso(ipv6: Ipv6, skb: SkBuff, mtu: int) -> int:
    """A GSO skb longer than the MTU: on if its segments fit, else the slow path.

    IPv4's counterpart is ``ip_finish_output_gso`` (netstack.ipv4.ip_output).
    Kernel: ip6_finish_output_gso().
    """
    if not skb_gso_validate_network_len(skb, mtu):
        return ip6_finish_output_gso_slowpath_drop(ipv6, skb, mtu)
    return ip6_finish_output2(ipv6, skb)


@kernel("ip6_finish_output_gso_slowpath_drop")
def ip6_finish_output_gso_slowpath_drop(ipv6: Ipv6, skb: SkBuff, mtu: int) -> int:
    """Segments longer than the path MTU: cut the skb in software and send each
    segment through :func:`ip6_fragment` — Packet Too Big to the source and
    ``FragFails`` unless the skb may be fragmented (``ignore_df``) — or, one
    that fits (the last may be short), as it is: no atomic fragment (RFC 8021).

    A GRO skb forwarded onto a route whose MTU is below the egress device's
    (``ip6_forward`` checks the device's mtu6 unless the route's MTU is
    locked; here ``dst_mtu`` is the route's), or a GSO skb of a TSO-capable
    tunnel over a smaller MTU. Before, netstack sent such an skb on whole.

    Kernel: ip6_finish_output_gso_slowpath_drop().
    """
    segs = skb_gso_segment(skb, netif_skb_features(skb) & ~NETIF_F_GSO_MASK)
    if segs is None:
        kfree_skb(skb, DropReason.NOMEM)
        return -12  # -ENOMEM
    if segs is not skb:
        consume_skb(skb)
    ret = 0
    while segs is not None:  # skb_list_walk_safe()
        nxt = segs.next
        segs.next = None  # skb_mark_not_on_list()
        if segs.tail - segs.data > mtu:
            err = ip6_fragment(ipv6, segs)
        else:
            err = ip6_finish_output2(ipv6, segs)
        if err and ret == 0:
            ret = err
        segs = nxt
    return ret


@kernel("net/ipv6/output_core.c", "ip6_find_1stfragopt")
def ip6_find_1stfragopt(buf: bytearray, nh: int, end: int) -> tuple[int, int]:
    """``(length of the unfragmentable part, offset of its last nexthdr byte)``.

    Hop-by-hop and routing headers, and destination options before a
    routing header, are repeated in every fragment; -1 if malformed.

    Kernel: net/ipv6/output_core.c, ip6_find_1stfragopt().
    """
    offset = IPV6_HLEN
    prevhdr = nh + 6
    found_rhdr = False
    nexthdr = buf[prevhdr]
    while offset < end - nh:
        if nexthdr == NEXTHDR_HOP:
            pass
        elif nexthdr == NEXTHDR_ROUTING:
            found_rhdr = True
        elif nexthdr == NEXTHDR_DEST:
            # a destination options header after a routing header, or a
            # home address option (not emulated), belongs to the fragments
            if found_rhdr:
                return offset, prevhdr
        else:
            return offset, prevhdr
        if nh + offset + 2 > end:
            return -1, prevhdr
        hlen = (buf[nh + offset + 1] + 1) << 3
        if offset + hlen > 0xFFFF:
            return -1, prevhdr
        prevhdr = nh + offset
        nexthdr = buf[prevhdr]
        offset += hlen
        if offset > end - nh:
            return -1, prevhdr
    return offset, prevhdr


@kernel("ip6_fragment")
def ip6_fragment(ipv6: Ipv6, skb: SkBuff) -> int:
    """Refuse (Packet Too Big) or cut into fragments.

    Twin: netstack.ipv4.ip_output.ip_do_fragment.
    Kernel: ip6_fragment().
    """
    mib = ipv6.ip6_mib
    rt: Any = skb.dst
    buf = skb.buf
    nh = skb.network_header
    hlen, prevhdr = ip6_find_1stfragopt(buf, nh, skb.tail)
    if hlen < 0:
        mib.FragFails += 1
        kfree_skb(skb, DropReason.NOT_SPECIFIED)
        return -22
    mtu = ip6_skb_dst_mtu(skb)
    if not skb.ignore_df and skb.tail - skb.data > mtu:
        return _fail_toobig(ipv6, skb, mtu)
    sk = skb.sk
    frag_size = getattr(sk, "frag_size", 0) if sk is not None else 0
    if frag_size and frag_size < mtu:
        mtu = frag_size
    if mtu < hlen + FRAG_HLEN + 8:
        return _fail_toobig(ipv6, skb, mtu)
    mtu -= hlen + FRAG_HLEN
    frag_id = ipv6_select_ident(ipv6)
    if skb.ip_summed == CHECKSUM_PARTIAL and not skb_checksum_help(skb):
        mib.FragFails += 1
        kfree_skb(skb, DropReason.SKB_CSUM)
        return -22
    buf = skb.buf
    nexthdr = buf[prevhdr]
    dev = rt.dev
    hh_len = ((dev.hard_header_len + dev.needed_headroom) & ~15) + 16
    header = bytearray(buf[nh : nh + hlen])
    header[prevhdr - nh] = NEXTHDR_FRAGMENT
    left = skb.tail - nh - hlen
    ptr = nh + hlen
    offset = 0
    err = 0
    while left > 0:
        length = min(left, mtu)
        if length < left:
            length &= ~7
        size = hlen + FRAG_HLEN + length
        frag = SkBuff(bytearray(hh_len + size), hh_len, hh_len + size)
        fb = frag.buf
        fb[hh_len : hh_len + hlen] = header
        left -= length
        FRAG_HDR.pack_into(
            fb, hh_len + hlen, nexthdr, 0, offset | (IP6_MF if left > 0 else 0), frag_id
        )
        fb[hh_len + hlen + FRAG_HLEN : hh_len + size] = buf[ptr : ptr + length]
        _H.pack_into(fb, hh_len + 4, size - IPV6_HLEN)
        frag.network_header = hh_len
        frag.transport_header = hh_len + hlen
        frag.protocol = ETH_P_IPV6
        frag.priority = skb.priority
        frag.dev = skb.dev
        frag.dst = rt.hold()
        ptr += length
        offset += length
        mib.FragCreates += 1
        rc = ip6_finish_output2(ipv6, frag)
        if rc < 0 and not err:
            err = rc
    mib.FragOKs += 1
    consume_skb(skb)
    return err


def _fail_toobig(ipv6: Ipv6, skb: SkBuff, mtu: int) -> int:
    ipv6.icmpv6_send(skb, ICMPV6_PKT_TOOBIG, 0, mtu)
    ipv6.ip6_mib.FragFails += 1
    kfree_skb(skb, DropReason.PKT_TOO_BIG)
    return -EMSGSIZE


@kernel("net/ipv6/ip6_output.c", "ip6_finish_output2")
def ip6_finish_output2(ipv6: Ipv6, skb: SkBuff) -> int:
    """Multicast loopback, the first hop's neighbour, transmit.

    Twin: netstack.ipv4.ip_output.ip_finish_output2.
    Kernel: net/ipv6/ip6_output.c, ip6_finish_output2().
    """
    rt: Any = skb.dst
    dev = rt.dev
    mib = ipv6.ip6_mib
    hh_len = ((dev.hard_header_len + dev.needed_headroom) & ~15) + 16  # LL_RESERVED_SPACE
    if skb.data < hh_len and dev.header_ops is not None:
        skb.cow_head(hh_len)
    buf = skb.buf
    nh = skb.network_header
    length = skb.tail - skb.data
    if buf[nh + 24] == 0xFF:  # multicast destination
        daddr = int.from_bytes(buf[nh + 24 : nh + 40], "big")
        sk = skb.sk
        mc_loop = getattr(sk, "mc_loop", True) if sk is not None else True
        if (
            not dev.flags & IFF_LOOPBACK
            and mc_loop
            and ipv6.addrconf.ipv6_chk_mcast_addr(dev, daddr)
        ):
            copy = skb.clone()
            copy.dst = rt.hold()
            dev_loopback_xmit(copy, dev)
            if buf[nh + 7] == 0:  # hop limit 0: only for us
                mib.OutDiscards += 1
                kfree_skb(skb, DropReason.NOT_SPECIFIED)
                return 0
        mib.OutMcastPkts += 1
        mib.OutMcastOctets += length
        if buf[nh + 25] & 0x0F <= IPV6_ADDR_SCOPE_NODELOCAL and not dev.flags & IFF_LOOPBACK:
            mib.OutDiscards += 1
            kfree_skb(skb, DropReason.NOT_SPECIFIED)
            return 0
        key = daddr
    elif rt.rt6i_flags & 0x0002:  # RTF_GATEWAY
        key = rt.rt6i_gateway
    else:
        key = rt6_nexthop(rt, int.from_bytes(buf[nh + 24 : nh + 40], "big"))
    mib.OutTransmits += 1
    mib.OutOctets += length
    tbl = ipv6.nd_tbl
    n = tbl.hash.get((dev.ifindex << 128) | key)
    if n is None:
        n = tbl.create(key, dev)
        if n is None:
            mib.OutNoRoutes += 1
            kfree_skb(skb, DropReason.NEIGH_CREATEFAIL)
            return -22
    if skb.dst_pending_confirm:  # sock_confirm_neigh()
        sk = skb.sk
        if sk is not None:
            sk.dst_pending_confirm = False
        neigh_confirm(n)
    return neigh_output(n, skb)
