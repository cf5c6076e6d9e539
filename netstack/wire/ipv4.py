"""IPv4 (RFC 791): header layout, flags, options, protocol numbers, addresses.

The header's first byte holds version and IHL; :class:`IpHdr` splits them for
readability, while the data path unpacks :data:`IPV4_HDR` directly.

Kernel: include/uapi/linux/ip.h, include/uapi/linux/in.h, include/net/ip.h.
"""

from __future__ import annotations

import struct
from typing import Final, NamedTuple

from netstack.sites import kernel
from netstack.wire.checksum import ip_fast_csum

IPV4_HLEN: Final = 20  # sizeof(struct iphdr)
IPV4_MAX_HLEN: Final = 60
IP_MAX_MTU: Final = 0xFFFF
IPV4_MIN_MTU: Final = 68
IP_DEFAULT_TTL: Final = 64  # sysctl net.ipv4.ip_default_ttl

IP_CE: Final = 0x8000  # "congestion experienced" / evil bit, must be 0
IP_DF: Final = 0x4000
IP_MF: Final = 0x2000
IP_OFFSET: Final = 0x1FFF

IPTOS_TOS_MASK: Final = 0x1E
IPTOS_PREC_MASK: Final = 0xE0
IPTOS_LOWDELAY: Final = 0x10
IPTOS_THROUGHPUT: Final = 0x08
IPTOS_RELIABILITY: Final = 0x04
IPTOS_MINCOST: Final = 0x02

INET_ECN_NOT_ECT: Final = 0
INET_ECN_ECT_1: Final = 1
INET_ECN_ECT_0: Final = 2
INET_ECN_CE: Final = 3
INET_ECN_MASK: Final = 3

IPOPT_END: Final = 0
IPOPT_NOOP: Final = 1
IPOPT_SEC: Final = 130
IPOPT_LSRR: Final = 131
IPOPT_TIMESTAMP: Final = 68
IPOPT_RR: Final = 7
IPOPT_SSRR: Final = 137
IPOPT_RA: Final = 148

IPPROTO_IP: Final = 0
IPPROTO_ICMP: Final = 1
IPPROTO_IGMP: Final = 2
IPPROTO_IPIP: Final = 4
IPPROTO_TCP: Final = 6
IPPROTO_UDP: Final = 17
IPPROTO_IPV6: Final = 41
IPPROTO_GRE: Final = 47
IPPROTO_ICMPV6: Final = 58
IPPROTO_RAW: Final = 255

INADDR_ANY: Final = 0
INADDR_BROADCAST: Final = 0xFFFFFFFF
INADDR_LOOPBACK: Final = 0x7F000001

IPV4_HDR: Final = struct.Struct("!BBHHHBBHII")
"""``struct iphdr``: ver_ihl, tos, tot_len, id, frag_off, ttl, protocol, check, saddr, daddr."""


class IpHdr(NamedTuple):
    """``struct iphdr`` with version and IHL split out; addresses as ints."""

    version: int
    ihl: int
    tos: int
    tot_len: int
    id: int
    frag_off: int
    ttl: int
    protocol: int
    check: int
    saddr: int
    daddr: int


def parse(buf: bytes | bytearray | memoryview, off: int = 0) -> IpHdr:
    """Parse the fixed 20-byte header at *off* (options are skipped by ``ihl``)."""
    vi, tos, tot_len, ident, frag, ttl, proto, check, saddr, daddr = IPV4_HDR.unpack_from(buf, off)
    return IpHdr(vi >> 4, vi & 0xF, tos, tot_len, ident, frag, ttl, proto, check, saddr, daddr)


def pack_into(buf: bytearray, off: int, hdr: IpHdr, *, fill_check: bool = False) -> None:
    """Write the fixed header at *off*; with ``fill_check`` compute the checksum.

    With ``fill_check`` the checksum covers ``ihl * 4`` bytes, so options must
    already be in place after the fixed header.
    """
    IPV4_HDR.pack_into(
        buf,
        off,
        (hdr.version << 4) | hdr.ihl,
        hdr.tos,
        hdr.tot_len,
        hdr.id,
        hdr.frag_off,
        hdr.ttl,
        hdr.protocol,
        0 if fill_check else hdr.check,
        hdr.saddr,
        hdr.daddr,
    )
    if fill_check:
        struct.pack_into("!H", buf, off + 10, ip_fast_csum(buf, off, hdr.ihl * 4))


