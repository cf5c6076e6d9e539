"""Tests for netstack.wire.ipv4: header layout, checksum helpers, addresses, options."""

from __future__ import annotations

import ipaddress

import dpkt
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from netstack.wire import ipv4
from netstack.wire.checksum import ip_fast_csum
from netstack.wire.ipv4 import IpHdr

POISON = 0xA5

# 192.168.0.1 -> 192.168.0.199, UDP, DF, TTL 64, total length 115, checksum 0xb861.
FIXTURE = bytes.fromhex("4500 0073 0000 4000 4011 b861 c0a80001 c0a800c7")
FIXTURE_HDR = IpHdr(
    version=4,
    ihl=5,
    tos=0,
    tot_len=0x73,
    id=0,
    frag_off=ipv4.IP_DF,
    ttl=64,
    protocol=ipv4.IPPROTO_UDP,
    check=0xB861,
    saddr=0xC0A80001,
    daddr=0xC0A800C7,
)

# 10.0.0.1 -> 10.0.0.2, ICMP, DF, TTL 64, with an id chosen so that the checksum is 0xfeff:
# decrementing the TTL adds 0x0100 to the checksum and lands exactly on 0xffff.
FEFF_FIXTURE = bytes.fromhex("4500 0054 27a7 4000 4001 feff 0a000001 0a000002")
# The same packet one hop later; a full recompute gives checksum 0x0000.
FEFF_FIXTURE_NEXT_HOP = bytes.fromhex("4500 0054 27a7 4000 3f01 0000 0a000001 0a000002")

# IHL 6 with four bytes of options: NOOP, NOOP, NOOP, END.
OPTIONS_FIXTURE = bytes.fromhex("4600 0018 0001 0000 4006 63dc 0a000001 0a000002 01010100")

u8 = st.integers(min_value=0, max_value=0xFF)
u16 = st.integers(min_value=0, max_value=0xFFFF)
u32 = st.integers(min_value=0, max_value=0xFFFFFFFF)


@st.composite
def ip_headers(draw: st.DrawFn, version: st.SearchStrategy[int] | None = None) -> IpHdr:
    return IpHdr(
        version=draw(version if version is not None else st.integers(min_value=0, max_value=15)),
        ihl=draw(st.integers(min_value=5, max_value=15)),
        tos=draw(u8),
        tot_len=draw(u16),
        id=draw(u16),
        frag_off=draw(u16),
        ttl=draw(u8),
        protocol=draw(u8),
        check=draw(u16),
        saddr=draw(u32),
        daddr=draw(u32),
    )


@st.composite
def headers_with_options(draw: st.DrawFn) -> tuple[IpHdr, bytes]:
    """A version-4 header and exactly ``(ihl - 5) * 4`` bytes of (arbitrary) option space."""
    hdr = draw(ip_headers(version=st.just(4)))
    opts = draw(st.binary(min_size=(hdr.ihl - 5) * 4, max_size=(hdr.ihl - 5) * 4))
    return hdr, opts


def build(hdr: IpHdr, opts: bytes, *, fill_check: bool) -> bytearray:
    """Options first, then the fixed header over a poisoned buffer (as ``pack_into`` expects)."""
    buf = bytearray(bytes([POISON]) * ipv4.IPV4_HLEN + opts)
    ipv4.pack_into(buf, 0, hdr, fill_check=fill_check)
    return buf


def flags_offset(d: dpkt.ip.IP) -> int:
    return int((d.rf << 15) | (d.df << 14) | (d.mf << 13) | d.offset)


# --- byte literals -------------------------------------------------------------------------------


def test_struct_sizes() -> None:
    assert ipv4.IPV4_HDR.size == ipv4.IPV4_HLEN == 20


def test_parse_fixture() -> None:
    assert ipv4.parse(FIXTURE) == FIXTURE_HDR
    assert ipv4.parse(bytearray(FIXTURE)) == FIXTURE_HDR
    assert ipv4.parse(memoryview(FIXTURE)) == FIXTURE_HDR
    assert ipv4.parse(b"\x00" * 3 + FIXTURE, 3) == FIXTURE_HDR


