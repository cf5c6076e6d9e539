"""IPv4 tunnels: the ``ip_tunnel`` core, GRE and gretap (``ip_gre``), IPIP, SIT, VXLAN devices.

Theory of operation: nothing here is loaded when a host boots. The host
registers the modules it could load (:func:`register_tunnel_modules`, the
``modules.alias`` table); the first ``ip link add … type gre`` or ``ip
tunnel add … mode gre`` asks for ``rtnl-link-gre`` / ``netdev-gre0`` and the
module's per-Net init runs: the ``gre`` demultiplexer takes IP protocol 47,
``ip_gre`` registers the ``gre`` and ``gretap`` link kinds and creates
``gre0`` and ``gretap0``; ``ipip`` (over ``tunnel4``, which takes protocols 4
and 41) registers ``ipip`` and creates ``tunl0``; ``sit`` registers ``sit``
and creates ``sit0`` (its IPv6 data path comes with the IPv6 stack); ``vxlan``
registers ``vxlan`` (its UDP socket opens with the first device brought up).

See docs/tunnels.md. Kernel: net/ipv4/ip_tunnel.c, ip_gre.c, ipip.c,
gre_demux.c, tunnel4.c.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from netstack.core.rtnetlink import KernelModule, register_module
from netstack.gro.eth import eth_offload_init
from netstack.tunnels.gre_demux import gre_init
from netstack.tunnels.ip_gre import ipgre_init_net
from netstack.tunnels.ipip import ipip_init_net
from netstack.tunnels.offload import gre_offload_init, ipip_offload_init, sit_offload_init
from netstack.tunnels.sit import sit_init_net
from netstack.tunnels.tunnel4 import tunnel4_init
from netstack.tunnels.vxlan import VXLAN_MODULE

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = ["TUNNEL_MODULES", "register_tunnel_modules"]

TUNNEL_MODULES = (
    KernelModule("gre", ("net-pf-2-proto-47",), gre_init),
    KernelModule(
        "ip_gre",
        ("rtnl-link-gre", "rtnl-link-gretap", "netdev-gre0", "netdev-gretap0"),
        ipgre_init_net,
        depends=("gre",),
    ),
    KernelModule("tunnel4", (), tunnel4_init),
    KernelModule("ipip", ("rtnl-link-ipip", "netdev-tunl0"), ipip_init_net, depends=("tunnel4",)),
    KernelModule("sit", ("rtnl-link-sit", "netdev-sit0"), sit_init_net, depends=("tunnel4",)),
    VXLAN_MODULE,
)


def register_tunnel_modules(net: Net) -> None:
    """Make the tunnel modules loadable on *net* (``depmod``); none is loaded.

    The IP-in-IP, 6in4 and GRE offloads are built in (the kernel registers
    them at boot: ``ipv4_offload_init``, ``ipv6_offload_init``,
    ``gre_offload_init``), so they are registered here at once, with the
    offload for Ethernet inside GRE (gretap; ``eth_offload_init``).
    """
    for module in TUNNEL_MODULES:
        register_module(net, module)
    if net.ipv4 is not None:
        ipip_offload_init(net)
        gre_offload_init(net)
        eth_offload_init(net)
        if net.ipv6 is not None:
            sit_offload_init(net)
