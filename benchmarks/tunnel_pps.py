"""One-way UDP through a tunnel (GRE, GRE with key+csum+seq, IPIP) between two hosts.

Same shape as udp_pps.py (200-byte payload, sendmmsg/recvmmsg of 64), with the
datagrams encapsulated on ``a``'s tunnel and decapsulated on ``b``'s, and the
same stream sent directly over the veth for comparison. Prints packets per
second of wall and of CPU time for each kind, how many times the tunnel's tx
queue lock (HARD_TX_LOCK) was taken — zero with LLTX — and each tunnel's CPU
per packet as a multiple of the direct path's.

The issue's target: a GRE or IPIP tunnel adds no more than one extra pass
through IP, i.e. a packet through the tunnel costs at most twice what it does
directly (the tunnel adds at most 1× a direct path). Beside it, the anchor of
the same run (``benchmarks/anchors.py``): the kernel has no GRE or IPIP module
on this machine, so the kernel's VXLAN-over-veth against direct veth ratio
(root only; ``--no-anchors`` leaves it out).

``--callgrind`` gives the same ratio in instructions: each kind runs twice
under ``valgrind --tool=callgrind`` (``PYTHONHASHSEED=0``), with 0 and with
``--packets`` datagrams (1,280 by default in that mode), and the difference
per packet is compared with the direct path's.

``--stream-only`` with it counts the stream alone (``--instr-atstart=no``,
switched on after the lab is built and a warm batch): the figure per lever.

The labs are opened as by default, with the NAPI polls a transmit raises at
its ``local_bh_enable`` (``netstack.core.napi``: ``b``'s poll, the
decapsulation and ``udp_rcv`` in the sender's ``sendmmsg``, as the kernel
runs them); ``--no-bh-polls`` opens them with ``polls_at_bh_enable=False``
(each NAPI instance polled by its task), for comparison. Each figure's line
says which.

    python benchmarks/tunnel_pps.py [--packets N] [--profile KIND] [--callgrind]
                                    [--stream-only] [--kind KIND] [--no-anchors]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
from pathlib import Path

import trio

import netstack

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import anchors, stream

KINDS = {
    "direct": "",
    "gre": "type gre",
    "gre-key-csum-seq": "type gre key 7 csum seq",
    "ipip": "type ipip",
}
TARGET_EXTRA = 1.0  # the tunnel adds at most one direct path: ratio ≤ 2
# polls at local_bh_enable (module doc): the lab's default; --no-bh-polls turns them off
BH_POLLS = True


def polls_note() -> str:
    """Which receive the runs measure, for the printed lines."""
    return "polls at local_bh_enable" if BH_POLLS else "NAPI tasks (--no-bh-polls)"


async def run_once(
    kind: str, packets: int, batch: int, instrument: bool = False
) -> tuple[float, float, int, int]:
    async with netstack.open_lab(polls_at_bh_enable=BH_POLLS) as lab:
        a, b = lab.add_host("a"), lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0")
        a.ip("addr add 192.0.2.1/24 dev eth0")
        b.ip("addr add 192.0.2.2/24 dev eth0")
        if kind != "direct":
            for h, local, remote, addr in (
                (a, "192.0.2.1", "192.0.2.2", "10.9.0.1/30"),
                (b, "192.0.2.2", "192.0.2.1", "10.9.0.2/30"),
            ):
                h.ip(f"link add t1 {KINDS[kind]} remote {remote} local {local}")
                h.ip("link set t1 up")
                h.ip(f"addr add {addr} dev t1")
        dst = "192.0.2.2" if kind == "direct" else "10.9.0.2"
        # Steady state before measuring, the same for every kind: a ping resolves
        # the neighbours, and ten seconds of (virtual) time let IPv6 autoconf on
        # the tunnel devices finish and the outer neighbour leave DELAY. (Its
        # first probe is due 5 s after b's own ARP request made it STALE: without
        # the wait a tunnel's whole run goes out through neigh_resolve_output and
        # a rebuilt header, the direct path's through the cached one.)
        await a.ping(dst, count=1)
        await trio.sleep(10)
        elapsed, cpu = await stream.udp_stream(a, b, dst, packets, batch, instrument=instrument)
        lock = 0 if kind == "direct" else a.dev("t1").tx_queues[0]._xmit_lock.acquisitions
        drops = a.dev("eth0").statistics().tx_dropped + b.snmp()["Udp"].RcvbufErrors
        return elapsed, cpu, lock, drops


def measure(kind: str, packets: int, batch: int = 64) -> float:
    """Print one kind's figures; return its CPU seconds per packet."""
    elapsed, cpu, lock, drops = netstack.run(run_once, kind, packets, batch)
    print(
        f"UDP 200 B over {kind:17s}: {packets:7d} packets in {elapsed:6.2f} s "
        f"= {packets / elapsed:8,.0f} packets/s ({1e6 * elapsed / packets:5.1f} "
        f"µs/packet), CPU {cpu:5.2f} s = {packets / max(cpu, 1e-9):8,.0f} packets/s, "
        f"HARD_TX_LOCK taken {lock} times, {drops} dropped; {polls_note()}"
    )
    return cpu / packets


