"""Seed 4 (2014): "net: enable GRO for IPIP and SIT".

Theory of operation: ``netperf TCP_STREAM`` runs between two hosts through an
IP-in-IP tunnel over a 10 Gbit/s link, with 1 and with 20 connections. The
receiving NIC (the seed's bnx2x) does not give CHECKSUM_COMPLETE for
tunnelled packets and hashes them on the outer 2-tuple only, so every packet
of every connection arrives on one RX queue and is processed by the one CPU
that queue interrupts. Before Tom Herbert's patch (``Patches.ipip_sit_gro``)
the IPIP offload had no GRO callbacks: GRO on the NIC's NAPI flushes every
outer packet at once, and each goes alone through ``__netif_receive_skb_core``,
``ip_rcv`` and its route lookup, ``ipip_rcv`` → ``ip_tunnel_rcv`` (lookup,
decapsulation) into the tunnel's ``gro_cells``, whose NAPI merges the inner
TCP segments again — checksumming every byte (``csum_partial``: no
CHECKSUM_COMPLETE) — before the inner ``ip_rcv`` and ``tcp_v4_rcv``. That
CPU saturates below line rate. With the patch the outer and inner headers are
matched in GRO on the NIC's NAPI, and a dozen or more packets cross the
outer path as one: its per-packet costs are paid once per aggregate, the
per-byte checksum remains, and the wire becomes the limit.

SIT (IPv6 in IPv4) is the same but for one step: sit.c's ``ipip6_rcv`` hands
the inner packet to ``netif_rx``, not to GRO cells, so before the patch its
inner TCP sees every segment — SIT's larger published gain.

The sender's tunnel device takes 64 KB GSO skbs (``IPIP_FEATURES``,
``SIT_FEATURES``); ``iptunnel_handle_offloads`` marks them
``SKB_GSO_IPXIP4`` and the NIC, which cannot segment them in hardware, has
them cut by software GSO (``inet_gso_segment`` → ``ipip_gso_segment`` →
``tcp4_gso_segment``, or the IPv6 equivalents), so the sender is not what
limits either run.

Each run measures *duration* of virtual time after the connections are
established. Figures: goodput (bytes acknowledged), each receiver CPU's busy
share, the average utilisation of each host, how many packets GRO merged per
skb on the NIC and (IPIP) in the tunnel's gro_cells, and the GRO hold-list
evictions. Each run has its own Trio loop and virtual clock.

Kernel: net/ipv4/af_inet.c (ipip_gro_receive, ipip_gro_complete,
ipip_gso_segment), net/ipv4/ipip.c (IPIP_FEATURES), net/ipv4/ip_tunnel_core.c
(iptunnel_handle_offloads), net/ipv6/ip6_offload.c (sit_gro_receive),
net/ipv6/sit.c (ipip6_rcv).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

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
from netstack.gro import gro_statistics
from netstack.host.lab import open_lab
from netstack.socket import AF_INET, AF_INET6

if TYPE_CHECKING:
    from netstack.host.host import Host

__all__ = ["MACHINE", "PUBLISHED", "TUNNELS", "ipip_sit_gro"]

MACHINE = Machine()
# (tunnel, connections, before|after) -> (Mbit/s, CPU utilisation %), as published
PUBLISHED: dict[tuple[str, int, str], tuple[float, float]] = {
    ("ipip", 1, "before"): (6544.71, 6.53),
    ("ipip", 20, "before"): (9284.54, 13.79),
    ("ipip", 1, "after"): (9279.53, 5.73),
    ("ipip", 20, "after"): (7279.35, 7.14),
    ("sit", 1, "before"): (5653.36, 6.68),
    ("sit", 20, "before"): (9154.61, 18.88),
    ("sit", 1, "after"): (9143.36, 2.95),
    ("sit", 20, "after"): (6255.3, 7.09),
}
SEND_SIZE = 16384  # netperf's default send size for TCP_STREAM
RECV_SIZE = 87380  # netperf's default receive size
PORT = 12865
OUTER = ("10.0.0.1", "10.0.0.2")
INNER = {"ipip": ("10.1.0.1", "10.1.0.2"), "sit": ("fd00:1::1", "fd00:1::2")}
TUNNELS = ("ipip", "sit")


def _setup(a: Host, b: Host, tunnel: str) -> None:
    inner = INNER[tunnel]
    for h, (local, remote), addr in ((a, OUTER, inner[0]), (b, OUTER[::-1], inner[1])):
        h.ip(f"addr add {local}/24 dev eth0")
        h.ip(f"link add {tunnel}1 type {tunnel} local {local} remote {remote}")
        if tunnel == "sit":
            # IPv6 only on the tunnel (the hosts boot with it off by default:
            # no router solicitations or neighbour probes on eth0)
            h.sysctl(f"net.ipv6.conf.{tunnel}1.disable_ipv6=0")
            h.ip(f"-6 addr add {addr}/64 dev {tunnel}1 nodad")
        else:
            h.ip(f"addr add {addr}/24 dev {tunnel}1")
        h.ip(f"link set {tunnel}1 up")
    neigh_permanent(a, b, OUTER[1])
    neigh_permanent(b, a, OUTER[0])
    # bnx2x in 2014: IPIP and SIT hashed on the outer 2-tuple (RSS does that
    # for any protocol without ports) and checksummed by nobody (rx_csum, see
    # the link); interrupts coalesced as its default rx-usecs
    b.ethtool("-C eth0 rx-usecs 25")


def _rx_cpu(b: Host) -> int:
    """The CPU whose RX queue the tunnelled packets hash to."""
    nic = b.dev("eth0")
    counts = nic.priv.rx_queue_packets
    q = max(range(len(counts)), key=lambda i: counts[i])
    return q % len(b.net.cpus.cpus)


async def _one_run(tunnel: str, patches: Patches, conns: int, cpus: int, duration: float) -> Run:
    model = TimedModel(MACHINE)
    family = AF_INET6 if tunnel == "sit" else AF_INET
    server = INNER[tunnel][1]
    async with open_lab(timed=model) as lab:
        v6_off: dict[str, str | int] = {"net.ipv6.conf.default.disable_ipv6": 1}
        a = lab.add_host("a", cpus=cpus, patches=patches, sysctls=v6_off)
        b = lab.add_host("b", cpus=cpus, patches=patches, sysctls=v6_off)
        lab.add_link("a:eth0", "b:eth0", kind="nic", rate=10e9, rx_csum="unnecessary")
        _setup(a, b, tunnel)
        pairs = await stream_pairs(a, b, family, server, PORT, conns)
        rx_cpu = _rx_cpu(b)
        # netperf's receivers run where the scheduler puts them: away from the
        # CPU busy with the NIC's interrupts, when there is another one
        others = [c for c in range(cpus) if c != rx_cpu] or [rx_cpu]
        payload = b"\x00" * SEND_SIZE
        threads = []
        for i, (tx, rx) in enumerate(pairs):
            threads.append(Thread(a.net.cpus, i % cpus, partial(tx.sendmsg, payload, None, 0),
                                  1 << 60, wait=tx.wait_writable))  # fmt: skip
            threads.append(Thread(b.net.cpus, others[i % len(others)],
                                  partial(rx.recvmsg, RECV_SIZE, 0), 1 << 60,
                                  wait=rx.wait_readable))  # fmt: skip
        una = [tx.snd_una for tx, _ in pairs]
        gro0 = gro_statistics(b.net, "eth0")
        cells0 = gro_statistics(b.net, f"{tunnel}1")
        with model.measuring():
            with trio.move_on_after(duration):  # netperf -l
                await model.run_threads(threads)
            report = model.report()
        acked = sum((tx.snd_una - u) & 0xFFFFFFFF for (tx, _), u in zip(pairs, una, strict=True))
        gro1 = gro_statistics(b.net, "eth0")
        cells1 = gro_statistics(b.net, f"{tunnel}1")
    label = "after" if patches.ipip_sit_gro else "before"
    by_host = {h: sorted((c for c in report.cpus if c.host == h), key=lambda c: c.cpu)
               for h in ("a", "b")}  # fmt: skip

    def util(h: str) -> float:
        cs = by_host[h]
        return sum(100.0 - c.idle for c in cs) / len(cs)

    received = gro1.received - gro0.received
    up = (gro1.normal - gro0.normal) + (gro1.complete - gro0.complete)
    cells_in = cells1.received - cells0.received
    cells_up = (cells1.normal - cells0.normal) + (cells1.complete - cells0.complete)
    pub = PUBLISHED.get((tunnel, conns, label))
    figures = (
        Figure("throughput", "Mbit/s", acked * 8 / report.elapsed_ns * 1e3, pub and pub[0]),
        # (the seed's "CPU utilization" is of a larger machine of unknown size:
        # only its before/after ratio is compared, in the headline)
        Figure("receiver CPU utilisation", "% of all", util("b")),
        *(Figure(f"receiver CPU {c.cpu} busy", "%", 100.0 - c.idle) for c in by_host["b"]),
        Figure("sender CPU utilisation", "% of all", util("a")),
        Figure("CPU of the RX interrupts", "", float(rx_cpu)),
        Figure("wire packets per skb up the stack", "", received / up if up else 0.0),
        Figure("GRO hold-list evictions", "", float(gro1.flush_overflow - gro0.flush_overflow)),
    )
    if tunnel == "ipip":  # (SIT has no gro_cells: its inner packets go to netif_rx)
        # the tunnel's gro_cells merge the inner TCP segments again after decapsulation
        ratio = cells_in / cells_up if cells_up else 0.0
        figures += (Figure("ipip1 skbs per skb into TCP (gro_cells)", "", ratio),)
    return Run(f"{tunnel}, {conns} conn, {label}", figures, report)


def _experiment(
    which: Which, tunnels: tuple[str, ...], conns: tuple[int, ...], cpus: int, duration: float
) -> ExperimentResult:
    runs: list[Run] = []
    headline: list[Figure] = []
    METER.plan(len(tunnels) * len(conns) * (2 if which == "both" else 1))
    for tunnel in tunnels:
        for n in conns:
            # each run on its own Trio loop and virtual clock, so that its figures
            # do not depend on which runs came before it
            pair = []
            if which in ("before", "both"):
                pair.append(
                    run_step(_one_run, tunnel, Patches(ipip_sit_gro=False), n, cpus, duration)
                )
            if which in ("after", "both"):
                pair.append(run_step(_one_run, tunnel, Patches(), n, cpus, duration))
            runs.extend(pair)
            if which != "both":
                continue
            before, after = pair
            pb, pa = PUBLISHED.get((tunnel, n, "before")), PUBLISHED.get((tunnel, n, "after"))
            for name, k in (("throughput", 0), ("receiver CPU utilisation", 1)):
                b = before.figure(name).emulated
                a = after.figure(name).emulated
                headline.append(
                    Figure(f"{tunnel.upper()} {n} conn: {name} after/before", "x",
                           a / b if b else 0.0, pa[k] / pb[k] if pa and pb else None)
                )  # fmt: skip
    notes = (
        "CPU utilisation is netperf's, taken here as the receiver's: the published "
        "percentages are of the seed's machine (more CPUs than these), so only "
        "their after/before ratios are compared.",
    )
    return ExperimentResult(
        "ipip-sit-gro",
        "seed 4 (2014): net: enable GRO for IPIP and SIT",
        tuple(runs),
        tuple(headline),
        notes,
    )


def ipip_sit_gro(
    which: Which = "both",
    *,
    cpus: int = 4,
    connections: tuple[int, ...] = (1, 20),
    tunnels: tuple[str, ...] = TUNNELS,
    duration: float = 0.005,
) -> ExperimentResult:
    """Run seed 4's benchmark before and/or after ``ipip_sit_gro``.

    Args:
        which: ``"before"``, ``"after"`` or ``"both"``.
        cpus: CPUs of each host.
        connections: the TCP_STREAM connection counts to run (the seed: 1 and 20).
        tunnels: ``"ipip"`` (IPv4 in IPv4) and/or ``"sit"`` (IPv6 in IPv4).
        duration: virtual seconds each run measures (netperf ``-l``).
    """
    if not 1 <= cpus <= MACHINE.ncpus:
        raise ValueError(f"cpus must be 1..{MACHINE.ncpus}")
    if not connections or any(n < 1 for n in connections):
        raise ValueError("connections must be positive")
    if not tunnels or any(t not in TUNNELS for t in tunnels):
        raise ValueError(f"tunnels must be among {TUNNELS}")
    if duration <= 0:
        raise ValueError("duration must be positive")
    return _experiment(which, tuple(tunnels), tuple(connections), cpus, duration)
