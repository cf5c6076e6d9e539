"""Automatic IPv6 flow labels as Linux sends them (``net.ipv6.auto_flowlabels``).

    a (2001:db8::1) ── veth ── b (2001:db8::2)

dpkt is the oracle for the headers on the wire (``IP6.flow``). The expected
label is computed independently here from the socket's ``sk_txhash``: rotate
left 16, take the bytes as a little-endian host stores them, keep 20 bits
(include/net/ipv6.h, ip6_make_flowlabel).
"""

from __future__ import annotations

import functools

import dpkt
import trio

from netstack.core.sock import AF_INET6, SOCK_STREAM
from netstack.host import Host, Lab, open_lab
from netstack.ipv6 import ipv6_of
from netstack.socket import IPPROTO_IPV6, IPV6_AUTOFLOWLABEL, Socket
from netstack.tcp import TcpSock, tcp_of
from netstack.testing import builders

PORT = 5001


def expected_label(txhash: int) -> int:
    r = ((txhash << 16) | (txhash >> 16)) & 0xFFFFFFFF
    return int.from_bytes(r.to_bytes(4, "little"), "big") & 0xFFFFF


# a (2001:db8::1) — b (2001:db8::2), IPv6 on, no DAD
pair6 = functools.partial(builders.pair, family=6, ipv4_only=False, nodad=True)


def ip6_packets(frames: list[tuple[float, bytes, bool]]) -> list[dpkt.ip6.IP6]:
    out = []
    for _, frame, _ in frames:
        eth = dpkt.ethernet.Ethernet(frame)
        if isinstance(eth.data, dpkt.ip6.IP6):
            out.append(eth.data)
    return out


async def _transfer(a: Host, b: Host, payload: bytes) -> tuple[TcpSock, list[TcpSock]]:
    srv = b.socket(AF_INET6, SOCK_STREAM)
    await srv.bind(("::", PORT))
    srv.listen(4)
    children: list[TcpSock] = []

    async def server() -> None:
        conn, _ = await srv.accept()
        sk = conn.sock
        assert isinstance(sk, TcpSock)
        children.append(sk)
        while await conn.recv(1 << 16):
            pass
        conn.close()

    async with trio.open_nursery() as n:
        n.start_soon(server)
        c = a.socket(AF_INET6, SOCK_STREAM)
        await c.connect(("2001:db8::2", PORT))
        sk = c.sock
        assert isinstance(sk, TcpSock)
        await c.sendall(payload)
        c.close()
    await trio.sleep(1)
    return sk, children


async def test_tcp_label_is_the_connections_txhash(lab: Lab, autojump_clock: object) -> None:
    """Every segment of a direction carries one label: from sk_txhash (client) and
    from the request's txhash, which the child inherits (server, SYN-ACK included)."""
    a, b = pair6(lab)
    cap = b.capture("eth0")
    sk, (child,) = await _transfer(a, b, b"x" * 100_000)
    cap.stop()
    pkts = [p for p in ip6_packets(cap.frames) if isinstance(p.data, dpkt.tcp.TCP)]
    up = {p.flow for p in pkts if p.data.dport == PORT}
    down = {p.flow for p in pkts if p.data.sport == PORT}
    assert sk.sk_txhash and child.sk_txhash
    assert up == {expected_label(sk.sk_txhash)}
    assert down == {expected_label(child.sk_txhash)}
    assert up != {0} and up != down


async def test_labels_repeat_under_the_seed(autojump_clock: object) -> None:
    """Same lab seed, same labels: sk_txhash comes from the host's seeded RNG."""
    labels = []
    for _ in range(2):
        async with open_lab(seed=7) as lab:
            a, b = pair6(lab)
            cap = a.capture("eth0")
            await _transfer(a, b, b"y" * 5000)
            cap.stop()
        labels.append(sorted({p.flow for p in ip6_packets(cap.frames)}))
    assert len(labels[0]) == 3  # ND's 0 and one label per direction
    assert labels[0] == labels[1]


