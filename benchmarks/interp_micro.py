"""The data path's hot built-in operations, on any Python ≥ 3.9 (CPython or PyPy).

A standalone script (it imports nothing of netstack, and its syntax is 3.9's,
so Debian's PyPy 3.9 runs it) timing the operations the UDP and TCP paths
spend their time in: the IPv4 header checksum and ``csum_partial`` as
:mod:`netstack.wire.checksum` computes them, an skb-like allocation of a
slotted object with two dozen fields, ``struct.pack_into`` of an IPv4 header,
a chain of small calls (the per-kernel-function cost), ``memoryview.cast``
of a send buffer, ``b"".join`` of a 64 KB receive queue's memoryviews and a
1448-byte copy into a ``bytearray`` and ``tcp_sendmsg``'s appends of a 64 KB
send to a ``bytearray``, from a ``memoryview.cast("B")`` (as the socket layer
passes it) and from ``bytes`` slices. Each is warmed up first (PyPy's JIT) and
then timed for at least ``--seconds`` of CPU time (``time.process_time``: the
machine may be shared); it prints nanoseconds of CPU per operation.

    python benchmarks/interp_micro.py [--seconds S]
    pypy3 benchmarks/interp_micro.py

The figures for CPython 3.11 and PyPy 3.9 are in docs/performance.md
("Compilation and alternative interpreters").
"""

from __future__ import annotations

import argparse
import platform
import struct
import sys
import time
from collections.abc import Callable
from typing import Any

HDR = bytearray(b"\x45\x00\x00\xe4\x12\x34\x40\x00\x40\x11\x00\x00\x0a\x00\x00\x01\x0a\x00\x00\x02")
PAYLOAD = bytearray(b"\x5a" * 200)
IPH = struct.Struct("!BBHHHBBH4s4s")
BUF = bytearray(2048)
STREAM = bytearray(64 * 1024)
SEGMENT = bytes(1448)


def ip_fast_csum(buf: bytearray, off: int, hlen: int) -> int:
    n = int.from_bytes(buf[off : off + hlen], "big")
    s = n % 0xFFFF
    if s == 0 and n:
        return 0
    return ~s & 0xFFFF


def csum_partial(buf: bytearray, start: int, end: int, initial: int = 0) -> int:
    length = end - start
    n = int.from_bytes(memoryview(buf)[start:end], "big")
    if length & 1:
        n <<= 8
    s = n % 0xFFFF
    if s == 0 and n:
        s = 0xFFFF
    if initial:
        s += initial
        s = (s & 0xFFFF) + (s >> 16)
        s = (s & 0xFFFF) + (s >> 16)
    return s


class Skb:
    __slots__ = [
        "buf",
        "cb",
        "csum_offset",
        "csum_start",
        "data",
        "dataref",
        "destructor",
        "dev",
        "dst",
        "freed",
        "gso_size",
        "ignore_df",
        "ip_summed",
        "mac_header",
        "network_header",
        "next",
        "pkt_type",
        "priority",
        "protocol",
        "queue_mapping",
        "rmem_charge",
        "sk",
        "skb_iif",
        "tail",
        "transport_header",
        "wmem_charge",
    ]

    def __init__(self, buf: bytearray, data: int, tail: int) -> None:
        self.buf = buf
        self.data = data
        self.tail = tail
        self.dev: Any = None
        self.sk: Any = None
        self.dst: Any = None
        self.next: Any = None
        self.protocol = 0
        self.pkt_type = 0
        self.mac_header = -1
        self.network_header = -1
        self.transport_header = -1
        self.ip_summed = 0
        self.csum_start = 0
        self.csum_offset = 0
        self.priority = 0
        self.freed = False
        self.dataref: Any = None
        self.cb: Any = None
        self.queue_mapping = 0
        self.skb_iif = 0
        self.gso_size = 0
        self.ignore_df = False
        self.destructor: Any = None
        self.wmem_charge = 0
        self.rmem_charge = 0


def alloc_skb() -> Skb:
    skb = Skb(bytearray(384), 128, 128)
    skb.data -= 20  # skb_push of an IPv4 header
    skb.network_header = skb.data
    return skb


def pack_iph() -> None:
    IPH.pack_into(BUF, 128, 0x45, 0, 228, 0x1234, 0x4000, 64, 17, 0, b"\n\0\0\1", b"\n\0\0\2")


def _f5(skb: Skb) -> int:
    return skb.tail - skb.data


def _f4(skb: Skb) -> int:
    return _f5(skb) + 1


def _f3(skb: Skb) -> int:
    return _f4(skb) + 1


def _f2(skb: Skb) -> int:
    return _f3(skb) + 1


_SKB = Skb(bytearray(384), 128, 356)


def call_chain() -> int:
    """Five nested calls reading two fields: what a packet pays per kernel function."""
    return _f2(_SKB) + 1


def cast_view() -> int:
    return len(memoryview(SEGMENT).cast("B")[100:])


_VIEWS = [memoryview(STREAM)[i : i + 1448] for i in range(0, 45 * 1448, 1448)]


def join_views() -> int:
    return len(b"".join(_VIEWS))


def copy_segment() -> None:
    BUF[128 : 128 + 1448] = SEGMENT


_SEND = bytes(45 * 1448)


def append_cast_view() -> None:
    """tcp_sendmsg's copy of one 64 KB send into skbs, from the socket layer's cast view."""
    buf = bytearray(320)
    mv = memoryview(_SEND).cast("B")
    for i in range(0, 45 * 1448, 1448):
        buf += mv[i : i + 1448]


def append_bytes() -> None:
    """The same from slices of the bytes object."""
    buf = bytearray(320)
    for i in range(0, 45 * 1448, 1448):
        buf += _SEND[i : i + 1448]


CASES: list[tuple[str, Callable[[], object]]] = [
    ("ip_fast_csum, 20-byte header", lambda: ip_fast_csum(HDR, 0, 20)),
    ("csum_partial, 200 bytes", lambda: csum_partial(PAYLOAD, 0, 200)),
    ("skb-like allocation (26 slots) and push", alloc_skb),
    ("struct.pack_into, IPv4 header", pack_iph),
    ("5 nested calls reading 2 fields", call_chain),
    ("memoryview(bytes).cast('B')[100:]", cast_view),
    ('b"".join of 45 memoryviews of 1448 B', join_views),
    ("bytearray slice assignment, 1448 B", copy_segment),
    ("bytearray += memoryview.cast('B') slices, 45 x 1448 B", append_cast_view),
    ("bytearray += bytes slices, 45 x 1448 B", append_bytes),
]


def measure(fn: Callable[[], object], seconds: float) -> float:
    """Nanoseconds per call of *fn*, after a warm-up long enough for a JIT."""
    n = 1000
    end = time.process_time() + seconds / 2
    while time.process_time() < end:  # warm-up
        for _ in range(n):
            fn()
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        count = 0
        while True:
            for _ in range(n):
                fn()
            count += n
            elapsed = time.process_time() - start
            if elapsed >= seconds / 10:
                break
        best = min(best, elapsed / count * 1e9)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()
    print(f"{platform.python_implementation()} {sys.version.split()[0]} (best of 5, ns per op)")
    for name, fn in CASES:
        print(f"{measure(fn, args.seconds):10.1f}  {name}")


if __name__ == "__main__":
    main()
