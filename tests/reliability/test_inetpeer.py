"""Issue 13, item 4: inetpeer entries (ICMP rate limiting) are bounded and reclaimed.

Each source a host sends an ICMP error to gets an ``inet_peer`` with its rate
tokens. They were never freed: a flood from many sources grew the table
forever. The kernel frees, whenever it creates a peer, the peers it walked
past that were unused for longer than a TTL falling from
``inet_peer_maxttl`` to ``inet_peer_minttl`` as the pool fills, and all of
them once it holds ``inet_peer_threshold``.

    h (10.0.0.2/24, default via 10.0.0.1) ── Port; datagrams to a closed port
    from 198.18.0.0/16 and 2001:db8:99::/64 each draw a port unreachable.
"""

from __future__ import annotations

import random

import trio

from netstack.host import Host, Lab, Port
from netstack.ipv4 import ipv4_of
from netstack.ipv6.af_inet6 import ipv6_of
from netstack.testing import floods
from netstack.wire.ipv4 import aton
from netstack.wire.ipv6 import aton as aton6

GW_MAC = bytes.fromhex("020000000001")
CLOSED = 9


async def rig(lab: Lab) -> tuple[Host, Port]:
    h = lab.add_host("h")
    port = lab.add_port("h:eth0")
    h.ip("addr add 10.0.0.2/24 dev eth0")
    h.ip("route add default via 10.0.0.1")
    h.ip("neigh add 10.0.0.1 lladdr 02:00:00:00:00:01 dev eth0")
    h.ip("-6 addr add 2001:db8::2/64 dev eth0 nodad")
    h.ip("-6 route add default via 2001:db8::1")
    h.ip("-6 neigh add 2001:db8::1 lladdr 02:00:00:00:00:01 dev eth0")
    # the global ICMP budget would otherwise stop the errors (and the lookups) at 50
    h.sysctl("net.ipv4.icmp_msgs_per_sec=1000000")
    h.sysctl("net.ipv4.icmp_msgs_burst=1000000")
    await trio.sleep(1)
    return h, port


async def flood(h: Host, port: Port, n: int, family: int = 4, seed: int = 1) -> None:
    rng = random.Random(seed)
    mac = bytes(h.dev("eth0").dev_addr)
    for i in range(n):
        if family == 4:
            src = aton("198.18.0.0") | rng.getrandbits(16)
            pkt = floods.udp4(src, aton("10.0.0.2"), 1000, CLOSED, b"x")
            port.send_nowait(floods.eth(mac, GW_MAC, 0x0800, pkt))
        else:
            src = aton6("2001:db8:99::") | rng.getrandbits(64)
            pkt = floods.udp6(src, aton6("2001:db8::2"), 1000, CLOSED, b"x")
            port.send_nowait(floods.eth(mac, GW_MAC, 0x86DD, pkt))
        if i % 64 == 63:
            await trio.sleep(0.001)
            port.drain()
    await trio.sleep(0.01)
    port.drain()


async def test_ipv4_peers_stay_at_the_threshold(lab: Lab, autojump_clock: object) -> None:
    h, port = await rig(lab)
    h.sysctl("net.ipv4.inet_peer_threshold=256")
    await flood(h, port, 3000)
    peers = ipv4_of(h.net).peers
    assert h.snmp()["Icmp"].OutDestUnreachs == 3000  # every error was sent
    assert len(peers) == 251  # never more than 256
    assert (peers.created, peers.reclaimed) == (2987, 2736)


async def test_ipv6_peers_stay_at_the_threshold(lab: Lab, autojump_clock: object) -> None:
    h, port = await rig(lab)
    h.sysctl("net.ipv4.inet_peer_threshold=256")
    await flood(h, port, 3000, family=6)
    peers = ipv6_of(h.net).peers
    assert h.nstat()["Icmp6OutDestUnreachs"] == 3000
    assert len(peers) == 248  # never more than 256
    assert (peers.created, peers.reclaimed) == (3000, 2752)


async def test_old_peers_are_reclaimed_below_the_threshold(
    lab: Lab, autojump_clock: object
) -> None:
    h, port = await rig(lab)
    await flood(h, port, 100)
    peers = ipv4_of(h.net).peers
    assert len(peers) == 99 and peers.reclaimed == 0  # 99 sources among 100 datagrams
    await trio.sleep(300)  # under inet_peer_maxttl: nothing goes
    await flood(h, port, 1, seed=2)
    assert len(peers) == 100 and peers.reclaimed == 0
    await trio.sleep(601)  # older than any TTL
    await flood(h, port, 1, seed=3)
    # the new peer's lookup walked past 7 peers of 100 (a binary search): all freed
    assert peers.reclaimed == 7
    assert len(peers) == 100 + 1 - 7
