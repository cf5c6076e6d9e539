"""``ip route``: dump formats and filters, every change command, ``get`` and ``flush``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
import trio.testing

from netstack.errors import ConfigError
from netstack.host import Host, Lab
from netstack.ipv4 import ipv4_of
from netstack.ipv4.route import Flowi4, Rtable, ip_route_output_key, ip_rt_update_pmtu
from netstack.testing import builders
from netstack.wire.ipv4 import aton

LO_ROUTE = ""  # lo's 127.0.0.0/8 is "local" in table local, as in the kernel


@contextlib.contextmanager
def fails(message: str) -> Iterator[None]:
    """Expect a ConfigError whose text is exactly *message*."""
    with pytest.raises(ConfigError) as exc:
        yield
    assert str(exc.value) == message


@pytest.fixture
async def routed(lab: Lab) -> tuple[Host, Host, Host]:
    """a (10.0.1.1) — r (10.0.1.254 | 10.0.2.254) — b (10.0.2.1), forwarding, no default routes."""
    return builders.routed(lab, ipv4_only=False, default_routes=False)


async def test_show_main_table(
    autojump_clock: trio.testing.MockClock, routed: tuple[Host, Host, Host]
) -> None:
    a, _, _ = routed
    a.ip("route add default via 10.0.1.254")
    assert a.ip("route") == (
        "default via 10.0.1.254 dev eth0 \n"
        "10.0.1.0/24 dev eth0 proto kernel scope link src 10.0.1.1 \n" + LO_ROUTE
    )
    assert a.ip("r") == a.ip("ro") == a.ip("route show") == a.ip("route list") == a.ip("ro ls")


async def test_routes_route(
    autojump_clock: trio.testing.MockClock, routed: tuple[Host, Host, Host]
) -> None:
    a, _, b = routed
    assert not await a.ping("10.0.2.1", count=1, timeout=1)
    a.ip("route add default via 10.0.1.254")
    b.ip("route add 10.0.1.0/24 via 10.0.2.254 dev eth0")
    assert await a.ping("10.0.2.1")
    a.ip("route del default")
    assert not await a.ping("10.0.2.1", count=1, timeout=1)


async def test_every_field(
    autojump_clock: trio.testing.MockClock, routed: tuple[Host, Host, Host]
) -> None:
    a, _, _ = routed
    a.ip("route add 10.9.0.0/16 via 10.0.1.254 metric 10 proto static")
    a.ip("route add 10.8.0.0/16 dev eth0 mtu lock 1400 src 10.0.1.1")
    a.ip("route add 10.7.0.0/16 via 10.0.1.77 dev eth0 onlink")
    a.ip("route add 10.6.0.5 dev eth0 scope host")
    a.ip("route add blackhole 10.5.0.0/16")
    a.ip("route add unreachable 10.4.0.0/16 proto 99")
    a.ip("route add prohibit 10.3.0.0/16 metric 5")
    a.ip("route add throw 10.2.0.0/16")
    a.ip("route add 10.1.0.0/16 via 10.0.1.254 tos 0x10")
    assert a.ip("route") == (
        "10.0.1.0/24 dev eth0 proto kernel scope link src 10.0.1.1 \n"
        "10.1.0.0/16 tos 0x10 via 10.0.1.254 dev eth0 \n"
        "throw 10.2.0.0/16 \n"
        "prohibit 10.3.0.0/16 metric 5 \n"
        "unreachable 10.4.0.0/16 proto openr \n"
        "blackhole 10.5.0.0/16 \n"
        "10.6.0.5 dev eth0 scope host \n"
        "10.7.0.0/16 via 10.0.1.77 dev eth0 onlink \n"
        "10.8.0.0/16 dev eth0 scope link src 10.0.1.1 mtu lock 1400 \n"
        "10.9.0.0/16 via 10.0.1.254 dev eth0 proto static metric 10 \n" + LO_ROUTE
    )
    assert a.ip("-d route show 10.9.0.0/16") == (
        "unicast 10.9.0.0/16 via 10.0.1.254 dev eth0 proto static scope global metric 10 \n"
    )
    assert a.ip("-d route show table all 10.9.0.0/16") == (
        "unicast 10.9.0.0/16 via 10.0.1.254 dev eth0 table main proto static scope global "
        "metric 10 \n"
    )


async def test_table_local_and_all(
    autojump_clock: trio.testing.MockClock, routed: tuple[Host, Host, Host]
) -> None:
    a, _, _ = routed
    local = (
        "local 10.0.1.1 dev eth0 proto kernel scope host src 10.0.1.1 \n"
        "broadcast 10.0.1.255 dev eth0 proto kernel scope link src 10.0.1.1 \n"
        "local 127.0.0.0/8 dev lo proto kernel scope host src 127.0.0.1 \n"
        "local 127.0.0.1 dev lo proto kernel scope host src 127.0.0.1 \n"
        "broadcast 127.255.255.255 dev lo proto kernel scope link src 127.0.0.1 \n"
    )
    assert a.ip("route show table local") == local
    assert a.ip("route show table 255") == local
    a.ip("route add 10.9.0.0/16 dev eth0 table 100")
    assert a.ip("route show table 100") == "10.9.0.0/16 dev eth0 scope link \n"
    everything = a.ip("route show table all")
    assert everything.startswith("10.9.0.0/16 dev eth0 table 100 scope link \n")
    assert "local 10.0.1.1 dev eth0 table local proto kernel scope host src 10.0.1.1 \n" in (
        everything
    )
    assert a.ip("route show table 0") == everything
    a.ip("route add local 10.0.1.99 dev eth0")
    assert "local 10.0.1.99 dev eth0 scope host \n" in a.ip("route show table local")


async def test_show_filters(
    autojump_clock: trio.testing.MockClock, routed: tuple[Host, Host, Host]
) -> None:
    a, _, _ = routed
    a.ip("route add 10.9.0.0/16 via 10.0.1.254 metric 10 proto static")
    a.ip("route add blackhole 10.5.0.0/16")
    a.ip("route add default via 10.0.1.254")
    # a filter that pins a field does not repeat it
    assert a.ip("route show proto static") == "10.9.0.0/16 via 10.0.1.254 dev eth0 metric 10 \n"
    assert a.ip("route show dev eth0") == (
        "default via 10.0.1.254 \n"
        "10.0.1.0/24 proto kernel scope link src 10.0.1.1 \n"
        "10.9.0.0/16 via 10.0.1.254 proto static metric 10 \n"
    )
    assert a.ip("route show type blackhole") == "blackhole 10.5.0.0/16 \n"
    assert a.ip("route show type unicast") == a.ip("route show").replace(
        "blackhole 10.5.0.0/16 \n", ""
    )
    assert a.ip("route show scope link") == "10.0.1.0/24 dev eth0 proto kernel src 10.0.1.1 \n"
    assert a.ip("route show metric 10") == "10.9.0.0/16 via 10.0.1.254 dev eth0 proto static \n"
    assert a.ip("route show via 10.0.1.254") == (
        "default dev eth0 \n10.9.0.0/16 dev eth0 proto static metric 10 \n"
    )
    assert a.ip("route show src 10.0.1.1") == "10.0.1.0/24 dev eth0 proto kernel scope link \n"
    assert a.ip("route show 10.9.0.0/16") == a.ip("route show exact 10.9.0.0/16")
    assert a.ip("route show default") == "default via 10.0.1.254 dev eth0 \n"
    assert a.ip("route show root 10.0.0.0/8") == (
        "10.0.1.0/24 dev eth0 proto kernel scope link src 10.0.1.1 \n"
        "blackhole 10.5.0.0/16 \n"
        "10.9.0.0/16 via 10.0.1.254 dev eth0 proto static metric 10 \n"
    )
    assert a.ip("route show match 10.9.1.1") == (
        "default via 10.0.1.254 dev eth0 \n"
        "10.9.0.0/16 via 10.0.1.254 dev eth0 proto static metric 10 \n"
    )


async def test_add_replace_append_change_prepend(
    autojump_clock: trio.testing.MockClock, routed: tuple[Host, Host, Host]
) -> None:
    a, r, _ = routed
    r.ip("addr add 10.0.1.253/24 dev eth0")
    a.ip("route add 10.9.0.0/16 via 10.0.1.254")
    with fails("RTNETLINK answers: File exists"):
        a.ip("route add 10.9.0.0/16 via 10.0.1.253")
    a.ip("route replace 10.9.0.0/16 via 10.0.1.253")
    assert a.ip("route show 10.9.0.0/16") == "10.9.0.0/16 via 10.0.1.253 dev eth0 \n"
    a.ip("route append 10.9.0.0/16 via 10.0.1.254")
    assert a.ip("route show 10.9.0.0/16").count("\n") == 2
    a.ip("route change 10.9.0.0/16 via 10.0.1.254 proto static")
    assert "proto static" in a.ip("route show 10.9.0.0/16")
    with fails("RTNETLINK answers: No such file or directory"):
        a.ip("route change 10.8.0.0/16 via 10.0.1.254")
    a.ip("route prepend 10.8.0.0/16 via 10.0.1.254")
    with fails("RTNETLINK answers: File exists"):
        a.ip("route prepend 10.8.0.0/16 via 10.0.1.254")
    with fails("RTNETLINK answers: File exists"):
        a.ip("route test 10.8.0.0/16 via 10.0.1.254")


async def test_delete_matches_what_was_given(
    autojump_clock: trio.testing.MockClock, routed: tuple[Host, Host, Host]
) -> None:
    a, _, _ = routed
    a.ip("route add 10.9.0.0/16 via 10.0.1.254 metric 5")
    a.ip("route add 10.9.0.0/16 dev eth0 metric 7")
    with fails("RTNETLINK answers: No such process"):
        a.ip("route del 10.9.0.0/16 metric 6")
    with fails("RTNETLINK answers: No such process"):
        a.ip("route del 10.9.0.0/16 via 10.0.1.253")
    with fails("RTNETLINK answers: No such process"):
        a.ip("route del blackhole 10.9.0.0/16")
    a.ip("route del 10.9.0.0/16 metric 7")
    assert a.ip("route show 10.9.0.0/16") == "10.9.0.0/16 via 10.0.1.254 dev eth0 metric 5 \n"
    a.ip("route delete 10.9.0.0/16")
    assert a.ip("route show 10.9.0.0/16") == ""


async def test_flush(
    autojump_clock: trio.testing.MockClock, routed: tuple[Host, Host, Host]
) -> None:
    a, _, _ = routed
    a.ip("route add 10.9.0.0/16 via 10.0.1.254 proto static")
    a.ip("route add 10.8.0.0/16 via 10.0.1.254 proto static")
    a.ip("route add 10.7.0.0/16 via 10.0.1.254")
    assert a.ip("-s route flush proto static") == (
        "\n*** Round 1, deleting 2 entries ***\n*** Flush is complete after 1 round ***\n"
    )
    assert "10.7.0.0/16" in a.ip("route")
    assert a.ip("route flush dev eth0") == ""
    assert a.ip("route") == LO_ROUTE
    assert a.ip("-s route flush dev eth0") == "Nothing to flush.\n"
    assert a.ip("-s route flush cache") == "*** IPv4 routing cache is flushed.\n"


async def test_get_output(
    autojump_clock: trio.testing.MockClock, routed: tuple[Host, Host, Host]
) -> None:
    a, _, _ = routed
    assert a.ip("route get 10.0.1.254") == "10.0.1.254 dev eth0 src 10.0.1.1 uid 0 \n    cache \n"
    with fails("RTNETLINK answers: Network is unreachable"):
        a.ip("route get 8.8.8.8")
    a.ip("route add default via 10.0.1.254")
    assert a.ip("route get 8.8.8.8") == (
        "8.8.8.8 via 10.0.1.254 dev eth0 src 10.0.1.1 uid 0 \n    cache \n"
    )
    assert a.ip("route get to 8.8.8.8 from 10.0.1.1") == (
        "8.8.8.8 from 10.0.1.1 via 10.0.1.254 dev eth0 uid 0 \n    cache \n"
    )
    assert a.ip("route get 8.8.8.8 connected") == a.ip("route get 8.8.8.8 from 10.0.1.1")
    assert a.ip("route get 8.8.8.8 oif eth0 uid 1000") == (
        "8.8.8.8 via 10.0.1.254 dev eth0 src 10.0.1.1 uid 1000 \n    cache \n"
    )
    assert a.ip("route get 8.8.8.8 mark 7 notify") == (
        "8.8.8.8 via 10.0.1.254 dev eth0 src 10.0.1.1 notify mark 7 uid 0 \n    cache <notify> \n"
    )
    assert "mark 0x20 " in a.ip("route get 8.8.8.8 mark 32")
    # the local table is merged into main (no custom rules): res->table is main
    assert a.ip("route get 10.0.1.1") == (
        "local 10.0.1.1 dev lo src 10.0.1.1 uid 0 \n    cache <local> \n"
    )
    assert a.ip("-d route get 10.0.1.1") == (
        "local 10.0.1.1 dev lo table main src 10.0.1.1 uid 0 \n    cache <local> \n"
    )
    assert a.ip("route get 255.255.255.255 oif eth0") == (
        "broadcast 255.255.255.255 dev eth0 src 10.0.1.1 uid 0 \n    cache <local,brd> \n"
    )
    assert a.ip("route get 8.8.8.8 fibmatch") == "default via 10.0.1.254 dev eth0 \n"
    assert a.ip("route get 8.8.8.8/24") == a.ip("route get 8.8.8.8")  # iproute2 warns, uses /32
    with fails("RTNETLINK answers: Invalid argument"):
        a.ip("route get 8.8.8.8 from 10.0.9.9")  # not a local address
    a.ip("route add unreachable 10.66.0.0/16")
    a.ip("route add prohibit 10.67.0.0/16")
    a.ip("route add blackhole 10.68.0.0/16")
    with fails("RTNETLINK answers: No route to host"):
        a.ip("route get 10.66.1.1")
    with fails("RTNETLINK answers: Permission denied"):
        a.ip("route get 10.67.1.1")
    with fails("RTNETLINK answers: Invalid argument"):
        a.ip("route get 10.68.1.1")


async def test_get_leaves_refcounts_balanced(
    autojump_clock: trio.testing.MockClock, routed: tuple[Host, Host, Host]
) -> None:
    a, _, _ = routed
    ipv4 = ipv4_of(a.net)
    first = ip_route_output_key(ipv4, Flowi4(aton("10.0.1.254")))
    assert isinstance(first, Rtable)
    before = first.refcnt
    for _ in range(3):
        a.ip("route get 10.0.1.254")
    assert first.refcnt == before
    first.release()


async def test_get_input_route(
    autojump_clock: trio.testing.MockClock, routed: tuple[Host, Host, Host]
) -> None:
    _, r, _ = routed
    assert r.ip("route get 10.0.2.1 from 10.0.1.1 iif eth0") == (
        "10.0.2.1 from 10.0.1.1 dev eth1 \n    cache iif eth0 \n"
    )
    assert r.ip("route get 10.0.1.254 from 10.0.1.1 iif eth0") == (
        "local 10.0.1.254 from 10.0.1.1 dev lo \n    cache <local> iif eth0 \n"
    )
    assert r.ip("route get 10.0.1.2 from 10.0.1.1 iif eth0") == (
        "10.0.1.2 from 10.0.1.1 dev eth0 \n    cache <redirect> iif eth0 \n"
    )
    with fails("RTNETLINK answers: Invalid argument"):
        r.ip("route get 10.0.2.1 from 127.0.0.1 iif eth0")  # martian source
    r.sysctl("net.ipv4.ip_forward=0")
    with fails("RTNETLINK answers: No route to host"):
        r.ip("route get 10.0.2.1 from 10.0.1.1 iif eth0")


async def test_get_shows_pmtu_exception(
    autojump_clock: trio.testing.MockClock, routed: tuple[Host, Host, Host]
) -> None:
    a, _, _ = routed
    a.ip("route add default via 10.0.1.254")
    ipv4 = ipv4_of(a.net)
    dst = aton("10.0.2.1")
    rt = ip_route_output_key(ipv4, Flowi4(dst))
    assert isinstance(rt, Rtable)
    ip_rt_update_pmtu(ipv4, rt, dst, 1400)
    rt.release()
    assert a.ip("route get 10.0.2.1") == (
        "10.0.2.1 via 10.0.1.254 dev eth0 src 10.0.1.1 uid 0 \n    cache expires 600sec mtu 1400 \n"
    )
    assert a.ip("route show cache") == (
        "10.0.2.1 via 10.0.1.254 dev eth0 \n    cache expires 600sec mtu 1400 \n"
    )
    assert a.ip("route show") == (
        "default via 10.0.1.254 dev eth0 \n"
        "10.0.1.0/24 dev eth0 proto kernel scope link src 10.0.1.1 \n" + LO_ROUTE
    )
    a.ip("route flush cache")
    assert a.ip("route show cache") == ""
    assert "expires" not in a.ip("route get 10.0.2.1")


async def test_linkdown_flag(autojump_clock: trio.testing.MockClock, lab: Lab) -> None:
    h = lab.add_host("h")
    h.ip("link add v0 type veth peer name v1")
    h.ip("addr add 10.0.0.1/24 dev v0")
    h.ip("link set v0 up")
    assert (
        h.ip("route show dev v0") == "10.0.0.0/24 proto kernel scope link src 10.0.0.1 linkdown \n"
    )
    h.ip("link set v1 up")
    assert h.ip("route show dev v0") == "10.0.0.0/24 proto kernel scope link src 10.0.0.1 \n"


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (
            "route add 300.1.1.1/24 dev eth0",
            'Error: any valid prefix is expected rather than "300.1.1.1/24".',
        ),
        ("route add 10.8.0.0/16 via x", 'Error: inet address is expected rather than "x".'),
        (
            "route add 10.8.0.0/16 via 10.0.1.9 via 10.0.1.8",
            'Error: argument "via" is wrong: use nexthop syntax to specify multiple via',
        ),
        ("route add 10.8.0.0/16 dev eth9", 'Cannot find device "eth9"'),
        ("route add 10.8.0.0/16 via 10.9.9.9", "Error: Nexthop has invalid gateway."),
        ("route add 10.8.0.0/16 via 10.0.1.9 dev lo", "Error: Nexthop has invalid gateway."),
        ("route add 10.8.0.0/16", "RTNETLINK answers: No such device"),
        ("route add 10.8.0.1/16 dev eth0", "Error: Invalid prefix for given prefix length."),
        (
            "route add 10.0.1.0/24 dev eth0 proto kernel scope link src 10.0.1.1",
            "RTNETLINK answers: File exists",
        ),
        ("route add 10.8.0.0/16 dev eth0 src 10.0.9.9", "Error: Invalid prefsrc address."),
        (
            "route add 10.8.0.0/16 via 10.0.1.9 scope host",
            "Error: Route with host scope can not have a gateway.",
        ),
        ("route add local 10.0.1.77 dev eth0 scope link", "Error: Invalid scope."),
        ("route add 10.8.0.0/16 dev eth0 scope nowhere", "Error: Invalid scope."),
        (
            "route add blackhole 10.8.0.0/16 dev eth0",
            "Error: Gateway, device and multipath can not be specified for this route type.",
        ),
        (
            "route add 10.8.0.0/16 dev eth0 onlink",
            "Error: Invalid flags for nexthop - PERVASIVE and ONLINK can not be set.",
        ),
        (
            "route add 10.8.0.0/16 metric x dev eth0",
            'Error: argument "x" is wrong: "metric" value is invalid',
        ),
        (
            "route add 10.8.0.0/16 scope galaxy dev eth0",
            'Error: argument "galaxy" is wrong: invalid "scope" value',
        ),
        (
            "route add 10.8.0.0/16 proto nope dev eth0",
            'Error: argument "nope" is wrong: "protocol" value is invalid',
        ),
        (
            "route add 10.8.0.0/16 table nope dev eth0",
            'Error: argument "nope" is wrong: "table" value is invalid',
        ),
        (
            "route add 10.8.0.0/16 mtu lock x dev eth0",
            'Error: argument "x" is wrong: "mtu" value is invalid',
        ),
        (
            "route add 10.8.0.0/16 10.9.0.0/16 dev eth0",
            'Error: either "to" is duplicate, or "10.9.0.0/16" is a garbage.',
        ),
        ("route add default via", 'Command line is not complete. Try option "help"'),
        (
            "route add 10.8.0.0/16 via fe80::1",
            'Error: inet address is expected rather than "fe80::1".',
        ),
        ("route add 10.8.0.0/16 via inet6 fe80::1", "Error: IPv6 support not enabled in kernel."),
        ("route del 10.8.0.0/16", "RTNETLINK answers: No such process"),
        ("route del 10.8.0.0/16 table 77", "Error: FIB table does not exist."),
        ("route del 10.8.0.1/16", "Error: Invalid prefix for given prefix length."),
        ("route show table 77", "Error: ipv4: FIB table does not exist.\nDump terminated"),
        ("route show table x", 'Error: argument "x" is wrong: table id value is invalid'),
        ("route show type foo", 'Error: argument "foo" is wrong: node type value is invalid'),
        ("route show dev eth9", 'Cannot find device "eth9"'),
        ("route flush", '"ip route flush" requires arguments.'),
        ("route get", "need at least a destination address"),
        ("route get x", 'Error: any valid prefix is expected rather than "x".'),
        ("route get 10.0.1.1 oif eth9", 'Cannot find device "eth9"'),
        ("route get 10.0.1.1 iif eth9", 'Cannot find device "eth9"'),
        ("route get 10.0.1.1 mark x", 'Error: argument "x" is wrong: invalid mark value'),
        ("route foo", 'Command "foo" is unknown, try "ip route help".'),
        # every keyword of iproute_modify's loop (texts as iproute2 6.x prints them)
        (
            "route add 10.8.0.0/16 tos x dev eth0",
            'Error: argument "x" is wrong: "tos" value is invalid',
        ),
        (
            "route add 10.8.0.0/16 dsf x dev eth0",
            'Error: argument "x" is wrong: "tos" value is invalid',
        ),
        (
            "route add 10.8.0.0/16 expires x dev eth0",
            'Error: argument "x" is wrong: "expires" value is invalid',
        ),
        (
            "route add 10.8.0.0/16 pri x dev eth0",
            'Error: argument "x" is wrong: "metric" value is invalid',
        ),
        (
            "route add 10.8.0.0/16 p x dev eth0",
            'Error: argument "x" is wrong: "metric" value is invalid',
        ),
        (
            "route add 10.8.0.0/16 preference x dev eth0",
            'Error: argument "x" is wrong: "metric" value is invalid',
        ),
        ("route add 10.8.0.0/16 vrf x dev eth0", 'Error: argument "x" is wrong: Invalid VRF'),
        (
            "route add 10.8.0.0/16 ta x dev eth0",
            'Error: argument "x" is wrong: "table" value is invalid',
        ),
        (
            "route add 10.8.0.0/16 pro x dev eth0",
            'Error: argument "x" is wrong: "protocol" value is invalid',
        ),
        (
            "route add 10.8.0.0/16 mtu dev eth0",
            'Error: argument "dev" is wrong: "mtu" value is invalid',
        ),
        (
            "route add 10.8.0.0/16 via 10.0.1.254 via inet6 fe80::1 dev eth0",
            'Error: argument "via" is wrong: use nexthop syntax to specify multiple via',
        ),
        (
            "route add 10.8.0.0/16 to 10.9.0.0/16",
            'Error: either "to" is duplicate, or "10.9.0.0/16" is a garbage.',
        ),
        (
            "route add 10.8.0.0/16 as 10.0.0.1 dev eth0",
            'netstack: "ip route ... as" is not supported',
        ),
        (
            "route add 10.8.0.0/16 from 10.0.0.0/8 dev eth0",
            'netstack: "ip route ... from" is not supported',
        ),
        (
            "route add 10.8.0.0/16 from x dev eth0",
            'Error: inet prefix is expected rather than "x".',
        ),
        (
            "route add 10.8.0.0/16 window 5 dev eth0",
            'netstack: "ip route ... window" is not supported',
        ),
        ("route add 10.8.0.0/16 win 5 dev eth0", 'netstack: "ip route ... win" is not supported'),
        (
            "route add 10.8.0.0/16 advmss 5 dev eth0",
            'netstack: "ip route ... advmss" is not supported',
        ),
        (
            "route add 10.8.0.0/16 realm 5 dev eth0",
            'netstack: "ip route ... realm" is not supported',
        ),
        (
            "route add 10.8.0.0/16 nexthop via 10.0.1.254",
            'netstack: "ip route ... nexthop" is not supported',
        ),
        (
            "route add 10.8.0.0/16 dev eth0 pref high",
            'netstack: "ip route ... pref" is not supported',
        ),
        (
            "route add 10.8.0.0/16 expires 10 dev eth0",
            'netstack: "ip route ... expires" is not supported',
        ),
        (
            "route add 10.8.0.0/16 src x dev eth0",
            'Error: inet address is expected rather than "x".',
        ),
        ("route add 10.8.0.0/16 mtu lock", 'Command line is not complete. Try option "help"'),
        # the selector of ip route show/flush
        ("route show ta x", 'Error: argument "x" is wrong: table id value is invalid'),
        ("route show tos x", 'Error: argument "x" is wrong: TOS value is invalid'),
        ("route show proto x", 'Error: argument "x" is wrong: invalid "protocol"'),
        ("route show p x", 'Error: argument "x" is wrong: invalid "protocol"'),
        ("route show vrf x", 'Error: argument "x" is wrong: Invalid VRF'),
        ("route show metric x", 'Error: argument "x" is wrong: "metric" value is invalid'),
        ("route show pri x", 'Error: argument "x" is wrong: "metric" value is invalid'),
        ("route show scope x", 'Error: argument "x" is wrong: invalid "scope"'),
        ("route show via x", 'Error: any valid prefix is expected rather than "x".'),
        ("route show src x", 'Error: any valid prefix is expected rather than "x".'),
        ("route show from root x", 'Error: any valid prefix is expected rather than "x".'),
        ("route show root x", 'Error: any valid prefix is expected rather than "x".'),
        ("route show realms 3", 'netstack: "ip route ... realms" is not supported'),
        ("route show iif eth9", 'Cannot find device "eth9"'),
        ("route show table", 'Command line is not complete. Try option "help"'),
        # ip route get
        ("route get 10.0.1.2 tos x", 'Error: argument "x" is wrong: TOS value is invalid'),
        ("route get 10.0.1.2 uid x", 'Error: argument "x" is wrong: invalid UID'),
        ("route get 10.0.1.2 sport x", 'Error: argument "x" is wrong: invalid sport'),
        ("route get 10.0.1.2 dport 70000", 'Error: argument "70000" is wrong: invalid dport'),
        ("route get 10.0.1.2 ipproto x", 'Error: argument "x" is wrong: Invalid "ipproto" value'),
        (
            "route get 10.0.1.2 ipproto 300",
            'Error: argument "300" is wrong: Invalid "ipproto" value',
        ),
        ("route get 10.0.1.2 flowlabel x", 'Error: argument "x" is wrong: invalid flowlabel'),
        ("route get 10.0.1.2 vrf x", 'Error: argument "x" is wrong: Invalid VRF'),
        ("route get 10.0.1.2 m x", 'Error: argument "x" is wrong: invalid mark value'),
        ("route get 10.0.1.2 as 10.0.0.1", 'netstack: "ip route ... get ... as" is not supported'),
        ("route get from x 10.0.1.2", 'Error: any valid prefix is expected rather than "x".'),
    ],
)
async def test_errors(
    autojump_clock: trio.testing.MockClock,
    routed: tuple[Host, Host, Host],
    command: str,
    message: str,
) -> None:
    a, _, _ = routed
    with pytest.raises(ConfigError) as exc:
        a.ip(command)
    assert str(exc.value) == message


async def test_usage(
    autojump_clock: trio.testing.MockClock, routed: tuple[Host, Host, Host]
) -> None:
    a, _, _ = routed
    for command in (
        "route help",
        "route add",
        "route add help",
        "route add to help",
        "route add unicast help",
        "route show table help",
        "route get from help",
        "route get to help",
        "route get help",
    ):
        with pytest.raises(ConfigError) as exc:
            a.ip(command)
        assert str(exc.value).startswith("Usage: ip route { list | flush } SELECTOR\n")


async def test_modify_keywords_and_abbreviations(
    autojump_clock: trio.testing.MockClock, routed: tuple[Host, Host, Host]
) -> None:
    """Abbreviations resolve in iproute2's order: ``p`` is ``priority``, ``pro`` is ``protocol``."""
    a, _, _ = routed
    a.ip(
        "route add to unicast 10.8.0.0/16 via inet 10.0.1.254 p 5 pro static ta main mtu lock 1400"
    )
    a.ip("route add 10.9.0.0/16 oif eth0 dsfield 0x10 scope link src 10.0.1.1")
    assert a.ip("route show 10.8.0.0/16") == (
        "10.8.0.0/16 via 10.0.1.254 dev eth0 proto static metric 5 mtu lock 1400 \n"
    )
    # a filtered field is not printed (as iproute2 6.1 prints it in a namespace)
    assert a.ip("route show ta main pro static") == (
        "10.8.0.0/16 via 10.0.1.254 dev eth0 metric 5 mtu lock 1400 \n"
    )
    assert a.ip("route show exact 10.9.0.0/16 dsfield 0x10") == (
        "10.9.0.0/16 dev eth0 scope link src 10.0.1.1 \n"
    )


