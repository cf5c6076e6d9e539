"""``tc``'s unit parsers and printers, and its tick arithmetic.

Theory of operation: every number on a ``tc`` command line goes through a
handful of helpers — ``get_rate64`` (``1mbit``, ``125KBps``, ``2Gibit``),
``get_size`` (``32kb`` = 32768, ``1.5mb``), ``get_time`` (``10ms``, in µs),
``parse_percent`` (``1%``, or a bare ``1`` meaning the same) — which follow
C's ``strtod`` and its conversions to unsigned integers, so odd input is
accepted or refused exactly where ``tc`` accepts or refuses it. Times
travel to the kernel in *psched ticks* (64 ns; ``tick_in_usec`` 15.625 as
read from ``/proc/net/psched``). Output uses tc's own formats:
``sprint_rate`` (``1Mbit``, ``1500Kbit``), ``sprint_size`` (``32Kb``,
``1514b``), ``sprint_time`` (``%.3g`` with ``s``/``ms``/``us``) and the
statistics blocks of ``tc -s``.

iproute2: tc/tc_util.c, tc/tc_core.c, lib/utils.c, lib/utils_math.c,
lib/json_print.c (print_rate), lib/json_print_math.c (sprint_size).
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Final

from netstack.core.qdisc import TC_H_MAJ, TC_H_MIN, TC_H_ROOT, TC_H_UNSPEC
from netstack.sched.pkt_sched import TC_LINKLAYER_ATM, TC_LINKLAYER_ETHERNET
from netstack.userspace.iproute2.ip.ip_common import strtol, strtoul

if TYPE_CHECKING:
    from netstack.core.qdisc import ClassStats, QdiscStats

__all__ = [
    "TIME_UNITS_PER_SEC",
    "get_percent",
    "get_qdisc_handle",
    "get_rate64",
    "get_size",
    "get_tc_classid",
    "get_time",
    "get_time64",
    "parse_percent",
    "print_tc_classid",
    "sprint_rate",
    "sprint_size",
    "sprint_time",
    "strtod",
    "tc_calc_xmitsize",
    "tc_calc_xmittime",
]

TIME_UNITS_PER_SEC: Final = 1_000_000
NSEC_PER_SEC: Final = 1_000_000_000
NSEC_PER_MSEC: Final = 1_000_000
NSEC_PER_USEC: Final = 1_000
UINT32_MAX: Final = 0xFFFFFFFF
# /proc/net/psched on Linux >= 2.6.23: 000003e8 00000040 000f4240 3b9aca00
TICK_IN_USEC: Final = 1000 / 64

_FLOAT: Final = re.compile(
    r"[ \t\n\v\f\r]*[+-]?(?:"
    r"0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?"
    r"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    r"|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?"
    r"|[nN][aA][nN](?:\([0-9A-Za-z_]*\))?"
    r")"
)


def strtod(s: str) -> tuple[float, int]:
    """C ``strtod``: ``(value, end index)``; end 0 when nothing was converted."""
    m = _FLOAT.match(s)
    if m is None:
        return 0.0, 0
    text = m.group().strip(" \t\n\v\f\r")
    neg = text.startswith("-")
    body = text.lstrip("+-")
    low = body.lower()
    if low.startswith("0x"):
        mant, _, exp = low[2:].partition("p")
        whole, _, frac = mant.partition(".")
        value = float(int(whole or "0", 16))
        for i, d in enumerate(frac, 1):
            value += int(d, 16) / 16**i
        value *= 2.0 ** int(exp or "0")
    elif low.startswith("inf"):
        value = math.inf
    elif low.startswith("nan"):
        value = math.nan
    else:
        try:
            value = float(body)
        except OverflowError:  # pragma: no cover - float() returns inf instead
            value = math.inf
    return (-value if neg else value), m.end()


def _to_u64(x: float) -> int:
    """C's double → uint64 conversion on x86-64 (cvttsd2si; out of range: 2**63)."""
    if math.isnan(x) or math.isinf(x):
        return 1 << 63
    if x >= 2.0**63:
        if x >= 2.0**64:
            return 1 << 63
        return int(x)
    if x <= -(2.0**63):
        return 1 << 63
    return int(x) & ((1 << 64) - 1)


