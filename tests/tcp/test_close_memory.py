"""Socket memory across close() with data still in flight (Linux 6.x).

``__tcp_close`` frees the unread receive queue (``sock_rfree``: each skb's
truesize back to ``sk_forward_alloc``) and calls ``sk_mem_reclaim``, which
returns whole pages and keeps the remainder. Since the send side charges the
same forward allocation (``sk_wmem_schedule``), data still unacknowledged at
close stands on that remainder: ``sk_forward_alloc + sk_wmem_queued +
sk_rmem_alloc`` stays a whole number of pages, as in every other state.
"""

from __future__ import annotations

import trio
from helpers import connected_tcp

from netstack.host import Lab
from netstack.tcp import TcpSock
from netstack.tcp.helpers import PAGE_SIZE
from netstack.tcp.sock import TCP_FIN_WAIT1
from netstack.testing import builders

PORT = 6019


async def test_close_with_data_in_flight_keeps_the_page_remainder(
    lab: Lab, autojump_clock: object
) -> None:
    a, b = builders.pair(lab, kind="nic", delay=0.005)  # 10 ms round trip
    c, conn = await connected_tcp(a, b, PORT)
    sk = c.sock
    assert isinstance(sk, TcpSock)
    await c.send(bytes(3000))
    c.close()  # the data and the FIN are not acknowledged yet
    assert sk.state == TCP_FIN_WAIT1 and sk.sk_wmem_queued > 0
    assert sk.sk_rmem_alloc == 0
    assert sk.sk_forward_alloc == -sk.sk_wmem_queued % PAGE_SIZE
    got = bytearray()
    with trio.move_on_after(1):
        while len(got) < 3000:
            got += await conn.recv(4096)
    assert len(got) == 3000
    await trio.sleep(0.1)  # the ACKs are in
    assert (sk.sk_wmem_queued, sk.sk_forward_alloc) == (0, 0)
