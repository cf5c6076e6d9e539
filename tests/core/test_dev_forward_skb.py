"""``dev_forward_skb``: what a veth peer hands its pair (``____dev_forward_skb``)."""

from __future__ import annotations

import trio.testing
from helpers import IPV4_ONLY

import netstack
from netstack.core.dev import dev_forward_skb
from netstack.core.ethernet import eth_type_trans
from netstack.core.skbuff import (
    PACKET_BROADCAST,
    PACKET_HOST,
    PACKET_MULTICAST,
    PACKET_OTHERHOST,
    alloc_skb,
)


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


async def test_the_peer_classifies_each_frame_as_eth_type_trans_does(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """dev_forward_skb has eth_type_trans written out for a unicast Ethernet II
    frame (issue 18): for ours, another host's, broadcast, multicast and 802.3
    frames it leaves what eth_type_trans itself leaves on a copy."""
    async with netstack.open_lab() as lab:
        a, b = lab.add_host("a", sysctls=IPV4_ONLY), lab.add_host("b", sysctls=IPV4_ONLY)
        lab.add_link("a:eth0", "b:eth0")
        dev_a, dev_b = a.dev("eth0"), b.dev("eth0")
        src = bytes(dev_a.dev_addr)
        frames = [
            bytes(dev_b.dev_addr) + src + b"\x08\x00",  # ours
            bytes.fromhex("020000000077") + src + b"\x86\xdd",  # another host's
            b"\xff" * 6 + src + b"\x08\x06",  # broadcast
            bytes.fromhex("01005e000001") + src + b"\x08\x00",  # multicast
            bytes(dev_b.dev_addr) + src + b"\x00\x2e",  # 802.3 length, LLC
            bytes(dev_b.dev_addr) + src + b"\x00\x2e\xff\xff",  # 802.3, raw IPX
        ]
        seen = []
        for head in frames:
            frame = head + bytes(60 - len(head))
            skb, ref = alloc_skb(60), alloc_skb(60)
            for s in (skb, ref):
                s.buf[s.put(60) : s.tail] = frame
                s.dev = dev_a
            assert dev_forward_skb(dev_b, skb) == 0
            ref.protocol = eth_type_trans(ref, dev_b)
            got = (skb.protocol, skb.pkt_type, skb.data, skb.mac_header, skb.dev)
            assert got == (ref.protocol, ref.pkt_type, ref.data, ref.mac_header, ref.dev)
            seen.append((skb.protocol, skb.pkt_type))
        assert seen == [
            (0x0800, PACKET_HOST),
            (0x86DD, PACKET_OTHERHOST),
            (0x0806, PACKET_BROADCAST),
            (0x0800, PACKET_MULTICAST),
            (0x0004, PACKET_HOST),
            (0x0001, PACKET_HOST),
        ]
