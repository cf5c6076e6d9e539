"""Windowed min/max tracker (Kathleen Nichols' algorithm), as TCP keeps min_rtt.

Theory of operation: TCP wants the *minimum RTT over the last
``tcp_min_rtt_wlen`` seconds* (300 by default), not the all-time minimum,
so that a path whose propagation delay grows (a route change) is noticed
once the old minimum has aged out. Keeping every sample of a 5-minute
window would cost memory per socket; the kernel keeps three samples
instead — the best, second-best and third-best of the window — in
:class:`Minmax` (``struct minmax``), each a (time, value) pair
(:class:`MinmaxSample`), with the invariant that the n-th best's time is
at or after the (n-1)-th's.

* **A new best** (a value at or below the current best), or a sample
  arriving when even the third choice is older than the window, resets
  all three to the new sample (:func:`minmax_reset`): everything earlier
  is worse and older, so it can never be the answer again.
* **A new second or third best** overwrites that choice (and, for the
  second, the third too).
* **As time passes** (:func:`minmax_subwin_update`): once the best is older
  than the window, the second choice becomes the best and the third the
  second, and the new sample the third (twice, if the second was also out
  of the window). To keep the three spread over the window — which bounds
  the error when samples rise steadily — a second choice is taken from the
  second quarter of the window (when more than ``win/4`` has passed with
  the first two choices still the same sample), and a third from the second
  half (more than ``win/2`` with the last two the same).

Times and values are u32 as in the kernel: time differences wrap modulo
2**32. The functions are pure (no clock): the caller passes the time
(``tcp_jiffies32`` for TCP) and the window in the same unit.
``minmax_running_max`` is the mirror image (BBR's bandwidth filter).

Kernel: lib/win_minmax.c, include/linux/win_minmax.h.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from netstack.sites import kernel

__all__ = [
    "Minmax",
    "MinmaxSample",
    "minmax_get",
    "minmax_reset",
    "minmax_running_max",
    "minmax_running_min",
    "minmax_subwin_update",
]

U32: Final = 0xFFFFFFFF


@kernel("include/linux/win_minmax.h")
class MinmaxSample(NamedTuple):
    """One data point: when it was taken and what it measured.

    Kernel: include/linux/win_minmax.h, struct minmax_sample.
    """

    t: int  # time the measurement was taken (u32)
    v: int  # value measured (u32)


@kernel("include/linux/win_minmax.h")
class Minmax:
    """The best, 2nd best and 3rd best samples of the window (``s[0..2]``).

    A fresh tracker holds three zero samples, as a zeroed ``struct minmax``;
    TCP resets it to (now, ~0U) at socket init so the first sample wins.

    Kernel: include/linux/win_minmax.h, struct minmax.
    """

    __slots__ = ("s",)

    def __init__(self, t: int = 0, meas: int = 0) -> None:
        val = MinmaxSample(t & U32, meas & U32)
        self.s: list[MinmaxSample] = [val, val, val]

    def __repr__(self) -> str:
        return "Minmax(" + ", ".join(f"({x.t}, {x.v})" for x in self.s) + ")"


@kernel("include/linux/win_minmax.h", "minmax_get")
def minmax_get(m: Minmax) -> int:
    """The current best value. Kernel: include/linux/win_minmax.h, minmax_get()."""
    return m.s[0].v


@kernel("include/linux/win_minmax.h", "minmax_reset")
def minmax_reset(m: Minmax, t: int, meas: int) -> int:
    """Make (t, meas) all three choices; returns meas.

    Kernel: include/linux/win_minmax.h, minmax_reset().
    """
    val = MinmaxSample(t & U32, meas & U32)
    m.s[0] = m.s[1] = m.s[2] = val
    return val.v


@kernel("lib/win_minmax.c", "minmax_subwin_update")
def minmax_subwin_update(m: Minmax, win: int, val: MinmaxSample) -> int:
    """As time advances, update the 1st, 2nd and 3rd choices; returns the best.

    Kernel: lib/win_minmax.c, minmax_subwin_update().
    """
    s = m.s
    dt = (val.t - s[0].t) & U32
    if dt > win:
        # A whole window without a new best: the 2nd choice becomes the best,
        # the 3rd the 2nd, the new sample the 3rd — twice if the 2nd choice
        # was out of the window too (the 3rd was checked on entry).
        s[0] = s[1]
        s[1] = s[2]
        s[2] = val
        if (val.t - s[0].t) & U32 > win:
            s[0] = s[1]
            s[1] = s[2]
            s[2] = val
    elif s[1].t == s[0].t and dt > win // 4:
        # A quarter of the window without a new val: a 2nd choice from the
        # 2nd quarter.
        s[2] = s[1] = val
    elif s[2].t == s[1].t and dt > win // 2:
        # Half the window: a 3rd choice from the last half.
        s[2] = val
    return s[0].v


@kernel("lib/win_minmax.c", "minmax_running_max")
def minmax_running_max(m: Minmax, win: int, t: int, meas: int) -> int:
    """Feed a sample to a windowed max filter; returns the window's maximum.

    Kernel: lib/win_minmax.c, minmax_running_max().
    """
    val = MinmaxSample(t & U32, meas & U32)
    s = m.s
    if val.v >= s[0].v or (val.t - s[2].t) & U32 > win:  # found new max? nothing left?
        return minmax_reset(m, val.t, val.v)
    if val.v >= s[1].v:
        s[2] = s[1] = val
    elif val.v >= s[2].v:
        s[2] = val
    return minmax_subwin_update(m, win, val)


@kernel("lib/win_minmax.c", "minmax_running_min")
def minmax_running_min(m: Minmax, win: int, t: int, meas: int) -> int:
    """Feed a sample to a windowed min filter; returns the window's minimum.

    Kernel: lib/win_minmax.c, minmax_running_min().
    """
    val = MinmaxSample(t & U32, meas & U32)
    s = m.s
    if val.v <= s[0].v or (val.t - s[2].t) & U32 > win:  # found new min? nothing left?
        return minmax_reset(m, val.t, val.v)
    if val.v <= s[1].v:
        s[2] = s[1] = val
    elif val.v <= s[2].v:
        s[2] = val
    return minmax_subwin_update(m, win, val)
