"""``ip`` itself: global options, object selection, usage, and a fuzz test of the whole parser."""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Iterator

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netstack.core.net import Net
from netstack.core.sysctl import SysctlTable
from netstack.errors import ConfigError
from netstack.host import Host, open_lab
from netstack.host.host import Host as HostClass
from netstack.userspace.iproute2.ip.ip import IP_USAGE, IP_VERSION, ip


@contextlib.contextmanager
def fails(message: str) -> Iterator[None]:
    """Expect a ConfigError whose text is exactly *message*."""
    with pytest.raises(ConfigError) as exc:
        yield
    assert str(exc.value) == message


async def test_objects_and_abbreviations(
    autojump_clock: trio.testing.MockClock, pair: tuple[Host, Host]
) -> None:
    a, _ = pair
    assert a.ip("link") == a.ip("l") == a.ip("li")
    assert a.ip("address") == a.ip("a") == a.ip("addr")
    assert a.ip("route") == a.ip("r") == a.ip("ro")
    assert a.ip("neighbour") == a.ip("n") == a.ip("neighbor") == a.ip("neigh")
    with fails('Object "foo" is unknown, try "ip help".'):
        a.ip("foo")
    with fails('Object "addresses" is unknown, try "ip help".'):
        a.ip("addresses")
    with fails('netstack: "ip xfrm" is not implemented'):
        a.ip("xfrm state")
    for command in ("", "help", "-help", "he"):
        with fails(IP_USAGE):
            a.ip(command)


async def test_global_options(
    autojump_clock: trio.testing.MockClock, pair: tuple[Host, Host]
) -> None:
    a, _ = pair
    assert a.ip("-V") == IP_VERSION + "\n"
    assert a.ip("-Version link") == IP_VERSION + "\n"
    assert a.ip("--stats link show lo") == a.ip("-s link show lo")
    assert a.ip("-s -s link show lo") == a.ip("-stat -statistics link show lo")
    assert a.ip("-details link show lo") == a.ip("-d link show lo")
    assert a.ip("-br link") == a.ip("-brief link")
    assert a.ip("-o link") == a.ip("-oneline link")
    assert a.ip("-c link") == a.ip("-color=never link") == a.ip("link")
    assert a.ip("-family inet addr") == a.ip("-4 addr") == a.ip("-f inet addr")
    assert a.ip("-r -N link") == a.ip("link")
    assert a.ip("-- link") == a.ip("link")
    with fails('Option "-x" is unknown, try "ip -help".'):
        a.ip("-x link")
    with fails('Option "-x" is unknown, try "ip -help".'):
        a.ip("--x link")
    with fails('Error: argument "foo" is wrong: invalid protocol family'):
        a.ip("-f foo addr")
    with fails(IP_USAGE):
        a.ip("-f")
    with fails("Invalid rcvbuf size 'x'"):
        a.ip("-rc x link")


async def test_quoting(autojump_clock: trio.testing.MockClock, pair: tuple[Host, Host]) -> None:
    a, _ = pair
    a.ip("link set eth0 alias 'the uplink'")
    assert "\n    alias the uplink\n" in a.ip("link show eth0")
    with pytest.raises(ConfigError):
        a.ip("link set eth0 alias 'unterminated")


def test_works_on_a_bare_host_without_a_lab() -> None:
    async def main() -> None:
        host = HostClass(None, "solo")
        assert ip(host.net, "-br addr") == "lo               UNKNOWN        127.0.0.1/8 ::1/128 \n"
        ip(host.net, "link add d0 type dummy")
        ip(host.net, "addr add 192.0.2.1/24 dev d0")
        ip(host.net, "link set d0 up")
        assert "192.0.2.0/24 dev d0 proto kernel scope link src 192.0.2.1 \n" in ip(
            host.net, "route"
        )

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_a_net_without_ipv4_still_lists_links() -> None:
    net = Net("bare")
    assert isinstance(net.sysctl, SysctlTable)
    assert ip(net, "link") == ""
    assert ip(net, "addr") == ""
    for command in ("route", "neigh", "addr add 10.0.0.1/8 dev lo"):
        with pytest.raises(ConfigError) as exc:
            ip(net, command)
        assert str(exc.value) in (
            "RTNETLINK answers: Operation not supported",
            'Cannot find device "lo"',
        )


# --- fuzzing: any command line either works or fails with a ConfigError -------------------

WORDS = [
    "ip",
    "link",
    "l",
    "addr",
    "a",
    "address",
    "route",
    "r",
    "ro",
    "neigh",
    "n",
    "neighbour",
    "show",
    "sh",
    "list",
    "ls",
    "add",
    "del",
    "delete",
    "set",
    "change",
    "replace",
    "append",
    "prepend",
    "flush",
    "get",
    "help",
    "dev",
    "eth0",
    "lo",
    "d0",
    "v0",
    "v1",
    "eth9",
    "type",
    "dummy",
    "veth",
    "peer",
    "name",
    "up",
    "down",
    "mtu",
    "1400",
    "0",
    "-1",
    "65536",
    "address",
    "02:00:00:00:00:01",
    "zz",
    "txqueuelen",
    "qlen",
    "alias",
    "arp",
    "on",
    "off",
    "multicast",
    "promisc",
    "allmulticast",
    "carrier",
    "group",
    "10.0.0.1/24",
    "10.0.0.1",
    "10.0.0.0/8",
    "default",
    "via",
    "10.0.0.254",
    "brd",
    "+",
    "-",
    "peer",
    "scope",
    "host",
    "link",
    "global",
    "label",
    "eth0:1",
    "metric",
    "10",
    "proto",
    "static",
    "kernel",
    "table",
    "local",
    "main",
    "all",
    "100",
    "unreachable",
    "blackhole",
    "prohibit",
    "throw",
    "broadcast",
    "src",
    "from",
    "iif",
    "oif",
    "onlink",
    "lock",
    "lladdr",
    "nud",
    "permanent",
    "reachable",
    "stale",
    "noarp",
    "none",
    "to",
    "root",
    "match",
    "exact",
    "cache",
    "fibmatch",
    "connected",
    "secondary",
    "primary",
    "noprefixroute",
    "valid_lft",
    "forever",
    "fe80::1",
    "::/0",
    "300.1.1.1",
    "x",
    "-s",
    "-d",
    "-4",
    "-6",
    "-0",
    "-o",
    "-br",
    "-h",
    "-iec",
    "-f",
    "inet",
    "'quoted word'",
    "tos",
    "0x10",
    "uid",
    "mark",
    "dsfield",
    "255.255.255.255",
    "127.0.0.1",
]


@settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    st.lists(
        st.one_of(st.sampled_from(WORDS), st.text(min_size=0, max_size=6)),
        min_size=0,
        max_size=9,
    )
)
@pytest.mark.slow
def test_fuzz_never_crashes(words: list[str]) -> None:
    async def main() -> None:
        async with open_lab() as lab:
            h = lab.add_host("h")
            lab.add_link("h:eth0", "h:peer0")
            for setup in (
                "addr add 10.0.0.1/24 dev eth0",
                "link add d0 type dummy",
                "link add v0 type veth peer name v1",
            ):
                h.ip(setup)
            errors: list[str] = []
            line = " ".join(shlex.quote(w) if not w.startswith("'") else w for w in words)
            for command in (line, " ".join(words)):
                try:
                    out = h.ip(command)
                except ConfigError as e:
                    out = str(e)  # a refusal always says something
                    errors.append(out)
                assert isinstance(out, str)
            assert all(errors)
            # the host stays usable
            assert h.ip("link show lo").startswith("1: lo: ")

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
