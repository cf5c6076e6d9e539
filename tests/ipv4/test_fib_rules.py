"""``ip rule`` as the kernel applies it beyond ``ip route get``.

PMTU and redirect exceptions are learnt on the nexthop the FIB gives for the
flow (``__build_flow_key``: its source, loopback as input device), so a
``from`` or ``iif lo`` rule picks the table there as it did for the route.
"""

from __future__ import annotations

import trio.testing

from netstack.errors import ConfigError
from netstack.host import Host, Lab
from netstack.ipv4 import ipv4_of
from netstack.ipv4.route import Rtable, ip_route_output, ip_rt_update_pmtu
from netstack.wire.ipv4 import aton

SETUP = [
    "link add d0 type veth peer name d1",
    "addr add 10.1.0.1/16 dev d0",
    "link set d0 up",
    "link set d1 up",
    "route add 10.8.0.0/16 via 10.1.0.8 dev d0 table 100",
    "route add 10.8.0.0/16 via 10.1.0.9 dev d0",
]


def _host(lab: Lab, *rules: str) -> Host:
    h = lab.add_host("h")
    for command in SETUP:
        h.ip(command)
    for rule in rules:
        h.ip(rule)
    return h


async def test_pmtu_exception_on_the_rule_table(
    autojump_clock: trio.testing.MockClock, lab: Lab
) -> None:
    h = _host(lab, "rule add pref 400 from 10.1.0.1 lookup 100")
    ipv4 = ipv4_of(h.net)
    rt = ip_route_output(ipv4, aton("10.8.1.1"), aton("10.1.0.1"))
    assert isinstance(rt, Rtable)
    ip_rt_update_pmtu(ipv4, rt, aton("10.8.1.1"), 1200, aton("10.1.0.1"))
    assert h.ip("route get 10.8.1.1 from 10.1.0.1") == (
        "10.8.1.1 from 10.1.0.1 via 10.1.0.8 dev d0 table 100 uid 0 \n"
        "    cache expires 600sec mtu 1200 \n"
    )
    assert h.ip("route get 10.8.1.1") == (
        "10.8.1.1 via 10.1.0.9 dev d0 src 10.1.0.1 uid 0 \n    cache \n"
    )


async def test_pmtu_lookup_comes_from_loopback(
    autojump_clock: trio.testing.MockClock, lab: Lab
) -> None:
    h = _host(lab, "rule add pref 500 iif lo lookup 100")
    ipv4 = ipv4_of(h.net)
    rt = ip_route_output(ipv4, aton("10.8.1.1"))
    assert isinstance(rt, Rtable)
    ip_rt_update_pmtu(ipv4, rt, aton("10.8.1.1"), 1200)
    assert h.ip("route get 10.8.1.1") == (
        "10.8.1.1 via 10.1.0.8 dev d0 table 100 src 10.1.0.1 uid 0 \n"
        "    cache expires 600sec mtu 1200 \n"
    )


async def test_redirect_exception_on_the_rule_table(
    autojump_clock: trio.testing.MockClock, lab: Lab
) -> None:
    h = _host(lab, "rule add pref 400 from 10.1.0.1 lookup 100")
    ipv4 = ipv4_of(h.net)
    d0 = h.net.dev_get_by_name("d0")
    assert d0 is not None
    ipv4.ip_do_redirect(aton("10.8.1.1"), aton("10.1.0.8"), aton("10.1.0.7"), d0, aton("10.1.0.1"))
    assert h.ip("route get 10.8.1.1 from 10.1.0.1") == (
        "10.8.1.1 from 10.1.0.1 via 10.1.0.7 dev d0 table 100 uid 0 \n    cache expires 300sec \n"
    )
    assert h.ip("route get 10.8.1.1") == (
        "10.8.1.1 via 10.1.0.9 dev d0 src 10.1.0.1 uid 0 \n    cache \n"
    )


async def test_fibmatch_is_the_route_lookup(
    autojump_clock: trio.testing.MockClock, lab: Lab
) -> None:
    # expected outputs: the real kernel's (6.18, iproute2 6.1)
    h = _host(lab, "rule add pref 400 from 10.1.0.1 lookup 100")
    assert h.ip("route get 10.8.1.1 from 10.1.0.1 fibmatch") == (
        "10.8.0.0/16 via 10.1.0.8 dev d0 table 100 \n"
    )
    assert h.ip("route get 10.8.1.1 fibmatch") == "10.8.0.0/16 via 10.1.0.9 dev d0 \n"
    h.ip("rule add pref 500 iif lo lookup 100")
    assert h.ip("route get 10.8.1.1 fibmatch") == ("10.8.0.0/16 via 10.1.0.8 dev d0 table 100 \n")


