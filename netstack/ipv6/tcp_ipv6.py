"""TCP over IPv6: the receive entry point, the IPv6 ``af_ops``, replies without a socket.

Theory of operation::

    ip6_input_finish ─► tcp_v6_rcv: PACKET_HOST only, header length, checksum
      (the device's verdict, else summed over the IPv6 pseudo-header),
      TCP_SKB_CB from the header
      ─► lookup: established hash (full sock | request sock | TIME_WAIT)
         then the listener for the port (the same tables as IPv4: the keys
         carry the family)
      ─► TIME_WAIT / request sock / full sock exactly as tcp_v4_rcv
      ─► no socket: tcp_v6_send_reset (never in answer to a RST, never to
         a non-unicast destination)
    connect: route (ip6_dst_lookup_flow, which selects the source address)
      ─► inet_hash_connect ─► ISN and timestamp offset ─► tcp_connect (SYN)
    inet6_csk_xmit: the socket's cached route (re-routed when stale) ─► ip6_xmit:
      the IPv6 header in the segment's headroom (traffic class from the
      socket, hop limit from the socket or the route), a packet bigger
      than the path MTU that is not GSO is refused (EMSGSIZE) ─► ip6_local_out
    tcp_v6_err: ICMPv6 Packet Too Big ─► mtu_info, tcp_v6_mtu_reduced (at once,
      or from tcp_release_cb for an owned socket): the route's PMTU, resync the
      MSS, retransmit what no longer fits; other errors are
      icmpv6_err_convert'ed and reported as tcp_v4_err does

A TCPv6 socket is the shared :class:`~netstack.tcp.sock.TcpSock` with
``family == AF_INET6`` and :class:`Ipv6Specific` as its ``af_ops``; its
``inet_saddr``/``inet_daddr``/``inet_rcv_saddr`` hold 128-bit addresses
(the kernel's ``sk_v6_rcv_saddr``, ``np->saddr``, ``sk_v6_daddr``).

Dual stack (IPv4-mapped addresses, ``::ffff:a.b.c.d``), unless the socket is
``IPV6_V6ONLY`` (default: ``net.ipv6.bindv6only``, 0)::

    connect(::ffff:a.b.c.d) ─► af_ops := Ipv6Mapped (the kernel's
      ``ipv6_mapped``: IPv4 routing, header, checksum, MSS = MTU - 40,
      SKB_GSO_TCPV4) ─► IPv4's tcp_v4_connect; the socket's inet_* fields
      hold IPv4 addresses from then on and its hash keys are AF_INET
    IPv4 SYN ─► tcp_v4_rcv finds a listener on ``::`` (or ``::ffff:<daddr>``)
      ─► tcp_v6_conn_request hands it to tcp_v4_conn_request (the request
      sock is IPv4's) ─► the handshake's ACK ─► tcp_v6_syn_recv_sock builds
      the child with tcp_v4_syn_recv_sock, then switches it to Ipv6Mapped
    getsockname/getpeername/accept report ``::ffff:a.b.c.d``
    v6-only: connect to a mapped address → ENETUNREACH, bind → EINVAL

The only cost on the data path is none: the family is chosen once, at
connect or accept time, by the socket's af_ops.

Kernel: net/ipv6/tcp_ipv6.c, net/ipv6/inet6_connection_sock.c,
net/ipv6/ip6_output.c (ip6_xmit), net/ipv6/af_inet6.c (inet6_bind).
"""

from __future__ import annotations

import errno
import struct
from typing import TYPE_CHECKING, Any, Final

from netstack.core.features import (
    NETIF_F_GSO,
    NETIF_F_GSO_SOFTWARE,
    NETIF_F_HW_CSUM,
    NETIF_F_SG,
    SKB_GSO_TCPV6,
)
from netstack.core.net_generic import NetKey
from netstack.core.skbuff import (
    CHECKSUM_COMPLETE,
    CHECKSUM_PARTIAL,
    CHECKSUM_UNNECESSARY,
    DropReason,
    SkBuff,
    consume_skb,
    kfree_skb,
)
from netstack.core.sock import (
    AF_INET,
    AF_INET6,
    Sock,
    sk_set_txhash,
    sock_oserror,
)
from netstack.ipv6.constants import RTF_LOCAL
from netstack.ipv6.flowlabel import IPV6_AUTOFLOWLABEL, ip6_autoflowlabel, ip6_make_flowlabel
from netstack.ipv6.ip6_output import ip6_dst_hoplimit, ip6_local_out
from netstack.ipv6.route import Flowi6, Rt6Info, rt6_update_pmtu
from netstack.ipv6.sock import (
    IPV6_DSTOPTS,
    IPV6_RECVERR,
    IPV6_TCLASS,
    IPV6_UNICAST_HOPS,
    IPV6_V6ONLY,
    SOL_IPV6,
)
from netstack.ipv6.syncookies import cookie_v6_check, cookie_v6_init_sequence
from netstack.sites import TIMED, kernel, spend
from netstack.tcp import fastopen as _fastopen
from netstack.tcp.helpers import tcp_initialize_rcv_mss
from netstack.tcp.input import (
    tcp_conn_request,
    tcp_err_report,
    tcp_rcv_established,
    tcp_rcv_state_process,
    tcp_req_err,
    tcp_simple_retransmit,
)
from netstack.tcp.minisocks import (
    TCP_TW_ACK,
    TCP_TW_RST,
    TCP_TW_SYN,
    inet_csk_reqsk_queue_drop,
    inet_twsk_kill,
    tcp_check_req,
    tcp_child_process,
    tcp_create_openreq_child,
    tcp_timewait_state_process,
)
from netstack.tcp.output import (
    tcp_bare_segment,
    tcp_connect,
    tcp_make_synack,
    tcp_mss_clamp,
    tcp_mtu_to_mss,
    tcp_sync_mss,
)
from netstack.tcp.proto import TCP_IPV4_AF_OPS, Tcp, tcp_init
from netstack.tcp.sock import (
    TCP_CLOSE,
    TCP_ESTABLISHED,
    TCP_LISTEN,
    TCP_SYN_SENT,
    TCPF_MTU_REDUCED_DEFERRED,
    RequestSock,
    SockCommon,
    TcpSkbCb,
    TcpSock,
    TimewaitSock,
    between,
    tcp_add_backlog,
)
from netstack.tcp.state import tcp_set_state
from netstack.wire.checksum import csum_partial
from netstack.wire.ethernet import ETH_P_IP, ETH_P_IPV6
from netstack.wire.icmpv6 import ICMPV6_PKT_TOOBIG, NDISC_REDIRECT
from netstack.wire.ipv6 import (
    IPV6_ADDR_MAPPED,
    IPV6_ADDR_MULTICAST,
    IPV6_HLEN,
    IPV6_MIN_MTU,
    NEXTHDR_DEST,
    NEXTHDR_TCP,
    addr_at,
    csum_ipv6_magic,
    csum_ipv6_pseudo,
    ip6_flow_hdr,
    ipv6_addr_needs_scope_id,
    ipv6_addr_type,
    put_addr,
)
from netstack.wire.tcp import TCPHDR_ACK, TCPHDR_FIN, TCPHDR_RST, TCPHDR_SYN

if TYPE_CHECKING:
    from netstack.core.dst import DstEntry
    from netstack.ipv6.netns import Ipv6
    from netstack.tcp.sock import InetConnectionSockAfOps

__all__ = [
    "Ipv6Mapped",
    "Ipv6Specific",
    "tcp_v6_connect",
    "tcp_v6_err",
    "tcp_v6_init",
    "tcp_v6_rcv",
    "tcp_v6_set_scope",
    "tcp_v6_socket",
]

