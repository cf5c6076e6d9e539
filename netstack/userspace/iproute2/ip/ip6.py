"""The IPv6 side of ``ip address``, ``ip route`` and ``ip route get``.

Theory of operation: ``ip_addr``/``ip_route`` parse the command line as
iproute2 does for every family; when the family is ``inet6`` they hand the
parsed request here, as the kernel's rtnetlink hands RTM_*ADDR/RTM_*ROUTE of
PF_INET6 to addrconf.c and route.c. Listing reads ``dev.ip6_ptr.addr_list``
(scope order, global first, as ``ipv6_link_dev_addr`` keeps it) and the fib6
tables (children-first walk: the default route comes last), and prints what
``print_addrinfo``/``print_route`` print for an IPv6 message: ``inet6`` lines
without a label, ``dynamic``/``tentative``/``dadfailed`` flags, lifetimes
counting down; routes with ``metric`` always and ``pref medium`` at the end.

iproute2: ip/ipaddress.c, ip/iproute.c. Kernel: net/ipv6/addrconf.c
(inet6_rtm_newaddr, inet6_rtm_deladdr, inet6_fill_ifaddr), net/ipv6/route.c
(inet6_rtm_newroute, inet6_rtm_delroute, rt6_fill_node, inet6_rtm_getroute).
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

from netstack.errors import ConfigError
from netstack.ipv6.constants import IP6_RT_PRIO_USER, RTF_CACHE, RTF_EXPIRES, rt_scope
from netstack.ipv6.route import (
    Fib6Config,
    Fib6Info,
    Flowi6,
    fib6_nh_flush_exceptions,
    fib6_route_expires_in,
    ip6_del_rt,
)
from netstack.ipv6.route import ip6_route_add as _ip6_route_add
from netstack.sites import kernel
from netstack.userspace.iproute2.ip.ip_common import (
    AF_INET6,
    AF_UNSPEC,
    INFINITY_LIFE_TIME,
    InetPrefix,
    devices,
    extack_error,
    inet6_addr_match,
    ipv6_or_error,
    rtnl_error,
    rtnl_rtntype_n2a,
    rtnl_rtprot_n2a,
    rtnl_rtscope_n2a,
    rtnl_rttable_n2a,
)
from netstack.userspace.iproute2.utils import Iproute2Options
from netstack.wire.ipv6 import ntoa as ntoa6
from netstack.wire.ipv6 import prefix_mask
from netstack.wire.rtnetlink import (
    IFA_F_NOPREFIXROUTE,
    IFA_F_PERMANENT,
    RT_TABLE_LOCAL,
    RT_TABLE_MAIN,
    RTN_UNICAST,
    RTNH_F_DEAD,
    RTNH_F_LINKDOWN,
    RTNH_F_ONLINK,
    RTPROT_BOOT,
)

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetDevice
    from netstack.ipv6.addrconf import Inet6Ifaddr
    from netstack.ipv6.netns import Ipv6

__all__ = [
    "addr6_list",
    "ipaddr_modify6",
    "iproute_flush6",
    "iproute_get6",
    "iproute_list6",
    "iproute_modify6",
    "print_addrinfo6",
]


# iproute2's ifa_flag_data order (v6 flags; "secondary" is "temporary" for IPv6)
_IFA_FLAGS: Final = (
    (0x01, "temporary"),
    (0x02, "nodad"),
    (0x04, "optimistic"),
    (0x08, "dadfailed"),
    (0x10, "home"),
    (0x20, "deprecated"),
    (0x40, "tentative"),
    (0x80, "permanent"),
    (0x100, "mngtmpaddr"),
    (0x200, "noprefixroute"),
    (0x400, "autojoin"),
    (0x800, "stable-privacy"),
)


# ---------------------------------------------------------------------------
# Addresses
# ---------------------------------------------------------------------------


@kernel("inet6_dump_addr", "in6_dump_addrs")
def addr6_list(net: Net) -> Iterator[Inet6Ifaddr]:
    """An RTM_GETADDR dump of PF_INET6: devices in ifindex order, each one's list.

    Kernel: inet6_dump_addr() → in6_dump_addrs().
    """
    if net.ipv6 is None:
        return
    for dev in devices(net):
        idev = dev.ip6_ptr
        if idev is not None:
            yield from idev.addr_list


def addr6_passes(
    ifp: Inet6Ifaddr, scope: int, scopemask: int, flags: int, flagmask: int, pfx: InetPrefix | None
) -> bool:
    """iproute2: ipaddr_filter() for an IPv6 address."""
    if (scope ^ rt_scope(ifp.scope)) & scopemask:
        return False
    if (flags ^ ifp.flags) & flagmask:
        return False
    return not (
        pfx is not None
        and pfx.family != AF_UNSPEC
        and pfx.bitlen > 0
        and (pfx.family != AF_INET6 or not inet6_addr_match(ifp.addr, pfx, pfx.bitlen))
    )


def print_addrinfo6(opts: Iproute2Options, ifp: Inet6Ifaddr, *, oneline: bool) -> None:
    """One ``inet6`` address. iproute2: ip/ipaddress.c, print_addrinfo()."""
    dev = ifp.dev
    if opts.json:
        opts.records[-1]["addr_info"].append(_addr6_json(opts, ifp))
        return
    o: list[str] = []
    if not opts.brief:
        if oneline:
            o.append(f"{dev.ifindex}: {dev.name}")
        o.append("    inet6 ")
    o.append(ntoa6(ifp.addr))
    if ifp.peer:
        o.append(f" peer {ntoa6(ifp.peer)}")
    o.append(f"/{ifp.prefix_len} ")
    if ifp.rt_priority:
        o.append(f"metric {ifp.rt_priority} ")
    if opts.brief:
        opts.write("".join(o))
        return
    o.append(f"scope {rtnl_rtscope_n2a(rt_scope(ifp.scope))} ")
    flags = ifp.flags
    for mask, name in _IFA_FLAGS:
        if mask == IFA_F_PERMANENT:
            if not flags & mask:
                o.append("dynamic ")
        elif flags & mask:
            o.append(f"{name} ")
        flags &= ~mask
    if flags:
        o.append(f"flags {flags:02x} ")
    o.append(opts.sl)
    clock = dev.net.clock
    valid, preferred = ifp.lifetimes(clock.jiffies, clock.hz)
    o.append("       valid_lft ")
    o.append("forever" if valid == INFINITY_LIFE_TIME else f"{valid}sec")
    o.append(" preferred_lft ")
    o.append("forever" if preferred == INFINITY_LIFE_TIME else f"{preferred}sec")
    o.append("\n")
    opts.write("".join(o))


@kernel("net/ipv6/addrconf.c", "inet6_rtm_newaddr", "inet6_rtm_deladdr")
def ipaddr_modify6(
    net: Net,
    dev: NetDevice,
    *,
    cmd: str,
    lcl: InetPrefix | None,
    peer: InetPrefix | None,
    prefixlen: int,
    ifa_flags: int,
    metric: int,
    valid_lft: int | None,
    preferred_lft: int | None,
) -> None:
    """RTM_NEWADDR / RTM_DELADDR of PF_INET6.

    Kernel: net/ipv6/addrconf.c, inet6_rtm_newaddr() / inet6_rtm_deladdr().
    """
    ipv6 = ipv6_or_error(net)
    ac = ipv6.addrconf
    pfx = lcl if lcl is not None else peer
    if pfx is None:
        raise rtnl_error(errno.EINVAL)
    addr = pfx.v6
    peer_addr = peer.v6 if peer is not None and lcl is not None and peer is not lcl else 0
    if cmd == "del":
        ac.inet6_addr_del(dev, addr, prefixlen)
        return
    valid = INFINITY_LIFE_TIME if valid_lft is None else valid_lft
    preferred = INFINITY_LIFE_TIME if preferred_lft is None else preferred_lft
    idev = dev.ip6_ptr
    existing = ac.ipv6_get_ifaddr(addr, dev, True) if idev is not None else None
    if existing is not None and cmd != "add":
        ac.inet6_addr_modify(
            existing,
            flags=ifa_flags,
            valid_lft=valid,
            prefered_lft=preferred,
            metric=metric,
        )
        return
    if existing is None and cmd == "change":
        raise rtnl_error(errno.ENOENT)
    ac.inet6_addr_add(
        dev,
        addr,
        prefixlen,
        peer=peer_addr,
        flags=ifa_flags & (IFA_F_NOPREFIXROUTE | 0x02 | 0x10 | 0x100),
        valid_lft=valid,
        prefered_lft=preferred,
        metric=metric,
    )


# ---------------------------------------------------------------------------
# Routes
# ---------------------------------------------------------------------------


def _addr6_json(opts: Iproute2Options, ifp: Inet6Ifaddr) -> dict[str, Any]:
    """One ``inet6`` entry of ``"addr_info"``. iproute2: print_addrinfo() under ``-j``."""
    obj: dict[str, Any] = {} if opts.brief else {"family": "inet6"}
    obj["local"] = ntoa6(ifp.addr)
    if ifp.peer:
        obj["address"] = ntoa6(ifp.peer)
    obj["prefixlen"] = ifp.prefix_len
    if ifp.rt_priority:
        obj["metric"] = ifp.rt_priority
    if opts.brief:
        return obj
    obj["scope"] = rtnl_rtscope_n2a(rt_scope(ifp.scope))
    flags = ifp.flags
    for mask, name in _IFA_FLAGS:
        if mask == IFA_F_PERMANENT:
            if not flags & mask:
                obj["dynamic"] = True
        elif flags & mask:
            obj[name] = True
        flags &= ~mask
    if flags:
        obj["flags"] = f"{flags:02x}"
    clock = ifp.dev.net.clock
    obj["valid_life_time"], obj["preferred_life_time"] = ifp.lifetimes(clock.jiffies, clock.hz)
    return obj


def _dst_text(dst: int, dst_len: int) -> str:
    if not dst_len:
        return "default"
    if dst_len == 128:
        return ntoa6(dst)
    return f"{ntoa6(dst)}/{dst_len}"


def print_route6(
    opts: Iproute2Options,
    ipv6: Ipv6,
    f: Fib6Info,
    *,
    show_table: bool,
    show_dev: bool = True,
    get_dst: int | None = None,
    get_src: int | None = None,
    prefsrc: int = 0,
    mtu: int = 0,
    expires: int = 0,
) -> str:
    """One IPv6 route. iproute2: ip/iproute.c, print_route() of rt6_fill_node()'s message.

    *expires* (seconds) is a route exception's (``ip -6 route get`` of a
    destination with a learnt PMTU); iproute2 prints no ``cache`` line for
    IPv6, only the RTA_CACHEINFO expiry.
    """
    if opts.json:
        opts.records.append(
            _route6_json(
                opts, ipv6, f, show_table, show_dev, get_dst, get_src, prefsrc or f.prefsrc, mtu
            )
        )
        return ""
    o: list[str] = []
    if f.type != RTN_UNICAST or opts.details:
        o.append(f"{rtnl_rtntype_n2a(f.type)} ")
    if get_dst is not None:
        o.append(f"{ntoa6(get_dst)} ")
        o.append(f"from {ntoa6(get_src or 0)} ")
    else:
        o.append(f"{_dst_text(f.dst, f.dst_len)} ")
    gw = f.nh.gw
    if gw:
        o.append(f"via {ntoa6(gw)} ")
    if show_dev:
        o.append(f"dev {f.nh.dev.name} ")
    if f.table and (f.table != RT_TABLE_MAIN or opts.details) and show_table:
        o.append(f"table {rtnl_rttable_n2a(f.table)} ")
    if f.protocol != RTPROT_BOOT or opts.details:
        o.append(f"proto {rtnl_rtprot_n2a(f.protocol)} ")
    if opts.details:
        o.append("scope global ")
    src = prefsrc or f.prefsrc
    if src:
        o.append(f"src {ntoa6(src)} ")
    o.append(f"metric {f.metric} ")
    nhf = f.nh.flags
    if nhf & RTNH_F_DEAD:
        o.append("dead ")
    if nhf & RTNH_F_ONLINK:
        o.append("onlink ")
    if nhf & RTNH_F_LINKDOWN:
        o.append("linkdown ")
    if not expires:
        expires = fib6_route_expires_in(ipv6, f) if f.flags & RTF_EXPIRES else 0
    if expires:
        o.append(f"expires {expires}sec ")
    m = mtu or f.mtu
    if m or f.mtu_lock:
        o.append("mtu " + ("lock " if f.mtu_lock else "") + f"{m} ")
    if f.hoplimit:
        o.append(f"hoplimit {f.hoplimit} ")
    if f.fastopen_no_cookie:
        o.append(f"fastopen_no_cookie {f.fastopen_no_cookie} ")
    o.append("pref medium\n")
    return "".join(o)


def _route6_json(
    opts: Iproute2Options,
    ipv6: Ipv6,
    f: Fib6Info,
    show_table: bool,
    show_dev: bool,
    get_dst: int | None,
    get_src: int | None,
    src: int,
    mtu: int,
) -> dict[str, Any]:
    """One IPv6 route under ``-j``: print_route()'s members, in its order."""
    obj: dict[str, Any] = {}
    if f.type != RTN_UNICAST or opts.details:
        obj["type"] = rtnl_rtntype_n2a(f.type)
    if get_dst is not None:
        obj["dst"] = ntoa6(get_dst)
        obj["from"] = ntoa6(get_src or 0)
    else:
        obj["dst"] = _dst_text(f.dst, f.dst_len)
    if f.nh.gw:
        obj["gateway"] = ntoa6(f.nh.gw)
    if show_dev:
        obj["dev"] = f.nh.dev.name
    if f.table and (f.table != RT_TABLE_MAIN or opts.details) and show_table:
        obj["table"] = rtnl_rttable_n2a(f.table)
    if f.protocol != RTPROT_BOOT or opts.details:
        obj["protocol"] = rtnl_rtprot_n2a(f.protocol)
    if opts.details:
        obj["scope"] = "global"
    if src:
        obj["prefsrc"] = ntoa6(src)
    obj["metric"] = f.metric
    nhf = f.nh.flags
    obj["flags"] = [
        name
        for bit, name in (
            (RTNH_F_DEAD, "dead"),
            (RTNH_F_ONLINK, "onlink"),
            (RTNH_F_LINKDOWN, "linkdown"),
        )
        if nhf & bit
    ]
    expires = fib6_route_expires_in(ipv6, f) if f.flags & RTF_EXPIRES else 0
    if expires:
        obj["expires"] = expires
    metrics: dict[str, Any] = {}  # print_rta_metrics(): one object, in RTAX order
    if mtu or f.mtu or f.mtu_lock:
        metrics["mtu"] = mtu or f.mtu
    if f.hoplimit:
        metrics["hoplimit"] = f.hoplimit
    if f.fastopen_no_cookie:
        metrics["fastopen_no_cookie"] = f.fastopen_no_cookie
    if metrics:
        obj["metrics"] = [metrics]
    obj["pref"] = "medium"
    return obj


