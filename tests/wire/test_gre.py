"""Tests for netstack.wire.gre: header layout, options order, checksum; dpkt as the oracle."""

from __future__ import annotations

import dpkt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netstack.wire import gre
from netstack.wire.checksum import csum_fold, csum_partial
from netstack.wire.gre import GRE_CSUM, GRE_KEY, GRE_SEQ, GreHdr

POISON = 0xA5

# C, K and S set, protocol IPv4, key 1, seq 7; checksum over "abcd" computed by hand below
FIXTURE = bytes.fromhex("b000 0800 0000 0000 00000001 00000007") + b"abcd"


def test_flag_values_are_the_kernels() -> None:
    assert (gre.GRE_CSUM, gre.GRE_ROUTING, gre.GRE_KEY, gre.GRE_SEQ) == (
        0x8000,
        0x4000,
        0x2000,
        0x1000,
    )
    assert gre.GRE_VERSION == 0x0007
    assert gre.ETH_P_TEB == 0x6558


@pytest.mark.parametrize(
    ("flags", "hlen"),
    [
        (0, 4),
        (GRE_CSUM, 8),
        (GRE_KEY, 8),
        (GRE_SEQ, 8),
        (GRE_KEY | GRE_SEQ, 12),
        (GRE_CSUM | GRE_KEY | GRE_SEQ, 16),
    ],
)
def test_gre_calc_hlen(flags: int, hlen: int) -> None:
    assert gre.gre_calc_hlen(flags) == hlen


def test_pack_into_writes_every_header_byte_and_fills_from_the_end() -> None:
    buf = bytearray([POISON] * 16) + b"abcd"
    n = gre.pack_into(buf, 0, GRE_CSUM | GRE_KEY | GRE_SEQ, 0x0800, key=1, seq=7)
    assert n == 16
    c = gre.gre_checksum(buf, 0, len(buf))
    buf[4], buf[5] = c >> 8, c & 0xFF
    expected = bytearray(FIXTURE)
    expected[4], expected[5] = c >> 8, c & 0xFF
    assert bytes(buf) == bytes(expected)
    # the whole packet now sums to zero, which is how the receiver checks it
    assert csum_fold(csum_partial(buf)) == 0


def test_parse_reads_the_options_present() -> None:
    hdr = gre.parse(gre.pack(GRE_KEY | GRE_SEQ, 0x6558, b"x", key=0xDEADBEEF, seq=2))
    assert hdr == GreHdr(GRE_KEY | GRE_SEQ, 0x6558, None, 0xDEADBEEF, 2)
    assert hdr.hlen == 12


def test_parse_refuses_truncated_headers() -> None:
    with pytest.raises(ValueError, match="truncated GRE header"):
        gre.parse(b"\x00\x00\x08")
    with pytest.raises(ValueError, match="truncated GRE options"):
        gre.parse(bytes.fromhex("2000 0800 0000"))


@settings(max_examples=200, derandomize=True, database=None, deadline=None)
@given(
    csum=st.booleans(),
    key=st.one_of(st.none(), st.integers(0, 0xFFFFFFFF)),
    seq=st.one_of(st.none(), st.integers(0, 0xFFFFFFFF)),
    proto=st.sampled_from([0x0800, 0x86DD, 0x6558, 0x0806]),
    payload=st.binary(max_size=64),
)
def test_round_trip_against_dpkt(
    csum: bool, key: int | None, seq: int | None, proto: int, payload: bytes
) -> None:
    flags = (GRE_CSUM if csum else 0) | (GRE_KEY if key is not None else 0)
    flags |= GRE_SEQ if seq is not None else 0
    wire = gre.pack(flags, proto, payload, key=key or 0, seq=seq or 0)
    d = dpkt.gre.GRE(wire)
    assert d.flags == flags and d.p == proto
    if key is not None:
        assert d.key == key
    if seq is not None:
        assert d.seq == seq
    ours = gre.parse(wire)
    assert (ours.key, ours.seq) == (key, seq)
    if csum:
        assert ours.csum == d.sum
        assert csum_fold(csum_partial(wire)) == 0  # verifies
    # dpkt builds the same bytes from the same fields (checksum copied in)
    mirror = dpkt.gre.GRE(flags=flags, p=proto, data=payload)
    if csum:
        mirror.sum, mirror.off = d.sum, 0
    if key is not None:
        mirror.key = key
    if seq is not None:
        mirror.seq = seq
    assert bytes(mirror) == wire
