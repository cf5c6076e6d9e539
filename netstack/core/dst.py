"""Destination cache entries: the result of a route lookup, with a refcount.

Theory of operation: a route lookup returns a :class:`DstEntry` (IPv4's
``rtable`` extends it) that says where a packet goes next: ``output`` for
locally sent packets, ``input`` for received ones, the device and the path
MTU. Entries are shared (cached on the FIB nexthop) and reference-counted:
an skb holding one took a reference (``dst_hold``) and drops it when the skb
is freed or when ``dev_queue_xmit`` releases dsts early
(``IFF_XMIT_DST_RELEASE``). The refcount is the contended atomic of seed 1's
profile (``dst_release``), so it is counted here.

A received packet's route is the exception: ``ip_route_input_noref`` sets the
input route cached on the nexthop without a reference (``skb_dst_set_noref``;
the skb's ``dst_noref`` mark is the kernel's ``SKB_DST_NOREF``), valid while
the packet is being processed (the kernel's RCU section). Dropping it
(:func:`skb_dst_drop`) puts nothing back; whoever keeps the skb beyond that —
a qdisc of a device without ``IFF_XMIT_DST_RELEASE``, a queue — takes a
reference first (:func:`skb_dst_force`), and a clone keeps the original's kind
(``skb_dst_copy``). Timed mode charges the ``dst_hold``/``dst_release``
cache-line writes of such a route where it did when every input route was
held (at the set and at the drop; none at the force), the figures its cost
table was calibrated with: a known error of the model (Linux takes no atomic
for such a route; dropping the charges needs the experiments recalibrated).
TCP's receive queues still keep a queued segment's route, which the kernel
drops (docs/performance.md, the router hop's ninth round, says why).

A :class:`DstCache` keeps one such entry for a sender that routes the same
flow again and again — a tunnel towards its fixed remote, a VXLAN remote —
and hands it out while it is still valid (``dst_check``: the FIB and the
addresses have not changed since, i.e. the IPv4 ``rt_genid`` is the same),
so the sender skips the route lookup; its owner resets it when the flow's
parameters change.

Kernel: include/net/dst.h, net/core/dst.c, net/core/dst_cache.c.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from netstack.sites import kernel

if TYPE_CHECKING:
    from netstack.core.netdevice import NetDevice
    from netstack.core.skbuff import SkBuff

__all__ = [
    "DST_OBSOLETE_FORCE_CHK",
    "DST_OBSOLETE_NONE",
    "DstCache",
    "DstEntry",
    "skb_dst_drop",
    "skb_dst_force",
]

DST_OBSOLETE_NONE = 0
DST_OBSOLETE_DEAD = 2
DST_OBSOLETE_FORCE_CHK = -1
DST_OBSOLETE_KILL = -2


def _dst_discard(skb: SkBuff) -> int:
    from netstack.core.skbuff import DropReason, kfree_skb

    kfree_skb(skb, DropReason.NOT_SPECIFIED)
    return 0


class DstEntry:
    """A destination cache entry (kernel: ``struct dst_entry``).

    Attributes:
        dev: the output device.
        input: handler for received packets routed by this entry.
        output: handler for packets sent through it.
        error: an errno for reject routes (``ip_error``), else 0.
        refcnt: references held (``__rcuref``).
        obsolete: DST_OBSOLETE_* (0: valid).
        expires: jiffy when a learned value (PMTU) expires, 0 for never.
    """

    # Slotted: no per-object dictionary to allocate for every route made (a
    # bystander allocates one per overheard ARP request) or to keep per cached one.
    __slots__ = (
        "dev",
        "error",
        "expires",
        "header_len",
        "holds",
        "input",
        "lastuse",
        "line",
        "obsolete",
        "output",
        "refcnt",
        "releases",
        "use",
    )

    def __init__(
        self,
        dev: NetDevice | None,
        *,
        input: Callable[[SkBuff], Any] = _dst_discard,  # noqa: A002 (kernel naming)
        output: Callable[[SkBuff], Any] = _dst_discard,
    ) -> None:
        self.dev = dev
        self.input = input
        self.output = output
        self.error = 0
        self.refcnt = 1
        self.obsolete = DST_OBSOLETE_NONE
        self.expires = 0
        self.lastuse = 0
        self.use = 0
        self.header_len = 0
        self.holds = 0  # total dst_hold() calls (the atomic seed 1 profiles)
        self.releases = 0
        # timed mode: the line with the refcount (``__rcuref``), None otherwise
        # (Net.cacheline()'s test inline: no call in functional mode)
        self.line = (
            dev.net.cacheline("dst") if dev is not None and dev.net.cpus.model is not None else None
        )

    @kernel("dst_hold")
    def hold(self) -> DstEntry:
        """Take a reference. Kernel: dst_hold()."""
        self.refcnt += 1
        self.holds += 1
        line = self.line
        if line is not None:
            line.write("dst_hold", atomic=True)
        return self

    @kernel("dst_release")
    def release(self) -> None:
        """Drop a reference. ``consume_skb`` and ``dev_queue_xmit`` have this
        written out (keep them in step). Kernel: dst_release()."""
        self.refcnt -= 1
        self.releases += 1
        line = self.line
        if line is not None:
            line.write("dst_release", atomic=True)

    @kernel("dst_mtu")
    def mtu(self) -> int:
        """The path MTU. Kernel: dst_mtu()."""
        dev = self.dev
        return dev.mtu if dev is not None else 1500

    @kernel("update_pmtu")
    def update_pmtu(self, skb: SkBuff | None, mtu: int) -> None:
        """Learn a smaller path MTU for the packet *skb* (its network header is
        the family's). Tunnels call this on the inner packet's route without
        knowing its family. Kernel: dst->ops->update_pmtu().
        """

    @kernel("link_failure")
    def link_failure(self, skb: SkBuff) -> None:
        """The next hop failed: tell the sender. Kernel: dst->ops->link_failure()."""

    @kernel("dst_check")
    def check(self) -> bool:
        """Still valid? Kernel: dst_check()."""
        return self.obsolete == DST_OBSOLETE_NONE

    def valid(self) -> bool:
        """Still usable from a cache (families override: ``rt_cache_valid``)."""
        return self.check()

    def __repr__(self) -> str:
        dev = self.dev.name if self.dev is not None else None
        return f"<{type(self).__name__} dev={dev} refcnt={self.refcnt}>"


@kernel("include/net/dst.h", "skb_dst_drop", "refdst_drop")
def skb_dst_drop(skb: SkBuff) -> None:
    """Drop *skb*'s route: release the reference it holds, none for a route set
    without one (``SKB_DST_NOREF``). ``consume_skb``, ``kfree_skb``,
    ``dev_queue_xmit`` and ``udp_rcv``, once a packet each, have it written
    out (keep them in step).

    Kernel: include/net/dst.h, skb_dst_drop() / refdst_drop().
    """
    dst = skb.dst
    if dst is not None:
        skb.dst = None
        if skb.dst_noref:
            skb.dst_noref = False
            line = dst.line
            if line is not None:  # timed mode charges the release as before the mark
                line.write("dst_release", atomic=True)
        else:
            dst.release()


@kernel("include/net/dst.h", "skb_dst_force", "dst_hold_safe")
def skb_dst_force(skb: SkBuff) -> bool:
    """Make *skb*'s route a held one before the skb outlives the packet's
    processing (queued); True if it has a route. ``dev_queue_xmit`` has it
    written out (keep the two in step).

    A route is never freed under a referenced holder here, so ``dst_hold_safe``
    always succeeds. Timed mode charged the hold when the route was set, so
    the force charges nothing.

    Kernel: include/net/dst.h, skb_dst_force() / dst_hold_safe().
    """
    dst = skb.dst
    if dst is None:
        return False
    if skb.dst_noref:
        skb.dst_noref = False
        dst.refcnt += 1  # dst_hold_safe(): rcuref_get()
        dst.holds += 1
    return True


D = TypeVar("D", bound=DstEntry)


@kernel("net/core/dst_cache.c")
class DstCache(Generic[D]):
    """A cached route and the source address it chose (kernel: ``struct
    dst_cache``, per CPU there; one here). The cache holds a reference.

    Kernel: net/core/dst_cache.c (dst_cache_get_ip4, dst_cache_set_ip4,
    dst_cache_reset).
    """

    __slots__ = ("rt", "saddr")

    def __init__(self) -> None:
        self.rt: D | None = None
        self.saddr = 0

    @kernel("net/core/dst_cache.c", "dst_cache_get_ip4", "dst_cache_per_cpu_get")
    def get_ip4(self) -> D | None:
        """The cached route with a reference for the caller, if still valid; its
        source address is then :attr:`saddr` (the kernel's ``*saddr`` out-parameter:
        no tuple a packet).

        Kernel: net/core/dst_cache.c, dst_cache_get_ip4() / dst_cache_per_cpu_get().
        """
        rt = self.rt
        if rt is None:
            return None
        if not rt.valid():  # dst_cache_per_cpu_get(): obsolete and failing dst_check
            self.reset()
            return None
        rt.hold()
        return rt

    @kernel("dst_cache_set_ip4")
    def set_ip4(self, rt: D, saddr: int) -> None:
        """Cache *rt* (taking a reference of its own). Kernel: dst_cache_set_ip4()."""
        self.reset()
        self.rt = rt
        rt.hold()
        self.saddr = saddr

    @kernel("dst_cache_reset", "dst_cache_destroy")
    def reset(self) -> None:
        """Forget the route. Kernel: dst_cache_reset() / dst_cache_destroy()."""
        rt = self.rt
        if rt is not None:
            self.rt = None
            rt.release()
