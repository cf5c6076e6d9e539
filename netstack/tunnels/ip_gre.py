"""GRE and gretap over IPv4: the ``ip_gre`` module.

Theory of operation — two ways to make a tunnel, each its own code path, as
in the kernel the seeds talk about:

* ``ip link add NAME type gre|gretap …`` (rtnetlink): ``rtnl_newlink`` →
  :func:`ipgre_tunnel_validate` / :func:`ipgre_tap_validate` → alloc with
  :func:`ipgre_tunnel_setup` / :func:`ipgre_tap_setup` →
  :func:`ipgre_newlink`, which reads the IFLA_GRE_* attributes, refuses a
  duplicate, sizes the device (``ip_tunnel_bind_dev``), **decides LLTX** and
  registers it.
* ``ip tunnel add NAME mode gre …`` (ioctl ``SIOCADDTUNNEL`` on ``gre0``):
  :func:`ipgre_tunnel_ctl` checks the ``ip_tunnel_parm`` and calls the
  shared ``ip_tunnel_ctl``, whose create step is :func:`ipgre_tunnel_locate`:
  alloc with ``ipgre_tunnel_setup``, bind, register — and, with seed 3's fix,
  **decide LLTX** the same way afterwards.

LLTX (``NETIF_F_LLTX``: ``dev_queue_xmit`` skips ``HARD_TX_LOCK``) is set "unless
we generate output sequences" (``oseq``), and only where the patches put it:
``Patches.gre_lltx`` (seed 1, 2010) in ``ipgre_newlink``;
``Patches.gre_lltx_ioctl`` (seed 3, 2012) also in ``ipgre_tunnel_locate`` — a
fix of the 2010 change, so it has no effect without it. Later kernels moved
the decision into ``ndo_init`` (3.10) and made it unconditional (2022).

Loading the module (``modprobe ip_gre``, or ``request_module`` for
``rtnl-link-gre``, ``rtnl-link-gretap``, ``netdev-gre0``, ``netdev-gretap0``)
creates the fallback devices ``gre0`` and ``gretap0`` and registers GRE
version 0 with the ``gre`` demultiplexer.

Transmit: ``ipgre_xmit`` / ``gre_tap_xmit`` push the GRE header (sequence
number, key, checksum over header and payload) and call ``ip_tunnel_xmit``.
Receive: ``gre_rcv`` parses the header, ``ipgre_rcv`` looks the tunnel up in
the GRE or the gretap table (by protocol: ``ETH_P_TEB`` is gretap), pulls
the header and calls ``ip_tunnel_rcv``; no tunnel → ICMP port unreachable.

Kernel: net/ipv4/ip_gre.c (3.3–3.9 for the two creation paths, 3.10+ for
the rest).
"""

from __future__ import annotations

import errno
from functools import partial
from types import MethodType
from typing import TYPE_CHECKING, Any, Final

import attrs

