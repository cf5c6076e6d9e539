"""IPv6 end to end: addresses and DAD, ND, ping6, UDP over IPv6, a router, ICMPv6 errors,
PMTU learnt from Packet Too Big, fragmentation at the source and reassembly, SLAAC.

    a (2001:db8:1::1) ── eth0 r eth1 ── b (2001:db8:2::2)
                   2001:db8:1::fe  2001:db8:2::fe

Every step goes through ``ip -6`` and the socket API, and every test asserts
on what is on the wire (dpkt parses the captures, checksums verified) or on
the /proc/net/snmp6 counters.
"""

from __future__ import annotations

import errno
import functools
import struct

import dpkt
import pytest
import trio
import trio.testing

import netstack
from netstack.host.radvd import send_router_advertisement
from netstack.socket import AF_INET6, IPPROTO_IPV6, IPV6_RECVERR
from netstack.testing import builders

# this file's hosts run IPv6 (IPv4 needs no address, and is not counted)
pair = functools.partial(builders.pair, family=6, ipv4_only=False)
routed = functools.partial(builders.routed, family=6, ipv4_only=False)


def ip6_frames(cap: netstack.host.capture.Capture) -> list[tuple[dpkt.ip6.IP6, bool]]:
    out = []
    for _, frame, outgoing in cap.frames:
        eth = dpkt.ethernet.Ethernet(frame)
        if isinstance(eth.data, dpkt.ip6.IP6):
            out.append((eth.data, outgoing))
    return out


