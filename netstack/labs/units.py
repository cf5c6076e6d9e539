"""Rates, times and sizes written the way ``tc`` reads them (``100mbit``, ``5ms``, ``32kb``).

Theory of operation: lab files and commands accept a number with tc's unit
suffixes. Rates are in bit/s (``bit``, ``kbit``, ``mbit``, ``gbit``, ``tbit``,
and ``bps``/``kbps``/``mbps``/``gbps`` for *bytes* per second, with ``i``
forms such as ``kibit`` for powers of 1024), times in seconds (``s``,
``sec``, ``ms``, ``msec``, ``us``, ``usec``; a bare number is microseconds in
tc, but seconds in a lab file where a unitless value is already a float of
seconds — so lab files pass numbers through unchanged and parse only
strings), sizes in bytes (``b``, ``k``/``kb``, ``m``/``mb``, ``g``/``gb``,
``kbit``…). Errors are ``ValueError`` with a short message.

iproute2: tc/tc_util.c (get_rate64, get_time, get_size).
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["parse_rate", "parse_size", "parse_time"]

_NUM: Final = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z]*)\s*$")

_RATE_UNITS: Final = {
    "": 1,
    "bit": 1,
    "kbit": 1e3,
    "mbit": 1e6,
    "gbit": 1e9,
    "tbit": 1e12,
    "kibit": 1024,
    "mibit": 1024**2,
    "gibit": 1024**3,
    "tibit": 1024**4,
    "bps": 8,
    "kbps": 8e3,
    "mbps": 8e6,
    "gbps": 8e9,
    "tbps": 8e12,
    "kibps": 8 * 1024,
    "mibps": 8 * 1024**2,
    "gibps": 8 * 1024**3,
    "tibps": 8 * 1024**4,
}
_TIME_UNITS: Final = {
    "s": 1.0,
    "sec": 1.0,
    "secs": 1.0,
    "ms": 1e-3,
    "msec": 1e-3,
    "msecs": 1e-3,
    "us": 1e-6,
    "usec": 1e-6,
    "usecs": 1e-6,
    "ns": 1e-9,
    "nsec": 1e-9,
    "nsecs": 1e-9,
}
_SIZE_UNITS: Final = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "g": 1024**3,
    "gb": 1024**3,
    "kbit": 1024 / 8,
    "mbit": 1024**2 / 8,
    "gbit": 1024**3 / 8,
}


def _split(text: str, what: str) -> tuple[float, str]:
    m = _NUM.match(text)
    if m is None:
        raise ValueError(f"invalid {what} {text!r}")
    return float(m.group(1)), m.group(2).lower()


def parse_rate(value: str | float) -> float:
    """A rate in bit/s: ``"100mbit"`` → 1e8; a number is taken as bit/s."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        if value <= 0:
            raise ValueError(f"invalid rate {value!r} (must be positive)")
        return float(value)
    n, unit = _split(str(value), "rate")
    if unit not in _RATE_UNITS:
        raise ValueError(f"invalid rate {value!r} (units: bit kbit mbit gbit bps kbps mbps…)")
    if n <= 0:
        raise ValueError(f"invalid rate {value!r} (must be positive)")
    return n * _RATE_UNITS[unit]


def parse_time(value: str | float) -> float:
    """A time in seconds: ``"5ms"`` → 0.005; a number is taken as seconds."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"invalid time {value!r} (must not be negative)")
        return float(value)
    n, unit = _split(str(value), "time")
    if unit not in _TIME_UNITS:
        raise ValueError(f"invalid time {value!r} (units: s ms us ns)")
    return n * _TIME_UNITS[unit]


def parse_size(value: str | int) -> int:
    """A size in bytes: ``"32kb"`` → 32768; a number is taken as bytes."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"invalid size {value!r} (must not be negative)")
        return value
    n, unit = _split(str(value), "size")
    if unit not in _SIZE_UNITS:
        raise ValueError(f"invalid size {value!r} (units: b k kb m mb g gb kbit…)")
    return round(n * _SIZE_UNITS[unit])
