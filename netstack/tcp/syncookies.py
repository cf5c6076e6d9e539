"""SYN cookies, the family-independent part: the cookie arithmetic, the timestamp
encoding of the SYN's options, the SYN flood decision, the child from a cookie.

Theory of operation: when a listener's SYN queue is full (or
``net.ipv4.tcp_syncookies`` is 2) and cookies are on, a SYN keeps no state:
the SYN-ACK's initial sequence number *is* the state (``secure_tcp_syn_cookie``)::

    ISN = H0(saddr, daddr, sport, dport) + their ISN + (count << 24)
          + ((H1(saddr, daddr, sport, dport, count) + mssind) mod 2^24)

where ``count`` is the minute (``tcp_cookie_time``) and H0/H1 keyed hashes
(the kernel's ``siphash`` with two boot-time secrets; here a keyed BLAKE2b
with the Net's ``get_random_once`` secrets, so a given seed gives the same
cookies). ``mssind`` indexes the family's table of four MSS values. With
timestamps the low six bits of the SYN-ACK's TSval carry the SYN's window
scale, SACK and ECN (``cookie_init_timestamp``). The ACK of the handshake
brings the cookie back as ``ack_seq - 1``: subtracting H0 and the peer's
ISN leaves the minute (at most ``MAX_SYNCOOKIE_AGE`` old) and, after H1,
the MSS index; a valid one builds the request sock the SYN never had and
the child (``minisocks.tcp_get_cookie_sock``), straight to the accept queue.

The family modules (``ipv4/syncookies.py``, ``ipv6/syncookies.py``) provide
the hashes, the MSS tables and ``cookie_v4_check`` / ``cookie_v6_check``.

Kernel: net/ipv4/syncookies.c, net/ipv4/tcp_input.c (tcp_syn_flood_action),
include/net/tcp.h (tcp_synq_overflow, tcp_cookie_time).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from netstack.core.sock import AF_INET6
from netstack.sites import kernel
from netstack.wire.ipv4 import ntoa
from netstack.wire.ipv6 import ntoa as ntoa6

if TYPE_CHECKING:
    from netstack.tcp.options import TcpOptionsReceived
    from netstack.tcp.sock import RequestSock, TcpSock

__all__ = [
    "COOKIEBITS",
    "COOKIEMASK",
    "MAX_SYNCOOKIE_AGE",
    "check_tcp_syn_cookie",
    "cookie_ecn_ok",
    "cookie_init_timestamp",
    "cookie_timestamp_decode",
    "secure_tcp_syn_cookie",
    "tcp_cookie_time",
    "tcp_syn_flood_action",
    "tcp_synq_no_recent_overflow",
    "tcp_synq_overflow",
    "time_between32",
]

M32: Final = 0xFFFFFFFF
COOKIEBITS: Final = 24  # upper bits store the count
COOKIEMASK: Final = (1 << COOKIEBITS) - 1
MAX_SYNCOOKIE_AGE: Final = 2
TCP_SYNCOOKIE_PERIOD_S: Final = 60
# the low TSBITS bits of a cookie SYN-ACK's TSval: | ECN | SACK | WScale (4 bits) |
TS_OPT_WSCALE_MASK: Final = 0xF  # 0xf (an invalid scale): the SYN had no window scaling
TS_OPT_SACK: Final = 1 << 4
TS_OPT_ECN: Final = 1 << 5
TSBITS: Final = 6

CookieHash = Callable[[int, int], int]
"""``cookie_hash(count, c)`` over one connection's addresses and ports."""


