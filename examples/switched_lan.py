"""A switched LAN: three hosts on a Linux bridge, learning, flooding and ageing.

    h1 10.0.0.1 ──┐
    h2 10.0.0.2 ──┤ s1 (br0)
    h3 10.0.0.3 ──┘

``lab.add_switch("s1")`` makes a host that runs a bridge ``br0``; each
``add_link(…, "s1")`` plugs a new port (``s1-eth1``…) into it. The first
ping floods h1's ARP request to every other port; from then on the switch
knows where each MAC is (``bridge fdb show``) and forwards unicast to one
port. With ``ageing_time`` 30 s the learnt entries are gone 30 s after the
last frame from each host.

    python examples/switched_lan.py
"""

from __future__ import annotations

import trio

import netstack

IPV4_ONLY: dict[str, str | int] = {"net.ipv6.conf.all.disable_ipv6": 1}


async def main() -> dict[str, object]:
    async with netstack.open_lab() as lab:
        s1 = lab.add_switch("s1", ageing_time=30, sysctls=IPV4_ONLY)
        hosts = [lab.add_host(f"h{i}", sysctls=IPV4_ONLY) for i in (1, 2, 3)]
        for i, h in enumerate(hosts, 1):
            lab.add_link(f"h{i}:eth0", "s1")
            h.ip(f"addr add 10.0.0.{i}/24 dev eth0")
        ping = await hosts[0].ping("10.0.0.3", count=3, interval=0.2)
        print(s1.bridge("link"))
        fdb = s1.bridge("fdb show br br0")
        print(fdb)
        stats = s1.dev("br0").priv.statistics()
        for name, port in stats.ports.items():
            print(f"{name}: flooded {port.flood_broadcast} broadcasts, switched {port.forward}")
        await trio.sleep(60)
        aged = s1.bridge("fdb show br br0")
        print(aged)
        return {"ping": ping, "fdb": fdb, "aged": aged, "stats": stats}


if __name__ == "__main__":
    netstack.run(main)
