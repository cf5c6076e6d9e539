"""Crafted GRE captures replayed into a host: decapsulated and delivered, or counted and dropped.

Host ``h`` has a NIC ``eth0`` (192.0.2.1/24) whose cable ends in a Port, and
three GRE tunnels to 192.0.2.2: ``gre1`` (key 5), ``gre2`` (key 6, csum),
``gre3`` (key 7, seq). Frames are built with dpkt and ``wire.gre`` (itself
checked against dpkt); what ``h`` sends back is parsed with dpkt.
"""

from __future__ import annotations

from typing import Final

import dpkt
import pytest
import trio
import trio.testing

import netstack
from netstack.host import Port
from netstack.socket import Socket
from netstack.wire import gre
from netstack.wire.checksum import csum_fold, csum_partial
from netstack.wire.gre import GRE_CSUM, GRE_KEY, GRE_ROUTING, GRE_SEQ

H_MAC: Final = bytes.fromhex("020000000001")
PEER_MAC: Final = bytes.fromhex("020000000002")
LOCAL: Final = bytes([192, 0, 2, 1])
REMOTE: Final = bytes([192, 0, 2, 2])


async def rig(lab: netstack.Lab) -> tuple[netstack.Host, Port, Socket]:
    h = lab.add_host("h")
    port = lab.add_port("h:eth0", up=False)
    h.ip("link set eth0 address 02:00:00:00:00:01 up")
    h.ip("addr add 192.0.2.1/24 dev eth0")
    h.ip("neigh add 192.0.2.2 lladdr 02:00:00:00:00:02 dev eth0 nud permanent")
    for i, opts in ((1, "key 5"), (2, "key 6 csum"), (3, "key 7 seq")):
        h.ip(f"link add gre{i} type gre remote 192.0.2.2 local 192.0.2.1 {opts}")
        h.ip(f"link set gre{i} up")
        h.ip(f"addr add 10.9.{i}.1/30 dev gre{i}")
    sock = h.socket()
    await sock.bind(("0.0.0.0", 5000))
    return h, port, sock


def inner_udp(i: int, payload: bytes = b"hello", *, tos: int = 0) -> bytes:
    ip = dpkt.ip.IP(
        src=bytes([10, 9, i, 2]),
        dst=bytes([10, 9, i, 1]),
        p=17,
        ttl=64,
        tos=tos,
        data=dpkt.udp.UDP(sport=4000, dport=5000, data=payload),
    )
    ip.data.ulen = 8 + len(payload)
    return bytes(ip)


def inner_echo(i: int) -> bytes:
    echo = dpkt.icmp.ICMP.Echo(id=0x77, seq=1, data=b"ping over gre")
    return bytes(
        dpkt.ip.IP(
            src=bytes([10, 9, i, 2]),
            dst=bytes([10, 9, i, 1]),
            p=1,
            ttl=64,
            data=dpkt.icmp.ICMP(type=8, code=0, data=echo),
        )
    )


def frame(gre_bytes: bytes, *, tos: int = 0, proto: int = 47) -> bytes:
    ip = dpkt.ip.IP(src=REMOTE, dst=LOCAL, p=proto, ttl=64, tos=tos, data=gre_bytes)
    return bytes(dpkt.ethernet.Ethernet(dst=H_MAC, src=PEER_MAC, type=0x0800, data=ip))


async def settle() -> None:
    await trio.sleep(0.01)


