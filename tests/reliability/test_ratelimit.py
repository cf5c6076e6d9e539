"""Issue 13, item 7: per-packet log lines are rate-limited as net_ratelimit() does.

An ARP flood from new sources fills the neighbour table; every further frame
then hits "neighbour table overflow". The kernel prints that (and every other
per-packet message) through ``net_ratelimit()``: 10 messages per 5 s, then
``net_ratelimit: N callbacks suppressed``. Before, netstack logged one warning
per frame.
"""

from __future__ import annotations

import logging

import pytest
import trio

from netstack.host import Host, Lab, Port
from netstack.ipv4 import ipv4_of
from netstack.testing import floods
from netstack.wire.ipv4 import aton


async def rig(lab: Lab) -> tuple[Host, Port]:
    h = lab.add_host("h")
    port = lab.add_port("h:eth0")
    h.ip("addr add 10.0.0.2/16 dev eth0")
    h.sysctl("net.ipv4.neigh.default.gc_thresh3=64")
    await trio.sleep(1)
    return h, port


def events(caplog: pytest.LogCaptureFixture, name: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if name in r.getMessage()]


async def test_neighbour_overflow_is_rate_limited(
    lab: Lab, autojump_clock: object, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="netstack")
    h, port = await rig(lab)
    for frame in floods.arp_flood(200, aton("10.0.0.0"), aton("10.0.0.2")):
        port.send_nowait(frame)
    await trio.sleep(0.01)
    tbl = ipv4_of(h.net).arp_tbl
    assert len(tbl.hash) == 64  # gc_thresh3
    overflows = tbl.table_fulls
    assert overflows == 200 - 64
    assert len(events(caplog, "neighbour_table_overflow")) == 10  # message_burst
    assert h.net.net_ratelimit_state.missed == overflows - 10
    # the next interval reports what the last one suppressed, then logs again
    await trio.sleep(5.5)
    for frame in floods.arp_flood(3, aton("10.0.0.0"), aton("10.0.0.2"), seed=2):
        port.send_nowait(frame)
    await trio.sleep(0.01)
    assert events(caplog, "callbacks suppressed") == [
        f"event='callbacks_suppressed' host='h' msg='net_ratelimit: {overflows - 10} callbacks"
        " suppressed'"
    ]
    assert len(events(caplog, "neighbour_table_overflow")) == 13


async def test_message_cost_and_burst_sysctls(lab: Lab, autojump_clock: object) -> None:
    h = lab.add_host("h")
    assert h.sysctl("net.core.message_cost") == "5"
    assert h.sysctl("net.core.message_burst") == "10"
    h.sysctl("net.core.message_burst=2")
    assert [h.net.net_ratelimit() for _ in range(3)] == [True, True, False]
    h.sysctl("net.core.message_cost=0")  # no limit at all
    assert all(h.net.net_ratelimit() for _ in range(20))
