"""IPv4 and IPv6, with IPv6's extension headers (hop-by-hop, routing, fragment, mobility).

Theory of operation: :func:`ip_print` and :func:`ip6_print` are registered
for their ethertypes and as the payloads of IPIP and IPv6-in-IP; each prints
``IP``/``IP6``, the ``-v`` header fields, the addresses (except for TCP and
UDP, which print them with their ports) and hands the payload to
:meth:`Printer.ip_demux`. The payload is cut at the header's total length
(``nd_push_snaplen``): bytes past it are not the transport's.

IPv6 walks its extension headers as ``ip6_print`` does, printing ``HBH``,
``DSTOPT``, ``RT6 (len=…, type=…, segleft=…, [0]addr…)``, ``frag (…)`` and
``mobility: BU seq#=…``. Before any of that it finds the final destination
(RFC 8200 §8.1: the last address of a type 0 or 2 routing header, the first
segment of a segment routing header) for the transport's pseudo-header
checksum, as ``nextproto6_cksum`` does; IPv4 does the same for a source-route
option (``ip_finddst``).

tcpdump: print-ip.c, print-ip6.c, print-ip6opts.c, print-rt6.c, print-frag6.c,
print-mobility.c, print-ip-demux.c.
"""

from __future__ import annotations

import struct
from typing import Final

from netstack.userspace.tcpdump.netdissect import (
    HH,
    IP_PROTOS,
    H,
    I,
    IPInfo,
    Printer,
    Trunc,
    cksum,
    cksum_shouldbe,
    ethertype,
    ip4,
    ip6,
    ipproto,
)

__all__ = ["ip6_finddst", "ip6_print", "ip_print"]

_IP4: Final = struct.Struct("!BBHHHBBH4s4s")
_IP6: Final = struct.Struct("!IHBB16s16s")
_IPOPTS: Final = {0: "EOL", 1: "NOP", 68: "timestamp", 130: "security", 7: "RR", 137: "SSRR",
                  131: "LSRR", 148: "RA", 82: "traceroute"}  # fmt: skip


# -- IPv4 --------------------------------------------------------------------------------------
@ethertype(0x0800)
def ip_print_ether(nd: Printer, bp: bytes, length: int) -> None:
    ip_print(nd, bp, length)


@ipproto(4)
def ip_print_ipip(nd: Printer, bp: bytes, length: int, _ip: IPInfo) -> None:
    ip_print(nd, bp, length)


def ip_print(nd: Printer, bp: bytes, length: int) -> None:
    """An IPv4 datagram. tcpdump: print-ip.c, ip_print()."""
    nd.protocol = "ip"
    nd.need(bp, 1)
    version = bp[0] >> 4
    if version != 4:
        if version == 6:
            nd.w("IP6, wrong link-layer encapsulation (invalid)")
        else:
            nd.w(f"IP{version} (invalid)")
        return
    if not nd.e:
        nd.w("IP ")
    if len(bp) < 20:
        raise Trunc(local=True)
    vihl, tos, tot_len, ident, frag, ttl, proto, csum, src, dst = _IP4.unpack_from(bp)
    if length < 20:
        nd.w(f"truncated-ip {length}")
        return
    hlen = (vihl & 0xF) * 4
    if hlen < 20:
        nd.w(f"bad-hlen {hlen}")
        return
    if length < tot_len:
        nd.w(f"truncated-ip - {tot_len - length} bytes missing! ")
    if tot_len < hlen:
        nd.w(f"bad-len {tot_len}")
        return
    bp = bp[:tot_len]
    plen = tot_len - hlen
    offset = (frag & 0x1FFF) * 8
    truncated = False
    if nd.v:
        ecn = ("", ",ECT(1)", ",ECT(0)", ",CE")[tos & 3]
        flags = ""
        if frag & 0x2000:
            flags += "+"
        if frag & 0x4000:
            flags += (", " if flags else "") + "DF"
        if frag & 0x8000:
            flags += (", " if flags else "") + "rsvd"
        nd.w(
            f"(tos 0x{tos:x}{ecn}, ttl {ttl}, id {ident}, offset {offset}, "
            f"flags [{flags or 'none'}], proto {IP_PROTOS.get(proto, 'unknown')} ({proto}), "
            f"length {tot_len}"
        )
        if hlen > 20:
            nd.w(", options (")
            if not _ip_optprint(nd, bp[20:hlen], hlen - 20):
                nd.w(" [truncated-option]")
                truncated = True
            nd.w(")")
        if len(bp) >= hlen and cksum(bp[:hlen]) != 0:
            nd.w(f", bad cksum {csum:x} (->{cksum_shouldbe(bp[:hlen], 10, 0):x})!")
        nd.w(")\n    ")
        if truncated:
            nd.w(f"{ip4(src)} > {ip4(dst)}: ")
            raise Trunc()
    ip = IPInfo(
        4,
        src,
        dst,
        fragmented=bool(frag & 0x2000),
        ttl=ttl,
        phdst=_ip_finddst(bp, hlen, dst),
        hdr=bp[:hlen],
    )
    if offset == 0:
        if proto not in (6, 17, 132, 33):
            nd.w(f"{ip.srcs} > {ip.dsts}: ")
        if len(bp) < hlen:
            nd.w(f" [remaining caplen({len(bp)}) < header length({hlen})]")
            raise Trunc()
        nd.ip_demux(proto, bp[hlen:], plen, ip)
    else:
        nd.w(f"{ip.srcs} > {ip.dsts}: ip-proto-{proto}")


