"""SIT: IPv6 in IPv4 (RFC 4213 6in4), the ``sit`` module — devices and encapsulation.

Theory of operation: a SIT device is an IPv4 tunnel whose payload is IPv6
(protocol 41, ARPHRD_SIT, MTU 1480 and never below IPv6's 1280).
``ipip6_tunnel_setup`` sets ``NETIF_F_LLTX`` unconditionally, so every path —
``ip link add … type sit``, ``ip tunnel add … mode sit`` (SIOCADDTUNNEL on
``sit0``) and ``sit0`` itself — is lockless. Loading the module
(``rtnl-link-sit``, ``netdev-sit0``) creates ``sit0`` (TTL 64, no DF) and
registers a ``tunnel4`` handler for protocol 41.

What this module does not do yet is the IPv6 side: it encapsulates whatever
IPv6 packet reaches the device towards the configured remote (TTL and traffic
class inherited by ``ip_tunnel_xmit``), and hands decapsulated packets to the
stack as ``ETH_P_IPV6`` — where an IPv6 layer, when the Net has one, takes
them. 6to4/ISATAP destinations, the PRL and 6RD ioctls and ICMPv6 "packet too
big" belong with the IPv6 stack. This module also uses the shared
``ip_tunnel`` lookup where the kernel's sit.c keeps its own four tables.

Kernel: net/ipv6/sit.c.
"""

from __future__ import annotations

import errno
from functools import partial
from typing import TYPE_CHECKING, Any, Final

from netstack.core.features import NETIF_F_LLTX
from netstack.core.netdevice import IFF_NO_QUEUE, IFF_NOARP, NETDEV_TX_OK, NetDevice
from netstack.core.rtnetlink import RtnlLinkOps, rtnl_link_register
from netstack.core.skbuff import DropReason, SkBuff, kfree_skb
from netstack.errors import ConfigError
from netstack.tunnels.ip_tunnel import (
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
    ip_tunnel_init,
    ip_tunnel_init_net,
    ip_tunnel_lookup,
    ip_tunnel_newlink,
    ip_tunnel_rcv,
    ip_tunnel_setup,
    ip_tunnel_xmit,
    iptunnel_handle_offloads,
    iptunnel_pull_header,
    pskb_inet_may_pull,
)
from netstack.tunnels.ipip import IptunParms
from netstack.tunnels.tunnel4 import AF_INET6, XfrmTunnel, xfrm4_tunnel_register
from netstack.wire.arp import ARPHRD_SIT
from netstack.wire.ethernet import ETH_P_IPV6
from netstack.wire.ipv4 import IP_DF, IPPROTO_IPIP, IPPROTO_IPV6, IPV4_HLEN

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = ["IPV6_MIN_MTU", "ipip6_tunnel_setup", "sit_init_net"]

IPV6_MIN_MTU: Final = 1280
IP6_MAX_MTU: Final = 65535 + 40
IPPROTO_MPLS: Final = 137
SIT_ISATAP: Final = 0x0001
_SIT_KEY: Final = "sit"


def sit_itn_of(net: Net) -> IpTunnelNet:
    itn = net.proto_data.get(_SIT_KEY)
    assert isinstance(itn, IpTunnelNet), "sit is not loaded"
    return itn


class SitOps(IpTunnelOps):
    """Kernel: ipip6_netdev_ops."""

    def ndo_init(self, dev: NetDevice) -> None:
        ipip6_tunnel_init(dev)

    def ndo_start_xmit(self, skb: SkBuff, dev: NetDevice) -> int:
        return sit_tunnel_xmit(skb, dev)

    def ndo_change_mtu(self, dev: NetDevice, new_mtu: int) -> None:
        if new_mtu < IPV6_MIN_MTU or new_mtu > dev.max_mtu:
            raise ConfigError("RTNETLINK answers: Invalid argument", errno.EINVAL)
        dev.mtu = new_mtu


SIT_OPS: Final = SitOps()


def ipip6_tunnel_setup(dev: NetDevice, itn: IpTunnelNet, parms: IpTunnelParm | None = None) -> None:
    """Shape a SIT device; LLTX always. Kernel: net/ipv6/sit.c, ipip6_tunnel_setup()."""
    dev.type = ARPHRD_SIT
    dev.flags = IFF_NOARP
    dev.addr_len = 4
    dev.hard_header_len = 0
    dev.priv_flags |= IFF_NO_QUEUE
    dev.features |= NETIF_F_LLTX
    ip_tunnel_setup(dev, itn, parms)


def ipip6_tunnel_init(dev: NetDevice) -> None:
    """``ndo_init``. Kernel: net/ipv6/sit.c, ipip6_tunnel_init()."""
    t: IpTunnel = dev.priv
    dev.dev_addr = t.parms.saddr.to_bytes(4, "big")
    dev.broadcast = t.parms.daddr.to_bytes(4, "big")
    t.tun_hlen = 0
    t.hlen = 0
    ip_tunnel_init(dev)


def _sit_bounds(dev: NetDevice) -> None:
    """MTU limits and the IPv6 minimum. Kernel: ipip6_tunnel_setup() / ipip6_tunnel_bind_dev()."""
    dev.min_mtu = IPV6_MIN_MTU
    dev.max_mtu = IP6_MAX_MTU - IPV4_HLEN
    dev.mtu = max(dev.mtu, IPV6_MIN_MTU)


