"""MLDv2 reports at bring-up, as Linux 6.x sends them (net/ipv6/mcast.c).

A device brought up with its EUI-64 link-local joins the solicited-node
group ff02::1:ffXX:XXXX at DAD start and reports it twice from ``::``
(``mc_qrv`` = 2, the second a random part of 1 s later); when DAD completes
``ipv6_mc_dad_complete`` reports it twice more from the link-local. Each
report is 76 bytes of IPv6: hop limit 1, a hop-by-hop header with the router
alert option, ICMPv6 type 143 with one CHANGE_TO_EXCLUDE {} record, to
ff02::16. Together with the DAD probe and two router solicitations the host
has sent 7 packets of 488 bytes by 8 s, 4 of them counted as
``Icmp6OutMLDv2Reports`` — the figures a veth in a network namespace gives
on Linux 6.18 (compared below when the tests run as root).
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import textwrap
import time
from collections.abc import Mapping

import dpkt
import pytest
import trio
import trio.testing

import netstack
from netstack.core.snmp import MibSnapshot

ETH_P_IPV6 = 0x86DD


def _csum6(src: bytes, dst: bytes, nxt: int, payload: bytes) -> int:
    """The ICMPv6 checksum over the pseudo-header (RFC 8200 §8.1), computed here."""
    data = src + dst + struct.pack("!IxxxB", len(payload), nxt) + payload
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return int(~s & 0xFFFF)


def mld_reports(frames: list[bytes], mac: bytes) -> list[tuple[bytes, list[tuple[int, bytes]]]]:
    """(source, [(record type, group)]) of every MLDv2 report *mac* sent; checks each one."""
    out = []
    for f in frames:
        eth = dpkt.ethernet.Ethernet(f)
        if eth.src != mac or eth.type != ETH_P_IPV6:
            continue
        raw = bytes(eth.data)
        if raw[6] != 0:  # next header: hop-by-hop
            continue
        ip6 = dpkt.ip6.IP6(raw)
        assert eth.dst == bytes.fromhex("333300000016")
        assert ip6.dst == bytes.fromhex("ff020000000000000000000000000016")
        assert ip6.hlim == 1 and ip6.fc == 0 and ip6.flow == 0
        assert raw[40:48] == bytes.fromhex("3a00050200000100")  # router alert, PadN
        icmp = raw[48:]
        assert icmp[0] == 143 and icmp[1] == 0
        assert (
            _csum6(ip6.src, ip6.dst, 58, icmp[:2] + b"\0\0" + icmp[4:])
            == struct.unpack("!H", icmp[2:4])[0]
        )
        (ngrec,) = struct.unpack("!H", icmp[6:8])
        assert len(icmp) == 8 + 20 * ngrec
        recs = []
        for i in range(ngrec):
            rec = icmp[8 + 20 * i : 28 + 20 * i]
            assert rec[1:4] == b"\0\0\0"  # no aux data, no sources
            recs.append((rec[0], rec[4:20]))
        out.append((ip6.src, recs))
    return out


def _solicited(mac: bytes) -> bytes:
    return bytes.fromhex("ff0200000000000000000001ff") + mac[3:]


def _lladdr(mac: bytes) -> bytes:
    eui = bytes([mac[0] ^ 2]) + mac[1:3] + b"\xff\xfe" + mac[3:]
    return bytes.fromhex("fe80000000000000") + eui


ZERO = bytes(16)
COUNTERS = {
    "Ip6OutRequests": 7,
    "Ip6OutMcastPkts": 7,
    "Ip6OutMcastOctets": 488,
    "Icmp6OutMsgs": 7,
    "Icmp6OutMLDv2Reports": 4,
    "Icmp6OutType133": 2,
    "Icmp6OutType135": 1,
    "Icmp6OutType143": 4,
}


def _flat(snmp6: Mapping[str, MibSnapshot]) -> dict[str, int]:
    return {f"{mib}{name}": value for mib, snap in snmp6.items() for name, value in snap.values}


async def test_bring_up_sends_linux_mld_reports(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, b = lab.add_host("a"), lab.add_host("b")
    frames: list[bytes] = []
    lab.add_link("a:eth0", "b:eth0", kind="veth")
    b.capture("eth0", callback=lambda _t, f, _out: frames.append(bytes(f)))
    await trio.sleep(8)
    mac = a.dev("eth0").dev_addr
    group = _solicited(mac)
    reports = mld_reports(frames, mac)
    assert reports == [
        (ZERO, [(4, group)]),
        (ZERO, [(4, group)]),
        (_lladdr(mac), [(4, group)]),
        (_lladdr(mac), [(4, group)]),
    ]
    flat = _flat(a.snmp6())
    assert {k: flat[k] for k in COUNTERS} == COUNTERS


async def test_an_added_address_reports_its_group_and_the_others(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """``ip -6 addr add`` on an up device: ``ipv6_find_idev`` → ``ipv6_mc_up``
    re-adds the link-local's group, and the new solicited-node group is
    joined: two reports, each with both records, newest group first."""
    a, b = lab.add_host("a"), lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0", kind="veth")
    await trio.sleep(8)
    frames: list[bytes] = []
    b.capture("eth0", callback=lambda _t, f, _out: frames.append(bytes(f)))
    a.ip("-6 addr add 2001:db8::1/64 dev eth0")
    await trio.sleep(3)
    mac = a.dev("eth0").dev_addr
    new = bytes.fromhex("ff0200000000000000000001ff000001")
    reports = mld_reports(frames, mac)
    assert reports == [
        (_lladdr(mac), [(4, new), (4, _solicited(mac))]),
        (_lladdr(mac), [(4, new), (4, _solicited(mac))]),
    ]


async def test_force_mld_version_1_sends_no_v2_report(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a = lab.add_host("a", sysctls={"net.ipv6.conf.all.force_mld_version": 1})
    lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0", kind="veth")
    await trio.sleep(8)
    assert _flat(a.snmp6())["Icmp6OutMLDv2Reports"] == 0


# -- the real kernel ---------------------------------------------------------------------------
REAL_CAPTURE = textwrap.dedent(
    """
    import socket, sys, time
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.bind(("vb", 0))
    s.settimeout(0.2)
    deadline = time.monotonic() + float(sys.argv[1])
    while time.monotonic() < deadline:
        try:
            print(s.recv(2048).hex(), flush=True)
        except socket.timeout:
            pass
    """
)


@pytest.mark.slow
def test_linux_sends_the_same_reports() -> None:
    if not (hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("ip")):
        pytest.skip("needs root and ip(8) for network namespaces")
    # names of this process's own: two runs of the suite at once must not share them
    na, nb = f"nsmld-a-{os.getpid()}", f"nsmld-b-{os.getpid()}"
    for ns in (na, nb):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        if subprocess.run(["ip", "netns", "add", ns], capture_output=True).returncode:
            pytest.skip("cannot create a network namespace")
    try:
        subprocess.run(
            ["ip", "link", "add", "va", "netns", na, "type", "veth", "peer", "vb", "netns", nb],
            check=True,
        )
        subprocess.run(["ip", "-n", nb, "link", "set", "vb", "up"], check=True)
        cap = subprocess.Popen(
            ["ip", "netns", "exec", nb, sys.executable, "-c", REAL_CAPTURE, "5"],
            stdout=subprocess.PIPE,
            text=True,
        )
        time.sleep(0.5)
        subprocess.run(["ip", "-n", na, "link", "set", "va", "up"], check=True)
        out, _ = cap.communicate(timeout=30)
        snmp6 = subprocess.run(
            ["ip", "netns", "exec", na, "cat", "/proc/net/snmp6"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        link = subprocess.run(
            ["ip", "-n", na, "-o", "link", "show", "va"], capture_output=True, text=True
        ).stdout
    finally:
        for ns in (na, nb):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    mac = bytes.fromhex(link.split("link/ether ")[1].split()[0].replace(":", ""))
    frames = [bytes.fromhex(line) for line in out.split()]
    group = _solicited(mac)
    assert mld_reports(frames, mac) == [
        (ZERO, [(4, group)]),
        (ZERO, [(4, group)]),
        (_lladdr(mac), [(4, group)]),
        (_lladdr(mac), [(4, group)]),
    ]
    flat = {}
    for line in snmp6.splitlines():
        name, value = line.split()
        flat[name] = int(value)
    # by 5 s the second router solicitation (~4 s after the first) may not have gone
    rs = flat["Icmp6OutType133"]
    assert rs in (1, 2)
    assert flat["Icmp6OutMLDv2Reports"] == flat["Icmp6OutType143"] == 4
    assert flat["Icmp6OutType135"] == 1
    assert flat["Ip6OutRequests"] == flat["Icmp6OutMsgs"] == 5 + rs
    assert flat["Ip6OutMcastOctets"] == 4 * 76 + 72 + 56 * rs


async def test_a_host_booted_without_ipv6_reports_and_solicits_when_it_is_enabled(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """The MLD works and the RS timer of a device are made when first armed: a
    host that starts IPv4-only has none, and enabling IPv6 later gives the same
    reports, solicitations and counters as a host that had it from the start."""
    v4: dict[str, str | int] = {
        "net.ipv6.conf.all.disable_ipv6": 1,
        "net.ipv6.conf.default.disable_ipv6": 1,
    }
    a, b = lab.add_host("a", sysctls=v4), lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0", kind="veth")
    idev = a.dev("eth0").ip6_ptr
    assert idev._rs_timer is None
    assert idev.mld._ifc_work is None and idev.mld._dad_work is None
    await trio.sleep(8)
    assert _flat(a.snmp6())["Icmp6OutMsgs"] == 0
    frames: list[bytes] = []
    b.capture("eth0", callback=lambda _t, f, _out: frames.append(bytes(f)))
    a.sysctl("net.ipv6.conf.all.disable_ipv6=0")
    a.sysctl("net.ipv6.conf.eth0.disable_ipv6=0")
    await trio.sleep(8)
    mac = a.dev("eth0").dev_addr
    group = _solicited(mac)
    assert mld_reports(frames, mac) == [
        (ZERO, [(4, group)]),
        (ZERO, [(4, group)]),
        (_lladdr(mac), [(4, group)]),
        (_lladdr(mac), [(4, group)]),
    ]
    flat = _flat(a.snmp6())
    assert {k: flat[k] for k in COUNTERS} == COUNTERS
    res = await b.ping(f"{a.addr6('eth0', scope='link')}%eth0", count=1)
    assert res.received == 1
