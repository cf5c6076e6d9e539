"""The bridge's state: ``struct net_bridge``, ``net_bridge_port``, FDB entries, VLANs.

Theory of operation: a bridge device's ``priv`` is a :class:`NetBridge`; each
enslaved device's ``rx_handler_data`` is its :class:`NetBridgePort`. Times
are kept in jiffies of the bridge's Net, as the kernel keeps them, and the
user-visible values (``ageing_time 30000``, ``forward_delay 1500``) are
USER_HZ clock ticks, converted at the netlink boundary. A bridge id is the
8 bytes the kernel compares with ``memcmp``: 2 bytes of priority, then the
MAC, so Python's ``bytes`` ordering is the 802.1D ordering.

Kernel: net/bridge/br_private.h, net/bridge/br_private_stp.h.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Any, Final

import attrs

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetDevice
    from netstack.core.timer import TimerList

__all__ = [
    "BR_STATE_BLOCKING",
    "BR_STATE_DISABLED",
    "BR_STATE_FORWARDING",
    "BR_STATE_LEARNING",
    "BR_STATE_LISTENING",
    "BR_STATE_NAMES",
    "BridgePortStats",
    "BridgeStats",
    "FdbEntry",
    "NetBridge",
    "NetBridgePort",
    "NetBridgeVlan",
    "VlanGroup",
    "br_is_designated_port",
    "br_is_root_bridge",
    "br_port_get_rcu",
]

# port states (include/uapi/linux/if_bridge.h)
BR_STATE_DISABLED: Final = 0
BR_STATE_LISTENING: Final = 1
BR_STATE_LEARNING: Final = 2
BR_STATE_FORWARDING: Final = 3
BR_STATE_BLOCKING: Final = 4
BR_STATE_NAMES: Final = ("disabled", "listening", "learning", "forwarding", "blocking")

# br->stp_enabled
BR_NO_STP: Final = 0
BR_KERNEL_STP: Final = 1
BR_USER_STP: Final = 2

# port flags (include/linux/if_bridge.h)
BR_HAIRPIN_MODE: Final = 1 << 0
BR_BPDU_GUARD: Final = 1 << 1
BR_ROOT_BLOCK: Final = 1 << 2
BR_MULTICAST_FAST_LEAVE: Final = 1 << 3
BR_ADMIN_COST: Final = 1 << 4
BR_LEARNING: Final = 1 << 5
BR_FLOOD: Final = 1 << 6
BR_PROMISC: Final = 1 << 7
BR_PROXYARP: Final = 1 << 8
BR_PROXYARP_WIFI: Final = 1 << 10
BR_MCAST_FLOOD: Final = 1 << 11
BR_MULTICAST_TO_UNICAST: Final = 1 << 12
BR_VLAN_TUNNEL: Final = 1 << 13
BR_BCAST_FLOOD: Final = 1 << 14
BR_NEIGH_SUPPRESS: Final = 1 << 15
BR_ISOLATED: Final = 1 << 16
BR_PORT_LOCKED: Final = 1 << 21
BR_PORT_MAB: Final = 1 << 22

# FDB entry flag bits (enum net_bridge_fdb_flags)
BR_FDB_LOCAL: Final = 1 << 0
BR_FDB_STATIC: Final = 1 << 1
BR_FDB_STICKY: Final = 1 << 2
BR_FDB_ADDED_BY_USER: Final = 1 << 3
BR_FDB_ADDED_BY_EXT_LEARN: Final = 1 << 4

# bridge VLAN flags (include/uapi/linux/if_bridge.h, BRIDGE_VLAN_INFO_*)
BRIDGE_VLAN_INFO_MASTER: Final = 1 << 0
BRIDGE_VLAN_INFO_PVID: Final = 1 << 1
BRIDGE_VLAN_INFO_UNTAGGED: Final = 1 << 2
BRIDGE_VLAN_INFO_RANGE_BEGIN: Final = 1 << 3
BRIDGE_VLAN_INFO_RANGE_END: Final = 1 << 4
BRIDGE_VLAN_INFO_BRENTRY: Final = 1 << 5

BR_PORT_BITS: Final = 10
BR_MAX_PORTS: Final = 1 << BR_PORT_BITS
BR_GROUPFWD_DEFAULT: Final = 0
BR_GROUPFWD_RESTRICTED: Final = 0x7  # STP, MAC pause, LACP
BR_MIN_PATH_COST: Final = 1
BR_MAX_PATH_COST: Final = 65535
BR_MAX_PORT_PRIORITY: Final = 0xFFFF >> BR_PORT_BITS
USER_HZ: Final = 100
ETH_STP_ADDR: Final = b"\x01\x80\xc2\x00\x00\x00"


def clock_t_to_jiffies(net: Net, x: int) -> int:
    """USER_HZ ticks → jiffies. Kernel: clock_t_to_jiffies()."""
    return x * net.clock.hz // USER_HZ


def jiffies_to_clock_t(net: Net, j: int) -> int:
    """Kernel: jiffies_to_clock_t()."""
    return j * USER_HZ // net.clock.hz


@attrs.define(eq=False)
class BridgePortStats:
    """Per-port counters the bridge keeps (flooding, learning, STP).

    ``flood_*`` count frames this port sent because the destination was
    unknown or not unicast (a copy per port, as ``br_flood`` makes them);
    ``forward`` frames switched to it by an FDB hit; the ``*_bpdu`` and
    ``*_tcn`` fields are the kernel's ``stp_xstats``.
    """

    flood_unicast: int = 0
    flood_multicast: int = 0
    flood_broadcast: int = 0
    forward: int = 0
    rx_bpdu: int = 0
    tx_bpdu: int = 0
    rx_tcn: int = 0
    tx_tcn: int = 0
    transition_blk: int = 0
    transition_fwd: int = 0
    rx_bad_bpdu: int = 0


@attrs.frozen
class BridgeStats:
    """A snapshot of a bridge (``statistics()``)."""

    fdb_entries: int
    fdb_learned: int
    fdb_aged: int
    rx_dropped_stp_state: int
    rx_dropped_vlan: int
    time_squeeze: int
    softnet_dropped: int
    ports: dict[str, BridgePortStats]


class FdbEntry:
    """One forwarding-database entry (kernel: ``struct net_bridge_fdb_entry``)."""

    __slots__ = ("addr", "dst", "flags", "updated", "used", "vlan_id")

    def __init__(
        self, addr: bytes, vlan_id: int, dst: NetBridgePort | None, flags: int, now: int
    ) -> None:
        self.addr = addr
        self.vlan_id = vlan_id
        self.dst = dst
        self.flags = flags
        self.updated = now
        self.used = now

    def __repr__(self) -> str:
        where = self.dst.dev.name if self.dst is not None else "-"
        return f"<FdbEntry {self.addr.hex(':')} vlan {self.vlan_id} {where} flags={self.flags:#x}>"


class NetBridgeVlan:
    """A VLAN on a port or on the bridge (kernel: ``struct net_bridge_vlan``)."""

    __slots__ = ("flags", "rx_bytes", "rx_packets", "state", "tx_bytes", "tx_packets", "vid")

    def __init__(self, vid: int, flags: int) -> None:
        self.vid = vid
        self.flags = flags
        self.state = BR_STATE_FORWARDING
        self.rx_packets = 0
        self.rx_bytes = 0
        self.tx_packets = 0
        self.tx_bytes = 0

    def should_use(self) -> bool:
        """A bridge's context-only VLAN (no BRENTRY) is not used. Kernel: br_vlan_should_use()."""
        if self.flags & BRIDGE_VLAN_INFO_MASTER:
            return bool(self.flags & BRIDGE_VLAN_INFO_BRENTRY)
        return True


