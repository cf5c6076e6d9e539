"""Fuzz the tunnel GRO callbacks: mutated or truncated GRE, 6in4 and VXLAN frames, between
good ones of the same flow, go through one NAPI instance's GRO engine (and on up
the stack) without breaking anything; every held skb is flushed in the end."""

from __future__ import annotations

import struct

import dpkt
import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

import netstack
from netstack.core.skbuff import SkBuff
from netstack.gro import GroNode
from netstack.wire.checksum import csum_partial
from netstack.wire.gre import GRE_CSUM, GRE_KEY
from netstack.wire.gre import pack as gre_pack
from netstack.wire.ipv6 import aton as aton6
from netstack.wire.ipv6 import csum_ipv6_magic


def tcp_bytes(seq: int) -> bytes:
    tcp = dpkt.tcp.TCP(sport=4000, dport=5001, seq=seq, ack=1, flags=dpkt.tcp.TH_ACK, win=500)
    tcp.data = b"f" * 500
    return bytes(tcp)


def outer(proto: int, payload: bytes, ident: int) -> bytes:
    ip = dpkt.ip.IP(src=bytes([192, 0, 2, 1]), dst=bytes([192, 0, 2, 2]), p=proto, ttl=64)
    ip.id = ident
    ip.data = payload
    ip.len = 20 + len(payload)
    eth = dpkt.ethernet.Ethernet(dst=b"\x02\0\0\0\0\x02", src=b"\x02\0\0\0\0\x01", type=0x0800)
    eth.data = ip
    return bytes(eth)


def gre_frame(i: int) -> bytes:
    inner = dpkt.ip.IP(src=bytes([10, 9, 0, 1]), dst=bytes([10, 9, 0, 2]), p=6, ttl=64)
    inner.id = i
    inner.data = dpkt.tcp.TCP(tcp_bytes(1000 + 500 * i))
    inner.len = 20 + 520
    return outer(47, gre_pack(GRE_CSUM | GRE_KEY, 0x0800, bytes(inner), key=3), i)


def gretap_frame(i: int) -> bytes:
    """GRE (K) carrying an Ethernet frame carrying IPv4/TCP (eth_gro_receive's input)."""
    inner = dpkt.ip.IP(src=bytes([10, 9, 0, 1]), dst=bytes([10, 9, 0, 2]), p=6, ttl=64)
    inner.id = i
    inner.data = dpkt.tcp.TCP(tcp_bytes(1000 + 500 * i))
    inner.len = 20 + 520
    eth = dpkt.ethernet.Ethernet(dst=b"\x02\0\0\0\0\x12", src=b"\x02\0\0\0\0\x11", type=0x0800)
    eth.data = inner
    return outer(47, gre_pack(GRE_KEY, 0x6558, bytes(eth), key=3), i)


def vxlan_frame(i: int) -> bytes:
    """UDP to 4789 (no checksum) carrying VXLAN (VNI 42) carrying Ethernet/IPv4/TCP:
    udp4_gro_receive → the encap socket's vxlan_gro_receive → eth_gro_receive."""
    inner = dpkt.ip.IP(src=bytes([10, 9, 0, 1]), dst=bytes([10, 9, 0, 2]), p=6, ttl=64)
    inner.id = i
    inner.data = dpkt.tcp.TCP(tcp_bytes(1000 + 500 * i))
    inner.len = 20 + 520
    eth = dpkt.ethernet.Ethernet(dst=b"\x02\0\0\0\0\x12", src=b"\x02\0\0\0\0\x11", type=0x0800)
    eth.data = inner
    vx = struct.pack("!II", 0x08000000, 42 << 8) + bytes(eth)
    udp = struct.pack("!HHHH", 50000, 4789, 8 + len(vx), 0) + vx
    return outer(17, udp, i)


def sit_frame(i: int) -> bytes:
    s, d = aton6("2001:db8:9::1"), aton6("2001:db8:9::2")
    raw = bytearray(tcp_bytes(1000 + 500 * i))
    raw[16:18] = b"\0\0"
    c = csum_ipv6_magic(s, d, len(raw), 6, csum_partial(raw, 0, len(raw)))
    raw[16:18] = c.to_bytes(2, "big")
    ip6 = struct.pack("!IHBB", 6 << 28, len(raw), 6, 64) + s.to_bytes(16, "big")
    return outer(41, ip6 + d.to_bytes(16, "big") + bytes(raw), i)


@settings(max_examples=30)  # a lab per example
@given(
    kind=st.sampled_from(["gre", "gretap", "sit", "vxlan"]),
    pos=st.lists(st.integers(14, 14 + 20 + 16 + 14 + 40), min_size=1, max_size=4),
    val=st.integers(0, 255),
    cut=st.integers(0, 80),
)
@pytest.mark.slow
def test_fuzz_tunnel_gro_receive(kind: str, pos: list[int], val: int, cut: int) -> None:
    build = {"gre": gre_frame, "gretap": gretap_frame, "sit": sit_frame, "vxlan": vxlan_frame}[kind]

    async def main() -> None:
        async with netstack.open_lab() as lab:
            h = lab.add_host("h")
            lab.add_host("p")
            lab.add_link("h:eth0", "p:eth0")
            h.ip("addr add 192.0.2.2/24 dev eth0")
            h.ethtool("-K eth0 gro on")
            if kind == "vxlan":  # the encap socket on 4789 whose gro_receive GRO finds
                h.ip("link add vxlan0 type vxlan id 42 dstport 4789 remote 192.0.2.1 dev eth0")
                h.ip("link set vxlan0 up")
            dev = h.dev("eth0")
            napi = dev.napi_list[0]
            node = napi.gro
            assert isinstance(node, GroNode)
            for i in range(3):
                f = bytearray(build(i))
                if i == 1:
                    for p in pos:
                        f[p] = val
                    if cut:
                        f = f[: 14 + cut]
                skb = SkBuff(bytearray(64) + f, 64, 64 + len(f))
                skb.mac_header = 64
                skb.data = skb.network_header = 64 + 14
                skb.protocol = 0x0800
                skb.dev = dev
                node.receive(napi, skb)
            node.flush(napi, False)
            assert node.held_skbs() == 0
            await trio.sleep(0.01)

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
