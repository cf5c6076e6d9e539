"""ICMPv6 echo ("ping") sockets: ``socket(AF_INET6, SOCK_DGRAM, IPPROTO_ICMPV6)``.

Theory of operation: as for IPv4 — the application writes an echo request
(type 128, code 0); the kernel puts the socket's identifier in it, computes
the checksum over the IPv6 pseudo-header and sends it; echo replies with
that identifier are queued for the socket, ICMPv6 header included; errors
quoting our requests reach it as for UDP (``IPV6_RECVERR``). Creation is
governed by ``net.ipv4.ping_group_range``, shared with IPv4 as in the
kernel. A link-local destination needs a scope id or a bound device
(EINVAL otherwise); v4-mapped destinations are refused (EINVAL).

Kernel: net/ipv6/ping.c, net/ipv4/ping.c (the shared ping_* functions).
"""

from __future__ import annotations

import errno
import struct
from typing import TYPE_CHECKING, Final

from netstack.core.skbuff import CHECKSUM_NONE, DropReason, SkBuff, consume_skb, kfree_skb
from netstack.core.sock import (
    MSG_CONFIRM,
    MSG_DONTWAIT,
    MSG_ERRQUEUE,
    MSG_OOB,
    MSG_PEEK,
    MSG_TRUNC,
    SOCK_DGRAM,
    TCP_CLOSE,
    TCP_ESTABLISHED,
    SockWouldBlock,
    sock_oserror,
)
from netstack.ipv6.route import Flowi6
from netstack.ipv6.sock import SO_EE_ORIGIN_ICMP6, Inet6Sock, Sockaddr6
from netstack.ipv6.udp import icmpv6_err_convert
from netstack.sites import kernel
from netstack.wire.checksum import csum_partial
from netstack.wire.icmpv6 import ICMPV6_ECHO_REQUEST, ICMPV6_HLEN
from netstack.wire.ipv6 import (
    IPPROTO_ICMPV6,
    IPV6_ADDR_MAPPED,
    IPV6_ADDR_MULTICAST,
    IPV6_HLEN,
    IPV6_MAXPLEN,
    addr_at,
    csum_ipv6_magic,
    ipv6_addr_needs_scope_id,
    ipv6_addr_type,
)

if TYPE_CHECKING:
    from netstack.ipv6.netns import Ipv6

__all__ = ["Ping6Sock", "Ping6Table", "ping6_err", "ping6_rcv"]

_H: Final = struct.Struct("!H")


