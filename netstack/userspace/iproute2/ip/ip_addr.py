"""``ip address``: list, add, change, replace, delete and flush IPv4 addresses.

Theory of operation: listing follows iproute2's ``ipaddr_list_flush_or_save``:
dump the links (ifindex order), dump the addresses of the family asked for,
drop the links none of whose addresses pass the filters (``ipaddr_filter`` —
a link without any address survives only when no family was given), then
print each link (:func:`~netstack.userspace.iproute2.ip.ip_link.print_linkinfo`, without
``mode``) followed by its addresses (:func:`print_addrinfo`) and, with ``-s``,
its statistics. ``ip link show`` is the same lister with ``do_link`` set and
the family forced to ``link``. Addresses come from ``dev.ip_ptr.ifa_list``
(primaries first, as the kernel keeps them).

Changes are RTM_NEWADDR/RTM_DELADDR as the kernel's devinet.c handles them:
``add`` refuses an address already there (``ipv4: Address already
assigned``), ``replace``/``change`` update the metric of an existing one,
``del`` matches local address, label and prefix, and ``flush`` deletes in
rounds until nothing matches (a primary takes its secondaries with it).
iproute2 computes ``brd +``/``brd -`` itself and never invents a broadcast.

iproute2: ip/ipaddress.c. Kernel: net/ipv4/devinet.c (inet_rtm_newaddr,
inet_rtm_deladdr, inet_fill_ifaddr).
"""

from __future__ import annotations

import errno
import fnmatch
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

import attrs

from netstack.core.netdevice import IFF_UP
from netstack.errors import ConfigError
from netstack.sites import kernel
from netstack.userspace.iproute2.ip.ip6 import (
    addr6_list,
    addr6_passes,
    ipaddr_modify6,
    print_addrinfo6,
)
from netstack.userspace.iproute2.ip.ip_common import (
    AF_INET,
    AF_INET6,
    AF_PACKET,
    AF_UNSPEC,
    INFINITY_LIFE_TIME,
    Args,
    InetPrefix,
    devices,
    duparg,
    duparg2,
    get_addr,
    get_prefix,
    get_u8,
    get_u32,
    inet_addr_match,
    invarg,
    ipv4_or_error,
    ll_name_to_dev,
    matches,
    nodev,
    ntoa,
    rtnl_error,
    rtnl_group_a2n,
    rtnl_rtscope_a2n,
    rtnl_rtscope_n2a,
)
from netstack.userspace.iproute2.ip.ip_json import stats64_json
from netstack.userspace.iproute2.ip.ip_link import (
    IPLINK_TYPES_USAGE,
    IPLINK_USAGE,
    LinkFilter,
    link_attrs,
    print_link_stats,
    print_linkinfo,
)
from netstack.userspace.iproute2.keywords import KeywordTable, parse_keywords
from netstack.userspace.iproute2.utils import Iproute2Options
from netstack.wire.rtnetlink import (
    IFA_F_NOPREFIXROUTE,
    IFA_F_PERMANENT,
    IFA_F_SECONDARY,
    RT_SCOPE_HOST,
    RT_SCOPE_NOWHERE,
    RT_SCOPE_UNIVERSE,
)

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetDevice
    from netstack.ipv4.devinet import InIfaddr
    from netstack.ipv6.addrconf import Inet6Ifaddr

__all__ = ["IPADDR_USAGE", "do_ipaddr", "ipaddr_list", "print_addrinfo"]

