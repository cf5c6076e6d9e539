"""802.1Q in the core: the skb's VLAN tag, in-band or accelerated, and ``vlan_do_receive``.

Theory of operation: the kernel keeps a VLAN tag in one of two places. *In
band*, the 4-byte 802.1Q header sits in the frame after the MAC addresses
(TPID 0x8100 or 0x88a8, then the TCI). *Hardware-accelerated*, the tag has
been taken out of the frame and lives in the skb (``skb->vlan_proto``,
``skb->vlan_tci``): a NIC with ``rx-vlan-offload`` strips it on receive, and
one with ``tx-vlan-offload`` inserts it on transmit, so the stack only
touches metadata. veth advertises both, so a tagged skb crosses a veth pair
with its tag in the metadata, as between Linux namespaces.

* :func:`skb_vlan_untag` — receive: an in-band tag moves into the skb (the
  MAC addresses are shifted up over it), ``skb.protocol`` becomes the
  encapsulated EtherType. ``__netif_receive_skb_core`` calls it for every
  frame whose protocol is 802.1Q/802.1ad.
* :func:`vlan_do_receive` — the tag names a VLAN device on the receiving one
  (``eth0.10``): the skb moves to it, counted in its statistics, and another
  round of the receive core runs for it.
* :func:`vlan_hwaccel_push_inside` — transmit, when the device cannot insert
  the tag (``validate_xmit_vlan``): it goes back in band.

These live in the core because the kernel builds them into the core
(net/8021q/vlan_core.c is linked whenever 802.1Q is configured, and
``__netif_receive_skb_core`` calls into it); the VLAN *devices* are a driver
(:mod:`netstack.drivers.vlan`) that fills ``dev.vlan_info``.

Kernel: net/8021q/vlan_core.c, include/linux/if_vlan.h, net/core/skbuff.c
(skb_vlan_untag, skb_reorder_vlan_header).
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Final

from netstack.core.skbuff import (
    PACKET_HOST,
    PACKET_MULTICAST,
    PACKET_OTHERHOST,
    DropReason,
    SkBuff,
    kfree_skb,
)

if TYPE_CHECKING:
    from netstack.core.netdevice import NetDevice

__all__ = [
    "ETH_P_8021AD",
    "ETH_P_8021Q",
    "VLAN_HLEN",
    "VLAN_VID_MASK",
    "VlanDevPriv",
    "VlanInfo",
    "eth_type_vlan",
    "vlan_do_receive",
    "vlan_find_dev",
    "vlan_hwaccel_push_inside",
    "vlan_hwaccel_put_tag",
    "vlan_insert_tag",
]

ETH_P_8021Q: Final = 0x8100
ETH_P_8021AD: Final = 0x88A8
VLAN_HLEN: Final = 4
VLAN_VID_MASK: Final = 0x0FFF
VLAN_PRIO_SHIFT: Final = 13
VLAN_FLAG_REORDER_HDR: Final = 0x1
ETH_P_802_3_MIN: Final = 0x0600
_HH: Final = struct.Struct("!HH")
_H: Final = struct.Struct("!H")


def eth_type_vlan(proto: int) -> bool:
    """True for the 802.1Q and 802.1ad TPIDs. Kernel: eth_type_vlan()."""
    return proto == ETH_P_8021Q or proto == ETH_P_8021AD


class VlanDevPriv:
    """What the core needs of a VLAN device (kernel: ``struct vlan_dev_priv``)."""

    def __init__(self, real_dev: NetDevice, proto: int, vid: int) -> None:
        self.real_dev = real_dev
        self.vlan_proto = proto
        self.vlan_id = vid
        self.flags = VLAN_FLAG_REORDER_HDR
        self.ingress_priority_map = [0] * 8
        self.egress_priority_map: dict[int, int] = {}
        # vlan_pcpu_stats
        self.rx_packets = 0
        self.rx_bytes = 0
        self.rx_multicast = 0
        self.tx_packets = 0
        self.tx_bytes = 0
        self.tx_dropped = 0
        self.rx_errors = 0


class VlanInfo:
    """The VLAN devices stacked on one real device (kernel: ``struct vlan_info``)."""

    def __init__(self, real_dev: NetDevice) -> None:
        self.real_dev = real_dev
        self.devices: dict[tuple[int, int], NetDevice] = {}  # (TPID, VID) -> vlan dev

    @property
    def nr_vids(self) -> int:
        return len(self.devices)


def vlan_find_dev(real_dev: NetDevice, proto: int, vid: int) -> NetDevice | None:
    """The VLAN device for (*proto*, *vid*) on *real_dev*. Kernel: vlan_find_dev()."""
    info: VlanInfo | None = real_dev.vlan_info
    if info is None:
        return None
    return info.devices.get((proto, vid))


def vlan_hwaccel_put_tag(skb: SkBuff, proto: int, tci: int) -> None:
    """Put a tag in the skb's metadata. Kernel: __vlan_hwaccel_put_tag()."""
    skb.vlan_proto = proto
    skb.vlan_tci = tci


