"""Trio and AnyIO code inside a host: sockets, errors, isolation, the real-network guard."""

from __future__ import annotations

import errno
import socket
from typing import Any

import anyio
import anyio.abc
import pytest
import trio
import trio.lowlevel
from adapter_apps import lab_pair

import netstack
from netstack import Lab
from netstack.socket.context import NoCurrentHost
from netstack.socket.interpose import RealNetworkRefused
from netstack.socket.stdlib import BlockingCallRefused, HostSocket
from netstack.socket.trio_socket import TrioSocket


async def echo(stream: trio.abc.Stream) -> None:
    async for data in stream:
        await stream.send_all(data)


async def test_open_tcp_stream_and_serve_tcp_by_name(lab: Lab) -> None:
    a, b = lab_pair(lab)
    listeners = await b.start(trio.serve_tcp, echo, 7)
    # serve_tcp listens on 0.0.0.0 and [::] (IPV6_V6ONLY), as on Linux
    names = sorted(str(ln.socket.getsockname()) for ln in listeners)
    assert names == ["('0.0.0.0', 7)", "('::', 7, 0, 0)"]
    async with a.as_current():
        stream = await trio.open_tcp_stream("b", 7)
        assert isinstance(stream.socket, TrioSocket)
        assert stream.socket.host_name == "a"
        assert stream.socket.getpeername() == ("2001:db8::2", 7, 0, 0)
        await stream.send_all(b"ping")
        assert await stream.receive_some(10) == b"ping"
        await stream.send_eof()
        assert await stream.receive_some(10) == b""
        await stream.aclose()
        v4 = await trio.open_tcp_stream("10.0.0.2", 7)
        assert v4.socket.getsockname()[0] == "10.0.0.1"
        await v4.aclose()


async def test_happy_eyeballs_falls_back_to_ipv4(lab: Lab, autojump_clock: object) -> None:
    a, b = lab_pair(lab)
    b.ip("-6 addr flush dev eth0 scope global")
    lab.hosts_file("2001:db8::2 b6")  # b's old IPv6 address, now gone
    lab.hosts_file("10.0.0.2 b6")
    await b.start(trio.serve_tcp, echo, 7)
    async with a.as_current():
        t0 = trio.current_time()
        stream = await trio.open_tcp_stream("b6", 7)
        # the IPv6 attempt got no answer (b has no 2001:db8::2 any more); after
        # happy eyeballs' 0.25 s the IPv4 attempt started and won
        assert stream.socket.getpeername() == ("10.0.0.2", 7)
        assert trio.current_time() - t0 == pytest.approx(0.254, abs=1e-4)
        await stream.aclose()


async def test_udp_and_host_names(lab: Lab) -> None:
    a, b = lab_pair(lab)

    async def server(task_status: trio.TaskStatus[None]) -> None:
        s = trio.socket.socket(trio.socket.AF_INET6, trio.socket.SOCK_DGRAM)
        s.setsockopt(trio.socket.IPPROTO_IPV6, trio.socket.IPV6_V6ONLY, 0)
        await s.bind(("::", 5353))
        task_status.started()
        while True:
            data, peer = await s.recvfrom(100)
            await s.sendto(socket.gethostname().encode() + data, peer)

    await b.start(server)
    async with a.as_current():
        s = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_DGRAM)
        await s.sendto(b"!", ("b", 5353))
        data, peer = await s.recvfrom(100)
        assert (data, peer) == (b"b!", ("10.0.0.2", 5353))
        assert socket.gethostname() == "a"
    assert socket.gethostname() != "a"


async def test_connection_refused_like_trio(lab: Lab) -> None:
    a, _ = lab_pair(lab)
    async with a.as_current():
        s = trio.socket.socket()
        with pytest.raises(ConnectionRefusedError) as e:
            await s.connect(("10.0.0.2", 9))
        assert str(e.value) == "[Errno 111] Error connecting to ('10.0.0.2', 9): Connection refused"
        with pytest.raises(OSError, match="all attempts to connect to b:9 failed"):
            await trio.open_tcp_stream("b", 9)


async def test_unsupported_calls_raise_what_linux_raises(lab: Lab) -> None:
    a, _ = lab_pair(lab)
    async with a.as_current():
        with pytest.raises(OSError) as e:
            trio.socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        assert e.value.errno == errno.EAFNOSUPPORT
        s = trio.socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        with pytest.raises(OSError) as e:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 1)
        assert e.value.errno == errno.ENOPROTOOPT
        with pytest.raises(socket.gaierror) as g:
            await s.sendto(b"x", ("nosuch", 9))
        assert g.value.args == (socket.EAI_NONAME, "Name or service not known")


async def test_cancelled_connect_closes_the_socket(lab: Lab, autojump_clock: object) -> None:
    a, _ = lab_pair(lab)
    lab.partition("a", "b")
    async with a.as_current():
        s = trio.socket.socket()
        with trio.move_on_after(2):
            await s.connect(("10.0.0.2", 80))
        assert s.fileno() == -1  # closed, as trio does on a cancelled connect
    assert a.ss("-t -a").count("SYN-SENT") == 0