@kernel("include/net/tcp.h", "tcp_cookie_time")
def tcp_cookie_time(sk: TcpSock) -> int:
    """The minute counter a cookie carries. Kernel: include/net/tcp.h, tcp_cookie_time()."""
    clock = sk.net.clock
    return (clock.jiffies // (TCP_SYNCOOKIE_PERIOD_S * clock.hz)) & M32


@kernel("net/ipv4/syncookies.c", "secure_tcp_syn_cookie")
def secure_tcp_syn_cookie(h: CookieHash, sseq: int, data: int, count: int) -> int:
    """The cookie ISN for their ISN *sseq*, carrying *data* (the MSS index).

    Kernel: net/ipv4/syncookies.c, secure_tcp_syn_cookie().
    """
    return (h(0, 0) + sseq + (count << COOKIEBITS) + ((h(count, 1) + data) & COOKIEMASK)) & M32


@kernel("net/ipv4/syncookies.c", "check_tcp_syn_cookie")
def check_tcp_syn_cookie(h: CookieHash, cookie: int, sseq: int, count: int) -> int:
    """The data (MSS index) a cookie carries; out of range (``M32``) if it is too old.

    Kernel: net/ipv4/syncookies.c, check_tcp_syn_cookie().
    """
    cookie = (cookie - (h(0, 0) + sseq)) & M32
    diff = (count - (cookie >> COOKIEBITS)) & (M32 >> COOKIEBITS)
    if diff >= MAX_SYNCOOKIE_AGE:
        return M32
    return (cookie - h((count - diff) & M32, 1)) & COOKIEMASK


@kernel("include/linux/jiffies.h", "time_between32")
def time_between32(t: int, lo: int, hi: int) -> bool:
    """Kernel: include/linux/jiffies.h, time_between32()."""
    return ((hi - lo) & M32) >= ((t - lo) & M32)


@kernel("include/net/tcp.h", "tcp_synq_overflow")
def tcp_synq_overflow(sk: TcpSock) -> None:
    """Remember that the SYN queue overflowed (at most once a second).

    The kernel keeps the time in the listener's otherwise unused
    ``rx_opt.ts_recent_stamp``; here it is ``synq_overflow_stamp`` (None: never).

    Kernel: include/net/tcp.h, tcp_synq_overflow().
    """
    clock = sk.net.clock
    now = clock.jiffies & M32
    last = sk.synq_overflow_stamp
    if last is None or not time_between32(now, last, (last + clock.hz) & M32):
        sk.synq_overflow_stamp = now


@kernel("include/net/tcp.h", "tcp_synq_no_recent_overflow")
def tcp_synq_no_recent_overflow(sk: TcpSock) -> bool:
    """No overflow in the last ``MAX_SYNCOOKIE_AGE`` minutes: an ACK cannot be a cookie's.

    Kernel: include/net/tcp.h, tcp_synq_no_recent_overflow().
    """
    last = sk.synq_overflow_stamp
    if last is None:
        return True
    clock = sk.net.clock
    valid = MAX_SYNCOOKIE_AGE * TCP_SYNCOOKIE_PERIOD_S * clock.hz  # TCP_SYNCOOKIE_VALID
    return not time_between32(clock.jiffies & M32, (last - clock.hz) & M32, (last + valid) & M32)


@kernel("net/ipv4/syncookies.c", "cookie_init_timestamp")
def cookie_init_timestamp(req: RequestSock, now_ms: int) -> int:
    """The SYN-ACK's TSval (before the pair's offset) with the SYN's options in its
    low bits, never ahead of the clock.

    Kernel: net/ipv4/syncookies.c, cookie_init_timestamp().
    """
    options = req.snd_wscale if req.wscale_ok else TS_OPT_WSCALE_MASK
    if req.sack_ok:
        options |= TS_OPT_SACK
    if req.ecn_ok:
        options |= TS_OPT_ECN
    ts = ((now_ms >> TSBITS) << TSBITS) | options
    if ts > now_ms:
        ts -= 1 << TSBITS
    return ts & M32


@kernel("net/ipv4/syncookies.c", "cookie_timestamp_decode")
def cookie_timestamp_decode(tcp: Any, rx: TcpOptionsReceived) -> bool:
    """Recover the SYN's options from the echoed timestamp; False if one is off here.

    Kernel: net/ipv4/syncookies.c, cookie_timestamp_decode().
    """
    options = rx.rcv_tsecr
    if not rx.saw_tstamp:
        rx.sack_ok = 0  # tcp_clear_options()
        rx.wscale_ok = False
        rx.snd_wscale = 0
        return True
    if not tcp.sysctl_tcp_timestamps:
        return False
    rx.sack_ok = 1 if options & TS_OPT_SACK else 0
    if rx.sack_ok and not tcp.sysctl_tcp_sack:
        return False
    if options & TS_OPT_WSCALE_MASK == TS_OPT_WSCALE_MASK:
        return True  # no window scaling
    rx.wscale_ok = True
    rx.snd_wscale = options & TS_OPT_WSCALE_MASK
    return bool(tcp.sysctl_tcp_window_scaling)


@kernel("net/ipv4/syncookies.c", "cookie_ecn_ok")
def cookie_ecn_ok(tcp: Any, rx: TcpOptionsReceived) -> bool:
    """Kernel: net/ipv4/syncookies.c, cookie_ecn_ok() (no TCP ECN here: off)."""
    return bool(rx.rcv_tsecr & TS_OPT_ECN) and bool(getattr(tcp, "sysctl_tcp_ecn", 0))


@kernel("net/ipv4/tcp_input.c", "tcp_syn_flood_action")
def tcp_syn_flood_action(sk: TcpSock, proto: str) -> bool:
    """The SYN queue is full (or cookies are forced): cookies, or drop? Says so once.

    The kernel's message ("Possible SYN flooding on port …") goes out once per
    listener (``synflood_warned``), through ``net_ratelimit()``.

    Kernel: net/ipv4/tcp_input.c, tcp_syn_flood_action().
    """
    tcp = sk.tcp
    syncookies = tcp.sysctl_tcp_syncookies
    if syncookies:
        msg = "Sending cookies"
        want_cookie = True
        sk.ext.TCPReqQFullDoCookies += 1
    else:
        msg = "Dropping request"
        want_cookie = False
        sk.ext.TCPReqQFullDrop += 1
    if not sk.synflood_warned and syncookies != 2:
        sk.synflood_warned = True
        net = sk.net
        if net.net_ratelimit():  # net_info_ratelimited()
            if sk.family == AF_INET6:  # [%pI6c]:%u
                where = f"[{ntoa6(sk.inet_rcv_saddr)}]:{sk.inet_num}"
            else:
                where = f"{ntoa(sk.inet_rcv_saddr)}:{sk.inet_num}"
            net.log.info(
                "syn_flood",
                msg=f"TCP: {proto}: Possible SYN flooding on port {where}. {msg}.",
            )
    return want_cookie
