"""A device losing its carrier evicts its neighbour entries as Linux 6.x does.

``arp_netdev_event`` / ``ndisc_netdev_event`` on NETDEV_CHANGE without carrier
call ``neigh_carrier_down`` (net/core/neighbour.c): ``__neigh_ifdown`` with
``skip_perm``, so PERMANENT entries stay, and of the proxy entries those added
PERMANENT (``ip neigh add proxy`` defaults to it; ``nud noarp`` makes one that
goes). ``net.ipv4.conf.{all,DEV}.arp_evict_nocarrier`` and
``net.ipv6.conf.{all,DEV}.ndisc_evict_nocarrier`` (both default 1; either 0
keeps the entries) turn it off. The device itself going down still flushes
everything (``neigh_ifdown``). Each session was run on Linux 6.18 with
iproute2 6.1: the veth pair is in one namespace, so ``vb`` going down takes
``va``'s carrier.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid

import pytest
import trio
import trio.testing
from helpers import host_after, ip_or_error

from netstack.host import Host, Lab, open_lab

SETUP = [
    "link add va type veth peer name vb",
    "link set va up",
    "link set vb up",
    "addr add 10.9.0.1/24 dev va",
    "addr add fd09::1/64 dev va nodad",
    "neigh add 10.9.0.7 lladdr 02:00:00:00:00:07 dev va",
    "neigh add 10.9.0.8 lladdr 02:00:00:00:00:08 dev va nud reachable",
    "neigh add 10.9.0.9 lladdr 02:00:00:00:00:09 dev va nud noarp",
    "neigh add 10.9.0.10 lladdr 02:00:00:00:00:0a dev va nud stale",
    "neigh add fd09::7 lladdr 02:00:00:00:00:07 dev va",
    "neigh add fd09::8 lladdr 02:00:00:00:00:08 dev va nud stale",
    "neigh add proxy 10.9.0.50 dev va",
    "neigh add proxy 10.9.0.51 dev va nud noarp",
    "neigh add proxy fd09::50 dev va",
    "neigh add proxy fd09::51 dev va nud stale",
]

KEPT = "10.9.0.7 lladdr 02:00:00:00:00:07 PERMANENT \nfd09::7 lladdr 02:00:00:00:00:07 PERMANENT \n"

CARRIER_LOSS = [
    ("link set vb down", ""),
    ("neigh show dev va", KEPT),
    ("neigh show nud noarp dev va 10.9.0.0/24", ""),
    ("neigh show proxy", "10.9.0.50 dev va proxy \nfd09::50 dev va proxy \n"),
    # the carrier back: what went stays gone
    ("link set vb up", ""),
    ("neigh show dev va", KEPT),
    ("neigh show proxy", "10.9.0.50 dev va proxy \nfd09::50 dev va proxy \n"),
    # the device itself down: everything goes (neigh_ifdown)
    ("link set va down", ""),
    ("neigh show dev va", ""),
    ("neigh show proxy", ""),
]

SESSIONS = {"carrier_loss": CARRIER_LOSS}


async def _session(h: Host, session: list[tuple[str, str]]) -> list[str]:
    out = []
    for command, _ in session:
        out.append(ip_or_error(h, command))
        await trio.sleep(0.01)
    return out


async def test_carrier_loss(autojump_clock: trio.testing.MockClock, lab: Lab) -> None:
    h = host_after(lab, SETUP)
    got = await _session(h, CARRIER_LOSS)
    for (command, expected), out in zip(CARRIER_LOSS, got, strict=True):
        assert out == expected, command


STALE = "10.9.0.8 lladdr 02:00:00:00:00:08 STALE \nfd09::8 lladdr 02:00:00:00:00:08 STALE \n"

EVICT_SYSCTLS = {
    "default": ((), ""),
    "dev": (
        ("net.ipv4.conf.va.arp_evict_nocarrier=0", "net.ipv6.conf.va.ndisc_evict_nocarrier=0"),
        STALE,
    ),
    "all": (
        ("net.ipv4.conf.all.arp_evict_nocarrier=0", "net.ipv6.conf.all.ndisc_evict_nocarrier=0"),
        STALE,
    ),
    "ipv4_only": (("net.ipv4.conf.va.arp_evict_nocarrier=0",), STALE.split("\n")[0] + "\n"),
}

EVICT_SETUP = [
    *SETUP[:5],
    "neigh add 10.9.0.8 lladdr 02:00:00:00:00:08 dev va nud stale",
    "neigh add fd09::8 lladdr 02:00:00:00:00:08 dev va nud stale",
]


@pytest.mark.parametrize("case", EVICT_SYSCTLS)
async def test_evict_nocarrier(autojump_clock: trio.testing.MockClock, lab: Lab, case: str) -> None:
    """Either of ``all`` and the device at 0 keeps the entries (IN_DEV_ANDCONF; ndisc:
    device && all)."""
    sysctls, expected = EVICT_SYSCTLS[case]
    h = lab.add_host("h")
    for command in EVICT_SETUP[:5]:
        h.ip(command)
    for setting in sysctls:
        h.sysctl(setting)
    for command in EVICT_SETUP[5:]:
        h.ip(command)
    h.ip("link set vb down")
    await trio.sleep(0.01)
    assert h.ip("neigh show dev va") == expected


def _netstack_outputs(session: list[tuple[str, str]]) -> list[str]:
    async def run() -> list[str]:
        async with open_lab() as lab:
            return await _session(host_after(lab, SETUP), session)

    return trio.run(run, clock=trio.testing.MockClock(autojump_threshold=0))


class _Namespace:
    """A network namespace of this machine's kernel (root only), deleted after use."""

    def __init__(self) -> None:
        if os.geteuid() != 0 or shutil.which("ip") is None:
            pytest.skip("needs root and ip")
        self.name = f"ncarr{uuid.uuid4().hex[:6]}"
        r = subprocess.run(["ip", "netns", "add", self.name], capture_output=True, timeout=30)
        if r.returncode:
            pytest.skip("cannot create a network namespace")

    def ip(self, command: str) -> str:
        r = subprocess.run(
            ["ip", "-n", self.name, *command.split()], capture_output=True, timeout=30
        )
        out = r.stdout.decode() or r.stderr.decode().rstrip("\n")
        if command.startswith("link set vb "):
            self.settle(command.endswith("down"))
        return out

    def settle(self, down: bool) -> None:
        """The kernel acts on a carrier change later, in linkwatch's work: wait for
        va's operstate (set just before the NETDEV_CHANGE notifiers run), then a little."""
        want = "LOWERLAYERDOWN" if down else "state UP"
        deadline = time.monotonic() + 5
        while want not in self.ip("link show va") and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)

    def sysctl(self, setting: str) -> None:
        name, value = setting.split("=")
        path = "/proc/sys/" + name.replace(".", "/")
        subprocess.run(
            ["ip", "netns", "exec", self.name, "sh", "-c", f"echo {value} > {path}"],
            check=True,
            timeout=30,
        )

    def close(self) -> None:
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True, timeout=30)


@pytest.mark.parametrize("name", SESSIONS)
def test_matches_the_real_kernel(name: str) -> None:
    """The same commands in a network namespace print the same as in a netstack host."""
    session = SESSIONS[name]
    ours = _netstack_outputs(session)
    ns = _Namespace()
    try:
        for command in ["link set lo up", *SETUP]:
            ns.ip(command)
        for (command, expected), emulated in zip(session, ours, strict=True):
            assert ns.ip(command) == emulated == expected, command
    finally:
        ns.close()


@pytest.mark.parametrize("case", EVICT_SYSCTLS)
def test_evict_nocarrier_on_the_real_kernel(case: str) -> None:
    """The sysctl cases in a network namespace of this machine's kernel."""
    sysctls, expected = EVICT_SYSCTLS[case]
    ns = _Namespace()
    try:
        for command in ["link set lo up", *EVICT_SETUP[:5]]:
            ns.ip(command)
        for setting in sysctls:
            ns.sysctl(setting)
        for command in EVICT_SETUP[5:]:
            ns.ip(command)
        ns.ip("link set vb down")
        assert ns.ip("neigh show dev va") == expected
    finally:
        ns.close()
