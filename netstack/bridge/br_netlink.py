"""The bridge's rtnetlink side: ``ip link add … type bridge``, options, ``ip -d`` attributes.

Theory of operation: iproute2's ``link_bridge`` module (userspace) parses
the words into a :class:`BridgeOpts` / :class:`BridgePortOpts` (the
``IFLA_BR_*`` / ``IFLA_BRPORT_*`` attributes of the request); here they are
applied in the kernel's order (``br_changelink``: forward delay, hello time,
max age, ageing time, STP, priority, VLAN filtering, VLAN protocol, default
PVID, group mask, group address), each with the kernel's extack text on a
bad value. :func:`br_fill_info` / :func:`br_port_fill_info` are what
``ip -d link`` and sysfs read.

Kernel: net/bridge/br_netlink.c (br_dev_newlink, br_changelink, br_fill_info,
br_setport, br_port_fill_attrs), net/bridge/br_if.c (br_dev_delete).
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Any, Final

import attrs

from netstack.bridge.br_device import br_dev_setup
from netstack.bridge.br_fdb import br_fdb_delete_by_port, br_fdb_flush
from netstack.bridge.br_if import del_nbp
from netstack.bridge.br_private import (
    BR_BCAST_FLOOD,
    BR_BPDU_GUARD,
    BR_FLOOD,
    BR_GROUPFWD_RESTRICTED,
    BR_HAIRPIN_MODE,
    BR_ISOLATED,
    BR_KERNEL_STP,
    BR_LEARNING,
    BR_MCAST_FLOOD,
    BR_ROOT_BLOCK,
    BR_STATE_BLOCKING,
    BR_STATE_DISABLED,
    NetBridge,
    NetBridgePort,
    br_port_get_rcu,
    jiffies_to_clock_t,
)
from netstack.bridge.br_stp import (
    br_port_state_selection,
    br_set_ageing_time,
    br_set_forward_delay,
    br_set_hello_time,
    br_set_max_age,
    br_set_state,
    br_timer_value,
)
from netstack.bridge.br_stp_if import (
    br_stp_change_bridge_id,
    br_stp_set_bridge_priority,
    br_stp_set_enabled,
    br_stp_set_path_cost,
    br_stp_set_port_priority,
)
from netstack.bridge.br_vlan import (
    br_vlan_filter_toggle,
    br_vlan_set_default_pvid,
    br_vlan_set_proto,
)
from netstack.core.dev import register_netdevice, unregister_netdevice
from netstack.core.netdevice import NET_ADDR_SET
from netstack.errors import ConfigError

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetDevice

__all__ = [
    "BridgeInfo",
    "BridgeOpts",
    "BridgePortInfo",
    "BridgePortOpts",
    "br_changelink",
    "br_dev_delete",
    "br_dev_newlink",
    "br_fill_info",
    "br_port_fill_info",
    "br_setport",
]

_MOD: Final = "Error: bridge: "


@attrs.define
class BridgeOpts:
    """``IFLA_BR_*`` of a request (None: absent). Times in USER_HZ clock ticks."""

    forward_delay: int | None = None
    hello_time: int | None = None
    max_age: int | None = None
    ageing_time: int | None = None
    stp_state: int | None = None
    priority: int | None = None
    vlan_filtering: int | None = None
    vlan_protocol: int | None = None
    vlan_default_pvid: int | None = None
    vlan_stats_enabled: int | None = None
    group_fwd_mask: int | None = None
    group_address: bytes | None = None
    fdb_flush: bool = False


@attrs.define
class BridgePortOpts:
    """``IFLA_BRPORT_*`` of a request (``ip link set … type bridge_slave``, ``bridge link set``)."""

    state: int | None = None
    priority: int | None = None
    cost: int | None = None
    guard: int | None = None
    hairpin: int | None = None
    root_block: int | None = None
    learning: int | None = None
    flood: int | None = None
    mcast_flood: int | None = None
    bcast_flood: int | None = None
    isolated: int | None = None
    fdb_flush: bool = False


def br_dev_newlink(net: Net, name: str | None, data: Any, tb: dict[str, Any]) -> NetDevice:
    """``ip link add NAME type bridge [options]``. Kernel: br_dev_newlink()."""
    dev = br_dev_setup(net, name or "bridge%d")
    address = tb.get("address")
    if address is not None:
        if len(address) != 6:
            raise ConfigError("RTNETLINK answers: Invalid argument", errno.EINVAL)
        dev.dev_addr = bytes(address)
        dev.addr_assign_type = NET_ADDR_SET
    mtu = tb.get("mtu")
    register_netdevice(dev)
    br: NetBridge = dev.priv
    try:
        if address is not None:
            br_stp_change_bridge_id(br, bytes(address))
        if mtu is not None:
            if mtu < dev.min_mtu or mtu > dev.max_mtu:
                raise ConfigError(
                    "Error: mtu greater than device maximum."
                    if mtu > dev.max_mtu
                    else "Error: mtu less than device minimum.",
                    errno.EINVAL,
                )
            dev.mtu = mtu
            br.mtu_set_by_user = True
        if data is not None:
            br_changelink(dev, data)
    except ConfigError:
        unregister_netdevice(dev)
        raise
    return dev


def br_changelink(dev: NetDevice, data: BridgeOpts, tb: dict[str, Any] | None = None) -> None:
    """Apply ``IFLA_BR_*`` in the kernel's order. Kernel: br_netlink.c, br_changelink()."""
    br: NetBridge = dev.priv
    if data.forward_delay is not None:
        br_set_forward_delay(br, data.forward_delay)
    if data.hello_time is not None:
        br_set_hello_time(br, data.hello_time)
    if data.max_age is not None:
        br_set_max_age(br, data.max_age)
    if data.ageing_time is not None:
        br_set_ageing_time(br, data.ageing_time)
    if data.stp_state is not None:
        br_stp_set_enabled(br, data.stp_state)
    if data.priority is not None:
        br_stp_set_bridge_priority(br, data.priority)
    if data.vlan_filtering is not None:
        br_vlan_filter_toggle(br, data.vlan_filtering)
    if data.vlan_protocol is not None:
        br_vlan_set_proto(br, data.vlan_protocol)
    if data.vlan_default_pvid is not None:
        br_vlan_set_default_pvid(br, data.vlan_default_pvid)
    if data.vlan_stats_enabled is not None:
        br.vlan_stats_enabled = bool(data.vlan_stats_enabled)
    if data.group_fwd_mask is not None:
        if data.group_fwd_mask & BR_GROUPFWD_RESTRICTED:
            raise ConfigError(
                _MOD + "Can't set group_fwd_mask as it contains restricted bits.", errno.EINVAL
            )
        br.group_fwd_mask = data.group_fwd_mask
    if data.group_address is not None:
        addr = data.group_address
        if len(addr) != 6:
            raise ConfigError(_MOD + "Invalid group_address length.", errno.EINVAL)
        if addr[:5] != b"\x01\x80\xc2\x00\x00" or addr[5] & 0xF0:
            raise ConfigError(
                _MOD + "Can't set group_address as it is not link local.", errno.EINVAL
            )
        if addr[5] in (1, 2, 3):
            raise ConfigError(
                _MOD + "Can't set group_address as it contains restricted bits.", errno.EINVAL
            )
        br.group_addr = bytes(addr)
    if data.fdb_flush:
        br_fdb_flush(br)


