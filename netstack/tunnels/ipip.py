"""IPIP: IPv4 in IPv4 (RFC 2003), the ``ipip`` module.

Theory of operation: an IPIP tunnel adds only an outer IPv4 header (protocol
4, 20 bytes), so its MTU is the underlay's less 20. ``ipip_tunnel_setup``
sets ``NETIF_F_LLTX`` unconditionally ("ipip: lockless xmit", 2.6.37), so
every creation path — ``ip link add … type ipip`` (``ipip_newlink`` →
``ip_tunnel_newlink``), ``ip tunnel add … mode ipip`` (SIOCADDTUNNEL on
``tunl0`` → ``ip_tunnel_ctl`` → ``ip_tunnel_create``) and the fallback
``tunl0`` itself — transmits without ``HARD_TX_LOCK``.

Receive goes through the ``tunnel4`` chain of protocol 4: ``ipip_rcv`` looks
the tunnel up by (remote, local) only — IPIP has no key — and says "not
mine" when there is none, so ``tunnel4`` answers ICMP port unreachable.
Loading the module (``rtnl-link-ipip``, ``netdev-tunl0``) creates ``tunl0``.

Kernel: net/ipv4/ipip.c.
"""

from __future__ import annotations

import errno
from functools import partial
from types import MethodType
from typing import TYPE_CHECKING, Any, Final

import attrs

from netstack.core.dev import skb_scrub_packet
from netstack.core.features import (
    NETIF_F_FRAGLIST,
    NETIF_F_GSO_SOFTWARE,
    NETIF_F_HIGHDMA,
    NETIF_F_HW_CSUM,
    NETIF_F_LLTX,
    NETIF_F_SG,
    SKB_GSO_IPXIP4,
)
from netstack.core.net_generic import NetKey
from netstack.core.netdevice import IFF_NO_QUEUE, IFF_NOARP, NETDEV_TX_OK, NetDevice
from netstack.core.rtnetlink import RtnlLinkOps, rtnl_link_register
from netstack.core.skbuff import (
    CHECKSUM_COMPLETE,
    CHECKSUM_NONE,
    CHECKSUM_PARTIAL,
    DropReason,
    SkBuff,
    kfree_skb,
)
from netstack.core.sock import AF_INET
from netstack.errors import ConfigError
from netstack.ipv4 import ipv4_of
from netstack.ipv4.route import Flowi4, ip_rt_update_pmtu
from netstack.sites import TIMED, kernel, spend
from netstack.tunnels.ip_tunnel import (
    IPV4_ADDRS_UNPACK,
    SIOCADDTUNNEL,
    SIOCCHGTUNNEL,
    IpTunnel,
    IpTunnelNet,
    IpTunnelOps,
    IpTunnelParm,
    TnlPtkInfo,
    ip_tunnel_changelink,
    ip_tunnel_create,
    ip_tunnel_ctl,
    ip_tunnel_dellink,
    ip_tunnel_err_note,
    ip_tunnel_init,
    ip_tunnel_init_net,
    ip_tunnel_lookup,
    ip_tunnel_newlink,
    ip_tunnel_rcv,
    ip_tunnel_setup,
    ip_tunnel_xmit,
)
from netstack.tunnels.tunnel4 import XfrmTunnel, xfrm4_tunnel_register
from netstack.wire.arp import ARPHRD_TUNNEL
from netstack.wire.checksum import csum_partial, csum_sub
from netstack.wire.ethernet import ETH_P_IP
from netstack.wire.icmp import (
    ICMP_DEST_UNREACH,
    ICMP_EXC_TTL,
    ICMP_FRAG_NEEDED,
    ICMP_REDIRECT,
    ICMP_SR_FAILED,
    ICMP_TIME_EXCEEDED,
)
from netstack.wire.ipv4 import IP_DF, IPPROTO_IPIP, IPV4_HLEN

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = ["IPIP_TPI", "IptunParms", "ipip_init_net", "ipip_tunnel_setup"]

_IPIP_NET: NetKey[IpTunnelNet] = NetKey("ipip")

# What an IPIP device can take from the stack above it: any checksum left to
# do (the NIC below, or skb_checksum_help, fills it in) and GSO skbs of any
# software-segmentable type, cut after encapsulation (SKB_GSO_IPXIP4).
IPIP_FEATURES: Final = (
    NETIF_F_SG | NETIF_F_FRAGLIST | NETIF_F_HIGHDMA | NETIF_F_GSO_SOFTWARE | NETIF_F_HW_CSUM
)


