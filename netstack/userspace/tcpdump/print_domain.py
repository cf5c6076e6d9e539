"""DNS (RFC 1035) over UDP and TCP port 53, and multicast DNS (5353), as tcpdump's one line.

Theory of operation: a query prints its id, opcode and flags and the question
(``12345+ A? example.com. (29)``); a response prints its id, flags, the
answer/authority/additional counts and the answers
(``12345 1/0/0 A 1.2.3.4 (45)``); ``-vv`` adds the question and the other
sections, ``-vvv`` the TTLs. Names are followed through compression
pointers, which must point backwards (``<BAD PTR>`` otherwise). Over TCP the
message's two-byte length prefix is checked first. Any field past the
captured bytes ends the line with `` [|domain]``.

tcpdump: print-domain.c, domain_print(), ns_qprint(), ns_rprint(), fqdn_print().
"""

from __future__ import annotations

import socket
from typing import Final

from netstack.userspace.tcpdump.netdissect import (
    H,
    I,
    IPInfo,
    Printer,
    Trunc,
    ip4,
    relts,
    tcp_port,
    udp_port,
)

__all__ = ["domain_print"]

_OPS: Final = ("", " inv_q", " stat", " op3", " notify", " update", " op6", " op7", " op8",
               " updateA", " updateD", " updateDA", " updateM", " updateMA", " zoneInit",
               " zoneRef")  # fmt: skip
_RCODES: Final = ("", " FormErr", " ServFail", " NXDomain", " NotImp", " Refused", " YXDomain",
                  " YXRRSet", " NXRRSet", " NotAuth", " NotZone", " Resp11", " Resp12",
                  " Resp13", " Resp14", " NoChange", " BadVers", "Resp17", " Resp18", " Resp19",
                  " Resp20", "Resp21", " Resp22", " BadCookie")  # fmt: skip
TYPES: Final = {1: "A", 2: "NS", 3: "MD", 4: "MF", 5: "CNAME", 6: "SOA", 7: "MB", 8: "MG",
                9: "MR", 10: "NULL", 11: "WKS", 12: "PTR", 13: "HINFO", 14: "MINFO", 15: "MX",
                16: "TXT", 17: "RP", 18: "AFSDB", 19: "X25", 20: "ISDN", 21: "RT", 22: "NSAP",
                23: "NSAP_PTR", 24: "SIG", 25: "KEY", 26: "PX", 27: "GPOS", 28: "AAAA",
                29: "LOC", 30: "NXT", 31: "EID", 32: "NIMLOC", 33: "SRV", 34: "ATMA",
                35: "NAPTR", 36: "KX", 37: "CERT", 38: "A6", 39: "DNAME", 40: "SINK",
                41: "OPT", 42: "APL", 43: "DS", 44: "SSHFP", 45: "IPSECKEY", 46: "RRSIG",
                47: "NSEC", 48: "DNSKEY", 49: "DHCID", 50: "NSEC3", 51: "NSEC3PARAM",
                52: "TLSA", 53: "SMIMEA", 55: "HIP", 56: "NINFO", 57: "RKEY", 58: "TALINK",
                59: "CDS", 60: "CDNSKEY", 61: "OPENPGPKEY", 62: "CSYNC", 63: "ZONEMD",
                64: "SVCB", 65: "HTTPS", 99: "SPF", 100: "UINFO", 101: "UID", 102: "GID",
                103: "UNSPEC", 104: "NID", 105: "L32", 106: "L64", 107: "LP", 108: "EUI48",
                109: "EUI64", 249: "TKEY", 250: "TSIG", 251: "IXFR", 252: "AXFR", 253: "MAILB",
                254: "MAILA", 255: "ANY", 256: "URI", 257: "CAA", 258: "AVC", 259: "DOA",
                260: "AMTRELAY", 32768: "TA", 32769: "DLV"}  # fmt: skip
CLASSES: Final = {1: "IN", 3: "CHAOS", 4: "HS", 255: "ANY"}
_EDNS_OPTS: Final = {1: "LLQ", 2: "UL", 3: "NSID", 5: "DAU", 6: "DHU", 7: "N3U", 8: "ECS",
                     9: "EXPIRE", 10: "COOKIE", 11: "KEEPALIVE", 12: "PADDING", 13: "CHAIN",
                     14: "KEY-TAG", 16: "CLIENT-TAG", 17: "SERVER-TAG"}  # fmt: skip
