"""IPv6: addrconf (addresses, DAD, SLAAC), neighbour discovery, fib6 routes, input,
output, forwarding, fragments and reassembly, ICMPv6, UDP, ping and raw sockets.

:class:`netstack.ipv6.netns.Ipv6` is the per-Net state (``net.ipv6``),
:func:`netstack.ipv6.af_inet6.inet6_init` registers the family on a Net and
``netstack.ipv6.sysctl_net_ipv6`` holds the ``net.ipv6.*`` sysctl tables.
Each module opens with the call graph it implements.
"""

from netstack.ipv6.af_inet6 import inet6_init, ipv6_of
from netstack.ipv6.netns import Ipv6

__all__ = ["Ipv6", "inet6_init", "ipv6_of"]
