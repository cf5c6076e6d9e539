"""IPv4: addresses, FIB and routes, input, output, forwarding, fragments, ICMP, ARP, UDP, ping.

:class:`netstack.ipv4.protocol.Ipv4` is the per-Net state (``net.ipv4``) and
:func:`inet_init` registers the family on a Net. Each module opens with the
call graph it implements.
"""

from netstack.ipv4.protocol import Ipv4, inet_init, ipv4_of

__all__ = ["Ipv4", "inet_init", "ipv4_of"]
