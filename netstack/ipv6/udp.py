"""UDP over IPv6: sockets, ports, send, receive, ICMPv6 errors.

Theory of operation::

    udpv6_sendmsg: pending error? ─► destination (or the connected peer);
      a v4-mapped one (``::ffff:a.b.c.d``) goes to IPv4's udp_sendmsg unless
      the socket is IPV6_V6ONLY (ENETUNREACH) ─► autobind an ephemeral port
      ─► flow: scope id of a link-local destination, the bound device,
      IPV6_MULTICAST_IF / IPV6_UNICAST_IF
      ─► ip6_dst_lookup_flow (source address selection when unbound)
      ─► size checks of __ip6_append_data: IPV6_DONTFRAG or PMTUDISC_DO and
      bigger than the path MTU → EMSGSIZE (reported to IPV6_RECVERR too);
      otherwise up to 65535 bytes, fragmented at the source
      ─► UDP header; checksum offloaded (CHECKSUM_PARTIAL) when the device
      can and no fragmentation is needed, computed otherwise (never 0)
      ─► ip6_local_out
    udpv6_rcv (inet6_protos[17]): length checks ─► checksum 0 is refused
      (mandatory over IPv6, RFC 8200 §8.1) ─► multicast: every socket of the
      port that accepts the group; unicast: the best-scoring socket ─►
      receive queue if memory allows (else RcvbufErrors) | no socket: NoPorts
      and ICMPv6 port unreachable
    dual stack: a socket that is not IPV6_V6ONLY and is bound to ``::`` or
      ``::ffff:a.b.c.d`` is also in IPv4's table (the kernel has one table
      for both), with its IPv4 view (inet_rcv_saddr, inet_daddr); udp_rcv
      queues IPv4 datagrams to it (an AF_INET socket scores higher) and
      udpv6_recvmsg reports their source as ``::ffff:a.b.c.d``. Binds
      conflict across the families per inet_rcv_saddr_equal.
    udpv6_err: ICMPv6 errors → the socket's error (hard errors on connected
      sockets, all with IPV6_RECVERR); Packet Too Big updates the PMTU

Kernel: net/ipv6/udp.c, net/ipv6/datagram.c, net/ipv6/icmp.c (icmpv6_err_convert).
"""

from __future__ import annotations

import errno
import struct
from typing import TYPE_CHECKING, Any, Final

from netstack.core.skbuff import (
    CHECKSUM_COMPLETE,
    CHECKSUM_NONE,
    CHECKSUM_PARTIAL,
    CHECKSUM_UNNECESSARY,
    DropReason,
    SkBuff,
    consume_skb,
    kfree_skb,
)
from netstack.core.sock import (
    MSG_CONFIRM,
    MSG_DONTWAIT,
    MSG_ERRQUEUE,
    MSG_PEEK,
    MSG_PROBE,
    MSG_TRUNC,
    SOCK_DGRAM,
    TCP_CLOSE,
    TCP_ESTABLISHED,
    SockWouldBlock,
    sock_oserror,
    sock_wfree,
)
from netstack.ipv6.constants import IPV6_PMTUDISC_DONT, IPV6_PMTUDISC_PROBE
from netstack.ipv6.route import Flowi6
from netstack.ipv6.sock import SO_EE_ORIGIN_ICMP6, Inet6Sock, Sockaddr6
from netstack.neigh.neighbour import neigh_confirm
from netstack.sites import kernel
from netstack.tcp.hashtables import LOOPBACK4_IPV6, V4MAPPED_PREFIX, ipv6_rcv_saddr_equal
from netstack.wire.checksum import CSUM_MANGLED_0, csum_partial
from netstack.wire.icmpv6 import (
    ICMPV6_DEST_UNREACH,
    ICMPV6_PARAMPROB,
    ICMPV6_PKT_TOOBIG,
    ICMPV6_PORT_UNREACH,
    ICMPV6_TIME_EXCEED,
    NDISC_REDIRECT,
)
from netstack.wire.ipv6 import (
    IPPROTO_UDP,
    IPV6_ADDR_MAPPED,
    IPV6_ADDR_MULTICAST,
    IPV6_HLEN,
    IPV6_MAXPLEN,
    addr_at,
    csum_ipv6_magic,
    csum_ipv6_pseudo,
    ipv6_addr_needs_scope_id,
    ipv6_addr_type,
    ipv6_addr_v4mapped,
)
from netstack.wire.udp import UDP_HDR, UDP_HLEN

if TYPE_CHECKING:
    from netstack.core.netns import NetnsIpv4, UdpPortTable
    from netstack.ipv6.netns import Ipv6
    from netstack.ipv6.route import Rt6Info

