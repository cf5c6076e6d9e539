"""The socket lock with the polls at local_bh_enable: what reaches an owned socket.

    a ── r ── b (the PMTU cases: r's link to b is narrower)
    stack (the connection under test) ── Port: the peer, driven by a TcpContext

The kernel's ``release_sock`` holds ``spin_lock_bh(slock)`` from the backlog's last
batch through ``tcp_release_cb`` and ``sock_release_ownership``: what the deferred
work transmits raises ``NET_RX``, and the softirq runs at ``spin_unlock_bh``, once the
socket is free, so the ACKs it brings are received at once. A segment whose
processing fails leaves the socket given up and the rest on the backlog; a segment
``tcp_add_backlog`` drops counts in ``sk_drops`` too (``discard_and_relse`` →
``sk_drops_add``); an ICMP error for an owned socket stays soft even with
``IP_RECVERR``; a blocking call that would wait runs what came while it held the lock
first (``sk_wait_event``). Kernel: net/core/sock.c (release_sock, __release_sock),
net/ipv4/tcp_ipv4.c (tcp_v4_rcv, tcp_add_backlog, tcp_v4_err), net/ipv4/tcp_output.c
(tcp_release_cb), include/net/sock.h (sk_wait_event, sk_drops_add).
"""

from __future__ import annotations

import errno
from typing import Any, Literal

import pytest
import trio
import trio.testing
from helpers import connected_tcp
from tcp.port_connection import port_connection

import netstack
from netstack.core.napi import BH, BH_ENABLED
from netstack.core.skbuff import SkBuff
from netstack.core.sock import AF_INET6, IP_RECVERR, SOCK_STREAM, SOL_IP
from netstack.host import Lab
from netstack.ipv6.sock import IPV6_RECVERR, SOL_IPV6
from netstack.tcp import tcp_of
from netstack.tcp.sock import TcpSock, lock_sock, release_sock
from netstack.testing import builders

MSG_FASTOPEN = 0x20000000
TCP_FASTOPEN = 23


def _ext(host: netstack.Host) -> Any:
    return tcp_of(host.net).snmp()["TcpExt"]


@pytest.mark.parametrize("family", [4, 6])
async def test_what_release_cb_transmits_is_received_after_the_socket_is_given_up(
    autojump_clock: trio.testing.MockClock, family: Literal[4, 6]
) -> None:
    # r's link to b narrows: the first segments bring "fragmentation needed" /
    # "packet too big" back inside the send (the polls at local_bh_enable), the
    # socket is owned, so the PMTU update waits for tcp_release_cb, whose
    # retransmits bring ACKs: received once the socket is free, none left behind
    async with netstack.open_lab() as lab:
        a, r, b = builders.routed(lab, family=family, ipv4_only=family == 4)
        if family == 4:
            c, conn = await connected_tcp(a, b, 80, "10.0.2.1")
        else:
            await trio.sleep(3)  # DAD
            srv = b.socket(AF_INET6, SOCK_STREAM)
            await srv.bind(("", 80))
            srv.listen(1)
            c = a.socket(AF_INET6, SOCK_STREAM)
            await c.connect(("2001:db8:2::2", 80))
            conn, _ = await srv.accept()
        sk = c.sock
        assert isinstance(sk, TcpSock)
        r.ip("link set eth1 mtu 1280")
        mss = sk.mss_cache
        await c.send(b"x" * 1400 * 3)
        assert sk.mss_cache < mss  # tcp_release_cb ran the deferred PMTU update
        assert not sk.sk_lock_owned
        assert not sk.sk_backlog and sk.sk_backlog_len == 0  # (before: an ACK stranded)
        assert sk.snd_una == sk.snd_nxt and sk.packets_out == 0  # all ACKed in the call
        assert not BH.poll_list and BH.state == BH_ENABLED
        retrans = tcp_of(a.net).snmp()["Tcp"].RetransSegs
        got = b""
        while len(got) < 1400 * 3:
            got += await conn.recv(1 << 16)
        assert got == b"x" * 1400 * 3
        await trio.sleep(5)
        assert tcp_of(a.net).snmp()["Tcp"].RetransSegs == retrans  # no RTO for it


@pytest.mark.parametrize("family", [4, 6])
async def test_a_segment_that_raises_in_release_sock_leaves_the_socket_free(
    lab: Lab, autojump_clock: object, family: int
) -> None:
    ctx, sock, sk = await port_connection(lab, family)
    lock_sock(sk)
    for part in (b"a", b"b", b"c"):
        await ctx.send_segment("P.", payload=part * 100)
    assert len(sk.sk_backlog) == 3
    do_rcv, first = sk.sk_backlog[0]

    def fails(tcp: Any, s: TcpSock, skb: SkBuff) -> int:
        do_rcv(tcp, s, skb)
        raise RuntimeError("a bug in the receive path")

    sk.sk_backlog[0] = (fails, first)
    with pytest.raises(RuntimeError):
        release_sock(sk)
    # given up all the same; the two segments not run wait for the next call
    assert not sk.sk_lock_owned and len(sk.sk_backlog) == 2
    assert await sock.recv(1000) == b"a" * 100  # its release_sock runs the other two
    assert not sk.sk_backlog and sk.sk_backlog_len == 0
    assert await sock.recv(1000) == b"b" * 100 + b"c" * 100
    await ctx.send_segment("P.", payload=b"d" * 100)  # not owned: received at once
    assert not sk.sk_backlog and await sock.recv(1000) == b"d" * 100


