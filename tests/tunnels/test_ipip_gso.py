"""GSO through an IPIP tunnel: TCP hands the ipip device 64 KB skbs
(``IPIP_FEATURES``), ``iptunnel_handle_offloads`` marks them
``SKB_GSO_IPXIP4``, and the NIC below — no IPIP TSO — has them cut by
software GSO (``inet_gso_segment`` → ``ipip_gso_segment`` →
``tcp4_gso_segment``). The frames on the wire are byte-identical to those of
the same transfer with GSO off on the tunnel (TCP building MSS-sized skbs):
outer and inner IP IDs incrementing, lengths, every checksum — but for PSH,
which TCP forces on every skb of more than one segment (``__tcp_transmit_skb``)
and the cut leaves on that skb's last segment."""

from __future__ import annotations

import contextlib
import struct

import dpkt
import trio
from helpers import IPV4_ONLY
from hypothesis import given, settings
from hypothesis import strategies as st

import netstack
from netstack.core.features import (
    NETIF_F_GSO,
    NETIF_F_HW_CSUM,
    NETIF_F_SG,
    NETIF_F_TSO,
    SKB_GSO_IPXIP4,
    SKB_GSO_TCPV4,
)
from netstack.core.skbuff import CHECKSUM_NONE, CHECKSUM_PARTIAL, CHECKSUM_UNNECESSARY, SkBuff
from netstack.core.sock import AF_INET, AF_INET6, SOCK_STREAM
from netstack.core.xmit import skb_gso_segment
from netstack.errors import ConfigError
from netstack.host import Host, Lab, open_lab
from netstack.tcp import TcpSock
from netstack.tunnels.ip_tunnel import iptunnel_handle_offloads

PORT = 5302
PAYLOAD = bytes(i % 251 for i in range(1428 * 9 + 1000))


def _tunnel(lab: Lab) -> tuple[Host, Host]:
    a = lab.add_host("a", seed=7, sysctls=IPV4_ONLY)
    b = lab.add_host("b", seed=8, sysctls=IPV4_ONLY)
    lab.add_link("a:eth0", "b:eth0", kind="nic")
    for h, local, remote, inner in (
        (a, "10.0.0.1", "10.0.0.2", "10.1.0.1/24"),
        (b, "10.0.0.2", "10.0.0.1", "10.1.0.2/24"),
    ):
        h.ip(f"addr add {local}/24 dev eth0")
        h.ip(f"link add ipip1 type ipip local {local} remote {remote}")
        h.ip("link set ipip1 up")
        h.ip(f"addr add {inner} dev ipip1")
    b.ethtool("-K eth0 gro off")  # the receiver's capture sees the wire frames
    return a, b


async def _burst(lab: Lab, gso: str) -> tuple[list[bytes], list[bytes], int]:
    """One 10-segment write right after the handshake: (sent, received, ipip1 tx skbs)."""
    a, b = _tunnel(lab)
    a.sysctl("net.ipv4.tcp_autocorking=0")  # the MSS-skb tail must not wait for TX completion
    if gso == "off":
        with contextlib.suppress(ConfigError):
            a.ethtool("-K ipip1 tso off gso off")
    srv = b.socket(AF_INET, SOCK_STREAM)
    await srv.bind(("", PORT))
    srv.listen(1)
    c = a.socket(AF_INET, SOCK_STREAM)
    await c.connect(("10.1.0.2", PORT))
    conn, _ = await srv.accept()
    assert isinstance(c.sock, TcpSock)
    await trio.sleep(1)
    cap_a, cap_b = a.capture("eth0"), b.capture("eth0")
    skbs0 = a.dev("ipip1").stats.tx_packets
    await c.sendall(PAYLOAD)
    got = bytearray()
    while len(got) < len(PAYLOAD):
        got += await conn.recv(1 << 16)
    assert got == PAYLOAD
    await trio.sleep(0.01)
    cap_a.stop()
    cap_b.stop()
    sent = [f for _, f, out in cap_a.frames if out and len(f) > 100]
    rcvd = [f for _, f, out in cap_b.frames if not out and len(f) > 100]
    return sent, rcvd, a.dev("ipip1").stats.tx_packets - skbs0


