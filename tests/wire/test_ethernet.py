"""Tests for netstack.wire.ethernet: the Ethernet II header and MAC address helpers."""

from __future__ import annotations

import dpkt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netstack.wire import ethernet
from netstack.wire.ethernet import EthHdr

POISON = 0xA5

# Broadcast ARP from 02:00:00:00:00:01.
FIXTURE = bytes.fromhex("ffffffffffff 020000000001 0806")
FIXTURE_HDR = EthHdr(ethernet.BROADCAST, b"\x02\x00\x00\x00\x00\x01", ethernet.ETH_P_ARP)

macs = st.binary(min_size=6, max_size=6)
ethertypes = st.integers(min_value=0, max_value=0xFFFF)

# dpkt decodes VLAN tags and MPLS labels itself, so it would not report these as the type.
_DPKT_DECAPSULATES = {0x8100, 0x88A8, 0x9100, 0x9200, 0x8847, 0x8848}
# Below 0x0600 the field is an 802.3 length, which dpkt decodes as LLC.
ethernet_ii_types = st.integers(min_value=ethernet.ETH_P_802_3_MIN, max_value=0xFFFF).filter(
    lambda t: t not in _DPKT_DECAPSULATES
)


# --- byte literals -------------------------------------------------------------------------------


def test_struct_sizes() -> None:
    assert ethernet.ETH_HDR.size == ethernet.ETH_HLEN == 14
    assert ethernet.ETH_FRAME_LEN == ethernet.ETH_HLEN + ethernet.ETH_DATA_LEN


def test_parse_fixture() -> None:
    assert ethernet.parse(FIXTURE) == FIXTURE_HDR
    assert ethernet.parse(bytearray(FIXTURE)) == FIXTURE_HDR
    assert ethernet.parse(memoryview(FIXTURE)) == FIXTURE_HDR
    assert ethernet.parse(b"\x00\x00" + FIXTURE + b"\x00", 2) == FIXTURE_HDR


def test_pack_fixture() -> None:
    assert ethernet.pack(FIXTURE_HDR) == FIXTURE


def test_pack_into_writes_every_header_byte() -> None:
    buf = bytearray([POISON] * 14)
    ethernet.pack_into(buf, 0, FIXTURE_HDR)
    assert bytes(buf) == FIXTURE


def test_pack_into_at_offset_touches_only_its_bytes() -> None:
    buf = bytearray([POISON] * 20)
    ethernet.pack_into(buf, 2, FIXTURE_HDR)
    assert bytes(buf) == b"\xa5\xa5" + FIXTURE + b"\xa5" * 4


def test_dpkt_parses_fixture() -> None:
    d = dpkt.ethernet.Ethernet(FIXTURE + bytes(28))
    assert (d.dst, d.src, d.type) == FIXTURE_HDR


# --- Hypothesis round-trips against dpkt ---------------------------------------------------------


@given(macs, macs, ethertypes)
def test_pack_parse_round_trip(dest: bytes, source: bytes, proto: int) -> None:
    hdr = EthHdr(dest, source, proto)
    buf = bytearray([POISON] * 14)
    ethernet.pack_into(buf, 0, hdr)
    assert bytes(buf) == ethernet.pack(hdr)
    assert ethernet.parse(buf) == hdr


@settings(deadline=None)
@given(macs, macs, ethernet_ii_types)
def test_netstack_to_dpkt(dest: bytes, source: bytes, proto: int) -> None:
    d = dpkt.ethernet.Ethernet(ethernet.pack(EthHdr(dest, source, proto)))
    assert (d.dst, d.src, d.type) == (dest, source, proto)


@settings(deadline=None)
@given(macs, macs, ethertypes, st.binary(max_size=46))
def test_dpkt_to_netstack(dest: bytes, source: bytes, proto: int, payload: bytes) -> None:
    wire = bytes(dpkt.ethernet.Ethernet(dst=dest, src=source, type=proto, data=payload))
    assert ethernet.parse(wire) == EthHdr(dest, source, proto)
    assert wire[ethernet.ETH_HLEN :] == payload


# --- MAC addresses -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "addr"),
    [
        ("00:00:00:00:00:00", ethernet.ZERO_MAC),
        ("ff:ff:ff:ff:ff:ff", ethernet.BROADCAST),
        ("02:00:00:00:00:01", b"\x02\x00\x00\x00\x00\x01"),
        ("01:00:5e:7f:ff:fa", b"\x01\x00\x5e\x7f\xff\xfa"),
    ],
)
def test_mac_ntoa_aton_literals(text: str, addr: bytes) -> None:
    assert ethernet.mac_ntoa(addr) == text
    assert ethernet.mac_aton(text) == addr