IPADDR_USAGE: Final = (
    "Usage: ip address {add|change|replace} IFADDR dev IFNAME [ LIFETIME ]\n"
    "                                                      [ CONFFLAG-LIST ]\n"
    "       ip address del IFADDR dev IFNAME [mngtmpaddr]\n"
    "       ip address {save|flush} [ dev IFNAME ] [ scope SCOPE-ID ] [ to PREFIX ]\n"
    "                            [ FLAG-LIST ] [ label LABEL ] [ { up | down } ]\n"
    "       ip address [ show [ dev IFNAME ] [ scope SCOPE-ID ] [ master DEVICE ]\n"
    "                         [ nomaster ]\n"
    "                         [ type TYPE ] [ to PREFIX ] [ FLAG-LIST ]\n"
    "                         [ label LABEL ] [ { up | down } ] [ vrf NAME ]\n"
    "                         [ proto ADDRPROTO ] ]\n"
    "       ip address {showdump|restore}\n"
    "IFADDR := PREFIX | ADDR peer PREFIX\n"
    "          [ broadcast ADDR ] [ anycast ADDR ]\n"
    "          [ label IFNAME ] [ scope SCOPE-ID ] [ metric METRIC ]\n"
    "          [ proto ADDRPROTO ]\n"
    "SCOPE-ID := [ host | link | global | NUMBER ]\n"
    "FLAG-LIST := [ FLAG-LIST ] FLAG\n"
    "FLAG  := [ permanent | dynamic | secondary | primary |\n"
    "           [-]tentative | [-]deprecated | [-]dadfailed | temporary |\n"
    "           CONFFLAG-LIST ]\n"
    "CONFFLAG-LIST := [ CONFFLAG-LIST ] CONFFLAG\n"
    "CONFFLAG  := [ home | nodad | mngtmpaddr | noprefixroute | autojoin ]\n"
    "LIFETIME := [ valid_lft LFT ] [ preferred_lft LFT ]\n"
    "LFT := forever | SECONDS\n"
    "ADDRPROTO := [ NAME | NUMBER ]\n" + IPLINK_TYPES_USAGE
)

MAX_FLUSH_LOOPS: Final = 10
IFA_F_MCAUTOJOIN: Final = 0x400


@attrs.frozen
class IfaFlag:
    """One row of iproute2's ``ifa_flag_data``."""

    name: str
    mask: int
    readonly: bool
    v6only: bool


IFA_FLAG_DATA: Final = (
    IfaFlag("secondary", 0x01, True, False),
    IfaFlag("temporary", 0x01, True, False),
    IfaFlag("nodad", 0x02, False, True),
    IfaFlag("optimistic", 0x04, False, True),
    IfaFlag("dadfailed", 0x08, True, True),
    IfaFlag("home", 0x10, False, True),
    IfaFlag("deprecated", 0x20, True, True),
    IfaFlag("tentative", 0x40, True, True),
    IfaFlag("permanent", 0x80, True, True),
    IfaFlag("mngtmpaddr", 0x100, False, True),
    IfaFlag("noprefixroute", 0x200, False, False),
    IfaFlag("autojoin", 0x400, False, False),
    IfaFlag("stable-privacy", 0x800, True, True),
)


def _flag_data(name: str) -> IfaFlag | None:
    for fd in IFA_FLAG_DATA:
        if fd.name == name:
            return fd
    return None


@attrs.define
class AddrFilter(LinkFilter):
    """The address part of iproute2's ``struct link_filter``."""

    scope: int = 0
    scopemask: int = 0
    flags: int = 0
    flagmask: int = 0
    pfx: InetPrefix | None = None
    master: int = 0
    slave_kind: str | None = None
    oneline: bool = False


def _get_filter(filt: AddrFilter, arg: str) -> bool:
    """A FLAG-LIST word (``secondary``, ``-tentative``, ``dynamic``…). iproute2: get_filter()."""
    inv = False
    if arg.startswith("-"):
        inv = True
        arg = arg[1:]
    if arg == "dynamic":
        inv = not inv
        arg = "permanent"
    elif arg == "primary":
        inv = not inv
        arg = "secondary"
    fd = _flag_data(arg)
    if fd is None:
        return False
    if inv:
        filt.flags &= ~fd.mask
    else:
        filt.flags |= fd.mask
    filt.flagmask |= fd.mask
    return True


# ---------------------------------------------------------------------------
# Printing (print_addrinfo)
# ---------------------------------------------------------------------------


def _addresses(net: Net, family: int) -> Iterator[InIfaddr]:
    """An address dump: every IPv4 address, devices in ifindex order."""
    if family not in (AF_UNSPEC, AF_INET):
        return
    for dev in devices(net):
        in_dev = dev.ip_ptr
        if in_dev is not None:
            yield from in_dev.ifa_list


