"""The cost of running a user's own Trio or asyncio code in a host (netstack.socket's adapters).

Two exchanges, each done several ways between two hosts on a veth pair, in
functional mode (virtual time; the figures are wall time of this process):

* **HTTP/1.1**: one request and a 1 KB response per round trip on one
  keep-alive connection —
  ``native``: netstack's own ``Socket`` API (``host.socket``), hand-written
  HTTP bytes; ``trio``: the same bytes through ``trio.open_tcp_stream`` /
  ``trio.serve_tcp`` inside the hosts (the adapter); ``httpx``: httpx's
  ``AsyncClient`` against an h11 server, both inside the hosts;
  ``asyncio``: the same bytes through ``asyncio.open_connection`` /
  ``asyncio.start_server`` (asyncio's loop on trio-asyncio,
  :mod:`netstack.socket.aio`); ``aiohttp``: aiohttp's ``ClientSession``
  against an aiohttp web server, both on asyncio.
* **UDP echo**: a 64-byte datagram and its echo per round trip —
  ``native``: ``host.socket`` on both sides; ``trio``: ``trio.socket`` on
  both sides inside the hosts; ``asyncio``: ``create_datagram_endpoint``
  protocols on both sides.

Prints requests (round trips) per second of wall time, the best of three
runs each (the machine is shared; the best run is the least disturbed).
``--cpu`` counts this process's CPU time instead (``time.process_time``):
on a busy shared machine it moves far less from run to run than wall time.

    python benchmarks/bridge_cost.py [--n N] [--cpu] [--only TEXT]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable

import aiohttp
import h11
import httpx
import trio
from aiohttp import web

import netstack
from netstack import Host
from netstack.core.sock import SOCK_STREAM

BODY = b"x" * 1024
REQUEST = b"GET / HTTP/1.1\r\nHost: b\r\n\r\n"
RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 1024\r\n\r\n" + BODY


def pair(lab: netstack.Lab) -> tuple[Host, Host]:
    a, b = lab.add_host("a"), lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0")
    a.ip("addr add 10.0.0.1/24 dev eth0")
    b.ip("addr add 10.0.0.2/24 dev eth0")
    return a, b


# -- HTTP --------------------------------------------------------------------------------------
async def http_native(a: Host, b: Host, n: int) -> None:
    srv = b.socket(type=SOCK_STREAM)
    await srv.bind(("", 80))
    srv.listen()

    async def serve() -> None:
        conn, _ = await srv.accept()
        while True:
            data = await conn.recv(4096)
            if not data:
                return
            await conn.sendall(RESPONSE)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve)
        c = a.socket(type=SOCK_STREAM)
        await c.connect(("10.0.0.2", 80))
        for _ in range(n):
            await c.sendall(REQUEST)
            got = 0
            while got < len(RESPONSE):
                got += len(await c.recv(65536))
        c.close()


async def http_trio(a: Host, b: Host, n: int) -> None:
    async def handle(stream: trio.SocketStream) -> None:
        async for _ in stream:
            await stream.send_all(RESPONSE)

    async with trio.open_nursery() as nursery:
        await nursery.start(b.run, trio.serve_tcp, handle, 80)
        async with a.as_current():
            stream = await trio.open_tcp_stream("10.0.0.2", 80)
            for _ in range(n):
                await stream.send_all(REQUEST)
                got = 0
                while got < len(RESPONSE):
                    got += len(await stream.receive_some(65536))
            await stream.aclose()
        nursery.cancel_scope.cancel()


async def h11_handle(stream: trio.SocketStream) -> None:
    conn = h11.Connection(h11.SERVER)
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(await stream.receive_some(65536))
        elif isinstance(event, h11.EndOfMessage):
            headers = [("content-length", str(len(BODY)))]
            await stream.send_all(conn.send(h11.Response(status_code=200, headers=headers)))
            await stream.send_all(conn.send(h11.Data(data=BODY)))
            await stream.send_all(conn.send(h11.EndOfMessage()))
            conn.start_next_cycle()
        elif not isinstance(event, h11.Request):
            return


async def http_httpx(a: Host, b: Host, n: int) -> None:
    async with trio.open_nursery() as nursery:
        await nursery.start(b.run, trio.serve_tcp, h11_handle, 80)
        async with a.as_current(), httpx.AsyncClient() as client:
            for _ in range(n):
                r = await client.get("http://10.0.0.2/")
                assert len(r.content) == len(BODY)
        nursery.cancel_scope.cancel()


async def http_asyncio(a: Host, b: Host, n: int) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await reader.read(65536):
            writer.write(RESPONSE)
            await writer.drain()
        writer.close()

    async def client() -> None:
        reader, writer = await asyncio.open_connection("10.0.0.2", 80)
        for _ in range(n):
            writer.write(REQUEST)
            got = 0
            while got < len(RESPONSE):
                got += len(await reader.read(65536))
        writer.close()

    server = await b.run_asyncio(asyncio.start_server, handle, None, 80)
    await a.run_asyncio(client)
    server.close()


async def http_aiohttp(a: Host, b: Host, n: int) -> None:
    async def hello(request: web.Request) -> web.Response:
        return web.Response(body=BODY)

    async def serve() -> web.AppRunner:
        app = web.Application()
        app.router.add_get("/", hello)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, None, 80).start()
        return runner

    async def client() -> None:
        async with aiohttp.ClientSession() as session:
            for _ in range(n):
                async with session.get("http://10.0.0.2/") as r:
                    assert len(await r.read()) == len(BODY)

    runner = await b.run_asyncio(serve)
    await a.run_asyncio(client)
    await b.run_asyncio(runner.cleanup)


# -- UDP echo ----------------------------------------------------------------------------------
async def udp_native(a: Host, b: Host, n: int) -> None:
    srv = b.socket()
    await srv.bind(("", 7))

    async def serve() -> None:
        while True:
            data, peer = await srv.recvfrom(2048)
            await srv.sendto(data, peer)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve)
        c = a.socket()
        await c.connect(("10.0.0.2", 7))
        for _ in range(n):
            await c.send(b"p" * 64)
            await c.recv(2048)
        nursery.cancel_scope.cancel()


async def udp_trio(a: Host, b: Host, n: int) -> None:
    async def serve(task_status: trio.TaskStatus[None]) -> None:
        s = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_DGRAM)
        await s.bind(("", 7))
        task_status.started()
        while True:
            data, peer = await s.recvfrom(2048)
            await s.sendto(data, peer)

    async with trio.open_nursery() as nursery:
        await nursery.start(b.run, serve)
        async with a.as_current():
            c = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_DGRAM)
            await c.connect(("10.0.0.2", 7))
            for _ in range(n):
                await c.send(b"p" * 64)
                await c.recv(2048)
        nursery.cancel_scope.cancel()


class _UdpEcho(asyncio.DatagramProtocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.DatagramTransport)
        self.transport = transport

    def datagram_received(self, data: bytes, addr: tuple[str | int, ...]) -> None:
        self.transport.sendto(data, addr)


class _UdpClient(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.queue: asyncio.Queue[bytes] = asyncio.Queue()

    def datagram_received(self, data: bytes, addr: tuple[str | int, ...]) -> None:
        self.queue.put_nowait(data)


async def udp_asyncio(a: Host, b: Host, n: int) -> None:
    async def serve() -> asyncio.BaseTransport:
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(_UdpEcho, local_addr=("0.0.0.0", 7))
        return transport

    async def client() -> None:
        loop = asyncio.get_running_loop()
        transport, proto = await loop.create_datagram_endpoint(
            _UdpClient, remote_addr=("10.0.0.2", 7)
        )
        for _ in range(n):
            transport.sendto(b"p" * 64)
            await proto.queue.get()
        transport.close()

    server = await b.run_asyncio(serve)
    await a.run_asyncio(client)
    server.close()


Exchange = Callable[[Host, Host, int], Awaitable[None]]


def measure(
    fn: Exchange, n: int, repeat: int = 3, clock: Callable[[], float] = time.perf_counter
) -> float:
    """Round trips per second of *clock* (wall time by default): the best of *repeat*
    runs (after a warm-up)."""

    async def main() -> float:
        async with netstack.open_lab() as lab:
            a, b = pair(lab)
            await fn(a, b, 10)  # ARP, routes, imports
        best = 0.0
        for _ in range(repeat):
            async with netstack.open_lab() as lab:
                a, b = pair(lab)
                start = clock()
                await fn(a, b, n)
                best = max(best, n / (clock() - start))
        return best

    return float(netstack.run(main))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="round trips per measurement")
    parser.add_argument("--only", help="run only the rows whose API contains this text")
    parser.add_argument(
        "--cpu", action="store_true", help="CPU time of this process rather than wall time"
    )
    args = parser.parse_args()
    rows = [
        ("HTTP/1.1, 1 KB", "native Socket", http_native),
        ("HTTP/1.1, 1 KB", "trio adapter", http_trio),
        ("HTTP/1.1, 1 KB", "httpx + h11", http_httpx),
        ("HTTP/1.1, 1 KB", "asyncio", http_asyncio),
        ("HTTP/1.1, 1 KB", "aiohttp", http_aiohttp),
        ("UDP echo, 64 B", "native Socket", udp_native),
        ("UDP echo, 64 B", "trio adapter", udp_trio),
        ("UDP echo, 64 B", "asyncio", udp_asyncio),
    ]
    base: dict[str, float] = {}
    print(f"{'exchange':<16} {'API':<14} {'req/s':>9} {'vs native':>10}")
    for exchange, api, fn in rows:
        if args.only and args.only not in api and api != "native Socket":
            continue
        rate = measure(fn, args.n, clock=time.process_time if args.cpu else time.perf_counter)
        base.setdefault(exchange, rate)
        print(f"{exchange:<16} {api:<14} {rate:>9.0f} {rate / base[exchange]:>9.2f}x")


if __name__ == "__main__":
    main()
