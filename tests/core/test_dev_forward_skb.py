"""``dev_forward_skb``: what a veth peer hands its pair (``____dev_forward_skb``)."""

from __future__ import annotations

import trio.testing
from helpers import IPV4_ONLY

import netstack
from netstack.core.dev import dev_forward_skb
from netstack.core.skbuff import alloc_skb


async def test_the_peer_receives_the_frame_with_priority_zero(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The kernel clears skb->priority with the scrub (net/core/dev.c,
    ____dev_forward_skb()), so a sender's SO_PRIORITY or TOS-derived priority
    does not pick the band of a qdisc the frame meets after the pair (a bridge
    port's prio qdisc); the other fields are eth_type_trans()'s."""
    async with netstack.open_lab() as lab:
        a, b = lab.add_host("a", sysctls=IPV4_ONLY), lab.add_host("b", sysctls=IPV4_ONLY)
        lab.add_link("a:eth0", "b:eth0")
        dev_a, dev_b = a.dev("eth0"), b.dev("eth0")
        skb = alloc_skb(60)
        frame = bytes(dev_b.dev_addr) + bytes(dev_a.dev_addr) + b"\x08\x00" + bytes(46)
        skb.buf[skb.put(60) : skb.tail] = frame
        skb.dev = dev_a
        skb.priority = 6  # TC_PRIO_INTERACTIVE, as IPTOS_LOWDELAY gives
        assert dev_forward_skb(dev_b, skb) == 0
        assert skb.priority == 0
        assert skb.protocol == 0x0800 and skb.data == 14
