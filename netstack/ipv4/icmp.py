"""ICMP for IPv4: receive, echo, errors to applications, and sending errors.

Theory of operation::

    icmp_rcv: checksum ─► per-type counters ─► echo → icmp_echo (reply from the
      address that was asked) | echo reply → ping sockets | unreachable, time
      exceeded, parameter problem, source quench → icmp_unreach ─► the quoted
      datagram's protocol error handler (udp_err, ping_err …) | redirect →
      a per-destination route exception
    icmp_send(skb_in, type, code, info): the rules of RFC 1122 and the kernel —
      never about an ICMP error, a broadcast, a non-first fragment; rate
      limited globally (icmp_msgs_per_sec/burst) and per destination
      (icmp_ratelimit tokens, burst of 6) for the types in icmp_ratemask,
      frag-needed exempt; quotes as much of the datagram as fits in 576 bytes

Kernel: net/ipv4/icmp.c (the per-destination bucket, inet_peer_xrlim_allow, is core.inetpeer's).
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
from netstack.core.sock import IP_PMTUDISC_DONT
from netstack.ipv4.constants import RTCF_BROADCAST, RTCF_LOCAL, RTCF_MULTICAST
from netstack.ipv4.devinet import inet_select_addr
from netstack.ipv4.route import Flowi4
from netstack.sites import TIMED, kernel, spend
from netstack.wire.checksum import csum_fold, csum_partial, ip_compute_csum
from netstack.wire.icmp import (
    ICMP_ADDRESS,
    ICMP_ADDRESSREPLY,
    ICMP_DEST_UNREACH,
    ICMP_ECHO,
    ICMP_ECHOREPLY,
    ICMP_EXC_FRAGTIME,
    ICMP_FRAG_NEEDED,
    ICMP_HLEN,
    ICMP_INFO_REPLY,
    ICMP_INFO_REQUEST,
    ICMP_PARAMETERPROB,
    ICMP_REDIRECT,
    ICMP_SOURCE_QUENCH,
    ICMP_TIME_EXCEEDED,
    ICMP_TIMESTAMP,
    ICMP_TIMESTAMPREPLY,
    NR_ICMP_TYPES,
    NR_ICMP_UNREACH,
    icmp_is_err,
)
from netstack.wire.ipv4 import IP_OFFSET, IPPROTO_ICMP, IPTOS_TOS_MASK
from netstack.wire.rtnetlink import RTN_BROADCAST

if TYPE_CHECKING:
    from netstack.ipv4.netns import Ipv4
    from netstack.ipv4.route import Rtable

__all__ = ["icmp_rcv", "icmp_send"]

IPTOS_PREC_INTERNETCONTROL: Final = 0xC0
INADDR_DUMMY: Final = 0xC0000008  # 192.0.0.8 (RFC 7600)
_I: Final = struct.Struct("!I")


# ---------------------------------------------------------------------------
# Rate limiting
# ---------------------------------------------------------------------------


@kernel("icmpv4_mask_allow")
def icmpv4_mask_allow(ipv4: Ipv4, icmp_type: int, code: int) -> bool:
    """True if the type is never rate limited.

    Twin: netstack.ipv6.icmp.icmpv6_mask_allow.
    Kernel: icmpv4_mask_allow().
    """
    if icmp_type > NR_ICMP_TYPES:
        return True
    if icmp_type == ICMP_DEST_UNREACH and code == ICMP_FRAG_NEEDED:
        return True
    return not (1 << icmp_type) & ipv4.icmp_ratemask


@kernel("icmp_global_allow")
def icmp_global_allow(ipv4: Ipv4) -> bool:
    """The per-Net token bucket of icmp_msgs_per_sec, for ICMP and ICMPv6 errors alike
    (IPv6 reaches it as ``net.ipv4.icmp_global_allow()``).

    Kernel: icmp_global_allow().
    """
    if ipv4.icmp_global_credit > 0:
        return True
    clock = ipv4.net.clock
    hz = clock.hz
    now = clock.jiffies
    delta = min(now - ipv4.icmp_global_stamp, hz)
    if delta < hz // 50:
        return False
    incr = ipv4.icmp_msgs_per_sec * delta // hz
    if not incr:
        return False
    ipv4.icmp_global_stamp = now
    ipv4.icmp_global_credit = min(ipv4.icmp_global_credit + incr, ipv4.icmp_msgs_burst)
    return True


@kernel("icmp_global_consume")
def icmp_global_consume(ipv4: Ipv4) -> None:
    """Kernel: icmp_global_consume() (0 to 2 credits, at random)."""
    ncredits = ipv4.net.rng.randrange(3)
    if ncredits:
        ipv4.icmp_global_credit -= ncredits


@kernel("icmpv4_xrlim_allow")
def icmpv4_xrlim_allow(ipv4: Ipv4, rt: Rtable, daddr: int, apply_ratelimit: bool) -> bool:
    """Kernel: icmpv4_xrlim_allow().

    Twin: netstack.ipv6.icmp.icmpv6_xrlim_allow.
    """
    if not apply_ratelimit:
        return True
    timeout = ipv4.net.clock.msecs_to_jiffies(ipv4.icmp_ratelimit)
    rc = True
    if timeout and not (rt.dev is not None and rt.dev.flags & IFF_LOOPBACK):
        rc = inet_peer_xrlim_allow(ipv4.inet_getpeer(daddr), timeout, ipv4.net.clock.jiffies)
    if not rc:
        ipv4.icmp_mib.OutRateLimitHost += 1
    else:
        icmp_global_consume(ipv4)
    return rc


# ---------------------------------------------------------------------------
# Sending
# ---------------------------------------------------------------------------


@kernel("icmp_push_reply")
def _icmp_push(
    ipv4: Ipv4,
    rt: Rtable,
    fl4: Flowi4,
    icmp_type: int,
    code: int,
    un: bytes,
    data: bytes | bytearray,
    tos: int,
) -> None:
    """Build and send one ICMP message. Kernel: icmp_push_reply()."""
    if TIMED:
        spend("icmp_push_reply")
    skb = _ip_output.ip_make_skb(
        ipv4,
        None,
        rt,
        fl4.saddr,
        fl4.daddr,
        IPPROTO_ICMP,
        ICMP_HLEN + len(data),
        tos=tos,
        pmtudisc=IP_PMTUDISC_DONT,
        ignore_df=True,
    )
    buf = skb.buf
    th = skb.transport_header
    buf[th] = icmp_type
    buf[th + 1] = code
    buf[th + 2] = buf[th + 3] = 0
    buf[th + 4 : th + 8] = un
    buf[th + 8 : th + 8 + len(data)] = data
    c = ip_compute_csum(buf, th, th + ICMP_HLEN + len(data))
    buf[th + 2] = c >> 8
    buf[th + 3] = c & 0xFF
    ipv4.icmp_mib.OutMsgs += 1
    ipv4.icmpmsg.out_types[icmp_type] += 1
    _ip_output.ip_local_out(ipv4, skb)


@kernel("net/ipv4/icmp.c", "__icmp_send")
def icmp_send(ipv4: Ipv4, skb_in: SkBuff, icmp_type: int, code: int, info: int) -> None:
    """Send an ICMP error about *skb_in* to its source (the skb is not consumed).

    Twin: netstack.ipv6.icmp.icmp6_send.
    Kernel: net/ipv4/icmp.c, __icmp_send().
    """
    if TIMED:
        spend("__icmp_send")
    rt: Any = skb_in.dst
    if rt is None:
        return
    buf = skb_in.buf
    nh = skb_in.network_header
    if nh < 0 or nh + 20 > skb_in.tail:
        return
    if skb_in.pkt_type != PACKET_HOST:
        return  # no replies to L2 broadcast/multicast
    if rt.rt_flags & (RTCF_BROADCAST | RTCF_MULTICAST):
        return
    if ((buf[nh + 6] << 8) | buf[nh + 7]) & IP_OFFSET:
        return  # only about fragment 0
    ihl = (buf[nh] & 0xF) * 4
    if icmp_is_err(icmp_type) and buf[nh + 9] == IPPROTO_ICMP:
        if nh + ihl >= skb_in.tail:
            return
        inner = buf[nh + ihl]
        if inner > NR_ICMP_TYPES or icmp_is_err(inner):
            return  # never an error about an error
    apply_ratelimit = False
    dev_in = skb_in.dev
    if not (dev_in is not None and dev_in.flags & IFF_LOOPBACK):
        if not icmpv4_mask_allow(ipv4, icmp_type, code):
            if icmp_global_allow(ipv4):
                apply_ratelimit = True
            else:
                ipv4.icmp_mib.OutRateLimitGlobal += 1
                return
    (src,) = _I.unpack_from(buf, nh + 12)
    (dst,) = _I.unpack_from(buf, nh + 16)
    saddr = dst
    if not rt.rt_flags & RTCF_LOCAL:
        saddr = 0
        if rt.rt_is_input and ipv4.icmp_errors_use_inbound_ifaddr and dev_in is not None:
            saddr = inet_select_addr(ipv4, dev_in, src, 253)
    tos = buf[nh + 1]
    if icmp_is_err(icmp_type):
        tos = (tos & IPTOS_TOS_MASK) | IPTOS_PREC_INTERNETCONTROL
    fl4 = Flowi4(
        src, saddr, tos=tos & IPTOS_TOS_MASK, proto=IPPROTO_ICMP, flags=0x01 if saddr else 0
    )
    found = ipv4.ip_route_output_key(fl4)
    if isinstance(found, int):
        return
    rt2: Rtable = found
    room = min(rt2.mtu(), 576) - 20 - ICMP_HLEN
    if (
        rt2.rt_flags & (RTCF_BROADCAST | RTCF_MULTICAST)
        or not icmpv4_xrlim_allow(ipv4, rt2, fl4.daddr, apply_ratelimit)
        or room <= 20
    ):
        rt2.release()
        return
    data_len = min(skb_in.tail - nh, room)
    if not fl4.saddr:
        fl4.saddr = INADDR_DUMMY
    _icmp_push(
        ipv4, rt2, fl4, icmp_type, code, _I.pack(info & 0xFFFFFFFF), buf[nh : nh + data_len], tos
    )


# ---------------------------------------------------------------------------
# Receiving
# ---------------------------------------------------------------------------


@kernel("skb_checksum_simple_validate")
def _csum_ok(skb: SkBuff) -> bool:
    """Kernel: skb_checksum_simple_validate()."""
    if skb.ip_summed in (CHECKSUM_UNNECESSARY, CHECKSUM_PARTIAL):
        return True
    if skb.ip_summed == CHECKSUM_COMPLETE:
        if csum_fold(skb.csum) == 0:
            return True
    return csum_fold(csum_partial(skb.buf, skb.data, skb.tail)) == 0


@kernel("net/ipv4/icmp.c", "icmp_rcv")
def icmp_rcv(ipv4: Ipv4, skb: SkBuff) -> int:
    """Receive an ICMP message.

    Twin: netstack.ipv6.icmp.icmpv6_rcv.
    Kernel: net/ipv4/icmp.c, icmp_rcv().
    """
    if TIMED:
        spend("icmp_rcv")
    mib = ipv4.icmp_mib
    mib.InMsgs += 1
    if not _csum_ok(skb):
        mib.InCsumErrors += 1
        mib.InErrors += 1
        kfree_skb(skb, DropReason.ICMP_CSUM)
        return 0
    if skb.tail - skb.data < ICMP_HLEN:
        mib.InErrors += 1
        kfree_skb(skb, DropReason.PKT_TOO_SMALL)
        return 0
    buf = skb.buf
    th = skb.data
    skb.transport_header = th
    icmp_type = buf[th]
    ipv4.icmpmsg.in_types[icmp_type] += 1
    rt: Any = skb.dst
    if rt is not None and rt.rt_flags & (RTCF_BROADCAST | RTCF_MULTICAST):
        if icmp_type in (ICMP_ECHO, ICMP_TIMESTAMP) and ipv4.icmp_echo_ignore_broadcasts:
            mib.InErrors += 1
            kfree_skb(skb, DropReason.INVALID_PROTO)
            return 0
        if icmp_type not in (ICMP_ECHO, ICMP_TIMESTAMP, ICMP_ADDRESS, ICMP_ADDRESSREPLY):
            mib.InErrors += 1
            kfree_skb(skb, DropReason.INVALID_PROTO)
            return 0
    if icmp_type > NR_ICMP_TYPES:
        mib.InErrors += 1
        kfree_skb(skb, DropReason.UNHANDLED_PROTO)
        return 0
    skb.data = th + ICMP_HLEN
    if icmp_type == ICMP_ECHOREPLY:
        ok = ipv4.ping_rcv(skb)
    elif icmp_type in (
        ICMP_DEST_UNREACH,
        ICMP_SOURCE_QUENCH,
        ICMP_TIME_EXCEEDED,
        ICMP_PARAMETERPROB,
    ):
        ok = icmp_unreach(ipv4, skb)
    elif icmp_type == ICMP_REDIRECT:
        ok = icmp_redirect(ipv4, skb)
    elif icmp_type == ICMP_ECHO:
        ok = icmp_echo(ipv4, skb)
    elif icmp_type == ICMP_TIMESTAMP:
        ok = icmp_timestamp(ipv4, skb)
    elif icmp_type in (
        ICMP_TIMESTAMPREPLY,
        ICMP_INFO_REQUEST,
        ICMP_INFO_REPLY,
        ICMP_ADDRESS,
        ICMP_ADDRESSREPLY,
    ):
        ok = True  # icmp_discard
    else:
        mib.InErrors += 1
        kfree_skb(skb, DropReason.ICMP_INVALID)
        return 0
    if ok is None:
        return 0  # the handler kept the skb
    if ok:
        consume_skb(skb)
    else:
        mib.InErrors += 1
        kfree_skb(skb, DropReason.ICMP_INVALID)
    return 0


@kernel("icmp_echo", "icmp_reply")
def icmp_echo(ipv4: Ipv4, skb: SkBuff) -> bool:
    """Answer an echo request. Kernel: icmp_echo() / icmp_reply()."""
    if TIMED:
        spend("icmp_echo")
    if ipv4.icmp_echo_ignore_all:
        return True
    th = skb.transport_header
    buf = skb.buf
    icmp_reply(
        ipv4, skb, ICMP_ECHOREPLY, buf[th + 1], bytes(buf[th + 4 : th + 8]), buf[th + 8 : skb.tail]
    )
    return True


@kernel("icmp_timestamp")
def icmp_timestamp(ipv4: Ipv4, skb: SkBuff) -> bool:
    """Answer a timestamp request (RFC 792). Kernel: icmp_timestamp()."""
    if skb.tail - skb.data < 12:
        return False
    th = skb.transport_header
    buf = skb.buf
    now = ipv4.net.clock.now()
    ms = int((now % 86400) * 1000) & 0xFFFFFFFF
    data = bytes(buf[th + 8 : th + 12]) + _I.pack(ms) + _I.pack(ms)
    icmp_reply(ipv4, skb, ICMP_TIMESTAMPREPLY, 0, bytes(buf[th + 4 : th + 8]), data)
    return True


@kernel("icmp_reply")
def icmp_reply(
    ipv4: Ipv4, skb: SkBuff, icmp_type: int, code: int, un: bytes, data: bytes | bytearray
) -> None:
    """Reply to a query from the address it was sent to. Kernel: icmp_reply()."""
    if TIMED:
        spend("icmp_reply")
    rt: Any = skb.dst
    buf = skb.buf
    nh = skb.network_header
    apply_ratelimit = False
    if not icmpv4_mask_allow(ipv4, icmp_type, code):
        if icmp_global_allow(ipv4):
            apply_ratelimit = True
        else:
            ipv4.icmp_mib.OutRateLimitGlobal += 1
            return
    (src,) = _I.unpack_from(buf, nh + 12)
    (dst,) = _I.unpack_from(buf, nh + 16)
    if rt is not None and rt.rt_flags & RTCF_BROADCAST:  # fib_compute_spec_dst()
        dst = inet_select_addr(ipv4, skb.dev, src, 253)
    tos = buf[nh + 1] & ~3
    fl4 = Flowi4(src, dst, tos=tos & IPTOS_TOS_MASK, proto=IPPROTO_ICMP, flags=0x01)
    rt2 = ipv4.ip_route_output_key(fl4)
    if isinstance(rt2, int):
        return
    if not icmpv4_xrlim_allow(ipv4, rt2, fl4.daddr, apply_ratelimit):
        rt2.release()
        return
    _icmp_push(ipv4, rt2, fl4, icmp_type, code, un, data, tos)


@kernel("icmp_unreach")
def icmp_unreach(ipv4: Ipv4, skb: SkBuff) -> bool:
    """An error about a datagram we sent: tell its protocol. Kernel: icmp_unreach()."""
    buf = skb.buf
    th = skb.transport_header
    inner = skb.data
    if skb.tail - inner < 20:
        return False
    ihl = (buf[inner] & 0xF) * 4
    if ihl < 20:
        return False
    icmp_type = buf[th]
    code = buf[th + 1]
    info = 0
    if icmp_type == ICMP_DEST_UNREACH:
        if code == ICMP_FRAG_NEEDED:
            info = (buf[th + 6] << 8) | buf[th + 7]
        elif code > NR_ICMP_UNREACH:
            return True
    elif icmp_type == ICMP_PARAMETERPROB:
        info = buf[th + 4]
    elif icmp_type == ICMP_TIME_EXCEEDED and code == ICMP_EXC_FRAGTIME:
        return True
    (daddr,) = _I.unpack_from(buf, inner + 16)
    if (
        not ipv4.icmp_ignore_bogus_error_responses
        and ipv4.fib.inet_addr_type(daddr, skb.dev) == RTN_BROADCAST
    ):
        return True
    if skb.tail - inner < ihl + 8:
        return True
    protocol = buf[inner + 9]
    handler = ipv4.inet_protos.get(protocol)
    if handler is not None and handler.err_handler is not None:
        handler.err_handler(skb, info)
    ipv4.raw_icmp_error(skb, protocol, info)
    return True


@kernel("icmp_redirect", "ip_do_redirect")
def icmp_redirect(ipv4: Ipv4, skb: SkBuff) -> bool:
    """Learn a better first hop for a destination. Kernel: icmp_redirect() → ip_do_redirect()."""
    buf = skb.buf
    th = skb.transport_header
    inner = skb.data
    if skb.tail - inner < 20:
        return False
    dev = skb.dev
    in_dev = dev.ip_ptr if dev is not None else None
    if in_dev is None or not in_dev.rx_redirects():
        return True
    (new_gw,) = _I.unpack_from(buf, th + 4)
    (old_gw,) = _I.unpack_from(buf, skb.network_header + 12)
    (saddr,) = _I.unpack_from(buf, inner + 12)
    (daddr,) = _I.unpack_from(buf, inner + 16)
    if dev is not None:
        ipv4.ip_do_redirect(daddr, old_gw, new_gw, dev, saddr)
    return True


# imported last: ip_output imports this module (a function-level import costs ~5 µs per packet)
from netstack.ipv4 import ip_output as _ip_output  # noqa: E402
