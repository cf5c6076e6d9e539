"""TCP between two hosts through the Trio-style socket API: set-up, data, teardown, errors.

a (10.0.0.1/24) ── veth (or nic) ── b (10.0.0.2/24). Every test runs in virtual
time (autojump clock); captures are parsed with dpkt, the oracle.
"""

from __future__ import annotations

import errno
import functools
import struct

import dpkt
import pytest
import trio
from helpers import add_addr, connected_tcp, recv_all

from netstack.core.sock import AF_INET, SOCK_STREAM
from netstack.host import Host, Lab
from netstack.socket import Socket
from netstack.tcp import TCP_STATE_NAMES, TcpSock, tcp_get_info, tcp_of
from netstack.tcp.sock import TimewaitSock
from netstack.testing import builders

PORT = 5001


# this file's hosts keep IPv6 on
pair = functools.partial(builders.pair, ipv4_only=False)


async def listener(host: Host, port: int = PORT, backlog: int = 8) -> Socket:
    srv = host.socket(AF_INET, SOCK_STREAM)
    await srv.bind(("", port))
    srv.listen(backlog)
    return srv


def st(s: Socket) -> str:
    sk = s.sock
    assert isinstance(sk, TcpSock)
    return sk.state_name


def tcp_states(host: Host) -> list[str]:
    return sorted(sk.state_name for sk in tcp_of(host.net).hashinfo.sockets())


def segments(frames: list[tuple[float, bytes, bool]]) -> list[dpkt.tcp.TCP]:
    out = []
    for _, frame, _ in frames:
        eth = dpkt.ethernet.Ethernet(frame)
        if isinstance(eth.data, dpkt.ip.IP) and isinstance(eth.data.data, dpkt.tcp.TCP):
            out.append(eth.data)
    return out


def tcp_csum_ok(ip: dpkt.ip.IP) -> bool:
    raw = bytes(ip.data) if not isinstance(ip.data, bytes) else ip.data
    seg = bytes(ip)[ip.hl * 4 : ip.len]
    pseudo = ip.src + ip.dst + struct.pack("!BBH", 0, 6, len(seg))
    del raw
    return bool(dpkt.in_cksum(pseudo + seg) == 0)


async def test_connect_accept_send_recv_close_byte_exact(lab: Lab, autojump_clock: object) -> None:
    a, b = pair(lab)
    srv = await listener(b)
    payload = bytes(range(256)) * 4096  # 1 MiB
    got: list[bytes] = []

    async def server() -> None:
        conn, peer = await srv.accept()
        assert peer[0] == "10.0.0.1"
        got.append(await recv_all(conn))
        conn.close()

    async with trio.open_nursery() as n:
        n.start_soon(server)
        c = a.socket(AF_INET, SOCK_STREAM)
        await c.connect(("10.0.0.2", PORT))
        assert c.getpeername() == ("10.0.0.2", PORT)
        assert st(c) == "ESTAB"
        await c.sendall(payload)
        c.close()
    assert got == [payload]
    await trio.sleep(0.1)
    snmp = tcp_of(a.net).snmp()
    assert snmp["Tcp"].ActiveOpens == 1
    assert tcp_of(b.net).snmp()["Tcp"].PassiveOpens == 1
    # the active closer keeps the 4-tuple in TIME_WAIT for 60 s
    assert tcp_states(a) == ["TIME-WAIT"]
    assert tcp_states(b) == ["LISTEN"]
    await trio.sleep(61)
    assert tcp_states(a) == []
    assert tcp_of(a.net).snmp()["TcpExt"].TW == 1


