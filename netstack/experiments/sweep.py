"""Sweeps: an experiment or a lab function over a grid of parameters, on a pool or on Dask.

Theory of operation: a sweep has a *target* — one of the seed experiments
(``gre-lltx``…) or any importable function ``package.module:function`` that
builds and runs a lab — and *axes*, ``NAME=V1,V2,…`` (or ``NAME=A..B`` for
the integers A to B), each naming a keyword parameter of the target. The grid
is the cartesian product of the axes, the first axis outermost; each point of
it is one call of the target with those keywords (:func:`plan`), and one row
of the result: the point's parameters, then what it measured — an
experiment's headline ratios and each run's figures (``before: sys``…), or
the mapping (or the one number, as ``result``) a lab function returned.

Values are read as the type of the parameter's default (``cpus=4`` is an int
because ``cpus: int = 16``; a tuple parameter such as ipip-sit-gro's
``connections`` takes one element per point); a parameter without a default
takes an int, else a float, else the word. An unknown target or parameter and
a value of the wrong syntax are :class:`SweepError` (``ValueError``) before
anything runs, with argparse's wording, so the command exits with status 2.

Every point is deterministic: an experiment's runs are seeded and run on
their own virtual clocks, and a lab function is expected to seed its lab
(``open_lab(seed=…)``). A point is therefore the same row wherever it runs,
and the order of the rows is the grid's, whatever order the points finished
in: serially in this process (:data:`SERIAL`), on a pool of local processes
(:data:`PROCESSES`, the default: ``multiprocessing``'s *spawn* context, one
point per process at a time, workers that ignore SIGINT so that Ctrl-C
reaches only this process, which terminates the pool), or on Dask's
distributed scheduler (:data:`DASK`: an existing scheduler's address, or a
``LocalCluster`` made here). A point is sent to a worker as names and
values — the target's name and the keywords — never as a function object,
and is resolved again there (:func:`run_point`). Timed mode keeps
process-wide state (the active cost sites, the experiment meter), so points
that share a process run one at a time (a lock here): a Dask worker with
several threads is correct, only slower.

Dask, because it is a well-kept scheduler whose one API runs the same code on
a laptop's pool and on a cluster (``dask-scheduler`` and ``dask-worker`` on
other machines, or a batch system through dask-jobqueue), with a
``LocalCluster`` — in threads of this process or in local worker processes —
that tests can start and stop. It is the optional extra ``netstack[sweep]``.

The result (:class:`SweepResult`) prints as a table (:meth:`SweepResult.render`),
as CSV and as JSON, and draws one column over the first axis as an SVG line
chart, one line per combination of the other axes
(:func:`render_sweep_svg`; no plotting library, like
:mod:`netstack.experiments.plot`).
"""

from __future__ import annotations

import csv
import functools
import importlib
import inspect
import io
import itertools
import json
import logging
import math
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any, Literal

import attrs

from netstack.experiments import EXPERIMENTS
from netstack.experiments.common import ExperimentResult

__all__ = [
    "DASK",
    "PROCESSES",
    "SERIAL",
    "Axis",
    "SweepError",
    "SweepResult",
    "Target",
    "axes_help",
    "parse_axis",
    "plan",
    "render_sweep_svg",
    "resolve",
    "result_row",
    "run_point",
    "sweep",
    "write_sweep_plot",
]

Value = int | float | str | bool
Executor = Literal["serial", "processes", "dask"]
SERIAL: Executor = "serial"
PROCESSES: Executor = "processes"
DASK: Executor = "dask"
WHICH = ("before", "after", "both")

Outcome = tuple[dict[str, Value], dict[str, str], tuple[str, ...]]
"""A point's measured columns, their units, and which of them are headline figures."""

_POINT_LOCK = threading.Lock()  # timed mode's process-wide state: one point at a time


class SweepError(ValueError):
    """Bad input to a sweep: unknown target or parameter, a value of the wrong syntax."""


@attrs.frozen
class Axis:
    """One parameter of the grid and its values, in order."""

    name: str
    values: tuple[Value, ...]


@attrs.frozen
class Target:
    """What a sweep calls: an experiment by name, or ``module:function``."""

    name: str
    fn: Callable[..., Any]
    params: Mapping[str, inspect.Parameter]
    experiment: bool