__all__ = ["Udp6Sock", "Udp6Table", "icmpv6_err_convert", "udpv6_err", "udpv6_rcv"]

_HH: Final = struct.Struct("!HH")

# icmpv6_err_convert()'s tab_unreach: (errno, fatal) per destination-unreachable code
TAB_UNREACH: Final = (
    (errno.ENETUNREACH, False),  # NOROUTE
    (errno.EACCES, True),  # ADM_PROHIBITED
    (errno.EHOSTUNREACH, False),  # NOT_NEIGHBOUR (now reserved)
    (errno.EHOSTUNREACH, False),  # ADDR_UNREACH
    (errno.ECONNREFUSED, True),  # PORT_UNREACH
    (errno.EACCES, True),  # POLICY_FAIL
    (errno.EACCES, True),  # REJECT_ROUTE
)


@kernel("net/ipv6/icmp.c", "icmpv6_err_convert")
def icmpv6_err_convert(icmp_type: int, code: int) -> tuple[int, bool]:
    """An ICMPv6 error as ``(errno, fatal)``.

    Kernel: net/ipv6/icmp.c, icmpv6_err_convert().
    """
    if icmp_type == ICMPV6_DEST_UNREACH:
        if code < len(TAB_UNREACH):
            return TAB_UNREACH[code]
        return errno.EPROTO, True
    if icmp_type == ICMPV6_PKT_TOOBIG:
        return errno.EMSGSIZE, False
    if icmp_type == ICMPV6_PARAMPROB:
        return errno.EPROTO, True
    if icmp_type == ICMPV6_TIME_EXCEED:
        return errno.EHOSTUNREACH, False
    return errno.EPROTO, False


