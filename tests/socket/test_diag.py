"""sock_diag: the rows ``ss`` gets (inet_diag_msg with the kernel's field names and values)."""

from __future__ import annotations

import errno

import pytest
import trio
from helpers import add_addr

from netstack.core.sock import AF_INET, AF_INET6, AF_UNSPEC, SOCK_DGRAM, SOCK_STREAM
from netstack.host import Lab
from netstack.socket.diag import (
    INET_DIAG_INFO,
    TCPF_ALL,
    InetDiagMsg,
    InetDiagReqV2,
    inet_diag_dump,
)
from netstack.tcp.sock import TCP_CLOSE, TCP_ESTABLISHED, TCP_LISTEN, TCP_TIME_WAIT
from netstack.wire.ipv4 import IPPROTO_TCP, IPPROTO_UDP, aton


async def test_tcp_and_udp_dumps_fill_inet_diag_msg(lab: Lab, autojump_clock: object) -> None:
    a, b = lab.add_host("a"), lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0")
    add_addr(a, "eth0", "10.0.0.1/24")
    add_addr(b, "eth0", "10.0.0.2/24")
    srv = b.socket(AF_INET, SOCK_STREAM)
    await srv.bind(("", 80))
    srv.listen(16)
    c = a.socket(AF_INET, SOCK_STREAM)
    await c.connect(("10.0.0.2", 80))
    conn, _ = await srv.accept()
    await c.sendall(b"x" * 1000)
    await trio.sleep(0.1)
    sport = c.getsockname()[1]
    ip_a, ip_b = aton("10.0.0.1"), aton("10.0.0.2")

    # b: the listener (accept queue now empty, backlog 16) and the connection (1000 unread)
    tcp_all = InetDiagReqV2(AF_INET, IPPROTO_TCP, idiag_states=TCPF_ALL)
    assert inet_diag_dump(b.net, tcp_all) == [
        InetDiagMsg(AF_INET, TCP_LISTEN, 80, 0, 0, 0, 0, 16, False, None),
        InetDiagMsg(AF_INET, TCP_ESTABLISHED, 80, sport, ip_b, ip_a, 1000, 0, False, None),
    ]
    listening = InetDiagReqV2(AF_UNSPEC, IPPROTO_TCP, idiag_states=1 << TCP_LISTEN)
    assert [r.idiag_state for r in inet_diag_dump(b.net, listening)] == [TCP_LISTEN]
    assert inet_diag_dump(b.net, InetDiagReqV2(AF_INET6, IPPROTO_TCP)) == []
    # INET_DIAG_INFO: tcp_info rides along for full sockets
    (row,) = inet_diag_dump(a.net, InetDiagReqV2(AF_INET, IPPROTO_TCP, 1 << (INET_DIAG_INFO - 1)))
    assert row.info is not None and row.info.bytes_acked == 1001  # the data and the SYN

    # the active closer's TIME_WAIT sock reports its tw_substate
    got = 0
    while got < 1000:  # read it all: closing with unread data would reset
        got += len(await conn.recv(4096))
    c.close()
    await trio.sleep(0.1)
    conn.close()
    await trio.sleep(0.1)
    (tw,) = inet_diag_dump(a.net, tcp_all)
    assert (tw.idiag_state, tw.idiag_sport, tw.idiag_dport) == (TCP_TIME_WAIT, sport, 80)
    assert (tw.idiag_rqueue, tw.idiag_wqueue, tw.info) == (0, 0, None)

    # UDP: TCP_CLOSE until connected, TCP_ESTABLISHED after; queues are the buffers' bytes
    u1 = b.socket(AF_INET, SOCK_DGRAM)
    await u1.bind(("", 9000))
    u2 = a.socket(AF_INET, SOCK_DGRAM)
    await u2.connect(("10.0.0.2", 9000))
    await u2.send(b"y" * 100)
    await trio.sleep(0.1)
    udp_all = InetDiagReqV2(AF_INET, IPPROTO_UDP, idiag_states=TCPF_ALL)
    (r1,) = inet_diag_dump(b.net, udp_all)
    assert (r1.idiag_state, r1.idiag_sport, r1.idiag_dport, r1.idiag_src, r1.idiag_dst) == (
        TCP_CLOSE, 9000, 0, 0, 0,
    )  # fmt: skip
    # one datagram's truesize: a 576-byte head from the skbuff_small_head slab + the
    # sk_buff (256), ss's "Recv-Q 832" (Linux 6.18 over a veth: skmem r832)
    assert r1.idiag_rqueue == u1.sock.sk_rmem_alloc == 832
    (r2,) = inet_diag_dump(a.net, udp_all)
    assert (r2.idiag_state, r2.idiag_src, r2.idiag_dst, r2.idiag_dport) == (
        TCP_ESTABLISHED, ip_a, ip_b, 9000,
    )  # fmt: skip
    connected = InetDiagReqV2(AF_INET, IPPROTO_UDP, idiag_states=1 << TCP_ESTABLISHED)
    assert inet_diag_dump(b.net, connected) == []
    with pytest.raises(OSError) as exc:
        inet_diag_dump(b.net, InetDiagReqV2(AF_INET, 132))  # no SCTP diag handler
    assert exc.value.errno == errno.ENOENT
