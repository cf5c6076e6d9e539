"""Inside a host, the standard library's socket module is the host's; real sockets are refused.

Theory of operation: some code makes its sockets with the standard library
and hands them to Trio afterwards (AnyIO's ``create_tcp_listener``: a
``socket.socket`` bound and listening, then ``trio.socket.from_stdlib_socket``;
servers that pre-bind; ``socket.create_connection``). While a lab has a task
inside a host, :func:`acquire` replaces four names of the ``socket`` module and
one of ``trio.socket`` with versions that ask :mod:`netstack.socket.context`
first:

* ``socket.socket(...)`` inside a host is a
  :class:`~netstack.socket.stdlib.HostSocket` of that host (outside: the real
  class, untouched — a subclass, so ``isinstance`` keeps working);
* ``socket.getaddrinfo`` and ``socket.gethostbyname`` inside a host answer from
  the host's resolver (Trio's numeric fast path calls the former too);
* ``socket.gethostname()`` inside a host is the host's name;
* ``trio.socket.from_stdlib_socket(s)`` of a ``HostSocket`` is a
  :class:`~netstack.socket.trio_socket.TrioSocket`;
* ``time.monotonic()`` and ``time.time()`` (and their ``_ns`` forms) inside a
  host on a lab's virtual clock (Trio's ``MockClock``) read that clock —
  ``time.time()`` as seconds since :data:`VIRTUAL_EPOCH` — so a library that
  measures its own timeouts (dnspython does, with ``time.time()``) sees the
  lab's time, and a run repeats exactly.

And a ``sys.addaudithook`` hook (installed once per process: audit hooks
cannot be removed) refuses, with :class:`RealNetworkRefused`, anything that
would still reach the real network from inside a host: a real socket being
created (``_socket.socket``, a ``fileno=``), a real socket's ``bind``,
``connect``, ``sendto``/``sendmsg``, and name lookups that bypass the module
(``gethostbyaddr``, ``getnameinfo`` of a name, ``_socket.getaddrinfo``). The
bug users fear most — a test that silently talks to the internet — cannot
happen from a host; outside hosts nothing changes.

:func:`release` puts the module back when the last lab that acquired it
closes. This is the one piece of process-wide state in netstack (the socket
module is process-wide); the count lives in :data:`_STATE`.

Kernel: none — the user-space side of a network namespace.
"""

from __future__ import annotations

import socket as _stdsocket
import sys
import threading
import time as _time
from typing import Any, Final

import trio
import trio.testing

from netstack.socket.context import HostContext, current_host
from netstack.socket.stdlib import BlockingCallRefused, HostSocket, host_socket
from netstack.socket.trio_socket import TrioSocket

__all__ = ["VIRTUAL_EPOCH", "RealNetworkRefused", "acquire", "active", "release"]

_REAL_SOCKET: Final = _stdsocket.socket
_REAL_GETADDRINFO: Final = _stdsocket.getaddrinfo
_REAL_GETHOSTBYNAME: Final = _stdsocket.gethostbyname
_REAL_GETHOSTNAME: Final = _stdsocket.gethostname
_REAL_FROM_STDLIB: Final = trio.socket.from_stdlib_socket
_REAL_TIME: Final = _time.time
_REAL_TIME_NS: Final = _time.time_ns
_REAL_MONOTONIC: Final = _time.monotonic
_REAL_MONOTONIC_NS: Final = _time.monotonic_ns

#: What ``time.time()`` reads at virtual time 0 inside a host: 2024-01-01T00:00:00Z.
VIRTUAL_EPOCH: Final = 1_704_067_200

_AI_NUMERIC: Final = _stdsocket.AI_NUMERICHOST
_NI_NUMERICHOST: Final = _stdsocket.NI_NUMERICHOST


class RealNetworkRefused(RuntimeError):
    """Code inside a host tried to use the machine's real network."""


class _State:
    def __init__(self) -> None:
        self.count = 0
        self.hook = False
        self.lock = threading.Lock()


_STATE: Final = _State()


def _ctx_for(what: str) -> HostContext | None:
    ctx = current_host.get()
    if ctx is not None and threading.get_ident() != ctx.thread:
        raise BlockingCallRefused(
            f"{what} in a worker thread cannot reach host {ctx.name!r}: the emulated "
            "network runs in the Trio thread (use async code in the host's task)"
        )
    return ctx


class socket(_stdsocket.socket):
    """``socket.socket`` while a lab runs: a host's socket inside a host."""

    def __new__(
        cls,
        family: int = -1,
        type: int = -1,  # noqa: A002
        proto: int = -1,
        fileno: int | None = None,
    ) -> Any:
        if fileno is None:
            ctx = _ctx_for("socket.socket()")
            if ctx is not None:
                return host_socket(ctx, family, type, proto)
        return super().__new__(cls, family, type, proto, fileno)  # type: ignore[call-arg]


def getaddrinfo(
    host: Any,
    port: Any,
    family: int = 0,
    type: int = 0,  # noqa: A002
    proto: int = 0,
    flags: int = 0,
) -> list[Any]:
    """``socket.getaddrinfo``; inside a host, the host's resolver answers."""
    ctx = _ctx_for("socket.getaddrinfo()")
    if ctx is None:
        return list(_REAL_GETADDRINFO(host, port, family, type, proto, flags))
    return ctx.resolver.getaddrinfo(host, port, family, type, proto, flags)