def br_dev_delete(dev: NetDevice) -> None:
    """``ip link del br0``: release every port, then the device. Kernel: br_dev_delete()."""
    br: NetBridge = dev.priv
    for p in list(br.port_list):
        del_nbp(p)
    for f in list(br.fdb.values()):
        if f.dst is None:
            br.fdb.pop((f.addr, f.vlan_id), None)
    br.gc_work.delete()
    br.backlog_timer.delete()
    unregister_netdevice(dev)


def br_setport(p: NetBridgePort, o: BridgePortOpts) -> None:
    """Apply ``IFLA_BRPORT_*``. Kernel: net/bridge/br_netlink.c, br_setport()."""
    flags = p.flags

    def flag(value: int | None, bit: int) -> None:
        nonlocal flags
        if value is not None:
            flags = flags | bit if value else flags & ~bit

    flag(o.guard, BR_BPDU_GUARD)
    flag(o.hairpin, BR_HAIRPIN_MODE)
    flag(o.root_block, BR_ROOT_BLOCK)
    flag(o.learning, BR_LEARNING)
    flag(o.flood, BR_FLOOD)
    flag(o.mcast_flood, BR_MCAST_FLOOD)
    flag(o.bcast_flood, BR_BCAST_FLOOD)
    flag(o.isolated, BR_ISOLATED)
    p.flags = flags
    if o.cost is not None:
        br_stp_set_path_cost(p, o.cost)
    if o.priority is not None:
        br_stp_set_port_priority(p, o.priority)
    if o.state is not None:
        br_set_port_state(p, o.state)
    if o.fdb_flush:
        br_fdb_delete_by_port(p.br, p, 0, False)


