"""A soak: tens of hosts and routers with mixed traffic for an hour of virtual time.

    python benchmarks/soak.py [--minutes 60] [--hosts 24] [--edges 3] [--load 2]
                              [--report 5] [--seed 0]

The lab: a core router ``r0`` and ``--edges`` edge routers, each edge serving
``hosts / edges`` hosts (one /24 and one veth pair each); every host runs a UDP
sink (port 9000), a TCP sink (8000) and a TCP echo-less server for short
connections (8001). Per host, at ``--load 1`` (twice as often at 2):

* a ping (ICMP echo on a ping socket) every 4 s to a random host,
* a 200-byte UDP datagram every 0.4 s to a random host,
* one long TCP connection to its neighbour, 2 KB every 2 s,
* a short TCP connection every 20 s: connect, send 1 KB, close; the server
  side reads it all. Every one must succeed (within 10 s).

Every ``--report`` virtual minutes it prints the Python heap (``tracemalloc``,
after a full ``gc.collect()``), Trio tasks, pending kernel timers, and the
tables that could grow (neighbours, next-hop exceptions, inetpeers,
reassembly queues, TCP sockets and TIME_WAIT, SYN queues, ehash). At the end
it checks that the heap stayed within ±5 % of its mean over the last three
quarters of the run and that no short connection failed, and exits 1 if not.
"""

from __future__ import annotations

import argparse
import gc
import random
import struct
import sys
import time
import tracemalloc
from dataclasses import dataclass, field
from typing import Any

import trio

import netstack
from netstack.core.sock import AF_INET, SOCK_DGRAM, SOCK_STREAM
from netstack.host import Host, Lab
from netstack.ipv4 import ipv4_of
from netstack.socket import IPPROTO_ICMP, Socket
from netstack.tcp import tcp_of
from netstack.tcp.sock import RequestSock, TcpSock, TimewaitSock

IPV4_ONLY: dict[str, str | int] = {"net.ipv6.conf.all.disable_ipv6": 1}


@dataclass
class Stats:
    pings: int = 0
    pongs: int = 0
    udp_sent: int = 0
    udp_recv: int = 0
    long_bytes: int = 0
    short_ok: int = 0
    short_fail: int = 0
    short_served: int = 0
    samples: list[tuple[float, int]] = field(default_factory=list)


