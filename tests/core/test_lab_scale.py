"""What makes large labs cheap must not show: lazily registered sysctls, and the
collector paused while a lab is built (issue 18)."""

from __future__ import annotations

import contextlib
import functools
import gc
import shlex
from typing import Any

import pytest
import trio
import trio.lowlevel
import trio.testing
from helpers import IPV4_ONLY, connected_tcp

import netstack
from netstack.core.sysctl import SysctlTable
from netstack.cpu.timed import TimedModel
from netstack.errors import ConfigError
from netstack.gro.core import GroNode
from netstack.host.lab import (
    _FROZEN,
    LAB_GC_THRESHOLD0,
    LAB_GC_THRESHOLD2,
    LAB_GC_YOUNG_SHARE,
    _lab_threshold,
)
from netstack.userspace.iproute2.ip.ip_common import split_words


class Box:
    def __init__(self) -> None:
        self.a = 1
        self.b = 2


def test_register_lazy_runs_on_first_use_of_its_prefix() -> None:
    t = SysctlTable()
    box, runs = Box(), []

    def fill(prefix: str) -> None:
        runs.append(prefix)
        t.register_int(f"{prefix}.a", box, "a")
        t.register_int(f"{prefix}.b", box, "b")

    t.register_lazy("x.dev0.", fill, "x.dev0")
    t.register_lazy("x.dev1.", fill, "x.dev1")
    t.register_lazy("y.gone.", fill, "y.gone")
    assert runs == []
    assert t.read("x.dev0.a") == "1" and runs == ["x.dev0"]
    t.write("x/dev1/b", 5)  # the /proc/sys spelling
    assert box.b == 5 and runs == ["x.dev0", "x.dev1"]
    t.unregister_prefix("y.gone.")  # a device gone before anyone looked
    assert "y.gone.a" not in t and runs == ["x.dev0", "x.dev1"]
    with pytest.raises(ConfigError, match="cannot stat /proc/sys/y/gone/a"):
        t.read("y.gone.a")
    assert t.names("x") == ["x.dev0.a", "x.dev0.b", "x.dev1.a", "x.dev1.b"]


def test_register_lazy_listing_a_parent_fills_it() -> None:
    t = SysctlTable()
    box = Box()
    t.register_lazy("net.conf.eth0.", lambda: t.register_int("net.conf.eth0.a", box, "a"))
    assert t.names("net.conf") == ["net.conf.eth0.a"]


async def test_host_sysctls_as_before(autojump_clock: trio.testing.MockClock) -> None:
    async with netstack.open_lab() as lab:
        a, b = lab.add_host("a"), lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0")
        assert a.sysctl("net.ipv4.conf.eth0.forwarding") == "0"
        a.sysctl("net.ipv4.ip_forward=1")
        assert a.sysctl("net.ipv4.conf.eth0.forwarding") == "1"
        assert a.sysctl("net.ipv6.neigh.eth0.retrans_time_ms") == "1000"
        assert b.sysctl("net.ipv4.neigh.default.gc_thresh3") == "1024"
        a.ip("link set eth0 down")
        a.ip("link set eth0 name wan0")
        with pytest.raises(ConfigError):
            a.sysctl("net.ipv4.conf.eth0.forwarding")
        assert a.sysctl("net.ipv6.conf.wan0.hop_limit") == "64"
        names = a.net.sysctl.names("net")
        assert "net.ipv4.conf.lo.rp_filter" in names and "net.ipv6.conf.all.mtu" in names
        assert not any(".eth0." in n for n in names)
        assert len([n for n in names if n.startswith("net.ipv4.conf.wan0.")]) == len(
            [n for n in names if n.startswith("net.ipv4.conf.lo.")]
        )


async def test_build_pauses_the_collector_and_freezes_the_lab(
    autojump_clock: trio.testing.MockClock,
) -> None:
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    async with netstack.open_lab() as lab:
        lab.add_host("a")
        lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0")
        assert not gc.isenabled()  # building
        await trio.lowlevel.checkpoint()
        assert gc.isenabled() and gc.get_freeze_count() > frozen
        lab.add_host("c")  # building again, after the first freeze
        assert not gc.isenabled()
        lab["a"].ip("addr add 10.0.0.1/24 dev eth0")
        lab["b"].ip("addr add 10.0.0.2/24 dev eth0")
        assert (await lab["a"].ping("10.0.0.2")).received == 1
        assert gc.isenabled()
    assert gc.isenabled() and gc.get_freeze_count() == frozen


