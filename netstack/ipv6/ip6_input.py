"""IPv6 input: validation, extension headers, local delivery, forwarding.

Theory of operation::

    ipv6_rcv (ptype ETH_P_IPV6): other-host frames, IPv6 disabled, short
      header, version, loopback addresses from outside, multicast source or
      reserved/interface-local multicast destination → InHdrErrors / drops;
      payload length beyond the frame → InTruncatedPkts; link padding
      trimmed; hop-by-hop options parsed here (Router Alert, Jumbo → error)
      ─► ip6_rcv_finish: ip6_route_input sets skb.dst ─► dst.input:
        ip6_input (local addresses, anycast): ip6_input_finish walks the
            header chain by protocol handler — routing header (type 0
            deprecated: with segments left, ICMPv6 parameter problem),
            destination options, fragment (reassembly, then resubmit),
            no-next-header — then the upper-layer handler (ICMPv6, UDP …);
            multicast destinations must be groups this host joined; an
            unknown next header gets ICMPv6 parameter problem (code 1)
        ip6_mc_input: a group this host has joined on the device? ip6_input
        ip6_forward: forwarding off → InAddrErrors; hop limit ≤ 1 → ICMPv6
            time exceeded; same interface in and out → Redirect; link-local
            source leaving its link → ICMPv6 beyond scope; bigger than the
            egress MTU → ICMPv6 Packet Too Big (routers never fragment);
            hop limit decremented, ip6_output
        reject routes: ICMPv6 unreachable (no route / prohibited)

Options of hop-by-hop and destination headers are walked as TLVs
(``ip6_parse_tlv``): padding must be zero and at most 7 bytes, an unknown
option's two high type bits choose skip / discard / discard and ICMPv6
parameter problem (code 2, except for multicast destinations when 11).

Kernel: net/ipv6/ip6_input.c, net/ipv6/exthdrs.c, net/ipv6/ip6_output.c
(ip6_forward).
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any, Final

from netstack.core.dev import skb_orphan
from netstack.core.skbuff import (
    CHECKSUM_COMPLETE,
    PACKET_BROADCAST,
    PACKET_HOST,
    PACKET_LOOPBACK,
    PACKET_MULTICAST,
    PACKET_OTHERHOST,
    DropReason,
    SkBuff,
    consume_skb,
    kfree_skb,
)
from netstack.core.xmit import skb_gso_validate_network_len
from netstack.ipv6.constants import RTF_GATEWAY
from netstack.neigh.neighbour import pneigh_lookup
from netstack.sites import TIMED, kernel, spend
from netstack.wire.checksum import csum_block_sub, csum_partial
from netstack.wire.icmpv6 import (
    ICMPV6_DEST_UNREACH,
    ICMPV6_EXC_HOPLIMIT,
    ICMPV6_HDR_FIELD,
    ICMPV6_NOT_NEIGHBOUR,
    ICMPV6_PARAMPROB,
    ICMPV6_PKT_TOOBIG,
    ICMPV6_TIME_EXCEED,
    ICMPV6_UNK_NEXTHDR,
    ICMPV6_UNK_OPTION,
    NDISC_NEIGHBOUR_ADVERTISEMENT,
    NDISC_NEIGHBOUR_SOLICITATION,
    NDISC_REDIRECT,
    NDISC_ROUTER_ADVERTISEMENT,
    NDISC_ROUTER_SOLICITATION,
)
from netstack.wire.ipv6 import (
    IPPROTO_ICMPV6,
    IPV6_ADDR_LINKLOCAL,
    IPV6_ADDR_LOOPBACK,
    IPV6_ADDR_MULTICAST,
    IPV6_HLEN,
    IPV6_MIN_MTU,
    IPV6_SRCRT_TYPE_3,
    IPV6_SRCRT_TYPE_4,
    IPV6_TLV_CALIPSO,
    IPV6_TLV_JUMBO,
    IPV6_TLV_PAD1,
    IPV6_TLV_PADN,
    IPV6_TLV_ROUTERALERT,
    NEXTHDR_HOP,
    addr_at,
    ipv6_addr_type,
    ipv6_ext_hdr,
    ipv6_skip_exthdr,
)

if TYPE_CHECKING:
    from netstack.core.net import PacketType
    from netstack.core.netdevice import NetDevice
    from netstack.ipv6.netns import Ipv6

__all__ = [
    "Inet6SkbParm",
    "ip6_forward",
    "ip6_input",
    "ip6_mc_input",
    "ip6_parse_tlv",
    "ipv6_destopt_rcv",
    "ipv6_rcv",
    "ipv6_rthdr_rcv",
    "nodata_rcv",
]

_H: Final = struct.Struct("!H")
IP6SKB_XFRM_TRANSFORMED: Final = 1
IP6SKB_FORWARDED: Final = 2
IP6SKB_REROUTED: Final = 4
IP6SKB_ROUTERALERT: Final = 8
IP6SKB_FRAGMENTED: Final = 16
IP6SKB_JUMBOGRAM: Final = 128

_NDISC_TYPES: Final = frozenset(
    (
        NDISC_ROUTER_SOLICITATION,
        NDISC_ROUTER_ADVERTISEMENT,
        NDISC_NEIGHBOUR_SOLICITATION,
        NDISC_NEIGHBOUR_ADVERTISEMENT,
        NDISC_REDIRECT,
    )
)
INET6_PROTO_NOPOLICY: Final = 0x1
INET6_PROTO_FINAL: Final = 0x2


class Inet6SkbParm:
    """``IP6CB(skb)``: what input processing learnt about a packet (``inet6_skb_parm``)."""

    __slots__ = ("dst0", "dst1", "flags", "frag_max_size", "iif", "lastopt", "nhoff", "ra", "srcrt")

    def __init__(self, iif: int) -> None:
        self.iif = iif
        self.nhoff = 6  # offsetof(struct ipv6hdr, nexthdr)
        self.flags = 0
        self.frag_max_size = 0
        self.ra = 0
        self.srcrt = 0
        self.lastopt = 0
        self.dst0 = 0
        self.dst1 = 0


def ip6cb(skb: SkBuff) -> Inet6SkbParm:
    """The skb's IP6CB, created on first use."""
    cb = skb.cb
    if not isinstance(cb, Inet6SkbParm):
        dev = skb.dev
        cb = skb.cb = Inet6SkbParm(dev.ifindex if dev is not None else 0)
    return cb


