"""TCP/IP packets as packetdrill sees them: built, parsed, printed.

Theory of operation: a :class:`Packet` is a decoded IPv4 or IPv6 datagram with
a TCP segment — the fields packetdrill compares, the TCP options as a list and
the payload. :func:`build_packet` makes the bytes of an inbound packet (valid
IP and TCP checksums, as ``checksum_packet()`` fills them), :func:`parse_packet`
decodes what the stack sent, and :func:`packet_to_string` prints either in
packetdrill's own notation: ``S. 0:0(0) ack 1 win 65535 <mss 1460,sackOK,…>``.

Kernel: include/uapi/linux/ip.h, ipv6.h, tcp.h (header layouts).
"""

from __future__ import annotations

import struct
from typing import Final

import attrs

from netstack.sites import kernel
from netstack.userspace.packetdrill.script import TcpOption
from netstack.wire.checksum import csum_fold, csum_partial

__all__ = [
    "TCP_ACK",
    "TCP_AE",
    "TCP_CWR",
    "TCP_ECE",
    "TCP_FIN",
    "TCP_PSH",
    "TCP_RST",
    "TCP_SYN",
    "TCP_URG",
    "Packet",
    "build_packet",
    "flags_from_string",
    "flags_to_string",
    "packet_to_string",
    "parse_packet",
    "parse_tcp_options",
    "tcp_options_to_string",
]

TCP_FIN: Final = 0x01
TCP_SYN: Final = 0x02
TCP_RST: Final = 0x04
TCP_PSH: Final = 0x08
TCP_ACK: Final = 0x10
TCP_URG: Final = 0x20
TCP_ECE: Final = 0x40
TCP_CWR: Final = 0x80
TCP_AE: Final = 0x100  # the former NS bit, low bit of the reserved nibble

_FLAG_CHARS: Final = {
    "F": TCP_FIN,
    "S": TCP_SYN,
    "R": TCP_RST,
    "P": TCP_PSH,
    ".": TCP_ACK,
    "U": TCP_URG,
    "E": TCP_ECE,
    "W": TCP_CWR,
    "A": TCP_AE,
}

_IPV4: Final = struct.Struct("!BBHHHBBH4s4s")
_IPV6: Final = struct.Struct("!IHBB16s16s")
_TCP: Final = struct.Struct("!HHIIHHHH")
IPPROTO_TCP: Final = 6


def flags_from_string(flags: str) -> int:
    """``"S."`` → SYN|ACK."""
    out = 0
    for c in flags:
        out |= _FLAG_CHARS.get(c, 0)
    return out


@attrs.define
class Packet:
    """One TCP/IP packet, decoded."""

    version: int  # 4 or 6
    src: bytes  # 4 or 16 bytes
    dst: bytes
    sport: int
    dport: int
    seq: int
    ack: int
    flags: int
    window: int
    options: list[TcpOption]
    payload: bytes = b""
    urg_ptr: int = 0
    tos: int = 0  # IPv4 TOS / IPv6 traffic class
    ttl: int = 64  # or hop limit
    flow_label: int = 0
    ip_id: int = 0
    df: bool = False
    res1: int = 0  # the reserved bits other than AE
    ip_header_len: int = 20
    time: float = 0.0  # when the stack sent it (virtual seconds)

    @property
    def options_len(self) -> int:
        return sum(len(o.encode()) for o in self.options)

    @property
    def doff(self) -> int:
        return (20 + self.options_len) // 4

    @property
    def ip_total_len(self) -> int:
        n = 20 + self.options_len + len(self.payload)
        return n + (20 if self.version == 4 else 0)

    def copy(self) -> Packet:
        return attrs.evolve(self, options=[attrs.evolve(o) for o in self.options])


@kernel("net/ipv4/tcp_input.c", "tcp_parse_options")
def parse_tcp_options(raw: bytes) -> list[TcpOption]:
    """Split a TCP option area into options.

    Raises:
        ValueError: an option runs past the end or has a bad length.

    Kernel: net/ipv4/tcp_input.c, tcp_parse_options() (the walk, not the checks).
    """
    out: list[TcpOption] = []
    i = 0
    n = len(raw)
    while i < n:
        kind = raw[i]
        if kind in (0, 1):
            out.append(TcpOption(kind, 1))
            i += 1
            continue
        if i + 1 >= n:
            raise ValueError(f"TCP option {kind} has no length byte")
        length = raw[i + 1]
        if length < 2 or i + length > n:
            raise ValueError(f"TCP option {kind} with bad length {length}")
        out.append(TcpOption(kind, length, bytes(raw[i + 2 : i + length])))
        i += length
    return out


