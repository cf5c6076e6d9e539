"""Two VLANs on one switch, and a router on a stick between them.

    a 10.0.10.1 ── s1-eth1 (VLAN 10, untagged)
    b 10.0.20.2 ── s1-eth2 (VLAN 20, untagged)  s1 (br0, vlan_filtering 1)
    r eth0      ── s1-eth3 (trunk: 10 and 20 tagged)
       eth0.10 10.0.10.254, eth0.20 10.0.20.254

a and b cannot reach each other through the switch (the VLANs keep their
broadcasts and unicast apart); r routes between its two 802.1Q
sub-interfaces, so a → b works through r, one hop. The capture on the trunk
shows each frame with its 802.1Q tag.

    python examples/vlan_router_on_a_stick.py
"""

from __future__ import annotations

import struct

import netstack

IPV4_ONLY: dict[str, str | int] = {"net.ipv6.conf.all.disable_ipv6": 1}


async def main() -> dict[str, object]:
    async with netstack.open_lab() as lab:
        s1 = lab.add_switch("s1", vlan_filtering=True, sysctls=IPV4_ONLY)
        r = lab.add_host("r", sysctls={**IPV4_ONLY, "net.ipv4.ip_forward": 1})
        a, b = lab.add_host("a", sysctls=IPV4_ONLY), lab.add_host("b", sysctls=IPV4_ONLY)
        for h in (a, b, r):
            lab.add_link(f"{h.name}:eth0", "s1")
        s1.bridge("vlan add dev s1-eth1 vid 10 pvid untagged")
        s1.bridge("vlan add dev s1-eth2 vid 20 pvid untagged")
        s1.bridge("vlan del dev s1-eth1 vid 1")
        s1.bridge("vlan del dev s1-eth2 vid 1")
        s1.bridge("vlan add dev s1-eth3 vid 10")
        s1.bridge("vlan add dev s1-eth3 vid 20")
        for vid in (10, 20):
            r.ip(f"link add link eth0 name eth0.{vid} type vlan id {vid}")
            r.ip(f"addr add 10.0.{vid}.254/24 dev eth0.{vid}")
            r.ip(f"link set eth0.{vid} up")
        a.ip("addr add 10.0.10.1/24 dev eth0")
        a.ip("route add default via 10.0.10.254")
        b.ip("addr add 10.0.20.2/24 dev eth0")
        b.ip("route add default via 10.0.20.254")
        print(s1.bridge("vlan show"))
        trunk = s1.capture("s1-eth3")
        ping = await a.ping("10.0.20.2", count=2, interval=0.2)
        tags = sorted({struct.unpack_from("!H", f, 14)[0] & 0xFFF for _, f, _ in trunk.frames})
        print(f"VLANs seen tagged on the trunk: {tags}")
        print(r.ip("-d link show eth0.10"))
        return {"ping": ping, "tags": tags}


if __name__ == "__main__":
    netstack.run(main)
