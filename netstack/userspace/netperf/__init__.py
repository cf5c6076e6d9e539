"""Tools that drive whole hosts: ``netperf``-like benchmarks.

Kernel/userland: netperf (https://github.com/HewlettPackard/netperf).
"""

from netstack.tools.netperf import NetperfResult, netperf

__all__ = ["NetperfResult", "netperf"]
