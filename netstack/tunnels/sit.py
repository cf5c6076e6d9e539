"""SIT: IPv6 in IPv4 (RFC 4213 6in4), the ``sit`` module — devices and encapsulation.

Theory of operation: a SIT device is an IPv4 tunnel whose payload is IPv6
(protocol 41, ARPHRD_SIT, MTU 1480 and never below IPv6's 1280).
``ipip6_tunnel_setup`` sets ``NETIF_F_LLTX`` unconditionally, so every path —
``ip link add … type sit``, ``ip tunnel add … mode sit`` (SIOCADDTUNNEL on
``sit0``) and ``sit0`` itself — is lockless. Loading the module
(``rtnl-link-sit``, ``netdev-sit0``) creates ``sit0`` (TTL 64, no DF) and
registers a ``tunnel4`` handler for protocol 41.

Transmit is sit.c's own ``ipip6_tunnel_xmit``: the IPv4 destination is the
configured remote; without one (``sit0``, ``remote any``) it is taken from the
IPv6 packet — a 6to4 destination (2002:V4ADDR::/48, the default 6RD prefix
2002::/16 every sit device starts with) or a v4-compatible next hop
(``ip -6 route add 2001:db8:2::/64 via ::192.0.2.2 dev sit0``); anything else
is a ``tx_errors`` drop, as the kernel's "nexthop == NULL". The outer route
must be unicast and not through the tunnel itself; with DF (``pmtudisc``, the
default) the underlay's MTU less 20 bytes is the path MTU: the inner route
learns it (``update_pmtu``) and a larger IPv6 packet is answered with an
ICMPv6 Packet Too Big to its sender. TTL comes from the hop limit, TOS from
the traffic class with ``tos inherit``, ECN per RFC 6040. Decapsulated
packets go to the stack as ``ETH_P_IPV6``, where the IPv6 layer takes them.
ISATAP, the PRL and the 6RD ioctls are not emulated (``mode isatap`` answers
``Operation not supported``), and this module uses the shared ``ip_tunnel``
lookup where the kernel's sit.c keeps its own four tables.

Kernel: net/ipv6/sit.c.
"""

from __future__ import annotations

import errno
from functools import partial
from typing import TYPE_CHECKING, Any, Final

from netstack.core.dev import netif_rx
from netstack.core.ethernet import LL_RESERVED_SPACE
from netstack.core.features import (
    NETIF_F_FRAGLIST,
    NETIF_F_GSO_SOFTWARE,
    NETIF_F_HIGHDMA,
    NETIF_F_HW_CSUM,
    NETIF_F_LLTX,
    NETIF_F_SG,
    SKB_GSO_IPXIP4,
)
from netstack.core.inet_ecn import IP_ECN_decapsulate
from netstack.core.net_generic import NetKey
from netstack.core.netdevice import IFF_NO_QUEUE, IFF_NOARP, NETDEV_TX_OK, NetDevice
from netstack.core.rtnetlink import RtnlLinkOps, rtnl_link_register
from netstack.core.skbuff import DropReason, SkBuff, kfree_skb
from netstack.core.sock import AF_INET, AF_INET6
from netstack.errors import ConfigError
from netstack.ipv4 import ipv4_of
from netstack.ipv4.route import Flowi4, ip_rt_update_pmtu
from netstack.ipv6 import ipv6_of
from netstack.ipv6.route import Rt6Info, rt6_nexthop
from netstack.sites import TIMED, kernel, spend
from netstack.tunnels.ip_tunnel import (
    IPTUNNEL_ERR_TIMEO_S,
    IPV4_ADDRS,
    SIOCADDTUNNEL,
    SIOCCHGTUNNEL,
    IpTunnel,
    IpTunnelNet,
    IpTunnelOps,
    IpTunnelParm,
    ip_tunnel_changelink,
    ip_tunnel_create,
    ip_tunnel_ctl,
    ip_tunnel_dellink,
    ip_tunnel_ecn_encap,
    ip_tunnel_err_note,
    ip_tunnel_init,
    ip_tunnel_init_net,
    ip_tunnel_lookup,
    ip_tunnel_newlink,
    ip_tunnel_rcv,
    ip_tunnel_setup,
    ip_tunnel_xmit,
    iptunnel_handle_offloads,
    iptunnel_pull_header,
    iptunnel_xmit,
    pskb_inet_may_pull,
)
from netstack.tunnels.ipip import IPIP_TPI, IptunParms, ipip_netlink_parms
from netstack.tunnels.tunnel4 import XfrmTunnel, xfrm4_tunnel_register
from netstack.wire.arp import ARPHRD_SIT
from netstack.wire.ethernet import ETH_P_IP, ETH_P_IPV6
from netstack.wire.icmp import (
    ICMP_DEST_UNREACH,
    ICMP_EXC_TTL,
    ICMP_FRAG_NEEDED,
    ICMP_REDIRECT,
    ICMP_SR_FAILED,
    ICMP_TIME_EXCEEDED,
)
from netstack.wire.icmpv6 import ICMPV6_PKT_TOOBIG
from netstack.wire.ipv4 import IP_DF, IPPROTO_IPIP, IPPROTO_IPV6, IPV4_HLEN
from netstack.wire.ipv6 import IPV6_ADDR_COMPATv4, addr_at, ipv6_addr_type
from netstack.wire.rtnetlink import RTN_LOCAL, RTN_UNICAST

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = ["IPV6_MIN_MTU", "ipip6_tunnel_setup", "sit_init_net"]

