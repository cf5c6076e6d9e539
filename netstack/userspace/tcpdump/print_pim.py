"""PIM (RFC 7761): version 2's hello, register, register-stop, join/prune, assert, bootstrap.

Theory of operation: without ``-v`` one line names the message
(``PIMv2, Hello, length 30``); with ``-v`` the checksum is verified (over
the message; for a register over its 8-byte header, falling back to the
whole message as RFC 4601 allows; over the IPv6 pseudo-header for PIM over
IPv6) and each message type prints its fields: hello options one per line,
the encapsulated packet of a register, the groups and sources of a
join/prune. Addresses use PIM's encoded forms (family, encoding type, mask).

tcpdump: print-pim.c, pim_print(), pimv2_print(), pimv2_addr_print().
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
    cksum,
    hex_dump,
    ip4,
    ipproto,
    relts,
)

__all__ = ["pim_print"]

_TYPES: Final = {0: "Hello", 1: "Register", 2: "Register Stop", 3: "Join / Prune",
                 4: "Bootstrap", 5: "Assert", 6: "Graft", 7: "Graft Acknowledgement",
                 8: "Candidate RP Advertisement", 9: "Prune Refresh",
                 10: "DF Election"}  # fmt: skip
_HELLO_OPTS: Final = {1: "Hold Time", 2: "LAN Prune Delay", 18: "DR Priority (Old)",
                      19: "DR Priority", 20: "Generation ID", 21: "State Refresh Capability",
                      22: "Bi-Directional Capability", 24: "Address List",
                      65001: "Address List (Old)"}  # fmt: skip
_REGISTER_FLAGS: Final = {0x80000000: "Border", 0x40000000: "Null"}


def _unknown_data(nd: Printer, data: bytes, indent: str) -> None:
    if data:
        nd.w("".join("\n" + line for line in hex_dump(data, False, indent[1:])))


@ipproto(103)
def pim_print(nd: Printer, bp: bytes, length: int, ip: IPInfo) -> None:
    """tcpdump: print-pim.c, pim_print()."""
    nd.protocol = "pim"
    nd.need(bp, 1)
    ver, ptype = bp[0] >> 4, bp[0] & 0xF
    if ver != 2:
        nd.w(f"PIMv{ver}, length {length}")
        return
    name = _TYPES.get(ptype, "Unknown Type")
    if not nd.v:
        nd.w(f"PIMv2, {name}, length {length}")
        return
    nd.w(f"PIMv2, length {length}\n\t{name}")
    _pimv2_print(nd, bp, length, ip)


def _addr(nd: Printer, bp: bytes, at: int, ln: int, kind: str, addr_len: int) -> int:
    """An encoded address; its length. tcpdump: print-pim.c, pimv2_addr_print()."""
    if addr_len == 0:
        if ln < 2:
            raise Trunc(local=True)
        nd.need(bp, at + 2)
        fam = bp[at]
        if fam not in (1, 2) or bp[at + 1] != 0:
            raise Trunc(local=True)
        alen = 4 if fam == 1 else 16
        hdr = 2
    else:
        if addr_len not in (4, 16):
            raise Trunc(local=True)
        alen, hdr = addr_len, 0
    at += hdr
    ln -= hdr
    text = ip4 if alen == 4 else (lambda b: socket.inet_ntop(socket.AF_INET6, b))
    if kind == "unicast":
        if ln < alen:
            raise Trunc(local=True)
        nd.need(bp, at + alen, local=True)
        nd.w(text(bp[at : at + alen]))
        return hdr + alen
    if ln < alen + 2:
        raise Trunc(local=True)
    nd.need(bp, at + alen + 2, local=True)
    nd.w(text(bp[at + 2 : at + 2 + alen]))
    if bp[at + 1] != alen * 8:
        nd.w(f"/{bp[at + 1]}")
    flags = bp[at]
    if flags:
        if kind == "group":
            nd.w(f"(0x{flags:02x})")
        else:
            nd.w(
                "("
                + ("S" if flags & 4 else "")
                + ("W" if flags & 2 else "")
                + ("R" if flags & 1 else "")
            )
            if flags & 0xF8:
                nd.w(f"+0x{flags & 0xF8:02x}")
            nd.w(")")
    return hdr + 2 + alen


def _checksum(bp: bytes, ip: IPInfo, ln: int) -> str:
    """tcpdump: print-pim.c, pimv2_check_checksum()."""
    if len(bp) < ln:
        return "unverified"
    pseudo = ip.pseudo(103, ln) if ip.family == 6 else 0
    return "incorrect" if cksum(bp[:ln], pseudo) else "correct"


def _pimv2_print(nd: Printer, bp: bytes, length: int, ip: IPInfo) -> None:
    """tcpdump: print-pim.c, pimv2_print()."""
    nd.protocol = "pimv2"
    if length < 2:
        nd.w(f"[length {length} < 2] (invalid)")
        return
    nd.need(bp, 2)
    ptype = bp[0] & 0xF
    addr_len = bp[1] & 0x0F
    if addr_len:
        nd.w(", RFC2117-encoding")
    if length < 4:
        nd.w(f"[length {length} < 4] (invalid)")
        return
    nd.need(bp, 4)
    csum = H.unpack_from(bp, 2)[0]
    nd.w(f", cksum 0x{csum:04x} ")
    if csum == 0:
        nd.w("(unverified)")
    elif ptype == 1:
        status = _checksum(bp, ip, 8)
        if status == "incorrect":
            status = _checksum(bp, ip, length)
        nd.w(f"({status})")
    else:
        nd.w(f"({_checksum(bp, ip, length)})")
    at, ln = 4, length - 4
    if ptype == 0:
        while ln > 0:
            if ln < 4:
                raise Trunc(local=True)
            nd.need(bp, at + 4)
            otype, olen = H.unpack_from(bp, at)[0], H.unpack_from(bp, at + 2)[0]
            oname = _HELLO_OPTS.get(otype, "Unknown")
            nd.w(f"\n\t  {oname} Option ({otype}), length {olen}, Value: ")
            at += 4
            ln -= 4
            if ln < olen:
                raise Trunc(local=True)
            nd.need(bp, at + olen, local=True)
            val = bp[at : at + olen]
            if otype == 1:
                if olen != 2:
                    nd.w(f"[option length {olen} != 2] (invalid)")
                    return
                nd.w(relts(H.unpack_from(val)[0]))
            elif otype == 2:
                if olen != 4:
                    nd.w(f"[option length {olen} != 4] (invalid)")
                    return
                delay, override = H.unpack_from(val)[0], H.unpack_from(val, 2)[0]
                nd.w(
                    f"\n\t    T-bit={1 if delay & 0x8000 else 0}, LAN delay {delay & 0x7FFF}ms, "
                    f"Override interval {override}ms"
                )
            elif otype in (18, 19):
                if olen == 0:
                    nd.w("Bi-Directional Capability (Old)")
                elif olen == 4:
                    nd.w(f"{I.unpack_from(val)[0]}")
                else:
                    nd.w(f"[option length {olen} != 4] (invalid)")
                    return
            elif otype == 20:
                if olen != 4:
                    nd.w(f"[option length {olen} != 4] (invalid)")
                    return
                nd.w(f"0x{I.unpack_from(val)[0]:08x}")
            elif otype == 21:
                if olen != 4:
                    nd.w(f"[option length {olen} != 4] (invalid)")
                    return
                nd.w(f"v{val[0]}")
                if val[1]:
                    nd.w(f", interval {relts(val[1])}")
                if H.unpack_from(val, 2)[0]:
                    nd.w(f" ?0x{H.unpack_from(val, 2)[0]:04x}?")
            elif otype == 22:
                pass
            elif otype in (24, 65001):
                if nd.v > 1:
                    p, plen = at, ln
                    while p < at + olen:
                        nd.w("\n\t    ")
                        adv = _addr(nd, bp, p, plen, "unicast", addr_len)
                        p += adv
                        plen -= adv
            elif nd.v <= 1:
                _unknown_data(nd, val, "\n\t    ")
            if nd.v > 1:
                _unknown_data(nd, val, "\n\t    ")
            at += olen
            ln -= olen
    elif ptype == 1:
        if ln < 4:
            raise Trunc(local=True)
        nd.need(bp, at + 4, local=True)
        flags = I.unpack_from(bp, at)[0]
        nd.w(f", Flags [ {_REGISTER_FLAGS.get(flags, 'none')} ]\n\t")
        at += 4
        ln -= 4
        if ln == 0:
            raise Trunc(local=True)
        nd.need(bp, at + 1)
        inner = bp[at:]
        version = inner[0] >> 4
        if version == 0:
            nd.need(inner, 20)
            nd.w(f"IP-Null-header {ip4(inner[12:16])} > {ip4(inner[16:20])}")
        elif version == 4:
            nd.ethertype_print(0x0800, inner, ln)
        elif version == 6:
            nd.ethertype_print(0x86DD, inner, ln)
        else:
            nd.w(f"IP ver {version}")
    elif ptype == 2:
        nd.w(" group=")
        adv = _addr(nd, bp, at, ln, "group", addr_len)
        at, ln = at + adv, ln - adv
        nd.w(" source=")
        _addr(nd, bp, at, ln, "unicast", addr_len)
    elif ptype in (3, 6, 7):
        if ptype != 7:
            nd.w(", upstream-neighbor: ")
            adv = _addr(nd, bp, at, ln, "unicast", addr_len)
            at, ln = at + adv, ln - adv
        if ln < 4:
            raise Trunc(local=True)
        nd.need(bp, at + 4, local=True)
        ngroup, holdtime = bp[at + 1], H.unpack_from(bp, at + 2)[0]
        nd.w(f"\n\t  {ngroup} group(s)")
        if ptype != 7:
            nd.w(", holdtime: " + ("infinite" if holdtime == 0xFFFF else relts(holdtime)))
        at, ln = at + 4, ln - 4
        for i in range(ngroup):
            nd.w(f"\n\t    group #{i + 1}: ")
            adv = _addr(nd, bp, at, ln, "group", addr_len)
            at, ln = at + adv, ln - adv
            if ln < 4:
                raise Trunc(local=True)
            nd.need(bp, at + 4, local=True)
            njoin, nprune = H.unpack_from(bp, at)[0], H.unpack_from(bp, at + 2)[0]
            nd.w(f", joined sources: {njoin}, pruned sources: {nprune}")
            at, ln = at + 4, ln - 4
            for label, count in (("joined", njoin), ("pruned", nprune)):
                for j in range(count):
                    nd.w(f"\n\t      {label} source #{j + 1}: ")
                    adv = _addr(nd, bp, at, ln, "source", addr_len)
                    at, ln = at + adv, ln - adv
    elif ptype == 5:
        nd.w(" group=")
        adv = _addr(nd, bp, at, ln, "group", addr_len)
        at, ln = at + adv, ln - adv
        nd.w(" src=")
        adv = _addr(nd, bp, at, ln, "unicast", addr_len)
        at, ln = at + adv, ln - adv
        if ln < 8:
            raise Trunc(local=True)
        nd.need(bp, at + 8, local=True)
        if bp[at] & 0x80:
            nd.w(" RPT")
        nd.w(f" pref={I.unpack_from(bp, at)[0] & 0x7FFFFFFF} metric={I.unpack_from(bp, at + 4)[0]}")
    elif ptype == 4:
        if ln < 2:
            raise Trunc(local=True)
        nd.need(bp, at + 2)
        nd.w(f" tag={H.unpack_from(bp, at)[0]:x}")
        at, ln = at + 2, ln - 2
        if ln < 1:
            raise Trunc(local=True)
        nd.need(bp, at + 1)
        nd.w(f" hashmlen={bp[at]}")
        if ln < 2:
            raise Trunc(local=True)
        nd.need(bp, at + 3, local=True)
        nd.w(f" BSRprio={bp[at + 1]}")
        at, ln = at + 2, ln - 2
        nd.w(" BSR=")
        adv = _addr(nd, bp, at, ln, "unicast", addr_len)
        at, ln = at + adv, ln - adv
        i = 0
        while ln > 0:
            nd.w(f" (group{i}: ")
            adv = _addr(nd, bp, at, ln, "group", addr_len)
            at, ln = at + adv, ln - adv
            if ln < 1:
                raise Trunc(local=True)
            nd.need(bp, at + 1)
            nd.w(f" RPcnt={bp[at]}")
            if ln < 2:
                raise Trunc(local=True)
            nd.need(bp, at + 2)
            frpcnt = bp[at + 1]
            nd.w(f" FRPcnt={frpcnt}")
            if ln < 4:
                raise Trunc(local=True)
            at, ln = at + 4, ln - 4
            j = 0
            while j < frpcnt and ln > 0:
                nd.w(f" RP{j}=")
                adv = _addr(nd, bp, at, ln, "unicast", addr_len)
                at, ln = at + adv, ln - adv
                if ln < 2:
                    raise Trunc(local=True)
                nd.need(bp, at + 2)
                nd.w(f",holdtime={relts(H.unpack_from(bp, at)[0])}")
                if ln < 3:
                    raise Trunc(local=True)
                nd.need(bp, at + 3)
                nd.w(f",prio={bp[at + 2]}")
                if ln < 4:
                    raise Trunc(local=True)
                at, ln = at + 4, ln - 4
                j += 1
            nd.w(")")
            i += 1
    else:
        nd.w(f" [type {ptype}]")
