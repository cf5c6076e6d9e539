"""``Lab``: hosts and the links between them, inside a Trio nursery.

Theory of operation: :func:`open_lab` opens a nursery that every host's tasks
(timers, NET_TX, NAPI, NIC wires) run in, and cancels them all when the
``async with`` block ends. :func:`run` runs an async main function on Trio
with ``MockClock(autojump_threshold=0)``: virtual time, so a 30-second ARP
timeout costs microseconds and every run is reproducible.

Links: ``kind="veth"`` joins two hosts with a veth pair; ``kind="nic"`` with
two emulated Ethernet NICs and a cable of ``rate`` bit/s and ``delay``
seconds. Both ends are brought up (the one convenience over ``ip link add``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal, TypeVar

import attrs
import trio
import trio.testing

from netstack.core.dev import dev_open
from netstack.core.netdevice import NetDevice
from netstack.core.patches import Patches
from netstack.cpu.timed import TimedModel, trio_deterministic
from netstack.drivers.nic import RxCsumMode, nic_newlink, nic_pair
from netstack.drivers.veth import veth_newlink
from netstack.errors import TopologyError
from netstack.host.host import Host, mac_for
from netstack.host.port import Port

__all__ = ["Lab", "Link", "open_lab", "run"]

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
    ) -> None:
        self._nursery = nursery
        self.timed = timed
        if timed is not None:
            timed.seed_trio()  # the set-up before measuring must repeat too
        self.seed = seed
        self.hz = hz
        self.debug_skb = debug_skb
        self.hosts: dict[str, Host] = {}
        self.links: list[Link] = []
        self.ports: dict[str, Port] = {}

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
        host.net.attach(self._nursery)
        self.hosts[name] = host
        for key, value in (sysctls or {}).items():
            host.sysctl(f"{key}={value}")
        return host

    def host(self, name: str) -> Host:
        try:
            return self.hosts[name]
        except KeyError:
            raise TopologyError(f"no host {name!r} in this lab") from None

    def __getitem__(self, name: str) -> Host:
        return self.host(name)

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
        """Join ``"host:dev"`` *a* and *b*.

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
        if up:
            dev_open(dev_a)
            dev_open(dev_b)
        link = Link(dev_a, dev_b, kind)
        self.links.append(link)
        return link

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
) -> AsyncIterator[Lab]:
    """Open a lab; its hosts' tasks stop when the block ends.

    Args:
        seed: base seed of every host's RNG.
        hz: default CONFIG_HZ of the hosts.
        debug_skb: poison freed skbs so use-after-free fails loudly (tests).
        timed: run the hosts' CPUs on this timed-mode machine
            (:class:`netstack.cpu.timed.TimedModel`); functional mode if None.
    """
    # A timed lab switches Trio to its repeatable scheduling while it is open.
    with trio_deterministic():
        async with trio.open_nursery() as nursery:
            lab = Lab(nursery, seed=seed, hz=hz, debug_skb=debug_skb, timed=timed)
            try:
                yield lab
            finally:
                for host in lab.hosts.values():
                    for cap in host.captures:
                        cap.stop()
                nursery.cancel_scope.cancel()


def run(main: Callable[..., Awaitable[T]], *args: Any, clock: Any = None) -> T:
    """Run *main* on Trio in virtual time (``MockClock(autojump_threshold=0)``)."""
    if clock is None:
        clock = trio.testing.MockClock(autojump_threshold=0)
    return trio.run(main, *args, clock=clock)
