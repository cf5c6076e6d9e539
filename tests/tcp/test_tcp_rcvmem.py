"""Receive memory as Linux 6.18 accounts it: coalescing, collapsing, pruning.

A listener with an 8 KB SO_RCVBUF (16 KB) accepts a connection whose reader
never reads; the peer (packetdrill on a tun device) sends many small segments,
in order or ahead of a hole. Every figure below — ``sk_rmem_alloc`` and
``sk_forward_alloc`` (``ss -m``'s ``r`` and ``f``), ``rcv_ssthresh`` and the
``TcpExt`` counters — was measured on Linux 6.18 with the same script through
``tests/packetdrill/linux_kernel.py`` in a network namespace (``ss -tmi`` and
``nstat`` once the segments were in). Before netstack modelled coalescing,
header prediction's admission and tcp_prune_queue() it refused the 20th
in-order segment (TcpExtRcvPruned, TcpExtTCPRcvQDrop) and never counted a
coalesce or a collapse.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from netstack.host import open_lab
from netstack.tcp.proto import tcp_of
from netstack.tcp.sock import TcpSock
from netstack.userspace.packetdrill import run_script

HEAD = """\
`sysctl -q net.ipv4.tcp_rmem="4096 131072 6291456"`
0     socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
+0    setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0
+0    setsockopt(3, SOL_SOCKET, SO_RCVBUF, [8192], 4) = 0
+0    bind(3, ..., ...) = 0
+0    listen(3, 1) = 0
+0    < S 0:0(0) win 65535 <mss 1000,sackOK,nop,nop,nop,wscale 7>
+0    > S. 0:0(0) ack 1 win 7300 <mss 1460,nop,nop,sackOK,nop,wscale 0>
+.1   < . 1:1(0) ack 1 win 1024
+0    accept(3, ..., ...) = 4
"""

COUNTERS = (
    "PruneCalled",
    "RcvPruned",
    "OfoPruned",
    "TCPRcvCollapsed",
    "TCPRcvCoalesce",
    "TCPRcvQDrop",
    "TCPOFOQueue",
    "TCPOFODrop",
)


def _script(segments: list[tuple[int, int]]) -> str:
    lines = [f"+.001 < . {s}:{s + n}({n}) ack 1 win 1024" for s, n in segments]
    return HEAD + "\n".join(lines) + "\n"


def _in_order(count: int, size: int) -> list[tuple[int, int]]:
    return [(1 + i * size, size) for i in range(count)]


def _run(text: str) -> tuple[TcpSock, dict[str, int]]:
    async def main() -> tuple[TcpSock, dict[str, int]]:
        async with open_lab(seed=0) as lab:
            host = lab.add_host("pd")
            result = await run_script(host.net, "rcvmem.pkt", [], text=text)
            assert result.status == "pass", result
            tcp = tcp_of(host.net)
            socks = [s for s in tcp.hashinfo.ehash.values() if isinstance(s, TcpSock)]
            assert len(socks) == 1
            ext: Any = tcp.snmp()["TcpExt"]
            return socks[0], {k: getattr(ext, k) for k in COUNTERS if getattr(ext, k)}

    return trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


@pytest.mark.parametrize(
    ("segments", "rmem", "fwd", "ssthresh", "counters"),
    [
        # 1-byte segments: all copied into the first skb's tailroom
        (_in_order(40, 1), 832, 3264, 6732, {"TCPRcvCoalesce": 39}),
        # 40-byte segments: two or three per 832-byte skb
        (_in_order(40, 40), 11648, 640, 6732, {"TCPRcvCoalesce": 26}),
        # 100-byte segments: 24 fast-path skbs overshoot sk_rcvbuf, the 25th
        # collapses them into one skb, whose tailroom takes 13 more
        (_in_order(20, 100), 16640, 3840, 6732, {}),
        (
            _in_order(25, 100),
            4352,
            3840,
            2920,
            {"PruneCalled": 1, "TCPRcvCollapsed": 24, "TCPRcvCoalesce": 1},
        ),
        (
            _in_order(40, 100),
            6848,
            1344,
            2920,
            {"PruneCalled": 1, "TCPRcvCollapsed": 24, "TCPRcvCoalesce": 13},
        ),
        # out of order behind a 100-byte hole: the slow path every time; the
        # out-of-order queue's range is collapsed, and rcv_ssthresh grows again
        # with what waits out of order (tcp_grow_window)
        (
            [(101 + i * 100, 100) for i in range(40)],
            6848,
            1344,
            6016,
            {"PruneCalled": 1, "TCPRcvCollapsed": 20, "TCPRcvCoalesce": 17, "TCPOFOQueue": 40},
        ),
        (
            [(101 + i * 100, 100) for i in range(60)],
            11648,
            640,
            3920,
            {"PruneCalled": 2, "TCPRcvCollapsed": 35, "TCPRcvCoalesce": 19, "TCPOFOQueue": 60},
        ),
        # the hole filled: the collapsed skbs move to the receive queue
        (
            [(101 + i * 100, 100) for i in range(40)] + [(1, 100)],
            7680,
            512,
            6016,
            {"PruneCalled": 1, "TCPRcvCollapsed": 20, "TCPRcvCoalesce": 17, "TCPOFOQueue": 40},
        ),
        # 30 one-segment ranges, 100-byte holes between them: too tiny to
        # collapse, so the out-of-order queue is pruned from its end, and the
        # segments that would go there are refused (RcvPruned, TCPOFODrop)
        (
            [(101 + i * 200, 100) for i in range(30)] + [(1, 100)],
            14976,
            1408,
            2920,
            {
                "PruneCalled": 11,
                "RcvPruned": 10,
                "OfoPruned": 1,
                "TCPOFOQueue": 20,
                "TCPOFODrop": 10,
            },
        ),
        # the same, then a 2,900-byte segment fills the hole and more: pruning the
        # out-of-order queue stops once the queued memory is within sk_rcvbuf
        # (tcp_can_ingest), three skbs from the end; the segment is taken, covers
        # 14 out-of-order skbs, and the next one is coalesced into it
        (
            [(101 + i * 200, 100) for i in range(30)] + [(1, 2900)],
            6016,
            2176,
            7300,
            {
                "PruneCalled": 11,
                "RcvPruned": 10,
                "OfoPruned": 1,
                "TCPRcvCoalesce": 1,
                "TCPOFOQueue": 20,
                "TCPOFODrop": 10,
            },
        ),
        # out of order, a segment continuing one skb and covering the next: copied
        # into the first (tcp_ooo_try_coalesce), the covered one stays queued (no
        # TCPOFOMerge, no D-SACK: coalesce_done skips merge_right)
        (
            [(201, 10), (221, 10), (211, 20)],
            1664,
            2432,
            6732,
            {"TCPRcvCoalesce": 1, "TCPOFOQueue": 3},
        ),
    ],
    ids=[
        "1B-x40",
        "40B-x40",
        "100B-x20",
        "100B-x25-collapse",
        "100B-x40-collapse",
        "ofo-x40-collapse",
        "ofo-x60-collapse-twice",
        "ofo-x40-filled",
        "ofo-gaps-pruned",
        "ofo-pruned-long-in-order",
        "ofo-coalesce-before-merge",
    ],
)
def test_receive_memory_as_linux_6_18(
    segments: list[tuple[int, int]],
    rmem: int,
    fwd: int,
    ssthresh: int,
    counters: dict[str, int],
) -> None:
    sk, got = _run(_script(segments))
    assert (sk.sk_rmem_alloc, sk.sk_forward_alloc, sk.rcv_ssthresh) == (rmem, fwd, ssthresh)
    assert got == counters


def test_collapsed_queue_reads_out_whole() -> None:
    """The reader gets every byte of a collapsed queue, and its memory back."""
    text = HEAD + "".join(
        f"+.001 < . {1 + i * 100}:{101 + i * 100}(100) ack 1 win 1024\n" for i in range(40)
    )
    text += "+.1   read(4, ..., 4000) = 4000\n"
    sk, got = _run(text)
    assert got["TCPRcvCollapsed"] == 24
    assert (sk.sk_rmem_alloc, sk.copied_seq - sk.rcv_nxt) == (0, 0)


def test_fast_open_syn_data_is_charged_to_reserved_pages() -> None:
    """A Fast Open child's SYN data is queued as tcp_fastopen_add_skb() does it:
    sk_forced_mem_schedule() reserves a page before skb_set_owner_r() charges
    the skb, so sk_forward_alloc stays non-negative (it went to -832 before, and
    the next segment missed the fast path's truesize test)."""
    text = """\
`sysctl -q net.ipv4.tcp_rmem="4096 131072 6291456"; sysctl -q net.ipv4.tcp_fastopen=0x602`
0     socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
+0    setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0
+0    bind(3, ..., ...) = 0
+0    listen(3, 8) = 0
+0    < S 0:30(30) win 65535 <mss 1460,sackOK,nop,nop,nop,wscale 7>
+0    > S. 0:0(0) ack 31 win 64240 <mss 1460,nop,nop,sackOK,nop,wscale 7>
+0    accept(3, ..., ...) = 4
+.01  < . 31:31(0) ack 1 win 1024
"""
    sk, _ = _run(text)
    assert (sk.sk_rmem_alloc, sk.sk_forward_alloc) == (832, 4096 - 832)
