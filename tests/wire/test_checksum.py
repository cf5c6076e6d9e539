"""Tests for netstack.wire.checksum: the Internet checksum and its algebra.

Two oracles: a deliberately naive word-by-word sum written here, and dpkt's
``in_cksum`` (an independent implementation with its own byte-order trick).
"""

from __future__ import annotations

import struct

import dpkt
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from netstack.wire import checksum
from netstack.wire.checksum import (
    CSUM_MANGLED_0,
    csum_add,
    csum_fold,
    csum_partial,
    csum_sub,
    csum_tcpudp_magic,
    csum_tcpudp_nofold,
    ip_compute_csum,
    ip_fast_csum,
)

partial_sums = st.integers(min_value=0, max_value=0xFFFF)
addrs = st.integers(min_value=0, max_value=0xFFFFFFFF)
data = st.binary(max_size=300)


def naive_sum(buf: bytes) -> int:
    """RFC 1071 section 4.1, transliterated: add 16-bit words, fold the carries."""
    if len(buf) % 2:
        buf += b"\x00"
    total = 0
    for (word,) in struct.iter_unpack("!H", buf):
        total += word
        total = (total & 0xFFFF) + (total >> 16)
    return total


def swab16(x: int) -> int:
    return ((x << 8) | (x >> 8)) & 0xFFFF


def equivalent(a: int, b: int) -> bool:
    """Equal as ones'-complement values (0x0000 and 0xFFFF are both zero)."""
    return a % 0xFFFF == b % 0xFFFF


# --- byte literals -------------------------------------------------------------------------------

# RFC 1071 section 3, "numerical examples": the sum of these words is 0xddf2.
RFC1071_BYTES = bytes.fromhex("0001 f203 f4f5 f6f7")

# An IPv4 header (192.168.0.1 -> 192.168.0.199, UDP, DF, TTL 64) whose checksum is 0xb861.
IPV4_HEADER = bytes.fromhex("4500 0073 0000 4000 4011 0000 c0a80001 c0a800c7")
IPV4_HEADER_CHECK = 0xB861


def test_rfc1071_example() -> None:
    assert csum_partial(RFC1071_BYTES) == 0xDDF2
    assert ip_compute_csum(RFC1071_BYTES) == 0x220D
    assert dpkt.in_cksum(RFC1071_BYTES) == 0x220D


def test_ip_fast_csum_known_header() -> None:
    assert ip_fast_csum(IPV4_HEADER, 0, 20) == IPV4_HEADER_CHECK
    filled = IPV4_HEADER[:10] + IPV4_HEADER_CHECK.to_bytes(2, "big") + IPV4_HEADER[12:]
    assert ip_fast_csum(filled, 0, 20) == 0  # the receive check


def test_csum_mangled_0_is_negative_zero() -> None:
    assert CSUM_MANGLED_0 == 0xFFFF


@pytest.mark.parametrize(
    ("buf", "expected"),
    [
        (b"", 0),
        (b"\x00", 0),
        (b"\x00\x00\x00\x00", 0),
        (b"\xff\xff", 0xFFFF),  # non-zero input summing to zero is "negative zero"
        (b"\xff\xff\xff\xff", 0xFFFF),
        (b"\x12\x34\xed\xcb", 0xFFFF),  # 0x1234 + 0xedcb == 0xffff
        (b"\x80\x00\x80\x00", 0x0001),  # end-around carry
        (b"\xff\xfe\x00\x02", 0x0001),
        (b"\x01", 0x0100),  # odd byte is the high byte of a zero-padded word
        (b"\x00\x01\x02", 0x0201),
    ],
)
def test_csum_partial_literals(buf: bytes, expected: int) -> None:
    assert csum_partial(buf) == expected
    assert csum_partial(bytearray(buf)) == expected
    assert csum_partial(memoryview(buf)) == expected


def test_csum_fold_literals() -> None:
    assert csum_fold(0) == 0xFFFF
    assert csum_fold(0xFFFF) == 0
    assert csum_fold(0x1234) == 0xEDCB
    assert csum_fold(0x1FFFE) == 0  # 0xfffe + 1
    assert csum_fold(0x10000) == 0xFFFE  # 0x0000 + 1
    assert csum_fold(0xFFFFFFFF) == 0  # 0xffff + 0xffff -> 0x1fffe -> 0xffff


# --- csum_partial --------------------------------------------------------------------------------


@given(data)
def test_csum_partial_matches_naive_sum(buf: bytes) -> None:
    assert csum_partial(buf) == naive_sum(buf)


@settings(deadline=None)
@given(data)
def test_ip_compute_csum_matches_dpkt(buf: bytes) -> None:
    assert ip_compute_csum(buf) == dpkt.in_cksum(buf)


@given(data)
def test_csum_partial_is_zero_only_for_all_zero_input(buf: bytes) -> None:
    s = csum_partial(buf)
    assert 0 <= s <= 0xFFFF
    assert (s == 0) == (buf.count(0) == len(buf))


