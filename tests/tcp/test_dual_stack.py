"""Dual-stack AF_INET6 sockets: IPv4-mapped addresses (``::ffff:a.b.c.d``), as Linux.

    a (10.0.0.1, 2001:db8::1) ── veth or nic ── b (10.0.0.2, 2001:db8::2)

An AF_INET6 socket that is not ``IPV6_V6ONLY`` (the default, ``net.ipv6.bindv6only
= 0``) talks IPv4 to ``::ffff:a.b.c.d`` peers: a listener on ``::`` accepts IPv4
SYNs, a connect to a mapped address uses IPv4 (``ipv6_mapped`` af_ops: IPv4 MSS
and GSO), UDP sends, receives and connects the same way, and binds of the two
families conflict per ``inet_rcv_saddr_equal``. The wire is checked with dpkt,
the oracle: every dual-stack packet is a plain IPv4 one with good checksums.
"""

from __future__ import annotations

import errno
import functools
import struct
from typing import Any

import dpkt
import pytest
import trio
from helpers import recv_all

from netstack.core.features import SKB_GSO_TCPV4
from netstack.core.sock import AF_INET, AF_INET6, SOCK_DGRAM, SOCK_STREAM
from netstack.host import Lab
from netstack.socket import IPPROTO_IPV6, IPV6_V6ONLY
from netstack.tcp import tcp_of
from netstack.tcp.hashtables import ipv6_rcv_saddr_equal
from netstack.testing import builders

PORT = 80
M = 0xFFFF << 32  # ::ffff:0.0.0.0


# a (10.0.0.1, 2001:db8::1) — b (10.0.0.2, 2001:db8::2), no DAD
dual_pair = functools.partial(builders.pair, family="dual", ipv4_only=False, nodad=True)


def ip_packets(frames: list[tuple[float, bytes, bool]]) -> list[dpkt.ip.IP | dpkt.ip6.IP6]:
    """The IP packets of a capture, as dpkt parses them (ARP/ND left out)."""
    out = []
    for _, frame, _ in frames:
        eth = dpkt.ethernet.Ethernet(frame)
        ip = eth.data
        if isinstance(ip, dpkt.ip.IP) or (isinstance(ip, dpkt.ip6.IP6) and ip.nxt in (6, 17)):
            out.append(ip)
    return out


def v4_l4_csum_ok(ip: dpkt.ip.IP) -> bool:
    seg = bytes(ip.data)
    pseudo = ip.src + ip.dst + struct.pack("!BBH", 0, ip.p, len(seg))
    return bool(dpkt.in_cksum(pseudo + seg) == 0)


def assert_plain_ipv4(pkts: list[dpkt.ip.IP | dpkt.ip6.IP6], proto: int) -> list[dpkt.ip.IP]:
    """Every packet on the wire is IPv4 with valid header and L4 checksums."""
    assert pkts
    assert all(isinstance(p, dpkt.ip.IP) for p in pkts), [type(p) for p in pkts]
    v4 = [p for p in pkts if isinstance(p, dpkt.ip.IP)]
    for ip in v4:
        assert ip.v == 4 and ip.p == proto
        assert dpkt.in_cksum(bytes(ip)[: ip.hl * 4]) == 0
        assert v4_l4_csum_ok(ip)
    return v4


# -- TCP ------------------------------------------------------------------------------------------


