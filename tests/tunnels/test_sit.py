"""SIT devices: created both ways, LLTX, and their IPv4 side of the data path.

IPv6 packets are made by hand here: one is handed to ``dev_queue_xmit`` on
the sit device and must leave the underlay as protocol 41 with the hop limit
as TTL; a replayed 6in4 frame must be decapsulated and handed to the stack as
ETH_P_IPV6, where IPv6 takes it.
"""

from __future__ import annotations

import dpkt
import pytest
import trio
import trio.testing

import netstack
from netstack.core.dev import dev_queue_xmit
from netstack.core.skbuff import SkBuff
from netstack.wire.ethernet import ETH_P_IP, ETH_P_IPV6


def ipv6_packet(hlim: int = 33, tclass: int = 0) -> bytes:
    ip6 = dpkt.ip6.IP6(
        src=bytes.fromhex("20010db8000000000000000000000001"),
        dst=bytes.fromhex("20010db8000000000000000000000002"),
        nxt=59,  # no next header
        hlim=hlim,
        data=b"sixinfour",
    )
    ip6.plen = len(ip6.data)
    ip6.fc = tclass
    return bytes(ip6)


async def test_sit_encapsulates_ipv6_into_protocol_41(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, b = lab.add_host("a"), lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0")
    a.ip("addr add 192.0.2.1/24 dev eth0")
    b.ip("addr add 192.0.2.2/24 dev eth0")
    a.ip("tunnel add sit1 mode sit remote 192.0.2.2 local 192.0.2.1")
    b.ip("link add sit1 type sit remote 192.0.2.1 local 192.0.2.2")
    for h in (a, b):
        h.ip("link set sit1 up")
    cap = a.capture("eth0")
    payload = ipv6_packet(hlim=33, tclass=0xB8)
    skb = SkBuff(bytearray(64) + payload, 64, 64 + len(payload))
    skb.network_header = 64
    skb.protocol = ETH_P_IPV6
    skb.dev = a.dev("sit1")
    assert dev_queue_xmit(skb) == 0
    await trio.sleep(0.01)
    (frame,) = [f for _, f, out in cap.frames if out and f[12:14] == b"\x08\x00"]
    ip = dpkt.ethernet.Ethernet(frame).data
    assert ip.p == 41 and ip.ttl == 33 and ip.df
    assert bytes(ip.data) == payload
    assert a.dev("sit1").statistics().tx_packets == 1
    # b decapsulates it and hands it to its IPv6 layer (not b's address, forwarding off)
    sit = b.dev("sit1").statistics()
    assert sit.rx_packets == 1 and sit.rx_nohandler == 0
    # that one, and a's MLDv2 report to ff02::16 on eth0 (2 ms after its link came up)
    assert b.nstat()["Ip6InReceives"] == 2


async def test_sit_without_ipv6_payload_or_remote_is_a_tx_error(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a = lab.add_host("a")
    with pytest.raises(netstack.ConfigError, match=r"^RTNETLINK answers: File exists$"):
        a.ip("link add sit1 type sit")  # all-zero parameters: that is sit0
    a.ip("link add sit1 type sit local 192.0.2.1")
    a.ip("link set sit1 up")
    payload = ipv6_packet()
    skb = SkBuff(bytearray(64) + payload, 64, 64 + len(payload))
    skb.network_header = 64
    skb.protocol = ETH_P_IPV6
    skb.dev = a.dev("sit1")
    dev_queue_xmit(skb)  # no remote: 6to4/ISATAP destinations are the IPv6 side's job
    assert a.dev("sit1").statistics().tx_errors == 1


async def test_sit_devices(lab: netstack.Lab, autojump_clock: trio.testing.MockClock) -> None:
    a = lab.add_host("a")
    a.ip("tunnel add s1 mode sit remote 192.0.2.2 local 192.0.2.1 ttl 64")
    assert a.ip("tunnel show") == (
        "sit0: ipv6/ip remote any local any ttl 64 nopmtudisc\n"
        "s1: ipv6/ip remote 192.0.2.2 local 192.0.2.1 ttl 64\n"
    )
    assert a.dev("s1").mtu == 1480 and a.dev("s1").min_mtu == 1280
    assert "link/sit 192.0.2.1 peer 192.0.2.2" in a.ip("link show s1")
    assert "    sit ip6ip remote 192.0.2.2 local 192.0.2.1 ttl 64 pmtudisc " in a.ip(
        "-d link show s1"
    )
    with pytest.raises(netstack.ConfigError, match=r"^Error: mtu less than device minimum\.$"):
        a.ip("link set s1 mtu 1279")


def ipv4_packet(ttl: int = 33) -> bytes:
    udp = dpkt.udp.UDP(sport=1234, dport=4242, data=b"fourinfour")
    udp.ulen = len(udp)
    ip = dpkt.ip.IP(
        src=bytes([10, 9, 0, 1]), dst=bytes([10, 9, 0, 2]), p=17, ttl=ttl, id=7, data=udp
    )
    return bytes(ip)


async def test_sit_mode_any_carries_ipv4_as_protocol_4(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """sit_tunnel_xmit(): ETH_P_IP goes through sit_tunnel_xmit__() as IPPROTO_IPIP;
    the peer's sit ipip_handler (sit_tunnel_rcv) takes it back out."""
    a, b = lab.add_host("a"), lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0")
    a.ip("addr add 192.0.2.1/24 dev eth0")
    b.ip("addr add 192.0.2.2/24 dev eth0")
    a.ip("link add sit1 type sit remote 192.0.2.2 local 192.0.2.1 mode any")
    b.ip("link add sit1 type sit remote 192.0.2.1 local 192.0.2.2 mode any")
    for h in (a, b):
        h.ip("link set sit1 up")
    cap = a.capture("eth0")
    payload = ipv4_packet(ttl=33)
    skb = SkBuff(bytearray(64) + payload, 64, 64 + len(payload))
    skb.network_header = 64
    skb.protocol = ETH_P_IP
    skb.dev = a.dev("sit1")
    assert dev_queue_xmit(skb) == 0
    await trio.sleep(0.01)
    (frame,) = [f for _, f, out in cap.frames if out and f[12:14] == b"\x08\x00"]
    ip = dpkt.ethernet.Ethernet(frame).data
    assert isinstance(ip, dpkt.ip.IP)
    assert (ip.src, ip.dst) == (bytes([192, 0, 2, 1]), bytes([192, 0, 2, 2]))
    assert ip.p == 4 and ip.ttl == 33 and ip.df and ip.len == 20 + len(payload)
    assert bytes(ip)[20:] == payload  # the inner packet, byte for byte
    assert a.dev("sit1").statistics().tx_packets == 1
    sit = b.dev("sit1").statistics()
    assert sit.rx_packets == 1 and sit.rx_bytes == len(payload) and sit.rx_errors == 0


async def test_sit_ip6ip_peer_drops_protocol_4(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """sit_tunnel_rcv(): a matching tunnel in mode ip6ip drops IPIP (no ICMP back)."""
    a, b = lab.add_host("a"), lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0")
    a.ip("addr add 192.0.2.1/24 dev eth0")
    b.ip("addr add 192.0.2.2/24 dev eth0")
    a.ip("link add sit1 type sit remote 192.0.2.2 local 192.0.2.1 mode any")
    b.ip("link add sit1 type sit remote 192.0.2.1 local 192.0.2.2")  # mode ip6ip
    for h in (a, b):
        h.ip("link set sit1 up")
    payload = ipv4_packet()
    skb = SkBuff(bytearray(64) + payload, 64, 64 + len(payload))
    skb.network_header = 64
    skb.protocol = ETH_P_IP
    skb.dev = a.dev("sit1")
    assert dev_queue_xmit(skb) == 0
    await trio.sleep(0.01)
    assert a.dev("sit1").statistics().tx_packets == 1
    assert b.dev("sit1").statistics().rx_packets == 0
    assert b.nstat().get("IcmpOutMsgs", 0) == 0
