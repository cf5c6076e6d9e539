"""TCP (RFC 9293): the header, its flags, and the options Linux sends and reads.

Theory of operation: :data:`TCP_HDR` is ``struct tcphdr`` (source, dest, seq,
ack_seq, the data-offset byte, the flags byte, window, check, urg_ptr); the
data offset is the high nibble of its byte, the low nibble holds the reserved
bits (bit 0 is AccECN's AE, formerly NS). :class:`TcpHdr` is the readable
record of it.

Options are written in exactly the order and alignment of the kernel's
``tcp_options_write`` (MSS, then timestamps — with SACK-permitted folded into
the timestamp word when both are present —, SACK-permitted alone, window
scale, SACK blocks, the TCP Fast Open cookie), so a Linux SYN reads ``02 04
05 b4  04 02 08 0a <tsval> <tsecr>  01 03 03 07``. The Fast Open option is
RFC 7413's kind 34 (``22 0a <8-byte cookie>``, an empty one a cookie request,
``22 02``) or the experimental kind 254 with magic 0xF989 (``fe 0c f9 89
<cookie>``); a length of 2 mod 4 is padded with two NOPs. :func:`iter_options`
walks an option area with the parser's rules (``tcp_parse_options``): EOL
ends it, a length below 2 or past the end stops it ("silly" and partial
options), NOP is skipped.

Pure: no trio, no state. Kernel: include/uapi/linux/tcp.h, include/net/tcp.h,
net/ipv4/tcp_output.c (tcp_options_write), net/ipv4/tcp_input.c
(tcp_parse_options).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Final, NamedTuple

from netstack.sites import kernel

__all__ = [
    "MAX_TCP_OPTION_SPACE",
    "TCPHDR_ACK",
    "TCPHDR_CWR",
    "TCPHDR_ECE",
    "TCPHDR_FIN",
    "TCPHDR_PSH",
    "TCPHDR_RST",
    "TCPHDR_SYN",
    "TCPHDR_URG",
    "TCP_HDR",
    "TCP_HLEN",
    "TcpHdr",
    "TcpOutOptions",
    "TcpParsedOptions",
    "fastopen_option_space",
    "flags_str",
    "iter_options",
    "pack_into",
    "parse",
    "parse_fastopen_option",
    "parse_options",
]

TCP_HLEN: Final = 20  # sizeof(struct tcphdr)
TCP_HDR: Final = struct.Struct("!HHIIBBHHH")
"""``struct tcphdr``: source, dest, seq, ack_seq, doff<<4|res, flags, window, check, urg_ptr."""

# th->flags (include/net/tcp.h, TCPHDR_*)
TCPHDR_FIN: Final = 0x01
TCPHDR_SYN: Final = 0x02
TCPHDR_RST: Final = 0x04
TCPHDR_PSH: Final = 0x08
TCPHDR_ACK: Final = 0x10
TCPHDR_URG: Final = 0x20
TCPHDR_ECE: Final = 0x40
TCPHDR_CWR: Final = 0x80
TCPHDR_SYN_ECN: Final = TCPHDR_SYN | TCPHDR_ECE | TCPHDR_CWR

# option kinds (include/net/tcp.h, TCPOPT_*)
TCPOPT_EOL: Final = 0
TCPOPT_NOP: Final = 1
TCPOPT_MSS: Final = 2
TCPOPT_WINDOW: Final = 3
TCPOPT_SACK_PERM: Final = 4
TCPOPT_SACK: Final = 5
TCPOPT_TIMESTAMP: Final = 8
TCPOPT_MD5SIG: Final = 19
TCPOPT_MPTCP: Final = 30
TCPOPT_FASTOPEN: Final = 34
TCPOPT_EXP: Final = 254
TCPOPT_FASTOPEN_MAGIC: Final = 0xF989  # the experimental option's ExID (RFC 6994)

TCPOLEN_MSS: Final = 4
TCPOLEN_WINDOW: Final = 3
TCPOLEN_SACK_PERM: Final = 2
TCPOLEN_TIMESTAMP: Final = 10
TCPOLEN_MD5SIG: Final = 18
TCPOLEN_SACK_BASE: Final = 2
TCPOLEN_SACK_PERBLOCK: Final = 8
TCPOLEN_FASTOPEN_BASE: Final = 2
TCPOLEN_EXP_FASTOPEN_BASE: Final = 4
TCP_FASTOPEN_COOKIE_MIN: Final = 4
TCP_FASTOPEN_COOKIE_MAX: Final = 16
# aligned sizes, as tcp_options_write pads them
TCPOLEN_MSS_ALIGNED: Final = 4
TCPOLEN_TSTAMP_ALIGNED: Final = 12
TCPOLEN_WSCALE_ALIGNED: Final = 4
TCPOLEN_SACKPERM_ALIGNED: Final = 4
TCPOLEN_SACK_BASE_ALIGNED: Final = 4

MAX_TCP_OPTION_SPACE: Final = 40
TCP_MAX_WSCALE: Final = 14
TCP_NUM_SACKS: Final = 4

_NOP_NOP_TS: Final = (TCPOPT_NOP << 24) | (TCPOPT_NOP << 16) | (TCPOPT_TIMESTAMP << 8) | 10
_SACKPERM_TS: Final = (TCPOPT_SACK_PERM << 24) | (2 << 16) | (TCPOPT_TIMESTAMP << 8) | 10
_NOP_NOP_SACKPERM: Final = (TCPOPT_NOP << 24) | (TCPOPT_NOP << 16) | (TCPOPT_SACK_PERM << 8) | 2
_I: Final = struct.Struct("!I")
_II: Final = struct.Struct("!II")
_III: Final = struct.Struct("!III")

_FLAG_LETTERS: Final = ((TCPHDR_FIN, "F"), (TCPHDR_SYN, "S"), (TCPHDR_RST, "R"),
                        (TCPHDR_PSH, "P"), (TCPHDR_ACK, "."), (TCPHDR_URG, "U"),
                        (TCPHDR_ECE, "E"), (TCPHDR_CWR, "W"))  # fmt: skip


class TcpHdr(NamedTuple):
    """``struct tcphdr``; ``doff`` in 32-bit words, ``res`` the low nibble of its byte."""

    source: int
    dest: int
    seq: int
    ack_seq: int
    doff: int
    res: int
    flags: int
    window: int
    check: int
    urg_ptr: int


def parse(buf: bytes | bytearray | memoryview, off: int = 0) -> TcpHdr:
    """Parse the fixed 20-byte header at *off* (options follow it)."""
    sport, dport, seq, ack, doff_res, flags, win, check, urg = TCP_HDR.unpack_from(buf, off)
    return TcpHdr(sport, dport, seq, ack, doff_res >> 4, doff_res & 0xF, flags, win, check, urg)


def pack_into(buf: bytearray, off: int, hdr: TcpHdr) -> None:
    """Write the fixed header at *off*."""
    TCP_HDR.pack_into(
        buf,
        off,
        hdr.source,
        hdr.dest,
        hdr.seq,
        hdr.ack_seq,
        ((hdr.doff & 0xF) << 4) | (hdr.res & 0xF),
        hdr.flags,
        hdr.window,
        hdr.check,
        hdr.urg_ptr,
    )


def flags_str(flags: int) -> str:
    """tcpdump's flag letters (``S.`` for SYN-ACK, ``P.`` for PSH-ACK …)."""
    return "".join(c for bit, c in _FLAG_LETTERS if flags & bit) or "none"


