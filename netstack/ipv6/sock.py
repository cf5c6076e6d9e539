"""The IPv6 part of a socket (``struct ipv6_pinfo``): addresses, options, errors.

Theory of operation: :class:`Inet6Sock` extends the core ``Sock`` with what
``inet6_create`` adds: the bound and peer IPv6 addresses, the source to send
from, hop limits (unicast ``-1`` = the route's, multicast 1), the multicast
and unicast interfaces, PMTU discovery mode (``IPV6_MTU_DISCOVER``,
default WANT: fragment at the source), ``IPV6_DONTFRAG``, ``IPV6_RECVERR``
and ``IPV6_V6ONLY``. Addresses cross the socket API as sockaddr_in6
four-tuples ``(addr, port, flowinfo, scope_id)``; the ``*6`` methods take and
return them, the generic ``bind``/``connect``/``sendmsg``/``recvmsg`` of the
base class use scope 0. ``IPV6_V6ONLY`` (``sk_ipv6only``, from
``net.ipv6.bindv6only``; EINVAL once bound) decides whether the socket also
talks IPv4 to ``::ffff:a.b.c.d`` peers (dual stack: see ``ipv6/udp.py``); the
base ``inet_*`` fields then hold the IPv4 view of its addresses.

Error reports (``IPV6_RECVERR``) carry a ``sock_extended_err`` followed by the
offender's ``sockaddr_in6`` (``SOL_IPV6``/``IPV6_RECVERR`` control message).

Kernel: net/ipv6/af_inet6.c (inet6_create, inet6_bind), net/ipv6/datagram.c,
net/ipv6/ipv6_sockglue.c.
"""

from __future__ import annotations

import errno
import struct
from typing import TYPE_CHECKING, Final

from netstack.core.skbuff import SkBuff
from netstack.core.sock import (
    AF_INET6,
    IP_PMTUDISC_WANT,
    SO_EE_ORIGIN_LOCAL,
    SOL_SOCKET,
    Sock,
    sock_oserror,
)
from netstack.ipv6.constants import (
    IPV6_PMTUDISC_DO,
    IPV6_PMTUDISC_INTERFACE,
    IPV6_PMTUDISC_OMIT,
)
from netstack.ipv6.flowlabel import IPV6_AUTOFLOWLABEL, ip6_autoflowlabel
from netstack.sites import kernel
from netstack.wire.ipv6 import ipv6_addr_needs_scope_id, ipv6_addr_type

if TYPE_CHECKING:
    from netstack.ipv6.netns import Ipv6

__all__ = [
    "ICMP6_FILTER",
    "IPPROTO_ICMPV6",
    "IPPROTO_IPV6",
    "IPV6_2292PKTINFO",
    "IPV6_ADDRFORM",
    "IPV6_ADD_MEMBERSHIP",
    "IPV6_CHECKSUM",
    "IPV6_DONTFRAG",
    "IPV6_DROP_MEMBERSHIP",
    "IPV6_FLOWINFO",
    "IPV6_HOPLIMIT",
    "IPV6_JOIN_GROUP",
    "IPV6_LEAVE_GROUP",
    "IPV6_MTU",
    "IPV6_MTU_DISCOVER",
    "IPV6_MULTICAST_HOPS",
    "IPV6_MULTICAST_IF",
    "IPV6_MULTICAST_LOOP",
    "IPV6_NEXTHOP",
    "IPV6_PKTINFO",
    "IPV6_RECVERR",
    "IPV6_RECVHOPLIMIT",
    "IPV6_RECVPKTINFO",
    "IPV6_RECVTCLASS",
    "IPV6_ROUTER_ALERT",
    "IPV6_TCLASS",
    "IPV6_UNICAST_HOPS",
    "IPV6_UNICAST_IF",
    "IPV6_V6ONLY",
    "SOL_IPV6",
    "SO_EE_ORIGIN_ICMP6",
    "Inet6Sock",
    "Sockaddr6",
    "pack_sockaddr_in6",
]

