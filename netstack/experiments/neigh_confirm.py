"""Seed 2 (2012): "net: output path optimizations" — neighbour confirmation.

Theory of operation: 24 threads each make UDP ``sendto(…, MSG_CONFIRM)`` calls
on a dummy device (no qdisc, no wire: the whole cost is the output path).
``MSG_CONFIRM`` makes every packet confirm the neighbour's reachability. Before
the patch ``n->confirmed = jiffies`` is stored on every packet: the line that
holds ``confirmed`` — which every CPU also reads to look the neighbour up —
is dirtied by each sender in turn, so every packet pays a transfer to read
it and another to write it. After the patch the store happens only when
jiffies changed (once per tick), the line stays shared, and the lookups hit.
The patch also copies the Ethernet header from ``hh_cache`` as a fixed 16-byte
block instead of an out-of-line ``memcpy``. Published (4 runs of 24 × 1M
calls): 2.262 s before, 1.894 s after.

The machine is the 24-thread server the seed was measured on (assumed a
dual-socket, 6-core, hyper-threaded Westmere-EP at 2.67 GHz: the seed says
only "24 threads").

Kernel: include/net/dst.h dst_neigh_output(), include/net/neighbour.h
neigh_hh_output() (the 2012 patch).
"""

from __future__ import annotations

import trio

from netstack.core.patches import Patches
from netstack.core.sock import MSG_CONFIRM
from netstack.cpu.timed import Machine, TimedModel
from netstack.experiments.common import (
    METER,
    ExperimentResult,
    Figure,
    Run,
    Which,
    run_step,
    udp_senders,
)
from netstack.host.lab import open_lab
from netstack.ipv4 import ipv4_of

__all__ = ["MACHINE", "neigh_confirm"]

MACHINE = Machine(
    name="2 x 6-core hyper-threaded Xeon (Westmere-EP class), 2.67 GHz",
    sockets=2,
    cores_per_socket=6,
    threads_per_core=2,
    ghz=2.67,
)
PUBLISHED_BEFORE_S = (2.247 + 2.235 + 2.247 + 2.318) / 4
PUBLISHED_AFTER_S = (1.884 + 1.905 + 1.891 + 1.895) / 4
PUBLISHED_CALLS = 1_000_000  # per thread
DST = 0x0A000002  # 10.0.0.2, on dummy0's subnet


async def _one_run(patches: Patches, threads: int, calls: int, size: int) -> tuple[Run, int]:
    model = TimedModel(MACHINE)
    async with open_lab(timed=model) as lab:
        host = lab.add_host("a", cpus=threads, patches=patches)
        host.ip("link add dummy0 type dummy")
        host.ip("link set dummy0 up")
        host.ip("addr add 10.0.0.1/24 dev dummy0")
        senders = await udp_senders(
            host, threads, calls, src="10.0.0.1", dst=DST, size=size, flags=MSG_CONFIRM
        )
        senders[0].op()  # create the (NOARP) neighbour
        await trio.sleep(0.001)

        arp = ipv4_of(host.net).arp_tbl
        writes0 = arp.confirm_writes
        with model.measuring():
            await model.run_threads(senders)
        report = model.report()
        writes = arp.confirm_writes - writes0
    line = next(ln for ln in report.lines if ln.name.startswith("a: neigh 10.0.0.2"))
    per_call_ns = report.elapsed_ns / calls
    label = "after" if patches.neigh_confirm_elide else "before"
    published = PUBLISHED_AFTER_S if label == "after" else PUBLISHED_BEFORE_S
    figures = (
        Figure("elapsed, 24 x 1M calls", "s", per_call_ns * PUBLISHED_CALLS * 1e-9, published),
        Figure("time per call", "us", per_call_ns / 1e3, published / PUBLISHED_CALLS * 1e6),
        Figure("confirmed-line bounces", "per call", line.bounces / (calls * threads)),
        Figure("n->confirmed stores", "per call", writes / (calls * threads)),
    )
    return Run(label, figures, report), line.bounces


def _experiment(which: Which, threads: int, calls: int, size: int) -> ExperimentResult:
    runs = []
    bounces = {}
    METER.plan(2 if which == "both" else 1)
    if which in ("before", "both"):
        r, b = run_step(
            _one_run, Patches(neigh_confirm_elide=False, hh_fast_copy=False), threads, calls, size
        )
        runs.append(r)
        bounces["before"] = b
    if which in ("after", "both"):
        r, b = run_step(_one_run, Patches(), threads, calls, size)
        runs.append(r)
        bounces["after"] = b
    headline: list[Figure] = []
    if which == "both":
        before, after = runs
        t_b = before.figure("elapsed, 24 x 1M calls").emulated
        t_a = after.figure("elapsed, 24 x 1M calls").emulated
        headline.append(
            Figure("elapsed before/after", "x", t_b / t_a, PUBLISHED_BEFORE_S / PUBLISHED_AFTER_S)
        )
        headline.append(
            Figure(
                "confirmed-line bounces after/before",
                "x",
                bounces["after"] / max(1, bounces["before"]),
            )
        )
    return ExperimentResult(
        "neigh-confirm",
        "seed 2 (2012): net: output path optimizations",
        tuple(runs),
        tuple(headline),
    )


def neigh_confirm(
    which: Which = "both", *, cpus: int = 24, calls: int = 1000, size: int = 200
) -> ExperimentResult:
    """Run seed 2's benchmark before and/or after its patch.

    Args:
        which: ``"before"``, ``"after"`` or ``"both"``.
        cpus: sending threads, one per CPU (the seed: 24).
        calls: ``sendto`` calls per thread (the seed: 1,000,000; the default
            is enough for the model to reach its steady state).
        size: UDP payload bytes.
    """
    if not 1 <= cpus <= MACHINE.ncpus:
        raise ValueError(f"cpus must be 1..{MACHINE.ncpus}")
    return _experiment(which, cpus, calls, size)