def pack(hdr: IpHdr, *, fill_check: bool = False) -> bytes:
    """Return the fixed header as bytes (checksum computed with ``fill_check``)."""
    if fill_check and hdr.ihl != 5:
        raise ValueError("a header with options needs them in place: use pack_into()")
    buf = bytearray(IPV4_HLEN)
    pack_into(buf, 0, hdr, fill_check=fill_check)
    return bytes(buf)


@kernel("ip_send_check")
def ip_send_check(buf: bytearray, off: int) -> None:
    """Recompute the header checksum in place. Kernel: ip_send_check()."""
    ihl = (buf[off] & 0xF) * 4
    buf[off + 10] = 0
    buf[off + 11] = 0
    c = ip_fast_csum(buf, off, ihl)
    buf[off + 10] = c >> 8
    buf[off + 11] = c & 0xFF


@kernel("include/net/ip.h", "ip_decrease_ttl")
def ip_decrease_ttl(buf: bytearray, off: int) -> int:
    """Decrement TTL and patch the checksum incrementally (RFC 1624).

    Returns the new TTL. Kernel: include/net/ip.h, ip_decrease_ttl().
    """
    check = (buf[off + 10] << 8) | buf[off + 11]
    check += 0x0100
    check = (check + (check >= 0xFFFF)) & 0xFFFF
    buf[off + 10] = check >> 8
    buf[off + 11] = check & 0xFF
    ttl = buf[off + 8] - 1
    buf[off + 8] = ttl
    return ttl


def ntoa(addr: int) -> str:
    """``0x0a000001`` → ``'10.0.0.1'``."""
    return f"{addr >> 24}.{(addr >> 16) & 0xFF}.{(addr >> 8) & 0xFF}.{addr & 0xFF}"


def aton(text: str) -> int:
    """Parse a dotted quad strictly (four decimal parts, 0..255). Raises ``ValueError``."""
    parts = text.split(".")
    if len(parts) != 4:
        raise ValueError(f"invalid IPv4 address {text!r}")
    value = 0
    for p in parts:
        if not (p.isascii() and p.isdigit()) or len(p) > 3 or int(p) > 255:
            raise ValueError(f"invalid IPv4 address {text!r}")
        value = (value << 8) | int(p)
    return value


@kernel("inet_make_mask")
def inet_make_mask(prefixlen: int) -> int:
    """Prefix length → netmask as int. Kernel: inet_make_mask()."""
    return (0xFFFFFFFF << (32 - prefixlen)) & 0xFFFFFFFF if prefixlen else 0


def ipv4_is_multicast(addr: int) -> bool:
    """224.0.0.0/4."""
    return (addr & 0xF0000000) == 0xE0000000


def ipv4_is_lbcast(addr: int) -> bool:
    """255.255.255.255."""
    return addr == INADDR_BROADCAST


def ipv4_is_loopback(addr: int) -> bool:
    """127.0.0.0/8."""
    return (addr & 0xFF000000) == 0x7F000000


def ipv4_is_zeronet(addr: int) -> bool:
    """0.0.0.0/8."""
    return (addr & 0xFF000000) == 0


def ipv4_is_local_multicast(addr: int) -> bool:
    """224.0.0.0/24."""
    return (addr & 0xFFFFFF00) == 0xE0000000


@kernel("net/ipv4/ip_options.c", "__ip_options_compile")
def ip_options_length(buf: bytes | bytearray | memoryview, off: int, optlen: int) -> bool:
    """Walk the option list at *off* (length *optlen*); True when it is well formed.

    Each option is END, NOOP, or type/length/value with ``2 <= length <= rest``.
    Kernel: net/ipv4/ip_options.c, __ip_options_compile() (structure checks only).
    """
    i = off
    end = off + optlen
    while i < end:
        t = buf[i]
        if t == IPOPT_END:
            return True
        if t == IPOPT_NOOP:
            i += 1
            continue
        if i + 1 >= end:
            return False
        olen = buf[i + 1]
        if olen < 2 or i + olen > end:
            return False
        i += olen
    return True