@kernel("inet6_dump_fib", "fib6_dump_node", "rt6_dump_route")
def iproute_list6(
    net: Net,
    opts: Iproute2Options,
    *,
    tb: int,
    cloned: bool,
    oif: int,
    protocol: int,
    protocolmask: int,
    rdst: InetPrefix | None,
    mdst: InetPrefix | None,
    rvia: InetPrefix | None,
    metric: int,
    metricmask: int,
    typemask: int,
) -> None:
    """``ip -6 route show``. Kernel: inet6_dump_fib() → fib6_dump_node() → rt6_dump_route()."""
    ipv6 = ipv6_or_error(net)
    opts.json_list = True
    tables = [t for tid, t in sorted(ipv6.fib6.tables.items()) if not tb or tid == tb]
    if tb and not tables:
        if tb == RT_TABLE_MAIN:
            return
        raise ConfigError("Error: ipv6: FIB table does not exist.\nDump terminated", errno.ENOENT)
    if tb == 0:  # "table all": the kernel dumps the local table (255) before main (254)
        tables.sort(key=lambda t: t.id != RT_TABLE_LOCAL)
    for table in tables:
        for f in table.routes():
            if cloned:
                for rt in list(f.nh.exceptions.values()):
                    _print_exception(opts, ipv6, f, rt.rt6i_dst[0], rt)
                continue
            if oif and f.nh.dev.ifindex != oif:
                continue
            if (protocol ^ f.protocol) & protocolmask:
                continue
            if typemask and not typemask & (1 << f.type):
                continue
            if metricmask and (f.metric ^ metric) & metricmask:
                continue
            if not _prefix_ok(f.dst, f.dst_len, rdst, mdst):
                continue
            if (
                rvia is not None
                and rvia.family
                and (rvia.family != AF_INET6 or not inet6_addr_match(f.nh.gw, rvia, rvia.bitlen))
            ):
                continue
            opts.write(print_route6(opts, ipv6, f, show_table=not tb, show_dev=not oif))


