"""IPv6 routing: the FIB (``fib6_info`` entries in tables) and ``rt6_info`` dst entries.

Theory of operation::

    ip6_route_output(flowi6) / ip6_route_input(skb)
      ─► rules: table local (255), then main (254)
      ─► fib6_table_lookup: longest prefix first; among the routes of one
         prefix the lowest metric group first, each route scored
         (rt6_score_route: outgoing interface, router preference, and —
         when not forwarding — the gateway's neighbour not FAILED);
         expired and dead routes never match; an interface mismatch is
         fatal when the lookup is strict (link-local or multicast
         destination, or a bound socket)
      ─► a PMTU exception for the destination (RTF_CACHE clone) if one
         was learnt, else the route's cached ``Rt6Info`` copy
      ─► no route: the null entry (dst.error = -ENETUNREACH)

A :class:`Fib6Info` is what ``ip -6 route`` lists; an :class:`Rt6Info` is
what packets carry (``skb.dst``): output device (the loopback for local
routes), gateway, flags, the route's metrics, and for an exception the
learnt path MTU with its expiry (``ip6_rt_mtu_expires``, 10 min). Copies
are cached per route and invalidated wholesale by bumping the Net's
``rt6_genid`` whenever the FIB or an address changes.

Routes with RTF_EXPIRES (from router advertisements, ``expires N``) stop
matching when they expire and are removed by the FIB garbage collector,
which runs every ``gc_interval`` (30 s) while such routes exist.

Kernel: net/ipv6/route.c, net/ipv6/ip6_fib.c, net/ipv6/fib6_rules.c,
include/net/ip6_route.h, include/net/ip6_fib.h.
"""

from __future__ import annotations

import errno
import hashlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

from netstack.core.dst import DST_OBSOLETE_FORCE_CHK, DstEntry
from netstack.core.netdevice import IFF_LOOPBACK, IFF_UP
from netstack.core.prefix_table import PrefixBuckets
from netstack.core.skbuff import DropReason, SkBuff, kfree_skb
from netstack.errors import ConfigError
from netstack.ipv6.constants import (
    IPV6_EXTRACT_PREF,
    RTF_ANYCAST,
    RTF_CACHE,
    RTF_EXPIRES,
    RTF_GATEWAY,
    RTF_LOCAL,
    RTF_NONEXTHOP,
    RTF_REJECT,
    RTF_UP,
)
from netstack.neigh.nud import NUD_FAILED, NUD_VALID
from netstack.sites import kernel
from netstack.wire.icmpv6 import (
    ICMPV6_ADDR_UNREACH,
    ICMPV6_DEST_UNREACH,
    ICMPV6_NOROUTE,
)
from netstack.wire.ipv6 import (
    ALL_ONES,
    IPV6_ADDR_LINKLOCAL,
    IPV6_ADDR_LOOPBACK,
    IPV6_ADDR_MAPPED,
    IPV6_ADDR_MULTICAST,
    IPV6_ADDR_UNICAST,
    IPV6_MIN_MTU,
    addr_at,
    ipv6_addr_type,
    prefix_mask,
)
from netstack.wire.rtnetlink import (
    NLM_F_CREATE,
    NLM_F_EXCL,
    NLM_F_REPLACE,
    RT_TABLE_LOCAL,
    RT_TABLE_MAIN,
    RTN_ANYCAST,
    RTN_BLACKHOLE,
    RTN_LOCAL,
    RTN_PROHIBIT,
    RTN_THROW,
    RTN_UNICAST,
    RTN_UNREACHABLE,
    RTNH_F_DEAD,
    RTNH_F_LINKDOWN,
    RTNH_F_ONLINK,
    RTPROT_BOOT,
)

if TYPE_CHECKING:
    from netstack.core.netdevice import NetDevice
    from netstack.ipv6.netns import Ipv6

__all__ = [
    "Fib6Config",
    "Fib6Info",
    "Fib6Nh",
    "Fib6Table",
    "Flowi6",
    "Rt6Info",
    "ip6_route_input",
    "ip6_route_output",
    "rt6_nexthop",
]

IP6_MAX_MTU: Final = 0xFFFF + 40
RT6_LOOKUP_F_IFACE: Final = 0x00000001
RT6_LOOKUP_F_REACHABLE: Final = 0x00000002
RT6_LOOKUP_F_HAS_SADDR: Final = 0x00000004
RT6_NUD_FAIL_HARD: Final = -3
RT6_NUD_FAIL_PROBE: Final = -2
RT6_NUD_FAIL_DO_RR: Final = -1
RT6_NUD_SUCCEED: Final = 1
IP6_RT_MTU_EXPIRES_S: Final = 600
FIB6_EXCEPTION_BUCKET_SIZE_SHIFT: Final = 10
FIB6_EXCEPTION_BUCKET_SIZE: Final = 1 << FIB6_EXCEPTION_BUCKET_SIZE_SHIFT
FIB6_MAX_DEPTH: Final = 5
FLOWI_FLAG_ANYSRC: Final = 0x01

# ip6_rt_init_dst_reject(): the error each reject type reports
REJECT_ERRORS: Final = {
    RTN_BLACKHOLE: errno.EINVAL,
    RTN_PROHIBIT: errno.EACCES,
    RTN_THROW: errno.EAGAIN,
    RTN_UNREACHABLE: errno.ENETUNREACH,
}


class Flowi6:
    """A flow to route (kernel: ``struct flowi6``)."""

    __slots__ = ("daddr", "dport", "flags", "flowlabel", "iif", "mark", "oif", "proto", "saddr")

    def __init__(
        self,
        daddr: int,
        saddr: int = 0,
        *,
        oif: int = 0,
        iif: int = 1,
        proto: int = 0,
        flowlabel: int = 0,
        mark: int = 0,
        dport: int = 0,
        flags: int = 0,
    ) -> None:
        self.daddr = daddr
        self.saddr = saddr
        self.oif = oif
        self.iif = iif
        self.proto = proto
        self.flowlabel = flowlabel
        self.mark = mark
        self.dport = dport
        self.flags = flags


