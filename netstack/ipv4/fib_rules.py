"""IPv4 routing policy rules (``ip rule``): the rule list and its walk.

Theory of operation: a Net starts with the three default rules — ``0: from
all lookup local``, ``32766: from all lookup main``, ``32767: from all lookup
default`` — and while nobody adds or deletes a rule the kernel does not walk
them at all: the local table is merged into the main one and ``fib_lookup``
is one match there (:meth:`netstack.ipv4.fib.Fib.lookup`). Adding or
deleting any rule (:func:`fib_nl_newrule`, :func:`fib_nl_delrule`) first
splits the tables (``fib4_rule_configure`` / ``fib4_rule_delete`` →
``fib_unmerge``) and sets ``fib_has_custom_rules`` for good: deleting the
rule again does not merge them back. From then on ``Fib.fib_rules_lookup``
walks the rules in preference order: a rule whose selectors (``from``,
``to``, ``iif``, ``oif``, ``not``) match either looks in its table, where a
miss or a ``throw`` route goes on to the next rule, or answers
``unreachable``, ``prohibit`` or ``blackhole`` itself.

Not modelled: ``fwmark``, ``tos``/``dsfield``, ``uidrange``, ``ipproto``,
ports, ``goto``/``nop``, ``suppress_*``, ``l3mdev``, realms.

Kernel: net/core/fib_rules.c, net/ipv4/fib_rules.c.
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Final

from netstack.errors import ConfigError
from netstack.sites import kernel
from netstack.wire.ipv4 import inet_make_mask
from netstack.wire.rtnetlink import RT_TABLE_DEFAULT, RT_TABLE_LOCAL, RT_TABLE_MAIN

if TYPE_CHECKING:
    from netstack.ipv4.fib import Fib, FibResult

__all__ = [
    "FIB_RULE_INVERT",
    "FR_ACT_BLACKHOLE",
    "FR_ACT_PROHIBIT",
    "FR_ACT_TO_TBL",
    "FR_ACT_UNREACHABLE",
    "FibRule",
    "fib_default_rules",
    "fib_nl_delrule",
    "fib_nl_newrule",
    "fib_rule_match",
]

# include/uapi/linux/fib_rules.h
FR_ACT_TO_TBL: Final = 1
FR_ACT_BLACKHOLE: Final = 6
FR_ACT_UNREACHABLE: Final = 7
FR_ACT_PROHIBIT: Final = 8
FIB_RULE_INVERT: Final = 0x00000002


@kernel("net/ipv4/fib_rules.c")
class FibRule:
    """One rule: selectors and an action.

    *src*/*dst* are kept as given (``from 1.2.3.4/8`` prints so), compared under
    their masks.

    Kernel: net/ipv4/fib_rules.c, struct fib4_rule (with struct fib_rule).
    """

    __slots__ = (
        "action",
        "dst",
        "dst_len",
        "dstmask",
        "flags",
        "iifname",
        "oifname",
        "pref",
        "reject",
        "src",
        "src_len",
        "srcmask",
        "table",
    )

    def __init__(
        self,
        pref: int,
        table: int,
        action: int = FR_ACT_TO_TBL,
        *,
        src: int = 0,
        src_len: int = 0,
        dst: int = 0,
        dst_len: int = 0,
        iifname: str = "",
        oifname: str = "",
        flags: int = 0,
    ) -> None:
        self.pref = pref
        self.table = table
        self.action = action
        self.src = src
        self.src_len = src_len
        self.srcmask = inet_make_mask(src_len)
        self.dst = dst
        self.dst_len = dst_len
        self.dstmask = inet_make_mask(dst_len)
        self.iifname = iifname
        self.oifname = oifname
        self.flags = flags
        self.reject: FibResult | None = None  # prohibit / blackhole: the answer, built once

    @kernel("net/core/fib_rules.c", "rule_exists", "net/ipv4/fib_rules.c", "fib4_rule_compare")
    def same(self, other: FibRule) -> bool:
        """Would adding *other* duplicate this rule?

        The fields the kernel compares, not all of them: ``not`` (the flags)
        is never compared, ``from``/``to`` only when *other* gives a prefix
        (``from all`` matches any ``from``). Kernel: net/core/fib_rules.c,
        rule_exists() with net/ipv4/fib_rules.c, fib4_rule_compare().
        """
        return (
            self.pref == other.pref
            and self.action == other.action
            and self.table == other.table
            and self.iifname == other.iifname
            and self.oifname == other.oifname
            and not (other.src_len and (self.src_len, self.src) != (other.src_len, other.src))
            and not (other.dst_len and (self.dst_len, self.dst) != (other.dst_len, other.dst))
        )


@kernel("net/ipv4/fib_rules.c", "fib_default_rules_init")
def fib_default_rules() -> list[FibRule]:
    """Kernel: net/ipv4/fib_rules.c, fib_default_rules_init()."""
    return [
        FibRule(0, RT_TABLE_LOCAL),
        FibRule(0x7FFE, RT_TABLE_MAIN),
        FibRule(0x7FFF, RT_TABLE_DEFAULT),
    ]


@kernel("net/core/fib_rules.c", "fib_default_rule_pref")
def fib_default_rule_pref(rules: list[FibRule]) -> int:
    """The preference of a rule added without one: one below the second rule's.

    Kernel: net/core/fib_rules.c, fib_default_rule_pref().
    """
    if len(rules) > 1 and rules[1].pref:
        return rules[1].pref - 1
    return 0


@kernel("net/core/fib_rules.c", "fib_nl_newrule", "net/ipv4/fib_rules.c", "fib4_rule_configure")
def fib_nl_newrule(fib: Fib, rule: FibRule, *, has_pref: bool) -> None:
    """``ip rule add``: split local from main, then insert after its preference peers.

    Kernel: net/core/fib_rules.c, fib_nl_newrule() (NLM_F_EXCL: ``File
    exists`` for an identical rule) with net/ipv4/fib_rules.c,
    fib4_rule_configure().
    """
    rules = fib.rules
    if not has_pref:
        rule.pref = fib_default_rule_pref(rules)
    if any(r.same(rule) for r in rules):
        raise ConfigError("RTNETLINK answers: File exists", errno.EEXIST)
    fib.fib_unmerge()  # "split local/main if they are not already split"
    fib.fib_has_custom_rules = True
    i = 0
    while i < len(rules) and rules[i].pref <= rule.pref:
        i += 1
    rules.insert(i, rule)
    fib.changed()  # fib4_rule_flush_cache()


@kernel(
    "net/core/fib_rules.c",
    "fib_nl_delrule",
    "rule_find",
    "net/ipv4/fib_rules.c",
    "fib4_rule_delete",
)
def fib_nl_delrule(
    fib: Fib,
    *,
    pref: int | None,
    table: int,
    action: int,
    src: tuple[int, int] | None,
    dst: tuple[int, int] | None,
    iifname: str,
    oifname: str,
) -> FibRule:
    """``ip rule del``: remove the first rule matching every selector given.

    ``not`` is no selector here: the kernel's rule_find() never compares the
    flags, so ``del … not iif X`` deletes ``iif X`` too.

    Deleting any rule, a default one too, splits the tables and counts as a
    custom rule: they are not merged again. Kernel: net/core/fib_rules.c,
    fib_nl_delrule() (rule_find()) with net/ipv4/fib_rules.c,
    fib4_rule_delete().
    """
    for r in fib.rules:
        if pref is not None and r.pref != pref:
            continue
        if table and r.table != table:
            continue
        if action and r.action != action:
            continue
        if src is not None and (r.src, r.src_len) != src:
            continue
        if dst is not None and (r.dst, r.dst_len) != dst:
            continue
        if iifname and r.iifname != iifname:
            continue
        if oifname and r.oifname != oifname:
            continue
        fib.fib_unmerge()
        fib.fib_has_custom_rules = True
        fib.rules.remove(r)
        fib.changed()
        return r
    raise ConfigError("RTNETLINK answers: No such file or directory", errno.ENOENT)


@kernel("net/core/fib_rules.c", "fib_rule_match", "net/ipv4/fib_rules.c", "fib4_rule_match")
def fib_rule_match(fib: Fib, rule: FibRule, daddr: int, saddr: int, iif: int, oif: int) -> bool:
    """Do the rule's selectors take this flow?

    Kernel: net/core/fib_rules.c, fib_rule_match() with net/ipv4/fib_rules.c,
    fib4_rule_match().
    """
    ok = True
    if rule.iifname:
        dev = fib.ipv4.net.dev_get_by_index(iif) if iif else None
        ok = dev is not None and dev.name == rule.iifname
    if ok and rule.oifname:
        dev = fib.ipv4.net.dev_get_by_index(oif) if oif else None
        ok = dev is not None and dev.name == rule.oifname
    if ok:
        ok = not ((saddr ^ rule.src) & rule.srcmask or (daddr ^ rule.dst) & rule.dstmask)
    return not ok if rule.flags & FIB_RULE_INVERT else ok
