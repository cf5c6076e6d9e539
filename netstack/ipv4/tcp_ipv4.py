"""TCP over IPv4: the receive entry point, the IPv4 ``af_ops``, replies without a socket.

Theory of operation::

    ip_local_deliver ─► tcp_v4_rcv: header length, checksum (the device's
      verdict, else summed here), TCP_SKB_CB from the header
      ─► lookup: established hash (full sock | request sock | TIME_WAIT)
         then the listener for the port
      ─► TIME_WAIT: tcp_timewait_state_process (a new SYN may reopen it)
      ─► request sock: tcp_check_req ─► the child (tcp_child_process)
      ─► full sock: tcp_v4_do_rcv ─► tcp_rcv_established | tcp_rcv_state_process
      ─► no socket: tcp_v4_send_reset (never in answer to a RST)
    connect: route ─► source address ─► inet_hash_connect (ephemeral port)
      ─► ISN and timestamp offset (secure_tcp_seq) ─► tcp_connect (SYN)
    ip_queue_xmit: the socket's cached route (re-routed when stale) ─► IPv4
      header in the segment's headroom (DF per the socket, the socket's IP ID
      counter advanced by the segment count) ─► ip_local_out

Everything that does not depend on the family lives in ``netstack.tcp``;
IPv6 will add ``tcp_ipv6.py`` with its own af_ops beside this one.

Kernel: net/ipv4/tcp_ipv4.c, net/ipv4/ip_output.c (ip_queue_xmit),
net/ipv4/af_inet.c (inet_bind, inet_stream_connect).
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
    SKB_GSO_TCPV4,
)
from netstack.core.skbuff import (
    CHECKSUM_COMPLETE,
    CHECKSUM_PARTIAL,
    CHECKSUM_UNNECESSARY,
    DropReason,
    SkBuff,
    consume_skb,
    kfree_skb,
)
from netstack.core.sock import AF_INET, sk_set_txhash, sock_oserror
from netstack.ipv4.constants import RTCF_BROADCAST, RTCF_MULTICAST
from netstack.ipv4.ip_output import ip_dont_fragment, ip_local_out, ip_select_ident
from netstack.ipv4.route import Flowi4, Rtable, ip_route_sock_flow, ip_rt_update_pmtu
from netstack.ipv4.syncookies import cookie_v4_check, cookie_v4_init_sequence
from netstack.sites import TIMED, kernel, spend
from netstack.tcp import fastopen as _fastopen
from netstack.tcp.helpers import tcp_initialize_rcv_mss
from netstack.tcp.input import (
    tcp_conn_request,
    tcp_rcv_established,
    tcp_rcv_state_process,
    tcp_req_err,
    tcp_v4_err_state,
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
    tcp_sync_mss,
)
from netstack.tcp.proto import TCP_IPV4_AF_OPS, Tcp, tcp_init
from netstack.tcp.sock import (
    TCP_CLOSE,
    TCP_ESTABLISHED,
    TCP_LISTEN,
    TCP_SYN_SENT,
    RequestSock,
    SockCommon,
    TcpSkbCb,
    TcpSock,
    TimewaitSock,
    tcp_add_backlog,
)
from netstack.tcp.state import tcp_set_state
from netstack.wire.checksum import csum_partial, csum_tcpudp_magic
from netstack.wire.ipv4 import IP_DF, IPPROTO_TCP, IPV4_HDR
from netstack.wire.rtnetlink import RTN_LOCAL
from netstack.wire.tcp import TCPHDR_ACK, TCPHDR_FIN, TCPHDR_RST, TCPHDR_SYN

if TYPE_CHECKING:
    from netstack.core.dst import DstEntry
    from netstack.ipv4.netns import Ipv4

__all__ = ["Ipv4Specific", "tcp_v4_connect", "tcp_v4_err", "tcp_v4_init", "tcp_v4_rcv"]

M32: Final = 0xFFFFFFFF
_II: Final = struct.Struct("!II")
_H: Final = struct.Struct("!H")
# the TCP header's fixed fields up to the flags: ports, seq, ack_seq, doff, flags
_TH: Final = struct.Struct("!HHIIBB")


def _addrs(skb: SkBuff) -> tuple[int, int]:
    """(saddr, daddr) of the IPv4 header of *skb*."""
    return _II.unpack_from(skb.buf, skb.network_header + 12)


class Ipv4Specific:
    """TCP's IPv4 operations (kernel: ``ipv4_specific``).

    Twin: netstack.ipv6.tcp_ipv6.Ipv6Specific.
    """

    net_header_len = 20
    family = AF_INET
    rsk_slab_name = "request_sock_TCP"  # tcp_request_sock_ops.slab_name

    def __init__(self, ipv4: Ipv4, tcp: Tcp) -> None:
        self.ipv4 = ipv4
        self.tcp = tcp

    # -- routes -----------------------------------------------------------------------------
    def _route(self, sk: TcpSock) -> Rtable | None:
        """The socket's route, re-routed if stale (``__sk_dst_check``)."""
        rt: Rtable | None = sk.dst_cache
        if rt is not None and rt.valid():
            return rt
        if rt is not None:
            rt.release()
            sk.dst_cache = None
        fl4 = Flowi4(
            sk.inet_daddr,
            sk.inet_saddr,
            oif=sk.sk_bound_dev_if,
            tos=sk.tos,
            proto=IPPROTO_TCP,
            sport=sk.inet_sport,
            dport=sk.inet_dport,
        )
        rt2 = self.ipv4.ip_route_output_key(fl4)
        if isinstance(rt2, int):
            return None
        sk.dst_cache = rt2
        sk_setup_caps(sk, rt2)
        return rt2

    @kernel("net/ipv4/af_inet.c", "inet_sk_rebuild_header")
    def rebuild_header(self, sk: TcpSock) -> int:
        """Kernel: net/ipv4/af_inet.c, inet_sk_rebuild_header()."""
        if self._route(sk) is None:
            sk.sk_err_soft = errno.EHOSTUNREACH
            return -errno.EHOSTUNREACH
        return 0

    def dst_mtu(self, sk: TcpSock) -> int:
        rt = sk.dst_cache
        return int(rt.mtu()) if rt is not None else 0

    @kernel("net/ipv4/route.c", "ipv4_default_advmss")
    def advmss(self, sk: TcpSock) -> int:
        """Kernel: net/ipv4/route.c, ipv4_default_advmss()."""
        rt = sk.dst_cache
        mtu = int(rt.dev.mtu) if rt is not None and rt.dev is not None else 1500
        return max(mtu - 40, 256)

    # -- transmit -----------------------------------------------------------------------
    @kernel("net/ipv4/ip_output.c", "__ip_queue_xmit")
    def queue_xmit(self, sk: TcpSock, skb: SkBuff) -> int:
        """Put an IPv4 header in front of the segment and send it.

        Kernel: net/ipv4/ip_output.c, __ip_queue_xmit().
        """
        if TIMED:
            spend("__ip_queue_xmit")
        rt = self._route(sk)
        if rt is None:
            self.ipv4.ip.OutNoRoutes += 1
            kfree_skb(skb, DropReason.IP_OUTNOROUTES)
            return -errno.EHOSTUNREACH
        skb.data -= 20
        nh = skb.data
        skb.network_header = nh
        df = IP_DF if ip_dont_fragment(sk, rt) and not skb.ignore_df else 0
        ttl = sk.uc_ttl if sk.uc_ttl >= 0 else self.ipv4.ip_default_ttl
        buf = skb.buf
        IPV4_HDR.pack_into(
            buf, nh, 0x45, sk.tos, 0, 0, df, ttl, IPPROTO_TCP, 0, sk.inet_saddr, sk.inet_daddr
        )
        ip_select_ident(self.ipv4, buf, nh, sk, False, skb.gso_segs or 1)
        skb.priority = sk.sk_priority
        skb.mark = sk.sk_mark
        skb.dst = rt.hold()
        return ip_local_out(self.ipv4, skb)

    @kernel("net/ipv4/tcp_ipv4.c", "__tcp_v4_send_check")
    def send_check(self, sk: TcpSock, skb: SkBuff) -> None:
        """Kernel: net/ipv4/tcp_ipv4.c, __tcp_v4_send_check()."""
        th = skb.transport_header
        length = skb.tail - th
        _H.pack_into(
            skb.buf,
            th + 16,
            ~csum_tcpudp_magic(sk.inet_saddr, sk.inet_daddr, length, IPPROTO_TCP, 0) & 0xFFFF,
        )
        skb.ip_summed = CHECKSUM_PARTIAL
        skb.csum_start = th
        skb.csum_offset = 16

    # -- connection set-up --------------------------------------------------------------
    @kernel("net/ipv4/af_inet.c", "__inet_bind")
    def bind(self, sk: TcpSock, addr: int, port: int) -> None:
        """Kernel: net/ipv4/af_inet.c, __inet_bind()."""
        if sk.state != TCP_CLOSE or sk.inet_num:
            raise sock_oserror(errno.EINVAL)
        if (
            addr
            and self.ipv4.fib.inet_addr_type(addr, None) not in (2, 3, 5)
            and not (self.ipv4.ip_nonlocal_bind or sk.freebind)
        ):  # RTN_LOCAL, RTN_BROADCAST, RTN_MULTICAST
            raise sock_oserror(errno.EADDRNOTAVAIL)
        sk.inet_rcv_saddr = sk.inet_saddr = addr
        self.tcp.hashinfo.inet_csk_get_port(sk, port)
        if port:
            sk.sk_userlocks |= 4  # SOCK_BINDPORT_LOCK
        if addr:
            sk.sk_userlocks |= 8  # SOCK_BINDADDR_LOCK

    def connect(self, sk: TcpSock, addr: int, port: int) -> None:
        tcp_v4_connect(self, sk, addr, port)

    @kernel("net/ipv4/tcp_ipv4.c", "tcp_v4_mtu_reduced")
    def mtu_reduced(self, sk: TcpSock) -> None:
        """Kernel: net/ipv4/tcp_ipv4.c, tcp_v4_mtu_reduced()."""
        if sk.state in (TCP_LISTEN, TCP_CLOSE):
            return
        # inet_csk_update_pmtu(): learn it on the route, then look again (the
        # new exception made the socket's cached route stale)
        rt = self._route(sk)
        if rt is None:
            return
        ip_rt_update_pmtu(
            self.ipv4, rt, sk.inet_daddr, sk.mtu_info, sk.inet_saddr, sk.sk_bound_dev_if
        )
        rt = self._route(sk)
        if rt is None:
            return
        mtu = int(rt.mtu())
        if sk.icsk_pmtu_cookie > mtu:
            from netstack.tcp.input import tcp_simple_retransmit

            tcp_sync_mss(sk, mtu)
            tcp_simple_retransmit(sk)

    # -- passive open -------------------------------------------------------------------
    @kernel("net/ipv4/tcp_ipv4.c", "tcp_v4_conn_request")
    def conn_request(self, sk: TcpSock, skb: SkBuff) -> int:
        """Kernel: net/ipv4/tcp_ipv4.c, tcp_v4_conn_request()."""
        rt = skb.dst
        if isinstance(rt, Rtable) and rt.rt_flags & (RTCF_BROADCAST | RTCF_MULTICAST):
            # "Never answer to SYNs send to broadcast or multicast": tcp_listendrop(),
            # and 0 to tcp_rcv_state_process(), which consumes the skb
            sk.ext.ListenDrops += 1
            consume_skb(skb)
            return 0
        return tcp_conn_request(sk, skb, self)

    @kernel("net/ipv4/tcp_ipv4.c", "tcp_v4_init_req")
    def init_req(self, req: RequestSock, skb: SkBuff) -> None:
        """Kernel: net/ipv4/tcp_ipv4.c, tcp_v4_init_req()."""
        saddr, daddr = _addrs(skb)
        req.loc_addr = daddr
        req.rmt_addr = saddr
        req.tos = skb.buf[skb.network_header + 1]

    def init_seq(self, skb: SkBuff) -> int:
        saddr, daddr = _addrs(skb)
        th = skb.transport_header
        sport, dport = struct.unpack_from("!HH", skb.buf, th)
        return self.tcp.secure_tcp_seq(daddr, saddr, dport, sport)

    def init_ts_off(self, skb: SkBuff) -> int:
        saddr, daddr = _addrs(skb)
        return self.tcp.secure_tcp_ts_off(daddr, saddr)

    @kernel("net/ipv4/tcp_ipv4.c", "cookie_v4_init_sequence")
    def cookie_init_seq(self, sk: TcpSock, skb: SkBuff, mss: int) -> tuple[int, int]:
        """A SYN cookie and the MSS it encodes.

        Kernel: net/ipv4/tcp_ipv4.c, tcp_request_sock_ipv4_ops.cookie_init_seq
        (cookie_v4_init_sequence()).
        """
        return cookie_v4_init_sequence(self.tcp, sk, skb, mss)

    @kernel("net/ipv4/inet_connection_sock.c", "inet_csk_route_req")
    def route_req(self, req: RequestSock) -> Rtable | None:
        """Kernel: net/ipv4/inet_connection_sock.c, inet_csk_route_req()."""
        fl4 = Flowi4(
            req.rmt_addr,
            req.loc_addr,
            oif=req.listener.sk_bound_dev_if,
            tos=req.tos,
            proto=IPPROTO_TCP,
            sport=req.num,
            dport=req.rmt_port,
        )
        rt = self.ipv4.ip_route_output_key(fl4)
        return None if isinstance(rt, int) else rt

    @kernel("net/ipv4/tcp_ipv4.c", "tcp_v4_send_synack")
    def send_synack(self, sk: TcpSock, req: RequestSock, dst: DstEntry | None) -> int:
        """Kernel: net/ipv4/tcp_ipv4.c, tcp_v4_send_synack()."""
        rt: DstEntry | None = dst if dst is not None else self.route_req(req)
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
            csum_tcpudp_magic(
                req.loc_addr, req.rmt_addr, length, IPPROTO_TCP, csum_partial(buf, th, skb.tail)
            ),
        )
        skb.ip_summed = 0
        rc = self._build_and_send(skb, rt, req.loc_addr, req.rmt_addr, req.tos, sk)
        if dst is None:
            rt.release()
        return rc

    def _build_and_send(
        self, skb: SkBuff, rt: Any, saddr: int, daddr: int, tos: int, sk: TcpSock | None
    ) -> int:
        """IPv4 header for a reply built without a connected socket (ip_build_and_send_pkt)."""
        skb.data -= 20
        nh = skb.data
        skb.network_header = nh
        df = IP_DF if sk is None or ip_dont_fragment(sk, rt) else 0
        ttl = sk.uc_ttl if sk is not None and sk.uc_ttl >= 0 else self.ipv4.ip_default_ttl
        buf = skb.buf
        IPV4_HDR.pack_into(buf, nh, 0x45, tos, 0, 0, df, ttl, IPPROTO_TCP, 0, saddr, daddr)
        ip_select_ident(self.ipv4, buf, nh, None, False, 1)
        skb.dst = rt.hold()
        if sk is not None:
            skb.priority = sk.sk_priority
            skb.mark = sk.sk_mark
        return ip_local_out(self.ipv4, skb)

    @kernel("net/ipv4/tcp_ipv4.c", "tcp_v4_syn_recv_sock")
    def syn_recv_sock(
        self, sk: TcpSock, skb: SkBuff, req: RequestSock, dst: DstEntry | None
    ) -> TcpSock | None:
        """The handshake's ACK arrived: build the child.

        Kernel: net/ipv4/tcp_ipv4.c, tcp_v4_syn_recv_sock().
        """
        if sk.sk_ack_backlog > sk.sk_max_ack_backlog:  # sk_acceptq_is_full()
            sk.ext.ListenOverflows += 1
            sk.ext.ListenDrops += 1
            return None
        rt: DstEntry | None = dst if dst is not None else self.route_req(req)
        if rt is None:
            sk.ext.ListenDrops += 1
            return None
        newsk = tcp_create_openreq_child(sk, req, skb)
        newsk.inet_daddr = req.rmt_addr
        newsk.inet_rcv_saddr = newsk.inet_saddr = req.loc_addr
        newsk.tos = req.tos
        newsk.inet_id = self.ipv4.net.rng.getrandbits(16)
        newsk.dst_cache = rt
        sk_setup_caps(newsk, rt)
        tcp_sync_mss(newsk, int(rt.mtu()))
        newsk.advmss = tcp_mss_clamp(newsk, self.advmss(newsk))
        tcp_initialize_rcv_mss(newsk)
        hashinfo = self.tcp.hashinfo
        key = (AF_INET, req.loc_addr, req.num, req.rmt_addr, req.rmt_port)
        hashinfo.ehash[key] = newsk  # inet_ehash_nolisten(): replaces the request
        newsk.ehash_key = key
        req.hashed = False
        hashinfo.inet_bind_hash(newsk, req.num)  # __inet_inherit_port()
        return newsk

    # -- replies without a socket ---------------------------------------------------------
    @kernel("net/ipv4/tcp_ipv4.c", "tcp_v4_send_reset")
    def send_reset(self, sk: SockCommon | None, skb: SkBuff) -> None:
        """Answer *skb* with a RST (RFC 9293 §3.10.7.1).

        Kernel: net/ipv4/tcp_ipv4.c, tcp_v4_send_reset().
        """
        buf = skb.buf
        th = skb.transport_header
        flags = buf[th + 13]
        if flags & TCPHDR_RST:
            return
        rt = skb.dst
        if rt is not None and (not isinstance(rt, Rtable) or rt.rt_type != RTN_LOCAL):
            return
        tcb: TcpSkbCb = skb.cb
        if flags & TCPHDR_ACK:
            seq, ack, rflags = tcb.ack_seq, 0, TCPHDR_RST
        else:
            seq = 0
            ack = tcb.end_seq
            rflags = TCPHDR_RST | TCPHDR_ACK
        self._reply(skb, seq, ack, rflags, 0, None, sk)
        self.tcp.mib.OutRsts += 1

    @kernel("net/ipv4/tcp_ipv4.c", "tcp_v4_send_ack")
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
        """Kernel: net/ipv4/tcp_ipv4.c, tcp_v4_send_ack()."""
        ts = (tsval, tsecr) if tsval >= 0 else None
        self._reply(skb, seq, ack, TCPHDR_ACK, win, ts, sk)

    @kernel("ip_send_unicast_reply")
    def _reply(
        self,
        skb: SkBuff,
        seq: int,
        ack: int,
        flags: int,
        win: int,
        ts: tuple[int, int] | None,
        sk: SockCommon | None,
    ) -> None:
        """Build a bare TCP segment back to *skb*'s sender. Kernel: ip_send_unicast_reply()."""
        saddr, daddr = _addrs(skb)
        th_in = skb.transport_header
        sport, dport = struct.unpack_from("!HH", skb.buf, th_in)
        fl4 = Flowi4(saddr, daddr, proto=IPPROTO_TCP, sport=dport, dport=sport)
        rt = self.ipv4.ip_route_output_key(fl4)
        if isinstance(rt, int):
            return
        out = tcp_bare_segment(dport, sport, seq, ack, flags, win, ts)
        buf = out.buf
        th = out.transport_header
        hlen = out.tail - th
        _H.pack_into(
            buf,
            th + 16,
            csum_tcpudp_magic(daddr, saddr, hlen, IPPROTO_TCP, csum_partial(buf, th, th + hlen)),
        )
        tos = sk.tos if sk is not None and hasattr(sk, "tos") else 0
        self.tcp.mib.OutSegs += 1
        self._build_and_send(out, rt, daddr, saddr, tos, None)
        rt.release()