class Fib6Nh:
    """A nexthop (kernel: ``struct fib6_nh``): device, gateway, its cached routes.

    Its exceptions (RTF_CACHE clones: learnt PMTUs, redirects) are kept by
    destination in ``exceptions`` and in ``exception_buckets``, the kernel's
    ``rt6i_exception_bucket`` array of ``FIB6_EXCEPTION_BUCKET_SIZE`` chains
    (newest first), each at most ``FIB6_MAX_DEPTH`` plus a random part deep.
    """

    __slots__ = ("dev", "exception_buckets", "exceptions", "flags", "gw", "rt_cache")

    def __init__(self, dev: NetDevice, gw: int = 0, flags: int = 0) -> None:
        self.dev = dev
        self.gw = gw
        self.flags = flags
        self.rt_cache: Rt6Info | None = None  # the per-cpu copy (rt6i_pcpu)
        self.exceptions: dict[int, Rt6Info] = {}  # RTF_CACHE clones by daddr
        self.exception_buckets: dict[int, list[Rt6Info]] = {}


class Fib6Info:
    """One route (kernel: ``struct fib6_info``)."""

    __slots__ = (
        "dead",
        "dst",
        "dst_len",
        "expires",
        "fastopen_no_cookie",
        "flags",
        "hoplimit",
        "metric",
        "mtu",
        "mtu_lock",
        "nh",
        "prefsrc",
        "protocol",
        "seq",
        "table",
        "type",
    )

    def __init__(
        self,
        table: int,
        dst: int,
        dst_len: int,
        nh: Fib6Nh,
        *,
        metric: int,
        flags: int,
        rtype: int,
        protocol: int,
        expires: int = 0,
        prefsrc: int = 0,
    ) -> None:
        self.table = table
        self.dst = dst
        self.dst_len = dst_len
        self.nh = nh
        self.metric = metric
        self.flags = flags
        self.type = rtype
        self.protocol = protocol
        self.expires = expires  # jiffy, meaningful with RTF_EXPIRES
        self.prefsrc = prefsrc
        self.mtu = 0  # RTAX_MTU
        self.mtu_lock = False
        self.hoplimit = 0  # RTAX_HOPLIMIT
        self.fastopen_no_cookie = 0  # RTAX_FASTOPEN_NO_COOKIE
        self.dead = False
        self.seq = 0

    @kernel("fib6_check_expired")
    def expired(self, now: int) -> bool:
        """Kernel: fib6_check_expired()."""
        return bool(self.flags & RTF_EXPIRES) and self.expires != 0 and now > self.expires

    def __repr__(self) -> str:
        from netstack.wire.ipv6 import ntoa

        return f"<Fib6Info {ntoa(self.dst)}/{self.dst_len} dev {self.nh.dev.name} m {self.metric}>"


class Fib6Config:
    """A route request as rtnetlink carries it (kernel: ``struct fib6_config``)."""

    def __init__(
        self,
        dst: int,
        dst_len: int,
        *,
        table: int = RT_TABLE_MAIN,
        metric: int = 0,
        flags: int = RTF_UP,
        rtype: int = RTN_UNICAST,
        protocol: int = RTPROT_BOOT,
        dev: NetDevice | None = None,
        gw: int | None = None,
        prefsrc: int = 0,
        expires: int = 0,
        mtu: int = 0,
        mtu_lock: bool = False,
        hoplimit: int = 0,
        onlink: bool = False,
        nlflags: int = NLM_F_CREATE | NLM_F_EXCL,
        ignore_dev_down: bool = False,
    ) -> None:
        self.dst = dst
        self.dst_len = dst_len
        self.table = table
        self.metric = metric
        self.flags = flags
        self.type = rtype
        self.protocol = protocol
        self.dev = dev
        self.gw = gw
        self.prefsrc = prefsrc
        self.expires = expires  # seconds from now (fc_expires, clock_t in the kernel)
        self.mtu = mtu
        self.mtu_lock = mtu_lock
        self.hoplimit = hoplimit
        self.fastopen_no_cookie = 0  # RTAX_FASTOPEN_NO_COOKIE
        self.onlink = onlink
        self.nlflags = nlflags
        self.ignore_dev_down = ignore_dev_down


def _sort_key(f: Fib6Info) -> tuple[int, int]:
    """The fib6 tree walk order: post-order on address bits (see :meth:`Fib6Table.routes`)."""
    return (f.dst | (ALL_ONES >> f.dst_len if f.dst_len < 128 else 0), -f.dst_len)


class Fib6Table(PrefixBuckets[Fib6Info]):
    """One routing table (kernel: ``struct fib6_table`` over a radix tree; PrefixBuckets here).

    Twin: netstack.ipv4.fib.FibTable.
    """

    def __init__(self, table_id: int) -> None:
        super().__init__()
        self.id = table_id
        self._seq = 0

    @kernel("fib6_add_rt2node")
    def insert(self, f: Fib6Info, nlflags: int) -> None:
        """Insert keeping metric order.

        Kernel: fib6_add_rt2node().
        """
        b = self.bucket(f.dst, f.dst_len, True)
        assert b is not None
        same = [o for o in b if o.metric == f.metric]
        if same:
            if nlflags & NLM_F_EXCL:
                raise ConfigError("RTNETLINK answers: File exists", errno.EEXIST)
            if nlflags & NLM_F_REPLACE:
                old = same[0]
                b[b.index(old)] = f
                old.dead = True
                self._seq += 1
                f.seq = self._seq
                return
            for o in same:
                if _same_nexthop(o, f):
                    raise ConfigError("RTNETLINK answers: File exists", errno.EEXIST)
        elif nlflags & NLM_F_REPLACE and not nlflags & NLM_F_CREATE:
            raise ConfigError("RTNETLINK answers: No such file or directory", errno.ENOENT)
        self._seq += 1
        f.seq = self._seq
        i = len([o for o in b if o.metric <= f.metric])
        b.insert(i, f)

    def remove(self, f: Fib6Info) -> None:
        b = self.bucket(f.dst, f.dst_len)
        if b and f in b:
            b.remove(f)
            f.dead = True
            self.prune(f.dst, f.dst_len)

    def routes(self) -> list[Fib6Info]:
        """Every route in the order ``ip -6 route`` shows them.

        The kernel walks its radix tree children-first, 0-bits before
        1-bits, so a prefix comes after every more specific one it covers
        and the default route comes last; routes of one prefix keep their
        metric/insertion order.
        """
        rows = self.entries()
        order = {id(f): i for i, f in enumerate(rows)}
        rows.sort(key=lambda f: (*_sort_key(f), f.metric, order[id(f)]))
        return rows

    def __iter__(self) -> Iterator[Fib6Info]:
        return iter(self.routes())


