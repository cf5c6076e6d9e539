"""``Net``: one emulated host's kernel state (a network namespace).

Theory of operation: everything a host's stack owns hangs off its Net —
devices by name and ifindex, the ``ptype`` handler tables that protocols
register into, the offload table, the sysctl tree, per-CPU softnet data, the
timer bases (jiffies and hrtimers), the registry of qdisc kinds, the seeded
RNG, the logger, the :class:`~netstack.core.patches.Patches` and the per-reason drop counters.
Nothing is registered at import time: the host's composition root builds a Net
and lets each layer register itself (``dev_add_pack``, ``register_qdisc``…).

Tasks: a Net runs its timer tasks, its NET_TX task and every NAPI instance in
the nursery given to :meth:`Net.attach`; tasks started before that are held
until then. In a lab opened with ``chain_polls=True`` (``rx_chain`` and
``timer_hub`` set before ``attach``) the lab's one timer task fires the timer
bases (``netstack/core/timerqueue.py``, "A lab's hub") and the NET_TX task
starts at the first ``__netif_reschedule``: a host that never reschedules a
qdisc never runs it (10,000 pinging hosts: three task steps a ping fewer, and
30,000 tasks' memory). Elsewhere they start with the host, as before: a task
started later is later in Trio's creation order, which orders every batch.

Kernel: include/net/net_namespace.h (struct net), net/core/dev.c
(softnet_data, ptype_base), kernel/softirq.c.
"""

from __future__ import annotations

import collections
import errno
import functools
import hashlib
import logging
import random
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import attrs
import structlog
import trio

from netstack.core.firstuse import FirstUse
from netstack.core.hrtimer import HrTimerBase
from netstack.core.net_generic import NetKey
from netstack.core.patches import Patches
from netstack.core.qdisc import NoopQdisc, Qdisc
from netstack.core.ratelimit import RatelimitState, ratelimit
from netstack.core.skbuff import DropReason, SkBuff
from netstack.core.sysctl import SysctlTable
from netstack.core.timer import TimerBase
from netstack.cpu import Clock, CpuSet
from netstack.errors import ConfigError
from netstack.sites import kernel

if TYPE_CHECKING:
    from netstack.core.napi import GroEngine, Napi, RxChain
    from netstack.core.netdevice import NetDevice
    from netstack.core.netns import NetnsIpv4, NetnsIpv6
    from netstack.core.timerqueue import TimerHub
    from netstack.cpu.cacheline import CacheLine
    from netstack.cpu.timed import TimedModel

__all__ = [
    "Net",
    "NetKey",
    "PacketOffload",
    "PacketType",
    "SoftnetData",
    "SoftnetStats",
    "netstack_logger",
]


def netstack_logger() -> Any:
    """A structlog logger over the stdlib logger ``netstack``.

    The library never configures structlog or logging: events go to the
    stdlib logger named ``netstack`` (silent below WARNING unless the
    application configures logging), rendered as ``event key=value``.
    """
    return structlog.wrap_logger(
        logging.getLogger("netstack"),
        processors=[
            structlog.stdlib.filter_by_level,
            structlog.processors.KeyValueRenderer(key_order=["event"], sort_keys=True),
        ],
        wrapper_class=structlog.stdlib.BoundLogger,
    )


class PacketType:
    """A receive handler for one EtherType (kernel: ``struct packet_type``).

    ``func(skb, dev, pt, orig_dev)`` consumes the skb. ``dev`` None matches
    every device. ``proto`` ETH_P_ALL (3) makes it a tap (``ptype_all``).

    A plain slotted class rather than an attrs one: the device core reads
    ``dev`` and ``func`` of every received packet's handler, and the optional
    mypyc build makes a plain class of a compiled module native (native reads)
    where it keeps a decorated one a Python class (generic reads).
    """

    __slots__ = ("dev", "func", "ignore_outgoing", "name", "proto")

    proto: int
    func: Callable[[SkBuff, NetDevice, PacketType, NetDevice], object]
    dev: NetDevice | None
    ignore_outgoing: bool
    name: str

    def __init__(
        self,
        proto: int,
        func: Callable[[SkBuff, NetDevice, PacketType, NetDevice], object],
        dev: NetDevice | None = None,
        ignore_outgoing: bool = False,
        name: str = "",
    ) -> None:
        self.proto = proto
        self.func = func
        self.dev = dev
        self.ignore_outgoing = ignore_outgoing
        self.name = name

    def __repr__(self) -> str:
        return (
            f"PacketType(proto={self.proto!r}, func={self.func!r}, dev={self.dev!r},"
            f" ignore_outgoing={self.ignore_outgoing!r}, name={self.name!r})"
        )


