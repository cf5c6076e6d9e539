"""A million frames of each flood kind into one host: the tables and the heap stay bounded.

    python benchmarks/floods.py [--frames 1000000] [--kinds frag,syn,arp,ptb,...]

Kinds: frag, frag6, syn, syn6, arp, nd, icmp, unreach, ptb, fnhe (all by default).

For each kind a fresh host (10.0.0.2/16, 2001:db8::2/64, default routes,
a TCP listener with backlog 128 and a UDP socket) takes ``--frames`` frames
through a Port; every 10 % of the flood it prints the size of the table the
flood grows, the heap the Python allocator holds (``sys.getallocatedblocks``
and, at the end, ``tracemalloc`` over a last 1 % of the flood: what that
slice left on the heap) and the frames per second of wall time. The bounds
(docs/robustness.md): reassembly memory <= ipfrag_high_thresh (4 MB), the SYN
queue <= backlog + 1, neighbours <= gc_thresh3 (1024), IPv6 route
exceptions <= 1024 x 9 and IPv4 next-hop exceptions <= 2048 x 10 per
nexthop, inetpeers <= inet_peer_threshold (65,664).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import trio

import netstack
from netstack.host import Host, Port
from netstack.ipv4 import ipv4_of
from netstack.ipv6.af_inet6 import ipv6_of
from netstack.socket import AF_INET, AF_INET6, SOCK_DGRAM, SOCK_STREAM
from netstack.tcp import TcpSock, tcp_of
from netstack.testing import floods
from netstack.wire.ipv4 import aton
from netstack.wire.ipv6 import aton as aton6

PEER_MAC = bytes.fromhex("020000000001")
H4, H6 = aton("10.0.0.2"), aton6("2001:db8::2")
GW4, GW6 = aton("10.0.0.1"), aton6("2001:db8::1")


async def rig(lab: Any) -> tuple[Host, Port, Any]:
    h = lab.add_host("h")
    port = lab.add_port("h:eth0")
    for cmd in (
        "addr add 10.0.0.2/16 dev eth0",
        "route add default via 10.0.0.1",
        "neigh add 10.0.0.1 lladdr 02:00:00:00:00:01 dev eth0",
        "-6 addr add 2001:db8::2/64 dev eth0 nodad",
        "-6 route add default via 2001:db8::1",
        "-6 neigh add 2001:db8::1 lladdr 02:00:00:00:00:01 dev eth0",
    ):
        h.ip(cmd)
    keep = []
    for fam, addr in ((AF_INET, "0.0.0.0"), (AF_INET6, "::")):
        udp = h.socket(fam, SOCK_DGRAM)
        if fam == AF_INET6:
            udp.setsockopt(41, 26, 1)  # IPV6_V6ONLY
        await udp.bind((addr, 5000))
        srv = h.socket(fam, SOCK_STREAM)
        if fam == AF_INET6:
            srv.setsockopt(41, 26, 1)
        await srv.bind((addr, 7000))
        srv.listen(128)
        keep += [udp, srv]
    await trio.sleep(1)
    return h, port, keep


def kinds(h: Host, n: int) -> dict[str, tuple[Iterator[bytes], Callable[[], int], str]]:
    mac = bytes(h.dev("eth0").dev_addr)
    ipv4, ipv6 = ipv4_of(h.net), ipv6_of(h.net)

    def synq() -> int:
        return sum(s.syn_queue_len for s in tcp_of(h.net).sockets if isinstance(s, TcpSock))

    def fib6_ex() -> int:
        return sum(len(f.nh.exceptions) for f in ipv6.fib6.routes())

    def fnhe() -> int:
        res = ipv4.fib.lookup(aton("10.77.0.1"))
        return len(res.nh.exceptions) if res is not None and res.nh is not None else 0

    return {
        "frag": (
            floods.frag_flood(n, mac, PEER_MAC, aton("10.0.0.0"), H4),
            lambda: ipv4.frags.mem,
            f"reassembly bytes <= ipfrag_high_thresh {ipv4.ipfrag_high_thresh}",
        ),
        "frag6": (
            floods.frag_flood6(n, mac, PEER_MAC, aton6("2001:db8::"), H6),
            lambda: ipv6.frags.mem,
            f"reassembly bytes <= ip6frag_high_thresh {ipv6.ip6frag_high_thresh}",
        ),
        "syn": (
            floods.syn_flood(n, mac, PEER_MAC, aton("198.18.0.0"), H4, 7000),
            synq,
            "SYN queue <= backlog + 1 = 129",
        ),
        "syn6": (
            floods.syn_flood6(n, mac, PEER_MAC, aton6("2001:db8:99::"), H6, 7000),
            synq,
            "SYN queue <= backlog + 1 = 129",
        ),
        "arp": (
            floods.arp_flood(n, aton("10.0.0.0"), H4),
            lambda: len(ipv4.arp_tbl.hash),
            f"neighbours <= gc_thresh3 {ipv4.arp_tbl.gc_thresh3}",
        ),
        "nd": (
            floods.nd_flood(n, aton6("2001:db8::"), H6),
            lambda: len(ipv6.nd_tbl.hash),
            f"neighbours <= gc_thresh3 {ipv6.nd_tbl.gc_thresh3}",
        ),
        "icmp": (
            floods.icmp_err_flood(n, mac, PEER_MAC, aton("198.18.0.0"), H4),
            lambda: len(ipv4.peers),
            "no state (inetpeers 0)",
        ),
        "unreach": (
            # UDP to a closed port from new sources: port unreachables, one inetpeer each
            (
                floods.eth(mac, PEER_MAC, 0x0800, floods.udp4(src, H4, 1000, 9, b"x"))
                for src in (
                    aton("198.18.0.0") | (i % 65536) | ((i // 65536) << 16) for i in range(n)
                )
            ),
            lambda: len(ipv4.peers),
            "inetpeers <= inet_peer_threshold 65664",
        ),
        "ptb": (
            floods.ptb_flood(n, mac, PEER_MAC, GW6, H6, aton6("2001:db8:77::"), 5000),
            fib6_ex,
            "IPv6 route exceptions <= 1024 x 9 = 9216",
        ),
        "fnhe": (
            floods.frag_needed_flood(n, mac, PEER_MAC, GW4, H4, aton("10.77.0.0"), 5000),
            fnhe,
            "IPv4 next-hop exceptions <= 2048 x 10 = 20480",
        ),
    }


async def one(kind: str, n: int) -> None:
    async with netstack.open_lab() as lab:
        h, port, _keep = await rig(lab)
        if kind == "unreach":
            h.sysctl("net.ipv4.icmp_msgs_per_sec=1000000")
            h.sysctl("net.ipv4.icmp_msgs_burst=1000000")
        frames, size, bound = kinds(h, n)[kind]
        print(f"{kind}: {n} frames; bound: {bound}")
        print("  frames     table   Mblocks   frames/s")
        step = max(n // 10, 1)
        t0 = time.perf_counter()
        traced_from = n - max(n // 100, 1)
        peak = 0
        for i, frame in enumerate(frames):
            if i == traced_from:
                gc.collect()
                tracemalloc.start()
            port.send_nowait(frame)
            if i % 64 == 63:
                await trio.sleep(0.001)
                port.drain()
            if (i + 1) % step == 0:
                await trio.sleep(0.001)
                peak = max(peak, size())
                rate = (i + 1) / (time.perf_counter() - t0)
                print(
                    f"  {i + 1:7d} {size():9d} {sys.getallocatedblocks() / 1e6:9.3f} {rate:10.0f}",
                    flush=True,
                )
        await trio.sleep(0.01)
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0
        tracemalloc.stop()
        print(f"  peak table {peak}; the last 1 % of the flood left {kept / 1024:.0f} KiB")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--frames", type=int, default=1_000_000)
    p.add_argument("--kinds", default="frag,frag6,syn,syn6,arp,nd,icmp,unreach,ptb,fnhe")
    args = p.parse_args()
    for kind in args.kinds.split(","):
        netstack.run(one, kind, args.frames)


if __name__ == "__main__":
    main()
