"""Two sites joined by a GRE tunnel across a router.

    s1 10.1.0.1 ── gw1 ══ gre1 ══ r ══ gw2 ── s2 10.2.0.1
                  192.0.2.1       198.51.100.2

The gateways build the tunnel with ``ip link add … type gre`` (gw1) and
``ip tunnel add … mode gre`` (gw2) — the two creation paths — with key 42 and
checksums. s1 pings s2 and sends it a UDP datagram; the capture on gw1's
underlay shows each packet in its outer IPv4 + GRE header. The router in the
middle only ever sees 192.0.2.1 ↔ 198.51.100.2.

    python examples/gre_two_sites.py [--pcap gre.pcap]
"""

from __future__ import annotations

import sys

import dpkt
import trio

import netstack


async def main(pcap: str | None = None) -> dict[str, object]:
    async with netstack.open_lab() as lab:
        s1, gw1, r, gw2, s2 = (lab.add_host(n) for n in ("s1", "gw1", "r", "gw2", "s2"))
        lab.add_link("s1:eth0", "gw1:eth0")
        lab.add_link("gw1:eth1", "r:eth0")
        lab.add_link("r:eth1", "gw2:eth1", kind="nic", rate=100e6, delay=0.005)
        lab.add_link("gw2:eth0", "s2:eth0")
        s1.ip("addr add 10.1.0.1/24 dev eth0")
        s1.ip("route add default via 10.1.0.254")
        s2.ip("addr add 10.2.0.1/24 dev eth0")
        s2.ip("route add default via 10.2.0.254")
        r.ip("addr add 192.0.2.254/24 dev eth0")
        r.ip("addr add 198.51.100.254/24 dev eth1")
        gw1.ip("addr add 10.1.0.254/24 dev eth0")
        gw1.ip("addr add 192.0.2.1/24 dev eth1")
        gw1.ip("route add default via 192.0.2.254")
        gw2.ip("addr add 10.2.0.254/24 dev eth0")
        gw2.ip("addr add 198.51.100.2/24 dev eth1")
        gw2.ip("route add default via 198.51.100.254")
        for h in (gw1, r, gw2):
            h.sysctl("net.ipv4.ip_forward=1")

        # the rtnetlink way ...
        gw1.ip("link add gre1 type gre remote 198.51.100.2 local 192.0.2.1 key 42 csum")
        # ... and the ioctl way
        gw2.ip("tunnel add gre1 mode gre remote 192.0.2.1 local 198.51.100.2 key 42 csum")
        for gw, peer_net in ((gw1, "10.2.0.0/24"), (gw2, "10.1.0.0/24")):
            gw.ip("link set gre1 up")
            gw.ip(f"route add {peer_net} dev gre1")
        print(gw2.ip("tunnel show gre1"))
        print(gw1.ip("-d link show gre1"))

        capture = gw1.capture("eth1", pcap, keep=True)
        out: list[str] = []
        ping = await s1.ping("10.2.0.1", count=3, output=out)
        print("\n".join(out))
        server = s2.socket()
        await server.bind(("0.0.0.0", 5000))
        client = s1.socket()
        await client.sendto(b"hello from site 1", ("10.2.0.1", 5000))
        with trio.fail_after(1):
            data, peer = await server.recvfrom(2048)
        print(f"\ns2 received {data!r} from {peer[0]}:{peer[1]}")

        print("\nOn gw1's underlay (eth1):")
        grams = []
        for _, frame, outgoing in capture.frames:
            ip = dpkt.ethernet.Ethernet(frame).data
            if not isinstance(ip, dpkt.ip.IP) or ip.p != 47:
                continue
            g, inner = ip.data, ip.data.data
            grams.append(g)
            print(
                f"  {'out' if outgoing else 'in '} {dpkt.utils.inet_to_str(ip.src)} > "
                f"{dpkt.utils.inet_to_str(ip.dst)} GRE key {g.key} csum {g.sum:#06x}: "
                f"{dpkt.utils.inet_to_str(inner.src)} > {dpkt.utils.inet_to_str(inner.dst)} "
                f"{type(inner.data).__name__}"
            )
        capture.stop()
        print("\n" + gw1.ip("-s tunnel show"))
        return {"ping": ping, "data": data, "gre": grams, "gw1": gw1, "gw2": gw2}


if __name__ == "__main__":
    path = sys.argv[2] if len(sys.argv) > 2 and sys.argv[1] == "--pcap" else None
    netstack.run(main, path)
