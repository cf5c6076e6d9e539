"""netperf: ``netperf`` (TCP_STREAM, TCP_RR, UDP_STREAM) and ``netserver`` between hosts.

Kernel/userland: netperf (https://github.com/HewlettPackard/netperf).
"""

from netstack.userspace.netperf.netperf import NetperfResult, netperf, netserver

__all__ = ["NetperfResult", "netperf", "netserver"]
