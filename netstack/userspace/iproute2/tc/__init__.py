"""``tc``: traffic control over the emulated kernel (qdiscs and their classes).

:func:`tc` is the whole tool: ``tc(net, "-s qdisc show dev eth0")``; hosts
offer it as ``host.tc("…")``, the shell as ``tc`` (:func:`main`).
"""

from __future__ import annotations

from netstack.userspace.iproute2.tc.tc import TC_VERSION, main, tc

__all__ = ["TC_VERSION", "main", "tc"]
