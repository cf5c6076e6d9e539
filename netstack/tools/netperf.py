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
(datagrams; the receiver counts what arrived). An IPv6 *address* runs them
over IPv6 (netperf -6).

CPU utilisation (netperf's ``-c``/``-C``) exists in timed mode only: the
busy nanoseconds the model charged to each host's CPUs during the test,
over the test's virtual time and the host's CPU count. When the model is
not already measuring, the test measures itself (``TimedModel.measuring``).
In functional mode nothing costs time, and the figures are None.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import attrs
import trio
import trio.lowlevel

from netstack.core.sock import AF_INET, AF_INET6, SOCK_DGRAM, SOCK_STREAM

if TYPE_CHECKING:
    from collections.abc import Callable

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
        send_errors: UDP_STREAM sends that failed (ENOBUFS…: netperf's "Errors").
        local_cpu / remote_cpu: timed mode: percent of the client's / server's
            CPUs busy during the test (None in functional mode).
        cpu_seconds: the CPU time this process spent meanwhile (``time.process_time``):
            on a shared machine, the emulator's cost without the other jobs' share.
    """

    test: str
    bytes_sent: int
    bytes_received: int
    transactions: int
    virtual_seconds: float
    wall_seconds: float
    send_errors: int = 0
    local_cpu: float | None = None
    remote_cpu: float | None = None
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
    progress: Callable[[int, float], None] | None = None,
) -> NetperfResult:
    """Run one netperf test from *client* to *server* (listening on *address*:*port*).

    *progress*, if given, is called after each send (TCP_RR: each transaction)
    with the bytes (transactions) done so far and the virtual seconds elapsed.
    """
    if test not in TESTS:
        raise ValueError(f"netperf: unknown test {test!r} (one of {', '.join(TESTS)})")
    if seconds is None and total_bytes is None and transactions is None:
        raise ValueError("netperf: give seconds=, total_bytes= or transactions=")
    with _cpu_meter(client, server) as meter:
        if test == "TCP_STREAM":
            result = await _tcp_stream(
                client, server, address, port, seconds, total_bytes, send_size, progress
            )
        elif test == "TCP_RR":
            result = await _tcp_rr(
                client,
                server,
                address,
                port,
                seconds,
                transactions,
                request_size,
                response_size,
                progress,
            )
        else:
            result = await _udp_stream(
                client, server, address, port, seconds, total_bytes, send_size, progress
            )
    if meter:
        local, remote = meter[0](result.virtual_seconds), meter[1](result.virtual_seconds)
        result = attrs.evolve(result, local_cpu=local, remote_cpu=remote)
    return result


def _busy_ns(host: Host) -> float:
    return sum(sum(cpu.busy.values()) for cpu in host.net.cpus.cpus)


@contextlib.contextmanager
def _cpu_meter(client: Host, server: Host) -> Iterator[list[Callable[[float], float]]]:
    """Timed mode: yields [local, remote] functions of the elapsed virtual seconds
    giving the percent of each host's CPUs busy since entry; [] in functional mode."""
    model = client.net.cpus.cpus[0].model
    if model is None:
        yield []
        return
    own = contextlib.nullcontext() if model.running else model.measuring()
    with own:
        before = {h.name: _busy_ns(h) for h in (client, server)}
        meters: list[Callable[[float], float]] = []
        for host in (client, server):

            def util(seconds: float, host: Host = host) -> float:
                if seconds <= 0:
                    return 0.0
                busy = _busy_ns(host) - before[host.name]
                return 100.0 * busy / (seconds * 1e9 * len(host.net.cpus))

            meters.append(util)
        yield meters


def _family(address: str) -> int:
    """AF_INET6 for an IPv6 literal (``2001:db8::2``), else AF_INET."""
    return AF_INET6 if ":" in address else AF_INET


def _any(address: str) -> str:
    """The wildcard address of *address*'s family, for the server's bind."""
    return "::" if ":" in address else ""


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
    progress: Callable[[int, float], None] | None = None,
) -> NetperfResult:
    srv = server.socket(_family(address), SOCK_STREAM)
    await srv.bind((_any(address), port))
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
        c = client.socket(_family(address), SOCK_STREAM)
        await c.connect((address, port))
        start = trio.current_time()
        while not _done(start, seconds, sent, total):
            chunk = buf if total is None else buf[: min(size, total - sent)]
            await c.sendall(chunk)
            sent += len(chunk)
            if progress is not None:
                progress(sent, trio.current_time() - start)
        c.close()
    srv.close()
    return NetperfResult(
        "TCP_STREAM",
        sent,
        received,
        0,
        end_time - start,
        time.perf_counter() - wall,
        cpu_seconds=time.process_time() - cpu,
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
    progress: Callable[[int, float], None] | None = None,
) -> NetperfResult:
    srv = server.socket(_family(address), SOCK_STREAM)
    await srv.bind((_any(address), port))
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
        c = client.socket(_family(address), SOCK_STREAM)
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
            if progress is not None:
                progress(done, trio.current_time() - start)
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
        cpu_seconds=time.process_time() - cpu,
    )


async def _udp_stream(
    client: Host,
    server: Host,
    address: str,
    port: int,
    seconds: float | None,
    total: int | None,
    size: int,
    progress: Callable[[int, float], None] | None = None,
) -> NetperfResult:
    srv = server.socket(_family(address), SOCK_DGRAM)
    await srv.bind((_any(address), port))
    received = 0
    buf = bytes(size)
    sent = 0
    wall = time.perf_counter()
    cpu = time.process_time()
    c = client.socket(_family(address), SOCK_DGRAM)
    start = trio.current_time()
    async with trio.open_nursery() as n:

        async def sink() -> None:
            nonlocal received
            while True:
                data, _ = await srv.recvfrom(1 << 16)
                received += len(data)

        n.start_soon(sink)
        errors = 0
        while not _done(start, seconds, sent + errors * size, total):
            try:
                await c.sendto(buf, (address, port))
            except OSError:  # ENOBUFS, an ICMP error reported on the socket…
                errors += 1
                await trio.lowlevel.checkpoint()
                continue
            sent += size
            if progress is not None:
                progress(sent, trio.current_time() - start)
        elapsed = trio.current_time() - start
        await trio.sleep(0.01)  # let the last datagrams arrive
        n.cancel_scope.cancel()
    c.close()
    srv.close()
    return NetperfResult(
        "UDP_STREAM",
        sent,
        received,
        0,
        elapsed,
        time.perf_counter() - wall,
        send_errors=errors,
        cpu_seconds=time.process_time() - cpu,
    )
