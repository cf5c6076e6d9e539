"""A lab function to sweep: what ping loses through netem's loss, seed by seed.

``ping_loss`` builds two hosts, puts ``netem loss LOSS%`` on a's eth0 and
sends COUNT pings; it returns the share lost and the mean RTT. The lab's seed
fixes netem's draws, so each (loss, seed) point gives the same answer on
every run and on every worker. ``netstack sweep`` runs it over a grid, here
or on a pool or a Dask cluster:

netstack sweep examples.sweep_netem_loss:ping_loss loss=0,10,30 seed=1,2
python examples/sweep_netem_loss.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import netstack
from netstack.experiments.sweep import SERIAL, SweepResult, sweep


async def ping_loss(*, loss: float = 10.0, count: int = 100, seed: int = 1) -> dict[str, float]:
    """*count* pings through ``netem loss LOSS%``: the share lost (%) and the mean RTT (ms)."""
    async with netstack.open_lab(seed=seed) as lab:
        a, b = lab.add_host("a"), lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0", kind="nic", delay=0.005)
        a.ip("addr add 10.0.0.1/24 dev eth0")
        b.ip("addr add 10.0.0.2/24 dev eth0")
        await a.ping("10.0.0.2")  # resolve ARP before the loss starts
        if loss:
            a.tc(f"qdisc add dev eth0 root netem loss {loss}%")
        result = await a.ping("10.0.0.2", count=count, interval=0.05, timeout=1)
        rtts = result.rtts
    return {
        "lost": 100.0 * (count - result.received) / count,
        "rtt": 1e3 * sum(rtts) / len(rtts) if rtts else 0.0,
    }


def main() -> SweepResult:
    """The grid of the docstring, in this process (the points find the function by
    its name, as workers do: the repository's folder is on ``sys.path``)."""
    result = sweep(
        "examples.sweep_netem_loss:ping_loss", ["loss=0,10,30", "seed=1,2"], executor=SERIAL
    )
    print(result.render())
    return result


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main()
