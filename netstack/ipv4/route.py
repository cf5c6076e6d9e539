"""IPv4 routes as the data path uses them: ``rtable`` dst entries and the lookups.

Theory of operation::

    ip_route_output_key(fl4): source checks ─► fib lookup ─► local? (lo, RTCF_LOCAL)
        ─► choose saddr (prefsrc or inet_select_addr) ─► __mkroute_output:
           a cached rtable on the nexthop (or its PMTU exception) if still valid,
           else a new one, cached there
    ip_route_input_noref(skb): martian checks ─► broadcast? ─► fib lookup
        ─► local (ip_local_deliver) | forward (ip_forward, if forwarding is on)
        | no route / not forwarding (ip_error)

Routes are cached on FIB nexthops and invalidated wholesale by bumping
``rt_genid`` whenever the FIB or an address changes (kernel: ``rt_cache_flush``).
An output lookup returns a held reference (``dst_hold``); the skb or socket
that keeps the route releases it. An input lookup sets the route on the skb:
the nexthop's cached one without a reference (``skb_dst_set_noref``: the
skb's ``dst_noref`` mark, see :mod:`netstack.core.dst`), a new one with the
reference it was made with (``skb_dst_set``).

Path MTU: an ICMP "fragmentation needed" (or a tunnel) calls
:func:`ip_rt_update_pmtu`, which records a per-destination exception on the
nexthop with the learned MTU for ``ip_rt_mtu_expires`` (10 min); lookups for
that destination then return an rtable carrying it.

Kernel: net/ipv4/route.c, include/net/route.h.
"""

from __future__ import annotations

import errno
import hashlib
import struct
from typing import TYPE_CHECKING, Any, Final

from netstack.core.dst import DST_OBSOLETE_FORCE_CHK, DstEntry
from netstack.core.inetpeer import InetPeer
from netstack.core.netdevice import IFF_LOOPBACK, IFF_UP
from netstack.core.skbuff import DropReason, SkBuff, kfree_skb
from netstack.core.slotcopy import instance_allocator
from netstack.core.sock import sock_oserror
from netstack.ipv4.constants import (
    FLOWI_FLAG_ANYSRC,
    IP_MAX_MTU,
    RTCF_BROADCAST,
    RTCF_DOREDIRECT,
    RTCF_LOCAL,
    RTCF_MULTICAST,
    RTCF_REDIRECTED,
)
from netstack.ipv4.devinet import inet_select_addr
from netstack.ipv4.fib import FIB_PROPS_ERROR, FibNh, FibNhException, FibResult
from netstack.ipv4.igmp import ip_check_mc_rcv
from netstack.sites import TIMED, kernel, spend
from netstack.wire.icmp import (
    ICMP_DEST_UNREACH,
    ICMP_HOST_UNREACH,
    ICMP_NET_UNREACH,
    ICMP_PKT_FILTERED,
)
from netstack.wire.ipv4 import (
    INADDR_LOOPBACK,
    ipv4_is_lbcast,
    ipv4_is_local_multicast,
    ipv4_is_loopback,
    ipv4_is_multicast,
    ipv4_is_zeronet,
)
from netstack.wire.rtnetlink import (
    RT_SCOPE_HOST,
    RT_SCOPE_LINK,
    RT_SCOPE_UNIVERSE,
    RT_TABLE_LOCAL,
    RT_TABLE_MAIN,
    RTN_BLACKHOLE,
    RTN_BROADCAST,
    RTN_LOCAL,
    RTN_MULTICAST,
    RTN_PROHIBIT,
    RTN_THROW,
    RTN_UNICAST,
    RTN_UNREACHABLE,
    RTNH_F_DEAD,
)

if TYPE_CHECKING:
    from netstack.core.netdevice import NetDevice
    from netstack.core.sock import Sock
    from netstack.ipv4.devinet import InDevice
    from netstack.ipv4.netns import Ipv4

# errno values as constants: compiled code reads a Final name natively, where
# errno.X is an attribute of a module read by name (the route lookup's error paths,
# one of which every ARP request for another host takes)
EACCES: Final = errno.EACCES
EHOSTUNREACH: Final = errno.EHOSTUNREACH
EINVAL: Final = errno.EINVAL
ENETUNREACH: Final = errno.ENETUNREACH
ENODEV: Final = errno.ENODEV
_I: Final = struct.Struct("!I")
_II: Final = struct.Struct("!II")
# ip_route_input_noref's martian checks by first octet: 1 for an octet none of them
# looks at (not 0/8, 127/8, 224/4, 240/4 or 255): a source and a destination both
# so pass them all with one test
_UNICAST_OCTET: Final = bytes(1 if 0 < o < 224 and o != 127 else 0 for o in range(256))

__all__ = [
    "Flowi4",
    "InetPeer",
    "Rtable",
    "ip_dst_mtu_maybe_forward",
    "ip_route_input_noref",
    "ip_route_output_key",
    "ip_rt_update_pmtu",
    "update_or_create_fnhe",
]

IP_RT_MTU_EXPIRES_SECONDS: Final = 600  # net.ipv4.route.mtu_expires
FNHE_HASH_SHIFT: Final = 11
FNHE_HASH_SIZE: Final = 1 << FNHE_HASH_SHIFT
FNHE_RECLAIM_DEPTH: Final = 5
DST_OBSOLETE_DEAD: Final = 2
DST_OBSOLETE_KILL: Final = -2
IP_RT_ERROR_COST_HZ: Final = 1  # ip_rt_error_cost = HZ
IP_RT_ERROR_BURST_HZ: Final = 5  # ip_rt_error_burst = 5 * HZ
IP_RT_REDIRECT_NUMBER: Final = 9


class Flowi4:
    """A flow to route (kernel: ``struct flowi4``)."""

    __slots__ = (
        "daddr",
        "dport",
        "flags",
        "iif",
        "mark",
        "oif",
        "proto",
        "saddr",
        "scope",
        "sport",
        "tos",
    )

    def __init__(
        self,
        daddr: int,
        saddr: int = 0,
        *,
        oif: int = 0,
        tos: int = 0,
        proto: int = 0,
        scope: int = RT_SCOPE_UNIVERSE,
        flags: int = 0,
        mark: int = 0,
        sport: int = 0,
        dport: int = 0,
        iif: int = 1,
    ) -> None:
        self.daddr = daddr
        self.saddr = saddr
        self.oif = oif
        self.iif = iif
        self.tos = tos
        self.proto = proto
        self.scope = scope
        self.flags = flags
        self.mark = mark
        self.sport = sport
        self.dport = dport