class Ping6Sock(Inet6Sock):
    """An ICMPv6 echo socket (kernel: ``pingv6_prot``).

    Twin: netstack.ipv4.ping.PingSock.
    """

    def __init__(self, ipv6: Ipv6) -> None:
        super().__init__(ipv6, SOCK_DGRAM, IPPROTO_ICMPV6)

    @kernel("net/ipv4/ping.c", "ping_bind", "ping_check_bind_addr")
    def bind6(self, addr: int, port: int, scope_id: int) -> None:
        """Kernel: net/ipv4/ping.c, ping_bind() / ping_check_bind_addr() (AF_INET6)."""
        ipv6 = self.ipv6
        if self.inet_num:
            raise sock_oserror(errno.EINVAL)
        addr_type = ipv6_addr_type(addr)
        if addr_type & IPV6_ADDR_MAPPED:
            raise sock_oserror(errno.EADDRNOTAVAIL)
        if addr_type != 0:
            if ipv6_addr_needs_scope_id(addr_type) and scope_id:
                self.sk_bound_dev_if = scope_id
            dev = self.net.dev_get_by_index(self.sk_bound_dev_if) if self.sk_bound_dev_if else None
            if self.sk_bound_dev_if and dev is None:
                raise sock_oserror(errno.ENODEV)
            if (
                not addr_type & IPV6_ADDR_MULTICAST
                and not (self.freebind or ipv6.ip_nonlocal_bind)
                and not ipv6.ipv6_chk_addr(addr, dev)
            ):
                raise sock_oserror(errno.EADDRNOTAVAIL)
        self.sk_v6_rcv_saddr = self.saddr6 = addr
        ipv6.ping_table.get_port(self, port)

    @kernel("ip6_datagram_connect")
    def connect6(self, addr: int, port: int, flowinfo: int, scope_id: int) -> None:
        """Kernel: ip6_datagram_connect() (ping sockets use it too)."""
        if not self.inet_num:
            self.ipv6.ping_table.get_port(self, 0)
        addr_type = ipv6_addr_type(addr)
        if addr_type == 0:
            addr = 1
            addr_type = ipv6_addr_type(addr)
        if addr_type & IPV6_ADDR_MAPPED:
            raise sock_oserror(errno.ENETUNREACH)
        if ipv6_addr_needs_scope_id(addr_type):
            if scope_id:
                if self.sk_bound_dev_if and self.sk_bound_dev_if != scope_id:
                    raise sock_oserror(errno.EINVAL)
                self.sk_bound_dev_if = scope_id
            if not self.sk_bound_dev_if:
                raise sock_oserror(errno.EINVAL)
        fl6 = Flowi6(addr, self.saddr6, oif=self.sk_bound_dev_if, proto=IPPROTO_ICMPV6)
        found = self.ipv6.ip6_dst_lookup(fl6, bound_dev_if=self.sk_bound_dev_if)
        if isinstance(found, int):
            raise sock_oserror(-found)
        self.sk_v6_daddr = addr
        self.inet_dport = 0
        if not self.saddr6:
            self.saddr6 = fl6.saddr
        if not self.sk_v6_rcv_saddr:
            self.sk_v6_rcv_saddr = fl6.saddr
        if self.dst_cache is not None:
            self.dst_cache.release()
        self.dst_cache = found
        self.state = TCP_ESTABLISHED

    def disconnect(self) -> None:
        self.state = TCP_CLOSE
        self.sk_v6_daddr = 0
        if self.dst_cache is not None:
            self.dst_cache.release()
            self.dst_cache = None

    def close(self) -> None:
        self.ipv6.ping_table.unhash(self)
        super().close()

    @kernel("net/ipv6/ping.c", "ping_v6_sendmsg")
    def sendmsg6(
        self, data: bytes | bytearray | memoryview, dest: Sockaddr6 | None, flags: int
    ) -> int:
        """Send an echo request.

        Twin: netstack.ipv4.ping.PingSock.sendmsg.
        Kernel: net/ipv6/ping.c, ping_v6_sendmsg().
        """
        err = self.sock_error()
        if err:
            raise sock_oserror(err)
        length = len(data)
        if length > 0xFFFF:
            raise sock_oserror(errno.EMSGSIZE)
        if length < ICMPV6_HLEN:
            raise sock_oserror(errno.EINVAL)
        if flags & MSG_OOB:
            raise sock_oserror(errno.EOPNOTSUPP)
        if data[0] != ICMPV6_ECHO_REQUEST or data[1] != 0:
            raise sock_oserror(errno.EINVAL)
        ipv6 = self.ipv6
        oif = 0
        if dest is not None:
            daddr, _port, _flowinfo, scope_id = dest
            if ipv6_addr_needs_scope_id(ipv6_addr_type(daddr)):
                oif = scope_id
        else:
            if self.state != TCP_ESTABLISHED:
                raise sock_oserror(errno.EDESTADDRREQ)
            daddr = self.sk_v6_daddr
        if not oif:
            oif = self.sk_bound_dev_if
        if not oif and daddr >> 120 == 0xFF:
            oif = self.mcast_oif
        elif not oif:
            oif = self.ucast_oif
        addr_type = ipv6_addr_type(daddr)
        if (
            (ipv6_addr_needs_scope_id(addr_type) and not oif)
            or addr_type & IPV6_ADDR_MAPPED
            or (oif and self.sk_bound_dev_if and oif != self.sk_bound_dev_if)
        ):
            raise sock_oserror(errno.EINVAL)
        if not self.inet_num:
            ipv6.ping_table.get_port(self, 0)
        fl6 = Flowi6(daddr, self.saddr6, oif=oif, proto=IPPROTO_ICMPV6)
        found = ipv6.ip6_dst_lookup(fl6, bound_dev_if=self.sk_bound_dev_if)
        if isinstance(found, int):
            raise sock_oserror(-found)
        rt = found
        if not self.sock_writeable():
            rt.release()
            if flags & MSG_DONTWAIT:
                raise sock_oserror(errno.EAGAIN)
            raise SockWouldBlock(write=True)
        hlimit = self.mcast_hops if daddr >> 120 == 0xFF else self.hop_limit
        if hlimit < 0:
            hlimit = ipv6.ip6_dst_hoplimit(rt)
        mtu = rt.mtu()
        if (
            (self.dontfrag and length > mtu - IPV6_HLEN)
            or (not self.ip6_sk_ignore_df() and length > mtu - IPV6_HLEN)
            or length > IPV6_MAXPLEN
        ):
            rt.release()
            self.local_error(errno.EMSGSIZE, daddr, 0, max(mtu - IPV6_HLEN + IPV6_HLEN, 0))
            ipv6.icmp6_mib.OutErrors += 1
            raise sock_oserror(errno.EMSGSIZE)
        skb = _ip6_output.ip6_make_skb(
            ipv6,
            rt,
            fl6.saddr,
            daddr,
            IPPROTO_ICMPV6,
            length,
            hlimit=hlimit,
            tclass=self.tclass6,
            autoflowlabel=self.autoflowlabel,
            fl_dport=ICMPV6_ECHO_REQUEST << 8,  # fl6_icmp_type, fl6_icmp_code
            sk=self,
            ignore_df=self.ip6_sk_ignore_df(),
        )
        buf = skb.buf
        th = skb.transport_header
        buf[th : th + length] = data
        buf[th + 2] = buf[th + 3] = 0
        _H.pack_into(buf, th + 4, self.inet_num)
        c = csum_ipv6_magic(
            fl6.saddr, daddr, length, IPPROTO_ICMPV6, csum_partial(buf, th, th + length)
        )
        _H.pack_into(buf, th + 2, c)
        skb.ip_summed = CHECKSUM_NONE
        self.sock_wmem_charge(skb)
        if flags & MSG_CONFIRM:
            skb.dst_pending_confirm = True
        ipv6.icmp6_mib.OutMsgs += 1
        ipv6.icmp6msg.out_types[ICMPV6_ECHO_REQUEST] += 1
        _ip6_output.ip6_local_out(ipv6, skb)
        return length

    @kernel("ping_recvmsg")
    def recvmsg6(
        self, bufsize: int, flags: int
    ) -> tuple[bytes, Sockaddr6, int, list[tuple[int, int, bytes]]]:
        """An echo reply, ICMPv6 header included.

        Twin: netstack.ipv4.ping.PingSock.recvmsg.
        Kernel: ping_recvmsg() (AF_INET6).
        """
        if flags & MSG_ERRQUEUE:
            raise sock_oserror(errno.EINVAL)
        while True:
            err = self.sock_error()
            if err:
                raise sock_oserror(err)
            q = self.receive_queue
            if not q:
                if flags & MSG_DONTWAIT:
                    raise sock_oserror(errno.EAGAIN)
                raise SockWouldBlock(write=False)
            skb = q[0]
            saddr = addr_at(skb.buf, skb.network_header + 8)
            th = skb.transport_header
            total = skb.tail - th
            mflags = 0
            copy = total
            if total > bufsize:
                copy = bufsize
                mflags |= MSG_TRUNC
            data = bytes(skb.buf[th : th + copy])
            dev = skb.dev
            iif = skb.skb_iif or (dev.ifindex if dev is not None else 0)
            addr = (saddr, 0, 0, self.scope_for(saddr, iif))
            anc = self.cmsgs6(skb)
            if not flags & MSG_PEEK:
                q.popleft()
                self.sk_rmem_alloc -= skb.rmem_charge
                consume_skb(skb)
            return data, addr, mflags, anc