async def test_handshake_data_teardown_capture(lab: Lab, autojump_clock: object) -> None:
    """Wireshark's view: SYN, SYN-ACK, ACK with Linux's options; data; FIN/ACK both ways."""
    a, b = pair(lab, kind="nic")
    cap = b.capture("eth0")
    srv = await listener(b)

    async def server() -> None:
        conn, _ = await srv.accept()
        assert await recv_all(conn) == b"hello" * 1000
        await conn.send(b"bye")
        conn.close()

    async with trio.open_nursery() as n:
        n.start_soon(server)
        c = a.socket(AF_INET, SOCK_STREAM)
        await c.connect(("10.0.0.2", PORT))
        await c.sendall(b"hello" * 1000)
        c.shutdown(1)
        assert await recv_all(c) == b"bye"
        c.close()
    await trio.sleep(1)
    cap.stop()
    segs = segments(cap.frames)
    for ip in segs:
        assert tcp_csum_ok(ip), ip
        assert ip.df  # PMTU discovery
    tcps = [ip.data for ip in segs]
    syn, synack, ack = tcps[:3]
    assert syn.flags == dpkt.tcp.TH_SYN
    assert synack.flags == dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK
    assert ack.flags == dpkt.tcp.TH_ACK
    assert synack.ack == syn.seq + 1 and ack.ack == synack.seq + 1
    opts = dict(dpkt.tcp.parse_opts(syn.opts))
    assert struct.unpack("!H", opts[dpkt.tcp.TCP_OPT_MSS])[0] == 1460
    assert dpkt.tcp.TCP_OPT_SACKOK in opts and dpkt.tcp.TCP_OPT_WSCALE in opts
    assert dpkt.tcp.TCP_OPT_TIMESTAMP in opts
    assert syn.opts[:4] == b"\x02\x04\x05\xb4"  # Linux's order: MSS first
    data = b"".join(t.data for t in tcps if t.sport == tcps[0].sport)
    assert data == b"hello" * 1000
    fins = [t for t in tcps if t.flags & dpkt.tcp.TH_FIN]
    assert len(fins) == 2
    assert not any(t.flags & dpkt.tcp.TH_RST for t in tcps)
    # every segment after the SYN carries an ACK
    assert all(t.flags & dpkt.tcp.TH_ACK for t in tcps[1:])


async def test_connect_refused(lab: Lab, autojump_clock: object) -> None:
    a, b = pair(lab)
    c = a.socket(AF_INET, SOCK_STREAM)
    with pytest.raises(ConnectionRefusedError):
        await c.connect(("10.0.0.2", 9))
    assert tcp_of(b.net).snmp()["Tcp"].OutRsts == 1
    assert tcp_of(a.net).snmp()["Tcp"].AttemptFails == 1


async def test_connect_times_out(lab: Lab, autojump_clock: object) -> None:
    """SYNs into a black hole: retried, then ETIMEDOUT, as Linux 6.5+.

    The first tcp_syn_linear_timeouts (4) RTOs keep the initial 1 s RTO, and
    the SYN states give up when tcp_syn_retries RTOs would have taken, backed
    off, (2 << 2) - 1 = 7 s (tcp_model_timeout), or after 2 + 4 retransmissions.
    Linux 6.18 in a network namespace, same setting: ETIMEDOUT after 7.13 s,
    TcpExtTCPSynRetrans 5.
    """
    a = lab.add_host("a")
    port = lab.add_port("a:eth0")
    add_addr(a, "eth0", "10.0.0.1/24")
    a.sysctl("net.ipv4.tcp_syn_retries=2")
    a.ip("neigh add 10.0.0.2 lladdr 02:00:00:00:00:02 dev eth0")
    # a second in (virtual time 0 gives the same since TCP's clocks count from
    # "boot": tests/tcp/test_tcp_clock.py)
    await trio.sleep(1)
    c = a.socket(AF_INET, SOCK_STREAM)
    start = trio.current_time()
    with pytest.raises(TimeoutError):
        await c.connect(("10.0.0.2", PORT))
    assert trio.current_time() - start == pytest.approx(7, abs=0.1)  # 1+1+1+1+1 s, then 2 s
    frames = []
    while True:
        try:
            frames.append(port.receive_nowait())
        except trio.WouldBlock:
            break
    syns = [f for f in frames if f[12:14] == b"\x08\x00" and f[23] == 6]
    assert len(syns) == 6  # at 0, 1, 2, 3, 4 and 5 s
    assert tcp_of(a.net).snmp()["TcpExt"].TCPSynRetrans == 5


async def test_close_with_unread_data_resets(lab: Lab, autojump_clock: object) -> None:
    a, b = pair(lab)
    srv = await listener(b)
    c = a.socket(AF_INET, SOCK_STREAM)
    await c.connect(("10.0.0.2", PORT))
    conn, _ = await srv.accept()
    await c.sendall(b"x" * 100)
    await trio.sleep(0.5)
    conn.close()  # 100 bytes never read: RST, not FIN
    await trio.sleep(0.5)
    with pytest.raises(ConnectionResetError):
        await c.recv(10)
    assert tcp_of(b.net).snmp()["TcpExt"].TCPAbortOnClose == 1
    with pytest.raises(BrokenPipeError):
        await c.send(b"more")