def _print_exception(
    opts: Iproute2Options, ipv6: Ipv6, f: Fib6Info, daddr: int, rt: object
) -> None:
    mtu = getattr(rt, "rt6i_pmtu", 0)
    clock = ipv6.net.clock
    exp = getattr(rt, "expires", 0)
    o = [f"{ntoa6(daddr)} "]
    if f.nh.gw:
        o.append(f"via {ntoa6(f.nh.gw)} ")
    o.append(f"dev {f.nh.dev.name} metric {f.metric} ")
    if exp and exp > clock.jiffies:
        o.append(f"expires {(exp - clock.jiffies) // clock.hz}sec ")
    if mtu:
        o.append(f"mtu {mtu} ")
    o.append("pref medium\n")
    opts.write("".join(o))


def _prefix_ok(addr: int, rlen: int, root: InetPrefix | None, match: InetPrefix | None) -> bool:
    """iproute2: filter_nlmsg()'s rdst/mdst checks for IPv6."""
    if root is not None and (root.family or root.prefixlen_specified):
        if root.family not in (AF_UNSPEC, AF_INET6) or root.bitlen > rlen:
            return False
        if not inet6_addr_match(addr, root, root.bitlen):
            return False
    if match is not None and (match.family or match.prefixlen_specified):
        if match.family not in (AF_UNSPEC, AF_INET6):
            return False
        if 0 <= match.bitlen < rlen:
            return False
        if not inet6_addr_match(addr, match, rlen):
            return False
    return True


