"""Anchors for the benchmarks: what Trio alone costs, and what the real kernel does.

A figure of netstack's means little alone on a shared machine; the benchmarks
print it beside two anchors measured in the same run, each per second of CPU
time (the figure a loaded machine moves least):

- **the Trio memory-channel floor** (:func:`trio_udp_floor`,
  :func:`trio_bulk_floor`): the same number of payload ``bytes`` objects (200
  bytes for UDP, one send's worth for TCP) pushed through a
  ``trio.open_memory_channel`` from a sender task to a receiver task, in lists
  of one batch per channel item when netstack's run is batched
  (``sendmmsg``/``recvmmsg``: one Trio checkpoint per batch) and one per item
  otherwise. No netstack emulation can beat it: it is the scheduling and the
  objects alone.
- **the kernel over veth** (:func:`kernel_udp`, :func:`kernel_tcp`,
  :func:`kernel_vxlan_ratio`): two network namespaces (``ip netns add``)
  joined by a veth pair, a sender and a receiver each a Python process run
  inside one with ``ip netns exec``, plain ``socket`` calls (for batches,
  ``sendmmsg``/``recvmmsg`` through ctypes: Python's ``socket`` has neither).
  Each process measures its own CPU time (``getrusage``: user and system,
  so the kernel's work in its context, softirqs included) around its loop,
  and the figure is per second of both processes' CPU time together, as
  netstack's is per second of its one process; the details give the system
  part, the kernel's own share (the rest is the Python loops; the split is
  sampled at the clock tick, so rough for runs of a few tens of
  milliseconds, while the total is exact). Softirq work the kernel
  defers to ``ksoftirqd`` is not counted (it happens when a core is
  saturated: the lines say how long ``ksoftirqd`` ran meanwhile, on the
  whole machine). It needs root; without it, or when ``ip netns add`` fails, the
  anchor says ``kernel anchor skipped: needs root and ip netns``. The
  namespaces have unique names and are deleted in a ``finally``.

There is no kernel anchor for GRE or IPIP: this machine's kernel has no
``ip_gre``/``ipip`` modules. VXLAN exists, so :func:`kernel_vxlan_ratio` gives
the kernel's cost of a packet through a VXLAN tunnel over the same veth
against the direct path, the kind of ratio the tunnel target is about.

:func:`callgrind_instructions` runs a command under ``valgrind
--tool=callgrind`` (``PYTHONHASHSEED=0``) and returns its instruction count;
the benchmarks subtract two runs of different lengths so start-up cancels.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import trio

PAYLOAD_LEN = 200
KERNEL_SKIPPED = "kernel anchor skipped: needs root and ip netns"
NO_TUNNEL_ANCHOR = "no anchor: no gre/ipip module"


@dataclass(frozen=True)
class Anchor:
    """One anchor's figure (``None`` when it did not run) in *unit*, with details."""

    name: str
    value: float | None
    unit: str
    detail: str = ""

    def line(self) -> str:
        """A line for the benchmark's output."""
        if self.value is None:
            return f"  anchor {self.name}: {self.detail}"
        fmt = f"{self.value:,.2f}" if self.value < 100 else f"{self.value:,.0f}"
        return f"  anchor {self.name}: {fmt} {self.unit}" + (
            f" ({self.detail})" if self.detail else ""
        )

    def short(self) -> str:
        """The figure alone, for a table cell."""
        if self.value is None:
            return f"{self.name}: skipped"
        fmt = f"{self.value:,.2f}" if self.value < 100 else f"{self.value:,.0f}"
        return f"{self.name} {fmt}"


# ---------------------------------------------------------------------------
# the Trio memory-channel floor


async def _udp_floor(packets: int, batch: int) -> None:
    send, recv = trio.open_memory_channel[list[bytes] | bytes](128)
    source = bytearray(b"\x5a" * PAYLOAD_LEN)

    async def receiver() -> None:
        received = 0
        async with recv:
            async for item in recv:
                received += len(item) if isinstance(item, list) else 1
        assert received == packets

    async with trio.open_nursery() as nursery:
        nursery.start_soon(receiver)
        async with send:
            sent = 0
            if batch > 1:
                while sent < packets:
                    n = min(batch, packets - sent)
                    await send.send([bytes(source) for _ in range(n)])
                    sent += n
            else:
                for _ in range(packets):
                    await send.send(bytes(source))


