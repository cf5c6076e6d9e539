"""Queueing disciplines users choose (kernel: net/sched/).

The generic machinery (``struct Qdisc``, the run loop, ``noop``, ``noqueue``)
lives in :mod:`netstack.core.qdisc`; this package holds the disciplines and
registers them on a Net when a host is built (kernel: ``register_qdisc``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from netstack.sched.fifo import BfifoQdisc, PfifoQdisc
from netstack.sched.pfifo_fast import PfifoFastQdisc

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = ["BfifoQdisc", "PfifoFastQdisc", "PfifoQdisc", "register_qdiscs"]


def register_qdiscs(net: Net) -> None:
    """Make every discipline of this package available on *net*."""
    for cls in (PfifoFastQdisc, PfifoQdisc, BfifoQdisc):
        net.register_qdisc(cls.kind, cls)
