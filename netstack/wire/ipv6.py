"""IPv6 (RFC 8200): the fixed header, extension headers, address helpers.

Theory of operation: the 40-byte header is read and written with
:data:`IPV6_HDR` (the first 32-bit word holds version, traffic class and
flow label); addresses are 128-bit ``int``s everywhere on the data path,
read with :func:`addr_at` and written with :func:`put_addr`. Extension
headers are walked the way the kernel does it (:func:`ipv6_skip_exthdr`):
hop-by-hop, routing and destination options are ``(hdrlen + 1) * 8``
bytes, the fragment header 8, AH ``(hdrlen + 2) * 4``. Options inside
hop-by-hop and destination headers are TLVs (:func:`tlv_walk`); the two
top bits of an unknown option's type say what to do with it.

Text forms: :func:`ntoa` formats an address the way glibc's ``inet_ntop``
does (RFC 5952 zero compression, and the embedded-IPv4 forms
``::a.b.c.d`` and ``::ffff:a.b.c.d``) so ``ip`` output matches iproute2's;
:func:`aton` parses with ``inet_pton``'s rules.

Address classification mirrors ``__ipv6_addr_type`` (include/net/ipv6.h,
net/ipv6/addrconf_core.c): type flags plus a scope.

Kernel: include/uapi/linux/ipv6.h, include/net/ipv6.h, include/net/addrconf.h,
net/ipv6/exthdrs_core.c.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from typing import Final, NamedTuple

from netstack.sites import TIMED, kernel, spend

__all__ = [
    "IPV6_HDR",
    "IPV6_HLEN",
    "IPV6_MIN_MTU",
    "Ipv6Hdr",
    "addr_at",
    "aton",
    "csum_ipv6_magic",
    "ipv6_addr_type",
    "ipv6_eth_mc_map",
    "ipv6_skip_exthdr",
    "ntoa",
    "pack",
    "pack_into",
    "parse",
    "put_addr",
    "solicited_node",
]

IPV6_HLEN: Final = 40
IPV6_MIN_MTU: Final = 1280
IPV6_MAXPLEN: Final = 65535
IPV6_DEFAULT_HOPLIMIT: Final = 64
FRAG_HLEN: Final = 8

# Next header values (include/net/ipv6.h NEXTHDR_*)
NEXTHDR_HOP: Final = 0
NEXTHDR_IPV4: Final = 4
NEXTHDR_TCP: Final = 6
NEXTHDR_UDP: Final = 17
NEXTHDR_IPV6: Final = 41
NEXTHDR_ROUTING: Final = 43
NEXTHDR_FRAGMENT: Final = 44
NEXTHDR_GRE: Final = 47
NEXTHDR_ESP: Final = 50
NEXTHDR_AUTH: Final = 51
NEXTHDR_ICMP: Final = 58
NEXTHDR_NONE: Final = 59
NEXTHDR_DEST: Final = 60
NEXTHDR_MOBILITY: Final = 135
NEXTHDR_MAX: Final = 255

IPPROTO_ICMPV6: Final = 58
IPPROTO_UDP: Final = 17

# Fragment header frag_off field
IP6_MF: Final = 0x0001
IP6_OFFSET: Final = 0xFFF8

# TLV options (include/uapi/linux/in6.h, ipv6.h)
IPV6_TLV_PAD1: Final = 0
IPV6_TLV_PADN: Final = 1
IPV6_TLV_CALIPSO: Final = 7
IPV6_TLV_IOAM: Final = 49
IPV6_TLV_ROUTERALERT: Final = 5
IPV6_TLV_JUMBO: Final = 194
IPV6_TLV_HAO: Final = 201

# Routing header types
IPV6_SRCRT_TYPE_0: Final = 0
IPV6_SRCRT_TYPE_2: Final = 2
IPV6_SRCRT_TYPE_3: Final = 3
IPV6_SRCRT_TYPE_4: Final = 4

# __ipv6_addr_type() flags (include/net/ipv6.h)
IPV6_ADDR_ANY: Final = 0x0000
IPV6_ADDR_UNICAST: Final = 0x0001
IPV6_ADDR_MULTICAST: Final = 0x0002
IPV6_ADDR_ANYCAST: Final = 0x0004
IPV6_ADDR_LOOPBACK: Final = 0x0010
IPV6_ADDR_LINKLOCAL: Final = 0x0020
IPV6_ADDR_SITELOCAL: Final = 0x0040
IPV6_ADDR_COMPATv4: Final = 0x0080
IPV6_ADDR_SCOPE_MASK: Final = 0x00F0
IPV6_ADDR_MAPPED: Final = 0x1000
IPV6_ADDR_RESERVED: Final = 0x2000

# Address scopes (IPV6_ADDR_SCOPE_*, RFC 4291 multicast scope values)
IPV6_ADDR_SCOPE_NODELOCAL: Final = 0x01
IPV6_ADDR_SCOPE_LINKLOCAL: Final = 0x02
IPV6_ADDR_SCOPE_SITELOCAL: Final = 0x05
IPV6_ADDR_SCOPE_ORGLOCAL: Final = 0x08
IPV6_ADDR_SCOPE_GLOBAL: Final = 0x0E

# Well-known addresses, as ints
IN6ADDR_ANY: Final = 0
IN6ADDR_LOOPBACK: Final = 1
IN6ADDR_LINKLOCAL_ALLNODES: Final = 0xFF02_0000_0000_0000_0000_0000_0000_0001
IN6ADDR_LINKLOCAL_ALLROUTERS: Final = 0xFF02_0000_0000_0000_0000_0000_0000_0002
IN6ADDR_INTERFACELOCAL_ALLNODES: Final = 0xFF01_0000_0000_0000_0000_0000_0000_0001
IN6ADDR_INTERFACELOCAL_ALLROUTERS: Final = 0xFF01_0000_0000_0000_0000_0000_0000_0002
IN6ADDR_SITELOCAL_ALLROUTERS: Final = 0xFF05_0000_0000_0000_0000_0000_0000_0002
LINKLOCAL_PREFIX: Final = 0xFE80 << 112
ALL_ONES: Final = (1 << 128) - 1
SOLICITED_NODE_PREFIX: Final = 0xFF02_0000_0000_0000_0000_0001_FF00_0000

IPV6_HDR: Final = struct.Struct("!IHBB16s16s")
"""``struct ipv6hdr``: ver/tclass/flow_lbl word, payload_len, nexthdr, hop_limit, saddr, daddr."""
_VTF: Final = struct.Struct("!I")
_H: Final = struct.Struct("!H")
FRAG_HDR: Final = struct.Struct("!BBHI")
"""``struct frag_hdr``: nexthdr, reserved, frag_off (offset | M), identification."""


class Ipv6Hdr(NamedTuple):
    """``struct ipv6hdr`` with the first word split; addresses as ints."""

    version: int
    tclass: int
    flow_lbl: int
    payload_len: int
    nexthdr: int
    hop_limit: int
    saddr: int
    daddr: int


def addr_at(buf: bytes | bytearray | memoryview, off: int) -> int:
    """The 128-bit address at *off*."""
    return int.from_bytes(buf[off : off + 16], "big")


def put_addr(buf: bytearray, off: int, addr: int) -> None:
    """Write the 128-bit *addr* at *off*."""
    buf[off : off + 16] = addr.to_bytes(16, "big")


def parse(buf: bytes | bytearray | memoryview, off: int = 0) -> Ipv6Hdr:
    """Parse the fixed 40-byte header at *off* (the caller checks the length)."""
    vtf, plen, nexthdr, hlim, s, d = IPV6_HDR.unpack_from(buf, off)
    return Ipv6Hdr(
        vtf >> 28,
        (vtf >> 20) & 0xFF,
        vtf & 0xFFFFF,
        plen,
        nexthdr,
        hlim,
        int.from_bytes(s, "big"),
        int.from_bytes(d, "big"),
    )


def pack_into(buf: bytearray, off: int, hdr: Ipv6Hdr) -> None:
    """Write *hdr* at *off*."""
    IPV6_HDR.pack_into(
        buf,
        off,
        (hdr.version << 28) | ((hdr.tclass & 0xFF) << 20) | (hdr.flow_lbl & 0xFFFFF),
        hdr.payload_len,
        hdr.nexthdr,
        hdr.hop_limit,
        hdr.saddr.to_bytes(16, "big"),
        hdr.daddr.to_bytes(16, "big"),
    )


def pack(hdr: Ipv6Hdr) -> bytes:
    """Return the header as bytes."""
    buf = bytearray(IPV6_HLEN)
    pack_into(buf, 0, hdr)
    return bytes(buf)


@kernel("ip6_flow_hdr")
def ip6_flow_hdr(buf: bytearray, off: int, tclass: int, flowlabel: int) -> None:
    """Write the first word: version 6, traffic class, flow label.

    Kernel: ip6_flow_hdr().
    """
    _VTF.pack_into(buf, off, 0x60000000 | ((tclass & 0xFF) << 20) | (flowlabel & 0xFFFFF))


@kernel("ipv6_get_dsfield")
def ipv6_get_dsfield(buf: bytes | bytearray, off: int) -> int:
    """The traffic class byte of the header at *off*.

    Kernel: ipv6_get_dsfield().
    """
    return ((buf[off] & 0x0F) << 4) | (buf[off + 1] >> 4)


# ---------------------------------------------------------------------------
# Checksums
# ---------------------------------------------------------------------------


@kernel("net/ipv6/ip6_checksum.c", "csum_ipv6_magic")
def csum_ipv6_magic(saddr: int, daddr: int, length: int, proto: int, s: int = 0) -> int:
    """The UDP/ICMPv6 checksum field value for data summing to *s* (RFC 8200 §8.1).

    The pseudo-header is source, destination, 32-bit upper-layer length and
    next header.

    Kernel: net/ipv6/ip6_checksum.c, csum_ipv6_magic().
    """
    if TIMED:
        spend("csum_ipv6_magic")
    t = s + length + proto
    a = saddr
    while a:
        t += a & 0xFFFF
        a >>= 16
    a = daddr
    while a:
        t += a & 0xFFFF
        a >>= 16
    while t >> 16:
        t = (t & 0xFFFF) + (t >> 16)
    return ~t & 0xFFFF


@kernel("csum_ipv6_magic")
def csum_ipv6_pseudo(saddr: int, daddr: int, length: int, proto: int) -> int:
    """The folded, *uncomplemented* pseudo-header sum (what CHECKSUM_PARTIAL stores).

    Kernel: ~csum_ipv6_magic(saddr, daddr, len, proto, 0).
    """
    if TIMED:
        spend("csum_ipv6_magic")
    return ~csum_ipv6_magic(saddr, daddr, length, proto, 0) & 0xFFFF


# ---------------------------------------------------------------------------
# Address classification
# ---------------------------------------------------------------------------


def _mc_scope_type(addr: int) -> int:
    scope = (addr >> 112) & 0x0F
    if scope == IPV6_ADDR_SCOPE_NODELOCAL:
        return IPV6_ADDR_LOOPBACK
    if scope == IPV6_ADDR_SCOPE_LINKLOCAL:
        return IPV6_ADDR_LINKLOCAL
    if scope == IPV6_ADDR_SCOPE_SITELOCAL:
        return IPV6_ADDR_SITELOCAL
    return 0


@kernel("__ipv6_addr_type")
def ipv6_addr_type(addr: int) -> int:
    """The ``IPV6_ADDR_*`` type flags of *addr*.

    Kernel: __ipv6_addr_type().
    """
    st = addr >> 96
    top = st >> 16
    if (st & 0xE000_0000) != 0 and (st & 0xE000_0000) != 0xE000_0000:
        return IPV6_ADDR_UNICAST  # 001-110: global unicast (scope global)
    if (top & 0xFF00) == 0xFF00:
        return IPV6_ADDR_MULTICAST | _mc_scope_type(addr)
    if (top & 0xFFC0) == 0xFE80:
        return IPV6_ADDR_LINKLOCAL | IPV6_ADDR_UNICAST
    if (top & 0xFFC0) == 0xFEC0:
        return IPV6_ADDR_SITELOCAL | IPV6_ADDR_UNICAST
    if (top & 0xFE00) == 0xFC00:
        return IPV6_ADDR_UNICAST  # ULA, RFC 4193
    if (addr >> 64) == 0:
        low = addr & 0xFFFF_FFFF_FFFF_FFFF
        if (low >> 32) == 0:
            v4 = low & 0xFFFF_FFFF
            if v4 == 0:
                return IPV6_ADDR_ANY
            if v4 == 1:
                return IPV6_ADDR_LOOPBACK | IPV6_ADDR_UNICAST
            return IPV6_ADDR_COMPATv4 | IPV6_ADDR_UNICAST
        if (low >> 32) == 0x0000_FFFF:
            return IPV6_ADDR_MAPPED
    return IPV6_ADDR_UNICAST


@kernel("__ipv6_addr_src_scope")
def ipv6_addr_scope_of_type(addr_type: int) -> int:
    """The address scope (IPV6_ADDR_SCOPE_*) for a type.

    Kernel: __ipv6_addr_src_scope().
    """
    if addr_type == IPV6_ADDR_ANY:
        return 0
    if addr_type & IPV6_ADDR_LOOPBACK:
        return IPV6_ADDR_SCOPE_NODELOCAL
    if addr_type & IPV6_ADDR_LINKLOCAL:
        return IPV6_ADDR_SCOPE_LINKLOCAL
    if addr_type & IPV6_ADDR_SITELOCAL:
        return IPV6_ADDR_SCOPE_SITELOCAL
    return IPV6_ADDR_SCOPE_GLOBAL


@kernel("ipv6_addr_src_scope")
def ipv6_addr_src_scope(addr: int) -> int:
    """Kernel: ipv6_addr_src_scope()."""
    return ipv6_addr_scope_of_type(ipv6_addr_type(addr))


@kernel("net/ipv6/addrconf_core.c", "ipv6_addr_scope", "__ipv6_addr_type")
def ipv6_addr_scope(addr: int) -> int:
    """The ``IFA_*`` scope bits an address gets (type & IPV6_ADDR_SCOPE_MASK).

    Kernel: net/ipv6/addrconf_core.c, ipv6_addr_scope() → __ipv6_addr_type().
    """
    return ipv6_addr_type(addr) & IPV6_ADDR_SCOPE_MASK


@kernel("ipv6_addr_is_multicast")
def ipv6_addr_is_multicast(addr: int) -> bool:
    """ff00::/8.

    Kernel: ipv6_addr_is_multicast().
    """
    return (addr >> 120) == 0xFF


@kernel("IPV6_ADDR_MC_SCOPE")
def ipv6_addr_mc_scope(addr: int) -> int:
    """The scope nibble of a multicast address.

    Kernel: IPV6_ADDR_MC_SCOPE().
    """
    return (addr >> 112) & 0x0F


def ipv6_addr_is_linklocal(addr: int) -> bool:
    """fe80::/10."""
    return (addr >> 118) == 0x3FA


@kernel("ipv6_addr_v4mapped")
def ipv6_addr_v4mapped(addr: int) -> bool:
    """::ffff:0:0/96.

    Kernel: ipv6_addr_v4mapped().
    """
    return (addr >> 32) == 0xFFFF


@kernel("ipv6_addr_is_solict_mult")
def ipv6_addr_is_solict_mult(addr: int) -> bool:
    """ff02::1:ff00:0/104.

    Kernel: ipv6_addr_is_solict_mult().
    """
    return (addr >> 24) == (SOLICITED_NODE_PREFIX >> 24)


@kernel("__ipv6_addr_needs_scope_id")
def ipv6_addr_needs_scope_id(addr_type: int) -> bool:
    """Link-local unicast or multicast up to link scope.

    Kernel: __ipv6_addr_needs_scope_id().
    """
    return bool(addr_type & IPV6_ADDR_LINKLOCAL) or bool(
        addr_type & IPV6_ADDR_MULTICAST and addr_type & (IPV6_ADDR_LOOPBACK | IPV6_ADDR_LINKLOCAL)
    )


@kernel("addrconf_addr_solict_mult")
def solicited_node(addr: int) -> int:
    """The solicited-node multicast group of *addr*.

    Kernel: addrconf_addr_solict_mult().
    """
    return SOLICITED_NODE_PREFIX | (addr & 0xFFFFFF)


@kernel("ipv6_eth_mc_map")
def ipv6_eth_mc_map(addr: int) -> bytes:
    """Multicast group → 33:33:xx:xx:xx:xx (RFC 2464 §7).

    Kernel: ipv6_eth_mc_map().
    """
    return b"\x33\x33" + (addr & 0xFFFF_FFFF).to_bytes(4, "big")


@kernel("net/ipv6/addrconf.c", "addrconf_ifid_eui48")
def eui64_from_mac(mac: bytes) -> int:
    """Modified EUI-64 interface identifier of a 48-bit MAC (RFC 4291 App. A).

    Kernel: net/ipv6/addrconf.c, addrconf_ifid_eui48().
    """
    eui = bytes((mac[0] ^ 0x02, mac[1], mac[2], 0xFF, 0xFE, mac[3], mac[4], mac[5]))
    return int.from_bytes(eui, "big")


@kernel("net/ipv6/addrconf.c", "__ipv6_isatap_ifid")
def isatap_ifid(v4: int) -> int | None:
    """The ISATAP-style identifier ``[02]00:5efe:a.b.c.d`` of an IPv4 address (RFC 5214).

    The universal/local bit is set unless the address is private, loopback,
    link-local, multicast, test-net or other non-global space. None for 0.

    Kernel: net/ipv6/addrconf.c, __ipv6_isatap_ifid().
    """
    if v4 == 0:
        return None
    a = v4 >> 24
    b = (v4 >> 16) & 0xFF
    c = (v4 >> 8) & 0xFF
    private = (
        a == 0  # zeronet
        or a == 10  # private_10
        or a == 127  # loopback
        or (a == 169 and b == 254)  # linklocal_169
        or (a == 172 and (b & 0xF0) == 16)  # private_172
        or (a == 192 and b == 0 and c == 2)  # test_192
        or (a == 192 and b == 88 and c == 99)  # anycast_6to4
        or (a == 192 and b == 168)  # private_192
        or (a == 198 and (b & 0xFE) == 18)  # test_198
        or (a & 0xF0) == 0xE0  # multicast
        or v4 == 0xFFFF_FFFF  # lbcast
    )
    first = 0x00 if private else 0x02
    return (first << 56) | (0x5EFE << 32) | v4


# ---------------------------------------------------------------------------
# Text forms
# ---------------------------------------------------------------------------


def ntoa(addr: int) -> str:
    """Format as glibc's ``inet_ntop(AF_INET6)``: RFC 5952, ``::a.b.c.d`` forms included."""
    words = [(addr >> (112 - 16 * i)) & 0xFFFF for i in range(8)]
    best_base, best_len = -1, 0
    cur_base, cur_len = -1, 0
    for i, w in enumerate(words):
        if w == 0:
            if cur_base < 0:
                cur_base, cur_len = i, 1
            else:
                cur_len += 1
        elif cur_base >= 0:
            if cur_len > best_len:
                best_base, best_len = cur_base, cur_len
            cur_base = -1
    if cur_base >= 0 and cur_len > best_len:
        best_base, best_len = cur_base, cur_len
    if best_len < 2:
        best_base = -1
    out: list[str] = []
    i = 0
    while i < 8:
        if best_base >= 0 and best_base <= i < best_base + best_len:
            if i == best_base:
                out.append(":")
            i += 1
            continue
        if i:
            out.append(":")
        if i == 6 and best_base == 0 and (best_len == 6 or (best_len == 5 and words[5] == 0xFFFF)):
            v4 = addr & 0xFFFF_FFFF
            out.append(f"{v4 >> 24}.{(v4 >> 16) & 0xFF}.{(v4 >> 8) & 0xFF}.{v4 & 0xFF}")
            break
        out.append(f"{words[i]:x}")
        i += 1
    if best_base >= 0 and best_base + best_len == 8:
        out.append(":")
    return "".join(out)