class Ping6Table:
    """IPv6 ping sockets by identifier (kernel: the AF_INET6 entries of ``ping_table``).

    Twin: netstack.ipv4.ping.PingTable.
    """

    def __init__(self, ipv6: Ipv6) -> None:
        self.ipv6 = ipv6
        self.ports: dict[int, list[Ping6Sock]] = {}
        self.rover = 0

    @kernel("ping_get_port")
    def get_port(self, sk: Ping6Sock, ident: int) -> None:
        """Kernel: ping_get_port()."""
        if ident:
            for other in self.ports.get(ident, ()):
                if not (sk.sk_reuse and other.sk_reuse):
                    raise sock_oserror(errno.EADDRINUSE)
        else:
            for _ in range(1 << 16):
                self.rover = (self.rover + 1) & 0xFFFF
                if not self.rover:
                    continue
                if not self.ports.get(self.rover):
                    ident = self.rover
                    break
            else:
                raise sock_oserror(errno.EADDRINUSE)
        sk.inet_num = ident
        sk.inet_sport = ident
        self.ports.setdefault(ident, []).append(sk)

    def unhash(self, sk: Ping6Sock) -> None:
        lst = self.ports.get(sk.inet_num)
        if lst and sk in lst:
            lst.remove(sk)
            if not lst:
                del self.ports[sk.inet_num]

    @kernel("ping_lookup")
    def lookup(self, ident: int, daddr: int, dif: int) -> Ping6Sock | None:
        """Kernel: ping_lookup() (AF_INET6)."""
        for sk in self.ports.get(ident, ()):
            if sk.sk_v6_rcv_saddr and sk.sk_v6_rcv_saddr != daddr:
                continue
            if sk.sk_bound_dev_if and sk.sk_bound_dev_if != dif:
                continue
            return sk
        return None


