"""``NetDevice``, its transmit queues, driver ops and statistics.

Theory of operation: a :class:`NetDevice` holds the state the kernel keeps in
``struct net_device`` (name, ifindex, flags, MTU, features, addresses, queues,
statistics). Driver behaviour is an ops object (:class:`NetDeviceOps`, the
``net_device_ops`` table) and, for devices with a link-layer header, a
:class:`HeaderOps` (``header_ops``). An op a driver does not override keeps the
kernel's default behaviour, as a NULL op does there.

Each transmit queue (:class:`NetdevQueue`) carries its root qdisc, the
``_xmit_lock`` that ``HARD_TX_LOCK`` takes for non-``NETIF_F_LLTX`` devices, the
``xmit_lock_owner`` used by the dead-loop check, its XOFF state bits and its
Byte Queue Limit (:class:`~netstack.core.dql.Dql`).

Kernel: include/linux/netdevice.h, net/core/dev.c.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import attrs

from netstack.core.dql import Dql
from netstack.core.features import NETIF_F_LLTX
from netstack.core.firstuse import FirstUse
from netstack.core.slotcopy import attr_copier, attr_zeroer
from netstack.cpu import SpinLock
from netstack.sites import TIMED, kernel, spend

if TYPE_CHECKING:
    from netstack.core.napi import Napi
    from netstack.core.net import Net
    from netstack.core.qdisc import Qdisc
    from netstack.core.skbuff import SkBuff
    from netstack.ipv4.devinet import InDevice

__all__ = [
    "IFF_ALLMULTI",
    "IFF_BROADCAST",
    "IFF_LOOPBACK",
    "IFF_LOWER_UP",
    "IFF_MULTICAST",
    "IFF_NOARP",
    "IFF_POINTOPOINT",
    "IFF_PROMISC",
    "IFF_RUNNING",
    "IFF_UP",
    "NETDEV_TX_BUSY",
    "NETDEV_TX_OK",
    "DevStats",
    "EthtoolChannels",
    "EthtoolOps",
    "HeaderOps",
    "NetDevice",
    "NetDeviceOps",
    "NetDeviceStats",
    "NetdevQueue",
]

# dev->flags (include/uapi/linux/if.h)
IFF_UP: Final = 0x1
IFF_BROADCAST: Final = 0x2
IFF_DEBUG: Final = 0x4
IFF_LOOPBACK: Final = 0x8
IFF_POINTOPOINT: Final = 0x10
IFF_NOTRAILERS: Final = 0x20
IFF_RUNNING: Final = 0x40
IFF_NOARP: Final = 0x80
IFF_PROMISC: Final = 0x100
IFF_ALLMULTI: Final = 0x200
IFF_MASTER: Final = 0x400
IFF_SLAVE: Final = 0x800
IFF_MULTICAST: Final = 0x1000
IFF_PORTSEL: Final = 0x2000
IFF_AUTOMEDIA: Final = 0x4000
IFF_DYNAMIC: Final = 0x8000
IFF_LOWER_UP: Final = 0x10000
IFF_DORMANT: Final = 0x20000
IFF_ECHO: Final = 0x40000

# the order iproute2 prints them in (ip/ipaddress.c, print_link_flags)
IFF_NAMES: Final = (
    (IFF_LOOPBACK, "LOOPBACK"),
    (IFF_BROADCAST, "BROADCAST"),
    (IFF_POINTOPOINT, "POINTOPOINT"),
    (IFF_MULTICAST, "MULTICAST"),
    (IFF_NOARP, "NOARP"),
    (IFF_ALLMULTI, "ALLMULTI"),
    (IFF_PROMISC, "PROMISC"),
    (IFF_NOTRAILERS, "NOTRAILERS"),
    (IFF_UP, "UP"),
    (IFF_LOWER_UP, "LOWER_UP"),
    (IFF_DORMANT, "DORMANT"),
    (IFF_ECHO, "ECHO"),
)

# dev->priv_flags (enum netdev_priv_flags)
IFF_802_1Q_VLAN: Final = 1 << 0
IFF_EBRIDGE: Final = 1 << 1
IFF_XMIT_DST_RELEASE: Final = 1 << 5
IFF_BRIDGE_PORT: Final = 1 << 9
IFF_TX_SKB_SHARING: Final = 1 << 11
IFF_LIVE_ADDR_CHANGE: Final = 1 << 15
IFF_NO_QUEUE: Final = 1 << 19

# dev->operstate (RFC 2863, include/uapi/linux/if.h)
IF_OPER_UNKNOWN: Final = 0
IF_OPER_NOTPRESENT: Final = 1
IF_OPER_DOWN: Final = 2
IF_OPER_LOWERLAYERDOWN: Final = 3
IF_OPER_TESTING: Final = 4
IF_OPER_DORMANT: Final = 5
IF_OPER_UP: Final = 6
OPERSTATE_NAMES: Final = (
    "UNKNOWN",
    "NOTPRESENT",
    "DOWN",
    "LOWERLAYERDOWN",
    "TESTING",
    "DORMANT",
    "UP",
)

# ndo_start_xmit return codes (3.x+ values)
NETDEV_TX_OK: Final = 0x00
NETDEV_TX_BUSY: Final = 0x10
NET_XMIT_SUCCESS: Final = 0x00
NET_XMIT_DROP: Final = 0x01
NET_XMIT_CN: Final = 0x02
NET_XMIT_MASK: Final = 0x0F

# netdev_queue->state bits
QUEUE_STATE_DRV_XOFF: Final = 1 << 0
QUEUE_STATE_STACK_XOFF: Final = 1 << 1
QUEUE_STATE_FROZEN: Final = 1 << 2
QUEUE_STATE_ANY_XOFF: Final = QUEUE_STATE_DRV_XOFF | QUEUE_STATE_STACK_XOFF
QUEUE_STATE_ANY_XOFF_OR_FROZEN: Final = QUEUE_STATE_ANY_XOFF | QUEUE_STATE_FROZEN

# dev->reg_state
NETREG_UNINITIALIZED: Final = 0
NETREG_REGISTERED: Final = 1
NETREG_UNREGISTERING: Final = 2
NETREG_UNREGISTERED: Final = 3

IFNAMSIZ: Final = 16

# dev->addr_assign_type
NET_ADDR_PERM: Final = 0
NET_ADDR_RANDOM: Final = 1
NET_ADDR_STOLEN: Final = 2
NET_ADDR_SET: Final = 3
DEFAULT_TX_QUEUE_LEN: Final = 1000


@kernel("dev_xmit_complete")
def dev_xmit_complete(rc: int) -> bool:
    """True if the driver consumed the skb. Kernel: dev_xmit_complete()."""
    if TIMED:
        spend("dev_xmit_complete")
    return rc < NET_XMIT_MASK


@attrs.frozen
class EthtoolChannels:
    """Channel counts (kernel: ``struct ethtool_channels``); 0 = none of that kind."""

    max_rx: int = 0
    max_tx: int = 0
    max_other: int = 0
    max_combined: int = 0
    rx_count: int = 0
    tx_count: int = 0
    other_count: int = 0
    combined_count: int = 0


class EthtoolOps:
    """A driver's ethtool callbacks (kernel: ``struct ethtool_ops``).

    The defaults behave as NULL ops: ethtool gets ``EOPNOTSUPP``. Drivers
    that can raise :class:`~netstack.errors.ConfigError` with the kernel's
    extack message.
    """

    supports_channels = False
    supports_rxfh = False
    supports_stats = False
    supports_coalesce = False

    def get_coalesce(self, dev: NetDevice) -> dict[str, int]:
        """The interrupt coalescing parameters it has (``rx-usecs``…). Kernel: get_coalesce."""
        raise NotImplementedError

    def set_coalesce(self, dev: NetDevice, values: dict[str, int]) -> None:
        """Kernel: ethtool_ops.set_coalesce."""
        raise NotImplementedError

    def get_channels(self, dev: NetDevice) -> EthtoolChannels:
        """Kernel: ethtool_ops.get_channels."""
        raise NotImplementedError

    def set_channels(self, dev: NetDevice, ch: EthtoolChannels) -> None:
        """Kernel: ethtool_ops.set_channels (counts already checked against the maxima)."""
        raise NotImplementedError

    def get_rxfh(self, dev: NetDevice) -> tuple[list[int], bytes]:
        """The indirection table and hash key. Kernel: ethtool_ops.get_rxfh."""
        raise NotImplementedError

    def set_rxfh(self, dev: NetDevice, indir: list[int] | None, key: bytes | None) -> None:
        """Kernel: ethtool_ops.set_rxfh (``None`` = unchanged; ``[]`` = the default table)."""
        raise NotImplementedError

    @kernel("get_rxnfc")
    def get_rxfh_fields(self, dev: NetDevice, flow: str) -> int:
        """RXH_* bits hashed for *flow* ("tcp4"…). Kernel: get_rxnfc(ETHTOOL_GRXFH)."""
        raise NotImplementedError

    @kernel("set_rxnfc")
    def set_rxfh_fields(self, dev: NetDevice, flow: str, fields: int) -> None:
        """Kernel: set_rxnfc(ETHTOOL_SRXFH)."""
        raise NotImplementedError

    def get_ethtool_stats(self, dev: NetDevice) -> list[tuple[str, int]]:
        """``ethtool -S``: names (get_strings) and values (get_ethtool_stats)."""
        raise NotImplementedError


class NetDeviceOps:
    """Driver callbacks (kernel: ``struct net_device_ops``).

    Subclasses override what their driver implements; the defaults behave as a
    NULL op does in the kernel.
    """

    def ndo_init(self, dev: NetDevice) -> None:
        """Called by ``register_netdevice``."""

    def ndo_uninit(self, dev: NetDevice) -> None:
        """Called by ``unregister_netdevice``."""

    def ndo_open(self, dev: NetDevice) -> None:
        """Called when the device is brought up (``dev_open``)."""

    def ndo_stop(self, dev: NetDevice) -> None:
        """Called when the device is brought down (``dev_close``)."""

    def ndo_start_xmit(self, skb: SkBuff, dev: NetDevice) -> int:
        """Transmit *skb*; return NETDEV_TX_OK (consumed) or NETDEV_TX_BUSY."""
        raise NotImplementedError

    def ndo_select_queue(self, dev: NetDevice, skb: SkBuff) -> int:
        """Pick a tx queue index (kernel default: ``netdev_pick_tx``)."""
        return -1

    def ndo_change_mtu(self, dev: NetDevice, new_mtu: int) -> None:
        """Change the MTU (already range-checked by ``dev_set_mtu``)."""
        dev.mtu = new_mtu

    def ndo_set_mac_address(self, dev: NetDevice, addr: bytes) -> None:
        """Change the hardware address (``eth_mac_addr`` by default)."""
        dev.dev_addr = addr

    def ndo_get_iflink(self, dev: NetDevice) -> int:
        """The ifindex of the lower/peer device (``ip link`` prints ``@ifN``)."""
        return dev.ifindex

    def ndo_get_peer_dev(self, dev: NetDevice) -> NetDevice | None:
        """The peer of a pair device (veth), or None."""
        return None

    def ndo_change_carrier(self, dev: NetDevice, on: bool) -> bool:
        """Force carrier (dummy); False if unsupported (EOPNOTSUPP)."""
        return False

    def ndo_fix_features(self, dev: NetDevice, features: int) -> int:
        """Drop features the driver cannot offer now (``__netdev_update_features``)."""
        return features

    def ndo_get_stats64(self, dev: NetDevice, stats: DevStats) -> None:
        """Add driver-kept counters to *stats* (a copy of ``dev.stats``)."""

    def ndo_do_ioctl(self, dev: NetDevice, cmd: int, arg: Any) -> Any:
        """Device-private ioctls (tunnels: SIOCADDTUNNEL…)."""
        raise OSError(95, "Operation not supported")

    # -- upper devices (bridge, bond): ``ip link set DEV master UPPER`` ------------------
    has_add_slave = False  # kernel: ndo_add_slave != NULL

    def ndo_add_slave(self, dev: NetDevice, slave: NetDevice) -> None:
        """Enslave *slave* to this (master) device. Kernel: ndo_add_slave."""
        raise OSError(95, "Operation not supported")

    def ndo_del_slave(self, dev: NetDevice, slave: NetDevice) -> None:
        """Release *slave*. Kernel: ndo_del_slave."""
        raise OSError(95, "Operation not supported")

    # -- forwarding database (``bridge fdb``): see netstack.core.rtnetlink -------------
    # The defaults are the kernel's ndo_dflt_fdb_* (a device's own unicast and
    # multicast address lists), which rtnl_fdb_* use when the op is NULL.
    @kernel("ndo_dflt_fdb_add")
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
        """RTM_NEWNEIGH (AF_BRIDGE) for *dev*. Kernel: ndo_fdb_add / ndo_dflt_fdb_add()."""
        from netstack.core.rtnetlink import ndo_dflt_fdb_add

        ndo_dflt_fdb_add(ndm_state, ndm_flags, tb, dev, addr, vid, nlflags)

    @kernel("ndo_dflt_fdb_del")
    def ndo_fdb_del(
        self,
        ndm_state: int,
        ndm_flags: int,
        tb: Mapping[int, Any],
        dev: NetDevice,
        addr: bytes,
        vid: int,
    ) -> None:
        """RTM_DELNEIGH (AF_BRIDGE). Kernel: ndo_fdb_del / ndo_dflt_fdb_del()."""
        from netstack.core.rtnetlink import ndo_dflt_fdb_del

        ndo_dflt_fdb_del(ndm_state, ndm_flags, tb, dev, addr, vid)

    @kernel("ndo_dflt_fdb_dump")
    def ndo_fdb_dump(self, dev: NetDevice, filter_dev: NetDevice | None) -> list[Any]:
        """RTM_GETNEIGH dump: a list of :class:`~netstack.core.rtnetlink.FdbMsg`.

        Kernel: ndo_fdb_dump / ndo_dflt_fdb_dump().
        """
        from netstack.core.rtnetlink import ndo_dflt_fdb_dump

        return ndo_dflt_fdb_dump(dev, filter_dev)


class HeaderOps:
    """Link-layer header callbacks (kernel: ``struct header_ops``).

    ``has_cache`` says whether :meth:`cache` is implemented (the kernel tests
    ``header_ops->cache != NULL``).
    """

    has_cache: bool = False

    def create(
        self,
        skb: SkBuff,
        dev: NetDevice,
        proto: int,
        daddr: bytes | None,
        saddr: bytes | None,
        length: int,
    ) -> int:
        """Push the link-layer header; return its length, or its negative if incomplete."""
        raise NotImplementedError

    def parse(self, skb: SkBuff) -> bytes:
        """Return the source hardware address of a received frame."""
        raise NotImplementedError

    def cache(self, neigh: Any, hh: Any, proto: int) -> bool:
        """Fill the neighbour's ``hh_cache``; False if the device cannot."""
        return False

    def cache_update(self, hh: Any, dev: NetDevice, haddr: bytes) -> None:
        """Rewrite the cached header for a new neighbour address."""


