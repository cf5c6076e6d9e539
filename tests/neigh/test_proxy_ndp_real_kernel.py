"""The proxy NDP tests' figures, on the real kernel (root only; skipped otherwise).

The topology of ``test_proxy_ndp.py`` between network namespaces and veth
pairs: A (a0, 2001:db8:1::1) — R (ra 2001:db8:1::fe/64, rb 2001:db8:2::fe/64,
forwarding, ``proxy_ndp``, ``ip -6 neigh add proxy 2001:db8:1::b dev ra``, a
route to 2001:db8:1::b/128 out of rb) — B. A raw socket in A sends the
solicitations the netstack tests send and reads R's answers; the bytes and
the delays must be the netstack tests' (their literals were captured here).
The ``ip -6 neigh … proxy`` session runs in a namespace of its own. Checked
against Linux 6.18 with iproute2 6.1.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from helpers import match_ip_sessions_with_the_kernel

from netstack.errors import ConfigError
from netstack.host import open_lab

# the netstack tests' frames and literals (a sibling test module, loaded by path)
_spec = importlib.util.spec_from_file_location(
    "proxy_ndp_cases", Path(__file__).with_name("test_proxy_ndp.py")
)
assert _spec is not None and _spec.loader is not None
cases: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)

# run inside namespace A: send each frame, report every ICMPv6 NA or error R sends
PROBE = r"""
import json, socket, sys, time
frames, wait = json.loads(sys.argv[1]), float(sys.argv[2])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x86DD))
s.bind(("a0", 0))
out = []
t0 = time.monotonic()
for f in frames:
    s.send(bytes.fromhex(f))
    out.append(["sent", time.monotonic() - t0, ""])
s.settimeout(0.05)
end = time.monotonic() + wait
while time.monotonic() < end:
    try:
        f = s.recv(2000)
    except socket.timeout:
        continue
    if f[6:12] != bytes.fromhex("02000000000a") and f[20] == 58 and f[54] in (1, 136):
        out.append(["got", time.monotonic() - t0, f.hex()])
