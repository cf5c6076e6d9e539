"""When a veth's receive runs packet by packet (``rx_per_xmit``: no GRO, noqueue).

The kernel's veth without GRO has no NAPI (``__netif_rx``); netstack keeps the
ring and its poll, and decides per poll whether the poll stops after in-order
TCP data. The packet that schedules the poll decides, from the receiver's GRO
flag and the sender's qdisc at that moment; packets queued behind it while the
poll is pending do not change it.
"""

from __future__ import annotations

import trio
import trio.testing

from netstack.ipv4 import ipv4_of
from netstack.ipv4.arp import arp_send
from netstack.testing.builders import open_test_lab, pair
from netstack.wire.arp import ARPOP_REQUEST
from netstack.wire.ethernet import ETH_P_ARP
from netstack.wire.ipv4 import aton


async def test_the_packet_that_schedules_a_poll_decides_rx_per_xmit(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_test_lab() as lab:
        a, b = pair(lab)
        # b's poll must stay pending across two transmits: with polls at local_bh_enable
        # (the default) each request's transmit polls b before it returns, as the
        # kernel's net_rx_action does on the sender's CPU; b's NAPI on a CPU of its own
        # (polls_at_bh_enable False: its task polls) leaves it scheduled meanwhile
        b.net.polls_at_bh_enable = False
        await trio.sleep(1)  # carriers up
        dev, peer = a.dev("eth0"), b.dev("eth0")
        napi = peer.priv.napi
        ipv4 = ipv4_of(a.net)
        sip, tip = aton("10.0.0.1"), aton("10.0.0.200")

        def request() -> None:
            arp_send(ipv4, ARPOP_REQUEST, ETH_P_ARP, tip, dev, sip, None, dev.dev_addr, None)

        polls = napi.polls
        request()  # schedules b's poll: no GRO, noqueue
        assert napi.scheduled and napi.rx_per_xmit
        b.ethtool("-K eth0 gro on")
        request()  # queued behind: the pending poll keeps its decision
        assert napi.rx_per_xmit
        await trio.sleep(0.001)
        assert napi.polls == polls + 1 and napi.packets >= 2 and not napi.scheduled
        request()  # the next poll: GRO on, batched
        assert napi.scheduled and not napi.rx_per_xmit
        await trio.sleep(0.001)
        b.ethtool("-K eth0 gro off")
        request()
        assert napi.rx_per_xmit
        # polls at local_bh_enable (the default): the request's transmit polls b
        # before it returns, so no poll is pending for a later packet to find
        b.net.polls_at_bh_enable = True
        await trio.sleep(0.001)
        polls = napi.polls
        request()
        assert napi.polls == polls + 1 and not napi.scheduled and napi.rx_per_xmit
