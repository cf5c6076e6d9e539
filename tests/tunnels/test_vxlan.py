"""VXLAN: an L2 overlay across a routed underlay, byte for byte, and its FDB.

h1 (192.0.2.1) ── r ── (198.51.100.2) h2, each with vxlan0 (VNI 42, dstport
4789) and 192.168.42.x/24 on it. The captures on h1's underlay are parsed
with dpkt: outer IPv4 (no DF, TTL 64, protocol 17), UDP to 4789 from the
port the inner flow hash picks (``udp_flow_src_port``), the VXLAN header
(flags 0x08, VNI 42, reserved bytes zero) and the inner Ethernet frame.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import dpkt
import pytest
import trio
import trio.testing
from helpers import IPV4_ONLY, stream_transfer

import netstack
from netstack.core.sock import AF_INET, SO_BROADCAST, SOL_SOCKET
from netstack.errors import ConfigError
from netstack.sched.fq_codel import jhash_3words
from netstack.tcp import tcp_of
from netstack.tunnels.udp_tunnel import flow_hashrnd
from netstack.userspace.iproute2.ip.ip import ip_run
from netstack.wire.checksum import csum_partial, csum_tcpudp_magic, ip_fast_csum

M1 = "02:00:00:00:00:01"
M2 = "02:00:00:00:00:02"


def mac(text: str) -> bytes:
    return bytes.fromhex(text.replace(":", ""))


def ip4(text: str) -> int:
    a, b, c, d = (int(x) for x in text.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def build_overlay(lab: netstack.Lab, opts: str = "") -> dict[str, netstack.Host]:
    """h1 ─ r ─ h2 routed; vxlan0 (VNI 42) between h1 and h2 with *opts* appended."""
    h1, r, h2 = (lab.add_host(n, sysctls=IPV4_ONLY) for n in ("h1", "r", "h2"))
    lab.add_link("h1:eth0", "r:eth0")
    lab.add_link("r:eth1", "h2:eth0")
    h1.ip("addr add 192.0.2.1/24 dev eth0")
    h1.ip("route add default via 192.0.2.254")
    h2.ip("addr add 198.51.100.2/24 dev eth0")
    h2.ip("route add default via 198.51.100.254")
    r.ip("addr add 192.0.2.254/24 dev eth0")
    r.ip("addr add 198.51.100.254/24 dev eth1")
    r.sysctl("net.ipv4.ip_forward=1")
    for h, remote, m, addr in (
        (h1, "198.51.100.2", M1, "192.168.42.1/24"),
        (h2, "192.0.2.1", M2, "192.168.42.2/24"),
    ):
        h.ip(f"link add vxlan0 type vxlan id 42 dstport 4789 remote {remote} dev eth0 {opts}")
        h.ip(f"link set vxlan0 address {m}")
        h.ip(f"addr add {addr} dev vxlan0")
        h.ip("link set vxlan0 up")
    return {"h1": h1, "r": r, "h2": h2}


def vxlan_udp(frames: list[tuple[float, bytes, bool]], outgoing: bool) -> list[dpkt.ip.IP]:
    out = []
    for _, frame, o in frames:
        eth = dpkt.ethernet.Ethernet(frame)
        ip = eth.data
        if o == outgoing and isinstance(ip, dpkt.ip.IP) and ip.p == 17:
            if isinstance(ip.data, dpkt.udp.UDP) and ip.data.dport == 4789:
                out.append(ip)
    return out


def expected_sport(host: netstack.Host, inner: dpkt.ethernet.Ethernet) -> int:
    """udp_flow_src_port() by hand: the flow dissector's jhash of the inner flow,
    "obfuscated" (hash ^ hash << 16) and scaled into 32768-60999."""
    key = flow_hashrnd(host.net)
    if inner.type == 0x0800:
        ip = inner.data
        saddr = int.from_bytes(ip.src, "big")
        daddr = int.from_bytes(ip.dst, "big")
        l4 = ip.p
        ports = 0
        if l4 in (6, 17):
            ports = (ip.data.sport << 16) | ip.data.dport
    else:
        saddr = daddr = ports = l4 = 0
    sport, dport = ports >> 16, ports & 0xFFFF
    if daddr < saddr or (daddr == saddr and dport < sport):
        saddr, daddr, sport, dport = daddr, saddr, dport, sport
    h = jhash_3words(saddr, daddr, (sport << 16 | dport) ^ (l4 << 8) ^ inner.type, key) or 1
    h = (h ^ (h << 16)) & 0xFFFFFFFF
    return ((h * (60999 - 32768)) >> 32) + 32768


async def test_overlay_ping_byte_exact(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = build_overlay(lab)
    h1, h2 = h["h1"], h["h2"]
    assert h1.dev("vxlan0").mtu == 1450  # 1500 - 20 - 8 - 8 - 14
    cap = h1.capture("eth0")
    result = await h1.ping("192.168.42.2", count=3, interval=0.1)
    assert result.received == 3
    out = vxlan_udp(cap.frames, True)
    inn = vxlan_udp(cap.frames, False)
    # ARP request (broadcast, head-end to the default entry) + 3 echo requests out;
    # the ARP reply + 3 echo replies in
    assert len(out) == 4 and len(inn) == 4
    for ip in out:
        raw = bytes(ip)
        assert ip_fast_csum(raw, 0, 20) == 0
        assert (ip.src, ip.dst) == (bytes([192, 0, 2, 1]), bytes([198, 51, 100, 2]))
        assert ip.ttl == 64 and not ip.df and ip.tos == 0  # ttl auto, df unset
        udp = ip.data
        assert udp.dport == 4789 and udp.ulen == len(raw) - 20
        vx = bytes(udp.data)
        assert vx[:8] == bytes([0x08, 0, 0, 0, 0, 0, 42, 0])  # I flag, VNI 42
        inner = dpkt.ethernet.Ethernet(vx[8:])
        assert inner.src == mac(M1)
        assert udp.sport == expected_sport(h1, inner)
        # udpcsum (the default): valid once the device completes it, as veth leaves it
        pseudo = csum_tcpudp_magic(
            ip4("192.0.2.1"), ip4("198.51.100.2"), udp.ulen, 17, csum_partial(bytes(udp))
        )
        assert udp.sum != 0
        assert pseudo == 0 or udp.sum == (
            ~csum_tcpudp_magic(ip4("192.0.2.1"), ip4("198.51.100.2"), udp.ulen, 17, 0) & 0xFFFF
        )
    arp = dpkt.ethernet.Ethernet(bytes(out[0].data.data)[8:])
    assert arp.dst == b"\xff" * 6 and arp.type == 0x0806
    echo = dpkt.ethernet.Ethernet(bytes(out[1].data.data)[8:])
    assert echo.dst == mac(M2) and echo.type == 0x0800
    assert isinstance(echo.data.data, dpkt.icmp.ICMP) and echo.data.ttl == 64
    # one flow, one source port; each host hashes with its own per-boot key
    assert len({ip.data.sport for ip in out[1:]}) == 1
    # learning: each end learned the other's MAC from the outer source address
    assert h2.bridge("fdb show dev vxlan0") == (
        f"{M1} dst 192.0.2.1 self \n00:00:00:00:00:00 dst 192.0.2.1 via eth0 self permanent\n"
    )
    s1, s2 = h1.dev("vxlan0").statistics(), h2.dev("vxlan0").statistics()
    # tx_bytes counts from the inner network header (iptunnel_xmit), rx_bytes
    # after the inner Ethernet header: 28 (ARP) + 3 * 84 (echo)
    assert (s1.tx_packets, s1.tx_bytes, s2.rx_packets, s2.rx_bytes) == (4, 280, 4, 280)
    assert (s1.rx_packets, s2.tx_packets) == (4, 4)
    assert h1.drops() == {} and h2.drops() == {}


async def test_overlay_tcp_transfer(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = build_overlay(lab)
    payload = bytes(range(256)) * 256  # 64 KiB
    got, _ = await stream_transfer(h["h1"], h["h2"], AF_INET, "192.168.42.2", 5001, payload)
    assert got == payload
    # vxlan0 took TSO skbs and the underlay veth carried them whole
    assert h["h1"].dev("vxlan0").statistics().tx_errors == 0
    assert h["h1"].drops() == {} and h["h2"].drops() == {}


async def test_tcp_source_port_follows_the_connection_hash(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """TCP sets skb->hash from the socket's sk_txhash: one port per connection."""
    h = build_overlay(lab)
    cap = h["h1"].capture("eth0")
    await stream_transfer(h["h1"], h["h2"], AF_INET, "192.168.42.2", 5002, b"x" * 3000)
    tcp = [
        ip
        for ip in vxlan_udp(cap.frames, True)
        if dpkt.ethernet.Ethernet(bytes(ip.data.data)[8:]).type == 0x0800
        and dpkt.ethernet.Ethernet(bytes(ip.data.data)[8:]).data.p == 6
    ]
    assert len(tcp) == 4  # SYN, ACK, the 3000 bytes (one GSO skb at this tap), FIN
    assert len({ip.data.sport for ip in tcp}) == 1
    assert 32768 <= tcp[0].data.sport < 60999