from netstack.core.dev import register_netdevice
from netstack.core.ethernet import ether_setup
from netstack.core.features import (
    NETIF_F_FRAGLIST,
    NETIF_F_GSO_SOFTWARE,
    NETIF_F_HIGHDMA,
    NETIF_F_HW_CSUM,
    NETIF_F_LLTX,
    NETIF_F_SG,
    SKB_GSO_GRE,
    SKB_GSO_GRE_CSUM,
)
from netstack.core.net_generic import NetKey
from netstack.core.netdevice import (
    IFF_LIVE_ADDR_CHANGE,
    IFF_NO_QUEUE,
    IFF_NOARP,
    IFF_POINTOPOINT,
    IFF_TX_SKB_SHARING,
    NET_ADDR_RANDOM,
    NET_ADDR_SET,
    NETDEV_TX_OK,
    NetDevice,
)
from netstack.core.rtnetlink import RtnlLinkOps, rtnl_link_register
from netstack.core.skbuff import CHECKSUM_PARTIAL, DropReason, SkBuff, kfree_skb
from netstack.drivers.common import eth_random_addr
from netstack.errors import ConfigError
from netstack.ipv4 import ipv4_of
from netstack.ipv4.route import Flowi4, ip_rt_update_pmtu
from netstack.sites import TIMED, kernel, spend
from netstack.tunnels.gre_demux import GreProtocol, gre_add_protocol, gre_parse_header
from netstack.tunnels.ip_tunnel import (
    IPV4_ADDRS_UNPACK,
    SIOCADDTUNNEL,
    SIOCCHGTUNNEL,
    IpTunnel,
    IpTunnelNet,
    IpTunnelOps,
    IpTunnelParm,
    TnlPtkInfo,
    ip_tunnel_add,
    ip_tunnel_bind_dev,
    ip_tunnel_ctl,
    ip_tunnel_dellink,
    ip_tunnel_err_note,
    ip_tunnel_find,
    ip_tunnel_init,
    ip_tunnel_lookup,
    ip_tunnel_rcv,
    ip_tunnel_set_mtu_bounds,
    ip_tunnel_setup,
    ip_tunnel_update,
    ip_tunnel_xmit,
    iptunnel_handle_offloads,
    iptunnel_pull_header,
)
from netstack.tunnels.udp_tunnel import lco_csum
from netstack.wire.arp import ARPHRD_ETHER, ARPHRD_IPGRE
from netstack.wire.checksum import csum_fold
from netstack.wire.ethernet import ETH_P_IP, ETH_P_IPV6, ETH_P_TEB
from netstack.wire.gre import (
    GRE_CSUM,
    GRE_HDR,
    GRE_KEY,
    GRE_ROUTING,
    GRE_SEQ,
    GRE_VERSION,
    gre_calc_hlen,
)
from netstack.wire.gre import pack_into as gre_pack_into
from netstack.wire.icmp import (
    ICMP_DEST_UNREACH,
    ICMP_EXC_TTL,
    ICMP_FRAG_NEEDED,
    ICMP_PORT_UNREACH,
    ICMP_REDIRECT,
    ICMP_SR_FAILED,
    ICMP_TIME_EXCEEDED,
)
from netstack.wire.ipv4 import IP_DF, IPPROTO_GRE, IPV4_HLEN, ipv4_is_multicast
from netstack.wire.ipv6 import IPV6_HLEN

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = [
    "GreParms",
    "IpGreNet",
    "ipgre_init_net",
    "ipgre_newlink",
    "ipgre_tunnel_locate",
    "ipgre_tunnel_setup",
]

_IPGRE_NET: NetKey[IpGreNet] = NetKey("ip_gre")


@attrs.define
class GreParms:
    """``IFLA_INFO_DATA`` of a gre/gretap link (the IFLA_GRE_* attributes iproute2 sends).

    ``None`` means the attribute is absent.
    """

    link: int | None = None
    iflags: int | None = None
    oflags: int | None = None
    ikey: int | None = None
    okey: int | None = None
    local: int | None = None
    remote: int | None = None
    ttl: int | None = None
    tos: int | None = None
    pmtudisc: int | None = None
    ignore_df: int | None = None


class IpGreNet:
    """The module's per-Net state: the gre and gretap tunnel tables."""

    def __init__(self, ipgre: IpTunnelNet, tap: IpTunnelNet) -> None:
        self.ipgre = ipgre
        self.tap = tap
        # gre_rcv's struct tnl_ptk_info, a stack variable in the kernel: one
        # scratch per Net (receive never re-enters: the tunnel queues the inner
        # packet on its GRO cell)
        self.rx_tpi = TnlPtkInfo()


def ipgre_net_of(net: Net) -> IpGreNet:
    ign = _IPGRE_NET.find(net)
    assert ign is not None, "ip_gre is not loaded"
    return ign


# ---------------------------------------------------------------------------
# Devices
# ---------------------------------------------------------------------------


class IpGreOps(IpTunnelOps):
    """Kernel: ipgre_netdev_ops."""

    def ndo_init(self, dev: NetDevice) -> None:
        ipgre_tunnel_init(dev)

    @kernel("net/ipv4/ip_gre.c", "ipgre_xmit")
    def ndo_start_xmit(self, skb: SkBuff, dev: NetDevice) -> int:
        """``ndo_start_xmit`` of gre. Kernel: net/ipv4/ip_gre.c, ipgre_xmit()."""
        if TIMED:
            spend("ipgre_xmit")
        return _gre_xmit(skb, dev, skb.protocol)


class GreTapOps(IpTunnelOps):
    """Kernel: gre_tap_netdev_ops."""

    def ndo_init(self, dev: NetDevice) -> None:
        gre_tap_init(dev)

    @kernel("net/ipv4/ip_gre.c", "gre_tap_xmit")
    def ndo_start_xmit(self, skb: SkBuff, dev: NetDevice) -> int:
        """``ndo_start_xmit`` of gretap. Kernel: net/ipv4/ip_gre.c, gre_tap_xmit()."""
        if TIMED:
            spend("gre_tap_xmit")
        return _gre_xmit(skb, dev, ETH_P_TEB)

    def ndo_set_mac_address(self, dev: NetDevice, addr: bytes) -> None:
        dev.dev_addr = addr  # eth_mac_addr()

    def ndo_do_ioctl(self, dev: NetDevice, cmd: int, arg: Any) -> Any:
        """gre_tap_netdev_ops has no ``ndo_siocdevprivate``: gretap is netlink-only."""
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")


