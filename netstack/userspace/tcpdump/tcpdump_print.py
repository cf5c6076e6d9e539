"""tcpdump's packet printer: one line per frame, from the bytes alone.

Theory of operation: :class:`Printer` turns an Ethernet frame into the line
``tcpdump -nn`` prints for it, walking the headers the way tcpdump's
``print-*.c`` files do — ``ether_print`` → ``ip_print``/``ip6_print``/
``arp_print`` → ``icmp_print``/``udp_print``/``tcp_print``/``gre_print``… —
and recursing into tunnels (GRE, gretap, IPIP, 6in4, IPv6 in GRE), so a
capture of an encapsulated flow reads ``IP 192.0.2.1 > 192.0.2.2: GREv0,
length 88: IP 10.1.0.1 > 10.2.0.1: ICMP echo request, …``.

It reads headers with ``struct`` straight from the bytes (dpkt is not needed
and would hide truncation): a header cut short by the snap length prints
tcpdump's ``[|proto]`` marker instead of raising, and any byte string — even a
fuzzed one — gives a line. The option flags are tcpdump's: ``-v`` (IP header
fields, checksums, ND options), ``-e`` (link-level header), ``-q`` (less
protocol detail), ``-t…``/``-ttttt`` (timestamp styles), ``-x``/``-xx``/``-X``
(hex dumps). Addresses and ports are always printed as numbers (``-nn``), and
application protocols above UDP/TCP (DNS, HTTP…) are not decoded: the line
ends at ``UDP, length N`` / ``length N``.

The printer keeps tcpdump's per-conversation TCP state (initial sequence
numbers), so sequence and acknowledgement numbers print relative after the
handshake as tcpdump prints them (``-S`` for absolute).

tcpdump: print-ether.c, print-arp.c, print-ip.c, print-ip6.c, print-icmp.c,
print-icmp6.c, print-udp.c, print-tcp.c, print-gre.c, print-frag6.c, util-print.c.
"""

from __future__ import annotations

import socket
import struct
import time
from typing import Final

from netstack.wire.checksum import csum_fold, csum_partial

__all__ = ["Printer", "format_timestamp"]

_H: Final = struct.Struct("!H")
_HH: Final = struct.Struct("!HH")
_I: Final = struct.Struct("!I")
_IP4: Final = struct.Struct("!BBHHHBBH4s4s")
_IP6: Final = struct.Struct("!IHBB16s16s")
_TCP: Final = struct.Struct("!HHIIBBHHH")

ETHERTYPES: Final = {
    0x0800: "IPv4",
    0x0806: "ARP",
    0x86DD: "IPv6",
    0x8100: "802.1Q",
    0x88A8: "802.1Q-QinQ",
    0x6558: "TEB",
    0x8035: "Reverse ARP",
    0x8847: "MPLS unicast",
    0x8848: "MPLS multicast",
    0x88CC: "LLDP",
    0x888E: "EAPOL",
    0x8863: "PPPoE D",
    0x8864: "PPPoE S",
}

IP_PROTOS: Final = {
    0: "HBH",
    1: "ICMP",
    2: "IGMP",
    4: "IPIP",
    6: "TCP",
    17: "UDP",
    41: "IPv6",
    43: "Routing",
    44: "Fragment",
    47: "GRE",
    50: "ESP",
    51: "AH",
    58: "ICMPv6",
    59: "NONE",
    60: "DSTOPTS",
    89: "OSPF",
    103: "PIM",
    112: "VRRP",
    132: "SCTP",
}

_UNREACH: Final = {
    0: "net {} unreachable",
    1: "host {} unreachable",
    5: "{} unreachable - source route failed",
    6: "net {} unreachable - unknown",
    7: "host {} unreachable - unknown",
    8: "{} unreachable - source host isolated",
    9: "net {} unreachable - admin prohibited",
    10: "host {} unreachable - admin prohibited",
    11: "net {} unreachable - tos prohibited",
    12: "host {} unreachable - tos prohibited",
    13: "host {} unreachable - admin prohibited filter",
    14: "host {} unreachable - host precedence violation",
    15: "host {} unreachable - precedence cutoff",
}
_ICMP_TYPES: Final = {
    0: "echo reply",
    4: "source quench",
    8: "echo request",
    10: "router solicitation",
    13: "time stamp request",
    14: "time stamp reply",
    15: "information request",
    16: "information reply",
    17: "address mask request",
}
_REDIRECT: Final = {
    0: "redirect {} to net {}",
    1: "redirect {} to host {}",
    2: "redirect-tos {} to net {}",
    3: "redirect-tos {} to host {}",
}
_ICMP6_TYPES: Final = {
    1: "destination unreachable",
    2: "packet too big",
    3: "time exceeded",
    4: "parameter problem",
    128: "echo request",
    129: "echo reply",
    130: "multicast listener query",
    131: "multicast listener report",
    132: "multicast listener done",
    133: "router solicitation",
    134: "router advertisement",
    135: "neighbor solicitation",
    136: "neighbor advertisement",
    137: "redirect",
    143: "multicast listener report v2",
}
_ND_OPTS: Final = {
    1: "source link-address",
    2: "destination link-address",
    3: "prefix info",
    4: "redirected header",
    5: "mtu",
    25: "rdnss",
    31: "dnssl",
}
_TCP_FLAGS: Final = ((0x01, "F"), (0x02, "S"), (0x04, "R"), (0x08, "P"), (0x20, "U"))
_TCP_ECN: Final = ((0x40, "E"), (0x80, "W"))


