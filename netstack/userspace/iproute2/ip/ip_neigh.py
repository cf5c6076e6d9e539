"""``ip neighbour``: show, add/change/replace/delete, get and flush ARP entries.

Theory of operation: the neighbour tables are ``ipv4_of(net).arp_tbl`` and
IPv6's ``nd_tbl`` (a dump walks both, ARP first, as the kernel's neigh_tables[]).
A dump lists its entries and iproute2 filters them: by default NOARP entries
and entries in state NONE are hidden (``filter.state = 0xFF & ~NUD_NOARP``),
``nud all`` shows everything, ``nud STATE`` selects states (``none`` maps to
the 0x100 pseudo-state). Each line is ``print_neigh``'s: address, ``dev``
(unless filtered by device), ``lladdr`` (only for NUD_VALID states, as the
kernel only reports it then), flags, with ``-s`` the ``ref``/``used``
/``probes`` cache info, and the state names. (The ``-s`` fields keep iproute2's odd spacing, see
:func:`print_neigh`.)

Changes go through :func:`~netstack.neigh.neighbour.neigh_add` and
``NeighTable.delete`` with the netlink flags of the command (add =
CREATE|EXCL, replace = CREATE|REPLACE, change = REPLACE); ``flush`` deletes in
rounds every non-permanent, non-NOARP entry the filter selects.

iproute2: ip/ipneigh.c. Kernel: net/core/neighbour.c (neigh_add,
neigh_delete, neigh_fill_info, neigh_get).
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Any, Final

import attrs

from netstack.errors import ConfigError
from netstack.neigh.neighbour import (
    NTF_EXT_LEARNED,
    NTF_PROXY,
    NTF_ROUTER,
    PneighEntry,
    neigh_add,
    pneigh_delete,
    pneigh_entries,
    pneigh_lookup,
)
from netstack.neigh.nud import (
    NUD_DELAY,
    NUD_FAILED,
    NUD_INCOMPLETE,
    NUD_NOARP,
    NUD_NONE,
    NUD_PERMANENT,
    NUD_PROBE,
    NUD_REACHABLE,
    NUD_STALE,
    NUD_VALID,
)
from netstack.sites import kernel
from netstack.userspace.iproute2.ip.ip_common import (
    AF_INET,
    AF_INET6,
    AF_UNSPEC,
    Args,
    InetPrefix,
    addr_text,
    duparg,
    duparg2,
    extack_error,
    get_addr,
    get_prefix,
    get_unsigned,
    inet6_addr_match,
    inet_addr_match,
    invarg,
    ipv4_or_error,
    ipv6_or_error,
    ll_addr_a2n,
    ll_addr_n2a,
    ll_name_to_dev,
    matches,
    nodev,
    rtnl_error,
    rtnl_rtprot_a2n,
    rtnl_rtprot_n2a,
)
from netstack.userspace.iproute2.utils import Iproute2Options

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.neigh.neighbour import Neighbour, NeighTable

__all__ = ["IPNEIGH_USAGE", "do_ipneigh"]

IPNEIGH_USAGE: Final = (
    "Usage: ip neigh { add | del | change | replace }\n"
    "\t\t{ ADDR [ lladdr LLADDR ] [ nud STATE ] | proxy ADDR } [ dev DEV ]\n"
    "\t\t[ router ] [ use ] [ managed ] [ extern_learn ] [ protocol PROTO ]\n"
    "\n"
    "\tip neigh { show | flush } [ proxy ] [ to PREFIX ] [ dev DEV ] [ nud STATE ]\n"
    "\t\t\t\t  [ vrf NAME ] [ nomaster ]\n"
    "\tip neigh get { ADDR | proxy ADDR } dev DEV\n"
    "\n"
    "STATE := { delay | failed | incomplete | noarp | none |\n"
    "           permanent | probe | reachable | stale }"
)

MAX_ROUNDS: Final = 10
NTF_OFFLOADED: Final = 0x20

_STATE_NAMES: Final = (
    (NUD_INCOMPLETE, "INCOMPLETE"),
    (NUD_REACHABLE, "REACHABLE"),
    (NUD_STALE, "STALE"),
    (NUD_DELAY, "DELAY"),
    (NUD_PROBE, "PROBE"),
    (NUD_FAILED, "FAILED"),
    (NUD_NOARP, "NOARP"),
    (NUD_PERMANENT, "PERMANENT"),
)


def nud_state_a2n(arg: str) -> int | None:
    """iproute2: ip/ipneigh.c, nud_state_a2n()."""
    if matches(arg, "permanent"):
        return NUD_PERMANENT
    if matches(arg, "reachable"):
        return NUD_REACHABLE
    named = {
        "noarp": NUD_NOARP,
        "none": NUD_NONE,
        "stale": NUD_STALE,
        "incomplete": NUD_INCOMPLETE,
        "delay": NUD_DELAY,
        "probe": NUD_PROBE,
    }
    if arg in named:
        return named[arg]
    if matches(arg, "failed"):
        return NUD_FAILED
    state = get_unsigned(arg)
    if state is None or state >= 0x100 or state & (state - 1):
        return None
    return state


@attrs.define
class NeighFilter:
    """iproute2's neighbour ``filter``."""

    family: int = AF_UNSPEC
    index: int = 0
    state: int = 0xFF & ~NUD_NOARP
    unused_only: bool = False
    pfx: InetPrefix | None = None
    protocol: int = 0
    proxy: bool = False


