"""TCP Fast Open between two hosts through the Trio socket API (issue 16).

a (10.0.0.1) ── veth ── b (10.0.0.2). The client asks for a cookie, caches it,
and then sends data in its SYN; the server takes the data before the handshake
ends. Exact TcpExt counters; the wire checked with dpkt.
"""

from __future__ import annotations

import errno
import functools

import dpkt
import pytest
import trio

from netstack.core.sock import AF_INET, SOCK_STREAM
from netstack.host import Host, Lab
from netstack.socket import Socket
from netstack.tcp import TcpSock, tcp_of
from netstack.tcp.fastopen import tcp_fastopen_key_text
from netstack.tcp.tcp import (
    MSG_FASTOPEN,
    TCP_FASTOPEN,
    TCP_FASTOPEN_CONNECT,
    TCP_FASTOPEN_KEY,
    TCP_FASTOPEN_NO_COOKIE,
)
from netstack.testing import builders

PORT = 5001
SOL_TCP = 6
KEY = "01234567-89abcdef-fedcba98-76543210"
pair = functools.partial(builders.pair, ipv4_only=True)


def ext(host: Host) -> dict[str, int]:
    snap = tcp_of(host.net).snmp()["TcpExt"]
    return {k: v for k, v in snap.as_dict().items() if k.startswith("TCPFastOpen")}


def fo_options(frames: list[tuple[float, bytes, bool]]) -> list[tuple[str, bytes | None, int]]:
    """(flags, Fast Open option data or None, payload length) of each TCP segment."""
    out = []
    for _, frame, _ in frames:
        eth = dpkt.ethernet.Ethernet(frame)
        ip = eth.data
        if not isinstance(ip, dpkt.ip.IP) or not isinstance(ip.data, dpkt.tcp.TCP):
            continue
        tcp = ip.data
        fo = None
        for kind, data in dpkt.tcp.parse_opts(tcp.opts):
            if kind == 34:
                fo = data
        flags = ("S" if tcp.flags & dpkt.tcp.TH_SYN else "") + (
            "." if tcp.flags & dpkt.tcp.TH_ACK else ""
        )
        out.append((flags, fo, len(tcp.data)))
    return out


async def server(b: Host, backlog: int = 8, qlen: int = 8) -> Socket:
    b.sysctl("net.ipv4.tcp_fastopen=3")
    b.sysctl(f"net.ipv4.tcp_fastopen_key={KEY}")
    srv = b.socket(AF_INET, SOCK_STREAM)
    await srv.bind(("", PORT))
    srv.setsockopt(SOL_TCP, TCP_FASTOPEN, qlen)
    srv.listen(backlog)
    return srv


async def test_cookie_then_data_in_syn(lab: Lab, autojump_clock: object) -> None:
    a, b = pair(lab)
    srv = await server(b)
    cap = a.capture("eth0")
    got: list[bytes] = []
    children: list[bool] = []

    async def serve(n: int) -> None:
        for _ in range(n):
            conn, _ = await srv.accept()
            sk = conn.sock
            assert isinstance(sk, TcpSock)
            children.append(sk.syn_fastopen_child)
            got.append(await conn.recv(1000))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve, 2)
        # no cookie yet: a blocking sendto waits for the handshake, the data follows it
        c1 = a.socket(AF_INET, SOCK_STREAM)
        assert await c1.sendto(b"first", MSG_FASTOPEN, ("10.0.0.2", PORT)) == 5
        # the cookie is cached: the SYN carries the data
        c2 = a.socket(AF_INET, SOCK_STREAM)
        assert await c2.sendto(b"second", MSG_FASTOPEN, ("10.0.0.2", PORT)) == 6
        sk2 = c2.sock
        assert isinstance(sk2, TcpSock)
        assert sk2.syn_data_acked
    cap.stop()
    assert got == [b"first", b"second"]
    # the second child was accepted before the handshake's ACK, the data already in
    assert children == [False, True]  # the second child came from its SYN (tcp_try_fastopen)
    segs = fo_options(cap.frames)
    cookie = segs[1][1]
    assert segs[0] == ("S", b"", 0)  # a cookie request
    assert segs[1][0] == "S." and cookie is not None and len(cookie) == 8
    # the blocked sender's data carries the handshake's ACK (sk_write_pending): no pure ACK
    assert segs[2] == (".", None, 5)
    assert ("S", cookie, 6) in segs  # SYN-data with the cookie
    assert ext(a)["TCPFastOpenActive"] == 1
    assert ext(b)["TCPFastOpenCookieReqd"] == 1
    assert ext(b)["TCPFastOpenPassive"] == 1
    assert ext(b)["TCPFastOpenPassiveFail"] == 0