async def test_sysctl_and_sockopt(lab: Lab, autojump_clock: object) -> None:
    """0 off; 1 opt-out (IPV6_AUTOFLOWLABEL 0 clears); 2 opt-in; 3 forced; state ranges."""
    a, b = pair6(lab)
    srv = b.socket(AF_INET6)
    await srv.bind(("::", 5000))

    async def label_of(cli: Socket) -> int:
        cap = a.capture("eth0")
        await cli.sendto(b"q", ("2001:db8::2", 5000))
        await srv.recvfrom(10)
        cap.stop()
        (p,) = [p for p in ip6_packets(cap.frames) if isinstance(p.data, dpkt.udp.UDP)]
        return int(p.flow)

    cli = a.socket(AF_INET6)
    assert cli.getsockopt(IPPROTO_IPV6, IPV6_AUTOFLOWLABEL) == 1
    auto = await label_of(cli)
    assert auto and auto == await label_of(cli)  # one flow, one label
    cli.setsockopt(IPPROTO_IPV6, IPV6_AUTOFLOWLABEL, 0)
    assert cli.getsockopt(IPPROTO_IPV6, IPV6_AUTOFLOWLABEL) == 0
    assert await label_of(cli) == 0
    a.sysctl("net.ipv6.auto_flowlabels=3")  # forced: even for this socket
    assert await label_of(cli) == auto
    a.sysctl("net.ipv6.auto_flowlabels=2")  # opt-in: only sockets that ask
    fresh = a.socket(AF_INET6)
    await fresh.bind(("::", cli.getsockname()[1] + 1))
    assert fresh.getsockopt(IPPROTO_IPV6, IPV6_AUTOFLOWLABEL) == 0
    assert await label_of(fresh) == 0
    fresh.setsockopt(IPPROTO_IPV6, IPV6_AUTOFLOWLABEL, 1)
    assert await label_of(fresh) not in (0, auto)  # another port, another flow
    a.sysctl("net.ipv6.auto_flowlabels=0")
    assert await label_of(fresh) == 0
    a.sysctl("net.ipv6.auto_flowlabels=1")
    a.sysctl("net.ipv6.flowlabel_state_ranges=1")
    cli.setsockopt(IPPROTO_IPV6, IPV6_AUTOFLOWLABEL, 1)
    assert await label_of(cli) == auto | 0x80000


async def test_tcp_sockopt_and_sysctl_reach_a_live_connection(
    lab: Lab, autojump_clock: object
) -> None:
    a, b = pair6(lab)
    srv = b.socket(AF_INET6, SOCK_STREAM)
    await srv.bind(("::", PORT))
    srv.listen(1)
    c = a.socket(AF_INET6, SOCK_STREAM)
    await c.connect(("2001:db8::2", PORT))
    conn, _ = await srv.accept()
    sk = c.sock
    assert isinstance(sk, TcpSock)

    async def label_now() -> int:
        cap = a.capture("eth0")
        await c.send(b"z")
        await conn.recv(10)
        cap.stop()
        (p,) = [
            p
            for p in ip6_packets(cap.frames)
            if isinstance(p.data, dpkt.tcp.TCP) and p.data.dport == PORT and p.data.data
        ]
        return int(p.flow)

    assert await label_now() == expected_label(sk.sk_txhash)
    c.setsockopt(IPPROTO_IPV6, IPV6_AUTOFLOWLABEL, 0)
    assert await label_now() == 0
    a.sysctl("net.ipv6.auto_flowlabels=3")
    assert await label_now() == expected_label(sk.sk_txhash)
    c.close()
    conn.close()