def aton(text: str) -> int:
    """Parse with ``inet_pton(AF_INET6)``'s rules. Raises ``ValueError``."""
    try:
        return int.from_bytes(socket.inet_pton(socket.AF_INET6, text), "big")
    except (OSError, ValueError, UnicodeError):
        raise ValueError(f"invalid IPv6 address {text!r}") from None


def prefix_mask(plen: int) -> int:
    """The 128-bit netmask of a prefix length."""
    return (ALL_ONES << (128 - plen)) & ALL_ONES if plen else 0


@kernel("ipv6_prefix_equal")
def ipv6_prefix_equal(a: int, b: int, plen: int) -> bool:
    """Kernel: ipv6_prefix_equal()."""
    return not ((a ^ b) >> (128 - plen)) if plen else True


@kernel("ipv6_addr_diff")
def ipv6_addr_diff(a: int, b: int) -> int:
    """The number of leading bits *a* and *b* share.

    Kernel: ipv6_addr_diff().
    """
    x = a ^ b
    return 128 - x.bit_length()


# ---------------------------------------------------------------------------
# Extension headers
# ---------------------------------------------------------------------------


@kernel("include/net/ipv6.h", "ipv6_ext_hdr")
def ipv6_ext_hdr(nexthdr: int) -> bool:
    """True for the extension headers.

    Kernel: include/net/ipv6.h, ipv6_ext_hdr().
    """
    return nexthdr in (
        NEXTHDR_HOP,
        NEXTHDR_ROUTING,
        NEXTHDR_FRAGMENT,
        NEXTHDR_AUTH,
        NEXTHDR_NONE,
        NEXTHDR_DEST,
    )


