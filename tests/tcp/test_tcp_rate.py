"""Delivery rate sampling (net/ipv4/tcp_rate.c) on a bulk transfer."""

from __future__ import annotations

from typing import cast

import trio
from helpers import add_addr

from netstack.core.sock import AF_INET, SOCK_STREAM
from netstack.host import Lab
from netstack.tcp.rate import tcp_compute_delivery_rate
from netstack.tcp.sock import TcpSock
from netstack.tcp.tcp import tcp_disconnect

SIZE = 4_000_000


async def test_bulk_transfer_delivery_rate_is_the_link_rate_not_app_limited(
    lab: Lab, autojump_clock: object
) -> None:
    a, b = lab.add_host("a"), lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0", kind="nic", rate=20e6, delay=0.001)
    add_addr(a, "eth0", "10.0.0.1/24")
    add_addr(b, "eth0", "10.0.0.2/24")
    srv = b.socket(AF_INET, SOCK_STREAM)
    await srv.bind(("", 80))
    srv.listen(1)
    c = a.socket(AF_INET, SOCK_STREAM)
    await c.connect(("10.0.0.2", 80))
    conn, _ = await srv.accept()
    sk = cast("TcpSock", c.sock)
    # the SYN-ACK makes no sample: the SYN went out with delivered_mstamp still 0,
    # "no timing" to tcp_rate_gen(), as Linux 6.18 (delivery-rate-syn.pkt); the
    # socket is still app-limited (tcp_init_sock's app_limited = ~0U)
    syn_sample = (sk.rate_delivered, sk.rate_interval_us, sk.rate_app_limited)
    assert syn_sample == (0, 0, True)
    got = 0

    async def drain() -> None:
        nonlocal got
        while got < SIZE:
            got += len(await conn.recv(65536))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(drain)
        await c.sendall(b"x" * SIZE)
    assert got == SIZE
    rate = tcp_compute_delivery_rate(sk)
    # a full pipe: the sample is not application-limited, and the rate is the
    # link's 20 Mbit/s in payload bytes: 1448 of every 1538 bytes on the wire
    # (1514-byte frame, FCS, preamble and inter-frame gap) — 2353667 B/s
    assert not sk.rate_app_limited
    line = 20e6 / 8 * 1448 / 1538
    assert abs(rate - line) < 0.001 * line, rate
    info = a.ss("-ti").splitlines()[2].split()
    assert info[info.index("delivery_rate") + 1] == "18.8Mbps"  # ss: bytes/s × 8
    assert "app_limited" not in info
    tcp_disconnect(sk)  # as tcp_init_sock: app-limited until the first ACK again
    assert (sk.app_limited, sk.rate_app_limited) == (0xFFFFFFFF, True)