def _addr_passes(filt: AddrFilter, ifa: InIfaddr) -> bool:
    if (filt.scope ^ ifa.ifa_scope) & filt.scopemask:
        return False
    if (filt.flags ^ ifa.ifa_flags) & filt.flagmask:
        return False
    if filt.label is not None and not fnmatch.fnmatchcase(ifa.ifa_label, filt.label):
        return False
    pfx = filt.pfx
    return not (
        pfx is not None
        and pfx.family != AF_UNSPEC
        and pfx.bitlen > 0
        and (pfx.family != AF_INET or not inet_addr_match(ifa.ifa_local, pfx, pfx.bitlen))
    )


def _addr6_passes(filt: AddrFilter, ifp: Inet6Ifaddr) -> bool:
    if filt.label is not None and not fnmatch.fnmatchcase(ifp.dev.name, filt.label):
        return False  # no IFA_LABEL for IPv6: iproute2 matches the device name
    return addr6_passes(ifp, filt.scope, filt.scopemask, filt.flags, filt.flagmask, filt.pfx)


def _addresses6(net: Net, family: int) -> list[Inet6Ifaddr]:
    return list(addr6_list(net)) if family in (AF_UNSPEC, AF_INET6) else []


def print_addrinfo(
    opts: Iproute2Options, filt: AddrFilter, ifa: InIfaddr, *, flushing: bool
) -> None:
    """One ``inet`` address. iproute2: ip/ipaddress.c, print_addrinfo()."""
    dev = ifa.dev
    if filt.ifindex and filt.ifindex != dev.ifindex:
        return
    if not _addr_passes(filt, ifa):
        return
    if filt.family not in (AF_UNSPEC, AF_INET):
        return
    if opts.json and not flushing:
        opts.records[-1]["addr_info"].append(_addr_json(opts, ifa))
        return
    o: list[str] = []
    if not opts.brief:
        if filt.oneline or flushing:
            o.append(f"{dev.ifindex}: {dev.name}")
        o.append("    inet ")
    o.append(ntoa(ifa.ifa_local))
    if ifa.ifa_address != ifa.ifa_local:
        o.append(f" peer {ntoa(ifa.ifa_address)}")
    o.append(f"/{ifa.ifa_prefixlen} ")
    if ifa.ifa_rt_priority:
        o.append(f"metric {ifa.ifa_rt_priority} ")
    if opts.brief:
        opts.write("".join(o))
        return
    if ifa.ifa_broadcast:
        o.append(f"brd {ntoa(ifa.ifa_broadcast)} ")
    o.append(f"scope {rtnl_rtscope_n2a(ifa.ifa_scope)} ")
    flags = ifa.ifa_flags
    for fd in IFA_FLAG_DATA:
        if fd.mask == IFA_F_PERMANENT:
            if not flags & fd.mask:
                o.append("dynamic ")
        elif flags & fd.mask:
            o.append(f"{fd.name} ")
        flags &= ~fd.mask
    if flags:
        o.append(f"flags {flags:02x} ")
    o.append(ifa.ifa_label)
    o.append(opts.sl)
    o.append("       valid_lft ")
    o.append("forever" if ifa.valid_lft == INFINITY_LIFE_TIME else f"{ifa.valid_lft}sec")
    o.append(" preferred_lft ")
    o.append("forever" if ifa.preferred_lft == INFINITY_LIFE_TIME else f"{ifa.preferred_lft}sec")
    o.append("\n")
    opts.write("".join(o))


def _addr_json(opts: Iproute2Options, ifa: InIfaddr) -> dict[str, Any]:
    """One ``inet`` entry of ``"addr_info"``. iproute2: print_addrinfo() under ``-j``."""
    obj: dict[str, Any] = {} if opts.brief else {"family": "inet"}
    obj["local"] = ntoa(ifa.ifa_local)
    if ifa.ifa_address != ifa.ifa_local:
        obj["address"] = ntoa(ifa.ifa_address)
    obj["prefixlen"] = ifa.ifa_prefixlen
    if ifa.ifa_rt_priority:
        obj["metric"] = ifa.ifa_rt_priority
    if opts.brief:
        return obj
    if ifa.ifa_broadcast:
        obj["broadcast"] = ntoa(ifa.ifa_broadcast)
    obj["scope"] = rtnl_rtscope_n2a(ifa.ifa_scope)
    flags = ifa.ifa_flags
    for fd in IFA_FLAG_DATA:
        if fd.mask == IFA_F_PERMANENT:
            if not flags & fd.mask:
                obj["dynamic"] = True
        elif flags & fd.mask:
            obj[fd.name] = True
        flags &= ~fd.mask
    if flags:
        obj["flags"] = f"{flags:02x}"
    obj["label"] = ifa.ifa_label
    obj["valid_life_time"] = ifa.valid_lft
    obj["preferred_life_time"] = ifa.preferred_lft
    return obj