@kernel("ipv6_optlen")
def ipv6_optlen(buf: bytes | bytearray | memoryview, off: int) -> int:
    """Length of a hop-by-hop/routing/destination header.

    Kernel: ipv6_optlen().
    """
    return (buf[off + 1] + 1) << 3


@kernel("ipv6_authlen")
def ipv6_authlen(buf: bytes | bytearray | memoryview, off: int) -> int:
    """Length of an authentication header.

    Kernel: ipv6_authlen().
    """
    return (buf[off + 1] + 2) << 2


@kernel("net/ipv6/exthdrs_core.c", "ipv6_skip_exthdr")
def ipv6_skip_exthdr(
    buf: bytes | bytearray | memoryview, start: int, nexthdr: int, end: int
) -> tuple[int, int, int]:
    """Skip extension headers from *start*: ``(offset, nexthdr, frag_off)``.

    *offset* is -1 when the chain is truncated. For a non-first fragment the
    walk stops at the fragment header (its payload is not a header).

    Kernel: net/ipv6/exthdrs_core.c, ipv6_skip_exthdr().
    """
    frag_off = 0
    while ipv6_ext_hdr(nexthdr):
        if nexthdr == NEXTHDR_NONE:
            return -1, nexthdr, frag_off
        if start + 2 > end:
            return -1, nexthdr, frag_off
        if nexthdr == NEXTHDR_FRAGMENT:
            if start + FRAG_HLEN > end:
                return -1, nexthdr, frag_off
            frag_off = _H.unpack_from(buf, start + 2)[0] & ~0x7
            if frag_off:
                break
            hdrlen = 8
        elif nexthdr == NEXTHDR_AUTH:
            hdrlen = ipv6_authlen(buf, start)
        else:
            hdrlen = ipv6_optlen(buf, start)
        nexthdr = buf[start]
        start += hdrlen
    if start > end:
        return -1, nexthdr, frag_off
    return start, nexthdr, frag_off


