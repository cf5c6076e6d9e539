"""``ip route``: show, add/replace/append/change/prepend/del, get and flush IPv4 routes.

Theory of operation: a route dump walks the FIB tables the filter selects
(``main`` unless ``table …``; ``all``/``0`` means every table, in the
kernel's table-hash order) and prints each alias in trie order — prefixes
ascending, and for one prefix the longer length first — the way
iproute2's ``print_route`` does: ``type`` unless unicast, destination,
``via``, ``dev``, ``table`` unless main, ``proto`` unless boot, ``scope``
unless global, ``src``, ``metric``, nexthop flags (``onlink``, ``linkdown``),
metrics (``mtu lock N``). A field the filter pinned (``dev``, ``proto``,
``scope``…) is not repeated, as in iproute2.

``ip route get`` asks the routing code itself: an output lookup
(``ip_route_output_key``) or, with ``iif``, an input lookup
(``ip_route_input_noref``) on a throw-away skb, as the kernel's
``inet_rtm_getroute`` does, and prints the resulting rtable as
``rt_fill_info`` reports it (RTM_F_CLONED: no proto/scope; ``uid`` for output
lookups; the ``cache`` line with RTCF flags, PMTU ``expires``/``mtu``).

Changes build a :class:`~netstack.ipv4.fib.RouteConfig` with the netlink
flags of the command (add = CREATE|EXCL, replace = CREATE|REPLACE, append =
CREATE|APPEND, change = REPLACE, prepend = CREATE, test = EXCL) and the scope
iproute2 computes.

iproute2: ip/iproute.c. Kernel: net/ipv4/fib_frontend.c (inet_rtm_newroute,
inet_rtm_delroute, inet_dump_fib), net/ipv4/fib_semantics.c
(fib_create_info, fib_dump_info), net/ipv4/route.c (inet_rtm_getroute,
rt_fill_info).
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

import attrs

from netstack.core.skbuff import SkBuff, alloc_skb, consume_skb
from netstack.drivers.loopback import LOOPBACK_IFINDEX
from netstack.errors import ConfigError
from netstack.ipv4.constants import (
    RTCF_BROADCAST,
    RTCF_DIRECTSRC,
    RTCF_DNAT,
    RTCF_DOREDIRECT,
    RTCF_LOCAL,
    RTCF_MULTICAST,
    RTCF_NOTIFY,
    RTCF_REDIRECTED,
)
from netstack.ipv4.fib import RouteConfig
from netstack.ipv4.route import Flowi4, Rtable, ip_route_input_noref, ip_route_output_key
from netstack.sites import kernel
from netstack.userspace.iproute2.ip.ip6 import (
    iproute_flush6,
    iproute_get6,
    iproute_list6,
    iproute_modify6,
)
from netstack.userspace.iproute2.ip.ip_common import (
    AF_INET,
    AF_INET6,
    AF_UNSPEC,
    USER_HZ,
    Args,
    InetPrefix,
    duparg2,
    extack_error,
    get_addr,
    get_prefix,
    get_u32,
    get_unsigned,
    inet_addr_match,
    invarg,
    ipv4_or_error,
    ll_name_to_dev,
    matches,
    nodev,
    ntoa,
    read_family,
    rtnl_error,
    rtnl_rtntype_n2a,
    rtnl_rtprot_a2n,
    rtnl_rtprot_n2a,
    rtnl_rtscope_a2n,
    rtnl_rtscope_n2a,
    rtnl_rttable_a2n,
    rtnl_rttable_n2a,
    strtoul,
)
from netstack.userspace.iproute2.keywords import KeywordTable, parse_keywords
from netstack.userspace.iproute2.utils import Iproute2Options
from netstack.wire.rtnetlink import (
    NLM_F_APPEND,
    NLM_F_CREATE,
    NLM_F_EXCL,
    NLM_F_REPLACE,
    RT_SCOPE_HOST,
    RT_SCOPE_LINK,
    RT_SCOPE_NOWHERE,
    RT_SCOPE_UNIVERSE,
    RT_TABLE_LOCAL,
    RT_TABLE_MAIN,
    RTN_ANYCAST,
    RTN_BLACKHOLE,
    RTN_BROADCAST,
    RTN_LOCAL,
    RTN_MULTICAST,
    RTN_NAT,
    RTN_PROHIBIT,
    RTN_THROW,
    RTN_UNICAST,
    RTN_UNREACHABLE,
    RTN_UNSPEC,
    RTNH_F_DEAD,
    RTNH_F_LINKDOWN,
    RTNH_F_OFFLOAD,
    RTNH_F_ONLINK,
    RTPROT_BOOT,
)

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetDevice
    from netstack.ipv4.fib import FibAlias, FibTable
    from netstack.ipv4.netns import Ipv4

__all__ = ["IPROUTE_USAGE", "do_iproute"]

IPROUTE_USAGE: Final = (
    "Usage: ip route { list | flush } SELECTOR\n"
    "       ip route save SELECTOR\n"
    "       ip route restore\n"
    "       ip route showdump\n"
    "       ip route get [ ROUTE_GET_FLAGS ] [ to ] ADDRESS\n"
    "                            [ from ADDRESS iif STRING ]\n"
    "                            [ oif STRING ] [ tos TOS ]\n"
    "                            [ mark NUMBER ] [ vrf NAME ]\n"
    "                            [ uid NUMBER ] [ ipproto PROTOCOL ]\n"
    "                            [ sport NUMBER ] [ dport NUMBER ]\n"
    "                            [ as ADDRESS ] [ flowlabel FLOWLABEL ]\n"
    "       ip route { add | del | change | append | replace } ROUTE\n"
    "SELECTOR := [ root PREFIX ] [ match PREFIX ] [ exact PREFIX ]\n"
    "            [ table TABLE_ID ] [ vrf NAME ] [ proto RTPROTO ]\n"
    "            [ type TYPE ] [ scope SCOPE ]\n"
    "ROUTE := NODE_SPEC [ INFO_SPEC ]\n"
    "NODE_SPEC := [ TYPE ] PREFIX [ tos TOS ]\n"
    "             [ table TABLE_ID ] [ proto RTPROTO ]\n"
    "             [ scope SCOPE ] [ metric METRIC ]\n"
    "             [ ttl-propagate { enabled | disabled } ]\n"
    "INFO_SPEC := { NH | nhid ID } OPTIONS FLAGS [ nexthop NH ]...\n"
    "NH := [ encap ENCAPTYPE ENCAPHDR ] [ via [ FAMILY ] ADDRESS ]\n"
    "      [ dev STRING ] [ weight NUMBER ] NHFLAGS\n"
    "FAMILY := [ inet | inet6 | mpls | bridge | link ]\n"
    "OPTIONS := FLAGS [ mtu NUMBER ] [ advmss NUMBER ] [ as [ to ] ADDRESS ]\n"
    "           [ rtt TIME ] [ rttvar TIME ] [ reordering NUMBER ]\n"
    "           [ window NUMBER ] [ cwnd NUMBER ] [ initcwnd NUMBER ]\n"
    "           [ ssthresh NUMBER ] [ realms REALM ] [ src ADDRESS ]\n"
    "           [ rto_min TIME ] [ hoplimit NUMBER ] [ initrwnd NUMBER ]\n"
    "           [ features FEATURES ] [ quickack BOOL ] [ congctl NAME ]\n"
    "           [ pref PREF ] [ expires TIME ] [ fastopen_no_cookie BOOL ]\n"
    "TYPE := { unicast | local | broadcast | multicast | throw |\n"
    "          unreachable | prohibit | blackhole | nat }\n"
    "TABLE_ID := [ local | main | default | all | NUMBER ]\n"
    "SCOPE := [ host | link | global | NUMBER ]\n"
    "NHFLAGS := [ onlink | pervasive ]\n"
    "RTPROTO := [ kernel | boot | static | NUMBER ]\n"
    "PREF := [ low | medium | high ]\n"
    "TIME := NUMBER[s|ms]\n"
    "BOOL := [1|0]\n"
    "FEATURES := ecn\n"
    "ENCAPTYPE := [ mpls | ip | ip6 | seg6 | seg6local | rpl | ioam6 | xfrm ]\n"
    "ENCAPHDR := [ MPLSLABEL | SEG6HDR | SEG6LOCAL | IOAM6HDR | XFRMINFO ]\n"
    "SEG6HDR := [ mode SEGMODE ] segs ADDR1,ADDRi,ADDRn [hmac HMACKEYID] [cleanup]\n"
    "           [ lookup TABLEID ]\n"
    "SEGMODE := [ encap | encap.red | inline | l2encap | l2encap.red ]\n"
    "SEG6LOCAL := action ACTION [ OPTIONS ] [ count ]\n"
    "ACTION := { End | End.X | End.T | End.DX2 | End.DX6 | End.DX4 |\n"
    "            End.DT6 | End.DT4 | End.DT46 | End.B6 | End.B6.Encaps |\n"
    "            End.BM | End.S | End.AS | End.AM | End.BPF }\n"
    "OPTIONS := OPTION [ OPTIONS ]\n"
    "OPTION := { flavors FLAVORS | srh SEG6HDR | nh4 ADDR | nh6 ADDR | iif DEV | oif DEV |\n"
    "            table TABLEID | vrftable TABLEID | endpoint PROGNAME }\n"
    "FLAVORS := { FLAVOR[,FLAVOR] }\n"
    "FLAVOR := { psp | usp | usd | next-csid }\n"
    "IOAM6HDR := trace prealloc type IOAM6_TRACE_TYPE ns IOAM6_NAMESPACE size IOAM6_TRACE_SIZE\n"
    "XFRMINFO := if_id IF_ID [ link_dev LINK ]\n"
    "ROUTE_GET_FLAGS := ROUTE_GET_FLAG [ ROUTE_GET_FLAGS ]\n"
    "ROUTE_GET_FLAG := [ connected | fibmatch | notify ]"
)

RTM_F_NOTIFY: Final = 0x100
RTM_F_CLONED: Final = 0x200
RTNH_F_PERVASIVE: Final = 2
RTNH_F_TRAP: Final = 0x40
RTNH_F_UNRESOLVED: Final = 0x20
RTM_F_OFFLOAD: Final = 0x2000
RTM_F_TRAP: Final = 0x4000
RTM_F_OFFLOAD_FAILED: Final = 0x20000000

# fib_props[].scope: the narrowest scope each route type may have
FIB_PROPS_SCOPE: Final = {
    RTN_UNSPEC: RT_SCOPE_NOWHERE,
    RTN_UNICAST: RT_SCOPE_UNIVERSE,
    RTN_LOCAL: RT_SCOPE_HOST,
    RTN_BROADCAST: RT_SCOPE_LINK,
    RTN_ANYCAST: RT_SCOPE_LINK,
    RTN_MULTICAST: RT_SCOPE_UNIVERSE,
    RTN_BLACKHOLE: RT_SCOPE_UNIVERSE,
    RTN_UNREACHABLE: RT_SCOPE_UNIVERSE,
    RTN_PROHIBIT: RT_SCOPE_UNIVERSE,
    RTN_THROW: RT_SCOPE_UNIVERSE,
    RTN_NAT: RT_SCOPE_NOWHERE,
    11: RT_SCOPE_NOWHERE,
}
REJECT_TYPES: Final = (RTN_BLACKHOLE, RTN_UNREACHABLE, RTN_PROHIBIT, RTN_THROW)

_RT_FLAGS: Final = (
    (RTNH_F_DEAD, "dead"),
    (RTNH_F_ONLINK, "onlink"),
    (RTNH_F_PERVASIVE, "pervasive"),
    (RTNH_F_OFFLOAD, "offload"),
    (RTNH_F_TRAP, "trap"),
    (RTM_F_NOTIFY, "notify"),
    (RTNH_F_LINKDOWN, "linkdown"),
    (RTNH_F_UNRESOLVED, "unresolved"),
    (RTM_F_OFFLOAD, "rt_offload"),
    (RTM_F_TRAP, "rt_trap"),
    (RTM_F_OFFLOAD_FAILED, "rt_offload_failed"),
)

_CACHE_FLAGS: Final = (
    (RTCF_LOCAL, "local"),
    (0x40000000, "reject"),
    (RTCF_MULTICAST, "mc"),
    (RTCF_BROADCAST, "brd"),
    (RTCF_DNAT, "dst-nat"),
    (0x00800000, "src-nat"),
    (0x00400000, "masq"),
    (0x00020000, "dst-direct"),
    (RTCF_DIRECTSRC, "src-direct"),
    (RTCF_REDIRECTED, "redirected"),
    (RTCF_DOREDIRECT, "redirect"),
    (0x00200000, "fastroute"),
    (RTCF_NOTIFY, "notify"),
    (0x00080000, "proxy"),
)

_UNSUPPORTED_METRICS: Final = (
    "hoplimit",
    "advmss",
    "rtt",
    "rto_min",
    "rttvar",
    "ssthresh",
    "reordering",
    "window",
    "cwnd",
    "initcwnd",
    "initrwnd",
    "features",
    "quickack",
    "congctl",
)


def _unsupported(what: str) -> ConfigError:
    return ConfigError(f'netstack: "ip route ... {what}" is not supported', errno.EOPNOTSUPP)


def rtnl_rtntype_a2n(arg: str) -> int | None:
    """iproute2: lib/rt_names.c, rtnl_rtntype_a2n()."""
    if arg == "local":
        return RTN_LOCAL
    if arg == "nat":
        return RTN_NAT
    if matches(arg, "broadcast") or arg == "brd":
        return RTN_BROADCAST
    for name, value in (
        ("anycast", RTN_ANYCAST),
        ("multicast", RTN_MULTICAST),
        ("prohibit", RTN_PROHIBIT),
        ("unreachable", RTN_UNREACHABLE),
        ("blackhole", RTN_BLACKHOLE),
        ("xresolve", 11),
        ("unicast", RTN_UNICAST),
    ):
        if matches(arg, name):
            return value
    if arg == "throw":
        return RTN_THROW
    value, end, _ = strtoul(arg)
    if end == 0 or end != len(arg) or value > 255:
        return None
    return value


def rtnl_dsfield_a2n(arg: str) -> int | None:
    """A TOS byte (hex). iproute2: lib/rt_names.c, rtnl_dsfield_a2n()."""
    value, end, _ = strtoul(arg, 16)
    if end == 0 or end != len(arg) or value > 255:
        return None
    return value


def _flags_text(flags: int) -> str:
    return "".join(f"{name} " for bit, name in _RT_FLAGS if flags & bit)


def _dst_text(dst: int, dst_len: int) -> str:
    if not dst_len:
        return "default"
    if dst_len == 32:
        return ntoa(dst)
    return f"{ntoa(dst)}/{dst_len}"


# ---------------------------------------------------------------------------
# The dump filter (filter_nlmsg)
# ---------------------------------------------------------------------------


@attrs.define
class RouteFilter:
    """iproute2's route ``filter``; a mask of -1 pins a field (it is then not printed)."""

    tb: int = 0
    cloned: int = 0
    protocol: int = 0
    protocolmask: int = 0
    scope: int = 0
    scopemask: int = 0
    typemask: int = 0
    tos: int = 0
    tosmask: int = 0
    iif: int = 0
    iifmask: int = 0
    oif: int = 0
    oifmask: int = 0
    metric: int = 0
    metricmask: int = 0
    rdst: InetPrefix | None = None
    mdst: InetPrefix | None = None
    rvia: InetPrefix | None = None
    rprefsrc: InetPrefix | None = None
    rsrc: InetPrefix | None = None
    msrc: InetPrefix | None = None


