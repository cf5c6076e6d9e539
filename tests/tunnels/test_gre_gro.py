"""GRO for GRE (``gre_offload``, built in): a TCP bulk flow through a GRE tunnel is
merged on the physical device's NAPI when the GRE header has no flags, a key or
a checksum (verified first); sequence numbers keep every packet apart.

    a 192.0.2.1 ── veth (GRO on b) ── b 192.0.2.2
    gre1 10.9.0.1/24                gre1 10.9.0.2/24
"""

from __future__ import annotations

import dpkt
import pytest
import trio
from helpers import stream_transfer

import netstack
from netstack.core.skbuff import SkBuff
from netstack.gro import GRO_HELD, GRO_MERGED_FREE, GRO_NORMAL, GroNode, gro_statistics
from netstack.socket import AF_INET
from netstack.tcp import tcp_of
from netstack.wire.gre import GRE_CSUM, GRE_KEY
from netstack.wire.gre import pack as gre_pack

PORT = 5001


async def gre_transfer(
    lab: netstack.Lab, opts: str, kind: str = "gre", *, tso: bool = False
) -> tuple[netstack.Host, bytes, bytes]:
    """A 512 KB TCP transfer a → b through the tunnel. Without *tso* a's tunnel
    cuts the flow's GSO skbs into segments before encapsulating them (``ethtool -K
    gre1 tso off``: a GRE device has GSO for TCP since 3.8, and a GSO skb would
    cross the veth whole), so that b's NAPI has segments to merge."""
    a, b = lab.add_host("a"), lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0")
    a.ip("addr add 192.0.2.1/24 dev eth0")
    b.ip("addr add 192.0.2.2/24 dev eth0")
    b.ethtool("-K eth0 gro on")
    for h, local, remote, addr in (
        (a, "192.0.2.1", "192.0.2.2", "10.9.0.1/24"),
        (b, "192.0.2.2", "192.0.2.1", "10.9.0.2/24"),
    ):
        h.ip(f"link add gre1 type {kind} local {local} remote {remote} {opts}".strip())
        h.ip("link set gre1 up")
        h.ip(f"addr add {addr} dev gre1")
    if not tso:
        a.ethtool("-K gre1 tso off")
    payload = bytes(range(256)) * 2048  # 512 KB
    got, _ = await stream_transfer(a, b, AF_INET, "10.9.0.2", PORT, payload)
    return b, payload, got


@pytest.mark.parametrize(
    ("kind", "opts", "merges"),
    [
        ("gre", "", True),
        ("gre", "key 42", True),
        ("gre", "csum", True),
        ("gre", "key 42 csum", True),
        ("gre", "seq", False),
        # gretap: Ethernet inside (eth_gro_receive compares the inner MAC header)
        ("gretap", "", True),
        ("gretap", "key 42 csum", True),
        ("gretap", "seq", False),
    ],
)
@pytest.mark.slow
async def test_gre_gro_merges_plain_and_keyed_gre(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, kind: str, opts: str, merges: bool
) -> None:
    b, payload, got = await gre_transfer(lab, opts, kind)
    assert got == payload
    phys = gro_statistics(b.net, "eth0")
    gre_in = b.dev("gre1").stats.rx_packets
    mtu = b.dev("gre1").mtu
    data_frames = len(payload) // (mtu - 40)
    if merges:
        assert phys.merged > data_frames // 2  # outer packets merged on eth0's NAPI
        assert phys.complete_segs / phys.complete > 5
        assert gre_in < data_frames // 4  # ipgre_rcv saw aggregates
        assert len(payload) / tcp_of(b.net).mib.InSegs > 8 * (mtu - 40)
    else:
        assert phys.merged == 0  # flushed at the GRE header
        # ipgre_rcv saw every segment a sent, one by one, and a's first packet on gre1
        # (gre: its router solicitation; gretap: its ARP request)
        sent = tcp_of(lab.hosts["a"].net).snmp()["Tcp"]
        assert gre_in == sent.OutSegs + sent.RetransSegs + 1


def gre_frame(seq: int, *, key: int | None = None, bad_csum: bool = False) -> bytes:
    """Ethernet/IPv4/GRE (C, and K if *key*)/IPv4/TCP, every checksum good unless asked."""
    tcp = dpkt.tcp.TCP(sport=4000, dport=PORT, seq=seq, ack=1, flags=dpkt.tcp.TH_ACK, win=500)
    tcp.data = b"q" * 1000
    inner = dpkt.ip.IP(src=bytes([10, 9, 0, 1]), dst=bytes([10, 9, 0, 2]), p=6, ttl=64)
    inner.id = seq // 1000
    inner.data = tcp
    inner.len = 20 + len(bytes(tcp))
    flags = GRE_CSUM | (GRE_KEY if key is not None else 0)
    gre = bytearray(gre_pack(flags, 0x0800, bytes(inner), key=key or 0))
    if bad_csum:
        gre[4] ^= 0x55
    outer = dpkt.ip.IP(src=bytes([192, 0, 2, 1]), dst=bytes([192, 0, 2, 2]), p=47, ttl=64)
    outer.id = seq // 1000  # both IDs increment (no DF)
    outer.data = bytes(gre)
    outer.len = 20 + len(gre)
    eth = dpkt.ethernet.Ethernet(dst=b"\x02\0\0\0\0\x02", src=b"\x02\0\0\0\0\x01", type=0x0800)
    eth.data = outer
    return bytes(eth)


async def test_gre_gro_rules_for_checksums_and_keys(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = lab.add_host("h")
    lab.add_host("p")
    lab.add_link("h:eth0", "p:eth0")
    h.ethtool("-K eth0 gro on")
    dev = h.dev("eth0")
    napi = dev.napi_list[0]
    node = napi.gro
    assert isinstance(node, GroNode)

    def rx(frame: bytes) -> int:
        skb = SkBuff(bytearray(64) + bytearray(frame), 64, 64 + len(frame))
        skb.mac_header = 64
        skb.data = skb.network_header = 64 + 14
        skb.protocol = 0x0800
        skb.dev = dev
        return node.receive(napi, skb)

    assert rx(gre_frame(1000)) == GRO_HELD
    assert rx(gre_frame(2000)) == GRO_MERGED_FREE  # C packets merge once verified
    assert rx(gre_frame(3000, bad_csum=True)) == GRO_NORMAL  # a bad GRE checksum: alone
    assert rx(gre_frame(3000, key=5)) == GRO_HELD  # K: another tunnel
    assert rx(gre_frame(4000, key=6)) == GRO_HELD  # another key: another tunnel
    assert rx(gre_frame(4000, key=5)) == GRO_MERGED_FREE
    assert node.held_skbs() == 3
    node.flush(napi, False)
    assert node.statistics().complete_segs == 5
