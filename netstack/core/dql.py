"""Byte Queue Limits: the dynamic limit on bytes queued to a device's hardware.

Theory of operation: a driver reports bytes it hands to the hardware
(:meth:`Dql.queued`, from ``netdev_tx_sent_queue``) and bytes the hardware has
finished (:meth:`Dql.completed`, from ``netdev_tx_completed_queue``).
``avail()`` is the limit minus bytes in flight; when it goes negative the stack
stops the queue (``__QUEUE_STATE_STACK_XOFF``) until completions bring it back.
The limit grows when the queue ran dry while over the limit (starvation) and
shrinks by the smallest "slack" (bytes queued beyond what was needed) seen over
``slack_hold_time``. Bulk dequeue uses ``avail()`` as its byte budget, so a
driver without BQL (limit 0) gets no bulking — as in the kernel.

Kernel: lib/dynamic_queue_limits.c, include/linux/dynamic_queue_limits.h.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import attrs

if TYPE_CHECKING:
    from netstack.cpu import Clock

__all__ = ["DQL_MAX_LIMIT", "Dql", "DqlStats"]

UINT_MAX: Final = 0xFFFFFFFF
DQL_MAX_OBJECT: Final = UINT_MAX // 16
DQL_MAX_LIMIT: Final = (UINT_MAX // 2) - DQL_MAX_OBJECT


def _posdiff(a: int, b: int) -> int:
    return a - b if a > b else 0


@attrs.frozen
class DqlStats:
    """``/sys/class/net/DEV/queues/tx-N/byte_queue_limits/*``."""

    limit: int
    limit_min: int
    limit_max: int
    inflight: int
    hold_time: int


class Dql:
    """One queue's dynamic limit (kernel: ``struct dql``)."""

    __slots__ = (
        "_clock",
        "adj_limit",
        "last_obj_cnt",
        "limit",
        "lowest_slack",
        "max_limit",
        "min_limit",
        "num_completed",
        "num_queued",
        "prev_last_obj_cnt",
        "prev_num_queued",
        "prev_ovlimit",
        "slack_hold_time",
        "slack_start_time",
    )

    def __init__(self, clock: Clock, hold_time: int | None = None) -> None:
        """Kernel: dql_init(dql, HZ)."""
        self._clock = clock
        self.max_limit = DQL_MAX_LIMIT
        self.min_limit = 0
        self.slack_hold_time = clock.hz if hold_time is None else hold_time
        self.reset(start=0)

    def reset(self, start: int | None = None) -> None:
        """Kernel: dql_reset()."""
        self.limit = self.min_limit
        self.num_queued = 0
        self.num_completed = 0
        self.last_obj_cnt = 0
        self.prev_num_queued = 0
        self.prev_last_obj_cnt = 0
        self.prev_ovlimit = 0
        self.lowest_slack = UINT_MAX
        self.slack_start_time = self._clock.jiffies if start is None else start
        self.adj_limit = self.limit

    def queued(self, count: int) -> None:
        """Record *count* bytes handed to the hardware. Kernel: dql_queued()."""
        self.last_obj_cnt = count
        self.num_queued += count

    def avail(self) -> int:
        """Bytes that may still be queued (negative: over the limit). Kernel: dql_avail()."""
        return self.adj_limit - self.num_queued

    def completed(self, count: int) -> None:
        """Record *count* bytes completed and adapt the limit. Kernel: dql_completed()."""
        num_queued = self.num_queued
        if count > num_queued - self.num_completed:
            raise ValueError(
                f"dql_completed({count}) exceeds {num_queued - self.num_completed} bytes in flight"
            )
        completed = self.num_completed + count
        limit = self.limit
        ovlimit = _posdiff(num_queued - self.num_completed, limit)
        inprogress = num_queued - completed
        prev_inprogress = self.prev_num_queued - self.num_completed
        all_prev_completed = completed >= self.prev_num_queued

        if (ovlimit and not inprogress) or (self.prev_ovlimit and all_prev_completed):
            # Starved: grow by what was sent and completed in the last
            # interval plus any previous over-limit.
            limit += _posdiff(completed, self.prev_num_queued) + self.prev_ovlimit
            self.slack_start_time = self._clock.jiffies
            self.lowest_slack = UINT_MAX
        elif inprogress and prev_inprogress and not all_prev_completed:
            # Busy the whole interval: the limit may shrink by the least slack
            # seen over slack_hold_time.
            slack = _posdiff(limit + self.prev_ovlimit, 2 * (completed - self.num_completed))
            slack_last_objs = (
                _posdiff(self.prev_last_obj_cnt, self.prev_ovlimit) if self.prev_ovlimit else 0
            )
            slack = max(slack, slack_last_objs)
            if slack < self.lowest_slack:
                self.lowest_slack = slack
            now = self._clock.jiffies
            if now > self.slack_start_time + self.slack_hold_time:
                limit = _posdiff(limit, self.lowest_slack)
                self.slack_start_time = now
                self.lowest_slack = UINT_MAX

        limit = min(max(limit, self.min_limit), self.max_limit)
        if limit != self.limit:
            self.limit = limit
            ovlimit = 0
        self.adj_limit = limit + completed
        self.prev_ovlimit = ovlimit
        self.prev_last_obj_cnt = self.last_obj_cnt
        self.num_completed = completed
        self.prev_num_queued = num_queued

    def statistics(self) -> DqlStats:
        """The values sysfs shows under ``byte_queue_limits``."""
        return DqlStats(
            self.limit,
            self.min_limit,
            self.max_limit,
            self.num_queued - self.num_completed,
            self.slack_hold_time,
        )
