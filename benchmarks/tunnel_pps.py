"""One-way UDP through a tunnel (GRE, GRE with key+csum+seq, IPIP) between two hosts.

Same shape as udp_pps.py (200-byte payload, sendmmsg/recvmmsg of 64), with the
datagrams encapsulated on ``a``'s tunnel and decapsulated on ``b``'s. Prints
packets per second of wall time for each tunnel kind, and how many times the
tunnel's tx queue lock (HARD_TX_LOCK) was taken — zero with LLTX.

    python benchmarks/tunnel_pps.py [--packets N] [--profile KIND]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import trio

import netstack

PAYLOAD = b"\x5a" * 200
KINDS = {
    "gre": "type gre",
    "gre-key-csum-seq": "type gre key 7 csum seq",
    "ipip": "type ipip",
}


async def run_once(kind: str, packets: int, batch: int) -> tuple[float, int, int]:
    async with netstack.open_lab() as lab:
        a, b = lab.add_host("a"), lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0")
        a.ip("addr add 192.0.2.1/24 dev eth0")
        b.ip("addr add 192.0.2.2/24 dev eth0")
        for h, local, remote, addr in (
            (a, "192.0.2.1", "192.0.2.2", "10.9.0.1/30"),
            (b, "192.0.2.2", "192.0.2.1", "10.9.0.2/30"),
        ):
            h.ip(f"link add t1 {KINDS[kind]} remote {remote} local {local}")
            h.ip("link set t1 up")
            h.ip(f"addr add {addr} dev t1")
        rx = b.socket()
        await rx.bind(("0.0.0.0", 9000))
        tx = a.socket()
        await tx.connect(("10.9.0.2", 9000))
        await tx.send(PAYLOAD)  # ARP on the underlay, routes and neighbours warm up
        await rx.recv(2048)
        received = 0

        async def receiver() -> None:
            nonlocal received
            while received < packets:
                received += len(await rx.recvmmsg(2048, batch))

        start = time.perf_counter()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(receiver)
            sent = 0
            msgs = [(PAYLOAD, None)] * batch
            while sent < packets:
                sent += await tx.sendmmsg(msgs[: min(batch, packets - sent)])
        elapsed = time.perf_counter() - start
        lock = a.dev("t1").tx_queues[0]._xmit_lock.acquisitions
        drops = a.dev("eth0").statistics().tx_dropped + b.snmp()["Udp"].RcvbufErrors
        return elapsed, lock, drops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=50_000)
    parser.add_argument("--profile", choices=sorted(KINDS), help="cProfile one kind")
    args = parser.parse_args()
    for kind in KINDS:
        if args.profile == kind:
            prof = cProfile.Profile()
            prof.enable()
        elapsed, lock, drops = netstack.run(run_once, kind, args.packets, 64)
        if args.profile == kind:
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        print(
            f"UDP 200 B over {kind:17s}: {args.packets:7d} packets in {elapsed:6.2f} s "
            f"= {args.packets / elapsed:8,.0f} packets/s ({1e6 * elapsed / args.packets:5.1f} "
            f"µs/packet), HARD_TX_LOCK taken {lock} times, {drops} dropped"
        )


if __name__ == "__main__":
    main()
