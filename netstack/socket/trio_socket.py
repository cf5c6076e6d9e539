"""``trio.socket`` inside a host: the socket factory and resolver Trio lets a program install.

Theory of operation: Trio keeps a socket factory and a hostname resolver per
run (``trio.socket.set_custom_socket_factory``, ``set_custom_hostname_resolver``);
everything in Trio that makes a socket or resolves a name goes through them
(``open_tcp_stream`` and its happy eyeballs, ``open_tcp_listeners``,
``serve_tcp``, ``SocketStream``/``SocketListener``, DTLS endpoints, AnyIO's
Trio backend, and the libraries built on those). :func:`install` puts
:class:`HostSocketFactory` and :class:`HostResolver` in place for the current
run; both ask :mod:`netstack.socket.context` which host the calling task is
in and answer from that host alone (outside every host: :class:`NoCurrentHost`).

:class:`TrioSocket` is a ``trio.socket.SocketType`` over a
:class:`~netstack.socket.stdlib.HostSocket`, shaped like Trio's own
``_SocketType`` over a real socket: ``_sock`` is the (non-blocking)
standard-library-like socket (AnyIO reads ``_sock`` for its ``raw_socket``
attribute), each call checks for cancellation, tries the operation, and on
"would block" waits for the stack's wake-up and tries again; a successful
call takes one cancel-shielded checkpoint. ``connect`` waits for the
handshake and raises Trio's ``"Error connecting to ADDR: …"`` ``OSError``; a
cancelled ``connect`` closes the socket, as Trio's does.

Kernel: net/socket.c (the syscalls); trio/_socket.py (the shape).
"""

from __future__ import annotations

import builtins
import os
import socket as _stdsocket
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import trio

from netstack.core.sock import SockWouldBlock
from netstack.socket.context import HostContext, current
from netstack.socket.stdlib import BlockingCallRefused, HostSocket, host_socket

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["HostResolver", "HostSocketFactory", "TrioSocket", "install", "restore"]

_checkpoint_if_cancelled = trio.lowlevel.checkpoint_if_cancelled
_cancel_shielded_checkpoint = trio.lowlevel.cancel_shielded_checkpoint