@given(st.integers(min_value=1, max_value=64))
def test_csum_partial_negative_zero_for_all_ones(nwords: int) -> None:
    assert csum_partial(b"\xff\xff" * nwords) == 0xFFFF
    assert ip_compute_csum(b"\xff\xff" * nwords) == 0


@given(data.filter(lambda b: len(b) % 2 == 1))
def test_csum_partial_pads_odd_length_with_zero(buf: bytes) -> None:
    assert csum_partial(buf) == csum_partial(buf + b"\x00")


@given(data, partial_sums)
@example(b"", 0x1234)
@example(b"\x00\x00", 0x1234)
@example(b"\xff\xff", 0xFFFF)
@example(b"\x00\x01", 0xFFFF)
def test_csum_partial_initial_is_added(buf: bytes, initial: int) -> None:
    s = csum_partial(buf, initial=initial)
    assert 0 <= s <= 0xFFFF
    assert s == csum_add(initial, csum_partial(buf))
    assert equivalent(s, naive_sum(buf) + initial)


@given(st.binary(min_size=2, max_size=200), st.data())
def test_csum_partial_start_end(buf: bytes, draw: st.DataObject) -> None:
    start = draw.draw(st.integers(min_value=0, max_value=len(buf)), label="start")
    end = draw.draw(st.integers(min_value=start, max_value=len(buf)), label="end")
    assert csum_partial(buf, start, end) == csum_partial(buf[start:end])
    assert csum_partial(buf, start) == csum_partial(buf[start:])


def test_csum_partial_empty_range_returns_initial() -> None:
    assert csum_partial(b"\x12\x34", 2, 2, initial=0xABCD) == 0xABCD
    assert csum_partial(b"\x12\x34", 2, 1, initial=0xABCD) == 0xABCD
    assert csum_partial(b"", initial=0xFFFF) == 0xFFFF


@given(data, data)
def test_csum_partial_split_at_even_offset_is_csum_add(a: bytes, b: bytes) -> None:
    assume(len(a) % 2 == 0)
    whole = csum_partial(a + b)
    assert whole == csum_add(csum_partial(a), csum_partial(b))
    assert whole == csum_partial(b, initial=csum_partial(a))  # chaining, as skb frags do
    assert whole == csum_partial(a + b, len(a), initial=csum_partial(a, 0, len(a)))


@given(data, data)
def test_csum_partial_split_at_odd_offset_needs_byte_swap(a: bytes, b: bytes) -> None:
    # The kernel's csum_block_add() rotates the second sum by 8 bits at an odd offset.
    assume(len(a) % 2 == 1)
    assert csum_partial(a + b) == csum_add(csum_partial(a), swab16(csum_partial(b)))


# --- csum_add / csum_sub / csum_fold -------------------------------------------------------------


@given(partial_sums, partial_sums)
def test_csum_add_is_ones_complement_addition(a: int, b: int) -> None:
    s = csum_add(a, b)
    assert 0 <= s <= 0xFFFF
    assert s == csum_add(b, a)
    assert equivalent(s, a + b)
    assert (s == 0) == (a == 0 and b == 0)


@given(partial_sums, partial_sums, partial_sums)
def test_csum_add_is_associative(a: int, b: int, c: int) -> None:
    assert csum_add(csum_add(a, b), c) == csum_add(a, csum_add(b, c))


@given(partial_sums, partial_sums)
def test_csum_sub_undoes_csum_add(a: int, b: int) -> None:
    s = csum_sub(csum_add(a, b), b)
    assert 0 <= s <= 0xFFFF
    assert equivalent(s, a)


@given(data, data)
@pytest.mark.slow
def test_csum_sub_removes_a_block(a: bytes, b: bytes) -> None:
    assume(len(a) % 2 == 0)
    rest = csum_sub(csum_partial(a + b), csum_partial(a))
    assert equivalent(rest, csum_partial(b))


@given(data)
def test_csum_fold_of_unfolded_word_sum(buf: bytes) -> None:
    padded = buf + b"\x00" * (len(buf) % 2)
    unfolded = sum(w for (w,) in struct.iter_unpack("!H", padded))  # a plain, carry-less sum
    assert csum_fold(unfolded) == ip_compute_csum(buf)


@given(st.integers(min_value=0, max_value=2**64))
def test_csum_fold_is_complement_of_ones_complement_residue(s: int) -> None:
    folded = csum_fold(s)
    assert 0 <= folded <= 0xFFFF
    assert equivalent(~folded & 0xFFFF, s)
    if s:
        assert folded != 0xFFFF  # a non-zero sum never folds to +0's complement


# --- ip_fast_csum --------------------------------------------------------------------------------


@st.composite
def ip_header_bytes(draw: st.DrawFn) -> bytes:
    """A random IPv4 header (20..60 bytes) with its checksum field zeroed."""
    ihl = draw(st.integers(min_value=5, max_value=15))
    raw = bytearray(draw(st.binary(min_size=ihl * 4, max_size=ihl * 4)))
    raw[0] = 0x40 | ihl
    raw[10:12] = b"\x00\x00"
    return bytes(raw)