_MAXCDNAME: Final = 255


class _Bad(Exception):
    """A name or record ran past the capture: the printer's ``return NULL``."""


def _char(c: int) -> str:
    """tcpdump: util-print.c, fn_print_char()."""
    out = ""
    if c >= 0x80:
        out = "M-"
        c &= 0x7F
    if c < 0x20 or c == 0x7F:
        return out + "^" + chr(c ^ 0x40)
    return out + chr(c)


def _printn(nd: Printer, msg: bytes, at: int, n: int) -> None:
    """tcpdump: util-print.c, nd_printn() (truncated: nothing past the capture)."""
    chunk = msg[at : at + n]
    nd.w("".join(_char(c) for c in chunk))
    if len(chunk) < n:
        raise _Bad


def _nskip(msg: bytes, at: int) -> int:
    """The offset past a name. tcpdump: print-domain.c, ns_nskip()."""
    if at >= len(msg):
        raise _Bad
    i = msg[at]
    at += 1
    while i:
        kind = i & 0xC0
        if kind == 0xC0:
            return at + 1
        if kind == 0x40:
            if i & 0x3F != 1 or at >= len(msg):
                raise _Bad
            bitlen = msg[at] or 256
            at += 1 + (bitlen + 7) // 8
        elif kind == 0x80:
            raise _Bad
        else:
            at += i
        if at >= len(msg):
            raise _Bad
        i = msg[at]
        at += 1
    return at


def _labellen(nd: Printer, msg: bytes, at: int) -> int:
    """tcpdump: print-domain.c, labellen()."""
    if at >= len(msg):
        raise _Bad
    i = msg[at]
    kind = i & 0xC0
    if kind == 0x40:
        if i & 0x3F != 1:
            nd.w(f"<ELT {i & 0x3F}>")
            raise _Bad
        if at + 1 >= len(msg):
            raise _Bad
        return ((msg[at + 1] or 256) + 7) // 8 + 1
    if kind == 0x80:
        nd.w("<BAD LABEL TYPE>")
        raise _Bad
    return i


def fqdn_print(nd: Printer, msg: bytes, at: int) -> int:
    """Print the name at *at* (following compression); the offset past it.

    tcpdump: print-domain.c, fqdn_print().
    """
    ln = _labellen(nd, msg, at)
    max_offset = at
    i = msg[at]
    at += 1
    compress = False
    rp = at + ln if i & 0xC0 != 0xC0 else -1  # -1: tcpdump's rp == NULL
    if i == 0:
        nd.w(".")
        return rp
    name_chars = 0
    while i and at < len(msg):
        kind = i & 0xC0
        if kind == 0xC0:
            if not compress:
                rp = at + 1
                compress = True
            if at >= len(msg):
                raise _Bad
            offset = ((i << 8) | msg[at]) & 0x3FFF
            if offset >= max_offset:
                nd.w("<BAD PTR>")
                raise _Bad
            max_offset = offset
            at = offset
            if at >= len(msg):
                raise _Bad
            i = msg[at]
            ln = _labellen(nd, msg, at)
            at += 1
            continue
        if kind == 0x40:
            _blabel_print(nd, msg, at)
        elif kind == 0x80:
            nd.w("<BAD LABEL TYPE>")
            raise _Bad
        elif name_chars + ln <= _MAXCDNAME:
            _printn(nd, msg, at, ln)
        elif name_chars < _MAXCDNAME:
            _printn(nd, msg, at, _MAXCDNAME - name_chars)
        if kind == 0:
            name_chars += ln
        at += ln
        if name_chars <= _MAXCDNAME:
            nd.w(".")
        name_chars += 1
        if at >= len(msg):
            raise _Bad
        i = msg[at]
        ln = _labellen(nd, msg, at)
        at += 1
        if not compress:
            rp += ln + 1
    if name_chars > _MAXCDNAME:
        nd.w("<DOMAIN NAME TOO LONG>")
    if rp < 0:
        raise _Bad
    return rp


