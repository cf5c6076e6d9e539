"""The lib/utils.c look-alikes: C number parsing, iproute2's address/prefix rules, lladdr."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from netstack.errors import ConfigError
from netstack.userspace.iproute2.ip.ip_common import (
    AF_INET,
    AF_INET6,
    AF_PACKET,
    AF_UNSPEC,
    Args,
    _get_addr_ipv4,
    get_addr,
    get_integer,
    get_prefix,
    get_u8,
    get_unsigned,
    incomplete_command,
    ll_addr_a2n,
    ll_addr_n2a,
    ll_type_n2a,
    matches,
    rtnl_group_a2n,
    rtnl_rtprot_a2n,
    rtnl_rtscope_a2n,
    rtnl_rttable_a2n,
    strtoul,
)


def test_matches_is_a_nonempty_prefix() -> None:
    assert matches("a", "add")
    assert matches("add", "add")
    assert not matches("", "add")
    assert not matches("addx", "add")
    assert not matches("d", "add")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10", (10, 2, False)),
        ("0x1f", (31, 4, False)),
        ("010", (8, 3, False)),
        ("08", (0, 1, False)),  # octal stops at 8
        ("  7", (7, 3, False)),
        ("+7", (7, 2, False)),
        ("-1", ((1 << 64) - 1, 2, False)),
        ("x", (0, 0, False)),
        ("", (0, 0, False)),
        ("0x", (0, 1, False)),  # "0" then garbage "x"
        ("99999999999999999999999", ((1 << 64) - 1, 23, True)),
    ],
)
def test_strtoul(text: str, expected: tuple[int, int, bool]) -> None:
    assert strtoul(text) == expected


@pytest.mark.parametrize(
    "text", ["0", "00", "7", "010", "09", "255", "18446744073709551615", "18446744073709551616"]
)
@pytest.mark.parametrize("base", [0, 8, 10, 16])
def test_strtoul_all_digits_as_the_loop_reads_them(text: str, base: int) -> None:
    """A word of decimal digits takes a shortcut; it answers what the C loop does
    (here reached through a leading blank, which the shortcut does not take)."""
    value, end, overflow = strtoul(" " + text, base)
    assert strtoul(text, base) == (value, end - 1 if end else 0, overflow)


def test_number_getters() -> None:
    assert get_unsigned("4294967295") == 0xFFFFFFFF
    assert get_unsigned("4294967296") is None
    assert get_unsigned("-1") is None
    assert get_unsigned("12x") is None
    assert get_unsigned("") is None
    assert get_u8("255") == 255
    assert get_u8("256") is None
    assert get_integer("-5") == -5
    assert get_integer("2147483648") is None
    assert get_integer("0x10") == 16


@pytest.mark.parametrize(
    ("text", "data", "bitlen"),
    [
        ("10.0.0.1/24", "0a000001", 24),
        ("10.0.0.1", "0a000001", 32),
        ("10.8", "0a080000", 32),  # legacy: 10.8 is 10.8.0.0
        ("10", "0a000000", 32),
        ("0x0a.0.0.1/8", "0a000001", 8),
        ("010.0.0.1", "08000001", 32),  # octal components
        ("10.0.0.0/255.255.255.0", "0a000000", 24),  # dotted mask
        ("default", "", 0),
        ("any", "", 0),
        ("0/0", "00000000", 0),
    ],
)
def test_get_prefix_accepts(text: str, data: str, bitlen: int) -> None:
    pfx = get_prefix(text, AF_UNSPEC)
    assert pfx.data.hex() == data
    assert pfx.bitlen == bitlen


@pytest.mark.parametrize(
    "text",
    [
        "300.1.1.1/24",
        "10.0.0.1/33",
        "10.0.0.",
        "1.2.3.4.5",
        "a.b.c.d",
        "10/255.0.255.0",
        "default/8",
    ],
)
def test_get_prefix_rejects(text: str) -> None:
    with pytest.raises(ConfigError) as exc:
        get_prefix(text, AF_UNSPEC)
    assert str(exc.value) == f'Error: any valid prefix is expected rather than "{text}".'
    with pytest.raises(ConfigError) as exc:
        get_prefix(text, AF_INET)
    assert str(exc.value) == f'Error: inet prefix is expected rather than "{text}".'


def test_family_rules() -> None:
    assert get_prefix("fe80::1/64", AF_UNSPEC).family == AF_INET6
    with pytest.raises(ConfigError) as exc:
        get_prefix("fe80::1", AF_INET)
    assert str(exc.value) == 'Error: inet prefix is expected rather than "fe80::1".'
    with pytest.raises(ConfigError) as exc:
        get_prefix("10.0.0.1", AF_PACKET)
    assert str(exc.value) == (
        'Error: "10.0.0.1" may be inet prefix, but it is not allowed in this context.'
    )
    with pytest.raises(ConfigError) as exc:
        get_addr("10.0.0.1/24", AF_INET)
    assert str(exc.value) == 'Error: inet address is expected rather than "10.0.0.1/24".'
    assert get_addr("10.0.0.1", AF_UNSPEC).v4 == 0x0A000001


def test_lladdr() -> None:
    assert ll_addr_a2n("02:00:00:00:00:01", 32) == bytes.fromhex("020000000001")
    assert ll_addr_a2n("2:0:0:0:0:1", 32) == bytes.fromhex("020000000001")
    assert ll_addr_a2n("0a", 32) == b"\x0a"
    assert ll_addr_a2n("1.2.3.4", 32) == bytes([1, 2, 3, 4])
    for bad, part in (
        ("02:zz:00", "zz"),
        ("02::00", ""),
        ("1ff:00", "1ff"),
        ("1.2.3.x", "1.2.3.x"),
    ):
        with pytest.raises(ConfigError) as exc:
            ll_addr_a2n(bad, 32)
        assert str(exc.value) == f'"{part}" is invalid lladdr.'
    assert ll_addr_n2a(bytes.fromhex("020000000001"), 1) == "02:00:00:00:00:01"
    assert ll_addr_n2a(bytes([10, 0, 0, 1]), 778) == "10.0.0.1"
    assert ll_type_n2a(1) == "ether"
    assert ll_type_n2a(772) == "loopback"
    assert ll_type_n2a(0xFFFE) == "none"
    assert ll_type_n2a(1234) == "[1234]"


@given(st.binary(min_size=1, max_size=8))
def test_lladdr_round_trip(addr: bytes) -> None:
    assert ll_addr_a2n(ll_addr_n2a(addr, 1), 32) == addr


def test_name_tables() -> None:
    assert rtnl_rtscope_a2n("link") == 253
    assert rtnl_rtscope_a2n("17") == 17
    assert rtnl_rtscope_a2n("256") is None
    assert rtnl_rttable_a2n("main") == 254
    assert rtnl_rttable_a2n("4000000000") == 4000000000
    assert rtnl_rtprot_a2n("static") == 4
    assert rtnl_rtprot_a2n("bogus") is None
    assert rtnl_group_a2n("default") == 0
    assert rtnl_group_a2n("-1") == 0xFFFFFFFF


def test_args_cursor() -> None:
    args = Args(["dev", "eth0", "up"])
    assert args.take() == "dev"
    assert args.value() == "eth0"
    assert args.take() == "up"
    assert not args
    with pytest.raises(ConfigError) as exc:
        args.value()
    assert str(exc.value) == 'Command line is not complete. Try option "help"'
    with pytest.raises(ConfigError):
        incomplete_command()


@pytest.mark.parametrize(
    "text",
    [
        "10.0.1.5",
        "10.8",
        "0.0.0.0",
        "255.255.255.255",
        "256.1.1.1",
        "1.2.3.4.5",
        "010.1.1.1",
        "10..1",
        "10.",
        "",
        "1.2.3.4x",
        " 1.2.3.4",
        "0x0a.1",
        "7",
    ],
)
def test_get_addr_ipv4_decimal_words_as_the_loop_reads_them(text: str) -> None:
    """Decimal octets take a shortcut; it answers what the strtoul loop does
    (here reached through a leading blank on the first part, which the loop skips)."""
    assert _get_addr_ipv4(text) == _get_addr_ipv4(" " + text)
