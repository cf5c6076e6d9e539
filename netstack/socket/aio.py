"""asyncio inside a host: asyncio's event loop on Trio (trio-asyncio), its sockets the host's.

Theory of operation: trio-asyncio runs asyncio's event loop as a Trio task —
asyncio callbacks, tasks and timers are scheduled by Trio, and the loop's
``time()`` is Trio's clock, so ``asyncio.sleep``, ``asyncio.timeout`` and
``wait_for`` follow the lab's virtual (autojump) clock, and the order in
which things run repeats from the lab's seed like everything else in a lab.
Its loop is a ``SelectorEventLoop`` whose selector waits on real file
descriptors; an emulated host's sockets have none. :class:`HostEventLoop`
therefore replaces the socket layer of the loop — the same layer a
selector loop implements and ``BaseEventLoop`` builds everything else on:

* ``sock_connect``/``sock_recv``/``sock_recv_into``/``sock_recvfrom``/
  ``sock_recvfrom_into``/``sock_sendall``/``sock_sendto``/``sock_accept``
  try the call on the :class:`~netstack.socket.stdlib.HostSocket` and, when
  it would block, wait for the stack's wake-up in a Trio task
  (``trio_as_future``) and try again;
* ``getaddrinfo``/``getnameinfo`` answer from the calling task's host's
  resolver (a selector loop would run ``socket.getaddrinfo`` in a thread);
* ``_make_socket_transport``/``_make_ssl_transport``/
  ``_make_datagram_transport`` build :class:`HostStreamTransport` and
  :class:`HostDatagramTransport` — asyncio transports over a host socket,
  each with a reader task (a Trio task spawned through the loop, as a
  selector loop's ``add_reader``) and a writer task while the write buffer
  is not empty (``add_writer``), calling the protocol's methods as
  ``_SelectorSocketTransport`` does (``data_received``/``buffer_updated``,
  ``eof_received``, ``pause_writing``/``resume_writing`` at the buffer's
  water marks, ``connection_lost``);
* ``_start_serving``/``_stop_serving`` run an accept loop per listening
  socket and hand each connection to ``BaseEventLoop._accept_connection2``;
* timers: a program that keeps arming timers that are already due at one
  virtual instant would spin forever (no CPU time passes in functional
  mode); after :data:`SPIN_LIMIT` of them the loop lets one microsecond pass
  (``spin_jumps`` counts it);
* ``add_reader``/``add_writer`` on a host socket (the object, or the number
  of one the loop has seen) wait on the stack's wake-ups instead of the
  descriptor (trio-asyncio's own handler machinery, another wait function).

So ``asyncio.open_connection``, ``asyncio.start_server``,
``loop.create_connection``/``create_server``/``create_datagram_endpoint``
(with happy eyeballs, TLS through asyncio's own ``SSLProtocol``) are
``BaseEventLoop``'s unchanged code: it makes its sockets with
``socket.socket()``, which inside a host is the host's
(:mod:`netstack.socket.interpose`). A socket that is not a host's (made
outside every host) is refused with
:class:`~netstack.socket.interpose.RealNetworkRefused` — the loop never
reaches the machine's network — and what the stack does not support raises
``OSError`` with Linux's errno from the socket call itself.

Which host: ``current_host`` (:mod:`netstack.socket.context`), read when a
socket or a name is asked for. An asyncio task copies the context it is
created in, and a callback the context it is scheduled in, so everything a
coroutine started by ``await host.run_asyncio(fn)`` does — the servers it
starts, their connection handlers, the transports' tasks — stays on that
host. :func:`open_loop` is trio-asyncio's ``open_loop`` with the loop's class
swapped for :class:`HostEventLoop` (the subclass's own state is made by
``_netstack_init``, called after the swap). Besides asyncio's own selector
hooks, the subclass uses two of trio-asyncio's internals: ``_queue_handle``
(where every timer passes) and ``_add_io_handler`` (``add_reader``'s Trio
task, given another wait function); tests/socket/test_asyncio.py covers
both.

Kernel: none — the user-space event loop (CPython's asyncio/selector_events.py
and base_events.py, trio-asyncio's _base.py, are the shape).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import errno
import itertools
import os
import socket as _stdsocket
import sys
import weakref
from asyncio import constants, exceptions, futures, sslproto, transports, trsock
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import trio
import trio.testing
import trio_asyncio  # type: ignore[import-untyped]

from netstack.core.sock import SockWouldBlock
from netstack.socket.context import current, current_host
from netstack.socket.interpose import RealNetworkRefused
from netstack.socket.stdlib import _FAKE_FD_BASE, HostSocket

__all__ = [
    "SPIN_LIMIT",
    "SPIN_QUANTUM",
    "HostDatagramTransport",
    "HostEventLoop",
    "HostStreamTransport",
    "current_loop",
    "open_loop",
    "run_in_loop",
]

T = TypeVar("T")

_IPPROTO_TCP = 6
_TCP_NODELAY = 1
_PY312 = sys.version_info >= (3, 12)
_SERIALS = itertools.count()

#: Timers already due, scheduled at one virtual instant, before the loop lets
#: time pass: code that re-arms a timer "now" until the clock moves (aioquic's
#: loss detection does when ``(t + d) - d < t`` in floating point) would spin
#: forever in functional mode, where computing takes no time; on a real
#: machine the CPU time it burns moves the clock on. After this many, the loop
#: moves the (MockClock) clock by :data:`SPIN_QUANTUM` — deterministic, as the
#: count is.
SPIN_LIMIT = 64
SPIN_QUANTUM = 1e-6


def _transport_socket(sock: HostSocket) -> trsock.TransportSocket:
    """asyncio's ``TransportSocket`` view (duck-typed: it only forwards calls)."""
    return trsock.TransportSocket(sock)  # type: ignore[arg-type]


