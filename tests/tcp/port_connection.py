"""The connection the socket-lock tests share: the stack connected to a port.

    stack (the connection under test) ── Port: the peer, driven by a TcpContext

Used by tests/tcp/test_tcp_sock_lock.py and test_tcp_sock_lock_bh.py, which take
the socket's lock by hand (``lock_sock``) so that the peer's segments arrive
while it is held.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from netstack.tcp.sock import TcpSock
from netstack.testing.tcpctx import TcpContext

if TYPE_CHECKING:
    from netstack.host import Lab
    from netstack.socket import Socket


async def port_connection(lab: Lab, family: int) -> tuple[TcpContext, Socket, TcpSock]:
    """``(ctx, sock, sk)``: the peer, the stack's connected socket and its TcpSock."""
    ctx = TcpContext(lab, family=family)
    await trio.sleep(1)  # the port's address (and IPv6's DAD)
    sock = await ctx.create_connected()
    sk = sock.sock
    assert isinstance(sk, TcpSock)
    return ctx, sock, sk