@kernel("rt6_duplicate_nexthop")
def _same_nexthop(a: Fib6Info, b: Fib6Info) -> bool:
    """Kernel: rt6_duplicate_nexthop()."""
    return a.nh.dev is b.nh.dev and a.nh.gw == b.nh.gw and a.type == b.type


class Rt6Info(DstEntry):
    """An IPv6 route as packets carry it (kernel: ``struct rt6_info``).

    Attributes:
        rt6i_flags: RTF_* (RTF_GATEWAY, RTF_LOCAL, RTF_CACHE …).
        rt6i_gateway: the gateway (128-bit int; 0 when none).
        rt6i_dst: ``(addr, plen)`` of the route (``addr/128`` for an exception).
        rt6i_pmtu: a learnt path MTU (exceptions), 0 if none.
        rt6i_idev: the ``inet6_dev`` of the route's device (statistics, mtu6).
        from_: the FIB entry the copy was made from (``rt->from``).
    """

    def __init__(self, ipv6: Ipv6, dev: NetDevice | None, flags: int) -> None:
        super().__init__(dev, input=ipv6.dst_discard_in, output=ipv6.dst_output)
        self.ipv6 = ipv6
        self.obsolete = DST_OBSOLETE_FORCE_CHK
        self.genid = ipv6.rt6_genid
        self.rt6i_flags = flags
        self.rt6i_gateway = 0
        self.rt6i_dst = (0, 0)
        self.rt6i_pmtu = 0
        self.rt6i_idev: Any = None
        self.rt6i_type = RTN_UNICAST
        self.from_: Fib6Info | None = None
        self.metric_mtu = 0
        self.metric_hoplimit = 0
        self.ex_bucket = -1  # an exception's chain (rt6_exception_hash)
        self.ex_stamp = 0  # rt6_exception.stamp: jiffies when inserted

    @kernel("include/net/dst.h", "dst_hold")
    def hold(self) -> Rt6Info:
        """Take a reference.

        Kernel: include/net/dst.h, dst_hold().
        """
        self.refcnt += 1
        self.holds += 1
        return self

    # -- dst_ops ----------------------------------------------------------------------
    @kernel("ip6_dst_check")
    def valid(self) -> bool:
        """Usable from a cache?

        Kernel: ip6_dst_check() (sernum/cookie compare).
        """
        if self.obsolete != DST_OBSOLETE_FORCE_CHK or self.genid != self.ipv6.rt6_genid:
            return False
        if self.rt6i_flags & RTF_CACHE and self.expires:
            return self.ipv6.net.clock.jiffies < self.expires
        return True

    @property
    def metric_fastopen_no_cookie(self) -> int:
        """dst_metric(dst, RTAX_FASTOPEN_NO_COOKIE): the route's metrics are its own."""
        f = self.from_
        return f.fastopen_no_cookie if f is not None else 0

    @kernel("ip6_mtu")
    def mtu(self) -> int:
        """Kernel: ip6_mtu()."""
        mtu = self.rt6i_pmtu
        if mtu and self.expires and self.ipv6.net.clock.jiffies >= self.expires:
            mtu = 0
        if not mtu:
            mtu = self.metric_mtu
        if not mtu:
            idev = self.rt6i_idev
            mtu = idev.cnf.mtu6 if idev is not None else IPV6_MIN_MTU
        return min(mtu, IP6_MAX_MTU)

    @kernel("ip6_rt_update_pmtu")
    def update_pmtu(self, skb: SkBuff | None, mtu: int) -> None:
        """Learn a smaller path MTU for the IPv6 packet *skb*.

        Kernel: ip6_rt_update_pmtu().
        """
        if skb is None or skb.network_header < 0:
            return
        nh = skb.network_header
        rt6_update_pmtu(self.ipv6, self, addr_at(skb.buf, nh + 24), addr_at(skb.buf, nh + 8), mtu)

    @kernel("ip6_link_failure")
    def link_failure(self, skb: SkBuff) -> None:
        """The neighbour could not be resolved.

        Kernel: ip6_link_failure().
        """
        ip6_link_failure(self.ipv6, skb)

    @kernel("rt6_nexthop")
    def nexthop(self, daddr: int) -> int:
        """Kernel: rt6_nexthop()."""
        return rt6_nexthop(self, daddr)

    def __repr__(self) -> str:
        dev = self.dev.name if self.dev is not None else None
        return f"<Rt6Info dev={dev} flags={self.rt6i_flags:#x} refcnt={self.refcnt}>"


@kernel("rt6_nexthop")
def rt6_nexthop(rt: Rt6Info, daddr: int) -> int:
    """The address to resolve: the gateway, or the destination.

    Kernel: rt6_nexthop().
    """
    if rt.rt6i_flags & RTF_GATEWAY:
        return rt.rt6i_gateway
    if rt.rt6i_flags & RTF_CACHE:
        return rt.rt6i_dst[0]
    return daddr


# ---------------------------------------------------------------------------
# Building rt6_info copies
# ---------------------------------------------------------------------------


@kernel("ip6_rt_init_dst")
def ip6_rt_init_dst(ipv6: Ipv6, rt: Rt6Info, f: Fib6Info) -> None:
    """Set input/output/error from the route type.

    Kernel: ip6_rt_init_dst().
    """
    if f.flags & RTF_REJECT:
        err = REJECT_ERRORS.get(f.type, errno.ENETUNREACH)
        rt.error = -err
        if f.type == RTN_BLACKHOLE:
            rt.input = ipv6.dst_discard_in
            rt.output = ipv6.dst_discard_out
        elif f.type == RTN_PROHIBIT:
            rt.input = ipv6.ip6_pkt_prohibit
            rt.output = ipv6.ip6_pkt_prohibit_out
        else:
            rt.input = ipv6.ip6_pkt_discard
            rt.output = ipv6.ip6_pkt_discard_out
        return
    rt.error = 0
    rt.output = ipv6.dst_output
    if f.type in (RTN_LOCAL, RTN_ANYCAST):
        rt.input = ipv6.dst_local_deliver
    elif ipv6_addr_type(f.dst) & IPV6_ADDR_MULTICAST:
        rt.input = ipv6.dst_mc_input
    else:
        rt.input = ipv6.dst_forward