def _print_selected(
    opts: Iproute2Options,
    filt: AddrFilter,
    dev: NetDevice,
    addrs: list[InIfaddr],
    flags: int,
    addrs6: list[Inet6Ifaddr] | None = None,
) -> None:
    """iproute2: print_selected_addrinfo()."""
    if filt.up and not flags & IFF_UP:
        return
    if filt.down and flags & IFF_UP:
        return
    for ifa in addrs:
        if ifa.dev is not dev:
            continue
        print_addrinfo(opts, filt, ifa, flushing=False)
    for ifp in addrs6 or ():
        if ifp.dev is dev and _addr6_passes(filt, ifp):
            print_addrinfo6(opts, ifp, oneline=filt.oneline)
    if opts.brief and not opts.json:
        opts.write("\n")


# ---------------------------------------------------------------------------
# Listing and flushing (ipaddr_list_flush_or_save)
# ---------------------------------------------------------------------------


def _parse_filter(net: Net, opts: Iproute2Options, args: Args, *, do_link: bool) -> AddrFilter:
    filt = AddrFilter(family=opts.family, showqueue=True, oneline=opts.oneline)
    filter_dev: str | None = None
    while args:
        word = args.take()
        if word == "to":
            value = args.value()
            pfx = get_prefix(value, filt.family)
            filt.pfx = pfx
            if filt.family == AF_UNSPEC:
                filt.family = pfx.family
        elif word == "scope":
            value = args.value()
            filt.scopemask = -1
            scope = rtnl_rtscope_a2n(value)
            if scope is None:
                if value != "all":
                    invarg('invalid "scope"\n', value)
                scope = RT_SCOPE_NOWHERE
                filt.scopemask = 0
            filt.scope = scope
        elif word == "up":
            filt.up = True
        elif word == "down":
            filt.down = True
        elif _get_filter(filt, word):
            pass
        elif word == "label":
            filt.label = args.value()
        elif word == "group":
            value = args.value()
            group = rtnl_group_a2n(value)
            if group is None:
                invarg('Invalid "group" value\n', value)
            filt.group = group
        elif word == "master":
            value = args.value()
            master = ll_name_to_dev(net, value)
            if master is None:
                invarg("Device does not exist\n", value)
            filt.master = master.ifindex
        elif word == "vrf":
            value = args.value()
            invarg("Not a valid VRF name\n", value)
        elif word == "nomaster":
            filt.master = -1
        elif word == "type":
            value = args.value()
            if value.endswith("_slave"):
                filt.slave_kind = value[: -len("_slave")]
            else:
                filt.kind = value
        elif word == "proto":
            value = args.value()
            if get_u8(value) is None:
                invarg('"proto" value is invalid\n', value)
        elif word == "novf":
            pass
        else:
            if word == "dev":
                word = args.value()
            elif matches(word, "help"):
                raise ConfigError(IPLINK_USAGE if do_link else IPADDR_USAGE)
            if filter_dev is not None:
                duparg2("dev", word)
            filter_dev = word
    if filter_dev is not None:
        dev = ll_name_to_dev(net, filter_dev)
        if dev is None:
            raise ConfigError(f'Device "{filter_dev}" does not exist.', errno.ENODEV)
        filt.ifindex = dev.ifindex
    return filt