def gethostbyname(hostname: str) -> str:
    """``socket.gethostbyname``; inside a host, the host's resolver answers (IPv4)."""
    ctx = _ctx_for("socket.gethostbyname()")
    if ctx is None:
        return _REAL_GETHOSTBYNAME(hostname)
    return str(ctx.resolver.getaddrinfo(hostname, None, _stdsocket.AF_INET)[0][4][0])


def gethostname() -> str:
    """``socket.gethostname``; inside a host, its name."""
    ctx = current_host.get()
    if ctx is None:
        return _REAL_GETHOSTNAME()
    return str(ctx.name)


def from_stdlib_socket(sock: Any) -> trio.socket.SocketType:
    """``trio.socket.from_stdlib_socket``, which also takes a host's socket."""
    if isinstance(sock, HostSocket):
        return TrioSocket(sock)
    return _REAL_FROM_STDLIB(sock)


def _virtual_now() -> float | None:
    """The lab's virtual time, if the caller is a host's code on a MockClock."""
    ctx = current_host.get()
    if ctx is None or threading.get_ident() != ctx.thread:
        return None
    try:
        clock = trio.lowlevel.current_clock()
    except RuntimeError:
        return None
    if not isinstance(clock, trio.testing.MockClock):
        return None
    return clock.current_time()


def monotonic() -> float:
    """``time.monotonic``; inside a host on a virtual clock, that clock."""
    now = _virtual_now()
    return _REAL_MONOTONIC() if now is None else now


def monotonic_ns() -> int:
    now = _virtual_now()
    return _REAL_MONOTONIC_NS() if now is None else int(now * 1e9)


def time() -> float:
    """``time.time``; inside a host on a virtual clock, :data:`VIRTUAL_EPOCH` + that clock."""
    now = _virtual_now()
    return _REAL_TIME() if now is None else VIRTUAL_EPOCH + now


def time_ns() -> int:
    now = _virtual_now()
    return _REAL_TIME_NS() if now is None else VIRTUAL_EPOCH * 10**9 + int(now * 1e9)


# audit events that reach the real network: (event, index of a flags argument that,
# with the numeric bit set, makes the call harmless, that bit)
_REFUSED: Final = {
    "socket.__new__": None,
    "socket.bind": None,
    "socket.connect": None,
    "socket.sendto": None,
    "socket.sendmsg": None,
    "socket.gethostbyname": None,
    "socket.gethostbyaddr": None,
    "socket.getaddrinfo": (5, _AI_NUMERIC),
    "socket.getnameinfo": (1, _NI_NUMERICHOST),
}


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event.startswith("socket.") and event in _REFUSED and current_host.get() is not None:
        exempt = _REFUSED[event]
        if exempt is not None:
            index, bit = exempt
            if len(args) > index and isinstance(args[index], int) and args[index] & bit:
                return
        if event == "socket.getaddrinfo" and _numeric(args[0]):
            return
        if (
            event == "socket.__new__"
            and len(args) > 1
            and args[1] == getattr(_stdsocket, "AF_UNIX", 1)
        ):
            return  # local IPC, no network
        ctx = current_host.get()
        raise RealNetworkRefused(
            f"{event}: a real socket call inside host {ctx.name if ctx else '?'!r} of a "
            "netstack lab would reach the machine's real network; netstack refuses it "
            "(make the socket inside the host: socket.socket() / trio.socket there are the host's)"
        )


def _numeric(host: Any) -> bool:
    if host is None:
        return True
    text = host.decode() if isinstance(host, bytes) else str(host)
    for fam in (_stdsocket.AF_INET, _stdsocket.AF_INET6):
        try:
            _stdsocket.inet_pton(fam, text.partition("%")[0])
            return True
        except (OSError, ValueError):
            pass
    return False


def acquire() -> None:
    """Put the host-aware names in place (counted; see :func:`release`)."""
    with _STATE.lock:
        if not _STATE.hook:
            sys.addaudithook(_audit)
            _STATE.hook = True
        _STATE.count += 1
        if _STATE.count == 1:
            _stdsocket.socket = socket  # type: ignore[misc]
            _stdsocket.getaddrinfo = getaddrinfo
            _stdsocket.gethostbyname = gethostbyname
            _stdsocket.gethostname = gethostname
            trio.socket.from_stdlib_socket = from_stdlib_socket
            _time.time = time
            _time.time_ns = time_ns
            _time.monotonic = monotonic
            _time.monotonic_ns = monotonic_ns


def release() -> None:
    """Undo one :func:`acquire`; the last one restores the real names."""
    with _STATE.lock:
        if _STATE.count == 0:
            return
        _STATE.count -= 1
        if _STATE.count == 0:
            _stdsocket.socket = _REAL_SOCKET  # type: ignore[misc]
            _stdsocket.getaddrinfo = _REAL_GETADDRINFO
            _stdsocket.gethostbyname = _REAL_GETHOSTBYNAME
            _stdsocket.gethostname = _REAL_GETHOSTNAME
            trio.socket.from_stdlib_socket = _REAL_FROM_STDLIB
            _time.time = _REAL_TIME
            _time.time_ns = _REAL_TIME_NS
            _time.monotonic = _REAL_MONOTONIC
            _time.monotonic_ns = _REAL_MONOTONIC_NS


def active() -> bool:
    """Whether the host-aware names are in place."""
    return _STATE.count > 0
