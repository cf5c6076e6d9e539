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
from netstack.socket import SO_RCVBUF, SOL_SOCKET

PAYLOAD = b"\x5a" * 200
BATCH = 64
RCVBUF = 8 << 20  # the receiver's SO_RCVBUF (and b's net.core.rmem_max)


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
    # the receiver's buffer is 8 MB, as the kernel anchor's (SO_RCVBUFFORCE): with polls
    # at local_bh_enable (a lab's default) each batch is in its queue when sendmmsg
    # returns, and Trio may run the sender again before the reader, as a sender on
    # another CPU may outrun its reader; 2 × 212,992 bytes dropped 24 of 640 GRE
    # datagrams (their truesize is larger), and a stream that loses one never ends
    b.sysctl(f"net.core.rmem_max={RCVBUF}")
    rx = b.socket()
    rx.setsockopt(SOL_SOCKET, SO_RCVBUF, RCVBUF)
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
