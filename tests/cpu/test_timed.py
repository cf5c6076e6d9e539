"""Timed mode's model on cases whose answer is known in closed form."""

from __future__ import annotations

import attrs
import pytest
import trio
import trio.testing

import netstack
from netstack.cpu import CpuSet, SpinLock
from netstack.cpu.costs import CostTable
from netstack.cpu.timed import Machine, Thread, ThreadBlocked, TimedModel

# A machine where only what a test charges costs time.
FREE = Machine(
    name="free",
    sockets=1,
    cores_per_socket=8,
    threads_per_core=1,
    smt_slowdown=1.0,
    memory_ns=0.0,
    smt_ns=0.0,
    core_ns=0.0,
    socket_ns=0.0,
    atomic_ns=0.0,
)
NO_COSTS = CostTable(functions={}, per_byte={}, syscall_ns=0.0, user_ns=0.0)


def _model(machine: Machine = FREE, ncpus: int = 8) -> tuple[TimedModel, CpuSet]:
    model = TimedModel(machine, NO_COSTS)
    cpus = CpuSet(ncpus)
    model.add_cpus("h", cpus)
    return model, cpus


def _run(fn: object) -> None:
    trio.run(fn, clock=trio.testing.MockClock(autojump_threshold=0))  # type: ignore[arg-type]


@pytest.mark.parametrize(("ncpus", "outside"), [(1, 0.0), (4, 0.0), (8, 0.0), (8, 300.0)])
def test_cpus_hammering_one_lock_get_one_over_hold_time(ncpus: int, outside: float) -> None:
    """N CPUs taking one lock of hold time h: throughput min(N/(w+h), 1/h)."""
    hold = 100.0
    calls = 200
    model, cpus = _model()
    lock = SpinLock("hammered")

    def op(cpu_id: int) -> None:
        cpu = cpus[cpu_id]
        cpu.charge("work", outside)
        lock.lock(cpu)
        cpu.charge("critical", hold)
        lock.unlock(cpu)

    def thread(i: int) -> Thread:
        return Thread(cpus, i, lambda: op(i), calls)

    async def main() -> None:
        with model.measuring():
            await model.run_threads([thread(i) for i in range(ncpus)])

    _run(main)
    report = model.report()
    total = ncpus * calls
    expected_rate = min(ncpus / (outside + hold), 1 / hold)  # calls per ns
    assert total / report.elapsed_ns == pytest.approx(expected_rate, rel=0.02)
    stat = report.lock("hammered")
    assert stat.acquisitions == total
    if ncpus > 1 and outside < hold * (ncpus - 1):
        assert stat.contentions > 0.9 * total
        # the rest of each CPU's time is spinning, shown as _raw_spin_lock
        spin = 1 - (outside + hold) / (ncpus * hold)
        assert report.share("_raw_spin_lock") == pytest.approx(100 * spin, abs=1)
    else:
        assert stat.contentions == 0
    assert stat.holdtime_max == pytest.approx(hold * 1e-9)


def test_a_line_written_alternately_by_two_cpus_bounces_on_every_write() -> None:
    machine = attrs.evolve(FREE, core_ns=50.0)
    model, cpus = _model(machine, 2)
    line = model.line("shared")

    async def main() -> None:
        with model.measuring():
            for i in range(100):
                cpus.run_on(i % 2, "sys")
                line.write("writer")
            model.leave()

    _run(main)
    s = line.statistics()
    assert s.writes == 100
    assert s.bounces == 99  # every write but the first finds it in the other cache
    assert s.dirtying_writes == 100
    assert s.miss_ns == pytest.approx(99 * 50.0)


def test_a_line_read_by_everyone_and_never_written_stops_missing() -> None:
    machine = attrs.evolve(FREE, core_ns=50.0, memory_ns=80.0)
    model, cpus = _model(machine, 4)
    line = model.line("read-mostly")

    async def main() -> None:
        with model.measuring():
            for i in range(400):
                cpus.run_on(i % 4, "sys")
                line.read("reader")
            model.leave()

    _run(main)
    s = line.statistics()
    assert s.read_misses == 4  # one per CPU: after that every copy stays valid
    assert s.bounces == 3


def test_transfer_latency_follows_the_topology() -> None:
    m = Machine(sockets=2, cores_per_socket=4, threads_per_core=2)
    assert m.ncpus == 16
    assert m.place(0) == (0, 0, 0)
    assert m.place(4) == (1, 4, 0)
    assert m.place(8) == (0, 0, 1)  # the second thread of core 0
    assert m.transfer_ns(0, 8) == m.smt_ns
    assert m.transfer_ns(0, 1) == m.core_ns
    assert m.transfer_ns(0, 4) == m.socket_ns


def test_a_busy_sibling_slows_a_thread_a_spinning_one_does_not() -> None:
    machine = attrs.evolve(FREE, cores_per_socket=1, threads_per_core=2, smt_slowdown=2.0)
    model, cpus = _model(machine, 2)

    async def main() -> None:
        with model.measuring():
            cpus.run_on(1, "sys")
            cpus[1].charge("sibling work", 1000.0)
            cpus.run_on(0, "sys")
            assert cpus[0].speed == pytest.approx(2.0)
            # the sibling now spins for as long again: half its time is work
            cpus.run_on(1, "sys")
            cpus[1].spin += 1000.0
            cpus[1].charge("_raw_spin_lock", 1000.0)
            cpus.run_on(0, "sys")
            assert cpus[0].speed == pytest.approx(1.5)
            model.leave()

    _run(main)