# What every IPIP packet "parsed" to (the kernel's static const ipip_tpi; read only)
IPIP_TPI: Final = TnlPtkInfo(proto=ETH_P_IP, no_key=True)


@attrs.define
class IptunParms:
    """``IFLA_INFO_DATA`` of an ipip/sit link (IFLA_IPTUN_*); None = absent."""

    link: int | None = None
    local: int | None = None
    remote: int | None = None
    ttl: int | None = None
    tos: int | None = None
    proto: int | None = None
    pmtudisc: int | None = None


def ipip_itn_of(net: Net) -> IpTunnelNet:
    itn = _IPIP_NET.find(net)
    assert itn is not None, "ipip is not loaded"
    return itn


class IpipOps(IpTunnelOps):
    """Kernel: ipip_netdev_ops."""

    def ndo_init(self, dev: NetDevice) -> None:
        ipip_tunnel_init(dev)

    @kernel(
        "net/ipv4/ipip.c",
        "ipip_tunnel_xmit",
        "pskb_inet_may_pull",
        "net/ipv4/ip_tunnel_core.c",
        "iptunnel_handle_offloads",
    )
    def ndo_start_xmit(self, skb: SkBuff, dev: NetDevice) -> int:
        """``ndo_start_xmit``: the kernel's function itself (no frame between), with
        ``iptunnel_handle_offloads`` written in.

        Twin: netstack.tunnels.sit.ipip6_tunnel_xmit.
        Kernel: net/ipv4/ipip.c, ipip_tunnel_xmit(); pskb_inet_may_pull();
        net/ipv4/ip_tunnel_core.c, iptunnel_handle_offloads().
        """
        if TIMED:
            spend("ipip_tunnel_xmit")
        t: IpTunnel = dev.priv
        tiph = t.parms
        # pskb_inet_may_pull(), inline; only IPv4 is carried (ipproto IPPROTO_IPIP)
        if skb.protocol != ETH_P_IP or skb.network_header + IPV4_HLEN > skb.tail:
            dev.stats.tx_errors += 1
            kfree_skb(skb, DropReason.NOT_SPECIFIED)
            return NETDEV_TX_OK
        if tiph.protocol != IPPROTO_IPIP and tiph.protocol != 0:
            dev.stats.tx_errors += 1
            kfree_skb(skb, DropReason.NOT_SPECIFIED)
            return NETDEV_TX_OK
        # iptunnel_handle_offloads(), written out (a frame less a packet; GRE, SIT and VXLAN
        # call it: keep the two in step). netstack's never fails (no skb_header_unclone)
        if TIMED:
            spend("iptunnel_handle_offloads")
        if not skb.encapsulation:
            skb.inner_network_header = skb.network_header  # skb_reset_inner_headers()
            skb.inner_transport_header = skb.transport_header
            skb.inner_mac_header = skb.mac_header
            skb.inner_protocol = skb.protocol
            skb.encapsulation = True
        if skb.gso_size:
            skb.gso_type |= SKB_GSO_IPXIP4
        elif skb.ip_summed != CHECKSUM_PARTIAL:
            skb.ip_summed = CHECKSUM_NONE
            skb.encapsulation = False
        ip_tunnel_xmit(skb, dev, tiph, IPPROTO_IPIP)
        return NETDEV_TX_OK


IPIP_OPS: Final = IpipOps()


@kernel("net/ipv4/ipip.c", "ipip_tunnel_setup")
def ipip_tunnel_setup(dev: NetDevice, itn: IpTunnelNet, parms: IpTunnelParm | None = None) -> None:
    """Shape an IPIP device; LLTX and ``IPIP_FEATURES`` always.

    Twin: netstack.tunnels.sit.ipip6_tunnel_setup.
    Kernel: net/ipv4/ipip.c, ipip_tunnel_setup().
    """
    dev.type = ARPHRD_TUNNEL
    dev.flags = IFF_NOARP
    dev.addr_len = 4
    dev.hard_header_len = 0
    dev.priv_flags |= IFF_NO_QUEUE
    dev.features |= NETIF_F_LLTX
    dev.features |= IPIP_FEATURES
    dev.hw_features |= IPIP_FEATURES
    ip_tunnel_setup(dev, itn, parms)


@kernel("net/ipv4/ipip.c", "ipip_tunnel_init")
def ipip_tunnel_init(dev: NetDevice) -> None:
    """``ndo_init``.

    Twin: netstack.tunnels.sit.ipip6_tunnel_init.
    Kernel: net/ipv4/ipip.c, ipip_tunnel_init().
    """
    t: IpTunnel = dev.priv
    dev.dev_addr = t.parms.saddr.to_bytes(4, "big")
    dev.broadcast = t.parms.daddr.to_bytes(4, "big")
    t.tun_hlen = 0
    t.hlen = 0
    ip_tunnel_init(dev)


