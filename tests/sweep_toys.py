"""Lab functions for the sweep tests (``netstack sweep sweep_toys:FUNCTION``).

They are importable by name, as a sweep's points are sent to workers (this
folder is on ``sys.path`` under pytest, and spawned pool workers inherit it).
"""

from __future__ import annotations

import time
from pathlib import Path

from netstack import open_lab


async def lossy_ping(*, loss: int = 0, count: int = 10, seed: int = 0) -> dict[str, float]:
    """Ping over a 5 ms link whose sender drops *loss* % (netem): seeded, so
    the same point answers the same wherever it runs."""
    async with open_lab(seed=seed) as lab:
        a, b = lab.add_host("a"), lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0", kind="nic", delay=0.005)
        a.ip("addr add 10.0.0.1/24 dev eth0")
        b.ip("addr add 10.0.0.2/24 dev eth0")
        if loss:
            a.tc(f"qdisc add dev eth0 root netem loss {loss}%")
        result = await a.ping("10.0.0.2", count=count, interval=0.1, timeout=1)
        rtts = result.rtts
    return {"received": result.received, "rtt_ms": sum(rtts) / len(rtts) * 1e3 if rtts else 0.0}


def square(x: int) -> int:
    """A lab function of one number."""
    return x * x


def refuses(x: int = 0) -> int:
    """Refuses odd values, as an experiment refuses cpus out of range."""
    if x % 2:
        raise ValueError("x must be even")
    return x


def interrupted(x: int = 0) -> int:
    """Ctrl-C in the middle of a point."""
    raise KeyboardInterrupt


def blocks(x: int = 0, started: str = "") -> int:
    """Marks that it started, then runs until killed (the Ctrl-C test of the pool)."""
    Path(f"{started}.{x}").write_text("started")
    time.sleep(120)
    return x
