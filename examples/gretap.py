"""Ethernet over GRE (gretap): ARP and IPv4 of the hosts behind it, inside GRE.

    a 192.0.2.1 ═══ gretap1 (key 7) ═══ b 192.0.2.2
      10.20.0.1/24                      10.20.0.2/24

A gretap device is an Ethernet device whose frames travel in GRE with
protocol 0x6558 (transparent Ethernet bridging). netstack has no bridge yet,
so the addresses sit on the gretap devices themselves: ``a`` resolves
10.20.0.2 with ARP *through the tunnel* and then pings it. The capture on the
underlay shows each inner Ethernet frame in its GRE packet.

    python examples/gretap.py
"""

from __future__ import annotations

import dpkt

import netstack


async def main() -> dict[str, object]:
    async with netstack.open_lab() as lab:
        a, b = lab.add_host("a"), lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0")
        a.ip("addr add 192.0.2.1/24 dev eth0")
        b.ip("addr add 192.0.2.2/24 dev eth0")
        a.ip("link add gretap1 type gretap remote 192.0.2.2 local 192.0.2.1 key 7")
        b.ip("link add gretap1 type gretap remote 192.0.2.1 local 192.0.2.2 key 7")
        for h, addr in ((a, "10.20.0.1/24"), (b, "10.20.0.2/24")):
            h.ip("link set gretap1 up")
            h.ip(f"addr add {addr} dev gretap1")
        print(a.ip("-d link show gretap1"))

        capture = a.capture("eth0")
        out: list[str] = []
        ping = await a.ping("10.20.0.2", count=2, output=out)
        print("\n".join(out))
        print(a.ip("neigh show dev gretap1"))

        inner_types = []
        print("On a's underlay (eth0):")
        for _, frame, outgoing in capture.frames:
            ip = dpkt.ethernet.Ethernet(frame).data
            if not isinstance(ip, dpkt.ip.IP) or ip.p != 47:
                continue
            g = ip.data
            inner = dpkt.ethernet.Ethernet(bytes(g.data))
            inner_types.append(inner.type)
            what = (
                "ARP"
                if inner.type == 0x0806
                else "IPv4"
                if inner.type == 0x0800
                else hex(inner.type)
            )
            print(
                f"  {'out' if outgoing else 'in '} GRE proto {g.p:#06x} key {g.key}: "
                f"{dpkt.utils.mac_to_str(inner.src)} > {dpkt.utils.mac_to_str(inner.dst)} {what}"
            )
        return {"ping": ping, "inner_types": inner_types}


if __name__ == "__main__":
    netstack.run(main)
