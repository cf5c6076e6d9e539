"""tcpdump's printer core: the ``netdissect_options`` of one capture, and its dispatch tables.

Theory of operation: tcpdump prints a packet by handing its bytes to the
printer of the capture's link type (``ether_if_print``, ``sll_if_print``…),
which hands the payload to the printer its type field names, and so on up:
``ethertype_print`` looks the ethertype up, ``ip_demux_print`` the IP
protocol, ``udp_print`` the port. Every printer writes to the one output
line through ``ND_PRINT`` and reads the bytes through ``GET_*`` macros that
jump out with `` [|proto]`` — the name of the printer that was running — when
a field lies past the captured bytes.

:class:`Printer` is that ``netdissect_options`` (the flags, the output, the
current protocol name, the TCP sequence-number state). The per-protocol
modules (``print_ether``, ``print_ip``, ``print_gre``, ``print_domain``…)
register their printers into the tables here with the decorators
:func:`linktype`, :func:`ethertype`, :func:`ipproto` and :func:`udp_port`,
as tcpdump's ``print.c``, ``print-ether.c`` and ``print-ip-demux.c`` list
them; :mod:`.tcpdump_print` imports them all. A printer reads with
:meth:`Printer.need` (``ND_TCHECK``), which raises :class:`Trunc`, and the
link-level entry turns that into tcpdump's marker, so no byte string makes a
printer raise.

tcpdump: netdissect.h, print.c, ntoh/extract.h, util-print.c, print-ascii.c.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable
from typing import Final

from netstack.wire.checksum import csum_fold, csum_partial

__all__ = [
    "ETHERTYPES",
    "ETHERTYPE_PRINTERS",
    "IPPROTO_PRINTERS",
    "IP_PROTOS",
    "LINKTYPE_PRINTERS",
    "TCP_PORT_PRINTERS",
    "UDP_PORT_PRINTERS",
    "IPInfo",
    "Printer",
    "Trunc",
    "bittok",
    "ethertype",
    "format_timestamp",
    "hex_dump",
    "ipproto",
    "linktype",
    "relts",
    "tcp_port",
    "udp_port",
]

H: Final = struct.Struct("!H")
HH: Final = struct.Struct("!HH")
I: Final = struct.Struct("!I")  # noqa: E741 - tcpdump's GET_BE_U_4

ETHERTYPES: Final = {
    0x0800: "IPv4",
    0x0806: "ARP",
    0x86DD: "IPv6",
    0x8100: "802.1Q",
    0x88A8: "802.1Q-QinQ",
    0x9100: "802.1Q-9100",
    0x6558: "TEB",
    0x8035: "Reverse ARP",
    0x809B: "Appletalk",
    0x80F3: "Appletalk ARP",
    0x8137: "IPX",
    0x880B: "PPP",
    0x8847: "MPLS unicast",
    0x8848: "MPLS multicast",
    0x88CC: "LLDP",
    0x888E: "EAPOL",
    0x8863: "PPPoE D",
    0x8864: "PPPoE S",
    0x88E5: "802.1AE MACsec",
    0x88F7: "PTP",
    0x8809: "Slow Protocols",
    0x9000: "Loopback",
}

IP_PROTOS: Final = {  # tcpdump's ipproto_values (ipproto.c)
    0: "Options",
    1: "ICMP",
    2: "IGMP",
    4: "IPIP",
    6: "TCP",
    8: "EGP",
    9: "IGRP",
    17: "UDP",
    33: "DCCP",
    41: "IPv6",
    43: "Routing",
    44: "Fragment",
    46: "RSVP",
    47: "GRE",
    50: "ESP",
    51: "AH",
    55: "Mobile IP",
    58: "ICMPv6",
    62: "Mobile IP (old)",
    77: "ND",
    88: "EIGRP",
    89: "OSPF",
    103: "PIM",
    108: "Compressed IP",
    112: "VRRP",
    113: "PGM",
    132: "SCTP",
    135: "Mobility",
}


class Trunc(Exception):
    """A field lies past the captured bytes (tcpdump's ``nd_trunc_longjmp``).

    The marker printed is `` [|proto]`` with *proto* or, when not given, the
    name of the printer that was running (``ndo->ndo_protocol``). *local*
    is a printer's own ``goto trunc`` (it returns normally, so the link
    header's length is known to ``-x``) rather than a ``GET_*`` macro's
    longjmp out of every printer (after which ``-x`` dumps the whole frame).
    """

    def __init__(self, proto: str | None = None, *, local: bool = False, after: str = "") -> None:
        super().__init__(proto)
        self.proto = proto
        self.local = local
        self.after = after  # what the printer's trunc label prints after the marker


class IPInfo:
    """What a transport printer needs of the IP header it sits in (tcpdump's ``bp2``)."""

    __slots__ = (
        "dst",
        "dsts",
        "family",
        "fragmented",
        "hdr",
        "phdst",
        "ports_only",
        "src",
        "srcs",
        "ttl",
    )

    def __init__(
        self,
        family: int,
        src: bytes,
        dst: bytes,
        *,
        fragmented: bool = False,
        ttl: int = 0,
        phdst: bytes | None = None,
        hdr: bytes = b"",
    ) -> None:
        self.family = family
        self.src = src
        self.dst = dst
        self.srcs = ip4(src) if family == 4 else ip6(src)
        self.dsts = ip4(dst) if family == 4 else ip6(dst)
        self.fragmented = fragmented
        self.ttl = ttl
        self.phdst = phdst if phdst is not None else dst  # final destination (RFC 8200 §8.1)
        self.hdr = hdr
        # IPv6: the transport follows extension headers, so it prints its ports only
        self.ports_only = False

    def pseudo(self, proto: int, length: int) -> int:
        """The pseudo-header's one's-complement sum (``nextproto4_cksum``/``nextproto6_cksum``).

        tcpdump: print-ip.c, nextproto4_cksum(); print-ip6.c, nextproto6_cksum().
        """
        if self.family == 4:
            a, b = HH.unpack(self.src)
            c, d = HH.unpack(self.phdst)
            return int(a + b + c + d + proto + length)
        s: int = sum(struct.unpack("!8H", self.src)) + sum(struct.unpack("!8H", self.phdst))
        return s + (length >> 16) + (length & 0xFFFF) + proto


LinkPrinter = Callable[["Printer", bytes, int], int]
EtherPrinter = Callable[["Printer", bytes, int], None]
ProtoPrinter = Callable[["Printer", bytes, int, IPInfo], None]

LINKTYPE_PRINTERS: Final[dict[int, LinkPrinter]] = {}
ETHERTYPE_PRINTERS: Final[dict[int, EtherPrinter]] = {}
IPPROTO_PRINTERS: Final[dict[int, ProtoPrinter]] = {}
# in the order udp_print()/tcp_print() test them (IS_SRC_OR_DST_PORT)
UDP_PORT_PRINTERS: Final[list[tuple[frozenset[int], ProtoPrinter]]] = []
TCP_PORT_PRINTERS: Final[list[tuple[frozenset[int], ProtoPrinter]]] = []


def linktype(*types: int) -> Callable[[LinkPrinter], LinkPrinter]:
    """Register a link-layer printer (``print.c``'s ``ndo_printers`` table)."""

    def register(fn: LinkPrinter) -> LinkPrinter:
        for t in types:
            LINKTYPE_PRINTERS[t] = fn
        return fn

    return register


def ethertype(*types: int) -> Callable[[EtherPrinter], EtherPrinter]:
    """Register a printer for an ethertype (``print-ether.c``, ``ethertype_print()``)."""

    def register(fn: EtherPrinter) -> EtherPrinter:
        for t in types:
            ETHERTYPE_PRINTERS[t] = fn
        return fn

    return register


def ipproto(*protos: int) -> Callable[[ProtoPrinter], ProtoPrinter]:
    """Register a printer for an IP protocol (``print-ip-demux.c``, ``ip_demux_print()``)."""

    def register(fn: ProtoPrinter) -> ProtoPrinter:
        for p in protos:
            IPPROTO_PRINTERS[p] = fn
        return fn

    return register


def udp_port(*ports: int) -> Callable[[ProtoPrinter], ProtoPrinter]:
    """Register a printer for a UDP port (``print-udp.c``, ``udp_print()``'s port switch)."""

    def register(fn: ProtoPrinter) -> ProtoPrinter:
        UDP_PORT_PRINTERS.append((frozenset(ports), fn))
        return fn

    return register


def tcp_port(*ports: int) -> Callable[[ProtoPrinter], ProtoPrinter]:
    """Register a printer for a TCP port (``print-tcp.c``, ``tcp_print()``'s port switch)."""

    def register(fn: ProtoPrinter) -> ProtoPrinter:
        TCP_PORT_PRINTERS.append((frozenset(ports), fn))
        return fn

    return register


# -- small helpers (addrtoname.c, util-print.c, in_cksum.c) -----------------------------------
def ip4(b: bytes) -> str:
    return socket.inet_ntop(socket.AF_INET, b)


def ip6(b: bytes) -> str:
    return socket.inet_ntop(socket.AF_INET6, b)


def mac(b: bytes) -> str:
    return ":".join(f"{x:02x}" for x in b)


def bittok(table: tuple[tuple[int, str], ...], default: str, value: int, sep: str = ", ") -> str:
    """tcpdump's ``bittok2str``: the names of the bits set in *value*, or *default*.

    tcpdump: util-print.c, bittok2str().
    """
    names = [name for bit, name in table if value & bit]
    return sep.join(names) if names else default


def cksum(data: bytes, pseudo: int = 0) -> int:
    """The folded one's complement sum over *data*: 0 when the checksum verifies.

    tcpdump: in_cksum.c, in_cksum().
    """
    return csum_fold(csum_partial(data, 0, len(data), pseudo)) if data else 0


def cksum_shouldbe(data: bytes, where: int, pseudo: int) -> int:
    """The checksum the field at *where* should hold. tcpdump: in_cksum.c, in_cksum_shouldbe()."""
    tmp = bytearray(data)
    tmp[where : where + 2] = b"\0\0"
    return csum_fold(csum_partial(tmp, 0, len(tmp), pseudo))


def relts(secs: int) -> str:
    """A duration as ``1h45m``. tcpdump: util-print.c, unsigned_relts_print()."""
    if secs == 0:
        return "0s"
    out = ""
    for unit, size in (("y", 31536000), ("w", 604800), ("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            out += f"{secs // size}{unit}"
            secs %= size
    return out + (f"{secs}s" if secs else "")


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
        dlt: the capture's link type (1 Ethernet, 113 Linux cooked, 101 raw IP…).
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
        dlt: int = 1,
    ) -> None:
        self.v = verbose
        self.e = eflag
        self.q = qflag
        self.tstyle = tstyle
        self.xflag = xflag
        self.ascii = ascii_dump
        self.absolute_seq = absolute_seq
        self.dlt = dlt
        self.protocol = ""
        self.caplen = 0
        self.ll_hdr_len = 0  # the link header's length, once known (ndo_ll_hdr_len)
        self._prev: float | None = None
        self._first: float | None = None
        self.tcp_seq: dict[tuple[bytes, bytes, int], tuple[int, int]] = {}
        self._out: list[str] = []

    # -- entry points -------------------------------------------------------------------
    def packet(self, ts: float, frame: bytes, wirelen: int | None = None) -> str:
        """The text tcpdump prints for one captured frame (possibly several lines)."""
        wirelen = wirelen if wirelen is not None else len(frame)
        problems = []
        if not frame:
            problems.append(" caplen==0")
        if wirelen == 0:
            problems.append(" len==0")
        elif wirelen < len(frame):
            problems.append(f" len({wirelen}) < caplen({len(frame)})")
        if problems:  # print.c: no timestamp, nothing else
            return "[Invalid header:" + ",".join(problems) + "]"
        if self._first is None:
            self._first = ts
        stamp = format_timestamp(ts, self.tstyle, self._prev, self._first)
        self._prev = ts
        return stamp + self.link(bytes(frame), wirelen)

    def link(self, frame: bytes, wirelen: int) -> str:
        """The frame's text without the timestamp (tcpdump's ``pretty_print_packet``).

        tcpdump: print.c, pretty_print_packet().
        """
        self._out = []
        self.protocol = ""
        self.caplen = len(frame)
        printer = LINKTYPE_PRINTERS.get(self.dlt) or LINKTYPE_PRINTERS[1]
        self.ll_hdr_len = 0
        try:
            hdrlen = printer(self, frame, wirelen)
        except Trunc as t:
            self.w(f" [|{t.proto or self.protocol}]{t.after}")
            hdrlen = self.ll_hdr_len if t.local else 0
        text = "".join(self._out)
        if self.xflag or self.ascii:
            start = 0 if self.xflag >= 2 else hdrlen
            if start < len(frame):
                text += "\n" + "\n".join(hex_dump(frame[start:], self.ascii))
        return text

    # alias kept for the checkers and older callers
    def ether(self, frame: bytes, wirelen: int) -> str:
        return self.link(frame, wirelen)

    # -- helpers -------------------------------------------------------------------------
    def w(self, s: str) -> None:
        """``ND_PRINT``."""
        self._out.append(s)

    def need(self, buf: bytes, end: int, proto: str | None = None, *, local: bool = False) -> None:
        """``GET_*``: raise :class:`Trunc` when *buf* is shorter than *end*.

        *local*: a printer's own ``ND_TCHECK_*`` and ``goto trunc`` (see :class:`Trunc`).
        """
        if len(buf) < end:
            raise Trunc(proto, local=local)

    def default_print(self, data: bytes, *, unless_suppressed: bool = True) -> None:
        """Hex of an undecoded payload (``ND_DEFAULTPRINT``).

        With *unless_suppressed* (the callers that test
        ``ndo_suppress_default_print``) nothing under ``-q``, ``-x`` or ``-X``.

        tcpdump: print.c, ndo_default_print() → hex_and_ascii_print().
        """
        if unless_suppressed and (self.xflag or self.ascii or self.q):
            return
        if data:
            self.w("\n" + "\n".join(hex_dump(data, True)))

    def ethertype_print(self, etype: int, bp: bytes, length: int) -> bool:
        """Print what *etype* carries; False if tcpdump has no printer for it.

        tcpdump: print-ether.c, ethertype_print().
        """
        fn = ETHERTYPE_PRINTERS.get(etype)
        if fn is None:
            return False
        fn(self, bp, length)
        return True

    def ip_demux(self, proto: int, bp: bytes, length: int, ip: IPInfo) -> None:
        """Print what IP protocol *proto* carries. tcpdump: print-ip-demux.c, ip_demux_print()."""
        fn = IPPROTO_PRINTERS.get(proto)
        if fn is not None:
            fn(self, bp, length, ip)
            return
        self.w(f" ip-proto-{proto} {length}")
