"""``Lab``: hosts and the links between them, inside a Trio nursery.

Theory of operation: :func:`open_lab` opens a nursery that every host's tasks
(timers, NET_TX, NAPI, NIC wires) run in, and cancels them all when the
``async with`` block ends. :func:`run` runs an async main function on Trio
with ``MockClock(autojump_threshold=0)``: virtual time, so a 30-second ARP
timeout costs microseconds and every run is reproducible.

Links: ``kind="veth"`` joins two hosts with a veth pair; ``kind="nic"`` with
two emulated Ethernet NICs and a cable of ``rate`` bit/s and ``delay``
seconds. Both ends are brought up (the one convenience over ``ip link add``).

Switches: :meth:`Lab.add_switch` makes a host whose job is to switch — a
Linux box with a bridge ``br0`` (as a Mininet ``LinuxBridge`` or a Kathará
collision domain is one). It is a full host (``s1 bridge fdb show``, ``s1
ip -d link``, its own clock and counters), listed in ``lab.switches`` as
well as ``lab.hosts``. A link end that names just a switch (``"s1"``) gets
the next Mininet-style port name (``s1-eth1``, ``s1-eth2``…) and every port
on a switch is enslaved to ``br0`` and brought up.

Building: a lab's hosts, devices and tables are long-lived objects, and
CPython's cyclic collector, triggered by every few hundred allocations, would
traverse all of them again and again while a large lab is built (70 % of the
build time at 1,000 hosts). So :meth:`Lab.add_host` and :meth:`Lab.add_link`
pause the collector, and the first task step after the building code yields
(its first ``await`` that blocks) resumes it and ``gc.freeze()``-s what was
built: the collector never traverses the lab again. Nothing in the stack
depends on when garbage is collected (no finalizers, no weak references), and
a Trio instrument, not a task, resumes the collector, so the scheduling and
every figure are unchanged. When the lab closes, ``gc.unfreeze()`` hands the
objects back to the collector.

Running: what a lab makes while it runs — skbs in flight, a task and a socket
per ping — lives long enough to reach the collector's oldest generation, and
with the lab frozen that generation starts empty, so CPython's rule (collect
it once it has grown by a quarter, at most every ``threshold2`` = 10
collections of the middle one) traversed it in full over and over: 30 % of the
CPU time of 10,000 hosts pinging at once (ten full collections). While a lab
is frozen the oldest generation's threshold is 100 (``LAB_GC_THRESHOLD2``).
The young collections cost as much again: a young collection traverses what
was allocated since the last one and is still alive, and an skb in flight or a
ping's task lives across a few hundred allocations, so with CPython's
``threshold0`` of 700 nearly every one of the 400,000 skbs that 10,000 pings
have in flight at once was traversed twice (young, then middle generation),
each visit touching its device and buffer in a gigabyte heap: 1,400 young
collections, 2.5–3 s of that phase's CPU time, whatever ``threshold0`` between
700 and 10,000. While a lab is frozen ``threshold0`` is 100,000
(``LAB_GC_THRESHOLD0``): a young collection waits for 100,000 more live
container objects than the last one left, and most of what a packet
allocates is freed (by reference counting) before that. The same phase makes
ten young collections (0.85 s), and a ``gc.collect()`` after it finds no
cyclic garbage at all. Those collections still traversed what was alive:
eight of them at 10,000 hosts (0.16 – 0.25 s of that phase), each visiting
100,000 skbs in flight, tasks and sockets, none of it garbage. So
``threshold0`` is also at least a quarter of the objects frozen
(``LAB_GC_YOUNG_SHARE``, recomputed at every freeze; counted as the collector
counts its young generation, since ``gc.get_freeze_count()`` walks every
object): the share CPython lets its oldest generation grow by before it
traverses it again, here applied to what a lab allocates while it runs. A
young collection then waits for as many more live objects as a quarter of the
lab (1.3 million at 10,000 hosts: none in that ping phase), 100,000 at least:
the bound is what a lab may hold uncollected, in proportion to its size.
Nothing the stack does per packet or per ping makes cyclic garbage, nor does
a TCP connection once closed (a destroyed socket's, request sock's and
TIME_WAIT sock's timers let go of their bound methods: tests ping and churn
connections with the collector off and find none), so the bound holds back
no memory there; what a caller's own code leaves in cycles is still
collected, once that many objects have piled up.
Freezing and the thresholds belong to the interpreter, not to one lab: the
last open lab to close unfreezes and puts the caller's thresholds back (if
nobody changed them meanwhile), even when closing its adapters fails.

Scheduling: where a packet is received. In functional mode (the default,
``open_lab(polls_at_bh_enable=True)``) a transmit from process context (a
socket call, a command, a ping) runs the NAPI polls it raised before it
returns, as the ``local_bh_enable`` at the end of the kernel's
``__dev_queue_xmit`` runs ``net_rx_action`` on the sender's CPU
(``netstack/core/napi.py``, "Polls at local_bh_enable"): over veth a UDP
datagram is in the receiver's queue when ``sendto`` returns, a ping's echo
reply is back in the pinging socket before its ``sendto`` returns (the peer's
``icmp_echo`` transmits it in the same ``net_rx_action``), a forwarded packet
crosses every hop of a veth path in that one call, and a TCP sender's ACKs
come back into its own backlog while it holds the socket lock (loopback's
``netif_rx`` too). A ``nic`` link (a cable between two machines: the far
end's interrupt comes later, whatever its ``rate`` and ``delay``), a netem
delay, or a transmit from softirq context (a timer's callback, a NAPI poll:
polled when that section ends) still lets the call return first; what
arrives later is polled by the receiver's NAPI task.
``open_lab(polls_at_bh_enable=False)`` (or ``lab.polls_at_bh_enable = False``
at any time, for every host of the lab, or a host's
``net.polls_at_bh_enable = False``, for its own NAPI instances) is the
behaviour before issue 18: each NAPI instance is polled by its own Trio task
after the call, as if every host's softirq ran on a CPU of its own (a threaded
NAPI on another CPU), concurrently with the sender: for a test whose point
needs that concurrency (a veth's ring filling under a burst, a reader
running between the segments of one ``send``). Timed labs ignore it while
their model measures: the CPU model decides where a softirq runs.

Trio's order: a lab runs Trio in its deterministic mode (:func:`seed_trio_scheduler`),
which sorts the tasks woken at one instant by creation and shuffles them with
a generator seeded from the lab's seed: the same program and seed give the
same packets, and another seed another interleaving. ``open_lab(shuffle=False)``
keeps the sort and skips the shuffle: as repeatable, one interleaving for
every seed (the seed still draws the hosts' RNGs), and the tasks run in
reverse creation order (Trio runs a batch from its end), which for a lab
built host by host is the order of the hosts in memory. A large lab's working
set is far beyond the CPU's caches, and 10,000 hosts pinging at once wake
thousands of NAPI tasks per instant: in a shuffled order nearly every step
starts on cache and TLB misses, in creation order neighbouring hosts' objects
are neighbours in memory (the ping phase of ``benchmarks/lab_scale.py`` takes
about 40 % less CPU at 2,000 and 10,000 hosts, the same packets and counts).
The oldest task first instead (the batch reversed) is as fast but keeps more
skbs in flight at once: 10,000 hosts peaked at 1,077 MB, against 1,007 shuffled
and 1,012 newest first. Timed labs keep their own seeded scheduling
(:meth:`TimedModel.seed_trio`). ``open_lab(chain_polls=True)`` goes further: a
NAPI task that polls also polls the instances its poll scheduled (the next
hop's veth, on another host), in the order they were scheduled, as the
kernel's ``net_rx_action`` walks its poll list (``netstack/core/napi.py``,
"Chained polls"), rather than waking each one's task for a later step: a ping
through a bridge crosses eight veths in one or two task steps instead of eight.
The same pings, ARPs and floods, in another order at an instant (TCP's
segment and ACK pattern depends on that order, as it does on the shuffle).
Such a lab's hosts also start fewer tasks: one task of the lab fires every
host's timers (``netstack/core/timerqueue.py``, "A lab's hub": the same
timers at the same times) and a host's NET_TX task starts at its first
rescheduled qdisc (``Net.attach``): 10,000 pinging hosts run 30,000 tasks
fewer.
"""

