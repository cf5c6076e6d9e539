"""Issue 18's speed targets in one table, each beside the anchors of the same run.

Runs the quick versions of ``udp_pps.py``, ``router_hop.py``,
``tunnel_pps.py`` and ``tcp_bulk.py`` and prints one Markdown table, ``target | figure | anchor(s)
| met/missed``: every figure per second of CPU time of this process (the one
a shared machine moves least), every anchor measured in the same run
(``benchmarks/anchors.py``: the Trio memory-channel floor, the kernel over
veth between two network namespaces — root only, skipped otherwise — and,
for the router hop, the kernel with a router namespace between the two; for
the tunnels, the kernel's VXLAN against its direct path, the kernel here
having no GRE or IPIP module). The header gives the load average, which
says how much to trust the CPU-time figures. Under two minutes on a loaded
2-core machine.

``--callgrind`` adds the instruction counts (``valgrind --tool=callgrind``,
the difference of two run lengths so start-up cancels; repeatable to about
1 %, whatever the load): per UDP packet, per router hop, per packet through GRE and IPIP
against the direct path, and per 64 KB of TCP. It takes several minutes.
``--scale`` multiplies the run sizes (the tests use a tiny one);
``--verbose`` also prints the benchmarks' own lines. ``--lab [N]`` adds the
lab-at-scale rows: ``lab_scale.py --hosts N`` (10,000 by default) in a process
of its own, its build's CPU time, its peak RSS and its pings' CPU time against
the targets of 10 s, 1 GB and 2 s (two to four minutes on a loaded machine,
so not part of the default run).

    python benchmarks/targets.py [--callgrind] [--no-anchors] [--scale F] [--verbose]
                                 [--lab [N]]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import netstack

# after netstack, as in every benchmark: a build on PYTHONPATH (scripts/build_compiled.py
# --dest DIR prints it) wins over this checkout's pure package
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import anchors, router_hop, tcp_bulk, tunnel_pps, udp_pps

# the quick sizes: packets, packets, packets per tunnel kind, MB, MB
UDP_BATCHED = 50_000
UDP_PER_CALL = 10_000
ROUTER_HOP = 20_000
TUNNEL = 10_000
TCP_MBYTES = 64
TCP_NONE_MBYTES = 8
# callgrind sizes: UDP and tunnel packets (a run less one of 0)
CALLGRIND_PACKETS = 1280
# the lab at scale: hosts, and issue 18's targets for 10,000 of them
LAB_HOSTS = 10_000
LAB_BUILD_S = 10.0
LAB_PEAK_GB = 1.0
LAB_PING_S = 2.0


@dataclass(frozen=True)
class Row:
    """One row of the table: the target, netstack's figure, the anchors and the verdict."""

    target: str
    figure: str
    anchors: str
    verdict: str

    def markdown(self) -> str:
        return f"| {self.target} | {self.figure} | {self.anchors} | {self.verdict} |"


def _quiet(verbose: bool) -> contextlib.AbstractContextManager[object]:
    return contextlib.nullcontext() if verbose else contextlib.redirect_stdout(io.StringIO())


def _cells(found: list[anchors.Anchor]) -> str:
    return "; ".join(a.short() for a in found) if found else "—"


def udp_rows(scale: float, with_anchors: bool, verbose: bool) -> list[Row]:
    rows = []
    for batch, n, target, what in (
        (64, UDP_BATCHED, udp_pps.TARGET_BATCHED, "UDP 200 B, sendmmsg/recvmmsg of 64"),
        (1, UDP_PER_CALL, udp_pps.TARGET_PER_CALL, "UDP 200 B, one send/recv per datagram"),
    ):
        packets = max(int(n * scale), 64)
        with _quiet(verbose):
            pps, found = udp_pps.measure(packets, batch, with_anchors)
        rows.append(
            Row(
                f"{what} ≥ {target:,} packets/s per CPU s",
                f"{pps:,.0f}",
                _cells(found),
                anchors.verdict(pps, target, at_least=True),
            )
        )
    return rows


