"""TCP Fast Open (RFC 7413): data in the SYN, for both ends, as Linux 6.x does it.

Theory of operation. ``net.ipv4.tcp_fastopen`` is a bit mask: 0x1 the
client side (the default), 0x2 the server side, 0x4 a client that sends data
without a cookie, 0x200 a server that takes data without one, 0x400 Fast
Open on every listener without ``TCP_FASTOPEN``.

**Server.** A listener with ``TCP_FASTOPEN`` (its ``fastopenq.max_qlen``)
hands each SYN to ``tcp_try_fastopen`` (in :mod:`netstack.tcp.input`,
with the child's creation) from ``tcp_conn_request``. A cookie request (an
empty option, ``TCPFastOpenCookieReqd``) gets the cookie in the SYN-ACK:
SipHash-2-4 of the SYN's source and destination addresses under the Net's key
(``tcp_fastopen_key``, set once at random or by the sysctl; a listener may
have its own, ``TCP_FASTOPEN_KEY``, with a backup key for rotation), 8 bytes
(:func:`tcp_fastopen_cookie_gen_cipher`). A SYN whose cookie checks out — or
any SYN with data when 0x200 says no cookie is needed — creates the child at
once (``tcp_fastopen_create_child``): in SYN_RECV, on the accept queue, the
SYN's data in its receive queue, so ``accept()`` returns it and ``read()``
has the data before the handshake ends; the SYN-ACK acknowledges the data
(``TCPFastOpenPassive``). A wrong cookie (``TCPFastOpenPassiveFail``) or a
full Fast Open queue (:func:`tcp_fastopen_queue_check`,
``TCPFastOpenListenOverflow``) falls back to a normal handshake, the SYN-ACK
acknowledging only the SYN (with the right cookie, for a wrong one). The
child keeps the request (``fastopen_rsk``): ``tcp_check_req_fastopen``
screens its segments until the ACK of the SYN-ACK, which
``tcp_rcv_synrecv_state_fastopen`` (input) takes — the request leaves the
Fast Open queue (:func:`reqsk_fastopen_remove`); until then the child's
retransmission timer resends the SYN-ACK (``tcp_fastopen_synack_timer``,
timer).

**Client.** ``sendto``/``sendmsg`` with ``MSG_FASTOPEN`` on an unconnected
socket, or ``TCP_FASTOPEN_CONNECT`` and ``connect()`` (deferred by
:func:`tcp_fastopen_defer_connect` when a cookie is cached) then ``write()``,
run ``tcp_sendmsg_fastopen`` (in :mod:`netstack.tcp.tcp`): it records the
data (:class:`TcpFastopenRequest`, ``fastopen_req``) and connects.
``tcp_send_syn_data`` (output) asks :func:`tcp_fastopen_cookie_check`, which
looks the destination up in the cookie cache (Linux keeps it in
``tcp_metrics``; here :class:`TcpFastopenCache`, per Net, bounded, keyed by
the address pair): with a cookie the SYN carries it and as much data as fits
(an MSS less 40 bytes; ``TCPOrigDataSent``), the SYN and the data going into
the retransmit queue as two skbs; without one it carries a cookie request and
the data waits for the handshake. ``tcp_rcv_fastopen_synack`` (input) caches
the SYN-ACK's cookie and MSS; data the SYN-ACK did not acknowledge is
retransmitted at once (``TCPFastOpenActiveFail``), acknowledged data counts as
``TCPFastOpenActive`` and sets ``TCPI_OPT_SYN_DATA``. A non-blocking call
returns the bytes the SYN carried, or ``EINPROGRESS``; a blocking one waits
for the handshake (the SYN-ACK's ACK then rides on its data,
:func:`tcp_fastopen_write_pending`) and sends the rest. ``EOPNOTSUPP`` when
0x1 is off; ``EALREADY`` while another Fast Open is in progress;
``EISCONN`` on a connected socket.

**Black-hole detection.** Middleboxes that drop SYN-data (or the
connection after it) would cost every Fast Open client a timeout, so Linux
pauses active Fast Open for the whole Net when it sees one, given
``tcp_fastopen_blackhole_timeout_sec`` (0, off, by default since 5.14):
``tcp_write_timeout`` (timer) calls
:func:`tcp_fastopen_active_detect_blackhole` at each timeout of a socket whose
SYN had the option — the third consecutive one, or the last, disables
(:func:`tcp_fastopen_active_disable`, ``TCPFastOpenBlackhole``; the timeout
counts in ``TCPFastOpenActiveFail`` either way) — and closing or
disconnecting one that got no data but a lone out-of-order FIN disables too
(:func:`tcp_fastopen_active_disable_ofo_check`). While
:func:`tcp_fastopen_active_should_disable` says so (the timeout × 2^(n−1)
after the n-th disabling, at most × 64), :func:`tcp_fastopen_cookie_check`
refuses: the SYN goes plain, no option, no data. A socket opened after a
pause that then receives data, not over loopback, resets n.

This module holds what the others call into and imports none of them (the
input, output and timer parts live with their kernel files' twins).

Kernel: net/ipv4/tcp_fastopen.c; net/ipv4/tcp_input.c
(tcp_rcv_fastopen_synack, tcp_rcv_synrecv_state_fastopen); net/ipv4/tcp_output.c
(tcp_send_syn_data); net/ipv4/tcp.c (tcp_sendmsg_fastopen, the TCP_FASTOPEN*
options); net/ipv4/tcp_metrics.c (tcp_fastopen_cache_get/set);
net/core/request_sock.c (reqsk_fastopen_remove).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Final

from netstack.core.netdevice import IFF_LOOPBACK
from netstack.core.siphash import siphash, siphash_key
from netstack.core.skbuff import SkBuff
from netstack.core.sock import sock_oserror
from netstack.sites import kernel
from netstack.tcp.sock import (
    TCP_CLOSE,
    TCP_LISTEN,
    FastopenQueue,
    TcpSock,
)
from netstack.wire.tcp import (
    TCPHDR_FIN,
    fastopen_option_space,
)

if TYPE_CHECKING:
    from netstack.tcp.proto import Tcp
    from netstack.tcp.sock import RequestSock

__all__ = [
    "TFO_CLIENT_ENABLE",
    "TFO_CLIENT_NO_COOKIE",
    "TFO_SERVER_COOKIE_NOT_REQD",
    "TFO_SERVER_ENABLE",
    "TFO_SERVER_WO_SOCKOPT1",
    "FastopenQueue",
    "TcpFastopenCache",
    "TcpFastopenCookie",
    "TcpFastopenRequest",
    "fastopen_queue_tune",
    "tcp_fastopen_active_detect_blackhole",
    "tcp_fastopen_active_disable",
    "tcp_fastopen_active_disable_ofo_check",
    "tcp_fastopen_active_should_disable",
    "tcp_fastopen_cookie_check",
    "tcp_fastopen_defer_connect",
    "tcp_fastopen_init_key_once",
    "tcp_fastopen_no_cookie",
    "tcp_passive_fastopen",
]

M32: Final = 0xFFFFFFFF
SOMAXCONN: Final = 4096  # net.core.somaxconn

# net.ipv4.tcp_fastopen bits (include/net/tcp.h)
TFO_CLIENT_ENABLE: Final = 1
TFO_SERVER_ENABLE: Final = 2
TFO_CLIENT_NO_COOKIE: Final = 4
TFO_SERVER_COOKIE_NOT_REQD: Final = 0x200
TFO_SERVER_WO_SOCKOPT1: Final = 0x400

TCP_FASTOPEN_KEY_LENGTH: Final = 16  # sizeof(siphash_key_t)
TCP_FASTOPEN_KEY_MAX: Final = 2  # a primary and a backup key
TCP_FASTOPEN_COOKIE_SIZE: Final = 8
TCP_FASTOPEN_CACHE_MAX: Final = 1024  # destinations the client remembers here

# tcpi_fastopen_client_fail (include/uapi/linux/tcp.h)
TFO_STATUS_UNSPEC: Final = 0
TFO_COOKIE_UNAVAILABLE: Final = 1
TFO_DATA_NOT_ACKED: Final = 2
TFO_SYN_RETRANSMITTED: Final = 3

EINVAL: Final = 22
EALREADY: Final = 114
EINPROGRESS: Final = 115
EISCONN: Final = 106
EOPNOTSUPP: Final = 95
ECONNREFUSED: Final = 111


class TcpFastopenCookie:
    """``struct tcp_fastopen_cookie``: *len* -1 none, 0 a request, else the cookie's length."""

    __slots__ = ("exp", "len", "val")

    def __init__(self, length: int = -1, val: bytes = b"", exp: bool = False) -> None:
        self.len = length
        self.val = val
        self.exp = exp

    def set(self, other: TcpFastopenCookie) -> None:
        self.len, self.val, self.exp = other.len, other.val, other.exp

    def option(self) -> tuple[bytes, bool] | None:
        """The option to write (``TcpOutOptions.fastopen``), or None for none."""
        if self.len < 0:
            return None
        return (self.val[: self.len], self.exp)

    def __repr__(self) -> str:
        return f"<TcpFastopenCookie len={self.len} {self.val.hex()}{' exp' if self.exp else ''}>"


