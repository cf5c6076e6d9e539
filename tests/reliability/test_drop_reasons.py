"""Issue 13, item 9: drops carry the kernel's reason, and a consumed skb is no drop.

Before, TCP segments answered with a RST, segments out of the window, invalid
RSTs and SYNs, a SYN to a full queue and a host's own looped-back Neighbour
Solicitations were all counted as ``NOT_SPECIFIED``. Linux gives them reasons
(``tcp_rcv_state_process`` returns one for the RST path; ``tcp_validate_incoming``
and ``tcp_data_queue`` set theirs), consumes a SYN it refuses
(``tcp_conn_request`` returns 0), and never loops ND back (the ndisc socket
has ``mc_loop`` 0). The kernel itself keeps ``NOT_SPECIFIED`` for
``ip6_mc_input`` (a group the host did not join) and for a fragment refused
above ``ipfrag_high_thresh`` — a Linux 6.18 ``skb:kfree_skb`` trace shows both
— and so does netstack.

    a (10.0.0.1) ── Port: segments written by the test
"""

from __future__ import annotations

import trio

from netstack.core.sock import AF_INET, SOCK_STREAM
from netstack.host import Host, Lab, Port
from netstack.testing import floods
from netstack.wire.ipv4 import aton

PEER_MAC = bytes.fromhex("020000000001")
A, PEER = aton("10.0.0.1"), aton("10.0.0.2")


async def rig(lab: Lab) -> tuple[Host, Port]:
    a = lab.add_host("a")
    port = lab.add_port("a:eth0")
    a.ip("addr add 10.0.0.1/24 dev eth0")
    a.ip("-6 addr add 2001:db8::1/64 dev eth0")  # with DAD: its NS must not come back
    a.ip("neigh add 10.0.0.2 lladdr 02:00:00:00:00:01 dev eth0")
    await trio.sleep(3)
    return a, port


def seg(a: Host, sport: int, dport: int, seq: int, ack: int, flags: int) -> bytes:
    pkt = floods.tcp4(PEER, A, sport, dport, seq, ack=ack, flags=flags)
    return floods.eth(bytes(a.dev("eth0").dev_addr), PEER_MAC, 0x0800, pkt)


async def test_tcp_drops_have_reasons(lab: Lab, autojump_clock: object) -> None:
    a, port = await rig(lab)
    assert a.drops() == {}  # booting with DAD drops nothing (no looped-back NS)
    srv = a.socket(AF_INET, SOCK_STREAM)
    await srv.bind(("", 80))
    srv.listen(1)
    await port.send(seg(a, 1000, 80, 1, 999, 0x10))  # an ACK to a listener: RST
    await port.send(seg(a, 1000, 81, 1, 999, 0x10))  # to a closed port: RST
    await port.send(seg(a, 1000, 80, 1, 0, 0x01))  # FIN alone to a listener
    await port.send(seg(a, 1000, 80, 1, 0, 0x04))  # RST to a listener
    await trio.sleep(0.01)
    assert a.drops() == {"TCP_FLAGS": 2, "NO_SOCKET": 1, "TCP_RESET": 1}
    # a full SYN queue (listen(1) keeps 2): refused SYNs are consumed, not dropped
    a.sysctl("net.ipv4.tcp_syncookies=0")
    for i in range(5):
        await port.send(seg(a, 2000 + i, 80, 7, 0, 0x02))
    await trio.sleep(0.01)
    assert a.drops() == {"TCP_FLAGS": 2, "NO_SOCKET": 1, "TCP_RESET": 1}
    assert a.nstat()["TcpExtTCPReqQFullDrop"] == 3
