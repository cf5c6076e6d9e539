"""Deleting a device's last IPv4 address turns IP off on it.

``__inet_del_ifa`` tells the inetaddr chain NETDEV_DOWN; ``fib_inetaddr_event``
sees ``ifa_list`` empty ("Last address was deleted from this interface.
Disable IP.") and calls ``fib_disable_ip``: every route through the device
dies (static ones too), and ``arp_ifdown`` flushes its ARP entries,
permanent ones included. While another address is left, nothing but the
route cache is touched. The same commands are run on the real kernel when
the tests run as root.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from helpers import IPV4_ONLY

import netstack

CMDS = [
    "link add va type veth peer name vb",
    "link set va up",
    "link set vb up",
    "addr add 10.0.0.1/24 dev va",
    "addr add 10.0.0.9/24 dev va",
    "neigh add 10.0.0.2 lladdr 02:00:00:00:00:02 dev va nud permanent",
    "neigh add 10.0.0.3 lladdr 02:00:00:00:00:03 dev va nud stale",
    "route add 10.9.0.0/16 via 10.0.0.2 dev va",
]
STEPS = ["addr del 10.0.0.9/24 dev va", "addr del 10.0.0.1/24 dev va"]
SHOW = ["neigh show dev va", "route show"]


def _sorted(out: str) -> list[str]:
    return sorted(line.rstrip() for line in out.splitlines() if line.strip())


def _netstack_run(lab: netstack.Lab) -> list[list[str]]:
    h = lab.add_host("h", sysctls=IPV4_ONLY)
    for c in CMDS:
        h.ip(c)
    seen = [[*_sorted(h.ip(SHOW[0])), "--", *_sorted(h.ip(SHOW[1]))]]
    for step in STEPS:
        h.ip(step)
        seen.append([*_sorted(h.ip(SHOW[0])), "--", *_sorted(h.ip(SHOW[1]))])
    return seen


EXPECTED = [
    [
        "10.0.0.2 lladdr 02:00:00:00:00:02 PERMANENT",
        "10.0.0.3 lladdr 02:00:00:00:00:03 STALE",
        "--",
        "10.0.0.0/24 dev va proto kernel scope link src 10.0.0.1",
        "10.9.0.0/16 via 10.0.0.2 dev va",
    ],
    [
        "10.0.0.2 lladdr 02:00:00:00:00:02 PERMANENT",
        "10.0.0.3 lladdr 02:00:00:00:00:03 STALE",
        "--",
        "10.0.0.0/24 dev va proto kernel scope link src 10.0.0.1",
        "10.9.0.0/16 via 10.0.0.2 dev va",
    ],
    ["--"],  # the last address went: no neighbour, no route through va
]


async def test_last_address_flushes_neighbours_and_routes(lab: netstack.Lab) -> None:
    assert _netstack_run(lab) == EXPECTED


def test_linux_does_the_same() -> None:
    if not (hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("ip")):
        pytest.skip("needs root and ip(8) for a network namespace")
    ns = "nslastaddr-test"
    subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    if subprocess.run(["ip", "netns", "add", ns], capture_output=True).returncode:
        pytest.skip("cannot create a network namespace")

    def ip(cmd: str) -> str:
        return subprocess.run(
            ["ip", "-n", ns, *cmd.split()], capture_output=True, text=True, check=True
        ).stdout

    try:
        for c in CMDS:
            ip(c)
        seen = [[*_sorted(ip(SHOW[0])), "--", *_sorted(ip(SHOW[1]))]]
        for step in STEPS:
            ip(step)
            seen.append([*_sorted(ip(SHOW[0])), "--", *_sorted(ip(SHOW[1]))])
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    assert seen == EXPECTED