class TcpFastopenRequest:
    """``struct tcp_fastopen_request``: a client's data for the SYN and its cookie."""

    __slots__ = ("cookie", "copied", "data", "size", "waiting")

    def __init__(self, data: bytes, cookie: TcpFastopenCookie | None = None) -> None:
        self.cookie = cookie if cookie is not None else TcpFastopenCookie(0)
        self.data: bytes | None = data  # None: all of it went with the SYN
        self.size = len(data)
        self.copied = 0
        self.waiting = False  # a blocking call waits for the handshake


class TcpFastopenMetrics:
    """``struct tcp_fastopen_metrics``: what the client learnt of one destination."""

    __slots__ = ("cookie", "last_syn_loss", "mss", "syn_loss", "try_exp")

    def __init__(self) -> None:
        self.mss = 0
        self.syn_loss = 0
        self.try_exp = 0
        self.last_syn_loss = 0
        self.cookie = TcpFastopenCookie(0)  # tcpm_suck_dst(): a new entry's cookie is empty


class TcpFastopenCache:
    """The client's cookie cache: Linux's ``tcp_metrics`` Fast Open part, per Net.

    Keyed by ``(family, saddr, daddr)`` as ``tcp_get_metrics`` keys its
    entries; bounded, the least recently updated destination goes first.
    """

    def __init__(self, limit: int = TCP_FASTOPEN_CACHE_MAX) -> None:
        self.limit = limit
        self.entries: OrderedDict[tuple[int, int, int], TcpFastopenMetrics] = OrderedDict()

    def get(self, key: tuple[int, int, int], create: bool) -> TcpFastopenMetrics | None:
        tm = self.entries.get(key)
        if tm is None and create:
            tm = self.entries[key] = TcpFastopenMetrics()
            while len(self.entries) > self.limit:
                self.entries.popitem(last=False)
        elif tm is not None and create:
            self.entries.move_to_end(key)
        return tm

    def clear(self) -> None:
        self.entries.clear()


