"""Ethernet devices: ``ether_setup``, ``eth_type_trans`` and the Ethernet ``header_ops``.

Theory of operation: ``eth_type_trans`` is what every Ethernet driver calls on
receive: it records the MAC header, pulls it, classifies the frame
(``pkt_type``: host, broadcast, multicast, otherhost) and returns the protocol
for ``skb->protocol``. ``EthHeaderOps`` builds headers on transmit and fills
the neighbour's ``hh_cache``: the 14-byte header right-aligned in a 16-byte
slot (``HH_DATA_OFF(14) == 2``), so ``neigh_hh_output`` can copy it whole.

Kernel: net/ethernet/eth.c.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from netstack.core.netdevice import (
    DEFAULT_TX_QUEUE_LEN,
    IFF_BROADCAST,
    IFF_MULTICAST,
    IFF_TX_SKB_SHARING,
    HeaderOps,
)
from netstack.core.skbuff import (
    PACKET_BROADCAST,
    PACKET_MULTICAST,
    PACKET_OTHERHOST,
    SkBuff,
)
from netstack.sites import TIMED, kernel, spend
from netstack.wire.arp import ARPHRD_ETHER
from netstack.wire.ethernet import (
    BROADCAST,
    ETH_ALEN,
    ETH_DATA_LEN,
    ETH_HDR,
    ETH_HLEN,
    ETH_MIN_MTU,
    ETH_P_802_2,
    ETH_P_802_3,
    ETH_P_802_3_MIN,
)

if TYPE_CHECKING:
    from netstack.core.netdevice import NetDevice

__all__ = ["ETH_HEADER_OPS", "HH_DATA_MOD", "EthHeaderOps", "eth_type_trans", "ether_setup"]

HH_DATA_MOD: Final = 16


def HH_DATA_OFF(hlen: int) -> int:
    """Offset of a *hlen*-byte header right-aligned in a 16-byte slot."""
    return HH_DATA_MOD - (((hlen - 1) & (HH_DATA_MOD - 1)) + 1)


def HH_DATA_ALIGN(hlen: int) -> int:
    """*hlen* rounded up to a multiple of 16."""
    return (hlen + (HH_DATA_MOD - 1)) & ~(HH_DATA_MOD - 1)


def LL_RESERVED_SPACE(dev: NetDevice) -> int:
    """Headroom to reserve for *dev*'s link-layer header, 16-byte rounded."""
    return ((dev.hard_header_len + dev.needed_headroom) & ~(HH_DATA_MOD - 1)) + HH_DATA_MOD


@kernel("net/ethernet/eth.c", "eth_type_trans", "eth_skb_pkt_type")
def eth_type_trans(skb: SkBuff, dev: NetDevice) -> int:
    """Classify a received frame, pull its header and return its protocol.

    The caller guarantees at least ``ETH_HLEN`` bytes. The classification is
    ``eth_skb_pkt_type`` (a static inline of etherdevice.h since 2024; the
    lines it replaced in eth.c had the same order): our own address first,
    then the group bit. An older eth.c tested the group bit first, as netstack
    did until December 2026; both orders classify every frame alike, since a
    device's address is never a group one (``dev_set_mac_address`` and the
    drivers' ``validate`` refuse it): the order only saves work on the common
    case, a unicast frame to us.

    veth's ``ndo_start_xmit`` has a written-out copy: keep in step with
    netstack/drivers/veth.py, ``VethOps.ndo_start_xmit``.

    Kernel: net/ethernet/eth.c, eth_type_trans(); eth_skb_pkt_type().
    """
    if TIMED:
        spend("eth_type_trans")
    skb.dev = dev
    buf = skb.buf
    d = skb.data
    skb.mac_header = d
    skb.data = d + ETH_HLEN
    # eth_skb_pkt_type(), written out
    h_dest = buf[d : d + ETH_ALEN]
    if h_dest != dev.dev_addr:
        if h_dest[0] & 1:
            if h_dest == dev.broadcast:
                skb.pkt_type = PACKET_BROADCAST
            else:
                skb.pkt_type = PACKET_MULTICAST
        else:
            skb.pkt_type = PACKET_OTHERHOST
    proto = (buf[d + 12] << 8) | buf[d + 13]
    if proto >= ETH_P_802_3_MIN:
        return proto
    # 802.3 length field: Novell raw IPX (0xFFFF) or 802.2 LLC.
    if buf[d + 14 : d + 16] == b"\xff\xff":
        return ETH_P_802_3
    return ETH_P_802_2


class EthHeaderOps(HeaderOps):
    """Ethernet's ``header_ops`` (kernel: ``eth_header_ops``)."""

    has_cache = True

    @kernel("eth_header")
    def create(
        self,
        skb: SkBuff,
        dev: NetDevice,
        proto: int,
        daddr: bytes | None,
        saddr: bytes | None,
        length: int,
    ) -> int:
        """Push a 14-byte header. Kernel: eth_header()."""
        off = skb.push(ETH_HLEN)
        if saddr is None:
            saddr = dev.dev_addr
        if daddr is None:
            ETH_HDR.pack_into(skb.buf, off, b"\x00" * 6, saddr, proto)
            return -ETH_HLEN
        ETH_HDR.pack_into(skb.buf, off, daddr, saddr, proto)
        return ETH_HLEN

    @kernel("eth_header_parse")
    def parse(self, skb: SkBuff) -> bytes:
        """The sender's MAC. Kernel: eth_header_parse()."""
        m = skb.mac_header
        return bytes(skb.buf[m + 6 : m + 12])

    @kernel("eth_header_cache")
    def cache(self, neigh: Any, hh: Any, proto: int) -> bool:
        """Fill ``hh`` from the neighbour. Kernel: eth_header_cache()."""
        dev = neigh.dev
        off = HH_DATA_OFF(ETH_HLEN)
        ETH_HDR.pack_into(hh.hh_data, off, neigh.ha, dev.dev_addr, proto)
        hh.hh_len = ETH_HLEN
        return True

    @kernel("eth_header_cache_update")
    def cache_update(self, hh: Any, dev: NetDevice, haddr: bytes) -> None:
        """Rewrite the destination MAC. Kernel: eth_header_cache_update()."""
        off = HH_DATA_OFF(ETH_HLEN)
        hh.hh_data[off : off + ETH_ALEN] = haddr


ETH_HEADER_OPS: Final = EthHeaderOps()


@kernel("net/ethernet/eth.c", "ether_setup")
def ether_setup(dev: NetDevice) -> None:
    """Make *dev* an Ethernet device. Kernel: net/ethernet/eth.c, ether_setup()."""
    dev.header_ops = ETH_HEADER_OPS
    dev.type = ARPHRD_ETHER
    dev.hard_header_len = ETH_HLEN
    dev.min_header_len = ETH_HLEN
    dev.mtu = ETH_DATA_LEN
    dev.min_mtu = ETH_MIN_MTU
    dev.max_mtu = ETH_DATA_LEN
    dev.addr_len = ETH_ALEN
    dev.tx_queue_len = DEFAULT_TX_QUEUE_LEN
    dev.flags = IFF_BROADCAST | IFF_MULTICAST
    dev.priv_flags |= IFF_TX_SKB_SHARING
    dev.broadcast = BROADCAST
