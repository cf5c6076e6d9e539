"""Raw IPv6 sockets (``SOCK_RAW``): what routing daemons such as radvd use.

Theory of operation: a raw socket is bound to one next-header value (its
``protocol``, kept in ``inet_num``). Sending: the user's bytes become the
payload of one IPv6 packet with that next header; the destination's
``sin6_port`` must be 0 or the socket's protocol; for ICMPv6 sockets the
kernel always fills in the checksum (RFC 3542 §3.1), for others only when
``IPV6_CHECKSUM`` names an offset. Hop limits, multicast interface, source
address selection and PMTU rules are those of every IPv6 datagram socket;
``IPV6_HDRINCL`` is not emulated.

Receiving (``raw6_local_deliver``, called from the header walk before the
protocol handler): every raw socket of the packet's next header whose bound
address, connected peer and bound device match gets a clone — ICMPv6
sockets only the types their ``ICMP6_FILTER`` lets through, and only with a
correct checksum. A read returns the packet from the transport header on
(the IPv6 header is not included) and the sender as ``(addr, 0, flowinfo,
scope_id)``; ``IPV6_RECVPKTINFO``/``IPV6_RECVHOPLIMIT`` give what radvd
checks (hop limit 255 for ND).

Kernel: net/ipv6/raw.c.
"""

from __future__ import annotations

import errno
import struct
from typing import TYPE_CHECKING, Final

from netstack.core.skbuff import CHECKSUM_NONE, SkBuff, consume_skb
from netstack.core.sock import (
    MSG_CONFIRM,
    MSG_DONTWAIT,
    MSG_ERRQUEUE,
    MSG_OOB,
    MSG_PEEK,
    MSG_TRUNC,
    SOCK_RAW,
    TCP_CLOSE,
    TCP_ESTABLISHED,
    SockWouldBlock,
    sock_oserror,
)
from netstack.ipv6.route import Flowi6
from netstack.ipv6.sock import (
    ICMP6_FILTER,
    IPV6_CHECKSUM,
    SO_EE_ORIGIN_ICMP6,
    Inet6Sock,
    Sockaddr6,
)
from netstack.sites import kernel
from netstack.wire.checksum import csum_partial
from netstack.wire.icmpv6 import ICMPV6_PKT_TOOBIG
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

__all__ = ["Raw6Sock", "raw6_icmp_error", "raw6_local_deliver"]

SOL_RAW: Final = 255
SOL_ICMPV6: Final = 58
_H: Final = struct.Struct("!H")