# ---------------------------------------------------------------------------
# ipv6_rcv
# ---------------------------------------------------------------------------


@kernel("net/ipv6/ip6_input.c", "ipv6_rcv", "ip6_rcv_core")
def ipv6_rcv(ipv6: Ipv6, skb: SkBuff, dev: NetDevice, pt: PacketType, orig_dev: NetDevice) -> None:
    """Validate a received IPv6 packet.

    Twin: netstack.ipv4.ip_input.ip_rcv.
    Kernel: net/ipv6/ip6_input.c, ipv6_rcv() / ip6_rcv_core().
    """
    if TIMED:
        spend("ipv6_rcv")
    if skb.pkt_type == PACKET_OTHERHOST:
        kfree_skb(skb, DropReason.OTHERHOST)
        return
    mib = ipv6.ip6_mib
    length = skb.tail - skb.data
    mib.InReceives += 1
    mib.InOctets += length
    idev = dev.ip6_ptr
    if idev is None or idev.cnf.disable_ipv6:
        mib.InDiscards += 1
        kfree_skb(skb, DropReason.IPV6DISABLED if idev is not None else DropReason.NOT_SPECIFIED)
        return
    skb.cb = Inet6SkbParm(dev.ifindex)
    if length < IPV6_HLEN:
        mib.InHdrErrors += 1
        kfree_skb(skb, DropReason.IP_INHDR)
        return
    buf = skb.buf
    nh = skb.data
    if buf[nh] >> 4 != 6:
        mib.InHdrErrors += 1
        kfree_skb(skb, DropReason.UNHANDLED_PROTO)
        return
    ecn = (buf[nh + 1] >> 4) & 3
    if ecn == 0:
        mib.InNoECTPkts += 1
    elif ecn == 1:
        mib.InECT1Pkts += 1
    elif ecn == 2:
        mib.InECT0Pkts += 1
    else:
        mib.InCEPkts += 1
    saddr = addr_at(buf, nh + 8)
    daddr = addr_at(buf, nh + 24)
    if (saddr == 1 or daddr == 1) and not dev.flags & 0x8:  # RFC 4291 §2.5.3
        mib.InHdrErrors += 1
        kfree_skb(skb, DropReason.IP_INHDR)
        return
    if buf[nh + 24] == 0xFF:
        scope = buf[nh + 25] & 0x0F
        if scope == 0:  # RFC 4291 §2.7: reserved scope must be silently dropped
            mib.InHdrErrors += 1
            kfree_skb(skb, DropReason.IP_INHDR)
            return
        if scope == 1 and not (skb.pkt_type == PACKET_LOOPBACK or dev.flags & 0x8):
            # interface-local multicast from outside
            mib.InHdrErrors += 1
            kfree_skb(skb, DropReason.IP_INHDR)
            return
    elif (
        skb.pkt_type in (PACKET_BROADCAST, PACKET_MULTICAST)
        and idev.cnf.drop_unicast_in_l2_multicast
    ):
        mib.InHdrErrors += 1
        kfree_skb(skb, DropReason.UNICAST_IN_L2_MULTICAST)
        return
    if buf[nh + 8] == 0xFF:  # multicast source (RFC 4291 §2.7)
        mib.InHdrErrors += 1
        kfree_skb(skb, DropReason.IP_INHDR)
        return
    skb.network_header = nh
    skb.transport_header = nh + IPV6_HLEN
    pkt_len = (buf[nh + 4] << 8) | buf[nh + 5]
    nexthdr = buf[nh + 6]
    if pkt_len or nexthdr != NEXTHDR_HOP:
        if pkt_len + IPV6_HLEN > length:
            mib.InTruncatedPkts += 1
            kfree_skb(skb, DropReason.PKT_TOO_SMALL)
            return
        if pkt_len + IPV6_HLEN < length:  # pskb_trim_rcsum(): link padding
            end = nh + IPV6_HLEN + pkt_len
            if skb.ip_summed == CHECKSUM_COMPLETE:
                skb.csum = csum_block_sub(
                    skb.csum, csum_partial(buf, end, skb.tail), end - skb.data
                )
            skb.tail = end
    if nexthdr == NEXTHDR_HOP and not ipv6_parse_hopopts(ipv6, skb):
        mib.InHdrErrors += 1
        return
    if (
        skb.destructor is not None or skb.sk is not None
    ):  # "Must drop socket now because of tproxy."
        skb_orphan(skb)  # a sender's socket on this machine (veth) is uncharged here
    hook = ipv6.nf_prerouting  # NF_HOOK(NFPROTO_IPV6, NF_INET_PRE_ROUTING, …)
    if hook is not None and not hook(skb):
        kfree_skb(skb, DropReason.NETFILTER_DROP)
        return
    ip6_rcv_finish(ipv6, skb)