async def test_cookie_is_siphash_of_the_addresses(lab: Lab, autojump_clock: object) -> None:
    a, b = pair(lab)
    srv = await server(b)
    assert b.sysctl("net.ipv4.tcp_fastopen_key") == KEY
    assert tcp_fastopen_key_text(tcp_of(b.net)) == KEY
    two = f"{KEY},00000001-00000002-00000003-00000004"  # a primary and a backup key
    b.sysctl(f"net.ipv4.tcp_fastopen_key={two}")
    assert b.sysctl("net.ipv4.tcp_fastopen_key") == two
    b.sysctl(f"net.ipv4.tcp_fastopen_key={KEY}")
    with pytest.raises(Exception, match="Invalid argument"):
        b.sysctl("net.ipv4.tcp_fastopen_key=1-2-3")
    c = a.socket(AF_INET, SOCK_STREAM)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(srv.accept)
        await c.sendto(b"x", MSG_FASTOPEN, ("10.0.0.2", PORT))
    cache = tcp_of(a.net).tcp_fastopen_cache.entries
    [(key, tm)] = cache.items()
    assert key == (AF_INET, 0x0A000001, 0x0A000002)  # tcp_metrics: (family, saddr, daddr)
    # SipHash-2-4 of saddr||daddr (the SYN's IP header) under the key; the same
    # cookie Linux 6.18 gives for this key (tests/packetdrill/fastopen-server.pkt)
    from netstack.core.siphash import siphash, siphash_key
    from netstack.tcp.fastopen import tcp_fastopen_key_parse

    k = tcp_fastopen_key_parse(KEY)
    assert k is not None
    want = siphash(bytes([10, 0, 0, 1, 10, 0, 0, 2]), siphash_key(k)).to_bytes(8, "little")
    assert tm.cookie.val == want
    assert tm.mss == 1460


async def test_fastopen_connect_defers_the_syn(lab: Lab, autojump_clock: object) -> None:
    a, b = pair(lab)
    srv = await server(b)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(srv.accept)
        c = a.socket(AF_INET, SOCK_STREAM)
        c.setsockopt(SOL_TCP, TCP_FASTOPEN_CONNECT, 1)
        await c.connect(("10.0.0.2", PORT))  # no cookie: a SYN asking for one
    cap = a.capture("eth0")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(srv.accept)
        c2 = a.socket(AF_INET, SOCK_STREAM)
        c2.setsockopt(SOL_TCP, TCP_FASTOPEN_CONNECT, 1)
        assert c2.getsockopt(SOL_TCP, TCP_FASTOPEN_CONNECT) == 1
        await c2.connect(("10.0.0.2", PORT))  # a cookie: connect() returns, nothing sent
        sk2 = c2.sock
        assert isinstance(sk2, TcpSock)
        assert sk2.state_name == "SYN-SENT" and sk2.writable()  # tcp_poll: EPOLLOUT
        await trio.sleep(0.5)
        assert fo_options(cap.frames) == []
        assert await c2.send(b"hello") == 5
    cap.stop()
    syn = fo_options(cap.frames)[0]
    assert syn[0] == "S" and syn[2] == 5 and syn[1] is not None and len(syn[1]) == 8


