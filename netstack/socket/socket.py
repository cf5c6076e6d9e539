"""The Trio-facing socket object.

Theory of operation: a :class:`Socket` owns a protocol socket
(:class:`~netstack.core.sock.Sock`: UDP, ping…) of one host. Every operation
follows Trio's pattern for non-blocking sockets: check for cancellation, try
the synchronous operation, and on success take one cancel-shielded
checkpoint; if the operation would block, park until the stack signals
readiness and try again. Addresses cross this boundary as ``(str, int)``
tuples (AF_INET) or ``(str, int, flowinfo, scope_id)`` tuples (AF_INET6,
where a 2- or 3-tuple and a ``"fe80::1%eth0"`` zone are accepted, as
Python's socket module does) and are ``int`` inside.

Kernel: net/socket.c (the syscalls), net/ipv4/af_inet.c (inet_* ops).
"""

from __future__ import annotations

import errno
import os
import socket as _stdsocket
from collections.abc import Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Final

import trio

from netstack.core.sock import (
    AF_INET,
    AF_INET6,
    AF_UNSPEC,
    MSG_DONTWAIT,
    MSG_ERRQUEUE,
    SOCK_DGRAM,
    SOCK_STREAM,
    Sock,
    SockWouldBlock,
)
from netstack.ipv4.udp import UdpSock, udp_sendmsg
from netstack.ipv6.sock import Inet6Sock
from netstack.sites import kernel
from netstack.wire.ipv4 import INADDR_BROADCAST, aton, ntoa
from netstack.wire.ipv6 import aton as aton6
from netstack.wire.ipv6 import ntoa as ntoa6

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = ["Socket", "parse_inet6_addr", "parse_inet_addr"]

Address = tuple[Any, ...]  # (host, port) or (host, port, flowinfo, scope_id)


def parse_inet_addr(addr: Any, *, for_bind: bool = False) -> tuple[int, int]:
    """``("10.0.0.1", 80)`` → ``(0x0a000001, 80)``, as the socket API reads it."""
    if not isinstance(addr, tuple) or len(addr) != 2:
        raise TypeError("AF_INET address must be a pair (host, port)")
    host, port = addr
    if not isinstance(port, int) or isinstance(port, bool):
        raise TypeError(f"'{type(port).__name__}' object cannot be interpreted as an integer")
    if not 0 <= port <= 65535:
        raise OverflowError(
            "bind(): port must be 0-65535." if for_bind else "connect(): port must be 0-65535."
        )
    if not isinstance(host, str):
        raise TypeError(f"str, bytes or bytearray expected, not {type(host).__name__}")
    if host == "":
        return 0, port
    if host == "<broadcast>":
        return INADDR_BROADCAST, port
    try:
        return aton(host), port
    except ValueError:
        raise _stdsocket.gaierror(-2, "Name or service not known") from None


def parse_inet6_addr(
    net: Net | None, addr: Any, *, for_bind: bool = False
) -> tuple[int, int, int, int]:
    """``("2001:db8::1", 80)`` or ``("fe80::1%eth0", 80, 0, 0)`` → ints, as Python's
    socket module reads an AF_INET6 address (``getaddrinfo`` of a literal)."""
    if not isinstance(addr, tuple) or not 2 <= len(addr) <= 4:
        raise TypeError("AF_INET6 address must be a tuple (host, port[, flowinfo[, scopeid]])")
    host, port, *rest = addr
    flowinfo = rest[0] if rest else 0
    scope_id = rest[1] if len(rest) > 1 else 0
    for v in (port, flowinfo, scope_id):
        if not isinstance(v, int) or isinstance(v, bool):
            raise TypeError(f"'{type(v).__name__}' object cannot be interpreted as an integer")
    call = "bind()" if for_bind else "connect()"
    if not 0 <= port <= 65535:
        raise OverflowError(f"{call}: port must be 0-65535.")
    if not 0 <= flowinfo <= 0xFFFFF:
        raise OverflowError(f"{call}: flowinfo must be 0-1048575.")
    if not isinstance(host, str):
        raise TypeError(f"str, bytes or bytearray expected, not {type(host).__name__}")
    if host == "":
        return 0, port, flowinfo, scope_id
    text, _, zone = host.partition("%")
    try:
        value = aton6(text)
    except ValueError:
        try:
            aton(text)
        except ValueError:
            raise _stdsocket.gaierror(-2, "Name or service not known") from None
        raise _stdsocket.gaierror(-9, "Address family for hostname not supported") from None
    if zone:
        if zone.isdigit():
            scope_id = int(zone)
        else:
            dev = net.dev_get_by_name(zone) if net is not None else None
            if dev is None:
                raise _stdsocket.gaierror(-2, "Name or service not known")
            scope_id = dev.ifindex
    return value, port, flowinfo, scope_id