class VlanGroup:
    """The VLANs of a port or bridge (kernel: ``struct net_bridge_vlan_group``)."""

    __slots__ = ("pvid", "vlans")

    def __init__(self) -> None:
        self.vlans: dict[int, NetBridgeVlan] = {}
        self.pvid = 0

    def find(self, vid: int) -> NetBridgeVlan | None:
        """Kernel: br_vlan_find()."""
        return self.vlans.get(vid)

    def sorted(self) -> list[NetBridgeVlan]:
        """In VID order (the kernel's ``vlan_list`` is kept sorted)."""
        return [self.vlans[v] for v in sorted(self.vlans)]

    @property
    def num_vlans(self) -> int:
        return sum(1 for v in self.vlans.values() if v.should_use())


class NetBridgePort:
    """An enslaved device (kernel: ``struct net_bridge_port``)."""

    def __init__(self, br: NetBridge, dev: NetDevice, port_no: int) -> None:
        self.br = br
        self.dev = dev
        self.port_no = port_no
        self.priority = 0x8000 >> BR_PORT_BITS
        self.path_cost = 100
        self.flags = BR_LEARNING | BR_FLOOD | BR_MCAST_FLOOD | BR_BCAST_FLOOD
        self.state = BR_STATE_DISABLED
        self.port_id = 0
        self.designated_root = bytes(8)
        self.designated_bridge = bytes(8)
        self.designated_cost = 0
        self.designated_port = 0
        self.designated_age = 0
        self.topology_change_ack = 0
        self.config_pending = 0
        self.group_fwd_mask = 0
        timers = br.dev.net.timers
        self.message_age_timer: TimerList = timers.timer(lambda: None, "br_message_age")
        self.forward_delay_timer: TimerList = timers.timer(lambda: None, "br_forward_delay")
        self.hold_timer: TimerList = timers.timer(lambda: None, "br_hold")
        self.vlgrp = VlanGroup()
        self.stats = BridgePortStats()

    def __repr__(self) -> str:
        return f"<NetBridgePort {self.dev.name} port_no={self.port_no} state={self.state}>"


