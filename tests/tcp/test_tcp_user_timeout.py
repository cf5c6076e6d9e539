"""TCP_USER_TIMEOUT while a local qdisc refuses every packet (issue 16).

Linux 6.x: a transmission refused locally keeps the qdisc's NET_XMIT_DROP
(``__tcp_transmit_skb``: ``net_xmit_eval`` turns only NET_XMIT_CN into 0), a
positive "local congestion" that the timers answer without backing off, at
TCP_RESOURCE_PROBE_INTERVAL (500 ms) — "let senders fight for local
resources conservatively" — and TCP_USER_TIMEOUT still ends the connection
with ETIMEDOUT:

- data in flight (net/ipv4/tcp_timer.c, ``tcp_retransmit_timer``): each RTO
  expiry counts in TCPTimeouts and ``icsk_retransmits``; the refused
  retransmission re-arms the timer at 500 ms, unclamped; ``tcp_write_timeout``
  → ``retransmits_timed_out`` gives up once the user timeout has passed since
  ``retrans_stamp``, the first *attempted* retransmission (the skb is stamped
  before the qdisc refuses it);
- nothing in flight, the data refused at its first transmission
  (``tcp_check_probe_timer`` → ``tcp_probe_timer``/``tcp_send_probe0``): the
  probes come every 500 ms, clamped to the user timeout
  (``tcp_clamp_probe0_to_user_timeout``), and the connection is aborted when
  the user timeout has passed since the first probe (``icsk_probes_tstamp``).
"""

from __future__ import annotations

import errno

import pytest
import trio

from netstack.core.sock import AF_INET, SOCK_STREAM
from netstack.host import Host, Lab
from netstack.socket import Socket
from netstack.tcp import TcpSock, tcp_of
from netstack.tcp.tcp import TCP_NODELAY, TCP_USER_TIMEOUT
from netstack.testing import builders

PORT = 6016
SOL_TCP = 6
DROP_ALL = "qdisc replace dev eth0 root pfifo limit 0"  # no bypass: every packet refused


async def connected(lab: Lab) -> tuple[Host, Host, Socket, Socket, TcpSock]:
    a, b = builders.pair(lab, kind="nic", delay=0.005)  # 10 ms round trip
    srv = b.socket(AF_INET, SOCK_STREAM)
    await srv.bind(("", PORT))
    srv.listen(1)
    c = a.socket(AF_INET, SOCK_STREAM)
    await c.connect(("10.0.0.2", PORT))
    conn, _ = await srv.accept()
    c.setsockopt(SOL_TCP, TCP_NODELAY, 1)
    c.setsockopt(SOL_TCP, TCP_USER_TIMEOUT, 2000)
    await c.sendall(b"x" * 100)
    assert await conn.recv(100) == b"x" * 100
    await trio.sleep(1)  # every ACK is in: nothing in flight
    sk = c.sock
    assert isinstance(sk, TcpSock) and not sk.packets_out
    return a, b, c, conn, sk


async def dies(c: Socket, sk: TcpSock, since: float, field: str) -> list[tuple[int, int]]:
    """Block in recv() until the connection dies; when (ms after *since*) *field*
    took each value (polled every ms), and last (the exact time, -1) of the death."""
    seen: list[tuple[int, int]] = []

    async def watch() -> None:
        while True:
            value = getattr(sk, field)
            if not seen or seen[-1][1] != value:
                seen.append((round((trio.current_time() - since) * 1000), value))
            await trio.sleep(0.001)

    async with trio.open_nursery() as n:
        n.start_soon(watch)
        with pytest.raises(OSError) as e:
            await c.recv(10)
        n.cancel_scope.cancel()
    assert e.value.errno == errno.ETIMEDOUT
    seen.append((round((trio.current_time() - since) * 1000), -1))
    return seen


async def test_rto_retransmissions_refused_locally_still_time_out(
    lab: Lab, autojump_clock: object
) -> None:
    a, b, c, _conn, sk = await connected(lab)
    b.tc("qdisc add dev eth0 root netem loss 100%")  # b's ACKs are lost on the way
    await c.sendall(b"y" * 1000)
    sent = trio.current_time()
    await trio.sleep(0.001)  # the segment has left a; from now on a's qdisc refuses all
    a.tc(DROP_ALL)
    rto = sk.icsk_rto
    assert rto == 219  # ms (HZ 1000): 10 ms of RTT, rttvar at TCP_RTO_MIN
    seen = await dies(c, sk, sent, "icsk_retransmits")
    # the tail-loss probe at 219 ms is refused too (it restamps the skb, so the RTO
    # is re-armed a full RTO later); then the RTO at 438 ms: its retransmission is
    # refused, retrans_stamp = 438 ms, and the timer comes back every 500 ms
    # without back-off, until 2000 ms after 438 ms: ETIMEDOUT at 2438 ms
    # (polled each ms: a change is seen in the ms after it; the death is exact)
    assert seen == [(1, 0), (439, 1), (939, 2), (1439, 3), (1939, 4), (2438, -1)]
    ext = tcp_of(a.net).snmp()["TcpExt"]
    # 5 RTO expiries (the last one gives up); 5 refused retransmissions: the loss
    # probe (not counted in TCPLossProbes, which counts probes sent) and 4 RTOs
    assert (ext.TCPTimeouts, ext.TCPLossProbes, ext.TCPRetransFail) == (5, 0, 5)
    assert ext.TCPAbortOnTimeout == 1
    assert a.tc("-s qdisc show dev eth0").split("\n")[1] == (
        " Sent 0 bytes 0 pkt (dropped 5, overlimits 0 requeues 0) "
    )


async def test_probes_refused_locally_still_time_out(lab: Lab, autojump_clock: object) -> None:
    a, _b, c, _conn, sk = await connected(lab)
    a.tc(DROP_ALL)
    t0 = trio.current_time()
    await c.sendall(b"y" * 1000)  # refused at once: it stays in the write queue
    assert (sk.packets_out, len(sk.write_queue), sk.icsk_pending) == (0, 1, 3)  # PROBE0
    seen = await dies(c, sk, t0, "icsk_probes_out")
    # tcp_check_probe_timer: the first probe after tcp_probe0_base (the RTO, 219 ms)
    # sets icsk_probes_tstamp; refused, the next ones come every 500 ms, and at
    # 2000 ms after the first the connection is aborted: ETIMEDOUT at 2219 ms
    assert seen == [(0, 0), (220, 1), (720, 2), (1220, 3), (1720, 4), (2219, -1)]  # polled
    ext = tcp_of(a.net).snmp()["TcpExt"]
    # no RTO ran, and a data probe is not a window probe (tcp_write_wakeup sends data)
    assert (ext.TCPTimeouts, ext.TCPWinProbe, ext.TCPAbortOnTimeout) == (0, 0, 1)
    assert a.tc("-s qdisc show dev eth0").split("\n")[1] == (
        " Sent 0 bytes 0 pkt (dropped 5, overlimits 0 requeues 0) "
    )