from __future__ import annotations

import contextlib
import gc
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

import attrs
import trio
import trio.testing

from netstack.core.dev import dev_open
from netstack.core.napi import RxChain
from netstack.core.netdevice import NetDevice
from netstack.core.patches import Patches
from netstack.core.timerqueue import TimerHub
from netstack.cpu.timed import TimedModel, trio_deterministic
from netstack.drivers.nic import RxCsumMode, nic_newlink, nic_pair
from netstack.drivers.veth import veth_newlink
from netstack.errors import TopologyError
from netstack.host.faults import Partition
from netstack.host.host import Host, mac_for
from netstack.host.port import Port
from netstack.socket import interpose, trio_socket
from netstack.socket.resolver import Names, addresses_of

__all__ = ["Lab", "Link", "open_lab", "run", "sole_exception"]

T = TypeVar("T")


@attrs.frozen
class Link:
    """Two connected devices."""

    a: NetDevice
    b: NetDevice
    kind: str


class Lab:
    """A set of hosts and links. Create with :func:`open_lab`."""

    def __init__(
        self,
        nursery: trio.Nursery,
        *,
        seed: int = 0,
        hz: int = 1000,
        debug_skb: bool = False,
        timed: TimedModel | None = None,
        shuffle: bool = True,
        chain_polls: bool = False,
        polls_at_bh_enable: bool = True,
    ) -> None:
        self._nursery = nursery
        self.timed = timed
        if timed is not None:
            if not shuffle:
                raise ValueError("a timed lab keeps its own seeded scheduling (shuffle=False)")
            if chain_polls:
                raise ValueError("a timed lab polls each NAPI instance in its task (chain_polls)")
            timed.seed_trio()  # the set-up before measuring must repeat too
        else:
            seed_trio_scheduler(seed, shuffle=shuffle)
        self.chain_polls = chain_polls
        self._polls_at_bh_enable = polls_at_bh_enable  # the property's: its doc
        #: the hosts' shared poll list (core/napi.py, "Chained polls"), or None
        self.rx_chain = RxChain() if chain_polls else None
        #: the one task that fires the hosts' timers (core/timerqueue.py, "A lab's
        #: hub"), with chained polls; else None (a task per timer base)
        self.timer_hub = TimerHub(nursery) if chain_polls else None
        self.seed = seed
        self.hz = hz
        self.debug_skb = debug_skb
        self.hosts: dict[str, Host] = {}
        self.links: list[Link] = []
        self.ports: dict[str, Port] = {}
        #: the lab's hosts database: /etc/hosts lines, then each host's name → its addresses
        self.names = Names(self._host_addresses, self._host_of_address)
        self.partitions: list[Partition] = []
        self._trio_saved: tuple[Any, Any] | None = None
        self._interposed = False
        self.switches: dict[str, Host] = {}
        self._gc_resume: _ResumeGc | None = None
        self._froze = False
        self._aio_loop: Any = None
        self._aio_starting: trio.Event | None = None

    # -- building with the collector paused --------------------------------------------------
    def _pause_gc(self) -> None:
        """Pause the cyclic collector until the building code yields (see the module
        docstring); nothing if it is paused already or the caller disabled it."""
        if self._gc_resume is None and gc.isenabled():
            gc.disable()
            self._gc_resume = _ResumeGc(self)
            trio.lowlevel.add_instrument(self._gc_resume)

    def _resume_gc(self, *, freeze: bool = True) -> None:
        instrument, self._gc_resume = self._gc_resume, None
        if instrument is None:
            return
        with contextlib.suppress(KeyError, RuntimeError):  # outside the run that added it
            trio.lowlevel.remove_instrument(instrument)
        if freeze:
            # what is frozen now, counted as the collector counts its young generation
            # (allocated and alive since its last collection: the collector was off
            # while the lab was built); gc.get_freeze_count() would walk every object
            _FROZEN.objects += gc.get_count()[0]
            gc.freeze()  # the lab is long-lived: out of the collector's traversals
            if not self._froze:
                _FROZEN.labs += 1
                if _FROZEN.labs == 1:  # the caller's thresholds, handed back at the close
                    _FROZEN.threshold = _FROZEN.applied = gc.get_threshold()
            self._froze = True
            # and the young and oldest generations collected less often, the young
            # in proportion to what is frozen now
            _FROZEN.follow()
        gc.enable()

    def _close_gc(self) -> None:
        """The lab is closing: resume the collector, hand it back what was frozen
        and the caller's thresholds."""
        self._resume_gc(freeze=False)
        if not self._froze:
            return
        self._froze = False
        _FROZEN.labs -= 1
        if _FROZEN.labs:  # another lab is still open: its objects stay frozen too
            return
        gc.unfreeze()
        saved, applied = _FROZEN.threshold, _FROZEN.applied
        _FROZEN.threshold = _FROZEN.applied = None
        _FROZEN.objects = 0
        if saved is not None and gc.get_threshold() == applied:
            gc.set_threshold(*saved)

    def add_host(
        self,
        name: str,
        *,
        cpus: int = 1,
        patches: Patches | None = None,
        hz: int | None = None,
        seed: int | None = None,
        sysctls: dict[str, str | int] | None = None,
    ) -> Host:
        """Create host *name*.

        Args:
            cpus: emulated CPUs.
            patches: the seeds' kernel changes (all applied by default).
            hz: CONFIG_HZ (default: the lab's, 1000).
            seed: RNG seed (default: derived from the lab's seed and the name).
            sysctls: ``{"net.ipv4.ip_forward": 1}`` applied at creation.
        """
        if not isinstance(name, str) or not name or ":" in name or name.strip() != name:
            raise TopologyError(f"invalid host name {name!r}")
        if name in self.hosts:
            raise TopologyError(f"host {name!r} already exists")
        self._pause_gc()
        host = Host(
            self,
            name,
            cpus=cpus,
            hz=hz or self.hz,
            seed=self.seed if seed is None else seed,
            patches=patches,
            debug_skb=self.debug_skb,
            timed=self.timed,
        )
        host.net.rx_chain = self.rx_chain  # before its tasks start (attach)
        host.net.polls_at_bh_enable = self.polls_at_bh_enable
        host.net.timer_hub = self.timer_hub
        host.net.attach(self._nursery)
        self.hosts[name] = host
        for key, value in (sysctls or {}).items():
            host.sysctl(f"{key}={value}")
        return host

    @property
    def polls_at_bh_enable(self) -> bool:
        """Functional mode: a transmit's ``local_bh_enable`` runs the NAPI polls it
        raised (core/napi.py, "Polls at local_bh_enable"); timed mode ignores it
        while its model measures. :func:`open_lab`'s argument; each host's
        ``net.polls_at_bh_enable`` is set from it at :meth:`add_host`.

        Setting it sets every host's already in the lab too (a host's own
        ``net.polls_at_bh_enable`` can still differ, set afterwards). It is read
        at each ``napi_schedule``, so a change mid-run takes effect at the next
        one (between calls the poll list is empty; an instance already woken is
        polled by its task).
        """
        return self._polls_at_bh_enable

    @polls_at_bh_enable.setter
    def polls_at_bh_enable(self, value: bool) -> None:
        self._polls_at_bh_enable = value
        for host in self.hosts.values():
            host.net.polls_at_bh_enable = value

    def host(self, name: str) -> Host:
        try:
            return self.hosts[name]
        except KeyError:
            raise TopologyError(f"no host {name!r} in this lab") from None

    def __getitem__(self, name: str) -> Host:
        return self.host(name)

    def add_switch(
        self,
        name: str,
        *,
        stp: bool = False,
        vlan_filtering: bool = False,
        ageing_time: float | None = None,
        priority: int | None = None,
        seed: int | None = None,
        sysctls: dict[str, str | int] | None = None,
    ) -> Host:
        """Create switch *name*: a host running a Linux bridge ``br0``, up.

        Args:
            stp: run 802.1D spanning tree (``stp_state 1``).
            vlan_filtering: ``vlan_filtering 1`` (ports start with PVID 1 untagged).
            ageing_time: FDB ageing in seconds (default 300).
            priority: the bridge priority (STP root election; default 32768).
            seed: RNG seed (default: the lab's).
            sysctls: applied when the switch is created (``add_host``'s).
        """
        host = self.add_host(name, seed=seed, sysctls=sysctls)
        opts = f" stp_state {int(stp)} vlan_filtering {int(vlan_filtering)}"
        if ageing_time is not None:
            opts += f" ageing_time {round(ageing_time * 100)}"
        if priority is not None:
            opts += f" priority {priority}"
        host.ip("link add br0 type bridge" + opts)
        host.ip("link set br0 up")
        self.switches[name] = host
        return host

    def _switch_port(self, spec: str) -> str:
        """``"s1"`` (a switch) → ``"s1:s1-ethN"`` with the next free N."""
        if isinstance(spec, str) and ":" not in spec and spec in self.switches:
            host = self.switches[spec]
            n = 1
            while host.net.dev_get_by_name(f"{spec}-eth{n}") is not None:
                n += 1
            return f"{spec}:{spec}-eth{n}"
        return spec

    def _enslave(self, dev: NetDevice) -> None:
        """A device on a switch joins its bridge."""
        host = self.switches.get(dev.net.name)
        if host is not None and host.net is dev.net:
            host.ip(f"link set {dev.name} master br0")

    def _end(self, spec: str) -> tuple[Host, str]:
        if not isinstance(spec, str) or spec.count(":") != 1:
            raise TopologyError(f"link end must be 'host:device', not {spec!r}")
        hname, dname = spec.split(":")
        host = self.host(hname)
        if host.net.dev_get_by_name(dname) is not None:
            raise TopologyError(f"{hname} already has a device {dname!r}")
        return host, dname

    def add_link(
        self,
        a: str,
        b: str,
        *,
        kind: Literal["veth", "nic"] = "veth",
        rate: float | None = None,
        delay: float = 0.0,
        mtu: int | None = None,
        rx_csum: RxCsumMode = "unnecessary",
        queues: int | None = None,
        up: bool = True,
    ) -> Link:
        """Join ``"host:dev"`` *a* and *b* (a bare switch name: its next port).

        Args:
            kind: ``"veth"`` (virtual pair, noqueue) or ``"nic"`` (Ethernet
                NICs with pfifo_fast, TX rings, BQL and a cable).
            rate: cable rate in bit/s (``nic`` only; None = unlimited).
            delay: one-way propagation delay in seconds (``nic`` only).
            mtu: both ends' MTU.
            rx_csum: the NICs' receive checksum report (``nic`` only).
            queues: RX queues of each NIC end (RSS; default one per CPU of
                its host, at most 16, as ixgbe). ``nic`` only.
            up: bring both ends up.
        """
        self._pause_gc()
        a = self._switch_port(a)
        b = self._switch_port(b)
        ha, da = self._end(a)
        hb, db = self._end(b)
        if ha is hb and da == db:
            raise TopologyError("a link needs two different ends")
        if kind == "veth":
            if rate is not None or delay or queues is not None:
                raise TopologyError("veth links have no rate, delay or queues; use kind='nic'")
            dev_a, dev_b = veth_newlink(
                ha.net,
                da,
                hb.net,
                db,
                addr=mac_for(ha.name, da),
                peer_addr=mac_for(hb.name, db),
                mtu=mtu,
            )
        elif kind == "nic":
            dev_a, dev_b = nic_pair(
                ha.net,
                da,
                hb.net,
                db,
                rate=rate,
                delay=delay,
                addr=mac_for(ha.name, da),
                peer_addr=mac_for(hb.name, db),
                rx_csum=rx_csum,
                mtu=mtu,
                queues=queues,
            )
        else:
            raise TopologyError(f"unknown link kind {kind!r} (veth or nic)")
        self._enslave(dev_a)
        self._enslave(dev_b)
        if up:
            dev_open(dev_a)
            dev_open(dev_b)
        link = Link(dev_a, dev_b, kind)
        self.links.append(link)
        return link

    # -- names ----------------------------------------------------------------------------------
    def _host_addresses(self, name: str) -> list[tuple[int, int]] | None:
        host = self.hosts.get(name)
        if host is None:
            for hname, h in self.hosts.items():
                if hname.lower() == name:
                    host = h
                    break
        return addresses_of(host.net) if host is not None else None

    def _host_of_address(self, family: int, addr: int) -> str | None:
        for name, host in self.hosts.items():
            if (family, addr) in addresses_of(host.net):
                return name
        return None

    def hosts_file(self, text: str | Path | None = None) -> str:
        """Add ``/etc/hosts`` lines (``"192.0.2.10 web www"``; a text or a file) to
        the names every host of the lab resolves; returns the whole file as the
        hosts see it (these lines, then one line per address of each host).

        Raises:
            ValueError: a line with a bad address or without a name.
        """
        if isinstance(text, Path):
            text = text.read_text(encoding="utf-8")
        if text is not None:
            self.names.load(text)
        lines = self.names.lines()
        from netstack.socket.resolver import _fmt

        for name, host in self.hosts.items():
            for family, addr in addresses_of(host.net):
                lines.append(f"{_fmt(family, addr)}\t{name}")
        return "\n".join(lines) + "\n"

    # -- the adapters that put a user's code inside a host -----------------------------------
    def _adapters_enter(self) -> None:
        """First entry into a host of this lab in this run: Trio's socket factory and
        resolver become the lab's, and the socket module becomes host-aware."""
        if not trio_socket.installed():
            saved = trio_socket.install()
            if self._trio_saved is None:
                self._trio_saved = saved
        if not self._interposed:
            interpose.acquire()
            self._interposed = True

    def _adapters_close(self) -> None:
        if self._trio_saved is not None:
            try:
                trio_socket.restore(self._trio_saved)
            except RuntimeError:  # pragma: no cover - outside the run that set them
                pass
            self._trio_saved = None
        if self._interposed:
            interpose.release()
            self._interposed = False

    async def asyncio_loop(self) -> Any:
        """The lab's asyncio event loop (a :class:`netstack.socket.aio.HostEventLoop`:
        trio-asyncio's loop on the lab's clock, its sockets the hosts'), opened in the
        lab's nursery on first use and closed with the lab. ``host.run_asyncio`` runs
        coroutines on it."""
        while self._aio_loop is None:
            if self._aio_starting is not None:  # another task is opening it
                await self._aio_starting.wait()
                continue
            from netstack.host.host import _aio

            serve_loop = _aio().serve_loop
            starting = self._aio_starting = trio.Event()
            try:
                self._aio_loop = await self._nursery.start(serve_loop)
            finally:
                self._aio_starting = None
                starting.set()
        return self._aio_loop

    # -- faults -----------------------------------------------------------------------------------
    def at(self, when: float, fn: Callable[..., Any], *args: Any) -> None:
        """Call ``fn(*args)`` at virtual time *when* (``trio.current_time()``), from
        the lab's nursery; at once if that time has passed."""

        async def later() -> None:
            await trio.sleep_until(when)
            fn(*args)

        self._nursery.start_soon(later, name=f"lab.at({when}, {getattr(fn, '__name__', fn)})")

    def _hosts(self, names: Iterable[str | Host] | str | Host) -> list[Host]:
        if isinstance(names, str | Host):
            names = [names]
        return [n if isinstance(n, Host) else self.host(n) for n in names]

    def partition(
        self,
        side_a: Iterable[str | Host] | str | Host,
        side_b: Iterable[str | Host] | str | Host,
        *,
        at: float | None = None,
        until: float | None = None,
    ) -> Partition:
        """Cut every host of *side_a* off from every host of *side_b* (both ways,
        silently: datagrams between them vanish on arrival, counted as
        ``NETFILTER_DROP``), now or at virtual time *at*, and heal at *until*.

        Returns the :class:`~netstack.host.faults.Partition`; ``.heal()`` ends it.
        """
        a, b = self._hosts(side_a), self._hosts(side_b)
        if not a or not b:
            raise TopologyError("a partition needs a host on each side")
        if set(map(id, a)) & set(map(id, b)):
            raise TopologyError("a host cannot be on both sides of a partition")
        part = Partition(a, b)
        self.partitions.append(part)
        if at is None:
            part.apply()
        else:
            self.at(at, part.apply)
        if until is not None:
            self.at(until, part.heal)
        return part

    def heal(self, *, at: float | None = None) -> None:
        """End every partition (now, or at virtual time *at*)."""

        def heal_all() -> None:
            for p in self.partitions:
                p.heal()

        if at is None:
            heal_all()
        else:
            self.at(at, heal_all)

    def _link_of(self, spec: str) -> tuple[list[tuple[Host, str]], Link | None]:
        hname, _, dname = spec.partition(":")
        host = self.host(hname)
        dev = host.dev(dname)
        for link in self.links:
            if link.a is dev or link.b is dev:
                ends = [
                    (h, d.name)
                    for d in (link.a, link.b)
                    for h in self.hosts.values()
                    if h.net is d.net
                ]
                return ends, link
        return [(host, dname)], None

    def link_down(self, spec: str, *, at: float | None = None) -> None:
        """Take the link at ``"host:dev"`` down — both ends (``ip link set DEV down``
        on each), as an unplugged cable — now or at virtual time *at*.
        A device that is not one end of a lab link goes down alone."""
        self._set_link(spec, "down", at)

    def link_up(self, spec: str, *, at: float | None = None) -> None:
        """Bring the link at ``"host:dev"`` back up (both ends), now or at *at*."""
        self._set_link(spec, "up", at)

    def _set_link(self, spec: str, state: str, at: float | None) -> None:
        ends, _ = self._link_of(spec)

        def apply() -> None:
            for host, dname in ends:
                host.ip(f"link set dev {dname} {state}")

        if at is None:
            apply()
        else:
            self.at(at, apply)

    def set_mtu(self, spec: str, mtu: int, *, at: float | None = None, both: bool = True) -> None:
        """``ip link set dev DEV mtu MTU`` on ``"host:dev"`` (and, with *both*, on the
        other end of its link), now or at virtual time *at*."""
        ends, _ = self._link_of(spec)
        if not both:
            ends = ends[:1] if ends[0][0] is self.host(spec.partition(":")[0]) else ends[1:]

        def apply() -> None:
            for host, dname in ends:
                host.ip(f"link set dev {dname} mtu {mtu}")

        if at is None:
            apply()
        else:
            self.at(at, apply)

    def set_route(self, host: str, route: str, *, at: float | None = None) -> None:
        """``ip route replace ROUTE`` on *host* (``"10.0.2.0/24 via 10.0.1.254"``;
        ``-6 …`` for IPv6), now or at virtual time *at*."""
        h = self.host(host)
        cmd = (
            f"-6 route replace {route[3:]}" if route.startswith("-6 ") else f"route replace {route}"
        )

        def apply() -> None:
            h.ip(cmd)

        if at is None:
            apply()
        else:
            self.at(at, apply)

    def add_port(
        self,
        spec: str,
        *,
        mtu: int | None = None,
        rx_csum: RxCsumMode = "unnecessary",
        up: bool = True,
    ) -> Port:
        """A device ``"host:dev"`` whose cable ends in Python (see :class:`Port`)."""
        host, dname = self._end(spec)
        dev = nic_newlink(host.net, dname, addr=mac_for(host.name, dname), rx_csum=rx_csum, mtu=mtu)
        port = Port(dev)
        dev.priv.peer = port
        self._enslave(dev)
        if up:
            dev_open(dev)
        self.ports[spec] = port
        return port


