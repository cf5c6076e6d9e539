"""``tc qdisc``: add, change, replace, link, delete, show.

Theory of operation: :func:`tc_qdisc_modify` reads ``dev``, ``handle``,
``root``/``parent`` and the kind exactly as tc does (the kind ends the
generic part; the rest goes to the kind's parser), then hands the request to
the kernel side (:mod:`netstack.sched.sch_api`) with the netlink flags of the
command: add = CREATE|EXCL, replace = CREATE|REPLACE, change = none,
link = REPLACE. :func:`print_qdisc` formats one qdisc of a dump as tc does,
with ``-s`` counters and the discipline's extra statistics.

iproute2: tc/tc_qdisc.c.
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING

from netstack.core.qdisc import TC_H_INGRESS, TC_H_MAKE, TC_H_ROOT
from netstack.sched.sch_api import (
    NLM_F_CREATE,
    NLM_F_EXCL,
    NLM_F_REPLACE,
    QdiscInfo,
    tc_del_qdisc,
    tc_dump_qdisc,
    tc_modify_qdisc,
)
from netstack.userspace.iproute2.ip.ip_common import check_ifname, duparg, invarg, matches, nodev
from netstack.userspace.iproute2.tc.tc_common import fail
from netstack.userspace.iproute2.tc.tc_util import (
    get_qdisc_handle,
    get_tc_classid,
    print_tc_classid,
    print_tcstats,
)
from netstack.userspace.iproute2.utils import Iproute2Options

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.userspace.iproute2.tc.tc import TcKinds

__all__ = ["QDISC_USAGE", "do_qdisc", "print_qdisc"]

QDISC_USAGE = (
    "Usage: tc qdisc [ add | del | replace | change | show ] dev STRING\n"
    "       [ handle QHANDLE ] [ root | ingress | clsact | parent CLASSID ]\n"
    "       [ estimator INTERVAL TIME_CONSTANT ]\n"
    "       [ stab [ help | STAB_OPTIONS] ]\n"
    "       [ ingress_block BLOCK_INDEX ] [ egress_block BLOCK_INDEX ]\n"
    "       [ [ QDISC_KIND ] [ help | OPTIONS ] ]\n"
    "\n"
    "       tc qdisc { show | list } [ dev STRING ] [ QDISC_ID ] [ invisible ]\n"
    "Where:\n"
    "QDISC_KIND := { [p|b]fifo | tbf | prio | red | etc. }\n"
    "OPTIONS := ... try tc qdisc add <desired QDISC_KIND> help\n"
    "STAB_OPTIONS := ... try tc qdisc add stab help\n"
    "QDISC_ID := { root | ingress | handle QHANDLE | parent CLASSID }"
)

RTM_NEWQDISC = 36
RTM_DELQDISC = 37
FILTER_NAMESZ = 16


def _not_supported(what: str) -> None:
    fail(f'netstack: "tc qdisc … {what}" is not supported', err=errno.EOPNOTSUPP)


def tc_qdisc_modify(
    net: Net, kinds: TcKinds, o: Iproute2Options, cmd: int, flags: int, argv: list[str]
) -> None:
    """iproute2: tc/tc_qdisc.c, tc_qdisc_modify()."""
    d = ""
    k = ""
    handle = 0
    parent = 0
    i = 0

    def next_arg() -> str:
        nonlocal i
        i += 1
        if i >= len(argv):
            fail('Command line is not complete. Try option "help"')
        return argv[i]

    while i < len(argv):
        word = argv[i]
        if word == "dev":
            v = next_arg()
            if d:
                duparg("dev", v)
            if not check_ifname(v):
                invarg("not a valid ifname", v)
            d = v
        elif word == "handle":
            if handle:
                duparg("handle", word)
            v = next_arg()
            h = get_qdisc_handle(v)
            if h is None:
                invarg("invalid qdisc ID", v)
            handle = h
        elif word == "root":
            if parent:
                fail('Error: "root" is duplicate parent ID', status=255)
            parent = TC_H_ROOT
        elif word == "clsact":
            if parent:
                fail('Error: "clsact" is a duplicate parent ID', status=255)
            parent = TC_H_INGRESS
            k = "clsact"
            handle = TC_H_MAKE(TC_H_INGRESS, 0)
            i += 1
            break
        elif word == "ingress":
            if parent:
                fail('Error: "ingress" is a duplicate parent ID', status=255)
            parent = TC_H_INGRESS
            k = "ingress"
            handle = TC_H_MAKE(TC_H_INGRESS, 0)
            i += 1
            break
        elif word == "parent":
            v = next_arg()
            if parent:
                duparg("parent", v)
            h = get_tc_classid(v)
            if h is None:
                invarg("invalid parent ID", v)
            parent = h
        elif matches(word, "estimator"):
            _not_supported("estimator")
        elif matches(word, "stab"):
            _not_supported("stab")
        elif matches(word, "ingress_block") or matches(word, "egress_block"):
            _not_supported(word)
        elif matches(word, "help"):
            pass  # usage() on stderr, and tc carries on
        else:
            k = word[: FILTER_NAMESZ - 1]
            i += 1
            break
        i += 1
    rest = argv[i:]
    options = None
    if k:
        q = kinds.get(k)
        if q.has_parse_qopt:
            options = q.parse_qopt(rest, d)
        elif rest:
            fail(f"qdisc '{k}' does not support option parsing")
    elif rest:
        if matches(rest[0], "help"):
            fail(QDISC_USAGE, f'Garbage instead of arguments "{rest[0]} ...". Try "tc qdisc help".')
        fail(f'Garbage instead of arguments "{rest[0]} ...". Try "tc qdisc help".')
    ifindex = 0
    if d:
        dev = net.dev_get_by_name(d)
        if dev is None:
            nodev(d)
        ifindex = dev.ifindex
    kind = k or None
    if cmd == RTM_DELQDISC:
        tc_del_qdisc(net, ifindex, parent, handle, kind)
    else:
        tc_modify_qdisc(net, ifindex, parent, handle, flags, kind, options)


def print_qdisc(
    net: Net, kinds: TcKinds, o: Iproute2Options, info: QdiscInfo, filter_ifindex: int
) -> str:
    """One qdisc of a dump. iproute2: tc/tc_qdisc.c, print_qdisc()."""
    parts = [f"qdisc {info.kind} {info.handle >> 16:x}:"]
    if o.raw:
        parts.append(f"[{info.handle:08x}]")
    parts.append(" ")
    if not filter_ifindex:
        dev = net.dev_get_by_index(info.ifindex)
        parts.append(f"dev {dev.name if dev is not None else info.ifindex} ")
    if info.parent == TC_H_ROOT:
        parts.append("root ")
    elif info.parent:
        parts.append(f"parent {print_tc_classid(info.parent)} ")
    if info.refcnt != 1:
        parts.append(f"refcnt {info.refcnt} ")
    util = kinds.get("prio" if info.kind == "pfifo_fast" else info.kind)
    if info.options is not None:
        parts.append(util.print_qopt(info.options, o))
    parts.append(o.sl)
    if o.stats:
        parts.append(print_tcstats(info.stats, " ", o.iec, o.sl))
        parts.append(o.sl)
        if info.xstats is not None:
            x = util.print_xstats(info.xstats, o)
            if x is not None:
                parts.append(x)
                parts.append(o.sl)
    return "".join(parts)


def tc_qdisc_list(net: Net, kinds: TcKinds, o: Iproute2Options, argv: list[str]) -> None:
    """iproute2: tc/tc_qdisc.c, tc_qdisc_list()."""
    d = ""
    dump_invisible = False
    filter_parent = 0
    filter_handle = 0
    seen_ingress = False
    i = 0

    def next_arg() -> str:
        nonlocal i
        i += 1
        if i >= len(argv):
            fail('Command line is not complete. Try option "help"')
        return argv[i]

    while i < len(argv):
        word = argv[i]
        if word == "dev":
            d = next_arg()[:15]
        elif word in ("ingress", "clsact"):
            if seen_ingress or filter_parent:
                fail("Duplicate parent ID", QDISC_USAGE)
            seen_ingress = True
        elif word == "parent":
            v = next_arg()
            h = get_tc_classid(v)
            if h is None:
                invarg("invalid parent ID", v)
            filter_parent = h
        elif word == "handle":
            v = next_arg()
            h = get_qdisc_handle(v)
            if h is None:
                invarg("invalid handle ID", v)
            filter_handle = h
        elif matches(word, "help"):
            pass  # usage() on stderr, and tc carries on
        elif word == "invisible":
            dump_invisible = True
        else:
            fail(f'What is "{word}"? Try "tc qdisc help".')
        i += 1
    filter_ifindex = 0
    if d:
        dev = net.dev_get_by_name(d)
        if dev is None:
            nodev(d)
        filter_ifindex = dev.ifindex
    for info in tc_dump_qdisc(net, dump_invisible=dump_invisible):
        if filter_ifindex and info.ifindex != filter_ifindex:
            continue
        if filter_handle and info.handle != filter_handle:
            continue
        if filter_parent and info.parent != filter_parent:
            continue
        o.write(print_qdisc(net, kinds, o, info, filter_ifindex))


def do_qdisc(net: Net, kinds: TcKinds, o: Iproute2Options, argv: list[str]) -> None:
    """iproute2: tc/tc_qdisc.c, do_qdisc()."""
    if not argv:
        tc_qdisc_list(net, kinds, o, [])
        return
    cmd, rest = argv[0], argv[1:]
    if matches(cmd, "add"):
        tc_qdisc_modify(net, kinds, o, RTM_NEWQDISC, NLM_F_EXCL | NLM_F_CREATE, rest)
    elif matches(cmd, "change"):
        tc_qdisc_modify(net, kinds, o, RTM_NEWQDISC, 0, rest)
    elif matches(cmd, "replace"):
        tc_qdisc_modify(net, kinds, o, RTM_NEWQDISC, NLM_F_CREATE | NLM_F_REPLACE, rest)
    elif matches(cmd, "link"):
        tc_qdisc_modify(net, kinds, o, RTM_NEWQDISC, NLM_F_REPLACE, rest)
    elif matches(cmd, "delete"):
        tc_qdisc_modify(net, kinds, o, RTM_DELQDISC, 0, rest)
    elif matches(cmd, "list") or matches(cmd, "show") or matches(cmd, "lst"):
        tc_qdisc_list(net, kinds, o, rest)
    elif matches(cmd, "help"):
        fail(QDISC_USAGE)
    else:
        fail(f'Command "{cmd}" is unknown, try "tc qdisc help".')
