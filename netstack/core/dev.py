"""Device registration, up/down, and the core transmit and receive entries.

Theory of operation — transmit::

    dev_queue_xmit(skb)
      ├─ txq.qdisc can enqueue ─► __dev_xmit_skb (core/qdisc.py): root lock,
      │                           bypass or enqueue + __qdisc_run
      └─ noqueue (virtual devices) ─► recursion check ─► validate_xmit_skb
             ─► HARD_TX_LOCK (unless NETIF_F_LLTX) ─► dev_hard_start_xmit
             ─► HARD_TX_UNLOCK

Receive::

    driver NAPI poll ─► napi_gro_receive ─(GRO hook)─► netif_receive_skb
      ─► __netif_receive_skb_core: taps (ptype_all), then the ptype_base
         handler for skb.protocol (ip_rcv, arp_rcv …) or drop
    netif_rx (loopback, tunnels' decap) ─► per-CPU backlog ─► process_backlog

Device state follows the kernel: ``dev_open`` sets ``__LINK_STATE_START``
(``running``), calls ``ndo_open``, sets ``IFF_UP``, activates qdiscs (the
default qdisc is attached on first activation) and notifies ``NETDEV_UP``.
Carrier changes take effect at once (the kernel's linkwatch work, done
synchronously here so results do not depend on its delay).

Kernel: net/core/dev.c, net/core/link_watch.c, net/sched/sch_generic.c
(dev_activate, dev_deactivate).
"""

from __future__ import annotations

import errno
import logging
import struct
from typing import TYPE_CHECKING, Any, Final

import trio

from netstack.core.dst import skb_dst_drop
from netstack.core.ethernet import eth_type_trans
from netstack.core.features import (
    NETIF_F_ALL_TSO,
    NETIF_F_GRO,
    NETIF_F_GSO,
    NETIF_F_HW_CSUM,
    NETIF_F_IP_CSUM,
    NETIF_F_IPV6_CSUM,
    NETIF_F_LLTX,
    NETIF_F_NOCACHE_COPY,
    NETIF_F_SG,
    NETIF_F_SOFT_FEATURES,
    NETIF_F_SOFT_FEATURES_OFF,
    NETIF_F_TSO,
    NETIF_F_TSO6,
    NETIF_F_TSO_ECN,
)
from netstack.core.napi import BH, BH_DISABLED, BH_ENABLED, Napi, do_softirq, wakeup_softirqd
from netstack.core.netdevice import (
    IF_OPER_DOWN,
    IF_OPER_LOWERLAYERDOWN,
    IF_OPER_UP,
    IFF_LOOPBACK,
    IFF_NO_QUEUE,
    IFF_UP,
    IFF_XMIT_DST_RELEASE,
    IFNAMSIZ,
    NET_ADDR_PERM,
    NET_XMIT_DROP,
    NET_XMIT_MASK,
    NETDEV_TX_OK,
    NETREG_REGISTERED,
    NETREG_UNREGISTERED,
    QUEUE_STATE_ANY_XOFF,
    NetDevice,
)
from netstack.core.qdisc import (
    TC_H_ROOT,
    TCQ_F_NOPARENT,
    TCQ_F_ONETXQUEUE,
    NoqueueQdisc,
    Qdisc,
    __dev_xmit_skb,
    qdisc_run,
)
from netstack.core.skbuff import (
    CHECKSUM_PARTIAL,
    CHECKSUM_UNNECESSARY,
    PACKET_HOST,
    PACKET_LOOPBACK,
    PACKET_OTHERHOST,
    DropReason,
    SkBuff,
    kfree_skb,
    kfree_skb_list,
)
from netstack.core.vlan_core import skb_vlan_untag, vlan_do_receive
from netstack.core.xmit import dev_hard_start_xmit, validate_xmit_skb
from netstack.errors import ConfigError
from netstack.sites import TIMED, kernel, spend
from netstack.wire.ethernet import ETH_P_802_3_MIN

if TYPE_CHECKING:
    from netstack.core.net import Net, PacketType

__all__ = [
    "NETDEV_CHANGE",
    "NETDEV_CHANGEADDR",
    "NETDEV_CHANGEMTU",
    "NETDEV_CHANGENAME",
    "NETDEV_DOWN",
    "NETDEV_GOING_DOWN",
    "NETDEV_REGISTER",
    "NETDEV_UNREGISTER",
    "NETDEV_UP",
    "deliver_ptype_list_skb",
    "dev_activate",
    "dev_change_flags",
    "dev_close",
    "dev_deactivate",
    "dev_forward_skb",
    "dev_loopback_xmit",
    "dev_open",
    "dev_queue_xmit",
    "dev_set_allmulti",
    "dev_set_mac_address",
    "dev_set_mtu",
    "dev_set_promiscuity",
    "napi_gro_receive",
    "netdev_master_upper_dev_link",
    "netdev_rx_handler_register",
    "netdev_rx_handler_unregister",
    "netdev_upper_dev_unlink",
    "netif_carrier_off",
    "netif_carrier_on",
    "netif_receive_skb",
    "netif_rx",
    "register_netdevice",
    "unregister_netdevice",
]

# netdevice notifier events (include/linux/netdevice.h, enum netdev_cmd)
NETDEV_UP: Final = 1
NETDEV_DOWN: Final = 2
NETDEV_REBOOT: Final = 3
NETDEV_CHANGE: Final = 4
NETDEV_REGISTER: Final = 5
NETDEV_UNREGISTER: Final = 6
NETDEV_CHANGEMTU: Final = 7
NETDEV_CHANGEADDR: Final = 8
NETDEV_PRE_CHANGEADDR: Final = 9
NETDEV_GOING_DOWN: Final = 10
NETDEV_CHANGENAME: Final = 11
NETDEV_FEAT_CHANGE: Final = 12
NETDEV_PRE_UP: Final = 14
NETDEV_NOTIFY_PEERS: Final = 20
NETDEV_CHANGE_TX_QUEUE_LEN: Final = 29

XMIT_RECURSION_LIMIT: Final = 8
# an Ethernet header's destination address and type, read at once (no slice, no shifts)
_ETH_DEST_PROTO: Final = struct.Struct("!6s6xH").unpack_from
# dev->features word → its NETIF_F_HW_CSUM and NETIF_F_LLTX bits, for dev_queue_xmit: the
# word is above 2**30 (47 bits on veth), where a mask is CPython's slow bit operation and
# a dict read of the word's hash is cheap; a lab's devices have a handful of words
_XMIT_FEATURE_BITS: Final[dict[int, tuple[int, int]]] = {}
ENETDOWN_RC: Final = -errno.ENETDOWN


