"""The Forwarding Information Base: route tables, longest-prefix match, rules.

Theory of operation: a :class:`FibTable` keeps one dict per prefix length,
mapping the masked prefix to the routes (``FibAlias``) for it, sorted by
table, TOS and metric; a lookup walks the prefix lengths present, longest
first, and returns the first usable route (its nexthop not dead, its scope
acceptable, its output interface matching when one is required).

The rules of a fresh host are table ``local`` (255), then ``main`` (254),
then ``default`` (253), and as long as nobody adds or deletes one the kernel
does not walk them: the local table is an alias of the main table, whose
buckets hold both tables' routes, and ``Fib.lookup`` is one longest-prefix
match there, then the default table. So a ``local`` route is found only if
no main route is more specific, which differs from "local, then main" (a
``local 10.0.0.0/8`` route loses 10.1.2.3 to a main ``10.1.0.0/16``, a
``throw`` in local ends the lookup). The first ``ip rule add`` or ``del``
splits the tables for good (``Fib.fib_unmerge``); lookups then walk the rules.
Dumps, deletes and flushes see only a table's own routes.

Routes appear from addresses (``fib_add_ifaddr``: ``local`` in the local
table, the connected prefix and ``broadcast`` once the device is up) and from
``ip route``. When a device goes down its connected and static routes are
removed and its local routes stay (``fib_sync_down_dev``); carrier loss marks
nexthops ``linkdown``.

Kernel: net/ipv4/fib_frontend.c, fib_trie.c, fib_semantics.c, fib_rules.c.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

from netstack.core.netdevice import IFF_LOOPBACK
from netstack.core.prefix_table import PrefixBuckets
from netstack.errors import ConfigError
from netstack.ipv4.devinet import inet_ifa_byprefix
from netstack.ipv4.fib_rules import (
    FR_ACT_PROHIBIT,
    FR_ACT_TO_TBL,
    FR_ACT_UNREACHABLE,
    FibRule,
    fib_default_rules,
    fib_rule_match,
)
from netstack.sites import TIMED, kernel, spend
from netstack.wire.ipv4 import (
    INADDR_BROADCAST,
    inet_make_mask,
    ipv4_is_lbcast,
    ipv4_is_multicast,
    ipv4_is_zeronet,
)
from netstack.wire.rtnetlink import (
    IFA_F_NOPREFIXROUTE,
    IFA_F_SECONDARY,
    NLM_F_APPEND,
    NLM_F_CREATE,
    NLM_F_EXCL,
    NLM_F_REPLACE,
    RT_SCOPE_HOST,
    RT_SCOPE_LINK,
    RT_SCOPE_NOWHERE,
    RT_SCOPE_UNIVERSE,
    RT_TABLE_DEFAULT,
    RT_TABLE_LOCAL,
    RT_TABLE_MAIN,
    RTN_ANYCAST,
    RTN_BLACKHOLE,
    RTN_BROADCAST,
    RTN_LOCAL,
    RTN_MULTICAST,
    RTN_PROHIBIT,
    RTN_THROW,
    RTN_UNICAST,
    RTN_UNREACHABLE,
    RTN_XRESOLVE,
    RTNH_F_DEAD,
    RTNH_F_LINKDOWN,
    RTNH_F_ONLINK,
    RTPROT_KERNEL,
)

if TYPE_CHECKING:
    from netstack.core.netdevice import NetDevice
    from netstack.ipv4.devinet import InIfaddr
    from netstack.ipv4.netns import Ipv4
    from netstack.ipv4.route import Rtable

__all__ = ["Fib", "FibAlias", "FibInfo", "FibNh", "FibResult", "FibTable", "RouteConfig"]

MASKS: Final = tuple(inet_make_mask(n) for n in range(33))
# The same masks as signed 32-bit ints, for the lookup's ``daddr & mask``: an address
# (0 ≤ daddr < 2**32) masked with either gives the same prefix, but CPython 3.11
# fast-paths ``&`` of two ints below 2**30 in magnitude, which /3 and longer masks
# are written so (-256 for /24) and 0xFFFFFF00 is not
_LOOKUP_MASKS: Final = tuple(m - (1 << 32) if m >> 31 else m for m in MASKS)

# the narrowest scope each route type allows (kernel: fib_props[].scope)
FIB_PROPS_SCOPE: Final = (
    RT_SCOPE_UNIVERSE,
    RT_SCOPE_UNIVERSE,
    RT_SCOPE_HOST,
    RT_SCOPE_LINK,
    RT_SCOPE_LINK,
    RT_SCOPE_UNIVERSE,
    RT_SCOPE_UNIVERSE,
    RT_SCOPE_UNIVERSE,
    RT_SCOPE_UNIVERSE,
    RT_SCOPE_UNIVERSE,
    RT_SCOPE_NOWHERE,
    RT_SCOPE_NOWHERE,
)

# errors a lookup reports for reject route types (kernel: fib_props[].error)
FIB_PROPS_ERROR: Final = {
    RTN_UNREACHABLE: errno.EHOSTUNREACH,
    RTN_PROHIBIT: errno.EACCES,
    RTN_BLACKHOLE: errno.EINVAL,
    RTN_THROW: errno.EAGAIN,
}


@kernel("include/net/ip_fib.h")
class FibNhException:
    """A per-destination exception on a nexthop: a learnt PMTU or redirect gateway.

    Kernel: include/net/ip_fib.h, struct fib_nh_exception.
    """

    __slots__ = ("bucket", "daddr", "expires", "genid", "gw", "mtu_locked", "pmtu", "rth", "stamp")

    def __init__(self, daddr: int, bucket: int = 0) -> None:
        self.daddr = daddr
        self.bucket = bucket  # fnhe_hashfun(daddr): its chain in nhc_exceptions
        self.pmtu = 0
        self.mtu_locked = False
        self.gw = 0
        self.expires = 0
        self.genid = 0
        self.stamp = 0  # fnhe_stamp: jiffies of the last update (fnhe_oldest)
        self.rth: Rtable | None = None


class FibNh:
    """A nexthop: device and optional gateway (kernel: ``struct fib_nh``).

    Its exceptions live in ``exceptions`` (by destination, for the lookup) and
    in ``fnhe_hash`` (the kernel's ``nhc_exceptions`` buckets of
    ``FNHE_HASH_SIZE`` chains, newest first), which bound them: a chain longer
    than ``FNHE_RECLAIM_DEPTH`` (plus a random part) loses its oldest entry.
    """

    __slots__ = (
        "dev",
        "exceptions",
        "flags",
        "fnhe_hash",
        "gw",
        "rth_input",
        "rth_output",
        "scope",
        "weight",
    )

    def __init__(
        self, dev: NetDevice, gw: int = 0, scope: int = RT_SCOPE_UNIVERSE, flags: int = 0
    ) -> None:
        self.dev = dev
        self.gw = gw
        self.scope = scope
        self.flags = flags
        self.weight = 1
        # cached output rtables, one per CPU (nhc_pcpu_rth_output): CPUs sending
        # to the same nexthop do not share one dst refcount
        self.rth_output: dict[int, Rtable] = {}
        self.rth_input: Rtable | None = None  # cached input rtable (nhc_rth_input)
        self.exceptions: dict[int, FibNhException] = {}
        self.fnhe_hash: dict[int, list[FibNhException]] = {}

    @kernel("fnhe_flush_routes")
    def fnhe_flush(self) -> None:
        """Forget every exception (their cached routes die). Kernel: fnhe_flush_routes()."""
        for fnhe in self.exceptions.values():
            rt = fnhe.rth
            if rt is not None:
                rt.obsolete = 2  # DST_OBSOLETE_DEAD
                fnhe.rth = None
        self.exceptions.clear()
        self.fnhe_hash.clear()


@kernel("net/ipv4/fib_semantics.c", "fib_nhc_update_mtu")
def fib_nhc_update_mtu(nh: FibNh, new: int, orig: int) -> None:
    """Update the PMTU of *nh*'s exceptions after its device's MTU went *orig* -> *new*.

    An exception above the new MTU comes down to it; one the old MTU limited
    (``pmtu == orig``) follows it up. A locked exception (below ``min_pmtu``)
    is left alone unless the new MTU is at or below it, then unlocked.

    Kernel: net/ipv4/fib_semantics.c, fib_nhc_update_mtu().
    """
    for chain in nh.fnhe_hash.values():
        for fnhe in chain:
            if fnhe.mtu_locked:
                if new <= fnhe.pmtu:
                    fnhe.pmtu = new
                    fnhe.mtu_locked = False
            elif new < fnhe.pmtu or orig == fnhe.pmtu:
                fnhe.pmtu = new


class FibInfo:
    """Route attributes shared by aliases (kernel: ``struct fib_info``)."""

    __slots__ = (
        "advmss",
        "dead",
        "fastopen_no_cookie",
        "mtu",
        "mtu_lock",
        "nh",
        "prefsrc",
        "priority",
        "protocol",
        "scope",
    )

    def __init__(
        self,
        nh: FibNh | None,
        *,
        protocol: int,
        scope: int,
        priority: int,
        prefsrc: int = 0,
        mtu: int = 0,
        mtu_lock: bool = False,
    ) -> None:
        self.nh = nh
        self.protocol = protocol
        self.scope = scope
        self.priority = priority
        self.prefsrc = prefsrc
        self.mtu = mtu
        self.mtu_lock = mtu_lock
        self.advmss = 0
        self.fastopen_no_cookie = 0  # RTAX_FASTOPEN_NO_COOKIE
        self.dead = False


class FibAlias:
    """One route entry: prefix, TOS, type and its FibInfo (kernel: ``struct fib_alias``)."""

    __slots__ = ("dst", "dst_len", "fi", "res", "table", "tos", "type")

    def __init__(
        self, table: int, dst: int, dst_len: int, rtype: int, fi: FibInfo, tos: int = 0
    ) -> None:
        self.table = table
        self.dst = dst
        self.dst_len = dst_len
        self.type = rtype
        self.fi = fi
        self.tos = tos
        self.res: FibResult | None = None  # the lookup result, built once


class FibResult:
    """What a lookup found (kernel: ``struct fib_result``)."""

    __slots__ = ("fa", "fi", "nh", "prefix", "prefixlen", "scope", "table", "type")

    def __init__(self, fa: FibAlias, table: int) -> None:
        self.fa = fa
        self.fi = fa.fi
        self.nh = fa.fi.nh
        self.prefix = fa.dst
        self.prefixlen = fa.dst_len
        self.type = fa.type
        self.scope = fa.fi.scope
        #: the table looked in (``res->table``): main for a local route found
        #: through the merged main table, as ``ip route get`` shows
        self.table = table

    def prefsrc(self) -> int:
        return self.fi.prefsrc


class RouteConfig:
    """A route request as rtnetlink carries it (kernel: ``struct fib_config``)."""

    def __init__(
        self,
        dst: int,
        dst_len: int,
        *,
        table: int = RT_TABLE_MAIN,
        rtype: int = RTN_UNICAST,
        protocol: int = 3,
        scope: int | None = None,
        gw: int = 0,
        dev: NetDevice | None = None,
        priority: int = 0,
        prefsrc: int = 0,
        tos: int = 0,
        onlink: bool = False,
        mtu: int = 0,
        mtu_lock: bool = False,
        nlflags: int = NLM_F_CREATE | NLM_F_EXCL,
    ) -> None:
        self.dst = dst
        self.dst_len = dst_len
        self.table = table
        self.type = rtype
        self.protocol = protocol
        if scope is None:
            if rtype == RTN_LOCAL:
                scope = RT_SCOPE_HOST
            elif rtype in (RTN_BROADCAST, RTN_MULTICAST) or (rtype == RTN_UNICAST and not gw):
                scope = RT_SCOPE_LINK
            else:
                scope = RT_SCOPE_UNIVERSE
        self.scope = scope
        self.gw = gw
        self.dev = dev
        self.priority = priority
        self.prefsrc = prefsrc
        self.tos = tos
        self.onlink = onlink
        self.mtu = mtu
        self.mtu_lock = mtu_lock
        self.fastopen_no_cookie = 0  # RTAX_FASTOPEN_NO_COOKIE
        self.nlflags = nlflags


class FibTable(PrefixBuckets[FibAlias]):
    """One routing table (kernel: ``struct fib_table`` over an LC-trie; PrefixBuckets here).

    Its routes live in ``tb_data``: its own buckets, or, for the local table
    while there are no custom rules, the main table's (the kernel's
    ``fib_trie_table(RT_TABLE_LOCAL, main)``: ``tb_data`` points at the main
    table's trie). A bucket then holds the aliases of both tables for one
    prefix, each tagged with its table (``fa_tb_id``), the local ones first
    (``fib_insert_alias``: table id descending); a lookup sees both, a dump,
    a delete or a flush only the table's own.

    Twin: netstack.ipv6.route.Fib6Table.
    """

    def __init__(self, table_id: int, alias: FibTable | None = None) -> None:
        super().__init__()
        self.id = table_id
        #: where the routes are: this table, or the table it is an alias of
        self.tb_data: FibTable = self if alias is None else alias.tb_data
        #: (mask, buckets) of each prefix length in use, longest first: what a
        #: lookup walks, joined once per change of ``lens`` rather than per lookup
        #: (the masks signed: see _LOOKUP_MASKS)
        self.levels: list[tuple[int, dict[int, list[FibAlias]]]] = []
        #: the aliases whose nexthop is on each device (kernel: fib_info_devhash, the
        #: nexthops by device that fib_sync_up walks): a device event on a router
        #: with thousands of routes visits its own, not all of them
        self.by_dev: dict[NetDevice, list[FibAlias]] = {}

    def bucket(self, dst: int, dst_len: int, create: bool = False) -> list[FibAlias] | None:
        lens = self.lens
        bucket = super().bucket(dst, dst_len, create)
        if self.lens is not lens:
            self.levels = [(_LOOKUP_MASKS[n], self.by_len[n]) for n in self.lens]
        return bucket

    def prune(self, dst: int, dst_len: int) -> None:
        lens = self.lens
        super().prune(dst, dst_len)
        if self.lens is not lens:
            self.levels = [(_LOOKUP_MASKS[n], self.by_len[n]) for n in self.lens]

    def _index(self, fa: FibAlias) -> None:
        nh = fa.fi.nh
        if nh is not None:
            self.by_dev.setdefault(nh.dev, []).append(fa)

    def _unindex(self, fa: FibAlias) -> None:
        nh = fa.fi.nh
        if nh is not None:
            row = self.by_dev.get(nh.dev)
            if row is not None:
                for i, o in enumerate(row):
                    if o is fa:
                        del row[i]
                        break
                if not row:
                    del self.by_dev[nh.dev]

    def dev_aliases(self, dev: NetDevice) -> list[FibAlias]:
        """The routes whose nexthop is on *dev*, in no particular order."""
        return self.by_dev.get(dev, [])

    @kernel("fib_table_insert", "fib_find_alias", "fib_insert_alias")
    def insert(self, fa: FibAlias, nlflags: int) -> None:
        """Kernel: fib_table_insert(), with fib_find_alias()/fib_insert_alias()'s order.

        Within one prefix the aliases are ordered by table (descending: local
        before main when they share the buckets), then TOS (descending), then
        metric; *fa* goes before the first of its table, TOS and metric
        (prepend) or after the last (``NLM_F_APPEND``).
        """
        tb_id = self.id
        fa.table = tb_id
        bucket = self.tb_data.bucket(fa.dst, fa.dst_len, True)
        assert bucket is not None
        prio = fa.fi.priority
        same = [o for o in bucket if o.table == tb_id and o.tos == fa.tos and o.fi.priority == prio]
        if same:
            if nlflags & NLM_F_EXCL:
                raise ConfigError("RTNETLINK answers: File exists", errno.EEXIST)
            if nlflags & NLM_F_REPLACE:
                i = bucket.index(same[0])
                same[0].fi.dead = True
                bucket[i] = fa
                self._unindex(same[0])
                self._index(fa)
                return
            if not nlflags & NLM_F_APPEND:
                # "ip route prepend"-like default: a matching identical route exists
                for o in same:
                    if o.type == fa.type and _same_nh(o.fi, fa.fi):
                        raise ConfigError("RTNETLINK answers: File exists", errno.EEXIST)
        elif not nlflags & NLM_F_CREATE:
            raise ConfigError("RTNETLINK answers: No such file or directory", errno.ENOENT)
        key = (-tb_id, -fa.tos, prio)
        if nlflags & NLM_F_APPEND:  # after every alias of the same table, tos and metric
            i = len([o for o in bucket if (-o.table, -o.tos, o.fi.priority) <= key])
        else:  # prepend: before them
            i = len([o for o in bucket if (-o.table, -o.tos, o.fi.priority) < key])
        bucket.insert(i, fa)
        self._index(fa)

    @kernel("fib_table_delete")
    def delete(self, dst: int, dst_len: int, match: Any) -> FibAlias:
        """Remove the first alias of this table *match* accepts; ESRCH if none.

        Kernel: fib_table_delete().
        """
        data = self.tb_data
        bucket = data.bucket(dst, dst_len, False)
        if bucket:
            tb_id = self.id
            for fa in bucket:
                if fa.table == tb_id and match(fa):
                    bucket.remove(fa)
                    fa.fi.dead = True
                    self._unindex(fa)
                    data.prune(dst, dst_len)
                    return fa
        raise ConfigError("RTNETLINK answers: No such process", errno.ESRCH)

    def remove_where(self, pred: Any) -> int:
        """Remove every alias of this table *pred* accepts (device down, address removal)."""
        n = 0
        data = self.tb_data
        tb_id = self.id
        for dst_len in list(data.by_len):
            level = data.by_len[dst_len]
            for dst in list(level):
                bucket = level[dst]
                keep = [fa for fa in bucket if fa.table != tb_id or not pred(fa)]
                if len(keep) != len(bucket):
                    for fa in bucket:
                        if fa not in keep:
                            fa.fi.dead = True
                            self._unindex(fa)
                    n += len(bucket) - len(keep)
                    level[dst] = keep
                    data.prune(dst, dst_len)
        return n

    @kernel("fib_table_lookup")
    def lookup(
        self,
        daddr: int,
        oif: int = 0,
        scope: int = RT_SCOPE_UNIVERSE,
        ignore_linkdown: bool = False,
    ) -> FibAlias | None:
        """Longest-prefix match over ``tb_data`` (both tables when merged).

        Kernel: fib_table_lookup().
        """
        if TIMED:
            spend("fib_table_lookup")
        for mask, level in self.tb_data.levels:
            bucket = level.get(daddr & mask)
            if not bucket:
                continue
            for fa in bucket:
                fi = fa.fi
                if fi.dead or fi.scope < scope:
                    continue
                nh = fi.nh
                if nh is not None:
                    if nh.flags & RTNH_F_DEAD:
                        continue
                    if ignore_linkdown and nh.flags & RTNH_F_LINKDOWN:
                        continue
                    if oif and nh.dev.ifindex != oif:
                        continue
                # a reject route (no nexthop) answers whatever the oif: its error
                return fa
        return None

    def aliases(self) -> Iterator[FibAlias]:
        """This table's routes, ordered by prefix then length (``ip route show`` order)."""
        tb_id = self.id
        rows = [fa for fa in self.tb_data.entries() if fa.table == tb_id]
        rows.sort(key=lambda fa: (fa.dst, fa.dst_len, fa.fi.priority))
        return iter(rows)

    def is_alias(self) -> bool:
        """Does this table keep its routes in another's buckets (merged local)?"""
        return self.tb_data is not self


