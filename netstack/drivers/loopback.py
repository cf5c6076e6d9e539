"""``lo``: what is sent comes back in through the backlog.

Kernel: drivers/net/loopback.c.
"""

from __future__ import annotations

from typing import Final

from netstack.core.dev import netif_rx, register_netdevice, skb_orphan
from netstack.core.ethernet import ETH_HEADER_OPS, eth_type_trans
from netstack.core.features import (
    NETIF_F_FRAGLIST,
    NETIF_F_GSO_SOFTWARE,
    NETIF_F_HIGHDMA,
    NETIF_F_HW_CSUM,
    NETIF_F_LLTX,
    NETIF_F_LOOPBACK,
    NETIF_F_NETNS_LOCAL,
    NETIF_F_RXCSUM,
    NETIF_F_SCTP_CRC,
    NETIF_F_SG,
    NETIF_F_VLAN_CHALLENGED,
)
from netstack.core.net import Net
from netstack.core.netdevice import (
    IFF_LIVE_ADDR_CHANGE,
    IFF_LOOPBACK,
    IFF_NO_QUEUE,
    IFF_XMIT_DST_RELEASE,
    NETDEV_TX_OK,
    DevStats,
    NetDevice,
    NetDeviceOps,
)
from netstack.core.skbuff import SkBuff
from netstack.sites import TIMED, kernel, spend
from netstack.wire.arp import ARPHRD_LOOPBACK
from netstack.wire.ethernet import ETH_ALEN, ETH_HLEN

__all__ = ["LOOPBACK_IFINDEX", "LoopbackOps", "loopback_net_init"]

LOOPBACK_IFINDEX: Final = 1


class LoopbackOps(NetDeviceOps):
    """Kernel: loopback_ops."""

    @kernel("loopback_xmit")
    def ndo_start_xmit(self, skb: SkBuff, dev: NetDevice) -> int:
        """Turn the packet around. Kernel: loopback_xmit()."""
        if TIMED:
            spend("loopback_xmit")
        skb_orphan(skb)
        skb.protocol = eth_type_trans(skb, dev)
        length = skb.tail - skb.data
        if netif_rx(skb) == 0:
            dev.priv[0] += 1
            dev.priv[1] += length
        return NETDEV_TX_OK

    @kernel("loopback_get_stats64")
    def ndo_get_stats64(self, dev: NetDevice, stats: DevStats) -> None:
        """rx and tx are the same packets. Kernel: loopback_get_stats64()."""
        packets, nbytes = dev.priv
        stats.rx_packets += packets
        stats.tx_packets += packets
        stats.rx_bytes += nbytes
        stats.tx_bytes += nbytes


LOOPBACK_OPS: Final = LoopbackOps()


@kernel("drivers/net/loopback.c", "gen_lo_setup")
def loopback_setup(dev: NetDevice) -> None:
    """Kernel: drivers/net/loopback.c, gen_lo_setup()."""
    dev.mtu = 64 * 1024
    dev.hard_header_len = ETH_HLEN
    dev.min_header_len = ETH_HLEN
    dev.addr_len = ETH_ALEN
    dev.type = ARPHRD_LOOPBACK
    dev.flags = IFF_LOOPBACK
    dev.priv_flags |= IFF_LIVE_ADDR_CHANGE | IFF_NO_QUEUE
    dev.priv_flags &= ~IFF_XMIT_DST_RELEASE  # netif_keep_dst()
    dev.hw_features = NETIF_F_GSO_SOFTWARE
    dev.features = (
        NETIF_F_SG
        | NETIF_F_FRAGLIST
        | NETIF_F_GSO_SOFTWARE
        | NETIF_F_HW_CSUM
        | NETIF_F_RXCSUM
        | NETIF_F_SCTP_CRC
        | NETIF_F_HIGHDMA
        | NETIF_F_LLTX
        | NETIF_F_NETNS_LOCAL
        | NETIF_F_VLAN_CHALLENGED
        | NETIF_F_LOOPBACK
    )
    dev.header_ops = ETH_HEADER_OPS
    dev.dev_addr = bytes(ETH_ALEN)
    dev.broadcast = bytes(ETH_ALEN)
    dev.min_mtu = 0
    dev.max_mtu = 0


@kernel("loopback_net_init")
def loopback_net_init(net: Net) -> NetDevice:
    """Create ``lo`` as ifindex 1 (down; the host brings it up). Kernel: loopback_net_init()."""
    dev = NetDevice(net, "lo", LOOPBACK_OPS, kind="")
    loopback_setup(dev)
    dev.priv = [0, 0]
    dev.ifindex = LOOPBACK_IFINDEX
    register_netdevice(dev)
    return dev
