"""``ip address``: listing formats and filters, add/change/replace/del/flush and their effect."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
import trio.testing

from netstack.errors import ConfigError
from netstack.host import Host, Lab, mac_for
from netstack.wire.rtnetlink import IFA_F_SECONDARY


@contextlib.contextmanager
def fails(message: str) -> Iterator[None]:
    """Expect a ConfigError whose text is exactly *message*."""
    with pytest.raises(ConfigError) as exc:
        yield
    assert str(exc.value) == message


def mac(host: str, dev: str) -> str:
    return ":".join(f"{x:02x}" for x in mac_for(host, dev))


LO_ADDR = (
    "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN group default "
    "qlen 1000\n"
    "    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n"
    "    inet 127.0.0.1/8 scope host lo\n"
    "       valid_lft forever preferred_lft forever\n"
)


async def test_show_format(autojump_clock: trio.testing.MockClock, pair: tuple[Host, Host]) -> None:
    a, _ = pair
    assert a.ip("addr add 10.0.0.1/24 dev eth0") == ""
    assert a.ip("addr show") == LO_ADDR + (
        "2: eth0@if2: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP "
        "group default qlen 1000\n"
        f"    link/ether {mac('a', 'eth0')} brd ff:ff:ff:ff:ff:ff link-netnsid 0\n"
        "    inet 10.0.0.1/24 scope global eth0\n"
        "       valid_lft forever preferred_lft forever\n"
    )
    assert a.ip("a") == a.ip("addr") == a.ip("address list") == a.ip("ad ls") == a.ip("a s")
    assert a.ip("addr show dev lo") == a.ip("addr show lo") == LO_ADDR


async def test_family_filter_drops_link_line_and_addressless_links(
    autojump_clock: trio.testing.MockClock, pair: tuple[Host, Host]
) -> None:
    a, _ = pair
    a.ip("link add d0 type dummy")
    a.ip("addr add 10.0.0.1/24 dev eth0")
    assert a.ip("-4 addr") == (
        "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN group default "
        "qlen 1000\n"
        "    inet 127.0.0.1/8 scope host lo\n"
        "       valid_lft forever preferred_lft forever\n"
        "2: eth0@if2: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP "
        "group default qlen 1000 link-netnsid 0\n"
        "    inet 10.0.0.1/24 scope global eth0\n"
        "       valid_lft forever preferred_lft forever\n"
    )
    assert a.ip("-f inet addr") == a.ip("-family inet addr") == a.ip("-4 addr")
    assert "3: d0:" in a.ip("addr")  # without a family, address-less links are listed
    assert a.ip("-6 addr") == ""  # no IPv6 here
    assert a.ip("-0 addr").count("link/") == 3  # -0: links only


async def test_brief_and_oneline(
    autojump_clock: trio.testing.MockClock, pair: tuple[Host, Host]
) -> None:
    a, _ = pair
    a.ip("addr add 10.0.0.1/24 dev eth0")
    a.ip("addr add 10.0.0.2/24 dev eth0")
    a.ip("link add d0 type dummy")
    assert a.ip("-br addr") == (
        "lo               UNKNOWN        127.0.0.1/8 \n"
        "eth0@if2         UP             10.0.0.1/24 10.0.0.2/24 \n"
        "d0               DOWN           \n"
    )
    assert a.ip("-o addr show eth0") == (
        "2: eth0    inet 10.0.0.1/24 scope global eth0\\       valid_lft forever "
        "preferred_lft forever\n"
        "2: eth0    inet 10.0.0.2/24 scope global secondary eth0\\       valid_lft forever "
        "preferred_lft forever\n"
    )


async def test_broadcast_peer_label_scope_metric(
    autojump_clock: trio.testing.MockClock, pair: tuple[Host, Host]
) -> None:
    a, _ = pair
    a.ip("addr add 10.0.0.1/24 brd + dev eth0")
    a.ip("addr add 10.1.0.1/16 broadcast - dev eth0 label eth0:1")
    a.ip("addr add 10.2.0.1/24 brd 10.2.0.99 dev eth0 scope link")
    a.ip("addr add 10.3.0.1 peer 10.3.0.2/32 dev eth0")
    a.ip("addr add 10.4.0.1/24 dev eth0 metric 50 noprefixroute")
    assert a.ip("addr show dev eth0").split("\n", 2)[2] == (
        "    inet 10.0.0.1/24 brd 10.0.0.255 scope global eth0\n"
        "       valid_lft forever preferred_lft forever\n"
        "    inet 10.1.0.1/16 brd 10.1.0.0 scope global eth0:1\n"
        "       valid_lft forever preferred_lft forever\n"
        "    inet 10.2.0.1/24 brd 10.2.0.99 scope link eth0\n"
        "       valid_lft forever preferred_lft forever\n"
        "    inet 10.3.0.1 peer 10.3.0.2/32 scope global eth0\n"
        "       valid_lft forever preferred_lft forever\n"
        "    inet 10.4.0.1/24 metric 50 scope global noprefixroute eth0\n"
        "       valid_lft forever preferred_lft forever\n"
    )
    routes = a.ip("route")
    assert "10.4.0.0/24" not in routes  # noprefixroute
    assert "10.0.0.0/24 dev eth0 proto kernel scope link src 10.0.0.1 \n" in routes
    # filters
    assert a.ip("-o addr show label eth0:1").startswith("2: eth0    inet 10.1.0.1/16 ")
    assert a.ip("addr show label eth0:1").startswith("    inet 10.1.0.1/16")  # no link line
    assert a.ip("addr show scope link").count("    inet ") == 1
    assert a.ip("addr show to 10.3.0.0/16").count("    inet ") == 1
    assert a.ip("-br addr show dev eth0 scope global") == (
        "eth0@if2         UP             10.0.0.1/24 10.1.0.1/16 10.3.0.1 peer 10.3.0.2/32 "
        "10.4.0.1/24 metric 50 \n"
    )


async def test_secondary_and_primary_filters(
    autojump_clock: trio.testing.MockClock, pair: tuple[Host, Host]
) -> None:
    a, _ = pair
    a.ip("addr add 10.0.0.1/24 dev eth0")
    a.ip("addr add 10.0.0.2/24 dev eth0")
    in_dev = a.dev("eth0").ip_ptr
    assert in_dev is not None
    assert in_dev.ifa_list[1].ifa_flags & IFA_F_SECONDARY
    assert "scope global secondary eth0" in a.ip("addr show eth0 secondary")
    assert "10.0.0.1" not in a.ip("addr show eth0 secondary")
    assert "10.0.0.2" not in a.ip("addr show eth0 primary")
    assert "10.0.0.1/24" in a.ip("addr show eth0 permanent")
    assert a.ip("addr show eth0 dynamic") == ""  # every address here is permanent


async def test_added_address_routes_and_pings(
    autojump_clock: trio.testing.MockClock, pair: tuple[Host, Host]
) -> None:
    a, b = pair
    assert not await a.ping("10.0.0.2", count=1, timeout=1)
    a.ip("addr add 10.0.0.1/24 dev eth0")
    b.ip("address add 10.0.0.2/24 dev eth0")
    assert await a.ping("10.0.0.2")
    b.ip("addr del 10.0.0.2/24 dev eth0")
    assert not await a.ping("10.0.0.2", count=1, timeout=1)


async def test_delete_forms(
    autojump_clock: trio.testing.MockClock, pair: tuple[Host, Host]
) -> None:
    a, _ = pair
    a.ip("addr add 10.0.0.1/24 dev eth0")
    a.ip("addr add 10.1.0.1/24 dev eth0 label eth0:x")
    with fails("Error: ipv4: Address not found."):
        a.ip("addr del 10.0.0.1/16 dev eth0")  # wrong prefix length
    with fails("Error: ipv4: Address not found."):
        a.ip("addr del 10.1.0.1/24 dev eth0 label eth0:y")
    a.ip("addr del 10.0.0.1 dev eth0")  # wildcard deletion (iproute2 warns and goes on)
    a.ip("addr delete 10.1.0.1/24 dev eth0 label eth0:x")
    assert a.ip("-4 addr show eth0") == ""


async def test_replace_changes_metric(
    autojump_clock: trio.testing.MockClock, pair: tuple[Host, Host]
) -> None:
    a, _ = pair
    a.ip("addr add 10.0.0.1/24 dev eth0")
    with fails("Error: ipv4: Address already assigned."):
        a.ip("addr add 10.0.0.1/24 dev eth0")
    a.ip("addr replace 10.0.0.1/24 dev eth0 metric 20")
    assert "10.0.0.0/24 dev eth0 proto kernel scope link src 10.0.0.1 metric 20 \n" in a.ip("route")
    a.ip("addr change 10.0.0.1/24 dev eth0")
    assert "metric" not in a.ip("route")
    a.ip("addr replace 10.0.0.7/24 dev eth0")  # replace creates
    assert "10.0.0.7/24" in a.ip("addr show eth0")


async def test_flush(autojump_clock: trio.testing.MockClock, pair: tuple[Host, Host]) -> None:
    a, _ = pair
    a.ip("addr add 10.0.0.1/24 dev eth0")
    a.ip("addr add 10.0.0.2/24 dev eth0")
    a.ip("addr add 10.1.0.1/24 dev eth0")
    assert a.ip("addr flush dev eth0 secondary") == ""
    assert a.ip("-br addr show eth0") == (
        "eth0@if2         UP             10.0.0.1/24 10.1.0.1/24 \n"
    )
    assert a.ip("-s addr flush dev eth0") == (
        "\n*** Round 1, deleting 2 addresses ***\n*** Flush is complete after 1 round ***\n"
    )
    assert a.ip("-s addr flush dev eth0") == "Nothing to flush.\n"
    assert a.ip("route") == ""  # lo's 127.0.0.0/8 is a local route, in table local


async def test_stats_after_addresses(
    autojump_clock: trio.testing.MockClock, pair: tuple[Host, Host]
) -> None:
    a, _ = pair
    out = a.ip("-s addr show lo")
    assert out == LO_ADDR + (
        "    RX:  bytes packets errors dropped  missed   mcast           \n"
        "             0       0      0       0       0       0 \n"
        "    TX:  bytes packets errors dropped carrier collsns           \n"
        "             0       0      0       0       0       0 \n"
    )


async def test_address_on_down_device_gets_routes_when_up(
    autojump_clock: trio.testing.MockClock, lab: Lab
) -> None:
    h = lab.add_host("h")
    h.ip("link add d0 type dummy")
    h.ip("addr add 192.168.5.1/24 dev d0")
    assert "192.168.5.0/24" not in h.ip("route")
    assert h.ip("route show table local") == (
        "local 127.0.0.0/8 dev lo proto kernel scope host src 127.0.0.1 \n"
        "local 127.0.0.1 dev lo proto kernel scope host src 127.0.0.1 \n"
        "broadcast 127.255.255.255 dev lo proto kernel scope link src 127.0.0.1 \n"
        "local 192.168.5.1 dev d0 proto kernel scope host src 192.168.5.1 \n"
    )
    h.ip("link set d0 up")
    assert "192.168.5.0/24 dev d0 proto kernel scope link src 192.168.5.1 \n" in h.ip("route")


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("addr show dev eth9", 'Device "eth9" does not exist.'),
        ("addr add 10.0.0.1/24 dev eth9", 'Cannot find device "eth9"'),
        ("addr add 10.0.0.1/24", 'Not enough information: "dev" argument is required.'),
        (
            "addr add 300.1.1.1/24 dev eth0",
            'Error: any valid prefix is expected rather than "300.1.1.1/24".',
        ),
        (
            "addr add 10.0.0.1/33 dev eth0",
            'Error: any valid prefix is expected rather than "10.0.0.1/33".',
        ),
        ("-4 addr add x dev eth0", 'Error: inet prefix is expected rather than "x".'),
        ("addr add 10.0.0.1/24 brd x dev eth0", 'Error: inet address is expected rather than "x".'),
        (
            "addr add 10.0.0.1/24 brd + brd - dev eth0",
            'Error: duplicate "broadcast": "-" is the second value.',
        ),
        (
            "addr add 10.0.0.1/24 10.0.0.2/24 dev eth0",
            'Error: either "local" is duplicate, or "10.0.0.2/24" is a garbage.',
        ),
        (
            "addr add 10.0.0.1/24 scope galaxy dev eth0",
            'Error: argument "galaxy" is wrong: invalid scope value.',
        ),
        (
            "addr add 10.0.0.1/24 metric x dev eth0",
            'Error: argument "x" is wrong: "metric" value is invalid',
        ),
        ("addr add 10.0.0.1/24 valid_lft 0 dev eth0", "valid_lft is zero"),
        (
            "addr add 10.0.0.1/24 valid_lft 10 preferred_lft 20 dev eth0",
            "preferred_lft is greater than valid_lft",
        ),
        (
            "addr add 10.0.0.1/24 valid_lft x dev eth0",
            'Error: argument "x" is wrong: valid_lft value',
        ),
        ("addr add ::1/128 dev lo", "Error: ipv6: IPv6 is disabled on this device."),
        ("addr add fe80::1/64 brd + dev lo", "Broadcast can be set only for IPv4 addresses"),
        ("addr del 10.9.9.9/24 dev eth0", "Error: ipv4: Address not found."),
        ("addr flush", "Flush requires arguments."),
        ("-0 addr flush dev eth0", "Cannot flush link addresses."),
        ("addr show scope galaxy", 'Error: argument "galaxy" is wrong: invalid "scope"'),
        ("addr show eth0 lo", 'Error: either "dev" is duplicate, or "lo" is a garbage.'),
        ("addr show to x", 'Error: any valid prefix is expected rather than "x".'),
        ("addr foo", 'Command "foo" is unknown, try "ip address help".'),
        ("addr add", 'Not enough information: "dev" argument is required.'),
        ("addr add 10.0.0.1/24 dev", 'Command line is not complete. Try option "help"'),
        # every keyword of ipaddr_modify's loop, as iproute2 6.x answers it
        (
            "addr add 10.0.0.1/24 peer 10.0.0.2 peer 10.0.0.3 dev eth0",
            'Error: duplicate "peer": "10.0.0.3" is the second value.',
        ),
        (
            "addr add 10.0.0.1/24 remote 10.0.0.2 peer 10.0.0.3 dev eth0",
            'Error: duplicate "peer": "10.0.0.3" is the second value.',
        ),
        ("addr add 10.0.0.1/24 peer x dev eth0", 'Error: inet prefix is expected rather than "x".'),
        (
            "addr add 10.0.0.1/24 anycast 10.0.0.2 anycast 10.0.0.3 dev eth0",
            'Error: duplicate "anycast": "10.0.0.3" is the second value.',
        ),
        (
            "addr add 10.0.0.1/24 anycast x dev eth0",
            'Error: inet address is expected rather than "x".',
        ),
        (
            "addr add 10.0.0.1/24 b 10.0.0.255 broad + dev eth0",
            'Error: duplicate "broadcast": "+" is the second value.',
        ),
        (
            "addr add 10.0.0.1/24 scope dev eth0",
            'Error: argument "dev" is wrong: invalid scope value.',
        ),
        (
            "addr add 10.0.0.1/24 pre x dev eth0",
            'Error: argument "x" is wrong: "metric" value is invalid',
        ),
        (
            "addr add 10.0.0.1/24 pri x dev eth0",
            'Error: argument "x" is wrong: "metric" value is invalid',
        ),
        (
            "addr add 10.0.0.1/24 valid_lft 5 valid dev eth0",
            'Error: duplicate "valid_lft": "valid" is the second value.',
        ),
        (
            "addr add 10.0.0.1/24 preferred_lft x dev eth0",
            'Error: argument "x" is wrong: preferred_lft value',
        ),
        (
            "addr add 10.0.0.1/24 preferred_lft 5 preferred_lft 6 dev eth0",
            'Error: duplicate "preferred_lft": "preferred_lft" is the second value.',
        ),
        (
            "addr add 10.0.0.1/24 proto x dev eth0",
            'Error: argument "x" is wrong: "proto" value is invalid',
        ),
        (
            "addr add 10.0.0.1/24 proto 300 dev eth0",
            'Error: argument "300" is wrong: "proto" value is invalid',
        ),
        (
            "addr add 10.0.0.1/24 proto kernel_lo dev eth0",
            'netstack: "ip addr ... proto" is not supported',
        ),
        ("addr add 10.0.0.1/24 metric", 'Command line is not complete. Try option "help"'),
        ("addr add local", 'Command line is not complete. Try option "help"'),
        (
            "addr add 10.0.0.1/24 local 10.0.0.2/24 dev eth0",
            'Error: either "local" is duplicate, or "10.0.0.2/24" is a garbage.',
        ),
        ("addr add 224.1.1.1/24 autojoin dev eth0", 'netstack: "autojoin" is not supported'),
        ("addr add 10.0.0.1/24 autojoin dev eth0", "autojoin needs multicast address"),
    ],
)
async def test_errors(
    autojump_clock: trio.testing.MockClock, pair: tuple[Host, Host], command: str, message: str
) -> None:
    a, _ = pair
    with pytest.raises(ConfigError) as exc:
        a.ip(command)
    assert str(exc.value) == message


async def test_help_is_usage(
    autojump_clock: trio.testing.MockClock, pair: tuple[Host, Host]
) -> None:
    a, _ = pair
    for command in ("addr help", "addr add help", "addr add local help", "addr add he"):
        with pytest.raises(ConfigError) as exc:
            a.ip(command)
        assert str(exc.value).startswith("Usage: ip address {add|change|replace} IFADDR dev IFNAME")


async def test_modify_keywords_and_abbreviations(
    autojump_clock: trio.testing.MockClock, pair: tuple[Host, Host]
) -> None:
    """Abbreviations resolve as iproute2's chain does; flags are taken or ignored per family."""
    a, _ = pair
    a.ip("addr add local 10.0.0.1/24 b + label eth0:x scope link pre 7 nodad home dev eth0")
    assert a.ip("-4 addr show dev eth0").splitlines()[1] == (
        "    inet 10.0.0.1/24 metric 7 brd 10.0.0.255 scope link eth0:x"
    )
    assert "10.0.0.0/24 dev eth0 proto kernel scope link src 10.0.0.1 metric 7 \n" in a.ip("route")
    a.ip("addr add 10.0.1.1/24 valid forever preferred forever noprefixroute dev eth0")
    assert "10.0.1.0/24" not in a.ip("route")
    a.ip("addr del 10.0.1.1/24 dev eth0")
    a.ip("addr add 10.0.2.1 remote 10.0.2.9/32 dev eth0")
    assert "    inet 10.0.2.1 peer 10.0.2.9/32 scope global eth0" in a.ip("addr show dev eth0")


async def test_local_routes_of_secondary_and_carrierless_addresses(
    autojump_clock: trio.testing.MockClock, pair: tuple[Host, Host]
) -> None:
    """As Linux 6.x answers in a namespace: a secondary's local route has the primary as its
    source (fib_add_ifaddr's prim), and host-scope local routes are never ``linkdown``."""
    a, _ = pair
    a.ip("link add v1 type veth peer name v2")
    a.ip("addr add 10.5.0.1/24 dev v1")
    a.ip("addr add 10.5.0.2/24 dev v1")
    a.ip("link set v1 up")  # v2 stays down: v1 has no carrier
    assert a.ip("route show table local dev v1") == (
        "local 10.5.0.1 proto kernel scope host src 10.5.0.1 \n"
        "local 10.5.0.2 proto kernel scope host src 10.5.0.1 \n"
        "broadcast 10.5.0.255 proto kernel scope link src 10.5.0.1 linkdown \n"
    )
    a.ip("addr del 10.5.0.2/24 dev v1")
    assert "local 10.5.0.2 " not in a.ip("route show table local")