@attrs.frozen
class NetDeviceStats:
    """A snapshot of ``struct rtnl_link_stats64`` for one device."""

    rx_packets: int
    tx_packets: int
    rx_bytes: int
    tx_bytes: int
    rx_errors: int
    tx_errors: int
    rx_dropped: int
    tx_dropped: int
    multicast: int
    collisions: int
    rx_length_errors: int
    rx_over_errors: int
    rx_crc_errors: int
    rx_frame_errors: int
    rx_fifo_errors: int
    rx_missed_errors: int
    tx_aborted_errors: int
    tx_carrier_errors: int
    tx_fifo_errors: int
    tx_heartbeat_errors: int
    tx_window_errors: int
    rx_compressed: int
    tx_compressed: int
    rx_nohandler: int


_STAT_FIELDS: Final = tuple(f.name for f in attrs.fields(NetDeviceStats))
_zero_stats: Final = attr_zeroer(_STAT_FIELDS)
_copy_stats: Final = attr_copier(_STAT_FIELDS)


class DevStats:
    """The live, mutable counters behind :class:`NetDeviceStats` (``dev->stats``)."""

    __slots__ = _STAT_FIELDS

    def __init__(self) -> None:
        _zero_stats(self)

    # Declared for type checkers; the slots above hold them.
    rx_packets: int
    tx_packets: int
    rx_bytes: int
    tx_bytes: int
    rx_errors: int
    tx_errors: int
    rx_dropped: int
    tx_dropped: int
    multicast: int
    collisions: int
    rx_length_errors: int
    rx_over_errors: int
    rx_crc_errors: int
    rx_frame_errors: int
    rx_fifo_errors: int
    rx_missed_errors: int
    tx_aborted_errors: int
    tx_carrier_errors: int
    tx_fifo_errors: int
    tx_heartbeat_errors: int
    tx_window_errors: int
    rx_compressed: int
    tx_compressed: int
    rx_nohandler: int

    def copy(self) -> DevStats:
        new = DevStats.__new__(DevStats)
        _copy_stats(new, self)
        return new

    def snapshot(self) -> NetDeviceStats:
        return NetDeviceStats(*(getattr(self, name) for name in _STAT_FIELDS))