def _ip_finddst(bp: bytes, hlen: int, dst: bytes) -> bytes:
    """The last hop of a source route, else the destination. tcpdump: print-ip.c, ip_finddst()."""
    opts = bp[20:hlen]
    i = 0
    while i < len(opts):
        t = opts[i]
        if t == 0:
            break
        if t == 1:
            i += 1
            continue
        if i + 1 >= len(opts):
            break
        ln = opts[i + 1]
        if ln < 2 or i + ln > len(opts):
            break
        if t in (131, 137) and ln >= 7:
            return opts[i + ln - 4 : i + ln]
        i += ln
    return dst


def _ip_optprint(nd: Printer, opts: bytes, length: int) -> bool:
    """IPv4 options; False if they ran past the captured bytes.

    tcpdump: print-ip.c, ip_optprint().
    """
    i = 0
    sep = ""
    while i < length:
        nd.w(sep)
        sep = ","
        if i >= len(opts):
            return False
        code = opts[i]
        nd.w(_IPOPTS.get(code, f"unknown {code}"))
        if code in (0, 1):
            optlen = 1
        else:
            if i + 1 >= len(opts):
                return False
            optlen = opts[i + 1]
            if optlen < 2:
                nd.w(f" [bad length {optlen}]")
                return True
        if optlen > length - i:
            nd.w(f" [bad length {optlen}]")
            return True
        if i + optlen > len(opts):
            return False
        body = opts[i : i + optlen]
        if code == 0:
            return True
        if code in (7, 131, 137):
            _ip_printroute(nd, body, optlen)
        elif code == 148:
            if optlen < 4:
                nd.w(f" [bad length {optlen}]")
            elif H.unpack_from(body, 2)[0] != 0:
                nd.w(f" value {H.unpack_from(body, 2)[0]}")
        elif code == 68:
            _ip_printts(nd, body, optlen)
        i += optlen
    return True


def _ip_printroute(nd: Printer, cp: bytes, length: int) -> None:
    """tcpdump: print-ip.c, ip_printroute()."""
    if length < 3:
        nd.w(f" [bad length {length}]")
        return
    if (length + 1) & 3:
        nd.w(f" [bad length {length}]")
    ptr = cp[2] - 1
    if ptr < 3 or ((ptr + 1) & 3) or ptr > length + 1:
        nd.w(f" [bad ptr {cp[2]}]")
    ln = 3
    while ln < length:
        if ln + 4 > len(cp):
            raise Trunc()
        nd.w(f" {ip4(cp[ln : ln + 4])}")
        if ptr > ln:
            nd.w(",")
        ln += 4


