"""The packetdrill runner against the *real* Linux kernel, to compare netstack with it.

Theory of operation: :class:`LinuxRunner` is the netstack runner with its
backend swapped, the way packetdrill itself runs: a real tun device
(``IFF_TUN | IFF_NO_PI | IFF_VNET_HDR``, ``TUNSETOFFLOAD`` as packetdrill sets
it) in the current network namespace, real sockets, real time (Trio's normal
clock) and ``getsockopt(TCP_INFO)``. The script interpreter — parsing, script ↔
live mapping, packet checks, timing checks, reports — is the same code, so a
script that passes here and fails on netstack shows a difference of netstack's
TCP, not of two interpreters. Run it as root inside a fresh namespace::

    ip netns add pd && ip netns exec pd python tests/packetdrill/linux_kernel.py X.pkt

It prints one JSON line per script. ``test_linux_agreement`` in
``test_packetdrill_scripts.py`` drives it (and skips without root or tun).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import select
import socket
import struct
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import trio

from netstack.testing.packetdrill import cmdline_options
from netstack.userspace.packetdrill import load_script
from netstack.userspace.packetdrill.errors import PacketdrillError, ScriptFailure, Unsupported
from netstack.userspace.packetdrill.runner import (
    SOCKET_ACTIVE_CONNECTING,
    SOCKET_NEW,
    SOCKET_PASSIVE_LISTENING,
    SOCKET_PASSIVE_SYNACK_ACKED,
    SOCKET_PASSIVE_SYNACK_SENT,
    FdState,
    Runner,
    TrackedSocket,
    _CallResult,
)
from netstack.userspace.packetdrill.script import Event, Expr, SyscallSpec

TUNSETIFF = 0x400454CA
TUNSETOFFLOAD = 0x400454D0
IFF_TUN, IFF_NO_PI, IFF_VNET_HDR = 0x0001, 0x1000, 0x4000
TUN_F_ALL = 0x01 | 0x02 | 0x04 | 0x08
MSG_FASTOPEN = 0x20000000
VNET_HDR = struct.Struct("=BBHHHH")  # flags, gso_type, hdr_len, gso_size, csum_start, csum_off

# struct tcp_info (include/uapi/linux/tcp.h) of 6.18, to tcpi_received_ce_bytes
_TCP_INFO_FIELDS = (
    "B:state",
    "B:ca_state",
    "B:retransmits",
    "B:probes",
    "B:backoff",
    "B:options",
    "B:wscale",
    "B:flags",
    "I:rto",
    "I:ato",
    "I:snd_mss",
    "I:rcv_mss",
    "I:unacked",
    "I:sacked",
    "I:lost",
    "I:retrans",
    "I:fackets",
    "I:last_data_sent",
    "I:last_ack_sent",
    "I:last_data_recv",
    "I:last_ack_recv",
    "I:pmtu",
    "I:rcv_ssthresh",
    "I:rtt",
    "I:rttvar",
    "I:snd_ssthresh",
    "I:snd_cwnd",
    "I:advmss",
    "I:reordering",
    "I:rcv_rtt",
    "I:rcv_space",
    "I:total_retrans",
    "Q:pacing_rate",
    "Q:max_pacing_rate",
    "Q:bytes_acked",
    "Q:bytes_received",
    "I:segs_out",
    "I:segs_in",
    "I:notsent_bytes",
    "I:min_rtt",
    "I:data_segs_in",
    "I:data_segs_out",
    "Q:delivery_rate",
    "Q:busy_time",
    "Q:rwnd_limited",
    "Q:sndbuf_limited",
    "I:delivered",
    "I:delivered_ce",
    "Q:bytes_sent",
    "Q:bytes_retrans",
    "I:dsack_dups",
    "I:reord_seen",
    "I:rcv_ooopack",
    "I:snd_wnd",
    "I:rcv_wnd",
    "I:rehash",
    "H:total_rto",
    "H:total_rto_recoveries",
    "I:total_rto_time",
    "H:accecn_fail_mode",  # 6.18: AccECN, 280 bytes with the padding
    "H:accecn_opt_seen",
    "I:received_ce",
    "I:delivered_e1_bytes",
    "I:delivered_e0_bytes",
    "I:delivered_ce_bytes",
    "I:received_e1_bytes",
    "I:received_e0_bytes",
    "I:received_ce_bytes",
)
_TCP_INFO = struct.Struct("=" + "".join(f.split(":")[0] for f in _TCP_INFO_FIELDS))


def _sh(cmd: str) -> None:
    subprocess.run(cmd, shell=True, check=True, capture_output=True)


class LinuxRunner(Runner):
    """The runner with the real kernel under test (see the module docstring)."""

    tun_fd = -1

    def setup(self) -> None:
        fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
        ifr = struct.pack("16sH", b"tun0", IFF_TUN | IFF_NO_PI | IFF_VNET_HDR)
        fcntl.ioctl(fd, TUNSETIFF, ifr)
        fcntl.ioctl(fd, TUNSETOFFLOAD, TUN_F_ALL)
        self.tun_fd = fd
        cfg = self.config
        if cfg.mtu != 1500:
            _sh(f"ip link set tun0 mtu {cfg.mtu}")
        _sh("ip link set lo up; ip link set tun0 up")
        if cfg.wire_version == 4:
            _sh(f"ip addr add {self.local_ip}/16 dev tun0")
            _sh(f"ip route add {self.remote_ip}/32 dev tun0")
        else:
            _sh(f"ip -6 addr add {self.local_ip}/48 dev tun0 nodad")
            _sh(f"ip -6 route add {self.remote_ip}/128 dev tun0")

    async def run(self) -> None:
        failure: list[BaseException] = []
        async with trio.open_nursery() as n:
            n.start_soon(self._reader)
            try:
                await super().run()
            except PacketdrillError as e:
                failure.append(e)
            finally:
                n.cancel_scope.cancel()
        if failure:
            raise failure[0]

    async def _reader(self) -> None:
        while True:
            await trio.lowlevel.wait_readable(self.tun_fd)
            try:
                data = os.read(self.tun_fd, 70000)
            except BlockingIOError:
                continue
            self._on_packet(data[VNET_HDR.size :], trio.current_time())

    def inject(self, packet: bytes) -> None:
        mss = self.config.mss
        gso_type = 0
        if mss:
            gso_type = 1 if packet[0] >> 4 == 4 else 4  # VIRTIO_NET_HDR_GSO_TCPV4 / TCPV6
        os.write(self.tun_fd, VNET_HDR.pack(0, gso_type, 0, mss, 0, 0) + packet)

    def run_command(self, line: int, command: str, *, init: bool = False) -> None:
        r = subprocess.run(command, shell=True, capture_output=True, text=True)
        if r.returncode:
            raise ScriptFailure(
                f"{self.path}:{line}: error executing `{command}` command: {r.stderr.strip()}"
            )

    def tcp_info(self, fd: FdState) -> dict[str, int] | None:
        raw = fd.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 512)
        raw = raw.ljust(_TCP_INFO.size, b"\0")[: _TCP_INFO.size]
        values = dict(
            zip((f.split(":")[1] for f in _TCP_INFO_FIELDS), _TCP_INFO.unpack(raw), strict=True)
        )
        out = {f"tcpi_{k}": v for k, v in values.items() if k not in ("wscale", "flags")}
        out["tcpi_snd_wscale"] = values["wscale"] & 0xF
        out["tcpi_rcv_wscale"] = values["wscale"] >> 4
        # tcpi_delivery_rate_app_limited:1, tcpi_fastopen_client_fail:2
        out["tcpi_delivery_rate_app_limited"] = values["flags"] & 1
        out["tcpi_fastopen_client_fail"] = (values["flags"] >> 1) & 3
        return out

    # -- system calls on real sockets -----------------------------------------------------
    def _real(
        self, fn: Callable[[], int], fd: FdState | None, write: bool, *, nonblock: bool = False
    ) -> Callable[[], _CallResult | None]:
        def attempt() -> _CallResult | None:
            try:
                return _CallResult(fn())
            except BlockingIOError as e:
                if e.errno != errno.EAGAIN:
                    return _CallResult(-1, e.errno or 0)
                if nonblock or (fd is not None and fd.nonblock):
                    return _CallResult(-1, errno.EAGAIN)
                return None
            except OSError as e:
                return _CallResult(-1, e.errno or 0)

        if fd is not None:
            s = fd.sock

            async def waiter() -> None:
                if write:
                    await trio.lowlevel.wait_writable(s)
                else:
                    await trio.lowlevel.wait_readable(s)

            attempt.waiter = waiter  # type: ignore[attr-defined]
        return attempt

    def sys_socket(self, ev: Event, spec: SyscallSpec, args: list[Expr]) -> Any:
        domain = (
            self.config.socket_family if args[0].kind == "ellipsis" else self.int_expr(ev, args[0])
        )
        stype = self.int_expr(ev, args[1])
        proto = self.int_expr(ev, args[2])
        script_fd = self.int_expr(ev, spec.result)

        def fn() -> int:
            s = socket.socket(domain, stype & 0xF, proto)
            s.setblocking(False)
            t = TrackedSocket(SOCKET_NEW, family=domain)
            t.script_fd = script_fd
            self.fds[script_fd] = FdState(script_fd, s, nonblock=bool(stype & 0o4000), tracked=t)
            self.sockets.append(t)
            self.sut = t
            return script_fd

        return self._real(fn, None, False)

    def sys_bind(self, ev: Event, spec: SyscallSpec, args: list[Expr]) -> Any:
        fd = self._fd(ev, spec, args[0])
        return self._real(lambda: fd.sock.bind(self._bind_addr()) or 0, None, False)

    def sys_listen(self, ev: Event, spec: SyscallSpec, args: list[Expr]) -> Any:
        fd = self._fd(ev, spec, args[0])
        backlog = self.int_expr(ev, args[1])

        def fn() -> int:
            fd.sock.listen(backlog)
            if fd.tracked is not None:
                fd.tracked.state = SOCKET_PASSIVE_LISTENING
            return 0

        return self._real(fn, None, False)

    def sys_accept(self, ev: Event, spec: SyscallSpec, args: list[Expr]) -> Any:
        fd = self._fd(ev, spec, args[0])
        script_fd = self.int_expr(ev, spec.result)

        def fn() -> int:
            conn, addr = fd.sock.accept()
            conn.setblocking(False)
            port = addr[1]
            for ts in self.sockets:
                if ts.state in (SOCKET_PASSIVE_SYNACK_SENT, SOCKET_PASSIVE_SYNACK_ACKED) and (
                    ts.live_remote_port == port
                ):
                    ts.script_fd = script_fd
                    self.fds[script_fd] = FdState(script_fd, conn, tracked=ts)
                    return script_fd
            raise self.bad(ev.line, "runtime error in accept call: no socket matches accept()")

        return self._real(fn, fd, False)

    def sys_connect(self, ev: Event, spec: SyscallSpec, args: list[Expr]) -> Any:
        fd = self._fd(ev, spec, args[0])
        started = [False]

        def fn() -> int:
            s = fd.sock
            if not started[0]:
                t = fd.tracked
                if t is not None and t.state == SOCKET_NEW:
                    t.state = SOCKET_ACTIVE_CONNECTING
                    t.live_remote_ip = self.wire_remote
                    t.live_remote_port = self.config.connect_port
                    self.sut = t
                started[0] = True
                err = s.connect_ex(self._connect_addr())
                if err == errno.EINPROGRESS:
                    if fd.nonblock:
                        return -errno.EINPROGRESS
                    raise BlockingIOError(errno.EAGAIN, "would block")
                if err:
                    raise OSError(err, os.strerror(err))
                return 0
            _, w, _ = select.select([], [s], [], 0)
            if not w:
                raise BlockingIOError(errno.EAGAIN, "would block")
            err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                raise OSError(err, os.strerror(err))
            return 0

        inner = self._real(fn, fd, True)

        def attempt() -> _CallResult | None:
            r = inner()
            if r is not None and r.value == -errno.EINPROGRESS:
                return _CallResult(-1, errno.EINPROGRESS)
            return r

        attempt.waiter = inner.waiter  # type: ignore[attr-defined]
        return attempt

    def _recv(self, ev: Event, spec: SyscallSpec, fd: FdState, count: int, flags: int) -> Any:
        return self._real(lambda: len(fd.sock.recv(count, flags)), fd, False)

    def _send(self, ev: Event, spec: SyscallSpec, fd: FdState, count: int, flags: int) -> Any:
        sent = [0]
        fastopen = [bool(flags & MSG_FASTOPEN)]
        flags &= ~MSG_FASTOPEN

        def fn() -> int:
            if fastopen[0]:  # sendto(..., MSG_FASTOPEN, ...): a connect with data
                fastopen[0] = False
                t = fd.tracked
                if t is not None and t.state == SOCKET_NEW:
                    t.state = SOCKET_ACTIVE_CONNECTING
                    t.live_remote_ip = self.wire_remote
                    t.live_remote_port = self.config.connect_port
                    self.sut = t
                try:
                    sent[0] += fd.sock.sendto(
                        bytes(count), flags | MSG_FASTOPEN, self._connect_addr()
                    )
                except BlockingIOError as e:
                    if e.errno == errno.EINPROGRESS and fd.nonblock:
                        raise OSError(errno.EINPROGRESS, os.strerror(errno.EINPROGRESS)) from None
                    raise
                if fd.nonblock:
                    return sent[0]
            while sent[0] < count:
                try:
                    sent[0] += fd.sock.send(bytes(count - sent[0]), flags)
                except BlockingIOError:
                    if sent[0] and fd.nonblock:
                        return sent[0]
                    raise
                if fd.nonblock:
                    break
            return sent[0]

        return self._real(fn, fd, True)

    def sys_close(self, ev: Event, spec: SyscallSpec, args: list[Expr]) -> Any:
        fd = self._fd(ev, spec, args[0])

        def fn() -> int:
            fd.sock.close()
            fd.closed = True
            return 0

        return self._real(fn, None, False)

    def sys_shutdown(self, ev: Event, spec: SyscallSpec, args: list[Expr]) -> Any:
        fd = self._fd(ev, spec, args[0])
        how = self.int_expr(ev, args[1])
        return self._real(lambda: fd.sock.shutdown(how) or 0, None, False)

    def sys_setsockopt(self, ev: Event, spec: SyscallSpec, args: list[Expr]) -> Any:
        fd = self._fd(ev, spec, args[0])
        level, opt = self.int_expr(ev, args[1]), self.int_expr(ev, args[2])
        val = self._optval(ev, spec, args[3])
        return self._real(lambda: fd.sock.setsockopt(level, opt, val) or 0, None, False)

    def sys_getsockopt(self, ev: Event, spec: SyscallSpec, args: list[Expr]) -> Any:
        fd = self._fd(ev, spec, args[0])
        level, opt = self.int_expr(ev, args[1]), self.int_expr(ev, args[2])
        want = self._optval(ev, spec, args[3])
        optlen = self._bracketed(ev, spec, args[4])

        def fn() -> int:
            if isinstance(want, int):
                got = fd.sock.getsockopt(level, opt)
                if got != want:
                    raise ScriptFailure(
                        f"{self.path}:{ev.line}: runtime error in getsockopt call: "
                        f"Bad getsockopt optval: expected: {want} actual: {got}"
                    )
            else:
                raw = fd.sock.getsockopt(level, opt, optlen)
                if raw.rstrip(b"\0") != want.rstrip(b"\0"):
                    raise ScriptFailure(
                        f"{self.path}:{ev.line}: runtime error in getsockopt call: "
                        f"Bad getsockopt optval: expected: '{want.decode()}' "
                        f"actual: '{raw.rstrip(bytes(1)).decode()}'"
                    )
            return 0

        return self._real(fn, None, False)

    def sys_ioctl(self, ev: Event, spec: SyscallSpec, args: list[Expr]) -> Any:
        fd = self._fd(ev, spec, args[0])
        cmd = self.int_expr(ev, args[1])
        want = self._bracketed(ev, spec, args[2]) if len(args) == 3 else None

        def fn() -> int:
            (value,) = struct.unpack("i", fcntl.ioctl(fd.sock.fileno(), cmd, bytes(4)))
            if want is not None and value != want:
                raise ScriptFailure(
                    f"{self.path}:{ev.line}: runtime error in ioctl call: "
                    f"Bad ioctl optval: expected: {want} actual: {value}"
                )
            return 0

        return self._real(fn, None, False)

    def sys_poll(self, ev: Event, spec: SyscallSpec, args: list[Expr]) -> Any:
        raise Unsupported(f"{self.path}:{ev.line}: unsupported in the Linux comparison: poll")


def _cmdline(path: str) -> list[tuple[str, str | None]]:
    with open(path, encoding="utf-8") as f:
        return cmdline_options(f.read())


async def _main(argv: list[str]) -> None:
    extra = [(a[2:].partition("=")[0], a.partition("=")[2] or None) for a in argv if a[:2] == "--"]
    paths = [a for a in argv if a[:2] != "--"]
    for path in paths:
        status, message = "pass", ""
        try:
            options = _cmdline(path)
            script, config = load_script(path, [*options, *extra])
            out: list[str] = []
            try:
                await LinuxRunner(None, script, config, output=out.append).run()  # type: ignore[arg-type]
            finally:
                for line in out:
                    print("#", line, flush=True)
        except ScriptFailure as e:
            status, message = "fail", e.message
        except PacketdrillError as e:
            status, message = "error", e.message
        print(json.dumps({"path": path, "status": status, "message": message}), flush=True)


if __name__ == "__main__":
    trio.run(_main, sys.argv[1:])
