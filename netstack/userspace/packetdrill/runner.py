"""Running a packetdrill script against a netstack host, in virtual time.

Theory of operation: packetdrill tests the kernel it runs on through a tun
device: it makes the script's system calls, writes the script's inbound (``<``)
packets into the tun device and reads what the kernel sends (``>``), mapping
addresses, ports, sequence numbers and TCP timestamps between *script space*
(what the script wrote) and *live space* (what the kernel uses). This module
does the same against a netstack :class:`~netstack.core.net.Net`:

* **the device** — ``tun0`` (:mod:`netstack.drivers.tun`, with the offloads
  packetdrill sets: checksum and TSO), addressed and routed as packetdrill's
  ``local_netdev_new()`` does; what the stack sends lands in a queue with its
  virtual send time, and each ``<`` packet is built as bytes with valid
  checksums and written at its time (with ``--mss``, as a GSO packet of that
  size, as packetdrill's virtio header does);
* **the clock** — script time 0 is the virtual time the run starts; an event
  at ``t`` runs at ``start + t`` (``trio.sleep_until``), so on Trio's
  ``MockClock`` a run takes no wall time to wait and is repeatable. Relative
  times (``+0.1``) follow ``adjust_relative_event_times()``: relative to the
  previous inbound packet's scripted time when both are inbound packets, else to
  *now*. Times are checked as ``verify_time()`` does: ``--tolerance_usecs``
  (4 ms) or ``--tolerance_percent`` (12.5 %) of the gap from the previous event,
  whichever is larger; ``a~b`` ranges and ``*`` for outbound packets;
* **outbound packets** — a ``>`` line takes the next packet of the socket under
  test (others are dropped, as the sniffer does), maps it to script space,
  joins following segments while the script expects more payload (packetdrill's
  re-joining of GSO/TSO segments, off with ``--strict_segments``), and checks
  it field by field with packetdrill's messages (``live packet field tcp_ack:
  expected: …``, ``bad outbound TCP options``, a timing error), then prints the
  script and actual packets;
* **system calls** — on netstack sockets with Linux errnos; a call written with
  an end time (``+0...0.1 read(…)``) starts at its time and the script goes on
  while it blocks, its return time being checked when it returns; any other call
  that blocks holds the script until it returns (as packetdrill's main thread
  would). ``fcntl(O_NONBLOCK)`` and ``SOCK_NONBLOCK`` give ``EAGAIN``/``EINPROGRESS``;
* **commands and code** — backtick lines run ``sysctl``/``ip``/``tc``/
  ``ethtool`` (and ``echo V > /proc/sys/…``) on the host; ``%{ }%`` snippets take
  a ``tcp_info`` snapshot at their time and run when the script ends
  (:mod:`.code`);
* **hangs** — a wait that lasts ``timeout`` virtual seconds past its scripted
  time ends the run with a failure at that line.

Kernel side of the comparison: Linux as packetdrill drives it (run.c,
run_packet.c, run_system_call.c).
"""

from __future__ import annotations

import collections
import errno as _errno
import ipaddress
import shlex
import struct
from collections.abc import Callable
from typing import Any, Final

import attrs
import trio
import trio.lowlevel
import trio.testing

from netstack.core.net import Net
from netstack.core.netdevice import NetDevice
from netstack.core.sock import SockWouldBlock
from netstack.drivers.tun import (
    TUN_F_CSUM,
    TUN_F_TSO4,
    TUN_F_TSO6,
    TUN_F_TSO_ECN,
    tun_newlink,
    tun_set_offload,
    tun_write,
)
from netstack.errors import ConfigError, NetstackError
from netstack.sites import kernel
from netstack.socket.socket import Socket, socket_create
from netstack.tcp.tcp import inet_stream_connect_result
from netstack.userspace.ethtool.ethtool import ethtool as ethtool_cmd
from netstack.userspace.iproute2.ip.ip import ip as ip_cmd
from netstack.userspace.iproute2.tc.tc import tc as tc_cmd
from netstack.userspace.packetdrill.code import run_code, tcp_info_snapshot
from netstack.userspace.packetdrill.config import Config
from netstack.userspace.packetdrill.errnos import ERRNO_NAMES, strerror
from netstack.userspace.packetdrill.errors import (
    PacketdrillError,
    ScriptError,
    ScriptFailure,
    Unsupported,
)
from netstack.userspace.packetdrill.packet import (
    TCP_ACK,
    TCP_CWR,
    TCP_SYN,
    Packet,
    build_packet,
    flags_from_string,
    packet_to_string,
    parse_packet,
)
from netstack.userspace.packetdrill.script import (
    NO_TIME_RANGE,
    CodeSpec,
    CommandSpec,
    Event,
    Expr,
    Script,
    SyscallSpec,
    TcpOption,
    TcpPacketSpec,
)
from netstack.userspace.packetdrill.symbols import symbol_to_int
from netstack.userspace.procps.sysctl import sysctl as sysctl_cmd
from netstack.userspace.procps.sysctl import sysctl_spec

__all__ = ["SUPPORTED_SYSCALLS", "Runner"]

M32: Final = 0xFFFFFFFF

# socket states of packetdrill's struct socket (socket.h)
SOCKET_NEW: Final = "new"
SOCKET_PASSIVE_LISTENING: Final = "passive_listening"
SOCKET_PASSIVE_PACKET_RECEIVED: Final = "passive_packet_received"
SOCKET_PASSIVE_SYNACK_SENT: Final = "passive_synack_sent"
SOCKET_PASSIVE_SYNACK_ACKED: Final = "passive_synack_acked"
SOCKET_ACTIVE_CONNECTING: Final = "active_connecting"
SOCKET_ACTIVE_SYN_SENT: Final = "active_syn_sent"
SOCKET_ACTIVE_SYN_ACKED: Final = "active_syn_acked"

EINPROGRESS: Final = 115
O_NONBLOCK: Final = 0o4000
O_RDWR: Final = 2
SOCK_NONBLOCK: Final = 0o4000
MSG_DONTWAIT: Final = 0x40
MSG_FASTOPEN: Final = 0x20000000
F_GETFL: Final = 3
F_SETFL: Final = 4
F_GETFD: Final = 1
F_SETFD: Final = 2

SUPPORTED_SYSCALLS: Final = (
    "socket", "bind", "listen", "accept", "connect", "read", "readv", "recv", "recvfrom",
    "recvmsg", "write", "writev", "send", "sendto", "sendmsg", "fcntl", "ioctl", "close",
    "shutdown", "getsockopt", "setsockopt", "poll",
)  # fmt: skip
KNOWN_UNSUPPORTED_SYSCALLS: Final = (
    "cap_set", "open", "sendfile", "epoll_create", "epoll_ctl", "epoll_wait", "pipe",
    "splice", "psp_rx_assoc", "psp_tx_assoc",
)  # fmt: skip


@attrs.define
class TrackedSocket:
    """packetdrill's ``struct socket``: script and live endpoints, ISNs, TS mapping."""

    state: str
    family: int = 2
    protocol: int = 6
    script_fd: int = -1
    script_local_isn: int = 0
    script_remote_isn: int = 0
    live_local_isn: int = 0
    live_remote_isn: int = 0
    live_local_ip: bytes = b""
    live_local_port: int = 0
    live_remote_ip: bytes = b""
    live_remote_port: int = 0
    ts_val_map: dict[int, int] = attrs.field(factory=dict)
    found_first_ts: bool = False
    first_script_ts_val: int = 0
    first_actual_ts_val: int = 0

    # packetdrill's offset helpers (socket.h)
    def remote_script_to_live(self, is_syn: bool) -> int:
        return 0 if is_syn else self.live_remote_isn

    def local_script_to_live(self, is_syn: bool) -> int:
        if is_syn:
            return (self.live_local_isn - self.script_local_isn) & M32
        return self.live_local_isn


@attrs.define
class FdState:
    """A script file descriptor: its netstack socket, O_NONBLOCK, closed or not."""

    fd: int
    sock: Any  # the netstack Socket (a real socket in the Linux comparison backend)
    nonblock: bool = False
    closed: bool = False
    tracked: TrackedSocket | None = None


class _Blocked(Exception):
    """A call would block (raised inside the call attempt)."""

    def __init__(self, write: bool) -> None:
        super().__init__("would block")
        self.write = write


@attrs.define
class _CallResult:
    value: int
    err: int = 0


def _ip_bytes(text: str, version: int) -> bytes:
    addr = ipaddress.ip_address(text)
    if addr.version != version:
        raise ValueError(text)
    return addr.packed