class Udp6Sock(Inet6Sock):
    """A UDPv6 socket (kernel: ``struct udp6_sock``)."""

    def __init__(
        self, ipv6: Ipv6, sock_type: int = SOCK_DGRAM, protocol: int = IPPROTO_UDP
    ) -> None:
        super().__init__(ipv6, sock_type, protocol)

    @property
    def ipv4(self) -> NetnsIpv4 | None:
        """The Net's IPv4 (None without), for v4-mapped peers."""
        return self.net.ipv4

    def _table(self) -> Udp6Table:
        return self.ipv6.udp_table

    @kernel("net/ipv6/ipv6_sockglue.c", "ipv6_setsockopt")
    def setsockopt(self, level: int, optname: int, value: int | bytes) -> None:
        """SOL_IP options too (IP_RECVERR, IP_TOS…: they govern the IPv4 side
        of a dual-stack socket).

        Kernel: net/ipv6/ipv6_sockglue.c, ipv6_setsockopt() (``level == SOL_IP``
        → udp_prot.setsockopt → ip_setsockopt).
        """
        if level == 0:  # SOL_IP
            self._ip_set(optname, value)
            return
        super().setsockopt(level, optname, value)

    def getsockopt(self, level: int, optname: int) -> int | bytes:
        if level == 0:  # SOL_IP
            return self._ip_get(optname)
        return super().getsockopt(level, optname)

    # -- binding -------------------------------------------------------------------------
    @kernel("net/ipv6/af_inet6.c", "__inet6_bind")
    def bind6(self, addr: int, port: int, scope_id: int) -> None:
        """Kernel: net/ipv6/af_inet6.c, __inet6_bind()."""
        ipv6 = self.ipv6
        addr_type = ipv6_addr_type(addr)
        if self.state != TCP_CLOSE or self.inet_num:
            raise sock_oserror(errno.EINVAL)
        v4addr = 0
        if addr_type == IPV6_ADDR_MAPPED:
            if self.ipv6only:
                raise sock_oserror(errno.EINVAL)  # "makes no sense" on a v6-only socket
            # reproduce the AF_INET checks (inet_addr_valid_or_nonlocal)
            v4addr = addr & 0xFFFFFFFF
            ipv4 = self.ipv4
            if ipv4 is None:
                raise sock_oserror(errno.EADDRNOTAVAIL)
            if (
                v4addr
                and not (self.freebind or ipv4.ip_nonlocal_bind)
                and ipv4.inet_addr_type(v4addr) not in (2, 3, 5)  # LOCAL, BCAST, MCAST
            ):
                raise sock_oserror(errno.EADDRNOTAVAIL)
        elif addr_type != 0:
            dev = None
            if ipv6_addr_needs_scope_id(addr_type):
                if scope_id:
                    self.sk_bound_dev_if = scope_id
                if not self.sk_bound_dev_if:
                    raise sock_oserror(errno.EINVAL)  # "requires an interface"
            if self.sk_bound_dev_if:
                dev = self.net.dev_get_by_index(self.sk_bound_dev_if)
                if dev is None:
                    raise sock_oserror(errno.ENODEV)
            if not addr_type & IPV6_ADDR_MULTICAST:
                if not (self.freebind or ipv6.ip_nonlocal_bind) and not ipv6.ipv6_chk_addr(
                    addr, dev
                ):
                    raise sock_oserror(errno.EADDRNOTAVAIL)
        if addr_type not in (0, IPV6_ADDR_MAPPED):
            v4addr = LOOPBACK4_IPV6  # a native IPv6 bind: its IPv4 view matches nothing
        self.inet_rcv_saddr = self.inet_saddr = v4addr
        self.sk_v6_rcv_saddr = addr
        if not addr_type & IPV6_ADDR_MULTICAST:
            self.saddr6 = addr
        saved = self.ipv6only
        if addr_type not in (0, IPV6_ADDR_MAPPED):
            self.ipv6only = True
        try:
            self._table().get_port(self, port)
        except OSError:
            self.ipv6only = saved
            self.sk_v6_rcv_saddr = self.saddr6 = 0
            self.inet_rcv_saddr = self.inet_saddr = 0
            raise
        if addr:
            self.sk_userlocks |= 8  # SOCK_BINDADDR_LOCK

    @kernel("net/ipv6/datagram.c", "__ip6_datagram_connect")
    def connect6(self, addr: int, port: int, flowinfo: int, scope_id: int) -> None:
        """Kernel: net/ipv6/datagram.c, __ip6_datagram_connect()."""
        ipv6 = self.ipv6
        if not self.inet_num:
            self._table().get_port(self, 0)  # inet_autobind()
        addr_type = ipv6_addr_type(addr)
        if addr_type == 0:  # "connect to self"
            if self.sk_v6_rcv_saddr >> 32 == 0xFFFF:
                addr = V4MAPPED_PREFIX | 0x7F000001
            else:
                addr = 1  # ::1
            addr_type = ipv6_addr_type(addr)
        if addr_type & IPV6_ADDR_MAPPED:
            self._connect_mapped(addr & 0xFFFFFFFF, port)
            return
        if ipv6_addr_needs_scope_id(addr_type):
            if scope_id:
                if self.sk_bound_dev_if and self.sk_bound_dev_if != scope_id:
                    raise sock_oserror(errno.EINVAL)
                self.sk_bound_dev_if = scope_id
            if not self.sk_bound_dev_if and addr_type & IPV6_ADDR_MULTICAST:
                self.sk_bound_dev_if = self.mcast_oif
            if not self.sk_bound_dev_if:
                raise sock_oserror(
                    errno.EINVAL
                )  # "Connect to link-local address requires an interface"
        old = (self.sk_v6_daddr, self.inet_dport, self.saddr6, self.sk_v6_rcv_saddr)
        self.sk_v6_daddr = addr
        self.inet_dport = port
        self.flow_label = flowinfo & 0x000FFFFF
        # ip6_datagram_dst_update()
        fl6 = Flowi6(addr, self.saddr6, oif=self.sk_bound_dev_if, proto=self.protocol, dport=port)
        if not fl6.oif and addr_type & IPV6_ADDR_MULTICAST:
            fl6.oif = self.mcast_oif
        found = ipv6.ip6_dst_lookup(fl6, bound_dev_if=self.sk_bound_dev_if)
        if isinstance(found, int):
            self.sk_v6_daddr, self.inet_dport, self.saddr6, self.sk_v6_rcv_saddr = old
            raise sock_oserror(-found)
        if not self.saddr6:
            self.saddr6 = fl6.saddr
        if not self.sk_v6_rcv_saddr:
            self.sk_v6_rcv_saddr = fl6.saddr
            self.inet_rcv_saddr = LOOPBACK4_IPV6  # no IPv4 datagram is for it now
        self.inet_daddr = 0
        if self.dst_cache is not None:
            self.dst_cache.release()
        self.dst_cache = found
        self.state = TCP_ESTABLISHED

    @kernel("net/ipv6/datagram.c")
    def _connect_mapped(self, v4addr: int, port: int) -> None:
        """Connect to ``::ffff:<v4addr>``: IPv4 routes and remembers the peer.

        Kernel: net/ipv6/datagram.c (__ip6_datagram_connect, its
        ``IPV6_ADDR_MAPPED`` branch calling __ip4_datagram_connect).
        """
        ipv4 = self.ipv4
        if self.ipv6only or ipv4 is None:
            raise sock_oserror(errno.ENETUNREACH)
        if self.dst_cache is not None:
            self.dst_cache.release()
            self.dst_cache = None
        ipv4.ip4_datagram_connect(self, v4addr, port)
        self.sk_v6_daddr = V4MAPPED_PREFIX | self.inet_daddr
        if not self.saddr6 or self.saddr6 == V4MAPPED_PREFIX:
            self.saddr6 = V4MAPPED_PREFIX | self.inet_saddr
        if not self.sk_v6_rcv_saddr or self.sk_v6_rcv_saddr == V4MAPPED_PREFIX:
            self.sk_v6_rcv_saddr = V4MAPPED_PREFIX | self.inet_rcv_saddr

    @kernel("__udp_disconnect")
    def disconnect(self) -> None:
        """``connect(AF_UNSPEC)``.

        Kernel: __udp_disconnect().
        """
        self.state = TCP_CLOSE
        self.sk_v6_daddr = 0
        self.inet_daddr = 0
        self.inet_dport = 0
        if not self.sk_userlocks & 8:  # SOCK_BINDADDR_LOCK: inet_reset_saddr()
            self.sk_v6_rcv_saddr = self.saddr6 = 0
            self.inet_rcv_saddr = self.inet_saddr = 0
        if self.dst_cache is not None:
            self.dst_cache.release()
            self.dst_cache = None

    def close(self) -> None:
        self._table().unhash(self)
        super().close()

    # -- sending ----------------------------------------------------------------------------
    def _flow(self, daddr: int, dport: int, scope_id: int, connected: bool) -> tuple[Flowi6, bool]:
        fl6 = Flowi6(daddr, oif=0, proto=self.protocol, dport=dport)
        if scope_id and ipv6_addr_needs_scope_id(ipv6_addr_type(daddr)):
            fl6.oif = scope_id
        if not fl6.oif:
            fl6.oif = self.sk_bound_dev_if
        if self.saddr6:
            fl6.saddr = self.saddr6
        if not fl6.oif and daddr >> 120 == 0xFF:
            fl6.oif = self.mcast_oif
            connected = False
        elif not fl6.oif:
            fl6.oif = self.ucast_oif
        return fl6, connected

    @kernel("ip6_sk_dst_lookup_flow")
    def _dst(self, fl6: Flowi6, connected: bool) -> Rt6Info:
        """Kernel: ip6_sk_dst_lookup_flow()."""
        ipv6 = self.ipv6
        if connected:
            rt = self.dst_cache
            if rt is not None and rt.valid() and fl6.daddr == self.sk_v6_daddr:
                if not fl6.saddr:
                    fl6.saddr = self.saddr6
                return rt.hold()  # type: ignore[no-any-return]
        found = ipv6.ip6_dst_lookup(fl6, bound_dev_if=self.sk_bound_dev_if)
        if isinstance(found, int):
            raise sock_oserror(-found)
        if connected:
            if self.dst_cache is not None:
                self.dst_cache.release()
            self.dst_cache = found.hold()
        return found

    @kernel("net/ipv6/udp.c", "udpv6_sendmsg")
    def sendmsg6(
        self, data: bytes | bytearray | memoryview, dest: Sockaddr6 | None, flags: int
    ) -> int:
        """Send one datagram.

        Twin: netstack.ipv4.udp.udp_sendmsg.
        Kernel: net/ipv6/udp.c, udpv6_sendmsg().
        """
        if self.sk_err:
            raise sock_oserror(self.sock_error())
        ipv6 = self.ipv6
        length = len(data)
        connected = False
        if dest is not None:
            daddr, dport, _flowinfo, scope_id = dest
            if ipv6_addr_v4mapped(daddr):
                return self._sendmsg_mapped(data, (daddr & 0xFFFFFFFF, dport), flags)
            if not dport:
                raise sock_oserror(errno.EINVAL)
        else:
            if self.state != TCP_ESTABLISHED:
                raise sock_oserror(errno.EDESTADDRREQ)
            daddr, dport, scope_id = self.sk_v6_daddr, self.inet_dport, 0
            if ipv6_addr_v4mapped(daddr):
                return self._sendmsg_mapped(data, None, flags)
            connected = True
        if not self.inet_num:
            self._table().get_port(self, 0)  # inet_send_prepare() → inet_autobind()
        fl6, connected = self._flow(daddr, dport, scope_id, connected)
        rt = self._dst(fl6, connected)
        saddr = fl6.saddr
        if flags & MSG_CONFIRM and flags & MSG_PROBE:
            if rt.dev is not None:
                n = ipv6.nd_tbl.lookup(rt.nexthop(daddr), rt.dev)
                if n is not None:
                    neigh_confirm(n)
            if not length:
                rt.release()
                return 0
        if self.sk_wmem_alloc >= self.sk_sndbuf:  # sock_alloc_send_skb()
            rt.release()
            if flags & MSG_DONTWAIT:
                raise sock_oserror(errno.EAGAIN)
            raise SockWouldBlock(write=True)
        if daddr >> 120 == 0xFF:
            hlimit = self.mcast_hops
        else:
            hlimit = self.hop_limit
        if hlimit < 0:
            hlimit = ipv6.ip6_dst_hoplimit(rt)
        ulen = UDP_HLEN + length
        # __ip6_append_data()'s size checks
        mtu = rt.dev.mtu if self.pmtudisc6 >= IPV6_PMTUDISC_PROBE and rt.dev else rt.mtu()
        if self.frag_size and self.frag_size < mtu:
            mtu = self.frag_size
        headersize = IPV6_HLEN
        maxnonfragsize = IPV6_HLEN + IPV6_MAXPLEN if self.ip6_sk_ignore_df() else mtu
        if (self.dontfrag and ulen > mtu - headersize) or ulen > maxnonfragsize - headersize:
            rt.release()
            self.local_error(errno.EMSGSIZE, daddr, dport, max(mtu - headersize + IPV6_HLEN, 0))
            raise sock_oserror(errno.EMSGSIZE)
        skb = _ip6_output.ip6_make_skb(
            ipv6,
            rt,
            saddr,
            daddr,
            IPPROTO_UDP,
            ulen,
            hlimit=hlimit,
            tclass=self.tclass6,
            flowlabel=self.flow_label if connected else 0,
            autoflowlabel=self.autoflowlabel,
            fl_sport=self.inet_num,
            fl_dport=dport,
            sk=self,
            ignore_df=self.ip6_sk_ignore_df(),
        )
        buf = skb.buf
        th = skb.transport_header
        buf[th + UDP_HLEN : th + ulen] = data
        skb.sk = self
        size = skb.truesize
        skb.wmem_charge = size
        self.sk_wmem_alloc += size
        skb.destructor = sock_wfree
        dev = rt.dev
        sport = self.inet_num
        fits = ulen + IPV6_HLEN <= mtu
        if fits and dev is not None and dev.features & 0x18:  # NETIF_F_HW_CSUM | NETIF_F_IPV6_CSUM
            UDP_HDR.pack_into(
                buf, th, sport, dport, ulen, csum_ipv6_pseudo(saddr, daddr, ulen, IPPROTO_UDP)
            )
            skb.ip_summed = CHECKSUM_PARTIAL
            skb.csum_start = th
            skb.csum_offset = 6
        else:
            UDP_HDR.pack_into(buf, th, sport, dport, ulen, 0)
            c = csum_ipv6_magic(saddr, daddr, ulen, IPPROTO_UDP, csum_partial(buf, th, th + ulen))
            UDP_HDR.pack_into(buf, th, sport, dport, ulen, c or CSUM_MANGLED_0)
        if flags & MSG_CONFIRM:
            skb.dst_pending_confirm = True
            self.dst_pending_confirm = True
        rc = _ip6_output.ip6_local_out(ipv6, skb)
        if rc == 1:  # NET_XMIT_DROP → -ENOBUFS
            ipv6.ip6_mib.OutDiscards += 1
            if self.recverr6:
                ipv6.udp6_mib.SndbufErrors += 1
                raise sock_oserror(errno.ENOBUFS)
            ipv6.udp6_mib.SndbufErrors += 1
            return length
        ipv6.udp6_mib.OutDatagrams += 1
        return length

    @kernel("net/ipv6/udp.c")
    def _sendmsg_mapped(
        self, data: bytes | bytearray | memoryview, dest: tuple[int, int] | None, flags: int
    ) -> int:
        """A datagram to ``::ffff:a.b.c.d`` is IPv4's to send.

        Kernel: net/ipv6/udp.c (udpv6_sendmsg with ``ipv6_addr_v4mapped``
        daddr: ENETUNREACH on a v6-only socket, else udp_sendmsg).
        """
        ipv4 = self.ipv4
        if self.ipv6only or ipv4 is None:
            raise sock_oserror(errno.ENETUNREACH)
        if dest is not None and dest[1] and not self.inet_num:
            self._table().get_port(self, 0)  # inet_send_prepare() → inet_autobind()
        return int(ipv4.udp_sendmsg(self, data, dest, flags))

    # -- receiving ----------------------------------------------------------------------------
    @kernel("net/ipv6/udp.c", "udpv6_recvmsg")
    def recvmsg6(
        self, bufsize: int, flags: int
    ) -> tuple[bytes, Sockaddr6, int, list[tuple[int, int, bytes]]]:
        """Kernel: net/ipv6/udp.c, udpv6_recvmsg()."""
        if flags & MSG_ERRQUEUE:
            raise sock_oserror(errno.EINVAL)
        ipv6 = self.ipv6
        while True:
            err = self.sock_error()
            if err:
                raise sock_oserror(err)
            q = self.receive_queue
            if not q:
                if self.sk_shutdown & 1:
                    return b"", (0, 0, 0, 0), 0, []
                if flags & MSG_DONTWAIT:
                    raise sock_oserror(errno.EAGAIN)
                raise SockWouldBlock(write=False)
            skb = q[0]
            buf = skb.buf
            nh = skb.network_header
            is_udp4 = buf[nh] >> 4 == 4  # a dual-stack socket's IPv4 datagram
            ipv4 = self.ipv4 if is_udp4 else None
            mib = ipv4.udp_mib if ipv4 is not None else ipv6.udp6_mib
            if not (ipv4.udp_csum_ok(skb) if ipv4 is not None else udp6_csum_ok(skb)):
                q.popleft()
                self.sk_rmem_alloc -= skb.rmem_charge
                mib.InCsumErrors += 1
                mib.InErrors += 1
                kfree_skb(skb, DropReason.UDP_CSUM)
                continue
            th = skb.transport_header
            if is_udp4:  # ipv6_addr_set_v4mapped(ip_hdr(skb)->saddr)
                saddr = V4MAPPED_PREFIX | int.from_bytes(buf[nh + 12 : nh + 16], "big")
            else:
                saddr = addr_at(buf, nh + 8)
            sport = (buf[th] << 8) | buf[th + 1]
            start = th + UDP_HLEN
            ulen = skb.tail - start
            mflags = 0
            copy = ulen
            if ulen > bufsize:
                copy = bufsize
                mflags |= MSG_TRUNC
            data = bytes(buf[start : start + copy])
            dev = skb.dev
            iif = skb.skb_iif or (dev.ifindex if dev is not None else 0)
            addr = (saddr, sport, 0, self.scope_for(saddr, iif))
            anc = [] if is_udp4 else self.cmsgs6(skb)
            if not flags & MSG_PEEK:
                q.popleft()
                self.sk_rmem_alloc -= skb.rmem_charge
                mib.InDatagrams += 1
                consume_skb(skb)
            return data, addr, mflags, anc