@contextlib.asynccontextmanager
async def open_lab(
    *,
    seed: int = 0,
    hz: int = 1000,
    debug_skb: bool = False,
    timed: TimedModel | None = None,
    shuffle: bool = True,
    chain_polls: bool = False,
    polls_at_bh_enable: bool = True,
) -> AsyncIterator[Lab]:
    """Open a lab; its hosts' tasks stop when the block ends.

    Args:
        seed: base seed of every host's RNG.
        hz: default CONFIG_HZ of the hosts.
        debug_skb: poison freed skbs so use-after-free fails loudly (tests).
        timed: run the hosts' CPUs on this timed-mode machine
            (:class:`netstack.cpu.timed.TimedModel`); functional mode if None.
        shuffle: run the tasks woken at one instant in an order shuffled from
            *seed* (the default); False runs them in reverse creation order, which
            large labs run much faster (module docstring, "Scheduling").
            Functional mode only.
        chain_polls: a NAPI task polls the instances scheduled while it polls
            (other hosts' veths included), as ``net_rx_action`` walks its poll
            list, instead of waking their tasks (module docstring, "Scheduling";
            ``netstack/core/napi.py``, "Chained polls"): the same pings in
            another order at an instant (TCP's pattern of segments and ACKs
            may differ, as with *shuffle*), several times fewer Trio task
            steps (one task of the lab fires the hosts' timers, and a host's
            NET_TX task starts when first needed: module docstring). The
            lab's hosts only. Functional mode only.
        polls_at_bh_enable: a transmit from process context runs the NAPI polls
            it raised before it returns, as the kernel's ``local_bh_enable`` at
            the end of ``__dev_queue_xmit`` runs ``net_rx_action`` on the
            sender's CPU: over veth a datagram is in the receiver's queue when
            ``sendto`` returns, a ping's reply before its ``sendto`` returns
            (the default, True). False: each NAPI instance is polled by its own
            task after the call, as if each host's softirq ran on a CPU of its
            own (the behaviour before issue 18; module docstring,
            "Scheduling"). Sets each host's ``net.polls_at_bh_enable``; the
            lab's :attr:`Lab.polls_at_bh_enable` changes it later, for every
            host. The lab's hosts only; ignored by a timed lab while it
            measures.
    """
    __tracebackhide__ = True  # pytest: a failure's report starts at the user's frame
    # A timed lab switches Trio to its repeatable scheduling while it is open.
    with trio_deterministic():
        try:
            async with trio.open_nursery() as nursery:
                lab = Lab(
                    nursery,
                    seed=seed,
                    hz=hz,
                    debug_skb=debug_skb,
                    timed=timed,
                    shuffle=shuffle,
                    chain_polls=chain_polls,
                    polls_at_bh_enable=polls_at_bh_enable,
                )
                try:
                    yield lab
                finally:
                    if lab.rx_chain is not None:
                        lab.rx_chain.reset()
                    for host in lab.hosts.values():
                        for cap in host.captures:
                            cap.stop()
                    nursery.cancel_scope.cancel()
                    try:
                        lab._adapters_close()
                    finally:
                        lab._close_gc()
        except BaseExceptionGroup as group:
            # The block raises what failed in it: one exception (an assertion in the
            # body, an error in one host task) comes out as itself, not wrapped in
            # the nursery's group; several stay a group.
            leaf = sole_exception(group)
            if leaf is None:
                raise
            raise leaf from None


