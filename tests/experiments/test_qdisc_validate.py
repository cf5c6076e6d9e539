"""Seed 5 in timed mode: validating outside the qdisc root lock cuts spinning."""

from __future__ import annotations

import pytest

from netstack.experiments import ExperimentResult, qdisc_validate

SPIN = "_raw_spin_lock (share of busy CPU)"


@pytest.fixture(scope="module")
def result() -> ExperimentResult:
    return qdisc_validate("both", repeats=1)


@pytest.mark.slow
def test_spinning_drops_where_validation_is_heavy(result: ExperimentResult) -> None:
    """With GSO on, validation is segmentation, and taking it out of the lock
    removes nearly all spinning. With GSO off the published drop is 2.66 % →
    1.44 %; the model's is smaller (docs/experiments.md says what is missing),
    and it must not get worse."""
    on_b = result.run("gso on, before").figure(SPIN).emulated
    on_a = result.run("gso on, after").figure(SPIN).emulated
    assert on_b > 0 and on_a / on_b <= 0.5
    off_b = result.run("gso off, before").figure(SPIN).emulated
    off_a = result.run("gso off, after").figure(SPIN).emulated
    assert off_b > 0 and off_a / off_b <= 1.05


def test_gso_on_spins_less_still(result: ExperimentResult) -> None:
    off = result.run("gso off, after").figure(SPIN).emulated
    on = result.run("gso on, after").figure(SPIN).emulated
    assert on < off  # published 0.85 % < 1.44 %
    assert result.run("gso on, after").figure(SPIN).emulated <= (
        result.run("gso on, before").figure(SPIN).emulated
    )


def test_the_qdisc_locks_are_where_the_spinning_is(result: ExperimentResult) -> None:
    for label in ("gso off, before", "gso off, after"):
        assert result.run(label).figure("spinning on the qdisc locks").emulated >= 50  # pub. 80 %


def test_where_validation_ran(result: ExperimentResult) -> None:
    for gso in ("off", "on"):
        before, after = result.run(f"gso {gso}, before"), result.run(f"gso {gso}, after")
        assert before.figure("validations under the root lock").emulated > 0
        assert before.figure("validations outside it").emulated == 0
        assert after.figure("validations under the root lock").emulated == 0
        assert after.figure("validations outside it").emulated > 0
        # the link, not the CPUs, limits two flows at 10 Gbit/s
        assert after.figure("goodput").emulated > 5


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="flows"):
        qdisc_validate(flows=5, cpus=4)
    with pytest.raises(ValueError, match="duration"):
        qdisc_validate(duration=0)
    with pytest.raises(ValueError, match="repeats"):
        qdisc_validate(repeats=0)


@pytest.mark.slow
def test_a_run_repeats_whatever_ran_before_it() -> None:
    """Trio breaks ties between tasks woken at one instant by memory address;
    timed labs switch it to its deterministic mode, so the same run gives the
    same figures alone, after another run, or with the heap rearranged."""
    alone = qdisc_validate("after", duration=0.0005, repeats=2)
    ballast = [object() for _ in range(10_000)]  # move later allocations elsewhere
    both = qdisc_validate("both", duration=0.0005, repeats=2)
    del ballast
    again = qdisc_validate("after", duration=0.0005, repeats=2)
    for label in ("gso off, after", "gso on, after"):
        figures = [r.run(label).figures for r in (alone, both, again)]
        assert figures[0] == figures[1] == figures[2]
    # each configuration's repetitions are listed in the notes
    assert len(alone.notes) == 2 and len(both.notes) == 4
    assert all("spin share of each repetition" in n for n in both.notes)


def test_remote_skbs_are_counted_where_validated(result: ExperimentResult) -> None:
    """Skbs queued by one CPU and dequeued (and validated) by another pay for
    their cache lines in validate_xmit_skb: under the root lock before the
    patch, outside it after."""
    for label in ("gso off, before", "gso off, after"):
        assert result.run(label).figure("skbs validated off their queuing CPU").emulated > 0
