"""Link layers: Ethernet, 802.1Q, 802.2 LLC/SNAP, STP, Linux cooked (SLL, SLL2), raw IP, ARP.

Theory of operation: each capture's link type has one entry printer,
registered with :func:`~.netdissect.linktype` and returning the length of the
link-level header (what ``-x`` leaves out): ``ether_if_print`` for Ethernet
(1), ``sll_if_print``/``sll2_if_print`` for what ``tcpdump -i any`` writes
(113, 276), ``raw_if_print`` for raw IP (101, 12) and LINKTYPE_IPV4/IPV6 (228, 229),
which tcpdump prints alike (by the version nibble). Ethernet walks its VLAN
tags, then either hands the ethertype to :meth:`Printer.ethertype_print` or,
for a length field (802.3), the payload to the 802.2 LLC printer, which
knows SNAP (an ethertype again) and the spanning tree's BPDUs.

tcpdump: print-ether.c, print-sll.c, print-raw.c, print-llc.c, print-stp.c, print-arp.c.
"""

from __future__ import annotations

import socket
import struct
from typing import Final

from netstack.userspace.tcpdump.netdissect import (
    ETHERTYPES,
    H,
    I,
    Printer,
    Trunc,
    bittok,
    ethertype,
    ip4,
    linktype,
    mac,
)

__all__ = ["ether_print", "llc_print"]

_VLAN_TYPES: Final = (0x8100, 0x88A8, 0x9100, 0x9200)


def _type_name(nd: Printer, etype: int) -> str:
    """``ether_type_print``. tcpdump: print-ether.c, ether_type_print()."""
    if not nd.q:
        return f"ethertype {ETHERTYPES.get(etype, 'Unknown')} (0x{etype:04x})"
    return ETHERTYPES.get(etype, f"Unknown Ethertype (0x{etype:04x})")


def _tci(tci: int) -> str:
    """tcpdump: print-ether.c, ieee8021q_tci_string()."""
    return f"vlan {tci & 0xFFF}, p {tci >> 13}" + (", DEI" if tci & 0x1000 else "")


@linktype(1)
def ether_if_print(nd: Printer, p: bytes, length: int) -> int:
    """tcpdump: print-ether.c, ether_if_print()."""
    return ether_print(nd, p, length)


def ether_print(nd: Printer, p: bytes, length: int) -> int:
    """An Ethernet frame; returns the link-header length.

    tcpdump: print-ether.c, ether_common_print().
    """
    nd.protocol = "ether"
    caplen = len(p)
    if length < caplen:
        nd.w(f"[length {length} < caplen {caplen}] (invalid)")
        return length
    if caplen < 14:
        nd.w(" [|ether]")
        return caplen
    dst, src = p[0:6], p[6:12]
    orig_length = length
    if nd.e:
        nd.w(f"{mac(src)} > {mac(dst)}, ")
    off = 12
    length_type = H.unpack_from(p, off)[0]
    off += 2
    length -= 14
    printed_length = False
    while length_type in _VLAN_TYPES:
        if len(p) - off < 4 or length < 4:
            nd.protocol = "vlan"
            nd.w(" [|vlan]")
            return min(len(p), off + 4)
        if nd.e:
            nd.w(_type_name(nd, length_type))
            if not printed_length:
                nd.w(f", length {orig_length}: ")
                printed_length = True
            else:
                nd.w(", ")
            nd.w(_tci(H.unpack_from(p, off)[0]) + ", ")
        length_type = H.unpack_from(p, off + 2)[0]
        off += 4
        length -= 4
    payload = p[off:]
    nd.ll_hdr_len = off
    if length_type <= 1500:  # an 802.3 length field
        if length_type < length:
            length = length_type
            payload = payload[:length]
        if nd.e:
            nd.w("802.3")
            if not printed_length:
                nd.w(f", length {length}: ")
        hdr = llc_print(nd, payload, length, src, dst)
        if hdr < 0:
            nd.default_print(payload)
            hdr = -hdr
        return off + hdr
    if nd.e:
        nd.w(_type_name(nd, length_type))
        nd.w(f", length {orig_length}: " if not printed_length else ", ")
    if not nd.ethertype_print(length_type, payload, length):
        if not nd.e:
            nd.w(f"{mac(src)} > {mac(dst)}, {_type_name(nd, length_type)}, ")
            nd.w(f"length {orig_length}: ")
        nd.default_print(payload)
    return off