V4MAPPED_PREFIX: Final = 0xFFFF << 32
M32: Final = 0xFFFFFFFF
_H: Final = struct.Struct("!H")
_HH: Final = struct.Struct("!HH")
_II: Final = struct.Struct("!II")
_HBB: Final = struct.Struct("!HBB")
IP6_RT_MIN_ADVMSS: Final = IPV6_MIN_MTU - 20 - 40  # net.ipv6.route.min_adv_mss default
TCP_MAX_MSS_V6: Final = 65535 - 20  # IPV6_MAXPLEN - sizeof(tcphdr)


def _addrs(skb: SkBuff) -> tuple[int, int]:
    """(saddr, daddr) of the IPv6 header of *skb*."""
    buf = skb.buf
    nh = skb.network_header
    return addr_at(buf, nh + 8), addr_at(buf, nh + 24)


@kernel("tcp_v6_check")
def tcp_v6_check(length: int, saddr: int, daddr: int, base: int) -> int:
    """The TCP checksum field for data summing to *base*. Kernel: tcp_v6_check()."""
    return csum_ipv6_magic(saddr, daddr, length, NEXTHDR_TCP, base)


class Ipv6Specific:
    """TCP's IPv6 operations (kernel: ``ipv6_specific``).

    Twin: netstack.ipv4.tcp_ipv4.Ipv4Specific.
    """

    net_header_len = IPV6_HLEN
    family = AF_INET6
    rsk_slab_name = "request_sock_TCPv6"  # tcp6_request_sock_ops.slab_name

    def __init__(self, ipv6: Ipv6, tcp: Tcp) -> None:
        self.ipv6 = ipv6
        self.tcp = tcp
        self._mapped: Ipv6Mapped | None = None

    def mapped(self) -> Ipv6Mapped | None:
        """The ``ipv6_mapped`` af_ops, or None when the host has no IPv4 (TCP over
        IPv4 registers ``tcp_ipv4`` in the Net when the host is built)."""
        if self._mapped is None:
            v4 = TCP_IPV4_AF_OPS.find(self.tcp.net)
            if v4 is None:
                return None
            self._mapped = Ipv6Mapped(self, v4)
        return self._mapped

    # -- routes -----------------------------------------------------------------------------
    def _flow(self, sk: TcpSock) -> Flowi6:
        return Flowi6(
            sk.inet_daddr,
            sk.inet_saddr,
            oif=sk.sk_bound_dev_if,
            proto=NEXTHDR_TCP,
            dport=sk.inet_dport,
            mark=sk.sk_mark,
        )

    @kernel("net/ipv6/inet6_connection_sock.c", "inet6_csk_route_socket")
    def _route(self, sk: TcpSock) -> Rt6Info | None:
        """The socket's route, re-routed if stale.

        Kernel: net/ipv6/inet6_connection_sock.c, inet6_csk_route_socket()
        (``__sk_dst_check`` first).
        """
        rt: Rt6Info | None = sk.dst_cache
        if rt is not None and rt.valid():
            return rt
        if rt is not None:
            rt.release()
            sk.dst_cache = None
        found = self.ipv6.ip6_dst_lookup(self._flow(sk), bound_dev_if=sk.sk_bound_dev_if)
        if isinstance(found, int):
            return None
        sk.dst_cache = found
        sk_setup_caps6(sk, found)
        return found

    @kernel("net/ipv6/af_inet6.c", "inet6_sk_rebuild_header")
    def rebuild_header(self, sk: TcpSock) -> int:
        """Kernel: net/ipv6/af_inet6.c, inet6_sk_rebuild_header()."""
        if self._route(sk) is None:
            sk.sk_err_soft = errno.EHOSTUNREACH
            return -errno.EHOSTUNREACH
        return 0

    def dst_mtu(self, sk: TcpSock) -> int:
        rt = sk.dst_cache
        return int(rt.mtu()) if rt is not None else 0

    @kernel("net/ipv6/route.c", "ip6_default_advmss")
    def advmss(self, sk: TcpSock) -> int:
        """The MSS to offer: the route's MTU less the IPv6 and TCP headers.

        Kernel: net/ipv6/route.c, ip6_default_advmss().
        """
        rt = sk.dst_cache
        mtu = int(rt.mtu()) if rt is not None else 1500
        return min(max(mtu - IPV6_HLEN - 20, IP6_RT_MIN_ADVMSS), TCP_MAX_MSS_V6)

    # -- transmit -----------------------------------------------------------------------
    @kernel("net/ipv6/inet6_connection_sock.c", "inet6_csk_xmit")
    def queue_xmit(self, sk: TcpSock, skb: SkBuff) -> int:
        """Route the segment and put an IPv6 header in front of it.

        Kernel: net/ipv6/inet6_connection_sock.c, inet6_csk_xmit().
        """
        rt = self._route(sk)
        if rt is None:
            self.ipv6.ip6_mib.OutNoRoutes += 1
            sk.sk_err_soft = errno.EHOSTUNREACH
            kfree_skb(skb, DropReason.IP_OUTNOROUTES)
            return -errno.EHOSTUNREACH
        skb.priority = sk.sk_priority
        skb.mark = sk.sk_mark
        skb.dst = rt.hold()
        hlimit = sk.uc_ttl if sk.uc_ttl >= 0 else ip6_dst_hoplimit(rt)
        return ip6_xmit(self.ipv6, skb, sk.inet_saddr, sk.inet_daddr, sk.tos, hlimit, sk)

    @kernel("net/ipv6/tcp_ipv6.c", "tcp_v6_send_check", "__tcp_v6_send_check")
    def send_check(self, sk: TcpSock, skb: SkBuff) -> None:
        """Kernel: net/ipv6/tcp_ipv6.c, tcp_v6_send_check() / __tcp_v6_send_check()."""
        th = skb.transport_header
        length = skb.tail - th
        _H.pack_into(
            skb.buf, th + 16, csum_ipv6_pseudo(sk.inet_saddr, sk.inet_daddr, length, NEXTHDR_TCP)
        )
        skb.ip_summed = CHECKSUM_PARTIAL
        skb.csum_start = th
        skb.csum_offset = 16

    # -- connection set-up --------------------------------------------------------------
    @kernel("net/ipv6/af_inet6.c", "__inet6_bind")
    def bind(self, sk: TcpSock, addr: int, port: int) -> None:
        """Kernel: net/ipv6/af_inet6.c, __inet6_bind() (the TCP part)."""
        if sk.state != TCP_CLOSE or sk.inet_num:
            raise sock_oserror(errno.EINVAL)
        addr_type = ipv6_addr_type(addr)
        if addr_type & IPV6_ADDR_MAPPED:
            if sk.ipv6only:
                raise sock_oserror(errno.EINVAL)  # "makes no sense" on a v6-only socket
            if not inet6_mapped_addr_ok(self.ipv6, sk, addr & M32):
                raise sock_oserror(errno.EADDRNOTAVAIL)
        elif addr_type & IPV6_ADDR_MULTICAST:
            raise sock_oserror(errno.EINVAL)  # "Binding to a multicast address is not allowed"
        elif addr:
            dev = None
            if ipv6_addr_needs_scope_id(addr_type):
                if not sk.sk_bound_dev_if:
                    raise sock_oserror(errno.EINVAL)  # "requires an interface"
            if sk.sk_bound_dev_if:
                dev = self.ipv6.net.dev_get_by_index(sk.sk_bound_dev_if)
                if dev is None:
                    raise sock_oserror(errno.ENODEV)
            if not (sk.freebind or self.ipv6.ip_nonlocal_bind) and not self.ipv6.ipv6_chk_addr(
                addr, dev
            ):
                raise sock_oserror(errno.EADDRNOTAVAIL)
        sk.inet_rcv_saddr = sk.inet_saddr = addr
        saved_ipv6only = sk.ipv6only
        if addr and not addr_type & IPV6_ADDR_MAPPED:
            sk.ipv6only = True  # a native IPv6 address: no IPv4 can reach it
        try:
            self.tcp.hashinfo.inet_csk_get_port(sk, port)
        except OSError:
            sk.inet_rcv_saddr = sk.inet_saddr = 0
            sk.ipv6only = saved_ipv6only
            raise
        if port:
            sk.sk_userlocks |= 4  # SOCK_BINDPORT_LOCK
        if addr:
            sk.sk_userlocks |= 8  # SOCK_BINDADDR_LOCK

    def connect(self, sk: TcpSock, addr: int, port: int) -> None:
        tcp_v6_connect(self, sk, addr, port)

    @kernel(
        "net/ipv6/tcp_ipv6.c",
        "tcp_v6_mtu_reduced",
        "net/ipv6/inet6_connection_sock.c",
        "inet6_csk_update_pmtu",
    )
    def mtu_reduced(self, sk: TcpSock) -> None:
        """The MTU a Packet Too Big announced (``mtu_info``): learn it on the
        socket's route, resync the MSS, retransmit what no longer fits.

        Run by ``tcp_v6_err`` for a socket the user does not own, else by
        ``tcp_release_cb`` (``TCP_MTU_REDUCED_DEFERRED``): the route learns it
        only then, so what the owning call transmits meanwhile still goes out
        at the old size.

        Kernel: net/ipv6/tcp_ipv6.c, tcp_v6_mtu_reduced();
        net/ipv6/inet6_connection_sock.c, inet6_csk_update_pmtu().
        """
        if sk.state in (TCP_LISTEN, TCP_CLOSE):
            return
        mtu_info = sk.mtu_info
        # "Drop requests trying to increase our current mss"
        if tcp_mtu_to_mss(sk, mtu_info) >= sk.mss_cache:
            return
        # inet6_csk_update_pmtu(): the socket's route learns it (update_pmtu), then
        # the socket routes again (the new exception made its cached route stale)
        rt = self._route(sk)
        if rt is None:
            return
        rt6_update_pmtu(self.ipv6, rt, sk.inet_daddr, sk.inet_saddr, mtu_info)
        rt = self._route(sk)
        if rt is None:
            return
        mtu = int(rt.mtu())
        if sk.icsk_pmtu_cookie > mtu:
            tcp_sync_mss(sk, mtu)
            tcp_simple_retransmit(sk)

    # -- options --------------------------------------------------------------------------
    @kernel("net/ipv6/ipv6_sockglue.c", "ipv6_setsockopt")
    def setsockopt(self, sk: TcpSock, level: int, optname: int, value: int | bytes) -> None:
        """SOL_IPV6 options of a TCP socket; SOL_IP goes to IPv4's (``ip_setsockopt``).

        Kernel: net/ipv6/ipv6_sockglue.c, ipv6_setsockopt() (the options TCP uses:
        IPV6_TCLASS, IPV6_UNICAST_HOPS, IPV6_V6ONLY, IPV6_AUTOFLOWLABEL,
        IPV6_RECVERR).
        """
        if level != SOL_IPV6:
            Sock.setsockopt(sk, level, optname, value)
            return
        if optname == IPV6_DSTOPTS:
            ipv6_set_opt_hdr(sk, value)
            return
        val = sk._int(value)
        if optname == IPV6_TCLASS:
            if not -1 <= val <= 0xFF:
                raise sock_oserror(errno.EINVAL)
            sk.tos = max(val, 0)  # -1: the default, 0
        elif optname == IPV6_UNICAST_HOPS:
            if not -1 <= val <= 255:
                raise sock_oserror(errno.EINVAL)
            sk.uc_ttl = val  # -1: the route's hop limit
        elif optname == IPV6_V6ONLY:
            if sk.inet_num:
                raise sock_oserror(errno.EINVAL)  # not once bound
            sk.ipv6only = bool(val)
        elif optname == IPV6_AUTOFLOWLABEL:
            sk.autoflowlabel = int(bool(val))
            sk.fl6_gen = -1  # make the label again
        elif optname == IPV6_RECVERR:
            sk.recverr6 = bool(val)
            if not val:
                sk.error_queue.clear()  # skb_errqueue_purge()
        else:
            raise sock_oserror(errno.ENOPROTOOPT)

    @kernel("net/ipv6/ipv6_sockglue.c", "ipv6_getsockopt")
    def getsockopt(self, sk: TcpSock, level: int, optname: int) -> int | bytes:
        """Kernel: net/ipv6/ipv6_sockglue.c, ipv6_getsockopt()."""
        if level != SOL_IPV6:
            return Sock.getsockopt(sk, level, optname)
        if optname == IPV6_TCLASS:
            return sk.tos
        if optname == IPV6_UNICAST_HOPS:
            if sk.uc_ttl >= 0:
                return sk.uc_ttl
            rt = sk.dst_cache
            return ip6_dst_hoplimit(rt) if rt is not None else self.ipv6.devconf_all.hop_limit
        if optname == IPV6_V6ONLY:
            return int(sk.ipv6only)
        if optname == IPV6_AUTOFLOWLABEL:
            return int(ip6_autoflowlabel(self.ipv6, sk.autoflowlabel))
        if optname == IPV6_DSTOPTS:
            return sk.opt_dst1opt  # ipv6_getsockopt_sticky()
        if optname == IPV6_RECVERR:
            return int(sk.recverr6)
        raise sock_oserror(errno.ENOPROTOOPT)

    # -- passive open -------------------------------------------------------------------
    @kernel("net/ipv6/tcp_ipv6.c", "tcp_v6_conn_request")
    def conn_request(self, sk: TcpSock, skb: SkBuff) -> int:
        """Only unicast SYNs start a connection; an IPv4 SYN (dual-stack listener)
        is IPv4's to answer.

        Kernel: net/ipv6/tcp_ipv6.c, tcp_v6_conn_request().
        """
        if skb.protocol == ETH_P_IP:
            mapped = self.mapped()
            if mapped is None:
                kfree_skb(skb, DropReason.NOT_SPECIFIED)
                return 0
            return int(mapped.v4.conn_request(sk, skb))
        # the drops below return 0: tcp_rcv_state_process() consumes the skb
        if not ipv6_unicast_destination(skb):
            sk.ext.ListenDrops += 1  # tcp_listendrop(); no reset
            consume_skb(skb)
            return 0
        saddr, _ = _addrs(skb)
        if ipv6_addr_type(saddr) & IPV6_ADDR_MAPPED:
            self.ipv6.ip6_mib.InHdrErrors += 1
            consume_skb(skb)
            return 0
        return tcp_conn_request(sk, skb, self)

    @kernel("net/ipv6/tcp_ipv6.c", "tcp_v6_init_req")
    def init_req(self, req: RequestSock, skb: SkBuff) -> None:
        """Kernel: net/ipv6/tcp_ipv6.c, tcp_v6_init_req()."""
        saddr, daddr = _addrs(skb)
        req.loc_addr = daddr
        req.rmt_addr = saddr
        nh = skb.network_header
        buf = skb.buf
        req.tos = ((buf[nh] & 0x0F) << 4) | (buf[nh + 1] >> 4)  # ipv6_get_dsfield()
        listener = req.listener
        # a link-local peer is reached through the interface the SYN came in on
        if not listener.sk_bound_dev_if and ipv6_addr_needs_scope_id(ipv6_addr_type(saddr)):
            req.iif = skb.dev.ifindex if skb.dev is not None else 0
        else:
            req.iif = listener.sk_bound_dev_if

    @kernel("net/ipv6/tcp_ipv6.c", "tcp_v6_init_seq")
    def init_seq(self, skb: SkBuff) -> int:
        """Kernel: net/ipv6/tcp_ipv6.c, tcp_v6_init_seq() (secure_tcpv6_seq)."""
        saddr, daddr = _addrs(skb)
        sport, dport = _HH.unpack_from(skb.buf, skb.transport_header)
        return self.tcp.secure_tcp_seq(daddr, saddr, dport, sport)

    def init_ts_off(self, skb: SkBuff) -> int:
        saddr, daddr = _addrs(skb)
        return self.tcp.secure_tcp_ts_off(daddr, saddr)

    @kernel("net/ipv6/tcp_ipv6.c", "cookie_v6_init_sequence")
    def cookie_init_seq(self, sk: TcpSock, skb: SkBuff, mss: int) -> tuple[int, int]:
        """A SYN cookie and the MSS it encodes.

        Kernel: net/ipv6/tcp_ipv6.c, tcp_request_sock_ipv6_ops.cookie_init_seq
        (cookie_v6_init_sequence()).
        """
        return cookie_v6_init_sequence(self.tcp, sk, skb, mss)

    @kernel("net/ipv6/inet6_connection_sock.c", "inet6_csk_route_req")
    def route_req(self, req: RequestSock) -> Rt6Info | None:
        """Kernel: net/ipv6/inet6_connection_sock.c, inet6_csk_route_req()."""
        fl6 = Flowi6(
            req.rmt_addr,
            req.loc_addr,
            oif=req.iif,
            proto=NEXTHDR_TCP,
            dport=req.rmt_port,
            mark=req.listener.sk_mark,
        )
        found = self.ipv6.ip6_dst_lookup(fl6, bound_dev_if=req.iif)
        return None if isinstance(found, int) else found

    @kernel("net/ipv6/tcp_ipv6.c", "tcp_v6_send_synack")
    def send_synack(self, sk: TcpSock, req: RequestSock, dst: DstEntry | None) -> int:
        """Kernel: net/ipv6/tcp_ipv6.c, tcp_v6_send_synack()."""
        rt: Any = dst if dst is not None else self.route_req(req)
        if rt is None:
            return -errno.EHOSTUNREACH
        skb = tcp_make_synack(sk, req, req.adv_mss)
        th = skb.data
        skb.transport_header = th
        length = skb.tail - th
        buf = skb.buf
        _H.pack_into(
            buf,
            th + 16,
            tcp_v6_check(length, req.loc_addr, req.rmt_addr, csum_partial(buf, th, skb.tail)),
        )
        skb.ip_summed = 0
        skb.priority = sk.sk_priority
        skb.mark = sk.sk_mark
        skb.dst = rt.hold()
        hlimit = sk.uc_ttl if sk.uc_ttl >= 0 else ip6_dst_hoplimit(rt)
        rc = ip6_xmit(self.ipv6, skb, req.loc_addr, req.rmt_addr, req.tos, hlimit, sk)
        if dst is None:
            rt.release()
        return rc

    @kernel("net/ipv6/tcp_ipv6.c", "tcp_v6_syn_recv_sock")
    def syn_recv_sock(
        self, sk: TcpSock, skb: SkBuff, req: RequestSock, dst: DstEntry | None
    ) -> TcpSock | None:
        """The handshake's ACK arrived: build the child.

        Kernel: net/ipv6/tcp_ipv6.c, tcp_v6_syn_recv_sock().
        """
        if skb.protocol == ETH_P_IP:
            return self._syn_recv_sock_mapped(sk, skb, req, dst)
        if sk.sk_ack_backlog > sk.sk_max_ack_backlog:  # sk_acceptq_is_full()
            sk.ext.ListenOverflows += 1
            sk.ext.ListenDrops += 1
            return None
        rt: Any = dst if dst is not None else self.route_req(req)
        if rt is None:
            sk.ext.ListenDrops += 1
            return None
        newsk = tcp_create_openreq_child(sk, req, skb)
        newsk.inet_daddr = req.rmt_addr
        newsk.inet_rcv_saddr = newsk.inet_saddr = req.loc_addr
        newsk.sk_bound_dev_if = req.iif
        newsk.tos = req.tos
        newsk.dst_cache = rt
        sk_setup_caps6(newsk, rt)
        newsk.icsk_ext_hdr_len = 0
        tcp_sync_mss(newsk, int(rt.mtu()))
        newsk.advmss = tcp_mss_clamp(newsk, self.advmss(newsk))
        tcp_initialize_rcv_mss(newsk)
        hashinfo = self.tcp.hashinfo
        key = (AF_INET6, req.loc_addr, req.num, req.rmt_addr, req.rmt_port)
        hashinfo.ehash[key] = newsk  # inet_ehash_nolisten(): replaces the request
        newsk.ehash_key = key
        req.hashed = False
        hashinfo.inet_bind_hash(newsk, req.num)  # __inet_inherit_port()
        return newsk

    @kernel("net/ipv6/tcp_ipv6.c", "htons")
    def _syn_recv_sock_mapped(
        self, sk: TcpSock, skb: SkBuff, req: RequestSock, dst: DstEntry | None
    ) -> TcpSock | None:
        """An IPv4 handshake completed on a dual-stack listener: IPv4 builds the
        child, which then talks IPv4 through ``ipv6_mapped`` and reports
        ``::ffff:a.b.c.d`` addresses.

        Kernel: net/ipv6/tcp_ipv6.c (tcp_v6_syn_recv_sock, its
        ``skb->protocol == htons(ETH_P_IP)`` branch).
        """
        mapped = self.mapped()
        if mapped is None:
            return None
        newsk: TcpSock | None = mapped.v4.syn_recv_sock(sk, skb, req, dst)
        if newsk is None:
            return None
        newsk.af_ops = mapped
        # "we could not do this before: af_ops were ipv6_specific" (the child's
        # MSS was computed with the IPv6 header length, as in the kernel)
        tcp_sync_mss(newsk, newsk.icsk_pmtu_cookie)
        return newsk

    # -- replies without a socket ---------------------------------------------------------
    @kernel("net/ipv6/tcp_ipv6.c", "tcp_v6_send_reset")
    def send_reset(self, sk: SockCommon | None, skb: SkBuff) -> None:
        """Answer *skb* with a RST (RFC 9293 §3.10.7.1).

        Kernel: net/ipv6/tcp_ipv6.c, tcp_v6_send_reset().
        """
        buf = skb.buf
        th = skb.transport_header
        flags = buf[th + 13]
        if flags & TCPHDR_RST:
            return
        if not ipv6_unicast_destination(skb):
            return
        tcb: TcpSkbCb = skb.cb
        if flags & TCPHDR_ACK:
            seq, ack, rflags = tcb.ack_seq, 0, TCPHDR_RST
        else:
            seq = 0
            ack = tcb.end_seq
            rflags = TCPHDR_RST | TCPHDR_ACK
        self._send_response(skb, seq, ack, rflags, 0, None, sk)
        self.tcp.mib.OutRsts += 1

    @kernel("net/ipv6/tcp_ipv6.c", "tcp_v6_send_ack")
    def send_ack(
        self,
        sk: SockCommon | None,
        skb: SkBuff,
        seq: int,
        ack: int,
        win: int,
        tsval: int,
        tsecr: int,
    ) -> None:
        """Kernel: net/ipv6/tcp_ipv6.c, tcp_v6_send_ack()."""
        ts = (tsval, tsecr) if tsval >= 0 else None
        self._send_response(skb, seq, ack, TCPHDR_ACK, win, ts, sk)

    @kernel("net/ipv6/tcp_ipv6.c", "tcp_v6_send_response")
    def _send_response(
        self,
        skb: SkBuff,
        seq: int,
        ack: int,
        flags: int,
        win: int,
        ts: tuple[int, int] | None,
        sk: SockCommon | None,
    ) -> None:
        """Build a bare TCP segment back to *skb*'s sender.

        Kernel: net/ipv6/tcp_ipv6.c, tcp_v6_send_response().
        """
        saddr, daddr = _addrs(skb)
        th_in = skb.transport_header
        sport, dport = _HH.unpack_from(skb.buf, th_in)
        oif = 0
        if ipv6_addr_needs_scope_id(ipv6_addr_type(saddr)) and skb.dev is not None:
            oif = skb.dev.ifindex  # tcp_v6_iif(): the reply leaves where the segment came in
        fl6 = Flowi6(saddr, daddr, oif=oif, proto=NEXTHDR_TCP, dport=sport)
        found = self.ipv6.ip6_dst_lookup(fl6, bound_dev_if=oif)
        if isinstance(found, int):
            return
        out = tcp_bare_segment(dport, sport, seq, ack, flags, win, ts)
        buf = out.buf
        th = out.transport_header
        hlen = out.tail - th
        csum = csum_partial(buf, th, th + hlen)
        _H.pack_into(buf, th + 16, tcp_v6_check(hlen, daddr, saddr, csum))
        tclass = sk.tos if sk is not None and hasattr(sk, "tos") else 0
        # the connection's hash keeps its flow label (sk_txhash, tw_txhash);
        # without one the label comes from the flow's keys
        label = 0
        if isinstance(sk, TcpSock):
            out.hash = sk.sk_txhash
        elif isinstance(sk, TimewaitSock):
            out.hash = sk.tw_txhash
            label = sk.tw_flowlabel
        self.tcp.mib.OutSegs += 1
        out.dst = found
        ip6_xmit(self.ipv6, out, daddr, saddr, tclass, ip6_dst_hoplimit(found), None, label)


