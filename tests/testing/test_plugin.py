"""The pytest plugin: fixtures, topologies, packet checkers, pcaps of failing tests, conformance."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import dpkt
import pytest
import trio
import trio.testing

import netstack
from netstack.testing import (
    ARP,
    ICMP,
    UDP,
    Ether,
    Frames,
    GreSites,
    IPv4,
    RoutedHosts,
    TwoHosts,
    check_frame,
    check_net_device,
    expect_frame,
    lab_file,
    nic_pair,
    topology_fixture,
    tunnel_pair,
    veth_pair,
    vlan_pair,
)
from netstack.testing.conformance import PairMaker

ROOT = Path(__file__).resolve().parents[2]


async def test_two_hosts(two_hosts: TwoHosts, autojump_clock: trio.testing.MockClock) -> None:
    a, b = two_hosts
    assert (a.addr("eth0"), b.addr("eth0")) == ("10.0.0.1", "10.0.0.2")
    assert (await a.ping("10.0.0.2")).received == 1


async def test_routed_hosts(
    routed_hosts: RoutedHosts, autojump_clock: trio.testing.MockClock
) -> None:
    h1, router, h2 = routed_hosts
    result = await h1.ping(h2.addr("eth0"), count=2)
    assert result.received == 2
    assert router.snmp()["Ip"].ForwDatagrams == 4


async def test_gre_sites(gre_sites: GreSites, autojump_clock: trio.testing.MockClock) -> None:
    a1, ra, t, rb, b1 = gre_sites
    assert (await a1.ping(b1.addr("eth0"), count=2)).received == 2
    assert ra.dev("gre1").statistics().tx_packets == 2  # the requests went through the tunnel
    assert rb.dev("gre1").statistics().rx_packets == 2
    assert t.snmp()["Ip"].ForwDatagrams == 4  # t only saw the outer packets


def star(lab: netstack.Lab) -> dict[str, netstack.Host]:
    hub = lab.add_host("hub")
    out = {"hub": hub}
    for i in range(1, 4):
        leaf = lab.add_host(f"leaf{i}")
        lab.add_link(f"hub:eth{i}", f"leaf{i}:eth0")
        hub.ip(f"addr add 10.0.{i}.254/24 dev eth{i}")
        leaf.ip(f"addr add 10.0.{i}.1/24 dev eth0")
        leaf.ip(f"route add default via 10.0.{i}.254")
        out[leaf.name] = leaf
    hub.sysctl("net.ipv4.ip_forward=1")
    return out


star_net = topology_fixture(star, name="star_net")


async def test_topology_fixture(
    star_net: dict[str, netstack.Host], autojump_clock: trio.testing.MockClock
) -> None:
    assert (await star_net["leaf1"].ping("10.0.3.1")).received == 1


@pytest.mark.topology(fn=star)
async def test_topology_marker(
    topology: dict[str, netstack.Host], autojump_clock: trio.testing.MockClock
) -> None:
    assert sorted(topology) == ["hub", "leaf1", "leaf2", "leaf3"]


@pytest.mark.topology.with_args(lab_file(ROOT / "examples" / "demo.toml"))
async def test_lab_file_topology(
    topology: dict[str, netstack.Host], autojump_clock: trio.testing.MockClock
) -> None:
    assert (await topology["a"].ping("10.0.2.2")).received == 1


async def test_expect_frame_on_a_port(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    b = lab.add_host("b", sysctls={"net.ipv6.conf.all.disable_ipv6": 1})  # only what we send
    port = lab.add_port("b:eth0")
    b.ip("addr add 10.0.0.2/24 dev eth0")
    src_mac = b"\x02\x00\x00\x00\x00\x01"
    req = dpkt.arp.ARP(sha=src_mac, spa=bytes([10, 0, 0, 1]), tha=b"\0" * 6,
                       tpa=bytes([10, 0, 0, 2]), op=1)  # fmt: skip
    await port.send(
        bytes(dpkt.ethernet.Ethernet(src=src_mac, dst=b"\xff" * 6, type=0x0806, data=req))
    )
    frame = await expect_frame(port, Ether(dst="02:00:00:00:00:01"), ARP.reply(spa="10.0.0.2"))
    assert len(frame) >= 42
    with pytest.raises(AssertionError) as info:
        check_frame(frame, ARP.request())
    assert "arp.op is 2, expected 1" in str(info.value)
    assert "Reply 10.0.0.2 is-at" in str(info.value)  # the frame's tcpdump line
    with pytest.raises(AssertionError, match="no frame from eth0 within 1 s"):
        await expect_frame(port, ARP.reply(), timeout=1)


async def test_frames_of_a_capture(
    two_hosts: TwoHosts, autojump_clock: trio.testing.MockClock
) -> None:
    a, b = two_hosts
    frames = Frames(b.capture("eth0"), direction="in")
    await a.ping("10.0.0.2", count=1)
    await frames.expect(ARP.request(tpa="10.0.0.2"))
    await frames.expect(IPv4(src="10.0.0.1", dst="10.0.0.2", ttl=64), ICMP.echo_request(seq=1))
    s = a.socket()
    await s.sendto(b"hi", ("10.0.0.2", 4242))
    await frames.expect(IPv4(src="10.0.0.1"), UDP(dport=4242, payload=b"hi"))
    with pytest.raises(AssertionError, match="no frame on eth0"):
        await frames.next(timeout=0.5)
    assert frames.rest() == []
    with pytest.raises(AssertionError, match=r"icmp\.echo_reply\.type is 3, expected 0"):
        check_frame([f for _, f, out in b.captures[0].frames if out][-1], ICMP.echo_reply())


ALL_CHECKS = ["registration", "updown", "delivery", "frames", "counters", "mtu", "burst"]


@pytest.mark.parametrize(
    ("make_pair", "skip"),
    [
        pytest.param(veth_pair, set(), id="veth"),
        pytest.param(nic_pair, set(), id="nic"),
        pytest.param(vlan_pair, set(), id="vlan"),
        pytest.param(tunnel_pair("vxlan"), set(), id="vxlan"),
        # the MTU check runs after traffic: it needs fib_sync_mtu() to lower the
        # PMTU exceptions the tunnel's own transmissions recorded (tnl_update_pmtu)
        *(pytest.param(tunnel_pair(k), set(), id=k) for k in ("gre", "gretap", "ipip")),
        pytest.param(tunnel_pair("sit", "mode any"), set(), id="sit-mode-any"),
    ],
)
async def test_driver_conformance(
    lab: netstack.Lab,
    autojump_clock: trio.testing.MockClock,
    make_pair: PairMaker,
    skip: set[str],
) -> None:
    ran = await check_net_device(lab, make_pair, skip=skip)
    assert ran == [c for c in ALL_CHECKS if c not in skip]


@pytest.mark.parametrize(
    "driver",
    [
        pytest.param(
            "dummy",
            marks=pytest.mark.skip(reason="dummy frees every frame it is given: no peer"),
        ),
        pytest.param(
            "sit",
            marks=pytest.mark.skip(
                reason="the suite speaks IPv4; sit's default mode (ip6ip) carries IPv6 only"
            ),
        ),
    ],
)
def test_driver_conformance_does_not_apply(driver: str) -> None:
    """Drivers the suite cannot run on, listed so the reason shows in every run."""


@pytest.mark.slow
def test_failing_test_leaves_its_pcaps(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text(
        textwrap.dedent("""
        import trio.testing

        async def test_fails(two_hosts, autojump_clock: trio.testing.MockClock):
            a, b = two_hosts
            await a.ping("10.0.0.2", count=2)
            assert False, "on purpose"

        async def test_passes(two_hosts, autojump_clock: trio.testing.MockClock):
            a, b = two_hosts
            await a.ping("10.0.0.2")

        async def test_without_clock(lab):
            assert isinstance(trio.lowlevel.current_clock(), trio.testing.MockClock)
    """)
    )
    # the example of docs/testing.md runs in the same session (it must pass)
    doc = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    example = doc.split("## The pytest plugin")[1].split("```python\n")[1].split("```")[0]
    (tmp_path / "test_doc_example.py").write_text(example)
    pcaps = tmp_path / "pcaps"
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "trio_mode=true",
         "--netstack-capture-dir", str(pcaps), "-q", str(tmp_path / "test_x.py"),
         str(tmp_path / "test_doc_example.py")],
        capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False,
    )  # fmt: skip
    out = r.stdout
    assert "1 failed, 3 passed" in out, out  # a lab test needs no autojump_clock now
    assert "netstack captures" in out
    written = sorted(p.name for p in pcaps.rglob("*.pcap"))
    assert written == ["a-eth0.pcap", "b-eth0.pcap"], out
    a_pcap = next(pcaps.rglob("a-eth0.pcap"))
    with a_pcap.open("rb") as f:
        n = sum(1 for _ in dpkt.pcap.Reader(f))
    assert n == 6  # ARP request + reply, 2 × (echo request + reply)
    assert f"2 pcap files in {a_pcap.parent}:" in out