def test_time_waiting_for_work_is_idle() -> None:
    model, cpus = _model(FREE, 1)

    async def main() -> None:
        with model.measuring():
            for _ in range(10):
                cpus.run_on(0, "sys")
                cpus[0].charge("work", 1000.0)
                await model.wait(cpus[0])
                await trio.sleep(3e-6)  # nothing to do for 3 µs
            model.leave()

    _run(main)
    cpu = model.cpus[0]
    assert cpu.busy["sys"] == pytest.approx(10_000.0)
    assert cpu.idle == pytest.approx(9 * 3_000.0)  # the gaps between the calls
    assert model.report().cpus[0].idle == pytest.approx(100 * 27 / 37)


def test_a_blocked_thread_sleeps_idle_and_retries() -> None:
    """A call that blocks from 3 to 8 µs leaves its CPU idle 5 µs; the other
    thread keeps its own pace; every call is made."""
    model, cpus = _model(FREE, 2)
    calls = [0, 0]
    blocked = [True]

    def op(i: int) -> None:
        if i == 0 and calls[0] == 3 and blocked[0]:
            raise ThreadBlocked
        cpus[i].charge("work", 1000.0)
        calls[i] += 1

    async def unblock() -> None:
        await trio.sleep_until(8e-6)  # blocked at 3 µs (after 3 calls of 1 µs): 5 µs
        blocked[0] = False

    async def main() -> None:
        with model.measuring():
            await model.run_threads(
                [
                    Thread(cpus, 0, lambda: op(0), 10, wait=unblock),
                    Thread(cpus, 1, lambda: op(1), 10),
                ]
            )

    _run(main)
    assert calls == [10, 10]
    assert model.cpus[0].idle == pytest.approx(5_000.0, abs=1.0)
    assert model.cpus[1].idle == pytest.approx(0.0, abs=1.0)

    model, cpus = _model(FREE, 1)

    def always() -> None:
        raise ThreadBlocked

    async def no_wait() -> None:
        with model.measuring():
            await model.run_threads([Thread(cpus, 0, always, 1)])

    with pytest.raises(ThreadBlocked):
        _run(no_wait)


def test_data_path_time_is_the_cpus_clock_in_timed_mode() -> None:
    """A NIC stamps departures with CpuSet.time(): the CPU's clock inside a
    section, Trio's outside one (and always in functional mode)."""
    model, cpus = _model(FREE, 2)
    seen: list[float] = []

    async def main() -> None:
        plain = CpuSet(1)
        seen.append(plain.time() - trio.current_time())
        with model.measuring():
            await trio.sleep(1e-3)
            cpus.run_on(1, "sys")
            cpus[1].charge("work", 2500.0)
            seen.append(cpus.time() - trio.current_time())
            model.leave()
            seen.append(cpus.time() - trio.current_time())

    _run(main)
    assert seen[0] == 0.0
    assert seen[1] == pytest.approx(2.5e-6, abs=1e-9)
    assert seen[2] == 0.0


def test_a_lock_wanted_before_a_later_hold_fits_only_if_its_hold_would() -> None:
    """CPU clocks are not in lock step: CPU 1 ran a section that held the
    lock over [100, 200] ns; CPU 0, behind it, wants the lock at 40 or 60
    with holds that usually last 50 ns."""
    model, _ = _model(FREE, 2)
    lock = SpinLock("l")
    lock.holds.append((100.0, 200.0))
    lock.hold_est = 50.0
    assert model.lock_free_at(lock, 40.0) == 40.0  # [40, 90) fits before it
    assert model.lock_free_at(lock, 60.0) == 200.0  # [60, 110) would collide
    assert model.lock_free_at(lock, 150.0) == 200.0  # inside it
    assert model.lock_free_at(lock, 200.0) == 200.0
    lock.holds.append((200.0, 260.0))  # the next holder took it on release
    assert model.lock_free_at(lock, 60.0) == 260.0


def test_functional_mode_has_no_model_and_no_lines() -> None:
    cpus = CpuSet(2)
    assert cpus.model is None and cpus[0].model is None
    lock = SpinLock("x")
    lock.lock(cpus[0])
    lock.unlock(cpus[0])
    assert lock.statistics().acquisitions == 1
    assert lock.line is None


async def _udp_to_dummy(model: TimedModel, calls: int) -> None:
    async with netstack.open_lab(timed=model) as lab:
        a = lab.add_host("a", cpus=4)
        a.ip("link add dummy0 type dummy")
        a.ip("link set dummy0 up")
        a.ip("addr add 10.0.0.1/24 dev dummy0")
        a.ip("neigh add 10.0.0.2 lladdr 02:00:00:00:00:02 dev dummy0 nud permanent")
        socks = []
        for _ in range(4):
            s = a.socket()
            await s.bind(("10.0.0.1", 0))
            socks.append(s.sock)
        payload = b"x" * 200

        def sender(i: int) -> Thread:
            sk = socks[i]
            return Thread(a.net.cpus, i, lambda: sk.sendmsg(payload, (0x0A000002, 9), 0), calls)

        with model.measuring():
            await model.run_threads([sender(i) for i in range(4)])


def test_the_same_run_gives_the_same_numbers() -> None:
    reports = []
    for _ in range(2):
        model = TimedModel(Machine())
        netstack.run(_udp_to_dummy, model, 50)
        reports.append(model.report())
    assert reports[0] == reports[1]
    r = reports[0]
    assert r.elapsed_ns > 0
    assert r.share("udp_sendmsg") > 0
    assert sum(c.sys for c in r.cpus) > 0
