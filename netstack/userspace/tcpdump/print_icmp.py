"""ICMP for IPv4: echo, errors quoting their datagram, redirects, router advertisements, timestamps.

Theory of operation: ``icmp_print`` builds the message's text from its type
and code (every field read is bounds-checked, so a short message prints
`` [|icmp]`` and nothing of the text), prints ``ICMP <text>, length N``,
with ``-v`` checks the checksum and, for error messages, prints the quoted
datagram on the next line with the IP printer.

tcpdump: print-icmp.c, icmp_print().
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
    cksum,
    cksum_shouldbe,
    ip4,
    ipproto,
)
from netstack.userspace.tcpdump.print_ip import ip_print

__all__ = ["icmp_print"]

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
_ERRTYPES: Final = frozenset((3, 4, 5, 11, 12))


def _tstamp(ms: int) -> str:
    """Milliseconds since midnight UTC. tcpdump: print-icmp.c, icmp_tstamp_print()."""
    sec, msec = divmod(ms, 1000)
    mins, sec = divmod(sec, 60)
    hrs, mins = divmod(mins, 60)
    return f"{hrs:02d}:{mins:02d}:{sec:02d}.{msec:03d}"


def _lifetime(v: int) -> str:
    if v < 60:
        return f"{v}"
    if v < 3600:
        return f"{v // 60}:{v % 60:02d}"
    return f"{v // 3600}:{(v % 3600) // 60:02d}:{v % 60:02d}"


@ipproto(1)
def icmp_print(nd: Printer, bp: bytes, plen: int, ip: IPInfo) -> None:
    """An ICMP message. tcpdump: print-icmp.c, icmp_print()."""
    nd.protocol = "icmp"
    nd.need(bp, 2)
    t, code = bp[0], bp[1]
    if t in (0, 8):
        nd.need(bp, 8)
        ident, seq = HH.unpack_from(bp, 4)
        text = f"echo {'request' if t == 8 else 'reply'}, id {ident}, seq {seq}"
    elif t == 3:
        if code == 3:
            nd.need(bp, 18, local=True)
            ohl = (bp[8] & 0xF) * 4
            nd.need(bp, 8 + ohl + 4)
            dport = H.unpack_from(bp, 8 + ohl + 2)[0]
        nd.need(bp, 28)
        odst = ip4(bp[24:28])
        if code == 2:
            text = f"{odst} protocol {bp[17]} unreachable"
        elif code == 3:
            oproto = bp[17]
            if oproto == 6:
                text = f"{odst} tcp port {dport} unreachable"
            elif oproto == 17:
                text = f"{odst} udp port {dport} unreachable"
            else:
                text = f"{odst} protocol {oproto} port {dport} unreachable"
        elif code == 4:
            mtu = H.unpack_from(bp, 6)[0]
            text = f"{odst} unreachable - need to frag" + (f" (mtu {mtu})" if mtu else "")
        elif code in _UNREACH:
            text = _UNREACH[code].format(odst)
        else:
            text = f"{odst} unreachable - #{code}"
    elif t == 5:
        nd.need(bp, 28)
        gw, odst = ip4(bp[4:8]), ip4(bp[24:28])
        if code in _REDIRECT:
            text = _REDIRECT[code].format(odst, gw)
        else:
            text = f"redirect-#{code} {odst} to {gw}"
    elif t == 9:
        nd.need(bp, 8, local=True)
        num, size, life = bp[4], bp[5], H.unpack_from(bp, 6)[0]
        text = f"router advertisement lifetime {_lifetime(life)} {num}:"
        if size != 2:
            text += f" [size {size}]"
        else:
            for i in range(num):
                at = 8 + 8 * i
                nd.need(bp, at + 8, local=True)
                text += f" {{{ip4(bp[at : at + 4])} {I.unpack_from(bp, at + 4)[0]}}}"
    elif t == 11:
        nd.need(bp, 28, local=True)
        if code == 0:
            text = "time exceeded in-transit"
        elif code == 1:
            text = "ip reassembly time exceeded"
        else:
            text = f"time exceeded-#{code}"
    elif t == 12:
        if code:
            text = f"parameter problem - code {code}"
        else:
            nd.need(bp, 5)
            text = f"parameter problem - octet {bp[4]}"
    elif t == 18:
        nd.need(bp, 12)
        text = f"address mask is 0x{I.unpack_from(bp, 8)[0]:08x}"
    elif t == 13:
        nd.need(bp, 8)
        ident, seq = HH.unpack_from(bp, 4)
        text = f"time stamp query id {ident} seq {seq}"
    elif t == 14:
        nd.need(bp, 20, local=True)
        ident, seq = HH.unpack_from(bp, 4)
        o, r, x = struct.unpack_from("!III", bp, 8)
        text = (
            f"time stamp reply id {ident} seq {seq}: org {_tstamp(o)}, "
            f"recv {_tstamp(r)}, xmit {_tstamp(x)}"
        )
    else:
        text = _ICMP_TYPES.get(t, f"type-#{t}")
    nd.w(f"ICMP {text}, length {plen}")
    if nd.v and not ip.fragmented and len(bp) >= plen and cksum(bp[:plen]) != 0:
        csum = H.unpack_from(bp, 2)[0]
        nd.w(f" (wrong icmp cksum {csum:x} (->{cksum_shouldbe(bp[:plen], 2, 0):x})!)")
    if nd.v and t in _ERRTYPES:
        nd.w("\n\t")
        inner = bp[8:]
        if len(inner) < 4:
            raise Trunc()
        ilen = H.unpack_from(inner, 2)[0]
        ip_print(nd, inner[:ilen], ilen)
        nd.protocol = "icmp"
