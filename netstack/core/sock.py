"""``struct sock`` for datagram protocols: buffers, accounting, errors, wake-ups.

Theory of operation: a protocol socket (UDP, ping, raw — later TCP) keeps its
receive queue here and charges each queued skb's ``truesize`` to
``sk_rmem_alloc`` against ``sk_rcvbuf``; sends charge ``sk_wmem_alloc``
against ``sk_sndbuf`` until the skb is freed or orphaned (its destructor is
``sock_wfree``). The user-facing socket (``netstack.socket``) awaits on
:meth:`Sock.wait_readable` / :meth:`Sock.wait_writable`; the data path wakes it
with :meth:`sk_data_ready` / :meth:`sk_write_space` from synchronous code.
``sk_err`` holds a pending error that the next call reports (``sock_error``),
and ``error_queue`` the ``IP_RECVERR`` reports read with ``MSG_ERRQUEUE``.

Kernel: include/net/sock.h, net/core/sock.c, include/net/inet_sock.h.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Any, Final

import trio

from netstack.core.dst import skb_dst_force
from netstack.core.skbuff import TRUESIZE_OF_BUFLEN, SkBuff
from netstack.cpu.timed import ThreadBlocked
from netstack.sites import TIMED, kernel, spend

if TYPE_CHECKING:
    import random

    from netstack.core.net import Net

__all__ = [
    "SOCK_MIN_RCVBUF",
    "SOCK_MIN_SNDBUF",
    "Sock",
    "SockWouldBlock",
    "net_tx_rndhash",
    "sk_rethink_txhash",
    "sk_set_txhash",
    "sock_oserror",
    "sock_wfree",
]

SOCK_MIN_SNDBUF: Final = 2 * (2048 + 576)
SOCK_MIN_RCVBUF: Final = 2048 + 576

# sk_state values used by datagram sockets (they borrow TCP's names)
TCP_ESTABLISHED: Final = 1
TCP_CLOSE: Final = 7

# IP_PMTUDISC_*
IP_PMTUDISC_DONT: Final = 0
IP_PMTUDISC_WANT: Final = 1
IP_PMTUDISC_DO: Final = 2
IP_PMTUDISC_PROBE: Final = 3
IP_PMTUDISC_INTERFACE: Final = 4
IP_PMTUDISC_OMIT: Final = 5


class SockWouldBlock(ThreadBlocked):
    """Raised by a synchronous socket operation that would block.

    The Trio-facing socket waits (readable or writable) and retries;
    non-blocking callers turn it into EAGAIN; a timed-mode thread sleeps.
    """

    def __init__(self, write: bool) -> None:
        super().__init__("would block")
        self.write = write


def sock_oserror(code: int) -> OSError:
    """``OSError(code)`` with the C library's message, as sockets raise it."""
    import os

    return OSError(code, os.strerror(code))


