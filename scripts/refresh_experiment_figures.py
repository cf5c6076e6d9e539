"""Rerun the seed experiments and store their figures beside their pages.

Each experiment page (``docs/experiments/NAME.md``) shows a plot that the docs
build draws from ``docs/experiments/NAME.json`` — the output of ``netstack
experiment NAME --both --json`` — because running the experiments takes
minutes, too long for every docs build. Run this after a change that moves an
experiment's figures (the cost table, a patch's mechanism) and commit the JSON
with it::

    python scripts/refresh_experiment_figures.py            # all five
    python scripts/refresh_experiment_figures.py gre-lltx   # one
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from netstack.cli.experiment import run_experiment  # noqa: E402
from netstack.experiments import EXPERIMENTS  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help=", ".join(sorted(EXPERIMENTS)))
    args = parser.parse_args(argv)
    names = args.names or sorted(EXPERIMENTS)
    for name in names:
        if name not in EXPERIMENTS:
            parser.error(f"no experiment {name!r}")
    for name in names:
        wall = time.monotonic()
        result = run_experiment(name, "both")
        target = ROOT / "docs" / "experiments" / f"{name}.json"
        target.write_text(result.to_json() + "\n", encoding="utf-8")
        print(f"wrote {target.relative_to(ROOT)} ({time.monotonic() - wall:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