# -- 802.2 LLC, SNAP, STP --------------------------------------------------------------------
_LLC_SAPS: Final = {
    0x00: "Null",
    0xFF: "Global",
    0x02: "802.1B I",
    0x03: "802.1B G",
    0x06: "IP",
    0x04: "SNA",
    0x0E: "ProWay NM",
    0x42: "STP",
    0x4E: "RS511",
    0x7E: "ISO8208",
    0x8E: "ProWay",
    0xAA: "SNAP",
    0xE0: "IPX",
    0xF0: "NetBeui",
    0xFE: "OSI",
}
_LLC_CMDS: Final = {0x03: "ui", 0xE3: "test", 0xAF: "xid", 0x63: "ua", 0x43: "disc", 0x0F: "dm",
                    0x6F: "sabme", 0x87: "frmr"}  # fmt: skip
_LLC_FLAGS: Final = {0: "Command", 1: "Response", 0x10: "Poll", 0x11: "Final", 0x100: "Poll",
                     0x101: "Final"}  # fmt: skip
_SUPERVISORY: Final = {0: "Receiver Ready", 1: "Receiver not Ready", 2: "Reject"}
_OUIS: Final = {0x000000: "Ethernet", 0x00000C: "Cisco", 0x0000F8: "Cisco bridged",
                0x080007: "Appletalk", 0x0080C2: "IEEE 802.1 bridged"}  # fmt: skip


def llc_print(nd: Printer, p: bytes, length: int, src: bytes | None, dst: bytes | None) -> int:
    """An 802.2 LLC header and what follows; the header length, negative if not decoded.

    tcpdump: print-llc.c, llc_print().
    """
    nd.protocol = "llc"
    caplen = len(p)
    if caplen < 3 or length < 3:
        nd.w(" [|llc]")
        nd.default_print(p, unless_suppressed=False)
        return caplen if caplen < 3 else length
    dsap_field, ssap_field, control = p[0], p[1], p[2]
    if control & 3 == 3:
        is_u, hdrlen = True, 3
    else:
        if caplen < 4 or length < 4:
            nd.w(" [|llc]")
            nd.default_print(p, unless_suppressed=False)
            return caplen if caplen < 4 else length
        control = p[2] | (p[3] << 8)
        is_u, hdrlen = False, 4
    if ssap_field == 0xFF and dsap_field == 0xFF:
        if nd.e:
            nd.w("IPX 802.3: ")
        return 0
    dsap, ssap = dsap_field & ~1 & 0xFF, ssap_field & ~1 & 0xFF
    if nd.e:
        nd.w(
            f"LLC, dsap {_LLC_SAPS.get(dsap, 'Unknown')} (0x{dsap:02x}) "
            f"{'Group' if dsap_field & 1 else 'Individual'}, "
            f"ssap {_LLC_SAPS.get(ssap, 'Unknown')} (0x{ssap:02x}) "
            f"{'Response' if ssap_field & 1 else 'Command'}"
        )
        nd.w(f", ctrl 0x{control:02x}: " if is_u else f", ctrl 0x{control:04x}: ")
    body = p[hdrlen:]
    blen = length - hdrlen
    nd.ll_hdr_len += hdrlen
    if ssap == 0xAA and dsap == 0xAA and control == 0x03:
        if not snap_print(nd, body, blen, src, dst):
            return -(hdrlen + 5)
        return hdrlen + 5
    if ssap == 0x42 and dsap == 0x42 and control == 0x03:
        stp_print(nd, body, blen)
        return hdrlen
    if ssap == 0x06 and dsap == 0x06 and control == 0x03:
        nd.ethertype_print(0x0800, body, blen)
        return hdrlen
    if not nd.e:
        dname = _LLC_SAPS.get(dsap, f"Unknown DSAP 0x{dsap:02x}")
        if ssap == dsap:
            if src is None or dst is None:
                nd.w(f"{dname} ")
            else:
                nd.w(f"{mac(src)} > {mac(dst)} {dname} ")
        else:
            sname = _LLC_SAPS.get(ssap, f"Unknown SSAP 0x{ssap:02x}")
            if src is None or dst is None:
                nd.w(f"{sname} > {dname} ")
            else:
                nd.w(f"{mac(src)} {sname} > {mac(dst)} {dname} ")
    if is_u:
        cmd = control & ~0x10 & 0xFF
        flags = _LLC_FLAGS.get((ssap_field & 1) | (control & 0x10), "?")
        nd.w(f"Unnumbered, {_LLC_CMDS.get(cmd, f'{cmd:02x}')}, Flags [{flags}], length {length}")
        if cmd == 0xAF and blen > 0:
            if not body:
                nd.w(" [|llc]")
                return hdrlen
            if body[0] == 0x81:
                if len(body) < 3 or blen < 3:
                    nd.w(" [|llc]")
                    nd.default_print(body, unless_suppressed=False)
                else:
                    nd.w(f": {body[1]:02x} {body[2]:02x}")
                return hdrlen
    elif control & 1:
        flags = _LLC_FLAGS.get((ssap_field & 1) | (control & 0x100), "?")
        nd.w(
            f"Supervisory, {_SUPERVISORY.get((control >> 2) & 3, '?')}, rcv seq {control >> 9}, "
            f"Flags [{flags}], length {length}"
        )
        return hdrlen
    else:
        flags = _LLC_FLAGS.get((ssap_field & 1) | (control & 0x100), "?")
        nd.w(
            f"Information, send seq {(control >> 1) & 0x7F}, rcv seq {control >> 9}, "
            f"Flags [{flags}], length {length}"
        )
    return -hdrlen