async def test_client_close_with_unread_data_resets_from_its_port(
    lab: Lab, autojump_clock: object
) -> None:
    """The connecting side's port came from inet_hash_connect; tcp_set_state(CLOSE)
    gives it back (inet_num = 0), but the RST sent next still carries it."""
    a, b = pair(lab)
    srv = await listener(b)
    c = a.socket(AF_INET, SOCK_STREAM)
    await c.connect(("10.0.0.2", PORT))
    sport = c.getsockname()[1]
    conn, _ = await srv.accept()
    cap = a.capture("eth0")
    await conn.sendall(b"y" * 100)
    await trio.sleep(0.5)
    c.close()  # 100 bytes never read
    await trio.sleep(0.5)
    rsts = [f for _, f, out in cap.frames if out and f[23] == 6 and f[14 + 20 + 13] & 0x04]
    assert len(rsts) == 1
    assert int.from_bytes(rsts[0][34:36], "big") == sport
    with pytest.raises(ConnectionResetError):
        await conn.recv(10)


async def test_send_after_peer_close_gets_reset_then_epipe(
    lab: Lab, autojump_clock: object
) -> None:
    a, b = pair(lab)
    srv = await listener(b)
    c = a.socket(AF_INET, SOCK_STREAM)
    await c.connect(("10.0.0.2", PORT))
    conn, _ = await srv.accept()
    conn.close()
    await trio.sleep(0.5)
    assert await c.recv(10) == b""  # the FIN: end of stream
    assert st(c) == "CLOSE-WAIT"
    await c.send(b"data")  # accepted locally; the peer answers with a RST
    await trio.sleep(0.5)
    with pytest.raises(OSError) as exc:
        await c.send(b"data")
    assert exc.value.errno in (errno.EPIPE, errno.ECONNRESET)


async def test_shutdown_write_half_close(lab: Lab, autojump_clock: object) -> None:
    a, b = pair(lab)
    srv = await listener(b)
    c = a.socket(AF_INET, SOCK_STREAM)
    await c.connect(("10.0.0.2", PORT))
    conn, _ = await srv.accept()
    c.shutdown(1)
    assert await conn.recv(10) == b""
    await trio.sleep(0.5)  # the FIN's ACK may be delayed (tcp_fin: pingpong mode)
    assert st(conn) == "CLOSE-WAIT"
    assert st(c) == "FIN-WAIT-2"
    await conn.sendall(b"still flowing")
    assert await c.recv(100) == b"still flowing"
    with pytest.raises(BrokenPipeError):
        await c.send(b"no")
    conn.close()
    await trio.sleep(0.1)
    assert st(c) in ("TIME-WAIT", "UNCONN")
    assert TCP_STATE_NAMES[6] == "TIME-WAIT"


async def test_simultaneous_close(lab: Lab, autojump_clock: object) -> None:
    # two machines: the FINs cross on a wire of 1 ms (over a veth the first FIN is
    # received inside the first close: test_closes_one_after_the_other_over_a_veth)
    a, b = pair(lab, kind="nic", delay=0.001)
    srv = await listener(b)
    c = a.socket(AF_INET, SOCK_STREAM)
    await c.connect(("10.0.0.2", PORT))
    conn, _ = await srv.accept()
    c.close()
    conn.close()
    await trio.sleep(1)
    tws = [s for s in tcp_of(a.net).hashinfo.sockets() if isinstance(s, TimewaitSock)]
    twb = [s for s in tcp_of(b.net).hashinfo.sockets() if isinstance(s, TimewaitSock)]
    assert len(tws) == 1 and len(twb) == 1  # both went CLOSING → TIME_WAIT


async def test_simultaneous_open(lab: Lab, autojump_clock: object) -> None:
    # two machines: the SYNs cross on a wire of 1 ms (over a veth the first SYN is
    # answered inside its connect: test_connects_one_after_the_other_over_a_veth)
    a, b = pair(lab, kind="nic", delay=0.001)
    ca = a.socket(AF_INET, SOCK_STREAM)
    cb = b.socket(AF_INET, SOCK_STREAM)
    await ca.bind(("10.0.0.1", 7001))
    await cb.bind(("10.0.0.2", 7002))
    async with trio.open_nursery() as n:
        n.start_soon(ca.connect, ("10.0.0.2", 7002))
        n.start_soon(cb.connect, ("10.0.0.1", 7001))
    assert st(ca) == st(cb) == "ESTAB"
    await ca.sendall(b"ping")
    assert await cb.recv(10) == b"ping"