@kernel("udp_lib_checksum_complete")
def udp6_csum_ok(skb: SkBuff) -> bool:
    """Verify when read unless already known good.

    Twin: netstack.ipv4.udp.udp_csum_ok.
    Kernel: udp_lib_checksum_complete().
    """
    s = skb.ip_summed
    if s == CHECKSUM_UNNECESSARY or s == CHECKSUM_PARTIAL:
        return True
    buf = skb.buf
    th = skb.transport_header
    nh = skb.network_header
    saddr = addr_at(buf, nh + 8)
    daddr = addr_at(buf, nh + 24)
    ulen = skb.tail - th
    if s == CHECKSUM_COMPLETE and skb.data == th:
        return csum_ipv6_magic(saddr, daddr, ulen, IPPROTO_UDP, skb.csum) == 0
    return csum_ipv6_magic(saddr, daddr, ulen, IPPROTO_UDP, csum_partial(buf, th, skb.tail)) == 0


class Udp6Table:
    """Bound UDPv6 sockets by port (kernel: ``udp_table``, the IPv6 half)."""

    def __init__(self, ipv6: Ipv6) -> None:
        self.ipv6 = ipv6
        self.ports: dict[int, list[Udp6Sock]] = {}

    def _v4_table(self) -> UdpPortTable | None:
        ipv4 = self.ipv6.net.ipv4
        return ipv4.udp_table if ipv4 is not None else None

    @kernel("udp_lib_lport_inuse", "inet_rcv_saddr_equal", "ipv6_rcv_saddr_equal")
    def _conflicts(self, sk: Udp6Sock, port: int) -> bool:
        """Kernel: udp_lib_lport_inuse() with inet_rcv_saddr_equal() →
        ipv6_rcv_saddr_equal() (IPv4 sockets of the port count unless *sk* is v6-only).
        """
        others: list[Any] = list(self.ports.get(port, ()))
        v4 = self._v4_table()
        if v4 is not None:
            others += [o for o in v4.ports.get(port, ()) if o.family == 2]  # AF_INET
        for other in others:
            if other is sk:
                continue
            if (
                other.sk_bound_dev_if
                and sk.sk_bound_dev_if
                and other.sk_bound_dev_if != sk.sk_bound_dev_if
            ):
                continue
            v6b = other.sk_v6_rcv_saddr if other.family == sk.family else None
            if not ipv6_rcv_saddr_equal(
                sk.sk_v6_rcv_saddr,
                v6b,
                sk.inet_rcv_saddr,
                other.inet_rcv_saddr,
                sk.ipv6only,
                bool(getattr(other, "ipv6only", False)),
                True,
            ):
                continue
            if sk.sk_reuse and other.sk_reuse:
                continue
            if sk.sk_reuseport and other.sk_reuseport:
                continue
            return True
        return False

    @kernel("udp_v6_get_port", "udp_lib_get_port")
    def get_port(self, sk: Udp6Sock, port: int) -> None:
        """Kernel: udp_v6_get_port() → udp_lib_get_port()."""
        if port:
            if self._conflicts(sk, port):
                raise sock_oserror(errno.EADDRINUSE)
        else:
            ipv4 = self.ipv6.net.ipv4
            low, high = ipv4.ip_local_port_range if ipv4 is not None else (32768, 60999)
            remaining = high - low + 1
            rng = self.ipv6.net.rng
            first = low + rng.randrange(remaining)
            for i in range(remaining):
                cand = low + (first - low + i) % remaining
                if not self._conflicts(sk, cand):
                    port = cand
                    break
            else:
                raise sock_oserror(errno.EADDRINUSE)
        sk.inet_num = port
        sk.inet_sport = port
        self.ports.setdefault(port, []).append(sk)
        v4 = self._v4_table()
        if v4 is not None and not sk.ipv6only:  # IPv4 datagrams may be for it
            v4.hash_mapped(sk, port)

    def unhash(self, sk: Udp6Sock) -> None:
        lst = self.ports.get(sk.inet_num)
        if lst and sk in lst:
            lst.remove(sk)
            if not lst:
                del self.ports[sk.inet_num]
        v4 = self._v4_table()
        if v4 is not None:
            v4.unhash(sk)

    @kernel("__udp6_lib_lookup", "compute_score")
    def lookup(self, saddr: int, sport: int, daddr: int, dport: int, dif: int) -> Udp6Sock | None:
        """The best socket for a unicast datagram.

        Kernel: __udp6_lib_lookup() / compute_score().
        """
        best: Udp6Sock | None = None
        best_score = -1
        for sk in self.ports.get(dport, ()):
            score = 0
            if sk.sk_v6_rcv_saddr:
                if sk.sk_v6_rcv_saddr != daddr:
                    continue
                score += 1
            if sk.sk_v6_daddr:
                if sk.sk_v6_daddr != saddr:
                    continue
                score += 1
            if sk.inet_dport:
                if sk.inet_dport != sport:
                    continue
                score += 1
            if sk.sk_bound_dev_if:
                if sk.sk_bound_dev_if != dif:
                    continue
                score += 1
            if score > best_score:
                best, best_score = sk, score
        return best

    @kernel("__udp_v6_is_mcast_sock")
    def mcast_matches(
        self, saddr: int, sport: int, daddr: int, dport: int, dif: int
    ) -> list[Udp6Sock]:
        """Kernel: __udp_v6_is_mcast_sock()."""
        out = []
        for sk in self.ports.get(dport, ()):
            if sk.sk_v6_daddr and sk.sk_v6_daddr != saddr:
                continue
            if sk.inet_dport and sk.inet_dport != sport:
                continue
            if sk.sk_v6_rcv_saddr and sk.sk_v6_rcv_saddr != daddr:
                continue
            if sk.sk_bound_dev_if and sk.sk_bound_dev_if != dif:
                continue
            if not sk.inet6_mc_check(daddr):
                continue
            out.append(sk)
        return out

    def sockets(self) -> list[Udp6Sock]:
        return [sk for lst in self.ports.values() for sk in lst]