class TcpOutOptions:
    """Options to write into an outgoing segment (kernel: ``struct tcp_out_options``).

    Attributes:
        mss: the MSS option's value, 0 for none.
        ws: window scale to offer, or -1 for none.
        sack_perm: send SACK-permitted.
        ts: ``(tsval, tsecr)`` or None.
        sacks: SACK blocks, ``(start, end)`` pairs (at most what fits).
        fastopen: the Fast Open cookie to send (``b""`` asks for one) and
            whether in the experimental form, or None for no option.
    """

    __slots__ = ("fastopen", "mss", "sack_perm", "sacks", "ts", "ws")

    def __init__(
        self,
        mss: int = 0,
        ws: int = -1,
        sack_perm: bool = False,
        ts: tuple[int, int] | None = None,
        sacks: tuple[tuple[int, int], ...] = (),
        fastopen: tuple[bytes, bool] | None = None,
    ) -> None:
        self.mss = mss
        self.ws = ws
        self.sack_perm = sack_perm
        self.ts = ts
        self.sacks = sacks
        self.fastopen = fastopen

    def size(self) -> int:
        """Bytes the options take on the wire (a multiple of 4)."""
        n = 0
        if self.mss:
            n += TCPOLEN_MSS_ALIGNED
        if self.ts is not None:
            n += TCPOLEN_TSTAMP_ALIGNED
        elif self.sack_perm:
            n += TCPOLEN_SACKPERM_ALIGNED
        if self.ws >= 0:
            n += TCPOLEN_WSCALE_ALIGNED
        if self.sacks:
            n += TCPOLEN_SACK_BASE_ALIGNED + len(self.sacks) * TCPOLEN_SACK_PERBLOCK
        if self.fastopen is not None:
            n += fastopen_option_space(len(self.fastopen[0]), self.fastopen[1])
        return n

    @kernel("net/ipv4/tcp_output.c", "tcp_options_write")
    def write(self, buf: bytearray, off: int) -> int:
        """Write the options at *off*; return the offset after them.

        Kernel: net/ipv4/tcp_output.c, tcp_options_write().
        """
        if self.mss:
            _I.pack_into(buf, off, (TCPOPT_MSS << 24) | (TCPOLEN_MSS << 16) | self.mss)
            off += 4
        ts = self.ts
        if ts is not None:
            word = _SACKPERM_TS if self.sack_perm else _NOP_NOP_TS
            _III.pack_into(buf, off, word, ts[0] & 0xFFFFFFFF, ts[1] & 0xFFFFFFFF)
            off += 12
        elif self.sack_perm:
            _I.pack_into(buf, off, _NOP_NOP_SACKPERM)
            off += 4
        if self.ws >= 0:
            _I.pack_into(buf, off, (TCPOPT_NOP << 24) | (TCPOPT_WINDOW << 16) | (3 << 8) | self.ws)
            off += 4
        sacks = self.sacks
        if sacks:
            n = len(sacks)
            _I.pack_into(
                buf,
                off,
                (TCPOPT_NOP << 24) | (TCPOPT_NOP << 16) | (TCPOPT_SACK << 8) | (2 + 8 * n),
            )
            off += 4
            for start, end in sacks:
                _II.pack_into(buf, off, start & 0xFFFFFFFF, end & 0xFFFFFFFF)
                off += 8
        fo = self.fastopen
        if fo is not None:
            cookie, exp = fo
            if exp:
                length = TCPOLEN_EXP_FASTOPEN_BASE + len(cookie)
                _I.pack_into(buf, off, (TCPOPT_EXP << 24) | (length << 16) | TCPOPT_FASTOPEN_MAGIC)
                p = off + TCPOLEN_EXP_FASTOPEN_BASE
            else:
                length = TCPOLEN_FASTOPEN_BASE + len(cookie)
                buf[off] = TCPOPT_FASTOPEN
                buf[off + 1] = length
                p = off + TCPOLEN_FASTOPEN_BASE
            buf[p : p + len(cookie)] = cookie
            if length & 3 == 2:
                buf[p + len(cookie)] = TCPOPT_NOP
                buf[p + len(cookie) + 1] = TCPOPT_NOP
            off += ((length + 3) >> 2) << 2
        return off

    def tobytes(self) -> bytes:
        """The options as bytes (for tests and tools)."""
        buf = bytearray(self.size())
        self.write(buf, 0)
        return bytes(buf)