async def test_closes_one_after_the_other_over_a_veth(lab: Lab, autojump_clock: object) -> None:
    """One task closes both ends: the first FIN is received inside its close (the
    softirq of ``__dev_queue_xmit``'s ``local_bh_enable``), b is in CLOSE_WAIT when
    it closes: only a goes through TIME_WAIT. Linux 6.18, a veth between two
    namespaces, one thread: a in TIME_WAIT (06), b none."""
    a, b = pair(lab)
    c, conn = await connected_tcp(a, b, PORT)
    c.close()
    assert st(conn) == "CLOSE-WAIT"
    conn.close()
    await trio.sleep(1)
    tws = [s for s in tcp_of(a.net).hashinfo.sockets() if isinstance(s, TimewaitSock)]
    twb = [s for s in tcp_of(b.net).hashinfo.sockets() if isinstance(s, TimewaitSock)]
    assert (len(tws), len(twb)) == (1, 0)


async def test_connects_one_after_the_other_over_a_veth(lab: Lab, autojump_clock: object) -> None:
    """Both connects at one instant over a veth: the first SYN is received inside
    its connect, b's socket is not yet in SYN_SENT, and its RST refuses a's connect;
    b's SYN then finds a's socket closed. Linux 6.18, a veth between two namespaces,
    two non-blocking connects from one thread: both ECONNREFUSED."""
    a, b = pair(lab)
    ca = a.socket(AF_INET, SOCK_STREAM)
    cb = b.socket(AF_INET, SOCK_STREAM)
    await ca.bind(("10.0.0.1", 7001))
    await cb.bind(("10.0.0.2", 7002))
    refused = []

    async def connect(s: Socket, addr: tuple[str, int]) -> None:
        try:
            await s.connect(addr)
        except ConnectionRefusedError:
            refused.append(s)

    async with trio.open_nursery() as n:
        n.start_soon(connect, ca, ("10.0.0.2", 7002))
        n.start_soon(connect, cb, ("10.0.0.1", 7001))
    assert len(refused) == 2


async def test_tcp_info_and_options(lab: Lab, autojump_clock: object) -> None:
    a, b = pair(lab)
    srv = await listener(b)
    c = a.socket(AF_INET, SOCK_STREAM)
    c.setsockopt(6, 13, b"reno")  # TCP_CONGESTION
    c.setsockopt(6, 1, 1)  # TCP_NODELAY
    await c.connect(("10.0.0.2", PORT))
    conn, _ = await srv.accept()
    await c.sendall(b"z" * 100_000)
    data = bytearray()
    while len(data) < 100_000:
        data += await conn.recv(65536)
    info = tcp_get_info(c.sock)
    assert info.cong == "reno" and info.state == "ESTAB"
    assert info.snd_mss == 1448 and "sack" in info.options and "ts" in info.options
    assert info.bytes_acked == 100_000 or info.bytes_sent == 100_000
    assert c.getsockopt(6, 13) == b"reno"
    assert c.getsockopt(6, 1) == 1
    assert tcp_get_info(conn.sock).cong == "cubic"  # the sysctl's default


async def test_listen_backlog_bounds_the_queues(lab: Lab, autojump_clock: object) -> None:
    """A full accept queue drops further handshakes; memory does not grow.

    The six SYNs arrive at one instant, as from six machines over a wire of 1 ms
    (over a veth each handshake is done inside its connect:
    test_a_full_accept_queue_drops_the_syns_of_later_connects)."""
    a, b = pair(lab, kind="nic", delay=0.001)
    await listener(b, backlog=2)
    socks = []
    for _ in range(6):
        s = a.socket(AF_INET, SOCK_STREAM)
        socks.append(s)
    async with trio.open_nursery() as n:
        for s in socks:
            n.start_soon(_try_connect, s)
        await trio.sleep(5)
        n.cancel_scope.cancel()
    tcp = tcp_of(b.net)
    lst = tcp.hashinfo.listeners[PORT][0]
    # sk_acceptq_is_full() is sk_ack_backlog > sk_max_ack_backlog: backlog + 1 children
    assert len(lst.accept_queue) == lst.sk_ack_backlog == 3
    assert lst.syn_queue_len == 0  # every request completed (or was a cookie)
    # three SYNs past the SYN queue's bound got SYN cookies; their ACKs then found the
    # accept queue full: ListenOverflows, each also a ListenDrop
    ext = tcp.snmp()["TcpExt"]
    assert (ext.TCPReqQFullDoCookies, ext.SyncookiesRecv) == (3, 3)
    assert (ext.ListenOverflows, ext.ListenDrops) == (3, 3)