def snap_print(nd: Printer, p: bytes, length: int, src: bytes | None, dst: bytes | None) -> bool:
    """A SNAP header (OUI and protocol id); False if what follows was not decoded.

    tcpdump: print-llc.c, snap_print().
    """
    nd.protocol = "snap"
    if len(p) < 5 or length < 5:
        raise Trunc()
    oui = (p[0] << 16) | H.unpack_from(p, 1)[0]
    et = H.unpack_from(p, 3)[0]
    kind = "ethertype" if oui == 0 else "pid"
    name = ETHERTYPES.get(et, "Unknown") if oui in (0, 0xF8, 0x080007) else "Unknown"
    if oui == 0x0C:
        name = {0x2000: "CDP", 0x2003: "VTP", 0x2004: "DTP", 0x0111: "UDLD",
                0x010B: "PVST", 0x010C: "VLAN Bridge"}.get(et, "Unknown")  # fmt: skip
    header = (
        f"oui {_OUIS.get(oui, 'Unknown')} (0x{oui:06x}), {kind} {name} (0x{et:04x}), "
        f"length {length - 5}: "
    )
    if nd.e:
        nd.w(header)
    body, blen = p[5:], length - 5
    nd.ll_hdr_len += 5
    if oui in (0, 0xF8) or (oui == 0x080007 and et == 0x809B):
        if nd.ethertype_print(et, body, blen):
            return True
    elif oui == 0x0C and et in (0x010B, 0x010C):
        stp_print(nd, body, blen)
        return True
    if not nd.e:
        if src is not None and dst is not None:
            nd.w(f"{mac(src)} > {mac(dst)} ")
        if oui == 0:
            header = f"ethertype {name} (0x{et:04x}), length {length - 5}: "
        nd.w("SNAP, " + header)
    return False