# ---------------------------------------------------------------------------
# Registration
# ---------------------------------------------------------------------------


@kernel("net/core/dev.c", "dev_valid_name")
def dev_valid_name(name: str) -> bool:
    """Kernel: net/core/dev.c, dev_valid_name()."""
    if not name or len(name) >= IFNAMSIZ or name in (".", ".."):
        return False
    return not any(c == "/" or c == ":" or c.isspace() for c in name)


@kernel("dev_alloc_name")
def dev_alloc_name(net: Net, pattern: str) -> str:
    """Expand ``%d`` to the first free number (``eth%d`` → ``eth0``). Kernel: dev_alloc_name()."""
    if "%d" not in pattern:
        return pattern
    i = 0
    while (name := pattern.replace("%d", str(i), 1)) in net.devices:
        i += 1
    return name


@kernel("netdev_fix_features")
def netdev_fix_features(dev: NetDevice, features: int) -> int:
    """Drop feature combinations the core cannot honour. Kernel: netdev_fix_features()."""
    if features & NETIF_F_ALL_TSO and not features & NETIF_F_SG:
        features &= ~NETIF_F_ALL_TSO
    # "Dropping TSO features since no CSUM feature."
    if features & NETIF_F_TSO and not features & (NETIF_F_HW_CSUM | NETIF_F_IP_CSUM):
        features &= ~(NETIF_F_TSO | NETIF_F_TSO_ECN)
    if features & NETIF_F_TSO6 and not features & (NETIF_F_HW_CSUM | NETIF_F_IPV6_CSUM):
        features &= ~NETIF_F_TSO6
    # "Software GSO depends on SG." (tunnels without SG: GSO off, [requested on])
    if features & NETIF_F_GSO and not features & NETIF_F_SG:
        features &= ~NETIF_F_GSO
    return features


@kernel("net/core/dev.c", "netdev_get_wanted_features", "__netdev_update_features")
def netdev_update_features(dev: NetDevice) -> bool:
    """Recompute ``dev.features`` from what the user wants; True if it changed.

    The features the user may toggle (``hw_features``) follow
    ``wanted_features``, the rest keep their state; then the driver's
    ``ndo_fix_features`` and the core's fix-ups drop what cannot be on. A
    feature a driver turned off behind the user's back stays off only if the
    driver also cleared it from ``wanted_features`` (veth's GRO).

    Kernel: net/core/dev.c, netdev_get_wanted_features(), __netdev_update_features().
    """
    features = (dev.features & ~dev.hw_features) | dev.wanted_features
    features = dev.ops.ndo_fix_features(dev, features)
    features = netdev_fix_features(dev, features)
    if features == dev.features:
        return False
    dev.features = features
    return True


@kernel("net/core/dev.c", "register_netdevice")
def register_netdevice(dev: NetDevice) -> None:
    """Add *dev* to its Net: name, ifindex, queues, features, notifiers.

    Raises:
        ConfigError: invalid or duplicate name (EINVAL / EEXIST).

    Kernel: net/core/dev.c, register_netdevice().
    """
    net = dev.net
    dev.name = dev_alloc_name(net, dev.name)
    if not dev_valid_name(dev.name):
        raise ConfigError(
            f'Error: argument "{dev.name}" is wrong: "name" not a valid ifname', errno.EINVAL
        )
    if dev.name in net.devices:
        raise ConfigError("RTNETLINK answers: File exists", errno.EEXIST)
    dev._log = None  # the logger binds the final name when first used
    dev.alloc_tx_queues()
    dev.ops.ndo_init(dev)
    if not dev.ifindex:
        dev.ifindex = net.dev_new_index()
    elif dev.ifindex in net.dev_index:
        raise ConfigError("RTNETLINK answers: File exists", errno.EEXIST)
    if not dev.iflink:
        dev.iflink = dev.ifindex
    dev.hw_features |= NETIF_F_SOFT_FEATURES | NETIF_F_SOFT_FEATURES_OFF
    dev.features |= NETIF_F_SOFT_FEATURES
    dev.wanted_features = dev.features & dev.hw_features
    if not dev.flags & IFF_LOOPBACK:
        dev.hw_features |= NETIF_F_NOCACHE_COPY
    dev.features = netdev_fix_features(dev, dev.features)
    if dev.addr_assign_type == NET_ADDR_PERM and not dev.perm_addr:
        dev.perm_addr = dev.dev_addr
    net.devices[dev.name] = dev
    net.dev_index[dev.ifindex] = dev
    dev.reg_state = NETREG_REGISTERED
    net.call_netdevice_notifiers(NETDEV_REGISTER, dev)
    if net.log.isEnabledFor(logging.DEBUG):  # a lab registers thousands: no filtered calls
        dev.log.debug("netdev_registered", ifindex=dev.ifindex, kind=dev.kind)


@kernel("unregister_netdevice")
def unregister_netdevice(dev: NetDevice) -> None:
    """Remove *dev*: close it, notify, free its qdiscs. Kernel: unregister_netdevice()."""
    net = dev.net
    if dev.reg_state != NETREG_REGISTERED:
        return
    if dev.flags & IFF_UP:
        dev_close(dev)
    net.call_netdevice_notifiers(NETDEV_UNREGISTER, dev)
    for pt in list(dev.ptype_all):
        dev.ptype_all.remove(pt)
    for handlers in net.ptype_base.values():
        handlers[:] = [pt for pt in handlers if pt.dev is not dev]
    dev.ops.ndo_uninit(dev)
    for napi in dev.napi_list:  # netif_napi_del(): its task ends
        napi.kill()
    dev.napi_list.clear()
    for txq in dev.tx_queues:
        txq.qdisc_sleeping.destroy()
        txq.qdisc = txq.qdisc_sleeping = net.noop_qdisc
    dev.qdisc = net.noop_qdisc
    del net.devices[dev.name]
    del net.dev_index[dev.ifindex]
    dev.reg_state = NETREG_UNREGISTERED
    dev.log.debug("netdev_unregistered")


# ---------------------------------------------------------------------------
# Stacking: rx_handler, master upper device, promiscuity (bridge ports, bonds)
# ---------------------------------------------------------------------------


@kernel("net/core/dev.c", "netdev_rx_handler_register")
def netdev_rx_handler_register(dev: NetDevice, handler: Any, data: Any) -> None:
    """Install *dev*'s receive hook (a bridge port's ``br_handle_frame``).

    Raises:
        ConfigError: EBUSY if the device already has one.

    Kernel: net/core/dev.c, netdev_rx_handler_register().
    """
    if dev.rx_handler is not None:
        raise ConfigError("RTNETLINK answers: Device or resource busy", errno.EBUSY)
    dev.rx_handler_data = data
    dev.rx_handler = handler