@kernel("ip6_rcv_finish")
def ip6_rcv_finish(ipv6: Ipv6, skb: SkBuff) -> None:
    """Route the packet and hand it to ``dst.input``.

    Twin: netstack.ipv4.ip_input.ip_rcv_finish.
    Kernel: ip6_rcv_finish().
    """
    if skb.dst is None:
        ipv6.ip6_route_input(skb)
    dst = skb.dst
    assert dst is not None
    dst.input(skb)


# ---------------------------------------------------------------------------
# TLV options (hop-by-hop, destination options)
# ---------------------------------------------------------------------------


@kernel("net/ipv6/exthdrs.c", "ip6_parse_tlv", "ip6_tlvopt_unknown")
def ip6_parse_tlv(ipv6: Ipv6, skb: SkBuff, off: int, hopbyhop: bool) -> bool:
    """Walk the options of the header at *off*; False if the packet was dropped.

    Kernel: net/ipv6/exthdrs.c, ip6_parse_tlv() and ip6_tlvopt_unknown().
    """
    buf = skb.buf
    nh = skb.network_header
    length = ((buf[off + 1] + 1) << 3) - 2
    i = off + 2
    padlen = 0
    tlv_count = 0
    max_count = ipv6.max_hbh_opts_number if hopbyhop else ipv6.max_dst_opts_number
    if max_count < 0:
        max_count = -max_count
    while length > 0:
        t = buf[i]
        if t == IPV6_TLV_PAD1:
            optlen = 1
            padlen += 1
            if padlen > 7:
                return _bad_tlv(skb)
        else:
            if length < 2:
                return _bad_tlv(skb)
            optlen = buf[i + 1] + 2
            if optlen > length:
                return _bad_tlv(skb)
            if t == IPV6_TLV_PADN:
                # "RFC 2460 states that the purpose of PadN is to align the
                # containing header to multiples of 8": at most 7 bytes, all zero
                padlen += optlen
                if padlen > 7:
                    return _bad_tlv(skb)
                if any(buf[i + 2 : i + optlen]):
                    return _bad_tlv(skb)
            else:
                padlen = 0
                handled = False
                if hopbyhop:
                    if t == IPV6_TLV_ROUTERALERT:
                        if optlen != 4:
                            ipv6.net.log.debug("ipv6_hop_ra: wrong RA length", len=optlen)
                            return _bad_tlv(skb)
                        cb = ip6cb(skb)
                        cb.ra = i - nh
                        cb.flags |= IP6SKB_ROUTERALERT
                        handled = True
                    elif t == IPV6_TLV_JUMBO:
                        return ipv6_hop_jumbo(ipv6, skb, i, optlen)
                    elif t == IPV6_TLV_CALIPSO:
                        handled = True  # (no CALIPSO policy: accepted as is)
                if not handled:
                    tlv_count += 1
                    if tlv_count > max_count:
                        return _bad_tlv(skb)
                    action = (t & 0xC0) >> 6
                    if action == 1:
                        kfree_skb(skb, DropReason.IP_INHDR)
                        return False
                    if action == 3 and addr_at(buf, nh + 24) >> 120 == 0xFF:
                        kfree_skb(skb, DropReason.IP_INHDR)
                        return False
                    if action in (2, 3):
                        ipv6.icmpv6_param_prob(skb, ICMPV6_UNK_OPTION, i - nh)
                        return False
        i += optlen
        length -= optlen
    if length == 0:
        return True
    return _bad_tlv(skb)


