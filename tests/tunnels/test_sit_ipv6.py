"""SIT carrying real IPv6: a replayed 6in4 capture delivered, replies encapsulated, 6to4 and
v4-compatible next hops on sit0, the kernel's refusals, ICMP errors about 6in4 packets.

Host ``h`` has a NIC ``eth0`` (192.0.2.1/24) whose cable ends in a Port, and
``sit1`` to 192.0.2.2 with 2001:db8:5::1/64. Frames are built with dpkt; what
``h`` sends back is parsed with dpkt (outer IPv4 checksum, inner ICMPv6/UDP
checksums verified).
"""

from __future__ import annotations

from typing import Final

import dpkt
import trio
import trio.testing

import netstack
from netstack.host import Port
from netstack.socket import AF_INET6, Socket
from netstack.wire.checksum import csum_partial, ip_fast_csum
from netstack.wire.ipv6 import csum_ipv6_magic

H_MAC: Final = bytes.fromhex("020000000001")
PEER_MAC: Final = bytes.fromhex("020000000002")
LOCAL: Final = bytes([192, 0, 2, 1])
REMOTE: Final = bytes([192, 0, 2, 2])
H6: Final = bytes.fromhex("20010db8000500000000000000000001")
PEER6: Final = bytes.fromhex("20010db8000500000000000000000002")


async def rig(lab: netstack.Lab) -> tuple[netstack.Host, Port, Socket]:
    h = lab.add_host("h")
    port = lab.add_port("h:eth0", up=False)
    h.ip("link set eth0 address 02:00:00:00:00:01 up")
    h.ip("addr add 192.0.2.1/24 dev eth0")
    h.ip("neigh add 192.0.2.2 lladdr 02:00:00:00:00:02 dev eth0 nud permanent")
    h.ip("link add sit1 type sit remote 192.0.2.2 local 192.0.2.1")
    h.ip("link set sit1 up")
    h.ip("-6 addr add 2001:db8:5::1/64 dev sit1")
    sock = h.socket(AF_INET6)
    await sock.bind(("::", 5000))
    await trio.sleep(3)  # DAD is skipped on NOARP sit, but let the boot settle
    port.drain()
    return h, port, sock


def six_in_four(inner: dpkt.ip6.IP6, *, src: bytes = REMOTE, dst: bytes = LOCAL) -> bytes:
    raw = bytes(inner)
    ip = dpkt.ip.IP(src=src, dst=dst, p=41, ttl=64, data=raw)
    ip.len = 20 + len(raw)
    return bytes(dpkt.ethernet.Ethernet(dst=H_MAC, src=PEER_MAC, type=0x0800, data=ip))


def ip6(payload: dpkt.Packet, nxt: int, *, src: bytes = PEER6, dst: bytes = H6) -> dpkt.ip6.IP6:
    p = dpkt.ip6.IP6(src=src, dst=dst, nxt=nxt, hlim=64, data=payload)
    p.plen = len(bytes(payload))
    return p


def outer_of(frame: bytes) -> tuple[dpkt.ip.IP, bytes]:
    eth = dpkt.ethernet.Ethernet(frame)
    ip = eth.data
    assert isinstance(ip, dpkt.ip.IP) and ip.p == 41
    raw = bytes(ip)
    assert ip_fast_csum(raw, 0, 20) == 0
    return ip, bytes(ip.data)


def l4_ok(inner: bytes) -> bool:
    src = int.from_bytes(inner[8:24], "big")
    dst = int.from_bytes(inner[24:40], "big")
    body = inner[40:]
    return csum_ipv6_magic(src, dst, len(body), inner[6], csum_partial(body, 0, len(body), 0)) == 0