IPV6_MIN_MTU: Final = 1280
IPV4_MIN_MTU: Final = 68
SIT_6RD_PREFIX: Final = 0x2002  # ipip6_tunnel_clone_6rd(): 2002::/16, relay prefix 0/0
IP6_MAX_MTU: Final = 65535 + 40
IPPROTO_MPLS: Final = 137
SIT_ISATAP: Final = 0x0001
_SIT_NET: NetKey[IpTunnelNet] = NetKey("sit")


def sit_itn_of(net: Net) -> IpTunnelNet:
    itn = _SIT_NET.find(net)
    assert itn is not None, "sit is not loaded"
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

# As IPIP's: checksums and software GSO are done after encapsulation.
SIT_FEATURES: Final = (
    NETIF_F_SG | NETIF_F_FRAGLIST | NETIF_F_HIGHDMA | NETIF_F_GSO_SOFTWARE | NETIF_F_HW_CSUM
)


@kernel("net/ipv6/sit.c", "ipip6_tunnel_setup")
def ipip6_tunnel_setup(dev: NetDevice, itn: IpTunnelNet, parms: IpTunnelParm | None = None) -> None:
    """Shape a SIT device; LLTX always.

    Twin: netstack.tunnels.ipip.ipip_tunnel_setup.
    Kernel: net/ipv6/sit.c, ipip6_tunnel_setup().
    """
    dev.type = ARPHRD_SIT
    dev.flags = IFF_NOARP
    dev.addr_len = 4
    dev.hard_header_len = 0
    dev.priv_flags |= IFF_NO_QUEUE
    dev.features |= NETIF_F_LLTX
    dev.features |= SIT_FEATURES
    dev.hw_features |= SIT_FEATURES
    ip_tunnel_setup(dev, itn, parms)


@kernel("net/ipv6/sit.c", "ipip6_tunnel_init")
def ipip6_tunnel_init(dev: NetDevice) -> None:
    """``ndo_init``.

    Twin: netstack.tunnels.ipip.ipip_tunnel_init.
    Kernel: net/ipv6/sit.c, ipip6_tunnel_init().
    """
    t: IpTunnel = dev.priv
    dev.dev_addr = t.parms.saddr.to_bytes(4, "big")
    dev.broadcast = t.parms.daddr.to_bytes(4, "big")
    t.tun_hlen = 0
    t.hlen = 0
    ip_tunnel_init(dev)


