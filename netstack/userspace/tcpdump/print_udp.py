"""UDP and TCP: ports, lengths, checksums, TCP's flags, sequence numbers and options.

Theory of operation: both print ``src.sport > dst.dport: `` (only the ports
when IPv6 extension headers came first, as tcpdump does) and then look the
ports up in the tables of application printers (:func:`~.netdissect.udp_port`,
:func:`~.netdissect.tcp_port`) in the order tcpdump tests them — DNS on 53,
VXLAN on 4789 — unless ``-q``. TCP keeps tcpdump's per-connection initial
sequence numbers so that ``seq``/``ack`` print relative after the handshake.
Checksums (``-v``) use the pseudo-header with the final destination
(:meth:`IPInfo.pseudo`).

tcpdump: print-udp.c, print-tcp.c.
"""

from __future__ import annotations

import struct
from typing import Final

from netstack.userspace.tcpdump.netdissect import (
    HH,
    TCP_PORT_PRINTERS,
    UDP_PORT_PRINTERS,
    H,
    IPInfo,
    Printer,
    Trunc,
    cksum,
    cksum_shouldbe,
    ipproto,
)

__all__ = ["tcp_print", "udp_print"]

_TCP: Final = struct.Struct("!HHIIBBHHH")
_TCP_FLAGS: Final = ((0x01, "F"), (0x02, "S"), (0x04, "R"), (0x08, "P"), (0x20, "U"))
_TCP_ECN: Final = ((0x40, "E"), (0x80, "W"))


def _ports(nd: Printer, ip: IPInfo, sport: int, dport: int) -> None:
    """tcpdump: print-udp.c, udpipaddr_print(); print-tcp.c, the address part of tcp_print()."""
    if ip.ports_only:
        nd.w(f"{sport} > {dport}: ")
    else:
        nd.w(f"{ip.srcs}.{sport} > {ip.dsts}.{dport}: ")


@ipproto(17)
def udp_print(nd: Printer, bp: bytes, length: int, ip: IPInfo) -> None:
    """A UDP datagram and what its ports say it carries. tcpdump: print-udp.c, udp_print()."""
    nd.protocol = "udp"
    if len(bp) < 4:
        if not ip.ports_only:
            nd.w(f"{ip.srcs} > {ip.dsts}: ")
        raise Trunc()
    sport, dport = HH.unpack_from(bp)
    _ports(nd, ip, sport, dport)
    if length < 8:
        nd.w(f"truncated-udp {length}")
        return
    nd.need(bp, 8)
    ulen, csum = HH.unpack_from(bp, 4)
    if ulen == 0 and length > 65535:
        ulen = length
    if ulen < 8:
        nd.w(f"truncated-udplength {ulen}")
        return
    ulen -= 8
    length -= 8
    length = min(length, ulen)
    if nd.v and not ip.fragmented and len(bp) >= length + 8:
        if (ip.family == 4 and nd.v > 1 and csum != 0) or ip.family == 6:
            seg = bp[: length + 8]
            pseudo = ip.pseudo(17, length + 8)
            if cksum(seg, pseudo) == 0:
                nd.w("[udp sum ok] ")
            else:
                should = cksum_shouldbe(seg, 6, pseudo)
                nd.w(f"[bad udp cksum 0x{csum:04x} -> 0x{should:04x}!] ")
        elif ip.family == 4 and nd.v > 1:
            nd.w("[no cksum] ")
    if not nd.q:
        payload = bp[8 : 8 + length]
        for ports, fn in UDP_PORT_PRINTERS:
            if sport in ports or dport in ports:
                fn(nd, payload, length, ip)
                return
    if ulen > length and not ip.fragmented:
        nd.w(f"UDP, bad length {ulen} > {length}")
    else:
        nd.w(f"UDP, length {ulen}")


