"""Windows, timers and RFC 5961: zero windows and probes, keepalive, Nagle, challenge ACKs."""

from __future__ import annotations

import functools

import pytest
import trio
from helpers import connected_tcp

from netstack.core.sock import AF_INET, SOCK_STREAM
from netstack.errors import ConfigError
from netstack.host import Host, Lab
from netstack.socket import Socket
from netstack.tcp import TcpSock, tcp_of
from netstack.tcp.sock import TimewaitSock
from netstack.testing import builders
from netstack.testing.tcpctx import TcpContext

PORT = 6001


# this file's hosts: a NIC cable, IPv6 on
pair = functools.partial(builders.pair, kind="nic", ipv4_only=False)


async def connected(a: Host, b: Host) -> tuple[Socket, Socket]:
    return await connected_tcp(a, b, PORT)


def tsk(s: Socket) -> TcpSock:
    sk = s.sock
    assert isinstance(sk, TcpSock)
    return sk


async def test_zero_window_probes_then_resumes(lab: Lab, autojump_clock: object) -> None:
    """A receiver that stops reading closes its window; the sender probes and waits."""
    a, b = pair(lab, delay=0.001)
    b.sysctl("net.ipv4.tcp_rmem=4096 16384 16384")
    b.sysctl("net.ipv4.tcp_moderate_rcvbuf=0")
    c, conn = await connected(a, b)
    payload = bytes(range(256)) * 1024  # 256 KiB, far more than b buffers
    async with trio.open_nursery() as n:
        n.start_soon(c.sendall, payload)
        await trio.sleep(5)
        sk = tsk(c)
        assert sk.snd_wnd == 0  # the peer's window is closed
        # 6.18: the window closes by itself (TCPToZeroWindowAdv): the segments the
        # window allows are taken on the fast path while their truesize fits the
        # pages reserved (sk_forward_alloc), and on the slow path while their
        # length fits below sk_rcvbuf (tcp_can_ingest), so none is refused; as
        # Linux 6.18 over a veth (TCPRcvQDrop 0, TCPToZeroWindowAdv 1)
        ext = tcp_of(b.net).snmp()["TcpExt"]
        assert (ext.TCPRcvQDrop, ext.TCPToZeroWindowAdv) == (0, 1)
        # nothing is in flight, so the probe timer runs: window probes
        # (TCPWinProbe) and no RTO; Linux 6.18 over a veth counts the same
        # (RetransSegs 1, TCPWinProbe 4, TCPTimeouts 0)
        mibs = tcp_of(a.net).snmp()
        probes = (mibs["Tcp"].RetransSegs, mibs["TcpExt"].TCPWinProbe, mibs["TcpExt"].TCPTimeouts)
        assert probes == (1, 4, 0)
        got = bytearray()
        while len(got) < len(payload):
            got += await conn.recv(1 << 16)
    assert got == payload
    assert tcp_of(b.net).snmp()["TcpExt"].TCPFromZeroWindowAdv == 1  # reopened once


async def test_keepalive_detects_a_dead_peer(lab: Lab, autojump_clock: object) -> None:
    a, b = pair(lab)
    c, _ = await connected(a, b)
    c.setsockopt(1, 9, 1)  # SO_KEEPALIVE
    c.setsockopt(6, 4, 10)  # TCP_KEEPIDLE 10 s
    c.setsockopt(6, 5, 2)  # TCP_KEEPINTVL 2 s
    c.setsockopt(6, 6, 3)  # TCP_KEEPCNT 3
    await trio.sleep(15)
    # one probe at 10 s, answered (still alive); the next is due 10 s after the answer
    assert tcp_of(a.net).snmp()["TcpExt"].TCPKeepAlive == 1
    assert tsk(c).state_name == "ESTAB"
    b.ip("link set eth0 down")  # the peer vanishes
    await trio.sleep(30)
    with pytest.raises(TimeoutError):
        await c.recv(10)
    assert tsk(c).state_name == "UNCONN"


async def test_nagle_holds_small_segments_nodelay_does_not(
    lab: Lab, autojump_clock: object
) -> None:
    a, b = pair(lab, delay=0.01)
    c, _conn = await connected(a, b)
    cap = a.capture("eth0")
    for _ in range(5):
        await c.send(b"x")  # Nagle: one small segment in flight at a time
    await trio.sleep(0.001)
    small = [f for _, f, out in cap.frames if out and len(f) > 66]
    assert len(small) == 1
    await trio.sleep(0.5)
    a.sysctl("net.ipv4.tcp_autocorking=0")  # else TX completions pace the writes (below)
    c.setsockopt(6, 1, 1)  # TCP_NODELAY
    cap.frames.clear()
    for _ in range(5):
        await c.send(b"y")
    await trio.sleep(0.001)
    assert len([f for _, f, out in cap.frames if out and len(f) > 66]) == 5


