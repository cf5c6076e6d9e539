"""The socket lock: a segment for an owned socket waits in its backlog (tcp_add_backlog).

    stack (the connection under test) ── Port: the peer, driven by a TcpContext

While a socket call owns the socket (``lock_sock``), ``tcp_v4_rcv``/``tcp_v6_rcv``
queue its segments on ``sk_backlog`` instead of processing them; ``release_sock``
runs them (``__release_sock`` → ``tcp_v4_do_rcv``) before the socket is given up.
Beyond twice ``sk_rcvbuf``, half ``sk_sndbuf`` and 64 KB a segment is dropped
(``TCPBacklogDrop``). An ICMP "fragmentation needed" / "packet too big" for an owned
socket is deferred to ``tcp_release_cb`` (``TCP_MTU_REDUCED_DEFERRED``); any other
ICMP error counts ``LockDroppedIcmps``. Kernel: net/ipv4/tcp_ipv4.c (tcp_v4_rcv,
tcp_add_backlog, tcp_v4_err), net/core/sock.c (release_sock, __release_sock),
net/ipv4/tcp_output.c (tcp_release_cb).

The lock is taken here by hand (as a socket call would) so that the peer's
segments arrive while it is held.
"""

from __future__ import annotations

import errno
from typing import Any

import pytest
from tcp.port_connection import port_connection

from netstack.host import Lab
from netstack.tcp import tcp_of
from netstack.tcp.sock import (
    TCPF_MTU_REDUCED_DEFERRED,
    lock_sock,
    release_sock,
)
from netstack.testing.tcpctx import TcpContext


def _ext(ctx: TcpContext) -> Any:
    return tcp_of(ctx.host.net).snmp()["TcpExt"]


@pytest.mark.parametrize("family", [4, 6])
async def test_segments_for_an_owned_socket_wait_in_its_backlog(
    lab: Lab, autojump_clock: object, family: int
) -> None:
    ctx, sock, sk = await port_connection(lab, family)
    rcv_nxt = sk.rcv_nxt
    assert lock_sock(sk) and not lock_sock(sk)  # a call inside a call: nothing to take
    await ctx.send_segment("P.", payload=b"a" * 100)
    await ctx.send_segment("P.", payload=b"b" * 100)
    assert len(sk.sk_backlog) == 2 and sk.sk_backlog_len > 0
    assert not sk.receive_queue and sk.rcv_nxt == rcv_nxt
    await ctx.expect_no_segment()  # nothing processed: no ACK
    release_sock(sk)  # __release_sock: both segments through tcp_v4_do_rcv, in order
    assert not sk.sk_lock_owned and not sk.sk_backlog and sk.sk_backlog_len == 0
    assert await sock.recv(1000) == b"a" * 100 + b"b" * 100
    await ctx.expect_segment(".", ack=101)  # quick ACKs, as each segment is run


@pytest.mark.parametrize("family", [4, 6])
async def test_a_full_backlog_drops(lab: Lab, autojump_clock: object, family: int) -> None:
    ctx, sock, sk = await port_connection(lab, family)
    sk.sk_rcvbuf = sk.sk_sndbuf = 4096  # limit: 8 KB + 2 KB + 64 KB of truesize
    lock_sock(sk)
    for _ in range(60):
        await ctx.send_segment("P.", payload=b"x" * 1000)
    queued = len(sk.sk_backlog)
    assert 0 < queued < 60
    assert _ext(ctx).TCPBacklogDrop == 60 - queued
    release_sock(sk)
    assert len(await sock.recv(1 << 20)) == 1000 * queued


@pytest.mark.parametrize("family", [4, 6])
async def test_pmtu_update_of_an_owned_socket_waits_for_release(
    lab: Lab, autojump_clock: object, family: int
) -> None:
    ctx, sock, sk = await port_connection(lab, family)
    await sock.send(b"z" * 1400)
    await ctx.next_segment()
    mss = sk.mss_cache
    rt = sk.dst_cache
    assert rt is not None and int(rt.mtu()) == 1500
    lock_sock(sk)
    if family == 4:
        await ctx.send_icmp_error(3, 4, seq=1, info=1200, flags="P.")  # fragmentation needed
    else:
        await ctx.send_icmp_error(2, 0, seq=1, info=1280, flags="P.")  # packet too big
    assert sk.sk_tsq_flags & TCPF_MTU_REDUCED_DEFERRED and sk.mss_cache == mss
    # only mtu_info is kept: the route learns it in tcp_v4_mtu_reduced /
    # tcp_v6_mtu_reduced (inet_csk_update_pmtu / inet6_csk_update_pmtu), deferred
    # too (before, tcp_v6_err updated it at once)
    assert sk.mtu_info == (1200 if family == 4 else 1280)
    assert sk.dst_cache is rt and rt.valid() and int(rt.mtu()) == 1500
    drops = _ext(ctx).LockDroppedIcmps
    port_unreach = (3, 3) if family == 4 else (1, 4)
    await ctx.send_icmp_error(*port_unreach, seq=1, flags="P.")
    assert _ext(ctx).LockDroppedIcmps == drops + 1
    # kept as the soft error (with IP_RECVERR on, an owned socket too:
    # test_tcp_sock_lock_bh.py)
    assert (sk.sk_err, sk.sk_err_soft) == (0, errno.ECONNREFUSED)
    release_sock(sk)  # tcp_release_cb → mtu_reduced
    assert sk.sk_tsq_flags == 0 and sk.mss_cache < mss
    assert not rt.valid() and sk.dst_cache is not None
    assert int(sk.dst_cache.mtu()) == (1200 if family == 4 else 1280)