def ipaddr_list(net: Net, opts: Iproute2Options, args: Args, *, do_link: bool) -> None:
    """``ip addr show`` / ``ip link show``. iproute2: ipaddr_list_flush_or_save(IPADD_LIST)."""
    filt = _parse_filter(net, opts, args, do_link=do_link)
    opts.json_list = True
    links = [d for d in devices(net) if not filt.ifindex or d.ifindex == filt.ifindex]
    if filt.master > 0 or filt.slave_kind is not None:
        links = []  # no device here has a master
    no_link = False
    addrs: list[InIfaddr] = []
    addrs6: list[Inet6Ifaddr] = []
    if filt.family != AF_PACKET:
        no_link = filt.oneline
        addrs = list(_addresses(net, filt.family))
        addrs6 = _addresses6(net, filt.family)
        links = [d for d in links if _link_has_match(filt, d, addrs, addrs6)]
    if filt.group != -1:
        links = [d for d in links if d.group == filt.group]
    for dev in links:
        la = link_attrs(dev)
        res = 0
        if opts.brief or not no_link:
            res = print_linkinfo(opts, la, filt, do_link=do_link)
        if res >= 0 and filt.family != AF_PACKET:
            _print_selected(opts, filt, dev, addrs, la.flags, addrs6)
        if res > 0 and not do_link and opts.stats:
            if opts.json:
                opts.records[-1]["stats64"] = stats64_json(dev.statistics())
                continue
            opts.write(print_link_stats(opts, dev))
            opts.write(opts.sl)


def _link_has_match(
    filt: AddrFilter,
    dev: NetDevice,
    addrs: list[InIfaddr],
    addrs6: list[Inet6Ifaddr] | None = None,
) -> bool:
    """iproute2: ipaddr_filter()."""
    missing = True
    for ifa in addrs:
        if ifa.dev is not dev:
            continue
        missing = False
        if _addr_passes(filt, ifa):
            return True
    for ifp in addrs6 or ():
        if ifp.dev is not dev:
            continue
        missing = False
        if _addr6_passes(filt, ifp):
            return True
    return missing and filt.family in (AF_UNSPEC, AF_PACKET)


def _delete_ifa(net: Net, ifa: InIfaddr) -> None:
    in_dev = ifa.dev.ip_ptr
    if in_dev is not None and ifa in in_dev.ifa_list:
        in_dev.delete_ifa(ifa)


def ipaddr_flush(net: Net, opts: Iproute2Options, args: Args) -> None:
    """``ip addr flush``. iproute2: ipaddr_list_flush_or_save(IPADD_FLUSH), ipaddr_flush()."""
    if not args:
        raise ConfigError("Flush requires arguments.", errno.EINVAL)
    if opts.family == AF_PACKET:
        raise ConfigError("Cannot flush link addresses.", errno.EINVAL)
    filt = _parse_filter(net, opts, args, do_link=False)
    rounds = 0
    while rounds < MAX_FLUSH_LOOPS:
        victims = [
            ifa
            for ifa in _addresses(net, filt.family)
            if (not filt.ifindex or ifa.dev.ifindex == filt.ifindex) and _addr_passes(filt, ifa)
        ]
        victims6 = [
            ifp
            for ifp in _addresses6(net, filt.family)
            if (not filt.ifindex or ifp.dev.ifindex == filt.ifindex) and _addr6_passes(filt, ifp)
        ]
        if not victims and not victims6:
            if opts.stats:
                if rounds == 0:
                    opts.write("Nothing to flush.\n")
                else:
                    s = "s" if rounds > 1 else ""
                    opts.write(f"*** Flush is complete after {rounds} round{s} ***\n")
            return
        if opts.stats > 1:
            for ifa in victims:
                print_addrinfo(opts, filt, ifa, flushing=True)
        for ifa in victims:
            _delete_ifa(net, ifa)
        for ifp in victims6:
            if opts.stats > 1:
                print_addrinfo6(opts, ifp, oneline=True)
            if ifp in ifp.idev.addr_list:
                ifp.idev.ipv6.addrconf.ipv6_del_addr(ifp)
        rounds += 1
        if opts.stats:
            n = len(victims) + len(victims6)
            opts.write(f"\n*** Round {rounds}, deleting {n} addresses ***\n")
        if not filt.flags & IFA_F_SECONDARY and filt.flagmask & IFA_F_SECONDARY:
            if opts.stats:
                s = "s" if rounds > 1 else ""
                opts.write(f"*** Flush is complete after {rounds} round{s} ***\n")
            return
    raise ConfigError(
        f"*** Flush remains incomplete after {MAX_FLUSH_LOOPS} rounds. ***", errno.EBUSY
    )