@kernel("netdev_rx_handler_unregister")
def netdev_rx_handler_unregister(dev: NetDevice) -> None:
    """Kernel: netdev_rx_handler_unregister()."""
    dev.rx_handler = None
    dev.rx_handler_data = None


@kernel("netdev_has_upper_dev")
def netdev_has_upper_dev(dev: NetDevice, upper: NetDevice) -> bool:
    """True if *upper* is above *dev*, directly or not. Kernel: netdev_has_upper_dev()."""
    m = dev.master
    while m is not None:
        if m is upper:
            return True
        m = m.master
    return False


@kernel("net/core/dev.c", "__netdev_upper_dev_link")
def netdev_master_upper_dev_link(dev: NetDevice, upper: NetDevice) -> None:
    """Make *upper* the master of *dev*.

    Raises:
        ConfigError: EBUSY for a loop or a device that already has a master.

    Kernel: net/core/dev.c, __netdev_upper_dev_link() (master).
    """
    if dev is upper or netdev_has_upper_dev(upper, dev):
        raise ConfigError("RTNETLINK answers: Device or resource busy", errno.EBUSY)
    if dev.master is not None:
        raise ConfigError("Error: Master device already exists.", errno.EBUSY)
    dev.master = upper


@kernel("netdev_upper_dev_unlink")
def netdev_upper_dev_unlink(dev: NetDevice, upper: NetDevice) -> None:
    """Kernel: netdev_upper_dev_unlink()."""
    if dev.master is upper:
        dev.master = None


@kernel("net/core/dev.c", "dev_set_promiscuity", "__dev_set_promiscuity")
def dev_set_promiscuity(dev: NetDevice, inc: int) -> None:
    """Count a user of promiscuous mode (``ip -d link``'s ``promiscuity``).

    Kernel: net/core/dev.c, dev_set_promiscuity() / __dev_set_promiscuity().
    """
    dev.promiscuity = max(0, dev.promiscuity + inc)


@kernel("net/core/dev.c", "dev_set_allmulti")
def dev_set_allmulti(dev: NetDevice, inc: int) -> None:
    """Kernel: net/core/dev.c, dev_set_allmulti()."""
    dev.allmulti = max(0, dev.allmulti + inc)


# ---------------------------------------------------------------------------
# Qdisc attachment (net/sched/sch_generic.c)
# ---------------------------------------------------------------------------


@kernel("net/sched/sch_generic.c", "qdisc_create_dflt")
def qdisc_create_dflt(
    dev: NetDevice, index: int, kind: str, parent: int = TC_H_ROOT
) -> Qdisc | None:
    """Create and initialise (without options) a qdisc of *kind* on tx queue *index*;
    None if the kind is unknown or refuses to start without options.

    Kernel: net/sched/sch_generic.c, qdisc_create_dflt().
    """
    net = dev.net
    txq = dev.get_tx_queue(index)
    factory = net.qdisc_ops.get(kind)
    if factory is None:
        # "noqueue" is builtin; a Net built without the sched layer has no other kind.
        return NoqueueQdisc(net, txq, 0, parent) if kind == "noqueue" else None
    q = factory(net, txq, 0, parent)
    try:
        q.init(None)
    except ConfigError:
        q.destroy()
        return None
    return q


@kernel("net/sched/sch_generic.c", "attach_default_qdiscs", "attach_one_default_qdisc")
def attach_default_qdiscs(dev: NetDevice) -> None:
    """Attach the default root qdisc: noqueue for ``IFF_NO_QUEUE`` devices, else
    ``net.core.default_qdisc``; if that cannot start, fall back to noqueue.

    Kernel: net/sched/sch_generic.c, attach_default_qdiscs() / attach_one_default_qdisc().
    """
    net = dev.net
    default = net.default_qdisc
    kinds = ("noqueue",) if dev.priv_flags & IFF_NO_QUEUE else (default, "noqueue")
    for kind in kinds:
        root: Qdisc | None = None
        made: list[Qdisc] = []
        for i in range(dev.num_tx_queues):
            q = qdisc_create_dflt(dev, i, kind)
            if q is None:
                break
            if dev.num_tx_queues == 1:
                q.flags |= TCQ_F_ONETXQUEUE | TCQ_F_NOPARENT
            made.append(q)
            root = root or q
        if root is not None and len(made) == dev.num_tx_queues:
            for txq, q in zip(dev.tx_queues, made, strict=True):
                txq.qdisc_sleeping = q
            root.refcnt += 1  # dev->qdisc holds a reference too
            dev.qdisc = root
            return
        for q in made:
            q.destroy()
        dev.log.warning(
            "default_qdisc_fail",
            msg=f"{dev.name}: default qdisc ({default}) fail, fallback to noqueue",
        )


@kernel("dev_activate")
def dev_activate(dev: NetDevice) -> None:
    """Point each tx queue at its configured qdisc. Kernel: dev_activate()."""
    if dev.qdisc is dev.net.noop_qdisc:
        attach_default_qdiscs(dev)
    if not dev.carrier:
        return  # activation waits for carrier
    for txq in dev.tx_queues:
        q = txq.qdisc_sleeping
        q.deactivated = False
        txq.qdisc = q


@kernel("dev_deactivate")
def dev_deactivate(dev: NetDevice) -> None:
    """Detach qdiscs (noop while down) and drop what was queued. Kernel: dev_deactivate()."""
    noop = dev.net.noop_qdisc
    for txq in dev.tx_queues:
        q = txq.qdisc_sleeping
        txq.qdisc = noop
        if q is not noop:
            q.deactivated = True
            q.reset()


@kernel("dev_graft_qdisc")
def dev_graft_qdisc(dev: NetDevice, index: int, q: Qdisc) -> Qdisc:
    """Install *q* as the root of tx queue *index*; return the old one.

    Kernel: dev_graft_qdisc().
    """
    txq = dev.get_tx_queue(index)
    old = txq.qdisc_sleeping
    txq.qdisc_sleeping = q
    if dev.running and dev.carrier:
        txq.qdisc = q
        q.deactivated = False
    else:
        txq.qdisc = dev.net.noop_qdisc
    if index == 0:
        dev.qdisc = q
    return old


# ---------------------------------------------------------------------------
# Up / down / carrier
# ---------------------------------------------------------------------------