_STP_PROTOS: Final = {0: "802.1d", 2: "802.1w", 3: "802.1s", 4: "802.1aq"}
_STP_TYPES: Final = {0x00: "Config", 0x02: "Rapid STP", 0x80: "Topology Change"}
_STP_FLAGS: Final = (
    (0x01, "Topology change"),
    (0x02, "Proposal"),
    (0x10, "Learn"),
    (0x20, "Forward"),
    (0x40, "Agreement"),
    (0x80, "Topology change ACK"),
)
_PORT_ROLES: Final = {0: "Unknown", 1: "Alternate", 2: "Root", 3: "Designated"}


def _bridge_id(b: bytes) -> str:
    """tcpdump: print-stp.c, stp_print_bridge_id()."""
    return f"{b[0]:02x}{b[1]:02x}." + ":".join(f"{x:02x}" for x in b[2:8])


def stp_print(nd: Printer, p: bytes, length: int) -> None:
    """A spanning-tree BPDU (802.1d configuration and TCN, 802.1w RST).

    tcpdump: print-stp.c, stp_print().
    """
    nd.protocol = "stp"
    if length < 4:
        nd.w(" (invalid)")
        return
    nd.need(p, 2)
    if H.unpack_from(p)[0]:
        nd.w(f"unknown STP version, length {length}")
        return
    nd.need(p, 3)
    version = p[2]
    nd.w("STP " + _STP_PROTOS.get(version, f"Unknown STP protocol (0x{version:02x})"))
    if version not in _STP_PROTOS:
        return
    nd.need(p, 4)
    bpdu_type = p[3]
    nd.w(", " + _STP_TYPES.get(bpdu_type, f"Unknown BPDU Type (0x{bpdu_type:02x})"))
    if bpdu_type == 0x00:
        if length < 35:
            nd.w(" (invalid)")
            return
        _stp_config(nd, p, length)
    elif bpdu_type == 0x02:
        if version == 2:
            if length < 36:
                nd.w(" (invalid)")
                return
            _stp_config(nd, p, length)
        elif version in (3, 4):
            if length < 102:
                nd.w(" (invalid)")
                return
            nd.need(p, 36)
            if p[35] != 0:
                nd.w(" (invalid)")
                return
            nd.need(p, 38)
            mstp_len = H.unpack_from(p, 36)[0] + 2
            if length < 36 + mstp_len:
                nd.w(" (invalid)")
                return
            nd.need(p, 5)
            nd.w(f", CIST Flags [{bittok(_STP_FLAGS, 'none', p[4])}], length {length}")
            if nd.v:
                nd.w(" [|stp]")  # MSTP detail is not decoded here


def _stp_config(nd: Printer, p: bytes, length: int) -> None:
    """tcpdump: print-stp.c, stp_print_config_bpdu()."""
    nd.need(p, 5)
    flags = p[4]
    nd.w(f", Flags [{bittok(_STP_FLAGS, 'none', flags)}]")
    nd.need(p, 27)
    nd.w(f", bridge-id {_bridge_id(p[17:25])}.{H.unpack_from(p, 25)[0]:04x}, length {length}")
    if not nd.v:
        return
    nd.need(p, 35)
    age, max_age, hello, fwd = struct.unpack_from("!HHHH", p, 27)
    nd.w(
        f"\n\tmessage-age {age / 256:.2f}s, max-age {max_age / 256:.2f}s, "
        f"hello-time {hello / 256:.2f}s, forwarding-delay {fwd / 256:.2f}s"
    )
    nd.w(f"\n\troot-id {_bridge_id(p[5:13])}, root-pathcost {I.unpack_from(p, 13)[0]}")
    if p[2] == 2:
        nd.w(f", port-role {_PORT_ROLES[(flags & 0x0C) >> 2]}")


# -- Linux cooked captures -----------------------------------------------------------------------
_PKTTYPES: Final = {0: "In", 1: "B", 2: "M", 3: "P", 4: "Out"}


