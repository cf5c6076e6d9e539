"""IPv4 multicast group membership (net/ipv4/igmp.c): device groups, socket joins, input.

a (10.0.0.1) ── b (10.0.0.2) on one link. Every up device listens to
224.0.0.1 (``ip_mc_up``); a UDP socket's ``IP_ADD_MEMBERSHIP`` adds a user
of the group on its device (and the group's MAC to ``dev->mc``); only a
joined group's datagrams pass ``ip_route_input``. The setsockopt errnos are
the real kernel's, compared in a network namespace where root allows.
"""

from __future__ import annotations

import os
import shutil
import socket as _stdsocket
import struct
import subprocess

import pytest
import trio
import trio.testing

import netstack
from netstack.core.sock import AF_INET, IPPROTO_IP, SOCK_DGRAM, SOCK_STREAM
from netstack.socket import IP_ADD_MEMBERSHIP, IP_DROP_MEMBERSHIP
from netstack.testing.builders import pair

GROUP = _stdsocket.inet_aton("239.2.2.2")


def mreqn(group: bytes, ifindex: int = 0, address: bytes = bytes(4)) -> bytes:
    return group + address + struct.pack("=i", ifindex)


async def test_all_hosts_group_follows_the_device(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, _ = pair(lab)
    assert a.ip("-4 maddr show") == ("1:\tlo\n\tinet  224.0.0.1\n2:\teth0\n\tinet  224.0.0.1\n")
    assert a.ip("-0 maddr show dev eth0") == "2:\teth0\n\tlink  01:00:5e:00:00:01\n"
    a.ip("link set eth0 down")  # ip_mc_down: all-hosts left, the filter unloaded
    assert a.ip("-4 maddr show dev eth0") == a.ip("-0 maddr show dev eth0") == ""
    assert a.dev("eth0").mc == []
    a.ip("link set eth0 up")
    assert a.ip("-4 maddr show dev eth0") == "2:\teth0\n\tinet  224.0.0.1\n"


async def test_udp_receives_a_group_only_while_joined(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, b = pair(lab)
    a.ip("route add 224.0.0.0/4 dev eth0")
    cap = a.capture("eth0")
    tx = a.socket(AF_INET, SOCK_DGRAM)
    rx = b.socket(AF_INET, SOCK_DGRAM)
    await rx.bind(("0.0.0.0", 5000))
    ifindex = b.dev("eth0").ifindex

    async def exchange(payload: bytes) -> bytes | None:
        await tx.sendto(payload, ("239.2.2.2", 5000))
        with trio.move_on_after(1):
            data, addr = await rx.recvfrom(100)
            assert addr == ("10.0.0.1", tx.getsockname()[1])
            return data
        return None

    assert await exchange(b"before") is None  # not joined: dropped at input routing
    drops = b.drops()
    assert drops.get("IP_INADDRERRORS") == 1
    rx.setsockopt(IPPROTO_IP, IP_ADD_MEMBERSHIP, mreqn(GROUP, ifindex))
    assert b.ip("-4 maddr show dev eth0") == ("2:\teth0\n\tinet  239.2.2.2\n\tinet  224.0.0.1\n")
    assert b.dev("eth0").mc == [bytes.fromhex("01005e000001"), bytes.fromhex("01005e020202")]
    assert await exchange(b"joined") == b"joined"
    assert b.nstat()["IpExtInMcastPkts"] == 1
    assert b.nstat()["UdpInDatagrams"] == 1
    rx.setsockopt(IPPROTO_IP, IP_DROP_MEMBERSHIP, mreqn(GROUP, ifindex))
    assert b.dev("eth0").mc == [bytes.fromhex("01005e000001")]
    assert await exchange(b"left") is None
    assert b.drops().get("IP_INADDRERRORS") == 2
    assert b.nstat()["IpExtInMcastPkts"] == 1
    # on the wire: IPv4 to the group, Ethernet to its mapped MAC (01:00:5e + low 23 bits)
    import dpkt

    out = [dpkt.ethernet.Ethernet(f) for _, f, o in cap.frames if o]
    udp = [e for e in out if isinstance(e.data, dpkt.ip.IP) and e.data.p == 17]
    assert len(udp) == 3
    for e in udp:
        assert e.dst == bytes.fromhex("01005e020202")
        assert e.data.dst == GROUP and e.data.ttl == 1  # IP_MULTICAST_TTL default


async def test_memberships_count_users_and_close_drops_them(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    _, b = pair(lab)
    ifindex = b.dev("eth0").ifindex
    s1 = b.socket(AF_INET, SOCK_DGRAM)
    s2 = b.socket(AF_INET, SOCK_DGRAM)
    s1.setsockopt(IPPROTO_IP, IP_ADD_MEMBERSHIP, mreqn(GROUP, ifindex))
    # struct ip_mreq (8 bytes): the device by its address
    s2.setsockopt(IPPROTO_IP, IP_ADD_MEMBERSHIP, GROUP + _stdsocket.inet_aton("10.0.0.2"))
    assert "\tinet  239.2.2.2 users 2\n" in b.ip("maddr show dev eth0")
    assert "\tlink  01:00:5e:02:02:02\n" in b.ip("maddr show dev eth0")
    s1.close()  # ip_mc_drop_socket
    assert "\tinet  239.2.2.2\n" in b.ip("maddr show dev eth0")
    s2.close()
    assert "239.2.2.2" not in b.ip("maddr show")
    assert b.dev("eth0").mc == [bytes.fromhex("01005e000001")]
    # igmp_max_memberships (20) per socket
    s3 = b.socket(AF_INET, SOCK_DGRAM)
    for i in range(20):
        s3.setsockopt(IPPROTO_IP, IP_ADD_MEMBERSHIP, mreqn(bytes((239, 3, 0, i)), ifindex))
    with pytest.raises(OSError) as e:
        s3.setsockopt(IPPROTO_IP, IP_ADD_MEMBERSHIP, mreqn(bytes((239, 3, 0, 20)), ifindex))
    assert e.value.errno == 105  # ENOBUFS


# The same setsockopt sequence on netstack and on Linux: (optname, optval) → errno (0: ok).
# "IFX" is replaced by the test device's ifindex.
SEQUENCE: list[tuple[str, int, str]] = [
    ("drop, never joined, no route to the group", IP_DROP_MEMBERSHIP, "group"),
    ("join, no device and no route", IP_ADD_MEMBERSHIP, "group"),
    ("join, no such ifindex", IP_ADD_MEMBERSHIP, "group-if99"),
    ("join by ifindex", IP_ADD_MEMBERSHIP, "group-ifx"),
    ("join again", IP_ADD_MEMBERSHIP, "group-ifx"),
    ("leave", IP_DROP_MEMBERSHIP, "group-ifx"),
    ("leave again", IP_DROP_MEMBERSHIP, "group-ifx"),
    ("not a multicast address", IP_ADD_MEMBERSHIP, "unicast-ifx"),
    ("ip_mreq by interface address", IP_ADD_MEMBERSHIP, "group-addr"),
    ("4 bytes", IP_ADD_MEMBERSHIP, "short"),
]
EXPECTED = [19, 19, 19, 0, 98, 0, 99, 22, 0, 22]
EXPECTED_TCP = 71  # EPROTO: not on a connection-oriented socket


def optval(kind: str, ifindex: int) -> bytes:
    return {
        "group": GROUP + bytes(4),
        "group-if99": mreqn(GROUP, 99),
        "group-ifx": mreqn(GROUP, ifindex),
        "unicast-ifx": mreqn(_stdsocket.inet_aton("10.0.0.9"), ifindex),
        "group-addr": GROUP + _stdsocket.inet_aton("10.0.0.1"),
        "short": GROUP,
    }[kind]


def _errno(fn: object, *args: object) -> int:
    try:
        fn(*args)  # type: ignore[operator]
    except OSError as e:
        return e.errno or -1
    return 0


async def test_setsockopt_errnos(lab: netstack.Lab, autojump_clock: trio.testing.MockClock) -> None:
    a, _ = pair(lab)
    ifindex = a.dev("eth0").ifindex
    s = a.socket(AF_INET, SOCK_DGRAM)
    got = [_errno(s.setsockopt, IPPROTO_IP, opt, optval(k, ifindex)) for _, opt, k in SEQUENCE]
    assert got == EXPECTED
    t = a.socket(AF_INET, SOCK_STREAM)
    assert _errno(t.setsockopt, IPPROTO_IP, IP_ADD_MEMBERSHIP, mreqn(GROUP, ifindex)) == 71


_REAL = """
import socket, struct, sys
ifx = socket.if_nametoindex(sys.argv[1])
g = socket.inet_aton("239.2.2.2")
vals = {
    "group": g + bytes(4),
    "group-if99": g + bytes(4) + struct.pack("=i", 99),
    "group-ifx": g + bytes(4) + struct.pack("=i", ifx),
    "unicast-ifx": socket.inet_aton("10.0.0.9") + bytes(4) + struct.pack("=i", ifx),
    "group-addr": g + socket.inet_aton("10.0.0.1"),
    "short": g,
}
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
out = []
for opt, kind in [a.split(":") for a in sys.argv[2:]]:
    try:
        s.setsockopt(0, int(opt), vals[kind]); out.append(0)
    except OSError as e:
        out.append(e.errno)
t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
try:
    t.setsockopt(0, 35, vals["group-ifx"]); out.append(0)
except OSError as e:
    out.append(e.errno)
print(" ".join(map(str, out)))
"""


@pytest.mark.slow
def test_setsockopt_errnos_match_the_real_kernel() -> None:
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and ip")
    pid = os.getpid()
    ns, va, vb = f"nsigmp{pid}", f"ig{pid}a", f"ig{pid}b"
    script = f"""
set -e
ip netns add {ns}
ip link add {va} type veth peer name {vb}
ip link set {va} netns {ns}
ip -n {ns} addr add 10.0.0.1/24 dev {va}; ip -n {ns} link set {va} up
ip -n {ns} -4 maddr show dev {va}
"""
    try:
        r = subprocess.run(["bash", "-c", script], capture_output=True, timeout=30)
        if r.returncode != 0:
            pytest.skip(f"real kernel setup failed: {r.stderr.decode()[-200:]}")
        idx = r.stdout.decode().split(":")[0]
        assert r.stdout.decode() == f"{idx}:\t{va}\n\tinet  224.0.0.1\n"
        args = [f"{opt}:{kind}" for _, opt, kind in SEQUENCE]
        r = subprocess.run(
            ["ip", "netns", "exec", ns, "python3", "-c", _REAL, va, *args],
            capture_output=True,
            timeout=30,
        )
        assert r.returncode == 0, r.stderr
        assert [int(x) for x in r.stdout.split()] == [*EXPECTED, EXPECTED_TCP]
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        subprocess.run(["ip", "link", "del", va], capture_output=True)
