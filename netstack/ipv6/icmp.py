"""ICMPv6 (RFC 4443): receive, echo, errors to applications, and sending errors.

Theory of operation::

    icmpv6_rcv: checksum (pseudo-header, next header 58) ─► per-type counters
      ─► echo request → icmpv6_echo_reply (from the address asked, unless it
         was multicast: then by source address selection) | echo reply →
         ping sockets | errors (destination unreachable, packet too big, time
         exceeded, parameter problem, unknown error types) → icmpv6_notify:
         skip the quoted packet's extension headers, call the quoted
         protocol's error handler (udpv6_err, ping's, icmpv6_err which learns
         the PMTU of Packet Too Big) | ND messages → ndisc_rcv
    icmp6_send(skb, type, code, info): RFC 4443 §2.4 — never about a packet
      sent to multicast or as link-layer multicast (except Packet Too Big
      and parameter problem code 2 for an option whose type asks for it),
      never from an unspecified or multicast source, never about an ICMPv6
      error; rate limited globally (``icmp_msgs_per_sec``/``burst``) and per
      destination (``net.ipv6.icmp.ratelimit``, wider for shorter routes)
      for the types in ``ratemask``; the quote is as much of the packet as
      keeps the message within the minimum MTU (1280).

The global bucket is IPv4's (``icmp_global_allow``/``icmp_global_consume``
of net/ipv4/icmp.c, one per Net, reached through ``net.ipv4``): ICMP and
ICMPv6 errors draw on the same credit, as in the kernel since the bucket
moved to per-netns storage; the per-destination bucket
(inet_peer_xrlim_allow) is core.inetpeer's.

Kernel: net/ipv6/icmp.c, net/ipv6/ip6_icmp.c, net/ipv4/icmp.c
(icmp_global_allow, icmp_global_consume).
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any, Final

from netstack.core.inetpeer import inet_peer_xrlim_allow
from netstack.core.netdevice import IFF_LOOPBACK
from netstack.core.skbuff import (
    CHECKSUM_COMPLETE,
    CHECKSUM_PARTIAL,
    CHECKSUM_UNNECESSARY,
    PACKET_HOST,
    DropReason,
    SkBuff,
    consume_skb,
    kfree_skb,
)
from netstack.ipv6.constants import RTF_ANYCAST, RTF_LOCAL
from netstack.ipv6.ip6_input import Inet6SkbParm
from netstack.ipv6.route import Flowi6
from netstack.sites import kernel
from netstack.wire.checksum import csum_partial
from netstack.wire.icmpv6 import (
    ICMPV6_DEST_UNREACH,
    ICMPV6_ECHO_REPLY,
    ICMPV6_ECHO_REQUEST,
    ICMPV6_HLEN,
    ICMPV6_INFOMSG_MASK,
    ICMPV6_PARAMPROB,
    ICMPV6_PKT_TOOBIG,
    ICMPV6_TIME_EXCEED,
    ICMPV6_UNK_OPTION,
    NDISC_NEIGHBOUR_ADVERTISEMENT,
    NDISC_NEIGHBOUR_SOLICITATION,
    NDISC_REDIRECT,
    NDISC_ROUTER_ADVERTISEMENT,
    NDISC_ROUTER_SOLICITATION,
)
from netstack.wire.ipv6 import (
    IPPROTO_ICMPV6,
    IPV6_ADDR_MULTICAST,
    IPV6_HLEN,
    IPV6_MIN_MTU,
    addr_at,
    csum_ipv6_magic,
    ipv6_addr_needs_scope_id,
    ipv6_addr_type,
    ipv6_ext_hdr,
    ipv6_get_dsfield,
    ipv6_skip_exthdr,
)

if TYPE_CHECKING:
    from netstack.ipv6.netns import Ipv6
    from netstack.ipv6.route import Rt6Info

__all__ = [
    "icmp6_send",
    "icmpv6_echo_reply",
    "icmpv6_err",
    "icmpv6_notify",
    "icmpv6_param_prob",
    "icmpv6_rcv",
    "parse_ratemask",
]

ICMPV6_MSG_MAX: Final = 255
_I: Final = struct.Struct("!I")
_H: Final = struct.Struct("!H")


def parse_ratemask(text: str) -> int | None:
    """``0-1,3-127`` → a bit mask of ICMPv6 types (proc_do_large_bitmap's syntax)."""
    mask = 0
    text = text.strip()
    if not text:
        return 0
    for part in text.split(","):
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            return None
        a = int(lo)
        b = int(hi) if sep else a
        if a > b or b > ICMPV6_MSG_MAX:
            return None
        for t in range(a, b + 1):
            mask |= 1 << t
    return mask


def format_ratemask(mask: int) -> str:
    """The inverse of :func:`parse_ratemask`."""
    out: list[str] = []
    t = 0
    while t <= ICMPV6_MSG_MAX:
        if mask >> t & 1:
            start = t
            while t + 1 <= ICMPV6_MSG_MAX and mask >> (t + 1) & 1:
                t += 1
            out.append(str(start) if start == t else f"{start}-{t}")
        t += 1
    return ",".join(out)


# ---------------------------------------------------------------------------
# Rate limiting
# ---------------------------------------------------------------------------


@kernel("icmpv6_mask_allow")
def icmpv6_mask_allow(ipv6: Ipv6, icmp_type: int) -> bool:
    """True if *icmp_type* is not rate limited.

    Twin: netstack.ipv4.icmp.icmpv4_mask_allow.
    Kernel: icmpv6_mask_allow().
    """
    if icmp_type > ICMPV6_MSG_MAX:
        return True
    return not (ipv6.icmpv6_ratemask >> icmp_type) & 1


@kernel("icmpv6_global_allow")
def icmpv6_global_allow(ipv6: Ipv6, icmp_type: int) -> tuple[bool, bool]:
    """``(allowed, apply_ratelimit)``.

    Kernel: icmpv6_global_allow().
    """
    if icmpv6_mask_allow(ipv6, icmp_type):
        return True, False
    ipv4 = ipv6.net.ipv4
    if ipv4 is None or ipv4.icmp_global_allow():  # IPv4's bucket: one per Net for both
        return True, True
    ipv4.icmp_mib.OutRateLimitGlobal += 1  # ICMP_MIB_RATELIMITGLOBAL is IPv4's counter
    return False, False


@kernel("icmpv6_xrlim_allow")
def icmpv6_xrlim_allow(ipv6: Ipv6, fl6: Flowi6, apply_ratelimit: bool) -> bool:
    """The per-destination limit; wider routes get more.

    Twin: netstack.ipv4.icmp.icmpv4_xrlim_allow.
    Kernel: icmpv6_xrlim_allow().
    """
    if not apply_ratelimit:
        return True
    rt = ipv6.ip6_route_output(Flowi6(fl6.daddr, fl6.saddr, oif=fl6.oif, proto=IPPROTO_ICMPV6))
    try:
        if rt.error:
            ipv6.ip6_mib.OutNoRoutes += 1
            res = False
        elif rt.dev is not None and rt.dev.flags & IFF_LOOPBACK:
            res = True
        else:
            tmo = ipv6.net.clock.msecs_to_jiffies(ipv6.icmpv6_ratelimit)
            plen = rt.rt6i_dst[1]
            if plen < 128:
                tmo >>= (128 - plen) >> 5  # "Give more bandwidth to wider prefixes."
            res = inet_peer_xrlim_allow(
                ipv6.peers.inet_getpeer(fl6.daddr), tmo, ipv6.net.clock.jiffies
            )  # inet_getpeer_v6()
    finally:
        rt.release()
    if not res:
        ipv6.icmp6_mib.OutRateLimitHost += 1
    else:
        ipv4 = ipv6.net.ipv4
        if ipv4 is not None:
            ipv4.icmp_global_consume()
    return res


# ---------------------------------------------------------------------------
# Sending
# ---------------------------------------------------------------------------


@kernel("icmpv6_push_pending_frames")
def icmpv6_push(
    ipv6: Ipv6,
    rt: Rt6Info,
    saddr: int,
    daddr: int,
    icmp_type: int,
    code: int,
    word: bytes,
    data: bytes | bytearray,
    *,
    hlimit: int,
    tclass: int = 0,
) -> None:
    """Build and send one ICMPv6 message.

    Kernel: icmpv6_push_pending_frames().
    """
    length = ICMPV6_HLEN + len(data)
    skb = _ip6_output.ip6_make_skb(
        ipv6,
        rt,
        saddr,
        daddr,
        IPPROTO_ICMPV6,
        length,
        hlimit=hlimit,
        tclass=tclass,
        fl_dport=icmp_type << 8 | code,  # fl6_icmp_type, fl6_icmp_code
    )
    buf = skb.buf
    th = skb.transport_header
    buf[th] = icmp_type
    buf[th + 1] = code
    buf[th + 2] = buf[th + 3] = 0
    buf[th + 4 : th + 8] = word
    buf[th + 8 : th + length] = data
    c = csum_ipv6_magic(saddr, daddr, length, IPPROTO_ICMPV6, csum_partial(buf, th, th + length))
    _H.pack_into(buf, th + 2, c)
    ipv6.icmp6msg.out_types[icmp_type] += 1
    ipv6.icmp6_mib.OutMsgs += 1
    _ip6_output.ip6_local_out(ipv6, skb)


@kernel("icmp6_iif")
def _icmp6_iif(skb: SkBuff) -> int:
    """The real input device, even for traffic to ourselves over lo.

    Kernel: icmp6_iif().
    """
    dev = skb.dev
    iif = dev.ifindex if dev is not None else 0
    if dev is not None and dev.flags & IFF_LOOPBACK:
        rt: Any = skb.dst
        idev = getattr(rt, "rt6i_idev", None)
        if idev is not None:
            iif = idev.dev.ifindex
    return iif


@kernel("opt_unrec")
def _opt_unrec(skb: SkBuff, offset: int) -> bool:
    """Does the option at *offset* ask for an error even to multicast?

    Kernel: opt_unrec().
    """
    off = skb.network_header + offset
    if off >= skb.tail:
        return True
    return (skb.buf[off] & 0xC0) == 0x80


@kernel("is_ineligible")
def _is_ineligible(skb: SkBuff) -> bool:
    """Never answer an ICMPv6 error (or a packet with an unknown ICMPv6 type).

    Kernel: is_ineligible().
    """
    buf = skb.buf
    nh = skb.network_header
    ptr = nh + IPV6_HLEN
    if ptr > skb.tail:
        return True
    off, nexthdr, frag_off = ipv6_skip_exthdr(buf, ptr, buf[nh + 6], skb.tail)
    if off < 0:
        return False
    if nexthdr == IPPROTO_ICMPV6:
        if off >= skb.tail:
            return frag_off == 0
        return not buf[off] & ICMPV6_INFOMSG_MASK
    return False


@kernel("net/ipv6/icmp.c", "icmp6_send")
def icmp6_send(ipv6: Ipv6, skb: SkBuff, icmp_type: int, code: int, info: int) -> None:
    """Send an ICMPv6 error about *skb* to its source (the skb is not consumed).

    Twin: netstack.ipv4.icmp.icmp_send.
    Kernel: net/ipv6/icmp.c, icmp6_send().
    """
    nh = skb.network_header
    if nh < 0 or nh + IPV6_HLEN > skb.tail:
        return
    dev = skb.dev
    if dev is None:
        return
    buf = skb.buf
    daddr_pkt = addr_at(buf, nh + 24)
    saddr_pkt = addr_at(buf, nh + 8)
    addrconf = ipv6.addrconf
    saddr = 0
    if addrconf.ipv6_chk_addr(daddr_pkt, dev) or addrconf.ipv6_chk_acast_addr(dev, daddr_pkt):
        saddr = daddr_pkt
    addr_type = ipv6_addr_type(daddr_pkt)
    if addr_type & IPV6_ADDR_MULTICAST or skb.pkt_type != PACKET_HOST:
        if icmp_type != ICMPV6_PKT_TOOBIG and not (
            icmp_type == ICMPV6_PARAMPROB and code == ICMPV6_UNK_OPTION and _opt_unrec(skb, info)
        ):
            return
        saddr = 0
    src_type = ipv6_addr_type(saddr_pkt)
    iif = _icmp6_iif(skb) if ipv6_addr_needs_scope_id(src_type) else 0
    if src_type == 0 or src_type & IPV6_ADDR_MULTICAST:
        return  # "icmp6_send: addr_any/mcast source"
    if _is_ineligible(skb):
        return  # "icmp6_send: no reply to icmp error"
    apply_ratelimit = False
    if not dev.flags & IFF_LOOPBACK:
        ok, apply_ratelimit = icmpv6_global_allow(ipv6, icmp_type)
        if not ok:
            return
    fl6 = Flowi6(saddr_pkt, saddr, oif=iif, proto=IPPROTO_ICMPV6)
    if not saddr:
        cb = skb.cb
        in_dev = ipv6.net.dev_get_by_index(cb.iif) if isinstance(cb, Inet6SkbParm) else None
        if in_dev is not None:
            sel = addrconf.ipv6_dev_get_saddr(in_dev, saddr_pkt)
            if sel is not None:
                fl6.saddr = sel
    if not icmpv6_xrlim_allow(ipv6, fl6, apply_ratelimit):
        return
    found = ipv6.ip6_dst_lookup(fl6)
    if isinstance(found, int):
        return
    rt = found
    if addrconf.ipv6_chk_acast_addr(None, fl6.daddr):
        rt.release()  # "icmp6_send: acast source"
        return
    hlimit = ipv6.ip6_dst_hoplimit(rt)
    length = min(skb.tail - nh, IPV6_MIN_MTU - IPV6_HLEN - ICMPV6_HLEN)
    icmpv6_push(
        ipv6,
        rt,
        fl6.saddr,
        fl6.daddr,
        icmp_type,
        code,
        _I.pack(info & 0xFFFFFFFF),
        buf[nh : nh + length],
        hlimit=hlimit,
    )


@kernel("icmpv6_param_prob_reason")
def icmpv6_param_prob(ipv6: Ipv6, skb: SkBuff, code: int, pos: int) -> None:
    """Send a parameter problem and free *skb*.

    Kernel: icmpv6_param_prob_reason().
    """
    icmp6_send(ipv6, skb, ICMPV6_PARAMPROB, code, pos)
    kfree_skb(skb, DropReason.IP_INHDR)


# ---------------------------------------------------------------------------
# Receiving
# ---------------------------------------------------------------------------


@kernel("skb_checksum_validate")
def _csum_ok(skb: SkBuff) -> bool:
    """Kernel: skb_checksum_validate(skb, IPPROTO_ICMPV6, ip6_compute_pseudo)."""
    s = skb.ip_summed
    if s == CHECKSUM_UNNECESSARY or s == CHECKSUM_PARTIAL:
        return True
    buf = skb.buf
    nh = skb.network_header
    saddr = addr_at(buf, nh + 8)
    daddr = addr_at(buf, nh + 24)
    length = skb.tail - skb.data
    if s == CHECKSUM_COMPLETE and skb.data == skb.transport_header:
        if csum_ipv6_magic(saddr, daddr, length, IPPROTO_ICMPV6, skb.csum) == 0:
            return True
    total = csum_partial(buf, skb.data, skb.tail)
    return csum_ipv6_magic(saddr, daddr, length, IPPROTO_ICMPV6, total) == 0


@kernel("net/ipv6/icmp.c", "icmpv6_rcv")
def icmpv6_rcv(ipv6: Ipv6, skb: SkBuff) -> int:
    """Receive an ICMPv6 message.

    Twin: netstack.ipv4.icmp.icmp_rcv.
    Kernel: net/ipv6/icmp.c, icmpv6_rcv().
    """
    mib = ipv6.icmp6_mib
    mib.InMsgs += 1
    if not _csum_ok(skb):
        mib.InCsumErrors += 1
        mib.InErrors += 1
        kfree_skb(skb, DropReason.ICMP_CSUM)
        return 0
    if skb.tail - skb.data < ICMPV6_HLEN:
        mib.InErrors += 1
        kfree_skb(skb, DropReason.PKT_TOO_SMALL)
        return 0
    buf = skb.buf
    th = skb.data
    skb.transport_header = th
    icmp_type = buf[th]
    code = buf[th + 1]
    ipv6.icmp6msg.in_types[icmp_type] += 1
    reason: DropReason | None = DropReason.NOT_SPECIFIED
    if icmp_type == ICMPV6_ECHO_REQUEST:
        if not ipv6.icmpv6_echo_ignore_all:
            reason = icmpv6_echo_reply(ipv6, skb)
    elif icmp_type == ICMPV6_ECHO_REPLY:
        skb.data = th + ICMPV6_HLEN
        ipv6.ping_rcv(skb)
        return 0
    elif icmp_type in (
        ICMPV6_DEST_UNREACH,
        ICMPV6_PKT_TOOBIG,
        ICMPV6_TIME_EXCEED,
        ICMPV6_PARAMPROB,
    ):
        info = _I.unpack_from(buf, th + 4)[0]
        reason = icmpv6_notify(ipv6, skb, icmp_type, code, info)
    elif icmp_type in (
        NDISC_ROUTER_SOLICITATION,
        NDISC_ROUTER_ADVERTISEMENT,
        NDISC_NEIGHBOUR_SOLICITATION,
        NDISC_NEIGHBOUR_ADVERTISEMENT,
        NDISC_REDIRECT,
    ):
        ipv6.ndisc_rcv(skb)
        return 0
    elif icmp_type in (130, 131, 132, 139, 140, 143, 144, 145, 146, 147):
        reason = None  # MLD and node information: accepted, nothing to do (no MLD here)
    elif icmp_type & ICMPV6_INFOMSG_MASK:
        reason = DropReason.NOT_SPECIFIED  # unknown informational: ignored
    else:
        # "error of unknown type. must pass to upper level"
        info = _I.unpack_from(buf, th + 4)[0]
        reason = icmpv6_notify(ipv6, skb, icmp_type, code, info)
    if reason is None:
        consume_skb(skb)
    else:
        kfree_skb(skb, reason)
    return 0


@kernel("net/ipv6/icmp.c", "icmpv6_echo_reply")
def icmpv6_echo_reply(ipv6: Ipv6, skb: SkBuff) -> DropReason | None:
    """Answer an echo request.

    Kernel: net/ipv6/icmp.c, icmpv6_echo_reply().
    """
    buf = skb.buf
    nh = skb.network_header
    th = skb.transport_header
    daddr_pkt = addr_at(buf, nh + 24)
    if daddr_pkt >> 120 == 0xFF and ipv6.icmpv6_echo_ignore_multicast:
        return DropReason.NOT_SPECIFIED
    rt_in: Any = skb.dst
    acast = bool(rt_in is not None and rt_in.rt6i_flags & RTF_ANYCAST)
    if acast and ipv6.icmpv6_echo_ignore_anycast:
        return DropReason.NOT_SPECIFIED
    saddr = daddr_pkt
    unicast = rt_in is not None and rt_in.rt6i_flags & RTF_LOCAL  # ipv6_unicast_destination()
    if not unicast and not (ipv6.anycast_src_echo_reply and acast):
        saddr = 0
    fl6 = Flowi6(addr_at(buf, nh + 8), saddr, oif=_icmp6_iif(skb), proto=IPPROTO_ICMPV6)
    found = ipv6.ip6_dst_lookup(fl6)
    if isinstance(found, int):
        return DropReason.NOT_SPECIFIED
    rt = found
    apply_ratelimit = False
    dev = skb.dev
    if dev is not None and not dev.flags & IFF_LOOPBACK:
        ok, apply_ratelimit = icmpv6_global_allow(ipv6, ICMPV6_ECHO_REPLY)
        if not ok:
            rt.release()
            return DropReason.NOT_SPECIFIED
    if not icmpv6_xrlim_allow(ipv6, fl6, apply_ratelimit):
        rt.release()
        return DropReason.NOT_SPECIFIED
    if fl6.daddr >> 120 == 0xFF:
        hlimit = 1  # np->mcast_hops of the ICMPv6 socket (IPV6_DEFAULT_MCASTHOPS)
    else:
        hlimit = ipv6.ip6_dst_hoplimit(rt)
    icmpv6_push(
        ipv6,
        rt,
        fl6.saddr,
        fl6.daddr,
        ICMPV6_ECHO_REPLY,
        0,
        bytes(buf[th + 4 : th + 8]),
        buf[th + ICMPV6_HLEN : skb.tail],
        hlimit=hlimit,
        tclass=ipv6_get_dsfield(buf, nh),
    )
    return None


@kernel("icmpv6_notify")
def icmpv6_notify(
    ipv6: Ipv6, skb: SkBuff, icmp_type: int, code: int, info: int
) -> DropReason | None:
    """Pass an error to the protocol of the quoted packet.

    Kernel: icmpv6_notify().
    """
    th = skb.transport_header
    inner = th + ICMPV6_HLEN
    skb.data = inner
    buf = skb.buf
    mib = ipv6.icmp6_mib
    if skb.tail < inner + IPV6_HLEN:
        mib.InErrors += 1
        return DropReason.PKT_TOO_SMALL
    nexthdr = buf[inner + 6]
    if ipv6_ext_hdr(nexthdr):
        off, nexthdr, _frag = ipv6_skip_exthdr(buf, inner + IPV6_HLEN, nexthdr, skb.tail)
        if off < 0:
            mib.InErrors += 1
            return DropReason.IPV6_BAD_EXTHDR
        inner_offset = off - inner
    else:
        inner_offset = IPV6_HLEN
    if skb.tail < inner + inner_offset + 8:
        mib.InErrors += 1
        return DropReason.PKT_TOO_SMALL
    ipprot = ipv6.inet6_protos.get(nexthdr)
    if ipprot is not None and ipprot.err_handler is not None:
        ipprot.err_handler(skb, icmp_type, code, inner_offset, info)
    ipv6.raw_icmp_error(skb, nexthdr, icmp_type, code, inner_offset, info)
    return None


@kernel("net/ipv6/icmp.c", "icmpv6_err")
def icmpv6_err(ipv6: Ipv6, skb: SkBuff, icmp_type: int, code: int, offset: int, info: int) -> None:
    """An error quoting one of our ICMPv6 messages: learn the PMTU, tell ping sockets.

    Kernel: net/ipv6/icmp.c, icmpv6_err().
    """
    inner = skb.data
    dev = skb.dev
    if icmp_type == ICMPV6_PKT_TOOBIG:
        ipv6.ip6_update_pmtu(skb, info, dev.ifindex if dev is not None else 0)
    elif icmp_type == NDISC_REDIRECT:
        pass  # ip6_redirect(): handled from ndisc_redirect_rcv
    if not icmp_type & ICMPV6_INFOMSG_MASK:
        if skb.buf[inner + offset] == ICMPV6_ECHO_REQUEST:
            ipv6.ping_err(skb, icmp_type, code, offset, info)


# imported last: ip6_output imports this module (a function-level import costs ~5 µs per packet)
from netstack.ipv6 import ip6_output as _ip6_output  # noqa: E402
