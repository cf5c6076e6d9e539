"""One-way UDP through a Linux bridge and through VXLAN, beside the same over one veth pair.

Three topologies, the same socket-to-socket UDP stream (200-byte payloads,
``sendmmsg``/``recvmmsg`` batches of 64), packets per second of wall time in
functional mode:

* ``veth``: a ─ b, one veth pair (the baseline of benchmarks/udp_pps.py);
* ``bridge``: a ─ s1 ─ b, the switch a host running br0: two veth hops and
  the bridge's rx_handler, FDB lookup and forward in between;
* ``vxlan``: a ═ b over one veth pair, the stream on vxlan0 (VNI 42, UDP
  4789, udpcsum): FDB lookup, flow-hash source port, outer UDP/IPv4 and the
  route on the way out; the encap socket's ``vxlan_rcv``, learning and the
  GRO cell on the way in.

    python benchmarks/bridge_pps.py [--packets N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import netstack

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import stream

IPV4_ONLY: dict[str, str | int] = {"net.ipv6.conf.all.disable_ipv6": 1}


async def run_once(packets: int, kind: str) -> float:
    async with netstack.open_lab() as lab:
        a = lab.add_host("a", sysctls=IPV4_ONLY)
        b = lab.add_host("b", sysctls=IPV4_ONLY)
        if kind == "bridge":
            lab.add_switch("s1", sysctls=IPV4_ONLY)
            lab.add_link("a:eth0", "s1")
            lab.add_link("b:eth0", "s1")
        else:
            lab.add_link("a:eth0", "b:eth0")
        a.ip("addr add 10.0.0.1/24 dev eth0")
        b.ip("addr add 10.0.0.2/24 dev eth0")
        dst = "10.0.0.2"
        if kind == "vxlan":
            for h, me, peer in ((a, "1", "10.0.0.2"), (b, "2", "10.0.0.1")):
                h.ip(f"link add vxlan0 type vxlan id 42 dstport 4789 remote {peer} dev eth0")
                h.ip(f"addr add 192.168.42.{me}/24 dev vxlan0")
                h.ip("link set vxlan0 up")
            dst = "192.168.42.2"
        elapsed, _ = await stream.udp_stream(a, b, dst, packets)
        return packets / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--packets", type=int, default=20000)
    args = parser.parse_args()
    for kind in ("veth", "bridge", "vxlan"):
        pps = netstack.run(run_once, args.packets, kind)
        print(
            f"{kind:<7} {pps:>10,.0f} packets/s  (UDP, 200-byte payload, batches of {stream.BATCH})"
        )


if __name__ == "__main__":
    main()
