"""Seed 5 (2014): "qdisc: validate skb without holding lock".

Theory of operation: two ``netperf TCP_STREAM`` flows leave one host through
one 10 Gbit/s NIC with one TX queue, so both senders — and the softirqs
that transmit on ACKs — go through one qdisc. Every ``__dev_xmit_skb``
takes its root lock (and the busylock when the qdisc is running); the CPU
that runs the qdisc holds the root lock while it dequeues. With bulk
dequeue on (3.18), the skbs dequeued were validated — ``validate_xmit_skb``:
software GSO segmentation (``skb_gso_segment``) and checksums — *inside*
that lock; Eric Dumazet's patch moves validation to ``sch_direct_xmit``,
after the lock is released. Jesper Dangaard Brouer measured
``_raw_spin_lock`` in ``perf top``: with GSO off and TSO off 2.66 % before,
1.44 % after (80 % of it from qdisc calls); with GSO on and TSO off 0.85 %
after (55 % from qdisc calls) — segmentation outside the lock being where
the patch shines.

Here host ``a`` (the seed's sender) runs two sender threads on CPUs 0 and 1,
host ``b`` two receiver threads; the link is a 10 Gbit/s NIC pair with
``ethtool -K eth0 tso off gso on|off`` on the sender. Each run measures
*duration* of virtual time; the figures are the sender's: the share of its
busy CPU time spent spinning, the part of that spent on the qdisc's root
lock and busylock, goodput, and how many validations ran under the lock.

Kernel: net/sched/sch_generic.c (dequeue_skb, sch_direct_xmit, the 2014
patch), net/core/dev.c (__dev_xmit_skb, validate_xmit_skb_list).
"""

from __future__ import annotations

from functools import partial

import attrs
import trio

from netstack.core.patches import Patches
from netstack.cpu.timed import Machine, Thread, TimedModel
from netstack.experiments.common import (
    METER,
    ExperimentResult,
    Figure,
    Run,
    Which,
    neigh_permanent,
    run_step,
    stream_pairs,
)
from netstack.host.lab import open_lab
from netstack.socket import AF_INET

__all__ = ["MACHINE", "qdisc_validate"]

MACHINE = Machine()
# perf top's _raw_spin_lock share (%) and the part of it from qdisc calls (%)
PUBLISHED_SPIN = {("off", "before"): 2.66, ("off", "after"): 1.44, ("on", "after"): 0.85}
PUBLISHED_QDISC_PART = {("off", "after"): 80.0, ("on", "after"): 54.74}
SEND_SIZE = 16384  # netperf's default send size for TCP_STREAM
RECV_SIZE = 87380  # netperf's default receive size


async def _one_run(
    patches: Patches, gso: str, flows: int, cpus: int, duration: float, seed: int = 0
) -> Run:
    model = TimedModel(MACHINE, trio_seed=seed)
    async with open_lab(timed=model) as lab:
        v4: dict[str, str | int] = {"net.ipv6.conf.all.disable_ipv6": 1}  # IPv4 TCP only
        a = lab.add_host("a", cpus=cpus, patches=patches, sysctls=v4)
        b = lab.add_host("b", cpus=cpus, sysctls=v4)
        lab.add_link("a:eth0", "b:eth0", kind="nic", rate=10e9)
        a.ip("addr add 10.0.0.1/24 dev eth0")
        b.ip("addr add 10.0.0.2/24 dev eth0")
        neigh_permanent(a, b, "10.0.0.2")
        neigh_permanent(b, a, "10.0.0.1")
        a.ethtool(f"-K eth0 tso off gso {gso}")
        pairs = await stream_pairs(a, b, AF_INET, "10.0.0.2", 12865, flows)
        payload = b"\x00" * SEND_SIZE
        threads = []
        for i, (tx, rx) in enumerate(pairs):
            threads.append(Thread(a.net.cpus, i, partial(tx.sendmsg, payload, None, 0), 1 << 60,
                                  wait=tx.wait_writable))  # fmt: skip
            threads.append(Thread(b.net.cpus, i, partial(rx.recvmsg, RECV_SIZE, 0), 1 << 60,
                                  wait=rx.wait_readable))  # fmt: skip
        una = [tx.snd_una for tx, _ in pairs]
        qdisc = a.dev("eth0").qdisc
        with model.measuring():
            with trio.move_on_after(duration):  # netperf -l
                await model.run_threads(threads)
            report = model.report()
        acked = sum((tx.snd_una - u) & 0xFFFFFFFF for (tx, _), u in zip(pairs, una, strict=True))
        mine = [c for c in report.cpus if c.host == "a"]
        busy = sum(100.0 - c.idle for c in mine)
        spin = sum(c.spin for c in mine)
        spin_ns = spin / 100 * report.elapsed_ns
        q_wait_ns = (qdisc.lock.waittime_total + qdisc.busylock.waittime_total) * 1e9
        locked, unlocked = qdisc.validations_locked, qdisc.validations_unlocked
        remote = qdisc.validations_remote
    label = "after" if patches.qdisc_validate_unlocked else "before"
    figures = (
        Figure(
            "_raw_spin_lock (share of busy CPU)",
            "%",
            100 * spin / busy if busy else 0.0,
            PUBLISHED_SPIN.get((gso, label)),
        ),
        Figure(
            "spinning on the qdisc locks",
            "%",
            100 * q_wait_ns / spin_ns if spin_ns else 0.0,
            PUBLISHED_QDISC_PART.get((gso, label)),
        ),
        Figure("goodput", "Gbit/s", acked * 8 / report.elapsed_ns),
        Figure("sender CPU busy (of all its CPUs)", "%", busy / len(mine)),
        Figure("validations under the root lock", "", float(locked)),
        Figure("validations outside it", "", float(unlocked)),
        Figure("skbs validated off their queuing CPU", "", float(remote)),
    )
    return Run(f"gso {gso}, {label}", figures, report)


