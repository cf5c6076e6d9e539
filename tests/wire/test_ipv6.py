"""Tests for netstack.wire.ipv6 and netstack.wire.icmpv6 against dpkt and ``ipaddress``."""

from __future__ import annotations

import ipaddress
import socket
import struct

import dpkt
from hypothesis import given
from hypothesis import strategies as st

from netstack.wire import icmpv6, ipv6
from netstack.wire.checksum import csum_partial
from netstack.wire.ipv6 import Ipv6Hdr

u8 = st.integers(min_value=0, max_value=0xFF)
u16 = st.integers(min_value=0, max_value=0xFFFF)
addr128 = st.integers(min_value=0, max_value=(1 << 128) - 1)

# 2001:db8::1 -> 2001:db8::2, UDP, hop limit 64, payload length 12, traffic class 0xb8,
# flow label 0x12345 — written out byte by byte.
FIXTURE = bytes.fromhex(
    "6b812345 000c 11 40 20010db8000000000000000000000001 20010db8000000000000000000000002"
)


def test_fixture_parses_as_written() -> None:
    h = ipv6.parse(FIXTURE)
    assert h == Ipv6Hdr(
        6, 0xB8, 0x12345, 12, 17, 64, ipv6.aton("2001:db8::1"), ipv6.aton("2001:db8::2")
    )
    assert ipv6.pack(h) == FIXTURE
    d = dpkt.ip6.IP6(FIXTURE + bytes(12))
    assert (d.v, d.fc, d.flow, d.plen, d.nxt, d.hlim) == (6, 0xB8, 0x12345, 12, 17, 64)


@given(tclass=u8, flow=st.integers(0, 0xFFFFF), plen=u16, nxt=u8, hlim=u8, s=addr128, d=addr128)
def test_header_round_trips_against_dpkt(
    tclass: int, flow: int, plen: int, nxt: int, hlim: int, s: int, d: int
) -> None:
    h = Ipv6Hdr(6, tclass, flow, plen, nxt, hlim, s, d)
    raw = ipv6.pack(h)
    assert ipv6.parse(raw) == h
    p = dpkt.ip6.IP6()
    p.fc, p.flow, p.plen, p.nxt, p.hlim = tclass, flow, plen, nxt, hlim
    p.src, p.dst = s.to_bytes(16, "big"), d.to_bytes(16, "big")
    p.data = b""
    assert bytes(p)[:40] == raw


@given(addr128)
def test_text_forms_match_inet_ntop_and_pton(addr: int) -> None:
    text = ipv6.ntoa(addr)
    assert text == socket.inet_ntop(socket.AF_INET6, addr.to_bytes(16, "big"))
    assert ipv6.aton(text) == addr
    assert ipaddress.IPv6Address(text) == ipaddress.IPv6Address(addr)


@given(addr128)
def test_solicited_node_and_multicast_mac(addr: int) -> None:
    group = ipv6.solicited_node(addr)
    assert ipaddress.IPv6Address(group) in ipaddress.IPv6Network("ff02::1:ff00:0/104")
    assert group & 0xFFFFFF == addr & 0xFFFFFF
    mac = ipv6.ipv6_eth_mc_map(group)
    assert mac[:3] == b"\x33\x33\xff" and mac[3:] == (addr & 0xFFFFFF).to_bytes(3, "big")


def test_eui64_and_address_types() -> None:
    mac = bytes.fromhex("020000000001")
    assert ipv6.ntoa((0xFE80 << 112) | ipv6.eui64_from_mac(mac)) == "fe80::ff:fe00:1"
    assert ipv6.isatap_ifid(0xC0000201) == 0x00005EFE_C0000201  # 192.0.2.1: test-net
    assert ipv6.isatap_ifid(0xC6336402) == 0x02005EFE_C6336402  # 198.51.100.2: global
    t = ipv6.ipv6_addr_type
    assert t(ipv6.aton("fe80::1")) & ipv6.IPV6_ADDR_LINKLOCAL
    assert t(ipv6.aton("::1")) & ipv6.IPV6_ADDR_LOOPBACK
    assert t(ipv6.aton("::192.0.2.2")) & ipv6.IPV6_ADDR_COMPATv4
    assert t(ipv6.aton("::ffff:192.0.2.2")) & ipv6.IPV6_ADDR_MAPPED
    assert t(ipv6.aton("ff02::1")) & ipv6.IPV6_ADDR_MULTICAST
    assert t(0) == ipv6.IPV6_ADDR_ANY


