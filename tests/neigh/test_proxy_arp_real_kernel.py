"""The proxy ARP tests' figures, on the real kernel (root only; skipped otherwise).

The same topology as ``test_proxy_arp.py`` between network namespaces and
veth pairs: A (10.0.1.1/16) — R (ra 10.0.1.254/24, rb 10.0.2.254/24, forwarding,
``proxy_arp=1`` on ra) — B. A raw socket in A sends the requests and reads
the replies. Checked against Linux 6.18 with iproute2 6.1.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from netstack.wire.ipv4 import aton

A_MAC = bytes.fromhex("02000000000a")
RA_MAC = bytes.fromhex("020000000101")

# run inside namespace A: send each request, report every reply with its delay
PROBE = r"""
import json, socket, sys, time
reqs = json.loads(sys.argv[1])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0806))
s.bind(("a0", 0))
mac = bytes.fromhex("02000000000a")
out = []
t0 = time.monotonic()
for target, dst in reqs:
    arp = (bytes.fromhex("0001080006040001") + mac + socket.inet_aton("10.0.1.1")
           + bytes(6) + socket.inet_aton(target))
    s.send(bytes.fromhex(dst) + mac + b"\x08\x06" + arp)
    out.append(["sent", target, time.monotonic() - t0, ""])
s.settimeout(0.1)
end = time.monotonic() + 1.5
while time.monotonic() < end:
    try:
        f = s.recv(2000)
    except socket.timeout:
        continue
    if f[12:14] == b"\x08\x06" and f[20:22] == b"\x00\x02":
        out.append(["reply", socket.inet_ntoa(f[28:32]), time.monotonic() - t0, f[:42].hex()])