@kernel("udpv6_queue_rcv_one_skb", "__udp_enqueue_schedule_skb")
def _queue(ipv6: Ipv6, sk: Udp6Sock, skb: SkBuff) -> None:
    """Kernel: udpv6_queue_rcv_one_skb() → __udp_enqueue_schedule_skb()."""
    if sk.dead:
        kfree_skb(skb, DropReason.NO_SOCKET)
        return
    if not sk.sock_queue_rcv_skb(skb):
        ipv6.udp6_mib.RcvbufErrors += 1
        ipv6.udp6_mib.InErrors += 1
        kfree_skb(skb, DropReason.SOCKET_RCVBUFF)


@kernel("net/ipv6/udp.c", "__udp6_lib_rcv")
def udpv6_rcv(ipv6: Ipv6, skb: SkBuff) -> int:
    """Receive a UDP datagram.

    Twin: netstack.ipv4.udp.udp_rcv.
    Kernel: net/ipv6/udp.c, __udp6_lib_rcv().
    """
    mib = ipv6.udp6_mib
    buf = skb.buf
    th = skb.data
    length = skb.tail - th
    if length < UDP_HLEN:
        mib.InErrors += 1
        kfree_skb(skb, DropReason.PKT_TOO_SMALL)
        return 0
    sport, dport, ulen, check = UDP_HDR.unpack_from(buf, th)
    if ulen > length:
        mib.InErrors += 1
        kfree_skb(skb, DropReason.PKT_TOO_SMALL)
        return 0
    if ulen == 0:
        ulen = length  # "Check for jumbo payload"
    if ulen < UDP_HLEN:
        mib.InErrors += 1
        kfree_skb(skb, DropReason.PKT_TOO_SMALL)
        return 0
    if ulen < length:  # pskb_trim_rcsum()
        skb.tail = th + ulen
        if skb.ip_summed == CHECKSUM_COMPLETE:
            skb.ip_summed = CHECKSUM_NONE
    skb.transport_header = th
    nh = skb.network_header
    saddr = addr_at(buf, nh + 8)
    daddr = addr_at(buf, nh + 24)
    if check and skb.ip_summed == CHECKSUM_COMPLETE:
        # udp6_csum_init(): the device's sum settles it now
        if csum_ipv6_magic(saddr, daddr, ulen, IPPROTO_UDP, skb.csum) == 0:
            skb.ip_summed = CHECKSUM_UNNECESSARY
        else:
            skb.ip_summed = CHECKSUM_NONE
    dev = skb.dev
    dif = dev.ifindex if dev is not None else 0
    if buf[nh + 24] == 0xFF:
        if not check:
            return _csum_error(ipv6, skb)
        socks = ipv6.udp_table.mcast_matches(saddr, sport, daddr, dport, dif)
        if not socks:
            mib.IgnoredMulti += 1
            consume_skb(skb)
            return 0
        for sk in socks[:-1]:
            _queue(ipv6, sk, skb.clone())
        _queue(ipv6, socks[-1], skb)
        return 0
    found = ipv6.udp_table.lookup(saddr, sport, daddr, dport, dif)
    if found is not None:
        if not check:
            return _csum_error(ipv6, skb)  # zero checksum: udp6_csum_zero_error()
        _queue(ipv6, found, skb)
        return 0
    if not check:
        return _csum_error(ipv6, skb)
    if not udp6_csum_ok(skb):
        return _csum_error(ipv6, skb)
    mib.NoPorts += 1
    skb.data = nh
    ipv6.icmpv6_send(skb, ICMPV6_DEST_UNREACH, ICMPV6_PORT_UNREACH, 0)
    kfree_skb(skb, DropReason.NO_SOCKET)
    return 0


