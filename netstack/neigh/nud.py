"""The NUD (Neighbour Unreachability Detection) state machine, pure and table-driven.

Theory of operation (h11-style): the functions here take an entry's NUD
fields, the parameters and ``now`` (in jiffies) and return what the glue must
do as a list of :class:`Action`s — arm or delete the timer, send a
solicitation, switch the output path, report failure for queued packets. They
never touch a clock, a device or a queue, so every transition can be tested
with plain integers and the tables below double as documentation.

Three kinds of events drive an entry (RFC 4861 §7.3, the kernel's
``neighbour.c``):

* the **timer** (:func:`timer_handler`), rows of :data:`TIMER_TABLE` tried in
  order for the current state;
* a **packet to send** (:func:`event_send`), :data:`SEND_TABLE` by state;
* a **confirmation or administrative update** (:func:`update`), from ARP/ND
  or ``ip neigh``.

Kernel: net/core/neighbour.c (neigh_timer_handler, __neigh_event_send,
__neigh_update), include/net/neighbour.h.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Final, NamedTuple, Protocol

import attrs

from netstack.sites import TIMED, kernel, spend

__all__ = [
    "CONNECT",
    "DEL_TIMER",
    "DROP_FAILED",
    "FLUSH_QUEUE",
    "INVALIDATE",
    "NOTIFY",
    "NUD_CONNECTED",
    "NUD_DELAY",
    "NUD_FAILED",
    "NUD_INCOMPLETE",
    "NUD_IN_TIMER",
    "NUD_NOARP",
    "NUD_NONE",
    "NUD_PERMANENT",
    "NUD_PROBE",
    "NUD_REACHABLE",
    "NUD_STALE",
    "NUD_VALID",
    "PROBE",
    "PROBE_NOW",
    "QUEUE",
    "SET_TIMER",
    "SUSPECT",
    "UPDATE_HH",
    "Act",
    "Action",
    "NeighParms",
    "NudEntry",
    "NudFields",
    "event_send",
    "neigh_max_probes",
    "nud_state_name",
    "timer_handler",
    "update",
]

NUD_NONE: Final = 0x00
NUD_INCOMPLETE: Final = 0x01
NUD_REACHABLE: Final = 0x02
NUD_STALE: Final = 0x04
NUD_DELAY: Final = 0x08
NUD_PROBE: Final = 0x10
NUD_FAILED: Final = 0x20
NUD_NOARP: Final = 0x40
NUD_PERMANENT: Final = 0x80

NUD_IN_TIMER: Final = NUD_INCOMPLETE | NUD_REACHABLE | NUD_DELAY | NUD_PROBE
NUD_VALID: Final = NUD_PERMANENT | NUD_NOARP | NUD_REACHABLE | NUD_PROBE | NUD_STALE | NUD_DELAY
NUD_CONNECTED: Final = NUD_PERMANENT | NUD_NOARP | NUD_REACHABLE

NUD_NAMES: Final = (
    (NUD_INCOMPLETE, "INCOMPLETE"),
    (NUD_REACHABLE, "REACHABLE"),
    (NUD_STALE, "STALE"),
    (NUD_DELAY, "DELAY"),
    (NUD_PROBE, "PROBE"),
    (NUD_FAILED, "FAILED"),
    (NUD_NOARP, "NOARP"),
    (NUD_PERMANENT, "PERMANENT"),
)

# neigh_update flags (include/net/neighbour.h)
NEIGH_UPDATE_F_OVERRIDE: Final = 1 << 0
NEIGH_UPDATE_F_WEAK_OVERRIDE: Final = 1 << 1
NEIGH_UPDATE_F_OVERRIDE_ISROUTER: Final = 1 << 2
NEIGH_UPDATE_F_USE: Final = 1 << 3
NEIGH_UPDATE_F_EXT_LEARNED: Final = 1 << 4
NEIGH_UPDATE_F_ISROUTER: Final = 1 << 30
NEIGH_UPDATE_F_ADMIN: Final = 1 << 31


def nud_state_name(state: int) -> str:
    """``ip neigh`` spelling of a state (``NONE`` for 0)."""
    names = [name for bit, name in NUD_NAMES if state & bit]
    return " ".join(names) if names else "NONE"


class Act(enum.Enum):
    """What the glue must do."""

    SET_TIMER = "set_timer"  # arg: expiry jiffy
    DEL_TIMER = "del_timer"
    PROBE = "probe"  # send one solicitation (neigh_probe); probes += 1
    PROBE_NOW = "probe_now"  # first solicitation, sent before returning (immediate_ok)
    INVALIDATE = "invalidate"  # report failure for every queued skb, purge (FAILED)
    CONNECT = "connect"  # output = connected output (neigh_connect)
    SUSPECT = "suspect"  # output = resolving output (neigh_suspect)
    NOTIFY = "notify"  # netlink RTM_NEWNEIGH
    QUEUE = "queue"  # put the skb on arp_queue (rc 1: caller must not send)
    DROP_FAILED = "drop_failed"  # free the skb (NEIGH_FAILED) (rc 1)
    FLUSH_QUEUE = "flush_queue"  # entry became valid: transmit arp_queue
    UPDATE_HH = "update_hh"  # lladdr changed: rewrite cached headers


class Action(NamedTuple):
    act: Act
    arg: int = 0


# The members as module constants: ``Act.X`` goes through the enum's metaclass,
# about 0.3 µs in CPython 3.11 (a module global's read is 0.03), and every
# transition builds or tests a few; the actions without an argument are shared
# (an Action is an immutable tuple).
SET_TIMER: Final = Act.SET_TIMER
DEL_TIMER: Final = Act.DEL_TIMER
PROBE: Final = Act.PROBE
PROBE_NOW: Final = Act.PROBE_NOW
INVALIDATE: Final = Act.INVALIDATE
CONNECT: Final = Act.CONNECT
SUSPECT: Final = Act.SUSPECT
NOTIFY: Final = Act.NOTIFY
QUEUE: Final = Act.QUEUE
DROP_FAILED: Final = Act.DROP_FAILED
FLUSH_QUEUE: Final = Act.FLUSH_QUEUE
UPDATE_HH: Final = Act.UPDATE_HH
ACTION_DEL_TIMER: Final = Action(DEL_TIMER)
ACTION_PROBE: Final = Action(PROBE)
ACTION_PROBE_NOW: Final = Action(PROBE_NOW)
ACTION_INVALIDATE: Final = Action(INVALIDATE)
ACTION_CONNECT: Final = Action(CONNECT)
ACTION_SUSPECT: Final = Action(SUSPECT)
ACTION_NOTIFY: Final = Action(NOTIFY)
ACTION_QUEUE: Final = Action(QUEUE)
ACTION_DROP_FAILED: Final = Action(DROP_FAILED)
ACTION_FLUSH_QUEUE: Final = Action(FLUSH_QUEUE)
ACTION_UPDATE_HH: Final = Action(UPDATE_HH)


@attrs.frozen
class NeighParms:
    """Per-device neighbour parameters, in jiffies (kernel: ``struct neigh_parms``)."""

    hz: int = 1000
    base_reachable_time: int = 30_000
    reachable_time: int = 30_000  # randomised in [base/2, 3·base/2) by the glue
    retrans_time: int = 1_000
    delay_probe_time: int = 5_000
    gc_staletime: int = 60_000
    ucast_probes: int = 3
    mcast_probes: int = 3
    app_probes: int = 0
    mcast_reprobes: int = 0
    queue_len_bytes: int = 212_992
    locktime: int = 1_000
    proxy_qlen: int = 64
    anycast_delay: int = 1_000
    proxy_delay: int = 800
    interval_probe_time: int = 5_000


class NudFields(Protocol):
    """What the state machine reads and writes on an entry (times in jiffies)."""

    nud_state: int
    confirmed: int
    updated: int
    used: int
    probes: int


@attrs.define
class NudEntry:
    """A bare set of NUD fields (the glue's ``Neighbour`` has the same ones)."""

    nud_state: int = NUD_NONE
    confirmed: int = 0
    updated: int = 0
    used: int = 0
    probes: int = 0


@kernel("neigh_max_probes")
def neigh_max_probes(n: NudFields, p: NeighParms) -> int:
    """Solicitations allowed before FAILED. Kernel: neigh_max_probes()."""
    return (
        p.ucast_probes
        + p.app_probes
        + (p.mcast_reprobes if n.nud_state & NUD_PROBE else p.mcast_probes)
    )


def _retrans(p: NeighParms) -> int:
    return max(p.retrans_time, p.hz // 100)


Guard = Callable[[NudFields, NeighParms, int], bool]
NextTimer = Callable[[NudFields, NeighParms, int], int]


class TimerRow(NamedTuple):
    """One row of :data:`TIMER_TABLE`: in *state*, if *guard*, go to *new_state*."""

    state: int
    guard: Guard
    new_state: int  # 0: stay in the current state
    next_timer: NextTimer | None
    actions: tuple[Act, ...]
    describe: str


def _always(n: NudFields, p: NeighParms, now: int) -> bool:
    return True


TIMER_TABLE: Final[tuple[TimerRow, ...]] = (
    TimerRow(
        NUD_REACHABLE,
        lambda n, p, now: now <= n.confirmed + p.reachable_time,
        0,
        lambda n, p, now: n.confirmed + p.reachable_time,
        (),
        "confirmed within reachable_time: still reachable",
    ),
    TimerRow(
        NUD_REACHABLE,
        lambda n, p, now: now <= n.used + p.delay_probe_time,
        NUD_DELAY,
        lambda n, p, now: now + p.delay_probe_time,
        (SUSPECT,),
        "not confirmed but used recently: wait delay_probe_time for a confirmation",
    ),
    TimerRow(
        NUD_REACHABLE,
        _always,
        NUD_STALE,
        None,
        (SUSPECT, NOTIFY),
        "neither confirmed nor used: stale until next use",
    ),
    TimerRow(
        NUD_DELAY,
        lambda n, p, now: now <= n.confirmed + p.delay_probe_time,
        NUD_REACHABLE,
        lambda n, p, now: n.confirmed + p.reachable_time,
        (CONNECT, NOTIFY),
        "confirmed during the delay: reachable again",
    ),
    TimerRow(
        NUD_DELAY,
        _always,
        NUD_PROBE,
        lambda n, p, now: now + _retrans(p),
        (NOTIFY,),
        "no confirmation: start unicast probes",
    ),
    TimerRow(
        NUD_PROBE,
        _always,
        0,
        lambda n, p, now: now + _retrans(p),
        (),
        "probe again after retrans_time",
    ),
    TimerRow(
        NUD_INCOMPLETE,
        _always,
        0,
        lambda n, p, now: now + _retrans(p),
        (),
        "solicit again after retrans_time",
    ),
)
"""Timer transitions, tried in order (kernel: neigh_timer_handler)."""


@kernel("net/core/neighbour.c", "neigh_timer_handler")
def timer_handler(n: NudFields, p: NeighParms, now: int) -> list[Action]:
    """The entry's timer fired: transition and say what to do.

    Mutates *n*'s NUD fields. Kernel: net/core/neighbour.c, neigh_timer_handler().
    """
    actions: list[Action] = []
    state = n.nud_state
    if not state & NUD_IN_TIMER:
        return actions
    nxt = now + p.hz
    for row in TIMER_TABLE:
        if row.state == state and row.guard(n, p, now):
            if row.new_state:
                n.nud_state = row.new_state
                n.updated = now
                if row.new_state == NUD_PROBE:
                    n.probes = 0
            if row.next_timer is not None:
                nxt = row.next_timer(n, p, now)
            actions.extend(Action(a) for a in row.actions)
            break
    if n.nud_state & (NUD_INCOMPLETE | NUD_PROBE) and n.probes >= neigh_max_probes(n, p):
        n.nud_state = NUD_FAILED
        n.updated = now
        actions.append(ACTION_NOTIFY)
        actions.append(ACTION_INVALIDATE)
        return actions
    if n.nud_state & NUD_IN_TIMER:
        nxt = max(nxt, now + max(p.hz // 100, 1))
        actions.append(Action(SET_TIMER, nxt))
    if n.nud_state & (NUD_INCOMPLETE | NUD_PROBE):
        actions.append(ACTION_PROBE)
    return actions


SEND_TABLE: Final = (
    ("CONNECTED | DELAY | PROBE", "send now (rc 0)"),
    (
        "NONE | FAILED, mcast+app probes > 0",
        "INCOMPLETE, probes = ucast_probes, probe now, "
        "timer now + max(retrans_time, HZ/100); queue the packet (rc 1)",
    ),
    ("NONE | FAILED, no multicast probes", "FAILED; drop the packet (rc 1)"),
    ("STALE", "DELAY, timer now + delay_probe_time; send now with the stale address (rc 0)"),
    ("INCOMPLETE", "queue the packet, dropping the oldest beyond queue_len_bytes (rc 1)"),
)
"""What :func:`event_send` does in each state (kernel: __neigh_event_send)."""


@kernel("include/net/neighbour.h", "neigh_event_send", "net/core/neighbour.c", "__neigh_event_send")
def event_send(
    n: NudFields, p: NeighParms, now: int, immediate_ok: bool = True
) -> tuple[int, list[Action]]:
    """A packet wants to use the entry: ``(rc, actions)``, rc 0 = send it now.

    Kernel: include/net/neighbour.h neigh_event_send() and
    net/core/neighbour.c __neigh_event_send().
    """
    if TIMED:
        spend("neigh_event_send")
    if n.used != now:
        n.used = now
    state = n.nud_state
    if state & (NUD_CONNECTED | NUD_DELAY | NUD_PROBE):
        return 0, []
    actions: list[Action] = []
    if not state & (NUD_STALE | NUD_INCOMPLETE):
        if p.mcast_probes + p.app_probes:
            n.probes = p.ucast_probes
            actions.append(ACTION_DEL_TIMER)
            n.nud_state = NUD_INCOMPLETE
            n.updated = now
            if immediate_ok:
                actions.append(Action(SET_TIMER, now + _retrans(p)))
            else:
                actions.append(Action(SET_TIMER, now + 1))
        else:
            n.nud_state = NUD_FAILED
            n.updated = now
            return 1, [ACTION_DROP_FAILED]
    elif state & NUD_STALE:
        actions.append(ACTION_DEL_TIMER)
        n.nud_state = NUD_DELAY
        n.updated = now
        actions.append(Action(SET_TIMER, now + p.delay_probe_time))
    if n.nud_state == NUD_INCOMPLETE:
        actions.append(ACTION_QUEUE)
        if immediate_ok and state != NUD_INCOMPLETE:
            actions.append(ACTION_PROBE_NOW)
        return 1, actions
    return 0, actions


@kernel("net/core/neighbour.c", "__neigh_update")
def update(
    n: NudFields,
    p: NeighParms,
    now: int,
    new: int,
    *,
    lladdr_changed: bool,
    has_lladdr: bool,
    flags: int,
) -> tuple[bool, list[Action]]:
    """Apply a confirmation or administrative change: ``(accepted, actions)``.

    *lladdr_changed* says the offered link-layer address differs from the
    entry's; *has_lladdr* that one was offered (or the entry has one). The
    glue copies the address when the result contains :data:`Act.UPDATE_HH`.
    Returns ``accepted=False`` when the update must be refused (a non-admin
    update of a NOARP/PERMANENT entry: -EPERM).

    Kernel: net/core/neighbour.c, __neigh_update().
    """
    old = n.nud_state
    actions: list[Action] = []
    admin = bool(flags & NEIGH_UPDATE_F_ADMIN)
    if not admin and old & (NUD_NOARP | NUD_PERMANENT):
        return False, actions
    if not new & NUD_VALID:
        if old & NUD_IN_TIMER:
            actions.append(ACTION_DEL_TIMER)
        if old & NUD_CONNECTED:
            actions.append(ACTION_SUSPECT)
        n.nud_state = new
        n.updated = now
        if old & (NUD_INCOMPLETE | NUD_PROBE) and new & NUD_FAILED:
            actions.append(ACTION_INVALIDATE)
        if old != new:
            actions.append(ACTION_NOTIFY)
        return True, actions
    if not has_lladdr:
        return False, actions  # "No link layer address given"
    # "Update confirmed timestamp for neighbour entry after we received ARP
    # packet even if it doesn't change IP to MAC binding": only a CONNECTED
    # update (a reply, a confirmation) proves reachability; a request's STALE
    # does not, even where it leaves a REACHABLE entry REACHABLE below.
    if new & NUD_CONNECTED:
        n.confirmed = now
    change_addr = False
    if old & NUD_VALID and lladdr_changed:
        if flags & NEIGH_UPDATE_F_OVERRIDE:
            change_addr = True
        elif flags & NEIGH_UPDATE_F_WEAK_OVERRIDE and old & NUD_CONNECTED:
            new = NUD_STALE
            change_addr = False
            lladdr_changed = False
        else:
            return True, actions  # different address, no override: ignore
    elif lladdr_changed:
        change_addr = True
    if (
        not change_addr
        and not lladdr_changed
        and new == NUD_STALE
        and not admin
        and old & NUD_VALID
    ):
        new = old  # same address re-announced: keep the state
    # "Update timestamp only once we know we will make a change to the
    # neighbour entry. Otherwise we risk to move the locktime window with noop
    # updates and ignore relevant ARP updates."
    if new != old or change_addr:
        n.updated = now
    if new != old:
        if old & NUD_IN_TIMER:
            actions.append(ACTION_DEL_TIMER)
        if new & NUD_PROBE:
            n.probes = 0
        if new & NUD_IN_TIMER:
            actions.append(
                Action(SET_TIMER, now + (p.reachable_time if new & NUD_REACHABLE else 0))
            )
        n.nud_state = new
        actions.append(ACTION_NOTIFY)
    if change_addr:
        actions.append(ACTION_UPDATE_HH)
        if not new & NUD_CONNECTED:
            n.confirmed = now - 2 * p.base_reachable_time
    if new == old:
        return True, actions
    actions.append(ACTION_CONNECT if new & NUD_CONNECTED else ACTION_SUSPECT)
    if not old & NUD_VALID:
        actions.append(ACTION_FLUSH_QUEUE)
    return True, actions
