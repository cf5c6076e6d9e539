"""Two IPv6 sites joined by a 6in4 (SIT) tunnel across an IPv4-only router.

    s1 2001:db8:1::1 ── gw1 ══ sit1 ══ r ══ gw2 ── s2 2001:db8:2::2
                      192.0.2.1          198.51.100.2
                                 (MTU 1400 on r ↔ gw2)

The gateways build the tunnel both ways (``ip link add … type sit`` on gw1,
``ip tunnel add … mode sit`` on gw2) and route the other site's prefix into
it with ``ip -6 route add … dev sit1``. s1 pings s2 and sends it a UDP
datagram; the capture on gw1's underlay shows each IPv6 packet inside an
IPv4 header with protocol 41. Then s1 pings with 1400-byte payloads: the
6in4 packets do not fit the 1400-byte link, r answers "fragmentation
needed", gw1's tunnel learns the underlay's path MTU and tells s1 "packet
too big, mtu 1380"; s1's route learns it and s1 fragments from then on.

    python examples/sit_6in4.py [--pcap sit.pcap]
"""

from __future__ import annotations

import sys

import dpkt
import trio

import netstack
from netstack.socket import AF_INET6


async def main(pcap: str | None = None) -> dict[str, object]:
    async with netstack.open_lab() as lab:
        s1, gw1, r, gw2, s2 = (lab.add_host(n) for n in ("s1", "gw1", "r", "gw2", "s2"))
        lab.add_link("s1:eth0", "gw1:eth0")
        lab.add_link("gw1:eth1", "r:eth0")
        lab.add_link("r:eth1", "gw2:eth1", mtu=1400)
        lab.add_link("gw2:eth0", "s2:eth0")
        # the IPv4 underlay
        r.ip("addr add 192.0.2.254/24 dev eth0")
        r.ip("addr add 198.51.100.254/24 dev eth1")
        r.sysctl("net.ipv4.ip_forward=1")
        gw1.ip("addr add 192.0.2.1/24 dev eth1")
        gw1.ip("route add default via 192.0.2.254")
        gw2.ip("addr add 198.51.100.2/24 dev eth1")
        gw2.ip("route add default via 198.51.100.254")
        # the IPv6 sites
        s1.ip("-6 addr add 2001:db8:1::1/64 dev eth0")
        s1.ip("-6 route add default via 2001:db8:1::fe")
        s2.ip("-6 addr add 2001:db8:2::2/64 dev eth0")
        s2.ip("-6 route add default via 2001:db8:2::fe")
        gw1.ip("-6 addr add 2001:db8:1::fe/64 dev eth0")
        gw2.ip("-6 addr add 2001:db8:2::fe/64 dev eth0")
        for gw in (gw1, gw2):
            gw.sysctl("net.ipv6.conf.all.forwarding=1")
        # the tunnel: the rtnetlink way and the ioctl way
        gw1.ip("link add sit1 type sit remote 198.51.100.2 local 192.0.2.1")
        gw2.ip("tunnel add sit1 mode sit remote 192.0.2.1 local 198.51.100.2")
        for gw, peer_net in ((gw1, "2001:db8:2::/64"), (gw2, "2001:db8:1::/64")):
            gw.ip("link set sit1 up")
            gw.ip(f"-6 route add {peer_net} dev sit1")
        await trio.sleep(3)  # DAD
        print(gw1.ip("-6 addr show dev sit1"))
        print(gw1.ip("-6 route show dev sit1"))

        capture = gw1.capture("eth1", pcap, keep=True)
        out: list[str] = []
        ping = await s1.ping("2001:db8:2::2", count=3, output=out)
        print("\n".join(out))
        server = s2.socket(AF_INET6)
        await server.bind(("::", 5000))
        client = s1.socket(AF_INET6)
        await client.sendto(b"hello over 6in4", ("2001:db8:2::2", 5000))
        with trio.fail_after(1):
            data, peer = await server.recvfrom(2048)
        print(f"\ns2 received {data!r} from [{peer[0]}]:{peer[1]}")

        out = []
        big = await s1.ping("2001:db8:2::2", count=5, size=1400, output=out)
        print("\n" + "\n".join(out))
        print("\n" + s1.ip("-6 route get 2001:db8:2::2"))

        print("On gw1's underlay (eth1):")
        sixin4 = []
        for _, frame, outgoing in capture.frames:
            ip = dpkt.ethernet.Ethernet(frame).data
            if not isinstance(ip, dpkt.ip.IP) or ip.p != 41:
                continue
            inner = dpkt.ip6.IP6(bytes(ip.data))
            sixin4.append((ip, inner))
            if len(sixin4) <= 8:
                print(
                    f"  {'out' if outgoing else 'in '} {dpkt.utils.inet_to_str(ip.src)} > "
                    f"{dpkt.utils.inet_to_str(ip.dst)} proto 41 ttl {ip.ttl}: "
                    f"{dpkt.utils.inet_to_str(inner.src)} > {dpkt.utils.inet_to_str(inner.dst)} "
                    f"{type(inner.data).__name__} hlim {inner.hlim}"
                )
        capture.stop()
        print("\n" + gw1.ip("-s link show sit1"))
        counters = {k: v for k, v in s1.nstat().items() if k.startswith(("Ip6Frag", "Icmp6"))}
        print("s1:", counters)
        return {
            "ping": ping,
            "big": big,
            "data": data,
            "sixin4": sixin4,
            "s1": s1,
            "gw1": gw1,
            "gw2": gw2,
            "s2": s2,
        }


if __name__ == "__main__":
    path = sys.argv[2] if len(sys.argv) > 2 and sys.argv[1] == "--pcap" else None
    netstack.run(main, path)
