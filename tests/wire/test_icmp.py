"""Tests for netstack.wire.icmp: the ICMP header and its checksum (ip_compute_csum)."""

from __future__ import annotations

import dpkt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netstack.wire import icmp
from netstack.wire.checksum import ip_compute_csum
from netstack.wire.icmp import IcmpHdr

POISON = 0xA5

# Echo request, id 0x1234, sequence 1, payload "abcdefgh", checksum 0x5435.
FIXTURE = bytes.fromhex("08 00 5435 1234 0001") + b"abcdefgh"
FIXTURE_HDR = IcmpHdr(type=icmp.ICMP_ECHO, code=0, checksum=0x5435, id=0x1234, sequence=1)

# dpkt's own echo-reply test vector.
DPKT_REPLY = bytes.fromhex("00 00 5387 0001 03d6") + b"ABCDEFGHIJKLMNOPQRSTUVWABCDEFGHI"

u8 = st.integers(min_value=0, max_value=0xFF)
u16 = st.integers(min_value=0, max_value=0xFFFF)
icmp_headers = st.builds(IcmpHdr, u8, u8, u16, u16, u16)
echo_types = st.sampled_from([icmp.ICMP_ECHO, icmp.ICMP_ECHOREPLY])
payloads = st.binary(max_size=200)


def build(hdr: IcmpHdr, payload: bytes) -> bytearray:
    """Header and payload with the checksum filled in, as the ICMP output path does."""
    buf = bytearray([POISON] * icmp.ICMP_HLEN) + payload
    icmp.pack_into(buf, 0, hdr._replace(checksum=0))
    icmp.pack_into(buf, 0, hdr._replace(checksum=ip_compute_csum(buf)))
    return buf


# --- byte literals -------------------------------------------------------------------------------


def test_struct_sizes() -> None:
    assert icmp.ICMP_HDR.size == icmp.ICMP_HLEN == 8


def test_parse_fixture() -> None:
    assert icmp.parse(FIXTURE) == FIXTURE_HDR
    assert icmp.parse(bytearray(FIXTURE)) == FIXTURE_HDR
    assert icmp.parse(memoryview(FIXTURE)) == FIXTURE_HDR
    assert icmp.parse(b"\x00" * 20 + FIXTURE, 20) == FIXTURE_HDR


def test_pack_into_writes_every_header_byte() -> None:
    buf = bytearray([POISON] * 16)
    icmp.pack_into(buf, 0, FIXTURE_HDR)
    buf[8:] = FIXTURE[8:]
    assert bytes(buf) == FIXTURE


def test_pack_into_at_offset_touches_only_its_bytes() -> None:
    buf = bytearray([POISON] * 30)
    icmp.pack_into(buf, 20, FIXTURE_HDR)
    assert bytes(buf) == b"\xa5" * 20 + FIXTURE[:8] + b"\xa5" * 2


def test_fixture_checksum() -> None:
    assert ip_compute_csum(FIXTURE) == 0  # the receive check
    assert bytes(build(FIXTURE_HDR, FIXTURE[8:])) == FIXTURE


def test_dpkt_reply_vector() -> None:
    assert icmp.parse(DPKT_REPLY) == IcmpHdr(icmp.ICMP_ECHOREPLY, 0, 0x5387, 1, 0x03D6)
    assert ip_compute_csum(DPKT_REPLY) == 0
    assert bytes(build(icmp.parse(DPKT_REPLY), DPKT_REPLY[8:])) == DPKT_REPLY


