"""TCP over IPv6 through the socket API: handshake, data, teardown, RST, PMTU, ss.

    a (2001:db8::1) ── veth or nic ── b (2001:db8::2)
    a (2001:db8:1::1) ── r ── b (2001:db8:2::2)        (the PMTU test)

AF_INET6 stream sockets have the shape of IPv4's (tests/tcp/test_tcp_connection.py):
``host.socket(AF_INET6, SOCK_STREAM)``, addresses as ``(host, port[, flowinfo,
scope_id])``. Captures are parsed with dpkt (``dpkt.ip6`` + ``dpkt.tcp``), the
oracle, and every TCP checksum is verified over the IPv6 pseudo-header.
"""

from __future__ import annotations

import errno
import functools
import shutil
import struct
import subprocess
from pathlib import Path

import dpkt
import pytest
import trio
from helpers import recv_all

from netstack.core.sock import AF_INET6, SOCK_STREAM
from netstack.host import Host, Lab
from netstack.socket import Socket
from netstack.tcp import TcpSock, tcp_of
from netstack.testing import builders

PORT = 5001


# a (2001:db8::1) — b (2001:db8::2), IPv6 on, no DAD
pair6 = functools.partial(builders.pair, family=6, ipv4_only=False, nodad=True)


async def listener6(host: Host, port: int = PORT, backlog: int = 8) -> Socket:
    srv = host.socket(AF_INET6, SOCK_STREAM)
    await srv.bind(("::", port))
    srv.listen(backlog)
    return srv


def tcp6_segments(frames: list[tuple[float, bytes, bool]]) -> list[dpkt.ip6.IP6]:
    out = []
    for _, frame, _ in frames:
        eth = dpkt.ethernet.Ethernet(frame)
        if isinstance(eth.data, dpkt.ip6.IP6) and isinstance(eth.data.data, dpkt.tcp.TCP):
            out.append(eth.data)
    return out


def tcp6_csum_ok(ip6: dpkt.ip6.IP6) -> bool:
    """RFC 8200 §8.1: source, destination, upper-layer length, next header 6."""
    seg = bytes(ip6)[40 : 40 + ip6.plen]
    pseudo = ip6.src + ip6.dst + struct.pack("!I3xB", len(seg), 6)
    return bool(dpkt.in_cksum(pseudo + seg) == 0)


async def test_handshake_data_teardown_capture_v6(lab: Lab, autojump_clock: object) -> None:
    """SYN (MSS 1440 = 1500 - 60), SYN-ACK, ACK; data; FIN/ACK both ways; all checksums good."""
    a, b = pair6(lab, kind="nic")
    cap = b.capture("eth0")
    srv = await listener6(b)

    async def server() -> None:
        conn, peer = await srv.accept()
        assert peer[0] == "2001:db8::1" and len(peer) == 4
        assert await recv_all(conn) == b"hello" * 1000
        await conn.send(b"bye")
        conn.close()

    async with trio.open_nursery() as n:
        n.start_soon(server)
        c = a.socket(AF_INET6, SOCK_STREAM)
        await c.connect(("2001:db8::2", PORT))
        assert c.getpeername() == ("2001:db8::2", PORT, 0, 0)
        assert c.getsockname()[0] == "2001:db8::1"
        await c.sendall(b"hello" * 1000)
        c.shutdown(1)
        assert await recv_all(c) == b"bye"
        c.close()
    await trio.sleep(1)
    cap.stop()
    segs = tcp6_segments(cap.frames)
    assert segs
    for ip6 in segs:
        assert tcp6_csum_ok(ip6), ip6
        assert ip6.nxt == 6 and ip6.hlim == 64
    tcps = [ip6.data for ip6 in segs]
    syn, synack, ack = tcps[:3]
    assert syn.flags == dpkt.tcp.TH_SYN
    assert synack.flags == dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK
    assert ack.flags == dpkt.tcp.TH_ACK
    assert synack.ack == syn.seq + 1 and ack.ack == synack.seq + 1
    assert syn.opts[:4] == b"\x02\x04\x05\xa0"  # MSS 1440, first as Linux sends it
    synack_opts = dict(dpkt.tcp.parse_opts(synack.opts))
    assert struct.unpack("!H", synack_opts[dpkt.tcp.TCP_OPT_MSS])[0] == 1440
    assert dpkt.tcp.TCP_OPT_SACKOK in synack_opts and dpkt.tcp.TCP_OPT_TIMESTAMP in synack_opts
    data = b"".join(t.data for t in tcps if t.sport == tcps[0].sport)
    assert data == b"hello" * 1000
    assert len([t for t in tcps if t.flags & dpkt.tcp.TH_FIN]) == 2
    assert not any(t.flags & dpkt.tcp.TH_RST for t in tcps)
    assert all(t.flags & dpkt.tcp.TH_ACK for t in tcps[1:])
    assert tcp_of(a.net).snmp()["Tcp"].ActiveOpens == 1
    assert tcp_of(b.net).snmp()["Tcp"].PassiveOpens == 1