@kernel("ip6_rt_get_dev_rcu")
def _rt_dev(ipv6: Ipv6, f: Fib6Info) -> NetDevice:
    """Copies of local routes use the loopback.

    Kernel: ip6_rt_get_dev_rcu().
    """
    if f.flags & (RTF_LOCAL | RTF_ANYCAST):
        return ipv6.loopback_dev
    return f.nh.dev


@kernel("ip6_create_rt_rcu", "ip6_rt_copy_init")
def ip6_rt_copy(ipv6: Ipv6, f: Fib6Info) -> Rt6Info:
    """A dst copy of a route.

    Kernel: ip6_create_rt_rcu() / ip6_rt_copy_init().
    """
    rt = Rt6Info(ipv6, _rt_dev(ipv6, f), f.flags)
    ip6_rt_init_dst(ipv6, rt, f)
    rt.rt6i_dst = (f.dst, f.dst_len)
    rt.rt6i_idev = f.nh.dev.ip6_ptr
    rt.rt6i_type = f.type
    if f.nh.gw:
        rt.rt6i_gateway = f.nh.gw
        rt.rt6i_flags |= RTF_GATEWAY
    rt.from_ = f
    rt.metric_mtu = f.mtu
    rt.metric_hoplimit = f.hoplimit
    return rt


@kernel("ip6_rt_cache_alloc")
def ip6_rt_cache_alloc(ipv6: Ipv6, f: Fib6Info, daddr: int) -> Rt6Info:
    """An RTF_CACHE clone for one destination.

    Kernel: ip6_rt_cache_alloc().
    """
    rt = ip6_rt_copy(ipv6, f)
    rt.rt6i_flags |= RTF_CACHE
    rt.rt6i_dst = (daddr, 128)
    if not f.nh.gw and not f.flags & RTF_NONEXTHOP and not f.flags & (RTF_LOCAL | RTF_ANYCAST):
        rt.rt6i_gateway = daddr  # rt6_nexthop() then resolves the destination itself
    return rt


def make_null_entry(ipv6: Ipv6) -> Rt6Info:
    """``ip6_null_entry``: no route (-ENETUNREACH).

    Kernel: ip6_null_entry_template.
    """
    rt = Rt6Info(ipv6, None, RTF_REJECT)
    rt.error = -errno.ENETUNREACH
    rt.input = ipv6.ip6_pkt_discard
    rt.output = ipv6.ip6_pkt_discard_out
    rt.rt6i_type = RTN_UNREACHABLE
    rt.refcnt = 1 << 30  # never freed
    return rt


# ---------------------------------------------------------------------------
# Lookup
# ---------------------------------------------------------------------------


@kernel("rt6_check_neigh")
def rt6_check_neigh(ipv6: Ipv6, nh: Fib6Nh) -> int:
    """Is the gateway's neighbour usable?

    Kernel: rt6_check_neigh() (CONFIG_IPV6_ROUTER_PREF).
    """
    n = ipv6.nd_tbl.hash.get((nh.dev.ifindex << 128) | nh.gw)
    if n is None:
        return RT6_NUD_SUCCEED
    if n.nud_state & NUD_VALID or not n.nud_state & NUD_FAILED:
        return RT6_NUD_SUCCEED
    return RT6_NUD_FAIL_PROBE


@kernel("IPV6_DECODE_PREF")
def _decode_pref(pref: int) -> int:
    """Kernel: IPV6_DECODE_PREF(): low 1, medium 2, high 3 (invalid 0)."""
    return {0: 2, 1: 3, 3: 1}.get(pref, 0)


@kernel("rt6_score_route")
def rt6_score_route(ipv6: Ipv6, f: Fib6Info, oif: int, strict: int) -> int:
    """Kernel: rt6_score_route()."""
    nh = f.nh
    m = 0
    if not oif or nh.dev.ifindex == oif:
        m = 2
    if not m and strict & RT6_LOOKUP_F_IFACE:
        return RT6_NUD_FAIL_HARD
    m |= _decode_pref(IPV6_EXTRACT_PREF(f.flags)) << 2
    if strict & RT6_LOOKUP_F_REACHABLE and not f.flags & RTF_NONEXTHOP and nh.gw:
        n = rt6_check_neigh(ipv6, nh)
        if n < 0:
            return n
    return m


@kernel("find_match")
def _find_match(ipv6: Ipv6, f: Fib6Info, oif: int, strict: int, now: int) -> int | None:
    """The route's score, or None if it cannot be used.

    Kernel: find_match().
    """
    nh = f.nh
    if f.dead or nh.flags & RTNH_F_DEAD or f.expired(now):
        return None
    idev = nh.dev.ip6_ptr
    if nh.flags & RTNH_F_LINKDOWN and idev is not None and idev.ignore_routes_with_linkdown():
        return None
    m = rt6_score_route(ipv6, f, oif, strict)
    if m == RT6_NUD_FAIL_DO_RR:
        m = 0
    elif m == RT6_NUD_FAIL_HARD:
        return None
    return m


@kernel("rt6_select")
def rt6_select(ipv6: Ipv6, b: list[Fib6Info], oif: int, strict: int, now: int) -> Fib6Info | None:
    """The best route of one prefix: lowest metric group first.

    Kernel: rt6_select().
    """
    i = 0
    n = len(b)
    while i < n:
        metric = b[i].metric
        best: Fib6Info | None = None
        mpri = -1
        while i < n and b[i].metric == metric:
            m = _find_match(ipv6, b[i], oif, strict, now)
            if m is not None and m > mpri:
                best, mpri = b[i], m
            i += 1
        if best is not None:
            return best
    return None


@kernel("fib6_table_lookup")
def fib6_table_lookup(
    ipv6: Ipv6, table: Fib6Table, daddr: int, oif: int, strict: int
) -> Fib6Info | None:
    """Longest match, backtracking to shorter prefixes.

    Kernel: fib6_table_lookup().
    """
    now = ipv6.net.clock.jiffies
    by_len = table.by_len
    while True:
        for plen in table.lens:
            b = by_len[plen].get(daddr & prefix_mask(plen))
            if not b:
                continue
            f = rt6_select(ipv6, b, oif, strict, now)
            if f is not None:
                return f
        if strict & RT6_LOOKUP_F_REACHABLE:
            strict &= ~RT6_LOOKUP_F_REACHABLE  # "also consider unreachable route"
            continue
        return None