def _bad_tlv(skb: SkBuff) -> bool:
    kfree_skb(skb, DropReason.IP_INHDR)
    return False


@kernel("net/ipv6/exthdrs.c", "ipv6_hop_jumbo")
def ipv6_hop_jumbo(ipv6: Ipv6, skb: SkBuff, optoff: int, optlen: int) -> bool:
    """A Jumbo Payload option: only valid for > 65535 bytes, so here always an error.

    Kernel: net/ipv6/exthdrs.c, ipv6_hop_jumbo().
    """
    buf = skb.buf
    nh = skb.network_header
    if optlen != 6 or (optoff - nh) & 3 != 2:
        ipv6.net.log.debug("ipv6_hop_jumbo: wrong jumbo opt length/alignment", len=optlen)
        return _bad_tlv(skb)
    pkt_len = struct.unpack_from("!I", buf, optoff + 2)[0]
    if pkt_len <= 65535:
        ipv6.ip6_mib.InHdrErrors += 1
        ipv6.icmpv6_param_prob(skb, ICMPV6_HDR_FIELD, optoff + 2 - nh)
        return False
    if (buf[nh + 4] << 8) | buf[nh + 5]:
        ipv6.ip6_mib.InHdrErrors += 1
        ipv6.icmpv6_param_prob(skb, ICMPV6_HDR_FIELD, optoff - nh)
        return False
    if pkt_len > skb.tail - nh - IPV6_HLEN:
        ipv6.ip6_mib.InTruncatedPkts += 1
        kfree_skb(skb, DropReason.PKT_TOO_SMALL)
        return False
    return _bad_tlv(skb)  # (never reached over the emulated links: MTU ≤ 65535)