def _passes(filt: NeighFilter, n: Neighbour) -> bool:
    if filt.family not in (AF_UNSPEC, n.tbl.family):
        return False
    if filt.index and filt.index != n.dev.ifindex:
        return False
    state = n.nud_state
    if (
        not filt.state & state
        and not n.flags & NTF_PROXY
        and not n.flags & NTF_EXT_LEARNED
        and (state or not filt.state & 0x100)
    ):
        return False
    pfx = filt.pfx
    if (
        pfx is not None
        and pfx.family != AF_UNSPEC
        and pfx.bitlen > 0
        and (
            pfx.family != n.tbl.family
            or not (inet6_addr_match if pfx.family == AF_INET6 else inet_addr_match)(
                n.primary_key, pfx, pfx.bitlen
            )
        )
    ):
        return False
    if filt.protocol and filt.protocol != n.protocol:
        return False
    return not (filt.unused_only and n.refcnt - 1)


def print_neigh(opts: Iproute2Options, filt: NeighFilter, n: Neighbour) -> str:
    """One entry. iproute2: ip/ipneigh.c, print_neigh() (iproute2 ≥ 5.16 spacing)."""
    dev = n.dev
    if opts.json:
        opts.records.append(_neigh_json(opts, filt, n))
        return ""
    if opts.brief:  # print_neigh_brief() (iproute2 ≥ 5.19)
        brief = f"{addr_text(n.tbl.family, n.primary_key):<39} "
        if not filt.index:
            brief += f"{dev.name:<16} "
        if n.nud_state & NUD_VALID:
            brief += ll_addr_n2a(bytes(n.ha), dev.type)
        return brief + "\n"
    o: list[str] = [f"{addr_text(n.tbl.family, n.primary_key)} "]
    if not filt.index:
        o.append(f"dev {dev.name} ")
    if n.nud_state & NUD_VALID:
        o.append(f"lladdr {ll_addr_n2a(bytes(n.ha), dev.type)} ")
    if n.flags & NTF_ROUTER:
        o.append("router ")
    if n.flags & NTF_PROXY:
        o.append("proxy ")
    if n.flags & NTF_EXT_LEARNED:
        o.append("extern_learn ")
    if n.flags & NTF_OFFLOADED:
        o.append("offload ")
    if opts.stats:
        # print_cacheinfo() kept its leading-space formats when iproute2 5.16 moved
        # every other field to a trailing space: hence "lladdr X  used a/b/cprobes N ".
        clock = dev.net.clock
        now = clock.jiffies
        hz = clock.hz
        ref = n.refcnt - 1
        if ref:
            o.append(f" ref {ref}")
        used = (now - n.used) * 100 // hz // 100
        confirmed = (now - n.confirmed) * 100 // hz // 100
        updated = (now - n.updated) * 100 // hz // 100
        o.append(f" used {used}/{confirmed}/{updated}")
        o.append(f"probes {n.probes} ")
    state = n.nud_state
    for bit, name in _STATE_NAMES:
        if state & bit:
            o.append(f"{name} ")
    if n.protocol:
        o.append(f"proto {rtnl_rtprot_n2a(n.protocol)} ")
    o.append("\n")
    return "".join(o)


