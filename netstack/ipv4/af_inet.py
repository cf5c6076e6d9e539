"""``inet_init``: install the IPv4 family on a Net.

Theory of operation: :func:`inet_init` builds one
:class:`~netstack.ipv4.netns.Ipv4` for a Net (``net.ipv4``) and registers it
downward, as the kernel's ``inet_init`` does: ``ip_rcv`` and ``arp_rcv`` as
packet types, ICMP, UDP and TCP in ``inet_protos`` (the handlers are
partials over the family's state: the trampolines), the GRO/GSO offloads, a
netdevice notifier that gives every device its ``in_device`` and keeps the
FIB and the ARP table in step with device events, and the ``net.ipv4.*``
sysctls (registered when first used).

Kernel: net/ipv4/af_inet.c (inet_init).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from netstack.core.dev import NETDEV_REGISTER, NETDEV_UP
from netstack.core.sock import AF_INET
from netstack.ipv4.netns import InetProtocol, Ipv4
from netstack.ipv4.sysctl_net_ipv4 import devinet_sysctl_register, ipv4_sysctl_init_net
from netstack.neigh.neighbour import neigh_sysctl_register, neigh_table_init
from netstack.sites import kernel
from netstack.wire.ipv4 import IPPROTO_ICMP, IPPROTO_TCP, IPPROTO_UDP

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = ["inet_init", "ipv4_of"]


@kernel("net/ipv4/af_inet.c", "inet_init")
def inet_init(net: Net) -> Ipv4:
    """Install IPv4 on *net*. Kernel: net/ipv4/af_inet.c, inet_init()."""
    if net.ipv4 is not None:
        raise RuntimeError(f"IPv4 already initialised on {net.name}")
    ipv4 = Ipv4(net)
    net.ipv4 = ipv4
    neigh_table_init(net, AF_INET, ipv4.arp_tbl)
    ipv4.inet_protos[IPPROTO_ICMP] = ipv4.icmp_protocol
    ipv4.inet_protos[IPPROTO_UDP] = ipv4.udp_protocol
    net.dev_add_pack(ipv4.ip_packet_type)
    net.dev_add_pack(ipv4.arp_packet_type)
    net.register_netdevice_notifier(ipv4.netdev_event)
    from netstack.ipv4.offload import ipv4_offload_init
    from netstack.ipv4.tcp_ipv4 import tcp_v4_err, tcp_v4_init, tcp_v4_rcv

    ipv4_offload_init(ipv4)
    tcp = tcp_v4_init(ipv4)
    ipv4.inet_protos[IPPROTO_TCP] = InetProtocol(
        partial(tcp_v4_rcv, ipv4, tcp), partial(tcp_v4_err, ipv4, tcp)
    )
    for dev in list(net.devices.values()):  # devices that exist already
        ipv4.netdev_event(NETDEV_REGISTER, dev)
        if dev.flags & 1:
            ipv4.netdev_event(NETDEV_UP, dev)
    s, c, n = net.sysctl, "net.ipv4.conf", "net.ipv4.neigh"  # registered when first used
    s.register_lazy("net.ipv4.", ipv4_sysctl_init_net, ipv4)
    s.register_lazy(
        f"{c}.all.", devinet_sysctl_register, ipv4, f"{c}.all", ipv4.devconf_all, None, is_all=True
    )
    s.register_lazy(
        f"{c}.default.", devinet_sysctl_register, ipv4, f"{c}.default", ipv4.devconf_dflt, None
    )
    s.register_lazy(f"{n}.default.", neigh_sysctl_register, ipv4.arp_tbl, None)
    return ipv4


def ipv4_of(net: Net) -> Ipv4:
    """The Net's IPv4 state (raises if IPv4 is not installed)."""
    ipv4 = net.ipv4
    if not isinstance(ipv4, Ipv4):
        raise RuntimeError(f"IPv4 is not installed on {net.name}")
    return ipv4
