"""Adding and removing bridge ports, and what the bridge hears of its ports' events.

Theory of operation: ``br_add_if`` refuses what the kernel refuses (a
non-Ethernet device, loopback, a bridge — "Can not enslave a bridge to a
bridge" —, a device that already has a master), then makes the port:
lowest free port number, cost from the link speed, flags
learning/flood/mcast_flood/bcast_flood, promiscuous and all-multicast on
the device, ``br_handle_frame`` as its rx_handler, a local FDB entry for
its MAC, the default PVID, and — if the device is up with carrier and the
bridge is up — STP's port enable. The bridge may take the new port's MAC
(the lowest of its ports). ``br_del_if`` undoes it all.

``br_device_event`` is the bridge's netdevice notifier: a port going down
or losing carrier is disabled (its learnt entries flushed), coming back is
re-enabled, a port MAC change moves its local entries, a port being
unregistered is removed.

Kernel: net/bridge/br_if.c, net/bridge/br_notify.c.
"""

from __future__ import annotations

import errno
import logging
from typing import TYPE_CHECKING, Final

from netstack.bridge.br_fdb import br_fdb_add_local, br_fdb_changeaddr, br_fdb_delete_by_port
from netstack.bridge.br_input import br_handle_frame
from netstack.bridge.br_private import (
    BR_ADMIN_COST,
    BR_MAX_PORTS,
    BR_STATE_DISABLED,
    NetBridge,
    NetBridgePort,
    br_port_get_rcu,
)
from netstack.bridge.br_stp import br_set_state, br_stp_port_timer_init
from netstack.bridge.br_stp_if import (
    br_init_port,
    br_stp_disable_port,
    br_stp_enable_port,
    br_stp_recalculate_bridge_id,
)
from netstack.bridge.br_vlan import nbp_vlan_init
from netstack.core.dev import (
    NETDEV_CHANGE,
    NETDEV_CHANGEADDR,
    NETDEV_CHANGEMTU,
    NETDEV_DOWN,
    NETDEV_UNREGISTER,
    NETDEV_UP,
    dev_set_allmulti,
    dev_set_promiscuity,
    netdev_master_upper_dev_link,
    netdev_rx_handler_register,
    netdev_rx_handler_unregister,
    netdev_upper_dev_unlink,
)
from netstack.core.netdevice import IFF_BRIDGE_PORT, IFF_EBRIDGE, IFF_LOOPBACK
from netstack.errors import ConfigError
from netstack.sites import kernel

if TYPE_CHECKING:
    from netstack.core.netdevice import NetDevice

__all__ = ["br_add_if", "br_del_if", "br_device_event", "br_port_carrier_check", "port_cost"]

SPEED_UNKNOWN: Final = -1


