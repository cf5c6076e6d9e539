"""The symbolic names scripts may use, with their Linux values (on any host OS).

packetdrill resolves a word such as ``SO_REUSEADDR`` or ``EAGAIN`` through the
C headers of the machine it was built on (``symbols_linux.c``); this table
holds the Linux values, so a script means the same on every OS.

Kernel: include/uapi/linux/socket.h, asm-generic/socket.h, linux/tcp.h, in.h,
in6.h, asm-generic/fcntl.h, asm-generic/ioctls.h, asm-generic/poll.h.
"""

from __future__ import annotations

from typing import Final

from netstack.userspace.packetdrill.errnos import ERRNO_VALUES

__all__ = ["SYMBOLS", "symbol_to_int"]

SYMBOLS: Final[dict[str, int]] = {
    # address and protocol families, socket types
    "AF_UNSPEC": 0, "AF_INET": 2, "AF_INET6": 10, "PF_UNSPEC": 0, "PF_INET": 2,
    "PF_INET6": 10, "SOCK_STREAM": 1, "SOCK_DGRAM": 2, "SOCK_RAW": 3,
    "SOCK_NONBLOCK": 0o4000, "SOCK_CLOEXEC": 0o2000000,
    "IPPROTO_IP": 0, "IPPROTO_ICMP": 1, "IPPROTO_TCP": 6, "IPPROTO_UDP": 17,
    "IPPROTO_IPV6": 41, "IPPROTO_ICMPV6": 58, "IPPROTO_RAW": 255,
    "SOL_SOCKET": 1, "SOL_IP": 0, "SOL_TCP": 6, "SOL_UDP": 17, "SOL_IPV6": 41,
    # SOL_SOCKET options
    "SO_DEBUG": 1, "SO_REUSEADDR": 2, "SO_TYPE": 3, "SO_ERROR": 4, "SO_DONTROUTE": 5,
    "SO_BROADCAST": 6, "SO_SNDBUF": 7, "SO_RCVBUF": 8, "SO_KEEPALIVE": 9,
    "SO_OOBINLINE": 10, "SO_NO_CHECK": 11, "SO_PRIORITY": 12, "SO_LINGER": 13,
    "SO_BSDCOMPAT": 14, "SO_REUSEPORT": 15, "SO_RCVLOWAT": 18, "SO_SNDLOWAT": 19,
    "SO_RCVTIMEO": 20, "SO_SNDTIMEO": 21, "SO_BINDTODEVICE": 25, "SO_TIMESTAMP": 29,
    "SO_ACCEPTCONN": 30, "SO_SNDBUFFORCE": 32, "SO_RCVBUFFORCE": 33, "SO_MARK": 36,
    "SO_TIMESTAMPING": 37, "SO_PROTOCOL": 38, "SO_DOMAIN": 39, "SO_RXQ_OVFL": 40,
    "SO_MAX_PACING_RATE": 47, "SO_INCOMING_CPU": 49, "SO_ZEROCOPY": 60, "SO_TXTIME": 61,
    # IPPROTO_TCP options
    "TCP_NODELAY": 1, "TCP_MAXSEG": 2, "TCP_CORK": 3, "TCP_KEEPIDLE": 4,
    "TCP_KEEPINTVL": 5, "TCP_KEEPCNT": 6, "TCP_SYNCNT": 7, "TCP_LINGER2": 8,
    "TCP_DEFER_ACCEPT": 9, "TCP_WINDOW_CLAMP": 10, "TCP_INFO": 11, "TCP_QUICKACK": 12,
    "TCP_CONGESTION": 13, "TCP_MD5SIG": 14, "TCP_THIN_LINEAR_TIMEOUTS": 16,
    "TCP_THIN_DUPACK": 17, "TCP_USER_TIMEOUT": 18, "TCP_REPAIR": 19,
    "TCP_REPAIR_QUEUE": 20, "TCP_QUEUE_SEQ": 21, "TCP_REPAIR_OPTIONS": 22,
    "TCP_FASTOPEN": 23, "TCP_TIMESTAMP": 24, "TCP_NOTSENT_LOWAT": 25, "TCP_CC_INFO": 26,
    "TCP_SAVE_SYN": 27, "TCP_SAVED_SYN": 28, "TCP_REPAIR_WINDOW": 29,
    "TCP_FASTOPEN_CONNECT": 30, "TCP_ULP": 31, "TCP_MD5SIG_EXT": 32,
    "TCP_FASTOPEN_KEY": 33, "TCP_FASTOPEN_NO_COOKIE": 34, "TCP_ZEROCOPY_RECEIVE": 35,
    "TCP_INQ": 36, "TCP_TX_DELAY": 37,
    # IP / IPv6 options
    "IP_TOS": 1, "IP_TTL": 2, "IP_HDRINCL": 3, "IP_OPTIONS": 4, "IP_RECVERR": 11,
    "IP_MTU_DISCOVER": 10, "IP_MTU": 14, "IP_FREEBIND": 15, "IP_TRANSPARENT": 19,
    "IP_BIND_ADDRESS_NO_PORT": 24, "IP_PMTUDISC_DONT": 0, "IP_PMTUDISC_WANT": 1,
    "IP_PMTUDISC_DO": 2, "IP_PMTUDISC_PROBE": 3, "IPV6_UNICAST_HOPS": 16,
    "IPV6_MTU_DISCOVER": 23, "IPV6_MTU": 24, "IPV6_RECVERR": 25, "IPV6_V6ONLY": 26,
    "IPV6_TCLASS": 67, "IPV6_FLOWLABEL_MGR": 32, "IPV6_FLOWINFO_SEND": 33,
    "IPV6_AUTOFLOWLABEL": 70, "IPV6_DONTFRAG": 62,
    # message flags
    "MSG_OOB": 0x1, "MSG_PEEK": 0x2, "MSG_DONTROUTE": 0x4, "MSG_CTRUNC": 0x8,
    "MSG_TRUNC": 0x20, "MSG_DONTWAIT": 0x40, "MSG_EOR": 0x80, "MSG_WAITALL": 0x100,
    "MSG_ERRQUEUE": 0x2000, "MSG_NOSIGNAL": 0x4000, "MSG_MORE": 0x8000,
    "MSG_ZEROCOPY": 0x4000000, "MSG_FASTOPEN": 0x20000000,
    # shutdown, fcntl, open flags
    "SHUT_RD": 0, "SHUT_WR": 1, "SHUT_RDWR": 2, "F_DUPFD": 0, "F_GETFD": 1, "F_SETFD": 2,
    "F_GETFL": 3, "F_SETFL": 4, "FD_CLOEXEC": 1, "O_RDONLY": 0, "O_WRONLY": 1, "O_RDWR": 2,
    "O_NONBLOCK": 0o4000, "O_NDELAY": 0o4000, "O_CLOEXEC": 0o2000000,
    # ioctls
    "FIONREAD": 0x541B, "SIOCINQ": 0x541B, "SIOCOUTQ": 0x5411, "SIOCOUTQNSD": 0x894B,
    "FIONBIO": 0x5421,
    # poll events
    "POLLIN": 0x1, "POLLPRI": 0x2, "POLLOUT": 0x4, "POLLERR": 0x8, "POLLHUP": 0x10,
    "POLLNVAL": 0x20, "POLLRDNORM": 0x40, "POLLRDBAND": 0x80, "POLLWRNORM": 0x100,
    "POLLWRBAND": 0x200, "POLLMSG": 0x400, "POLLRDHUP": 0x2000,
    # TCP states and the like, for scripts that compare getsockopt results
    "TCP_ESTABLISHED": 1, "TCP_SYN_SENT": 2, "TCP_SYN_RECV": 3, "TCP_FIN_WAIT1": 4,
    "TCP_FIN_WAIT2": 5, "TCP_TIME_WAIT": 6, "TCP_CLOSE": 7, "TCP_CLOSE_WAIT": 8,
    "TCP_LAST_ACK": 9, "TCP_LISTEN": 10, "TCP_CLOSING": 11,
    "NULL": 0,
    **ERRNO_VALUES,
}  # fmt: skip


def symbol_to_int(name: str) -> int | None:
    """The Linux value of *name*, or None if the runner does not know it."""
    return SYMBOLS.get(name)
