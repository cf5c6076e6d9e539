"""Rate-limited logging: at most ``burst`` messages per ``interval``, the rest counted.

Theory of operation: a per-packet message (a neighbour table overflow, a
martian source, a SYN flood) can be triggered by every frame an attacker
sends, so the kernel prints it only when ``net_ratelimit()`` allows: at most
``message_burst`` (10) messages in each ``message_cost`` (5 s) interval. The
first call after an interval with suppressed messages logs
``net_ratelimit: N callbacks suppressed`` and starts a new interval.

Each Net owns one :class:`RatelimitState` for ``net_ratelimit()`` (the
kernel's is global); ``net.core.message_cost`` and ``net.core.message_burst``
set it.

Kernel: lib/ratelimit.c, net/core/utils.c (net_ratelimit).
"""

from __future__ import annotations

from typing import Any

from netstack.sites import kernel

__all__ = ["RatelimitState", "ratelimit"]


@kernel("include/linux/ratelimit_types.h")
class RatelimitState:
    """Kernel: include/linux/ratelimit_types.h, struct ratelimit_state."""

    __slots__ = ("begin", "burst", "interval", "missed", "printed", "suppressed")

    def __init__(self, interval: int, burst: int) -> None:
        self.interval = interval  # jiffies; 0 turns the limit off
        self.burst = burst
        self.begin = 0
        self.printed = 0
        self.missed = 0
        self.suppressed = 0  # total ever suppressed (a statistic, not the kernel's)


@kernel("lib/ratelimit.c", "___ratelimit")
def ratelimit(rs: RatelimitState, now: int, log: Any, func: str) -> bool:
    """May the caller print now? Reports what the last interval suppressed.

    Kernel: lib/ratelimit.c, ___ratelimit().
    """
    interval = rs.interval
    if not interval:
        return True
    if not rs.begin:
        rs.begin = now
    if now > rs.begin + interval:  # time_is_before_jiffies(rs->begin + interval)
        if rs.missed:
            log.warning("callbacks_suppressed", msg=f"{func}: {rs.missed} callbacks suppressed")
            rs.missed = 0
        rs.begin = now
        rs.printed = 0
    if rs.burst and rs.burst > rs.printed:
        rs.printed += 1
        return True
    rs.missed += 1
    rs.suppressed += 1
    return False