@kernel("ipv6_parse_hopopts")
def ipv6_parse_hopopts(ipv6: Ipv6, skb: SkBuff) -> bool:
    """The hop-by-hop header right after the IPv6 header.

    Kernel: ipv6_parse_hopopts().
    """
    nh = skb.network_header
    off = nh + IPV6_HLEN
    if skb.tail < off + 8 or skb.tail < off + ((skb.buf[off + 1] + 1) << 3):
        kfree_skb(skb, DropReason.IP_INHDR)
        return False
    cb = ip6cb(skb)
    if ip6_parse_tlv(ipv6, skb, off, True):
        skb.transport_header = off + ((skb.buf[off + 1] + 1) << 3)
        cb.nhoff = IPV6_HLEN
        return True
    return False


# ---------------------------------------------------------------------------
# Extension header protocol handlers (inet6_protos entries)
# ---------------------------------------------------------------------------


@kernel("ipv6_destopt_rcv")
def ipv6_destopt_rcv(ipv6: Ipv6, skb: SkBuff) -> int:
    """Destination options. Returns 1 (resubmit) or -1 (consumed).

    Kernel: ipv6_destopt_rcv().
    """
    th = skb.transport_header
    buf = skb.buf
    if skb.tail < th + 8 or skb.tail < th + ((buf[th + 1] + 1) << 3):
        ipv6.ip6_mib.InHdrErrors += 1
        kfree_skb(skb, DropReason.IP_INHDR)
        return -1
    cb = ip6cb(skb)
    cb.lastopt = cb.dst1 = th - skb.network_header
    if ip6_parse_tlv(ipv6, skb, th, False):
        skb.transport_header = th + ((buf[th + 1] + 1) << 3)
        cb.nhoff = th - skb.network_header
        return 1
    ipv6.ip6_mib.InHdrErrors += 1
    return -1


@kernel("ipv6_rthdr_rcv")
def ipv6_rthdr_rcv(ipv6: Ipv6, skb: SkBuff) -> int:
    """A routing header. Returns 1 (resubmit) or -1 (consumed).

    Kernel: ipv6_rthdr_rcv().
    """
    th = skb.transport_header
    buf = skb.buf
    nh = skb.network_header
    mib = ipv6.ip6_mib
    if skb.tail < th + 8 or skb.tail < th + ((buf[th + 1] + 1) << 3):
        mib.InHdrErrors += 1
        kfree_skb(skb, DropReason.IP_INHDR)
        return -1
    rtype = buf[th + 2]
    segments_left = buf[th + 3]
    dev = skb.dev
    idev = dev.ip6_ptr if dev is not None else None
    if rtype == IPV6_SRCRT_TYPE_4:  # segment routing: seg6_enabled is 0
        seg6 = min(ipv6.devconf_all.seg6_enabled, idev.cnf.seg6_enabled if idev else 0)
        if not seg6:
            kfree_skb(skb, DropReason.NOT_SPECIFIED)
            return -1
    if rtype == IPV6_SRCRT_TYPE_3:  # RPL source routing: rpl_seg_enabled is 0
        rpl = min(ipv6.devconf_all.rpl_seg_enabled, idev.cnf.rpl_seg_enabled if idev else 0)
        if not rpl:
            kfree_skb(skb, DropReason.NOT_SPECIFIED)
            return -1
    if addr_at(buf, nh + 24) >> 120 == 0xFF or skb.pkt_type != PACKET_HOST:
        mib.InAddrErrors += 1
        kfree_skb(skb, DropReason.IP_INADDRERRORS)
        return -1
    cb = ip6cb(skb)
    if segments_left == 0:
        cb.lastopt = cb.srcrt = th - nh
        skb.transport_header = th + ((buf[th + 1] + 1) << 3)
        cb.dst0 = cb.dst1
        cb.dst1 = 0
        cb.nhoff = th - nh
        return 1
    # type 2 (Mobile IPv6) is not emulated; RH0 is deprecated (RFC 5095) and
    # every other type unsupported: "unknown_rh"
    mib.InHdrErrors += 1
    ipv6.icmpv6_param_prob(skb, ICMPV6_HDR_FIELD, th + 2 - nh)
    return -1


