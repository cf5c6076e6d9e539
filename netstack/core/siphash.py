"""SipHash-2-4, the keyed 64-bit hash the kernel uses for cookies and hash tables.

Theory of operation: the reference algorithm of Aumasson and Bernstein
(2012) over Python ints: the 128-bit key is two little-endian 64-bit words
``k0``/``k1``, the message is read as little-endian 64-bit words with the
last word padded by the length byte, two SipRounds per word and four to
finalise. :func:`siphash` returns the 64-bit result as an int (the
reference's output read as a little-endian word), so ``siphash(...)
.to_bytes(8, "little")`` is the reference output and the kernel's
``cpu_to_le64(siphash(...))``. Python's stdlib keeps its SipHash for
``hash()`` with a per-process key; this one takes any key, as TCP Fast
Open's ``tcp_fastopen_key`` needs for cookies that match a real kernel's.

Pure: no state. Kernel: lib/siphash.c (siphash(), __siphash_aligned()),
include/linux/siphash.h (siphash_key_t).
"""

from __future__ import annotations

import struct
from typing import Final

from netstack.sites import kernel

__all__ = ["siphash", "siphash_key"]

_M64: Final = 0xFFFFFFFFFFFFFFFF
_Q: Final = struct.Struct("<Q")
_QQ: Final = struct.Struct("<QQ")


def siphash_key(key: bytes) -> tuple[int, int]:
    """``siphash_key_t`` from 16 key bytes: two little-endian 64-bit words."""
    if len(key) != 16:
        raise ValueError("a SipHash key is 16 bytes")
    k0, k1 = _QQ.unpack(key)
    return k0, k1


def _sipround(v0: int, v1: int, v2: int, v3: int, rounds: int) -> tuple[int, int, int, int]:
    """*rounds* SIPROUNDs (include/linux/siphash.h's SIPHASH_PERMUTATION)."""
    for _ in range(rounds):
        v0 = (v0 + v1) & _M64
        v1 = ((v1 << 13) | (v1 >> 51)) & _M64
        v1 ^= v0
        v0 = ((v0 << 32) | (v0 >> 32)) & _M64
        v2 = (v2 + v3) & _M64
        v3 = ((v3 << 16) | (v3 >> 48)) & _M64
        v3 ^= v2
        v0 = (v0 + v3) & _M64
        v3 = ((v3 << 21) | (v3 >> 43)) & _M64
        v3 ^= v0
        v2 = (v2 + v1) & _M64
        v1 = ((v1 << 17) | (v1 >> 47)) & _M64
        v1 ^= v2
        v2 = ((v2 << 32) | (v2 >> 32)) & _M64
    return v0, v1, v2, v3


@kernel("lib/siphash.c", "siphash")
def siphash(data: bytes | bytearray | memoryview, key: tuple[int, int]) -> int:
    """SipHash-2-4 of *data* under *key* (``siphash_key``), as a 64-bit int.

    Kernel: lib/siphash.c, siphash() (__siphash_aligned / __siphash_unaligned).
    """
    k0, k1 = key
    v0 = k0 ^ 0x736F6D6570736575
    v1 = k1 ^ 0x646F72616E646F6D
    v2 = k0 ^ 0x6C7967656E657261
    v3 = k1 ^ 0x7465646279746573
    buf = bytes(data)
    n = len(buf)
    end = n - (n % 8)
    last = (n & 0xFF) << 56
    tail = buf[end:]
    for i, b in enumerate(tail):
        last |= b << (8 * i)
    words = [_Q.unpack_from(buf, off)[0] for off in range(0, end, 8)]
    words.append(last)
    for m in words:
        v3 ^= m
        v0, v1, v2, v3 = _sipround(v0, v1, v2, v3, 2)  # c = 2 compression rounds
        v0 ^= m
    v2 ^= 0xFF
    v0, v1, v2, v3 = _sipround(v0, v1, v2, v3, 4)  # d = 4 finalisation rounds
    return v0 ^ v1 ^ v2 ^ v3
