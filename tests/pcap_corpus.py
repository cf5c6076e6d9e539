# ruff: noqa: PERF401, E501 - a table of frames reads best one per line
"""The project's corpus of captures: crafted frames, one per thing tcpdump prints differently.

:func:`frames` is the Ethernet corpus: ARP (any sizes, truncated), 802.3/LLC
(STP BPDUs, SNAP, unknown SAPs, behind VLAN tags), IPv4 (options, malformed
headers: ``IP0 (invalid)``, ``bad-hlen``, ``bad-len``, ``truncated-ip``),
ICMP (errors, router advertisements, timestamps), TCP/UDP (options, bad
lengths, truncation), GRE v0 and PPTP's v1 with PPP, IPIP, 6in4, IPv6 with
its extension headers (routing headers whose final destination the
pseudo-header checksum uses, hop-by-hop, destination options, mobility),
ICMPv6 (ND, redirects, MLD v1/v2), DNS over UDP/TCP/IPv6 and mDNS, PIM,
VXLAN. :func:`captures` wraps the network-layer packets in the other link
types people bring: Linux cooked v1/v2 (``tcpdump -i any``), raw IPv4/IPv6.

Built with dpkt and byte literals (dpkt is the independent oracle; checksums
are computed here, so a wrong one in a frame is deliberate). Used by the
tcpdump printer's tests, which compare netstack's decode with the real
tcpdump's packet by packet when it is installed, and with golden lines
otherwise. Ports other than 53, 5353 and 4789 avoid the ones tcpdump decodes
as applications.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Sequence
from pathlib import Path

import dpkt

M1 = b"\x02\x00\x00\x00\x00\x01"
M2 = b"\x02\x00\x00\x00\x00\x02"


def _a4(s: str) -> bytes:
    return socket.inet_aton(s)


def _a6(s: str) -> bytes:
    return socket.inet_pton(socket.AF_INET6, s)


def eth(data: object, etype: int = 0x0800, src: bytes = M1, dst: bytes = M2) -> bytes:
    return bytes(dpkt.ethernet.Ethernet(src=src, dst=dst, type=etype, data=data))


def ipv4(
    p: int, data: object, src: str = "10.0.0.1", dst: str = "10.0.0.2", **kw: object
) -> dpkt.ip.IP:
    ip = dpkt.ip.IP(
        src=_a4(src), dst=_a4(dst), p=p, data=data, ttl=kw.pop("ttl", 64), id=kw.pop("id", 1), **kw
    )
    ip.len = 20 + len(bytes(data))  # type: ignore[call-overload]
    return ip


def ipv6(
    nxt: int, data: object, src: str = "2001:db8::1", dst: str = "2001:db8::2", hlim: int = 64
) -> dpkt.ip6.IP6:
    b = bytes(data)  # type: ignore[call-overload]
    return dpkt.ip6.IP6(src=_a6(src), dst=_a6(dst), nxt=nxt, hlim=hlim, plen=len(b), data=data)


def icmp(t: int, c: int, data: object) -> dpkt.icmp.ICMP:
    return dpkt.icmp.ICMP(type=t, code=c, data=data)


def frames() -> list[bytes]:
    """The corpus, in a fixed order."""
    out: list[bytes] = []
    arp = dpkt.arp.ARP(sha=M1, spa=_a4("10.0.0.1"), tha=b"\0" * 6, tpa=_a4("10.0.0.2"), op=1)
    out.append(eth(arp, 0x0806, dst=b"\xff" * 6))
    arp2 = dpkt.arp.ARP(sha=M2, spa=_a4("10.0.0.2"), tha=M1, tpa=_a4("10.0.0.1"), op=2)
    out.append(eth(arp2, 0x0806))
    echo = dpkt.icmp.ICMP.Echo(id=1, seq=1, data=b"x" * 56)
    out.append(eth(ipv4(1, icmp(8, 0, echo))))
    out.append(eth(ipv4(1, icmp(0, 0, echo), src="10.0.0.2", dst="10.0.0.1")))
    u = dpkt.udp.UDP(sport=40000, dport=9000, data=b"a" * 200)
    u.ulen = 208
    inner_udp = bytes(ipv4(17, u))
    out.append(eth(ipv4(17, u)))
    for src, code in (("10.0.0.2", 3), ("10.0.0.254", 1), ("10.0.0.254", 0), ("10.0.0.2", 2),
                      ("10.0.0.2", 13), ("10.0.0.2", 9)):  # fmt: skip
        out.append(eth(ipv4(1, icmp(3, code, dpkt.icmp.ICMP.Unreach(data=inner_udp[:28])),
                            src=src, dst="10.0.0.1")))  # fmt: skip
    out.append(eth(ipv4(1, icmp(3, 4, dpkt.icmp.ICMP.Unreach(mtu=1400, data=inner_udp[:28])),
                        src="10.0.0.254", dst="10.0.0.1")))  # fmt: skip
    quoted = bytes(ipv4(1, icmp(8, 0, echo)))[:28]
    for code in (0, 1):
        out.append(eth(ipv4(1, icmp(11, code, dpkt.icmp.ICMP.TimeExceed(data=quoted)),
                            src="10.0.0.254", dst="10.0.0.1")))  # fmt: skip
    out.append(eth(ipv4(1, icmp(5, 1, dpkt.icmp.ICMP.Unreach(data=inner_udp[:28])),
                        src="10.0.0.2", dst="10.0.0.1")))  # fmt: skip
    big = dpkt.udp.UDP(sport=1000, dport=2000, data=b"z" * 3000)
    big.ulen = 3008
    raw = bytes(big)
    out.append(eth(ipv4(17, raw[:1480], id=77, mf=1, offset=0)))
    out.append(eth(ipv4(17, raw[1480:2960], id=77, mf=1, offset=1480 // 8)))
    out.append(eth(ipv4(17, raw[2960:], id=77, offset=2960 // 8)))
    opts = b"\x02\x04\x05\xb4\x04\x02\x08\x0a\x00\x00\x00\x01\x00\x00\x00\x00\x01\x03\x03\x07"
    syn = dpkt.tcp.TCP(
        sport=40000, dport=9000, seq=1000, flags=dpkt.tcp.TH_SYN, win=64240, opts=opts
    )
    syn.off = 10
    out.append(eth(ipv4(6, syn)))
    for tcp, src, dst in (
        (dpkt.tcp.TCP(sport=9000, dport=40000, seq=5000, ack=1001,
                      flags=dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK, win=65160), "10.0.0.2", "10.0.0.1"),
        (dpkt.tcp.TCP(sport=40000, dport=9000, seq=1001, ack=5001,
                      flags=dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH, win=502, data=b"hello, world\r\n"),
         "10.0.0.1", "10.0.0.2"),
        (dpkt.tcp.TCP(sport=40000, dport=9000, seq=1015, ack=5001,
                      flags=dpkt.tcp.TH_ACK | dpkt.tcp.TH_FIN, win=502), "10.0.0.1", "10.0.0.2"),
        (dpkt.tcp.TCP(sport=9000, dport=40000, seq=5001, ack=1016, flags=dpkt.tcp.TH_RST, win=0),
         "10.0.0.2", "10.0.0.1"),
    ):  # fmt: skip
        out.append(eth(ipv4(6, tcp, src=src, dst=dst)))
    e6 = dpkt.icmp6.ICMP6(type=128, code=0, data=dpkt.icmp6.ICMP6.Echo(id=7, seq=1, data=b"p" * 56))
    out.append(eth(ipv6(58, e6), 0x86DD))
    r6 = dpkt.icmp6.ICMP6(type=129, code=0, data=dpkt.icmp6.ICMP6.Echo(id=7, seq=1, data=b"p" * 56))
    out.append(eth(ipv6(58, r6, src="2001:db8::2", dst="2001:db8::1"), 0x86DD))
    ns = struct.pack("!I", 0) + _a6("2001:db8::2") + b"\x01\x01" + M1
    out.append(eth(ipv6(58, icmp6(135, ns), dst="ff02::1:ff00:2", hlim=255), 0x86DD))
    na = struct.pack("!I", 0x60000000) + _a6("2001:db8::2") + b"\x02\x01" + M2
    out.append(
        eth(ipv6(58, icmp6(136, na), src="2001:db8::2", dst="2001:db8::1", hlim=255), 0x86DD)
    )
    rs = struct.pack("!I", 0) + b"\x01\x01" + M1
    out.append(eth(ipv6(58, icmp6(133, rs), src="fe80::1", dst="ff02::2", hlim=255), 0x86DD))
    ra = (struct.pack("!BBHII", 64, 0, 1800, 0, 0) + b"\x01\x01" + M2
          + struct.pack("!BBBBIII", 3, 4, 64, 0xC0, 2592000, 604800, 0) + _a6("2001:db8::"))  # fmt: skip
    out.append(eth(ipv6(58, icmp6(134, ra), src="fe80::2", dst="ff02::1", hlim=255), 0x86DD))
    u6 = dpkt.udp.UDP(sport=5000, dport=9001, data=b"q" * 20)
    u6.ulen = 28
    out.append(eth(ipv6(17, u6), 0x86DD))
    inner6 = bytes(ipv6(17, u6))
    out.append(eth(ipv6(58, icmp6(1, b"\0" * 4 + inner6, code=4), src="2001:db8::2",
                        dst="2001:db8::1"), 0x86DD))  # fmt: skip
    out.append(eth(ipv6(58, icmp6(2, struct.pack("!I", 1280) + inner6), src="2001:db8::fe",
                        dst="2001:db8::1"), 0x86DD))  # fmt: skip
    out.append(eth(ipv6(58, icmp6(3, b"\0" * 4 + inner6), src="2001:db8::fe",
                        dst="2001:db8::1"), 0x86DD))  # fmt: skip
    inner = bytes(ipv4(1, icmp(8, 0, echo), src="10.1.0.1", dst="10.2.0.1"))
    for gre in (
        struct.pack("!HH", 0, 0x0800) + inner,
        struct.pack("!HHI", 0x2000, 0x0800, 42) + inner,
        struct.pack("!HHHHII", 0xB000, 0x0800, 0x1234, 0, 42, 7) + inner,
        struct.pack("!HHI", 0x1000, 0x0800, 9) + inner,
        struct.pack("!HH", 0, 0x6558)
        + eth(ipv4(1, icmp(8, 0, echo), src="10.1.0.1", dst="10.2.0.1")),
        struct.pack("!HH", 0, 0x86DD) + bytes(ipv6(58, e6)),
    ):
        out.append(eth(ipv4(47, gre, src="192.0.2.1", dst="192.0.2.2")))
    out.append(eth(ipv4(4, inner, src="192.0.2.1", dst="192.0.2.2")))
    out.append(eth(ipv4(41, bytes(ipv6(58, e6)), src="192.0.2.1", dst="192.0.2.2")))
    frag6 = struct.pack("!BBHI", 17, 0, 1, 0x11223344) + bytes(u6)[:16]
    out.append(eth(ipv6(44, frag6), 0x86DD))
    out.append(eth(b"\x00\x64\x08\x00" + bytes(ipv4(1, icmp(8, 0, echo))), 0x8100))
    out.append(eth(b"\x00" * 46, 0x88B5))
    out.append(eth(ipv4(1, icmp(8, 0, echo)))[:30])
    out.append(eth(ipv4(253, b"\x00" * 10)))
    out.append(eth(ipv4(1, icmp(13, 0, b"\0" * 16))))
    out += _link_frames() + _ip_frames() + _tunnel_frames() + _icmp_frames() + _ip6_frames()
    out += _dns_frames() + _pim_frames() + _vxlan_frames()
    return out


def _name(n: str) -> bytes:
    return b"".join(bytes([len(p)]) + p.encode() for p in n.split(".") if p) + b"\0"


def _udp4(sport: int, dport: int, data: bytes, src: str = "10.0.0.1", dst: str = "10.0.0.53"
          ) -> bytes:  # fmt: skip
    u = dpkt.udp.UDP(sport=sport, dport=dport, data=data)
    u.ulen = 8 + len(data)
    ip = ipv4(17, u, src=src, dst=dst)
    return eth(ip)


def _dns_frames() -> list[bytes]:
    """DNS queries and responses over UDP and TCP, EDNS, compression, errors, mDNS."""
    out: list[bytes] = []
    q = struct.pack("!HHHHHH", 12345, 0x0100, 1, 0, 0, 0) + _name("example.com") + b"\0\x01\0\x01"
    out.append(_udp4(40053, 53, q))
    ans = (struct.pack("!HHHHHH", 12345, 0x8180, 1, 1, 0, 0) + _name("example.com") + b"\0\x01\0\x01"
           + b"\xc0\x0c\0\x01\0\x01" + struct.pack("!IH", 300, 4) + _a4("1.2.3.4"))  # fmt: skip
    out.append(_udp4(53, 40053, ans, src="10.0.0.53", dst="10.0.0.1"))
    # AAAA, MX, TXT, PTR, SRV, SOA queries with EDNS (OPT with a cookie), response with CNAME chain
    for qname, qtype in (("example.com", 28), ("example.com", 15), ("example.com", 16),
                         ("4.3.2.1.in-addr.arpa", 12), ("_sip._udp.example.com", 33),
                         ("example.com", 6), ("example.com", 255), ("example.com", 65280)):  # fmt: skip
        opt = b"\0\0\x29\x04\xd0\0\0\x80\0" + struct.pack("!HHH", 12, 10, 8) + bytes(8)
        m = struct.pack("!HHHHHH", qtype, 0x0120, 1, 0, 0, 1) + _name(qname)
        out.append(_udp4(40054, 53, m + struct.pack("!HH", qtype, 1) + opt))
    cname = (struct.pack("!HHHHHH", 7, 0x8580, 1, 3, 1, 1) + _name("www.example.com") + b"\0\x01\0\x01"
             + b"\xc0\x0c\0\x05\0\x01" + struct.pack("!IH", 60, 6) + b"\x03web\xc0\x10"
             + b"\xc0\x2d\0\x01\0\x01" + struct.pack("!IH", 60, 4) + _a4("93.184.216.34")
             + b"\xc0\x2d\0\x1c\0\x01" + struct.pack("!IH", 3600, 16) + _a6("2001:db8::34")
             + b"\xc0\x10\0\x02\0\x01" + struct.pack("!IH", 86400, 6) + b"\x03ns1\xc0\x10"
             + b"\xc0\x6b\0\x01\0\x01" + struct.pack("!IH", 86400, 4) + _a4("192.0.2.53"))  # fmt: skip
    out.append(_udp4(53, 40055, cname, src="10.0.0.53", dst="10.0.0.1"))
    soa = (struct.pack("!HHHHHH", 8, 0x8183, 1, 0, 1, 0) + _name("nx.example.com") + b"\0\x01\0\x01"
           + b"\xc0\x0f\0\x06\0\x01" + struct.pack("!IH", 900, 34) + b"\x03ns1\xc0\x0f"
           + b"\x05admin\xc0\x0f" + struct.pack("!IIIII", 2024010101, 7200, 900, 1209600, 300))  # fmt: skip
    out.append(_udp4(53, 40056, soa, src="10.0.0.53", dst="10.0.0.1"))
    mx = (struct.pack("!HHHHHH", 9, 0x8400, 1, 2, 0, 0) + _name("example.com") + b"\0\x0f\0\x01"
          + b"\xc0\x0c\0\x0f\0\x01" + struct.pack("!IHH", 60, 9, 10) + b"\x04mail\xc0\x0c"
          + b"\xc0\x0c\0\x10\0\x01" + struct.pack("!IH", 60, 12) + b"\x05hello\x05world")  # fmt: skip
    out.append(_udp4(53, 40057, mx, src="10.0.0.53", dst="10.0.0.1"))
    srv = (struct.pack("!HHHHHH", 10, 0x8180, 1, 1, 0, 0) + _name("_sip._udp.example.com")
           + b"\0\x21\0\x01\xc0\x0c\0\x21\0\x01" + struct.pack("!IHHHH", 60, 13, 10, 60, 5060)
           + b"\x03sip\xc0\x17")  # fmt: skip
    out.append(_udp4(53, 40058, srv, src="10.0.0.53", dst="10.0.0.1"))
    # odd: a pointer forwards (bad), a truncated answer, short header, no question, opcode/rcode
    bad = (struct.pack("!HHHHHH", 11, 0x8180, 1, 1, 0, 0) + _name("example.com") + b"\0\x01\0\x01"
           + b"\xc0\x40\0\x01\0\x01" + struct.pack("!IH", 300, 4) + _a4("1.2.3.4"))  # fmt: skip
    out.append(_udp4(53, 40059, bad, src="10.0.0.53", dst="10.0.0.1"))
    out.append(_udp4(53, 40060, ans[:-3], src="10.0.0.53", dst="10.0.0.1"))
    out.append(_udp4(53, 40060, ans[:10], src="10.0.0.53", dst="10.0.0.1"))
    out.append(_udp4(40061, 53, struct.pack("!HHHHHH", 13, 0x2800, 0, 0, 0, 0)))
    out.append(_udp4(40062, 53, struct.pack("!HHHHHH", 14, 0x0900, 2, 1, 0, 0) + _name("a.b")
                     + b"\0\x01\0\x01" + _name("c.d") + b"\0\x1c\0\x03"))  # fmt: skip
    out.append(_udp4(53, 40063, struct.pack("!HHHHHH", 15, 0xFFBF, 0, 0, 0, 0), src="10.0.0.53"))
    out.append(eth(_udp4(40064, 53, q)[14:-3]))
    # over TCP: the two-byte length prefix, right and wrong
    for payload in (struct.pack("!H", len(q)) + q, struct.pack("!H", len(q) + 5) + q):
        t = dpkt.tcp.TCP(sport=40065, dport=53, seq=1, ack=1, flags=0x18, win=500, data=payload)
        out.append(eth(ipv4(6, t, dst="10.0.0.53")))
    r = dpkt.tcp.TCP(sport=53, dport=40065, seq=1, ack=1 + len(q) + 2, flags=0x18, win=500,
                     data=struct.pack("!H", len(ans)) + ans)  # fmt: skip
    out.append(eth(ipv4(6, r, src="10.0.0.53", dst="10.0.0.1")))
    # over IPv6, and multicast DNS (QU question, cache-flush answer)
    u6 = struct.pack("!HHHH", 40066, 53, 8 + len(q), 0) + q
    out.append(eth(_raw6(17, _l4_6(17, u6, "2001:db8::1", "2001:db8::53", 6), dst="2001:db8::53"),
                   0x86DD))  # fmt: skip
    mq = struct.pack("!HHHHHH", 0, 0, 1, 0, 0, 0) + _name("printer.local") + b"\0\x01\x80\x01"
    out.append(_udp4(5353, 5353, mq, dst="224.0.0.251"))
    ma = (struct.pack("!HHHHHH", 0, 0x8400, 0, 1, 0, 0) + _name("printer.local")
          + b"\0\x01\x80\x01" + struct.pack("!IH", 120, 4) + _a4("10.0.0.7"))  # fmt: skip
    out.append(_udp4(5353, 5353, ma, src="10.0.0.7", dst="224.0.0.251"))
    return out


def _pim(body: bytes, ptype: int, src: str = "10.0.0.1", dst: str = "224.0.0.13",
         csum: bool = True) -> bytes:  # fmt: skip
    hdr = bytearray(struct.pack("!BBH", 0x20 | ptype, 0, 0) + body)
    if csum:
        hdr[2:4] = struct.pack("!H", _cksum(bytes(hdr) if ptype != 1 else bytes(hdr[:8])))
    return eth(ipv4(103, bytes(hdr), src=src, dst=dst, ttl=1))


def _pim_frames() -> list[bytes]:
    """PIMv2 hello (options), register (with a packet), register-stop, join/prune, assert,
    bootstrap, over IPv4 and IPv6, a bad checksum, a truncated one, PIMv1."""
    out: list[bytes] = []
    hello = (struct.pack("!HHH", 1, 2, 105) + struct.pack("!HHHH", 2, 4, 500, 2500)
             + struct.pack("!HHI", 19, 4, 1) + struct.pack("!HHI", 20, 4, 0x12345678)
             + struct.pack("!HHBBH", 21, 4, 1, 60, 0) + struct.pack("!HH", 22, 0)
             + struct.pack("!HH", 24, 6) + b"\x01\x00" + _a4("10.0.1.1")
             + struct.pack("!HH", 99, 2) + b"ab")  # fmt: skip
    out.append(_pim(hello, 0))
    inner = bytes(ipv4(17, dpkt.udp.UDP(sport=1, dport=2, ulen=12, data=b"data"), src="10.9.0.1",
                       dst="239.1.1.1"))  # fmt: skip
    out.append(_pim(struct.pack("!I", 0) + inner, 1, dst="10.0.0.9"))
    out.append(_pim(struct.pack("!I", 0x40000000) + bytes(20), 1, dst="10.0.0.9"))
    grp = b"\x01\x00\x00\x20" + _a4("239.1.1.1")
    out.append(_pim(grp + b"\x01\x00" + _a4("10.9.0.1"), 2, src="10.0.0.9", dst="10.0.0.1"))
    jp = (b"\x01\x00" + _a4("10.0.0.2") + struct.pack("!BBH", 0, 2, 210)
          + b"\x01\x00\x00\x20" + _a4("239.1.1.1") + struct.pack("!HH", 1, 1)
          + b"\x01\x00\x07\x20" + _a4("10.0.0.99") + b"\x01\x00\x04\x20" + _a4("10.9.0.1")
          + b"\x01\x00\x00\x18" + _a4("239.2.0.0") + struct.pack("!HH", 1, 0)
          + b"\x01\x00\x04\x20" + _a4("10.9.0.2"))  # fmt: skip
    out.append(_pim(jp, 3))
    out.append(_pim(grp + b"\x01\x00" + _a4("10.9.0.1") + struct.pack("!II", 0x80000065, 20), 5))
    bsr = (struct.pack("!HBB", 0x1234, 30, 64) + b"\x01\x00" + _a4("10.0.0.254")
           + b"\x01\x00\x00\x04" + _a4("224.0.0.0") + struct.pack("!BBH", 1, 1, 0)
           + b"\x01\x00" + _a4("10.0.0.253") + struct.pack("!HBB", 150, 192, 0))  # fmt: skip
    out.append(_pim(bsr, 4))
    out.append(_pim(hello[:6] + b"\xff\xff", 0, csum=False))
    out.append(_pim(hello, 0)[:44])
    out.append(_pim(struct.pack("!HH", 1, 2), 0, csum=False))
    out.append(_pim(b"", 12))
    p6 = bytearray(struct.pack("!BBH", 0x20, 0, 0) + hello[:6])
    p6 = bytearray(_l4_6(103, bytes(p6), "fe80::1", "ff02::d", 2))
    out.append(eth(_raw6(103, bytes(p6), "fe80::1", "ff02::d", 1), 0x86DD))
    out.append(eth(ipv4(103, b"\x10\x00\x00\x00" + bytes(8), dst="224.0.0.13")))
    return out


def _vxlan_frames() -> list[bytes]:
    """VXLAN (UDP 4789) with an inner Ethernet frame, an unset I flag, a short header."""
    out: list[bytes] = []
    inner = eth(ipv4(1, icmp(8, 0, dpkt.icmp.ICMP.Echo(id=4, seq=1, data=b"v" * 8)),
                     src="10.10.0.1", dst="10.10.0.2"))  # fmt: skip
    for hdr in (struct.pack("!II", 0x08000000, 42 << 8), struct.pack("!II", 0, 7 << 8)):
        out.append(_udp4(51000, 4789, hdr + inner, src="192.0.2.1", dst="192.0.2.2"))
    arp_inner = eth(dpkt.arp.ARP(sha=M1, spa=_a4("10.10.0.1"), tha=b"\0" * 6,
                                 tpa=_a4("10.10.0.2"), op=1), 0x0806, dst=b"\xff" * 6)  # fmt: skip
    out.append(_udp4(51001, 4789, struct.pack("!II", 0x08000000, 42 << 8) + arp_inner,
                     src="192.0.2.1", dst="192.0.2.2"))  # fmt: skip
    out.append(_udp4(51002, 4789, b"\x08\0\0", src="192.0.2.1", dst="192.0.2.2"))
    return out


def _cksum(data: bytes) -> int:
    return dpkt.in_cksum(data)  # type: ignore[no-any-return]


def _l4_6(nxt: int, body: bytes, src: str, dst: str, at: int) -> bytes:
    """*body* with its checksum at *at* computed over an IPv6 pseudo-header to *dst*."""
    ph = _a6(src) + _a6(dst) + struct.pack("!II", len(body), nxt)
    b = bytearray(body)
    b[at : at + 2] = b"\0\0"
    b[at : at + 2] = struct.pack("!H", _cksum(ph + bytes(b)))
    return bytes(b)


def _raw6(nxt: int, payload: bytes, src: str = "2001:db8::1", dst: str = "2001:db8::2",
          hlim: int = 64) -> bytes:  # fmt: skip
    return struct.pack("!IHBB", 0x60000000, len(payload), nxt, hlim) + _a6(src) + _a6(dst) + payload


def _link_frames() -> list[bytes]:
    """ARP of other sizes, 802.3/LLC (STP, SNAP, unknown SAPs), 802.3 behind a VLAN tag."""
    out: list[bytes] = []
    bcast = b"\xff" * 6
    # ARP: IPv4 over Ethernet, with a target MAC; RARP; unknown op; odd lengths; truncated
    arp = struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + M1 + _a4("10.0.0.1") + M2 + _a4("10.0.0.2")
    out.append(eth(arp, 0x0806, dst=bcast))
    rarp = struct.pack("!HHBBH", 1, 0x0800, 6, 4, 3) + M1 + bytes(4) + M1 + bytes(4)
    out.append(eth(rarp, 0x8035, dst=bcast))
    rrep = struct.pack("!HHBBH", 1, 0x0800, 6, 4, 4) + M2 + _a4("10.0.0.2") + M1 + _a4("10.0.0.9")
    out.append(eth(rrep, 0x8035))
    out.append(eth(struct.pack("!HHBBH", 1, 0x0800, 6, 4, 9) + M1 + _a4("10.0.0.1") + M2
                   + _a4("10.0.0.2"), 0x0806))  # fmt: skip
    out.append(eth(struct.pack("!HHBBH", 1, 0x0800, 6, 4, 77) + bytes(20), 0x0806))
    ib = struct.pack("!HHBBH", 32, 0x0800, 20, 4, 1) + bytes(range(20)) + _a4("10.0.0.1")
    out.append(eth(ib + bytes(20) + _a4("10.0.0.2"), 0x0806))
    ib2 = struct.pack("!HHBBH", 32, 0x0800, 20, 4, 2) + bytes(range(20)) + _a4("10.0.0.1")
    out.append(eth(ib2 + bytes(range(20, 40)) + _a4("10.0.0.2"), 0x0806))
    a6 = struct.pack("!HHBBH", 1, 0x86DD, 6, 16, 1) + M1 + _a6("2001:db8::1") + bytes(6)
    out.append(eth(a6 + _a6("2001:db8::2"), 0x0806))
    out.append(eth(struct.pack("!HHBBH", 6, 0x0800, 6, 4, 2) + M1 + _a4("10.0.0.1") + M2
                   + _a4("10.0.0.2"), 0x0806))  # fmt: skip
    out.append(eth(struct.pack("!HHBBH", 1, 0x0800, 0, 4, 1) + _a4("10.0.0.1")
                   + _a4("10.0.0.2"), 0x0806))  # fmt: skip
    out.append(eth(struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + M1 + _a4("10.0.0.1") + M2, 0x0806))
    out.append(eth(struct.pack("!HHBB", 1, 0x0800, 6, 4), 0x0806))
    out.append(eth(struct.pack("!HHBBH", 1, 0x0800, 6, 3, 1) + M1 + b"abc" + M2 + b"def", 0x0806))
    # 802.3 + LLC: STP config / TCN / RST BPDUs, SNAP with an ethertype, unknown SAPs, XID, I/S frames
    stp_dst = b"\x01\x80\xc2\x00\x00\x00"
    root = b"\x80\x00" + M1
    config = (struct.pack("!HBBB", 0, 0, 0, 0x01) + root + struct.pack("!I", 4) + b"\x80\x00" + M2
              + struct.pack("!HHHHH", 0x8002, 256, 20 * 256, 2 * 256, 15 * 256))  # fmt: skip
    for bpdu in (config, struct.pack("!HBB", 0, 0, 0x80),
                 struct.pack("!HBBB", 0, 2, 2, 0x7C) + config[5:] + b"\x00",
                 struct.pack("!HBBB", 0, 0, 0, 0x81) + config[5:],
                 struct.pack("!HBB", 1, 0, 0), struct.pack("!HBB", 0, 9, 0), config[:20]):  # fmt: skip
        llc = b"\x42\x42\x03" + bpdu
        out.append(stp_dst + M1 + struct.pack("!H", len(llc)) + llc + bytes(max(0, 46 - len(llc))))
    snap = b"\xaa\xaa\x03\x00\x00\x00\x08\x00" + bytes(ipv4(1, icmp(8, 0, dpkt.icmp.ICMP.Echo(
        id=3, seq=4, data=b"s" * 8))))  # fmt: skip
    out.append(M2 + M1 + struct.pack("!H", len(snap)) + snap)
    out.append(M2 + M1 + struct.pack("!H", 8) + b"\xaa\xaa\x03\x00\x12\x34\x20\x00" + bytes(38))
    for llc in (b"\xf0\xf1\x03" + bytes(10), b"\x12\x34\x03abc",
                b"\x42\x42\xaf\x81\x01\x00", b"\x04\x04\x10\x02\x00", b"\x04\x05\x01\x05",
                b"\x06\x06\x03" + bytes(ipv4(253, b"z" * 4)), b"\x42"):  # fmt: skip
        frame = M2 + M1 + struct.pack("!H", len(llc)) + llc
        out.append(frame + bytes(max(0, 60 - len(frame))))
    # 802.3/LLC behind 802.1Q tags (a bridge port on a VLAN), and QinQ
    tagged = struct.pack("!HH", 0x2064, len(config) + 3) + b"\x42\x42\x03" + config
    out.append(eth(tagged, 0x8100, dst=stp_dst))
    out.append(eth(struct.pack("!HH", 5, len(snap)) + snap, 0x8100))
    qinq = struct.pack("!HHHH", 0x0010, 0x8100, 0x3020, 0x0800) + bytes(
        ipv4(1, icmp(8, 0, b"\0" * 4))
    )
    out.append(eth(qinq, 0x88A8))
    out.append(eth(b"\x00\x64", 0x8100))
    return out


def _ip_frames() -> list[bytes]:
    """Malformed and truncated IPv4 and TCP, IPv4 options."""
    out: list[bytes] = []
    echo = bytes(ipv4(1, icmp(8, 0, dpkt.icmp.ICMP.Echo(id=9, seq=9, data=b"e" * 8))))
    for first in (0x05, 0x35, 0x00, 0x65, 0xF5, 0x44, 0x4F):
        out.append(eth(bytes([first]) + echo[1:]))
    out.append(eth(echo[:2] + struct.pack("!H", 12) + echo[4:]))
    out.append(eth(echo[:2] + struct.pack("!H", 100) + echo[4:]))
    out.append(eth(echo[:12]))
    out.append(eth(echo[:22]))
    syn = bytes(ipv4(6, dpkt.tcp.TCP(sport=40001, dport=9000, seq=1, flags=2, win=1000)))
    out.append(eth(syn[:30]))
    out.append(eth(syn[:36]))
    opt = bytes(dpkt.tcp.TCP(sport=40001, dport=9000, seq=1, flags=2, win=1000,
                             opts=b"\x02\x04\x05\xb4\x01\x01\x04\x02"))  # fmt: skip
    tcp = bytearray(opt)
    tcp[12] = 7 << 4
    out.append(eth(bytes(ipv4(6, bytes(tcp)))[:50]))
    tcp[12] = 3 << 4
    out.append(eth(bytes(ipv4(6, bytes(tcp)))))
    tcp[12] = 15 << 4
    out.append(eth(bytes(ipv4(6, bytes(tcp)))))
    rst = dpkt.tcp.TCP(sport=9000, dport=40001, seq=5, ack=2, flags=0x14, win=0, data=b"no\x01way")
    out.append(eth(ipv4(6, rst, src="10.0.0.2", dst="10.0.0.1")))
    # IPv4 options: RR, LSRR (the pseudo-header uses its last hop), RA, timestamp, unknown
    u = dpkt.udp.UDP(sport=4000, dport=4001, data=b"o" * 12)
    u.ulen = 20
    for opts in (b"\x07\x0b\x04" + _a4("10.0.0.9") + _a4("10.0.0.10") + b"\x00",
                 b"\x94\x04\x00\x00", b"\x44\x0c\x05\x01" + bytes(8), b"\x01\x88\x02\x00",
                 b"\x83\x0b\x04" + _a4("10.0.0.9") + _a4("10.0.0.3") + b"\x00"):  # fmt: skip
        hl = 20 + len(opts)
        hdr = struct.pack("!BBHHHBBH4s4s", 0x40 | hl // 4, 0, hl + 20, 2, 0, 64, 17, 0,
                          _a4("10.0.0.1"), _a4("10.0.0.2")) + opts  # fmt: skip
        hdr = hdr[:10] + struct.pack("!H", _cksum(hdr)) + hdr[12:]
        raw = bytearray(hdr + bytes(u))
        final = opts[-5:-1] if opts[0] == 0x83 else _a4("10.0.0.2")
        ph = _a4("10.0.0.1") + final + struct.pack("!BBH", 0, 17, 20)
        raw[hl + 6 : hl + 8] = b"\0\0"
        raw[hl + 6 : hl + 8] = struct.pack("!H", _cksum(ph + bytes(raw[hl:])))
        out.append(eth(bytes(raw)))
    return out


def _tunnel_frames() -> list[bytes]:
    """GREv1 (PPTP) with PPP inside, GREv0 odd cases."""
    out: list[bytes] = []
    inner = bytes(ipv4(1, icmp(8, 0, dpkt.icmp.ICMP.Echo(id=2, seq=2, data=b"p" * 8)),
                       src="172.16.0.1", dst="172.16.0.2"))  # fmt: skip
    inner6 = bytes(ipv6(58, dpkt.icmp6.ICMP6(type=128, code=0, data=dpkt.icmp6.ICMP6.Echo(
        id=1, seq=1, data=b"q" * 8))))  # fmt: skip
    for gre in (
        struct.pack("!HHHHI", 0x3001, 0x880B, len(inner) + 4, 7, 1) + b"\xff\x03\x00\x21" + inner,
        struct.pack("!HHHHII", 0x3081, 0x880B, len(inner) + 3, 7, 2, 1) + b"\xff\x03\x21" + inner,
        struct.pack("!HHHHI", 0x2081, 0x880B, 0, 7, 5),
        struct.pack("!HHHHI", 0x3001, 0x880B, len(inner6) + 2, 9, 3) + b"\x00\x57" + inner6,
        struct.pack("!HHHHI", 0x3001, 0x880B, 10, 9, 4) + b"\xff\x03\xc0\x21\x09\x01\x00\x08"
        + bytes(4),
        struct.pack("!HHHHI", 0x3001, 0x880B, 4, 9, 6) + b"\x80\x21\x01\x02",
        struct.pack("!HHHHI", 0x3001, 0x0800, 4, 9, 6) + inner,
        struct.pack("!HHHH", 0x3001, 0x880B, 4, 9),
        struct.pack("!HH", 0x0002, 0x0800),
        struct.pack("!HHHH", 0x8000, 0x0800, 0x1234, 0) + inner,
        struct.pack("!HHI", 0x2000, 0x1234, 5) + b"??",
        struct.pack("!HH", 0x2000, 0x0800) + b"\x00\x00",
    ):  # fmt: skip
        out.append(eth(ipv4(47, gre, src="198.51.100.1", dst="198.51.100.2")))
    return out


def _icmp_frames() -> list[bytes]:
    """ICMP router advertisements, timestamps, information, address masks, odd codes."""
    out: list[bytes] = []
    ra = struct.pack("!BBH", 2, 2, 1800) + _a4("10.0.0.254") + struct.pack("!I", 0)
    ra += _a4("10.0.0.253") + struct.pack("!i", -1)
    for t, c, body in (
        (9, 0, ra), (9, 0, struct.pack("!BBH", 1, 2, 45) + _a4("10.0.0.254") + bytes(4)),
        (9, 0, struct.pack("!BBH", 1, 2, 3700) + _a4("10.0.0.254") + bytes(4)),
        (9, 0, struct.pack("!BBH", 1, 3, 30) + bytes(12)), (9, 0, struct.pack("!BBH", 2, 2, 30)),
        (10, 0, bytes(4)), (13, 0, struct.pack("!HHIII", 7, 1, 45296789, 0, 0)),
        (14, 0, struct.pack("!HHIII", 7, 1, 45296789, 45296790, 86399999)),
        (14, 0, struct.pack("!HH", 7, 1)), (15, 0, struct.pack("!HH", 3, 3)),
        (16, 0, struct.pack("!HH", 3, 3)), (17, 0, struct.pack("!HHI", 1, 1, 0)),
        (18, 0, struct.pack("!HHI", 1, 1, 0xFFFFFF00)), (3, 99, b"\0" * 4 + bytes(ipv4(1, b"x" * 8))),
        (12, 0, b"\x14\0\0\0" + bytes(ipv4(1, b"x" * 8))), (12, 1, b"\0" * 4 + bytes(ipv4(1, b"x" * 8))),
        (5, 9, _a4("10.0.0.77") + bytes(ipv4(1, b"x" * 8))), (4, 0, b"\0" * 4 + bytes(ipv4(6, b"x" * 8))),
        (11, 5, b"\0" * 4 + bytes(ipv4(1, b"x" * 8))), (42, 0, b"\0" * 4), (8, 0, b"\0"),
    ):  # fmt: skip
        out.append(eth(ipv4(1, icmp(t, c, body), src="10.0.0.254", dst="224.0.0.1")))
    return out


def _ip6_frames() -> list[bytes]:
    """IPv6 extension headers (routing header and its final destination, hop-by-hop,
    destination options, mobility), ICMPv6 redirects and MLD v1/v2."""
    out: list[bytes] = []
    src, mid, final = "2001:db8::1", "2001:db8:1::fe", "2001:db8:2::2"
    udp = struct.pack("!HHHH", 5001, 9002, 16, 0) + b"r" * 8
    tcp = struct.pack("!HHIIBBHHH", 40002, 9003, 100, 0, 5 << 4, 2, 1000, 0, 0)
    # type 2 (mobile IPv6) and type 0 routing headers, UDP and TCP summed to the final destination
    rt2 = struct.pack("!BBBBI", 17, 2, 2, 1, 0) + _a6(final)
    out.append(eth(_raw6(43, rt2 + _l4_6(17, udp, src, final, 6), src, mid), 0x86DD))
    rt0 = struct.pack("!BBBBI", 6, 4, 0, 2, 0) + _a6("2001:db8:3::3") + _a6(final)
    out.append(eth(_raw6(43, rt0 + _l4_6(6, tcp, src, final, 16), src, mid), 0x86DD))
    # the same with checksums summed to the first hop: tcpdump says they are wrong
    out.append(eth(_raw6(43, rt2 + _l4_6(17, udp, src, mid, 6), src, mid), 0x86DD))
    # segment routing (type 4): segment 0 is the final destination
    srh = struct.pack("!BBBBBBH", 58, 4, 4, 1, 1, 0, 0x1234) + _a6(final) + _a6(mid)
    ping = struct.pack("!BBHHH", 128, 0, 0, 5, 5) + b"t" * 4
    out.append(eth(_raw6(43, srh + _l4_6(58, ping, src, final, 2), src, mid), 0x86DD))
    out.append(eth(_raw6(43, struct.pack("!BBBBI", 59, 0, 9, 0, 0), src, mid), 0x86DD))
    out.append(eth(_raw6(43, struct.pack("!BBBBI", 59, 1, 0, 0, 7) + bytes(8), src, mid), 0x86DD))
    out.append(eth(_raw6(43, rt2[:12], src, mid), 0x86DD))
    # hop-by-hop (router alert, padding, unknown), destination options, both
    hbh = struct.pack("!BB", 58, 0) + b"\x05\x02\x00\x00\x01\x00"
    mld1 = struct.pack("!BBHHH", 131, 0, 0, 0, 0) + _a6("ff02::fb")
    out.append(eth(_raw6(0, hbh + _l4_6(58, mld1, "fe80::1", "ff02::fb", 2), "fe80::1", "ff02::fb",
                         1), 0x86DD))  # fmt: skip
    dst = struct.pack("!BB", 17, 1) + b"\x1e\x02\xaa\xbb\x01\x06" + bytes(8)
    out.append(eth(_raw6(60, dst + _l4_6(17, udp, src, "2001:db8::2", 6)), 0x86DD))
    both = struct.pack("!BB", 60, 0) + b"\x01\x04\x00\x00\x00\x00"
    out.append(eth(_raw6(0, both + dst + _l4_6(17, udp, src, "2001:db8::2", 6)), 0x86DD))
    out.append(eth(_raw6(0, struct.pack("!BB", 59, 0) + b"\xc2\x04\x00\x01\x00\x00"), 0x86DD))
    # mobility header: binding update, ack, refresh request, home test init, error, unknown
    for mh in (
        struct.pack("!BBBBHHBBH", 59, 1, 5, 0, 0, 7, 0xC0, 0, 100) + b"\x01\x04" + bytes(4),
        struct.pack("!BBBBHBBHH", 59, 1, 6, 0, 0, 0, 0x80, 7, 100) + b"\x02\x02\x00\x10\x00\x00",
        struct.pack("!BBBBHH", 59, 0, 0, 0, 0, 0),
        struct.pack("!BBBBHH", 59, 1, 1, 0, 0, 0) + bytes.fromhex("0102030405060708"),
        struct.pack("!BBBBHBB", 59, 2, 7, 0, 0, 1, 0) + _a6("2001:db8::9"),
        struct.pack("!BBBBHH", 59, 0, 42, 0, 0, 0),
        struct.pack("!BBBBHH", 59, 0, 5, 0, 0, 0),
    ):  # fmt: skip
        out.append(eth(_raw6(135, mh, src, "2001:db8::2"), 0x86DD))
    # ICMPv6 redirect with target/redirected-header options; MLD v1 query/report/done, v2 report/query
    rd = struct.pack("!I", 0) + _a6("fe80::fe") + _a6("2001:db8:5::5") + b"\x02\x01" + M2
    rd += b"\x04\x02" + bytes(6) + _raw6(17, udp)[:8]
    out.append(eth(_raw6(58, _l4_6(58, struct.pack("!BBH", 137, 0, 0) + rd, "fe80::1", src, 2),
                         "fe80::1", src, 255), 0x86DD))  # fmt: skip
    q1 = struct.pack("!BBHHH", 130, 0, 0, 10000, 0) + bytes(16)
    rep2 = (
        struct.pack("!BBHHH", 143, 0, 0, 0, 2)
        + struct.pack("!BBH", 4, 0, 0)
        + _a6("ff02::1:ff00:1")
    )
    rep2 += struct.pack("!BBH", 1, 0, 2) + _a6("ff05::2") + _a6("2001:db8::7") + _a6("2001:db8::8")
    q2 = struct.pack("!BBHHH", 130, 0, 0, 1000, 0) + _a6("ff05::2") + struct.pack("!BBH", 2, 125, 1)
    q2 += _a6("2001:db8::7")
    done = struct.pack("!BBHHH", 132, 0, 0, 0, 0) + _a6("ff02::fb")
    for body, d in ((q1, "ff02::1"), (mld1, "ff02::fb"), (done, "ff02::2"), (rep2, "ff02::16"),
                    (q2, "ff05::2"), (q1[:26], "ff02::1"), (rep2[:30], "ff02::16")):  # fmt: skip
        mh = hbh if body[0] != 143 or True else b""
        pkt = _l4_6(58, body, "fe80::1", d, 2) if len(body) >= 24 else body
        out.append(eth(_raw6(0, mh + pkt, "fe80::1", d, 1), 0x86DD))
    return out


def icmp6(t: int, body: bytes, code: int = 0) -> dpkt.icmp6.ICMP6:
    return dpkt.icmp6.ICMP6(type=t, code=code, data=body)


def _sll(frame: bytes, pkttype: int, halen: int = 6) -> bytes:
    return struct.pack("!HHH", pkttype, 1, halen) + frame[6:12] + b"\0\0" + frame[12:]


def _sll2(frame: bytes, pkttype: int, ifindex: int, halen: int = 6) -> bytes:
    return (frame[12:14] + b"\0\0" + struct.pack("!IHBB", ifindex, 1, pkttype, halen)
            + frame[6:12] + b"\0\0" + frame[14:])  # fmt: skip


def captures() -> dict[str, tuple[int, list[Record]]]:
    """The corpus in the other link types: name → (LINKTYPE, frames).

    ``sll`` (113) and ``sll2`` (276) carry every Ethernet-II frame of
    :func:`frames` with the cooked header's packet types in turn (in, broadcast,
    multicast, other host, outgoing, an unknown one), 802.3 frames as 802.2
    payloads, and odd headers (no link address, cut short). ``sll2`` uses
    interface index 1 (``lo`` on every Linux machine) and one that no machine
    has, as tcpdump prints the local name of the index. ``ipv4`` (228),
    ``ipv6`` (229) and ``raw`` (101) carry the IP packets.
    """
    eth_frames = frames()
    typed = [f for f in eth_frames if len(f) >= 14 and f[12:14] > b"\x05\xdc"]
    llc = [f for f in eth_frames if len(f) >= 14 and f[12:14] <= b"\x05\xdc"]
    sll = [_sll(f, i % 6) for i, f in enumerate(typed)]
    sll += [_sll(f[:12] + b"\x00\x04" + f[14:], 1) for f in llc]
    sll += [_sll(typed[2], 4, halen=0), _sll(typed[2], 0)[:10], _sll(typed[2], 0)[:16]]
    sll2 = [_sll2(f, i % 6, (1, 0x7FFFFFFF)[i % 2]) for i, f in enumerate(typed)]
    sll2 += [_sll2(f[:12] + b"\x00\x04" + f[14:], 2, 1) for f in llc]
    sll2 += [_sll2(typed[2], 4, 1, halen=0), _sll2(typed[2], 0, 1)[:12]]
    ip4 = [f[14:] for f in typed if f[12:14] == b"\x08\x00"]
    ip6 = [f[14:] for f in typed if f[12:14] == b"\x86\xdd"]
    odd: list[Record] = [b"", b"\x45", b"\x05" + bytes(19), b"\x60" + bytes(10)]
    # records whose header is invalid: no bytes captured, nothing on the wire, len < caplen
    odd += [(b"", 60), (ip4[0], 0), (ip4[0], 20)]
    return {
        "sll": (113, list(sll)),
        "sll2": (276, list(sll2)),
        "ipv4": (228, [*ip4, *odd]),
        "ipv6": (229, [*ip6, *odd]),
        "raw": (101, [*ip4[::3], *ip6[::3], *odd]),
    }


Record = bytes | tuple[bytes, int]  # a frame, or (captured bytes, length on the wire)


def write(path: Path, packets: Sequence[Record] | None = None, linktype: int = 1) -> Path:
    """Write the corpus (or *packets*) as a pcap, one frame every half second."""
    with path.open("wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, linktype))
        for i, p in enumerate(packets if packets is not None else frames()):
            data, wirelen = p if isinstance(p, tuple) else (p, len(p))
            usec = i * 500_000 + 123
            f.write(struct.pack("<IIII", usec // 1_000_000, usec % 1_000_000, len(data), wirelen))
            f.write(data)
    return path
