"""GRE (RFC 2784/2890, version 0) and PPTP's enhanced GRE (RFC 2637, version 1), and PPP.

Theory of operation: ``gre_print`` prints ``GREv<version>`` and hands the
rest to the version's printer. Version 0 prints its optional checksum
(``-v``), offset, key and sequence number, then the payload by its protocol
type (IPv4, IPv6, transparent Ethernet); version 1 — PPTP's — prints the
call ID from the key field, the sequence and acknowledgement numbers, and
the PPP frame inside (``no-payload`` for an acknowledgement-only packet).
PPP skips the HDLC address and control bytes, reads a one- or two-byte
protocol and prints IPv4/IPv6 with their printers (``-e``: the protocol's
name first).

tcpdump: print-gre.c, print-ppp.c.
"""

from __future__ import annotations

from typing import Final

from netstack.userspace.tcpdump.netdissect import (
    ETHERTYPES,
    H,
    I,
    IPInfo,
    Printer,
    Trunc,
    bittok,
    hex_dump,
    ipproto,
)
from netstack.userspace.tcpdump.print_ether import ether_print

__all__ = ["gre_print", "ppp_print"]

_GRE_FLAGS: Final = ((0x8000, "checksum present"), (0x4000, "routing present"),
                     (0x2000, "key present"), (0x1000, "sequence# present"),
                     (0x0800, "source routing present"), (0x0080, "ack present"))  # fmt: skip


@ipproto(47)
def gre_print(nd: Printer, bp: bytes, length: int, _ip: IPInfo) -> None:
    """tcpdump: print-gre.c, gre_print()."""
    nd.protocol = "gre"
    nd.w("GRE")
    if length < 2:
        raise Trunc(local=True)
    nd.need(bp, 2, local=True)
    vers = H.unpack_from(bp)[0] & 7
    nd.w(f"v{vers}")
    if vers == 0:
        _gre_print_0(nd, bp, length)
    elif vers == 1:
        _gre_print_1(nd, bp, length)
    else:
        nd.w(" ERROR: unknown-version")


def _gre_print_0(nd: Printer, bp: bytes, length: int) -> None:
    """tcpdump: print-gre.c, gre_print_0()."""
    ln = length
    nd.need(bp, 2, local=True)
    flags = H.unpack_from(bp)[0]
    if nd.v:
        nd.w(f", Flags [{bittok(_GRE_FLAGS, 'none', flags)}]")
    if ln < 4:
        raise Trunc(local=True)
    nd.need(bp, 4, local=True)
    prot = H.unpack_from(bp, 2)[0]
    off = 4
    ln -= 4
    if flags & 0xC000:
        if ln < 2:
            raise Trunc(local=True)
        nd.need(bp, off + 2, local=True)
        if nd.v:
            nd.w(f", sum 0x{H.unpack_from(bp, off)[0]:x}")
        off += 2
        ln -= 2
        if ln < 2:
            raise Trunc(local=True)
        nd.need(bp, off + 2, local=True)
        nd.w(f", off 0x{H.unpack_from(bp, off)[0]:x}")
        off += 2
        ln -= 2
    if flags & 0x2000:
        if ln < 4:
            raise Trunc(local=True)
        nd.need(bp, off + 4, local=True)
        nd.w(f", key=0x{I.unpack_from(bp, off)[0]:x}")
        off += 4
        ln -= 4
    if flags & 0x1000:
        if ln < 4:
            raise Trunc(local=True)
        nd.need(bp, off + 4, local=True)
        nd.w(f", seq {I.unpack_from(bp, off)[0]}")
        off += 4
        ln -= 4
    if flags & 0x4000:
        while True:
            if ln < 4:
                raise Trunc(local=True)
            nd.need(bp, off + 4, local=True)
            af = H.unpack_from(bp, off)[0]
            sreoff, srelen = bp[off + 2], bp[off + 3]
            off += 4
            ln -= 4
            if af == 0 and srelen == 0:
                break
            if not _gre_sre(nd, af, sreoff, srelen, bp[off:], ln):
                raise Trunc(local=True)
            if ln < srelen:
                raise Trunc(local=True)
            off += srelen
            ln -= srelen
    if nd.e:
        nd.w(f", proto {ETHERTYPES.get(prot, 'unknown')} (0x{prot:04x})")
    nd.w(f", length {length}")
    nd.w("\n\t" if nd.v else ": ")
    inner = bp[off:]
    if prot in (0x0800, 0x86DD):
        nd.ethertype_print(prot, inner, ln)
    elif prot == 0x6558:
        ether_print(nd, inner, ln)
    else:
        nd.w(f"gre-proto-0x{prot:x}")


def _gre_sre(nd: Printer, af: int, sreoff: int, srelen: int, bp: bytes, ln: int) -> bool:
    """A source route entry. tcpdump: print-gre.c, gre_sre_print()."""
    if af == 0x0800:
        nd.w(", (rtaf=ip")
        ok = _gre_sre_addrs(nd, sreoff, srelen, bp, ln, 4)
        nd.w(")")
        return ok
    if af == 0xFFFE:
        nd.w(", (rtaf=asn")
        ok = _gre_sre_addrs(nd, sreoff, srelen, bp, ln, 2)
        nd.w(")")
        return ok
    nd.w(f", (rtaf=0x{af:x})")
    return True