@kernel("net/core/link_watch.c", "linkwatch_do_dev", "rfc2863_policy", "default_operstate")
def _linkwatch(dev: NetDevice) -> None:
    """Carrier changed: recompute operstate, (de)activate the qdiscs.

    Kernel: net/core/link_watch.c, linkwatch_do_dev() + rfc2863_policy() /
    default_operstate(). Done at once rather than from the linkwatch work.
    """
    if dev.carrier:
        dev.operstate = IF_OPER_UP
    else:
        # a stacked/paired device whose lower side is gone: LOWERLAYERDOWN
        dev.operstate = IF_OPER_LOWERLAYERDOWN if dev.iflink != dev.ifindex else IF_OPER_DOWN
    if dev.flags & IFF_UP:
        if dev.carrier:
            dev_activate(dev)
        else:
            dev_deactivate(dev)
        dev.net.call_netdevice_notifiers(NETDEV_CHANGE, dev)  # netdev_state_change()


@kernel("netif_carrier_on")
def netif_carrier_on(dev: NetDevice) -> None:
    """The link is up. Kernel: netif_carrier_on()."""
    if not dev.carrier:
        dev.carrier = True
        dev.carrier_up_count += 1
        _linkwatch(dev)


@kernel("netif_carrier_off")
def netif_carrier_off(dev: NetDevice) -> None:
    """The link is down. Kernel: netif_carrier_off()."""
    if dev.carrier:
        dev.carrier = False
        dev.carrier_down_count += 1
        _linkwatch(dev)


@kernel("dev_change_carrier")
def dev_change_carrier(dev: NetDevice, on: bool) -> None:
    """``ip link set DEV carrier on|off`` (drivers that allow it). Kernel: dev_change_carrier()."""
    if not dev.ops.ndo_change_carrier(dev, on):
        raise ConfigError("RTNETLINK answers: Operation not supported", errno.EOPNOTSUPP)


@kernel("net/core/dev.c", "dev_open", "__dev_open")
def dev_open(dev: NetDevice) -> None:
    """Bring *dev* up. Kernel: net/core/dev.c, dev_open() / __dev_open()."""
    if dev.flags & IFF_UP:
        return
    dev.net.call_netdevice_notifiers(NETDEV_PRE_UP, dev)
    dev.running = True
    try:
        dev.ops.ndo_open(dev)
    except Exception:
        dev.running = False
        raise
    dev.flags |= IFF_UP
    dev_activate(dev)
    dev.net.call_netdevice_notifiers(NETDEV_UP, dev)
    if dev.net.log.isEnabledFor(logging.DEBUG):
        dev.log.debug("link_up")


@kernel("net/core/dev.c", "dev_close", "__dev_close_many")
def dev_close(dev: NetDevice) -> None:
    """Bring *dev* down. Kernel: net/core/dev.c, dev_close() / __dev_close_many()."""
    if not dev.flags & IFF_UP:
        return
    net = dev.net
    net.call_netdevice_notifiers(NETDEV_GOING_DOWN, dev)
    dev.running = False
    dev_deactivate(dev)
    dev.ops.ndo_stop(dev)
    dev.flags &= ~IFF_UP
    for napi in dev.napi_list:
        napi.scheduled = False
    net.call_netdevice_notifiers(NETDEV_DOWN, dev)
    if net.log.isEnabledFor(logging.DEBUG):
        dev.log.debug("link_down")


@kernel("dev_change_flags")
def dev_change_flags(dev: NetDevice, flags: int, mask: int) -> None:
    """Change the user-settable flags under *mask*; IFF_UP opens/closes.

    Kernel: dev_change_flags().
    """
    new = (dev.flags & ~mask) | (flags & mask)
    settable = mask & ~IFF_UP
    dev.flags = (dev.flags & ~settable) | (new & settable)
    if mask & IFF_UP:
        if new & IFF_UP:
            dev_open(dev)
        else:
            dev_close(dev)
    dev.net.call_netdevice_notifiers(NETDEV_CHANGE, dev)


@kernel("dev_set_mtu_ext", "dev_validate_mtu")
def dev_set_mtu(dev: NetDevice, mtu: int) -> None:
    """Change the MTU within the device's limits. Kernel: dev_set_mtu_ext() / dev_validate_mtu()."""
    if mtu == dev.mtu:
        return
    if mtu < 0 or mtu < dev.min_mtu:
        raise ConfigError("Error: mtu less than device minimum.", errno.EINVAL)
    if dev.max_mtu > 0 and mtu > dev.max_mtu:
        raise ConfigError("Error: mtu greater than device maximum.", errno.EINVAL)
    orig_mtu = dev.mtu
    dev.ops.ndo_change_mtu(dev, mtu)
    dev.net.call_netdevice_notifiers_mtu(NETDEV_CHANGEMTU, dev, orig_mtu)


@kernel("dev_set_mac_address")
def dev_set_mac_address(dev: NetDevice, addr: bytes) -> None:
    """Change the hardware address. Kernel: dev_set_mac_address()."""
    from netstack.core.netdevice import IFF_LIVE_ADDR_CHANGE

    if len(addr) != dev.addr_len or (dev.addr_len == 6 and (addr[0] & 1 or addr == bytes(6))):
        raise ConfigError("RTNETLINK answers: Cannot assign requested address", errno.EADDRNOTAVAIL)
    if dev.running and not dev.priv_flags & IFF_LIVE_ADDR_CHANGE:
        raise ConfigError("RTNETLINK answers: Device or resource busy", errno.EBUSY)
    dev.ops.ndo_set_mac_address(dev, addr)
    dev.net.call_netdevice_notifiers(NETDEV_CHANGEADDR, dev)
    if dev.running:
        dev.net.call_netdevice_notifiers(NETDEV_NOTIFY_PEERS, dev)


@kernel("dev_change_name")
def dev_change_name(dev: NetDevice, newname: str) -> None:
    """Rename a (down) device. Kernel: dev_change_name()."""
    net = dev.net
    if newname == dev.name:
        return
    if not dev_valid_name(newname):
        raise ConfigError(
            f'Error: argument "{newname}" is wrong: "name" not a valid ifname', errno.EINVAL
        )
    if dev.flags & IFF_UP:
        raise ConfigError("RTNETLINK answers: Device or resource busy", errno.EBUSY)
    if newname in net.devices:
        raise ConfigError("RTNETLINK answers: File exists", errno.EEXIST)
    old = dev.name
    del net.devices[old]
    dev.name = newname
    net.devices[newname] = dev
    dev._log = None  # rebound with the new name when next used
    net.call_netdevice_notifiers(NETDEV_CHANGENAME, dev)