# ---------------------------------------------------------------------------
# add / change / replace / del (ipaddr_modify)
# ---------------------------------------------------------------------------


def _lifetime(value: str) -> int | None:
    if value == "forever":
        return INFINITY_LIFE_TIME
    return get_u32(value)


def _default_scope(lcl: InetPrefix | None) -> int:
    if lcl is not None and lcl.family == AF_INET and lcl.bytelen >= 1 and lcl.data[0] == 127:
        return RT_SCOPE_HOST
    return RT_SCOPE_UNIVERSE


@attrs.define
class _AddrRequest:
    """What ``ip address add|change|replace|del`` has read so far (iproute2's ``req``)."""

    family: int
    d: str | None = None
    label: str | None = None
    lcl: InetPrefix | None = None
    peer: InetPrefix | None = None
    brd: InetPrefix | None = None
    brd_mode: int = 0  # -1: "+", -2: "-"
    anycast: bool = False
    scope: int | None = None
    metric: int = 0
    valid_lft: int | None = None
    preferred_lft: int | None = None
    ifa_flags: int = 0
    prefixlen: int = 0


_IPADDR_MODIFY: Final = KeywordTable[_AddrRequest, Args]()
"""ipaddr_modify()'s loop, in iproute2's order (the order decides abbreviations)."""


@_IPADDR_MODIFY.keyword("peer", "remote")
def _addr_peer(req: _AddrRequest, args: Args, word: str) -> None:
    value = args.value()
    if req.peer is not None:
        duparg("peer", value)
    req.peer = get_prefix(value, req.family)
    if req.family == AF_UNSPEC:
        req.family = req.peer.family
    req.prefixlen = req.peer.bitlen


@_IPADDR_MODIFY.keyword("broadcast*", "brd")
def _addr_broadcast(req: _AddrRequest, args: Args, word: str) -> None:
    value = args.value()
    if req.brd is not None or req.brd_mode:
        duparg("broadcast", value)
    if value == "+":
        req.brd_mode = -1
    elif value == "-":
        req.brd_mode = -2
    else:
        req.brd = get_addr(value, req.family)
        if req.family == AF_UNSPEC:
            req.family = req.brd.family


@_IPADDR_MODIFY.keyword("anycast")
def _addr_anycast(req: _AddrRequest, args: Args, word: str) -> None:
    value = args.value()
    if req.anycast:
        duparg("anycast", value)
    any_addr = get_addr(value, req.family)
    if req.family == AF_UNSPEC:
        req.family = any_addr.family
    req.anycast = True


@_IPADDR_MODIFY.keyword("scope")
def _addr_scope(req: _AddrRequest, args: Args, word: str) -> None:
    value = args.value()
    sc = rtnl_rtscope_a2n(value)
    if sc is None:
        invarg("invalid scope value.", value)
    req.scope = sc


@_IPADDR_MODIFY.keyword("dev")
def _addr_dev(req: _AddrRequest, args: Args, word: str) -> None:
    req.d = args.value()


@_IPADDR_MODIFY.keyword("label")
def _addr_label(req: _AddrRequest, args: Args, word: str) -> None:
    req.label = args.value()


@_IPADDR_MODIFY.keyword("metric*", "priority*", "preference*")
def _addr_metric(req: _AddrRequest, args: Args, word: str) -> None:
    value = args.value()
    m = get_u32(value)
    if m is None:
        invarg('"metric" value is invalid\n', value)
    req.metric = m


@_IPADDR_MODIFY.keyword("valid_lft*")
def _addr_valid_lft(req: _AddrRequest, args: Args, word: str) -> None:
    if req.valid_lft is not None:
        duparg("valid_lft", word)
    value = args.value()
    req.valid_lft = _lifetime(value)
    if req.valid_lft is None:
        invarg("valid_lft value", value)


@_IPADDR_MODIFY.keyword("preferred_lft*")
def _addr_preferred_lft(req: _AddrRequest, args: Args, word: str) -> None:
    if req.preferred_lft is not None:
        duparg("preferred_lft", word)
    value = args.value()
    req.preferred_lft = _lifetime(value)
    if req.preferred_lft is None:
        invarg("preferred_lft value", value)