@kernel("net/ipv6/tcp_ipv6.c")
class Ipv6Mapped:
    """TCP's operations for an AF_INET6 socket talking IPv4 (kernel: ``ipv6_mapped``).

    Transmit, checksum, routes, MSS and PMTU are IPv4's (``ip_queue_xmit``,
    ``tcp_v4_send_check``, ``inet_sk_rebuild_header``, ``tcp_v4_mtu_reduced``);
    the listener half and the socket options stay IPv6's. ``family`` is the
    family on the wire, the one the socket's hash keys carry.

    Kernel: net/ipv6/tcp_ipv6.c (ipv6_mapped; set by tcp_v6_connect and
    tcp_v6_syn_recv_sock).
    """

    net_header_len = 20  # sizeof(struct iphdr)
    family = AF_INET
    rsk_slab_name = "request_sock_TCP"

    def __init__(self, v6: Ipv6Specific, v4: InetConnectionSockAfOps) -> None:
        self.v6 = v6
        self.v4 = v4  # IPv4's ``ipv4_specific`` (Ipv4Specific), found in the Net

    def queue_xmit(self, sk: TcpSock, skb: SkBuff) -> int:
        return int(self.v4.queue_xmit(sk, skb))

    def send_check(self, sk: TcpSock, skb: SkBuff) -> None:
        self.v4.send_check(sk, skb)

    def rebuild_header(self, sk: TcpSock) -> int:
        return int(self.v4.rebuild_header(sk))

    def dst_mtu(self, sk: TcpSock) -> int:
        return int(self.v4.dst_mtu(sk))

    def advmss(self, sk: TcpSock) -> int:
        return int(self.v4.advmss(sk))

    def mtu_reduced(self, sk: TcpSock) -> None:
        self.v4.mtu_reduced(sk)

    def conn_request(self, sk: TcpSock, skb: SkBuff) -> int:
        return self.v6.conn_request(sk, skb)

    def syn_recv_sock(
        self, sk: TcpSock, skb: SkBuff, req: RequestSock, dst: DstEntry | None
    ) -> TcpSock | None:
        return self.v6.syn_recv_sock(sk, skb, req, dst)

    def send_reset(self, sk: SockCommon | None, skb: SkBuff) -> None:
        self.v4.send_reset(sk, skb)

    def send_ack(
        self,
        sk: SockCommon | None,
        skb: SkBuff,
        seq: int,
        ack: int,
        win: int,
        tsval: int,
        tsecr: int,
    ) -> None:
        self.v4.send_ack(sk, skb, seq, ack, win, tsval, tsecr)

    def send_synack(self, sk: TcpSock, req: RequestSock, dst: DstEntry | None) -> int:
        return int(self.v4.send_synack(sk, req, dst))

    def init_req(self, req: RequestSock, skb: SkBuff) -> None:
        self.v4.init_req(req, skb)

    def init_seq(self, skb: SkBuff) -> int:
        return int(self.v4.init_seq(skb))

    def init_ts_off(self, skb: SkBuff) -> int:
        return int(self.v4.init_ts_off(skb))

    def cookie_init_seq(self, sk: TcpSock, skb: SkBuff, mss: int) -> tuple[int, int]:
        return self.v4.cookie_init_seq(sk, skb, mss)

    def route_req(self, req: RequestSock) -> DstEntry | None:
        return self.v4.route_req(req)

    def connect(self, sk: TcpSock, addr: int, port: int) -> None:
        self.v6.connect(sk, addr, port)

    def bind(self, sk: TcpSock, addr: int, port: int) -> None:
        self.v6.bind(sk, addr, port)

    def setsockopt(self, sk: TcpSock, level: int, optname: int, value: int | bytes) -> None:
        self.v6.setsockopt(sk, level, optname, value)

    def getsockopt(self, sk: TcpSock, level: int, optname: int) -> int | bytes:
        return self.v6.getsockopt(sk, level, optname)