@kernel("fib6_rule_lookup")
def fib6_lookup(ipv6: Ipv6, daddr: int, oif: int, strict: int) -> Fib6Info | None:
    """Walk the default rules: local, then main.

    Kernel: fib6_rule_lookup().
    """
    for table_id in (RT_TABLE_LOCAL, RT_TABLE_MAIN):
        t = ipv6.fib6.tables.get(table_id)
        if t is None or not t.lens:
            continue
        f = fib6_table_lookup(ipv6, t, daddr, oif, strict)
        if f is not None:
            if f.type == RTN_THROW:
                continue
            return f
    return None


# ---------------------------------------------------------------------------
# The exception table (net/ipv6/route.c, rt6_exception_*)
# ---------------------------------------------------------------------------


@kernel("net/ipv6/route.c", "rt6_exception_hash")
def rt6_exception_hash(ipv6: Ipv6, daddr: int) -> int:
    """The chain of *daddr*: a keyed hash, so a sender cannot aim at one chain.

    Twin: netstack.ipv4.route.fnhe_hashfun.
    Kernel: net/ipv6/route.c, rt6_exception_hash() (jhash2 with a random
    seed; here a keyed BLAKE2b with the Net's ``rt6_exception_hash`` key).
    """
    key = ipv6.net.get_random_once("rt6_exception_hash")
    h = hashlib.blake2b(daddr.to_bytes(16, "big"), key=key, digest_size=4).digest()
    return int.from_bytes(h, "big") >> (32 - FIB6_EXCEPTION_BUCKET_SIZE_SHIFT)


@kernel("net/ipv6/route.c", "rt6_remove_exception")
def rt6_remove_exception(ipv6: Ipv6, nh: Fib6Nh, rt: Rt6Info) -> None:
    """Take one exception out of the table; holders see its route dead.

    Kernel: net/ipv6/route.c, rt6_remove_exception().
    """
    daddr = rt.rt6i_dst[0]
    if nh.exceptions.get(daddr) is rt:
        del nh.exceptions[daddr]
    chain = nh.exception_buckets.get(rt.ex_bucket)
    if chain is not None and rt in chain:
        chain.remove(rt)
        if not chain:
            del nh.exception_buckets[rt.ex_bucket]
    ipv6.fib_rt_cache -= 1
    rt.obsolete = 2  # DST_OBSOLETE_DEAD
    rt.release()


@kernel("net/ipv6/route.c", "rt6_exception_remove_oldest")
def rt6_exception_remove_oldest(ipv6: Ipv6, nh: Fib6Nh, chain: list[Rt6Info]) -> None:
    """A chain is too deep: drop its oldest exception.

    Twin: netstack.ipv4.route.fnhe_remove_oldest.
    Kernel: net/ipv6/route.c, rt6_exception_remove_oldest().
    """
    oldest = chain[0]
    for rt in chain:
        if rt.ex_stamp < oldest.ex_stamp:
            oldest = rt
    rt6_remove_exception(ipv6, nh, oldest)


@kernel("net/ipv6/route.c", "rt6_insert_exception")
def rt6_insert_exception(ipv6: Ipv6, nrt: Rt6Info, f: Fib6Info) -> int:
    """Put the RTF_CACHE clone *nrt* in its route's exception table (the table
    holds the reference). 0, or -EINVAL for a PMTU not below the route's.

    The chain of the destination is bounded: beyond ``FIB6_MAX_DEPTH`` plus a
    random part its oldest entries go, so a Packet Too Big flood for ever new
    destinations costs at most ``FIB6_EXCEPTION_BUCKET_SIZE`` chains of that
    depth per nexthop. Sockets' cached routes are checked again
    (``fib6_update_sernum``) and the GC is started for the expiry.

    Twin: netstack.ipv4.route.update_or_create_fnhe.
    Kernel: net/ipv6/route.c, rt6_insert_exception().
    """
    nh = f.nh
    if nrt.rt6i_pmtu:
        idev = nh.dev.ip6_ptr
        route_mtu = f.mtu or (idev.cnf.mtu6 if idev is not None else IPV6_MIN_MTU)
        if nrt.rt6i_pmtu >= route_mtu:  # rt6_mtu_change() lowered the route meanwhile
            return -errno.EINVAL
    daddr = nrt.rt6i_dst[0]
    old = nh.exceptions.get(daddr)
    if old is not None:
        rt6_remove_exception(ipv6, nh, old)
    bucket = rt6_exception_hash(ipv6, daddr)
    chain = nh.exception_buckets.get(bucket)
    if chain is None:
        chain = nh.exception_buckets[bucket] = []
    nrt.ex_bucket = bucket
    nrt.ex_stamp = ipv6.net.clock.jiffies
    chain.insert(0, nrt)
    nh.exceptions[daddr] = nrt
    ipv6.fib_rt_cache += 1
    # "Randomize max depth to avoid some side channels attacks."
    max_depth = FIB6_MAX_DEPTH + ipv6.net.rng.randrange(FIB6_MAX_DEPTH)
    while len(chain) > max_depth:
        rt6_exception_remove_oldest(ipv6, nh, chain)
    ipv6.rt6_genid_bump()  # fib6_update_sernum()
    nrt.genid = ipv6.rt6_genid
    ipv6.fib6.fib6_force_start_gc()
    if ipv6.fib_rt_cache > ipv6.ip6_rt_gc_thresh:  # dst_alloc() -> ip6_dst_gc()
        ipv6.fib6.ip6_dst_gc()
    return 0


@kernel("fib6_nh_flush_exceptions")
def fib6_nh_flush_exceptions(ipv6: Ipv6, nh: Fib6Nh) -> None:
    """Forget every exception of a nexthop. Kernel: fib6_nh_flush_exceptions()."""
    for rt in list(nh.exceptions.values()):
        rt6_remove_exception(ipv6, nh, rt)
    nh.exception_buckets.clear()