class Tlv(NamedTuple):
    """One option of a hop-by-hop or destination options header."""

    offset: int  # of the type byte, in the buffer
    type: int
    data: bytes


def tlv_walk(buf: bytes | bytearray | memoryview, off: int, end: int) -> Iterator[Tlv] | None:
    """The options of the header at *off* (ending at *end*), or None if malformed.

    Pad1 is one byte; every other option is type, length, value and must fit.
    """
    out: list[Tlv] = []
    i = off + 2
    while i < end:
        t = buf[i]
        if t == IPV6_TLV_PAD1:
            out.append(Tlv(i, t, b""))
            i += 1
            continue
        if i + 2 > end:
            return None
        olen = buf[i + 1]
        if i + 2 + olen > end:
            return None
        out.append(Tlv(i, t, bytes(buf[i + 2 : i + 2 + olen])))
        i += 2 + olen
    return iter(out)


def tlv_unknown_action(opt_type: int) -> int:
    """What to do with an unknown option: 0 skip, 1 discard, 2 ICMP, 3 ICMP unless multicast.

    RFC 8200 §4.2: the two high-order bits of the type.
    """
    return (opt_type & 0xC0) >> 6


def build_options(nexthdr: int, options: list[tuple[int, bytes]]) -> bytes:
    """A hop-by-hop/destination header with *options*, padded to 8 bytes (tests, tools)."""
    body = bytearray()
    for t, data in options:
        if t == IPV6_TLV_PAD1:
            body.append(0)
        else:
            body += bytes((t, len(data))) + data
    total = 2 + len(body)
    pad = (-total) % 8
    if pad == 1:
        body.append(0)
    elif pad:
        body += bytes((IPV6_TLV_PADN, pad - 2)) + bytes(pad - 2)
    hdr = bytes((nexthdr, (2 + len(body)) // 8 - 1)) + body
    return hdr
