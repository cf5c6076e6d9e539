"""``Ipv6``: the per-Net state of the IPv6 family (``net->ipv6``).

Theory of operation: one :class:`Ipv6` per Net, built by
:func:`~netstack.ipv6.af_inet6.inet6_init` and reachable as ``net.ipv6``,
holds what the kernel keeps in ``struct netns_ipv6`` — the sysctl values,
fib6, ``nd_tbl``, addrconf, the fragment queues, the UDP, ping and raw
tables, the MIBs, ``ndisc_sk`` — plus the protocol tables
(``inet6_protos``, ``inet6_offloads``). It is the composition point of the
family: routes reach ``ip6_output``/``ip6_input``/``ip6_forward`` through
it, and the modules of this package (and other families, such as a SIT
tunnel) call the methods below instead of importing each other.

The IPv4 family is never imported: where the kernel's IPv6 code reads IPv4
state (the global ICMP rate limit, ``ping_group_range``, the IPv4
addresses a sit device derives link-locals from) it does so through
``net.ipv4`` and ``dev.ip_ptr``.

Kernel: include/net/netns/ipv6.h (struct netns_ipv6), include/net/protocol.h
(struct inet6_protocol), net/ipv6/addrconf.c (addrconf_notify),
net/ipv6/route.c.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from types import MethodType
from typing import TYPE_CHECKING, Any, Final

import attrs

from netstack.core.dev import (
    NETDEV_CHANGE,
    NETDEV_CHANGEADDR,
    NETDEV_CHANGENAME,
    NETDEV_DOWN,
    NETDEV_UNREGISTER,
    NETDEV_UP,
)
from netstack.core.inetpeer import InetPeerBase, inet_peer_xrlim_allow
from netstack.core.netdevice import IFF_LOOPBACK, IFF_UP
from netstack.core.skbuff import DropReason, SkBuff, kfree_skb
from netstack.core.snmp import MibSnapshot
from netstack.core.sock import SOCK_DGRAM, SOCK_RAW, SOCK_STREAM, Sock, sock_oserror
from netstack.errors import ConfigError
from netstack.ipv6 import icmp as _icmp
from netstack.ipv6 import ip6_input as _in
from netstack.ipv6 import ip6_output as _out
from netstack.ipv6 import ndisc as _ndisc
from netstack.ipv6 import ping as _ping
from netstack.ipv6 import raw as _raw
from netstack.ipv6 import route as _route
from netstack.ipv6 import udp as _udp
from netstack.ipv6.addrconf import Addrconf, DevConf6, Inet6Dev
from netstack.ipv6.constants import (
    IPV6_FRAG_TIMEOUT_S,
    RTF_ADDRCONF,
    RTF_ANYCAST,
    RTF_CACHE,
    RTF_DEFAULT,
    RTF_DYNAMIC,
    RTF_EXPIRES,
    RTF_GATEWAY,
    RTF_LOCAL,
    RTF_UP,
)
from netstack.ipv6.flowlabel import FlowHash
from netstack.ipv6.reassembly import Ip6Frags
from netstack.ipv6.snmp import UDP6_FIELDS, Icmp6Mib, Icmp6MsgMib, Ip6Mib, Udp6Mib
from netstack.ipv6.sysctl_net_ipv6 import addrconf_sysctl_register_conf
from netstack.neigh.neighbour import neigh_sysctl_register, neigh_sysctl_unregister
from netstack.sites import kernel
from netstack.wire.icmpv6 import ICMPV6_ADM_PROHIBITED, ICMPV6_NOROUTE
from netstack.wire.ipv6 import IPPROTO_ICMPV6, IPPROTO_UDP, IPV6_MIN_MTU, NEXTHDR_TCP, addr_at
from netstack.wire.rtnetlink import RT_TABLE_MAIN, RTNH_F_DEAD, RTNH_F_LINKDOWN

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetDevice
    from netstack.gro.core import NetOffload
    from netstack.ipv6.route import Fib6Info, Flowi6, Rt6Info

__all__ = ["Inet6Protocol", "Ipv6", "NdiscSock"]


INT_MAX: Final = 2**31 - 1
# "0-1,3-127": every error but Packet Too Big, and no informational type, is rate limited
ICMPV6_RATEMASK_DEFAULT: Final = sum(1 << t for t in (0, 1, *range(3, 128)))


@attrs.define(eq=False)
class Inet6Protocol:
    """A next header's entry in ``inet6_protos`` (kernel: ``struct inet6_protocol``).

    ``handler`` returns > 0 to resubmit (the next header follows), 0 when
    the packet was delivered, < 0 when it was consumed otherwise.

    Twin: netstack.ipv4.netns.InetProtocol.
    """

    handler: Callable[[SkBuff], int]
    # (skb, type, code, offset, info): an ICMPv6 error quoting this next header
    err_handler: Callable[[SkBuff, int, int, int, int], object] | None = None
    flags: int = 0


class NdiscSock:
    """The control socket ND messages are sent from (kernel: ``net->ipv6.ndisc_sk``).

    "Do not loopback ndisc messages": ``mc_loop`` is 0, so a host never
    receives its own multicast Neighbour Solicitations (ndisc_net_init()).
    """

    __slots__ = ("mc_loop", "net")

    def __init__(self, net: Net) -> None:
        self.net = net
        self.mc_loop = False


class Ipv6:
    """The IPv6 stack of one Net (kernel: ``struct netns_ipv6`` and friends).

    Twin: netstack.ipv4.netns.Ipv4.
    """

    # Slotted (a lab holds thousands of these); the __dict__ slot takes what is
    # set only later or from outside.
    __slots__ = (
        "__dict__",
        "_loopback",
        "addr_listeners",
        "addrconf",
        "anycast_src_echo_reply",
        "auto_flowlabels",
        "bindv6only",
        "devconf_all",
        "devconf_dflt",
        "dst_forward",
        "dst_local_deliver",
        "dst_mc_input",
        "dst_output",
        "fib6",
        "fib_multipath_hash_policy",
        "fib_rt_cache",
        "flow_hash",
        "flowlabel_consistency",
        "flowlabel_gen",
        "flowlabel_state_ranges",
        "frags",
        "fwmark_reflect",
        "icmp6_mib",
        "icmp6msg",
        "icmpv6_echo_ignore_all",
        "icmpv6_echo_ignore_anycast",
        "icmpv6_echo_ignore_multicast",
        "icmpv6_ratelimit",
        "icmpv6_ratemask",
        "idgen_delay",
        "idgen_retries",
        "inet6_offloads",
        "inet6_protos",
        "ip6_mib",
        "ip6_null_entry",
        "ip6_output_nd",
        "ip6_pkt_discard",
        "ip6_pkt_discard_out",
        "ip6_pkt_prohibit",
        "ip6_pkt_prohibit_out",
        "ip6_rt_gc_elasticity",
        "ip6_rt_gc_interval",
        "ip6_rt_gc_min_interval_ms",
        "ip6_rt_gc_thresh",
        "ip6_rt_gc_timeout",
        "ip6_rt_last_gc",
        "ip6_rt_max_size",
        "ip6_rt_min_advmss",
        "ip6_rt_mtu_expires",
        "ip6frag_high_thresh",
        "ip6frag_low_thresh",
        "ip6frag_time",
        "ip_nonlocal_bind",
        "max_dst_opts_length",
        "max_dst_opts_number",
        "max_hbh_length",
        "max_hbh_opts_number",
        "nd_tbl",
        "ndisc_sk",
        "net",
        "nf_prerouting",
        "peers",
        "ping_table",
        "ra_received",
        "raw_sockets",
        "reasm_overlaps",
        "rt6_genid",
        "skip_notify_on_dev_down",
        "udp6_mib",
        "udp_table",
    )

    def __init__(self, net: Net) -> None:
        self.net = net
        # NF_INET_PRE_ROUTING (net->nf.hooks_ipv6): a verdict per received datagram,
        # False = NF_DROP; None when no hook is registered (the lab's partitions use it)
        self.nf_prerouting: Callable[[SkBuff], bool] | None = None
        # sysctls (net/ipv6/sysctl_net_ipv6.c, icmp.c, route.c defaults)
        self.bindv6only = 0
        self.ip_nonlocal_bind = 0
        self.anycast_src_echo_reply = 0
        self.flowlabel_consistency = 1
        self.auto_flowlabels = 1
        self.fwmark_reflect = 0
        self.idgen_retries = 3
        self.idgen_delay = 1
        self.flowlabel_state_ranges = 0
        self.flow_hash = FlowHash(net.seed, net.name)  # the flow dissector's hashrnd
        self.flowlabel_gen = 0  # bumped when a sysctl changes what labels are made
        self.max_dst_opts_number = 8  # IP6_DEFAULT_MAX_DST_OPTS_CNT
        self.max_hbh_opts_number = 8
        self.max_dst_opts_length = INT_MAX
        self.max_hbh_length = INT_MAX
        self.fib_multipath_hash_policy = 0
        self.icmpv6_ratelimit = 1000  # ms
        self.icmpv6_ratemask = ICMPV6_RATEMASK_DEFAULT
        self.icmpv6_echo_ignore_all = 0
        self.icmpv6_echo_ignore_multicast = 0
        self.icmpv6_echo_ignore_anycast = 0
        self.ip6frag_high_thresh = 4 * 1024 * 1024
        self.ip6frag_low_thresh = 3 * 1024 * 1024
        self.ip6frag_time = IPV6_FRAG_TIMEOUT_S
        self.ip6_rt_gc_interval = 30  # seconds
        self.ip6_rt_gc_timeout = 60
        self.ip6_rt_gc_min_interval_ms = 500  # HZ / 2
        self.ip6_rt_last_gc = 0
        self.fib_rt_cache = 0  # rt6_stats: route exceptions (RTF_CACHE clones) in the tables
        self.ip6_rt_gc_elasticity = 9
        self.ip6_rt_gc_thresh = 1024
        self.ip6_rt_max_size = 4096
        self.ip6_rt_mtu_expires = 600  # seconds
        self.ip6_rt_min_advmss = IPV6_MIN_MTU - 20 - 40
        self.skip_notify_on_dev_down = 0
        # state
        self.devconf_all = DevConf6(is_all=True)
        self.devconf_dflt = DevConf6()
        self.rt6_genid = 0
        self.ip6_mib = Ip6Mib()
        self.icmp6_mib = Icmp6Mib()
        self.icmp6msg = Icmp6MsgMib()
        self.udp6_mib = Udp6Mib()
        self.ra_received = 0
        self.reasm_overlaps = 0
        self.peers = InetPeerBase(net)  # net->ipv6.peers: ICMPv6 rate-limit state
        self.ndisc_sk = NdiscSock(net)  # net->ipv6.ndisc_sk
        self.inet6_protos: dict[int, Inet6Protocol] = {}
        self.inet6_offloads: dict[int, NetOffload] = {}  # GRO/GSO per next header
        self.raw_sockets: list[_raw.Raw6Sock] = []
        self.addr_listeners: list[Any] = []
        self._loopback: NetDevice | None = None
        # dst input/output functions bound to the family: one Python frame per hop.
        # A bound method (MethodType) calls the function as a partial does, in
        # 64 bytes where a partial, its argument tuple and keyword dict take 190.
        self.dst_output = MethodType(_out.ip6_output, self)
        self.ip6_output_nd = self.dst_output
        self.dst_local_deliver = MethodType(_in.ip6_input, self)
        self.dst_mc_input = MethodType(_in.ip6_mc_input, self)
        self.dst_forward = MethodType(_in.ip6_forward, self)
        self.ip6_pkt_discard = MethodType(ip6_pkt_discard, self)
        self.ip6_pkt_discard_out = MethodType(ip6_pkt_discard_out, self)
        self.ip6_pkt_prohibit = MethodType(ip6_pkt_prohibit, self)
        self.ip6_pkt_prohibit_out = MethodType(ip6_pkt_prohibit_out, self)
        self.fib6 = _route.Fib6(self)
        self.ip6_null_entry = _route.make_null_entry(self)
        self.nd_tbl = _ndisc.make_nd_tbl(self)
        self.addrconf = Addrconf(self)
        self.frags = Ip6Frags(self)
        self.udp_table = _udp.Udp6Table(self)
        self.ping_table = _ping.Ping6Table(self)

    # -- offloads (net/ipv6/protocol.c) -------------------------------------------------
    @kernel("net/ipv6/protocol.c", "inet6_add_offload")
    def inet6_add_offload(self, proto: int, offload: NetOffload) -> None:
        """Register GRO/GSO callbacks for next header *proto* (first one wins).

        Kernel: net/ipv6/protocol.c, inet6_add_offload().
        """
        if proto in self.inet6_offloads:
            raise ConfigError(f"IPv6 next header {proto} already has an offload", errno.EEXIST)
        self.inet6_offloads[proto] = offload

    # -- dst functions --------------------------------------------------------------------
    def dst_discard_in(self, skb: SkBuff) -> int:
        kfree_skb(skb, DropReason.NOT_SPECIFIED)
        return 0

    def dst_discard_out(self, skb: SkBuff) -> int:
        kfree_skb(skb, DropReason.NOT_SPECIFIED)
        return 0

    # -- the functions other modules (and other families) reach through the family --------
    @kernel("icmpv6_send")
    def icmpv6_send(self, skb: SkBuff, icmp_type: int, code: int, info: int) -> None:
        """Send an ICMPv6 error about *skb* (not consumed).

        Kernel: icmpv6_send().
        """
        _icmp.icmp6_send(self, skb, icmp_type, code, info)

    @kernel("icmpv6_param_prob")
    def icmpv6_param_prob(self, skb: SkBuff, code: int, pos: int) -> None:
        """Parameter problem pointing at *pos*; frees *skb*.

        Kernel: icmpv6_param_prob().
        """
        _icmp.icmpv6_param_prob(self, skb, code, pos)

    def inet_peer_xrlim_allow(self, daddr: int, timeout: int) -> bool:
        """The peer of *daddr* (``inet_getpeer_v6``) through the shared token bucket."""
        return inet_peer_xrlim_allow(
            self.peers.inet_getpeer(daddr), timeout, self.net.clock.jiffies
        )

    def ip6_route_output(self, fl6: Flowi6, *, bound_dev_if: int = 0) -> Rt6Info:
        """A held route for a locally generated flow (the null entry if none)."""
        return _route.ip6_route_output(self, fl6, bound_dev_if=bound_dev_if)

    def ip6_route_input(self, skb: SkBuff) -> None:
        _route.ip6_route_input(self, skb)

    def ip6_dst_hoplimit(self, rt: Any) -> int:
        return _out.ip6_dst_hoplimit(rt)

    @kernel("net/ipv6/ip6_output.c", "ip6_dst_lookup_tail")
    def ip6_dst_lookup(self, fl6: Flowi6, *, bound_dev_if: int = 0) -> Rt6Info | int:
        """Route *fl6* and choose its source address; a held route or ``-errno``.

        Kernel: net/ipv6/ip6_output.c, ip6_dst_lookup_tail().
        """
        rt: Rt6Info | None = None
        if not fl6.saddr:
            rt = _route.ip6_route_output(self, fl6, bound_dev_if=bound_dev_if)
            f = rt.from_ if not rt.error else None
            saddr = _route.ip6_route_get_saddr(self, f, fl6.daddr)
            if saddr is None:
                rt.release()
                return -errno.EADDRNOTAVAIL
            fl6.saddr = saddr
            if rt.error:
                # "If we had an erroneous initial result, pretend it never
                # existed and let the SA-enabled version take over."
                rt.release()
                rt = None
        if rt is None:
            rt = _route.ip6_route_output(self, fl6, bound_dev_if=bound_dev_if)
        err = rt.error
        if not err and fl6.saddr >> 32 == 0xFFFF and fl6.daddr >> 32 != 0xFFFF and fl6.daddr:
            err = -errno.EAFNOSUPPORT  # a v4-mapped source cannot talk to a native IPv6 peer
        if err:
            rt.release()
            if err == -errno.ENETUNREACH:
                self.ip6_mib.OutNoRoutes += 1
            return err
        return rt

    @kernel("ipv6_chk_addr_and_flags")
    def ipv6_chk_addr(
        self, addr: int, dev: NetDevice | None, *, strict: bool = False, banned: int = 0x40
    ) -> bool:
        """Is *addr* one of ours?

        Kernel: ipv6_chk_addr_and_flags().
        """
        return self.addrconf.ipv6_chk_addr(addr, dev, strict=strict, banned=banned)

    @kernel("ipv6_dev_get_saddr")
    def ipv6_dev_get_saddr(self, dev: NetDevice | None, daddr: int, prefs: int = 0) -> int | None:
        """Source address selection (RFC 6724).

        Kernel: ipv6_dev_get_saddr().
        """
        return self.addrconf.ipv6_dev_get_saddr(dev, daddr, prefs)

    def ndisc_rcv(self, skb: SkBuff) -> int:
        return _ndisc.ndisc_rcv(self, skb)

    def ndisc_send_ns(
        self, dev: NetDevice, solicit: int, daddr: int, saddr: int | None, nonce: bytes = b""
    ) -> None:
        _ndisc.ndisc_send_ns(self, dev, solicit, daddr, saddr, nonce)

    def ndisc_send_na(
        self,
        dev: NetDevice,
        daddr: int,
        solicited_addr: int,
        *,
        router: bool,
        solicited: bool,
        override: bool,
        inc_opt: bool,
    ) -> None:
        _ndisc.ndisc_send_na(
            self,
            dev,
            daddr,
            solicited_addr,
            router=router,
            solicited=solicited,
            override=override,
            inc_opt=inc_opt,
        )

    def ndisc_send_rs(self, dev: NetDevice, saddr: int, daddr: int) -> None:
        _ndisc.ndisc_send_rs(self, dev, saddr, daddr)

    def ndisc_send_redirect(self, skb: SkBuff, target: int) -> None:
        _ndisc.ndisc_send_redirect(self, skb, target)

    def ping_rcv(self, skb: SkBuff) -> None:
        _ping.ping6_rcv(self, skb)

    def ping_err(self, skb: SkBuff, icmp_type: int, code: int, offset: int, info: int) -> None:
        _ping.ping6_err(self, skb, icmp_type, code, offset, info)

    @kernel("raw6_local_deliver")
    def raw_local_deliver(self, skb: SkBuff, nexthdr: int) -> bool:
        """Clones to matching raw sockets.

        Kernel: raw6_local_deliver().
        """
        if not self.raw_sockets:
            return False
        return _raw.raw6_local_deliver(self, skb, nexthdr)

    @kernel("raw6_icmp_error")
    def raw_icmp_error(
        self, skb: SkBuff, nexthdr: int, icmp_type: int, code: int, inner_offset: int, info: int
    ) -> None:
        """Kernel: raw6_icmp_error()."""
        if self.raw_sockets:
            _raw.raw6_icmp_error(self, skb, nexthdr, icmp_type, code, inner_offset, info)

    @property
    def loopback_dev(self) -> NetDevice:
        lo = self._loopback
        if lo is None:
            lo = self.net.dev_get_by_index(1)
            if lo is None:
                raise RuntimeError(f"{self.net.name}: no loopback device")
            self._loopback = lo
        return lo

    def loopback_dev_or_none(self) -> NetDevice | None:
        return self.net.dev_get_by_index(1)

    # -- route cache and FIB maintenance ----------------------------------------------------
    @kernel("rt_genid_bump_ipv6")
    def rt6_genid_bump(self) -> None:
        """Invalidate every cached route copy.

        Kernel: rt_genid_bump_ipv6().
        """
        self.rt6_genid += 1

    @kernel("fib6_add", "fib6_update_sernum_upto_root")
    def fib6_changed(self, f: Fib6Info) -> None:
        """A route was inserted.

        Kernel: fib6_add() → fib6_update_sernum_upto_root().
        """
        self.rt6_genid += 1
        if f.flags & RTF_EXPIRES:
            self.fib6.fib6_force_start_gc()

    def _all_routes(self) -> list[Fib6Info]:
        return [f for t in self.fib6.tables.values() for f in t.routes()]

    @kernel("rt6_sync_down_dev", "fib6_ifdown")
    def rt6_sync_down_dev(self, dev: NetDevice, event: int) -> None:
        """The device went down or away: its routes go.

        Kernel: rt6_sync_down_dev() / fib6_ifdown().
        """
        for f in self._all_routes():
            if f.nh.dev is not dev:
                continue
            if event == NETDEV_CHANGE:
                if not f.flags & (RTF_LOCAL | RTF_ANYCAST):
                    f.nh.flags |= RTNH_F_LINKDOWN
            else:
                _route.ip6_del_rt(self, f)
        self.rt6_genid_bump()

    @kernel("rt6_sync_up", "fib6_ifup")
    def rt6_sync_up(self, dev: NetDevice) -> None:
        """Routes through *dev* are usable again.

        Kernel: rt6_sync_up() / fib6_ifup().
        """
        clear = RTNH_F_DEAD | (RTNH_F_LINKDOWN if dev.carrier else 0)
        for f in self._all_routes():
            if f.nh.dev is dev:
                f.nh.flags &= ~clear
        self.rt6_genid_bump()

    @kernel("net/ipv6/route.c", "rt6_disable_ip")
    def rt6_disable_ip(self, dev: NetDevice, unregister: bool) -> None:
        """Kernel: net/ipv6/route.c, rt6_disable_ip()."""
        self.rt6_sync_down_dev(dev, NETDEV_UNREGISTER if unregister else NETDEV_DOWN)
        self.nd_tbl.neigh_ifdown(dev)

    @kernel("net/ipv6/route.c", "rt6_mtu_change", "fib6_nh_mtu_change")
    def rt6_mtu_change(self, dev: NetDevice, mtu: int) -> None:
        """The device MTU changed: update routes' MTU metrics and learnt PMTUs.

        Kernel: net/ipv6/route.c, rt6_mtu_change() / fib6_nh_mtu_change().
        """
        idev = dev.ip6_ptr
        if idev is None:
            return
        old = idev.cnf.mtu6
        for f in self._all_routes():
            if f.nh.dev is not dev or f.mtu_lock:
                continue
            if f.mtu and (f.mtu >= mtu or f.mtu == old):
                f.mtu = mtu
            for ex in f.nh.exceptions.values():
                if ex.rt6i_pmtu and (ex.mtu() >= mtu or ex.mtu() == old):
                    ex.rt6i_pmtu = mtu  # rt6_exceptions_update_pmtu()
        self.rt6_genid_bump()

    @kernel("rt6_remove_prefsrc")
    def rt6_remove_prefsrc(self, addr: int) -> None:
        """An address went away: routes stop preferring it.

        Kernel: rt6_remove_prefsrc().
        """
        for f in self._all_routes():
            if f.prefsrc == addr:
                f.prefsrc = 0
        self.rt6_genid_bump()

    @kernel("net/ipv6/route.c", "rt6_clean_tohost")
    def rt6_clean_tohost(self, gateway: int) -> None:
        """A neighbour stopped being a router: drop redirects/exceptions through it.

        Kernel: net/ipv6/route.c, rt6_clean_tohost().
        """
        for f in self._all_routes():
            nh = f.nh
            for ex in list(nh.exceptions.values()):
                if ex.rt6i_flags & (RTF_CACHE | RTF_GATEWAY) == RTF_CACHE | RTF_GATEWAY and (
                    ex.rt6i_gateway == gateway
                ):
                    _route.rt6_remove_exception(self, nh, ex)
            if f.flags & RTF_GATEWAY and nh.gw == gateway and not f.flags & RTF_ADDRCONF:
                pass  # only cached clones and RA routes depend on the router flag
        self.rt6_genid_bump()

    @kernel("rt6_purge_dflt_routers")
    def rt6_purge_dflt_routers(self) -> None:
        """Forwarding turned on: forget RA-learnt default routers.

        Kernel: rt6_purge_dflt_routers().
        """
        table = self.fib6.tables.get(RT_TABLE_MAIN)
        if table is None:
            return
        for f in table.routes():
            if f.flags & (RTF_DEFAULT | RTF_ADDRCONF) and f.dst_len == 0:
                idev = f.nh.dev.ip6_ptr
                if idev is None or idev.cnf.accept_ra != 2:
                    _route.ip6_del_rt(self, f)

    @kernel("rt6_do_redirect")
    def rt6_do_redirect(self, f: Fib6Info, dest: int, target: int, on_link: bool) -> None:
        """Install a redirect as a per-destination exception.

        Kernel: rt6_do_redirect().
        """
        nrt = _route.ip6_rt_cache_alloc(self, f, dest)
        nrt.rt6i_flags = RTF_GATEWAY | RTF_UP | RTF_DYNAMIC | RTF_CACHE
        if on_link:
            nrt.rt6i_flags &= ~RTF_GATEWAY
        nrt.rt6i_gateway = target
        old = f.nh.exceptions.get(dest)
        if old is not None:
            nrt.rt6i_pmtu = old.rt6i_pmtu
            nrt.expires = old.expires
        if _route.rt6_insert_exception(self, nrt, f):
            nrt.release()

    # -- PMTU ---------------------------------------------------------------------------------
    @kernel("net/ipv6/route.c", "ip6_update_pmtu")
    def ip6_update_pmtu(self, skb: SkBuff, mtu: int, oif: int) -> None:
        """A Packet Too Big quoting *skb*'s inner packet (at ``skb.data``).

        Kernel: net/ipv6/route.c, ip6_update_pmtu().
        """
        inner = skb.data
        if skb.tail < inner + 40:
            return
        buf = skb.buf
        daddr = addr_at(buf, inner + 24)
        saddr = addr_at(buf, inner + 8)
        from netstack.ipv6.route import Flowi6

        rt = _route.ip6_route_output(self, Flowi6(daddr, saddr, oif=oif))
        try:
            if not rt.error:
                _route.rt6_update_pmtu(self, rt, daddr, saddr, mtu)
        finally:
            rt.release()

    @kernel("ip6_sk_update_pmtu")
    def ip6_sk_update_pmtu(self, skb: SkBuff, sk: Any, mtu: int) -> None:
        """The same for a socket's flow, refreshing its cached route.

        Kernel: ip6_sk_update_pmtu().
        """
        oif = sk.sk_bound_dev_if
        self.ip6_update_pmtu(skb, mtu, oif)
        dst = sk.dst_cache
        if dst is not None and not dst.valid():
            from netstack.ipv6.route import Flowi6

            fl6 = Flowi6(sk.sk_v6_daddr, sk.saddr6, oif=sk.sk_bound_dev_if, proto=sk.protocol)
            found = self.ip6_dst_lookup(fl6, bound_dev_if=sk.sk_bound_dev_if)
            if not isinstance(found, int):
                dst.release()
                sk.dst_cache = found

    # -- addresses ----------------------------------------------------------------------------
    def idev(self, dev: NetDevice) -> Inet6Dev:
        idev: Inet6Dev | None = dev.ip6_ptr
        if idev is None:
            raise ConfigError(f'Cannot find device "{dev.name}"', errno.ENODEV)
        return idev

    # -- sockets -------------------------------------------------------------------------------
    @kernel("inet6_create")
    def socket(self, sock_type: int, protocol: int) -> Sock:
        """Create an AF_INET6 socket.

        Kernel: inet6_create() over inetsw6.
        """
        if sock_type == SOCK_DGRAM and protocol in (0, IPPROTO_UDP):
            return _udp.Udp6Sock(self)
        if sock_type == SOCK_DGRAM and protocol == IPPROTO_ICMPV6:
            ipv4 = self.net.ipv4
            low, high = ipv4.ping_group_range if ipv4 is not None else (1, 0)
            if not low <= 0 <= high:
                raise sock_oserror(errno.EACCES)
            return _ping.Ping6Sock(self)
        if sock_type == SOCK_STREAM and protocol in (0, NEXTHDR_TCP):
            from netstack.ipv6.tcp_ipv6 import tcp_v6_socket

            return tcp_v6_socket(self)
        if sock_type == SOCK_RAW:
            if not 0 < protocol <= 255:
                raise sock_oserror(errno.EINVAL if protocol > 255 else errno.EPROTONOSUPPORT)
            return _raw.Raw6Sock(self, protocol)
        if sock_type == SOCK_DGRAM:
            raise sock_oserror(errno.EPROTONOSUPPORT)
        raise sock_oserror(errno.ESOCKTNOSUPPORT)

    # -- statistics ------------------------------------------------------------------------------
    @kernel("net/ipv6/proc.c", "snmp6_seq_show")
    def snmp6(self) -> dict[str, MibSnapshot]:
        """``/proc/net/snmp6`` as snapshots: ``Ip6``, ``Icmp6`` (with the per-type
        counters) and ``Udp6``.

        Kernel: net/ipv6/proc.c, snmp6_seq_show().
        """
        icmp = self.icmp6_mib.snapshot()
        return {
            "Ip6": self.ip6_mib.snapshot(),
            "Icmp6": MibSnapshot("Icmp6", icmp.values + tuple(self.icmp6msg.values())),
            "Udp6": self.udp6_mib.snapshot(),
        }

    def proc_net_snmp6(self) -> str:
        """The text of ``/proc/net/snmp6`` (``%-32s\\t%lu`` per line)."""
        lines = []
        for group, snap in self.snmp6().items():
            for key, value in snap.values:
                lines.append(f"{group + key:<32}\t{value}")
        # the UDP-Lite list has no IgnoredMulti (net/ipv6/proc.c, snmp6_udplite6_list)
        lines.extend(f"{'UdpLite6' + key:<32}\t0" for key in UDP6_FIELDS if key != "IgnoredMulti")
        return "\n".join(lines) + "\n"

    def statistics(self) -> dict[str, Any]:
        """Counters that ``/proc/net/snmp6`` does not show."""
        return {
            "ra_received": self.ra_received,
            "reasm_overlaps": self.reasm_overlaps,
            "dad_failures": self.addrconf.dad_failures,
            "frag_queues": len(self.frags.queues),
            "rt6_genid": self.rt6_genid,
        }

    # -- device events ------------------------------------------------------------------------
    def netdev_event(self, event: int, dev: NetDevice) -> None:
        """addrconf_notify, plus the renaming of per-device sysctls."""
        if event == NETDEV_CHANGENAME:
            idev = dev.ip6_ptr
            if idev is not None:
                self.unregister_dev_sysctls(idev)
                self.register_dev_sysctls(dev)
            return
        self.addrconf.addrconf_notify(event, dev)
        # ndisc_netdev_notifier, after addrconf's (NETDEV_CHANGE: of an up device, as sent)
        if event == NETDEV_CHANGEADDR or (event == NETDEV_CHANGE and dev.flags & IFF_UP):
            _ndisc.ndisc_netdev_event(self, event, dev)
        if event == NETDEV_UP and dev.flags & IFF_LOOPBACK:
            self._loopback = dev

    # -- sysctls -------------------------------------------------------------------------------
    @kernel("addrconf_sysctl_register")
    def register_dev_sysctls(self, dev: NetDevice) -> None:
        """``net.ipv6.conf.DEV.*`` and ``net.ipv6.neigh.DEV.*``.

        Kernel: addrconf_sysctl_register().
        """
        idev: Inet6Dev = dev.ip6_ptr
        idev.conf_name = dev.name
        conf, neigh, s = f"net.ipv6.conf.{dev.name}", f"net.ipv6.neigh.{dev.name}", self.net.sysctl
        s.register_lazy(f"{conf}.", addrconf_sysctl_register_conf, self, conf, idev.cnf, idev)
        s.register_lazy(f"{neigh}.", neigh_sysctl_register, self.nd_tbl, dev)

    def unregister_dev_sysctls(self, idev: Inet6Dev) -> None:
        self.net.sysctl.unregister_prefix(f"net.ipv6.conf.{idev.conf_name}.")
        neigh_sysctl_unregister(self.nd_tbl, idev.conf_name)


@kernel("net/ipv6/route.c", "ip6_pkt_discard")
def ip6_pkt_discard(ipv6: Ipv6, skb: SkBuff) -> int:
    """Input through an unreachable route: ICMPv6 no route.

    Kernel: net/ipv6/route.c, ip6_pkt_discard().
    """
    return _route.ip6_pkt_drop(ipv6, skb, ICMPV6_NOROUTE, False)


@kernel("net/ipv6/route.c", "ip6_pkt_discard_out")
def ip6_pkt_discard_out(ipv6: Ipv6, skb: SkBuff) -> int:
    """Output through a reject route: ICMPv6 no route.

    Kernel: net/ipv6/route.c, ip6_pkt_discard_out().
    """
    _out_dev(skb)
    return _route.ip6_pkt_drop(ipv6, skb, ICMPV6_NOROUTE, True)


@kernel("net/ipv6/route.c", "ip6_pkt_prohibit")
def ip6_pkt_prohibit(ipv6: Ipv6, skb: SkBuff) -> int:
    """Input through a prohibit route: ICMPv6 administratively prohibited.

    Kernel: net/ipv6/route.c, ip6_pkt_prohibit().
    """
    return _route.ip6_pkt_drop(ipv6, skb, ICMPV6_ADM_PROHIBITED, False)


@kernel("net/ipv6/route.c", "ip6_pkt_prohibit_out")
def ip6_pkt_prohibit_out(ipv6: Ipv6, skb: SkBuff) -> int:
    """Output through a prohibit route: ICMPv6 administratively prohibited.

    Kernel: net/ipv6/route.c, ip6_pkt_prohibit_out().
    """
    _out_dev(skb)
    return _route.ip6_pkt_drop(ipv6, skb, ICMPV6_ADM_PROHIBITED, True)


def _out_dev(skb: SkBuff) -> None:
    """``skb->dev = skb_dst(skb)->dev``: a reject route's output counts on its device."""
    skb.dev = skb.dst.dev if skb.dst is not None and skb.dst.dev is not None else skb.dev