async def test_ipv4_client_reaches_a_dual_stack_listener(lab: Lab, autojump_clock: object) -> None:
    """IPv4 SYN → a listener on ``::``: the child is mapped, the wire plain IPv4 (MSS 1460)."""
    a, b = dual_pair(lab, kind="nic")
    cap = b.capture("eth0")
    srv = b.socket(AF_INET6, SOCK_STREAM)
    await srv.bind(("::", PORT))
    srv.listen(8)
    seen: list[Any] = []

    async def server() -> None:
        conn, peer = await srv.accept()
        seen.append(peer)
        seen.append(conn.getsockname())
        seen.append(b.ss("-tn"))
        seen.append((b.ss("-4tn"), b.ss("-6tn")))
        assert await recv_all(conn) == b"hello" * 2000
        await conn.send(b"bye")
        conn.close()

    async with trio.open_nursery() as n:
        n.start_soon(server)
        c = a.socket(AF_INET, SOCK_STREAM)
        await c.connect(("10.0.0.2", PORT))
        await c.sendall(b"hello" * 2000)
        c.shutdown(1)
        assert await recv_all(c) == b"bye"
        c.close()
    await trio.sleep(1)
    cap.stop()
    peer, sockname, ss_all, (ss4, ss6) = seen
    cport = c.sock.inet_num
    assert peer == ("::ffff:10.0.0.1", cport, 0, 0)
    assert sockname == ("::ffff:10.0.0.2", PORT, 0, 0)
    row = f"[::ffff:10.0.0.2]:{PORT} [::ffff:10.0.0.1]:{cport}"
    assert isinstance(ss_all, str) and " ".join(ss_all.split()[-2:]) == row
    assert "ffff" not in str(ss4) and "ESTAB" not in str(ss4)  # ss -4: sk_family AF_INET only
    assert row in " ".join(str(ss6).split())
    v4 = assert_plain_ipv4(ip_packets(cap.frames), 6)
    syn, synack = v4[0].data, v4[1].data
    assert syn.flags == dpkt.tcp.TH_SYN and synack.flags == dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK
    opts = dict(dpkt.tcp.parse_opts(synack.opts))
    assert struct.unpack("!H", opts[dpkt.tcp.TCP_OPT_MSS])[0] == 1460  # IPv4: 1500 - 40
    assert len([p for p in v4 if p.data.flags & dpkt.tcp.TH_FIN]) == 2
    assert not any(p.data.flags & dpkt.tcp.TH_RST for p in v4)
    assert tcp_of(b.net).snmp()["Tcp"].PassiveOpens == 1


async def test_mapped_client_reaches_an_ipv4_listener(lab: Lab, autojump_clock: object) -> None:
    """connect(``::ffff:10.0.0.2``): ipv6_mapped af_ops, IPv4 MSS and GSO, IPv4 on the wire."""
    a, b = dual_pair(lab)
    cap = a.capture("eth0")
    srv = b.socket(AF_INET, SOCK_STREAM)
    await srv.bind(("0.0.0.0", PORT))
    srv.listen(8)
    payload = bytes(range(256)) * 1024
    got: list[object] = []

    async def server() -> None:
        conn, peer = await srv.accept()
        got.append(peer)
        got.append(await recv_all(conn))
        conn.close()

    async with trio.open_nursery() as n:
        n.start_soon(server)
        c = a.socket(AF_INET6, SOCK_STREAM)
        await c.connect(("::ffff:10.0.0.2", PORT))
        sk: Any = c.sock
        assert sk.af_ops.net_header_len == 20 and sk.af_ops.family == AF_INET
        assert sk.mss_cache == 1448  # 1500 - 20 - 20 - 12 (timestamps)
        assert sk.sk_gso_type == SKB_GSO_TCPV4
        assert c.getsockname() == ("::ffff:10.0.0.1", sk.inet_num, 0, 0)
        assert c.getpeername() == ("::ffff:10.0.0.2", PORT, 0, 0)
        assert f"[::ffff:10.0.0.1]:{sk.inet_num}" in a.ss("-6tn")
        await c.sendall(payload)
        c.close()
    await trio.sleep(1)
    cap.stop()
    assert got == [("10.0.0.1", c.sock.inet_num), payload]
    # the active closer's TIME_WAIT sock keeps the mapped view (and is keyed as IPv4)
    tw_row = f"TIME-WAIT 0 0 [::ffff:10.0.0.1]:{c.sock.inet_num} [::ffff:10.0.0.2]:{PORT}"
    assert tw_row in [" ".join(line.split()) for line in a.ss("-tan").splitlines()]
    assert "TIME-WAIT" not in a.ss("-4tan")
    v4 = assert_plain_ipv4(ip_packets(cap.frames), 6)
    syn = v4[0].data
    assert syn.flags == dpkt.tcp.TH_SYN and syn.opts[:4] == b"\x02\x04\x05\xb4"  # MSS 1460
    sent = b"".join(bytes(p.data.data) for p in v4 if p.data.dport == PORT)
    assert sent == payload


