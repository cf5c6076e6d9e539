"""What every seed experiment shares: results, published figures, rendering.

Theory of operation: an experiment is a function that builds its lab on a
:class:`~netstack.cpu.timed.TimedModel` (the machine of the seed's set-up, the
one cost table), runs the seed's workload with the patch off ("before") and
on ("after"), and returns an :class:`ExperimentResult`: the emulated figures
beside the published ones, their ratios, and for each run the timed report
(profile, lock_stat, cache lines, CPU utilisation) that explains them.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

import attrs
import trio

from netstack.cpu.timed import Thread, TimedReport
from netstack.host.lab import run as _run_loop
from netstack.socket import SOCK_STREAM

if TYPE_CHECKING:
    from netstack.host.host import Host
    from netstack.socket import Socket
    from netstack.tcp.sock import TcpSock

__all__ = [
    "METER",
    "Experiment",
    "ExperimentResult",
    "Figure",
    "Meter",
    "Run",
    "Which",
    "neigh_permanent",
    "run_step",
    "stream_pairs",
    "udp_senders",
]

Which = Literal["before", "after", "both"]
T = TypeVar("T")


@attrs.define
class Meter:
    """How far the experiment running in this process has got, in steps.

    A step is one run on its own Trio loop and virtual clock (:func:`run_step`);
    an experiment says how many it will make (:meth:`plan`). The progress line
    of ``netstack experiment`` reads this from another thread: the fraction
    done interpolates the current step by the wall time the finished ones took,
    which is what a step of the same workload will take again. Wall time only
    measures progress here; no figure depends on it.
    """

    planned: int = 0
    done: int = 0
    started: float = 0.0  # wall time (time.monotonic) the current step started
    walls: list[float] = attrs.Factory(list)
    changed: threading.Event = attrs.Factory(threading.Event)  # set by plan and step_done

    def plan(self, steps: int, now: float | None = None) -> None:
        """A new experiment of *steps* steps starts (at wall time *now*)."""
        self.planned, self.done, self.walls = steps, 0, []
        self.started = time.monotonic() if now is None else now
        self.changed.set()

    def fraction(self, now: float) -> float:
        """Done so far, 0..1: finished steps, and the current one's share."""
        if not self.planned:
            return 0.0
        current = 0.0
        if self.walls and self.done < self.planned:
            mean = sum(self.walls) / len(self.walls)
            current = min((now - self.started) / mean, 0.95) if mean > 0 else 0.0
        return min((self.done + current) / self.planned, 1.0)

    def time_left(self, now: float) -> float | None:
        """Wall seconds left, or None before a step has finished (no estimate yet)."""
        if not self.walls or not self.planned:
            return None
        mean = sum(self.walls) / len(self.walls)
        return max(mean * (self.planned - self.done) - (now - self.started), 0.0)

    def step_done(self, now: float | None = None) -> None:
        """A step finished (at wall time *now*)."""
        now = time.monotonic() if now is None else now
        self.walls.append(now - self.started)
        self.done += 1
        self.started = now
        self.changed.set()


METER = Meter()
"""The progress of the experiment this process runs (one at a time)."""


