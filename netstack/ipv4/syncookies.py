"""SYN cookies for IPv4: the keyed hash, the MSS table, ``cookie_v4_check``.

Theory of operation: see :mod:`netstack.tcp.syncookies` for the cookie. Here
the hash covers (saddr, daddr, sport << 16 | dport, count) as
``siphash_4u32`` does, keyed with one of the Net's two ``syncookie_secret``
values; the MSS table is the kernel's (536, 1300, 1440, 1460), and
:func:`cookie_v4_check` turns the ACK of a cookie SYN-ACK into a request sock
and then a child, as if the SYN had been queued.

Kernel: net/ipv4/syncookies.c.
"""

from __future__ import annotations

import hashlib
import struct
from typing import TYPE_CHECKING, Any, Final

from netstack.core.skbuff import SkBuff
from netstack.sites import kernel
from netstack.tcp.minisocks import cookie_tcp_check
from netstack.tcp.sock import TcpSkbCb, TcpSock
from netstack.tcp.syncookies import (
    CookieHash,
    check_tcp_syn_cookie,
    secure_tcp_syn_cookie,
    tcp_cookie_time,
)

if TYPE_CHECKING:
    from netstack.tcp.proto import Tcp

__all__ = ["MSSTAB", "cookie_v4_check", "cookie_v4_init_sequence"]

M32: Final = 0xFFFFFFFF
# "MSS values are chosen based on the 2011 paper 'An Analysis of TCP Maximum
# Segment Sizes' by S. Alcock and R. Nelson." Sorted.
MSSTAB: Final = (536, 1300, 1440, 1460)
_III: Final = struct.Struct("!III")
_II: Final = struct.Struct("!II")
_HH: Final = struct.Struct("!HH")
_I: Final = struct.Struct("!I")


@kernel("net/ipv4/syncookies.c", "cookie_hash")
def cookie_hash(tcp: Tcp, saddr: int, daddr: int, sport: int, dport: int) -> CookieHash:
    """``cookie_hash(count, c)`` for one 4-tuple.

    Twin: netstack.ipv6.syncookies.cookie_hash.
    Kernel: net/ipv4/syncookies.c, cookie_hash() (siphash_4u32 over saddr,
    daddr, sport << 16 | dport and count, keyed with syncookie_secret[c]).
    """
    net = tcp.net
    secrets = (net.get_random_once("syncookie_secret0"), net.get_random_once("syncookie_secret1"))
    head = _III.pack(saddr, daddr, (sport << 16) | dport)

    def h(count: int, c: int) -> int:
        d = hashlib.blake2b(head + _I.pack(count), key=secrets[c], digest_size=4).digest()
        return int.from_bytes(d, "big")

    return h


def _tuple(skb: SkBuff) -> tuple[int, int, int, int]:
    buf = skb.buf
    saddr, daddr = _II.unpack_from(buf, skb.network_header + 12)
    sport, dport = _HH.unpack_from(buf, skb.transport_header)
    return saddr, daddr, sport, dport


@kernel("net/ipv4/syncookies.c", "cookie_v4_init_sequence", "__cookie_v4_init_sequence")
def cookie_v4_init_sequence(tcp: Tcp, sk: TcpSock, skb: SkBuff, mss: int) -> tuple[int, int]:
    """The cookie ISN for a SYN, and its MSS rounded down to the table.

    Twin: netstack.ipv6.syncookies.cookie_v6_init_sequence.
    Kernel: net/ipv4/syncookies.c, cookie_v4_init_sequence() /
    __cookie_v4_init_sequence().
    """
    mssind = len(MSSTAB) - 1
    while mssind and mss < MSSTAB[mssind]:
        mssind -= 1
    saddr, daddr, sport, dport = _tuple(skb)
    tcb: TcpSkbCb = skb.cb
    h = cookie_hash(tcp, saddr, daddr, sport, dport)
    return secure_tcp_syn_cookie(h, tcb.seq, mssind, tcp_cookie_time(sk)), MSSTAB[mssind]


@kernel("net/ipv4/syncookies.c", "__cookie_v4_check")
def __cookie_v4_check(tcp: Tcp, sk: TcpSock, skb: SkBuff, cookie: int) -> int:
    """The MSS a cookie encodes, 0 if it is not a valid one.

    Twin: netstack.ipv6.syncookies.__cookie_v6_check.
    Kernel: net/ipv4/syncookies.c, __cookie_v4_check().
    """
    saddr, daddr, sport, dport = _tuple(skb)
    tcb: TcpSkbCb = skb.cb
    seq = (tcb.seq - 1) & M32
    h = cookie_hash(tcp, saddr, daddr, sport, dport)
    mssind = check_tcp_syn_cookie(h, cookie, seq, tcp_cookie_time(sk))
    return MSSTAB[mssind] if mssind < len(MSSTAB) else 0


@kernel("net/ipv4/syncookies.c", "cookie_v4_check")
def cookie_v4_check(ops: Any, sk: TcpSock, skb: SkBuff) -> TcpSock | None:
    """An ACK to an IPv4 (or dual-stack) listener: the child of a valid cookie, else
    the listener; None when the skb was dropped (see ``cookie_tcp_check``).

    Twin: netstack.ipv6.syncookies.cookie_v6_check.
    Kernel: net/ipv4/syncookies.c, cookie_v4_check().
    """
    return cookie_tcp_check(ops, sk, skb, lambda cookie: __cookie_v4_check(sk.tcp, sk, skb, cookie))