class Raw6Sock(Inet6Sock):
    """A raw IPv6 socket (kernel: ``struct raw6_sock``)."""

    def __init__(self, ipv6: Ipv6, protocol: int) -> None:
        super().__init__(ipv6, SOCK_RAW, protocol)
        self.inet_num = protocol
        # rawv6_init_sk(): ICMPv6 sockets always checksum at offset 2
        self.checksum = protocol == IPPROTO_ICMPV6
        self.offset = 2 if protocol == IPPROTO_ICMPV6 else 0
        self.filter = bytes(32)  # ICMP6_FILTER: a set bit blocks the type (all pass)
        ipv6.raw_sockets.append(self)

    # -- addresses --------------------------------------------------------------------
    @kernel("net/ipv6/raw.c", "rawv6_bind")
    def bind6(self, addr: int, port: int, scope_id: int) -> None:
        """Kernel: net/ipv6/raw.c, rawv6_bind()."""
        addr_type = ipv6_addr_type(addr)
        if addr_type == IPV6_ADDR_MAPPED:
            raise sock_oserror(errno.EADDRNOTAVAIL)
        if self.state != TCP_CLOSE:
            raise sock_oserror(errno.EINVAL)
        ipv6 = self.ipv6
        if addr_type != 0:  # IPV6_ADDR_ANY
            dev = None
            if ipv6_addr_needs_scope_id(addr_type):
                if scope_id:
                    self.sk_bound_dev_if = scope_id
                if not self.sk_bound_dev_if:
                    raise sock_oserror(errno.EINVAL)
                dev = self.net.dev_get_by_index(self.sk_bound_dev_if)
                if dev is None:
                    raise sock_oserror(errno.ENODEV)
            if (
                not addr_type & IPV6_ADDR_MULTICAST
                and not (self.freebind or ipv6.ip_nonlocal_bind)
                and not ipv6.ipv6_chk_addr(addr, dev)
            ):
                raise sock_oserror(errno.EADDRNOTAVAIL)
        self.sk_v6_rcv_saddr = addr
        if not addr_type & IPV6_ADDR_MULTICAST:
            self.saddr6 = addr

    @kernel("ip6_datagram_connect")
    def connect6(self, addr: int, port: int, flowinfo: int, scope_id: int) -> None:
        """Kernel: ip6_datagram_connect()."""
        addr_type = ipv6_addr_type(addr)
        if addr_type == 0:
            addr = 1  # "connect to self if passed an unspecified address"
            addr_type = ipv6_addr_type(addr)
        if addr_type & IPV6_ADDR_MAPPED:
            raise sock_oserror(errno.ENETUNREACH)
        if ipv6_addr_needs_scope_id(addr_type):
            if scope_id:
                if self.sk_bound_dev_if and self.sk_bound_dev_if != scope_id:
                    raise sock_oserror(errno.EINVAL)
                self.sk_bound_dev_if = scope_id
            if not self.sk_bound_dev_if and addr_type & IPV6_ADDR_MULTICAST:
                self.sk_bound_dev_if = self.mcast_oif
            if not self.sk_bound_dev_if:
                raise sock_oserror(errno.EINVAL)
        fl6 = Flowi6(addr, self.saddr6, oif=self.sk_bound_dev_if, proto=self.protocol)
        found = self.ipv6.ip6_dst_lookup(fl6, bound_dev_if=self.sk_bound_dev_if)
        if isinstance(found, int):
            raise sock_oserror(-found)
        self.sk_v6_daddr = addr
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

    def getsockname6(self) -> Sockaddr6:
        addr = self.sk_v6_rcv_saddr
        scope = self.sk_bound_dev_if if ipv6_addr_needs_scope_id(ipv6_addr_type(addr)) else 0
        return (addr, 0, 0, scope)

    def getpeername6(self) -> Sockaddr6:
        if self.state != TCP_ESTABLISHED:
            raise sock_oserror(errno.ENOTCONN)
        addr = self.sk_v6_daddr
        scope = self.sk_bound_dev_if if ipv6_addr_needs_scope_id(ipv6_addr_type(addr)) else 0
        return (addr, 0, 0, scope)

    def close(self) -> None:
        if self in self.ipv6.raw_sockets:
            self.ipv6.raw_sockets.remove(self)
        super().close()

    # -- options ------------------------------------------------------------------------
    @kernel("rawv6_setsockopt")
    def setsockopt(self, level: int, optname: int, value: int | bytes) -> None:
        """ICMP6_FILTER and IPV6_CHECKSUM, else the IPv6 options.

        Kernel: rawv6_setsockopt().
        """
        if level == SOL_ICMPV6 and self.protocol == IPPROTO_ICMPV6:
            if optname != ICMP6_FILTER:
                raise sock_oserror(errno.ENOPROTOOPT)
            if not isinstance(value, bytes | bytearray):
                raise sock_oserror(errno.EINVAL)
            self.filter = bytes(value[:32]).ljust(32, b"\0")
            return
        if level == SOL_ICMPV6:
            raise sock_oserror(errno.EOPNOTSUPP)
        if (level == SOL_RAW or level == 41) and optname == IPV6_CHECKSUM:
            val = self._int(value)
            if self.protocol == IPPROTO_ICMPV6 and level == SOL_RAW:
                raise sock_oserror(
                    errno.EINVAL
                )  # "You may get strange result with a positive odd offset"
            if val > 0 and val & 1:
                raise sock_oserror(errno.EINVAL)
            if val < 0:
                self.checksum = self.protocol == IPPROTO_ICMPV6
                self.offset = 2 if self.checksum else 0
            else:
                self.checksum = True
                self.offset = val
            return
        if level == SOL_RAW:
            raise sock_oserror(errno.ENOPROTOOPT)
        super().setsockopt(level, optname, value)

    def getsockopt(self, level: int, optname: int) -> int | bytes:
        if level == SOL_ICMPV6 and self.protocol == IPPROTO_ICMPV6:
            if optname != ICMP6_FILTER:
                raise sock_oserror(errno.ENOPROTOOPT)
            return self.filter
        if (level == SOL_RAW or level == 41) and optname == IPV6_CHECKSUM:
            return self.offset if self.checksum else -1
        return super().getsockopt(level, optname)

    @kernel("icmpv6_filter")
    def filtered(self, icmp_type: int) -> bool:
        """Does ICMP6_FILTER block *icmp_type*?

        Kernel: icmpv6_filter().
        """
        word = int.from_bytes(
            self.filter[(icmp_type >> 5) * 4 : (icmp_type >> 5) * 4 + 4], "little"
        )
        return bool(word >> (icmp_type & 31) & 1)

    # -- sending -----------------------------------------------------------------------------
    @kernel("net/ipv6/raw.c", "rawv6_sendmsg")
    def sendmsg6(
        self, data: bytes | bytearray | memoryview, dest: Sockaddr6 | None, flags: int
    ) -> int:
        """Kernel: net/ipv6/raw.c, rawv6_sendmsg() (without IPV6_HDRINCL)."""
        if flags & MSG_OOB:
            raise sock_oserror(errno.EOPNOTSUPP)
        length = len(data)
        if length > IPV6_MAXPLEN:
            raise sock_oserror(errno.EMSGSIZE)
        ipv6 = self.ipv6
        proto = self.inet_num
        oif = 0
        if dest is not None:
            daddr, port, _flowinfo, scope_id = dest
            if port:
                if port != proto:
                    raise sock_oserror(errno.EINVAL)
            if proto > 255:
                raise sock_oserror(errno.EINVAL)
            if ipv6_addr_needs_scope_id(ipv6_addr_type(daddr)):
                oif = scope_id
        else:
            if self.state != TCP_ESTABLISHED:
                raise sock_oserror(errno.EDESTADDRREQ)
            daddr = self.sk_v6_daddr
        if not oif:
            oif = self.sk_bound_dev_if
        if ipv6_addr_type(daddr) & IPV6_ADDR_MAPPED:
            raise sock_oserror(errno.ENETUNREACH)
        if not oif and daddr >> 120 == 0xFF:
            oif = self.mcast_oif
        elif not oif:
            oif = self.ucast_oif
        fl6 = Flowi6(daddr, self.saddr6, oif=oif, proto=proto)
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
        if (self.dontfrag or not self.ip6_sk_ignore_df()) and length > mtu - IPV6_HLEN:
            rt.release()
            self.local_error(errno.EMSGSIZE, daddr, 0, mtu)
            raise sock_oserror(errno.EMSGSIZE)
        if self.checksum and self.offset + 1 >= length:
            rt.release()
            raise sock_oserror(errno.EINVAL)  # rawv6_push_pending_frames(): offset beyond data
        skb = _ip6_output.ip6_make_skb(
            ipv6,
            rt,
            fl6.saddr,
            daddr,
            proto,
            length,
            hlimit=hlimit,
            tclass=self.tclass6,
            autoflowlabel=self.autoflowlabel,
            fl_dport=(data[0] << 8 | data[1]) if proto == IPPROTO_ICMPV6 and length >= 2 else 0,
            sk=self,
            ignore_df=self.ip6_sk_ignore_df(),
        )
        buf = skb.buf
        th = skb.transport_header
        buf[th : th + length] = data
        if self.checksum:
            off = th + self.offset
            buf[off] = buf[off + 1] = 0
            c = csum_ipv6_magic(fl6.saddr, daddr, length, proto, csum_partial(buf, th, th + length))
            _H.pack_into(buf, off, c)
        skb.ip_summed = CHECKSUM_NONE
        self.sock_wmem_charge(skb)
        if flags & MSG_CONFIRM:
            skb.dst_pending_confirm = True
        if proto == IPPROTO_ICMPV6 and length:
            ipv6.icmp6msg.out_types[buf[th]] += 1  # __ip6_make_skb()
            ipv6.icmp6_mib.OutMsgs += 1
        _ip6_output.ip6_local_out(ipv6, skb)
        return length

    # -- receiving ---------------------------------------------------------------------------
    @kernel("net/ipv6/raw.c", "rawv6_recvmsg")
    def recvmsg6(
        self, bufsize: int, flags: int
    ) -> tuple[bytes, Sockaddr6, int, list[tuple[int, int, bytes]]]:
        """Kernel: net/ipv6/raw.c, rawv6_recvmsg()."""
        if flags & MSG_OOB:
            raise sock_oserror(errno.EOPNOTSUPP)
        if flags & MSG_ERRQUEUE:
            raise sock_oserror(errno.EINVAL)
        err = self.sock_error()
        if err:
            raise sock_oserror(err)
        q = self.receive_queue
        if not q:
            if flags & MSG_DONTWAIT:
                raise sock_oserror(errno.EAGAIN)
            raise SockWouldBlock(write=False)
        skb = q[0]
        th = skb.transport_header
        total = skb.tail - th
        mflags = 0
        copy = total
        if total > bufsize:
            copy = bufsize
            mflags |= MSG_TRUNC
        data = bytes(skb.buf[th : th + copy])
        saddr = addr_at(skb.buf, skb.network_header + 8)
        dev = skb.dev
        iif = skb.skb_iif or (dev.ifindex if dev is not None else 0)
        flow = (
            int.from_bytes(skb.buf[skb.network_header : skb.network_header + 4], "big") & 0x0FFFFFFF
        )
        addr = (saddr, 0, flow, self.scope_for(saddr, iif))
        anc = self.cmsgs6(skb)
        if not flags & MSG_PEEK:
            q.popleft()
            self.sk_rmem_alloc -= skb.rmem_charge
            consume_skb(skb)
        return data, addr, mflags, anc


