"""recvmmsg(2): one checkpoint for a batch, each datagram with its own source
(the address is formatted once per run of datagrams from one sender); sendmmsg(2)'s
partial sends."""

from __future__ import annotations

import errno

import pytest
import trio
import trio.testing
from helpers import add_addr

import netstack


async def test_recvmmsg_names_each_datagrams_own_source(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, c = lab.add_host("a"), lab.add_host("c")
    lab.add_link("a:eth0", "c:eth0")
    add_addr(a, "eth0", "10.0.0.1/24")
    add_addr(a, "eth0", "10.0.0.2/24")
    add_addr(c, "eth0", "10.0.0.3/24")
    rx = c.socket()
    await rx.bind(("0.0.0.0", 9000))
    tx_a, tx_b = a.socket(), a.socket()
    await tx_a.bind(("10.0.0.1", 1111))
    await tx_b.bind(("10.0.0.2", 2222))
    for sock in (tx_a, tx_b):  # ARP first, so the order below is the wire's
        await sock.sendto(b"warm", ("10.0.0.3", 9000))
        await rx.recvfrom(64)
    for payload, sock in [(b"a1", tx_a), (b"a2", tx_a), (b"b1", tx_b), (b"a3", tx_a)]:
        await sock.sendto(payload, ("10.0.0.3", 9000))
        await trio.sleep(0.001)
    got = await rx.recvmmsg(64, 8)
    assert got == [
        (b"a1", ("10.0.0.1", 1111)),
        (b"a2", ("10.0.0.1", 1111)),
        (b"b1", ("10.0.0.2", 2222)),
        (b"a3", ("10.0.0.1", 1111)),
    ]
    # the source port alone changes too
    tx_a2 = a.socket()
    await tx_a2.bind(("10.0.0.1", 3333))
    await tx_a.sendto(b"x", ("10.0.0.3", 9000))
    await tx_a2.sendto(b"y", ("10.0.0.3", 9000))
    await trio.sleep(0.001)
    assert await rx.recvmmsg(64, 8) == [(b"x", ("10.0.0.1", 1111)), (b"y", ("10.0.0.1", 3333))]


async def test_sendmmsg_stops_at_the_first_failure_after_one_was_sent(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """sendmmsg(2): an error on the first datagram is raised; a later one ends the
    batch, and the call returns how many were sent before it."""
    a, c = lab.add_host("a"), lab.add_host("c")
    lab.add_link("a:eth0", "c:eth0")
    add_addr(a, "eth0", "10.0.0.1/24")
    add_addr(c, "eth0", "10.0.0.3/24")
    rx = c.socket()
    await rx.bind(("0.0.0.0", 9000))
    tx = a.socket()
    dst = ("10.0.0.3", 9000)
    too_big = b"\x00" * 70_000  # more than a UDP datagram holds: EMSGSIZE
    assert await tx.sendmmsg([(b"one", dst), (b"two", dst), (too_big, dst), (b"four", dst)]) == 2
    with pytest.raises(OSError) as err:
        await tx.sendmmsg([(too_big, dst), (b"five", dst)])
    assert err.value.errno == errno.EMSGSIZE
    assert await tx.sendmmsg([]) == 0
    await trio.sleep(0.001)
    assert [data for data, _ in await rx.recvmmsg(64, 8)] == [b"one", b"two"]
