"""The receiver's ACK pattern of a bulk transfer, as Linux 6.x sends it (issue 16).

Figures measured on Linux 6.18 (this machine, a veth pair in two namespaces,
2 MB in one ``sendall``, a reader calling ``recv(65536)`` in a loop) are in
docs/timed.md, "When the receiving application runs"; these tests pin
netstack's own pattern, the quick ACKs at the start and the ACK every one or
two segments once the reader keeps up.
"""

from __future__ import annotations

from netstack.core.sock import AF_INET, SOCK_STREAM
from netstack.host import Lab
from netstack.tcp import TcpSock
from netstack.tcp.input import tcp_incr_quickack
from netstack.tcp.sock import TCP_MAX_QUICKACKS

MSS = 1448


async def test_a_window_under_two_segments_earns_one_quick_ack(lab: Lab) -> None:
    """``tcp_incr_quickack``: rcv_wnd / (2 * rcv_mss) quick ACKs; only zero becomes two."""
    host = lab.add_host("a")
    sk = host.socket(AF_INET, SOCK_STREAM).sock
    assert isinstance(sk, TcpSock)
    sk.icsk_ack_rcv_mss = MSS
    for rcv_wnd, quick in ((1000, 2), (2 * MSS + 100, 1), (9 * MSS, 4), (64 * MSS, 16)):
        sk.icsk_ack_quick = 0
        sk.rcv_wnd = rcv_wnd
        tcp_incr_quickack(sk, TCP_MAX_QUICKACKS)
        assert sk.icsk_ack_quick == quick, rcv_wnd