class Rtable(DstEntry):
    """An IPv4 route for the data path (kernel: ``struct rtable``)."""

    __slots__ = (
        "fnhe",
        "ipv4",
        "metric_fastopen_no_cookie",
        "metric_mtu",
        "metric_mtu_locked",
        "rt_flags",
        "rt_genid",
        "rt_gw4",
        "rt_iif",
        "rt_is_input",
        "rt_mtu_locked",
        "rt_pmtu",
        "rt_table_id",
        "rt_type",
        "rt_uses_gateway",
    )

    def __init__(self, ipv4: Ipv4, dev: NetDevice, flags: int, rtype: int) -> None:
        # rt_dst_alloc() -> dst_alloc() -> dst_init(): DstEntry.__init__'s fields set
        # here, not through a call to it (a frame less per route: a bystander makes
        # one per overheard ARP request); test_fib_merge.py keeps the two in step
        self.dev = dev
        self.input = ipv4.dst_local_deliver if flags & RTCF_LOCAL else ipv4.dst_discard_in
        self.output = ipv4.dst_output
        self.error = 0
        self.refcnt = 1
        self.expires = 0
        self.lastuse = 0
        self.use = 0
        self.header_len = 0
        self.holds = 0
        self.releases = 0
        self.line = dev.net.cacheline("dst") if dev.net.cpus.model is not None else None
        # struct rtable's own fields
        self.ipv4 = ipv4
        self.obsolete = DST_OBSOLETE_FORCE_CHK
        self.rt_genid = ipv4.rt_genid
        self.rt_flags = flags
        self.rt_type = rtype
        self.rt_is_input = False
        self.rt_iif = 0
        self.rt_gw4 = 0
        self.rt_uses_gateway = False
        self.rt_pmtu = 0
        self.rt_mtu_locked = False  # a PMTU exception below ip_rt_min_pmtu locked it
        self.metric_mtu = 0  # the route's "mtu N" metric (RTAX_MTU)
        self.metric_mtu_locked = False  # "mtu lock N"
        self.metric_fastopen_no_cookie = 0  # RTAX_FASTOPEN_NO_COOKIE
        self.rt_table_id = 0  # the table the lookup matched (ip route get)
        self.fnhe: FibNhException | None = None

    @kernel("rt_cache_valid")
    def valid(self) -> bool:
        """Still usable from a cache? Kernel: rt_cache_valid()."""
        return self.rt_genid == self.ipv4.rt_genid and self.obsolete == DST_OBSOLETE_FORCE_CHK

    @kernel("ipv4_mtu")
    def mtu(self) -> int:
        """Kernel: ipv4_mtu(). ``udp_sendmsg`` has the case of a route with no
        PMTU, metric or lock written out, :meth:`update_pmtu` the case of a
        learnt PMTU (keep the three in step)."""
        mtu = self.rt_pmtu
        if mtu and self.expires and self.ipv4.net.clock.jiffies >= self.expires:
            mtu = 0
        if not mtu:
            mtu = self.metric_mtu
        if not mtu:
            dev = self.dev
            mtu = dev.mtu if dev is not None else 1500
            if (
                (self.rt_mtu_locked or self.metric_mtu_locked)
                and self.rt_uses_gateway
                and mtu > 576
            ):
                mtu = 576
        return mtu if mtu < IP_MAX_MTU else IP_MAX_MTU

    @kernel("rt_nexthop")
    def nexthop(self, daddr: int) -> int:
        """The address to resolve. Kernel: rt_nexthop()."""
        return self.rt_gw4 if self.rt_uses_gateway else daddr

    @kernel("ip_rt_update_pmtu", "__ip_rt_update_pmtu", "ipv4_mtu")
    def update_pmtu(self, skb: SkBuff | None, mtu: int) -> None:
        """PMTU learnt for the IPv4 packet *skb*. Kernel: ip_rt_update_pmtu().

        Written out first, outside timed mode: __ip_rt_update_pmtu()'s tests that
        leave everything as it is (keep in step with :func:`ip_rt_update_pmtu`;
        ipv4_mtu() for a learnt PMTU, with one read of the clock for both),
        before the flow key's addresses are read from the packet (the kernel's
        ip_rt_build_flow_key, whose result only its FIB lookup uses). A tunnel
        calls this for every packet (tnl_update_pmtu) with an MTU that does not
        shrink the route's. Timed mode calls :func:`ip_rt_update_pmtu` as
        before, where its charge is.
        """
        if skb is None:
            return
        if not TIMED:
            if self.rt_mtu_locked or (self.metric_mtu and self.metric_mtu_locked):
                return  # ip_mtu_locked()
            ipv4 = self.ipv4
            clock = ipv4.net.clock
            now = clock.jiffies  # read once for ipv4_mtu() and the test below
            expires = self.expires
            pmtu = self.rt_pmtu
            if pmtu and (not expires or now < expires):
                # ipv4_mtu(), its first case written out (keep in step with mtu())
                old_mtu = pmtu if pmtu < IP_MAX_MTU else IP_MAX_MTU
            else:
                old_mtu = self.mtu()
            if old_mtu < mtu:
                return
            if (
                pmtu == mtu
                and mtu >= ipv4.ip_rt_min_pmtu  # else locked at min_pmtu: learnt
                and expires
                and now < expires - ipv4.ip_rt_mtu_expires * clock.hz // 2
            ):
                return
        saddr, daddr = _II.unpack_from(skb.buf, skb.network_header + 12)
        ip_rt_update_pmtu(self.ipv4, self, daddr, mtu, saddr)

    @kernel("ipv4_link_failure")
    def link_failure(self, skb: SkBuff) -> None:
        """Kernel: ipv4_link_failure()."""
        ipv4_link_failure(self.ipv4, skb)


