"""Tests for netstack.wire.arp: the Ethernet/IPv4 ARP packet."""

from __future__ import annotations

import dpkt
from hypothesis import given, settings
from hypothesis import strategies as st

from netstack.wire import arp, ethernet
from netstack.wire.arp import ArpPacket

POISON = 0xA5

# "Who has 10.0.0.2? Tell 10.0.0.1" from 02:00:00:00:00:01.
FIXTURE = bytes.fromhex("0001 0800 06 04 0001 020000000001 0a000001 000000000000 0a000002")
FIXTURE_PKT = ArpPacket(
    ar_hrd=arp.ARPHRD_ETHER,
    ar_pro=ethernet.ETH_P_IP,
    ar_hln=ethernet.ETH_ALEN,
    ar_pln=4,
    ar_op=arp.ARPOP_REQUEST,
    ar_sha=b"\x02\x00\x00\x00\x00\x01",
    ar_sip=0x0A000001,
    ar_tha=ethernet.ZERO_MAC,
    ar_tip=0x0A000002,
)

u8 = st.integers(min_value=0, max_value=0xFF)
u16 = st.integers(min_value=0, max_value=0xFFFF)
u32 = st.integers(min_value=0, max_value=0xFFFFFFFF)
macs = st.binary(min_size=6, max_size=6)
arp_packets = st.builds(ArpPacket, u16, u16, u8, u8, u16, macs, u32, macs, u32)


# --- byte literals -------------------------------------------------------------------------------


def test_struct_sizes() -> None:
    assert arp.ARP_HDR.size == arp.ARP_HDR_LEN == 8
    assert arp.ARP_ETH_IP.size == arp.ARP_ETH_IP_LEN == 28


def test_parse_fixture() -> None:
    assert arp.parse(FIXTURE) == FIXTURE_PKT
    assert arp.parse(bytearray(FIXTURE)) == FIXTURE_PKT
    assert arp.parse(memoryview(FIXTURE)) == FIXTURE_PKT
    assert arp.parse(b"\x00" * 14 + FIXTURE, ethernet.ETH_HLEN) == FIXTURE_PKT


def test_fixed_header_struct_reads_the_first_eight_bytes() -> None:
    assert arp.ARP_HDR.unpack_from(FIXTURE) == tuple(FIXTURE_PKT[:5])


def test_pack_fixture() -> None:
    assert arp.pack(FIXTURE_PKT) == FIXTURE


def test_pack_into_writes_every_byte() -> None:
    buf = bytearray([POISON] * 28)
    arp.pack_into(buf, 0, FIXTURE_PKT)
    assert bytes(buf) == FIXTURE


def test_pack_into_at_offset_touches_only_its_bytes() -> None:
    buf = bytearray([POISON] * (14 + 28 + 18))  # after an Ethernet header, before padding
    arp.pack_into(buf, 14, FIXTURE_PKT)
    assert bytes(buf) == b"\xa5" * 14 + FIXTURE + b"\xa5" * 18


def test_dpkt_parses_fixture_in_a_frame() -> None:
    eth = ethernet.EthHdr(ethernet.BROADCAST, FIXTURE_PKT.ar_sha, ethernet.ETH_P_ARP)
    d = dpkt.ethernet.Ethernet(ethernet.pack(eth) + FIXTURE + bytes(18))
    assert (d.dst, d.src, d.type) == eth
    assert isinstance(d.data, dpkt.arp.ARP)
    assert (d.arp.op, d.arp.spa, d.arp.tpa) == (1, b"\x0a\x00\x00\x01", b"\x0a\x00\x00\x02")


# --- Hypothesis round-trips against dpkt ---------------------------------------------------------


@given(arp_packets)
def test_pack_parse_round_trip(pkt: ArpPacket) -> None:
    buf = bytearray([POISON] * 28)
    arp.pack_into(buf, 0, pkt)
    assert bytes(buf) == arp.pack(pkt)
    assert arp.parse(buf) == pkt


@settings(deadline=None)
@given(arp_packets)
def test_netstack_to_dpkt(pkt: ArpPacket) -> None:
    d = dpkt.arp.ARP(arp.pack(pkt))
    assert (d.hrd, d.pro, d.hln, d.pln, d.op) == pkt[:5]
    assert d.sha == pkt.ar_sha
    assert d.spa == pkt.ar_sip.to_bytes(4, "big")
    assert d.tha == pkt.ar_tha
    assert d.tpa == pkt.ar_tip.to_bytes(4, "big")


@settings(deadline=None)
@given(arp_packets)
def test_dpkt_to_netstack(pkt: ArpPacket) -> None:
    d = dpkt.arp.ARP(
        hrd=pkt.ar_hrd,
        pro=pkt.ar_pro,
        hln=pkt.ar_hln,
        pln=pkt.ar_pln,
        op=pkt.ar_op,
        sha=pkt.ar_sha,
        spa=pkt.ar_sip.to_bytes(4, "big"),
        tha=pkt.ar_tha,
        tpa=pkt.ar_tip.to_bytes(4, "big"),
    )
    assert arp.parse(bytes(d)) == pkt


@settings(deadline=None)
@given(macs, macs, u32, u32, st.sampled_from([arp.ARPOP_REQUEST, arp.ARPOP_REPLY]))
def test_dpkt_frame_to_netstack(sha: bytes, tha: bytes, sip: int, tip: int, op: int) -> None:
    frame = dpkt.ethernet.Ethernet(
        dst=ethernet.BROADCAST,
        src=sha,
        type=ethernet.ETH_P_ARP,
        data=dpkt.arp.ARP(
            op=op, sha=sha, spa=sip.to_bytes(4, "big"), tha=tha, tpa=tip.to_bytes(4, "big")
        ),
    )
    wire = bytes(frame)
    assert ethernet.parse(wire).h_proto == ethernet.ETH_P_ARP
    assert arp.parse(wire, ethernet.ETH_HLEN) == ArpPacket(
        arp.ARPHRD_ETHER, ethernet.ETH_P_IP, 6, 4, op, sha, sip, tha, tip
    )
