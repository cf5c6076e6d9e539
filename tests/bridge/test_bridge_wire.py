"""BPDUs and 802.1Q frames on the wire: byte-exact, tshark-clean, and as Linux sends them.

A bridge answers an inferior configuration BPDU at once with its own
(``br_received_config_bpdu`` → ``br_reply``), which makes a BPDU a request
away: the test injects one through a Python-driven cable and checks the
answer byte for byte — and, with root, sends the same BPDU to a real Linux
bridge in a network namespace and compares the two answers.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import dpkt
import pytest
import trio
import trio.testing
from helpers import IPV4_ONLY

import netstack

PORT_MAC = bytes.fromhex("0a0000000001")
PEER_MAC = bytes.fromhex("0a00000000fe")
STP_GROUP = bytes.fromhex("0180c2000000")
TSHARK = shutil.which("tshark")


def inferior_bpdu(src: bytes) -> bytes:
    """A configuration BPDU from a bridge that believes it is root with priority 0xffff."""
    bpdu = (
        b"\x00\x00\x00\x00\x00"  # protocol, version, config, flags
        + b"\xff\xff" + src  # root id
        + b"\x00\x00\x00\x00"  # root path cost
        + b"\xff\xff" + src  # bridge id
        + b"\x80\x01"  # port id
        + b"\x00\x00\x14\x00\x02\x00\x0f\x00"  # age 0, max 20 s, hello 2 s, fwd 15 s
    )  # fmt: skip
    llc = b"\x42\x42\x03"
    return STP_GROUP + src + len(llc + bpdu).to_bytes(2, "big") + llc + bpdu


def expected_reply(mac: bytes) -> bytes:
    """The root bridge's configuration BPDU on port 1, as br_send_config_bpdu() builds it."""
    bid = b"\x80\x00" + mac
    bpdu = (
        b"\x00\x00\x00\x00\x00" + bid + b"\x00\x00\x00\x00" + bid + b"\x80\x01"
        + b"\x00\x00\x14\x00\x02\x00\x0f\x00"
    )  # fmt: skip
    return STP_GROUP + mac + (38).to_bytes(2, "big") + b"\x42\x42\x03" + bpdu


async def bpdu_reply(lab: netstack.Lab) -> bytes:
    s = lab.add_host("s", sysctls=IPV4_ONLY)
    port = lab.add_port("s:p1", up=False)
    s.ip(f"link set p1 address {PORT_MAC.hex(':')}")
    s.ip("link set p1 up")
    s.ip("link add br0 type bridge stp_state 1")
    s.ip("link set p1 master br0")
    s.ip("link set br0 up")
    await trio.sleep(0.5)
    assert port.drain() == []  # no hello yet (the first at 2 s)
    port.send_nowait(inferior_bpdu(PEER_MAC))
    await trio.sleep(0.001)
    (reply,) = port.drain()
    return reply