def _sll_header(
    nd: Printer,
    pkttype: int,
    halen: int,
    addr: bytes,
    proto: int,
    ln: int,
    *,
    if_index: int | None = None,
) -> None:
    """tcpdump: print-sll.c, sll_print(), sll2_print() (*if_index* given)."""
    if if_index is None:
        nd.w(f"{_PKTTYPES.get(pkttype, '?'):>3} ")
    else:
        nd.w(f"ifindex {if_index} ")
    if halen == 6:
        nd.w(f"{mac(addr[:6])} ")
    if not nd.q:
        if proto <= 1500:
            nd.w({1: "802.3", 4: "802.2"}.get(proto, f"ethertype Unknown (0x{proto:04x})"))
        else:
            nd.w(f"ethertype {ETHERTYPES.get(proto, 'Unknown')} (0x{proto:04x})")
        nd.w(f", length {ln}: ")


def _sll_payload(
    nd: Printer,
    p: bytes,
    length: int,
    hdrlen: int,
    proto: int,
    header: tuple[int, int, bytes, int | None],
) -> int:
    """The part of ``sll_if_print``/``sll2_if_print`` after the cooked header."""
    off = 0
    while True:
        if proto <= 1500:
            if proto == 4:
                hdr = llc_print(nd, p[off:], length, None, None)
                if hdr < 0:
                    nd.default_print(p[off:])
                else:
                    hdrlen += hdr
            elif proto != 1:  # 1: Novell 802.3 (IPX, not decoded)
                nd.default_print(p[off:])
            return hdrlen
        if proto == 0x8100:
            if len(p) - off < 4 or length < 4:
                nd.w(" [|vlan]")
                return hdrlen + min(len(p) - off, length)
            if nd.e:
                nd.w(_tci(H.unpack_from(p, off)[0]) + ", ")
            proto = H.unpack_from(p, off + 2)[0]
            if proto <= 1500:
                proto = 4
            if not nd.q:
                nd.w(f"ethertype {ETHERTYPES.get(proto, 'Unknown')}, ")
            off += 4
            length -= 4
            hdrlen += 4
            continue
        if not nd.ethertype_print(proto, p[off:], length):
            if not nd.e:
                pkttype, halen, addr, if_index = header
                _sll_header(
                    nd,
                    pkttype,
                    halen,
                    addr,
                    proto,
                    length + 16 + 4 * (if_index is not None),
                    if_index=if_index,
                )
            nd.default_print(p[off:])
        return hdrlen


@linktype(113)
def sll_if_print(nd: Printer, p: bytes, length: int) -> int:
    """A LINUX_SLL (``tcpdump -i any``) frame. tcpdump: print-sll.c, sll_if_print()."""
    nd.protocol = "sll"
    if len(p) < 16:
        nd.w(" [|sll]")
        return 0
    nd.ll_hdr_len = 16
    pkttype, _hatype, halen = struct.unpack_from("!HHH", p)
    addr = p[6:14]
    proto = H.unpack_from(p, 14)[0]
    if nd.e:
        _sll_header(nd, pkttype, halen, addr, proto, length)
    return _sll_payload(nd, p[16:], length - 16, 16, proto, (pkttype, halen, addr, None))


@linktype(276)
def sll2_if_print(nd: Printer, p: bytes, length: int) -> int:
    """A LINUX_SLL2 frame (interface index, then the cooked header).

    tcpdump: print-sll.c, sll2_if_print().
    """
    nd.protocol = "sll2"
    if len(p) < 20:
        nd.w(" [|sll2]")
        return 0
    nd.ll_hdr_len = 20
    proto = H.unpack_from(p)[0]
    if_index = I.unpack_from(p, 4)[0]
    pkttype, halen = p[10], p[11]
    addr = p[12:20]
    try:
        name = socket.if_indextoname(if_index)
    except (OSError, OverflowError):
        name = "?"
    nd.w(f"{name:<5} {_PKTTYPES.get(pkttype, '?'):<3} ")
    if nd.e:
        _sll_header(nd, pkttype, halen, addr, proto, length, if_index=if_index)
    return _sll_payload(nd, p[20:], length - 20, 20, proto, (pkttype, halen, addr, if_index))