def ratio_line(kind: str, ratio: float, unit: str) -> str:
    """The target line for *kind*'s *ratio* to the direct path."""
    return (
        f"  {kind}: {ratio:.2f} × the direct path's {unit} per packet, "
        f"adds {ratio - 1:.2f} direct paths; target ≤ {TARGET_EXTRA:.0f}: "
        + anchors.verdict(ratio - 1, TARGET_EXTRA, at_least=False)
    )


def callgrind_per_packet(kind: str, packets: int, stream_only: bool = False) -> float:
    """Instructions per packet through *kind*: a run of *packets* less one of 0.

    With *stream_only* callgrind counts the stream alone (``--instr-atstart=no``,
    switched on once the lab is built and a batch has warmed the interpreter up,
    as ``udp_pps.py --stream-only``): the figure per lever.
    """
    argv = [__file__, "--kind", kind, "--no-anchors", "--no-ratio"]
    argv.append("--bh-polls" if BH_POLLS else "--no-bh-polls")
    if stream_only:
        argv.append("--instrument-stream")
    atstart = not stream_only
    base = anchors.callgrind_instructions([*argv, "--packets", "0"], atstart)
    total = anchors.callgrind_instructions([*argv, "--packets", str(packets)], atstart)
    return (total - base) / packets


def callgrind(kinds: list[str], packets: int, stream_only: bool = False) -> dict[str, float]:
    """Print and return each kind's instructions per packet, with the ratio to direct."""
    per = {kind: callgrind_per_packet(kind, packets, stream_only) for kind in ["direct", *kinds]}
    for kind, n in per.items():
        print(
            f"UDP 200 B over {kind:17s}: {n:9,.0f} instructions per packet "
            f"(callgrind; {polls_note()})"
        )
    for kind in kinds:
        print(ratio_line(kind, per[kind] / per["direct"], "instructions"))
    return per


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=50_000)
    parser.add_argument("--profile", choices=sorted(KINDS), help="cProfile one kind")
    parser.add_argument("--kind", choices=tuple(KINDS), action="append", help="only these")
    parser.add_argument(
        "--callgrind", action="store_true", help="instructions per packet under callgrind"
    )
    parser.add_argument(
        "--anchors",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the kernel's VXLAN/direct ratio beside the tunnels' (default: on)",
    )
    parser.add_argument(
        "--stream-only",
        action="store_true",
        help="with --callgrind: count the stream alone (the figure per lever)",
    )
    parser.add_argument(
        "--bh-polls",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="NAPI polls at the transmit's local_bh_enable (default: on, as a lab's)",
    )
    parser.add_argument("--no-ratio", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--instrument-stream", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    global BH_POLLS
    BH_POLLS = args.bh_polls
    anchors.repeatable_scheduling()  # the same task order from the first step
    kinds = [k for k in KINDS if k != "direct" and (not args.kind or k in args.kind)]
    if args.callgrind:
        packets = args.packets if args.packets != parser.get_default("packets") else 1280
        callgrind(kinds, packets, args.stream_only)
        return
    if args.no_ratio:  # one kind, as callgrind runs it
        for kind in args.kind or ["direct"]:
            netstack.run(run_once, kind, args.packets, 64, args.instrument_stream)
        return
    per: dict[str, float] = {}
    for kind in ["direct", *kinds]:
        if args.profile == kind:
            prof = cProfile.Profile()
            prof.enable()
            netstack.run(run_once, kind, args.packets, 64)
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        per[kind] = measure(kind, args.packets)
    for kind in kinds:
        print(ratio_line(kind, per[kind] / per["direct"], "CPU time"))
    if args.anchors:
        print(anchors.kernel_vxlan_ratio(args.packets, 64).line())


if __name__ == "__main__":
    main()