async def test_dad_runs_on_the_clock_and_ip_addr_shows_it(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, _b = pair(lab)
    shown = a.ip("-6 addr show dev eth0")
    assert "    inet6 2001:db8::1/64 scope global tentative \n" in shown
    assert "scope link tentative \n       valid_lft forever preferred_lft forever\n" in shown
    await trio.sleep(2.5)  # a random delay < 1 s, one probe (dad_transmits=1), retrans 1 s
    shown = a.ip("-6 addr show dev eth0")
    assert "    inet6 2001:db8::1/64 scope global \n" in shown
    assert "tentative" not in shown
    lines = shown.splitlines()
    assert lines[0].startswith("2: eth0@if2: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500")
    assert lines[1:3] == [  # -6: no link/ether line
        "    inet6 2001:db8::1/64 scope global ",
        "       valid_lft forever preferred_lft forever",
    ]
    assert lines[3].startswith("    inet6 fe80::") and lines[3].endswith("/64 scope link ")
    assert a.ip("-6 addr show dev lo") == (
        "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 state UNKNOWN qlen 1000\n"
        "    inet6 ::1/128 scope host \n"
        "       valid_lft forever preferred_lft forever\n"
    ) or "inet6 ::1/128 scope host \n" in a.ip("-6 addr show dev lo")
    assert a.nstat()["Icmp6OutNeighborSolicits"] == 2  # a DAD probe per address (global, fe80::)


async def test_duplicate_address_is_dadfailed(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, b = lab.add_host("a"), lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0")
    a.ip("-6 addr add 2001:db8::7/64 dev eth0")
    await trio.sleep(2)
    b.ip("-6 addr add 2001:db8::7/64 dev eth0")
    await trio.sleep(2)
    assert "inet6 2001:db8::7/64 scope global \n" in a.ip("-6 addr show dev eth0")
    assert "inet6 2001:db8::7/64 scope global tentative dadfailed \n" in b.ip(
        "-6 addr show dev eth0"
    ) or "inet6 2001:db8::7/64 scope global dadfailed tentative \n" in b.ip("-6 addr show dev eth0")
    assert a.nstat()["Icmp6OutNeighborAdvertisements"] == 1  # a answers b's one DAD probe
    with pytest.raises(netstack.ConfigError, match=r"^Error: ipv6: address already assigned\.$"):
        a.ip("-6 addr add 2001:db8::7/64 dev eth0")


async def test_ping6_resolves_with_nd_and_neigh_lists_it(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, b = pair(lab)
    await trio.sleep(2)
    cap = a.capture("eth0")
    out: list[str] = []
    res = await a.ping("2001:db8::2", count=2, output=out)
    assert res.received == 2
    assert out[0] == "PING 2001:db8::2(2001:db8::2) 56 data bytes"
    assert out[1].startswith("64 bytes from 2001:db8::2: icmp_seq=1 ttl=64 time=")
    frames = ip6_frames(cap)
    ns = [p for p, o in frames if o and isinstance(p.data, dpkt.icmp6.ICMP6) and p.data.type == 135]
    assert ns and bytes(ns[0].dst) == bytes.fromhex("ff0200000000000000000001ff000002")
    assert ns[0].hlim == 255
    na = [
        p
        for p, o in frames
        if not o and isinstance(p.data, dpkt.icmp6.ICMP6) and p.data.type == 136
    ]
    assert na
    echo = [
        p for p, o in frames if o and isinstance(p.data, dpkt.icmp6.ICMP6) and p.data.type == 128
    ]
    assert len(echo) == 2
    for p, _ in frames:  # every ICMPv6 checksum verifies over the pseudo-header
        raw = bytes(p)
        again = dpkt.ip6.IP6(raw)
        if isinstance(again.data, dpkt.icmp6.ICMP6):
            want = again.data.sum
            again.data.sum = 0
            again.data.sum = 0  # dpkt recomputes on bytes()
            assert dpkt.ip6.IP6(bytes(again)).data.sum == want
    assert "2001:db8::2 dev eth0 lladdr 02:" in a.ip("-6 neigh show")
    assert a.ip("-6 neigh show").endswith("REACHABLE \n")
    assert a.ip("neigh show") == a.ip("-6 neigh show")  # no IPv4 neighbours here
    a.ip("-6 neigh flush dev eth0")
    assert a.ip("-6 neigh show") == ""
    a.ip("-6 neigh add 2001:db8::9 lladdr 02:00:00:00:00:09 dev eth0")
    assert a.ip("-6 neigh show") == "2001:db8::9 dev eth0 lladdr 02:00:00:00:00:09 PERMANENT \n"
    snmp = a.nstat()
    assert snmp["Icmp6OutEchos"] == 2 and snmp["Icmp6InEchoReplies"] == 2
    assert b.nstat()["Icmp6InEchos"] == 2 and b.nstat()["Icmp6OutEchoReplies"] == 2


async def test_ping6_link_local_with_a_zone(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, b = pair(lab)
    await trio.sleep(2)
    ll = b.ip("-6 addr show dev eth0 scope link").split("inet6 ")[1].split("/")[0]
    out: list[str] = []
    res = await a.ping(f"{ll}%eth0", output=out)
    assert res.received == 1
    assert out[1].startswith(f"64 bytes from {ll}%eth0: icmp_seq=1 ttl=64")


async def test_udp6_echo_and_port_unreachable(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, b = pair(lab)
    await trio.sleep(2)
    srv = b.socket(AF_INET6)
    await srv.bind(("::", 5000))
    cli = a.socket(AF_INET6)
    await cli.sendto(b"ping6 over udp", ("2001:db8::2", 5000))
    with trio.fail_after(1):
        data, peer = await srv.recvfrom(100)
    assert data == b"ping6 over udp" and peer[0] == "2001:db8::1" and len(peer) == 4
    await srv.sendto(b"pong", peer)
    with trio.fail_after(1):
        assert await cli.recvfrom(100) == (b"pong", ("2001:db8::2", 5000, 0, 0))
    assert cli.getsockname()[0] == "::"
    # a connected socket learns ECONNREFUSED from the port unreachable
    c2 = a.socket(AF_INET6)
    c2.setsockopt(IPPROTO_IPV6, IPV6_RECVERR, 1)
    await c2.connect(("2001:db8::2", 5999))
    await c2.send(b"anyone?")
    await trio.sleep(0.1)
    with pytest.raises(OSError) as e:
        await c2.send(b"again")
    assert e.value.errno == errno.ECONNREFUSED
    assert b.nstat()["Icmp6OutDestUnreachs"] == 1
    assert b.nstat()["Udp6NoPorts"] == 1
    assert a.nstat()["Udp6InDatagrams"] == 1 and b.nstat()["Udp6InDatagrams"] == 1
    # errnos as IPv4's UDP has them
    s3 = a.socket(AF_INET6)
    await s3.bind(("::", 5001))
    s4 = a.socket(AF_INET6)
    with pytest.raises(OSError) as e:
        await s4.bind(("::", 5001))
    assert e.value.errno == errno.EADDRINUSE
    with pytest.raises(OSError) as e:
        await s4.bind(("2001:db8::99", 0))
    assert e.value.errno == errno.EADDRNOTAVAIL


async def test_router_forwards_and_answers_hop_limit_and_unreachable(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, r, _b = routed(lab)
    await trio.sleep(2)
    res = await a.ping("2001:db8:2::2", count=2)
    assert res.received == 2 and res.replies[0].ttl == 63
    assert r.nstat()["Ip6OutForwDatagrams"] == 4  # two requests, two replies
    out: list[str] = []
    res = await a.ping("2001:db8:2::2", ttl=1, output=out)
    assert res.received == 0
    assert out[1] == "From 2001:db8:1::fe icmp_seq=1 Time exceeded: Hop limit"
    assert r.nstat()["Icmp6OutTimeExcds"] == 1
    out = []
    res = await a.ping("2001:db8:2::99", timeout=5, output=out)  # ND fails at r after 3 s
    assert out[1] == "From 2001:db8:1::fe icmp_seq=1 Destination unreachable: Address unreachable"
    r.sysctl("net.ipv6.conf.all.forwarding=0")
    res = await a.ping("2001:db8:2::2")
    assert res.received == 0
    assert a.ip("-6 route get 2001:db8:2::2") == (
        "2001:db8:2::2 from :: via 2001:db8:1::fe dev eth0 src 2001:db8:1::1 metric 1024 "
        "pref medium\n"
    )


async def test_packet_too_big_is_learnt_and_udp_is_fragmented_at_the_source(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, r, b = routed(lab)
    r.ip("link set eth1 mtu 1400")
    await trio.sleep(2)
    srv = b.socket(AF_INET6)
    await srv.bind(("::", 9))
    cli = a.socket(AF_INET6)
    cap = a.capture("eth0")
    await cli.sendto(b"x" * 1452, ("2001:db8:2::2", 9))  # 1500 on the wire: too big for r
    await trio.sleep(0.1)
    ptb = [
        p
        for p, o in ip6_frames(cap)
        if not o and isinstance(p.data, dpkt.icmp6.ICMP6) and p.data.type == 2
    ]
    assert len(ptb) == 1 and int.from_bytes(bytes(ptb[0].data)[4:8], "big") == 1400
    assert r.nstat()["Icmp6OutPktTooBigs"] == 1
    assert "mtu 1400" in a.ip("-6 route get 2001:db8:2::2")
    assert "cache expires 5" in a.ip("-6 route show cache") or "mtu 1400" in a.ip(
        "-6 route show cache"
    )
    # the next datagram is fragmented by a to fit 1400, and reassembled by b
    await cli.sendto(b"y" * 3000, ("2001:db8:2::2", 9))
    with trio.fail_after(1):
        data, _ = await srv.recvfrom(4000)
    assert data == b"y" * 3000
    frags = [p for p, o in ip6_frames(cap) if o and p.nxt == 44]
    assert len(frags) == 3
    assert all(len(bytes(p)) <= 1400 for p in frags)
    ids = {bytes(p)[44:48] for p in frags}  # the Fragment header's identification
    assert len(ids) == 1
    assert a.nstat()["Ip6FragCreates"] == 3 and a.nstat()["Ip6FragOKs"] == 1
    assert b.nstat()["Ip6ReasmOKs"] == 1
    # IPV6_DONTFRAG-free path rules: the connected socket sees EMSGSIZE only with DONTFRAG


async def test_reassembly_timeout_sends_time_exceeded(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, b = pair(lab)
    await trio.sleep(2)
    mac_b = bytes(b.dev("eth0").dev_addr)
    mac_a = bytes(a.dev("eth0").dev_addr)
    body = struct.pack("!BBHI", 17, 0, 0x0001, 0x1234) + bytes(64)  # offset 0, M=1
    ip = dpkt.ip6.IP6(
        src=bytes.fromhex("20010db8000000000000000000000001"),
        dst=bytes.fromhex("20010db8000000000000000000000002"),
        nxt=44,
        hlim=64,
        plen=len(body),
    )
    frame = bytes(dpkt.ethernet.Ethernet(dst=mac_b, src=mac_a, type=0x86DD)) + bytes(ip)[:40] + body
    cap = a.capture("eth0")
    from netstack.core.dev import dev_queue_xmit
    from netstack.core.skbuff import SkBuff

    skb = SkBuff(bytearray(frame), 0, len(frame))
    skb.dev = a.dev("eth0")
    skb.protocol = 0x86DD
    dev_queue_xmit(skb)
    await trio.sleep(61)
    assert b.nstat()["Ip6ReasmFails"] == 1 and b.nstat()["Ip6ReasmTimeout"] == 1
    te = [
        p
        for p, o in ip6_frames(cap)
        if not o and isinstance(p.data, dpkt.icmp6.ICMP6) and p.data.type == 3
    ]
    assert len(te) == 1 and te[0].data.code == 1


async def test_slaac_from_a_router_advertisement(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, r = lab.add_host("a"), lab.add_host("r")
    lab.add_link("a:eth0", "r:eth0")
    r.sysctl("net.ipv6.conf.all.forwarding=1")
    r.ip("-6 addr add 2001:db8:1::fe/64 dev eth0")  # radvd advertises a prefix it has
    await trio.sleep(2)
    await send_router_advertisement(r, "eth0", ("2001:db8:1::/64",), mtu=1400)
    await trio.sleep(0.1)
    shown = a.ip("-6 addr show dev eth0")
    assert "/64 scope global tentative dynamic mngtmpaddr \n" in shown
    assert "       valid_lft 86399sec preferred_lft 14399sec\n" in shown or (
        "valid_lft 86400sec preferred_lft 14400sec" in shown
    )
    routes = a.ip("-6 route")
    assert "2001:db8:1::/64 dev eth0 proto kernel metric 256 expires " in routes
    assert routes.splitlines()[-1].startswith("default via fe80::")
    assert " proto ra metric 1024 expires 1799sec mtu 1400 hoplimit 64 pref medium" in routes
    assert a.sysctl("net.ipv6.conf.eth0.mtu") == "1400"
    await trio.sleep(2)
    assert "tentative" not in a.ip("-6 addr show dev eth0")
    slaac = a.ip("-6 addr show dev eth0 scope global").split("inet6 ")[1].split("/")[0]
    assert (await r.ping(slaac)).received == 1


async def test_ip_route_errors_and_del(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, _b = pair(lab)
    a.ip("-6 route add 2001:db8:5::/64 via 2001:db8::2 metric 10")
    assert "2001:db8:5::/64 via 2001:db8::2 dev eth0 metric 10 pref medium\n" in a.ip("-6 route")
    with pytest.raises(netstack.ConfigError, match=r"^RTNETLINK answers: File exists$"):
        a.ip("-6 route add 2001:db8:5::/64 via 2001:db8::2 metric 10")
    with pytest.raises(netstack.ConfigError, match=r"^RTNETLINK answers: No route to host$"):
        a.ip("-6 route add 2001:db8:6::/64 via 2001:db8:9::1")
    a.ip("-6 route del 2001:db8:5::/64 via 2001:db8::2")
    with pytest.raises(netstack.ConfigError, match=r"^RTNETLINK answers: No such process$"):
        a.ip("-6 route del 2001:db8:5::/64")
    a.ip("-6 route add 2001:db8:7::/64 dev eth0 mtu 1300 expires 100")
    assert "2001:db8:7::/64 dev eth0 metric 1024 expires 99sec mtu 1300 pref medium" in a.ip(
        "-6 route"
    ) or "2001:db8:7::/64 dev eth0 metric 1024 expires 100sec mtu 1300 pref medium" in a.ip(
        "-6 route"
    )
    a.ip("-6 addr del 2001:db8::1/64 dev eth0")
    assert "2001:db8::1" not in a.ip("-6 addr")
    assert a.ip("-4 addr show dev eth0") == ""


async def test_neighbour_output_paths_hh_cache_and_direct(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    from netstack.ipv6 import ipv6_of
    from netstack.neigh.neighbour import neigh_direct_output
    from netstack.wire.ipv6 import aton

    a, _b = pair(lab)
    await trio.sleep(2)
    nd = ipv6_of(a.net).nd_tbl
    before = nd.hh_fast_copies + nd.hh_aligned_copies
    assert (await a.ping("2001:db8::2", count=3)).received == 3
    # ping 1 resolves; 2 and 3 go out through the cached Ethernet header, as IPv4 does
    assert nd.hh_fast_copies + nd.hh_aligned_copies - before == 2
    # a header_ops-less NOARP device (sit) sends through neigh_direct_output
    a.ip("addr add 192.0.2.1/24 dev eth0")
    a.ip("link add sit1 type sit remote 192.0.2.2 local 192.0.2.1")
    a.ip("link set sit1 up")
    a.ip("-6 route add 2001:db8:7::/64 dev sit1")
    s = a.socket(AF_INET6)
    await s.sendto(b"x", ("2001:db8:7::1", 9))
    n = nd.lookup(aton("2001:db8:7::1"), a.dev("sit1"))
    assert n is not None and n.output is neigh_direct_output
    # a 4-byte all-zero "link address", printed as iproute2 prints ARPHRD_SIT addresses
    assert "2001:db8:7::1 dev sit1 lladdr 0.0.0.0 NOARP \n" in a.ip("-6 neigh show nud all")
    assert a.dev("sit1").statistics().tx_packets == 1  # the one datagram


async def test_ip_6_route_flush(lab: netstack.Lab, autojump_clock: trio.testing.MockClock) -> None:
    a, _b = pair(lab)
    a.ip("addr add 10.0.0.1/24 dev eth0")
    a.ip("-6 route add 2001:db8:5::/64 via 2001:db8::2 proto static")
    a.ip("-6 route flush proto static")
    assert "2001:db8:5::/64" not in a.ip("-6 route")
    assert "2001:db8::/64 dev eth0 proto kernel" in a.ip("-6 route")
    a.ip("-6 route flush dev eth0")
    assert a.ip("-6 route show dev eth0") == ""
    assert "10.0.0.0/24 dev eth0" in a.ip("route")  # IPv4 untouched


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (
            "-6 addr add 2001:db8::1/129 dev eth0",
            'Error: inet6 prefix is expected rather than "2001:db8::1/129".',
        ),
        ("-6 addr add 2001:db8::1/64 dev eth9", 'Cannot find device "eth9"'),
        ("-6 addr add 2001:db8::1/64 dev eth0", "Error: ipv6: address already assigned."),
        ("-6 addr del 2001:db8::9/64 dev eth0", "Error: ipv6: address not found."),
        ("-6 route add 2001:db8:1::/64 via fe80::1", "Error: Egress device not specified."),
        (
            "-6 route add 2001:db8:1::/64 via 2001:db8::1 dev eth0",
            "Error: Gateway can not be a local address.",
        ),
        ("-6 route add 2001:db8:1::/64 via 2001:db8:9::1", "RTNETLINK answers: No route to host"),
        ("-6 route add ::/0 via 2001:db8::2 dev eth0", "RTNETLINK answers: File exists"),
        ("-6 route del 2001:db8:77::/64", "RTNETLINK answers: No such process"),
        ("-6 route get 2001:db8:99::1 dev eth9", 'Cannot find device "eth9"'),
        (
            "-6 neigh add 2001:db8::5 lladdr 02:00:00:00:00:05",
            "Device and destination are required arguments.",
        ),
    ],
)
async def test_ip_6_errors(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, command: str, message: str
) -> None:
    a, _b = pair(lab)
    a.ip("-6 route add ::/0 via 2001:db8::2 dev eth0")
    before = (a.ip("-6 addr"), a.ip("-6 route"))
    with pytest.raises(netstack.ConfigError) as exc:
        a.ip(command)
    assert str(exc.value) == message
    assert (a.ip("-6 addr"), a.ip("-6 route")) == before  # nothing changed


async def test_udp6_dontfrag_unreachable_and_v6only(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    from netstack.socket import IPV6_DONTFRAG, IPV6_V6ONLY

    a, _b = pair(lab)
    await trio.sleep(2.5)
    s = a.socket(AF_INET6)
    assert s.getsockopt(IPPROTO_IPV6, IPV6_V6ONLY) == 0  # bindv6only=0, as Linux
    s.setsockopt(IPPROTO_IPV6, IPV6_V6ONLY, 1)
    assert s.getsockopt(IPPROTO_IPV6, IPV6_V6ONLY) == 1
    s.setsockopt(IPPROTO_IPV6, IPV6_DONTFRAG, 1)
    with pytest.raises(OSError) as e:
        await s.sendto(b"x" * 2000, ("2001:db8::2", 9))
    assert e.value.errno == errno.EMSGSIZE
    with pytest.raises(OSError) as e:
        await s.sendto(b"x", ("2001:db8:99::1", 9))
    assert e.value.errno == errno.ENETUNREACH
    # without DONTFRAG the same datagram is fragmented at the source
    s2 = a.socket(AF_INET6)
    await s2.sendto(b"x" * 2000, ("2001:db8::2", 9))
    assert a.nstat()["Ip6FragCreates"] == 2
