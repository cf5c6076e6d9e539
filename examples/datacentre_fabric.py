"""A data-centre fabric: spines, leaves, and hosts under each leaf; every host pings.

    spine0          spine1            routers: a /31 to every leaf, a /24 route per leaf
      │  ╲        ╱  │
    leaf0  leaf1  leaf2  leaf3        routers; a bridge br0 over their hosts (10.0.L.254/24)
    ││││   ││││   ││││   ││││
    h0…h3  h4…h7  …                   hosts 10.0.L.1…, default route via their leaf

Every host pings its neighbour under the same leaf (an ARP flooded through
the leaf's bridge, then an echo), and the first host under each leaf pings
the first host under the next leaf (through leaf, spine, leaf: the TTL
drops by 3). IPv4 only (``disable_ipv6``), as most fabrics' underlays.

The lab is built with the cyclic collector paused and frozen afterwards
(what :meth:`netstack.Lab.add_host` does for any lab), so ten thousand hosts
build in seconds (``benchmarks/lab_scale.py --hosts 10000`` measures it).
It is opened with ``shuffle=False``: the tasks woken at one instant (every
host's ping, then every bridge port's NAPI poll) run in reverse creation
order, which is the hosts' order in memory, not in a seeded shuffle; a large
fabric's pings take about 40 % less CPU so (``netstack/host/lab.py``,
"Scheduling"). And with ``chain_polls=True``: a NAPI poll also polls the next
hop's veth it scheduled, as the kernel's ``net_rx_action`` walks its poll
list, instead of a Trio task step per hop (``netstack/core/napi.py``,
"Chained polls"; the same pings, 6 – 11 % fewer instructions a ping).

    python examples/datacentre_fabric.py [SPINES LEAVES HOSTS_PER_LEAF]
    python examples/datacentre_fabric.py 4 250 40     # 10,000 hosts
"""

from __future__ import annotations

import sys
import time

import trio

import netstack
from netstack import Host, Lab

IPV4_ONLY: dict[str, str | int] = {"net.ipv6.conf.all.disable_ipv6": 1}
ROUTER: dict[str, str | int] = {**IPV4_ONLY, "net.ipv4.ip_forward": 1}


def build(lab: Lab, spines: int, leaves: int, per_leaf: int) -> list[list[Host]]:
    """The fabric; returns the hosts under each leaf."""
    if not (1 <= spines <= 16 and 1 <= leaves <= 256 * 128 and 1 <= per_leaf <= 253):
        raise ValueError("1-16 spines, 1-32768 leaves, 1-253 hosts per leaf")
    spine = [lab.add_host(f"spine{s}", sysctls=ROUTER) for s in range(spines)]
    racks: list[list[Host]] = []
    for n in range(leaves):
        net = f"10.{n // 256}.{n % 256}"
        leaf = lab.add_host(f"leaf{n}", sysctls=ROUTER)
        leaf.ip("link add br0 type bridge")
        leaf.ip("link set br0 up")
        leaf.ip(f"addr add {net}.254/24 dev br0")
        for s, sp in enumerate(spine):  # 172.16+s.X.Y/31: the spine even, the leaf odd
            link = f"172.{16 + s}.{n // 128}"
            low = (n % 128) * 2
            lab.add_link(f"spine{s}:leaf{n}", f"leaf{n}:spine{s}")
            sp.ip(f"addr add {link}.{low}/31 dev leaf{n}")
            leaf.ip(f"addr add {link}.{low + 1}/31 dev spine{s}")
            sp.ip(f"route add {net}.0/24 via {link}.{low + 1}")
        leaf.ip(f"route add default via 172.{16 + n % spines}.{n // 128}.{(n % 128) * 2}")
        rack = []
        for i in range(per_leaf):
            h = lab.add_host(f"h{n * per_leaf + i}", sysctls=IPV4_ONLY)
            lab.add_link(f"{h.name}:eth0", f"leaf{n}:p{i}")
            leaf.ip(f"link set p{i} master br0")
            h.ip(f"addr add {net}.{i + 1}/24 dev eth0")
            h.ip(f"route add default via {net}.254")
            rack.append(h)
        racks.append(rack)
    return racks


async def main(spines: int = 2, leaves: int = 4, per_leaf: int = 4) -> dict[str, object]:
    async with netstack.open_lab(shuffle=False, chain_polls=True) as lab:
        cpu = time.process_time()
        racks = build(lab, spines, leaves, per_leaf)
        built = time.process_time() - cpu
        hosts = [h for rack in racks for h in rack]
        print(f"{len(hosts)} hosts, {leaves} leaves, {spines} spines: built in {built:.2f} s CPU")
        pairs = [(rack[i], rack[(i + 1) % len(rack)]) for rack in racks for i in range(len(rack))]
        pairs += [(racks[n][0], racks[(n + 1) % leaves][0]) for n in range(leaves) if leaves > 1]
        results: dict[tuple[str, str], netstack.PingResult] = {}

        async def one(a: Host, b: Host) -> None:
            results[a.name, b.name] = await a.ping(b.addr("eth0"), count=1, timeout=5)

        cpu = time.process_time()
        async with trio.open_nursery() as nursery:
            for a, b in pairs:
                nursery.start_soon(one, a, b)
        pinged = time.process_time() - cpu
        answered = sum(r.received for r in results.values())
        print(f"{answered} of {len(pairs)} pings answered in {pinged:.2f} s CPU")
        if leaves > 1:
            a, b = racks[0][0], racks[1][0]
            reply = results[a.name, b.name].replies[0]
            print(f"{a.name} -> {b.name} across the fabric: ttl={reply.ttl}")
        forwarded = {
            sp.name: sp.snmp()["Ip"].ForwDatagrams
            for sp in lab.hosts.values()
            if sp.name.startswith("spine")
        }
        print(f"forwarded by the spines: {forwarded}")
        return {"hosts": len(hosts), "pings": results, "answered": answered, "spines": forwarded}


if __name__ == "__main__":
    sizes = [int(a) for a in sys.argv[1:4]]
    netstack.run(main, *sizes)
