"""Byte Queue Limits: the dynamic limit on bytes queued to a device's hardware.

Theory of operation: a driver reports bytes it hands to the hardware
(:meth:`Dql.queued`, from ``netdev_tx_sent_queue``) and bytes the hardware has
finished (:meth:`Dql.completed`, from ``netdev_tx_completed_queue``).
``avail()`` is the limit minus bytes in flight; when it goes negative the stack
stops the queue (``__QUEUE_STATE_STACK_XOFF``) until completions bring it back.

The limit adapts at every completion (``dql_completed``):

* **starved** — the queue was over its limit during the last interval and has
  now run dry, or was over the limit before and everything queued then has
  completed: the hardware could have sent more, so the limit grows by the
  bytes sent *and* completed in the interval plus the previous overshoot;
* **busy the whole interval** — the limit may shrink by the *slack*, the
  excess over twice the bytes completed per interval; the smallest slack seen
  over ``slack_hold_time`` (1 s) is removed once that time has passed, so a
  single quiet interval does not collapse the limit;
* the result is clamped to ``[limit_min, limit_max]``.

``adj_limit`` (limit + bytes completed so far) is what ``avail()`` compares
with bytes queued so far, so the fast path is one subtraction. Bulk dequeue
uses ``avail()`` as its byte budget, so a driver without BQL (limit 0) gets no
bulking — as in the kernel.

Stall detection (Linux 6.9+, off unless ``stall_thrs`` is set, in jiffies):
``queued()`` marks the jiffy in a 256-jiffy bitmap; ``completed()`` looks for a
queueing time more than ``stall_thrs`` before now with no completion since,
and counts it in ``stall_cnt``/``stall_max``.

Counters are Python ints: the kernel's ``unsigned int`` arithmetic wraps and
compares with signed differences (``POSDIFF``/``AFTER_EQ``); unbounded ints
give the same answers without the wrap.

Kernel: lib/dynamic_queue_limits.c, include/linux/dynamic_queue_limits.h,
net/core/net-sysfs.c (the ``byte_queue_limits`` attributes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import attrs

from netstack.sites import TIMED, kernel, spend

if TYPE_CHECKING:
    from netstack.cpu import Clock

__all__ = ["DQL_MAX_LIMIT", "Dql", "DqlStats"]

UINT_MAX: Final = 0xFFFFFFFF
DQL_MAX_OBJECT: Final = UINT_MAX // 16
DQL_MAX_LIMIT: Final = (UINT_MAX // 2) - DQL_MAX_OBJECT
BITS_PER_LONG: Final = 64
DQL_HIST_LEN: Final = 4
_HIST_BITS: Final = DQL_HIST_LEN * BITS_PER_LONG


def _posdiff(a: int, b: int) -> int:
    return a - b if a > b else 0


@attrs.frozen
class DqlStats:
    """``/sys/class/net/DEV/queues/tx-N/byte_queue_limits/*`` (times in ms, as sysfs shows)."""

    limit: int
    limit_min: int
    limit_max: int
    inflight: int
    hold_time: int
    stall_thrs: int
    stall_cnt: int
    stall_max: int


class Dql:
    """One queue's dynamic limit (kernel: ``struct dql``)."""

    __slots__ = (
        "_clock",
        "adj_limit",
        "history",
        "history_head",
        "last_obj_cnt",
        "last_reap",
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
        "stall_cnt",
        "stall_max",
        "stall_thrs",
    )

    @kernel("dql_init")
    def __init__(self, clock: Clock, hold_time: int | None = None) -> None:
        """Set up with *hold_time* jiffies of slack hold (HZ, i.e. 1 s, by default).

        Kernel: dql_init().
        """
        self._clock = clock
        self.max_limit = DQL_MAX_LIMIT
        self.min_limit = 0
        self.slack_hold_time = clock.hz if hold_time is None else hold_time
        self.stall_thrs = 0
        self.stall_cnt = 0
        self.stall_max = 0
        self.adj_limit = 0  # the kernel's struct is zeroed at allocation
        self.history = 0
        self.reset(now=0)

    @kernel("dql_reset")
    def reset(self, now: int | None = None) -> None:
        """Forget the dynamic state (``adj_limit`` stays until the next completion).

        *now* (jiffies) defaults to the clock's; construction passes 0 so that a
        device can be built outside a running clock.

        Kernel: dql_reset().
        """
        if now is None:
            now = self._clock.jiffies
        self.limit = 0
        self.num_queued = 0
        self.num_completed = 0
        self.last_obj_cnt = 0
        self.prev_num_queued = 0
        self.prev_last_obj_cnt = 0
        self.prev_ovlimit = 0
        self.lowest_slack = UINT_MAX
        self.slack_start_time = now
        self.last_reap = now
        self.history_head = now // BITS_PER_LONG
        self.history = 0

    @kernel("dql_queued")
    def queued(self, count: int) -> None:
        """Record *count* bytes handed to the hardware. Kernel: dql_queued()."""
        self.last_obj_cnt = count
        self.num_queued += count
        if not self.stall_thrs:
            return
        now = self._clock.jiffies
        now_hi = now // BITS_PER_LONG
        if now_hi != self.history_head:
            # About to reuse slots of the ring: clear the words skipped over.
            for i in range(DQL_HIST_LEN):
                if now_hi == self.history_head + i:
                    break
                word = (self.history_head + i + 1) % DQL_HIST_LEN
                self.history &= ~(((1 << BITS_PER_LONG) - 1) << (word * BITS_PER_LONG))
            self.history_head = now_hi
        self.history |= 1 << (now % _HIST_BITS)

    @kernel("dql_avail")
    def avail(self) -> int:
        """Bytes that may still be queued (negative: over the limit). Kernel: dql_avail()."""
        if TIMED:
            spend("dql_avail")
        return self.adj_limit - self.num_queued

    @kernel("dql_completed")
    def completed(self, count: int) -> None:
        """Record *count* bytes completed and adapt the limit. Kernel: dql_completed()."""
        if TIMED:
            spend("dql_completed")
        num_queued = self.num_queued
        num_completed = self.num_completed
        if count > num_queued - num_completed:  # BUG_ON in the kernel
            raise ValueError(
                f"dql_completed({count}) exceeds {num_queued - num_completed} bytes in flight"
            )
        completed = num_completed + count
        limit = self.limit
        ovlimit = _posdiff(num_queued - num_completed, limit)
        inprogress = num_queued - completed
        prev_inprogress = self.prev_num_queued - num_completed
        all_prev_completed = completed >= self.prev_num_queued  # AFTER_EQ

        if (ovlimit and not inprogress) or (self.prev_ovlimit and all_prev_completed):
            # Starved: grow by what was sent and completed in the last
            # interval plus any previous over-limit.
            limit += _posdiff(completed, self.prev_num_queued) + self.prev_ovlimit
            self.slack_start_time = self._clock.jiffies
            self.lowest_slack = UINT_MAX
        elif inprogress and prev_inprogress and not all_prev_completed:
            # Busy the whole interval: the limit may shrink by the least slack
            # seen over slack_hold_time.
            slack = _posdiff(limit + self.prev_ovlimit, 2 * (completed - num_completed))
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
        if self.stall_thrs:
            self._check_stall()

    @kernel("dql_check_stall")
    def _check_stall(self) -> None:
        """Count a completion gap longer than ``stall_thrs``. Kernel: dql_check_stall()."""
        thrs = self.stall_thrs
        now = self._clock.jiffies
        if now >= self.last_reap + thrs:
            # The oldest sample the ring still holds, or the last reap.
            start = max((self.history_head - DQL_HIST_LEN + 1) * BITS_PER_LONG, self.last_reap + 1)
            end = self.history_head * BITS_PER_LONG + (BITS_PER_LONG - 1)
            if now < end + thrs // 2:
                end = now - thrs // 2
            t = start
            while t <= end:
                if self.history >> (t % _HIST_BITS) & 1:
                    break
                t += 1
            if t <= end:
                self.stall_cnt += 1
                self.stall_max = max(self.stall_max, now - t)
        self.last_reap = now

    def statistics(self) -> DqlStats:
        """The values sysfs shows under ``byte_queue_limits`` (kernel: net-sysfs.c bql_show_*)."""
        ms = self._clock.jiffies_to_msecs
        return DqlStats(
            self.limit,
            self.min_limit,
            self.max_limit,
            self.num_queued - self.num_completed,
            ms(self.slack_hold_time),
            ms(self.stall_thrs),
            self.stall_cnt,
            self.stall_max,
        )
