"""Labs at scale: build a data-centre fabric of N hosts and ping a neighbour from each.

The fabric (``examples/datacentre_fabric.py`` builds the same one)::

    spine0 … spineS-1            routers; a /31 to every leaf, a /24 route per leaf
      │ ╲ ╱ │
    leaf0 … leafL-1              routers with a bridge br0 (10.A.B.254/24) over their hosts
     │││                         (the leaf's default route: one spine, by leaf number)
    h0 h1 h2 …                   --per-leaf hosts under each leaf, 10.A.B.i/24

Every host then pings one neighbour at once (``ping -c 1``): the next host
under the same leaf (an ARP and an echo through the leaf's bridge), or with
``--cross`` the host with the same number under the next leaf (through
leaf, spine, leaf: three routers).

Prints, per phase (build; ping; close), the process's CPU time (the figure to
compare: the machine is shared), wall time, collections by the cyclic garbage
collector per generation and the CPU time they took, and at the end the peak
RSS per node (and the peak when the build ended, and when the pings ended: the
rest of the peak is the close, where Trio cancels every host's tasks at once) and, with
``--tracemalloc``, the Python heap per host after the build (tracemalloc
slows everything several times: its run is for memory only).

The lab is opened with ``shuffle=False``: the tasks woken at one instant run
in reverse creation order, which for this lab is the hosts' order in memory (see
``netstack/host/lab.py``, "Scheduling"; about 40 % less CPU for the pings
than in the shuffled order). ``--shuffled`` opens it as ``open_lab()`` does by
default. It is also opened with ``chain_polls=True``: a NAPI task polls the
instances its poll scheduled (the next host's veth) as ``net_rx_action`` walks
its poll list, instead of waking each one's task (``netstack/core/napi.py``,
"Chained polls"; the same pings, about five task steps a ping fewer);
``--unchained`` opens it without. And it is opened, as by default, with the
NAPI polls a transmit raises at its ``local_bh_enable``
(``netstack/core/napi.py``, "Polls at local_bh_enable": a ping's request,
the bridge's or routers' forwarding and the reply are received inside the
ping task's ``sendto``, as the kernel runs them on the sender's CPU; chained
polls then only chain what a NAPI task's or a timer's transmit schedules);
``--no-bh-polls`` opens it with ``polls_at_bh_enable=False``. The first line
printed says which.

    python benchmarks/lab_scale.py [--hosts N] [--per-leaf K] [--spines S] [--cross]
                                   [--shuffled] [--unchained] [--no-bh-polls]
                                   [--tracemalloc]
                                   [--profile build|ping] [--json]
    python benchmarks/lab_scale.py --hosts 10000
    python benchmarks/lab_scale.py --hosts 1000 --callgrind

``--callgrind`` runs the same under ``valgrind --tool=callgrind
--instr-atstart=no`` with the instrumentation switched on around the pings
alone (``ping_all``: no build or close counted) and prints the instructions
of the ping phase and per ping: a figure the machine's load does not move.
The lab runs in virtual time (``netstack.run``), so the pings do not time out
under valgrind's slowdown, and Trio's scheduling is seeded from the first
task step, so a run repeats.

The issue's target: 10,000 hosts built in ≤ 10 s and ≤ 1 GB, pinging a
neighbour each in ≤ 2 s.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import pstats
import resource
import sys
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import trio

import netstack
from netstack import Host, Lab

IPV4_ONLY: dict[str, str | int] = {"net.ipv6.conf.all.disable_ipv6": 1}
ROUTER: dict[str, str | int] = {**IPV4_ONLY, "net.ipv4.ip_forward": 1}


def leaf_net(leaf: int) -> str:
    """Leaf *leaf*'s host subnet's first three octets: ``10.A.B``."""
    return f"10.{leaf // 256}.{leaf % 256}"


def uplink(spine: int, leaf: int) -> tuple[str, str]:
    """The /31 between *spine* and *leaf*: (spine's address, leaf's address)."""
    base = (leaf % 128) * 2
    prefix = f"172.{16 + spine}.{leaf // 128}"
    return f"{prefix}.{base}", f"{prefix}.{base + 1}"


def build_fabric(
    lab: Lab, hosts: int, *, per_leaf: int = 40, spines: int = 2
) -> tuple[list[Host], list[Host], list[Host]]:
    """Build the fabric in *lab*: (spines, leaves, hosts), hosts in leaf order."""
    if not 1 <= per_leaf <= 253:
        raise ValueError("--per-leaf must be 1..253")
    nleaves = -(-hosts // per_leaf)
    if nleaves > 128 * 256 or spines > 16:
        raise ValueError("too many leaves or spines for the address plan")
    spine_hosts = [lab.add_host(f"spine{s}", sysctls=ROUTER) for s in range(spines)]
    leaves: list[Host] = []
    end_hosts: list[Host] = []
    for leaf_no in range(nleaves):
        leaf = lab.add_host(f"leaf{leaf_no}", sysctls=ROUTER)
        leaves.append(leaf)
        net = leaf_net(leaf_no)
        leaf.ip("link add br0 type bridge")
        leaf.ip("link set br0 up")
        leaf.ip(f"addr add {net}.254/24 dev br0")
        for s, spine in enumerate(spine_hosts):
            lab.add_link(f"{spine.name}:leaf{leaf_no}", f"{leaf.name}:spine{s}")
            spine_addr, leaf_addr = uplink(s, leaf_no)
            spine.ip(f"addr add {spine_addr}/31 dev leaf{leaf_no}")
            leaf.ip(f"addr add {leaf_addr}/31 dev spine{s}")
            spine.ip(f"route add {net}.0/24 via {leaf_addr}")
        spine_addr, _ = uplink(leaf_no % spines, leaf_no)
        leaf.ip(f"route add default via {spine_addr}")
        for i in range(min(per_leaf, hosts - leaf_no * per_leaf)):
            h = lab.add_host(f"h{len(end_hosts)}", sysctls=IPV4_ONLY)
            lab.add_link(f"{h.name}:eth0", f"{leaf.name}:p{i}")
            leaf.ip(f"link set p{i} master br0")
            h.ip(f"addr add {net}.{i + 1}/24 dev eth0")
            h.ip(f"route add default via {net}.254")
            end_hosts.append(h)
    return spine_hosts, leaves, end_hosts


def neighbour(n: int, hosts: int, per_leaf: int, *, cross: bool) -> int:
    """The host number host *n* pings."""
    leaf, i = divmod(n, per_leaf)
    if cross:
        nleaves = -(-hosts // per_leaf)
        other = ((leaf + 1) % nleaves) * per_leaf + i
        return other if other < hosts and other != n else (n + 1) % hosts
    in_leaf = min(per_leaf, hosts - leaf * per_leaf)
    return leaf * per_leaf + (i + 1) % in_leaf if in_leaf > 1 else (n + 1) % hosts


async def ping_all(end_hosts: list[Host], per_leaf: int, *, cross: bool) -> int:
    """Every host pings its neighbour once, all at the same time; the replies received."""
    received = 0
    n = len(end_hosts)

    async def one(h: Host, target: str) -> None:
        nonlocal received
        result = await h.ping(target, count=1, timeout=5)
        received += result.received

    async with trio.open_nursery() as nursery:
        for k, h in enumerate(end_hosts):
            other = end_hosts[neighbour(k, n, per_leaf, cross=cross)]
            nursery.start_soon(one, h, other.addr("eth0"))
    return received


class Phase:
    """CPU, wall, GC collections and the collector's CPU time of one phase."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.cpu = 0.0
        self.wall = 0.0
        self.collections = [0, 0, 0]
        self.gc_cpu = 0.0

    def __str__(self) -> str:
        gen = "/".join(str(c) for c in self.collections)
        return (
            f"{self.name:6} CPU {self.cpu:7.2f} s  wall {self.wall:7.2f} s  gc gen0/1/2 {gen} "
            f"({self.gc_cpu:.2f} s CPU)"
        )