@attrs.frozen
class RouteMsg:
    """An RTM_NEWROUTE message (from the FIB or from rt_fill_info)."""

    rtype: int
    dst: int
    dst_len: int
    table: int
    protocol: int = 0
    scope: int = RT_SCOPE_UNIVERSE
    flags: int = 0
    tos: int = 0
    src: int | None = None  # RTA_SRC
    gateway: int | None = None
    oif: NetDevice | None = None
    prefsrc: int | None = None
    priority: int | None = None
    mtu: int = 0
    mtu_lock: bool = False
    fastopen_no_cookie: int = 0  # RTAX_FASTOPEN_NO_COOKIE
    uid: int | None = None
    mark: int = 0
    iif: NetDevice | None = None
    expires: int = 0  # seconds
    users: int = 0
    used: int = 0
    age: int = 0


def _prefix_ok(addr: int, rlen: int, root: InetPrefix | None, match: InetPrefix | None) -> bool:
    if root is not None and (root.family or root.prefixlen_specified):
        if root.family not in (AF_UNSPEC, AF_INET) or root.bitlen > rlen:
            return False
        if not inet_addr_match(addr, root, root.bitlen):
            return False
    if match is not None and (match.family or match.prefixlen_specified):
        if match.family not in (AF_UNSPEC, AF_INET):
            return False
        if match.bitlen >= 0 and match.bitlen < rlen:
            return False
        if not inet_addr_match(addr, match, rlen):
            return False
    return True


