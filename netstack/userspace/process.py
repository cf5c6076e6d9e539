"""What a user-space tool runs with: the host it runs on, and its process's terminal.

Theory of operation: every tool has one entry point,

    async def main(proc: Process, host: Machine, argv: list[str]) -> int

that parses *argv* (the words after the command's name) as the upstream tool
does, writes what it would print on stdout and stderr through ``proc.out`` and
``proc.err`` (one call per line or block; the writer adds the newline), and
returns the tool's exit status. A bad command line the tool rejects in its own
words may also raise :class:`~netstack.errors.ConfigError` with that text (the
library functions the Python API calls do), and whoever runs the entry (the
lab's session) prints it and picks the status, as today.

The two protocols here are all a tool may assume about its surroundings, so
user space does not import the host or the lab above it:

* :class:`Machine` is the host as its programs see it: a kernel (the
  :class:`~netstack.core.net.Net`), its sockets, its packet taps (what
  ``AF_PACKET`` gives ``tcpdump``) and its name. :class:`netstack.Host`
  satisfies it.
* :class:`Process` is what the program's process gets from the system: file
  descriptors 1 and 2, Ctrl-C (a cancel scope that fires on SIGINT),
  whether it runs in the background (``&``), ``/etc/hosts`` (:meth:`resolve`),
  files it keeps between runs (``nstat``'s history: :attr:`state`), the other
  machines of the network (``netperf`` finds the host that serves its
  netserver) and the service manager (``netserver`` starts as a daemon). The
  lab's :class:`~netstack.labs.session.Context` satisfies it.

The shell's command table maps names to these entries; the host's Python API
(``host.ip("…")``, ``await host.ping(…)``) calls the same tools' library
functions (``ip(net, command)``, ``ping(net, destination, …)``) that the
entries call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import trio

    from netstack.core.net import Net
    from netstack.socket import Socket

__all__ = ["Machine", "PacketTap", "Process", "ToolMain"]


class PacketTap(Protocol):
    """A running capture on one device (``host.capture(…)``)."""

    def stop(self) -> None: ...


class Machine(Protocol):
    """The host a tool runs on, as its programs see it."""

    @property
    def name(self) -> str: ...

    @property
    def net(self) -> Net: ...

    @property
    def captures(self) -> list[Any]: ...

    def socket(self, family: int = ..., type: int = ..., proto: int = ...) -> Socket:  # noqa: A002
        """A socket on this machine (``socket(2)``)."""
        ...

    def capture(
        self,
        dev: str,
        path: str | Path | None = None,
        *,
        keep: bool = False,
        snaplen: int = ...,
        callback: Callable[[float, bytes, bool], None] | None = None,
    ) -> PacketTap:
        """A packet tap on *dev* (``AF_PACKET``/``ETH_P_ALL``), kept in :attr:`captures`."""
        ...


class Process(Protocol):
    """What a running tool's process gets from the system (see the module docstring)."""

    @property
    def out(self) -> Callable[[str], None]:
        """Write a line (or block) to stdout; the newline is added."""
        ...

    @property
    def err(self) -> Callable[[str], None]:
        """Write a line (or block) to stderr; the newline is added."""
        ...

    @property
    def interrupt(self) -> trio.CancelScope:
        """Cancelled on Ctrl-C: long-running tools run inside it and print their summary."""
        ...

    @property
    def background(self) -> bool:
        """The tool runs as a background job (no progress bars)."""
        ...

    @property
    def state(self) -> dict[str, Any]:
        """Files tools keep between runs (``nstat``'s history), by tool."""
        ...

    def resolve(self, name: str) -> str | None:
        """``/etc/hosts``: a host name → its first IPv4 address."""
        ...

    def peers(self) -> Iterable[Machine]:
        """Every machine on the network (``netperf`` looks for its netserver's)."""
        ...

    async def start_daemon(self, fn: Callable[..., Awaitable[Any]]) -> Any:
        """Start a daemon (``nursery.start(fn)``): returns what *fn* reports as started."""
        ...


ToolMain = Callable[[Process, Machine, list[str]], Awaitable[int]]
"""A tool's entry point: ``await main(proc, host, argv)`` → exit status."""
