"""Polls at local_bh_enable (core/napi.py): a transmit runs the NAPI polls it raised.

    a ── veth ── b

Functional mode's default (``open_lab(polls_at_bh_enable=True)``; each host's
``net.polls_at_bh_enable``): ``dev_queue_xmit`` outside softirq context disables
bottom halves, ``napi_schedule`` puts the peer's instance on the poll list instead of
waking its task, and the transmit's ``local_bh_enable`` runs ``do_softirq`` →
``net_rx_action`` in the caller's task: the datagram is in the receiver's queue when
``sendto`` returns, and a TCP segment's ACK comes back in the same loop to the
sender's owned socket, whose backlog ``release_sock`` runs before the call returns.
A lab opened with ``polls_at_bh_enable=False`` polls each instance in its task after
the call (each host's softirq as if on a CPU of its own); a timed lab ignores the
option while its model measures (its CPU model decides where a softirq runs).
Kernel: net/core/dev.c (__dev_queue_xmit's rcu_read_unlock_bh, net_rx_action),
kernel/softirq.c (__local_bh_enable_ip, do_softirq).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import struct
import subprocess
import sys

import pytest
import trio
import trio.lowlevel
import trio.testing
from helpers import bh_clean, warm_udp_pair

import netstack
from netstack.core.net import Net
from netstack.cpu.timed import TimedModel
from netstack.errors import ConfigError
from netstack.tcp.sock import TcpSock, lock_sock, release_sock
from netstack.testing.builders import pair


class _Steps(trio.abc.Instrument):
    def __init__(self) -> None:
        self.names: list[str] = []

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.names.append(task.name)


@pytest.mark.parametrize("on", [False, True])
async def test_a_datagram_is_received_in_the_senders_call(
    autojump_clock: trio.testing.MockClock, on: bool
) -> None:
    async with netstack.open_lab(polls_at_bh_enable=on) as lab:
        a, b, tx, rx = await warm_udp_pair(lab)
        assert a.net.polls_at_bh_enable is b.net.polls_at_bh_enable is on
        napi = b.dev("eth0").priv.napi
        polls, schedules = napi.polls, napi.schedules
        steps = _Steps()
        trio.lowlevel.add_instrument(steps)
        try:
            tx.sendto_nowait(b"x" * 200, ("10.0.0.2", 9))
            # on: b's poll and udp_rcv ran in this task, inside the call; off: b's
            # NAPI task polls after it (the behaviour before polls at local_bh_enable)
            assert (len(rx.sock.receive_queue) == 1) is on
            assert napi.polls == polls + on and napi.schedules == schedules + 1
            assert await rx.recvfrom(1000) == (b"x" * 200, ("10.0.0.1", tx.getsockname()[1]))
        finally:
            trio.lowlevel.remove_instrument(steps)
        # off: b's NAPI task stepped to poll; on: nothing but the reader
        assert any("napi" in name for name in steps.names) is not on
        assert bh_clean()


async def test_polls_at_bh_enable_is_the_default(autojump_clock: trio.testing.MockClock) -> None:
    assert Net(name="x").polls_at_bh_enable
    async with netstack.open_lab() as lab:
        assert lab.polls_at_bh_enable and lab.add_host("h").net.polls_at_bh_enable
        a, b, tx, rx = await warm_udp_pair(lab)
        assert await a.ping("10.0.0.2", count=1) is not None
        tx.sendto_nowait(b"x", ("10.0.0.2", 9))
        assert len(rx.sock.receive_queue) == 1  # received inside the call
        # a host's slot decides for its own NAPI instances: b's off, b's task polls
        b.net.polls_at_bh_enable = False
        tx.sendto_nowait(b"y", ("10.0.0.2", 9))
        assert len(rx.sock.receive_queue) == 1 and bh_clean()
        await trio.lowlevel.checkpoint()
        assert [(await rx.recvfrom(10))[0] for _ in range(2)] == [b"x", b"y"]


async def test_setting_the_labs_switch_sets_its_hosts(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Lab.polls_at_bh_enable is read at each napi_schedule (through each host's
    # net.polls_at_bh_enable): setting it with hosts in the lab changes them all, the
    # next transmit on; a host added later takes the lab's
    async with netstack.open_lab() as lab:
        a, b, tx, rx = await warm_udp_pair(lab)
        lab.polls_at_bh_enable = False
        assert not lab.polls_at_bh_enable
        assert not a.net.polls_at_bh_enable and not b.net.polls_at_bh_enable
        assert not lab.add_host("c").net.polls_at_bh_enable
        tx.sendto_nowait(b"x", ("10.0.0.2", 9))
        assert len(rx.sock.receive_queue) == 0 and bh_clean()  # b's task polls it
        assert (await rx.recvfrom(10))[0] == b"x"
        lab.polls_at_bh_enable = True
        assert all(h.net.polls_at_bh_enable for h in lab.hosts.values())
        tx.sendto_nowait(b"y", ("10.0.0.2", 9))
        assert len(rx.sock.receive_queue) == 1 and bh_clean()  # inside the call again
        assert (await rx.recvfrom(10))[0] == b"y"


@pytest.mark.parametrize("on", [False, True])
async def test_a_pings_reply_is_in_before_its_sendto_returns(
    autojump_clock: trio.testing.MockClock, on: bool
) -> None:
    # b's icmp_echo transmits the reply inside the net_rx_action of a's request: it is
    # polled in the same loop (a's instance joins the poll list), as over veth in Linux
    async with netstack.open_lab(polls_at_bh_enable=on) as lab:
        a, _b = pair(lab)
        assert (await a.ping("10.0.0.2", count=1)).received == 1  # ARP resolved
        sock = a.socket(2, 2, 1)  # AF_INET, SOCK_DGRAM, IPPROTO_ICMP: what ping makes
        sock.sendto_nowait(struct.pack("!BBHHH", 8, 0, 0, 0, 1) + b"hello!", ("10.0.0.2", 0))
        assert len(sock.sock.receive_queue) == on
        reply, _ = await sock.recvfrom(100)
        assert reply[0] == 0 and reply[8:] == b"hello!"  # an echo reply
        assert bh_clean()


@pytest.mark.parametrize("off_first", [True, False])
async def test_two_labs_with_different_settings_keep_their_own(
    autojump_clock: trio.testing.MockClock, off_first: bool
) -> None:
    # the poll list is the process's (BH), whether an instance joins it is its host's:
    # two labs open at once in one Trio run, each as it was opened, in either order
    async with contextlib.AsyncExitStack() as stack:
        if off_first:
            off = await stack.enter_async_context(netstack.open_lab(polls_at_bh_enable=False))
            on = await stack.enter_async_context(netstack.open_lab())
        else:
            on = await stack.enter_async_context(netstack.open_lab())
            off = await stack.enter_async_context(netstack.open_lab(polls_at_bh_enable=False))
        assert not off.polls_at_bh_enable and on.polls_at_bh_enable
        _, _, off_tx, off_rx = await warm_udp_pair(off)
        _, _, on_tx, on_rx = await warm_udp_pair(on)
        for _ in range(3):
            off_tx.sendto_nowait(b"o", ("10.0.0.2", 9))
            on_tx.sendto_nowait(b"n", ("10.0.0.2", 9))
            assert len(off_rx.sock.receive_queue) == 0 and len(on_rx.sock.receive_queue) == 1
            assert bh_clean()
            assert await on_rx.recvfrom(10) == (b"n", ("10.0.0.1", on_tx.getsockname()[1]))
            assert await off_rx.recvfrom(10) == (b"o", ("10.0.0.1", off_tx.getsockname()[1]))


@pytest.mark.parametrize("on", [False, True])
async def test_timed_mode_ignores_polls_at_bh_enable(
    autojump_clock: trio.testing.MockClock, on: bool
) -> None:
    # while a timed lab's model measures (charges costs), its CPU model decides where
    # a softirq runs: b's instance is woken to its task (on b's CPU) whatever the
    # lab's option says; outside a measurement the lab runs as a functional one
    model = TimedModel()
    async with netstack.open_lab(timed=model, polls_at_bh_enable=on) as lab:
        assert lab.polls_at_bh_enable is on
        _a, b, tx, rx = await warm_udp_pair(lab)
        napi = b.dev("eth0").priv.napi
        tx.sendto_nowait(b"f", ("10.0.0.2", 9))
        assert len(rx.sock.receive_queue) == on
        await rx.recvfrom(10)
        with model.measuring():
            polls = napi.polls
            tx.sendto_nowait(b"x" * 200, ("10.0.0.2", 9))
            assert len(rx.sock.receive_queue) == 0 and napi.polls == polls and napi.scheduled
            assert bh_clean()
            assert await rx.recvfrom(1000) == (b"x" * 200, ("10.0.0.1", tx.getsockname()[1]))
            assert napi.polls == polls + 1


async def test_the_ack_comes_back_to_the_owned_sender_through_its_backlog(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with netstack.open_lab() as lab:  # the default: polls at local_bh_enable
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
def csum(d):
    s = sum(struct.unpack(f"!{len(d) // 2}H", d))
    s = (s >> 16) + (s & 0xFFFF)
    return ~(s + (s >> 16)) & 0xFFFF
raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
raw.setblocking(False)
echoes = 0
for i in range(100):
    body = struct.pack("!BBHHH", 8, 0, 0, 77, i) + b"hello!"
    raw.sendto(body[:2] + struct.pack("!H", csum(body)) + body[4:], ("10.9.0.2", 0))
    try:
        while raw.recv(200)[20] != 0:  # the request itself, then the reply
            pass
        echoes += 1
    except BlockingIOError:
        time.sleep(0.01)
print(hits, unacked, echoes)
"""


def test_the_kernel_receives_inside_the_senders_call_too() -> None:
    """This machine's kernel over a veth between two namespaces (GRO off, the
    ``netif_rx`` path): every datagram is in the receiver's queue when ``sendto``
    returns, a TCP ``send`` of four segments returns with nothing unacked
    (``tcpi_unacked`` 0: the ACKs came back in its ``local_bh_enable`` and its
    ``release_sock`` ran them), and every echo request's reply is in the raw
    socket when its ``sendto`` returns (b's ``icmp_echo`` transmits it in the
    same ``net_rx_action``): what the tests above check of netstack by default.
    Skips without root or ``ip``."""
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
        hits, unacked, echoes = map(int, out.stdout.split())
        assert (hits, unacked, echoes) == (100, 0, 100)
    finally:
        for ns in (a, b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)