# -- keys and cookies ---------------------------------------------------------------------------


def _keys_from_bytes(raw: bytes) -> list[tuple[int, int]]:
    return [
        siphash_key(raw[i : i + TCP_FASTOPEN_KEY_LENGTH])
        for i in range(0, len(raw), TCP_FASTOPEN_KEY_LENGTH)
    ]


def _keys_to_bytes(keys: list[tuple[int, int]]) -> bytes:
    return b"".join(k0.to_bytes(8, "little") + k1.to_bytes(8, "little") for k0, k1 in keys)


@kernel("net/ipv4/tcp_fastopen.c", "tcp_fastopen_reset_cipher")
def tcp_fastopen_reset_cipher(tcp: Tcp, sk: TcpSock | None, key: bytes) -> None:
    """Install a primary key (and a backup, if *key* has 32 bytes) on the Net or a listener.

    Kernel: net/ipv4/tcp_fastopen.c, tcp_fastopen_reset_cipher().
    """
    keys = _keys_from_bytes(key)
    if sk is not None:
        sk.fastopenq.ctx = keys
    else:
        tcp.tcp_fastopen_ctx = keys


@kernel("net/ipv4/tcp_fastopen.c", "tcp_fastopen_init_key_once")
def tcp_fastopen_init_key_once(tcp: Tcp) -> None:
    """A random key for the Net, the first time one is needed.

    Kernel: net/ipv4/tcp_fastopen.c, tcp_fastopen_init_key_once().
    """
    if tcp.tcp_fastopen_ctx is None:
        key = tcp.net.rng.getrandbits(8 * TCP_FASTOPEN_KEY_LENGTH)
        tcp_fastopen_reset_cipher(tcp, None, key.to_bytes(TCP_FASTOPEN_KEY_LENGTH, "little"))


