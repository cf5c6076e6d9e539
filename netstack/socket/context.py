"""The current host: which emulated machine a task's socket calls reach.

Theory of operation: a :class:`HostContext` names one host's stack (its
``Net``) and its resolver. ``current_host`` is a :class:`contextvars.ContextVar`
holding the context of the host a task runs "inside": ``host.as_current()``
sets it for a block, ``host.run``/``host.start_soon`` for a task; Trio copies
a task's context into the tasks it spawns, so a server's connection handlers
stay on the server's host. Everything that turns a user's socket call into a
call on the emulated stack (the Trio socket factory and resolver, the
standard-library facade, the guard against real sockets) reads it here, and
nothing else decides which host a call reaches.

Outside every host there is no emulated network: the adapters refuse with
:class:`NoCurrentHost` rather than fall back to the machine's real one.
"""

from __future__ import annotations

import contextvars
import threading
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.socket.resolver import Resolver

__all__ = ["HostContext", "NoCurrentHost", "current", "current_host"]


@attrs.frozen(eq=False)
class HostContext:
    """One host, as the socket adapters see it."""

    name: str
    net: Net
    resolver: Resolver
    #: the thread that runs the lab (Trio's); socket code elsewhere is refused
    thread: int = attrs.field(factory=threading.get_ident)


current_host: contextvars.ContextVar[HostContext | None] = contextvars.ContextVar(
    "netstack_current_host", default=None
)


class NoCurrentHost(RuntimeError):
    """A socket was asked for outside every host of a lab.

    Not an ``OSError`` on purpose: libraries retry or swallow those, and this
    is a mistake in the test, not a network condition.
    """


def current(what: str = "socket") -> HostContext:
    """The current host's context, or :class:`NoCurrentHost` with the way to set one."""
    ctx = current_host.get()
    if ctx is None:
        raise NoCurrentHost(
            f"{what} outside any host of a netstack lab: run this code inside one "
            "(`async with host.as_current():`, `await host.run(fn)`, `host.start_soon(fn)`); "
            "a lab never falls back to the machine's real network"
        )
    return ctx