@_IPADDR_MODIFY.keyword(*(fd.name for fd in IFA_FLAG_DATA))
def _addr_flag(req: _AddrRequest, args: Args, word: str) -> None:
    fd = _flag_data(word)
    assert fd is not None
    if fd.readonly or (fd.v6only and req.family != AF_INET6):
        return  # iproute2 prints a warning on stderr and goes on
    req.ifa_flags |= fd.mask


@_IPADDR_MODIFY.keyword("proto")
def _addr_proto(req: _AddrRequest, args: Args, word: str) -> None:
    value = args.value()
    proto = {"unspec": 0, "kernel_lo": 1, "kernel_ra": 2, "kernel_ll": 3}.get(value)
    if proto is None:
        proto = get_u8(value)
    if proto is None:
        invarg('"proto" value is invalid\n', value)
    if proto:
        raise ConfigError('netstack: "ip addr ... proto" is not supported', errno.EOPNOTSUPP)


def _addr_local(req: _AddrRequest, args: Args, word: str) -> None:
    """The final ``else``: ``[local] PREFIX`` (or ``help``)."""
    if word == "local":
        word = args.value()
    if matches(word, "help"):
        raise ConfigError(IPADDR_USAGE)
    if req.lcl is not None:
        duparg2("local", word)
    req.lcl = get_prefix(word, req.family)
    if req.family == AF_UNSPEC:
        req.family = req.lcl.family


def ipaddr_modify(net: Net, opts: Iproute2Options, args: Args, *, cmd: str) -> None:
    """``ip addr add|change|replace|del``. iproute2: ipaddr_modify(); kernel: devinet.c."""
    delete = cmd == "del"
    req = parse_keywords(_IPADDR_MODIFY, _AddrRequest(opts.family), args, _addr_local)
    family, d, label, lcl, peer, brd = req.family, req.d, req.label, req.lcl, req.peer, req.brd
    brd_mode, scope, metric, prefixlen = req.brd_mode, req.scope, req.metric, req.prefixlen
    valid_lft, preferred_lft, ifa_flags = req.valid_lft, req.preferred_lft, req.ifa_flags
    if d is None:
        raise ConfigError('Not enough information: "dev" argument is required.', errno.EINVAL)
    address: InetPrefix | None = peer
    if peer is None and lcl is not None:
        if delete and lcl.family == AF_INET and not lcl.prefixlen_specified:
            pass  # wildcard deletion (iproute2 warns on stderr)
        else:
            peer = lcl
            address = lcl
    if prefixlen == 0 and lcl is not None:
        prefixlen = lcl.bitlen
    if brd_mode and not delete:
        if family != AF_INET:
            raise ConfigError("Broadcast can be set only for IPv4 addresses", errno.EINVAL)
        if peer is not None and peer.bitlen <= 30:
            host = (1 << (32 - peer.bitlen)) - 1
            value32 = peer.v4 | host if brd_mode == -1 else peer.v4 & ~host
            brd = InetPrefix(AF_INET, value32.to_bytes(4, "big"))
    if scope is None and not delete:
        scope = _default_scope(lcl)
    dev = ll_name_to_dev(net, d)
    if dev is None:
        nodev(d)
    if valid_lft is not None or preferred_lft is not None:
        vl = INFINITY_LIFE_TIME if valid_lft is None else valid_lft
        pl = INFINITY_LIFE_TIME if preferred_lft is None else preferred_lft
        if not vl:
            raise ConfigError("valid_lft is zero", errno.EINVAL)
        if vl < pl:
            raise ConfigError("preferred_lft is greater than valid_lft", errno.EINVAL)
        if family != AF_INET6 and (vl != INFINITY_LIFE_TIME or pl != INFINITY_LIFE_TIME):
            raise ConfigError(
                'netstack: finite "valid_lft"/"preferred_lft" are not supported',
                errno.EOPNOTSUPP,
            )
    if ifa_flags & IFA_F_MCAUTOJOIN:
        if lcl is None or lcl.family != AF_INET or (lcl.v4 & 0xF0000000) != 0xE0000000:
            raise ConfigError("autojoin needs multicast address", errno.EINVAL)
        raise ConfigError('netstack: "autojoin" is not supported', errno.EOPNOTSUPP)
    # --- the kernel's side: the family decides who handles the request ---
    if family == AF_INET6:
        ipaddr_modify6(
            net,
            dev,
            cmd=cmd,
            lcl=lcl,
            peer=address if address is not lcl else None,
            prefixlen=prefixlen,
            ifa_flags=ifa_flags,
            metric=metric,
            valid_lft=valid_lft,
            preferred_lft=preferred_lft,
        )
        return
    if family != AF_INET:  # no handler for this family: rtnetlink_rcv_msg()
        raise rtnl_error(errno.EOPNOTSUPP)
    ipv4 = ipv4_or_error(net)
    in_dev = dev.ip_ptr
    if in_dev is None:
        raise rtnl_error(errno.ENOBUFS)
    if delete:
        _deladdr(dev, lcl, address, prefixlen, label)
        return
    if lcl is None or prefixlen > 32:
        raise rtnl_error(errno.EINVAL)
    if label is not None and len(label.encode()) >= 16:
        label = label.encode()[:15].decode(errors="ignore")
    addr = address if address is not None else lcl
    existing = None
    mask = (0xFFFFFFFF << (32 - prefixlen)) & 0xFFFFFFFF if prefixlen else 0
    for ifa in in_dev.ifa_list:
        if ifa.ifa_mask == mask and ifa.match(addr.v4) and ifa.ifa_local == lcl.v4:
            existing = ifa
            break
    if existing is not None and cmd != "add":
        # NLM_F_REPLACE on an existing address: only the metric changes
        if existing.ifa_rt_priority != metric:
            ipv4.fib.fib_del_ifaddr(existing)
            existing.ifa_rt_priority = metric
            ipv4.fib.fib_add_ifaddr(existing)
        return
    ipv4.add_address(
        dev,
        lcl.v4,
        prefixlen,
        broadcast=brd.v4 if brd is not None else 0,
        peer=addr.v4 if addr is not lcl else None,
        scope=scope,
        label=label,
        noprefixroute=bool(ifa_flags & IFA_F_NOPREFIXROUTE),
        metric=metric,
    )


