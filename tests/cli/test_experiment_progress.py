"""``netstack experiment``: a progress line with the share done and the time left, and a
``--plot`` file refused before the run when it cannot be written."""

from __future__ import annotations

import io

import pytest

import netstack.experiments.plot as plot
from netstack.cli.experiment import _left, run_experiment
from netstack.cli.main import main
from netstack.experiments.common import Meter
from netstack.userspace.progress import Progress


def test_meter_interpolates_the_current_step_by_the_steps_done() -> None:
    m = Meter()
    m.plan(4, now=100.0)
    assert m.fraction(101.0) == 0.0 and m.time_left(101.0) is None  # no estimate yet
    m.step_done(now=110.0)  # a step takes 10 s
    assert m.fraction(110.0) == 0.25
    assert m.fraction(115.0) == pytest.approx(0.375)  # half way through step 2
    assert m.time_left(115.0) == pytest.approx(25.0)
    assert m.fraction(150.0) == pytest.approx((1 + 0.95) / 4)  # a slow step stops short of done
    for t in (120.0, 130.0, 140.0):
        m.step_done(now=t)
    assert m.fraction(140.0) == 1.0 and m.time_left(140.0) == 0.0


def test_time_left_reads_as_people_say_it() -> None:
    assert _left(None) == "estimating the time left"
    assert _left(9.4) == "10 s left"
    assert _left(0.2) == "1 s left"
    assert _left(125) == "2m05s left"


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_percent_and_a_note_and_erases_itself() -> None:
    tty = Tty()
    with Progress(1000, "experiment x (both)", stream=tty, counts=False) as p:
        p.note = "step 1 of 2, 9 s left"
        p.update(500)
        assert (
            tty.getvalue()
            == "\rexperiment x (both)  [###############...............]  50%  step 1 of 2, 9 s left"
        )
        p.note = ""
        p.update(1000)  # a shorter line covers the longer one
    lines = tty.getvalue().split("\r")
    assert lines[2] == "experiment x (both)  [##############################] 100%" + " " * 23
    assert lines[-2].strip() == "" and lines[-1] == ""  # erased


def test_run_experiment_draws_its_progress_on_a_terminal_only() -> None:
    tty = Tty()
    result = run_experiment("neigh-confirm", "after", stream=tty, cpus=1)
    assert result.name == "neigh-confirm"
    drawn = tty.getvalue()
    assert drawn.startswith("\rexperiment neigh-confirm (after)  [")
    assert drawn.endswith("\r") and drawn.split("\r")[-2].strip() == ""
    quiet = io.StringIO()
    run_experiment("neigh-confirm", "after", stream=quiet, cpus=1)
    assert quiet.getvalue() == ""


def test_png_plot_without_cairosvg_is_refused_before_running(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(plot, "png_available", lambda: False)

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the experiment ran")

    monkeypatch.setattr("netstack.cli.experiment.run_experiment", never)
    with pytest.raises(SystemExit):
        main(["experiment", "neigh-confirm", "--plot", "x.png"])
    assert "--plot FILE.png needs CairoSVG: pip install 'netstack[draw]'" in capsys.readouterr().err
    assert main(["shell", "--empty", "-c", "experiment --plot x.png neigh-confirm"]) == 2
    assert "needs CairoSVG" in capsys.readouterr().err


def test_before_after_both_have_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["experiment", "--help"])
    out = capsys.readouterr().out
    assert "--before              run only with the seed's patch reverted" in out
    assert "--after               run only with the seed's patch applied" in out
    assert "--both                run before and after" in out