@kernel("net/ipv4/tcp_input.c", "tcp_parse_options")
def iter_options(
    buf: bytes | bytearray | memoryview, start: int, end: int
) -> Iterator[tuple[int, int, int]]:
    """Yield ``(kind, offset, length)`` of each option in ``buf[start:end]``.

    Follows the kernel parser: EOL ends the list, NOP is skipped (not
    yielded), and a length below 2 ("silly options") or running past the
    end ("partial options") stops the walk.

    Kernel: net/ipv4/tcp_input.c, tcp_parse_options().
    """
    i = start
    while i < end:
        kind = buf[i]
        if kind == TCPOPT_EOL:
            return
        if kind == TCPOPT_NOP:
            i += 1
            continue
        if i + 1 >= end:
            return
        size = buf[i + 1]
        if size < 2 or size > end - i:
            return
        yield kind, i, size
        i += size


def fastopen_option_space(cookie_len: int, exp: bool) -> int:
    """Bytes a Fast Open option with a *cookie_len*-byte cookie takes, 32-bit aligned
    (``tcp_syn_options``/``tcp_synack_options``: ``need = (need + 3) & ~3``)."""
    need = cookie_len + (TCPOLEN_EXP_FASTOPEN_BASE if exp else TCPOLEN_FASTOPEN_BASE)
    return (need + 3) & ~3