# -- raw IP ---------------------------------------------------------------------------------------
@linktype(101, 12, 228, 229)
def raw_if_print(nd: Printer, p: bytes, length: int) -> int:
    """A raw IPv4 or IPv6 packet. tcpdump: print-raw.c, raw_if_print() → ipN_print()."""
    if nd.e:
        nd.w("ip: ")
    ipn_print(nd, p, length)
    return 0


def ipn_print(nd: Printer, p: bytes, length: int) -> None:
    """The IP version decides. tcpdump: print-ip.c, ipN_print()."""
    nd.protocol = "ipn"
    if length < 1:
        nd.w(f"truncated-ip {length}")
        return
    nd.need(p, 1)
    version = p[0] & 0xF0
    if version == 0x40:
        nd.ethertype_print(0x0800, p, length)
    elif version == 0x60:
        nd.ethertype_print(0x86DD, p, length)
    else:
        nd.w(f"unknown ip {version >> 4}")


# -- ARP -------------------------------------------------------------------------------------------
_ARPOPS: Final = {1: "Request", 2: "Reply", 3: "Reverse Request", 4: "Reverse Reply",
                  8: "Inverse Request", 9: "Inverse Reply", 10: "NACK Reply"}  # fmt: skip
_ARPHRD: Final = {1: "Ethernet", 6: "TokenRing", 7: "ArcNet", 15: "FrameRelay", 23: "Strip",
                  24: "IEEE 1394", 19: "ATM", 32: "InfiniBand"}  # fmt: skip


def _linkaddr(b: bytes) -> str:
    """tcpdump: addrtoname.c, linkaddr_string()."""
    if not b:
        return "<empty>"
    if len(b) == 6:
        return mac(b)
    return ":".join(f"{x:02x}" for x in b)


@ethertype(0x0806, 0x8035)
def arp_print(nd: Printer, bp: bytes, length: int) -> None:
    """ARP and RARP, any hardware and protocol address lengths.

    tcpdump: print-arp.c, arp_print().
    """
    nd.protocol = "arp"
    nd.need(bp, 8)
    hrd, pro, hln, pln, op = struct.unpack_from("!HHBBH", bp)
    sha = 8
    spa = sha + hln
    tha = spa + pln
    tpa = tha + hln
    nd.need(bp, tpa + pln)
    if not nd.e:
        nd.w("ARP, ")
    is_ip = pro in (0x0800, 0x1000)
    if not is_ip or pln != 4 or hln == 0 or nd.v:
        nd.w(
            f"{_ARPHRD.get(hrd, f'Unknown Hardware ({hrd})')} (len {hln}), "
            f"{ETHERTYPES.get(pro, f'Unknown Protocol (0x{pro:04x})')} (len {pln})"
        )
        if not nd.v:
            nd.w(f", length {length}")
            return
    nd.w(f"{', ' if nd.v else ''}{_ARPOPS.get(op, f'Unknown ({op})')} ")

    def paddr(at: int) -> str:
        if not is_ip:
            return "<wrong proto type>"
        if pln != 4:
            return "<wrong len>"
        return ip4(bp[at : at + 4])

    if op == 1:
        nd.w(f"who-has {paddr(tpa)}")
        if any(bp[tha : tha + hln]):
            nd.w(f" ({_linkaddr(bp[tha : tha + hln])})")
        nd.w(f" tell {paddr(spa)}")
    elif op == 2:
        nd.w(f"{paddr(spa)} is-at {_linkaddr(bp[sha : sha + hln])}")
    elif op in (3, 8):
        nd.w(f"who-is {_linkaddr(bp[tha : tha + hln])} tell {_linkaddr(bp[sha : sha + hln])}")
    elif op == 4:
        nd.w(f"{_linkaddr(bp[tha : tha + hln])} at {paddr(tpa)}")
    elif op == 9:
        nd.w(f"{_linkaddr(bp[sha : sha + hln])} at {paddr(spa)}")
    else:
        nd.default_print(bp, unless_suppressed=False)
        return
    nd.w(f", length {length}")
