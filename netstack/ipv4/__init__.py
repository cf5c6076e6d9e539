"""IPv4: addresses, FIB and routes, input, output, forwarding, fragments, ICMP, ARP, UDP, ping.

:class:`netstack.ipv4.netns.Ipv4` is the per-Net state (``net.ipv4``),
:func:`netstack.ipv4.af_inet.inet_init` registers the family on a Net and
``netstack.ipv4.sysctl_net_ipv4`` holds the ``net.ipv4.*`` sysctl tables.
Each module opens with the call graph it implements.
"""

from netstack.ipv4.af_inet import inet_init, ipv4_of
from netstack.ipv4.netns import Ipv4

__all__ = ["Ipv4", "inet_init", "ipv4_of"]