async def test_replayed_gre_is_delivered_and_answered_through_the_tunnel(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h, port, sock = await rig(lab)
    await port.send(frame(gre.pack(GRE_KEY, 0x0800, inner_udp(1), key=5)))
    with trio.fail_after(1):
        data, peer = await sock.recvfrom(100)
    assert (data, peer) == (b"hello", ("10.9.1.2", 4000))
    await port.send(frame(gre.pack(GRE_KEY, 0x0800, inner_echo(1), key=5)))
    await settle()
    replies = [dpkt.ethernet.Ethernet(f) for f in port.drain()]
    gre_replies = [e for e in replies if isinstance(e.data, dpkt.ip.IP) and e.data.p == 47]
    assert len(gre_replies) == 1
    outer = gre_replies[0].data
    assert (outer.src, outer.dst) == (LOCAL, REMOTE)
    g = outer.data
    assert g.flags == GRE_KEY and g.key == 5
    icmp = g.data.data
    assert icmp.type == 0 and icmp.data.data == b"ping over gre"
    st = h.dev("gre1").statistics()
    assert st.rx_packets == 2 and st.tx_packets == 1 and st.rx_errors == 0


async def test_checksum_and_sequence_tunnels_accept_good_packets(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    _h, port, sock = await rig(lab)
    await port.send(frame(gre.pack(GRE_KEY | GRE_CSUM, 0x0800, inner_udp(2, b"c"), key=6)))
    for seq, payload in ((10, b"s10"), (11, b"s11"), (20, b"s20")):  # a gap is accepted
        await port.send(
            frame(gre.pack(GRE_KEY | GRE_SEQ, 0x0800, inner_udp(3, payload), key=7, seq=seq))
        )
    with trio.fail_after(1):
        got = [(await sock.recvfrom(100))[0] for _ in range(4)]
    # two tunnels are two GRO cells (two NAPI contexts): ordered within a tunnel only
    assert b"c" in got
    assert [g for g in got if g != b"c"] == [b"s10", b"s11", b"s20"]
    gre3 = _h.dev("gre3").priv.statistics()
    assert gre3.i_seqno == 21 and gre3.hlen == 12 and gre3.device.rx_packets == 3


@pytest.mark.parametrize(
    ("case", "dev", "counter", "reason"),
    [
        ("bad checksum", "gre2", "rx_crc_errors", "IP_TUNNEL_CSUM"),
        ("missing checksum", "gre2", "rx_crc_errors", "IP_TUNNEL_CSUM"),
        ("unexpected checksum", "gre1", "rx_crc_errors", "IP_TUNNEL_CSUM"),
        ("stale sequence", "gre3", "rx_fifo_errors", "IP_TUNNEL_SEQ"),
        ("missing sequence", "gre3", "rx_fifo_errors", "IP_TUNNEL_SEQ"),
        ("truncated inner header", "gre1", "rx_length_errors", "PKT_TOO_SMALL"),
        ("CE over not-ECT", "gre1", "rx_frame_errors", "IP_TUNNEL_ECN"),
    ],
)
async def test_bad_tunnel_packets_are_counted_on_the_tunnel(
    lab: netstack.Lab,
    autojump_clock: trio.testing.MockClock,
    case: str,
    dev: str,
    counter: str,
    reason: str,
) -> None:
    h, port, sock = await rig(lab)
    if case == "bad checksum":
        good = bytearray(gre.pack(GRE_KEY | GRE_CSUM, 0x0800, inner_udp(2), key=6))
        good[5] ^= 0x01
        bad = bytes(good)
    elif case == "missing checksum":
        bad = gre.pack(GRE_KEY, 0x0800, inner_udp(2), key=6)
    elif case == "unexpected checksum":
        bad = gre.pack(GRE_KEY | GRE_CSUM, 0x0800, inner_udp(1), key=5)
    elif case == "stale sequence":
        await port.send(frame(gre.pack(GRE_KEY | GRE_SEQ, 0x0800, inner_udp(3), key=7, seq=100)))
        bad = gre.pack(GRE_KEY | GRE_SEQ, 0x0800, inner_udp(3), key=7, seq=99)
    elif case == "missing sequence":
        bad = gre.pack(GRE_KEY, 0x0800, inner_udp(3), key=7)
    elif case == "truncated inner header":
        bad = gre.pack(GRE_KEY, 0x0800, inner_udp(1)[:10], key=5)
    else:
        bad = gre.pack(GRE_KEY, 0x0800, inner_udp(1), key=5)
    await port.send(frame(bad, tos=3 if case == "CE over not-ECT" else 0))
    await settle()
    st = h.dev(dev).statistics()
    assert getattr(st, counter) == 1
    assert st.rx_errors == 1
    assert h.drops().get(reason) == 1
    # nothing was delivered to the socket but the packet that set the sequence
    expected = 1 if case == "stale sequence" else 0
    delivered = 0
    while True:
        try:
            sock.recvfrom_nowait(100)
        except BlockingIOError:
            break
        delivered += 1
    assert delivered == expected
    # csum errors show in "ip -s -s link", ECN ones as "CsumErrs" of ip -s tunnel (rx_frame_errors)
    assert f"{getattr(st, counter)}" in h.ip(f"-s -s link show {dev}")


async def test_ecn_ce_marks_an_ect_inner_packet(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h, port, sock = await rig(lab)
    await port.send(frame(gre.pack(GRE_KEY, 0x0800, inner_udp(1, tos=0x02), key=5), tos=3))
    with trio.fail_after(1):
        await sock.recvfrom(100)
    # the outer header was CE, and so is the inner one now (its checksum still verifies)
    assert h.nstat().get("IpExtInCEPkts") == 2
    assert "IP_CSUM" not in h.drops()


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("version 1", "GRE_INVALID"),
        ("routing", "GRE_INVALID"),
        ("shorter than 12 bytes", "GRE_INVALID"),
    ],
)
async def test_gre_headers_linux_refuses(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, case: str, reason: str
) -> None:
    h, port, _ = await rig(lab)
    if case == "version 1":
        bad = gre.pack(GRE_KEY | 0x0001, 0x880B, inner_udp(1), key=5)
    elif case == "routing":
        bad = gre.pack(GRE_KEY | GRE_ROUTING, 0x0800, inner_udp(1), key=5)
    else:
        bad = gre.pack(GRE_KEY, 0x0800, b"", key=5)
    await port.send(frame(bad))
    await settle()
    assert h.drops() == {reason: 1}
    assert all(d.statistics().rx_packets == 0 for d in (h.dev("gre1"), h.dev("gre2")))
    assert port.drain() == []  # no ICMP about it


@pytest.mark.parametrize("key", [None, 99])
async def test_no_matching_tunnel_answers_port_unreachable(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, key: int | None
) -> None:
    h, port, _ = await rig(lab)
    flags = GRE_KEY if key is not None else 0
    await port.send(frame(gre.pack(flags, 0x0800, inner_udp(1), key=key or 0)))
    await settle()
    (reply,) = [dpkt.ethernet.Ethernet(f) for f in port.drain()]
    icmp = reply.data.data
    assert isinstance(icmp, dpkt.icmp.ICMP) and (icmp.type, icmp.code) == (3, 3)
    assert csum_fold(csum_partial(bytes(icmp))) == 0
    assert h.drops() == {"IP_TUNNEL_NO_MATCH": 1}
    assert h.snmp()["Icmp"].OutDestUnreachs == 1


async def test_the_fallback_device_takes_unmatched_packets_when_up(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h, port, _ = await rig(lab)
    h.ip("link set gre0 up")
    await port.send(frame(gre.pack(0, 0x0800, inner_udp(1))))
    await settle()
    assert h.dev("gre0").statistics().rx_packets == 1
    assert port.drain() == []