async def test_fastopen_no_cookie_metric(
    autojump_clock: trio.testing.MockClock, routed: tuple[Host, Host, Host]
) -> None:
    """``fastopen_no_cookie BOOL`` (RTAX_FASTOPEN_NO_COOKIE): parsed, kept on the
    route and its cache entries, shown after the other metrics; every string here
    is what iproute2 printed on Linux 6.18 for the same commands."""
    a, _, _ = routed
    a.ip("route add 10.9.9.0/24 dev eth0 mtu 1400 fastopen_no_cookie 1")
    a.ip("route add 10.9.8.0/24 dev eth0 fastopen_no_cookie 0")  # 0: no metric at all
    a.ip("route add 10.9.6.0/24 via 10.0.1.254 fastopen_no_cookie 1 metric 5")
    assert a.ip("route show 10.9.6.0/24") == (
        "10.9.6.0/24 via 10.0.1.254 dev eth0 metric 5 fastopen_no_cookie 1 \n"
    )
    assert a.ip("route show 10.9.8.0/24") == "10.9.8.0/24 dev eth0 scope link \n"
    assert a.ip("route show 10.9.9.0/24") == (
        "10.9.9.0/24 dev eth0 scope link mtu 1400 fastopen_no_cookie 1 \n"
    )
    assert a.ip("-j route show 10.9.9.0/24") == (
        '[{"dst":"10.9.9.0/24","dev":"eth0","scope":"link","flags":[],'
        '"metrics":[{"mtu":1400,"fastopen_no_cookie":1}]}]\n'
    )
    assert a.ip("route get 10.9.9.1") == (
        "10.9.9.1 dev eth0 src 10.0.1.1 uid 0 \n    cache mtu 1400 fastopen_no_cookie 1 \n"
    )
    assert a.ip("route get 10.9.6.1") == (
        "10.9.6.1 via 10.0.1.254 dev eth0 src 10.0.1.1 uid 0 \n    cache fastopen_no_cookie 1 \n"
    )
    with fails('Error: argument "2" is wrong: "fastopen_no_cookie" value should be 0 or 1'):
        a.ip("route add 10.9.7.0/24 dev eth0 fastopen_no_cookie 2")
    with fails('Error: argument "x" is wrong: "fastopen_no_cookie" value is invalid'):
        a.ip("route add 10.9.7.0/24 dev eth0 fastopen_no_cookie x")