@kernel("include/net/ip.h", "ip_dst_mtu_maybe_forward")
def ip_dst_mtu_maybe_forward(ipv4: Ipv4, rt: Rtable, forwarding: bool) -> int:
    """The MTU for a packet leaving by *rt*; a forwarded one ignores a learnt PMTU.

    A forwarded packet (*forwarding*) uses the route's PMTU only with
    ``net.ipv4.ip_forward_use_pmtu`` or a locked MTU (commit f87c10a8aa1e:
    ICMP "fragmentation needed" from anyone must not shrink the MTU a router
    forwards everyone's traffic with); else the route's ``mtu`` metric, else
    the device's.

    Kernel: include/net/ip.h, ip_dst_mtu_maybe_forward().
    """
    locked = rt.rt_mtu_locked or rt.metric_mtu_locked  # ip_mtu_locked()
    mtu = 0
    if ipv4.ip_fwd_use_pmtu or locked or not forwarding:
        mtu = rt.rt_pmtu
        if mtu and rt.expires and ipv4.net.clock.jiffies >= rt.expires:
            mtu = 0
    if not mtu:
        mtu = rt.metric_mtu
        if not mtu:
            dev = rt.dev
            mtu = dev.mtu if dev is not None else 1500
            if locked and rt.rt_uses_gateway and mtu > 576:
                mtu = 576
    return mtu if mtu < IP_MAX_MTU else IP_MAX_MTU


# ---------------------------------------------------------------------------
# Output routes
# ---------------------------------------------------------------------------


@kernel("rt_set_nexthop")
def _rt_set_nexthop(
    rt: Rtable, daddr: int, res: FibResult | None, fnhe: FibNhException | None
) -> None:
    """Kernel: rt_set_nexthop()."""
    if res is not None and res.nh is not None:
        nh = res.nh
        if nh.gw and nh.scope == RT_SCOPE_LINK:
            rt.rt_gw4 = nh.gw
            rt.rt_uses_gateway = True
        fi = res.fi
        rt.metric_mtu = fi.mtu
        rt.metric_mtu_locked = fi.mtu_lock
        rt.metric_fastopen_no_cookie = fi.fastopen_no_cookie
        rt.rt_table_id = res.table
    if fnhe is not None:
        rt.fnhe = fnhe
        if fnhe.gw:
            rt.rt_gw4 = fnhe.gw
            rt.rt_uses_gateway = True
        rt.rt_pmtu = fnhe.pmtu
        rt.rt_mtu_locked = fnhe.mtu_locked
        rt.expires = fnhe.expires


@kernel("net/ipv4/route.c", "fnhe_hashfun")
def fnhe_hashfun(ipv4: Ipv4, daddr: int) -> int:
    """The exception chain of *daddr*: a keyed hash, so a sender cannot aim at one chain.

    Twin: netstack.ipv6.route.rt6_exception_hash.
    Kernel: net/ipv4/route.c, fnhe_hashfun() (siphash_1u32 with a boot-time key;
    here a keyed BLAKE2b with the Net's ``fnhe_hash_key``).
    """
    key = ipv4.net.get_random_once("fnhe_hash_key")
    h = hashlib.blake2b(_I.pack(daddr), key=key, digest_size=8).digest()
    return int.from_bytes(h, "big") >> (64 - FNHE_HASH_SHIFT)


@kernel("fnhe_flush_routes")
def fnhe_flush_routes(fnhe: FibNhException) -> None:
    """The exception's cached route dies. Kernel: fnhe_flush_routes()."""
    rt = fnhe.rth
    if rt is not None:
        rt.obsolete = DST_OBSOLETE_DEAD
        fnhe.rth = None


@kernel("net/ipv4/route.c", "ip_del_fnhe")
def ip_del_fnhe(nh: FibNh, daddr: int) -> None:
    """Remove the exception for *daddr*. Kernel: net/ipv4/route.c, ip_del_fnhe()."""
    fnhe = nh.exceptions.pop(daddr, None)
    if fnhe is None:
        return
    chain = nh.fnhe_hash.get(fnhe.bucket)
    if chain is not None:
        chain.remove(fnhe)
        if not chain:
            del nh.fnhe_hash[fnhe.bucket]
    fnhe_flush_routes(fnhe)


@kernel("net/ipv4/route.c", "fnhe_remove_oldest")
def fnhe_remove_oldest(nh: FibNh, chain: list[FibNhException]) -> None:
    """Make room in a full chain: drop the least recently updated exception.

    Twin: netstack.ipv6.route.rt6_exception_remove_oldest.
    Kernel: net/ipv4/route.c, fnhe_remove_oldest().
    """
    oldest = chain[0]
    for fnhe in chain:
        if fnhe.stamp < oldest.stamp:  # time_before(): the first of the oldest from the head
            oldest = fnhe
    fnhe_flush_routes(oldest)
    chain.remove(oldest)
    del nh.exceptions[oldest.daddr]


@kernel("net/ipv4/route.c", "fill_route_from_fnhe")
def fill_route_from_fnhe(rt: Rtable, fnhe: FibNhException) -> None:
    """Copy an exception's PMTU and gateway into its cached route.

    Kernel: net/ipv4/route.c, fill_route_from_fnhe().
    """
    rt.rt_pmtu = fnhe.pmtu
    rt.rt_mtu_locked = fnhe.mtu_locked
    rt.expires = fnhe.expires
    if fnhe.gw:
        rt.rt_flags |= RTCF_REDIRECTED
        rt.rt_uses_gateway = True
        rt.rt_gw4 = fnhe.gw


