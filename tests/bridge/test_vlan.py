"""VLANs: two VLANs on one bridge are isolated; a router on a stick routes between them.

s1 filters VLANs (``vlan_filtering 1``): a (10.0.0.1) and c (10.0.0.3) are
access ports of VLAN 10, b (10.0.0.2) of VLAN 20, all in one IPv4 subnet so
only the VLANs keep them apart. For the router on a stick, r's ``eth0`` is
a trunk carrying VLANs 10 and 20 tagged, with ``eth0.10`` and ``eth0.20``.
Frames are checked byte for byte with dpkt: the 802.1Q header is on the
trunk's wire, not on the access ports'.
"""

from __future__ import annotations

import struct

import dpkt
import pytest
import trio
import trio.testing
from helpers import IPV4_ONLY

import netstack
from netstack.errors import ConfigError


def vlan_switch(lab: netstack.Lab) -> netstack.Host:
    s1 = lab.add_switch("s1", vlan_filtering=True, sysctls=IPV4_ONLY)
    for name, vid in (("a", 10), ("b", 20), ("c", 10)):
        lab.add_host(name, sysctls=IPV4_ONLY)
        lab.add_link(f"{name}:eth0", "s1")
        port = s1.dev(f"s1-eth{' abc'.index(name)}").name
        s1.bridge(f"vlan add dev {port} vid {vid} pvid untagged")
        s1.bridge(f"vlan del dev {port} vid 1")
    return s1