# (command, what the real kernel printed: stdout, or the error on stderr)
RULE_IDENTITY = [
    ("rule add pref 100 from 10.0.0.1 lookup 100", ""),
    # rule_exists(): fib4_rule_compare() compares from/to only when the request gives them
    ("rule add pref 100 lookup 100", "RTNETLINK answers: File exists"),
    ("rule add pref 100 from 10.0.0.2 lookup 100", ""),
    ("rule add pref 200 to 10.0.0.0/8 lookup 100", ""),
    # ... and never the flags
    ("rule add pref 200 not to 10.0.0.0/8 lookup 100", "RTNETLINK answers: File exists"),
    ("rule add pref 300 iif d1 lookup 100", ""),
    # rule_find() neither
    ("rule del pref 300 not iif d1", ""),
    ("rule del pref 100 not from 10.0.0.2", ""),
    (
        "rule",
        "0:\tfrom all lookup local\n"
        "100:\tfrom 10.0.0.1 lookup 100\n"
        "200:\tfrom all to 10.0.0.0/8 lookup 100\n"
        "32766:\tfrom all lookup main\n"
        "32767:\tfrom all lookup default\n",
    ),
]


async def test_rule_identity_as_the_kernel(
    autojump_clock: trio.testing.MockClock, lab: Lab
) -> None:
    h = _host(lab)
    for command, expected in RULE_IDENTITY:
        try:
            out = h.ip(command)
        except ConfigError as e:
            out = str(e)
        assert out == expected, command


# ip_route_output_key_hash_rcu(): any fib_lookup error with an output device
# given assumes the destination on link; fib_table_lookup() answers a reject
# route's error before it looks at the oif (the real kernel's outputs)
REJECT_WITH_OIF = [
    ("route add prohibit 10.6.0.0/16", ""),
    ("route add blackhole 10.9.0.0/16", ""),
    ("route add 10.0.0.0/8 via 10.1.0.9 dev d0", ""),
    ("route get 10.6.1.1 oif d0", "10.6.1.1 dev d0 src 10.1.0.1 uid 0 \n    cache \n"),
    ("route get 10.9.1.1 oif d0", "10.9.1.1 dev d0 src 10.1.0.1 uid 0 \n    cache \n"),
    ("route get 10.6.1.1", "RTNETLINK answers: Permission denied"),
    ("rule add pref 600 to 10.5.0.0/16 prohibit", ""),
    ("route get 10.5.1.1 oif d0", "10.5.1.1 dev d0 src 10.1.0.1 uid 0 \n    cache \n"),
    ("route get 10.5.1.1", "RTNETLINK answers: Permission denied"),
]


async def test_reject_with_oif_assumes_on_link(
    autojump_clock: trio.testing.MockClock, lab: Lab
) -> None:
    h = _host(lab)
    for command, expected in REJECT_WITH_OIF:
        try:
            out = h.ip(command)
        except ConfigError as e:
            out = str(e)
        assert out == expected, command


# fib_nl_fill_rule(): FIB_RULE_IIF_DETACHED / OIF_DETACHED while no device has
# the name; iproute2 prints " [detached]" (the real kernel's outputs)
DETACHED = [
    ("rule add pref 300 iif nosuch lookup 100", ""),
    ("rule add pref 301 oif nosuch lookup 100", ""),
    ("rule show pref 300", "300:\tfrom all iif nosuch [detached] lookup 100\n"),
    (
        "-j rule show pref 301",
        '[{"priority":301,"src":"all","oif":"nosuch","oif_detached":null,"table":"100"}]\n',
    ),
    ("link add nosuch type veth peer name nosuch2", ""),
    ("rule show pref 300", "300:\tfrom all iif nosuch lookup 100\n"),
    ("rule show pref 301", "301:\tfrom all oif nosuch lookup 100\n"),
    ("link del nosuch", ""),
    ("rule show pref 301", "301:\tfrom all oif nosuch [detached] lookup 100\n"),
]


async def test_rule_device_detached(autojump_clock: trio.testing.MockClock, lab: Lab) -> None:
    h = _host(lab)
    for command, expected in DETACHED:
        assert h.ip(command) == expected, command