async def test_v6only_refusals(lab: Lab, autojump_clock: object) -> None:
    """IPV6_V6ONLY: no IPv4 SYN reaches the listener, mapped connect/bind fail as on Linux."""
    a, b = dual_pair(lab)
    srv = b.socket(AF_INET6, SOCK_STREAM)
    srv.setsockopt(IPPROTO_IPV6, IPV6_V6ONLY, 1)
    await srv.bind(("::", PORT))
    srv.listen(8)
    with pytest.raises(OSError) as e:
        srv.setsockopt(IPPROTO_IPV6, IPV6_V6ONLY, 0)  # not once bound
    assert e.value.errno == errno.EINVAL
    c = a.socket(AF_INET, SOCK_STREAM)
    with pytest.raises(OSError) as e:
        await c.connect(("10.0.0.2", PORT))
    assert e.value.errno == errno.ECONNREFUSED  # the SYN found no listener: RST
    c6 = a.socket(AF_INET6, SOCK_STREAM)
    c6.setsockopt(IPPROTO_IPV6, IPV6_V6ONLY, 1)
    with pytest.raises(OSError) as e:
        await c6.connect(("::ffff:10.0.0.2", PORT))
    assert e.value.errno == errno.ENETUNREACH
    with pytest.raises(OSError) as e:
        await c6.bind(("::ffff:10.0.0.1", 0))
    assert e.value.errno == errno.EINVAL
    # a dual-stack socket may bind a mapped address, but only a local one
    d = a.socket(AF_INET6, SOCK_STREAM)
    with pytest.raises(OSError) as e:
        await d.bind(("::ffff:10.0.0.99", 0))
    assert e.value.errno == errno.EADDRNOTAVAIL
    # bound to a mapped address, it cannot reach a native IPv6 peer (ip6_dst_lookup_tail)
    await d.bind(("::ffff:10.0.0.1", 0))
    with pytest.raises(OSError) as e:
        await d.connect(("2001:db8::2", PORT))
    assert e.value.errno == errno.EAFNOSUPPORT
    u = a.socket(AF_INET6, SOCK_DGRAM)
    await u.bind(("::ffff:10.0.0.1", 0))
    with pytest.raises(OSError) as e:
        await u.sendto(b"x", ("2001:db8::2", 9))
    assert e.value.errno == errno.EAFNOSUPPORT
    # a native IPv6 bind makes the socket v6-only (__inet6_bind)
    n6 = a.socket(AF_INET6, SOCK_STREAM)
    await n6.bind(("2001:db8::1", 0))
    assert n6.getsockopt(IPPROTO_IPV6, IPV6_V6ONLY) == 1
    with pytest.raises(OSError) as e:
        await n6.connect(("::ffff:10.0.0.2", PORT))
    assert e.value.errno == errno.ENETUNREACH
    # sysctl net.ipv6.bindv6only = 1: new sockets start v6-only
    a.sysctl("net.ipv6.bindv6only=1")
    assert a.socket(AF_INET6, SOCK_STREAM).getsockopt(IPPROTO_IPV6, IPV6_V6ONLY) == 1
    assert a.socket(AF_INET6, SOCK_DGRAM).getsockopt(IPPROTO_IPV6, IPV6_V6ONLY) == 1