class NetdevQueue:
    """One transmit queue (kernel: ``struct netdev_queue``)."""

    __slots__ = (
        "__dict__",  # holds _xmit_lock and dql once made (FirstUse)
        "_lock_dev",
        "dev",
        "index",
        "qdisc",
        "qdisc_sleeping",
        "state",
        "state_line",
        "trans_start",
        "tx_bytes",
        "tx_packets",
        "xmit_lock_owner",
    )

    # HARD_TX_LOCK's lock and the byte queue limits, made on first use: an LLTX
    # device's queue (veth, loopback, bridge, tunnels) never takes the lock, and
    # only a driver with BQL or a bulk-dequeuing qdisc reads dql
    _xmit_lock = FirstUse(lambda txq: SpinLock(f"{txq._lock_dev}:_xmit_lock[{txq.index}]"))
    dql = FirstUse(lambda txq: Dql(txq.dev.net.clock))

    def __init__(self, dev: NetDevice, index: int) -> None:
        self.dev = dev
        self.index = index
        self.qdisc: Qdisc = dev.net.noop_qdisc
        self.qdisc_sleeping: Qdisc = self.qdisc
        self._lock_dev = dev.name  # the device's name now: _xmit_lock's name
        self.xmit_lock_owner = -1
        self.trans_start = 0
        self.state = 0
        # timed mode: the line holding ``state`` (XOFF bits), read by every
        # transmit and flipped atomically by the driver's stop/wake and BQL
        self.state_line = dev.net.cacheline("txq state")
        self.tx_packets = 0
        self.tx_bytes = 0

    def __repr__(self) -> str:
        return f"<NetdevQueue {self.dev.name}:{self.index}>"