async def test_replayed_6in4_is_delivered_and_answered_in_6in4(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h, port, sock = await rig(lab)
    udp = dpkt.udp.UDP(sport=4000, dport=5000, data=b"sixinfour")
    udp.ulen = 8 + 9
    pkt = ip6(udp, 17)
    await port.send(six_in_four(dpkt.ip6.IP6(bytes(pkt))))  # dpkt fills the UDP checksum
    with trio.fail_after(1):
        data, peer = await sock.recvfrom(100)
    assert (data, peer) == (b"sixinfour", ("2001:db8:5::2", 4000, 0, 0))
    echo = dpkt.icmp6.ICMP6(type=128, code=0, data=dpkt.icmp6.ICMP6.Echo(id=7, seq=1, data=b"hi"))
    await port.send(six_in_four(dpkt.ip6.IP6(bytes(ip6(echo, 58)))))
    await trio.sleep(0.01)
    replies = [outer_of(f) for f in port.drain() if f[12:14] == b"\x08\x00"]
    assert len(replies) == 1
    outer, inner = replies[0]
    assert (outer.src, outer.dst, outer.ttl) == (LOCAL, REMOTE, 64)  # TTL from the hop limit
    assert outer.df
    p = dpkt.ip6.IP6(inner)
    assert (p.src, p.dst) == (H6, PEER6)
    assert isinstance(p.data, dpkt.icmp6.ICMP6) and p.data.type == 129 and l4_ok(inner)
    st = h.dev("sit1").statistics()
    assert st.rx_packets == 2 and st.tx_packets == 1
    assert h.nstat()["Udp6InDatagrams"] == 1 and h.nstat()["Icmp6InEchos"] == 1


async def test_6in4_from_an_unknown_remote_is_not_taken(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h, port, sock = await rig(lab)
    udp = dpkt.udp.UDP(sport=4000, dport=5000, data=b"x")
    udp.ulen = 9
    await port.send(six_in_four(dpkt.ip6.IP6(bytes(ip6(udp, 17))), src=bytes([192, 0, 2, 9])))
    await trio.sleep(0.01)
    assert not sock.sock.receive_queue
    assert h.dev("sit1").statistics().rx_packets == 0
    # no tunnel took protocol 41 (tunnel4_rcv): dropped, and an ICMP destination
    # unreachable goes back, queued behind the ARP request for 192.0.2.9
    (arp,) = [dpkt.ethernet.Ethernet(f).data for f in port.drain()]
    assert isinstance(arp, dpkt.arp.ARP) and arp.op == 1 and arp.tpa == bytes([192, 0, 2, 9])
    assert h.nstat()["IcmpOutDestUnreachs"] == 1
    assert h.drops() == {"IP_TUNNEL_NO_MATCH": 1}


async def test_sit0_takes_6to4_and_v4_compatible_next_hops_and_refuses_the_rest(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h, port, _sock = await rig(lab)
    h.ip("link set sit0 up")
    h.ip("-6 addr add 2002:c000:201::1/16 dev sit0")  # 6to4 prefix of 192.0.2.1
    h.ip("-6 route add 2001:db8:9::/64 via ::192.0.2.2 dev sit0")
    h.ip("-6 route add 2001:db8:8::/64 dev sit0")
    await trio.sleep(3)
    port.drain()
    s = h.socket(AF_INET6)
    await s.sendto(b"to 6to4", ("2002:c000:202::1", 9))
    await s.sendto(b"via compat", ("2001:db8:9::1", 9))
    await trio.sleep(0.01)
    sent = [outer_of(f) for f in port.drain() if f[12:14] == b"\x08\x00"]
    assert [(o.dst, dpkt.ip6.IP6(i).data.data) for o, i in sent] == [
        (REMOTE, b"to 6to4"),  # 2002:c000:202:: embeds 192.0.2.2
        (REMOTE, b"via compat"),  # ::192.0.2.2
    ]
    assert all(o.ttl == 64 and not o.df for o, _ in sent)  # sit0: ttl 64, nopmtudisc
    before = h.dev("sit0").statistics().tx_errors
    await s.sendto(b"nowhere", ("2001:db8:8::1", 9))  # no IPv4 address to derive: "nexthop == NULL"
    await trio.sleep(0.01)
    assert h.dev("sit0").statistics().tx_errors == before + 1
    assert [f for f in port.drain() if f[12:14] == b"\x08\x00"] == []


async def test_frag_needed_about_a_6in4_packet_teaches_the_tunnel_and_the_sender(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h, port, _sock = await rig(lab)
    s = h.socket(AF_INET6)
    await s.sendto(b"z" * 1400, ("2001:db8:5::2", 9))
    await trio.sleep(0.01)
    (sent,) = [outer_of(f) for f in port.drain() if f[12:14] == b"\x08\x00"]
    outer, _inner = sent
    # the router on the path answers "fragmentation needed, mtu 1300" about it
    quoted = bytes(outer)[:28]
    icmp = dpkt.icmp.ICMP(type=3, code=4, data=dpkt.icmp.ICMP.Unreach(mtu=1300, data=quoted))
    err = dpkt.ip.IP(src=bytes([192, 0, 2, 254]), dst=LOCAL, p=1, ttl=64, data=icmp)
    err.len = 20 + len(bytes(icmp))
    await port.send(bytes(dpkt.ethernet.Ethernet(dst=H_MAC, src=PEER_MAC, type=0x0800, data=err)))
    await trio.sleep(0.01)
    assert "mtu 1300" in h.ip("route get 192.0.2.2")
    # the next big packet: the sit device tells the sender (itself) "packet too big, 1280"
    await s.sendto(b"z" * 1400, ("2001:db8:5::2", 9))
    await trio.sleep(0.01)
    assert h.nstat()["Icmp6OutPktTooBigs"] == 1 and h.nstat()["Icmp6InPktTooBigs"] == 1
    assert "mtu 1280" in h.ip("-6 route get 2001:db8:5::2")
    # from then on the sender fragments to fit
    await s.sendto(b"z" * 1400, ("2001:db8:5::2", 9))
    await trio.sleep(0.01)
    frags = [outer_of(f) for f in port.drain() if f[12:14] == b"\x08\x00"]
    assert len(frags) == 2 and all(len(i) <= 1280 for _, i in frags)
    assert all(i[6] == 44 for _, i in frags)