def sit_tunnel_xmit(skb: SkBuff, dev: NetDevice) -> int:
    """``ndo_start_xmit``: IPv6 (or, for ``mode any``, IPv4) into IPv4.

    Kernel: net/ipv6/sit.c, sit_tunnel_xmit() → ipip6_tunnel_xmit().
    """
    t: IpTunnel = dev.priv
    if not pskb_inet_may_pull(skb) or skb.protocol != ETH_P_IPV6:
        dev.stats.tx_errors += 1
        kfree_skb(skb, DropReason.NOT_SPECIFIED)
        return NETDEV_TX_OK
    if t.parms.protocol not in (IPPROTO_IPV6, 0) or not t.parms.daddr:
        # NBMA (6to4, ISATAP) destinations are derived from IPv6 addresses: the IPv6 side
        dev.stats.tx_errors += 1
        kfree_skb(skb, DropReason.NOT_SPECIFIED)
        return NETDEV_TX_OK
    iptunnel_handle_offloads(skb)
    ip_tunnel_xmit(skb, dev, t.parms, IPPROTO_IPV6)
    return NETDEV_TX_OK


def ipip6_rcv(net: Net, skb: SkBuff) -> int:
    """Protocol 41 from the tunnel4 chain: 0 if taken, -1 if not ours.

    Kernel: net/ipv6/sit.c, ipip6_rcv().
    """
    itn = sit_itn_of(net)
    buf = skb.buf
    nh = skb.network_header
    saddr = int.from_bytes(buf[nh + 12 : nh + 16], "big")
    daddr = int.from_bytes(buf[nh + 16 : nh + 20], "big")
    dev = skb.dev
    t = ip_tunnel_lookup(itn, dev.ifindex if dev else 0, 0, saddr, daddr, 0, no_key=True)
    if t is None:
        return -1
    if not iptunnel_pull_header(skb, 0, ETH_P_IPV6, False):
        kfree_skb(skb, DropReason.PKT_TOO_SMALL)
        return 0
    skb.mac_header = skb.data
    ip_tunnel_rcv(t, skb, TnlPtkInfo(proto=ETH_P_IPV6, no_key=True), nh)
    return 0


def _sit_netlink_parms(data: IptunParms | None) -> IpTunnelParm:
    """Kernel: net/ipv6/sit.c, ipip6_netlink_parms()."""
    p = IpTunnelParm(protocol=IPPROTO_IPV6)
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


def _valid_proto(proto: int) -> bool:
    """Kernel: ipip6_valid_ip_proto()."""
    return proto in (IPPROTO_IPV6, IPPROTO_IPIP, IPPROTO_MPLS, 0)


def _sit_link_newlink(
    net: Net, name: str | None, data: IptunParms | None, tb: dict[str, Any]
) -> NetDevice:
    itn = sit_itn_of(net)
    if data is not None and data.proto is not None and not _valid_proto(data.proto):
        raise ConfigError("RTNETLINK answers: Invalid argument", errno.EINVAL)
    dev = NetDevice(net, name or "sit%d", SIT_OPS, kind="sit")
    ipip6_tunnel_setup(dev, itn)
    ip_tunnel_newlink(dev, _sit_netlink_parms(data), tb)
    _sit_bounds(dev)
    return dev


def _sit_changelink(dev: NetDevice, data: IptunParms | None, tb: dict[str, Any]) -> None:
    ip_tunnel_changelink(dev, _sit_netlink_parms(data), tb)


def ipip6_tunnel_ctl(dev: NetDevice, p: IpTunnelParm, cmd: int) -> IpTunnelParm | None:
    """SIOC*TUNNEL on a SIT device. Kernel: net/ipv6/sit.c, ipip6_tunnel_ctl()."""
    itn: IpTunnelNet = dev.priv.itn
    if cmd in (SIOCADDTUNNEL, SIOCCHGTUNNEL) and (
        p.version != 4 or not _valid_proto(p.protocol) or p.ihl != 5 or p.frag_off & ~IP_DF
    ):
        raise OSError(errno.EINVAL, "Invalid argument")
    if cmd == SIOCADDTUNNEL and p.i_flags & SIT_ISATAP:
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")  # netstack: no ISATAP
    p.i_key = p.o_key = 0
    p.i_flags &= SIT_ISATAP
    p.o_flags = 0

    def create(parms: IpTunnelParm) -> IpTunnel:
        t = ip_tunnel_create(itn, parms, SIT_OPS, ipip6_tunnel_setup)
        _sit_bounds(t.dev)
        return t

    return ip_tunnel_ctl(itn, dev, p, cmd, create)


def sit_init_net(net: Net) -> None:
    """Load ``sit`` on *net*: table, link kind, tunnel4 handler for 41, ``sit0``.

    Kernel: net/ipv6/sit.c, sit_init() + sit_init_net() (+ ipip6_fb_tunnel_init).
    """
    itn = IpTunnelNet(net, "sit", ARPHRD_SIT, ipip6_tunnel_ctl)
    net.proto_data[_SIT_KEY] = itn
    xfrm4_tunnel_register(net, XfrmTunnel(partial(ipip6_rcv, net), None, priority=1), AF_INET6)
    rtnl_link_register(
        net,
        RtnlLinkOps(
            "sit",
            _sit_link_newlink,
            changelink=_sit_changelink,
            dellink=ip_tunnel_dellink,
            get_info=lambda d: d.priv,
        ),
    )

    def fb_setup(dev: NetDevice, itn: IpTunnelNet, parms: IpTunnelParm | None) -> None:
        assert parms is not None
        parms.protocol = IPPROTO_IPV6  # ipip6_fb_tunnel_init(): ttl 64, no DF
        parms.ttl = 64
        ipip6_tunnel_setup(dev, itn, parms)

    fb = ip_tunnel_init_net(itn, "sit0", SIT_OPS, fb_setup)
    _sit_bounds(fb)
