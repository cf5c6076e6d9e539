"""One-way UDP between two hosts over veth, socket to socket, in functional mode.

Prints packets per second of wall time for a 200-byte payload, with batched
calls (``sendmmsg``/``recvmmsg``, 64 datagrams per call: one Trio checkpoint per
batch) and with one datagram per call, each also per second of CPU time (the
figure to compare on a loaded machine). The issue's targets: at least 150,000
packets/s on one core batched, i.e. at most 45,000 instructions per packet,
and 80,000 packets/s with one datagram per call. Beside each figure it prints
the target and the anchors of the same run (``benchmarks/anchors.py``): the
Trio memory-channel floor for the same number of datagrams, batched the same
way, and the kernel over veth between two network namespaces (root only;
``--no-anchors`` leaves them out).

    python benchmarks/udp_pps.py [--packets N] [--batch B] [--profile] [--callgrind]
                                 [--no-anchors]

Both run as a lab does by default: with the NAPI polls a transmit raises at
its ``local_bh_enable`` (``netstack.core.napi``, "Polls at local_bh_enable":
the receiver's poll and ``udp_rcv`` in the sender's task, as the kernel runs
them; a batch of 64 is 64 polls of one datagram, each in its transmit).
``--no-bh-polls`` opens the lab with ``polls_at_bh_enable=False`` (b's NAPI
task polls after each call: one poll per batch), for comparison; each line
says which it measured.

``--callgrind`` runs the batched benchmark twice under ``valgrind
--tool=callgrind`` (``PYTHONHASHSEED=0``), with 0 and with ``--packets``
datagrams (1,280 by default in that mode), and prints the difference of the
two instruction counts per packet: start-up cancels, and the machine's load
does not move the figure. With ``--stream-only`` callgrind counts the stream
alone (``--instr-atstart=no``, switched on after the lab is built and a
batch has warmed the interpreter up): the figure per lever, repeatable
within about 20 instructions per packet.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
from pathlib import Path

import netstack

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import anchors, stream

TARGET_BATCHED = 150_000  # packets/s on one core (per CPU second)
TARGET_PER_CALL = 80_000
TARGET_INSTRUCTIONS = 45_000  # per packet, batched
# polls at local_bh_enable (module doc): the lab's default; --no-bh-polls turns them off
BH_POLLS = True


def bh_polls(batch: int) -> bool:
    """Whether a run of *batch* datagrams a call polls at local_bh_enable (either
    batch: the option, the lab's default unless ``--no-bh-polls``)."""
    del batch
    return BH_POLLS


def polls_note(batch: int) -> str:
    """Which receive the run measured, for its printed line."""
    return "polls at local_bh_enable" if bh_polls(batch) else "NAPI tasks (--no-bh-polls)"


async def run_once(packets: int, batch: int, instrument: bool = False) -> tuple[float, float, int]:
    async with netstack.open_lab(polls_at_bh_enable=bh_polls(batch)) as lab:
        a, b = lab.add_host("a"), lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0")
        a.ip("addr add 10.0.0.1/24 dev eth0")
        b.ip("addr add 10.0.0.2/24 dev eth0")
        elapsed, cpu = await stream.udp_stream(
            a, b, "10.0.0.2", packets, batch, instrument=instrument
        )
        drops = a.dev("eth0").statistics().tx_dropped + b.snmp()["Udp"].RcvbufErrors
        return elapsed, cpu, drops


def callgrind_instructions(packets: int, batch: int) -> int:
    """Instructions of one batched run of *packets* datagrams under callgrind."""
    argv = [__file__, "--packets", str(packets), "--batch", str(batch), "--batched-only"]
    argv.append("--bh-polls" if bh_polls(batch) else "--no-bh-polls")
    return anchors.callgrind_instructions([*argv, "--no-anchors"])


def callgrind_stream_instructions(packets: int, batch: int) -> int:
    """Instructions of the stream alone (the lab and warm-up not counted) under callgrind.

    Raises:
        RuntimeError: no ``valgrind`` here, or no count in its output.
    """
    argv = [__file__, "--packets", str(packets), "--batch", str(batch), "--batched-only"]
    argv.append("--bh-polls" if bh_polls(batch) else "--no-bh-polls")
    return anchors.callgrind_instructions(
        [*argv, "--instrument-stream", "--no-anchors"], instr_atstart=False
    )


def callgrind(packets: int, batch: int, stream_only: bool = False) -> float:
    """Print and return the instructions per packet (a run of *packets* less one of 0)."""
    count = callgrind_stream_instructions if stream_only else callgrind_instructions
    base = count(0, batch)
    total = count(packets, batch)
    per_packet = (total - base) / packets
    what = "the stream alone, " if stream_only else ""
    what += polls_note(batch) + ", "
    print(
        f"UDP 200 B over veth, batch {batch:3d}: {per_packet:,.0f} instructions "
        f"per packet (callgrind, {what}{packets} packets less 0); "
        f"target ≤ {TARGET_INSTRUCTIONS:,}: "
        + anchors.verdict(per_packet, TARGET_INSTRUCTIONS, at_least=False)
    )
    return per_packet


def measure(
    packets: int, batch: int, with_anchors: bool = True
) -> tuple[float, list[anchors.Anchor]]:
    """Print one mode's figures, its target and anchors; return its CPU packets/s and anchors."""
    elapsed, cpu, drops = netstack.run(run_once, packets, batch)
    pps = packets / max(cpu, 1e-9)
    target = TARGET_BATCHED if batch > 1 else TARGET_PER_CALL
    print(
        f"UDP 200 B over veth, batch {batch:3d}: {packets:8d} packets in {elapsed:6.2f} s "
        f"= {packets / elapsed:10,.0f} packets/s  ({1e6 * elapsed / packets:5.2f} µs/packet, "
        f"{drops} dropped); CPU {cpu:6.2f} s = {pps:10,.0f} packets/s; {polls_note(batch)}"
    )
    print(
        f"  target ≥ {target:,} packets/s per CPU s: " + anchors.verdict(pps, target, at_least=True)
    )
    found: list[anchors.Anchor] = []
    if with_anchors:
        found = [anchors.trio_udp_floor(packets, batch), anchors.kernel_udp(packets, batch)]
        for anchor in found:
            print(anchor.line())
    return pps, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--profile", action="store_true", help="print a cProfile summary")
    parser.add_argument(
        "--callgrind", action="store_true", help="instructions per packet under callgrind"
    )
    parser.add_argument(
        "--anchors",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the Trio floor and the kernel over veth beside each figure (default: on)",
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
    parser.add_argument("--batched-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--instrument-stream", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    global BH_POLLS
    BH_POLLS = args.bh_polls
    anchors.repeatable_scheduling()  # the same task order from the first step
    if args.callgrind:
        packets = args.packets if args.packets != parser.get_default("packets") else 1280
        callgrind(packets, args.batch, args.stream_only)
        return
    if args.instrument_stream:
        netstack.run(run_once, args.packets, args.batch, True)
        return
    for batch in (args.batch, 1) if not args.batched_only else (args.batch,):
        n = args.packets if batch > 1 else max(args.packets // 10, 1000)
        if n == 0:
            netstack.run(run_once, n, batch)
            continue
        if args.profile and batch > 1:
            prof = cProfile.Profile()
            prof.enable()
            netstack.run(run_once, n, batch)
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        measure(n, batch, args.anchors)


if __name__ == "__main__":
    main()