print(json.dumps(out))
"""


@pytest.fixture
def namespaces() -> Iterator[tuple[str, str]]:
    if not (hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("ip")):
        pytest.skip("needs root and ip(8) for network namespaces")
    tag = uuid.uuid4().hex[:6]
    na, nr, nb = f"pa{tag}A", f"pa{tag}R", f"pa{tag}B"
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
            f"-n {na} addr add 10.0.1.1/16 dev a0",
            f"-n {nr} link set ra address 02:00:00:00:01:01 up",
            f"-n {nr} link set rb address 02:00:00:00:02:02 up",
            f"-n {nr} addr add 10.0.1.254/24 dev ra",
            f"-n {nr} addr add 10.0.2.254/24 dev rb",
            f"-n {nb} link set b0 up",
            f"-n {nb} addr add 10.0.2.1/24 dev b0",
        ):
            if subprocess.run(["ip", *cmd.split()], capture_output=True).returncode:
                pytest.skip(f"cannot set up the namespaces: ip {cmd}")
        sysctl(nr, "net.ipv4.ip_forward=1", "net.ipv4.conf.ra.proxy_arp=1")
        yield na, nr
    finally:
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def sysctl(ns: str, *settings: str) -> None:
    subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", *settings], check=True)


def ip(ns: str, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", "-n", ns, *command.split()], capture_output=True, text=True)


def probe(na: str, reqs: list[tuple[str, str]]) -> list[list[Any]]:
    res = subprocess.run(
        ["ip", "netns", "exec", na, sys.executable, "-c", PROBE, json.dumps(reqs)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    out: list[list[Any]] = json.loads(res.stdout)
    return out


def reply_hex(target: str) -> str:
    arp = (
        bytes.fromhex("0001080006040002") + RA_MAC + aton(target).to_bytes(4, "big")
        + A_MAC + aton("10.0.1.1").to_bytes(4, "big")
    )  # fmt: skip
    return (A_MAC + RA_MAC + b"\x08\x06" + arp).hex()


BCAST = "ffffffffffff"
SLACK = 0.15  # seconds of wall-clock scheduling on a loaded machine


def test_proxy_arp_on_the_real_kernel(namespaces: tuple[str, str]) -> None:
    na, nr = namespaces
    assert ip(nr, "ntable show dev ra").returncode == 0
    # broadcast requests: answered with R's MAC after a random delay below 0.8 s
    out = probe(na, [(f"10.0.2.{i}", BCAST) for i in range(1, 6)])
    sent = {t: at for kind, t, at, _ in out if kind == "sent"}
    got = [(t, at - sent[t], f) for kind, t, at, f in out if kind == "reply"]
    assert sorted((t, f) for t, _, f in got) == [
        (f"10.0.2.{i}", reply_hex(f"10.0.2.{i}")) for i in range(1, 6)
    ]
    assert all(0 <= d < 0.8 + SLACK for _, d, _ in got)
    # to R's MAC (PACKET_HOST): at once (three of them, so that a random delay would show)
    out = probe(na, [(f"10.0.2.{i}", RA_MAC.hex()) for i in (6, 7, 8)])
    got = [(t, at, f) for kind, t, at, f in out if kind == "reply"]
    assert sorted((t, f) for t, _, f in got) == [
        (f"10.0.2.{i}", reply_hex(f"10.0.2.{i}")) for i in (6, 7, 8)
    ]
    assert all(at < SLACK for _, at, _ in got)
    # proxy_qlen 1: of four broadcast requests at once, two are queued, two dropped
    sysctl(nr, "net.ipv4.neigh.ra.proxy_qlen=1")
    out = probe(na, [(f"10.0.2.{i}", BCAST) for i in range(11, 15)])
    assert len([1 for kind, *_ in out if kind == "reply"]) == 2
    # medium_id: no proxy between devices of one medium, none from a medium of -1
    sysctl(nr, "net.ipv4.neigh.ra.proxy_qlen=64", "net.ipv4.neigh.ra.proxy_delay=0")
    answered = []
    for ra_id, rb_id in ((1, 1), (1, 2), (1, 0), (-1, 2), (0, 1)):
        sysctl(nr, f"net.ipv4.conf.ra.medium_id={ra_id}", f"net.ipv4.conf.rb.medium_id={rb_id}")
        out = probe(na, [("10.0.2.20", BCAST)])
        answered.append(any(kind == "reply" for kind, *_ in out))
    assert answered == [False, True, True, False, True]
    sysctl(nr, "net.ipv4.conf.ra.medium_id=0", "net.ipv4.conf.rb.medium_id=0")
    # a target routed back out of ra: only with proxy_arp_pvlan (and never for sip == tip)
    out = probe(na, [("10.0.1.9", RA_MAC.hex())])
    assert [kind for kind, *_ in out if kind == "reply"] == []
    sysctl(nr, "net.ipv4.conf.ra.proxy_arp_pvlan=1")
    out = probe(na, [("10.0.1.9", RA_MAC.hex())])
    assert [f for kind, _, _, f in out if kind == "reply"] == [reply_hex("10.0.1.9")]
    sysctl(nr, "net.ipv4.conf.ra.proxy_arp_pvlan=0")
    sysctl(nr, "net.ipv4.neigh.ra.proxy_delay=80")
    # a pneigh entry answers for its address alone
    sysctl(nr, "net.ipv4.conf.ra.proxy_arp=0", "net.ipv4.neigh.ra.proxy_qlen=64")
    assert ip(nr, "neigh add proxy 10.0.2.9 dev ra").returncode == 0
    out = probe(na, [("10.0.2.9", BCAST), ("10.0.2.10", BCAST)])
    assert [t for kind, t, *_ in out if kind == "reply"] == ["10.0.2.9"]
    # ip neigh show proxy (a proxy entry of no device outlives its namespace on Linux
    # 6.18 and may show in a later one: only this test's addresses are compared, and
    # the entry is deleted before the namespace)
    assert ip(nr, "neigh add proxy 10.0.9.9").returncode == 0
    try:
        assert (
            ours(ip(nr, "neigh show proxy").stdout) == "10.0.2.9 dev ra proxy \n10.0.9.9 proxy \n"
        )
        res = ip(nr, "neigh del proxy 10.0.9.9 dev ra")
        assert (res.returncode, res.stderr) == (2, "RTNETLINK answers: No such file or directory\n")
        # the device going down takes its proxy entries (__neigh_ifdown), not the others
        assert ip(nr, "link set ra down").returncode == 0
        assert ours(ip(nr, "neigh show proxy").stdout) == "10.0.9.9 proxy \n"
    finally:
        ip(nr, "neigh del proxy 10.0.9.9")


def ours(show: str) -> str:
    """The lines of ``ip neigh show proxy`` about this test's addresses."""
    lines = show.splitlines(keepends=True)
    return "".join(line for line in lines if line.split()[0] in ("10.0.2.9", "10.0.9.9"))
