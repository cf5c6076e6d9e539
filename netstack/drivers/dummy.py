"""``dummy``: an Ethernet-like device that counts and frees what it is given.

The device of seed 2's benchmark: with ``IFF_NOARP`` its neighbours are NOARP
(no resolution, always connected), so ``sendto`` exercises the whole output
path — route, neighbour, ``hh_cache``, ``dev_queue_xmit`` — and nothing else.

Kernel: drivers/net/dummy.c.
"""

from __future__ import annotations

from typing import Final

from netstack.core.dev import netif_carrier_off, netif_carrier_on, register_netdevice
from netstack.core.ethernet import ether_setup
from netstack.core.features import (
    NETIF_F_FRAGLIST,
    NETIF_F_GSO_ENCAP_ALL,
    NETIF_F_GSO_SOFTWARE,
    NETIF_F_HIGHDMA,
    NETIF_F_HW_CSUM,
    NETIF_F_LLTX,
    NETIF_F_SG,
)
from netstack.core.net import Net
from netstack.core.netdevice import (
    IFF_LIVE_ADDR_CHANGE,
    IFF_MULTICAST,
    IFF_NO_QUEUE,
    IFF_NOARP,
    NET_ADDR_RANDOM,
    NET_ADDR_SET,
    NETDEV_TX_OK,
    NetDevice,
    NetDeviceOps,
)
from netstack.core.skbuff import SkBuff, consume_skb
from netstack.drivers.common import eth_random_addr
from netstack.sites import TIMED, kernel, spend

__all__ = ["DummyOps", "dummy_newlink"]


class DummyOps(NetDeviceOps):
    """Kernel: dummy_netdev_ops."""

    @kernel("dummy_xmit")
    def ndo_start_xmit(self, skb: SkBuff, dev: NetDevice) -> int:
        """Count and free. Kernel: dummy_xmit()."""
        if TIMED:
            spend("dummy_xmit")
        stats = dev.stats
        stats.tx_packets += 1
        stats.tx_bytes += skb.tail - skb.data
        consume_skb(skb)
        return NETDEV_TX_OK

    @kernel("dummy_change_carrier")
    def ndo_change_carrier(self, dev: NetDevice, on: bool) -> bool:
        """``ip link set dummy0 carrier on|off``. Kernel: dummy_change_carrier()."""
        if on:
            netif_carrier_on(dev)
        else:
            netif_carrier_off(dev)
        return True


DUMMY_OPS: Final = DummyOps()


@kernel("drivers/net/dummy.c", "dummy_setup")
def dummy_setup(dev: NetDevice) -> None:
    """Kernel: drivers/net/dummy.c, dummy_setup()."""
    ether_setup(dev)
    dev.flags |= IFF_NOARP
    dev.flags &= ~IFF_MULTICAST
    dev.priv_flags |= IFF_LIVE_ADDR_CHANGE | IFF_NO_QUEUE
    dev.features |= (
        NETIF_F_SG
        | NETIF_F_FRAGLIST
        | NETIF_F_GSO_SOFTWARE
        | NETIF_F_HW_CSUM
        | NETIF_F_HIGHDMA
        | NETIF_F_LLTX
        | NETIF_F_GSO_ENCAP_ALL
    )
    dev.hw_features |= dev.features
    dev.hw_enc_features |= dev.features
    dev.min_mtu = 0
    dev.max_mtu = 0


def dummy_newlink(net: Net, name: str = "dummy%d", *, addr: bytes | None = None) -> NetDevice:
    """Create and register a dummy device (down). Kernel: rtnl ``type dummy``."""
    dev = NetDevice(net, name, DUMMY_OPS, kind="dummy")
    dummy_setup(dev)
    dev.dev_addr = addr if addr is not None else eth_random_addr(net.rng)
    dev.addr_assign_type = NET_ADDR_SET if addr is not None else NET_ADDR_RANDOM
    register_netdevice(dev)
    return dev
