"""UDP (RFC 768). Kernel: include/uapi/linux/udp.h."""

from __future__ import annotations

import struct
from typing import Final, NamedTuple

UDP_HLEN: Final = 8
UDP_HDR: Final = struct.Struct("!HHHH")


class UdpHdr(NamedTuple):
    """``struct udphdr``: source, dest, len, check."""

    source: int
    dest: int
    len: int
    check: int


def parse(buf: bytes | bytearray | memoryview, off: int = 0) -> UdpHdr:
    """Parse the 8-byte header at *off*."""
    return UdpHdr._make(UDP_HDR.unpack_from(buf, off))


def pack_into(buf: bytearray, off: int, hdr: UdpHdr) -> None:
    """Write *hdr* at *off*."""
    UDP_HDR.pack_into(buf, off, *hdr)


def pack(hdr: UdpHdr) -> bytes:
    """Return *hdr* as bytes."""
    return UDP_HDR.pack(*hdr)
