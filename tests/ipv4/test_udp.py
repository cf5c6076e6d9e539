"""UDP between two hosts: an echo service, and the errors the socket API promises.

a (10.0.0.1/24) ── veth ── b (10.0.0.2/24), both with ``brd 10.0.0.255``.
"""

from __future__ import annotations

import errno

import pytest
import trio
import trio.testing

from netstack.core.sock import IP_PMTUDISC_DO, IP_PMTUDISC_DONT
from netstack.ipv4 import ipv4_of
from netstack.ipv4.fib import RouteConfig
from netstack.socket import (
    IP_MTU_DISCOVER,
    IP_TOS,
    IP_TTL,
    IPPROTO_IP,
    MSG_ERRQUEUE,
    SO_BROADCAST,
    SO_RCVBUF,
    SO_REUSEADDR,
    SOL_SOCKET,
    Socket,
)
from netstack.testing.builders import nstat, open_test_lab, pair
from netstack.wire.checksum import ip_fast_csum
from netstack.wire.ipv4 import aton

ECHO_PORT = 7


async def echo_server(sock: Socket, task_status: trio.TaskStatus[None]) -> None:
    task_status.started()
    while True:
        data, addr = await sock.recvfrom(65535)
        await sock.sendto(data, addr)


async def test_udp_echo(autojump_clock: trio.testing.MockClock) -> None:
    async with open_test_lab() as lab, trio.open_nursery() as nursery:
        a, b = pair(lab, broadcast="10.0.0.255")
        srv = b.socket()
        await srv.bind(("10.0.0.2", ECHO_PORT))
        assert srv.getsockname() == ("10.0.0.2", ECHO_PORT)
        await nursery.start(echo_server, srv)

        # unconnected: sendto / recvfrom, with an ephemeral port
        cli = a.socket()
        for size in (0, 1, 100, 1472):
            payload = bytes(range(256)) * (size // 256) + bytes(range(size % 256))
            assert await cli.sendto(payload, ("10.0.0.2", ECHO_PORT)) == size
            data, addr = await cli.recvfrom(65535)
            assert data == payload
            assert addr == ("10.0.0.2", ECHO_PORT)
        host, port = cli.getsockname()
        assert host == "0.0.0.0"
        assert 32768 <= port <= 60999  # ip_local_port_range

        # connected: send / recv, and the peer is fixed
        conn = a.socket()
        await conn.bind(("10.0.0.1", 40000))
        await conn.connect(("10.0.0.2", ECHO_PORT))
        assert conn.getpeername() == ("10.0.0.2", ECHO_PORT)
        assert conn.getsockname() == ("10.0.0.1", 40000)
        await conn.send(b"connected")
        assert await conn.recv(100) == b"connected"

        # a datagram from another port does not reach the connected socket
        stray = b.socket()
        await stray.sendto(b"stray", ("10.0.0.1", 40000))
        await trio.sleep(0.1)
        with pytest.raises(BlockingIOError):
            conn.recvfrom_nowait(100)

        # a truncated read
        await cli.sendto(b"0123456789", ("10.0.0.2", ECHO_PORT))
        assert await cli.recv(4) == b"0123"
        nursery.cancel_scope.cancel()
    assert nstat(b, "UdpInDatagrams") == 6
    assert nstat(b, "UdpOutDatagrams") == 7  # six echoes and the stray
    assert nstat(a, "UdpNoPorts") == 1  # the stray
    assert nstat(a, "UdpInDatagrams") == 6


async def test_connected_socket_gets_econnrefused(autojump_clock: trio.testing.MockClock) -> None:
    async with open_test_lab() as lab:
        a, b = pair(lab, broadcast="10.0.0.255")
        await trio.sleep(1.0)  # past the ICMP rate limiter's start-up window
        conn = a.socket()
        await conn.connect(("10.0.0.2", 9))
        await conn.send(b"anyone?")
        with pytest.raises(ConnectionRefusedError) as exc:
            with trio.fail_after(1):
                await conn.recv(100)
        assert exc.value.errno == errno.ECONNREFUSED
        assert nstat(b, "UdpNoPorts") == 1
        assert nstat(b, "IcmpOutDestUnreachs") == 1
        assert nstat(a, "IcmpInDestUnreachs") == 1
        # The error is reported once; the socket is usable again.
        await conn.send(b"again")
        # An unconnected socket is not told (hard errors need a connected socket).
        free = a.socket()
        await trio.sleep(1.0)
        await free.sendto(b"anyone?", ("10.0.0.2", 9))
        with trio.move_on_after(1) as scope:
            await free.recvfrom(100)
        assert scope.cancelled_caught
        assert nstat(b, "UdpNoPorts") == 3


async def test_emsgsize_above_65507_bytes(autojump_clock: trio.testing.MockClock) -> None:
    async with open_test_lab() as lab:
        a, b = pair(lab, broadcast="10.0.0.255")
        srv = b.socket()
        await srv.bind(("0.0.0.0", 9000))
        cli = a.socket()
        with pytest.raises(OSError, match="Message too long") as exc:
            await cli.sendto(bytes(65508), ("10.0.0.2", 9000))
        assert exc.value.errno == errno.EMSGSIZE
        assert await cli.sendto(bytes(65507), ("10.0.0.2", 9000)) == 65507
        data, _ = await srv.recvfrom(70000)
        assert len(data) == 65507
        assert nstat(a, "IpFragCreates") == 45  # ceil(65515 / 1480)
        assert nstat(b, "IpReasmOKs") == 1


async def test_eaddrinuse_on_double_bind(autojump_clock: trio.testing.MockClock) -> None:
    async with open_test_lab() as lab:
        a, _b = pair(lab, broadcast="10.0.0.255")
        first = a.socket()
        await first.bind(("0.0.0.0", 5353))
        second = a.socket()
        with pytest.raises(OSError, match="Address already in use") as exc:
            await second.bind(("0.0.0.0", 5353))
        assert exc.value.errno == errno.EADDRINUSE
        with pytest.raises(OSError) as exc2:
            await second.bind(("10.0.0.1", 5353))  # the wildcard covers it
        assert exc2.value.errno == errno.EADDRINUSE
        with pytest.raises(OSError) as exc3:
            await first.bind(("0.0.0.0", 5354))  # already bound
        assert exc3.value.errno == errno.EINVAL
        with pytest.raises(OSError) as exc4:
            await second.bind(("10.0.0.99", 5353))  # not an address of a
        assert exc4.value.errno == errno.EADDRNOTAVAIL
        # Both with SO_REUSEADDR: allowed. Closing frees the port.
        r1, r2 = a.socket(), a.socket()
        for s in (r1, r2):
            s.setsockopt(SOL_SOCKET, SO_REUSEADDR, 1)
            await s.bind(("0.0.0.0", 6000))
        first.close()
        await second.bind(("0.0.0.0", 5353))


@pytest.mark.slow
async def test_eacces_for_broadcast_without_so_broadcast(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_test_lab() as lab:
        a, b = pair(lab, broadcast="10.0.0.255")
        ipv4_of(a.net).fib.add_route(RouteConfig(0, 0, gw=aton("10.0.0.2"), dev=None))
        srv = b.socket()
        await srv.bind(("0.0.0.0", 6767))
        cli = a.socket()
        for dst in ("10.0.0.255", "255.255.255.255"):
            with pytest.raises(PermissionError) as exc:
                await cli.sendto(b"hello all", (dst, 6767))
            assert exc.value.errno == errno.EACCES
        conn = a.socket()
        with pytest.raises(PermissionError):
            await conn.connect(("10.0.0.255", 6767))
        assert nstat(a, "UdpOutDatagrams") == 0
        # With SO_BROADCAST the subnet broadcast goes out and b receives it.
        cli.setsockopt(SOL_SOCKET, SO_BROADCAST, 1)
        assert cli.getsockopt(SOL_SOCKET, SO_BROADCAST) == 1
        await cli.sendto(b"hello all", ("10.0.0.255", 6767))
        data, (src, _port) = await srv.recvfrom(100)
        assert (data, src) == (b"hello all", "10.0.0.1")
        assert nstat(a, "IpExtOutBcastPkts") == 1
        assert nstat(b, "IpExtInBcastPkts") == 1


async def test_full_receive_queue_counts_rcvbuf_errors(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_test_lab() as lab:
        a, b = pair(lab, broadcast="10.0.0.255")
        srv = b.socket()
        srv.setsockopt(SOL_SOCKET, SO_RCVBUF, 4096)  # doubled to 8192 by the kernel
        assert srv.getsockopt(SOL_SOCKET, SO_RCVBUF) == 8192
        await srv.bind(("0.0.0.0", 9999))
        cli = a.socket()
        n = 50
        for i in range(n):
            await cli.sendto(i.to_bytes(2, "big") * 500, ("10.0.0.2", 9999))
        await trio.sleep(0.1)
        queued = len(srv.sock.receive_queue)
        lost = nstat(b, "UdpRcvbufErrors")
        assert 0 < queued < n
        assert queued + lost == n  # every datagram is either queued or counted
        assert nstat(b, "UdpInErrors") == lost
        assert b.drops() == {"SOCKET_RCVBUFF": lost}
        # The stack did not stall: b still answers, and the socket reads what it kept, in order.
        assert (await a.ping("10.0.0.2")).received == 1
        got = [int.from_bytes((await srv.recv(2000))[:2], "big") for _ in range(queued)]
        assert got == list(range(queued))
        with pytest.raises(BlockingIOError):
            srv.recvfrom_nowait(2000)
        # Room again: the next datagram is delivered.
        await cli.sendto(b"after", ("10.0.0.2", 9999))
        assert await srv.recv(100) == b"after"
        assert nstat(b, "UdpInDatagrams") == queued + 1


async def test_errqueue_is_empty_without_errors(autojump_clock: trio.testing.MockClock) -> None:
    async with open_test_lab() as lab:
        a, _b = pair(lab, broadcast="10.0.0.255")
        sock = a.socket()
        with pytest.raises(BlockingIOError):
            await sock.recvmsg(100, 1024, MSG_ERRQUEUE)


async def test_datagram_headers_carry_a_valid_checksum_for_any_fields(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """udp_sendmsg sums the header from its fields (its written-out ip_local_out):
    every TOS, TTL, DF, ID (through its wrap) and address gives the header
    ip_fast_csum finds valid, with the fields asked for."""
    async with open_test_lab() as lab:
        a, b = pair(lab, addresses=False)
        a.ip("addr add 203.0.113.1/24 dev eth0")
        b.ip("addr add 203.0.113.254/24 dev eth0")
        a.ip("addr add 10.0.0.1/24 dev eth0")
        b.ip("addr add 10.0.0.2/24 dev eth0")
        srv = b.socket()
        await srv.bind(("0.0.0.0", 9))
        cap = a.capture("eth0")
        sent = []
        for dst in ("203.0.113.254", "10.0.0.2"):
            for tos, ttl, pmtu in (
                (0, 64, IP_PMTUDISC_DONT),
                (0xFC, 1, IP_PMTUDISC_DO),
                (3, 255, 1),
            ):
                cli = a.socket()
                cli.setsockopt(IPPROTO_IP, IP_TOS, tos)
                cli.setsockopt(IPPROTO_IP, IP_TTL, ttl)
                cli.setsockopt(IPPROTO_IP, IP_MTU_DISCOVER, pmtu)
                await cli.connect((dst, 9))
                cli.sock.inet_id = 0xFFFE  # the ID wraps on the second datagram
                for _ in range(3):
                    await cli.send(b"x" * 11)
                    sent.append((aton(dst), tos, ttl, pmtu != IP_PMTUDISC_DONT))
        await trio.sleep(0.1)
        frames = [d for _, d, out in cap.frames if out and d[12:14] == b"\x08\x00" and d[23] == 17]
        assert len(frames) == len(sent)
        ids = []
        for frame, (daddr, tos, ttl, df) in zip(frames, sent, strict=True):
            hdr = bytearray(frame[14:34])
            assert ip_fast_csum(hdr, 0, 20) == 0
            assert (hdr[1], hdr[8], hdr[6] & 0x40 != 0) == (tos, ttl, df)
            assert int.from_bytes(hdr[16:20], "big") == daddr
            assert int.from_bytes(hdr[2:4], "big") == 20 + 8 + 11
            ids.append(int.from_bytes(hdr[4:6], "big"))
        assert ids[:3] == [0xFFFE, 0xFFFF, 0]
        assert len(await srv.recv(100)) == 11