def _link_speed(dev: NetDevice) -> int:
    """Mb/s as ``__ethtool_get_link_ksettings`` would report it (veth: 10000)."""
    if dev.kind == "veth":
        return 10000
    if dev.kind == "nic":
        rate = getattr(dev.priv, "rate", None)
        return 10000 if rate is None else int(rate // 1_000_000)
    return SPEED_UNKNOWN


@kernel("net/bridge/br_if.c", "port_cost")
def port_cost(dev: NetDevice) -> int:
    """The 802.1D path cost for the device's speed. Kernel: net/bridge/br_if.c, port_cost()."""
    speed = _link_speed(dev)
    if dev.kind in ("veth", "nic"):
        if speed == 10000:
            return 2
        if speed == 5000:
            return 3
        if speed in (2500, 1000):
            return 4
        if speed == 100:
            return 19
        if speed == 10:
            return 100
        if speed > 10000:
            return 1
    return 100  # "assume old 10Mbps"


@kernel("find_portno")
def _find_portno(br: NetBridge) -> int:
    """Kernel: find_portno() (port 0 is reserved)."""
    used = {p.port_no for p in br.port_list}
    for i in range(1, BR_MAX_PORTS):
        if i not in used:
            return i
    raise ConfigError("RTNETLINK answers: Numerical argument out of domain", errno.EXFULL)


@kernel("br_mtu_auto_adjust")
def br_mtu_auto_adjust(br: NetBridge) -> None:
    """The MTU follows the smallest port's unless set by hand. Kernel: br_mtu_auto_adjust()."""
    if br.mtu_set_by_user or not br.port_list:
        return
    mtu = min(p.dev.mtu for p in br.port_list)
    if mtu != br.dev.mtu:
        br.dev.mtu = mtu


@kernel("net/bridge/br_if.c", "br_add_if")
def br_add_if(br: NetBridge, dev: NetDevice) -> None:
    """Enslave *dev* to the bridge. Kernel: net/bridge/br_if.c, br_add_if()."""
    if (
        dev.flags & IFF_LOOPBACK
        or dev.type != 1
        or dev.addr_len != 6
        or dev.dev_addr[0] & 1
        or dev.dev_addr == bytes(6)
    ):
        raise ConfigError("RTNETLINK answers: Invalid argument", errno.EINVAL)
    if dev.priv_flags & IFF_EBRIDGE:
        raise ConfigError("Error: Can not enslave a bridge to a bridge.", errno.ELOOP)
    if dev.master is not None:
        raise ConfigError("RTNETLINK answers: Device or resource busy", errno.EBUSY)
    p = NetBridgePort(br, dev, _find_portno(br))
    p.path_cost = port_cost(dev)
    br_init_port(p)
    br_set_state(p, BR_STATE_DISABLED)
    br_stp_port_timer_init(p)
    dev_set_allmulti(dev, 1)
    netdev_rx_handler_register(dev, br_handle_frame, p)
    dev.priv_flags |= IFF_BRIDGE_PORT
    try:
        netdev_master_upper_dev_link(dev, br.dev)
    except ConfigError:
        dev.priv_flags &= ~IFF_BRIDGE_PORT
        netdev_rx_handler_unregister(dev)
        dev_set_allmulti(dev, -1)
        raise
    br.port_list.append(p)
    dev_set_promiscuity(dev, 1)  # nbp_update_port_count(): every port is promiscuous
    br_fdb_add_local(br, p, bytes(dev.dev_addr), 0)
    nbp_vlan_init(p)
    changed_addr = br_stp_recalculate_bridge_id(br)
    if dev.netif_running() and dev.netif_oper_up() and br.dev.flags & 0x1:
        br_stp_enable_port(p)
    if changed_addr:
        br.dev.net.call_netdevice_notifiers(NETDEV_CHANGEADDR, br.dev)
    br_mtu_auto_adjust(br)
    if br.log.isEnabledFor(logging.INFO):
        br.log.info("br_add_if", msg=f"port {p.port_no}({dev.name}) entered disabled state")


@kernel("net/bridge/br_if.c", "del_nbp")
def del_nbp(p: NetBridgePort) -> None:
    """Kernel: net/bridge/br_if.c, del_nbp()."""
    br = p.br
    dev = p.dev
    dev_set_allmulti(dev, -1)
    dev_set_promiscuity(dev, -1)
    br_stp_disable_port(p)
    br.port_list.remove(p)
    for q in list(br.backlog):
        if q.dev is dev:
            br.backlog.remove(q)
            from netstack.core.skbuff import DropReason, kfree_skb

            kfree_skb(q, DropReason.DEV_READY)
    p.vlgrp.vlans.clear()  # nbp_vlan_flush()
    br_fdb_delete_by_port(br, p, 0, True)
    dev.priv_flags &= ~IFF_BRIDGE_PORT
    netdev_rx_handler_unregister(dev)
    netdev_upper_dev_unlink(dev, br.dev)
    p.message_age_timer.delete()
    p.forward_delay_timer.delete()
    p.hold_timer.delete()


@kernel("net/bridge/br_if.c", "br_del_if")
def br_del_if(br: NetBridge, dev: NetDevice) -> None:
    """Release a port. Kernel: net/bridge/br_if.c, br_del_if()."""
    p = br_port_get_rcu(dev)
    if p is None or p.br is not br:
        raise ConfigError("RTNETLINK answers: Invalid argument", errno.EINVAL)
    del_nbp(p)
    br_mtu_auto_adjust(br)
    if br_stp_recalculate_bridge_id(br):
        br.dev.net.call_netdevice_notifiers(NETDEV_CHANGEADDR, br.dev)


@kernel("net/bridge/br_if.c", "br_port_carrier_check")
def br_port_carrier_check(p: NetBridgePort) -> None:
    """Carrier changed on a port. Kernel: net/bridge/br_if.c, br_port_carrier_check()."""
    dev = p.dev
    br = p.br
    if not p.flags & BR_ADMIN_COST and dev.netif_running() and dev.netif_oper_up():
        p.path_cost = port_cost(dev)
    if not br.dev.netif_running():
        return
    if dev.netif_running() and dev.netif_oper_up() and dev.carrier:
        if p.state == BR_STATE_DISABLED:
            br_stp_enable_port(p)
    elif p.state != BR_STATE_DISABLED:
        br_stp_disable_port(p)


@kernel("br_notify.c", "br_device_event")
def br_device_event(event: int, dev: NetDevice) -> None:
    """The bridge's netdevice notifier, for ports. Kernel: br_notify.c, br_device_event()."""
    p = br_port_get_rcu(dev)
    if p is None:
        return
    br = p.br
    if event == NETDEV_CHANGEMTU:
        br_mtu_auto_adjust(br)
    elif event == NETDEV_CHANGEADDR:
        br_fdb_changeaddr(p, bytes(dev.dev_addr))
        if br_stp_recalculate_bridge_id(br):
            br.dev.net.call_netdevice_notifiers(NETDEV_CHANGEADDR, br.dev)
    elif event == NETDEV_CHANGE:
        br_port_carrier_check(p)
    elif event == NETDEV_DOWN:
        if br.dev.flags & 0x1 and p.state != BR_STATE_DISABLED:
            br_stp_disable_port(p)
    elif event == NETDEV_UP:
        # netstack's linkwatch is synchronous, so a veth's carrier (NETDEV_CHANGE)
        # may already have enabled the port; the kernel sees NETDEV_UP first
        if (
            br.dev.netif_running()
            and dev.netif_oper_up()
            and dev.carrier
            and p.state == BR_STATE_DISABLED
        ):
            br_stp_enable_port(p)
    elif event == NETDEV_UNREGISTER:
        br_del_if(br, dev)
