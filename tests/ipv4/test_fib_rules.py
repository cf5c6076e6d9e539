"""``ip rule`` as the kernel applies it beyond ``ip route get``.

PMTU and redirect exceptions are learnt on the nexthop the FIB gives for the
flow (``__build_flow_key``: its source, loopback as input device), so a
``from`` or ``iif lo`` rule picks the table there as it did for the route.
The ``ip`` sessions below (fibmatch, rule identity on add/del, reject routes
and rules with an oif, ``[detached]``) are the real kernel's outputs (6.18,
iproute2 6.1); ``test_matches_the_real_kernel`` runs them in a network
namespace where root allows.
"""

from __future__ import annotations

import functools

import pytest
import trio
import trio.testing
from helpers import ip_or_error, match_ip_sessions_with_the_kernel

from netstack.host import Host, Lab, open_lab
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


# res.fi of the route's own lookup: the rule that took the flow, its table's entry
FIBMATCH = [
    ("rule add pref 400 from 10.1.0.1 lookup 100", ""),
    ("route get 10.8.1.1 from 10.1.0.1 fibmatch", "10.8.0.0/16 via 10.1.0.8 dev d0 table 100 \n"),
    ("route get 10.8.1.1 fibmatch", "10.8.0.0/16 via 10.1.0.9 dev d0 \n"),
    ("rule add pref 500 iif lo lookup 100", ""),
    ("route get 10.8.1.1 fibmatch", "10.8.0.0/16 via 10.1.0.8 dev d0 table 100 \n"),
]


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


SESSIONS = {
    "fibmatch": FIBMATCH,
    "rule_identity": RULE_IDENTITY,
    "reject_with_oif": REJECT_WITH_OIF,
    "detached": DETACHED,
}


@pytest.mark.parametrize("name", SESSIONS)
async def test_session_as_the_kernel(
    autojump_clock: trio.testing.MockClock, lab: Lab, name: str
) -> None:
    h = _host(lab)
    for command, expected in SESSIONS[name]:
        assert ip_or_error(h, command) == expected, command


def _netstack_outputs(session: list[tuple[str, str]]) -> list[str]:
    async def run() -> list[str]:
        async with open_lab() as lab:
            h = _host(lab)
            return [ip_or_error(h, command) for command, _ in session]

    return trio.run(run, clock=trio.testing.MockClock(autojump_threshold=0))


def test_matches_the_real_kernel() -> None:
    """The same commands in a network namespace print the same as in a netstack host."""
    match_ip_sessions_with_the_kernel(
        "fibr",
        (
            (SETUP, session, functools.partial(_netstack_outputs, session))
            for session in SESSIONS.values()
        ),
    )