@kernel("dev_change_tx_queue_len")
def dev_change_tx_queue_len(dev: NetDevice, qlen: int) -> None:
    """Kernel: dev_change_tx_queue_len()."""
    if qlen < 0 or qlen > 0xFFFFFFFF:
        raise ConfigError("RTNETLINK answers: Invalid argument", errno.EINVAL)
    dev.tx_queue_len = qlen
    dev.net.call_netdevice_notifiers(NETDEV_CHANGE_TX_QUEUE_LEN, dev)


# ---------------------------------------------------------------------------
# Transmit
# ---------------------------------------------------------------------------


@kernel("netdev_core_pick_tx", "skb_tx_hash")
def netdev_pick_tx(dev: NetDevice, skb: SkBuff) -> int:
    """Choose a tx queue index. Kernel: netdev_core_pick_tx() / skb_tx_hash()."""
    if TIMED:
        spend("netdev_core_pick_tx")
    n = dev.real_num_tx_queues
    if n == 1:
        return 0
    q = dev.ops.ndo_select_queue(dev, skb)
    if q >= 0:
        return q % n
    return ((skb.hash or hash((skb.protocol, skb.priority))) & 0xFFFFFFFF) * n >> 32


@kernel(
    "include/linux/netdevice.h",
    "dev_queue_xmit",
    "include/linux/bottom_half.h",
    "local_bh_disable",
    "local_bh_enable",
    "kernel/softirq.c",
    "__local_bh_enable_ip",
    "net/core/dev.c",
    "__dev_queue_xmit",
    "validate_xmit_skb",
    "netif_skb_features",
    "dev_hard_start_xmit",
    "skb_dst_drop",
    "skb_dst_force",
)
def dev_queue_xmit(skb: SkBuff) -> int:
    """Queue *skb* for transmission on ``skb.dev``; the skb is consumed.

    Returns NET_XMIT_SUCCESS, NET_XMIT_DROP, NET_XMIT_CN or ``-ENETDOWN``.

    ``dev_queue_xmit`` is a static inline of ``netdevice.h`` that calls
    ``__dev_queue_xmit``: the two are one function here (a frame less a
    transmit). Outside softirq context it runs with bottom halves disabled
    (``__dev_queue_xmit``'s ``rcu_read_lock_bh``), and its ``local_bh_enable``
    (``rcu_read_unlock_bh``, at the end: the ``finally``) runs the NAPI polls
    the transmit raised, in the caller's task (functional mode;
    ``netstack.core.napi``, "Polls at local_bh_enable"). Inside a softirq (a
    NAPI poll, or the polls such a transmit runs) softirqs do not nest: the
    instances it schedules are polled by the loop already running. A transmit
    that raises hands the list to the instances' tasks (``wakeup_softirqd``).

    Without a queue (veth, tunnels, loopback) the common case of
    ``validate_xmit_skb`` (static in ``dev.c``) with ``netif_skb_features``,
    and of ``dev_hard_start_xmit`` (one skb, no taps), are written out here,
    each with its own charge: three Python frames less a packet. The
    functions themselves (``netstack.core.xmit``) take every other case; keep
    the two in step. The route is dropped (``IFF_XMIT_DST_RELEASE``) or, for a
    device that keeps it, made a held one (``skb_dst_force``), as
    ``netstack.core.dst`` has the two.

    Kernel: include/linux/netdevice.h, dev_queue_xmit(); include/linux/bottom_half.h,
    local_bh_disable() / local_bh_enable(); kernel/softirq.c, __local_bh_enable_ip();
    net/core/dev.c, __dev_queue_xmit() / validate_xmit_skb() / netif_skb_features() /
    dev_hard_start_xmit() / skb_dst_drop() / skb_dst_force().
    """
    if TIMED:
        spend("__dev_queue_xmit")
    dev = skb.dev
    assert dev is not None
    bh = BH
    outer = bh.state == BH_ENABLED  # process context: this transmit runs the softirq
    if outer:
        bh.state = BH_DISABLED  # rcu_read_lock_bh(): local_bh_disable()
    try:
        skb.mac_header = skb.data  # skb_reset_mac_header
        dst = skb.dst
        if dst is not None:
            if dev.priv_flags & IFF_XMIT_DST_RELEASE:
                # skb_dst_drop() / refdst_drop(): a reference to put unless set without one
                skb.dst = None
                if skb.dst_noref:
                    skb.dst_noref = False
                else:
                    dst.refcnt -= 1  # dst_release()
                    dst.releases += 1
                line = dst.line
                if line is not None:  # (timed mode charges a no-reference drop as a release)
                    line.write("dst_release", atomic=True)
            elif skb.dst_noref:
                # skb_dst_force() / dst_hold_safe(): the device (a tunnel, loopback) keeps
                # the route past this packet's processing: take the reference (timed mode
                # charged the hold when the route was set)
                skb.dst_noref = False
                dst.refcnt += 1
                dst.holds += 1
        if dev.real_num_tx_queues == 1:
            txq = dev._tx[0]
            skb.queue_mapping = 0  # skb_set_queue_mapping(): drops a recorded RX queue
        else:
            txq = dev._tx[netdev_pick_tx(dev, skb)]
            skb.queue_mapping = txq.index
        q = txq.qdisc
        if q.can_enqueue:
            return __dev_xmit_skb(skb, q, dev, txq)

        # No queue: loopback, tunnels, veth, dummy.
        if dev.flags & IFF_UP:
            net = dev.net
            cpu = net.cpus.current
            if txq.xmit_lock_owner != cpu.id:
                if cpu.xmit_recursion > XMIT_RECURSION_LIMIT:
                    if dev.net.net_ratelimit():  # net_crit_ratelimited()
                        dev.log.warning(
                            "xmit_recursion",
                            msg=f"Dead loop on virtual device {dev.name}, fix it urgently!",
                        )
                    dev.stats.tx_dropped += 1
                    kfree_skb_list(skb, DropReason.XMIT_RECURSION)
                    return ENETDOWN_RC
                features = dev.features
                hw_csum = features & NETIF_F_HW_CSUM
                lltx = features & NETIF_F_LLTX
                summed = skb.ip_summed
                if (
                    skb.gso_size
                    or skb.vlan_proto
                    or skb.encapsulation
                    or (
                        summed == CHECKSUM_PARTIAL
                        and (not hw_csum or skb.protocol == 0x8100 or skb.protocol == 0x88A8)
                    )
                ):
                    vskb = validate_xmit_skb(skb, dev)
                    if vskb is None:
                        return NET_XMIT_DROP
                else:
                    # validate_xmit_skb(), static in dev.c, inline for an skb with nothing
                    # to segment, no tag to push and no checksum the device cannot fill:
                    # a CHECKSUM_PARTIAL one asks netif_skb_features() (inline too:
                    # dev->features, untagged and not encapsulated) for NETIF_F_HW_CSUM
                    if TIMED:
                        spend("validate_xmit_skb")
                        if summed == CHECKSUM_PARTIAL:
                            spend("netif_skb_features")
                    vskb = skb
                if not lltx:  # HARD_TX_LOCK
                    txq._xmit_lock.lock(cpu)
                    txq.xmit_lock_owner = cpu.id
                rest: SkBuff | None = vskb
                state = txq.state  # !netif_xmit_stopped(): no mask for a running queue's 0
                if not state or not state & QUEUE_STATE_ANY_XOFF:
                    cpu.xmit_recursion += 1
                    if vskb.next is None and not net.ptype_all and not dev.ptype_all:
                        # dev_hard_start_xmit() / xmit_one() / netdev_start_xmit() inline
                        # for one skb and no taps, as in xmit.py
                        if TIMED:
                            spend("dev_hard_start_xmit")
                        rc = dev.ops.ndo_start_xmit(vskb, dev)
                        if rc == NETDEV_TX_OK and txq.xmit_lock_owner != -1:
                            txq.trans_start = net.clock.jiffies  # txq_trans_update()
                    else:
                        rest, rc = dev_hard_start_xmit(vskb, dev, txq)
                    cpu.xmit_recursion -= 1
                    if rc < NET_XMIT_MASK:  # dev_xmit_complete()
                        if not lltx:
                            txq.xmit_lock_owner = -1
                            txq._xmit_lock.unlock(cpu)
                        return rc
                if not lltx:  # HARD_TX_UNLOCK
                    txq.xmit_lock_owner = -1
                    txq._xmit_lock.unlock(cpu)
                if dev.net.net_ratelimit():  # net_crit_ratelimited()
                    dev.log.warning(
                        "virtual_device_queue",
                        msg=f"Virtual device {dev.name} asks to queue packet!",
                    )
                dev.stats.tx_dropped += 1
                kfree_skb_list(rest, DropReason.DEV_READY)
                return ENETDOWN_RC
            if dev.net.net_ratelimit():  # net_crit_ratelimited()
                dev.log.warning(
                    "xmit_recursion",
                    msg=f"Dead loop on virtual device {dev.name}, fix it urgently!",
                )
            dev.stats.tx_dropped += 1
            kfree_skb_list(skb, DropReason.XMIT_RECURSION)
            return ENETDOWN_RC
        dev.stats.tx_dropped += 1
        kfree_skb_list(skb, DropReason.DEV_READY)
        return ENETDOWN_RC
    except BaseException:
        if outer:
            outer = False  # (the finally below has nothing left to do)
            bh.state = BH_ENABLED
            wakeup_softirqd()  # the list must not outlive the section (napi module doc)
        raise
    finally:
        if outer:  # rcu_read_unlock_bh(): local_bh_enable()
            bh.state = BH_ENABLED
            if bh.poll_list:  # !in_interrupt() && local_softirq_pending()
                do_softirq(dev.net)