@attrs.define(eq=False)
class PacketOffload:
    """GSO/GRO callbacks for one EtherType (kernel: ``struct packet_offload``)."""

    proto: int
    gso_segment: Callable[[SkBuff, int], SkBuff | None] | None = None
    gro_receive: Callable[..., Any] | None = None
    gro_complete: Callable[..., Any] | None = None


@attrs.frozen
class SoftnetStats:
    """One line of ``/proc/net/softnet_stat``."""

    cpu: int
    processed: int
    dropped: int
    time_squeeze: int


class SoftnetData:
    """Per-CPU receive backlog and NET_TX output queue (kernel: ``struct softnet_data``)."""

    # the backlog (loopback, decapsulated and netif_rx'd packets) made on first
    # use: a host that never loops a packet back (most of a large lab) has none
    input_pkt_queue: FirstUse[collections.deque[SkBuff]] = FirstUse(lambda sd: collections.deque())

    def __init__(self, cpu: int) -> None:
        self.cpu = cpu
        # qdiscs waiting for NET_TX: a few at most, so a list (56 bytes, where an
        # empty deque is 600)
        self.output_queue: list[Qdisc] = []
        self.backlog: Napi | None = None
        self.processed = 0
        self.dropped = 0
        self.time_squeeze = 0

    def statistics(self) -> SoftnetStats:
        return SoftnetStats(self.cpu, self.processed, self.dropped, self.time_squeeze)