@kernel("net/ipv6/route.c", "inet6_rtm_newroute", "inet6_rtm_delroute", "ip6_route_del")
def iproute_modify6(
    net: Net,
    *,
    cmd: str,
    nlflags: int,
    dst: InetPrefix,
    gw: InetPrefix | None,
    dev: NetDevice | None,
    table: int,
    rtype: int,
    protocol: int,
    metric: int,
    prefsrc: InetPrefix | None,
    mtu: int,
    mtu_lock: bool,
    onlink: bool,
    expires: int,
    fastopen_no_cookie: int = 0,
) -> None:
    """RTM_NEWROUTE / RTM_DELROUTE of PF_INET6.

    Kernel: net/ipv6/route.c, inet6_rtm_newroute() / inet6_rtm_delroute() → ip6_route_del().
    """
    ipv6 = ipv6_or_error(net)
    dst_len = dst.bitlen
    daddr = dst.v6 if dst.bytelen else 0
    if table == 0:
        table = RT_TABLE_MAIN
    if cmd == "del":
        t = ipv6.fib6.tables.get(table)
        if t is None:
            raise extack_error("FIB table does not exist", errno.ESRCH)
        bucket = t.bucket(daddr & prefix_mask(dst_len), dst_len) or []
        for f in list(bucket):
            if dev is not None and f.nh.dev is not dev:
                continue
            if gw is not None and gw.bytelen and f.nh.gw != gw.v6:
                continue
            if metric and metric != f.metric:
                continue
            if protocol and protocol != f.protocol:
                continue
            ip6_del_rt(ipv6, f)
            return
        raise rtnl_error(errno.ESRCH)
    cfg = Fib6Config(
        daddr,
        dst_len,
        table=table,
        metric=metric or IP6_RT_PRIO_USER,
        rtype=rtype,
        protocol=protocol,
        dev=dev,
        gw=gw.v6 if gw is not None and gw.bytelen else None,
        prefsrc=prefsrc.v6 if prefsrc is not None and prefsrc.bytelen else 0,
        expires=expires,
        mtu=mtu,
        mtu_lock=mtu_lock,
        onlink=onlink,
        nlflags=nlflags,
    )
    cfg.fastopen_no_cookie = fastopen_no_cookie
    _ip6_route_add(ipv6, cfg)