@kernel("net_tx_action")
def net_tx_action(net: Net) -> float:
    """Run every qdisc waiting on a CPU's output queue. Kernel: net_tx_action().

    A qdisc whose root lock is busy (or, in timed mode, that another CPU was
    running at this CPU's time) goes back on the queue (``__netif_reschedule``).
    Returns when the earliest of those frees, in ns of timed mode (inf: none).
    """
    if TIMED:
        spend("net_tx_action")
    busy_until = float("inf")
    model = net.cpus.model
    for sd in net.softnet:
        queue = sd.output_queue
        if not queue:
            continue
        cpu = net.cpus.run_on(sd.cpu)
        for _ in range(len(queue)):
            q = queue.pop(0)
            root_lock = q.lock
            if root_lock.trylock(cpu):
                q.state_sched = False  # clear_bit(__QDISC_STATE_SCHED)
                line = q.state_line
                if line is not None:
                    line.write("net_tx_action", atomic=True)
                qdisc_run(q)
                root_lock.unlock(cpu)
                if q.state_sched and model is not None:  # timed: another CPU ran it then
                    busy_until = min(busy_until, model.lock_free_at(q.run_iv, cpu.now))
            elif not q.deactivated:
                queue.append(q)  # __netif_reschedule
                if model is not None:
                    busy_until = min(busy_until, model.lock_free_at(root_lock, cpu.now))
            else:
                q.state_sched = False
    return busy_until


async def net_tx_action_task(net: Net) -> None:
    """The NET_TX softirq of a Net: runs scheduled qdiscs, then yields."""
    lot = net._net_tx_lot
    while True:
        if not any(sd.output_queue for sd in net.softnet):
            await lot.park()
            continue
        busy_until = net_tx_action(net)
        model = net.cpus.model
        if model is not None and model.running:
            await model.wait(net.cpus.current)
            if busy_until != float("inf"):
                # every qdisc left was locked by another CPU: the softirq gives
                # up (ksoftirqd) and comes back when the earliest lock is free
                model.leave()
                await trio.sleep_until(busy_until * 1e-9)
        else:
            await trio.lowlevel.checkpoint()


# ---------------------------------------------------------------------------
# Receive
# ---------------------------------------------------------------------------


def _deliver_taps(skb: SkBuff, dev: NetDevice) -> None:
    for pt in (*dev.net.ptype_all, *dev.ptype_all):
        if pt.dev is None or pt.dev is dev:
            pt.func(skb.clone(), dev, pt, dev)


# rx_handler results (include/linux/netdevice.h, enum rx_handler_result)
RX_HANDLER_CONSUMED: Final = 0
RX_HANDLER_ANOTHER: Final = 1
RX_HANDLER_EXACT: Final = 2
RX_HANDLER_PASS: Final = 3