async def test_ip_d_link_and_bridge_fdb_as_iproute2_prints_them(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = build_overlay(lab)
    h1 = h["h1"]
    text = h1.ip("-d link show vxlan0")
    assert (
        "    vxlan id 42 remote 198.51.100.2 dev eth0 srcport 0 0 dstport 4789 ttl auto "
        "ageing 300 udpcsum noudp6zerocsumtx noudp6zerocsumrx " in text
    )
    assert text.startswith("3: vxlan0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1450 ")
    h1.bridge("fdb append 00:00:00:00:00:00 dev vxlan0 dst 203.0.113.9")
    h1.bridge("fdb add 02:00:00:00:00:09 dev vxlan0 dst 203.0.113.10 port 5000 vni 77")
    assert h1.bridge("fdb show dev vxlan0") == (
        "02:00:00:00:00:09 dst 203.0.113.10 port 5000 vni 77 self permanent\n"
        "00:00:00:00:00:00 dst 198.51.100.2 via eth0 self permanent\n"
        "00:00:00:00:00:00 dst 203.0.113.9 self permanent\n"
    )
    h1.bridge("fdb del 00:00:00:00:00:00 dev vxlan0 dst 203.0.113.9")
    assert "203.0.113.9" not in h1.bridge("fdb show dev vxlan0")
    with pytest.raises(ConfigError, match=r"^RTNETLINK answers: File exists$"):
        h1.bridge("fdb add 02:00:00:00:00:09 dev vxlan0 dst 203.0.113.10")
    with pytest.raises(ConfigError, match=r"^RTNETLINK answers: Invalid argument$"):
        h1.bridge("fdb add 02:00:00:00:00:0b dev vxlan0")  # no dst
    h2 = h["h2"]
    h2.ip(
        "link add vx9 type vxlan id 9 dstport 4789 local 198.51.100.2 ttl 10 tos inherit "
        "nolearning ageing 20 maxaddress 5 noudpcsum srcport 1000 2000"
    )
    assert (
        "    vxlan id 9 local 198.51.100.2 srcport 1000 2000 dstport 4789 nolearning "
        "tos inherit ttl 10 ageing 20 maxaddr 5 noudpcsum noudp6zerocsumtx "
        "noudp6zerocsumrx " in h2.ip("-d link show vx9")
    )


BAD = [
    ("vxlan dstport 4789", "vxlan: missing virtual network identifier"),
    ("vxlan id 16777216 dstport 4789", 'Error: argument "16777216" is wrong: invalid id'),
    ("vxlan id 5 dstport 4789 group 239.1.1.1", "vxlan: 'group' requires 'dev' to be specified"),
    (
        "vxlan id 5 dstport 4789 remote 10.0.0.2 group 239.1.1.1 dev eth0",
        "vxlan: both group and remote cannot be specified",
    ),
    (
        "vxlan id 5 dstport 4789 remote 239.1.1.1",
        'Error: argument "239.1.1.1" is wrong: invalid remote address',
    ),
    (
        "vxlan id 5 dstport 4789 local 239.1.1.1",
        'Error: argument "239.1.1.1" is wrong: invalid local address',
    ),
    ("vxlan id 5 dstport 4789 dev nosuch", 'Cannot find device "nosuch"'),
    ("vxlan id 5 dstport 4789 ttl 256", 'Error: argument "256" is wrong: TTL must be <= 255'),
    ("vxlan id 5 dstport 4789 srcport 2000 1000", "Error: Invalid source port range."),
    ("vxlan id 5 id 6", 'Error: either "id" is duplicate, or "6" is a garbage.'),
    ("vxlan id 42 dstport 4789", "Error: A VXLAN device with the specified VNI already exists."),
]


@pytest.mark.parametrize(("args", "message"), BAD)
async def test_bad_input_exact_message_and_no_state_change(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, args: str, message: str
) -> None:
    h = lab.add_host("h", sysctls=IPV4_ONLY)
    lab.add_link("h:eth0", "h:eth1")
    h.ip("link add vxlan0 type vxlan id 42 dstport 4789")
    before = h.ip("link show")
    with pytest.raises(ConfigError) as e:
        h.ip(f"link add vx1 type {args}")
    assert str(e.value) == message
    assert h.ip("link show") == before


async def test_unknown_word_prints_the_usage(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = lab.add_host("h", sysctls=IPV4_ONLY)
    with pytest.raises(ConfigError) as e:
        h.ip("link add vx1 type vxlan id 5 dstport 4789 bogus")
    text = str(e.value)
    assert text.startswith('vxlan: unknown command "bogus"?\nUsage: ... vxlan id VNI\n')
    assert text.endswith("\tDF\t:= { unset | set | inherit }\n\tLABEL := 0-1048575")
    assert h.net.dev_get_by_name("vx1") is None


async def test_no_dstport_warns_and_uses_the_linux_default(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = lab.add_host("h", sysctls=IPV4_ONLY)
    out, err = ip_run(h.net, "link add vxlan0 type vxlan id 42 remote 10.0.0.2")
    assert out == ""
    assert err == (
        "vxlan: destination port not specified\n"
        "Will use Linux kernel default (non-standard value)\n"
        "Use 'dstport 4789' to get the IANA assigned value\n"
        "Use 'dstport 0' to get default and quiet this message\n"
    )
    assert "dstport 8472 " in h.ip("-d link show vxlan0")
    assert ip_run(h.net, "link add vxlan1 type vxlan id 43 dstport 0") == ("", "")
    assert "dstport 8472 " in h.ip("-d link show vxlan1")


async def test_port_taken_by_a_socket_refuses_up(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = lab.add_host("h", sysctls=IPV4_ONLY)
    sock = h.socket()
    await sock.bind(("0.0.0.0", 4789))
    h.ip("link add vxlan0 type vxlan id 42 dstport 4789 remote 10.0.0.2")
    with pytest.raises(ConfigError) as e:
        h.ip("link set vxlan0 up")
    assert str(e.value) == "RTNETLINK answers: Address already in use"
    assert not h.dev("vxlan0").flags & 1  # IFF_UP
    sock.close()
    h.ip("link set vxlan0 up")
    assert h.dev("vxlan0").flags & 1


async def test_mtu_above_the_underlay_is_refused(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = build_overlay(lab)
    with pytest.raises(ConfigError, match=r"^RTNETLINK answers: Invalid argument$"):
        h["h1"].ip("link set vxlan0 mtu 1451")
    assert h["h1"].dev("vxlan0").mtu == 1450
    h["h1"].ip("link set vxlan0 mtu 1400")
    assert h["h1"].dev("vxlan0").mtu == 1400


async def test_learning_and_ageing_on_the_clock(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = build_overlay(lab, "ageing 60")
    h1, h2 = h["h1"], h["h2"]
    assert (await h1.ping("192.168.42.2", count=1)).received == 1
    vx2 = h2.dev("vxlan0").priv
    assert vx2.statistics().addrcnt == 2  # the default entry and h1's MAC
    # rx-only traffic keeps refreshing "updated" (6.16+): the entry stays
    sock = h1.socket()
    sock.setsockopt(SOL_SOCKET, SO_BROADCAST, 1)
    for _ in range(10):
        await sock.sendto(b"keep", ("192.168.42.255", 9))  # broadcast: h2 never answers
        await trio.sleep(10)
    assert M1 in h2.bridge("fdb show dev vxlan0")
    # "used" (the last transmit lookup: h2's unicast ARP probe of 192.168.42.1, about
    # 5 s in) is old; "updated" (the last frame heard from h1) is fresh
    assert h2.bridge("-s fdb show dev vxlan0").split("\n")[0] == (
        f"{M1} dst 192.0.2.1 used 95/10 self "
    )
    # silence: the entry expires "ageing" (60 s) after the last frame heard, 50 s from
    # now; vxlan_cleanup re-arms for the earliest expiry, so it goes on the second
    await trio.sleep(49.9)
    assert M1 in h2.bridge("fdb show dev vxlan0")
    await trio.sleep(0.2)
    assert M1 not in h2.bridge("fdb show dev vxlan0")
    assert vx2.statistics().addrcnt == 1
    # the permanent default entry never ages
    assert "00:00:00:00:00:00 dst 192.0.2.1 via eth0 self permanent" in h2.bridge(
        "fdb show dev vxlan0"
    )


async def test_nolearning_learns_nothing(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = build_overlay(lab, "nolearning")
    assert (await h["h1"].ping("192.168.42.2", count=1)).received == 1
    assert h["h2"].bridge("fdb show dev vxlan0") == (
        "00:00:00:00:00:00 dst 192.0.2.1 via eth0 self permanent\n"
    )


async def test_head_end_replication_to_every_default_remote(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """Three VTEPs on one LAN; h1 floods a broadcast to both others (one copy each)."""
    hosts = [lab.add_host(f"v{i}", sysctls=IPV4_ONLY) for i in (1, 2, 3)]
    swh = lab.add_host("sw", sysctls=IPV4_ONLY)
    swh.ip("link add br0 type bridge")
    for i, hst in enumerate(hosts, start=1):
        lab.add_link(f"v{i}:eth0", f"sw:p{i}")
        hst.ip(f"addr add 10.0.0.{i}/24 dev eth0")
    for i in (1, 2, 3):
        swh.ip(f"link set p{i} master br0")
    swh.ip("link set br0 up")
    for i, hst in enumerate(hosts, start=1):
        hst.ip("link add vxlan0 type vxlan id 7 dstport 4789 dev eth0")
        for j in (1, 2, 3):
            if j != i:
                hst.bridge(f"fdb append 00:00:00:00:00:00 dev vxlan0 dst 10.0.0.{j}")
        hst.ip(f"addr add 192.168.7.{i}/24 dev vxlan0")
        hst.ip("link set vxlan0 up")
    cap = hosts[0].capture("eth0")
    assert (await hosts[0].ping("192.168.7.3", count=1)).received == 1
    out = vxlan_udp(cap.frames, True)
    arp_copies = [ip for ip in out if bytes(ip.data.data)[8:14] == b"\xff" * 6]
    assert sorted(ip.dst for ip in arp_copies) == [bytes([10, 0, 0, 2]), bytes([10, 0, 0, 3])]
    # the echo request went to the learned VTEP only
    unicast = [ip for ip in out if bytes(ip.data.data)[8:14] != b"\xff" * 6]
    assert [ip.dst for ip in unicast] == [bytes([10, 0, 0, 3])]
    assert hosts[1].dev("vxlan0").statistics().rx_packets == 1  # the ARP request copy


async def test_bridge_with_a_vxlan_port_is_an_l2_overlay(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """left ─ [br0: eth1 + vxlan0 on h1] ══ routed underlay ══ [br0 on h2] ─ right."""
    h = build_overlay(lab)
    left = lab.add_host("left", sysctls=IPV4_ONLY)
    right = lab.add_host("right", sysctls=IPV4_ONLY)
    lab.add_link("left:eth0", "h1:eth1")
    lab.add_link("right:eth0", "h2:eth1")
    for vtep in (h["h1"], h["h2"]):
        vtep.ip("addr flush dev vxlan0")
        vtep.ip("link add br0 type bridge")
        vtep.ip("link set eth1 master br0")
        vtep.ip("link set vxlan0 master br0")
        vtep.ip("link set br0 up")
        vtep.ip("link set eth1 up")
    left.ip("addr add 172.16.0.1/24 dev eth0")
    right.ip("addr add 172.16.0.2/24 dev eth0")
    assert (await left.ping("172.16.0.2", count=3, interval=0.1)).received == 3
    left_mac = bytes(left.dev("eth0").dev_addr).hex(":")
    right_mac = bytes(right.dev("eth0").dev_addr).hex(":")
    # h2's VXLAN FDB learned left's MAC behind h1; its bridge learned it behind vxlan0
    assert f"{left_mac} dst 192.0.2.1 self \n" in h["h2"].bridge("fdb show dev vxlan0")
    assert f"{left_mac} dev vxlan0 master br0 \n" in h["h2"].bridge("fdb show br br0")
    assert f"{right_mac} dst 198.51.100.2 self \n" in h["h1"].bridge("fdb show dev vxlan0")
    got, _ = await stream_transfer(left, right, AF_INET, "172.16.0.2", 5003, b"L2" * 20000)
    assert got == b"L2" * 20000


async def test_broken_vxlan_headers_are_counted_and_dropped(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = build_overlay(lab)
    h1, h2 = h["h1"], h["h2"]
    inner = bytes(
        dpkt.ethernet.Ethernet(
            dst=mac(M1), src=mac("02:00:00:00:00:77"), type=0x0800, data=bytes(20)
        )
    )
    sock = h2.socket()
    cases = [
        (bytes([0, 0, 0, 0, 0, 0, 42, 0]) + inner, "VXLAN_INVALID_HDR"),  # no I flag
        (bytes([0x08, 0, 0, 0, 0, 0, 43, 0]) + inner, "VXLAN_VNI_NOT_FOUND"),
        (bytes([0x0C, 0, 0, 0, 0, 0, 42, 0]) + inner, "VXLAN_INVALID_HDR"),  # another flag
        (bytes([0x08, 0, 0, 0, 0, 0, 42, 1]) + inner, "VXLAN_INVALID_HDR"),  # reserved byte
        (bytes([0x08, 0, 0, 0]), "PKT_TOO_SMALL"),
        (bytes([0x08, 0, 0, 0, 0, 0, 42, 0]) + bytes(6), "PKT_TOO_SMALL"),  # no inner header
        (
            bytes([0x08, 0, 0, 0, 0, 0, 42, 0]) + mac(M1) + bytes(6) + b"\x08\x00" + bytes(20),
            "MAC_INVALID_SOURCE",
        ),
        (
            bytes([0x08, 0, 0, 0, 0, 0, 42, 0]) + mac(M1) + mac(M1) + b"\x08\x00" + bytes(20),
            "LOCAL_MAC",
        ),
    ]
    for payload, reason in cases:
        before = h1.drops().get(reason, 0)
        udp_before = h1.snmp()["Udp"]
        await sock.sendto(payload, ("192.0.2.1", 4789))
        await trio.sleep(0.01)
        assert h1.drops().get(reason, 0) == before + 1, (payload.hex(), h1.drops())
        assert dict(h1.snmp()["Udp"].values)["InDatagrams"] == (
            dict(udp_before.values)["InDatagrams"] + 1
        )
    s = h1.dev("vxlan0").statistics()
    assert (s.rx_packets, s.rx_errors) == (0, 0)
    # a short inner IPv4 header is the device's rx_length_errors
    await sock.sendto(
        bytes([0x08, 0, 0, 0, 0, 0, 42, 0]) + mac(M1) + mac(M2) + b"\x08\x00" + bytes(10),
        ("192.0.2.1", 4789),
    )
    await trio.sleep(0.01)
    s = h1.dev("vxlan0").statistics()
    assert (s.rx_length_errors, s.rx_errors, s.rx_packets) == (1, 1, 0)


async def test_no_remote_and_no_route(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = lab.add_host("h", sysctls=IPV4_ONLY)
    h.ip("link add vxlan0 type vxlan id 1 dstport 4789")
    h.ip("addr add 192.168.1.1/24 dev vxlan0")
    h.ip("link set vxlan0 up")
    sock = h.socket()
    sock.setsockopt(SOL_SOCKET, SO_BROADCAST, 1)
    await sock.sendto(b"x", ("192.168.1.255", 9))
    await trio.sleep(0.01)
    assert h.dev("vxlan0").statistics().tx_dropped == 1
    assert h.drops() == {"NO_TX_TARGET": 1}
    h.bridge("fdb append 00:00:00:00:00:00 dev vxlan0 dst 203.0.113.1")
    await sock.sendto(b"x", ("192.168.1.255", 9))
    await trio.sleep(0.01)
    s = h.dev("vxlan0").statistics()
    assert (s.tx_carrier_errors, s.tx_errors) == (1, 1)
    assert h.drops()["IP_OUTNOROUTES"] == 1


# ---------------------------------------------------------------------------
# The real kernel, where root and the vxlan module allow it
# ---------------------------------------------------------------------------


def _real_kernel_capture(tmp: Path) -> list[bytes]:
    sh = shutil.which("ip")
    if os.geteuid() != 0 or sh is None or shutil.which("tcpdump") is None:
        pytest.skip("needs root, ip and tcpdump")
    pid = os.getpid()  # unique names: parallel workers must not share them
    ns = (f"nsvx{pid}a", f"nsvx{pid}b")
    va, vb = f"vx{pid}a", f"vx{pid}b"
    script = f"""
set -e
ip netns add {ns[0]}; ip netns add {ns[1]}
ip link add {va} type veth peer name {vb}
ip link set {va} netns {ns[0]}; ip link set {vb} netns {ns[1]}
ip -n {ns[0]} addr add 10.0.0.1/24 dev {va}; ip -n {ns[0]} link set {va} up
ip -n {ns[1]} addr add 10.0.0.2/24 dev {vb}; ip -n {ns[1]} link set {vb} up
ip netns exec {ns[0]} sysctl -qw net.ipv6.conf.all.disable_ipv6=1
ip netns exec {ns[1]} sysctl -qw net.ipv6.conf.all.disable_ipv6=1
ip -n {ns[0]} link add vxlan0 type vxlan id 42 dstport 4789 remote 10.0.0.2 dev {va}
ip -n {ns[1]} link add vxlan0 type vxlan id 42 dstport 4789 remote 10.0.0.1 dev {vb}
ip -n {ns[0]} link set vxlan0 address {M1}; ip -n {ns[1]} link set vxlan0 address {M2}
ip -n {ns[0]} addr add 192.168.42.1/24 dev vxlan0; ip -n {ns[0]} link set vxlan0 up
ip -n {ns[1]} addr add 192.168.42.2/24 dev vxlan0; ip -n {ns[1]} link set vxlan0 up
ip -n {ns[0]} -d link show vxlan0 > {tmp}/link.txt
ip netns exec {ns[1]} tcpdump --immediate-mode -i {vb} -U -w {tmp}/real.pcap udp 2>/dev/null &
sleep 1
ip netns exec {ns[0]} python3 -c "
import socket,time
s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)
for i in range(3):
    s.sendto(b'hello',('192.168.42.2',5000)); time.sleep(0.1)
"
sleep 0.5
kill %1; wait || true
ip netns exec {ns[1]} bridge fdb show dev vxlan0 > {tmp}/fdb.txt
"""
    try:
        r = subprocess.run(["bash", "-c", script], capture_output=True, timeout=30)
        if r.returncode != 0:
            pytest.skip(f"real kernel setup failed: {r.stderr.decode()[-200:]}")
        with (tmp / "real.pcap").open("rb") as f:
            return [bytes(buf) for _, buf in dpkt.pcap.Reader(f)]
    finally:
        for n in ns:
            subprocess.run(["ip", "netns", "del", n], capture_output=True)
        subprocess.run(["ip", "link", "del", va], capture_output=True)  # if never moved


def _vx(frame: bytes) -> dpkt.ip.IP | None:
    ip = dpkt.ethernet.Ethernet(frame).data
    if (
        isinstance(ip, dpkt.ip.IP)
        and isinstance(ip.data, dpkt.udp.UDP)
        and 4789
        in (
            ip.data.dport,
            ip.data.sport,
        )
    ):
        return ip
    return None


@pytest.mark.slow
async def test_frame_layout_matches_the_real_kernel(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    real = _real_kernel_capture(tmp_path)
    link = (tmp_path / "link.txt").read_text()
    assert (
        f"vxlan id 42 remote 10.0.0.2 dev vx{os.getpid()}a srcport 0 0 dstport 4789 ttl auto "
        "ageing 300 "
        "udpcsum noudp6zerocsumtx noudp6zerocsumrx " in link
    )
    assert "mtu 1450 " in link
    fdb = (tmp_path / "fdb.txt").read_text()
    assert fdb == (
        f"{M1} dst 10.0.0.1 self \n"
        f"00:00:00:00:00:00 dst 10.0.0.1 via vx{os.getpid()}b self permanent\n"
    )
    real_vx = [ip for f in real if (ip := _vx(f)) is not None]
    assert real_vx
    # netstack, same topology (one link, no router)
    a = lab.add_host("a", sysctls=IPV4_ONLY)
    b = lab.add_host("b", sysctls=IPV4_ONLY)
    lab.add_link("a:eth0", "b:eth0")
    a.ip("addr add 10.0.0.1/24 dev eth0")
    b.ip("addr add 10.0.0.2/24 dev eth0")
    for hst, remote, m, addr in (
        (a, "10.0.0.2", M1, "192.168.42.1/24"),
        (b, "10.0.0.1", M2, "192.168.42.2/24"),
    ):
        hst.ip(f"link add vxlan0 type vxlan id 42 dstport 4789 remote {remote} dev eth0")
        hst.ip(f"link set vxlan0 address {m}")
        hst.ip(f"addr add {addr} dev vxlan0")
        hst.ip("link set vxlan0 up")
    cap = b.capture("eth0")
    s = a.socket()
    for _ in range(3):
        await s.sendto(b"hello", ("192.168.42.2", 5000))
        await trio.sleep(0.1)
    ours = [ip for _, f, _ in cap.frames if (ip := _vx(f)) is not None]
    assert b.bridge("fdb show dev vxlan0") == fdb.replace(f"vx{os.getpid()}b", "eth0")

    def layout(ip: dpkt.ip.IP) -> tuple[object, ...]:
        udp = ip.data
        vx = bytes(udp.data)
        inner = dpkt.ethernet.Ethernet(vx[8:])
        return (
            ip.ttl,
            ip.df,
            ip.tos,
            ip.p,
            udp.dport,
            udp.ulen,
            udp.sum != 0,
            vx[:8],
            inner.type,
            len(bytes(inner)),
        )

    # ARP request, ARP reply, then datagram / port unreachable three times, both ways
    n = min(len(ours), len(real_vx))  # (tcpdump may miss the last frames)
    assert n >= 4
    assert [layout(p) for p in ours[:n]] == [layout(p) for p in real_vx[:n]]
    for p in ours + real_vx:
        sport = p.data.sport if p.data.dport == 4789 else p.data.dport
        assert 32768 <= sport <= 60999
    # ARP has no ports or addresses the dissector reads: both directions hash alike
    # on one kernel (the real pair shares one; each netstack host has its own key)
    assert real_vx[0].data.sport == real_vx[1].data.sport


# ---------------------------------------------------------------------------
# Group mode: ``group 239.1.1.1 dev eth0`` joins the group on the underlay
# ---------------------------------------------------------------------------

GROUP_MAC = bytes.fromhex("01005e010101")  # 239.1.1.1 → 01:00:5e + low 23 bits


def build_group(lab: netstack.Lab) -> tuple[netstack.Host, netstack.Host]:
    """a (10.0.0.1) ── b (10.0.0.2), vx0 in group mode on both: the tutorials' first setup."""
    a = lab.add_host("a", sysctls=IPV4_ONLY)
    b = lab.add_host("b", sysctls=IPV4_ONLY)
    lab.add_link("a:eth0", "b:eth0")
    for h, ip, inner, m in ((a, "10.0.0.1", "192.168.0.1", M1), (b, "10.0.0.2", "192.168.0.2", M2)):
        h.ip(f"addr add {ip}/24 dev eth0")
        h.ip("link set eth0 up")
        h.ip("link add vx0 type vxlan id 42 dstport 4789 group 239.1.1.1 dev eth0")
        h.ip(f"link set vx0 address {m}")
        h.ip(f"addr add {inner}/24 dev vx0")
        h.ip("link set vx0 up")
    return a, b


async def test_group_mode_joins_pings_and_learns(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, b = build_group(lab)
    for h in (a, b):  # vxlan_open → vxlan_igmp_join on the underlay device
        assert h.ip("-4 maddr show dev eth0") == "2:\teth0\n\tinet  239.1.1.1\n\tinet  224.0.0.1\n"
        assert h.ip("-0 maddr show dev eth0") == (
            "2:\teth0\n\tlink  01:00:5e:00:00:01\n\tlink  01:00:5e:01:01:01\n"
        )
    cap = a.capture("eth0")
    result = await a.ping("192.168.0.2", count=3, interval=0.1)
    assert result.received == 3
    out = [(dpkt.ethernet.Ethernet(f), ip) for _, f, o in cap.frames if o and (ip := _vx(f))]
    inn = [(dpkt.ethernet.Ethernet(f), ip) for _, f, o in cap.frames if not o and (ip := _vx(f))]
    assert len(out) == 4 and len(inn) == 4
    # the ARP request (inner broadcast) goes to the group: TTL 1, the group's MAC
    eth, ip = out[0]
    assert eth.dst == GROUP_MAC and ip.dst == bytes([239, 1, 1, 1]) and ip.ttl == 1
    inner = dpkt.ethernet.Ethernet(bytes(ip.data.data)[8:])
    assert inner.dst == b"\xff" * 6 and inner.type == 0x0806
    # b learnt M1 → 10.0.0.1 from it and answers unicast; a learns M2 from the reply;
    # the echo requests then go unicast to the learnt VTEP
    b_mac = b.dev("eth0").dev_addr
    for eth, ip in out[1:]:
        assert eth.dst == b_mac and ip.dst == bytes([10, 0, 0, 2]) and ip.ttl == 64
        assert dpkt.ethernet.Ethernet(bytes(ip.data.data)[8:]).dst == mac(M2)
    for _eth, ip in inn:
        assert ip.src == bytes([10, 0, 0, 2]) and ip.dst == bytes([10, 0, 0, 1])
    assert a.bridge("fdb show dev vx0") == (
        f"{M2} dst 10.0.0.2 self \n00:00:00:00:00:00 dst 239.1.1.1 via eth0 self permanent\n"
    )
    assert b.nstat()["IpExtInMcastPkts"] == 1
    # vxlan_stop → vxlan_igmp_leave; the next open joins again
    b.ip("link set vx0 down")
    assert b.ip("-4 maddr show dev eth0") == "2:\teth0\n\tinet  224.0.0.1\n"
    assert b.dev("eth0").mc == [bytes.fromhex("01005e000001")]
    b.ip("link set vx0 up")
    assert "\tinet  239.1.1.1\n" in b.ip("maddr show dev eth0")


def _shared_group_script(run: Callable[[str], str], dev: str) -> list[str]:
    """Two devices on one socket (port 4789), one group: joined once, left with the last."""
    run(f"link add vx1 type vxlan id 43 dstport 4789 group 239.1.1.1 dev {dev}")
    run(f"link add vx2 type vxlan id 44 dstport 4789 group 239.1.1.1 dev {dev}")
    run("link set vx1 up")
    run("link set vx2 up")
    seen = [run(f"-4 maddr show dev {dev}")]
    run("link set vx1 down")
    seen.append(run(f"-4 maddr show dev {dev}"))
    run("link set vx2 down")
    seen.append(run(f"-4 maddr show dev {dev}"))
    return [s.split(":", 1)[1] for s in seen]  # without the ifindex


async def test_group_shared_by_two_devices_is_left_by_the_last(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, _ = build_group(lab)
    a.ip("link set vx0 down")
    seen = _shared_group_script(a.ip, "eth0")
    joined = "\teth0\n\tinet  239.1.1.1\n\tinet  224.0.0.1\n"
    assert seen == [joined, joined, "\teth0\n\tinet  224.0.0.1\n"]


@pytest.mark.slow
def test_group_membership_matches_the_real_kernel() -> None:
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and ip")
    pid = os.getpid()
    ns, va, vb = f"nsvg{pid}", f"vg{pid}a", f"vg{pid}b"
    try:
        r = subprocess.run(
            [
                "bash",
                "-c",
                f"set -e; ip netns add {ns}; ip link add {va} type veth peer name {vb}; "
                f"ip link set {va} netns {ns}; ip -n {ns} addr add 10.0.0.1/24 dev {va}; "
                f"ip -n {ns} link set {va} up",
            ],
            capture_output=True,
            timeout=30,
        )
        if r.returncode != 0:
            pytest.skip(f"real kernel setup failed: {r.stderr.decode()[-200:]}")

        def run(cmd: str) -> str:
            p = subprocess.run(
                ["ip", "-n", ns, *cmd.split()], capture_output=True, text=True, timeout=10
            )
            if p.returncode != 0:
                pytest.skip(f"ip {cmd}: {p.stderr[-200:]}")
            return p.stdout

        seen = _shared_group_script(run, va)
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        subprocess.run(["ip", "link", "del", va], capture_output=True)
    joined = f"\t{va}\n\tinet  239.1.1.1\n\tinet  224.0.0.1\n"
    assert seen == [joined, joined, f"\t{va}\n\tinet  224.0.0.1\n"]


@pytest.mark.parametrize("gro", ["on", "off"])
async def test_gro_merges_vxlan_on_the_underlay_napi(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, gro: str
) -> None:
    """GSO cuts, GRO merges: udp4_gro_receive finds the encap socket's
    vxlan_gro_receive, so outer packets of one inner TCP flow merge on h2's eth0
    and vxlan_rcv sees aggregates."""
    from netstack.gro import gro_statistics

    h = build_overlay(lab)
    h2 = h["h2"]
    h2.ethtool(f"-K eth0 gro {gro}")
    # vxlan0 takes 64 KB GSO skbs; veth would carry them whole: without TSO on
    # h1's eth0 they are cut into wire-sized VXLAN packets by software GSO
    # (skb_udp_tunnel_segment), as a NIC without UDP tunnel offload does
    h["h1"].ethtool("-K eth0 tso off")
    payload = bytes(range(256)) * 2048  # 512 KB
    got, _ = await stream_transfer(h["h1"], h2, AF_INET, "192.168.42.2", 5004, payload)
    assert got == payload
    phys = gro_statistics(h2.net, "eth0")
    vx_in = h2.dev("vxlan0").statistics().rx_packets
    data_frames = len(payload) // 1398  # the overlay MSS: 1450 - 20 - 32
    if gro == "on":
        assert phys.merged > data_frames // 2
        assert vx_in < data_frames // 4  # vxlan_rcv saw aggregates
    else:
        assert phys.merged == 0
        # vxlan_rcv saw every segment h1 sent, one by one, and its ARP request for h2
        sent = tcp_of(h["h1"].net).snmp()["Tcp"]
        assert vx_in == sent.OutSegs + sent.RetransSegs + 1
    assert h2.drops() == {}


@pytest.mark.parametrize(
    ("opts", "ttl", "tos", "df", "zero_csum"),
    [
        ("", 64, 0x00, False, False),
        ("ttl 17 tos 0x20", 17, 0x20, False, False),
        ("ttl inherit tos inherit df set", 64, 0x10, True, False),
        ("df inherit noudpcsum", 64, 0x00, False, True),
    ],
)
async def test_ttl_tos_df_and_udpcsum_on_the_wire(
    lab: netstack.Lab,
    autojump_clock: trio.testing.MockClock,
    opts: str,
    ttl: int,
    tos: int,
    df: bool,
    zero_csum: bool,
) -> None:
    h = build_overlay(lab, opts)
    h1 = h["h1"]
    cap = h1.capture("eth0")
    sock = h1.socket()
    sock.setsockopt(0, 1, 0x10)  # IP_TOS 0x10 on the inner packets
    await sock.sendto(b"x", ("192.168.42.2", 9))  # (ARP first, then the datagram)
    await trio.sleep(0.1)
    ip = vxlan_udp(cap.frames, True)[-1]
    inner = dpkt.ethernet.Ethernet(bytes(ip.data.data)[8:]).data
    assert inner.tos == 0x10 and inner.df  # the inner UDP datagram (PMTU discovery: DF)
    assert (ip.ttl, ip.tos, bool(ip.df)) == (ttl, tos, df or ("df inherit" in opts))
    assert (ip.data.sum == 0) == zero_csum


async def test_delete_releases_the_port_and_the_lower_device_takes_it_along(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = build_overlay(lab)
    h1 = h["h1"]
    h1.ip("link del vxlan0")
    assert h1.net.dev_get_by_name("vxlan0") is None
    sock = h1.socket()
    await sock.bind(("0.0.0.0", 4789))  # the encap socket is gone
    sock.close()
    h1.ip("link add vx1 type vxlan id 5 dstport 4789 remote 198.51.100.2 dev eth0")
    h1.ip("link set vx1 up")
    h1.ip("link del eth0")  # vxlan_netdevice_event: the underlay goes, so does vx1
    assert h1.net.dev_get_by_name("vx1") is None


async def test_gso_segments_are_wire_sized_with_valid_udp_checksums(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """A 64 KB TCP GSO skb through vxlan0 (SKB_GSO_UDP_TUNNEL_CSUM) cut by software
    GSO on an underlay without TSO: each segment a full VXLAN packet, its UDP
    length right and its UDP checksum right once the inner TCP checksum is
    completed (local checksum offload computed the outer one ahead of it)."""
    h = build_overlay(lab)
    h1 = h["h1"]
    assert "tcp-segmentation-offload: on" in h1.ethtool("-k vxlan0")
    h1.ethtool("-K eth0 tso off")
    cap = h1.capture("eth0")
    payload = bytes(range(256)) * 512  # 128 KB
    got, _ = await stream_transfer(h1, h["h2"], AF_INET, "192.168.42.2", 5005, payload)
    assert got == payload
    data = [
        ip
        for ip in vxlan_udp(cap.frames, True)
        if len(ip) == 1500  # full-sized segments: 1398 bytes of TCP payload each
    ]
    # every whole MSS of the stream full-sized, 93; the last 1,058 bytes ride in one
    # or two short segments. (The receiver's ACKs and window updates come back inside
    # the sender's own transmits, polled at their local_bh_enable: no window edge
    # falls inside an earlier segment, as one did, 204 + 1,194 bytes, when each
    # host's NAPI was polled by its own task.)
    assert len(data) == len(payload) // 1398 == 93
    # inet_gso_segment numbers the segments of one GSO skb consecutively (the
    # short last segments, left out of "data", take their IDs too)
    ids = [ip.id for ip in vxlan_udp(cap.frames, True)]
    diffs = [(b - a) & 0xFFFF for a, b in itertools.pairwise(ids)]
    assert sum(d == 1 for d in diffs) >= 0.9 * len(diffs)
    assert len({ip.data.sport for ip in data}) == 1  # one connection, one hash
    saddr, daddr = ip4("192.0.2.1"), ip4("198.51.100.2")
    for ip in data:
        raw = bytearray(bytes(ip.data))  # the UDP datagram
        assert (raw[4] << 8 | raw[5]) == len(raw) == 1480
        # complete the inner TCP checksum as the device would
        inner_ip = 16 + 14
        isrc = int.from_bytes(raw[inner_ip + 12 : inner_ip + 16], "big")
        idst = int.from_bytes(raw[inner_ip + 16 : inner_ip + 20], "big")
        th = inner_ip + 20
        raw[th + 16 : th + 18] = b"\0\0"
        c = csum_tcpudp_magic(isrc, idst, len(raw) - th, 6, csum_partial(bytes(raw[th:])))
        raw[th + 16 : th + 18] = c.to_bytes(2, "big")
        assert csum_tcpudp_magic(saddr, daddr, len(raw), 17, csum_partial(bytes(raw))) == 0


def _tshark_rows(pcap: Path, fields: tuple[str, ...]) -> list[list[str]]:
    out = subprocess.run(
        ["tshark", "-r", str(pcap), "-o", "ip.check_checksum:TRUE"]
        + ["-o", "udp.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE"]
        + ["-Y", "vxlan", "-T", "fields", "-E", "separator=|"]
        + [x for f in fields for x in ("-e", f)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line.split("|") for line in out.splitlines()]


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")
@pytest.mark.slow
async def test_capture_off_the_wire_is_wireshark_clean(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    """Over NICs (which finish the checksums the stack left partial), frames as r
    receives them: outer IPv4 and UDP checksums, VNI 42, inner ICMP/TCP checksums
    all verify in tshark — the outer UDP checksum computed ahead of the inner TCP
    one (local checksum offload) included."""
    h1, r, h2 = (lab.add_host(n, sysctls=IPV4_ONLY) for n in ("h1", "r", "h2"))
    lab.add_link("h1:eth0", "r:eth0", kind="nic")
    lab.add_link("r:eth1", "h2:eth0", kind="nic")
    h1.ip("addr add 192.0.2.1/24 dev eth0")
    h1.ip("route add default via 192.0.2.254")
    h2.ip("addr add 198.51.100.2/24 dev eth0")
    h2.ip("route add default via 198.51.100.254")
    r.ip("addr add 192.0.2.254/24 dev eth0")
    r.ip("addr add 198.51.100.254/24 dev eth1")
    r.sysctl("net.ipv4.ip_forward=1")
    for h, remote, addr in (
        (h1, "198.51.100.2", "192.168.42.1/24"),
        (h2, "192.0.2.1", "192.168.42.2/24"),
    ):
        h.ip(f"link add vxlan0 type vxlan id 42 dstport 4789 remote {remote} dev eth0")
        h.ip(f"addr add {addr} dev vxlan0")
        h.ip("link set vxlan0 up")
    pcap = tmp_path / "vxlan.pcap"
    cap = r.capture("eth0", pcap)
    assert (await h1.ping("192.168.42.2", count=2, interval=0.1)).received == 2
    got, _ = await stream_transfer(h1, h2, AF_INET, "192.168.42.2", 5006, b"t" * 20000)
    assert got == b"t" * 20000
    cap.stop()
    fields: tuple[str, ...] = ("_ws.malformed", "ip.checksum.status", "udp.checksum.status")
    fields += ("vxlan.vni", "icmp.checksum.status", "tcp.checksum.status", "arp.opcode")
    rows = _tshark_rows(pcap, fields)
    assert len(rows) > 10
    for malformed, ip_status, udp_status, vni, icmp_status, tcp_status, arp in rows:
        assert malformed == ""
        assert vni == "42"
        assert udp_status == "1", rows  # the outer UDP checksum verifies
        assert ip_status in ("1", "1,1")
        assert "2" not in (icmp_status, tcp_status)
        assert "1" in (icmp_status, tcp_status) or arp
    assert sum(r_[5] == "1" for r_ in rows) >= 10  # inner TCP segments verified


CHANGE_REFUSED = [
    ("id 2", "Error: Cannot change VNI."),
    ("dstport 4790", "Error: Cannot change port."),
    ("srcport 1 2", "Error: Cannot change port range."),
    ("noudpcsum", "Error: Cannot change UDP_CSUM flag."),
    ("maxaddress 3", "Error: Cannot change limit."),
    ("ttl inherit", "Error: vxlan: cannot change TTL_INHERIT flag."),
    ("remote 239.1.1.1", 'Error: argument "239.1.1.1" is wrong: invalid remote address'),
]


@pytest.mark.parametrize(("args", "message"), CHANGE_REFUSED)
async def test_ip_link_set_type_vxlan_refusals(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, args: str, message: str
) -> None:
    """The texts of Linux 6.18 with iproute2 6.1, and no change."""
    h = build_overlay(lab)
    before = h["h1"].ip("-d link show vxlan0")
    with pytest.raises(ConfigError) as e:
        h["h1"].ip(f"link set vxlan0 type vxlan {args}")
    assert str(e.value) == message
    assert h["h1"].ip("-d link show vxlan0") == before


async def test_ip_link_set_type_vxlan_changes_what_linux_lets_change(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = build_overlay(lab)
    h1 = h["h1"]
    h1.ip("link set vxlan0 type vxlan nolearning")
    h1.ip("link set vxlan0 type vxlan remote 203.0.113.9")
    h1.ip("link set vxlan0 type vxlan local 192.0.2.1")
    h1.ip("link set vxlan0 type vxlan ttl 9 tos 0x10 ageing 30")
    h1.ip("link set vxlan0 type vxlan df set")
    assert (
        "    vxlan id 42 remote 203.0.113.9 local 192.0.2.1 dev eth0 srcport 0 0 dstport 4789 "
        "nolearning tos 0x10 ttl 9 df set ageing 30 udpcsum noudp6zerocsumtx "
        "noudp6zerocsumrx " in h1.ip("-d link show vxlan0")
    )
    # the default entry moved with the remote
    assert h1.bridge("fdb show dev vxlan0") == (
        "00:00:00:00:00:00 dst 203.0.113.9 via eth0 self permanent\n"
    )
    assert h1.dev("vxlan0").mtu == 1450


async def test_the_per_remote_route_cache_follows_route_changes(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """vxlan_xmit_one keeps the outer route in the remote's dst_cache (one FIB
    lookup saved per frame); a route change (rt_genid) invalidates it."""
    h = build_overlay(lab)
    h1 = h["h1"]
    assert (await h1.ping("192.168.42.2", count=2, interval=0.1)).received == 2
    rd = h1.dev("vxlan0").priv.fdb[bytes(6)].remotes[0]
    assert rd.dst_cache.rt is not None and rd.dst_cache.saddr == ip4("192.0.2.1")
    h1.ip("route add 198.51.100.2/32 dev eth0")  # the remote now "on link": ARP for it
    cap = h1.capture("eth0")
    assert (await h1.ping("192.168.42.2", count=1, timeout=1)).received == 0
    arp = [dpkt.ethernet.Ethernet(f).data for _, f, out in cap.frames if out]
    assert any(isinstance(a, dpkt.arp.ARP) and a.tpa == bytes([198, 51, 100, 2]) for a in arp)
    h1.ip("route del 198.51.100.2/32 dev eth0")
    assert (await h1.ping("192.168.42.2", count=1)).received == 1


def _finish_checksums(frame: bytes) -> bytes:
    """What a NIC puts on the wire: the partial UDP checksums (inner and outer)
    the capture on the sender's veth shows, completed (dpkt fills a zero sum)."""
    eth = dpkt.ethernet.Ethernet(frame)
    outer_udp = eth.data.data
    vx = bytes(outer_udp.data)
    inner = dpkt.ethernet.Ethernet(vx[8:])
    if isinstance(inner.data, dpkt.ip.IP) and isinstance(inner.data.data, dpkt.udp.UDP):
        inner.data.data.sum = 0
        inner.data.sum = 0
        inner.data = dpkt.ip.IP(bytes(inner.data))  # re-parse: dpkt filled the sums
    outer_udp.data = vx[:8] + bytes(inner)
    outer_udp.sum = 0
    eth.data.sum = 0
    return bytes(eth)


@pytest.mark.slow
async def test_real_kernel_frames_replayed_into_netstack(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    """Capture replay: what Linux's vxlan sent (ARP request, three datagrams) is fed
    to a netstack VTEP on a Port-ended NIC with the receiving side's MAC and
    addresses. It learns the sender, answers the ARP inside VXLAN, and delivers
    the datagrams."""
    real = _real_kernel_capture(tmp_path)
    towards_b = [f for f in real if (ip := _vx(f)) is not None and ip.dst == bytes([10, 0, 0, 2])]
    # the ARP request, then "hello" up to three times (tcpdump may miss the last)
    hellos = len(towards_b) - 1
    assert hellos >= 1
    eth0 = dpkt.ethernet.Ethernet(towards_b[0])
    h = lab.add_host("h", sysctls=IPV4_ONLY)
    port = lab.add_port("h:eth0", up=False)  # the NIC reports CHECKSUM_UNNECESSARY
    h.ip(f"link set eth0 address {bytes(eth0.dst).hex(':')} up")
    h.ip("addr add 10.0.0.2/24 dev eth0")
    h.ip(f"neigh add 10.0.0.1 lladdr {bytes(eth0.src).hex(':')} dev eth0 nud permanent")
    h.ip("link add vxlan0 type vxlan id 42 dstport 4789 remote 10.0.0.1 dev eth0")
    h.ip(f"link set vxlan0 address {M2} up")
    h.ip("addr add 192.168.42.2/24 dev vxlan0")
    sock = h.socket()
    await sock.bind(("0.0.0.0", 5000))
    for f in towards_b:
        await port.send(_finish_checksums(f))
        await trio.sleep(0.01)
    with trio.fail_after(1):
        got = [await sock.recvfrom(100) for _ in range(hellos)]
    assert got == [(b"hello", ("192.168.42.1", got[0][1][1]))] * hellos
    assert h.bridge("fdb show dev vxlan0").splitlines()[0] == f"{M1} dst 10.0.0.1 self "
    replies = [ip for f in port.drain() if (ip := _vx(f)) is not None]
    arp = dpkt.ethernet.Ethernet(bytes(replies[0].data.data)[8:])
    assert arp.type == 0x0806 and arp.dst == mac(M1) and arp.data.op == 2
    assert bytes(replies[0].data.data)[:8] == bytes([8, 0, 0, 0, 0, 0, 42, 0])
    assert h.dev("vxlan0").statistics().rx_packets == 1 + hellos