async def test_fastopen_no_cookie_metric_ipv6(
    autojump_clock: trio.testing.MockClock, lab: Lab
) -> None:
    """The same metric on IPv6 routes; the strings are iproute2's on Linux 6.18."""
    a = lab.add_host("a")
    lab.add_link("a:d0", lab.add_host("b").name + ":d1")
    a.ip("-6 addr add 2001:db8::1/64 dev d0 nodad")
    a.ip("-6 route add 2001:db8:9::/64 dev d0 mtu 1400 fastopen_no_cookie 1")
    a.ip("-6 route add 2001:db8:6::/64 via 2001:db8::2 fastopen_no_cookie 1 metric 5")
    assert a.ip("-6 route show 2001:db8:6::/64") == (
        "2001:db8:6::/64 via 2001:db8::2 dev d0 metric 5 fastopen_no_cookie 1 pref medium\n"
    )
    assert a.ip("-6 route show 2001:db8:9::/64") == (
        "2001:db8:9::/64 dev d0 metric 1024 mtu 1400 fastopen_no_cookie 1 pref medium\n"
    )
    assert a.ip("-6 -j route show 2001:db8:9::/64") == (
        '[{"dst":"2001:db8:9::/64","dev":"d0","metric":1024,"flags":[],'
        '"metrics":[{"mtu":1400,"fastopen_no_cookie":1}],"pref":"medium"}]\n'
    )
    assert a.ip("-6 route get 2001:db8:9::1") == (
        "2001:db8:9::1 from :: dev d0 src 2001:db8::1 metric 1024 mtu 1400 "
        "fastopen_no_cookie 1 pref medium\n"
    )
    assert a.ip("-6 route get 2001:db8:6::1") == (
        "2001:db8:6::1 from :: via 2001:db8::2 dev d0 src 2001:db8::1 metric 5 "
        "fastopen_no_cookie 1 pref medium\n"
    )