def test_pack_into_writes_every_header_byte() -> None:
    buf = bytearray([POISON] * 20)
    ipv4.pack_into(buf, 0, FIXTURE_HDR)
    assert bytes(buf) == FIXTURE


@pytest.mark.parametrize("given_check", [0, 0xB861, 0xFFFF, 0x1234])
def test_pack_into_fill_check_ignores_given_check(given_check: int) -> None:
    buf = bytearray([POISON] * 20)
    ipv4.pack_into(buf, 0, FIXTURE_HDR._replace(check=given_check), fill_check=True)
    assert bytes(buf) == FIXTURE


def test_pack_into_at_offset_touches_only_its_bytes() -> None:
    buf = bytearray([POISON] * 27)
    ipv4.pack_into(buf, 3, FIXTURE_HDR._replace(check=0), fill_check=True)
    assert bytes(buf) == b"\xa5" * 3 + FIXTURE + b"\xa5" * 4


def test_pack_into_fill_check_covers_options() -> None:
    hdr = ipv4.parse(OPTIONS_FIXTURE)
    assert (hdr.ihl, hdr.check) == (6, 0x63DC)
    assert ip_fast_csum(OPTIONS_FIXTURE, 0, 24) == 0
    assert dpkt.ip.IP(OPTIONS_FIXTURE).opts == b"\x01\x01\x01\x00"
    buf = bytearray([POISON] * 20) + OPTIONS_FIXTURE[20:]
    ipv4.pack_into(buf, 0, hdr._replace(check=0), fill_check=True)
    assert bytes(buf) == OPTIONS_FIXTURE


def test_ip_send_check_literal() -> None:
    buf = bytearray(b"\xa5" * 2 + FIXTURE)
    buf[12:14] = b"\xa5\xa5"  # stale checksum
    ipv4.ip_send_check(buf, 2)
    assert bytes(buf) == b"\xa5\xa5" + FIXTURE


def test_ip_decrease_ttl_literal() -> None:
    buf = bytearray(FIXTURE)
    assert ipv4.ip_decrease_ttl(buf, 0) == 63
    assert bytes(buf) == bytes.fromhex("4500 0073 0000 4000 3f11 b961 c0a80001 c0a800c7")


def test_ip_decrease_ttl_checksum_wraps_to_zero_not_0xffff() -> None:
    # Kernel: iph->check = check + (check >= 0xFFFF), i.e. 0xfeff + 0x0100 -> 0x0000, which is
    # what a full recompute (ip_send_check) gives; 0xffff is a second encoding of the same sum.
    assert ipv4.parse(FEFF_FIXTURE).check == 0xFEFF
    assert ip_fast_csum(FEFF_FIXTURE, 0, 20) == 0
    buf = bytearray(FEFF_FIXTURE)
    assert ipv4.ip_decrease_ttl(buf, 0) == 63
    assert ip_fast_csum(buf, 0, 20) == 0  # still valid either way
    assert bytes(buf) == FEFF_FIXTURE_NEXT_HOP


# --- Hypothesis round-trips against dpkt ---------------------------------------------------------


@given(ip_headers())
def test_pack_parse_round_trip(hdr: IpHdr) -> None:
    buf = bytearray([POISON] * 20)
    ipv4.pack_into(buf, 0, hdr)
    assert ipv4.parse(buf) == hdr


@settings(deadline=None)
@given(headers_with_options())
def test_netstack_to_dpkt(case: tuple[IpHdr, bytes]) -> None:
    hdr, opts = case
    buf = build(hdr, opts, fill_check=False)
    d = dpkt.ip.IP(bytes(buf))
    assert (d.v, d.hl, d.tos, d.len, d.id) == (hdr.version, hdr.ihl, hdr.tos, hdr.tot_len, hdr.id)
    assert flags_offset(d) == hdr.frag_off
    assert (d.ttl, d.p, d.sum) == (hdr.ttl, hdr.protocol, hdr.check)
    assert d.src == hdr.saddr.to_bytes(4, "big")
    assert d.dst == hdr.daddr.to_bytes(4, "big")
    assert d.opts == opts


