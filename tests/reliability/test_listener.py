"""Issue 13, item 1: a listener's SYN queue goes down again when a handshake completes.

Before the fix the request sock was unhashed by ``syn_recv_sock`` (as the
kernel's ``inet_ehash_nolisten`` does), and ``inet_csk_reqsk_queue_drop`` then
returned early, so ``qlen`` never went down: ``listen(4)`` accepted four
connections in its whole life and the fifth client timed out.
"""

from __future__ import annotations

import pytest
import trio

from netstack.core.sock import AF_INET, AF_INET6, SOCK_STREAM
from netstack.host import Lab
from netstack.tcp import TcpSock, tcp_of

PORT = 7001


@pytest.mark.parametrize("family", [AF_INET, AF_INET6])
async def test_listen_4_serves_20_sequential_clients(
    lab: Lab, autojump_clock: object, family: int
) -> None:
    a, b = lab.add_host("a"), lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0")
    a.ip("addr add 10.0.0.1/24 dev eth0")
    b.ip("addr add 10.0.0.2/24 dev eth0")
    a.ip("-6 addr add 2001:db8::1/64 dev eth0 nodad")
    b.ip("-6 addr add 2001:db8::2/64 dev eth0 nodad")
    addr = "10.0.0.2" if family == AF_INET else "2001:db8::2"
    srv = b.socket(family, SOCK_STREAM)
    await srv.bind(("", PORT))
    srv.listen(4)
    lsk = srv.sock
    assert isinstance(lsk, TcpSock)
    for i in range(20):
        c = a.socket(family, SOCK_STREAM)
        with trio.fail_after(5):
            await c.connect((addr, PORT))
            conn, _ = await srv.accept()
        await c.sendall(b"x%d" % i)
        assert await conn.recv(10) == b"x%d" % i
        c.close()
        conn.close()
        assert lsk.syn_queue_len == 0  # reqsk_queue_removed() on the hashdance
    ext = tcp_of(b.net).snmp()["TcpExt"]
    assert ext.TCPReqQFullDrop == 0
    assert tcp_of(b.net).snmp()["Tcp"].PassiveOpens == 20