def _to_u32(x: float) -> int:
    """C's double → unsigned int conversion on x86-64 (via a 64-bit convert)."""
    if math.isnan(x) or math.isinf(x) or not -(2.0**63) < x < 2.0**63:
        return 0
    return int(x) & UINT32_MAX


def _to_s64(x: float) -> int:
    """C's double → int64 conversion (out of range: INT64_MIN)."""
    if math.isnan(x) or not -(2.0**63) <= x < 2.0**63:
        return -(1 << 63)
    return int(x)


# ---------------------------------------------------------------------------
# Parsers (lib/utils_math.c, lib/utils.c, tc/tc_util.c)
# ---------------------------------------------------------------------------

_RATE_SUFFIXES: Final = (
    ("bit", 1.0),
    ("Kibit", 1024.0),
    ("kbit", 1000.0),
    ("mibit", 1024.0 * 1024.0),
    ("mbit", 1000000.0),
    ("gibit", 1024.0 * 1024.0 * 1024.0),
    ("gbit", 1000000000.0),
    ("tibit", 1024.0 * 1024.0 * 1024.0 * 1024.0),
    ("tbit", 1000000000000.0),
    ("Bps", 8.0),
    ("KiBps", 8.0 * 1024),
    ("KBps", 8000.0),
    ("MiBps", 8.0 * 1024 * 1024),
    ("MBps", 8000000.0),
    ("GiBps", 8.0 * 1024 * 1024 * 1024),
    ("GBps", 8000000000.0),
    ("TiBps", 8.0 * 1024 * 1024 * 1024 * 1024),
    ("TBps", 8000000000000.0),
)


def _rate_bytes(text: str) -> float | None:
    bps, end = strtod(text)
    if end == 0:
        return None
    rest = text[end:]
    for name, scale in _RATE_SUFFIXES:
        if name.lower() == rest.lower():
            bps *= scale
            rest = ""
            break
    if rest:
        return None  # unknown suffix
    return bps / 8  # bytes per second


def get_rate64(text: str) -> int | None:
    """A rate in bytes/s (bits/s without a unit). iproute2: lib/utils_math.c, get_rate64()."""
    b = _rate_bytes(text)
    return None if b is None else _to_u64(b)


def get_rate(text: str) -> int | None:
    """32-bit ``get_rate`` (refuses what does not fit). iproute2: get_rate()."""
    b = _rate_bytes(text)
    if b is None:
        return None
    rate = _to_u32(b)
    if math.isnan(b) or math.isinf(b) or rate != math.floor(b):
        return None  # detect if an overflow happened
    return rate


def get_size64(text: str) -> int | None:
    """A size in bytes (``kb``/``k`` = 1024, ``mbit`` = 131072…). iproute2: get_size64()."""
    sz, end = strtod(text)
    if end == 0:
        return None
    rest = text[end:].lower()
    if rest:
        if rest in ("kb", "k"):
            sz *= 1024
        elif rest in ("gb", "g"):
            sz *= 1024 * 1024 * 1024
        elif rest == "gbit":
            sz *= 1024 * 1024 * 1024 / 8
        elif rest in ("mb", "m"):
            sz *= 1024 * 1024
        elif rest == "mbit":
            sz *= 1024 * 1024 / 8
        elif rest == "kbit":
            sz *= 1024 / 8
        elif rest != "b":
            return None
    size = _to_u64(sz)
    if math.isnan(sz) or math.isinf(sz) or float(size) != math.floor(sz):
        # detect if an overflow happened
        return None
    return size


def get_size(text: str) -> int | None:
    """``get_size``: a u32 size. iproute2: lib/utils_math.c, get_size()."""
    size = get_size64(text)
    if size is None or size > UINT32_MAX:
        return None
    return size