@kernel("raw_v6_match")
def _raw_match(sk: Raw6Sock, daddr: int, saddr: int, dif: int) -> bool:
    """Kernel: raw_v6_match()."""
    if sk.sk_v6_rcv_saddr and sk.sk_v6_rcv_saddr != daddr:
        return False
    if sk.state == TCP_ESTABLISHED and sk.sk_v6_daddr and sk.sk_v6_daddr != saddr:
        return False
    if sk.sk_bound_dev_if and sk.sk_bound_dev_if != dif:
        return False
    return not (daddr >> 120 == 0xFF and not sk.inet6_mc_check(daddr))


@kernel("net/ipv6/raw.c", "raw6_local_deliver", "ipv6_raw_deliver")
def raw6_local_deliver(ipv6: Ipv6, skb: SkBuff, nexthdr: int) -> bool:
    """Give a clone to every matching raw socket; True if any matched.

    Kernel: net/ipv6/raw.c, raw6_local_deliver() / ipv6_raw_deliver().
    """
    socks = ipv6.raw_sockets
    if not socks:
        return False
    buf = skb.buf
    nh = skb.network_header
    daddr = addr_at(buf, nh + 24)
    saddr = addr_at(buf, nh + 8)
    dev = skb.dev
    dif = dev.ifindex if dev is not None else 0
    th = skb.transport_header
    delivered = False
    csum_checked: bool | None = None
    for sk in list(socks):
        if sk.inet_num != nexthdr or sk.dead or not _raw_match(sk, daddr, saddr, dif):
            continue
        delivered = True
        if nexthdr == IPPROTO_ICMPV6:
            if skb.tail - th < 1 or sk.filtered(buf[th]):
                continue  # icmpv6_filter(): "filtered", counted as delivered
        if sk.checksum:
            if csum_checked is None:
                length = skb.tail - th
                csum_checked = (
                    csum_ipv6_magic(saddr, daddr, length, nexthdr, csum_partial(buf, th, skb.tail))
                    == 0
                )
            if not csum_checked:
                sk.sk_drops += 1  # rawv6_rcv(): csum_error
                continue
        clone = skb.clone()
        if not sk.sock_queue_rcv_skb(clone):
            consume_skb(clone)
    return delivered


