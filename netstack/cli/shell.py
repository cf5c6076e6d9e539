"""``netstack shell [LAB.toml]``: a prompt on a lab, with Linux's commands on each host.

Theory of operation: the shell builds the lab (the demo lab by default) on
Trio with a :class:`trio.testing.MockClock`, then reads lines with GNU
readline — line editing, history (``~/.netstack_history``, or
``$NETSTACK_HISTFILE``) and tab completion of hosts, commands, devices and
options — and runs each through a :class:`~netstack.labs.session.Session`,
which prints what the Linux tool would print and never lets a bad line kill
the shell.

Virtual time stands still while the prompt waits: the lab's tasks are not
running at all then (the prompt blocks the Trio loop on purpose, after every
task has settled), so no timer fires while a user thinks. Time runs while a
command runs — as fast as the machine allows, or at ``--pace`` virtual
seconds per wall second. Ctrl-C interrupts the running command the way
SIGINT does on Linux (``ping`` prints its statistics, ``tcpdump`` its
counts); at the prompt it discards the line. Ctrl-D or ``exit`` leaves.

When standard input is not a terminal (``netstack shell < script``), no
prompt is printed and lines are read as a script; ``-c LINE`` runs lines
given on the command line.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

import trio
import trio.testing

from netstack.cli.experiment import shell_commands
from netstack.host import open_lab
from netstack.labs.labfile import (
    LabFileError,
    LabSpec,
    build_lab,
    load_lab,
    parse_lab,
    timed_model,
)
from netstack.labs.session import Session

__all__ = ["shell"]


def shell(
    lab_path: str | None,
    *,
    commands: list[str] | None = None,
    pace: float = 0.0,
    empty: bool = False,
) -> int:
    """Run the shell; returns the exit status (the last command's, for scripts)."""
    spec: LabSpec | None = None
    if not empty:
        try:
            if lab_path is None:
                from netstack.cli.demo import DEMO_LAB

                spec = parse_lab(DEMO_LAB.read_text(encoding="utf-8"), DEMO_LAB)
            else:
                spec = load_lab(lab_path)
        except LabFileError as e:
            print(e, file=sys.stderr)
            return 2
    clock = trio.testing.MockClock(autojump_threshold=0)
    return trio.run(_main, spec, commands, pace, clock, clock=clock)


async def _main(
    spec: LabSpec | None,
    commands: list[str] | None,
    pace: float,
    clock: trio.testing.MockClock,
) -> int:
    seed = spec.seed if spec is not None else 0
    hz = spec.hz if spec is not None else 1000
    timed = timed_model(spec) if spec is not None else None
    async with open_lab(seed=seed, hz=hz, timed=timed) as lab, trio.open_nursery() as nursery:
        session = Session(lab, nursery, clock=clock, pace=pace, commands=shell_commands())
        if spec is not None:
            try:
                await build_lab(spec, lab, session, captures=False)
            except LabFileError as e:
                print(e, file=sys.stderr)
                nursery.cancel_scope.cancel()
                return 2
        interactive = commands is None and sys.stdin.isatty()
        if commands is not None:
            status = 0
            for line in commands:
                status = await _run(session, line)
                _print_done(session)
                if session.exit_requested:
                    break
        elif interactive:
            status = await _interactive(session, spec)
        else:
            status = await _script(session)
        await session.aclose()
        nursery.cancel_scope.cancel()
        return status


class _Sigint:
    """Ctrl-C, the way a shell treats it, without Trio's KeyboardInterrupt machinery.

    At the prompt it raises KeyboardInterrupt inside ``input()`` (the line is
    dropped). While a command runs it asks the Trio loop — through
    ``run_sync_soon``, which is safe from a signal handler — to cancel the
    command's interrupt scope (the command stops and prints its summary); a
    second Ctrl-C abandons the command. Between the two it is ignored.
    """

    def __init__(self) -> None:
        self.at_prompt = False
        self.interrupt: trio.CancelScope | None = None
        self.outer: trio.CancelScope | None = None
        self.token = trio.lowlevel.current_trio_token()
        self.previous: Any = None

    def install(self) -> None:
        if _main_thread():
            self.previous = signal.signal(signal.SIGINT, self._handler)

    def restore(self) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)

    def _handler(self, signum: int, frame: Any) -> None:
        if self.at_prompt:
            raise KeyboardInterrupt
        self.token.run_sync_soon(self._interrupt_command)

    def _interrupt_command(self) -> None:
        if self.interrupt is None:
            return
        print(flush=True)
        if self.interrupt.cancel_called and self.outer is not None:
            self.outer.cancel()
        self.interrupt.cancel()


async def _run(session: Session, line: str, sigint: _Sigint | None = None) -> int:
    """Run *line*; Ctrl-C interrupts the command (see :class:`_Sigint`)."""
    interrupt = trio.CancelScope()
    outer = trio.CancelScope()
    status = 130
    if sigint is not None:
        sigint.interrupt, sigint.outer = interrupt, outer
    try:
        with outer:
            status = await session.run_line(line, interrupt=interrupt)
    finally:
        if sigint is not None:
            sigint.interrupt = sigint.outer = None
    return status


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _print_done(session: Session) -> None:
    for line in session.finished_jobs():
        print(line, flush=True)


async def _script(session: Session) -> int:
    status = 0
    sigint = _Sigint()
    sigint.install()
    for raw in sys.stdin:
        status = await _run(session, raw.rstrip("\n"), sigint)
        _print_done(session)
        if session.exit_requested:
            break
    sigint.restore()
    return status


async def _interactive(session: Session, spec: LabSpec | None) -> int:
    import readline

    session.interactive = True  # ping without -c prints one line a second

    hist = Path(os.environ.get("NETSTACK_HISTFILE", Path.home() / ".netstack_history"))
    readline.parse_and_bind("tab: complete")
    readline.parse_and_bind("set enable-bracketed-paste off")
    readline.set_completer_delims(" \t\n;|&")
    state: dict[str, Any] = {"matches": []}

    def completer(text: str, n: int) -> str | None:
        if n == 0:
            before = readline.get_line_buffer()[: readline.get_begidx()]
            try:
                state["matches"] = session.complete(before, text)
            except Exception:  # completion must never break the prompt
                state["matches"] = []
        matches: list[str] = state["matches"]
        return matches[n] + " " if n < len(matches) else None

    readline.set_completer(completer)
    try:
        readline.read_history_file(hist)
    except OSError:
        pass
    readline.set_history_length(1000)
    names = ", ".join(session.lab.hosts) or "none"
    what = f"lab {spec.name}" if spec is not None else "an empty lab"
    print(
        f"netstack shell: {what}, hosts: {names}. Type 'help' for the commands; "
        "time is virtual and runs only while a command runs.",
        flush=True,
    )
    sigint = _Sigint()
    sigint.install()
    try:
        while not session.exit_requested:
            _print_done(session)
            try:
                # The prompt blocks the Trio loop on purpose: every task has settled
                # (Session.settle) and virtual time must not run while the user types.
                sigint.at_prompt = True
                line = input(session.prompt)  # noqa: ASYNC250
            except EOFError:
                print("exit", flush=True)
                break
            except KeyboardInterrupt:
                print(flush=True)
                continue
            finally:
                sigint.at_prompt = False
            await _run(session, line, sigint)
    finally:
        sigint.restore()
        try:
            hist.parent.mkdir(parents=True, exist_ok=True)
            readline.write_history_file(hist)
        except OSError:
            pass
    return 0