async def test_a_frozen_lab_collects_the_young_and_oldest_generations_less_often(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # threshold0 too (ping10k): a young collection every 700 net allocations traversed
    # each skb in flight of 10,000 pings (2.5-3 s of that phase); 100,000 leaves ten
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        async with netstack.open_lab() as lab:
            lab.add_host("a")
            assert gc.get_threshold() == (700, 10, 10)  # building: the collector is off
            await trio.lowlevel.checkpoint()
            young = max(LAB_GC_THRESHOLD0, _FROZEN.objects // LAB_GC_YOUNG_SHARE)
            assert gc.get_threshold() == (young, 10, LAB_GC_THRESHOLD2)
            assert LAB_GC_THRESHOLD0 == 100_000 and LAB_GC_THRESHOLD2 == 100
        assert gc.get_threshold() == (700, 10, 10)  # handed back
        gc.set_threshold(200_000, 10, 500)  # a caller's higher thresholds are left alone
        async with netstack.open_lab() as lab:
            lab.add_host("a")
            await trio.lowlevel.checkpoint()
            young = max(200_000, _FROZEN.objects // LAB_GC_YOUNG_SHARE)
            assert gc.get_threshold() == (young, 10, 500)
        gc.set_threshold(0, 10, 10)  # and no automatic collection stays so
        async with netstack.open_lab() as lab:
            lab.add_host("a")
            await trio.lowlevel.checkpoint()
            assert gc.get_threshold() == (0, 10, LAB_GC_THRESHOLD2)
        assert gc.get_threshold() == (0, 10, 10)
        gc.set_threshold(700, 10, 10)
        async with netstack.open_lab() as lab:  # changed while open: not overwritten
            gc.set_threshold(700, 10, 10)
            lab.add_host("a")
            await trio.lowlevel.checkpoint()
            gc.set_threshold(1000, 10, 100)
        assert gc.get_threshold() == (1000, 10, 100)
    finally:
        gc.set_threshold(*saved)


async def test_a_frozen_labs_young_threshold_follows_what_is_frozen(
    autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pinggc: the 100,000 of threshold0 still left eight young collections in the
    # ping phase of 10,000 hosts (0.16 - 0.25 s), each traversing skbs in flight and
    # pings' tasks, none of it garbage; a quarter of the frozen heap leaves none
    assert _lab_threshold(700, 10, 10, 4_000_000) == (1_000_000, 10, 100)
    assert _lab_threshold(700, 10, 10, 40_000) == (100_000, 10, 100)
    assert _lab_threshold(2_000_000, 10, 10, 4_000_000) == (2_000_000, 10, 100)
    assert _lab_threshold(0, 10, 10, 4_000_000) == (0, 10, 100)
    monkeypatch.setattr("netstack.host.lab.LAB_GC_THRESHOLD0", 1)  # the share alone
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    gc.collect()  # (the young generation empty: what is counted next is the lab)
    frozen_before = gc.get_freeze_count()
    try:
        async with netstack.open_lab() as lab:
            lab.add_host("a")
            built = gc.get_count()[0]  # (the collector is off while the lab is built)
            await trio.lowlevel.checkpoint()
            # the objects frozen, counted as the young generation counts them: what
            # the lab allocated since the last collection (gc.get_freeze_count()
            # walks every object, and counts what the caller had too)
            first = _FROZEN.objects
            assert built > 100 and built <= first < built + 100
            assert gc.get_freeze_count() - frozen_before >= first
            assert gc.get_threshold()[0] == max(700, first // LAB_GC_YOUNG_SHARE)
            for name in "bcdefgh":  # built again: frozen again, and followed
                lab.add_host(name)
            await trio.lowlevel.checkpoint()
            assert _FROZEN.objects > first
            assert gc.get_threshold()[0] == _FROZEN.objects // LAB_GC_YOUNG_SHARE
            gc.set_threshold(5000, 10, 100)  # the caller's own, set while open: kept
            lab.add_host("i")
            await trio.lowlevel.checkpoint()
            assert gc.get_threshold() == (5000, 10, 100)
        assert gc.get_threshold() == (5000, 10, 100)
        assert _FROZEN.objects == 0
    finally:
        gc.set_threshold(*saved)


class _Cycle:
    def __init__(self) -> None:
        self.me = self


async def test_a_frozen_lab_still_collects_cyclic_garbage(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # the higher threshold defers the young collections, it does not stop them:
    # garbage in cycles made while a lab runs is freed once threshold0 objects pile up
    import weakref

    async with netstack.open_lab() as lab:
        lab.add_host("a")
        await trio.lowlevel.checkpoint()
        young = gc.get_threshold()[0]
        first = _Cycle()
        gone = weakref.ref(first)
        del first
        made = 0
        while gone() is not None and made < 2 * young:
            _Cycle()
            made += 1
        assert gone() is None  # collected by the collector, not by a gc.collect()
        assert made <= young  # (an instance and its dict: two objects a cycle)


async def test_a_ping_leaves_no_garbage_for_the_collector(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # what the higher threshold defers holds back no memory on a lab's paths: a
    # ping's socket, task, skbs, routes and neighbour entries are freed by reference
    # counting alone (the collector off, nothing found after)
    async with netstack.open_lab(chain_polls=True) as lab:
        lab.add_host("a", sysctls=IPV4_ONLY)
        lab.add_host("b", sysctls=IPV4_ONLY)
        lab.add_link("a:eth0", "b:eth0")
        lab["a"].ip("addr add 10.0.0.1/24 dev eth0")
        lab["b"].ip("addr add 10.0.0.2/24 dev eth0")
        assert (await lab["a"].ping("10.0.0.2")).received == 1  # the ARP, the first routes
        gc.collect()
        gc.disable()
        try:
            for _ in range(3):
                assert (await lab["a"].ping("10.0.0.2", count=2, interval=0.2)).received == 2
                assert (await lab["a"].ping("10.0.0.9", count=1, timeout=1)).received == 0
            assert gc.collect() == 0
        finally:
            gc.enable()


async def test_closed_tcp_connections_leave_no_garbage_for_the_collector(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # the same for TCP: a connection's two sockets, its request sock and its
    # TIME_WAIT sock are freed by reference counting once closed (their timers'
    # bound methods and closures were cycles, ~70 objects a connection: a 10,000-host
    # lab, whose young threshold is 1.3 million, would have held ~0.6 GB of them)
    async with netstack.open_lab() as lab:
        lab.add_host("a", sysctls=IPV4_ONLY)
        lab.add_host("b", sysctls=IPV4_ONLY)
        lab.add_link("a:eth0", "b:eth0")
        lab["a"].ip("addr add 10.0.0.1/24 dev eth0")
        lab["b"].ip("addr add 10.0.0.2/24 dev eth0")
        cli, conn = await connected_tcp(lab["a"], lab["b"], 5000)  # ARP, routes, tables
        cli.close()
        conn.close()
        await trio.sleep(120)
        gc.collect()
        gc.disable()
        try:
            for port in (5001, 5002, 5003):
                cli, conn = await connected_tcp(lab["a"], lab["b"], port)
                await cli.send(b"x" * 10_000)
                got = 0
                while got < 10_000:
                    got += len(await conn.recv(65536))
                conn.close()  # the server closes first: its side goes through TIME_WAIT
                cli.close()
                await trio.sleep(120)  # past TIME_WAIT and FIN_WAIT2
            del cli, conn
            assert gc.collect() == 0
        finally:
            gc.enable()


async def test_two_open_labs_hand_the_collector_back_when_the_last_closes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # gc.freeze() and the thresholds are the interpreter's: the first lab to close
    # must not unfreeze the other's objects nor hand back the thresholds under it
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        async with netstack.open_lab() as outer:
            outer.add_host("a")
            await trio.lowlevel.checkpoint()
            async with netstack.open_lab() as inner:
                inner.add_host("b")
                await trio.lowlevel.checkpoint()
            assert gc.get_threshold() == _lab_threshold(700, 10, 10, _FROZEN.objects)
            assert gc.get_freeze_count() > 0  # the outer lab is still frozen
        assert gc.get_threshold() == (700, 10, 10)
        assert gc.get_freeze_count() == 0
    finally:
        gc.set_threshold(*saved)


async def test_a_failing_close_still_hands_the_collector_back(
    autojump_clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)

    def broken_close(self: netstack.Lab) -> None:
        raise RuntimeError("adapter close failed")

    async def run_lab() -> None:
        async with netstack.open_lab() as lab:
            lab.add_host("a")
            await trio.lowlevel.checkpoint()

    monkeypatch.setattr(netstack.Lab, "_adapters_close", broken_close)
    try:
        with pytest.raises(RuntimeError, match="adapter close failed"):
            await run_lab()
        assert gc.get_threshold() == (700, 10, 10)
        assert gc.get_freeze_count() == 0
        assert gc.isenabled()
    finally:
        gc.set_threshold(*saved)


async def test_a_disabled_collector_stays_disabled(
    autojump_clock: trio.testing.MockClock,
) -> None:
    gc.disable()
    try:
        async with netstack.open_lab() as lab:
            lab.add_host("a")
            await trio.lowlevel.checkpoint()
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


async def test_a_failed_build_resumes_the_collector(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def build_twice() -> None:
        async with netstack.open_lab() as lab:
            lab.add_host("a")
            lab.add_host("a")

    with pytest.raises(netstack.TopologyError):
        await build_twice()
    assert gc.isenabled()


@pytest.mark.parametrize(
    "line",
    [
        "addr add 10.0.0.1/24 dev eth0",
        "  link  set p0 master br0 ",
        "",
        'link set eth0 alias "my uplink"',
        "link set eth0 alias it\\'s",
        "route add default via 10.0.0.254\tdev eth0",
        "link add dev é type dummy",
    ],
)
def test_split_words_splits_as_shlex(line: str) -> None:
    assert split_words(line) == shlex.split(line)


def test_split_words_unterminated_quote() -> None:
    with pytest.raises(ValueError, match="No closing quotation"):
        split_words('link set eth0 alias "open')


def test_devconf_copies_every_field() -> None:
    from netstack.ipv4.devinet import DEVCONF_FIELDS, DevConf
    from netstack.ipv6.addrconf import DEVCONF6, DevConf6

    src4, src6 = DevConf(), DevConf6(is_all=True)
    for i, f in enumerate(DEVCONF_FIELDS):
        setattr(src4, f, 1000 + i)
    for i, f in enumerate((*DEVCONF6, "mtu6")):
        setattr(src6, f, 2000 + i)
    c4, c6 = DevConf(src4), DevConf6(src6)
    assert [getattr(c4, f) for f in DEVCONF_FIELDS] == [getattr(src4, f) for f in DEVCONF_FIELDS]
    assert [getattr(c6, f) for f in (*DEVCONF6, "mtu6")] == list(range(2000, 2001 + len(DEVCONF6)))


def test_attr_copier_refuses_what_is_not_a_name() -> None:
    from netstack.core.slotcopy import attr_copier

    with pytest.raises(ValueError, match="not attribute names"):
        attr_copier(["a", "b; import os"])


def test_a_lookup_registers_only_its_own_entry() -> None:
    t = SysctlTable()
    box, runs = Box(), []

    def fill(prefix: str) -> None:
        runs.append(prefix)
        t.register_int(f"{prefix}.a", box, "a", minimum=0)
        t.register_int(f"{prefix}.b", box, "b")
        t.register_lazy(f"{prefix}.sub.", lambda: t.register_int(f"{prefix}.sub.c", box, "a"))

    t.register_lazy("x.all.", fill, "x.all")
    t.write("x.all.a", 7)
    assert box.a == 7 and runs == ["x.all"]
    assert list(t._entries) == ["x.all.a"] and "x.all." in t._lazy  # the rest still deferred
    with pytest.raises(ConfigError, match="Invalid argument"):
        t.write("x.all.a", -1)  # the early entry checks as the full one does
    assert "x.all.b" in t and len(t._entries) == 2  # `in` registers one name too
    assert t.read("x.all.sub.c") == "7"  # in a group the first one defers: it runs in full
    assert t.names("x") == ["x.all.a", "x.all.b", "x.all.sub.c"]
    # for a, for b, for c (not found: c's group is deferred by x.all's), then in full
    assert runs == ["x.all"] * 4
    with pytest.raises(ConfigError, match="No such file"):
        t.read("x.all.nothing")


def test_an_early_entry_of_a_device_that_goes_is_forgotten() -> None:
    t = SysctlTable()
    box = Box()
    t.register_lazy("d.eth0.", lambda: t.register_int("d.eth0.a", box, "a"))
    assert t.read("d.eth0.a") == "1"
    t.unregister_prefix("d.eth0.")
    assert "d.eth0.a" not in t
    t.register_lazy("d.eth0.", lambda: t.register_int("d.eth0.a", box, "b"))
    assert t.read("d.eth0.a") == "2"
    t.names()
    with pytest.raises(ValueError, match="registered twice"):
        t.register_int("d.eth0.a", box, "a")


async def test_an_ipv4_only_host_builds_no_ipv6_conf_all(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with netstack.open_lab() as lab:
        h = lab.add_host("h", sysctls={"net.ipv6.conf.all.disable_ipv6": 1})
        entries = h.net.sysctl._entries
        assert [n for n in entries if n.startswith("net.ipv6.")] == [
            "net.ipv6.conf.all.disable_ipv6"
        ]
        assert h.sysctl("net.ipv6.conf.default.disable_ipv6") == "1"
        assert "net.ipv6.conf.all.forwarding" in h.net.sysctl.names("net.ipv6.conf.all")
        assert h.sysctl("net.ipv6.conf.all.disable_ipv6") == "1"


async def test_tcp_sysctls_are_registered_when_first_used(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with netstack.open_lab() as lab:
        h = lab.add_host("h")
        entries = h.net.sysctl._entries
        assert not [n for n in entries if n.startswith("net.ipv4.tcp_")]
        assert h.sysctl("net.ipv4.tcp_sack") == "1"
        assert [n for n in entries if n.startswith("net.ipv4.tcp_")] == ["net.ipv4.tcp_sack"]
        h.sysctl("net.ipv4.tcp_rmem=4096 65536 1048576")
        assert h.sysctl("net.ipv4.tcp_rmem") == "4096\t65536\t1048576"
        names = h.net.sysctl.names("net.ipv4")
        assert "net.ipv4.tcp_congestion_control" in names and "net.ipv4.ip_forward" in names
        assert h.sysctl("net.ipv4.tcp_sack") == "1"


def test_wanted_narrows_a_group_to_the_looked_up_entry() -> None:
    t = SysctlTable()
    made: list[str] = []

    def group(prefix: str) -> None:
        for name in t.wanted(prefix, ("a", "b", "c")):
            made.append(name)
            t.register_int(f"{prefix}{name}", box, name)

    box = type("Box", (), {"a": 1, "b": 2, "c": 3})()
    t.register_lazy("d.x.", group, "d.x.")
    assert t.read("d.x.b") == "2"
    assert made == ["b"]  # the lookup built only its entry
    assert t.names("d.x") == ["d.x.a", "d.x.b", "d.x.c"]
    assert made == ["b", "a", "b", "c"]  # the listing ran the group in full
    with pytest.raises(ConfigError):
        t.read("d.x.z")


async def test_idle_devices_make_no_locks_gro_lists_or_ring_blocks(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A noqueue qdisc's locks, a GRO-off device's hash lists: made on first use."""
    async with netstack.open_lab() as lab:
        a, b = lab.add_host("a", sysctls=IPV4_ONLY), lab.add_host("b", sysctls=IPV4_ONLY)
        lab.add_link("a:eth0", "b:eth0")
        a.ip("addr add 10.0.0.1/24 dev eth0")
        b.ip("addr add 10.0.0.2/24 dev eth0")
        assert (await a.ping("10.0.0.2", count=1)).received == 1
        eth0 = a.dev("eth0")
        q = eth0._tx[0].qdisc
        assert not q.can_enqueue  # noqueue: its locks were never taken, so never made
        assert not {"lock", "busylock", "run_iv"} & q.__dict__.keys()
        assert (q.lock.name, q.busylock.name, q.run_iv.name) == (
            "eth0:qdisc",
            "eth0:busylock",
            "eth0:qdisc running",
        )
        assert q.lock is q.lock and "lock" in q.__dict__
        txq = eth0._tx[0]  # veth is LLTX: HARD_TX_LOCK was never taken
        # (the mypyc build's native NetdevQueue has no __dict__: its lock and DQL are
        # properties over fields that stay None until read)
        assert not {"_xmit_lock", "dql"} & getattr(txq, "__dict__", {}).keys()
        assert getattr(txq, "_lock", None) is None and getattr(txq, "_dql", None) is None
        assert txq._xmit_lock.name == "eth0:_xmit_lock[0]" and txq.dql.limit == 0
        assert "input_pkt_queue" not in a.net.softnet[0].__dict__  # nothing looped back
        napi = eth0.napi_list[0]
        gro = napi.gro
        assert isinstance(gro, GroNode) and gro.hash is None  # veth: GRO off
        assert gro.held_skbs() == 0
        assert eth0.priv.ring == [] and napi.packets == 2  # the ARP and echo replies
        a.ip("link add d0 type dummy")
        a.tc("qdisc add dev d0 root pfifo")
        a.ip("link set d0 up")
        q = a.dev("d0")._tx[0].qdisc
        assert q.can_enqueue and q.lock.name == "d0:qdisc"


async def _wake_order(**lab_args: Any) -> list[int]:
    """The order in which twenty tasks woken at one instant run in a lab."""
    order: list[int] = []
    async with netstack.open_lab(**lab_args):
        event = trio.Event()

        async def waiter(i: int) -> None:
            await event.wait()
            order.append(i)

        async with trio.open_nursery() as nursery:
            for i in range(20):
                nursery.start_soon(waiter, i)
            await trio.sleep(1)
            event.set()
    return order


async def test_a_lab_without_shuffle_runs_woken_tasks_in_reverse_creation_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    import trio._core._run as _run

    generator = _run._r
    shuffled = await _wake_order()
    assert sorted(shuffled) == list(range(20)) and shuffled != list(range(20))
    assert await _wake_order() == shuffled  # seeded: the same order again
    assert await _wake_order(seed=1) != shuffled  # another seed, another order
    assert _run._r is generator
    # shuffle=False: reverse creation order (Trio runs a batch from its end), for
    # every seed; Trio's generator handed back
    assert await _wake_order(shuffle=False) == list(range(19, -1, -1))
    assert await _wake_order(shuffle=False, seed=1) == list(range(19, -1, -1))
    assert _run._r is generator
    assert await _wake_order() == shuffled
    with pytest.raises(ValueError, match="timed lab"):
        async with netstack.open_lab(timed=TimedModel(), shuffle=False):
            pass
    assert _run._r is generator


async def test_a_switched_lab_pings_the_same_in_creation_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # the order changes which host's step runs first at an instant, not what is sent
    results = []
    for shuffle, chain in ((True, False), (False, False), (False, True), (True, True)):
        async with netstack.open_lab(shuffle=shuffle, chain_polls=chain) as lab:
            lab.add_switch("s1", sysctls=IPV4_ONLY)
            hosts = [lab.add_host(f"h{i}", sysctls=IPV4_ONLY) for i in range(8)]
            for i, h in enumerate(hosts):
                lab.add_link(f"h{i}:eth0", "s1")
                h.ip(f"addr add 10.0.0.{i + 1}/24 dev eth0")
            replies: list[int] = []

            async def one(h: netstack.Host, target: str, replies: list[int] = replies) -> None:
                result = await h.ping(target, count=1, timeout=5)
                replies.append(result.received)

            async with trio.open_nursery() as nursery:
                for i, h in enumerate(hosts):
                    nursery.start_soon(one, h, f"10.0.0.{(i + 1) % 8 + 1}")
            received = [sum(replies)]
            arp = tuple(
                sum(getattr(h.net.ipv4, f) for h in hosts) for f in ("arp_out", "arp_invalid")
            )
            br = lab["s1"].dev("br0").priv
            floods = sum(p.stats.flood_broadcast for p in br.port_list)
            sent = tuple(h.dev("eth0").stats.tx_packets for h in hosts)
            got = tuple(h.dev("eth0").stats.rx_packets for h in hosts)
            results.append((received[0], arp, floods, sent, got))
    assert results[0] == results[1] == results[2] == results[3]
    assert results[0][0] == 8


class _NapiSteps(trio.abc.Instrument):
    def __init__(self) -> None:
        self.steps = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.steps += "/napi/" in task.name


async def _switched_pings(
    chain: bool, *, beside: bool = False, bh: bool = False
) -> tuple[int, int]:
    """Eight hosts on a switch ping a neighbour each: (replies, NAPI task steps);
    *beside*: with an idle chaining lab open meanwhile; *bh*: polls at
    local_bh_enable (the default; off here, each NAPI polled by its task)."""
    async with contextlib.AsyncExitStack() as stack:
        if beside:
            idle = await stack.enter_async_context(netstack.open_lab(chain_polls=True))
            idle.add_host("idle", sysctls=IPV4_ONLY)
        lab = await stack.enter_async_context(
            netstack.open_lab(shuffle=False, chain_polls=chain, polls_at_bh_enable=bh)
        )
        lab.add_switch("s1", sysctls=IPV4_ONLY)
        hosts = [lab.add_host(f"h{i}", sysctls=IPV4_ONLY) for i in range(8)]
        for i, h in enumerate(hosts):
            lab.add_link(f"h{i}:eth0", "s1")
            h.ip(f"addr add 10.0.0.{i + 1}/24 dev eth0")
        await trio.sleep(1)
        count = _NapiSteps()
        trio.lowlevel.add_instrument(count)
        replies = [0]

        async def one(h: netstack.Host, target: str) -> None:
            result = await h.ping(target, count=1, timeout=5)
            replies[0] += result.received

        async with trio.open_nursery() as nursery:
            for i, h in enumerate(hosts):
                nursery.start_soon(one, h, f"10.0.0.{(i + 1) % 8 + 1}")
        trio.lowlevel.remove_instrument(count)
    return replies[0], count.steps


async def test_chained_polls_take_fewer_napi_task_steps(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # chained polls shorten the steps of NAPI tasks: they matter in a lab whose hosts'
    # NAPI instances are polled by their tasks (polls_at_bh_enable=False); by default
    # every poll of a ping runs in the ping's own transmits (net_rx_action at its
    # local_bh_enable, the switch's forwarding and the reply included): no NAPI step
    assert await _switched_pings(False, bh=True) == await _switched_pings(True, bh=True) == (8, 0)
    replies, steps = await _switched_pings(False)
    chained_replies, chained_steps = await _switched_pings(True)
    assert replies == chained_replies == 8
    # a ping crosses eight veths (ARP request, reply, echo, reply: two each), each a
    # NAPI task step of its own (the flooded requests a host hears are one poll);
    # chained, a hop is polled in the step that forwarded to it
    assert steps >= 8 * 6
    assert chained_steps <= steps // 4
    # the chain is the lab's: a lab that did not ask for it keeps a task step per
    # poll while a chaining lab is open beside it (one process-wide list chained both)
    assert await _switched_pings(False, beside=True) == (replies, steps)
    with pytest.raises(ValueError, match="chain_polls"):
        async with netstack.open_lab(timed=TimedModel(), chain_polls=True):
            pass


async def test_a_chaining_lab_s_hosts_share_its_poll_list_until_it_closes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with netstack.open_lab(chain_polls=True) as lab, netstack.open_lab() as other:
        a, b = lab.add_host("a"), lab.add_host("b")
        assert lab.rx_chain is not None
        assert a.net.rx_chain is b.net.rx_chain is lab.rx_chain
        assert other.add_host("c").net.rx_chain is None and other.rx_chain is None
        lab.add_link("a:eth0", "b:eth0")
        a.ip("addr add 10.0.0.1/24 dev eth0")
        b.ip("addr add 10.0.0.2/24 dev eth0")
        assert (await a.ping("10.0.0.2", count=1, timeout=5)).received == 1
        chain = lab.rx_chain
    assert chain.runner is None and not chain.pending


def _task_names() -> list[str]:
    """Every live task's name (a walk from Trio's root task)."""
    names: list[str] = []
    todo = [trio.lowlevel.current_root_task()]
    while todo:
        task = todo.pop()
        if task is None:
            continue
        names.append(task.name)
        for nursery in task.child_nurseries:
            todo.extend(nursery.child_tasks)
    return names


class _TimerSteps(trio.abc.Instrument):
    """Steps of the timer tasks: the host's own, or the lab's hub."""

    def __init__(self) -> None:
        self.steps = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.steps += task.name in ("h/timers", "h/hrtimers", "lab/timers")


async def _earlier_heads(chain: bool) -> tuple[list[tuple[str, float]], int]:
    """Arm a jiffy timer and an hrtimer earlier than their bases' heads on a host
    whose timers already sleep: (what fired when, the timer tasks' steps)."""
    from netstack.core.hrtimer import ktime_get_ns

    async with netstack.open_lab(shuffle=False, chain_polls=chain) as lab:
        h = lab.add_host("h", sysctls=IPV4_ONLY)
        fired: list[tuple[str, float]] = []
        late = h.net.timers.timer(lambda: fired.append(("late", trio.current_time())))
        late.mod(h.net.clock.jiffies + 5000)
        late_hr = h.net.hrtimers.timer(lambda: fired.append(("late hr", trio.current_time())))
        late_hr.start(ktime_get_ns(h.net) + 4_000_000_000)
        await trio.sleep(1)  # asleep until the heads
        t0 = trio.current_time()
        count = _TimerSteps()
        trio.lowlevel.add_instrument(count)
        early = h.net.timers.timer(lambda: fired.append(("early", trio.current_time())))
        early.mod(h.net.clock.jiffies + 20)
        early_hr = h.net.hrtimers.timer(lambda: fired.append(("early hr", trio.current_time())))
        early_hr.start(ktime_get_ns(h.net) + 10_000_000)
        # re-armed later: the old head's wake finds nothing due and sleeps again
        again = h.net.timers.timer(lambda: fired.append(("again", trio.current_time())))
        again.mod(h.net.clock.jiffies + 30)
        again.mod(h.net.clock.jiffies + 3000)
        await trio.sleep(5)
        trio.lowlevel.remove_instrument(count)
    return [(name, round(t - t0, 9)) for name, t in fired], count.steps


async def test_a_chaining_lab_s_hub_fires_the_same_timers_at_the_same_times(
    autojump_clock: trio.testing.MockClock,
) -> None:
    fired, steps = await _earlier_heads(False)
    chained_fired, chained_steps = await _earlier_heads(True)
    assert sorted(fired, key=lambda f: (f[1], f[0])) == [
        ("early hr", 0.01),
        ("early", 0.02),
        ("again", 3.0),
        ("late hr", 3.0),
        ("late", 4.0),
    ]
    # the same timers at the same times (two bases due at 3.0: in the hub's order)
    assert sorted(chained_fired, key=lambda f: (f[1], f[0])) == sorted(
        fired, key=lambda f: (f[1], f[0])
    )
    # a task per base: each earlier head wakes its task to sleep again under a new
    # deadline (a step each), then each timer fires in a step and yields in the
    # next; the hub's deadline moves without a step, and one round fires both
    # bases due at 3.0
    assert steps == 2 + 5 * 2
    assert chained_steps == 4 * 2


async def test_a_chaining_lab_runs_no_timer_task_per_host_and_starts_net_tx_when_needed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    from netstack.testing.builders import pair

    own = ("a/timers", "a/hrtimers", "a/net_tx", "lab/timers")
    results = []
    for chain in (False, True):
        async with netstack.open_lab(shuffle=False, chain_polls=chain) as lab:
            a, b = pair(lab)
            assert (await a.ping("10.0.0.2", count=1, timeout=5)).received == 1
            before = {n for n in _task_names() if n in own}
            # tbf's watchdog (an hrtimer) reschedules the qdisc (NET_TX) when its
            # tokens come back: the NET_TX task starts then, in a lab that chains polls
            a.tc("qdisc replace dev eth0 root tbf rate 1mbit burst 3kb latency 500ms")
            srv = b.socket()
            await srv.bind(("0.0.0.0", 9))
            cli = a.socket()
            t0 = trio.current_time()
            for _ in range(20):
                cli.sendto_nowait(b"x" * 1000, ("10.0.0.2", 9))
            got = []
            with trio.move_on_after(2):
                while True:
                    await srv.recv(2000)
                    got.append(round(trio.current_time() - t0, 9))
            after = {n for n in _task_names() if n in own}
            results.append((before, after, got))
    (eager, eager_after, got), (lazy, lazy_after, lazy_got) = results
    assert eager == eager_after == {"a/timers", "a/hrtimers", "a/net_tx"}
    assert lazy == {"lab/timers"}
    assert lazy_after == {"lab/timers", "a/net_tx"}
    assert lazy_got == got and len(got) == 20


async def test_timers_armed_before_a_chaining_lab_attaches_the_host_still_fire(
    autojump_clock: trio.testing.MockClock,
) -> None:
    from netstack.core.net import Net

    async with netstack.open_lab(chain_polls=True) as lab:
        net = Net("x")
        net.rx_chain, net.timer_hub = lab.rx_chain, lab.timer_hub
        fired: list[float] = []
        net.timers.timer(lambda: fired.append(trio.current_time())).mod(net.clock.jiffies + 50)
        net.attach(lab._nursery)
        await trio.sleep(1)
        assert len(fired) == 1
        names = _task_names()
        assert "lab/timers" in names and not {"x/timers", "x/hrtimers", "x/net_tx"} & set(names)


async def test_the_hub_drops_the_entries_of_heads_moved_earlier(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with netstack.open_lab(chain_polls=True) as lab:
        h = lab.add_host("h", sysctls=IPV4_ONLY)
        hub = lab.timer_hub
        assert hub is not None
        fired: list[int] = []
        now = h.net.clock.jiffies
        for i in range(300):  # each one earlier than the last: a new head each time
            h.net.timers.timer(functools.partial(fired.append, i)).mod(now + 10_000 - i)
        assert len(hub._heap) < 150
        await trio.sleep(11)
        assert fired == list(range(299, -1, -1))


async def test_a_chaining_lab_starts_a_napi_task_at_its_first_need(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """In a lab that chains polls, an instance polled only from the lab's poll list
    never has a task: the switch ports' NAPI instances, scheduled while a runner
    polls, are all polled from the list; a host's own veth instance gets its task
    when its first packet arrives from outside a poll (a ping task's transmit) in a
    lab whose NAPI instances are polled by their tasks (``polls_at_bh_enable=False``).
    By default that transmit polls it at its ``local_bh_enable``: no task at all."""
    names = []
    for chain, bh in ((False, False), (True, False), (True, True)):
        async with netstack.open_lab(
            shuffle=False, chain_polls=chain, polls_at_bh_enable=bh
        ) as lab:
            lab.add_switch("s1", sysctls=IPV4_ONLY)
            hosts = [lab.add_host(f"h{i}", sysctls=IPV4_ONLY) for i in range(4)]
            for i, h in enumerate(hosts):
                lab.add_link(f"h{i}:eth0", "s1")
                h.ip(f"addr add 10.0.0.{i + 1}/24 dev eth0")
            await trio.sleep(1)
            before = sorted(n for n in _task_names() if "/napi/" in n)
            result = await hosts[0].ping("10.0.0.2", count=1, timeout=5)
            assert result.received == 1
            after = sorted(n for n in _task_names() if "/napi/" in n)
            names.append((before, after))
    (eager, eager_after), (lazy, lazy_after), (bh_polled, bh_polled_after) = names
    assert len(eager) == len(eager_after) == 8  # 4 host veths, 4 switch ports
    assert lazy == []
    assert 0 < len(lazy_after) < len(eager_after)
    assert bh_polled == bh_polled_after == []
