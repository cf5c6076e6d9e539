"""A GRO skb forwarded onto an IPv6 route whose MTU is below the device's.

R forwards A's TCP to B out of ``rb`` (1500 bytes) by ``fd02::/64 dev rb mtu
1300``. ``ip6_forward`` checks a packet against the device's mtu6 (the
route's MTU is not locked: ``ip6_dst_mtu_maybe_forward``), so A's
1500-byte segments, and the GRO skbs R's ``ra`` makes of them, pass; then
``__ip6_finish_output`` measures them against the route's 1300
(``ip6_skb_dst_mtu``: ``dst_mtu``). A segment is refused by ``ip6_fragment``
(Packet Too Big, ``Ip6FragFails``); a GSO skb whose segments do not fit goes
through ``ip6_finish_output_gso_slowpath_drop``: segmented in software, each
segment refused the same way. Linux 6.18 between network namespaces: the
first window's ten segments are refused with ten Packet Too Bigs, A's MSS
drops to 1228 and the retransmissions pass. Before, netstack forwarded the
GRO skbs whole (no Packet Too Big, A kept its 1428-byte MSS).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid

import pytest
import trio
import trio.testing
from helpers import stream_transfer

import netstack
from netstack.socket import AF_INET6
from netstack.tcp import TcpSock

PAYLOAD = bytes(range(256)) * 112  # 28,672 bytes: more than the first window

SETUP = {
    "A": ["addr add fd01::1/64 dev a0 nodad", "-6 route add default via fd01::2"],
    "R": [
        "addr add fd01::2/64 dev ra nodad",
        "addr add fd02::2/64 dev rb nodad",
        "-6 route change fd02::/64 dev rb metric 256 proto kernel mtu 1300",
    ],
    "B": ["addr add fd02::1/64 dev b0 nodad", "-6 route add default via fd02::2"],
}


async def test_gro_skbs_over_a_smaller_route_mtu(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, r, b = (lab.add_host(n) for n in ("a", "r", "b"))
    lab.add_link("a:a0", "r:ra")
    lab.add_link("b:b0", "r:rb")
    r.sysctl("net.ipv6.conf.all.forwarding=1")
    for host, name in ((a, "A"), (r, "R"), (b, "B")):
        for command in SETUP[name]:
            host.ip(command)
    await trio.sleep(2)
    got, c = await stream_transfer(a, b, AF_INET6, "fd02::1", 5001, PAYLOAD)
    assert got == PAYLOAD
    snmp = r.nstat()
    assert snmp["Ip6FragFails"] == snmp["Icmp6OutPktTooBigs"] == 10  # before: 0, 0
    assert r.drops()["PKT_TOO_BIG"] == 10
    sk = c.sock
    assert isinstance(sk, TcpSock)
    assert sk.mss_cache == 1228  # 1300 - 40 - 20 - 12 (timestamps); before: 1428


# run in R's namespace: GRO on ra (ETHTOOL_SGRO), as netstack's veth has it
_GRO_ON = r"""
import ctypes, fcntl, socket, struct
ev = ctypes.create_string_buffer(struct.pack("II", 0x2C, 1))
s = socket.socket()
fcntl.ioctl(s.fileno(), 0x8946, struct.pack("16sP", b"ra", ctypes.addressof(ev)) + bytes(16))
"""

_SINK = r"""
import socket, sys
s = socket.socket(socket.AF_INET6); s.bind(("fd02::1", 5001)); s.listen(1)
print("ready", flush=True)
c, _ = s.accept(); n = 0
while d := c.recv(1 << 16):
    n += len(d)
print(n, flush=True)
"""

_SEND = r"""
import socket, sys, time
s = socket.socket(socket.AF_INET6); s.connect(("fd02::1", 5001))
s.sendall(bytes(range(256)) * 112); time.sleep(0.5)
print(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG)); s.close()
"""


def test_linux_gro_skbs_over_a_smaller_route_mtu() -> None:
    """The same on this machine's kernel (root only)."""
    if os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("nstat") is None:
        pytest.skip("needs root, ip and nstat")
    tag = uuid.uuid4().hex[:6]
    ns = {n: f"g6{tag}{n}" for n in "ARB"}
    made = []

    def ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)

    def exec_in(n: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["ip", "netns", "exec", ns[n], *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )

    try:
        for n in "ARB":
            if subprocess.run(["ip", "netns", "add", ns[n]], capture_output=True).returncode:
                pytest.skip("cannot create a network namespace")
            made.append(ns[n])
            ip("-n", ns[n], "link", "set", "lo", "up")
        ip(
            "link",
            "add",
            "a0",
            "netns",
            ns["A"],
            "type",
            "veth",
            "peer",
            "name",
            "ra",
            "netns",
            ns["R"],
        )
        ip(
            "link",
            "add",
            "b0",
            "netns",
            ns["B"],
            "type",
            "veth",
            "peer",
            "name",
            "rb",
            "netns",
            ns["R"],
        )
        for n, dev in (("A", "a0"), ("R", "ra"), ("R", "rb"), ("B", "b0")):
            ip("-n", ns[n], "link", "set", dev, "up")
        exec_in("R", "sh", "-c", "echo 1 > /proc/sys/net/ipv6/conf/all/forwarding")
        for n, commands in SETUP.items():
            for command in commands:
                ip("-n", ns[n], *command.split())
        exec_in("R", sys.executable, "-c", _GRO_ON)
        exec_in("R", "nstat", "-n")
        with subprocess.Popen(
            ["ip", "netns", "exec", ns["B"], sys.executable, "-c", _SINK],
            stdout=subprocess.PIPE,
            text=True,
        ) as sink:
            assert sink.stdout is not None and sink.stdout.readline().strip() == "ready"
            mss = int(exec_in("A", sys.executable, "-c", _SEND).stdout)
            got = int(sink.stdout.readline())
            sink.wait(timeout=30)
        counters = dict(
            line.split()[:2] for line in exec_in("R", "nstat", "-a").stdout.splitlines()[1:]
        )
        assert got == len(PAYLOAD)
        assert counters["Ip6FragFails"] == counters["Icmp6OutPktTooBigs"] == "10"
        assert mss == 1228
    finally:
        for name in made:
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)
