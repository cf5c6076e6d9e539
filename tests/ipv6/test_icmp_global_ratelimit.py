"""ICMP and ICMPv6 errors draw on one global bucket per Net (issue 19.4: one home).

The kernel keeps ``icmp_global_allow()`` in net/ipv4/icmp.c, with its credit
in ``net->ipv4`` (per network namespace since 6.12), and ICMPv6's
``icmpv6_global_allow()`` calls it: ``net.ipv4.icmp_msgs_per_sec`` and
``icmp_msgs_burst`` bound the errors of both families together, and a
refused ICMPv6 error counts in IPv4's ``IcmpOutRateLimitGlobal``. Here IPv6
had a bucket of its own, so a host that had spent its budget on ICMP errors
still sent a full burst of ICMPv6 ones.

    h (10.0.0.2/24, 2001:db8::2/64) ── Port; datagrams to a closed port from
    many sources (so the per-destination limit never applies) each ask for a
    port unreachable.
"""

from __future__ import annotations

import random

import trio

from netstack.host import Host, Lab, Port
from netstack.testing import floods
from netstack.wire.ipv4 import aton
from netstack.wire.ipv6 import aton as aton6

GW_MAC = bytes.fromhex("020000000001")
CLOSED = 9
# what the bucket lets through (a send takes 0 to 2 credits at random: icmp_global_consume)
SENT4, SENT6, SENT6B, SENT4B = 57, 0, 59, 0


async def rig(lab: Lab) -> tuple[Host, Port]:
    h = lab.add_host("h")
    port = lab.add_port("h:eth0")
    h.ip("addr add 10.0.0.2/24 dev eth0")
    h.ip("route add default via 10.0.0.1")
    h.ip("neigh add 10.0.0.1 lladdr 02:00:00:00:00:01 dev eth0")
    h.ip("-6 addr add 2001:db8::2/64 dev eth0 nodad")
    h.ip("-6 route add default via 2001:db8::1")
    h.ip("-6 neigh add 2001:db8::1 lladdr 02:00:00:00:00:01 dev eth0")
    await trio.sleep(1)
    return h, port


def send(h: Host, port: Port, n: int, family: int, rng: random.Random) -> None:
    """*n* datagrams to the closed port, within one jiffy (no refill between them)."""
    mac = bytes(h.dev("eth0").dev_addr)
    for _ in range(n):
        if family == 4:
            src = aton("198.18.0.0") | rng.getrandbits(16)
            pkt = floods.udp4(src, aton("10.0.0.2"), 1000, CLOSED, b"x")
            port.send_nowait(floods.eth(mac, GW_MAC, 0x0800, pkt))
        else:
            src = aton6("2001:db8:99::") | rng.getrandbits(64)
            pkt = floods.udp6(src, aton6("2001:db8::2"), 1000, CLOSED, b"x")
            port.send_nowait(floods.eth(mac, GW_MAC, 0x86DD, pkt))


async def test_icmpv6_errors_share_the_ipv4_global_bucket(lab: Lab, autojump_clock: object) -> None:
    h, port = await rig(lab)
    rng = random.Random(1)
    send(h, port, 60, 4, rng)  # more than icmp_msgs_burst (50)
    send(h, port, 20, 6, rng)
    await trio.sleep(0.001)
    port.drain()
    s = h.nstat()
    sent4, sent6 = s.get("IcmpOutDestUnreachs", 0), s.get("Icmp6OutDestUnreachs", 0)
    assert (sent4, sent6) == (SENT4, SENT6)
    # every error the bucket refused, of either family, is IPv4's RATELIMITGLOBAL
    assert s.get("IcmpOutRateLimitGlobal", 0) == 60 + 20 - sent4 - sent6


async def test_icmp_errors_wait_for_icmpv6_spending(lab: Lab, autojump_clock: object) -> None:
    h, port = await rig(lab)
    rng = random.Random(2)
    send(h, port, 60, 6, rng)
    send(h, port, 20, 4, rng)
    await trio.sleep(0.001)
    port.drain()
    s = h.nstat()
    assert (s.get("Icmp6OutDestUnreachs", 0), s.get("IcmpOutDestUnreachs", 0)) == (SENT6B, SENT4B)
    assert s.get("IcmpOutRateLimitGlobal", 0) == 80 - SENT6B - SENT4B
