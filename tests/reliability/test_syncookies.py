"""Issue 13, item 5: SYN cookies keep a listener reachable during a SYN flood.

    a (10.0.0.1, legitimate client) ── eth0 ── b (listener 10.0.0.2:7000) ── eth1 ── Port
                                                 spoofed SYNs from 198.18.0.0/16 arrive on
                                                 eth1; b's SYN-ACKs to them go back there

The spoofed SYNs fill the SYN queue (they are never answered). With
``tcp_syncookies=1`` every further SYN gets a cookie SYN-ACK and no state, and
the ACK of a real client rebuilds the request from the cookie: all 19
legitimate clients connect. With 0 they are dropped (``TCPReqQFullDrop``).
Before, the sysctl was accepted and ignored.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import cast

import pytest
import trio

from netstack.core.sock import AF_INET, AF_INET6, SOCK_STREAM
from netstack.host import Host, Lab, Port
from netstack.ipv4.syncookies import MSSTAB, cookie_hash
from netstack.socket import Socket
from netstack.tcp import TcpSock, tcp_of
from netstack.tcp.sock import RequestSock
from netstack.tcp.syncookies import (
    check_tcp_syn_cookie,
    cookie_init_timestamp,
    secure_tcp_syn_cookie,
)
from netstack.testing import floods
from netstack.wire.ipv4 import aton
from netstack.wire.ipv6 import aton as aton6

PORT = 7000
BACKLOG = 8
ATTACKER_MAC = bytes.fromhex("0200000000ee")


async def rig(lab: Lab, syncookies: int) -> tuple[Host, Host, Port]:
    a, b = lab.add_host("a"), lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0")
    port = lab.add_port("b:eth1")
    a.ip("addr add 10.0.0.1/24 dev eth0")
    b.ip("addr add 10.0.0.2/24 dev eth0")
    a.ip("-6 addr add 2001:db8::1/64 dev eth0 nodad")
    b.ip("-6 addr add 2001:db8::2/64 dev eth0 nodad")
    b.ip("addr add 192.0.2.2/24 dev eth1")
    b.ip("route add 198.18.0.0/16 via 192.0.2.1")
    b.ip("neigh add 192.0.2.1 lladdr 02:00:00:00:00:ee dev eth1")
    b.ip("-6 addr add 2001:db8:e::2/64 dev eth1 nodad")
    b.ip("-6 route add 2001:db8:99::/64 via 2001:db8:e::1")
    b.ip("-6 neigh add 2001:db8:e::1 lladdr 02:00:00:00:00:ee dev eth1")
    b.sysctl(f"net.ipv4.tcp_syncookies={syncookies}")
    await trio.sleep(1)
    return a, b, port


async def flood(b: Host, port: Port, n: int, family: int, seed: int) -> None:
    mac = bytes(b.dev("eth1").dev_addr)
    if family == AF_INET:
        frames = floods.syn_flood(
            n, mac, ATTACKER_MAC, aton("198.18.0.0"), aton("10.0.0.2"), PORT, seed=seed
        )
    else:
        frames = floods.syn_flood6(
            n, mac, ATTACKER_MAC, aton6("2001:db8:99::"), aton6("2001:db8::2"), PORT, seed=seed
        )
    for frame in frames:
        port.send_nowait(frame)
    await trio.sleep(0.001)
    port.drain()


async def serve(srv: Socket, got: list[bytes]) -> None:
    while True:
        conn, _ = await srv.accept()
        got.append(await conn.recv(100))
        conn.close()


async def flooder(b: Host, port: Port, family: int) -> None:
    """The flood goes on: 5 spoofed SYNs every 50 ms."""
    seed = 100
    while True:
        await flood(b, port, 5, family, seed=seed)
        seed += 1
        await trio.sleep(0.05)


async def clients(a: Host, family: int, n: int) -> int:
    """*n* sequential clients; how many connected and sent within 10 s each."""
    addr = "10.0.0.2" if family == AF_INET else "2001:db8::2"
    ok = 0
    for i in range(n):
        c = a.socket(family, SOCK_STREAM)
        with trio.move_on_after(10):
            await c.connect((addr, PORT))
            await c.sendall(b"hello %d" % i)
            ok += 1
        c.close()
    return ok


@pytest.mark.parametrize("family", [AF_INET, AF_INET6])
async def test_19_of_19_connect_during_a_syn_flood(
    lab: Lab, autojump_clock: object, family: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="netstack")
    a, b, port = await rig(lab, syncookies=1)
    srv = b.socket(family, SOCK_STREAM)
    await srv.bind(("", PORT))
    srv.listen(BACKLOG)
    lsk = srv.sock
    assert isinstance(lsk, TcpSock)
    await flood(b, port, 100, family, seed=1)
    assert lsk.syn_queue_len == BACKLOG + 1  # full: qlen > sk_max_ack_backlog
    got: list[bytes] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve, srv, got)
        nursery.start_soon(flooder, b, port, family)
        ok = await clients(a, family, 19)
        await trio.sleep(0.1)
        nursery.cancel_scope.cancel()
    assert ok == 19
    assert sorted(got) == sorted(b"hello %d" % i for i in range(19))
    ext = tcp_of(b.net).snmp()["TcpExt"]
    assert ext.SyncookiesRecv == 19
    assert ext.SyncookiesFailed == 0
    assert ext.SyncookiesSent == ext.TCPReqQFullDoCookies > 100
    assert ext.TCPReqQFullDrop == 0
    assert lsk.syn_queue_len == BACKLOG + 1  # the flood's requests, never more
    where = "10.0.0.2:7000" if family == AF_INET else "[::]:7000"
    where = "0.0.0.0:7000" if family == AF_INET else where
    proto = "request_sock_TCP" if family == AF_INET else "request_sock_TCPv6"
    flood_lines = [r.getMessage() for r in caplog.records if "SYN flooding" in r.getMessage()]
    assert flood_lines == [
        f"event='syn_flood' host='b' msg='TCP: {proto}: Possible SYN flooding on port"
        f" {where}. Sending cookies.'"
    ]


async def test_without_cookies_the_flood_locks_clients_out(
    lab: Lab, autojump_clock: object
) -> None:
    a, b, port = await rig(lab, syncookies=0)
    srv = b.socket(AF_INET, SOCK_STREAM)
    await srv.bind(("", PORT))
    srv.listen(BACKLOG)
    await flood(b, port, 100, AF_INET, seed=1)
    got: list[bytes] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve, srv, got)
        nursery.start_soon(flooder, b, port, AF_INET)
        # Requests of a full queue lose SYN-ACK retries (reqsk_timer_handler keeps room
        # for young ones) and expire together, 7 s after they came; a client whose SYN
        # retransmission fell on that instant would get in. Start off that beat.
        await trio.sleep(0.25)
        ok = await clients(a, AF_INET, 3)
        nursery.cancel_scope.cancel()
    assert ok == 0
    ext = tcp_of(b.net).snmp()["TcpExt"]
    assert ext.SyncookiesSent == 0
    assert ext.TCPReqQFullDrop == ext.ListenDrops > 100


async def test_cookie_arithmetic(lab: Lab, autojump_clock: object) -> None:
    """The cookie carries the MSS index and the minute; two minutes later it is stale."""
    b = lab.add_host("b")
    tcp = tcp_of(b.net)
    h = cookie_hash(tcp, aton("198.18.0.1"), aton("10.0.0.2"), 40000, PORT)
    for mssind in range(len(MSSTAB)):
        cookie = secure_tcp_syn_cookie(h, 12345, mssind, 7)
        assert check_tcp_syn_cookie(h, cookie, 12345, 7) == mssind
        assert check_tcp_syn_cookie(h, cookie, 12345, 8) == mssind  # one minute later
        assert check_tcp_syn_cookie(h, cookie, 12345, 9) == 0xFFFFFFFF  # MAX_SYNCOOKIE_AGE
        assert check_tcp_syn_cookie(h, cookie, 999_999, 7) >= len(MSSTAB)  # another ISN
    # deterministic per seed: the same host name and seed give the same cookie
    assert secure_tcp_syn_cookie(h, 1, 3, 0) == secure_tcp_syn_cookie(
        cookie_hash(tcp, aton("198.18.0.1"), aton("10.0.0.2"), 40000, PORT), 1, 3, 0
    )
    # the timestamp: wscale 7, SACK in the low six bits, never ahead of now
    # the fields cookie_init_timestamp reads (a bare RequestSock.__new__ runs a
    # compiled RequestSock's __init__, which needs a listener)
    req = cast(
        "RequestSock", SimpleNamespace(wscale_ok=True, snd_wscale=7, sack_ok=1, ecn_ok=False)
    )
    ts = cookie_init_timestamp(req, 100_000)
    assert ts & 63 == 7 | 16 and 100_000 - 64 < ts <= 100_000
    req.wscale_ok, req.sack_ok = False, 0
    assert cookie_init_timestamp(req, 100_000) & 63 == 0xF
