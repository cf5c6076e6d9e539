"""A device's link-layer address changing flushes its ND entries, as its ARP ones.

``ndisc_netdev_event`` on NETDEV_CHANGEADDR calls ``neigh_changeaddr``
(net/core/neighbour.c: ``neigh_flush_dev`` without ``skip_perm``): every
entry of the device goes, PERMANENT ones too; proxy entries stay. Before,
netstack flushed the ARP entries (``arp_netdev_event``) but kept the ND ones.
The session was run on Linux 6.18 with iproute2 6.1.
"""

from __future__ import annotations

import trio
import trio.testing
from helpers import host_after, ip_or_error, match_ip_sessions_with_the_kernel

from netstack.host import Lab, open_lab

SETUP = [
    "link add va type veth peer name vb",
    "link set va up",
    "link set vb up",
    "addr add 10.9.0.1/24 dev va",
    "addr add fd09::1/64 dev va nodad",
    "neigh add 10.9.0.7 lladdr 02:00:00:00:00:07 dev va",
    "neigh add 10.9.0.8 lladdr 02:00:00:00:00:08 dev va nud stale",
    "neigh add fd09::7 lladdr 02:00:00:00:00:07 dev va",
    "neigh add fd09::8 lladdr 02:00:00:00:00:08 dev va nud stale",
    "neigh add proxy fd09::50 dev va",
]

SESSION = [
    ("link set va address 02:00:00:00:aa:01", ""),
    ("neigh show dev va", ""),
    ("neigh show proxy", "fd09::50 dev va proxy \n"),
]


async def test_address_change_flushes_nd_entries(
    autojump_clock: trio.testing.MockClock, lab: Lab
) -> None:
    h = host_after(lab, SETUP)
    for command, expected in SESSION:
        assert ip_or_error(h, command) == expected, command


def _netstack_outputs() -> list[str]:
    async def run() -> list[str]:
        async with open_lab() as lab:
            h = host_after(lab, SETUP)
            return [ip_or_error(h, command) for command, _ in SESSION]

    return trio.run(run, clock=trio.testing.MockClock(autojump_threshold=0))


def test_matches_the_real_kernel() -> None:
    """The same commands in a network namespace print the same as in a netstack host."""
    match_ip_sessions_with_the_kernel("nchaddr", [(SETUP, SESSION, _netstack_outputs)])