async def test_bpdu_reply_is_byte_exact(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    reply = await bpdu_reply(lab)
    assert reply == expected_reply(PORT_MAC) + bytes(8)  # the NIC pads to 60 bytes
    stp = dpkt.stp.STP(reply[17:52])  # dpkt as the independent reader
    assert (stp.max_age, stp.hello, stp.fd) == (20, 2, 15)
    assert stp.root_id == b"\x80\x00" + PORT_MAC
    assert stp.port_id == 0x8001


async def test_bad_bpdus_are_counted_and_dropped(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    s = lab.add_host("s", sysctls=IPV4_ONLY)
    port = lab.add_port("s:p1")
    s.ip("link add br0 type bridge stp_state 1")
    s.ip("link set p1 master br0")
    s.ip("link set br0 up")
    good = inferior_bpdu(PEER_MAC)
    port.send_nowait(good[:17] + b"\x00\x01" + good[19:])  # protocol id 1
    port.send_nowait(good[:12] + b"\x00\x10" + good[14:30])  # config BPDU cut short
    old = bytearray(good)
    old[44:46] = b"\x20\x00"  # message age 32 s > max age 20 s
    port.send_nowait(bytes(old))
    await trio.sleep(0.001)
    br = s.dev("br0").priv
    assert br.statistics().ports["p1"].rx_bad_bpdu == 3
    assert s.drops() == {"STP_INVALID": 3}
    assert port.drain() == []  # no reply to any of them


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")
async def test_stp_and_vlan_frames_are_tshark_clean(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    a = lab.add_host("a", sysctls=IPV4_ONLY)
    s1 = lab.add_switch("s1", stp=True, sysctls=IPV4_ONLY)
    lab.add_link("a:eth0", "s1", kind="nic")
    a.ip("link add link eth0 name eth0.10 type vlan id 10")
    a.ip("addr add 10.0.10.1/24 dev eth0.10")
    a.ip("link set eth0.10 up")
    path = tmp_path / "stp.pcap"
    with a.capture("eth0", path):
        await trio.sleep(5)
        await a.ping("10.0.10.2", count=1, timeout=0.5)
    assert TSHARK is not None
    fields = ["_ws.malformed", "_ws.expert.severity", "stp.type", "stp.root.hw", "vlan.id"]
    argv = [TSHARK, "-r", str(path), "-T", "fields", "-E", "separator=|"]
    for f in fields:
        argv += ["-e", f]
    done = await trio.to_thread.run_sync(
        lambda: subprocess.run(argv, capture_output=True, text=True, check=True)
    )
    rows = [dict(zip(fields, line.split("|"), strict=True)) for line in done.stdout.splitlines()]
    bpdus = [r for r in rows if r["stp.type"]]
    tagged = [r for r in rows if r["vlan.id"]]
    assert len(bpdus) == 2  # hellos at 2 s and 4 s
    assert tagged and all(r["vlan.id"] == "10" for r in tagged)
    root = s1.dev("br0").dev_addr.hex(":")
    for r in rows:
        assert not r["_ws.malformed"], r
    for r in bpdus:
        assert (r["stp.type"], r["stp.root.hw"]) == ("0x00", root), r


# -- the real kernel ------------------------------------------------------------------------------
def _root() -> bool:
    import os

    return os.geteuid() == 0 and shutil.which("ip") is not None


REAL_BPDU = textwrap.dedent(
    """
    import socket, sys, time
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.bind(("vb", 0))
    s.settimeout(3)
    s.send(bytes.fromhex(sys.argv[1]))
    port = bytes.fromhex(sys.argv[2])
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        frame = s.recv(2048)
        if frame[:6] == bytes.fromhex("0180c2000000") and frame[6:12] == port:
            print(frame.hex())
            break
    """
)


def _ns(name: str, *cmd: str) -> str:
    return subprocess.run(
        ["ip", "netns", "exec", name, *cmd], capture_output=True, text=True, check=True
    ).stdout


@pytest.fixture
def real_netns() -> object:
    if not _root():
        pytest.skip("needs root for a network namespace")
    name = "nsbridge-test"
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    try:
        subprocess.run(["ip", "netns", "add", name], check=True)
    except (subprocess.CalledProcessError, OSError):
        pytest.skip("cannot create a network namespace")
    try:
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


def test_linux_answers_the_same_bpdu(real_netns: str) -> None:
    """The real kernel's reply to the same inferior BPDU, byte for byte."""
    ns = real_netns
    cmds = [
        "link add va type veth peer name vb",
        f"link set va address {PORT_MAC.hex(':')}",
        f"link set vb address {PEER_MAC.hex(':')}",
        "link add br0 type bridge stp_state 1",
        "link set va master br0",
        "link set br0 up",
        "link set va up",
        "link set vb up",
    ]
    for c in cmds:
        subprocess.run(["ip", "-n", ns, *c.split()], check=True)
    out = _ns(ns, sys.executable, "-c", REAL_BPDU, inferior_bpdu(PEER_MAC).hex(), PORT_MAC.hex())
    real = bytes.fromhex(out.strip())
    assert real == expected_reply(PORT_MAC)

    async def ours() -> bytes:
        async with netstack.open_lab() as lab:
            return await bpdu_reply(lab)

    assert netstack.run(ours) == real + bytes(8)  # netstack's Port is a NIC: it pads


def test_linux_bridge_mac_and_details_match(real_netns: str) -> None:
    """The bridge takes the lowest port MAC; ``ip -d link``'s bridge keys come in the same order."""
    ns = real_netns
    macs = ("0a:00:00:00:00:07", "0a:00:00:00:00:03")
    for i, mac in enumerate(macs):
        subprocess.run(
            ["ip", "-n", ns, "link", "add", f"p{i}", "address", mac, "type", "veth", "peer",
             "name", f"q{i}"], check=True,
        )  # fmt: skip
    subprocess.run(["ip", "-n", ns, "link", "add", "br0", "type", "bridge"], check=True)
    for i in range(2):
        subprocess.run(["ip", "-n", ns, "link", "set", f"p{i}", "master", "br0"], check=True)
    real = subprocess.run(
        ["ip", "-n", ns, "-d", "link", "show", "br0"], capture_output=True, text=True, check=True
    ).stdout

    async def ours() -> str:
        async with netstack.open_lab() as lab:
            s = lab.add_host("s", sysctls=IPV4_ONLY)
            for i, mac in enumerate(macs):
                lab.add_host(f"q{i}", sysctls=IPV4_ONLY)
                lab.add_link(f"s:p{i}", f"q{i}:eth0")
                s.ip(f"link set p{i} address {mac}")
            s.ip("link add br0 type bridge")
            s.ip("link set p0 master br0")
            s.ip("link set p1 master br0")
            return s.ip("-d link show br0")

    mine = netstack.run(ours)
    assert "link/ether 0a:00:00:00:00:03 " in real
    assert "link/ether 0a:00:00:00:00:03 " in mine

    def keys(text: str) -> list[str]:
        words = text.split("\n")[2].split()[1:]  # after "bridge"
        names = words[::2]
        names = names[: names.index("nf_call_arptables") + 1]  # the bridge's own attributes
        return [k for k in names if not k.startswith("vlan_") or k == "vlan_filtering"]

    # this kernel is built without VLAN filtering: it sends no vlan_protocol etc.
    assert keys(mine) == keys(real), (keys(mine), keys(real))