def _check(ip: dpkt.ip.IP) -> None:
    """The header checksum (and the TCP one, for TCP) is what dpkt computes."""
    raw = bytes(ip)
    fresh = dpkt.ip.IP(raw)
    fresh.sum = 0
    if isinstance(fresh.data, dpkt.tcp.TCP):
        fresh.data.sum = 0
    assert bytes(fresh) == raw


def with_psh(frame: bytes, l4: int) -> bytes:
    """*frame* with PSH set in the TCP header at offset *l4*, the checksum
    updated incrementally (RFC 1624: the flags word grows by 0x0008)."""
    b = bytearray(frame)
    if b[l4 + 13] & 0x08:
        return frame
    b[l4 + 13] |= 0x08
    s = (~int.from_bytes(b[l4 + 16 : l4 + 18], "big") & 0xFFFF) + 0x0008
    s = (s & 0xFFFF) + (s >> 16)
    b[l4 + 16 : l4 + 18] = (~s & 0xFFFF).to_bytes(2, "big")
    return bytes(b)


async def test_ipip_gso_segments_are_the_mss_sends(autojump_clock: object) -> None:
    frames: dict[str, tuple[list[bytes], list[bytes], int]] = {}

    async def run(gso: str) -> None:
        async with open_lab(debug_skb=True) as lab:
            frames[gso] = await _burst(lab, gso)

    # two labs side by side from the same virtual instant: same ISNs, same timestamps
    async with trio.open_nursery() as n:
        for gso in ("on", "off"):
            n.start_soon(run, gso)
    gso_sent, gso_wire, gso_skbs = frames["on"]
    mss_sent, mss_wire, mss_skbs = frames["off"]
    assert gso_skbs < 10 == mss_skbs  # the tunnel saw GSO skbs, or one skb per segment
    assert len(gso_wire) == 10
    assert gso_sent == gso_wire and mss_wire == mss_sent
    # the first 5-segment skb's PSH (__tcp_transmit_skb) is on its last segment
    assert gso_wire == [with_psh(f, 14 + 20 + 20) if i == 4 else f for i, f in enumerate(mss_wire)]
    outer = [dpkt.ethernet.Ethernet(f).data for f in gso_wire]
    inner = [o.data for o in outer]
    assert all(o.p == 4 and o.df for o in outer)
    assert [o.id for o in outer] == [(outer[0].id + i) & 0xFFFF for i in range(10)]
    assert [i.id for i in inner] == [(inner[0].id + k) & 0xFFFF for k in range(10)]
    assert [o.len - 20 for o in outer] == [i.len for i in inner]
    seqs = [i.data.seq for i in inner]
    mss = len(inner[0].data.data)  # 1500 - 20 (outer) - 20 - 20 - 12 (timestamps)
    assert mss == 1428
    assert seqs == [(seqs[0] + mss * k) & 0xFFFFFFFF for k in range(10)]
    assert b"".join(i.data.data for i in inner) == PAYLOAD
    flags = [i.data.flags for i in inner]
    assert [k for k, fl in enumerate(flags) if fl & dpkt.tcp.TH_PUSH] == [4, 9]
    for o in outer:
        _check(o)
        _check(o.data)


async def test_the_ipip_device_takes_gso_skbs(lab: Lab, autojump_clock: object) -> None:
    """ipip.c's IPIP_FEATURES: TCP's route caps allow 64 KB skbs through the tunnel."""
    a, b = _tunnel(lab)
    dev = a.dev("ipip1")
    for bit in (NETIF_F_SG, NETIF_F_HW_CSUM, NETIF_F_TSO, NETIF_F_GSO):
        assert dev.features & bit and dev.hw_features & bit
    srv = b.socket(AF_INET, SOCK_STREAM)
    await srv.bind(("", PORT))
    srv.listen(1)
    c = a.socket(AF_INET, SOCK_STREAM)
    await c.connect(("10.1.0.2", PORT))
    assert isinstance(c.sock, TcpSock)
    assert c.sock.sk_gso_max_segs > 1 and c.sock.sk_route_caps & NETIF_F_TSO


