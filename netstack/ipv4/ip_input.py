"""IPv4 input: validation, routing, local delivery and forwarding.

Theory of operation::

    ip_rcv (ptype ETH_P_IP): drop other-host frames; check length, version,
      IHL, header checksum, total length (trim link padding) ─► ip_rcv_finish:
      ip_route_input_noref sets skb.dst ─► options ─► dst.input:
        ip_local_deliver: reassemble fragments ─► pull the IP header ─► raw
            sockets get copies ─► the registered protocol (ICMP, UDP …) or
            ICMP protocol-unreachable
        ip_forward: TTL ≤ 1 → ICMP time exceeded; bigger than the next MTU with
            DF → ICMP frag-needed; decrement TTL (incremental checksum);
            redirect if it leaves by the interface it came in; ip_output
        ip_error: unreachable / not forwarding

Every drop is counted in ``/proc/net/snmp`` terms and with a drop reason.

Kernel: net/ipv4/ip_input.c, net/ipv4/ip_forward.c, net/ipv4/ip_options.c.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from netstack.core.skbuff import (
    CHECKSUM_COMPLETE,
    CHECKSUM_NONE,
    PACKET_HOST,
    PACKET_OTHERHOST,
    DropReason,
    SkBuff,
    consume_skb,
    kfree_skb,
)
from netstack.core.sock import Sock, sock_wfree
from netstack.core.xmit import skb_gso_validate_network_len
from netstack.ipv4.constants import IP_MAX_MTU, RTCF_DOREDIRECT
from netstack.ipv4.route import ip_dst_mtu_maybe_forward, ip_route_input_noref
from netstack.sites import TIMED, kernel, spend
from netstack.wire.checksum import csum_block_sub, csum_partial, csum_sub
from netstack.wire.icmp import (
    ICMP_DEST_UNREACH,
    ICMP_EXC_TTL,
    ICMP_FRAG_NEEDED,
    ICMP_PARAMETERPROB,
    ICMP_PROT_UNREACH,
    ICMP_TIME_EXCEEDED,
)
from netstack.wire.ipv4 import (
    IP_MF,
    IP_OFFSET,
    IPOPT_LSRR,
    IPOPT_SSRR,
    ip_options_length,
)
from netstack.wire.rtnetlink import RTN_BROADCAST, RTN_MULTICAST

if TYPE_CHECKING:
    from netstack.core.net import PacketType
    from netstack.core.netdevice import NetDevice
    from netstack.ipv4.netns import Ipv4
    from netstack.ipv4.route import Rtable

__all__ = ["ip_forward", "ip_local_deliver", "ip_rcv"]

_II: Final = struct.Struct("!II")
# ip_fast_csum()'s read of a header with options (netstack.wire.checksum): int.from_bytes
# bound once
_from_bytes: Final = int.from_bytes
# the send-buffer destructor, a constant (compiled code reads it without a lookup by name)
_SOCK_WFREE: Final = sock_wfree
# a 20-byte header's fields (version+IHL, TOS, total length, ID+fragment word,
# TTL+protocol+checksum word, source, destination) in one read: seven ints (typed so,
# compiled code adds and compares them as ints)
_IPV4_HDR_FIELDS: Final[Callable[[bytearray, int], tuple[int, int, int, int, int, int, int]]] = (
    struct.Struct("!BBHIIII").unpack_from
)
# the high byte of IP_MF | IP_OFFSET (0x3F; the low byte is all offset bits)
_IP_MF_OFFSET_HIGH_BYTE: Final = (IP_MF | IP_OFFSET) >> 8
# the ECN field of a TOS byte (INET_ECN_MASK), per TOS
_TOS_ECN: Final = tuple(tos & 3 for tos in range(256))

# rt_tos2priority(): TOS → skb->priority (include/net/route.h ip_tos2prio)
IP_TOS2PRIO: Final = (0, 1, 0, 0, 2, 2, 2, 2, 6, 6, 6, 6, 4, 4, 4, 4)
# rt_tos2priority() per TOS byte: a tuple read for its mask and shift
# ip_forward's reads and writes of the header: TOS, TTL, protocol and checksum in one
# read (from the TOS byte), the TTL, protocol and checksum written back in one (ints,
# typed so: a bytearray subscript is a generic call in compiled code)
_FWD_FIELDS: Final[Callable[[bytearray, int], tuple[int, int, int, int]]] = struct.Struct(
    "!B6xBBH"
).unpack_from
_FWD_TTL_CHECK: Final[Callable[[bytearray, int, int, int, int], None]] = struct.Struct(
    "!BBH"
).pack_into
_TOS_PRIORITY: Final = tuple(IP_TOS2PRIO[(tos & 0x1E) >> 1] for tos in range(256))


@kernel("rt_tos2priority")
def rt_tos2priority(tos: int) -> int:
    """Kernel: rt_tos2priority()."""
    return IP_TOS2PRIO[(tos & 0x1E) >> 1]


@kernel(
    "ip_rcv",
    "ip_rcv_core",
    "ip_fast_csum",
    "sock_wfree",
    "ip_rcv_finish",
    "ip_rcv_finish_core",
    "ip_local_deliver",
    "ip_local_deliver_finish",
    "ip_protocol_deliver_rcu",
)
def ip_rcv(ipv4: Ipv4, skb: SkBuff, dev: NetDevice, pt: PacketType, orig_dev: NetDevice) -> None:
    """Validate a received IPv4 datagram.

    ``ip_rcv_finish`` (with ``ip_rcv_finish_core``) is written out at the end,
    and so is ``ip_local_deliver`` (with ``ip_local_deliver_finish`` and
    ``ip_protocol_deliver_rcu``) for a local datagram that is not a fragment,
    the direct call of ``dst_input``'s ``INDIRECT_CALL_INET``, and
    ``skb_orphan``'s ``sock_wfree`` for a datagram a socket of this machine
    sent (over veth).

    Twin: netstack.ipv6.ip6_input.ipv6_rcv.
    Kernel: ip_rcv() / ip_rcv_core() / ip_fast_csum() / sock_wfree() /
    ip_rcv_finish() / ip_rcv_finish_core() / ip_local_deliver() /
    ip_local_deliver_finish() / ip_protocol_deliver_rcu().
    """
    if TIMED:
        spend("ip_rcv")
    if skb.pkt_type == PACKET_OTHERHOST:
        kfree_skb(skb, DropReason.OTHERHOST)
        return
    ip = ipv4.ip
    ipext = ipv4.ipext
    length = skb.tail - skb.data
    ip.InReceives += 1
    ipext.InOctets += length
    if length < 20:
        ip.InHdrErrors += 1
        kfree_skb(skb, DropReason.PKT_TOO_SMALL)
        return
    buf = skb.buf
    nh = skb.data
    # the fixed header's fields in one read (the length test above covers them), the
    # version and header length among them
    vi, tos, tot_len, w1, w2, saddr, daddr = _IPV4_HDR_FIELDS(buf, nh)
    if vi == 0x45:  # version 4, no options
        ihl = 20
        # ip_fast_csum() (below) as the sum of the header's words, 2**16 ≡ 1 (mod
        # 0xFFFF): the same residue as the header read whole
        if TIMED:
            spend("ip_fast_csum")
        n = 0x4500 + tos + tot_len + w1 + w2 + saddr + daddr
    else:
        ihl = (vi & 0xF) * 4
        if vi >> 4 != 4 or ihl < 20:
            ip.InHdrErrors += 1
            kfree_skb(skb, DropReason.IP_INHDR)
            return
        if length < ihl:
            ip.InHdrErrors += 1
            kfree_skb(skb, DropReason.PKT_TOO_SMALL)
            return
        # ip_fast_csum(), a static inline of arch/x86/include/asm/checksum_64.h, inline
        # as the compiler inlines it (a frame less a datagram): a valid header's words
        # sum to ones'-complement -0, a non-zero multiple of 0xFFFF (see its theory
        # there)
        if TIMED:
            spend("ip_fast_csum")
        n = _from_bytes(buf[nh : nh + ihl], "big")
    if n % 0xFFFF or not n:
        ipext.InCsumErrors += 1
        ip.InHdrErrors += 1
        kfree_skb(skb, DropReason.IP_CSUM)
        return
    if length < tot_len:
        ipext.InTruncatedPkts += 1
        kfree_skb(skb, DropReason.PKT_TOO_SMALL)
        return
    if tot_len < ihl:
        ip.InHdrErrors += 1
        kfree_skb(skb, DropReason.IP_INHDR)
        return
    if length > tot_len:  # pskb_trim_rcsum(): link padding
        if skb.ip_summed == CHECKSUM_COMPLETE:
            skb.csum = csum_block_sub(skb.csum, csum_partial(buf, nh + tot_len, skb.tail), tot_len)
        skb.tail = nh + tot_len
    skb.network_header = nh
    skb.transport_header = nh + ihl
    if (
        skb.destructor is not None or skb.sk is not None
    ):  # "Must drop socket now because of tproxy."
        # skb_orphan() (a static inline of include/linux/skbuff.h), inline: a sender's
        # socket on this machine (veth) is uncharged here
        destructor = skb.destructor
        if destructor is _SOCK_WFREE:
            # a sender's datagram: sock_wfree() written out, as netstack.core.sock has it
            # (a frame less a datagram; keep the two in step)
            skb.destructor = None
            if TIMED:
                spend("sock_wfree")
            sk = skb.sk
            if isinstance(sk, Sock):
                sk.sk_wmem_alloc -= skb.wmem_charge
                if sk.sk_wmem_alloc < sk.sk_sndbuf and sk._writers_parked:
                    sk.sk_write_space()
        elif destructor is not None:
            skb.destructor = None
            destructor(skb)
        skb.sk = None
    ecn = _TOS_ECN[tos]  # tos & INET_ECN_MASK
    if ecn == 0:
        ipext.InNoECTPkts += 1
    elif ecn == 1:
        ipext.InECT1Pkts += 1
    elif ecn == 2:
        ipext.InECT0Pkts += 1
    else:
        ipext.InCEPkts += 1
    hook = ipv4.nf_prerouting  # NF_HOOK(NFPROTO_IPV4, NF_INET_PRE_ROUTING, …)
    if hook is not None:
        if not hook(skb):
            kfree_skb(skb, DropReason.NETFILTER_DROP)
            return
        # a hook that mangles the header (NAT) may have made it writable: read again
        buf = skb.buf
        _, tos, _, w1, _, saddr, daddr = _IPV4_HDR_FIELDS(buf, nh)
    # ip_rcv_finish() / ip_rcv_finish_core(), static functions NF_HOOK's okfn calls
    # directly, written out as ip_rcv_finish below (a frame less; keep them in step)
    if skb.dst is None:
        err = ip_route_input_noref(ipv4, skb, daddr, saddr, tos, dev)
        if err:
            kfree_skb(skb, DropReason.IP_INADDRERRORS if err == -22 else DropReason.IP_RPFILTER)
            return
    if vi != 0x45 and not ip_rcv_options(ipv4, skb, dev, ihl):
        return
    rt: Rtable = skb.dst  # type: ignore[assignment]  # routed above: an IPv4 route
    rtype = rt.rt_type
    if rtype == RTN_MULTICAST:
        ipext.InMcastPkts += 1
        ipext.InMcastOctets += skb.tail - skb.data
    elif rtype == RTN_BROADCAST:
        ipext.InBcastPkts += 1
        ipext.InBcastOctets += skb.tail - skb.data
    dst_input = rt.input  # dst_input(): a local, as a call on an instance attribute is slower
    if dst_input is not ipv4.dst_local_deliver or (
        w1 & 0x3FFF  # ip_is_fragment(): IP_MF | IP_OFFSET of the ID+fragment word
    ):
        dst_input(skb)
        return
    # dst_input()'s INDIRECT_CALL_INET() calls ip_local_deliver() directly: written out
    # here for a datagram that is not a fragment, with ip_local_deliver_finish() and
    # ip_protocol_deliver_rcu() (a frame less a datagram; keep in step with
    # ip_local_deliver, where fragments still go)
    if TIMED:
        spend("ip_local_deliver")
    th = skb.transport_header
    if skb.ip_summed == CHECKSUM_COMPLETE:  # skb_postpull_rcsum()
        skb.csum = csum_sub(skb.csum, csum_partial(buf, skb.data, th))
    skb.data = th
    protocol = buf[nh + 9]
    raw_handled = ipv4.raw_sockets and ipv4.raw_local_deliver(skb, protocol)
    handler = ipv4.inet_protos.get(protocol)
    if handler is not None:
        ip.InDelivers += 1
        protocol_handler = handler.handler  # a local: see dst_input above
        protocol_handler(skb)
        return
    if raw_handled:
        ip.InDelivers += 1
        consume_skb(skb)
        return
    ip.InUnknownProtos += 1
    skb.data = nh
    ipv4.icmp_send(skb, ICMP_DEST_UNREACH, ICMP_PROT_UNREACH, 0)
    kfree_skb(skb, DropReason.IP_NOPROTO)


@kernel("ip_rcv_finish_core")
def ip_rcv_finish(ipv4: Ipv4, skb: SkBuff, dev: NetDevice) -> None:
    """Route the datagram and process its options.

    ``ip_rcv`` has this written out (keep the two in step).

    Twin: netstack.ipv6.ip6_input.ip6_rcv_finish.
    Kernel: ip_rcv_finish_core().
    """
    buf = skb.buf
    nh = skb.network_header
    if skb.dst is None:
        saddr, daddr = _II.unpack_from(buf, nh + 12)
        err = ip_route_input_noref(ipv4, skb, daddr, saddr, buf[nh + 1], dev)
        if err:
            kfree_skb(skb, DropReason.IP_INADDRERRORS if err == -22 else DropReason.IP_RPFILTER)
            return
    if buf[nh] != 0x45:  # options (ip_rcv_core has checked version 4)
        if not ip_rcv_options(ipv4, skb, dev, (buf[nh] & 0xF) * 4):
            return
    rt: Rtable = skb.dst  # type: ignore[assignment]  # routed above: an IPv4 route
    rtype = rt.rt_type
    if rtype == RTN_MULTICAST:
        ipv4.ipext.InMcastPkts += 1
        ipv4.ipext.InMcastOctets += skb.tail - skb.data
    elif rtype == RTN_BROADCAST:
        ipv4.ipext.InBcastPkts += 1
        ipv4.ipext.InBcastOctets += skb.tail - skb.data
    dst_input = rt.input  # dst_input(): a local, as a call on an instance attribute is slower
    dst_input(skb)


@kernel("ip_rcv_options")
def ip_rcv_options(ipv4: Ipv4, skb: SkBuff, dev: NetDevice, ihl: int) -> bool:
    """Check options; refuse source routing (accept_source_route=0). Kernel: ip_rcv_options()."""
    buf = skb.buf
    nh = skb.network_header
    if not ip_options_length(buf, nh + 20, ihl - 20):
        ipv4.ip.InHdrErrors += 1
        ipv4.icmp_send(skb, ICMP_PARAMETERPROB, 0, 20 << 24)
        kfree_skb(skb, DropReason.IP_INHDR)
        return False
    i = nh + 20
    end = nh + ihl
    while i < end:
        t = buf[i]
        if t == 0:
            break
        if t == 1:
            i += 1
            continue
        if t in (IPOPT_LSRR, IPOPT_SSRR):
            in_dev = dev.ip_ptr
            if in_dev is None or not in_dev.orconf("accept_source_route"):
                kfree_skb(skb, DropReason.IP_INHDR)
                return False
        i += buf[i + 1]
    return True


@kernel("ip_local_deliver", "ip_local_deliver_finish", "ip_protocol_deliver_rcu")
def ip_local_deliver(ipv4: Ipv4, skb: SkBuff) -> int:
    """Reassemble, then deliver to the transport protocol.

    ``ip_local_deliver_finish`` (static, NF_HOOK's okfn) and the
    ``ip_protocol_deliver_rcu`` it calls are written out at the end: pull the
    IP header and call the protocol handler (a frame less a datagram).
    ``ip_rcv`` has this written out for a datagram that is not a fragment
    (keep the two in step).

    Twin: netstack.ipv6.ip6_input.ip6_input.
    Kernel: ip_local_deliver() / ip_local_deliver_finish() /
    ip_protocol_deliver_rcu().
    """
    if TIMED:
        spend("ip_local_deliver")
    buf = skb.buf
    nh = skb.network_header
    # ip_is_fragment(): frag_off & (IP_MF | IP_OFFSET), a byte at a time (0x3F of
    # the high byte, all of the low one): one unspecialised bit operation, not four
    if buf[nh + 6] & _IP_MF_OFFSET_HIGH_BYTE or buf[nh + 7]:
        skb2 = ipv4.frags.ip_defrag(skb)
        if skb2 is None:
            return 0
        skb = skb2
        buf = skb.buf
        nh = skb.network_header
    # ip_local_deliver_finish() / ip_protocol_deliver_rcu()
    th = skb.transport_header
    if skb.ip_summed == CHECKSUM_COMPLETE:  # skb_postpull_rcsum()
        skb.csum = csum_sub(skb.csum, csum_partial(buf, skb.data, th))
    skb.data = th
    protocol = buf[nh + 9]
    raw_handled = ipv4.raw_sockets and ipv4.raw_local_deliver(skb, protocol)
    handler = ipv4.inet_protos.get(protocol)
    if handler is not None:
        ipv4.ip.InDelivers += 1
        protocol_handler = handler.handler  # a local: see ip_rcv_finish
        protocol_handler(skb)
        return 0
    if raw_handled:
        ipv4.ip.InDelivers += 1
        consume_skb(skb)
        return 0
    ipv4.ip.InUnknownProtos += 1
    skb.data = nh
    ipv4.icmp_send(skb, ICMP_DEST_UNREACH, ICMP_PROT_UNREACH, 0)
    kfree_skb(skb, DropReason.IP_NOPROTO)
    return 0


@kernel("ip_exceeds_mtu")
def ip_exceeds_mtu(skb: SkBuff, mtu: int) -> bool:
    """Kernel: ip_exceeds_mtu()."""
    if skb.tail - skb.data <= mtu:
        return False
    if not skb.buf[skb.network_header + 6] & 0x40:  # no DF
        return False
    if skb.ignore_df:
        return False
    return not (skb.gso_size and skb_gso_validate_network_len(skb, mtu))


@kernel("net/ipv4/ip_forward.c", "ip_forward")
def ip_forward(ipv4: Ipv4, skb: SkBuff) -> int:
    """Forward a datagram routed through this host.

    Twin: netstack.ipv6.ip6_input.ip6_forward.
    Kernel: net/ipv4/ip_forward.c, ip_forward().
    """
    if TIMED:
        spend("ip_forward")
    if skb.pkt_type != PACKET_HOST:
        kfree_skb(skb, DropReason.OTHERHOST)
        return 0
    buf = skb.buf
    nh = skb.network_header
    skb.data = nh
    tos, ttl, protocol, check = _FWD_FIELDS(buf, nh + 1)
    if ttl <= 1:
        ipv4.ip.InHdrErrors += 1
        ipv4.icmp_send(skb, ICMP_TIME_EXCEEDED, ICMP_EXC_TTL, 0)
        kfree_skb(skb, DropReason.IP_INHDR)
        return 0
    rt: Rtable = skb.dst  # type: ignore[assignment]  # an IPv4 input route
    out: NetDevice = rt.dev  # type: ignore[assignment]  # a route has a device
    # ip_dst_mtu_maybe_forward(dst, true): the device's MTU unless the route
    # carries a PMTU, an "mtu" metric or a lock
    if rt.rt_pmtu or rt.metric_mtu or rt.rt_mtu_locked or rt.metric_mtu_locked:
        mtu = ip_dst_mtu_maybe_forward(ipv4, rt, True)
    else:
        mtu = out.mtu
        if mtu > IP_MAX_MTU:
            mtu = IP_MAX_MTU
    # ip_exceeds_mtu() is a static function the compiler inlines: only a datagram
    # longer than the MTU is looked at further
    if skb.tail - nh > mtu and ip_exceeds_mtu(skb, mtu):
        ipv4.ip.FragFails += 1
        ipv4.icmp_send(skb, ICMP_DEST_UNREACH, ICMP_FRAG_NEEDED, mtu)
        kfree_skb(skb, DropReason.PKT_TOO_BIG)
        return 0
    # skb_cow(skb, LL_RESERVED_SPACE(out) + rt->dst.header_len): static inlines
    need = ((out.hard_header_len + out.needed_headroom) & ~15) + 16 + rt.header_len
    ref = skb._dataref
    if (ref is not None and ref[0] > 1) or nh < need:  # skb_cloned() or short headroom
        skb.cow_head(need)
        buf = skb.buf
        nh = skb.network_header
    # ip_decrease_ttl(), a static inline of include/net/ip.h: the TTL less one and
    # the header checksum patched incrementally (RFC 1624); skb_cow() above copies the
    # header as it was read
    check += 0x0100
    check = (check + (check >= 0xFFFF)) & 0xFFFF
    _FWD_TTL_CHECK(buf, nh + 8, ttl - 1, protocol, check)
    flags = rt.rt_flags  # (a forwarding route's are mostly 0: no mask then)
    if flags and flags & RTCF_DOREDIRECT:
        ipv4.ip_rt_send_redirect(skb)
    if ipv4.ip_fwd_update_priority:  # rt_tos2priority(), a static inline: per TOS byte
        skb.priority = _TOS_PRIORITY[tos]
    ipv4.ip.ForwDatagrams += 1
    if skb.ip_summed == CHECKSUM_COMPLETE:  # skb_forward_csum()
        skb.ip_summed = CHECKSUM_NONE
    output = rt.output  # ip_forward_finish(): dst_output(), through a local as above
    rc: int = output(skb)
    return rc