@settings(deadline=None)
@given(headers_with_options())
def test_fill_check_matches_dpkt(case: tuple[IpHdr, bytes]) -> None:
    hdr, opts = case
    hdr = hdr._replace(tot_len=hdr.ihl * 4)  # no payload: what dpkt will write when it packs
    buf = build(hdr, opts, fill_check=True)
    check = ipv4.parse(buf).check
    zeroed = bytes(buf[:10]) + b"\x00\x00" + bytes(buf[12:])
    assert check == dpkt.in_cksum(zeroed)
    assert ip_fast_csum(buf, 0, hdr.ihl * 4) == 0
    # dpkt recomputes the same checksum when asked to (sum == 0 means "fill in").
    d = dpkt.ip.IP(bytes(buf))
    assert d.sum == check
    d.sum = 0
    assert bytes(d) == bytes(buf)


@settings(deadline=None)
@given(headers_with_options(), st.binary(max_size=40))
def test_dpkt_to_netstack(case: tuple[IpHdr, bytes], payload: bytes) -> None:
    hdr, opts = case
    d = dpkt.ip.IP(
        v=4,
        hl=hdr.ihl,
        tos=hdr.tos,
        id=hdr.id,
        rf=hdr.frag_off >> 15,
        df=(hdr.frag_off >> 14) & 1,
        mf=(hdr.frag_off >> 13) & 1,
        offset=hdr.frag_off & ipv4.IP_OFFSET,
        ttl=hdr.ttl,
        p=hdr.protocol,
        src=hdr.saddr.to_bytes(4, "big"),
        dst=hdr.daddr.to_bytes(4, "big"),
        opts=opts,
        data=payload,
    )
    wire = bytearray(bytes(d))  # dpkt fills tot_len and the checksum
    got = ipv4.parse(wire)
    hlen = hdr.ihl * 4
    assert got == hdr._replace(tot_len=hlen + len(payload), check=d.sum)
    assert ip_fast_csum(wire, 0, hlen) == 0
    again = bytearray(wire)
    again[10:12] = b"\xa5\xa5"
    ipv4.ip_send_check(again, 0)
    assert again == wire


@given(headers_with_options(), st.binary(max_size=5))
def test_ip_send_check_equals_fill_check(case: tuple[IpHdr, bytes], prefix: bytes) -> None:
    hdr, opts = case
    filled = build(hdr, opts, fill_check=True)
    buf = bytearray(prefix) + build(hdr, opts, fill_check=False) + b"\xa5"
    ipv4.ip_send_check(buf, len(prefix))
    assert buf == bytearray(prefix) + filled + b"\xa5"


# --- ip_decrease_ttl (RFC 1624 incremental update) -----------------------------------------------


def full_recompute_after_decrement(buf: bytearray) -> bytearray:
    ref = bytearray(buf)
    ref[8] -= 1
    ipv4.ip_send_check(ref, 0)
    return ref


@given(headers_with_options())
@example((ipv4.parse(FEFF_FIXTURE), b""))
def test_ip_decrease_ttl_matches_full_recompute_for_every_ttl(case: tuple[IpHdr, bytes]) -> None:
    hdr, opts = case
    for ttl in range(1, 256):
        buf = build(hdr._replace(ttl=ttl), opts, fill_check=True)
        expected = full_recompute_after_decrement(buf)
        assert ipv4.ip_decrease_ttl(buf, 0) == ttl - 1
        assert ip_fast_csum(buf, 0, hdr.ihl * 4) == 0
        assert buf == expected, f"ttl={ttl} check={ipv4.parse(buf).check:#06x}"


@given(headers_with_options())
def test_ip_decrease_ttl_chained_from_255_to_0(case: tuple[IpHdr, bytes]) -> None:
    hdr, opts = case
    buf = build(hdr._replace(ttl=255), opts, fill_check=True)
    for ttl in range(254, -1, -1):
        assert ipv4.ip_decrease_ttl(buf, 0) == ttl
        assert buf[8] == ttl
        assert ip_fast_csum(buf, 0, hdr.ihl * 4) == 0  # every hop still verifies


