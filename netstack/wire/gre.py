"""GRE (RFC 2784, with RFC 2890 key and sequence number; RFC 1701 flag bits).

Theory of operation: a GRE header is a 16-bit flags/version word and a
16-bit protocol type (an EtherType), followed by optional 32-bit words in a
fixed order — checksum + reserved (C bit), key (K bit), sequence number (S
bit) — so its length is 4, 8, 12 or 16 bytes (:func:`gre_calc_hlen`). The
checksum is the Internet checksum over the GRE header (checksum field zero)
and the whole payload (:func:`gre_checksum`).

Flag values are those of ``include/uapi/linux/if_tunnel.h`` in host order of
the big-endian word: the same numbers the ioctl ``ip_tunnel_parm.i_flags`` /
``o_flags`` and ``IFLA_GRE_IFLAGS`` / ``IFLA_GRE_OFLAGS`` carry.

Kernel: include/uapi/linux/if_tunnel.h, include/net/gre.h (gre_calc_hlen,
gre_build_header), net/ipv4/gre_demux.c (gre_parse_header).
"""

from __future__ import annotations

import struct
from typing import Final, NamedTuple

from netstack.sites import TIMED, kernel, spend
from netstack.wire.checksum import csum_fold, csum_partial
from netstack.wire.ethernet import ETH_P_TEB

__all__ = [
    "ETH_P_TEB",
    "ETH_P_WCCP",
    "GRE_ACK",
    "GRE_CSUM",
    "GRE_FLAGS",
    "GRE_HDR",
    "GRE_KEY",
    "GRE_REC",
    "GRE_ROUTING",
    "GRE_SEQ",
    "GRE_STRICT",
    "GRE_VERSION",
    "GreHdr",
    "gre_calc_hlen",
    "gre_checksum",
    "pack",
    "parse",
]

GRE_CSUM: Final = 0x8000
GRE_ROUTING: Final = 0x4000
GRE_KEY: Final = 0x2000
GRE_SEQ: Final = 0x1000
GRE_STRICT: Final = 0x0800
GRE_REC: Final = 0x0700
GRE_ACK: Final = 0x0080
GRE_FLAGS: Final = 0x0078
GRE_VERSION: Final = 0x0007

GRE_HLEN: Final = 4
GRE_HDR: Final = struct.Struct("!HH")  # flags+version, protocol
_I: Final = struct.Struct("!I")
_HH: Final = struct.Struct("!HH")

ETH_P_WCCP: Final = 0x883E


class GreHdr(NamedTuple):
    """A parsed GRE header (the options present are those the flags name)."""

    flags: int  # the whole 16-bit flags/version word
    protocol: int
    csum: int | None = None  # the checksum field, as read
    key: int | None = None
    seq: int | None = None

    @property
    def hlen(self) -> int:
        return gre_calc_hlen(self.flags)


@kernel("include/net/gre.h", "gre_calc_hlen")
def gre_calc_hlen(flags: int) -> int:
    """Header length for a flags word: 4, plus 4 for each of C, K, S.

    Kernel: include/net/gre.h, gre_calc_hlen().
    """
    return (
        4
        + (4 if flags & GRE_CSUM else 0)
        + (4 if flags & GRE_KEY else 0)
        + (4 if flags & GRE_SEQ else 0)
    )


def parse(buf: bytes | bytearray | memoryview, off: int = 0, end: int | None = None) -> GreHdr:
    """Parse the GRE header at *off* (``ValueError`` if *buf* is too short for it)."""
    if end is None:
        end = len(buf)
    if off + GRE_HLEN > end:
        raise ValueError("truncated GRE header")
    flags, proto = GRE_HDR.unpack_from(buf, off)
    hlen = gre_calc_hlen(flags)
    if off + hlen > end:
        raise ValueError("truncated GRE options")
    p = off + 4
    csum = key = seq = None
    if flags & GRE_CSUM:
        csum = (buf[p] << 8) | buf[p + 1]
        p += 4
    if flags & GRE_KEY:
        (key,) = _I.unpack_from(buf, p)
        p += 4
    if flags & GRE_SEQ:
        (seq,) = _I.unpack_from(buf, p)
    return GreHdr(flags, proto, csum, key, seq)


def pack_into(
    buf: bytearray,
    off: int,
    flags: int,
    protocol: int,
    key: int = 0,
    seq: int = 0,
) -> int:
    """Write a GRE header at *off*; return its length.

    The options are filled from the end as ``gre_build_header`` does (sequence
    number, then key); the checksum word is written as zero — compute it with
    :func:`gre_checksum` once the payload is in place.
    """
    hlen = gre_calc_hlen(flags)
    GRE_HDR.pack_into(buf, off, flags, protocol)
    p = off + hlen - 4
    if flags & GRE_SEQ:
        _I.pack_into(buf, p, seq & 0xFFFFFFFF)
        p -= 4
    if flags & GRE_KEY:
        _I.pack_into(buf, p, key & 0xFFFFFFFF)
        p -= 4
    if flags & GRE_CSUM:
        _I.pack_into(buf, p, 0)
    return hlen


@kernel("net/ipv4/ip_gre.c", "ip_compute_csum")
def gre_checksum(buf: bytes | bytearray | memoryview, off: int, end: int) -> int:
    """The GRE checksum of the packet ``buf[off:end]`` whose checksum field is zero.

    Kernel: net/ipv4/ip_gre.c (2.6.3x–3.x), ``*(__sum16 *)ptr = ip_compute_csum()``.
    """
    if TIMED:
        spend("ip_compute_csum")
    return csum_fold(csum_partial(buf, off, end))


def pack(flags: int, protocol: int, payload: bytes = b"", *, key: int = 0, seq: int = 0) -> bytes:
    """A GRE header followed by *payload*, with the checksum filled in if C is set."""
    hlen = gre_calc_hlen(flags)
    buf = bytearray(hlen) + payload
    pack_into(buf, 0, flags, protocol, key, seq)
    if flags & GRE_CSUM:
        _HH.pack_into(buf, 4, gre_checksum(buf, 0, len(buf)), 0)
    return bytes(buf)