def _blabel_print(nd: Printer, msg: bytes, at: int) -> None:
    """An EDNS0 bit-string label. tcpdump: print-domain.c, blabel_print()."""
    if at >= len(msg):
        raise _Bad
    bitlen = msg[at] or 256
    slen = (bitlen + 3) // 4
    lim = at + 1 + slen
    nd.w("\\[x")
    bitp, b = at + 1, bitlen
    while bitp < lim and b > 7:
        nd.need(msg, bitp + 1)
        nd.w(f"{msg[bitp]:02x}")
        b -= 8
        bitp += 1
    if b > 4:
        nd.need(msg, bitp + 1)
        nd.w(f"{msg[bitp] & (0xFF << (8 - b)) & 0xFF:02x}")
    elif b > 0:
        nd.need(msg, bitp + 1)
        nd.w(f"{((msg[bitp] >> 4) & 0x0F) & (0x0F << (4 - b)) & 0x0F:1x}")
    nd.w(f"/{bitlen}]")


def _qprint(nd: Printer, msg: bytes, at: int, mdns: bool) -> int:
    """A question: `` A? name.``. tcpdump: print-domain.c, ns_qprint()."""
    name_at = at
    at = _nskip(msg, at)
    if at + 4 > len(msg):
        raise _Bad
    qtype, qclass = H.unpack_from(msg, at)[0], H.unpack_from(msg, at + 2)[0]
    nd.w(f" {TYPES.get(qtype, f'Type{qtype}')}")
    cls = qclass & ~0x8000 if mdns else qclass
    if cls != 1:
        nd.w(f" {CLASSES.get(cls, f'(Class {cls})')}")
    if mdns:
        nd.w(" (QU)" if qclass & 0x8000 else " (QM)")
    nd.w("? ")
    fqdn_print(nd, msg, name_at)
    return at + 4


def _rprint(nd: Printer, msg: bytes, at: int, mdns: bool) -> int:
    """A resource record. tcpdump: print-domain.c, ns_rprint()."""
    if nd.v:
        nd.w(" ")
        at = fqdn_print(nd, msg, at)
    else:
        try:
            at = _nskip(msg, at)
        except _Bad:
            return len(msg)
    if at + 10 > len(msg):
        return len(msg)
    typ, i = H.unpack_from(msg, at)[0], H.unpack_from(msg, at + 2)[0]
    at += 4
    cls = i & ~0x8000 if mdns else i
    if cls != 1 and typ != 41:
        nd.w(f" {CLASSES.get(cls, f'(Class {cls})')}")
    if mdns and i & 0x8000:
        nd.w(" (Cache flush)")
    opt_flags = 0
    if typ == 41:
        opt_flags = H.unpack_from(msg, at + 2)[0]
    elif nd.v > 2:
        nd.w(f" [{relts(I.unpack_from(msg, at)[0])}]")
    at += 4
    ln: int = H.unpack_from(msg, at)[0]
    at += 2
    rp = at + ln
    nd.w(f" {TYPES.get(typ, f'Type{typ}')}")
    if rp > len(msg):
        raise _Bad
    if typ == 1:
        if at + 4 > len(msg):
            raise _Bad
        nd.w(f" {ip4(msg[at : at + 4])}")
    elif typ in (2, 5, 12, 39):
        nd.w(" ")
        fqdn_print(nd, msg, at)
    elif typ == 6:
        if nd.v:
            nd.w(" ")
            at = fqdn_print(nd, msg, at)
            nd.w(" ")
            at = fqdn_print(nd, msg, at)
            if at + 20 > len(msg):
                raise _Bad
            for k in range(5):
                nd.w(f" {I.unpack_from(msg, at + 4 * k)[0]}")
    elif typ == 15:
        nd.w(" ")
        if at + 2 > len(msg):
            raise _Bad
        fqdn_print(nd, msg, at + 2)
        nd.w(f" {H.unpack_from(msg, at)[0]}")
    elif typ == 16:
        while at < rp:
            nd.w(' "')
            if at >= len(msg):
                raise _Bad
            n = msg[at]
            _printn(nd, msg, at + 1, n)
            at += 1 + n
            nd.w('"')
    elif typ == 33:
        nd.w(" ")
        if at + 6 > len(msg):
            raise _Bad
        fqdn_print(nd, msg, at + 6)
        prio, weight, port = (
            H.unpack_from(msg, at)[0],
            H.unpack_from(msg, at + 2)[0],
            H.unpack_from(msg, at + 4)[0],
        )
        nd.w(f":{port} {prio} {weight}")
    elif typ == 28:
        if at + 16 > len(msg):
            raise _Bad
        nd.w(f" {socket.inet_ntop(socket.AF_INET6, msg[at : at + 16])}")
    elif typ == 41:
        nd.w(f" UDPsize={cls}")
        if opt_flags & 0x8000:
            nd.w(" DO")
        if at < rp:
            nd.w(" [")
            while at < rp:
                at = _eopt_print(nd, msg, at)
                if at < rp:
                    nd.w(",")
            nd.w("]")
    return rp


