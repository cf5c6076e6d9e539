"""802.1Q VLAN devices: ``ip link add link eth0 name eth0.10 type vlan id 10``.

Theory of operation: a VLAN device sits on a real device (its ``iflink``)
and carries one VID of one TPID (802.1Q, or 802.1ad for QinQ's outer tag).
Transmit puts the tag in the skb's metadata (``__vlan_hwaccel_put_tag``)
and queues the skb on the real device; if that device cannot insert tags
(``tx-vlan-offload`` off, or a NIC without the feature)
``validate_xmit_vlan`` writes the tag into the frame. Receive needs nothing
here: the core moves an in-band tag into the metadata and
``vlan_do_receive`` finds this device in the real device's ``vlan_info``.

The device copies the real device's MAC (``NET_ADDR_STOLEN``), MTU and
flags, and follows it: up with it, down with it, carrier from it, gone
with it (the ``8021q`` module's netdevice notifier). Opening a VLAN device
whose real device is down fails with ENETDOWN, as Linux does.

This is a driver (drivers/ in netstack's layout, net/8021q/ in the kernel)
because it is a device type; the part every receive needs — untagging,
``vlan_do_receive`` — is core (:mod:`netstack.core.vlan_core`), as the
kernel links vlan_core.c into the core.

Kernel: net/8021q/vlan.c, vlan_dev.c, vlan_netlink.c.
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Any, Final

import attrs

from netstack.core.dev import (
    NETDEV_CHANGE,
    NETDEV_CHANGEMTU,
    NETDEV_DOWN,
    NETDEV_UNREGISTER,
    NETDEV_UP,
    dev_close,
    dev_open,
    dev_queue_xmit,
    netif_carrier_off,
    netif_carrier_on,
    register_netdevice,
    unregister_netdevice,
)
from netstack.core.ethernet import EthHeaderOps, ether_setup
from netstack.core.features import (
    NETIF_F_FRAGLIST,
    NETIF_F_GSO_ENCAP_ALL,
    NETIF_F_GSO_SOFTWARE,
    NETIF_F_HIGHDMA,
    NETIF_F_HW_CSUM,
    NETIF_F_LLTX,
    NETIF_F_SCTP_CRC,
    NETIF_F_SG,
    NETIF_F_VLAN_CHALLENGED,
    vlan_hw_offload_capable,
)
from netstack.core.netdevice import (
    IFF_802_1Q_VLAN,
    IFF_ALLMULTI,
    IFF_MASTER,
    IFF_NO_QUEUE,
    IFF_PROMISC,
    IFF_SLAVE,
    IFF_TX_SKB_SHARING,
    IFF_UP,
    NET_ADDR_STOLEN,
    NET_XMIT_CN,
    NET_XMIT_SUCCESS,
    NETDEV_TX_OK,
    DevStats,
    NetDevice,
    NetDeviceOps,
)
from netstack.core.rtnetlink import KernelModule, RtnlLinkOps, rtnl_link_register
from netstack.core.skbuff import SkBuff
from netstack.core.vlan_core import (
    ETH_P_8021AD,
    ETH_P_8021Q,
    VLAN_FLAG_REORDER_HDR,
    VLAN_HLEN,
    VlanDevPriv,
    VlanInfo,
)
from netstack.errors import ConfigError

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = ["VLAN_MODULE", "VlanOps", "VlanParms", "vlan_init_net", "vlan_newlink"]

VLAN_FLAG_GVRP: Final = 0x2
VLAN_FLAG_LOOSE_BINDING: Final = 0x4
VLAN_FLAG_MVRP: Final = 0x8
VLAN_FLAG_BRIDGE_BINDING: Final = 0x10
ETH_MAX_MTU: Final = 0xFFFF


@attrs.frozen
class VlanParms:
    """``IFLA_INFO_DATA`` of a VLAN device (``IFLA_VLAN_*``); None: absent."""

    vid: int | None = None
    proto: int | None = None
    flags: int = 0
    flags_mask: int = 0
    ingress_qos: tuple[tuple[int, int], ...] = ()
    egress_qos: tuple[tuple[int, int], ...] = ()


def _err(msg: str, err: int) -> ConfigError:
    return ConfigError(f"Error: 8021q: {msg}.", err)


class VlanHeaderOps(EthHeaderOps):
    """``vlan_passthru_header_ops``: an Ethernet header, no header cache."""

    has_cache = False


class VlanOps(NetDeviceOps):
    """Kernel: vlan_netdev_ops."""

    def ndo_open(self, dev: NetDevice) -> None:
        """Kernel: vlan_dev_open() (ENETDOWN while the real device is down)."""
        vlan: VlanDevPriv = dev.priv
        real = vlan.real_dev
        if not real.flags & IFF_UP and not vlan.flags & VLAN_FLAG_LOOSE_BINDING:
            raise ConfigError("RTNETLINK answers: Network is down", errno.ENETDOWN)
        if real.carrier:
            netif_carrier_on(dev)
        else:
            netif_carrier_off(dev)

    def ndo_stop(self, dev: NetDevice) -> None:
        """Kernel: vlan_dev_stop()."""
        netif_carrier_off(dev)

    def ndo_start_xmit(self, skb: SkBuff, dev: NetDevice) -> int:
        """Tag and hand to the real device. Kernel: vlan_dev_hard_start_xmit()."""
        vlan: VlanDevPriv = dev.priv
        buf = skb.buf
        d = skb.data
        if (
            vlan.flags & VLAN_FLAG_REORDER_HDR
            or ((buf[d + 12] << 8) | buf[d + 13]) != vlan.vlan_proto
        ):
            tci = vlan.vlan_id | vlan.egress_priority_map.get(skb.priority & 0xF, 0)
            skb.vlan_proto = vlan.vlan_proto
            skb.vlan_tci = tci
        skb.dev = vlan.real_dev
        length = skb.tail - d
        ret = dev_queue_xmit(skb)
        if ret == NET_XMIT_SUCCESS or ret == NET_XMIT_CN:
            vlan.tx_packets += 1
            vlan.tx_bytes += length
        else:
            vlan.tx_dropped += 1
        return NETDEV_TX_OK

    def ndo_get_iflink(self, dev: NetDevice) -> int:
        real: NetDevice = dev.priv.real_dev
        return real.ifindex

    def ndo_get_stats64(self, dev: NetDevice, stats: DevStats) -> None:
        """Kernel: vlan_dev_get_stats64()."""
        vlan: VlanDevPriv = dev.priv
        stats.rx_packets += vlan.rx_packets
        stats.rx_bytes += vlan.rx_bytes
        stats.multicast += vlan.rx_multicast
        stats.tx_packets += vlan.tx_packets
        stats.tx_bytes += vlan.tx_bytes
        stats.tx_dropped += vlan.tx_dropped
        stats.rx_errors += vlan.rx_errors

    def ndo_change_mtu(self, dev: NetDevice, new_mtu: int) -> None:
        """Kernel: vlan_dev_change_mtu() (not above the real device's)."""
        real: NetDevice = dev.priv.real_dev
        max_mtu = real.mtu - (VLAN_HLEN if real.features & NETIF_F_VLAN_CHALLENGED else 0)
        if new_mtu > max_mtu:
            raise ConfigError("RTNETLINK answers: Numerical result out of range", errno.ERANGE)
        dev.mtu = new_mtu


VLAN_OPS: Final = VlanOps()


def vlan_setup(dev: NetDevice) -> None:
    """Kernel: net/8021q/vlan_dev.c, vlan_setup()."""
    ether_setup(dev)
    dev.priv_flags |= IFF_802_1Q_VLAN | IFF_NO_QUEUE
    dev.priv_flags &= ~IFF_TX_SKB_SHARING
    dev.min_mtu = 0
    dev.max_mtu = ETH_MAX_MTU
    dev.broadcast = bytes(6)


def vlan_dev_init(dev: NetDevice, real: NetDevice) -> None:
    """Inherit from the real device. Kernel: net/8021q/vlan_dev.c, vlan_dev_init()."""
    vlan: VlanDevPriv = dev.priv
    dev.carrier = False  # netif_carrier_off() before registration
    dev.flags = real.flags & ~(IFF_UP | IFF_PROMISC | IFF_ALLMULTI | IFF_MASTER | IFF_SLAVE)
    dev.hw_features = (
        NETIF_F_HW_CSUM
        | NETIF_F_SG
        | NETIF_F_FRAGLIST
        | NETIF_F_GSO_SOFTWARE
        | NETIF_F_GSO_ENCAP_ALL
        | NETIF_F_HIGHDMA
        | NETIF_F_SCTP_CRC
    )
    dev.features |= dev.hw_features | NETIF_F_LLTX
    dev.vlan_features = real.vlan_features
    dev.hw_enc_features = real.hw_enc_features
    dev.gso_max_size = real.gso_max_size
    dev.gso_max_segs = real.gso_max_segs
    if dev.dev_addr == bytes(6) or not dev.dev_addr:
        dev.dev_addr = bytes(real.dev_addr)
        dev.addr_assign_type = NET_ADDR_STOLEN
    if dev.broadcast == bytes(6):
        dev.broadcast = bytes(real.broadcast)
    dev.header_ops = VlanHeaderOps()
    if vlan_hw_offload_capable(real.features, vlan.vlan_proto):
        dev.hard_header_len = real.hard_header_len
    else:
        dev.hard_header_len = real.hard_header_len + VLAN_HLEN


def vlan_newlink(net: Net, name: str | None, data: Any, tb: dict[str, Any]) -> NetDevice:
    """``ip link add link DEV name NAME type vlan id VID [protocol …]``.

    Kernel: net/8021q/vlan_netlink.c, vlan_validate() / vlan_newlink(); vlan.c,
    register_vlan_dev().
    """
    parms: VlanParms = data if data is not None else VlanParms()
    address = tb.get("address")
    if address is not None and (len(address) != 6 or address[0] & 1 or address == bytes(6)):
        raise _err("Invalid link address", errno.EINVAL)
    proto = parms.proto if parms.proto is not None else ETH_P_8021Q
    if proto not in (ETH_P_8021Q, ETH_P_8021AD):
        raise _err("Invalid VLAN protocol", errno.EPROTONOSUPPORT)
    if parms.vid is not None and parms.vid >= 0x0FFF:
        raise _err("Invalid VLAN id", errno.ERANGE)
    if parms.vid is None:
        raise _err("VLAN id not specified", errno.EINVAL)
    link = tb.get("link")
    if link is None:
        raise _err("link not specified", errno.EINVAL)
    real = net.dev_get_by_name(link) if isinstance(link, str) else net.dev_get_by_index(link)
    if real is None:
        raise _err("link does not exist", errno.ENODEV)
    if real.features & NETIF_F_VLAN_CHALLENGED or real.type != 1:
        raise _err("VLANs not supported on device", errno.EOPNOTSUPP)
    info: VlanInfo | None = real.vlan_info
    if info is not None and (proto, parms.vid) in info.devices:
        raise _err("VLAN device already exists", errno.EEXIST)
    dev = NetDevice(net, name or f"{real.name}.{parms.vid}", VLAN_OPS, kind="vlan")
    vlan_setup(dev)
    vlan = VlanDevPriv(real, proto, parms.vid)
    vlan.flags = (VLAN_FLAG_REORDER_HDR & ~parms.flags_mask) | (parms.flags & parms.flags_mask)
    for frm, to in parms.ingress_qos:
        vlan.ingress_priority_map[frm & 7] = to
    for frm, to in parms.egress_qos:
        vlan.egress_priority_map[frm & 0xF] = (to & 7) << 13
    dev.priv = vlan
    if address is not None:
        dev.dev_addr = bytes(address)
    vlan_dev_init(dev, real)
    max_mtu = real.mtu - (VLAN_HLEN if real.features & NETIF_F_VLAN_CHALLENGED else 0)
    mtu = tb.get("mtu")
    if mtu is None:
        dev.mtu = max_mtu
    elif mtu > max_mtu:
        raise ConfigError("RTNETLINK answers: Invalid argument", errno.EINVAL)
    else:
        dev.mtu = mtu
    dev.iflink = real.ifindex
    register_netdevice(dev)
    if real.vlan_info is None:
        real.vlan_info = VlanInfo(real)
    real.vlan_info.devices[(proto, parms.vid)] = dev
    return dev


def vlan_changelink(dev: NetDevice, data: Any, tb: dict[str, Any]) -> None:
    """``ip link set eth0.10 type vlan reorder_hdr off …``. Kernel: vlan_changelink()."""
    parms: VlanParms = data
    vlan: VlanDevPriv = dev.priv
    if parms.vid is not None and parms.vid != vlan.vlan_id:
        raise ConfigError("RTNETLINK answers: Operation not supported", errno.EOPNOTSUPP)
    vlan.flags = (vlan.flags & ~parms.flags_mask) | (parms.flags & parms.flags_mask)
    for frm, to in parms.ingress_qos:
        vlan.ingress_priority_map[frm & 7] = to
    for frm, to in parms.egress_qos:
        vlan.egress_priority_map[frm & 0xF] = (to & 7) << 13


def unregister_vlan_dev(dev: NetDevice) -> None:
    """Kernel: net/8021q/vlan.c, unregister_vlan_dev()."""
    vlan: VlanDevPriv = dev.priv
    info: VlanInfo | None = vlan.real_dev.vlan_info
    if info is not None:
        info.devices.pop((vlan.vlan_proto, vlan.vlan_id), None)
        if not info.devices:
            vlan.real_dev.vlan_info = None
    unregister_netdevice(dev)


def vlan_device_event(event: int, dev: NetDevice) -> None:
    """The real device changed: its VLAN devices follow. Kernel: vlan.c, vlan_device_event()."""
    info: VlanInfo | None = dev.vlan_info
    if info is None:
        return
    vlans = list(info.devices.values())
    if event == NETDEV_CHANGE:
        for v in vlans:  # vlan_transfer_operstate / netif_stacked_transfer_operstate
            if v.flags & IFF_UP:
                if dev.carrier:
                    netif_carrier_on(v)
                else:
                    netif_carrier_off(v)
    elif event == NETDEV_DOWN:
        for v in vlans:
            if not v.priv.flags & VLAN_FLAG_LOOSE_BINDING:
                dev_close(v)
    elif event == NETDEV_UP:
        for v in vlans:
            if not v.flags & IFF_UP and not v.priv.flags & VLAN_FLAG_LOOSE_BINDING:
                dev_open(v)
    elif event == NETDEV_CHANGEMTU:
        for v in vlans:
            if v.mtu > dev.mtu:
                v.mtu = dev.mtu
    elif event == NETDEV_UNREGISTER:
        for v in vlans:
            unregister_vlan_dev(v)


def vlan_fill_info(dev: NetDevice) -> VlanParms:
    """What ``ip -d link`` shows. Kernel: vlan_netlink.c, vlan_fill_info()."""
    vlan: VlanDevPriv = dev.priv
    return VlanParms(
        vid=vlan.vlan_id,
        proto=vlan.vlan_proto,
        flags=vlan.flags,
        flags_mask=0xFFFFFFFF,
        ingress_qos=tuple((i, t) for i, t in enumerate(vlan.ingress_priority_map) if t),
        egress_qos=tuple((f, t >> 13) for f, t in sorted(vlan.egress_priority_map.items()) if t),
    )


def vlan_init_net(net: Net) -> None:
    """The ``8021q`` module's per-Net init. Kernel: net/8021q/vlan.c, vlan_proto_init()."""
    net.register_netdevice_notifier(vlan_device_event)
    rtnl_link_register(
        net,
        RtnlLinkOps(
            "vlan",
            newlink=vlan_newlink,
            changelink=vlan_changelink,
            dellink=unregister_vlan_dev,
            get_info=vlan_fill_info,
        ),
    )


VLAN_MODULE: Final = KernelModule("8021q", ("rtnl-link-vlan",), vlan_init_net)