@kernel("net/core/sock.c", "sk_setup_caps")
def sk_setup_caps(sk: TcpSock, rt: DstEntry) -> None:
    """What the route's device lets TCP build: GSO skbs or MSS-sized ones.

    Kernel: net/core/sock.c, sk_setup_caps() (4.x-6.2: GSO only when the
    device has NETIF_F_GSO on; newer kernels always let TCP build GSO skbs).
    """
    dev = rt.dev
    if dev is None:
        return
    caps = dev.features
    if caps & NETIF_F_GSO:
        caps |= NETIF_F_GSO_SOFTWARE
    sk.sk_gso_type = SKB_GSO_TCPV4
    feature = SKB_GSO_TCPV4 << 16
    if caps & feature == feature:
        caps |= NETIF_F_SG | NETIF_F_HW_CSUM
        sk.sk_gso_max_size = dev.gso_max_size
        sk.sk_gso_max_segs = dev.gso_max_segs
    else:
        sk.sk_gso_max_segs = 1
    sk.sk_route_caps = caps


@kernel("net/ipv4/tcp_ipv4.c", "tcp_v4_connect")
def tcp_v4_connect(ops: Ipv4Specific, sk: TcpSock, addr: int, port: int) -> None:
    """Route, pick the source address and port, send the SYN.

    Twin: netstack.ipv6.tcp_ipv6.tcp_v6_connect.
    Kernel: net/ipv4/tcp_ipv4.c, tcp_v4_connect().
    """
    if not port:
        raise sock_oserror(errno.ECONNREFUSED)  # connecting to port 0: nobody listens there
    ipv4 = ops.ipv4
    tcp = ops.tcp
    rt, fl4 = ip_route_sock_flow(ipv4, sk, addr, port, IPPROTO_TCP)
    if rt.rt_flags & 0x30000000:  # RTCF_MULTICAST | RTCF_BROADCAST
        rt.release()
        raise sock_oserror(errno.ENETUNREACH)
    if not sk.inet_saddr:
        sk.inet_saddr = fl4.saddr
    if not sk.inet_rcv_saddr:
        sk.inet_rcv_saddr = sk.inet_saddr
    sk.inet_dport = port
    sk.inet_daddr = addr
    sk.icsk_ext_hdr_len = 0
    sk.mss_clamp = 536  # TCP_MSS_DEFAULT until the peer's SYN-ACK says otherwise
    tcp_set_state(sk, TCP_SYN_SENT)
    try:
        tcp.hashinfo.inet_hash_connect(sk)
    except OSError:
        tcp_set_state(sk, TCP_CLOSE)
        sk.inet_dport = 0
        rt.release()
        raise
    sk_set_txhash(sk)
    if sk.dst_cache is not None:
        sk.dst_cache.release()
    sk.dst_cache = rt
    sk_setup_caps(sk, rt)
    if not sk.write_seq:
        sk.write_seq = tcp.secure_tcp_seq(sk.inet_saddr, addr, sk.inet_sport, port)
    sk.tsoffset = tcp.secure_tcp_ts_off(sk.inet_saddr, addr)
    sk.inet_id = ipv4.net.rng.getrandbits(16)
    tcp.sockets.add(sk)
    # TCP_FASTOPEN_CONNECT with a cookie: the SYN waits for the first write
    if _fastopen.tcp_fastopen_defer_connect(sk):
        return
    err = tcp_connect(sk)
    if err:
        tcp_set_state(sk, TCP_CLOSE)
        sk.inet_dport = 0
        raise sock_oserror(-err)