async def test_rto_rethinks_the_txhash_and_the_label(lab: Lab, autojump_clock: object) -> None:
    """Each RTO draws a new sk_txhash (TcpTimeoutRehash), so retransmissions carry new
    labels (RFC 6438: the label picks the path)."""
    a, b = pair6(lab)
    srv = b.socket(AF_INET6, SOCK_STREAM)
    await srv.bind(("::", PORT))
    srv.listen(1)
    c = a.socket(AF_INET6, SOCK_STREAM)
    await c.connect(("2001:db8::2", PORT))
    _conn, _ = await srv.accept()
    sk = c.sock
    assert isinstance(sk, TcpSock)
    first = sk.sk_txhash
    b.tc("qdisc add dev eth0 root netem loss 100%")  # b's ACKs are lost: a times out
    cap = b.capture("eth0")
    await c.send(b"d" * 1000)
    await trio.sleep(5)
    cap.stop()
    ext = tcp_of(a.net).snmp()["TcpExt"]
    # RTOs 0.2, 0.4, 0.8 and 1.6 s after the send (TCP_RTO_MIN, doubling): four in 5 s
    assert ext.TcpTimeoutRehash == sk.timeout_rehash == 4
    assert sk.sk_txhash != first
    labels = [
        p.flow
        for p in ip6_packets(cap.frames)
        if isinstance(p.data, dpkt.tcp.TCP) and p.data.dport == PORT
    ]
    # the first send and its tail loss probe share the first label; each RTO brings a new one
    assert labels[0] == expected_label(first)
    assert len(set(labels)) == 1 + sk.timeout_rehash
    assert labels[-1] == expected_label(sk.sk_txhash)


async def test_udp_and_echo_labels_are_per_flow(lab: Lab, autojump_clock: object) -> None:
    """Without a txhash the label hashes the flow's keys with the host's own hashrnd,
    ordered so that both directions hash alike; echo requests and replies carry labels."""
    a, b = pair6(lab)
    cap = b.capture("eth0")
    srv = b.socket(AF_INET6)
    await srv.bind(("::", 5000))
    cli = a.socket(AF_INET6)
    await cli.bind(("::", 4000))
    await cli.sendto(b"hi", ("2001:db8::2", 5000))
    _, peer = await srv.recvfrom(10)
    await srv.sendto(b"ho", peer)
    await cli.recvfrom(10)
    res = await a.ping("2001:db8::2", count=1)
    assert res.received == 1
    cap.stop()
    pkts = ip6_packets(cap.frames)
    udp = [p.flow for p in pkts if isinstance(p.data, dpkt.udp.UDP)]
    assert len(udp) == 2 and all(udp)
    fh = ipv6_of(a.net).flow_hash
    assert fh.flowi6(1, 2, 4000, 5000, 17) == fh.flowi6(2, 1, 5000, 4000, 17)
    assert fh.flowi6(1, 2, 4000, 5000, 17) != fh.flowi6(1, 2, 4001, 5000, 17)
    assert fh.flowi6(1, 2, 4000, 5000, 17) != ipv6_of(b.net).flow_hash.flowi6(1, 2, 4000, 5000, 17)
    icmp = [p for p in pkts if isinstance(p.data, dpkt.icmp6.ICMP6)]
    echo = [p.flow for p in icmp if p.data.type in (128, 129)]
    assert len(echo) == 2 and all(echo)
    nd = [p.flow for p in icmp if p.data.type in (135, 136)]
    assert nd and not any(nd)  # ndisc_send_skb: label 0, as Linux


async def test_child_inherits_ipv6_autoflowlabel(lab: Lab, autojump_clock: object) -> None:
    """A listener's IPV6_AUTOFLOWLABEL 0 covers its SYN-ACKs (ip6_xmit with the
    listener) and reaches its children (the ipv6_pinfo copy): nothing is labelled."""
    a, b = pair6(lab)
    srv = b.socket(AF_INET6, SOCK_STREAM)
    srv.setsockopt(IPPROTO_IPV6, IPV6_AUTOFLOWLABEL, 0)
    await srv.bind(("::", PORT))
    srv.listen(1)
    cap = a.capture("eth0")
    c = a.socket(AF_INET6, SOCK_STREAM)
    await c.connect(("2001:db8::2", PORT))
    conn, _ = await srv.accept()
    await conn.send(b"from the child")
    assert await c.recv(100) == b"from the child"
    cap.stop()
    assert conn.getsockopt(IPPROTO_IPV6, IPV6_AUTOFLOWLABEL) == 0
    down = [
        p.flow
        for p in ip6_packets(cap.frames)
        if isinstance(p.data, dpkt.tcp.TCP) and p.data.sport == PORT
    ]
    assert down and not any(down)