async def test_transfer_v6_byte_exact_and_ss(lab: Lab, autojump_clock: object) -> None:
    a, b = pair6(lab)
    srv = await listener6(b)
    payload = bytes(range(256)) * 4096  # 1 MiB
    got: list[bytes] = []

    async def server() -> None:
        conn, _ = await srv.accept()
        got.append(await recv_all(conn))
        conn.close()

    async with trio.open_nursery() as n:
        n.start_soon(server)
        c = a.socket(AF_INET6, SOCK_STREAM)
        await c.connect(("2001:db8::2", PORT))
        sk = c.sock
        assert isinstance(sk, TcpSock) and sk.family == AF_INET6
        assert sk.advmss == 1440 - 12 and sk.mss_cache == 1440 - 12  # timestamps: 12 bytes less
        lines = a.ss("-t").splitlines()
        assert lines[1].split()[0] == "ESTAB"
        assert lines[1].split()[3].startswith("[2001:db8::1]:")
        assert lines[1].split()[4] == f"[2001:db8::2]:{PORT}"
        listen = b.ss("-tl").splitlines()[1].split()
        assert listen[3:] == [f"*:{PORT}", "*:*"]  # dual stack: ss prints the wildcard as *
        assert b.ss("-tl4").splitlines()[1:] == []  # no IPv4 listener
        await c.sendall(payload)
        c.close()
    assert got == [payload]
    await trio.sleep(0.1)
    assert [sk.state_name for sk in tcp_of(a.net).hashinfo.sockets()] == ["TIME-WAIT"]
    assert "TIME-WAIT" in a.ss("-t6")


async def test_rst_to_closed_port_is_econnrefused(lab: Lab, autojump_clock: object) -> None:
    a, b = pair6(lab)
    await trio.sleep(2)  # ND settles: one SYN, not a retransmission queued behind it
    cap = a.capture("eth0")
    c = a.socket(AF_INET6, SOCK_STREAM)
    with pytest.raises(ConnectionRefusedError):
        await c.connect(("2001:db8::2", 9))
    cap.stop()
    segs = tcp6_segments(cap.frames)
    assert [s.data.flags for s in segs] == [
        dpkt.tcp.TH_SYN,
        dpkt.tcp.TH_RST | dpkt.tcp.TH_ACK,
    ]
    syn, rst = segs[0].data, segs[1].data
    assert rst.ack == syn.seq + 1 and rst.seq == 0 and tcp6_csum_ok(segs[1])
    assert tcp_of(b.net).snmp()["Tcp"].OutRsts == 1
    assert tcp_of(a.net).snmp()["Tcp"].AttemptFails == 1


async def test_bind_errors_and_link_local_connect(lab: Lab, autojump_clock: object) -> None:
    a, b = pair6(lab)
    await trio.sleep(2)  # the link-local addresses finish DAD
    s = a.socket(AF_INET6, SOCK_STREAM)
    with pytest.raises(OSError) as e:
        await s.bind(("2001:db8::99", 0))
    assert e.value.errno == 99  # EADDRNOTAVAIL
    with pytest.raises(OSError) as e:
        await s.connect(("::ffff:10.0.0.1", PORT))
    assert e.value.errno == 101  # mapped: IPv4 has no route (ENETUNREACH)
    srv = await listener6(b)
    ll = b.ip("-6 addr show dev eth0 scope link").split("inet6 ")[1].split("/")[0]
    c = a.socket(AF_INET6, SOCK_STREAM)
    with pytest.raises(OSError) as e:
        await c.connect((ll, PORT))  # a link-local peer needs a zone
    assert e.value.errno == 22
    await c.connect((f"{ll}%eth0", PORT))
    conn, peer = await srv.accept()
    assert peer[0].startswith("fe80::")
    await c.sendall(b"over the link-local addresses")
    c.close()
    assert await recv_all(conn) == b"over the link-local addresses"