def _neigh_json(opts: Iproute2Options, filt: NeighFilter, n: Neighbour) -> dict[str, Any]:
    """One entry under ``-j``. iproute2: print_neigh() (flags are ``null`` members)."""
    dev = n.dev
    obj: dict[str, Any] = {"dst": addr_text(n.tbl.family, n.primary_key)}
    if not filt.index:
        obj["dev"] = dev.name
    if n.nud_state & NUD_VALID:
        obj["lladdr"] = ll_addr_n2a(bytes(n.ha), dev.type)
    if opts.brief:
        return obj
    for bit, name in (
        (NTF_ROUTER, "router"),
        (NTF_PROXY, "proxy"),
        (NTF_EXT_LEARNED, "extern_learn"),
        (NTF_OFFLOADED, "offload"),
    ):
        if n.flags & bit:
            obj[name] = None
    obj["state"] = [name for bit, name in _STATE_NAMES if n.nud_state & bit]
    if n.protocol:
        obj["protocol"] = rtnl_rtprot_n2a(n.protocol)
    return obj


@kernel("pneigh_fill_info")
def print_pneigh(opts: Iproute2Options, filt: NeighFilter, tbl: NeighTable, pn: PneighEntry) -> str:
    """One proxy entry, as iproute2's print_neigh() shows it: ``ADDR [dev DEV] proxy``.

    The kernel reports it with state NONE and flags NTF_PROXY.
    Kernel: pneigh_fill_info().
    """
    dev = pn.dev
    if opts.json:
        obj: dict[str, Any] = {"dst": addr_text(tbl.family, pn.key)}
        if dev is not None and not filt.index:
            obj["dev"] = dev.name
        if not opts.brief:
            if pn.flags & NTF_ROUTER:
                obj["router"] = None
            obj["proxy"] = None
            if pn.flags & NTF_EXT_LEARNED:
                obj["extern_learn"] = None
            if pn.protocol:
                obj["protocol"] = rtnl_rtprot_n2a(pn.protocol)
        opts.records.append(obj)
        return ""
    if opts.brief:
        brief = f"{addr_text(tbl.family, pn.key):<39} "
        if dev is not None and not filt.index:
            brief += f"{dev.name:<16} "
        return brief + "\n"
    o = [f"{addr_text(tbl.family, pn.key)} "]
    if dev is not None and not filt.index:
        o.append(f"dev {dev.name} ")
    if pn.flags & NTF_ROUTER:
        o.append("router ")
    o.append("proxy ")
    if pn.flags & NTF_EXT_LEARNED:  # the entry keeps the flags it was added with
        o.append("extern_learn ")
    if pn.protocol:
        o.append(f"proto {rtnl_rtprot_n2a(pn.protocol)} ")
    return "".join(o) + "\n"


@kernel("pneigh_dump_table")
def _proxy_entries(net: Net, filt: NeighFilter) -> list[tuple[NeighTable, PneighEntry]]:
    """The proxy entries a ``show proxy`` dump returns: ARP's, then ndisc's.

    Kernel: pneigh_dump_table() for each table of neigh_tables[]
    (neigh_ifindex_filtered: a device filter skips entries of no device);
    iproute2 drops the entries outside ``to PREFIX``.
    """
    out = []
    for tbl in _tables(net):
        if filt.family not in (AF_UNSPEC, tbl.family):
            continue
        match = inet6_addr_match if tbl.family == AF_INET6 else inet_addr_match
        for pn in pneigh_entries(tbl):
            if filt.index and (pn.dev is None or pn.dev.ifindex != filt.index):
                continue
            if filt.protocol and filt.protocol != pn.protocol:
                continue
            pfx = filt.pfx
            if (
                pfx is not None
                and pfx.family != AF_UNSPEC
                and pfx.bitlen > 0
                and (pfx.family != tbl.family or not match(pn.key, pfx, pfx.bitlen))
            ):
                continue
            out.append((tbl, pn))
    return out