def get_size_and_cell(text: str) -> tuple[int, int] | None:
    """``SIZE[/CELL]``: ``(size, cell_log)`` (cell_log -1 if absent).

    iproute2: tc/tc_util.c, get_size_and_cell().
    """
    size_text, slash, cell_text = text.partition("/")
    size = get_size(size_text)
    if size is None:
        return None
    if not slash:
        return size, -1
    cell = _get_int(cell_text)
    if cell is None:
        return None
    for i in range(32):
        if 1 << i == cell:
            return size, i
    return None


def _get_int(text: str, base: int = 0) -> int | None:
    if not text:
        return None
    value, end, overflow = strtol(text, base)
    if end == 0 or end != len(text) or overflow or not -(2**31) <= value < 2**31:
        return None
    return value


def get_u16(text: str, base: int = 0) -> int | None:
    """iproute2: lib/utils.c, get_u16()."""
    if not text:
        return None
    value, end, overflow = strtoul(text, base)
    if end == 0 or end != len(text) or overflow or value > 0xFFFF:
        return None
    return value


def get_u64(text: str, base: int = 0) -> int | None:
    """iproute2: lib/utils.c, get_u64()."""
    if not text:
        return None
    value, end, overflow = strtoul(text, base)
    if end == 0 or end != len(text) or overflow:
        return None
    return value


def get_s32(text: str, base: int = 0) -> int | None:
    """iproute2: lib/utils.c, get_s32()."""
    return _get_int(text, base)


def get_time(text: str) -> int | None:
    """A time in µs (``s``/``ms``/``us``; bare = µs). iproute2: lib/utils.c, get_time()."""
    t, end = strtod(text)
    if end == 0:
        return None
    rest = text[end:].lower()
    if rest:
        if rest in ("s", "sec", "secs"):
            t *= TIME_UNITS_PER_SEC
        elif rest in ("ms", "msec", "msecs"):
            t *= TIME_UNITS_PER_SEC / 1000
        elif rest in ("us", "usec", "usecs"):
            t *= TIME_UNITS_PER_SEC / 1000000
        else:
            return None
    return _to_u32(t)


def get_time64(text: str) -> int | None:
    """A time in ns (``ns`` accepted too). iproute2: lib/utils.c, get_time64()."""
    nsec, end = strtod(text)
    if end == 0:
        return None
    rest = text[end:].lower()
    if rest:
        if rest in ("s", "sec", "secs"):
            nsec *= NSEC_PER_SEC
        elif rest in ("ms", "msec", "msecs"):
            nsec *= NSEC_PER_MSEC
        elif rest in ("us", "usec", "usecs"):
            nsec *= NSEC_PER_USEC
        elif rest not in ("ns", "nsec", "nsecs"):
            return None
    return _to_s64(nsec)


def parse_percent(text: str) -> tuple[int, float]:
    """``(status, fraction)``: 0 ok, -1 malformed, 1 out of [0, 100]%.

    A bare number is a percentage too (``10`` = 10%). iproute2: tc/tc_util.c, parse_percent().
    """
    value, end = strtod(text)
    value /= 100.0
    if value > 1.0 or value < 0.0:
        return 1, value
    rest = text[end:]
    if rest and rest != "%":
        return -1, value
    return 0, value


def set_percent(fraction: float) -> int:
    """A fraction as netem's u32 (``rint(per * UINT32_MAX)``). iproute2: q_netem.c."""
    return _to_u32(round_half_even(fraction * UINT32_MAX))


def round_half_even(x: float) -> float:
    """C ``rint`` in the default rounding mode."""
    if math.isnan(x) or math.isinf(x):
        return x
    return float(round(x))


def get_percent(text: str) -> int | None:
    """A percentage as a u32 fraction, or None. iproute2: tc/q_netem.c, get_percent()."""
    status, fraction = parse_percent(text)
    if status:
        return None
    return set_percent(fraction)