@kernel("dst_discard")
def nodata_rcv(ipv6: Ipv6, skb: SkBuff) -> int:
    """No Next Header (59): nothing follows.

    Kernel: dst_discard() as nodata_protocol.
    """
    consume_skb(skb)
    return 0


# ---------------------------------------------------------------------------
# Local delivery
# ---------------------------------------------------------------------------


@kernel("ip6_input", "ip6_input_finish")
def ip6_input(ipv6: Ipv6, skb: SkBuff) -> int:
    """``dst.input`` of local and anycast routes.

    Twin: netstack.ipv4.ip_input.ip_local_deliver.
    Kernel: ip6_input() → ip6_input_finish().
    """
    ip6_protocol_deliver(ipv6, skb, 0, False)
    return 0


@kernel("ip6_protocol_deliver_rcu")
def ip6_protocol_deliver(ipv6: Ipv6, skb: SkBuff, nexthdr: int, have_final: bool) -> None:
    """Walk the header chain to the upper-layer protocol.

    Kernel: ip6_protocol_deliver_rcu().
    """
    mib = ipv6.ip6_mib
    protos = ipv6.inet6_protos
    while True:
        cb = ip6cb(skb)
        nhoff = cb.nhoff
        if not have_final:
            if skb.transport_header > skb.tail:
                mib.InDiscards += 1
                kfree_skb(skb, DropReason.NOT_SPECIFIED)
                return
            skb.data = skb.transport_header
            nexthdr = skb.buf[skb.network_header + nhoff]
        raw = ipv6.raw_local_deliver(skb, nexthdr)
        ipprot = protos.get(nexthdr)
        if ipprot is None:
            if not raw:
                mib.InUnknownProtos += 1
                skb.data = skb.network_header
                ipv6.icmpv6_send(skb, ICMPV6_PARAMPROB, ICMPV6_UNK_NEXTHDR, nhoff)
                kfree_skb(skb, DropReason.IP_NOPROTO)
            else:
                mib.InDelivers += 1
                consume_skb(skb)
            return
        if have_final:
            if not ipprot.flags & INET6_PROTO_FINAL:
                mib.InDiscards += 1
                kfree_skb(skb, DropReason.NOT_SPECIFIED)
                return
        elif ipprot.flags & INET6_PROTO_FINAL:
            have_final = True
            if skb.ip_summed == CHECKSUM_COMPLETE:  # skb_postpull_rcsum()
                nh = skb.network_header
                skb.csum = csum_block_sub(
                    skb.csum, csum_partial(skb.buf, nh, skb.transport_header), 0
                )
            buf = skb.buf
            nh = skb.network_header
            if buf[nh + 24] == 0xFF:
                daddr = addr_at(buf, nh + 24)
                dev = skb.dev
                if (
                    dev is not None
                    and not ipv6.addrconf.ipv6_chk_mcast_addr(dev, daddr)
                    and not ipv6_is_mld(skb, nexthdr)
                ):
                    mib.InAddrErrors += 1
                    kfree_skb(skb, DropReason.IP_INADDRERRORS)
                    return
        ret = ipprot.handler(skb)
        if ret > 0:
            if ipprot.flags & INET6_PROTO_FINAL:
                nexthdr = ret  # "most likely UDP encapsulation"
                continue
            have_final = False
            continue
        if ret == 0:
            mib.InDelivers += 1
        return


