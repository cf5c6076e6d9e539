"""The GRO engine: hold lists per NAPI instance, merging, flushing, statistics.

Theory of operation::

    napi_gro_receive ─► dev_gro_receive: device has NETIF_F_GRO? ─► gro_list_prepare
      (candidates in the skb's hash bucket: same device, same MAC header)
      ─► the L3 offload for skb.protocol (offload_base: inet_gro_receive …)
         ─► the L4 offload (inet_offloads: tcp4_gro_receive …) ─► skb_gro_receive
      ─► pp returned: complete that held skb now (its flow must be flushed)
      ─► merged: free the skb │ flush set: deliver it alone (GRO_NORMAL)
         │ else hold it (gro_flush_oldest first when MAX_GRO_SKBS are held)
    napi_gro_flush (end of each NAPI poll; only old flows after a full poll)
      ─► napi_gro_complete ─► L3/L4 gro_complete (lengths, checksums, gso_*)
      ─► netif_receive_skb

A :class:`GroNode` is one NAPI instance's GRO state (kernel 6.13+ names it
``struct gro_node``; before, these were fields of ``napi_struct``): eight hash
buckets of held skbs, youngest first, at most ``MAX_GRO_SKBS`` each. Each skb
in GRO carries a :class:`NapiGroCb` in ``skb.cb`` (kernel: ``NAPI_GRO_CB``):
the parse offset, ``flush``/``flush_id``, ``count`` of merged segments,
``same_flow``, the checksum state, ``encap_mark`` for tunnels.

Merging copies the new segment's payload behind the held skb's (netstack's
skbs are linear, where the kernel chains page frags); that is one memcpy per
segment, and the merged skb reaches IP and TCP as one packet of up to 64 KB.

The offload tables are per Net and filled when a host is built: EtherType →
``PacketOffload`` in ``net.offload_base`` (kernel ``dev_add_offload``), IP
protocol → :class:`NetOffload` in each family's table (kernel
``inet_add_offload``, ``inet6_add_offload``). Tunnels plug in there.

Kernel: net/core/gro.c, include/net/gro.h.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import attrs

# (an alias: in a class body the kernel's double-underscore name would be mangled)
from netstack.core.dev import __netif_receive_skb_core as netif_receive_skb_core
from netstack.core.dev import netif_receive_skb
from netstack.core.features import SKB_GSO_DODGY, SKB_GSO_TCPV4, SKB_GSO_TCPV6
from netstack.core.skbuff import (
    CHECKSUM_COMPLETE,
    CHECKSUM_NONE,
    CHECKSUM_PARTIAL,
    CHECKSUM_UNNECESSARY,
    SKB_STRUCT_SIZE,
    DropReason,
    SkBuff,
    consume_skb,
    kfree_skb,
)
from netstack.sites import TIMED, kernel, spend
from netstack.wire.checksum import csum_partial

if TYPE_CHECKING:
    from netstack.core.napi import Napi
    from netstack.core.net import Net

__all__ = [
    "GRO_HASH_BUCKETS",
    "GRO_HELD",
    "GRO_MERGED",
    "GRO_MERGED_FREE",
    "GRO_NORMAL",
    "MAX_GRO_SKBS",
    "GroNode",
    "GroStats",
    "NapiGroCb",
    "NetOffload",
    "call_gro_receive",
    "gro_init",
    "gro_statistics",
    "skb_gro_checksum_validate",
    "skb_gro_receive",
]

MAX_GRO_SKBS: Final = 8
GRO_HASH_BUCKETS: Final = 8
_GRO_HASH_MASK: Final = GRO_HASH_BUCKETS - 1
GRO_LEGACY_MAX_SIZE: Final = 65536
GRO_RECURSION_LIMIT: Final = 15
NAPI_GRO_FREE: Final = 1

# enum gro_result
GRO_MERGED: Final = 0
GRO_MERGED_FREE: Final = 1
GRO_HELD: Final = 2
GRO_NORMAL: Final = 3
GRO_CONSUMED: Final = 4

E2BIG: Final = 7


class NetOffload:
    """GSO/GRO callbacks of one IP protocol (kernel: ``struct net_offload``).

    ``gro_receive(head, skb) -> held skb to complete or None``,
    ``gro_complete(skb, nhoff) -> 0 or an error``,
    ``gso_segment(skb, features) -> segment list or None``.

    A plain slotted class (it was an attrs class with ``eq=False``: the same
    constructor, ``repr``, identity equality and hash), native in the build:
    ``inet_gro_receive`` reads its ``gro_receive`` for every packet.
    """

    __slots__ = ("flags", "gro_complete", "gro_receive", "gso_segment")

    def __init__(
        self,
        gso_segment: Callable[[SkBuff, int], SkBuff | None] | None = None,
        gro_receive: Callable[[list[SkBuff], SkBuff], SkBuff | None] | None = None,
        gro_complete: Callable[[SkBuff, int], int] | None = None,
        flags: int = 0,
    ) -> None:
        self.gso_segment = gso_segment
        self.gro_receive = gro_receive
        self.gro_complete = gro_complete
        self.flags = flags

    def __repr__(self) -> str:
        return (
            f"NetOffload(gso_segment={self.gso_segment!r}, gro_receive={self.gro_receive!r}, "
            f"gro_complete={self.gro_complete!r}, flags={self.flags!r})"
        )


class NapiGroCb:
    """Per-skb GRO scratch (kernel: ``struct napi_gro_cb``, ``NAPI_GRO_CB(skb)``).

    ``off`` is the absolute index in ``skb.buf`` of the next header to parse
    (kernel: ``skb->data + skb_gro_offset(skb)``).
    """

    __slots__ = (
        "age",
        "count",
        "csum",
        "csum_cnt",
        "csum_valid",
        "encap_mark",
        "flush",
        "flush_id",
        "free",
        "is_atomic",
        "is_fou",
        "is_ipv6",
        "off",
        "proto",
        "recursion_counter",
        "same_flow",
    )

    def __init__(self, off: int) -> None:
        # (GroNode.receive writes these out to reuse a cb: keep the two in step)
        self.off = off
        self.flush = 0
        self.flush_id = 0
        self.count = 1
        self.same_flow = 0
        self.free = 0
        self.encap_mark = 0
        self.is_atomic = 1
        self.is_fou = 0
        self.is_ipv6 = 0
        self.recursion_counter = 0
        self.age = 0
        self.csum = 0
        self.csum_valid = 0
        self.csum_cnt = 0
        self.proto = 0


@attrs.frozen
class GroStats:
    """Counters of one NAPI instance's GRO (netstack's; the kernel has tracepoints).

    Attributes:
        received: skbs given to ``napi_gro_receive`` on a GRO device.
        merged: skbs merged into a held one (GRO_MERGED/GRO_MERGED_FREE).
        held: skbs that started a flow and were held (GRO_HELD).
        normal: skbs passed up at once, unmerged (GRO_NORMAL).
        complete: held skbs completed and passed up (``napi_gro_complete``).
        complete_segs: segments those carried in total.
        flush_final: completions because a segment ended its flow (PSH, a
            short segment, a mismatch, the 64 KB limit: ``pp`` returned).
        flush_overflow: completions of the oldest flow to hold a new one
            (``MAX_GRO_SKBS``).
        flush_napi: completions at the end of a NAPI poll (``napi_complete_done``).
        flush_old: completions of flows older than a jiffy after a full poll.
    """

    received: int
    merged: int
    held: int
    normal: int
    complete: int
    complete_segs: int
    flush_final: int
    flush_overflow: int
    flush_napi: int
    flush_old: int

    def __add__(self, other: GroStats) -> GroStats:
        return GroStats(
            *(a + b for a, b in zip(attrs.astuple(self), attrs.astuple(other), strict=True))
        )


_STAT_NAMES: Final = tuple(f.name for f in attrs.fields(GroStats))


class GroNode:
    """The GRO state of one NAPI instance (kernel: ``struct gro_node``)."""

    __slots__ = (
        "bitmask",
        "complete",
        "complete_segs",
        "flush_final",
        "flush_napi",
        "flush_old",
        "flush_overflow",
        "hash",
        "held",
        "merged",
        "napi",
        "net",
        "normal",
        "received",
        "spare",
    )

    def __init__(self, napi: Napi) -> None:
        self.napi = napi
        # the NapiGroCb of the last packet passed up unmerged, zeroed again for
        # the next one (the kernel's NAPI_GRO_CB lives in skb->cb: no allocation)
        self.spare: NapiGroCb | None = None
        self.net: Net = napi.net
        # gro_hash[], made on first use: a device with GRO off (every veth by
        # default) never holds an skb, and eight empty lists are 570 bytes
        self.hash: list[list[SkBuff]] | None = None
        self.bitmask = 0
        self.received = 0
        self.merged = 0
        self.held = 0
        self.normal = 0
        self.complete = 0
        self.complete_segs = 0
        self.flush_final = 0
        self.flush_overflow = 0
        self.flush_napi = 0
        self.flush_old = 0

    # -- napi_gro_receive ------------------------------------------------------------
    @kernel(
        "net/core/gro.c",
        "dev_gro_receive",
        "include/net/gro.h",
        "gro_normal_one",
        "net/core/dev.c",
        "netif_receive_skb",
    )
    def receive(self, napi: Napi, skb: SkBuff) -> int:
        """Merge, hold or pass up *skb*.

        A packet the offloads flush (a flow that cannot merge) is passed up at
        once, as ``napi_skb_finish`` does for GRO_NORMAL (``gro_normal_one``,
        inline here, with ``netif_receive_skb``: its charge, then the receive
        core). The cb of a packet passed up unmerged is reset here for the
        next one, field by field, as the kernel resets ``NAPI_GRO_CB(skb)``.

        Kernel: net/core/gro.c, dev_gro_receive(); include/net/gro.h,
        gro_normal_one(); net/core/dev.c, netif_receive_skb().
        """
        self.received += 1
        ptype = self.net.offload_base.get(skb.protocol)
        hashes = self.hash
        if hashes is None:
            hashes = self.hash = [[] for _ in range(GRO_HASH_BUCKETS)]
        bucket = skb.hash & _GRO_HASH_MASK
        head = hashes[bucket]
        if head:
            gro_list_prepare(head, skb)
        gro_receive = ptype.gro_receive if ptype is not None else None
        if gro_receive is None:
            self.normal += 1
            if TIMED:
                spend("netif_receive_skb")
            netif_receive_skb_core(skb)  # gro_normal_one(): netif_receive_skb()
            return GRO_NORMAL
        data = skb.data
        skb.network_header = data
        cb = self.spare
        if cb is None:
            cb = NapiGroCb(data)
        else:
            # NapiGroCb.__init__, written out (a frame less a packet; keep the two in step)
            self.spare = None
            cb.off = data
            cb.flush = 0
            cb.flush_id = 0
            cb.count = 1
            cb.same_flow = 0
            cb.free = 0
            cb.encap_mark = 0
            cb.is_atomic = 1
            cb.is_fou = 0
            cb.is_ipv6 = 0
            cb.recursion_counter = 0
            cb.age = 0
            cb.csum = 0
            cb.csum_valid = 0
            cb.csum_cnt = 0
            cb.proto = 0
        skb.cb = cb
        if skb.gso_size:
            cb.count = skb.gso_segs or 1
            # only TCP GSO skbs from a trusted source may be aggregated
            gso_type = skb.gso_type
            if not gso_type & (SKB_GSO_TCPV4 | SKB_GSO_TCPV6) or gso_type & SKB_GSO_DODGY:
                cb.flush = 1
        summed = skb.ip_summed
        if summed == CHECKSUM_COMPLETE:
            cb.csum = skb.csum
            cb.csum_valid = 1
        elif summed == CHECKSUM_UNNECESSARY:
            cb.csum_cnt = skb.csum_level + 1
        pp = gro_receive(head, skb)
        if pp is not None:
            head.remove(pp)
            self.flush_final += 1
            self.napi_gro_complete(pp)
        if cb.same_flow:
            self.merged += 1
            if cb.free:
                skb.cb = None
                consume_skb(skb)  # napi_skb_finish(GRO_MERGED_FREE)
                return GRO_MERGED_FREE
            return GRO_MERGED
        if cb.flush:
            skb.cb = None
            self.spare = cb
            self.normal += 1
            # napi_skb_finish(GRO_NORMAL): gro_normal_one() → netif_receive_skb()
            if TIMED:
                spend("netif_receive_skb")
            netif_receive_skb_core(skb)
            return GRO_NORMAL
        if len(head) >= MAX_GRO_SKBS:
            oldest = head.pop()  # gro_flush_oldest()
            self.flush_overflow += 1
            self.napi_gro_complete(oldest)
        cb.age = self.net.clock.jiffies
        if not skb.gso_size:
            skb.gso_size = skb.tail - cb.off  # skb_gro_len(): the flow's MSS
        head.insert(0, skb)
        self.bitmask |= 1 << bucket
        self.held += 1
        return GRO_HELD

    @kernel("net/core/gro.c", "napi_gro_complete")
    def napi_gro_complete(self, skb: SkBuff) -> None:
        """Finish a held skb and pass it up. Kernel: net/core/gro.c, napi_gro_complete()."""
        cb: NapiGroCb = skb.cb
        count = cb.count
        self.complete += 1
        self.complete_segs += count
        if count == 1:
            skb.gso_size = 0
        else:
            ptype = self.net.offload_base.get(skb.protocol)
            err = -2  # -ENOENT
            if ptype is not None and ptype.gro_complete is not None:
                err = ptype.gro_complete(skb, 0)
            if err:
                skb.cb = None
                kfree_skb(skb, DropReason.NOT_SPECIFIED)
                return
        skb.cb = None
        napi_gro_normal(skb)

    @kernel("net/core/gro.c", "napi_gro_flush", "__napi_gro_flush_chain")
    def flush(self, napi: Napi, flush_old: bool) -> None:
        """Complete held skbs, oldest first (only old ones if *flush_old*).

        Kernel: net/core/gro.c, napi_gro_flush() / __napi_gro_flush_chain().
        """
        hashes = self.hash
        if not self.bitmask or hashes is None:
            return
        jiffies = self.net.clock.jiffies
        bitmask = 0
        for i, head in enumerate(hashes):
            while head:
                skb = head[-1]
                if flush_old and skb.cb.age == jiffies:
                    break
                head.pop()
                if flush_old:
                    self.flush_old += 1
                else:
                    self.flush_napi += 1
                self.napi_gro_complete(skb)
            if head:
                bitmask |= 1 << i
        self.bitmask = bitmask

    def held_skbs(self) -> int:
        """How many skbs are held now."""
        return sum(len(h) for h in self.hash) if self.hash is not None else 0

    def statistics(self) -> GroStats:
        """A snapshot of the counters."""
        return GroStats(*(getattr(self, name) for name in _STAT_NAMES))


@kernel("include/net/gro.h", "gro_normal_one")
def napi_gro_normal(skb: SkBuff) -> None:
    """Pass an skb up unmerged. Kernel: include/net/gro.h, gro_normal_one()."""
    netif_receive_skb(skb)


@kernel("net/core/gro.c", "gro_list_prepare")
def gro_list_prepare(head: list[SkBuff], skb: SkBuff) -> None:
    """Mark which held skbs may be the same flow as *skb*.

    Same flow needs the same hash, device and Ethernet header; every held
    skb's ``flush`` is cleared for this round.

    Kernel: net/core/gro.c, gro_list_prepare().
    """
    h = skb.hash
    dev = skb.dev
    buf = skb.buf
    mac = skb.mac_header
    maclen = dev.hard_header_len if dev is not None else 0
    mh = bytes(buf[mac : mac + maclen]) if mac >= 0 else b""
    for p in head:
        pcb: NapiGroCb = p.cb
        pcb.flush = 0
        if p.hash != h or p.dev is not dev:
            pcb.same_flow = 0
            continue
        pm = p.mac_header
        pcb.same_flow = int(pm < 0 or p.buf[pm : pm + maclen] == mh)


@kernel("include/net/gro.h", "call_gro_receive")
def call_gro_receive(fn: object, head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """Call a nested ``gro_receive``, refusing beyond ``GRO_RECURSION_LIMIT``.

    Kernel: include/net/gro.h, call_gro_receive().
    """
    cb: NapiGroCb = skb.cb
    cb.recursion_counter += 1
    if cb.recursion_counter == GRO_RECURSION_LIMIT:
        cb.flush |= 1
        return None
    return fn(head, skb)  # type: ignore[operator, no-any-return]


@kernel("net/core/gro.c", "skb_gro_receive")
def skb_gro_receive(p: SkBuff, skb: SkBuff) -> int:
    """Append *skb*'s payload (from its GRO offset) to the held skb *p*.

    Returns 0, or ``-E2BIG`` when the merged packet would reach
    ``gro_max_size`` (64 KB) or *skb* must not be merged.

    Kernel: net/core/gro.c, skb_gro_receive().
    """
    cb: NapiGroCb = skb.cb
    off = cb.off
    length = skb.tail - off
    dev = p.dev
    gro_max_size = dev.gro_max_size if dev is not None else GRO_LEGACY_MAX_SIZE
    if p.tail - p.data + length >= min(gro_max_size, GRO_LEGACY_MAX_SIZE) or cb.flush:
        return -E2BIG
    truesize = p.truesize  # before the buffer grows: the pieces' sizes add up
    if p.cloned:
        p.make_writable()
    buf = p.buf
    if p.tail != len(buf):
        del buf[p.tail :]
    buf += memoryview(skb.buf)[off : skb.tail]
    p.tail += length
    p.truesize = truesize + skb.truesize - SKB_STRUCT_SIZE  # the fragment's memory
    p.cb.count += cb.count
    cb.same_flow = 1
    cb.free = NAPI_GRO_FREE
    return 0


@kernel(
    "include/net/gro.h",
    "__skb_gro_checksum_validate",
    "__skb_gro_checksum_complete",
    "include/linux/skbuff.h",
    "__skb_incr_checksum_unnecessary",
)
def skb_gro_checksum_validate(skb: SkBuff, pseudo: int) -> bool:
    """Check an L4 checksum during GRO; True if it is good (or need not be checked).

    *pseudo* is the pseudo-header sum (``inet_gro_compute_pseudo``). A device
    that verified it (CHECKSUM_UNNECESSARY) spends one verified level; one
    that summed the packet (CHECKSUM_COMPLETE) is checked by folding; a
    locally built packet (CHECKSUM_PARTIAL) needs nothing; otherwise the sum
    is computed here — the per-byte cost the seeds talk about — and the skb
    becomes CHECKSUM_UNNECESSARY so the stack does not sum it again. The
    static inlines are written in: ``csum_add`` and ``csum_fold`` of the
    pseudo-header and the data's sum (good when they fold to 0xFFFF, i.e. a
    non-zero multiple of 0xFFFF) and ``__skb_incr_checksum_unnecessary``.

    Kernel: include/net/gro.h, __skb_gro_checksum_validate() /
    __skb_gro_checksum_complete(); include/linux/skbuff.h,
    __skb_incr_checksum_unnecessary().
    """
    cb: NapiGroCb = skb.cb
    summed = skb.ip_summed
    if summed == CHECKSUM_PARTIAL and skb.csum_start >= cb.off:
        return True
    if cb.csum_cnt > 0:
        cb.csum_cnt -= 1  # skb_gro_incr_csum_unnecessary()
        return True
    if cb.csum_valid:
        total = pseudo + cb.csum
        valid = total and not total % 0xFFFF  # !csum_fold(csum_add(pseudo, csum))
    else:
        valid = False
    if not valid:
        wsum = csum_partial(skb.buf, cb.off, skb.tail)
        total = pseudo + wsum
        if not total or total % 0xFFFF:  # csum_fold(csum_add(pseudo, wsum)) != 0
            return False
        cb.csum = wsum
        cb.csum_valid = 1
    # __skb_incr_checksum_unnecessary(), inline
    if summed == CHECKSUM_UNNECESSARY:
        if skb.csum_level < 3:
            skb.csum_level += 1
    elif summed == CHECKSUM_NONE:
        skb.ip_summed = CHECKSUM_UNNECESSARY
        skb.csum_level = 0
    return True


@kernel("net/core/gro.c", "gro_init")
def gro_init(net: Net) -> None:
    """Give every NAPI instance of *net* a GRO engine (kernel: ``netif_napi_add``).

    Kernel: net/core/gro.c, gro_init().
    """
    net.gro_factory = GroNode
    for dev in net.devices.values():
        for napi in dev.napi_list:
            if napi.gro is None:
                napi.gro = GroNode(napi)


def gro_statistics(net: Net, dev: str | None = None) -> GroStats:
    """GRO counters summed over the NAPI instances of *net* (or of device *dev*)."""
    total = GroStats(*(0 for _ in _STAT_NAMES))
    for d in net.devices.values():
        if dev is not None and d.name != dev:
            continue
        for napi in d.napi_list:
            node: Any = napi.gro
            if isinstance(node, GroNode):
                total = total + node.statistics()
    return total