def _ip_printts(nd: Printer, cp: bytes, length: int) -> None:
    """tcpdump: print-ip.c, ip_printts()."""
    if length < 4:
        nd.w(f"[bad length {length}]")
        return
    nd.w(" TS{")
    kind = cp[3] & 0xF
    hoplen = 4 if kind == 0 else 8
    if (length - 4) & (hoplen - 1):
        nd.w(f"[bad length {length}]")
    ptr = cp[2] - 1
    ln = 0
    if ptr < 4 or ((ptr - 4) & (hoplen - 1)) or ptr > length + 1:
        nd.w(f"[bad ptr {cp[2]}]")
    names = {0: "TSONLY", 1: "TS+ADDR", 3: "PRESPEC"}
    if kind in names:
        nd.w(names[kind])
        sep = " "
        ln = 4
        while ln < length:
            if ptr == ln:
                sep = " ^ "
            if ln + hoplen > len(cp):
                raise Trunc()
            ts = I.unpack_from(cp, ln + hoplen - 4)[0]
            nd.w(f"{sep}{ts}@{ip4(cp[ln : ln + 4]) if hoplen == 8 else ''}")
            sep = " "
            ln += hoplen
    else:
        nd.w(f"[bad ts type {kind}]")
    nd.w(" ^ " if ptr == ln else "")
    if cp[3] >> 4:
        nd.w(f" [{cp[3] >> 4} hops not recorded]}} ")
    else:
        nd.w("}")


@ipproto(59)
def no_next_header(nd: Printer, _bp: bytes, _length: int, _ip: IPInfo) -> None:
    """tcpdump: print-ip-demux.c, ip_demux_print() (IPPROTO_NONE)."""
    nd.w("no next header")


# -- IPv6 --------------------------------------------------------------------------------------
@ethertype(0x86DD)
def ip6_print_ether(nd: Printer, bp: bytes, length: int) -> None:
    ip6_print(nd, bp, length)


@ipproto(41)
def ip6_print_in_ip(nd: Printer, bp: bytes, length: int, _ip: IPInfo) -> None:
    ip6_print(nd, bp, length)


def ip6_finddst(bp: bytes, dst: bytes) -> bytes:
    """The final destination for the pseudo-header (RFC 8200 §8.1).

    Walks hop-by-hop, destination-options, fragment and mobility headers to a
    routing header; for type 0 and 2 the last address listed, for type 4
    (segment routing) segment 0. Otherwise the IPv6 destination.

    tcpdump: print-ip6.c, ip6_finddst().
    """
    nh = bp[6]
    off = 40
    while off < len(bp):
        if nh in (0, 60, 135, 62):
            if off + 2 > len(bp):
                return dst
            nh, off = bp[off], off + ((bp[off + 1] + 1) << 3)
        elif nh == 44:
            nh, off = bp[off], off + 8
        elif nh == 43:
            if off + 8 > len(bp):
                return dst
            hlen, rtype = bp[off + 1], bp[off + 2]
            if rtype in (0, 2):
                if hlen % 2:
                    return dst
                found = dst
                for i in range(hlen >> 1):
                    a = off + 8 + 16 * i
                    if a + 16 > len(bp):
                        break
                    found = bp[a : a + 16]
                return found
            if rtype == 4:
                if hlen % 2 or off + 24 > len(bp):
                    return dst
                return bp[off + 8 : off + 24]
            return dst
        else:
            return dst
    return dst


