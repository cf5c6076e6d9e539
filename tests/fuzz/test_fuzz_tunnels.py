"""Fuzz the tunnel receive handlers: GRE (gre0/gre/gretap), IPIP and SIT through tunnel4,
VXLAN through its UDP encapsulation socket.

Each example builds a host ``h`` (192.0.2.1 on a Port-ended NIC, the NIC
reporting one of its three RX checksum modes) with a GRE tunnel (key 5, csum,
seq), a plain GRE tunnel, a gretap tunnel (key 9), an IPIP and a SIT tunnel, all to
192.0.2.2, and a VXLAN device (VNI 42, port 4789), then injects a few frames
built valid — GRE with any of the C/K/S/R bits and versions, any protocol
(IPv4, TEB, IPv6, WCCP, random), matching or wrong keys, IPIP, 6in4, VXLAN with
or without the I flag, other flags, reserved bits, a known or unknown VNI — and
mutated by hypothesis (truncations, byte overwrites,
wrong outer/inner checksums and lengths, ECN bits).

For every frame: nothing escapes the stack; the frame is accounted — a drop
reason or a tunnel's receive counters move, or an ICMP error is sent, or the
inner packet is delivered; whatever the host sends back parses with dpkt with
valid IPv4 checksums and is addressed to the peer. Afterwards the host still
decapsulates a valid GRE and a valid IPIP datagram.
"""

from __future__ import annotations

import struct
from typing import Final

import dpkt
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netstack.drivers.nic import RxCsumMode
from netstack.host import Host, open_lab, run
from netstack.wire import gre
from netstack.wire.checksum import ip_fast_csum

H_MAC: Final = bytes.fromhex("020000000001")
VX_MAC: Final = bytes.fromhex("020000000042")
PEER_MAC: Final = bytes.fromhex("020000000002")
LOCAL: Final = bytes([192, 0, 2, 1])
REMOTE: Final = bytes([192, 0, 2, 2])
FUZZ: Final = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def inner_udp(dst_net: int, payload: bytes) -> bytes:
    ip = dpkt.ip.IP(
        src=bytes([10, 9, dst_net, 2]),
        dst=bytes([10, 9, dst_net, 1]),
        p=17,
        ttl=64,
        data=dpkt.udp.UDP(sport=4000, dport=5000, ulen=8 + len(payload), data=payload),
    )
    return bytes(ip)


def vxlan(flags: int, vni: int, reserved: int, inner: bytes, sport: int = 50000) -> bytes:
    """A VXLAN datagram (UDP to 4789, dpkt fills the UDP checksum) as the payload of outer()."""
    hdr = struct.pack("!II", flags << 24, (vni << 8) | reserved)
    frame = bytes(dpkt.ethernet.Ethernet(dst=VX_MAC, src=PEER_MAC, type=0x0800, data=inner))
    return bytes(dpkt.udp.UDP(sport=sport, dport=4789, data=hdr + frame, ulen=16 + len(frame)))


def outer(payload: bytes, proto: int, tos: int = 0) -> bytes:
    ip = dpkt.ip.IP(src=REMOTE, dst=LOCAL, p=proto, ttl=64, tos=tos, data=payload)
    return bytes(dpkt.ethernet.Ethernet(dst=H_MAC, src=PEER_MAC, type=0x0800, data=ip))


@st.composite
def tunnel_frames(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["gre", "gre", "gretap", "ipip", "sit", "vxlan"]))
    net_ = draw(st.sampled_from([1, 2, 3]))
    payload = inner_udp(net_, draw(st.binary(max_size=24)))
    if kind == "ipip":
        frame = outer(payload, 4, tos=draw(st.integers(0, 255)))
    elif kind == "vxlan":
        udp = vxlan(
            draw(st.sampled_from([0x08, 0x08, 0x00, 0x0C, 0x88])),
            draw(st.sampled_from([42, 42, 43])),
            draw(st.sampled_from([0, 0, 1])),
            inner_udp(5, draw(st.binary(max_size=24))),
            draw(st.integers(1, 0xFFFF)),
        )
        ip = dpkt.ip.IP(src=REMOTE, dst=LOCAL, p=17, ttl=64, data=dpkt.udp.UDP(udp))
        frame = bytes(dpkt.ethernet.Ethernet(dst=H_MAC, src=PEER_MAC, type=0x0800, data=ip))
    elif kind == "sit":
        ip6 = dpkt.ip6.IP6(src=bytes(15) + b"\x02", dst=bytes(15) + b"\x01", nxt=59, hlim=9)
        ip6.data = draw(st.binary(max_size=24))
        ip6.plen = len(ip6.data)
        frame = outer(bytes(ip6), 41, tos=draw(st.integers(0, 255)))
    else:
        flags = draw(st.sampled_from([0, gre.GRE_KEY, gre.GRE_KEY | gre.GRE_CSUM | gre.GRE_SEQ]))
        flags |= draw(st.sampled_from([0, 0, 0, gre.GRE_ROUTING, 0x0001, 0x0007, 0x0080]))
        proto = draw(st.sampled_from([0x0800, 0x0800, 0x6558, 0x86DD, 0x883E, 0x1234]))
        if kind == "gretap":
            proto = 0x6558
            payload = bytes(
                dpkt.ethernet.Ethernet(dst=bytes(6), src=PEER_MAC, type=0x0800, data=payload)
            )
        key = draw(st.sampled_from([5, 9, 0, 1234]))
        seq = draw(st.integers(0, 0xFFFFFFFF))
        frame = outer(
            gre.pack(flags, proto, payload, key=key, seq=seq), 47, draw(st.integers(0, 3))
        )
    b = bytearray(frame)
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["truncate", "overwrite", "fix-ip-csum"]))
        if op == "truncate" and len(b) > 14:
            del b[draw(st.integers(14, len(b) - 1)) :]
        elif op == "overwrite" and len(b) > 14:
            i = draw(st.integers(14, len(b) - 1))
            b[i] = draw(st.integers(0, 255))
        elif op == "fix-ip-csum" and len(b) >= 34:
            b[24:26] = b"\0\0"
            b[24:26] = struct.pack("!H", ip_fast_csum(b, 14, 20))
    return bytes(b)