async def test_two_vlans_on_one_bridge_are_isolated(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    s1 = vlan_switch(lab)
    a, b, c = lab["a"], lab["b"], lab["c"]
    for i, h in enumerate((a, b, c), 1):
        h.ip(f"addr add 10.0.0.{i}/24 dev eth0")
    cap_b = s1.capture("s1-eth2")
    assert s1.bridge("vlan show") == (
        "port              vlan-id  \n"
        "br0               1 PVID Egress Untagged\n"
        "s1-eth1           10 PVID Egress Untagged\n"
        "s1-eth2           20 PVID Egress Untagged\n"
        "s1-eth3           10 PVID Egress Untagged\n"
    )
    assert (await a.ping("10.0.0.3", count=2, interval=0.1)).received == 2
    assert (await a.ping("10.0.0.2", count=1, timeout=1)).received == 0
    # the ping gives up at 1 s, the instant the neighbour's timer retransmits a's ARP
    # for .2 (retrans_time): look after it, not at a timer's instant
    await trio.sleep(0.5)
    # b's port never saw a frame of VLAN 10: not a's ARP broadcasts, not c's replies
    assert [f for _, f, out in cap_b.frames if out] == []
    st = s1.dev("br0").priv.statistics()
    assert st.ports["s1-eth2"].flood_broadcast == 0
    # a's ARP for .3, then two for .2 (at 0 s and the retransmission at 1 s)
    assert st.ports["s1-eth3"].flood_broadcast == 3
    vlan_lines = s1.bridge("fdb show br br0").splitlines()
    amac = a.dev("eth0").dev_addr.hex(":")
    assert f"{amac} dev s1-eth1 vlan 10 master br0 " in vlan_lines


def stick(lab: netstack.Lab) -> dict[str, netstack.Host]:
    s1 = vlan_switch(lab)
    r = lab.add_host("r", sysctls={**IPV4_ONLY, "net.ipv4.ip_forward": 1})
    lab.add_link("r:eth0", "s1")  # s1-eth4, the trunk
    s1.bridge("vlan add dev s1-eth4 vid 10")
    s1.bridge("vlan add dev s1-eth4 vid 20")
    for vid in (10, 20):
        r.ip(f"link add link eth0 name eth0.{vid} type vlan id {vid}")
        r.ip(f"addr add 10.0.{vid}.254/24 dev eth0.{vid}")
        r.ip(f"link set eth0.{vid} up")
    lab["a"].ip("addr add 10.0.10.1/24 dev eth0")
    lab["a"].ip("route add default via 10.0.10.254")
    lab["b"].ip("addr add 10.0.20.2/24 dev eth0")
    lab["b"].ip("route add default via 10.0.20.254")
    return {"s1": s1, "r": r, "a": lab["a"], "b": lab["b"]}


async def test_router_on_a_stick(lab: netstack.Lab, autojump_clock: trio.testing.MockClock) -> None:
    h = stick(lab)
    trunk = h["s1"].capture("s1-eth4")
    access_a = h["s1"].capture("s1-eth1")
    result = await h["a"].ping("10.0.20.2", count=2, interval=0.1)
    assert result.received == 2
    assert [rep.ttl for rep in result.replies] == [63, 63]
    # on the trunk every frame carries its VLAN's tag, in the frame itself
    tags = []
    for _, frame, _ in trunk.frames:
        tpid, tci = struct.unpack_from("!HH", frame, 12)
        assert tpid == 0x8100
        tags.append(tci & 0x0FFF)
        eth = dpkt.ethernet.Ethernet(frame)
        assert eth.vlan_tags[0].id == tci & 0x0FFF  # dpkt reads the 802.1Q header
    assert sorted(set(tags)) == [10, 20]
    # a's access port: untagged
    assert {struct.unpack_from("!H", f, 12)[0] for _, f, _ in access_a.frames} <= {
        0x0800,
        0x0806,
    }
    e10 = h["r"].dev("eth0.10").statistics()
    e20 = h["r"].dev("eth0.20").statistics()
    assert (e10.rx_packets, e10.tx_packets) == (
        3,
        3,
    )  # ARP + 2 echoes in, ARP reply + 2 replies out
    assert (e20.rx_packets, e20.tx_packets) == (3, 3)
    assert (
        h["r"]
        .ip("-d link show eth0.10")
        .splitlines()[2]
        .startswith("    vlan protocol 802.1Q id 10 <REORDER_HDR> ")
    )


async def test_the_same_with_tx_vlan_offload_off(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """Without tag insertion by the device, the tag goes in band before the driver."""
    h = stick(lab)
    h["r"].ethtool("-K eth0 txvlan off")
    assert "tx-vlan-offload: off" in h["r"].ethtool("-k eth0")
    assert (await h["a"].ping("10.0.20.2", count=1)).received == 1


async def test_qinq_wire_format(lab: netstack.Lab, autojump_clock: trio.testing.MockClock) -> None:
    """802.1ad outside, 802.1Q inside, as a NIC without tag offload puts them on the wire."""
    x = lab.add_host("x", sysctls=IPV4_ONLY)
    y = lab.add_host("y", sysctls=IPV4_ONLY)
    lab.add_link("x:eth0", "y:eth0", kind="nic")
    for i, h in enumerate((x, y), 1):
        h.ip("link add link eth0 name eth0.100 type vlan protocol 802.1ad id 100")
        h.ip("link add link eth0.100 name eth0.100.7 type vlan id 7")
        h.ip(f"addr add 10.7.0.{i}/24 dev eth0.100.7")
        h.ip("link set eth0.100 up")
        h.ip("link set eth0.100.7 up")
    cap = x.capture("eth0")
    assert (await x.ping("10.7.0.2", count=1)).received == 1
    out = [f for _, f, o in cap.frames if o]
    arp = out[0]
    assert arp[12:20] == bytes.fromhex("88a8006481000007")
    assert arp[20:22] == b"\x08\x06"
    eth = dpkt.ethernet.Ethernet(arp)
    assert [t.id for t in eth.vlan_tags] == [100, 7]
    assert y.dev("eth0.100.7").statistics().rx_packets == 2  # ARP request + echo request


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("link add link eth0 name v type vlan id 4095", "Error: 8021q: Invalid VLAN id."),
        ("link add link eth0 name v type vlan id 5000", "Error: 8021q: Invalid VLAN id."),
        (
            "link add link eth0 name v type vlan id 70000",
            'Error: argument "70000" is wrong: id is invalid',
        ),
        ("link add link eth0 name v type vlan", "Error: 8021q: VLAN id not specified."),
        ("link add name v type vlan id 10", "Error: 8021q: link not specified."),
        ("link add link nope name v type vlan id 10", 'Cannot find device "nope"'),
        (
            "link add link eth0 name v type vlan protocol 0x9100 id 10",
            "Error: 8021q: Invalid VLAN protocol.",
        ),
        ("link add link eth0 name v9 type vlan id 9", "Error: 8021q: VLAN device already exists."),
        ("link add link eth0 name eth0.9 type vlan id 8", "RTNETLINK answers: File exists"),
    ],
)
async def test_vlan_bad_input(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, command: str, message: str
) -> None:
    x = lab.add_host("x", sysctls=IPV4_ONLY)
    lab.add_host("y", sysctls=IPV4_ONLY)
    lab.add_link("x:eth0", "y:eth0")
    x.ip("link add link eth0 name eth0.9 type vlan id 9")
    before = x.ip("-d link show")
    with pytest.raises(ConfigError) as e:
        x.ip(command)
    assert str(e.value).startswith(message)
    assert x.ip("-d link show") == before


async def test_vlan_device_follows_its_real_device(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    x = lab.add_host("x", sysctls=IPV4_ONLY)
    lab.add_host("y", sysctls=IPV4_ONLY)
    lab.add_link("x:eth0", "y:eth0")
    x.ip("link add link eth0 name eth0.9 type vlan id 9")
    x.ip("link set eth0 down")
    with pytest.raises(ConfigError, match="Network is down"):
        x.ip("link set eth0.9 up")
    x.ip("link set eth0 up")  # NETDEV_UP on the real device brings its VLANs up
    assert "UP,LOWER_UP" in x.ip("link show eth0.9")
    x.ip("link del eth0.9")
    assert "eth0.9" not in x.ip("link show")