def filter_route(filt: RouteFilter, r: RouteMsg) -> bool:
    """True when *r* passes. iproute2: ip/iproute.c, filter_nlmsg()."""
    if filt.cloned == (0 if r.flags & RTM_F_CLONED else 1):
        return False
    if filt.tb > 0 and filt.tb != r.table:
        return False
    if (filt.protocol ^ r.protocol) & filt.protocolmask:
        return False
    if (filt.scope ^ r.scope) & filt.scopemask:
        return False
    if filt.typemask and not filt.typemask & (1 << r.rtype):
        return False
    if (filt.tos ^ r.tos) & filt.tosmask:
        return False
    if not _prefix_ok(r.dst, r.dst_len, filt.rdst, filt.mdst):
        return False
    src_len = 32 if r.src is not None else 0
    if not _prefix_ok(r.src or 0, src_len, filt.rsrc, filt.msrc):
        return False
    if filt.rvia is not None and filt.rvia.family:
        if filt.rvia.family != AF_INET:
            return False
        if not inet_addr_match(r.gateway or 0, filt.rvia, filt.rvia.bitlen):
            return False
    if filt.rprefsrc is not None and filt.rprefsrc.family:
        if filt.rprefsrc.family != AF_INET:
            return False
        if not inet_addr_match(r.prefsrc or 0, filt.rprefsrc, filt.rprefsrc.bitlen):
            return False
    if filt.iifmask:
        iif = r.iif.ifindex if r.iif is not None else 0
        if (iif ^ filt.iif) & filt.iifmask:
            return False
    # the kernel filters the dump by device too: a route without one never matches
    if filt.oifmask and (r.oif is None or (r.oif.ifindex ^ filt.oif) & filt.oifmask):
        return False
    return not (filt.metricmask and ((r.priority or 0) ^ filt.metric) & filt.metricmask)


def print_route(opts: Iproute2Options, filt: RouteFilter, r: RouteMsg) -> str:
    """One route line as iproute2 prints it. iproute2: ip/iproute.c, print_route()."""
    if opts.json:
        opts.records.append(_route_json(opts, filt, r))
        return ""
    o: list[str] = []
    if (r.rtype != RTN_UNICAST or opts.details) and (
        not filt.typemask or filt.typemask & (1 << r.rtype)
    ):
        o.append(f"{rtnl_rtntype_n2a(r.rtype)} ")
    o.append(f"{_dst_text(r.dst, r.dst_len)} ")
    if r.src is not None:
        o.append(f"from {ntoa(r.src)} ")
    if r.tos and filt.tosmask != -1:
        o.append(f"tos 0x{r.tos:02x} ")
    if r.gateway is not None and (filt.rvia is None or filt.rvia.bitlen != 32):
        o.append(f"via {ntoa(r.gateway)} ")
    if r.oif is not None and filt.oifmask != -1:
        o.append(f"dev {r.oif.name} ")
    if r.table and (r.table != RT_TABLE_MAIN or opts.details) and not filt.tb:
        o.append(f"table {rtnl_rttable_n2a(r.table)} ")
    if not r.flags & RTM_F_CLONED:
        if (r.protocol != RTPROT_BOOT or opts.details) and filt.protocolmask != -1:
            o.append(f"proto {rtnl_rtprot_n2a(r.protocol)} ")
        if (r.scope != RT_SCOPE_UNIVERSE or opts.details) and filt.scopemask != -1:
            o.append(f"scope {rtnl_rtscope_n2a(r.scope)} ")
    if r.prefsrc is not None and (filt.rprefsrc is None or filt.rprefsrc.bitlen != 32):
        o.append(f"src {ntoa(r.prefsrc)} ")
    if r.priority is not None and filt.metricmask != -1:
        o.append(f"metric {r.priority} ")
    o.append(_flags_text(r.flags))
    if r.mark:
        o.append(f"mark {r.mark:#x} " if r.mark >= 16 else f"mark {r.mark} ")
    if r.uid is not None:
        o.append(f"uid {r.uid} ")
    if r.flags & RTM_F_CLONED:
        o.append(f"{opts.sl}    cache ")
        cflags = r.flags & ~0xFFFF
        if cflags:
            o.append("<")
            for bit, name in _CACHE_FLAGS:
                if cflags & bit:
                    cflags &= ~bit
                    o.append(name + ("," if cflags else "> "))
            if cflags:
                o.append(f"{cflags:x}>")
        if r.expires:
            o.append(f"expires {r.expires}sec ")
        if opts.stats:
            if r.users:
                o.append(f"users {r.users} ")
            if r.used:
                o.append(f"used {r.used} ")
            if r.age:
                o.append(f"age {r.age}sec ")
    # print_rta_metrics(): the metrics in RTAX order (mtu 2, fastopen_no_cookie 17)
    if r.mtu or r.mtu_lock:
        o.append("mtu " + ("lock " if r.mtu_lock else "") + f"{r.mtu} ")
    if r.fastopen_no_cookie:
        o.append(f"fastopen_no_cookie {r.fastopen_no_cookie} ")
    if r.iif is not None and filt.iifmask != -1:
        o.append(f"iif {r.iif.name} ")
    o.append("\n")
    return "".join(o)


def _route_json(opts: Iproute2Options, filt: RouteFilter, r: RouteMsg) -> dict[str, Any]:
    """One route under ``-j``: print_route()'s members, with its conditions and order."""
    obj: dict[str, Any] = {}
    if (r.rtype != RTN_UNICAST or opts.details) and (
        not filt.typemask or filt.typemask & (1 << r.rtype)
    ):
        obj["type"] = rtnl_rtntype_n2a(r.rtype)
    obj["dst"] = _dst_text(r.dst, r.dst_len)
    if r.src is not None:
        obj["src"] = ntoa(r.src)
    if r.tos and filt.tosmask != -1:
        obj["tos"] = f"0x{r.tos:02x}"
    if r.gateway is not None and (filt.rvia is None or filt.rvia.bitlen != 32):
        obj["gateway"] = ntoa(r.gateway)
    if r.oif is not None and filt.oifmask != -1:
        obj["dev"] = r.oif.name
    if r.table and (r.table != RT_TABLE_MAIN or opts.details) and not filt.tb:
        obj["table"] = rtnl_rttable_n2a(r.table)
    if not r.flags & RTM_F_CLONED:
        if (r.protocol != RTPROT_BOOT or opts.details) and filt.protocolmask != -1:
            obj["protocol"] = rtnl_rtprot_n2a(r.protocol)
        if (r.scope != RT_SCOPE_UNIVERSE or opts.details) and filt.scopemask != -1:
            obj["scope"] = rtnl_rtscope_n2a(r.scope)
    if r.prefsrc is not None and (filt.rprefsrc is None or filt.rprefsrc.bitlen != 32):
        obj["prefsrc"] = ntoa(r.prefsrc)
    if r.priority is not None and filt.metricmask != -1:
        obj["metric"] = r.priority
    obj["flags"] = [name for bit, name in _RT_FLAGS if r.flags & bit]
    if r.mark:
        obj["mark"] = r.mark
    if r.uid is not None:
        obj["uid"] = r.uid
    if r.flags & RTM_F_CLONED:
        obj["cache"] = [name for bit, name in _CACHE_FLAGS if r.flags & ~0xFFFF & bit]
        if r.expires:
            obj["expires"] = r.expires
        if opts.stats:
            if r.users:
                obj["users"] = r.users
            if r.used:
                obj["used"] = r.used
            if r.age:
                obj["age"] = r.age
    metrics: dict[str, int] = {}
    if r.mtu or r.mtu_lock:
        metrics["mtu"] = r.mtu
    if r.fastopen_no_cookie:
        metrics["fastopen_no_cookie"] = r.fastopen_no_cookie
    if metrics:
        obj["metrics"] = [metrics]
    if r.iif is not None and filt.iifmask != -1:
        obj["iif"] = r.iif.name
    return obj


