"""``veth_xmit`` has ``__dev_forward_skb`` written out: what the peer's ring gets is what
``dev_forward_skb`` leaves (issue 18, the ARP fan-out's frames)."""

from __future__ import annotations

import trio.testing
from helpers import IPV4_ONLY

import netstack
from netstack.core.dev import dev_forward_skb
from netstack.core.skbuff import alloc_skb
from netstack.drivers.veth import VETH_OPS

FIELDS = (
    "protocol",
    "pkt_type",
    "data",
    "mac_header",
    "dev",
    "priority",
    "cb",
    "skb_iif",
    "dst",
    "tstamp",
    "mark",
    "ignore_df",
)


async def test_the_ring_gets_what_dev_forward_skb_leaves(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """For ours, another host's, broadcast, multicast and 802.3 frames, with and
    without a timestamp and a mark (those take dev_forward_skb itself), the skb
    on the peer's ring has the fields dev_forward_skb gives a copy."""
    async with netstack.open_lab() as lab:
        a, b = lab.add_host("a", sysctls=IPV4_ONLY), lab.add_host("b", sysctls=IPV4_ONLY)
        lab.add_link("a:eth0", "b:eth0")
        dev_a, dev_b = a.dev("eth0"), b.dev("eth0")
        src = bytes(dev_a.dev_addr)
        heads = [
            bytes(dev_b.dev_addr) + src + b"\x08\x00",  # ours
            bytes.fromhex("020000000077") + src + b"\x86\xdd",  # another host's
            b"\xff" * 6 + src + b"\x08\x06",  # broadcast
            bytes.fromhex("01005e000001") + src + b"\x08\x00",  # multicast
            bytes(dev_b.dev_addr) + src + b"\x00\x2e",  # 802.3 length, LLC
        ]
        ring = dev_b.priv.ring
        for head in heads:
            for tstamp, mark in ((0.0, 0), (1.5, 0), (0.0, 7)):
                frame = head + bytes(60 - len(head))
                skb, ref = alloc_skb(60), alloc_skb(60)
                for s in (skb, ref):
                    s.buf[s.put(60) : s.tail] = frame
                    s.dev = dev_a
                    s.priority = 6
                    s.ignore_df = True
                    s.skb_iif = 9
                    s.cb = object()
                    if tstamp:
                        s.tstamp = tstamp
                    if mark:
                        s.mark = mark
                assert VETH_OPS.ndo_start_xmit(skb, dev_a) == 0
                assert ring[-1] is skb
                ring.pop()
                assert dev_forward_skb(dev_b, ref) == 0
                assert [getattr(skb, f) for f in FIELDS] == [getattr(ref, f) for f in FIELDS]