def _host_sock(sock: Any, what: str) -> HostSocket:
    if isinstance(sock, trsock.TransportSocket):
        sock = sock._sock  # type: ignore[attr-defined]
    if not isinstance(sock, HostSocket):
        raise RealNetworkRefused(
            f"{what} with {sock!r}: not a socket of an emulated host (made outside every "
            "host?); a netstack asyncio loop never reaches the machine's real network "
            "(make the socket inside the host: `await host.run_asyncio(fn)`)"
        )
    return sock


class HostEventLoop(trio_asyncio.TrioEventLoop):  # type: ignore[misc]
    """trio-asyncio's loop whose sockets, names and transports are the hosts'."""

    def __init__(self, queue_len: int | None = None) -> None:
        super().__init__(queue_len=queue_len)
        self._netstack_init()

    def _netstack_init(self) -> None:
        """netstack's state of the loop (:func:`open_loop` swaps the class of a loop
        trio-asyncio made, then calls this)."""
        #: the accept loop of each listening socket, by id()
        self._serving: dict[int, trio.CancelScope] = {}
        self._open_transports: weakref.WeakSet[_HostTransport] = weakref.WeakSet()
        #: host sockets by number, for add_reader/add_writer given a number
        self._known_fds: weakref.WeakValueDictionary[int, HostSocket] = (
            weakref.WeakValueDictionary()
        )
        self._spin_at: float | None = None
        self._spins = 0
        #: how many times a spin at one instant moved the clock on (see SPIN_LIMIT)
        self.spin_jumps = 0

    def abort_transports(self) -> None:
        """Abort every transport still open (its protocol sees ``connection_lost(None)``):
        the loop is closing, as a machine powering off closes its process's sockets."""
        for transport in sorted(self._open_transports, key=lambda t: t._serial):
            transport.abort()

    async def _wait(self, fn: Callable[[], Awaitable[None]]) -> None:
        """Wait in a Trio task (the stack's wake-ups are Trio's); cancelling the
        awaiting asyncio task cancels it."""
        await self.trio_as_future(fn)

    async def _io(self, hs: HostSocket, write: bool, fn: Callable[..., T], *args: Any) -> T:
        while True:
            try:
                return fn(*args)
            except SockWouldBlock:
                pass
            await self._wait(hs.wait_writable if write else hs.wait_readable)

    def _queue_handle(self, handle: asyncio.Handle) -> asyncio.Handle:
        if (
            isinstance(handle, asyncio.TimerHandle)
            and self._task is not None  # (a closed loop refuses the handle below)
            and handle.when() <= self.time()
        ):
            self._spun_timer()
        return super()._queue_handle(handle)  # type: ignore[no-any-return]

    def _spun_timer(self) -> None:
        """A timer already due: count it; :data:`SPIN_LIMIT` of them at one instant
        and the virtual clock moves on by :data:`SPIN_QUANTUM`."""
        now = self.time()
        if now != self._spin_at:
            self._spin_at, self._spins = now, 0
        self._spins += 1
        if self._spins < SPIN_LIMIT:
            return
        clock = trio.lowlevel.current_clock()
        if isinstance(clock, trio.testing.MockClock):
            clock.jump(SPIN_QUANTUM)
            self.spin_jumps += 1
        self._spin_at, self._spins = None, 0

    def default_exception_handler(self, context: dict[str, Any]) -> None:
        """trio-asyncio's: an unhandled error fails the loop's block (a test sees it) —
        except a ``CancelledError``, which is how Python 3.11's ``start_server``
        callback reports a connection handler cancelled when the loop closes."""
        if isinstance(context.get("exception"), asyncio.CancelledError):
            asyncio.BaseEventLoop.default_exception_handler(self, context)
            return
        super().default_exception_handler(context)

    # -- add_reader/add_writer ---------------------------------------------------------------
    def _host_fd(self, fd: Any) -> HostSocket | None:
        """The host socket *fd* names (a socket object, or the number of one this loop
        has seen), None for a descriptor of the real machine (a pipe, a file)."""
        known = self._known_fds
        if isinstance(fd, trsock.TransportSocket):
            fd = fd._sock  # type: ignore[attr-defined]
        if isinstance(fd, HostSocket):
            known[fd.fileno()] = fd
            return fd
        if isinstance(fd, int) and fd >= _FAKE_FD_BASE:
            hs = known.get(fd)
            if hs is None:
                raise OSError(
                    errno.EBADF,
                    f"{os.strerror(errno.EBADF)}: descriptor {fd} of an emulated host's "
                    "socket this loop has not seen; pass the socket object",
                )
            return hs
        return None

    def _add_reader(self, fd: Any, callback: Callable[..., object], *args: Any) -> Any:
        hs = self._host_fd(fd)
        if hs is None:
            return super()._add_reader(fd, callback, *args)

        async def wait_readable(_fd: int) -> None:
            await hs.wait_readable()

        return self._add_io_handler(self._set_read_handle, wait_readable, fd, callback, args)

    def _add_writer(self, fd: Any, callback: Callable[..., object], *args: Any) -> Any:
        hs = self._host_fd(fd)
        if hs is None:
            return super()._add_writer(fd, callback, *args)

        async def wait_writable(_fd: int) -> None:
            await hs.wait_writable()

        return self._add_io_handler(self._set_write_handle, wait_writable, fd, callback, args)

    # -- loop.sock_* -------------------------------------------------------------------------
    async def sock_recv(self, sock: Any, n: int) -> bytes:
        hs = _host_sock(sock, "loop.sock_recv()")
        return bytes((await self._io(hs, False, hs._recvmsg, n, 0))[0])

    async def sock_recv_into(self, sock: Any, buf: Any) -> int:
        hs = _host_sock(sock, "loop.sock_recv_into()")
        view = memoryview(buf).cast("B")
        data = (await self._io(hs, False, hs._recvmsg, len(view), 0))[0]
        view[: len(data)] = data
        return len(data)

    async def sock_recvfrom(self, sock: Any, bufsize: int) -> tuple[bytes, Any]:
        hs = _host_sock(sock, "loop.sock_recvfrom()")
        data, addr, _, _ = await self._io(hs, False, hs._recvmsg, bufsize, 0)
        return bytes(data), hs.format_address(addr)

    async def sock_recvfrom_into(self, sock: Any, buf: Any, nbytes: int = 0) -> tuple[int, Any]:
        hs = _host_sock(sock, "loop.sock_recvfrom_into()")
        view = memoryview(buf).cast("B")
        data, addr, _, _ = await self._io(hs, False, hs._recvmsg, nbytes or len(view), 0)
        view[: len(data)] = data
        return len(data), hs.format_address(addr)

    async def sock_sendall(self, sock: Any, data: Any) -> None:
        hs = _host_sock(sock, "loop.sock_sendall()")
        view = memoryview(data).cast("B")
        sent = 0
        while sent < len(view):
            sent += await self._io(hs, True, hs._sendmsg, view[sent:], None, 0)

    async def sock_sendto(self, sock: Any, data: Any, address: Any) -> int:
        hs = _host_sock(sock, "loop.sock_sendto()")
        dest = hs.parse_address(address, local=False)
        return int(await self._io(hs, True, hs._sendmsg, data, dest, 0))

    async def sock_connect(self, sock: Any, address: Any) -> None:
        hs = _host_sock(sock, "loop.sock_connect()")
        parsed = hs.parse_address(address, local=False)
        if hs.connect_parsed(parsed):
            return
        while True:
            await self._wait(hs.wait_writable)
            try:
                if hs.connect_result():
                    return
            except OSError as e:
                # asyncio's words (selector_events._sock_connect_cb)
                raise OSError(e.errno, f"Connect call failed {hs.format_address(parsed)}") from None

    async def sock_accept(self, sock: Any) -> tuple[HostSocket, Any]:
        hs = _host_sock(sock, "loop.sock_accept()")
        return await self._io(hs, False, hs.accept_nowait)

    async def _sock_sendfile_native(self, sock: Any, file: Any, offset: int, count: int) -> int:
        raise exceptions.SendfileNotAvailableError(
            "an emulated host's socket has no descriptor for os.sendfile"
        )

    # -- names --------------------------------------------------------------------------------
    async def getaddrinfo(
        self,
        host: Any,
        port: Any,
        *,
        family: int = 0,
        type: int = 0,  # noqa: A002
        proto: int = 0,
        flags: int = 0,
    ) -> list[Any]:
        ctx = current("asyncio loop.getaddrinfo()")
        return ctx.resolver.getaddrinfo(host, port, family, type, proto, flags)

    async def getnameinfo(self, sockaddr: tuple[Any, ...], flags: int = 0) -> tuple[str, str]:
        ctx = current("asyncio loop.getnameinfo()")
        return ctx.resolver.getnameinfo(sockaddr, flags)

    # -- transports ---------------------------------------------------------------------------
    def _make_socket_transport(
        self,
        sock: Any,
        protocol: asyncio.BaseProtocol,
        waiter: asyncio.Future[Any] | None = None,
        *,
        extra: dict[str, Any] | None = None,
        server: Any = None,
    ) -> HostStreamTransport:
        hs = _host_sock(sock, "asyncio stream transport")
        return HostStreamTransport(self, hs, protocol, waiter, extra, server)

    def _make_ssl_transport(
        self,
        rawsock: Any,
        protocol: asyncio.BaseProtocol,
        sslcontext: Any,
        waiter: asyncio.Future[Any] | None = None,
        *,
        server_side: bool = False,
        server_hostname: str | None = None,
        extra: dict[str, Any] | None = None,
        server: Any = None,
        ssl_handshake_timeout: float = constants.SSL_HANDSHAKE_TIMEOUT,
        ssl_shutdown_timeout: float = constants.SSL_SHUTDOWN_TIMEOUT,
        call_connection_made: bool = True,
    ) -> asyncio.Transport:
        hs = _host_sock(rawsock, "asyncio TLS transport")
        ssl_protocol = sslproto.SSLProtocol(
            self,
            protocol,
            sslcontext,
            waiter,  # type: ignore[arg-type]  # None is what the selector loop passes too
            server_side,
            server_hostname,
            ssl_handshake_timeout=ssl_handshake_timeout,  # type: ignore[arg-type]
            ssl_shutdown_timeout=ssl_shutdown_timeout,
        )
        HostStreamTransport(self, hs, ssl_protocol, None, extra, server)
        return ssl_protocol._app_transport

    def _make_datagram_transport(
        self,
        sock: Any,
        protocol: asyncio.BaseProtocol,
        address: Any = None,
        waiter: asyncio.Future[Any] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> HostDatagramTransport:
        hs = _host_sock(sock, "asyncio datagram transport")
        return HostDatagramTransport(self, hs, protocol, address, waiter, extra)

    # -- servers ------------------------------------------------------------------------------
    def _start_serving(
        self,
        protocol_factory: Callable[[], asyncio.BaseProtocol],
        sock: Any,
        sslcontext: Any = None,
        server: Any = None,
        backlog: int = 100,
        ssl_handshake_timeout: float = constants.SSL_HANDSHAKE_TIMEOUT,
        ssl_shutdown_timeout: float = constants.SSL_SHUTDOWN_TIMEOUT,
    ) -> None:
        hs = _host_sock(sock, "asyncio server")
        scope = trio.CancelScope()
        self._serving[id(hs)] = scope
        args = (protocol_factory, sslcontext, server, backlog)
        timeouts = (ssl_handshake_timeout, ssl_shutdown_timeout)
        self.run_trio_task(self._accept_loop, scope, hs, args, timeouts)

    async def _accept_loop(
        self,
        scope: trio.CancelScope,
        hs: HostSocket,
        args: tuple[Any, Any, Any, int],
        timeouts: tuple[float, float],
    ) -> None:
        protocol_factory, sslcontext, server, backlog = args
        with scope:
            while True:
                await hs.wait_readable()
                for _ in range(backlog):  # as selector_events._accept_connection
                    try:
                        conn, addr = hs.accept_nowait()
                    except SockWouldBlock:
                        break
                    except OSError as exc:
                        self.call_exception_handler(
                            {"message": "socket.accept() out of system resource",
                             "exception": exc, "socket": _transport_socket(hs)}
                        )  # fmt: skip
                        break
                    conn.setblocking(False)
                    self.create_task(
                        self._accept_connection2(
                            protocol_factory,
                            conn,
                            {"peername": addr},
                            sslcontext,
                            server,
                            *timeouts,
                        )
                    )

    def _stop_serving(self, sock: Any) -> None:
        hs = _host_sock(sock, "asyncio server")
        scope = self._serving.pop(id(hs), None)
        if scope is not None:
            scope.cancel()
        hs.close()


# asyncio's private helpers the selector transports use (not in typeshed)
_FlowControlMixin: Any = vars(transports)["_FlowControlMixin"]
_set_result_unless_cancelled: Callable[..., None] = vars(futures)["_set_result_unless_cancelled"]


class _HostTransport(_FlowControlMixin):  # type: ignore[misc]
    """What the stream and datagram transports share (selector_events._SelectorTransport)."""

    max_size = 256 * 1024

    def __init__(
        self,
        loop: HostEventLoop,
        sock: HostSocket,
        protocol: asyncio.BaseProtocol,
        extra: dict[str, Any] | None,
        server: Any,
    ) -> None:
        super().__init__(extra, loop)
        self._loop: HostEventLoop = loop
        self._extra["socket"] = _transport_socket(sock)
        try:
            self._extra["sockname"] = sock.getsockname()
        except OSError:
            self._extra["sockname"] = None
        if "peername" not in self._extra:
            try:
                self._extra["peername"] = sock.getpeername()
            except OSError:
                self._extra["peername"] = None
        self._sock = sock
        self._protocol: Any = protocol
        self._protocol_connected = True
        self._server = server
        self._conn_lost = 0
        self._closing = False
        self._paused = False
        self._read_scope: trio.CancelScope | None = None
        self._writing = False
        self._serial = next(_SERIALS)
        loop._open_transports.add(self)
        if server is not None:
            if _PY312:
                server._attach(self)
            else:
                server._attach()

    def __repr__(self) -> str:
        state = "closed" if self._sock.closed else "closing" if self._closing else "open"
        return f"<{type(self).__name__} {state} sock={self._sock!r}>"

    # -- protocol ------------------------------------------------------------------------------
    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._protocol = protocol
        self._protocol_connected = True

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._protocol  # type: ignore[no-any-return]

    def is_closing(self) -> bool:
        return self._closing

    # -- reading -------------------------------------------------------------------------------
    def is_reading(self) -> bool:
        return not self._paused and not self._closing

    def pause_reading(self) -> None:
        if not self.is_reading():
            return
        self._paused = True
        self._stop_reading()

    def resume_reading(self) -> None:
        if self._closing or not self._paused:
            return
        self._paused = False
        self._start_reading()

    def _start_reading(self) -> None:
        if self._closing or self._paused or self._read_scope is not None:
            return
        scope = self._read_scope = trio.CancelScope()
        self._loop.run_trio_task(self._read_loop, scope)

    def _stop_reading(self) -> None:
        if self._read_scope is not None:
            self._read_scope.cancel()
            self._read_scope = None

    async def _read_loop(self, scope: trio.CancelScope) -> None:
        with scope:
            sock = self._sock
            while not sock.closed:
                try:
                    await sock.wait_readable()
                except OSError as exc:  # closed under the transport (EBADF)
                    self._fatal_error(exc, "Fatal read error on socket transport")
                    return
                self._read_ready()

    def _read_ready(self) -> None:
        raise NotImplementedError

    # -- writing -------------------------------------------------------------------------------
    def get_write_buffer_size(self) -> int:
        raise NotImplementedError

    def _start_writing(self) -> None:
        if not self._writing:
            self._writing = True
            self._loop.run_trio_task(self._write_loop)

    async def _write_loop(self) -> None:
        try:
            while self.get_write_buffer_size() and not self._sock.closed:
                try:
                    await self._sock.wait_writable()
                except OSError as exc:  # closed under the transport (EBADF)
                    self._fatal_error(exc, "Fatal write error on socket transport")
                    return
                self._write_ready()
        finally:
            self._writing = False

    def _write_ready(self) -> None:
        raise NotImplementedError

    # -- end of life ---------------------------------------------------------------------------
    def abort(self) -> None:
        self._force_close(None)

    def _fatal_error(self, exc: BaseException, message: str) -> None:
        # as selector_events: OSErrors are the network's doing (logged only in debug)
        if not isinstance(exc, OSError):
            self._loop.call_exception_handler(
                {"message": message, "exception": exc, "transport": self,
                 "protocol": self._protocol}
            )  # fmt: skip
        self._force_close(exc)

    def _clear_buffer(self) -> None:
        raise NotImplementedError

    def _force_close(self, exc: BaseException | None) -> None:
        if self._conn_lost:
            return
        self._clear_buffer()
        if not self._closing:
            self._closing = True
            self._stop_reading()
        self._conn_lost += 1
        self._loop.call_soon(self._call_connection_lost, exc)

    def _call_connection_lost(self, exc: BaseException | None) -> None:
        try:
            if self._protocol_connected:
                self._protocol.connection_lost(exc)
        finally:
            self._sock.close()
            server = self._server
            if server is not None:
                if _PY312:
                    server._detach(self)
                else:
                    server._detach()
                self._server = None


class HostStreamTransport(_HostTransport):
    """An asyncio stream transport over a host's TCP socket
    (selector_events._SelectorSocketTransport)."""

    _sendfile_compatible = constants._SendfileMode.FALLBACK

    def __init__(
        self,
        loop: HostEventLoop,
        sock: HostSocket,
        protocol: asyncio.BaseProtocol,
        waiter: asyncio.Future[Any] | None,
        extra: dict[str, Any] | None,
        server: Any,
    ) -> None:
        super().__init__(loop, sock, protocol, extra, server)
        self._buffer: collections.deque[bytes] = collections.deque()
        self._buffer_size = 0
        self._eof = False
        with contextlib.suppress(OSError):  # asyncio sets TCP_NODELAY on its TCP transports
            sock.setsockopt(_IPPROTO_TCP, _TCP_NODELAY, 1)
        self._loop.call_soon(self._protocol.connection_made, self)
        self._loop.call_soon(self._start_reading)
        if waiter is not None:
            self._loop.call_soon(_set_result_unless_cancelled, waiter, None)

    def _read_ready(self) -> None:
        if self._closing:
            return
        protocol = self._protocol
        buffered = isinstance(protocol, asyncio.BufferedProtocol)
        try:
            if buffered:
                buf = memoryview(protocol.get_buffer(-1)).cast("B")
                if not len(buf):
                    raise RuntimeError("get_buffer() returned an empty buffer")
                data = self._sock._recvmsg(len(buf), 0)[0]
            else:
                data = self._sock._recvmsg(self.max_size, 0)[0]
        except SockWouldBlock:
            return
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            self._fatal_error(exc, "Fatal read error on socket transport")
            return
        if not data:
            self._read_ready_on_eof()
            return
        try:
            if buffered:
                buf[: len(data)] = data
                protocol.buffer_updated(len(data))
            else:
                protocol.data_received(bytes(data))
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            self._fatal_error(exc, "Fatal error: protocol.data_received() call failed.")

    def _read_ready_on_eof(self) -> None:
        try:
            keep_open = self._protocol.eof_received()
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            self._fatal_error(exc, "Fatal error: protocol.eof_received() call failed.")
            return
        if keep_open:
            # the peer can no longer send: stop reading, keep the transport open
            self._stop_reading()
            self._paused = True
        else:
            self.close()

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(
                f"data argument must be a bytes-like object, not {type(data).__name__!r}"
            )
        if self._eof:
            raise RuntimeError("Cannot call write() after write_eof()")
        if self._conn_lost:
            self._conn_lost += 1
            return
        if not data:
            return
        view = memoryview(data).cast("B")
        if not self._buffer:
            try:
                n = self._sock._sendmsg(view, None, 0)
            except SockWouldBlock:
                n = 0
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:
                self._fatal_error(exc, "Fatal write error on socket transport")
                return
            view = view[n:]
            if not view:
                return
            self._start_writing()
        self._buffer.append(bytes(view))
        self._buffer_size += len(view)
        self._maybe_pause_protocol()

    def writelines(self, list_of_data: Any) -> None:
        self.write(b"".join(bytes(d) for d in list_of_data))

    def _write_ready(self) -> None:
        while self._buffer:
            chunk = self._buffer[0]
            try:
                n = self._sock._sendmsg(chunk, None, 0)
            except SockWouldBlock:
                return
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:
                self._clear_buffer()
                self._fatal_error(exc, "Fatal write error on socket transport")
                return
            self._buffer_size -= n
            if n < len(chunk):
                self._buffer[0] = chunk[n:]
                self._maybe_resume_protocol()
                return
            self._buffer.popleft()
        self._maybe_resume_protocol()
        if self._closing:
            self._call_connection_lost(None)
        elif self._eof:
            self._sock.shutdown(_stdsocket.SHUT_WR)

    def get_write_buffer_size(self) -> int:
        return self._buffer_size

    def _clear_buffer(self) -> None:
        self._buffer.clear()
        self._buffer_size = 0

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        if self._closing or self._eof:
            return
        self._eof = True
        if not self._buffer:
            self._sock.shutdown(_stdsocket.SHUT_WR)

    def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        self._stop_reading()
        if not self._buffer:
            self._conn_lost += 1
            self._loop.call_soon(self._call_connection_lost, None)


class HostDatagramTransport(_HostTransport, transports.DatagramTransport):
    """An asyncio datagram transport over a host's UDP socket
    (selector_events._SelectorDatagramTransport)."""

    def __init__(
        self,
        loop: HostEventLoop,
        sock: HostSocket,
        protocol: asyncio.BaseProtocol,
        address: Any,
        waiter: asyncio.Future[Any] | None,
        extra: dict[str, Any] | None,
    ) -> None:
        super().__init__(loop, sock, protocol, extra, None)
        self._address = address
        self._buffer: collections.deque[tuple[bytes, Any]] = collections.deque()
        self._buffer_size = 0
        self._loop.call_soon(self._protocol.connection_made, self)
        self._loop.call_soon(self._start_reading)
        if waiter is not None:
            self._loop.call_soon(_set_result_unless_cancelled, waiter, None)

    def get_write_buffer_size(self) -> int:
        return self._buffer_size

    def _clear_buffer(self) -> None:
        self._buffer.clear()
        self._buffer_size = 0

    def _read_ready(self) -> None:
        if self._closing:
            return
        try:
            data, addr, _, _ = self._sock._recvmsg(self.max_size, 0)
        except SockWouldBlock:
            return
        except OSError as exc:
            self._protocol.error_received(exc)
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            self._fatal_error(exc, "Fatal read error on datagram transport")
        else:
            self._protocol.datagram_received(bytes(data), self._sock.format_address(addr))

    def sendto(self, data: Any, addr: Any = None) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(
                f"data argument must be a bytes-like object, not {type(data).__name__!r}"
            )
        if self._address:
            if addr not in (None, self._address):
                raise ValueError(f"Invalid address: must be None or {self._address}")
            addr = None
        if self._conn_lost and self._address:
            self._conn_lost += 1
            return
        if not self._buffer:
            try:
                self._send(bytes(data), addr)
                return
            except SockWouldBlock:
                self._start_writing()
            except OSError as exc:
                self._protocol.error_received(exc)
                return
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:
                self._fatal_error(exc, "Fatal write error on datagram transport")
                return
        self._buffer.append((bytes(data), addr))
        self._buffer_size += len(data)
        self._maybe_pause_protocol()

    def _send(self, data: bytes, addr: Any) -> None:
        sock = self._sock
        dest = None if addr is None else sock.parse_address(addr, local=False)
        sock._sendmsg(data, dest, 0)

    def _write_ready(self) -> None:
        while self._buffer:
            data, addr = self._buffer[0]
            try:
                self._send(data, addr)
            except SockWouldBlock:
                return
            except OSError as exc:
                self._buffer.popleft()
                self._buffer_size -= len(data)
                self._protocol.error_received(exc)
                return
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:
                self._fatal_error(exc, "Fatal write error on datagram transport")
                return
            self._buffer.popleft()
            self._buffer_size -= len(data)
        self._maybe_resume_protocol()
        if self._closing:
            self._call_connection_lost(None)

    def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        self._stop_reading()
        if not self._buffer:
            self._conn_lost += 1
            self._loop.call_soon(self._call_connection_lost, None)


def current_loop() -> HostEventLoop | None:
    """The netstack asyncio loop of the calling Trio task, if one is open."""
    loop = trio_asyncio.current_loop.get()
    return loop if isinstance(loop, HostEventLoop) else None


@contextlib.asynccontextmanager
async def open_loop() -> AsyncIterator[HostEventLoop]:
    """``trio_asyncio.open_loop()`` whose sockets and names are the hosts': asyncio code
    run on it inside a host (``async with host.as_current():``) reaches that host."""
    async with trio_asyncio.open_loop() as loop:
        loop.__class__ = HostEventLoop
        loop._netstack_init()
        try:
            yield loop
        finally:
            loop.abort_transports()


async def run_in_loop(
    loop: HostEventLoop, fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any
) -> T:
    """``await fn(*args, **kwargs)`` as an asyncio task of *loop*, from Trio (the task
    copies the calling task's context: its current host)."""
    token = trio_asyncio.current_loop.set(loop)
    try:
        return await loop.run_aio_coroutine(fn(*args, **kwargs))  # type: ignore[no-any-return]
    finally:
        trio_asyncio.current_loop.reset(token)


async def serve_loop(*, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Open a netstack asyncio loop, hand it to ``nursery.start``'s caller and keep it
    open until cancelled (a lab's loop: :meth:`netstack.Lab.asyncio_loop`)."""
    current_host.set(None)  # the loop itself belongs to no host; its tasks carry theirs
    async with open_loop() as loop:
        task_status.started(loop)
        await trio.sleep_forever()