# What a GRE device can take from the stack above it (3.8+): a checksum left
# to do (CHECKSUM_PARTIAL) and scatter-gather data
GRE_FEATURES: Final = NETIF_F_SG | NETIF_F_FRAGLIST | NETIF_F_HIGHDMA | NETIF_F_HW_CSUM
# the option-less header, bound once (no method lookup by name in compiled code)
_GRE_HDR_PACK: Final = GRE_HDR.pack_into

IPGRE_OPS: Final = IpGreOps()
GRE_TAP_OPS: Final = GreTapOps()


@kernel("__gre_tunnel_init")
def _gre_calc(t: IpTunnel) -> None:
    """Header lengths from the output flags. Kernel: __gre_tunnel_init() (tun_hlen, hlen)."""
    t.tun_hlen = gre_calc_hlen(t.parms.o_flags)
    t.hlen = t.tun_hlen


@kernel("net/ipv4/ip_gre.c", "ipgre_tunnel_setup")
def ipgre_tunnel_setup(dev: NetDevice, itn: IpTunnelNet, parms: IpTunnelParm | None = None) -> None:
    """Shape a GRE device. Kernel: net/ipv4/ip_gre.c, ipgre_tunnel_setup()."""
    dev.type = ARPHRD_IPGRE
    dev.flags = IFF_NOARP
    dev.addr_len = 4
    dev.hard_header_len = 0
    dev.priv_flags |= IFF_NO_QUEUE
    ip_tunnel_setup(dev, itn, parms)


@kernel("ipgre_tap_setup")
def ipgre_tap_setup(dev: NetDevice, itn: IpTunnelNet, parms: IpTunnelParm | None = None) -> None:
    """Shape a gretap (Ethernet over GRE) device. Kernel: ipgre_tap_setup()."""
    ether_setup(dev)
    dev.max_mtu = 0
    dev.priv_flags &= ~IFF_TX_SKB_SHARING
    dev.priv_flags |= IFF_LIVE_ADDR_CHANGE
    ip_tunnel_setup(dev, itn, parms)


@kernel("net/ipv4/ip_gre.c", "__gre_tunnel_init")
def _gre_features(dev: NetDevice, t: IpTunnel) -> None:
    """What a GRE device takes from the stack above: ``GRE_FEATURES`` (3.8+).

    A checksum left to do (CHECKSUM_PARTIAL) passes through the tunnel to the
    device below, which fills it in or leaves it (veth: the receiver takes it
    as verified); without output sequencing, GSO skbs too (cut after
    encapsulation, ``SKB_GSO_GRE``). LLTX stays the seeds' decision
    (``ipgre_newlink`` / ``ipgre_tunnel_locate``).

    Kernel: net/ipv4/ip_gre.c, __gre_tunnel_init().
    """
    dev.features |= GRE_FEATURES
    dev.hw_features |= GRE_FEATURES
    # "TCP offload with GRE SEQ is not supported"
    if not t.parms.o_flags & GRE_SEQ:
        dev.features |= NETIF_F_GSO_SOFTWARE
        dev.hw_features |= NETIF_F_GSO_SOFTWARE


@kernel("net/ipv4/ip_gre.c", "ipgre_tunnel_init", "__gre_tunnel_init")
def ipgre_tunnel_init(dev: NetDevice) -> None:
    """``ndo_init`` of GRE: header length, features, addresses, flags.

    Kernel: net/ipv4/ip_gre.c, ipgre_tunnel_init() / __gre_tunnel_init().
    """
    t: IpTunnel = dev.priv
    _gre_calc(t)
    _gre_features(dev, t)
    t.parms.protocol = IPPROTO_GRE
    dev.dev_addr = t.parms.saddr.to_bytes(4, "big")
    dev.broadcast = t.parms.daddr.to_bytes(4, "big")
    dev.flags |= IFF_NOARP
    ip_tunnel_init(dev)


@kernel("gre_tap_init")
def gre_tap_init(dev: NetDevice) -> None:
    """``ndo_init`` of gretap. Kernel: gre_tap_init()."""
    t: IpTunnel = dev.priv
    _gre_calc(t)
    _gre_features(dev, t)
    t.parms.protocol = IPPROTO_GRE
    dev.priv_flags |= IFF_LIVE_ADDR_CHANGE
    ip_tunnel_init(dev)