async def test_bad_cookie_and_queue_overflow_fall_back(lab: Lab, autojump_clock: object) -> None:
    # two machines, a wire of 1 ms: the two Fast Open SYNs below are both pending
    # at b (over a veth the first's handshake is done inside its sendto, at its
    # local_bh_enable, and fastopenq.qlen is 0 again when the second SYN comes)
    a, b = pair(lab, kind="nic", delay=0.001)
    srv = await server(b, qlen=1)
    accepted: list[bytes] = []

    async def serve(n: int) -> None:
        for _ in range(n):
            conn, _ = await srv.accept()
            accepted.append(await conn.recv(100))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve, 1)
        c = a.socket(AF_INET, SOCK_STREAM)
        await c.sendto(b"cookie please", MSG_FASTOPEN, ("10.0.0.2", PORT))
    # a wrong cookie: the data waits for the handshake (TCPFastOpenPassiveFail)
    tm = next(iter(tcp_of(a.net).tcp_fastopen_cache.entries.values()))
    good = tm.cookie.val
    tm.cookie.val = bytes(8)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve, 1)
        c = a.socket(AF_INET, SOCK_STREAM)
        assert await c.sendto(b"bad", MSG_FASTOPEN, ("10.0.0.2", PORT)) == 3
    assert ext(b)["TCPFastOpenPassiveFail"] == 1
    assert ext(a)["TCPFastOpenActiveFail"] == 1  # its SYN data was not acknowledged
    assert tm.cookie.val == good  # the SYN-ACK brought the right one back
    # two Fast Open SYNs at once on a queue of one: the second is a normal handshake
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve, 2)
        for payload in (b"one", b"two"):
            s = a.socket(AF_INET, SOCK_STREAM)
            nursery.start_soon(s.sendto, payload, MSG_FASTOPEN, ("10.0.0.2", PORT))
    assert sorted(accepted) == sorted([b"cookie please", b"bad", b"one", b"two"])
    assert ext(b)["TCPFastOpenListenOverflow"] == 1
    assert ext(b)["TCPFastOpenPassive"] == 1


async def test_errnos(lab: Lab, autojump_clock: object) -> None:
    a, b = pair(lab)
    srv = await server(b)
    a.sysctl("net.ipv4.tcp_fastopen=0")
    c = a.socket(AF_INET, SOCK_STREAM)
    with pytest.raises(OSError) as e:
        await c.sendto(b"x", MSG_FASTOPEN, ("10.0.0.2", PORT))
    assert e.value.errno == errno.EOPNOTSUPP
    with pytest.raises(OSError) as e:
        c.setsockopt(SOL_TCP, TCP_FASTOPEN_CONNECT, 1)
    assert e.value.errno == errno.EOPNOTSUPP
    a.sysctl("net.ipv4.tcp_fastopen=1")
    with pytest.raises(OSError) as e:
        c.setsockopt(SOL_TCP, TCP_FASTOPEN_CONNECT, 2)
    assert e.value.errno == errno.EINVAL
    with pytest.raises(OSError) as e:
        srv.setsockopt(SOL_TCP, TCP_FASTOPEN, -1)
    assert e.value.errno == errno.EINVAL
    with pytest.raises(OSError) as e:
        srv.setsockopt(SOL_TCP, TCP_FASTOPEN_KEY, b"short")
    assert e.value.errno == errno.EINVAL
    srv.setsockopt(SOL_TCP, TCP_FASTOPEN_KEY, bytes(range(16)))
    assert srv.getsockopt(SOL_TCP, TCP_FASTOPEN_KEY) == bytes(range(16))
    srv.setsockopt(SOL_TCP, TCP_FASTOPEN_NO_COOKIE, 1)
    assert srv.getsockopt(SOL_TCP, TCP_FASTOPEN_NO_COOKIE) == 1
    async with trio.open_nursery() as nursery:
        nursery.start_soon(srv.accept)
        await c.connect(("10.0.0.2", PORT))
    with pytest.raises(OSError) as e:  # connected already
        await c.sendto(b"x", MSG_FASTOPEN, ("10.0.0.2", PORT))
    assert e.value.errno == errno.EISCONN


async def test_backup_key_cookie_is_taken_and_replaced(lab: Lab, autojump_clock: object) -> None:
    """Key rotation: a cookie of the listener's backup key still opens with data
    (TCPFastOpenPassiveAltKey), and the SYN-ACK hands out the primary key's cookie."""
    a, b = pair(lab)
    srv = await server(b)
    old, new = bytes(range(16)), bytes(range(16, 32))
    srv.setsockopt(SOL_TCP, TCP_FASTOPEN_KEY, old)

    async def serve(n: int) -> None:
        for _ in range(n):
            conn, _ = await srv.accept()
            await conn.recv(100)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve, 1)
        c = a.socket(AF_INET, SOCK_STREAM)
        await c.sendto(b"hello", MSG_FASTOPEN, ("10.0.0.2", PORT))
    tm = next(iter(tcp_of(a.net).tcp_fastopen_cache.entries.values()))
    old_cookie = tm.cookie.val
    srv.setsockopt(SOL_TCP, TCP_FASTOPEN_KEY, new + old)  # primary new, backup old
    assert srv.getsockopt(SOL_TCP, TCP_FASTOPEN_KEY) == new + old
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve, 1)
        c = a.socket(AF_INET, SOCK_STREAM)
        await c.sendto(b"again", MSG_FASTOPEN, ("10.0.0.2", PORT))
    assert ext(b)["TCPFastOpenPassive"] == 1
    assert ext(b)["TCPFastOpenPassiveAltKey"] == 1
    assert ext(a)["TCPFastOpenActive"] == 1
    assert tm.cookie.val != old_cookie and len(tm.cookie.val) == 8


