"""ICMPv6: errors, echo, neighbour discovery with its options, redirects, MLD v1 and v2.

Theory of operation: ``icmp6_print`` prints ``ICMP6, <type name>`` and the
type's fields; with ``-v`` it first checks the checksum over the
pseudo-header (with the final destination of a routing header), moves the
length before the fields of the ND messages and prints their options one per
line (``source link-address option (1), length 8 (1): 02:…``), with ``-vv``
each option's bytes as well. MLD prints as tcpdump does, including v1's
missing separator (``multicast listener reportmax resp delay: 0 addr: ff02::fb``).

tcpdump: print-icmp6.c, icmp6_print(), icmp6_opt_print(), mld6_print(),
mldv2_report_print(), mldv2_query_print().
"""

from __future__ import annotations

import struct
from typing import Final

from netstack.userspace.tcpdump.netdissect import (
    HH,
    H,
    I,
    IPInfo,
    Printer,
    Trunc,
    bittok,
    cksum,
    cksum_shouldbe,
    hex_dump,
    ip6,
    ipproto,
)

__all__ = ["icmp6_print"]

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
    138: "router renumbering",
    139: "node information query",
    140: "node information reply",
    141: "inverse neighbor solicitation",
    142: "inverse neighbor advertisement",
    143: "multicast listener report v2",
    144: "ha discovery request",
    145: "ha discovery reply",
    146: "mobile router solicitation",
    147: "mobile router advertisement",
    155: "RPL",
}
_UNREACH6: Final = {
    0: "unreachable route",
    1: "unreachable prohibited",
    2: "beyond scope",
    3: "unreachable address",
    4: "unreachable port",
    5: "failed ingress/egress policy",
    6: "reject route",
}
_ND_OPTS: Final = {
    1: "source link-address",
    2: "destination link-address",
    3: "prefix info",
    4: "redirected header",
    5: "mtu",
    7: "advertisement interval",
    8: "homeagent information",
    14: "nonce",
    24: "route info",
    25: "rdnss",
    31: "dnssl",
}
_MLDV2_RECORDS: Final = {1: "is_in", 2: "is_ex", 3: "to_in", 4: "to_ex", 5: "allow", 6: "block"}
_RA_FLAGS: Final = ((0x80, "managed"), (0x40, "other stateful"), (0x20, "home agent"),
                    (0x08, "router pref"), (0x04, "proxy"))  # fmt: skip
_NA_FLAGS: Final = ((0x80000000, "router"), (0x40000000, "solicited"), (0x20000000, "override"))
_PI_FLAGS: Final = ((0x80, "onlink"), (0x40, "auto"), (0x20, "router"))


def _unknown_data(nd: Printer, data: bytes, indent: str) -> None:
    """tcpdump: util-print.c, print_unknown_data() → hex_print()."""
    if data:
        nd.w("".join("\n" + line for line in hex_dump(data, False, indent[1:])))


def _lifetime(v: int) -> str:
    """tcpdump: print-icmp6.c, get_lifetime()."""
    return "infinity" if v == 0xFFFFFFFF else f"{v}s"


def _rtpref(flags: int) -> str:
    """tcpdump: print-icmp6.c, get_rtpref()."""
    return ("medium", "high", "rsv", "low")[(flags >> 3) & 3]


