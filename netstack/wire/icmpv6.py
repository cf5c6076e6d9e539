"""ICMPv6 (RFC 4443) and Neighbor Discovery (RFC 4861) messages and options.

Theory of operation: every ICMPv6 message starts with type, code and the
checksum (over the IPv6 pseudo-header and the whole message, next header
58); the next four bytes depend on the type (echo identifier/sequence,
the MTU of Packet Too Big, the pointer of Parameter Problem, the flags of
a Neighbor Advertisement). ND messages carry a fixed part and then
options, each ``type, length in 8-byte units, data``; a zero length is
invalid and makes the whole message invalid (:func:`ndisc_parse_options`).

Kernel: include/uapi/linux/icmpv6.h, include/net/ndisc.h, net/ipv6/ndisc.c
(ndisc_parse_options).
"""

from __future__ import annotations

import struct
from typing import Final, NamedTuple

from netstack.sites import kernel

__all__ = [
    "ICMPV6_DEST_UNREACH",
    "ICMPV6_ECHO_REPLY",
    "ICMPV6_ECHO_REQUEST",
    "ICMPV6_HDR",
    "ICMPV6_HLEN",
    "ICMPV6_PARAMPROB",
    "ICMPV6_PKT_TOOBIG",
    "ICMPV6_TIME_EXCEED",
    "Icmp6Hdr",
    "NdOptions",
    "icmpv6_is_err",
    "ndisc_parse_options",
]

ICMPV6_HLEN: Final = 8

# Types (include/uapi/linux/icmpv6.h)
ICMPV6_DEST_UNREACH: Final = 1
ICMPV6_PKT_TOOBIG: Final = 2
ICMPV6_TIME_EXCEED: Final = 3
ICMPV6_PARAMPROB: Final = 4
ICMPV6_ERRMSG_MAX: Final = 127
ICMPV6_INFOMSG_MASK: Final = 0x80
ICMPV6_ECHO_REQUEST: Final = 128
ICMPV6_ECHO_REPLY: Final = 129
ICMPV6_MGM_QUERY: Final = 130
ICMPV6_MGM_REPORT: Final = 131
ICMPV6_MGM_REDUCTION: Final = 132
NDISC_ROUTER_SOLICITATION: Final = 133
NDISC_ROUTER_ADVERTISEMENT: Final = 134
NDISC_NEIGHBOUR_SOLICITATION: Final = 135
NDISC_NEIGHBOUR_ADVERTISEMENT: Final = 136
NDISC_REDIRECT: Final = 137
ICMPV6_NI_QUERY: Final = 139
ICMPV6_NI_REPLY: Final = 140
ICMPV6_MLD2_REPORT: Final = 143
ICMPV6_EXT_ECHO_REQUEST: Final = 160
ICMPV6_EXT_ECHO_REPLY: Final = 161

# Codes for Destination Unreachable
ICMPV6_NOROUTE: Final = 0
ICMPV6_ADM_PROHIBITED: Final = 1
ICMPV6_NOT_NEIGHBOUR: Final = 2
ICMPV6_ADDR_UNREACH: Final = 3
ICMPV6_PORT_UNREACH: Final = 4
ICMPV6_POLICY_FAIL: Final = 5
ICMPV6_REJECT_ROUTE: Final = 6

# Codes for Time Exceeded
ICMPV6_EXC_HOPLIMIT: Final = 0
ICMPV6_EXC_FRAGTIME: Final = 1

# Codes for Parameter Problem
ICMPV6_HDR_FIELD: Final = 0
ICMPV6_UNK_NEXTHDR: Final = 1
ICMPV6_UNK_OPTION: Final = 2
ICMPV6_HDR_INCOMP: Final = 3

# Router preference (RFC 4191) in the RA flags byte, bits 3-4
ICMPV6_ROUTER_PREF_LOW: Final = 0x3
ICMPV6_ROUTER_PREF_MEDIUM: Final = 0x0
ICMPV6_ROUTER_PREF_HIGH: Final = 0x1
ICMPV6_ROUTER_PREF_INVALID: Final = 0x2