async def test_autocorking_coalesces_small_writes_until_tx_completion(
    lab: Lab, autojump_clock: object
) -> None:
    """TCP_NODELAY does not stop autocorking (3.14+): while the first segment
    is still in the NIC (not yet freed by TX completion), later small writes
    grow the tail skb instead of leaving one by one."""
    a, b = pair(lab, delay=0.01)
    c, conn = await connected(a, b)
    c.setsockopt(6, 1, 1)  # TCP_NODELAY
    await trio.sleep(0.5)
    corked0 = a.nstat().get("TcpExtTCPAutoCorking", 0)
    cap = a.capture("eth0")
    for _ in range(5):
        await c.send(b"y")
    got = b""
    while len(got) < 5:
        got += await conn.recv(100)
    assert got == b"yyyyy"
    data = [f for _, f, out in cap.frames if out and len(f) > 66]
    # the payloads: the first two alone, then the three writes the cork held until the
    # TX completion; the socket was throttled once (TCPAutoCorking)
    assert [len(f) - 66 for f in data] == [1, 1, 3]
    assert a.nstat().get("TcpExtTCPAutoCorking", 0) - corked0 == 1


async def test_rfc5961_rst_and_syn_in_window_get_a_challenge_ack(
    lab: Lab, autojump_clock: object
) -> None:
    ctx = TcpContext(lab)
    sock = await ctx.create_connected()
    # a RST inside the window but not at rcv_nxt: challenge ACK, connection lives
    await ctx.send_segment("R", seq=ctx.snd_nxt + 100)
    await ctx.expect_segment(".", seq=1, ack=1)
    assert ctx.sk.state_name == "ESTAB"
    ext = tcp_of(ctx.host.net).snmp()["TcpExt"]
    assert ext.TCPChallengeACK == 1
    # a SYN on an established connection: challenge ACK too
    await trio.sleep(1)  # past the per-socket out-of-window rate limit
    await ctx.send_segment("S")
    await ctx.expect_segment(".", seq=1, ack=1)
    ext = tcp_of(ctx.host.net).snmp()["TcpExt"]
    assert ext.TCPSYNChallenge == 1 and ext.TCPChallengeACK == 2
    assert ctx.sk.state_name == "ESTAB"
    # the RST at exactly rcv_nxt resets, silently
    await ctx.send_segment("R")
    await ctx.expect_no_segment()
    with pytest.raises(ConnectionResetError):
        await sock.recv(10)


async def test_bad_checksum_is_counted_and_dropped(lab: Lab, autojump_clock: object) -> None:
    ctx = TcpContext(lab)  # its NIC leaves the checksum to TCP (rx_csum "none")
    await ctx.create_connected()
    await ctx.send_segment("R", corrupt_checksum=True)  # at rcv_nxt: would reset
    await ctx.expect_no_segment()
    assert tcp_of(ctx.host.net).snmp()["Tcp"].InCsumErrors == 1
    assert ctx.sk.state_name == "ESTAB"


async def test_so_rcvbuf_sets_an_honest_window(lab: Lab, autojump_clock: object) -> None:
    a, b = pair(lab)
    srv = b.socket(AF_INET, SOCK_STREAM)
    srv.setsockopt(1, 8, 8192)  # SO_RCVBUF: doubled to 16384, window is half of it
    await srv.bind(("", PORT))
    srv.listen(1)
    c = a.socket(AF_INET, SOCK_STREAM)
    await c.connect(("10.0.0.2", PORT))
    conn, _ = await srv.accept()
    assert conn.getsockopt(1, 8) == 16384
    await c.sendall(b"z" * 20_000)
    await trio.sleep(1)
    # the sender never had more outstanding than the window b offered
    assert tsk(c).max_window <= 16384
    got = bytearray()
    while len(got) < 20_000:
        got += await conn.recv(1 << 16)
    assert bytes(got) == b"z" * 20_000