def _gre_lltx(net: Net, t: IpTunnel) -> bool:
    """The 2010 check: "Can use a lockless transmit, unless we generate output sequences"."""
    return not t.parms.o_flags & GRE_SEQ


# ---------------------------------------------------------------------------
# rtnetlink path: ip link add … type gre|gretap
# ---------------------------------------------------------------------------


@kernel("net/ipv4/ip_gre.c", "ipgre_netlink_parms")
def ipgre_netlink_parms(data: GreParms | None) -> IpTunnelParm:
    """IFLA_GRE_* → parameters. Kernel: net/ipv4/ip_gre.c, ipgre_netlink_parms()."""
    p = IpTunnelParm(protocol=IPPROTO_GRE)
    if data is None:
        p.frag_off = IP_DF
        return p
    if data.link is not None:
        p.link = data.link
    if data.iflags is not None:
        p.i_flags = data.iflags
    if data.oflags is not None:
        p.o_flags = data.oflags
    if data.ikey is not None:
        p.i_key = data.ikey
    if data.okey is not None:
        p.o_key = data.okey
    if data.local is not None:
        p.saddr = data.local
    if data.remote is not None:
        p.daddr = data.remote
    if data.ttl is not None:
        p.ttl = data.ttl
    if data.tos is not None:
        p.tos = data.tos
    if data.pmtudisc is None or data.pmtudisc:
        if data.ignore_df:
            raise ConfigError("RTNETLINK answers: Invalid argument", errno.EINVAL)
        p.frag_off = IP_DF
    return p


@kernel("net/ipv4/ip_gre.c", "ipgre_tunnel_validate")
def ipgre_tunnel_validate(data: GreParms | None) -> None:
    """Kernel: net/ipv4/ip_gre.c, ipgre_tunnel_validate()."""
    if data is None:
        return
    flags = (data.iflags or 0) | (data.oflags or 0)
    if flags & (GRE_VERSION | GRE_ROUTING):
        raise ConfigError("RTNETLINK answers: Invalid argument", errno.EINVAL)


@kernel("net/ipv4/ip_gre.c", "ipgre_tap_validate")
def ipgre_tap_validate(data: GreParms | None, address: bytes | None) -> None:
    """Kernel: net/ipv4/ip_gre.c, ipgre_tap_validate()."""
    if address is not None:
        if len(address) != 6:
            raise ConfigError("RTNETLINK answers: Invalid argument", errno.EINVAL)
        if address[0] & 1 or address == bytes(6):
            raise ConfigError(
                "RTNETLINK answers: Cannot assign requested address", errno.EADDRNOTAVAIL
            )
    if data is not None and data.remote is not None and not data.remote:
        raise ConfigError("RTNETLINK answers: Invalid argument", errno.EINVAL)
    ipgre_tunnel_validate(data)


@kernel("net/ipv4/ip_gre.c", "ipgre_newlink")
def ipgre_newlink(dev: NetDevice, data: GreParms | None, tb: dict[str, Any]) -> None:
    """Configure and register a new gre/gretap device.

    Kernel: net/ipv4/ip_gre.c, ipgre_newlink() (3.3–3.9, with seed 1).
    """
    net = dev.net
    t: IpTunnel = dev.priv
    itn = t.itn
    t.parms = ipgre_netlink_parms(data)
    t.ignore_df = bool(data is not None and data.ignore_df)
    if ip_tunnel_find(itn, t.parms, dev.type) is not None:
        raise ConfigError("RTNETLINK answers: File exists", errno.EEXIST)
    if dev.type == ARPHRD_ETHER and tb.get("address") is None:
        dev.dev_addr = eth_random_addr(net.rng)
        dev.addr_assign_type = NET_ADDR_RANDOM
    _gre_calc(t)
    mtu = ip_tunnel_bind_dev(dev)
    ip_tunnel_set_mtu_bounds(dev)
    if tb.get("mtu") is None:
        dev.mtu = mtu
    else:
        dev.mtu = max(68, min(int(tb["mtu"]), dev.max_mtu))  # clamp(), as ip_tunnel_newlink
    # "Can use a lockless transmit, unless we generate output sequences" (seed 1)
    if net.patches.gre_lltx and _gre_lltx(net, t):
        dev.features |= NETIF_F_LLTX
    register_netdevice(dev)
    ip_tunnel_add(itn, t)