@pytest.mark.parametrize(
    "text",
    ["AA:BB:CC:DD:EE:FF", "aa-bb-cc-dd-ee-ff", "Aa:bB:cc:DD:ee:Ff", "aa:bb:cc:dd:ee:ff"],
)
def test_mac_aton_accepts_case_and_dashes(text: str) -> None:
    assert ethernet.mac_aton(text) == b"\xaa\xbb\xcc\xdd\xee\xff"


def test_mac_aton_accepts_single_digit_parts() -> None:
    assert ethernet.mac_aton("2:0:0:0:0:1") == b"\x02\x00\x00\x00\x00\x01"


@given(macs)
def test_mac_round_trip(addr: bytes) -> None:
    text = ethernet.mac_ntoa(addr)
    assert text == dpkt.utils.mac_to_str(addr)
    assert text == text.lower()
    assert len(text) == 17
    assert ethernet.mac_aton(text) == addr
    assert ethernet.mac_aton(text.upper().replace(":", "-")) == addr


@pytest.mark.parametrize(
    "text",
    [
        "",
        "02:00:00:00:00",
        "02:00:00:00:00:01:02",
        "02:00:00:00:00:01:",
        ":02:00:00:00:00:01",
        "02::00:00:00:01",
        "002:00:00:00:00:01",
        "02:00:00:00:00:0g",
        "02:00:00:00:00:xy",
        "0200.0000.0001",
        "020000000001",
        "02 00 00 00 00 01",
        "02:00:00:00:00:_1",
    ],
)
def test_mac_aton_rejects_malformed(text: str) -> None:
    with pytest.raises(ValueError):
        ethernet.mac_aton(text)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("+2:00:00:00:00:01", id="plus-sign"),
        pytest.param(" 2:00:00:00:00:01", id="leading-space"),
        pytest.param("02:00:00:00:00:1 ", id="trailing-space"),
        pytest.param("\N{FULLWIDTH DIGIT TWO}:00:00:00:00:01", id="fullwidth-digit"),
        pytest.param("\N{ARABIC-INDIC DIGIT TWO}:00:00:00:00:01", id="arabic-indic-digit"),
    ],
)
def test_mac_aton_rejects_non_hex_characters(text: str) -> None:
    # int(part, 16) strips whitespace and accepts a sign and non-ASCII decimal digits.
    with pytest.raises(ValueError):
        ethernet.mac_aton(text)


# --- predicates and multicast mapping ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "multicast", "broadcast", "zero", "valid"),
    [
        ("00:00:00:00:00:00", False, False, True, False),
        ("02:00:00:00:00:01", False, False, False, True),
        ("00:00:00:00:00:01", False, False, False, True),
        ("fe:ff:ff:ff:ff:ff", False, False, False, True),
        ("01:00:5e:00:00:01", True, False, False, False),
        ("33:33:00:00:00:01", True, False, False, False),
        ("ff:ff:ff:ff:ff:ff", True, True, False, False),
    ],
)
def test_address_predicates(
    text: str, multicast: bool, broadcast: bool, zero: bool, valid: bool
) -> None:
    addr = ethernet.mac_aton(text)
    assert ethernet.is_multicast_ether_addr(addr) is multicast
    assert ethernet.is_broadcast_ether_addr(addr) is broadcast
    assert ethernet.is_zero_ether_addr(addr) is zero
    assert ethernet.is_valid_ether_addr(addr) is valid


def test_is_valid_ether_addr_checks_length() -> None:
    assert ethernet.is_valid_ether_addr(b"\x02\x00\x00\x00\x01") is False
    assert ethernet.is_valid_ether_addr(b"\x02\x00\x00\x00\x00\x00\x01") is False


@given(macs)
def test_is_valid_is_unicast_and_non_zero(addr: bytes) -> None:
    assert ethernet.is_valid_ether_addr(addr) is (
        not ethernet.is_multicast_ether_addr(addr) and not ethernet.is_zero_ether_addr(addr)
    )


@pytest.mark.parametrize(
    ("group", "mac"),
    [
        (0xE0000001, "01:00:5e:00:00:01"),  # 224.0.0.1
        (0xE00000FB, "01:00:5e:00:00:fb"),  # 224.0.0.251 (mDNS)
        (0xEFFFFFFA, "01:00:5e:7f:ff:fa"),  # 239.255.255.250 (SSDP)
        (0xE0800001, "01:00:5e:00:00:01"),  # 224.128.0.1: the 24th bit is dropped
    ],
)
def test_ip_eth_mc_map(group: int, mac: str) -> None:
    assert ethernet.ip_eth_mc_map(group) == ethernet.mac_aton(mac)
    assert ethernet.is_multicast_ether_addr(ethernet.ip_eth_mc_map(group))