@kernel("include/net/tcp.h", "tcp_fastopen_get_ctx")
def tcp_fastopen_get_ctx(sk: TcpSock) -> list[tuple[int, int]] | None:
    """The listener's keys, else the Net's. Kernel: include/net/tcp.h, tcp_fastopen_get_ctx()."""
    ctx = sk.fastopenq.ctx
    return ctx if ctx is not None else sk.tcp.tcp_fastopen_ctx


@kernel("net/ipv4/sysctl_net_ipv4.c", "proc_tcp_fastopen_key")
def tcp_fastopen_key_text(tcp: Tcp) -> str:
    """``net.ipv4.tcp_fastopen_key`` as Linux prints it: ``%08x-%08x-%08x-%08x`` per key.

    Each 32-bit group is a little-endian word of the 16 key bytes.
    Kernel: net/ipv4/sysctl_net_ipv4.c, proc_tcp_fastopen_key().
    """
    keys = tcp.tcp_fastopen_ctx
    raw = _keys_to_bytes(keys) if keys else bytes(TCP_FASTOPEN_KEY_LENGTH)
    words = [int.from_bytes(raw[i : i + 4], "little") for i in range(0, len(raw), 4)]
    groups = ["-".join(f"{w:08x}" for w in words[i : i + 4]) for i in range(0, len(words), 4)]
    return ",".join(groups)


def tcp_fastopen_key_parse(text: str) -> bytes | None:
    """The key bytes of ``tcp_fastopen_key`` text (4 or 8 hex words), or None if malformed."""
    words: list[int] = []
    for group in text.strip().split(","):
        parts = group.split("-")
        if len(parts) != 4:
            return None
        try:
            words += [int(p, 16) & M32 for p in parts]
        except ValueError:
            return None
    if len(words) not in (4, 8):
        return None
    return b"".join(w.to_bytes(4, "little") for w in words)


@kernel("net/ipv4/tcp_fastopen.c", "__tcp_fastopen_cookie_gen_cipher")
def tcp_fastopen_cookie_gen_cipher(syn: SkBuff, key: tuple[int, int]) -> TcpFastopenCookie:
    """SipHash-2-4 of the SYN's source and destination addresses: the 8-byte cookie.

    Kernel: net/ipv4/tcp_fastopen.c, __tcp_fastopen_cookie_gen_cipher().
    """
    nh = syn.network_header
    buf = syn.buf
    if buf[nh] >> 4 == 4:
        addrs = bytes(buf[nh + 12 : nh + 20])  # iph->saddr, iph->daddr
    else:
        addrs = bytes(buf[nh + 8 : nh + 40])  # ip6h->saddr, ip6h->daddr
    val = siphash(addrs, key).to_bytes(8, "little")  # cpu_to_le64()
    return TcpFastopenCookie(TCP_FASTOPEN_COOKIE_SIZE, val)