def _tables(net: Net) -> list[NeighTable]:
    """The neighbour tables a dump walks, ARP before ND as the kernel's neigh_tables[]."""
    tables = [ipv4_or_error(net).arp_tbl]
    if net.ipv6 is not None:
        tables.append(ipv6_or_error(net).nd_tbl)
    return tables


@kernel("neigh_find_table")
def _table(net: Net, family: int) -> NeighTable:
    """The table of *family*. Kernel: neigh_find_table() (none: EAFNOSUPPORT)."""
    if family == AF_INET6:
        return ipv6_or_error(net).nd_tbl
    if family != AF_INET:
        raise rtnl_error(errno.EAFNOSUPPORT)
    return ipv4_or_error(net).arp_tbl


def _entries(net: Net) -> list[Neighbour]:
    return [n for tbl in _tables(net) for n in tbl.entries()]


def do_show_or_flush(net: Net, opts: Iproute2Options, args: Args, *, flush: bool) -> None:
    """``ip neigh show|flush``. iproute2: ip/ipneigh.c, do_show_or_flush()."""
    filt = NeighFilter(family=opts.family)
    opts.json_list = not flush
    if flush:
        if not args:
            raise ConfigError("Flush requires arguments.", errno.EINVAL)
        filt.state = ~(NUD_PERMANENT | NUD_NOARP)
    state_given = False
    filter_dev: str | None = None
    while args:
        word = args.take()
        if word == "dev":
            value = args.value()
            if filter_dev is not None:
                duparg("dev", value)
            filter_dev = value
        elif word == "master":
            value = args.value()
            if ll_name_to_dev(net, value) is None:
                invarg("Device does not exist\n", value)
            raise ConfigError('netstack: "ip neigh ... master" is not supported', errno.EOPNOTSUPP)
        elif word == "vrf":
            invarg("Not a valid VRF name\n", args.value())
        elif word == "unused":
            filt.unused_only = True
        elif word == "nud":
            value = args.value()
            if not state_given:
                state_given = True
                filt.state = 0
            state = nud_state_a2n(value)
            if state is None:
                if value != "all":
                    invarg("nud state is bad", value)
                state = ~0
                if flush:
                    state &= ~NUD_NOARP
            if state == 0:
                state = 0x100
            filt.state |= state
        elif word == "proxy":
            filt.proxy = True
        elif matches(word, "protocol"):
            value = args.value()
            prot = rtnl_rtprot_a2n(value)
            if prot is None:
                if value != "all":
                    invarg('invalid "protocol"\n', value)
                prot = 0
            filt.protocol = prot
        else:
            if word == "to":
                word = args.value()
            if matches(word, "help"):
                raise ConfigError(IPNEIGH_USAGE)
            pfx = get_prefix(word, filt.family)
            filt.pfx = pfx
            if filt.family == AF_UNSPEC:
                filt.family = pfx.family
    if filter_dev is not None:
        dev = ll_name_to_dev(net, filter_dev)
        if dev is None:
            nodev(filter_dev)
        filt.index = dev.ifindex
    if filt.proxy:
        if not flush:
            for pn_tbl, pn in _proxy_entries(net, filt):
                opts.write(print_pneigh(opts, filt, pn_tbl, pn))
            return
        # flush proxy: the same rounds, deleting each entry the dump returns (and, as
        # iproute2 6.1 on Linux 6.18 shows, printing none of them under -s -s)
        rounds = 0
        while rounds < MAX_ROUNDS:
            pvictims = _proxy_entries(net, filt)
            if not pvictims:
                if opts.stats:
                    if rounds == 0:
                        opts.write("Nothing to flush.\n")
                    else:
                        s = "s" if rounds > 1 else ""
                        opts.write(f"*** Flush is complete after {rounds} round{s} ***\n")
                return
            for pn_tbl, pn in pvictims:
                pneigh_delete(pn_tbl, pn.key, pn.dev)
            rounds += 1
            if opts.stats:
                opts.write(f"\n*** Round {rounds}, deleting {len(pvictims)} entries ***\n")
        opts.write(f"*** Flush not complete bailing out after {MAX_ROUNDS} rounds\n")
        return
    if not flush:
        for n in _entries(net):
            if _passes(filt, n):
                opts.write(print_neigh(opts, filt, n))
        return
    rounds = 0
    while rounds < MAX_ROUNDS:
        victims = [n for n in _entries(net) if _passes(filt, n)]
        if not victims:
            if opts.stats:
                if rounds == 0:
                    opts.write("Nothing to flush.\n")
                else:
                    s = "s" if rounds > 1 else ""
                    opts.write(f"*** Flush is complete after {rounds} round{s} ***\n")
            return
        for n in victims:
            if opts.stats > 1:
                opts.write(print_neigh(opts, filt, n))
            if not n.dead:
                try:
                    n.tbl.delete(n.primary_key, n.dev)
                except ConfigError:
                    pass
        rounds += 1
        if opts.stats:
            opts.write(f"\n*** Round {rounds}, deleting {len(victims)} entries ***\n")
        filt.state &= ~NUD_FAILED
    opts.write(f"*** Flush not complete bailing out after {MAX_ROUNDS} rounds\n")


