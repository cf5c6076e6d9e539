"""A blocking ``recv`` waits without an exception per empty read; errnos unchanged.

``Socket.recv``/``recvfrom`` call the protocol's ``recvmsg_or_none`` (TCP:
``tcp_recvmsg`` returning ``None`` where the kernel sleeps in ``sk_wait_data``;
UDP: ``udp_recvmsg`` where it sleeps in ``__skb_wait_for_more_packets``), so a
reader that finds the queue empty parks without raising and catching
``SockWouldBlock``. What the user sees is unchanged: the data when it comes,
``EAGAIN`` for ``MSG_DONTWAIT`` and the non-blocking calls, ``ENOTCONN`` on a
listener, ``b""`` at the end of the stream.
"""

from __future__ import annotations

import errno
import functools

import pytest
import trio
import trio.testing

from netstack.core import sock as core_sock
from netstack.core.sock import AF_INET, MSG_DONTWAIT, SOCK_DGRAM, SOCK_STREAM
from netstack.host import Lab
from netstack.ipv4.udp import UdpSock
from netstack.socket import Socket
from netstack.tcp import TcpSock
from netstack.testing import builders

pair = functools.partial(builders.pair, ipv4_only=True)


class _Counting(core_sock.SockWouldBlock):
    raised = 0

    def __init__(self, write: bool) -> None:
        type(self).raised += 1
        super().__init__(write)


@pytest.fixture
def count_would_block(monkeypatch: pytest.MonkeyPatch) -> type[_Counting]:
    """Count the SockWouldBlock raised by the modules on the receive path."""
    import netstack.ipv4.udp as udp
    import netstack.tcp.sock as tcp_sock
    import netstack.tcp.tcp as tcp_tcp

    _Counting.raised = 0
    for mod in (core_sock, udp, tcp_sock, tcp_tcp):
        monkeypatch.setattr(mod, "SockWouldBlock", _Counting, raising=False)
    return _Counting


async def _tcp_pair(lab: Lab) -> tuple[Socket, Socket]:
    a, b = pair(lab)
    srv = b.socket(AF_INET, SOCK_STREAM)
    await srv.bind(("", 5001))
    srv.listen(1)
    c = a.socket(AF_INET, SOCK_STREAM)
    async with trio.open_nursery() as n:
        n.start_soon(c.connect, ("10.0.0.2", 5001))
        conn, _ = await srv.accept()
    srv.close()
    return c, conn


@pytest.mark.pure_python_layout(
    "counts SockWouldBlock by replacing it in the modules, which compiled code does not read"
)
async def test_tcp_recv_waits_for_data_without_raising(
    lab: Lab, autojump_clock: object, count_would_block: type[_Counting]
) -> None:
    c, conn = await _tcp_pair(lab)
    count_would_block.raised = 0  # accept() waited through one
    got: list[tuple[float, bytes]] = []

    async def reader() -> None:
        for _ in range(2):
            data = await conn.recv(100)
            got.append((trio.current_time(), data))

    async with trio.open_nursery() as n:
        n.start_soon(reader)
        await trio.sleep(1)
        t0 = trio.current_time()
        await c.send(b"hello")
        await trio.sleep(1)
        c.close()
    assert [d for _, d in got] == [b"hello", b""]
    assert got[0][0] >= t0
    assert count_would_block.raised == 0  # the empty reads returned None


@pytest.mark.pure_python_layout(
    "counts SockWouldBlock by replacing it in the modules, which compiled code does not read"
)
async def test_tcp_empty_reads_keep_their_errnos(
    lab: Lab, autojump_clock: object, count_would_block: type[_Counting]
) -> None:
    c, conn = await _tcp_pair(lab)
    sk = conn.sock
    assert isinstance(sk, TcpSock)
    # the protocol's entries: None for a blocking reader, SockWouldBlock for the others
    assert sk.recvmsg_or_none(100, 0) is None
    with pytest.raises(core_sock.SockWouldBlock):
        sk.recvmsg(100, 0)
    with pytest.raises(BlockingIOError):
        await conn.recv(100, MSG_DONTWAIT)
    with pytest.raises(BlockingIOError):
        conn.recvfrom_nowait(100)
    await c.send(b"x")
    await trio.sleep(0.1)
    assert await conn.recv(100, MSG_DONTWAIT) == b"x"
    c.close()
    conn.close()


