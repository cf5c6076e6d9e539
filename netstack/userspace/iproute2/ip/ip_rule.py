"""``ip rule``: list, add and delete IPv4 routing policy rules.

Theory of operation: ``ip rule add|del`` parse the selector and action as
iproute2's ``iprule_modify`` does and hand them to the kernel side
(:func:`netstack.ipv4.fib_rules.fib_nl_newrule` / ``fib_nl_delrule``); the
first one splits the local table from the main one for good. ``ip rule
[list|show] [SELECTOR]`` prints the rules as ``print_rule`` does, filtered
as ``filter_nlmsg`` does. IPv4 only; the selectors and actions
:mod:`netstack.ipv4.fib_rules` does not model are refused.

iproute2: ip/iprule.c.
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Any, Final

from netstack.errors import ConfigError
from netstack.ipv4.fib_rules import (
    FIB_RULE_INVERT,
    FR_ACT_BLACKHOLE,
    FR_ACT_PROHIBIT,
    FR_ACT_TO_TBL,
    FR_ACT_UNREACHABLE,
    FibRule,
    fib_nl_delrule,
    fib_nl_newrule,
)
from netstack.sites import kernel
from netstack.userspace.iproute2.ip.ip_common import (
    Args,
    InetPrefix,
    check_ifname,
    get_prefix,
    inet_addr_match,
    invarg,
    ipv4_or_error,
    matches,
    rtnl_rttable_a2n,
    rtnl_rttable_n2a,
    strtol,
)
from netstack.userspace.iproute2.ip.ip_route import rtnl_rtntype_a2n
from netstack.wire.ipv4 import ntoa
from netstack.wire.rtnetlink import RT_TABLE_MAIN, RTN_UNICAST

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.userspace.iproute2.utils import Iproute2Options

__all__ = ["do_iprule"]

AF_INET6 = 10
_ACTION_NAMES = {
    FR_ACT_BLACKHOLE: "blackhole",
    FR_ACT_UNREACHABLE: "unreachable",
    FR_ACT_PROHIBIT: "prohibit",
}
_NOT_MODELLED = (
    "tos",
    "dsfield",
    "fwmark",
    "realms",
    "uidrange",
    "l3mdev",
    "suppress_prefixlength",
    "suppress_ifgroup",
    "sup_pl",
    "sup_group",
    "nat",
    "map-to",
    "goto",
    "nop",
    "ipproto",
    "sport",
    "dport",
    "protocol",
)


def _get_u32(arg: str) -> int | None:
    value, end, _ = strtol(arg)
    if end == 0 or end != len(arg) or not 0 <= value <= 0xFFFFFFFF:
        return None
    return value


def _prefix(arg: str) -> tuple[int, int]:
    """``get_prefix(&dst, *argv, AF_INET)``: (address, length); ``all`` is (0, 0)."""
    pfx = get_prefix(arg, 2)
    if pfx.bitlen <= 0 or not pfx.data:
        return 0, 0
    return int.from_bytes(pfx.data[:4], "big"), pfx.bitlen


def _not_modelled(word: str) -> ConfigError:
    return ConfigError(f'netstack: "ip rule {word}" is not supported', errno.EOPNOTSUPP)


def iprule_modify(net: Net, opts: Iproute2Options, args: Args, add: bool) -> None:
    """``ip rule add|del``. iproute2: ip/iprule.c, iprule_modify()."""
    if opts.family == AF_INET6:
        raise ConfigError('netstack: "ip -6 rule" is not supported', errno.EOPNOTSUPP)
    if not add and not args:
        raise ConfigError('"ip rule del" requires arguments.', errno.EINVAL)
    flags = 0
    src: tuple[int, int] | None = None
    dst: tuple[int, int] | None = None
    pref: int | None = None
    table = 0
    table_ok = False
    action = FR_ACT_TO_TBL if add else 0
    iifname = oifname = ""
    while args:
        word = args.take()
        if word == "not":
            flags |= FIB_RULE_INVERT
        elif word == "from":
            src = _prefix(args.value())
        elif word == "to":
            dst = _prefix(args.value())
        elif matches(word, "preference") or matches(word, "order") or matches(word, "priority"):
            value = args.value()
            pref = _get_u32(value)
            if pref is None:
                invarg("preference value is invalid\n", value)
        elif matches(word, "table") or word == "lookup":
            value = args.value()
            tid = rtnl_rttable_a2n(value)
            if tid is None:
                invarg("invalid table ID\n", value)
            table = tid
            table_ok = True
        elif word in ("dev", "iif"):
            value = args.value()
            if not check_ifname(value):
                invarg('"iif"/"dev" not a valid ifname', value)
            iifname = value
        elif word == "oif":
            value = args.value()
            if not check_ifname(value):
                invarg('"oif" not a valid ifname', value)
            oifname = value
        elif any(matches(word, w) for w in _NOT_MODELLED):
            raise _not_modelled(word)
        else:
            if word == "type":
                word = args.value()
            rtype = rtnl_rtntype_a2n(word)
            if rtype is None:
                invarg("Failed to parse rule type", word)
            if rtype != RTN_UNICAST and rtype not in _ACTION_NAMES:
                raise _not_modelled(word)
            action = rtype  # FR_ACT_* share the RTN_* numbers
            table_ok = True
    if not table_ok and add:
        table = RT_TABLE_MAIN
    fib = ipv4_or_error(net).fib
    if add:
        rule = FibRule(
            pref or 0,
            table,
            action,
            src=src[0] if src else 0,
            src_len=src[1] if src else 0,
            dst=dst[0] if dst else 0,
            dst_len=dst[1] if dst else 0,
            iifname=iifname,
            oifname=oifname,
            flags=flags,
        )
        fib_nl_newrule(fib, rule, has_pref=pref is not None)
    else:
        fib_nl_delrule(
            fib,
            pref=pref,
            table=table,
            action=action,
            src=src if src and src[1] else None,
            dst=dst if dst and dst[1] else None,
            iifname=iifname,
            oifname=oifname,
        )


# include/uapi/linux/fib_rules.h
FIB_RULE_IIF_DETACHED: Final = 0x00000008
FIB_RULE_OIF_DETACHED: Final = 0x00000010


@kernel("net/core/fib_rules.c", "fib_nl_fill_rule")
def _frh_flags(net: Net, r: FibRule) -> int:
    """``frh->flags`` of the dump: the rule's, and whether an iif/oif names no device.

    Kernel: net/core/fib_rules.c, fib_nl_fill_rule() (``iifindex == -1``: no
    device of that name since the rule was added or the device went).
    """
    flags = r.flags
    if r.iifname and net.dev_get_by_name(r.iifname) is None:
        flags |= FIB_RULE_IIF_DETACHED
    if r.oifname and net.dev_get_by_name(r.oifname) is None:
        flags |= FIB_RULE_OIF_DETACHED
    return flags


def _rule_json(r: FibRule, flags: int) -> dict[str, Any]:
    obj: dict[str, Any] = {"priority": r.pref}
    if r.flags & FIB_RULE_INVERT:
        obj["not"] = None
    if r.src_len:
        obj["src"] = ntoa(r.src)
        if r.src_len != 32:
            obj["srclen"] = r.src_len
    else:
        obj["src"] = "all"
    if r.dst_len:
        obj["dst"] = ntoa(r.dst)
        if r.dst_len != 32:
            obj["dstlen"] = r.dst_len
    if r.iifname:
        obj["iif"] = r.iifname
        if flags & FIB_RULE_IIF_DETACHED:
            obj["iif_detached"] = None
    if r.oifname:
        obj["oif"] = r.oifname
        if flags & FIB_RULE_OIF_DETACHED:
            obj["oif_detached"] = None
    if r.action == FR_ACT_TO_TBL:
        obj["table"] = rtnl_rttable_n2a(r.table)
    else:
        obj["action"] = _ACTION_NAMES[r.action]
    return obj


def print_rule(r: FibRule, flags: int) -> str:
    """One rule as iproute2 prints it. iproute2: ip/iprule.c, print_rule()."""
    o = [f"{r.pref}:\t"]
    if r.flags & FIB_RULE_INVERT:
        o.append("not ")
    if r.src_len:
        o.append(f"from {ntoa(r.src)}" + (f"/{r.src_len} " if r.src_len != 32 else " "))
    else:
        o.append("from all ")
    if r.dst_len:
        o.append(f"to {ntoa(r.dst)}" + (f"/{r.dst_len} " if r.dst_len != 32 else " "))
    if r.iifname:
        o.append(f"iif {r.iifname} ")
        if flags & FIB_RULE_IIF_DETACHED:
            o.append("[detached] ")
    if r.oifname:
        o.append(f"oif {r.oifname} ")
        if flags & FIB_RULE_OIF_DETACHED:
            o.append("[detached] ")
    if r.action == FR_ACT_TO_TBL:
        o.append(f"lookup {rtnl_rttable_n2a(r.table)}")
    else:
        o.append(_ACTION_NAMES[r.action])
    return "".join(o).rstrip(" ") + "\n"


def iprule_list(net: Net, opts: Iproute2Options, args: Args) -> None:
    """``ip rule [list] [SELECTOR]``. iproute2: ip/iprule.c, iprule_list_flush_or_save()."""
    opts.json_list = True
    if opts.family == AF_INET6:
        return  # no IPv6 rules are modelled: the dump is empty of them
    pref: int | None = None
    invert = False
    table = 0
    iif = oif = ""
    src: tuple[int, int] | None = None
    dst: tuple[int, int] | None = None
    while args:
        word = args.take()
        if matches(word, "preference") or matches(word, "order") or matches(word, "priority"):
            value = args.value()
            pref = _get_u32(value)
            if pref is None:
                invarg("preference value is invalid\n", value)
        elif word == "not":
            invert = True
        elif word in ("dev", "iif"):
            iif = args.value()
        elif word == "oif":
            oif = args.value()
        elif matches(word, "lookup") or matches(word, "table"):
            value = args.value()
            tid = rtnl_rttable_a2n(value)
            if tid is None:
                invarg("table id value is invalid\n", value)
            table = tid
        elif matches(word, "from") or matches(word, "src"):
            src = _prefix(args.value())
        elif word in ("tos", "fwmark", "uidrange", "l3mdev", "protocol"):
            raise _not_modelled(word)
        else:
            if matches(word, "dst") or matches(word, "to"):
                word = args.value()
            dst = _prefix(word)
    for r in ipv4_or_error(net).fib.rules:
        if pref is not None and r.pref != pref:
            continue
        if invert and not r.flags & FIB_RULE_INVERT:
            continue
        if src is not None and (
            src[1] > r.src_len or not inet_addr_match(r.src, _pfx(src), src[1])
        ):
            continue
        if dst is not None and (
            dst[1] > r.dst_len or not inet_addr_match(r.dst, _pfx(dst), dst[1])
        ):
            continue
        if iif and r.iifname != iif:
            continue
        if oif and r.oifname != oif:
            continue
        if table and (r.action != FR_ACT_TO_TBL or r.table != table):
            continue
        flags = _frh_flags(net, r)
        if opts.json:
            opts.records.append(_rule_json(r, flags))
        else:
            opts.write(print_rule(r, flags))


def _pfx(p: tuple[int, int]) -> InetPrefix:
    return InetPrefix(2, p[0].to_bytes(4, "big"), p[1])


def do_iprule(net: Net, opts: Iproute2Options, args: Args) -> None:
    """``ip rule …``. iproute2: ip/iprule.c, do_iprule()."""
    if not args:
        iprule_list(net, opts, args)
        return
    word = args.take()
    if matches(word, "list") or matches(word, "lst") or matches(word, "show"):
        iprule_list(net, opts, args)
    elif matches(word, "add"):
        iprule_modify(net, opts, args, add=True)
    elif matches(word, "delete"):
        iprule_modify(net, opts, args, add=False)
    elif matches(word, "flush") or matches(word, "save") or matches(word, "restore"):
        raise ConfigError(f'netstack: "ip rule {word}" is not supported', errno.EOPNOTSUPP)
    else:
        raise ConfigError(f'Command "{word}" is unknown, try "ip rule help".', errno.EINVAL)