def get_qdisc_handle(text: str) -> int | None:
    """``1:``/``1``/``none`` → ``0x10000``. iproute2: tc/tc_util.c, get_qdisc_handle()."""
    if text == "none":
        return TC_H_UNSPEC
    maj, end, _ = strtoul(text, 16)
    if end == 0 or maj >= 1 << 16:
        return None
    if end < len(text) and text[end] != ":":
        return None
    return maj << 16


def get_tc_classid(text: str) -> int | None:
    """``1:2``, ``:2``, ``1:``, ``root``, ``none``. iproute2: tc/tc_util.c, get_tc_classid()."""
    if text == "root":
        return TC_H_ROOT
    if text == "none":
        return TC_H_UNSPEC
    maj, end, _ = strtoul(text, 16)
    if end == 0:  # p == str
        maj = 0
        if not text.startswith(":"):
            return None
    if end < len(text) and text[end] == ":":
        if maj >= 1 << 16:
            return None
        maj <<= 16
        rest = text[end + 1 :]
        if not rest:
            return maj
        minor, mend, _ = strtoul(rest, 16)
        if mend != len(rest) or minor >= 1 << 16:
            return None
        return maj | minor
    if end != len(text):
        return None
    return maj & 0xFFFFFFFF


def print_tc_classid(h: int) -> str:
    """iproute2: tc/tc_util.c, print_tc_classid()."""
    if h == TC_H_ROOT:
        return "root"
    if h == TC_H_UNSPEC:
        return "none"
    if TC_H_MAJ(h) == 0:
        return f":{TC_H_MIN(h):x}"
    if TC_H_MIN(h) == 0:
        return f"{TC_H_MAJ(h) >> 16:x}:"
    return f"{TC_H_MAJ(h) >> 16:x}:{TC_H_MIN(h):x}"


def get_linklayer(text: str) -> int | None:
    """iproute2: tc/tc_util.c, get_linklayer()."""
    from netstack.userspace.iproute2.ip.ip_common import matches

    if matches(text, "ethernet"):
        return TC_LINKLAYER_ETHERNET
    if matches(text, "atm") or matches(text, "adsl"):
        return TC_LINKLAYER_ATM
    return None


def sprint_linklayer(linklayer: int) -> str:
    """iproute2: tc/tc_util.c, print_linklayer()."""
    return {0: "unspec", TC_LINKLAYER_ETHERNET: "ethernet", TC_LINKLAYER_ATM: "atm"}.get(
        linklayer, "unknown"
    )


# ---------------------------------------------------------------------------
# tc_core: psched ticks
# ---------------------------------------------------------------------------


def tc_core_time2tick(time: int) -> int:
    """µs → ticks. iproute2: tc/tc_core.c, tc_core_time2tick()."""
    return _to_u32((time & UINT32_MAX) * TICK_IN_USEC)


def tc_core_tick2time(tick: int) -> int:
    """ticks → µs. iproute2: tc/tc_core.c, tc_core_tick2time()."""
    return _to_u32((tick & UINT32_MAX) / TICK_IN_USEC)


def tc_core_time2big(time: int) -> bool:
    """Would the time overflow 32-bit ticks? iproute2: tc/tc_core.c, tc_core_time2big()."""
    return (_to_u64((time & UINT32_MAX) * TICK_IN_USEC) >> 32) != 0


def tc_calc_xmittime(rate: int, size: int) -> int:
    """Ticks to send *size* bytes at *rate* bytes/s. iproute2: tc_calc_xmittime()."""
    us = TIME_UNITS_PER_SEC * (size / rate) if rate else math.inf
    return tc_core_time2tick(_to_u32(us))


def tc_calc_xmitsize(rate: int, ticks: int) -> int:
    """Bytes sent in *ticks* at *rate*. iproute2: tc/tc_core.c, tc_calc_xmitsize()."""
    return _to_u32(rate * tc_core_tick2time(ticks) / TIME_UNITS_PER_SEC)


