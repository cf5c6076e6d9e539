"""The command table: every command the shell, lab files and checks can run.

Theory of operation: a :class:`Command` names a program a user would type on
a Linux host (``ip``, ``tc``, ``ping``, ``tcpdump``, ``nstat``…) or a lab-level
one (``help``, ``sleep``, ``jobs``), with a one-line summary for ``help``, the
usage text, and an async ``run(ctx, argv) -> exit status``. The table is one
dict built per :class:`~netstack.labs.session.Session` by
:func:`default_commands`; a feature that adds a tool adds one entry there
(or calls :meth:`CommandTable.register`).

Tools whose kernel side comes with another part of netstack are registered
already and look for the host's front end at run time (``host.tc``,
``host.ethtool``, ``host.sysfs``): when the host has it, the command works;
when not, the command answers ``tc: not available yet in netstack (…)`` with
exit status 127, the way a shell answers a command it cannot find.

Commands write through the context (``ctx.out`` for stdout, ``ctx.err`` for
stderr), never to ``sys.stdout``: the shell prints, the lab runner records.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Literal

import attrs

if TYPE_CHECKING:
    from netstack.labs.session import Context

__all__ = ["Command", "CommandFn", "CommandTable", "Completer"]

CommandFn = Callable[["Context", list[str]], Awaitable[int]]
Completer = Callable[["Context", list[str], str], list[str]]


@attrs.frozen
class Command:
    """One command of the table.

    Attributes:
        name: what the user types.
        summary: one line for ``help``.
        run: ``await run(ctx, argv)`` → exit status (argv excludes the name);
            None when the command is known but not available yet.
        scope: ``"host"`` (runs on a host: ``a ip link``) or ``"lab"``.
        usage: the usage text (``help NAME`` prints it).
        missing: for an unavailable command, what brings it (shown in the error).
        complete: optional tab completion of the arguments (context, words so
            far, the word being completed) → candidates.
        linux: the Linux tool it mirrors, for the command reference
            (``"iproute2 ip"``, ``"iputils ping"``…); empty for emulator-only commands.
    """

    name: str
    summary: str
    run: CommandFn | None
    scope: Literal["host", "lab"] = "host"
    usage: str = ""
    missing: str = ""
    complete: Completer | None = None
    linux: str = ""

    @property
    def available(self) -> bool:
        return self.run is not None


class CommandTable:
    """Commands by name (the one table the shell, lab files and checks share)."""

    def __init__(self, commands: list[Command] | None = None) -> None:
        self._commands: dict[str, Command] = {}
        for cmd in commands or ():
            self.register(cmd)

    def register(self, command: Command, *, replace: bool = False) -> None:
        """Add *command*; *replace* swaps out an existing entry of that name."""
        if command.name in self._commands and not replace:
            raise ValueError(f"command {command.name!r} is already registered")
        self._commands[command.name] = command

    def get(self, name: str) -> Command | None:
        return self._commands.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._commands

    def __iter__(self) -> Iterator[Command]:
        return iter(sorted(self._commands.values(), key=lambda c: c.name))

    def names(self, scope: str | None = None) -> list[str]:
        return sorted(c.name for c in self if scope is None or c.scope == scope)
