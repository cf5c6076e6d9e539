"""tcpdump's packet printer: one line per frame, from the bytes alone.

Theory of operation: :class:`Printer` (tcpdump's ``netdissect_options``, in
:mod:`.netdissect`) turns a captured frame into the line ``tcpdump -nn``
prints for it. The printers are one module per tcpdump ``print-*.c`` file,
each registered in :mod:`.netdissect`'s tables by link type, ethertype, IP
protocol or port, exactly where tcpdump's switch statements dispatch:

================  ==========================================================
module            protocols
================  ==========================================================
``print_ether``   Ethernet, 802.1Q, 802.3/LLC/SNAP, STP, Linux cooked v1/v2,
                  raw IP, ARP/RARP
``print_ip``      IPv4 (options), IPv6 (hop-by-hop, destination options,
                  routing ``RT6``, fragment, mobility)
``print_icmp``    ICMP
``print_icmp6``   ICMPv6, neighbour discovery, MLD v1/v2
``print_udp``     UDP, TCP
``print_gre``     GRE v0, PPTP's GRE v1, PPP
``print_domain``  DNS over UDP and TCP
``print_vxlan``   VXLAN
``print_pim``     PIM v1/v2
================  ==========================================================

It reads headers with ``struct`` straight from the bytes (dpkt is not needed
and would hide truncation): a header cut short by the snap length prints
tcpdump's ``[|proto]`` marker instead of raising, and any byte string — even a
fuzzed one — gives a line. The option flags are tcpdump's: ``-v`` (IP header
fields, checksums, ND options), ``-e`` (link-level header), ``-q`` (less
protocol detail), ``-t…``/``-ttttt`` (timestamp styles), ``-x``/``-xx``/``-X``
(hex dumps). Addresses and ports are always printed as numbers (``-nn``).

tcpdump: print.c, util-print.c and the print-*.c files named per module.
"""

from __future__ import annotations

# the printer modules register themselves into netdissect's tables on import
from netstack.userspace.tcpdump import (  # noqa: F401
    print_domain,
    print_ether,
    print_gre,
    print_icmp,
    print_icmp6,
    print_ip,
    print_pim,
    print_udp,
    print_vxlan,
)
from netstack.userspace.tcpdump.netdissect import Printer, format_timestamp, hex_dump

__all__ = ["Printer", "format_timestamp", "hex_dump"]