@kernel("ipv6_is_mld")
def ipv6_is_mld(skb: SkBuff, nexthdr: int) -> bool:
    """Is this an MLD message (delivered even without membership)?

    Kernel: ipv6_is_mld().
    """
    if nexthdr != 58:
        return False
    th = skb.transport_header
    if skb.tail < th + 8:
        return False
    return skb.buf[th] in (130, 131, 132, 143)


@kernel("ip6_mc_input")
def ip6_mc_input(ipv6: Ipv6, skb: SkBuff) -> int:
    """``dst.input`` of ff00::/8: deliver if this host is a member.

    Kernel: ip6_mc_input().
    """
    dev = skb.dev
    assert dev is not None
    mib = ipv6.ip6_mib
    mib.InMcastPkts += 1
    mib.InMcastOctets += skb.tail - skb.data
    nh = skb.network_header
    daddr = addr_at(skb.buf, nh + 24)
    if ipv6.addrconf.ipv6_chk_mcast_addr(dev, daddr):
        return ip6_input(ipv6, skb)
    # not a member (and no multicast routing): RFC 8200 says drop silently
    kfree_skb(skb, DropReason.NOT_SPECIFIED)
    return 0


# ---------------------------------------------------------------------------
# Forwarding
# ---------------------------------------------------------------------------


@kernel("ip6_pkt_too_big")
def ip6_pkt_too_big(skb: SkBuff, mtu: int) -> bool:
    """Kernel: ip6_pkt_too_big()."""
    if skb.tail - skb.data <= mtu:
        return False
    cb = skb.cb
    if isinstance(cb, Inet6SkbParm) and cb.frag_max_size and cb.frag_max_size > mtu:
        return True
    if skb.ignore_df:
        return False
    return not (skb.gso_size and skb_gso_validate_network_len(skb, mtu))


@kernel("net/ipv6/ip6_output.c", "ip6_forward_proxy_check")
def ip6_forward_proxy_check(skb: SkBuff) -> int:
    """A packet to a proxied address: 1 deliver it here (an NDP message),
    -1 drop it (a link-local address: the sender hears ICMPv6 address
    unreachable), 0 forward it.

    Kernel: net/ipv6/ip6_output.c, ip6_forward_proxy_check().
    """
    buf = skb.buf
    nh = skb.network_header
    nexthdr = buf[nh + 6]
    offset = IPV6_HLEN
    if ipv6_ext_hdr(nexthdr):
        start, nexthdr, _frag_off = ipv6_skip_exthdr(buf, nh + IPV6_HLEN, nexthdr, skb.tail)
        if start < 0:
            return 0
        offset = start - nh
    if nexthdr == IPPROTO_ICMPV6:
        if skb.tail < nh + offset + 1:  # pskb_may_pull()
            return 0
        if buf[nh + offset] in _NDISC_TYPES:
            # "For reaction involving unicast neighbor discovery message destined
            # to the proxied address, pass it to input function."
            return 1
    if ipv6_addr_type(addr_at(buf, nh + 24)) & IPV6_ADDR_LINKLOCAL:
        dst = skb.dst
        if dst is not None:
            dst.link_failure(skb)  # dst_link_failure()
        return -1
    return 0


