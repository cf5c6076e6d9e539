"""Fragmentation, reassembly and path MTU discovery.

* A 4000-byte UDP datagram over an MTU-1500 link leaves in three fragments
  (1480 + 1480 + 1048 bytes of IP payload) and is reassembled by the receiver.
* Through a router whose next hop has MTU 1000, a datagram with DF
  (IP_MTU_DISCOVER = IP_PMTUDISC_DO) that does not fit is refused with ICMP
  "fragmentation needed" carrying MTU 1000; the sender learns the path MTU
  (IP_MTU) and refuses bigger datagrams itself. Without DF the router
  fragments instead.
"""

from __future__ import annotations

import errno
import struct

import dpkt
import pytest
import trio
import trio.testing

from netstack.ipv4 import ipv4_of
from netstack.socket import (
    IP_MTU,
    IP_MTU_DISCOVER,
    IP_PMTUDISC_DO,
    IP_PMTUDISC_DONT,
    IP_RECVERR,
    IPPROTO_IP,
    MSG_ERRQUEUE,
)
from netstack.testing.builders import add_addr, nstat, open_test_lab, pair, routed


def fragments_of(frames: list[tuple[float, bytes, bool]]) -> list[dpkt.ip.IP]:
    out = []
    for _, frame, _ in frames:
        eth = dpkt.ethernet.Ethernet(frame)
        if eth.type == 0x0800 and eth.data.p == 17:
            ip = eth.data
            assert dpkt.in_cksum(bytes(ip)[: ip.hl * 4]) == 0, "bad IP header checksum"
            out.append(ip)
    return out


def reassemble(frags: list[dpkt.ip.IP]) -> bytes:
    data = b""
    for ip in sorted(frags, key=lambda f: f.offset):
        assert ip.offset * 8 == len(data), "a hole or an overlap"
        data += bytes(ip.data)
    return data


