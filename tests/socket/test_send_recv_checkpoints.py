"""``send`` and ``recv`` keep Trio's checkpoint rule with their first try written out.

``Socket.send``/``recv`` call the protocol once themselves, as
``trio.socket``'s ``_nonblocking_helper`` does: a cancel check before (a
cancelled call sends nothing and reads nothing), a schedule point after a call
that did not block, the wait when it would; a closed socket raises ``EBADF``
before any of it.
"""

from __future__ import annotations

import errno
import functools

import pytest
import trio
import trio.testing

from netstack.core.sock import AF_INET, SOCK_DGRAM
from netstack.host import Lab
from netstack.socket import Socket
from netstack.testing import builders

pair = functools.partial(builders.pair, ipv4_only=True)


async def _udp_pair(lab: Lab) -> tuple[Socket, Socket]:
    a, b = pair(lab)
    rx = b.socket(AF_INET, SOCK_DGRAM)
    await rx.bind(("0.0.0.0", 9000))
    tx = a.socket(AF_INET, SOCK_DGRAM)
    await tx.connect(("10.0.0.2", 9000))
    await tx.send(b"warm")  # ARP
    assert await rx.recv(100) == b"warm"
    return tx, rx


async def test_send_and_recv_checkpoint(lab: Lab) -> None:
    tx, rx = await _udp_pair(lab)
    with trio.testing.assert_checkpoints():
        assert await tx.send(b"one") == 3
    await trio.sleep(0.01)
    with trio.testing.assert_checkpoints():
        assert await rx.recv(100) == b"one"


async def test_a_cancelled_call_sends_and_reads_nothing(lab: Lab) -> None:
    tx, rx = await _udp_pair(lab)
    sent = tx.sock.ipv4.udp_mib.OutDatagrams  # type: ignore[attr-defined]
    with trio.CancelScope() as scope:
        scope.cancel()
        await tx.send(b"never")
    assert scope.cancelled_caught
    assert tx.sock.ipv4.udp_mib.OutDatagrams == sent  # type: ignore[attr-defined]
    await tx.send(b"two")
    await trio.sleep(0.01)
    with trio.CancelScope() as scope:
        scope.cancel()
        await rx.recv(100)
    assert scope.cancelled_caught
    assert await rx.recv(100) == b"two"  # still queued


async def test_recv_waits_for_a_datagram(lab: Lab) -> None:
    tx, rx = await _udp_pair(lab)
    got: list[bytes] = []
    async with trio.open_nursery() as nursery:

        async def reader() -> None:
            got.append(await rx.recv(100))

        nursery.start_soon(reader)
        await trio.sleep(0.01)
        assert got == []
        await tx.send(b"late")
    assert got == [b"late"]


async def test_a_closed_socket_raises_ebadf(lab: Lab) -> None:
    tx, rx = await _udp_pair(lab)
    tx.close()
    rx.close()
    with pytest.raises(OSError) as e:
        await tx.send(b"x")
    assert e.value.errno == errno.EBADF
    with pytest.raises(OSError) as e:
        await rx.recv(100)
    assert e.value.errno == errno.EBADF
