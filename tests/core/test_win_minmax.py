"""lib/win_minmax.c: the windowed min/max filter, against hand-worked sequences."""

from __future__ import annotations

from netstack.core.win_minmax import (
    Minmax,
    MinmaxSample,
    minmax_get,
    minmax_reset,
    minmax_running_max,
    minmax_running_min,
)

U32 = 0xFFFFFFFF
WIN = 100  # win/4 = 25, win/2 = 50


def S(t: int, v: int) -> MinmaxSample:
    return MinmaxSample(t, v)


def test_reset_sets_all_three_choices() -> None:
    m = Minmax()
    assert m.s == [S(0, 0)] * 3
    assert minmax_reset(m, 7, U32) == U32
    assert m.s == [S(7, U32)] * 3
    assert minmax_get(m) == U32


def test_running_min_subwindows_and_expiry() -> None:
    m = Minmax(0, U32)  # as tcp_init_sock: (tcp_jiffies32, ~0U)
    # any first sample is a new best: all three reset to it
    assert minmax_running_min(m, WIN, 0, 10) == 10
    assert m.s == [S(0, 10)] * 3
    # a worse sample within the first quarter changes nothing
    assert minmax_running_min(m, WIN, 10, 20) == 10
    assert m.s == [S(0, 10)] * 3
    # past win/4 with choices 1 and 2 the same sample: a 2nd (and 3rd) choice
    assert minmax_running_min(m, WIN, 30, 20) == 10
    assert m.s == [S(0, 10), S(30, 20), S(30, 20)]
    # past win/2 with choices 2 and 3 the same: a 3rd choice
    assert minmax_running_min(m, WIN, 60, 25) == 10
    assert m.s == [S(0, 10), S(30, 20), S(60, 25)]
    # a better 3rd choice replaces the 3rd only
    assert minmax_running_min(m, WIN, 70, 22) == 10
    assert m.s == [S(0, 10), S(30, 20), S(70, 22)]
    # the best is now older than the window: shift, the new sample is the 3rd
    assert minmax_running_min(m, WIN, 101, 30) == 20
    assert m.s == [S(30, 20), S(70, 22), S(101, 30)]
    # the 2nd choice out of the window as well: shift twice
    assert minmax_running_min(m, WIN, 171, 40) == 30
    assert m.s == [S(101, 30), S(171, 40), S(171, 40)]
    # even the 3rd choice older than the window: reset to the new sample
    assert minmax_running_min(m, WIN, 272, 50) == 50
    assert m.s == [S(272, 50)] * 3
    # a new minimum always resets
    assert minmax_running_min(m, WIN, 273, 5) == 5
    assert m.s == [S(273, 5)] * 3


def test_running_min_new_second_best_overwrites_third() -> None:
    m = Minmax()
    minmax_reset(m, 0, 10)
    minmax_running_min(m, WIN, 30, 20)
    assert m.s == [S(0, 10), S(30, 20), S(30, 20)]
    assert minmax_running_min(m, WIN, 40, 15) == 10
    assert m.s == [S(0, 10), S(40, 15), S(40, 15)]
    # equal to the best counts as a new best (<=)
    assert minmax_running_min(m, WIN, 45, 10) == 10
    assert m.s == [S(45, 10)] * 3


def test_running_min_time_wraps_as_u32() -> None:
    m = Minmax()
    minmax_reset(m, U32 - 9, 10)  # 10 ticks before the u32 clock wraps
    assert minmax_running_min(m, WIN, 20, 20) == 10  # 30 ticks later: > win/4
    assert m.s == [S(U32 - 9, 10), S(20, 20), S(20, 20)]
    assert minmax_running_min(m, WIN, 91, 30) == 20  # 101 ticks after the best
    assert m.s == [S(20, 20), S(20, 20), S(91, 30)]


def test_running_max_mirrors_min() -> None:
    m = Minmax()
    assert minmax_running_max(m, WIN, 0, 100) == 100
    assert minmax_running_max(m, WIN, 30, 80) == 100
    assert m.s == [S(0, 100), S(30, 80), S(30, 80)]
    assert minmax_running_max(m, WIN, 60, 70) == 100
    assert m.s == [S(0, 100), S(30, 80), S(60, 70)]
    assert minmax_running_max(m, WIN, 101, 60) == 80
    assert m.s == [S(30, 80), S(60, 70), S(101, 60)]
    assert minmax_running_max(m, WIN, 102, 90) == 90
    assert m.s == [S(102, 90)] * 3
