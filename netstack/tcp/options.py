"""TCP option parsing: what a segment's option area says, for every state.

Theory of operation: the input path (``tcp_rcv_state_process``,
``tcp_conn_request``, the established fast path), the minisocks (a request's
ACK, a TIME_WAIT sock's segment, the child a handshake makes) and the SYN
cookies all read a header's options the same way. The kernel declares
``tcp_parse_options`` and ``struct tcp_options_received`` in
``include/net/tcp.h`` for exactly that; here they live in this module, below
:mod:`netstack.tcp.input` and :mod:`netstack.tcp.minisocks`, so that neither
needs the other to read an option (the no-sibling-cycles rule,
docs/design.md). :func:`tcp_parse_options` walks the area with
:func:`netstack.wire.tcp.iter_options` (the kernel's length checks) and
writes into a socket or a :class:`TcpOptionsReceived`; it sends nothing.

Kernel: include/net/tcp.h (struct tcp_options_received), net/ipv4/tcp_input.c
(tcp_parse_options, tcp_parse_fastopen_option).
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any, Final

from netstack.sites import kernel
from netstack.tcp.sock import TCP_MAX_WSCALE
from netstack.wire.tcp import (
    TCPHDR_SYN,
    TCPOLEN_EXP_FASTOPEN_BASE,
    TCPOLEN_FASTOPEN_BASE,
    TCPOLEN_MSS,
    TCPOLEN_SACK_BASE,
    TCPOLEN_SACK_PERBLOCK,
    TCPOLEN_SACK_PERM,
    TCPOLEN_TIMESTAMP,
    TCPOLEN_WINDOW,
    TCPOPT_EXP,
    TCPOPT_FASTOPEN,
    TCPOPT_FASTOPEN_MAGIC,
    TCPOPT_MSS,
    TCPOPT_SACK,
    TCPOPT_SACK_PERM,
    TCPOPT_TIMESTAMP,
    TCPOPT_WINDOW,
    iter_options,
    parse_fastopen_option,
)

if TYPE_CHECKING:
    from netstack.tcp.sock import TcpSkbCb

__all__ = ["TcpOptionsReceived", "tcp_parse_options"]

_II: Final = struct.Struct("!II")


class TcpOptionsReceived:
    """What a SYN's options said (kernel: ``struct tcp_options_received``)."""

    __slots__ = (
        "mss_clamp",
        "rcv_tsecr",
        "rcv_tsval",
        "sack_ok",
        "saw_tstamp",
        "snd_wscale",
        "user_mss",
        "wscale_ok",
    )  # fmt: skip

    def __init__(self) -> None:
        self.saw_tstamp = False
        self.rcv_tsval = 0
        self.rcv_tsecr = 0
        self.sack_ok = 0
        self.wscale_ok = False
        self.snd_wscale = 0
        self.mss_clamp = 0
        self.user_mss = 0


@kernel("net/ipv4/tcp_input.c", "tcp_parse_options")
def tcp_parse_options(
    buf: bytes | bytearray,
    th: int,
    rx: Any,
    estab: bool,
    tcb: TcpSkbCb | None = None,
    foc: Any = None,
) -> None:
    """Read the option area of the header at *th* into *rx* (a socket or TcpOptionsReceived).

    Options that only matter in a SYN (MSS, window scale, SACK-permitted) are
    skipped on an established connection; a SACK block's offset is left in
    ``tcb.sacked_off``. Lengths are checked as the kernel does; a malformed
    option ends the walk (iter_options). A SYN's Fast Open cookie (either
    form) goes into *foc* (a ``TcpFastopenCookie``) when one is given.

    Kernel: net/ipv4/tcp_input.c, tcp_parse_options().
    """
    rx.saw_tstamp = False
    end = th + (buf[th + 12] >> 4) * 4
    syn = bool(buf[th + 13] & TCPHDR_SYN)
    for kind, off, size in iter_options(buf, th + 20, end):
        if kind == TCPOPT_TIMESTAMP:
            if size == TCPOLEN_TIMESTAMP:
                rx.saw_tstamp = True
                rx.rcv_tsval, rx.rcv_tsecr = _II.unpack_from(buf, off + 2)
        elif kind == TCPOPT_SACK:
            if (
                size >= TCPOLEN_SACK_BASE + TCPOLEN_SACK_PERBLOCK
                and not (size - TCPOLEN_SACK_BASE) % TCPOLEN_SACK_PERBLOCK
                and tcb is not None
            ):
                tcb.sacked_off = off
        elif kind == TCPOPT_FASTOPEN or kind == TCPOPT_EXP:
            if foc is not None and syn:
                _fastopen_option(buf, off, size, kind, foc)
        elif estab or not syn:
            continue
        elif kind == TCPOPT_MSS:
            if size == TCPOLEN_MSS:
                in_mss = (buf[off + 2] << 8) | buf[off + 3]
                if in_mss:
                    user = rx.user_mss
                    if user and user < in_mss:
                        in_mss = user
                    rx.mss_clamp = in_mss
        elif kind == TCPOPT_WINDOW:
            if size == TCPOLEN_WINDOW:
                rx.wscale_ok = True
                rx.snd_wscale = min(buf[off + 2], TCP_MAX_WSCALE)
        elif kind == TCPOPT_SACK_PERM:
            if size == TCPOLEN_SACK_PERM:
                rx.sack_ok = 1


def _fastopen_option(buf: bytes | bytearray, off: int, size: int, kind: int, foc: Any) -> None:
    """tcp_parse_options()'s TCPOPT_FASTOPEN and TCPOPT_EXP cases."""
    if kind == TCPOPT_FASTOPEN:
        length, exp, start = size - TCPOLEN_FASTOPEN_BASE, False, off + 2
    elif (
        size >= TCPOLEN_EXP_FASTOPEN_BASE
        and ((buf[off + 2] << 8) | buf[off + 3]) == TCPOPT_FASTOPEN_MAGIC
    ):
        length, exp, start = size - TCPOLEN_EXP_FASTOPEN_BASE, True, off + 4
    else:
        return
    foc.len, foc.val, foc.exp = parse_fastopen_option(
        length, bytes(buf[start : start + length]), exp
    )
