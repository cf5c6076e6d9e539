"""Send memory after a partial ACK of a multi-segment skb (``tcp_trim_head``).

Linux 6.x, net/ipv4/tcp_input.c: ``tcp_clean_rtx_queue`` → ``tcp_tso_acked``
trims the acknowledged whole segments off the head of a TSO/GSO skb with
``tcp_trim_head`` (net/ipv4/tcp_output.c), which takes ``delta_truesize`` from
``__pskb_trim_head``: the bytes cut from the page fragments, which is all of
them (6.x's ``tcp_sendmsg`` puts a write-queue skb's payload in fragments, its
linear head stays empty). Then ``skb->truesize -= delta_truesize;
sk_wmem_queued_add(sk, -delta_truesize); sk_mem_uncharge(sk, delta_truesize)``:
the socket's send memory is at once what is still unacknowledged, and
``sk_mem_reclaim`` gives whole pages beyond the forward allocation back.
Before, the trimmed bytes stayed charged until the whole skb was acknowledged.

The lab: the sender's NIC has no TSO (GSO cuts the skb in software), the
receiver's no GRO, so a 4-segment skb arrives as four segments and the first
ACK acknowledges part of it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import trio
from helpers import connected_tcp

from netstack.core.skbuff import CHECKSUM_NONE, CHECKSUM_PARTIAL
from netstack.host import Lab
from netstack.tcp import TcpSock
from netstack.tcp.helpers import PAGE_SIZE, sk_wmem_charge
from netstack.tcp.output import TCP_SKB_HEAD, tcp_stream_alloc_skb, tcp_trim_head
from netstack.tcp.sock import TcpSkbCb
from netstack.testing import builders

PORT = 6019


async def test_partial_ack_uncharges_trimmed_bytes(lab: Lab, autojump_clock: object) -> None:
    a, b = builders.pair(lab, kind="nic", rate=10e6, delay=0.005)
    a.ethtool("-K eth0 tso off")
    b.ethtool("-K eth0 gro off")
    c, conn = await connected_tcp(a, b, PORT)
    sk = c.sock
    assert isinstance(sk, TcpSock)
    mss = sk.mss_cache
    payload = bytes(4 * mss)
    await c.send(payload)
    (skb,) = sk.rtx_queue  # one skb of four segments, 896 bytes of head and sk_buff
    assert (skb.cb.pcount, skb.truesize) == (4, TCP_SKB_HEAD + 4 * mss)
    check_send_memory(sk, 4 * mss)

    una = sk.snd_una
    while sk.snd_una == una:  # noqa: ASYNC110 (no event to wait on)
        await trio.sleep(0.0001)
    # the first ACK acknowledged the first segment (quick ACKs at the start)
    assert sk.rtx_queue == [skb] and skb.cb.pcount == 3
    assert skb.truesize == TCP_SKB_HEAD + 3 * mss  # before: + 4 * mss
    check_send_memory(sk, 3 * mss)  # before: 6688 and 1504 with mss 1448

    got = bytearray()
    while len(got) < len(payload):
        got += await conn.recv(1 << 16)
    while sk.packets_out:  # noqa: ASYNC110
        await trio.sleep(0.001)
    assert (sk.sk_wmem_queued, sk.sk_forward_alloc) == (0, 0)


async def test_trim_head_leaves_ip_summed(lab: Lab, autojump_clock: object) -> None:
    """6.x's ``tcp_trim_head`` does not set ``ip_summed``: every write-queue skb is
    CHECKSUM_PARTIAL from ``tcp_stream_alloc_skb`` on (Linux 5.16, "tcp: factorize
    ip_summed setting", took the store out of tcp_trim_head, tcp_fragment,
    tso_fragment, tcp_mtu_probe and tcp_send_syn_data). Before, netstack's set it."""
    a, b = builders.pair(lab)
    c, _ = await connected_tcp(a, b, PORT)
    sk = c.sock
    assert isinstance(sk, TcpSock)
    skb = tcp_stream_alloc_skb(sk, 1000)
    assert skb.ip_summed == CHECKSUM_PARTIAL
    skb.tail = skb.data + 1000
    skb.cb = TcpSkbCb(1, 1001, 0)
    skb.ip_summed = CHECKSUM_NONE  # what the trim must not touch
    sk_wmem_charge(sk, 1000)
    assert tcp_trim_head(sk, skb, 400) == 0
    assert (skb.cb.seq, skb.tail - skb.data) == (401, 600)
    assert skb.ip_summed == CHECKSUM_NONE


def check_send_memory(sk: TcpSock, unacked: int) -> None:
    """sk_wmem_queued is the one skb's truesize; sk_forward_alloc the rest of the
    whole pages reserved for it (the sender holds no receive memory)."""
    assert sk.sk_rmem_alloc == 0
    held = TCP_SKB_HEAD + unacked
    assert sk.sk_wmem_queued == held
    assert sk.sk_forward_alloc == -held % PAGE_SIZE