@kernel("ipv6_unicast_destination")
def ipv6_unicast_destination(skb: SkBuff) -> bool:
    """Was *skb* routed to a local unicast address? Kernel: ipv6_unicast_destination()."""
    rt = skb.dst
    if rt is None or not isinstance(rt, Rt6Info):  # no rt6i_flags: taken as RTF_LOCAL
        return True
    return bool(rt.rt6i_flags & RTF_LOCAL)


@kernel("net/ipv6/ip6_output.c", "ip6_xmit")
def ip6_xmit(
    ipv6: Ipv6,
    skb: SkBuff,
    saddr: int,
    daddr: int,
    tclass: int,
    hlimit: int,
    sk: TcpSock | None,
    flowlabel: int = 0,
) -> int:
    """Push the IPv6 header into the headroom and send (``skb.dst`` is set).

    The flow label is ``ip6_make_flowlabel`` of the skb's hash (TCP's
    ``sk_txhash``). A socket keeps the label it made last with the hash and
    sysctl generation it came from, so a connection pays for it once, not per
    segment. Without a socket (replies), *flowlabel* or the automatic one.

    A packet bigger than the path MTU that is neither GSO nor allowed to be
    fragmented is refused with EMSGSIZE (TCP resegments after PMTU changes).

    Kernel: net/ipv6/ip6_output.c, ip6_xmit().
    """
    if TIMED:
        spend("ip6_xmit")
    h = skb.hash
    if sk is not None:
        if h != sk.fl6_hash or sk.fl6_gen != ipv6.flowlabel_gen:
            sk.fl6_label = _tcp_flowlabel(ipv6, skb, saddr, daddr, sk.flow_label, sk.autoflowlabel)
            sk.fl6_hash = h
            sk.fl6_gen = ipv6.flowlabel_gen
        flowlabel = sk.fl6_label
    elif not flowlabel:
        flowlabel = _tcp_flowlabel(ipv6, skb, saddr, daddr, 0, -1)
    proto = NEXTHDR_TCP
    if sk is not None and sk.opt_dst1opt:  # ipv6_push_frag_opts()
        opt = sk.opt_dst1opt
        olen = len(opt)
        dev: Any = skb.dst.dev if skb.dst is not None else None
        ll = ((dev.hard_header_len + dev.needed_headroom) & ~15) + 16 if dev is not None else 32
        if skb.data < olen + IPV6_HLEN + ll:
            skb.cow_head(olen + IPV6_HLEN + ll)  # skb_expand_head()
        skb.data -= olen
        skb.buf[skb.data : skb.data + olen] = opt
        skb.buf[skb.data] = proto  # ipv6_push_exthdr(): its next header
        proto = NEXTHDR_DEST
    skb.data -= IPV6_HLEN
    nh = skb.data
    skb.network_header = nh
    buf = skb.buf
    ip6_flow_hdr(buf, nh, tclass, flowlabel)
    _HBB.pack_into(buf, nh + 4, (skb.tail - nh - IPV6_HLEN) & 0xFFFF, proto, hlimit)
    put_addr(buf, nh + 8, saddr)
    put_addr(buf, nh + 24, daddr)
    skb.protocol = ETH_P_IPV6
    rt: Any = skb.dst
    mtu = int(rt.mtu())
    if skb.tail - nh > mtu and not skb.ignore_df and not skb.gso_size:
        skb.dev = rt.dev
        ipv6.ip6_mib.FragFails += 1
        kfree_skb(skb, DropReason.PKT_TOO_BIG)
        return -errno.EMSGSIZE
    return ip6_local_out(ipv6, skb)


