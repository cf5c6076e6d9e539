"""inet_gro_receive's ip_fast_csum as a sum of the header's five 32-bit words."""

from __future__ import annotations

import random
import struct

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