def vlan_hwaccel_clear_tag(skb: SkBuff) -> None:
    """Kernel: __vlan_hwaccel_clear_tag()."""
    skb.vlan_proto = 0
    skb.vlan_tci = 0


def vlan_insert_tag(skb: SkBuff, proto: int, tci: int) -> None:
    """Insert an in-band tag after the MAC addresses; ``skb.data`` is at the MAC header.

    Kernel: include/linux/if_vlan.h, vlan_insert_tag_set_proto() / __vlan_insert_inner_tag().
    """
    skb.cow_head(VLAN_HLEN)
    d = skb.push(VLAN_HLEN)
    buf = skb.buf
    buf[d : d + 12] = buf[d + 4 : d + 16]
    _HH.pack_into(buf, d + 12, proto, tci)
    if skb.mac_header >= 0:
        skb.mac_header -= VLAN_HLEN
    skb.protocol = proto


def vlan_hwaccel_push_inside(skb: SkBuff) -> None:
    """Move an accelerated tag into the frame. Kernel: __vlan_hwaccel_push_inside()."""
    vlan_insert_tag(skb, skb.vlan_proto, skb.vlan_tci)
    vlan_hwaccel_clear_tag(skb)


def skb_vlan_untag(skb: SkBuff) -> bool:
    """Move the in-band tag at ``skb.data`` into the metadata; False if the skb was dropped.

    ``skb.data`` points at the TCI (``eth_type_trans`` pulled the MAC header
    with the TPID); afterwards it points at the encapsulated payload and the
    MAC header has been moved up over the tag.

    Kernel: net/core/skbuff.c, skb_vlan_untag() / skb_reorder_vlan_header().
    """
    if skb.vlan_proto:
        return True  # already set up: "leave this for another time"
    d = skb.data
    if skb.tail - d < VLAN_HLEN + 2 or skb.mac_header < 0 or skb.mac_header + 14 != d:
        kfree_skb(skb, DropReason.VLAN_INVALID)
        return False
    skb.make_writable()
    buf = skb.buf
    tci, inner = _HH.unpack_from(buf, d)
    skb.vlan_proto = skb.protocol
    skb.vlan_tci = tci
    skb.data = d + VLAN_HLEN
    if skb.ip_summed == 2:  # CHECKSUM_COMPLETE: skb_pull_rcsum() subtracts the tag
        skb.ip_summed = 0
    if inner >= ETH_P_802_3_MIN:  # vlan_set_encap_proto()
        skb.protocol = inner
    elif buf[d + VLAN_HLEN : d + VLAN_HLEN + 2] == b"\xff\xff":
        skb.protocol = 0x0001  # ETH_P_802_3
    else:
        skb.protocol = 0x0004  # ETH_P_802_2
    m = skb.mac_header
    buf[m + VLAN_HLEN : m + VLAN_HLEN + 12] = buf[m : m + 12]
    skb.mac_header = m + VLAN_HLEN
    skb.network_header = skb.data
    if skb.transport_header < 0:
        skb.transport_header = skb.data
    return True


def vlan_do_receive(skb: SkBuff) -> tuple[bool, SkBuff | None]:
    """Hand an accelerated-tagged skb to the VLAN device its tag names.

    Returns ``(True, skb)`` when the skb now belongs to the VLAN device (the
    receive core runs another round), ``(False, skb)`` when there is no such
    device, ``(False, None)`` when it was dropped (device down).

    Kernel: net/8021q/vlan_core.c, vlan_do_receive().
    """
    dev = skb.dev
    assert dev is not None
    vid = skb.vlan_tci & VLAN_VID_MASK
    vlan_dev = vlan_find_dev(dev, skb.vlan_proto, vid)
    if vlan_dev is None:
        return False, skb
    if not vlan_dev.flags & 0x1:  # IFF_UP
        kfree_skb(skb, DropReason.VLAN_DEV_DOWN)
        return False, None
    skb.dev = vlan_dev
    buf = skb.buf
    m = skb.mac_header
    if skb.pkt_type == PACKET_OTHERHOST and buf[m : m + 6] == vlan_dev.dev_addr:
        skb.pkt_type = PACKET_HOST
    vlan: VlanDevPriv = vlan_dev.priv
    if not vlan.flags & VLAN_FLAG_REORDER_HDR:
        # keep the tag in the frame the VLAN device's taps and stack see
        offset = skb.data - m
        proto = skb.protocol
        skb.data = m
        vlan_insert_tag(skb, skb.vlan_proto, skb.vlan_tci)
        skb.data += offset + VLAN_HLEN
        skb.protocol = proto
    skb.priority = vlan.ingress_priority_map[(skb.vlan_tci >> VLAN_PRIO_SHIFT) & 7]
    vlan_hwaccel_clear_tag(skb)
    vlan.rx_packets += 1
    vlan.rx_bytes += skb.tail - skb.data
    if skb.pkt_type == PACKET_MULTICAST:
        vlan.rx_multicast += 1
    return True, skb


def vlan_tag_bytes(proto: int, tci: int) -> bytes:
    """The 4 bytes of an in-band tag (for captures that reinsert it, as libpcap does)."""
    return _HH.pack(proto, tci)