def ip6_print(nd: Printer, bp: bytes, length: int) -> None:
    """An IPv6 packet and its extension headers. tcpdump: print-ip6.c, ip6_print()."""
    nd.protocol = "ip6"
    if len(bp) < 40:
        raise Trunc(local=True)
    if length < 40:
        nd.w(f"truncated-ip6 {length}")
        return
    if not nd.e:
        nd.w("IP6 ")
    if bp[0] >> 4 != 6:
        nd.w(f"version error: {bp[0] >> 4} != 6")
        return
    payload_len = H.unpack_from(bp, 4)[0]
    if payload_len != 0:
        total = payload_len + 40
        if length < total:
            nd.w(f"truncated-ip6 - {total - length} bytes missing!")
    else:
        total = length + 40
    nh = bp[6]
    if nd.v:
        flow = I.unpack_from(bp)[0]
        nd.w("(")
        if flow & 0x0FF00000:
            nd.w(f"class 0x{(flow & 0x0FF00000) >> 20:02x}, ")
        if flow & 0x000FFFFF:
            nd.w(f"flowlabel 0x{flow & 0x000FFFFF:05x}, ")
        nd.w(
            f"hlim {bp[7]}, next-header {IP_PROTOS.get(nh, 'unknown')} ({nh}) "
            f"payload length: {payload_len}) "
        )
    nd.need(bp, 40)
    _vcf, _plen, _nxt, hlim, src, dst = _IP6.unpack_from(bp)
    bp = bp[:total]
    ln = total
    off = 0
    advance = 40
    first_nh = nh
    fragmented = False
    found_ext = False
    found_hbh = False
    ph = 255
    while off < len(bp) and advance > 0:
        if ln < advance:
            raise Trunc(local=True)
        off += advance
        ln -= advance
        if off == 40 and nh not in (6, 17, 33, 132):
            nd.w(f"{ip6(src)} > {ip6(dst)}: ")
        cp = bp[off:]
        if nh == 0:
            if found_hbh:
                nd.w("[The Hop-by-Hop Options header was already found] (invalid)")
                return
            if ph != 255:
                nd.w("[The Hop-by-Hop Options header don't follow the IPv6 header] (invalid)")
                return
            advance = _opts_process(nd, cp, "hbhopt", "HBH", True)
            if advance < 0:
                return
            found_ext = found_hbh = True
        elif nh == 60:
            advance = _opts_process(nd, cp, "dstopt", "DSTOPT", bool(nd.v))
            if advance < 0:
                return
            found_ext = True
        elif nh == 44:
            advance = _frag6_print(nd, cp, 40 + payload_len - off - 8)
            if advance < 0 or len(bp) <= off + advance:
                return
            found_ext = True
            fragmented = True
        elif nh in (135, 62):
            _mobility_print(nd, cp)
            return
        elif nh == 43:
            nd.need(cp, 1, local=True)
            advance = _rt6_print(nd, cp)
            if advance < 0:
                return
            found_ext = True
        else:
            if payload_len == 0:
                if found_ext:
                    raise Trunc(local=True)
                ln = 0
            info = IPInfo(
                6,
                src,
                dst,
                fragmented=fragmented,
                ttl=hlim,
                phdst=ip6_finddst(bp, dst) if first_nh in (0, 60, 135, 62, 44, 43) else dst,
                hdr=bp[:40],
            )
            info.ports_only = first_nh != nh
            nd.ip_demux(nh, cp, ln, info)
            return
        nd.need(cp, 1)
        ph = nh
        nh = cp[0]
        nd.protocol = "ip6"


def _opts_process(nd: Printer, cp: bytes, proto: str, caps: str, show: bool) -> int:
    """A hop-by-hop or destination options header; its length, or -1.

    tcpdump: print-ip6opts.c, hbhopt_process(), dstopt_process(), ip6_opt_process().
    """
    nd.protocol = proto
    nd.need(cp, 2)
    hlen = (cp[1] + 1) << 3
    nd.need(cp, hlen, local=True)
    nd.w(caps + " ")
    if not show:
        return hlen
    opts = cp[2:hlen]
    i = 0
    n = len(opts)
    while i < n:
        t = opts[i]
        if t == 0:
            optlen = 1
        else:
            if n - i < 2:
                nd.w(f"[remaining length {n - i} < 2] (invalid)")
                return -1
            optlen = opts[i + 1] + 2
        if n - i < optlen:
            nd.w(f"[remaining length {n - i} < {optlen}] (invalid)")
            return -1
        if t == 0:
            if nd.v:
                nd.w("(pad1)")
        elif t == 1:
            if nd.v:
                nd.w("(padn)")
        elif t == 5:
            if optlen - 2 != 2:
                nd.w(f"[(rtalert) length {optlen - 2} != 2] (invalid)")
                return -1
            if nd.v:
                nd.w(f"(rtalert: 0x{H.unpack_from(opts, i + 2)[0]:04x}) ")
        elif t == 0xC2:
            if optlen - 2 != 4:
                nd.w(f"[(jumbo) length {optlen - 2} != 4] (invalid)")
                return -1
            if nd.v:
                nd.w(f"(jumbo: {I.unpack_from(opts, i + 2)[0]} - payload len != 0) ")
        else:
            if nd.v:
                nd.w(f"(opt_type 0x{t:02x}: len={optlen - 2})")
        i += optlen
    if nd.v and n:
        nd.w(" ")
    return hlen