@kernel("net/ipv4/ipip.c", "ipip_err")
def ipip_err(net: Net, skb: SkBuff, info: int) -> int:
    """An ICMP error quotes an IPIP packet we sent.

    Twin: netstack.tunnels.sit.ipip6_err.
    Kernel: net/ipv4/ipip.c, ipip_err().
    """
    itn = ipip_itn_of(net)
    buf = skb.buf
    iph = skb.data
    saddr = int.from_bytes(buf[iph + 12 : iph + 16], "big")
    daddr = int.from_bytes(buf[iph + 16 : iph + 20], "big")
    dev = skb.dev
    t = ip_tunnel_lookup(itn, dev.ifindex if dev else 0, 0, daddr, saddr, 0, no_key=True)
    if t is None:
        return -errno.ENOENT
    th = skb.transport_header
    icmp_type, code = buf[th], buf[th + 1]
    if icmp_type == ICMP_DEST_UNREACH:
        if code == ICMP_SR_FAILED:
            return 0
    elif icmp_type == ICMP_TIME_EXCEEDED:
        if code != ICMP_EXC_TTL:
            return 0
    elif icmp_type != ICMP_REDIRECT:
        return 0
    if icmp_type == ICMP_DEST_UNREACH and code == ICMP_FRAG_NEEDED:
        ipv4 = ipv4_of(net)
        rt = ipv4.ip_route_output_key(Flowi4(daddr, saddr, oif=t.parms.link, proto=IPPROTO_IPIP))
        if not isinstance(rt, int):
            ip_rt_update_pmtu(ipv4, rt, daddr, info, saddr, t.parms.link)  # ipv4_update_pmtu()
            rt.release()
        return 0
    if icmp_type == ICMP_REDIRECT:
        return 0
    if t.parms.daddr == 0:
        return -errno.ENOENT
    if t.parms.ttl == 0 and icmp_type == ICMP_TIME_EXCEEDED:
        return 0
    ip_tunnel_err_note(t)
    return 0


# ---------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------


@kernel("net/ipv4/ipip.c", "ipip_netlink_parms")
def ipip_netlink_parms(data: IptunParms | None, protocol: int = IPPROTO_IPIP) -> IpTunnelParm:
    """IFLA_IPTUN_* → parameters; SIT shares it with its own default *protocol*.

    Kernel: net/ipv4/ipip.c, ipip_netlink_parms().
    """
    p = IpTunnelParm(protocol=protocol)
    if data is None:
        p.frag_off = IP_DF
        return p
    if data.link is not None:
        p.link = data.link
    if data.local is not None:
        p.saddr = data.local
    if data.remote is not None:
        p.daddr = data.remote
    if data.ttl is not None:
        p.ttl = data.ttl
        if p.ttl:
            p.frag_off = IP_DF
    if data.tos is not None:
        p.tos = data.tos
    if data.proto is not None:
        p.protocol = data.proto
    if data.pmtudisc is None or data.pmtudisc:
        p.frag_off = IP_DF
    return p


@kernel("net/ipv4/ipip.c", "ipip_tunnel_validate")
def ipip_tunnel_validate(data: IptunParms | None) -> None:
    """Kernel: net/ipv4/ipip.c, ipip_tunnel_validate()."""
    if data is not None and data.proto is not None and data.proto not in (IPPROTO_IPIP, 137, 0):
        raise ConfigError("RTNETLINK answers: Invalid argument", errno.EINVAL)


def _ipip_link_newlink(
    net: Net, name: str | None, data: IptunParms | None, tb: dict[str, Any]
) -> NetDevice:
    itn = ipip_itn_of(net)
    ipip_tunnel_validate(data)
    dev = NetDevice(net, name or "ipip%d", IPIP_OPS, kind="ipip")
    ipip_tunnel_setup(dev, itn)
    ip_tunnel_newlink(dev, ipip_netlink_parms(data), tb)
    return dev


def _ipip_changelink(dev: NetDevice, data: IptunParms | None, tb: dict[str, Any]) -> None:
    ipip_tunnel_validate(data)
    ip_tunnel_changelink(dev, ipip_netlink_parms(data), tb)