async def test_a_full_accept_queue_drops_the_syns_of_later_connects(
    lab: Lab, autojump_clock: object
) -> None:
    """Six connects at one instant over a veth: each SYN is answered inside its
    connect, so three handshakes complete and fill the accept queue of listen(2);
    ``tcp_conn_request`` then drops every later SYN (``sk_acceptq_is_full``:
    ListenOverflows, and ListenDrops at ``drop``), no SYN cookie: 3 SYNs and 4
    retransmits each in 4.5 s (``tcp_syn_linear_timeouts``: 1 s apart). Linux 6.18,
    a veth between two namespaces, six non-blocking connects from one thread, 5 s:
    three ESTABLISHED, three SYN_SENT, ListenOverflows = ListenDrops = 15, no
    cookies, 12 retransmits."""
    a, b = pair(lab)
    await listener(b, backlog=2)
    socks = [a.socket(AF_INET, SOCK_STREAM) for _ in range(6)]
    async with trio.open_nursery() as n:
        for s in socks:
            n.start_soon(_try_connect, s)
        await trio.sleep(4.5)
        n.cancel_scope.cancel()
    assert sorted(st(s) for s in socks) == ["ESTAB"] * 3 + ["SYN-SENT"] * 3
    tcp = tcp_of(b.net)
    lst = tcp.hashinfo.listeners[PORT][0]
    assert len(lst.accept_queue) == lst.sk_ack_backlog == 3 and lst.syn_queue_len == 0
    ext = tcp.snmp()["TcpExt"]
    assert (ext.ListenOverflows, ext.ListenDrops) == (15, 15)
    assert (ext.TCPReqQFullDoCookies, ext.SyncookiesRecv) == (0, 0)
    assert tcp_of(a.net).snmp()["Tcp"].RetransSegs == 12


async def _try_connect(s: Socket) -> None:
    try:
        await s.connect(("10.0.0.2", PORT))
    except OSError:
        pass


# Linux, in a namespace: listen(backlog), six connects nobody accepts; the listener's
# rx_queue in /proc/net/tcp is its sk_ack_backlog (backlog + 1 once full).
_LINUX_ACCEPTQ = """
import socket, sys, time
out = []
for backlog in (0, 2):
    srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(backlog)
    port = srv.getsockname()[1]
    cs = []
    for _ in range(6):
        c = socket.socket(); c.setblocking(False); c.connect_ex(("127.0.0.1", port)); cs.append(c)
    time.sleep(0.5)
    for line in open("/proc/net/tcp").readlines()[1:]:
        f = line.split()
        if int(f[1].split(":")[1], 16) == port and f[3] == "0A":
            out.append(int(f[4].split(":")[1], 16))
    for c in cs: c.close()
    srv.close()
print(out)
"""


@pytest.mark.parametrize("backlog", [0, 2])
async def test_accept_queue_holds_backlog_plus_one(
    lab: Lab, autojump_clock: object, backlog: int
) -> None:
    """sk_acceptq_is_full() is ``>``: listen(n) queues n + 1 established children."""
    a, b = pair(lab)
    await listener(b, backlog=backlog)
    socks = [a.socket(AF_INET, SOCK_STREAM) for _ in range(6)]
    async with trio.open_nursery() as n:
        for s in socks:
            n.start_soon(_try_connect, s)
        await trio.sleep(0.5)
        lst = tcp_of(b.net).hashinfo.listeners[PORT][0]
        assert len(lst.accept_queue) == lst.sk_ack_backlog == backlog + 1
        n.cancel_scope.cancel()


def test_linux_accept_queue_holds_backlog_plus_one() -> None:
    import os
    import shutil
    import subprocess
    import sys

    if not (os.geteuid() == 0 and shutil.which("ip")):
        pytest.skip("needs root and ip(8) for a network namespace")
    ns = "nsacceptq-test"
    subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    if subprocess.run(["ip", "netns", "add", ns], capture_output=True).returncode:
        pytest.skip("cannot create a network namespace")
    try:
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
        out = subprocess.run(
            ["ip", "netns", "exec", ns, sys.executable, "-c", _LINUX_ACCEPTQ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    assert out.strip() == "[1, 3]"