def build(lab: Lab, nhosts: int, nedges: int) -> list[tuple[Host, str]]:
    """The core, the edges and the hosts; returns (host, address) pairs."""
    core = lab.add_host("r0", sysctls=IPV4_ONLY)
    core.sysctl("net.ipv4.ip_forward=1")
    hosts: list[tuple[Host, str]] = []
    per_edge = -(-nhosts // nedges)
    for e in range(1, nedges + 1):
        edge = lab.add_host(f"r{e}", sysctls=IPV4_ONLY)
        edge.sysctl("net.ipv4.ip_forward=1")
        lab.add_link(f"r0:eth{e}", f"r{e}:eth0")
        core.ip(f"addr add 10.255.{e}.1/30 dev eth{e}")
        edge.ip(f"addr add 10.255.{e}.2/30 dev eth0")
        edge.ip(f"route add default via 10.255.{e}.1")
        core.ip(f"route add 10.{e}.0.0/16 via 10.255.{e}.2")
        for i in range(1, per_edge + 1):
            if len(hosts) == nhosts:
                break
            h = lab.add_host(f"h{e}_{i}", sysctls=IPV4_ONLY)
            lab.add_link(f"r{e}:eth{i}", f"{h.name}:eth0")
            edge.ip(f"addr add 10.{e}.{i}.1/24 dev eth{i}")
            h.ip(f"addr add 10.{e}.{i}.2/24 dev eth0")
            h.ip(f"route add default via 10.{e}.{i}.1")
            hosts.append((h, f"10.{e}.{i}.2"))
    return hosts


def icmp_echo(ident: int, seq: int) -> bytes:
    body = struct.pack("!BBHHH", 8, 0, 0, ident, seq) + b"soak" * 8
    s = sum(struct.unpack(f"!{len(body) // 2}H", body))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return body[:2] + struct.pack("!H", ~s & 0xFFFF) + body[4:]


async def drain(sock: Socket, counter: list[int], size: int = 65536) -> None:
    while True:
        data = await sock.recv(size)
        if not data:
            return
        counter[0] += len(data)


async def host_servers(h: Host, st: Stats, nursery: trio.Nursery) -> None:
    udp = h.socket(AF_INET, SOCK_DGRAM)
    await udp.bind(("0.0.0.0", 9000))

    async def udp_sink() -> None:
        while True:
            await udp.recv(2048)
            st.udp_recv += 1

    async def accept_loop(srv: Socket, short: bool) -> None:
        while True:
            conn, _ = await srv.accept()
            nursery.start_soon(serve_conn, conn, short)

    async def serve_conn(conn: Socket, short: bool) -> None:
        counter = [0]
        await drain(conn, counter)
        conn.close()
        if short and counter[0] == 1024:
            st.short_served += 1

    for port, short in ((8000, False), (8001, True)):
        srv = h.socket(AF_INET, SOCK_STREAM)
        await srv.bind(("0.0.0.0", port))
        srv.listen(64)
        nursery.start_soon(accept_loop, srv, short)
    nursery.start_soon(udp_sink)


async def host_clients(
    h: Host,
    me: str,
    peers: list[str],
    neighbour: str,
    st: Stats,
    load: float,
    rng: random.Random,
    nursery: trio.Nursery,
) -> None:
    ping = h.socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP)
    udp = h.socket(AF_INET, SOCK_DGRAM)
    others = [p for p in peers if p != me]

    async def pinger() -> None:
        seq = 0
        await trio.sleep(rng.random() * 4)
        while True:
            seq = (seq + 1) & 0xFFFF
            await ping.sendto(icmp_echo(1, seq), (rng.choice(others), 0))
            st.pings += 1
            await trio.sleep(4 / load)

    async def ponger() -> None:
        while True:
            await ping.recv(2048)
            st.pongs += 1

    async def udp_sender() -> None:
        await trio.sleep(rng.random())
        while True:
            await udp.sendto(b"u" * 200, (rng.choice(others), 9000))
            st.udp_sent += 1
            await trio.sleep(0.4 / load)

    async def long_conn() -> None:
        c = h.socket(AF_INET, SOCK_STREAM)
        await c.connect((neighbour, 8000))
        chunk = b"L" * 2048
        while True:
            await c.sendall(chunk)
            st.long_bytes += len(chunk)
            await trio.sleep(2 / load)

    async def short_conns() -> None:
        await trio.sleep(rng.random() * 20)
        while True:
            c = h.socket(AF_INET, SOCK_STREAM)
            ok = False
            with trio.move_on_after(10):
                await c.connect((rng.choice(others), 8001))
                await c.sendall(b"S" * 1024)
                ok = True
            c.close()
            if ok:
                st.short_ok += 1
            else:
                st.short_fail += 1
            await trio.sleep(20 / load)

    for task in (pinger, ponger, udp_sender, long_conn, short_conns):
        nursery.start_soon(task)


def count_tasks() -> int:
    def walk(task: trio.lowlevel.Task) -> int:
        return 1 + sum(walk(t) for n in task.child_nurseries for t in n.child_tasks)

    root = trio.lowlevel.current_root_task()
    return walk(root) if root is not None else 0


def tables(hosts: list[Host]) -> dict[str, int]:
    out = dict.fromkeys(
        ("timers", "neigh", "fnhe", "peers", "frags", "tcp_socks", "timewait", "synq", "ehash"),
        0,
    )
    for h in hosts:
        net = h.net
        heap: list[Any] = net.timers._heap
        out["timers"] += sum(1 for e in heap if e[3].pending and e[3]._gen == e[2])
        ipv4 = ipv4_of(net)
        out["neigh"] += len(ipv4.arp_tbl.hash)
        out["peers"] += len(ipv4.peers)
        out["frags"] += len(ipv4.frags.queues)
        seen: set[int] = set()
        for table in ipv4.fib.tables.values():
            for fa in table.aliases():
                nh = fa.fi.nh
                if nh is not None and id(nh) not in seen:
                    seen.add(id(nh))
                    out["fnhe"] += len(nh.exceptions)
        tcp = tcp_of(net)
        socks = tcp.sockets
        out["tcp_socks"] += sum(1 for s in socks if isinstance(s, TcpSock))
        out["timewait"] += sum(1 for s in socks if isinstance(s, TimewaitSock))
        out["synq"] += sum(1 for s in tcp.hashinfo.ehash.values() if isinstance(s, RequestSock))
        out["ehash"] += len(tcp.hashinfo.ehash)
    return out