def test_iptunnel_handle_offloads() -> None:
    """A GSO skb gets the tunnel's GSO type; a non-GSO one with its checksum
    done is sent as plain data; a CHECKSUM_PARTIAL one stays encapsulated."""
    gso = SkBuff(bytearray(200), 40, 200)
    gso.network_header = 40
    gso.gso_size, gso.gso_segs, gso.gso_type = 1440, 3, SKB_GSO_TCPV4
    gso.ip_summed = CHECKSUM_PARTIAL
    assert iptunnel_handle_offloads(gso, SKB_GSO_IPXIP4)
    assert gso.gso_type == SKB_GSO_TCPV4 | SKB_GSO_IPXIP4
    assert gso.encapsulation and gso.inner_network_header == 40
    done = SkBuff(bytearray(200), 40, 200)
    done.ip_summed = CHECKSUM_UNNECESSARY
    assert iptunnel_handle_offloads(done, SKB_GSO_IPXIP4)
    assert done.ip_summed == CHECKSUM_NONE and not done.encapsulation and not done.gso_type
    partial = SkBuff(bytearray(200), 40, 200)
    partial.ip_summed = CHECKSUM_PARTIAL
    assert iptunnel_handle_offloads(partial, SKB_GSO_IPXIP4)
    assert partial.ip_summed == CHECKSUM_PARTIAL and partial.encapsulation