_LINUX_PARTIAL_ACK = r"""
import ctypes, fcntl, json, os, socket, struct, sys, time
libc = ctypes.CDLL(None, use_errno=True)
def setns(name):
    fd = os.open("/run/netns/" + name, os.O_RDONLY)
    try:
        if libc.setns(fd, 0x40000000):
            raise OSError(ctypes.get_errno(), "setns")
    finally:
        os.close(fd)
def wmem(s):  # SO_MEMINFO: [..., SK_MEMINFO_FWD_ALLOC, SK_MEMINFO_WMEM_QUEUED, ...]
    v = struct.unpack("9I", s.getsockopt(socket.SOL_SOCKET, 55, 36))
    return v[5], v[4]
na, nb = sys.argv[1], sys.argv[2]
setns(na)  # TSO off on va (ETHTOOL_STSO): GSO cuts the skb in software
ev = ctypes.create_string_buffer(struct.pack("II", 0x1F, 0))
ctl = socket.socket()
fcntl.ioctl(ctl.fileno(), 0x8946, struct.pack("16sP", b"va", ctypes.addressof(ev)) + bytes(16))
setns(nb)
srv = socket.socket(); srv.bind(("10.0.1.2", 5001)); srv.listen(2)
setns(na)
out = {}
for name, size in (("head", 1), ("partial", 0)):
    cli = socket.socket()
    cli.connect(("10.0.1.2", 5001))
    conn, _ = srv.accept()
    mss = cli.getsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG)
    cli.send(bytes(size or 4 * mss))  # 4 segments: the last (PSH) is dropped
    time.sleep(0.05)  # the ACKs are in; no RTO yet (200 ms), no TLP
    out[name] = wmem(cli)
    out["mss"] = mss
print(json.dumps(out))
"""


def test_linux_partial_ack_uncharges_trimmed_bytes() -> None:
    """The real kernel (root only): a 4-segment skb whose last segment a router
    drops (its PSH flag; htb + u32 into a pfifo of limit 0) is acknowledged up
    to that segment. Linux 6.18 then queues the skb's head and one segment:
    ``sk_wmem_queued`` 832 + 1448 = 2280 and ``sk_forward_alloc`` 1816, the
    rest of the page. The empty skb's truesize (832 on 6.18; netstack's
    ``TCP_SKB_HEAD`` is 896) comes from a 1-byte send dropped the same way."""
    if not (os.geteuid() == 0 and shutil.which("ip") and shutil.which("tc")):
        pytest.skip("needs root, ip(8) and tc(8) for network namespaces")
    na, nr, nb = "nstrim-a", "nstrim-r", "nstrim-b"
    for ns in (na, nr, nb):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    if subprocess.run(["ip", "netns", "add", na], capture_output=True).returncode:
        pytest.skip("cannot create a network namespace")
    try:
        for ns in (nr, nb):
            subprocess.run(["ip", "netns", "add", ns], check=True)
        cmds = [
            [
                "ip",
                "link",
                "add",
                "va",
                "netns",
                na,
                "type",
                "veth",
                "peer",
                "name",
                "vr1",
                "netns",
                nr,
            ],
            [
                "ip",
                "link",
                "add",
                "vb",
                "netns",
                nb,
                "type",
                "veth",
                "peer",
                "name",
                "vr2",
                "netns",
                nr,
            ],
            ["ip", "-n", na, "addr", "add", "10.0.0.1/24", "dev", "va"],
            ["ip", "-n", nr, "addr", "add", "10.0.0.254/24", "dev", "vr1"],
            ["ip", "-n", nr, "addr", "add", "10.0.1.254/24", "dev", "vr2"],
            ["ip", "-n", nb, "addr", "add", "10.0.1.2/24", "dev", "vb"],
            ["ip", "-n", na, "link", "set", "va", "up"],
            ["ip", "-n", nr, "link", "set", "vr1", "up"],
            ["ip", "-n", nr, "link", "set", "vr2", "up"],
            ["ip", "-n", nb, "link", "set", "vb", "up"],
            ["ip", "-n", na, "route", "add", "default", "via", "10.0.0.254"],
            ["ip", "-n", nb, "route", "add", "default", "via", "10.0.1.254"],
            ["ip", "netns", "exec", nr, "sysctl", "-qw", "net.ipv4.ip_forward=1"],
            ["ip", "netns", "exec", na, "sysctl", "-qw", "net.ipv4.tcp_early_retrans=0"],
        ]
        for cmd in cmds:
            subprocess.run(cmd, check=True, capture_output=True)
        tc_cmds = [
            "qdisc add dev vr2 root handle 1: htb default 10",
            "class add dev vr2 parent 1: classid 1:10 htb rate 10gbit",
            "class add dev vr2 parent 1: classid 1:20 htb rate 10gbit",
            "qdisc add dev vr2 parent 1:20 pfifo limit 0",
            "filter add dev vr2 parent 1: protocol ip u32 match ip protocol 6 0xff"
            " match u8 0x08 0x08 at 33 classid 1:20",  # TCP flags & PSH
        ]
        for tc_cmd in tc_cmds:
            if subprocess.run(["tc", "-n", nr, *tc_cmd.split()], capture_output=True).returncode:
                pytest.skip(f"tc cannot: {tc_cmd}")
        out = subprocess.run(
            [sys.executable, "-c", _LINUX_PARTIAL_ACK, na, nb],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
    finally:
        for ns in (na, nr, nb):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    linux = json.loads(out)
    mss = linux["mss"]
    head = linux["head"][0] - 1  # the empty skb's truesize
    queued, fwd = linux["partial"]
    assert queued == head + mss, linux  # before the fix netstack kept head + 4 * mss
    assert fwd == -queued % PAGE_SIZE, linux