def _gre_sre_addrs(nd: Printer, sreoff: int, srelen: int, bp: bytes, ln: int, size: int) -> bool:
    """tcpdump: print-gre.c, gre_sre_ip_print(), gre_sre_asn_print()."""
    if sreoff & (size - 1):
        nd.w(f", badoffset={sreoff}")
        return False
    if srelen & (size - 1):
        nd.w(f", badlength={srelen}")
        return False
    if sreoff >= srelen:
        nd.w(f", badoff/len={sreoff}/{srelen}")
        return False
    at = 0
    while srelen:
        if ln < size:
            return False
        nd.need(bp, at + size)
        star = "*" if at == sreoff else ""
        if size == 4:
            nd.w(f" {star}{'.'.join(str(x) for x in bp[at : at + 4])}")
        else:
            nd.w(f" {star}{H.unpack_from(bp, at)[0]:x}")
        at += size
        ln -= size
        srelen -= size
    return True


def _gre_print_1(nd: Printer, bp: bytes, length: int) -> None:
    """PPTP's enhanced GRE. tcpdump: print-gre.c, gre_print_1()."""
    ln = length
    if ln < 2:
        raise Trunc(local=True)
    nd.need(bp, 2, local=True)
    flags = H.unpack_from(bp)[0]
    ln -= 2
    if nd.v:
        nd.w(f", Flags [{bittok(_GRE_FLAGS, 'none', flags)}]")
    if ln < 2:
        raise Trunc(local=True)
    nd.need(bp, 4, local=True)
    prot = H.unpack_from(bp, 2)[0]
    ln -= 2
    off = 4
    for bit, label in ((0x2000, "call"), (0x1000, "seq"), (0x0080, "ack")):
        if flags & bit:
            if ln < 4:
                raise Trunc(local=True)
            nd.need(bp, off + 4, local=True)
            value = I.unpack_from(bp, off)[0]
            nd.w(f", call {value & 0xFFFF}" if label == "call" else f", {label} {value}")
            off += 4
            ln -= 4
    if not flags & 0x1000:
        nd.w(", no-payload")
    if nd.e:
        nd.w(f", proto {ETHERTYPES.get(prot, 'unknown')} (0x{prot:04x})")
    nd.w(f", length {length}")
    if not flags & 0x1000:
        return
    nd.w("\n\t" if nd.v else ": ")
    if prot == 0x880B:
        ppp_print(nd, bp[off:], ln)
    else:
        nd.w(f"gre-proto-0x{prot:x}")


PPP_TYPES: Final = {
    0x0021: "IP",
    0x0023: "OSI",
    0x002B: "IPX",
    0x002D: "VJC IP",
    0x002F: "VJNC IP",
    0x003D: "MLPPP",
    0x0057: "IP6",
    0x00FD: "Compressed",
    0x0281: "MPLS",
    0x0283: "MPLS",
    0x8021: "IPCP",
    0x8023: "OSICP",
    0x8057: "IP6CP",
    0x8281: "MPLSCP",
    0x80FD: "CCP",
    0x8071: "BACP",
    0xC021: "LCP",
    0xC023: "PAP",
    0xC025: "LQM",
    0xC223: "CHAP",
    0xC227: "EAP",
    0xC02D: "BAP",
}
_CTRL_PROTOS: Final = frozenset((0xC021, 0x8021, 0x8023, 0x8281, 0x8057, 0x80FD, 0x8071))
_CPCODES: Final = {1: "Conf-Request", 2: "Conf-Ack", 3: "Conf-Nack", 4: "Conf-Reject",
                   5: "Term-Request", 6: "Term-Ack", 7: "Code-Reject", 8: "Prot-Reject",
                   9: "Echo-Request", 10: "Echo-Reply", 11: "Disc-Req", 12: "Ident",
                   13: "Time-Rem", 14: "Reset-Req", 15: "Reset-Ack"}  # fmt: skip
_LCP_OPTS: Final = ("Vend-Ext", "MRU", "ACCM", "Auth-Prot", "Qual-Prot", "Magic-Num",
                    "deprecated(6)", "PFC", "ACFC")  # fmt: skip


def _unknown_data(nd: Printer, data: bytes, indent: str) -> None:
    if data:
        nd.w("".join("\n" + line for line in hex_dump(data, False, indent[1:])))