@ipproto(58)
def icmp6_print(nd: Printer, bp: bytes, length: int, ip: IPInfo) -> None:
    """An ICMPv6 message. tcpdump: print-icmp6.c, icmp6_print()."""
    nd.protocol = "icmp6"
    if length == 0:
        nd.w("ICMP6, length 0 (invalid)")
        return
    if nd.v and not ip.fragmented and len(bp) >= length:
        pseudo = ip.pseudo(58, length)
        if cksum(bp[:length], pseudo) == 0:
            nd.w("[icmp6 sum ok] ")
        else:
            nd.need(bp, 4)
            csum = H.unpack_from(bp, 2)[0]
            should = cksum_shouldbe(bp[:length], 2, pseudo)
            nd.w(f"[bad icmp6 cksum 0x{csum:04x} -> 0x{should:04x}!] ")
    nd.need(bp, 1)
    t = bp[0]
    nd.w(f"ICMP6, {_ICMP6_TYPES.get(t, f'unknown icmp6 type ({t})')}")
    if nd.v and t in (133, 134, 135, 136, 137, 145, 147):
        nd.w(f", length {length}")
    nd.need(bp, 2)
    code = bp[1]
    oip = bp[8:]
    if t == 1:
        nd.w(", " + _UNREACH6.get(code, f"unknown unreach code ({code})"))
        if code in (0, 1, 3):
            nd.need(oip, 40)
            nd.w(f" {ip6(oip[24:40])}")
        elif code == 2:
            nd.need(oip, 40)
            nd.w(f" {ip6(oip[24:40])}, source address {ip6(oip[8:24])}")
        elif code == 4:
            upper = _upperlayer(oip)
            if upper is None:
                raise Trunc(local=True)
            prot, at = upper
            dport = H.unpack_from(oip, at + 2)[0]
            nd.need(oip, 40)
            odst = ip6(oip[24:40])
            if prot == 6:
                nd.w(f", {odst} tcp port {dport}")
            elif prot == 17:
                nd.w(f", {odst} udp port {dport}")
            else:
                nd.w(f", {odst} protocol {prot} port {dport} unreachable")
        elif nd.v <= 1:
            _unknown_data(nd, bp[:length], "\n\t")
            return
    elif t == 2:
        nd.need(bp, 8)
        nd.w(f", mtu {I.unpack_from(bp, 4)[0]}")
    elif t == 3:
        if code == 0:
            nd.need(oip, 40)
            nd.w(f" in-transit for {ip6(oip[24:40])}")
        elif code == 1:
            nd.w(" reassembly")
        else:
            nd.w(f", unknown code ({code})")
    elif t == 4:
        nd.need(oip, 40)
        ptr = I.unpack_from(bp, 4)[0]
        what = {0: "erroneous", 1: "next header", 2: "option", 3: "incomplete header chain"}
        if code in what:
            nd.w(f", {what[code]} - octet {ptr}")
        else:
            nd.w(f", code-#{code}")
    elif t in (128, 129):
        nd.need(bp, 8)
        ident, seq = HH.unpack_from(bp, 4)
        nd.w(f", id {ident}, seq {seq}")
    elif t == 130:
        if length == 24:
            _mld6(nd, bp)
        elif length >= 28:
            nd.w(" v2")
            _mldv2_query(nd, bp, length)
        else:
            nd.w(f" unknown-version (len {length}) ")
    elif t in (131, 132):
        _mld6(nd, bp)
    elif t == 133:
        if nd.v:
            _opt_print(nd, bp[8:], length - 8)
    elif t == 134:
        if nd.v:
            nd.need(bp, 16)
            hop, fl, life, reach, retrans = struct.unpack_from("!BBHII", bp, 4)
            nd.w(
                f"\n\thop limit {hop}, Flags [{bittok(_RA_FLAGS, 'none', fl)}], "
                f"pref {_rtpref(fl)}, router lifetime {life}s, reachable time {reach}ms, "
                f"retrans timer {retrans}ms"
            )
            _opt_print(nd, bp[16:], length - 16)
    elif t == 135:
        nd.need(bp, 24)
        nd.w(f", who has {ip6(bp[8:24])}")
        if nd.v:
            _opt_print(nd, bp[24:], length - 24)
    elif t == 136:
        nd.need(bp, 24)
        nd.w(f", tgt is {ip6(bp[8:24])}")
        if nd.v:
            nd.w(f", Flags [{bittok(_NA_FLAGS, 'none', I.unpack_from(bp, 4)[0])}]")
            _opt_print(nd, bp[24:], length - 24)
    elif t == 137:
        nd.need(bp, 40)
        nd.w(f", {ip6(bp[24:40])} to {ip6(bp[8:24])}")
        if nd.v:
            _opt_print(nd, bp[40:], length - 40)
    elif t == 143:
        _mldv2_report(nd, bp, length)
    elif t in (144, 146):
        nd.need(bp, 6)
        nd.w(f", id 0x{H.unpack_from(bp, 4)[0]:04x}")
    else:
        nd.w(f", length {length}")
        if nd.v <= 1:
            _unknown_data(nd, bp[:length], "\n\t")
        return
    if not nd.v:
        nd.w(f", length {length}")


def _upperlayer(oip: bytes) -> tuple[int, int] | None:
    """The quoted datagram's transport and its offset. tcpdump: print-icmp6.c, get_upperlayer()."""
    if len(oip) < 7:
        return None
    nh = oip[6]
    at = 40
    while at < len(oip):
        if nh in (6, 17):
            return (nh, at) if len(oip) >= at + 4 else None
        if nh in (0, 60, 43):
            if len(oip) < at + 2:
                return None
            nh, at = oip[at], at + ((oip[at + 1] + 1) << 3)
        elif nh == 44:
            if len(oip) < at + 4 or H.unpack_from(oip, at + 2)[0] & 0xFFF8:
                return None
            nh, at = oip[at], at + 8
        elif nh == 51:
            if len(oip) < at + 2:
                return None
            nh, at = oip[at], at + ((oip[at + 1] + 2) << 2)
        else:
            return None
    return None