@kernel("raw6_icmp_error")
def raw6_icmp_error(
    ipv6: Ipv6, skb: SkBuff, nexthdr: int, icmp_type: int, code: int, inner_offset: int, info: int
) -> None:
    """An ICMPv6 error quoting a packet of a raw socket's protocol.

    Kernel: raw6_icmp_error().
    """
    socks = ipv6.raw_sockets
    if not socks:
        return
    from netstack.ipv6.udp import icmpv6_err_convert

    buf = skb.buf
    inner = skb.data
    if skb.tail < inner + 40:
        return
    # the quoted packet: its source is us, its destination the peer
    qsaddr = addr_at(buf, inner + 8)
    qdaddr = addr_at(buf, inner + 24)
    dev = skb.dev
    dif = dev.ifindex if dev is not None else 0
    for sk in list(socks):
        if sk.inet_num != nexthdr or not _raw_match(sk, qsaddr, qdaddr, dif):
            continue
        if not sk.recverr6 and sk.state != TCP_ESTABLISHED:
            continue
        err, harderr = icmpv6_err_convert(icmp_type, code)
        if icmp_type == ICMPV6_PKT_TOOBIG:
            ipv6.ip6_sk_update_pmtu(skb, sk, info)
            harderr = sk.pmtudisc6 == 2  # IPV6_PMTUDISC_DO
        if sk.recverr6:
            sk.queue_error6(
                bytes(buf[inner + inner_offset : skb.tail]),
                err,
                SO_EE_ORIGIN_ICMP6,
                icmp_type,
                code,
                info,
                addr_at(buf, skb.network_header + 8),
                (qdaddr, 0, 0, sk.scope_for(qdaddr, dif)),
            )
        if sk.recverr6 or harderr:
            sk.sk_err = err
            sk.sk_error_report()


# imported last: ip6_output imports this module (a function-level import costs ~5 µs per packet)
from netstack.ipv6 import ip6_output as _ip6_output  # noqa: E402