@kernel("ipip6_tunnel_setup", "ipip6_tunnel_bind_dev")
def _sit_bounds(dev: NetDevice) -> None:
    """MTU limits and the IPv6 minimum. Kernel: ipip6_tunnel_setup() / ipip6_tunnel_bind_dev()."""
    dev.min_mtu = IPV6_MIN_MTU
    dev.max_mtu = IP6_MAX_MTU - IPV4_HLEN
    dev.mtu = max(dev.mtu, IPV6_MIN_MTU)


@kernel("net/ipv6/sit.c", "sit_tunnel_xmit", "ipip6_tunnel_xmit")
def sit_tunnel_xmit(skb: SkBuff, dev: NetDevice) -> int:
    """``ndo_start_xmit``: IPv6 (ipip6_tunnel_xmit) or IPv4 (IPPROTO_IPIP) into IPv4.

    IPv4 goes out through :func:`sit_tunnel_xmit__` whatever the mode, as in
    Linux (the mode only filters what the tunnel receives).

    Kernel: net/ipv6/sit.c, sit_tunnel_xmit() → ipip6_tunnel_xmit().
    """
    if TIMED:
        spend("sit_tunnel_xmit")
    t: IpTunnel = dev.priv
    if not pskb_inet_may_pull(skb) or skb.protocol not in (ETH_P_IP, ETH_P_IPV6):
        dev.stats.tx_errors += 1
        kfree_skb(skb, DropReason.NOT_SPECIFIED)
        return NETDEV_TX_OK
    if skb.protocol == ETH_P_IP:
        return sit_tunnel_xmit__(skb, dev, IPPROTO_IPIP)
    if t.parms.protocol not in (IPPROTO_IPV6, 0):
        dev.stats.tx_errors += 1
        kfree_skb(skb, DropReason.NOT_SPECIFIED)
        return NETDEV_TX_OK
    ipip6_tunnel_xmit(skb, dev)
    return NETDEV_TX_OK


@kernel("net/ipv6/sit.c", "sit_tunnel_xmit__")
def sit_tunnel_xmit__(skb: SkBuff, dev: NetDevice, ipproto: int) -> int:
    """IPv4 (or MPLS) over the tunnel: the generic ip_tunnel_xmit() with its parameters.

    The same path as ipip_tunnel_xmit() in netstack.tunnels.ipip.

    Kernel: net/ipv6/sit.c, sit_tunnel_xmit__().
    """
    t: IpTunnel = dev.priv
    if not iptunnel_handle_offloads(skb, SKB_GSO_IPXIP4):
        dev.stats.tx_errors += 1
        kfree_skb(skb, DropReason.NOT_SPECIFIED)
        return NETDEV_TX_OK
    ip_tunnel_xmit(skb, dev, t.parms, ipproto)
    return NETDEV_TX_OK


@kernel("net/ipv6/sit.c", "try_6rd")
def try_6rd(daddr6: int) -> int:
    """The IPv4 address a 6to4 destination embeds (0 if it is not in 2002::/16).

    Kernel: net/ipv6/sit.c, try_6rd() with the default 6RD prefix 2002::/16.
    """
    if daddr6 >> 112 != SIT_6RD_PREFIX:
        return 0
    return (daddr6 >> 80) & 0xFFFFFFFF


def _tx_error(skb: SkBuff, dev: NetDevice, icmp: bool) -> None:
    if icmp and skb.dst is not None:
        skb.dst.link_failure(skb)  # tx_error_icmp: dst_link_failure()
    dev.stats.tx_errors += 1
    kfree_skb(skb, DropReason.NOT_SPECIFIED)