# -- receive --------------------------------------------------------------------------------


@kernel("net/ipv4/tcp_ipv4.c", "tcp_v4_checksum_init", "tcp_checksum_complete")
def _csum_ok(skb: SkBuff, saddr: int, daddr: int) -> bool:
    """Kernel: net/ipv4/tcp_ipv4.c, tcp_v4_checksum_init() + tcp_checksum_complete()."""
    s = skb.ip_summed
    if s == CHECKSUM_UNNECESSARY or s == CHECKSUM_PARTIAL:
        return True
    th = skb.transport_header
    length = skb.tail - th
    if s == CHECKSUM_COMPLETE and skb.data == th:
        return csum_tcpudp_magic(saddr, daddr, length, IPPROTO_TCP, skb.csum) == 0
    ok = csum_tcpudp_magic(saddr, daddr, length, IPPROTO_TCP, csum_partial(skb.buf, th, skb.tail))
    if ok == 0:
        skb.ip_summed = CHECKSUM_UNNECESSARY
        return True
    return False


@kernel("net/ipv4/tcp_ipv4.c", "tcp_v4_fill_cb")
def tcp_v4_fill_cb(skb: SkBuff, seq: int, ack: int, doff: int, flags: int) -> TcpSkbCb:
    """TCP_SKB_CB from the header, whose fields ``tcp_v4_rcv`` read in one go (the
    kernel passes ``th``). Kernel: net/ipv4/tcp_ipv4.c, tcp_v4_fill_cb()."""
    end = seq + (flags & TCPHDR_SYN) // 2 + (flags & TCPHDR_FIN) + skb.tail - skb.data - doff
    tcb = TcpSkbCb(seq, end & M32, flags)
    tcb.ack_seq = ack
    tcb.dsfield = skb.buf[skb.network_header + 1]
    skb.cb = tcb
    return tcb