def run_step(main: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``netstack.run(main, *args)``: one step of the experiment, counted by :data:`METER`."""
    try:
        return _run_loop(main, *args)
    finally:
        METER.step_done()


@attrs.frozen
class Figure:
    """One number of an experiment: emulated beside published."""

    name: str
    unit: str
    emulated: float
    published: float | None = None

    @property
    def ratio(self) -> float | None:
        """Emulated / published."""
        if not self.published:
            return None
        return self.emulated / self.published


@attrs.frozen
class Run:
    """One run of an experiment (one side of a patch)."""

    label: str
    figures: tuple[Figure, ...]
    report: TimedReport

    def figure(self, name: str) -> Figure:
        for f in self.figures:
            if f.name == name:
                return f
        raise KeyError(name)


@attrs.frozen
class ExperimentResult:
    """What an experiment found."""

    name: str
    seed: str
    runs: tuple[Run, ...]
    headline: tuple[Figure, ...]  # the ratios the seed reports
    notes: tuple[str, ...] = ()

    def run(self, label: str) -> Run:
        for r in self.runs:
            if r.label == label:
                return r
        raise KeyError(label)

    def headline_figure(self, name: str) -> Figure:
        for f in self.headline:
            if f.name == name:
                return f
        raise KeyError(name)

    def render(self, *, profile: int = 12) -> str:
        """A plain-text report: figures, headline ratios, profiles, locks, lines."""
        out = [f"experiment {self.name}: {self.seed}", ""]
        out.append(f"{'':40} {'emulated':>12} {'published':>12} {'ratio':>7}")
        for run in self.runs:
            out.append(f"[{run.label}]")
            out.extend(_row(f) for f in run.figures)
        if self.headline:
            out.append("[before → after]")
            out.extend(_row(f) for f in self.headline)
        for run in self.runs:
            rep = run.report
            out.append("")
            out.append(f"--- {run.label}: perf top (share of busy CPU time)")
            out.append(rep.top(profile))
            contended = [s for s in rep.locks if s.acquisitions]
            if contended:
                out.append(f"--- {run.label}: lock_stat")
                out.append(
                    f"  {'lock':34} {'acq':>9} {'contended':>10} "
                    f"{'wait-total(ms)':>15} {'hold-total(ms)':>15}"
                )
                out.extend(
                    f"  {s.name[:34]:34} {s.acquisitions:9d} {s.contentions:10d} "
                    f"{s.waittime_total * 1e3:15.3f} {s.holdtime_total * 1e3:15.3f}"
                    for s in contended[:6]
                )
            bouncing = [ln for ln in rep.lines if ln.bounces]
            if bouncing:
                out.append(f"--- {run.label}: cache lines")
                out.append(f"  {'line':40} {'bounces':>9} {'writes':>9} {'miss(ms)':>9}")
                out.extend(
                    f"  {ln.name[:40]:40} {ln.bounces:9d} {ln.writes:9d} {ln.miss_ns / 1e6:9.3f}"
                    for ln in bouncing[:6]
                )
            busy = [c for c in rep.cpus if c.idle < 99.9]
            if busy:
                avg = {
                    k: sum(getattr(c, k) for c in busy) / len(busy)
                    for k in ("user", "sys", "softirq", "idle", "spin")
                }
                out.append(
                    f"--- {run.label}: {len(busy)} busy CPUs, average "
                    f"%usr {avg['user']:.1f} %sys {avg['sys']:.1f} "
                    f"%soft {avg['softirq']:.1f} %idle {avg['idle']:.1f} "
                    f"(spinning {avg['spin']:.1f})"
                )
        for note in self.notes:
            out.append("")
            out.append(note)
        return "\n".join(out)

    def to_json(self) -> str:
        """The figures (not the full reports) as JSON."""

        def fig(f: Figure) -> dict[str, Any]:
            return {
                "name": f.name,
                "unit": f.unit,
                "emulated": f.emulated,
                "published": f.published,
                "ratio": f.ratio,
            }

        data = {
            "experiment": self.name,
            "seed": self.seed,
            "runs": {
                r.label: {
                    "figures": [fig(f) for f in r.figures],
                    "profile": [{"symbol": s, "percent": p} for s, _ns, p in r.report.profile[:20]],
                    "locks": [attrs.asdict(s) for s in r.report.locks[:10]],
                    "cache_lines": [attrs.asdict(s) for s in r.report.lines[:10]],
                }
                for r in self.runs
            },
            "headline": [fig(f) for f in self.headline],
            "notes": list(self.notes),
        }
        return json.dumps(data, indent=2)


def _row(f: Figure) -> str:
    if f.unit == "hex":
        return f"  {f.name:38} {int(f.emulated):#12x}"
    if f.unit == "bool":
        return f"  {f.name:38} {'yes' if f.emulated else 'no':>12}"
    pub = "" if f.published is None else f"{f.published:12.4g}"
    ratio = "" if f.ratio is None else f"{f.ratio:7.2f}"
    label = f"{f.name} ({f.unit})"
    return f"  {label:38} {f.emulated:12.4g} {pub:>12} {ratio:>7}"


async def udp_senders(
    host: Host, threads: int, calls: int, *, src: str, dst: int, size: int, flags: int = 0
) -> list[Thread]:
    """One unconnected UDP socket per CPU of *host*, each a thread making
    *calls* ``sendto(dst:9)`` of *size* bytes — the seeds' ``udpflood`` loop.
    """
    payload = b"\x00" * size
    out = []
    for i in range(threads):
        s = host.socket()
        await s.bind((src, 0))
        sk = s.sock

        def op(sk: Any = sk) -> None:
            sk.sendmsg(payload, (dst, 9), flags)

        out.append(Thread(host.net.cpus, i, op, calls))
    return out


def neigh_permanent(h: Host, peer: Host, addr: str) -> None:
    """``ip neigh add ADDR lladdr PEER'S-MAC dev eth0 nud permanent``: no ARP
    while measuring."""
    mac = ":".join(f"{x:02x}" for x in peer.dev("eth0").dev_addr)
    h.ip(f"neigh add {addr} lladdr {mac} dev eth0 nud permanent")


async def _accept(listener: Socket, out: list[Socket]) -> None:
    out.append((await listener.accept())[0])


async def stream_pairs(
    client: Host, server: Host, family: int, addr: str, port: int, n: int
) -> list[tuple[TcpSock, TcpSock]]:
    """*n* established TCP connections from *client* to *server*'s *addr*,
    ports *port*, *port* + 1, …: the ``(sender, receiver)`` socks of netperf
    TCP_STREAM tests."""
    pairs = []
    for i in range(n):
        listener = server.socket(family, SOCK_STREAM)
        await listener.bind((addr, port + i))
        listener.listen(1)
        sock = client.socket(family, SOCK_STREAM)
        accepted: list[Socket] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_accept, listener, accepted)
            await sock.connect((addr, port + i))
        pairs.append((cast("TcpSock", sock.sock), cast("TcpSock", accepted[0].sock)))
    return pairs


@attrs.frozen
class Experiment:
    """A registered experiment: its name, the seed, and how to run it."""

    name: str
    seed: str
    run: Callable[..., ExperimentResult]
    default_cpus: int
