"""Send memory across a retransmit collapse (net.ipv4.tcp_retrans_collapse=1, the default).

Linux 6.x, net/ipv4/tcp_output.c: ``__tcp_retransmit_skb`` calls
``tcp_retrans_try_collapse`` for a retransmission shorter than the MSS, and
``tcp_collapse_retrans`` moves the next skb's data over with ``tcp_skb_shift``
→ ``skb_shift`` (net/core/skbuff.c), which moves the bytes' truesize with them
(``skb_len_add(skb, -shiftlen); skb_len_add(tgt, shiftlen)``), before
``tcp_rtx_queue_unlink_and_free`` → ``tcp_wmem_free_skb`` takes what is left of
the next skb's truesize off ``sk_wmem_queued`` and gives it back to
``sk_forward_alloc``. The socket's send memory stays what its queues hold.

The lab: a sender with TCP_NODELAY writes four 100-byte segments while netem
drops everything it sends; the loss is lifted, and the RTO (no tail loss probe:
tcp_early_retrans=0) retransmits the head with the three others collapsed into
it: one segment of 400 bytes.
"""

from __future__ import annotations

import trio
from helpers import connected_tcp

from netstack.host import Lab
from netstack.tcp import TcpSock, tcp_of
from netstack.tcp.helpers import PAGE_SIZE
from netstack.tcp.tcp import TCP_NODELAY
from netstack.testing import builders

PORT = 6017
SOL_TCP = 6


def queued_truesize(sk: TcpSock) -> int:
    """What the write and retransmit queues hold, in truesize."""
    return sum(skb.truesize for skb in sk.write_queue) + sum(skb.truesize for skb in sk.rtx_queue)


def check_send_memory(sk: TcpSock) -> None:
    """sk_wmem_queued is what the queues hold; sk_forward_alloc is the rest of the
    whole pages reserved for it (the sender holds no receive memory here)."""
    assert sk.sk_rmem_alloc == 0
    held = queued_truesize(sk)
    assert sk.sk_wmem_queued == held
    assert sk.sk_forward_alloc == -held % PAGE_SIZE


async def test_collapse_keeps_send_memory(lab: Lab, autojump_clock: object) -> None:
    a, b = builders.pair(lab, kind="nic", delay=0.005)  # 10 ms round trip
    a.sysctl("net.ipv4.tcp_early_retrans=0")  # no tail loss probe: the RTO retransmits
    c, conn = await connected_tcp(a, b, PORT)
    c.setsockopt(SOL_TCP, TCP_NODELAY, 1)
    sk = c.sock
    assert isinstance(sk, TcpSock)

    a.tc("qdisc add dev eth0 root netem loss 100%")
    payload = bytes(range(100)) * 4
    for i in range(4):
        await c.send(payload[i * 100 : (i + 1) * 100])
    assert [skb.tail - skb.data for skb in sk.rtx_queue] == [100] * 4
    assert not sk.write_queue and sk.packets_out == 4
    check_send_memory(sk)
    a.tc("qdisc del dev eth0 root")  # the path works again before the RTO

    # No spy (a compiled build's callers would not see one): step the clock until
    # the RTO has retransmitted; its ACK is a 10 ms round trip away.
    snmp = tcp_of(a.net).snmp
    while snmp()["Tcp"].RetransSegs == 0:  # noqa: ASYNC110 (a counter, no event to wait on)
        await trio.sleep(0.001)
    # the retransmission took the three following skbs into the head
    assert [skb.tail - skb.data for skb in sk.rtx_queue] == [400]
    check_send_memory(sk)

    got = bytearray()
    with trio.move_on_after(2):
        while len(got) < len(payload):
            got += await conn.recv(1000)
    assert bytes(got) == payload
    assert snmp()["Tcp"].RetransSegs == 1
    await trio.sleep(0.1)  # its ACK is in
    assert sk.packets_out == 0 and not sk.rtx_queue
    assert (sk.sk_wmem_queued, sk.sk_forward_alloc) == (0, 0)