@kernel("net/ipv6/ipv6_sockglue.c", "ipv6_set_opt_hdr", "ipv6_update_options")
def ipv6_set_opt_hdr(sk: TcpSock, value: int | bytes) -> None:
    """``IPV6_DSTOPTS``: the destination options header sent in front of TCP.

    An empty value removes it (RFC 3542). A connection's MSS makes room for it
    (``icsk_ext_hdr_len``, ``tcp_sync_mss``), as ``ipv6_update_options`` does.

    Kernel: net/ipv6/ipv6_sockglue.c, ipv6_set_opt_hdr() / ipv6_update_options().
    """
    opt = bytes(value) if isinstance(value, bytes | bytearray) else b""
    if opt:
        if len(opt) < 2 or len(opt) & 7 or len(opt) > 8 * 255:
            raise sock_oserror(errno.EINVAL)
        optlen = (opt[1] + 1) << 3  # ipv6_optlen()
        if optlen > len(opt):
            raise sock_oserror(errno.EINVAL)
        opt = opt[:optlen]  # ipv6_renew_options() keeps the header's own length
    sk.opt_dst1opt = opt
    # not for a v4-mapped connection (the kernel's inet_daddr != LOOPBACK4_IPV6)
    if sk.state not in (TCP_LISTEN, TCP_CLOSE) and sk.af_ops.family == AF_INET6:
        sk.icsk_ext_hdr_len = len(opt)
        tcp_sync_mss(sk, sk.icsk_pmtu_cookie)


