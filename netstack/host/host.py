"""``Host``: one emulated machine — its Net, its tools, its sockets.

Theory of operation: :class:`Host` is the composition root of one machine. It
builds a :class:`~netstack.core.net.Net`, registers the qdisc kinds, creates
``lo`` and installs IPv4 (``inet_init``) and IPv6 (``inet6_init``), then
brings ``lo`` up as a booted system would (the kernel then adds 127.0.0.1/8
and ::1/128). Everything after that goes
through the same paths a user would take on Linux: ``host.ip("…")``,
``host.tc("…")``, ``host.sysctl("…")``, ``host.socket(…)``, ``await host.ping(…)``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import trio

from netstack.bridge import register_bridge_modules
from netstack.core import net_sysfs as _sysfs
from netstack.core.dev import dev_open
from netstack.core.net import Net
from netstack.core.netdevice import NetDevice
from netstack.core.patches import Patches
from netstack.core.rtnetlink import register_module
from netstack.core.sock import AF_INET, SOCK_DGRAM
from netstack.drivers.loopback import loopback_net_init
from netstack.drivers.vlan import VLAN_MODULE
from netstack.errors import TopologyError
from netstack.gro import gro_init
from netstack.host.capture import Capture
from netstack.ipv4 import inet_init, ipv4_of
from netstack.ipv6 import inet6_init, ipv6_of
from netstack.sched import register_qdiscs
from netstack.socket import trio_socket
from netstack.socket.context import HostContext, current_host
from netstack.socket.resolver import Names, Resolver
from netstack.socket.socket import Socket, socket_create
from netstack.tcp import tcp_of
from netstack.tunnels import register_tunnel_modules
from netstack.userspace.ethtool import ethtool as _ethtool
from netstack.userspace.iproute2 import ss as _ss
from netstack.userspace.iproute2 import tc as _tc
from netstack.userspace.iproute2.bridge import bridge as _bridge
from netstack.userspace.iproute2.ip import ip as _ip
from netstack.userspace.iputils.ping import PingResult, ping
from netstack.userspace.procps import sysctl as _sysctl
from netstack.wire.ipv4 import ntoa
from netstack.wire.rtnetlink import IFA_F_SECONDARY

if TYPE_CHECKING:
    from netstack.core.snmp import MibSnapshot
    from netstack.cpu.timed import TimedModel
    from netstack.host.lab import Lab

__all__ = ["Host", "HostScope", "mac_for"]

T = TypeVar("T")


def mac_for(host: str, ifname: str) -> bytes:
    """A stable, locally administered unicast MAC for (host, interface)."""
    digest = hashlib.blake2b(f"{host}/{ifname}".encode(), digest_size=5).digest()
    return b"\x02" + digest


class Host:
    """An emulated host. Create with :meth:`netstack.Lab.add_host`."""

    def __init__(
        self,
        lab: Lab | None,
        name: str,
        *,
        cpus: int = 1,
        hz: int = 1000,
        seed: int = 0,
        patches: Patches | None = None,
        debug_skb: bool = False,
        timed: TimedModel | None = None,
    ) -> None:
        self.lab = lab
        self.name = name
        net = Net(name, seed=seed, hz=hz, ncpus=cpus, patches=patches, timed=timed)
        net.debug_skb = debug_skb
        self.net = net
        register_qdiscs(net)
        gro_init(net)
        lo = loopback_net_init(net)
        inet_init(net)
        inet6_init(net)
        register_tunnel_modules(net)  # loadable, not loaded (modules.alias)
        register_bridge_modules(net)
        register_module(net, VLAN_MODULE)  # 8021q
        dev_open(lo)
        self.captures: list[Capture] = []
        self._context: HostContext | None = None

    @property
    def patches(self) -> Patches:
        return self.net.patches

    # -- devices ---------------------------------------------------------------------------
    def dev(self, name: str) -> NetDevice:
        """The device called *name* (``TopologyError`` if there is none)."""
        dev = self.net.dev_get_by_name(name)
        if dev is None:
            raise TopologyError(f'{self.name}: Cannot find device "{name}"')
        return dev

    @property
    def devices(self) -> list[NetDevice]:
        return list(self.net.devices.values())

    def addr(self, dev: str) -> str:
        """The primary IPv4 address of *dev*, as a string."""
        in_dev = self.dev(dev).ip_ptr
        for ifa in in_dev.ifa_list if in_dev is not None else ():
            if not ifa.ifa_flags & IFA_F_SECONDARY:
                return ntoa(ifa.ifa_local)
        raise TopologyError(f"{self.name}: {dev} has no IPv4 address")

    def addr6(self, dev: str, *, scope: str = "global") -> str:
        """The first IPv6 address of *dev* with *scope* (``global`` or ``link``)
        that is not tentative, as a string."""
        from netstack.ipv6.constants import IFA_LINK
        from netstack.wire.ipv6 import ntoa as ntoa6
        from netstack.wire.rtnetlink import IFA_F_TENTATIVE

        want = IFA_LINK if scope == "link" else 0
        idev = self.dev(dev).ip6_ptr
        for ifp in idev.addr_list if idev is not None else ():
            if ifp.scope == want and not ifp.flags & IFA_F_TENTATIVE:
                return ntoa6(ifp.addr)
        raise TopologyError(f"{self.name}: {dev} has no usable {scope} IPv6 address")

    # -- tools -------------------------------------------------------------------------------
    def ip(self, command: str) -> str:
        """Run an ``ip`` command (iproute2 syntax); returns what it prints.

        Raises:
            ConfigError: with iproute2's message, on bad input.
        """
        return _ip.ip(self.net, command)

    def tc(self, command: str) -> str:
        """Run a ``tc`` command (iproute2 syntax); returns what it prints.

        Raises:
            ConfigError: with tc's (or the kernel's) message, on bad input.
        """
        return _tc.tc(self.net, command)

    def bridge(self, command: str) -> str:
        """Run a ``bridge`` command (iproute2 syntax: ``link``, ``fdb``, ``vlan``)."""
        return _bridge.bridge(self.net, command)

    def ethtool(self, command: str) -> str:
        """``ethtool -k DEV`` / ``ethtool -K DEV FEATURE on|off``; returns what it prints."""
        return _ethtool.ethtool(self.net, command)

    def sysfs(self, path: str) -> str:
        """Read ``/sys/PATH``, e.g. ``host.sysfs("class/net/gre1/features")`` → ``"0x7000\\n"``."""
        return _sysfs.sysfs(self.net, path)

    def sysctl(self, spec: str) -> str:
        """``sysctl NAME`` (returns the value) or ``sysctl NAME=VALUE`` (sets it)."""
        return _sysctl.sysctl_spec(self.net, spec)

    async def ping(
        self,
        destination: str,
        *,
        count: int = 1,
        interval: float = 1.0,
        timeout: float | None = None,
        size: int = 56,
        ttl: int | None = None,
        deadline: float | None = None,
        output: list[str] | None = None,
    ) -> PingResult:
        """``ping -c COUNT -i INTERVAL -W TIMEOUT -s SIZE DEST`` from this host."""
        return await ping(
            self.net,
            destination,
            count=count,
            interval=interval,
            timeout=timeout,
            size=size,
            ttl=ttl,
            deadline=deadline,
            output=output,
        )

    def socket(
        self,
        family: int = AF_INET,
        type: int = SOCK_DGRAM,  # noqa: A002
        proto: int = 0,
    ) -> Socket:
        """A socket on this host, with ``trio.socket``'s interface."""
        return socket_create(self.net, family, type, proto)

    def capture(
        self,
        dev: str,
        path: str | Path | None = None,
        *,
        keep: bool = False,
        snaplen: int = 262144,
        callback: Callable[[float, bytes, bool], None] | None = None,
    ) -> Capture:
        """Capture *dev*'s traffic to a pcap file (or, without a path, in memory).

        *snaplen* and *callback* are :class:`~netstack.host.capture.Capture`'s
        (``tcpdump -s``, and a function called with each frame as it passes).
        The callback runs in whichever call transmitted the frame: a received
        frame's, by default, inside the sender's call (another host's
        ``sendto``, whose transmit polls this host's NAPI at its
        ``local_bh_enable``; netstack/core/napi.py), or in this host's NAPI
        task. An exception it raises on a received frame fails the lab from
        that NAPI task, with its traceback; the sender's call returns normally.
        """
        cap = Capture(self.net, self.dev(dev), path, keep=keep, snaplen=snaplen, callback=callback)
        self.captures.append(cap)
        return cap

    # -- the user's own code inside this host ----------------------------------------------------
    @property
    def context(self) -> HostContext:
        """What the socket adapters see of this host (its stack and its resolver)."""
        if self._context is None:
            names = self.lab.names if self.lab is not None else Names()
            self._context = HostContext(self.name, self.net, Resolver(self.net, names))
        return self._context

    def as_current(self) -> HostScope:
        """Run a block "on" this host: ``async with host.as_current(): ...``.

        Inside it, ``trio.socket`` (and so ``trio.open_tcp_stream``,
        ``trio.serve_tcp``, AnyIO on Trio and the libraries built on them),
        ``socket.socket``, ``socket.getaddrinfo`` and ``socket.gethostname`` are
        this host's; tasks started inside stay on it. A plain ``with`` works too.
        """
        return HostScope(self)

    async def run(self, fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        """``await fn(*args, **kwargs)`` on this host, in the calling task (keyword
        arguments pass through, so ``nursery.start(host.run, trio.serve_tcp, h, 80)``
        hands ``task_status`` on)."""
        with self.as_current():
            return await fn(*args, **kwargs)

    def start_soon(
        self, fn: Callable[..., Awaitable[Any]], *args: Any, name: str | None = None
    ) -> None:
        """Start ``fn(*args)`` as a task of this host, in the lab's nursery (it is
        cancelled when the lab closes; an exception in it fails the lab's block)."""
        nursery = self._nursery()
        with self.as_current():
            nursery.start_soon(
                fn, *args, name=name or f"{self.name}: {getattr(fn, '__qualname__', fn)}"
            )

    async def start(
        self, fn: Callable[..., Awaitable[Any]], *args: Any, name: str | None = None
    ) -> Any:
        """Like :meth:`start_soon`, and wait for ``task_status.started(value)``; returns
        the value (``listeners = await host.start(trio.serve_tcp, handler, 80)``)."""
        nursery = self._nursery()
        with self.as_current():
            return await nursery.start(
                fn, *args, name=name or f"{self.name}: {getattr(fn, '__qualname__', fn)}"
            )

    async def run_asyncio(self, fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        """``await fn(*args, **kwargs)`` — an *asyncio* coroutine function — as an asyncio
        task on this host, from Trio; returns its result (or raises its exception).

        The task runs on the lab's asyncio loop (:meth:`Lab.asyncio_loop`: trio-asyncio,
        on the lab's clock) — or on the loop of an enclosing
        ``netstack.socket.aio.open_loop()`` block — so what it starts outlives the call:
        ``server = await b.run_asyncio(asyncio.start_server, handle, None, 80)`` keeps
        serving on ``b``. Inside it ``asyncio.open_connection``, ``start_server``,
        ``loop.create_connection``/``create_datagram_endpoint``/``sock_*``/``getaddrinfo``
        are this host's, and tasks it creates stay on it. Needs ``netstack[asyncio]``."""
        aio = _aio()
        loop = aio.current_loop()
        if loop is None and self.lab is not None:
            loop = await self.lab.asyncio_loop()
        with self.as_current():
            if loop is None:
                async with aio.open_loop() as own:
                    result: T = await aio.run_in_loop(own, fn, *args, **kwargs)
                    return result
            result = await aio.run_in_loop(loop, fn, *args, **kwargs)
            return result

    def _nursery(self) -> trio.Nursery:
        if self.lab is None:
            raise TopologyError(f"host {self.name!r} is not in a lab: use `await host.run(fn)`")
        return self.lab._nursery

    # -- statistics ---------------------------------------------------------------------------
    def snmp(self) -> dict[str, MibSnapshot]:
        """``/proc/net/snmp`` (Ip, Icmp, IcmpMsg, Udp) and IpExt."""
        return ipv4_of(self.net).snmp()

    def snmp6(self) -> dict[str, MibSnapshot]:
        """``/proc/net/snmp6``: Ip6, Icmp6 (with the per-type counters) and Udp6."""
        return ipv6_of(self.net).snmp6()

    def nstat(self) -> dict[str, int]:
        """Every non-zero counter, named as ``nstat`` names them (``IpInReceives``,
        ``Ip6InReceives``, ``Icmp6InEchos``…)."""
        out: dict[str, int] = {}
        for mib, snap in self.snmp().items():
            for key, value in snap.values:
                if value and key not in ("Forwarding", "DefaultTTL"):
                    out[f"{mib}{key}"] = value
        for mib, snap6 in self.snmp6().items():
            for key, value in snap6.values:
                if value:
                    out[f"{mib}{key}"] = value
        for mib, tsnap in tcp_of(self.net).snmp().items():  # Tcp, TcpExt
            for key, value in tsnap.values:
                if value and key not in ("RtoAlgorithm", "RtoMin", "RtoMax", "MaxConn"):
                    out[f"{mib}{key}"] = value
        return out

    def ss(self, command: str = "-t") -> str:
        """``ss -t [-a|-l] [-i]``: the host's TCP sockets (``-i``: cwnd, rtt, retrans …)."""
        return _ss.ss(self.net, command)

    def drops(self) -> dict[str, int]:
        """Dropped skbs by kernel drop reason."""
        return self.net.drop_statistics()

    def statistics(self) -> dict[str, Any]:
        """Devices' counters, SNMP MIBs and drop reasons in one dict."""
        return {
            "devices": {d.name: d.statistics() for d in self.devices},
            "snmp": self.snmp(),
            "snmp6": self.snmp6(),
            "drops": self.drops(),
        }

    def __repr__(self) -> str:
        return f"<Host {self.name}>"


def _aio() -> Any:
    """:mod:`netstack.socket.aio`, or why it cannot be had."""
    try:
        from netstack.socket import aio
    except ImportError as e:  # pragma: no cover - without the extra
        if e.name != "trio_asyncio":
            raise
        raise ImportError(
            "asyncio on a host runs on trio-asyncio: pip install 'netstack[asyncio]'"
        ) from e
    return aio


class HostScope:
    """``host.as_current()``: sets the current host for a block (sync or async ``with``)."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self._tokens: list[Any] = []

    def __enter__(self) -> Host:
        host = self.host
        if host.lab is not None:
            host.lab._adapters_enter()
        else:
            if not trio_socket.installed():
                trio_socket.install()
        self._tokens.append(current_host.set(host.context))
        return host

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        current_host.reset(self._tokens.pop())

    async def __aenter__(self) -> Host:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, tb)