# --- addresses -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0.0.0.0", 0),
        ("255.255.255.255", 0xFFFFFFFF),
        ("10.0.0.1", 0x0A000001),
        ("192.168.0.199", 0xC0A800C7),
        ("127.0.0.1", ipv4.INADDR_LOOPBACK),
    ],
)
def test_aton_ntoa_literals(text: str, value: int) -> None:
    assert ipv4.aton(text) == value
    assert ipv4.ntoa(value) == text


@given(u32)
def test_aton_ntoa_round_trip(addr: int) -> None:
    text = ipv4.ntoa(addr)
    assert text == str(ipaddress.IPv4Address(addr))
    assert ipv4.aton(text) == addr


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1",
        "1.2.3",
        "1.2.3.4.5",
        "1..2.3",
        "1.2.3.",
        ".1.2.3",
        "256.0.0.1",
        "1.2.3.256",
        "1.2.3.1000",
        "0001.2.3.4",
        "-1.2.3.4",
        "+1.2.3.4",
        "1.2.3.-4",
        " 1.2.3.4",
        "1.2.3.4 ",
        "1.2.3.4\n",
        "1.2 .3.4",
        "0x1.2.3.4",
        "a.b.c.d",
        "1.2.3.4/24",
        "1_0.2.3.4",
        "1.2.3.\N{SUPERSCRIPT TWO}",
    ],
)
def test_aton_rejects_malformed(text: str) -> None:
    with pytest.raises(ValueError):
        ipv4.aton(text)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("\N{FULLWIDTH DIGIT ONE}.2.3.4", id="fullwidth"),
        pytest.param("\N{ARABIC-INDIC DIGIT ONE}.2.3.4", id="arabic-indic"),
        pytest.param("1.2.3.\N{DEVANAGARI DIGIT FOUR}", id="devanagari"),
    ],
)
def test_aton_rejects_non_ascii_digits(text: str) -> None:
    # str.isdigit() and int() accept any Unicode decimal digit; a dotted quad is ASCII only.
    with pytest.raises(ValueError):
        ipv4.aton(text)


@pytest.mark.parametrize("prefixlen", range(33))
def test_inet_make_mask(prefixlen: int) -> None:
    mask = ipv4.inet_make_mask(prefixlen)
    assert mask == int(ipaddress.IPv4Network(f"0.0.0.0/{prefixlen}").netmask)
    assert mask.bit_count() == prefixlen


def test_inet_make_mask_literals() -> None:
    assert ipv4.inet_make_mask(0) == 0
    assert ipv4.inet_make_mask(8) == 0xFF000000
    assert ipv4.inet_make_mask(24) == 0xFFFFFF00
    assert ipv4.inet_make_mask(31) == 0xFFFFFFFE
    assert ipv4.inet_make_mask(32) == 0xFFFFFFFF


@pytest.mark.parametrize(
    ("text", "multicast", "lbcast", "loopback", "zeronet", "local_multicast"),
    [
        ("0.0.0.0", False, False, False, True, False),
        ("0.255.255.255", False, False, False, True, False),
        ("1.0.0.0", False, False, False, False, False),
        ("10.0.0.1", False, False, False, False, False),
        ("126.255.255.255", False, False, False, False, False),
        ("127.0.0.0", False, False, True, False, False),
        ("127.255.255.255", False, False, True, False, False),
        ("128.0.0.0", False, False, False, False, False),
        ("223.255.255.255", False, False, False, False, False),
        ("224.0.0.0", True, False, False, False, True),
        ("224.0.0.251", True, False, False, False, True),
        ("224.0.0.255", True, False, False, False, True),
        ("224.0.1.0", True, False, False, False, False),
        ("239.255.255.250", True, False, False, False, False),
        ("240.0.0.0", False, False, False, False, False),
        ("255.255.255.254", False, False, False, False, False),
        ("255.255.255.255", False, True, False, False, False),
    ],
)
def test_address_predicates_literals(
    text: str, multicast: bool, lbcast: bool, loopback: bool, zeronet: bool, local_multicast: bool
) -> None:
    addr = ipv4.aton(text)
    assert ipv4.ipv4_is_multicast(addr) is multicast
    assert ipv4.ipv4_is_lbcast(addr) is lbcast
    assert ipv4.ipv4_is_loopback(addr) is loopback
    assert ipv4.ipv4_is_zeronet(addr) is zeronet
    assert ipv4.ipv4_is_local_multicast(addr) is local_multicast


