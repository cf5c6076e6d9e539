"""One-way UDP between two hosts over veth, socket to socket, in functional mode.

Prints packets per second of wall time for a 200-byte payload, with batched
calls (``sendmmsg``/``recvmmsg``, 64 datagrams per call: one Trio checkpoint per
batch) and with one datagram per call. The issue's target: at least 100,000
packets/s on one core.

    python benchmarks/udp_pps.py [--packets N] [--batch B] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import trio

import netstack

PAYLOAD = b"\x5a" * 200


async def run_once(packets: int, batch: int) -> tuple[float, int]:
    async with netstack.open_lab() as lab:
        a, b = lab.add_host("a"), lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0")
        a.ip("addr add 10.0.0.1/24 dev eth0")
        b.ip("addr add 10.0.0.2/24 dev eth0")
        rx = b.socket()
        await rx.bind(("0.0.0.0", 9000))
        tx = a.socket()
        await tx.connect(("10.0.0.2", 9000))
        await tx.send(PAYLOAD)  # ARP, route and neighbour warm-up
        await rx.recv(2048)
        received = 0

        async def receiver() -> None:
            nonlocal received
            while received < packets:
                if batch > 1:
                    received += len(await rx.recvmmsg(2048, batch))
                else:
                    await rx.recv(2048)
                    received += 1

        start = time.perf_counter()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(receiver)
            sent = 0
            if batch > 1:
                msgs = [(PAYLOAD, None)] * batch
                while sent < packets:
                    sent += await tx.sendmmsg(msgs[: min(batch, packets - sent)])
            else:
                while sent < packets:
                    await tx.send(PAYLOAD)
                    sent += 1
        elapsed = time.perf_counter() - start
        drops = a.dev("eth0").statistics().tx_dropped + b.snmp()["Udp"].RcvbufErrors
        return elapsed, drops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--profile", action="store_true", help="print a cProfile summary")
    args = parser.parse_args()
    for batch in (args.batch, 1):
        n = args.packets if batch > 1 else max(args.packets // 10, 1000)
        if args.profile and batch > 1:
            prof = cProfile.Profile()
            prof.enable()
        elapsed, drops = netstack.run(run_once, n, batch)
        if args.profile and batch > 1:
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        print(
            f"UDP 200 B over veth, batch {batch:3d}: {n:8d} packets in {elapsed:6.2f} s "
            f"= {n / elapsed:10,.0f} packets/s  ({1e6 * elapsed / n:5.2f} µs/packet, "
            f"{drops} dropped)"
        )


if __name__ == "__main__":
    main()
