"""``/sys/class/net/BR/bridge/*`` and ``/sys/class/net/PORT/brport/*``: the bridge's sysfs files.

Theory of operation: the bridge module registers two attribute groups with
the core's sysfs reader (per Net, at module init): ``bridge`` on bridge
devices and ``brport`` on their ports. Each file prints what the kernel's
``show`` function prints: times in USER_HZ ticks, ids as ``8000.0a0000000001``,
port numbers in hex.

Kernel: net/bridge/br_sysfs_br.c, net/bridge/br_sysfs_if.c.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from netstack.bridge.br_private import (
    BR_BCAST_FLOOD,
    BR_BPDU_GUARD,
    BR_FLOOD,
    BR_HAIRPIN_MODE,
    BR_ISOLATED,
    BR_LEARNING,
    BR_MCAST_FLOOD,
    BR_ROOT_BLOCK,
    NetBridge,
    NetBridgePort,
    br_port_get_rcu,
    jiffies_to_clock_t,
)
from netstack.bridge.br_stp import br_timer_value
from netstack.core.net_sysfs import SYSFS_GROUPS
from netstack.sites import kernel

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetDevice

__all__ = ["br_sysfs_init"]


@kernel("br_show_bridge_id")
def _id(bid: bytes) -> str:
    """Kernel: br_show_bridge_id()."""
    return f"{bid[0]:02x}{bid[1]:02x}.{bid[2:].hex()}"


_BR: Final[dict[str, Callable[[NetBridge], str]]] = {
    "ageing_time": lambda b: str(jiffies_to_clock_t(b.dev.net, b.ageing_time)),
    "bridge_id": lambda b: _id(b.bridge_id),
    "forward_delay": lambda b: str(jiffies_to_clock_t(b.dev.net, b.forward_delay)),
    "gc_timer": lambda b: str(br_timer_value(b, b.gc_work)),
    "group_addr": lambda b: b.group_addr.hex(":"),
    "group_fwd_mask": lambda b: f"{b.group_fwd_mask:#x}",
    "hello_time": lambda b: str(jiffies_to_clock_t(b.dev.net, b.hello_time)),
    "hello_timer": lambda b: str(br_timer_value(b, b.hello_timer)),
    "max_age": lambda b: str(jiffies_to_clock_t(b.dev.net, b.max_age)),
    "priority": lambda b: str(int.from_bytes(b.bridge_id[:2], "big")),
    "root_id": lambda b: _id(b.designated_root),
    "root_path_cost": lambda b: str(b.root_path_cost),
    "root_port": lambda b: str(b.root_port),
    "stp_state": lambda b: str(b.stp_enabled),
    "tcn_timer": lambda b: str(br_timer_value(b, b.tcn_timer)),
    "topology_change": lambda b: str(b.topology_change),
    "topology_change_detected": lambda b: str(b.topology_change_detected),
    "topology_change_timer": lambda b: str(br_timer_value(b, b.topology_change_timer)),
    "vlan_filtering": lambda b: str(int(b.vlan_enabled)),
    "vlan_protocol": lambda b: f"{b.vlan_proto:#06x}",
    "default_pvid": lambda b: str(b.default_pvid),
}


def _flag(bit: int) -> Callable[[NetBridgePort], str]:
    return lambda p: "1" if p.flags & bit else "0"


_PORT: Final[dict[str, Callable[[NetBridgePort], str]]] = {
    "bpdu_guard": _flag(BR_BPDU_GUARD),
    "broadcast_flood": _flag(BR_BCAST_FLOOD),
    "change_ack": lambda p: str(p.topology_change_ack),
    "config_pending": lambda p: str(p.config_pending),
    "designated_bridge": lambda p: _id(p.designated_bridge),
    "designated_cost": lambda p: str(p.designated_cost),
    "designated_port": lambda p: str(p.designated_port),
    "designated_root": lambda p: _id(p.designated_root),
    "forward_delay_timer": lambda p: str(br_timer_value(p.br, p.forward_delay_timer)),
    "hairpin_mode": _flag(BR_HAIRPIN_MODE),
    "hold_timer": lambda p: str(br_timer_value(p.br, p.hold_timer)),
    "isolated": _flag(BR_ISOLATED),
    "learning": _flag(BR_LEARNING),
    "message_age_timer": lambda p: str(br_timer_value(p.br, p.message_age_timer)),
    "multicast_flood": _flag(BR_MCAST_FLOOD),
    "path_cost": lambda p: str(p.path_cost),
    "port_id": lambda p: f"{p.port_id:#x}",
    "port_no": lambda p: f"{p.port_no:#x}",
    "priority": lambda p: str(p.priority),
    "root_block": _flag(BR_ROOT_BLOCK),
    "state": lambda p: str(p.state),
    "unicast_flood": _flag(BR_FLOOD),
}


def _bridge_attr(dev: NetDevice, attr: str) -> str | None:
    show = _BR.get(attr)
    if show is None or not dev.priv_flags & 0x2:  # IFF_EBRIDGE
        return None
    br: NetBridge = dev.priv
    return show(br)


def _brport_attr(dev: NetDevice, attr: str) -> str | None:
    p = br_port_get_rcu(dev)
    show = _PORT.get(attr)
    if p is None or show is None:
        return None
    return show(p)


@kernel("br_sysfs_addbr", "br_sysfs_addif")
def br_sysfs_init(net: Net) -> None:
    """Register the ``bridge`` and ``brport`` groups. Kernel: br_sysfs_addbr(), br_sysfs_addif()."""
    groups = SYSFS_GROUPS.get_or_create(net, dict)
    groups["bridge"] = _bridge_attr
    groups["brport"] = _brport_attr