@kernel("net/ipv6/route.c", "inet6_rtm_getroute")
def iproute_get6(
    net: Net,
    opts: Iproute2Options,
    *,
    dst: InetPrefix,
    src: InetPrefix | None,
    oif: NetDevice | None,
    fib_match: bool,
) -> None:
    """``ip -6 route get``. Kernel: net/ipv6/route.c, inet6_rtm_getroute()."""
    ipv6 = ipv6_or_error(net)
    daddr = dst.v6 if dst.bytelen else 0
    saddr = src.v6 if src is not None and src.bytelen else 0
    fl6 = Flowi6(daddr, saddr, oif=oif.ifindex if oif is not None else 0)
    rt = ipv6.ip6_route_output(fl6)
    try:
        if rt.error:
            raise rtnl_error(-rt.error)
        f = rt.from_
        if f is None:
            raise rtnl_error(errno.ENETUNREACH)
        if fib_match:
            opts.write(print_route6(opts, ipv6, f, show_table=True))
            return
        prefsrc = saddr
        if not prefsrc and rt.dev is not None:
            prefsrc = ipv6.ipv6_dev_get_saddr(rt.dev, daddr) or 0
        pmtu = rt.rt6i_pmtu if rt.rt6i_flags & RTF_CACHE else 0
        now = ipv6.net.clock.jiffies
        rt_expires = 0
        if rt.rt6i_flags & RTF_CACHE and rt.expires > now:  # rt6_fill_node(): RTA_CACHEINFO
            rt_expires = (rt.expires - now) // ipv6.net.clock.hz
        line = print_route6(
            opts,
            ipv6,
            f,
            show_table=True,
            get_dst=daddr,
            get_src=saddr,
            prefsrc=prefsrc,
            mtu=pmtu,
            expires=rt_expires,
        )
        opts.write(line)
    finally:
        rt.release()


