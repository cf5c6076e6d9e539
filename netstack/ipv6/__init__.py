"""IPv6: addrconf (addresses, DAD, SLAAC), neighbour discovery, fib6 routes, input,
output, forwarding, fragments and reassembly, ICMPv6, UDP, ping and raw sockets.

:class:`netstack.ipv6.protocol.Ipv6` is the per-Net state (``net.ipv6``) and
:func:`inet6_init` registers the family on a Net. Each module opens with the
call graph it implements.
"""

from netstack.ipv6.protocol import Ipv6, inet6_init, ipv6_of

__all__ = ["Ipv6", "inet6_init", "ipv6_of"]