@kernel("net/ipv4/ping.c", "ping_rcv")
def ping6_rcv(ipv6: Ipv6, skb: SkBuff) -> None:
    """Deliver an echo reply to its socket.

    Twin: netstack.ipv4.ping.ping_rcv.
    Kernel: net/ipv4/ping.c, ping_rcv().
    """
    buf = skb.buf
    th = skb.transport_header
    ident = (buf[th + 4] << 8) | buf[th + 5]
    daddr = addr_at(buf, skb.network_header + 24)
    dev = skb.dev
    sk = ipv6.ping_table.lookup(ident, daddr, dev.ifindex if dev is not None else 0)
    if sk is None or sk.dead:
        kfree_skb(skb, DropReason.NO_SOCKET)
        return
    if not sk.sock_queue_rcv_skb(skb):
        kfree_skb(skb, DropReason.SOCKET_RCVBUFF)


@kernel("ping_err")
def ping6_err(ipv6: Ipv6, skb: SkBuff, icmp_type: int, code: int, offset: int, info: int) -> None:
    """An ICMPv6 error quotes one of our echo requests.

    Twin: netstack.ipv4.ping.ping_err.
    Kernel: ping_err() (AF_INET6).
    """
    buf = skb.buf
    inner = skb.data
    icmph = inner + offset
    if skb.tail < icmph + ICMPV6_HLEN:
        return
    ident = (buf[icmph + 4] << 8) | buf[icmph + 5]
    daddr = addr_at(buf, skb.network_header + 24)
    dev = skb.dev
    sk = ipv6.ping_table.lookup(ident, daddr, dev.ifindex if dev is not None else 0)
    if sk is None:
        return
    err, harderr = icmpv6_err_convert(icmp_type, code)
    if not sk.recverr6:
        if not harderr or sk.state != TCP_ESTABLISHED:
            return
    else:
        offender = addr_at(buf, skb.network_header + 8)
        dst = addr_at(buf, inner + 24)
        sk.queue_error6(
            bytes(buf[icmph : skb.tail]),
            err,
            SO_EE_ORIGIN_ICMP6,
            icmp_type,
            code,
            info,
            offender,
            (dst, 0, 0, 0),
        )
    sk.sk_err = err
    sk.sk_error_report()


# imported last: ip6_output imports this module (a function-level import costs ~5 µs per packet)
from netstack.ipv6 import ip6_output as _ip6_output  # noqa: E402