class Sock:
    """The protocol side of a socket (kernel: ``struct sock`` + ``struct inet_sock``).

    Protocols override the operations they support; the defaults fail with
    the errno the kernel's ``sock_no_*`` helpers give.

    Slotted: a socket has 46 fields, past CPython's 30-key limit for shared
    instance dictionaries, so a dictionary was 1.5 KB a socket (each host's
    ``ping`` makes one). A subclass that declares no ``__slots__`` keeps a
    ``__dict__`` for its own fields and anything set on it later.
    """

    __slots__ = (
        "_readers",
        "_readers_parked",
        "_writers",
        "_writers_parked",
        "dead",
        "dst_cache",
        "dst_pending_confirm",
        "error_queue",
        "family",
        "freebind",
        "hdrincl",
        "inet_daddr",
        "inet_dport",
        "inet_id",
        "inet_num",
        "inet_rcv_saddr",
        "inet_saddr",
        "inet_sport",
        "mc_list",
        "mc_ttl",
        "net",
        "no_check_tx",
        "pmtudisc",
        "protocol",
        "receive_queue",
        "recverr",
        "recvttl",
        "sk_bound_dev_if",
        "sk_broadcast",
        "sk_drops",
        "sk_err",
        "sk_err_soft",
        "sk_mark",
        "sk_priority",
        "sk_rcvbuf",
        "sk_reuse",
        "sk_reuseport",
        "sk_rmem_alloc",
        "sk_shutdown",
        "sk_sndbuf",
        "sk_userlocks",
        "sk_wmem_alloc",
        "state",
        "tos",
        "type",
        "uc_ttl",
    )

    def __init__(self, net: Net, family: int, sock_type: int, protocol: int) -> None:
        self.net = net
        self.family = family
        self.type = sock_type
        self.protocol = protocol
        self.state = TCP_CLOSE
        self.sk_rcvbuf = net.rmem_default
        self.sk_sndbuf = net.wmem_default
        self.sk_rmem_alloc = 0
        self.sk_wmem_alloc = 0
        self.sk_drops = 0
        self.sk_err = 0
        self.sk_err_soft = 0
        self.sk_priority = 0
        self.sk_mark = 0
        self.sk_bound_dev_if = 0
        self.sk_reuse = False
        self.sk_reuseport = False
        self.sk_broadcast = False
        self.sk_userlocks = 0
        self.sk_shutdown = 0
        # sk_no_check_tx: SO_NO_CHECK and UDP_NO_CHECK6_TX set it (neither is implemented)
        self.no_check_tx = False
        self.dead = False
        self.receive_queue: collections.deque[SkBuff] = collections.deque()
        self.error_queue: list[Any] = []  # rarely used: a list, not a 600-byte deque
        # inet_sock
        self.inet_saddr = 0  # source address for sends
        self.inet_rcv_saddr = 0  # bound address
        self.inet_sport = 0
        self.inet_num = 0  # local port (host order)
        self.inet_daddr = 0
        self.inet_dport = 0
        self.inet_id = 0
        self.uc_ttl = -1  # -1: use the route's hop limit
        self.mc_ttl = 1
        self.mc_list: list[Any] = []  # inet->mc_list: IP_ADD_MEMBERSHIP (netstack.ipv4.igmp)
        self.tos = 0
        # inet_create() / inet6_create() (an AF_INET6 socket's IPv4 part, for v4-mapped
        # peers): DONT for every protocol when net.ipv4.ip_no_pmtu_disc is set
        ipv4 = net.ipv4
        self.pmtudisc = (
            IP_PMTUDISC_DONT if ipv4 is not None and ipv4.ip_no_pmtu_disc else IP_PMTUDISC_WANT
        )
        self.recverr = False
        self.recvttl = False
        self.hdrincl = False
        self.freebind = False
        self.dst_cache: Any = None  # sk->sk_dst_cache (connected sockets)
        self.dst_pending_confirm = False
        # the tasks waiting (the socket's wait queue, sk_sleep()), in arrival order;
        # made by the first wait: most sockets never wait to write, and a
        # sender-only one never to read
        self._readers: list[trio.lowlevel.Task] | None = None
        self._writers: list[trio.lowlevel.Task] | None = None
        # "may a task be waiting?": set by a wait, cleared by the wake-up that
        # wakes all (a cancelled wait leaves it set)
        self._readers_parked = False
        self._writers_parked = False

    # -- operations (struct proto / proto_ops) --------------------------------------
    def bind(self, addr: int, port: int) -> None:
        raise sock_oserror(95)  # EOPNOTSUPP

    def connect(self, addr: int, port: int) -> None:
        raise sock_oserror(95)

    def disconnect(self) -> None:
        raise sock_oserror(95)

    def sendmsg(
        self, data: bytes | bytearray | memoryview, dest: tuple[int, int] | None, flags: int
    ) -> int:
        raise sock_oserror(95)

    def recvmsg(
        self, bufsize: int, flags: int
    ) -> tuple[bytes, tuple[int, int], int, list[tuple[int, int, bytes]]]:
        """Receive one message: ``(data, (addr, port), msg_flags, ancdata)``."""
        raise sock_oserror(95)

    def recvmsg_or_none(
        self, bufsize: int, flags: int
    ) -> tuple[bytes, tuple[int, int], int, list[tuple[int, int, bytes]]] | None:
        """:meth:`recvmsg` for a blocking caller: ``None`` where it would raise
        :class:`SockWouldBlock` (where the kernel's receive sleeps: ``sk_wait_data``,
        ``__skb_wait_for_more_packets``). The Trio socket's ``recv`` waits on it
        without an exception raised and caught per empty read; protocols on the
        hot path override it with a path that raises nothing."""
        try:
            return self.recvmsg(bufsize, flags)
        except SockWouldBlock:
            return None

    def getsockname(self) -> tuple[int, int]:
        return (self.inet_rcv_saddr, self.inet_num)

    @kernel("inet_shutdown")
    def shutdown(self, how: int) -> None:
        """``shutdown(2)`` for datagram sockets: only marks the socket. Kernel: inet_shutdown()."""
        self.sk_shutdown |= how + 1
        self.sk_data_ready()

    def getpeername(self) -> tuple[int, int]:
        if self.state != TCP_ESTABLISHED:
            raise sock_oserror(107)  # ENOTCONN
        return (self.inet_daddr, self.inet_dport)

    def close(self) -> None:
        self.dead = True
        ipv4 = self.net.ipv4
        if self.mc_list and ipv4 is not None:
            ipv4.ip_mc_drop_socket(self)  # inet_release() → ip_mc_drop_socket()
        while self.receive_queue:
            from netstack.core.skbuff import consume_skb

            consume_skb(self.receive_queue.popleft())
        self.sk_rmem_alloc = 0
        self.error_queue.clear()
        if self.dst_cache is not None:
            self.dst_cache.release()
            self.dst_cache = None
        self.sk_error_report()

    def readable(self) -> bool:
        """Would a receive return now (data, a pending error or shutdown)?"""
        return bool(self.receive_queue or self.sk_err or self.sk_shutdown & 1)

    def writable(self) -> bool:
        return self.sock_writeable() or bool(self.sk_err)

    @kernel("ip_icmp_error", "sock_queue_err_skb")
    def queue_error(self, data: bytes, ee: bytes, addr: tuple[int, int], err: int) -> None:
        """Queue an ``IP_RECVERR`` report. Kernel: ip_icmp_error() / sock_queue_err_skb()."""
        self.error_queue.append((data, [(SOL_IP, IP_RECVERR, ee)], addr, err))

    @kernel("ip_cmsg_recv")
    def cmsgs(self, skb: SkBuff) -> list[tuple[int, int, bytes]]:
        """Ancillary data for a received skb (IP_RECVTTL). Kernel: ip_cmsg_recv()."""
        if self.recvttl and skb.network_header >= 0:
            return [(SOL_IP, IP_TTL, skb.buf[skb.network_header + 8].to_bytes(4, "little"))]
        return []

    @kernel("ip_recv_error")
    def recv_errqueue(
        self, bufsize: int
    ) -> tuple[bytes, list[tuple[int, int, bytes]], int, tuple[int, ...]]:
        """Read one ``IP_RECVERR`` report. Kernel: ip_recv_error().

        The address is ``(addr, port)``, or IPv6's four-tuple for the reports
        an IPv6 socket queues (``queue_error6``; it reads them through here).
        """
        if not self.error_queue:
            raise sock_oserror(11)  # EAGAIN
        data, anc, addr, _ = self.error_queue.pop(0)
        # sock_dequeue_err_skb(): sk_err becomes the next report's errno, or 0
        self.sk_err = self.error_queue[0][3] if self.error_queue else 0
        flags = MSG_ERRQUEUE
        if len(data) > bufsize:
            data = data[:bufsize]
            flags |= MSG_TRUNC
        return bytes(data), anc, flags, addr

    def setsockopt(self, level: int, optname: int, value: int | bytes) -> None:
        """Generic options (kernel: sk_setsockopt / do_ip_setsockopt)."""
        if level == SOL_SOCKET:
            self._sol_socket_set(optname, value)
        elif level == IPPROTO_IP:
            self._ip_set(optname, value)
        else:
            raise sock_oserror(92)  # ENOPROTOOPT

    def getsockopt(self, level: int, optname: int) -> int | bytes:
        if level == SOL_SOCKET:
            return self._sol_socket_get(optname)
        if level == IPPROTO_IP:
            return self._ip_get(optname)
        raise sock_oserror(92)

    def _int(self, value: int | bytes) -> int:
        if isinstance(value, int):
            return value
        if len(value) >= 4:
            return int.from_bytes(value[:4], "little", signed=True)
        raise sock_oserror(22)

    def _sol_socket_set(self, optname: int, value: int | bytes) -> None:
        net = self.net
        if optname == SO_BINDTODEVICE:
            name = value.rstrip(b"\0").decode() if isinstance(value, bytes) else str(value)
            if not name:
                self.sk_bound_dev_if = 0
                return
            dev = net.dev_get_by_name(name)
            if dev is None:
                raise sock_oserror(19)  # ENODEV
            self.sk_bound_dev_if = dev.ifindex
            return
        val = self._int(value)
        if optname == SO_RCVBUF:
            val = min(max(val, 0), net.rmem_max)
            self.sk_userlocks |= SOCK_RCVBUF_LOCK
            self.sk_rcvbuf = max(val * 2, SOCK_MIN_RCVBUF)
        elif optname == SO_SNDBUF:
            val = min(max(val, 0), net.wmem_max)
            self.sk_userlocks |= SOCK_SNDBUF_LOCK
            self.sk_sndbuf = max(val * 2, SOCK_MIN_SNDBUF)
            self.sk_write_space()
        elif optname == SO_BROADCAST:
            self.sk_broadcast = bool(val)
        elif optname == SO_REUSEADDR:
            self.sk_reuse = bool(val)
        elif optname == SO_REUSEPORT:
            self.sk_reuseport = bool(val)
        elif optname == SO_PRIORITY:
            self.sk_priority = val & 0xFFFFFFFF  # any value: the emulated user is root
        elif optname == SO_MARK:
            self.sk_mark = val & 0xFFFFFFFF
        elif optname in (SO_DEBUG, SO_KEEPALIVE, SO_DONTROUTE):
            pass
        else:
            raise sock_oserror(92)

    def _sol_socket_get(self, optname: int) -> int:
        if optname == SO_RCVBUF:
            return self.sk_rcvbuf
        if optname == SO_SNDBUF:
            return self.sk_sndbuf
        if optname == SO_ERROR:
            return self.sock_error()
        if optname == SO_TYPE:
            return self.type
        if optname == SO_PROTOCOL:
            return self.protocol
        if optname == SO_DOMAIN:
            return self.family
        if optname == SO_BROADCAST:
            return int(self.sk_broadcast)
        if optname == SO_REUSEADDR:
            return int(self.sk_reuse)
        if optname == SO_REUSEPORT:
            return int(self.sk_reuseport)
        if optname == SO_PRIORITY:
            return self.sk_priority
        if optname == SO_MARK:
            return self.sk_mark
        if optname == SO_BINDTODEVICE:
            return self.sk_bound_dev_if
        raise sock_oserror(92)

    def _ip_set(self, optname: int, value: int | bytes) -> None:
        if optname in (IP_ADD_MEMBERSHIP, IP_DROP_MEMBERSHIP):
            if isinstance(value, int):
                raise sock_oserror(22)  # optlen < sizeof(struct ip_mreq)
            ipv4 = self.net.ipv4
            if ipv4 is None:
                raise sock_oserror(19)  # ENODEV: no IPv4 device to join on
            err = ipv4.ip_mc_setsockopt(self, optname, bytes(value))
            if err:
                raise sock_oserror(-err)
            return
        val = self._int(value)
        if optname == IP_TTL:
            if val == -1:
                self.uc_ttl = -1
            elif 1 <= val <= 255:
                self.uc_ttl = val
            else:
                raise sock_oserror(22)
        elif optname == IP_TOS:
            val &= 0xFF
            self.tos = val
            prio = (0, 1, 0, 0, 2, 2, 2, 2, 6, 6, 6, 6, 4, 4, 4, 4)[(val & 0x1E) >> 1]
            self.sk_priority = prio
        elif optname == IP_MTU_DISCOVER:
            if not 0 <= val <= IP_PMTUDISC_OMIT:
                raise sock_oserror(22)
            self.pmtudisc = val
        elif optname == IP_RECVERR:
            self.recverr = bool(val)
            if not val:
                self.error_queue.clear()
        elif optname == IP_FREEBIND:
            self.freebind = bool(val)
        elif optname == IP_RECVTTL:
            self.recvttl = bool(val)
        elif optname == IP_HDRINCL:
            if self.type != SOCK_RAW:
                raise sock_oserror(92)
            self.hdrincl = bool(val)
        elif optname == IP_MULTICAST_TTL:
            if not -1 <= val <= 255:
                raise sock_oserror(22)
            self.mc_ttl = 1 if val == -1 else val
        else:
            raise sock_oserror(92)

    def _ip_get(self, optname: int) -> int:
        if optname == IP_TTL:
            return self.uc_ttl if self.uc_ttl >= 0 else self.default_ttl()
        if optname == IP_TOS:
            return self.tos
        if optname == IP_MTU_DISCOVER:
            return self.pmtudisc
        if optname == IP_RECVERR:
            return int(self.recverr)
        if optname == IP_FREEBIND:
            return int(self.freebind)
        if optname == IP_RECVTTL:
            return int(self.recvttl)
        if optname == IP_HDRINCL:
            return int(self.hdrincl)
        if optname == IP_MULTICAST_TTL:
            return self.mc_ttl
        if optname == IP_MTU:
            dst = self.dst_cache
            if dst is None or self.state != TCP_ESTABLISHED:
                raise sock_oserror(107)  # ENOTCONN
            return int(dst.mtu())
        raise sock_oserror(92)

    def default_ttl(self) -> int:
        return 64

    # -- wake-ups -----------------------------------------------------------------
    @kernel("sock_def_readable")
    def sk_data_ready(self) -> None:
        """Data or an error arrived. Kernel: sock_def_readable()."""
        if TIMED:
            spend("sock_def_readable")
        if self._readers_parked:
            self._readers_parked = False
            waiters = self._readers
            assert waiters is not None
            _wake_all(waiters)

    @kernel("sock_def_write_space")
    def sk_write_space(self) -> None:
        """Send buffer space was freed. Kernel: sock_def_write_space()."""
        if self._writers_parked:
            self._writers_parked = False
            waiters = self._writers
            assert waiters is not None
            _wake_all(waiters)

    @kernel("sk_error_report")
    def sk_error_report(self) -> None:
        """An error is pending: wake both sides. Kernel: sk_error_report()."""
        self.sk_data_ready()
        self.sk_write_space()

    async def wait_readable(self) -> None:
        """Park until data, an error or shutdown arrives."""
        waiters = self._readers
        if waiters is None:
            waiters = self._readers = []
        self._readers_parked = True
        await _wait(waiters)

    async def wait_writable(self) -> None:
        """Park until send buffer space is freed."""
        waiters = self._writers
        if waiters is None:
            waiters = self._writers = []
        self._writers_parked = True
        await _wait(waiters)

    # -- errors -------------------------------------------------------------------------
    @kernel("sock_error")
    def sock_error(self) -> int:
        """Take the pending error (0 if none). Kernel: sock_error()."""
        err = self.sk_err
        if err:
            self.sk_err = 0
        return err

    # -- memory accounting ------------------------------------------------------------------
    @kernel("skb_set_owner_w")
    def sock_wmem_charge(self, skb: SkBuff) -> None:
        """Charge *skb* to the send buffer until it is freed. Kernel: skb_set_owner_w()."""
        skb.sk = self
        size = skb.truesize
        skb.wmem_charge = size
        self.sk_wmem_alloc += size
        skb.destructor = sock_wfree

    @kernel("sock_writeable")
    def sock_writeable(self) -> bool:
        """Room to send? Kernel: sock_writeable() (wmem below sndbuf)."""
        return self.sk_wmem_alloc < self.sk_sndbuf

    @kernel("__udp_enqueue_schedule_skb", "sock_queue_rcv_skb")
    def sock_queue_rcv_skb(self, skb: SkBuff) -> bool:
        """Queue on the receive queue if rmem allows; False (not queued) if full.

        Kernel: __udp_enqueue_schedule_skb() / sock_queue_rcv_skb(): drop only
        when the memory already charged exceeds ``sk_rcvbuf``. IPv4's ``udp_rcv``
        has this written out for a plain ``UdpSock`` (keep the two in step).
        """
        if TIMED:
            spend("__udp_enqueue_schedule_skb")
        if self.sk_rmem_alloc > self.sk_rcvbuf:
            self.sk_drops += 1
            return False
        # skb->truesize: an explicit one, else the memo of its buffer's length, else
        # the property (whose frame is ~700 instructions, once a received datagram)
        size = skb._truesize or TRUESIZE_OF_BUFLEN.get(len(skb.buf)) or skb.truesize
        self.sk_rmem_alloc += size
        skb.rmem_charge = size
        skb.sk = self
        if skb.dst_noref:  # __sock_queue_rcv_skb(): skb_dst_force() (UDP dropped it)
            skb_dst_force(skb)
        self.receive_queue.append(skb)
        # sk->sk_data_ready(), sock_def_readable(), entered when a reader may be
        # parked (its skwq_has_sleeper() test, hoisted: a frame less a datagram)
        # or to be charged in timed mode
        if TIMED or self._readers_parked:
            self.sk_data_ready()
        return True

    @kernel("__skb_recv_datagram")
    def skb_dequeue(self) -> SkBuff | None:
        """Take the next received skb and uncharge it. Kernel: __skb_recv_datagram()."""
        if TIMED:
            spend("__skb_recv_datagram")
        q = self.receive_queue
        if not q:
            return None
        skb = q.popleft()
        self.sk_rmem_alloc -= skb.rmem_charge
        return skb


