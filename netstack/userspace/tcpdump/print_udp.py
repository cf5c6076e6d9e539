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
        raise Trunc(local=True)
    sport, dport = HH.unpack_from(bp)
    _ports(nd, ip, sport, dport)
    if length < 8:
        nd.w(f"truncated-udp {length}")
        return
    nd.need(bp, 8, local=True)
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
        raise Trunc(local=True)
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
        nd.w(", options [")
        try:
            _tcp_options(nd, bp, hlen)
        except _BadOpt as bad:
            nd.w("[bad opt]" + ("]" if bad.args[0] else ""))
            return
        nd.w("]")
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


_TCP_OPTS: Final = {0: "eol", 1: "nop", 2: "mss", 3: "wscale", 4: "sackOK", 5: "sack",
                    6: "echo", 7: "echoreply", 8: "TS", 11: "cc", 12: "ccnew", 13: "ccecho",
                    19: "md5", 20: "scps", 21: "snack", 22: "rec", 28: "uto", 29: "tcp-ao",
                    30: "mptcp", 34: "tfo", 253: "exp", 254: "exp"}  # fmt: skip


class _BadOpt(Exception):
    """tcpdump's ``goto bad`` in the option loop: ``[bad opt]`` and the segment's line ends."""


def _tcp_options(nd: Printer, bp: bytes, hlen: int) -> None:
    """The options, streamed as tcp_print() prints them (a short one ends the line).

    tcpdump: print-tcp.c, the option loop of tcp_print() (LENCHECK).
    """
    left = hlen - 20
    cp = 20
    ch = ""
    while left > 0:
        nd.w(ch)
        nd.need(bp, cp + 1)
        opt = bp[cp]
        cp += 1
        if opt in (0, 1):
            ln = 1
        else:
            nd.need(bp, cp + 1)
            ln = bp[cp]
            cp += 1
            if ln < 2 or ln > left:
                raise _BadOpt(ch)
            left -= 1
        left -= 1
        datalen = 0

        def lencheck(n: int, left: int = left, cp: int = cp, ch: str = ch) -> None:
            if n > left:
                raise _BadOpt(ch)
            if len(bp) < cp + n:
                raise Trunc(local=True, after=">" if ch else "")

        nd.w(_TCP_OPTS.get(opt, f"unknown-{opt}"))
        if opt == 2:
            datalen = 2
            lencheck(2)
            nd.w(f" {H.unpack_from(bp, cp)[0]}")
        elif opt == 3:
            datalen = 1
            lencheck(1)
            nd.w(f" {bp[cp]}")
        elif opt == 5:
            datalen = ln - 2
            if datalen % 8:
                nd.w(" invalid sack")
            else:
                nd.w(f" {datalen // 8} ")
                for i in range(0, datalen, 8):
                    lencheck(i + 8)
                    s, e = struct.unpack_from("!II", bp, cp + i)
                    nd.w(f"{{{s}:{e}}}")
        elif opt == 8:
            datalen = 8
            lencheck(8)
            tsval, tsecr = struct.unpack_from("!II", bp, cp)
            nd.w(f" val {tsval} ecr {tsecr}")
        elif opt not in (0, 1, 4):
            datalen = ln - 2
            if datalen:
                lencheck(datalen)
                nd.w(f" 0x{bp[cp : cp + datalen].hex()}")
        cp += datalen
        left -= datalen
        if datalen + 1 + (opt not in (0, 1)) != ln:
            nd.w(f"[len {ln}]")
        ch = ","
        if opt == 0:
            break