def trio_udp_floor(packets: int, batch: int) -> Anchor:
    """*packets* 200-byte ``bytes`` through a memory channel, *batch* to an item."""
    cpu = time.process_time()
    trio.run(_udp_floor, packets, batch)
    cpu = max(time.process_time() - cpu, 1e-9)
    mode = f"lists of {batch}" if batch > 1 else "one per item"
    return Anchor(
        "Trio memory-channel floor",
        packets / cpu,
        "packets/s per CPU s",
        f"{packets} × 200 B, {mode}, {cpu:.3f} s CPU",
    )


async def _bulk_floor(nbytes: int, send_size: int) -> None:
    send, recv = trio.open_memory_channel[bytes](16)
    source = bytearray(send_size)

    async def receiver() -> None:
        received = 0
        async with recv:
            async for item in recv:
                received += len(item)
        assert received == nbytes

    async with trio.open_nursery() as nursery:
        nursery.start_soon(receiver)
        async with send:
            sent = 0
            while sent < nbytes:
                n = min(send_size, nbytes - sent)
                await send.send(bytes(source[:n]) if n < send_size else bytes(source))
                sent += n


def trio_bulk_floor(mbytes: float, send_size: int) -> Anchor:
    """*mbytes* MB through a memory channel in ``bytes`` of *send_size* (one per send)."""
    nbytes = int(mbytes * (1 << 20))
    cpu = time.process_time()
    trio.run(_bulk_floor, nbytes, send_size)
    cpu = max(time.process_time() - cpu, 1e-9)
    return Anchor(
        "Trio memory-channel floor",
        nbytes * 8 / cpu / 1e9,
        "Gbit/s per CPU s",
        f"{nbytes >> 20} MB in sends of {send_size}, {cpu:.3f} s CPU",
    )


# ---------------------------------------------------------------------------
# the kernel over veth between two network namespaces

# ctypes' sendmmsg/recvmmsg for the child processes (struct mmsghdr, x86-64 and
# other LP64 Linux ABIs)
_MMSG = r"""
import ctypes, os
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
class msghdr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint32),
                ("iov", ctypes.POINTER(iovec)), ("iovlen", ctypes.c_size_t),
                ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                ("flags", ctypes.c_int)]
class mmsghdr(ctypes.Structure):
    _fields_ = [("hdr", msghdr), ("len", ctypes.c_uint)]
libc = ctypes.CDLL(None, use_errno=True)
def vector(bufs):
    iovs = (iovec * len(bufs))()
    msgs = (mmsghdr * len(bufs))()
    for i, b in enumerate(bufs):
        iovs[i].base = ctypes.cast(b, ctypes.c_void_p)
        iovs[i].len = len(b)
        msgs[i].hdr.iov = ctypes.pointer(iovs[i])
        msgs[i].hdr.iovlen = 1
    return iovs, msgs
"""

_UDP_RX = (
    _MMSG
    + r"""
import resource, socket, struct, sys
port, count, batch = map(int, sys.argv[1:4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)  # SO_RCVBUFFORCE
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", 3, 0))
s.bind(("0.0.0.0", port))
print("ready", flush=True)
got = 0
t0 = resource.getrusage(resource.RUSAGE_SELF)
if batch > 1:
    bufs = [ctypes.create_string_buffer(2048) for _ in range(batch)]
    iovs, msgs = vector(bufs)
    fd = s.fileno()
    while got < count:
        n = libc.recvmmsg(fd, msgs, batch, 0x10000, None)  # MSG_WAITFORONE
        if n < 0:
            break
        got += n
else:
    try:
        while got < count:
            s.recv(2048)
            got += 1
    except OSError:
        pass
t1 = resource.getrusage(resource.RUSAGE_SELF)
print(got, t1.ru_utime - t0.ru_utime, t1.ru_stime - t0.ru_stime, flush=True)
"""
)

_UDP_TX = (
    _MMSG
    + r"""
import resource, socket, sys, time
addr, port, count, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect((addr, port))
payload = b"\x5a" * 200
s.send(payload)  # ARP and routes warm up, as netstack's run does
time.sleep(0.2)
sent = 0
t0 = resource.getrusage(resource.RUSAGE_SELF)
if batch > 1:
    buf = ctypes.create_string_buffer(payload, 200)
    iovs, msgs = vector([buf] * batch)
    fd = s.fileno()
    while sent < count:
        n = libc.sendmmsg(fd, msgs, min(batch, count - sent), 0)
        if n < 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        sent += n
else:
    for _ in range(count):
        s.send(payload)
    sent = count
t1 = resource.getrusage(resource.RUSAGE_SELF)
print(sent, t1.ru_utime - t0.ru_utime, t1.ru_stime - t0.ru_stime, flush=True)
"""
)