async def test_4000_byte_datagram_is_fragmented_and_reassembled(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_test_lab() as lab:
        a, b = pair(lab, ipv4_only=False)
        srv = b.socket()
        await srv.bind(("0.0.0.0", 9000))
        cap = b.capture("eth0")
        payload = bytes(i % 251 for i in range(4000))
        cli = a.socket()
        await cli.sendto(payload, ("10.0.0.2", 9000))
        data, _ = await srv.recvfrom(65535)
        assert data == payload
        frags = fragments_of(cap.frames)
        assert [(ip.len, ip.offset * 8, ip.mf, ip.df) for ip in frags] == [
            (1500, 0, 1, 0),
            (1500, 1480, 1, 0),
            (1068, 2960, 0, 0),
        ]
        assert len({ip.id for ip in frags}) == 1  # one datagram, one ID
        whole = reassemble(frags)
        assert len(whole) == 8 + 4000
        _sport, dport, ulen, check = struct.unpack_from("!HHHH", whole)
        assert (dport, ulen) == (9000, 4008)
        pseudo = bytes([10, 0, 0, 1, 10, 0, 0, 2, 0, 17]) + struct.pack("!H", ulen)
        assert check != 0
        assert dpkt.in_cksum(pseudo + whole) == 0, "bad UDP checksum on the wire"
        assert whole[8:] == payload
        assert nstat(a, "IpFragOKs") == 1
        assert nstat(a, "IpFragCreates") == 3
        assert nstat(a, "IpOutRequests") == 1
        assert nstat(b, "IpReasmReqds") == 3
        assert nstat(b, "IpReasmOKs") == 1
        assert nstat(b, "IpReasmFails") == 0
        assert nstat(b, "IpInDelivers") == 1
        assert nstat(b, "UdpInDatagrams") == 1
        assert not ipv4_of(b.net).frags.queues


async def test_fragmented_datagrams_have_distinct_ids(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Fragments keep their datagram's ID (RFC 791/6864), and datagrams get distinct
    IDs. (Regression: ip_do_fragment zeroed the ID of every fragment.)"""
    async with open_test_lab() as lab:
        a, b = pair(lab, ipv4_only=False)
        srv = b.socket()
        await srv.bind(("0.0.0.0", 9000))
        cap = b.capture("eth0")
        cli = a.socket()
        for _ in range(3):
            await cli.sendto(bytes(3000), ("10.0.0.2", 9000))
            await srv.recvfrom(65535)
        ids = [ip.id for ip in fragments_of(cap.frames)]
    assert len(ids) == 9
    assert len(set(ids)) == 3, f"fragment IDs {ids}"


async def test_lost_fragment_times_out_with_reasm_fails(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A datagram whose last fragment never comes is dropped after ipfrag_time (30 s),
    and its sender is told with ICMP "fragment reassembly time exceeded"."""
    async with open_test_lab() as lab:
        b = lab.add_host("b")
        port = lab.add_port("b:eth0")
        add_addr(b, "eth0", "10.0.0.2/24")
        srv = b.socket()
        await srv.bind(("0.0.0.0", 9000))
        await trio.sleep(1.0)
        peer_mac = bytes.fromhex("020000000001")
        src, dst = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
        arp = dpkt.arp.ARP(op=2, sha=peer_mac, spa=src, tha=b.dev("eth0").dev_addr, tpa=dst)
        # (an unsolicited reply is ignored: ask first, as the peer would)
        req = dpkt.arp.ARP(op=1, sha=peer_mac, spa=src, tha=bytes(6), tpa=dst)
        for msg in (req, arp):
            eth = dpkt.ethernet.Ethernet(dst=b"\xff" * 6, src=peer_mac, type=0x0806, data=msg)
            await port.send(bytes(eth))
        udp = dpkt.udp.UDP(sport=40000, dport=9000, data=bytes(3000))
        udp.ulen = len(udp)
        whole = bytes(udp)
        for off in (0, 1480):  # the fragment at 2960 is lost
            ip = dpkt.ip.IP(
                src=src,
                dst=dst,
                p=17,
                id=0x4242,
                mf=1,
                offset=off // 8,
                data=whole[off : off + 1480],
            )
            eth = dpkt.ethernet.Ethernet(
                dst=b.dev("eth0").dev_addr, src=peer_mac, type=0x0800, data=ip
            )
            await port.send(bytes(eth))
        await trio.sleep(1.0)
        port.drain()
        assert nstat(b, "IpReasmReqds") == 2
        assert len(ipv4_of(b.net).frags.queues) == 1
        # ip_frag_queue(): a queued fragment keeps no route (skb_dst_drop); ip_expire
        # routes the first one again before it answers
        (q,) = ipv4_of(b.net).frags.queues.values()
        assert [f.dst for _, _, f in q.frags] == [None, None]
        await trio.sleep(30.0)
        assert nstat(b, "IpReasmFails") == 1
        assert nstat(b, "IpReasmTimeout") == 1
        assert not ipv4_of(b.net).frags.queues
        assert ipv4_of(b.net).frags.mem == 0
        with pytest.raises(BlockingIOError):
            srv.recvfrom_nowait(65535)
        # b had the first fragment, so it told the sender.
        replies = [dpkt.ethernet.Ethernet(f) for f in port.drain()]
        icmps = [e.data for e in replies if e.type == 0x0800]
        assert len(icmps) == 1
        assert dpkt.in_cksum(bytes(icmps[0])[:20]) == 0
        assert dpkt.in_cksum(bytes(icmps[0].data)) == 0
        assert (icmps[0].data.type, icmps[0].data.code) == (11, 1)
        assert icmps[0].dst == src
        assert nstat(b, "IcmpOutTimeExcds") == 1


async def test_df_datagram_too_big_for_next_hop_gets_frag_needed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_test_lab() as lab:
        a, r, b = routed(lab, next_hop={"mtu": 1000}, ipv4_only=False)
        srv = b.socket()
        await srv.bind(("0.0.0.0", 9000))
        cap = a.capture("eth0")
        cli = a.socket()
        cli.setsockopt(IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO)
        cli.setsockopt(IPPROTO_IP, IP_RECVERR, 1)
        await cli.connect(("10.0.2.1", 9000))
        assert cli.getsockopt(IPPROTO_IP, IP_MTU) == 1500
        await cli.send(bytes(1400))
        await trio.sleep(0.1)
        # The router refused it …
        assert nstat(r, "IpFragFails") == 1
        assert nstat(r, "IcmpOutDestUnreachs") == 1
        assert nstat(r, "IpForwDatagrams") == 0
        assert nstat(b, "UdpInDatagrams") == 0
        # … with a well-formed "fragmentation needed, next-hop MTU 1000".
        icmps = []
        for _, frame, outgoing in cap.frames:
            eth = dpkt.ethernet.Ethernet(frame)
            if eth.type == 0x0800 and eth.data.p == 1 and not outgoing:
                icmps.append(eth.data)
        assert len(icmps) == 1
        err = icmps[0]
        assert dpkt.in_cksum(bytes(err)[:20]) == 0
        assert dpkt.in_cksum(bytes(err.data)) == 0
        assert (err.data.type, err.data.code) == (3, 4)
        assert struct.unpack_from("!H", bytes(err.data), 6)[0] == 1000
        quoted = dpkt.ip.IP(bytes(err.data)[8:])
        assert quoted.df == 1
        assert quoted.len == 1428
        # The sender learned the path MTU: the error is reported, IP_MTU shrinks …
        with pytest.raises(OSError) as exc:
            await cli.send(b"x")
        assert exc.value.errno == errno.EMSGSIZE
        data, anc, _flags, _addr = await cli.recvmsg(2000, 1024, MSG_ERRQUEUE)
        ee_errno, origin, icmp_type, icmp_code, _pad, info = struct.unpack_from(
            "=IBBBBI", anc[0][2]
        )
        assert (ee_errno, origin, icmp_type, icmp_code, info) == (errno.EMSGSIZE, 2, 3, 4, 1000)
        assert cli.getsockopt(IPPROTO_IP, IP_MTU) == 1000
        # … and it refuses what does not fit, sending what does.
        with pytest.raises(OSError) as exc2:
            await cli.send(bytes(1400))
        assert exc2.value.errno == errno.EMSGSIZE
        await cli.send(bytes(1000 - 28))
        data, _ = await srv.recvfrom(2000)
        assert len(data) == 972
        assert nstat(r, "IpForwDatagrams") == 1


async def test_router_fragments_a_datagram_without_df(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_test_lab() as lab:
        a, r, b = routed(lab, next_hop={"mtu": 1000}, ipv4_only=False)
        srv = b.socket()
        await srv.bind(("0.0.0.0", 9000))
        cap = b.capture("eth0")
        cli = a.socket()
        cli.setsockopt(IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DONT)
        payload = bytes(i % 253 for i in range(1400))
        await cli.sendto(payload, ("10.0.2.1", 9000))
        data, _ = await srv.recvfrom(2000)
        assert data == payload
        frags = fragments_of(cap.frames)
        assert [(ip.len, ip.offset * 8, ip.mf, ip.ttl) for ip in frags] == [
            (996, 0, 1, 63),
            (452, 976, 0, 63),
        ]
        assert reassemble(frags)[8:] == payload
        assert nstat(a, "IpFragCreates") == 0  # it fit a's own link
        assert nstat(r, "IpFragOKs") == 1
        assert nstat(r, "IpFragCreates") == 2
        assert nstat(r, "IpForwDatagrams") == 1
        assert nstat(b, "IpReasmOKs") == 1