def _csum_error(ipv6: Ipv6, skb: SkBuff) -> int:
    ipv6.udp6_mib.InCsumErrors += 1
    ipv6.udp6_mib.InErrors += 1
    kfree_skb(skb, DropReason.UDP_CSUM)
    return 0


@kernel("net/ipv6/udp.c", "__udp6_lib_err")
def udpv6_err(ipv6: Ipv6, skb: SkBuff, icmp_type: int, code: int, offset: int, info: int) -> None:
    """An ICMPv6 error quotes a datagram we sent.

    Twin: netstack.ipv4.udp.udp_err.
    Kernel: net/ipv6/udp.c, __udp6_lib_err().
    """
    buf = skb.buf
    inner = skb.data
    saddr = addr_at(buf, inner + 8)
    daddr = addr_at(buf, inner + 24)
    sport, dport = _HH.unpack_from(buf, inner + offset)
    dev = skb.dev
    sk = ipv6.udp_table.lookup(daddr, dport, saddr, sport, dev.ifindex if dev is not None else 0)
    if sk is None:
        ipv6.icmp6_mib.InErrors += 1
        return
    err, harderr = icmpv6_err_convert(icmp_type, code)
    if icmp_type == ICMPV6_PKT_TOOBIG:
        if not sk.ip6_sk_accept_pmtu():
            return
        ipv6.ip6_sk_update_pmtu(skb, sk, info)
        if sk.pmtudisc6 != IPV6_PMTUDISC_DONT:
            harderr = True
    if icmp_type == NDISC_REDIRECT:
        return
    if not sk.recverr6:
        if not harderr or sk.state != TCP_ESTABLISHED:
            return
    else:
        offender = addr_at(buf, skb.network_header + 8)
        payload = bytes(buf[inner + offset + UDP_HLEN : skb.tail])
        sk.queue_error6(
            payload, err, SO_EE_ORIGIN_ICMP6, icmp_type, code, info, offender, (daddr, dport, 0, 0)
        )
    sk.sk_err = err
    sk.sk_error_report()


# imported last: ip6_output imports this module (a function-level import costs ~5 µs per packet)
from netstack.ipv6 import ip6_output as _ip6_output  # noqa: E402