@kernel("net/ipv6/sit.c", "ipip6_tunnel_xmit")
def ipip6_tunnel_xmit(skb: SkBuff, dev: NetDevice) -> None:
    """Find the IPv4 destination, route it, check the path MTU, encapsulate.

    Twin: netstack.tunnels.ipip.IpipOps.ndo_start_xmit.
    Kernel: net/ipv6/sit.c, ipip6_tunnel_xmit().
    """
    t: IpTunnel = dev.priv
    tiph = t.parms
    net = dev.net
    buf = skb.buf
    nh = skb.network_header
    tos = tiph.tos
    if tos == 1:
        tos = ((buf[nh] & 0x0F) << 4) | (buf[nh + 1] >> 4)  # ipv6_get_dsfield()
    daddr6 = addr_at(buf, nh + 24)
    dst = tiph.daddr
    if not dst:
        dst = try_6rd(daddr6)
    if not dst:
        rt6 = skb.dst
        if not isinstance(rt6, Rt6Info):
            _tx_error(skb, dev, False)  # "nexthop == NULL"
            return
        nexthop = rt6_nexthop(rt6, daddr6) or daddr6
        if not ipv6_addr_type(nexthop) & IPV6_ADDR_COMPATv4:
            _tx_error(skb, dev, False)
            return
        dst = nexthop & 0xFFFFFFFF
    ipv4 = ipv4_of(net)
    # The outer route from the tunnel's dst_cache whatever the destination (6to4
    # included), as today's sit.c does; timed mode measures the 2014 kernels of
    # seed 4, which routed every packet.
    cached = t.dst_cache.get_ip4() if not TIMED else None
    if cached is not None:
        rt = cached
        saddr = t.dst_cache.saddr
    else:
        fl4 = Flowi4(dst, tiph.saddr, oif=tiph.link, tos=tos & 0x1E, proto=IPPROTO_IPV6)
        got = ipv4.ip_route_output_key(fl4)
        if isinstance(got, int):
            dev.stats.tx_carrier_errors += 1
            _tx_error(skb, dev, True)
            return
        rt = got
        saddr, dst = fl4.saddr, fl4.daddr
        if not TIMED:
            t.dst_cache.set_ip4(rt, saddr)
    if rt.rt_type not in (RTN_UNICAST, RTN_LOCAL):
        rt.release()
        dev.stats.tx_carrier_errors += 1
        _tx_error(skb, dev, True)
        return
    tdev = rt.dev
    if tdev is dev:
        rt.release()
        dev.stats.collisions += 1
        _tx_error(skb, dev, False)
        return
    if not iptunnel_handle_offloads(skb, SKB_GSO_IPXIP4):
        rt.release()
        _tx_error(skb, dev, False)
        return
    df = tiph.frag_off
    if df:
        mtu = rt.mtu() - (t.hlen + IPV4_HLEN)
        if mtu < IPV4_MIN_MTU:
            rt.release()
            dev.stats.collisions += 1
            _tx_error(skb, dev, False)
            return
        if mtu < IPV6_MIN_MTU:
            mtu = IPV6_MIN_MTU
            df = 0
        if tiph.daddr and skb.dst is not None:
            skb.dst.update_pmtu(skb, mtu)  # skb_dst_update_pmtu_no_confirm()
        if skb.tail - skb.data > mtu and not skb.gso_size:
            ipv6_of(net).icmpv6_send(skb, ICMPV6_PKT_TOOBIG, 0, mtu)  # icmpv6_ndo_send()
            rt.release()
            _tx_error(skb, dev, False)
            return
    if t.err_count > 0:
        jiffies = net.clock.jiffies
        if jiffies < t.err_time + IPTUNNEL_ERR_TIMEO_S * net.clock.hz:
            t.err_count -= 1
            if skb.dst is not None:
                skb.dst.link_failure(skb)
        else:
            t.err_count = 0
    assert tdev is not None
    max_headroom = LL_RESERVED_SPACE(tdev) + IPV4_HLEN + t.hlen
    if max_headroom > dev.needed_headroom:
        dev.needed_headroom = max_headroom
    if skb.data < dev.needed_headroom or skb.cloned:
        skb.cow_head(dev.needed_headroom)
    ttl = tiph.ttl or buf[nh + 7]
    tos = ip_tunnel_ecn_encap(tos, skb, skb.inner_network_header)
    iptunnel_xmit(ipv4, rt, skb, saddr, dst, IPPROTO_IPV6, tos, ttl, df, dev)