def resolve(name: str) -> Target:
    """The experiment called *name*, or the function ``package.module:function``."""
    if name in EXPERIMENTS:
        fn = EXPERIMENTS[name].run
        return Target(name, fn, _keywords(fn), True)
    if ":" not in name:
        choices = ", ".join(repr(n) for n in sorted(EXPERIMENTS))
        raise SweepError(
            f"argument TARGET: invalid choice: {name!r} (choose from {choices}, "
            "or a lab function as 'package.module:function')"
        )
    module_name, _, attr = name.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise SweepError(f"argument TARGET: cannot import {module_name!r}: {e}") from e
    found = getattr(module, attr, None)
    if not callable(found):
        raise SweepError(f"argument TARGET: module {module_name!r} has no function {attr!r}")
    return Target(name, found, _keywords(found), False)


def _keywords(fn: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    """The parameters a point may set by keyword (``which`` of an experiment too)."""
    return {
        n: p
        for n, p in inspect.signature(fn).parameters.items()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }


def _convert(text: str, default: Any, name: str) -> Value:
    """*text* as a value of *default*'s type (see the module's docstring)."""
    if isinstance(default, tuple) and default:
        default = default[0]
    try:
        if isinstance(default, bool):
            low = text.lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise ValueError(text)
        if isinstance(default, int):
            return int(text)
        if isinstance(default, float):
            return float(text)
        if isinstance(default, str):
            if name == "which" and text not in WHICH:
                raise ValueError(text)
            return text
    except ValueError:
        kind = type(default).__name__
        if name == "which":
            kind = "which (before, after, both)"
        raise SweepError(f"argument {name}: invalid {kind} value: {text!r}") from None
    for parse in (int, float):
        try:
            return parse(text)
        except ValueError:
            pass
    return text


def parse_axis(spec: str, target: Target) -> Axis:
    """``NAME=V1,V2,…`` or ``NAME=A..B`` (the integers A to B) for a parameter of *target*."""
    name, eq, text = spec.partition("=")
    name = name.strip()
    if not eq or not name:
        raise SweepError(f"argument AXIS: expected NAME=V1,V2,… or NAME=A..B, got {spec!r}")
    param = target.params.get(name)
    if param is None:
        known = ", ".join(sorted(target.params))
        raise SweepError(
            f"argument AXIS: {target.name} has no parameter {name!r} (parameters: {known})"
        )
    default = None if param.default is param.empty else param.default
    words = [w.strip() for w in text.split(",")]
    if not text or any(not w for w in words):
        raise SweepError(f"argument {name}: expected V1,V2,… (no empty values), got {text!r}")
    values: list[Value] = []
    for word in words:
        low, dots, high = word.partition("..")
        if dots:
            try:
                a, b = int(low), int(high)
            except ValueError:
                raise SweepError(
                    f"argument {name}: a range is A..B of two integers, got {word!r}"
                ) from None
            if a > b:
                raise SweepError(f"argument {name}: empty range {word!r}")
            values.extend(_convert(str(v), default, name) for v in range(a, b + 1))
        else:
            values.append(_convert(word, default, name))
    return Axis(name, tuple(values))


def plan(target: Target, specs: Sequence[str]) -> tuple[tuple[Axis, ...], list[dict[str, Value]]]:
    """The axes of *specs* and the grid's points, first axis outermost."""
    axes = tuple(parse_axis(s, target) for s in specs)
    seen: set[str] = set()
    for axis in axes:
        if axis.name in seen:
            raise SweepError(f"argument AXIS: {axis.name!r} given twice")
        seen.add(axis.name)
    points = [
        {a.name: v for a, v in zip(axes, combo, strict=True)}
        for combo in itertools.product(*(a.values for a in axes))
    ]
    return axes, points


def _figure_value(f: Any) -> Value:
    return bool(f.emulated) if f.unit == "bool" else float(f.emulated)


def result_row(result: Any) -> Outcome:
    """What a point measured, as columns, their units and the headline columns:
    an experiment's headline figures then each run's (``LABEL: NAME``); a
    mapping as itself; a number as ``result``."""
    if isinstance(result, ExperimentResult):
        row: dict[str, Value] = {}
        units: dict[str, str] = {}
        for f in result.headline:
            row[f.name], units[f.name] = _figure_value(f), f.unit
        for run in result.runs:
            for f in run.figures:
                key = f"{run.label}: {f.name}"
                row[key], units[key] = _figure_value(f), f.unit
        return row, units, tuple(f.name for f in result.headline)
    if isinstance(result, Mapping):
        return {str(k): v for k, v in result.items()}, {}, ()
    if isinstance(result, int | float | str | bool):
        return {"result": result}, {}, ()
    raise TypeError(
        f"a lab function swept must return a mapping or a number, not {type(result).__name__}"
    )


def run_point(target: str, point: Mapping[str, Value]) -> Outcome:
    """Run *target* (a name, resolved here: this runs in a worker) at *point*.

    Returns the point's measured columns and their units (:func:`result_row`);
    tuple parameters receive their one value as a tuple of one. An ``async``
    lab function runs on its own Trio loop in virtual time (``netstack.run``).
    """
    t = resolve(target)
    kwargs: dict[str, Any] = dict(point)
    for name, value in point.items():
        default = t.params[name].default
        if isinstance(default, tuple):
            kwargs[name] = (value,)
    with _POINT_LOCK:
        try:
            if inspect.iscoroutinefunction(t.fn):
                from netstack.host.lab import run

                result = run(functools.partial(t.fn, **kwargs))
            else:
                result = t.fn(**kwargs)
        except ValueError as e:  # the target refused a value (cpus out of range…)
            where = " ".join(f"{k}={v}" for k, v in point.items())
            raise SweepError(f"point {where}: {e}") from e
    return result_row(result)


@attrs.frozen
class SweepResult:
    """The rows of a sweep, in the grid's order."""

    target: str
    axes: tuple[Axis, ...]
    rows: tuple[dict[str, Value], ...]
    units: Mapping[str, str] = attrs.field(factory=dict)
    headline: tuple[str, ...] = ()  # the columns shown by default (an experiment's ratios)

    @property
    def params(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.axes)

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column: the parameters, then what the points measured."""
        out = list(self.params)
        for row in self.rows:
            out.extend(k for k in row if k not in out)
        return tuple(out)

    def column(self, name: str) -> str:
        """The column called *name*, or the one column whose name contains it."""
        if name in self.columns:
            return name
        hits = [c for c in self.columns if name.lower() in c.lower()]
        if len(hits) == 1:
            return hits[0]
        known = "; ".join(self.columns)
        what = "matches several columns" if hits else "is no column"
        raise SweepError(f"{name!r} {what} (columns: {known})")

    def default_columns(self) -> tuple[str, ...]:
        """Parameters and headline figures (all columns when there is no headline)."""
        return self.params + self.headline if self.headline else self.columns

    def render(self, columns: Sequence[str] | None = None) -> str:
        """A plain-text table of *columns* (default: :meth:`default_columns`)."""
        cols = list(columns) if columns is not None else list(self.default_columns())
        heads = [f"{c} ({self.units[c]})" if self.units.get(c) else c for c in cols]
        places = [_places([row.get(c) for row in self.rows]) for c in cols]
        cells = [[_cell(row.get(c), places[i]) for i, c in enumerate(cols)] for row in self.rows]
        widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(heads)]
        numeric = [all(isinstance(row.get(c), int | float) for row in self.rows) for c in cols]

        def line(words: Sequence[str]) -> str:
            return "  ".join(
                w.rjust(widths[i]) if numeric[i] else w.ljust(widths[i])
                for i, w in enumerate(words)
            ).rstrip()

        out = [f"sweep {self.target}: {len(self.rows)} points", line(heads)]
        out.extend(line(r) for r in cells)
        return "\n".join(out)

    def to_csv(self) -> str:
        """Every column, one row per point (units in the JSON)."""
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        cols = self.columns
        writer.writerow(cols)
        for row in self.rows:
            writer.writerow([_csv_value(row.get(c)) for c in cols])
        return buf.getvalue()

    def to_json(self) -> str:
        data = {
            "target": self.target,
            "axes": {a.name: list(a.values) for a in self.axes},
            "units": dict(self.units),
            "headline": list(self.headline),
            "rows": list(self.rows),
        }
        return json.dumps(data, indent=2)

    @classmethod
    def from_json(cls, text: str) -> SweepResult:
        """The result :meth:`to_json` wrote (the docs plot committed sweeps from it)."""
        data = json.loads(text)
        axes = tuple(Axis(n, tuple(v)) for n, v in data["axes"].items())
        rows = tuple(dict(r) for r in data["rows"])
        return cls(data["target"], axes, rows, data["units"], tuple(data["headline"]))


def _places(values: Sequence[Value | None]) -> int | None:
    """Decimal places of a column of floats: four significant digits of its
    largest value (1.10 under 22.25, not 1.1), none when all are whole."""
    floats = [v for v in values if isinstance(v, float)]
    if not floats or not all(math.isfinite(v) for v in floats):
        return None
    if all(v == int(v) for v in floats):
        return 0
    top = max(abs(v) for v in floats)
    return max(0, 3 - math.floor(math.log10(top))) if top else 3


def _cell(v: Value | None, places: int | None = None) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.{places}f}" if places is not None else f"{v:.4g}"
    return str(v)


def _csv_value(v: Value | None) -> str:
    if v is None:
        return ""
    return repr(v) if isinstance(v, float) else str(v)


def _ignore_sigint() -> None:
    """Pool workers leave Ctrl-C to the parent, which terminates them."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _star_point(args: tuple[str, dict[str, Value]]) -> Outcome:
    return run_point(*args)


def sweep(
    target: str,
    specs: Sequence[str],
    *,
    executor: Executor = PROCESSES,
    workers: int | None = None,
    scheduler: str | Any | None = None,
    done: Callable[[int, int], None] | None = None,
) -> SweepResult:
    """Run *target* over the grid of *specs* (``NAME=V1,V2,…``) and collect the rows.

    Args:
        target: an experiment's name or ``package.module:function``.
        specs: the axes.
        executor: :data:`SERIAL`, :data:`PROCESSES` (a local pool) or :data:`DASK`.
        workers: pool processes or local Dask workers (default: the CPUs,
            at most the points).
        scheduler: with :data:`DASK`, a scheduler's address (``tcp://host:8786``)
            or a ``distributed`` cluster object; None starts a ``LocalCluster``.
        done: called with (points done, points) as points finish.

    Raises:
        SweepError: bad input, before anything runs.
        KeyboardInterrupt: Ctrl-C; the pool or the Dask futures are cancelled first.
    """
    t = resolve(target)
    axes, points = plan(t, specs)
    if not points:
        raise SweepError("argument AXIS: the grid has no points")
    n = len(points)
    workers = max(1, min(workers or len(os.sched_getaffinity(0)), n))
    tasks = [(t.name, p) for p in points]
    if executor == SERIAL:
        outcomes = _serial(tasks, done)
    elif executor == PROCESSES:
        outcomes = _processes(tasks, workers, done)
    elif executor == DASK:
        outcomes = _dask(tasks, workers, scheduler, done)
    else:
        raise SweepError(f"unknown executor {executor!r}")
    rows = []
    units: dict[str, str] = {}
    headline: tuple[str, ...] = ()
    for point, (measured, u, head) in zip(points, outcomes, strict=True):
        rows.append({**point, **measured})
        units.update(u)
        headline += tuple(c for c in head if c not in headline)
    return SweepResult(t.name, axes, tuple(rows), units, headline)


def _serial(
    tasks: list[tuple[str, dict[str, Value]]], done: Callable[[int, int], None] | None
) -> list[Outcome]:
    out = []
    for i, task in enumerate(tasks):
        out.append(run_point(*task))
        if done:
            done(i + 1, len(tasks))
    return out


def _processes(
    tasks: list[tuple[str, dict[str, Value]]],
    workers: int,
    done: Callable[[int, int], None] | None,
) -> list[Outcome]:
    ctx = multiprocessing.get_context("spawn")
    pool = ctx.Pool(workers, initializer=_ignore_sigint)
    try:
        out = []
        for i, outcome in enumerate(pool.imap(_star_point, tasks)):
            out.append(outcome)
            if done:
                done(i + 1, len(tasks))
        pool.close()
    except BaseException:
        pool.terminate()  # Ctrl-C or a point's error: no orphan keeps running
        raise
    finally:
        pool.join()
    return out


def _dask(
    tasks: list[tuple[str, dict[str, Value]]],
    workers: int,
    scheduler: str | Any | None,
    done: Callable[[int, int], None] | None,
) -> list[Outcome]:
    if "trio_asyncio" in sys.modules:
        # trio-asyncio replaces asyncio's loop policy for the whole process on import:
        # every loop made outside Trio (the Dask client's own thread's) is then its
        # SyncTrioEventLoop, whose run_in_executor takes only Trio executors.
        raise SweepError(
            "Dask cannot run in a process that imported trio_asyncio (the asyncio bridge "
            "replaces asyncio's event loop policy): sweep with executor='processes', or "
            "run the sweep in its own process (`netstack sweep` does)"
        )
    try:
        distributed: Any = importlib.import_module("distributed")  # untyped calls below
    except ImportError:
        raise SweepError(
            "Dask is not installed: pip install 'netstack[sweep]' (dask[distributed])"
        ) from None
    cluster: Any = None
    if scheduler is None:
        # one thread per worker: timed mode runs one point per process at a time
        cluster = distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            dashboard_address=":0",
            processes=True,
            silence_logs=logging.ERROR,  # not a warning per point Ctrl-C cancelled
        )
        scheduler = cluster
    try:
        with distributed.Client(scheduler) as client:
            futures = client.map(_star_point, tasks, pure=False)
            try:
                for i, _ in enumerate(distributed.as_completed(futures)):
                    if done:
                        done(i + 1, len(tasks))
                results: list[Outcome] = client.gather(futures)
            except BaseException:
                client.cancel(futures)
                raise
    finally:
        if cluster is not None:
            cluster.close()
    return results