@contextmanager
def measure(phase: Phase, profile: cProfile.Profile | None = None) -> Iterator[None]:
    before = [s["collections"] for s in gc.get_stats()]
    started = [0.0]

    def collector(event: str, _info: dict[str, int]) -> None:  # gc.callbacks
        if event == "start":
            started[0] = time.process_time()
        else:
            phase.gc_cpu += time.process_time() - started[0]

    gc.callbacks.append(collector)
    cpu, wall = time.process_time(), time.perf_counter()
    if profile is not None:
        profile.enable()
    try:
        yield
    finally:
        if profile is not None:
            profile.disable()
        phase.cpu = time.process_time() - cpu
        phase.wall = time.perf_counter() - wall
        gc.callbacks.remove(collector)
        after = [s["collections"] for s in gc.get_stats()]
        phase.collections = [a - b for a, b in zip(after, before, strict=True)]


async def run_once(args: argparse.Namespace) -> dict[str, Any]:
    build, ping, close = Phase("build"), Phase("ping"), Phase("close")
    prof = cProfile.Profile(time.process_time) if args.profile else None  # CPU, not wall
    heap = 0
    start = time.process_time(), time.perf_counter()
    closing = ExitStack()
    async with netstack.open_lab(
        shuffle=args.shuffled, chain_polls=not args.unchained, polls_at_bh_enable=args.bh_polls
    ) as lab:
        with measure(build, prof if args.profile == "build" else None):
            spines, leaves, end_hosts = build_fabric(
                lab, args.hosts, per_leaf=args.per_leaf, spines=args.spines
            )
        built_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        if args.tracemalloc:
            heap = tracemalloc.get_traced_memory()[0]
        with measure(ping, prof if args.profile == "ping" else None):
            if args.instrument:
                _benchmarks().callgrind_instrumentation(True)
            received = await ping_all(end_hosts, args.per_leaf, cross=args.cross)
            if args.instrument:
                _benchmarks().callgrind_instrumentation(False)
        pinged_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        closing.enter_context(measure(close))
    closing.close()
    if prof is not None:
        pstats.Stats(prof).sort_stats(args.sort).print_stats(args.top)
    return {
        "hosts": len(end_hosts),
        "routers": len(spines) + len(leaves),
        "received": received,
        "phases": [build, ping, close],
        "heap": heap,
        "built_rss": built_rss,
        "pinged_rss": pinged_rss,
        "total": (time.process_time() - start[0], time.perf_counter() - start[1]),
    }


