"""Seed 4 in timed mode: GRO for IPIP and SIT frees the receiver's one interrupted CPU."""

from __future__ import annotations

import pytest

from netstack.experiments import EXPERIMENTS, ExperimentResult, ipip_sit_gro

SMALL = 0.003  # virtual seconds per run: the default's figures, less settled


@pytest.fixture(scope="module")
def result() -> ExperimentResult:
    return ipip_sit_gro("both", connections=(1,), duration=SMALL)  # IPIP and SIT


@pytest.mark.slow
def test_single_connection_throughput_rises_as_published(result: ExperimentResult) -> None:
    gain = result.headline_figure("IPIP 1 conn: throughput after/before")
    assert gain.published == pytest.approx(9279.53 / 6544.71)
    assert gain.emulated >= 1.25  # the acceptance (published +42 %)
    before = result.run("ipip, 1 conn, before").figure("throughput")
    after = result.run("ipip, 1 conn, after").figure("throughput")
    assert before.published == pytest.approx(6544.71)
    # before: CPU-bound below the wire; after: near the wire's 9.29 Gbit/s of goodput
    assert 4000 < before.emulated < 8000 < after.emulated < 9300
    sit = result.headline_figure("SIT 1 conn: throughput after/before")
    assert sit.published == pytest.approx(9143.36 / 5653.36)
    assert sit.emulated >= 1.25  # published +62 %
    # SIT gains more than IPIP, as published: without gro_cells, its inner TCP
    # saw every segment before the patch
    assert sit.emulated > gain.emulated
    assert result.run("sit, 1 conn, before").figure("throughput").emulated < before.emulated


def test_the_mechanism(result: ExperimentResult) -> None:
    """All tunnelled packets land on one CPU (2-tuple RSS): before, it is
    saturated and every packet crosses the outer path alone; after, GRO merges
    them on the NIC's NAPI and that CPU has time to spare."""
    before, after = result.run("ipip, 1 conn, before"), result.run("ipip, 1 conn, after")
    rx = int(before.figure("CPU of the RX interrupts").emulated)
    assert rx == int(after.figure("CPU of the RX interrupts").emulated)
    assert before.figure(f"receiver CPU {rx} busy").emulated > 90
    assert (
        after.figure(f"receiver CPU {rx} busy").emulated
        < before.figure(f"receiver CPU {rx} busy").emulated
    )
    assert before.figure("wire packets per skb up the stack").emulated == 1
    assert after.figure("wire packets per skb up the stack").emulated > 5
    # before, TCP's own work was already amortised: gro_cells merged the inner
    # segments after decapsulation; after, they arrive merged
    cells = "ipip1 skbs per skb into TCP (gro_cells)"
    assert before.figure(cells).emulated > 5
    assert after.figure(cells).emulated == 1
    sit_after = result.run("sit, 1 conn, after")
    assert sit_after.figure("wire packets per skb up the stack").emulated > 5
    # the per-byte checksum stays (no CHECKSUM_COMPLETE): it tops both profiles
    for run in (before, after):
        assert run.report.profile[0][0] == "csum_partial"
    # fewer CPU cycles per byte received: utilisation falls while throughput rises
    util = result.headline_figure("IPIP 1 conn: receiver CPU utilisation after/before")
    assert util.emulated < 1


@pytest.mark.slow
def test_rerun_gives_identical_numbers() -> None:
    """Also after other runs in the same process, and whatever ran before in
    the same call: each run has its own loop and virtual clock."""
    first = ipip_sit_gro("after", connections=(3,), tunnels=("ipip",), duration=0.001)
    ipip_sit_gro("after", connections=(1,), tunnels=("ipip",), duration=0.001)
    second = ipip_sit_gro("after", connections=(1, 3), tunnels=("ipip",), duration=0.001)
    assert first.runs[0].figures == second.runs[1].figures


def test_registered_and_bad_arguments() -> None:
    assert EXPERIMENTS["ipip-sit-gro"].run is ipip_sit_gro
    with pytest.raises(ValueError, match="cpus"):
        ipip_sit_gro(cpus=0)
    with pytest.raises(ValueError, match="connections"):
        ipip_sit_gro(connections=(0,))
    with pytest.raises(ValueError, match="duration"):
        ipip_sit_gro(duration=0)
    with pytest.raises(ValueError, match="tunnels"):
        ipip_sit_gro(tunnels=("gre",))
