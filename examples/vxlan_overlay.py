"""A VXLAN overlay: one Ethernet segment stretched across a routed underlay.

    left 172.16.0.1 ─ h1 [br0: eth1 + vxlan0]        [br0: vxlan0 + eth1] h2 ─ right 172.16.0.2
                         192.0.2.1 ─── r ─── 198.51.100.2
                              VNI 42, UDP 4789

h1 and h2 are VTEPs: each bridges its local port with a ``vxlan0`` (VNI 42,
IANA port 4789, the other VTEP as ``remote``), so left and right share one
LAN although r routes between 192.0.2.0/24 and 198.51.100.0/24. The first
ping's ARP request is flooded by h1's bridge into vxlan0, whose default FDB
entry (``00:00:00:00:00:00 dst 198.51.100.2``) sends it to h2; each VXLAN
device learns the other side's MACs behind the outer source address
(``bridge fdb show dev vxlan0``), each bridge learns them behind ``vxlan0``.
The outer UDP source port comes from the inner flow's hash: one port per flow.

    python examples/vxlan_overlay.py
"""

from __future__ import annotations

import trio

import netstack

IPV4_ONLY: dict[str, str | int] = {"net.ipv6.conf.all.disable_ipv6": 1}


async def main() -> dict[str, object]:
    async with netstack.open_lab() as lab:
        h1, r, h2, left, right = (
            lab.add_host(n, sysctls=IPV4_ONLY) for n in ("h1", "r", "h2", "left", "right")
        )
        lab.add_link("h1:eth0", "r:eth0")
        lab.add_link("r:eth1", "h2:eth0")
        lab.add_link("left:eth0", "h1:eth1")
        lab.add_link("right:eth0", "h2:eth1")
        r.ip("addr add 192.0.2.254/24 dev eth0")
        r.ip("addr add 198.51.100.254/24 dev eth1")
        r.sysctl("net.ipv4.ip_forward=1")
        for vtep, addr, gw, remote in (
            (h1, "192.0.2.1/24", "192.0.2.254", "198.51.100.2"),
            (h2, "198.51.100.2/24", "198.51.100.254", "192.0.2.1"),
        ):
            vtep.ip(f"addr add {addr} dev eth0")
            vtep.ip(f"route add default via {gw}")
            vtep.ip(f"link add vxlan0 type vxlan id 42 dstport 4789 remote {remote} dev eth0")
            vtep.ip("link add br0 type bridge")
            vtep.ip("link set vxlan0 master br0")
            vtep.ip("link set eth1 master br0")
            for dev in ("vxlan0", "eth1", "br0"):
                vtep.ip(f"link set {dev} up")
        left.ip("addr add 172.16.0.1/24 dev eth0")
        right.ip("addr add 172.16.0.2/24 dev eth0")
        print(h1.ip("-d link show vxlan0"))
        underlay = h1.capture("eth0")
        ping = await left.ping("172.16.0.2", count=3, interval=0.2)
        print(f"left → right: {ping.received}/{ping.transmitted} replies")
        vxlan_fdb = h2.bridge("fdb show dev vxlan0")
        print(vxlan_fdb)
        print(h2.bridge("fdb show br br0"))
        server = right.socket()
        await server.bind(("0.0.0.0", 5000))
        client = left.socket()
        await client.sendto(b"across the overlay", ("172.16.0.2", 5000))
        with trio.fail_after(1):
            data, _ = await server.recvfrom(100)
        print(data.decode())
        stats = h1.dev("vxlan0").statistics()
        print(f"h1 vxlan0: tx {stats.tx_packets} packets, rx {stats.rx_packets} packets")
        return {
            "ping": ping,
            "vxlan_fdb": vxlan_fdb,
            "data": data,
            "stats": stats,
            "frames": list(underlay.frames),
        }


if __name__ == "__main__":
    netstack.run(main)
