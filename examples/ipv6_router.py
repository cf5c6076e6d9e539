"""Two hosts and a router, IPv6 only: SLAAC from router advertisements, ping6, UDP.

    a ── eth0 r eth1 ── b
     2001:db8:1::/64   2001:db8:2::/64

The router has static addresses and forwards (``net.ipv6.conf.all.forwarding=1``);
like radvd it advertises each link's prefix (``send_router_advertisement``).
The hosts configure themselves: a default route via r's link-local address
(``proto ra``, expiring with the router lifetime) and a ``dynamic mngtmpaddr``
address from the prefix and their EUI-64 interface identifier, after DAD.
Then a pings b, sends it a UDP datagram, and pings with hop limit 1 to see r's
"time exceeded"; the counters of /proc/net/snmp6 show what happened.

    python examples/ipv6_router.py
"""

from __future__ import annotations

import trio

import netstack
from netstack.host.radvd import send_router_advertisement
from netstack.socket import AF_INET6


def global_address(host: netstack.Host) -> str:
    shown = host.ip("-6 addr show dev eth0 scope global")
    return shown.split("inet6 ")[1].split("/")[0]


async def main() -> dict[str, object]:
    async with netstack.open_lab() as lab:
        a, r, b = lab.add_host("a"), lab.add_host("r"), lab.add_host("b")
        lab.add_link("a:eth0", "r:eth0")
        lab.add_link("r:eth1", "b:eth0")
        r.ip("-6 addr add 2001:db8:1::1/64 dev eth0")
        r.ip("-6 addr add 2001:db8:2::1/64 dev eth1")
        r.sysctl("net.ipv6.conf.all.forwarding=1")
        await trio.sleep(2)  # link-locals and r's addresses pass DAD
        await send_router_advertisement(r, "eth0", ("2001:db8:1::/64",))
        await send_router_advertisement(r, "eth1", ("2001:db8:2::/64",))
        await trio.sleep(2)  # the SLAAC addresses pass DAD
        print(a.ip("-6 addr show dev eth0"))
        print(a.ip("-6 route"))
        a_addr, b_addr = global_address(a), global_address(b)

        out: list[str] = []
        ping = await a.ping(b_addr, count=3, output=out)
        print("\n".join(out))

        server = b.socket(AF_INET6)
        await server.bind(("::", 5000))
        client = a.socket(AF_INET6)
        await client.sendto(b"hello over IPv6", (b_addr, 5000))
        with trio.fail_after(1):
            data, peer = await server.recvfrom(2048)
        print(f"\nb received {data!r} from [{peer[0]}]:{peer[1]}")

        out = []
        await a.ping(b_addr, ttl=1, output=out)
        print("\n" + "\n".join(out[:2]))
        print("\n" + a.ip("-6 neigh"))
        for h in (a, r, b):
            counters = {
                k: v
                for k, v in h.nstat().items()
                if k.startswith(("Ip6In", "Ip6Out", "Icmp6", "Udp6")) and "Octets" not in k
            }
            print(f"{h.name}: {counters}")
        return {"ping": ping, "data": data, "a": a, "r": r, "b": b, "a_addr": a_addr}


if __name__ == "__main__":
    netstack.run(main)