@kernel("net/ipv6/sit.c", "ipip6_rcv")
def ipip6_rcv(net: Net, skb: SkBuff) -> int:
    """Protocol 41 from the tunnel4 chain: 0 if taken, -1 if not ours.

    sit.c does its own decapsulation (not ``ip_tunnel_rcv``) and hands the
    inner IPv6 packet to ``netif_rx``, not to GRO cells (the 6rd/ISATAP spoof
    checks are not emulated).

    Twin: netstack.tunnels.ipip.ipip_tunnel_rcv_v4.
    Kernel: net/ipv6/sit.c, ipip6_rcv().
    """
    if TIMED:
        spend("ipip6_rcv")
    itn = sit_itn_of(net)
    buf = skb.buf
    nh = skb.network_header
    saddr, daddr = IPV4_ADDRS.unpack_from(buf, nh + 12)
    dev = skb.dev
    t = ip_tunnel_lookup(itn, dev.ifindex if dev else 0, 0, saddr, daddr, 0, no_key=True)
    if t is None:
        return -1
    if not iptunnel_pull_header(skb, 0, ETH_P_IPV6, False):
        kfree_skb(skb, DropReason.PKT_TOO_SMALL)
        return 0
    tdev = t.dev
    stats = tdev.stats
    skb.mac_header = skb.network_header = skb.data
    skb.dev = tdev
    if not pskb_inet_may_pull(skb):
        stats.rx_length_errors += 1
        stats.rx_errors += 1
        kfree_skb(skb, DropReason.PKT_TOO_SMALL)
        return 0
    err = IP_ECN_decapsulate(buf[nh + 1], skb)
    if err > 1:
        stats.rx_frame_errors += 1
        stats.rx_errors += 1
        kfree_skb(skb, DropReason.IP_TUNNEL_ECN)
        return 0
    stats.rx_packets += 1
    stats.rx_bytes += skb.tail - skb.data
    # Unlike ip_tunnel_rcv(), SIT has no gro_cells: the inner packet goes to
    # the backlog, where nothing merges it (inner TCP sees every segment).
    netif_rx(skb)
    return 0


@kernel("net/ipv6/sit.c", "sit_tunnel_rcv", "ipip_rcv")
def sit_tunnel_rcv(net: Net, skb: SkBuff, ipproto: int) -> int:
    """IPv4 in IPv4 (protocol 4) for a sit tunnel: ``mode ipip`` or ``mode any`` takes it.

    0 if consumed, 1 if no sit tunnel matches (the next tunnel4 handler tries).

    The same steps as ipip_tunnel_rcv() (written in ipip_tunnel_rcv_v4, netstack.tunnels.ipip).

    Kernel: net/ipv6/sit.c, sit_tunnel_rcv() (ipip_rcv(): ``ipproto`` IPPROTO_IPIP).
    """
    itn = sit_itn_of(net)
    buf = skb.buf
    nh = skb.network_header
    saddr, daddr = IPV4_ADDRS.unpack_from(buf, nh + 12)
    dev = skb.dev
    t = ip_tunnel_lookup(itn, dev.ifindex if dev else 0, 0, saddr, daddr, 0, no_key=True)
    if t is None:
        return 1
    if t.parms.protocol != ipproto and t.parms.protocol != 0:
        kfree_skb(skb, DropReason.NOT_SPECIFIED)
        return 0
    if not iptunnel_pull_header(skb, 0, ETH_P_IP, False):
        kfree_skb(skb, DropReason.PKT_TOO_SMALL)
        return 0
    skb.mac_header = skb.data
    ip_tunnel_rcv(t, skb, IPIP_TPI, nh)  # ipip_tpi
    return 0