def _tcp_flowlabel(
    ipv6: Ipv6, skb: SkBuff, saddr: int, daddr: int, flowlabel: int, autoflowlabel: int
) -> int:
    """``ip6_make_flowlabel`` for a TCP skb: its hash, else the flow's (skb_get_hash_flowi6)."""
    h = skb.hash
    if not h and not flowlabel and ipv6.auto_flowlabels:
        sport, dport = _HH.unpack_from(skb.buf, skb.data)  # the TCP header
        h = ipv6.flow_hash.flowi6(saddr, daddr, sport, dport, NEXTHDR_TCP)
    return ip6_make_flowlabel(ipv6, h, flowlabel, ip6_autoflowlabel(ipv6, autoflowlabel))


@kernel("net/core/sock.c", "sk_setup_caps", "ip6_dst_store")
def sk_setup_caps6(sk: TcpSock, rt: Any) -> None:
    """What the route's device lets TCPv6 build: GSO skbs (``SKB_GSO_TCPV6``) or MSS ones.

    Kernel: net/core/sock.c, sk_setup_caps() (via ip6_dst_store()).
    """
    dev = rt.dev
    if dev is None:
        return
    caps = dev.features
    if caps & NETIF_F_GSO:
        caps |= NETIF_F_GSO_SOFTWARE
    sk.sk_gso_type = SKB_GSO_TCPV6
    feature = SKB_GSO_TCPV6 << 16
    if caps & feature == feature:
        caps |= NETIF_F_SG | NETIF_F_HW_CSUM
        sk.sk_gso_max_size = dev.gso_max_size
        sk.sk_gso_max_segs = dev.gso_max_segs
    else:
        sk.sk_gso_max_segs = 1
    sk.sk_route_caps = caps


@kernel("net/ipv6/af_inet6.c", "__inet6_bind", "tcp_v6_connect")
def tcp_v6_set_scope(sk: TcpSock, addr: int, scope_id: int) -> None:
    """Bind the socket to the interface of a link-local address's zone.

    Kernel: net/ipv6/af_inet6.c, __inet6_bind() / tcp_v6_connect()
    (``sin6_scope_id``).
    """
    if not scope_id or not ipv6_addr_needs_scope_id(ipv6_addr_type(addr)):
        return
    if sk.sk_bound_dev_if and sk.sk_bound_dev_if != scope_id:
        raise sock_oserror(errno.EINVAL)
    sk.sk_bound_dev_if = scope_id


@kernel("net/ipv6/tcp_ipv6.c", "tcp_v6_connect")
def tcp_v6_connect(ops: Ipv6Specific, sk: TcpSock, addr: int, port: int) -> None:
    """Route, pick the source address and port, send the SYN.

    Twin: netstack.ipv4.tcp_ipv4.tcp_v4_connect.
    Kernel: net/ipv6/tcp_ipv6.c, tcp_v6_connect().
    """
    if not port:
        raise sock_oserror(errno.ECONNREFUSED)
    ipv6 = ops.ipv6
    tcp = ops.tcp
    if addr == 0:  # connect to :: means connect to the loopback (BSD'ism)
        addr = V4MAPPED_PREFIX | 0x7F000001 if _is_v4mapped(sk.inet_rcv_saddr) else 1
    addr_type = ipv6_addr_type(addr)
    if addr_type & IPV6_ADDR_MULTICAST:
        raise sock_oserror(errno.ENETUNREACH)
    if addr_type & IPV6_ADDR_MAPPED:
        tcp_v6_connect_mapped(ops, sk, addr & M32, port)
        return
    if ipv6_addr_needs_scope_id(addr_type) and not sk.sk_bound_dev_if:
        raise sock_oserror(errno.EINVAL)  # a link-local peer needs an interface
    sk.inet_dport = port
    sk.inet_daddr = addr
    fl6 = ops._flow(sk)
    found = ipv6.ip6_dst_lookup(fl6, bound_dev_if=sk.sk_bound_dev_if)  # source selection too
    if isinstance(found, int):
        sk.inet_dport = 0
        sk.inet_daddr = 0
        raise sock_oserror(-found)
    if not sk.inet_saddr:
        sk.inet_saddr = fl6.saddr
    if not sk.inet_rcv_saddr:
        sk.inet_rcv_saddr = sk.inet_saddr
    sk.icsk_ext_hdr_len = len(sk.opt_dst1opt)  # opt->opt_flen + opt->opt_nflen
    sk.mss_clamp = IPV6_MIN_MTU - 20 - IPV6_HLEN  # IPV6_MIN_MTU - headers until the SYN-ACK
    tcp_set_state(sk, TCP_SYN_SENT)
    try:
        tcp.hashinfo.inet_hash_connect(sk)
    except OSError:
        tcp_set_state(sk, TCP_CLOSE)
        sk.inet_dport = 0
        found.release()
        raise
    sk_set_txhash(sk)
    if sk.dst_cache is not None:
        sk.dst_cache.release()
    sk.dst_cache = found
    sk_setup_caps6(sk, found)
    if not sk.write_seq:
        sk.write_seq = tcp.secure_tcp_seq(sk.inet_saddr, addr, sk.inet_sport, port)
    sk.tsoffset = tcp.secure_tcp_ts_off(sk.inet_saddr, addr)
    tcp.sockets.add(sk)
    # TCP_FASTOPEN_CONNECT with a cookie: the SYN waits for the first write
    if _fastopen.tcp_fastopen_defer_connect(sk):
        return
    err = tcp_connect(sk)
    if err:
        tcp_set_state(sk, TCP_CLOSE)
        sk.inet_dport = 0
        raise sock_oserror(-err)