async def test_blackhole_pauses_active_fastopen(lab: Lab, autojump_clock: object) -> None:
    """tcp_fastopen_blackhole_timeout_sec: a SYN-data timing out a third time pauses
    Fast Open for the Net for that long (a plain SYN, the data after the handshake),
    then the SYN carries the cookie and the data again."""
    a, b = pair(lab)
    srv = await server(b, backlog=16)
    a.sysctl("net.ipv4.tcp_fastopen_blackhole_timeout_sec=3600")
    addr = ("10.0.0.2", PORT)
    c1 = a.socket(AF_INET, SOCK_STREAM)
    assert await c1.sendto(b"cookie", MSG_FASTOPEN, addr) == 6  # caches the cookie
    await trio.sleep(1)  # acknowledged (else c1's own timeouts would count too)
    b.ip("route add blackhole 10.0.0.1/32")  # the server's answers vanish
    c2 = a.socket(AF_INET, SOCK_STREAM)
    with pytest.raises(OSError) as exc:
        await c2.sendto(b"lost", MSG_FASTOPEN, addr)
    assert exc.value.errno == errno.ETIMEDOUT
    assert ext(a)["TCPFastOpenBlackhole"] == 1
    assert ext(a)["TCPFastOpenActiveFail"] == 1
    b.ip("route del blackhole 10.0.0.1/32")
    cap = a.capture("eth0")
    c3 = a.socket(AF_INET, SOCK_STREAM)  # paused: a plain SYN
    assert await c3.sendto(b"plain", MSG_FASTOPEN, addr) == 5
    await trio.sleep(3600)  # the pause is over
    c4 = a.socket(AF_INET, SOCK_STREAM)
    assert await c4.sendto(b"again", MSG_FASTOPEN, addr) == 5
    cap.stop()
    syns = [s for s in fo_options(cap.frames) if s[0] == "S"]
    assert syns[0] == ("S", None, 0)  # no Fast Open option, no data
    assert syns[1][1] is not None and len(syns[1][1]) == 8 and syns[1][2] == 5
    assert ext(a)["TCPFastOpenActive"] == 1
    assert ext(a)["TCPFastOpenBlackhole"] == 1
    srv.close()


async def test_blackhole_detection_off_by_default(lab: Lab, autojump_clock: object) -> None:
    """tcp_fastopen_blackhole_timeout_sec is 0 since 5.14: timeouts pause nothing."""
    a, b = pair(lab)
    srv = await server(b, backlog=16)
    assert a.sysctl("net.ipv4.tcp_fastopen_blackhole_timeout_sec") == "0"
    addr = ("10.0.0.2", PORT)
    c1 = a.socket(AF_INET, SOCK_STREAM)
    assert await c1.sendto(b"cookie", MSG_FASTOPEN, addr) == 6
    await trio.sleep(1)
    b.ip("route add blackhole 10.0.0.1/32")
    c2 = a.socket(AF_INET, SOCK_STREAM)
    with pytest.raises(OSError):
        await c2.sendto(b"lost", MSG_FASTOPEN, addr)
    b.ip("route del blackhole 10.0.0.1/32")
    c3 = a.socket(AF_INET, SOCK_STREAM)
    assert await c3.sendto(b"data", MSG_FASTOPEN, addr) == 4
    sk3 = c3.sock
    assert isinstance(sk3, TcpSock)
    assert sk3.syn_data_acked  # Fast Open as before
    assert ext(a)["TCPFastOpenBlackhole"] == 0
    # tcp_fastopen_active_detect_blackhole counts the third timeout all the same
    assert ext(a)["TCPFastOpenActiveFail"] == 1
    srv.close()
