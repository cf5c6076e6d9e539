"""VXLAN (RFC 7348) on UDP port 4789: the header, then the inner Ethernet frame on its own line.

tcpdump: print-vxlan.c, vxlan_print().
"""

from __future__ import annotations

from netstack.userspace.tcpdump.netdissect import IPInfo, Printer, udp_port
from netstack.userspace.tcpdump.print_ether import ether_print

__all__ = ["vxlan_print"]


@udp_port(4789)
def vxlan_print(nd: Printer, bp: bytes, length: int, _ip: IPInfo) -> None:
    """``VXLAN, flags [I] (0x08), vni 42`` and the frame it carries.

    tcpdump: print-vxlan.c, vxlan_print().
    """
    nd.protocol = "vxlan"
    nd.w("VXLAN")
    if length < 8:
        nd.w(" (invalid)")
        return
    nd.need(bp, 8, local=True)
    flags = bp[0]
    vni = int.from_bytes(bp[4:7], "big")
    nd.w(f", flags [{'I' if flags & 0x08 else 'invalid'}] (0x{flags:02x}), vni {vni}\n")
    ether_print(nd, bp[8:], length - 8)