def _is_v4mapped(addr: int) -> bool:
    return addr >> 32 == 0xFFFF


@kernel("net/ipv4/af_inet.c", "inet_addr_valid_or_nonlocal")
def inet6_mapped_addr_ok(ipv6: Ipv6, sk: TcpSock, v4addr: int) -> bool:
    """May *sk* bind to ``::ffff:<v4addr>``? The AF_INET checks, reproduced.

    Kernel: net/ipv4/af_inet.c, inet_addr_valid_or_nonlocal() (from __inet6_bind).
    """
    if not v4addr or sk.freebind or ipv6.ip_nonlocal_bind:
        return True
    ipv4 = ipv6.net.ipv4
    if ipv4 is None:
        return False
    if ipv4.ip_nonlocal_bind:
        return True
    return ipv4.inet_addr_type(v4addr) in (2, 3, 5)  # LOCAL, BROADCAST, MULTICAST


@kernel("net/ipv6/tcp_ipv6.c")
def tcp_v6_connect_mapped(ops: Ipv6Specific, sk: TcpSock, v4addr: int, port: int) -> None:
    """Connect an AF_INET6 socket to ``::ffff:<v4addr>``: switch its af_ops to
    ``ipv6_mapped`` and let IPv4 connect it (IPv4 route, source, MSS, GSO).

    Kernel: net/ipv6/tcp_ipv6.c (tcp_v6_connect, its ``IPV6_ADDR_MAPPED``
    branch calling tcp_v4_connect).
    """
    if sk.ipv6only:
        raise sock_oserror(errno.ENETUNREACH)
    mapped = ops.mapped()
    if mapped is None:
        raise sock_oserror(errno.ENETUNREACH)
    saved = (sk.inet_saddr, sk.inet_rcv_saddr, sk.icsk_ext_hdr_len)
    bound = sk.inet_rcv_saddr
    v4 = bound & M32 if _is_v4mapped(bound) else 0
    sk.af_ops = mapped
    sk.inet_saddr = sk.inet_rcv_saddr = v4
    try:
        mapped.v4.connect(sk, v4addr, port)
    except OSError:
        sk.af_ops = ops
        sk.inet_saddr, sk.inet_rcv_saddr, sk.icsk_ext_hdr_len = saved
        raise


# -- receive --------------------------------------------------------------------------------


@kernel("net/ipv6/tcp_ipv6.c", "tcp_v6_checksum_init", "tcp_checksum_complete")
def _csum_ok(skb: SkBuff, saddr: int, daddr: int) -> bool:
    """Kernel: net/ipv6/tcp_ipv6.c, tcp_v6_checksum_init() + tcp_checksum_complete()."""
    s = skb.ip_summed
    if s == CHECKSUM_UNNECESSARY or s == CHECKSUM_PARTIAL:
        return True
    th = skb.transport_header
    length = skb.tail - th
    if s == CHECKSUM_COMPLETE and skb.data == th:
        return tcp_v6_check(length, saddr, daddr, skb.csum) == 0
    if tcp_v6_check(length, saddr, daddr, csum_partial(skb.buf, th, skb.tail)) == 0:
        skb.ip_summed = CHECKSUM_UNNECESSARY
        return True
    return False


