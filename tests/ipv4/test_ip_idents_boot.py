"""The IP ID generator starts at random values at boot, not at zero.

``ip_rt_init`` fills ``ip_idents`` with ``get_random_bytes``: the first
datagram a host sends to a destination (an unconnected UDP socket, ping)
carries an unpredictable ID even at jiffies 0, where ``ip_idents_reserve``
adds no idle-time jump. netstack draws the table from a generator seeded by
the Net's own (the lab's seed; a bucket draws its value when first used), so the IDs
below are the same on every run.
"""

from __future__ import annotations

from collections.abc import Callable

import dpkt
import trio
import trio.testing
from helpers import IPV4_ONLY, add_addr

import netstack
from netstack.core.sock import AF_INET, SOCK_DGRAM


def _append_to(sink: list[bytes]) -> Callable[[float, bytes, bool], None]:
    return lambda _t, f, _out: sink.append(bytes(f))


async def test_first_ids_are_random_per_boot_and_fixed_by_the_seed(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    seeds = (1, 2, 3)
    frames: dict[int, list[bytes]] = {seed: [] for seed in seeds}
    senders = []
    for seed in seeds:
        a = lab.add_host(f"a{seed}", seed=seed, sysctls=IPV4_ONLY)
        b = lab.add_host(f"b{seed}", seed=seed + 100, sysctls=IPV4_ONLY)
        lab.add_link(f"a{seed}:eth0", f"b{seed}:eth0")
        add_addr(a, "eth0", "10.0.0.1/24")
        add_addr(b, "eth0", "10.0.0.2/24")
        b.capture("eth0", callback=_append_to(frames[seed]))
        senders.append(a)
    for a in senders:  # at jiffies 0: no idle-time jump, the boot value itself
        assert a.net.clock.jiffies == 0
        await a.socket(AF_INET, SOCK_DGRAM).sendto(b"x" * 10, ("10.0.0.2", 9))
    await trio.sleep(0.1)
    ids = []
    for seed in seeds:
        udp = [
            eth.data
            for eth in map(dpkt.ethernet.Ethernet, frames[seed])
            if isinstance(eth.data, dpkt.ip.IP) and eth.data.p == 17
        ]
        assert len(udp) == 1
        ids.append(udp[0].id)
    assert ids == [26316, 2344, 35519]  # 0, 0, 0 with the counters at zero
