"""Polls at local_bh_enable (core/napi.py): a transmit runs the NAPI polls it raised.

    a ── veth ── b

With :func:`set_polls_at_bh_enable` on (functional mode), ``dev_queue_xmit`` outside
softirq context disables bottom halves, ``napi_schedule`` puts the peer's instance on
the poll list instead of waking its task, and the transmit's ``local_bh_enable``
runs ``do_softirq`` → ``net_rx_action`` in the caller's task: the datagram is in
the receiver's queue when ``sendto`` returns, and a TCP segment's ACK comes back
in the same loop to the sender's owned socket, whose backlog ``release_sock`` runs
before the call returns. Off (the default), the NAPI tasks poll after the call.
Kernel: net/core/dev.c (__dev_queue_xmit's rcu_read_unlock_bh, net_rx_action),
kernel/softirq.c (__local_bh_enable_ip, do_softirq).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator

import pytest
import trio
import trio.testing

import netstack
from netstack.core import napi as _napi
from netstack.core.napi import set_polls_at_bh_enable
from netstack.errors import ConfigError
from netstack.tcp.sock import TcpSock, lock_sock, release_sock
from netstack.testing.builders import pair


@pytest.fixture
def bh_polls() -> Iterator[None]:
    was = set_polls_at_bh_enable(True)
    try:
        yield
    finally:
        set_polls_at_bh_enable(was)


class _Steps(trio.abc.Instrument):
    def __init__(self) -> None:
        self.names: list[str] = []

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.names.append(task.name)


@pytest.mark.parametrize("on", [False, True])
async def test_a_datagram_is_received_in_the_senders_call(
    autojump_clock: trio.testing.MockClock, on: bool
) -> None:
    was = set_polls_at_bh_enable(on)
    try:
        async with netstack.open_lab() as lab:
            a, b = pair(lab)
            rx = b.socket(2, 2)
            await rx.bind(("10.0.0.2", 9))
            tx = a.socket(2, 2)
            await tx.sendto(b"warm", ("10.0.0.2", 9))  # ARP resolved, tasks started
            assert await rx.recvfrom(100) == (b"warm", ("10.0.0.1", tx.getsockname()[1]))
            napi = b.dev("eth0").priv.napi
            polls, schedules = napi.polls, napi.schedules
            steps = _Steps()
            trio.lowlevel.add_instrument(steps)
            try:
                tx.sendto_nowait(b"x" * 200, ("10.0.0.2", 9))
                # on: b's poll and udp_rcv ran in this task, inside the call
                assert (len(rx.sock.receive_queue) == 1) is on
                assert napi.polls == polls + on and napi.schedules == schedules + 1
                assert await rx.recvfrom(1000) == (b"x" * 200, ("10.0.0.1", tx.getsockname()[1]))
            finally:
                trio.lowlevel.remove_instrument(steps)
            # off: b's NAPI task stepped to poll; on: nothing but the reader
            assert any("napi" in name for name in steps.names) is not on
            assert not _napi.BH.poll_list and _napi.BH.state == _napi.BH_ENABLED
    finally:
        set_polls_at_bh_enable(was)


async def test_the_ack_comes_back_to_the_owned_sender_through_its_backlog(
    autojump_clock: trio.testing.MockClock, bh_polls: None
) -> None:
    async with netstack.open_lab() as lab:
        a, b = pair(lab)
        for host, cmd in ((a, "-K eth0 tso off gso off"), (b, "-K eth0 gro off")):
            with contextlib.suppress(ConfigError):  # already off
                host.ethtool(cmd)
        srv = b.socket(2, 1)
        await srv.bind(("", 80))
        srv.listen(1)
        c = a.socket(2, 1)
        await c.connect(("10.0.0.2", 80))
        conn, _ = await srv.accept()
        sk = c.sock
        assert isinstance(sk, TcpSock)
        rcv = conn.sock
        assert isinstance(rcv, TcpSock)
        una = sk.snd_una
        assert lock_sock(sk)  # what TcpSock.sendmsg does around tcp_sendmsg
        sent = sk.sk_prot.sendmsg(sk, b"y" * 4 * 1448, 0, None)
        assert sent == 4 * 1448
        # b received every segment inside the call and ACKed them; the ACKs found a's
        # socket owned and wait in its backlog (tcp_add_backlog)
        assert (rcv.rcv_nxt - rcv.copied_seq) % (1 << 32) == 4 * 1448
        assert sk.sk_backlog and sk.snd_una == una
        release_sock(sk)  # __release_sock: the ACKs run now
        assert sk.snd_una == (una + 4 * 1448) % (1 << 32)
        assert not sk.sk_lock_owned and not sk.sk_backlog and sk.sk_backlog_len == 0
        # the same through the socket call: its release_sock runs them before it returns
        una = sk.snd_una
        assert sk.sendmsg(b"z" * 1448, None, 0) == 1448
        assert sk.snd_una == (una + 1448) % (1 << 32) and not sk.sk_lock_owned
        got = b""
        while len(got) < 5 * 1448:
            got += await conn.recv(1 << 16)
        assert got == b"y" * 4 * 1448 + b"z" * 1448


_KERNEL_SIDE = r"""
import ctypes, os, socket, struct, sys, time
libc = ctypes.CDLL("libc.so.6", use_errno=True)
def enter(ns):
    fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
    assert libc.setns(fd, 0x40000000) == 0
    os.close(fd)
