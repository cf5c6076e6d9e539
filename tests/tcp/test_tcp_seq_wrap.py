"""A transfer across the 2^32 sequence wrap, both ways.

The ACK path (tcp_ack, tcp_clean_rtx_queue, tcp_may_update_window, header
prediction) compares sequence numbers with before()/after() written out
inline; both hosts' initial sequence numbers are put just below 2^32 so that
every comparison of the transfer straddles the wrap.
"""

from __future__ import annotations

import functools

import pytest
import trio
from helpers import recv_all

from netstack.core.sock import AF_INET, SOCK_STREAM
from netstack.host import Lab
from netstack.tcp import tcp_of
from netstack.tcp.proto import Tcp
from netstack.testing import builders

pair = functools.partial(builders.pair, ipv4_only=True)
ISN = (1 << 32) - 300_000  # 300 KB before the wrap


@pytest.mark.parametrize(
    "isn",
    [
        None,
        pytest.param(
            ISN,
            marks=pytest.mark.pure_python_layout(
                "patches Tcp.secure_tcp_seq, a native method in the compiled build"
            ),
        ),
    ],
    ids=["hashed-isn", "isn-below-wrap"],
)
async def test_bulk_transfer_across_the_sequence_wrap(
    lab: Lab, autojump_clock: object, monkeypatch: pytest.MonkeyPatch, isn: int | None
) -> None:
    if isn is not None:
        monkeypatch.setattr(Tcp, "secure_tcp_seq", lambda self, *a: isn)
    a, b = pair(lab)
    srv = b.socket(AF_INET, SOCK_STREAM)
    await srv.bind(("", 5003))
    srv.listen(1)
    payload = bytes(range(251)) * 4096  # ~1 MB: wraps after 300 KB
    back = bytes(range(7, 256)) * 2048
    got: dict[str, bytes] = {}

    async def server() -> None:
        conn, _ = await srv.accept()
        got["b"] = await recv_all(conn)
        await conn.sendall(back)
        conn.close()

    async with trio.open_nursery() as n:
        n.start_soon(server)
        c = a.socket(AF_INET, SOCK_STREAM)
        await c.connect(("10.0.0.2", 5003))
        if isn is not None:
            assert c.sock.snd_una == (isn + 1) & 0xFFFFFFFF  # type: ignore[attr-defined]
        await c.sendall(payload)
        c.shutdown(1)
        got["a"] = await recv_all(c)
        c.close()
    assert got == {"b": payload, "a": back}
    # the same exchange, segment for segment, wherever the sequence space starts
    # (45 and 53: each sendall's segments are received at its transmits'
    # local_bh_enable, their ACKs run by release_sock; 46 and 50 with each host's
    # NAPI polled by its own task)
    for host, in_segs in ((a, 45), (b, 53)):
        snmp = tcp_of(host.net).snmp()
        assert (snmp["Tcp"].InSegs, snmp["Tcp"].RetransSegs) == (in_segs, 0)