@kernel("net/ipv4/tcp_fastopen.c", "tcp_fastopen_cookie_gen_check")
def tcp_fastopen_cookie_gen_check(
    sk: TcpSock, syn: SkBuff, orig: TcpFastopenCookie, valid_foc: TcpFastopenCookie
) -> int:
    """Which key made *orig*: 0 none, 1 the primary, 2 the backup; *valid_foc* gets
    the primary key's cookie. Kernel: net/ipv4/tcp_fastopen.c, tcp_fastopen_cookie_gen_check().
    """
    ctx = tcp_fastopen_get_ctx(sk)
    if not ctx:
        return 0
    for i, key in enumerate(ctx):
        foc = tcp_fastopen_cookie_gen_cipher(syn, key)
        if i == 0:
            valid_foc.set(foc)
        if foc.len == orig.len and foc.val == orig.val[: orig.len]:  # tcp_fastopen_cookie_match
            return i + 1
    return 0


# -- server ------------------------------------------------------------------------------------


@kernel("include/net/tcp.h", "fastopen_queue_tune")
def fastopen_queue_tune(sk: TcpSock, backlog: int) -> None:
    """Kernel: include/net/tcp.h, fastopen_queue_tune() (bounded by somaxconn)."""
    sk.fastopenq.max_qlen = min(max(backlog, 0), SOMAXCONN)


@kernel("net/ipv4/tcp_fastopen.c", "tcp_fastopen_queue_check")
def tcp_fastopen_queue_check(sk: TcpSock) -> bool:
    """Whether the listener takes one more Fast Open child (``TCPFastOpenListenOverflow``).

    Kernel: net/ipv4/tcp_fastopen.c, tcp_fastopen_queue_check().
    """
    q = sk.fastopenq
    if q.max_qlen == 0:
        return False
    if q.qlen >= q.max_qlen:
        if not q.rskq_rst or q.rskq_rst[0][1] > sk.net.clock.jiffies:
            sk.ext.TCPFastOpenListenOverflow += 1
            return False
        q.rskq_rst.popleft()
        q.qlen -= 1
    return True


@kernel("net/ipv4/tcp_fastopen.c", "tcp_fastopen_no_cookie")
def tcp_fastopen_no_cookie(sk: TcpSock, dst: Any, flag: int) -> bool:
    """Fast Open without a cookie: the sysctl's *flag*, TCP_FASTOPEN_NO_COOKIE, or
    the route's ``fastopen_no_cookie 1`` metric (``dst_metric(dst,
    RTAX_FASTOPEN_NO_COOKIE)``, on IPv4 and IPv6 routes).

    Kernel: net/ipv4/tcp_fastopen.c, tcp_fastopen_no_cookie().
    """
    return (
        bool(sk.tcp.sysctl_tcp_fastopen & flag)
        or sk.fastopen_no_cookie
        or bool(dst is not None and getattr(dst, "metric_fastopen_no_cookie", 0))
    )


@kernel("include/net/tcp.h", "tcp_passive_fastopen")
def tcp_passive_fastopen(sk: TcpSock) -> bool:
    """A Fast Open child still in SYN_RECV (it may send already).

    Kernel: include/net/tcp.h, tcp_passive_fastopen().
    """
    return sk.fastopen_rsk is not None


@kernel("net/core/request_sock.c", "reqsk_fastopen_remove")
def reqsk_fastopen_remove(sk: TcpSock, req: RequestSock, reset: bool) -> None:
    """The child leaves SYN_RECV: its request leaves the Fast Open queue (a reset one
    stays counted for 60 s). Kernel: net/core/request_sock.c, reqsk_fastopen_remove().
    """
    lsk = req.listener
    q = lsk.fastopenq
    sk.fastopen_rsk = None
    q.qlen -= 1
    req.tfo_listener = False
    if req.child is not None and sk.parent is lsk:  # not accepted yet
        return
    if not reset or lsk.state != TCP_LISTEN:
        return
    q.rskq_rst.append((req, lsk.net.clock.jiffies + 60 * lsk.tcp.hz))
    q.qlen += 1


