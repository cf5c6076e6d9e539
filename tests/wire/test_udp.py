"""Tests for netstack.wire.udp: the header, and the UDP checksum built from wire.checksum."""

from __future__ import annotations

import dpkt
from hypothesis import example, given, settings
from hypothesis import strategies as st

from netstack.wire import ipv4, udp
from netstack.wire.checksum import CSUM_MANGLED_0, csum_partial, csum_tcpudp_magic
from netstack.wire.udp import UdpHdr

POISON = 0xA5

FIXTURE = bytes.fromhex("3039 0035 000c 0000 deadbeef")  # 12345 -> 53, len 12, no checksum
FIXTURE_HDR = UdpHdr(source=12345, dest=53, len=12, check=0)

# The same datagram from 10.0.0.1 to 10.0.0.2 with its checksum, inside its IPv4 header.
SADDR, DADDR = 0x0A000001, 0x0A000002
FIXTURE_PACKET = bytes.fromhex(
    "4500 0020 0000 0000 4011 66cb 0a000001 0a000002  3039 0035 000c 1dc8  deadbeef"
)

u16 = st.integers(min_value=0, max_value=0xFFFF)
u32 = st.integers(min_value=0, max_value=0xFFFFFFFF)
payloads = st.binary(max_size=300)  # odd, even and empty lengths


def udp_check(saddr: int, daddr: int, datagram: bytes | bytearray) -> int:
    """The transmit checksum: over the datagram with check = 0, and 0 goes out as 0xffff."""
    s = csum_partial(datagram)
    return csum_tcpudp_magic(saddr, daddr, len(datagram), ipv4.IPPROTO_UDP, s) or CSUM_MANGLED_0


def build(saddr: int, daddr: int, source: int, dest: int, payload: bytes) -> bytearray:
    length = udp.UDP_HLEN + len(payload)
    buf = bytearray([POISON] * udp.UDP_HLEN) + payload
    udp.pack_into(buf, 0, UdpHdr(source, dest, length, 0))
    udp.pack_into(buf, 0, UdpHdr(source, dest, length, udp_check(saddr, daddr, buf)))
    return buf


def dpkt_packet(saddr: int, daddr: int, source: int, dest: int, payload: bytes) -> dpkt.ip.IP:
    return dpkt.ip.IP(
        src=saddr.to_bytes(4, "big"),
        dst=daddr.to_bytes(4, "big"),
        p=dpkt.ip.IP_PROTO_UDP,
        data=dpkt.udp.UDP(sport=source, dport=dest, ulen=8 + len(payload), data=payload),
    )


def verifies(saddr: int, daddr: int, datagram: bytes | bytearray) -> bool:
    """The receive check: the sum over the pseudo-header and datagram is negative zero."""
    s = csum_partial(datagram)
    return csum_tcpudp_magic(saddr, daddr, len(datagram), ipv4.IPPROTO_UDP, s) == 0


def zero_sum_payload(saddr: int, daddr: int, source: int, dest: int) -> bytes:
    """A two-byte payload for which the computed checksum is 0 (so 0xffff is sent)."""
    base = build(saddr, daddr, source, dest, b"\x00\x00")
    base[6:8] = b"\x00\x00"
    s = csum_partial(base)
    total = csum_tcpudp_magic(saddr, daddr, len(base), ipv4.IPPROTO_UDP, s)
    # total == ~sum, and sum + ~sum == 0xffff: ones'-complement zero, so the field would be 0.
    return total.to_bytes(2, "big")


# --- byte literals -------------------------------------------------------------------------------


def test_struct_sizes() -> None:
    assert udp.UDP_HDR.size == udp.UDP_HLEN == 8


def test_parse_fixture() -> None:
    assert udp.parse(FIXTURE) == FIXTURE_HDR
    assert udp.parse(bytearray(FIXTURE)) == FIXTURE_HDR
    assert udp.parse(memoryview(FIXTURE)) == FIXTURE_HDR
    assert udp.parse(FIXTURE_PACKET, 20) == FIXTURE_HDR._replace(check=0x1DC8)


def test_pack_into_writes_every_header_byte() -> None:
    buf = bytearray([POISON] * 12)  # poison: stale bytes must not survive
    udp.pack_into(buf, 0, FIXTURE_HDR)
    buf[8:] = FIXTURE[8:]
    assert bytes(buf) == FIXTURE


