"""Experiment results as a picture: an SVG written by hand (no plotting library).

Theory of operation: the picture is drawn from the figures as ``netstack
experiment NAME --json`` prints them (:meth:`ExperimentResult.to_json`), so
the docs can plot committed figures without rerunning the experiment
(:func:`render_data`). It has four parts, top to bottom:

1. **before and after**: one group of bars per figure the runs share, a bar
   per run (the published value, where there is one, as a grey bar beside
   it), so the effect of the patch is visible at a glance;
2. **against the seed**: one pair of bars per headline ratio — emulated
   beside published — so the reader sees whether the model lands where the
   seed did;
3. **busy CPU time by function**: one stacked bar per run, the functions that
   used most of it, spinning on locks (``_raw_spin_lock``) in red — the
   mechanism that moves the number;
4. **lock_stat**: each run's most contended lock, its acquisitions and how
   many of them waited.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

from netstack.experiments.common import ExperimentResult

__all__ = ["render_data", "render_svg", "write_plot"]

_W = 760
_PALETTE = (
    "#4e79a7", "#f28e2b", "#59a14f", "#76b7b2", "#edc948", "#b07aa1",
    "#9c755f", "#ff9da7", "#17becf", "#bcbd22", "#8c564b", "#1f3b73",
)  # fmt: skip
_BEFORE, _AFTER = "#4e79a7", "#f28e2b"
_RUNS = ("#59a14f", "#b07aa1", "#76b7b2", "#9c755f")  # runs that are neither (gre-ioctl's ipip)
_PUBLISHED = "#bab0ac"
_SPIN = "#e15759"
_OTHER = "#d9d4d0"
_SKIP_UNITS = ("hex", "bool")


def _num(v: float) -> str:
    return f"{v:.3g}"


def _colours(labels: list[str]) -> dict[str, str]:
    """Before in blue, after in orange, any other run in a colour of its own."""
    out: dict[str, str] = {}
    for label in labels:
        if label.endswith("before"):
            out[label] = _BEFORE
        elif label.endswith("after"):
            out[label] = _AFTER
        else:
            out[label] = _RUNS[sum(c not in (_BEFORE, _AFTER) for c in out.values()) % len(_RUNS)]
    return out


def _label_width(labels: list[str], size: float) -> float:
    return max((len(t) for t in labels), default=0) * 0.6 * size


def _before_after(data: dict[str, Any], y: int, parts: list[str]) -> int:
    runs = data["runs"]
    labels = list(runs)
    names: list[tuple[str, str]] = []
    for run in runs.values():
        for f in run["figures"]:
            key = (f["name"], f["unit"])
            if f["unit"] not in _SKIP_UNITS and key not in names:
                names.append(key)
    names = [
        k
        for k in names
        if sum(any((f["name"], f["unit"]) == k for f in r["figures"]) for r in runs.values()) > 1
    ]
    if len(labels) < 2 or not names:
        return y
    parts.append(f'<text x="20" y="{y}" font-size="13" font-weight="bold">before and after</text>')
    y += 8
    colours = _colours(labels)
    legend = [("before", _BEFORE), ("after", _AFTER)]
    legend = [(k, c) for k, c in legend if c in colours.values()]
    legend += [(k, c) for k, c in colours.items() if c not in (_BEFORE, _AFTER)]
    legend.append(("published", _PUBLISHED))
    step = max(len(label) for label, _ in legend) * 7 + 30
    per_row = max((_W - 40) // step, 1)
    for i, (label, colour) in enumerate(legend):
        lx, ly = 20 + (i % per_row) * step, y + (i // per_row) * 18
        parts.append(
            f'<rect x="{lx}" y="{ly}" width="12" height="12" fill="{colour}"/>'
            f'<text x="{lx + 18}" y="{ly + 10}" font-size="11">{escape(label)}</text>'
        )
    y += (len(legend) - 1) // per_row * 18
    x0 = 30 + _label_width([f"{label} (published)" for label in labels], 10)
    y += 24
    for name, unit in names:
        bars: list[tuple[str, float, str]] = []
        for label, run in runs.items():
            f = next((f for f in run["figures"] if (f["name"], f["unit"]) == (name, unit)), None)
            if f is None:
                continue
            bars.append((label, f["emulated"], colours[label]))
            if f.get("published") is not None:
                bars.append((f"{label} (published)", f["published"], _PUBLISHED))
        vmax = max((abs(v) for _, v, _ in bars), default=0.0) or 1.0
        title = f"{name} ({unit})" if unit else name
        parts.append(f'<text x="20" y="{y + 12}" font-size="12">{escape(title)}</text>')
        y += 18
        for label, value, colour in bars:
            w = (_W - x0 - 70) * abs(value) / vmax
            parts.append(
                f'<rect x="{x0:.0f}" y="{y}" width="{w:.1f}" height="12" fill="{colour}">'
                f"<title>{escape(label)}: {_num(value)}</title></rect>"
                f'<text x="{x0 - 5:.0f}" y="{y + 10}" font-size="10" text-anchor="end">'
                f"{escape(label)}</text>"
                f'<text x="{x0 + 5 + w:.1f}" y="{y + 10}" font-size="10">{_num(value)}</text>'
            )
            y += 15
        y += 8
    return y + 6


def _headline(data: dict[str, Any], y: int, parts: list[str]) -> int:
    headline = data.get("headline") or []
    if not headline:
        return y
    parts.append(f'<text x="20" y="{y}" font-size="13" font-weight="bold">against the seed</text>')
    y += 8
    vmax = max(max(f["emulated"], f.get("published") or 0.0) for f in headline) or 1.0
    for f in headline:
        parts.append(f'<text x="20" y="{y + 14}" font-size="12">{escape(f["name"])}</text>')
        for k, (value, colour, label) in enumerate(
            ((f["emulated"], "#4e79a7", "emulated"), (f.get("published"), _PUBLISHED, "published"))
        ):
            if value is None:
                continue
            w = 420 * value / vmax
            yy = y + 20 + k * 16
            parts.append(
                f'<rect x="240" y="{yy}" width="{w:.1f}" height="13" fill="{colour}"/>'
                f'<text x="{245 + w:.1f}" y="{yy + 11}" font-size="11">'
                f"{_num(value)} {label}</text>"
            )
        y += 58
    return y + 10


def _profile(data: dict[str, Any], y: int, parts: list[str], top: int) -> int:
    parts.append(
        f'<text x="20" y="{y}" font-size="13" font-weight="bold">busy CPU time by function</text>'
    )
    y += 10
    names: list[str] = []
    for run in data["runs"].values():
        for entry in run["profile"][:top]:
            if entry["symbol"] not in names and entry["symbol"] != "_raw_spin_lock":
                names.append(entry["symbol"])
    colours = {n: _PALETTE[i % len(_PALETTE)] for i, n in enumerate(names)}
    colours["_raw_spin_lock"] = _SPIN
    x0 = max(120.0, 30 + _label_width(list(data["runs"]), 12))
    span = _W - 20 - x0
    for label, run in data["runs"].items():
        parts.append(f'<text x="20" y="{y + 16}" font-size="12">{escape(label)}</text>')
        x = x0
        shown = 0.0
        for entry in run["profile"]:
            name, pct = entry["symbol"], entry["percent"]
            if name not in colours:
                continue
            w = span * pct / 100
            parts.append(
                f'<rect x="{x:.1f}" y="{y + 4}" width="{w:.1f}" height="18" '
                f'fill="{colours[name]}"><title>{escape(name)} {pct:.1f}%</title></rect>'
            )
            x += w
            shown += pct
        rest = max(0.0, 100 - shown)
        parts.append(
            f'<rect x="{x:.1f}" y="{y + 4}" width="{span * rest / 100:.1f}" height="18" '
            f'fill="{_OTHER}"><title>other {rest:.1f}%</title></rect>'
        )
        y += 28
    y += 8
    legend = [*colours.items(), ("other", _OTHER)]
    for i, (name, colour) in enumerate(legend):
        lx = 20 + (i % 3) * 250
        ly = y + (i // 3) * 18
        parts.append(
            f'<rect x="{lx}" y="{ly}" width="12" height="12" fill="{colour}"/>'
            f'<text x="{lx + 18}" y="{ly + 10}" font-size="11">{escape(name)}</text>'
        )
    return y + (len(legend) + 2) // 3 * 18 + 16


def _locks(data: dict[str, Any], y: int, parts: list[str]) -> int:
    rows = []
    for label, run in data["runs"].items():
        contended = [s for s in run.get("locks", []) if s.get("acquisitions")]
        if contended:
            s = max(contended, key=lambda s: s.get("waittime_total", 0.0))
            rows.append((label, s))
    if not rows:
        return y
    parts.append(
        f'<text x="20" y="{y}" font-size="13" font-weight="bold">lock_stat: the most '
        f"contended lock of each run</text>"
    )
    y += 10
    x0 = max(120.0, 30 + _label_width([label for label, _ in rows], 12))
    for label, s in rows:
        acq, cont = s["acquisitions"], s.get("contentions", 0)
        w = 100 * cont / acq if acq else 0.0
        parts.append(
            f'<text x="20" y="{y + 13}" font-size="12">{escape(label)}</text>'
            f'<rect x="{x0:.0f}" y="{y + 3}" width="100" height="13" fill="{_OTHER}"/>'
            f'<rect x="{x0:.0f}" y="{y + 3}" width="{w:.1f}" height="13" fill="{_SPIN}"/>'
            f'<text x="{x0 + 110:.0f}" y="{y + 13}" font-size="11">{escape(s["name"])}: '
            f"{cont} of {acq} acquisitions waited, "
            f"{s.get('waittime_total', 0.0) * 1e3:.3g} ms in all</text>"
        )
        y += 20
    return y + 10


def render_data(data: dict[str, Any], *, top: int = 6, source: str | None = None) -> str:
    """The picture of an experiment's JSON figures (``--json``) as an SVG document.

    *source* names where the figures come from, in a line at the bottom.
    """
    parts: list[str] = [
        f'<text x="20" y="24" font-size="16" font-weight="bold">'
        f"{escape(data['experiment'])}: {escape(data['seed'])}</text>"
    ]
    y = 52
    y = _before_after(data, y, parts)
    y = _headline(data, y, parts)
    y = _profile(data, y, parts, top)
    y = _locks(data, y, parts)
    if source:
        parts.append(
            f'<text x="20" y="{y}" font-size="10" fill="#666">figures: {escape(source)} '
            f"(netstack experiment {escape(data['experiment'])} --both --json)</text>"
        )
        y += 12
    body = "\n".join(parts)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{y}" '
        f'viewBox="0 0 {_W} {y}" font-family="DejaVu Sans, sans-serif">\n'
        f'<rect width="100%" height="100%" fill="white"/>\n{body}\n</svg>\n'
    )


def render_svg(result: ExperimentResult, *, top: int = 6) -> str:
    """The picture of *result* as an SVG document."""
    return render_data(json.loads(result.to_json()), top=top)


def png_available() -> bool:
    """True if PNG output (CairoSVG, the ``draw`` extra) can be written."""
    try:
        import cairosvg  # noqa: F401
    except (ImportError, OSError):
        return False
    return True


def check_plot_path(path: str | Path) -> None:
    """Refuse a plot *path* that cannot be written, before anything runs.

    Raises:
        ValueError: another suffix than .svg or .png, or PNG without CairoSVG.
    """
    suffix = Path(path).suffix.lower()
    if suffix not in (".svg", ".png"):
        raise ValueError(f"--plot writes .svg or .png, not {Path(path).name!r}")
    if suffix == ".png" and not png_available():
        raise ValueError(
            "--plot FILE.png needs CairoSVG: pip install 'netstack[draw]' (or write .svg)"
        )


def write_plot(result: ExperimentResult, path: str | Path) -> Path:
    """Write the picture to *path*: SVG, or PNG when ``cairosvg`` is installed.

    Raises:
        ValueError: for another suffix, or PNG without ``cairosvg``.
    """
    check_plot_path(path)
    path = Path(path)
    svg = render_svg(result)
    if path.suffix.lower() == ".svg":
        path.write_text(svg)
        return path
    import cairosvg

    cairosvg.svg2png(bytestring=svg.encode(), write_to=str(path))
    return path