# RA flags
ND_RA_FLAG_MANAGED: Final = 0x80
ND_RA_FLAG_OTHER: Final = 0x40
ND_RA_FLAG_HOME_AGENT: Final = 0x20

# NA flags (first byte after the checksum)
ND_NA_FLAG_ROUTER: Final = 0x80
ND_NA_FLAG_SOLICITED: Final = 0x40
ND_NA_FLAG_OVERRIDE: Final = 0x20

# ND option types (include/net/ndisc.h)
ND_OPT_SOURCE_LL_ADDR: Final = 1
ND_OPT_TARGET_LL_ADDR: Final = 2
ND_OPT_PREFIX_INFO: Final = 3
ND_OPT_REDIRECT_HDR: Final = 4
ND_OPT_MTU: Final = 5
ND_OPT_NONCE: Final = 14
ND_OPT_ROUTE_INFO: Final = 24
ND_OPT_RDNSS: Final = 25
ND_OPT_DNSSL: Final = 31
ND_OPT_6CO: Final = 34
ND_OPT_CAPTIVE_PORTAL: Final = 37
ND_OPT_PREF64: Final = 38

# Prefix information flags
ND_PI_FLAG_ONLINK: Final = 0x80
ND_PI_FLAG_AUTOCONF: Final = 0x40
ND_PI_FLAG_ROUTER: Final = 0x20

ICMPV6_HDR: Final = struct.Struct("!BBHI")
"""type, code, checksum, and the 32-bit word that depends on the type."""
ECHO_HDR: Final = struct.Struct("!BBHHH")
"""type, code, checksum, identifier, sequence."""
RA_FIXED: Final = struct.Struct("!BBHBBHII")
"""type, code, checksum, cur_hop_limit, flags, router_lifetime, reachable, retrans (16 bytes)."""
PREFIX_INFO: Final = struct.Struct("!BBBBIII16s")
"""type 3, length 4, prefix_len, flags, valid, preferred, reserved2, prefix (32 bytes)."""
MTU_OPT: Final = struct.Struct("!BBHI")
"""type 5, length 1, reserved, mtu."""

ND_MSG_LEN: Final = 24  # struct nd_msg: icmp6hdr + target
RS_MSG_LEN: Final = 8
RA_MSG_LEN: Final = 16
REDIRECT_MSG_LEN: Final = 40


class Icmp6Hdr(NamedTuple):
    """``struct icmp6hdr``: type, code, checksum and the type-specific word."""

    type: int
    code: int
    cksum: int
    data: int


def parse(buf: bytes | bytearray | memoryview, off: int = 0) -> Icmp6Hdr:
    """Parse the 8-byte header at *off*."""
    return Icmp6Hdr._make(ICMPV6_HDR.unpack_from(buf, off))


def pack_into(buf: bytearray, off: int, hdr: Icmp6Hdr) -> None:
    """Write *hdr* at *off* (the checksum as given)."""
    ICMPV6_HDR.pack_into(buf, off, *hdr)


def pack(hdr: Icmp6Hdr) -> bytes:
    return ICMPV6_HDR.pack(*hdr)


@kernel("include/linux/icmpv6.h", "icmpv6_is_err")
def icmpv6_is_err(icmp_type: int) -> bool:
    """Error messages are types 0–127.

    Kernel: include/linux/icmpv6.h, icmpv6_is_err().
    """
    return icmp_type < 128


def is_ineligible_type(icmp_type: int) -> bool:
    """An unknown or error message: never answered with an ICMPv6 error (RFC 4443 2.4(e))."""
    return icmp_type < 128 or icmp_type == NDISC_REDIRECT


class NdOptions(NamedTuple):
    """``struct ndisc_options``: where each option is (offsets into the buffer).

    Single options keep the *first* occurrence except prefix information,
    route information and RDNSS/DNSSL (user options), which are lists.
    """

    src_lladdr: int | None
    tgt_lladdr: int | None
    prefix_info: tuple[int, ...]
    redirect_hdr: int | None
    mtu: int | None
    nonce: int | None
    route_info: tuple[int, ...]
    user_opts: tuple[int, ...]


