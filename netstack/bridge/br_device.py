"""The bridge device: what the host sends through ``br0``, and the device's life cycle.

Theory of operation: a bridge is an Ethernet device (random MAC until it
takes its lowest port's) with no queue (``IFF_NO_QUEUE``, LLTX). What the
host sends through it (``br_dev_xmit``) goes through the same decision as a
received frame, minus learning: broadcast and multicast flood, a known
unicast goes to its port, an unknown one floods. Bringing the bridge up
starts STP's hello timer (if on), the FDB garbage collector (first run 100
ms later) and enables the ports that are up; bringing it down disables them.

The ops include ``ndo_add_slave`` / ``ndo_del_slave`` (``ip link set DEV
master br0`` / ``nomaster``) and ``ndo_fdb_add`` / ``ndo_fdb_del`` /
``ndo_fdb_dump`` (``bridge fdb``).

Kernel: net/bridge/br_device.c.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from netstack.bridge.br_fdb import (
    br_fdb_add,
    br_fdb_cleanup,
    br_fdb_delete,
    br_fdb_dump,
    br_fdb_find,
    is_valid_ether_addr,
)
from netstack.bridge.br_forward import (
    BR_PKT_BROADCAST,
    BR_PKT_MULTICAST,
    BR_PKT_UNICAST,
    br_flood,
    br_forward,
)
from netstack.bridge.br_if import br_add_if, br_del_if
from netstack.bridge.br_input import br_backlog_run
from netstack.bridge.br_private import NetBridge
from netstack.bridge.br_stp import br_stp_timer_init
from netstack.bridge.br_stp_if import (
    br_stp_change_bridge_id,
    br_stp_disable_bridge,
    br_stp_enable_bridge,
)
from netstack.bridge.br_vlan import br_allowed_ingress, br_vlan_init
from netstack.core.ethernet import ether_setup
from netstack.core.features import (
    NETIF_F_FRAGLIST,
    NETIF_F_GSO_MASK,
    NETIF_F_HIGHDMA,
    NETIF_F_HW_CSUM,
    NETIF_F_HW_VLAN_CTAG_TX,
    NETIF_F_HW_VLAN_STAG_TX,
    NETIF_F_LLTX,
    NETIF_F_NETNS_LOCAL,
    NETIF_F_SG,
)
from netstack.core.netdevice import (
    IFF_EBRIDGE,
    IFF_LIVE_ADDR_CHANGE,
    IFF_NO_QUEUE,
    NET_ADDR_RANDOM,
    NET_ADDR_SET,
    NETDEV_TX_OK,
    NetDevice,
    NetDeviceOps,
)
from netstack.core.skbuff import SkBuff
from netstack.drivers.common import eth_random_addr
from netstack.errors import ConfigError

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = ["BR_OPS", "BridgeOps", "br_dev_setup", "br_dev_xmit"]

COMMON_FEATURES: Final = (
    NETIF_F_SG | NETIF_F_FRAGLIST | NETIF_F_HIGHDMA | NETIF_F_GSO_MASK | NETIF_F_HW_CSUM
)
ETH_MAX_MTU: Final = 0xFFFF
_BCAST: Final = b"\xff\xff\xff\xff\xff\xff"


def br_dev_xmit(skb: SkBuff, dev: NetDevice) -> int:
    """The host sends through the bridge. Kernel: net/bridge/br_device.c, br_dev_xmit()."""
    br: NetBridge = dev.priv
    st = dev.stats
    st.tx_packets += 1
    st.tx_bytes += skb.tail - skb.data
    skb.cb = None
    m = skb.data
    skb.mac_header = m
    skb.data = m + 14  # skb_pull(skb, ETH_HLEN)
    vid = br_allowed_ingress(br, br.vlgrp, skb)
    if vid < 0:
        return NETDEV_TX_OK
    buf = skb.buf
    if buf[m] & 1:
        if buf[m : m + 6] == _BCAST:
            br_flood(br, skb, BR_PKT_BROADCAST, False, True)
        else:
            br_flood(br, skb, BR_PKT_MULTICAST, False, True)
        return NETDEV_TX_OK
    dst = br.fdb.get((bytes(buf[m : m + 6]), vid))
    if dst is not None:
        br_forward(dst.dst, skb, False, True, False)
    else:
        br_flood(br, skb, BR_PKT_UNICAST, False, True)
    return NETDEV_TX_OK


class BridgeOps(NetDeviceOps):
    """Kernel: br_netdev_ops."""

    has_add_slave = True

    def ndo_init(self, dev: NetDevice) -> None:
        """Kernel: br_dev_init() (the bridge's default VLAN 1)."""
        br_vlan_init(dev.priv)

    def ndo_open(self, dev: NetDevice) -> None:
        """Kernel: br_dev_open()."""
        br_stp_enable_bridge(dev.priv)

    def ndo_stop(self, dev: NetDevice) -> None:
        """Kernel: br_dev_stop()."""
        br_stp_disable_bridge(dev.priv)

    def ndo_start_xmit(self, skb: SkBuff, dev: NetDevice) -> int:
        return br_dev_xmit(skb, dev)

    def ndo_change_mtu(self, dev: NetDevice, new_mtu: int) -> None:
        """Kernel: br_change_mtu() (the user's MTU sticks)."""
        dev.mtu = new_mtu
        dev.priv.mtu_set_by_user = True

    def ndo_set_mac_address(self, dev: NetDevice, addr: bytes) -> None:
        """Kernel: br_set_mac_address() (and the address is now the user's)."""
        if not is_valid_ether_addr(addr):
            raise ConfigError("RTNETLINK answers: Cannot assign requested address", 99)
        br: NetBridge = dev.priv
        dev.addr_assign_type = NET_ADDR_SET
        if dev.dev_addr != addr:
            br_stp_change_bridge_id(br, bytes(addr))

    def ndo_add_slave(self, dev: NetDevice, slave: NetDevice) -> None:
        """Kernel: br_add_slave()."""
        br_add_if(dev.priv, slave)

    def ndo_del_slave(self, dev: NetDevice, slave: NetDevice) -> None:
        """Kernel: br_del_slave()."""
        br_del_if(dev.priv, slave)

    def ndo_fdb_add(
        self,
        ndm_state: int,
        ndm_flags: int,
        tb: Mapping[int, Any],
        dev: NetDevice,
        addr: bytes,
        vid: int,
        nlflags: int,
    ) -> None:
        br_fdb_add(ndm_state, ndm_flags, tb, dev, addr, vid, nlflags)

    def ndo_fdb_del(
        self,
        ndm_state: int,
        ndm_flags: int,
        tb: Mapping[int, Any],
        dev: NetDevice,
        addr: bytes,
        vid: int,
    ) -> None:
        br_fdb_delete(ndm_state, ndm_flags, tb, dev, addr, vid)

    def ndo_fdb_dump(self, dev: NetDevice, filter_dev: NetDevice | None) -> list[Any]:
        return br_fdb_dump(dev, filter_dev)


BR_OPS: Final = BridgeOps()


def br_dev_setup(net: Net, name: str) -> NetDevice:
    """Allocate a bridge device (not registered). Kernel: net/bridge/br_device.c, br_dev_setup()."""
    dev = NetDevice(net, name, BR_OPS, kind="bridge")
    ether_setup(dev)
    dev.dev_addr = eth_random_addr(net.rng)  # eth_hw_addr_random()
    dev.addr_assign_type = NET_ADDR_RANDOM
    # the kernel sets IFF_EBRIDGE | IFF_NO_QUEUE; LIVE_ADDR_CHANGE stands for its
    # br_set_mac_address() accepting a change while up
    dev.priv_flags = IFF_EBRIDGE | IFF_NO_QUEUE | IFF_LIVE_ADDR_CHANGE
    dev.features = (
        COMMON_FEATURES
        | NETIF_F_LLTX
        | NETIF_F_NETNS_LOCAL
        | NETIF_F_HW_VLAN_CTAG_TX
        | NETIF_F_HW_VLAN_STAG_TX
    )
    dev.hw_features = COMMON_FEATURES | NETIF_F_HW_VLAN_CTAG_TX | NETIF_F_HW_VLAN_STAG_TX
    dev.vlan_features = COMMON_FEATURES
    dev.max_mtu = ETH_MAX_MTU
    br = NetBridge(dev)
    dev.priv = br
    br_stp_timer_init(br)
    br.gc_work.function = lambda: br_fdb_cleanup(br)
    br.backlog_timer.function = lambda: br_backlog_run(br)
    return dev


def br_lookup_port(br: NetBridge, addr: bytes, vid: int) -> str | None:
    """Which port *addr* is behind (for tests and ``dump``); None if unknown."""
    f = br_fdb_find(br, addr, vid)
    if f is None:
        return None
    return f.dst.dev.name if f.dst is not None else br.dev.name
