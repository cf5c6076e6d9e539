"""Issue 18, "Beyond one machine": ``netstack sweep`` runs an experiment or a lab
function over a grid, serially, on a local process pool or on Dask, and every
point gives the same row wherever it ran."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import xml.dom.minidom
from pathlib import Path

import pytest

from netstack.cli.main import main
from netstack.experiments.sweep import (
    DASK,
    SERIAL,
    Axis,
    SweepError,
    SweepResult,
    parse_axis,
    plan,
    render_sweep_svg,
    resolve,
    sweep,
)

TESTS = Path(__file__).resolve().parents[1]
DOCS = TESTS.parent / "docs"
TINY = ["cpus=1,2", "calls=10"]  # gre-lltx: two points of a few hundred packets each


def test_axes_take_the_type_of_the_parameter() -> None:
    gre = resolve("gre-lltx")
    assert parse_axis("cpus=1,2,4", gre) == Axis("cpus", (1, 2, 4))
    assert parse_axis("cpus=1..4,8", gre) == Axis("cpus", (1, 2, 3, 4, 8))
    assert parse_axis("which=before,after", gre) == Axis("which", ("before", "after"))
    ipip = resolve("ipip-sit-gro")
    # a tuple parameter takes one element per point
    assert parse_axis("connections=1,20", ipip) == Axis("connections", (1, 20))
    assert parse_axis("duration=0.001", ipip) == Axis("duration", (0.001,))
    toy = resolve("sweep_toys:square")  # no default: int, else float, else the word
    assert parse_axis("x=3,2.5,big", toy) == Axis("x", (3, 2.5, "big"))


def test_the_grid_is_every_combination_first_axis_outermost() -> None:
    axes, points = plan(resolve("gre-lltx"), ["cpus=1,2", "size=64,200,1400"])
    assert [a.name for a in axes] == ["cpus", "size"]
    assert points == [{"cpus": c, "size": s} for c in (1, 2) for s in (64, 200, 1400)]


@pytest.mark.parametrize(
    ("target", "spec", "message"),
    [
        ("gre-lltx", "cpus=1,x", "argument cpus: invalid int value: 'x'"),
        ("gre-lltx", "cpus=4..1", "argument cpus: empty range '4..1'"),
        ("gre-lltx", "cpus=1..x", "argument cpus: a range is A..B of two integers, got '1..x'"),
        ("gre-lltx", "cpus=1,,2", "argument cpus: expected V1,V2,… (no empty values)"),
        ("gre-lltx", "cpus", "argument AXIS: expected NAME=V1,V2,… or NAME=A..B, got 'cpus'"),
        ("gre-lltx", "which=sideways", "argument which: invalid which (before, after, both)"),
        ("gre-lltx", "cpu=1", "gre-lltx has no parameter 'cpu' (parameters: calls, cpus, "),
        ("gre-lltx", "duration=1.5", "gre-lltx has no parameter 'duration'"),
        ("qdisc-validate", "duration=soon", "argument duration: invalid float value: 'soon'"),
        ("gre-lltx2", "cpus=1", "argument TARGET: invalid choice: 'gre-lltx2' (choose from"),
        ("no_such_module:f", "x=1", "argument TARGET: cannot import 'no_such_module'"),
        ("sweep_toys:nothing", "x=1", "module 'sweep_toys' has no function 'nothing'"),
    ],
)
def test_bad_input_is_refused_before_anything_runs(target: str, spec: str, message: str) -> None:
    with pytest.raises(SweepError) as e:
        sweep(target, [spec], executor=SERIAL)
    assert message in str(e.value)


def test_an_axis_given_twice_is_refused() -> None:
    with pytest.raises(SweepError, match="'cpus' given twice"):
        plan(resolve("gre-lltx"), ["cpus=1", "cpus=2"])


def test_a_lab_function_over_seeds_is_deterministic() -> None:
    first = sweep("sweep_toys:lossy_ping", ["loss=0,30", "seed=0,1"], executor=SERIAL)
    again = sweep("sweep_toys:lossy_ping", ["loss=0,30", "seed=0,1"], executor=SERIAL)
    assert first.rows == again.rows
    assert first.params == ("loss", "seed")
    assert first.columns == ("loss", "seed", "received", "rtt_ms")
    clean = [r for r in first.rows if r["loss"] == 0]
    assert [r["received"] for r in clean] == [10, 10]
    assert all(r["rtt_ms"] == pytest.approx(10.0, abs=1.5) for r in clean)  # 2 x 5 ms delay
    assert sweep("sweep_toys:square", ["x=1..4"], executor=SERIAL).rows == (
        {"x": 1, "result": 1},
        {"x": 2, "result": 4},
        {"x": 3, "result": 9},
        {"x": 4, "result": 16},
    )


def test_experiment_rows_have_the_headline_then_each_run() -> None:
    result = sweep("gre-lltx", TINY, executor=SERIAL)
    assert result.headline == ("real before/after", "sys before/after")
    assert result.default_columns() == ("cpus", "calls", "real before/after", "sys before/after")
    one, two = result.rows
    assert one["cpus"] == 1 and two["cpus"] == 2
    assert one["before: gre1 has NETIF_F_LLTX"] is False
    assert one["after: gre1 has NETIF_F_LLTX"] is True
    assert result.units["before: sys"] == "s" and result.units["real before/after"] == "x"
    # one sender has no one to contend with; two take turns through the tunnel's lock
    assert one["real before/after"] == pytest.approx(1.0, abs=0.01)
    assert float(two["real before/after"]) > 1.1
    assert result.column("real b") == "real before/after"
    with pytest.raises(SweepError, match="matches several columns"):
        result.column("before")
    table = result.render().splitlines()
    assert table[0] == "sweep gre-lltx: 2 points"
    assert table[1] == "cpus  calls  real before/after (x)  sys before/after (x)"
    assert table[2].split()[:2] == ["1", "10"]


def _in_a_fresh_process(code: str) -> None:
    """Run *code* in a new interpreter: Dask's client makes asyncio loops in its own
    threads, and trio-asyncio (imported by the asyncio tests that may share this
    worker) replaces asyncio's loop policy for the whole process, which sweep()
    refuses (test below). A fresh process makes these tests independent of order."""
    pytest.importorskip("distributed")
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=TESTS,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.splitlines()[-1] == "identical"


@pytest.mark.slow
def test_serial_and_dask_in_this_process_give_identical_rows() -> None:
    _in_a_fresh_process(
        """
        import distributed
        from netstack.experiments.sweep import DASK, SERIAL, sweep
        TINY = ["cpus=1,2", "calls=10"]
        serial = sweep("gre-lltx", TINY, executor=SERIAL)
        with distributed.LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0"
        ) as cluster:
            on_dask = sweep("gre-lltx", TINY, executor=DASK, scheduler=cluster)
        assert on_dask.rows == serial.rows
        assert on_dask.to_csv() == serial.to_csv()
        print("identical")
        """
    )


@pytest.mark.slow
def test_the_command_runs_on_a_scheduler_given_by_its_address() -> None:
    _in_a_fresh_process(
        """
        import contextlib, io, json
        import distributed
        from netstack.cli.main import main
        TINY = ["cpus=1,2", "calls=10"]
        def run(argv):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                assert main(argv) == 0
            return json.loads(out.getvalue())
        serial = run(["sweep", "gre-lltx", *TINY, "--serial", "--json", "-"])
        with distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0"
        ) as cluster:
            argv = ["experiment", "gre-lltx", "--sweep", *TINY, "--json"]
            assert run([*argv, "--scheduler", cluster.scheduler_address]) == serial
        print("identical")
        """
    )


def test_dask_in_a_process_with_trio_asyncio_is_refused_clearly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "trio_asyncio", object())  # as if imported
    with pytest.raises(SweepError, match="Dask cannot run in a process that imported"):
        sweep("gre-lltx", TINY, executor=DASK)


def test_dask_not_installed_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # import fails
    # as in a fresh `netstack sweep` process: the asyncio tests this worker may have
    # run imported trio_asyncio, which sweep() refuses before it looks for Dask
    monkeypatch.delitem(sys.modules, "trio_asyncio", raising=False)
    with pytest.raises(SystemExit) as e:
        main(["sweep", "gre-lltx", "cpus=1", "--dask"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "Dask is not installed: pip install 'netstack[sweep]'" in err


@pytest.mark.slow
def test_the_process_pool_and_a_two_worker_dask_cluster_give_identical_rows() -> None:
    _in_a_fresh_process(
        """
        from netstack.experiments.sweep import DASK, PROCESSES, SERIAL, sweep
        TINY = ["cpus=1,2", "calls=10"]
        serial = sweep("gre-lltx", TINY, executor=SERIAL)
        done = []
        pool = sweep(
            "gre-lltx", TINY, executor=PROCESSES, workers=2, done=lambda n, t: done.append((n, t))
        )
        assert pool.rows == serial.rows
        assert done == [(1, 2), (2, 2)]
        # a LocalCluster of two worker processes, started and closed by sweep()
        cluster = sweep("gre-lltx", TINY, executor=DASK, workers=2)
        assert cluster.rows == serial.rows
        print("identical")
        """
    )


def test_the_plot_draws_the_headline_over_the_first_axis() -> None:
    result = sweep("sweep_toys:lossy_ping", ["count=2,4,8,16", "loss=0,30"], executor=SERIAL)
    svg = render_sweep_svg(result, "received")
    xml.dom.minidom.parseString(svg)  # well-formed
    assert svg.count("<polyline") == 2  # one line per loss
    assert svg.count("<circle") == 8
    assert "count (log scale)" in svg  # 2..16 spans a factor of 8
    assert "loss=0" in svg and "loss=30" in svg  # the legend
    gre = sweep("gre-lltx", TINY, executor=SERIAL)
    svg = render_sweep_svg(gre)  # the first headline figure by default
    assert "real before/after (x)" in svg and "(log scale)" not in svg


def test_the_command_prints_the_table_and_writes_csv_json_and_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_csv, out_json, out_svg = tmp_path / "s.csv", tmp_path / "s.json", tmp_path / "s.svg"
    argv = ["sweep", "gre-lltx", *TINY, "--serial", "--csv", str(out_csv)]
    argv += ["--json", str(out_json), "--plot", str(out_svg), "--y", "sys before"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[1] == (
        "cpus  calls  real before/after (x)  sys before/after (x)"
    )
    assert f"wrote {out_svg}" in captured.err
    rows = list(csv.DictReader(io.StringIO(out_csv.read_text())))
    assert [r["cpus"] for r in rows] == ["1", "2"]
    assert rows[0]["after: gre1 has NETIF_F_LLTX"] == "True"
    data = json.loads(out_json.read_text())
    assert data["axes"] == {"cpus": [1, 2], "calls": [10]}
    assert data["units"]["before: sys"] == "s"
    assert float(rows[1]["real before/after"]) == data["rows"][1]["real before/after"]
    assert "sys before/after (x)" in out_svg.read_text()
    # every column as CSV on stdout (no table), a column of choice in the table
    assert main(["experiment", "gre-lltx", "--sweep", *TINY, "--serial", "--csv", "-"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == out_csv.read_text().splitlines()[1:]
    assert main(["sweep", "gre-lltx", *TINY, "--serial", "--column", "after: sys"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "cpus  calls  after: sys (s)"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["sweep", "gre-lltx", "cpus=1,x"], "netstack sweep: error: argument cpus: invalid int"),
        (["sweep", "nope", "cpus=1"], "netstack sweep: error: argument TARGET: invalid choice"),
        (["sweep", "gre-lltx", "cpu=1"], "gre-lltx has no parameter 'cpu'"),
        (["sweep", "gre-lltx", "cpus=99", "--serial"], "error: point cpus=99: cpus must be 1..16"),
        (["sweep", "gre-lltx", "cpus=1", "--plot", "x.png"], "a sweep's plot is FILE.svg"),
        (["sweep", "gre-lltx", "--plot", "x.svg"], "a plot needs an axis (NAME=V1,V2,…)"),
        (["sweep", "gre-lltx", "cpus=1", "--workers", "0"], "--workers: must be at least 1"),
        (["sweep", "gre-lltx", "cpus=1", "--serial", "--dask"], "not allowed with argument"),
        (["sweep", "sweep_toys:square", "x=1", "--serial", "--y", "z"], "'z' is no column"),
        (["experiment", "gre-lltx", "--serial"], "argument --serial: only with --sweep"),
        (
            ["experiment", "gre-lltx", "--cpus", "2", "--sweep", "cpus=1"],
            "netstack experiment: error: argument AXIS: 'cpus' given twice",
        ),
    ],
)
def test_bad_input_exits_with_status_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: netstack "), err
    assert message in err


def test_a_value_the_target_refuses_names_its_point(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["sweep", "sweep_toys:refuses", "x=2,3", "--serial"])
    assert e.value.code == 2
    assert "error: point x=3: x must be even" in capsys.readouterr().err


def test_ctrl_c_stops_the_sweep_with_status_130(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", "sweep_toys:interrupted", "x=1,2", "--serial"]) == 130
    assert capsys.readouterr().err == "netstack sweep sweep_toys:interrupted: interrupted\n"


@pytest.mark.slow
@pytest.mark.parametrize(
    "where", [["--workers", "2"], ["--dask", "--workers", "2"]], ids=["pool", "dask"]
)
def test_ctrl_c_stops_every_worker(where: list[str], tmp_path: Path) -> None:
    """SIGINT to the command's whole process group, as a terminal's Ctrl-C: the
    pool's workers (which ignore it) are terminated, or the Dask futures are
    cancelled and the LocalCluster closed (its nannies kill the stuck workers);
    the command exits with 130 and leaves no process behind."""
    if "--dask" in where:
        pytest.importorskip("distributed")
    started = tmp_path / "started"
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    argv = ["sweep", "sweep_toys:blocks", "x=1,2", f"started={started}", *where]
    proc = subprocess.Popen(
        [sys.executable, "-m", "netstack.cli.main", *argv],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
        # and SIGINT at its default, as a shell gives a foreground job: a parent started
        # with `cmd &` from a script ignores SIGINT, and the ignore survives exec
        preexec_fn=_sigint_default,
    )
    try:
        deadline = time.monotonic() + 120
        while not all(Path(f"{started}.{x}").exists() for x in (1, 2)):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the points never started"
            time.sleep(0.1)  # wall time: waiting for real processes
        assert len(_group(proc.pid)) >= 3  # the command and two workers at least
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()  # reaps it and closes the pipes
    assert proc.returncode == 130, err
    assert err.endswith("netstack sweep sweep_toys:blocks: interrupted\n"), err
    assert out == ""
    # no worker left running its two-minute point (multiprocessing's resource tracker
    # leaves when it reads the end of its pipe: give it a moment)
    deadline = time.monotonic() + 30
    while left := _group(proc.pid):
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"left running: {left}")
        time.sleep(0.1)


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _group(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group *pgid*."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(") ", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(stat.parent.name))
    return out


def test_the_docs_plot_and_table_are_drawn_from_the_committed_sweep() -> None:
    """docs/sweep.md shows the sweep of docs/sweep/gre-lltx-cpus.json: its table
    and its SVG are what the command prints and draws from those rows."""
    result = SweepResult.from_json((DOCS / "sweep" / "gre-lltx-cpus.json").read_text())
    assert result.params == ("cpus", "sockets")
    assert [r["cpus"] for r in result.rows] == [1, 2, 4, 8, 16, 32, 64]
    svg = (DOCS / "sweep" / "gre-lltx-speedup.svg").read_text()
    assert svg == render_sweep_svg(result), "regenerate: see docs/sweep.md"
    page = (DOCS / "sweep.md").read_text()
    assert result.render() in page
    assert json.loads(result.to_json()) == json.loads(
        (DOCS / "sweep" / "gre-lltx-cpus.json").read_text()
    )


def test_a_point_of_the_committed_sweep_still_gives_its_row() -> None:
    """One point of the docs' sweep, rerun: the same figures (timed mode is
    deterministic); if the cost table moved, rerun the command of docs/sweep.md."""
    result = SweepResult.from_json((DOCS / "sweep" / "gre-lltx-cpus.json").read_text())
    committed = next(r for r in result.rows if r["cpus"] == 4)
    again = sweep("gre-lltx", ["cpus=4", "sockets=8"], executor=SERIAL)
    assert again.rows == (committed,)


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_shows_the_points_done(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tty = Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    assert main(["sweep", "sweep_toys:square", "x=1,2", "--serial"]) == 0
    drawn = tty.getvalue()
    assert "sweep sweep_toys:square" in drawn
    assert "1 of 2 points" in drawn and "2 of 2 points, 0 s left" in drawn
    assert drawn.endswith("\r")  # erased at the end
    assert capsys.readouterr().out.startswith("sweep sweep_toys:square: 2 points")