def _gso_skb(dev: object, payload: bytes, mss: int, flags: int) -> SkBuff:
    """An IPIP GSO skb as the ipip device hands it on: Ethernet, outer IPv4
    (DF, ID 0xfffe), inner IPv4 (DF, ID 0x1234), TCP, *payload*."""
    total = 20 + 20 + 20 + len(payload)
    frame = bytearray(b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00")
    frame += struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 0xFFFE, 0x4000, 64, 4, 0,
                         bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))  # fmt: skip
    frame += struct.pack("!BBHHHBBH4s4s", 0x45, 0, total - 20, 0x1234, 0x4000, 64, 6, 0,
                         bytes([10, 1, 0, 1]), bytes([10, 1, 0, 2]))  # fmt: skip
    frame += struct.pack("!HHIIBBHHH", 5001, 80, 0xFFFFF000, 7, 5 << 4, flags, 512, 0, 0)
    frame += payload
    headroom = 64
    skb = SkBuff(bytearray(headroom) + frame, headroom, headroom + len(frame))
    skb.mac_header = headroom
    skb.network_header = headroom + 14
    skb.transport_header = headroom + 54
    skb.inner_network_header = headroom + 34
    skb.inner_transport_header = headroom + 54
    skb.encapsulation = True
    skb.protocol = 0x0800
    skb.dev = dev  # type: ignore[assignment]
    skb.gso_size = mss
    skb.gso_segs = -(-len(payload) // mss)
    skb.gso_type = SKB_GSO_TCPV4 | SKB_GSO_IPXIP4
    return skb


@given(
    size=st.integers(2, 6000),
    mss=st.integers(1, 1460),
    flags=st.sampled_from([0x10, 0x18, 0x19]),
)
@settings(max_examples=40)
def test_skb_gso_segment_of_an_ipip_skb(size: int, mss: int, flags: int) -> None:
    """Whatever the sizes: every segment's outer and inner headers and TCP
    checksum are valid (dpkt recomputes them), the IDs of both headers count
    up, the sequence numbers follow the payload, PSH/FIN only on the last one."""
    payload = bytes(i * 7 % 256 for i in range(size))
    if size <= mss:
        mss = max(1, size - 1)  # a GSO skb is always more than one segment
    segs: list[SkBuff] = []

    async def main() -> None:
        async with open_lab() as lab:
            h = lab.add_host("h", sysctls=IPV4_ONLY)
            skb = _gso_skb(h.dev("lo"), payload, mss, flags)
            s = skb_gso_segment(skb, 0)  # a device with no offloads at all
            while s is not None:
                segs.append(s)
                s = s.next

    netstack.run(main)
    assert len(segs) == -(-size // mss)
    data = b""
    for k, s in enumerate(segs):
        frame = bytes(s.buf[s.data : s.tail])
        outer = dpkt.ethernet.Ethernet(frame).data
        inner = outer.data
        _check(outer)
        _check(inner)
        assert (outer.id, inner.id) == ((0xFFFE + k) & 0xFFFF, 0x1234 + k)
        assert outer.df and inner.df and outer.len == inner.len + 20 == len(frame) - 14
        assert inner.data.seq == (0xFFFFF000 + k * mss) & 0xFFFFFFFF
        last = k == len(segs) - 1
        assert inner.data.flags == (flags if last else flags & ~0x09)
        data += inner.data.data
    assert data == payload


async def _sit_burst(lab: Lab, gso: str) -> tuple[list[bytes], int]:
    """The same over SIT with TCP over IPv6: (wire frames, sit1 tx skbs)."""
    v6_on_the_tunnel_only: dict[str, str | int] = {"net.ipv6.conf.default.disable_ipv6": 1}
    a = lab.add_host("a", seed=7, sysctls=v6_on_the_tunnel_only)
    b = lab.add_host("b", seed=8, sysctls=v6_on_the_tunnel_only)
    lab.add_link("a:eth0", "b:eth0", kind="nic")
    for h, local, remote, inner in (
        (a, "10.0.0.1", "10.0.0.2", "fd00:1::1/64"),
        (b, "10.0.0.2", "10.0.0.1", "fd00:1::2/64"),
    ):
        h.ip(f"addr add {local}/24 dev eth0")
        h.ip(f"link add sit1 type sit local {local} remote {remote}")
        h.sysctl("net.ipv6.conf.sit1.disable_ipv6=0")
        h.ip(f"-6 addr add {inner} dev sit1 nodad")
        h.ip("link set sit1 up")
    b.ethtool("-K eth0 gro off")
    a.sysctl("net.ipv4.tcp_autocorking=0")  # as in _burst
    if gso == "off":
        with contextlib.suppress(ConfigError):
            a.ethtool("-K sit1 tso off gso off")
    srv = b.socket(AF_INET6, SOCK_STREAM)
    await srv.bind(("::", PORT))
    srv.listen(1)
    c = a.socket(AF_INET6, SOCK_STREAM)
    await c.connect(("fd00:1::2", PORT))
    conn, _ = await srv.accept()
    await trio.sleep(1)
    cap_b = b.capture("eth0")
    skbs0 = a.dev("sit1").stats.tx_packets
    await c.sendall(SIT_PAYLOAD)
    got = bytearray()
    while len(got) < len(SIT_PAYLOAD):
        got += await conn.recv(1 << 16)
    assert got == SIT_PAYLOAD
    await trio.sleep(0.01)
    cap_b.stop()
    rcvd = [f for _, f, out in cap_b.frames if not out and len(f) > 100]
    return rcvd, a.dev("sit1").stats.tx_packets - skbs0


SIT_PAYLOAD = bytes(i % 241 for i in range(1408 * 9 + 1000))


async def test_sit_gso_segments_are_the_mss_sends(autojump_clock: object) -> None:
    """SIT_FEATURES: TCPv6 hands sit1 GSO skbs, cut after encapsulation
    (sit_offload → ipv6_gso_segment → tcp6_gso_segment) into the frames
    MSS-sized sends give; outer IDs count up, every checksum is right."""
    frames: dict[str, tuple[list[bytes], int]] = {}

    async def run(gso: str) -> None:
        async with open_lab(debug_skb=True) as lab:
            frames[gso] = await _sit_burst(lab, gso)

    async with trio.open_nursery() as n:
        for gso in ("on", "off"):
            n.start_soon(run, gso)
    (gso_wire, gso_skbs), (mss_wire, mss_skbs) = frames["on"], frames["off"]
    assert gso_skbs < 10 == mss_skbs
    assert len(gso_wire) == 10
    assert gso_wire == [with_psh(f, 14 + 20 + 40) if i == 4 else f for i, f in enumerate(mss_wire)]
    outer = [dpkt.ethernet.Ethernet(f).data for f in gso_wire]
    assert all(o.p == 41 and o.df for o in outer)
    assert [o.id for o in outer] == [(outer[0].id + i) & 0xFFFF for i in range(10)]
    inner = [o.data for o in outer]
    assert all(isinstance(i, dpkt.ip6.IP6) for i in inner)
    assert b"".join(i.data.data for i in inner) == SIT_PAYLOAD
    for o, i in zip(outer, inner, strict=True):
        _check(o)
        fresh = dpkt.ip6.IP6(bytes(i))
        fresh.data.sum = 0
        assert bytes(fresh) == bytes(i)  # dpkt recomputes the TCP checksum