async def test_mapped_listener_and_v4_preferred(lab: Lab, autojump_clock: object) -> None:
    """A listener on ``::ffff:10.0.0.2`` takes IPv4 SYNs; an AF_INET listener scores higher."""
    a, b = dual_pair(lab)
    l6 = b.socket(AF_INET6, SOCK_STREAM)
    await l6.bind(("::ffff:10.0.0.2", PORT))
    assert l6.getsockname() == ("::ffff:10.0.0.2", PORT, 0, 0)
    l6.listen(4)
    c = a.socket(AF_INET, SOCK_STREAM)
    await c.connect(("10.0.0.2", PORT))
    conn, peer = await l6.accept()
    assert peer[0] == "::ffff:10.0.0.1"
    conn.close()
    c.close()
    # v6-only dual listener + IPv4 listener on one port: each family finds its own
    v6 = b.socket(AF_INET6, SOCK_STREAM)
    v6.setsockopt(IPPROTO_IPV6, IPV6_V6ONLY, 1)
    await v6.bind(("::", PORT + 1))
    v6.listen(4)
    v4 = b.socket(AF_INET, SOCK_STREAM)
    await v4.bind(("0.0.0.0", PORT + 1))
    v4.listen(4)
    c4 = a.socket(AF_INET, SOCK_STREAM)
    await c4.connect(("10.0.0.2", PORT + 1))
    c6 = a.socket(AF_INET6, SOCK_STREAM)
    await c6.connect(("2001:db8::2", PORT + 1))
    assert (await v4.accept())[1] == ("10.0.0.1", c4.sock.inet_num)
    assert (await v6.accept())[1][0] == "2001:db8::1"


@pytest.mark.parametrize(
    ("first", "second", "clash"),
    [
        ((AF_INET, "0.0.0.0", False), (AF_INET6, "::", False), True),
        ((AF_INET, "0.0.0.0", False), (AF_INET6, "::", True), False),
        ((AF_INET6, "::", False), (AF_INET, "0.0.0.0", False), True),
        ((AF_INET6, "::", True), (AF_INET, "0.0.0.0", False), False),
        ((AF_INET, "10.0.0.2", False), (AF_INET6, "::ffff:10.0.0.2", False), True),
        ((AF_INET, "10.0.0.2", False), (AF_INET6, "::", False), True),
        ((AF_INET, "10.0.0.2", False), (AF_INET6, "2001:db8::2", False), False),
        ((AF_INET6, "::ffff:10.0.0.2", False), (AF_INET, "0.0.0.0", False), True),
        ((AF_INET6, "2001:db8::2", False), (AF_INET, "0.0.0.0", False), False),
        ((AF_INET6, "::", True), (AF_INET6, "::", False), True),
    ],
)
@pytest.mark.parametrize("sock_type", [SOCK_STREAM, SOCK_DGRAM])
async def test_bind_conflicts_across_families(
    lab: Lab,
    autojump_clock: object,
    first: tuple[int, str, bool],
    second: tuple[int, str, bool],
    clash: bool,
    sock_type: int,
) -> None:
    """inet_csk_bind_conflict / udp_lib_lport_inuse with inet_rcv_saddr_equal."""
    _, b = dual_pair(lab)
    socks = []
    for fam, addr, v6only in (first, second):
        s = b.socket(fam, sock_type)
        if v6only:
            s.setsockopt(IPPROTO_IPV6, IPV6_V6ONLY, 1)
        socks.append((s, addr))
    await socks[0][0].bind((socks[0][1], 5000))
    if clash:
        with pytest.raises(OSError) as e:
            await socks[1][0].bind((socks[1][1], 5000))
        assert e.value.errno == errno.EADDRINUSE
    else:
        await socks[1][0].bind((socks[1][1], 5000))


def test_ipv6_rcv_saddr_equal_table() -> None:
    """The kernel's truth table (net/ipv4/inet_connection_sock.c), wildcards matching."""
    any6, native = 0, 0x20010DB8 << 96 | 2
    m2 = M | 0x0A000002
    # both mapped: compared as IPv4 (None: the other socket is AF_INET)
    assert ipv6_rcv_saddr_equal(m2, None, 0x0A000002, 0x0A000002, False, False, True)
    assert not ipv6_rcv_saddr_equal(m2, None, 0x0A000002, 0x0A000003, False, False, True)
    assert ipv6_rcv_saddr_equal(m2, None, 0x0A000002, 0, False, False, True)
    # :: vs an AF_INET socket: unless the IPv6 socket is v6-only
    assert ipv6_rcv_saddr_equal(any6, None, 0, 0, False, False, True)
    assert not ipv6_rcv_saddr_equal(any6, None, 0, 0x0A000002, True, False, True)
    # :: vs :: always (even v6-only); a native address vs IPv4 never
    assert ipv6_rcv_saddr_equal(any6, any6, 0, 0, True, True, True)
    assert not ipv6_rcv_saddr_equal(native, None, 0x7F000006, 0, True, False, True)
    assert ipv6_rcv_saddr_equal(native, native, 0, 0, True, True, False)
    assert not ipv6_rcv_saddr_equal(native, any6, 0, 0, True, True, False)