# -- client ------------------------------------------------------------------------------------


def _cache_key(sk: TcpSock) -> tuple[int, int, int]:
    return (sk.af_ops.family, sk.inet_saddr, sk.inet_daddr)


@kernel("net/ipv4/tcp_metrics.c", "tcp_fastopen_cache_get")
def tcp_fastopen_cache_get(sk: TcpSock, cookie: TcpFastopenCookie) -> int:
    """The cached cookie of the destination into *cookie*; returns the cached MSS (0: none).

    Kernel: net/ipv4/tcp_metrics.c, tcp_fastopen_cache_get().
    """
    tm = sk.tcp.tcp_fastopen_cache.get(_cache_key(sk), False)
    if tm is None:
        return 0
    cookie.set(tm.cookie)
    if cookie.len <= 0 and tm.try_exp == 1:
        cookie.exp = True
    return tm.mss


@kernel("net/ipv4/tcp_metrics.c", "tcp_fastopen_cache_set")
def tcp_fastopen_cache_set(
    sk: TcpSock, mss: int, cookie: TcpFastopenCookie | None, syn_lost: bool, try_exp: int
) -> None:
    """Remember the SYN-ACK's MSS and cookie for the destination.

    Kernel: net/ipv4/tcp_metrics.c, tcp_fastopen_cache_set().
    """
    tm = sk.tcp.tcp_fastopen_cache.get(_cache_key(sk), True)
    assert tm is not None
    if mss:
        tm.mss = mss
    if cookie is not None and cookie.len > 0:
        tm.cookie = TcpFastopenCookie(cookie.len, cookie.val, cookie.exp)
    elif try_exp > tm.try_exp and tm.cookie.len <= 0 and not tm.cookie.exp:
        tm.try_exp = try_exp
    if syn_lost:
        tm.syn_loss += 1
        tm.last_syn_loss = sk.net.clock.jiffies
    else:
        tm.syn_loss = 0


# -- black-hole detection: middleboxes that drop SYN-data (or the connection after it) ----------


@kernel("net/ipv4/tcp_fastopen.c", "tcp_fastopen_active_disable")
def tcp_fastopen_active_disable(sk: TcpSock) -> None:
    """Pause active Fast Open for the whole Net: stamp the time, count one more
    disabling (``TCPFastOpenBlackhole``); nothing with the sysctl at 0.

    Kernel: net/ipv4/tcp_fastopen.c, tcp_fastopen_active_disable().
    """
    tcp = sk.tcp
    if not tcp.sysctl_tcp_fastopen_blackhole_timeout:
        return
    tcp.tfo_active_disable_stamp = sk.net.clock.jiffies
    tcp.tfo_active_disable_times += 1
    sk.ext.TCPFastOpenBlackhole += 1


@kernel("net/ipv4/tcp_fastopen.c", "tcp_fastopen_active_should_disable")
def tcp_fastopen_active_should_disable(sk: TcpSock) -> bool:
    """Whether active Fast Open is paused after black-holed attempts: for
    ``tcp_fastopen_blackhole_timeout_sec`` × 2^(times − 1) (at most × 64) from
    the last disabling; never with the sysctl 0, the default since 5.14. Once
    the pause is over the socket is marked (``syn_fastopen_ch``) so that its
    success resets the doubling.

    Kernel: net/ipv4/tcp_fastopen.c, tcp_fastopen_active_should_disable().
    """
    tcp = sk.tcp
    timeout = tcp.sysctl_tcp_fastopen_blackhole_timeout
    if not timeout or not tcp.tfo_active_disable_times:
        return False
    multiplier = 1 << min(tcp.tfo_active_disable_times - 1, 6)
    deadline = tcp.tfo_active_disable_stamp + multiplier * timeout * tcp.hz
    if sk.net.clock.jiffies < deadline:  # time_before()
        return True
    sk.syn_fastopen_ch = True
    return False


