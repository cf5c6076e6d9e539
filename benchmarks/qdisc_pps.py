"""One-way UDP over veth through each root qdisc, in functional mode.

Prints packets per second of wall time (and the cost per packet over
``noqueue``) for a 200-byte payload sent with ``sendmmsg`` in batches of 64,
the receiver draining with ``recvmmsg``: what enqueue, dequeue and the qdisc
run loop cost per packet for each discipline. The sender paces itself in
virtual time (6.2 Gbit/s) under tbf's 10 Gbit/s, so neither tbf nor netem's
limit drops anything; tbf and netem pay for their watchdog (an hrtimer, then
NET_TX) on top of the queueing. Prints only; asserts nothing.

    python benchmarks/qdisc_pps.py [--packets N]
"""

from __future__ import annotations

import argparse
import time

import trio

import netstack

PAYLOAD = b"\x5a" * 200
QDISCS = (
    "noqueue",
    "pfifo_fast",
    "pfifo limit 10000",
    "prio",
    "fq_codel",
    "tbf rate 10gbit burst 1mb limit 10mb",
    "netem limit 10000",
    "netem delay 1ms 100us loss 0.1% limit 10000",
)


async def run_once(qdisc: str, packets: int, batch: int = 64) -> tuple[float, int]:
    async with netstack.open_lab() as lab:
        a, b = lab.add_host("a"), lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0")
        a.ip("addr add 10.0.0.1/24 dev eth0")
        b.ip("addr add 10.0.0.2/24 dev eth0")
        if qdisc != "noqueue":
            a.tc(f"qdisc add dev eth0 root handle 1: {qdisc}")
        rx = b.socket()
        await rx.bind(("0.0.0.0", 9000))
        tx = a.socket()
        await tx.connect(("10.0.0.2", 9000))
        await tx.send(PAYLOAD)  # ARP, route and neighbour warm-up
        await rx.recv(2048)
        received = 0

        async def receiver() -> None:
            nonlocal received
            while True:
                received += len(await rx.recvmmsg(2048, batch))

        start = time.perf_counter()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(receiver)
            msgs = [(PAYLOAD, None)] * batch
            sent = 0
            while sent < packets:
                sent += await tx.sendmmsg(msgs[: min(batch, packets - sent)])
                await trio.sleep(20e-6)  # virtual: 64 x 242 B every 20 µs = 6.2 Gbit/s
            await trio.sleep(0.1)  # netem's delay: let the last ones arrive
            nursery.cancel_scope.cancel()
        elapsed = time.perf_counter() - start
        return elapsed, received


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=50_000)
    args = parser.parse_args()
    netstack.run(run_once, "noqueue", 2000)  # warm-up
    base = 0.0
    for qdisc in QDISCS:
        elapsed, received = netstack.run(run_once, qdisc, args.packets)
        per = 1e6 * elapsed / args.packets
        base = base or per
        print(
            f"{qdisc:45s} {args.packets / elapsed:9,.0f} packets/s  {per:6.2f} µs/packet"
            f"  (+{per - base:5.2f} over noqueue)  {received} received"
        )


if __name__ == "__main__":
    main()
