"""``netstack sweep`` (and ``netstack experiment NAME --sweep …``): a grid of runs.

Theory of operation: the command is a thin layer over
:func:`netstack.experiments.sweep.sweep`. It reads the target and the axes
(``NAME=V1,V2,…``), chooses where the points run — a local process pool by
default, ``--serial`` in this process, ``--dask`` on a Dask ``LocalCluster``
started here or ``--scheduler tcp://HOST:8786`` on an existing Dask
scheduler — and prints the table (the parameters and the headline figures,
``--column`` for others), or every column as CSV or JSON (``--csv FILE``,
``--json FILE``; ``-`` is standard output, instead of the table), and draws
one column over the first axis with ``--plot FILE.svg`` (``--y COLUMN``).
Bad input — an unknown target or parameter, a value of the wrong syntax, a
value the experiment refuses — is a usage error (status 2, argparse's
format); Ctrl-C stops the pool or cancels the Dask futures and exits with 130
(128 + SIGINT), as a shell reports it. On a terminal, stderr shows how many
points are done.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from netstack.cli.experiment import _left
from netstack.experiments.sweep import (
    DASK,
    PROCESSES,
    SERIAL,
    SweepError,
    SweepResult,
    sweep,
    write_sweep_plot,
)
from netstack.userspace.progress import Progress

__all__ = ["add_executor_options", "add_sweep_parser", "run_sweep_command"]

SWEEP_EPILOG = """\
axes: NAME=V1,V2,... or NAME=A..B (the integers A to B), one per parameter
of the target; the grid is every combination, first axis outermost.
Examples:
  netstack sweep gre-lltx cpus=1,2,4,8,16,32,64 sockets=8 --plot speedup.svg
  netstack sweep mylabs.bench:run hosts=10,100 seed=0..3 --csv out.csv
  netstack sweep gre-lltx cpus=1..16 --scheduler tcp://10.0.0.5:8786
"""


def add_executor_options(p: argparse.ArgumentParser) -> None:
    """Where the points run and what is written: shared by ``sweep`` and ``experiment``."""
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--serial", action="store_true", help="run the points one after another in this process"
    )
    where.add_argument(
        "--dask",
        action="store_true",
        help="run the points on a Dask LocalCluster (pip install 'netstack[sweep]')",
    )
    where.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run the points on an existing Dask scheduler (tcp://HOST:8786)",
    )
    p.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="local processes (or LocalCluster workers) to use (default: the CPUs)",
    )
    p.add_argument("--csv", metavar="FILE", help="write every column as CSV to FILE (- : stdout)")
    p.add_argument(
        "--column",
        action="append",
        metavar="COLUMN",
        help="a column to show in the table (repeatable; default: the headline figures)",
    )
    p.add_argument("--y", metavar="COLUMN", help="the column --plot draws")


def add_sweep_parser(sub: Any) -> argparse.ArgumentParser:
    """The ``sweep`` subcommand."""
    s: argparse.ArgumentParser = sub.add_parser(
        "sweep",
        help="run an experiment or a lab function over a grid of parameters",
        description="Run an experiment (or a lab function, package.module:function)\n"
        "once per point of a grid of its parameters, on a local process pool or\n"
        "on Dask, and print a table of the results.",
        epilog=SWEEP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("target", metavar="TARGET", help="an experiment or package.module:function")
    s.add_argument("axes", nargs="*", metavar="NAME=V1,V2,...", help="the grid's axes")
    add_executor_options(s)
    s.add_argument("--json", metavar="FILE", help="write the rows as JSON to FILE (- : stdout)")
    s.add_argument("--plot", metavar="FILE", help="draw --y over the first axis: FILE.svg")
    s.set_defaults(subparser=s)
    return s


def _write(text: str, dest: str) -> None:
    if dest == "-":
        sys.stdout.write(text)
    else:
        Path(dest).write_text(text, encoding="utf-8")
        print(f"wrote {dest}", file=sys.stderr)


def run_sweep_command(
    parser: argparse.ArgumentParser,
    target: str,
    axes: list[str],
    args: argparse.Namespace,
    *,
    json_dest: str | None,
) -> int:
    """Run the sweep *args* describe and print or write its results.

    Usage errors go through ``parser.error`` (status 2).
    """
    if args.workers is not None and args.workers < 1:
        parser.error(f"argument --workers: must be at least 1, got {args.workers}")
    if args.plot and Path(args.plot).suffix.lower() != ".svg":
        parser.error(f"argument --plot: {Path(args.plot).name}: a sweep's plot is FILE.svg")
    if args.plot and not axes:
        parser.error("argument --plot: a plot needs an axis (NAME=V1,V2,…) to draw over")
    executor = SERIAL if args.serial else DASK if args.dask or args.scheduler else PROCESSES
    label = f"sweep {target}"
    progress = Progress(1, label, counts=False)
    started = time.monotonic()

    def done(n: int, total: int) -> None:
        # wall time only estimates what is left; no figure depends on it
        left = (time.monotonic() - started) / n * (total - n)
        progress.total = total
        progress.note = f"{n} of {total} points, {_left(left)}"
        progress.update(n)

    here = os.getcwd()
    # `netstack sweep mylabs:bench` finds mylabs.py here, as `python -m` would (pool
    # workers inherit sys.path when they start; Dask workers elsewhere need the module)
    added = "" not in sys.path and here not in sys.path
    if added:
        sys.path.insert(0, here)
    try:
        with progress:
            result = sweep(
                target,
                axes,
                executor=executor,
                workers=args.workers,
                scheduler=args.scheduler,
                done=done,
            )
    except KeyboardInterrupt:
        print(f"netstack {label}: interrupted", file=sys.stderr)
        return 130
    except SweepError as e:
        parser.error(str(e))
    except ValueError as e:  # the experiment refused a value (cpus out of range…)
        parser.error(f"argument AXIS: {e}")
    finally:
        if added:
            sys.path.remove(here)
    try:
        return _output(result, args, json_dest)
    except SweepError as e:
        parser.error(str(e))


def _output(result: SweepResult, args: argparse.Namespace, json_dest: str | None) -> int:
    columns = None
    if args.column:
        chosen = [result.column(c) for c in args.column]
        columns = [p for p in result.params if p not in chosen] + chosen
    if args.y:
        result.column(args.y)  # refused before anything is written
    to_stdout = "-" in (args.csv, json_dest)
    if not to_stdout:
        print(result.render(columns))
    if args.csv:
        _write(result.to_csv(), args.csv)
    if json_dest:
        _write(result.to_json() + "\n", json_dest)
    if args.plot:
        write_sweep_plot(result, args.plot, args.y)
        print(f"wrote {args.plot}", file=sys.stderr)
    return 0