def _ip4(b: bytes) -> str:
    return socket.inet_ntop(socket.AF_INET, b)


def _ip6(b: bytes) -> str:
    return socket.inet_ntop(socket.AF_INET6, b)


def _mac(b: bytes) -> str:
    return ":".join(f"{x:02x}" for x in b)


def _cksum_ok(data: bytes, pseudo: int = 0) -> int:
    """The folded one's complement sum over *data*: 0 when the checksum verifies."""
    return csum_fold(csum_partial(data, 0, len(data), pseudo)) if data else 0


def _pseudo4(src: bytes, dst: bytes, proto: int, length: int) -> int:
    a, b = _HH.unpack(src)
    c, d = _HH.unpack(dst)
    return int(a + b + c + d + proto + length)


def _pseudo6(src: bytes, dst: bytes, proto: int, length: int) -> int:
    s: int = sum(struct.unpack("!8H", src)) + sum(struct.unpack("!8H", dst))
    return s + (length >> 16) + (length & 0xFFFF) + proto


def format_timestamp(ts: float, style: int, prev: float | None, first: float | None) -> str:
    """The timestamp column as tcpdump prints it for ``-t`` style *style*.

    0: ``HH:MM:SS.ffffff`` (time of day, UTC: virtual time has no time zone),
    1 (``-t``): nothing, 2 (``-tt``): seconds since the epoch, 3 (``-ttt``):
    delta from the previous packet, 4 (``-tttt``): date and time, 5
    (``-ttttt``): delta from the first packet. Returns the text including
    its trailing space (empty for ``-t``).

    tcpdump: util-print.c, ts_print().
    """
    usec_total = round(ts * 1_000_000)
    if style == 1:
        return ""
    if style == 2:
        return f"{usec_total // 1_000_000}.{usec_total % 1_000_000:06d} "
    if style in (3, 5):
        ref = prev if style == 3 else first
        delta = max(0, usec_total - round((ref if ref is not None else ts) * 1_000_000))
        return " " + _hms(delta) + " "
    if style == 4:
        secs = usec_total // 1_000_000
        date = time.strftime("%Y-%m-%d", time.gmtime(secs))
        return f"{date} {_hms(usec_total % 86_400_000_000)} "
    return _hms(usec_total % 86_400_000_000) + " "


def _hms(usec: int) -> str:
    secs, us = divmod(usec, 1_000_000)
    h, rem = divmod(secs, 3600)
    m, s = divmod(rem, 60)
    return f"{h:02d}:{m:02d}:{s:02d}.{us:06d}"


def hex_dump(data: bytes, ascii_: bool, indent: str = "\t") -> list[str]:
    """tcpdump's ``-x``/``-X`` hex lines. tcpdump: print-ascii.c, hex_and_ascii_print()."""
    lines = []
    for off in range(0, len(data), 16):
        chunk = data[off : off + 16]
        words = " ".join(chunk[i : i + 2].hex() for i in range(0, len(chunk), 2))
        if ascii_:
            text = "".join(chr(c) if 0x20 < c < 0x7F else "." for c in chunk)
            lines.append(f"{indent}0x{off:04x}:  {words:<39}  {text}")
        else:
            lines.append(f"{indent}0x{off:04x}:  {words}")
    return lines


class _Trunc(Exception):
    """A header ran past the captured bytes (tcpdump's ``nd_trunc``)."""

    def __init__(self, proto: str) -> None:
        super().__init__(proto)
        self.proto = proto


