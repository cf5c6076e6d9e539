"""UDP over IPv4: sockets, ports, send, receive, ICMP errors.

Theory of operation::

    udp_sendmsg: pending error? ─► destination (or the connected peer)
      ─► autobind an ephemeral port ─► route (cached for connected sockets;
      broadcast needs SO_BROADCAST) ─► send buffer full? (would block /
      EAGAIN) ─► ip_make_skb ─► UDP header; checksum offloaded
      (CHECKSUM_PARTIAL) when the device can, computed otherwise
      ─► MSG_CONFIRM marks the skb (neighbour confirmation) ─► ip_send_skb
    udp_rcv (inet_protos[17]): length checks ─► broadcast: every matching
      socket; unicast: the best-scoring socket (exact binds beat wildcards)
      ─► receive queue if the socket's memory allows (else RcvbufErrors)
      | no socket: NoPorts and ICMP port unreachable
    udp_err: an ICMP error quoting our datagram ─► the socket's error, if it
      is connected and the error is hard, or if IP_RECVERR is set

The checksum of a received datagram is verified when it is read (as the
kernel does), unless the device already did (CHECKSUM_UNNECESSARY) or the
packet never left this machine's memory (CHECKSUM_PARTIAL, over veth).

Kernel: net/ipv4/udp.c, net/ipv4/datagram.c (connect), net/ipv4/icmp.c
(icmp_err_convert).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from netstack.core.dst import skb_dst_drop
from netstack.core.skbuff import (
    CHECKSUM_COMPLETE,
    CHECKSUM_NONE,
    CHECKSUM_PARTIAL,
    CHECKSUM_UNNECESSARY,
    TRUESIZE_OF_BUFLEN,
    DropReason,
    SkBuff,
    consume_skb,
    kfree_skb,
)
from netstack.core.sock import (
    IP_PMTUDISC_DO,
    IP_PMTUDISC_DONT,
    IP_PMTUDISC_OMIT,
    IP_PMTUDISC_PROBE,
    IP_PMTUDISC_WANT,
    MSG_CONFIRM,
    MSG_DONTWAIT,
    MSG_ERRQUEUE,
    MSG_PEEK,
    MSG_PROBE,
    MSG_TRUNC,
    SO_EE_ORIGIN_ICMP,
    SOCK_DGRAM,
    TCP_CLOSE,
    TCP_ESTABLISHED,
    Sock,
    SockWouldBlock,
    sock_oserror,
    sock_wfree,
)
from netstack.ipv4.constants import IP_MAX_MTU, RTCF_BROADCAST, RTCF_MULTICAST
from netstack.ipv4.route import Flowi4, ip_route_sock_flow
from netstack.neigh.neighbour import neigh_confirm
from netstack.sites import TIMED, kernel, spend
from netstack.wire.checksum import (
    CSUM_MANGLED_0,
    csum_partial,
    csum_tcpudp_magic,
)
from netstack.wire.ethernet import ETH_P_IP
from netstack.wire.icmp import (
    ICMP_DEST_UNREACH,
    ICMP_FRAG_NEEDED,
    ICMP_PARAMETERPROB,
    ICMP_PORT_UNREACH,
    ICMP_REDIRECT,
    ICMP_SOURCE_QUENCH,
    NR_ICMP_UNREACH,
)
from netstack.wire.ipv4 import (
    IP_DF,
    IPPROTO_UDP,
    IPV4_HDR,
    IPV4_HLEN,
    ipv4_is_lbcast,
    ipv4_is_multicast,
)
from netstack.wire.rtnetlink import RTN_BROADCAST, RTN_LOCAL, RTN_MULTICAST
from netstack.wire.udp import UDP_HDR, UDP_HLEN

if TYPE_CHECKING:
    from netstack.ipv4.netns import Ipv4
    from netstack.ipv4.route import Rtable

__all__ = [
    "ICMP_ERR_CONVERT",
    "UdpSock",
    "ip4_datagram_connect",
    "udp_err",
    "udp_rcv",
    "udp_sendmsg",
]

EACCES: Final = 13
EAGAIN: Final = 11
EINVAL: Final = 22
EMSGSIZE: Final = 90
EDESTADDRREQ: Final = 89
EADDRINUSE: Final = 98
EADDRNOTAVAIL: Final = 99
ENOBUFS: Final = 105
EHOSTUNREACH: Final = 113
EPROTO: Final = 71

# icmp_err_convert[code] = (errno, fatal)  (net/ipv4/icmp.c)
ICMP_ERR_CONVERT: Final = (
    (101, False),  # NET_UNREACH → ENETUNREACH
    (113, False),  # HOST_UNREACH → EHOSTUNREACH
    (92, True),  # PROT_UNREACH → ENOPROTOOPT
    (111, True),  # PORT_UNREACH → ECONNREFUSED
    (90, False),  # FRAG_NEEDED → EMSGSIZE
    (95, False),  # SR_FAILED → EOPNOTSUPP
    (101, True),  # NET_UNKNOWN → ENETUNREACH
    (112, True),  # HOST_UNKNOWN → EHOSTDOWN
    (64, True),  # HOST_ISOLATED → ENONET
    (101, True),  # NET_ANO → ENETUNREACH
    (113, True),  # HOST_ANO → EHOSTUNREACH
    (101, False),  # NET_UNR_TOS → ENETUNREACH
    (113, False),  # HOST_UNR_TOS → EHOSTUNREACH
    (113, True),  # PKT_FILTERED → EHOSTUNREACH
    (113, True),  # PREC_VIOLATION → EHOSTUNREACH
    (113, True),  # PREC_CUTOFF → EHOSTUNREACH
)

_I: Final = struct.Struct("!I")
_II: Final = struct.Struct("!II")
_HH: Final = struct.Struct("!HH")
_EE: Final = struct.Struct("=IBBBBII")  # struct sock_extended_err
_SIN: Final = struct.Struct("=HH4s8x")  # struct sockaddr_in (family host order)
# Module-level names for imported objects whose methods the data path calls: CPython
# 3.11 compiles ``imported_name.method(...)`` as an attribute load that builds a bound
# method on every call (it takes an imported name for a module); a name assigned here
# gets the specialised method call. The struct methods a datagram calls are bound here
# once (compiled code then calls them without looking the method up by name), the
# reads typed with what their formats give.
_UDP_HDR: Final = UDP_HDR
_UDP_HDR_PACK: Final = UDP_HDR.pack_into
# saddr, daddr and the UDP header, read at offset 12 of a 20-byte IPv4 header
_ADDRS_UDP_HDR: Final[Callable[[bytearray, int], tuple[int, int, int, int, int, int]]] = (
    struct.Struct("!IIHHHH").unpack_from
)
# saddr and the UDP source port, the same way
_SADDR_SPORT: Final[Callable[[bytearray, int], tuple[int, int]]] = struct.Struct(
    "!I4xH"
).unpack_from
_TRUESIZE_MEMO: Final = TRUESIZE_OF_BUFLEN
# the send-buffer destructor, a constant (compiled code reads it without a lookup by name)
_SOCK_WFREE: Final = sock_wfree
# RTCF_BROADCAST | RTCF_MULTICAST, or'ed once (a | of two globals is not folded)
_RTCF_BROADCAST_MULTICAST: Final = RTCF_BROADCAST | RTCF_MULTICAST
_bytes_join: Final = b"".join
_IPV4_HDR_PACK: Final = IPV4_HDR.pack_into
# zeroed headroom and headers a datagram's payload is appended to (as ip_output.py's)
_ZERO_HEAD_LEN: Final = 256
_ZERO_HEAD: Final = bytearray(_ZERO_HEAD_LEN)
UDP_MAX_PAYLOAD: Final = 0xFFFF - 20 - UDP_HLEN


class UdpSock(Sock):
    """A UDP socket (kernel: ``struct udp_sock``)."""

    def __init__(
        self, ipv4: Ipv4, sock_type: int = SOCK_DGRAM, protocol: int = IPPROTO_UDP
    ) -> None:
        super().__init__(ipv4.net, 2, sock_type, protocol)
        self.ipv4 = ipv4
        # udp_tunnel_sock_cfg (setup_udp_tunnel_sock): a kernel socket that
        # decapsulates (VXLAN) takes its datagrams here instead of queueing them
        self.encap_type = 0
        self.encap_rcv: Callable[[UdpSock, SkBuff], int] | None = None
        self.gro_receive: Any = None
        self.gro_complete: Any = None
        self.sk_user_data: Any = None

    def default_ttl(self) -> int:
        return self.ipv4.ip_default_ttl

    # -- binding ----------------------------------------------------------------------
    @kernel("inet_bind", "__inet_bind")
    def bind(self, addr: int, port: int) -> None:
        """Kernel: inet_bind() / __inet_bind()."""
        ipv4 = self.ipv4
        if self.inet_num:
            raise sock_oserror(EINVAL)
        if addr:
            atype = ipv4.fib.inet_addr_type(addr)
            if atype not in (RTN_LOCAL, RTN_BROADCAST, RTN_MULTICAST) and not (
                self.freebind or ipv4.ip_nonlocal_bind
            ):
                raise sock_oserror(EADDRNOTAVAIL)
        self.inet_rcv_saddr = self.inet_saddr = addr
        if atype_is_bcast_or_mc(addr):
            self.inet_saddr = 0  # use the device's address to send
        ipv4.udp_table.get_port(self, port)

    def connect(self, addr: int, port: int) -> None:
        """``connect()``: ip4_datagram_connect below, then autobind."""
        ip4_datagram_connect(self.ipv4, self, addr, port)
        if not self.inet_num:
            self.ipv4.udp_table.get_port(self, 0)

    @kernel("__udp_disconnect")
    def disconnect(self) -> None:
        """``connect(AF_UNSPEC)``. Kernel: __udp_disconnect()."""
        self.state = TCP_CLOSE
        self.inet_daddr = 0
        self.inet_dport = 0
        if self.dst_cache is not None:
            self.dst_cache.release()
            self.dst_cache = None

    def close(self) -> None:
        self.ipv4.udp_table.unhash(self)
        super().close()

    # -- sending ---------------------------------------------------------------------------
    def _route(self, daddr: int, dport: int, connected: bool) -> tuple[Rtable, Flowi4]:
        return _udp_route(self.ipv4, self, daddr, dport, connected)

    def sendmsg(
        self, data: bytes | bytearray | memoryview, dest: tuple[int, int] | None, flags: int
    ) -> int:
        """Send one datagram (udp_sendmsg below mirrors the kernel's)."""
        return udp_sendmsg(self.ipv4, self, data, dest, flags)

    # -- receiving ----------------------------------------------------------------------------
    def recvmsg(
        self, bufsize: int, flags: int
    ) -> tuple[bytes, tuple[int, int], int, list[tuple[int, int, bytes]]]:
        """``udp_recvmsg`` for callers that take :class:`SockWouldBlock`."""
        msg = self.udp_recvmsg(bufsize, flags)
        if msg is None:
            raise SockWouldBlock(write=False)
        return msg

    @kernel("net/ipv4/udp.c", "udp_recvmsg")
    def udp_recvmsg(
        self, bufsize: int, flags: int
    ) -> tuple[bytes, tuple[int, int], int, list[tuple[int, int, bytes]]] | None:
        """One datagram; ``None`` where a blocking reader waits
        (``__skb_wait_for_more_packets``): the Trio socket's ``recv`` calls it for
        a ``UdpSock`` (not a subclass) as its ``recvmsg_or_none``.

        Kernel: net/ipv4/udp.c, udp_recvmsg()."""
        if TIMED:
            spend("udp_recvmsg")
        # flags other than none or MSG_DONTWAIT (recvmmsg's after its first datagram)
        # tested bit by bit: a bit operation is CPython 3.11's unspecialised BINARY_OP,
        # a comparison of small ints its specialised one
        if flags and flags != MSG_DONTWAIT:
            if flags & MSG_ERRQUEUE:
                raise sock_oserror(EINVAL)
            peek = flags & MSG_PEEK
        else:
            peek = 0
        ipv4 = self.ipv4
        while True:
            if self.sk_err:  # sock_error(), inline in the kernel too
                raise sock_oserror(self.sock_error())
            q = self.receive_queue
            if not q:
                if self.sk_shutdown & 1:
                    return b"", (0, 0), 0, []
                if flags & MSG_DONTWAIT:
                    raise sock_oserror(EAGAIN)
                return None
            skb = q[0]
            summed = skb.ip_summed  # udp_lib_checksum_complete(): skb_csum_unnecessary() inline
            if (
                summed != CHECKSUM_UNNECESSARY
                and summed != CHECKSUM_PARTIAL
                and not udp_csum_ok(skb)
            ):
                q.popleft()
                self.sk_rmem_alloc -= skb.rmem_charge
                ipv4.udp_mib.InCsumErrors += 1
                ipv4.udp_mib.InErrors += 1
                kfree_skb(skb, DropReason.UDP_CSUM)
                continue
            buf = skb.buf
            th = skb.transport_header
            nh = skb.network_header
            if th == nh + 20:  # no IP options: the source address and port in one read
                saddr, sport = _SADDR_SPORT(buf, nh + 12)
            else:
                (saddr,) = _I.unpack_from(buf, nh + 12)
                sport = (buf[th] << 8) | buf[th + 1]
            start = th + UDP_HLEN
            ulen = skb.tail - start
            mflags = 0
            copy = ulen
            if ulen > bufsize:
                copy = bufsize
                mflags |= MSG_TRUNC
            # skb_copy_datagram_msg(): the copy out as bytes (a join of the one slice
            # makes them without the bytes() constructor's argument handling)
            data = _bytes_join((buf[start : start + copy],))
            anc = self.cmsgs(skb) if self.recvttl else []
            if not peek:
                q.popleft()
                self.sk_rmem_alloc -= skb.rmem_charge
                ipv4.udp_mib.InDatagrams += 1
                consume_skb(skb)
            return data, (saddr, sport), mflags, anc


@kernel("net/ipv4/datagram.c", "__ip4_datagram_connect")
def ip4_datagram_connect(ipv4: Ipv4, sk: Sock, addr: int, port: int) -> None:
    """Route to the peer and remember it; also IPv4's half of an AF_INET6
    socket connecting to ``::ffff:a.b.c.d`` (dual stack).

    Kernel: net/ipv4/datagram.c, __ip4_datagram_connect().
    """
    if sk.dst_cache is not None:
        sk.dst_cache.release()
        sk.dst_cache = None
    rt, fl4 = ip_route_sock_flow(ipv4, sk, addr, port, IPPROTO_UDP)
    if rt.rt_flags & RTCF_BROADCAST and not sk.sk_broadcast:
        rt.release()
        raise sock_oserror(EACCES)
    if not sk.inet_saddr:
        sk.inet_saddr = fl4.saddr
    if not sk.inet_rcv_saddr:
        sk.inet_rcv_saddr = fl4.saddr
    sk.inet_daddr = fl4.daddr
    sk.inet_dport = port
    sk.inet_id = ipv4.net.rng.getrandbits(16)
    sk.dst_cache = rt
    sk.state = TCP_ESTABLISHED


def _udp_route(
    ipv4: Ipv4, sk: Sock, daddr: int, dport: int, connected: bool
) -> tuple[Rtable, Flowi4]:
    """The route of a datagram (the connected socket's cached one if still valid)."""
    if connected:
        rt: Rtable | None = sk.dst_cache
        if rt is not None and rt.valid():
            fl4 = Flowi4(daddr, sk.inet_saddr)
            rt.hold()
            return rt, fl4
    rt2, fl4 = ip_route_sock_flow(ipv4, sk, daddr, dport, IPPROTO_UDP)
    if rt2.rt_flags & RTCF_BROADCAST and not sk.sk_broadcast:
        rt2.release()
        raise sock_oserror(EACCES)
    if connected:
        if sk.dst_cache is not None:
            sk.dst_cache.release()
        sk.dst_cache = rt2.hold()
    return rt2, fl4


@kernel(
    "net/ipv4/udp.c",
    "udp_sendmsg",
    "ipv4_mtu",
    "net/ipv4/ip_output.c",
    "ip_make_skb",
    "__ip_make_skb",
    "ip_local_out",
    "__ip_local_out",
    "include/net/ip.h",
    "ip_send_check",
    "arch/x86/include/asm/checksum_64.h",
    "ip_fast_csum",
)
def udp_sendmsg(
    ipv4: Ipv4,
    sk: Sock,
    data: bytes | bytearray | memoryview,
    dest: tuple[int, int] | None,
    flags: int,
) -> int:
    """Send one datagram over IPv4: an AF_INET socket's, or an AF_INET6 one's to
    ``::ffff:a.b.c.d`` (udpv6_sendmsg hands those here; the socket is bound).

    ``ip_make_skb`` (with ``__ip_make_skb``) and ``ip_local_out`` (with
    ``__ip_local_out``, ``ip_send_check`` and ``ip_fast_csum``) are written out
    for the socket's datagram (keep them in step).

    Twin: netstack.ipv6.udp.Udp6Sock.sendmsg6.
    Kernel: net/ipv4/udp.c, udp_sendmsg() / ipv4_mtu(); net/ipv4/ip_output.c,
    ip_make_skb() / __ip_make_skb() / ip_local_out() / __ip_local_out();
    include/net/ip.h, ip_send_check(); arch/x86/include/asm/checksum_64.h,
    ip_fast_csum().
    """
    if TIMED:
        spend("udp_sendmsg", len(data))  # + ip_generic_getfrag's copy from user
    if sk.sk_err:
        raise sock_oserror(sk.sock_error())
    length = len(data)
    if length > UDP_MAX_PAYLOAD:
        raise sock_oserror(EMSGSIZE)
    if dest is None:
        if sk.state != TCP_ESTABLISHED:
            raise sock_oserror(EDESTADDRREQ)
        daddr = sk.inet_daddr
        dport = sk.inet_dport
        # sk_dst_check(): a connected socket's cached route is an IPv4 one here
        rt: Rtable | None = sk.dst_cache
        if rt is not None and rt.rt_genid == ipv4.rt_genid and rt.obsolete == -1:
            rt.refcnt += 1  # dst_hold()
            rt.holds += 1
            line = rt.line
            if line is not None:
                line.write("dst_hold", atomic=True)
        else:
            rt, _ = _udp_route(ipv4, sk, daddr, dport, True)
        saddr = sk.inet_saddr
    else:
        daddr, dport = dest
        if not dport:
            raise sock_oserror(EINVAL)
        if not sk.inet_num:
            ipv4.udp_table.get_port(sk, 0)
        rt, fl4 = _udp_route(ipv4, sk, daddr, dport, False)
        saddr = fl4.saddr
    if flags and flags & MSG_PROBE:  # (no bit operation for no flags)
        if flags & MSG_CONFIRM and rt.dev is not None:
            n = ipv4.arp_tbl.lookup(rt.nexthop(daddr), rt.dev)
            if n is not None:
                neigh_confirm(n)
        rt.release()
        return 0
    if sk.sk_wmem_alloc >= sk.sk_sndbuf:  # sock_alloc_send_skb()
        rt.release()
        if flags & MSG_DONTWAIT:
            raise sock_oserror(EAGAIN)
        raise SockWouldBlock(write=True)
    total = UDP_HLEN + length
    # ip_setup_cork()'s dst_mtu(): ipv4_mtu() (out of line, an indirect call) written
    # out for a route with no PMTU, "mtu" metric or lock: the device's MTU (a frame
    # less a datagram; Rtable.mtu otherwise)
    if rt.rt_pmtu or rt.metric_mtu or rt.rt_mtu_locked or rt.metric_mtu_locked:
        mtu = rt.mtu()
    else:
        dev = rt.dev
        mtu = dev.mtu if dev is not None else 1500
        if mtu > IP_MAX_MTU:
            mtu = IP_MAX_MTU
    fits = total + 20 <= mtu
    if not fits and 2 <= sk.pmtudisc <= 4:  # !ip_sk_ignore_df(): DO / PROBE / INTERFACE
        rt.release()
        _udp_local_error(sk, EMSGSIZE, daddr, dport, mtu)
        raise sock_oserror(EMSGSIZE)
    # ip_make_skb() / __ip_make_skb() with ip_generic_getfrag (out of line in
    # ip_output.c), written out for a socket's datagram as ip_make_skb does it (a frame
    # and a call with keywords less a datagram; keep the two in step): headroom, IP and
    # UDP headers zeroed, then the payload, in one concatenation
    if TIMED:
        spend("ip_make_skb")
    dev = rt.dev
    assert dev is not None
    hh_len = ((dev.hard_header_len + dev.needed_headroom) & ~15) + 16  # LL_RESERVED_SPACE
    tot_len = IPV4_HLEN + total
    head = hh_len + IPV4_HLEN + UDP_HLEN
    buf = (_ZERO_HEAD[:head] if head <= _ZERO_HEAD_LEN else bytearray(head)) + data
    skb = SkBuff(buf, hh_len, hh_len + tot_len)
    skb.network_header = hh_len
    skb.transport_header = th = hh_len + IPV4_HLEN
    skb.protocol = ETH_P_IP
    disc = sk.pmtudisc
    ignore_df = disc < IP_PMTUDISC_DO or disc == IP_PMTUDISC_OMIT
    if rt.rt_type == RTN_MULTICAST:
        ttl = sk.mc_ttl
    else:
        ttl = sk.uc_ttl if sk.uc_ttl >= 0 else ipv4.ip_default_ttl
    skb.priority = sk.sk_priority
    if sk.sk_mark:
        skb.mark = sk.sk_mark
    # DF when the user asked for PMTU discovery, or "want" it and the datagram fits
    df = 0
    if (
        disc == IP_PMTUDISC_DO
        or disc == IP_PMTUDISC_PROBE
        or (
            disc == IP_PMTUDISC_WANT
            and not (rt.rt_mtu_locked or rt.metric_mtu_locked)
            and tot_len <= mtu
        )
    ):
        df = IP_DF
    if ignore_df:
        skb.ignore_df = True
    # ip_select_ident_segs(): drawn now; the header's fields are written once, with the
    # checksum, where ip_local_out() below finishes the header (nothing reads the IP
    # header in between, and its bytes are zeros until then)
    if sk.inet_daddr:
        ident = sk.inet_id
        sk.inet_id = (ident + 1) & 0xFFFF
    elif df and not ignore_df:
        ident = 0
    else:
        ident = ipv4.idents.reserve(daddr, saddr, IPPROTO_UDP, 1)
    tos = sk.tos
    skb.dst = rt
    # skb_set_owner_w(): charge the send buffer until the skb is freed/orphaned
    skb.sk = sk
    # skb->truesize of the skb just allocated: the memo, else the property
    size = _TRUESIZE_MEMO.get(len(buf)) or skb.truesize
    skb.wmem_charge = size
    sk.sk_wmem_alloc += size
    skb.destructor = _SOCK_WFREE
    sport = sk.inet_num
    if sk.no_check_tx:
        _UDP_HDR_PACK(buf, th, sport, dport, total, 0)
    elif fits and dev is not None and dev.features & 0xA:  # NETIF_F_HW_CSUM | NETIF_F_IP_CSUM
        # udp4_hwcsum(): the field holds the pseudo-header sum; the device finishes it.
        # csum_tcpudp_nofold() folded at once: 2**16 ≡ 1 (mod 0xFFFF), so the
        # addresses add whole and one % reduces (a non-zero multiple of 0xFFFF folds
        # to 0xFFFF); a third of the instructions of shifting and masking halves
        s = (saddr + daddr + 17 + total) % 0xFFFF or 0xFFFF  # 17: IPPROTO_UDP
        _UDP_HDR_PACK(buf, th, sport, dport, total, s)
        skb.ip_summed = CHECKSUM_PARTIAL
        skb.csum_start = th
        skb.csum_offset = 6
    else:
        _UDP_HDR_PACK(buf, th, sport, dport, total, 0)
        c = csum_tcpudp_magic(saddr, daddr, total, IPPROTO_UDP, csum_partial(buf, th, th + total))
        _UDP_HDR_PACK(buf, th, sport, dport, total, c or CSUM_MANGLED_0)
    if flags and flags & MSG_CONFIRM:
        skb.dst_pending_confirm = True
        sk.dst_pending_confirm = True
    # udp_send_skb() → ip_send_skb() → ip_local_out() / __ip_local_out() (out of line in
    # ip_output.c), written out as ip_local_out (a frame less a datagram; keep the two in
    # step): iph_set_totlen() and ip_send_check() with its ip_fast_csum() (static
    # inlines), the checksum summed from the header's fields as ip_rcv checks it (2**16
    # ≡ 1 mod 0xFFFF: the addresses add whole) and the header packed once with it
    if TIMED:
        spend("ip_local_out")
        spend("ip_fast_csum")
    s = (0x4500 + tos + tot_len + ident + df + ttl * 256 + IPPROTO_UDP + saddr + daddr) % 0xFFFF
    _IPV4_HDR_PACK(
        buf,
        hh_len,
        0x45,
        tos,
        tot_len,
        ident,
        df,
        ttl,
        IPPROTO_UDP,
        0xFFFF - s if s else 0,
        saddr,
        daddr,
    )
    ipv4.ip.OutRequests += 1
    output = rt.output  # dst_output(): through a local, as ip_local_out
    rc = output(skb)
    if rc == 1:  # NET_XMIT_DROP: net_xmit_errno() is -ENOBUFS (NET_XMIT_CN is not an error)
        ipv4.ip.OutDiscards += 1  # ip_send_skb()
        ipv4.udp_mib.SndbufErrors += 1
        if sk.recverr:
            raise sock_oserror(ENOBUFS)
        return length  # udp_send_skb(): the drop is not an OutDatagram
    ipv4.udp_mib.OutDatagrams += 1
    return length


@kernel("ip_local_error")
def _udp_local_error(sk: Sock, err: int, daddr: int, dport: int, info: int) -> None:
    """Queue a locally detected error for IP_RECVERR. Kernel: ip_local_error()."""
    if not sk.recverr:
        return
    ee = _EE.pack(err, 1, 0, 0, 0, info, 0) + _SIN.pack(2, 0, daddr.to_bytes(4, "big"))
    sk.queue_error(b"", ee, (daddr, dport), err)


def IPV4_HLEN_PLUS(n: int) -> int:
    return n + 20


def _ignore_df(sk: Sock) -> bool:
    return sk.pmtudisc < 2 or sk.pmtudisc == 5


def atype_is_bcast_or_mc(addr: int) -> bool:
    return ipv4_is_multicast(addr) or ipv4_is_lbcast(addr)


@kernel("udp_lib_checksum_complete")
def udp_csum_ok(skb: SkBuff) -> bool:
    """Verify on read unless already known good.

    Twin: netstack.ipv6.udp.udp6_csum_ok.
    Kernel: udp_lib_checksum_complete().
    """
    s = skb.ip_summed
    if s == CHECKSUM_UNNECESSARY or s == CHECKSUM_PARTIAL:
        return True
    buf = skb.buf
    th = skb.transport_header
    if buf[th + 6] == 0 and buf[th + 7] == 0:
        return True  # no checksum sent
    nh = skb.network_header
    saddr, daddr = _II.unpack_from(buf, nh + 12)
    ulen = skb.tail - th
    if s == CHECKSUM_COMPLETE:
        total = csum_partial(buf, skb.data, skb.tail) if skb.data != th else skb.csum
        return csum_tcpudp_magic(saddr, daddr, ulen, IPPROTO_UDP, total) == 0
    return csum_tcpudp_magic(saddr, daddr, ulen, IPPROTO_UDP, csum_partial(buf, th, skb.tail)) == 0


class UdpTable:
    """Bound UDP sockets by port (kernel: ``udp_table``).

    AF_INET6 sockets that are not ``IPV6_V6ONLY`` and are bound to ``::`` or
    to ``::ffff:a.b.c.d`` are in here too (IPv6's table registers them), with
    their IPv4 view in ``inet_rcv_saddr``/``inet_daddr``: the kernel has one
    table for both families, and an IPv4 datagram may be theirs.
    """

    def __init__(self, ipv4: Ipv4) -> None:
        self.ipv4 = ipv4
        self.ports: dict[int, list[Sock]] = {}

    def _conflicts(self, sk: Sock, port: int) -> bool:
        for other in self.ports.get(port, ()):
            if other is sk:
                continue
            if (
                other.sk_bound_dev_if
                and sk.sk_bound_dev_if
                and other.sk_bound_dev_if != sk.sk_bound_dev_if
            ):
                continue
            if (
                other.inet_rcv_saddr
                and sk.inet_rcv_saddr
                and other.inet_rcv_saddr != sk.inet_rcv_saddr
            ):
                continue
            if sk.sk_reuse and other.sk_reuse:
                continue
            if sk.sk_reuseport and other.sk_reuseport:
                continue
            return True
        return False

    @kernel("udp_lib_get_port")
    def get_port(self, sk: Sock, port: int) -> None:
        """Bind *sk* to *port*, or to a free ephemeral port if 0. Kernel: udp_lib_get_port()."""
        if port:
            if self._conflicts(sk, port):
                raise sock_oserror(EADDRINUSE)
        else:
            low, high = self.ipv4.ip_local_port_range
            remaining = high - low + 1
            rng = self.ipv4.net.rng
            first = low + rng.randrange(remaining)
            for i in range(remaining):
                cand = low + (first - low + i) % remaining
                if not self._conflicts(sk, cand):
                    port = cand
                    break
            else:
                raise sock_oserror(EADDRINUSE)
        sk.inet_num = port
        sk.inet_sport = port
        self.ports.setdefault(port, []).append(sk)

    def hash_mapped(self, sk: Sock, port: int) -> None:
        """An AF_INET6 socket that is not IPV6_V6ONLY takes IPv4 datagrams on *port* too.

        The kernel keeps one ``udp_table`` for both families; here IPv6 keeps
        its own and adds such a socket to this one as well. It answers every
        attribute :meth:`lookup` reads, as an ``inet_sock`` does.
        """
        self.ports.setdefault(port, []).append(sk)

    def unhash(self, sk: Sock) -> None:
        lst = self.ports.get(sk.inet_num)
        if lst and sk in lst:
            lst.remove(sk)
            if not lst:
                del self.ports[sk.inet_num]

    @kernel("__udp4_lib_lookup", "compute_score")
    def lookup(self, saddr: int, sport: int, daddr: int, dport: int, dif: int) -> Sock | None:
        """The best socket for a unicast datagram.

        ``udp_rcv`` has this written out (keep the two in step).

        Kernel: __udp4_lib_lookup() / compute_score().
        """
        if TIMED:
            spend("__udp4_lib_lookup")
        lst = self.ports.get(dport)
        if not lst:
            return None
        best: Sock | None = None
        best_score = -1
        for sk in lst:
            score = 2 if sk.family == 2 else 1  # AF_INET beats a dual-stack AF_INET6 socket
            if sk.inet_rcv_saddr:
                if sk.inet_rcv_saddr != daddr:
                    continue
                score += 4
            if sk.inet_daddr:
                if sk.inet_daddr != saddr:
                    continue
                score += 4
            if sk.inet_dport:
                if sk.inet_dport != sport:
                    continue
                score += 4
            if sk.sk_bound_dev_if:
                if sk.sk_bound_dev_if != dif:
                    continue
                score += 4
            if score > best_score:
                best, best_score = sk, score
        return best

    @kernel("__udp4_lib_mcast_deliver")
    def mcast_matches(self, saddr: int, sport: int, daddr: int, dport: int, dif: int) -> list[Sock]:
        """Every socket a broadcast datagram goes to. Kernel: __udp4_lib_mcast_deliver()."""
        out = []
        for sk in self.ports.get(dport, ()):
            if sk.inet_rcv_saddr and sk.inet_rcv_saddr != daddr:
                continue
            if sk.inet_daddr and sk.inet_daddr != saddr:
                continue
            if sk.inet_dport and sk.inet_dport != sport:
                continue
            if sk.sk_bound_dev_if and sk.sk_bound_dev_if != dif:
                continue
            out.append(sk)
        return out

    def sockets(self) -> list[Sock]:
        return [sk for lst in self.ports.values() for sk in lst]


@kernel("udp_queue_rcv_one_skb", "ipv4_pktinfo_prepare", "__udp_enqueue_schedule_skb")
def _queue(ipv4: Ipv4, sk: Sock, skb: SkBuff, charge: bool = True) -> None:
    """Kernel: udp_queue_rcv_one_skb() → ipv4_pktinfo_prepare() →
    __udp_enqueue_schedule_skb().

    An encapsulation socket (``encap_type`` set by ``setup_udp_tunnel_sock``)
    hands the datagram to its ``encap_rcv`` once the checksum is verified;
    0 (or less) means consumed (an ``InDatagrams``), more means "deliver it as
    an ordinary datagram", whose route is dropped before it is queued
    (``ipv4_pktinfo_prepare(sk, skb, true)``: ``IP_PKTINFO`` or not, a queued
    datagram holds no route). ``udp_rcv`` has the common case written out (a
    plain ``UdpSock``, alive, no encapsulation; keep the two in step) and
    calls this for the rest with *charge* false, having charged already.
    """
    if TIMED and charge:
        spend("udp_queue_rcv_one_skb")
    # (a dual-stack AF_INET6 socket in this table is a Udp6Sock: never an encap one)
    if isinstance(sk, UdpSock) and sk.encap_rcv is not None and sk.encap_type:
        encap_rcv = sk.encap_rcv
        if not udp_csum_ok(skb):  # "Verify checksum before giving to encap"
            ipv4.udp_mib.InCsumErrors += 1
            ipv4.udp_mib.InErrors += 1
            kfree_skb(skb, DropReason.UDP_CSUM)
            return
        if encap_rcv(sk, skb) <= 0:
            ipv4.udp_mib.InDatagrams += 1
            return
    if sk.dead:
        kfree_skb(skb, DropReason.NO_SOCKET)
        return
    skb_dst_drop(skb)  # ipv4_pktinfo_prepare(sk, skb, true)
    if not sk.sock_queue_rcv_skb(skb):
        ipv4.udp_mib.RcvbufErrors += 1
        ipv4.udp_mib.InErrors += 1
        kfree_skb(skb, DropReason.SOCKET_RCVBUFF)


@kernel(
    "net/ipv4/udp.c",
    "__udp4_lib_rcv",
    "__udp4_lib_lookup",
    "compute_score",
    "udp_queue_rcv_one_skb",
    "ipv4_pktinfo_prepare",
    "skb_dst_drop",
    "__udp_enqueue_schedule_skb",
)
def udp_rcv(ipv4: Ipv4, skb: SkBuff) -> int:
    """Receive a UDP datagram.

    The socket lookup (``__udp4_lib_lookup`` with ``compute_score``; see
    ``UdpTable.lookup``) and the common case of queueing
    (``udp_queue_rcv_one_skb``, ``ipv4_pktinfo_prepare``'s route drop,
    ``__udp_enqueue_schedule_skb``) are written out (see ``_queue`` and
    ``Sock.sock_queue_rcv_skb``).

    Twin: netstack.ipv6.udp.udpv6_rcv.
    Kernel: net/ipv4/udp.c, __udp4_lib_rcv() / __udp4_lib_lookup() /
    compute_score() / udp_queue_rcv_one_skb() / ipv4_pktinfo_prepare() /
    skb_dst_drop() / __udp_enqueue_schedule_skb().
    """
    if TIMED:
        spend("__udp4_lib_rcv")
    mib = ipv4.udp_mib
    buf = skb.buf
    th = skb.data
    length = skb.tail - th
    if length < UDP_HLEN:
        mib.InErrors += 1
        kfree_skb(skb, DropReason.PKT_TOO_SMALL)
        return 0
    nh = skb.network_header
    if th == nh + 20:  # no IP options: the addresses and the UDP header in one read
        saddr, daddr, sport, dport, ulen, check = _ADDRS_UDP_HDR(buf, nh + 12)
    else:
        sport, dport, ulen, check = _UDP_HDR.unpack_from(buf, th)
        saddr, daddr = _II.unpack_from(buf, nh + 12)
    if ulen > length or ulen < UDP_HLEN:
        mib.InErrors += 1
        kfree_skb(skb, DropReason.PKT_TOO_SMALL)
        return 0
    if ulen < length:  # pskb_trim_rcsum()
        skb.tail = th + ulen
        if skb.ip_summed == CHECKSUM_COMPLETE:
            skb.ip_summed = CHECKSUM_NONE
    skb.transport_header = th
    if skb.ip_summed == CHECKSUM_COMPLETE and check:
        # udp4_csum_init(): the device's sum settles it now
        if csum_tcpudp_magic(saddr, daddr, ulen, IPPROTO_UDP, skb.csum) == 0:
            skb.ip_summed = CHECKSUM_UNNECESSARY
        else:
            skb.ip_summed = CHECKSUM_NONE
    elif not check and skb.ip_summed != CHECKSUM_PARTIAL:
        skb.ip_summed = CHECKSUM_UNNECESSARY
    dev = skb.dev
    dif = dev.ifindex if dev is not None else 0
    rt: Rtable | None = skb.dst  # type: ignore[assignment]  # an IPv4 datagram's route
    # (a local route, the common case, never has RTCF_BROADCAST or RTCF_MULTICAST: its
    # type is tested first, a comparison where the mask of rt_flags, with RTCF_LOCAL
    # above 2**30, is CPython's slow bit operation)
    if rt is not None and rt.rt_type != RTN_LOCAL and rt.rt_flags & _RTCF_BROADCAST_MULTICAST:
        socks = ipv4.udp_table.mcast_matches(saddr, sport, daddr, dport, dif)
        if not socks:
            mib.IgnoredMulti += 1
            consume_skb(skb)
            return 0
        for sk in socks[:-1]:
            _queue(ipv4, sk, skb.clone())
        _queue(ipv4, socks[-1], skb)
        return 0
    # __udp4_lib_lookup() with compute_score() written out as UdpTable.lookup has them
    # (a frame less a datagram; keep the two in step): the best-scoring socket bound
    # to the port
    if TIMED:
        spend("__udp4_lib_lookup")
    found: Sock | None = None
    lst = ipv4.udp_table.ports.get(dport)
    if lst:
        best_score = -1
        for sk in lst:
            score = 2 if sk.family == 2 else 1  # AF_INET beats a dual-stack AF_INET6 socket
            if sk.inet_rcv_saddr:
                if sk.inet_rcv_saddr != daddr:
                    continue
                score += 4
            if sk.inet_daddr:
                if sk.inet_daddr != saddr:
                    continue
                score += 4
            if sk.inet_dport:
                if sk.inet_dport != sport:
                    continue
                score += 4
            if sk.sk_bound_dev_if:
                if sk.sk_bound_dev_if != dif:
                    continue
                score += 4
            if score > best_score:
                found, best_score = sk, score
    if found is not None:
        # udp_queue_rcv_one_skb() and __udp_enqueue_schedule_skb() written out for a
        # plain UDP socket, alive, with no encapsulation (as _queue and
        # Sock.sock_queue_rcv_skb: two frames less a datagram; keep the three in step)
        if TIMED:
            spend("udp_queue_rcv_one_skb")
        if type(found) is not UdpSock or found.encap_type or found.dead:
            _queue(ipv4, found, skb, False)
            return 0
        # ipv4_pktinfo_prepare(sk, skb, true)'s skb_dst_drop(), written out as
        # netstack.core.dst.skb_dst_drop (a frame less a datagram; keep the two in
        # step): the input route is the nexthop's cached one, set without a reference
        dst = skb.dst
        if dst is not None:
            skb.dst = None
            if skb.dst_noref:
                skb.dst_noref = False
                line = dst.line
                if line is not None:  # timed mode charges the release as before the mark
                    line.write("dst_release", atomic=True)
            else:
                dst.release()
        if TIMED:
            spend("__udp_enqueue_schedule_skb")
        if found.sk_rmem_alloc > found.sk_rcvbuf:
            found.sk_drops += 1
            mib.RcvbufErrors += 1
            mib.InErrors += 1
            kfree_skb(skb, DropReason.SOCKET_RCVBUFF)
            return 0
        size = skb._truesize or _TRUESIZE_MEMO.get(len(buf)) or skb.truesize
        found.sk_rmem_alloc += size
        skb.rmem_charge = size
        skb.sk = found
        found.receive_queue.append(skb)
        if TIMED or found._readers_parked:  # sk_data_ready(): skwq_has_sleeper() hoisted
            found.sk_data_ready()
        return 0
    if not udp_csum_ok(skb):
        mib.InCsumErrors += 1
        mib.InErrors += 1
        kfree_skb(skb, DropReason.UDP_CSUM)
        return 0
    mib.NoPorts += 1
    skb.data = nh
    ipv4.icmp_send(skb, ICMP_DEST_UNREACH, ICMP_PORT_UNREACH, 0)
    kfree_skb(skb, DropReason.NO_SOCKET)
    return 0


@kernel("net/ipv4/udp.c", "__udp4_lib_err")
def udp_err(ipv4: Ipv4, skb: SkBuff, info: int) -> None:
    """An ICMP error quotes a datagram we sent.

    Twin: netstack.ipv6.udp.udpv6_err.
    Kernel: net/ipv4/udp.c, __udp4_lib_err().
    """
    buf = skb.buf
    inner = skb.data
    ihl = (buf[inner] & 0xF) * 4
    saddr, daddr = _II.unpack_from(buf, inner + 12)
    sport, dport = _HH.unpack_from(buf, inner + ihl)
    dev = skb.dev
    sk = ipv4.udp_table.lookup(daddr, dport, saddr, sport, dev.ifindex if dev else 0)
    if sk is None:
        ipv4.icmp_mib.InErrors += 1
        return
    th = skb.transport_header
    icmp_type = buf[th]
    code = buf[th + 1]
    harderr = False
    if icmp_type == ICMP_SOURCE_QUENCH or icmp_type == ICMP_REDIRECT:
        return
    if icmp_type == ICMP_PARAMETERPROB:
        err = EPROTO
        harderr = True
    elif icmp_type == ICMP_DEST_UNREACH:
        if code == ICMP_FRAG_NEEDED:
            ipv4.ipv4_sk_update_pmtu(sk, daddr, info)
            if sk.pmtudisc == IP_PMTUDISC_DONT:
                return
            err = EMSGSIZE
            harderr = True
        else:
            err = EHOSTUNREACH
            if code <= NR_ICMP_UNREACH:
                err, harderr = ICMP_ERR_CONVERT[code]
    else:  # TIME_EXCEEDED and others
        err = EHOSTUNREACH  # ICMP_TIME_EXCEEDED: soft
    if not sk.recverr:
        if not harderr or sk.state != TCP_ESTABLISHED:
            return
    else:
        (offender,) = struct.unpack_from("!I", buf, skb.network_header + 12)
        ee = _EE.pack(err, SO_EE_ORIGIN_ICMP, icmp_type, code, 0, info, 0) + _SIN.pack(
            2, 0, offender.to_bytes(4, "big")
        )
        payload = bytes(buf[inner + ihl + UDP_HLEN : skb.tail])
        sk.queue_error(payload, ee, (daddr, dport), err)
    sk.sk_err = err
    sk.sk_error_report()