@kernel("ip6_pol_route")
def _cached_copy(ipv6: Ipv6, f: Fib6Info, daddr: int) -> Rt6Info:
    """The exception for *daddr*, else the route's cached copy.

    Kernel: ip6_pol_route().
    """
    nh = f.nh
    if nh.exceptions:
        ex = nh.exceptions.get(daddr)
        if ex is not None:
            if ex.expires and ipv6.net.clock.jiffies >= ex.expires:
                rt6_remove_exception(ipv6, nh, ex)  # rt6_age_exceptions()
            elif ex.genid == ipv6.rt6_genid:
                return ex.hold()
            else:
                # addresses or routes changed: rebuild the clone, keep the PMTU
                # (and its place in the table)
                new = ip6_rt_cache_alloc(ipv6, f, daddr)
                new.rt6i_pmtu = ex.rt6i_pmtu
                new.expires = ex.expires
                new.ex_bucket = ex.ex_bucket
                new.ex_stamp = ex.ex_stamp
                chain = nh.exception_buckets.get(ex.ex_bucket)
                if chain is not None and ex in chain:
                    chain[chain.index(ex)] = new
                ex.obsolete = 2
                ex.release()
                nh.exceptions[daddr] = new
                return new.hold()
    rt = nh.rt_cache
    if rt is not None and rt.genid == ipv6.rt6_genid and rt.from_ is f and rt.obsolete == -1:
        rt.refcnt += 1
        rt.holds += 1
        return rt
    rt = ip6_rt_copy(ipv6, f)
    old = nh.rt_cache
    if old is not None:
        old.obsolete = 2
        old.release()
    nh.rt_cache = rt.hold()  # the cache's own reference
    return rt


@kernel("ip6_pol_route")
def ip6_pol_route(ipv6: Ipv6, fl6: Flowi6, oif: int, flags: int) -> Rt6Info:
    """Route lookup shared by input and output; a held reference.

    Kernel: ip6_pol_route().
    """
    strict = flags & RT6_LOOKUP_F_IFACE
    if not ipv6.devconf_all.forwarding:
        strict |= RT6_LOOKUP_F_REACHABLE
    f = fib6_lookup(ipv6, fl6.daddr, oif, strict)
    if f is None:
        return ipv6.ip6_null_entry.hold()
    return _cached_copy(ipv6, f, fl6.daddr)


@kernel("rt6_need_strict")
def rt6_need_strict(daddr: int) -> bool:
    """Kernel: rt6_need_strict()."""
    return bool(ipv6_addr_type(daddr) & (IPV6_ADDR_MULTICAST | IPV6_ADDR_LINKLOCAL | 0x10))


@kernel("net/ipv6/route.c", "ip6_route_output_flags")
def ip6_route_output(ipv6: Ipv6, fl6: Flowi6, *, bound_dev_if: int = 0) -> Rt6Info:
    """Route a locally generated flow; never None (the null entry carries the error).

    Kernel: net/ipv6/route.c, ip6_route_output_flags().
    """
    flags = 0
    any_src = not fl6.saddr
    fl6.iif = 1
    if bound_dev_if or rt6_need_strict(fl6.daddr) or (fl6.oif and any_src):
        flags |= RT6_LOOKUP_F_IFACE
    if not any_src:
        flags |= RT6_LOOKUP_F_HAS_SADDR
    return ip6_pol_route(ipv6, fl6, fl6.oif, flags)


@kernel("net/ipv6/route.c", "ip6_route_input")
def ip6_route_input(ipv6: Ipv6, skb: SkBuff) -> None:
    """Set ``skb.dst`` for a received packet.

    Kernel: net/ipv6/route.c, ip6_route_input().
    """
    dev = skb.dev
    assert dev is not None
    nh = skb.network_header
    daddr = addr_at(skb.buf, nh + 24)
    flags = RT6_LOOKUP_F_HAS_SADDR
    if rt6_need_strict(daddr):
        flags |= RT6_LOOKUP_F_IFACE
    fl6 = Flowi6(daddr, addr_at(skb.buf, nh + 8), iif=dev.ifindex, mark=skb.mark)
    skb.dst = ip6_pol_route(ipv6, fl6, dev.ifindex, flags)


# ---------------------------------------------------------------------------
# Source address for a route (ip6_route_get_saddr)
# ---------------------------------------------------------------------------


@kernel("ip6_route_get_saddr")
def ip6_route_get_saddr(ipv6: Ipv6, f: Fib6Info | None, daddr: int, prefs: int = 0) -> int | None:
    """The route's preferred source, else source address selection.

    Kernel: ip6_route_get_saddr().
    """
    if f is not None and f.prefsrc:
        return f.prefsrc
    dev = f.nh.dev if f is not None else None
    return ipv6.ipv6_dev_get_saddr(dev, daddr, prefs)


# ---------------------------------------------------------------------------
# PMTU and link failure
# ---------------------------------------------------------------------------


@kernel("net/ipv6/route.c", "__ip6_rt_update_pmtu")
def rt6_update_pmtu(ipv6: Ipv6, rt: Rt6Info, daddr: int, saddr: int, mtu: int) -> None:
    """Learn *mtu* towards *daddr*: update an exception or create one.

    PTBs below the IPv6 minimum (1280) are ignored (RFC 8201 §4), and only a
    decrease is learnt.

    Twin: netstack.ipv4.route.ip_rt_update_pmtu.
    Kernel: net/ipv6/route.c, __ip6_rt_update_pmtu().
    """
    if mtu < IPV6_MIN_MTU or mtu >= rt.mtu():
        return
    now = ipv6.net.clock.jiffies
    expires = max(1, now + ipv6.ip6_rt_mtu_expires * ipv6.net.clock.hz)
    if rt.rt6i_flags & RTF_CACHE:
        rt.rt6i_pmtu = mtu  # rt6_do_update_pmtu()
        rt.expires = expires
        return
    f = rt.from_
    if f is None or f.dead:
        return
    nrt = ip6_rt_cache_alloc(ipv6, f, daddr)
    nrt.rt6i_pmtu = mtu
    nrt.expires = expires
    if rt6_insert_exception(ipv6, nrt, f):
        nrt.release()