async def test_tcp_recv_on_a_listener_is_enotconn(lab: Lab, autojump_clock: object) -> None:
    a, _ = pair(lab)
    srv = a.socket(AF_INET, SOCK_STREAM)
    await srv.bind(("", 5002))
    srv.listen(1)
    with pytest.raises(OSError) as exc:
        await srv.recv(10)
    assert exc.value.errno == errno.ENOTCONN


@pytest.mark.pure_python_layout(
    "counts SockWouldBlock by replacing it in the modules, which compiled code does not read"
)
async def test_udp_recvfrom_waits_without_raising(
    lab: Lab, autojump_clock: object, count_would_block: type[_Counting]
) -> None:
    a, b = pair(lab)
    rx = b.socket(AF_INET, SOCK_DGRAM)
    await rx.bind(("", 9000))
    assert type(rx.sock) is UdpSock
    tx = a.socket(AF_INET, SOCK_DGRAM)
    got: list[tuple[bytes, object]] = []

    async def reader() -> None:
        got.append(await rx.recvfrom(100))

    async with trio.open_nursery() as n:
        n.start_soon(reader)
        await trio.sleep(1)
        await tx.sendto(b"ping", ("10.0.0.2", 9000))
    assert got == [(b"ping", ("10.0.0.1", tx.getsockname()[1]))]
    assert count_would_block.raised == 0
    with pytest.raises(BlockingIOError):
        rx.recvfrom_nowait(100)
    assert count_would_block.raised == 1  # the non-blocking call still takes the exception
    tx.close()
    rx.close()


@pytest.mark.parametrize("napi", ["softirq", "task"])
async def test_waiters_queue_in_arrival_order_and_a_cancelled_one_leaves(
    lab: Lab, autojump_clock: object, napi: str
) -> None:
    """The socket's wait queue (a list of tasks, not a ParkingLot): readers queue
    first come first served and a wake-up reschedules them all in that order,
    as ParkingLot.unpark_all did; which one runs first is Trio's seeded choice.
    With polls at local_bh_enable (the default) each datagram is received inside
    its ``sendto``, in the sender's task step: second, third, first here; with
    b's NAPI polled by its own task (``polls_at_bh_enable`` False) a step later,
    and Trio's draws fall otherwise: third, second, first. A cancelled wait takes
    its task out of the queue."""
    a, b = pair(lab)
    b.net.polls_at_bh_enable = napi == "softirq"
    rx = b.socket(AF_INET, SOCK_DGRAM)
    await rx.bind(("", 9001))
    tx = a.socket(AF_INET, SOCK_DGRAM)
    sk = rx.sock
    got: list[tuple[str, bytes]] = []
    tasks: list[trio.lowlevel.Task] = []

    async def reader(name: str) -> None:
        tasks.append(trio.lowlevel.current_task())
        got.append((name, await rx.recv(100)))

    async with trio.open_nursery() as n:
        for name in ("first", "second", "third"):
            n.start_soon(reader, name)
            await trio.testing.wait_all_tasks_blocked()
        assert sk._readers == tasks
        for data in (b"1", b"2", b"3"):
            await tx.sendto(data, ("10.0.0.2", 9001))
            await trio.testing.wait_all_tasks_blocked()
    assert got == EXPECTED_ORDER[napi]
    with trio.move_on_after(1):
        await rx.recv(100)
    assert sk._readers == []
    tx.close()
    rx.close()


EXPECTED_ORDER = {
    "softirq": [("second", b"1"), ("third", b"2"), ("first", b"3")],
    "task": [("third", b"1"), ("second", b"2"), ("first", b"3")],
}