def _gre_link_newlink(
    tap: bool, net: Net, name: str | None, data: GreParms | None, tb: dict[str, Any]
) -> NetDevice:
    """rtnl_newlink's create step for kind gre/gretap: validate, alloc+setup, newlink."""
    ign = ipgre_net_of(net)
    address = tb.get("address")
    if tap:
        ipgre_tap_validate(data, address)
    else:
        ipgre_tunnel_validate(data)
    kind = "gretap" if tap else "gre"
    itn = ign.tap if tap else ign.ipgre
    dev = NetDevice(net, name or f"{kind}%d", GRE_TAP_OPS if tap else IPGRE_OPS, kind=kind)
    if tap:
        ipgre_tap_setup(dev, itn)
        if address is not None:
            dev.dev_addr = bytes(address)
            dev.addr_assign_type = NET_ADDR_SET
    else:
        ipgre_tunnel_setup(dev, itn)
    ipgre_newlink(dev, data, tb)
    return dev


@kernel("net/ipv4/ip_gre.c", "ipgre_link_update")
def ipgre_link_update(dev: NetDevice, set_mtu: bool) -> None:
    """New output flags in place: the header may have grown or shrunk.

    ``tun_hlen``/``hlen`` follow ``o_flags`` (4 bytes each for CSUM, KEY,
    SEQ); the difference goes to ``needed_headroom`` (netstack's GRE devices
    have no ``header_ops``: no ``CONFIG_NET_IPGRE_BROADCAST`` NBMA mode) and,
    with *set_mtu*, comes off the MTU (not below 68; ``max_mtu`` stays as the
    device was made). Output sequencing takes the GSO types away ("TCP offload
    with GRE SEQ is not supported"), and clearing it gives them back; GRE has
    no FOU/GUE encapsulation here, so the kernel's "CSUM with an encap" clause
    never applies.

    Kernel: net/ipv4/ip_gre.c, ipgre_link_update().
    """
    t: IpTunnel = dev.priv
    old_len = t.tun_hlen
    _gre_calc(t)
    delta = t.tun_hlen - old_len
    dev.needed_headroom += delta
    if set_mtu:
        dev.mtu = max(dev.mtu - delta, 68)
    if t.parms.o_flags & GRE_SEQ:
        dev.features &= ~NETIF_F_GSO_SOFTWARE
        dev.hw_features &= ~NETIF_F_GSO_SOFTWARE
    else:
        dev.features |= NETIF_F_GSO_SOFTWARE
        dev.hw_features |= NETIF_F_GSO_SOFTWARE


@kernel("ipgre_changelink", "ip_tunnel_changelink")
def ipgre_changelink(dev: NetDevice, data: GreParms | None, tb: dict[str, Any]) -> None:
    """``ip link set DEV type gre …``.

    Kernel: ipgre_changelink() → ip_tunnel_changelink().
    """
    t: IpTunnel = dev.priv
    itn = t.itn
    if dev is itn.fb_tunnel_dev:
        raise ConfigError("RTNETLINK answers: Invalid argument", errno.EINVAL)
    if dev.type == ARPHRD_ETHER:
        ipgre_tap_validate(data, None)
    else:
        ipgre_tunnel_validate(data)
    p = ipgre_netlink_parms(data)
    found = ip_tunnel_find(itn, p, dev.type)
    if found is not None and found is not t:
        raise ConfigError("RTNETLINK answers: File exists", errno.EEXIST)
    if found is None and dev.type != ARPHRD_ETHER:
        nflags = IFF_POINTOPOINT if p.daddr and not ipv4_is_multicast(p.daddr) else 0
        if (dev.flags ^ nflags) & IFF_POINTOPOINT:
            raise ConfigError("RTNETLINK answers: Invalid argument", errno.EINVAL)
    set_mtu = tb.get("mtu") is None
    ip_tunnel_update(itn, t, dev, p, set_mtu)
    t.parms.i_flags = p.i_flags
    t.parms.o_flags = p.o_flags
    ipgre_link_update(dev, set_mtu)


# ---------------------------------------------------------------------------
# ioctl path: ip tunnel add … mode gre
# ---------------------------------------------------------------------------