def counters(h: Host) -> dict[str, int]:
    out = {f"drop:{k}": v for k, v in h.drops().items()}
    for dev in ("gre0", "gre1", "gre2", "gt1", "ipip1", "tunl0", "sit1", "sit0", "vx0"):
        st_ = h.dev(dev).statistics()
        out[f"{dev}:rx"] = st_.rx_packets + st_.rx_errors
    icmp = h.snmp()["Icmp"]
    out["icmp_out"] = dict(icmp.values)["OutMsgs"]
    return out


def check_reply(reply: bytes) -> None:
    eth = dpkt.ethernet.Ethernet(reply)
    if eth.type == 0x0806:
        return
    if eth.type == 0x86DD:  # eth0's own IPv6 bring-up: MLDv2 reports, DAD, RS
        return
    ip = eth.data
    assert isinstance(ip, dpkt.ip.IP), reply.hex()
    raw = bytes(ip)
    assert ip_fast_csum(raw, 0, (raw[0] & 0xF) * 4) == 0
    assert ip.src == LOCAL and ip.dst == REMOTE
    if ip.p == 1:  # an error never quotes an ICMP error, and is about our peer's packet
        assert ip.data.type in (0, 3, 11, 12)


@FUZZ
@given(
    rx_csum=st.sampled_from(["unnecessary", "complete", "none"]),
    frames=st.lists(tunnel_frames(), min_size=1, max_size=6),
)
@pytest.mark.slow
def test_tunnel_receive_handlers_survive_fuzzed_frames(
    rx_csum: RxCsumMode, frames: list[bytes]
) -> None:
    async def main() -> None:
        async with open_lab(debug_skb=True) as lab:
            h = lab.add_host("h")
            port = lab.add_port("h:eth0", rx_csum=rx_csum, up=False)
            h.ip("link set eth0 address 02:00:00:00:00:01 up")
            h.ip("addr add 192.0.2.1/24 dev eth0")
            h.ip("neigh add 192.0.2.2 lladdr 02:00:00:00:00:02 dev eth0 nud permanent")
            h.ip("link add gre1 type gre remote 192.0.2.2 local 192.0.2.1 key 5 csum seq")
            h.ip("link add gre2 type gre remote 192.0.2.2 local 192.0.2.1")
            h.ip("link add gt1 type gretap remote 192.0.2.2 local 192.0.2.1 key 9")
            h.ip("link add ipip1 type ipip remote 192.0.2.2 local 192.0.2.1")
            h.ip("link add sit1 type sit remote 192.0.2.2 local 192.0.2.1")
            h.ip("link set sit1 up")
            for i, dev in enumerate(("gre1", "gre2", "ipip1"), start=1):
                h.ip(f"link set {dev} up")
                h.ip(f"addr add 10.9.{i}.1/24 dev {dev}")
            h.ip("link set gt1 up")
            h.ip("addr add 10.9.4.1/24 dev gt1")
            h.ip("link add vx0 type vxlan id 42 dstport 4789 remote 192.0.2.2 dev eth0")
            h.ip("link set vx0 address 02:00:00:00:00:42 up")
            h.ip("addr add 10.9.5.1/24 dev vx0")
            sock = h.socket()
            await sock.bind(("0.0.0.0", 5000))
            for frame in frames:
                before = counters(h)
                queued = len(sock.sock.receive_queue)
                await port.send(frame)
                await trio.sleep(0.001)
                after = counters(h)
                moved = sum(after.get(k, 0) - before.get(k, 0) for k in after)
                delivered = len(sock.sock.receive_queue) - queued
                assert moved + delivered >= 1, (frame.hex(), before, after)
                for reply in port.drain():
                    check_reply(reply)
            # still alive: plain GRE, IPIP and VXLAN are decapsulated and delivered
            await port.send(outer(gre.pack(0, 0x0800, inner_udp(2, b"alive-gre")), 47))
            await port.send(outer(inner_udp(3, b"alive-ipip"), 4))
            await port.send(outer(vxlan(0x08, 42, 0, inner_udp(5, b"alive-vxlan")), 17))
            got: set[bytes] = set()
            with trio.fail_after(1):
                while not {b"alive-gre", b"alive-ipip", b"alive-vxlan"} <= got:
                    got.add((await sock.recvfrom(100))[0])

    run(main)
