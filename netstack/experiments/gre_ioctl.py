"""Seed 3 (2012): "fix ip_gre lockless xmits" — the ``ip tunnel add`` path.

Theory of operation: the 2010 patch set ``NETIF_F_LLTX`` on GRE devices in
``ipgre_newlink`` — the ``ip link add`` path. ``ip tunnel add`` creates the
device through the ``SIOCADDTUNNEL`` ioctl and ``ipgre_tunnel_locate``, which
never ran that code, so GRE tunnels made that way still took
``HARD_TX_LOCK`` on every packet; IPIP set LLTX in its setup function and never
had the problem. The seed's test: a tunnel bound to ``lo``
(``ip tunnel add test0 mode gre remote 10.5.1.1 dev lo``), a route through it,
and 24 cores sending UDP to 10.5.2.1 as fast as they can. Published packets
sent: ipip 19,372,306; gre before the fix 4,839,753; after 19,133,873.

The tunnel's outer packets go out ``lo`` and come back in on the same CPU's
backlog (``netif_rx``), where they are routed and dropped (10.5.1.1 is not
local and the host does not forward): that receive work is outside the
tunnel's lock, which is why the serialised share is smaller than in seed 1.
The machine is seed 2's 24-thread server (the same team and year).

Kernel: net/ipv4/ip_gre.c ipgre_tunnel_locate() (the 2012 fix),
net/ipv4/ipip.c ipip_tunnel_setup().
"""

from __future__ import annotations

import trio

from netstack.core.patches import Patches
from netstack.cpu.timed import TimedModel
from netstack.experiments.common import (
    METER,
    ExperimentResult,
    Figure,
    Run,
    run_step,
    udp_senders,
)
from netstack.experiments.neigh_confirm import MACHINE
from netstack.host.lab import open_lab

__all__ = ["gre_ioctl"]

PUBLISHED = {"ipip": 19_372_306, "gre before": 4_839_753, "gre after": 19_133_873}
DST = 0x0A050201  # 10.5.2.1, routed into the tunnel


async def _one_run(label: str, threads: int, calls: int, size: int) -> Run:
    mode = "ipip" if label == "ipip" else "gre"
    patches = Patches(gre_lltx_ioctl=False) if label == "gre before" else Patches()
    model = TimedModel(MACHINE)
    async with open_lab(timed=model) as lab:
        host = lab.add_host("a", cpus=threads, patches=patches)
        for cmd in (
            f"tunnel add test0 mode {mode} remote 10.5.1.1 dev lo",
            "link set test0 up",
            "addr add 10.6.0.1 dev test0",
            "route add 10.5.2.0/24 dev test0",
        ):
            host.ip(cmd)
        senders = await udp_senders(host, threads, calls, src="10.6.0.1", dst=DST, size=size)
        senders[0].op()
        await trio.sleep(0.001)
        with model.measuring():
            await model.run_threads(senders)
            await trio.sleep(0.001)  # let the backlogs drain (charged to their CPUs)
        report = model.report()
        lltx = bool(host.dev("test0").features & (1 << 12))
        sysfs = host.sysfs("class/net/test0/features").strip()
    pps = threads * calls / report.elapsed_ns * 1e9
    figures = (
        Figure("packets/s", "Mpps", pps / 1e6),
        Figure("packets sent", "relative to ipip", 0.0, None),  # filled in by the caller
        Figure("test0 has NETIF_F_LLTX", "bool", float(lltx)),
        Figure("/sys/class/net/test0/features", "hex", float(int(sysfs, 16))),
    )
    return Run(label, figures, report)


def _experiment(which: str, threads: int, calls: int, size: int) -> ExperimentResult:
    labels = {
        "both": ("ipip", "gre before", "gre after"),
        "before": ("ipip", "gre before"),
        "after": ("ipip", "gre after"),
    }[which]
    METER.plan(len(labels))
    raw = [run_step(_one_run, label, threads, calls, size) for label in labels]
    ipip_pps = raw[0].figure("packets/s").emulated
    runs = []
    for r in raw:
        rel = Figure(
            "packets sent",
            "relative to ipip",
            r.figure("packets/s").emulated / ipip_pps,
            PUBLISHED[r.label] / PUBLISHED["ipip"],
        )
        runs.append(_with_figure(r, rel))
    headline = tuple(
        Figure(
            f"{r.label}/ipip",
            "x",
            r.figure("packets sent").emulated,
            PUBLISHED[r.label] / PUBLISHED["ipip"],
        )
        for r in runs[1:]
    )
    return ExperimentResult(
        "gre-ioctl", "seed 3 (2012): fix ip_gre lockless xmits", tuple(runs), headline
    )


def _with_figure(r: Run, fig: Figure) -> Run:
    """*r* with the figure of *fig*'s name replaced by *fig*."""
    figs = tuple(fig if f.name == fig.name else f for f in r.figures)
    return Run(r.label, figs, r.report)


def gre_ioctl(
    which: str = "both", *, cpus: int = 24, calls: int = 200, size: int = 200
) -> ExperimentResult:
    """Run seed 3's test: ipip, and gre made by ``ip tunnel add`` without and with the fix.

    Args:
        which: ``"before"`` (ipip and unfixed gre), ``"after"`` (ipip and
            fixed gre) or ``"both"``.
        cpus: sending threads, one per CPU (the seed: 24).
        calls: datagrams per thread.
        size: UDP payload bytes.
    """
    if not 1 <= cpus <= MACHINE.ncpus:
        raise ValueError(f"cpus must be 1..{MACHINE.ncpus}")
    return _experiment(which, cpus, calls, size)