@kernel("net/ipv4/tcp_input.c", "tcp_parse_fastopen_option")
def parse_fastopen_option(length: int, cookie: bytes, exp: bool) -> tuple[int, bytes, bool]:
    """A Fast Open option's cookie: ``(len, cookie, exp)``; len -1 for an invalid one,
    0 for a cookie request (the caller has checked it is a SYN).

    Kernel: net/ipv4/tcp_input.c, tcp_parse_fastopen_option().
    """
    if length < 0 or length & 1:
        return -1, b"", exp
    if TCP_FASTOPEN_COOKIE_MIN <= length <= TCP_FASTOPEN_COOKIE_MAX:
        return length, bytes(cookie[:length]), exp
    if length != 0:
        return -1, b"", exp
    return 0, b"", exp


class TcpParsedOptions(NamedTuple):
    """What an option area says, without the socket-state checks the stack adds."""

    mss: int | None
    wscale: int | None
    sack_perm: bool
    ts: tuple[int, int] | None
    sacks: tuple[tuple[int, int], ...]
    fastopen: bytes | None = None  # the cookie (b"" a request); either option form


def parse_options(buf: bytes | bytearray | memoryview, start: int, end: int) -> TcpParsedOptions:
    """Decode the options of ``buf[start:end]`` (lengths checked as the kernel does)."""
    mss = wscale = None
    sack_perm = False
    ts = None
    sacks: tuple[tuple[int, int], ...] = ()
    fastopen: bytes | None = None
    for kind, off, size in iter_options(buf, start, end):
        if kind == TCPOPT_MSS and size == TCPOLEN_MSS:
            mss = (buf[off + 2] << 8) | buf[off + 3]
        elif kind == TCPOPT_WINDOW and size == TCPOLEN_WINDOW:
            wscale = buf[off + 2]
        elif kind == TCPOPT_SACK_PERM and size == TCPOLEN_SACK_PERM:
            sack_perm = True
        elif kind == TCPOPT_TIMESTAMP and size == TCPOLEN_TIMESTAMP:
            ts = _II.unpack_from(buf, off + 2)
        elif (
            kind == TCPOPT_SACK
            and size >= TCPOLEN_SACK_BASE + TCPOLEN_SACK_PERBLOCK
            and not (size - TCPOLEN_SACK_BASE) % TCPOLEN_SACK_PERBLOCK
        ):
            sacks = tuple(_II.unpack_from(buf, off + 2 + 8 * j) for j in range((size - 2) // 8))
        elif kind == TCPOPT_FASTOPEN:
            fastopen = bytes(buf[off + 2 : off + size])
        elif (
            kind == TCPOPT_EXP
            and size >= TCPOLEN_EXP_FASTOPEN_BASE
            and ((buf[off + 2] << 8) | buf[off + 3]) == TCPOPT_FASTOPEN_MAGIC
        ):
            fastopen = bytes(buf[off + 4 : off + size])
    return TcpParsedOptions(mss, wscale, sack_perm, ts, sacks, fastopen)