class NetBridge:
    """A bridge's private state (kernel: ``struct net_bridge``)."""

    def __init__(self, dev: NetDevice) -> None:
        hz = dev.net.clock.hz
        self.dev = dev
        self.port_list: list[NetBridgePort] = []
        # the rhashtable by (addr, vid); insertion order is the hlist's, newest last
        self.fdb: dict[tuple[bytes, int], FdbEntry] = {}
        self.bridge_id = b"\x80\x00" + bytes(6)
        self.designated_root = self.bridge_id
        self.root_path_cost = 0
        self.root_port = 0
        self.stp_enabled = BR_NO_STP
        self.group_addr = ETH_STP_ADDR
        self.group_fwd_mask = BR_GROUPFWD_DEFAULT
        self.group_fwd_mask_required = BR_GROUPFWD_DEFAULT
        self.bridge_max_age = self.max_age = 20 * hz
        self.bridge_hello_time = self.hello_time = 2 * hz
        self.bridge_forward_delay = self.forward_delay = 15 * hz
        self.bridge_ageing_time = self.ageing_time = 300 * hz  # BR_DEFAULT_AGEING_TIME
        self.topology_change = 0
        self.topology_change_detected = 0
        self.vlan_enabled = False
        self.vlan_proto = 0x8100
        self.default_pvid = 1
        self.vlan_stats_enabled = False
        self.vlgrp = VlanGroup()
        self.mtu_set_by_user = False
        timers = dev.net.timers
        self.hello_timer: TimerList = timers.timer(lambda: None, "br_hello")
        self.tcn_timer: TimerList = timers.timer(lambda: None, "br_tcn")
        self.topology_change_timer: TimerList = timers.timer(lambda: None, "br_topology_change")
        self.gc_work: TimerList = timers.timer(lambda: None, "br_fdb_cleanup")
        # the softirq's time limit (br_input.py): frames this jiffy, the backlog beyond
        self.softirq_jiffy = -1
        self.softirq_count = 0
        self.softirq_draining = False
        self.backlog: collections.deque[Any] = collections.deque()
        self.backlog_timer: TimerList = timers.timer(lambda: None, "br_backlog")
        self.time_squeeze = 0
        self.softnet_dropped = 0
        # counters
        self.fdb_learned = 0
        self.fdb_aged = 0
        self.rx_dropped_stp_state = 0
        self.rx_dropped_vlan = 0
        self.log: Any = dev.log

    def statistics(self) -> BridgeStats:
        """The bridge's counters and its ports'."""
        return BridgeStats(
            fdb_entries=len(self.fdb),
            fdb_learned=self.fdb_learned,
            fdb_aged=self.fdb_aged,
            rx_dropped_stp_state=self.rx_dropped_stp_state,
            rx_dropped_vlan=self.rx_dropped_vlan,
            time_squeeze=self.time_squeeze,
            softnet_dropped=self.softnet_dropped,
            ports={p.dev.name: attrs.evolve(p.stats) for p in self.port_list},
        )

    def get_port(self, port_no: int) -> NetBridgePort | None:
        """Kernel: br_get_port()."""
        for p in self.port_list:
            if p.port_no == port_no:
                return p
        return None


def br_port_get_rcu(dev: NetDevice) -> NetBridgePort | None:
    """The bridge port of an enslaved device. Kernel: br_port_get_rcu()."""
    p = dev.rx_handler_data
    return p if isinstance(p, NetBridgePort) else None


def br_is_root_bridge(br: NetBridge) -> bool:
    """Kernel: br_is_root_bridge()."""
    return br.bridge_id == br.designated_root


def br_is_designated_port(p: NetBridgePort) -> bool:
    """Kernel: br_is_designated_port()."""
    return p.designated_bridge == p.br.bridge_id and p.designated_port == p.port_id


def round_jiffies(net: Net, j: int) -> int:
    """Round an expiry to a whole second (CPU 0's skew is 0). Kernel: round_jiffies()."""
    hz = net.clock.hz
    original = j
    rem = j % hz
    j = j - rem if rem < hz // 4 else j - rem + hz
    return j if j > net.clock.jiffies else original