@kernel("net/ipv6/tcp_ipv6.c", "tcp_v6_fill_cb")
def tcp_v6_fill_cb(skb: SkBuff, th: int) -> TcpSkbCb:
    """TCP_SKB_CB from the header. Kernel: net/ipv6/tcp_ipv6.c, tcp_v6_fill_cb()."""
    buf = skb.buf
    seq, ack = _II.unpack_from(buf, th + 4)
    doff = (buf[th + 12] >> 4) * 4
    flags = buf[th + 13]
    end = (seq + (flags & TCPHDR_SYN) // 2 + (flags & TCPHDR_FIN) + skb.tail - th - doff) & M32
    tcb = TcpSkbCb(seq, end, flags)
    tcb.ack_seq = ack
    nh = skb.network_header
    tcb.dsfield = ((buf[nh] & 0x0F) << 4) | (buf[nh + 1] >> 4)  # ipv6_get_dsfield()
    skb.cb = tcb
    return tcb


@kernel("net/ipv6/tcp_ipv6.c", "tcp_v6_rcv")
def tcp_v6_rcv(ipv6: Ipv6, tcp: Tcp, skb: SkBuff) -> int:
    """Every TCP segment for this host over IPv6 starts here.

    Twin: netstack.ipv4.tcp_ipv4.tcp_v4_rcv.
    Kernel: net/ipv6/tcp_ipv6.c, tcp_v6_rcv().
    """
    if TIMED:
        spend("tcp_v6_rcv")
    mib = tcp.mib
    if skb.pkt_type != 0:  # PACKET_HOST only
        kfree_skb(skb, DropReason.NOT_SPECIFIED)
        return 0
    mib.InSegs += 1
    th = skb.transport_header
    buf = skb.buf
    if skb.tail - th < 20:
        kfree_skb(skb, DropReason.PKT_TOO_SMALL)
        mib.InErrs += 1
        return 0
    doff = (buf[th + 12] >> 4) * 4
    if doff < 20 or doff > skb.tail - th:
        kfree_skb(skb, DropReason.PKT_TOO_SMALL)  # SKB_DROP_REASON_TCP_INVALID_HDR
        mib.InErrs += 1
        return 0
    saddr, daddr = _addrs(skb)
    if not _csum_ok(skb, saddr, daddr):
        mib.InCsumErrors += 1
        mib.InErrs += 1
        kfree_skb(skb, DropReason.TCP_CSUM)
        return 0
    sport, dport = _HH.unpack_from(buf, th)
    skb.data = th  # __skb_pull to the TCP header
    tcb = tcp_v6_fill_cb(skb, th)
    hashinfo = tcp.hashinfo
    dev = skb.dev
    dif = dev.ifindex if dev else 0
    sk: TcpSock | RequestSock | TimewaitSock | None
    sk = hashinfo.lookup_established(AF_INET6, saddr, sport, daddr, dport)
    if sk is None:
        sk = hashinfo.lookup_listener(AF_INET6, daddr, dport, dif)
    while True:
        if sk is None:
            ipv6_ops(tcp).send_reset(None, skb)  # the no_tcp_socket label
            kfree_skb(skb, DropReason.NO_SOCKET)
            return 0
        if isinstance(sk, TimewaitSock):  # sk_state == TCP_TIME_WAIT
            verdict = tcp_timewait_state_process(sk, skb, tcb)
            if verdict == TCP_TW_SYN:
                sk2 = hashinfo.lookup_listener(AF_INET6, daddr, dport, dif)
                inet_twsk_kill(sk)
                sk = sk2
                continue
            if verdict == TCP_TW_ACK:
                tw = sk
                tw.af_ops.send_ack(
                    tw,
                    skb,
                    tw.snd_nxt,
                    tw.rcv_nxt,
                    tw.rcv_wnd >> tw.rcv_wscale,
                    ((tcp.tcp_time_stamp_ms() + tw.ts_offset) & M32) if tw.tstamp_ok else -1,
                    tw.ts_recent,
                )
                consume_skb(skb)
            elif verdict == TCP_TW_RST:
                ipv6_ops(tcp).send_reset(sk, skb)
                kfree_skb(skb, DropReason.NOT_SPECIFIED)
                inet_twsk_kill(sk)
            else:
                consume_skb(skb)
            return 0
        if isinstance(sk, RequestSock):  # sk_state == TCP_NEW_SYN_RECV
            req = sk
            listener = req.listener
            if listener.state != TCP_LISTEN:
                inet_csk_reqsk_queue_drop(listener, req)
                sk = hashinfo.lookup_listener(AF_INET6, daddr, dport, dif)
                continue
            nsk = tcp_check_req(listener, skb, req)
            if nsk is None:
                kfree_skb(skb, DropReason.NOT_SPECIFIED)
                return 0
            if nsk is listener:  # processed as the listener's: an ACK to LISTEN
                return _reset_and_free(tcp, listener, skb, DropReason.TCP_FLAGS)
            reason = tcp_child_process(listener, nsk, skb)
            if reason:
                return _reset_and_free(tcp, nsk, skb, reason)
            return 0
        break
    tcb.sacked_off = 0
    if sk.sk_lock_owned and sk.state != TCP_LISTEN:
        # sock_owned_by_user() (a listener is processed without its lock): the
        # socket call in progress runs it at release_sock (tcp/sock.py, "The socket lock")
        tcp_add_backlog(sk, skb, tcp_v6_do_rcv)
        return 0
    clock = tcp.net.clock  # one instant for the segment (tcp_v4_rcv)
    held = clock.hold()
    try:
        return tcp_v6_do_rcv(tcp, sk, skb)
    finally:
        clock.release(held)


@kernel("tcp_v4_do_rcv", "tcp_v6_do_rcv")
def _reset_and_free(tcp: Tcp, sk: SockCommon | None, skb: SkBuff, reason: int) -> int:
    """Answer with a RST, then drop the skb for *reason* (1, SKB_CONSUMED: consume it).

    Kernel: the reset: and discard: labels of tcp_v4_do_rcv() / tcp_v6_do_rcv().
    """
    ipv6_ops(tcp).send_reset(sk, skb)
    if reason == 1:
        consume_skb(skb)
    else:
        kfree_skb(skb, DropReason(reason))
    return 0


@kernel("net/ipv6/tcp_ipv6.c", "tcp_v6_do_rcv", "tcp_v6_cookie_check")
def tcp_v6_do_rcv(tcp: Tcp, sk: TcpSock, skb: SkBuff) -> int:
    """A segment for a full socket; a listener first checks an ACK for a SYN cookie.

    Twin: netstack.ipv4.tcp_ipv4.tcp_v4_do_rcv.
    Kernel: net/ipv6/tcp_ipv6.c, tcp_v6_do_rcv() / tcp_v6_cookie_check().
    """
    if TIMED:
        spend("tcp_v6_do_rcv")
    if sk.state == TCP_ESTABLISHED:
        tcp_rcv_established(sk, skb)
        return 0
    if sk.state == TCP_LISTEN and not skb.buf[skb.transport_header + 13] & TCPHDR_SYN:
        nsk = cookie_v6_check(ipv6_ops(tcp), sk, skb)
        if nsk is None:
            return 0
        if nsk is not sk:
            reason = tcp_child_process(sk, nsk, skb)
            if reason:
                return _reset_and_free(tcp, nsk, skb, reason)
            return 0
    reason = tcp_rcv_state_process(sk, skb)
    if reason:
        return _reset_and_free(tcp, sk, skb, reason)
    return 0


def ipv6_ops(tcp: Tcp) -> Ipv6Specific:
    return TCP_IPV6_NET.get(tcp.net)


TCP_IPV6_NET: NetKey[Ipv6Specific] = NetKey("tcp_ipv6")


@kernel("net/ipv6/tcp_ipv6.c", "tcp_v6_err")
def tcp_v6_err(
    ipv6: Ipv6, tcp: Tcp, skb: SkBuff, icmp_type: int, code: int, offset: int, info: int
) -> None:
    """An ICMPv6 error about one of our segments (``skb.data`` at the quoted IPv6 header).

    Twin: netstack.ipv4.tcp_ipv4.tcp_v4_err.
    Kernel: net/ipv6/tcp_ipv6.c, tcp_v6_err().
    """
    from netstack.ipv6.udp import icmpv6_err_convert

    buf = skb.buf
    inner = skb.data
    th = inner + offset
    if skb.tail - th < 8:
        return
    saddr = addr_at(buf, inner + 8)
    daddr = addr_at(buf, inner + 24)
    sport, dport = _HH.unpack_from(buf, th)
    (seq,) = struct.unpack_from("!I", buf, th + 4)
    sk = tcp.hashinfo.lookup_established(AF_INET6, daddr, dport, saddr, sport)
    if sk is None:
        ipv6.icmp6_mib.InErrors += 1
        return
    if isinstance(sk, TimewaitSock):  # TCP_TIME_WAIT
        return  # inet_twsk_put(): nothing to tell a connection that is over
    if isinstance(sk, RequestSock):  # TCP_NEW_SYN_RECV
        _, fatal = icmpv6_err_convert(icmp_type, code)
        tcp_req_err(sk, seq, fatal)
        return
    if sk.sk_lock_owned and icmp_type != ICMPV6_PKT_TOOBIG:
        sk.ext.LockDroppedIcmps += 1  # sock_owned_by_user(): only PMTU is deferred
    if sk.state == TCP_CLOSE:
        return
    if sk.state not in (TCP_SYN_SENT, TCP_LISTEN) and not between(seq, sk.snd_una, sk.snd_nxt):
        sk.ext.OutOfWindowIcmps += 1
        return
    if icmp_type == NDISC_REDIRECT:
        return
    if icmp_type == ICMPV6_PKT_TOOBIG:
        if sk.state == TCP_LISTEN or info < IPV6_MIN_MTU:
            return  # "We are not interested in TCP_LISTEN and open_requests"
        # the route learns the MTU in tcp_v6_mtu_reduced, deferred for an owned socket
        sk.mtu_info = info
        if sk.sk_lock_owned:  # sock_owned_by_user(): tcp_release_cb runs it
            sk.sk_tsq_flags |= TCPF_MTU_REDUCED_DEFERRED
        else:
            Ipv6Specific.mtu_reduced(ipv6_ops(tcp), sk)
        return
    err, fatal = icmpv6_err_convert(icmp_type, code)
    tcp_err_report(sk, err, fatal, sk.recverr6)  # inet6_test_bit(RECVERR6, sk)


@kernel("net/ipv6/tcp_ipv6.c", "tcpv6_init")
def tcp_v6_init(ipv6: Ipv6) -> Tcp:
    """Install TCP on an IPv6 Net: the shared state and the IPv6 af_ops.

    Kernel: net/ipv6/tcp_ipv6.c, tcpv6_init() (tcpv6_prot, tcpv6_protocol).
    """
    tcp = tcp_init(ipv6.net)
    TCP_IPV6_NET.set(ipv6.net, Ipv6Specific(ipv6, tcp))
    return tcp


@kernel("inet6_create", "tcp_v6_init_sock")
def tcp_v6_socket(ipv6: Ipv6) -> TcpSock:
    """A new IPv6 TCP socket. Kernel: inet6_create() + tcp_v6_init_sock()."""
    ops = TCP_IPV6_NET.find(ipv6.net)
    if ops is None:
        tcp_v6_init(ipv6)
        ops = TCP_IPV6_NET.get(ipv6.net)
    sk = TcpSock(ops.tcp, AF_INET6, ops)
    sk.ipv6only = bool(ipv6.bindv6only)  # inet6_create(): sk_ipv6only = net.ipv6.bindv6only
    return sk