def test_frag_needed_mtu_is_the_sequence_half() -> None:
    # RFC 1191: type 3 code 4, unused(16) then next-hop MTU(16).
    inner = bytes(dpkt.ip.IP(src=b"\x0a\x00\x00\x01", dst=b"\x0a\x00\x00\x02", p=17))
    msg = bytes(
        dpkt.icmp.ICMP(
            type=icmp.ICMP_DEST_UNREACH,
            code=icmp.ICMP_FRAG_NEEDED,
            data=dpkt.icmp.ICMP.Unreach(mtu=1400, data=inner),
        )
    )
    hdr = icmp.parse(msg)
    assert (hdr.type, hdr.code, hdr.id, hdr.sequence) == (3, 4, 0, 1400)
    assert ip_compute_csum(msg) == 0


def test_redirect_gateway_spans_id_and_sequence() -> None:
    msg = bytes(
        dpkt.icmp.ICMP(
            type=icmp.ICMP_REDIRECT,
            code=icmp.ICMP_REDIR_HOST,
            data=dpkt.icmp.ICMP.Redirect(gw=0x0A000001, data=b""),
        )
    )
    hdr = icmp.parse(msg)
    assert (hdr.id << 16) | hdr.sequence == 0x0A000001


@pytest.mark.parametrize("icmp_type", range(256))
def test_icmp_is_err(icmp_type: int) -> None:
    assert icmp.icmp_is_err(icmp_type) is (icmp_type in {3, 4, 5, 11, 12})


# --- Hypothesis round-trips against dpkt ---------------------------------------------------------


@given(icmp_headers)
def test_pack_parse_round_trip(hdr: IcmpHdr) -> None:
    buf = bytearray([POISON] * 8)
    icmp.pack_into(buf, 0, hdr)
    assert icmp.parse(buf) == hdr


@settings(deadline=None)
@given(icmp_headers)
def test_netstack_header_to_dpkt(hdr: IcmpHdr) -> None:
    buf = bytearray(8)
    icmp.pack_into(buf, 0, hdr)
    d = dpkt.icmp.ICMP(bytes(buf))
    assert (d.type, d.code, d.sum) == hdr[:3]
    # dpkt's header is 4 bytes; the rest ("un") is its data, decoded or not depending on type.
    assert bytes(d.data) == hdr.id.to_bytes(2, "big") + hdr.sequence.to_bytes(2, "big")


@settings(deadline=None)
@given(u8, u8, u16, u16, payloads)
def test_checksum_matches_dpkt_for_any_type(
    icmp_type: int, code: int, ident: int, seq: int, payload: bytes
) -> None:
    buf = build(IcmpHdr(icmp_type, code, 0, ident, seq), payload)
    check = icmp.parse(buf).checksum
    zeroed = bytes(buf[:2]) + b"\x00\x00" + bytes(buf[4:])
    assert check == dpkt.in_cksum(zeroed)
    assert ip_compute_csum(buf) == 0


@settings(deadline=None)
@given(echo_types, u8, u16, u16, payloads)
def test_echo_netstack_to_dpkt(
    icmp_type: int, code: int, ident: int, seq: int, payload: bytes
) -> None:
    buf = build(IcmpHdr(icmp_type, code, 0, ident, seq), payload)
    d = dpkt.icmp.ICMP(bytes(buf))
    assert (d.type, d.code, d.sum) == (icmp_type, code, icmp.parse(buf).checksum)
    assert (d.echo.id, d.echo.seq, d.echo.data) == (ident, seq, payload)
    d.sum = 0  # ask dpkt to recompute
    assert bytes(d) == bytes(buf)


@settings(deadline=None)
@given(echo_types, u8, u16, u16, payloads)
def test_echo_dpkt_to_netstack(
    icmp_type: int, code: int, ident: int, seq: int, payload: bytes
) -> None:
    d = dpkt.icmp.ICMP(
        type=icmp_type, code=code, data=dpkt.icmp.ICMP.Echo(id=ident, seq=seq, data=payload)
    )
    wire = bytes(d)
    assert icmp.parse(wire) == IcmpHdr(icmp_type, code, d.sum, ident, seq)
    assert ip_compute_csum(wire) == 0
    assert wire == bytes(build(icmp.parse(wire), payload))
