"""Unmodified asyncio code on a host (netstack.socket.aio: asyncio's loop on trio-asyncio).

Streams, protocols and transports, datagram endpoints, ``loop.sock_*`` and
``loop.getaddrinfo`` reach the host's stack; ``asyncio.sleep`` and timeouts
follow the lab's virtual clock; errors are Linux's; a socket of the real
machine is refused; the same program and seed give the same pcap.
"""

from __future__ import annotations

import asyncio
import errno
import socket
import ssl
from pathlib import Path

import pytest
import trio
import trio_asyncio  # type: ignore[import-untyped]
from adapter_apps import lab_pair, self_signed_identity

import netstack
from netstack import Lab
from netstack.socket import aio
from netstack.socket.interpose import RealNetworkRefused


async def _echo_upper(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(65536):
        writer.write(data.upper() + f"@{socket.gethostname()}".encode())
        await writer.drain()
    writer.close()
    await writer.wait_closed()


async def test_streams_by_host_name_on_virtual_time(lab: Lab) -> None:
    a, b = lab_pair(lab)
    server = await b.run_asyncio(asyncio.start_server, _echo_upper, None, 7)
    # asyncio.start_server bound :: and 0.0.0.0 on b (IPV6_V6ONLY on the first)
    assert sorted(s.family for s in server.sockets) == [socket.AF_INET, socket.AF_INET6]

    async def client() -> tuple[bytes, float, tuple[object, ...]]:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        await asyncio.sleep(3600)  # an hour of virtual time
        reader, writer = await asyncio.open_connection("b", 7)
        writer.write(b"hello")
        await writer.drain()
        data = await reader.read(100)
        peer = writer.get_extra_info("peername")
        writer.close()
        await writer.wait_closed()
        return data, loop.time() - t0, peer

    t0 = trio.current_time()
    data, elapsed, peer = await a.run_asyncio(client)
    assert data == b"HELLO@b"  # the handler ran on b
    assert elapsed == trio.current_time() - t0
    assert 3600 < elapsed < 3600.1
    # glibc's order puts b's IPv6 address first
    assert peer == ("2001:db8::2", 7, 0, 0)
    assert a.nstat()["TcpActiveOpens"] == 1
    assert b.nstat()["TcpPassiveOpens"] == 1
    server.close()


class _Recorder(asyncio.Protocol):
    def __init__(self) -> None:
        self.events: list[object] = []
        self.transport: asyncio.Transport | None = None
        self.lost = asyncio.get_running_loop().create_future()
        self._changed = asyncio.Event()

    def _add(self, event: object) -> None:
        self.events.append(event)
        self._changed.set()

    async def until(self, event: object) -> None:
        while event not in self.events:
            self._changed.clear()
            await self._changed.wait()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self._add("made")

    def data_received(self, data: bytes) -> None:
        self._add(data)

    def eof_received(self) -> bool:
        self._add("eof")
        return True  # keep the transport open to answer

    def pause_writing(self) -> None:
        self._add("pause_writing")

    def resume_writing(self) -> None:
        self._add("resume_writing")

    def connection_lost(self, exc: Exception | None) -> None:
        self._add(("lost", exc))
        self.lost.set_result(None)


@pytest.mark.slow
async def test_protocols_and_transports(lab: Lab) -> None:
    """create_server/create_connection with protocols: extra info, write_eof/eof_received,
    flow control on both sides (pause_writing at the high-water mark, pause_reading)."""
    a, b = lab_pair(lab)
    server_protos: list[_Recorder] = []

    def factory() -> _Recorder:
        p = _Recorder()
        server_protos.append(p)
        return p

    async def serve() -> asyncio.AbstractServer:
        return await asyncio.get_running_loop().create_server(factory, "10.0.0.2", 8000)

    server = await b.run_asyncio(serve)

    async def client() -> list[object]:
        loop = asyncio.get_running_loop()
        transport, proto = await loop.create_connection(_Recorder, "10.0.0.2", 8000)
        assert transport.get_extra_info("peername") == ("10.0.0.2", 8000)
        sockname = transport.get_extra_info("sockname")
        assert sockname[0] == "10.0.0.1"
        sock = transport.get_extra_info("socket")
        assert sock.getsockname() == sockname
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
        await asyncio.sleep(0.1)
        peer = server_protos[0]
        assert peer.transport is not None
        assert peer.transport.get_extra_info("peername") == sockname
        # the server stops reading: the client's writes fill the windows, then its buffer
        peer.transport.pause_reading()
        assert not peer.transport.is_reading()
        transport.set_write_buffer_limits(high=64 * 1024)
        transport.write(b"x" * 2_000_000)
        await asyncio.sleep(1)
        assert proto.events[-1] == "pause_writing"
        stuck = transport.get_write_buffer_size()
        assert 0 < stuck < 2_000_000
        peer.transport.resume_reading()
        await proto.until("resume_writing")
        transport.write_eof()
        await peer.until("eof")
        got = b"".join(e for e in peer.events if isinstance(e, bytes))
        assert got == b"x" * 2_000_000
        peer.transport.write(b"bye")
        peer.transport.close()
        await peer.lost
        await proto.until("eof")
        transport.close()  # the client kept its half open (eof_received returned True)
        await proto.lost
        return proto.events

    events = await a.run_asyncio(client)
    assert events == ["made", "pause_writing", "resume_writing", b"bye", "eof", ("lost", None)]
    server.close()


class _Buffered(asyncio.BufferedProtocol):
    """Receives into its own 1000-byte buffer (asyncio's zero-copy protocol kind)."""

    def __init__(self) -> None:
        self.buffer = bytearray(1000)
        self.got = bytearray()
        self.done = asyncio.get_running_loop().create_future()

    def get_buffer(self, sizehint: int) -> bytearray:
        return self.buffer

    def buffer_updated(self, nbytes: int) -> None:
        assert nbytes <= 1000
        self.got += self.buffer[:nbytes]

    def eof_received(self) -> bool:
        self.done.set_result(bytes(self.got))
        return False


async def test_buffered_protocol(lab: Lab) -> None:
    a, b = lab_pair(lab)

    async def blast(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(bytes(range(256)) * 100)
        await writer.drain()
        writer.close()

    await b.run_asyncio(asyncio.start_server, blast, None, 9)

    async def client() -> bytes:
        loop = asyncio.get_running_loop()
        _, proto = await loop.create_connection(_Buffered, "10.0.0.2", 9)
        return await proto.done  # type: ignore[no-any-return]

    assert await a.run_asyncio(client) == bytes(range(256)) * 100


class _Echo(asyncio.DatagramProtocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.DatagramTransport)
        self.transport = transport

    def datagram_received(self, data: bytes, addr: tuple[str | int, ...]) -> None:
        self.transport.sendto(data + socket.gethostname().encode(), addr)


class _Client(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.got: asyncio.Queue[object] = asyncio.Queue()

    def datagram_received(self, data: bytes, addr: tuple[str | int, ...]) -> None:
        self.got.put_nowait((data, addr))

    def error_received(self, exc: Exception) -> None:
        self.got.put_nowait(exc)


async def test_datagram_endpoints(lab: Lab) -> None:
    a, b = lab_pair(lab)

    async def serve() -> asyncio.BaseTransport:
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(_Echo, local_addr=("0.0.0.0", 5353))
        return transport

    await b.run_asyncio(serve)

    async def client() -> list[object]:
        loop = asyncio.get_running_loop()
        transport, proto = await loop.create_datagram_endpoint(_Client, remote_addr=("b", 5353))
        out: list[object] = [transport.get_extra_info("peername")]
        for i in range(3):
            transport.sendto(b"ping%d:" % i)
            out.append(await proto.got.get())
        transport.close()
        # a closed port answers ICMP port unreachable: error_received(ECONNREFUSED)
        transport, proto = await loop.create_datagram_endpoint(_Client, remote_addr=("10.0.0.2", 9))
        transport.sendto(b"anyone?")
        out.append(await proto.got.get())
        transport.close()
        return out

    out = await a.run_asyncio(client)
    peer = ("2001:db8::2", 5353, 0, 0)
    # (b resolves to its IPv6 address first, and b's server is bound to 0.0.0.0 only)
    assert out[0] == peer
    assert all(isinstance(e, ConnectionRefusedError) for e in out[1:])
    assert b.snmp6()["Udp6"].NoPorts == 3


async def test_datagram_echo_over_ipv4(lab: Lab) -> None:
    a, b = lab_pair(lab)

    async def serve() -> None:
        loop = asyncio.get_running_loop()
        await loop.create_datagram_endpoint(_Echo, local_addr=("0.0.0.0", 5353))

    await b.run_asyncio(serve)

    async def client() -> list[object]:
        loop = asyncio.get_running_loop()
        transport, proto = await loop.create_datagram_endpoint(
            _Client, remote_addr=("10.0.0.2", 5353)
        )
        out = []
        for i in range(3):
            transport.sendto(b"ping%d:" % i)
            out.append(await proto.got.get())
        transport.close()
        return out

    out = await a.run_asyncio(client)
    assert out == [(b"ping%d:b" % i, ("10.0.0.2", 5353)) for i in range(3)]
    assert b.snmp()["Udp"].InDatagrams == 3
    assert a.snmp()["Udp"].InDatagrams == 3


async def test_loop_sock_calls(lab: Lab) -> None:
    a, b = lab_pair(lab)

    async def tcp_server() -> bytes:
        loop = asyncio.get_running_loop()
        lsock = socket.socket()
        lsock.setblocking(False)
        lsock.bind(("", 9000))
        lsock.listen()
        conn, addr = await loop.sock_accept(lsock)
        assert addr[0] == "10.0.0.1"
        data = await loop.sock_recv(conn, 100)
        await loop.sock_sendall(conn, data[::-1] * 10_000)
        conn.close()
        lsock.close()
        return data

    async def udp_server() -> None:
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.setblocking(False)
        sock.bind(("", 9001))
        data, peer = await loop.sock_recvfrom(sock, 100)
        await loop.sock_sendto(sock, data * 2, peer)
        buf = bytearray(10)
        n, peer = await loop.sock_recvfrom_into(sock, buf)
        await loop.sock_sendto(sock, bytes(buf[:n]), peer)
        sock.close()

    async def client() -> tuple[bytes, bytes, bytes]:
        loop = asyncio.get_running_loop()
        sock = socket.socket()
        sock.setblocking(False)
        await loop.sock_connect(sock, ("10.0.0.2", 9000))
        await loop.sock_sendall(sock, b"abc")
        got = b""
        buf = bytearray(4096)
        while n := await loop.sock_recv_into(sock, buf):
            got += buf[:n]
        sock.close()
        usock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        usock.setblocking(False)
        await loop.sock_sendto(usock, b"u", ("b", 9001))
        first = await loop.sock_recv(usock, 100)
        await loop.sock_sendto(usock, b"0123456789abc", ("10.0.0.2", 9001))
        second, _ = await loop.sock_recvfrom(usock, 100)
        usock.close()
        return got, first, second

    async with trio.open_nursery() as nursery:
        nursery.start_soon(b.run_asyncio, tcp_server)
        nursery.start_soon(b.run_asyncio, udp_server)
        await trio.sleep(0.01)
        got, first, second = await a.run_asyncio(client)
    assert got == b"cba" * 10_000
    assert first == b"uu"
    assert second == b"0123456789"  # recvfrom_into's 10-byte buffer truncated it


async def test_add_reader_and_writer_on_a_host_socket(lab: Lab) -> None:
    """Selector-style code: ``loop.add_reader(sock, cb)`` calls back while the host
    socket is readable, ``remove_reader`` stops it; ``add_writer`` likewise."""
    a, _ = lab_pair(lab)

    async def main() -> list[bytes]:
        loop = asyncio.get_running_loop()
        rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        rx.setblocking(False)
        rx.bind(("", 9999))
        tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        tx.setblocking(False)
        got: list[bytes] = []
        done = loop.create_future()

        def readable() -> None:
            got.append(rx.recv(100))
            if len(got) == 3:
                assert loop.remove_reader(rx)
                done.set_result(None)

        def writable() -> None:
            tx.sendto(b"dgram %d" % len(sent), ("10.0.0.1", 9999))
            sent.append(1)
            if len(sent) == 4:
                assert loop.remove_writer(tx.fileno())  # its number works too, once seen

        sent: list[int] = []
        loop.add_reader(rx, readable)
        loop.add_writer(tx, writable)
        await done
        await asyncio.sleep(1)
        rx.close()
        tx.close()
        assert len(sent) == 4
        with pytest.raises(OSError) as info:
            loop.add_reader((1 << 30) + 12345, readable)  # a host-socket number never seen
        assert info.value.errno == errno.EBADF
        return got

    assert await a.run_asyncio(main) == [b"dgram 0", b"dgram 1", b"dgram 2"]
    # Linux counts InDatagrams when a datagram is read: the fourth never was
    assert (a.snmp()["Udp"].OutDatagrams, a.snmp()["Udp"].InDatagrams) == (4, 3)


async def test_getaddrinfo_and_errors(lab: Lab) -> None:
    a, _ = lab_pair(lab)

    async def main() -> list[object]:
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo("b", 80, type=socket.SOCK_STREAM)
        out: list[object] = [[info[4][0] for info in infos]]
        assert await loop.getnameinfo(("10.0.0.2", 80)) == ("b", "http")
        for name in ("nosuch", "b"):
            with pytest.raises(OSError) as info:
                await asyncio.open_connection(name, 81)
            out.append((type(info.value).__name__, info.value.errno))
        assert str(info.value) == (
            "Multiple exceptions: [Errno 111] Connect call failed "
            "('2001:db8::2', 81, 0, 0), [Errno 111] Connect call failed ('10.0.0.2', 81)"
        )
        with pytest.raises(OSError) as info:
            await asyncio.open_unix_connection("/tmp/x.sock")
        out.append(info.value.errno)
        with pytest.raises(OSError) as info:
            socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        out.append(info.value.errno)
        return out

    out = await a.run_asyncio(main)
    assert out == [
        ["2001:db8::2", "10.0.0.2"],
        ("gaierror", socket.EAI_NONAME),
        # both of b's addresses refused: asyncio's "Multiple exceptions" OSError
        ("OSError", None),
        errno.EAFNOSUPPORT,
        errno.EAFNOSUPPORT,
    ]


async def test_a_real_socket_is_refused(lab: Lab) -> None:
    a, _ = lab_pair(lab)
    real = socket.socket()  # outside every host: the machine's socket
    try:

        async def main() -> None:
            await asyncio.get_running_loop().sock_connect(real, ("10.0.0.2", 80))

        with pytest.raises(RealNetworkRefused):
            await a.run_asyncio(main)
    finally:
        real.close()


async def test_timeout_across_a_partition(lab: Lab) -> None:
    """asyncio.wait_for gives up at its virtual deadline; TCP retransmitted the SYN
    on the kernel's schedule meanwhile."""
    a, b = lab_pair(lab)
    await b.run_asyncio(asyncio.start_server, _echo_upper, None, 7)
    lab.partition("a", "b")

    async def client() -> float:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(asyncio.open_connection("10.0.0.2", 7), 5)
        return loop.time() - t0

    assert await a.run_asyncio(client) == pytest.approx(5.0)
    # SYN retransmitted at 1, 2, 3, 4 and 5 s: the first four RTOs stay 1 s (6.5+'s
    # tcp_syn_linear_timeouts), and the RTO at 5 s runs before the 5 s timeout
    assert a.nstat()["TcpExtTCPTimeouts"] == 5
    assert "TcpPassiveOpens" not in b.nstat()


async def test_tls_streams(lab: Lab, tmp_path: Path) -> None:
    """``ssl=`` on start_server/open_connection: asyncio's own SSLProtocol over a host
    transport, TLS 1.3 on the wire."""
    from cryptography.hazmat.primitives import serialization

    cert, key = self_signed_identity()
    (tmp_path / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    client_ctx = ssl.create_default_context(cafile=tmp_path / "cert.pem")
    client_ctx.check_hostname = False  # the certificate names "b"; we dial an address
    a, b = lab_pair(lab)
    cap = a.capture("eth0")
    await b.run_asyncio(asyncio.start_server, _echo_upper, None, 443, ssl=server_ctx)

    async def client() -> tuple[bytes, object]:
        reader, writer = await asyncio.open_connection("10.0.0.2", 443, ssl=client_ctx)
        writer.write(b"secret")
        data = await reader.read(100)
        version = writer.get_extra_info("ssl_object").version()
        writer.close()
        return data, version

    assert await a.run_asyncio(client) == (b"SECRET@b", "TLSv1.3")
    assert not any(b"secret" in bytes(frame) for _, frame, _ in cap.frames)


async def test_open_loop_flavour(lab: Lab) -> None:
    """``async with host.as_current():`` + ``aio.open_loop()`` and trio-asyncio's own
    ``aio_as_trio``: the same host, a loop of one's own."""
    a, b = lab_pair(lab)
    await b.run_asyncio(asyncio.start_server, _echo_upper, None, 7)

    async def client() -> bytes:
        reader, writer = await asyncio.open_connection("10.0.0.2", 7)
        writer.write(b"own loop")
        data = await reader.read(100)
        writer.close()
        return data

    async with a.as_current(), aio.open_loop() as loop:
        assert isinstance(loop, aio.HostEventLoop)
        assert await trio_asyncio.aio_as_trio(client)() == b"OWN LOOP@b"


async def _exchange(seed: int, out: list[bytes]) -> None:
    async with netstack.open_lab(seed=seed) as lab:
        a, b = lab_pair(lab, netem="netem delay 5ms 1ms loss 5% reorder 25% 50%")
        cap = a.capture("eth0")
        await b.run_asyncio(asyncio.start_server, _echo_upper, None, 7)

        async def client() -> None:
            reader, writer = await asyncio.open_connection("b", 7)
            for i in range(20):
                writer.write(b"message %d " % i * 100)
                await writer.drain()
                await reader.read(65536)
            writer.close()
            await writer.wait_closed()

        await a.run_asyncio(client)
        await trio.sleep(1)
        out.append(b"".join(f"{ts:.9f}".encode() + bytes(data) for ts, data, _ in cap.frames))


def test_same_seed_same_pcap() -> None:
    runs: list[bytes] = []
    netstack.run(_exchange, 3, runs)
    netstack.run(_exchange, 3, runs)
    netstack.run(_exchange, 4, runs)
    assert len(runs[0]) > 20_000
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


async def test_one_loop_per_lab(lab: Lab) -> None:
    """Hosts started at the same instant share the lab's one asyncio loop, and each
    task knows its host."""
    a, b = lab_pair(lab)
    seen: dict[str, tuple[int, str]] = {}

    async def who(name: str) -> None:
        seen[name] = (id(asyncio.get_running_loop()), socket.gethostname())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(a.run_asyncio, who, "a")
        nursery.start_soon(b.run_asyncio, who, "b")
    loop = await lab.asyncio_loop()
    assert seen == {"a": (id(loop), "a"), "b": (id(loop), "b")}


async def test_server_close_refuses_new_connections(lab: Lab) -> None:
    a, b = lab_pair(lab)
    server = await b.run_asyncio(asyncio.start_server, _echo_upper, "10.0.0.2", 7)

    async def client() -> bytes:
        reader, writer = await asyncio.open_connection("10.0.0.2", 7)
        writer.write(b"x")
        data = await reader.read(100)
        writer.close()
        return data

    assert await a.run_asyncio(client) == b"X@b"
    assert server.is_serving()
    await b.run_asyncio(_close_server, server)
    with pytest.raises(ConnectionRefusedError):
        await a.run_asyncio(client)
    assert b.nstat()["TcpOutRsts"] == 1  # b answered the second SYN with a RST


async def _close_server(server: asyncio.Server) -> None:
    server.close()
    await server.wait_closed()
    assert not server.is_serving()


def test_closing_the_lab_aborts_open_transports() -> None:
    """A connection still open when the lab closes is aborted: its protocol sees
    connection_lost(None), as a process's sockets close when the machine stops."""
    lost: list[object] = []

    class Keep(asyncio.Protocol):
        def connection_lost(self, exc: Exception | None) -> None:
            lost.append(exc)

    async def main() -> None:
        async with netstack.open_lab() as lab:
            a, b = lab_pair(lab)

            async def serve() -> None:
                await asyncio.get_running_loop().create_server(Keep, "10.0.0.2", 7)

            async def connect() -> None:
                await asyncio.get_running_loop().create_connection(Keep, "10.0.0.2", 7)

            await b.run_asyncio(serve)
            await a.run_asyncio(connect)
            await trio.sleep(1)
            assert lost == []

    netstack.run(main)
    assert lost == [None, None]


async def test_a_timer_spin_at_one_instant_lets_time_pass(lab: Lab) -> None:
    """Code that re-arms an already-due timer until the clock moves (aioquic's loss
    detection can, through floating-point rounding) would spin forever where
    computing takes no time; after SPIN_LIMIT such timers the loop moves the
    clock by SPIN_QUANTUM, as the CPU time the spin burns would."""
    a, _ = lab_pair(lab)

    async def spin() -> tuple[int, float, int]:
        loop = asyncio.get_running_loop()
        assert isinstance(loop, aio.HostEventLoop)
        start = loop.time()
        done = loop.create_future()
        count = 0

        def tick() -> None:
            nonlocal count
            count += 1
            if loop.time() == start:
                loop.call_at(start, tick)  # "not yet": due again at once
            else:
                done.set_result(None)

        loop.call_at(start, tick)
        await done
        return count, loop.time() - start, loop.spin_jumps

    count, elapsed, jumps = await a.run_asyncio(spin)
    assert (count, jumps) == (aio.SPIN_LIMIT, 1)  # the first arming counts too
    assert elapsed == pytest.approx(aio.SPIN_QUANTUM)
