"""The NUD state machine as a pure function of (state, parameters, now)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from netstack.neigh.nud import (
    NEIGH_UPDATE_F_ADMIN,
    NEIGH_UPDATE_F_OVERRIDE,
    NUD_DELAY,
    NUD_FAILED,
    NUD_IN_TIMER,
    NUD_INCOMPLETE,
    NUD_NOARP,
    NUD_NONE,
    NUD_PERMANENT,
    NUD_PROBE,
    NUD_REACHABLE,
    NUD_STALE,
    Act,
    Action,
    NeighParms,
    NudEntry,
    event_send,
    neigh_max_probes,
    nud_state_name,
    timer_handler,
    update,
)

P = NeighParms()  # HZ 1000: times in ms


def acts(actions: list[Action]) -> list[Act]:
    return [a.act for a in actions]


def test_first_use_goes_incomplete_probes_now_and_queues() -> None:
    n = NudEntry()
    rc, actions = event_send(n, P, 100)
    assert rc == 1
    assert n.nud_state == NUD_INCOMPLETE and n.probes == P.ucast_probes
    assert acts(actions) == [Act.DEL_TIMER, Act.SET_TIMER, Act.QUEUE, Act.PROBE_NOW]
    assert actions[1].arg == 100 + P.retrans_time


def test_unanswered_resolution_fails_after_mcast_probes() -> None:
    """3 broadcast requests, one per retrans_time, then FAILED (the worked example)."""
    n = NudEntry()
    event_send(n, P, 0)
    n.probes += 1  # the immediate probe (neigh_probe)
    now = 0
    while True:
        now += P.retrans_time
        actions = timer_handler(n, P, now)
        if n.nud_state == NUD_FAILED:
            assert Act.INVALIDATE in acts(actions)
            break
        assert acts(actions) == [Act.SET_TIMER, Act.PROBE]
        n.probes += 1
    assert now == 3 * P.retrans_time
    assert neigh_max_probes(NudEntry(NUD_INCOMPLETE), P) == 6


def test_reachable_stays_while_confirmed() -> None:
    n = NudEntry(NUD_REACHABLE, confirmed=1000, used=1000)
    actions = timer_handler(n, P, 20_000)
    assert n.nud_state == NUD_REACHABLE
    assert actions[-1].arg == 1000 + P.reachable_time
    # at the boundary the re-armed timer is clamped to now + HZ/100
    actions = timer_handler(n, P, 1000 + P.reachable_time)
    assert n.nud_state == NUD_REACHABLE
    assert actions[-1].arg == 1000 + P.reachable_time + 10


def test_reachable_to_delay_when_used_recently_else_stale() -> None:
    n = NudEntry(NUD_REACHABLE, confirmed=0, used=40_000)
    timer_handler(n, P, 40_001)
    assert n.nud_state == NUD_DELAY
    m = NudEntry(NUD_REACHABLE, confirmed=0, used=0)
    actions = timer_handler(m, P, 40_001)
    assert m.nud_state == NUD_STALE
    assert Act.SET_TIMER not in acts(actions)


def test_delay_back_to_reachable_if_confirmed_else_probe() -> None:
    n = NudEntry(NUD_DELAY, confirmed=100)
    timer_handler(n, P, 100 + P.delay_probe_time)
    assert n.nud_state == NUD_REACHABLE
    m = NudEntry(NUD_DELAY, confirmed=0, probes=7)
    actions = timer_handler(m, P, P.delay_probe_time + 1)
    assert m.nud_state == NUD_PROBE and m.probes == 0
    assert acts(actions)[-1] == Act.PROBE
    assert neigh_max_probes(m, P) == P.ucast_probes


def test_stale_use_moves_to_delay_and_sends_now() -> None:
    n = NudEntry(NUD_STALE)
    rc, actions = event_send(n, P, 50)
    assert rc == 0 and n.nud_state == NUD_DELAY
    assert actions[-1].arg == 50 + P.delay_probe_time


def test_no_multicast_probes_means_immediate_failure() -> None:
    n = NudEntry()
    p = NeighParms(mcast_probes=0, app_probes=0)
    rc, actions = event_send(n, p, 0)
    assert rc == 1 and n.nud_state == NUD_FAILED and acts(actions) == [Act.DROP_FAILED]


def test_reply_confirms_and_flushes_queue() -> None:
    n = NudEntry(NUD_INCOMPLETE)
    ok, actions = update(
        n,
        P,
        500,
        NUD_REACHABLE,
        lladdr_changed=True,
        has_lladdr=True,
        flags=NEIGH_UPDATE_F_OVERRIDE,
    )
    assert ok and n.nud_state == NUD_REACHABLE and n.confirmed == 500
    assert Act.UPDATE_HH in acts(actions) and Act.CONNECT in acts(actions)
    assert Act.FLUSH_QUEUE in acts(actions)


def test_different_address_without_override_is_ignored() -> None:
    n = NudEntry(NUD_REACHABLE, confirmed=1)
    ok, actions = update(n, P, 5, NUD_STALE, lladdr_changed=True, has_lladdr=True, flags=0)
    assert ok and actions == [] and n.nud_state == NUD_REACHABLE


def test_same_address_request_keeps_reachable() -> None:
    n = NudEntry(NUD_REACHABLE, confirmed=1)
    update(n, P, 5, NUD_STALE, lladdr_changed=False, has_lladdr=True, flags=NEIGH_UPDATE_F_OVERRIDE)
    assert n.nud_state == NUD_REACHABLE


def test_non_admin_cannot_touch_permanent_or_noarp() -> None:
    for state in (NUD_PERMANENT, NUD_NOARP):
        n = NudEntry(state)
        ok, _ = update(n, P, 5, NUD_STALE, lladdr_changed=True, has_lladdr=True, flags=0)
        assert not ok and n.nud_state == state
        ok, _ = update(
            n,
            P,
            5,
            NUD_STALE,
            lladdr_changed=True,
            has_lladdr=True,
            flags=NEIGH_UPDATE_F_ADMIN | NEIGH_UPDATE_F_OVERRIDE,
        )
        assert ok and n.nud_state == NUD_STALE


def test_state_names() -> None:
    assert nud_state_name(NUD_NONE) == "NONE"
    assert nud_state_name(NUD_REACHABLE) == "REACHABLE"
    assert nud_state_name(NUD_NOARP | NUD_PERMANENT) == "NOARP PERMANENT"


STATES = st.sampled_from(
    [
        NUD_NONE,
        NUD_INCOMPLETE,
        NUD_REACHABLE,
        NUD_STALE,
        NUD_DELAY,
        NUD_PROBE,
        NUD_FAILED,
        NUD_NOARP,
        NUD_PERMANENT,
    ]
)


@settings(max_examples=300)
@given(
    state=STATES,
    confirmed=st.integers(0, 100_000),
    used=st.integers(0, 100_000),
    probes=st.integers(0, 10),
    now=st.integers(0, 200_000),
    event=st.sampled_from(["timer", "send", "confirm", "fail"]),
)
def test_invariants_hold_for_every_transition(
    state: int, confirmed: int, used: int, probes: int, now: int, event: str
) -> None:
    """Whatever happens: a timer is armed only in timer states, never in the past,
    and the state stays a single valid NUD value."""
    n = NudEntry(state, confirmed=confirmed, used=used, probes=probes)
    if event == "timer":
        actions = timer_handler(n, P, now)
    elif event == "send":
        _, actions = event_send(n, P, now)
    elif event == "confirm":
        _, actions = update(
            n,
            P,
            now,
            NUD_REACHABLE,
            lladdr_changed=False,
            has_lladdr=True,
            flags=NEIGH_UPDATE_F_OVERRIDE,
        )
    else:
        _, actions = update(
            n, P, now, NUD_FAILED, lladdr_changed=False, has_lladdr=True, flags=NEIGH_UPDATE_F_ADMIN
        )
    assert bin(n.nud_state).count("1") <= 1
    for a in actions:
        if a.act is Act.SET_TIMER:
            assert n.nud_state & NUD_IN_TIMER
            assert a.arg >= now