async def test_packet_too_big_shrinks_the_mss(lab: Lab, autojump_clock: object) -> None:
    """A router's 1400-byte link: ICMPv6 Packet Too Big → tcp_v6_mtu_reduced → MSS 1340."""
    a, r, b = lab.add_host("a"), lab.add_host("r"), lab.add_host("b")
    lab.add_link("a:eth0", "r:eth0")
    lab.add_link("r:eth1", "b:eth0")
    a.ip("-6 addr add 2001:db8:1::1/64 dev eth0 nodad")
    r.ip("-6 addr add 2001:db8:1::fe/64 dev eth0 nodad")
    r.ip("-6 addr add 2001:db8:2::fe/64 dev eth1 nodad")
    b.ip("-6 addr add 2001:db8:2::2/64 dev eth0 nodad")
    a.ip("-6 route add default via 2001:db8:1::fe")
    b.ip("-6 route add default via 2001:db8:2::fe")
    r.sysctl("net.ipv6.conf.all.forwarding=1")
    r.ip("link set eth1 mtu 1400")
    await trio.sleep(2)
    srv = await listener6(b)
    payload = bytes(range(256)) * 1024
    got: list[bytes] = []

    async def server() -> None:
        conn, _ = await srv.accept()
        got.append(await recv_all(conn))
        conn.close()

    async with trio.open_nursery() as n:
        n.start_soon(server)
        c = a.socket(AF_INET6, SOCK_STREAM)
        await c.connect(("2001:db8:2::2", PORT))
        # b (MTU 1500) offered MSS 1440: a's first data segments are too big for r's eth1
        await c.sendall(payload)
        sk = c.sock
        assert isinstance(sk, TcpSock)
        c.close()
    assert got == [payload]
    assert sk.icsk_pmtu_cookie == 1400 and sk.mss_cache == 1400 - 60 - 12
    # one per GSO skb r refused: the two a sent (5 x 1428 bytes each) in its first
    # flight; the first Packet Too Big comes back inside the send (its transmit's
    # local_bh_enable) to the owned socket, and tcp_v6_err only keeps mtu_info: the
    # route learns 1400 in tcp_v6_mtu_reduced, deferred to tcp_release_cb
    # (TCP_MTU_REDUCED_DEFERRED); their retransmissions and the rest are cut at 1328.
    # Linux 6.18, three namespaces joined by veths, the same transfer: r sends 2
    # Packet Too Big (5 runs of 5); netstack sent 1 while tcp_v6_err updated the route
    # at once
    assert r.nstat()["Icmp6OutPktTooBigs"] == r.nstat()["Ip6InTooBigErrors"] == 2
    assert "mtu 1400" in a.ip("-6 route get 2001:db8:2::2")


TSHARK = shutil.which("tshark")