def _opt_print(nd: Printer, bp: bytes, resid: int) -> None:
    """ND options, one per line. tcpdump: print-icmp6.c, icmp6_opt_print()."""
    cp = 0
    while cp < len(bp):
        if cp + 2 > len(bp):
            raise Trunc(local=True)
        if resid <= 0:
            return
        t, ln = bp[cp], bp[cp + 1]
        if ln == 0 or cp + (ln << 3) > len(bp):
            raise Trunc(local=True)
        body = bp[cp + 2 : cp + (ln << 3)]
        nd.w(f"\n\t  {_ND_OPTS.get(t, 'unknown')} option ({t}), length {ln << 3} ({ln}): ")
        if t in (1, 2):
            nd.w(":".join(f"{x:02x}" for x in body))
        elif t == 3:
            plen, fl, valid, pref = struct.unpack_from("!BBII", body)
            nd.w(
                f"{ip6(body[14:30])}/{plen}{'badlen' if ln != 4 else ''}, "
                f"Flags [{bittok(_PI_FLAGS, 'none', fl)}], valid time {_lifetime(valid)}"
                f", pref. time {_lifetime(pref)}"
            )
        elif t == 4:
            _unknown_data(nd, bp[: ln << 3], "\n\t    ")
        elif t == 5:
            nd.w(f" {I.unpack_from(body, 2)[0]}{'bad option length' if ln != 1 else ''}")
        elif t == 25:
            nd.w(f" lifetime {I.unpack_from(body, 2)[0]}s,")
            for i in range((ln - 1) // 2):
                nd.w(f" addr: {ip6(body[6 + 16 * i : 22 + 16 * i])}")
        elif t == 7:
            nd.w(f" {I.unpack_from(body, 2)[0]}ms")
        elif t == 14:
            nd.w(body.hex())
        else:
            if nd.v <= 1:
                _unknown_data(nd, body, "\n\t  ")
                return
        if nd.v > 1:
            _unknown_data(nd, body, "\n\t    ")
        cp += ln << 3
        resid -= ln << 3


def _mld6(nd: Printer, bp: bytes) -> None:
    """MLDv1 (and a v1-sized query). tcpdump: print-icmp6.c, mld6_print()."""
    if len(bp) < 24:
        return
    nd.w(f"max resp delay: {H.unpack_from(bp, 4)[0]} addr: {ip6(bp[8:24])}")


def _mldv2_report(nd: Printer, bp: bytes, length: int) -> None:
    """tcpdump: print-icmp6.c, mldv2_report_print()."""
    if length < 8:
        nd.w(f" [invalid len {length}]")
        return
    nd.need(bp, 8)
    ngroups = H.unpack_from(bp, 6)[0]
    nd.w(f", {ngroups} group record(s)")
    if not nd.v:
        return
    group = 8
    for _ in range(ngroups):
        if length < group + 20:
            nd.w(" [invalid number of groups]")
            return
        nd.need(bp, group + 20)
        nd.w(f" [gaddr {ip6(bp[group + 4 : group + 20])}")
        rtype = bp[group]
        nd.w(" " + _MLDV2_RECORDS.get(rtype, f" [v2-report-#{rtype}]"))
        nsrcs = H.unpack_from(bp, group + 2)[0]
        if length < group + 20 + nsrcs * 16:
            nd.w(f" [invalid number of sources {nsrcs}]")
            return
        if nd.v == 1:
            nd.w(f", {nsrcs} source(s)")
        else:
            nd.w(" {")
            for j in range(nsrcs):
                at = group + 20 + 16 * j
                nd.need(bp, at + 16)
                nd.w(f" {ip6(bp[at : at + 16])}")
            nd.w(" }")
        group += 20 + nsrcs * 16
        nd.w("]")


def _mldv2_query(nd: Printer, bp: bytes, length: int) -> None:
    """tcpdump: print-icmp6.c, mldv2_query_print()."""
    if length < 28:
        nd.w(f" [invalid len {length}]")
        return
    nd.need(bp, 6)
    mrc = H.unpack_from(bp, 4)[0]
    mrt = mrc if mrc < 32768 else ((mrc & 0x0FFF) | 0x1000) << (((mrc & 0x7000) >> 12) + 3)
    if nd.v:
        nd.w(f" [max resp delay={mrt}]")
    nd.need(bp, 24)
    nd.w(f" [gaddr {ip6(bp[8:24])}")
    if nd.v:
        nd.need(bp, 26)
        if bp[24] & 0x08:
            nd.w(" sflag")
        if bp[24] & 0x07:
            nd.w(f" robustness={bp[24] & 0x07}")
        q = bp[25]
        qqi = q if q < 128 else ((q & 0x0F) | 0x10) << (((q & 0x70) >> 4) + 3)
        nd.w(f" qqi={qqi}")
    nd.need(bp, 28)
    nsrcs = H.unpack_from(bp, 26)[0]
    if nsrcs > 0:
        if length < 28 + nsrcs * 16:
            nd.w(" [invalid number of sources]")
        elif nd.v > 1:
            nd.w(" {")
            for i in range(nsrcs):
                at = 28 + 16 * i
                nd.need(bp, at + 16)
                nd.w(f" {ip6(bp[at : at + 16])}")
            nd.w(" }")
        else:
            nd.w(f", {nsrcs} source(s)")
    nd.w("]")