@kernel("net/ipv4/tcp_ipv4.c", "tcp_v4_rcv")
def tcp_v4_rcv(ipv4: Ipv4, tcp: Tcp, skb: SkBuff) -> int:
    """Every TCP segment for this host starts here.

    Twin: netstack.ipv6.tcp_ipv6.tcp_v6_rcv.
    Kernel: net/ipv4/tcp_ipv4.c, tcp_v4_rcv().
    """
    if TIMED:
        spend("tcp_v4_rcv")
    mib = tcp.mib
    rt = skb.dst
    if isinstance(rt, Rtable) and rt.rt_type != RTN_LOCAL and skb.pkt_type != 0:
        kfree_skb(skb, DropReason.NOT_SPECIFIED)  # not for us (PACKET_HOST only)
        return 0
    mib.InSegs += 1
    th = skb.transport_header
    buf = skb.buf
    if skb.tail - th < 20:
        kfree_skb(skb, DropReason.PKT_TOO_SMALL)
        mib.InErrs += 1
        return 0
    # the fixed header in one read (tcp_v4_fill_cb() takes its fields)
    sport, dport, seq, ack, doff, flags = _TH.unpack_from(buf, th)
    doff = (doff >> 4) * 4
    if doff < 20 or doff > skb.tail - th:
        kfree_skb(skb, DropReason.PKT_TOO_SMALL)  # SKB_DROP_REASON_TCP_INVALID_HDR
        mib.InErrs += 1
        return 0
    saddr, daddr = _II.unpack_from(buf, skb.network_header + 12)  # _addrs(skb)
    if not _csum_ok(skb, saddr, daddr):
        mib.InCsumErrors += 1
        mib.InErrs += 1
        kfree_skb(skb, DropReason.TCP_CSUM)
        return 0
    skb.data = th  # __skb_pull to the TCP header
    tcb = tcp_v4_fill_cb(skb, seq, ack, doff, flags)
    hashinfo = tcp.hashinfo
    dev = skb.dev
    sk: TcpSock | RequestSock | TimewaitSock | None
    sk = hashinfo.lookup_established(AF_INET, saddr, sport, daddr, dport)
    if sk is None:
        sk = hashinfo.lookup_listener(AF_INET, daddr, dport, dev.ifindex if dev else 0)
    while True:
        if sk is None:
            return _no_tcp_socket(tcp, skb, tcb)
        if isinstance(sk, TimewaitSock):  # sk_state == TCP_TIME_WAIT
            verdict = tcp_timewait_state_process(sk, skb, tcb)
            if verdict == TCP_TW_SYN:
                sk2 = hashinfo.lookup_listener(AF_INET, daddr, dport, dev.ifindex if dev else 0)
                if sk2 is not None:
                    inet_twsk_kill(sk)
                    sk = sk2
                    continue
                inet_twsk_kill(sk)
                return _no_tcp_socket(tcp, skb, tcb)
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
                ipv4_ops(tcp).send_reset(sk, skb)
                kfree_skb(skb, DropReason.NOT_SPECIFIED)
                inet_twsk_kill(sk)
            else:
                consume_skb(skb)
            return 0
        if isinstance(sk, RequestSock):  # sk_state == TCP_NEW_SYN_RECV
            req = sk
            listener = req.listener
            if listener.state != TCP_LISTEN:
                req_unhash(tcp, req)
                sk = hashinfo.lookup_listener(AF_INET, daddr, dport, dev.ifindex if dev else 0)
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
        tcp_add_backlog(sk, skb, tcp_v4_do_rcv)
        return 0
    # one instant for the segment, as the kernel's one tcp_mstamp_refresh() and
    # jiffies load (cpu/clock.py, "Held time")
    clock = tcp.net.clock
    held = clock.hold()
    try:
        return tcp_v4_do_rcv(tcp, sk, skb)
    finally:
        clock.release(held)