@kernel("netif_tx_stop_queue")
def netif_tx_stop_queue(txq: NetdevQueue) -> None:
    """The driver stops the queue (ring full). Kernel: netif_tx_stop_queue()."""
    txq.state |= QUEUE_STATE_DRV_XOFF
    line = txq.state_line
    if line is not None:
        line.write("netif_tx_stop_queue", atomic=True)  # set_bit()


@kernel("netif_tx_queue_stopped")
def netif_tx_queue_stopped(txq: NetdevQueue) -> bool:
    """Kernel: netif_tx_queue_stopped()."""
    if TIMED:
        spend("netif_tx_queue_stopped")
    return bool(txq.state & QUEUE_STATE_DRV_XOFF)


@kernel("netif_xmit_stopped")
def netif_xmit_stopped(txq: NetdevQueue) -> bool:
    """Stopped by the driver or by BQL. Kernel: netif_xmit_stopped()."""
    return bool(txq.state & QUEUE_STATE_ANY_XOFF)


@kernel("netif_xmit_frozen_or_stopped")
def netif_xmit_frozen_or_stopped(txq: NetdevQueue) -> bool:
    """Kernel: netif_xmit_frozen_or_stopped()."""
    if TIMED:
        spend("netif_xmit_frozen_or_stopped")
    line = txq.state_line
    if line is not None:
        line.read("netif_xmit_frozen_or_stopped")
    return bool(txq.state & QUEUE_STATE_ANY_XOFF_OR_FROZEN)