Sockaddr6 = tuple[int, int, int, int]  # (addr, port, flowinfo, scope_id)

SOL_IPV6: Final = 41
IPPROTO_IPV6: Final = 41
IPPROTO_ICMPV6: Final = 58
IPV6_ADDRFORM: Final = 1
IPV6_2292PKTINFO: Final = 2
IPV6_CHECKSUM: Final = 7
IPV6_NEXTHOP: Final = 9
IPV6_FLOWINFO: Final = 11
IPV6_UNICAST_HOPS: Final = 16
IPV6_MULTICAST_IF: Final = 17
IPV6_MULTICAST_HOPS: Final = 18
IPV6_MULTICAST_LOOP: Final = 19
IPV6_ADD_MEMBERSHIP: Final = 20
IPV6_JOIN_GROUP: Final = 20
IPV6_DROP_MEMBERSHIP: Final = 21
IPV6_LEAVE_GROUP: Final = 21
IPV6_ROUTER_ALERT: Final = 22
IPV6_MTU_DISCOVER: Final = 23
IPV6_MTU: Final = 24
IPV6_RECVERR: Final = 25
IPV6_V6ONLY: Final = 26
IPV6_DSTOPTS: Final = 59
IPV6_RECVPKTINFO: Final = 49
IPV6_PKTINFO: Final = 50
IPV6_RECVHOPLIMIT: Final = 51
IPV6_HOPLIMIT: Final = 52
IPV6_RECVTCLASS: Final = 66
IPV6_TCLASS: Final = 67
IPV6_DONTFRAG: Final = 62
IPV6_UNICAST_IF: Final = 76
ICMP6_FILTER: Final = 1

SO_EE_ORIGIN_ICMP6: Final = 3
_EE: Final = struct.Struct("=IBBBBII")  # struct sock_extended_err
_SIN6: Final = struct.Struct("=H2s4s16sI")  # struct sockaddr_in6
_V4MAPPED: Final = 0xFFFF << 32


def pack_sockaddr_in6(
    addr: int, port: int = 0, flowinfo: int = 0, scope_id: int = 0, family: int = AF_INET6
) -> bytes:
    """``struct sockaddr_in6`` (family in host order, port and flowinfo in network order)."""
    return _SIN6.pack(
        family,
        port.to_bytes(2, "big"),
        flowinfo.to_bytes(4, "big"),
        addr.to_bytes(16, "big"),
        scope_id,
    )