def br_set_port_state(p: NetBridgePort, state: int) -> None:
    """Set a port's state by hand (STP off only). Kernel: br_set_port_state()."""
    if state > BR_STATE_BLOCKING:
        raise ConfigError("RTNETLINK answers: Invalid argument", errno.EINVAL)
    if p.br.stp_enabled == BR_KERNEL_STP:
        raise ConfigError("RTNETLINK answers: Device or resource busy", errno.EBUSY)
    dev = p.dev
    if not dev.netif_running() or (not dev.netif_oper_up() and state != BR_STATE_DISABLED):
        raise ConfigError("RTNETLINK answers: Network is down", errno.ENETDOWN)
    br_set_state(p, state)
    br_port_state_selection(p.br)


def br_port_slave_changelink(dev: NetDevice, data: BridgePortOpts) -> None:
    """``ip link set DEV type bridge_slave …``. Kernel: br_port_slave_changelink()."""
    p = br_port_get_rcu(dev)
    if p is None:
        raise ConfigError("RTNETLINK answers: Operation not supported", errno.EOPNOTSUPP)
    br_setport(p, data)


@attrs.frozen
class BridgeInfo:
    """``IFLA_INFO_DATA`` of a bridge, as ``br_fill_info`` reports it (times in USER_HZ)."""

    forward_delay: int
    hello_time: int
    max_age: int
    ageing_time: int
    stp_state: int
    priority: int
    vlan_filtering: int
    vlan_protocol: int
    bridge_id: bytes
    root_id: bytes
    root_port: int
    root_path_cost: int
    topology_change: int
    topology_change_detected: int
    hello_timer: int
    tcn_timer: int
    topology_change_timer: int
    gc_timer: int
    vlan_default_pvid: int
    vlan_stats_enabled: int
    group_fwd_mask: int
    group_addr: bytes


def br_fill_info(dev: NetDevice) -> BridgeInfo:
    """Kernel: net/bridge/br_netlink.c, br_fill_info()."""
    br: NetBridge = dev.priv
    net = dev.net
    return BridgeInfo(
        forward_delay=jiffies_to_clock_t(net, br.forward_delay),
        hello_time=jiffies_to_clock_t(net, br.hello_time),
        max_age=jiffies_to_clock_t(net, br.max_age),
        ageing_time=jiffies_to_clock_t(net, br.ageing_time),
        stp_state=br.stp_enabled,
        priority=int.from_bytes(br.bridge_id[:2], "big"),
        vlan_filtering=int(br.vlan_enabled),
        vlan_protocol=br.vlan_proto,
        bridge_id=br.bridge_id,
        root_id=br.designated_root,
        root_port=br.root_port,
        root_path_cost=br.root_path_cost,
        topology_change=br.topology_change,
        topology_change_detected=br.topology_change_detected,
        hello_timer=br_timer_value(br, br.hello_timer),
        tcn_timer=br_timer_value(br, br.tcn_timer),
        topology_change_timer=br_timer_value(br, br.topology_change_timer),
        gc_timer=br_timer_value(br, br.gc_work),
        vlan_default_pvid=br.default_pvid,
        vlan_stats_enabled=int(br.vlan_stats_enabled),
        group_fwd_mask=br.group_fwd_mask,
        group_addr=br.group_addr,
    )


@attrs.frozen
class BridgePortInfo:
    """``IFLA_INFO_SLAVE_DATA`` of a port (kernel: br_port_fill_attrs)."""

    state: int
    priority: int
    cost: int
    flags: int
    port_id: int
    port_no: int
    designated_port: int
    designated_cost: int
    designated_bridge: bytes
    designated_root: bytes
    hold_timer: int
    message_age_timer: int
    forward_delay_timer: int
    topology_change_ack: int
    config_pending: int
    group_fwd_mask: int


def br_port_fill_info(dev: NetDevice) -> BridgePortInfo | None:
    """Kernel: net/bridge/br_netlink.c, br_port_fill_attrs()."""
    p = br_port_get_rcu(dev)
    if p is None:
        return None
    br = p.br
    return BridgePortInfo(
        state=p.state,
        priority=p.priority,
        cost=p.path_cost,
        flags=p.flags,
        port_id=p.port_id,
        port_no=p.port_no,
        designated_port=p.designated_port,
        designated_cost=p.designated_cost,
        designated_bridge=p.designated_bridge,
        designated_root=p.designated_root,
        hold_timer=br_timer_value(br, p.hold_timer),
        message_age_timer=br_timer_value(br, p.message_age_timer),
        forward_delay_timer=br_timer_value(br, p.forward_delay_timer),
        topology_change_ack=p.topology_change_ack,
        config_pending=p.config_pending,
        group_fwd_mask=p.group_fwd_mask,
    )