# ---------------------------------------------------------------------------
# FIB dumps (inet_dump_fib / fib_dump_info)
# ---------------------------------------------------------------------------


def _fib_tables(ipv4: Ipv4, tb: int) -> list[FibTable]:
    """The tables a dump visits, in the kernel's hash order."""
    fib = ipv4.fib
    if tb:
        t = fib.table(tb)
        return [t] if t is not None else []
    return sorted(fib.tables.values(), key=lambda t: (t.id & 0xFF, t.id))


def _aliases(table: FibTable) -> list[FibAlias]:
    """Trie order: prefix ascending, longer prefix first within one key."""
    rows = list(table.aliases())
    rows.sort(key=lambda fa: (fa.dst, -fa.dst_len))
    return rows


def fib_route_msg(ipv4: Ipv4, fa: FibAlias) -> RouteMsg:
    """What fib_dump_info reports for one alias."""
    fi = fa.fi
    nh = fi.nh
    flags = 0
    gateway: int | None = None
    oif: NetDevice | None = None
    if nh is not None:
        flags |= nh.flags & (RTNH_F_ONLINK | RTNH_F_OFFLOAD | RTNH_F_DEAD | RTNH_F_LINKDOWN)
        if nh.gw:
            gateway = nh.gw
        oif = nh.dev
        in_dev = nh.dev.ip_ptr
        if (
            flags & RTNH_F_LINKDOWN
            and in_dev is not None
            and in_dev.maxconf("ignore_routes_with_linkdown")
        ):
            flags |= RTNH_F_DEAD
    return RouteMsg(
        rtype=fa.type,
        dst=fa.dst,
        dst_len=fa.dst_len,
        table=fa.table,
        protocol=fi.protocol,
        scope=fi.scope,
        flags=flags,
        tos=fa.tos,
        gateway=gateway,
        oif=oif,
        prefsrc=fi.prefsrc or None,
        priority=fi.priority or None,
        mtu=fi.mtu,
        mtu_lock=fi.mtu_lock,
        fastopen_no_cookie=fi.fastopen_no_cookie,
    )


@kernel("fib_dump_info_fnhe")
def _cached_msgs(ipv4: Ipv4, tables: list[FibTable]) -> Iterator[RouteMsg]:
    """PMTU/redirect exceptions with a cached route. Kernel: fib_dump_info_fnhe()."""
    now = ipv4.net.clock.jiffies
    seen: set[int] = set()
    for table in tables:
        for fa in _aliases(table):
            nh = fa.fi.nh
            if nh is None or id(nh) in seen:
                continue
            seen.add(id(nh))
            for fnhe in list(nh.exceptions.values()):
                if fnhe.expires and now >= fnhe.expires:
                    continue
                rt = fnhe.rth
                if not isinstance(rt, Rtable):
                    continue
                yield rt_msg(ipv4, rt, fnhe.daddr, None, table.id, fl4=None)


# ---------------------------------------------------------------------------
# rt_fill_info
# ---------------------------------------------------------------------------