def _eopt_print(nd: Printer, msg: bytes, at: int) -> int:
    """An EDNS option (shown as its name and data in hex). tcpdump: print-domain.c, eopt_print()."""
    if at + 2 > len(msg):
        raise _Bad
    opt = H.unpack_from(msg, at)[0]
    nd.w(_EDNS_OPTS.get(opt, f"Opt{opt}"))
    if at + 4 > len(msg):
        raise _Bad
    ln = H.unpack_from(msg, at + 2)[0]
    at += 4
    if at + ln > len(msg):
        raise _Bad
    if ln > 0:
        nd.w(" ")
        data = msg[at : at + ln]
        if opt == 12:
            nd.w(f"({ln})")
        elif opt == 10:
            if ln < 8 or 8 < ln < 16 or ln > 40:
                nd.w(" (invalid)")
            else:
                nd.w(data[:8].hex() + (" " + data[8:].hex() if ln > 8 else ""))
        else:
            nd.w(data.hex())
    return at + int(ln)


@udp_port(53)
def domain_udp(nd: Printer, bp: bytes, length: int, _ip: IPInfo) -> None:
    domain_print(nd, bp, length, over_tcp=False, mdns=False)


@tcp_port(53)
def domain_tcp(nd: Printer, bp: bytes, length: int, _ip: IPInfo) -> None:
    domain_print(nd, bp, length, over_tcp=True, mdns=False)


def domain_print(nd: Printer, bp: bytes, length: int, *, over_tcp: bool, mdns: bool) -> None:
    """A DNS message. tcpdump: print-domain.c, domain_print()."""
    nd.protocol = "domain"
    if over_tcp:
        if length < 2:
            nd.w(f" [DNS over TCP: length {length} < 2] (invalid)")
            return
        length -= 2
        nd.need(bp, 2, local=True)
        if H.unpack_from(bp)[0] != length:
            nd.w(f" [prefix length({H.unpack_from(bp)[0]}) != length({length})] (invalid)")
            return
        bp = bp[2:]
        nd.w(" ")
    if length < 12:
        nd.w(f"domain [length {length} < 12] (invalid)")
        return
    nd.need(bp, 12, local=True)
    msg = bp[:length]
    ident, flags, qd, an, ns, ar = (H.unpack_from(msg, 2 * k)[0] for k in range(6))
    rcode = _ext_rcode(msg, flags, qd, an, ns, ar)
    try:
        if flags & 0x8000:
            _response(nd, msg, ident, flags, rcode, qd, an, ns, ar, mdns)
        else:
            _query(nd, msg, ident, flags, qd, an, ns, ar, mdns)
    except _Bad:
        raise Trunc(local=True) from None
    nd.w(f" ({length})")


