"""netem's delay distribution tables: what iproute2 installs in ``/usr/lib/tc``.

Theory of operation: ``tc qdisc … netem delay 100ms 20ms distribution normal``
reads ``/usr/lib/tc/normal.dist``, a list of signed 16-bit values — the
inverse of the distribution's CDF sampled at 4096 points and scaled by
``NETEM_DIST_SCALE`` (8192) — and sends it to the kernel, which then draws a
delay as ``mu + sigma * table[random] / 8192``. iproute2 generates the files at
build time with the small programs in its ``netem/`` directory (from NISTnet);
netstack runs the same computations, in the same double-precision order, the
first time a table is asked for: ``normal``, ``pareto`` (a = 3) and
``paretonormal`` (¼ normal + ¾ pareto). The results are immutable and
cached for the process (a pure function of the name).

iproute2: netem/normal.c, netem/pareto.c, netem/paretonormal.c,
tc/q_netem.c (get_distribution).
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
from typing import Final

__all__ = ["NETEM_DIST_NAMES", "netem_dist_table"]

TABLESIZE: Final = 16384
TABLEFACTOR: Final = 8192  # NETEM_DIST_SCALE
SHRT_MIN: Final = -32768
SHRT_MAX: Final = 32767
NETEM_DIST_NAMES: Final = ("normal", "pareto", "paretonormal")


def _rint(x: float) -> int:
    """C's ``rint`` in the default rounding mode: half to even, as Python's round()."""
    return round(x)


def _clamp16(v: int) -> int:
    return SHRT_MIN if v < SHRT_MIN else SHRT_MAX if v > SHRT_MAX else v


@functools.cache
def _normal_inverse() -> dict[int, float]:
    """normal.c's ``table[i] = x`` for every ``i`` it reads (multiples of 4).

    normal.c steps x from -10 by 0.00005 and stores each x at
    ``rint(16384 · Φ(x))``, so ``table[i]`` is the *last* x mapping to i. The
    same x values (accumulated in doubles, in the same order) are searched
    here instead of scanned: Φ is monotonic, so a bisection finds that last x
    with ~20 erf calls per entry instead of 400,000 in all.
    """
    # x = -10.0, then x += .00005 while x < 10.05: the same double additions, in C speed
    steps = itertools.accumulate(itertools.repeat(0.00005, 410_000), initial=-10.0)
    xs = list(itertools.takewhile(lambda v: v < 10.05, steps))
    sqrt2 = math.sqrt(2.0)

    def index(v: float) -> int:
        return _rint(TABLESIZE * (0.5 + 0.5 * math.erf(v / sqrt2)))

    table: dict[int, float] = {}
    for i in range(0, TABLESIZE, 4):
        k = bisect.bisect_right(xs, i, key=index) - 1
        # an index no x maps to keeps C's uninitialised value; 0.0 here (never the case)
        table[i] = xs[k] if k >= 0 and index(xs[k]) == i else 0.0
    return table


def _pareto_value(i: int) -> int:
    """paretonormal.c, paretovalue()."""
    i = 65536 - 4 * i
    d = 1.0 / math.pow(i / 65536, 1.0 / 3.0)
    d -= 1.5
    d *= (4.0 / 3.0) * TABLEFACTOR
    return _rint(min(d, 32767.0))


@functools.cache
def netem_dist_table(name: str) -> tuple[int, ...] | None:
    """The contents of ``/usr/lib/tc/NAME.dist``, or None if iproute2 ships no such file.

    iproute2: netem/normal.c, netem/pareto.c, netem/paretonormal.c (main()).
    """
    if name == "normal":
        inv = _normal_inverse()
        return tuple(_clamp16(_rint(inv[i] * TABLEFACTOR)) for i in range(0, TABLESIZE, 4))
    if name == "pareto":
        out = []
        for i in range(65536, 0, -16):
            d = 1.0 / math.pow(i / 65536, 1.0 / 3.0)
            d -= 1.5
            d *= (4.0 / 3.0) * TABLEFACTOR
            out.append(_rint(min(d, 32767.0)))
        return tuple(out)
    if name == "paretonormal":
        inv = _normal_inverse()
        out = []
        for i in range(0, TABLESIZE, 4):
            norm = _rint(inv[i] * TABLEFACTOR)
            value = int((norm + 3 * _pareto_value(i)) / 4)  # C int division truncates
            out.append(_clamp16(value))
        return tuple(out)
    return None