@kernel("net/ipv4/route.c", "update_or_create_fnhe")
def update_or_create_fnhe(
    ipv4: Ipv4, nh: FibNh, daddr: int, gw: int, pmtu: int, lock: bool, expires: int
) -> FibNhException:
    """Record a PMTU (or redirect gateway) for one destination behind *nh*.

    An existing exception is updated along with its cached route. A new one
    goes at the head of its hash chain; a chain deeper than
    ``FNHE_RECLAIM_DEPTH`` plus a random part first loses its oldest entries,
    and the nexthop's cached routes are marked ``DST_OBSOLETE_KILL`` so that
    holders look again and find the exception.

    Twin: netstack.ipv6.route.rt6_insert_exception.
    Kernel: net/ipv4/route.c, update_or_create_fnhe().
    """
    fnhe = nh.exceptions.get(daddr)
    now = ipv4.net.clock.jiffies
    if fnhe is not None:
        if gw:
            fnhe.gw = gw
        if pmtu:
            fnhe.pmtu = pmtu
            fnhe.mtu_locked = lock
        fnhe.expires = max(1, expires)
        if fnhe.rth is not None:
            fill_route_from_fnhe(fnhe.rth, fnhe)
    else:
        bucket = fnhe_hashfun(ipv4, daddr)
        chain = nh.fnhe_hash.get(bucket)
        if chain is None:
            chain = nh.fnhe_hash[bucket] = []
        # "Randomize max depth to avoid some side channels attacks."
        max_depth = FNHE_RECLAIM_DEPTH + ipv4.net.rng.randrange(FNHE_RECLAIM_DEPTH)
        depth = len(chain)
        while depth > max_depth:
            fnhe_remove_oldest(nh, chain)
            depth -= 1
        fnhe = FibNhException(daddr, bucket)
        fnhe.genid = ipv4.rt_genid
        fnhe.gw = gw
        fnhe.pmtu = pmtu
        fnhe.mtu_locked = lock
        fnhe.expires = max(1, expires)
        chain.insert(0, fnhe)
        nh.exceptions[daddr] = fnhe
        ipv4.fnhe_created += 1
        # "Exception created; mark the cached routes for the nexthop stale, so
        # anyone caching it rechecks if this exception applies to them."
        rt = nh.rth_input
        if rt is not None:
            rt.obsolete = DST_OBSOLETE_KILL
        for rt in nh.rth_output.values():
            rt.obsolete = DST_OBSOLETE_KILL
    fnhe.stamp = now
    return fnhe


def _find_exception(ipv4: Ipv4, nh: FibNh, daddr: int) -> FibNhException | None:
    """The live exception for *daddr*, an expired one removed on the way.

    This is net/ipv4/route.c's find_exception(), which the compiler inlines
    into __mkroute_output(): no timed-mode cost site of its own.
    """
    fnhe = nh.exceptions.get(daddr)
    if fnhe is not None and fnhe.expires and ipv4.net.clock.jiffies > fnhe.expires:
        ip_del_fnhe(nh, daddr)  # expired
        return None
    return fnhe


@kernel("__mkroute_output")
def __mkroute_output(
    ipv4: Ipv4,
    res: FibResult | None,
    fl4: Flowi4,
    orig_oif: int,
    dev_out: NetDevice,
    flags: int,
    rtype: int,
) -> Rtable | int:
    """Build (or reuse) the rtable for an output flow. Kernel: __mkroute_output()."""
    if TIMED:
        spend("__mkroute_output")
    daddr = fl4.daddr
    if ipv4_is_loopback(fl4.saddr) and not dev_out.flags & IFF_LOOPBACK:
        return -EINVAL
    if ipv4_is_lbcast(daddr):
        rtype = RTN_BROADCAST
    elif ipv4_is_multicast(daddr):
        rtype = RTN_MULTICAST
    elif ipv4_is_zeronet(daddr):
        return -EINVAL
    if dev_out.flags & IFF_LOOPBACK:
        flags |= RTCF_LOCAL
    do_cache = True
    if rtype == RTN_BROADCAST:
        flags |= RTCF_BROADCAST | RTCF_LOCAL
        res = None
    elif rtype == RTN_MULTICAST:
        flags |= RTCF_MULTICAST | RTCF_LOCAL
        res = None
    fnhe: FibNhException | None = None
    nh = res.nh if res is not None else None
    do_cache = do_cache and nh is not None
    if nh is not None:
        fnhe = _find_exception(ipv4, nh, daddr)
        if fnhe is not None:
            rth = fnhe.rth
        else:
            rth = nh.rth_output.get(ipv4.net.cpus.current.id) if rtype == RTN_UNICAST else None
            do_cache = rtype == RTN_UNICAST
        if rth is not None and rth.valid() and rth.dev is dev_out and rth.rt_flags == flags:
            rth.hold()
            cached: Rtable = rth
            return cached
    rth = Rtable(ipv4, dev_out, flags, rtype)
    rth.rt_iif = orig_oif
    if (
        flags & (RTCF_BROADCAST | RTCF_MULTICAST)
        and flags & RTCF_LOCAL
        and not dev_out.flags & IFF_LOOPBACK
    ):
        rth.output = ipv4.dst_mc_output
    _rt_set_nexthop(rth, daddr, res, fnhe)
    if do_cache and nh is not None:
        rth.hold()  # the cache's own reference
        if fnhe is not None:
            fnhe.rth = rth
        else:
            nh.rth_output[ipv4.net.cpus.current.id] = rth
    return rth


def ip_route_sock_flow(
    ipv4: Ipv4, sk: Sock, daddr: int, dport: int, proto: int
) -> tuple[Rtable, Flowi4]:
    """Route a socket's flow to *daddr*:*dport*; a failure raises as the socket call does.

    The flow carries what ip_route_connect_init() takes from the socket (source
    address, bound device, TOS, ports). No route counts ``OutNoRoutes``; the
    error becomes the call's OSError (ENETUNREACH, EHOSTUNREACH…). Used by TCP
    connect, UDP connect and unconnected UDP sends; each checks the route's
    type (broadcast, multicast) itself.
    """
    fl4 = Flowi4(
        daddr,
        sk.inet_saddr,
        oif=sk.sk_bound_dev_if,
        tos=sk.tos,
        proto=proto,
        sport=sk.inet_sport,
        dport=dport,
    )
    rt = ipv4.ip_route_output_key(fl4)
    if isinstance(rt, int):
        if rt == -ENETUNREACH:
            ipv4.ip.OutNoRoutes += 1
        raise sock_oserror(-rt)
    return rt, fl4