@ipproto(6)
def tcp_print(nd: Printer, bp: bytes, length: int, ip: IPInfo) -> None:
    """A TCP segment. tcpdump: print-tcp.c, tcp_print()."""
    nd.protocol = "tcp"
    if len(bp) < 4:
        if not ip.ports_only:
            nd.w(f"{ip.srcs} > {ip.dsts}: ")
        raise Trunc()
    sport, dport = HH.unpack_from(bp)
    _ports(nd, ip, sport, dport)
    nd.need(bp, 20, local=True)
    _sp, _dp, seq, ack, off, flags, win, csum, urp = _TCP.unpack_from(bp)
    hlen = (off >> 4) * 4
    if hlen < 20:
        nd.w(f" tcp {length - hlen} [bad hdr length {hlen} - too short, < 20]")
        return
    if nd.q:
        nd.w(f"tcp {(length - hlen) & 0xFFFFFFFF}")
        if hlen > length:
            nd.w(f" [bad hdr length {hlen} - too long, > {length}]")
        return
    fl = "".join(c for bit, c in _TCP_FLAGS if flags & bit)
    fl += "".join(c for bit, c in _TCP_ECN if flags & bit)
    if flags & 0x10:
        fl += "."
    nd.w(f"Flags [{fl or 'none'}]")
    src, dst = ip.src, ip.dst
    # relative sequence numbers: tcpdump's tcp_seq_hash
    if not nd.absolute_seq and flags & 0x10:
        rev = sport > dport or (sport == dport and src > dst)
        key = (dst, src, (dport << 16) | sport) if rev else (src, dst, (sport << 16) | dport)
        known = nd.tcp_seq.get(key)
        if known is None or flags & 0x02:
            if rev:
                nd.tcp_seq[key] = ((ack - 1) & 0xFFFFFFFF, seq)
            else:
                nd.tcp_seq[key] = (seq, (ack - 1) & 0xFFFFFFFF)
        else:
            th_seq, th_ack = known
            if rev:
                seq, ack = (seq - th_ack) & 0xFFFFFFFF, (ack - th_seq) & 0xFFFFFFFF
            else:
                seq, ack = (seq - th_seq) & 0xFFFFFFFF, (ack - th_ack) & 0xFFFFFFFF
    if hlen > length:
        nd.w(f" [bad hdr length {hlen} - too long, > {length}]")
        return
    if nd.v and not ip.fragmented and len(bp) >= length:
        pseudo = ip.pseudo(6, length)
        if cksum(bp[:length], pseudo) == 0:
            nd.w(f", cksum 0x{csum:04x} (correct)")
        else:
            should = cksum_shouldbe(bp[:length], 16, pseudo)
            nd.w(f", cksum 0x{csum:04x} (incorrect -> 0x{should:04x})")
    dlen = length - hlen
    if nd.v > 1 or dlen > 0 or flags & 0x07:
        nd.w(f", seq {seq}")
        if dlen > 0:
            nd.w(f":{(seq + dlen) & 0xFFFFFFFF}")
    if flags & 0x10:
        nd.w(f", ack {ack}")
    nd.w(f", win {win}")
    if flags & 0x20:
        nd.w(f", urg {urp}")
    if hlen > 20:
        if len(bp) < hlen:
            nd.w(", options [")
            raise Trunc()
        nd.w(", options [" + _tcp_options(bp[20:hlen]) + "]")
    nd.w(f", length {dlen}")
    if dlen <= 0:
        return
    if len(bp) < hlen:
        nd.w(f" [remaining caplen({len(bp)}) < header length({hlen})]")
        raise Trunc()
    payload = bp[hlen:length]
    if flags & 0x04 and nd.v:
        _rst_data(nd, payload, dlen)
        return
    for ports, fn in TCP_PORT_PRINTERS:
        if sport in ports or dport in ports:
            fn(nd, payload, dlen, ip)
            return


def _rst_data(nd: Printer, sp: bytes, length: int) -> None:
    """tcpdump: print-tcp.c, print_tcp_rst_data()."""
    nd.w(" [RST" if len(sp) >= length else " [!RST")
    if length > 30:
        length = 30
        nd.w("+")
    nd.w(" ")
    nd.w("".join(_char(c) for c in sp[:length]))
    nd.w("]")


def _char(c: int) -> str:
    """tcpdump: util-print.c, fn_print_char()."""
    out = ""
    if c >= 0x80:
        out = "M-"
        c &= 0x7F
    if c < 0x20 or c == 0x7F:
        return out + "^" + chr(c ^ 0x40)
    return out + chr(c)


def _tcp_options(opts: bytes) -> str:
    """tcpdump: print-tcp.c, the option loop of tcp_print()."""
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
            out.append(f"mss {H.unpack(data)[0]}")
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
