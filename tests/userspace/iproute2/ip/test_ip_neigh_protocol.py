"""``ip neigh add|change|replace … protocol PROTO`` (NDA_PROTOCOL): the entry
records who added it, ``ip neigh show`` prints ``proto NAME`` after the state
and filters on ``protocol``; proxy entries the same. Checked against Linux 6.18
with iproute2 6.1 (names from /etc/iproute2/rt_protos: 99 is ``openr``)."""

from __future__ import annotations

import functools

import trio
import trio.testing
from helpers import host_after, ip_or_error, match_ip_sessions_with_the_kernel

from netstack.host import Host, Lab, open_lab

SETUP = [
    "link add d0 type veth peer name d1",
    "link set d1 up",
    "link set d0 up",
    "addr add 10.9.0.1/24 dev d0",
]

L7 = "lladdr 02:00:00:00:00:07"

PROTOCOLS = [
    (f"neigh add 10.9.0.7 {L7} dev d0 protocol static", ""),
    ("neigh add 10.9.0.8 lladdr 02:00:00:00:00:08 dev d0 protocol 99", ""),
    ("neigh add 10.9.0.9 lladdr 02:00:00:00:00:09 dev d0 proto 77", ""),
    (
        "neigh add 10.9.0.10 lladdr 02:00:00:00:00:0a dev d0 protocol bogus",
        'Error: argument "bogus" is wrong: "protocol" value is invalid',
    ),
    (
        "neigh add 10.9.0.12 lladdr 02:00:00:00:00:0c dev d0 protocol 256",
        'Error: argument "256" is wrong: "protocol" value is invalid',
    ),
    ("neigh show 10.9.0.8", "10.9.0.8 dev d0 lladdr 02:00:00:00:00:08 PERMANENT proto openr \n"),
    ("neigh show 10.9.0.9", "10.9.0.9 dev d0 lladdr 02:00:00:00:00:09 PERMANENT proto 77 \n"),
    ("neigh show protocol static", f"10.9.0.7 dev d0 {L7} PERMANENT proto static \n"),
    ("neigh show protocol 99", "10.9.0.8 dev d0 lladdr 02:00:00:00:00:08 PERMANENT proto openr \n"),
    ("neigh show protocol rip", ""),
    ("neigh show protocol bogus", 'Error: argument "bogus" is wrong: invalid "protocol"'),
    (
        "-s neigh show 10.9.0.7",
        f"10.9.0.7 dev d0 {L7}  used 0/0/0probes 0 PERMANENT proto static \n",
    ),
    (
        "-j neigh show 10.9.0.7",
        '[{"dst":"10.9.0.7","dev":"d0","lladdr":"02:00:00:00:00:07","state":["PERMANENT"],'
        '"protocol":"static"}]\n',
    ),
    ("neigh get 10.9.0.7 dev d0", f"10.9.0.7 dev d0 {L7} PERMANENT proto static \n"),
    # change without a protocol keeps it; with one sets it; 0 keeps it
    (f"neigh change 10.9.0.7 {L7} dev d0", ""),
    ("neigh show 10.9.0.7", f"10.9.0.7 dev d0 {L7} PERMANENT proto static \n"),
    (f"neigh change 10.9.0.7 {L7} dev d0 protocol boot", ""),
    ("neigh show 10.9.0.7", f"10.9.0.7 dev d0 {L7} PERMANENT proto boot \n"),
    (f"neigh replace 10.9.0.7 {L7} dev d0 protocol 0", ""),
    ("neigh show 10.9.0.7", f"10.9.0.7 dev d0 {L7} PERMANENT proto boot \n"),
    (f"neigh add 10.9.0.7 {L7} dev d0 protocol zebra", "RTNETLINK answers: File exists"),
    ("neigh show 10.9.0.7", f"10.9.0.7 dev d0 {L7} PERMANENT proto boot \n"),
    ("neigh del 10.9.0.8 dev d0 protocol 99", ""),
    ("neigh show 10.9.0.8", ""),
]