# Fib.default before the default table is made: empty, never written to (its
# first route makes the real one, fib_new_table)
_NO_DEFAULT_TABLE: Final = FibTable(RT_TABLE_DEFAULT)


def _same_nh(a: FibInfo, b: FibInfo) -> bool:
    if a.nh is None or b.nh is None:
        return a.nh is b.nh
    return a.nh.dev is b.nh.dev and a.nh.gw == b.nh.gw


class Fib:
    """The FIB of one Net: the three standard tables and the rules.

    While no rule was added or deleted (``fib_has_custom_rules`` false) the
    local table is an alias of the main table (:meth:`fib_new_table`) and a
    lookup is one longest-prefix match in the main table's buckets, then the
    default table (:meth:`lookup`). The first ``ip rule add`` or ``del``
    splits them (:meth:`fib_unmerge`) for good, and lookups walk the rules.
    """

    # Slotted (a lab holds thousands of these); the __dict__ slot takes what is
    # set only later or from outside.
    __slots__ = (
        "__dict__",
        "changes",
        "default",
        "fib_has_custom_rules",
        "ipv4",
        "local",
        "main",
        "rules",
        "tables",
    )

    def __init__(self, ipv4: Ipv4) -> None:
        self.ipv4 = ipv4
        self.fib_has_custom_rules = False
        self.tables: dict[int, FibTable] = {}
        # the kernel makes each table when its first route comes (fib_new_table);
        # the emulator makes local and main at once (lo's 127.0.0.1 makes them on a
        # fresh Net). The default table exists only from its first route on
        # (``ip route show table default`` fails before); until then lookups see
        # an empty stand-in, one for every Net.
        self.local = self.fib_new_table(RT_TABLE_LOCAL)
        self.main = self.tables[RT_TABLE_MAIN]
        self.default = _NO_DEFAULT_TABLE
        self.tables = {RT_TABLE_LOCAL: self.local, RT_TABLE_MAIN: self.main}
        self.rules: list[FibRule] = fib_default_rules()
        self.changes = 0

    @kernel("net/ipv4/fib_frontend.c", "fib_new_table")
    def fib_new_table(self, table_id: int) -> FibTable:
        """The table *table_id* (0 is main), made if missing.

        Without custom rules the local table is made as an alias of the main
        table (``fib_trie_table(id, alias)``): it keeps its routes in the main
        table's buckets, so that :meth:`lookup` needs one match for both.

        Kernel: net/ipv4/fib_frontend.c, fib_new_table().
        """
        if table_id == 0:
            table_id = RT_TABLE_MAIN
        tb = self.tables.get(table_id)
        if tb is not None:
            return tb
        alias: FibTable | None = None
        if table_id == RT_TABLE_LOCAL and not self.fib_has_custom_rules:
            alias = self.fib_new_table(RT_TABLE_MAIN)
        tb = self.tables[table_id] = FibTable(table_id, alias)
        if table_id == RT_TABLE_MAIN:
            self.main = tb
        elif table_id == RT_TABLE_DEFAULT:
            self.default = tb
        return tb

    def table(self, table_id: int, create: bool = False) -> FibTable | None:
        if create:
            return self.fib_new_table(table_id)
        return self.tables.get(table_id or RT_TABLE_MAIN)

    @kernel(
        "net/ipv4/fib_frontend.c", "fib_unmerge", "fib_trie_unmerge", "fib_table_flush_external"
    )
    def fib_unmerge(self) -> None:
        """Split the local table out of the main table's buckets, once.

        The local aliases are moved into a table of their own, which replaces
        the merged one; the main table keeps only its own. From then on
        lookups walk the rules (local, main, default, and the custom ones).

        Kernel: net/ipv4/fib_frontend.c, fib_unmerge() (fib_trie_unmerge() +
        fib_table_flush_external()).
        """
        old = self.tables.get(RT_TABLE_LOCAL)
        if old is None:
            return
        new = self.fib_trie_unmerge(old)
        if new is old:
            return  # already unmerged
        self.tables[RT_TABLE_LOCAL] = new  # fib_replace_table()
        self.local = new
        self.fib_table_flush_external(self.main)
        self.changed()

    @kernel("net/ipv4/fib_trie.c", "fib_trie_unmerge")
    def fib_trie_unmerge(self, oldtb: FibTable) -> FibTable:
        """A table of its own holding *oldtb*'s aliases (or *oldtb* if not an alias).

        Kernel: net/ipv4/fib_trie.c, fib_trie_unmerge() (it copies each local
        alias into the new trie; here the alias objects themselves move).
        """
        if not oldtb.is_alias():
            return oldtb
        local_tb = FibTable(oldtb.id)
        tb_id = oldtb.id
        for dst_len, level in oldtb.tb_data.by_len.items():
            for dst, bucket in level.items():
                mine = [fa for fa in bucket if fa.table == tb_id]
                for fa in mine:
                    fa.res = None  # found through the local table from now on
                if mine:
                    into = local_tb.bucket(dst, dst_len, True)
                    assert into is not None
                    into.extend(mine)
        local_tb.by_dev = oldtb.by_dev
        return local_tb

    @kernel("net/ipv4/fib_trie.c", "fib_table_flush_external")
    def fib_table_flush_external(self, tb: FibTable) -> None:
        """Drop from *tb*'s buckets the aliases of other tables (copied out by unmerge).

        Kernel: net/ipv4/fib_trie.c, fib_table_flush_external().
        """
        tb_id = tb.id
        data = tb.tb_data
        for dst_len, level in list(data.by_len.items()):
            for dst, bucket in list(level.items()):
                keep = [fa for fa in bucket if fa.table == tb_id]
                if len(keep) != len(bucket):
                    level[dst] = keep
                    data.prune(dst, dst_len)

    @kernel("include/net/ip_fib.h", "fib_lookup", "fib_table_lookup")
    def lookup(
        self,
        daddr: int,
        oif: int = 0,
        scope: int = RT_SCOPE_UNIVERSE,
        saddr: int = 0,
        iif: int = 0,
    ) -> FibResult | None:
        """The route to *daddr*: the main table (local merged in), then default.

        Without custom rules this is one longest-prefix match over the local
        and the main table's routes together, so a local route loses to a
        longer main one (the kernel's merged trie), then the default table
        when nothing matched or a ``throw`` route did (-EAGAIN). With custom
        rules :meth:`fib_rules_lookup` walks them, matching *saddr* and *iif*
        (the input device, or loopback's for a locally generated flow) too.

        ``ip_route_input_noref`` (netstack/ipv4/route.py) has the merged case
        inline, as the kernel's compiler has this static inline: keep the two
        in step.

        Kernel: include/net/ip_fib.h, fib_lookup() (CONFIG_IP_MULTIPLE_TABLES);
        timed mode charges a second fib_table_lookup() (see below).
        """
        if self.fib_has_custom_rules:
            return self.fib_rules_lookup(daddr, oif, scope, saddr, iif)
        tb = self.main
        fa = tb.lookup(daddr, oif, scope)
        if TIMED and (fa is None or fa.table != RT_TABLE_LOCAL):
            # Timed mode still charges the walk of the local table that missed: the
            # seeds' kernels (2.6.36-3.3) predate the local/main collapse of 4.1
            # and walked both tables, and the cost table (cpu/costs.py) was
            # calibrated so. Today's kernel walks one merged trie; dropping this
            # charge is a recalibration (docs/performance.md, "One lookup").
            spend("fib_table_lookup")
        if fa is None or fa.type == RTN_THROW:
            return self.lookup_default(daddr, oif, scope)
        res = fa.res  # built once per alias: the table it is found through is fixed
        if res is None:
            res = fa.res = FibResult(fa, tb.id)
        return res

    def lookup_default(self, daddr: int, oif: int, scope: int) -> FibResult | None:
        """fib_lookup()'s second walk, merged: the main table missed or threw."""
        tb = self.default
        if not tb.lens:  # the kernel's fib_default is made on first use
            return None
        fa = tb.lookup(daddr, oif, scope)
        if fa is None or fa.type == RTN_THROW:
            return None
        res = fa.res
        if res is None:
            res = fa.res = FibResult(fa, tb.id)
        return res

    @kernel(
        "net/core/fib_rules.c",
        "fib_rules_lookup",
        "net/ipv4/fib_rules.c",
        "__fib_lookup",
        "fib4_rule_action",
    )
    def fib_rules_lookup(
        self,
        daddr: int,
        oif: int = 0,
        scope: int = RT_SCOPE_UNIVERSE,
        saddr: int = 0,
        iif: int = 0,
    ) -> FibResult | None:
        """Walk the rules: the first table with an answer, or a rule's own reject.

        A table that does not exist, a miss and a ``throw`` route (-EAGAIN) go
        on to the next rule; ``unreachable`` ends with no route (-ENETUNREACH),
        ``prohibit`` and ``blackhole`` with a result of that type (-EACCES,
        -EINVAL), as a reject route would.

        Kernel: net/core/fib_rules.c, fib_rules_lookup() with
        net/ipv4/fib_rules.c, __fib_lookup() and fib4_rule_action().
        """
        for rule in self.rules:
            if not fib_rule_match(self, rule, daddr, saddr, iif, oif):
                continue
            action = rule.action
            if action == FR_ACT_TO_TBL:
                tbl = self.tables.get(rule.table)
                if tbl is None:
                    continue
                fa = tbl.lookup(daddr, oif, scope)
                if fa is None or fa.type == RTN_THROW:
                    continue
                res = fa.res
                if res is None:
                    res = fa.res = FibResult(fa, tbl.id)
                return res
            if action == FR_ACT_UNREACHABLE:
                return None
            res = rule.reject
            if res is None:
                rtype = RTN_PROHIBIT if action == FR_ACT_PROHIBIT else RTN_BLACKHOLE
                fi = FibInfo(None, protocol=0, scope=RT_SCOPE_UNIVERSE, priority=0)
                res = rule.reject = FibResult(FibAlias(0, 0, 0, rtype, fi), 0)
            return res
        return None

    @kernel("inet_addr_type", "inet_addr_type_dev_table", "__inet_dev_addr_type")
    def inet_addr_type(self, addr: int, dev: NetDevice | None = None) -> int:
        """RTN_LOCAL / BROADCAST / MULTICAST / UNICAST of *addr*.

        The type of the route a lookup in the local table finds, of whatever
        prefix length (127.0.0.5 is local by 127.0.0.0/8), and while merged the
        main table's routes too, as the kernel's. *dev* is what the kernel's
        callers pass to ``inet_addr_type_dev_table``: it only picks a VRF's
        table, so it is not matched against the route's device here.

        Kernel: inet_addr_type(), inet_addr_type_dev_table(), __inet_dev_addr_type().
        """
        if ipv4_is_zeronet(addr) or ipv4_is_lbcast(addr):
            return RTN_BROADCAST
        if ipv4_is_multicast(addr):
            return RTN_MULTICAST
        fa = self.local.lookup(addr)
        if fa is None or fa.type in FIB_PROPS_ERROR:  # a reject route: the lookup's error
            return RTN_UNICAST
        return fa.type

    # -- configuration -----------------------------------------------------------------------
    @kernel("fib_create_info", "fib_table_insert")
    def add_route(self, cfg: RouteConfig) -> FibAlias:
        """``ip route add|replace|append``. Kernel: fib_create_info() + fib_table_insert()."""
        if cfg.dst & ~MASKS[cfg.dst_len]:
            raise ConfigError("Error: Invalid prefix for given prefix length.", errno.EINVAL)
        # inet_rtm_newroute() makes the table before fib_table_insert() checks the
        # route: an add that fails below still leaves an (empty) table behind.
        table = self.fib_new_table(cfg.table)
        if cfg.type > RTN_XRESOLVE or FIB_PROPS_SCOPE[cfg.type] > cfg.scope:
            raise ConfigError("Error: Invalid scope.", errno.EINVAL)
        nh: FibNh | None = None
        if cfg.type in FIB_PROPS_ERROR:
            if cfg.gw or cfg.dev is not None:
                raise ConfigError(
                    "Error: Gateway, device and multipath can not be specified for this "
                    "route type.",
                    errno.EINVAL,
                )
        else:
            if cfg.type not in (RTN_UNICAST, RTN_LOCAL, RTN_BROADCAST, RTN_ANYCAST, RTN_MULTICAST):
                raise ConfigError("Error: Invalid route type.", errno.EINVAL)
            if cfg.scope > RT_SCOPE_HOST:
                raise ConfigError("Error: Invalid scope.", errno.EINVAL)
            if cfg.onlink and not cfg.gw:
                raise ConfigError(
                    "Error: Invalid flags for nexthop - PERVASIVE and ONLINK can not be set.",
                    errno.EINVAL,
                )
            nh = self._check_nh(cfg)
        if cfg.prefsrc and cfg.type != RTN_LOCAL and self.inet_addr_type(cfg.prefsrc) != RTN_LOCAL:
            raise ConfigError("Error: Invalid prefsrc address.", errno.EINVAL)
        fi = FibInfo(
            nh,
            protocol=cfg.protocol,
            scope=cfg.scope,
            priority=cfg.priority,
            prefsrc=cfg.prefsrc,
            mtu=cfg.mtu,
            mtu_lock=cfg.mtu_lock,
        )
        fi.fastopen_no_cookie = cfg.fastopen_no_cookie
        fa = FibAlias(table.id, cfg.dst, cfg.dst_len, cfg.type, fi, cfg.tos)
        table.insert(fa, cfg.nlflags)
        self.changed()
        return fa

    @kernel("fib_create_info", "fib_check_nh_v4_gw", "_nongw")
    def _check_nh(self, cfg: RouteConfig) -> FibNh:
        """Validate the nexthop. Kernel: fib_create_info() / fib_check_nh_v4_gw() / _nongw()."""
        dev = cfg.dev
        if cfg.scope == RT_SCOPE_HOST:
            if cfg.gw:
                raise ConfigError(
                    "Error: Route with host scope can not have a gateway.", errno.EINVAL
                )
            if dev is None:
                raise ConfigError("RTNETLINK answers: No such device", errno.ENODEV)
            return FibNh(dev, 0, RT_SCOPE_NOWHERE)
        if not cfg.gw:
            if dev is None:
                raise ConfigError("RTNETLINK answers: No such device", errno.ENODEV)
            if not dev.flags & 1:
                raise ConfigError("Error: Device for nexthop is not up.", errno.ENETDOWN)
            nh = FibNh(dev, 0, RT_SCOPE_HOST)
            self._mark_linkdown(nh)
            return nh
        if cfg.onlink:
            if dev is None:
                raise ConfigError("Error: Nexthop device required for onlink.", errno.EINVAL)
            if not dev.flags & 1:
                raise ConfigError("Error: Nexthop device is not up.", errno.ENETDOWN)
            if self.inet_addr_type(cfg.gw, dev) != RTN_UNICAST:
                raise ConfigError("Error: Nexthop has invalid gateway.", errno.EINVAL)
            nh = FibNh(dev, cfg.gw, RT_SCOPE_LINK, RTNH_F_ONLINK)
            self._mark_linkdown(nh)
            return nh
        # The gateway must be directly reachable: a route of at least link scope.
        res = self.lookup(
            cfg.gw, dev.ifindex if dev is not None else 0, scope=max(cfg.scope + 1, RT_SCOPE_LINK)
        )
        if res is None or res.type not in (RTN_UNICAST, RTN_LOCAL) or res.nh is None:
            raise ConfigError(
                "Error: Nexthop has invalid gateway.",
                errno.ENETUNREACH if res is None else errno.EINVAL,
            )
        nh_dev = res.nh.dev
        if not nh_dev.flags & 1:
            raise ConfigError("Error: Nexthop device is not up.", errno.ENETDOWN)
        nh = FibNh(nh_dev, cfg.gw, res.scope)
        self._mark_linkdown(nh)
        return nh

    def _mark_linkdown(self, nh: FibNh) -> None:
        if not nh.dev.carrier:
            nh.flags |= RTNH_F_LINKDOWN

    @kernel("fib_table_delete")
    def delete_route(
        self,
        cfg: RouteConfig,
        *,
        match_gw: bool,
        match_dev: bool,
        match_metric: bool,
        match_type: bool,
        match_proto: bool,
        match_scope: bool,
    ) -> FibAlias:
        """``ip route del``: remove the first route matching what was given.

        Kernel: fib_table_delete().
        """
        table = self.tables.get(cfg.table)
        if table is None:
            raise ConfigError("Error: FIB table does not exist.", errno.ESRCH)
        if cfg.dst & ~MASKS[cfg.dst_len]:
            raise ConfigError("Error: Invalid prefix for given prefix length.", errno.EINVAL)

        def match(fa: FibAlias) -> bool:
            fi = fa.fi
            if cfg.prefsrc and fi.prefsrc != cfg.prefsrc:
                return False
            if fa.tos != cfg.tos:
                return False
            if match_type and fa.type != cfg.type:
                return False
            if match_metric and fi.priority != cfg.priority:
                return False
            if match_proto and fi.protocol != cfg.protocol:
                return False
            if match_scope and fi.scope != cfg.scope:
                return False
            if match_gw and (fi.nh is None or fi.nh.gw != cfg.gw):
                return False
            return not (match_dev and (fi.nh is None or fi.nh.dev is not cfg.dev))

        fa = table.delete(cfg.dst, cfg.dst_len, match)
        self.changed()
        return fa

    @kernel("rt_cache_flush")
    def changed(self) -> None:
        """Invalidate cached routes. Kernel: rt_cache_flush()."""
        self.changes += 1
        self.ipv4.rt_cache_flush()

    # -- routes that follow addresses (fib_frontend.c) -------------------------------
    @kernel("fib_magic", "fib_add_ifaddr", "fib_create_info")
    def _magic(
        self,
        table_id: int,
        rtype: int,
        dst: int,
        dst_len: int,
        ifa: InIfaddr,
        scope: int,
        add: bool,
        priority: int = 0,
        prefsrc: int | None = None,
    ) -> None:
        """Add or delete a kernel route for an address. Kernel: fib_magic().

        *prefsrc* is the primary address of the prefix when *ifa* is a secondary one
        (fib_add_ifaddr() passes ``prim``); a host-scope nexthop (local routes) is
        never ``linkdown`` (fib_create_info() checks no carrier for it).
        """
        table = self.tables[table_id]
        dev = ifa.dev
        src = ifa.ifa_local if prefsrc is None else prefsrc
        if add:
            if rtype == RTN_LOCAL or rtype == RTN_BROADCAST:
                nh_scope = RT_SCOPE_NOWHERE if rtype == RTN_LOCAL else RT_SCOPE_HOST
            else:
                nh_scope = RT_SCOPE_HOST
            nh = FibNh(dev, 0, nh_scope)
            if nh_scope != RT_SCOPE_NOWHERE:
                self._mark_linkdown(nh)
            fi = FibInfo(nh, protocol=RTPROT_KERNEL, scope=scope, priority=priority, prefsrc=src)
            fa = FibAlias(table_id, dst, dst_len, rtype, fi)
            bucket = table.tb_data.bucket(dst, dst_len, True)
            assert bucket is not None
            for o in bucket:
                if (
                    o.table == table_id
                    and o.type == rtype
                    and o.fi.nh is not None
                    and o.fi.nh.dev is dev
                    and o.fi.prefsrc == src
                    and o.fi.priority == priority
                ):
                    return
            bucket.append(fa)  # NLM_F_APPEND: after its table's, TOS's and metric's peers
            bucket.sort(key=lambda a: (-a.table, -a.tos, a.fi.priority))
            table._index(fa)
        else:
            table.remove_where(
                lambda fa: (
                    fa.dst == dst
                    and fa.dst_len == dst_len
                    and fa.type == rtype
                    and fa.fi.protocol == RTPROT_KERNEL
                    and fa.fi.nh is not None
                    and fa.fi.nh.dev is dev
                    and fa.fi.prefsrc in (ifa.ifa_local, src)
                )
            )

    @kernel("fib_add_ifaddr")
    def fib_add_ifaddr(self, ifa: InIfaddr) -> None:
        """Kernel routes for a new address. Kernel: fib_add_ifaddr()."""
        self._ifaddr_routes(ifa, add=True)
        self.changed()

    @kernel("fib_del_ifaddr")
    def fib_del_ifaddr(self, ifa: InIfaddr) -> None:
        """Kernel: fib_del_ifaddr()."""
        self._ifaddr_routes(ifa, add=False, force=True)
        self.changed()

    def _ifaddr_routes(self, ifa: InIfaddr, add: bool, force: bool = False) -> None:
        dev = ifa.dev
        prefix = ifa.ifa_address & ifa.ifa_mask
        src = ifa.ifa_local
        if ifa.ifa_flags & IFA_F_SECONDARY and dev.ip_ptr is not None:
            # a secondary address's local and broadcast routes take the primary's as
            # their source (fib_add_ifaddr(): prim = inet_ifa_byprefix(...))
            prim = inet_ifa_byprefix(dev.ip_ptr, prefix, ifa.ifa_mask)
            if prim is not None:
                src = prim.ifa_local
        self._magic(
            RT_TABLE_LOCAL, RTN_LOCAL, ifa.ifa_local, 32, ifa, RT_SCOPE_HOST, add, prefsrc=src
        )
        if add and not dev.flags & 1:
            return
        if ifa.ifa_broadcast and ifa.ifa_broadcast != INADDR_BROADCAST:
            self._magic(
                RT_TABLE_LOCAL,
                RTN_BROADCAST,
                ifa.ifa_broadcast,
                32,
                ifa,
                RT_SCOPE_LINK,
                add,
                prefsrc=src,
            )
        if (
            not ipv4_is_zeronet(prefix)
            and not ifa.ifa_flags & IFA_F_SECONDARY
            and (prefix != ifa.ifa_local or ifa.ifa_prefixlen < 32)
        ):
            if not ifa.ifa_flags & IFA_F_NOPREFIXROUTE:
                if dev.flags & IFF_LOOPBACK:
                    # 127.0.0.0/8 on lo: every address of the prefix is local
                    self._magic(
                        RT_TABLE_LOCAL,
                        RTN_LOCAL,
                        prefix,
                        ifa.ifa_prefixlen,
                        ifa,
                        RT_SCOPE_HOST,
                        add,
                        ifa.ifa_rt_priority,
                    )
                else:
                    self._magic(
                        RT_TABLE_MAIN,
                        RTN_UNICAST,
                        prefix,
                        ifa.ifa_prefixlen,
                        ifa,
                        RT_SCOPE_LINK,
                        add,
                        ifa.ifa_rt_priority,
                    )
            if ifa.ifa_prefixlen < 31:
                # the network's broadcast address, "when it makes sense"
                self._magic(
                    RT_TABLE_LOCAL,
                    RTN_BROADCAST,
                    prefix | (~ifa.ifa_mask & 0xFFFFFFFF),
                    32,
                    ifa,
                    RT_SCOPE_LINK,
                    add,
                )

    @kernel("fib_netdev_event")
    def fib_netdev_up(self, dev: NetDevice) -> None:
        """Device up: add the routes of its addresses. Kernel: fib_netdev_event(NETDEV_UP)."""
        in_dev = dev.ip_ptr
        if in_dev is None:
            return
        for ifa in in_dev.ifa_list:
            self._ifaddr_routes(ifa, add=True)
        self.fib_sync_up(dev)
        self.changed()

    @kernel("net/ipv4/fib_semantics.c", "fib_sync_mtu")
    def fib_sync_mtu(self, dev: NetDevice, orig_mtu: int) -> None:
        """The MTU of *dev* changed: bring its nexthops' PMTU exceptions along.

        Kernel: net/ipv4/fib_semantics.c, fib_sync_mtu().
        """
        seen: set[int] = set()
        for table in self.tables.values():
            for fa in table.aliases():
                nh = fa.fi.nh
                if nh is not None and nh.dev is dev and id(nh) not in seen:
                    seen.add(id(nh))
                    fib_nhc_update_mtu(nh, dev.mtu, orig_mtu)

    @kernel("fib_sync_down_dev", "fib_flush")
    def fib_sync_down_dev(self, dev: NetDevice, unregister: bool) -> None:
        """Device down: drop routes through it, keep its local ones unless it goes away.

        Kernel: fib_sync_down_dev() + fib_flush().
        """
        for table in self.tables.values():
            table.remove_where(
                lambda fa: (
                    fa.fi.nh is not None
                    and fa.fi.nh.dev is dev
                    and (unregister or fa.fi.nh.scope != RT_SCOPE_NOWHERE)
                )
            )
        self.changed()

    @kernel("fib_sync_down_dev", "fib_sync_up")
    def fib_sync_linkdown(self, dev: NetDevice, down: bool) -> None:
        """Carrier change: flag nexthops ``linkdown``.

        Kernel: fib_sync_down_dev(CHANGE)/fib_sync_up().
        """
        for table in self.tables.values():
            for fa in table.dev_aliases(dev):
                nh = fa.fi.nh
                # host-scope nexthops (local routes) are left alone: fib_nh_scope == scope
                if nh is not None and nh.dev is dev and nh.scope != RT_SCOPE_NOWHERE:
                    if down:
                        nh.flags |= RTNH_F_LINKDOWN
                    else:
                        nh.flags &= ~RTNH_F_LINKDOWN
        self.changed()

    def fib_sync_up(self, dev: NetDevice) -> None:
        self.fib_sync_linkdown(dev, not dev.carrier)