_TCP_RX = r"""
import resource, socket, sys
port = int(sys.argv[1])
ls = socket.socket(socket.AF_INET6)
ls.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("::", port))
ls.listen(1)
print("ready", flush=True)
t0 = resource.getrusage(resource.RUSAGE_SELF)
c, _ = ls.accept()
buf = bytearray(1 << 20)
got = 0
while True:
    n = c.recv_into(buf)
    if not n:
        break
    got += n
t1 = resource.getrusage(resource.RUSAGE_SELF)
print(got, t1.ru_utime - t0.ru_utime, t1.ru_stime - t0.ru_stime, flush=True)
"""

_TCP_TX = r"""
import resource, socket, sys
addr, port, total, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
t0 = resource.getrusage(resource.RUSAGE_SELF)
s = socket.create_connection((addr, port))
chunk = b"\x5a" * size
sent = 0
while sent < total:
    n = min(size, total - sent)
    s.sendall(chunk if n == size else chunk[:n])
    sent += n
s.close()
t1 = resource.getrusage(resource.RUSAGE_SELF)
print(sent, t1.ru_utime - t0.ru_utime, t1.ru_stime - t0.ru_stime, flush=True)
"""


class KernelUnavailable(Exception):
    """The kernel anchor cannot run here (not root, no ``ip``, no namespaces)."""


def kernel_unavailable() -> str | None:
    """Why the kernel anchor cannot run, or ``None`` when it may."""
    if os.geteuid() != 0:
        return "not root"
    if shutil.which("ip") is None:
        return "no ip command"
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@dataclass(frozen=True)
class NetnsPair:
    """Two namespaces *a* and *b* joined by veth *dev_a* ─ *dev_b* (10.201.0.1 ─ .2)."""

    a: str
    b: str
    dev_a: str
    dev_b: str
    addr_a: str = "10.201.0.1"
    addr_b: str = "10.201.0.2"
    addr6_a: str = "2001:db8:201::1"
    addr6_b: str = "2001:db8:201::2"


@contextmanager
def netns_pair() -> Iterator[NetnsPair]:
    """Two fresh namespaces over a veth pair, deleted on the way out.

    Raises:
        KernelUnavailable: not root, no ``ip``, or ``ip netns add`` failed.
    """
    why = kernel_unavailable()
    if why is not None:
        raise KernelUnavailable(why)
    tag = uuid.uuid4().hex[:8]
    pair = NetnsPair(f"nsanc-a-{tag}", f"nsanc-b-{tag}", f"va{tag}", f"vb{tag}")
    made: list[str] = []
    try:
        for ns in (pair.a, pair.b):
            try:
                _ip("netns", "add", ns)
            except subprocess.CalledProcessError as e:
                raise KernelUnavailable(f"ip netns add: {e.stderr.strip()}") from e
            made.append(ns)
        try:
            _ip(
                "link", "add", pair.dev_a, "netns", pair.a,
                "type", "veth", "peer", "name", pair.dev_b, "netns", pair.b,
            )  # fmt: skip
            for ns, dev, addr, addr6 in (
                (pair.a, pair.dev_a, pair.addr_a, pair.addr6_a),
                (pair.b, pair.dev_b, pair.addr_b, pair.addr6_b),
            ):
                _ip("-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
                _ip("-n", ns, "-6", "addr", "add", f"{addr6}/64", "dev", dev, "nodad")
                _ip("-n", ns, "link", "set", dev, "up")
                _ip("-n", ns, "link", "set", "lo", "up")
        except subprocess.CalledProcessError as e:
            raise KernelUnavailable(f"{' '.join(e.cmd)}: {e.stderr.strip()}") from e
        yield pair
    finally:
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], check=False, capture_output=True)