def tshark_tcp_rows(path: Path) -> list[list[str]]:
    """tshark's verdict per TCP frame: malformed?, checksum status, expert severity."""
    assert TSHARK is not None
    out = subprocess.run(
        [TSHARK, "-r", str(path), "-o", "tcp.check_checksum:TRUE", "-Y", "tcp",
         "-T", "fields", "-E", "separator=|", "-e", "_ws.malformed",
         "-e", "tcp.checksum.status", "-e", "_ws.expert.severity"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return [line.split("|") for line in out.splitlines()]


@pytest.mark.slow
async def test_ipv6_connection_pcap_is_clean(
    lab: Lab, autojump_clock: object, tmp_path: Path
) -> None:
    """A TCPv6 connection written to pcap: dpkt parses every frame and every TCP
    checksum verifies; tshark (when installed) finds nothing malformed or bad."""
    a, b = pair6(lab, kind="nic")
    b.ethtool("-K eth0 gro off")  # frames as they were on the wire
    await trio.sleep(2)
    paths = [tmp_path / "a.pcap", tmp_path / "b.pcap"]
    caps = [a.capture("eth0", paths[0]), b.capture("eth0", paths[1])]
    srv = await listener6(b)
    payload = bytes(range(256)) * 400

    async def server() -> None:
        conn, _ = await srv.accept()
        assert await recv_all(conn) == payload
        conn.close()

    async with trio.open_nursery() as n:
        n.start_soon(server)
        c = a.socket(AF_INET6, SOCK_STREAM)
        await c.connect(("2001:db8::2", PORT))
        await c.sendall(payload)
        c.close()
    await trio.sleep(1)
    for cap in caps:
        cap.stop()
    for path in paths:
        with path.open("rb") as f:
            frames = [dpkt.ethernet.Ethernet(buf) for _, buf in dpkt.pcap.Reader(f)]
        tcp6 = [e.data for e in frames if isinstance(e.data, dpkt.ip6.IP6) and e.data.nxt == 6]
        assert len(tcp6) > 20
        assert all(isinstance(p.data, dpkt.tcp.TCP) and tcp6_csum_ok(p) for p in tcp6)
        flags = [p.data.flags for p in tcp6]
        assert flags[0] == dpkt.tcp.TH_SYN and flags[1] == dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK
        assert len([fl for fl in flags if fl & dpkt.tcp.TH_FIN]) == 2
        assert not any(fl & dpkt.tcp.TH_RST for fl in flags)
        if TSHARK is None:
            continue
        rows = tshark_tcp_rows(path)
        assert len(rows) == len(tcp6)
        assert all(not malformed and status == "1" for malformed, status, _ in rows)


async def test_ipv6_socket_options_reach_the_header(lab: Lab, autojump_clock: object) -> None:
    """IPV6_TCLASS and IPV6_UNICAST_HOPS through icsk_af_ops->setsockopt; IPV6_V6ONLY."""
    from netstack.socket import IPPROTO_IPV6, IPV6_TCLASS, IPV6_UNICAST_HOPS, IPV6_V6ONLY

    a, b = pair6(lab)
    await trio.sleep(2)
    srv = await listener6(b)
    c = a.socket(AF_INET6, SOCK_STREAM)
    assert c.getsockopt(IPPROTO_IPV6, IPV6_V6ONLY) == 0  # net.ipv6.bindv6only = 0
    c.setsockopt(IPPROTO_IPV6, IPV6_V6ONLY, 1)
    assert c.getsockopt(IPPROTO_IPV6, IPV6_V6ONLY) == 1
    assert c.getsockopt(IPPROTO_IPV6, IPV6_UNICAST_HOPS) == 64
    c.setsockopt(IPPROTO_IPV6, IPV6_TCLASS, 0x28)
    c.setsockopt(IPPROTO_IPV6, IPV6_UNICAST_HOPS, 7)
    assert c.getsockopt(IPPROTO_IPV6, IPV6_TCLASS) == 0x28
    with pytest.raises(OSError):
        c.setsockopt(IPPROTO_IPV6, IPV6_UNICAST_HOPS, 256)
    cap = b.capture("eth0")
    await c.connect(("2001:db8::2", PORT))
    conn, _ = await srv.accept()
    await c.sendall(b"x" * 100)
    assert await conn.recv(100) == b"x" * 100
    cap.stop()
    sent = [p for p in tcp6_segments(cap.frames) if p.data.sport != PORT]
    assert sent and all(p.hlim == 7 for p in sent)
    tclass = {(int.from_bytes(bytes(p)[:4], "big") >> 20) & 0xFF for p in sent}
    assert tclass == {0x28}


@pytest.mark.parametrize(
    ("route", "err"), [("prohibit", errno.EACCES), ("unreachable", errno.ENETUNREACH)]
)
async def test_icmpv6_errors_reach_a_connecting_socket(
    lab: Lab, autojump_clock: object, route: str, err: int
) -> None:
    """tcp_v6_err: a router's administratively-prohibited answer to the SYN is fatal
    (EACCES) for a socket the user does not own; no-route is soft: the SYNs are
    retried, and when they run out the soft error is what connect() reports
    (tcp_write_err: sk_err_soft, else ETIMEDOUT).

    The first SYN's answer comes back at its transmit's ``local_bh_enable``, while
    ``inet_stream_connect`` holds the socket lock: ``tcp_v6_err`` counts
    ``LockDroppedIcmps`` and keeps it as ``sk_err_soft``; the retransmitted SYN's
    (from the timer, the lock not held) ends the connect: EACCES after 1 s. Linux
    6.18, three namespaces joined by veths: EACCES after 1.01-1.03 s,
    Icmp6InDestUnreachs 2, LockDroppedIcmps 1, TCPSynRetrans 1."""
    a, r = lab.add_host("a"), lab.add_host("r")
    lab.add_host("b")
    lab.add_link("a:eth0", "r:eth0")
    lab.add_link("r:eth1", "b:eth0")
    a.ip("-6 addr add 2001:db8:1::1/64 dev eth0 nodad")
    r.ip("-6 addr add 2001:db8:1::fe/64 dev eth0 nodad")
    a.ip("-6 route add default via 2001:db8:1::fe")
    r.sysctl("net.ipv6.conf.all.forwarding=1")
    r.ip(f"-6 route add {route} 2001:db8:7::/64")
    a.sysctl("net.ipv4.tcp_syn_retries=2")
    await trio.sleep(2)
    c = a.socket(AF_INET6, SOCK_STREAM)
    start = trio.current_time()
    with pytest.raises(OSError) as e:
        await c.connect(("2001:db8:7::2", PORT))
    assert e.value.errno == err
    elapsed = trio.current_time() - start
    if err == errno.EACCES:
        assert elapsed == pytest.approx(1, abs=0.01)  # the second ICMPv6 error ends it
        ext = tcp_of(a.net).snmp()["TcpExt"]
        assert (ext.LockDroppedIcmps, ext.TCPSynRetrans) == (1, 1)
    else:
        # tcp_syn_retries=2 gives up after (2 << 2) - 1 = 7 s (tcp_model_timeout): SYNs
        # at 0-5 s, the first four RTOs linear (tcp_syn_linear_timeouts), then 2 s
        assert elapsed == pytest.approx(7, abs=0.1)
        assert tcp_of(a.net).snmp()["TcpExt"].TCPSynRetrans == 5
    # prohibit: the second SYN's answer ends it; unreachable: one per SYN (1 + 5 retries)
    assert a.nstat()["Icmp6InDestUnreachs"] == (2 if err == errno.EACCES else 6)