class TrioSocket(trio.socket.SocketType):
    """A Trio socket of an emulated host (what ``trio.socket.socket()`` returns inside one)."""

    def __init__(self, sock: HostSocket) -> None:
        super().__init__()
        sock.setblocking(False)
        self._sock = sock
        self._did_shutdown_SHUT_WR = False

    # -- sync, as the standard library's ---------------------------------------------------
    def detach(self) -> int:
        return self._sock.detach()

    def fileno(self) -> int:
        return self._sock.fileno()

    def getpeername(self) -> Any:
        return self._sock.getpeername()

    def getsockname(self) -> Any:
        return self._sock.getsockname()

    def getsockopt(self, level: int, optname: int, buflen: int | None = None) -> Any:
        return self._sock.getsockopt(level, optname, buflen)

    def setsockopt(self, level: int, optname: int, value: Any, optlen: int | None = None) -> None:
        self._sock.setsockopt(level, optname, value, optlen)

    def listen(self, backlog: int = min(_stdsocket.SOMAXCONN, 128)) -> None:
        self._sock.listen(backlog)

    def get_inheritable(self) -> bool:
        return False

    def set_inheritable(self, inheritable: bool) -> None:
        pass

    @property
    def family(self) -> _stdsocket.AddressFamily:
        return self._sock.family

    @property
    def type(self) -> _stdsocket.SocketKind:
        return self._sock.type

    @property
    def proto(self) -> int:
        return self._sock.proto

    @property
    def did_shutdown_SHUT_WR(self) -> bool:
        return self._did_shutdown_SHUT_WR

    @property
    def host_name(self) -> str:
        """The host this socket belongs to."""
        return self._sock.host_name

    def __enter__(self) -> TrioSocket:
        return self

    def __exit__(
        self,
        exc_type: builtins.type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return repr(self._sock).replace("netstack.HostSocket", "netstack.TrioSocket")

    def dup(self) -> trio.socket.SocketType:
        return TrioSocket(self._sock.dup())

    def close(self) -> None:
        self._sock.close()

    def shutdown(self, flag: int) -> None:
        self._sock.shutdown(flag)
        if flag in (_stdsocket.SHUT_WR, _stdsocket.SHUT_RDWR):
            self._did_shutdown_SHUT_WR = True

    def is_readable(self) -> bool:
        return self._sock.readable()

    async def wait_writable(self) -> None:
        await self._sock.wait_writable()

    # -- the non-blocking helper -----------------------------------------------------------------
    async def _nonblocking(self, write: bool, fn: Any, *args: Any) -> Any:
        await _checkpoint_if_cancelled()
        try:
            result = fn(*args)
        except SockWouldBlock:
            pass
        else:
            await _cancel_shielded_checkpoint()
            return result
        sock = self._sock
        while True:
            if write:
                await sock.wait_writable()
            else:
                await sock.wait_readable()
            try:
                return fn(*args)
            except SockWouldBlock:
                pass

    # -- async operations --------------------------------------------------------------------------
    async def bind(self, address: Any) -> None:
        await trio.lowlevel.checkpoint()
        self._sock.bind(address)

    async def accept(self) -> tuple[trio.socket.SocketType, Any]:
        child, addr = await self._nonblocking(False, self._sock.accept_nowait)
        return TrioSocket(child), addr

    async def connect(self, address: Any) -> None:
        sock = self._sock
        try:
            await _checkpoint_if_cancelled()
            parsed = sock.parse_address(address, local=False)
            if sock.connect_parsed(parsed):
                await _cancel_shielded_checkpoint()
                return
            while True:
                await sock.wait_writable()
                try:
                    if sock.connect_result():
                        return
                except OSError as e:
                    err = e.errno or 0
                    where = sock.format_address(parsed)
                    raise OSError(
                        err, f"Error connecting to {where!r}: {os.strerror(err)}"
                    ) from None
        except trio.Cancelled:
            sock.close()
            raise

    async def send(self, data: Any, flags: int = 0) -> int:
        return int(await self._nonblocking(True, self._sock._sendmsg, data, None, flags))

    async def sendto(self, data: Any, *args: Any) -> int:
        if len(args) == 1:
            flags, address = 0, args[0]
        elif len(args) == 2:
            flags, address = args
        else:
            raise TypeError(f"sendto() takes 2 or 3 arguments ({len(args) + 1} given)")
        dest = self._sock.parse_address(address, local=False)
        return int(await self._nonblocking(True, self._sock._sendmsg, data, dest, flags))

    async def sendmsg(
        self,
        buffers: Iterable[Any],
        ancdata: Iterable[Any] = (),
        flags: int = 0,
        address: Any = None,
    ) -> int:
        if list(ancdata):
            raise OSError(22, os.strerror(22))
        data = b"".join(bytes(b) for b in buffers)
        dest = self._sock.parse_address(address, local=False) if address is not None else None
        return int(await self._nonblocking(True, self._sock._sendmsg, data, dest, flags))

    async def recv(self, bufsize: int, flags: int = 0) -> bytes:
        data = (await self._nonblocking(False, self._sock._recvmsg, bufsize, flags))[0]
        return bytes(data)

    async def recvfrom(self, bufsize: int, flags: int = 0) -> tuple[bytes, Any]:
        data, addr, _, _ = await self._nonblocking(False, self._sock._recvmsg, bufsize, flags)
        return bytes(data), self._sock.format_address(addr)

    async def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        return (await self.recvfrom_into(buffer, nbytes, flags))[0]

    async def recvfrom_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> tuple[int, Any]:
        view = memoryview(buffer).cast("B")
        if nbytes < 0:
            raise ValueError("negative buffersize in recvfrom_into")
        if nbytes > len(view):
            raise ValueError("nbytes is greater than the length of the buffer")
        data, addr = await self.recvfrom(nbytes or len(view), flags)
        view[: len(data)] = data
        return len(data), addr

    async def recvmsg(
        self, bufsize: int, ancbufsize: int = 0, flags: int = 0
    ) -> tuple[bytes, list[tuple[int, int, bytes]], int, Any]:
        data, addr, mflags, anc = await self._nonblocking(
            False, self._sock._recvmsg, bufsize, flags
        )
        return bytes(data), anc if ancbufsize else [], mflags, self._sock.format_address(addr)

    async def recvmsg_into(
        self, buffers: Iterable[Any], ancbufsize: int = 0, flags: int = 0
    ) -> tuple[int, list[tuple[int, int, bytes]], int, Any]:
        views = [memoryview(b).cast("B") for b in buffers]
        data, anc, mflags, addr = await self.recvmsg(sum(len(v) for v in views), ancbufsize, flags)
        pos = 0
        for v in views:
            chunk = data[pos : pos + len(v)]
            v[: len(chunk)] = chunk
            pos += len(chunk)
        return len(data), anc, mflags, addr


class HostSocketFactory(trio.abc.SocketFactory):
    """Trio's socket factory for a lab: a socket of the calling task's host."""

    def socket(
        self,
        family: int | None = None,
        type: int | None = None,  # noqa: A002
        proto: int | None = None,
    ) -> trio.socket.SocketType:
        ctx = _in_trio_thread(current("trio.socket.socket()"))
        return TrioSocket(
            host_socket(
                ctx,
                -1 if family is None else family,
                -1 if type is None else type,
                -1 if proto is None else proto,
            )
        )


class HostResolver(trio.abc.HostnameResolver):
    """Trio's hostname resolver for a lab: the calling task's host's :class:`Resolver`."""

    async def getaddrinfo(
        self,
        host: bytes | None,
        port: bytes | str | int | None,
        family: int = 0,
        type: int = 0,  # noqa: A002
        proto: int = 0,
        flags: int = 0,
    ) -> list[Any]:
        ctx = current("trio.socket.getaddrinfo()")
        await trio.lowlevel.checkpoint()
        return ctx.resolver.getaddrinfo(host, port, family, type, proto, flags)

    async def getnameinfo(self, sockaddr: tuple[Any, ...], flags: int) -> tuple[str, str]:
        ctx = current("trio.socket.getnameinfo()")
        await trio.lowlevel.checkpoint()
        return ctx.resolver.getnameinfo(sockaddr, flags)


def _in_trio_thread(ctx: HostContext) -> HostContext:
    if threading.get_ident() != ctx.thread:
        raise BlockingCallRefused(
            f"socket code in a worker thread cannot reach host {ctx.name!r}: the emulated "
            "network runs in the Trio thread (use async code in the host's task)"
        )
    return ctx


_FACTORY = HostSocketFactory()
_RESOLVER = HostResolver()


def install() -> tuple[Any, Any]:
    """Make this Trio run's sockets and names the lab's; returns what was there before."""
    old_factory = trio.socket.set_custom_socket_factory(_FACTORY)
    old_resolver = trio.socket.set_custom_hostname_resolver(_RESOLVER)
    return old_factory, old_resolver


def installed() -> bool:
    """Whether this run's Trio sockets are the lab's."""
    current_factory = trio.socket.set_custom_socket_factory(None)
    trio.socket.set_custom_socket_factory(current_factory)
    return current_factory is _FACTORY


def restore(saved: tuple[Any, Any]) -> None:
    """Put back what :func:`install` replaced."""
    trio.socket.set_custom_socket_factory(saved[0])
    trio.socket.set_custom_hostname_resolver(saved[1])
