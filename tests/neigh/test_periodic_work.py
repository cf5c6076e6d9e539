"""The neighbour table's periodic work (net/core/neighbour.c).

``neigh_table_init`` queues ``neigh_periodic_work`` one ``reachable_time``
after the table is made (15 – 45 s with the default 30 s base) and sets
``last_rand = now + reachable_time * 20``: the first re-draw of every
``reachable_time`` comes 5 – 15 minutes on, then one every 300 s
(``time_after``). Before the fix the work first ran at 15 s and the table's
``last_rand`` was 0, so on a clock that does not start at zero (Trio's real
clock) the first run re-drew every device's parameters at once.
"""

from __future__ import annotations

import trio
import trio.testing
from helpers import IPV4_ONLY

import netstack
from netstack.ipv4 import ipv4_of


async def test_first_run_one_reachable_time_on_and_no_early_redraw(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = lab.add_host("h", sysctls=IPV4_ONLY)
    tbl = ipv4_of(h.net).arp_tbl
    reach = tbl.parms.reachable_time
    hz = h.net.clock.hz
    assert 15 * hz <= reach < 45 * hz
    assert tbl.gc_timer.expires == tbl.last_flush + reach
    assert tbl.last_rand == tbl.last_flush + 20 * reach
    await trio.sleep((reach - 1) / hz - trio.current_time())
    assert tbl.statistics().periodic_gc_runs == 0
    await trio.sleep(2 / hz)
    assert tbl.statistics().periodic_gc_runs == 1
    assert tbl.parms.reachable_time == reach  # not re-drawn before last_rand + 300 s
    await trio.sleep((tbl.last_rand + 300 * hz) / hz - trio.current_time() + 30)
    assert tbl.last_rand > tbl.last_flush + 20 * reach  # re-drawn once 300 s had passed