@kernel("net/ipv4/route.c", "ip_route_output_key_hash_rcu")
def ip_route_output_key(ipv4: Ipv4, fl4: Flowi4) -> Rtable | int:
    """Route a locally generated flow; fills ``fl4.saddr``. Returns an rtable or -errno.

    Kernel: net/ipv4/route.c, ip_route_output_key_hash_rcu().
    """
    if TIMED:
        spend("ip_route_output_key_hash_rcu")
    net = ipv4.net
    orig_oif = fl4.oif
    flags = 0
    daddr = fl4.daddr
    saddr = fl4.saddr
    dev_out: NetDevice | None = None
    if saddr:
        if ipv4_is_multicast(saddr) or ipv4_is_lbcast(saddr) or ipv4_is_zeronet(saddr):
            return -EINVAL
        if not fl4.oif and (ipv4_is_multicast(daddr) or ipv4_is_lbcast(daddr)):
            dev_out = ipv4.ip_dev_find(saddr)
            if dev_out is None:
                return -EINVAL
            fl4.oif = dev_out.ifindex
            return __mkroute_output(ipv4, None, fl4, orig_oif, dev_out, flags, RTN_UNICAST)
        if not fl4.flags & FLOWI_FLAG_ANYSRC and ipv4.ip_dev_find(saddr) is None:
            return -EINVAL
    if fl4.oif:
        dev_out = net.dev_get_by_index(fl4.oif)
        if dev_out is None:
            return -ENODEV
        if dev_out.ip_ptr is None or not dev_out.flags & IFF_UP:
            return -ENETUNREACH
        if ipv4_is_local_multicast(daddr) or ipv4_is_lbcast(daddr):
            if not saddr:
                fl4.saddr = inet_select_addr(ipv4, dev_out, 0, RT_SCOPE_LINK)
            return __mkroute_output(ipv4, None, fl4, orig_oif, dev_out, flags, RTN_UNICAST)
        if not saddr:
            if ipv4_is_multicast(daddr):
                fl4.saddr = inet_select_addr(ipv4, dev_out, 0, fl4.scope)
            elif not daddr:
                fl4.saddr = inet_select_addr(ipv4, dev_out, 0, RT_SCOPE_HOST)
    if not fl4.daddr:
        fl4.daddr = fl4.saddr
        if not fl4.daddr:
            fl4.daddr = fl4.saddr = INADDR_LOOPBACK
        lo = ipv4.loopback_dev
        fl4.oif = lo.ifindex
        return __mkroute_output(ipv4, None, fl4, orig_oif, lo, flags | RTCF_LOCAL, RTN_LOCAL)
    res = ipv4.fib.lookup(fl4.daddr, fl4.oif, fl4.scope, fl4.saddr, fl4.iif)
    err = ENETUNREACH if res is None else FIB_PROPS_ERROR.get(res.type, 0)
    if err:
        # any fib_lookup error (no route, or an unreachable / prohibit / blackhole
        # route or rule) with an output device given:
        if fl4.oif and dev_out is not None:
            # "Apparently, routing tables are wrong. Assume, that the destination is on link."
            if not fl4.saddr:
                fl4.saddr = inet_select_addr(ipv4, dev_out, 0, RT_SCOPE_LINK)
            return __mkroute_output(ipv4, None, fl4, orig_oif, dev_out, flags, RTN_UNICAST)
        return -err
    assert res is not None
    if res.type == RTN_LOCAL:
        if not fl4.saddr:
            fl4.saddr = res.fi.prefsrc or fl4.daddr
        lo = ipv4.loopback_dev
        fl4.oif = lo.ifindex
        return __mkroute_output(ipv4, res, fl4, orig_oif, lo, flags | RTCF_LOCAL, RTN_LOCAL)
    nh = res.nh
    assert nh is not None
    dev_out = nh.dev
    if not fl4.saddr:
        fl4.saddr = res.fi.prefsrc or inet_select_addr(ipv4, dev_out, nh.gw, res.scope)
    return __mkroute_output(ipv4, res, fl4, orig_oif, dev_out, flags, res.type)


@kernel("ip_route_output")
def ip_route_output(
    ipv4: Ipv4, daddr: int, saddr: int = 0, *, tos: int = 0, oif: int = 0, proto: int = 0
) -> Rtable | int:
    """Convenience wrapper. Kernel: ip_route_output()."""
    if TIMED:
        spend("ip_route_output")
    return ip_route_output_key(ipv4, Flowi4(daddr, saddr, oif=oif, tos=tos, proto=proto))


# ---------------------------------------------------------------------------
# Input routes
# ---------------------------------------------------------------------------


def _mkroute_input_local(
    ipv4: Ipv4, dev: NetDevice, flags: int, rtype: int, res: FibResult | None
) -> Rtable:
    rt = Rtable(ipv4, ipv4._loopback or ipv4.loopback_dev, flags | RTCF_LOCAL, rtype)
    rt.rt_is_input = True
    rt.rt_iif = dev.ifindex
    rt.output = dst_ip_rt_bug
    return rt


