"""GRO for SIT (seed 4): a TCPv6 bulk flow through a 6in4 tunnel is merged on the
physical device's NAPI only with ``ipip_sit_gro``; the data is intact either
way, and with the patch the merged aggregates cross ipip6_rcv once each.

    a 192.0.2.1 ── veth (GRO on b) ── b 192.0.2.2
    sit1 2001:db8:9::1/64          sit1 2001:db8:9::2/64
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import dpkt
import pytest
import trio
from helpers import stream_transfer

import netstack
from netstack.core.features import SKB_GSO_IPXIP4, SKB_GSO_TCPV6
from netstack.core.skbuff import SkBuff
from netstack.gro import GRO_HELD, GRO_MERGED_FREE, GroNode, gro_statistics
from netstack.ipv6 import ipv6_of
from netstack.socket import AF_INET6
from netstack.tcp import tcp_of
from netstack.wire.checksum import csum_partial
from netstack.wire.ipv6 import aton as aton6
from netstack.wire.ipv6 import csum_ipv6_magic

PORT = 5001


async def sit_transfer(
    lab: netstack.Lab,
    patched: bool,
    size: int = 512 * 1024,
    setup: Callable[[netstack.Host], None] | None = None,
) -> tuple[netstack.Host, bytes, bytes]:
    patches = netstack.Patches(ipip_sit_gro=patched)
    a = lab.add_host("a", patches=patches)
    b = lab.add_host("b", patches=patches)
    lab.add_link("a:eth0", "b:eth0")
    a.ip("addr add 192.0.2.1/24 dev eth0")
    b.ip("addr add 192.0.2.2/24 dev eth0")
    b.ethtool("-K eth0 gro on")  # veth does GRO in its NAPI when asked to
    # The sit device takes 64 KB GSO skbs (SIT_FEATURES); veth would carry them
    # whole: without TSO on a's veth software GSO cuts them into wire packets.
    a.ethtool("-K eth0 tso off")
    for h, local, remote, addr in (
        (a, "192.0.2.1", "192.0.2.2", "2001:db8:9::1/64"),
        (b, "192.0.2.2", "192.0.2.1", "2001:db8:9::2/64"),
    ):
        h.ip(f"link add sit1 type sit local {local} remote {remote}")
        h.ip("link set sit1 up")
        h.ip(f"-6 addr add {addr} dev sit1")
    if setup is not None:
        setup(b)
    await trio.sleep(2)
    payload = bytes(range(256)) * (size // 256)
    got, _ = await stream_transfer(a, b, AF_INET6, "2001:db8:9::2", PORT, payload)
    return b, payload, got


@pytest.mark.parametrize("patched", [False, True])
async def test_sit_gro_only_with_the_patch(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, patched: bool
) -> None:
    b, payload, got = await sit_transfer(lab, patched)
    assert got == payload
    phys = gro_statistics(b.net, "eth0")
    sit_in = b.dev("sit1").stats.rx_packets
    data_frames = len(payload) // 1420  # sit1's MTU 1480 less IPv6 and TCP headers
    tcp_skbs = tcp_of(b.net).mib.InSegs
    if patched:
        assert phys.merged > data_frames // 2  # outer packets merged on eth0's NAPI
        assert phys.complete_segs / phys.complete > 5
        assert sit_in < data_frames // 4  # ipip6_rcv saw aggregates
        assert len(payload) / tcp_skbs > 8 * 1420  # TCP got big skbs
    else:
        assert phys.merged == 0  # 6in4 is flushed from GRO at once
        # ipip6_rcv saw every segment a sent, one by one, and TCP took each alone
        sent = tcp_of(lab.hosts["a"].net).snmp()["Tcp"]
        assert sit_in == tcp_skbs == sent.OutSegs + sent.RetransSegs


async def test_sit_gro_aggregates_are_6in4_gso_skbs(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """What reaches tcp_v6_rcv is a GSO skb of many segments: TCPV6 | IPXIP4, encapsulated."""
    seen: list[tuple[int, bool, int, int]] = []

    def spy_on(host: netstack.Host) -> None:
        proto = ipv6_of(host.net).inet6_protos[6]
        handler = proto.handler

        def spy(skb: SkBuff) -> int:
            seen.append((skb.gso_type, skb.encapsulation, skb.gso_segs, skb.tail - skb.data))
            return int(handler(skb))

        proto.handler = spy

    _, payload, got = await sit_transfer(lab, True, 256 * 1024, spy_on)
    assert got == payload
    big = [s for s in seen if s[2] > 1]
    assert big and all(t & SKB_GSO_TCPV6 and t & SKB_GSO_IPXIP4 and enc for t, enc, _, _ in big)
    assert max(length for *_, length in big) > 20000  # cwnd-limited early in the flow


def six_in_four_tcp(seq: int, ident: int, payload: bytes = b"z" * 1000) -> bytes:
    """Ethernet/IPv4 (DF, ID *ident*, protocol 41)/IPv6/TCP with good checksums."""
    s6 = aton6("2001:db8:9::1")
    d6 = aton6("2001:db8:9::2")
    tcp = dpkt.tcp.TCP(sport=4000, dport=PORT, seq=seq, ack=1, flags=dpkt.tcp.TH_ACK, win=500)
    tcp.data = payload
    raw = bytearray(bytes(tcp))
    raw[16:18] = b"\0\0"
    raw[16:18] = csum_ipv6_magic(s6, d6, len(raw), 6, csum_partial(raw, 0, len(raw))).to_bytes(
        2, "big"
    )
    inner = struct.pack("!IHBB", 6 << 28, len(raw), 6, 64)
    inner += s6.to_bytes(16, "big") + d6.to_bytes(16, "big") + bytes(raw)
    ip = dpkt.ip.IP(
        src=bytes([192, 0, 2, 1]), dst=bytes([192, 0, 2, 2]), p=41, ttl=64, id=ident, df=1
    )
    ip.data = inner
    ip.len = 20 + len(inner)
    eth = dpkt.ethernet.Ethernet(dst=b"\x02\0\0\0\0\x02", src=b"\x02\0\0\0\0\x01", type=0x0800)
    eth.data = ip
    return bytes(eth)


async def test_ipv6_clears_the_outer_ip_id_verdict(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """Outer IDs that jump (another flow shares the IPv4 ID counter) must not stop
    the inner TCPv6 merge: ipv6_gro_receive clears the outer header's flush_id."""
    h = lab.add_host("h")
    lab.add_host("p")
    lab.add_link("h:eth0", "p:eth0")
    h.ethtool("-K eth0 gro on")
    dev = h.dev("eth0")
    napi = dev.napi_list[0]
    node = napi.gro
    assert isinstance(node, GroNode)
    results = []
    for i in range(4):
        frame = six_in_four_tcp(1000 + 1000 * i, 100 + 7 * i)
        skb = SkBuff(bytearray(64) + bytearray(frame), 64, 64 + len(frame))
        skb.mac_header = 64
        skb.data = skb.network_header = 64 + 14
        skb.protocol = 0x0800
        skb.dev = dev
        results.append(node.receive(napi, skb))
    assert results == [GRO_HELD, GRO_MERGED_FREE, GRO_MERGED_FREE, GRO_MERGED_FREE]
    node.flush(napi, False)
    assert node.statistics().complete_segs == 4