@kernel("netif_schedule_queue")
def netif_schedule_queue(txq: NetdevQueue) -> None:
    """Reschedule the queue's qdisc unless stopped. Kernel: netif_schedule_queue()."""
    if not txq.state & QUEUE_STATE_ANY_XOFF:
        txq.qdisc.netif_schedule()


@kernel("netif_tx_wake_queue")
def netif_tx_wake_queue(txq: NetdevQueue) -> None:
    """The driver has room again: clear XOFF and run the qdisc. Kernel: netif_tx_wake_queue()."""
    if txq.state & QUEUE_STATE_DRV_XOFF:
        txq.state &= ~QUEUE_STATE_DRV_XOFF
        line = txq.state_line
        if line is not None:
            line.write("netif_tx_wake_queue", atomic=True)  # test_and_clear_bit()
        txq.qdisc.netif_schedule()


@kernel("netif_tx_start_queue")
def netif_tx_start_queue(txq: NetdevQueue) -> None:
    """Kernel: netif_tx_start_queue()."""
    txq.state &= ~QUEUE_STATE_DRV_XOFF


@kernel("include/linux/netdevice.h", "netdev_tx_sent_queue")
def netdev_tx_sent_queue(txq: NetdevQueue, nbytes: int) -> None:
    """BQL: *nbytes* handed to hardware; stop the stack side when over the limit.

    Kernel: include/linux/netdevice.h, netdev_tx_sent_queue().
    """
    dql = txq.dql
    dql.queued(nbytes)
    if dql.avail() >= 0:
        return
    txq.state |= QUEUE_STATE_STACK_XOFF
    line = txq.state_line
    if line is not None:
        line.write("netdev_tx_sent_queue", atomic=True)  # set_bit()