def tc_calc_cell_log(mtu: int, cell_log: int) -> int:
    """The cell_log ``tc_calc_rtable`` settles on. iproute2: tc/tc_core.c."""
    if mtu == 0:
        mtu = 2047
    if cell_log < 0:
        cell_log = 0
        while (mtu >> cell_log) > 255:
            cell_log += 1
    return cell_log


# ---------------------------------------------------------------------------
# Printers
# ---------------------------------------------------------------------------


def sprint_rate(rate: int, iec: bool = False) -> str:
    """A rate in bytes/s as tc prints it (``1Mbit``). iproute2: lib/json_print.c, print_rate()."""
    kilo = 1024 if iec else 1000
    units = ("", "K", "M", "G", "T")
    rate = (rate << 3) & ((1 << 64) - 1)
    i = 0
    while i < len(units) - 1:
        if rate < kilo:
            break
        if rate % kilo and rate < 1000 * kilo:
            break
        rate //= kilo
        i += 1
    return f"{rate}{units[i]}{'i' if iec and i > 0 else ''}bit"


def sprint_size(sz: int) -> str:
    """iproute2: lib/json_print_math.c, sprint_size()."""
    kilo = 1024
    mega = kilo * kilo
    giga = mega * kilo
    tmp = float(sz)
    if sz >= giga and abs(giga * round(tmp / giga) - sz) < 1024:
        return f"{float(round(tmp / giga)):g}Gb"
    if sz >= mega and abs(mega * round(tmp / mega) - sz) < 1024:
        return f"{float(round(tmp / mega)):g}Mb"
    if sz >= kilo and abs(kilo * round(tmp / kilo) - sz) < 16:
        return f"{float(round(tmp / kilo)):g}Kb"
    return f"{sz}b"


def sprint_time(time: float) -> str:
    """A u32 time in µs. iproute2: lib/utils.c, print_time()."""
    t = _to_u32(time) if isinstance(time, float) else time & UINT32_MAX
    tmp = float(t)
    if tmp >= TIME_UNITS_PER_SEC:
        return f"{tmp / TIME_UNITS_PER_SEC:.3g}s"
    if tmp >= TIME_UNITS_PER_SEC / 1000:
        return f"{tmp / (TIME_UNITS_PER_SEC / 1000):.3g}ms"
    return f"{t}us"


def sprint_time64(time: int) -> str:
    """A time in ns. iproute2: lib/utils.c, print_time64()."""
    nsec = float(time)
    if time >= NSEC_PER_SEC:
        return f"{nsec / NSEC_PER_SEC:.3g}s"
    if time >= NSEC_PER_MSEC:
        return f"{nsec / NSEC_PER_MSEC:.3g}ms"
    if time >= NSEC_PER_USEC:
        return f"{nsec / NSEC_PER_USEC:.3g}us"
    return f"{time}ns"


def sprint_ticks(ticks: int) -> str:
    """iproute2: tc/tc_util.c, sprint_ticks()."""
    return sprint_time(tc_core_tick2time(ticks))


def sprint_percent(per: int) -> str:
    """A u32 fraction as ``%g%%``. iproute2: tc/q_netem.c, __print_percent()."""
    return f"{100.0 * per / UINT32_MAX:g}%"


def print_tcstats(
    stats: QdiscStats | ClassStats | None,
    prefix: str,
    iec: bool,
    sl: str,
    *,
    has_basic: bool = True,
    has_queue: bool = True,
) -> str:
    """The ``Sent … / backlog …`` block of ``tc -s``. iproute2: print_tcstats2_attr()."""
    if stats is None:
        return ""
    out = []
    if has_basic:
        out.append(f"{prefix}Sent {stats.bytes} bytes {stats.packets} pkt")
    if has_queue:
        out.append(
            f" (dropped {stats.drops}, overlimits {stats.overlimits} requeues {stats.requeues}) "
        )
        out.append(sl)
        out.append(f"{prefix}backlog {sprint_size(stats.backlog)} {stats.qlen}p")
        out.append(f" requeues {stats.requeues}")
    return "".join(out)
