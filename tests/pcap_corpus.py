# ruff: noqa: PERF401, E501 - a table of frames reads best one per line
"""A corpus of crafted Ethernet frames, one per thing tcpdump prints differently.

Built with dpkt (the independent oracle). Used by the tcpdump printer's tests,
which compare netstack's decode with the real tcpdump's when it is installed
and with golden lines otherwise. Ports avoid those tcpdump decodes as
applications (DNS, HTTP…), which netstack's printer deliberately does not.
"""

from __future__ import annotations

import socket
import struct
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
    return out


def icmp6(t: int, body: bytes, code: int = 0) -> dpkt.icmp6.ICMP6:
    return dpkt.icmp6.ICMP6(type=t, code=code, data=body)


def write(path: Path, packets: list[bytes] | None = None) -> Path:
    """Write the corpus (or *packets*) as a pcap, one frame every half second."""
    with path.open("wb") as f:
        w = dpkt.pcap.Writer(f, snaplen=262144)
        for i, p in enumerate(packets if packets is not None else frames()):
            w.writepkt(p, ts=i * 0.5 + 0.000123)
    return path
