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

As root, :func:`test_linux_times_out_the_same` runs both cases on the real
kernel (two network namespaces, a veth): Linux 6.18 dies at 2 × RTO + 2 s and
RTO + 2 s (plus up to ~60 ms of timer slack), with the same TCPTimeouts,
TCPRetransFail, TCPAbortOnTimeout and qdisc drops as netstack.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import time as time_module

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


# -- the same two cases on the real kernel (root, in network namespaces) -------------------

_SERVER = """
import socket
s = socket.socket()
s.bind(("10.0.0.2", 6016))
s.listen(5)
kept = []
while True:
    kept.append(s.accept())
"""

_CLIENT = """
import socket, struct, subprocess, sys, time
mode, peer_ns = sys.argv[1], sys.argv[2]
c = socket.create_connection(("10.0.0.2", 6016))
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
c.setsockopt(socket.IPPROTO_TCP, 18, 2000)  # TCP_USER_TIMEOUT
c.sendall(b"x" * 100)
time.sleep(1)
subprocess.run(["nstat", "-n"], check=True)
drop_all = "qdisc replace dev eth0 root pfifo limit 0".split()
if mode == "rto":
    subprocess.run(["ip", "netns", "exec", peer_ns, "tc", *drop_all], check=True)
    c.sendall(b"y" * 1000)
    t0 = time.monotonic()
    time.sleep(0.001)
    subprocess.run(["tc", *drop_all], check=True)
else:
    subprocess.run(["tc", *drop_all], check=True)
    t0 = time.monotonic()
    c.sendall(b"y" * 1000)
try:
    c.recv(10)
    err = 0
except OSError as e:
    err = e.errno
died = time.monotonic() - t0
rto = struct.unpack_from("I", c.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104), 8)[0]
names = ["TcpExtTCPTimeouts", "TcpExtTCPRetransFail", "TcpExtTCPAbortOnTimeout"]
out = subprocess.run(["nstat", "-az", *names], capture_output=True, text=True).stdout
counts = {l.split()[0]: int(l.split()[1]) for l in out.splitlines() if l.startswith("Tcp")}
qdisc = subprocess.run("tc -s qdisc show dev eth0".split(), capture_output=True, text=True)
print(err, died, rto, *(counts[n] for n in names), qdisc.stdout.split(chr(10))[1])
"""


def _linux(mode: str) -> str:
    ns, peer = f"nsuto-{mode}", f"nsuto-{mode}p"
    for n in (ns, peer):
        subprocess.run(["ip", "netns", "del", n], capture_output=True)
    if subprocess.run(["ip", "netns", "add", ns], capture_output=True).returncode:
        pytest.skip("cannot create a network namespace")
    server = None
    try:
        subprocess.run(["ip", "netns", "add", peer], check=True)
        for n in (ns, peer):  # IPv4 only, as the netstack hosts: no IPv6 packet in the qdisc
            sysctl = "net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1"
            subprocess.run(["ip", "netns", "exec", n, "sysctl", "-qw", *sysctl.split()])
        for line in (
            f"link add eth0 netns {ns} type veth peer name eth0 netns {peer}",
            f"-n {ns} addr add 10.0.0.1/24 dev eth0",
            f"-n {peer} addr add 10.0.0.2/24 dev eth0",
            f"-n {ns} link set eth0 up",
            f"-n {peer} link set eth0 up",
        ):
            subprocess.run(["ip", *line.split()], check=True, capture_output=True)
        server = subprocess.Popen(["ip", "netns", "exec", peer, sys.executable, "-c", _SERVER])
        for _ in range(100):  # until it listens
            argv = ["ip", "netns", "exec", peer, "ss", "-Hltn", "sport = :6016"]
            if subprocess.run(argv, capture_output=True, text=True).stdout.strip():
                break
            time_module.sleep(0.05)
        argv = ["ip", "netns", "exec", ns, sys.executable, "-c", _CLIENT, mode, peer]
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True).stdout
    finally:
        if server is not None:
            server.kill()
            server.wait()
        for n in (ns, peer):
            subprocess.run(["ip", "netns", "del", n], capture_output=True)


def test_linux_times_out_the_same() -> None:
    """Linux 6.18, veth (RTO 204 ms): ETIMEDOUT 2 × RTO + 2 s after the last segment
    left, RTO + 2 s after a refused write; the same counters and drops as netstack's."""
    if not (hasattr(os, "geteuid") and os.geteuid() == 0):
        pytest.skip("needs root for network namespaces")
    for tool in ("ip", "tc", "nstat", "ss"):
        if not shutil.which(tool):
            pytest.skip(f"needs {tool}(8)")
    dropped = " Sent 0 bytes 0 pkt (dropped 5, overlimits 0 requeues 0) "
    for mode, rtos, counters in (("rto", 2, "5 5 1"), ("probe", 1, "0 0 1")):
        err, died, rto_us, rest = _linux(mode).split(" ", 3)
        assert int(err) == errno.ETIMEDOUT
        want = rtos * int(rto_us) / 1e6 + 2.0
        assert want <= float(died) < want + 0.1, (mode, died, rto_us)  # timer slack
        assert rest.rstrip("\n") == f"{counters} {dropped}"
