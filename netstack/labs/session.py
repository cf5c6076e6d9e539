"""A command session over a lab: what the shell, lab files and checks run lines through.

Theory of operation: :meth:`Session.run_line` takes one line as a user types
it and returns its exit status, as a shell would:

* ``a ip -s link`` runs ``ip -s link`` on host ``a``; a bare ``a`` makes ``a``
  the current host (the prompt becomes ``a#``) and ``exit`` leaves it again,
  like ``ip netns exec a bash``; with a current host, ``ip link`` runs there;
* at the lab prompt, ``ping a b`` is also accepted for ``a ping b`` (the
  host may follow the command name);
* host names resolve as if every host had the others in ``/etc/hosts``
  (``a ping b`` pings b's first IPv4 address);
* a trailing ``&`` runs the command as a background job (``jobs``, ``kill
  %1``, ``wait``), a leading ``!`` inverts the status (for checks);
* unknown commands answer ``NAME: command not found`` (127); a bad line never
  raises: errors are printed the way the Linux tool prints them, and the
  status says it failed.

**Virtual time.** Commands run in the lab's virtual time. When the session
manages the clock (the interactive shell does), time stands still between
commands — the lab is frozen while the prompt waits, so no timer runs away
while a user thinks — and runs while a command runs: ``ping -c 3`` advances
it by about two seconds, ``sleep 5`` by five. Background jobs therefore make
progress only while a foreground command (or ``sleep``/``wait``) runs. With
``pace=0`` (default) virtual time jumps from event to event as fast as the
machine allows; ``pace=1`` makes it follow the wall clock (``ping`` then
prints one line a second, as on Linux).
"""

from __future__ import annotations

import errno
import math
import shlex
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

import attrs
import trio
import trio.testing

from netstack.errors import ConfigError, NetstackError
from netstack.labs.commands import Command, CommandTable, default_commands

if TYPE_CHECKING:
    from netstack.host import Host, Lab

__all__ = ["Context", "Job", "Session"]

Writer = Callable[[str], None]


@attrs.define(eq=False)
class Context:
    """What a running command sees: its session, host, output streams and interrupt.

    Attributes:
        session: the session running the command.
        host: the host it runs on (None for lab-level commands).
        out: write text to stdout (a newline is added).
        err: write text to stderr (a newline is added).
        interrupt: cancelled when the user presses Ctrl-C; long-running
            commands run inside it and print their summary when it fires.
        background: the command runs as a job (``&``).
    """

    session: Session
    host: Host | None
    out: Writer
    err: Writer
    interrupt: trio.CancelScope
    background: bool = False

    @property
    def lab(self) -> Lab:
        return self.session.lab

    def need_host(self) -> Host:
        assert self.host is not None, "host command run without a host"
        return self.host

    def resolve(self, name: str) -> str | None:
        """A host name → its first IPv4 address (the lab's ``/etc/hosts``)."""
        return self.session.resolve(name)

    # -- what a user-space tool's process gets (netstack.userspace.process.Process) ----------
    @property
    def state(self) -> dict[str, Any]:
        """Files tools keep between runs (``nstat``'s history): the session's, by tool."""
        return self.session.state

    def peers(self) -> Iterable[Host]:
        """Every host of the lab."""
        return self.lab.hosts.values()

    async def start_daemon(self, fn: Callable[..., Awaitable[Any]]) -> Any:
        """Start *fn* in the session's nursery (``nursery.start``): a daemon outliving us."""
        return await self.session.nursery.start(fn)


@attrs.define(eq=False)
class Job:
    """A background command (``a tcpdump -i eth0 &``)."""

    number: int
    line: str
    scope: trio.CancelScope
    interrupt: trio.CancelScope
    status: int | None = None
    reported: bool = False
    done: trio.Event = attrs.Factory(trio.Event)