PROXY = [
    ("neigh add proxy 10.9.0.50 dev d0 protocol bgp", ""),
    ("neigh add proxy 10.9.0.51 dev d0", ""),
    ("neigh show proxy", "10.9.0.50 dev d0 proxy proto bgp \n10.9.0.51 dev d0 proxy \n"),
    ("neigh show proxy protocol bgp", "10.9.0.50 dev d0 proxy proto bgp \n"),
    (
        "-j neigh show proxy",
        '[{"dst":"10.9.0.50","dev":"d0","proxy":null,"protocol":"bgp"},'
        '{"dst":"10.9.0.51","dev":"d0","proxy":null}]\n',
    ),
    # adding again sets a protocol given, keeps the one not given
    ("neigh add proxy 10.9.0.51 dev d0 protocol ospf", ""),
    ("neigh add proxy 10.9.0.50 dev d0", ""),
    ("neigh show proxy", "10.9.0.50 dev d0 proxy proto bgp \n10.9.0.51 dev d0 proxy proto ospf \n"),
    ("neigh get proxy 10.9.0.50 dev d0", "10.9.0.50 dev d0 proxy proto bgp \n"),
]

# the names come from /etc/iproute2/rt_protos, which ip route shares: 17 has none
# (RTPROT_MROUTED has no line there), 18 is keepalived
RT_PROTOS = [
    ("route add 10.1.0.0/24 dev d0 proto 17", ""),
    ("route add 10.2.0.0/24 dev d0 proto 18", ""),
    ("route add 10.3.0.0/24 dev d0 proto keepalived", ""),
    (
        "route add 10.4.0.0/24 dev d0 proto mrouted",
        'Error: argument "mrouted" is wrong: "protocol" value is invalid',
    ),
    ("neigh add 10.9.0.17 lladdr 02:00:00:00:00:11 dev d0 protocol 17", ""),
    ("neigh add 10.9.0.18 lladdr 02:00:00:00:00:12 dev d0 protocol 18", ""),
    (
        "route show proto 17",
        "10.1.0.0/24 dev d0 scope link \n",
    ),
    (
        "route show root 10.0.0.0/14",
        "10.1.0.0/24 dev d0 proto 17 scope link \n"
        "10.2.0.0/24 dev d0 proto keepalived scope link \n"
        "10.3.0.0/24 dev d0 proto keepalived scope link \n",
    ),
    (
        "neigh show 10.9.0.17",
        "10.9.0.17 dev d0 lladdr 02:00:00:00:00:11 PERMANENT proto 17 \n",
    ),
    (
        "neigh show 10.9.0.18",
        "10.9.0.18 dev d0 lladdr 02:00:00:00:00:12 PERMANENT proto keepalived \n",
    ),
]

SESSIONS = {"protocols": PROTOCOLS, "proxy": PROXY, "rt_protos": RT_PROTOS}


async def _session(h: Host, session: list[tuple[str, str]]) -> list[str]:
    return [ip_or_error(h, command) for command, _ in session]


async def test_protocols(autojump_clock: trio.testing.MockClock, lab: Lab) -> None:
    h = host_after(lab, SETUP)
    for (command, expected), got in zip(PROTOCOLS, await _session(h, PROTOCOLS), strict=True):
        assert got == expected, command


async def test_proxy_protocols(autojump_clock: trio.testing.MockClock, lab: Lab) -> None:
    h = host_after(lab, SETUP)
    for (command, expected), got in zip(PROXY, await _session(h, PROXY), strict=True):
        assert got == expected, command


async def test_rt_protos_names(autojump_clock: trio.testing.MockClock, lab: Lab) -> None:
    """17 prints as a number and 18 as keepalived, as iproute2's rt_protos has them."""
    h = host_after(lab, SETUP)
    for (command, expected), got in zip(RT_PROTOS, await _session(h, RT_PROTOS), strict=True):
        assert got == expected, command


def _netstack_outputs(session: list[tuple[str, str]]) -> list[str]:
    async def run() -> list[str]:
        async with open_lab() as lab:
            return await _session(host_after(lab, SETUP), session)

    return trio.run(run, clock=trio.testing.MockClock(autojump_threshold=0))


def test_matches_the_real_kernel() -> None:
    """The same commands in a network namespace print the same as in a netstack host."""
    match_ip_sessions_with_the_kernel(
        "nproto",
        (
            (SETUP, session, functools.partial(_netstack_outputs, session))
            for session in SESSIONS.values()
        ),
    )
