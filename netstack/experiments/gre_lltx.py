"""Seed 1 (2010): "ip_gre: lockless xmit" — HARD_TX_LOCK on a GRE device.

Theory of operation: 16 threads send 200-byte UDP datagrams through one GRE
tunnel made with ``ip link add … type gre``. A GRE device has no queue, so each
packet reaches the tunnel's ``ndo_start_xmit`` straight from
``dev_queue_xmit`` — under ``HARD_TX_LOCK`` (the tx queue's ``_xmit_lock``)
unless the device has ``NETIF_F_LLTX``. Everything the tunnel does per packet
happens inside that lock: building the outer header, routing it, the whole
outer IP output and the underlay's transmit. Before the patch the 16 CPUs take
turns through that section and spin the rest of the time; after it they run
in parallel. Published: 180.1 s real / 2,870 s sys before, 29.8 s / 453 s after
(16 × 10M packets), 6.05× faster.

The machine is the seed's: two quad-core hyper-threaded Xeon E5540 at 2.53 GHz
(16 hardware threads). The seed does not say where the outer packets went;
here the tunnel's remote is on a dummy device (no qdisc, no lock), so the
only lock in the path is the tunnel's own.

Kernel: net/ipv4/ip_gre.c ipgre_newlink() (the 2010 patch), net/core/dev.c
__dev_queue_xmit() (HARD_TX_LOCK).
"""

from __future__ import annotations

import attrs
import trio

from netstack.core.patches import Patches
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

__all__ = ["MACHINE", "gre_lltx"]

MACHINE = Machine()  # 2 x Xeon E5540, the reference machine
PUBLISHED = {"before": (180.094, 2870.103), "after": (29.756, 453.012)}  # real, sys (s)
PUBLISHED_PACKETS = 10_000_000  # per thread
DST = 0x0A020002  # 10.2.0.2, behind the tunnel


async def _one_run(
    patches: Patches, threads: int, calls: int, size: int, machine: Machine = MACHINE
) -> Run:
    model = TimedModel(machine)
    async with open_lab(timed=model) as lab:
        host = lab.add_host("a", cpus=threads, patches=patches)
        for cmd in (
            "link add dummy0 type dummy",
            "link set dummy0 up",
            "addr add 10.1.0.1/24 dev dummy0",
            "link add gre1 type gre remote 10.1.0.2 local 10.1.0.1",
            "link set gre1 up",
            "addr add 10.2.0.1/24 dev gre1",
        ):
            host.ip(cmd)
        senders = await udp_senders(host, threads, calls, src="10.2.0.1", dst=DST, size=size)
        senders[0].op()  # the neighbours and routes exist before measuring
        await trio.sleep(0.001)
        with model.measuring():
            await model.run_threads(senders)
        report = model.report()
        lltx = bool(host.dev("gre1").features & (1 << 12))
    label = "after" if patches.gre_lltx else "before"
    scale = PUBLISHED_PACKETS / calls
    sys_ns = sum(c.sys + c.softirq for c in report.cpus) / 100 * report.elapsed_ns
    user_ns = sum(c.user for c in report.cpus) / 100 * report.elapsed_ns
    real, sys_s = PUBLISHED[label]
    figures = (
        Figure("real, 16 x 10M packets", "s", report.elapsed_ns * scale * 1e-9, real),
        Figure("sys", "s", sys_ns * scale * 1e-9, sys_s),
        Figure("user", "s", user_ns * scale * 1e-9, 9.365 if label == "before" else 11.097),
        Figure(
            "packets/s",
            "Mpps",
            threads * calls / report.elapsed_ns * 1e3,
            threads * PUBLISHED_PACKETS / real / 1e6,
        ),
        Figure("CPU time per packet", "us", (sys_ns + user_ns) / (threads * calls) / 1e3),
        Figure("gre1 has NETIF_F_LLTX", "bool", float(lltx)),
    )
    return Run(label, figures, report)


def _experiment(
    which: Which, threads: int, calls: int, size: int, machine: Machine = MACHINE
) -> ExperimentResult:
    runs = []
    METER.plan(2 if which == "both" else 1)
    if which in ("before", "both"):
        runs.append(run_step(_one_run, Patches(gre_lltx=False), threads, calls, size, machine))
    if which in ("after", "both"):
        runs.append(run_step(_one_run, Patches(), threads, calls, size, machine))
    headline = []
    if which == "both":
        before, after = runs
        headline.append(
            Figure(
                "real before/after",
                "x",
                before.figure("real, 16 x 10M packets").emulated
                / after.figure("real, 16 x 10M packets").emulated,
                PUBLISHED["before"][0] / PUBLISHED["after"][0],
            )
        )
        headline.append(
            Figure(
                "sys before/after",
                "x",
                before.figure("sys").emulated / after.figure("sys").emulated,
                PUBLISHED["before"][1] / PUBLISHED["after"][1],
            )
        )
    return ExperimentResult(
        "gre-lltx", "seed 1 (2010): ip_gre: lockless xmit", tuple(runs), tuple(headline)
    )


def gre_lltx(
    which: Which = "both",
    *,
    cpus: int = 16,
    calls: int = 300,
    size: int = 200,
    sockets: int = MACHINE.sockets,
) -> ExperimentResult:
    """Run seed 1's benchmark before and/or after its patch.

    Args:
        which: ``"before"``, ``"after"`` or ``"both"``.
        cpus: sending threads, one per CPU (the seed: 16).
        calls: datagrams per thread (the seed: 10,000,000).
        size: UDP payload bytes (the seed: 200).
        sockets: quad-core hyper-threaded E5540s in the machine (the seed: 2,
            16 CPUs; 8 make 64, for the speed-up as a curve over 1–64 CPUs).
    """
    if sockets < 1:
        raise ValueError("sockets must be at least 1")
    machine = MACHINE
    if sockets != MACHINE.sockets:
        name = MACHINE.name.replace("2 x", f"{sockets} x", 1)
        machine = attrs.evolve(MACHINE, sockets=sockets, name=name)
    if not 1 <= cpus <= machine.ncpus:
        raise ValueError(f"cpus must be 1..{machine.ncpus}")
    return _experiment(which, cpus, calls, size, machine)