@kernel(
    "net/ipv4/route.c",
    "ip_route_input_slow",
    "fib_table_lookup",
    "__mkroute_input",
    "skb_dst_set_noref",
)
def ip_route_input_noref(
    ipv4: Ipv4, skb: SkBuff, daddr: int, saddr: int, tos: int, dev: NetDevice
) -> int:
    """Route a received packet: set ``skb.dst``; 0 or -errno.

    A route cached on the nexthop (forwarding, ``nhc_rth_input``, or local,
    ``local_input``) is set without a reference (``skb_dst_set_noref``, the
    skb's ``dst_noref`` mark); a new one with the reference it was made with.
    ``fib_lookup`` (a static inline) with ``fib_table_lookup``, and
    ``__mkroute_input``'s cached route, are written out (keep them in step
    with ``Fib.lookup``, ``FibTable.lookup`` and ``_mkroute_input``).

    Kernel: net/ipv4/route.c, ip_route_input_slow() / fib_table_lookup() /
    __mkroute_input() / skb_dst_set_noref().
    """
    if TIMED:
        spend("ip_route_input_slow")
    in_dev = dev.ip_ptr
    if in_dev is None:
        return -EINVAL
    # Martian checks (multicast 224/4, limited broadcast, 0/8, loopback 127/8) on
    # the first octets: small ints, where masks above 2**30 take CPython's slow path
    s8 = saddr >> 24
    d8 = daddr >> 24
    if not (_UNICAST_OCTET[s8] and _UNICAST_OCTET[d8]):
        # one of them is in 0/8, 127/8, 224/3 or 255/8: the checks one by one (two
        # unicast octets pass them all)
        if 224 <= s8 < 240 or saddr == 0xFFFFFFFF:
            ipv4.martian_source(skb, daddr, saddr, dev)
            return -EINVAL
        if daddr == 0xFFFFFFFF or (saddr == 0 and daddr == 0):
            return _brd_input(ipv4, skb, dev, saddr)
        if s8 == 0:
            # source 0.0.0.0/8 is only valid towards the limited broadcast (DHCP)
            ipv4.martian_source(skb, daddr, saddr, dev)
            return -EINVAL
        if d8 == 0:
            ipv4.martian_destination(skb, daddr, saddr, dev)
            return -EINVAL
        if (
            (d8 == 127 or s8 == 127)
            and not dev.flags & IFF_LOOPBACK
            and not in_dev.orconf("route_localnet")
        ):
            if d8 == 127:
                ipv4.martian_destination(skb, daddr, saddr, dev)
            else:
                ipv4.martian_source(skb, daddr, saddr, dev)
            return -EINVAL
        if 224 <= d8 < 240:
            # ip_route_input_rcu()'s multicast branch: ours only if the device joined
            # the group (no multicast routing: mc_forwarding is never set)
            proto = skb.buf[skb.network_header + 9]
            if ip_check_mc_rcv(in_dev, daddr, saddr, proto):
                return ip_route_input_mc(ipv4, skb, daddr, saddr, dev)
            return -EINVAL
    fib = ipv4.fib
    if fib.fib_has_custom_rules:
        res = fib.lookup(daddr, 0, RT_SCOPE_UNIVERSE, saddr, dev.ifindex)
    else:
        # fib_lookup(), a static inline of include/net/ip_fib.h, inline as Fib.lookup
        # does it with the tables merged: the main table's walk (local merged in),
        # then the default table on a miss or a throw; the same charges
        # fib_table_lookup() (out of line in fib_trie.c) written out as FibTable.lookup
        # with no oif, universe scope (a frame less a packet; keep the two in step)
        if TIMED:
            spend("fib_table_lookup")
        fa = None
        for mask, level in fib.main.tb_data.levels:
            bucket = level.get(daddr & mask)
            if bucket:
                for fa in bucket:
                    fi = fa.fi
                    if fi.dead:
                        continue
                    nh = fi.nh
                    if nh is not None and nh.flags & RTNH_F_DEAD:
                        continue
                    break
                else:
                    fa = None
                    continue
                break
        if TIMED and (fa is None or fa.table != RT_TABLE_LOCAL):
            spend("fib_table_lookup")  # the local table's walk: see Fib.lookup
        if fa is None or fa.type == RTN_THROW:
            res = fib.lookup_default(daddr, 0, RT_SCOPE_UNIVERSE)
        else:
            res = fa.res
            if res is None:
                res = fa.res = FibResult(fa, RT_TABLE_MAIN)
    if res is None:
        err = ENETUNREACH if in_dev.cnf.forwarding else EHOSTUNREACH
    else:
        rtype = res.type
        if rtype == RTN_UNICAST:  # tested first: forwarding is the hot case
            if in_dev.cnf.forwarding:
                # __mkroute_input() (static), inline when it takes the nexthop's cached
                # route (nhc_rth_input): out by another device, no exception, not
                # from one of our addresses; rt_cache_valid() and dst_hold() inline
                fnh = res.nh
                assert fnh is not None
                rt = fnh.rth_input
                out_dev = fnh.dev
                if (
                    rt is not None
                    and rt.rt_genid == ipv4.rt_genid
                    and rt.obsolete == -1
                    and out_dev is not dev
                    and not fnh.exceptions
                    and saddr not in ipv4.inet_addr_lst
                    and out_dev.ip_ptr is not None
                ):
                    # skb_dst_set_noref(): no reference (timed mode charges the
                    # dst_hold it charged before the mark)
                    skb.dst = rt
                    skb.dst_noref = True
                    line = rt.line
                    if line is not None:
                        line.write("dst_hold", atomic=True)
                    return 0
                return _mkroute_input(ipv4, skb, res, in_dev, dev, daddr, saddr)
        elif rtype == RTN_LOCAL:
            if (
                saddr in ipv4.inet_addr_lst
                and not dev.flags & IFF_LOOPBACK
                and ipv4.fib_validate_source(saddr, dev, in_dev)
            ):
                ipv4.martian_source(skb, daddr, saddr, dev)
                return -EINVAL
            nh = res.nh
            rt = nh.rth_input if nh is not None else None
            if rt is not None and rt.rt_genid == ipv4.rt_genid and rt.obsolete == -1:
                # local_input: skb_dst_set_noref() (timed mode charges the dst_hold
                # it charged before the mark)
                skb.dst = rt
                skb.dst_noref = True
                line = rt.line
                if line is not None:
                    line.write("dst_hold", atomic=True)
                return 0
            rt = _mkroute_input_local(ipv4, dev, 0, RTN_LOCAL, res)
            if nh is not None:  # cache it on the nexthop (do_cache: rt_cache_route)
                rt.hold()
                nh.rth_input = rt
            skb.dst = rt  # skb_dst_set(): the new route's reference passes to the skb
            return 0
        elif rtype == RTN_BROADCAST:
            if saddr in ipv4.inet_addr_lst and ipv4.fib_validate_source(saddr, dev, in_dev):
                ipv4.martian_source(skb, daddr, saddr, dev)
                return -EINVAL
            return _brd_input(ipv4, skb, dev, saddr)
        elif in_dev.cnf.forwarding:
            if rtype in (RTN_UNREACHABLE, RTN_PROHIBIT, RTN_BLACKHOLE):
                return _reject_route(ipv4, skb, dev, rtype)
            ipv4.martian_destination(skb, daddr, saddr, dev)  # not RTN_UNICAST
            return -EINVAL
        err = EHOSTUNREACH  # not forwarding
    # no_route: then local_input with res->fi NULL, so rt_dst_alloc(net->loopback_dev,
    # RTCF_LOCAL, RTN_UNREACHABLE) every time, nothing cached; the input ip_error()
    # and RTCF_LOCAL cleared (a label of this function, not a call: no frame)
    if TIMED:
        spend("ip_route_input_slow")
    ipv4.in_no_route += 1  # RT_CACHE_STAT_INC(in_no_route), for every way into no_route
    # net->loopback_dev: the property's cached device read directly (a frame less)
    lo = ipv4._loopback or ipv4.loopback_dev
    alloc = _alloc_rtable
    if alloc is None:  # a native Rtable (the mypyc build): the constructor, then the changes
        rt = Rtable(ipv4, lo, RTCF_LOCAL, RTN_UNREACHABLE)
        rt.rt_flags = 0  # &= ~RTCF_LOCAL
        rt.rt_is_input = True
        rt.rt_iif = dev.ifindex
        rt.input = dst_ip_error
        rt.output = dst_ip_rt_bug
        rt.error = err
    else:
        # rt_dst_alloc() (Rtable.__init__, dst_init) and local_input's changes for
        # RTN_UNREACHABLE written out, one store a field with its final value: a
        # bystander allocates one for every ARP request it overhears (the
        # constructor's call and the fields set twice were a fifth of the route;
        # keep in step with Rtable.__init__: tests/ipv4/test_fib_merge.py compares
        # the two field by field)
        net = lo.net
        rt = alloc(Rtable)
        rt.dev = lo
        rt.input = dst_ip_error  # ip_error
        rt.output = dst_ip_rt_bug  # ip_rt_bug
        rt.error = err
        rt.refcnt = 1
        rt.expires = 0
        rt.lastuse = 0
        rt.use = 0
        rt.header_len = 0
        rt.holds = 0
        rt.releases = 0
        rt.line = None if net.cpus.model is None else net.cacheline("dst")
        rt.ipv4 = ipv4
        rt.obsolete = DST_OBSOLETE_FORCE_CHK
        rt.rt_genid = ipv4.rt_genid
        rt.rt_flags = 0  # RTCF_LOCAL cleared
        rt.rt_type = RTN_UNREACHABLE
        rt.rt_is_input = True
        rt.rt_iif = dev.ifindex
        rt.rt_gw4 = 0
        rt.rt_uses_gateway = False
        rt.rt_pmtu = 0
        rt.rt_mtu_locked = False
        rt.metric_mtu = 0
        rt.metric_mtu_locked = False
        rt.metric_fastopen_no_cookie = 0
        rt.rt_table_id = 0
        rt.fnhe = None
    skb.dst = rt
    return 0