@kernel("ip6_link_failure")
def ip6_link_failure(ipv6: Ipv6, skb: SkBuff) -> None:
    """Tell the sender the neighbour is unreachable.

    Kernel: ip6_link_failure().
    """
    ipv6.icmpv6_send(skb, ICMPV6_DEST_UNREACH, ICMPV6_ADDR_UNREACH, 0)
    rt = skb.dst
    if isinstance(rt, Rt6Info) and rt.rt6i_flags & RTF_CACHE:
        rt.expires = ipv6.net.clock.jiffies  # rt6_remove_exception_rt()


@kernel("ip6_pkt_drop")
def ip6_pkt_drop(ipv6: Ipv6, skb: SkBuff, code: int, output: bool) -> int:
    """Input/output of a reject route: count, ICMPv6 unreachable, drop.

    Kernel: ip6_pkt_drop().
    """
    mib = ipv6.ip6_mib
    if code == ICMPV6_NOROUTE:
        nh = skb.network_header
        dst_type = ipv6_addr_type(addr_at(skb.buf, nh + 24)) if nh >= 0 else 0
        if not output and dst_type == 0:  # IPV6_ADDR_ANY
            mib.InAddrErrors += 1
            kfree_skb(skb, DropReason.IP_INADDRERRORS)
            return 0
        if output:
            mib.OutNoRoutes += 1
        else:
            mib.InNoRoutes += 1
        reason = DropReason.IP_OUTNOROUTES if output else DropReason.IP_INNOROUTES
    else:
        reason = DropReason.IP_INNOROUTES
    ipv6.icmpv6_send(skb, ICMPV6_DEST_UNREACH, code, 0)
    kfree_skb(skb, reason)
    return 0


# ---------------------------------------------------------------------------
# Adding and deleting routes
# ---------------------------------------------------------------------------


def _extack(msg: str, err: int) -> ConfigError:
    return ConfigError(f"Error: {msg}.", err)


@kernel("ip6_route_check_nh")
def ip6_route_check_nh(ipv6: Ipv6, cfg: Fib6Config) -> NetDevice:
    """A non-link-local gateway must be reachable directly.

    Kernel: ip6_route_check_nh().
    """
    assert cfg.gw is not None
    oif = cfg.dev.ifindex if cfg.dev is not None else 0
    f = fib6_lookup(ipv6, cfg.gw, oif, RT6_LOOKUP_F_IFACE if oif else 0)
    if f is None or f.flags & RTF_REJECT or f.nh.gw:
        raise ConfigError("RTNETLINK answers: No route to host", errno.EHOSTUNREACH)
    if cfg.dev is not None and cfg.dev is not f.nh.dev:
        raise ConfigError("RTNETLINK answers: No route to host", errno.EHOSTUNREACH)
    return f.nh.dev


@kernel("ip6_validate_gw")
def ip6_validate_gw(ipv6: Ipv6, cfg: Fib6Config) -> NetDevice:
    """Check a gateway and find its device.

    Kernel: ip6_validate_gw().
    """
    gw = cfg.gw
    assert gw is not None
    gwa_type = ipv6_addr_type(gw)
    skip_dev = not gwa_type & IPV6_ADDR_LINKLOCAL
    dev = cfg.dev
    need_addr_check = dev is None
    if dev is not None and ipv6.ipv6_chk_addr(gw, None if skip_dev else dev, banned=0):
        raise _extack("Gateway can not be a local address", errno.EINVAL)
    if gwa_type != (IPV6_ADDR_LINKLOCAL | IPV6_ADDR_UNICAST):
        # "IPv6 strictly inhibits using not link-local addresses as nexthop
        # address … it is handy to allow some exceptions (SIT, PtP, NBMA NOARP
        # links)" — and IPv4-mapped nexthops (RFC 4798).
        if not gwa_type & (IPV6_ADDR_UNICAST | IPV6_ADDR_MAPPED):
            raise _extack("Invalid gateway address", errno.EINVAL)
        if cfg.onlink:
            if dev is None:
                raise _extack("Nexthop device required for onlink", errno.ENODEV)
            if not dev.flags & IFF_UP:
                raise _extack("Nexthop device is not up", errno.ENETDOWN)
        else:
            dev = ip6_route_check_nh(ipv6, cfg)
    if dev is None:
        raise _extack("Egress device not specified", errno.EINVAL)
    if dev.flags & IFF_LOOPBACK:
        raise _extack("Egress device can not be loopback device for this route", errno.EINVAL)
    if need_addr_check and ipv6.ipv6_chk_addr(gw, None if skip_dev else dev, banned=0):
        raise _extack("Gateway can not be a local address", errno.EINVAL)
    return dev


@kernel("ip6_route_info_create", "fib6_nh_init")
def ip6_route_info_create(ipv6: Ipv6, cfg: Fib6Config) -> Fib6Info:
    """Validate a request and build the route.

    Kernel: ip6_route_info_create() + fib6_nh_init().
    """
    if cfg.dst_len > 128:
        raise _extack("Invalid prefix length", errno.EINVAL)
    rtype = cfg.type
    flags = cfg.flags | RTF_UP
    dev = cfg.dev
    gw = 0
    if rtype in (RTN_BLACKHOLE, RTN_UNREACHABLE, RTN_PROHIBIT, RTN_THROW):
        flags |= RTF_REJECT
    addr_type = ipv6_addr_type(cfg.dst)
    if dev is not None and dev.flags & IFF_LOOPBACK and not addr_type & IPV6_ADDR_LOOPBACK:
        if not flags & (RTF_ANYCAST | RTF_LOCAL) and rtype == RTN_UNICAST:
            # "We cannot add true routes via loopback here, they would result
            # in kernel looping; promote them to reject routes"
            flags |= RTF_REJECT
            rtype = RTN_UNREACHABLE
    if flags & RTF_REJECT:
        dev = ipv6.loopback_dev
    else:
        if cfg.gw is not None:
            flags |= RTF_GATEWAY
            dev = ip6_validate_gw(ipv6, cfg)
            gw = cfg.gw
        if dev is None:
            raise ConfigError("RTNETLINK answers: No such device", errno.ENODEV)
        idev = dev.ip6_ptr
        if idev is None:
            raise ConfigError("RTNETLINK answers: No such device", errno.ENODEV)
        if idev.cnf.disable_ipv6:
            raise _extack("IPv6 is disabled on nexthop device", errno.EACCES)
        if not dev.flags & IFF_UP and not cfg.ignore_dev_down:
            raise _extack("Nexthop device is not up", errno.ENETDOWN)
    if cfg.prefsrc and not ipv6.ipv6_chk_addr(cfg.prefsrc, None, banned=0):
        raise _extack("Invalid source address", errno.EINVAL)
    nh_flags = RTNH_F_ONLINK if cfg.onlink else 0
    if dev is not None and not flags & (RTF_LOCAL | RTF_ANYCAST | RTF_REJECT) and not dev.carrier:
        nh_flags |= RTNH_F_LINKDOWN
    assert dev is not None
    nh = Fib6Nh(dev, gw, nh_flags)
    clock = ipv6.net.clock
    expires = 0
    if cfg.expires:
        flags |= RTF_EXPIRES
        expires = clock.jiffies + cfg.expires * clock.hz
    elif flags & RTF_EXPIRES:
        flags &= ~RTF_EXPIRES
    f = Fib6Info(
        cfg.table,
        cfg.dst & prefix_mask(cfg.dst_len),  # ipv6_addr_prefix(): host bits silently cleared
        cfg.dst_len,
        nh,
        metric=cfg.metric,
        flags=flags,
        rtype=rtype,
        protocol=cfg.protocol,
        expires=expires,
        prefsrc=cfg.prefsrc,
    )
    f.mtu = cfg.mtu
    f.mtu_lock = cfg.mtu_lock
    f.hoplimit = cfg.hoplimit
    f.fastopen_no_cookie = cfg.fastopen_no_cookie
    return f


