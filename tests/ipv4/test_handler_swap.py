"""A receive handler replaced at run time is the one called, in the pure package
and in the compiled build alike.

The build's copy calls ``ip_rcv``, ``arp_rcv``, ``udp_rcv`` and ``icmp_rcv``
directly when the handler is the namespace's own (the kernel's
``INDIRECT_CALL_INET`` in ``__netif_receive_skb_one_core`` and
``INDIRECT_CALL_2`` in ``ip_protocol_deliver_rcu``). Those macros compare the
function pointer, not the ``packet_type`` or ``net_protocol`` that holds it: a
function set on the namespace's own packet type or protocol must be called.
"""

from __future__ import annotations

import trio.testing

from netstack.core.net import PacketType
from netstack.core.netdevice import NetDevice
from netstack.core.skbuff import SkBuff
from netstack.host import Lab
from netstack.ipv4 import ipv4_of
from netstack.testing.builders import pair


async def test_a_replaced_udp_handler_and_ip_packet_type_func_are_called(
    lab: Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, b = pair(lab)
    srv = b.socket()
    await srv.bind(("0.0.0.0", 9))
    cli = a.socket()
    await cli.sendto(b"warm", ("10.0.0.2", 9))  # ARP resolved before the spies go in
    await srv.recvfrom(100)
    ipv4 = ipv4_of(b.net)
    seen: list[str] = []
    proto = ipv4.inet_protos[17]
    assert proto is ipv4.udp_protocol
    handler = proto.handler
    pt = ipv4.ip_packet_type
    func = pt.func

    def udp_spy(skb: SkBuff) -> object:
        seen.append("udp")
        return handler(skb)

    def ip_spy(skb: SkBuff, dev: NetDevice, p: PacketType, orig: NetDevice) -> object:
        seen.append("ip")
        return func(skb, dev, p, orig)

    proto.handler = udp_spy
    pt.func = ip_spy
    for payload in (b"x", b"y", b"z"):
        await cli.sendto(payload, ("10.0.0.2", 9))
        assert (await srv.recvfrom(100))[0] == payload
    assert seen == ["ip", "udp"] * 3
