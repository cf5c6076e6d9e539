"""``socket.socket`` of an emulated host: the standard library's interface, non-blocking.

Theory of operation: :class:`HostSocket` is what ``socket.socket()`` returns
inside a host (see :mod:`netstack.socket.interpose`) and what the Trio and
(later) asyncio adapters wrap, as Trio wraps a real ``socket.socket``. Every
method is one synchronous pass through the host's stack with the real
socket module's results: ``OSError`` with Linux's errno (``OSError`` picks
the subclass — ``ConnectionRefusedError``, ``BrokenPipeError`` …),
addresses as ``(host, port)`` / ``(host, port, flowinfo, scope_id)``, host
names resolved by the host's :class:`~netstack.socket.resolver.Resolver`.

An operation that would block raises ``BlockingIOError`` (``EAGAIN``, or
``EINPROGRESS`` for a TCP ``connect``) on a non-blocking socket, as the
kernel does; the caller waits with :meth:`HostSocket.wait_readable` /
:meth:`HostSocket.wait_writable` (Trio awaitables over the stack's wake-ups)
and tries again — Trio's ``_nonblocking_helper`` pattern, and the readiness
an event loop needs. A *blocking* socket cannot wait: one Trio thread runs
every host, and a call that blocked it would stop the lab, so such a call
raises :class:`BlockingCallRefused` instead (calls that never wait —
``bind``, ``listen``, ``setsockopt``, a UDP ``sendto`` or ``connect`` — work
in either mode).

Kernel: net/socket.c (the syscalls), net/ipv4/af_inet.c, net/ipv6/af_inet6.c.
"""

from __future__ import annotations

import errno
import os
import socket as _stdsocket
import struct
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NoReturn

import trio

from netstack.core.sock import (
    AF_INET6,
    SOCK_STREAM,
    SOL_SOCKET,
    Sock,
    SockWouldBlock,
)
from netstack.ipv6.sock import Inet6Sock
from netstack.ipv6.tcp_ipv6 import tcp_v6_set_scope
from netstack.socket.socket import parse_inet6_addr, parse_inet_addr, socket_create
from netstack.tcp.tcp import inet_stream_connect_result
from netstack.wire.ipv4 import ntoa
from netstack.wire.ipv6 import ntoa as ntoa6

if TYPE_CHECKING:
    from netstack.socket.context import HostContext

__all__ = ["BlockingCallRefused", "HostSocket", "host_socket"]

SO_ERROR = 4
_FAKE_FD_BASE = 1 << 30
SO_ACCEPTCONN = 30
_EAGAIN_MSG = os.strerror(errno.EAGAIN)


class BlockingCallRefused(RuntimeError):
    """A blocking-mode socket call inside a host would have had to wait."""


def _oserror(code: int) -> OSError:
    return OSError(code, os.strerror(code))


