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

The control connection. Real netperf first connects to a netserver's
control port (TCP 12865) and sends the test's parameters there; the
netserver opens the data socket, and after the test sends its side's
results back on the same connection. :func:`netserver` is that server (a
task serving one host until cancelled) and ``netperf(control_port=PORT)``
that client: the exchange is real TCP traffic (it shows in captures and in
``ss``), one line each way in a format of netstack's own (``TCP_STREAM
family=4 port=12866 req=1 resp=1`` out, ``ok port=12866`` back; after the test
``results`` out, ``results received=N end=T`` back). Without
*control_port* (the default) no control connection exists: ``netperf``
runs the server's half itself, and a run moves only the data traffic.
Either way the server's half is :func:`_serve_test`, so the figures are the
same.

CPU utilisation (netperf's ``-c``/``-C``) exists in timed mode only: the
busy nanoseconds the model charged to each host's CPUs during the test,
over the test's virtual time and the host's CPU count. When the model is
not already measuring, the test measures itself (``TimedModel.measuring``).
In functional mode nothing costs time, and the figures are None.

Timed UDP_STREAM. The sender of a TCP test blocks on its send buffer, so
the data path's costs (NAPI, ACK processing) pace it. A UDP sender never
waits for its peer: in an async loop it would send the whole budget at one
instant. In timed mode UDP_STREAM's two ends are therefore user threads of
the model (:meth:`TimedModel.run_threads`): each ``sendto``/``recvfrom`` is
a system call on a CPU that pays user work, the syscall entry and the
kernel-named functions it runs, and the thread goes on when virtual time
has caught up with that CPU — netperf's send loop, paced by its own CPU.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import attrs
import trio
import trio.lowlevel

from netstack.core.sock import AF_INET, AF_INET6, SOCK_DGRAM, SOCK_STREAM
from netstack.cpu.timed import Thread, ThreadBlocked

if TYPE_CHECKING:
    from collections.abc import Callable

    from netstack.socket import Socket
    from netstack.userspace.process import Machine

__all__ = ["NETSERVER_PORT", "NetperfControlError", "NetperfResult", "netperf", "netserver"]

TESTS = ("TCP_STREAM", "TCP_RR", "UDP_STREAM")
NETSERVER_PORT = 12865  # netperf's control port (netserver -p changes it)
UDP_SETTLE = 0.01  # UDP_STREAM: virtual seconds the last datagrams get to arrive
_FOREVER = 1 << 60


class NetperfControlError(OSError):
    """netperf could not establish its control connection to a netserver.

    Attributes:
        address, port: where the netserver was expected.
    """

    def __init__(self, err: OSError, address: str, port: int) -> None:
        super().__init__(err.errno, err.strerror)
        self.address = address
        self.port = port


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
        messages_received: UDP_STREAM: datagrams the netserver received.
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
    messages_received: int = 0

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


@attrs.define
class _Params:
    """One test's parameters: what the control connection carries to the netserver."""

    test: str
    family: int  # the data socket's, as netperf's -4/-6 (the client's address's)
    port: int
    request: int = 1
    response: int = 1

    def encode(self) -> bytes:
        fam = 6 if self.family == AF_INET6 else 4
        return (
            f"{self.test} family={fam} port={self.port} req={self.request} "
            f"resp={self.response}\n".encode()
        )

    @classmethod
    def decode(cls, line: str) -> _Params:
        words = line.split()
        if not words or words[0] not in TESTS:
            raise ValueError(f"netserver: bad request {line!r}")
        kv = dict(w.split("=", 1) for w in words[1:])
        family = AF_INET6 if kv["family"] == "6" else AF_INET
        return cls(words[0], family, int(kv["port"]), int(kv["req"]), int(kv["resp"]))


@attrs.define
class _Tally:
    """The netserver's side of one test's results."""

    received: int = 0  # payload bytes
    messages: int = 0  # recv calls that returned data (UDP: datagrams)
    end_time: float = 0.0  # virtual time the data side ended (TCP: the sender's EOF)

    def encode(self) -> bytes:
        return (
            f"results received={self.received} messages={self.messages} "
            f"end={self.end_time!r}\n".encode()
        )

    @classmethod
    def decode(cls, line: str) -> _Tally:
        """The netserver's results line; ECONNRESET if it closed without one."""
        words = line.split()
        if words[:1] != ["results"]:
            raise OSError(errno.ECONNRESET, "the netserver sent no results")
        kv = dict(w.split("=", 1) for w in words[1:])
        return cls(int(kv["received"]), int(kv["messages"]), float(kv["end"]))


async def netperf(
    client: Machine,
    server: Machine,
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
    control_port: int | None = None,
    started: Callable[[], None] | None = None,
) -> NetperfResult:
    """Run one netperf test from *client* to *server* (listening on *address*:*port*).

    *progress*, if given, is called after each send (TCP_RR: each transaction)
    with the bytes (transactions) done so far and the virtual seconds elapsed.

    *control_port*: connect to a :func:`netserver` on *address*:*control_port*
    first and let it run the server's half (it must be serving on *server*);
    raises :class:`NetperfControlError` when none answers. Without it,
    ``netperf`` runs the server's half itself and opens no control connection.
    *started*, if given, is called once the test is about to start (the
    control connection, if any, is up).
    """
    if test not in TESTS:
        raise ValueError(f"netperf: unknown test {test!r} (one of {', '.join(TESTS)})")
    if seconds is None and total_bytes is None and transactions is None:
        raise ValueError("netperf: give seconds=, total_bytes= or transactions=")
    family = _family(address)
    params = _Params(test, family, port, request_size, response_size)
    limit = transactions if test == "TCP_RR" else total_bytes

    async def run_client() -> _ClientTally:
        if test == "TCP_STREAM":
            tally = await _tcp_stream(client, address, port, seconds, limit, send_size, progress)
        elif test == "TCP_RR":
            tally = await _tcp_rr(client, address, params, seconds, limit, progress)
        else:
            tally = await _udp_stream(client, address, port, seconds, limit, send_size, progress)
            await trio.sleep(UDP_SETTLE)  # let the last datagrams arrive
        return tally

    if control_port is None:
        with _cpu_meter(client, server) as meter:
            async with trio.open_nursery() as n:
                remote: _Tally = await n.start(_serve_test, server, params)
                if started is not None:
                    started()
                wall, cpu = time.perf_counter(), time.process_time()
                mine = await run_client()
                if test == "UDP_STREAM":
                    n.cancel_scope.cancel()
            # TCP: the server's half ended at the sender's EOF (or its own close)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            local, remote_cpu = _utilisation(meter, mine.elapsed(remote))
    else:
        ctl = client.socket(family, SOCK_STREAM)
        try:
            try:
                await ctl.connect((address, control_port))
            except OSError as e:
                raise NetperfControlError(e, address, control_port) from None
            await ctl.sendall(params.encode())
            reply = (await _readline(ctl)).split()
            if reply[:1] != ["ok"]:
                code = int(reply[1].split("=")[1]) if len(reply) > 1 else errno.ECONNRESET
                raise OSError(code, os.strerror(code))
            if started is not None:
                started()
            with _cpu_meter(client, server) as meter:
                wall, cpu = time.perf_counter(), time.process_time()
                mine = await run_client()
                await ctl.sendall(b"results\n")
                remote = _Tally.decode(await _readline(ctl))
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                local, remote_cpu = _utilisation(meter, mine.elapsed(remote))
        finally:
            ctl.close()
    return mine.result(remote, wall, cpu, local, remote_cpu)


@attrs.define
class _ClientTally:
    """The client's side of one test's results."""

    test: str
    sent: int = 0
    received: int = 0  # TCP_RR: response bytes
    transactions: int = 0
    errors: int = 0
    start: float = 0.0
    end: float = 0.0  # TCP_RR, UDP_STREAM: the client's end of the test

    def elapsed(self, remote: _Tally) -> float:
        """TCP_STREAM ends when the netserver has read everything, the others at the client."""
        return (remote.end_time if self.test == "TCP_STREAM" else self.end) - self.start

    def result(
        self,
        remote: _Tally,
        wall: float,
        cpu: float,
        local_cpu: float | None,
        remote_cpu: float | None,
    ) -> NetperfResult:
        rr = self.test == "TCP_RR"
        return NetperfResult(
            self.test,
            self.sent,
            self.received if rr else remote.received,
            self.transactions,
            self.elapsed(remote),
            wall,
            send_errors=self.errors,
            local_cpu=local_cpu,
            remote_cpu=remote_cpu,
            cpu_seconds=cpu,
            messages_received=0 if rr else remote.messages,
        )


def _utilisation(
    meter: list[Callable[[float], float]], elapsed: float
) -> tuple[float | None, float | None]:
    """(local, remote) percent busy over *elapsed* virtual seconds; None in functional mode."""
    if not meter:
        return None, None
    return meter[0](elapsed), meter[1](elapsed)


def _busy_ns(host: Machine) -> float:
    return sum(sum(cpu.busy.values()) for cpu in host.net.cpus.cpus)


@contextlib.contextmanager
def _cpu_meter(client: Machine, server: Machine) -> Iterator[list[Callable[[float], float]]]:
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

            def util(seconds: float, host: Machine = host) -> float:
                if seconds <= 0:
                    return 0.0
                busy = _busy_ns(host) - before[host.name]
                return 100.0 * busy / (seconds * 1e9 * len(host.net.cpus))

            meters.append(util)
        yield meters


def _family(address: str) -> int:
    """AF_INET6 for an IPv6 literal (``2001:db8::2``), else AF_INET."""
    return AF_INET6 if ":" in address else AF_INET


def _any(family: int) -> str:
    """The wildcard address of *family*, for the server's bind."""
    return "::" if family == AF_INET6 else ""


def _done(start: float, seconds: float | None, sent: int, limit: int | None) -> bool:
    if limit is not None and sent >= limit:
        return True
    return seconds is not None and trio.current_time() - start >= seconds


def _user_cpu(host: Machine) -> int:
    """The CPU a netperf process runs on: the host's last one (the NIC's
    interrupts land on CPU 0; with one CPU, that one)."""
    return len(host.net.cpus) - 1


async def _readline(sock: Socket) -> str:
    """One line of the control connection ("" when the peer closed it)."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = await sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data.decode()


# -- the netserver ------------------------------------------------------------------------
async def netserver(
    host: Machine,
    port: int = NETSERVER_PORT,
    *,
    address: str | None = None,
    family: int = AF_INET,
    task_status: trio.TaskStatus[Socket] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve netperf's control connections on *host*'s TCP *port* until cancelled.

    *address* (default: the wildcard of *family*) is the one to listen on
    (netserver ``-L``). Started with ``nursery.start``, it reports its
    listening socket once bound, or raises the bind's error (EADDRINUSE).
    Each control connection carries one test: its parameters in, the data
    socket opened (:func:`_serve_test`), ``ok`` back, and at the end its
    results back.
    """
    lsn = host.socket(family, SOCK_STREAM)
    try:
        await lsn.bind((_any(family) if address is None else address, port))
        lsn.listen(128)
    except OSError:
        lsn.close()
        raise
    try:
        async with trio.open_nursery() as nursery:
            task_status.started(lsn)
            while True:
                conn, _ = await lsn.accept()
                nursery.start_soon(_control, host, conn)
    finally:
        lsn.close()


async def _control(host: Machine, conn: Socket) -> None:
    """One control connection of a netserver: one test, from request to results.
    A client that goes away (reset, closed early) ends only its own test."""
    with conn:
        try:
            await _control_test(host, conn)
        except* OSError:
            pass  # ECONNRESET, EPIPE: the netserver goes on serving the others


async def _control_test(host: Machine, conn: Socket) -> None:
    """The exchange of :func:`_control`: request, ``ok``, the test, results."""
    line = await _readline(conn)
    try:
        params = _Params.decode(line)
    except (ValueError, KeyError):
        return  # not netperf: drop it, as netserver does
    async with trio.open_nursery() as nursery:
        try:
            tally: _Tally = await nursery.start(_serve_test, host, params)
        except OSError as e:
            await conn.sendall(f"error errno={e.errno}\n".encode())
            return
        await conn.sendall(f"ok port={params.port}\n".encode())
        # "results" once the client's test is over; "" if the client went away
        asked = await _readline(conn)
        if params.test == "UDP_STREAM" or not asked:  # UDP receives until asked
            nursery.cancel_scope.cancel()
        # TCP: the data side ends at the sender's EOF
    if asked:
        await conn.sendall(tally.encode())


async def _serve_test(
    host: Machine,
    params: _Params,
    *,
    task_status: trio.TaskStatus[_Tally] = trio.TASK_STATUS_IGNORED,
) -> None:
    """The netserver's half of one test: open the data socket on *params*' port,
    report a :class:`_Tally` once it is ready, then serve — TCP until the
    client's EOF, UDP until cancelled."""
    tally = _Tally()
    family = params.family
    proto = SOCK_DGRAM if params.test == "UDP_STREAM" else SOCK_STREAM
    with host.socket(family, proto) as srv:
        await srv.bind((_any(family), params.port))
        if proto == SOCK_DGRAM:
            task_status.started(tally)
            await _udp_sink(host, srv, tally)
            return
        srv.listen(1)
        task_status.started(tally)
        conn, _ = await srv.accept()
        with conn:
            if params.test == "TCP_STREAM":
                while True:
                    data = await conn.recv(1 << 18)
                    if not data:
                        break
                    tally.received += len(data)
                    tally.messages += 1
                tally.end_time = trio.current_time()
                return
            conn.setsockopt(6, 1, 1)  # TCP_NODELAY, as netperf sets it
            response = bytes(params.response)
            while True:
                got = 0
                while got < params.request:
                    data = await conn.recv(params.request - got)
                    if not data:
                        tally.end_time = trio.current_time()
                        return
                    got += len(data)
                tally.received += got
                tally.messages += 1
                await conn.sendall(response)


async def _udp_sink(host: Machine, srv: Socket, tally: _Tally) -> None:
    """Count the datagrams that arrive, until cancelled; in timed mode each
    ``recvfrom`` is a system call of a user thread on the host's CPU."""
    model = host.net.cpus.model
    if model is None:
        while True:
            data, _ = await srv.recvfrom(1 << 16)
            tally.received += len(data)
            tally.messages += 1

    def recv() -> None:
        try:
            data, _ = srv.recvfrom_nowait(1 << 16)
        except BlockingIOError:
            raise ThreadBlocked from None
        tally.received += len(data)
        tally.messages += 1

    thread = Thread(host.net.cpus, _user_cpu(host), recv, _FOREVER, wait=srv.wait_readable)
    await model.run_threads([thread])


# -- the client's half ----------------------------------------------------------------------
async def _tcp_stream(
    client: Machine,
    address: str,
    port: int,
    seconds: float | None,
    total: int | None,
    size: int,
    progress: Callable[[int, float], None] | None = None,
) -> _ClientTally:
    tally = _ClientTally("TCP_STREAM")
    buf = bytes(size)
    with client.socket(_family(address), SOCK_STREAM) as c:
        await c.connect((address, port))
        tally.start = start = trio.current_time()
        while not _done(start, seconds, tally.sent, total):
            chunk = buf if total is None else buf[: min(size, total - tally.sent)]
            await c.sendall(chunk)
            tally.sent += len(chunk)
            if progress is not None:
                progress(tally.sent, trio.current_time() - start)
    tally.end = trio.current_time()
    return tally


async def _tcp_rr(
    client: Machine,
    address: str,
    params: _Params,
    seconds: float | None,
    count: int | None,
    progress: Callable[[int, float], None] | None = None,
) -> _ClientTally:
    tally = _ClientTally("TCP_RR")
    req, resp = params.request, params.response
    request = bytes(req)
    with client.socket(_family(address), SOCK_STREAM) as c:
        c.setsockopt(6, 1, 1)
        await c.connect((address, params.port))
        tally.start = start = trio.current_time()
        while not _done(start, seconds, tally.transactions, count):
            await c.sendall(request)
            got = 0
            while got < resp:
                data = await c.recv(resp - got)
                if not data:
                    break
                got += len(data)
            tally.transactions += 1
            if progress is not None:
                progress(tally.transactions, trio.current_time() - start)
        tally.end = trio.current_time()
    tally.sent, tally.received = tally.transactions * req, tally.transactions * resp
    return tally


async def _udp_stream(
    client: Machine,
    address: str,
    port: int,
    seconds: float | None,
    total: int | None,
    size: int,
    progress: Callable[[int, float], None] | None = None,
) -> _ClientTally:
    """Send *size*-byte datagrams until *seconds* or *total* bytes (errors count
    toward it: netperf's send loop does not retry); timed mode: from a user
    thread on the client's CPU (see the module's header)."""
    tally = _ClientTally("UDP_STREAM")
    buf = bytes(size)
    dest = (address, port)
    model = client.net.cpus.model
    with client.socket(_family(address), SOCK_DGRAM) as c:
        tally.start = start = trio.current_time()
        if model is None:
            while not _done(start, seconds, tally.sent + tally.errors * size, total):
                try:
                    await c.sendto(buf, dest)
                except OSError:  # ENOBUFS, an ICMP error reported on the socket…
                    tally.errors += 1
                    await trio.lowlevel.checkpoint()
                    continue
                tally.sent += size
                if progress is not None:
                    progress(tally.sent, trio.current_time() - start)
        else:

            def send() -> None:
                try:
                    c.sendto_nowait(buf, dest)
                except BlockingIOError:
                    raise ThreadBlocked from None
                except OSError:  # ENOBUFS, an ICMP error reported on the socket…
                    tally.errors += 1
                    return
                tally.sent += size
                if progress is not None:
                    progress(tally.sent, trio.current_time() - start)

            calls = _FOREVER if total is None else math.ceil(total / size)
            thread = Thread(client.net.cpus, _user_cpu(client), send, calls, wait=c.wait_writable)
            with trio.move_on_after(math.inf if seconds is None else seconds):  # netperf -l
                await model.run_threads([thread])
            # the test ends when the sender's CPU has finished its last call
            cpu = client.net.cpus.cpus[_user_cpu(client)]
            tally.end = max(trio.current_time(), cpu.now * 1e-9)
            return tally
        tally.end = trio.current_time()
    return tally