def test_pack_into_at_offset_touches_only_its_bytes() -> None:
    buf = bytearray([POISON] * 32)
    udp.pack_into(buf, 20, FIXTURE_HDR)
    assert bytes(buf) == b"\xa5" * 20 + FIXTURE[:8] + b"\xa5" * 4


def test_fixture_checksum() -> None:
    assert udp_check(SADDR, DADDR, FIXTURE) == 0x1DC8
    assert bytes(build(SADDR, DADDR, 12345, 53, FIXTURE[8:])) == FIXTURE_PACKET[20:]
    assert verifies(SADDR, DADDR, FIXTURE_PACKET[20:])
    assert bytes(dpkt_packet(SADDR, DADDR, 12345, 53, FIXTURE[8:])) == FIXTURE_PACKET


def test_computed_zero_is_sent_as_all_ones() -> None:
    payload = zero_sum_payload(SADDR, DADDR, 12345, 53)
    datagram = bytearray(FIXTURE[:8]) + payload
    datagram[4:6] = (8 + len(payload)).to_bytes(2, "big")
    magic = csum_tcpudp_magic(SADDR, DADDR, len(datagram), ipv4.IPPROTO_UDP, csum_partial(datagram))
    assert magic == 0
    built = build(SADDR, DADDR, 12345, 53, payload)
    assert udp.parse(built).check == CSUM_MANGLED_0
    assert verifies(SADDR, DADDR, built)
    d = dpkt_packet(SADDR, DADDR, 12345, 53, payload)
    bytes(d)
    assert d.data.sum == 0xFFFF  # dpkt applies the same RFC 768 rule


# --- Hypothesis round-trips against dpkt ---------------------------------------------------------


@given(st.builds(UdpHdr, u16, u16, u16, u16))
def test_pack_parse_round_trip(hdr: UdpHdr) -> None:
    buf = bytearray([POISON] * 8)
    udp.pack_into(buf, 0, hdr)
    assert udp.parse(buf) == hdr


@settings(deadline=None)
@given(u32, u32, u16, u16, payloads)
@example(SADDR, DADDR, 12345, 53, b"")
@example(SADDR, DADDR, 12345, 53, b"\x01")
@example(SADDR, DADDR, 12345, 53, zero_sum_payload(SADDR, DADDR, 12345, 53))
@example(0, 0, 0, 0, b"")
@example(0xFFFFFFFF, 0xFFFFFFFF, 0xFFFF, 0xFFFF, b"\xff" * 301)
def test_checksum_matches_dpkt(
    saddr: int, daddr: int, source: int, dest: int, payload: bytes
) -> None:
    d = dpkt_packet(saddr, daddr, source, dest, payload)
    wire = bytes(d)  # dpkt fills the IP and UDP checksums
    assert d.data.sum != 0
    unchecked = bytearray(8) + payload
    udp.pack_into(unchecked, 0, UdpHdr(source, dest, len(unchecked), 0))
    assert udp_check(saddr, daddr, unchecked) == d.data.sum
    assert bytes(build(saddr, daddr, source, dest, payload)) == wire[20:]


@settings(deadline=None)
@given(u32, u32, u16, u16, payloads)
def test_netstack_to_dpkt(saddr: int, daddr: int, source: int, dest: int, payload: bytes) -> None:
    datagram = build(saddr, daddr, source, dest, payload)
    hdr = ipv4.IpHdr(4, 5, 0, 20 + len(datagram), 0, 0, 64, ipv4.IPPROTO_UDP, 0, saddr, daddr)
    packet = bytearray(20) + datagram
    ipv4.pack_into(packet, 0, hdr, fill_check=True)
    d = dpkt.ip.IP(bytes(packet))
    assert isinstance(d.data, dpkt.udp.UDP)
    u = d.data
    assert (u.sport, u.dport, u.ulen, u.data) == (source, dest, len(datagram), payload)
    assert u.sum == udp.parse(datagram).check
    u.sum = 0  # make dpkt recompute both checksums from scratch
    d.sum = 0
    assert bytes(d) == bytes(packet)


@settings(deadline=None)
@given(u32, u32, u16, u16, payloads)
def test_dpkt_to_netstack(saddr: int, daddr: int, source: int, dest: int, payload: bytes) -> None:
    d = dpkt_packet(saddr, daddr, source, dest, payload)
    wire = bytes(d)
    assert udp.parse(wire, 20) == UdpHdr(source, dest, 8 + len(payload), d.data.sum)
    assert verifies(saddr, daddr, wire[20:])
    assert not verifies(saddr ^ 1, daddr, wire[20:])  # the pseudo-header is covered
