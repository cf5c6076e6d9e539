"""Seed 2's two mechanisms: eliding ``n->confirmed`` writes and the 16-byte hh copy."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from helpers import IPV4_ONLY, add_addr

import netstack
from netstack.core.dev import dev_open
from netstack.drivers.dummy import dummy_newlink
from netstack.ipv4 import ipv4_of
from netstack.socket import MSG_CONFIRM
from netstack.wire.ipv4 import aton


def _dummy_host(lab: netstack.Lab, name: str, patches: netstack.Patches) -> netstack.Host:
    host = lab.add_host(name, patches=patches, sysctls=IPV4_ONLY)
    dev = dummy_newlink(host.net, "dummy0")
    dev_open(dev)
    add_addr(host, "dummy0", "10.5.0.1/24")
    return host


@pytest.mark.parametrize(("elide", "expected"), [(True, 1), (False, 1000)])
async def test_msg_confirm_dirties_confirmed_once_per_jiffy(
    lab: netstack.Lab, elide: bool, expected: int, autojump_clock: trio.testing.MockClock
) -> None:
    host = _dummy_host(lab, f"h{int(elide)}", netstack.Patches(neigh_confirm_elide=elide))
    sock = host.socket()
    await sock.sendto(b"x" * 200, ("10.5.0.2", 9))  # creates the NOARP neighbour
    await trio.sleep(0.005)  # a later jiffy than the creation
    n = ipv4_of(host.net).arp_tbl.lookup(aton("10.5.0.2"), host.dev("dummy0"))
    assert n is not None
    before = n.confirm_writes
    jiffy = host.net.clock.jiffies
    for _ in range(1000):  # no await: all in one jiffy
        sock.sendto_nowait(b"x" * 200, ("10.5.0.2", 9), MSG_CONFIRM)
    assert host.net.clock.jiffies == jiffy
    assert n.confirm_writes - before == expected
    assert n.confirmed == jiffy
    stats = ipv4_of(host.net).arp_tbl.statistics()
    assert stats.confirm_skipped == (999 if elide else 0)
    assert host.dev("dummy0").statistics().tx_packets == 1001


async def test_without_msg_confirm_nothing_is_written(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    host = _dummy_host(lab, "h", netstack.Patches())
    sock = host.socket()
    await sock.sendto(b"x", ("10.5.0.2", 9))
    n = ipv4_of(host.net).arp_tbl.lookup(aton("10.5.0.2"), host.dev("dummy0"))
    assert n is not None
    before = n.confirm_writes
    for _ in range(10):
        sock.sendto_nowait(b"x", ("10.5.0.2", 9))
    assert n.confirm_writes == before


@pytest.mark.parametrize("fast", [True, False])
async def test_which_neigh_hh_output_path_ran_for_ethernet(
    lab: netstack.Lab, fast: bool, autojump_clock: trio.testing.MockClock
) -> None:
    host = _dummy_host(lab, "h", netstack.Patches(hh_fast_copy=fast))
    sock = host.socket()
    cap = host.capture("dummy0")
    for _ in range(5):
        await sock.sendto(b"payload", ("10.5.0.2", 9))
    tbl = ipv4_of(host.net).arp_tbl
    n = tbl.lookup(aton("10.5.0.2"), host.dev("dummy0"))
    assert n is not None and n.hh.hh_len == 14
    stats = tbl.statistics()
    # The first packet fills hh_cache in neigh_resolve_output; the other four use it.
    if fast:
        assert (stats.hh_fast_copies, stats.hh_aligned_copies) == (4, 0)
    else:
        assert (stats.hh_fast_copies, stats.hh_aligned_copies) == (0, 4)
    # Both copies put the same 14 bytes in front of the packet.
    dev = host.dev("dummy0")
    headers = {frame[:14] for _, frame, _ in cap.frames}
    assert headers == {dev.dev_addr + dev.dev_addr + b"\x08\x00"}