def ipneigh_modify(net: Net, opts: Iproute2Options, args: Args, *, cmd: str) -> None:
    """``ip neigh add|change|replace|del``. iproute2: ipneigh_modify(); kernel: neigh_add()."""
    state = NUD_PERMANENT
    flags = 0
    protocol = 0
    d: str | None = None
    dev_ok = False
    dst: InetPrefix | None = None
    lla: str | None = None
    while args:
        word = args.take()
        if matches(word, "lladdr"):
            value = args.value()
            if lla is not None:
                duparg("lladdr", value)
            lla = value
        elif word == "nud":
            value = args.value()
            st = nud_state_a2n(value)
            if st is None:
                invarg("nud state is bad", value)
            state = st
        elif matches(word, "proxy"):
            value = args.value()
            if matches(value, "help"):
                raise ConfigError(IPNEIGH_USAGE)
            if dst is not None:
                duparg("address", value)
            dst = get_addr(value, opts.family)
            dev_ok = True
            flags |= NTF_PROXY
        elif word == "router":
            flags |= NTF_ROUTER
        elif matches(word, "extern_learn"):
            flags |= NTF_EXT_LEARNED
        elif word == "dev":
            d = args.value()
            dev_ok = True
        elif matches(word, "protocol"):
            value = args.value()
            prot = rtnl_rtprot_a2n(value)
            if prot is None:
                invarg('"protocol" value is invalid\n', value)
            protocol = prot  # NDA_PROTOCOL (neigh_delete reads none)
        else:
            if word == "to":
                word = args.value()
            if matches(word, "help"):
                word = args.value()
            if dst is not None:
                duparg2("to", word)
            dst = get_addr(word, opts.family)
    if not dev_ok or dst is None or dst.family == AF_UNSPEC:
        raise ConfigError("Device and destination are required arguments.", errno.EINVAL)
    lladdr: bytes | None = None
    if lla is not None and lla != "null":
        lladdr = ll_addr_a2n(lla, 20)
    dev = None
    if d is not None:
        dev = ll_name_to_dev(net, d)
        if dev is None:
            nodev(d)
    # --- the kernel: neigh_add / neigh_delete ---
    tbl = _table(net, dst.family)
    key = dst.v6 if dst.family == AF_INET6 else dst.v4
    if dev is not None and lladdr is not None and len(lladdr) < dev.addr_len:
        raise extack_error("Invalid link address", errno.EINVAL)
    if flags & NTF_PROXY:
        if cmd == "del":  # neigh_delete(): pneigh_delete()
            if pneigh_delete(tbl, key, dev):
                raise rtnl_error(errno.ENOENT)
            return
        pn = pneigh_lookup(tbl, key, dev, creat=True)  # neigh_add(): pneigh_create()
        if pn is None:  # the table's pconstructor refused it (ndisc: no device)
            raise rtnl_error(errno.ENOBUFS)
        pn.flags = flags
        pn.permanent = bool(state & NUD_PERMANENT)
        if protocol:
            pn.protocol = protocol
        return
    if dev is None:
        raise extack_error("Device not specified", errno.EINVAL)
    if cmd == "del":
        tbl.delete(key, dev)
        return
    if flags & NTF_EXT_LEARNED:
        raise ConfigError('netstack: "extern_learn" is not supported', errno.EOPNOTSUPP)
    if lladdr is not None:
        lladdr = lladdr[: dev.addr_len]
    neigh_add(
        tbl,
        key,
        dev,
        lladdr,
        state,
        replace=cmd in ("replace", "change"),  # NLM_F_REPLACE
        create=cmd in ("add", "replace"),
        exclusive=cmd == "add",
        router=bool(flags & NTF_ROUTER),
        protocol=protocol,
    )