@kernel("include/net/sock.h", "net_tx_rndhash")
def net_tx_rndhash(rng: random.Random) -> int:
    """A random transmit hash, never 0 (0 means "none").

    Kernel: include/net/sock.h, net_tx_rndhash().
    """
    return rng.getrandbits(32) or 1


@kernel("include/net/sock.h", "sk_set_txhash")
def sk_set_txhash(sk: Any) -> None:
    """Draw the socket's transmit hash (its skbs' ``hash``, its IPv6 flow label).

    Kernel: include/net/sock.h, sk_set_txhash().
    """
    sk.sk_txhash = net_tx_rndhash(sk.net.rng)


@kernel("include/net/sock.h", "sk_rethink_txhash")
def sk_rethink_txhash(sk: Any) -> bool:
    """Draw a new transmit hash (a new path under ECMP, a new flow label).

    ``SO_TXREHASH`` is not modelled: the ``net.core.txrehash`` default, on.

    Kernel: include/net/sock.h, sk_rethink_txhash().
    """
    if sk.sk_txhash:
        sk_set_txhash(sk)
        return True
    return False


# -- the wait queues: what trio.lowlevel.ParkingLot's park() and unpark_all() do, on a
# list (FIFO wake-ups, a cancelled waiter leaves the queue), without the lot's
# per-call bookkeeping (an OrderedDict, islice, the custom_sleep_data back-pointer)
async def _wait(waiters: list[trio.lowlevel.Task]) -> None:
    """Park the current task in *waiters* until :func:`_wake_all` (or cancellation)."""
    task = trio.lowlevel.current_task()
    waiters.append(task)

    def abort(_: object) -> trio.lowlevel.Abort:
        waiters.remove(task)
        return trio.lowlevel.Abort.SUCCEEDED

    await trio.lowlevel.wait_task_rescheduled(abort)


