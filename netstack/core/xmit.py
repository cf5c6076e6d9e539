"""The driver side of transmit: validation, taps and ``ndo_start_xmit``.

Theory of operation: ``validate_xmit_skb`` makes an skb acceptable to the
device it is about to reach — software GSO (``skb_gso_segment``) when the
device cannot segment it, ``skb_checksum_help`` when it cannot fill the
checksum. ``dev_hard_start_xmit`` walks an skb list (GSO segments or a bulk
dequeue), copies each skb to packet taps (``dev_queue_xmit_nit``: captures)
and calls the driver; it stops at the first refusal or when the queue stops,
and returns what was not sent.

These are ``net/core/dev.c`` functions; they are split from ``dev.py`` so that
``qdisc.py`` (``sch_direct_xmit``) can call them without an import cycle.

Kernel: net/core/dev.c (validate_xmit_skb, dev_hard_start_xmit, xmit_one,
dev_queue_xmit_nit), net/core/gso.c (skb_gso_segment).
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Final

from netstack.core.features import (
    NETIF_F_GSO_MASK,
    NETIF_F_HW_CSUM,
    NETIF_F_HW_VLAN_CTAG_TX,
    NETIF_F_HW_VLAN_STAG_TX,
    SKB_GSO_TCPV4,
    SKB_GSO_TCPV6,
    SKB_GSO_UDP_L4,
    can_checksum_protocol,
    net_gso_ok,
    vlan_hw_offload_capable,
)
from netstack.core.netdevice import (
    NET_XMIT_MASK,
    NETDEV_TX_BUSY,
    NETDEV_TX_OK,
    dev_xmit_complete,
    netif_tx_queue_stopped,
)
from netstack.core.skbuff import (
    CHECKSUM_NONE,
    CHECKSUM_PARTIAL,
    CHECKSUM_UNNECESSARY,
    PACKET_OUTGOING,
    DropReason,
    SkBuff,
    consume_skb,
    kfree_skb,
)
from netstack.core.vlan_core import vlan_hwaccel_push_inside
from netstack.sites import TIMED, kernel, spend
from netstack.wire.checksum import CSUM_MANGLED_0, csum_fold, csum_partial

if TYPE_CHECKING:
    from netstack.core.netdevice import NetDevice, NetdevQueue

__all__ = [
    "dev_hard_start_xmit",
    "dev_queue_xmit_nit",
    "netif_skb_features",
    "skb_checksum_help",
    "skb_gso_segment",
    "skb_gso_validate_network_len",
    "validate_xmit_skb",
    "validate_xmit_skb_list",
]

_H: Final = struct.Struct("!H")


@kernel("net/core/dev.c", "skb_checksum_help")
def skb_checksum_help(skb: SkBuff) -> bool:
    """Fill in a CHECKSUM_PARTIAL checksum in software; False on error.

    Sums from ``csum_start`` to the end (the field already holds the
    pseudo-header sum) and stores the folded result, 0 sent as 0xFFFF.

    Kernel: net/core/dev.c, skb_checksum_help().
    """
    if TIMED:
        spend("skb_checksum_help")
    if skb.ip_summed != CHECKSUM_PARTIAL:
        return True
    if skb.gso_size:
        return True  # segmentation will do it per segment
    start = skb.csum_start
    where = start + skb.csum_offset
    if start < skb.data or where + 2 > skb.tail:
        return False
    skb.make_writable()
    buf = skb.buf
    c = csum_fold(csum_partial(buf, start, skb.tail))
    _H.pack_into(buf, where, c or CSUM_MANGLED_0)
    skb.ip_summed = CHECKSUM_NONE
    return True


@kernel("netif_skb_features")
def netif_skb_features(skb: SkBuff) -> int:
    """The device features that apply to this skb. Kernel: netif_skb_features()."""
    if TIMED:
        spend("netif_skb_features")
    dev = skb.dev
    assert dev is not None
    features = dev.features
    if skb.gso_size and skb.gso_segs > dev.gso_max_segs:  # skb_is_gso(): gso_features_check()
        features &= ~NETIF_F_GSO_MASK
    if skb.encapsulation:
        features &= dev.hw_enc_features
    if skb.vlan_proto or skb.protocol == 0x8100 or skb.protocol == 0x88A8:  # skb_vlan_tagged()
        features &= dev.vlan_features | NETIF_F_HW_VLAN_CTAG_TX | NETIF_F_HW_VLAN_STAG_TX
    return features


@kernel("net/core/gso.c", "__skb_gso_segment", "skb_mac_gso_segment")
def skb_gso_segment(skb: SkBuff, features: int) -> SkBuff | None:
    """Segment a GSO skb in software; return the segment list or None on error.

    ``data`` is at the link header (as ``dev_queue_xmit`` leaves it): the
    link header is pulled and the offload registered on the Net for
    ``skb.protocol`` (kernel: ``offload_base``, filled by
    ``inet_add_offload``/``dev_add_offload``) cuts the skb; each segment
    comes back with ``data`` at its own link header. The skb itself is
    returned when no segmentation is needed after all.

    Kernel: net/core/gso.c, __skb_gso_segment() / skb_mac_gso_segment().
    """
    dev = skb.dev
    assert dev is not None
    proto = skb.protocol
    mac_len = max(skb.network_header - skb.data, 0)  # skb_reset_mac_len()
    if (proto == 0x8100 or proto == 0x88A8) and mac_len >= 2:
        # in-band tags: the EtherType before the network header (skb_network_protocol)
        nh = skb.network_header
        proto = (skb.buf[nh - 2] << 8) | skb.buf[nh - 1]
    offload = dev.net.offload_base.get(proto)
    if offload is None or offload.gso_segment is None:
        return None
    skb.mac_header = skb.data  # skb_reset_mac_header()
    skb.cb = None  # SKB_GSO_CB(skb)->encap_level = 0
    skb.data += mac_len  # __skb_pull(skb, mac_len)
    segs = offload.gso_segment(skb, features)
    skb.data -= mac_len  # __skb_push()
    return segs


@kernel("net/core/gso.c", "skb_gso_validate_network_len")
def skb_gso_validate_network_len(skb: SkBuff, mtu: int) -> bool:
    """Will each segment of GSO *skb* fit in *mtu* at the network layer?

    The segment's size is the network and transport headers (for an
    encapsulated skb, down to the inner TCP header) plus ``gso_size``; the
    forwarding paths ask this of a GSO skb longer than the egress MTU
    (``ip_exceeds_mtu``, ``ip6_pkt_too_big``): if its segments do not fit,
    the sender gets a Fragmentation Needed / Packet Too Big.

    Kernel: net/core/gso.c, skb_gso_validate_network_len()
    (skb_gso_network_seglen, skb_gso_transport_seglen).
    """
    buf = skb.buf
    th = skb.transport_header
    gso_type = skb.gso_type
    thlen = 0
    if skb.encapsulation:
        ith = skb.inner_transport_header
        thlen = ith - th
        if gso_type & (SKB_GSO_TCPV4 | SKB_GSO_TCPV6):
            thlen += (buf[ith + 12] >> 4) * 4  # inner_tcp_hdrlen()
    elif gso_type & (SKB_GSO_TCPV4 | SKB_GSO_TCPV6):
        thlen = (buf[th + 12] >> 4) * 4  # tcp_hdrlen()
    elif gso_type & SKB_GSO_UDP_L4:
        thlen = 8
    return th - skb.network_header + thlen + skb.gso_size <= mtu


@kernel("net/core/dev.c", "validate_xmit_skb")
def validate_xmit_skb(skb: SkBuff, dev: NetDevice) -> SkBuff | None:
    """Segment / checksum *skb* as *dev* requires; None if it was dropped.

    Kernel: net/core/dev.c, validate_xmit_skb().
    """
    if TIMED:
        spend("validate_xmit_skb")
    gso = skb.gso_size
    summed = skb.ip_summed
    if skb.vlan_proto and not vlan_hw_offload_capable(dev.features, skb.vlan_proto):
        vlan_hwaccel_push_inside(skb)  # validate_xmit_vlan()
    if not gso and summed != CHECKSUM_PARTIAL:
        return skb  # nothing for the device to refuse
    features = netif_skb_features(skb)
    if gso and (
        not net_gso_ok(features, skb.gso_type)
        or summed not in (CHECKSUM_PARTIAL, CHECKSUM_UNNECESSARY)
    ):
        segs = skb_gso_segment(skb, features)
        if segs is None:
            dev.stats.tx_dropped += 1
            kfree_skb(skb, DropReason.SKB_GSO_SEG)
            return None
        if segs is not skb:
            consume_skb(skb)
        return segs
    if (
        summed == CHECKSUM_PARTIAL
        and not features & NETIF_F_HW_CSUM  # skb_csum_hwoffload_help() (folded)
        # NETIF_F_IP_CSUM/IPV6_CSUM devices fill a TCP or UDP checksum field only
        # (csum_offset 16 or 6); any other (GRE's at 4) is summed in software
        and not (can_checksum_protocol(features, skb.protocol) and skb.csum_offset in (16, 6))
        and not skb_checksum_help(skb)
    ):
        dev.stats.tx_dropped += 1
        kfree_skb(skb, DropReason.SKB_CSUM)
        return None
    return skb


@kernel("net/core/dev.c", "validate_xmit_skb_list")
def validate_xmit_skb_list(skb: SkBuff | None, dev: NetDevice) -> SkBuff | None:
    """Validate every skb of a ``next``-linked list, re-linking the results.

    Kernel: net/core/dev.c, validate_xmit_skb_list().
    """
    if TIMED:
        spend("validate_xmit_skb_list")
    head: SkBuff | None = None
    tail: SkBuff | None = None
    while skb is not None:
        nxt = skb.next
        skb.next = None
        out = validate_xmit_skb(skb, dev)
        if out is not None:
            if head is None:
                head = out
            else:
                assert tail is not None
                tail.next = out
            tail = out
            while tail.next is not None:  # a segment list
                tail = tail.next
        skb = nxt
    return head


@kernel("dev_queue_xmit_nit")
def dev_queue_xmit_nit(skb: SkBuff, dev: NetDevice) -> None:
    """Give a copy of an outgoing skb to every packet tap. Kernel: dev_queue_xmit_nit()."""
    if TIMED:
        spend("dev_queue_xmit_nit")
    for pt in (*dev.net.ptype_all, *dev.ptype_all):
        if pt.dev is not None and pt.dev is not dev:
            continue
        if pt.ignore_outgoing:
            continue
        skb2 = skb.clone()
        skb2.pkt_type = PACKET_OUTGOING
        if skb2.network_header < skb2.data:
            skb2.network_header = skb2.data
        pt.func(skb2, dev, pt, dev)


@kernel("net/core/dev.c", "dev_hard_start_xmit", "xmit_one", "netdev_start_xmit")
def dev_hard_start_xmit(
    first: SkBuff, dev: NetDevice, txq: NetdevQueue
) -> tuple[SkBuff | None, int]:
    """Hand *first* (and the skbs linked behind it) to the driver.

    Returns ``(unsent, rc)``: the skbs not sent (None if all went) and the
    last return code.

    Kernel: net/core/dev.c, dev_hard_start_xmit() / xmit_one() / netdev_start_xmit().
    """
    if TIMED:
        spend("dev_hard_start_xmit")
    net = dev.net
    ops = dev.ops
    if first.next is None and not net.ptype_all and not dev.ptype_all:
        # the common case: one skb, no taps (a method call: no bound method is built)
        rc = ops.ndo_start_xmit(first, dev)
        if rc >= NET_XMIT_MASK:  # !dev_xmit_complete()
            return first, rc
        if rc == NETDEV_TX_OK and txq.xmit_lock_owner != -1:  # txq_trans_update()
            txq.trans_start = net.clock.jiffies
        return None, rc
    xmit = ops.ndo_start_xmit
    skb: SkBuff | None = first
    rc = NETDEV_TX_OK
    while skb is not None:
        nxt = skb.next
        skb.next = None
        if net.ptype_all or dev.ptype_all:
            dev_queue_xmit_nit(skb, dev)
        rc = xmit(skb, dev)
        if not dev_xmit_complete(rc):
            skb.next = nxt
            return skb, rc
        if rc == NETDEV_TX_OK and txq.xmit_lock_owner != -1:  # txq_trans_update()
            txq.trans_start = net.clock.jiffies
        skb = nxt
        if skb is not None and netif_tx_queue_stopped(txq):
            return skb, NETDEV_TX_BUSY
    return None, rc
