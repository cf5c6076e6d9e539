"""The UDP stream the per-packet benchmarks share.

Host ``a`` sends *packets* 200-byte datagrams to ``dst`` port 9000 on host
``b``, after one datagram that warms ARP, routes, neighbours and FDBs up;
``b`` reads them in another task. With *batch* > 1 both ends use
``sendmmsg``/``recvmmsg`` of *batch* datagrams (one Trio checkpoint per
batch), with 1 one ``send``/``recv`` per datagram. ``udp_pps.py``,
``router_hop.py``, ``tunnel_pps.py`` and ``bridge_pps.py`` differ only in the
lab around it.
"""

from __future__ import annotations

import os
import subprocess
import time

import trio

import netstack

PAYLOAD = b"\x5a" * 200
BATCH = 64


def callgrind_instrumentation(on: bool) -> None:
    """Switch callgrind's counting of this process on or off (``callgrind_control -i``).

    For a run under ``valgrind --tool=callgrind --instr-atstart=no``: only
    what runs between on and off is counted.
    """
    subprocess.run(
        ["callgrind_control", "-i", "on" if on else "off", str(os.getpid())],
        check=True,
        capture_output=True,
    )


async def udp_stream(
    a: netstack.Host,
    b: netstack.Host,
    dst: str,
    packets: int,
    batch: int = BATCH,
    *,
    instrument: bool = False,
) -> tuple[float, float]:
    """Run the stream; return its wall-clock and CPU seconds (the warm-up excluded).

    With *instrument* (a run under callgrind with ``--instr-atstart=no``), a
    batch more warms the interpreter's specialised instructions up and
    callgrind counts the stream alone.
    """
    rx = b.socket()
    await rx.bind(("0.0.0.0", 9000))
    tx = a.socket()
    await tx.connect((dst, 9000))
    await tx.send(PAYLOAD)  # ARP, FDB learning, routes and neighbours warm up
    await rx.recv(2048)
    if instrument:
        if batch > 1:
            await tx.sendmmsg([(PAYLOAD, None)] * batch)
            warm = 0
            while warm < batch:
                warm += len(await rx.recvmmsg(2048, batch))
        callgrind_instrumentation(True)
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
    if instrument:
        callgrind_instrumentation(False)
    return elapsed, cpu