class Runner:
    """One run of one parsed script on *net* (create, then ``await run()``)."""

    def __init__(
        self,
        net: Net,
        script: Script,
        config: Config,
        *,
        output: Callable[[str], None] = print,
        base_dir: str = ".",
    ) -> None:
        self.net = net
        self.script = script
        self.config = config
        self.path = script.path
        self.output = output
        self.base_dir = base_dir
        self.dev: NetDevice | None = None
        self.queue: collections.deque[tuple[bytes, float]] = collections.deque()
        self.arrived = trio.Event()
        self.t0 = 0.0
        self.fds: dict[int, FdState] = {}
        self.sockets: list[TrackedSocket] = []
        self.sut: TrackedSocket | None = None
        self.last_event: Event | None = None
        self.event: Event | None = None
        self.code: list[tuple[str, int, dict[str, int], str]] = []
        self.warnings: list[str] = []
        self.next_remote_port = 48000
        self.blocking: trio.CancelScope | None = None
        self.blocking_line = 0
        self.blocking_done: trio.Event | None = None
        self.bg_error: PacketdrillError | None = None
        self.local_ip, self.remote_ip = config.addresses()
        v = config.wire_version
        self.wire_local = _ip_bytes(self.local_ip, v)
        self.wire_remote = _ip_bytes(self.remote_ip, v)
        self.max_time_usecs = 0

    # ------------------------------------------------------------------ errors
    def fail(self, line: int, message: str) -> ScriptFailure:
        return ScriptFailure(f"{self.path}:{line}: {message}", path=self.path, line=line)

    def bad(self, line: int, message: str) -> ScriptError:
        return ScriptError(f"{self.path}:{line}: {message}", path=self.path, line=line)

    # ------------------------------------------------------------------ set-up
    def setup(self) -> None:
        """Create and configure ``tun0`` (packetdrill's local_netdev_new())."""
        cfg = self.config
        dev = tun_newlink(self.net, "tun0", reader=self._on_packet)
        tun_set_offload(dev, TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN)
        self.dev = dev
        net = self.net
        if cfg.mtu != 1500:
            ip_cmd(net, f"link set tun0 mtu {cfg.mtu}")
        ip_cmd(net, "link set tun0 up")
        if cfg.wire_version == 4:
            ip_cmd(net, f"addr add {self.local_ip}/16 dev tun0")
            ip_cmd(net, f"route add {self.remote_ip}/32 dev tun0")
        else:
            ip_cmd(net, f"-6 addr add {self.local_ip}/48 dev tun0 nodad")
            ip_cmd(net, f"-6 route add {self.remote_ip}/128 dev tun0")

    def _on_packet(self, data: bytes, when: float) -> None:
        self.queue.append((data, when))
        self.arrived.set()

    # ------------------------------------------------------------------ time
    def now_usecs(self) -> int:
        return round((trio.current_time() - self.t0) * 1e6)

    def verify_time(
        self,
        time_type: str,
        script_usecs: int,
        script_usecs_end: int,
        live_usecs: int,
        last_event_usecs: int,
        description: str,
        offset_usecs: int = 0,
    ) -> str | None:
        """Kernel side: packetdrill run.c, verify_time()."""
        if time_type == "any":
            return None
        tol = self.config.tolerance_usecs
        if last_event_usecs != NO_TIME_RANGE:
            dyn = int(self.config.tolerance_percent / 100.0 * (script_usecs - last_event_usecs))
            tol = max(tol, dyn)
        if time_type in ("absolute_range", "relative_range"):
            if live_usecs < script_usecs - tol or live_usecs > script_usecs_end + tol:
                if time_type == "absolute_range":
                    return (
                        f"timing error: expected {description} in time range "
                        f"{script_usecs / 1e6:.6f}~{script_usecs_end / 1e6:.6f} sec "
                        f"but happened at {live_usecs / 1e6:.6f} sec"
                    )
                return (
                    f"timing error: expected {description} in relative time range "
                    f"+{(script_usecs - offset_usecs) / 1e6:.6f}~"
                    f"+{(script_usecs_end - offset_usecs) / 1e6:.6f} sec "
                    f"but happened at {(live_usecs - offset_usecs) / 1e6:+.6f} sec"
                )
            return None
        if live_usecs < script_usecs - tol or live_usecs > script_usecs + tol:
            return (
                f"timing error: expected {description} at {script_usecs / 1e6:.6f} sec "
                f"but happened at {live_usecs / 1e6:.6f} sec; tolerance {tol / 1e6:.6f} sec"
            )
        return None

    def adjust_relative_event_times(self, ev: Event) -> None:
        """Kernel side: packetdrill run.c, adjust_relative_event_times()."""
        if ev.time_type not in ("any", "relative", "relative_range"):
            return
        last = self.last_event
        if last is not None and _anchored(last) and _anchored(ev):
            offset = last.time_usecs
        else:
            offset = self.now_usecs()
        ev.offset_usecs = offset
        ev.time_usecs += offset
        if ev.time_type == "relative_range":
            ev.time_usecs_end += offset
        a = ev.action
        if ev.time_type == "relative" and isinstance(a, SyscallSpec) and a.end_usecs is not None:
            a.end_usecs += offset

    def last_event_usecs(self) -> int:
        return self.last_event.time_usecs if self.last_event is not None else NO_TIME_RANGE

    async def wait_for_event(self, ev: Event) -> None:
        """Kernel side: packetdrill run.c, wait_for_event() + check_event_time()."""
        await trio.sleep_until(self.t0 + ev.time_usecs / 1e6)
        err = self.verify_time(
            ev.time_type,
            ev.time_usecs,
            ev.time_usecs_end,
            self.now_usecs(),
            self.last_event_usecs(),
            ev.description,
        )
        if err:
            raise self.fail(ev.line, err)

    # ------------------------------------------------------------------ the run
    async def run(self) -> None:
        """Run the script.

        Raises:
            ScriptFailure: the stack did not do what the script says.
            ScriptError: bad input found while running (unknown fd, symbol…).
        """
        self.setup()
        script = self.script
        for path in self.config.init_scripts:
            self.run_init_script(path)
        if script.init_command is not None:
            self.run_command(script.init_line, script.init_command.command, init=True)
        events = script.events
        if events and events[0].time_type != "any" and events[0].time_usecs != 0:
            raise self.bad(events[0].line, "first event should be at time 0")
        self.t0 = trio.current_time()
        try:
            async with trio.open_nursery() as nursery:
                self.nursery = nursery
                for ev in events:
                    if self.bg_error is not None:
                        break
                    last = self.last_event
                    if (
                        last is not None
                        and _absolute(last)
                        and _absolute(ev)
                        and ev.time_usecs < last.time_usecs
                    ):
                        raise self.bad(
                            ev.line,
                            f"time goes backward in script from {last.time_usecs} usec to "
                            f"{ev.time_usecs} usec",
                        )
                    self.event = ev
                    self.adjust_relative_event_times(ev)
                    await self.run_event(ev)
                    self.last_event = ev
                if self.bg_error is None:
                    await self.finish_blocking()
                nursery.cancel_scope.cancel()
        except BaseExceptionGroup as eg:  # a failure inside a blocking call's task
            inner = eg.exceptions[0] if eg.exceptions else eg
            while isinstance(inner, BaseExceptionGroup):
                inner = inner.exceptions[0]
            raise inner from None
        if self.bg_error is not None:
            raise self.bg_error
        if script.cleanup_command is not None:
            self.run_command(script.cleanup_line, script.cleanup_command.command)
        if self.code:
            run_code(self.code, self.output)

    async def run_event(self, ev: Event) -> None:
        a = ev.action
        if isinstance(a, TcpPacketSpec):
            await self.run_packet_event(ev, a)
        elif isinstance(a, SyscallSpec):
            await self.run_syscall_event(ev, a)
        elif isinstance(a, CommandSpec):
            await self.wait_for_event(ev)
            self.run_command(ev.line, a.command)
        elif isinstance(a, CodeSpec):
            await self.wait_for_event(ev)
            self.run_code_event(ev, a)

    async def finish_blocking(self) -> None:
        """Wait for a blocking call still running (packetdrill waits a second for it)."""
        done = self.blocking_done
        if done is None or done.is_set():
            return
        with trio.move_on_after(1.0):
            await done.wait()
        if not done.is_set():
            raise self.fail(
                self.blocking_line,
                "runtime error: exiting while a blocking system call is in progress",
            )

    # ------------------------------------------------------------------ commands
    def run_init_script(self, path: str) -> None:
        import os.path

        full = path if os.path.isabs(path) else os.path.join(self.base_dir, path)
        try:
            with open(full, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise ScriptError(
                f"{self.path}: error reading init script {path}: {e.strerror}"
            ) from None
        self.run_command(0, text, init=True)

    def run_command(self, line: int, command: str, *, init: bool = False) -> None:
        """Run a backtick line's commands on the host (sysctl, ip, tc, ethtool, echo)."""
        text = command.replace("\\\n", " ")
        for raw in text.replace(";", "\n").split("\n"):
            cmd = raw.strip()
            if not cmd or cmd.startswith("#"):
                continue
            self._one_command(line, command, cmd)

    def _one_command(self, line: int, whole: str, cmd: str) -> None:
        where = f"{self.path}:{line}" if line else self.path
        try:
            argv = shlex.split(cmd)
        except ValueError as e:
            raise ScriptError(f"{where}: error executing `{whole}` command: {e}") from None
        if not argv:
            return
        prog = argv[0].rsplit("/", 1)[-1]
        net = self.net
        try:
            if prog == "sysctl":
                sysctl_cmd(net, argv)
            elif prog == "ip":
                ip_cmd(net, " ".join(shlex.quote(a) for a in argv[1:]))
            elif prog == "tc":
                tc_cmd(net, " ".join(shlex.quote(a) for a in argv[1:]))
            elif prog == "ethtool":
                ethtool_cmd(net, " ".join(shlex.quote(a) for a in argv[1:]))
            elif prog in ("true", ":"):
                pass
            elif prog == "echo" and ">" in argv:
                k = argv.index(">")
                target = argv[k + 1] if k + 1 < len(argv) else ""
                if not target.startswith("/proc/sys/"):
                    raise Unsupported(
                        f"{where}: unsupported: `{cmd}`: echo writes only to /proc/sys here"
                    )
                key = target[len("/proc/sys/") :].replace("/", ".")
                sysctl_spec(net, f"{key}={' '.join(argv[1:k])}")
            elif prog == "echo":
                pass
            else:
                raise Unsupported(
                    f"{where}: unsupported: the command `{cmd}` (backtick lines run sysctl, ip, "
                    "tc and ethtool on the host, and echo VALUE > /proc/sys/…)"
                )
        except (ConfigError, NetstackError, OSError) as e:
            raise ScriptFailure(
                f"{where}: error executing `{whole.strip()}` command: {e}",
                path=self.path,
                line=line,
            ) from None

    # ------------------------------------------------------------------ code
    def run_code_event(self, ev: Event, spec: CodeSpec) -> None:
        sut = self.sut
        if sut is None:
            raise self.fail(ev.line, "runtime error in code: no socket to use for code")
        fd = self.fds.get(sut.script_fd)
        if fd is None or fd.closed or (fd.tracked is not sut and fd.tracked is not None):
            raise self.fail(ev.line, "runtime error in code: can't find getsockopt to get TCP info")
        variables = self.tcp_info(fd)
        if variables is None:
            raise self.fail(ev.line, "runtime error in code: can't find getsockopt to get TCP info")
        self.code.append((self.path, ev.line, variables, spec.text))

    def tcp_info(self, fd: FdState) -> dict[str, int] | None:
        """The ``tcpi_*`` variables of *fd*'s socket now (None: not a TCP socket)."""
        sk: Any = fd.sock.sock
        if not hasattr(sk, "snd_cwnd"):
            return None
        return tcp_info_snapshot(sk, sk.tcp.jiffies())

    # ------------------------------------------------------------------ packets
    async def run_packet_event(self, ev: Event, spec: TcpPacketSpec) -> None:
        sock = self.find_or_create_socket(ev, spec)
        if spec.direction == "outbound":
            await self.do_outbound(ev, spec, sock)
        else:
            await self.wait_for_event(ev)
            self.do_inbound(ev, spec, sock)

    def find_or_create_socket(self, ev: Event, spec: TcpPacketSpec) -> TrackedSocket:
        """Kernel side: packetdrill run_packet.c, find_or_create_socket_for_script_packet()."""
        sut = self.sut
        cfg = self.config
        flags = flags_from_string(spec.flags)
        if spec.direction == "inbound" and (sut is None or sut.state == SOCKET_PASSIVE_LISTENING):
            child = TrackedSocket(SOCKET_PASSIVE_PACKET_RECEIVED, family=cfg.wire_version)
            child.script_remote_isn = spec.start_seq
            child.live_remote_ip = self.wire_remote
            child.live_remote_port = self.next_remote_port
            self.next_remote_port += 1
            child.live_local_ip = self.wire_local
            child.live_local_port = cfg.bind_port
            child.live_remote_isn = spec.start_seq
            self.sockets.append(child)
            self.sut = child
            return child
        if (
            spec.direction == "outbound"
            and flags & TCP_SYN
            and not flags & TCP_ACK
            and sut is not None
            and sut.state == SOCKET_ACTIVE_CONNECTING
        ):
            sut.state = SOCKET_ACTIVE_SYN_SENT
            sut.script_local_isn = spec.start_seq
            return sut
        if sut is not None:
            return sut
        raise self.fail(ev.line, "error handling packet: no matching socket for script packet")

    def _script_packet(self, spec: TcpPacketSpec) -> Packet:
        v = self.config.wire_version
        z = bytes(4 if v == 4 else 16)
        return Packet(
            v,
            z,
            z,
            spec.src_port,
            spec.dst_port,
            spec.start_seq,
            spec.ack,
            flags_from_string(spec.flags),
            max(spec.window, 0),
            list(spec.options or ()),
            bytes(spec.payload),
            spec.urg_ptr,
            spec.ip.tos,
            spec.ip.ttl,
            spec.ip.flow_label,
        )

    def do_inbound(self, ev: Event, spec: TcpPacketSpec, sock: TrackedSocket) -> None:
        """Kernel side: packetdrill do_inbound_script_packet(), map_inbound_packet()."""
        flags = flags_from_string(spec.flags)
        if sock.state == SOCKET_PASSIVE_SYNACK_SENT and flags & TCP_ACK:
            sock.state = SOCKET_PASSIVE_SYNACK_ACKED
        elif sock.state == SOCKET_ACTIVE_SYN_SENT and flags & TCP_SYN and flags & TCP_ACK:
            sock.state = SOCKET_ACTIVE_SYN_ACKED
            sock.script_remote_isn = spec.start_seq
            sock.live_remote_isn = spec.start_seq
        p = self._script_packet(spec)
        p.src, p.dst = sock.live_remote_ip, sock.live_local_ip
        if not p.src or not p.dst:
            raise self.fail(
                ev.line,
                "error handling packet: no live connection yet for this packet "
                "(an inbound packet before any SYN, connect() or listen()?)",
            )
        p.sport = spec.src_port or sock.live_remote_port
        p.dport = spec.dst_port or sock.live_local_port
        if p.ttl == 0:
            p.ttl = 64
        is_syn = bool(flags & TCP_SYN)
        p.seq = (p.seq + sock.remote_script_to_live(is_syn)) & M32
        ack_off = sock.local_script_to_live(is_syn)
        if flags & TCP_ACK:
            p.ack = (p.ack + ack_off) & M32
        _offset_sack_blocks(p.options, ack_off)
        ts = _find_ts(p.options)
        if flags & TCP_ACK and ts is not None:
            script_ecr = int.from_bytes(ts.data[4:8], "big")
            live = sock.ts_val_map.get(script_ecr)
            if live is None:
                if self.config.tcp_ts_ecr_scaled and sock.found_first_ts:
                    live = (script_ecr - sock.first_script_ts_val + sock.first_actual_ts_val) & M32
                else:
                    raise self.fail(
                        ev.line,
                        "error handling packet: unable to infer live TS ecr for script TS ecr "
                        f"{script_ecr};  no matching or preceding outbound TS val",
                    )
            ts.data = ts.data[:4] + live.to_bytes(4, "big")
        if self.config.verbose:
            self.output(
                f"inbound injected packet: {self.now_usecs() / 1e6:9.6f} {packet_to_string(p)}"
            )
        self.inject(build_packet(p))

    def inject(self, packet: bytes) -> None:
        """Write one inbound packet into tun0 (with ``--mss``: as a GSO packet of that size)."""
        assert self.dev is not None
        tun_write(self.dev, packet, gso_size=self.config.mss)

    def _live_packet_socket(self, p: Packet) -> TrackedSocket | None:
        """packetdrill's find_socket_for_live_packet() / find_connect_for_live_packet()."""
        sut = self.sut
        if sut is None:
            return None
        if (
            p.src == sut.live_local_ip
            and p.sport == sut.live_local_port
            and p.dst == sut.live_remote_ip
            and p.dport == sut.live_remote_port
        ):
            return sut
        if (
            p.flags & TCP_SYN
            and not p.flags & TCP_ACK
            and sut.state == SOCKET_ACTIVE_SYN_SENT
            and p.dst == sut.live_remote_ip
            and p.dport == sut.live_remote_port
        ):
            sut.live_local_ip = p.src
            sut.live_local_port = p.sport
            sut.live_local_isn = p.seq
            return sut
        return None

    async def _sniff(self, ev: Event, sock: TrackedSocket, deadline: float) -> Packet:
        while True:
            while not self.queue:
                self.arrived = trio.Event()
                with trio.move_on_at(deadline):
                    await self.arrived.wait()
                if not self.queue:
                    if self.bg_error is not None:
                        raise self.bg_error
                    raise self.fail(
                        ev.line,
                        "error handling packet: Timed out waiting for packet "
                        f"(nothing for {self.config.timeout:g} s of virtual time past the "
                        "scripted time)",
                    )
            data, when = self.queue.popleft()
            p = parse_packet(data, when)
            if p is None or p.version != self.config.wire_version:
                continue
            if self._live_packet_socket(p) is sock:
                return p

    async def do_outbound(self, ev: Event, spec: TcpPacketSpec, sock: TrackedSocket) -> None:
        """Kernel side: packetdrill run_packet.c, do_outbound_script_packet()."""
        script = self._script_packet(spec)
        sflags = script.flags
        synack = bool(sflags & TCP_SYN and sflags & TCP_ACK)
        if sock.state == SOCKET_PASSIVE_PACKET_RECEIVED and synack:
            sock.script_local_isn = spec.start_seq
        expected_end = ev.time_usecs_end if ev.time_usecs_end != NO_TIME_RANGE else ev.time_usecs
        if ev.time_type == "any":
            expected_end = self.now_usecs()
        deadline = self.t0 + max(expected_end, self.now_usecs()) / 1e6 + self.config.timeout
        want = spec.payload
        parts: list[Packet] = []
        got = 0
        while True:
            live = await self._sniff(ev, sock, deadline)
            if sock.state == SOCKET_PASSIVE_PACKET_RECEIVED and synack:
                sock.state = SOCKET_PASSIVE_SYNACK_SENT
                sock.live_local_isn = live.seq
            if self.config.verbose:
                self.output(
                    f"outbound sniffed packet: {(live.time - self.t0):9.6f} "
                    f"{packet_to_string(live)}"
                )
            is_syn = bool(live.flags & TCP_SYN)
            live.seq = (live.seq - sock.local_script_to_live(is_syn)) & M32
            back = sock.remote_script_to_live(is_syn)
            if live.flags & TCP_ACK:
                live.ack = (live.ack - back) & M32
            _offset_sack_blocks(live.options, -back)
            if parts:
                ferr = _verify_fragment(live, parts[-1], len(live.payload), got, want)
                if ferr:
                    raise self.fail(ev.line, f"error handling packet: {ferr}")
            parts.append(live)
            got += len(live.payload)
            if got >= want or self.config.strict_segments:
                break
        if got != want:
            raise self.fail(
                ev.line,
                f"error handling packet: live packet payload: expected {want} bytes vs "
                f"actual {got} bytes",
            )
        actual = parts[0] if len(parts) == 1 else _aggregate(parts)
        err = self.verify_outbound(ev, spec, script, actual, sock)
        if err is not None:
            msg, non_fatal = err
            warn = non_fatal and self.config.non_fatal_packet
            text = (
                f"{self.path}:{ev.line}: {'warning' if warn else 'error'} "
                f"handling packet: {msg}\n"
                f"script packet: {ev.time_usecs / 1e6:9.6f} "
                f"{packet_to_string(script, win_nocheck=spec.window < 0)}\n"
                f"actual packet: {(actual.time - self.t0):9.6f} {packet_to_string(actual)}"
            )
            if non_fatal and self.config.non_fatal_packet:
                self.warnings.append(text)
                return
            raise ScriptFailure(text, path=self.path, line=ev.line)

    def verify_outbound(
        self, ev: Event, spec: TcpPacketSpec, script: Packet, actual: Packet, sock: TrackedSocket
    ) -> tuple[str, bool] | None:
        """(message, non-fatal) or None. Kernel side: packetdrill verify_outbound_live_packet()."""
        # map the TS val into script space (map_outbound_live_packet)
        s_ts, a_ts = _find_ts(script.options), _find_ts(actual.options)
        if s_ts is not None and a_ts is not None:
            s_val = int.from_bytes(s_ts.data[:4], "big")
            a_val = int.from_bytes(a_ts.data[:4], "big")
            sock.ts_val_map[s_val] = a_val
            if not sock.found_first_ts:
                sock.found_first_ts = True
                sock.first_script_ts_val = s_val
                sock.first_actual_ts_val = a_val
            mapped = (sock.first_script_ts_val + (a_val - sock.first_actual_ts_val)) & M32
            a_ts.data = mapped.to_bytes(4, "big") + a_ts.data[4:]
        nocheck = spec.options is None
        allowance = actual.options_len if nocheck else 0
        ip = spec.ip

        def field(name: str, expected: int, got: int) -> str | None:
            if expected != got:
                return (
                    f"live packet field {name}: expected: {expected} ({expected:#x}) vs "
                    f"actual: {got} ({got:#x})"
                )
            return None

        checks: list[str | None] = []
        if actual.version == 4:
            checks.append(
                field("ipv4_total_length", script.ip_total_len + allowance, actual.ip_total_len)
            )
        else:
            checks.append(
                field("ipv6_payload_len", script.ip_total_len + allowance, actual.ip_total_len)
            )
        ecn = actual.tos & 3
        if ip.tos_check == "ect01" and ecn not in (1, 2):
            checks.append(f"live packet field ip_ecn: expected: 0x1 or 0x2 vs actual: {ecn:#x}")
        elif ip.tos_check == "ecn":
            checks.append(field("ip_ecn", ip.tos, ecn))
        elif ip.tos_check == "tos":
            checks.append(field("tos", ip.tos, actual.tos))
        if ip.ttl:
            checks.append(field("ttl", ip.ttl, actual.ttl))
        sf, af = script.flags, actual.flags
        checks += [
            field("tcp_data_offset", script.doff + allowance // 4, actual.doff),
            field("tcp_fin", sf & 1, af & 1),
            field("tcp_syn", (sf >> 1) & 1, (af >> 1) & 1),
            field("tcp_rst", (sf >> 2) & 1, (af >> 2) & 1),
            field("tcp_psh", (sf >> 3) & 1, (af >> 3) & 1),
            field("tcp_ack", (sf >> 4) & 1, (af >> 4) & 1),
            field("tcp_urg", (sf >> 5) & 1, (af >> 5) & 1),
            field("tcp_ece", (sf >> 6) & 1, (af >> 6) & 1),
            field("tcp_cwr", (sf >> 7) & 1, (af >> 7) & 1),
            field("tcp_ae", (sf >> 8) & 1, (af >> 8) & 1),
            field("tcp_reserved_bits", 0, actual.res1),
            field("tcp_seq", script.seq, actual.seq),
            field("tcp_ack_seq", script.ack, actual.ack),
            None if spec.window < 0 else field("tcp_window", spec.window, actual.window),
            field("tcp_urg_ptr", script.urg_ptr, actual.urg_ptr),
        ]
        for c in checks:
            if c:
                return c, True
        if ip.flow_label:
            pass  # flow labels are compared as a mapping in packetdrill; not checked here
        if not nocheck:
            err = self._verify_options(script, actual)
            if err:
                return err, True
        if actual.payload != script.payload:
            return "incorrect outbound data payload", True
        live_usecs = round((actual.time - self.t0) * 1e6)
        err = self.verify_time(
            ev.time_type,
            ev.time_usecs,
            ev.time_usecs_end,
            live_usecs,
            self.last_event_usecs(),
            "outbound packet",
            ev.offset_usecs,
        )
        if err:
            return err, True
        return None

    def _verify_options(self, script: Packet, actual: Packet) -> str | None:
        """Kernel side: packetdrill verify_outbound_live_tcp_options()."""
        so, ao = script.options, actual.options
        for i in range(max(len(so), len(ao))):
            if i >= len(so) or i >= len(ao) or so[i].kind != ao[i].kind:
                return "bad outbound TCP options"
            s, a = so[i], ao[i]
            if a.kind in (0, 1):
                continue
            if a.kind == 8:
                tick = self.config.tcp_ts_tick_usecs
                sv = int.from_bytes(s.data[:4], "big")
                av = int.from_bytes(a.data[:4], "big")
                diff = (av - sv) & M32
                if diff >= 1 << 31:
                    diff = (1 << 32) - diff
                if tick and diff * tick > self.config.tolerance_usecs:
                    return (
                        f"bad outbound TCP timestamp value, tolerance {self.config.tolerance_usecs}"
                    )
                continue
            if s.length != a.length:
                return f"bad lengths for outbound TCP option {s.kind}"
            if s.data != a.data:
                return f"bad value outbound TCP option {s.kind}"
        return None

    # ------------------------------------------------------------------ system calls
    async def run_syscall_event(self, ev: Event, spec: SyscallSpec) -> None:
        """Kernel side: packetdrill run_system_call.c, run_system_call_event()."""
        name = spec.name
        if name in KNOWN_UNSUPPORTED_SYSCALLS:
            raise Unsupported(
                f"{self.path}:{ev.line}: unsupported: the {name}() system call",
                path=self.path,
                line=ev.line,
            )
        if name not in SUPPORTED_SYSCALLS:
            raise self.bad(ev.line, f"runtime error in {name} call: Unknown system call: '{name}'")
        if spec.blocking:
            if self.blocking_done is not None and not self.blocking_done.is_set():
                await trio.testing.wait_all_tasks_blocked()
                if not self.blocking_done.is_set():
                    raise self.fail(
                        ev.line,
                        f"runtime error in {name} call: blocking system call while another "
                        "blocking system call is already in progress",
                    )
        await self.wait_for_event(ev)
        args = spec.args or []
        handler = getattr(self, f"sys_{name}")
        try:
            attempt = handler(ev, spec, args)
        except ScriptError:
            raise
        except PacketdrillError:
            raise
        if spec.blocking:
            done = trio.Event()
            self.blocking_done = done
            self.blocking_line = ev.line
            result = attempt()
            if result is not None:
                done.set()
                self.end_syscall_checked(ev, spec, result, blocking_end=True)
                return
            self.nursery.start_soon(self._blocking_call, ev, spec, attempt, done)
            await trio.testing.wait_all_tasks_blocked()
            return
        result = attempt()
        if result is None:
            deadline = trio.current_time() + self.config.timeout
            result = await self._wait_call(ev, spec, attempt, deadline)
        self.end_syscall_checked(ev, spec, result)

    async def _wait_call(
        self,
        ev: Event,
        spec: SyscallSpec,
        attempt: Callable[[], _CallResult | None],
        deadline: float,
    ) -> _CallResult:
        while True:
            with trio.move_on_at(deadline):
                await self._wait_ready(attempt)
                result = attempt()
                if result is not None:
                    return result
                continue
            raise self.fail(
                ev.line,
                f"runtime error in {spec.name} call: the call blocked for "
                f"{self.config.timeout:g} s "
                "of virtual time (a call the script expects to block needs an end time, e.g. "
                f"+0...0.1 {spec.name}(…))",
            )

    async def _wait_ready(self, attempt: Callable[[], _CallResult | None]) -> None:
        waiter = getattr(attempt, "waiter", None)
        if waiter is not None:
            await waiter()
        else:
            await trio.sleep(0.001)

    async def _blocking_call(
        self,
        ev: Event,
        spec: SyscallSpec,
        attempt: Callable[[], _CallResult | None],
        done: trio.Event,
    ) -> None:
        assert spec.end_usecs is not None
        deadline = self.t0 + spec.end_usecs / 1e6 + self.config.timeout
        try:
            result = await self._wait_call(ev, spec, attempt, deadline)
            self.end_syscall_checked(ev, spec, result, blocking_end=True)
        except PacketdrillError as e:
            self.bg_error = e
            self.arrived.set()
        finally:
            done.set()

    def end_syscall_checked(
        self, ev: Event, spec: SyscallSpec, result: _CallResult, *, blocking_end: bool = False
    ) -> None:
        err = self.check_result(ev, spec, result)
        if err:
            msg = f"{self.path}:{ev.line}: runtime error in {spec.name} call: {err}"
            if self.config.non_fatal_syscall:
                self.warnings.append(msg)
            else:
                raise ScriptFailure(msg, path=self.path, line=ev.line)
        if blocking_end:
            assert spec.end_usecs is not None
            terr = self.verify_time(
                ev.time_type,
                spec.end_usecs,
                0,
                self.now_usecs(),
                ev.time_usecs,
                "system call return",
            )
            if terr:
                raise self.fail(ev.line, terr)

    def check_result(self, ev: Event, spec: SyscallSpec, result: _CallResult) -> str | None:
        """Kernel side: packetdrill run_system_call.c, end_syscall()."""
        expected = self.int_expr(ev, spec.result)
        actual, err = result.value, result.err
        fd_mode = spec.name in ("socket", "accept")
        if fd_mode and expected >= 0:
            if actual < 0:
                return (
                    f"Expected non-negative result but got {actual} with errno {err} "
                    f"({strerror(err)})"
                )
        elif actual != expected:
            return f"Expected result {expected} but got {actual} with errno {err} ({strerror(err)})"
        if spec.errno is not None:
            want = symbol_to_int(spec.errno)
            if want is None:
                raise self.bad(
                    ev.line, f"runtime error in {spec.name} call: unknown errno '{spec.errno}'"
                )
            if err != want:
                return f"Expected errno {want} ({strerror(want)}) but got {err} ({strerror(err)})"
        return None

    # -- expressions
    def int_expr(self, ev: Event, e: Expr) -> int:
        if e.kind == "int":
            assert isinstance(e.value, int)
            return e.value
        if e.kind == "word":
            v = symbol_to_int(str(e.value))
            if v is None:
                raise self.bad(ev.line, f"bad integer expression: unknown symbol '{e.value}'")
            return v
        if e.kind == "binary" and e.op == "|":
            return self.int_expr(ev, e.items[0][1]) | self.int_expr(ev, e.items[1][1])
        if e.kind == "inet_addr":
            return int.from_bytes(ipaddress.IPv4Address(str(e.value)).packed, "little")
        raise self.bad(ev.line, f"Bad type; actual: {e.kind} expected: integer")

    def _nargs(self, ev: Event, spec: SyscallSpec, args: list[Expr], *counts: int) -> None:
        if len(args) not in counts:
            raise self.bad(
                ev.line,
                f"runtime error in {spec.name} call: Expected {counts[0]} args but got {len(args)}",
            )

    def _ellipsis(self, ev: Event, spec: SyscallSpec, e: Expr) -> None:
        if e.kind != "ellipsis":
            raise self.bad(
                ev.line,
                f"runtime error in {spec.name} call: Bad type; actual: {e.kind} expected: ellipsis",
            )

    def _fd(self, ev: Event, spec: SyscallSpec, e: Expr) -> FdState:
        n = self.int_expr(ev, e)
        fd = self.fds.get(n)
        if fd is None or fd.closed:
            raise self.bad(
                ev.line, f"runtime error in {spec.name} call: unable to find fd with script fd {n}"
            )
        return fd

    def _bracketed(self, ev: Event, spec: SyscallSpec, e: Expr) -> int:
        if e.kind != "list":
            raise self.bad(
                ev.line,
                f"runtime error in {spec.name} call: Bad type; actual: {e.kind} expected: list",
            )
        if len(e.items) != 1:
            raise self.bad(
                ev.line,
                f"runtime error in {spec.name} call: "
                "Expected [<element>] but got multiple elements",
            )
        return self.int_expr(ev, e.items[0][1])

    # -- call attempts: each handler returns attempt() -> _CallResult | None (would block)
    def _op(
        self,
        fn: Callable[[], int],
        fd: FdState | None,
        write: bool,
        *,
        nonblock: bool = False,
    ) -> Callable[[], _CallResult | None]:
        def attempt() -> _CallResult | None:
            try:
                return _CallResult(fn())
            except (SockWouldBlock, _Blocked):
                if nonblock or (fd is not None and fd.nonblock):
                    return _CallResult(-1, _errno.EAGAIN)
                return None
            except OSError as e:
                return _CallResult(-1, e.errno or 0)

        if fd is not None:
            sk = fd.sock.sock

            async def waiter() -> None:
                if write:
                    if not sk.writable():
                        await sk.wait_writable()
                    else:
                        await trio.lowlevel.checkpoint()
                elif not sk.readable():
                    await sk.wait_readable()
                else:
                    await trio.lowlevel.checkpoint()

            attempt.waiter = waiter  # type: ignore[attr-defined]
        return attempt

    def sys_socket(
        self, ev: Event, spec: SyscallSpec, args: list[Expr]
    ) -> Callable[[], _CallResult | None]:
        self._nargs(ev, spec, args, 3)
        domain = (
            self.config.socket_family if args[0].kind == "ellipsis" else self.int_expr(ev, args[0])
        )
        stype = self.int_expr(ev, args[1])
        proto = self.int_expr(ev, args[2])
        script_fd = self.int_expr(ev, spec.result)

        if (stype & 0xF) != 1:
            raise Unsupported(
                f"{self.path}:{ev.line}: unsupported: non-TCP sockets (the runner drives "
                "SOCK_STREAM sockets)",
                path=self.path,
                line=ev.line,
            )

        def fn() -> int:
            sock = socket_create(self.net, domain, stype, proto)
            if script_fd < 0:
                sock.close()
                return 3
            if script_fd in self.fds and not self.fds[script_fd].closed:
                raise self.bad(
                    ev.line, f"runtime error in socket call: duplicate fd {script_fd} in script"
                )
            tracked = TrackedSocket(SOCKET_NEW, family=domain, protocol=proto or 6)
            tracked.script_fd = script_fd
            nonblock = bool(stype & SOCK_NONBLOCK)
            self.fds[script_fd] = FdState(script_fd, sock, nonblock=nonblock, tracked=tracked)
            self.sockets.append(tracked)
            self.sut = tracked
            return script_fd

        return self._op(fn, None, False)

    def _bind_addr(self) -> tuple[Any, ...]:
        if self.config.ip_version == "ipv4":
            return (self.local_ip, self.config.bind_port)
        if self.config.ip_version == "ipv4-mapped-ipv6":
            return ("::ffff:" + self.local_ip, self.config.bind_port, 0, 0)
        return (self.local_ip, self.config.bind_port, 0, 0)

    def _connect_addr(self) -> tuple[Any, ...]:
        if self.config.ip_version == "ipv4":
            return (self.remote_ip, self.config.connect_port)
        if self.config.ip_version == "ipv4-mapped-ipv6":
            return ("::ffff:" + self.remote_ip, self.config.connect_port, 0, 0)
        return (self.remote_ip, self.config.connect_port, 0, 0)

    def _parsed(self, sock: Socket, addr: tuple[Any, ...]) -> tuple[int, int]:
        from netstack.socket.socket import parse_inet6_addr, parse_inet_addr

        if sock.family == 10:
            a, port, _, _ = parse_inet6_addr(None, addr)
            return a, port
        return parse_inet_addr(addr)

    def sys_bind(
        self, ev: Event, spec: SyscallSpec, args: list[Expr]
    ) -> Callable[[], _CallResult | None]:
        self._nargs(ev, spec, args, 3)
        fd = self._fd(ev, spec, args[0])
        self._ellipsis(ev, spec, args[1])
        addr = self._parsed(fd.sock, self._bind_addr())

        def fn() -> int:
            fd.sock.sock.bind(*addr)
            return 0

        return self._op(fn, None, False)

    def sys_listen(
        self, ev: Event, spec: SyscallSpec, args: list[Expr]
    ) -> Callable[[], _CallResult | None]:
        self._nargs(ev, spec, args, 2)
        fd = self._fd(ev, spec, args[0])
        backlog = self.int_expr(ev, args[1])

        def fn() -> int:
            fd.sock.listen(backlog)
            if fd.tracked is not None:
                fd.tracked.state = SOCKET_PASSIVE_LISTENING
            return 0

        return self._op(fn, None, False)

    def sys_accept(
        self, ev: Event, spec: SyscallSpec, args: list[Expr]
    ) -> Callable[[], _CallResult | None]:
        self._nargs(ev, spec, args, 3)
        fd = self._fd(ev, spec, args[0])
        script_fd = self.int_expr(ev, spec.result)

        def fn() -> int:
            listener: Any = fd.sock.sock
            child = listener.accept()
            sock = Socket(self.net, child)
            peer_ip, peer_port = child.inet_daddr, child.inet_dport
            v = self.config.wire_version
            peer = peer_ip.to_bytes(4 if v == 4 else 16, "big") if isinstance(peer_ip, int) else b""
            for ts in self.sockets:
                if ts.state in (SOCKET_PASSIVE_SYNACK_SENT, SOCKET_PASSIVE_SYNACK_ACKED) and (
                    ts.live_remote_port == peer_port and (not peer or ts.live_remote_ip == peer)
                ):
                    if script_fd >= 0:
                        ts.script_fd = script_fd
                        self.fds[script_fd] = FdState(script_fd, sock, tracked=ts)
                    return script_fd if script_fd >= 0 else 4
            raise self.bad(
                ev.line,
                "runtime error in accept call: unable to find socket matching accept() call",
            )

        return self._op(fn, fd, False)

    def sys_connect(
        self, ev: Event, spec: SyscallSpec, args: list[Expr]
    ) -> Callable[[], _CallResult | None]:
        self._nargs(ev, spec, args, 3)
        fd = self._fd(ev, spec, args[0])
        sk: Any = fd.sock.sock
        unspec = args[1].kind != "ellipsis" and self.int_expr(ev, args[1]) == 0
        started = [False]
        addr = self._parsed(fd.sock, self._connect_addr())

        def fn() -> int:
            if unspec:
                sk.disconnect()
                if fd.tracked is not None:
                    fd.tracked.state = SOCKET_NEW
                return 0
            if not started[0]:
                t = fd.tracked
                if t is not None and t.state == SOCKET_NEW:
                    t.state = SOCKET_ACTIVE_CONNECTING
                    t.live_remote_ip = self.wire_remote
                    t.live_remote_port = self.config.connect_port
                    self.sut = t
                sk.connect(*addr)
                started[0] = True
                if fd.nonblock and not getattr(sk, "defer_connect", False):
                    # (TCP_FASTOPEN_CONNECT with a cookie: connect() is done, the SYN waits)
                    raise OSError(EINPROGRESS, "Operation now in progress")
            if not inet_stream_connect_result(sk):
                raise _Blocked(True)
            return 0

        return self._op(fn, fd, True)

    def _recv(
        self, ev: Event, spec: SyscallSpec, fd: FdState, count: int, flags: int
    ) -> Callable[[], _CallResult | None]:
        sk: Any = fd.sock.sock

        def fn() -> int:
            data, _addr, _mflags, _anc = sk.recvmsg(count, flags & ~MSG_DONTWAIT)
            return len(data)

        return self._op(fn, fd, False, nonblock=bool(flags & MSG_DONTWAIT))

    def sys_read(
        self, ev: Event, spec: SyscallSpec, args: list[Expr]
    ) -> Callable[[], _CallResult | None]:
        self._nargs(ev, spec, args, 3)
        fd = self._fd(ev, spec, args[0])
        return self._recv(ev, spec, fd, self.int_expr(ev, args[2]), 0)

    def sys_recv(
        self, ev: Event, spec: SyscallSpec, args: list[Expr]
    ) -> Callable[[], _CallResult | None]:
        self._nargs(ev, spec, args, 4)
        fd = self._fd(ev, spec, args[0])
        return self._recv(ev, spec, fd, self.int_expr(ev, args[2]), self.int_expr(ev, args[3]))

    def sys_recvfrom(
        self, ev: Event, spec: SyscallSpec, args: list[Expr]
    ) -> Callable[[], _CallResult | None]:
        self._nargs(ev, spec, args, 6)
        fd = self._fd(ev, spec, args[0])
        return self._recv(ev, spec, fd, self.int_expr(ev, args[2]), self.int_expr(ev, args[3]))

    def _iov_total(self, ev: Event, spec: SyscallSpec, e: Expr) -> int:
        if e.kind != "list":
            raise self.bad(
                ev.line,
                f"runtime error in {spec.name} call: Bad type; actual: {e.kind} expected: list",
            )
        total = 0
        for _, item in e.items:
            if item.kind != "struct" or item.tag != "iovec":
                raise self.bad(
                    ev.line,
                    f"runtime error in {spec.name} call: "
                    f"Bad type; actual: {item.kind} expected: iovec",
                )
            total += self.int_expr(ev, item.items[1][1])
        return total

    def sys_readv(
        self, ev: Event, spec: SyscallSpec, args: list[Expr]
    ) -> Callable[[], _CallResult | None]:
        self._nargs(ev, spec, args, 3)
        fd = self._fd(ev, spec, args[0])
        return self._recv(ev, spec, fd, self._iov_total(ev, spec, args[1]), 0)

    def _msghdr_total(self, ev: Event, spec: SyscallSpec, e: Expr) -> int:
        if e.kind != "struct" or e.tag != "msghdr":
            raise self.bad(
                ev.line,
                f"runtime error in {spec.name} call: Bad type; actual: {e.kind} expected: msghdr",
            )
        items = dict(e.items)
        if "msg_control" in items and items["msg_control"].items:
            raise Unsupported(
                f"{self.path}:{ev.line}: unsupported: msg_control (ancillary data) in {spec.name}",
                path=self.path,
                line=ev.line,
            )
        iov = items.get("msg_iov")
        return self._iov_total(ev, spec, iov) if iov is not None else 0

    def sys_recvmsg(
        self, ev: Event, spec: SyscallSpec, args: list[Expr]
    ) -> Callable[[], _CallResult | None]:
        self._nargs(ev, spec, args, 3)
        fd = self._fd(ev, spec, args[0])
        total = self._msghdr_total(ev, spec, args[1])
        return self._recv(ev, spec, fd, total, self.int_expr(ev, args[2]))

    def _send(
        self, ev: Event, spec: SyscallSpec, fd: FdState, count: int, flags: int
    ) -> Callable[[], _CallResult | None]:
        sk: Any = fd.sock.sock
        sent = [0]
        nonblock = bool(flags & MSG_DONTWAIT) or fd.nonblock
        dest: tuple[int, int] | None = None
        sflags = [flags & ~MSG_DONTWAIT]
        if flags & MSG_FASTOPEN:
            # sendto(..., MSG_FASTOPEN, ...): connects to packetdrill's remote end
            dest = self._parsed(fd.sock, self._connect_addr())

        def fn() -> int:
            if nonblock and (sflags[0] & MSG_FASTOPEN or sk.defer_connect):
                sflags[0] |= MSG_DONTWAIT  # a non-blocking Fast Open connect: EINPROGRESS
            t = fd.tracked
            if dest is not None and t is not None and t.state == SOCKET_NEW:
                t.state = SOCKET_ACTIVE_CONNECTING
                t.live_remote_ip = self.wire_remote
                t.live_remote_port = self.config.connect_port
                self.sut = t
            # a blocking write queues everything before it returns (sk_stream_wait_memory)
            while sent[0] < count:
                try:
                    n = sk.sendmsg(bytes(count - sent[0]), dest, sflags[0])
                except (SockWouldBlock, _Blocked):
                    if sent[0] and nonblock:
                        return sent[0]
                    raise
                except OSError:
                    if sent[0]:
                        return sent[0]
                    raise
                sflags[0] &= ~(MSG_FASTOPEN | MSG_DONTWAIT)  # connected: the rest is a write
                sent[0] += n
                if nonblock:
                    return sent[0]
            return sent[0]

        return self._op(fn, fd, True, nonblock=bool(flags & MSG_DONTWAIT))

    def sys_write(
        self, ev: Event, spec: SyscallSpec, args: list[Expr]
    ) -> Callable[[], _CallResult | None]:
        self._nargs(ev, spec, args, 3)
        fd = self._fd(ev, spec, args[0])
        return self._send(ev, spec, fd, self.int_expr(ev, args[2]), 0)

    def sys_send(
        self, ev: Event, spec: SyscallSpec, args: list[Expr]
    ) -> Callable[[], _CallResult | None]:
        self._nargs(ev, spec, args, 4)
        fd = self._fd(ev, spec, args[0])
        return self._send(ev, spec, fd, self.int_expr(ev, args[2]), self.int_expr(ev, args[3]))

    def sys_sendto(
        self, ev: Event, spec: SyscallSpec, args: list[Expr]
    ) -> Callable[[], _CallResult | None]:
        self._nargs(ev, spec, args, 6)
        fd = self._fd(ev, spec, args[0])
        return self._send(ev, spec, fd, self.int_expr(ev, args[2]), self.int_expr(ev, args[3]))

    def sys_writev(
        self, ev: Event, spec: SyscallSpec, args: list[Expr]
    ) -> Callable[[], _CallResult | None]:
        self._nargs(ev, spec, args, 3)
        fd = self._fd(ev, spec, args[0])
        return self._send(ev, spec, fd, self._iov_total(ev, spec, args[1]), 0)

    def sys_sendmsg(
        self, ev: Event, spec: SyscallSpec, args: list[Expr]
    ) -> Callable[[], _CallResult | None]:
        self._nargs(ev, spec, args, 3)
        fd = self._fd(ev, spec, args[0])
        total = self._msghdr_total(ev, spec, args[1])
        return self._send(ev, spec, fd, total, self.int_expr(ev, args[2]))

    def sys_close(
        self, ev: Event, spec: SyscallSpec, args: list[Expr]
    ) -> Callable[[], _CallResult | None]:
        self._nargs(ev, spec, args, 1)
        fd = self._fd(ev, spec, args[0])

        def fn() -> int:
            fd.sock.close()
            fd.closed = True
            return 0

        return self._op(fn, None, False)

    def sys_shutdown(
        self, ev: Event, spec: SyscallSpec, args: list[Expr]
    ) -> Callable[[], _CallResult | None]:
        self._nargs(ev, spec, args, 2)
        fd = self._fd(ev, spec, args[0])
        how = self.int_expr(ev, args[1])

        def fn() -> int:
            fd.sock.shutdown(how)
            return 0

        return self._op(fn, None, False)

    def _optval(self, ev: Event, spec: SyscallSpec, e: Expr) -> int | bytes:
        if e.kind == "list":
            return self._bracketed(ev, spec, e)
        if e.kind == "string":
            return str(e.value).encode()
        if e.kind == "struct" and e.tag == "linger":
            items = dict(e.items)
            onoff = self.int_expr(ev, items["onoff"])
            linger = self.int_expr(ev, items["linger"])
            return struct.pack("<ii", onoff, linger)
        if e.kind == "int":
            return self.int_expr(ev, e)
        raise Unsupported(
            f"{self.path}:{ev.line}: unsupported: a {e.kind} option value in {spec.name}",
            path=self.path,
            line=ev.line,
        )

    def sys_setsockopt(
        self, ev: Event, spec: SyscallSpec, args: list[Expr]
    ) -> Callable[[], _CallResult | None]:
        self._nargs(ev, spec, args, 5)
        fd = self._fd(ev, spec, args[0])
        level = self.int_expr(ev, args[1])
        opt = self.int_expr(ev, args[2])
        val = self._optval(ev, spec, args[3])

        def fn() -> int:
            fd.sock.setsockopt(level, opt, val)
            return 0

        return self._op(fn, None, False)

    def sys_getsockopt(
        self, ev: Event, spec: SyscallSpec, args: list[Expr]
    ) -> Callable[[], _CallResult | None]:
        self._nargs(ev, spec, args, 5)
        fd = self._fd(ev, spec, args[0])
        level = self.int_expr(ev, args[1])
        opt = self.int_expr(ev, args[2])
        want = args[3]
        optlen = self._bracketed(ev, spec, args[4])
        if want.kind not in ("list", "string"):
            raise Unsupported(
                f"{self.path}:{ev.line}: unsupported: getsockopt of a {want.kind} value "
                '(the runner compares [int] and "string" values)',
                path=self.path,
                line=ev.line,
            )
        if want.kind == "list" and optlen != 4:
            raise self.bad(
                ev.line,
                f"runtime error in getsockopt call: Unsupported getsockopt optlen: {optlen}",
            )
        expected = self._optval(ev, spec, want)

        def fn() -> int:
            got = fd.sock.getsockopt(level, opt, optlen)
            if isinstance(expected, int):
                value = (
                    got
                    if isinstance(got, int)
                    else int.from_bytes(bytes(got)[:4].ljust(4, b"\0"), "little", signed=True)
                )
                if value != expected:
                    raise _Mismatch(f"Bad getsockopt optval: expected: {expected} actual: {value}")
            else:
                raw = got if isinstance(got, bytes) else int(got).to_bytes(4, "little")
                raw = raw[:optlen].ljust(optlen, b"\0")
                if raw != expected.ljust(optlen, b"\0")[:optlen] or len(expected) != optlen:
                    if len(expected) != optlen:
                        raise _Mismatch(
                            "Bad getsockopt optval: expected optlen "
                            f"({optlen} bytes) does not match length of expected optval string "
                            f"'{expected.decode(errors='replace')}' ({len(expected)} bytes)"
                        )
                    shown = raw.rstrip(b"\0").decode(errors="replace")
                    raise _Mismatch(
                        f"Bad getsockopt optval: expected: '{expected.decode(errors='replace')}' "
                        f"actual: '{shown}'"
                    )
            return 0

        attempt = self._op(fn, None, False)

        def checked() -> _CallResult | None:
            try:
                return attempt()
            except _Mismatch as m:
                raise self.fail(ev.line, f"runtime error in getsockopt call: {m}") from None

        return checked

    def sys_fcntl(
        self, ev: Event, spec: SyscallSpec, args: list[Expr]
    ) -> Callable[[], _CallResult | None]:
        self._nargs(ev, spec, args, 2, 3)
        fd = self._fd(ev, spec, args[0])
        cmd = self.int_expr(ev, args[1])
        arg = self.int_expr(ev, args[2]) if len(args) == 3 else 0

        def fn() -> int:
            if cmd == F_GETFL:
                return O_RDWR | (O_NONBLOCK if fd.nonblock else 0)
            if cmd == F_SETFL:
                fd.nonblock = bool(arg & O_NONBLOCK)
                return 0
            if cmd in (F_GETFD, F_SETFD):
                return 0
            raise OSError(_errno.EINVAL, "Invalid argument")

        return self._op(fn, None, False)

    def sys_ioctl(
        self, ev: Event, spec: SyscallSpec, args: list[Expr]
    ) -> Callable[[], _CallResult | None]:
        self._nargs(ev, spec, args, 2, 3)
        fd = self._fd(ev, spec, args[0])
        cmd = self.int_expr(ev, args[1])
        want = self._bracketed(ev, spec, args[2]) if len(args) == 3 else None
        sk: Any = fd.sock.sock

        def fn() -> int:
            if cmd == 0x541B:  # SIOCINQ / FIONREAD
                if sk.state == 10:
                    raise OSError(_errno.EINVAL, "Invalid argument")
                value = (sk.rcv_nxt - sk.copied_seq) & M32
            elif cmd == 0x5411:  # SIOCOUTQ
                value = (sk.write_seq - sk.snd_una) & M32 if sk.state != 10 else 0
            elif cmd == 0x894B:  # SIOCOUTQNSD
                value = (sk.write_seq - sk.snd_nxt) & M32 if sk.state != 10 else 0
            elif cmd == 0x5421:  # FIONBIO
                fd.nonblock = bool(want)
                return 0
            else:
                raise Unsupported(
                    f"{self.path}:{ev.line}: unsupported: ioctl {cmd:#x} (the runner has "
                    "SIOCINQ/FIONREAD, SIOCOUTQ, SIOCOUTQNSD and FIONBIO)",
                    path=self.path,
                    line=ev.line,
                )
            if want is not None and value != want:
                raise _Mismatch(f"Bad ioctl optval: expected: {want} actual: {value}")
            return 0

        attempt = self._op(fn, None, False)

        def checked() -> _CallResult | None:
            try:
                return attempt()
            except _Mismatch as m:
                raise self.fail(ev.line, f"runtime error in ioctl call: {m}") from None

        return checked

    def sys_poll(
        self, ev: Event, spec: SyscallSpec, args: list[Expr]
    ) -> Callable[[], _CallResult | None]:
        self._nargs(ev, spec, args, 3)
        fds_e = args[0]
        if fds_e.kind != "list":
            raise self.bad(
                ev.line, "runtime error in poll call: Bad type; actual: {fds_e.kind} expected: list"
            )
        entries = []
        for _, item in fds_e.items:
            if item.kind != "struct" or item.tag != "pollfd":
                raise self.bad(ev.line, "runtime error in poll call: Bad type; expected: pollfd")
            d = dict(item.items)
            pfd = self._fd(ev, spec, d["fd"])
            events = self.int_expr(ev, d["events"])
            revents = self.int_expr(ev, d["revents"]) if "revents" in d else 0
            entries.append((pfd, events, revents))
        nfds = self.int_expr(ev, args[1])
        timeout_ms = self.int_expr(ev, args[2])
        if nfds != len(entries):
            raise self.bad(
                ev.line,
                f"runtime error in poll call: nfds {nfds} does not match "
                f"{len(entries)}-element pollfd array",
            )
        start = trio.current_time()

        def masks() -> list[int]:
            return [_tcp_poll(e[0].sock.sock) & (e[1] | 0x18) for e in entries]

        def attempt() -> _CallResult | None:
            got = masks()
            ready = sum(1 for m in got if m)
            expired = timeout_ms >= 0 and trio.current_time() >= start + timeout_ms / 1000 - 1e-12
            if not ready and not expired:
                return None
            for i, (m, (_pfd, _events, revents)) in enumerate(zip(got, entries, strict=True)):
                if m != revents:
                    raise self.fail(
                        ev.line,
                        f"runtime error in poll call: Expected revents of {_poll_str(revents)} "
                        f"but got {_poll_str(m)} for pollfd {i}",
                    )
            return _CallResult(ready)

        async def waiter() -> None:
            with trio.move_on_at(start + timeout_ms / 1000 if timeout_ms >= 0 else float("inf")):
                async with trio.open_nursery() as n:
                    for pfd, _e, _r in entries:
                        n.start_soon(_wake_on, pfd.sock.sock, n.cancel_scope)

        attempt.waiter = waiter  # type: ignore[attr-defined]
        return attempt


class _Mismatch(Exception):
    """A getsockopt/ioctl value differed from the script's."""


async def _wake_on(sk: Any, scope: trio.CancelScope) -> None:
    async with trio.open_nursery() as n:

        async def r() -> None:
            await sk.wait_readable()
            scope.cancel()

        async def w() -> None:
            await sk.wait_writable()
            scope.cancel()

        n.start_soon(r)
        n.start_soon(w)


_POLL_NAMES: Final = (
    (0x1, "POLLIN"), (0x2, "POLLPRI"), (0x4, "POLLOUT"), (0x8, "POLLERR"), (0x10, "POLLHUP"),
    (0x20, "POLLNVAL"), (0x40, "POLLRDNORM"), (0x80, "POLLRDBAND"), (0x100, "POLLWRNORM"),
    (0x200, "POLLWRBAND"), (0x400, "POLLMSG"), (0x2000, "POLLRDHUP"),
)  # fmt: skip


def _poll_str(mask: int) -> str:
    names = [n for bit, n in _POLL_NAMES if mask & bit]
    return "|".join(names) if names else "0"


@kernel("net/ipv4/tcp.c", "tcp_poll")
def _tcp_poll(sk: Any) -> int:
    """The poll mask of a TCP socket. Kernel: net/ipv4/tcp.c, tcp_poll()."""
    state = sk.state
    if state == 10:  # TCP_LISTEN: inet_csk_listen_poll()
        return 0x1 | 0x40 if sk.accept_queue else 0
    mask = 0
    shutdown = sk.sk_shutdown
    if shutdown == 3 or state == 7:
        mask |= 0x10  # POLLHUP
    if shutdown & 1:
        mask |= 0x1 | 0x40 | 0x2000
    if state != 2 and (state != 3 or sk.fastopen_rsk is not None):  # connected or Fast Open
        if (sk.rcv_nxt - sk.copied_seq) & M32:
            mask |= 0x1 | 0x40
        if not shutdown & 2:
            if sk.writable():
                mask |= 0x4 | 0x100
        else:
            mask |= 0x4 | 0x100
    elif state == 2 and sk.defer_connect:  # a deferred Fast Open connect: write() sends the SYN
        mask |= 0x4 | 0x100
    if sk.sk_err:
        mask |= 0x8
    return mask


def _anchored(ev: Event) -> bool:
    a = ev.action
    return isinstance(a, TcpPacketSpec) and a.direction == "inbound"


def _absolute(ev: Event) -> bool:
    return ev.time_type in ("absolute", "absolute_range")


def _find_ts(options: list[TcpOption]) -> TcpOption | None:
    found = None
    for o in options:
        if o.kind == 8 and len(o.data) == 8:
            found = o
    return found


def _offset_sack_blocks(options: list[TcpOption], offset: int) -> None:
    for o in options:
        if o.kind == 5:
            d = bytearray(o.data)
            for i in range(0, len(d) - 7, 8):
                for j in (i, i + 4):
                    v = (int.from_bytes(d[j : j + 4], "big") + offset) & M32
                    d[j : j + 4] = v.to_bytes(4, "big")
            o.data = bytes(d)


def _verify_fragment(
    cur: Packet, prev: Packet, cur_payload: int, sniffed: int, total: int
) -> str | None:
    """packetdrill's verify_packet_fragments() (the non-strict header check)."""
    if cur.doff != prev.doff:
        return (
            f"live packet field tcp_data_offset: expected: {prev.doff} ({prev.doff:#x}) vs "
            f"actual: {cur.doff} ({cur.doff:#x})"
        )
    for name, bit in (
        ("tcp_syn", 2),
        ("tcp_rst", 4),
        ("tcp_ack", 16),
        ("tcp_urg", 32),
        ("tcp_ece", 64),
    ):
        e, a = int(bool(prev.flags & bit)), int(bool(cur.flags & bit))
        if e != a:
            return f"live packet field {name}: expected: {e} ({e:#x}) vs actual: {a} ({a:#x})"
    want_seq = (prev.seq + len(prev.payload)) & M32
    if cur.seq != want_seq:
        return (
            f"live packet field tcp_seq: expected: {want_seq} ({want_seq:#x}) vs "
            f"actual: {cur.seq} ({cur.seq:#x})"
        )
    if cur.ack != prev.ack:
        return (
            f"live packet field tcp_ack_seq: expected: {prev.ack} ({prev.ack:#x}) vs "
            f"actual: {cur.ack} ({cur.ack:#x})"
        )
    if cur_payload < total - sniffed and cur_payload != len(prev.payload):
        return (
            f"fragment payload: expected {len(prev.payload)} bytes vs actual {cur_payload} bytes; "
            f"total payload: expected {total} bytes vs actual {cur_payload + sniffed} bytes"
        )
    return None


def _aggregate(parts: list[Packet]) -> Packet:
    """packetdrill's aggregate_packets(): the last packet's headers, the first's seq and CWR."""
    first, last = parts[0], parts[-1]
    out = last.copy()
    out.payload = b"".join(p.payload for p in parts)
    out.seq = first.seq
    out.flags = (out.flags & ~TCP_CWR) | (first.flags & TCP_CWR)
    return out


def errno_name(err: int) -> str:
    return ERRNO_NAMES.get(err, str(err))