def _rt6_print(nd: Printer, cp: bytes) -> int:
    """A routing header: ``RT6 (len=…, type=…, segleft=…, [0]addr, …)``.

    tcpdump: print-rt6.c, rt6_print().
    """
    nd.protocol = "rt6"
    nd.w("RT6")
    nd.need(cp, 2)
    ln = cp[1]
    nd.w(f" (len={ln}")
    nd.need(cp, 3)
    rtype = cp[2]
    nd.w(f", type={rtype}")
    if rtype == 0:
        nd.w(" [Deprecated]")
    nd.need(cp, 4)
    nd.w(f", segleft={cp[3]}")
    if rtype in (0, 2):
        nd.need(cp, 8)
        rsv = I.unpack_from(cp, 4)[0]
        if rsv or nd.v:
            nd.w(f", rsv=0x{rsv:x}")
        if ln % 2:
            nd.w(f" (invalid length {ln}) (invalid)")
            return -1
        for i in range(ln >> 1):
            a = 8 + 16 * i
            nd.need(cp, a + 16)
            nd.w(f", [{i}]{ip6(cp[a : a + 16])}")
        nd.w(") ")
        return (ln + 1) << 3
    if rtype == 4:
        nd.need(cp, 8)
        last, flags, tag = cp[4], cp[5], H.unpack_from(cp, 6)[0]
        nd.w(f", last-entry={last}")
        if flags or nd.v:
            nd.w(f", flags=0x{flags:x}")
        nd.w(f", tag={tag:x}")
        for i in range(last + 1):
            a = 8 + 16 * i
            nd.need(cp, a + 16)
            nd.w(f", [{i}]{ip6(cp[a : a + 16])}")
        nd.w(") ")
        return (ln + 1) << 3
    nd.w(" (unknown type) (invalid)")
    return -1


def _frag6_print(nd: Printer, cp: bytes, flen: int) -> int:
    """``frag (offset|length)``; the header's length, or -1 for a later fragment.

    tcpdump: print-frag6.c, frag6_print().
    """
    nd.protocol = "frag6"
    nd.need(cp, 8)
    _nh, _r, offm, ident = struct.unpack_from("!BBHI", cp)
    foff = offm & 0xFFF8
    if nd.v:
        nd.w(f"frag (0x{ident:08x}:{foff}|{flen})")
    else:
        nd.w(f"frag ({foff}|{flen})")
    if foff:
        return -1
    nd.w(" ")
    return 8


_MH_TYPES: Final = {0: "BRR", 1: "HoTI", 2: "CoTI", 3: "HoT", 4: "CoT", 5: "BU", 6: "BA", 7: "BE"}
_MH_HDRLEN: Final = (8, 16, 16, 24, 24, 16, 16, 24)