@given(s=addr128, d=addr128, payload=st.binary(max_size=64), sport=u16, dport=u16)
def test_pseudo_header_checksum_matches_dpkt_udp(
    s: int, d: int, payload: bytes, sport: int, dport: int
) -> None:
    udp = dpkt.udp.UDP(sport=sport, dport=dport, data=payload)
    udp.ulen = 8 + len(payload)
    p = dpkt.ip6.IP6(src=s.to_bytes(16, "big"), dst=d.to_bytes(16, "big"), nxt=17, hlim=64)
    p.data = udp
    p.plen = udp.ulen
    raw = bytes(p)  # dpkt fills the UDP checksum over the pseudo-header
    seg = raw[40:]
    assert ipv6.csum_ipv6_magic(s, d, len(seg), 17, csum_partial(seg, 0, len(seg), 0)) == 0


def test_skip_exthdr_walks_hop_by_hop_dest_and_fragment() -> None:
    hbh = ipv6.build_options(60, [(5, b"\x00\x00")])  # router alert → destination options
    dst = ipv6.build_options(44, [(0x1E, b"\x01\x02\x03")])
    frag = struct.pack("!BBHI", 17, 0, 0, 0x1234)  # first fragment, offset 0
    buf = hbh + dst + frag + bytes(8)
    off, nxt, frag_off = ipv6.ipv6_skip_exthdr(buf, 0, 0, len(buf))
    assert (off, nxt, frag_off) == (len(hbh) + len(dst) + 8, 17, 0)
    assert [o.type for o in ipv6.tlv_walk(hbh, 0, len(hbh)) or []] == [5, 1]
    later = struct.pack("!BBHI", 17, 0, 185 << 3, 0x1234) + bytes(8)
    assert ipv6.ipv6_skip_exthdr(later, 0, 44, len(later)) == (0, 44, 185 << 3)
    assert ipv6.ipv6_skip_exthdr(hbh[:1], 0, 0, 1)[0] == -1  # truncated chain
    assert ipv6.tlv_walk(bytes([17, 0, 5, 9, 0, 0, 0, 0]), 0, 8) is None  # option past the end
    assert dpkt.ip6.IP6OptsHeader(hbh).nxt == 60


def test_nd_options_and_dpkt_parse_an_advertisement() -> None:
    mac = bytes.fromhex("020000000002")
    opts = (
        icmpv6.ndisc_fill_addr_option(icmpv6.ND_OPT_SOURCE_LL_ADDR, mac)
        + icmpv6.mtu_option(1400)
        + icmpv6.prefix_info_option(
            ipv6.aton("2001:db8:1::"), 64, onlink=True, autoconf=True, valid=86400, preferred=14400
        )
    )
    parsed = icmpv6.ndisc_parse_options(opts, 0, len(opts))
    assert parsed is not None
    assert parsed.src_lladdr == 0 and parsed.mtu == 8 and parsed.prefix_info == (16,)
    assert icmpv6.ndisc_opt_addr_data(opts, 0, 6) == mac
    assert icmpv6.ndisc_parse_options(opts[:-1], 0, len(opts) - 1) is None  # runs past the end
    assert icmpv6.ndisc_parse_options(b"\x01\x00" + bytes(6), 0, 8) is None  # zero length
    ra = icmpv6.RA_FIXED.pack(134, 0, 0, 64, 0, 1800, 0, 0) + opts
    m = dpkt.icmp6.ICMP6(ra)
    assert m.type == 134 and len(bytes(m)) == 16 + 8 + 8 + 32
