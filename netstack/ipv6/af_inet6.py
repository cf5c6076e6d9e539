"""``inet6_init``: install the IPv6 family on a Net.

Theory of operation: :func:`inet6_init` builds one
:class:`~netstack.ipv6.netns.Ipv6` for a Net (``net.ipv6``) and registers it
downward, as the kernel's ``inet6_init`` does: ``ipv6_rcv`` as the packet
type of 0x86DD, the extension headers, ICMPv6, UDP and TCP in
``inet6_protos`` (the handlers bound to the family's state: MethodType, a
64-byte object where a partial takes 190), the
offloads, ``nd_tbl`` as the Net's neighbour table of AF_INET6,
``addrconf_notify`` on the netdevice chain (every device gets its
``inet6_dev``, link-local address and routes), and the ``net.ipv6.*``
sysctls (registered when first used).

Kernel: net/ipv6/af_inet6.c (inet6_init).
"""

from __future__ import annotations

from functools import partial
from types import MethodType
from typing import TYPE_CHECKING

from netstack.core.dev import NETDEV_REGISTER, NETDEV_UP
from netstack.core.net import PacketType
from netstack.core.sock import AF_INET6
from netstack.ipv6 import icmp as _icmp
from netstack.ipv6 import ip6_input as _in
from netstack.ipv6 import udp as _udp
from netstack.ipv6.netns import Inet6Protocol, Ipv6
from netstack.ipv6.reassembly import ipv6_frag_rcv
from netstack.ipv6.sysctl_net_ipv6 import addrconf_sysctl_register_conf, ipv6_sysctl_net_init
from netstack.neigh.neighbour import neigh_sysctl_register, neigh_table_init
from netstack.sites import kernel
from netstack.wire.ethernet import ETH_P_IPV6
from netstack.wire.ipv6 import (
    IPPROTO_ICMPV6,
    IPPROTO_UDP,
    NEXTHDR_DEST,
    NEXTHDR_FRAGMENT,
    NEXTHDR_NONE,
    NEXTHDR_ROUTING,
    NEXTHDR_TCP,
)

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = ["inet6_init", "ipv6_of"]


@kernel("net/ipv6/af_inet6.c", "inet6_init")
def inet6_init(net: Net) -> Ipv6:
    """Install IPv6 on *net*.

    Kernel: net/ipv6/af_inet6.c, inet6_init().
    """
    if net.ipv6 is not None:
        raise RuntimeError(f"IPv6 already initialised on {net.name}")
    ipv6 = Ipv6(net)
    net.ipv6 = ipv6
    neigh_table_init(net, AF_INET6, ipv6.nd_tbl)
    s, p = net.sysctl, "net.ipv6"  # registered when first used (register_lazy)
    s.register_lazy(f"{p}.", ipv6_sysctl_net_init, ipv6)
    s.register_lazy(
        f"{p}.conf.all.",
        addrconf_sysctl_register_conf,
        ipv6,
        f"{p}.conf.all",
        ipv6.devconf_all,
        None,
    )
    s.register_lazy(
        f"{p}.conf.default.",
        addrconf_sysctl_register_conf,
        ipv6,
        f"{p}.conf.default",
        ipv6.devconf_dflt,
        None,
    )
    s.register_lazy(f"{p}.neigh.default.", neigh_sysctl_register, ipv6.nd_tbl, None)
    protos = ipv6.inet6_protos
    final = _in.INET6_PROTO_FINAL
    protos[IPPROTO_ICMPV6] = Inet6Protocol(
        MethodType(_icmp.icmpv6_rcv, ipv6), MethodType(_icmp.icmpv6_err, ipv6), final | 1
    )
    protos[IPPROTO_UDP] = Inet6Protocol(
        MethodType(_udp.udpv6_rcv, ipv6), MethodType(_udp.udpv6_err, ipv6), final | 1
    )
    from netstack.ipv6.offload import ipv6_offload_init
    from netstack.ipv6.tcp_ipv6 import tcp_v6_err, tcp_v6_init, tcp_v6_rcv

    ipv6_offload_init(ipv6)
    tcp = tcp_v6_init(ipv6)
    protos[NEXTHDR_TCP] = Inet6Protocol(
        partial(tcp_v6_rcv, ipv6, tcp), partial(tcp_v6_err, ipv6, tcp), final | 1
    )
    protos[NEXTHDR_ROUTING] = Inet6Protocol(MethodType(_in.ipv6_rthdr_rcv, ipv6), None, 1)
    protos[NEXTHDR_DEST] = Inet6Protocol(MethodType(_in.ipv6_destopt_rcv, ipv6), None, 1)
    protos[NEXTHDR_FRAGMENT] = Inet6Protocol(MethodType(ipv6_frag_rcv, ipv6), None, 1)
    protos[NEXTHDR_NONE] = Inet6Protocol(MethodType(_in.nodata_rcv, ipv6), None, 1)
    net.dev_add_pack(PacketType(ETH_P_IPV6, MethodType(_in.ipv6_rcv, ipv6), name="ipv6_rcv"))
    net.register_netdevice_notifier(ipv6.netdev_event)
    for dev in list(net.devices.values()):  # devices that exist already
        ipv6.netdev_event(NETDEV_REGISTER, dev)
        if dev.flags & 1:
            ipv6.netdev_event(NETDEV_UP, dev)
    ipv6.addrconf.addrconf_verify()
    return ipv6


def ipv6_of(net: Net) -> Ipv6:
    """The Net's IPv6 state (raises if IPv6 is not installed)."""
    ipv6 = net.ipv6
    if not isinstance(ipv6, Ipv6):
        raise RuntimeError(f"IPv6 is not installed on {net.name}")
    return ipv6