@kernel("include/linux/netdevice.h", "netdev_tx_completed_queue")
def netdev_tx_completed_queue(txq: NetdevQueue, pkts: int, nbytes: int) -> None:
    """BQL: hardware finished *nbytes*; restart the stack side when under the limit.

    Kernel: include/linux/netdevice.h, netdev_tx_completed_queue().
    """
    if not nbytes:
        return
    dql = txq.dql
    dql.completed(nbytes)
    if dql.avail() < 0:
        return
    if txq.state & QUEUE_STATE_STACK_XOFF:
        txq.state &= ~QUEUE_STATE_STACK_XOFF
        line = txq.state_line
        if line is not None:
            line.write("netdev_tx_completed_queue", atomic=True)  # test_and_clear_bit()
        netif_schedule_queue(txq)


@kernel("netdev_tx_reset_queue")
def netdev_tx_reset_queue(txq: NetdevQueue) -> None:
    """Kernel: netdev_tx_reset_queue()."""
    txq.state &= ~QUEUE_STATE_STACK_XOFF
    txq.dql.reset()


class NetDevice:
    """A network device (kernel: ``struct net_device``).

    Drivers build one with :meth:`__init__` then adjust fields in their setup
    function (kernel: ``alloc_netdev(…, setup)``) before
    :func:`netstack.core.dev.register_netdevice`.

    Slotted: a lab holds tens of thousands of devices, and an instance
    dictionary of sixty-odd fields (past CPython's key-sharing limit) is
    1.6 KB a device.
    """

    __slots__ = (
        "_log",
        "_tx",
        "addr_assign_type",
        "addr_len",
        "allmulti",
        "broadcast",
        "carrier",
        "carrier_down_count",
        "carrier_up_count",
        "dev_addr",
        "ethtool_ops",
        "features",
        "flags",
        "gflags",
        "gro_max_size",
        "group",
        "gso_max_segs",
        "gso_max_size",
        "hard_header_len",
        "header_ops",
        "hw_enc_features",
        "hw_features",
        "ifalias",
        "ifindex",
        "iflink",
        "ip6_ptr",
        "ip_ptr",
        "kind",
        "master",
        "max_mtu",
        "mc",
        "min_header_len",
        "min_mtu",
        "mtu",
        "name",
        "napi_list",
        "needed_headroom",
        "needed_tailroom",
        "net",
        "num_rx_queues",
        "num_tx_queues",
        "operstate",
        "ops",
        "perm_addr",
        "priv",
        "priv_flags",
        "promiscuity",
        "ptype_all",
        "qdisc",
        "real_num_tx_queues",
        "reg_state",
        "running",
        "rx_handler",
        "rx_handler_data",
        "stats",
        "tx_queue_len",
        "type",
        "uc",
        "vlan_features",
        "vlan_info",
        "wanted_features",
        "watchdog_timeo",
    )

    def __init__(
        self, net: Net, name: str, ops: NetDeviceOps, *, kind: str = "", num_tx_queues: int = 1
    ) -> None:
        self.net = net
        self.name = name
        self.kind = kind  # rtnl_link_ops->kind ("veth", "dummy"…)
        self.ops = ops
        self.header_ops: HeaderOps | None = None
        self.ethtool_ops: EthtoolOps | None = None
        self.ifindex = 0
        self.iflink = 0
        self.type = 1  # ARPHRD_ETHER
        self.flags = 0
        self.priv_flags = IFF_XMIT_DST_RELEASE
        self.gflags = 0
        self.operstate = IF_OPER_UNKNOWN  # until a driver reports carrier (linkwatch)
        self.carrier = True  # !__LINK_STATE_NOCARRIER
        self.carrier_up_count = 0
        self.carrier_down_count = 0
        self.running = False  # __LINK_STATE_START (dev_open done)
        self.reg_state = NETREG_UNINITIALIZED
        self.mtu = 1500
        self.min_mtu = 68
        self.max_mtu = 1500
        self.tx_queue_len = DEFAULT_TX_QUEUE_LEN
        self.hard_header_len = 0
        self.min_header_len = 0
        self.needed_headroom = 0
        self.needed_tailroom = 0
        self.addr_len = 0
        self.dev_addr = b""
        self.perm_addr = b""
        self.addr_assign_type = NET_ADDR_PERM  # NET_ADDR_RANDOM / _SET for software devices
        self.broadcast = b""
        self.features = 0
        self.hw_features = 0
        self.wanted_features = 0
        self.vlan_features = 0
        self.hw_enc_features = 0
        self.gso_max_size = 65536
        self.gso_max_segs = 65535
        self.gro_max_size = 65536
        self.watchdog_timeo = 0
        self.group = 0
        self.ifalias = ""
        self.stats = DevStats()
        self.num_tx_queues = num_tx_queues
        self.real_num_tx_queues = num_tx_queues
        self.num_rx_queues = 1
        self._tx: list[NetdevQueue] = []
        self.qdisc: Qdisc = net.noop_qdisc  # root qdisc as `ip link` shows it
        self.napi_list: list[Napi] = []
        self.ptype_all: list[Any] = []  # per-device taps (kernel: dev->ptype_all)
        # stacking (kernel: dev->rx_handler, rx_handler_data, the master upper device)
        self.rx_handler: Any = None  # rx_handler(skb) -> (RX_HANDLER_*, skb)
        self.rx_handler_data: Any = None  # the bridge port of an enslaved device
        self.master: NetDevice | None = None  # netdev_master_upper_dev_get()
        self.promiscuity = 0  # dev_set_promiscuity() users (a bridge port: 1)
        self.allmulti = 0
        self.vlan_info: Any = None  # the 802.1Q devices on top (kernel: dev->vlan_info)
        self.uc: list[bytes] = []  # secondary unicast addresses (kernel: dev->uc)
        self.mc: list[bytes] = []  # multicast addresses (kernel: dev->mc)
        self.ip_ptr: InDevice | None = None  # struct in_device (set by ipv4)
        self.ip6_ptr: Any = None
        self.priv: Any = None  # netdev_priv(): driver-private state
        self._log: Any = None  # bound on first use (see log)

    @property
    def log(self) -> Any:
        """The net's logger bound with ``dev=`` this device's name, made on first use
        (most devices never log) and again after a rename."""
        log = self._log
        if log is None:
            log = self._log = self.net.log.bind(dev=self.name)
        return log

    # -- queues ----------------------------------------------------------------
    def alloc_tx_queues(self) -> None:
        """Create the tx queues (kernel: netif_alloc_netdev_queues)."""
        self._tx = [NetdevQueue(self, i) for i in range(self.num_tx_queues)]

    @kernel("netdev_get_tx_queue")
    def get_tx_queue(self, index: int) -> NetdevQueue:
        """Kernel: netdev_get_tx_queue()."""
        return self._tx[index]

    @property
    def tx_queues(self) -> list[NetdevQueue]:
        return self._tx

    # -- derived state -----------------------------------------------------------
    @property
    def lltx(self) -> bool:
        """True when ``HARD_TX_LOCK`` is skipped (``NETIF_F_LLTX``)."""
        return bool(self.features & NETIF_F_LLTX)

    def is_up(self) -> bool:
        """Kernel: dev->flags & IFF_UP."""
        return bool(self.flags & IFF_UP)

    @kernel("netif_running")
    def netif_running(self) -> bool:
        """Kernel: netif_running()."""
        return self.running

    @kernel("netif_carrier_ok")
    def netif_carrier_ok(self) -> bool:
        """Kernel: netif_carrier_ok()."""
        return self.carrier

    @kernel("netif_oper_up")
    def netif_oper_up(self) -> bool:
        """Kernel: netif_oper_up()."""
        return self.operstate in (IF_OPER_UP, IF_OPER_UNKNOWN)

    @kernel("net/core/dev.c", "dev_get_flags")
    def get_flags(self) -> int:
        """The flags user space sees, with RUNNING/LOWER_UP derived from state.

        Kernel: net/core/dev.c, dev_get_flags().
        """
        flags = self.flags & ~(IFF_RUNNING | IFF_LOWER_UP)
        if self.running:
            if self.netif_oper_up():
                flags |= IFF_RUNNING
            if self.carrier:
                flags |= IFF_LOWER_UP
        return flags

    @kernel("dev_get_stats")
    def statistics(self) -> NetDeviceStats:
        """Counters as ``ip -s link`` shows them. Kernel: dev_get_stats()."""
        stats = self.stats.copy()
        self.ops.ndo_get_stats64(self, stats)
        return stats.snapshot()

    def __repr__(self) -> str:
        return f"<NetDevice {self.net.name}:{self.name} ifindex={self.ifindex}>"