def _wake_all(waiters: list[trio.lowlevel.Task]) -> None:
    """Reschedule every task in *waiters*, in the order they came (autoremove_wake_function)."""
    tasks = waiters[:]
    waiters.clear()
    for task in tasks:
        _reschedule(task)


_reschedule = trio.lowlevel.reschedule


@kernel("sock_wfree")
def sock_wfree(skb: SkBuff) -> None:
    """Release the send-buffer charge.

    ``ip_rcv`` has this written out for its ``skb_orphan`` (keep the two in step).

    Kernel: sock_wfree().
    """
    if TIMED:
        spend("sock_wfree")
    sk = skb.sk
    if isinstance(sk, Sock):
        sk.sk_wmem_alloc -= skb.wmem_charge
        # sk->sk_write_space(), sock_def_write_space(), entered when a writer may be
        # parked (its skwq_has_sleeper() test, hoisted: a frame less a datagram)
        if sk.sk_wmem_alloc < sk.sk_sndbuf and sk._writers_parked:
            sk.sk_write_space()


# ---------------------------------------------------------------------------
# The socket API's numbers (include/linux/socket.h, include/uapi/asm-generic/socket.h,
# include/uapi/linux/in.h) — Linux values, whatever the host OS.
# ---------------------------------------------------------------------------

