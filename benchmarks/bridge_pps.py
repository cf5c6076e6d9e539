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
    python benchmarks/bridge_pps.py --arp [--requests N] [--profile] [--callgrind [--flood-only]]

``--arp`` measures instead the broadcast fan-out of ``benchmarks/lab_scale.py``'s
pings (issue 18): one leaf of that fabric (a router with ``br0``,
10.0.0.254/24, over 40 hosts), and its first host sending ARP requests for an
address nobody has, in batches of 64 (one virtual millisecond between
batches, so every ring drains). Each request is flooded by the bridge to the
39 other ports (39 clones: ``deliver_clone``, ``__br_forward``,
``dev_queue_xmit``, ``veth_xmit``) and received 40 times (39 hosts and the
leaf's ``br0``: ``veth_poll``, ``__netif_receive_skb_core``, ``arp_rcv``,
``arp_process``, whose route lookup finds no route and whose
``__neigh_lookup`` finds no entry). It prints the CPU time per request (and
per port, a fortieth of it) and, with ``--profile``, the Python function
calls per request (cProfile's count) and the profile; ``--callgrind`` runs it
under ``valgrind --tool=callgrind`` with 0 and N requests (1,280 by default
there) and prints the instructions per request and per port; with
``--flood-only`` it counts, in one run, the requests alone (after a batch
that warms the interpreter up; 320 requests by default there): no lab build
to subtract, so a quicker and steadier figure, a little below the other.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

import trio

import netstack
from netstack.ipv4 import ipv4_of
from netstack.ipv4.arp import arp_send
from netstack.wire.arp import ARPOP_REQUEST
from netstack.wire.ethernet import ETH_P_ARP
from netstack.wire.ipv4 import aton

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import anchors, lab_scale, stream

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


ARP_PORTS = 40  # hosts under the leaf: 39 clones and 40 receptions a request
ARP_BATCH = 64


async def arp_flood(
    requests: int, prof: cProfile.Profile | None = None, instrument: bool = False
) -> float:
    """Flood *requests* ARP requests through one leaf's bridge; return their CPU seconds.

    With *instrument* (a run under callgrind with ``--instr-atstart=no``) a
    batch more warms up first and callgrind counts the requests alone.
    """
    async with netstack.open_lab() as lab:
        _, _, hosts = lab_scale.build_fabric(lab, ARP_PORTS, per_leaf=ARP_PORTS, spines=1)
        await trio.sleep(1)  # carriers up, the lab frozen
        h = hosts[0]
        ipv4, dev = ipv4_of(h.net), h.dev("eth0")
        sip, tip, sha = aton("10.0.0.1"), aton("10.0.0.200"), bytes(dev.dev_addr)
        warm = ARP_BATCH if instrument else 0
        if instrument:
            for _ in range(warm):
                arp_send(ipv4, ARPOP_REQUEST, ETH_P_ARP, tip, dev, sip, None, sha, None)
            await trio.sleep(0.001)
            stream.callgrind_instrumentation(True)
        cpu = time.process_time()
        if prof is not None:
            prof.enable()
        sent = 0
        while sent < requests:
            for _ in range(min(ARP_BATCH, requests - sent)):
                arp_send(ipv4, ARPOP_REQUEST, ETH_P_ARP, tip, dev, sip, None, sha, None)
            sent += ARP_BATCH
            await trio.sleep(0.001)
        if prof is not None:
            prof.disable()
        cpu = time.process_time() - cpu
        if instrument:
            stream.callgrind_instrumentation(False)
        got = sum(ipv4_of(x.net).arp_tbl.lookups for x in hosts[1:])
        assert got == (ARP_PORTS - 1) * (warm + requests), got
        return cpu


def arp_main(
    requests: int, profile: bool, callgrind: bool, flood_only: bool, instrument: bool = False
) -> None:
    if callgrind and flood_only:
        argv = [__file__, "--arp", "--instrument", "--requests", str(requests)]
        per = anchors.callgrind_instructions(argv, instr_atstart=False) / requests
        print(
            f"ARP request flooded to {ARP_PORTS} ports: {per:,.0f} instructions per request, "
            f"{per / ARP_PORTS:,.0f} per port (callgrind, the {requests} requests alone)"
        )
        return
    if callgrind:
        argv = [__file__, "--arp", "--requests"]
        base = anchors.callgrind_instructions([*argv, "0"])
        total = anchors.callgrind_instructions([*argv, str(requests)])
        per = (total - base) / requests
        print(
            f"ARP request flooded to {ARP_PORTS} ports: {per:,.0f} instructions per request, "
            f"{per / ARP_PORTS:,.0f} per port (callgrind, {requests} requests less 0)"
        )
        return
    prof = cProfile.Profile(time.process_time) if profile else None
    cpu = netstack.run(arp_flood, requests, prof, instrument)
    if requests:
        print(
            f"ARP request flooded to {ARP_PORTS} ports: {requests} in {cpu:.2f} s CPU = "
            f"{1e6 * cpu / requests:,.0f} µs per request, {1e6 * cpu / requests / ARP_PORTS:.2f} "
            "µs per port"
        )
    if prof is not None and requests:
        stats = pstats.Stats(prof)
        print(f"  {stats.total_calls / requests:,.1f} Python calls per request (cProfile)")  # type: ignore[attr-defined]
        stats.sort_stats("tottime").print_stats(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--packets", type=int, default=20000)
    parser.add_argument("--arp", action="store_true", help="the ARP broadcast fan-out instead")
    parser.add_argument("--requests", type=int, default=2000, help="ARP requests (--arp)")
    parser.add_argument("--profile", action="store_true", help="cProfile the ARP flood")
    parser.add_argument("--callgrind", action="store_true", help="instructions per ARP request")
    parser.add_argument(
        "--flood-only", action="store_true", help="callgrind counts the requests alone (--arp)"
    )
    parser.add_argument("--instrument", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.arp:
        requests = args.requests
        if args.callgrind and requests == parser.get_default("requests"):
            requests = 320 if args.flood_only else 1280
        arp_main(requests, args.profile, args.callgrind, args.flood_only, args.instrument)
        return
    for kind in ("veth", "bridge", "vxlan"):
        pps = netstack.run(run_once, args.packets, kind)
        print(
            f"{kind:<7} {pps:>10,.0f} packets/s  (UDP, 200-byte payload, batches of {stream.BATCH})"
        )


if __name__ == "__main__":
    main()