def _ext_rcode(msg: bytes, flags: int, qd: int, an: int, ns: int, ar: int) -> int:
    """The rcode with an OPT record's extended bits. tcpdump: print-domain.c, domain_print()."""
    rcode = int(flags) & 0xF
    at = 12
    try:
        for _ in range(qd):
            at = _nskip(msg, at) + 4
            if at >= len(msg):
                return rcode
        for _ in range(an + ns):
            at = _nskip(msg, at) + 8
            if at + 2 > len(msg):
                return rcode
            at += 2 + H.unpack_from(msg, at)[0]
            if at >= len(msg):
                return rcode
        for _ in range(ar):
            at = _nskip(msg, at)
            if at + 2 > len(msg):
                return rcode
            typ = H.unpack_from(msg, at)[0]
            at += 4
            if at + 1 > len(msg):
                return rcode
            if typ == 41:
                return rcode | (msg[at] << 4)
            at += 4
            if at + 2 > len(msg):
                return rcode
            at += 2 + H.unpack_from(msg, at)[0]
            if at >= len(msg):
                return rcode
    except _Bad:
        pass
    return rcode


def _rcode_name(rcode: int) -> str:
    return _RCODES[rcode] if rcode < len(_RCODES) else f" Resp{rcode & 0xFFF}"


def _sections(nd: Printer, msg: bytes, at: int, counts: list[int], mdns: bool, first: bool) -> int:
    """The answer (when *first*), authority and additional records, as ``-vv`` prints them."""
    names = ("", " ns:", " ar:")
    for k, count in enumerate(counts):
        if k == 0 and not first:
            continue
        if count and (k == 0 or at < len(msg)):
            nd.w(names[k])
            at = _rprint(nd, msg, at, mdns)
            count -= 1
            while at < len(msg) and count:
                nd.w(",")
                at = _rprint(nd, msg, at, mdns)
                count -= 1
        if count:
            raise _Bad
    return at


def _response(
    nd: Printer,
    msg: bytes,
    ident: int,
    flags: int,
    rcode: int,
    qd: int,
    an: int,
    ns: int,
    ar: int,
    mdns: bool,
) -> None:
    nd.w(
        f"{ident}{_OPS[(flags >> 11) & 0xF]}{_rcode_name(rcode)}"
        f"{'*' if flags & 0x0400 else ''}{'' if flags & 0x0080 else '-'}"
        f"{'|' if flags & 0x0200 else ''}{'$' if flags & 0x0020 else ''}"
    )
    if qd != 1:
        nd.w(f" [{qd}q]")
    at = 12
    for k in range(qd):
        if k:
            nd.w(",")
        if nd.v > 1:
            nd.w(" q:")
            at = _qprint(nd, msg, at, mdns)
        else:
            at = _nskip(msg, at) + 4
    nd.w(f" {an}/{ns}/{ar}")
    if an:
        at = _rprint(nd, msg, at, mdns)
        an -= 1
        while at < len(msg) and an:
            nd.w(",")
            at = _rprint(nd, msg, at, mdns)
            an -= 1
    if an:
        raise _Bad
    if nd.v > 1:
        _sections(nd, msg, at, [0, ns, ar], mdns, first=False)


def _query(
    nd: Printer,
    msg: bytes,
    ident: int,
    flags: int,
    qd: int,
    an: int,
    ns: int,
    ar: int,
    mdns: bool,
) -> None:
    opcode = (flags >> 11) & 0xF
    nd.w(f"{ident}{_OPS[opcode]}{'+' if flags & 0x0100 else ''}{'%' if flags & 0x0010 else ''}")
    if flags & 0x6CF:
        nd.w(f" [b2&3=0x{flags:x}]")
    if opcode == 1:
        if qd:
            nd.w(f" [{qd}q]")
        if an != 1:
            nd.w(f" [{an}a]")
    else:
        if an:
            nd.w(f" [{an}a]")
        if qd != 1:
            nd.w(f" [{qd}q]")
    if ns:
        nd.w(f" [{ns}n]")
    if ar:
        nd.w(f" [{ar}au]")
    at = 12
    if qd:
        at = _qprint(nd, msg, at, mdns)
        qd -= 1
        while at < len(msg) and qd:
            at = _qprint(nd, msg, at, mdns)
            qd -= 1
    if qd:
        raise _Bad
    if nd.v > 1:
        _sections(nd, msg, at, [an, ns, ar], mdns, first=True)


@udp_port(5353)
def mdns_udp(nd: Printer, bp: bytes, length: int, _ip: IPInfo) -> None:
    domain_print(nd, bp, length, over_tcp=False, mdns=True)