@kernel("tcp_v4_do_rcv", "tcp_v6_do_rcv")
def _reset_and_free(tcp: Tcp, sk: SockCommon | None, skb: SkBuff, reason: int) -> int:
    """Answer with a RST, then drop the skb for *reason* (1, SKB_CONSUMED: consume it).

    Kernel: the reset: and discard: labels of tcp_v4_do_rcv() / tcp_v6_do_rcv().
    """
    ipv4_ops(tcp).send_reset(sk, skb)
    if reason == 1:
        consume_skb(skb)
    else:
        kfree_skb(skb, DropReason(reason))
    return 0


@kernel("tcp_v4_rcv")
def _no_tcp_socket(tcp: Tcp, skb: SkBuff, tcb: TcpSkbCb) -> int:
    """Kernel: tcp_v4_rcv(), the no_tcp_socket label."""
    if TIMED:
        spend("tcp_v4_rcv")
    ipv4_ops(tcp).send_reset(None, skb)
    kfree_skb(skb, DropReason.NO_SOCKET)
    return 0


@kernel("net/ipv4/tcp_ipv4.c", "tcp_v4_do_rcv", "tcp_v4_cookie_check")
def tcp_v4_do_rcv(tcp: Tcp, sk: TcpSock, skb: SkBuff) -> int:
    """A segment for a full socket; a listener first checks an ACK for a SYN cookie.

    Twin: netstack.ipv6.tcp_ipv6.tcp_v6_do_rcv.
    Kernel: net/ipv4/tcp_ipv4.c, tcp_v4_do_rcv() / tcp_v4_cookie_check().
    """
    if TIMED:
        spend("tcp_v4_do_rcv")
    if sk.state == TCP_ESTABLISHED:
        tcp_rcv_established(sk, skb)
        return 0
    if sk.state == TCP_LISTEN and not skb.buf[skb.transport_header + 13] & TCPHDR_SYN:
        nsk = cookie_v4_check(ipv4_ops(tcp), sk, skb)
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