@kernel("ip6_route_add")
def ip6_route_add(ipv6: Ipv6, cfg: Fib6Config) -> Fib6Info:
    """``ip -6 route add`` and the kernel's own routes.

    Kernel: ip6_route_add().
    """
    f = ip6_route_info_create(ipv6, cfg)
    table = ipv6.fib6.table(cfg.table, create=bool(cfg.nlflags & NLM_F_CREATE) or True)
    assert table is not None
    table.insert(f, cfg.nlflags)
    ipv6.fib6_changed(f)
    return f


@kernel("ip6_del_rt", "fib6_del")
def ip6_del_rt(ipv6: Ipv6, f: Fib6Info) -> None:
    """Remove a route.

    Kernel: ip6_del_rt() / fib6_del().
    """
    table = ipv6.fib6.tables.get(f.table)
    if table is not None:
        table.remove(f)
    _drop_copies(ipv6, f)
    ipv6.rt6_genid_bump()


def _drop_copies(ipv6: Ipv6, f: Fib6Info) -> None:
    nh = f.nh
    if nh.rt_cache is not None:
        nh.rt_cache.obsolete = 2
        nh.rt_cache.release()
        nh.rt_cache = None
    fib6_nh_flush_exceptions(ipv6, nh)


class Fib6:
    """The IPv6 FIB of one Net: tables by id, the GC timer for expiring routes."""

    def __init__(self, ipv6: Ipv6) -> None:
        self.ipv6 = ipv6
        self.tables: dict[int, Fib6Table] = {
            RT_TABLE_LOCAL: Fib6Table(RT_TABLE_LOCAL),
            RT_TABLE_MAIN: Fib6Table(RT_TABLE_MAIN),
        }
        self.gc_timer = ipv6.net.timers.timer(self.fib6_run_gc, "fib6_gc")
        self.gc_runs = 0

    @kernel("fib6_get_table", "fib6_new_table")
    def table(self, table_id: int, create: bool = False) -> Fib6Table | None:
        """Kernel: fib6_get_table() / fib6_new_table()."""
        t = self.tables.get(table_id)
        if t is None and create:
            t = self.tables[table_id] = Fib6Table(table_id)
        return t

    def routes(self) -> Iterator[Fib6Info]:
        for t in self.tables.values():
            yield from t.routes()

    @kernel("fib6_force_start_gc")
    def fib6_force_start_gc(self) -> None:
        """Arm the GC if it is not running.

        Kernel: fib6_force_start_gc().
        """
        if not self.gc_timer.pending:
            clock = self.ipv6.net.clock
            self.gc_timer.mod(clock.jiffies + self.ipv6.ip6_rt_gc_interval * clock.hz)

    @kernel("net/ipv6/route.c", "ip6_dst_gc")
    def ip6_dst_gc(self) -> None:
        """Too many cached routes: run the GC now, at most every ``gc_min_interval_ms``.

        Kernel: net/ipv6/route.c, ip6_dst_gc().
        """
        ipv6 = self.ipv6
        clock = ipv6.net.clock
        now = clock.jiffies
        if now < ipv6.ip6_rt_last_gc + ipv6.ip6_rt_gc_min_interval_ms * clock.hz // 1000:
            return
        ipv6.ip6_rt_last_gc = now
        self.fib6_run_gc()

    @kernel("fib6_run_gc")
    def fib6_run_gc(self) -> None:
        """Remove expired routes; re-arm while some still expire.

        Kernel: fib6_run_gc().
        """
        self.gc_runs += 1
        ipv6 = self.ipv6
        now = ipv6.net.clock.jiffies
        more = False
        for t in list(self.tables.values()):
            for f in t.routes():
                if f.flags & RTF_EXPIRES and f.expires:
                    if now > f.expires:
                        ip6_del_rt(ipv6, f)
                    else:
                        more = True
                nh = f.nh
                for ex in list(nh.exceptions.values()):
                    if ex.expires and now >= ex.expires:  # rt6_age_exceptions()
                        rt6_remove_exception(ipv6, nh, ex)
                    else:
                        more = True
        if more:
            clock = ipv6.net.clock
            self.gc_timer.mod(now + ipv6.ip6_rt_gc_interval * clock.hz)


def fib6_route_expires_in(ipv6: Ipv6, f: Fib6Info) -> int:
    """Seconds until a route expires (0 if it does not), as ``rt6_fill_node`` reports."""
    if not f.flags & RTF_EXPIRES or not f.expires:
        return 0
    clock = ipv6.net.clock
    return (f.expires - clock.jiffies) // clock.hz


def rt6_route_msg_flags(f: Fib6Info) -> int:
    """The nexthop flags a dump reports (RTNH_F_*)."""
    return f.nh.flags & (RTNH_F_ONLINK | RTNH_F_DEAD | RTNH_F_LINKDOWN)


def fib6_nh_devs(f: Fib6Info) -> NetDevice:
    return f.nh.dev