LAB_GC_THRESHOLD0: Final = 100_000
"""The least ``threshold0`` of the collector while a lab is frozen (CPython's default: 700)."""

LAB_GC_YOUNG_SHARE: Final = 4
"""While a lab is frozen ``threshold0`` is at least the objects frozen divided by
this: a quarter, the growth CPython allows its oldest generation between full
collections."""

LAB_GC_THRESHOLD2: Final = 100
"""The collector's ``threshold2`` while a lab is frozen (CPython's default: 10)."""


def _lab_threshold(t0: int, t1: int, t2: int, frozen: int = 0) -> tuple[int, int, int]:
    """The collector's thresholds while a lab is frozen, from the caller's and the
    number of objects frozen: a caller's higher ones are left alone (a 0, no
    automatic collection, stays 0)."""
    young = max(t0, LAB_GC_THRESHOLD0, frozen // LAB_GC_YOUNG_SHARE) if t0 else 0
    return (young, t1, max(t2, LAB_GC_THRESHOLD2))


class _FrozenLabs:
    """The labs of this process whose objects are frozen, and the thresholds the
    first of them found: ``gc.freeze()``/``gc.unfreeze()`` and the thresholds are
    the interpreter's, so the last lab to close hands them back."""

    __slots__ = ("applied", "labs", "objects", "threshold")

    def __init__(self) -> None:
        self.labs = 0
        self.objects = 0  #: about how many objects the labs froze
        #: the caller's thresholds when the first lab froze, and the ones set since
        self.threshold: tuple[int, int, int] | None = None
        self.applied: tuple[int, int, int] | None = None

    def follow(self) -> None:
        """Set the thresholds for the objects frozen, unless someone else has set
        them since the labs last did (theirs then stay, and are not handed back)."""
        saved = self.threshold
        if saved is None or gc.get_threshold() != self.applied:
            return
        lab = _lab_threshold(*saved, self.objects)
        if lab != self.applied:
            gc.set_threshold(*lab)
            self.applied = lab


_FROZEN: Final = _FrozenLabs()


class _ResumeGc(trio.abc.Instrument):
    """Resumes a lab's paused collector at the first task step after the build."""

    def __init__(self, lab: Lab) -> None:
        self.lab = lab

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        if self.lab._gc_resume is self:
            self.lab._resume_gc()


class _CreationOrder(random.Random):  # (reversed: see the docstring)
    """Trio's generator for a lab opened with ``shuffle=False``: Trio's
    deterministic mode sorts each batch of woken tasks by creation, then shuffles
    it with this generator, whose shuffle leaves it sorted (Trio runs a batch from
    its end: the newest task first)."""

    def shuffle(self, x: Any) -> None:
        return None


def seed_trio_scheduler(seed: int, *, shuffle: bool = True) -> None:
    """Make the order in which Trio runs the tasks woken at one instant repeat
    from the lab's seed (Trio's deterministic mode, as timed labs use it):
    the hosts' timers draw from their seeded RNGs in the same order on every
    run, so the same program and seed give the same packets, byte for byte.
    *shuffle* False: the order is the tasks' reverse creation order, for every seed
    (the module docstring's "Scheduling"). :func:`open_lab` restores Trio's
    mode and generator when the lab closes."""
    try:
        import trio._core._run as _run

        if not shuffle:
            _run._r = _CreationOrder(seed)
        elif isinstance(_run._r, _CreationOrder):  # a lab inside a creation-order one
            _run._r = random.Random(seed)
        else:
            _run._r.seed(seed)
        setattr(_run, "_ALLOW_DETERMINISTIC_SCHEDULING", True)  # noqa: B010 (Final in Trio)
    except (ImportError, AttributeError):  # pragma: no cover - a future Trio
        pass


def sole_exception(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    """The one leaf exception of *group* (nested groups flattened), or None."""
    leaves: list[BaseException] = []
    todo: list[BaseException] = [group]
    while todo:
        e = todo.pop()
        if isinstance(e, BaseExceptionGroup):
            todo.extend(e.exceptions)
        else:
            leaves.append(e)
            if len(leaves) > 1:
                return None
    return leaves[0] if leaves else None


def run(main: Callable[..., Awaitable[T]], *args: Any, clock: Any = None) -> T:
    """Run *main* on Trio in virtual time (``MockClock(autojump_threshold=0)``).

    Trio's scheduling is seeded from the run's first task step (seed 0, Trio's
    deterministic mode; a lab reseeds it with its own seed when it opens): the
    steps before a lab opens, the first of which wakes *main* and Trio's
    ``run_sync_soon`` task together, otherwise run in an order from Trio's
    unseeded coin flip, which moves nothing a lab does but leaves a different
    allocation history behind, and callgrind counts it. Trio's mode and
    generator are the caller's again when the run ends.
    """
    if clock is None:
        clock = trio.testing.MockClock(autojump_threshold=0)
    with trio_deterministic():
        _seed_first_steps()
        return trio.run(main, *args, clock=clock)


def _seed_first_steps() -> None:
    """A generator of the run's own, seeded, for :func:`run` (Trio's module-level
    one is left as it was; :func:`trio_deterministic` puts it back)."""
    try:
        import trio._core._run as _run

        _run._r = random.Random(0)
    except (ImportError, AttributeError):  # pragma: no cover - a future Trio
        return
    seed_trio_scheduler(0)
