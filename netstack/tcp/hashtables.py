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

Kernel: net/ipv4/inet_hashtables.c, net/ipv4/inet_connection_sock.c
(inet_csk_get_port, inet_csk_bind_conflict).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from netstack.core.sock import sock_oserror

if TYPE_CHECKING:
    from netstack.tcp.proto import Tcp
    from netstack.tcp.sock import TcpSock

__all__ = ["InetHashinfo"]

EADDRINUSE: Final = 98
EADDRNOTAVAIL: Final = 99
TCP_LISTEN: Final = 10
TCP_TIME_WAIT: Final = 6

Key = tuple[int, int, int, int, int]


class InetHashinfo:
    """TCP's socket tables (kernel: ``struct inet_hashinfo``, ``tcp_hashinfo``)."""

    def __init__(self, tcp: Tcp) -> None:
        self.tcp = tcp
        self.ehash: dict[Key, Any] = {}
        self.listeners: dict[int, list[TcpSock]] = {}
        self.bhash: dict[int, list[Any]] = {}
        self._next_port = 0

    # -- established ----------------------------------------------------------------------
    def ehash_add(
        self, family: int, laddr: int, lport: int, raddr: int, rport: int, sk: Any
    ) -> bool:
        """Insert; False if the 4-tuple is taken. Kernel: inet_ehash_insert()."""
        key = (family, laddr, lport, raddr, rport)
        if key in self.ehash:
            return False
        self.ehash[key] = sk
        return True

    def ehash_del(
        self, family: int, laddr: int, lport: int, raddr: int, rport: int, sk: Any
    ) -> None:
        key = (family, laddr, lport, raddr, rport)
        if self.ehash.get(key) is sk:
            del self.ehash[key]

    def ehash_replace(
        self, family: int, laddr: int, lport: int, raddr: int, rport: int, sk: Any
    ) -> None:
        self.ehash[(family, laddr, lport, raddr, rport)] = sk

    def lookup_established(
        self, family: int, saddr: int, sport: int, daddr: int, dport: int
    ) -> Any:
        """The connection a segment from (saddr, sport) to (daddr, dport) belongs to.

        Kernel: net/ipv4/inet_hashtables.c, __inet_lookup_established().
        """
        return self.ehash.get((family, daddr, dport, saddr, sport))

    # -- listeners --------------------------------------------------------------------------
    def listen_add(self, sk: TcpSock) -> None:
        """Kernel: inet_hash() for a listener (__inet_hash)."""
        self.listeners.setdefault(sk.inet_num, []).append(sk)

    def listen_del(self, sk: TcpSock) -> None:
        lst = self.listeners.get(sk.inet_num)
        if lst and sk in lst:
            lst.remove(sk)
            if not lst:
                del self.listeners[sk.inet_num]

    def lookup_listener(self, family: int, daddr: int, dport: int, dif: int) -> TcpSock | None:
        """The listener for a SYN to (daddr, dport) arriving on device *dif*.

        An exact local address wins over a wildcard; a socket bound to the
        device scores over an unbound one. Kernel: __inet_lookup_listener() /
        compute_score().
        """
        lst = self.listeners.get(dport)
        if not lst:
            return None
        for want in (daddr, 0):
            best: TcpSock | None = None
            best_score = -1
            for sk in lst:
                if sk.family != family or sk.inet_rcv_saddr != want:
                    continue
                bound = sk.sk_bound_dev_if
                if bound and bound != dif:
                    continue
                score = 2 if bound else 1
                if score > best_score:
                    best, best_score = sk, score
            if best is not None:
                return best
        return None

    # -- binds ------------------------------------------------------------------------------
    def _conflict(self, sk: TcpSock, port: int, relax: bool, reuseport_ok: bool) -> bool:
        """Would binding *sk* to *port* clash with a socket that holds it?

        Two sockets clash when their bound devices and local addresses overlap
        (a wildcard overlaps everything), unless both set SO_REUSEADDR and the
        holder is not listening (explicit binds only: *relax*), or both set
        SO_REUSEPORT. Sockets of the other family never clash here (IPv6's
        dual-stack rules belong to its bind).

        Kernel: net/ipv4/inet_connection_sock.c, inet_csk_bind_conflict().
        """
        dev = sk.sk_bound_dev_if
        addr = sk.inet_rcv_saddr
        for sk2 in self.bhash.get(port, ()):
            if sk2 is sk or sk2.family != sk.family:
                continue
            tw = sk2.state == TCP_TIME_WAIT
            dev2 = sk2.bound_dev_if if tw else sk2.sk_bound_dev_if
            if dev and dev2 and dev != dev2:
                continue
            addr2 = sk2.rcv_saddr if tw else sk2.inet_rcv_saddr
            equal = not addr or not addr2 or addr == addr2
            reuse2 = sk2.reuse if tw else sk2.sk_reuse
            reuseport2 = sk2.reuseport if tw else sk2.sk_reuseport
            if sk.sk_reuse and reuse2 and sk2.state != TCP_LISTEN:
                if not relax and equal:
                    return True
            elif not reuseport_ok or not sk.sk_reuseport or not reuseport2:
                if equal:
                    return True
        return False

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

    def inet_bind_hash(self, sk: Any, port: int) -> None:
        """Kernel: inet_bind_hash()."""
        if hasattr(sk, "inet_num"):
            sk.inet_num = port
            sk.inet_sport = port
            sk.bind_port = port
        self.bhash.setdefault(port, []).append(sk)

    def inet_put_port(self, sk: Any, port: int) -> None:
        """Release the bind bucket entry. Kernel: inet_put_port()."""
        lst = self.bhash.get(port)
        if lst and sk in lst:
            lst.remove(sk)
            if not lst:
                del self.bhash[port]

    def inet_hash_connect(self, sk: TcpSock) -> None:
        """Give a connecting socket a local port that makes its 4-tuple unique.

        TIME_WAIT connections to the same peer may be taken over when their
        timestamps make it safe (``tcp_tw_reuse``).

        Kernel: net/ipv4/inet_hashtables.c, __inet_hash_connect() / __inet_check_established().
        """
        from netstack.tcp.minisocks import tcp_twsk_unique

        family = sk.family
        laddr = sk.inet_saddr
        raddr = sk.inet_daddr
        rport = sk.inet_dport
        if sk.inet_num:
            key = (family, laddr, sk.inet_num, raddr, rport)
            other = self.ehash.get(key)
            if other is not None:
                if other.state == TCP_TIME_WAIT and tcp_twsk_unique(sk, other):
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
                    if other.state == TCP_TIME_WAIT and tcp_twsk_unique(sk, other):
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

    def sockets(self) -> list[Any]:
        """Every socket in the tables (listeners, connections, requests, TIME_WAIT)."""
        out: list[Any] = [sk for lst in self.listeners.values() for sk in lst]
        out.extend(self.ehash.values())
        return out