@given(u32)
def test_address_predicates_match_ipaddress(addr: int) -> None:
    a = ipaddress.IPv4Address(addr)
    assert ipv4.ipv4_is_multicast(addr) is a.is_multicast
    assert ipv4.ipv4_is_loopback(addr) is a.is_loopback
    assert ipv4.ipv4_is_lbcast(addr) is (a == ipaddress.IPv4Address("255.255.255.255"))
    assert ipv4.ipv4_is_zeronet(addr) is (a in ipaddress.IPv4Network("0.0.0.0/8"))
    assert ipv4.ipv4_is_local_multicast(addr) is (a in ipaddress.IPv4Network("224.0.0.0/24"))


# --- options -------------------------------------------------------------------------------------

RR = bytes([ipv4.IPOPT_RR, 7, 4]) + b"\x00" * 4  # record route, one empty slot
RA = bytes([ipv4.IPOPT_RA, 4, 0, 0])  # router alert
TS = bytes([ipv4.IPOPT_TIMESTAMP, 12, 5, 0]) + b"\x00" * 8
NOOP = bytes([ipv4.IPOPT_NOOP])
END = bytes([ipv4.IPOPT_END])


@pytest.mark.parametrize(
    "opts",
    [
        b"",
        NOOP * 4,
        END * 4,
        END + b"\xff\xff\xff",  # nothing after END is looked at
        RA,
        RR + END,
        NOOP + RR,
        TS,
        RA + RR + NOOP + TS + END + b"\x07",
        bytes([0x99, 2]),  # unknown option, minimal length
        bytes([0x99, 3, 0]) + END,
    ],
)
def test_ip_options_well_formed(opts: bytes) -> None:
    assert ipv4.ip_options_length(opts, 0, len(opts)) is True
    assert ipv4.ip_options_length(b"\x07\x00" + opts + b"\x07", 2, len(opts)) is True


@pytest.mark.parametrize(
    "opts",
    [
        b"\x07",  # type with no room for a length byte
        NOOP * 3 + b"\x94",
        bytes([ipv4.IPOPT_RR, 0]) + b"\x00\x00",  # length < 2
        bytes([ipv4.IPOPT_RR, 1]) + b"\x00\x00",
        bytes([ipv4.IPOPT_RR, 8, 4]) + b"\x00" * 4,  # length runs past the option area
        RA + bytes([ipv4.IPOPT_RA, 5, 0, 0]),
        bytes([0x99, 0xFF]) + b"\x00" * 38,
    ],
)
def test_ip_options_malformed(opts: bytes) -> None:
    assert ipv4.ip_options_length(opts, 0, len(opts)) is False
    # Bytes past *optlen* in the buffer must not make a truncated option look complete.
    assert ipv4.ip_options_length(b"\x01\x01" + opts + b"\x00" * 255, 2, len(opts)) is False


@st.composite
def option_lists(draw: st.DrawFn) -> list[bytes]:
    options: list[bytes] = []
    for _ in range(draw(st.integers(min_value=0, max_value=8))):
        kind = draw(st.integers(min_value=2, max_value=255))
        value = draw(st.binary(max_size=10))
        options.append(bytes([kind, len(value) + 2]) + value)
        options.extend(NOOP for _ in range(draw(st.integers(min_value=0, max_value=2))))
    return options


@given(option_lists())
def test_ip_options_generated_lists_are_well_formed(options: list[bytes]) -> None:
    area = b"".join(options)
    assert ipv4.ip_options_length(area, 0, len(area)) is True


@given(option_lists().filter(lambda o: any(len(x) > 1 for x in o)), st.data())
def test_ip_options_truncated_last_option_is_malformed(
    options: list[bytes], draw: st.DataObject
) -> None:
    while len(options[-1]) == 1:  # drop trailing NOOPs so a TLV is last
        options.pop()
    area = b"".join(options)
    cut = draw.draw(st.integers(min_value=1, max_value=len(options[-1]) - 1), label="cut")
    assert ipv4.ip_options_length(area + b"\x00" * 64, 0, len(area) - cut) is False
