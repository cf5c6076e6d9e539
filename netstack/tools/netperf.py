"""A ``netperf``-like benchmark between two hosts: TCP_STREAM, TCP_RR, UDP_STREAM.

Theory of operation: the server side runs on *server* as an ordinary
application (a listening or bound socket in a task), the client side on
*client*; both use the Trio-style sockets, so everything below them — TCP,
GSO, qdiscs, drivers, GRO — is exercised as netperf exercises a real kernel.
A test ends after *seconds* of virtual time or after *total_bytes* /
*transactions*, whichever is given (links without rate or delay take no
virtual time, so on them only the byte or transaction limits end a test).
Results are frozen: bytes and transactions, the virtual time they took
(throughput in virtual time, what a timed-mode experiment reports), and the
wall-clock time (the emulator's own speed: goodput per core of this machine).

netperf's omni tests: TCP_STREAM (client sends, the server discards),
TCP_RR (request/response transactions on one connection), UDP_STREAM
(datagrams; the receiver counts what arrived).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import attrs
import trio

from netstack.core.sock import AF_INET, SOCK_DGRAM, SOCK_STREAM

if TYPE_CHECKING:
    from netstack.host import Host

__all__ = ["NetperfResult", "netperf"]

TESTS = ("TCP_STREAM", "TCP_RR", "UDP_STREAM")


@attrs.frozen
class NetperfResult:
    """What a netperf run measured.

    Attributes:
        test: TCP_STREAM, TCP_RR or UDP_STREAM.
        bytes_sent / bytes_received: payload bytes (the receiver's count is goodput).
        transactions: TCP_RR round trips completed.
        virtual_seconds: the test's duration in the hosts' virtual time.
        wall_seconds: how long the emulation took on this machine.
        cpu_seconds: the CPU time this process spent meanwhile (``time.process_time``):
            on a shared machine, the emulator's cost without the other jobs' share.
    """

    test: str
    bytes_sent: int
    bytes_received: int
    transactions: int
    virtual_seconds: float
    wall_seconds: float
    cpu_seconds: float = 0.0

    @property
    def throughput_mbps(self) -> float:
        """Goodput in 10^6 bit/s of virtual time (0 if no virtual time passed)."""
        if self.virtual_seconds <= 0:
            return 0.0
        return self.bytes_received * 8 / self.virtual_seconds / 1e6

    @property
    def wall_goodput_mbps(self) -> float:
        """Goodput in 10^6 bit/s of wall-clock time: the emulator's speed."""
        if self.wall_seconds <= 0:
            return 0.0
        return self.bytes_received * 8 / self.wall_seconds / 1e6

    @property
    def cpu_goodput_mbps(self) -> float:
        """Goodput in 10^6 bit/s per CPU-second of this process: the emulator's speed on one
        core, whatever else the machine runs."""
        if self.cpu_seconds <= 0:
            return 0.0
        return self.bytes_received * 8 / self.cpu_seconds / 1e6

    @property
    def transactions_per_s(self) -> float:
        if self.virtual_seconds <= 0:
            return 0.0
        return self.transactions / self.virtual_seconds


async def netperf(
    client: Host,
    server: Host,
    address: str,
    *,
    test: str = "TCP_STREAM",
    port: int = 12866,
    seconds: float | None = None,
    total_bytes: int | None = None,
    transactions: int | None = None,
    send_size: int = 16384,
    request_size: int = 1,
    response_size: int = 1,
) -> NetperfResult:
    """Run one netperf test from *client* to *server* (listening on *address*:*port*)."""
    if test not in TESTS:
        raise ValueError(f"netperf: unknown test {test!r} (one of {', '.join(TESTS)})")
    if seconds is None and total_bytes is None and transactions is None:
        raise ValueError("netperf: give seconds=, total_bytes= or transactions=")
    if test == "TCP_STREAM":
        return await _tcp_stream(client, server, address, port, seconds, total_bytes, send_size)
    if test == "TCP_RR":
        return await _tcp_rr(
            client, server, address, port, seconds, transactions, request_size, response_size
        )
    return await _udp_stream(client, server, address, port, seconds, total_bytes, send_size)


def _done(start: float, seconds: float | None, sent: int, limit: int | None) -> bool:
    if limit is not None and sent >= limit:
        return True
    return seconds is not None and trio.current_time() - start >= seconds


async def _tcp_stream(
    client: Host,
    server: Host,
    address: str,
    port: int,
    seconds: float | None,
    total: int | None,
    size: int,
) -> NetperfResult:
    srv = server.socket(AF_INET, SOCK_STREAM)
    await srv.bind(("", port))
    srv.listen(1)
    received = 0
    end_time = 0.0
    buf = bytes(size)

    async def sink() -> None:
        nonlocal received, end_time
        conn, _ = await srv.accept()
        while True:
            data = await conn.recv(1 << 18)
            if not data:
                break
            received += len(data)
        end_time = trio.current_time()
        conn.close()

    sent = 0
    wall = time.perf_counter()
    cpu = time.process_time()
    async with trio.open_nursery() as n:
        n.start_soon(sink)
        c = client.socket(AF_INET, SOCK_STREAM)
        await c.connect((address, port))
        start = trio.current_time()
        while not _done(start, seconds, sent, total):
            chunk = buf if total is None else buf[: min(size, total - sent)]
            await c.sendall(chunk)
            sent += len(chunk)
        c.close()
    srv.close()
    return NetperfResult(
        "TCP_STREAM",
        sent,
        received,
        0,
        end_time - start,
        time.perf_counter() - wall,
        time.process_time() - cpu,
    )


async def _tcp_rr(
    client: Host,
    server: Host,
    address: str,
    port: int,
    seconds: float | None,
    count: int | None,
    req: int,
    resp: int,
) -> NetperfResult:
    srv = server.socket(AF_INET, SOCK_STREAM)
    await srv.bind(("", port))
    srv.listen(1)
    request = bytes(req)
    response = bytes(resp)

    async def responder() -> None:
        conn, _ = await srv.accept()
        conn.setsockopt(6, 1, 1)  # TCP_NODELAY, as netperf sets it
        while True:
            got = 0
            while got < req:
                data = await conn.recv(req - got)
                if not data:
                    conn.close()
                    return
                got += len(data)
            await conn.sendall(response)

    done = 0
    wall = time.perf_counter()
    cpu = time.process_time()
    async with trio.open_nursery() as n:
        n.start_soon(responder)
        c = client.socket(AF_INET, SOCK_STREAM)
        c.setsockopt(6, 1, 1)
        await c.connect((address, port))
        start = trio.current_time()
        while not _done(start, seconds, done, count):
            await c.sendall(request)
            got = 0
            while got < resp:
                data = await c.recv(resp - got)
                if not data:
                    break
                got += len(data)
            done += 1
        elapsed = trio.current_time() - start
        c.close()
    srv.close()
    return NetperfResult(
        "TCP_RR",
        done * req,
        done * resp,
        done,
        elapsed,
        time.perf_counter() - wall,
        time.process_time() - cpu,
    )


async def _udp_stream(
    client: Host,
    server: Host,
    address: str,
    port: int,
    seconds: float | None,
    total: int | None,
    size: int,
) -> NetperfResult:
    srv = server.socket(AF_INET, SOCK_DGRAM)
    await srv.bind(("", port))
    received = 0
    buf = bytes(size)
    sent = 0
    wall = time.perf_counter()
    cpu = time.process_time()
    c = client.socket(AF_INET, SOCK_DGRAM)
    start = trio.current_time()
    async with trio.open_nursery() as n:

        async def sink() -> None:
            nonlocal received
            while True:
                data, _ = await srv.recvfrom(1 << 16)
                received += len(data)

        n.start_soon(sink)
        while not _done(start, seconds, sent, total):
            await c.sendto(buf, (address, port))
            sent += size
        await trio.sleep(0.01)  # let the last datagrams arrive
        n.cancel_scope.cancel()
    elapsed = trio.current_time() - start
    c.close()
    srv.close()
    return NetperfResult(
        "UDP_STREAM",
        sent,
        received,
        0,
        elapsed,
        time.perf_counter() - wall,
        time.process_time() - cpu,
    )