def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    step = 10 ** math.floor(math.log10((hi - lo) / n))
    for m in (1, 2, 5, 10):
        if (hi - lo) / (step * m) <= n:
            step *= m
            break
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step) + 1)]


_SERIES = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2", "#9c755f")


def render_sweep_svg(result: SweepResult, y: str | None = None, *, title: str = "") -> str:
    """*y* (default: the first headline figure, else the first measured column)
    over the first axis, one line per combination of the other axes; a
    logarithmic x axis when its values are positive and span a factor of 8 or
    more (CPU counts 1, 2, 4 … 64)."""
    if not result.axes:
        raise SweepError("nothing to plot: the sweep has no axis")
    measured = [c for c in result.columns if c not in result.params]
    ycol = result.column(y) if y else (result.headline or tuple(measured))[0]
    xname = result.axes[0].name
    xs_all = [r[xname] for r in result.rows]
    numeric_x = all(isinstance(v, int | float) and not isinstance(v, bool) for v in xs_all)
    xs_num = [float(v) for v in xs_all] if numeric_x else []
    log_x = numeric_x and min(xs_num) > 0 and max(xs_num) / min(xs_num) >= 8
    categories = list(dict.fromkeys(xs_all))
    series: dict[str, list[tuple[float, float]]] = {}
    varied = [a.name for a in result.axes[1:] if len(a.values) > 1]
    fixed = [f"{a.name}={a.values[0]}" for a in result.axes[1:] if len(a.values) == 1]
    others = tuple(varied)
    for row in result.rows:
        v = row.get(ycol)
        if not isinstance(v, int | float):
            continue
        key = ", ".join(f"{p}={row[p]}" for p in others)
        xv = row[xname]
        if not numeric_x:
            x = float(categories.index(xv))
        else:
            x = math.log2(float(xv)) if log_x else float(xv)
        series.setdefault(key, []).append((x, float(v)))
    if not series:
        raise SweepError(f"nothing to plot: column {ycol!r} has no numbers")
    w, h = 640, 400
    left, right, top, bottom = 70, 20, 40, 50
    legend = 18 * len(series) if others else 0
    h += legend
    xs = [x for pts in series.values() for x, _ in pts]
    ys = [v for pts in series.values() for _, v in pts]
    x0, x1 = min(xs), max(xs)
    if x0 == x1:
        x0, x1 = x0 - 1, x1 + 1
    y0, y1 = min(0.0, min(ys)), max(ys) * 1.08 if max(ys) > 0 else 1.0
    pw, ph = w - left - right, h - legend - top - bottom

    def px(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * pw

    def py(v: float) -> float:
        return top + ph - (v - y0) / (y1 - y0) * ph

    unit = result.units.get(ycol, "")
    label = f"{ycol} ({unit})" if unit else ycol
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">',
        f'<rect width="{w}" height="{h}" fill="white"/>',
        f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">'
        f"{escape(title or _title(result.target, fixed, label, xname))}</text>",
    ]
    for t in _nice_ticks(y0, y1):
        parts.append(
            f'<line x1="{left}" x2="{left + pw}" y1="{py(t):.1f}" y2="{py(t):.1f}" '
            'stroke="#e0e0e0"/>'
        )
        parts.append(f'<text x="{left - 6}" y="{py(t) + 4:.1f}" text-anchor="end">{t:g}</text>')
    if numeric_x:
        ticks = sorted(set(xs_num))
        labels = [(math.log2(v) if log_x else v, f"{v:g}") for v in ticks]
    else:
        labels = [(float(i), str(c)) for i, c in enumerate(categories)]
    for x, text in labels:
        parts.append(
            f'<text x="{px(x):.1f}" y="{top + ph + 18}" text-anchor="middle">{escape(text)}</text>'
        )
    parts.append(
        f'<line x1="{left}" x2="{left + pw}" y1="{top + ph}" y2="{top + ph}" stroke="black"/>'
    )
    parts.append(f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + ph}" stroke="black"/>')
    xlabel = f"{xname} (log scale)" if log_x else xname
    parts.append(
        f'<text x="{left + pw / 2}" y="{top + ph + 38}" text-anchor="middle">'
        f"{escape(xlabel)}</text>"
    )
    parts.append(
        f'<text x="16" y="{top + ph / 2}" text-anchor="middle" '
        f'transform="rotate(-90 16 {top + ph / 2})">{escape(label)}</text>'
    )
    for i, (key, pts) in enumerate(series.items()):
        colour = _SERIES[i % len(_SERIES)]
        path = " ".join(f"{px(x):.1f},{py(v):.1f}" for x, v in sorted(pts))
        parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for x, v in pts:
            parts.append(
                f'<circle cx="{px(x):.1f}" cy="{py(v):.1f}" r="3" fill="{colour}">'
                f"<title>{escape(_cell(v))}</title></circle>"
            )
            if len(series) == 1:  # one line: its values beside the points
                first = x == x0  # the first one's value to its right, clear of the axis
                parts.append(
                    f'<text x="{px(x) + (6 if first else -6):.1f}" y="{py(v) - 8:.1f}" '
                    f'text-anchor="{"start" if first else "end"}" font-size="11" '
                    f'fill="{colour}">{escape(_cell(v))}</text>'
                )
        if others:
            ly = h - legend + 18 * i + 4
            parts.append(
                f'<line x1="{left}" x2="{left + 20}" y1="{ly}" y2="{ly}" stroke="{colour}" '
                'stroke-width="2"/>'
            )
            parts.append(f'<text x="{left + 26}" y="{ly + 4}">{escape(key)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _title(target: str, fixed: list[str], label: str, xname: str) -> str:
    where = f" ({', '.join(fixed)})" if fixed else ""
    return f"sweep {target}{where}: {label} over {xname}"


def write_sweep_plot(
    result: SweepResult, path: str | Path, y: str | None = None, *, title: str = ""
) -> Path:
    """Write :func:`render_sweep_svg` to *path* (``.svg``)."""
    p = Path(path)
    if p.suffix.lower() != ".svg":
        raise SweepError(f"argument --plot: {p.name}: a sweep's plot is an SVG file (FILE.svg)")
    p.write_text(render_sweep_svg(result, y, title=title), encoding="utf-8")
    return p


def axes_help(target: Target) -> Iterable[str]:
    """``NAME=DEFAULT`` for each parameter a sweep may set on *target*."""
    for name, p in target.params.items():
        yield name if p.default is p.empty else f"{name}={p.default!r}"
