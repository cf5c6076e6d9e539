"""The seed experiments, reproduced in timed mode.

Each experiment reruns one seed's benchmark on an emulated machine, with the
seed's patch off ("before") and on ("after"), from the one cost table of
:mod:`netstack.cpu.costs`; its result shows the figures beside the published
ones and the profile, lock and cache-line statistics that explain them.
"""

from __future__ import annotations

from netstack.experiments.common import Experiment, ExperimentResult, Figure, Run
from netstack.experiments.gre_ioctl import gre_ioctl
from netstack.experiments.gre_lltx import gre_lltx
from netstack.experiments.ipip_sit_gro import ipip_sit_gro
from netstack.experiments.neigh_confirm import neigh_confirm
from netstack.experiments.qdisc_validate import qdisc_validate

__all__ = [
    "EXPERIMENTS",
    "Experiment",
    "ExperimentResult",
    "Figure",
    "Run",
    "gre_ioctl",
    "gre_lltx",
    "ipip_sit_gro",
    "neigh_confirm",
    "qdisc_validate",
]

EXPERIMENTS: dict[str, Experiment] = {
    "gre-lltx": Experiment("gre-lltx", "seed 1 (2010): ip_gre: lockless xmit", gre_lltx, 16),
    "gre-ioctl": Experiment("gre-ioctl", "seed 3 (2012): fix ip_gre lockless xmits", gre_ioctl, 24),
    "neigh-confirm": Experiment(
        "neigh-confirm", "seed 2 (2012): net: output path optimizations", neigh_confirm, 24
    ),
    "ipip-sit-gro": Experiment(
        "ipip-sit-gro", "seed 4 (2014): net: enable GRO for IPIP and SIT", ipip_sit_gro, 4
    ),
    "qdisc-validate": Experiment(
        "qdisc-validate",
        "seed 5 (2014): qdisc: validate skb without holding lock",
        qdisc_validate,
        4,
    ),
}