@settings(deadline=None)
@given(ip_header_bytes(), st.binary(max_size=7))
def test_ip_fast_csum_matches_dpkt(hdr: bytes, prefix: bytes) -> None:
    hlen = len(hdr)
    buf = prefix + hdr + b"\xa5\xa5"  # odd and even offsets; trailing bytes are not covered
    check = ip_fast_csum(buf, len(prefix), hlen)
    assert check == dpkt.in_cksum(hdr)
    assert check == ip_compute_csum(hdr)
    filled = hdr[:10] + check.to_bytes(2, "big") + hdr[12:]
    assert ip_fast_csum(filled, 0, hlen) == 0


@settings(deadline=None)
@given(ip_header_bytes(), st.binary(max_size=7), st.sampled_from([bytes, bytearray, memoryview]))
def test_ip_fast_csum_is_the_naive_sum_in_every_buffer_type(
    hdr: bytes, prefix: bytes, kind: type
) -> None:
    # a 20-byte header is read by a struct unpack, a longer one by a slice: both
    # must be RFC 1071's sum, over bytes, a bytearray (skb->data) or a memoryview
    buf = kind(bytearray(prefix + hdr + b"\xa5\xa5"))
    check = ip_fast_csum(buf, len(prefix), len(hdr))
    assert check == ~naive_sum(hdr) & 0xFFFF


def test_ip_fast_csum_negative_zero() -> None:
    # A header whose words sum to 0xffff checks to 0 (valid), not 0xffff.
    hdr = bytes.fromhex("ffff") + b"\x00" * 18
    assert ip_fast_csum(hdr, 0, 20) == 0
    assert ip_fast_csum(b"\x00" * 20, 0, 20) == 0xFFFF


# --- pseudo-header (UDP/TCP) ---------------------------------------------------------------------


def pseudo_header(saddr: int, daddr: int, length: int, proto: int) -> bytes:
    return struct.pack("!IIxBH", saddr, daddr, proto, length)


@settings(deadline=None)
@given(addrs, addrs, st.integers(min_value=0, max_value=255), data)
def test_csum_tcpudp_magic_is_checksum_over_pseudo_header(
    saddr: int, daddr: int, proto: int, payload: bytes
) -> None:
    length = len(payload)
    magic = csum_tcpudp_magic(saddr, daddr, length, proto, csum_partial(payload))
    expected = pseudo_header(saddr, daddr, length, proto) + payload
    assert magic == ip_compute_csum(expected)
    assert magic == dpkt.in_cksum(expected)


@given(addrs, addrs, st.integers(min_value=0, max_value=0xFFFF), partial_sums)
def test_csum_tcpudp_nofold_folds_to_magic(saddr: int, daddr: int, length: int, s: int) -> None:
    nofold = csum_tcpudp_nofold(saddr, daddr, length, 17, s)
    assert 0 <= nofold <= 0xFFFF
    assert csum_fold(nofold) == csum_tcpudp_magic(saddr, daddr, length, 17, s)
    assert equivalent(nofold, csum_partial(pseudo_header(saddr, daddr, length, 17), initial=s))


def halves_folded_twice(saddr: int, daddr: int, length: int, proto: int, s: int) -> int:
    """csum_tcpudp_nofold() as the kernel's C reads: 16-bit halves added, carries folded."""
    t = s + (saddr >> 16) + (saddr & 0xFFFF) + (daddr >> 16) + (daddr & 0xFFFF) + proto + length
    t = (t & 0xFFFF) + (t >> 16)
    return (t & 0xFFFF) + (t >> 16)


@given(
    addrs, addrs, st.integers(min_value=0, max_value=0xFFFF), st.sampled_from([6, 17]), partial_sums
)
@example(0, 0, 0, 0, 0)  # all zero: +0
@example(0xFFFE0000, 0, 0, 0, 1)  # a multiple of 0xFFFF: -0 (0xFFFF)
@example(0xFFFFFFFF, 0xFFFFFFFF, 0xFFFF, 17, 0xFFFF)
def test_csum_tcpudp_nofold_is_the_halves_folded_bit_for_bit(
    saddr: int, daddr: int, length: int, proto: int, s: int
) -> None:
    # reduced by one % of the whole sum, not by halves and carries: the same value,
    # negative zero included (udp_sendmsg's CHECKSUM_PARTIAL field is this sum)
    expected = halves_folded_twice(saddr, daddr, length, proto, s)
    assert csum_tcpudp_nofold(saddr, daddr, length, proto, s) == expected


def test_module_exports() -> None:
    assert sorted(checksum.__all__) == sorted(
        [
            "CSUM_MANGLED_0",
            "csum_add",
            "csum_block_sub",
            "csum_fold",
            "csum_partial",
            "csum_sub",
            "csum_tcpudp_magic",
            "csum_tcpudp_nofold",
            "ip_compute_csum",
            "ip_fast_csum",
        ]
    )
