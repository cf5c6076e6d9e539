"""``tc class``: show (and add/change/replace/delete, which no netstack
discipline supports: their classes are fixed by the qdisc — prio's bands,
tbf's and netem's single class, fq_codel's flows).

iproute2: tc/tc_class.c.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from netstack.core.qdisc import TC_H_MAJ, TC_H_MIN, TC_H_ROOT
from netstack.sched.sch_api import (
    NLM_F_CREATE,
    NLM_F_EXCL,
    ClassInfo,
    tc_ctl_tclass,
    tc_dump_tclass,
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

__all__ = ["CLASS_USAGE", "do_class"]

CLASS_USAGE = (
    "Usage: tc class [ add | del | change | replace | show ] dev STRING\n"
    "       [ classid CLASSID ] [ root | parent CLASSID ]\n"
    "       [ [ QDISC_KIND ] [ help | OPTIONS ] ]\n"
    "\n"
    "       tc class show [ dev STRING ] [ root | parent CLASSID ]\n"
    "Where:\n"
    "QDISC_KIND := { prio | etc. }\n"
    "OPTIONS := ... try tc class add <desired QDISC_KIND> help"
)


def tc_class_modify(
    net: Net, kinds: TcKinds, o: Iproute2Options, delete: bool, flags: int, argv: list[str]
) -> None:
    """iproute2: tc/tc_class.c, tc_class_modify()."""
    d = ""
    k = ""
    classid = 0
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
        elif word == "classid":
            v = next_arg()
            if classid:
                duparg("classid", v)
            h = get_tc_classid(v)
            if h is None:
                invarg("invalid class ID", v)
            classid = h
        elif word == "handle":
            fail('Error: try "classid" instead of "handle"', status=255)
        elif word == "root":
            if parent:
                fail('Error: "root" is duplicate parent ID.', status=255)
            parent = TC_H_ROOT
        elif word == "parent":
            v = next_arg()
            if parent:
                duparg("parent", v)
            h = get_tc_classid(v)
            if h is None:
                invarg("invalid parent ID", v)
            parent = h
        elif matches(word, "estimator"):
            fail('netstack: "tc class … estimator" is not supported')
        elif matches(word, "help"):
            pass  # usage() on stderr, and tc carries on
        else:
            k = word[:15]
            i += 1
            break
        i += 1
    rest = argv[i:]
    if k:
        q = kinds.get(k)
        if not q.has_parse_copt:
            fail(f'Error: Qdisc "{k}" is classless.')
    elif rest:
        fail(f'Garbage instead of arguments "{rest[0]} ...". Try "tc class help".', status=255)
    ifindex = 0
    if d:
        dev = net.dev_get_by_name(d)
        if dev is None:
            nodev(d)
        ifindex = dev.ifindex
    tc_ctl_tclass(net, ifindex, parent, classid, delete=delete, flags=flags)


def print_class(
    net: Net,
    kinds: TcKinds,
    o: Iproute2Options,
    info: ClassInfo,
    filter_ifindex: int,
    filter_qdisc: int,
) -> str:
    """iproute2: tc/tc_class.c, print_class()."""
    dump = info.dump
    handle = ""
    if dump.classid:
        handle = print_tc_classid(TC_H_MIN(dump.classid) if filter_qdisc else dump.classid)
    parts = [f"class {info.kind} ", f"{handle} "]
    if not filter_ifindex:
        dev = net.dev_get_by_index(info.ifindex)
        parts.append(f"dev {dev.name if dev is not None else info.ifindex} ")
    if dump.parent == TC_H_ROOT:
        parts.append("root ")
    else:
        parent = TC_H_MIN(dump.parent) if filter_qdisc else dump.parent
        parts.append(f"parent {print_tc_classid(parent)} ")
    if dump.leaf:
        parts.append(f"leaf {dump.leaf >> 16:x}: ")
    util = kinds.get(info.kind)
    if dump.options is not None:
        parts.append(util.print_copt(dump.options, o))
    parts.append("\n")
    if o.stats:
        st = info.stats
        if st is not None:
            parts.append(
                print_tcstats(st, " ", o.iec, o.sl, has_basic=st.has_basic, has_queue=st.has_queue)
            )
        parts.append("\n")
        if st is not None and st.xstats is not None:
            x = util.print_xstats(st.xstats, o)
            if x is not None:
                parts.append(x)
                parts.append("\n")
    return "".join(parts)


def tc_class_list(net: Net, kinds: TcKinds, o: Iproute2Options, argv: list[str]) -> None:
    """iproute2: tc/tc_class.c, tc_class_list()."""
    d = ""
    filter_qdisc = 0
    filter_classid = 0
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
            d = v[:15]
        elif word == "qdisc":
            v = next_arg()
            if filter_qdisc:
                duparg("qdisc", v)
            h = get_qdisc_handle(v)
            if h is None:
                invarg("invalid qdisc ID", v)
            filter_qdisc = h
        elif word == "classid":
            v = next_arg()
            if filter_classid:
                duparg("classid", v)
            h = get_tc_classid(v)
            if h is None:
                invarg("invalid class ID", v)
            filter_classid = h
        elif word == "root":
            if parent:
                fail('Error: "root" is duplicate parent ID')
            parent = TC_H_ROOT
        elif word == "parent":
            if parent:
                duparg("parent", word)
            v = next_arg()
            h = get_tc_classid(v)
            if h is None:
                invarg("invalid parent ID", v)
            parent = h
        elif matches(word, "help"):
            pass  # usage() on stderr, and tc carries on
        else:
            fail(f'What is "{word}"? Try "tc class help".')
        i += 1
    filter_ifindex = 0
    if d:
        dev = net.dev_get_by_name(d)
        if dev is None:
            nodev(d)
        filter_ifindex = dev.ifindex
    if not filter_ifindex:
        return  # the kernel dumps the classes of one device only
    dump_parent = parent if parent != TC_H_ROOT else 0
    for info in tc_dump_tclass(net, filter_ifindex, dump_parent):
        if filter_qdisc and TC_H_MAJ(info.dump.classid ^ filter_qdisc):
            continue
        if filter_classid and info.dump.classid != filter_classid:
            continue
        o.write(print_class(net, kinds, o, info, filter_ifindex, filter_qdisc))


def do_class(net: Net, kinds: TcKinds, o: Iproute2Options, argv: list[str]) -> None:
    """iproute2: tc/tc_class.c, do_class()."""
    if not argv:
        tc_class_list(net, kinds, o, [])
        return
    cmd, rest = argv[0], argv[1:]
    if matches(cmd, "add"):
        tc_class_modify(net, kinds, o, False, NLM_F_EXCL | NLM_F_CREATE, rest)
    elif matches(cmd, "change"):
        tc_class_modify(net, kinds, o, False, 0, rest)
    elif matches(cmd, "replace"):
        tc_class_modify(net, kinds, o, False, NLM_F_CREATE, rest)
    elif matches(cmd, "delete"):
        tc_class_modify(net, kinds, o, True, 0, rest)
    elif matches(cmd, "list") or matches(cmd, "show") or matches(cmd, "lst"):
        tc_class_list(net, kinds, o, rest)
    elif matches(cmd, "help"):
        fail(CLASS_USAGE)
    else:
        fail(f'Command "{cmd}" is unknown, try "tc class help".')