class Printer:
    """Formats frames as tcpdump does; one instance per capture (it keeps TCP state).

    Args:
        verbose: ``-v`` count.
        eflag: ``-e``: print the link-level header.
        qflag: ``-q``: quick output (less protocol information).
        tstyle: ``-t`` count (see :func:`format_timestamp`).
        xflag: ``-x`` count (1: hex of the packet without the link header, 2: with it).
        ascii_dump: ``-X``: hex and ASCII.
        absolute_seq: ``-S``: absolute TCP sequence numbers.
    """

    def __init__(
        self,
        *,
        verbose: int = 0,
        eflag: bool = False,
        qflag: bool = False,
        tstyle: int = 0,
        xflag: int = 0,
        ascii_dump: bool = False,
        absolute_seq: bool = False,
    ) -> None:
        self.v = verbose
        self.e = eflag
        self.q = qflag
        self.tstyle = tstyle
        self.xflag = xflag
        self.ascii = ascii_dump
        self.absolute_seq = absolute_seq
        self._prev: float | None = None
        self._first: float | None = None
        self._tcp_seq: dict[tuple[bytes, bytes, int], tuple[int, int]] = {}
        self._out: list[str] = []

    # -- entry points -------------------------------------------------------------------
    def packet(self, ts: float, frame: bytes, wirelen: int | None = None) -> str:
        """The text tcpdump prints for one Ethernet frame (possibly several lines)."""
        if self._first is None:
            self._first = ts
        stamp = format_timestamp(ts, self.tstyle, self._prev, self._first)
        self._prev = ts
        body = self.ether(bytes(frame), wirelen if wirelen is not None else len(frame))
        return stamp + body

    def ether(self, frame: bytes, wirelen: int) -> str:
        """``ether_print``: the frame's line without the timestamp."""
        self._out = []
        try:
            net_off = self._ether(frame, wirelen)
        except _Trunc as t:
            self._w(f" [|{t.proto}]")
            net_off = 14
        text = "".join(self._out)
        if self.xflag or self.ascii:
            start = 0 if self.xflag >= 2 else min(net_off, len(frame))
            text += "\n" + "\n".join(hex_dump(frame[start:], self.ascii))
        return text

    # -- helpers ---------------------------------------------------------------------------
    def _w(self, s: str) -> None:
        self._out.append(s)

    @staticmethod
    def _need(buf: bytes, end: int, proto: str) -> None:
        if len(buf) < end:
            raise _Trunc(proto)

    # -- link layer ---------------------------------------------------------------------------
    def _ether(self, buf: bytes, wirelen: int, off: int = 0) -> int:
        if len(buf) - off < 14:
            self._w("[|ether]")
            return off
        dst, src = buf[off : off + 6], buf[off + 6 : off + 12]
        etype = _H.unpack_from(buf, off + 12)[0]
        length = wirelen - off
        hdr = off + 14
        if self.e:
            self._w(f"{_mac(src)} > {_mac(dst)}, ")
        if etype < 0x0600:  # 802.3 length field
            if not self.e:
                self._w(f"{_mac(src)} > {_mac(dst)}, ")
            self._w(f"802.3, length {etype}: ")
            self._w("LLC")
            return hdr
        if self.e:
            self._w(f"ethertype {self._ethertype_name(etype)} (0x{etype:04x}), length {length}: ")
        while etype in (0x8100, 0x88A8):
            self._need(buf, hdr + 4, "vlan")
            tci, etype = _HH.unpack_from(buf, hdr)
            hdr += 4
            if self.e:
                self._w(
                    f"vlan {tci & 0xFFF}, p {tci >> 13}"
                    + (", DEI" if tci & 0x1000 else "")
                    + f", ethertype {self._ethertype_name(etype)} (0x{etype:04x}), "
                )
        payload = buf[hdr:]
        plen = wirelen - hdr
        if etype == 0x0800:
            self._ip(payload, plen)
        elif etype == 0x86DD:
            self._ip6(payload, plen)
        elif etype == 0x0806:
            self._arp(payload, plen)
        else:
            if not self.e:
                if self.q:
                    self._w(
                        f"{_mac(src)} > {_mac(dst)}, Unknown Ethertype (0x{etype:04x}), "
                        f"length {length}: "
                    )
                    return hdr
                self._w(
                    f"{_mac(src)} > {_mac(dst)}, ethertype Unknown (0x{etype:04x}), "
                    f"length {length}: "
                )
            if not (self.xflag or self.ascii) and not self.q:
                self._w("\n" + "\n".join(hex_dump(payload, True)))
        return hdr

    @staticmethod
    def _ethertype_name(etype: int) -> str:
        return ETHERTYPES.get(etype, "Unknown")

    # -- ARP -------------------------------------------------------------------------------------
    def _arp(self, buf: bytes, length: int) -> None:
        self._need(buf, 8, "arp")
        hrd, pro, hln, pln, op = struct.unpack_from("!HHBBH", buf)
        if hrd != 1 or pro != 0x0800 or hln != 6 or pln != 4:
            if not self.e:
                self._w("ARP, ")
            self._w(f"Hardware type {hrd}, proto 0x{pro:04x}, op {op}, length {length}")
            return
        self._need(buf, 28, "arp")
        if not self.e:
            self._w("ARP, ")
        if self.v:
            self._w("Ethernet (len 6), IPv4 (len 4), ")
        sha, spa, tha, tpa = buf[8:14], buf[14:18], buf[18:24], buf[24:28]
        if op == 1:
            who = _ip4(tpa)
            if tha != b"\x00" * 6:
                who += f" ({_mac(tha)})" if tha != b"\xff" * 6 else " (Broadcast)"
            self._w(f"Request who-has {who} tell {_ip4(spa)}, length {length}")
        elif op == 2:
            self._w(f"Reply {_ip4(spa)} is-at {_mac(sha)}, length {length}")
        elif op == 3:
            self._w(f"Reverse Request who-is {_mac(tha)} tell {_mac(sha)}, length {length}")
        elif op == 4:
            self._w(f"Reverse Reply {_mac(tha)} at {_ip4(tpa)}, length {length}")
        else:
            self._w(f"Unknown ({op}), length {length}")

    # -- IPv4 ----------------------------------------------------------------------------------
    def _ip(self, buf: bytes, wirelen: int) -> None:
        if not self.e:
            self._w("IP ")
        if len(buf) < 20:
            raise _Trunc("ip")
        vihl, tos, tot_len, ident, frag, ttl, proto, _csum, src, dst = _IP4.unpack_from(buf)
        if vihl >> 4 != 4:
            self._w(f"IP{vihl >> 4}")
            return
        ihl = (vihl & 0xF) * 4
        if ihl < 20:
            self._w(f"bad-hlen {ihl}")
            return
        if tot_len < ihl:
            self._w(f"[total length {tot_len} < header length {ihl}]")
            return
        if tot_len > wirelen:
            self._w(f"truncated-ip - {tot_len - wirelen} bytes missing! ")
        offset = (frag & 0x1FFF) * 8
        if self.v:
            flags = ("DF" if frag & 0x4000 else "") + ("+" if frag & 0x2000 else "")
            if frag & 0x8000:
                flags = "rsvd" + flags
            ecn = ("", ",ECT(1)", ",ECT(0)", ",CE")[tos & 3]
            pname = IP_PROTOS.get(proto, "unknown")
            self._w(
                f"(tos 0x{tos:x}{ecn}, ttl {ttl}, id {ident}, offset {offset}, "
                f"flags [{flags or 'none'}], proto {pname} ({proto}), length {tot_len}"
            )
            if ihl > 20:
                self._w(", options (" + self._ip_options(buf[20:ihl]) + ")")
            if len(buf) >= ihl and _cksum_ok(buf[:ihl]) != 0:
                self._w(f", bad cksum {_csum:x} (->{_fixed_l4(buf[:ihl], 10, 0):x})!")
            self._w(")\n    ")
        payload = buf[ihl:tot_len]
        plen = tot_len - ihl
        s, d = _ip4(src), _ip4(dst)
        if offset:  # a later fragment: no transport header to read
            self._w(f"{s} > {d}: ")
            self._w(f"ip-proto-{proto}")
            return
        fragmented = bool(frag & 0x2000)
        if proto == 6:
            self._w(f"{s}")
            self._tcp(payload, plen, src, dst, d, 4, fragmented)
        elif proto == 17:
            self._w(f"{s}")
            self._udp(payload, plen, src, dst, d, 4, fragmented)
        else:
            self._w(f"{s} > {d}: ")
            if proto == 1:
                self._icmp(payload, plen, fragmented)
            elif proto == 47:
                self._gre(payload, plen)
            elif proto == 4:
                self._ip(payload, plen)
            elif proto == 41:
                self._ip6(payload, plen)
            else:
                self._w(f" ip-proto-{proto} {plen}")

    @staticmethod
    def _ip_options(opts: bytes) -> str:
        out = []
        i = 0
        while i < len(opts):
            t = opts[i]
            if t == 0:
                out.append("EOL")
                break
            if t == 1:
                out.append("NOP")
                i += 1
                continue
            if i + 1 >= len(opts):
                break
            ln = opts[i + 1]
            name = {7: "RR", 68: "TS", 130: "SEC", 131: "LSRR", 137: "SSRR", 148: "RA"}.get(t)
            out.append(
                f"{name or f'unknown {t}'}"
                + (f" value {_H.unpack_from(opts, i + 2)[0]}" if t == 148 and ln == 4 else "")
            )
            i += max(ln, 2)
        return ",".join(out)

    # -- ICMP ------------------------------------------------------------------------------------
    def _icmp(self, buf: bytes, plen: int, fragmented: bool) -> None:
        if len(buf) < 2:
            raise _Trunc("icmp")
        t, code = buf[0], buf[1]
        inner = buf[8:]
        text = ""
        show_inner = False
        if t in (0, 8):
            self._need(buf, 8, "icmp")
            ident, seq = _HH.unpack_from(buf, 4)
            text = f"echo {'request' if t == 8 else 'reply'}, id {ident}, seq {seq}"
        elif t == 3:
            show_inner = True
            if len(inner) < 20:
                raise _Trunc("icmp")
            odst = _ip4(inner[16:20])
            oproto = inner[9]
            if code == 2:
                text = f"{odst} protocol {oproto} unreachable"
            elif code == 3:
                ohl = (inner[0] & 0xF) * 4
                if len(inner) < ohl + 4:
                    raise _Trunc("icmp")
                dport = _H.unpack_from(inner, ohl + 2)[0]
                if oproto == 6:
                    text = f"{odst} tcp port {dport} unreachable"
                elif oproto == 17:
                    text = f"{odst} udp port {dport} unreachable"
                else:
                    text = f"{odst} protocol {oproto} port {dport} unreachable"
            elif code == 4:
                mtu = _H.unpack_from(buf, 6)[0]
                text = f"{odst} unreachable - need to frag" + (f" (mtu {mtu})" if mtu else "")
            else:
                text = _UNREACH.get(code, f"#{code} {{}} unreachable").format(odst)
        elif t == 5:
            show_inner = True
            if len(inner) < 20:
                raise _Trunc("icmp")
            gw = _ip4(buf[4:8])
            text = _REDIRECT.get(code, f"redirect-#{code} {{}} to net {{}}").format(
                _ip4(inner[16:20]), gw
            )
        elif t == 11:
            show_inner = True
            self._need(buf, 28, "icmp")
            text = {0: "time exceeded in-transit", 1: "ip reassembly time exceeded"}.get(
                code, f"time exceeded-#{code}"
            )
        elif t == 12:
            show_inner = True
            text = (
                f"parameter problem - code {code}"
                if code
                else f"parameter problem - octet {buf[4] if len(buf) > 4 else 0}"
            )
        elif t == 13:
            self._need(buf, 8, "icmp")
            ident, seq = _HH.unpack_from(buf, 4)
            text = f"time stamp query id {ident} seq {seq}"
        elif t == 14:
            self._need(buf, 20, "icmp")
            ident, seq = _HH.unpack_from(buf, 4)
            o, r, x = struct.unpack_from("!III", buf, 8)
            text = f"time stamp reply id {ident} seq {seq} : org 0x{o:x} recv 0x{r:x} xmit 0x{x:x}"
        elif t == 18:
            self._need(buf, 12, "icmp")
            text = f"address mask is 0x{_I.unpack_from(buf, 8)[0]:08x}"
        else:
            text = _ICMP_TYPES.get(t, f"type-#{t}")
        self._w(f"ICMP {text}, length {plen}")
        if self.v and not fragmented and len(buf) >= plen and _cksum_ok(buf[:plen]) != 0:
            csum = _H.unpack_from(buf, 2)[0]
            self._w(f" (wrong icmp cksum {csum:x} (->{_fixed_l4(buf[:plen], 2, 0):x})!)")
        if self.v and show_inner and len(inner) >= 20:
            self._w("\n\t")
            inner_len = _H.unpack_from(inner, 2)[0]
            try:
                self._ip(inner, inner_len)
            except _Trunc as tr:
                self._w(f" [|{tr.proto}]")

    # -- UDP -------------------------------------------------------------------------------------
    def _udp(
        self,
        buf: bytes,
        plen: int,
        src: bytes,
        dst: bytes,
        dtext: str,
        family: int,
        fragmented: bool,
        ports_only: bool = False,
    ) -> None:
        if len(buf) < 4:
            self._w(f" > {dtext}: ")
            raise _Trunc("udp")
        sport, dport = _HH.unpack_from(buf)
        self._w(f"{sport} > {dport}: " if ports_only else f".{sport} > {dtext}.{dport}: ")
        if len(buf) < 8:
            raise _Trunc("udp")
        ulen, csum = _HH.unpack_from(buf, 4)
        if ulen < 8:
            self._w(f"UDP, bad length {ulen} < 8" if not self.q else f"udp {ulen}")
            return
        if ulen > plen and not fragmented:
            self._w(f"UDP, bad length {ulen} > {plen}")
            return
        if self.v and not fragmented and len(buf) >= ulen:
            check = (family == 4 and self.v > 1 and csum != 0) or family == 6
            if check:
                pseudo = (
                    _pseudo4(src, dst, 17, ulen) if family == 4 else _pseudo6(src, dst, 17, ulen)
                )
                if _cksum_ok(buf[:ulen], pseudo) == 0:
                    self._w("[udp sum ok] ")
                else:
                    self._w(
                        f"[bad udp cksum 0x{csum:04x} -> "
                        f"0x{_fixed_l4(buf[:ulen], 6, pseudo):04x}!] "
                    )
        if self.q:
            self._w(f"UDP, length {ulen - 8}")
        else:
            self._w(f"UDP, length {ulen - 8}")

    # -- TCP -------------------------------------------------------------------------------------
    def _tcp(
        self,
        buf: bytes,
        plen: int,
        src: bytes,
        dst: bytes,
        dtext: str,
        family: int,
        fragmented: bool,
        ports_only: bool = False,
    ) -> None:
        if len(buf) < 4:
            self._w(f" > {dtext}: ")
            raise _Trunc("tcp")
        sport, dport = _HH.unpack_from(buf)
        self._w(f"{sport} > {dport}: " if ports_only else f".{sport} > {dtext}.{dport}: ")
        if len(buf) < 20:
            raise _Trunc("tcp")
        _sp, _dp, seq, ack, off, flags, win, csum, urp = _TCP.unpack_from(buf)
        hlen = (off >> 4) * 4
        if hlen < 20:
            self._w(f"tcp {plen} [bad hdr length {hlen} - too short, < 20]")
            return
        if self.q:
            self._w(f"tcp {plen - hlen}")
            return
        fl = "".join(c for bit, c in _TCP_FLAGS if flags & bit)
        fl += "".join(c for bit, c in _TCP_ECN if flags & bit)
        if flags & 0x10:
            fl += "."
        self._w(f"Flags [{fl or 'none'}]")
        # relative sequence numbers: tcpdump's tcp_seq_hash (print-tcp.c)
        if not self.absolute_seq and flags & 0x10:
            rev = sport > dport or (sport == dport and src > dst)
            key = (dst, src, (dport << 16) | sport) if rev else (src, dst, (sport << 16) | dport)
            known = self._tcp_seq.get(key)
            if known is None or flags & 0x02:
                if rev:
                    self._tcp_seq[key] = ((ack - 1) & 0xFFFFFFFF, seq)
                else:
                    self._tcp_seq[key] = (seq, (ack - 1) & 0xFFFFFFFF)
            else:
                th_seq, th_ack = known
                if rev:
                    seq, ack = (seq - th_ack) & 0xFFFFFFFF, (ack - th_seq) & 0xFFFFFFFF
                else:
                    seq, ack = (seq - th_seq) & 0xFFFFFFFF, (ack - th_ack) & 0xFFFFFFFF
        if hlen > plen:
            self._w(f" [bad hdr length {hlen} - too long, > {plen}]")
            return
        if self.v and not fragmented and len(buf) >= plen:
            pseudo = _pseudo4(src, dst, 6, plen) if family == 4 else _pseudo6(src, dst, 6, plen)
            if _cksum_ok(buf[:plen], pseudo) == 0:
                self._w(f", cksum 0x{csum:04x} (correct)")
            else:
                self._w(
                    f", cksum 0x{csum:04x} (incorrect -> 0x{_fixed_l4(buf[:plen], 16, pseudo):04x})"
                )
        length = plen - hlen
        if self.v > 1 or length > 0 or flags & 0x07:
            self._w(f", seq {seq}")
            if length > 0:
                self._w(f":{(seq + length) & 0xFFFFFFFF}")
        if flags & 0x10:
            self._w(f", ack {ack}")
        self._w(f", win {win}")
        if flags & 0x20:
            self._w(f", urg {urp}")
        if hlen > 20:
            if len(buf) < hlen:
                self._w(", options [")
                raise _Trunc("tcp")
            self._w(", options [" + self._tcp_options(buf[20:hlen]) + "]")
        self._w(f", length {length}")

    @staticmethod
    def _tcp_options(opts: bytes) -> str:
        out: list[str] = []
        i = 0
        while i < len(opts):
            kind = opts[i]
            if kind in (0, 1):
                out.append("eol" if kind == 0 else "nop")
                i += 1
                if kind == 0:
                    break
                continue
            if i + 1 >= len(opts):
                out.append("[bad opt]")
                break
            ln = opts[i + 1]
            if ln < 2 or i + ln > len(opts):
                out.append("[bad opt]")
                break
            data = opts[i + 2 : i + ln]
            if kind == 2 and ln == 4:
                out.append(f"mss {_H.unpack(data)[0]}")
            elif kind == 3 and ln == 3:
                out.append(f"wscale {data[0]}")
            elif kind == 4 and ln == 2:
                out.append("sackOK")
            elif kind == 5 and (ln - 2) % 8 == 0:
                blocks = [struct.unpack_from("!II", data, j) for j in range(0, ln - 2, 8)]
                out.append(f"sack {len(blocks)} " + "".join(f"{{{a}:{b}}}" for a, b in blocks))
            elif kind == 8 and ln == 10:
                tsval, tsecr = struct.unpack("!II", data)
                out.append(f"TS val {tsval} ecr {tsecr}")
            else:
                out.append(f"unknown-{kind} 0x{data.hex()}" if data else f"unknown-{kind}")
            i += ln
        return ",".join(out)

    # -- GRE ---------------------------------------------------------------------------------
    def _gre(self, buf: bytes, plen: int) -> None:
        self._need(buf, 4, "gre")
        flags, proto = _HH.unpack_from(buf)
        ver = flags & 7
        self._w(f"GREv{ver}")
        if ver != 0:
            self._w(f" ERROR: unknown-version, length {plen}")
            return
        off = 4
        if self.v:
            names = []
            if flags & 0x8000:
                names.append("checksum present")
            if flags & 0x4000:
                names.append("routing present")
            if flags & 0x2000:
                names.append("key present")
            if flags & 0x1000:
                names.append("sequence# present")
            if flags & 0x0800:
                names.append("strict source route")
            self._w(f", Flags [{', '.join(names) or 'none'}]")
        if flags & 0xC000:
            self._need(buf, off + 4, "gre")
            csum, roff = _HH.unpack_from(buf, off)
            if self.v:
                self._w(f", sum 0x{csum:x}")
            self._w(f", off 0x{roff:x}")
            off += 4
        if flags & 0x2000:
            self._need(buf, off + 4, "gre")
            self._w(f", key=0x{_I.unpack_from(buf, off)[0]:x}")
            off += 4
        if flags & 0x1000:
            self._need(buf, off + 4, "gre")
            self._w(f", seq {_I.unpack_from(buf, off)[0]}")
            off += 4
        if self.e:
            self._w(f", proto {self._ethertype_name(proto)} (0x{proto:04x})")
        self._w(f", length {plen}")
        inner = buf[off:]
        ilen = plen - off
        if self.v:
            self._w("\n\t")
        else:
            self._w(": ")
        if proto == 0x0800:
            self._ip(inner, ilen)
        elif proto == 0x86DD:
            self._ip6(inner, ilen)
        elif proto == 0x6558:
            self._ether(inner, ilen)
        else:
            self._w(f"gre-proto-0x{proto:x}")

    # -- IPv6 ----------------------------------------------------------------------------------
    def _ip6(self, buf: bytes, wirelen: int) -> None:
        if len(buf) < 40:
            raise _Trunc("ip6")
        if not self.e:
            self._w("IP6 ")
        vcf, plen, nxt, hlim, src, dst = _IP6.unpack_from(buf)
        if vcf >> 28 != 6:
            self._w(f"version error: {vcf >> 28} != 6")
            return
        if self.v:
            tclass = (vcf >> 20) & 0xFF
            flow = vcf & 0xFFFFF
            parts = []
            if tclass:
                parts.append(f"class 0x{tclass:x}")
            if flow:
                parts.append(f"flowlabel 0x{flow:05x}")
            parts.append(f"hlim {hlim}")
            parts.append(
                f"next-header {IP_PROTOS.get(nxt, 'unknown')} ({nxt}) payload length: {plen}"
            )
            self._w("(" + ", ".join(parts) + ") ")
        if 40 + plen > wirelen:
            self._w(f"truncated-ip6 - {40 + plen - wirelen} bytes missing!")
        payload = buf[40 : 40 + plen]
        s, d = _ip6(src), _ip6(dst)
        total = plen
        fragmented = False
        # extension headers
        while nxt in (0, 43, 44, 60):
            if nxt == 44:
                if len(payload) < 8:
                    self._w(f"{s} > {d}: ")
                    raise _Trunc("frag6")
                nh, _r, offm, ident = struct.unpack_from("!BBHI", payload)
                foff = offm & 0xFFF8
                if self.v:
                    self._w(f"{s} > {d}: frag (0x{ident:08x}:{foff}|{total - 8}) ")
                else:
                    self._w(f"{s} > {d}: frag ({foff}|{total - 8}) ")
                payload = payload[8:]
                total -= 8
                nxt = nh
                fragmented = True
                if foff:
                    return
                self._ip6_upper(nxt, payload, total, src, dst, s, d, fragmented, True)
                return
            if len(payload) < 2:
                raise _Trunc("ip6")
            nh, hl = payload[0], (payload[1] + 1) * 8
            name = {0: "HBH", 43: "srcrt", 60: "DSTOPT"}[nxt]
            self._w(f"{name} ")
            payload = payload[hl:]
            total -= hl
            nxt = nh
        self._ip6_upper(nxt, payload, total, src, dst, s, d, fragmented, False)

    def _ip6_upper(
        self,
        nxt: int,
        payload: bytes,
        total: int,
        src: bytes,
        dst: bytes,
        s: str,
        d: str,
        fragmented: bool,
        addrs_printed: bool,
    ) -> None:
        if nxt in (6, 17):
            if not addrs_printed:
                self._w(s)
            printer = self._tcp if nxt == 6 else self._udp
            printer(payload, total, src, dst, d, 6, fragmented, addrs_printed)
        else:
            if not addrs_printed:
                self._w(f"{s} > {d}: ")
            if nxt == 58:
                self._icmp6(payload, total, src, dst, fragmented)
            elif nxt == 4:
                self._ip(payload, total)
            elif nxt == 41:
                self._ip6(payload, total)
            elif nxt == 47:
                self._gre(payload, total)
            elif nxt == 59:
                self._w("no next header")
            else:
                self._w(f"ip-proto-{nxt} {total}")

    # -- ICMPv6 ------------------------------------------------------------------------------
    def _icmp6(self, buf: bytes, plen: int, src: bytes, dst: bytes, fragmented: bool) -> None:
        if len(buf) < 1:
            raise _Trunc("icmp6")
        t = buf[0]
        code = buf[1] if len(buf) > 1 else 0
        if self.v and not fragmented and len(buf) >= plen:
            if _cksum_ok(buf[:plen], _pseudo6(src, dst, 58, plen)) == 0:
                self._w("[icmp6 sum ok] ")
            else:
                csum = _H.unpack_from(buf, 2)[0]
                fixed = _fixed_l4(buf[:plen], 2, _pseudo6(src, dst, 58, plen))
                self._w(f"[bad icmp6 cksum 0x{csum:04x} -> 0x{fixed:04x}!] ")
        name = _ICMP6_TYPES.get(t)
        self._w(f"ICMP6, {name or f'unknown icmp6 type ({t})'}")
        need = {128: 8, 129: 8, 1: 8, 2: 8, 3: 8, 4: 8, 133: 8, 134: 16, 135: 24, 136: 24, 137: 40}
        if len(buf) < need.get(t, 4):
            raise _Trunc("icmp6")
        length = f", length {plen}"
        if t in (128, 129):
            self._need(buf, 8, "icmp6")
            ident, seq = _HH.unpack_from(buf, 4)
            self._w(f", id {ident}, seq {seq}")
            if not self.v:
                self._w(length)
        elif t == 1:
            inner = buf[8:]
            idst = _ip6(inner[24:40]) if len(inner) >= 40 else "?"
            what = {
                0: f"unreachable route {idst}",
                1: f"unreachable prohibited {idst}",
                2: f"beyond scope {idst}",
                3: f"unreachable address {idst}",
                5: f"failed ingress/egress policy {idst}",
                6: f"reject route {idst}",
            }.get(code)
            if code == 4:
                nh = inner[6] if len(inner) >= 40 else 0
                dport = _H.unpack_from(inner, 42)[0] if len(inner) >= 44 else 0
                pname = {6: "tcp", 17: "udp"}.get(nh, f"protocol {nh}")
                what = f"unreachable port, {idst} {pname} port {dport}"
            self._w(f", {what or f'unknown unreach code ({code})'}")
            if not self.v:
                self._w(length)
        elif t == 2:
            self._need(buf, 8, "icmp6")
            self._w(f", mtu {_I.unpack_from(buf, 4)[0]}")
            if not self.v:
                self._w(length)
        elif t == 3:
            inner = buf[8:]
            idst = _ip6(inner[24:40]) if len(inner) >= 40 else "?"
            if code == 0:
                self._w(f" in-transit for {idst}")
            elif code == 1:
                self._w(f" reassembly for {idst}")
            else:
                self._w(f", unknown code ({code})")
            if not self.v:
                self._w(length)
        elif t == 4:
            self._need(buf, 8, "icmp6")
            ptr = _I.unpack_from(buf, 4)[0]
            what = {0: "erroneous - octet", 1: "next header - octet", 2: "option - octet"}.get(
                code, "code-#" + str(code)
            )
            self._w(f", {what} {ptr}")
            if not self.v:
                self._w(length)
        elif t == 135:
            self._need(buf, 24, "icmp6")
            tgt = _ip6(buf[8:24])
            if self.v:
                self._w(f"{length}, who has {tgt}")
                self._nd_options(buf[24:plen])
            else:
                self._w(f", who has {tgt}{length}")
        elif t == 136:
            self._need(buf, 24, "icmp6")
            tgt = _ip6(buf[8:24])
            if self.v:
                flags = buf[4]
                names = [
                    n
                    for bit, n in ((0x80, "router"), (0x40, "solicited"), (0x20, "override"))
                    if flags & bit
                ]
                self._w(f"{length}, tgt is {tgt}, Flags [{', '.join(names) or 'none'}]")
                self._nd_options(buf[24:plen])
            else:
                self._w(f", tgt is {tgt}{length}")
        elif t == 133:
            self._w(length)
            if self.v:
                self._nd_options(buf[8:plen])
        elif t == 134:
            self._w(length)
            if self.v and len(buf) >= 16:
                hop, fl, life, reach, retrans = struct.unpack_from("!BBHII", buf, 4)
                names = [
                    n
                    for bit, n in (
                        (0x80, "managed"),
                        (0x40, "other stateful"),
                        (0x20, "home agent"),
                    )
                    if fl & bit
                ]
                pref = {0: "medium", 1: "high", 3: "low"}.get((fl >> 3) & 3, "reserved")
                self._w(
                    f"\n\thop limit {hop}, Flags [{', '.join(names) or 'none'}], pref {pref}, "
                    f"router lifetime {life}s, reachable time {reach}ms, retrans timer {retrans}ms"
                )
                self._nd_options(buf[16:plen])
        else:
            self._w(length)

    def _nd_options(self, opts: bytes) -> None:
        i = 0
        while i + 2 <= len(opts):
            t, ln = opts[i], opts[i + 1]
            if ln == 0:
                self._w(f"\n\t  {_ND_OPTS.get(t, 'unknown option')} ({t}), length 0 (0)")
                return
            body = opts[i + 2 : i + ln * 8]
            name = _ND_OPTS.get(t, "unknown option")
            self._w(f"\n\t  {name} option ({t}), length {ln * 8} ({ln}): ")
            if t in (1, 2):
                self._w(_mac(body[:6]))
            elif t == 3 and len(body) >= 30:
                plen, fl, valid, pref = struct.unpack_from("!BBII", body)
                prefix = _ip6(body[14:30])
                names = [
                    n for bit, n in ((0x80, "onlink"), (0x40, "auto"), (0x20, "router")) if fl & bit
                ]
                self._w(
                    f"{prefix}/{plen}, Flags [{', '.join(names) or 'none'}], "
                    f"valid time {_lifetime(valid)}, pref. time {_lifetime(pref)}"
                )
            elif t == 5 and len(body) >= 6:
                self._w(f" {_I.unpack_from(body, 2)[0]}")
            else:
                self._w("0x" + body.hex())
            if self.v > 1:
                self._w("\n" + "\n".join(hex_dump(body, False, "\t    ")))
            i += ln * 8


def _lifetime(v: int) -> str:
    return "infinity" if v == 0xFFFFFFFF else f"{v}s"


def _fixed_l4(data: bytes, where: int, pseudo: int) -> int:
    tmp = bytearray(data)
    tmp[where : where + 2] = b"\0\0"
    return csum_fold(csum_partial(tmp, 0, len(tmp), pseudo))
