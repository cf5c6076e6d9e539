"""Issue 18 (branch ``determinism``): the same program does the same work.

Two callgrind runs of ``benchmarks/tcp_bulk.py`` gave instruction counts a
little apart. What differed was not netstack: Trio runs the batch of tasks
woken before the lab opens (``main`` and its own ``run_sync_soon`` task) in an
order from an unseeded coin flip, and the two orders leave different
allocation histories behind (``benchmarks/anchors.py``,
``repeatable_scheduling``). These tests pin what a user unit-testing protocol
behaviour relies on: the same scenario, run twice in one process or in two
processes with different string hashing (``PYTHONHASHSEED``) and different
addresses (ASLR, so ``id()``-hashed sets and dicts iterate differently), puts
the same frames on the wire at the same virtual times, with the same
counters — for a TCP bulk transfer with GSO and GRO and for UDP through a
router.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from typing import Any

import pytest
import trio

import netstack
from netstack.userspace.netperf import netperf


async def _tcp_bulk() -> dict[str, Any]:
    """256 KB of TCP over veth with TSO/GSO on the sender and GRO on the receiver."""
    log: list[str] = []
    async with netstack.open_lab() as lab:
        a, b = lab.add_host("a"), lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0", kind="veth")
        a.ip("addr add 10.0.0.1/24 dev eth0")
        b.ip("addr add 10.0.0.2/24 dev eth0")
        b.ethtool("-K eth0 gro on")

        def frame(t: float, data: bytes, out: bool) -> None:
            log.append(f"{t!r} {out} {hashlib.sha256(data).hexdigest()[:16]}")

        a.capture("eth0", callback=frame)
        res = await netperf(
            a, b, "10.0.0.2", test="TCP_STREAM", total_bytes=256 << 10, send_size=45 * 1448
        )
        return {
            "frames": log,
            "bytes": res.bytes_received,
            "virtual_seconds": res.virtual_seconds,
            "a": a.nstat(),
            "b": b.nstat(),
        }


async def _udp_routed() -> dict[str, Any]:
    """200 UDP datagrams of 200 bytes from a to b through router r."""
    log: list[str] = []
    async with netstack.open_lab() as lab:
        a, r, b = lab.add_host("a"), lab.add_host("r"), lab.add_host("b")
        lab.add_link("a:eth0", "r:eth0")
        lab.add_link("r:eth1", "b:eth0")
        a.ip("addr add 10.0.1.1/24 dev eth0")
        r.ip("addr add 10.0.1.254/24 dev eth0")
        r.ip("addr add 10.0.2.254/24 dev eth1")
        b.ip("addr add 10.0.2.1/24 dev eth0")
        a.ip("route add default via 10.0.1.254")
        b.ip("route add default via 10.0.2.254")
        r.sysctl("net.ipv4.ip_forward=1")

        def frame(t: float, data: bytes, out: bool) -> None:
            log.append(f"{t!r} {out} {hashlib.sha256(data).hexdigest()[:16]}")

        r.capture("eth1", callback=frame)
        tx = a.socket()
        rx = b.socket()
        await rx.bind(("10.0.2.1", 9000))
        got = 0

        async def receive() -> None:
            nonlocal got
            while got < 200:
                await rx.recv(2048)
                got += 1

        async with trio.open_nursery() as nursery:
            nursery.start_soon(receive)
            for i in range(200):
                await tx.sendto(i.to_bytes(2, "big") * 100, ("10.0.2.1", 9000))
        return {"frames": log, "got": got, "a": a.nstat(), "r": r.nstat(), "b": b.nstat()}


SCENARIOS = {"tcp_bulk": _tcp_bulk, "udp_routed": _udp_routed}


def run_scenario(name: str) -> dict[str, Any]:
    """Run scenario *name* in virtual time; what it did, as JSON-able data."""
    result: dict[str, Any] = netstack.run(SCENARIOS[name])
    return result


def _in_child(name: str, hashseed: str) -> dict[str, Any]:
    env = dict(os.environ, PYTHONHASHSEED=hashseed)
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]);"
        "import test_determinism as t; print(json.dumps(t.run_scenario(sys.argv[2])))"
    )
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run(
        [sys.executable, "-c", code, here, name],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    data: dict[str, Any] = json.loads(out.stdout)
    return data


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_same_scenario_twice_in_one_process_does_the_same(name: str) -> None:
    first, second = run_scenario(name), run_scenario(name)
    assert first["frames"], "nothing captured"
    assert first == second


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_two_processes_with_other_hashing_and_addresses_do_the_same(name: str) -> None:
    here = run_scenario(name)
    assert json.loads(json.dumps(here)) == _in_child(name, "1") == _in_child(name, "random")


async def _first_steps_order() -> list[int]:
    """The order in which eight tasks, woken together five times before any lab
    opens, run: Trio reverses each such batch or not on a coin flip."""
    order: list[int] = []

    async def task(i: int) -> None:
        for _ in range(5):
            await trio.lowlevel.checkpoint()
            order.append(i)

    async with trio.open_nursery() as nursery:
        for i in range(8):
            nursery.start_soon(task, i)
    return order


def test_netstack_run_schedules_the_first_steps_repeatably() -> None:
    """``netstack.run`` seeds Trio's scheduling from the run's first task step, as
    the benchmarks' ``anchors.repeatable_scheduling()`` does: the steps before a
    lab opens (and seeds it with its own seed) no longer take Trio's unseeded coin
    flip, so a run under callgrind repeats. Trio's mode and generator are the
    caller's again afterwards."""
    import trio._core._run as _run

    saved = _run._ALLOW_DETERMINISTIC_SCHEDULING, _run._r
    runs = [netstack.run(_first_steps_order) for _ in range(6)]
    assert len(runs[0]) == 40
    assert all(run == runs[0] for run in runs)  # 6 runs of 5 coin flips each: 2^-25 by chance
    assert (_run._ALLOW_DETERMINISTIC_SCHEDULING, _run._r) == saved