class Net:
    """The kernel state of one host.

    Args:
        name: the host's name (used in logs and MAC derivation).
        seed: seeds the Net's RNG (IP IDs, ephemeral ports, reachable_time).
        hz: ``CONFIG_HZ`` for jiffies.
        ncpus: number of emulated CPUs.
        patches: which seed changes are applied.
    """

    # Slotted (a lab holds thousands of these); the __dict__ slot takes what is
    # set only later or from outside.
    __slots__ = (
        "__dict__",
        "_net_tx_lot",
        "_net_tx_unstarted",
        "_nursery",
        "_pending",
        "_secrets",
        "clock",
        "cpus",
        "debug_skb",
        "default_qdisc",
        "dev_index",
        "dev_weight",
        "dev_weight_rx_bias",
        "dev_weight_tx_bias",
        "devices",
        "drop_reasons",
        "gro_factory",
        "hrtimers",
        "ifindex",
        "ipv4",
        "ipv6",
        "log",
        "message_cost",
        "name",
        "net_ratelimit_state",
        "netdev_budget",
        "netdev_chain",
        "netdev_max_backlog",
        "noop_qdisc",
        "notifier_ext_mtu",
        "offload_base",
        "patches",
        "polls_at_bh_enable",
        "proto_data",
        "ptype_all",
        "ptype_base",
        "qdisc_ops",
        "rmem_default",
        "rmem_max",
        "rng",
        "rx_chain",
        "seed",
        "softnet",
        "somaxconn",
        "sysctl",
        "timer_hub",
        "timers",
        "wmem_default",
        "wmem_max",
    )

    def __init__(
        self,
        name: str,
        *,
        seed: int = 0,
        hz: int = 1000,
        ncpus: int = 1,
        patches: Patches | None = None,
        timed: TimedModel | None = None,
    ) -> None:
        self.name = name
        self.seed = seed
        self.rng = random.Random(f"{seed}/{name}")
        self.patches = patches if patches is not None else Patches()
        self.clock = Clock(hz)
        self.cpus = CpuSet(ncpus)
        if timed is not None:  # timed mode: the CPUs take places on the model's machine
            timed.add_cpus(name, self.cpus)
        self.log = netstack_logger().bind(host=name)
        self.debug_skb = False
        # devices (kernel: dev_base_head, dev_name_head, dev_index_head)
        self.devices: dict[str, NetDevice] = {}
        self.dev_index: dict[int, NetDevice] = {}
        self.ifindex = 0
        # protocol tables
        self.ptype_base: dict[int, list[PacketType]] = {}
        self.ptype_all: list[PacketType] = []
        self.offload_base: dict[int, PacketOffload] = {}
        # the GRO engine each NAPI instance gets (installed by the gro layer: gro_init)
        self.gro_factory: Callable[[Napi], GroEngine] | None = None
        # the poll list of a lab opened with chain_polls=True (core/napi.py, "Chained
        # polls"), shared by its hosts; None: every NAPI instance wakes its own task
        self.rx_chain: RxChain | None = None
        # run the NAPI polls a transmit raises at its local_bh_enable (core/napi.py,
        # "Polls at local_bh_enable"): functional mode's default; a lab opened with
        # polls_at_bh_enable=False wakes each instance's task instead
        self.polls_at_bh_enable = True
        # the lab's one timer task, in a lab opened with chain_polls=True
        # (core/timerqueue.py, "A lab's hub"); None: each timer base has its task
        self.timer_hub: TimerHub | None = None
        self.netdev_chain: list[Callable[[int, NetDevice], None]] = []
        self.notifier_ext_mtu = 0  # netdev_notifier_info_ext.ext.mtu of a NETDEV_CHANGEMTU
        self.qdisc_ops: dict[str, Callable[..., Qdisc]] = {}
        self.noop_qdisc: Qdisc = NoopQdisc(self, None)
        self.sysctl = SysctlTable()
        self.drop_reasons: collections.Counter[DropReason] = collections.Counter()
        self.softnet = [SoftnetData(i) for i in range(ncpus)]
        self.timers = TimerBase(self)
        self.hrtimers = HrTimerBase(self)
        self._net_tx_lot = trio.lowlevel.ParkingLot()
        self._net_tx_unstarted = False  # the NET_TX task waits for the first reschedule
        # per-family state (kernel: net->ipv4, net->ipv6), installed by inet_init/inet6_init;
        # typed by what other layers use of it (core/netns.py): ipv4_of()/ipv6_of() give all
        self.ipv4: NetnsIpv4 | None = None
        self.ipv6: NetnsIpv6 | None = None
        # other subsystems' state, read and written through their typed NetKey
        self.proto_data: dict[str, object] = {}
        # tasks
        self._nursery: trio.Nursery | None = None
        self._pending: list[tuple[Callable[[], Awaitable[None]], str]] = []
        # net.core sysctls (net/core/sysctl_net_core.c)
        self.dev_weight = 64
        self.dev_weight_rx_bias = 1
        self.dev_weight_tx_bias = 1
        self.netdev_max_backlog = 1000
        self.netdev_budget = 300
        self.default_qdisc = "pfifo_fast"
        self.rmem_default = 212992
        self.rmem_max = 212992
        self.wmem_default = 212992
        self.wmem_max = 212992
        self.somaxconn = 4096
        self._secrets: dict[str, bytes] = {}
        # net_ratelimit_state: DEFINE_RATELIMIT_STATE(…, 5 * HZ, 10)
        self.message_cost = 5  # net.core.message_cost, seconds
        self.net_ratelimit_state = RatelimitState(5 * hz, 10)
        self.sysctl.register_lazy("net.core.", self._register_core_sysctls)

    @kernel("net/core/utils.c", "net_ratelimit")
    def net_ratelimit(self) -> bool:
        """May a per-packet message be logged now? (10 per 5 s, the rest counted.)

        Kernel: net/core/utils.c, net_ratelimit().
        """
        return ratelimit(self.net_ratelimit_state, self.clock.jiffies, self.log, "net_ratelimit")

    @kernel("include/linux/once.h", "net_get_random_once")
    def get_random_once(self, label: str, nbytes: int = 16) -> bytes:
        """A secret key drawn once per Net and *label* (hash keys, SYN cookie secrets).

        It derives from the seed and the host's name, not from ``rng``, so
        taking one moves no other random draw: same seed, same secrets.

        Kernel: include/linux/once.h, net_get_random_once().
        """
        key = self._secrets.get(label)
        if key is None:
            key = hashlib.blake2b(
                f"{self.seed}/{self.name}/{label}".encode(), digest_size=nbytes
            ).digest()
            self._secrets[label] = key
        return key

    def _register_core_sysctls(self) -> None:
        s = self.sysctl
        s.register_int("net.core.dev_weight", self, "dev_weight", minimum=1)
        s.register_int("net.core.dev_weight_rx_bias", self, "dev_weight_rx_bias", minimum=1)
        s.register_int("net.core.dev_weight_tx_bias", self, "dev_weight_tx_bias", minimum=1)
        s.register_int("net.core.netdev_max_backlog", self, "netdev_max_backlog", minimum=0)
        s.register_int("net.core.netdev_budget", self, "netdev_budget", minimum=0)
        s.register("net.core.default_qdisc", lambda: self.default_qdisc, self._set_default_qdisc)
        for name in ("rmem_default", "rmem_max", "wmem_default", "wmem_max"):
            s.register_int(f"net.core.{name}", self, name, minimum=256)
        s.register_int("net.core.somaxconn", self, "somaxconn", minimum=0)
        rs = self.net_ratelimit_state

        def set_cost(seconds: int) -> None:  # proc_dointvec_jiffies
            rs.interval = seconds * self.clock.hz

        s.register_int("net.core.message_cost", self, "message_cost", minimum=0, on_change=set_cost)
        s.register_int("net.core.message_burst", rs, "burst", minimum=0)

    @kernel("net/core/sysctl_net_core.c", "set_default_qdisc", "qdisc_set_default")
    def _set_default_qdisc(self, text: str) -> None:
        """The qdisc kind new devices get; an unknown kind is ENOENT.

        Kernel: net/core/sysctl_net_core.c, set_default_qdisc() / qdisc_set_default().
        """
        kind = text.strip()
        if kind not in self.qdisc_ops:
            raise ConfigError(
                'sysctl: setting key "net.core.default_qdisc": No such file or directory',
                errno.ENOENT,
            )
        self.default_qdisc = kind

    def cacheline(self, kind: str) -> CacheLine | None:
        """A new cache line for a shared kernel structure; None in functional mode."""
        model = self.cpus.model
        return None if model is None else model.new_line(f"{self.name}: {kind}")

    # -- tasks ---------------------------------------------------------------------
    def attach(self, nursery: trio.Nursery) -> None:
        """Start the Net's tasks (timers, NET_TX, NAPI) in *nursery*."""
        if self._nursery is not None:
            raise RuntimeError(f"Net {self.name} is already attached")
        self._nursery = nursery
        self.clock.follow_run_clock()
        from netstack.core.dev import net_tx_action_task

        hub = self.timer_hub
        if hub is not None:  # a lab with chained polls: its hub fires the timers (above)
            self.timers.use_hub(hub)
            self.hrtimers.use_hub(hub)
        else:
            nursery.start_soon(self.timers.run, name=f"{self.name}/timers")
            nursery.start_soon(self.hrtimers.run, name=f"{self.name}/hrtimers")
        if self.rx_chain is not None and not any(sd.output_queue for sd in self.softnet):
            self._net_tx_unstarted = True  # started by the first reschedule (above)
        else:
            nursery.start_soon(net_tx_action_task, self, name=f"{self.name}/net_tx")
        pending, self._pending = self._pending, []
        for fn, name in pending:
            nursery.start_soon(fn, name=name)

    def start_soon(self, fn: Callable[[], Awaitable[None]], name: str) -> None:
        """Run *fn* as a task of this Net (held until :meth:`attach`)."""
        if self._nursery is None:
            self._pending.append((fn, name))
        else:
            self._nursery.start_soon(fn, name=name)

    def start_deferred(self, fn: Callable[[], Awaitable[None]], name: str) -> None:
        """Start a task :meth:`attach` deferred to its first need (the module doc,
        "Tasks"); nothing once the lab has closed (its nursery with it: the host's
        other tasks are gone too)."""
        nursery = self._nursery
        if nursery is None:
            self._pending.append((fn, name))
            return
        try:
            nursery.start_soon(fn, name=name)
        except RuntimeError:  # "Nursery is closed to new arrivals"
            pass

    def start_napi(self, napi: Napi) -> None:
        """Start the task that runs *napi* (kernel: netif_napi_add + napi_enable)."""
        factory = self.gro_factory
        if factory is not None and napi.gro is None:
            napi.gro = factory(napi)  # netif_napi_add(): the instance's GRO lists
        if self.rx_chain is not None and not napi.scheduled:
            napi.unstarted = True  # started at its first need (core/napi.py, "Chained polls")
            return
        self.start_soon(napi.run, napi.name)

    @kernel("__netif_reschedule")
    def raise_net_tx(self, q: Qdisc) -> None:
        """Queue *q* for the NET_TX softirq. Kernel: __netif_reschedule()."""
        self.softnet[self.cpus.current.id].output_queue.append(q)
        if self._net_tx_unstarted:  # its first need (the module doc, "Tasks")
            self._net_tx_unstarted = False
            from netstack.core.dev import net_tx_action_task

            self.start_deferred(functools.partial(net_tx_action_task, self), f"{self.name}/net_tx")
            return
        self._net_tx_lot.unpark_all()

    # -- tables ------------------------------------------------------------------------
    @kernel("dev_add_pack")
    def dev_add_pack(self, pt: PacketType) -> None:
        """Register a receive handler or tap. Kernel: dev_add_pack()."""
        if pt.proto == 0x0003:  # ETH_P_ALL
            if pt.dev is not None:
                pt.dev.ptype_all.append(pt)
            else:
                self.ptype_all.append(pt)
        else:
            self.ptype_base.setdefault(pt.proto, []).append(pt)

    @kernel("dev_remove_pack")
    def dev_remove_pack(self, pt: PacketType) -> None:
        """Kernel: dev_remove_pack()."""
        if pt.proto == 0x0003:
            lst = pt.dev.ptype_all if pt.dev is not None else self.ptype_all
            if pt in lst:
                lst.remove(pt)
        else:
            lst = self.ptype_base.get(pt.proto, [])
            if pt in lst:
                lst.remove(pt)

    @kernel("dev_add_offload")
    def dev_add_offload(self, po: PacketOffload) -> None:
        """Register GSO/GRO callbacks for an EtherType. Kernel: dev_add_offload()."""
        self.offload_base[po.proto] = po

    @kernel("register_qdisc")
    def register_qdisc(self, kind: str, factory: Callable[..., Qdisc]) -> None:
        """Make a qdisc kind available on this Net. Kernel: register_qdisc()."""
        if kind in self.qdisc_ops:
            raise ValueError(f"qdisc {kind} already registered")
        self.qdisc_ops[kind] = factory

    @kernel("register_netdevice_notifier")
    def register_netdevice_notifier(self, fn: Callable[[int, NetDevice], None]) -> None:
        """Be told of device events (NETDEV_UP …). Kernel: register_netdevice_notifier()."""
        self.netdev_chain.append(fn)

    @kernel("call_netdevice_notifiers")
    def call_netdevice_notifiers(self, event: int, dev: NetDevice) -> None:
        """Kernel: call_netdevice_notifiers()."""
        for fn in list(self.netdev_chain):
            fn(event, dev)

    @kernel("call_netdevice_notifiers_mtu")
    def call_netdevice_notifiers_mtu(self, event: int, dev: NetDevice, arg: int) -> None:
        """NETDEV_CHANGEMTU with the MTU before the change in ``notifier_ext_mtu``.

        Kernel: call_netdevice_notifiers_mtu() (``netdev_notifier_info_ext.ext.mtu``).
        """
        saved = self.notifier_ext_mtu
        self.notifier_ext_mtu = arg
        try:
            self.call_netdevice_notifiers(event, dev)
        finally:
            self.notifier_ext_mtu = saved

    # -- devices ------------------------------------------------------------------------
    @kernel("__dev_get_by_name")
    def dev_get_by_name(self, name: str) -> NetDevice | None:
        """Kernel: __dev_get_by_name()."""
        return self.devices.get(name)

    @kernel("__dev_get_by_index")
    def dev_get_by_index(self, ifindex: int) -> NetDevice | None:
        """Kernel: __dev_get_by_index()."""
        return self.dev_index.get(ifindex)

    @kernel("dev_index_reserve")
    def dev_new_index(self) -> int:
        """The next free ifindex. Kernel: dev_index_reserve()."""
        self.ifindex += 1
        while self.ifindex in self.dev_index:
            self.ifindex += 1
        return self.ifindex

    # -- accounting ------------------------------------------------------------------------
    def note_drop(self, skb: SkBuff, reason: DropReason) -> None:
        """Count one drop (called by kfree_skb)."""
        self.drop_reasons[reason] += 1

    def drop_statistics(self) -> dict[str, int]:
        """Drops by reason name, as ``dropwatch``/``perf`` show them."""
        return {r.name: n for r, n in sorted(self.drop_reasons.items())}

    def dev_tx_weight(self) -> int:
        """The NET_TX quota per qdisc run. Kernel: dev_tx_weight."""
        return self.dev_weight * self.dev_weight_tx_bias

    def __repr__(self) -> str:
        return f"<Net {self.name}>"