def ppp_print(nd: Printer, p: bytes, length: int) -> int:
    """A PPP frame (address/control optional, protocol field compressed or not).

    tcpdump: print-ppp.c, ppp_print() → handle_ppp().
    """
    nd.protocol = "ppp"
    olen = length
    hdr_len = 0
    frame = p
    if length < 2:
        raise Trunc()
    nd.need(p, 2)
    head = H.unpack_from(p)[0]
    if head in (0x0003, 0x0103, 0xFF03):
        if nd.e and head == 0x0003:
            nd.w("In  ")
        elif nd.e and head == 0x0103:
            nd.w("Out ")
        p, length, hdr_len = p[2:], length - 2, 2
    if length < 2:
        raise Trunc()
    nd.need(p, 1)
    if p[0] % 2:
        proto, p, length, hdr_len = p[0], p[1:], length - 1, hdr_len + 1
    else:
        nd.need(p, 2)
        proto, p, length, hdr_len = H.unpack_from(p)[0], p[2:], length - 2, hdr_len + 2
    if nd.e:
        name = PPP_TYPES.get(proto, "unknown")
        nd.w(f"{name} (0x{proto:04x}), length {olen}")
        if name == "unknown":
            return hdr_len
        nd.w(": ")
    _handle_ppp(nd, proto, p, length, frame[max(0, hdr_len - 2) : hdr_len])
    return hdr_len


def _handle_ppp(nd: Printer, proto: int, p: bytes, length: int, before: bytes) -> None:
    """tcpdump: print-ppp.c, handle_ppp()."""
    if proto in _CTRL_PROTOS:
        _handle_ctrl_proto(nd, proto, p, length, before)
    elif proto in (0x0021, 0x0800, 0x002F):
        nd.ethertype_print(0x0800, p, length)
    elif proto in (0x0057, 0x86DD):
        nd.ethertype_print(0x86DD, p, length)
    elif proto == 0x00FD:
        nd.w("compressed PPP data")
    else:
        nd.w(PPP_TYPES.get(proto, f"unknown PPP protocol (0x{proto:04x})") + " ")
        _unknown_data(nd, p[:length], "\n\t")


def _handle_ctrl_proto(nd: Printer, proto: int, p: bytes, length: int, before: bytes) -> None:
    """LCP, IPCP, IP6CP, CCP…: code, id, length; ``-v``: the options.

    tcpdump: print-ppp.c, handle_ctrl_proto(), print_lcp_config_options().
    """
    typestr = PPP_TYPES.get(proto, f"unknown ctrl-proto (0x{proto:04x})")
    nd.w(f"{typestr}, ")
    if length < 4 or len(p) < 2:
        nd.w(f"[|{typestr}]")
        return
    code = p[0]
    nd.w(f"{_CPCODES.get(code, 'Unknown Opcode')} (0x{code:02x}), id {p[1]}, length {length + 2}")
    if not nd.v:
        return
    nd.need(p, 4)
    ln = H.unpack_from(p, 2)[0]
    if ln < 4:
        nd.w(f"\n\tencoded length {ln} (< 4))")
        return
    if ln > length:
        nd.w(f"\n\tencoded length {ln} (> packet length {length}))")
        return
    nd.w(f"\n\tencoded length {ln} (=Option(s) length {ln - 4})")
    if ln == 4:
        return
    if nd.v > 1:
        _unknown_data(nd, before + p[:4], "\n\t")  # from 2 bytes before, as tcpdump does
    opts = p[4:ln]
    if code in (1, 2, 3, 4) and proto == 0xC021:
        at = 0
        while at < len(opts):
            adv = _lcp_option(nd, opts[at:], ln - 4 - at)
            if adv == 0:
                break
            at += adv
    elif code in (9, 10, 11) and ln >= 8:
        nd.need(opts, 4)
        nd.w(f"\n\t  Magic-Num 0x{I.unpack_from(opts)[0]:08x}")
        if ln > 8:
            nd.w("\n\t  -----trailing data-----")
            nd.need(opts, ln - 4)
            _unknown_data(nd, opts[4 : ln - 4], "\n\t  ")
    elif code not in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13) and nd.v <= 1:
        _unknown_data(nd, p[:ln], "\n\t  ")


def _lcp_option(nd: Printer, p: bytes, length: int) -> int:
    """tcpdump: print-ppp.c, print_lcp_config_options()."""
    if length < 2 or len(p) < 2:
        return 0
    opt, ln = p[0], p[1]
    if length < ln:
        return 0
    name = _LCP_OPTS[opt] if opt < len(_LCP_OPTS) else None
    if ln < 2:
        if name:
            nd.w(f"\n\t  {name} Option (0x{opt:02x}), length {ln} (length bogus, should be >= 2)")
        else:
            nd.w(f"\n\tunknown LCP option 0x{opt:02x}")
        return 0
    if name is None:
        nd.w(f"\n\tunknown LCP option 0x{opt:02x}")
        return ln
    nd.w(f"\n\t  {name} Option (0x{opt:02x}), length {ln}")
    nd.need(p, ln)
    if opt == 1:
        if ln != 4:
            nd.w(" (length bogus, should be = 4)")
            return ln
        nd.w(f": {H.unpack_from(p, 2)[0]}")
    elif opt in (2, 5):
        if ln != 6:
            nd.w(" (length bogus, should be = 6)")
            return ln if opt == 2 else 0
        nd.w(f": 0x{I.unpack_from(p, 2)[0]:08x}")
    elif opt in (7, 8):
        pass
    elif nd.v < 2:
        _unknown_data(nd, p[2:ln], "\n\t    ")
    if nd.v > 1:
        _unknown_data(nd, p[2:ln], "\n\t    ")
    return ln