def hop_rows(scale: float, with_anchors: bool, verbose: bool) -> list[Row]:
    packets = max(int(ROUTER_HOP * scale), 64)
    with _quiet(verbose):
        hop = router_hop.cpu_times(packets, False)
        kernel = router_hop.kernel_anchor(packets) if with_anchors else None
    if not with_anchors:
        cell = "—"
    elif kernel is None:
        cell = "kernel over veth (a router namespace): skipped"
    else:
        cell = f"kernel over veth (a router namespace) {kernel:.2f} µs"
    return [
        Row(
            f"Router hop ≤ {router_hop.TARGET_US:g} µs of CPU per packet (routed less direct)",
            f"{hop:.2f} µs",
            cell,
            anchors.verdict(hop, router_hop.TARGET_US, at_least=False),
        )
    ]


def tunnel_rows(scale: float, with_anchors: bool, verbose: bool) -> list[Row]:
    packets = max(int(TUNNEL * scale), 64)
    with _quiet(verbose):
        per = {kind: tunnel_pps.measure(kind, packets) for kind in ("direct", "gre", "ipip")}
        found = [anchors.kernel_vxlan_ratio(packets, 64)] if with_anchors else []
    cells = "; ".join(
        f"{a.name} adds {a.value - 1:.2f}" if a.value is not None else a.short() for a in found
    )
    if with_anchors:
        cells += f"; {anchors.NO_TUNNEL_ANCHOR}"
    rows = []
    for kind in ("gre", "ipip"):
        extra = per[kind] / per["direct"] - 1
        rows.append(
            Row(
                f"UDP through {kind.upper()} adds ≤ {tunnel_pps.TARGET_EXTRA:g} direct path "
                "(CPU per packet)",
                f"adds {extra:.2f} ({1e6 * per[kind]:.1f} µs vs {1e6 * per['direct']:.1f} µs)",
                cells or "—",
                anchors.verdict(extra, tunnel_pps.TARGET_EXTRA, at_least=False),
            )
        )
    return rows


def which_netstack() -> str:
    """Which netstack this process imported: the pure package or a compiled build
    (``scripts/build_compiled.py``), by its folder and its extension modules."""
    folder = Path(netstack.__file__).parent
    compiled = sorted(folder.rglob("*.so"))
    if not compiled:
        return f"the pure package ({folder})"
    modules = [p for p in compiled if "__mypyc" not in p.name]
    return f"a compiled build ({len(modules)} modules compiled, {folder})"


def tcp_rows(scale: float, with_anchors: bool, verbose: bool) -> list[Row]:
    rows = []
    for name, mbytes, what in (
        ("gso+gro", TCP_MBYTES, "TCP bulk, GSO+GRO"),
        ("none", TCP_NONE_MBYTES, "TCP bulk, every offload off"),
    ):
        target = tcp_bulk.TARGETS[name]
        with _quiet(verbose):
            gbps, found = tcp_bulk.measure(
                name, max(int(mbytes * scale), 1), with_anchors=with_anchors
            )
        rows.append(
            Row(
                f"{what} ≥ {target:g} Gbit/s per CPU s",
                f"{gbps:.2f}",
                _cells(found),
                anchors.verdict(gbps, target, at_least=True),
            )
        )
    return rows