def ipneigh_get(net: Net, opts: Iproute2Options, args: Args) -> None:
    """``ip neigh get ADDR dev DEV``. iproute2: ipneigh_get(); kernel: neigh_get()."""
    d: str | None = None
    dev_ok = False
    dst: InetPrefix | None = None
    proxy = False
    while args:
        word = args.take()
        if word == "dev":
            d = args.value()
            dev_ok = True
        elif matches(word, "proxy"):
            value = args.value()
            if matches(value, "help"):
                raise ConfigError(IPNEIGH_USAGE)
            if dst is not None:
                duparg("address", value)
            dst = get_addr(value, opts.family)
            dev_ok = True
            proxy = True
        else:
            if word == "to":
                word = args.value()
            if matches(word, "help"):
                raise ConfigError(IPNEIGH_USAGE)
            if dst is not None:
                duparg2("to", word)
            dst = get_addr(word, opts.family)
    if not dev_ok or dst is None or dst.family == AF_UNSPEC:
        raise ConfigError("Device and address are required arguments.", errno.EINVAL)
    dev = None
    if d is not None:
        dev = ll_name_to_dev(net, d)
        if dev is None:
            raise ConfigError(f'Cannot find device "{d}"', errno.ENODEV)
    tbl = _table(net, dst.family)
    if proxy:  # pneigh_get_reply()
        pn = pneigh_lookup(tbl, dst.v6 if dst.family == AF_INET6 else dst.v4, dev)
        if pn is None:
            raise extack_error("Proxy neighbour entry not found", errno.ENOENT)
        opts.write(print_pneigh(opts, NeighFilter(), tbl, pn))
        return
    if dev is None:
        raise extack_error("Proxy neighbour entry not found", errno.ENOENT)
    n = tbl.lookup(dst.v6 if dst.family == AF_INET6 else dst.v4, dev)
    if n is None:
        raise extack_error("Neighbour entry not found", errno.ENOENT)
    opts.write(print_neigh(opts, NeighFilter(), n))


def do_ipneigh(net: Net, opts: Iproute2Options, args: Args) -> None:
    """``ip neigh …``. iproute2: ip/ipneigh.c, do_ipneigh()."""
    if not args:
        do_show_or_flush(net, opts, args, flush=False)
        return
    word = args.take()
    if matches(word, "add"):
        ipneigh_modify(net, opts, args, cmd="add")
    elif matches(word, "change") or word == "chg":
        ipneigh_modify(net, opts, args, cmd="change")
    elif matches(word, "replace"):
        ipneigh_modify(net, opts, args, cmd="replace")
    elif matches(word, "delete"):
        ipneigh_modify(net, opts, args, cmd="del")
    elif matches(word, "get"):
        ipneigh_get(net, opts, args)
    elif matches(word, "show") or matches(word, "lst") or matches(word, "list"):
        do_show_or_flush(net, opts, args, flush=False)
    elif matches(word, "flush"):
        do_show_or_flush(net, opts, args, flush=True)
    elif matches(word, "help"):
        raise ConfigError(IPNEIGH_USAGE)
    else:
        raise ConfigError(f'Command "{word}" is unknown, try "ip neigh help".', errno.EINVAL)
