"""``Ipv4``: the per-Net state of the IPv4 family (``net->ipv4``).

Theory of operation: one :class:`Ipv4` per Net, built by
:func:`~netstack.ipv4.af_inet.inet_init` and reachable as ``net.ipv4``,
holds what the kernel keeps in ``struct netns_ipv4`` — the sysctl values,
the FIB, the ARP table, the fragment queues, the UDP and ping tables, the
MIBs — plus the protocol tables (``inet_protos``, ``inet_offloads``). It is
also the composition point of the family: the route code reaches
``ip_output``/``ip_local_deliver``/``ip_forward`` through it, so the
modules of this package do not import each other in a circle; device
events (``inetdev_event``, ``fib_netdev_event``, ``arp_netdev_event``)
arrive at :meth:`Ipv4.netdev_event`.

Kernel: include/net/netns/ipv4.h (struct netns_ipv4), include/net/protocol.h
(struct net_protocol), net/ipv4/devinet.c (inetdev_event),
net/ipv4/fib_frontend.c (fib_netdev_event).
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from types import MethodType
from typing import TYPE_CHECKING, Any

from netstack.core.dev import (
    NETDEV_CHANGE,
    NETDEV_CHANGEADDR,
    NETDEV_CHANGEMTU,
    NETDEV_CHANGENAME,
    NETDEV_DOWN,
    NETDEV_NOTIFY_PEERS,
    NETDEV_REGISTER,
    NETDEV_UNREGISTER,
    NETDEV_UP,
)
from netstack.core.inetpeer import InetPeerBase
from netstack.core.net import PacketType
from netstack.core.netdevice import IFF_LOOPBACK
from netstack.core.skbuff import DropReason, SkBuff, kfree_skb
from netstack.core.snmp import MibSnapshot, UdpMib
from netstack.core.sock import SOCK_DGRAM, SOCK_RAW, SOCK_STREAM, Sock, sock_oserror
from netstack.errors import ConfigError
from netstack.gro.core import NetOffload
from netstack.ipv4 import arp as _arp
from netstack.ipv4 import icmp as _icmp
from netstack.ipv4 import igmp as _igmp
from netstack.ipv4 import ip_input as _in
from netstack.ipv4 import ip_output as _out
from netstack.ipv4 import ping as _ping
from netstack.ipv4 import route as _route
from netstack.ipv4 import udp as _udp
from netstack.ipv4.devinet import DevConf, InDevice, InIfaddr
from netstack.ipv4.fib import Fib
from netstack.ipv4.ip_fragment import IpFrags
from netstack.ipv4.snmp import IcmpMib, IcmpMsgMib, IpExtMib, IpMib
from netstack.ipv4.sysctl_net_ipv4 import devinet_sysctl_register
from netstack.neigh.neighbour import neigh_sysctl_register, neigh_sysctl_unregister
from netstack.sites import TIMED, kernel, spend
from netstack.wire.ethernet import ETH_P_ARP, ETH_P_IP
from netstack.wire.icmp import ICMP_REDIR_HOST, ICMP_REDIRECT
from netstack.wire.ipv4 import INADDR_LOOPBACK, IPPROTO_ICMP, IPPROTO_TCP, IPPROTO_UDP, ntoa
from netstack.wire.rtnetlink import IFA_F_PERMANENT, RT_SCOPE_HOST, RT_SCOPE_UNIVERSE, RTN_LOCAL

if TYPE_CHECKING:
    from netstack.core.inetpeer import InetPeer
    from netstack.core.net import Net
    from netstack.core.netdevice import NetDevice
    from netstack.ipv4.route import Flowi4, Rtable

__all__ = ["InetProtocol", "Ipv4"]


class InetProtocol:
    """A transport protocol's entry in ``inet_protos`` (kernel: ``struct net_protocol``).

    A plain slotted class rather than an attrs one: ``ip_rcv`` reads ``handler``
    of every delivered datagram's protocol, natively in the optional mypyc build
    (which keeps a decorated class a Python class: a generic read).

    Twin: netstack.ipv6.netns.Inet6Protocol.
    """

    __slots__ = ("err_handler", "handler")

    handler: Callable[[SkBuff], object]  # consumes the skb
    err_handler: Callable[[SkBuff, int], object] | None  # (skb, info): an ICMP error

    def __init__(
        self,
        handler: Callable[[SkBuff], object],
        err_handler: Callable[[SkBuff, int], object] | None = None,
    ) -> None:
        self.handler = handler
        self.err_handler = err_handler

    def __repr__(self) -> str:
        return f"InetProtocol(handler={self.handler!r}, err_handler={self.err_handler!r})"


class Ipv4:
    """The IPv4 stack of one Net (kernel: ``struct netns_ipv4`` and friends).

    Twin: netstack.ipv6.netns.Ipv6.
    """

    # Slotted (a lab holds thousands of these); the __dict__ slot takes what is
    # set only later or from outside.
    __slots__ = (
        "__dict__",
        "_loopback",
        "addr_listeners",
        "arp_invalid",
        "arp_out",
        "arp_packet_type",
        "arp_rcv_func",
        "arp_tbl",
        "devconf_all",
        "devconf_dflt",
        "dst_forward",
        "dst_local_deliver",
        "dst_mc_output",
        "dst_output",
        "fib",
        "fnhe_created",
        "frags",
        "icmp_echo_ignore_all",
        "icmp_echo_ignore_broadcasts",
        "icmp_errors_use_inbound_ifaddr",
        "icmp_global_credit",
        "icmp_global_stamp",
        "icmp_ignore_bogus_error_responses",
        "icmp_mib",
        "icmp_msgs_burst",
        "icmp_msgs_per_sec",
        "icmp_protocol",
        "icmp_ratelimit",
        "icmp_ratemask",
        "icmp_rcv_func",
        "icmpmsg",
        "idents",
        "in_brd",
        "in_martian_dst",
        "in_martian_src",
        "in_no_route",
        "inet_addr_lst",
        "inet_offloads",
        "inet_protos",
        "ip",
        "ip_default_ttl",
        "ip_fwd_update_priority",
        "ip_fwd_use_pmtu",
        "ip_local_port_range",
        "ip_no_pmtu_disc",
        "ip_nonlocal_bind",
        "ip_packet_type",
        "ip_rcv_func",
        "ip_rt_gc_timeout",
        "ip_rt_min_pmtu",
        "ip_rt_mtu_expires",
        "ipext",
        "ipfrag_high_thresh",
        "ipfrag_low_thresh",
        "ipfrag_time",
        "net",
        "nf_prerouting",
        "peers",
        "ping_group_range",
        "ping_table",
        "raw_sockets",
        "rt_genid",
        "udp_mib",
        "udp_protocol",
        "udp_rcv_func",
        "udp_table",
    )

    def __init__(self, net: Net) -> None:
        self.net = net
        # NF_INET_PRE_ROUTING (net->nf.hooks_ipv4): a verdict per received datagram,
        # False = NF_DROP; None when no hook is registered (the lab's partitions use it)
        self.nf_prerouting: Callable[[SkBuff], bool] | None = None
        # sysctls (net/ipv4/sysctl_net_ipv4.c defaults)
        self.ip_default_ttl = 64
        self.ip_no_pmtu_disc = 0
        self.ip_nonlocal_bind = 0
        self.ip_local_port_range = (32768, 60999)
        self.ip_fwd_update_priority = 1
        self.ip_fwd_use_pmtu = 0  # net.ipv4.ip_forward_use_pmtu
        self.icmp_echo_ignore_all = 0
        self.icmp_echo_ignore_broadcasts = 1
        self.icmp_ignore_bogus_error_responses = 1
        self.icmp_errors_use_inbound_ifaddr = 0
        self.icmp_ratelimit = 1000  # ms
        self.icmp_ratemask = 0x1818
        self.icmp_msgs_per_sec = 1000
        self.icmp_msgs_burst = 50
        self.ipfrag_high_thresh = 4 * 1024 * 1024
        self.ipfrag_low_thresh = 3 * 1024 * 1024
        self.ipfrag_time = 30
        self.ip_rt_min_pmtu = 552  # net.ipv4.route.min_pmtu (512 + 20 + 20)
        self.ip_rt_mtu_expires = 600  # net.ipv4.route.mtu_expires, seconds
        self.ip_rt_gc_timeout = 300  # net.ipv4.route.gc_timeout: a redirect's lifetime
        self.ping_group_range = (0, 2147483647)
        # state
        self.devconf_all = DevConf()
        self.devconf_dflt = DevConf()
        self.rt_genid = 0
        self.ip = IpMib()
        self.ipext = IpExtMib()
        self.icmp_mib = IcmpMib()
        self.icmpmsg = IcmpMsgMib()
        self.udp_mib = UdpMib()
        self.in_no_route = 0
        self.in_brd = 0
        self.in_martian_src = 0
        self.in_martian_dst = 0
        self.arp_out = 0
        self.arp_invalid = 0
        self.icmp_global_credit = 0
        self.icmp_global_stamp = -60 * net.clock.hz  # "long ago": the first call refills
        self.peers = InetPeerBase(net)  # net->ipv4.peers
        self.fnhe_created = 0  # next-hop exceptions created (PMTU, redirects)
        self.inet_addr_lst: dict[int, list[InIfaddr]] = {}  # local addresses (inet_addr_lst)
        self.inet_protos: dict[int, InetProtocol] = {}
        self.inet_offloads: dict[int, NetOffload] = {}  # GRO/GSO per IP protocol
        self.fib = Fib(self)
        self.frags = IpFrags(self)
        self.idents = _out.IpIdents(self)
        self.udp_table = _udp.UdpTable(self)
        self.ping_table = _ping.PingTable(self)
        self.arp_tbl = _arp.make_arp_tbl(self)
        self.addr_listeners: list[Any] = []
        self._loopback: NetDevice | None = None
        self.raw_sockets = 0
        # dst input/output functions as partials: one Python frame per hop
        self.dst_output = MethodType(_out.ip_output, self)  # ip_output
        self.dst_mc_output = MethodType(_out.ip_mc_output, self)  # ip_mc_output
        self.dst_local_deliver = MethodType(_in.ip_local_deliver, self)
        self.dst_forward = MethodType(_in.ip_forward, self)
        # the family's receive handlers, which inet_init registers (kernel: af_inet.c's
        # ip_packet_type, icmp_protocol, udp_protocol and arp.c's arp_packet_type,
        # statics there; bound to this namespace here). The optional compiled build
        # calls ip_rcv, arp_rcv, udp_rcv and icmp_rcv directly when the handler is one
        # of these (INDIRECT_CALL_INET and INDIRECT_CALL_2 in the kernel)
        # (the INDIRECT_CALL macros compare the function pointer, not the struct that
        # holds it: the build compares a handler with these bound methods, so one set
        # on a packet type or protocol later is called, as in the pure package)
        self.ip_rcv_func = MethodType(_in.ip_rcv, self)
        self.arp_rcv_func = MethodType(_arp.arp_rcv, self)
        self.icmp_rcv_func = MethodType(_icmp.icmp_rcv, self)
        self.udp_rcv_func = MethodType(_udp.udp_rcv, self)
        self.ip_packet_type = PacketType(ETH_P_IP, self.ip_rcv_func, name="ip_rcv")
        self.arp_packet_type = PacketType(ETH_P_ARP, self.arp_rcv_func, name="arp_rcv")
        self.icmp_protocol = InetProtocol(self.icmp_rcv_func, MethodType(_ping.ping_err, self))
        self.udp_protocol = InetProtocol(self.udp_rcv_func, MethodType(_udp.udp_err, self))

    # -- offloads (net/ipv4/protocol.c) ---------------------------------------------
    @kernel("net/ipv4/protocol.c", "inet_add_offload")
    def inet_add_offload(self, proto: int, offload: NetOffload) -> None:
        """Register GRO/GSO callbacks for IP protocol *proto* (first one wins).

        Kernel: net/ipv4/protocol.c, inet_add_offload().
        """
        if proto in self.inet_offloads:
            raise ConfigError(f"IP protocol {proto} already has an offload", errno.EEXIST)
        self.inet_offloads[proto] = offload

    @kernel("net/ipv4/protocol.c", "inet_del_offload")
    def inet_del_offload(self, proto: int, offload: NetOffload) -> None:
        """Kernel: net/ipv4/protocol.c, inet_del_offload()."""
        if self.inet_offloads.get(proto) is offload:
            del self.inet_offloads[proto]

    # -- the functions other modules reach through the family ----------------------
    def ip_output(self, skb: SkBuff) -> int:
        return _out.ip_output(self, skb)

    def ip_mc_output(self, skb: SkBuff) -> int:
        return _out.ip_mc_output(self, skb)

    def ip_local_deliver(self, skb: SkBuff) -> int:
        return _in.ip_local_deliver(self, skb)

    def ip_forward(self, skb: SkBuff) -> int:
        return _in.ip_forward(self, skb)

    def ip_error(self, skb: SkBuff) -> int:
        return _route.ip_error(self, skb)

    def dst_discard_in(self, skb: SkBuff) -> int:
        kfree_skb(skb, DropReason.NOT_SPECIFIED)
        return 0

    @kernel("ip_rt_bug")
    def ip_rt_bug(self, skb: SkBuff) -> int:
        """Output through an input route. Kernel: ip_rt_bug()."""
        if self.net.net_ratelimit():  # net_dbg_ratelimited()
            self.net.log.warning("ip_rt_bug")
        kfree_skb(skb, DropReason.NOT_SPECIFIED)
        return 0

    def icmp_send(self, skb: SkBuff, icmp_type: int, code: int, info: int) -> None:
        _icmp.icmp_send(self, skb, icmp_type, code, info)

    def ip_route_output_key(self, fl4: Flowi4) -> Rtable | int:
        return _route.ip_route_output_key(self, fl4)

    def ip_route_output(self, daddr: int, saddr: int = 0) -> Rtable | int:
        return _route.ip_route_output(self, daddr, saddr)

    def ip_route_input_noref(
        self, skb: SkBuff, daddr: int, saddr: int, tos: int, dev: NetDevice
    ) -> int:
        return _route.ip_route_input_noref(self, skb, daddr, saddr, tos, dev)

    def ipv4_link_failure(self, skb: SkBuff) -> None:
        _route.ipv4_link_failure(self, skb)

    def ping_rcv(self, skb: SkBuff) -> bool | None:
        return _ping.ping_rcv(self, skb)

    @kernel("raw_local_deliver")
    def raw_local_deliver(self, skb: SkBuff, protocol: int) -> bool:
        """Copies to raw sockets (none in this foundation). Kernel: raw_local_deliver()."""
        return False

    @kernel("raw_icmp_error")
    def raw_icmp_error(self, skb: SkBuff, protocol: int, info: int) -> None:
        """Kernel: raw_icmp_error()."""

    @property
    def loopback_dev(self) -> NetDevice:
        lo = self._loopback
        if lo is None:
            lo = self.net.dev_get_by_index(1)
            if lo is None:
                raise RuntimeError(f"{self.net.name}: no loopback device")
            self._loopback = lo
        return lo

    @kernel("rt_cache_flush")
    def rt_cache_flush(self) -> None:
        """Invalidate every cached route. Kernel: rt_cache_flush() (rt_genid_bump_ipv4)."""
        self.rt_genid += 1

    @kernel("net/ipv4/fib_frontend.c", "fib_disable_ip", "net/ipv4/arp.c", "arp_ifdown")
    def fib_disable_ip(self, dev: NetDevice) -> None:
        """The last IPv4 address of *dev* went: IP is off on it.

        Every route through *dev* dies (``fib_sync_down_dev`` with *force*:
        static routes too), cached routes are invalidated, and the ARP
        entries of *dev* are flushed, permanent ones included
        (``arp_ifdown`` → ``neigh_ifdown``), as ``fib_inetaddr_event``'s
        NETDEV_DOWN does when ``ifa_list`` is left empty.

        Kernel: net/ipv4/fib_frontend.c, fib_disable_ip(); net/ipv4/arp.c, arp_ifdown().
        """
        self.fib.fib_sync_down_dev(dev, unregister=True)
        self.rt_cache_flush()
        self.arp_tbl.neigh_ifdown(dev)

    @kernel("__ip_dev_find")
    def ip_dev_find(self, addr: int) -> NetDevice | None:
        """The device owning local address *addr*. Kernel: __ip_dev_find()."""
        if TIMED:
            spend("__ip_dev_find")
        ifas = self.inet_addr_lst.get(addr)
        if ifas:
            return ifas[0].dev
        fa = self.fib.local.lookup(addr)
        if fa is not None and fa.type == RTN_LOCAL and fa.dst_len == 32 and fa.fi.nh is not None:
            return fa.fi.nh.dev
        return None

    @kernel("include/net/inetpeer.h", "inet_getpeer_v4")
    def inet_getpeer(self, daddr: int) -> InetPeer:
        """Kernel: include/net/inetpeer.h, inet_getpeer_v4()."""
        return self.peers.inet_getpeer(daddr)

    def ip_saddr(self, skb: SkBuff) -> int:
        nh = skb.network_header
        b = skb.buf
        return (b[nh + 12] << 24) | (b[nh + 13] << 16) | (b[nh + 14] << 8) | b[nh + 15]

    @kernel("ip_handle_martian_source")
    def martian_source(self, skb: SkBuff, daddr: int, saddr: int, dev: NetDevice) -> None:
        """Kernel: ip_handle_martian_source()."""
        self.in_martian_src += 1
        in_dev = dev.ip_ptr
        if in_dev is not None and in_dev.orconf("log_martians") and self.net.net_ratelimit():
            self.net.log.info("martian_source", dst=ntoa(daddr), src=ntoa(saddr), dev=dev.name)

    def martian_destination(self, skb: SkBuff, daddr: int, saddr: int, dev: NetDevice) -> None:
        self.in_martian_dst += 1
        in_dev = dev.ip_ptr
        if in_dev is not None and in_dev.orconf("log_martians") and self.net.net_ratelimit():
            self.net.log.info("martian_destination", dst=ntoa(daddr), src=ntoa(saddr), dev=dev.name)

    @kernel("net/ipv4/route.c", "ipv4_sk_update_pmtu")
    def ipv4_sk_update_pmtu(self, sk: Sock, daddr: int, mtu: int) -> None:
        """An ICMP frag-needed quoting a socket's datagram to *daddr* (UDP, ping, raw).

        The exception is learnt on a route for *daddr*; a connected socket
        whose cached route went stale with it gets a fresh one (so IP_MTU
        reports the new path MTU at once).

        Kernel: net/ipv4/route.c, ipv4_sk_update_pmtu().
        """
        odst = sk.dst_cache if sk.inet_daddr == daddr else None
        flow = _route.Flowi4(daddr, sk.inet_saddr, oif=sk.sk_bound_dev_if)
        if odst is None:  # __ipv4_sk_update_pmtu()
            rt = _route.ip_route_output_key(self, flow)
            if isinstance(rt, int):
                return
            _route.ip_rt_update_pmtu(self, rt, daddr, mtu, flow.saddr, flow.oif)
            rt.release()
            return
        rt = odst
        new = False
        if not rt.valid():
            found = _route.ip_route_output_key(self, flow)
            if isinstance(found, int):
                return
            rt, new = found, True
        _route.ip_rt_update_pmtu(self, rt, daddr, mtu, flow.saddr, flow.oif)
        if not rt.valid():
            if new:
                rt.release()
            found = _route.ip_route_output_key(self, flow)
            if isinstance(found, int):
                return
            rt, new = found, True
        if new:  # sk_dst_set()
            odst.release()
            sk.dst_cache = rt

    @kernel("__ip_do_redirect")
    def ip_do_redirect(
        self, daddr: int, old_gw: int, new_gw: int, dev: NetDevice, saddr: int = 0
    ) -> None:
        """Accept an ICMP redirect about the quoted flow *saddr* → *daddr*.

        The FIB is asked as for that flow (``__build_flow_key``: its source,
        the receiving device as oif, loopback as input device), so ``ip rule``
        picks the table the flow's route came from. Kernel: __ip_do_redirect().
        """
        lo = self.loopback_dev.ifindex
        res = self.fib.lookup(daddr, dev.ifindex, RT_SCOPE_UNIVERSE, saddr, lo)
        if res is None or res.nh is None or res.nh.gw != old_gw or res.nh.dev is not dev:
            return
        in_dev = dev.ip_ptr
        if in_dev is None or not any(ifa.match(new_gw) for ifa in in_dev.primaries()):
            return
        if self.fib.inet_addr_type(new_gw, dev) != 1:
            return
        expires = self.net.clock.jiffies + self.ip_rt_gc_timeout * self.net.clock.hz
        fnhe = _route.update_or_create_fnhe(self, res.nh, daddr, new_gw, 0, False, expires)
        _route.fnhe_flush_routes(fnhe)
        self.rt_cache_flush()

    @kernel("ip_rt_send_redirect")
    def ip_rt_send_redirect(self, skb: SkBuff) -> None:
        """Tell the sender of *skb* about a better first hop. Kernel: ip_rt_send_redirect()."""
        rt: Any = skb.dst
        hz = self.net.clock.hz
        now = self.net.clock.jiffies
        peer = self.inet_getpeer(self.ip_saddr(skb))
        load = max(hz // 50, 1)
        silence = load << (9 + 1)
        if now > peer.rate_last + silence:
            peer.rate_tokens = 0
            peer.n_redirects = 0
        if peer.n_redirects >= _route.IP_RT_REDIRECT_NUMBER:
            peer.rate_last = now
            return
        if peer.n_redirects == 0 or now > peer.rate_last + (load << peer.n_redirects):
            nh = skb.network_header
            b = skb.buf
            daddr = (b[nh + 16] << 24) | (b[nh + 17] << 16) | (b[nh + 18] << 8) | b[nh + 19]
            self.icmp_send(skb, ICMP_REDIRECT, ICMP_REDIR_HOST, rt.nexthop(daddr))
            peer.rate_last = now
            peer.n_redirects += 1

    # -- addresses -------------------------------------------------------------------------
    def in_dev(self, dev: NetDevice) -> InDevice:
        in_dev: InDevice | None = dev.ip_ptr
        if in_dev is None:
            raise ConfigError(f'Cannot find device "{dev.name}"', errno.ENODEV)
        return in_dev

    @kernel("inet_rtm_newaddr")
    def add_address(
        self,
        dev: NetDevice,
        local: int,
        prefixlen: int,
        *,
        broadcast: int = 0,
        peer: int | None = None,
        scope: int | None = None,
        label: str | None = None,
        noprefixroute: bool = False,
        metric: int = 0,
    ) -> InIfaddr:
        """``ip addr add``. Kernel: inet_rtm_newaddr()."""
        if not 0 <= prefixlen <= 32:
            raise ConfigError("RTNETLINK answers: Invalid argument", errno.EINVAL)
        flags = IFA_F_PERMANENT | (0x200 if noprefixroute else 0)
        ifa = InIfaddr(
            dev,
            local,
            prefixlen,
            peer=peer,
            broadcast=broadcast,
            scope=scope,
            label=label,
            flags=flags,
            metric=metric,
        )
        self.in_dev(dev).insert_ifa(ifa)
        return ifa

    @kernel("inet_rtm_deladdr")
    def del_address(self, dev: NetDevice, local: int, prefixlen: int | None) -> None:
        """``ip addr del``. Kernel: inet_rtm_deladdr()."""
        in_dev = self.in_dev(dev)
        for ifa in in_dev.ifa_list:
            if ifa.ifa_local == local and (prefixlen is None or ifa.ifa_prefixlen == prefixlen):
                in_dev.delete_ifa(ifa)
                return
        raise ConfigError("RTNETLINK answers: Cannot assign requested address", errno.EADDRNOTAVAIL)

    def notify_addr(self, ifa: InIfaddr, added: bool) -> None:
        lst = self.inet_addr_lst.setdefault(ifa.ifa_local, [])
        if added:
            lst.append(ifa)
        else:
            if ifa in lst:
                lst.remove(ifa)
            if not lst:
                del self.inet_addr_lst[ifa.ifa_local]
        for fn in self.addr_listeners:
            fn(ifa, added)

    @kernel("fib_validate_source")
    def fib_validate_source(self, saddr: int, dev: NetDevice, in_dev: InDevice) -> int:
        """A packet arrived with one of our own addresses as source: martian
        unless ``accept_local``. Kernel: fib_validate_source() (rp_filter 0)."""
        if TIMED:
            spend("fib_validate_source")
        if in_dev.orconf("accept_local"):
            return 0
        return -errno.EINVAL if saddr in self.inet_addr_lst else 0

    # -- sockets -------------------------------------------------------------------------
    @kernel("inet_create")
    def socket(self, sock_type: int, protocol: int) -> Sock:
        """Create a protocol socket. Kernel: inet_create() over inetsw."""
        if sock_type == SOCK_DGRAM and protocol in (0, IPPROTO_UDP):
            return _udp.UdpSock(self)
        if sock_type == SOCK_DGRAM and protocol == IPPROTO_ICMP:
            low, high = self.ping_group_range
            if not low <= 0 <= high:
                raise sock_oserror(errno.EACCES)
            return _ping.PingSock(self)
        if sock_type == SOCK_STREAM and protocol in (0, IPPROTO_TCP):
            from netstack.ipv4.tcp_ipv4 import tcp_v4_socket

            return tcp_v4_socket(self)
        if sock_type == SOCK_RAW:
            raise sock_oserror(errno.EPROTONOSUPPORT)
        if sock_type == SOCK_DGRAM:
            raise sock_oserror(errno.EPROTONOSUPPORT)
        raise sock_oserror(errno.ESOCKTNOSUPPORT)

    # IPv4's UDP, as the kernel exports it to IPv6 for dual-stack sockets
    # (AF_INET6 sockets and ``::ffff:a.b.c.d`` peers; IPv6 cannot import IPv4)
    def udp_sendmsg(
        self,
        sk: Sock,
        data: bytes | bytearray | memoryview,
        dest: tuple[int, int] | None,
        flags: int,
    ) -> int:
        """IPv4's udp_sendmsg, for udpv6_sendmsg (the module function is the mirror)."""
        return _udp.udp_sendmsg(self, sk, data, dest, flags)

    def ip4_datagram_connect(self, sk: Sock, addr: int, port: int) -> None:
        """IPv4's __ip4_datagram_connect, for __ip6_datagram_connect (see ipv4/udp.py)."""
        _udp.ip4_datagram_connect(self, sk, addr, port)

    def udp_csum_ok(self, skb: SkBuff) -> bool:
        """IPv4's udp_lib_checksum_complete, for udpv6_recvmsg's IPv4 datagrams."""
        return _udp.udp_csum_ok(skb)

    # ICMP's global rate limit and the address type, as the kernel exports them to IPv6
    def icmp_global_allow(self) -> bool:
        """IPv4's icmp_global_allow (one bucket per Net; icmpv6_global_allow draws on it)."""
        return _icmp.icmp_global_allow(self)

    def icmp_global_consume(self) -> None:
        """IPv4's icmp_global_consume, for icmpv6_xrlim_allow."""
        _icmp.icmp_global_consume(self)

    def inet_addr_type(self, addr: int) -> int:
        """IPv4's inet_addr_type, for __inet6_bind's v4-mapped addresses."""
        return self.fib.inet_addr_type(addr, None)

    # -- statistics -------------------------------------------------------------------------
    def snmp(self) -> dict[str, MibSnapshot]:
        """``/proc/net/snmp`` and ``/proc/net/netstat`` (IpExt) as snapshots."""
        ip = self.ip.snapshot()
        ip_values = dict(ip.values)
        ip_values["Forwarding"] = 1 if self.devconf_all.forwarding else 2
        ip_values["DefaultTTL"] = self.ip_default_ttl
        icmp = dict(self.icmp_mib.snapshot().values)
        from netstack.ipv4.snmp import ICMP_TYPE_COUNTERS

        for t, (in_name, out_name) in ICMP_TYPE_COUNTERS.items():
            icmp[in_name] = self.icmpmsg.in_types[t]
            icmp[out_name] = self.icmpmsg.out_types[t]
        return {
            "Ip": MibSnapshot("Ip", tuple(ip_values.items())),
            "Icmp": MibSnapshot("Icmp", tuple(icmp.items())),
            "IcmpMsg": self.icmpmsg.snapshot(),
            "Udp": self.udp_mib.snapshot(),
            "IpExt": self.ipext.snapshot(),
        }

    # -- multicast membership (netstack.ipv4.igmp) -----------------------------------------
    def ip_mc_setsockopt(self, sk: Sock, optname: int, optval: bytes) -> int:
        """IP_ADD_MEMBERSHIP / IP_DROP_MEMBERSHIP for a socket: 0 or -errno."""
        return _igmp.ip_mc_setsockopt(self, sk, optname, optval)

    def ip_mc_drop_socket(self, sk: Sock) -> None:
        """A socket with memberships closes."""
        _igmp.ip_mc_drop_socket(self, sk)

    # -- device events (inetdev_event, fib_netdev_event, arp_netdev_event) ----------------
    def netdev_event(self, event: int, dev: NetDevice) -> None:
        if event == NETDEV_REGISTER:
            dev.ip_ptr = InDevice(self, dev)
            self.arp_tbl.add_dev_parms(dev)
            self._register_dev_sysctls(dev)
        elif event == NETDEV_UP:
            if dev.flags & IFF_LOOPBACK:
                in_dev = self.in_dev(dev)
                if in_dev.ifa_for(INADDR_LOOPBACK, 8) is None:
                    in_dev.insert_ifa(InIfaddr(dev, INADDR_LOOPBACK, 8, scope=RT_SCOPE_HOST))
            _igmp.ip_mc_up(self.in_dev(dev))
            self.fib.fib_netdev_up(dev)
        elif event == NETDEV_DOWN:
            _igmp.ip_mc_down(self.in_dev(dev))
            self.fib.fib_sync_down_dev(dev, unregister=False)
            self.arp_tbl.neigh_ifdown(dev)
            self._flush_route_caches(dev)
        elif event == NETDEV_CHANGE:
            if dev.flags & 1:  # (netstack's dev_change_flags also tells a down device)
                self.fib.fib_sync_linkdown(dev, not dev.carrier)
                _arp.arp_netdev_event(self, event, dev)  # carrier lost: neigh_carrier_down
        elif event == NETDEV_CHANGEADDR:
            _arp.arp_netdev_event(self, event, dev)  # neigh_changeaddr, rt_cache_flush
        elif event == NETDEV_CHANGEMTU:
            # fib_netdev_event(NETDEV_CHANGEMTU): the exceptions first, then the cache
            self.fib.fib_sync_mtu(dev, self.net.notifier_ext_mtu)
            self.rt_cache_flush()
        elif event == NETDEV_NOTIFY_PEERS:
            _arp.arp_send_gratuitous(self, dev)
        elif event == NETDEV_CHANGENAME:
            in_dev = self.in_dev(dev)
            self.net.sysctl.unregister_prefix(f"net.ipv4.conf.{in_dev.conf_name}.")
            neigh_sysctl_unregister(self.arp_tbl, in_dev.conf_name)
            self._register_dev_sysctls(dev)
            for ifa in in_dev.ifa_list:
                if ifa.ifa_label == in_dev.conf_name:
                    ifa.ifa_label = dev.name
        elif event == NETDEV_UNREGISTER:
            gone = dev.ip_ptr
            if gone is not None:
                _igmp.ip_mc_destroy_dev(gone)
                for ifa in list(gone.ifa_list):
                    gone.delete_ifa(ifa)
                self.fib.fib_sync_down_dev(dev, unregister=True)
                self.net.sysctl.unregister_prefix(f"net.ipv4.conf.{gone.conf_name}.")
                neigh_sysctl_unregister(self.arp_tbl, gone.conf_name)
                gone.dead = True
            self.arp_tbl.neigh_ifdown(dev)
            self.arp_tbl.del_dev_parms(dev)
            dev.ip_ptr = None
            if dev is self._loopback:
                self._loopback = None

    def _flush_route_caches(self, dev: NetDevice) -> None:
        self.rt_cache_flush()

    # -- sysctls ---------------------------------------------------------------------------
    def _register_dev_sysctls(self, dev: NetDevice) -> None:
        in_dev = self.in_dev(dev)
        in_dev.conf_name = dev.name
        conf, neigh, s = f"net.ipv4.conf.{dev.name}", f"net.ipv4.neigh.{dev.name}", self.net.sysctl
        s.register_lazy(f"{conf}.", devinet_sysctl_register, self, conf, in_dev.cnf, dev)
        s.register_lazy(f"{neigh}.", neigh_sysctl_register, self.arp_tbl, dev)
