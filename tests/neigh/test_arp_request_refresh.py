"""An ARP request does not refresh a REACHABLE entry; a reply does.

``arp_process`` hands a request's sender to ``neigh_event_ns``, which asks
``neigh_update`` for NUD_STALE with the same address: ``__neigh_update``
keeps the entry REACHABLE ("do not change entry state, if new one is
STALE") but stamps ``confirmed`` only for a CONNECTED update and
``updated`` only when the state or address changes. So a host that keeps
being asked for its address by a neighbour it talks to does not keep that
neighbour REACHABLE forever: the entry goes STALE after ``reachable_time``
unless a reply or an upper-layer confirmation arrives, as on Linux.
"""

from __future__ import annotations

import trio
import trio.testing
from helpers import IPV4_ONLY, add_addr

import netstack
from netstack.ipv4 import ipv4_of
from netstack.ipv4.arp import arp_send
from netstack.neigh.nud import NUD_REACHABLE, NUD_STALE, NeighParms, NudEntry, update
from netstack.wire.arp import ARPOP_REPLY, ARPOP_REQUEST
from netstack.wire.ethernet import ETH_P_ARP
from netstack.wire.ipv4 import aton


def test_stale_update_of_reachable_entry_touches_no_timestamp() -> None:
    n = NudEntry(NUD_REACHABLE, confirmed=1, updated=1)
    ok, actions = update(
        n, NeighParms(), 5, NUD_STALE, lladdr_changed=False, has_lladdr=True, flags=1
    )
    assert ok and actions == []
    assert (n.nud_state, n.confirmed, n.updated) == (NUD_REACHABLE, 1, 1)


async def test_arp_request_keeps_reachable_but_does_not_confirm(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a = lab.add_host("a", sysctls=IPV4_ONLY)
    b = lab.add_host("b", sysctls=IPV4_ONLY)
    lab.add_link("a:eth0", "b:eth0")
    add_addr(a, "eth0", "10.0.0.1/24")
    add_addr(b, "eth0", "10.0.0.2/24")
    await trio.sleep(1)
    assert (await a.ping("10.0.0.2", count=1)).received == 1
    tbl = ipv4_of(a.net).arp_tbl
    n = tbl.lookup(aton("10.0.0.2"), a.dev("eth0"))
    assert n is not None and n.nud_state == NUD_REACHABLE
    confirmed, updated = n.confirmed, n.updated
    await trio.sleep(2)
    b_eth0 = b.dev("eth0")
    bcast = b"\xff" * 6
    mac = b_eth0.dev_addr
    arp_send(  # b asks who has 10.0.0.1
        ipv4_of(b.net), ARPOP_REQUEST, ETH_P_ARP, aton("10.0.0.1"), b_eth0,
        aton("10.0.0.2"), bcast, mac, None,
    )  # fmt: skip
    await trio.sleep(0.01)
    assert n.nud_state == NUD_REACHABLE
    assert (n.confirmed, n.updated) == (confirmed, updated)
    # a reply confirms: confirmed moves, the state stays, so updated does not
    arp_send(
        ipv4_of(b.net), ARPOP_REPLY, ETH_P_ARP, aton("10.0.0.1"), b_eth0,
        aton("10.0.0.2"), a.dev("eth0").dev_addr, mac, a.dev("eth0").dev_addr,
    )  # fmt: skip
    await trio.sleep(0.01)
    assert n.nud_state == NUD_REACHABLE
    assert confirmed < n.confirmed <= a.net.clock.jiffies
    assert n.updated == updated
