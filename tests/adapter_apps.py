"""Small servers built from well-known libraries, for the adapter tests.

* :func:`h11_server` — an HTTP/1.1 server from h11 on ``trio.serve_tcp``
  (what httpx talks to);
* :func:`dns_responder` — an authoritative DNS responder from dnspython's
  message API on a Trio UDP socket (what dnspython's resolver asks);
* :func:`aiohttp_server` — an aiohttp web application (asyncio) answering the
  way :func:`h11_server` does, and echoing POST bodies;
* :func:`quic_server` — an aioquic server (asyncio, UDP) whose streams answer
  with what they were sent, reversed; :func:`quic_client_config`;
* :func:`lab_pair` — ``a`` and ``b`` on one Ethernet link, IPv4 and IPv6.
"""

from __future__ import annotations

import asyncio
import datetime
import functools
import socket
import ssl

import aiohttp.web
import dns.message
import dns.rrset
import h11
import trio
from aioquic.asyncio.server import QuicServer, serve
from aioquic.quic.configuration import QuicConfiguration
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from netstack import Host, Lab

NETEM = "netem delay 5ms 1ms loss 5% reorder 25% 50%"


def lab_pair(lab: Lab, *, netem: str | None = None) -> tuple[Host, Host]:
    """``a`` (10.0.0.1, 2001:db8::1) — ``b`` (10.0.0.2, 2001:db8::2) on NICs."""
    a, b = lab.add_host("a"), lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0", kind="nic", rate=1e9, delay=0.001)
    for h, n in ((a, 1), (b, 2)):
        h.ip(f"addr add 10.0.0.{n}/24 dev eth0")
        h.ip(f"-6 addr add 2001:db8::{n}/64 dev eth0 nodad")
        if netem:
            h.tc(f"qdisc add dev eth0 root {netem}")
    return a, b


async def h11_server(
    port: int = 80, *, task_status: trio.TaskStatus[object] = trio.TASK_STATUS_IGNORED
) -> None:
    """Answer every request with ``200`` and a body naming the host and the path."""

    async def handle(stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        target = b""
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(65536)
                conn.receive_data(data)
                continue
            if isinstance(event, h11.Request):
                target = event.target
                continue
            if isinstance(event, h11.EndOfMessage):
                body = f"{socket.gethostname()} {target.decode()}\n".encode() * 20
                headers = [("content-length", str(len(body))), ("content-type", "text/plain")]
                await stream.send_all(conn.send(h11.Response(status_code=200, headers=headers)))
                await stream.send_all(conn.send(h11.Data(data=body)))
                await stream.send_all(conn.send(h11.EndOfMessage()))
                if conn.our_state is h11.MUST_CLOSE:
                    break
                conn.start_next_cycle()
                continue
            break  # ConnectionClosed or PAUSED at the end of the stream
        await stream.aclose()

    await trio.serve_tcp(handle, port, task_status=task_status)


async def dns_responder(
    zone: dict[str, str],
    port: int = 53,
    *,
    task_status: trio.TaskStatus[object] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Answer A queries for the names in *zone* (``{"web.lab.": "10.0.0.80"}``)."""
    sock = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_DGRAM)
    await sock.bind(("", port))
    task_status.started(sock)
    while True:
        wire, peer = await sock.recvfrom(65535)
        query = dns.message.from_wire(wire)
        reply = dns.message.make_response(query)
        question = query.question[0]
        name = question.name.to_text()
        if name in zone:
            reply.answer.append(dns.rrset.from_text(name, 60, "IN", "A", zone[name]))
        else:
            reply.set_rcode(dns.rcode.NXDOMAIN)
        await sock.sendto(reply.to_wire(), peer)


async def aiohttp_server(port: int = 8080) -> aiohttp.web.AppRunner:
    """An aiohttp server on every address of the current host (run it with
    ``await host.run_asyncio(aiohttp_server)``); ``await runner.cleanup()`` stops it.

    ``GET /PATH`` answers ``"HOST /PATH\n" * 20``; ``POST`` echoes the body reversed,
    ``GET /slow/S`` answers after S seconds."""

    async def get(request: aiohttp.web.Request) -> aiohttp.web.Response:
        if request.path.startswith("/slow/"):
            await asyncio.sleep(float(request.path.rsplit("/", 1)[1]))
        return aiohttp.web.Response(text=f"{socket.gethostname()} {request.path}\n" * 20)

    async def post(request: aiohttp.web.Request) -> aiohttp.web.Response:
        return aiohttp.web.Response(body=(await request.read())[::-1])

    app = aiohttp.web.Application()
    app.router.add_get("/{tail:.*}", get)
    app.router.add_post("/{tail:.*}", post)
    runner = aiohttp.web.AppRunner(app)
    await runner.setup()
    await aiohttp.web.TCPSite(runner, None, port).start()
    return runner


@functools.cache
def self_signed_identity() -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A self-signed P-256 certificate for "b" (valid 2000-2100) and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "b")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC))
        .not_valid_after(datetime.datetime(2100, 1, 1, tzinfo=datetime.UTC))
        .sign(key, hashes.SHA256())
    )
    return cert, key


def quic_client_config(**kw: object) -> QuicConfiguration:
    """A client configuration for :func:`quic_server` (ALPN ``echo``, no verification
    of the self-signed certificate)."""
    return QuicConfiguration(
        is_client=True,
        alpn_protocols=["echo"],
        verify_mode=ssl.CERT_NONE,
        **kw,  # type: ignore[arg-type]
    )


async def quic_server(port: int = 4433) -> QuicServer:
    """An aioquic server on ``::`` (dual stack) of the current host (run it with
    ``await host.run_asyncio(quic_server)``): each stream is answered with its bytes
    reversed once the client ends it."""

    async def reverse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = await reader.read()
        writer.write(data[::-1])
        writer.write_eof()

    tasks: set[asyncio.Task[None]] = set()

    def on_stream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.get_running_loop().create_task(reverse(reader, writer))
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    cert, key = self_signed_identity()
    config = QuicConfiguration(is_client=False, alpn_protocols=["echo"])
    config.certificate = cert
    config.private_key = key
    return await serve("::", port, configuration=config, stream_handler=on_stream)