@kernel("net/ipv4/ip_gre.c", "ipgre_tunnel_locate", "ip_tunnel_create")
def ipgre_tunnel_locate(itn: IpTunnelNet, parms: IpTunnelParm) -> IpTunnel:
    """Create a GRE tunnel for SIOCADDTUNNEL.

    Raises ``OSError`` as the ioctl fails (a name in use: EEXIST, a bad one: EINVAL).

    Kernel: net/ipv4/ip_gre.c, ipgre_tunnel_locate() (3.3–3.9, with seed 3);
    ip_tunnel_create() in 3.10+.
    """
    net = itn.net
    found = ip_tunnel_find(itn, parms, ARPHRD_IPGRE)
    if found is not None:
        return found
    name = parms.name or "gre%d"
    dev = NetDevice(net, name, IPGRE_OPS, kind="gre")
    ipgre_tunnel_setup(dev, itn, parms.copy())
    t: IpTunnel = dev.priv
    _gre_calc(t)
    dev.mtu = ip_tunnel_bind_dev(dev)
    ip_tunnel_set_mtu_bounds(dev)
    try:
        register_netdevice(dev)
    except ConfigError as e:
        raise OSError(e.errno or errno.EINVAL, errno.errorcode.get(e.errno or 22, "")) from None
    # seed 3: "replicates the condition check in ipgre_newlink to ipgre_tunnel_locate"
    if net.patches.gre_lltx and net.patches.gre_lltx_ioctl and _gre_lltx(net, t):
        dev.features |= NETIF_F_LLTX
    ip_tunnel_add(itn, t)
    return t


@kernel("net/ipv4/ip_gre.c", "ipgre_tunnel_ctl")
def ipgre_tunnel_ctl(dev: NetDevice, p: IpTunnelParm, cmd: int) -> IpTunnelParm | None:
    """SIOC*TUNNEL on a GRE device. Kernel: net/ipv4/ip_gre.c, ipgre_tunnel_ctl()."""
    t: IpTunnel = dev.priv
    itn = t.itn
    if cmd in (SIOCADDTUNNEL, SIOCCHGTUNNEL) and (
        p.version != 4
        or p.protocol != IPPROTO_GRE
        or p.ihl != 5
        or p.frag_off & ~IP_DF
        or (p.i_flags | p.o_flags) & (GRE_VERSION | GRE_ROUTING)
    ):
        raise OSError(errno.EINVAL, "Invalid argument")

    def create(parms: IpTunnelParm) -> IpTunnel:
        return ipgre_tunnel_locate(itn, parms)

    out = ip_tunnel_ctl(itn, dev, p, cmd, create)
    if cmd == SIOCCHGTUNNEL:
        # ip_tunnel_update() leaves the flags alone: the device the ioctl was
        # issued on takes the new ones (as the kernel, even when that is the
        # fallback gre0 and the change went to the tunnel it found)
        t.parms.i_flags = p.i_flags
        t.parms.o_flags = p.o_flags
        ipgre_link_update(dev, True)
        if out is not None:
            out.i_flags, out.o_flags = p.i_flags, p.o_flags
    return out


# ---------------------------------------------------------------------------
# Transmit
# ---------------------------------------------------------------------------


@kernel(
    "ipgre_xmit",
    "gre_tap_xmit",
    "__gre_xmit",
    "pskb_inet_may_pull",
    "include/net/gre.h",
    "gre_build_header",
)
def _gre_xmit(skb: SkBuff, dev: NetDevice, proto: int) -> int:
    """Push the GRE header and send: the common part of ``ipgre_xmit`` and ``gre_tap_xmit``.

    ``gre_build_header`` (a static inline of gre.h) is written in. The GRE
    checksum is never summed over the payload there (4.6+, local checksum
    offload): if the inner checksum is still to be done (CHECKSUM_PARTIAL),
    the GRE checksum is what the header adds to it (``lco_csum``: the inner
    checksum, once filled in, makes the rest sum to its pseudo-header);
    otherwise the GRE checksum itself is left to the device below
    (CHECKSUM_PARTIAL from the GRE header, the field at offset 4), which
    ``skb_checksum_help`` fills in if that device cannot. A GSO skb's
    checksums are each segment's (``gre_gso_segment``).

    Kernel: ipgre_xmit() / gre_tap_xmit() → __gre_xmit(); pskb_inet_may_pull();
    include/net/gre.h, gre_build_header().
    """
    if TIMED:
        spend("ipgre_xmit")
    t: IpTunnel = dev.priv
    # pskb_inet_may_pull(), inline (the length by protocol in line, as ip_tunnel_rcv's;
    # keep in step with ip_tunnel.py's INET_HLEN and pskb_inet_may_pull)
    protocol = skb.protocol
    if (
        skb.network_header
        + (IPV4_HLEN if protocol == ETH_P_IP else IPV6_HLEN if protocol == ETH_P_IPV6 else 0)
        > skb.tail
    ):
        dev.stats.tx_dropped += 1
        kfree_skb(skb, DropReason.PKT_TOO_SMALL)
        return NETDEV_TX_OK
    headroom = dev.needed_headroom
    ref = skb._dataref  # skb_cloned(), inline
    if skb.data < headroom or (ref is not None and ref[0] > 1):
        skb.cow_head(headroom)  # skb_cow_head()
    gso_type = SKB_GSO_GRE_CSUM if t.parms.o_flags & GRE_CSUM else SKB_GSO_GRE
    iptunnel_handle_offloads(skb, gso_type)  # gre_handle_offloads(); never fails here
    # gre_build_header(), written out
    if TIMED:
        spend("gre_build_header")
    p = t.parms
    flags = p.o_flags & (GRE_CSUM | GRE_KEY | GRE_SEQ)
    seq = 0
    if flags & GRE_SEQ:
        t.o_seqno = (t.o_seqno + 1) & 0xFFFFFFFF
        seq = t.o_seqno
    off = skb.push(t.tun_hlen)
    skb.transport_header = off
    buf = skb.buf
    if flags:
        gre_pack_into(buf, off, flags, proto, p.o_key, seq)
    else:  # no options to fill in: the base header alone
        _GRE_HDR_PACK(buf, off, 0, proto)
    if flags & GRE_CSUM and not skb.gso_type & (SKB_GSO_GRE | SKB_GSO_GRE_CSUM):
        buf[off + 4] = buf[off + 5] = 0
        if skb.ip_summed == CHECKSUM_PARTIAL:
            c = csum_fold(lco_csum(skb))
            buf[off + 4] = c >> 8
            buf[off + 5] = c & 0xFF
        else:
            skb.ip_summed = CHECKSUM_PARTIAL
            skb.csum_start = off
            skb.csum_offset = 4
    ip_tunnel_xmit(skb, dev, p, p.protocol or IPPROTO_GRE)
    return NETDEV_TX_OK