@kernel("net/ipv6/ip6_output.c", "ip6_forward")
def ip6_forward(ipv6: Ipv6, skb: SkBuff) -> int:
    """Forward a packet routed through this host.

    Twin: netstack.ipv4.ip_input.ip_forward.
    Kernel: net/ipv6/ip6_output.c, ip6_forward().
    """
    rt: Any = skb.dst
    mib = ipv6.ip6_mib
    buf = skb.buf
    nh = skb.network_header
    if not ipv6.devconf_all.forwarding:
        mib.InAddrErrors += 1
        kfree_skb(skb, DropReason.IP_INADDRERRORS)
        return -22
    if skb.pkt_type != PACKET_HOST:
        kfree_skb(skb, DropReason.NOT_SPECIFIED)
        return -22
    if skb.sk is not None:
        kfree_skb(skb, DropReason.NOT_SPECIFIED)
        return -22
    skb.data = nh
    cb = ip6cb(skb)
    if buf[nh + 7] <= 1:
        ipv6.icmpv6_send(skb, ICMPV6_TIME_EXCEED, ICMPV6_EXC_HOPLIMIT, 0)
        mib.InHdrErrors += 1
        kfree_skb(skb, DropReason.IP_INHDR)
        return -110  # -ETIMEDOUT
    # XXX: idev->cnf.proxy_ndp? (the kernel reads only all.proxy_ndp here)
    if ipv6.devconf_all.proxy_ndp and (
        pneigh_lookup(ipv6.nd_tbl, addr_at(buf, nh + 24), skb.dev) is not None
    ):
        proxied = ip6_forward_proxy_check(skb)
        if proxied > 0:
            # "proxying is not forwarding": delivered here with the hop limit
            # unchanged (an NDP message keeps its 255)
            return ip6_input(ipv6, skb)
        if proxied < 0:
            mib.InDiscards += 1
            kfree_skb(skb, DropReason.NOT_SPECIFIED)
            return -22
    out = rt.dev
    if cb.iif == out.ifindex and cb.srcrt == 0:
        # "incoming and outgoing devices are the same: send a redirect"
        daddr = addr_at(buf, nh + 24)
        target = rt.rt6i_gateway if rt.rt6i_flags & RTF_GATEWAY else daddr
        if ipv6.inet_peer_xrlim_allow(daddr, ipv6.net.clock.hz):
            ipv6.ndisc_send_redirect(skb, target)
    else:
        addrtype = ipv6_addr_type(addr_at(buf, nh + 8))
        if addrtype == 0 or addrtype & (IPV6_ADDR_MULTICAST | IPV6_ADDR_LOOPBACK):
            mib.InAddrErrors += 1
            kfree_skb(skb, DropReason.IP_INADDRERRORS)
            return -22
        if addrtype & IPV6_ADDR_LINKLOCAL:
            ipv6.icmpv6_send(skb, ICMPV6_DEST_UNREACH, ICMPV6_NOT_NEIGHBOUR, 0)
            mib.InAddrErrors += 1
            kfree_skb(skb, DropReason.IP_INADDRERRORS)
            return -22
    mtu = ip6_dst_mtu_maybe_forward(rt)
    if mtu < IPV6_MIN_MTU:
        mtu = IPV6_MIN_MTU
    if ip6_pkt_too_big(skb, mtu):
        skb.dev = out  # "force OUTPUT device used as source address"
        ipv6.icmpv6_send(skb, ICMPV6_PKT_TOOBIG, 0, mtu)
        mib.InTooBigErrors += 1
        mib.FragFails += 1
        kfree_skb(skb, DropReason.PKT_TOO_BIG)
        return -90
    need = ((out.hard_header_len + out.needed_headroom) & ~15) + 16
    if skb.cloned or skb.data < need:  # skb_cow()
        skb.cow_head(need)
        buf = skb.buf
        nh = skb.network_header
    buf[nh + 7] -= 1  # "Mangling hops number delayed to point after skb COW"
    cb.flags |= IP6SKB_FORWARDED
    # ip6_forward_finish()
    mib.OutForwDatagrams += 1
    if skb.ip_summed == CHECKSUM_COMPLETE:  # skb_forward_csum()
        skb.ip_summed = 0
    return int(rt.output(skb))


@kernel("include/net/ip6_route.h", "ip6_dst_mtu_maybe_forward")
def ip6_dst_mtu_maybe_forward(rt: Any) -> int:
    """Forwarding uses the egress device's mtu6 unless the MTU metric is locked.

    Kernel: include/net/ip6_route.h, ip6_dst_mtu_maybe_forward().
    """
    if rt.metric_mtu and getattr(rt.from_, "mtu_lock", False):
        return int(rt.metric_mtu)
    idev = rt.rt6i_idev
    return int(idev.cnf.mtu6) if idev is not None else IPV6_MIN_MTU