class Inet6Sock(Sock):
    """An AF_INET6 socket's protocol side (kernel: ``struct sock`` + ``struct ipv6_pinfo``)."""

    def __init__(self, ipv6: Ipv6, sock_type: int, protocol: int) -> None:
        super().__init__(ipv6.net, AF_INET6, sock_type, protocol)
        self.ipv6 = ipv6
        self.sk_v6_rcv_saddr = 0  # bound address
        self.saddr6 = 0  # np->saddr: the source used to send
        self.sk_v6_daddr = 0
        self.flow_label = 0
        self.autoflowlabel = -1  # IPV6_AUTOFLOWLABEL; -1: not set (np->autoflowlabel_set = 0)
        self.hop_limit = -1  # np->hop_limit (IPV6_UNICAST_HOPS); -1: the route's
        self.mcast_hops = 1  # IPV6_DEFAULT_MCASTHOPS
        self.mcast_oif = 0
        self.ucast_oif = 0
        self.mc_loop = True
        self.pmtudisc6 = IP_PMTUDISC_WANT
        self.dontfrag = False
        self.recverr6 = False
        self.ipv6only = bool(ipv6.bindv6only)
        self.recvhoplimit = False
        self.recvtclass = False
        self.recvpktinfo = False
        self.tclass6 = 0
        self.frag_size = 0
        self.mc_groups: list[tuple[int, int]] = []  # (group, ifindex) memberships
        self.mc_all = True

    # -- sockaddr_in6 operations -------------------------------------------------------
    def bind6(self, addr: int, port: int, scope_id: int) -> None:
        raise sock_oserror(errno.EOPNOTSUPP)

    def connect6(self, addr: int, port: int, flowinfo: int, scope_id: int) -> None:
        raise sock_oserror(errno.EOPNOTSUPP)

    def sendmsg6(
        self, data: bytes | bytearray | memoryview, dest: Sockaddr6 | None, flags: int
    ) -> int:
        raise sock_oserror(errno.EOPNOTSUPP)

    def recvmsg6(
        self, bufsize: int, flags: int
    ) -> tuple[bytes, Sockaddr6, int, list[tuple[int, int, bytes]]]:
        raise sock_oserror(errno.EOPNOTSUPP)

    def getsockname6(self) -> Sockaddr6:
        addr = self.sk_v6_rcv_saddr
        scope = self.sk_bound_dev_if if ipv6_addr_needs_scope_id(ipv6_addr_type(addr)) else 0
        return (addr, self.inet_num, 0, scope)

    def getpeername6(self) -> Sockaddr6:
        if self.state != 1:  # TCP_ESTABLISHED
            raise sock_oserror(errno.ENOTCONN)
        addr = self.sk_v6_daddr
        scope = self.sk_bound_dev_if if ipv6_addr_needs_scope_id(ipv6_addr_type(addr)) else 0
        return (addr, self.inet_dport, 0, scope)

    # the generic entry points (scope 0)
    def bind(self, addr: int, port: int) -> None:
        self.bind6(addr, port, 0)

    def connect(self, addr: int, port: int) -> None:
        self.connect6(addr, port, 0, 0)

    def sendmsg(
        self, data: bytes | bytearray | memoryview, dest: tuple[int, int] | None, flags: int
    ) -> int:
        return self.sendmsg6(data, (dest[0], dest[1], 0, 0) if dest is not None else None, flags)

    def recvmsg(
        self, bufsize: int, flags: int
    ) -> tuple[bytes, tuple[int, int], int, list[tuple[int, int, bytes]]]:
        data, addr, mflags, anc = self.recvmsg6(bufsize, flags)
        return data, (addr[0], addr[1]), mflags, anc

    def getsockname(self) -> tuple[int, int]:
        addr = self.getsockname6()
        return addr[0], addr[1]

    def getpeername(self) -> tuple[int, int]:
        addr = self.getpeername6()
        return addr[0], addr[1]

    def default_ttl(self) -> int:
        return int(self.ipv6.devconf_all.hop_limit)

    # -- errors -----------------------------------------------------------------------------
    @kernel("ipv6_icmp_error", "ipv6_local_error")
    def queue_error6(
        self,
        data: bytes,
        err: int,
        origin: int,
        icmp_type: int,
        code: int,
        info: int,
        offender: int | None,
        addr: Sockaddr6,
    ) -> None:
        """Queue an ``IPV6_RECVERR`` report.

        Kernel: ipv6_icmp_error() / ipv6_local_error().
        """
        ee = _EE.pack(err, origin, icmp_type, code, 0, info & 0xFFFFFFFF, 0)
        if offender is None:
            ee += pack_sockaddr_in6(0, family=0)
        else:
            ee += pack_sockaddr_in6(offender)
        self.error_queue.append((data, [(SOL_IPV6, IPV6_RECVERR, ee)], addr, err))

    @kernel("ipv6_local_error")
    def local_error(self, err: int, daddr: int, dport: int, info: int) -> None:
        """A locally detected error (EMSGSIZE).

        Kernel: ipv6_local_error().
        """
        if not self.recverr6:
            return
        self.queue_error6(b"", err, SO_EE_ORIGIN_LOCAL, 0, 0, info, None, (daddr, dport, 0, 0))

    @kernel("ipv6_recv_error")
    def recv_errqueue6(
        self, bufsize: int
    ) -> tuple[bytes, list[tuple[int, int, bytes]], int, Sockaddr6]:
        """Read one report. An IPv4 one (a dual-stack socket's, queued by IPv4's
        ip_icmp_error) reads as IPv6's: the address and the offender
        ``::ffff:a.b.c.d``, the control message SOL_IPV6/IPV6_RECVERR.

        Kernel: ipv6_recv_error().
        """
        data, anc, flags, addr = self.recv_errqueue(bufsize)
        full: tuple[int, ...] = tuple(addr)
        if anc and anc[0][0] == 0:  # SOL_IP: an IPv4 report (dual stack, ip_icmp_error)
            full = (_V4MAPPED | full[0], full[1], 0, 0)
            ee = anc[0][2]
            offender = int.from_bytes(ee[_EE.size + 4 : _EE.size + 8], "big")
            if ee[4] == SO_EE_ORIGIN_LOCAL:  # no offender for a local error
                sin6 = pack_sockaddr_in6(0, family=0)
            else:
                sin6 = pack_sockaddr_in6(_V4MAPPED | offender)
            anc = [(SOL_IPV6, IPV6_RECVERR, ee[: _EE.size] + sin6), *anc[1:]]
        if len(full) == 2:
            full = (full[0], full[1], 0, 0)
        return data, anc, flags, (full[0], full[1], full[2], full[3])

    @kernel("ip6_datagram_recv_ctl")
    def cmsgs6(self, skb: SkBuff) -> list[tuple[int, int, bytes]]:
        """Ancillary data for a received skb.

        Kernel: ip6_datagram_recv_ctl().
        """
        out: list[tuple[int, int, bytes]] = []
        nh = skb.network_header
        if nh < 0:
            return out
        buf = skb.buf
        if self.recvpktinfo:
            dev = skb.dev
            ifindex = dev.ifindex if dev is not None else 0
            out.append(
                (
                    SOL_IPV6,
                    IPV6_PKTINFO,
                    bytes(buf[nh + 24 : nh + 40]) + ifindex.to_bytes(4, "little"),
                )
            )
        if self.recvhoplimit:
            out.append((SOL_IPV6, IPV6_HOPLIMIT, buf[nh + 7].to_bytes(4, "little")))
        if self.recvtclass:
            tclass = ((buf[nh] & 0x0F) << 4) | (buf[nh + 1] >> 4)
            out.append((SOL_IPV6, IPV6_TCLASS, tclass.to_bytes(4, "little")))
        return out

    # -- options ------------------------------------------------------------------------------
    def setsockopt(self, level: int, optname: int, value: int | bytes) -> None:
        if level == IPPROTO_IPV6:
            self._ipv6_set(optname, value)
        elif level == SOL_SOCKET:
            self._sol_socket_set(optname, value)
        else:
            raise sock_oserror(errno.ENOPROTOOPT)

    def getsockopt(self, level: int, optname: int) -> int | bytes:
        if level == IPPROTO_IPV6:
            return self._ipv6_get(optname)
        if level == SOL_SOCKET:
            return self._sol_socket_get(optname)
        raise sock_oserror(errno.ENOPROTOOPT)

    @kernel("net/ipv6/ipv6_sockglue.c", "do_ipv6_setsockopt")
    def _ipv6_set(self, optname: int, value: int | bytes) -> None:
        """Kernel: net/ipv6/ipv6_sockglue.c, do_ipv6_setsockopt()."""
        if optname in (IPV6_JOIN_GROUP, IPV6_LEAVE_GROUP):
            self._membership(optname == IPV6_JOIN_GROUP, value)
            return
        val = self._int(value)
        if optname == IPV6_UNICAST_HOPS:
            if val > 255 or val < -1:
                raise sock_oserror(errno.EINVAL)
            self.hop_limit = val
        elif optname == IPV6_MULTICAST_HOPS:
            if val > 255 or val < -1:
                raise sock_oserror(errno.EINVAL)
            self.mcast_hops = 1 if val == -1 else val
        elif optname == IPV6_MULTICAST_LOOP:
            if val not in (0, 1):
                raise sock_oserror(errno.EINVAL)
            self.mc_loop = bool(val)
        elif optname == IPV6_MULTICAST_IF:
            if val and self.net.dev_get_by_index(val) is None:
                raise sock_oserror(errno.ENODEV)
            if self.sk_bound_dev_if and val and val != self.sk_bound_dev_if:
                raise sock_oserror(errno.EINVAL)
            self.mcast_oif = val
        elif optname == IPV6_UNICAST_IF:
            ifindex = int.from_bytes(val.to_bytes(4, "little", signed=True), "big", signed=True)
            if ifindex and self.net.dev_get_by_index(ifindex) is None:
                raise sock_oserror(errno.EADDRNOTAVAIL)
            self.ucast_oif = ifindex
        elif optname == IPV6_MTU_DISCOVER:
            if val < 0 or val > IPV6_PMTUDISC_OMIT:
                raise sock_oserror(errno.EINVAL)
            self.pmtudisc6 = val
        elif optname == IPV6_MTU:
            if val and val < 1280:
                raise sock_oserror(errno.EINVAL)
            self.frag_size = val
        elif optname == IPV6_RECVERR:
            self.recverr6 = bool(val)
            if not val:
                self.error_queue.clear()
        elif optname == IPV6_V6ONLY:
            if self.inet_num:
                raise sock_oserror(errno.EINVAL)
            self.ipv6only = bool(val)
        elif optname == IPV6_DONTFRAG:
            self.dontfrag = bool(val)
        elif optname == IPV6_RECVHOPLIMIT:
            self.recvhoplimit = bool(val)
        elif optname == IPV6_RECVTCLASS:
            self.recvtclass = bool(val)
        elif optname == IPV6_RECVPKTINFO:
            self.recvpktinfo = bool(val)
        elif optname == IPV6_TCLASS:
            if val < -1 or val > 0xFF:
                raise sock_oserror(errno.EINVAL)
            self.tclass6 = 0 if val == -1 else val
        elif optname == IPV6_AUTOFLOWLABEL:
            self.autoflowlabel = int(bool(val))
        else:
            raise sock_oserror(errno.ENOPROTOOPT)

    @kernel("net/ipv6/ipv6_sockglue.c", "do_ipv6_getsockopt")
    def _ipv6_get(self, optname: int) -> int:
        """Kernel: net/ipv6/ipv6_sockglue.c, do_ipv6_getsockopt()."""
        if optname == IPV6_UNICAST_HOPS:
            if self.hop_limit >= 0:
                return self.hop_limit
            dst = self.dst_cache
            if dst is not None:
                from netstack.ipv6.ip6_output import ip6_dst_hoplimit

                return ip6_dst_hoplimit(dst)
            return int(self.ipv6.devconf_all.hop_limit)
        if optname == IPV6_MULTICAST_HOPS:
            return self.mcast_hops
        if optname == IPV6_MULTICAST_LOOP:
            return int(self.mc_loop)
        if optname == IPV6_MULTICAST_IF:
            return self.mcast_oif
        if optname == IPV6_UNICAST_IF:
            return self.ucast_oif
        if optname == IPV6_MTU_DISCOVER:
            return self.pmtudisc6
        if optname == IPV6_MTU:
            dst = self.dst_cache
            if dst is None or self.state != 1:
                raise sock_oserror(errno.ENOTCONN)
            return int(dst.mtu())
        if optname == IPV6_RECVERR:
            return int(self.recverr6)
        if optname == IPV6_V6ONLY:
            return int(self.ipv6only)
        if optname == IPV6_DONTFRAG:
            return int(self.dontfrag)
        if optname == IPV6_RECVHOPLIMIT:
            return int(self.recvhoplimit)
        if optname == IPV6_RECVTCLASS:
            return int(self.recvtclass)
        if optname == IPV6_RECVPKTINFO:
            return int(self.recvpktinfo)
        if optname == IPV6_TCLASS:
            return self.tclass6
        if optname == IPV6_AUTOFLOWLABEL:
            return int(ip6_autoflowlabel(self.ipv6, self.autoflowlabel))
        raise sock_oserror(errno.ENOPROTOOPT)

    @kernel("net/ipv6/mcast.c", "ipv6_sock_mc_join", "ipv6_sock_mc_drop")
    def _membership(self, join: bool, value: int | bytes) -> None:
        """``IPV6_JOIN_GROUP``/``IPV6_LEAVE_GROUP`` with a ``struct ipv6_mreq``.

        Kernel: net/ipv6/mcast.c, ipv6_sock_mc_join() / ipv6_sock_mc_drop().
        """
        if not isinstance(value, bytes | bytearray) or len(value) < 20:
            raise sock_oserror(errno.EINVAL)
        group = int.from_bytes(value[:16], "big")
        ifindex = int.from_bytes(value[16:20], "little")
        if group >> 120 != 0xFF:
            raise sock_oserror(errno.EINVAL)
        addrconf = self.ipv6.addrconf
        if join:
            if (group, ifindex) in self.mc_groups:
                raise sock_oserror(errno.EADDRINUSE)
            if ifindex:
                dev = self.net.dev_get_by_index(ifindex)
            else:
                from netstack.ipv6.route import Flowi6

                rt = self.ipv6.ip6_route_output(Flowi6(group))
                dev = rt.dev if not rt.error else None
                rt.release()
                ifindex = dev.ifindex if dev is not None else 0
            if dev is None or dev.ip6_ptr is None:
                raise sock_oserror(errno.ENODEV)
            addrconf.ipv6_dev_mc_inc(dev, group)
            self.mc_groups.append((group, ifindex))
            return
        for g, i in list(self.mc_groups):
            if g == group and (not ifindex or i == ifindex):
                self.mc_groups.remove((g, i))
                dev = self.net.dev_get_by_index(i)
                if dev is not None and dev.ip6_ptr is not None:
                    addrconf.ipv6_dev_mc_dec(dev.ip6_ptr, group)
                return
        raise sock_oserror(errno.EADDRNOTAVAIL)

    @kernel("inet6_mc_check")
    def inet6_mc_check(self, group: int) -> bool:
        """May this socket receive *group*?

        Kernel: inet6_mc_check().
        """
        if not self.mc_groups:
            return self.mc_all
        return any(g == group for g, _ in self.mc_groups)

    def close(self) -> None:
        addrconf = self.ipv6.addrconf
        for group, ifindex in self.mc_groups:
            dev = self.net.dev_get_by_index(ifindex)
            if dev is not None and dev.ip6_ptr is not None:
                addrconf.ipv6_dev_mc_dec(dev.ip6_ptr, group)
        self.mc_groups.clear()
        super().close()

    # -- helpers -----------------------------------------------------------------------------
    @kernel("ip6_sk_ignore_df")
    def ip6_sk_ignore_df(self) -> bool:
        """Kernel: ip6_sk_ignore_df()."""
        return self.pmtudisc6 < IPV6_PMTUDISC_DO or self.pmtudisc6 == IPV6_PMTUDISC_OMIT

    @kernel("ip6_sk_accept_pmtu")
    def ip6_sk_accept_pmtu(self) -> bool:
        """Kernel: ip6_sk_accept_pmtu()."""
        return self.pmtudisc6 not in (IPV6_PMTUDISC_INTERFACE, IPV6_PMTUDISC_OMIT)

    @kernel("ipv6_iface_scope_id")
    def scope_for(self, addr: int, ifindex: int) -> int:
        """The scope id reported for *addr* received on *ifindex*.

        Kernel: ipv6_iface_scope_id().
        """
        return ifindex if ipv6_addr_needs_scope_id(ipv6_addr_type(addr)) else 0