# -- UDP ------------------------------------------------------------------------------------------


async def test_udp_dual_stack_both_ways(lab: Lab, autojump_clock: object) -> None:
    """An AF_INET6 socket on ``::`` serves IPv4 and IPv6 clients; a mapped client an IPv4 one."""
    a, b = dual_pair(lab)
    cap = a.capture("eth0")
    srv = b.socket(AF_INET6, SOCK_DGRAM)
    await srv.bind(("::", 53))
    c4 = a.socket(AF_INET, SOCK_DGRAM)
    await c4.sendto(b"q4", ("10.0.0.2", 53))
    data, peer = await srv.recvfrom(100)
    assert data == b"q4" and peer == ("::ffff:10.0.0.1", c4.sock.inet_num, 0, 0)
    await srv.sendto(b"r4", peer)
    assert await c4.recvfrom(100) == (b"r4", ("10.0.0.2", 53))
    c6 = a.socket(AF_INET6, SOCK_DGRAM)
    await c6.sendto(b"q6", ("2001:db8::2", 53))
    data, peer6 = await srv.recvfrom(100)
    assert data == b"q6" and peer6[0] == "2001:db8::1"
    # a mapped client, connected, to an IPv4 server
    s4 = b.socket(AF_INET, SOCK_DGRAM)
    await s4.bind(("0.0.0.0", 54))
    m = a.socket(AF_INET6, SOCK_DGRAM)
    await m.connect(("::ffff:10.0.0.2", 54))
    assert m.getsockname() == ("::ffff:10.0.0.1", m.sock.inet_num, 0, 0)
    assert m.getpeername() == ("::ffff:10.0.0.2", 54, 0, 0)
    await m.send(b"mapped")
    data, p = await s4.recvfrom(100)
    assert (data, p) == (b"mapped", ("10.0.0.1", m.sock.inet_num))
    await s4.sendto(b"back", p)
    assert await m.recvfrom(100) == (b"back", ("::ffff:10.0.0.2", 54, 0, 0))
    await trio.sleep(0.1)
    cap.stop()
    pkts = [p for p in ip_packets(cap.frames) if isinstance(p, dpkt.ip.IP)]
    assert len(pkts) == 4  # q4, r4, mapped, back: all plain IPv4
    assert_plain_ipv4(pkts, 17)
    six = [p for p in ip_packets(cap.frames) if isinstance(p, dpkt.ip6.IP6)]
    assert len(six) == 1 and bytes(six[0].data.data) == b"q6"
    assert b.nstat()["UdpInDatagrams"] == 2 and b.nstat()["Udp6InDatagrams"] == 1
    assert b.nstat()["UdpOutDatagrams"] == 2  # r4 (the dual socket's) and back