def _reject_route(ipv4: Ipv4, skb: SkBuff, dev: NetDevice, rtype: int) -> int:
    err = FIB_PROPS_ERROR[rtype]
    ipv4.in_no_route += 1  # fib_lookup()'s error goes to no_route too
    rt = _mkroute_input_local(ipv4, dev, 0, rtype, None)
    rt.rt_flags &= ~RTCF_LOCAL
    rt.input = dst_ip_error
    rt.error = err
    skb.dst = rt
    return 0


def _brd_input(ipv4: Ipv4, skb: SkBuff, dev: NetDevice, saddr: int) -> int:
    if skb.protocol != 0x0800:
        return -EINVAL
    ipv4.in_brd += 1
    rt = _mkroute_input_local(ipv4, dev, RTCF_BROADCAST, RTN_BROADCAST, None)
    skb.dst = rt
    return 0


@kernel("ip_route_input_mc")
def ip_route_input_mc(ipv4: Ipv4, skb: SkBuff, daddr: int, saddr: int, dev: NetDevice) -> int:
    """A joined group: a local RTN_MULTICAST route. Kernel: ip_route_input_mc()."""
    in_dev = dev.ip_ptr
    if in_dev is None or skb.protocol != 0x0800:
        return -EINVAL
    if saddr in ipv4.inet_addr_lst and ipv4.fib_validate_source(saddr, dev, in_dev):
        return -EINVAL
    skb.dst = _mkroute_input_local(ipv4, dev, RTCF_MULTICAST, RTN_MULTICAST, None)
    return 0


@kernel("__mkroute_input", "skb_dst_set_noref")
def _mkroute_input(
    ipv4: Ipv4,
    skb: SkBuff,
    res: FibResult,
    in_dev: InDevice,
    in_dev_dev: NetDevice,
    daddr: int,
    saddr: int,
) -> int:
    """A forwarding route: the nexthop's cached one set without a reference.

    Kernel: __mkroute_input() / skb_dst_set_noref().
    """
    nh = res.nh
    assert nh is not None
    out_dev = nh.dev
    if out_dev.ip_ptr is None:
        return -EINVAL
    if saddr in ipv4.inet_addr_lst and ipv4.fib_validate_source(saddr, in_dev_dev, in_dev):
        ipv4.martian_source(skb, daddr, saddr, in_dev_dev)
        return -EINVAL
    flags = 0
    if out_dev is in_dev_dev and in_dev.tx_redirects() and skb.protocol == 0x0800:
        gw = nh.gw if nh.gw and nh.scope == RT_SCOPE_LINK else 0
        if in_dev.orconf("shared_media") or _addr_onlink(out_dev, saddr, gw):
            flags |= RTCF_DOREDIRECT
    fnhe = _find_exception(ipv4, nh, daddr) if nh.exceptions else None
    if fnhe is None and not flags:
        rth = nh.rth_input  # nhc_rth_input: the nexthop's cached forwarding route
        # rt_cache_valid() and dst_hold(), static inlines, inline
        if rth is not None and rth.rt_genid == ipv4.rt_genid and rth.obsolete == -1:
            # skb_dst_set_noref() (timed mode charges the dst_hold it charged before
            # the mark)
            skb.dst = rth
            skb.dst_noref = True
            line = rth.line
            if line is not None:
                line.write("dst_hold", atomic=True)
            return 0
    rth = Rtable(ipv4, out_dev, flags, res.type)
    rth.rt_is_input = True
    rth.rt_iif = in_dev_dev.ifindex
    rth.input = ipv4.dst_forward
    _rt_set_nexthop(rth, daddr, res, fnhe)
    if fnhe is None and not flags:  # do_cache: rt_cache_route() takes its own reference
        rth.hold()
        nh.rth_input = rth
    skb.dst = rth  # skb_dst_set(): the new route's reference passes to the skb
    return 0


