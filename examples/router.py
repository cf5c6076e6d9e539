"""Three hosts and a router: forwarding, TTL, and the ICMP errors a router sends.

    a 10.0.1.1 ── r (10.0.1.254 | 10.0.2.254) ── b 10.0.2.2

The router decrements the TTL (a's pings arrive at b with TTL 63), answers a
TTL-1 probe with "time exceeded", and answers a destination it has no route
for with "net unreachable".

    python examples/router.py
"""

from __future__ import annotations

import netstack


async def main() -> dict[str, object]:
    async with netstack.open_lab() as lab:
        a, r, b = lab.add_host("a"), lab.add_host("r"), lab.add_host("b")
        lab.add_link("a:eth0", "r:eth0")
        lab.add_link("r:eth1", "b:eth0", kind="nic", rate=100e6, delay=0.002)
        a.ip("addr add 10.0.1.1/24 dev eth0")
        a.ip("route add default via 10.0.1.254")
        r.ip("addr add 10.0.1.254/24 dev eth0")
        r.ip("addr add 10.0.2.254/24 dev eth1")
        r.sysctl("net.ipv4.ip_forward=1")
        b.ip("addr add 10.0.2.2/24 dev eth0")
        b.ip("route add default via 10.0.2.254")

        capture = b.capture("eth0")
        out: list[str] = []
        ok = await a.ping("10.0.2.2", count=2, output=out)
        ttl1 = await a.ping("10.0.2.2", ttl=1, output=out)
        unreach = await a.ping("192.0.2.1", output=out)
        print("\n".join(out))
        ttls = {
            frame[22]
            for _, frame, outgoing in capture.frames
            if not outgoing and frame[12:14] == b"\x08\x00" and frame[23] == 1
        }
        print(f"\nTTL of a's echo requests as b receives them: {sorted(ttls)}")
        print(
            f"router forwarded {r.snmp()['Ip'].ForwDatagrams} datagrams, "
            f"sent {r.snmp()['Icmp'].OutTimeExcds} time-exceeded and "
            f"{r.snmp()['Icmp'].OutDestUnreachs} unreachable errors"
        )
        return {"ok": ok, "ttl1": ttl1, "unreach": unreach, "ttls": ttls}


if __name__ == "__main__":
    netstack.run(main)