def _child(ns: str, script: str, *args: object) -> subprocess.Popen[str]:
    cmd = ["ip", "netns", "exec", ns, sys.executable, "-c", script, *map(str, args)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@dataclass(frozen=True)
class ChildCpu:
    """What one child process counted, and its CPU seconds in user space and in the kernel."""

    count: int
    user: float
    system: float

    @property
    def cpu(self) -> float:
        return self.user + self.system


def _result(proc: subprocess.Popen[str], timeout: float) -> ChildCpu:
    out, err = proc.communicate(timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"kernel anchor child failed: {err.strip()}")
    count, user, system = out.split()[-3:]
    return ChildCpu(int(count), float(user), float(system))


def ksoftirqd_seconds() -> float:
    """CPU seconds the ``ksoftirqd/N`` threads have run (clock ticks, so 10 ms steps)."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # gone meanwhile
            continue
        comm_end = text.rfind(")")
        if not text[text.find("(") + 1 : comm_end].startswith("ksoftirqd/"):
            continue
        fields = text[comm_end + 2 :].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return total / os.sysconf("SC_CLK_TCK")


def _cpu_detail(tx: ChildCpu, rx: ChildCpu, softirqd: float) -> str:
    return (
        f"CPU {tx.cpu:.3f} s tx + {rx.cpu:.3f} s rx, "
        f"{tx.system + rx.system:.3f} s of it in the kernel; "
        f"ksoftirqd ran {softirqd:.2f} s meanwhile, not counted"
    )


def _ready(proc: subprocess.Popen[str]) -> None:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        _, err = proc.communicate()
        raise RuntimeError(f"kernel anchor receiver did not start: {err.strip()}")


def _udp_run(pair: NetnsPair, dst: str, packets: int, batch: int) -> tuple[int, ChildCpu, ChildCpu]:
    """(datagrams received, the sender's and the receiver's CPU) of one UDP run to *dst*."""
    rx = _child(pair.b, _UDP_RX, 9000, packets + 1, batch)  # and the warm-up
    try:
        _ready(rx)
        tx = _child(pair.a, _UDP_TX, dst, 9000, packets, batch)
        tx_cpu = _result(tx, 600)
        rx_cpu = _result(rx, 600)
    finally:
        if rx.poll() is None:
            rx.kill()
            rx.communicate()
    return max(rx_cpu.count - 1, 0), tx_cpu, rx_cpu


def _skipped(name: str, unit: str, why: str) -> Anchor:
    return Anchor(name, None, unit, f"{KERNEL_SKIPPED} ({why})")


def kernel_udp(packets: int, batch: int) -> Anchor:
    """The kernel: *packets* 200-byte datagrams over veth, ``sendmmsg`` of *batch* or ``send``."""
    name, unit = "kernel over veth", "packets/s per CPU s"
    try:
        with netns_pair() as pair:
            softirqd = ksoftirqd_seconds()
            received, tx_cpu, rx_cpu = _udp_run(pair, pair.addr_b, packets, batch)
            softirqd = ksoftirqd_seconds() - softirqd
    except KernelUnavailable as e:
        return _skipped(name, unit, str(e))
    cpu = max(tx_cpu.cpu + rx_cpu.cpu, 1e-9)
    calls = f"sendmmsg/recvmmsg of {batch}" if batch > 1 else "send/recv"
    return Anchor(
        name,
        received / cpu,
        unit,
        f"{calls}, {_cpu_detail(tx_cpu, rx_cpu, softirqd)}, {packets - received} dropped",
    )


def kernel_vxlan_ratio(packets: int, batch: int) -> Anchor:
    """The kernel's CPU per packet through VXLAN over the veth, as a multiple of direct."""
    name, unit = "kernel VXLAN / direct", "× the direct path's CPU per packet"
    try:
        with netns_pair() as pair:
            for ns, dev, local, remote, inner in (
                (pair.a, pair.dev_a, pair.addr_a, pair.addr_b, "10.202.0.1"),
                (pair.b, pair.dev_b, pair.addr_b, pair.addr_a, "10.202.0.2"),
            ):
                _ip(
                    "-n", ns, "link", "add", "vx0", "type", "vxlan", "id", "42",
                    "local", local, "remote", remote, "dstport", "4789", "dev", dev,
                )  # fmt: skip
                _ip("-n", ns, "addr", "add", f"{inner}/24", "dev", "vx0")
                _ip("-n", ns, "link", "set", "vx0", "up")
            d_rx, d_tx_cpu, d_rx_cpu = _udp_run(pair, pair.addr_b, packets, batch)
            v_rx, v_tx_cpu, v_rx_cpu = _udp_run(pair, "10.202.0.2", packets, batch)
    except KernelUnavailable as e:
        return _skipped(name, unit, str(e))
    except subprocess.CalledProcessError as e:
        return _skipped(name, unit, f"vxlan: {e.stderr.strip()}")
    direct = (d_tx_cpu.cpu + d_rx_cpu.cpu) / max(d_rx, 1)
    vxlan = (v_tx_cpu.cpu + v_rx_cpu.cpu) / max(v_rx, 1)
    return Anchor(
        name,
        vxlan / direct if direct > 0 else math.nan,
        unit,
        f"{1e6 * direct:.2f} µs direct, {1e6 * vxlan:.2f} µs VXLAN; {NO_TUNNEL_ANCHOR}",
    )


def kernel_tcp(
    mbytes: float,
    send_size: int,
    *,
    tso: str = "on",
    gso: str = "on",
    gro: str = "on",
    family: int = 4,
) -> Anchor:
    """The kernel: one TCP stream of *mbytes* MB over veth, ``sendall`` of *send_size*.

    Over IPv6 (addresses without DAD) when *family* is 6.

    *tso*, *gso* (the sender's veth) and *gro* (the receiver's) as ``ethtool -K``
    sets them, netstack's ``tcp_bulk.py`` configurations.
    """
    name, unit = "kernel over veth", "Gbit/s per CPU s"
    # Root and ``ip`` first: without them the anchor cannot run whatever else is here,
    # and that is the reason to give (ethtool is only the TCP anchor's own need).
    why = kernel_unavailable() or (None if shutil.which("ethtool") else "no ethtool")
    if why is not None:
        return _skipped(name, unit, why)
    nbytes = int(mbytes * (1 << 20))
    try:
        with netns_pair() as pair:
            for ns, dev, features in (
                (pair.a, pair.dev_a, ["tso", tso, "gso", gso]),
                (pair.b, pair.dev_b, ["gro", gro]),
            ):
                cmd = ["ip", "netns", "exec", ns, "ethtool", "-K", dev, *features]
                subprocess.run(cmd, check=True, capture_output=True)
            softirqd = ksoftirqd_seconds()
            rx = _child(pair.b, _TCP_RX, 5001)
            try:
                _ready(rx)
                dst = pair.addr6_b if family == 6 else pair.addr_b
                tx = _child(pair.a, _TCP_TX, dst, 5001, nbytes, send_size)
                tx_cpu = _result(tx, 600)
                rx_cpu = _result(rx, 600)
                softirqd = ksoftirqd_seconds() - softirqd
            finally:
                if rx.poll() is None:
                    rx.kill()
                    rx.communicate()
    except KernelUnavailable as e:
        return _skipped(name, unit, str(e))
    cpu = max(tx_cpu.cpu + rx_cpu.cpu, 1e-9)
    what = f"IPv{family}, TSO {tso}, GSO {gso}, GRO {gro}"
    return Anchor(
        name,
        rx_cpu.count * 8 / cpu / 1e9,
        unit,
        f"{rx_cpu.count >> 20} MB, sendall of {send_size}, {what}, "
        f"{_cpu_detail(tx_cpu, rx_cpu, softirqd)}",
    )


# ---------------------------------------------------------------------------
# callgrind


def repeatable_scheduling(seed: int = 0) -> None:
    """Trio's deterministic scheduling, seeded, from the run's first task step.

    A lab seeds Trio's scheduler only when it opens (``open_lab``); the steps
    before that, the first of which wakes ``main`` and Trio's
    ``run_sync_soon`` task together, run in Trio's own random order (it
    reverses a batch on a coin flip from an unseeded generator). The packets
    are the same either way, but the two orders leave different allocation
    histories behind them, and callgrind counts the difference. Each benchmark
    calls this first, so that a run under callgrind repeats.
    """
    from netstack.host.lab import seed_trio_scheduler

    seed_trio_scheduler(seed)


def callgrind_instructions(argv: Sequence[str], instr_atstart: bool = True) -> int:
    """Instructions of ``python argv…`` under callgrind (``PYTHONHASHSEED=0``);
    with *instr_atstart* False only what the program brackets with
    ``stream.callgrind_instrumentation`` is counted.

    Raises:
        RuntimeError: no ``valgrind`` here, or no count in its output.
    """
    if shutil.which("valgrind") is None:
        raise RuntimeError("callgrind needs valgrind, which is not installed")
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable]
    if not instr_atstart:
        cmd.insert(2, "--instr-atstart=no")
    env = dict(os.environ, PYTHONHASHSEED="0")
    out = subprocess.run([*cmd, *argv], env=env, capture_output=True, text=True, check=True)
    match = re.search(r"Collected : (\d+)", out.stderr)
    if match is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{out.stderr}")
    return int(match.group(1))


def verdict(value: float | None, target: float, at_least: bool) -> str:
    """``met`` or ``missed`` (or ``n/a``) for *value* against *target*."""
    if value is None or math.isnan(value):
        return "n/a"
    return "met" if (value >= target if at_least else value <= target) else "missed"