@kernel("net/ipv4/tcp_fastopen.c", "tcp_fastopen_active_disable_ofo_check")
def tcp_fastopen_active_disable_ofo_check(sk: TcpSock) -> None:
    """At close or disconnect of a Fast Open client: a FIN alone in the
    out-of-order queue with no data received means the data was black-holed
    (pause Fast Open); data received on a socket opened after a pause, not over
    loopback, resets the doubling.

    Kernel: net/ipv4/tcp_fastopen.c, tcp_fastopen_active_disable_ofo_check().
    """
    if not sk.syn_fastopen:
        return
    tcp = sk.tcp
    if not sk.data_segs_in:
        ofo = sk.out_of_order_queue
        if len(ofo) == 1 and ofo[0].cb.tcp_flags & TCPHDR_FIN:
            tcp_fastopen_active_disable(sk)
    elif sk.syn_fastopen_ch and tcp.tfo_active_disable_times:
        dst = sk.dst_cache
        dev = dst.dev if dst is not None else None
        if not (dev is not None and dev.flags & IFF_LOOPBACK):
            tcp.tfo_active_disable_times = 0


@kernel("net/ipv4/tcp_fastopen.c", "tcp_fastopen_active_detect_blackhole")
def tcp_fastopen_active_detect_blackhole(sk: TcpSock, expired: bool) -> None:
    """From ``tcp_write_timeout``: a Fast Open client's third consecutive
    timeout (``icsk_retransmits`` 2 before this one counts), or its last, pauses
    Fast Open (``TCPFastOpenActiveFail`` too).

    Kernel: net/ipv4/tcp_fastopen.c, tcp_fastopen_active_detect_blackhole().
    """
    timeouts = sk.icsk_retransmits
    if (sk.syn_fastopen or sk.syn_data or sk.syn_data_acked) and (
        timeouts == 2 or (timeouts < 2 and expired)
    ):
        tcp_fastopen_active_disable(sk)
        sk.ext.TCPFastOpenActiveFail += 1


@kernel("net/ipv4/tcp_fastopen.c", "tcp_fastopen_cookie_check")
def tcp_fastopen_cookie_check(sk: TcpSock, cookie: TcpFastopenCookie) -> tuple[bool, int]:
    """Whether the SYN may carry data, and the cached MSS (0: none).

    Kernel: net/ipv4/tcp_fastopen.c, tcp_fastopen_cookie_check().
    """
    mss = tcp_fastopen_cache_get(sk, cookie)
    if tcp_fastopen_active_should_disable(sk):
        cookie.len = -1
        return False, mss
    if tcp_fastopen_no_cookie(sk, sk.dst_cache, TFO_CLIENT_NO_COOKIE):
        cookie.len = -1
        return True, mss
    if cookie.len > 0:
        return True, mss
    sk.fastopen_client_fail = TFO_COOKIE_UNAVAILABLE
    return False, mss


@kernel("net/ipv4/tcp_fastopen.c", "tcp_fastopen_defer_connect")
def tcp_fastopen_defer_connect(sk: TcpSock) -> bool:
    """``TCP_FASTOPEN_CONNECT``: with a cookie, connect() sends nothing and the first
    write sends the SYN with its data; without, the SYN asks for a cookie.

    Kernel: net/ipv4/tcp_fastopen.c, tcp_fastopen_defer_connect().
    """
    if sk.fastopen_connect and sk.fastopen_req is None:
        cookie = TcpFastopenCookie(0)
        ok, _mss = tcp_fastopen_cookie_check(sk, cookie)
        if ok:
            sk.defer_connect = True
            return True
        req = TcpFastopenRequest(b"", cookie)
        req.data = None
        sk.fastopen_req = req
    return False


