"""Frames an attacker (or a fuzzer, or a soak) sends: builders and flood generators.

Theory of operation: each builder returns one complete Ethernet frame as
``bytes``, built with ``struct`` and valid checksums (fast enough to make a
million frames: no dpkt); each ``*_flood`` generator yields *n* frames of one
kind with the field an attacker varies (source address, port, fragment ID,
quoted destination) taken from a seeded ``random.Random``, so a flood is the
same on every run. The reliability tests (``tests/reliability``), the fuzzer
and ``benchmarks/floods.py`` feed them into a host through a
:class:`~netstack.host.port.Port`.

Addresses are ints (IPv4 32-bit, IPv6 128-bit), MACs 6-byte ``bytes``.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Iterator
from typing import Final

from netstack.wire.checksum import csum_fold, csum_partial, csum_tcpudp_magic, ip_fast_csum
from netstack.wire.ipv6 import csum_ipv6_magic, ipv6_eth_mc_map, solicited_node

__all__ = [
    "arp_flood",
    "arp_request",
    "eth",
    "frag_flood",
    "frag_flood6",
    "icmp6_packet_too_big",
    "icmp_err_flood",
    "icmp_frag_needed",
    "icmp_unreach",
    "ipv4",
    "ipv4_fragment",
    "ipv6",
    "ipv6_fragment",
    "nd_flood",
    "neigh_solicit",
    "ptb_flood",
    "syn_flood",
    "syn_flood6",
    "tcp4",
    "tcp6",
    "udp4",
    "udp6",
]

ETH_P_IP: Final = 0x0800
ETH_P_ARP: Final = 0x0806
ETH_P_IPV6: Final = 0x86DD
BROADCAST: Final = b"\xff" * 6
_ETH: Final = struct.Struct("!6s6sH")
_IP: Final = struct.Struct("!BBHHHBBH4s4s")
_IP6: Final = struct.Struct("!IHBB16s16s")
_UDP: Final = struct.Struct("!HHHH")
_TCP: Final = struct.Struct("!HHIIBBHHH")
_ICMP: Final = struct.Struct("!BBHHH")
_ICMP6: Final = struct.Struct("!BBHI")
_FRAG6: Final = struct.Struct("!BBHI")
_ARP: Final = struct.Struct("!HHBBH6s4s6s4s")


def eth(dst: bytes, src: bytes, proto: int, payload: bytes) -> bytes:
    """An Ethernet II frame."""
    return _ETH.pack(dst, src, proto) + payload


def ipv4(
    src: int,
    dst: int,
    proto: int,
    payload: bytes,
    *,
    ttl: int = 64,
    ident: int = 1,
    frag_off: int = 0x4000,
    tos: int = 0,
) -> bytes:
    """An IPv4 header (checksum filled in) followed by *payload*; DF by default."""
    hdr = bytearray(
        _IP.pack(
            0x45,
            tos,
            20 + len(payload),
            ident & 0xFFFF,
            frag_off,
            ttl,
            proto,
            0,
            src.to_bytes(4, "big"),
            dst.to_bytes(4, "big"),
        )
    )
    struct.pack_into("!H", hdr, 10, ip_fast_csum(hdr, 0, 20))
    return bytes(hdr) + payload


def ipv6(src: int, dst: int, nexthdr: int, payload: bytes, *, hlim: int = 64) -> bytes:
    """An IPv6 header followed by *payload*."""
    return (
        _IP6.pack(
            6 << 28, len(payload), nexthdr, hlim, src.to_bytes(16, "big"), dst.to_bytes(16, "big")
        )
        + payload
    )


def udp4(src: int, dst: int, sport: int, dport: int, data: bytes) -> bytes:
    """A UDP datagram in IPv4, checksum filled in."""
    seg = bytearray(_UDP.pack(sport, dport, 8 + len(data), 0) + data)
    c = csum_tcpudp_magic(src, dst, len(seg), 17, csum_partial(seg, 0, len(seg))) or 0xFFFF
    struct.pack_into("!H", seg, 6, c)
    return ipv4(src, dst, 17, bytes(seg))


def udp6(src: int, dst: int, sport: int, dport: int, data: bytes) -> bytes:
    """A UDP datagram in IPv6, checksum filled in."""
    seg = bytearray(_UDP.pack(sport, dport, 8 + len(data), 0) + data)
    c = csum_ipv6_magic(src, dst, len(seg), 17, csum_partial(seg, 0, len(seg))) or 0xFFFF
    struct.pack_into("!H", seg, 6, c)
    return ipv6(src, dst, 17, bytes(seg))


def _tcp_seg(
    sport: int, dport: int, seq: int, ack: int, flags: int, options: bytes, win: int
) -> bytearray:
    doff = (20 + len(options)) // 4
    return bytearray(_TCP.pack(sport, dport, seq, ack, doff << 4, flags, win, 0, 0) + options)


# MSS 1460, SACK permitted, timestamps, NOP, window scale 7: what Linux puts in a SYN
SYN_OPTIONS: Final = bytes.fromhex("020405b40402080a000000010000000001030307")


def tcp4(
    src: int,
    dst: int,
    sport: int,
    dport: int,
    seq: int,
    *,
    ack: int = 0,
    flags: int = 0x02,
    options: bytes = b"",
    win: int = 64240,
    data: bytes = b"",
) -> bytes:
    """A TCP segment in IPv4 (a bare SYN by default), checksum filled in."""
    seg = _tcp_seg(sport, dport, seq, ack, flags, options, win) + data
    c = csum_tcpudp_magic(src, dst, len(seg), 6, csum_partial(seg, 0, len(seg)))
    struct.pack_into("!H", seg, 16, c)
    return ipv4(src, dst, 6, bytes(seg))


def tcp6(
    src: int,
    dst: int,
    sport: int,
    dport: int,
    seq: int,
    *,
    ack: int = 0,
    flags: int = 0x02,
    options: bytes = b"",
    win: int = 64240,
    data: bytes = b"",
) -> bytes:
    """A TCP segment in IPv6 (a bare SYN by default), checksum filled in."""
    seg = _tcp_seg(sport, dport, seq, ack, flags, options, win) + data
    c = csum_ipv6_magic(src, dst, len(seg), 6, csum_partial(seg, 0, len(seg)))
    struct.pack_into("!H", seg, 16, c)
    return ipv6(src, dst, 6, bytes(seg))


def _icmp(icmp_type: int, code: int, rest: int, body: bytes) -> bytes:
    msg = bytearray(_ICMP.pack(icmp_type, code, 0, rest >> 16, rest & 0xFFFF) + body)
    struct.pack_into("!H", msg, 2, csum_fold(csum_partial(msg, 0, len(msg))))
    return bytes(msg)


def icmp_error(
    src: int, dst: int, icmp_type: int, code: int, quoted: bytes, *, info: int = 0
) -> bytes:
    """An ICMP error from *src* to *dst* quoting an IPv4 packet (up to 576 bytes in all);
    *info* is the 32-bit field after the checksum."""
    return ipv4(src, dst, 1, _icmp(icmp_type, code, info, quoted[:548]), frag_off=0)


def icmp_unreach(src: int, dst: int, code: int, quoted: bytes, *, mtu: int = 0) -> bytes:
    """An ICMP destination unreachable from *src* to *dst* quoting an IPv4 packet."""
    return icmp_error(src, dst, 3, code, quoted, info=mtu & 0xFFFF)


def icmp_frag_needed(src: int, dst: int, mtu: int, quoted: bytes) -> bytes:
    """ICMP "fragmentation needed and DF set" (type 3 code 4) announcing *mtu*."""
    return icmp_unreach(src, dst, 4, quoted, mtu=mtu)


def icmp6_error(
    src: int, dst: int, icmp_type: int, code: int, quoted: bytes, *, info: int = 0
) -> bytes:
    """An ICMPv6 error from *src* to *dst* quoting an IPv6 packet (up to 1280 bytes in
    all); *info* is the 32-bit field after the checksum (an MTU, a pointer)."""
    msg = bytearray(_ICMP6.pack(icmp_type, code, 0, info) + quoted[: 1280 - 48])
    c = csum_ipv6_magic(src, dst, len(msg), 58, csum_partial(msg, 0, len(msg)))
    struct.pack_into("!H", msg, 2, c)
    return ipv6(src, dst, 58, bytes(msg))


def icmp6_packet_too_big(src: int, dst: int, mtu: int, quoted: bytes) -> bytes:
    """ICMPv6 Packet Too Big from *src* to *dst* quoting an IPv6 packet."""
    return icmp6_error(src, dst, 2, 0, quoted, info=mtu)


def ipv4_fragment(
    src: int, dst: int, ident: int, offset: int, more: bool, data: bytes, *, proto: int = 17
) -> bytes:
    """One IPv4 fragment of datagram *ident*: *data* at byte *offset* (a multiple of 8)."""
    return ipv4(src, dst, proto, data, ident=ident, frag_off=(offset >> 3) | (0x2000 * more))


def ipv6_fragment(
    src: int, dst: int, ident: int, offset: int, more: bool, data: bytes, *, nexthdr: int = 17
) -> bytes:
    """One IPv6 fragment (a Fragment header, RFC 8200 §4.5) of packet *ident*."""
    frag = _FRAG6.pack(nexthdr, 0, (offset & 0xFFF8) | more, ident)
    return ipv6(src, dst, 44, frag + data)


def arp_request(sha: bytes, spa: int, tpa: int) -> bytes:
    """A broadcast ARP who-has *tpa* tell *spa* (an Ethernet frame)."""
    body = _ARP.pack(
        1, ETH_P_IP, 6, 4, 1, sha, spa.to_bytes(4, "big"), bytes(6), tpa.to_bytes(4, "big")
    )
    return eth(BROADCAST, sha, ETH_P_ARP, body)


def neigh_solicit(src_mac: bytes, src: int, target: int) -> bytes:
    """A Neighbour Solicitation for *target* from *src* with its link-layer address."""
    dst = solicited_node(target)
    msg = bytearray(struct.pack("!BBHI", 135, 0, 0, 0) + target.to_bytes(16, "big"))
    msg += bytes((1, 1)) + src_mac  # source link-layer address option
    c = csum_ipv6_magic(src, dst, len(msg), 58, csum_partial(msg, 0, len(msg)))
    struct.pack_into("!H", msg, 2, c)
    return eth(ipv6_eth_mc_map(dst), src_mac, ETH_P_IPV6, ipv6(src, dst, 58, bytes(msg), hlim=255))


# -- floods --------------------------------------------------------------------------------------


def _mac(rng: random.Random) -> bytes:
    return bytes((0x02,)) + rng.getrandbits(40).to_bytes(5, "big")


def syn_flood(
    n: int, dmac: bytes, smac: bytes, src_net: int, dst: int, dport: int, *, seed: int = 1
) -> Iterator[bytes]:
    """*n* SYNs from random sources in *src_net*/16 and random ports (spoofed, never answered)."""
    rng = random.Random(seed)
    for _ in range(n):
        src = src_net | rng.getrandbits(16)
        yield eth(
            dmac,
            smac,
            ETH_P_IP,
            tcp4(
                src,
                dst,
                rng.randrange(1024, 65536),
                dport,
                rng.getrandbits(32),
                options=SYN_OPTIONS,
            ),
        )


def syn_flood6(
    n: int, dmac: bytes, smac: bytes, src_net: int, dst: int, dport: int, *, seed: int = 1
) -> Iterator[bytes]:
    """The IPv6 SYN flood: random sources in *src_net*/64."""
    rng = random.Random(seed)
    for _ in range(n):
        src = src_net | rng.getrandbits(64)
        yield eth(
            dmac,
            smac,
            ETH_P_IPV6,
            tcp6(
                src,
                dst,
                rng.randrange(1024, 65536),
                dport,
                rng.getrandbits(32),
                options=SYN_OPTIONS,
            ),
        )


def frag_flood(
    n: int, dmac: bytes, smac: bytes, src_net: int, dst: int, *, size: int = 1200, seed: int = 1
) -> Iterator[bytes]:
    """First fragments of datagrams that never complete: a new (source, ID) each frame."""
    rng = random.Random(seed)
    data = bytes(size)
    for _ in range(n):
        src = src_net | rng.getrandbits(16)
        yield eth(dmac, smac, ETH_P_IP, ipv4_fragment(src, dst, rng.getrandbits(16), 0, True, data))


def frag_flood6(
    n: int, dmac: bytes, smac: bytes, src_net: int, dst: int, *, size: int = 1200, seed: int = 1
) -> Iterator[bytes]:
    """IPv6 first fragments that never complete."""
    rng = random.Random(seed)
    data = bytes(size)
    for _ in range(n):
        src = src_net | rng.getrandbits(64)
        yield eth(
            dmac, smac, ETH_P_IPV6, ipv6_fragment(src, dst, rng.getrandbits(32), 0, True, data)
        )


def arp_flood(n: int, src_net: int, target: int, *, seed: int = 1) -> Iterator[bytes]:
    """Who-has *target* from a new (MAC, address in *src_net*/16) each frame."""
    rng = random.Random(seed)
    for _ in range(n):
        yield arp_request(_mac(rng), src_net | rng.getrandbits(16), target)


def nd_flood(n: int, src_net: int, target: int, *, seed: int = 1) -> Iterator[bytes]:
    """Neighbour Solicitations for *target* from new (MAC, address in *src_net*/64)."""
    rng = random.Random(seed)
    for _ in range(n):
        yield neigh_solicit(_mac(rng), src_net | rng.getrandbits(64), target)


def icmp_err_flood(
    n: int, dmac: bytes, smac: bytes, src_net: int, dst: int, *, seed: int = 1
) -> Iterator[bytes]:
    """Port unreachables from random sources quoting random UDP datagrams of *dst*.

    The sources are new each frame: what grows the inetpeer cache of a host
    answering them (and of a router rate-limiting its own errors).
    """
    rng = random.Random(seed)
    for _ in range(n):
        src = src_net | rng.getrandbits(16)
        quoted = udp4(dst, src, rng.randrange(1024, 65536), 53, b"")
        yield eth(dmac, smac, ETH_P_IP, icmp_unreach(src, dst, 3, quoted))


def ptb_flood(
    n: int,
    dmac: bytes,
    smac: bytes,
    router: int,
    dst: int,
    quoted_net: int,
    sport: int,
    *,
    mtu: int = 1280,
    seed: int = 1,
) -> Iterator[bytes]:
    """Packet Too Big from *router* to *dst* quoting UDP from *dst*:*sport* to a new
    destination in *quoted_net*/64 each frame: one route exception per frame."""
    rng = random.Random(seed)
    for _ in range(n):
        quoted = udp6(dst, quoted_net | rng.getrandbits(64), sport, 53, bytes(1400))
        yield eth(dmac, smac, ETH_P_IPV6, icmp6_packet_too_big(router, dst, mtu, quoted))


def frag_needed_flood(
    n: int,
    dmac: bytes,
    smac: bytes,
    router: int,
    dst: int,
    quoted_net: int,
    sport: int,
    *,
    mtu: int = 576,
    seed: int = 1,
) -> Iterator[bytes]:
    """ICMP fragmentation-needed quoting UDP from *dst*:*sport* to a new
    destination in *quoted_net*/16 each frame: one next-hop exception per frame."""
    rng = random.Random(seed)
    for _ in range(n):
        quoted = udp4(dst, quoted_net | rng.getrandbits(16), sport, 53, bytes(8))
        yield eth(dmac, smac, ETH_P_IP, icmp_frag_needed(router, dst, mtu, quoted))