async def test_udp_v6only_and_v4_preferred(lab: Lab, autojump_clock: object) -> None:
    """v6-only: mapped sendto/connect ENETUNREACH, no IPv4 delivery; AF_INET scores higher."""
    from netstack.core.sock import SO_REUSEADDR, SOL_SOCKET

    a, b = dual_pair(lab)
    v6 = b.socket(AF_INET6, SOCK_DGRAM)
    v6.setsockopt(IPPROTO_IPV6, IPV6_V6ONLY, 1)
    await v6.bind(("::", 53))
    with pytest.raises(OSError) as e:
        await v6.sendto(b"x", ("::ffff:10.0.0.1", 9))
    assert e.value.errno == errno.ENETUNREACH
    with pytest.raises(OSError) as e:
        await v6.connect(("::ffff:10.0.0.1", 9))
    assert e.value.errno == errno.ENETUNREACH
    c4 = a.socket(AF_INET, SOCK_DGRAM)
    await c4.sendto(b"q", ("10.0.0.2", 53))
    await trio.sleep(0.1)
    with pytest.raises(BlockingIOError):
        v6.recvfrom_nowait(100)
    assert b.nstat()["UdpNoPorts"] == 1  # and an ICMP port unreachable
    # SO_REUSEADDR dual socket and IPv4 socket on one port: IPv4 wins (compute_score)
    d = b.socket(AF_INET6, SOCK_DGRAM)
    d.setsockopt(SOL_SOCKET, SO_REUSEADDR, 1)
    await d.bind(("::", 60))
    s4 = b.socket(AF_INET, SOCK_DGRAM)
    s4.setsockopt(SOL_SOCKET, SO_REUSEADDR, 1)
    await s4.bind(("0.0.0.0", 60))
    await c4.sendto(b"which", ("10.0.0.2", 60))
    assert (await s4.recvfrom(100))[0] == b"which"
    with pytest.raises(BlockingIOError):
        d.recvfrom_nowait(100)
    s4.close()
    await c4.sendto(b"now", ("10.0.0.2", 60))
    assert (await d.recvfrom(100))[0] == b"now"
    # connecting to a native IPv6 peer takes the socket out of IPv4's reach
    await d.connect(("2001:db8::1", 9))
    await c4.sendto(b"late", ("10.0.0.2", 60))
    await trio.sleep(0.1)
    with pytest.raises(BlockingIOError):
        d.recvfrom_nowait(100)


async def test_udp_mapped_errors_read_as_ipv6(lab: Lab, autojump_clock: object) -> None:
    """IP_RECVERR on a dual-stack socket: an ICMP port unreachable about an IPv4
    datagram reads as IPv6's report (ipv6_recv_error): ``::ffff:`` addresses."""
    from netstack.core.sock import MSG_ERRQUEUE
    from netstack.socket import IP_RECVERR, IPPROTO_IP, SOL_IPV6
    from netstack.socket import IPV6_RECVERR as RECVERR6

    a, _ = dual_pair(lab)
    u = a.socket(AF_INET6, SOCK_DGRAM)
    u.setsockopt(IPPROTO_IP, IP_RECVERR, 1)  # SOL_IP reaches ip_setsockopt
    assert u.getsockopt(IPPROTO_IP, IP_RECVERR) == 1
    await u.sendto(b"nobody", ("::ffff:10.0.0.2", 9))
    await trio.sleep(0.1)
    data, anc, _, addr = await u.recvmsg(100, 1024, MSG_ERRQUEUE)
    assert data == b"nobody" and addr == ("::ffff:10.0.0.2", 9, 0, 0)
    ((level, kind, ee),) = anc
    assert (level, kind) == (SOL_IPV6, RECVERR6)
    err, origin, icmp_type, code = struct.unpack_from("=IBBB", ee)
    assert (err, origin, icmp_type, code) == (errno.ECONNREFUSED, 2, 3, 3)  # ICMP port unreach
    fam, _, _, offender, _ = struct.unpack_from("=H2s4s16sI", ee, 16)
    assert fam == AF_INET6 and offender == bytes(10) + b"\xff\xff" + bytes([10, 0, 0, 2])


async def test_ss_prints_a_dual_stack_wildcard_as_star(lab: Lab, autojump_clock: object) -> None:
    """misc/ss.c inet_addr_print: ``::`` of a socket that takes IPv4 too is ``*``."""
    a, _ = dual_pair(lab)
    dual = a.socket(AF_INET6, SOCK_STREAM)
    await dual.bind(("::", 7001))
    dual.listen(1)
    only = a.socket(AF_INET6, SOCK_STREAM)
    only.setsockopt(IPPROTO_IPV6, IPV6_V6ONLY, 1)
    await only.bind(("::", 7002))
    only.listen(1)
    rows = {line.split()[3]: line.split()[4] for line in a.ss("-ltn").splitlines()[1:]}
    assert rows == {"*:7001": "*:*", "[::]:7002": "[::]:*"}