@kernel("net/core/dev.c", "__netif_receive_skb_core")
def __netif_receive_skb_core(skb: SkBuff) -> None:
    """Deliver to taps, the device's ``rx_handler``, then the handler for ``skb.protocol``.

    Each round: an in-band VLAN tag is moved into the skb (``skb_vlan_untag``),
    taps see the frame, an accelerated tag that names a VLAN device moves the
    skb to it and runs another round (``vlan_do_receive``), and an
    ``rx_handler`` (a bridge port's ``br_handle_frame``) may consume the skb,
    pass it on, or hand it over for another round. A tag no VLAN device took
    marks the frame ``PACKET_OTHERHOST`` (VID ≠ 0) or is dropped (priority tag).
    ``napi_gro_receive`` has the common round written out (keep the two in step).

    Kernel: net/core/dev.c, __netif_receive_skb_core().
    """
    if TIMED:
        spend("__netif_receive_skb_core")
    dev: NetDevice = skb.dev  # type: ignore[assignment]
    skb.network_header = skb.data  # skb_reset_network_header
    if skb.transport_header < 0:
        skb.transport_header = skb.data
    net = dev.net
    proto = skb.protocol
    if (
        proto != 0x8100
        and proto != 0x88A8
        and not skb.vlan_proto
        and dev.rx_handler is None
        and not net.ptype_all
        and not dev.ptype_all
    ):
        # one round with nothing to do in it: no tag, no tap, no rx_handler
        skb.skb_iif = dev.ifindex
    else:
        while True:  # another_round
            skb.skb_iif = dev.ifindex
            proto = skb.protocol
            if proto == 0x8100 or proto == 0x88A8:  # eth_type_vlan()
                if not skb_vlan_untag(skb):
                    return
            if net.ptype_all or dev.ptype_all:
                _deliver_taps(skb, dev)
            if skb.vlan_proto:
                another, vskb = vlan_do_receive(skb)
                if vskb is None:
                    return
                if another:
                    dev = skb.dev  # type: ignore[assignment]
                    continue
            rx_handler = dev.rx_handler
            if rx_handler is not None:
                ret, rskb = rx_handler(skb)
                if ret == RX_HANDLER_CONSUMED:
                    return
                assert rskb is not None
                skb = rskb
                if ret == RX_HANDLER_ANOTHER:
                    dev = skb.dev  # type: ignore[assignment]
                    continue
            if skb.vlan_proto:
                if skb.vlan_tci & 0x0FFF:
                    # a VID no VLAN device took: not for this host
                    skb.pkt_type = PACKET_OTHERHOST
                skb.vlan_proto = 0
                skb.vlan_tci = 0
            break
        proto = skb.protocol
    # deliver_ptype_list_skb(), inline as in the kernel (not a cost site of its own)
    handlers = net.ptype_base.get(proto)
    if handlers:
        matched: PacketType | None = None
        for pt in handlers:
            if pt.dev is None or pt.dev is dev:
                if matched is not None:
                    matched.func(skb.clone(), dev, matched, dev)
                matched = pt
        if matched is not None:
            matched.func(skb, dev, matched, dev)
            return
    dev.stats.rx_nohandler += 1
    kfree_skb(skb, DropReason.UNHANDLED_PROTO)


@kernel("net/core/dev.c", "deliver_ptype_list_skb")
def deliver_ptype_list_skb(skb: SkBuff, dev: NetDevice) -> None:
    """Hand *skb* to the protocol handlers for ``skb.protocol`` (or count it unhandled).

    The receive core does the same inline; the bridge's backlog (a frame a
    port passed up after its softirq budget deferred it) calls this.

    Kernel: net/core/dev.c, deliver_ptype_list_skb().
    """
    handlers = dev.net.ptype_base.get(skb.protocol)
    if handlers:
        matched: PacketType | None = None
        for pt in handlers:
            if pt.dev is None or pt.dev is dev:
                if matched is not None:
                    matched.func(skb.clone(), dev, matched, dev)
                matched = pt
        if matched is not None:
            matched.func(skb, dev, matched, dev)
            return
    dev.stats.rx_nohandler += 1
    kfree_skb(skb, DropReason.UNHANDLED_PROTO)


@kernel("netif_receive_skb")
def netif_receive_skb(skb: SkBuff) -> None:
    """Process a received skb now, in the caller's (softirq) context.

    Kernel: netif_receive_skb().
    """
    if TIMED:
        spend("netif_receive_skb")
    __netif_receive_skb_core(skb)


@kernel("net/core/gro.c", "napi_gro_receive", "net/core/dev.c", "__netif_receive_skb_core")
def napi_gro_receive(napi: Napi, skb: SkBuff) -> None:
    """Receive through GRO when the Net has an engine and the device NETIF_F_GRO.

    Without GRO (this foundation, or a device with ``rx-gro off``) the skb goes
    straight to the receive core, whose common round (no tag, tap or
    ``rx_handler``) is written out here.

    Kernel: net/core/gro.c, napi_gro_receive() / net/core/dev.c,
    __netif_receive_skb_core().
    """
    if TIMED:
        spend("napi_gro_receive")
    gro = napi.gro
    dev: NetDevice = skb.dev  # type: ignore[assignment]
    if gro is not None and dev.features & NETIF_F_GRO:
        gro.receive(napi, skb)
        return
    # netif_elide_gro(): GRO off on this device. __netif_receive_skb_core()'s one round
    # with nothing to do in it (no tag, no tap, no rx_handler), written out as there
    # (a frame less a packet; keep the two in step); any other frame goes there
    proto = skb.protocol
    net = dev.net
    if (
        proto == 0x8100
        or proto == 0x88A8
        or skb.vlan_proto
        or dev.rx_handler is not None
        or net.ptype_all
        or dev.ptype_all
    ):
        __netif_receive_skb_core(skb)
        return
    if TIMED:
        spend("__netif_receive_skb_core")
    skb.network_header = skb.data  # skb_reset_network_header
    if skb.transport_header < 0:
        skb.transport_header = skb.data
    skb.skb_iif = dev.ifindex
    handlers = net.ptype_base.get(proto)  # deliver_ptype_list_skb()
    if handlers:
        matched: PacketType | None = None
        for pt in handlers:
            if pt.dev is None or pt.dev is dev:
                if matched is not None:
                    matched.func(skb.clone(), dev, matched, dev)
                matched = pt
        if matched is not None:
            matched.func(skb, dev, matched, dev)
            return
    dev.stats.rx_nohandler += 1
    kfree_skb(skb, DropReason.UNHANDLED_PROTO)


@kernel("process_backlog")
def process_backlog(napi: Napi, quota: int) -> int:
    """Drain this CPU's ``input_pkt_queue``. Kernel: process_backlog()."""
    if TIMED:
        spend("process_backlog")
    sd = napi.priv
    queue = sd.input_pkt_queue
    work = 0
    while queue and work < quota:
        skb = queue.popleft()
        work += 1
        __netif_receive_skb_core(skb)
    sd.processed += work
    return work


