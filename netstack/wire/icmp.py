"""ICMP for IPv4 (RFC 792, RFC 1191 for the frag-needed MTU field).

Kernel: include/uapi/linux/icmp.h.
"""

from __future__ import annotations

import struct
from typing import Final, NamedTuple

from netstack.sites import kernel

ICMP_HLEN: Final = 8

ICMP_ECHOREPLY: Final = 0
ICMP_DEST_UNREACH: Final = 3
ICMP_SOURCE_QUENCH: Final = 4
ICMP_REDIRECT: Final = 5
ICMP_ECHO: Final = 8
ICMP_TIME_EXCEEDED: Final = 11
ICMP_PARAMETERPROB: Final = 12
ICMP_TIMESTAMP: Final = 13
ICMP_TIMESTAMPREPLY: Final = 14
ICMP_INFO_REQUEST: Final = 15
ICMP_INFO_REPLY: Final = 16
ICMP_ADDRESS: Final = 17
ICMP_ADDRESSREPLY: Final = 18
NR_ICMP_TYPES: Final = 18

# Codes for ICMP_DEST_UNREACH.
ICMP_NET_UNREACH: Final = 0
ICMP_HOST_UNREACH: Final = 1
ICMP_PROT_UNREACH: Final = 2
ICMP_PORT_UNREACH: Final = 3
ICMP_FRAG_NEEDED: Final = 4
ICMP_SR_FAILED: Final = 5
ICMP_NET_UNKNOWN: Final = 6
ICMP_HOST_UNKNOWN: Final = 7
ICMP_HOST_ISOLATED: Final = 8
ICMP_NET_ANO: Final = 9
ICMP_HOST_ANO: Final = 10
ICMP_NET_UNR_TOS: Final = 11
ICMP_HOST_UNR_TOS: Final = 12
ICMP_PKT_FILTERED: Final = 13
ICMP_PREC_VIOLATION: Final = 14
ICMP_PREC_CUTOFF: Final = 15
NR_ICMP_UNREACH: Final = 15

# Codes for ICMP_REDIRECT.
ICMP_REDIR_NET: Final = 0
ICMP_REDIR_HOST: Final = 1

# Codes for ICMP_TIME_EXCEEDED.
ICMP_EXC_TTL: Final = 0
ICMP_EXC_FRAGTIME: Final = 1

ICMP_HDR: Final = struct.Struct("!BBHHH")
"""``struct icmphdr``: type, code, checksum, then un.echo.id/sequence (or
un.frag.__unused/mtu, or un.gateway's two halves)."""

ICMP_ERROR_TYPES: Final = frozenset(
    {ICMP_DEST_UNREACH, ICMP_SOURCE_QUENCH, ICMP_REDIRECT, ICMP_TIME_EXCEEDED, ICMP_PARAMETERPROB}
)
"""Types that report an error about another datagram (never answered with an error)."""


class IcmpHdr(NamedTuple):
    """``struct icmphdr`` with the echo view of the 4-byte ``un`` field."""

    type: int
    code: int
    checksum: int
    id: int
    sequence: int


def parse(buf: bytes | bytearray | memoryview, off: int = 0) -> IcmpHdr:
    """Parse the 8-byte header at *off*."""
    return IcmpHdr._make(ICMP_HDR.unpack_from(buf, off))


def pack_into(buf: bytearray, off: int, hdr: IcmpHdr) -> None:
    """Write *hdr* at *off* (the checksum field as given)."""
    ICMP_HDR.pack_into(buf, off, *hdr)


@kernel("include/linux/icmp.h", "icmp_is_err")
def icmp_is_err(icmp_type: int) -> bool:
    """True for the error types. Kernel: include/linux/icmp.h, icmp_is_err()."""
    return icmp_type in ICMP_ERROR_TYPES


def pack(hdr: IcmpHdr) -> bytes:
    """Return *hdr* as bytes."""
    return ICMP_HDR.pack(*hdr)
