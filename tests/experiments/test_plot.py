"""The experiment plot, drawn from the figures the docs commit (``docs/experiments/*.json``):
every part is there and no text runs off the picture."""

from __future__ import annotations

import json
import re
import xml.dom.minidom
from pathlib import Path

import pytest

from netstack.experiments import EXPERIMENTS
from netstack.experiments.plot import check_plot_path, render_data

FIGURES = Path(__file__).resolve().parents[2] / "docs" / "experiments"
TEXT = re.compile(
    r'<text x="(?P<x>[\d.]+)"[^>]*font-size="(?P<size>\d+)"[^>]*>(?P<text>[^<]*)</text>'
)


def test_every_experiment_has_committed_figures() -> None:
    assert sorted(p.stem for p in FIGURES.glob("*.json")) == sorted(EXPERIMENTS)


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_plot_of_committed_figures(name: str) -> None:
    data = json.loads((FIGURES / f"{name}.json").read_text(encoding="utf-8"))
    svg = render_data(data, source=f"docs/experiments/{name}.json")
    xml.dom.minidom.parseString(svg)
    width = float(re.search(r'width="(\d+)"', svg)[1])  # type: ignore[index]
    for part in ("before and after", "busy CPU time by function", f"{name}.json"):
        assert part in svg
    if any(r["locks"] for r in data["runs"].values()):
        assert "lock_stat" in svg
    for m in TEXT.finditer(svg):
        if 'text-anchor="end"' in m[0]:
            continue
        # DejaVu Sans averages under 0.6 em a character
        right = float(m["x"]) + len(m["text"]) * 0.6 * float(m["size"])
        assert right <= width, f"{m['text']!r} runs off the picture ({right:.0f} > {width:.0f})"


def test_plot_paths() -> None:
    check_plot_path("x.svg")
    with pytest.raises(ValueError, match=r"--plot writes \.svg or \.png, not 'x\.gif'"):
        check_plot_path("x.gif")