AF_UNSPEC: Final = 0
AF_INET: Final = 2
AF_INET6: Final = 10
SOCK_STREAM: Final = 1
SOCK_DGRAM: Final = 2
SOCK_RAW: Final = 3
SOCK_NONBLOCK: Final = 0o4000
SOCK_CLOEXEC: Final = 0o2000000

MSG_OOB: Final = 0x1
MSG_PEEK: Final = 0x2
MSG_DONTROUTE: Final = 0x4
MSG_CTRUNC: Final = 0x8
MSG_PROBE: Final = 0x10
MSG_TRUNC: Final = 0x20
MSG_DONTWAIT: Final = 0x40
MSG_EOR: Final = 0x80
MSG_WAITALL: Final = 0x100
MSG_CONFIRM: Final = 0x800
MSG_ERRQUEUE: Final = 0x2000
MSG_NOSIGNAL: Final = 0x4000
MSG_MORE: Final = 0x8000

SOL_SOCKET: Final = 1
SO_DEBUG: Final = 1
SO_REUSEADDR: Final = 2
SO_TYPE: Final = 3
SO_ERROR: Final = 4
SO_DONTROUTE: Final = 5
SO_BROADCAST: Final = 6
SO_SNDBUF: Final = 7
SO_RCVBUF: Final = 8
SO_KEEPALIVE: Final = 9
SO_PRIORITY: Final = 12
SO_REUSEPORT: Final = 15
SO_RCVTIMEO: Final = 20
SO_SNDTIMEO: Final = 21
SO_BINDTODEVICE: Final = 25
SO_MARK: Final = 36
SO_PROTOCOL: Final = 38
SO_DOMAIN: Final = 39

SOL_IP: Final = 0
IPPROTO_IP: Final = 0
IP_TOS: Final = 1
IP_TTL: Final = 2
IP_HDRINCL: Final = 3
IP_OPTIONS: Final = 4
IP_RECVERR: Final = 11
IP_RECVTTL: Final = 12
IP_MTU_DISCOVER: Final = 10
IP_MTU: Final = 14
IP_FREEBIND: Final = 15
IP_MULTICAST_TTL: Final = 33
IP_ADD_MEMBERSHIP: Final = 35
IP_DROP_MEMBERSHIP: Final = 36

SOCK_SNDBUF_LOCK: Final = 1
SOCK_RCVBUF_LOCK: Final = 2

SO_EE_ORIGIN_NONE: Final = 0
SO_EE_ORIGIN_LOCAL: Final = 1
SO_EE_ORIGIN_ICMP: Final = 2
