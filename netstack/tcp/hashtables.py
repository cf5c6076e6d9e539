"""The TCP socket tables: established (with request and TIME_WAIT socks), listeners, binds.

Theory of operation: ``ehash`` maps a connection's 4-tuple, seen from this
host, to its socket — a full :class:`~netstack.tcp.sock.TcpSock`, a
:class:`~netstack.tcp.sock.RequestSock` (``TCP_NEW_SYN_RECV``) or a
:class:`~netstack.tcp.sock.TimewaitSock`. ``listeners`` maps a local port to
its listening sockets; a lookup prefers one bound to the exact destination
address over a wildcard one, as the kernel's two ``lhash2`` passes do.
``bhash`` maps a local port to every socket holding it (bound, connected,
listening or in TIME_WAIT); ``inet_csk_get_port`` applies the kernel's bind
conflict rules (``SO_REUSEADDR``, ``SO_REUSEPORT``, the bound device, the
address), and ``inet_hash_connect`` picks an ephemeral port whose 4-tuple is
unused. Keys carry the family, so IPv4 and IPv6 share the tables as they do
in the kernel (``tcp_hashinfo``).

Dual stack: the family of an ``ehash`` key is the family on the wire
(``af_ops.family``), so an AF_INET6 socket talking IPv4 through the
``ipv6_mapped`` af_ops is keyed, and found, as an IPv4 connection. An IPv4
SYN may find an AF_INET6 listener that is not ``IPV6_V6ONLY`` and is bound
to ``::`` or to ``::ffff:<daddr>`` (an AF_INET listener scores higher, as
in the kernel's ``compute_score``). Bind conflicts between the families
follow ``inet_rcv_saddr_equal``: ``0.0.0.0`` and ``::`` clash unless the
IPv6 socket is v6-only.

Kernel: net/ipv4/inet_hashtables.c, net/ipv4/inet_connection_sock.c
(inet_csk_get_port, inet_csk_bind_conflict).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from netstack.core.sock import AF_INET, AF_INET6, sock_oserror
from netstack.sites import kernel
from netstack.tcp.sock import SockCommon, TcpSock, TimewaitSock

if TYPE_CHECKING:
    from netstack.tcp.proto import Tcp

__all__ = [
    "InetHashinfo",
    "inet_rcv_saddr_equal",
    "ipv4_rcv_saddr_equal",
    "ipv6_rcv_saddr_equal",
    "sk_rcv_saddr_pair",
]

EADDRINUSE: Final = 98
EADDRNOTAVAIL: Final = 99
TCP_LISTEN: Final = 10
TCP_TIME_WAIT: Final = 6

Key = tuple[int, int, int, int, int]
V4MAPPED_PREFIX: Final = 0xFFFF << 32
LOOPBACK4_IPV6: Final = 0x7F000006  # 127.0.0.6: the IPv4 view of a native IPv6 bind


def _is_v4mapped(addr: int) -> bool:
    return addr >> 32 == 0xFFFF


def sk_rcv_saddr_pair(sk: TcpSock | TimewaitSock) -> tuple[int, int | None, bool]:
    """(IPv4 view ``sk_rcv_saddr``, IPv6 view ``sk_v6_rcv_saddr`` or None for an
    AF_INET socket, ``ipv6_only_sock``) of a full or TIME_WAIT socket.

    An AF_INET6 socket bound to ``::ffff:a.b.c.d`` has the IPv4 view
    ``a.b.c.d``, one bound to ``::`` has ``0.0.0.0``, one bound to a native
    IPv6 address ``127.0.0.6`` (which matches nothing). A socket using the
    ``ipv6_mapped`` af_ops holds its IPv4 address in ``inet_rcv_saddr``.

    As __inet6_bind sets them (v4addr = LOOPBACK4_IPV6); a helper, not a
    kernel function.
    """
    addr = sk.rcv_saddr if isinstance(sk, TimewaitSock) else sk.inet_rcv_saddr
    if sk.family != AF_INET6:
        return addr, None, False
    if sk.af_ops.family == AF_INET:  # ipv6_mapped
        return addr, (V4MAPPED_PREFIX | addr) if addr else 0, bool(sk.ipv6only)
    if not addr:
        return 0, 0, bool(sk.ipv6only)
    v4 = addr & 0xFFFFFFFF if _is_v4mapped(addr) else LOOPBACK4_IPV6
    return v4, addr, bool(sk.ipv6only)


@kernel("net/ipv4/inet_connection_sock.c", "ipv4_rcv_saddr_equal")
def ipv4_rcv_saddr_equal(
    sk1_rcv_saddr: int, sk2_rcv_saddr: int, sk2_ipv6only: bool, match_wildcard: bool
) -> bool:
    """Kernel: net/ipv4/inet_connection_sock.c, ipv4_rcv_saddr_equal()."""
    if not sk2_ipv6only:
        if sk1_rcv_saddr == sk2_rcv_saddr:
            return True
        return match_wildcard and (not sk1_rcv_saddr or not sk2_rcv_saddr)
    return False


@kernel("net/ipv4/inet_connection_sock.c", "ipv6_rcv_saddr_equal")
def ipv6_rcv_saddr_equal(
    sk1_rcv_saddr6: int,
    sk2_rcv_saddr6: int | None,
    sk1_rcv_saddr: int,
    sk2_rcv_saddr: int,
    sk1_ipv6only: bool,
    sk2_ipv6only: bool,
    match_wildcard: bool,
) -> bool:
    """Do an IPv6 socket's bound address and another's overlap? ``sk2_rcv_saddr6``
    is None when the other socket is AF_INET (it counts as v4-mapped).

    Kernel: net/ipv4/inet_connection_sock.c, ipv6_rcv_saddr_equal().
    """
    mapped1 = _is_v4mapped(sk1_rcv_saddr6)
    mapped2 = sk2_rcv_saddr6 is None or _is_v4mapped(sk2_rcv_saddr6)
    if mapped1 and mapped2:  # both mapped: treat as IPv4
        if not sk2_ipv6only:
            if sk1_rcv_saddr == sk2_rcv_saddr:
                return True
            return match_wildcard and (not sk1_rcv_saddr or not sk2_rcv_saddr)
        return False
    any1 = sk1_rcv_saddr6 == 0
    any2 = sk2_rcv_saddr6 == 0
    if any1 and any2:
        return True
    if any2 and match_wildcard and not (sk2_ipv6only and mapped1):
        return True
    if any1 and match_wildcard and not (sk1_ipv6only and mapped2):
        return True
    return sk2_rcv_saddr6 is not None and sk1_rcv_saddr6 == sk2_rcv_saddr6


@kernel("net/ipv4/inet_connection_sock.c", "inet_rcv_saddr_equal")
def inet_rcv_saddr_equal(
    sk: TcpSock | TimewaitSock, sk2: TcpSock | TimewaitSock, match_wildcard: bool = True
) -> bool:
    """Do two sockets' bound addresses overlap (either family, v6-only aware)?

    Kernel: net/ipv4/inet_connection_sock.c, inet_rcv_saddr_equal().
    """
    v4, v6, only = sk_rcv_saddr_pair(sk)
    v4b, v6b, onlyb = sk_rcv_saddr_pair(sk2)
    if v6 is not None:
        return ipv6_rcv_saddr_equal(v6, v6b, v4, v4b, only, onlyb, match_wildcard)
    return ipv4_rcv_saddr_equal(v4, v4b, onlyb, match_wildcard)


class InetHashinfo:
    """TCP's socket tables (kernel: ``struct inet_hashinfo``, ``tcp_hashinfo``)."""

    def __init__(self, tcp: Tcp) -> None:
        self.tcp = tcp
        self.ehash: dict[Key, SockCommon] = {}
        self.listeners: dict[int, list[TcpSock]] = {}
        self.bhash: dict[int, list[TcpSock | TimewaitSock]] = {}  # the port's owners
        self._next_port = 0

    # -- established ----------------------------------------------------------------------
    @kernel("net/ipv4/inet_hashtables.c", "__inet_lookup_established")
    def lookup_established(
        self, family: int, saddr: int, sport: int, daddr: int, dport: int
    ) -> SockCommon | None:
        """The connection a segment from (saddr, sport) to (daddr, dport) belongs to.

        Kernel: net/ipv4/inet_hashtables.c, __inet_lookup_established().
        """
        return self.ehash.get((family, daddr, dport, saddr, sport))

    # -- listeners --------------------------------------------------------------------------
    @kernel("inet_hash")
    def listen_add(self, sk: TcpSock) -> None:
        """Kernel: inet_hash() for a listener (__inet_hash)."""
        self.listeners.setdefault(sk.inet_num, []).append(sk)

    def listen_del(self, sk: TcpSock) -> None:
        lst = self.listeners.get(sk.inet_num)
        if lst and sk in lst:
            lst.remove(sk)
            if not lst:
                del self.listeners[sk.inet_num]

    @kernel("__inet_lookup_listener", "compute_score")
    def lookup_listener(self, family: int, daddr: int, dport: int, dif: int) -> TcpSock | None:
        """The listener for a SYN to (daddr, dport) arriving on device *dif*.

        An exact local address wins over a wildcard; a socket bound to the
        device scores over an unbound one. An IPv4 SYN may also find an
        AF_INET6 listener that is not v6-only, bound to ``::`` or to
        ``::ffff:<daddr>``; an AF_INET one scores higher. Kernel:
        __inet_lookup_listener() / compute_score().
        """
        lst = self.listeners.get(dport)
        if not lst:
            return None
        for want in (daddr, 0):
            best: TcpSock | None = None
            best_score = -1
            want6 = (V4MAPPED_PREFIX | want) if want else 0
            for sk in lst:
                if sk.family == family:
                    if sk.inet_rcv_saddr != want:
                        continue
                    score = 1 if family == AF_INET else 0
                elif family == AF_INET and not sk.ipv6only and sk.inet_rcv_saddr == want6:
                    score = 0  # a dual-stack AF_INET6 listener
                else:
                    continue
                bound = sk.sk_bound_dev_if
                if bound and bound != dif:
                    continue
                score += 2 if bound else 1
                if score > best_score:
                    best, best_score = sk, score
            if best is not None:
                return best
        return None

    # -- binds ------------------------------------------------------------------------------
    @kernel("net/ipv4/inet_connection_sock.c", "inet_csk_bind_conflict")
    def _conflict(self, sk: TcpSock, port: int, relax: bool, reuseport_ok: bool) -> bool:
        """Would binding *sk* to *port* clash with a socket that holds it?

        Two sockets clash when their bound devices and local addresses overlap
        (``inet_rcv_saddr_equal``: a wildcard overlaps everything of its
        family, and ``0.0.0.0`` and ``::`` overlap unless the IPv6 socket is
        v6-only), unless both set SO_REUSEADDR and the holder is not listening
        (explicit binds only: *relax*), or both set SO_REUSEPORT.

        Kernel: net/ipv4/inet_connection_sock.c, inet_csk_bind_conflict().
        """
        dev = sk.sk_bound_dev_if
        for sk2 in self.bhash.get(port, ()):
            if sk2 is sk:
                continue
            if isinstance(sk2, TimewaitSock):
                dev2, reuse2, reuseport2 = sk2.bound_dev_if, sk2.reuse, sk2.reuseport
            else:
                dev2, reuse2, reuseport2 = sk2.sk_bound_dev_if, sk2.sk_reuse, sk2.sk_reuseport
            if dev and dev2 and dev != dev2:
                continue
            equal = inet_rcv_saddr_equal(sk, sk2)
            if sk.sk_reuse and reuse2 and sk2.state != TCP_LISTEN:
                if not relax and equal:
                    return True
            elif not reuseport_ok or not sk.sk_reuseport or not reuseport2:
                if equal:
                    return True
        return False

    @kernel("net/ipv4/inet_connection_sock.c", "inet_csk_get_port", "inet_csk_find_open_port")
    def inet_csk_get_port(self, sk: TcpSock, port: int) -> None:
        """Bind *sk* to *port* (0: pick one), or raise EADDRINUSE.

        Kernel: net/ipv4/inet_connection_sock.c, inet_csk_get_port() /
        inet_csk_find_open_port().
        """
        if port:
            if self._conflict(sk, port, True, True):
                raise sock_oserror(EADDRINUSE)
        else:
            low, high = self.tcp.local_port_range()
            remaining = high - low + 1
            rng = self.tcp.net.rng
            offset = rng.randrange(remaining)
            # bind() prefers odd ports, leaving even ones to connect() (5.x+)
            start = (low + offset) | 1
            for i in range(remaining):
                cand = low + ((start - low + 2 * i) % remaining)
                if cand not in self.bhash or not self._conflict(sk, cand, False, False):
                    port = cand
                    break
            else:
                raise sock_oserror(EADDRINUSE)
        self.inet_bind_hash(sk, port)

    @kernel("inet_bind_hash")
    def inet_bind_hash(self, sk: TcpSock | TimewaitSock, port: int) -> None:
        """Kernel: inet_bind_hash()."""
        if isinstance(sk, TcpSock):
            sk.inet_num = port
            sk.inet_sport = port
            sk.bind_port = port
        self.bhash.setdefault(port, []).append(sk)

    @kernel("inet_put_port")
    def inet_put_port(self, sk: TcpSock | TimewaitSock, port: int) -> None:
        """Release the bind bucket entry. Kernel: inet_put_port()."""
        lst = self.bhash.get(port)
        if lst and sk in lst:
            lst.remove(sk)
            if not lst:
                del self.bhash[port]

    @kernel("net/ipv4/inet_hashtables.c", "__inet_hash_connect", "__inet_check_established")
    def inet_hash_connect(self, sk: TcpSock) -> None:
        """Give a connecting socket a local port that makes its 4-tuple unique.

        TIME_WAIT connections to the same peer may be taken over when their
        timestamps make it safe (``tcp_tw_reuse``).

        Kernel: net/ipv4/inet_hashtables.c, __inet_hash_connect() / __inet_check_established().
        """
        from netstack.tcp.minisocks import tcp_twsk_unique

        family = sk.af_ops.family  # the family on the wire (AF_INET for ipv6_mapped)
        laddr = sk.inet_saddr
        raddr = sk.inet_daddr
        rport = sk.inet_dport
        if sk.inet_num:
            key = (family, laddr, sk.inet_num, raddr, rport)
            other = self.ehash.get(key)
            if other is not None:
                if isinstance(other, TimewaitSock) and tcp_twsk_unique(sk, other):
                    from netstack.tcp.minisocks import inet_twsk_kill

                    inet_twsk_kill(other)
                else:
                    raise sock_oserror(EADDRNOTAVAIL)
            self.ehash[key] = sk
            sk.ehash_key = key
            return
        low, high = self.tcp.local_port_range()
        remaining = high - low + 1
        offset = (self.tcp.net.rng.randrange(remaining) + self._next_port) & ~1
        self._next_port += 2
        for parity in (0, 1):
            for i in range(0, remaining, 2):
                port = low + ((offset + i + parity) % remaining)
                users = self.bhash.get(port)
                if users and any(
                    getattr(u, "state", 0) != TCP_TIME_WAIT
                    and not getattr(u, "hash_connect", False)
                    for u in users
                ):
                    continue  # bound explicitly by someone: not for connect()
                key = (family, laddr, port, raddr, rport)
                other = self.ehash.get(key)
                if other is not None:
                    if isinstance(other, TimewaitSock) and tcp_twsk_unique(sk, other):
                        from netstack.tcp.minisocks import inet_twsk_kill

                        inet_twsk_kill(other)
                    else:
                        continue
                sk.hash_connect = True
                self.inet_bind_hash(sk, port)
                self.ehash[key] = sk
                sk.ehash_key = key
                return
        raise sock_oserror(EADDRNOTAVAIL)

    def sockets(self) -> list[SockCommon]:
        """Every socket in the tables (listeners, connections, requests, TIME_WAIT)."""
        out: list[SockCommon] = [sk for lst in self.listeners.values() for sk in lst]
        out.extend(self.ehash.values())
        return out
