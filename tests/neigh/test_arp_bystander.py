"""An ARP request for another host, heard on a shared segment (net/ipv4/arp.c).

Every host under a bridge hears every broadcast request. ``arp_process``
routes the request's target (``ip_route_input_noref``): not local, so it
falls through to the update step, ``__neigh_lookup(&arp_tbl, &sip, dev, 0)``,
which never creates an entry (``arp_accept`` 0). A bystander that already
knows the sender updates it: NUD_STALE (a request does not confirm), the new
address taken only once ``locktime`` (1 s) has passed since the last update.
The table's ``lookups``/``hits`` count each request; ``rcv_probes_mcast``
counts only requests for the host itself.
"""

from __future__ import annotations

import trio
import trio.testing
from helpers import IPV4_ONLY

import netstack
from netstack.ipv4 import ipv4_of
from netstack.ipv4.arp import arp_send
from netstack.neigh.nud import NUD_REACHABLE, NUD_STALE
from netstack.wire.arp import ARPOP_REQUEST
from netstack.wire.ethernet import ETH_P_ARP
from netstack.wire.ipv4 import aton

BCAST = b"\xff" * 6


async def _segment(lab: netstack.Lab) -> tuple[netstack.Host, netstack.Host, netstack.Host]:
    """a, b and c under one bridge, 10.0.0.1-3/24."""
    sw = lab.add_host("sw", sysctls=IPV4_ONLY)
    sw.ip("link add br0 type bridge")
    sw.ip("link set br0 up")
    hosts = []
    for i, name in enumerate("abc"):
        h = lab.add_host(name, sysctls=IPV4_ONLY)
        lab.add_link(f"{name}:eth0", f"sw:p{i}")
        sw.ip(f"link set p{i} master br0")
        h.ip(f"addr add 10.0.0.{i + 1}/24 dev eth0")
        hosts.append(h)
    await trio.sleep(1)
    return hosts[0], hosts[1], hosts[2]


def _ask(a: netstack.Host, target: str, mac: bytes | None = None) -> None:
    """a broadcasts "who has *target*", from *mac* (a's own by default)."""
    dev = a.dev("eth0")
    arp_send(
        ipv4_of(a.net), ARPOP_REQUEST, ETH_P_ARP, aton(target), dev,
        aton("10.0.0.1"), BCAST, mac or dev.dev_addr, None,
    )  # fmt: skip


async def test_request_for_another_host_creates_no_entry(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, b, c = await _segment(lab)
    tbl = ipv4_of(c.net).arp_tbl
    before = tbl.statistics()
    _ask(a, "10.0.0.2")
    await trio.sleep(0.01)
    assert tbl.lookup(aton("10.0.0.1"), c.dev("eth0")) is None
    after = tbl.statistics()
    assert after.entries == before.entries == 0
    assert after.allocs == before.allocs
    # one lookup (__neigh_lookup, creat=0) and the one just above; no hit
    assert (after.lookups - before.lookups, after.hits - before.hits) == (2, 0)
    assert after.rcv_probes_mcast == before.rcv_probes_mcast
    # b, the target, answered and learnt a as STALE
    n_b = ipv4_of(b.net).arp_tbl.lookup(aton("10.0.0.1"), b.dev("eth0"))
    assert n_b is not None and n_b.nud_state == NUD_STALE
    assert ipv4_of(b.net).arp_tbl.statistics().rcv_probes_mcast == 1


async def test_request_for_another_host_updates_a_known_sender(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, _b, c = await _segment(lab)
    assert (await c.ping("10.0.0.1", count=1)).received == 1
    tbl = ipv4_of(c.net).arp_tbl
    n = tbl.lookup(aton("10.0.0.1"), c.dev("eth0"))
    assert n is not None and n.nud_state == NUD_REACHABLE
    old_mac = n.ha
    new_mac = b"\x02\x00\x00\x00\x00\x99"
    # the same address again: the entry stays REACHABLE, nothing stamped
    updated = n.updated
    await trio.sleep(2)
    _ask(a, "10.0.0.2")
    await trio.sleep(0.01)
    assert (n.nud_state, n.ha, n.updated) == (NUD_REACHABLE, old_mac, updated)
    # a new address within locktime (1 s) of the last update is ignored …
    n.updated = c.net.clock.jiffies
    _ask(a, "10.0.0.2", new_mac)
    await trio.sleep(0.01)
    assert (n.nud_state, n.ha) == (NUD_REACHABLE, old_mac)
    # … and taken after it, as STALE (a request does not prove reachability)
    await trio.sleep(1.5)
    _ask(a, "10.0.0.2", new_mac)
    await trio.sleep(0.01)
    assert (n.nud_state, n.ha) == (NUD_STALE, new_mac)
    assert tbl.statistics().entries == 1