@kernel("net/ipv6/ndisc.c", "ndisc_parse_options")
def ndisc_parse_options(
    buf: bytes | bytearray | memoryview, off: int, end: int
) -> NdOptions | None:
    """Index the ND options in ``buf[off:end]``; None if one is malformed.

    A zero length or an option running past the end invalidates the message.
    A repeated link-layer address, redirected-header or MTU option keeps the
    first one ("duplicated ND6 option found: skip"); a repeated nonce is
    accepted the same way.

    Kernel: net/ipv6/ndisc.c, ndisc_parse_options().
    """
    src = tgt = rh = mtu = nonce = None
    pi: list[int] = []
    ri: list[int] = []
    uo: list[int] = []
    i = off
    while i < end:
        if end - i < 2:
            return None
        olen = buf[i + 1] << 3
        if olen == 0 or olen > end - i:
            return None
        t = buf[i]
        if t == ND_OPT_SOURCE_LL_ADDR:
            if src is None:
                src = i
        elif t == ND_OPT_TARGET_LL_ADDR:
            if tgt is None:
                tgt = i
        elif t == ND_OPT_REDIRECT_HDR:
            if rh is None:
                rh = i
        elif t == ND_OPT_MTU:
            if mtu is None:
                mtu = i
        elif t == ND_OPT_NONCE:
            if nonce is None:
                nonce = i
        elif t == ND_OPT_PREFIX_INFO:
            pi.append(i)
        elif t == ND_OPT_ROUTE_INFO:
            ri.append(i)
        elif t in (ND_OPT_RDNSS, ND_OPT_DNSSL, ND_OPT_CAPTIVE_PORTAL, ND_OPT_PREF64):
            uo.append(i)
        # other options are ignored (RFC 4861 §4.6: "silently ignored")
        i += olen
    return NdOptions(src, tgt, tuple(pi), rh, mtu, nonce, tuple(ri), tuple(uo))


@kernel("ndisc_opt_addr_space")
def ndisc_opt_addr_space(addr_len: int) -> int:
    """Bytes a link-layer address option takes.

    Kernel: ndisc_opt_addr_space().
    """
    return (addr_len + 2 + 7) & ~7


@kernel("ndisc_fill_addr_option")
def ndisc_fill_addr_option(opt_type: int, addr: bytes) -> bytes:
    """A source/target link-layer address option.

    Kernel: ndisc_fill_addr_option().
    """
    space = ndisc_opt_addr_space(len(addr))
    return bytes((opt_type, space >> 3)) + addr + bytes(space - 2 - len(addr))


@kernel("include/net/ndisc.h", "ndisc_opt_addr_data", "__ndisc_opt_addr_data")
def ndisc_opt_addr_data(
    buf: bytes | bytearray | memoryview, opt: int, addr_len: int
) -> bytes | None:
    """The address in a link-layer option, or None if its length does not fit the device.

    Kernel: include/net/ndisc.h, ndisc_opt_addr_data() / __ndisc_opt_addr_data().
    """
    olen = buf[opt + 1] << 3
    if addr_len + 2 > olen or olen != ndisc_opt_addr_space(addr_len):
        return None
    return bytes(buf[opt + 2 : opt + 2 + addr_len])


def prefix_info_option(
    prefix: int, prefix_len: int, *, onlink: bool, autoconf: bool, valid: int, preferred: int
) -> bytes:
    """A Prefix Information option (RFC 4861 §4.6.2)."""
    flags = (ND_PI_FLAG_ONLINK if onlink else 0) | (ND_PI_FLAG_AUTOCONF if autoconf else 0)
    return PREFIX_INFO.pack(
        ND_OPT_PREFIX_INFO, 4, prefix_len, flags, valid, preferred, 0, prefix.to_bytes(16, "big")
    )


def mtu_option(mtu: int) -> bytes:
    """An MTU option (RFC 4861 §4.6.4)."""
    return MTU_OPT.pack(ND_OPT_MTU, 1, 0, mtu)


def nonce_option(nonce: bytes) -> bytes:
    """A Nonce option with a 6-byte nonce (RFC 3971 §5.3.2, used by RFC 7527 DAD)."""
    return bytes((ND_OPT_NONCE, 1)) + nonce[:6]