@kernel("net/ipv4/route.c", "rt_fill_info")
def rt_msg(
    ipv4: Ipv4,
    rt: Rtable,
    dst: int,
    src: int | None,
    table_id: int,
    *,
    fl4: Flowi4 | None,
    uid: int | None = None,
    iif: NetDevice | None = None,
    notify: bool = False,
    mark: int = 0,
) -> RouteMsg:
    """An rtable as RTM_NEWROUTE reports it. Kernel: net/ipv4/route.c, rt_fill_info()."""
    clock = ipv4.net.clock
    now = clock.jiffies
    expires = rt.expires
    if expires:
        expires = expires - now if now < expires else 0
    mtu = rt.metric_mtu
    lock = bool(rt.metric_mtu_locked and rt.metric_mtu)
    if rt.rt_pmtu and expires:
        mtu = rt.rt_pmtu
    if rt.rt_mtu_locked and expires:
        lock = True
    flags = (rt.rt_flags & ~0xFFFF) | RTM_F_CLONED
    if notify:  # the kernel marks the rtable RTCF_NOTIFY and the reply RTM_F_NOTIFY
        flags |= RTM_F_NOTIFY | RTCF_NOTIFY
    prefsrc = None
    if fl4 is not None and not rt.rt_is_input and fl4.saddr != (src or 0):
        prefsrc = fl4.saddr
    return RouteMsg(
        rtype=rt.rt_type,
        dst=dst,
        dst_len=32,
        table=table_id,
        flags=flags,
        src=src,
        gateway=rt.rt_gw4 if rt.rt_uses_gateway else None,
        oif=rt.dev,
        prefsrc=prefsrc,
        mtu=mtu,
        mtu_lock=lock,
        fastopen_no_cookie=rt.metric_fastopen_no_cookie,
        uid=uid,
        mark=mark,
        iif=iif if rt.rt_is_input else None,
        expires=(expires * USER_HZ // clock.hz) // USER_HZ,
        users=rt.refcnt,
        used=rt.use,
        age=((now - rt.lastuse) * USER_HZ // clock.hz) // USER_HZ if rt.lastuse else 0,
    )


# ---------------------------------------------------------------------------
# ip route show | flush
# ---------------------------------------------------------------------------


@attrs.define
class _Selector:
    """What ``ip route show|flush SELECTOR`` has read so far."""

    family: int
    filt: RouteFilter = attrs.Factory(lambda: RouteFilter(tb=RT_TABLE_MAIN))
    od: str | None = None
    idev: str | None = None


_IPROUTE_SELECTOR: Final = KeywordTable[_Selector, Args]()
"""iproute_list_flush_or_save()'s loop, in iproute2's order."""


@_IPROUTE_SELECTOR.keyword("table*")
def _sel_table(sel: _Selector, args: Args, word: str) -> None:
    value = args.value()
    tid = rtnl_rttable_a2n(value)
    if tid is not None:
        sel.filt.tb = tid
    elif value == "all":
        sel.filt.tb = 0
    elif value == "cache":
        sel.filt.cloned = 1
    elif value == "help":
        raise ConfigError(IPROUTE_USAGE)
    else:
        invarg("table id value is invalid\n", value)


@_IPROUTE_SELECTOR.keyword("vrf*")
def _sel_vrf(sel: _Selector, args: Args, word: str) -> None:
    invarg("Invalid VRF\n", args.value())


@_IPROUTE_SELECTOR.keyword("cached*", "cloned*")
def _sel_cloned(sel: _Selector, args: Args, word: str) -> None:
    sel.filt.cloned = 1


@_IPROUTE_SELECTOR.keyword("tos", "dsfield*")
def _sel_tos(sel: _Selector, args: Args, word: str) -> None:
    value = args.value()
    tos = rtnl_dsfield_a2n(value)
    if tos is None:
        invarg("TOS value is invalid\n", value)
    sel.filt.tos = tos
    sel.filt.tosmask = -1


@_IPROUTE_SELECTOR.keyword("protocol*")
def _sel_protocol(sel: _Selector, args: Args, word: str) -> None:
    value = args.value()
    sel.filt.protocolmask = -1
    prot = rtnl_rtprot_a2n(value)
    if prot is None:
        if value != "all":
            invarg('invalid "protocol"\n', value)
        prot = 0
        sel.filt.protocolmask = 0
    sel.filt.protocol = prot


@_IPROUTE_SELECTOR.keyword("scope*")
def _sel_scope(sel: _Selector, args: Args, word: str) -> None:
    value = args.value()
    sel.filt.scopemask = -1
    scope = rtnl_rtscope_a2n(value)
    if scope is None:
        if value != "all":
            invarg('invalid "scope"\n', value)
        scope = RT_SCOPE_NOWHERE
        sel.filt.scopemask = 0
    sel.filt.scope = scope


@_IPROUTE_SELECTOR.keyword("type*")
def _sel_type(sel: _Selector, args: Args, word: str) -> None:
    value = args.value()
    rtype = rtnl_rtntype_a2n(value)
    if rtype is None:
        invarg("node type value is invalid\n", value)
    sel.filt.typemask = 1 << rtype


@_IPROUTE_SELECTOR.keyword("dev", "oif")
def _sel_dev(sel: _Selector, args: Args, word: str) -> None:
    sel.od = args.value()


@_IPROUTE_SELECTOR.keyword("iif")
def _sel_iif(sel: _Selector, args: Args, word: str) -> None:
    sel.idev = args.value()


@_IPROUTE_SELECTOR.keyword("mark")
def _sel_mark(sel: _Selector, args: Args, word: str) -> None:
    value = args.value()
    if get_unsigned(value) is None:
        invarg("invalid mark value", value)


@_IPROUTE_SELECTOR.keyword("metric*", "priority*", "preference")
def _sel_metric(sel: _Selector, args: Args, word: str) -> None:
    value = args.value()
    metric = get_u32(value)
    if metric is None:
        invarg('"metric" value is invalid\n', value)
    sel.filt.metric = metric
    sel.filt.metricmask = -1


@_IPROUTE_SELECTOR.keyword("via")
def _sel_via(sel: _Selector, args: Args, word: str) -> None:
    value = args.value()
    fam = read_family(value)
    if fam == AF_UNSPEC:
        fam = sel.family
    else:
        value = args.value()
    sel.filt.rvia = get_prefix(value, fam)


@_IPROUTE_SELECTOR.keyword("src")
def _sel_src(sel: _Selector, args: Args, word: str) -> None:
    sel.filt.rprefsrc = get_prefix(args.value(), sel.family)


@_IPROUTE_SELECTOR.keyword("realms*")
def _sel_realms(sel: _Selector, args: Args, word: str) -> None:
    raise _unsupported("realms")


@_IPROUTE_SELECTOR.keyword("from*")
def _sel_from(sel: _Selector, args: Args, word: str) -> None:
    value = args.value()
    if matches(value, "root"):
        sel.filt.rsrc = get_prefix(args.value(), sel.family)
    elif matches(value, "match"):
        sel.filt.msrc = get_prefix(args.value(), sel.family)
    else:
        if matches(value, "exact"):
            value = args.value()
        sel.filt.msrc = sel.filt.rsrc = get_prefix(value, sel.family)


def _sel_to(sel: _Selector, args: Args, word: str) -> None:
    """The final ``else``: ``[to] [root|match|exact] PREFIX``."""
    if matches(word, "to"):
        word = args.value()
    if matches(word, "root"):
        sel.filt.rdst = get_prefix(args.value(), sel.family)
    elif matches(word, "match"):
        sel.filt.mdst = get_prefix(args.value(), sel.family)
    else:
        if matches(word, "exact"):
            word = args.value()
        sel.filt.mdst = sel.filt.rdst = get_prefix(word, sel.family)


def _parse_selector(net: Net, opts: Iproute2Options, args: Args) -> tuple[RouteFilter, int]:
    sel = parse_keywords(_IPROUTE_SELECTOR, _Selector(opts.family), args, _sel_to)
    filt, family, od, idev = sel.filt, sel.family, sel.od, sel.idev
    if family == AF_UNSPEC and filt.tb:
        family = AF_INET
    if idev is not None:
        d = ll_name_to_dev(net, idev)
        if d is None:
            nodev(idev)
        filt.iif = d.ifindex
        filt.iifmask = -1
    if od is not None:
        d = ll_name_to_dev(net, od)
        if d is None:
            nodev(od)
        filt.oif = d.ifindex
        filt.oifmask = -1
    return filt, family


def _table_missing(ipv4: Ipv4, filt: RouteFilter) -> bool:
    return bool(filt.tb) and ipv4.fib.table(filt.tb) is None


def iproute_list(net: Net, opts: Iproute2Options, args: Args) -> None:
    """``ip route show``. iproute2: iproute_list_flush_or_save(IPROUTE_LIST)."""
    filt, family = _parse_selector(net, opts, args)
    opts.json_list = True
    if family == AF_INET6:
        iproute_list6(
            net,
            opts,
            tb=filt.tb,
            cloned=bool(filt.cloned),
            oif=filt.oif if filt.oifmask else 0,
            protocol=filt.protocol,
            protocolmask=filt.protocolmask,
            rdst=filt.rdst,
            mdst=filt.mdst,
            rvia=filt.rvia,
            metric=filt.metric,
            metricmask=filt.metricmask,
            typemask=filt.typemask,
        )
        return
    if family not in (AF_UNSPEC, AF_INET):
        return  # no such family here: the dump has nothing of it
    ipv4 = ipv4_or_error(net)
    if _table_missing(ipv4, filt):
        if filt.tb == RT_TABLE_MAIN:
            return
        raise ConfigError("Error: ipv4: FIB table does not exist.\nDump terminated", errno.ENOENT)
    for r in _route_msgs(ipv4, filt):
        if filter_route(filt, r):
            opts.write(print_route(opts, filt, r))


def _route_msgs(ipv4: Ipv4, filt: RouteFilter) -> Iterator[RouteMsg]:
    tables = _fib_tables(ipv4, filt.tb)
    if filt.cloned:
        yield from _cached_msgs(ipv4, tables)
        return
    for table in tables:
        for fa in _aliases(table):
            yield fib_route_msg(ipv4, fa)


@kernel("ipv4_sysctl_rtcache_flush", "rt_cache_flush", "fnhe_genid_bump")
def _flush_cache(ipv4: Ipv4) -> None:
    """Writing ``net.ipv4.route.flush``: new genid, exceptions forgotten.

    Kernel: ipv4_sysctl_rtcache_flush() → rt_cache_flush() + fnhe_genid_bump().
    """
    ipv4.rt_cache_flush()
    for table in ipv4.fib.tables.values():
        for fa in table.aliases():
            nh = fa.fi.nh
            if nh is not None:
                nh.fnhe_flush()


def iproute_flush(net: Net, opts: Iproute2Options, args: Args) -> None:
    """``ip route flush``. iproute2: iproute_list_flush_or_save(IPROUTE_FLUSH)."""
    if not args:
        raise ConfigError('"ip route flush" requires arguments.', errno.EINVAL)
    filt, family = _parse_selector(net, opts, args)
    if family == AF_INET6:
        iproute_flush6(
            net,
            opts,
            tb=filt.tb,
            cloned=bool(filt.cloned),
            oif=filt.oif if filt.oifmask else 0,
            protocol=filt.protocol,
            protocolmask=filt.protocolmask,
            rdst=filt.rdst,
            mdst=filt.mdst,
        )
        return
    ipv4 = ipv4_or_error(net)
    if filt.cloned:
        if family != AF_INET6:
            _flush_cache(ipv4)
            if opts.stats:
                opts.write("*** IPv4 routing cache is flushed.\n")
        if family == AF_INET:
            return
    if family in (AF_UNSPEC, AF_INET) and filt.tb != RT_TABLE_MAIN and _table_missing(ipv4, filt):
        # the dump the flush starts with fails (inet_dump_fib: no such table)
        raise ConfigError("Error: ipv4: FIB table does not exist.\nFlush terminated", errno.ENOENT)
    rounds = 0
    while True:
        victims: list[tuple[RouteMsg, FibAlias]] = []
        if family in (AF_UNSPEC, AF_INET) and not _table_missing(ipv4, filt) and not filt.cloned:
            for table in _fib_tables(ipv4, filt.tb):
                for fa in _aliases(table):
                    r = fib_route_msg(ipv4, fa)
                    if filter_route(filt, r):
                        victims.append((r, fa))
        if not victims:
            if opts.stats:
                if rounds == 0 and (not filt.cloned or family == AF_INET6):
                    opts.write("Nothing to flush.\n")
                else:
                    s = "s" if rounds > 1 else ""
                    opts.write(f"*** Flush is complete after {rounds} round{s} ***\n")
            return
        if opts.stats > 1:
            for r, _fa in victims:
                opts.write(print_route(opts, filt, r))
        for _r, fa in victims:
            fib_table = ipv4.fib.table(fa.table)
            if fib_table is None:
                continue
            try:
                fib_table.delete(fa.dst, fa.dst_len, lambda cand, target=fa: cand is target)
            except ConfigError:
                continue  # already gone (kernel: ESRCH, ignored by the flush)
            ipv4.fib.changed()
        rounds += 1
        if opts.stats:
            opts.write(f"\n*** Round {rounds}, deleting {len(victims)} entries ***\n")


# ---------------------------------------------------------------------------
# add / change / replace / append / prepend / test / delete (iproute_modify)
# ---------------------------------------------------------------------------

_NLFLAGS: Final = {
    "add": NLM_F_CREATE | NLM_F_EXCL,
    "change": NLM_F_REPLACE,
    "replace": NLM_F_CREATE | NLM_F_REPLACE,
    "prepend": NLM_F_CREATE,
    "append": NLM_F_CREATE | NLM_F_APPEND,
    "test": NLM_F_EXCL,
}


@attrs.define
class _RouteRequest:
    """What ``ip route add|change|…|del`` has read so far (iproute2's ``req``)."""

    family: int
    protocol: int
    rtype: int
    table: int = RT_TABLE_MAIN
    scope: int = RT_SCOPE_NOWHERE
    d: str | None = None
    gw: InetPrefix | None = None
    dst: InetPrefix | None = None
    prefsrc: InetPrefix | None = None
    priority: int = 0
    tos: int = 0
    onlink: bool = False
    mtu: int = 0
    mtu_lock: bool = False
    fastopen_no_cookie: int = -1  # -1: not given
    expires: int = -1
    table_ok: bool = False
    scope_ok: bool = False


_IPROUTE_MODIFY: Final = KeywordTable[_RouteRequest, Args]()
"""iproute_modify()'s loop, in iproute2's order (the order decides abbreviations)."""


@_IPROUTE_MODIFY.keyword("src")
def _route_src(req: _RouteRequest, args: Args, word: str) -> None:
    req.prefsrc = get_addr(args.value(), req.family)
    if req.family == AF_UNSPEC:
        req.family = req.prefsrc.family


@_IPROUTE_MODIFY.keyword("as")
def _route_as(req: _RouteRequest, args: Args, word: str) -> None:
    raise _unsupported("as")


@_IPROUTE_MODIFY.keyword("via")
def _route_via(req: _RouteRequest, args: Args, word: str) -> None:
    if req.gw is not None:
        invarg("use nexthop syntax to specify multiple via\n", word)
    value = args.value()
    fam = read_family(value)
    if fam == AF_UNSPEC:
        fam = req.family
    else:
        value = args.value()
    req.gw = get_addr(value, fam)
    if req.family == AF_UNSPEC:
        req.family = req.gw.family
    if req.gw.family != req.family:
        if req.gw.family == AF_INET6:
            raise extack_error("IPv6 support not enabled in kernel", errno.EINVAL)
        raise rtnl_error(errno.EINVAL)


@_IPROUTE_MODIFY.keyword("from")
def _route_from(req: _RouteRequest, args: Args, word: str) -> None:
    get_prefix(args.value(), req.family)
    raise _unsupported("from")


@_IPROUTE_MODIFY.keyword("tos", "dsfield*")
def _route_tos(req: _RouteRequest, args: Args, word: str) -> None:
    value = args.value()
    t = rtnl_dsfield_a2n(value)
    if t is None:
        invarg('"tos" value is invalid\n', value)
    req.tos = t


@_IPROUTE_MODIFY.keyword("expires")
def _route_expires(req: _RouteRequest, args: Args, word: str) -> None:
    value = args.value()
    exp = get_u32(value)
    if exp is None:
        invarg('"expires" value is invalid\n', value)
    req.expires = exp


@_IPROUTE_MODIFY.keyword("metric*", "priority*", "preference")
def _route_metric(req: _RouteRequest, args: Args, word: str) -> None:
    value = args.value()
    m = get_u32(value)
    if m is None:
        invarg('"metric" value is invalid\n', value)
    req.priority = m


@_IPROUTE_MODIFY.keyword("scope")
def _route_scope(req: _RouteRequest, args: Args, word: str) -> None:
    value = args.value()
    sc = rtnl_rtscope_a2n(value)
    if sc is None:
        invarg('invalid "scope" value\n', value)
    req.scope = sc
    req.scope_ok = True


@_IPROUTE_MODIFY.keyword("mtu")
def _route_mtu(req: _RouteRequest, args: Args, word: str) -> None:
    value = args.value()
    if value == "lock":
        req.mtu_lock = True
        value = args.value()
    m = get_unsigned(value)
    if m is None:
        invarg('"mtu" value is invalid\n', value)
    req.mtu = m


@_IPROUTE_MODIFY.keyword("fastopen_no_cookie*")
def _route_fastopen_no_cookie(req: _RouteRequest, args: Args, word: str) -> None:
    value = args.value()
    v = get_unsigned(value)
    if v is None:
        invarg('"fastopen_no_cookie" value is invalid\n', value)
    if v not in (0, 1):
        invarg('"fastopen_no_cookie" value should be 0 or 1\n', value)
    req.fastopen_no_cookie = v


@_IPROUTE_MODIFY.keyword(
    *_UNSUPPORTED_METRICS,
    *(f"{n}*" for n in ("reordering", "window", "cwnd", "initcwnd", "initrwnd", "realms")),
    "nexthop",
    "nhid",
    "encap",
    "ttl-propagate",
)
def _route_unsupported(req: _RouteRequest, args: Args, word: str) -> None:
    raise _unsupported(word)


@_IPROUTE_MODIFY.keyword("onlink")
def _route_onlink(req: _RouteRequest, args: Args, word: str) -> None:
    req.onlink = True


@_IPROUTE_MODIFY.keyword("protocol*")
def _route_protocol(req: _RouteRequest, args: Args, word: str) -> None:
    value = args.value()
    prot = rtnl_rtprot_a2n(value)
    if prot is None:
        invarg('"protocol" value is invalid\n', value)
    req.protocol = prot


@_IPROUTE_MODIFY.keyword("table*")
def _route_table(req: _RouteRequest, args: Args, word: str) -> None:
    value = args.value()
    tid = rtnl_rttable_a2n(value)
    if tid is None:
        invarg('"table" value is invalid\n', value)
    req.table = tid
    req.table_ok = True


@_IPROUTE_MODIFY.keyword("vrf*")
def _route_vrf(req: _RouteRequest, args: Args, word: str) -> None:
    invarg("Invalid VRF\n", args.value())


@_IPROUTE_MODIFY.keyword("dev", "oif")
def _route_dev(req: _RouteRequest, args: Args, word: str) -> None:
    req.d = args.value()


@_IPROUTE_MODIFY.keyword("pref*")
def _route_pref(req: _RouteRequest, args: Args, word: str) -> None:
    raise _unsupported("pref")


def _route_dst(req: _RouteRequest, args: Args, word: str) -> None:
    """The final ``else``: ``[to] [TYPE] PREFIX`` (or ``help``)."""
    if word == "to":
        word = args.value()
    if not word[:1].isdigit() and (rtype := rtnl_rtntype_a2n(word)) is not None:
        word = args.value()
        req.rtype = rtype
    if matches(word, "help"):
        raise ConfigError(IPROUTE_USAGE)
    if req.dst is not None:
        duparg2("to", word)
    req.dst = get_prefix(word, req.family)
    if req.family == AF_UNSPEC:
        req.family = req.dst.family


def iproute_modify(net: Net, opts: Iproute2Options, args: Args, *, cmd: str) -> None:
    """``ip route add|change|replace|prepend|append|test|del``. iproute2: iproute_modify()."""
    delete = cmd == "del"
    req = _RouteRequest(
        opts.family,
        protocol=0 if delete else RTPROT_BOOT,
        rtype=RTN_UNSPEC if delete else RTN_UNICAST,
    )
    parse_keywords(_IPROUTE_MODIFY, req, args, _route_dst)
    family, table, scope, protocol, rtype = (
        req.family,
        req.table,
        req.scope,
        req.protocol,
        req.rtype,
    )
    d, gw, dst, prefsrc, priority, tos = req.d, req.gw, req.dst, req.prefsrc, req.priority, req.tos
    onlink, mtu, mtu_lock, expires = req.onlink, req.mtu, req.mtu_lock, req.expires
    fastopen_no_cookie = max(req.fastopen_no_cookie, 0)
    table_ok, scope_ok = req.table_ok, req.scope_ok
    if dst is None:
        raise ConfigError(IPROUTE_USAGE, errno.EINVAL)
    dev: NetDevice | None = None
    if d is not None:
        dev = ll_name_to_dev(net, d)
        if dev is None:
            nodev(d)
    if family == AF_UNSPEC:
        family = AF_INET
    if not table_ok and rtype in (RTN_LOCAL, RTN_BROADCAST, RTN_NAT, RTN_ANYCAST):
        table = RT_TABLE_LOCAL
    if not scope_ok:
        if rtype in (RTN_LOCAL, RTN_NAT):
            scope = RT_SCOPE_HOST
        elif rtype in (RTN_BROADCAST, RTN_MULTICAST, RTN_ANYCAST):
            scope = RT_SCOPE_LINK
        elif rtype in (RTN_UNICAST, RTN_UNSPEC):
            if delete:
                scope = RT_SCOPE_NOWHERE
            elif gw is None:
                scope = RT_SCOPE_LINK
            else:
                scope = RT_SCOPE_UNIVERSE
        elif not delete:
            scope = RT_SCOPE_UNIVERSE
    if family == AF_INET6:
        if not table_ok and rtype == RTN_LOCAL:
            table = RT_TABLE_LOCAL
        iproute_modify6(
            net,
            cmd=cmd,
            nlflags=_NLFLAGS.get(cmd, 0),
            dst=dst,
            gw=gw,
            dev=dev,
            table=table,
            rtype=rtype if rtype != RTN_UNSPEC else RTN_UNICAST,
            protocol=protocol,
            metric=priority,
            prefsrc=prefsrc,
            mtu=mtu,
            mtu_lock=mtu_lock,
            onlink=onlink,
            expires=max(expires, 0),
            fastopen_no_cookie=fastopen_no_cookie,
        )
        return
    if expires >= 0:
        raise _unsupported("expires")  # RTA_EXPIRES is IPv6's only
    if family != AF_INET:
        raise rtnl_error(errno.EOPNOTSUPP)
    ipv4 = ipv4_or_error(net)
    dst_len = dst.bitlen
    dst_addr = dst.v4 if dst.bytelen else 0
    if table == 0:
        table = RT_TABLE_MAIN
    mask = (0xFFFFFFFF << (32 - dst_len)) & 0xFFFFFFFF if dst_len else 0
    cfg = RouteConfig(
        dst_addr,
        dst_len,
        table=table,
        rtype=rtype,
        protocol=protocol,
        scope=scope,
        gw=gw.v4 if gw is not None and gw.bytelen else 0,
        dev=dev,
        priority=priority,
        prefsrc=prefsrc.v4 if prefsrc is not None and prefsrc.bytelen else 0,
        tos=tos,
        onlink=onlink,
        mtu=mtu,
        mtu_lock=mtu_lock,
        nlflags=_NLFLAGS.get(cmd, 0),
    )
    cfg.fastopen_no_cookie = fastopen_no_cookie
    if delete:
        if ipv4.fib.table(table) is None:
            raise extack_error("FIB table does not exist", errno.ESRCH)
        if dst_addr & ~mask:
            raise extack_error("Invalid prefix for given prefix length", errno.EINVAL)
        ipv4.fib.delete_route(
            cfg,
            match_gw=bool(cfg.gw),
            match_dev=dev is not None,
            match_metric=bool(priority),
            match_type=rtype != RTN_UNSPEC,
            match_proto=bool(protocol),
            match_scope=scope != RT_SCOPE_NOWHERE,
        )
        return
    if not dst_addr & ~mask:
        # inet_rtm_newroute() makes the table before fib_create_info() checks the
        # route: an add refused below still leaves the (empty) table behind
        ipv4.fib.fib_new_table(table)
    # fib_create_info() checks this kernel's FIB does not make itself
    if rtype > RTN_NAT + 1:
        raise extack_error("Invalid route type", errno.EINVAL)
    if FIB_PROPS_SCOPE.get(rtype, RT_SCOPE_NOWHERE) > scope or scope > RT_SCOPE_HOST:
        raise extack_error("Invalid scope", errno.EINVAL)
    if rtype in REJECT_TYPES and (cfg.gw or dev is not None):
        raise extack_error(
            "Gateway, device and multipath can not be specified for this route type",
            errno.EINVAL,
        )
    if rtype in (RTN_NAT, RTN_ANYCAST, 11):
        raise rtnl_error(errno.EINVAL)
    if onlink and not cfg.gw:
        raise extack_error(
            "Invalid flags for nexthop - PERVASIVE and ONLINK can not be set", errno.EINVAL
        )
    ipv4.fib.add_route(cfg)


# ---------------------------------------------------------------------------
# ip route get (inet_rtm_getroute)
# ---------------------------------------------------------------------------


@kernel("net/ipv4/route.c", "inet_rtm_getroute_build_skb")
def _input_skb(dev: NetDevice, daddr: int, saddr: int, proto: int) -> SkBuff:
    """The skb inet_rtm_getroute builds for an input lookup.

    Kernel: net/ipv4/route.c, inet_rtm_getroute_build_skb().
    """
    skb = alloc_skb(20, 64)
    off = skb.put(20)
    hdr = bytes([0x45, 0, 0, 20, 0, 0, 0, 0, 64, proto, 0, 0])
    skb.buf[off : off + 12] = hdr
    skb.buf[off + 12 : off + 16] = saddr.to_bytes(4, "big")
    skb.buf[off + 16 : off + 20] = daddr.to_bytes(4, "big")
    skb.network_header = off
    skb.mac_header = off
    skb.protocol = 0x0800
    skb.dev = dev
    return skb


def _lookup_table(
    ipv4: Ipv4, daddr: int, oif: int, rt: Rtable, saddr: int = 0, iif: int = LOOPBACK_IFINDEX
) -> int:
    """``res.table->tb_id`` of the lookup (RTM_F_LOOKUP_TABLE): the same flow, rules too."""
    if rt.rt_type not in (RTN_UNICAST, RTN_LOCAL, RTN_BROADCAST, RTN_MULTICAST):
        return 0
    res = ipv4.fib.lookup(daddr, oif, RT_SCOPE_UNIVERSE, saddr, iif)
    if res is None:
        return 0
    if rt.rt_type in (RTN_BROADCAST, RTN_MULTICAST) and res.type != rt.rt_type:
        return 0
    return int(res.table)


def _route_get_once(
    net: Net,
    *,
    dst: int,
    src: int,
    iif: NetDevice | None,
    oif: NetDevice | None,
    tos: int,
    mark: int,
    uid: int | None,
    proto: int,
    sport: int,
    dport: int,
    notify: bool,
) -> tuple[RouteMsg, Rtable, int]:
    ipv4 = ipv4_or_error(net)
    if iif is not None:
        skb = _input_skb(iif, dst, src, proto)
        skb.mark = mark
        err = ip_route_input_noref(ipv4, skb, dst, src, tos, iif)
        rt = skb.dst
        if err == 0 and isinstance(rt, Rtable) and rt.error:
            err = -rt.error
        if err:
            consume_skb(skb)
            raise rtnl_error(-err)
        assert isinstance(rt, Rtable)
        table = (
            _lookup_table(ipv4, dst, 0, rt, src, iif.ifindex) if rt.rt_type != RTN_BROADCAST else 0
        )
        # rt_fill_info() while the skb has the route as ip_route_input_rcu() set it
        # (a cached one without a reference: users counts no request); the hold
        # after it is netstack's, for the caller's release
        msg = rt_msg(
            ipv4, rt, dst, src or None, table, fl4=None, uid=uid, iif=iif, notify=notify, mark=mark
        )
        rt.hold()
        consume_skb(skb)
        return msg, rt, table
    fl4 = Flowi4(
        dst,
        src,
        oif=oif.ifindex if oif is not None else 0,
        tos=tos,
        mark=mark,
        proto=proto,
        sport=sport,
        dport=dport,
    )
    result = ip_route_output_key(ipv4, fl4)
    if isinstance(result, int):
        raise rtnl_error(-result)
    table = _lookup_table(ipv4, fl4.daddr, fl4.oif if oif is not None else 0, result, src)
    msg = rt_msg(
        ipv4,
        result,
        dst,
        src or None,
        table,
        fl4=fl4,
        uid=0 if uid is None else uid,
        notify=notify,
        mark=mark,
    )
    return msg, result, table


@attrs.define
class _GetRequest:
    """What ``ip route get`` has read so far."""

    family: int
    idev: str | None = None
    odev: str | None = None
    dst: InetPrefix | None = None
    src: InetPrefix | None = None
    tos: int = 0
    mark: int = 0
    uid: int | None = None
    proto: int = 0
    sport: int = 0
    dport: int = 0
    notify: bool = False
    connected: bool = False
    fib_match: bool = False


_IPROUTE_GET: Final = KeywordTable[_GetRequest, Args]()
"""iproute_get()'s loop, in iproute2's order."""


@_IPROUTE_GET.keyword("tos", "dsfield*")
def _get_tos(req: _GetRequest, args: Args, word: str) -> None:
    value = args.value()
    t = rtnl_dsfield_a2n(value)
    if t is None:
        invarg("TOS value is invalid\n", value)
    req.tos = t


@_IPROUTE_GET.keyword("from*")
def _get_from(req: _GetRequest, args: Args, word: str) -> None:
    value = args.value()
    if matches(value, "help"):
        raise ConfigError(IPROUTE_USAGE)
    req.src = get_prefix(value, req.family)
    if req.family == AF_UNSPEC:
        req.family = req.src.family


@_IPROUTE_GET.keyword("iif*")
def _get_iif(req: _GetRequest, args: Args, word: str) -> None:
    req.idev = args.value()


@_IPROUTE_GET.keyword("mark*")
def _get_mark(req: _GetRequest, args: Args, word: str) -> None:
    value = args.value()
    m = get_unsigned(value)
    if m is None:
        invarg("invalid mark value", value)
    req.mark = m


@_IPROUTE_GET.keyword("oif*", "dev")
def _get_oif(req: _GetRequest, args: Args, word: str) -> None:
    req.odev = args.value()


@_IPROUTE_GET.keyword("notify*")
def _get_notify(req: _GetRequest, args: Args, word: str) -> None:
    req.notify = True


@_IPROUTE_GET.keyword("connected*")
def _get_connected(req: _GetRequest, args: Args, word: str) -> None:
    req.connected = True


@_IPROUTE_GET.keyword("vrf*")
def _get_vrf(req: _GetRequest, args: Args, word: str) -> None:
    invarg("Invalid VRF\n", args.value())


@_IPROUTE_GET.keyword("uid*")
def _get_uid(req: _GetRequest, args: Args, word: str) -> None:
    value = args.value()
    u = get_unsigned(value)
    if u is None:
        invarg("invalid UID\n", value)
    req.uid = u


@_IPROUTE_GET.keyword("fibmatch*")
def _get_fibmatch(req: _GetRequest, args: Args, word: str) -> None:
    req.fib_match = True


@_IPROUTE_GET.keyword("as")
def _get_as(req: _GetRequest, args: Args, word: str) -> None:
    raise _unsupported("get ... as")


@_IPROUTE_GET.keyword("sport*", "dport*")
def _get_port(req: _GetRequest, args: Args, word: str) -> None:
    value = args.value()
    port = get_unsigned(value)
    if port is None or port > 0xFFFF:
        invarg(f"invalid {'sport' if word[0] == 's' else 'dport'}\n", value)
    if matches(word, "sport"):
        req.sport = port
    else:
        req.dport = port


@_IPROUTE_GET.keyword("ipproto*")
def _get_ipproto(req: _GetRequest, args: Args, word: str) -> None:
    value = args.value()
    p = {"icmp": 1, "tcp": 6, "udp": 17}.get(value)
    if p is None:
        p = get_unsigned(value)
    if p is None or p > 255:
        invarg('Invalid "ipproto" value\n', value)
    req.proto = p


@_IPROUTE_GET.keyword("flowlabel")
def _get_flowlabel(req: _GetRequest, args: Args, word: str) -> None:
    value = args.value()
    if get_u32(value) is None:
        invarg("invalid flowlabel", value)


def _get_dst(req: _GetRequest, args: Args, word: str) -> None:
    """The final ``else``: ``[to] ADDRESS`` (or ``help``)."""
    if word == "to":
        word = args.value()
    if matches(word, "help"):
        raise ConfigError(IPROUTE_USAGE)
    req.dst = get_prefix(word, req.family)
    if req.family == AF_UNSPEC:
        req.family = req.dst.family


def iproute_get(net: Net, opts: Iproute2Options, args: Args) -> None:
    """``ip route get``. iproute2: ip/iproute.c, iproute_get(); kernel: inet_rtm_getroute()."""
    req = parse_keywords(_IPROUTE_GET, _GetRequest(opts.family), args, _get_dst)
    opts.json_list = True
    family, idev, odev, dst, src = req.family, req.idev, req.odev, req.dst, req.src
    tos, mark, uid, proto, sport, dport = (
        req.tos,
        req.mark,
        req.uid,
        req.proto,
        req.sport,
        req.dport,
    )
    notify, connected, fib_match = req.notify, req.connected, req.fib_match
    if dst is None:
        raise ConfigError("need at least a destination address", errno.EINVAL)
    iif: NetDevice | None = None
    oif: NetDevice | None = None
    if idev is not None:
        iif = ll_name_to_dev(net, idev)
        if iif is None:
            nodev(idev)
    if odev is not None:
        oif = ll_name_to_dev(net, odev)
        if oif is None:
            nodev(odev)
    if family == AF_UNSPEC:
        family = AF_INET
    if family == AF_INET6:
        iproute_get6(net, opts, dst=dst, src=src, oif=oif, fib_match=fib_match)
        return
    if family != AF_INET:
        raise rtnl_error(errno.EOPNOTSUPP)
    ipv4 = ipv4_or_error(net)
    daddr = dst.v4 if dst.bytelen else 0
    saddr = src.v4 if src is not None and src.bytelen else 0

    def get_once(source: int) -> tuple[RouteMsg, Rtable, int]:
        return _route_get_once(
            net,
            dst=daddr,
            src=source,
            iif=iif,
            oif=oif,
            tos=tos,
            mark=mark,
            uid=uid,
            proto=proto,
            sport=sport,
            dport=dport,
            notify=notify,
        )

    msg, rt, _table = get_once(saddr)
    if connected and src is None:
        rt.release()
        new_src = msg.prefsrc if msg.prefsrc is not None else msg.src
        if new_src is None:
            raise ConfigError("Failed to connect the route", errno.EINVAL)
        saddr = new_src
        msg, rt, _table = get_once(new_src)
    try:
        if fib_match:
            # res.fi of the same lookup: the input device's or loopback's, the source too
            if iif is not None:
                res = ipv4.fib.lookup(daddr, 0, RT_SCOPE_UNIVERSE, saddr, iif.ifindex)
            else:
                o = oif.ifindex if oif is not None else 0
                res = ipv4.fib.lookup(daddr, o, RT_SCOPE_UNIVERSE, saddr, LOOPBACK_IFINDEX)
            if res is None:
                raise rtnl_error(errno.ENETUNREACH)
            fmsg = fib_route_msg(ipv4, res.fa)
            opts.write(print_route(opts, RouteFilter(cloned=2), fmsg))
        else:
            opts.write(print_route(opts, RouteFilter(cloned=2), msg))
    finally:
        rt.release()


def do_iproute(net: Net, opts: Iproute2Options, args: Args) -> None:
    """``ip route …``. iproute2: ip/iproute.c, do_iproute()."""
    if not args:
        iproute_list(net, opts, args)
        return
    word = args.take()
    if matches(word, "add"):
        iproute_modify(net, opts, args, cmd="add")
    elif matches(word, "change") or word == "chg":
        iproute_modify(net, opts, args, cmd="change")
    elif matches(word, "replace"):
        iproute_modify(net, opts, args, cmd="replace")
    elif matches(word, "prepend"):
        iproute_modify(net, opts, args, cmd="prepend")
    elif matches(word, "append"):
        iproute_modify(net, opts, args, cmd="append")
    elif matches(word, "test"):
        iproute_modify(net, opts, args, cmd="test")
    elif matches(word, "delete"):
        iproute_modify(net, opts, args, cmd="del")
    elif matches(word, "list") or matches(word, "show") or matches(word, "lst"):
        iproute_list(net, opts, args)
    elif matches(word, "get"):
        iproute_get(net, opts, args)
    elif matches(word, "flush"):
        iproute_flush(net, opts, args)
    elif matches(word, "save") or matches(word, "restore") or matches(word, "showdump"):
        raise ConfigError(f'netstack: "ip route {word}" is not supported', errno.EOPNOTSUPP)
    elif matches(word, "help"):
        raise ConfigError(IPROUTE_USAGE)
    else:
        raise ConfigError(f'Command "{word}" is unknown, try "ip route help".', errno.EINVAL)