@kernel("inet_rtm_deladdr")
def _deladdr(
    dev: NetDevice,
    lcl: InetPrefix | None,
    address: InetPrefix | None,
    prefixlen: int,
    label: str | None,
) -> None:
    """Delete the first address matching what was given. Kernel: inet_rtm_deladdr()."""
    in_dev = dev.ip_ptr
    assert in_dev is not None
    for ifa in in_dev.ifa_list:
        if lcl is not None and ifa.ifa_local != lcl.v4:
            continue
        if label is not None and ifa.ifa_label != label:
            continue
        if address is not None and (prefixlen != ifa.ifa_prefixlen or not ifa.match(address.v4)):
            continue
        in_dev.delete_ifa(ifa)
        return
    # the extack text Linux 6.x sets ("ipv4: Address not found"), which iproute2
    # prints instead of strerror
    raise ConfigError("Error: ipv4: Address not found.", errno.EADDRNOTAVAIL)


def do_ipaddr(net: Net, opts: Iproute2Options, args: Args) -> None:
    """``ip address …``. iproute2: ip/ipaddress.c, do_ipaddr()."""
    if not args:
        ipaddr_list(net, opts, args, do_link=False)
        return
    word = args.take()
    if matches(word, "add"):
        ipaddr_modify(net, opts, args, cmd="add")
    elif matches(word, "change") or word == "chg":
        ipaddr_modify(net, opts, args, cmd="change")
    elif matches(word, "replace"):
        ipaddr_modify(net, opts, args, cmd="replace")
    elif matches(word, "delete"):
        ipaddr_modify(net, opts, args, cmd="del")
    elif matches(word, "list") or matches(word, "show") or matches(word, "lst"):
        ipaddr_list(net, opts, args, do_link=False)
    elif matches(word, "flush"):
        ipaddr_flush(net, opts, args)
    elif matches(word, "save") or matches(word, "showdump") or matches(word, "restore"):
        raise ConfigError(f'netstack: "ip address {word}" is not supported', errno.EOPNOTSUPP)
    elif matches(word, "help"):
        raise ConfigError(IPADDR_USAGE)
    else:
        raise ConfigError(f'Command "{word}" is unknown, try "ip address help".', errno.EINVAL)