def _mean(reps: list[Run]) -> Run:
    """The repetitions' mean figures, with the first repetition's report."""
    first = reps[0]
    n = len(reps)
    figures = tuple(
        attrs.evolve(f, emulated=sum(r.figures[i].emulated for r in reps) / n)
        for i, f in enumerate(first.figures)
    )
    return Run(first.label, figures, first.report)


def _experiment(
    which: Which, flows: int, cpus: int, duration: float, repeats: int
) -> ExperimentResult:
    runs: list[Run] = []
    spread: list[str] = []
    METER.plan(2 * (2 if which == "both" else 1) * repeats)
    for gso in ("off", "on"):
        sides = []
        if which in ("before", "both"):
            sides.append(Patches(qdisc_validate_unlocked=False))
        if which in ("after", "both"):
            sides.append(Patches())
        for patches in sides:
            # each run on its own Trio loop and clock, so none depends on another
            reps = [
                run_step(_one_run, patches, gso, flows, cpus, duration, seed)
                for seed in range(repeats)
            ]
            runs.append(_mean(reps))
            if repeats > 1:
                shares = ", ".join(f"{r.figures[0].emulated:.2f}" for r in reps)
                spread.append(f"{reps[0].label}: spin share of each repetition (%): {shares}")
    headline: list[Figure] = []
    spin = "_raw_spin_lock (share of busy CPU)"
    if which == "both":
        off_b, off_a, on_b, on_a = (r.figure(spin).emulated for r in runs)
        headline.append(
            Figure("spin share after/before, GSO off", "x", off_a / off_b if off_b else 0.0,
                   1.44 / 2.66)
        )  # fmt: skip
        headline.append(
            Figure("spin share after/before, GSO on", "x", on_a / on_b if on_b else 0.0)
        )
    if which in ("after", "both"):
        after = [r for r in runs if r.label.endswith("after")]
        off_a, on_a = (r.figure(spin).emulated for r in after)
        headline.append(
            Figure("spin share after, GSO on/GSO off", "x", on_a / off_a if off_a else 0.0,
                   0.85 / 1.44)
        )  # fmt: skip
    return ExperimentResult(
        "qdisc-validate",
        "seed 5 (2014): qdisc: validate skb without holding lock",
        tuple(runs),
        tuple(headline),
        tuple(spread),
    )


def qdisc_validate(
    which: Which = "both",
    *,
    cpus: int = 4,
    flows: int = 2,
    duration: float = 0.003,
    repeats: int = 4,
) -> ExperimentResult:
    """Run seed 5's benchmark before and/or after its patch, GSO off and on.

    Two TCP flows sharing a qdisc are chaotic: which CPU ends up sending
    what depends on the order of events that happen at the same instant,
    and the spin share of one 3 ms run moves by ±15 % with Trio's tie-break
    seed. Each figure is therefore the mean of *repeats* runs that differ
    only in that seed (``TimedModel(trio_seed=…)``); the result's notes list
    each repetition's spin share.

    Args:
        which: ``"before"``, ``"after"`` or ``"both"``.
        cpus: CPUs of each host (the flows' threads take the first ones).
        flows: TCP_STREAM connections (the seed: 2).
        duration: virtual seconds each run measures (netperf ``-l``).
        repeats: runs averaged per configuration.
    """
    if not 1 <= flows <= cpus <= MACHINE.ncpus:
        raise ValueError(f"need 1 <= flows <= cpus <= {MACHINE.ncpus}")
    if duration <= 0:
        raise ValueError("duration must be positive")
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    return _experiment(which, flows, cpus, duration, repeats)