@kernel("net/core/dev.c", "dev_loopback_xmit")
def dev_loopback_xmit(skb: SkBuff, dev: NetDevice) -> None:
    """Deliver a copy of an outgoing broadcast/multicast packet to this host.

    The caller has set ``skb.protocol`` (``ip_mc_output``/``ip6_output``); the
    copy re-enters the stack through the backlog as ``PACKET_LOOPBACK``,
    its checksum trusted.

    Kernel: net/core/dev.c, dev_loopback_xmit().
    """
    skb.make_writable()
    skb.data = skb.network_header
    skb.mac_header = skb.data
    skb.pkt_type = PACKET_LOOPBACK
    skb.dev = dev
    if skb.ip_summed == CHECKSUM_PARTIAL:
        skb.ip_summed = CHECKSUM_UNNECESSARY
    netif_rx(skb)


@kernel("net/core/dev.c", "netif_rx", "enqueue_to_backlog")
def netif_rx(skb: SkBuff) -> int:
    """Queue *skb* on the current CPU's backlog (loopback, decapsulation).

    Returns NET_RX_SUCCESS (0) or NET_RX_DROP (1).

    Kernel: net/core/dev.c, netif_rx() / enqueue_to_backlog().
    """
    if TIMED:
        spend("netif_rx")
    dev = skb.dev
    assert dev is not None
    net = dev.net
    sd = net.softnet[net.cpus.current.id]
    if len(sd.input_pkt_queue) > net.netdev_max_backlog:
        sd.dropped += 1
        dev.stats.rx_dropped += 1
        kfree_skb(skb, DropReason.CPU_BACKLOG)
        return 1
    sd.input_pkt_queue.append(skb)
    backlog = sd.backlog
    if backlog is None:
        backlog = sd.backlog = Napi(
            dev,
            process_backlog,
            weight=net.dev_weight,
            cpu=sd.cpu,
            name=f"{net.name}/backlog{sd.cpu}",
        )
        backlog.priv = sd
        net.start_napi(backlog)
    backlog.schedule()
    return 0


@kernel("is_skb_forwardable")
def is_skb_forwardable(dev: NetDevice, skb: SkBuff) -> bool:
    """Small enough for *dev* (MTU + link header + a VLAN tag). Kernel: is_skb_forwardable()."""
    if not dev.flags & IFF_UP:
        return False
    length = dev.mtu + dev.hard_header_len + 4
    return skb.tail - skb.data <= length or bool(skb.gso_size)


@kernel("skb_scrub_packet")
def skb_scrub_packet(skb: SkBuff, xnet: bool) -> None:
    """Clear what must not cross a device/namespace boundary.

    ``dev_forward_skb`` has this written out (keep the two in step).

    Kernel: skb_scrub_packet().
    """
    skb.pkt_type = PACKET_HOST
    skb.ignore_df = False
    skb.dst_pending_confirm = False
    skb.skb_iif = 0
    if skb.dst is not None:
        skb_dst_drop(skb)
    # tstamp and mark back to their class defaults, tested one by one, since
    # reading skb.__dict__ would give every scrubbed skb a dictionary
    if skb.tstamp:
        del skb.tstamp
    skb.cb = None
    if xnet and skb.mark:
        del skb.mark
    # Since 4.19 (9c4c325252c5, "skbuff: preserve sock reference when
    # scrubbing the skb") crossing a namespace keeps skb->sk: a veth peer's
    # queue still counts against the sender's socket (TSQ, autocorking) until
    # the receiver's ip_rcv_core()/ip6_rcv_core() orphans the skb.


@kernel("skb_orphan")
def skb_orphan(skb: SkBuff) -> None:
    """Detach *skb* from its socket, running the destructor. Kernel: skb_orphan()."""
    destructor = skb.destructor
    if destructor is not None:
        skb.destructor = None
        destructor(skb)
    skb.sk = None


@kernel(
    "net/core/dev.c",
    "__dev_forward_skb2",
    "is_skb_forwardable",
    "skb_scrub_packet",
    "net/ethernet/eth.c",
    "eth_type_trans",
)
def dev_forward_skb(dev: NetDevice, skb: SkBuff) -> int:
    """Prepare *skb* to be received by *dev* (the peer of a pair): scrubbed, its
    Ethernet header pulled and ``skb.protocol`` set.

    Returns NET_RX_SUCCESS (0), or NET_RX_DROP (1) when the skb was dropped and counted.

    ``is_skb_forwardable``, ``skb_scrub_packet`` and, for a unicast frame,
    ``eth_type_trans`` are written out here.

    Kernel: net/core/dev.c, __dev_forward_skb2() / is_skb_forwardable() /
    skb_scrub_packet(); net/ethernet/eth.c, eth_type_trans().
    """
    if TIMED:
        spend("__dev_forward_skb2")
    if not dev.flags & IFF_UP or (
        skb.tail - skb.data > dev.mtu + dev.hard_header_len + 4 and not skb.gso_size
    ):
        dev.stats.rx_dropped += 1
        kfree_skb(skb, DropReason.PKT_TOO_BIG)
        return 1  # NET_RX_DROP
    # skb_scrub_packet(skb, xnet), written out as skb_scrub_packet above (a frame less
    # a packet; keep the two in step)
    skb.pkt_type = PACKET_HOST
    skb.ignore_df = False
    skb.dst_pending_confirm = False
    skb.skb_iif = 0
    if skb.dst is not None:
        skb_dst_drop(skb)
    if skb.tstamp:
        del skb.tstamp
    skb.cb = None
    if skb.mark:
        src = skb.dev
        if src is None or src.net is not dev.net:  # xnet
            del skb.mark
    skb.priority = 0  # ____dev_forward_skb(): the peer's qdisc priority is not ours
    # __dev_forward_skb(): eth_type_trans() (out of line in eth.c), written out for a
    # unicast frame of Ethernet II as netstack.core.ethernet has it (a frame less a
    # packet; keep the two in step); a group address or an 802.3 length goes there
    h_dest, proto = _ETH_DEST_PROTO(skb.buf, skb.data)  # one read, no slice or shifts
    if h_dest[0] & 1 or proto < ETH_P_802_3_MIN:
        skb.protocol = eth_type_trans(skb, dev)
        return 0
    if TIMED:
        spend("eth_type_trans")
    d = skb.data
    skb.dev = dev
    skb.mac_header = d
    skb.data = d + 14  # ETH_HLEN
    if h_dest != dev.dev_addr:
        skb.pkt_type = PACKET_OTHERHOST
    skb.protocol = proto
    return 0  # NET_RX_SUCCESS
