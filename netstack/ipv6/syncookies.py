"""SYN cookies for IPv6: the keyed hash, the MSS table, ``cookie_v6_check``.

Theory of operation: see :mod:`netstack.tcp.syncookies`. The hash covers the
kernel's ``{saddr, daddr, count, sport, dport}`` structure, keyed with one of
the Net's two ``syncookie6_secret`` values; the MSS table is IPv6's (the
minimum MTU, 1480, 1500 and 9000 bytes less 60: 1220, 1420, 1440, 8940).

Kernel: net/ipv6/syncookies.c.
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
from netstack.wire.ipv6 import addr_at

if TYPE_CHECKING:
    from netstack.tcp.proto import Tcp

__all__ = ["MSSTAB6", "cookie_v6_check", "cookie_v6_init_sequence"]

M32: Final = 0xFFFFFFFF
# "Due to IPV6_MIN_MTU=1280 the lowest possible MSS is 1220 … The other values
# are chosen based on ethernet (1500 and 9k MTU), plus one that accounts for
# common encap (PPPoe) overhead. Table must be sorted."
MSSTAB6: Final = (1280 - 60, 1480 - 60, 1500 - 60, 9000 - 60)
_HH: Final = struct.Struct("!HH")
_TAIL: Final = struct.Struct("!IHH")  # count, sport, dport


@kernel("net/ipv6/syncookies.c", "cookie_hash")
def cookie_hash(tcp: Tcp, saddr: int, daddr: int, sport: int, dport: int) -> CookieHash:
    """``cookie_hash(count, c)`` for one IPv6 4-tuple.

    Twin: netstack.ipv4.syncookies.cookie_hash.
    Kernel: net/ipv6/syncookies.c, cookie_hash() (siphash of {saddr, daddr,
    count, sport, dport}, keyed with syncookie6_secret[c]).
    """
    net = tcp.net
    secrets = (net.get_random_once("syncookie6_secret0"), net.get_random_once("syncookie6_secret1"))
    addrs = saddr.to_bytes(16, "big") + daddr.to_bytes(16, "big")

    def h(count: int, c: int) -> int:
        data = addrs + _TAIL.pack(count, sport, dport)
        return int.from_bytes(hashlib.blake2b(data, key=secrets[c], digest_size=4).digest(), "big")

    return h


def _tuple(skb: SkBuff) -> tuple[int, int, int, int]:
    buf = skb.buf
    nh = skb.network_header
    sport, dport = _HH.unpack_from(buf, skb.transport_header)
    return addr_at(buf, nh + 8), addr_at(buf, nh + 24), sport, dport


@kernel("net/ipv6/syncookies.c", "cookie_v6_init_sequence", "__cookie_v6_init_sequence")
def cookie_v6_init_sequence(tcp: Tcp, sk: TcpSock, skb: SkBuff, mss: int) -> tuple[int, int]:
    """The cookie ISN for an IPv6 SYN, and its MSS rounded down to the table.

    Twin: netstack.ipv4.syncookies.cookie_v4_init_sequence.
    Kernel: net/ipv6/syncookies.c, cookie_v6_init_sequence() /
    __cookie_v6_init_sequence().
    """
    mssind = len(MSSTAB6) - 1
    while mssind and mss < MSSTAB6[mssind]:
        mssind -= 1
    saddr, daddr, sport, dport = _tuple(skb)
    tcb: TcpSkbCb = skb.cb
    h = cookie_hash(tcp, saddr, daddr, sport, dport)
    return secure_tcp_syn_cookie(h, tcb.seq, mssind, tcp_cookie_time(sk)), MSSTAB6[mssind]


@kernel("net/ipv6/syncookies.c", "__cookie_v6_check")
def __cookie_v6_check(tcp: Tcp, sk: TcpSock, skb: SkBuff, cookie: int) -> int:
    """The MSS a cookie encodes, 0 if it is not a valid one.

    Twin: netstack.ipv4.syncookies.__cookie_v4_check.
    Kernel: net/ipv6/syncookies.c, __cookie_v6_check().
    """
    saddr, daddr, sport, dport = _tuple(skb)
    tcb: TcpSkbCb = skb.cb
    h = cookie_hash(tcp, saddr, daddr, sport, dport)
    mssind = check_tcp_syn_cookie(h, cookie, (tcb.seq - 1) & M32, tcp_cookie_time(sk))
    return MSSTAB6[mssind] if mssind < len(MSSTAB6) else 0


@kernel("net/ipv6/syncookies.c", "cookie_v6_check")
def cookie_v6_check(ops: Any, sk: TcpSock, skb: SkBuff) -> TcpSock | None:
    """An ACK to an IPv6 listener: the child of a valid cookie, else the listener;
    None when the skb was dropped.

    Twin: netstack.ipv4.syncookies.cookie_v4_check.
    Kernel: net/ipv6/syncookies.c, cookie_v6_check().
    """
    return cookie_tcp_check(ops, sk, skb, lambda cookie: __cookie_v6_check(sk.tcp, sk, skb, cookie))