class HostSocket:
    """A socket of an emulated host with ``socket.socket``'s interface."""

    def __init__(self, ctx: HostContext, sk: Sock, *, timeout: float | None = None) -> None:
        self._ctx = ctx
        self._net = ctx.net
        self._sk = sk
        self._v6 = sk.family == AF_INET6
        self._timeout = timeout
        self._closed = False

    # -- identity ---------------------------------------------------------------------------
    @property
    def family(self) -> _stdsocket.AddressFamily:
        return _stdsocket.AddressFamily(self._sk.family)

    @property
    def type(self) -> _stdsocket.SocketKind:
        return _stdsocket.SocketKind(self._sk.type)

    @property
    def proto(self) -> int:
        return self._sk.protocol

    @property
    def sock(self) -> Sock:
        """The protocol socket (kernel ``struct sock``)."""
        return self._sk

    @property
    def host_name(self) -> str:
        """The host this socket belongs to."""
        return self._ctx.name

    @property
    def closed(self) -> bool:
        return self._closed

    def fileno(self) -> int:
        """A number that no descriptor of the real machine has (≥ 2**30; the
        kernel caps descriptors below it), -1 once closed — code that tests
        ``fileno() == -1`` for "closed" (Trio's streams do) sees the truth, and
        an ``os`` call on it fails with ``EBADF`` instead of touching a real file."""
        return -1 if self._closed else _FAKE_FD_BASE + (id(self._sk) & 0x3FFFFFF)

    def _check(self) -> Sock:
        if self._closed:
            raise _oserror(errno.EBADF)
        return self._sk

    # -- blocking mode ------------------------------------------------------------------------
    def setblocking(self, flag: bool) -> None:
        self._timeout = None if flag else 0.0

    def getblocking(self) -> bool:
        return self._timeout != 0.0

    def settimeout(self, value: float | None) -> None:
        if value is not None:
            value = float(value)
            if value < 0.0:
                raise ValueError("Timeout value out of range")
        self._timeout = value

    def gettimeout(self) -> float | None:
        return self._timeout

    @property
    def timeout(self) -> float | None:
        return self._timeout

    def _would_block(self, code: int = errno.EAGAIN) -> NoReturn:
        if self._timeout == 0.0:
            raise BlockingIOError(code, os.strerror(code))
        raise BlockingCallRefused(
            f"a blocking socket call on host {self._ctx.name!r} would wait, and one Trio "
            "thread runs every host of the lab: use trio.socket (or an async library), "
            "or setblocking(False)"
        )

    # -- addresses --------------------------------------------------------------------------------
    def parse_address(self, address: Any, *, local: bool) -> tuple[int, ...]:
        """A user's address → the stack's ints, resolving a host name if needed."""
        try:
            if self._v6:
                return parse_inet6_addr(self._net, address, for_bind=local)
            return parse_inet_addr(address, for_bind=local)
        except _stdsocket.gaierror:
            pass
        normed = self._ctx.resolver.sockaddr(
            address, self._sk.family, self._sk.type, 0, local=local
        )
        if self._v6:
            return parse_inet6_addr(self._net, normed, for_bind=local)
        return parse_inet_addr(normed, for_bind=local)

    def format_address(self, addr: tuple[int, ...]) -> tuple[Any, ...]:
        if self._v6:
            if len(addr) == 2:
                return ntoa6(addr[0]), addr[1], 0, 0
            return ntoa6(addr[0]), addr[1], addr[2], addr[3]
        return ntoa(addr[0]), addr[1]

    def getsockname(self) -> tuple[Any, ...]:
        sk = self._check()
        if isinstance(sk, Inet6Sock):
            return self.format_address(sk.getsockname6())
        return self.format_address(sk.getsockname())

    def getpeername(self) -> tuple[Any, ...]:
        sk = self._check()
        if isinstance(sk, Inet6Sock):
            return self.format_address(sk.getpeername6())
        return self.format_address(sk.getpeername())

    # -- options -----------------------------------------------------------------------------------
    def setsockopt(
        self, level: int, optname: int, value: int | bytes | None, optlen: int | None = None
    ) -> None:
        sk = self._check()
        if value is None:
            if optlen is None:
                raise TypeError("setsockopt() with None needs an optlen")
            value = b"\0" * optlen
        elif isinstance(value, bool):
            value = int(value)
        elif not isinstance(value, int):
            value = bytes(value)
        sk.setsockopt(level, optname, value)

    def getsockopt(self, level: int, optname: int, buflen: int | None = None) -> int | bytes:
        sk = self._check()
        value: int | bytes
        if level == SOL_SOCKET and optname == SO_ERROR and getattr(sk, "connect_pending", False):
            try:
                inet_stream_connect_result(sk)  # type: ignore[arg-type]
            except OSError as e:
                value = e.errno or 0
            else:
                value = 0
        elif level == SOL_SOCKET and optname == SO_ACCEPTCONN:
            value = int(sk.type == SOCK_STREAM and sk.state == 10)  # TCP_LISTEN
        else:
            value = sk.getsockopt(level, optname)
        if buflen is None:
            return value
        if isinstance(value, int):
            value = struct.pack("<i", value)
        return value[:buflen]

    # -- connection set-up ------------------------------------------------------------------------
    def bind(self, address: Any) -> None:
        sk = self._check()
        parsed = self.parse_address(address, local=True)
        if isinstance(sk, Inet6Sock):
            addr, port, _flowinfo, scope_id = parsed
            sk.bind6(addr, port, scope_id)
        elif self._v6:
            addr, port, _flowinfo, scope_id = parsed
            tcp_v6_set_scope(sk, addr, scope_id)  # type: ignore[arg-type]
            sk.bind(addr, port)
        else:
            sk.bind(parsed[0], parsed[1])

    def connect_start(self, address: Any) -> bool:
        """Start ``connect``; True if it completed (always, but for TCP)."""
        sk = self._check()
        if address is None or address == ():
            sk.disconnect()
            return True
        return self.connect_parsed(self.parse_address(address, local=False))

    def connect_parsed(self, parsed: tuple[int, ...]) -> bool:
        """:meth:`connect_start` with an address :meth:`parse_address` made."""
        sk = self._check()
        if isinstance(sk, Inet6Sock):
            sk.connect6(*parsed)
        elif self._v6:
            addr, port, _flowinfo, scope_id = parsed
            tcp_v6_set_scope(sk, addr, scope_id)  # type: ignore[arg-type]
            sk.connect(addr, port)
        else:
            sk.connect(parsed[0], parsed[1])
        if sk.type != SOCK_STREAM:
            return True
        return inet_stream_connect_result(sk)  # type: ignore[arg-type]

    def connect_result(self) -> bool:
        """True once a started TCP connect finished; its error if it failed."""
        return inet_stream_connect_result(self._check())  # type: ignore[arg-type]

    def connect(self, address: Any) -> None:
        if not self.connect_start(address):
            self._would_block(errno.EINPROGRESS)

    def connect_ex(self, address: Any) -> int:
        try:
            self.connect(address)
        except BlockingCallRefused:
            raise
        except OSError as e:
            return e.errno or 0
        return 0

    def listen(self, backlog: int = min(_stdsocket.SOMAXCONN, 128)) -> None:
        sk = self._check()
        if sk.type != SOCK_STREAM:
            raise _oserror(errno.EOPNOTSUPP)
        sk.listen(backlog)  # type: ignore[attr-defined]

    def accept_nowait(self) -> tuple[HostSocket, tuple[Any, ...]]:
        sk: Any = self._check()
        child = sk.accept()
        sock = HostSocket(self._ctx, child, timeout=None)
        return sock, sock.getpeername()

    def accept(self) -> tuple[HostSocket, tuple[Any, ...]]:
        try:
            return self.accept_nowait()
        except SockWouldBlock:
            self._would_block()

    # -- data --------------------------------------------------------------------------------------
    def _sendmsg(self, data: Any, dest: tuple[int, ...] | None, flags: int) -> int:
        sk = self._check()
        if isinstance(sk, Inet6Sock):
            return sk.sendmsg6(data, dest, flags)  # type: ignore[arg-type]
        return sk.sendmsg(data, dest, flags)  # type: ignore[arg-type]

    def _recvmsg(self, bufsize: int, flags: int) -> tuple[Any, tuple[int, ...], int, list[Any]]:
        sk = self._check()
        if bufsize < 0:
            raise ValueError("negative buffersize in recv")
        if isinstance(sk, Inet6Sock):
            return sk.recvmsg6(bufsize, flags)
        return sk.recvmsg(bufsize, flags)

    def send(self, data: Any, flags: int = 0) -> int:
        try:
            return self._sendmsg(data, None, flags)
        except SockWouldBlock:
            self._would_block()

    def sendto(self, data: Any, *args: Any) -> int:
        if len(args) == 1:
            flags, address = 0, args[0]
        elif len(args) == 2:
            flags, address = args
        else:
            raise TypeError(f"sendto() takes 2 or 3 arguments ({len(args) + 1} given)")
        dest = self.parse_address(address, local=False)
        try:
            return self._sendmsg(data, dest, flags)
        except SockWouldBlock:
            self._would_block()

    def sendall(self, data: Any, flags: int = 0) -> None:
        view = memoryview(data).cast("B")
        sent = 0
        while sent < len(view):
            sent += self.send(view[sent:], flags)

    def sendmsg(
        self,
        buffers: Iterable[Any],
        ancdata: Iterable[Any] = (),
        flags: int = 0,
        address: Any = None,
    ) -> int:
        if list(ancdata):
            raise _oserror(errno.EINVAL)  # no control messages on send in the emulation
        data = b"".join(bytes(b) for b in buffers)
        dest = self.parse_address(address, local=False) if address is not None else None
        try:
            return self._sendmsg(data, dest, flags)
        except SockWouldBlock:
            self._would_block()

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        try:
            data = self._recvmsg(bufsize, flags)[0]
        except SockWouldBlock:
            self._would_block()
        return bytes(data)

    def recvfrom(self, bufsize: int, flags: int = 0) -> tuple[bytes, tuple[Any, ...]]:
        try:
            data, addr, _, _ = self._recvmsg(bufsize, flags)
        except SockWouldBlock:
            self._would_block()
        return bytes(data), self.format_address(addr)

    def recvmsg(
        self, bufsize: int, ancbufsize: int = 0, flags: int = 0
    ) -> tuple[bytes, list[tuple[int, int, bytes]], int, tuple[Any, ...]]:
        try:
            data, addr, mflags, anc = self._recvmsg(bufsize, flags)
        except SockWouldBlock:
            self._would_block()
        return bytes(data), anc if ancbufsize else [], mflags, self.format_address(addr)

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        return self.recvfrom_into(buffer, nbytes, flags)[0]

    def recvfrom_into(
        self, buffer: Any, nbytes: int = 0, flags: int = 0
    ) -> tuple[int, tuple[Any, ...]]:
        view = memoryview(buffer).cast("B")
        if nbytes < 0:
            raise ValueError("negative buffersize in recvfrom_into")
        if nbytes > len(view):
            raise ValueError("nbytes is greater than the length of the buffer")
        data, addr = self.recvfrom(nbytes or len(view), flags)
        view[: len(data)] = data
        return len(data), addr

    def recvmsg_into(
        self, buffers: Iterable[Any], ancbufsize: int = 0, flags: int = 0
    ) -> tuple[int, list[tuple[int, int, bytes]], int, tuple[Any, ...]]:
        views = [memoryview(b).cast("B") for b in buffers]
        data, anc, mflags, addr = self.recvmsg(sum(len(v) for v in views), ancbufsize, flags)
        pos = 0
        for v in views:
            chunk = data[pos : pos + len(v)]
            v[: len(chunk)] = chunk
            pos += len(chunk)
        return len(data), anc, mflags, addr

    # -- readiness (for the async adapters) --------------------------------------------------------
    def readable(self) -> bool:
        return self._check().readable()

    def writable(self) -> bool:
        return self._check().writable()

    async def wait_readable(self) -> None:
        """Wait until a read would not block (Trio checkpoint)."""
        sk = self._check()
        if sk.readable():
            await trio.lowlevel.checkpoint()
            return
        await sk.wait_readable()

    async def wait_writable(self) -> None:
        """Wait until a write (or a pending connect) would not block (Trio checkpoint)."""
        sk = self._check()
        if sk.writable():
            await trio.lowlevel.checkpoint()
            return
        await sk.wait_writable()

    # -- end of life -------------------------------------------------------------------------------
    def shutdown(self, how: int) -> None:
        sk = self._check()
        if how not in (0, 1, 2):
            raise _oserror(errno.EINVAL)
        sk.shutdown(how)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._sk.close()

    def detach(self) -> int:
        raise _oserror(errno.EOPNOTSUPP)

    def dup(self) -> HostSocket:
        raise _oserror(errno.EOPNOTSUPP)

    def get_inheritable(self) -> bool:
        return False

    def set_inheritable(self, inheritable: bool) -> None:
        pass

    def __enter__(self) -> HostSocket:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        s = f"<netstack.HostSocket host={self._ctx.name}"
        if self._closed:
            return s + " [closed]>"
        s += f" family={self.family!s}, type={self.type!s}, proto={self.proto}"
        try:
            s += f", laddr={self.getsockname()}"
        except OSError:
            pass
        return s + ">"


SOCK_NONBLOCK = 0o4000
SOCK_CLOEXEC = 0o2000000


def host_socket(
    ctx: HostContext,
    family: int = -1,
    type: int = -1,  # noqa: A002
    proto: int = -1,
) -> HostSocket:
    """``socket(2)`` on the host of *ctx*, as ``socket.socket(family, type, proto)``
    (``-1`` means the default: AF_INET, SOCK_STREAM, protocol 0).

    Kernel: net/socket.c, __sys_socket() / __sock_create().
    """
    if family == -1:
        family = _stdsocket.AF_INET
    if type == -1:
        type = _stdsocket.SOCK_STREAM  # noqa: A001
    if proto == -1:
        proto = 0
    sock = socket_create(ctx.net, int(family), int(type) & ~(SOCK_NONBLOCK | SOCK_CLOEXEC), proto)
    return HostSocket(ctx, sock.sock, timeout=0.0 if int(type) & SOCK_NONBLOCK else None)