def parse_packet(data: bytes, time: float = 0.0) -> Packet | None:
    """Decode an IP packet with a TCP segment; None for anything else (or malformed)."""
    if not data:
        return None
    version = data[0] >> 4
    if version == 4:
        if len(data) < 20:
            return None
        vihl, tos, tot_len, ip_id, frag, ttl, proto, _sum, src, dst = _IPV4.unpack_from(data)
        ihl = (vihl & 0xF) * 4
        if proto != IPPROTO_TCP or ihl < 20 or tot_len > len(data) or tot_len < ihl + 20:
            return None
        tcp_off, end = ihl, tot_len
        flow = 0
        df = bool(frag & 0x4000)
    elif version == 6:
        if len(data) < 40:
            return None
        vtf, plen, nxt, ttl, src, dst = _IPV6.unpack_from(data)
        if nxt != IPPROTO_TCP or 40 + plen > len(data) or plen < 20:
            return None
        tos = (vtf >> 20) & 0xFF
        flow = vtf & 0xFFFFF
        tcp_off, end = 40, 40 + plen
        ihl, ip_id, df = 40, 0, False
    else:
        return None
    sport, dport, seq, ack, off_flags, window, _csum, urg = _TCP.unpack_from(data, tcp_off)
    doff = (off_flags >> 12) * 4
    if doff < 20 or tcp_off + doff > end:
        return None
    try:
        options = parse_tcp_options(data[tcp_off + 20 : tcp_off + doff])
    except ValueError:
        return None
    return Packet(
        version,
        bytes(src),
        bytes(dst),
        sport,
        dport,
        seq,
        ack,
        off_flags & 0x1FF,
        window,
        options,
        bytes(data[tcp_off + doff : end]),
        urg,
        tos,
        ttl,
        flow,
        ip_id,
        df,
        (off_flags >> 9) & 0x7,
        ihl,
        time,
    )


def build_packet(p: Packet) -> bytes:
    """The bytes of *p*, with the IPv4 header checksum and the TCP checksum filled in."""
    opts = b"".join(o.encode() for o in p.options)
    thl = 20 + len(opts)
    tcp = bytearray(
        _TCP.pack(
            p.sport,
            p.dport,
            p.seq & 0xFFFFFFFF,
            p.ack & 0xFFFFFFFF,
            ((thl // 4) << 12) | (p.res1 & 7) << 9 | (p.flags & 0x1FF),
            p.window,
            0,
            p.urg_ptr,
        )
    )
    tcp += opts
    tcp += p.payload
    n = len(tcp)
    pseudo = p.src + p.dst
    if p.version == 4:
        pseudo += struct.pack("!BBH", 0, IPPROTO_TCP, n)
    else:
        pseudo += struct.pack("!IxxxB", n, IPPROTO_TCP)
    s = csum_partial(pseudo)
    struct.pack_into("!H", tcp, 16, csum_fold(csum_partial(tcp, 0, None, s)))
    if p.version == 4:
        hdr = bytearray(
            _IPV4.pack(
                0x45,
                p.tos,
                20 + n,
                p.ip_id,
                0x4000 if p.df else 0,
                p.ttl,
                IPPROTO_TCP,
                0,
                p.src,
                p.dst,
            )
        )
        struct.pack_into("!H", hdr, 10, csum_fold(csum_partial(hdr)))
        return bytes(hdr + tcp)
    vtf = (6 << 28) | (p.tos << 20) | (p.flow_label & 0xFFFFF)
    return _IPV6.pack(vtf, n, IPPROTO_TCP, p.ttl, p.src, p.dst) + bytes(tcp)


def tcp_options_to_string(options: list[TcpOption]) -> str:
    """packetdrill's tcp_options_to_string(): ``mss 1460,sackOK,TS val 1 ecr 0,nop,wscale 7``."""
    out = []
    for o in options:
        d = o.data
        if o.kind == 0:
            out.append("eol")
        elif o.kind == 1:
            out.append("nop")
        elif o.kind == 2 and len(d) == 2:
            out.append(f"mss {int.from_bytes(d, 'big')}")
        elif o.kind == 3 and len(d) == 1:
            out.append(f"wscale {d[0]}")
        elif o.kind == 4:
            out.append("sackOK")
        elif o.kind == 5:
            blocks = [
                f"{int.from_bytes(d[i : i + 4], 'big')}:{int.from_bytes(d[i + 4 : i + 8], 'big')}"
                for i in range(0, len(d) - 7, 8)
            ]
            out.append("sack " + " ".join(blocks))
        elif o.kind == 8 and len(d) == 8:
            val, ecr = struct.unpack("!II", d)
            out.append(f"TS val {val} ecr {ecr}")
        elif o.kind == 19:
            out.append(("md5 " + d.hex()) if d else "md5")
        elif o.kind == 34:
            out.append(("FO " + d.hex()) if d else "FO")
        elif o.kind == 254 and d[:2] == b"\xf9\x89":
            out.append(("FOEXP " + d[2:].hex()) if d[2:] else "FOEXP")
        else:
            out.append(f"unknown option {o.kind}")
    return ",".join(out)


def flags_to_string(flags: int) -> str:
    """SYN|ACK → ``"S."``: packetdrill's flag letters, in its order (FSRP.UEWA)."""
    return "".join(c for c, bit in _FLAG_CHARS.items() if flags & bit)


def packet_to_string(p: Packet, *, win_nocheck: bool = False) -> str:
    """packetdrill's tcp_packet_to_string() (DUMP_SHORT): flags, sequence, ack, window, options."""
    f = p.flags
    flags = flags_to_string(f)
    plen = len(p.payload)
    s = f"{flags} {p.seq}:{(p.seq + plen) & 0xFFFFFFFF}({plen}) "
    if f & TCP_ACK:
        s += f"ack {p.ack} "
    if not win_nocheck:
        s += f"win {p.window} "
    if p.options:
        s += f"<{tcp_options_to_string(p.options)}>"
    return s.rstrip()
