"""Queueing disciplines users choose, and the ``tc`` API over them (kernel: net/sched/).

The generic machinery (``struct Qdisc``, the run loop, ``noop``, ``noqueue``,
the qdisc watchdog) lives in :mod:`netstack.core.qdisc`; this package holds
the disciplines — pfifo_fast, pfifo, bfifo, pfifo_head_drop, prio, tbf,
fq_codel, netem — the option structures ``tc`` exchanges with them
(:mod:`.pkt_sched`) and the create/change/graft/delete/dump logic
(:mod:`.sch_api`). :func:`register_qdiscs` makes every kind available on a
Net when a host is built (kernel: ``register_qdisc``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from netstack.core.qdisc import NoqueueQdisc
from netstack.sched.fifo import BfifoQdisc, PfifoHeadDropQdisc, PfifoQdisc
from netstack.sched.fq_codel import FqCodelQdisc
from netstack.sched.netem import NetemQdisc
from netstack.sched.pfifo_fast import PfifoFastQdisc
from netstack.sched.prio import PrioQdisc
from netstack.sched.tbf import TbfQdisc
from netstack.sites import kernel

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = [
    "BfifoQdisc",
    "FqCodelQdisc",
    "NetemQdisc",
    "PfifoFastQdisc",
    "PfifoHeadDropQdisc",
    "PfifoQdisc",
    "PrioQdisc",
    "TbfQdisc",
    "register_qdiscs",
]

QDISC_KINDS = (
    PfifoFastQdisc,
    PfifoQdisc,
    BfifoQdisc,
    PfifoHeadDropQdisc,
    NoqueueQdisc,
    PrioQdisc,
    TbfQdisc,
    FqCodelQdisc,
    NetemQdisc,
)


@kernel("net/sched/sch_api.c", "pktsched_init", "register_qdisc")
def register_qdiscs(net: Net) -> None:
    """Make every discipline of this package available on *net*.

    Kernel: net/sched/sch_api.c, pktsched_init() and each module's register_qdisc().
    """
    for cls in QDISC_KINDS:
        net.register_qdisc(cls.kind, cls)