@pytest.mark.parametrize("family", [4, 6])
async def test_a_backlog_drop_counts_in_sk_drops(
    lab: Lab, autojump_clock: object, family: int
) -> None:
    ctx, _sock, sk = await port_connection(lab, family)
    sk.sk_rcvbuf = sk.sk_sndbuf = 4096
    drops = sk.sk_drops
    lock_sock(sk)
    for _ in range(60):
        await ctx.send_segment("P.", payload=b"x" * 1000)
    dropped = _ext(ctx.host).TCPBacklogDrop
    assert dropped > 0
    # tcp_v4_rcv/tcp_v6_rcv: discard_and_relse → sk_drops_add (one a segment)
    assert sk.sk_drops == drops + dropped
    release_sock(sk)


async def test_an_icmp_error_for_an_owned_socket_stays_soft_with_recverr(
    lab: Lab, autojump_clock: object
) -> None:
    # tcp_v4_err: IP_RECVERR reports an error at once (sk_err) only when the socket
    # is not owned; an owned one keeps it as the soft error (sk_err_soft)
    ctx, sock, sk = await port_connection(lab, 4)
    sock.setsockopt(SOL_IP, IP_RECVERR, 1)
    await sock.send(b"z" * 100)
    await ctx.next_segment()
    lock_sock(sk)
    await ctx.send_icmp_error(3, 3, seq=1, flags="P.")  # port unreachable
    assert sk.sk_err == 0 and sk.sk_err_soft == errno.ECONNREFUSED
    release_sock(sk)
    sk.sk_err_soft = 0
    await ctx.send_icmp_error(3, 3, seq=1, flags="P.")
    assert sk.sk_err == errno.ECONNREFUSED  # not owned: reported at once


async def test_tcp_v6_err_reports_at_once_with_ipv6_recverr(
    lab: Lab, autojump_clock: object
) -> None:
    # tcp_v6_err reads inet6_test_bit(RECVERR6), which IPV6_RECVERR sets (ipv6_setsockopt
    # takes it on any IPv6 socket: Linux 6.18's TCPv6 socket gives 1 back); IP_RECVERR
    # is tcp_v4_err's (before: ENOPROTOOPT, and tcp_v6_err read IP_RECVERR)
    ctx, sock, sk = await port_connection(lab, 6)
    sock.setsockopt(SOL_IP, IP_RECVERR, 1)
    await sock.send(b"z" * 100)
    await ctx.next_segment()
    await ctx.send_icmp_error(1, 0, seq=1, flags="P.")  # no route: ENETUNREACH, soft
    assert (sk.sk_err, sk.sk_err_soft) == (0, errno.ENETUNREACH)  # IP_RECVERR: not v6's
    sk.sk_err_soft = 0
    sock.setsockopt(SOL_IP, IP_RECVERR, 0)
    sock.setsockopt(SOL_IPV6, IPV6_RECVERR, 1)
    assert sock.getsockopt(SOL_IPV6, IPV6_RECVERR) == 1
    await ctx.send_icmp_error(1, 0, seq=1, flags="P.")
    assert (sk.sk_err, sk.sk_err_soft) == (errno.ENETUNREACH, 0)  # reported at once
    sock.setsockopt(SOL_IPV6, IPV6_RECVERR, 0)
    assert sock.getsockopt(SOL_IPV6, IPV6_RECVERR) == 0


async def test_a_blocking_fast_open_sendto_returns(autojump_clock: trio.testing.MockClock) -> None:
    # The SYN-ACK comes back inside the sendto's call (the polls at local_bh_enable)
    # and waits in the owned socket's backlog; the call would block, so it runs the
    # backlog first and looks again (sk_wait_event), else the wake-up was before the
    # wait and the sendto never returns
    async with netstack.open_lab() as lab:
        a, b = builders.pair(lab)
        a.sysctl("net.ipv4.tcp_fastopen=3")
        b.sysctl("net.ipv4.tcp_fastopen=3")
        srv = b.socket(2, 1)
        await srv.bind(("", 80))
        srv.setsockopt(6, TCP_FASTOPEN, 8)
        srv.listen(8)
        c = a.socket(2, 1)
        with trio.move_on_after(30) as scope:
            assert await c.sendto(b"first", MSG_FASTOPEN, ("10.0.0.2", 80)) == 5
        assert not scope.cancelled_caught, "a blocking MSG_FASTOPEN sendto hung"
        conn, _ = await srv.accept()
        assert await conn.recv(100) == b"first"