def _mobility_print(nd: Printer, bp: bytes) -> None:
    """The IPv6 mobility header (RFC 6275). tcpdump: print-mobility.c, mobility_print()."""
    nd.protocol = "mobility"
    nd.need(bp, 2, local=True)
    mhlen = (bp[1] + 1) << 3
    nd.need(bp, 3)
    mtype = bp[2]
    if mtype <= 7 and mhlen < _MH_HDRLEN[mtype]:
        nd.w(f"(header length {mhlen} is too small for type {mtype})")
        raise Trunc(local=True)
    nd.w("mobility: " + _MH_TYPES.get(mtype, f"type-#{mtype}"))
    hlen = 6
    if mtype == 0:
        hlen = 8
    elif mtype in (1, 2):
        hlen = 8
        if nd.v:
            nd.need(bp, hlen + 8)
            a, b = struct.unpack_from("!II", bp, hlen)
            nd.w(f" {'Home' if mtype == 1 else 'Care-of'} Init Cookie={a:08x}:{b:08x}")
        hlen += 8
    elif mtype in (3, 4):
        nd.need(bp, 8)
        nd.w(f" nonce id=0x{H.unpack_from(bp, 6)[0]:x}")
        hlen = 8
        who = "Home" if mtype == 3 else "Care-of"
        if nd.v:
            nd.need(bp, hlen + 8)
            a, b = struct.unpack_from("!II", bp, hlen)
            nd.w(f" {who} Init Cookie={a:08x}:{b:08x}")
        hlen += 8
        if nd.v:
            nd.need(bp, hlen + 8)
            a, b = struct.unpack_from("!II", bp, hlen)
            nd.w(f" {who} Keygen Token={a:08x}:{b:08x}")
        hlen += 8
    elif mtype == 5:
        nd.need(bp, 8)
        nd.w(f" seq#={H.unpack_from(bp, 6)[0]}")
        hlen = 8
        nd.need(bp, hlen + 1)
        bits = (bp[hlen] & 0xF0) >> 4
        if bits:
            nd.w(" " + "".join(n for b, n in ((8, "A"), (4, "H"), (2, "L"), (1, "K")) if bits & b))
        hlen += 2
        nd.need(bp, hlen + 2)
        nd.w(f" lifetime={H.unpack_from(bp, hlen)[0] << 2}")
        hlen += 2
    elif mtype == 6:
        nd.need(bp, 8)
        nd.w(f" status={bp[6]}")
        if bp[7] & 0x80:
            nd.w(" K")
        hlen = 8
        nd.need(bp, hlen + 4)
        nd.w(f" seq#={H.unpack_from(bp, hlen)[0]}")
        nd.w(f" lifetime={H.unpack_from(bp, hlen + 2)[0] << 2}")
        hlen += 4
    elif mtype == 7:
        nd.need(bp, 8)
        nd.w(f" status={bp[6]}")
        hlen = 8
        nd.need(bp, hlen + 16)
        nd.w(f" homeaddr {ip6(bp[hlen : hlen + 16])}")
        hlen += 16
    else:
        nd.w(f" len={bp[1]}")
        return
    if nd.v:
        _mobility_opts(nd, bp[hlen:mhlen], mhlen - hlen)


def _mobility_opts(nd: Printer, bp: bytes, length: int) -> None:
    """tcpdump: print-mobility.c, mobility_opt_print()."""
    i = 0
    while i < length:
        nd.need(bp, i + 1)
        t = bp[i]
        if t == 0:
            optlen = 1
        else:
            if length - i < 2:
                raise Trunc(local=True)
            nd.need(bp, i + 2)
            optlen = bp[i + 1] + 2
        if length - i < optlen:
            raise Trunc(local=True)
        nd.need(bp, i + optlen)
        if t == 0:
            nd.w("(pad1)")
        elif t == 1:
            nd.w("(padn)")
        elif t == 2:
            nd.w("(refresh: ")
            if optlen < 4:
                raise Trunc(local=True)
            nd.w(f"{H.unpack_from(bp, i + 2)[0] << 2})")
        elif t == 3:
            nd.w("(alt-CoA: ")
            if optlen < 18:
                raise Trunc(local=True)
            nd.w(f"{ip6(bp[i + 2 : i + 18])})")
        elif t == 4:
            nd.w("(ni: ")
            if optlen < 6:
                raise Trunc(local=True)
            a, b = HH.unpack_from(bp, i + 2)
            nd.w(f"ho=0x{a:04x} co=0x{b:04x})")
        elif t == 5:
            nd.w("(auth)")
            if optlen < 12:
                raise Trunc(local=True)
        else:
            nd.w(f"(unknown: type-#{t} len={optlen - 2})")
        i += optlen
