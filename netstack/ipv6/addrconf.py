"""IPv6 address configuration: per-device state, addresses, DAD, RS, SLAAC, lifetimes.

Theory of operation::

    NETDEV_REGISTER ─► ipv6_add_dev: inet6_dev (dev.ip6_ptr), conf copied from
       "default", joins ff01::1 and ff02::1 (and ff02::2 when forwarding)
    NETDEV_UP with the link ready (oper up, a qdisc attached) / NETDEV_CHANGE
       when it becomes ready ─► by device type:
         loopback → ::1/128 (no DAD)
         Ethernet, ipip, … → link-local fe80::<EUI-64 or ISATAP id>/64, tentative,
             with its fe80::/64 prefix route and ff00::/8 in table local
         sit → add_v4_addrs: fe80::<local v4>/64 on a point-to-point sit,
             ::<v4>/96 on sit0 (no DAD); gre → like Ethernet, or add_v4_addrs
    address added (manually, or by SLAAC) ─► ipv6_add_addr (tentative unless
       nodad) ─► addrconf_dad_start: join the solicited-node group, wait a
       random 0..rtr_solicit_delay, send dad_transmits NS from :: with a
       nonce, retrans_time apart; an NS for the address from someone doing DAD
       or an NA for it ─► dadfailed (and with accept_dad=2 and a MAC-based
       link-local, IPv6 is disabled on the device) ─► else dad completed:
       the local route goes into table local (the address now receives);
       the first usable link-local starts router solicitations (when
       accepting RAs): one now, then with RFC 7559 backoff up to an hour
    RA prefix information (ndisc) ─► addrconf_prefix_rcv: on-link prefix
       route with the valid lifetime, and with the A flag a /64 address from
       the EUI-64 identifier (RFC 4862 §5.5.3), lifetimes updated by later RAs
    addrconf_verify (a timer): deprecates addresses past their preferred
       lifetime, deletes them past their valid lifetime

Source address selection (:meth:`Addrconf.ipv6_dev_get_saddr`) applies RFC
6724's rules 1 (same address), 2 (scope), 3 (not deprecated), 5 (outgoing
interface), 6 (label) and 8 (longest matching prefix).

Group membership filters what is received; joins are reported with MLDv2
(netstack.ipv6.mcast: the reports Linux sends at bring-up, from :: during
DAD and from the link-local after it). Not emulated: privacy/temporary
addresses, stable-privacy and random address generation modes, optimistic
DAD.

Kernel: net/ipv6/addrconf.c, net/ipv6/addrlabel.c, net/ipv6/mcast.c
(group membership), net/ipv6/anycast.c.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

from netstack.core.dev import (
    NETDEV_CHANGE,
    NETDEV_CHANGEMTU,
    NETDEV_DOWN,
    NETDEV_REGISTER,
    NETDEV_UNREGISTER,
    NETDEV_UP,
)
from netstack.core.netdevice import IFF_LOOPBACK, IFF_MULTICAST, IFF_NOARP, IFF_POINTOPOINT
from netstack.core.slotcopy import attr_copier
from netstack.errors import ConfigError
from netstack.ipv6.constants import (
    ARPHRD_ETHER,
    ARPHRD_IPGRE,
    ARPHRD_LOOPBACK,
    ARPHRD_NONE,
    ARPHRD_RAWIP,
    ARPHRD_SIT,
    ARPHRD_TUNNEL,
    ARPHRD_TUNNEL6,
    IF_RA_RCVD,
    IF_READY,
    IF_RS_SENT,
    IFA_HOST,
    IFA_LINK,
    IN6_ADDR_GEN_MODE_EUI64,
    IN6_ADDR_GEN_MODE_NONE,
    INET6_IFADDR_STATE_DAD,
    INET6_IFADDR_STATE_DEAD,
    INET6_IFADDR_STATE_ERRDAD,
    INET6_IFADDR_STATE_POSTDAD,
    INET6_IFADDR_STATE_PREDAD,
    INFINITY_LIFE_TIME,
    IP6_RT_PRIO_ADDRCONF,
    MIN_VALID_LIFETIME_S,
    RTF_ADDRCONF,
    RTF_ANYCAST,
    RTF_DEFAULT,
    RTF_EXPIRES,
    RTF_GATEWAY,
    RTF_LOCAL,
    RTF_NONEXTHOP,
    RTF_PREFIX_RT,
)
from netstack.ipv6.mcast import (
    MldState,
    igmp6_group_added,
    ipv6_mc_dad_complete,
    ipv6_mc_down,
    ipv6_mc_up,
)
from netstack.ipv6.ndisc import ipv6_accept_ra
from netstack.ipv6.route import Fib6Config, Fib6Info, ip6_del_rt, ip6_route_add
from netstack.sites import kernel
from netstack.wire.icmpv6 import PREFIX_INFO
from netstack.wire.ipv6 import (
    IN6ADDR_INTERFACELOCAL_ALLNODES,
    IN6ADDR_INTERFACELOCAL_ALLROUTERS,
    IN6ADDR_LINKLOCAL_ALLNODES,
    IN6ADDR_LINKLOCAL_ALLROUTERS,
    IN6ADDR_LOOPBACK,
    IN6ADDR_SITELOCAL_ALLROUTERS,
    IPV6_ADDR_LINKLOCAL,
    IPV6_ADDR_LOOPBACK,
    IPV6_ADDR_MAPPED,
    IPV6_ADDR_MULTICAST,
    IPV6_ADDR_SCOPE_LINKLOCAL,
    IPV6_MIN_MTU,
    LINKLOCAL_PREFIX,
    IPV6_ADDR_COMPATv4,
    eui64_from_mac,
    ipv6_addr_diff,
    ipv6_addr_scope,
    ipv6_addr_scope_of_type,
    ipv6_addr_src_scope,
    ipv6_addr_type,
    ipv6_prefix_equal,
    isatap_ifid,
    ntoa,
    prefix_mask,
    solicited_node,
)
from netstack.wire.rtnetlink import (
    IFA_F_DADFAILED,
    IFA_F_DEPRECATED,
    IFA_F_HOMEADDRESS,
    IFA_F_MANAGETEMPADDR,
    IFA_F_NODAD,
    IFA_F_NOPREFIXROUTE,
    IFA_F_OPTIMISTIC,
    IFA_F_PERMANENT,
    IFA_F_TEMPORARY,
    IFA_F_TENTATIVE,
    RT_TABLE_LOCAL,
    RT_TABLE_MAIN,
    RTN_ANYCAST,
    RTN_LOCAL,
    RTN_MULTICAST,
    RTPROT_KERNEL,
)

if TYPE_CHECKING:
    from netstack.core.netdevice import NetDevice
    from netstack.core.skbuff import SkBuff
    from netstack.core.timer import TimerList
    from netstack.ipv6.netns import Ipv6

__all__ = [
    "DEVCONF6",
    "Addrconf",
    "DevConf6",
    "Inet6Dev",
    "Inet6Ifaddr",
    "ipv6_accept_ra",
    "ipv6_addr_label",
]

# name -> default (net/ipv6/addrconf.c ipv6_devconf_dflt; times in seconds as the sysctls show them)
DEVCONF6: Final[dict[str, int]] = {
    "forwarding": 0,
    "hop_limit": 64,
    "mtu": IPV6_MIN_MTU,
    "accept_ra": 1,
    "accept_redirects": 1,
    "autoconf": 1,
    "dad_transmits": 1,
    "router_solicitations": -1,
    "router_solicitation_interval": 4,
    "router_solicitation_max_interval": 3600,
    "router_solicitation_delay": 1,
    "force_mld_version": 0,
    "mldv1_unsolicited_report_interval": 10000,
    "mldv2_unsolicited_report_interval": 1000,
    "use_tempaddr": 0,
    "temp_valid_lft": 604800,
    "temp_prefered_lft": 86400,
    "regen_max_retry": 3,
    "max_desync_factor": 600,
    "max_addresses": 16,
    "accept_ra_defrtr": 1,
    "ra_defrtr_metric": 1024,
    "accept_ra_min_hop_limit": 1,
    "accept_ra_min_lft": 0,
    "accept_ra_pinfo": 1,
    "accept_ra_rtr_pref": 1,
    "router_probe_interval": 60,
    "accept_ra_rt_info_min_plen": 0,
    "accept_ra_rt_info_max_plen": 0,
    "proxy_ndp": 0,
    "accept_source_route": 0,
    "accept_ra_from_local": 0,
    "optimistic_dad": 0,
    "use_optimistic": 0,
    "mc_forwarding": 0,
    "disable_ipv6": 0,
    "drop_unicast_in_l2_multicast": 0,
    "drop_unsolicited_na": 0,
    "accept_dad": 1,
    "force_tllao": 0,
    "ndisc_notify": 0,
    "suppress_frag_ndisc": 1,
    "accept_ra_mtu": 1,
    "use_oif_addrs_only": 0,
    "ignore_routes_with_linkdown": 0,
    "keep_addr_on_down": 0,
    "seg6_enabled": 0,
    "enhanced_dad": 1,
    "addr_gen_mode": 0,
    "disable_policy": 0,
    "ndisc_tclass": 0,
    "rpl_seg_enabled": 0,
    "accept_untracked_na": 0,
    "ndisc_evict_nocarrier": 1,
}
# sysctls the kernel makes read-only
DEVCONF6_READONLY: Final = frozenset({"mc_forwarding"})
# "all" differs from "default" here (ipv6_devconf vs ipv6_devconf_dflt)
DEVCONF6_ALL_OVERRIDES: Final = {"accept_dad": 0}

ADDR_CHECK_FREQUENCY_S: Final = 120
IPV6_ADDR_LABELS: Final = (
    # (prefix, plen, label) — net/ipv6/addrlabel.c ip6addrlbl_init_table, longest first
    (IN6ADDR_LOOPBACK, 128, 0),
    (0xFFFF << 32, 96, 4),
    (0, 96, 3),
    (0x2001_0010 << 96, 28, 7),
    (0x2001 << 112, 32, 6),
    (0x2002 << 112, 16, 2),
    (0x3FFE << 112, 16, 12),
    (0xFEC0 << 112, 10, 11),
    (0xFC << 120, 7, 5),
    (0, 0, 1),
)


@kernel("net/ipv6/addrlabel.c", "ipv6_addr_label")
def ipv6_addr_label(addr: int) -> int:
    """The default policy table's label.

    Kernel: net/ipv6/addrlabel.c, ipv6_addr_label().
    """
    for prefix, plen, label in IPV6_ADDR_LABELS:
        if ipv6_prefix_equal(addr, prefix, plen):
            return label
    return 1


class DevConf6:
    """``net.ipv6.conf.{all,default,DEV}.*`` (kernel: ``struct ipv6_devconf``)."""

    __slots__ = (*DEVCONF6, "mtu6")

    forwarding: int
    hop_limit: int
    accept_ra: int
    accept_redirects: int
    autoconf: int
    dad_transmits: int
    router_solicitations: int
    router_solicitation_interval: int
    router_solicitation_max_interval: int
    router_solicitation_delay: int
    max_addresses: int
    accept_ra_defrtr: int
    ra_defrtr_metric: int
    accept_ra_min_hop_limit: int
    accept_ra_min_lft: int
    accept_ra_pinfo: int
    accept_ra_rtr_pref: int
    accept_ra_from_local: int
    proxy_ndp: int
    accept_source_route: int
    disable_ipv6: int
    drop_unicast_in_l2_multicast: int
    drop_unsolicited_na: int
    accept_dad: int
    force_tllao: int
    ndisc_notify: int
    suppress_frag_ndisc: int
    accept_ra_mtu: int
    use_oif_addrs_only: int
    ignore_routes_with_linkdown: int
    keep_addr_on_down: int
    enhanced_dad: int
    addr_gen_mode: int
    use_tempaddr: int
    seg6_enabled: int
    rpl_seg_enabled: int
    force_mld_version: int
    mldv1_unsolicited_report_interval: int  # ms, as the sysctl shows it
    mldv2_unsolicited_report_interval: int  # ms
    mtu6: int

    def __init__(self, copy_from: DevConf6 | None = None, *, is_all: bool = False) -> None:
        if copy_from is not None:
            _copy_devconf6(self, copy_from)  # every field, mtu6 too
            return
        for name, default in DEVCONF6.items():
            setattr(self, name, DEVCONF6_ALL_OVERRIDES.get(name, default) if is_all else default)
        self.mtu6 = IPV6_MIN_MTU

    def get(self, name: str) -> int:
        if name == "mtu":
            return self.mtu6
        return int(getattr(self, name))


_copy_devconf6: Final = attr_copier((*DEVCONF6, "mtu6"))


class Inet6Ifaddr:
    """One IPv6 address of a device (kernel: ``struct inet6_ifaddr``)."""

    __slots__ = (
        "addr",
        "cstamp",
        "dad_nonce",
        "dad_probes",
        "dad_timer",
        "flags",
        "idev",
        "peer",
        "prefered_lft",
        "prefix_len",
        "rt",
        "rt_priority",
        "scope",
        "state",
        "tstamp",
        "valid_lft",
    )

    def __init__(
        self,
        idev: Inet6Dev,
        addr: int,
        prefix_len: int,
        scope: int,
        flags: int,
        valid_lft: int,
        prefered_lft: int,
        *,
        peer: int = 0,
        rt_priority: int = 0,
    ) -> None:
        now = idev.ipv6.net.clock.jiffies
        self.idev = idev
        self.addr = addr
        self.prefix_len = prefix_len
        self.scope = scope
        self.flags = flags
        self.valid_lft = valid_lft
        self.prefered_lft = prefered_lft
        self.peer = peer
        self.rt_priority = rt_priority
        self.cstamp = self.tstamp = now
        self.state = INET6_IFADDR_STATE_PREDAD
        self.dad_probes = 0
        self.dad_nonce = b""
        self.dad_timer: TimerList | None = None
        self.rt: Fib6Info | None = None  # the local route (table local)

    @property
    def dev(self) -> NetDevice:
        return self.idev.dev

    def lifetimes(self, now: int, hz: int) -> tuple[int, int]:
        """``(valid, preferred)`` remaining, as ``inet6_fill_ifaddr`` reports them."""
        if self.flags & IFA_F_PERMANENT and self.prefered_lft == INFINITY_LIFE_TIME:
            return INFINITY_LIFE_TIME, INFINITY_LIFE_TIME
        preferred = self.prefered_lft
        valid = self.valid_lft
        if preferred != INFINITY_LIFE_TIME:
            tval = (now - self.tstamp) // hz
            preferred = preferred - tval if preferred > tval else 0
            if valid != INFINITY_LIFE_TIME:
                valid = valid - tval if valid > tval else 0
        return valid, preferred

    def __repr__(self) -> str:
        return f"<Inet6Ifaddr {ntoa(self.addr)}/{self.prefix_len} dev {self.idev.dev.name}>"


class Inet6Dev:
    """IPv6 state of one device (kernel: ``struct inet6_dev``)."""

    # Slotted (a lab holds thousands of these); the __dict__ slot takes what is
    # set only later or from outside.
    __slots__ = (
        "__dict__",
        "_rs_timer",
        "ac_list",
        "addr_list",
        "cnf",
        "conf_name",
        "dead",
        "dev",
        "if_flags",
        "ipv6",
        "mc_list",
        "mld",
        "ra_mtu",
        "rs_interval",
        "rs_probes",
        "tstamp",
    )

    def __init__(self, ipv6: Ipv6, dev: NetDevice) -> None:
        self.ipv6 = ipv6
        self.dev = dev
        self.cnf = DevConf6(ipv6.devconf_dflt)
        self.cnf.mtu6 = dev.mtu
        self.addr_list: list[Inet6Ifaddr] = []  # sorted by scope, global first
        self.mc_list: dict[int, int] = {}  # group -> users (ifmcaddr6)
        self.ac_list: dict[int, tuple[int, Fib6Info | None]] = {}  # anycast -> (users, route)
        self.if_flags = 0
        self.dead = False
        self.rs_probes = 0
        self.rs_interval = 0
        self.ra_mtu = 0
        self.tstamp = ipv6.net.clock.jiffies
        self.conf_name = dev.name
        self._rs_timer: TimerList | None = None  # made when first armed (see rs_timer)
        self.mld = MldState(ipv6, self)  # mc_qrv, mc_ifc_work, mc_dad_work

    @property
    def rs_timer(self) -> TimerList:
        """The router-solicitation timer, made on first use (a host that never
        solicits, such as one with IPv6 disabled, has none)."""
        timer = self._rs_timer
        if timer is None:
            ipv6 = self.ipv6
            timer = self._rs_timer = ipv6.net.timers.timer(
                lambda: ipv6.addrconf.addrconf_rs_timer(self), "rs"
            )
        return timer

    def ignore_routes_with_linkdown(self) -> bool:
        return bool(
            self.ipv6.devconf_all.ignore_routes_with_linkdown
            or self.cnf.ignore_routes_with_linkdown
        )

    def __repr__(self) -> str:
        return f"<Inet6Dev {self.dev.name}>"


@kernel("qdisc_tx_is_noop")
def qdisc_tx_is_noop(dev: NetDevice) -> bool:
    """Kernel: qdisc_tx_is_noop()."""
    noop = dev.net.noop_qdisc
    return all(txq.qdisc is noop for txq in dev.tx_queues)


@kernel("addrconf_link_ready")
def addrconf_link_ready(dev: NetDevice) -> bool:
    """Up, operationally up and with a qdisc attached.

    Kernel: addrconf_link_ready().
    """
    return dev.netif_oper_up() and not qdisc_tx_is_noop(dev)


class Addrconf:
    """The address-configuration machinery of one Net (kernel: addrconf.c's functions)."""

    # Slotted (a lab holds thousands of these); the __dict__ slot takes what is
    # set only later or from outside.
    __slots__ = (
        "__dict__",
        "addr_lst",
        "dad_failures",
        "ipv6",
        "net",
        "verify_timer",
    )

    def __init__(self, ipv6: Ipv6) -> None:
        self.ipv6 = ipv6
        self.net = ipv6.net
        self.addr_lst: dict[int, list[Inet6Ifaddr]] = {}  # inet6_addr_lst
        self.verify_timer = ipv6.net.timers.timer(self.addrconf_verify, "addrconf_verify")
        self.dad_failures = 0

    # -- lookups --------------------------------------------------------------------------
    @kernel("__in6_dev_get")
    def idev(self, dev: NetDevice | None) -> Inet6Dev | None:
        """Kernel: __in6_dev_get()."""
        if dev is None:
            return None
        idev: Inet6Dev | None = dev.ip6_ptr
        return idev

    @kernel("ipv6_get_ifaddr")
    def ipv6_get_ifaddr(self, addr: int, dev: NetDevice | None, strict: bool) -> Inet6Ifaddr | None:
        """Kernel: ipv6_get_ifaddr()."""
        for ifp in self.addr_lst.get(addr, ()):
            if (
                dev is None
                or ifp.idev.dev is dev
                or not (ifp.scope & (IFA_LINK | IFA_HOST) or strict)
            ):
                return ifp
        return None

    @kernel("ipv6_chk_addr_and_flags")
    def ipv6_chk_addr(
        self,
        addr: int,
        dev: NetDevice | None,
        *,
        strict: bool = False,
        banned: int = IFA_F_TENTATIVE,
    ) -> bool:
        """Is *addr* ours (on *dev*, or anywhere)?

        Kernel: ipv6_chk_addr_and_flags().
        """
        for ifp in self.addr_lst.get(addr, ()):
            flags = ifp.flags & ~IFA_F_TENTATIVE if ifp.flags & IFA_F_OPTIMISTIC else ifp.flags
            if flags & banned:
                continue
            if (
                dev is None
                or ifp.idev.dev is dev
                or not (ifp.scope & (IFA_LINK | IFA_HOST) or strict)
            ):
                return True
        return False

    @kernel("ipv6_get_lladdr")
    def ipv6_get_lladdr(self, dev: NetDevice, banned: int) -> int | None:
        """The device's (first configured) link-local address.

        Kernel: ipv6_get_lladdr().
        """
        idev = self.idev(dev)
        if idev is None:
            return None
        for ifp in reversed(idev.addr_list):
            if ifp.scope > IFA_LINK:
                break
            if ifp.scope == IFA_LINK and not ifp.flags & banned:
                return ifp.addr
        return None

    def addresses(self, dev: NetDevice) -> list[Inet6Ifaddr]:
        idev = self.idev(dev)
        return list(idev.addr_list) if idev is not None else []

    # -- source address selection (RFC 6724) ---------------------------------------------
    @kernel("net/ipv6/addrconf.c", "ipv6_dev_get_saddr", "__ipv6_dev_get_saddr")
    def ipv6_dev_get_saddr(
        self, dst_dev: NetDevice | None, daddr: int, prefs: int = 0
    ) -> int | None:
        """Choose a source address for *daddr*, or None (EADDRNOTAVAIL).

        Kernel: net/ipv6/addrconf.c, ipv6_dev_get_saddr() / __ipv6_dev_get_saddr().
        """
        dst_type = ipv6_addr_type(daddr)
        dst_scope = ipv6_addr_scope_of_type(dst_type)
        dst_label = ipv6_addr_label(daddr)
        dst_ifindex = dst_dev.ifindex if dst_dev is not None else 0
        devs: list[NetDevice]
        idev = self.idev(dst_dev)
        if dst_dev is not None and (
            dst_type & IPV6_ADDR_MULTICAST
            or dst_scope <= IPV6_ADDR_SCOPE_LINKLOCAL
            or (idev is not None and idev.cnf.use_oif_addrs_only)
        ):
            devs = [dst_dev]
        else:
            devs = sorted(self.net.devices.values(), key=lambda d: d.ifindex)
        best: Inet6Ifaddr | None = None
        best_key: tuple[int, ...] = ()
        for dev in devs:
            d_idev = self.idev(dev)
            if d_idev is None:
                continue
            for ifa in d_idev.addr_list:
                if ifa.flags & IFA_F_TENTATIVE and not ifa.flags & IFA_F_OPTIMISTIC:
                    continue
                atype = ipv6_addr_type(ifa.addr)
                if atype == 0 or atype & IPV6_ADDR_MULTICAST:
                    continue
                scope = ipv6_addr_scope_of_type(atype)
                scopedist = -scope if scope >= dst_scope else scope - 128
                preferred = bool(
                    atype & (IPV6_ADDR_MAPPED | IPV6_ADDR_COMPATv4 | IPV6_ADDR_LOOPBACK)
                ) or not ifa.flags & (IFA_F_DEPRECATED | IFA_F_OPTIMISTIC)
                use_tmp = d_idev.cnf.use_tempaddr >= 2
                matchlen = min(ipv6_addr_diff(ifa.addr, daddr), ifa.prefix_len)
                key = (
                    int(ifa.addr == daddr),  # rule 1: same address
                    scopedist,  # rule 2: appropriate scope
                    int(preferred),  # rule 3: avoid deprecated
                    int(not dst_ifindex or dev.ifindex == dst_ifindex),  # rule 5: outgoing dev
                    int(ipv6_addr_label(ifa.addr) == dst_label),  # rule 6: matching label
                    int((not ifa.flags & IFA_F_TEMPORARY) ^ use_tmp),  # rule 7: public
                    matchlen,  # rule 8: longest matching prefix
                )
                if best is None or key > best_key:
                    best, best_key = ifa, key
        return best.addr if best is not None else None

    # -- devices --------------------------------------------------------------------------
    @kernel("ipv6_add_dev")
    def ipv6_add_dev(self, dev: NetDevice) -> Inet6Dev | None:
        """Give *dev* its IPv6 state.

        Kernel: ipv6_add_dev().
        """
        ipv6 = self.ipv6
        if dev.mtu < IPV6_MIN_MTU:
            return None
        idev = Inet6Dev(ipv6, dev)
        ipv6.nd_tbl.add_dev_parms(dev)
        if dev.flags & (IFF_NOARP | IFF_LOOPBACK):
            idev.cnf.accept_dad = -1
        if dev.flags & IFF_LOOPBACK or dev.type in (ARPHRD_TUNNEL, ARPHRD_TUNNEL6, ARPHRD_SIT):
            idev.cnf.use_tempaddr = -1
        if dev.netif_running() and addrconf_link_ready(dev):
            idev.if_flags |= IF_READY
        dev.ip6_ptr = idev
        ipv6.register_dev_sysctls(dev)
        self.ipv6_dev_mc_inc(dev, IN6ADDR_INTERFACELOCAL_ALLNODES)
        self.ipv6_dev_mc_inc(dev, IN6ADDR_LINKLOCAL_ALLNODES)
        if idev.cnf.forwarding and dev.flags & IFF_MULTICAST:
            self.ipv6_dev_mc_inc(dev, IN6ADDR_LINKLOCAL_ALLROUTERS)
        return idev

    @kernel("ipv6_find_idev")
    def ipv6_find_idev(self, dev: NetDevice) -> Inet6Dev | None:
        """Kernel: ipv6_find_idev()."""
        idev = self.idev(dev)
        if idev is None:
            idev = self.ipv6_add_dev(dev)
        if idev is not None and dev.flags & 1:  # IFF_UP
            ipv6_mc_up(self.ipv6, idev)
        return idev

    @kernel("addrconf_add_dev")
    def addrconf_add_dev(self, dev: NetDevice) -> Inet6Dev:
        """The device's IPv6 state and its ff00::/8 route.

        Kernel: addrconf_add_dev().
        """
        idev = self.ipv6_find_idev(dev)
        if idev is None:
            raise ConfigError("RTNETLINK answers: No buffer space available", errno.ENOBUFS)
        if idev.cnf.disable_ipv6:
            raise ConfigError("Error: ipv6: IPv6 is disabled on this device.", errno.EACCES)
        if not dev.flags & IFF_LOOPBACK:
            self.addrconf_add_mroute(dev)
        return idev

    # -- kernel routes ----------------------------------------------------------------------
    @kernel("addrconf_prefix_route")
    def addrconf_prefix_route(
        self, pfx: int, plen: int, metric: int, dev: NetDevice, expires: int, flags: int
    ) -> None:
        """The route for an address's prefix (table main, proto kernel).

        Kernel: addrconf_prefix_route().
        """
        if dev.type == ARPHRD_SIT and dev.flags & IFF_POINTOPOINT:
            flags |= RTF_NONEXTHOP  # "Prevent useless cloning on PtP SIT"
        cfg = Fib6Config(
            pfx & prefix_mask(plen),
            plen,
            table=RT_TABLE_MAIN,
            metric=metric or IP6_RT_PRIO_ADDRCONF,
            flags=flags,
            protocol=RTPROT_KERNEL,
            dev=dev,
            expires=expires,
            nlflags=0,
            ignore_dev_down=True,
        )
        try:
            ip6_route_add(self.ipv6, cfg)
        except ConfigError:
            pass  # already there (EEXIST), as ip6_route_add's callers ignore

    @kernel("addrconf_get_prefix_route")
    def addrconf_get_prefix_route(
        self, pfx: int, plen: int, dev: NetDevice, flags: int, noflags: int
    ) -> Fib6Info | None:
        """Kernel: addrconf_get_prefix_route()."""
        table = self.ipv6.fib6.tables.get(RT_TABLE_MAIN)
        if table is None:
            return None
        b = table.bucket(pfx & prefix_mask(plen), plen)
        for f in b or ():
            if f.nh.dev is not dev:
                continue
            if f.flags & flags != flags or f.flags & noflags:
                continue
            return f
        return None

    @kernel("addrconf_add_mroute")
    def addrconf_add_mroute(self, dev: NetDevice) -> None:
        """``multicast ff00::/8 dev DEV table local``.

        Kernel: addrconf_add_mroute().
        """
        cfg = Fib6Config(
            0xFF << 120,
            8,
            table=RT_TABLE_LOCAL,
            metric=IP6_RT_PRIO_ADDRCONF,
            rtype=RTN_MULTICAST,
            protocol=RTPROT_KERNEL,
            dev=dev,
            nlflags=0,
            ignore_dev_down=True,
        )
        try:
            ip6_route_add(self.ipv6, cfg)
        except ConfigError:
            pass

    @kernel("addrconf_f6i_alloc")
    def addrconf_f6i_alloc(self, idev: Inet6Dev, addr: int, anycast: bool) -> Fib6Info:
        """The local (or anycast) /128 route of an address.

        Kernel: addrconf_f6i_alloc().
        """
        from netstack.ipv6.route import ip6_route_info_create

        cfg = Fib6Config(
            addr,
            128,
            table=RT_TABLE_LOCAL,
            flags=RTF_NONEXTHOP | (RTF_ANYCAST if anycast else RTF_LOCAL),
            rtype=RTN_ANYCAST if anycast else RTN_LOCAL,
            protocol=RTPROT_KERNEL,
            dev=idev.dev,
            metric=0,
            ignore_dev_down=True,
        )
        return ip6_route_info_create(self.ipv6, cfg)

    @kernel("ip6_ins_rt")
    def ip6_ins_rt(self, f: Fib6Info) -> None:
        """Insert a prepared route (duplicates ignored).

        Kernel: ip6_ins_rt().
        """
        table = self.ipv6.fib6.table(f.table, create=True)
        assert table is not None
        f.dead = False
        try:
            table.insert(f, 0)
        except ConfigError:
            return
        self.ipv6.fib6_changed(f)

    # -- multicast and anycast membership ----------------------------------------------------
    @kernel("net/ipv6/mcast.c", "ipv6_dev_mc_inc")
    def ipv6_dev_mc_inc(self, dev: NetDevice, addr: int) -> None:
        """Join a group on *dev* (counted).

        Kernel: net/ipv6/mcast.c, ipv6_dev_mc_inc().
        """
        idev = self.idev(dev)
        if idev is None or idev.dead:
            return
        users = idev.mc_list.get(addr, 0)
        idev.mc_list[addr] = users + 1
        if not users:
            igmp6_group_added(self.ipv6, idev, addr)

    @kernel("__ipv6_dev_mc_dec")
    def ipv6_dev_mc_dec(self, idev: Inet6Dev, addr: int) -> None:
        """Kernel: __ipv6_dev_mc_dec()."""
        users = idev.mc_list.get(addr, 0)
        if users <= 1:
            idev.mc_list.pop(addr, None)
        else:
            idev.mc_list[addr] = users - 1

    @kernel("ipv6_chk_mcast_addr")
    def ipv6_chk_mcast_addr(self, dev: NetDevice, group: int, src: int = 0) -> bool:
        """Is this host a member of *group* on *dev*?

        Kernel: ipv6_chk_mcast_addr().
        """
        idev = self.idev(dev)
        return idev is not None and group in idev.mc_list

    @kernel("addrconf_join_solict")
    def addrconf_join_solict(self, dev: NetDevice, addr: int) -> None:
        """Kernel: addrconf_join_solict()."""
        if dev.flags & (IFF_LOOPBACK | IFF_NOARP):
            return
        self.ipv6_dev_mc_inc(dev, solicited_node(addr))

    @kernel("addrconf_leave_solict")
    def addrconf_leave_solict(self, idev: Inet6Dev, addr: int) -> None:
        """Kernel: addrconf_leave_solict()."""
        if idev.dev.flags & (IFF_LOOPBACK | IFF_NOARP):
            return
        self.ipv6_dev_mc_dec(idev, solicited_node(addr))

    def _subnet_router_anycast(self, ifp: Inet6Ifaddr) -> int | None:
        if ifp.prefix_len >= 127:  # RFC 6164
            return None
        addr = ifp.addr & prefix_mask(ifp.prefix_len)
        return addr or None

    @kernel("addrconf_join_anycast", "__ipv6_dev_ac_inc")
    def addrconf_join_anycast(self, ifp: Inet6Ifaddr) -> None:
        """Routers answer for the subnet-router anycast address: its route, and
        its solicited-node group (to hear the multicast NS for it).

        Kernel: addrconf_join_anycast() → __ipv6_dev_ac_inc().
        """
        addr = self._subnet_router_anycast(ifp)
        if addr is None:
            return
        idev = ifp.idev
        users, f = idev.ac_list.get(addr, (0, None))
        if not users:
            f = self.addrconf_f6i_alloc(idev, addr, anycast=True)
            self.ip6_ins_rt(f)
        idev.ac_list[addr] = (users + 1, f)
        if not users:
            self.addrconf_join_solict(idev.dev, addr)

    @kernel("addrconf_leave_anycast", "__ipv6_dev_ac_dec")
    def addrconf_leave_anycast(self, ifp: Inet6Ifaddr) -> None:
        """Kernel: addrconf_leave_anycast() → __ipv6_dev_ac_dec()."""
        addr = self._subnet_router_anycast(ifp)
        if addr is None:
            return
        idev = ifp.idev
        users, f = idev.ac_list.get(addr, (0, None))
        if users > 1:
            idev.ac_list[addr] = (users - 1, f)
            return
        idev.ac_list.pop(addr, None)
        self.addrconf_leave_solict(idev, addr)
        if f is not None and not f.dead:
            ip6_del_rt(self.ipv6, f)

    @kernel("ipv6_chk_acast_addr")
    def ipv6_chk_acast_addr(self, dev: NetDevice | None, addr: int) -> bool:
        """Kernel: ipv6_chk_acast_addr()."""
        devs = [dev] if dev is not None else list(self.net.devices.values())
        for d in devs:
            idev = self.idev(d)
            if idev is not None and addr in idev.ac_list:
                return True
        return False

    # -- adding and deleting addresses ---------------------------------------------------------
    @kernel("ipv6_add_addr")
    def ipv6_add_addr(
        self,
        idev: Inet6Dev,
        addr: int,
        plen: int,
        scope: int,
        flags: int,
        valid_lft: int,
        prefered_lft: int,
        *,
        peer: int = 0,
        rt_priority: int = 0,
    ) -> Inet6Ifaddr:
        """Create an address (tentative unless nodad).

        Kernel: ipv6_add_addr().

        Raises:
            ConfigError: rtnetlink's refusal (the kernel's extack text).
        """
        addr_type = ipv6_addr_type(addr)
        if addr_type == 0:
            raise ConfigError("Error: ipv6: Invalid address.", errno.EADDRNOTAVAIL)
        if addr_type & IPV6_ADDR_MULTICAST:
            raise ConfigError(
                'Error: ipv6: Cannot assign multicast address without "IFA_F_MCAUTOJOIN" flag.',
                errno.EADDRNOTAVAIL,
            )
        if not idev.dev.flags & IFF_LOOPBACK and addr_type & IPV6_ADDR_LOOPBACK:
            raise ConfigError(
                "Error: ipv6: Cannot assign loopback address on this device.", errno.EADDRNOTAVAIL
            )
        if idev.dead:
            raise ConfigError("Error: ipv6: device is going away.", errno.ENODEV)
        if idev.cnf.disable_ipv6:
            raise ConfigError("Error: ipv6: IPv6 is disabled on this device.", errno.EACCES)
        for other in self.addr_lst.get(addr, ()):
            if other.idev is idev:
                raise ConfigError("RTNETLINK answers: File exists", errno.EEXIST)
        if not flags & IFA_F_NODAD:
            flags |= IFA_F_TENTATIVE
        ifp = Inet6Ifaddr(
            idev,
            addr,
            plen,
            scope,
            flags,
            valid_lft,
            prefered_lft,
            peer=peer,
            rt_priority=rt_priority,
        )
        ifp.rt = self.addrconf_f6i_alloc(idev, addr, anycast=False)
        self.addr_lst.setdefault(addr, []).append(ifp)
        # ipv6_link_dev_addr(): sorted by scope, a new address before older ones of its scope
        ifp_scope = ipv6_addr_src_scope(addr)
        lst = idev.addr_list
        i = 0
        while i < len(lst) and ifp_scope < ipv6_addr_src_scope(lst[i].addr):
            i += 1
        lst.insert(i, ifp)
        return ifp

    @kernel("ipv6_del_addr")
    def ipv6_del_addr(self, ifp: Inet6Ifaddr) -> None:
        """Remove an address, its routes and memberships.

        Kernel: ipv6_del_addr().
        """
        state = ifp.state
        ifp.state = INET6_IFADDR_STATE_DEAD
        if state == INET6_IFADDR_STATE_DEAD:
            return
        self._unhash(ifp)
        idev = ifp.idev
        action = None
        if ifp.flags & IFA_F_PERMANENT and not ifp.flags & IFA_F_NOPREFIXROUTE:
            action = self._check_cleanup_prefix_route(ifp)
        if ifp in idev.addr_list:
            idev.addr_list.remove(ifp)
        self._del_dad_timer(ifp)
        self._ifa_notify_del(ifp)
        if action is not None:
            kind, expires = action
            f = self.addrconf_get_prefix_route(
                ifp.addr, ifp.prefix_len, idev.dev, 0, RTF_GATEWAY | RTF_DEFAULT
            )
            if f is not None:
                if kind == "del":
                    ip6_del_rt(self.ipv6, f)
                elif not f.flags & RTF_EXPIRES:
                    f.flags |= RTF_EXPIRES
                    f.expires = expires
                    self.ipv6.fib6.fib6_force_start_gc()
        self.ipv6.rt6_remove_prefsrc(ifp.addr)

    @kernel("check_cleanup_prefix_route")
    def _check_cleanup_prefix_route(self, ifp: Inet6Ifaddr) -> tuple[str, int] | None:
        """Does the prefix route outlive the address?

        Kernel: check_cleanup_prefix_route().
        """
        hz = self.net.clock.hz
        expires = self.net.clock.jiffies
        action = "del"
        for ifa in ifp.idev.addr_list:
            if ifa is ifp or not ipv6_prefix_equal(ifa.addr, ifp.addr, ifp.prefix_len):
                continue
            if ifa.flags & (IFA_F_PERMANENT | IFA_F_NOPREFIXROUTE):
                return None
            action = "expire"
            if ifa.valid_lft != INFINITY_LIFE_TIME:
                expires = max(expires, ifa.tstamp + ifa.valid_lft * hz)
        return action, expires

    def _unhash(self, ifp: Inet6Ifaddr) -> None:
        lst = self.addr_lst.get(ifp.addr)
        if lst and ifp in lst:
            lst.remove(ifp)
            if not lst:
                del self.addr_lst[ifp.addr]

    @kernel("__ipv6_ifa_notify")
    def _ifa_notify_new(self, ifp: Inet6Ifaddr) -> None:
        """The address is valid: its local route goes in.

        Kernel: __ipv6_ifa_notify(RTM_NEWADDR).
        """
        ipv6 = self.ipv6
        idev = ifp.idev
        if ifp.rt is not None and ifp.rt.dead is False and not self._in_fib(ifp.rt):
            self.ip6_ins_rt(ifp.rt)
        elif ifp.rt is not None and ifp.rt.dead:
            ifp.rt = self.addrconf_f6i_alloc(idev, ifp.addr, anycast=False)
            self.ip6_ins_rt(ifp.rt)
        if idev.cnf.forwarding:
            self.addrconf_join_anycast(ifp)
        if ifp.peer:
            self.addrconf_prefix_route(ifp.peer, 128, ifp.rt_priority, idev.dev, 0, 0)
        ipv6.rt6_genid_bump()
        for fn in ipv6.addr_listeners:
            fn(ifp, True)

    @kernel("__ipv6_ifa_notify")
    def _ifa_notify_del(self, ifp: Inet6Ifaddr) -> None:
        """Kernel: __ipv6_ifa_notify(RTM_DELADDR)."""
        ipv6 = self.ipv6
        idev = ifp.idev
        if idev.cnf.forwarding:
            self.addrconf_leave_anycast(ifp)
        self.addrconf_leave_solict(idev, ifp.addr)
        if ifp.peer:
            f = self.addrconf_get_prefix_route(ifp.peer, 128, idev.dev, 0, 0)
            if f is not None:
                ip6_del_rt(ipv6, f)
        if ifp.rt is not None:
            if self._in_fib(ifp.rt):
                ip6_del_rt(ipv6, ifp.rt)
            ifp.rt.dead = True
        ipv6.rt6_genid_bump()
        for fn in ipv6.addr_listeners:
            fn(ifp, False)

    def _in_fib(self, f: Fib6Info) -> bool:
        table = self.ipv6.fib6.tables.get(f.table)
        if table is None:
            return False
        b = table.bucket(f.dst, f.dst_len)
        return b is not None and f in b

    @kernel("inet6_rtm_newaddr", "inet6_addr_add")
    def inet6_addr_add(
        self,
        dev: NetDevice,
        addr: int,
        plen: int,
        *,
        peer: int = 0,
        flags: int = 0,
        valid_lft: int = INFINITY_LIFE_TIME,
        prefered_lft: int = INFINITY_LIFE_TIME,
        metric: int = 0,
    ) -> Inet6Ifaddr:
        """``ip -6 addr add``.

        Kernel: inet6_rtm_newaddr() → inet6_addr_add().
        """
        if plen > 128:
            raise ConfigError("Error: ipv6: Invalid prefix length.", errno.EINVAL)
        if not valid_lft or prefered_lft > valid_lft:
            raise ConfigError("Error: ipv6: address lifetime invalid.", errno.EINVAL)
        if flags & IFA_F_MANAGETEMPADDR and plen != 64:
            raise ConfigError(
                'Error: ipv6: address with "mngtmpaddr" flag must have a prefix length of 64.',
                errno.EINVAL,
            )
        if flags & IFA_F_NODAD and flags & IFA_F_OPTIMISTIC:
            raise ConfigError(
                "Error: IFA_F_NODAD and IFA_F_OPTIMISTIC are mutually exclusive.", errno.EINVAL
            )
        try:
            idev = self.addrconf_add_dev(dev)
        except ConfigError as e:
            if e.errno == errno.EACCES:
                raise ConfigError(
                    "Error: ipv6: IPv6 is disabled on this device.", errno.EACCES
                ) from None
            raise
        existing = self.ipv6_get_ifaddr(addr, dev, True)
        if existing is not None:
            raise ConfigError("Error: ipv6: address already assigned.", errno.EEXIST)
        scope = ipv6_addr_scope(addr)
        expires = 0
        rt_flags = 0
        if valid_lft != INFINITY_LIFE_TIME:
            expires = valid_lft
            rt_flags = RTF_EXPIRES
        else:
            flags |= IFA_F_PERMANENT
        if prefered_lft != INFINITY_LIFE_TIME and prefered_lft == 0:
            flags |= IFA_F_DEPRECATED
        flags &= ~IFA_F_OPTIMISTIC  # optimistic DAD is not emulated
        ifp = self.ipv6_add_addr(
            idev, addr, plen, scope, flags, valid_lft, prefered_lft, peer=peer, rt_priority=metric
        )
        if not flags & IFA_F_NOPREFIXROUTE:
            self.addrconf_prefix_route(ifp.addr, plen, metric, dev, expires, rt_flags)
        self.addrconf_dad_start(ifp)
        self.addrconf_verify()
        return ifp

    @kernel("inet6_addr_modify")
    def inet6_addr_modify(
        self,
        ifp: Inet6Ifaddr,
        *,
        flags: int,
        valid_lft: int,
        prefered_lft: int,
        metric: int,
    ) -> None:
        """``ip -6 addr change|replace`` of an existing address.

        Kernel: inet6_addr_modify().
        """
        if not valid_lft or prefered_lft > valid_lft:
            raise ConfigError("Error: ipv6: address lifetime invalid.", errno.EINVAL)
        keep = ifp.flags & ~(
            IFA_F_NODAD
            | IFA_F_HOMEADDRESS
            | IFA_F_MANAGETEMPADDR
            | IFA_F_NOPREFIXROUTE
            | IFA_F_PERMANENT
            | IFA_F_DEPRECATED
        )
        new_flags = keep | (
            flags & (IFA_F_NODAD | IFA_F_HOMEADDRESS | IFA_F_MANAGETEMPADDR | IFA_F_NOPREFIXROUTE)
        )
        if valid_lft == INFINITY_LIFE_TIME:
            new_flags |= IFA_F_PERMANENT
        if prefered_lft == 0:
            new_flags |= IFA_F_DEPRECATED
        had_prefix_route = not ifp.flags & IFA_F_NOPREFIXROUTE
        old_metric = ifp.rt_priority
        ifp.flags = new_flags
        ifp.tstamp = self.net.clock.jiffies
        ifp.valid_lft = valid_lft
        ifp.prefered_lft = prefered_lft
        ifp.rt_priority = metric
        dev = ifp.idev.dev
        if not new_flags & IFA_F_NOPREFIXROUTE:
            expires = 0 if valid_lft == INFINITY_LIFE_TIME else valid_lft
            f = self.addrconf_get_prefix_route(
                ifp.addr, ifp.prefix_len, dev, 0, RTF_DEFAULT | RTF_GATEWAY
            )
            if f is not None and (old_metric != metric or not had_prefix_route):
                ip6_del_rt(self.ipv6, f)
                f = None
            if f is None:
                self.addrconf_prefix_route(
                    ifp.addr, ifp.prefix_len, metric, dev, expires, RTF_EXPIRES if expires else 0
                )
            elif expires:
                f.flags |= RTF_EXPIRES
                f.expires = self.net.clock.jiffies + expires * self.net.clock.hz
                self.ipv6.fib6.fib6_force_start_gc()
            else:
                f.flags &= ~RTF_EXPIRES
                f.expires = 0
        elif had_prefix_route:
            f = self.addrconf_get_prefix_route(
                ifp.addr, ifp.prefix_len, dev, 0, RTF_DEFAULT | RTF_GATEWAY
            )
            if f is not None:
                ip6_del_rt(self.ipv6, f)
        self.addrconf_verify()

    @kernel("inet6_rtm_deladdr", "inet6_addr_del")
    def inet6_addr_del(self, dev: NetDevice, addr: int, plen: int) -> None:
        """``ip -6 addr del``.

        Kernel: inet6_rtm_deladdr() → inet6_addr_del().
        """
        if plen > 128:
            raise ConfigError("Error: ipv6: Invalid prefix length.", errno.EINVAL)
        idev = self.idev(dev)
        if idev is None:
            raise ConfigError("Error: ipv6: IPv6 is disabled on this device.", errno.ENXIO)
        for ifp in idev.addr_list:
            if ifp.prefix_len == plen and ifp.addr == addr:
                self.ipv6_del_addr(ifp)
                self.addrconf_verify()
                return
        raise ConfigError("Error: ipv6: address not found.", errno.EADDRNOTAVAIL)

    @kernel("add_addr")
    def add_addr(self, idev: Inet6Dev, addr: int, plen: int, scope: int) -> None:
        """A permanent, never-tentative address (lo, sit).

        Kernel: add_addr().
        """
        try:
            ifp = self.ipv6_add_addr(
                idev, addr, plen, scope, IFA_F_PERMANENT, INFINITY_LIFE_TIME, INFINITY_LIFE_TIME
            )
        except ConfigError:
            return
        ifp.flags &= ~IFA_F_TENTATIVE
        ifp.state = INET6_IFADDR_STATE_POSTDAD
        self._ifa_notify_new(ifp)

    @kernel("net/ipv6/addrconf.c", "add_v4_addrs", "sit_add_v4_addrs")
    def add_v4_addrs(self, idev: Inet6Dev) -> None:
        """Addresses derived from IPv4 ones, for sit and gre devices.

        A point-to-point sit (or any gre) gets ``fe80::<local v4>/64``; the
        NBMA sit0 gets ``::<v4>/96`` for its own local address, or for every
        IPv4 address of every up device when it has none (``::127.0.0.1``
        in host scope). The IPv4 addresses are read from ``dev.dev_addr``
        and ``dev.ip_ptr.ifa_list`` without importing IPv4.

        Kernel: net/ipv6/addrconf.c, add_v4_addrs() (sit_add_v4_addrs() before 5.x).
        """
        dev = idev.dev
        v4 = int.from_bytes(dev.dev_addr[-4:], "big") if len(dev.dev_addr) >= 4 else 0
        pflags = 0
        if not dev.flags & IFF_POINTOPOINT and dev.type == ARPHRD_SIT:
            scope = IPV6_ADDR_COMPATv4
            plen = 96
            pflags |= RTF_NONEXTHOP
            base = 0
        else:
            if idev.cnf.addr_gen_mode == IN6_ADDR_GEN_MODE_NONE:
                return
            scope = IFA_LINK
            plen = 64
            base = LINKLOCAL_PREFIX
        if v4:
            self.add_addr(idev, base | v4, plen, scope)
            self.addrconf_prefix_route(base | v4, plen, 0, dev, 0, pflags)
            return
        for other in sorted(self.net.devices.values(), key=lambda d: d.ifindex):
            in_dev: Any = other.ip_ptr
            if in_dev is None or not other.flags & 1:
                continue
            for ifa in list(getattr(in_dev, "ifa_list", ())):
                flag = scope
                ifa_scope = int(getattr(ifa, "ifa_scope", 0))
                if ifa_scope == 253:  # RT_SCOPE_LINK
                    continue
                if ifa_scope >= 254:  # RT_SCOPE_HOST
                    if dev.flags & IFF_POINTOPOINT:
                        continue
                    flag |= IFA_HOST
                addr = base | int(ifa.ifa_local)
                self.add_addr(idev, addr, plen, flag)
                self.addrconf_prefix_route(addr, plen, 0, dev, 0, pflags)

    @kernel("init_loopback")
    def init_loopback(self, dev: NetDevice) -> None:
        """``::1/128`` on lo.

        Kernel: init_loopback().
        """
        idev = self.ipv6_find_idev(dev)
        if idev is None:
            return
        self.add_addr(idev, IN6ADDR_LOOPBACK, 128, IFA_HOST)

    @kernel("addrconf_add_linklocal")
    def addrconf_add_linklocal(self, idev: Inet6Dev, addr: int, flags: int = 0) -> None:
        """A link-local address, its fe80::/64 route, and DAD.

        Kernel: addrconf_add_linklocal().
        """
        try:
            ifp = self.ipv6_add_addr(
                idev,
                addr,
                64,
                IFA_LINK,
                flags | IFA_F_PERMANENT,
                INFINITY_LIFE_TIME,
                INFINITY_LIFE_TIME,
            )
        except ConfigError:
            return
        self.addrconf_prefix_route(ifp.addr, ifp.prefix_len, 0, idev.dev, 0, 0)
        self.addrconf_dad_start(ifp)

    @kernel("ipv6_generate_eui64")
    def ipv6_generate_eui64(self, dev: NetDevice) -> int | None:
        """The interface identifier, by device type.

        Kernel: ipv6_generate_eui64().
        """
        if dev.type == ARPHRD_ETHER:
            if dev.addr_len != 6:
                return None
            return eui64_from_mac(bytes(dev.dev_addr))
        if dev.type in (ARPHRD_IPGRE, ARPHRD_TUNNEL):
            if len(dev.dev_addr) < 4:
                return None
            return isatap_ifid(int.from_bytes(dev.dev_addr[:4], "big"))
        if dev.type == ARPHRD_SIT:
            return None  # only ISATAP sit devices have one (not emulated)
        return None

    @kernel("addrconf_addr_gen")
    def addrconf_addr_gen(self, idev: Inet6Dev, prefix_route: bool) -> None:
        """Generate the link-local address.

        Kernel: addrconf_addr_gen().
        """
        mode = idev.cnf.addr_gen_mode
        if mode != IN6_ADDR_GEN_MODE_EUI64:
            return  # stable-privacy/random generation is not emulated; none adds nothing
        eui = self.ipv6_generate_eui64(idev.dev)
        if eui is not None:
            self.addrconf_add_linklocal(idev, LINKLOCAL_PREFIX | eui)
        elif prefix_route:
            self.addrconf_prefix_route(LINKLOCAL_PREFIX, 64, 0, idev.dev, 0, 0)

    @kernel("addrconf_dev_config")
    def addrconf_dev_config(self, dev: NetDevice) -> None:
        """Ethernet-like devices: the EUI-64 link-local.

        Kernel: addrconf_dev_config().
        """
        if dev.type not in (ARPHRD_ETHER, ARPHRD_TUNNEL6, ARPHRD_TUNNEL, ARPHRD_NONE, ARPHRD_RAWIP):
            return  # "Alas, we support only Ethernet autoconfiguration."
        try:
            idev = self.addrconf_add_dev(dev)
        except ConfigError:
            return
        self.addrconf_addr_gen(idev, False)

    @kernel("addrconf_sit_config")
    def addrconf_sit_config(self, dev: NetDevice) -> None:
        """sit devices: addresses from IPv4.

        Kernel: addrconf_sit_config().
        """
        idev = self.ipv6_find_idev(dev)
        if idev is None:
            return
        self.add_v4_addrs(idev)
        if dev.flags & IFF_POINTOPOINT:
            self.addrconf_add_mroute(dev)

    @kernel("addrconf_gre_config")
    def addrconf_gre_config(self, dev: NetDevice) -> None:
        """gre devices.

        Kernel: addrconf_gre_config().
        """
        idev = self.ipv6_find_idev(dev)
        if idev is None:
            return
        v4 = int.from_bytes(dev.dev_addr[:4], "big") if len(dev.dev_addr) >= 4 else 0
        if not (v4 == 0 and idev.cnf.addr_gen_mode == IN6_ADDR_GEN_MODE_EUI64):
            self.addrconf_addr_gen(idev, True)
            return
        self.add_v4_addrs(idev)

    @kernel("addrconf_init_auto_addrs")
    def addrconf_init_auto_addrs(self, dev: NetDevice) -> None:
        """Kernel: addrconf_init_auto_addrs()."""
        if dev.type == ARPHRD_SIT:
            self.addrconf_sit_config(dev)
        elif dev.type == ARPHRD_IPGRE:
            self.addrconf_gre_config(dev)
        elif dev.type == ARPHRD_LOOPBACK:
            self.init_loopback(dev)
        else:
            self.addrconf_dev_config(dev)

    @kernel("addrconf_permanent_addr")
    def addrconf_permanent_addr(self, dev: NetDevice) -> None:
        """Restore routes of addresses kept over a down.

        Kernel: addrconf_permanent_addr().
        """
        idev = self.idev(dev)
        if idev is None:
            return
        for ifp in list(idev.addr_list):
            if ifp.flags & IFA_F_PERMANENT:
                if ifp.rt is None or ifp.rt.dead:
                    ifp.rt = self.addrconf_f6i_alloc(idev, ifp.addr, anycast=False)
                if not ifp.flags & IFA_F_NOPREFIXROUTE:
                    self.addrconf_prefix_route(ifp.addr, ifp.prefix_len, ifp.rt_priority, dev, 0, 0)
                if ifp.state == INET6_IFADDR_STATE_PREDAD:
                    self.addrconf_dad_start(ifp)

    # -- device events ------------------------------------------------------------------------
    @kernel("net/ipv6/addrconf.c", "addrconf_notify")
    def addrconf_notify(self, event: int, dev: NetDevice) -> None:
        """Kernel: net/ipv6/addrconf.c, addrconf_notify()."""
        ipv6 = self.ipv6
        idev = self.idev(dev)
        if event == NETDEV_REGISTER:
            if idev is None and dev.mtu >= IPV6_MIN_MTU:
                self.ipv6_add_dev(dev)
            return
        if event == NETDEV_CHANGEMTU:
            if dev.mtu < IPV6_MIN_MTU:
                self.addrconf_ifdown(dev, unregister=dev is not ipv6.loopback_dev_or_none())
                return
            if idev is not None:
                ipv6.rt6_mtu_change(dev, dev.mtu)
                idev.cnf.mtu6 = dev.mtu
                return
            idev = self.ipv6_add_dev(dev)
            if idev is None or not idev.if_flags & IF_READY:
                return
            self._configure(dev, idev, run_pending=True)
            return
        if event in (NETDEV_UP, NETDEV_CHANGE):
            if idev is not None and idev.cnf.disable_ipv6:
                return
            run_pending = False
            if event == NETDEV_UP:
                self.addrconf_permanent_addr(dev)
                if not addrconf_link_ready(dev):
                    return  # "ADDRCONF(NETDEV_UP): link is not ready"
                if idev is None and dev.mtu >= IPV6_MIN_MTU:
                    idev = self.ipv6_add_dev(dev)
                if idev is not None:
                    idev.if_flags |= IF_READY
                    run_pending = True
            else:
                if not addrconf_link_ready(dev):
                    ipv6.rt6_sync_down_dev(dev, event)
                    return
                if idev is not None:
                    if idev.if_flags & IF_READY:
                        ipv6.rt6_sync_up(dev)
                        return
                    idev.if_flags |= IF_READY
                run_pending = True
            self._configure(dev, idev, run_pending=run_pending)
            return
        if event in (NETDEV_DOWN, NETDEV_UNREGISTER):
            self.addrconf_ifdown(dev, unregister=event == NETDEV_UNREGISTER)

    def _configure(self, dev: NetDevice, idev: Inet6Dev | None, *, run_pending: bool) -> None:
        self.addrconf_init_auto_addrs(dev)
        idev = self.idev(dev)
        if idev is None:
            return
        if run_pending:
            self.addrconf_dad_run(idev)
        self.ipv6.rt6_sync_up(dev)
        if idev.cnf.mtu6 != dev.mtu and dev.mtu >= IPV6_MIN_MTU:
            self.ipv6.rt6_mtu_change(dev, dev.mtu)
            idev.cnf.mtu6 = dev.mtu
        idev.tstamp = self.net.clock.jiffies

    @kernel("addrconf_ifdown")
    def addrconf_ifdown(self, dev: NetDevice, *, unregister: bool) -> None:
        """Remove addresses, routes and neighbours of *dev*.

        Kernel: addrconf_ifdown().
        """
        ipv6 = self.ipv6
        ipv6.rt6_disable_ip(dev, unregister)
        idev = self.idev(dev)
        if idev is None:
            return
        if unregister:
            idev.dead = True
            dev.ip6_ptr = None
        keep_cfg = ipv6.devconf_all.keep_addr_on_down or idev.cnf.keep_addr_on_down
        keep_addr = not unregister and keep_cfg > 0 and not idev.cnf.disable_ipv6
        if idev._rs_timer is not None:
            idev._rs_timer.delete()
        if not unregister:
            idev.if_flags &= ~(IF_RS_SENT | IF_RA_RCVD | IF_READY)
        for ifp in list(idev.addr_list):
            self._del_dad_timer(ifp)
            keep = (
                keep_addr
                and bool(ifp.flags & IFA_F_PERMANENT)
                and not ipv6_addr_type(ifp.addr) & (IPV6_ADDR_LINKLOCAL | IPV6_ADDR_LOOPBACK)
            )
            if keep:
                ifp.state = INET6_IFADDR_STATE_PREDAD
                if not ifp.flags & IFA_F_NODAD:
                    ifp.flags |= IFA_F_TENTATIVE
                if ifp.rt is not None and self._in_fib(ifp.rt):
                    ip6_del_rt(ipv6, ifp.rt)
                continue
            state = ifp.state
            ifp.state = INET6_IFADDR_STATE_DEAD
            self._unhash(ifp)
            idev.addr_list.remove(ifp)
            if state != INET6_IFADDR_STATE_DEAD:
                self._ifa_notify_del(ifp)
        if unregister:
            ipv6_mc_down(idev)  # ipv6_mc_destroy_dev()
            idev.mc_list.clear()
            idev.ac_list.clear()
            ipv6.unregister_dev_sysctls(idev)
            ipv6.nd_tbl.neigh_ifdown(dev)
            ipv6.nd_tbl.del_dev_parms(dev)
        else:
            # memberships of addresses just deleted went with them; reports stop
            ipv6_mc_down(idev)
        idev.tstamp = self.net.clock.jiffies

    # -- DAD ----------------------------------------------------------------------------------
    def _del_dad_timer(self, ifp: Inet6Ifaddr) -> None:
        if ifp.dad_timer is not None:
            ifp.dad_timer.delete()

    @kernel("addrconf_mod_dad_work")
    def _mod_dad_timer(self, ifp: Inet6Ifaddr, delay: int) -> None:
        """Kernel: addrconf_mod_dad_work()."""
        if ifp.dad_timer is None:
            ifp.dad_timer = self.net.timers.timer(lambda: self.addrconf_dad_work(ifp), "dad")
        ifp.dad_timer.mod(self.net.clock.jiffies + delay)

    @kernel("addrconf_dad_start")
    def addrconf_dad_start(self, ifp: Inet6Ifaddr) -> None:
        """Kernel: addrconf_dad_start()."""
        if ifp.state != INET6_IFADDR_STATE_DEAD:
            ifp.state = INET6_IFADDR_STATE_PREDAD
            self._mod_dad_timer(ifp, 0)

    @kernel("addrconf_dad_kick")
    def addrconf_dad_kick(self, ifp: Inet6Ifaddr) -> None:
        """Wait a random part of rtr_solicit_delay, pick a nonce.

        Kernel: addrconf_dad_kick().
        """
        idev = ifp.idev
        hz = self.net.clock.hz
        rng = self.net.rng
        delay = idev.cnf.router_solicitation_delay * hz
        rand_num = 0 if ifp.flags & IFA_F_OPTIMISTIC else rng.randrange(delay or 1)
        nonce = b""
        if idev.cnf.enhanced_dad or self.ipv6.devconf_all.enhanced_dad:
            while not any(nonce):
                nonce = bytes(rng.getrandbits(8) for _ in range(6))
        ifp.dad_nonce = nonce
        ifp.dad_probes = idev.cnf.dad_transmits
        self._mod_dad_timer(ifp, rand_num)

    @kernel("addrconf_dad_begin")
    def addrconf_dad_begin(self, ifp: Inet6Ifaddr) -> None:
        """Kernel: addrconf_dad_begin()."""
        idev = ifp.idev
        dev = idev.dev
        self.addrconf_join_solict(dev, ifp.addr)
        if ifp.state == INET6_IFADDR_STATE_DEAD:
            return
        if (
            dev.flags & (IFF_NOARP | IFF_LOOPBACK)
            or (self.ipv6.devconf_all.accept_dad < 1 and idev.cnf.accept_dad < 1)
            or not ifp.flags & IFA_F_TENTATIVE
            or ifp.flags & IFA_F_NODAD
        ):
            bump_id = bool(ifp.flags & IFA_F_TENTATIVE)
            send_na = bool(ifp.flags & IFA_F_TENTATIVE and not ifp.flags & IFA_F_OPTIMISTIC)
            ifp.flags &= ~(IFA_F_TENTATIVE | IFA_F_OPTIMISTIC | IFA_F_DADFAILED)
            self.addrconf_dad_completed(ifp, bump_id, send_na)
            return
        if not idev.if_flags & IF_READY:
            # "If the device is not ready: keep it tentative if it is a
            # permanent address, otherwise kill it."
            self.addrconf_dad_stop(ifp, dad_failed=False)
            return
        self.addrconf_dad_kick(ifp)

    @kernel("addrconf_dad_work")
    def addrconf_dad_work(self, ifp: Inet6Ifaddr) -> None:
        """The DAD state machine's work item.

        Kernel: addrconf_dad_work().
        """
        idev = ifp.idev
        disable_ipv6 = False
        if ifp.state == INET6_IFADDR_STATE_PREDAD:
            ifp.state = INET6_IFADDR_STATE_DAD
            self.addrconf_dad_begin(ifp)
            return
        if ifp.state == INET6_IFADDR_STATE_ERRDAD:
            ifp.state = INET6_IFADDR_STATE_POSTDAD
            if (
                self.ipv6.devconf_all.accept_dad > 1 or idev.cnf.accept_dad > 1
            ) and not idev.cnf.disable_ipv6:
                eui = self.ipv6_generate_eui64(idev.dev)
                if eui is not None and ifp.addr == LINKLOCAL_PREFIX | eui:
                    # "DAD failed for link-local based on MAC"
                    idev.cnf.disable_ipv6 = 1
                    self.net.log.info("ipv6_disabled", dev=idev.dev.name)
                    disable_ipv6 = True
            self.addrconf_dad_stop(ifp, dad_failed=True)
            if disable_ipv6:
                self.addrconf_ifdown(idev.dev, unregister=False)
            return
        if not ifp.dad_probes and self._dad_end(ifp):
            return
        if idev.dead or not idev.if_flags & IF_READY or ifp.state == INET6_IFADDR_STATE_DEAD:
            return
        if ifp.dad_probes == 0:
            bump_id = bool(ifp.flags & IFA_F_TENTATIVE)
            send_na = bool(ifp.flags & IFA_F_TENTATIVE and not ifp.flags & IFA_F_OPTIMISTIC)
            ifp.flags &= ~(IFA_F_TENTATIVE | IFA_F_OPTIMISTIC | IFA_F_DADFAILED)
            self.addrconf_dad_completed(ifp, bump_id, send_na)
            return
        ifp.dad_probes -= 1
        parms = self.ipv6.nd_tbl.parms_for(idev.dev)
        self._mod_dad_timer(ifp, parms.retrans_time)
        # send a neighbour solicitation for our address, from ::
        self.ipv6.ndisc_send_ns(idev.dev, ifp.addr, solicited_node(ifp.addr), 0, ifp.dad_nonce)

    def _dad_end(self, ifp: Inet6Ifaddr) -> bool:
        """True if DAD was not running (kernel: addrconf_dad_end() returning -ENOENT)."""
        if ifp.state == INET6_IFADDR_STATE_DAD:
            ifp.state = INET6_IFADDR_STATE_POSTDAD
            return False
        return True

    @kernel("addrconf_dad_stop")
    def addrconf_dad_stop(self, ifp: Inet6Ifaddr, *, dad_failed: bool) -> None:
        """Kernel: addrconf_dad_stop()."""
        if dad_failed:
            ifp.flags |= IFA_F_DADFAILED
        if ifp.flags & IFA_F_PERMANENT or not dad_failed:
            self._del_dad_timer(ifp)
            ifp.flags |= IFA_F_TENTATIVE
            if dad_failed:
                ifp.flags &= ~IFA_F_OPTIMISTIC
        else:
            self.ipv6_del_addr(ifp)

    @kernel("addrconf_dad_failure")
    def addrconf_dad_failure(self, skb: SkBuff | None, ifp: Inet6Ifaddr) -> None:
        """Someone else has (or is trying) this address.

        Kernel: addrconf_dad_failure().
        """
        if self._dad_end(ifp):
            return
        self.dad_failures += 1
        src = ""
        if skb is not None and skb.mac_header >= 0:
            m = skb.mac_header
            src = ":".join(f"{b:02x}" for b in skb.buf[m + 6 : m + 12])
        if self.net.net_ratelimit():  # net_info_ratelimited()
            self.net.log.info(
                "ipv6_duplicate_address",
                msg=f"{ifp.idev.dev.name}: IPv6 duplicate address {ntoa(ifp.addr)} "
                f"used by {src} detected!",
            )
        ifp.state = INET6_IFADDR_STATE_ERRDAD
        self._mod_dad_timer(ifp, 0)

    @kernel("ipv6_lonely_lladdr")
    def _lonely_lladdr(self, ifp: Inet6Ifaddr) -> bool:
        """Kernel: ipv6_lonely_lladdr()."""
        for other in reversed(ifp.idev.addr_list):
            if other.scope > IFA_LINK:
                break
            if (
                other is not ifp
                and other.scope == IFA_LINK
                and other.flags
                & (IFA_F_PERMANENT | IFA_F_TENTATIVE | IFA_F_OPTIMISTIC | IFA_F_DADFAILED)
                == IFA_F_PERMANENT
            ):
                return False
        return True

    @kernel("addrconf_dad_completed")
    def addrconf_dad_completed(self, ifp: Inet6Ifaddr, bump_id: bool, send_na: bool) -> None:
        """The address is ours: route it, maybe start soliciting routers.

        Kernel: addrconf_dad_completed().
        """
        self._del_dad_timer(ifp)
        ifp.state = (
            INET6_IFADDR_STATE_POSTDAD if ifp.state != INET6_IFADDR_STATE_DEAD else ifp.state
        )
        self._ifa_notify_new(ifp)
        idev = ifp.idev
        dev = idev.dev
        send_mld = ifp.scope == IFA_LINK and self._lonely_lladdr(ifp)
        send_rs = (
            send_mld
            and ipv6_accept_ra(idev)
            and idev.cnf.router_solicitations != 0
            and not dev.flags & IFF_LOOPBACK
        )
        # "While dad is in progress mld report's source address is in6_addrany.
        # Resend with proper ll now."
        if send_mld:
            ipv6_mc_dad_complete(self.ipv6, idev)
        if send_na and (idev.cnf.ndisc_notify or self.ipv6.devconf_all.ndisc_notify):
            self.ipv6.ndisc_send_na(
                dev,
                IN6ADDR_LINKLOCAL_ALLNODES,
                ifp.addr,
                router=bool(idev.cnf.forwarding),
                solicited=False,
                override=True,
                inc_opt=True,
            )
        if send_rs:
            lladdr = self.ipv6_get_lladdr(dev, IFA_F_TENTATIVE)
            if lladdr is None:
                return
            self.ipv6.ndisc_send_rs(dev, lladdr, IN6ADDR_LINKLOCAL_ALLROUTERS)
            idev.rs_interval = self._backoff_init(idev.cnf.router_solicitation_interval)
            idev.rs_probes = 1
            idev.if_flags |= IF_RS_SENT
            idev.rs_timer.mod(self.net.clock.jiffies + idev.rs_interval)
        if bump_id:
            self.ipv6.rt6_genid_bump()

    @kernel("addrconf_dad_run")
    def addrconf_dad_run(self, idev: Inet6Dev) -> None:
        """Restart DAD of tentative addresses (link came back).

        Kernel: addrconf_dad_run().
        """
        for ifp in idev.addr_list:
            if ifp.flags & IFA_F_TENTATIVE and ifp.state == INET6_IFADDR_STATE_DAD:
                self.addrconf_dad_kick(ifp)

    # -- router solicitation --------------------------------------------------------------------
    @kernel("rfc3315_s14_backoff_init")
    def _backoff_init(self, irt_s: int) -> int:
        """irt × (0.9 … 1.1).

        Kernel: rfc3315_s14_backoff_init().
        """
        hz = self.net.clock.hz
        return (900000 + self.net.rng.randrange(200001)) * irt_s * hz // 1000000

    @kernel("rfc3315_s14_backoff_update")
    def _backoff_update(self, rt: int, mrt: int) -> int:
        """rt × (1.9 … 2.1), capped at mrt × (0.9 … 1.1).

        Kernel: rfc3315_s14_backoff_update().
        """
        rng = self.net.rng
        tmp = (1900000 + rng.randrange(200001)) * rt // 1000000
        if tmp > mrt:
            tmp = (900000 + rng.randrange(200001)) * mrt // 1000000
        return tmp

    @kernel("addrconf_rs_timer")
    def addrconf_rs_timer(self, idev: Inet6Dev) -> None:
        """Send the next router solicitation.

        Kernel: addrconf_rs_timer().
        """
        if idev.dead or not idev.if_flags & IF_READY:
            return
        if not ipv6_accept_ra(idev):
            return
        if idev.if_flags & IF_RA_RCVD:
            return  # "Announcement received after solicitation was sent"
        cnf = idev.cnf
        rs_probes = idev.rs_probes
        idev.rs_probes += 1
        if rs_probes < cnf.router_solicitations or cnf.router_solicitations < 0:
            dev = idev.dev
            lladdr = self.ipv6_get_lladdr(dev, IFA_F_TENTATIVE)
            if lladdr is None:
                return
            self.ipv6.ndisc_send_rs(dev, lladdr, IN6ADDR_LINKLOCAL_ALLROUTERS)
            hz = self.net.clock.hz
            idev.rs_interval = self._backoff_update(
                idev.rs_interval, cnf.router_solicitation_max_interval * hz
            )
            delay = (
                cnf.router_solicitation_delay * hz
                if idev.rs_probes == cnf.router_solicitations
                else idev.rs_interval
            )
            idev.rs_timer.mod(self.net.clock.jiffies + delay)

    # -- SLAAC (RFC 4862) -------------------------------------------------------------------------
    @kernel("net/ipv6/addrconf.c", "addrconf_prefix_rcv", "addrconf_prefix_rcv_add_addr")
    def addrconf_prefix_rcv(
        self, dev: NetDevice, buf: bytes | bytearray, opt: int, optlen: int, sllao: bool
    ) -> None:
        """A Prefix Information option: on-link route and autoconfigured address.

        Kernel: net/ipv6/addrconf.c, addrconf_prefix_rcv() and
        addrconf_prefix_rcv_add_addr().
        """
        if optlen < PREFIX_INFO.size:
            return  # "addrconf: prefix option too short"
        _t, _l, prefix_len, pflags, valid_lft, prefered_lft, _r, raw = PREFIX_INFO.unpack_from(
            buf, opt
        )
        prefix = int.from_bytes(raw, "big")
        addr_type = ipv6_addr_type(prefix)
        if addr_type & (IPV6_ADDR_MULTICAST | IPV6_ADDR_LINKLOCAL):
            return
        if prefered_lft > valid_lft:
            if self.net.net_ratelimit():  # net_warn_ratelimited()
                self.net.log.warning("addrconf: prefix option has invalid lifetime")
            return
        idev = self.idev(dev)
        if idev is None:
            return
        if prefix_len > 128:
            return
        hz = self.net.clock.hz
        now = self.net.clock.jiffies
        if pflags & 0x80:  # on-link
            f = self.addrconf_get_prefix_route(
                prefix, prefix_len, dev, RTF_ADDRCONF | RTF_PREFIX_RT, RTF_GATEWAY | RTF_DEFAULT
            )
            finite = valid_lft != INFINITY_LIFE_TIME
            if f is not None:
                if valid_lft == 0:
                    ip6_del_rt(self.ipv6, f)
                elif finite:
                    f.flags |= RTF_EXPIRES
                    f.expires = now + valid_lft * hz
                    self.ipv6.fib6.fib6_force_start_gc()
                else:
                    f.flags &= ~RTF_EXPIRES
                    f.expires = 0
            elif valid_lft:
                flags = RTF_ADDRCONF | RTF_PREFIX_RT
                expires = 0
                if finite:
                    flags |= RTF_EXPIRES
                    expires = valid_lft
                self.addrconf_prefix_route(prefix, prefix_len, 0, dev, expires, flags)
        if not (pflags & 0x40 and idev.cnf.autoconf):
            return
        if prefix_len != 64:
            self.net.log.debug("IPv6 addrconf: prefix with wrong length", plen=prefix_len)
            return
        eui = self.ipv6_generate_eui64(dev)
        if eui is None:
            eui = self._inherit_eui64(idev)
            if eui is None:
                return
        addr = (prefix & prefix_mask(64)) | eui
        ifp = self.ipv6_get_ifaddr(addr, dev, True)
        create = False
        if ifp is None and valid_lft:
            max_addresses = idev.cnf.max_addresses
            if max_addresses and len(idev.addr_list) >= max_addresses:
                return
            try:
                ifp = self.ipv6_add_addr(
                    idev,
                    addr,
                    prefix_len,
                    addr_type & 0xF0,
                    0,
                    valid_lft,
                    prefered_lft,
                )
            except ConfigError:
                return
            create = True
            ifp.flags |= IFA_F_MANAGETEMPADDR
            ifp.cstamp = now
            self.addrconf_dad_start(ifp)
        if ifp is not None:
            update_lft = False
            if ifp.valid_lft > (now - ifp.tstamp) // hz:
                stored_lft = ifp.valid_lft - (now - ifp.tstamp) // hz
            else:
                stored_lft = 0
            if not create and stored_lft:
                # RFC 4862 §5.5.3e: never shorten a valid lifetime below 2 h
                # (or what remains) on an unauthenticated RA
                minimum_lft = min(stored_lft, MIN_VALID_LIFETIME_S)
                valid_lft = max(valid_lft, minimum_lft)
                update_lft = True
            if update_lft:
                ifp.valid_lft = valid_lft
                ifp.prefered_lft = prefered_lft
                ifp.tstamp = now
                ifp.flags &= ~IFA_F_DEPRECATED
            self.addrconf_verify()

    @kernel("ipv6_inherit_eui64")
    def _inherit_eui64(self, idev: Inet6Dev) -> int | None:
        """Kernel: ipv6_inherit_eui64()."""
        for ifp in reversed(idev.addr_list):
            if ifp.scope > IFA_LINK:
                break
            if ifp.scope == IFA_LINK and not ifp.flags & IFA_F_TENTATIVE:
                return ifp.addr & ((1 << 64) - 1)
        return None

    # -- lifetimes ---------------------------------------------------------------------------------
    @kernel("addrconf_verify_rtnl")
    def addrconf_verify(self) -> None:
        """Deprecate and expire addresses; re-arm at the next event.

        Kernel: addrconf_verify_rtnl().
        """
        clock = self.net.clock
        hz = clock.hz
        now = clock.jiffies
        nxt = now + ADDR_CHECK_FREQUENCY_S * hz
        fuzz_minus = hz // 50 if hz > 50 else 1
        for lst in list(self.addr_lst.values()):
            for ifp in list(lst):
                if ifp.flags & IFA_F_PERMANENT and ifp.prefered_lft == INFINITY_LIFE_TIME:
                    continue
                age = (now - ifp.tstamp + fuzz_minus) // hz
                if ifp.valid_lft != INFINITY_LIFE_TIME and age >= ifp.valid_lft:
                    self.ipv6_del_addr(ifp)
                    continue
                if ifp.prefered_lft == INFINITY_LIFE_TIME:
                    continue
                if age >= ifp.prefered_lft:
                    ifp.flags |= IFA_F_DEPRECATED
                    if ifp.valid_lft != INFINITY_LIFE_TIME:
                        nxt = min(nxt, ifp.tstamp + ifp.valid_lft * hz)
                else:
                    nxt = min(nxt, ifp.tstamp + ifp.prefered_lft * hz)
        next_sec = -(-nxt // hz) * hz  # round_jiffies_up()
        sched = next_sec if next_sec < nxt + hz // 4 else nxt
        sched = max(sched, clock.jiffies + hz)  # ADDRCONF_TIMER_FUZZ_MAX
        self.verify_timer.mod(sched)

    # -- forwarding -----------------------------------------------------------------------------
    @kernel("dev_forward_change")
    def dev_forward_change(self, idev: Inet6Dev) -> None:
        """Join/leave the all-routers groups and subnet anycast.

        Kernel: dev_forward_change().
        """
        dev = idev.dev
        if dev.flags & IFF_MULTICAST:
            groups = (
                IN6ADDR_LINKLOCAL_ALLROUTERS,
                IN6ADDR_INTERFACELOCAL_ALLROUTERS,
                IN6ADDR_SITELOCAL_ALLROUTERS,
            )
            for g in groups:
                if idev.cnf.forwarding:
                    self.ipv6_dev_mc_inc(dev, g)
                else:
                    self.ipv6_dev_mc_dec(idev, g)
        for ifp in list(idev.addr_list):
            if ifp.flags & IFA_F_TENTATIVE:
                continue
            if idev.cnf.forwarding:
                self.addrconf_join_anycast(ifp)
            else:
                self.addrconf_leave_anycast(ifp)

    def all_addresses(self) -> Iterator[Inet6Ifaddr]:
        for dev in sorted(self.net.devices.values(), key=lambda d: d.ifindex):
            idev = self.idev(dev)
            if idev is not None:
                yield from idev.addr_list