@kernel("net/ipv6/sit.c", "ipip6_err", "ip6_err_gen_icmpv6_unreach")
def ipip6_err(net: Net, skb: SkBuff, info: int) -> int:
    """An ICMP error quotes a 6in4 packet we sent: learn the underlay's MTU, back off.

    Twin: netstack.tunnels.ipip.ipip_err.
    Kernel: net/ipv6/sit.c, ipip6_err() (without ip6_err_gen_icmpv6_unreach(): the
    inner sender is not told of underlay unreachables, only through dst_link_failure).
    """
    itn = sit_itn_of(net)
    buf = skb.buf
    iph = skb.data
    saddr = int.from_bytes(buf[iph + 12 : iph + 16], "big")
    daddr = int.from_bytes(buf[iph + 16 : iph + 20], "big")
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
    dev = skb.dev
    t = ip_tunnel_lookup(itn, dev.ifindex if dev else 0, 0, daddr, saddr, 0, no_key=True)
    if t is None:
        return -errno.ENOENT
    if icmp_type == ICMP_DEST_UNREACH and code == ICMP_FRAG_NEEDED:
        ipv4 = ipv4_of(net)
        rt = ipv4.ip_route_output_key(Flowi4(daddr, saddr, oif=t.parms.link, proto=IPPROTO_IPV6))
        if not isinstance(rt, int):
            ip_rt_update_pmtu(ipv4, rt, daddr, info, saddr, t.parms.link)  # ipv4_update_pmtu()
            rt.release()
        return 0
    if icmp_type == ICMP_REDIRECT:
        return 0
    if t.parms.daddr == 0:
        return 0
    if t.parms.ttl == 0 and icmp_type == ICMP_TIME_EXCEEDED:
        return 0
    ip_tunnel_err_note(t)
    return 0


@kernel("net/ipv6/sit.c", "ipip6_netlink_parms")
def _sit_netlink_parms(data: IptunParms | None) -> IpTunnelParm:
    """The same IFLA_IPTUN_* parsing as IPIP's, protocol IPPROTO_IPV6 by default.

    Kernel: net/ipv6/sit.c, ipip6_netlink_parms().
    """
    return ipip_netlink_parms(data, IPPROTO_IPV6)


@kernel("ipip6_valid_ip_proto")
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


@kernel("net/ipv6/sit.c", "ipip6_tunnel_ctl")
def ipip6_tunnel_ctl(dev: NetDevice, p: IpTunnelParm, cmd: int) -> IpTunnelParm | None:
    """SIOC*TUNNEL on a SIT device.

    Twin: netstack.tunnels.ipip.ipip_tunnel_ctl.
    Kernel: net/ipv6/sit.c, ipip6_tunnel_ctl().
    """
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


@kernel("net/ipv6/sit.c", "sit_init", "sit_init_net")
def sit_init_net(net: Net) -> None:
    """Load ``sit`` on *net*: table, link kind, tunnel4 handler for 41, ``sit0``.

    Twin: netstack.tunnels.ipip.ipip_init_net.
    Kernel: net/ipv6/sit.c, sit_init() + sit_init_net() (+ ipip6_fb_tunnel_init).
    """
    itn = IpTunnelNet(net, "sit", ARPHRD_SIT, ipip6_tunnel_ctl)
    _SIT_NET.set(net, itn)
    xfrm4_tunnel_register(
        net, XfrmTunnel(partial(ipip6_rcv, net), partial(ipip6_err, net), priority=1), AF_INET6
    )
    # sit's ipip_handler: IPv4 in IPv4 for ``mode ipip`` / ``mode any`` tunnels (after ipip's)
    xfrm4_tunnel_register(
        net,
        XfrmTunnel(partial(sit_tunnel_rcv, net, ipproto=IPPROTO_IPIP), priority=2),
        AF_INET,
    )
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