@kernel("inet_addr_onlink")
def _addr_onlink(dev: NetDevice, a: int, b: int) -> bool:
    """Both addresses in a subnet of *dev*. Kernel: inet_addr_onlink()."""
    in_dev = dev.ip_ptr
    if in_dev is None:
        return False
    return any(ifa.match(a) and (not b or ifa.match(b)) for ifa in in_dev.primaries())


# ---------------------------------------------------------------------------
# Errors, PMTU, link failure
# ---------------------------------------------------------------------------


def dst_ip_error(skb: SkBuff) -> int:
    """``dst.input`` of unreachable and reject routes: :func:`ip_error` of the
    route's namespace. The kernel's ``ip_error(skb)`` finds the net from the
    route's device; a function of the skb alone, like it, is shared by every
    namespace, where a method bound per route or per namespace is not."""
    rt: Any = skb.dst
    return ip_error(rt.ipv4, skb)


def dst_ip_rt_bug(skb: SkBuff) -> int:
    """``dst.output`` of input routes: ``Ipv4.ip_rt_bug`` of the route's
    namespace (the kernel's ``ip_rt_bug(net, sk, skb)``), shared as
    :func:`dst_ip_error` is."""
    rt: Any = skb.dst
    rc: int = rt.ipv4.ip_rt_bug(skb)
    return rc


# object.__new__ for the no_route rtable written out in ip_route_input_noref; None
# for the mypyc build's native Rtable (which refuses it: the constructor then)
_alloc_rtable: Final = instance_allocator(Rtable)


@kernel("ip_error")
def ip_error(ipv4: Ipv4, skb: SkBuff) -> int:
    """Input handler of unreachable/reject routes: count, maybe ICMP. Kernel: ip_error()."""
    rt = skb.dst
    dev = skb.dev
    assert rt is not None
    assert dev is not None
    in_dev = dev.ip_ptr
    ip = ipv4.ip
    err = rt.error
    if in_dev is None or not in_dev.forward():
        if err == EHOSTUNREACH:
            ip.InAddrErrors += 1
            reason = DropReason.IP_INADDRERRORS
        else:
            ipv4.ipext.InNoRoutes += 1
            reason = DropReason.IP_INNOROUTES
        kfree_skb(skb, reason)
        return 0
    if err == EHOSTUNREACH:
        code = ICMP_HOST_UNREACH
        ip.InAddrErrors += 1
    elif err == ENETUNREACH:
        code = ICMP_NET_UNREACH
        ipv4.ipext.InNoRoutes += 1
    elif err == EACCES:
        code = ICMP_PKT_FILTERED
    else:
        kfree_skb(skb, DropReason.IP_INNOROUTES)
        return 0
    peer = ipv4.inet_getpeer(ipv4.ip_saddr(skb))
    now = ipv4.net.clock.jiffies
    hz = ipv4.net.clock.hz
    send = True
    if peer is not None:
        peer.rate_tokens += now - peer.rate_last
        if peer.rate_tokens > IP_RT_ERROR_BURST_HZ * hz:
            peer.rate_tokens = IP_RT_ERROR_BURST_HZ * hz
        peer.rate_last = now
        if peer.rate_tokens >= IP_RT_ERROR_COST_HZ * hz:
            peer.rate_tokens -= IP_RT_ERROR_COST_HZ * hz
        else:
            send = False
    if send:
        ipv4.icmp_send(skb, ICMP_DEST_UNREACH, code, 0)
    kfree_skb(skb, DropReason.IP_INNOROUTES)
    return 0


@kernel("net/ipv4/route.c", "__ip_rt_update_pmtu")
def ip_rt_update_pmtu(
    ipv4: Ipv4, rt: Rtable, daddr: int, mtu: int, saddr: int = 0, oif: int = 0
) -> None:
    """Learn a smaller path MTU towards *daddr*: a next-hop exception for it alone.

    The route *rt* (a socket's, or one looked up for the quoted packet) is
    only read: the MTU goes to the exception of *daddr* on the nexthop the FIB
    gives for it, never to the nexthop's shared cached route, so one ICMP
    "fragmentation needed" about one destination leaves every other
    destination behind the same gateway alone. An MTU below ``min_pmtu`` is
    raised to it and locked (no DF from then on). The FIB is asked with the
    flow's source *saddr* and *oif* and loopback as input device
    (``__build_flow_key`` → ``flowi4_init_output``), so ``ip rule`` picks the
    same table the flow's route came from.

    Twin: netstack.ipv6.route.rt6_update_pmtu.
    Kernel: net/ipv4/route.c, __ip_rt_update_pmtu().
    """
    if TIMED:
        spend("__ip_rt_update_pmtu")
    if rt.rt_mtu_locked or (rt.metric_mtu and rt.metric_mtu_locked):
        return  # ip_mtu_locked(): locked below min_pmtu, or an "mtu lock" metric
    old_mtu = rt.mtu()
    if old_mtu < mtu:
        return
    lock = False
    min_pmtu = ipv4.ip_rt_min_pmtu
    if mtu < min_pmtu:
        lock = True
        mtu = min(old_mtu, min_pmtu)
    now = ipv4.net.clock.jiffies
    expires_j = ipv4.ip_rt_mtu_expires * ipv4.net.clock.hz
    # the route already carries this PMTU, learnt less than half an expiry ago
    # (tunnels call this per packet)
    if rt.rt_pmtu == mtu and not lock and rt.expires and now < rt.expires - expires_j // 2:
        return
    res = ipv4.fib.lookup(daddr, oif, RT_SCOPE_UNIVERSE, saddr, ipv4.loopback_dev.ifindex)
    if res is None or res.nh is None:
        return
    update_or_create_fnhe(ipv4, res.nh, daddr, 0, mtu, lock, now + expires_j)


@kernel("ipv4_link_failure")
def ipv4_link_failure(ipv4: Ipv4, skb: SkBuff) -> None:
    """The neighbour could not be resolved: tell the sender. Kernel: ipv4_link_failure()."""
    ipv4.icmp_send(skb, ICMP_DEST_UNREACH, ICMP_HOST_UNREACH, 0)
    rt = skb.dst
    if isinstance(rt, Rtable):
        rt.expires = 0