@kernel("net/ipv4/ipip.c", "ipip_tunnel_ctl")
def ipip_tunnel_ctl(dev: NetDevice, p: IpTunnelParm, cmd: int) -> IpTunnelParm | None:
    """SIOC*TUNNEL on an IPIP device.

    Twin: netstack.tunnels.sit.ipip6_tunnel_ctl.
    Kernel: net/ipv4/ipip.c, ipip_tunnel_ctl().
    """
    itn: IpTunnelNet = dev.priv.itn
    if cmd in (SIOCADDTUNNEL, SIOCCHGTUNNEL) and (
        p.version != 4 or p.protocol not in (IPPROTO_IPIP, 137, 0) or p.ihl != 5
    ):
        raise OSError(errno.EINVAL, "Invalid argument")
    if cmd in (SIOCADDTUNNEL, SIOCCHGTUNNEL) and p.frag_off & ~IP_DF:
        raise OSError(errno.EINVAL, "Invalid argument")
    p.i_key = p.o_key = 0
    p.i_flags = p.o_flags = 0

    def create(parms: IpTunnelParm) -> IpTunnel:
        return ip_tunnel_create(itn, parms, IPIP_OPS, ipip_tunnel_setup)

    return ip_tunnel_ctl(itn, dev, p, cmd, create)


@kernel("net/ipv4/ipip.c", "ipip_init", "ipip_init_net")
def ipip_init_net(net: Net) -> None:
    """Load ``ipip`` on *net*: table, link kind, tunnel4 handler, ``tunl0``.

    Twin: netstack.tunnels.sit.sit_init_net.
    Kernel: net/ipv4/ipip.c, ipip_init() + ipip_init_net().
    """
    itn = IpTunnelNet(net, "ipip", ARPHRD_TUNNEL, ipip_tunnel_ctl)
    _IPIP_NET.set(net, itn)
    xfrm4_tunnel_register(
        net,
        XfrmTunnel(MethodType(ipip_tunnel_rcv_v4, itn), partial(ipip_err, net), priority=1),
        AF_INET,
    )
    rtnl_link_register(
        net,
        RtnlLinkOps(
            "ipip",
            _ipip_link_newlink,
            changelink=_ipip_changelink,
            dellink=ip_tunnel_dellink,
            get_info=lambda d: d.priv,
        ),
    )
    ip_tunnel_init_net(itn, "tunl0", IPIP_OPS, ipip_tunnel_setup)


@kernel(
    "net/ipv4/ipip.c",
    "ipip_rcv",
    "ipip_tunnel_rcv",
    "net/ipv4/ip_tunnel_core.c",
    "__iptunnel_pull_header",
)
def ipip_tunnel_rcv_v4(itn: IpTunnelNet, skb: SkBuff) -> int:
    """Protocol 4 received, from the tunnel4 chain: take the packet if a tunnel
    matches (0), else -1.

    *itn* is bound when the handler is registered (the kernel's per-Net
    lookup is an array index). ``ipip_tunnel_rcv`` (static in ipip.c; here
    its only caller, with ``IPPROTO_IPIP``) and ``__iptunnel_pull_header``
    (for a header of no bytes) are written in.

    Twin: netstack.tunnels.sit.ipip6_rcv.
    Kernel: net/ipv4/ipip.c, ipip_rcv() / ipip_tunnel_rcv();
    net/ipv4/ip_tunnel_core.c, __iptunnel_pull_header().
    """
    if TIMED:
        spend("ipip_rcv")
        spend("ipip_tunnel_rcv")
    buf = skb.buf
    nh = skb.network_header
    saddr, daddr = IPV4_ADDRS_UNPACK(buf, nh + 12)
    dev = skb.dev
    t = ip_tunnel_lookup(itn, dev.ifindex if dev else 0, 0, saddr, daddr, 0, no_key=True)
    if t is None:
        return -1
    protocol = t.parms.protocol
    if protocol != IPPROTO_IPIP and protocol != 0:
        kfree_skb(skb, DropReason.NOT_SPECIFIED)
        return 0
    # __iptunnel_pull_header(), written out for IPIP's header of no bytes (a frame
    # less a packet; SIT, GRE and VXLAN call it): never too short, the inner protocol
    # IPv4
    if TIMED:
        spend("__iptunnel_pull_header")
    if skb.ip_summed == CHECKSUM_COMPLETE:  # skb_pull_rcsum() of nothing
        skb.csum = csum_sub(skb.csum, csum_partial(buf, skb.data, skb.data))
    skb.protocol = ETH_P_IP
    skb.queue_mapping = 0
    skb_scrub_packet(skb, False)
    skb.mac_header = skb.data
    ip_tunnel_rcv(t, skb, IPIP_TPI, nh)
    return 0
