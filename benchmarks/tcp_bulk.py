"""TCP bulk goodput between two hosts in functional mode, with and without GSO/GRO.

One TCP_STREAM (netstack.userspace.netperf.netperf) of ``--mbytes`` MB over veth (or,
with ``--link nic``, a NIC pair whose TSO engine cuts GSO skbs into frames
that GRO merges again); no rate limit: the emulator's own speed is measured.
Four configurations:

- ``gso+gro``: TSO/GSO on at the sender (64 KB skbs down the stack),
  GRO on at the receiver (aggregates up the stack);
- ``gso only``: GRO off at the receiver (over a NIC every MSS-sized frame
  climbs alone; a veth hands the GSO skb over whole, so TCP still sees 64 KB);
- ``gro only``: TSO and GSO off at the sender (MSS-sized skbs), GRO on at the
  receiver: what merging alone rebuilds (a segment whose TSval differs —
  one per millisecond of the emulator's wall time — starts a new aggregate);
- ``none``: TSO, GSO and GRO off (TCP builds MSS-sized skbs).

Prints goodput in Gbit/s of wall-clock time and per CPU-second of this
process (``time.process_time``: what one core does, whatever else the shared
machine runs), best (and, from three runs, median) of ``--runs`` runs, with
the CPU time per 64 KB of data (45 segments) and per MSS-sized segment, and
the receiver's ``TcpInSegs``: the skbs TCP was handed, so with GRO the size of
the aggregates. The issue's targets: at least 7 Gbit/s per core with GSO and
GRO on, at least 1 Gbit/s with every offload off (``none``); each line is
followed by its target, if it has one, and the anchors of the same run
(``benchmarks/anchors.py``; ``--no-anchors`` leaves them out): the Trio
memory-channel floor (the same bytes in ``bytes`` of one send each through a
channel) and the kernel over veth between two namespaces with the same
TSO/GSO/GRO settings (root only). Figures are printed, never asserted. Each
``send()`` is a Trio step with its scheduling cost; ``--send-size`` sets the
write size (netperf's ``-m``).
``--family 6`` runs the same over IPv6 (TCPv6, ``SKB_GSO_TCPV6``, IPv6 GRO).
The NAPI polls a transmit raises run at its ``local_bh_enable`` in the
sender's task, the sender's own ACKs waiting in its socket's backlog until
``release_sock`` (``netstack.core.napi``, "Polls at local_bh_enable";
``netstack.tcp.sock``, "The socket lock"), as the kernel runs them;
``--no-bh-polls`` wakes the NAPI tasks instead (the behaviour before).

``--callgrind`` counts instructions per 64 KB of payload instead, for ``gso+gro``
and ``none`` (or the ``--config`` given): the difference of a 2 MB and a 10 MB
transfer (1 MB and 3 MB for ``none``) under ``valgrind --tool=callgrind``
(``PYTHONHASHSEED=0``) on a clock that advances 1 µs per read and jumps to
the next timer when every task waits, so the connection behaves the same
every run (open_lab seeds Trio's scheduler).

    python benchmarks/tcp_bulk.py [--mbytes N] [--runs R] [--link veth|nic] [--family 4|6]
                                  [--config NAME] [--send-size B]
                                  [--profile] [--callgrind] [--no-anchors]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import math
import pstats
import sys
from pathlib import Path

import trio

import netstack
from netstack.errors import ConfigError
from netstack.userspace.netperf import NetperfResult, netperf

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import anchors

# 45 segments of 1448 bytes: the largest GSO skb (tcp_xmit_size_goal), so each
# send fills whole skbs instead of leaving a small one for Nagle to let go
SEND_SIZE = 45 * 1448
# IPv6: MSS 1440 - 12 (timestamps); 45 * 1448 would leave a 900-byte skb per send
SEND_SIZE6 = 45 * 1428

CONFIGS = {
    "gso+gro": ("on", "on", "on"),
    "gso only": ("on", "on", "off"),
    "gro only": ("off", "off", "on"),
    "none": ("off", "off", "off"),
}
TARGETS = {"gso+gro": 7.0, "none": 1.0}  # Gbit/s per CPU second
# callgrind: (short, long) transfer in MB
CALLGRIND_MBYTES = {"gso+gro": (2, 10), "gso only": (2, 10), "gro only": (1, 3), "none": (1, 3)}
BH_POLLS = True  # polls at local_bh_enable (module doc); --no-bh-polls


class StepClock(trio.abc.Clock):
    """Virtual time that advances 1 µs per read and jumps to the next deadline when idle.

    Every run reads the same times in the same order, so TCP's timestamps,
    RTT samples and timers, and with them the whole connection, repeat.
    """

    def __init__(self) -> None:
        self._now = 0.0

    def start_clock(self) -> None:
        pass

    def current_time(self) -> float:
        self._now += 1e-6
        return self._now

    def deadline_to_sleep_time(self, deadline: float) -> float:
        if deadline == math.inf:
            return math.inf
        self._now = max(self._now, deadline)
        return 0.0


async def run_once(
    mbytes: int,
    tso: str,
    gso: str,
    gro: str,
    kind: str,
    family: int = 4,
    send_size: int = SEND_SIZE,
) -> tuple[NetperfResult, int]:
    async with netstack.open_lab(polls_at_bh_enable=BH_POLLS) as lab:
        a, b = lab.add_host("a"), lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0", kind=kind)  # type: ignore[arg-type]
        if family == 6:
            a.ip("-6 addr add 2001:db8::1/64 dev eth0 nodad")
            b.ip("-6 addr add 2001:db8::2/64 dev eth0 nodad")
        else:
            a.ip("addr add 10.0.0.1/24 dev eth0")
            b.ip("addr add 10.0.0.2/24 dev eth0")
        for host, cmd in ((a, f"-K eth0 tso {tso} gso {gso}"), (b, f"-K eth0 gro {gro}")):
            with contextlib.suppress(ConfigError):  # already so
                host.ethtool(cmd)
        res = await netperf(
            a,
            b,
            "2001:db8::2" if family == 6 else "10.0.0.2",
            test="TCP_STREAM",
            total_bytes=mbytes << 20,
            send_size=send_size,
        )
        # TcpInSegs counts skbs as TCP receives them (tcp_v4_rcv/tcp_v6_rcv), not
        # wire segments: with GRO it shows the size of the aggregates
        return res, b.nstat().get("TcpInSegs", 0)


def callgrind_per_64k(name: str, family: int, send_size: int) -> float:
    """Instructions per 64 KB of payload for config *name*: a long run less a short one."""
    short, long = CALLGRIND_MBYTES[name]
    argv = [__file__, "--config", name, "--family", str(family), "--send-size", str(send_size)]
    argv += ["--no-anchors", "--step-clock", "--quiet"]
    argv.append("--bh-polls" if BH_POLLS else "--no-bh-polls")
    base = anchors.callgrind_instructions([*argv, "--mbytes", str(short)])
    total = anchors.callgrind_instructions([*argv, "--mbytes", str(long)])
    return (total - base) / ((long - short) << 4)  # 16 × 64 KB per MB


def callgrind(names: list[str], family: int, send_size: int) -> dict[str, float]:
    """Print and return each config's instructions per 64 KB of payload."""
    per: dict[str, float] = {}
    for name in names:
        short, long = CALLGRIND_MBYTES[name]
        per[name] = callgrind_per_64k(name, family, send_size)
        print(
            f"veth IPv{family} {name:9s}: {per[name]:12,.0f} instructions per 64 KB "
            f"(callgrind, {long} MB less {short} MB, 1 µs per clock read"
            + (", polls at local_bh_enable)" if BH_POLLS else ")")
        )
    return per


