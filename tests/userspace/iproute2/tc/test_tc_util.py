"""tc's unit parsers and printers: the same numbers, the same refusals, the same text."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netstack.userspace.iproute2.tc import tc_util as u

FAST = settings(max_examples=200, deadline=None, derandomize=True, database=None)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1mbit", 125000),
        ("1Mbit", 125000),
        ("1MBIT", 125000),
        ("1000", 125),  # bits per second without a unit
        ("1.5mbit", 187500),
        ("10KBps", 10000),
        ("1Kibit", 128),
        ("1mibit", 131072),
        ("2gbit", 250000000),
        ("1e3kbit", 125000),
        ("0x10", 2),  # strtod reads hex: 16 bits
        ("40gbit", 5000000000),  # beyond 32 bits: tc sends TCA_*_RATE64
    ],
)
def test_get_rate64(text: str, value: int) -> None:
    assert u.get_rate64(text) == value


@pytest.mark.parametrize("text", ["", "mbit", "1foo", "1 mbit", "1mbits", "abc", "0x10bit"])
def test_get_rate64_refuses(text: str) -> None:
    assert u.get_rate64(text) is None


def test_get_rate_32bit_refuses_what_does_not_fit() -> None:
    assert u.get_rate("1mbit") == 125000
    assert u.get_rate("40gbit") is None
    # The check is for overflow only: a fraction of a byte truncates.
    assert u.get_rate("1.5bit") == 0


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("32kb", 32768),
        ("32k", 32768),
        ("32KB", 32768),
        ("1mb", 1048576),
        ("1m", 1048576),
        ("1mbit", 131072),
        ("1kbit", 128),
        ("1.5kb", 1536),
        ("1.3kb", 1331),  # truncated, as the C conversion does
        ("10", 10),
        ("10b", 10),
        ("1gb", 1 << 30),
    ],
)
def test_get_size(text: str, value: int) -> None:
    assert u.get_size(text) == value


@pytest.mark.parametrize("text", ["", "kb", "-1", "5gb", "1tb", "1 kb", "nan", "inf"])
def test_get_size_refuses(text: str) -> None:
    assert u.get_size(text) is None


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("10ms", 10000),
        ("10msec", 10000),
        ("1s", 1000000),
        ("2secs", 2000000),
        ("100us", 100),
        ("100", 100),
        ("1.5ms", 1500),
        ("-1ms", 0xFFFFFFFF - 999),  # C's double -> unsigned conversion
    ],
)
def test_get_time(text: str, value: int) -> None:
    assert u.get_time(text) == value


@pytest.mark.parametrize("text", ["", "ms", "10m", "10 ms", "1h"])
def test_get_time_refuses(text: str) -> None:
    assert u.get_time(text) is None


def test_get_time64_is_nanoseconds() -> None:
    assert u.get_time64("1ms") == 1_000_000
    assert u.get_time64("10ns") == 10
    assert u.get_time64("1.5us") == 1500
    assert u.get_time64("1m") is None


def test_percent_is_a_u32_fraction() -> None:
    assert u.get_percent("10%") == 429496730  # rint(0.1 * 0xffffffff)
    assert u.get_percent("10") == 429496730  # a bare number is a percentage
    assert u.get_percent("100%") == 0xFFFFFFFF
    assert u.get_percent("0%") == 0
    assert u.get_percent("%") == 0  # strtod reads nothing, and "%" is allowed
    assert u.get_percent("101%") is None
    assert u.get_percent("-1%") is None
    assert u.get_percent("10%%") is None
    assert u.get_percent("ten") is None
    assert u.sprint_percent(429496730) == "10%"
    assert u.sprint_percent(u.get_percent("0.5%") or 0) == "0.5%"
    assert u.sprint_percent(0xFFFFFFFF) == "100%"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1:2", 0x10002),
        (":2", 2),
        ("1:", 0x10000),
        ("1", 1),  # no colon: a bare minor number
        ("ffff:ffff", 0xFFFFFFFF),
        ("root", 0xFFFFFFFF),
        ("none", 0),
    ],
)
def test_get_tc_classid(text: str, value: int) -> None:
    assert u.get_tc_classid(text) == value


@pytest.mark.parametrize("text", ["", "x", "1:x", "10000:", "1:10000", "1:2:3", "1;2"])
def test_get_tc_classid_refuses(text: str) -> None:
    assert u.get_tc_classid(text) is None


@pytest.mark.parametrize(
    ("text", "value"),
    [("1:", 0x10000), ("1", 0x10000), ("1:5", 0x10000), ("ffff:", 0xFFFF0000), ("none", 0)],
)
def test_get_qdisc_handle(text: str, value: int) -> None:
    assert u.get_qdisc_handle(text) == value


@pytest.mark.parametrize("text", ["", "x", "10000:", "1x", ":1"])
def test_get_qdisc_handle_refuses(text: str) -> None:
    assert u.get_qdisc_handle(text) is None


def test_print_tc_classid() -> None:
    assert u.print_tc_classid(0x10002) == "1:2"
    assert u.print_tc_classid(0x10000) == "1:"
    assert u.print_tc_classid(0x2) == ":2"
    assert u.print_tc_classid(0xFFFFFFFF) == "root"
    assert u.print_tc_classid(0) == "none"


@pytest.mark.parametrize(
    ("rate", "text", "iec"),
    [
        (125000, "1Mbit", "1000000bit"),
        (187500, "1500Kbit", "1464Kibit"),
        (125, "1Kbit", "1000bit"),
        (128, "1024bit", "1Kibit"),
        (12500000, "100Mbit", "97656Kibit"),
        (1, "8bit", "8bit"),
        (5000000000, "40Gbit", "38146Mibit"),
    ],
)
def test_sprint_rate(rate: int, text: str, iec: str) -> None:
    assert u.sprint_rate(rate) == text
    assert u.sprint_rate(rate, iec=True) == iec


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0b"),
        (1514, "1514b"),
        (1536, "1536b"),
        (32768, "32Kb"),
        (32770, "32Kb"),  # within 16 bytes of a KiB multiple
        (39018, "39018b"),
        (1048576, "1Mb"),
        (33554432, "32Mb"),
        (1 << 30, "1Gb"),
    ],
)
def test_sprint_size(size: int, text: str) -> None:
    assert u.sprint_size(size) == text


@pytest.mark.parametrize(
    ("usecs", "text"),
    [(50000, "50ms"), (5000, "5ms"), (1000000, "1s"), (1500000, "1.5s"), (999, "999us"),
     (1234567, "1.23s"), (100000, "100ms"), (1500, "1.5ms")],
)  # fmt: skip
def test_sprint_time(usecs: int, text: str) -> None:
    assert u.sprint_time(usecs) == text


def test_ticks_round_trip_as_tc_does() -> None:
    # /proc/net/psched: 15.625 ticks per microsecond
    assert u.tc_core_time2tick(100000) == 1562500
    assert u.tc_core_tick2time(1562500) == 100000
    assert u.sprint_ticks(u.tc_core_time2tick(1300)) == "1.3ms"
    assert u.tc_core_time2big(0xFFFFFFFF)
    assert not u.tc_core_time2big(100000)
    assert u.tc_calc_xmittime(125000, 32768) == 4096000
    assert u.tc_calc_xmitsize(125000, 4096000) == 32768


def test_strtod_follows_c() -> None:
    assert u.strtod("1.5e3x") == (1500.0, 5)
    assert u.strtod("  -2") == (-2.0, 4)
    assert u.strtod("0x1p4") == (16.0, 5)
    assert u.strtod("x") == (0.0, 0)
    assert u.strtod(".") == (0.0, 0)
    assert math.isinf(u.strtod("inf")[0])
    assert math.isnan(u.strtod("nan")[0])


@FAST
@given(st.text(alphabet="0123456789.:xkKmMgGbBiIpstuenaf%+- ", max_size=12))
def test_parsers_never_raise(text: str) -> None:
    """Whatever the text, a parser returns a number in range or None."""
    for fn, top in (
        (u.get_rate64, 1 << 64),
        (u.get_size, 1 << 32),
        (u.get_time, 1 << 32),
        (u.get_percent, 1 << 32),
        (u.get_tc_classid, 1 << 32),
        (u.get_qdisc_handle, 1 << 32),
    ):
        v = fn(text)
        assert v is None or 0 <= v < top
    t64 = u.get_time64(text)
    assert t64 is None or -(1 << 63) <= t64 < 1 << 63


@FAST
@given(st.integers(min_value=0, max_value=(1 << 40)))
def test_sprint_rate_reads_back(rate: int) -> None:
    """What tc prints for a rate, tc parses back to the same bits (when exact)."""
    text = u.sprint_rate(rate)
    back = u.get_rate64(text)
    assert back is not None
    assert back * 8 <= rate * 8