class Session:
    """Runs command lines on a lab (see the module docstring for the rules).

    Args:
        lab: the lab.
        nursery: where background jobs run (must outlive the session's use).
        out: where commands write their output (default: print to stdout).
        err: where commands write their errors (default: print to stderr).
        commands: the command table (default: :func:`netstack.labs.commands.default_commands`).
        clock: the lab's MockClock, if the session should freeze time between
            commands (the interactive shell); None leaves the clock alone.
        pace: virtual seconds per wall second while a command runs (0: jump).
    """

    def __init__(
        self,
        lab: Lab,
        nursery: trio.Nursery,
        *,
        out: Writer | None = None,
        err: Writer | None = None,
        commands: CommandTable | None = None,
        clock: trio.testing.MockClock | None = None,
        pace: float = 0.0,
    ) -> None:
        self.lab = lab
        self.nursery = nursery
        self.out: Writer = out or (lambda s: print(s, flush=True))
        self.err: Writer = err or _stderr
        self.commands = commands if commands is not None else default_commands()
        self.clock = clock
        self.pace = pace
        self.current: Host | None = None
        self.jobs: dict[int, Job] = {}
        self.exit_requested = False
        self.last_status = 0
        self.state: dict[str, Any] = {}  # per-session tool state (nstat history…)
        if clock is not None:
            self.freeze()

    # -- virtual time ------------------------------------------------------------------------
    def freeze(self) -> None:
        """Stop virtual time (the prompt is waiting)."""
        if self.clock is not None:
            self.clock.autojump_threshold = math.inf
            self.clock.rate = 0

    def thaw(self) -> None:
        """Let virtual time run (a command is running)."""
        if self.clock is not None:
            if self.pace > 0:
                self.clock.rate = self.pace
            else:
                self.clock.autojump_threshold = 0

    async def settle(self) -> None:
        """Let every task run until all wait for time or input (nothing left to do now)."""
        await trio.testing.wait_all_tasks_blocked()

    # -- names ------------------------------------------------------------------------------
    def resolve(self, name: str) -> str | None:
        host = self.lab.hosts.get(name)
        if host is None:
            return None
        for dev in host.devices:
            if dev.name == "lo":
                continue
            try:
                return host.addr(dev.name)
            except NetstackError:
                continue
        return None

    @property
    def prompt(self) -> str:
        return f"{self.current.name}# " if self.current is not None else "netstack> "

    # -- completion ------------------------------------------------------------------------------
    def complete(self, before: str, text: str) -> list[str]:
        """Tab completion: candidates for the word *text*, given the line *before* it."""
        try:
            words = shlex.split(before)
        except ValueError:
            return []
        hosts = list(self.lab.hosts)
        host_cmds = self.commands.names("host")
        lab_cmds = self.commands.names("lab")
        host = self.current
        if words and words[0] in self.lab.hosts and (host is None or words[0] not in self.commands):
            host = self.lab.hosts[words[0]]
            words = words[1:]
            if not words:
                return sorted(c for c in host_cmds if c.startswith(text))
        elif not words:
            pool = hosts + lab_cmds + (host_cmds if host is not None else [])
            return sorted({c for c in pool if c.startswith(text)})
        cmd = self.commands.get(words[0])
        if cmd is None:
            return []
        ctx = Context(self, host, self.out, self.err, trio.CancelScope())
        if cmd.complete is not None:
            return sorted(set(cmd.complete(ctx, words[1:], text)))
        if host is not None:
            return sorted(d.name for d in host.devices if d.name.startswith(text))
        return []

    # -- running lines --------------------------------------------------------------------------
    def split(self, line: str) -> list[str]:
        """Shell-style word splitting (quotes, backslashes, ``#`` comments)."""
        return shlex.split(line, comments=True)

    def target(self, words: list[str]) -> tuple[Host | None, Command | None, list[str]]:
        """(host, command, argv) for a line's words; command None if unknown."""
        hosts = self.lab.hosts
        first = words[0]
        if first in hosts and (self.current is None or first not in self.commands):
            host = hosts[first]
            if len(words) == 1:
                return host, None, []
            return host, self.commands.get(words[1]), words[2:]
        cmd = self.commands.get(first)
        if cmd is not None and cmd.scope == "host":
            if self.current is not None:
                return self.current, cmd, words[1:]
            if len(words) > 1 and words[1] in hosts:
                return hosts[words[1]], cmd, words[2:]
            return None, cmd, words[1:]
        return None, cmd, words[1:]

    async def run_line(self, line: str, *, interrupt: trio.CancelScope | None = None) -> int:
        """Run one line; return its exit status. Never raises for a bad line."""
        try:
            words = self.split(line)
        except ValueError as e:
            self.err(f"netstack: syntax error: {e}")
            return self._status(2)
        if not words:
            return self.last_status
        invert = False
        if words[0] == "!":
            invert = True
            words = words[1:]
        background = False
        if words and words[-1] == "&":
            background = True
            words = words[:-1]
        elif words and words[-1].endswith("&") and not words[-1].endswith("\\&"):
            background = True
            words[-1] = words[-1][:-1]
        if not words:
            self.err("netstack: syntax error near unexpected token `&'")
            return self._status(2)
        status = await self._dispatch(words, line, background, interrupt)
        if invert:
            status = 0 if status else 1
        return self._status(status)

    def _status(self, status: int) -> int:
        self.last_status = status
        return status

    async def _dispatch(
        self,
        words: list[str],
        line: str,
        background: bool,
        interrupt: trio.CancelScope | None,
    ) -> int:
        host, cmd, argv = self.target(words)
        if cmd is None:
            if host is not None and len(words) == 1:
                self.current = host
                return 0
            name = words[1] if host is not None and len(words) > 1 else words[0]
            where = f"{host.name}: " if host is not None and self.current is not host else ""
            self.err(f"{where}{name}: command not found")
            return 127
        if cmd.run is None:
            self.err(f"{cmd.name}: not available yet in netstack ({cmd.missing})")
            return 127
        if cmd.scope == "host" and host is None:
            self.err(
                f"{cmd.name}: which host? Type 'HOST {cmd.name} …' "
                f"(hosts: {', '.join(self.lab.hosts) or 'none'})"
            )
            return 2
        if cmd.scope == "lab":
            host = self.current
        if background:
            status = self._start_job(cmd, host, argv, line)
            await self.settle()  # the job starts (a tcpdump is listening) before the next line
            return status
        scope = interrupt if interrupt is not None else trio.CancelScope()
        ctx = Context(self, host, self.out, self.err, scope)
        self.thaw()
        try:
            return await self._run(cmd, ctx, argv)
        finally:
            self.freeze()
            if self.clock is not None:
                await self.settle()

    async def _run(self, cmd: Command, ctx: Context, argv: list[str]) -> int:
        assert cmd.run is not None
        try:
            return await cmd.run(ctx, argv)
        except ConfigError as e:
            ctx.err(str(e))
            return 1 if e.errno is None else (2 if e.errno == errno.EINVAL else 1)
        except NetstackError as e:
            ctx.err(f"{cmd.name}: {e}")
            return 1
        except OSError as e:
            ctx.err(f"{cmd.name}: {e.strerror or e}")
            return 1
        except ValueError as e:
            ctx.err(str(e))
            return 2

    # -- jobs ------------------------------------------------------------------------------------
    def _start_job(self, cmd: Command, host: Host | None, argv: list[str], line: str) -> int:
        number = max(self.jobs, default=0) + 1
        job = Job(number, line.strip().rstrip("&").strip(), trio.CancelScope(), trio.CancelScope())
        self.jobs[number] = job
        ctx = Context(self, host, self.out, self.err, job.interrupt, background=True)

        async def runner() -> None:
            try:
                with job.scope:
                    job.status = await self._run(cmd, ctx, argv)
                if job.status is None:
                    job.status = 143  # killed (SIGTERM)
            finally:
                job.done.set()

        self.nursery.start_soon(runner)
        self.out(f"[{number}] {number}")
        return 0

    def finished_jobs(self) -> list[str]:
        """bash's "[1]+  Done" lines for jobs that ended since the last call."""
        lines = []
        for job in list(self.jobs.values()):
            if job.status is not None and not job.reported:
                job.reported = True
                state = (
                    "Done"
                    if job.status == 0
                    else "Terminated"
                    if job.status == 143
                    else f"Exit {job.status}"
                )
                lines.append(f"[{job.number}]+  {state:<24}{job.line}")
                del self.jobs[job.number]
        return lines

    def pending_jobs(self) -> list[Job]:
        return [j for j in self.jobs.values() if j.status is None]

    async def aclose(self) -> None:
        """Stop every background job."""
        for job in self.jobs.values():
            job.scope.cancel()


def _stderr(text: str) -> None:
    import sys

    print(text, file=sys.stderr, flush=True)