# ---------------------------------------------------------------------------
# Receive
# ---------------------------------------------------------------------------


@kernel("net/ipv4/ip_gre.c", "gre_rcv", "ipgre_rcv", "__ipgre_rcv")
def ipgre_rcv_v0(ign: IpGreNet, skb: SkBuff) -> int:
    """GRE version 0 received.

    *ign* is the module's per-Net state, bound when the handler is registered
    (the kernel's per-Net lookup is an array index; a bound method, one call,
    where a ``partial`` is two). ``__ipgre_rcv`` (static in ip_gre.c; find
    the tunnel and hand over) is written in.

    Kernel: net/ipv4/ip_gre.c, gre_rcv() / ipgre_rcv() / __ipgre_rcv().
    """
    if TIMED:
        spend("gre_rcv")
    tpi = ign.rx_tpi
    tpi.csum_err = False  # what gre_parse_header leaves alone without a checksum
    hdr_len = gre_parse_header(skb, tpi)
    if hdr_len < 0:
        kfree_skb(skb, DropReason.GRE_INVALID)
        return 0
    itn = ign.tap if tpi.proto == ETH_P_TEB else ign.ipgre
    # __ipgre_rcv(), written out
    if TIMED:
        spend("__ipgre_rcv")
    buf = skb.buf
    nh = skb.network_header
    saddr, daddr = IPV4_ADDRS_UNPACK(buf, nh + 12)
    dev = skb.dev
    assert dev is not None
    t = ip_tunnel_lookup(itn, dev.ifindex, tpi.flags, saddr, daddr, tpi.key)
    if t is not None:
        if not iptunnel_pull_header(skb, hdr_len, tpi.proto, False):
            t.dev.stats.rx_length_errors += 1
            t.dev.stats.rx_errors += 1
            kfree_skb(skb, DropReason.PKT_TOO_SMALL)
            return 0
        skb.mac_header = skb.data  # skb_reset_mac_header()
        ip_tunnel_rcv(t, skb, tpi, nh)
        return 0
    if not tpi.csum_err:
        ipv4_of(ign.ipgre.net).icmp_send(skb, ICMP_DEST_UNREACH, ICMP_PORT_UNREACH, 0)
    kfree_skb(skb, DropReason.IP_TUNNEL_NO_MATCH)
    return 0


