"""GRE ``csum``: the checksum is never summed over the payload in software (4.6+).

``gre_build_header`` either leaves the GRE checksum to the device below
(CHECKSUM_PARTIAL from the GRE header, field at offset 4) when the inner
packet's checksum is complete, or — the inner checksum still partial, as in a
datagram forwarded from a veth — computes it by local checksum offload
(``lco_csum``: only the bytes between the GRE header and the inner checksum's
start are summed). veth has NETIF_F_HW_CSUM, so the outer packet reaches the
far end still partial, where ``gre_parse_header`` takes it as verified. A
capture shows both checksums filled in, as they would be on a wire
(test_gre_topology checks every byte of those frames).
"""

from __future__ import annotations

import dpkt
import trio
import trio.testing
from helpers import build_sites

import netstack
from netstack.core.features import NETIF_F_HW_CSUM, NETIF_F_IP_CSUM
from netstack.core.net import PacketType
from netstack.core.skbuff import (
    CHECKSUM_NONE,
    CHECKSUM_PARTIAL,
    PACKET_OUTGOING,
    SkBuff,
    consume_skb,
)
from netstack.wire.checksum import csum_fold, csum_partial


def tap_outer(host: netstack.Host, dev: str) -> list[tuple[int, int, int, bytes]]:
    """(ip_summed, csum_start and csum_offset from the outer IPv4 header, the GRE
    header's 8 bytes as the skb holds them) of each GRE packet *dev* sends."""
    seen: list[tuple[int, int, int, bytes]] = []

    def func(skb: SkBuff, *_: object) -> None:
        nh = skb.network_header
        if skb.pkt_type == PACKET_OUTGOING and skb.buf[nh + 9] == 47:
            gre = bytes(skb.buf[nh + 20 : nh + 28])
            seen.append((skb.ip_summed, skb.csum_start - nh, skb.csum_offset, gre))
        consume_skb(skb)

    host.net.dev_add_pack(PacketType(0x0003, func, dev=host.dev(dev)))
    return seen


def outgoing_gre(frames: list[tuple[float, bytes, bool]]) -> list[dpkt.ip.IP]:
    """The outer IPv4 packets of the GRE frames a capture saw leave."""
    out = []
    for _, frame, outgoing in frames:
        ip = dpkt.ethernet.Ethernet(frame).data
        if outgoing and isinstance(ip, dpkt.ip.IP) and ip.p == 47:
            out.append(ip)
    return out


async def test_the_gre_checksum_is_left_to_the_device(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """An echo request (its ICMP checksum complete): the GRE checksum goes down
    CHECKSUM_PARTIAL at the GRE header, its field still zero in the skb."""
    h = build_sites(lab, "key 42 csum")
    seen = tap_outer(h["gw1"], "eth1")
    cap = h["gw1"].capture("eth1")
    assert (await h["s1"].ping("10.2.0.1", count=2, interval=0.1)).received == 2
    assert [s[:3] for s in seen] == [(CHECKSUM_PARTIAL, 20, 4)] * 2
    assert all(s[3] == bytes.fromhex("a0000800 00000000") for s in seen)  # C K, csum 0
    # the capture writes it as the wire carries it: the whole GRE packet sums to zero
    grep = [bytes(ip.data) for ip in outgoing_gre(cap.frames)]
    assert len(grep) == 2 and all(csum_fold(csum_partial(g)) == 0 for g in grep)
    assert all(g[4:6] != b"\x00\x00" for g in grep)
    stats = h["gw2"].dev("gre1").statistics()
    assert stats.rx_packets == 2 and stats.rx_crc_errors == 0


async def test_a_forwarded_partial_datagram_gets_a_local_checksum_offload(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """s1's UDP checksum is left to the veth (CHECKSUM_PARTIAL) and gw1 forwards it
    so: the skb stays partial at the inner UDP header and the GRE checksum is
    lco_csum's, which is right once the inner checksum is filled in.

    The GRE device needs NETIF_F_HW_CSUM for the partial checksum to reach
    gre_build_header (else validate_xmit_skb fills it in first): the kernel's
    GRE_FEATURES have it, netstack's GRE devices keep the seeds'
    2.6.3x-3.3 feature word (test_lltx), so it is set here by hand.
    """
    h = build_sites(lab, "key 42 csum")
    h["gw1"].dev("gre1").features |= NETIF_F_HW_CSUM
    seen = tap_outer(h["gw1"], "eth1")
    cap = h["gw1"].capture("eth1")
    server = h["s2"].socket()
    await server.bind(("0.0.0.0", 5000))
    client = h["s1"].socket()
    await client.sendto(b"lco over gre", ("10.2.0.1", 5000))
    with trio.fail_after(1):
        data, _ = await server.recvfrom(100)
    assert data == b"lco over gre"
    # outer IPv4 20 + GRE 12 (C, K) + inner IPv4 20: the inner UDP checksum at +6
    assert [s[:3] for s in seen] == [(CHECKSUM_PARTIAL, 52, 6)]
    assert seen[0][3][4:6] != b"\x00\x00"  # computed, by lco_csum
    (ip,) = outgoing_gre(cap.frames)
    gre = bytes(ip.data)
    assert csum_fold(csum_partial(gre)) == 0  # the GRE checksum over the filled-in packet
    inner = ip.data.data
    udp = bytes(inner.data)
    pseudo = csum_partial(inner.src + inner.dst + bytes([0, 17]) + len(udp).to_bytes(2, "big"))
    assert csum_fold(csum_partial(udp, 0, len(udp), pseudo)) == 0
    # and the GRE checksum in the skb is the one the capture shows
    assert seen[0][3][4:6] == gre[4:6]


async def test_a_device_that_checksums_only_tcp_and_udp_gets_the_gre_checksum_summed(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """Below GRE, a NIC with NETIF_F_IP_CSUM but not HW_CSUM: the kernel's
    skb_csum_hwoffload_help() offloads only a checksum at the TCP or UDP field's
    offset, so the GRE checksum (csum_offset 4) is filled in by skb_checksum_help()
    before the device sees the skb."""
    h = build_sites(lab, "key 42 csum")
    dev = h["gw1"].dev("eth1")
    dev.features = (dev.features & ~NETIF_F_HW_CSUM) | NETIF_F_IP_CSUM
    seen = tap_outer(h["gw1"], "eth1")
    assert (await h["s1"].ping("10.2.0.1", count=2, interval=0.1)).received == 2
    assert [s[0] for s in seen] == [CHECKSUM_NONE] * 2
    greps = [s[3] for s in seen]
    assert all(g[:4] == bytes.fromhex("a0000800") and g[4:6] != b"\x00\x00" for g in greps)
    stats = h["gw2"].dev("gre1").statistics()
    assert stats.rx_packets == 2 and stats.rx_crc_errors == 0