@kernel("inet_csk_reqsk_queue_drop")
def req_unhash(tcp: Tcp, req: RequestSock) -> None:
    """Kernel: inet_csk_reqsk_queue_drop()."""
    inet_csk_reqsk_queue_drop(req.listener, req)


def ipv4_ops(tcp: Tcp) -> Ipv4Specific:
    ops = TCP_IPV4_AF_OPS.get(tcp.net)
    assert isinstance(ops, Ipv4Specific)
    return ops


@kernel("net/ipv4/tcp_ipv4.c", "tcp_v4_err")
def tcp_v4_err(ipv4: Ipv4, tcp: Tcp, skb: SkBuff, info: int) -> None:
    """An ICMP error about one of our segments.

    ``skb.data`` is at the quoted IPv4 header, ``skb.transport_header`` at the
    ICMP header (icmp_unreach's layout).

    Twin: netstack.ipv6.tcp_ipv6.tcp_v6_err.
    Kernel: net/ipv4/tcp_ipv4.c, tcp_v4_err().
    """
    buf = skb.buf
    nh = skb.data  # the quoted IPv4 header
    ihl = (buf[nh] & 0xF) * 4
    th = nh + ihl
    if skb.tail - th < 8:
        return
    saddr, daddr = _II.unpack_from(buf, nh + 12)
    sport, dport = struct.unpack_from("!HH", buf, th)
    (seq,) = struct.unpack_from("!I", buf, th + 4)
    sk = tcp.hashinfo.lookup_established(AF_INET, daddr, dport, saddr, sport)
    if sk is None:
        ipv4.icmp_mib.InErrors += 1  # __ICMP_INC_STATS(net, ICMP_MIB_INERRORS)
        return
    if isinstance(sk, TimewaitSock):  # TCP_TIME_WAIT
        return  # inet_twsk_put(): nothing to tell a connection that is over
    icmp_type = buf[skb.transport_header]  # icmp_hdr(skb)
    code = buf[skb.transport_header + 1]
    if isinstance(sk, RequestSock):  # TCP_NEW_SYN_RECV
        # an unreachable network or host, a time exceeded or a parameter problem
        # quoting our SYN-ACK ends the request
        abort = icmp_type in (11, 12) or (icmp_type == 3 and code in (0, 1))
        tcp_req_err(sk, seq, abort)
        return
    tcp_v4_err_state(sk, seq, icmp_type, code, info)


@kernel("net/ipv4/af_inet.c", "inet_init", "tcp_v4_init")
def tcp_v4_init(ipv4: Ipv4) -> Tcp:
    """Install TCP on an IPv4 Net: the shared state, the af_ops, the protocol handler.

    Kernel: net/ipv4/af_inet.c, inet_init() (tcp_prot, tcp_protocol) / tcp_v4_init().
    """
    tcp = tcp_init(ipv4.net)
    ops = Ipv4Specific(ipv4, tcp)
    TCP_IPV4_AF_OPS.set(ipv4.net, ops)
    return tcp


@kernel("inet_create", "tcp_v4_init_sock")
def tcp_v4_socket(ipv4: Ipv4) -> TcpSock:
    """A new IPv4 TCP socket. Kernel: inet_create() + tcp_v4_init_sock()."""
    tcp = tcp_init(ipv4.net)
    ops = TCP_IPV4_AF_OPS.find(ipv4.net)
    if not isinstance(ops, Ipv4Specific):
        tcp = tcp_v4_init(ipv4)
        ops = ipv4_ops(tcp)
    return TcpSock(tcp, AF_INET, ops)