@pytest.mark.parametrize("locked", ["SO_RCVBUF", "SO_SNDBUF"])
async def test_only_so_rcvbuf_stops_receive_buffer_autotuning(
    lab: Lab, autojump_clock: object, locked: str
) -> None:
    """tcp_rcv_space_adjust grows sk_rcvbuf unless SOCK_RCVBUF_LOCK (2) is set;
    SO_SNDBUF (SOCK_SNDBUF_LOCK, 1) leaves the receive side alone."""
    a, b = pair(lab, delay=0.001)
    c, conn = await connected(a, b)
    opt = 8 if locked == "SO_RCVBUF" else 7
    conn.setsockopt(1, opt, 65536)  # doubled: 131072, the default rcvbuf
    before = tsk(conn).sk_rcvbuf
    assert before == 131072
    payload = bytes(range(256)) * 8192  # 2 MiB
    got = bytearray()
    async with trio.open_nursery() as n:
        n.start_soon(c.sendall, payload)
        while len(got) < len(payload):
            got += await conn.recv(1 << 16)
    assert got == payload
    if locked == "SO_RCVBUF":
        assert tsk(conn).sk_rcvbuf == before
    else:
        assert tsk(conn).sk_rcvbuf > before


async def test_congestion_control_sysctl(lab: Lab, autojump_clock: object) -> None:
    a, b = pair(lab)
    assert a.sysctl("net.ipv4.tcp_congestion_control") == "cubic"
    assert a.sysctl("net.ipv4.tcp_available_congestion_control") == "reno cubic"
    a.sysctl("net.ipv4.tcp_congestion_control=reno")
    c, _ = await connected(a, b)
    assert c.getsockopt(6, 13) == b"reno"
    with pytest.raises(ConfigError, match="No such file or directory"):
        a.sysctl("net.ipv4.tcp_congestion_control=bbr")
    with pytest.raises(FileNotFoundError):
        c.setsockopt(6, 13, b"bbr")  # TCP_CONGESTION: ENOENT


async def test_close_wakes_a_blocked_reader_and_acceptor(lab: Lab, autojump_clock: object) -> None:
    a, b = pair(lab)
    c, _conn = await connected(a, b)
    srv2 = b.socket(AF_INET, SOCK_STREAM)
    await srv2.bind(("", PORT + 1))
    srv2.listen(1)
    errors: list[int] = []

    async def reader(s: Socket, op: str) -> None:
        try:
            if op == "recv":
                await s.recv(10)
            else:
                await s.accept()
        except OSError as e:
            errors.append(e.errno or 0)

    async with trio.open_nursery() as n:
        n.start_soon(reader, c, "recv")
        n.start_soon(reader, srv2, "accept")
        await trio.sleep(1)
        c.close()
        srv2.close()
    assert errors == [9, 9]  # EBADF, as a closed file descriptor gives


@pytest.mark.parametrize(
    ("state", "errno_"),
    [("ESTAB", 104), ("CLOSE-WAIT", 32), ("FIN-WAIT-2", 104), ("TIME-WAIT", None)],
)
async def test_rst_in_each_state(
    lab: Lab, autojump_clock: object, state: str, errno_: int | None
) -> None:
    """A RST at rcv_nxt ends the connection with the errno tcp_reset() gives that state;
    in TIME_WAIT it kills the timewait sock early (RFC 1337 off, as by default)."""
    ctx = TcpContext(lab)
    sock = await ctx.create_connected()
    net = ctx.host.net
    if state == "CLOSE-WAIT":  # the peer closes
        await ctx.send_segment("F.")
        await ctx.expect_segment(".", seq=1, ack=2)
    elif state == "FIN-WAIT-2":  # the stack closes, the peer ACKs
        sock.shutdown(1)
        await ctx.expect_segment("F.", seq=1, ack=1)
        await ctx.send_segment(".", ack=2)
    elif state == "TIME-WAIT":  # the stack closes first, then the peer
        sock.shutdown(1)
        await ctx.expect_segment("F.", seq=1, ack=1)
        await ctx.send_segment("F.", ack=2)
        await ctx.expect_segment(".", seq=2, ack=2)
    if state == "TIME-WAIT":
        ehash = tcp_of(net).hashinfo.ehash.values()
        tws = [t for t in ehash if isinstance(t, TimewaitSock) and t.state_name == "TIME-WAIT"]
        assert len(tws) == 1
        assert tws[0].rcv_nxt == ctx.peer_iss + ctx.snd_nxt
    else:
        assert ctx.sk.state_name == state
        assert ctx.sk.rcv_nxt == ctx.peer_iss + ctx.snd_nxt
    await ctx.send_segment("R")  # at rcv_nxt
    await ctx.expect_no_segment()
    if state == "TIME-WAIT":
        assert not tcp_of(net).hashinfo.ehash
        assert tcp_of(net).snmp()["TcpExt"].TWKilled == 1
        return
    assert ctx.sk.state_name == "UNCONN"
    with pytest.raises(OSError) as exc:
        await sock.send(b"x")
    assert exc.value.errno == errno_