_UNSET: Final = object()  # Socket._recv_fn not made yet (None: the family has none)


class Socket:
    """A socket of an emulated host, with ``trio.socket``'s interface."""

    def __init__(self, net: Net, sk: Sock) -> None:
        self._net = net
        self._sk = sk
        self._closed = False
        self._v6 = sk.family == AF_INET6
        # send's and recv's protocol calls (_sendmsg, _recvmsg_or_none), made at their
        # first use: they depend on the protocol socket alone, which does not change
        self._send_fn: Any = None
        self._recv_fn: Any = _UNSET

    # -- addresses of this socket's family --------------------------------------------
    def _parse(self, address: Any, for_bind: bool = False) -> Any:
        if self._v6:
            return parse_inet6_addr(self._net, address, for_bind=for_bind)
        return parse_inet_addr(address, for_bind=for_bind)

    def _fmt(self, addr: tuple[int, ...]) -> Address:
        if self._v6:
            if len(addr) == 2:
                return ntoa6(addr[0]), addr[1], 0, 0
            return ntoa6(addr[0]), addr[1], addr[2], addr[3]
        return ntoa(addr[0]), addr[1]

    def _sendmsg(self, sk: Sock) -> Any:
        if type(sk) is UdpSock:
            # inet_sendmsg() → sk->sk_prot->sendmsg, i.e. udp_sendmsg() itself: bound
            # here, one Python frame (UdpSock.sendmsg's) less per datagram
            return partial(udp_sendmsg, sk.ipv4, sk)
        return sk.sendmsg6 if isinstance(sk, Inet6Sock) else sk.sendmsg

    def _recvmsg(self, sk: Sock) -> Any:
        return sk.recvmsg6 if isinstance(sk, Inet6Sock) else sk.recvmsg

    def _recvmsg_or_none(self, sk: Sock) -> Any:
        """The receive that returns ``None`` instead of raising SockWouldBlock, or
        ``None`` for the families without one (IPv6 datagrams: ``recvmsg6``)."""
        if type(sk) is UdpSock:
            return sk.udp_recvmsg  # udp_recvmsg() itself, as _sendmsg binds udp_sendmsg()
        if isinstance(sk, Inet6Sock):
            return None
        return sk.recvmsg_or_none

    # -- properties -----------------------------------------------------------------
    @property
    def family(self) -> int:
        return self._sk.family

    @property
    def type(self) -> int:
        return self._sk.type

    @property
    def proto(self) -> int:
        return self._sk.protocol

    @property
    def sock(self) -> Sock:
        """The protocol socket (kernel ``struct sock``), for inspection in tests."""
        return self._sk

    def fileno(self) -> int:
        return -1

    def _check(self) -> Sock:
        if self._closed:
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))
        return self._sk

    # -- sync operations ------------------------------------------------------------------
    def getsockname(self) -> Address:
        sk = self._check()
        if isinstance(sk, Inet6Sock):
            return self._fmt(sk.getsockname6())
        return self._fmt(sk.getsockname())

    def getpeername(self) -> Address:
        sk = self._check()
        if isinstance(sk, Inet6Sock):
            return self._fmt(sk.getpeername6())
        return self._fmt(sk.getpeername())

    def setsockopt(self, level: int, optname: int, value: int | bytes) -> None:
        self._check().setsockopt(level, optname, value)

    def getsockopt(self, level: int, optname: int, buflen: int | None = None) -> int | bytes:
        return self._check().getsockopt(level, optname)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._sk.close()

    def shutdown(self, how: int) -> None:
        sk = self._check()
        if how not in (0, 1, 2):
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
        sk.shutdown(how)

    @kernel("inet_listen")
    def listen(self, backlog: int = min(_stdsocket.SOMAXCONN, 128)) -> None:
        """``listen(2)`` (SOCK_STREAM). Kernel: inet_listen()."""
        sk = self._check()
        if sk.type != SOCK_STREAM:
            raise OSError(errno.EOPNOTSUPP, os.strerror(errno.EOPNOTSUPP))
        sk.listen(backlog)  # type: ignore[attr-defined]

    def is_readable(self) -> bool:
        return self._check().readable()

    def __enter__(self) -> Socket:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{self._sk.inet_num}"
        return f"<netstack.Socket {self._net.name} fam={self.family} type={self.type} {state}>"

    # -- the non-blocking helper (trio.socket._nonblocking_helper) -----------------------
    async def _nonblocking(self, write: bool, fn: Any, *args: Any, tried: bool = False) -> Any:
        """Call *fn* until it does not block. With *tried*, the caller has passed the
        cancel check and made the first call already (``send``, ``recv``): wait."""
        sk = self._sk
        if not tried:
            await trio.lowlevel.checkpoint_if_cancelled()
            sk = self._check()
            try:
                result = fn(*args)
            except SockWouldBlock:
                pass
            else:
                await trio.lowlevel.cancel_shielded_checkpoint()
                return result
        while True:
            if write:
                await sk.wait_writable()
            else:
                await sk.wait_readable()
            self._check()
            try:
                return fn(*args)
            except SockWouldBlock:
                continue

    async def _nonblocking_recv(self, sk: Sock, bufsize: int, flags: int, tried: Any = None) -> Any:
        """``_nonblocking`` for a receive: the same checkpoints and waits, but the
        protocol says "would block" with ``None`` (``recvmsg_or_none``), not an
        exception raised and caught per empty read (about half the reads of a
        bulk TCP receiver that keeps up find the queue empty). *tried* is the
        receive the caller has called once already, past the cancel check
        (``recv``): wait."""
        if tried is None:
            fn = self._recvmsg_or_none(sk)
            if fn is None:
                return await self._nonblocking(False, self._recvmsg(sk), bufsize, flags)
            await trio.lowlevel.checkpoint_if_cancelled()
            self._check()
            result = fn(bufsize, flags)
            if result is not None:
                await trio.lowlevel.cancel_shielded_checkpoint()
                return result
        else:
            fn = tried
        while True:
            await sk.wait_readable()
            self._check()
            result = fn(bufsize, flags)
            if result is not None:
                return result

    async def wait_writable(self) -> None:
        sk = self._check()
        if not sk.writable():
            await sk.wait_writable()
        else:
            await trio.lowlevel.checkpoint()

    async def wait_readable(self) -> None:
        sk = self._check()
        if not sk.readable():
            await sk.wait_readable()
        else:
            await trio.lowlevel.checkpoint()

    # -- async operations ---------------------------------------------------------------------
    async def bind(self, address: Address) -> None:
        await trio.lowlevel.checkpoint()
        parsed = self._parse(address, for_bind=True)
        sk = self._check()
        if isinstance(sk, Inet6Sock):
            addr, port, _flowinfo, scope_id = parsed
            sk.bind6(addr, port, scope_id)
        elif self._v6:  # TCP over IPv6: the zone binds the interface
            from netstack.ipv6.tcp_ipv6 import tcp_v6_set_scope

            addr, port, _flowinfo, scope_id = parsed
            tcp_v6_set_scope(sk, addr, scope_id)  # type: ignore[arg-type]
            sk.bind(addr, port)
        else:
            sk.bind(*parsed)

    async def connect(self, address: Address | tuple[()]) -> None:
        """``connect(2)``; for SOCK_STREAM it returns once the handshake completes
        (or raises its error: ECONNREFUSED, ETIMEDOUT …), as ``trio.socket`` does."""
        await trio.lowlevel.checkpoint()
        sk = self._check()
        if address == ():
            sk.disconnect()
            return
        parsed = self._parse(address)
        if isinstance(sk, Inet6Sock):
            sk.connect6(*parsed)
        elif self._v6:
            from netstack.ipv6.tcp_ipv6 import tcp_v6_set_scope

            addr, port, _flowinfo, scope_id = parsed
            tcp_v6_set_scope(sk, addr, scope_id)  # type: ignore[arg-type]
            sk.connect(addr, port)
        else:
            sk.connect(*parsed)
        if sk.type == SOCK_STREAM:
            from netstack.tcp.tcp import inet_stream_connect_result

            tsk: Any = sk
            while not inet_stream_connect_result(tsk):
                await sk.wait_writable()
                self._check()

    async def accept(self) -> tuple[Socket, Address]:
        """Wait for a connection; return a new Socket for it and the peer's address."""
        sk: Any = self._check()
        child = await self._nonblocking(False, sk.accept)
        peer = child.getpeername()
        sock = Socket(self._net, child)
        return sock, sock._fmt(peer)

    async def sendall(self, data: bytes | bytearray | memoryview, flags: int = 0) -> None:
        """Send everything (``send`` may take part of it, as on a stream socket)."""
        view = memoryview(data).cast("B")
        sent = 0
        while sent < len(view):
            sent += await self.send(view[sent:], flags)

    async def disconnect(self) -> None:
        """``connect(AF_UNSPEC)``: forget the peer."""
        await trio.lowlevel.checkpoint()
        self._check().disconnect()

    async def send(self, data: bytes | bytearray | memoryview, flags: int = 0) -> int:
        # _nonblocking's first try written out (a coroutine and two frames less a call),
        # with its checkpoints in the same places: the cancel check before the send,
        # the schedule point after it; a send that would block waits there
        if self._closed:
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))
        fn = self._send_fn
        if fn is None:
            fn = self._send_fn = self._sendmsg(self._sk)
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._closed:
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))
        try:
            result = fn(data, None, flags)
        except SockWouldBlock:
            return int(await self._nonblocking(True, fn, data, None, flags, tried=True))
        await trio.lowlevel.cancel_shielded_checkpoint()
        return int(result)

    async def sendto(self, data: bytes | bytearray | memoryview, *args: Any) -> int:
        """``sendto(data, address)`` or ``sendto(data, flags, address)``."""
        if len(args) == 1:
            flags, address = 0, args[0]
        elif len(args) == 2:
            flags, address = args
        else:
            raise TypeError("sendto() takes 2 or 3 arguments")
        sk = self._check()
        dest = self._parse(address)
        return int(await self._nonblocking(True, self._sendmsg(sk), data, dest, flags))

    async def sendmsg(
        self,
        buffers: Iterable[bytes | bytearray | memoryview],
        ancdata: Sequence[Any] = (),
        flags: int = 0,
        address: Address | None = None,
    ) -> int:
        data = b"".join(bytes(b) for b in buffers)
        sk = self._check()
        dest = self._parse(address) if address is not None else None
        return int(await self._nonblocking(True, self._sendmsg(sk), data, dest, flags))

    async def sendmmsg(
        self,
        messages: Sequence[tuple[bytes | bytearray | memoryview, Address | None]],
        flags: int = 0,
    ) -> int:
        """Send many datagrams with one checkpoint; returns how many were sent.

        Like Linux ``sendmmsg(2)``: stops at the first datagram that would
        block (after at least one was sent) or fails (an error is raised only
        if it is the first).
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        sk = self._check()
        parsed = [(d, self._parse(a) if a is not None else None) for d, a in messages]
        send = self._sendmsg(sk)
        sent = 0
        if parsed:
            # the first datagram waits for send-buffer room, and its error is raised
            data, dest = parsed[0]
            while True:
                try:
                    send(data, dest, flags)
                    break
                except SockWouldBlock:
                    await sk.wait_writable()
                    self._check()
            sent = 1
            # the others stop at the first that would block or fails
            for data, dest in parsed[1:]:
                try:
                    send(data, dest, flags)
                except (SockWouldBlock, OSError):
                    break
                sent += 1
        await trio.lowlevel.cancel_shielded_checkpoint()
        return sent

    async def recv(self, bufsize: int, flags: int = 0) -> bytes:
        # _nonblocking_recv's first try written out, as send has _nonblocking's
        if self._closed:
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))
        sk = self._sk
        fn = self._recv_fn
        if fn is _UNSET:
            fn = self._recv_fn = self._recvmsg_or_none(sk)
        if fn is None:
            data, _, _, _ = await self._nonblocking_recv(sk, bufsize, flags)
            return bytes(data)
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._closed:
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))
        result = fn(bufsize, flags)
        if result is None:
            result = await self._nonblocking_recv(sk, bufsize, flags, fn)
        else:
            await trio.lowlevel.cancel_shielded_checkpoint()
        data = result[0]
        return data if type(data) is bytes else bytes(data)

    async def recvfrom(self, bufsize: int, flags: int = 0) -> tuple[bytes, Address]:
        sk = self._check()
        data, addr, _, _ = await self._nonblocking_recv(sk, bufsize, flags)
        return bytes(data), self._fmt(addr)

    async def recv_into(
        self, buffer: bytearray | memoryview, nbytes: int = 0, flags: int = 0
    ) -> int:
        data, _ = await self.recvfrom_into_(buffer, nbytes, flags)
        return data

    async def recvfrom_into(
        self, buffer: bytearray | memoryview, nbytes: int = 0, flags: int = 0
    ) -> tuple[int, Address]:
        return await self.recvfrom_into_(buffer, nbytes, flags)

    async def recvfrom_into_(
        self, buffer: bytearray | memoryview, nbytes: int, flags: int
    ) -> tuple[int, Address]:
        size = nbytes or len(buffer)
        data, addr = await self.recvfrom(size, flags)
        memoryview(buffer)[: len(data)] = data
        return len(data), addr

    async def recvmsg(
        self, bufsize: int, ancbufsize: int = 0, flags: int = 0
    ) -> tuple[bytes, list[tuple[int, int, bytes]], int, Address]:
        """``recvmsg``; with ``MSG_ERRQUEUE`` reads an ``IP_RECVERR`` report."""
        sk = self._check()
        if flags & MSG_ERRQUEUE:
            await trio.lowlevel.checkpoint()
            report: tuple[bytes, list[tuple[int, int, bytes]], int, tuple[int, ...]]
            if isinstance(sk, Inet6Sock):
                report = sk.recv_errqueue6(bufsize)
            else:
                report = sk.recv_errqueue(bufsize)
            data, anc, mflags, addr = report
            return data, anc, mflags, self._fmt(addr)
        data, addr, mflags, anc = await self._nonblocking(False, self._recvmsg(sk), bufsize, flags)
        return bytes(data), anc, mflags, self._fmt(addr)

    @kernel("recvmmsg")
    async def recvmmsg(
        self, bufsize: int, vlen: int, flags: int = 0
    ) -> list[tuple[bytes, Address]]:
        """Receive up to *vlen* datagrams with one checkpoint (waits for the first).

        Kernel: recvmmsg(2) with MSG_WAITFORONE semantics.
        """
        sk = self._check()
        recv = self._recvmsg(sk)
        first = await self._nonblocking(False, recv, bufsize, flags)
        # The source address is formatted once per run of datagrams from one sender
        # (a batch usually has one), not per datagram: the kernel copies a sockaddr.
        last_addr = first[1]
        name = self._fmt(last_addr)
        out = [(bytes(first[0]), name)]
        append = out.append
        flags |= MSG_DONTWAIT
        if type(sk) is UdpSock:
            # udp_recvmsg() itself (as _sendmsg binds udp_sendmsg()): a frame less a
            # datagram; with MSG_DONTWAIT it never returns None
            recv = sk.udp_recvmsg
        while len(out) < vlen:
            try:
                data, addr, _, _ = recv(bufsize, flags)
            except OSError as e:
                if e.errno == errno.EAGAIN:
                    break
                raise
            if addr != last_addr:
                last_addr = addr
                name = self._fmt(addr)
            append((data if type(data) is bytes else bytes(data), name))
        return out

    # -- _nowait variants, for synchronous tests ------------------------------------------
    def sendto_nowait(
        self, data: bytes | bytearray | memoryview, address: Address, flags: int = 0
    ) -> int:
        """Synchronous ``sendto``; raises ``BlockingIOError`` instead of waiting."""
        sk = self._check()
        try:
            return int(self._sendmsg(sk)(data, self._parse(address), flags))
        except SockWouldBlock:
            raise BlockingIOError(errno.EAGAIN, os.strerror(errno.EAGAIN)) from None

    def recvmsg_nowait(
        self, bufsize: int, flags: int = 0
    ) -> tuple[bytes, list[tuple[int, int, bytes]], int, Address]:
        """Synchronous ``recvmsg``; raises ``BlockingIOError`` if nothing is queued."""
        sk = self._check()
        try:
            data, addr, mflags, anc = self._recvmsg(sk)(bufsize, flags)
        except SockWouldBlock:
            raise BlockingIOError(errno.EAGAIN, os.strerror(errno.EAGAIN)) from None
        return bytes(data), anc, mflags, self._fmt(addr)

    def recvfrom_nowait(self, bufsize: int, flags: int = 0) -> tuple[bytes, Address]:
        """Synchronous ``recvfrom``; raises ``BlockingIOError`` if nothing is queued."""
        sk = self._check()
        try:
            data, addr, _, _ = self._recvmsg(sk)(bufsize, flags)
        except SockWouldBlock:
            raise BlockingIOError(errno.EAGAIN, os.strerror(errno.EAGAIN)) from None
        return bytes(data), self._fmt(addr)


@kernel("net/socket.c", "__sock_create")
def socket_create(
    net: Net,
    family: int = AF_INET,
    type: int = SOCK_DGRAM,  # noqa: A002
    proto: int = 0,
) -> Socket:
    """``socket(2)`` on *net*.

    Kernel: net/socket.c, __sock_create().
    """
    if family == AF_UNSPEC or family not in (AF_INET, AF_INET6):
        raise OSError(errno.EAFNOSUPPORT, os.strerror(errno.EAFNOSUPPORT))
    inet = net.ipv4 if family == AF_INET else net.ipv6
    if inet is None:
        raise OSError(errno.EAFNOSUPPORT, os.strerror(errno.EAFNOSUPPORT))
    sock_type = type & ~(0o4000 | 0o2000000)  # SOCK_NONBLOCK | SOCK_CLOEXEC
    sk = inet.socket(sock_type, proto)
    return Socket(net, sk)
