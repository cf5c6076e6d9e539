"""The seed experiments, reproduced in timed mode.

Each experiment reruns one seed's benchmark on an emulated machine, with the
seed's patch off ("before") and on ("after"), from the one cost table of
:mod:`netstack.cpu.costs`; its result shows the figures beside the published
ones and the profile, lock and cache-line statistics that explain them.
"""

from __future__ import annotations

from netstack.experiments.common import Experiment, ExperimentResult, Figure, Run
from netstack.experiments.neigh_confirm import neigh_confirm

__all__ = ["EXPERIMENTS", "Experiment", "ExperimentResult", "Figure", "Run", "neigh_confirm"]

EXPERIMENTS: dict[str, Experiment] = {
    "neigh-confirm": Experiment(
        "neigh-confirm", "seed 2 (2012): net: output path optimizations", neigh_confirm, 24
    ),
}
