"""Experiment results as a picture: an SVG written by hand (no plotting library).

Theory of operation: the picture has two parts. On top, one pair of bars per
headline figure — emulated beside published — so the reader sees at once
whether the model lands where the seed did. Below, one stacked bar per run:
how the CPUs' busy time divides between the functions that used most of it,
spinning on locks (``_raw_spin_lock``) in red, so the mechanism that moves the
number is visible.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from netstack.experiments.common import ExperimentResult

__all__ = ["render_svg", "write_plot"]

_W = 760
_PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#76b7b2", "#edc948", "#b07aa1", "#9c755f")
_SPIN = "#e15759"
_OTHER = "#bab0ac"


def render_svg(result: ExperimentResult, *, top: int = 6) -> str:
    """The picture of *result* as an SVG document."""
    parts: list[str] = []
    y = 40
    parts.append(
        f'<text x="20" y="24" font-size="16" font-weight="bold">'
        f"{escape(result.name)}: {escape(result.seed)}</text>"
    )
    if result.headline:
        vmax = max(max(f.emulated, f.published or 0.0) for f in result.headline) or 1.0
        for f in result.headline:
            parts.append(f'<text x="20" y="{y + 14}" font-size="12">{escape(f.name)}</text>')
            for k, (value, colour, label) in enumerate(
                ((f.emulated, "#4e79a7", "emulated"), (f.published, "#bab0ac", "published"))
            ):
                if value is None:
                    continue
                w = 420 * value / vmax
                yy = y + 20 + k * 16
                parts.append(
                    f'<rect x="240" y="{yy}" width="{w:.1f}" height="13" fill="{colour}"/>'
                    f'<text x="{245 + w:.1f}" y="{yy + 11}" font-size="11">'
                    f"{value:.3g} {label}</text>"
                )
            y += 58
    y += 10
    parts.append(f'<text x="20" y="{y}" font-size="13">busy CPU time by function</text>')
    y += 10
    names: list[str] = []
    for run in result.runs:
        for name, _ns, _pct in run.report.profile[:top]:
            if name not in names and name != "_raw_spin_lock":
                names.append(name)
    colours = {n: _PALETTE[i % len(_PALETTE)] for i, n in enumerate(names)}
    colours["_raw_spin_lock"] = _SPIN
    for run in result.runs:
        parts.append(f'<text x="20" y="{y + 16}" font-size="12">{escape(run.label)}</text>')
        x = 120.0
        shown = 0.0
        for name, _ns, pct in run.report.profile:
            if name not in colours:
                continue
            w = 600 * pct / 100
            parts.append(
                f'<rect x="{x:.1f}" y="{y + 4}" width="{w:.1f}" height="18" '
                f'fill="{colours[name]}"><title>{escape(name)} {pct:.1f}%</title></rect>'
            )
            x += w
            shown += pct
        rest = max(0.0, 100 - shown)
        parts.append(
            f'<rect x="{x:.1f}" y="{y + 4}" width="{600 * rest / 100:.1f}" height="18" '
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
    y += (len(legend) + 2) // 3 * 18 + 10
    body = "\n".join(parts)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{y}" '
        f'font-family="sans-serif">\n<rect width="100%" height="100%" fill="white"/>\n'
        f"{body}\n</svg>\n"
    )


def write_plot(result: ExperimentResult, path: str | Path) -> Path:
    """Write the picture to *path*: SVG, or PNG when ``cairosvg`` is installed.

    Raises:
        ValueError: for another suffix, or PNG without ``cairosvg``.
    """
    path = Path(path)
    svg = render_svg(result)
    suffix = path.suffix.lower()
    if suffix == ".svg":
        path.write_text(svg)
        return path
    if suffix == ".png":
        try:
            import cairosvg  # type: ignore[import-not-found,import-untyped,unused-ignore]
        except ImportError:
            raise ValueError(
                "PNG output needs cairosvg (pip install cairosvg); write .svg instead"
            ) from None
        cairosvg.svg2png(bytestring=svg.encode(), write_to=str(path))
        return path
    raise ValueError(f"--plot writes .svg or .png, not {path.name!r}")