def iproute_flush6(
    net: Net,
    opts: Iproute2Options,
    *,
    tb: int,
    cloned: bool,
    oif: int,
    protocol: int,
    protocolmask: int,
    rdst: InetPrefix | None,
    mdst: InetPrefix | None,
) -> None:
    """``ip -6 route flush``: delete what a dump selects, in rounds.

    iproute2: iproute_list_flush_or_save(IPROUTE_FLUSH) for PF_INET6.
    """
    ipv6 = ipv6_or_error(net)
    if cloned:
        n = 0
        for t in ipv6.fib6.tables.values():
            for f in t.routes():
                n += len(f.nh.exceptions)
                fib6_nh_flush_exceptions(ipv6, f.nh)
        ipv6.rt6_genid_bump()
        if opts.stats:
            opts.write(
                "Nothing to flush.\n" if not n else "*** Flush is complete after 1 round ***\n"
            )
        return
    rounds = 0
    while True:
        victims = [
            f
            for tid, t in sorted(ipv6.fib6.tables.items())
            if not tb or tid == tb
            for f in t.routes()
            if (not oif or f.nh.dev.ifindex == oif)
            and not (protocol ^ f.protocol) & protocolmask
            and _prefix_ok(f.dst, f.dst_len, rdst, mdst)
        ]
        if not victims:
            if opts.stats:
                if rounds == 0:
                    opts.write("Nothing to flush.\n")
                else:
                    s = "s" if rounds > 1 else ""
                    opts.write(f"*** Flush is complete after {rounds} round{s} ***\n")
            return
        for f in victims:
            if opts.stats > 1:
                opts.write(print_route6(opts, ipv6, f, show_table=not tb))
            ip6_del_rt(ipv6, f)
        rounds += 1
        if opts.stats:
            opts.write(f"\n*** Round {rounds}, deleting {len(victims)} entries ***\n")
