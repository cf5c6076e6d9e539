"""ARP (RFC 826) for Ethernet/IPv4, and the ARPHRD_* device types.

Kernel: include/uapi/linux/if_arp.h, net/ipv4/arp.c.
"""

from __future__ import annotations

import struct
from typing import Final, NamedTuple

# Device hardware types (dev->type), as ``ip -d link`` shows them.
ARPHRD_NETROM: Final = 0
ARPHRD_ETHER: Final = 1
ARPHRD_TUNNEL: Final = 768
ARPHRD_TUNNEL6: Final = 769
ARPHRD_LOOPBACK: Final = 772
ARPHRD_SIT: Final = 776
ARPHRD_IPGRE: Final = 778
ARPHRD_NONE: Final = 0xFFFE
ARPHRD_VOID: Final = 0xFFFF

ARPOP_REQUEST: Final = 1
ARPOP_REPLY: Final = 2
ARPOP_RREQUEST: Final = 3
ARPOP_RREPLY: Final = 4
ARPOP_INREQUEST: Final = 8
ARPOP_INREPLY: Final = 9
ARPOP_NAK: Final = 10

ARP_HDR: Final = struct.Struct("!HHBBH")
"""``struct arphdr``: ar_hrd, ar_pro, ar_hln, ar_pln, ar_op (8 bytes)."""
ARP_HDR_LEN: Final = 8

ARP_ETH_IP: Final = struct.Struct("!HHBBH6sI6sI")
"""The whole Ethernet/IPv4 ARP packet: header + sha, sip, tha, tip (28 bytes)."""
ARP_ETH_IP_LEN: Final = 28


class ArpPacket(NamedTuple):
    """An Ethernet/IPv4 ARP packet; addresses as bytes (MAC) and int (IPv4)."""

    ar_hrd: int
    ar_pro: int
    ar_hln: int
    ar_pln: int
    ar_op: int
    ar_sha: bytes
    ar_sip: int
    ar_tha: bytes
    ar_tip: int


def parse(buf: bytes | bytearray | memoryview, off: int = 0) -> ArpPacket:
    """Parse a 28-byte Ethernet/IPv4 ARP packet at *off* (caller checks length)."""
    return ArpPacket._make(ARP_ETH_IP.unpack_from(buf, off))


def pack_into(buf: bytearray, off: int, pkt: ArpPacket) -> None:
    """Write *pkt* at *off*."""
    ARP_ETH_IP.pack_into(buf, off, *pkt)


def pack(pkt: ArpPacket) -> bytes:
    """Return *pkt* as bytes."""
    return ARP_ETH_IP.pack(*pkt)