def measure(
    name: str,
    mbytes: int,
    *,
    runs: int = 1,
    link: str = "veth",
    family: int = 4,
    send_size: int = SEND_SIZE,
    profile: bool = False,
    with_anchors: bool = True,
    clock: trio.abc.Clock | None = None,
    quiet: bool = False,
) -> tuple[float, list[anchors.Anchor]]:
    """Print config *name*'s figures, target and anchors; return the best CPU Gbit/s."""
    tso, gso, gro = CONFIGS[name]
    results: list[tuple[NetperfResult, int]] = []
    for _ in range(runs):
        prof = cProfile.Profile() if profile else None
        if prof is not None:
            prof.enable()
        res, insegs = trio.run(
            run_once, mbytes, tso, gso, gro, link, family, send_size, clock=clock
        )
        if prof is not None:
            prof.disable()
            pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
            pstats.Stats(prof).sort_stats("tottime").print_stats(20)
        assert res.bytes_received == res.bytes_sent
        results.append((res, insegs))
    results.sort(key=lambda r: r[0].cpu_seconds)
    best, insegs = results[0]
    if quiet:
        return 0.0, []
    median = results[len(results) // 2][0]
    nbytes = best.bytes_received
    per_skb = best.cpu_seconds / (nbytes / SEND_SIZE) * 1e6  # per 45 MSS of data
    print(
        f"{link} IPv{family} {name:9s} {nbytes >> 20:5d} MB "
        f"(sends of {send_size}): "
        f"{best.wall_seconds:6.2f} s wall {best.wall_goodput_mbps / 1000:5.2f} Gbit/s, "
        f"{best.cpu_seconds:6.2f} s CPU {best.cpu_goodput_mbps / 1000:5.2f} Gbit/s"
        + (f" (median {median.cpu_goodput_mbps / 1000:5.2f})" if len(results) > 2 else "")
        + f"; CPU per 64 KB: {per_skb:6.0f} µs, per MSS: {per_skb / 45:5.1f} µs; "
        f"TCP received {insegs} skbs, {nbytes / max(insegs, 1) / 1024:5.1f} KB each"
    )
    gbps = best.cpu_goodput_mbps / 1000
    if name in TARGETS:
        print(
            f"  target ≥ {TARGETS[name]:g} Gbit/s per CPU s: "
            + anchors.verdict(gbps, TARGETS[name], at_least=True)
        )
    found: list[anchors.Anchor] = []
    if with_anchors:
        found = [
            anchors.trio_bulk_floor(mbytes, send_size),
            anchors.kernel_tcp(mbytes, send_size, tso=tso, gso=gso, gro=gro, family=family),
        ]
        for anchor in found:
            print(anchor.line())
    return gbps, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mbytes", type=int, default=64)
    parser.add_argument(
        "--profile",
        action="store_true",
        help="cProfile each run (of --config, default gso+gro alone)",
    )
    parser.add_argument("--runs", type=int, default=1, help="report the best of R runs")
    parser.add_argument("--link", choices=("veth", "nic"), default="veth")
    parser.add_argument("--family", type=int, choices=(4, 6), default=4)
    parser.add_argument("--config", choices=tuple(CONFIGS), action="append", help="only these")
    parser.add_argument(
        "--send-size",
        type=int,
        default=None,
        help="bytes per send() (netperf -m); default 45 MSS, one full GSO skb",
    )
    parser.add_argument(
        "--callgrind", action="store_true", help="instructions per 64 KB under callgrind"
    )
    parser.add_argument(
        "--anchors",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the Trio floor and the kernel over veth beside each figure (default: on)",
    )
    parser.add_argument(
        "--bh-polls",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="NAPI polls at the transmit's local_bh_enable (default: on)",
    )
    parser.add_argument("--step-clock", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--quiet", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    global BH_POLLS
    BH_POLLS = args.bh_polls
    anchors.repeatable_scheduling()  # the same task order from the first step
    if args.send_size is None:
        args.send_size = SEND_SIZE6 if args.family == 6 else SEND_SIZE
    if args.callgrind:
        callgrind(args.config or ["gso+gro", "none"], args.family, args.send_size)
        return
    for name in CONFIGS:
        if args.config is not None and name not in args.config:
            continue
        if args.profile and args.config is None and name != "gso+gro":
            continue  # --profile without --config: gso+gro alone
        measure(
            name,
            args.mbytes,
            runs=args.runs,
            link=args.link,
            family=args.family,
            send_size=args.send_size,
            profile=args.profile,
            with_anchors=args.anchors and args.link == "veth",
            clock=StepClock() if args.step_clock else None,
            quiet=args.quiet,
        )


if __name__ == "__main__":
    main()
