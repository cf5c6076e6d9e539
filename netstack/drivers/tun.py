"""``tun``: a point-to-point IP device whose other end is a program.

Theory of operation: a tun device carries bare IP packets (``IFF_TUN |
IFF_NO_PI``): no link-layer header, no ARP (``IFF_NOARP``), ``ARPHRD_NONE``.
What the stack transmits on it is handed, skb by skb, to a *reader* — the
user-space program's ``read()`` — and what the program ``write()``s enters the
stack as if it had arrived on the device.

As with ``IFF_VNET_HDR`` and ``TUNSETOFFLOAD(TUN_F_CSUM | TUN_F_TSO4 |
TUN_F_TSO6 | TUN_F_TSO_ECN)`` — the set-up packetdrill uses — the device
advertises checksum and TSO offloads, so the reader gets each skb as TCP built
it: one large TSO skb, not its MSS-sized segments (checksums are filled in
here, as the virtio header's ``VIRTIO_NET_HDR_F_NEEDS_CSUM`` would ask the
reader to do). A write may carry a GSO size (the virtio header's
``gso_size``): the packet then enters as one large GSO skb, the way GRO
would have built it, and the stack segments it only if it must forward it.

The device has a qdisc (``tx_queue_len`` 500, ``TUN_READQ_SIZE``); the reader
is called synchronously from ``ndo_start_xmit`` and may keep the bytes.

Kernel: drivers/net/tun.c.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Final

import trio

from netstack.core.dev import netif_receive_skb, register_netdevice
from netstack.core.features import (
    NETIF_F_FRAGLIST,
    NETIF_F_HW_CSUM,
    NETIF_F_LLTX,
    NETIF_F_SG,
    NETIF_F_TSO,
    NETIF_F_TSO6,
    NETIF_F_TSO_ECN,
    SKB_GSO_DODGY,
    SKB_GSO_TCPV4,
    SKB_GSO_TCPV6,
)
from netstack.core.net import Net
from netstack.core.netdevice import (
    IFF_MULTICAST,
    IFF_NOARP,
    IFF_POINTOPOINT,
    NETDEV_TX_OK,
    NetDevice,
    NetDeviceOps,
)
from netstack.core.skbuff import (
    CHECKSUM_NONE,
    CHECKSUM_PARTIAL,
    SKB_SHINFO_SIZE,
    SkBuff,
    consume_skb,
    skb_head_obj_size,
)
from netstack.sites import kernel
from netstack.wire.checksum import csum_fold, csum_partial

__all__ = [
    "TUN_F_CSUM",
    "TUN_F_TSO4",
    "TUN_F_TSO6",
    "TUN_F_TSO_ECN",
    "TunReader",
    "tun_newlink",
    "tun_set_offload",
    "tun_write",
]

ARPHRD_NONE: Final = 0xFFFE
ETH_P_IP: Final = 0x0800
ETH_P_IPV6: Final = 0x86DD
NET_SKB_PAD: Final = 64
PAGE_SIZE: Final = 4096
TUN_READQ_SIZE: Final = 500
_H: Final = struct.Struct("!H")

# TUNSETOFFLOAD flags (include/uapi/linux/if_tun.h)
TUN_F_CSUM: Final = 0x01
TUN_F_TSO4: Final = 0x02
TUN_F_TSO6: Final = 0x04
TUN_F_TSO_ECN: Final = 0x08

TUN_USER_FEATURES: Final = NETIF_F_HW_CSUM | NETIF_F_TSO_ECN | NETIF_F_TSO | NETIF_F_TSO6

TunReader = Callable[[bytes, float], None]
"""``reader(packet, time)``: an IP packet the stack sent, at virtual *time*."""


class TunPriv:
    """``struct tun_struct`` (the parts this model needs)."""

    __slots__ = ("reader", "set_features")

    def __init__(self) -> None:
        self.reader: TunReader | None = None
        self.set_features = 0


@kernel("drivers/net/tun.c")
class TunOps(NetDeviceOps):
    """Kernel: drivers/net/tun.c, tun_netdev_ops."""

    @kernel("drivers/net/tun.c", "tun_net_xmit")
    def ndo_start_xmit(self, skb: SkBuff, dev: NetDevice) -> int:
        """Hand the skb to the reader as one IP packet.

        Kernel: drivers/net/tun.c, tun_net_xmit().
        """
        priv: TunPriv = dev.priv
        start = skb.network_header if skb.network_header >= 0 else skb.data
        packet = bytearray(skb.buf[start : skb.tail])
        if skb.ip_summed == CHECKSUM_PARTIAL:
            # tun_put_user() passes VIRTIO_NET_HDR_F_NEEDS_CSUM and the reader
            # completes the checksum; this model does it for the reader.
            off = skb.csum_start - start
            where = off + skb.csum_offset
            if off >= 0 and where + 2 <= len(packet):
                _H.pack_into(packet, where, csum_fold(csum_partial(packet, off)) or 0xFFFF)
        stats = dev.stats
        stats.tx_packets += 1
        stats.tx_bytes += len(packet)
        reader = priv.reader
        consume_skb(skb)
        if reader is not None:
            reader(bytes(packet), trio.current_time())
        return NETDEV_TX_OK

    @kernel("drivers/net/tun.c", "tun_net_fix_features")
    def ndo_fix_features(self, dev: NetDevice, features: int) -> int:
        """Kernel: drivers/net/tun.c, tun_net_fix_features()."""
        priv: TunPriv = dev.priv
        return (features & priv.set_features) | (features & ~TUN_USER_FEATURES)


TUN_OPS: Final = TunOps()


@kernel("drivers/net/tun.c", "tun_net_init")
def tun_net_init(dev: NetDevice) -> None:
    """A point-to-point TUN device.

    Kernel: drivers/net/tun.c, tun_net_init().
    """
    dev.hard_header_len = 0
    dev.addr_len = 0
    dev.mtu = 1500
    dev.type = ARPHRD_NONE
    dev.flags = IFF_POINTOPOINT | IFF_NOARP | IFF_MULTICAST
    dev.min_mtu = 68
    dev.max_mtu = 65535
    dev.tx_queue_len = TUN_READQ_SIZE


@kernel("drivers/net/tun.c", "tun_set_iff")
def tun_newlink(net: Net, name: str = "tun%d", *, reader: TunReader | None = None) -> NetDevice:
    """Create and register a tun device (down), as ``TUNSETIFF`` with
    ``IFF_TUN | IFF_NO_PI | IFF_VNET_HDR`` does.

    Kernel: drivers/net/tun.c, tun_set_iff().
    """
    dev = NetDevice(net, name, TUN_OPS, kind="tun")
    priv = TunPriv()
    priv.reader = reader
    dev.priv = priv
    tun_net_init(dev)
    dev.hw_features = NETIF_F_SG | NETIF_F_FRAGLIST | TUN_USER_FEATURES
    dev.features = dev.hw_features | NETIF_F_LLTX
    register_netdevice(dev)
    dev.features = TUN_OPS.ndo_fix_features(dev, dev.features)
    return dev


@kernel("drivers/net/tun.c", "set_offload")
def tun_set_offload(dev: NetDevice, arg: int) -> None:
    """``ioctl(TUNSETOFFLOAD, arg)``.

    Kernel: drivers/net/tun.c, set_offload().
    """
    features = 0
    if arg & TUN_F_CSUM:
        features |= NETIF_F_HW_CSUM
        if arg & (TUN_F_TSO4 | TUN_F_TSO6):
            if arg & TUN_F_TSO_ECN:
                features |= NETIF_F_TSO_ECN
            if arg & TUN_F_TSO4:
                features |= NETIF_F_TSO
            if arg & TUN_F_TSO6:
                features |= NETIF_F_TSO6
    priv: TunPriv = dev.priv
    priv.set_features = features
    wanted = dev.hw_features | NETIF_F_LLTX | (dev.features & ~(dev.hw_features | NETIF_F_LLTX))
    dev.features = TUN_OPS.ndo_fix_features(dev, wanted)


@kernel("drivers/net/tun.c", "tun_get_user", "tun_rx_batched")
def tun_write(dev: NetDevice, packet: bytes | bytearray, *, gso_size: int = 0) -> bool:
    """``write()`` one IP packet into the stack; False if it was dropped.

    *gso_size* is the virtio header's ``gso_size``: a TCP packet longer than
    that enters as one GSO skb (``SKB_GSO_TCPV4``/``TCPV6 | SKB_GSO_DODGY``).

    Kernel: drivers/net/tun.c, tun_get_user() (then netif_receive_skb, as
    tun_rx_batched() does when rx batching is off).
    """
    stats = dev.stats
    if not dev.is_up() or not packet:
        stats.rx_dropped += 1
        return False
    version = packet[0] >> 4
    if version == 4:
        protocol = ETH_P_IP
    elif version == 6:
        protocol = ETH_P_IPV6
    else:
        stats.rx_dropped += 1
        return False
    n = len(packet)
    buf = bytearray(NET_SKB_PAD) + packet
    if NET_SKB_PAD + n < PAGE_SIZE:
        # tun_alloc_skb(): a linear kmalloc'ed head; its tailroom is what the
        # slab object leaves (tcp_try_coalesce() copies later segments there)
        buf += bytes(skb_head_obj_size(NET_SKB_PAD + n) - SKB_SHINFO_SIZE - NET_SKB_PAD - n)
    skb = SkBuff(buf, NET_SKB_PAD, NET_SKB_PAD + n)
    skb.dev = dev
    skb.protocol = protocol
    skb.mac_header = skb.data
    skb.network_header = skb.data
    skb.ip_summed = CHECKSUM_NONE
    if gso_size:
        skb.gso_size = gso_size
        skb.gso_type = (SKB_GSO_TCPV4 if version == 4 else SKB_GSO_TCPV6) | SKB_GSO_DODGY
        skb.gso_segs = 0
    stats.rx_packets += 1
    stats.rx_bytes += n
    netif_receive_skb(skb)
    return True
