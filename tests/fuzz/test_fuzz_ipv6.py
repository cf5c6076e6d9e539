"""Fuzz the IPv6 receive path (ipv6_rcv, extension headers, reassembly, ICMPv6/ND, UDPv6)
and SIT receive (6in4 frames decapsulated into the same path).

One host ``h`` (eth0 2001:db8::1/64 and 192.0.2.1/24, a sit1 tunnel to
192.0.2.2 with 2001:db8:5::1/64, a UDPv6 socket on port 5000) whose eth0 cable
ends in a :class:`Port`. Valid frames are built with struct — UDP, echo
requests, neighbour solicitations, router advertisements, hop-by-hop and
destination options, routing headers, fragments, unknown next headers — either
directly over Ethernet or inside IPv4 protocol 41, then hypothesis truncates
them, flips bits and overwrites bytes past the Ethernet header.

For every frame: nothing escapes the stack; a frame for h's MAC moves
``Ip6InReceives`` (or, inside a tunnel, the sit device's counters, or an IPv4
drop) — never lost silently; every reply parses and its ICMPv6 checksum
verifies, and no ICMPv6 error answers an ICMPv6 error. After the last frame h
still answers a ping6 on eth0 and delivers a UDP datagram through sit1.
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
from netstack.socket import AF_INET6
from netstack.wire.checksum import csum_partial, ip_fast_csum
from netstack.wire.ipv6 import aton, csum_ipv6_magic

FUZZ: Final = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
H_MAC: Final = bytes.fromhex("020000000001")
PEER_MAC: Final = bytes.fromhex("020000000002")
H6: Final = aton("2001:db8::1")
PEER6: Final = aton("2001:db8::2")
H6_SIT: Final = aton("2001:db8:5::1")
PEER6_SIT: Final = aton("2001:db8:5::2")
LOCAL4: Final = bytes([192, 0, 2, 1])
REMOTE4: Final = bytes([192, 0, 2, 2])


def ip6(src: int, dst: int, nxt: int, payload: bytes, hlim: int = 64) -> bytes:
    return (
        struct.pack("!IHBB", 0x60000000, len(payload), nxt, hlim)
        + src.to_bytes(16, "big")
        + dst.to_bytes(16, "big")
        + payload
    )


def l4_csum(src: int, dst: int, proto: int, data: bytearray, off: int) -> None:
    struct.pack_into("!H", data, off, 0)
    s = csum_ipv6_magic(src, dst, len(data), proto, csum_partial(bytes(data), 0, len(data), 0))
    struct.pack_into("!H", data, off, s or 0xFFFF)


def udp(src: int, dst: int, dport: int, body: bytes) -> bytes:
    d = bytearray(struct.pack("!HHHH", 4000, dport, 8 + len(body), 0) + body)
    l4_csum(src, dst, 17, d, 6)
    return bytes(d)


def icmp6(src: int, dst: int, t: int, code: int, body: bytes) -> bytes:
    d = bytearray(struct.pack("!BBH", t, code, 0) + body)
    l4_csum(src, dst, 58, d, 2)
    return bytes(d)


def base_packets(src: int, dst: int) -> list[bytes]:
    u = udp(src, dst, 5000, b"fuzz")
    echo = icmp6(src, dst, 128, 0, struct.pack("!HH", 7, 1) + b"ping")
    sol = 0xFF0200000000000000000001FF000000 | (dst & 0xFFFFFF)
    ns = icmp6(src, sol, 135, 0, bytes(4) + dst.to_bytes(16, "big") + bytes([1, 1]) + PEER_MAC)
    ra = icmp6(
        (0xFE80 << 112) | 2,
        0xFF020000000000000000000000000001,
        134,
        0,
        struct.pack("!BBHII", 64, 0, 1800, 0, 0)
        + bytes([1, 1])
        + PEER_MAC
        + struct.pack("!BBBBIII", 3, 4, 64, 0xC0, 86400, 14400, 0)
        + (0x20010DB8000700000000000000000000).to_bytes(16, "big"),
    )
    hbh = bytes([17, 0, 5, 2, 0, 0, 1, 0]) + u  # router alert + PadN
    dstopt = bytes([17, 0, 0x80 | 0x3E, 4, 0, 0, 0, 0]) + u  # unknown option, "discard+ICMP"
    rthdr = bytes([17, 2, 0, 1, 0, 0, 0, 0]) + PEER6.to_bytes(16, "big") + u
    frag1 = struct.pack("!BBHI", 17, 0, 0x0001, 0x77) + u[:8]
    frag2 = struct.pack("!BBHI", 17, 0, 0x0008, 0x77) + u[8:]
    return [
        ip6(src, dst, 17, u),
        ip6(src, dst, 58, echo),
        ip6(src, sol, 58, ns, 255),
        ip6((0xFE80 << 112) | 2, 0xFF020000000000000000000000000001, 58, ra, 255),
        ip6(src, dst, 0, hbh),
        ip6(src, dst, 60, dstopt),
        ip6(src, dst, 43, rthdr),
        ip6(src, dst, 44, frag1),
        ip6(src, dst, 44, frag2),
        ip6(src, dst, 0x8F, b"unknown next header"),
        ip6(src, dst, 17, u, hlim=1),
    ]


def eth(payload: bytes, ethertype: int = 0x86DD) -> bytes:
    return H_MAC + PEER_MAC + struct.pack("!H", ethertype) + payload


def six_in_four(inner: bytes) -> bytes:
    hdr = bytearray(
        struct.pack(
            "!BBHHHBBH4s4s", 0x45, 0, 20 + len(inner), 1, 0x4000, 64, 41, 0, REMOTE4, LOCAL4
        )
    )
    struct.pack_into("!H", hdr, 10, ip_fast_csum(bytes(hdr), 0, 20))
    return eth(bytes(hdr) + inner, 0x0800)


@st.composite
def frames(draw: st.DrawFn) -> tuple[bytes, bool]:
    tunnelled = draw(st.booleans())
    src, dst = (PEER6_SIT, H6_SIT) if tunnelled else (PEER6, H6)
    pkt = bytearray(draw(st.sampled_from(base_packets(src, dst))))
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["flip", "byte", "cut"]))
        if not pkt:
            break
        i = draw(st.integers(0, len(pkt) - 1))
        if kind == "flip":
            pkt[i] ^= 1 << draw(st.integers(0, 7))
        elif kind == "byte":
            pkt[i] = draw(st.integers(0, 255))
        else:
            del pkt[i:]
    return (six_in_four(bytes(pkt)) if tunnelled else eth(bytes(pkt))), tunnelled


def counters(h: Host) -> dict[str, int]:
    out = {f"drop:{k}": v for k, v in h.drops().items()}
    out.update({k: v for k, v in h.nstat().items() if k.startswith(("Ip6In", "IpIn"))})
    for dev in ("eth0", "sit1", "sit0"):
        s = h.dev(dev).statistics()
        out[f"{dev}:rx"] = s.rx_packets + s.rx_errors + s.rx_dropped + s.rx_length_errors
    return out


def check_reply(frame: bytes) -> None:
    e = dpkt.ethernet.Ethernet(frame)
    if e.type == 0x0800:  # 6in4 back to the tunnel peer, or an IPv4 ICMP error
        ip = e.data
        assert isinstance(ip, dpkt.ip.IP)
        raw = bytes(ip)
        assert ip_fast_csum(raw, 0, 20) == 0
        if ip.p != 41:
            return
        inner = bytes(ip.data)
    elif e.type == 0x86DD:
        inner = bytes(e.data)
    else:
        return
    p = dpkt.ip6.IP6(inner)
    payload = inner[40:]
    if p.nxt == 58:
        src = int.from_bytes(inner[8:24], "big")
        dst = int.from_bytes(inner[24:40], "big")
        s = csum_ipv6_magic(src, dst, len(payload), 58, csum_partial(payload, 0, len(payload), 0))
        assert s == 0, inner.hex()
        if payload[0] < 128 and len(payload) >= 48 and inner[40 + 8 + 6] == 58:
            # an error quoting an ICMPv6 packet: only about an informational message
            assert payload[8 + 40] >= 128, inner.hex()


@FUZZ
@given(
    rx_csum=st.sampled_from(["unnecessary", "complete", "none"]),
    batch=st.lists(frames(), min_size=1, max_size=6),
)
@pytest.mark.slow
def test_ipv6_and_sit_receive_survive_fuzzed_frames(
    rx_csum: RxCsumMode, batch: list[tuple[bytes, bool]]
) -> None:
    async def main() -> None:
        async with open_lab(debug_skb=True) as lab:
            h = lab.add_host("h")
            port = lab.add_port("h:eth0", rx_csum=rx_csum, up=False)
            h.ip("link set eth0 address 02:00:00:00:00:01 up")
            h.ip("addr add 192.0.2.1/24 dev eth0")
            h.ip("-6 addr add 2001:db8::1/64 dev eth0 nodad")
            h.ip("neigh add 192.0.2.2 lladdr 02:00:00:00:00:02 dev eth0 nud permanent")
            h.ip("-6 neigh add 2001:db8::2 lladdr 02:00:00:00:00:02 dev eth0 nud permanent")
            h.ip("link add sit1 type sit remote 192.0.2.2 local 192.0.2.1")
            h.ip("link set sit1 up")
            h.ip("-6 addr add 2001:db8:5::1/64 dev sit1")
            sock = h.socket(AF_INET6)
            await sock.bind(("::", 5000))
            await trio.sleep(0.01)
            port.drain()
            for frame, _tunnelled in batch:
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
            await trio.sleep(61)  # reassembly queues time out
            port.drain()
            # still alive: ping6 on eth0 is answered, UDP through sit1 is delivered
            await port.send(eth(base_packets(PEER6, H6)[1]))
            await port.send(
                six_in_four(ip6(PEER6_SIT, H6_SIT, 17, udp(PEER6_SIT, H6_SIT, 5000, b"alive")))
            )
            with trio.fail_after(1):
                while True:
                    data, _ = await sock.recvfrom(100)
                    if data == b"alive":
                        break
            await trio.sleep(0.01)
            replies = [dpkt.ethernet.Ethernet(f) for f in port.drain()]
            assert any(
                isinstance(r.data, dpkt.ip6.IP6)
                and isinstance(r.data.data, dpkt.icmp6.ICMP6)
                and r.data.data.type == 129
                for r in replies
            )

    run(main)
