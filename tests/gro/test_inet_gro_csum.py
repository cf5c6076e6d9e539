"""inet_gro_receive's ip_fast_csum as a sum of the header's five 32-bit words."""

from __future__ import annotations

import random
import struct

import dpkt
import trio.testing

from netstack.core.skbuff import SkBuff
from netstack.gro.core import NapiGroCb
from netstack.host import Lab
from netstack.ipv4 import ipv4_of
from netstack.ipv4.offload import inet_gro_receive
from netstack.wire.checksum import ip_fast_csum


def _words_valid(hdr: bytes) -> bool:
    """The test inet_gro_receive makes: the words' sum a non-zero multiple of 0xFFFF."""
    n = sum(struct.unpack("!5I", hdr))
    return not (n % 0xFFFF or not n)


def test_the_sum_of_words_accepts_exactly_the_headers_whose_checksum_is_right() -> None:
    rng = random.Random(18)
    for i in range(20_000):
        hdr = bytearray(rng.randbytes(20))
        if i % 2:  # a right checksum half the time, then perhaps one bit wrong
            hdr[10:12] = b"\0\0"
            hdr[10:12] = struct.pack("!H", ip_fast_csum(hdr, 0, 20))
            if i % 4 == 3:
                bit = rng.randrange(160)
                hdr[bit // 8] ^= 1 << (bit % 8)
        assert _words_valid(bytes(hdr)) == (ip_fast_csum(hdr, 0, 20) == 0), hdr.hex()
    assert not _words_valid(bytes(20))  # all zeros: not a valid header
    ones = b"\xff" * 20  # every word 0xFFFFFFFF: sums to a multiple of 0xFFFF
    assert _words_valid(ones) == (ip_fast_csum(bytearray(ones), 0, 20) == 0)


async def test_inet_gro_receive_flushes_a_header_whose_checksum_is_wrong(
    autojump_clock: trio.testing.MockClock, lab: Lab
) -> None:
    """The code itself, not the formula above: one bit of the checksum wrong and the
    skb is flushed before skb_gro_pull(); right, it is pulled (and goes on to UDP's
    GRO, which flushes it for want of a GRO socket)."""
    ipv4 = ipv4_of(lab.add_host("a").net)
    for bad in (False, True):
        udp = dpkt.udp.UDP(sport=4000, dport=9000, data=b"x" * 40)
        udp.ulen = len(bytes(udp))
        ip = dpkt.ip.IP(src=bytes([10, 0, 0, 1]), dst=bytes([10, 0, 0, 2]), p=17, ttl=64, data=udp)
        raw = bytearray(bytes(ip))
        if bad:
            raw[10] ^= 0x01
        skb = SkBuff(raw, 0, len(raw))
        skb.network_header = 0
        cb = NapiGroCb(0)
        skb.cb = cb
        inet_gro_receive(ipv4, [], skb)
        assert (cb.off == 0) is bad, bad
        assert cb.flush or not bad
