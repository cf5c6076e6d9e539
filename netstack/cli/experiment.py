"""``experiment NAME`` in the shell: the seeds' timed-mode benchmarks at the prompt.

Theory of operation: the command table of :mod:`netstack.labs` sits below the
experiments (they are siblings of the CLI's other top-layer packages), so the
shell adds this lab-level command to its table itself
(:func:`shell_commands`). An experiment builds its own machine and runs its
own Trio loop on its own virtual clock; :func:`run_experiment` runs it in a
worker thread and waits for it without yielding to the shell's loop, so the
lab's virtual time stands still meanwhile, exactly as at the prompt — and on
a terminal it shows how far the run has got and the time left (``netstack
experiment`` uses it too). A ``--plot`` file that cannot be written (another
suffix, PNG without the ``draw`` extra) is refused before anything runs.
"""

from __future__ import annotations

import math
import threading
import time
from typing import TYPE_CHECKING, Any, TextIO

from netstack.experiments import EXPERIMENTS
from netstack.experiments.common import METER
from netstack.experiments.plot import check_plot_path
from netstack.labs.commands import Command, CommandTable, default_commands
from netstack.userspace.progress import Progress

if TYPE_CHECKING:
    from netstack.labs.session import Context

__all__ = ["EXPERIMENT_USAGE", "experiment_command", "run_experiment", "shell_commands"]

EXPERIMENT_USAGE = (
    "experiment [--before|--after|--both] [--cpus N] [--json] [--plot FILE] NAME\n"
    "NAME: " + ", ".join(sorted(EXPERIMENTS))
)


def _usage(ctx: Context, message: str) -> int:
    ctx.err(f"experiment: {message}\nusage: {EXPERIMENT_USAGE}")
    return 2


async def _cmd_experiment(ctx: Context, argv: list[str]) -> int:
    which = "both"
    kwargs: dict[str, Any] = {}
    as_json = False
    plot: str | None = None
    name: str | None = None
    args = iter(argv)
    for a in args:
        if a in ("--before", "--after", "--both"):
            which = a[2:]
        elif a == "--json":
            as_json = True
        elif a in ("--cpus", "--plot"):
            value = next(args, None)
            if value is None:
                return _usage(ctx, f"argument {a}: expected one argument")
            if a == "--plot":
                plot = value
            elif not value.isdigit():
                return _usage(ctx, f"argument --cpus: invalid int value: '{value}'")
            else:
                kwargs["cpus"] = int(value)
        elif a.startswith("-"):
            return _usage(ctx, f"unrecognized arguments: {a}")
        elif name is None:
            name = a
        else:
            return _usage(ctx, f"unrecognized arguments: {a}")
    if name is None:
        for n, exp in sorted(EXPERIMENTS.items()):
            ctx.out(f"{n:<14} {exp.seed}")
        return 0
    if name not in EXPERIMENTS:
        choices = ", ".join(repr(n) for n in sorted(EXPERIMENTS))
        return _usage(ctx, f"argument NAME: invalid choice: '{name}' (choose from {choices})")
    if plot is not None:
        try:
            check_plot_path(plot)  # before minutes of work, not after
        except ValueError as e:
            return _usage(ctx, str(e))
    try:
        result = run_experiment(name, which, **kwargs)
    except ValueError as e:
        return _usage(ctx, str(e))
    ctx.out(result.to_json() if as_json else result.render())
    if plot is not None:
        from netstack.experiments.plot import write_plot

        try:
            ctx.err(f"wrote {write_plot(result, plot)}")
        except ValueError as e:
            ctx.err(f"experiment: {e}")
            return 1
    return 0


def _left(seconds: float | None) -> str:
    if seconds is None:
        return "estimating the time left"
    minutes, sec = divmod(math.ceil(seconds), 60)
    return f"{minutes}m{sec:02d}s left" if minutes else f"{sec} s left"


def run_experiment(
    name: str, which: str = "both", *, stream: TextIO | None = None, **kwargs: Any
) -> Any:
    """Run experiment *name* in a worker thread, showing its progress on a terminal.

    The caller's thread waits without yielding (in the shell, the lab's
    virtual time stands still). On a terminal, stderr shows a progress line —
    the share done, which step (one run on its own clock) is running and the
    wall time left, estimated from the steps done (:data:`METER`) — erased at
    the end; elsewhere nothing is drawn. Exceptions of the run
    (``ValueError`` for bad arguments) are raised here.
    """
    outcome: list[Any] = []

    def work() -> None:
        try:
            outcome.append(EXPERIMENTS[name].run(which, **kwargs))
        except BaseException as e:  # re-raised below, in the caller's thread
            outcome.append(e)

    METER.plan(0)
    worker = threading.Thread(target=work, name=f"experiment {name}", daemon=True)
    with Progress(1000, f"experiment {name} ({which})", stream=stream, counts=False) as progress:
        worker.start()
        while True:
            alive = worker.is_alive()
            now = time.monotonic()
            if METER.planned:
                step = min(METER.done + 1, METER.planned)
                progress.note = f"step {step} of {METER.planned}, {_left(METER.time_left(now))}"
            # The last state is drawn too (100 %, forced): a step shorter than the wait
            # below still shows, however fast the machine.
            progress.update(int(METER.fraction(now) * 1000) if alive else 1000)
            if not alive:
                break
            METER.changed.wait(0.2)  # a new step is drawn when it starts, not up to 0.2 s late
            METER.changed.clear()
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    return result


def _complete_experiment(ctx: Context, words: list[str], text: str) -> list[str]:
    options = ["--before", "--after", "--both", "--cpus", "--json", "--plot"]
    return [w for w in sorted(EXPERIMENTS) + options if w.startswith(text)]


def experiment_command() -> Command:
    """The ``experiment`` command (``netstack experiment`` at the prompt)."""
    return Command(
        "experiment",
        "rerun a seed's benchmark in timed mode (before/after its patch)",
        _cmd_experiment,
        scope="lab",
        usage=EXPERIMENT_USAGE,
        complete=_complete_experiment,
    )


def shell_commands() -> CommandTable:
    """The table of ``netstack shell``: the labs' commands and ``experiment``."""
    table = default_commands()
    table.register(experiment_command())
    return table