print(json.dumps(out))
"""

SLACK = 0.15  # seconds of wall-clock scheduling on a loaded machine


def _can_use_namespaces() -> None:
    if not (hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("ip")):
        pytest.skip("needs root and ip(8) for network namespaces")


@pytest.fixture
def namespaces() -> Iterator[tuple[str, str, str]]:
    _can_use_namespaces()
    tag = uuid.uuid4().hex[:6]
    na, nr, nb = f"pn{tag}A", f"pn{tag}R", f"pn{tag}B"
    made = []
    try:
        for ns in (na, nr, nb):
            if subprocess.run(["ip", "netns", "add", ns], capture_output=True).returncode:
                pytest.skip("cannot create a network namespace")
            made.append(ns)
        for cmd in (
            f"link add a0 netns {na} type veth peer name ra netns {nr}",
            f"link add b0 netns {nb} type veth peer name rb netns {nr}",
            f"-n {na} link set a0 address 02:00:00:00:00:0a up",
            f"-n {nr} link set ra address 02:00:00:00:01:01 up",
            f"-n {nr} link set rb address 02:00:00:00:02:02 up",
            f"-n {nb} link set b0 up",
            f"-n {na} addr add 2001:db8:1::1/64 dev a0 nodad",
            f"-n {nr} addr add 2001:db8:1::fe/64 dev ra nodad",
            f"-n {nr} addr add 2001:db8:2::fe/64 dev rb nodad",
            f"-n {nb} addr add 2001:db8:1::b/64 dev b0 nodad",
            f"-n {nr} route add 2001:db8:1::b/128 dev rb",
        ):
            if subprocess.run(["ip", *cmd.split()], capture_output=True).returncode:
                pytest.skip(f"cannot set up the namespaces: ip {cmd}")
        sysctl(
            nr,
            "net.ipv6.conf.all.forwarding=1",
            "net.ipv6.conf.all.proxy_ndp=1",
            "net.ipv6.conf.ra.proxy_ndp=1",
        )
        assert ip(nr, "-6 neigh add proxy 2001:db8:1::b dev ra").returncode == 0
        subprocess.run(["sleep", "2.5"], check=True)  # link-local addresses through DAD
        yield na, nr, nb
    finally:
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def sysctl(ns: str, *settings: str) -> None:
    subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", *settings], check=True)


def ip(ns: str, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", "-n", ns, *command.split()], capture_output=True, text=True)


def counter(ns: str, name: str) -> int:
    res = subprocess.run(
        ["ip", "netns", "exec", ns, "nstat", "-asz", name],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    for line in res.stdout.splitlines():
        if line.split()[:1] == [name]:
            return int(line.split()[1])
    return 0


def probe(na: str, frames: list[bytes], wait: float = 1.2) -> list[tuple[float, bytes]]:
    """(seconds after the first frame went, frame) of each NA or ICMPv6 error R sent."""
    res = subprocess.run(
        ["ip", "netns", "exec", na, sys.executable, "-c", PROBE,
         json.dumps([f.hex() for f in frames]), str(wait)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    out = json.loads(res.stdout)
    return [(at, bytes.fromhex(f)) for kind, at, f in out if kind == "got"]


def nas(got: list[tuple[float, bytes]], target: str = "2001:db8:1::b") -> list[bytes]:
    """The NAs for *target* (not R's answers to A's kernel's own NUD probes)."""
    want = cases.a6(target)
    return [f for _, f in got if f[54] == 136 and f[62:78] == want]


def test_proxy_ndp_on_the_real_kernel(namespaces: tuple[str, str, str]) -> None:
    na, nr, _nb = namespaces
    # a multicast NS: answered after a random delay below 0.8 s, the bytes of the test
    got = probe(na, [cases.mcast_ns()] * 4)
    assert nas(got) == [cases.NA_TO_MCAST_NS] * 4
    assert all(0 <= at < 0.8 + SLACK for at, _ in got)
    # a unicast NS to the proxied address, through ip6_forward: at once
    got = probe(na, [cases.ucast_ns()], 0.3)
    assert nas(got) == [cases.NA_TO_UCAST_NS] and got[0][0] < SLACK
    # a DAD probe: NA to all-nodes, no flag
    assert nas(probe(na, [cases.dad_ns()])) == [cases.NA_TO_DAD_NS]
    # the router flag is the entry's
    assert ip(nr, "-6 neigh add proxy 2001:db8:1::b dev ra router").returncode == 0
    flags = [cases.na_flags(f) for f in nas(probe(na, [cases.mcast_ns(), cases.ucast_ns()]))]
    assert sorted(flags) == [0xC0, 0xC0]
    assert [cases.na_flags(f) for f in nas(probe(na, [cases.dad_ns()]))] == [0x80]
    assert ip(nr, "-6 neigh add proxy 2001:db8:1::b dev ra").returncode == 0
    # a multicast NS for R's subnet-router anycast address waits the same way
    got = probe(na, [cases.anycast_ns()] * 3)
    assert nas(got, "2001:db8:1::") == [cases.NA_TO_ANYCAST_NS] * 3
    assert all(0 <= at < 0.8 + SLACK for at, f in got if f[62:78] == cases.a6("2001:db8:1::"))
    # proxy_delay 0: at once
    sysctl(nr, "net.ipv6.neigh.ra.proxy_delay=0")
    got = probe(na, [cases.mcast_ns()], 0.3)
    assert nas(got) == [cases.NA_TO_MCAST_NS] and got[0][0] < SLACK
    sysctl(nr, "net.ipv6.neigh.ra.proxy_delay=80")
    # which settings answer (and whether the unicast NS is forwarded instead)
    answered = []
    for all_ndp, ra_ndp, ra_fwd in ((0, 1, 1), (0, 0, 1), (1, 0, 1), (1, 1, 0)):
        sysctl(
            nr,
            f"net.ipv6.conf.all.proxy_ndp={all_ndp}",
            f"net.ipv6.conf.ra.proxy_ndp={ra_ndp}",
            f"net.ipv6.conf.ra.forwarding={ra_fwd}",
        )
        fwd = counter(nr, "Ip6OutForwDatagrams")
        answered.append(
            (
                bool(nas(probe(na, [cases.mcast_ns()]))),
                bool(nas(probe(na, [cases.ucast_ns()], 0.5))),
                counter(nr, "Ip6OutForwDatagrams") - fwd,
            )
        )
    assert answered == [(True, False, 1), (False, False, 1), (True, True, 0), (False, False, 0)]
    sysctl(nr, "net.ipv6.conf.ra.proxy_ndp=1", "net.ipv6.conf.ra.forwarding=1")
    # proxy_qlen 1: of four at once, two are answered
    sysctl(nr, "net.ipv6.neigh.ra.proxy_qlen=1")
    assert len(nas(probe(na, [cases.mcast_ns()] * 4))) == 2
    sysctl(nr, "net.ipv6.neigh.ra.proxy_qlen=64")
    # a proxied link-local address: ICMPv6 address unreachable back to the sender
    assert ip(nr, "-6 neigh add proxy fe80::b dev ra").returncode == 0
    ip(nr, "-6 neigh replace fe80::ff:fe00:a lladdr 02:00:00:00:00:0a dev ra")
    discards = counter(nr, "Ip6InDiscards")
    errors = [f for _, f in probe(na, [cases.link_local_echo()], 0.3) if f[54] == 1]
    assert [f[14 + 7 :] for f in errors] == [cases.ADDRESS_UNREACHABLE[7:]]
    assert counter(nr, "Ip6InDiscards") - discards == 1


def _netstack_session(session: list[tuple[str, str]]) -> list[str]:
    async def run() -> list[str]:
        async with open_lab() as lab:
            h = lab.add_host("h")
            h.ip("link set lo up")
            for command, _ in cases.SETUP_COMMANDS:
                h.ip(command)
            out = []
            for command, _ in session:
                try:
                    out.append(h.ip(command))
                except ConfigError as e:
                    out.append(str(e))
            return out

    return trio.run(run, clock=trio.testing.MockClock(autojump_threshold=0))


def test_ip_6_neigh_proxy_session_as_the_real_kernel() -> None:
    match_ip_sessions_with_the_kernel(
        "pndp",
        [
            (
                [c for c, _ in cases.SETUP_COMMANDS],
                cases.SESSION,
                functools.partial(_netstack_session, cases.SESSION),
            )
        ],
    )