def lab_rows(hosts: int, verbose: bool) -> list[Row]:
    """``lab_scale.py --hosts N --json`` in a process of its own (its peak RSS is
    the lab's alone): the build's CPU, the peak RSS and the pings' CPU."""
    script = Path(__file__).resolve().parent / "lab_scale.py"
    out = subprocess.run(
        [sys.executable, str(script), "--hosts", str(hosts), "--json"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    if verbose:
        print(out, end="")
    fig = json.loads(out.strip().splitlines()[-1])
    size = f"{fig['hosts']:,} hosts (+ {fig['routers']} routers)"
    peak_gb = fig["peak_rss_mb"] / 1024
    return [
        Row(
            f"{size} built in ≤ {LAB_BUILD_S:g} s of CPU",
            f"{fig['build_cpu']:.1f} s",
            "—",
            anchors.verdict(fig["build_cpu"], LAB_BUILD_S, at_least=False),
        ),
        Row(
            f"{size}: peak RSS ≤ {LAB_PEAK_GB:g} GB",
            f"{peak_gb:.2f} GB (built {fig['built_rss_mb']:.0f} MB, "
            f"after the pings {fig['pinged_rss_mb']:.0f} MB)",
            "—",
            anchors.verdict(peak_gb, LAB_PEAK_GB, at_least=False),
        ),
        Row(
            f"{size}: each pings a neighbour, all at once, in ≤ {LAB_PING_S:g} s of CPU",
            f"{fig['ping_cpu']:.1f} s ({fig['answered']:,} answered)",
            "—",
            anchors.verdict(fig["ping_cpu"], LAB_PING_S, at_least=False),
        ),
    ]


def callgrind_rows(scale: float, verbose: bool) -> list[Row]:
    packets = max(int(CALLGRIND_PACKETS * scale), 64)
    with _quiet(verbose):
        udp = udp_pps.callgrind(packets, 64)
        hop = router_hop.callgrind(packets)
        per = tunnel_pps.callgrind(["gre", "ipip"], packets)
        tcp = tcp_bulk.callgrind(["gso+gro", "none"], 4, tcp_bulk.SEND_SIZE)
    target = udp_pps.TARGET_INSTRUCTIONS
    rows = [
        Row(
            f"UDP 200 B batched ≤ {target:,} instructions per packet (callgrind)",
            f"{udp:,.0f}",
            "—",
            anchors.verdict(udp, target, at_least=False),
        ),
        Row(
            f"Router hop ≤ {router_hop.TARGET_INSTRUCTIONS:,} instructions per packet "
            "(callgrind, routed less direct)",
            f"{hop:,.0f}",
            "—",
            anchors.verdict(hop, router_hop.TARGET_INSTRUCTIONS, at_least=False),
        ),
    ]
    for kind in ("gre", "ipip"):
        extra = per[kind] / per["direct"] - 1
        rows.append(
            Row(
                f"UDP through {kind.upper()} adds ≤ {tunnel_pps.TARGET_EXTRA:g} direct path "
                "(callgrind instructions)",
                f"adds {extra:.2f} ({per[kind]:,.0f} vs {per['direct']:,.0f})",
                "—",
                anchors.verdict(extra, tunnel_pps.TARGET_EXTRA, at_least=False),
            )
        )
    for name, n in tcp.items():
        rows.append(
            Row(f"TCP bulk, {name}: instructions per 64 KB (callgrind)", f"{n:,.0f}", "—", "—")
        )
    return rows


def main(argv: list[str] | None = None) -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--callgrind", action="store_true", help="add instruction counts (several minutes)"
    )
    parser.add_argument(
        "--anchors",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="measure the anchors beside each figure (default: on)",
    )
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the run sizes")
    parser.add_argument("--verbose", action="store_true", help="the benchmarks' own lines too")
    parser.add_argument(
        "--lab",
        type=int,
        nargs="?",
        const=LAB_HOSTS,
        metavar="N",
        help=f"add the lab-at-scale rows (lab_scale.py, {LAB_HOSTS:,} hosts by default)",
    )
    args = parser.parse_args(argv)
    load = os.getloadavg()
    print(
        f"netstack targets (issue 18): CPython {platform.python_version()}, "
        f"Linux {platform.release()}, {os.cpu_count()} CPUs, "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    print(f"netstack measured: {which_netstack()}")
    rows = udp_rows(args.scale, args.anchors, args.verbose)
    rows += hop_rows(args.scale, args.anchors, args.verbose)
    rows += tunnel_rows(args.scale, args.anchors, args.verbose)
    rows += tcp_rows(args.scale, args.anchors, args.verbose)
    if args.callgrind:
        rows += callgrind_rows(args.scale, args.verbose)
    if args.lab:
        rows += lab_rows(args.lab, args.verbose)
    print("| target | figure | anchor(s) | met/missed |")
    print("|---|---|---|---|")
    for row in rows:
        print(row.markdown())
    load = os.getloadavg()
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    return rows


if __name__ == "__main__":
    main()
