"""A ring of three switches: 802.1D converges to one blocking port; without it, a bounded storm.

s1 ── s2 ── s3 ── s1, each a host running br0; h1 hangs off s2, h2 off s3.
With ``stp_state 1`` every port listens for ``forward_delay`` (15 s), learns
for another 15 s and forwards at 30 s — except the one port that would close
the loop, which blocks from the first BPDU on. Without STP a broadcast
circles for ever; the bridges' softirq budget (300 frames per jiffy) keeps
virtual time moving and the backlog's bound drops the excess, counted. The
ring's hosts there wake each NAPI instance's task (``polls_at_bh_enable``
False); under the default a broadcast a host sends is polled round the loop
inside its ``sendto`` until its ``netdev_budget``, and the rest goes to the
tasks.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
import trio
import trio.testing
from helpers import IPV4_ONLY

import netstack
from netstack.bridge.br_private import NetBridge
from netstack.core.sock import SO_BROADCAST, SOL_SOCKET
from netstack.cpu.timed import trio_deterministic

ETH_BCAST = b"\xff" * 6


@contextlib.contextmanager
def repeatable_scheduling() -> Iterator[None]:
    """Trio's seeded deterministic run-queue order (as timed mode uses): a storm's
    exact counts depend on which of the tasks woken at one instant runs first."""
    with trio_deterministic():
        import trio._core._run as _run

        _run._r.seed(0)
        setattr(_run, "_ALLOW_DETERMINISTIC_SCHEDULING", True)  # noqa: B010
        yield


def ring(lab: netstack.Lab, *, stp: bool) -> dict[str, netstack.Host]:
    # s1 is the root (priority 4096), s2 next (8192): the s2—s3 link is s2's to serve
    prio = {"s1": 4096, "s2": 8192, "s3": None}
    sw = {
        n: lab.add_switch(n, stp=stp, priority=prio[n], sysctls=IPV4_ONLY)
        for n in ("s1", "s2", "s3")
    }
    lab.add_link("s1", "s2")  # s1-eth1 — s2-eth1
    lab.add_link("s2", "s3")  # s2-eth2 — s3-eth1
    lab.add_link("s3", "s1")  # s3-eth2 — s1-eth2
    # Three switches are three machines, each softirq on a CPU of its own: a BPDU (or
    # a storm's frame) one sends is received by the next in that one's own NAPI task,
    # not inside the sender's timer softirq at local_bh_enable (which would have s1's
    # hello at 2 s reach s2 before s2's own hello timer of that instant fires, where
    # two boxes' hellos cross on the wire). Timers of an instant fire before the
    # frames they send are received, as a wire's delay has it.
    for host in sw.values():
        host.net.polls_at_bh_enable = False
    return sw


def states(sw: dict[str, netstack.Host]) -> dict[str, str]:
    out = {}
    for host in sw.values():
        br: NetBridge = host.dev("br0").priv
        for p in br.port_list:
            out[p.dev.name] = ("disabled", "listening", "learning", "forwarding", "blocking")[
                p.state
            ]
    return out


async def test_ring_converges_to_one_blocking_port(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    sw = ring(lab, stp=True)
    h1 = lab.add_host("h1", sysctls=IPV4_ONLY)
    h2 = lab.add_host("h2", sysctls=IPV4_ONLY)
    lab.add_link("h1:eth0", "s2")  # s2-eth3
    lab.add_link("h2:eth0", "s3")  # s3-eth3
    h1.ip("addr add 10.0.0.1/24 dev eth0")
    h2.ip("addr add 10.0.0.2/24 dev eth0")
    await trio.sleep_until(0.001)
    assert set(states(sw).values()) == {"listening"}  # no BPDU yet: all think they are root
    await trio.sleep_until(2.999)  # the first hellos went out at 2 s
    assert set(states(sw).values()) == {"listening"}
    # s2 and s3 learnt s1 is root at 2 s, but their better offers on the s2—s3 link
    # wait for the hold timer (1 s, rounded: BR_HOLD_TIME) — 3 s decides
    await trio.sleep_until(3.001)
    assert states(sw) == {
        "s1-eth1": "listening",
        "s1-eth2": "listening",
        "s2-eth1": "listening",  # root port
        "s2-eth2": "listening",  # designated towards s3
        "s2-eth3": "listening",
        "s3-eth1": "blocking",  # s2's offer loses to s3's own path: the one cut
        "s3-eth2": "listening",  # root port
        "s3-eth3": "listening",
    }
    await trio.sleep_until(14.999)
    assert set(states(sw).values()) == {"listening", "blocking"}
    await trio.sleep_until(15.001)
    assert set(states(sw).values()) == {"learning", "blocking"}
    await trio.sleep_until(29.999)
    assert set(states(sw).values()) == {"learning", "blocking"}
    await trio.sleep_until(30.001)  # (timers due at 30.0 run in their Nets' tasks)
    st = states(sw)
    assert [p for p, s in st.items() if s == "blocking"] == ["s3-eth1"]
    assert [p for p, s in st.items() if s != "blocking"] == [p for p in st if p != "s3-eth1"]
    assert set(st.values()) == {"forwarding", "blocking"}
    assert sw["s3"].bridge("link show dev s3-eth1") == (
        "3: s3-eth1@if4: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 master br0 "
        "state blocking priority 32 cost 2 \n"
    )
    d = sw["s2"].ip("-d link show br0")
    s1id = sw["s1"].dev("br0").dev_addr
    root_id = "1000." + ":".join(f"{b:x}" for b in s1id)
    assert f"designated_root {root_id} root_port 1 root_path_cost 2 " in d
    # traffic flows, once, around the cut: h1 → s2 → s1 → s3 → h2
    result = await h1.ping("10.0.0.2", count=3, interval=0.1)
    assert result.received == 3
    rx = h2.dev("eth0").statistics()
    # s3's designated port towards h2 sends BPDUs too: 2 s, 4 s … 34 s; h2 has no
    # LLC handler loaded, so they count as rx_nohandler, as on Linux
    assert rx.rx_nohandler == 17
    assert rx.rx_packets - rx.rx_nohandler == 4  # ARP request + 3 echo requests
    s1st = sw["s1"].dev("br0").priv.statistics()
    assert s1st.ports["s1-eth2"].flood_broadcast == 1  # h1's ARP crossed s1 once…
    assert s1st.ports["s1-eth2"].forward == 3  # and the echo requests after it
    s3br: NetBridge = sw["s3"].dev("br0").priv
    assert s3br.rx_dropped_stp_state == 1  # …and stopped at s3's blocking port


async def test_stp_timers_and_bpdus(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    sw = ring(lab, stp=True)
    await trio.sleep_until(31.5)  # (not at a timer's instant: tasks of one instant race)
    s1 = sw["s1"].dev("br0").priv.statistics()
    s3 = sw["s3"].dev("br0").priv.statistics()
    # the root's hello timer fires every 2 s from 2 s on (15 BPDUs by 30 s), and at
    # 3 s the hold timer sends the reply to s2's and s3's first (inferior) BPDUs;
    # at 30 s s2's ports forward, s2 (designated on s2—s3) sends a TCN up its root
    # port and s1 acknowledges it with one more configuration BPDU on s1-eth1
    assert (s1.ports["s1-eth1"].tx_bpdu, s1.ports["s1-eth2"].tx_bpdu) == (17, 16)
    assert s1.ports["s1-eth1"].rx_tcn == 1
    # new_nbp() and the port's enable each init it blocking, then STP blocks it at 3 s
    assert s3.ports["s3-eth1"].transition_blk == 3
    assert s3.ports["s3-eth1"].transition_fwd == 0
    assert sw["s1"].ip("-d link show br0").count("hello_timer    0.50 ") == 1


@pytest.mark.slow
async def test_without_stp_a_broadcast_storm_is_bounded(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    sw = ring(lab, stp=False)
    port = lab.add_port("s1:inj")  # a cable into s1 that Python drives
    frame = ETH_BCAST + bytes.fromhex("020000000099") + b"\x08\x06" + bytes(46)
    with repeatable_scheduling():
        await storm(port, frame, sw)


async def storm(port: netstack.Port, frame: bytes, sw: dict[str, netstack.Host]) -> None:
    port.send_nowait(frame)  # one broadcast, for ever around the ring
    await trio.sleep(0.01)
    assert trio.current_time() == 0.01  # virtual time moves: no hang
    stats = {name: h.dev("br0").priv.statistics() for name, h in sw.items()}
    assert {n: s.time_squeeze for n, s in stats.items()} == {"s1": 10, "s2": 10, "s3": 0}
    assert {n: s.softnet_dropped for n, s in stats.items()} == {"s1": 0, "s2": 0, "s3": 0}
    floods = sum(p.flood_broadcast for s in stats.values() for p in s.ports.values())
    assert floods == 11968
    # bursts of broadcasts (the NIC takes 256 per burst: its RX ring) pile up in the
    # loop until the bridges' backlogs overflow
    for burst in range(8):
        for i in range(256):
            port.send_nowait(ETH_BCAST + bytes((2, 0, 0, 1, burst, i)) + frame[12:])
        await trio.sleep(0.001)
    await trio.sleep(0.01)
    stats = {name: h.dev("br0").priv.statistics() for name, h in sw.items()}
    dropped = {n: s.softnet_dropped for n, s in stats.items()}
    assert dropped == {"s1": 1074, "s2": 0, "s3": 39}
    assert {n: s.time_squeeze for n, s in stats.items()} == {"s1": 29, "s2": 20, "s3": 19}
    assert sw["s1"].dev("br0").statistics().rx_dropped == 1074  # counted on the bridge too
    assert sw["s1"].drops()["CPU_BACKLOG"] == 1074


def ring_with_a_sender(
    lab: netstack.Lab, budget: int
) -> tuple[dict[str, netstack.Host], netstack.Host]:
    """The ring without STP, its hosts' polls at local_bh_enable as the lab says
    (the default: unlike :func:`ring`), and h1 on s1 (s1-eth3) with *budget* as its
    ``net.core.netdev_budget``."""
    sw = {n: lab.add_switch(n, sysctls=IPV4_ONLY) for n in ("s1", "s2", "s3")}
    lab.add_link("s1", "s2")  # s1-eth1 — s2-eth1
    lab.add_link("s2", "s3")  # s2-eth2 — s3-eth1
    lab.add_link("s3", "s1")  # s3-eth2 — s1-eth2
    h1 = lab.add_host("h1", sysctls=IPV4_ONLY)
    lab.add_link("h1:eth0", "s1")  # s1-eth3
    h1.ip("addr add 10.0.0.1/24 dev eth0")
    h1.sysctl(f"net.core.netdev_budget={budget}")
    assert all(h.net.polls_at_bh_enable == lab.polls_at_bh_enable for h in [*sw.values(), h1])
    return sw, h1


async def send_broadcast(h1: netstack.Host) -> None:
    sock = h1.socket()
    sock.setsockopt(SOL_SOCKET, SO_BROADCAST, 1)
    await sock.sendto(b"storm", ("10.0.0.255", 9))  # nobody listens: only the loop


@pytest.mark.parametrize(("budget", "polled", "floods"), [(300, 12235, 12236), (100, 11935, 11934)])
async def test_a_storm_polled_at_local_bh_enable_stops_at_netdev_budget(
    lab: netstack.Lab,
    autojump_clock: trio.testing.MockClock,
    budget: int,
    polled: int,
    floods: int,
) -> None:
    """The default, polls at local_bh_enable (core/napi.py): one broadcast sent
    from h1's socket goes round the loop inside h1's ``sendto`` (its
    ``local_bh_enable`` runs ``do_softirq``: every host's poll on h1's CPU,
    ``net_rx_action``), two copies, one each way, until h1's
    ``netdev_budget`` packets are polled. The instances still scheduled then go
    to their tasks (ksoftirqd), where the storm goes on at each bridge's own
    time limit (300 frames a jiffy, br_input.py), virtual time moves and
    another task keeps running."""
    sw, h1 = ring_with_a_sender(lab, budget)
    hosts = [*sw.values(), h1]
    napis = [d.priv.napi for h in hosts for d in h.net.devices.values() if d.kind == "veth"]
    assert len(napis) == 8
    ticks = 0

    async def ticker() -> None:  # another task of the run
        nonlocal ticks
        while True:
            await trio.sleep(0.001)
            ticks += 1

    await trio.sleep(0.001)
    with repeatable_scheduling():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ticker)
            await send_broadcast(h1)
            # the loop stopped at the budget, exactly (every poll took one packet but
            # h1's, which took s1's two copies at a time), at the same instant
            assert sum(n.packets for n in napis) == budget
            assert trio.current_time() == 0.001 and ticks == 0
            # the two copies' next hops were scheduled: woken to their tasks
            assert [n.name for n in napis if n.scheduled] == ["s1/napi/s1-eth2", "s2/napi/s2-eth2"]
            await trio.sleep(0.01)
            assert trio.current_time() == 0.011
            assert ticks == 9  # 2 ms … 10 ms: the ticker was not starved
            assert sum(n.packets for n in napis) == polled
            stats = {name: h.dev("br0").priv.statistics() for name, h in sw.items()}
            # s1 takes both copies (and floods each to h1 too): it meets its 300 a
            # jiffy every jiffy; s2 once; nothing queued long enough to drop
            assert {n: s.time_squeeze for n, s in stats.items()} == {"s1": 10, "s2": 1, "s3": 0}
            assert {n: s.softnet_dropped for n, s in stats.items()} == {"s1": 0, "s2": 0, "s3": 0}
            assert (
                sum(p.flood_broadcast for s in stats.values() for p in s.ports.values()) == floods
            )
            nursery.cancel_scope.cancel()


async def test_the_budget_spent_at_local_bh_enable_counts_a_time_squeeze(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """``net_rx_action`` counts a ``time_squeeze`` on the CPU it runs on when the
    budget (or 2 ms) is spent with instances left (``/proc/net/softnet_stat``,
    third column): here h1's, whose ``sendto`` polled the storm."""
    _, h1 = ring_with_a_sender(lab, 300)
    await trio.sleep(0.001)
    await send_broadcast(h1)
    assert h1.net.softnet[0].statistics().time_squeeze == 1


async def test_a_chained_runner_that_spends_its_budget_counts_a_time_squeeze(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The chained polls' runner (``Napi._net_rx_action``, a copy of ``net_rx_action``
    as :func:`netstack.core.napi.do_softirq` is) counts a ``time_squeeze`` on its CPU
    each time it yields with instances left, as the kernel does when it punts to
    ksoftirqd: the storm of the ring without STP, NAPI tasks chained (polls at
    local_bh_enable off), each switch's budget 100. Before, nothing counted."""
    async with netstack.open_lab(chain_polls=True, polls_at_bh_enable=False) as lab:
        sw, h1 = ring_with_a_sender(lab, 300)
        for s in sw.values():
            s.sysctl("net.core.netdev_budget=100")
        await trio.sleep(0.001)
        await send_broadcast(h1)
        await trio.sleep(0.01)
        squeezed = {n: h.net.softnet[0].statistics().time_squeeze for n, h in sw.items()}
        assert squeezed == {"s1": 12, "s2": 0, "s3": 15}
        assert h1.net.softnet[0].statistics().time_squeeze == 1
