"""One-way UDP between two hosts over veth, socket to socket, in functional mode.

Prints packets per second of wall time for a 200-byte payload, with batched
calls (``sendmmsg``/``recvmmsg``, 64 datagrams per call: one Trio checkpoint per
batch) and with one datagram per call, each also per second of CPU time (the
figure to compare on a loaded machine). The issue's target: at least 150,000
packets/s on one core, i.e. at most 45,000 instructions per packet.

    python benchmarks/udp_pps.py [--packets N] [--batch B] [--profile] [--callgrind]

``--callgrind`` runs the batched benchmark twice under ``valgrind
--tool=callgrind`` (``PYTHONHASHSEED=0``), with 0 and with ``--packets``
datagrams (1,280 by default in that mode), and prints the difference of the
two instruction counts per packet: start-up cancels, and the machine's load
does not move the figure.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import re
import subprocess
import sys
import time

import trio

import netstack

PAYLOAD = b"\x5a" * 200


async def run_once(packets: int, batch: int) -> tuple[float, float, int]:
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

        start, cpu_start = time.perf_counter(), time.process_time()
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
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        drops = a.dev("eth0").statistics().tx_dropped + b.snmp()["Udp"].RcvbufErrors
        return elapsed, cpu, drops


def callgrind_instructions(packets: int, batch: int) -> int:
    """Instructions of one batched run of *packets* datagrams under callgrind."""
    cmd = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        __file__,
        "--packets",
        str(packets),
        "--batch",
        str(batch),
        "--batched-only",
    ]
    env = dict(os.environ, PYTHONHASHSEED="0")
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stderr
    match = re.search(r"Collected : (\d+)", out)
    if match is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{out}")
    return int(match.group(1))


def callgrind(packets: int, batch: int) -> None:
    base = callgrind_instructions(0, batch)
    total = callgrind_instructions(packets, batch)
    print(
        f"UDP 200 B over veth, batch {batch:3d}: {(total - base) / packets:,.0f} instructions "
        f"per packet (callgrind, {packets} packets less 0)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--profile", action="store_true", help="print a cProfile summary")
    parser.add_argument(
        "--callgrind", action="store_true", help="instructions per packet under callgrind"
    )
    parser.add_argument("--batched-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.callgrind:
        packets = args.packets if args.packets != parser.get_default("packets") else 1280
        callgrind(packets, args.batch)
        return
    for batch in (args.batch, 1) if not args.batched_only else (args.batch,):
        n = args.packets if batch > 1 else max(args.packets // 10, 1000)
        if args.profile and batch > 1:
            prof = cProfile.Profile()
            prof.enable()
        elapsed, cpu, drops = netstack.run(run_once, n, batch)
        if args.profile and batch > 1:
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        if n == 0:
            continue
        print(
            f"UDP 200 B over veth, batch {batch:3d}: {n:8d} packets in {elapsed:6.2f} s "
            f"= {n / elapsed:10,.0f} packets/s  ({1e6 * elapsed / n:5.2f} µs/packet, "
            f"{drops} dropped); CPU {cpu:6.2f} s = {n / cpu:10,.0f} packets/s"
        )


if __name__ == "__main__":
    main()