async def test_outside_any_host_refuses(lab: Lab) -> None:
    a, _ = lab_pair(lab)
    async with a.as_current():
        pass  # the lab's factory is now this run's
    with pytest.raises(NoCurrentHost, match="outside any host of a netstack lab"):
        trio.socket.socket()
    with pytest.raises(NoCurrentHost):
        await trio.open_tcp_stream("b", 80)


async def test_each_task_on_its_own_host(lab: Lab) -> None:
    a, b = lab_pair(lab)
    seen: dict[str, str] = {}

    async def who(name: str, port: int) -> None:
        await trio.lowlevel.checkpoint()
        s = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_DGRAM)
        await s.bind(("", port))  # 4000 on both hosts: two stacks, no conflict
        assert isinstance(s, TrioSocket)
        seen[name] = f"{s.host_name} {socket.gethostname()}"

    async with trio.open_nursery() as n:
        n.start_soon(a.run, who, "first", 4000)
        n.start_soon(b.run, who, "second", 4000)
        with b.as_current():
            n.start_soon(who, "third", 4001)  # a task started inside b stays on b
    assert seen == {"first": "a a", "second": "b b", "third": "b b"}


async def test_real_sockets_are_refused_inside_a_host(lab: Lab) -> None:
    a, _ = lab_pair(lab)
    real = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # made outside: real
    try:
        async with a.as_current():
            with pytest.raises(RealNetworkRefused, match=r"socket\.sendto"):
                real.sendto(b"x", ("127.0.0.1", 9))
            import _socket

            with pytest.raises(RealNetworkRefused, match=r"socket\.__new__"):
                _socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            with pytest.raises(RealNetworkRefused, match=r"socket\.gethostbyaddr"):
                socket.gethostbyaddr("127.0.0.1")
    finally:
        real.close()


async def test_stdlib_socket_inside_a_host(lab: Lab) -> None:
    a, b = lab_pair(lab)
    await b.start(trio.serve_tcp, echo, 7)
    async with a.as_current():
        s: Any = socket.socket()  # a HostSocket, which typeshed cannot know
        assert isinstance(s, HostSocket)
        with pytest.raises(BlockingCallRefused, match="blocking socket call on host 'a'"):
            s.connect(("b", 7))
        s2: Any = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s2.setblocking(False)
        with pytest.raises(BlockingIOError) as e:
            s2.connect(("10.0.0.2", 7))
        assert e.value.errno == errno.EINPROGRESS
        await s2.wait_writable()
        assert s2.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0
        s2.send(b"hi")
        with pytest.raises(BlockingIOError):
            s2.recv(10)
        await s2.wait_readable()
        assert s2.recv(10) == b"hi"
        assert socket.getaddrinfo("b", 7, socket.AF_INET, socket.SOCK_STREAM) == [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.2", 7))
        ]
        assert socket.gethostbyname("b") == "10.0.0.2"
        with pytest.raises(BlockingCallRefused, match="worker thread"):
            await trio.to_thread.run_sync(socket.socket)


async def test_anyio_on_trio(lab: Lab) -> None:
    a, b = lab_pair(lab)

    async def server(task_status: trio.TaskStatus[int]) -> None:
        listener = await anyio.create_tcp_listener(local_port=9000)
        task_status.started(listener.extra(anyio.abc.SocketAttribute.local_port))

        async def serve(client: anyio.abc.SocketStream) -> None:
            async with client:
                await client.send(b"anyio:" + await client.receive())

        await listener.serve(serve)

    assert await b.start(server) == 9000
    async with a.as_current():
        async with await anyio.connect_tcp("b", 9000) as s:
            assert s.extra(anyio.abc.SocketAttribute.remote_address) == ("2001:db8::2", 9000)
            await s.send(b"x")
            assert await s.receive() == b"anyio:x"
        async with await anyio.create_udp_socket(local_host="10.0.0.1", local_port=5000) as u:
            assert u.extra(anyio.abc.SocketAttribute.local_address) == ("10.0.0.1", 5000)
            await u.sendto(b"q", "10.0.0.2", 5001)
            await trio.sleep(0.1)  # ARP, then b's port unreachable
        assert (await anyio.getaddrinfo("b", 80, family=socket.AF_INET)) == [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.2", 80)),
            (socket.AF_INET, socket.SOCK_DGRAM, 17, "", ("10.0.0.2", 80)),
            (socket.AF_INET, socket.SOCK_RAW, 0, "", ("10.0.0.2", 80)),
        ]
    assert b.snmp()["Udp"].NoPorts == 1


def test_host_run_outside_a_pytest_lab() -> None:
    async def main() -> bytes:
        async with netstack.open_lab() as lab:
            a, b = lab_pair(lab)
            await b.start(trio.serve_tcp, echo, 7)

            async def client() -> bytes:
                stream = await trio.open_tcp_stream("b", 7)
                await stream.send_all(b"run")
                return await stream.receive_some(10)

            return await a.run(client)

    assert netstack.run(main) == b"run"
    assert socket.socket is socket.socket  # the module is back after the lab
    import netstack.socket.interpose as ip

    assert not ip.active()