@kernel("net/ipv4/tcp_output.c", "tcp_syn_options")
def tcp_syn_options_fastopen(sk: TcpSock, remaining: int) -> tuple[bytes, bool] | None:
    """The Fast Open option of our SYN, if it fits (``tcp_syn_options``' Fast Open part).

    Kernel: net/ipv4/tcp_output.c, tcp_syn_options().
    """
    fo = sk.fastopen_req
    if fo is None or fo.cookie.len < 0:
        return None
    if remaining >= fastopen_option_space(fo.cookie.len, fo.cookie.exp):
        sk.syn_fastopen = True
        sk.syn_fastopen_exp = fo.cookie.exp
        opt: tuple[bytes, bool] | None = fo.cookie.option()
        return opt
    return None


@kernel("net/ipv4/af_inet.c", "inet_wait_for_connect")
def tcp_fastopen_write_pending(sk: TcpSock) -> bool:
    """A blocking Fast Open call waits with data for after the handshake
    (``sk_write_pending`` from ``inet_wait_for_connect``'s writebias): the
    SYN-ACK's ACK waits for that data. Kernel: net/ipv4/af_inet.c, inet_wait_for_connect()."""
    fo = sk.fastopen_req
    return fo is not None and fo.waiting and fo.data is not None


@kernel("net/ipv4/tcp.c", "do_tcp_setsockopt")
def tcp_fastopen_sockopt_check(sk: TcpSock, val: int) -> None:
    """``TCP_FASTOPEN``: only on a closed or listening socket, a non-negative queue length.

    Kernel: net/ipv4/tcp.c, do_tcp_setsockopt() (TCP_FASTOPEN).
    """
    if val >= 0 and sk.state in (TCP_CLOSE, TCP_LISTEN):
        tcp_fastopen_init_key_once(sk.tcp)
        fastopen_queue_tune(sk, val)
        return
    raise sock_oserror(EINVAL)


@kernel("net/ipv4/sysctl_net_ipv4.c", "proc_tcp_fastopen_key")
def tcp_fastopen_register_sysctls(tcp: Tcp) -> None:
    """``net.ipv4.tcp_fastopen``, ``tcp_fastopen_key`` and ``tcp_fastopen_blackhole_timeout_sec``.

    Kernel: net/ipv4/sysctl_net_ipv4.c, ipv4_net_table / proc_tcp_fastopen_key().
    """
    from netstack.core.sysctl import invalid

    s = tcp.net.sysctl

    def set_mode(text: str) -> None:
        # proc_dointvec reads with base 0 (strtoul_lenient): 0x602 and 01002 are 1538
        t = text.strip()
        sign = -1 if t.startswith("-") else 1
        t = t.lstrip("+-")
        try:
            if t[:2] in ("0x", "0X"):
                value = int(t[2:], 16)
            elif len(t) > 1 and t.startswith("0"):
                value = int(t[1:], 8)
            else:
                value = int(t, 10)
        except ValueError:
            raise invalid("net.ipv4.tcp_fastopen") from None
        tcp.sysctl_tcp_fastopen = sign * value

    s.register("net.ipv4.tcp_fastopen", lambda: str(tcp.sysctl_tcp_fastopen), set_mode)
    s.register_int(
        "net.ipv4.tcp_fastopen_blackhole_timeout_sec",
        tcp,
        "sysctl_tcp_fastopen_blackhole_timeout",
        minimum=0,
        maximum=None,
    )

    def set_key(text: str) -> None:
        key = tcp_fastopen_key_parse(text)
        if key is None:
            raise invalid("net.ipv4.tcp_fastopen_key")
        tcp_fastopen_reset_cipher(tcp, None, key)

    s.register("net.ipv4.tcp_fastopen_key", lambda: tcp_fastopen_key_text(tcp), set_key)