def _benchmarks() -> Any:
    """``benchmarks.stream`` (imported after ``netstack``: a build on ``PYTHONPATH`` wins)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks import stream

    return stream


def callgrind_main(args: argparse.Namespace) -> None:
    """Instructions of the ping phase alone, under callgrind."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks import anchors

    argv = [__file__, "--instrument", "--hosts", str(args.hosts), "--per-leaf", str(args.per_leaf)]
    argv += ["--spines", str(args.spines)]
    argv += ["--cross"] if args.cross else []
    argv += ["--shuffled"] if args.shuffled else []
    argv += ["--unchained"] if args.unchained else []
    argv += ["--bh-polls" if args.bh_polls else "--no-bh-polls"]
    total = anchors.callgrind_instructions(argv, instr_atstart=False)
    print(
        f"{args.hosts} hosts pinging a neighbour each: {total:,} instructions, "
        f"{total / args.hosts:,.0f} per ping (callgrind, the ping phase alone; "
        + ("polls at local_bh_enable)" if args.bh_polls else "NAPI tasks, --no-bh-polls)")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=100, help="end hosts (default 100)")
    parser.add_argument("--per-leaf", type=int, default=40, help="hosts under each leaf")
    parser.add_argument("--spines", type=int, default=2)
    parser.add_argument("--cross", action="store_true", help="ping the next leaf's host")
    parser.add_argument(
        "--shuffled",
        action="store_true",
        help="run woken tasks in a seeded shuffle (the default lab's order)",
    )
    parser.add_argument(
        "--unchained",
        action="store_true",
        help="every NAPI instance polled by its own task (open_lab's default)",
    )
    parser.add_argument(
        "--bh-polls",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="NAPI polls at the transmit's local_bh_enable (default: on, as a lab's)",
    )
    parser.add_argument("--tracemalloc", action="store_true", help="measure the Python heap")
    parser.add_argument("--profile", choices=("build", "ping"), help="cProfile one phase")
    parser.add_argument("--sort", default="tottime", help="the profile's order (cumulative…)")
    parser.add_argument("--top", type=int, default=40, help="the profile's lines")
    parser.add_argument("--json", action="store_true", help="end with the figures as one JSON line")
    parser.add_argument(
        "--callgrind", action="store_true", help="instructions of the ping phase (callgrind)"
    )
    parser.add_argument("--instrument", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.callgrind:
        callgrind_main(args)
        return
    if args.tracemalloc:
        tracemalloc.start()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    r = netstack.run(run_once, args)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    n, routers = r["hosts"], r["routers"]
    order = "shuffled" if args.shuffled else "in reverse creation order"
    order += "; NAPI polls unchained" if args.unchained else "; NAPI polls chained"
    order += "; polls at local_bh_enable" if args.bh_polls else "; no polls at local_bh_enable"
    print(f"{n} hosts + {routers} routers (Python {sys.version.split()[0]}; woken tasks {order})")
    for phase in r["phases"]:
        print(f"  {phase}")
    cpu, wall = r["total"]
    print(f"  total  CPU {cpu:7.2f} s  wall {wall:7.2f} s")
    print(f"  pings answered: {r['received']} of {n}")
    build = r["phases"][0]
    nodes = n + routers
    print(f"  build CPU per node: {build.cpu / nodes * 1e3:.2f} ms")
    built = r["built_rss"]
    print(
        f"  peak RSS {rss / 1024:.0f} MB ({(rss - rss0) / 1024:.0f} MB over the interpreter's), "
        f"{(rss - rss0) / 1024 / nodes:.3f} MB per node; after the build {built / 1024:.0f} MB "
        f"({(built - rss0) / 1024 / nodes:.3f} MB per node), after the pings "
        f"{r['pinged_rss'] / 1024:.0f} MB"
    )
    if r["heap"]:
        mb = r["heap"] / 2**20
        print(f"  Python heap after build {mb:.0f} MB, {mb / nodes:.3f} MB per node")
    if args.json:  # benchmarks/targets.py --lab reads this line
        figures = {
            "hosts": n,
            "routers": routers,
            "answered": r["received"],
            "build_cpu": build.cpu,
            "ping_cpu": r["phases"][1].cpu,
            "peak_rss_mb": rss / 1024,
            "built_rss_mb": built / 1024,
            "pinged_rss_mb": r["pinged_rss"] / 1024,
        }
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