async def soak(args: argparse.Namespace) -> int:
    st = Stats()
    rng = random.Random(args.seed)
    wall0 = time.perf_counter()
    async with netstack.open_lab(seed=args.seed) as lab, trio.open_nursery() as nursery:
        pairs = build(lab, args.hosts, args.edges)
        hosts = [h for h, _ in pairs]
        addrs = [a for _, a in pairs]
        for h, _ in pairs:
            await host_servers(h, st, nursery)
        await trio.sleep(1)
        for i, (h, me) in enumerate(pairs):
            neighbour = addrs[(i + 1) % len(addrs)]
            hrng = random.Random(rng.getrandbits(32))
            await host_clients(h, me, addrs, neighbour, st, args.load, hrng, nursery)
        all_hosts = [lab.host(n) for n in lab.hosts]
        print(
            f"soak: {len(hosts)} hosts, {args.edges + 1} routers, load x{args.load:g}, "
            f"{args.minutes} virtual minutes, report every {args.report}"
        )
        unit = "heap_MB" if args.tracemalloc else "Mblocks"  # sys.getallocatedblocks()
        header = (
            f"  min   {unit}  tasks timers neigh fnhe peers frags tcp  tw synq ehash"
            "   short ok/fail   pings/pongs      udp sent/recv   wall_s"
        )
        print(header)
        if args.tracemalloc:
            tracemalloc.start()
        for minute in range(0, args.minutes + 1, args.report):
            if minute:
                await trio.sleep(args.report * 60)
            gc.collect()
            heap = (
                tracemalloc.get_traced_memory()[0] if args.tracemalloc else sys.getallocatedblocks()
            )
            st.samples.append((minute, heap))
            t = tables(all_hosts)
            print(
                f"{minute:5d} {heap / 1e6:9.2f} {count_tasks():6d} {t['timers']:6d} "
                f"{t['neigh']:5d} {t['fnhe']:4d} {t['peers']:5d} {t['frags']:5d} "
                f"{t['tcp_socks']:4d} {t['timewait']:3d} {t['synq']:4d} {t['ehash']:5d}"
                f" {st.short_ok:8d}/{st.short_fail:<4d} {st.pings:7d}/{st.pongs:<7d}"
                f" {st.udp_sent:9d}/{st.udp_recv:<9d} {time.perf_counter() - wall0:7.0f}",
                flush=True,
            )
        nursery.cancel_scope.cancel()
    tracemalloc.stop()
    start = args.minutes / 4
    tail = [heap for minute, heap in st.samples if minute >= start]
    mean = sum(tail) / len(tail)
    spread = max(abs(v - mean) / mean for v in tail)
    flat = spread <= 0.05
    unit = "MB" if args.tracemalloc else "M blocks"
    print(
        f"heap over the last {args.minutes - start:g} min: mean {mean / 1e6:.2f} {unit}, "
        f"max deviation {spread * 100:.2f} % ({'flat' if flat else 'NOT flat'}, bound 5 %)"
    )
    print(
        f"short connections: {st.short_ok} ok, {st.short_fail} failed, "
        f"{st.short_served} served in full; long TCP bytes sent {st.long_bytes}"
    )
    return 0 if flat and not st.short_fail else 1


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--minutes", type=int, default=60)
    p.add_argument("--hosts", type=int, default=24)
    p.add_argument("--edges", type=int, default=3)
    p.add_argument("--load", type=float, default=1.0, help="traffic multiplier (2: twice)")
    p.add_argument("--report", type=int, default=5, help="virtual minutes between reports")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--no-tracemalloc",
        dest="tracemalloc",
        action="store_false",
        help="measure allocated blocks instead of traced bytes (faster)",
    )
    args = p.parse_args()
    sys.exit(netstack.run(soak, args))


if __name__ == "__main__":
    main()