@kernel("net/ipv4/ip_gre.c", "gre_err", "ipgre_err")
def ipgre_err(net: Net, skb: SkBuff, info: int) -> None:
    """An ICMP error quotes a GRE packet we sent: learn the PMTU or back off.

    Kernel: net/ipv4/ip_gre.c, gre_err() + ipgre_err().
    """
    buf = skb.buf
    iph = skb.data  # the quoted outer IPv4 header
    ihl = (buf[iph] & 0xF) * 4
    tpi = TnlPtkInfo()
    if gre_parse_header(skb, tpi, ihl, verify_csum=False) < 0:
        return
    th = skb.transport_header
    icmp_type, code = buf[th], buf[th + 1]
    saddr = int.from_bytes(buf[iph + 12 : iph + 16], "big")
    daddr = int.from_bytes(buf[iph + 16 : iph + 20], "big")
    ipv4 = ipv4_of(net)
    if icmp_type == ICMP_DEST_UNREACH and code == ICMP_FRAG_NEEDED:
        rt = ipv4.ip_route_output_key(Flowi4(daddr, saddr, proto=IPPROTO_GRE))
        if not isinstance(rt, int):
            ip_rt_update_pmtu(ipv4, rt, daddr, info, saddr)  # ipv4_update_pmtu()
            rt.release()
        return
    if icmp_type == ICMP_REDIRECT:
        return  # ipv4_redirect(): handled by the ICMP layer's route exceptions
    if icmp_type == ICMP_DEST_UNREACH:
        if code in (ICMP_SR_FAILED, ICMP_PORT_UNREACH):
            return  # "Impossible event."
    elif icmp_type != ICMP_TIME_EXCEEDED or code != ICMP_EXC_TTL:
        return
    ign = ipgre_net_of(net)
    itn = ign.tap if tpi.proto == ETH_P_TEB else ign.ipgre
    dev = skb.dev
    t = ip_tunnel_lookup(itn, dev.ifindex if dev else 0, tpi.flags, daddr, saddr, tpi.key)
    if t is None:
        return
    if t.parms.daddr == 0 or ipv4_is_multicast(t.parms.daddr):
        return
    if t.parms.ttl == 0 and icmp_type == ICMP_TIME_EXCEEDED:
        return
    ip_tunnel_err_note(t)


# ---------------------------------------------------------------------------
# Module
# ---------------------------------------------------------------------------


@kernel("ip_tunnel_init_net", "__ip_tunnel_create")
def _fb_tunnel(net: Net, itn: IpTunnelNet, name: str, tap: bool) -> NetDevice:
    """Create a fallback device. Kernel: ip_tunnel_init_net() → __ip_tunnel_create()."""
    parms = IpTunnelParm(name=name)
    dev = NetDevice(net, name, GRE_TAP_OPS if tap else IPGRE_OPS, kind="gretap" if tap else "gre")
    if tap:
        ipgre_tap_setup(dev, itn, parms)
        dev.dev_addr = eth_random_addr(net.rng)
        dev.addr_assign_type = NET_ADDR_RANDOM
    else:
        ipgre_tunnel_setup(dev, itn, parms)
    t: IpTunnel = dev.priv
    _gre_calc(t)
    dev.mtu = ip_tunnel_bind_dev(dev)
    ip_tunnel_set_mtu_bounds(dev)
    register_netdevice(dev)
    itn.fb_tunnel_dev = dev
    ip_tunnel_add(itn, t)
    return dev


@kernel("net/ipv4/ip_gre.c", "ipgre_init", "ipgre_init_net", "ipgre_tap_init_net")
def ipgre_init_net(net: Net) -> None:
    """Load ``ip_gre`` on *net*: tables, link kinds, GRE v0, fallback devices.

    Kernel: net/ipv4/ip_gre.c, ipgre_init() + ipgre_init_net() + ipgre_tap_init_net().
    """
    ipgre_itn = IpTunnelNet(net, "gre", ARPHRD_IPGRE, ipgre_tunnel_ctl)
    tap_itn = IpTunnelNet(net, "gretap", ARPHRD_ETHER, ipgre_tunnel_ctl)
    ign = _IPGRE_NET.set(net, IpGreNet(ipgre_itn, tap_itn))
    gre_add_protocol(net, GreProtocol(MethodType(ipgre_rcv_v0, ign), partial(ipgre_err, net)), 0)
    rtnl_link_register(
        net,
        RtnlLinkOps(
            "gre",
            partial(_gre_link_newlink, False),
            changelink=ipgre_changelink,
            dellink=ip_tunnel_dellink,
            get_info=lambda dev: dev.priv,
        ),
    )
    rtnl_link_register(
        net,
        RtnlLinkOps(
            "gretap",
            partial(_gre_link_newlink, True),
            changelink=ipgre_changelink,
            dellink=ip_tunnel_dellink,
            get_info=lambda dev: dev.priv,
        ),
    )
    _fb_tunnel(net, ipgre_itn, "gre0", False)
    _fb_tunnel(net, tap_itn, "gretap0", True)