a, b = sys.argv[1], sys.argv[2]
enter(b)
rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
rx.bind(("10.9.0.2", 9))
rx.setblocking(False)
ls = socket.socket()
ls.bind(("10.9.0.2", 80))
ls.listen(1)
enter(a)
tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
tx.sendto(b"warm", ("10.9.0.2", 9))
time.sleep(0.2)
rx.recv(100)
hits = 0
for _ in range(100):
    tx.sendto(b"x" * 200, ("10.9.0.2", 9))
    try:
        rx.recv(1000)
        hits += 1
    except BlockingIOError:
        time.sleep(0.01)
        rx.recv(1000)
c = socket.socket()
c.connect(("10.9.0.2", 80))
c.send(b"y" * 4 * 1448)
unacked = struct.unpack_from("I", c.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104), 24)[0]
print(hits, unacked)
"""


def test_the_kernel_receives_inside_the_senders_call_too() -> None:
    """This machine's kernel over a veth between two namespaces (GRO off, the
    ``netif_rx`` path): every datagram is in the receiver's queue when ``sendto``
    returns, and a TCP ``send`` of four segments returns with nothing unacked
    (``tcpi_unacked`` 0: the ACKs came back in its ``local_bh_enable`` and its
    ``release_sock`` ran them), what the two tests above check of netstack with
    the option on. Skips without root or ``ip``."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and ip")
    a, b = f"bha{os.getpid()}", f"bhb{os.getpid()}"
    try:
        for ns in (a, b):
            r = subprocess.run(["ip", "netns", "add", ns], capture_output=True, timeout=30)
            if r.returncode != 0:
                pytest.skip(f"ip netns add failed: {r.stderr.decode()[-200:]}")
        for command in (
            f"link add va netns {a} type veth peer name vb netns {b}",
            f"-n {a} addr add 10.9.0.1/24 dev va",
            f"-n {a} link set va up",
            f"-n {b} addr add 10.9.0.2/24 dev vb",
            f"-n {b} link set vb up",
        ):
            subprocess.run(["ip", *command.split()], check=True, timeout=30)
        out = subprocess.run(
            [sys.executable, "-c", _KERNEL_SIDE, a, b],
            capture_output=True,
            timeout=60,
            check=True,
        )
        hits, unacked = map(int, out.stdout.split())
        assert (hits, unacked) == (100, 0)
    finally:
        for ns in (a, b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)
