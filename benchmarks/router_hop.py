"""What one IPv4 router hop costs: a UDP stream direct over veth, and through a router.

The same batched stream (200-byte payload, ``sendmmsg``/``recvmmsg`` 64 per
call, functional mode) runs twice:

* direct: ``a`` 10.0.0.1 ── veth ── ``b`` 10.0.0.2;
* routed: ``a`` 10.0.1.1 ── veth ── ``r`` (``net.ipv4.ip_forward=1``) ── veth ──
  ``b`` 10.0.2.1, default routes via ``r``.

The hop's cost is (routed − direct) per packet: the router's NAPI poll,
``__netif_receive_skb_core``, ``ip_rcv`` → ``ip_rcv_finish`` →
``ip_route_input_noref`` → ``ip_forward`` → ``ip_forward_finish`` →
``ip_output`` → ``ip_finish_output2`` → ``dev_queue_xmit`` → ``veth_xmit``.
Printed in CPU-time µs (noisy on a shared machine) and, with
``--callgrind``, in instructions per packet: four runs under ``valgrind
--tool=callgrind`` (``PYTHONHASHSEED=0``), 0 and N packets each way, so
start-up and the lab's construction cancel.

As root, ``--kernel`` also measures the real kernel the same way: three
network namespaces joined by veth pairs, a Python sender and receiver
(``send``/``recv``, one datagram per call, as Python has no ``sendmmsg``).
The figure is the difference per packet, routed less direct, of the CPU time
(user + system, ``wait4``'s rusage) of the sending and the receiving
process. With veth the router's work runs in softirq on the sending CPU, at
the sender's ``local_bh_enable``, and without ``CONFIG_IRQ_TIME_ACCOUNTING``
that time is charged to the sender; with it (or when ``ksoftirqd`` takes
over under load) the hop's cost is missed. Without root the line says it
was skipped.

With ``--bystander``, the input route a host makes for an ARP request it
overhears (``arp_process`` routes the target from the sender): a host of the
10,000-host lab (``10.0.0.1/24`` on ``eth0``, a default route, no
forwarding) routes ``10.0.0.2`` from ``10.0.0.3`` N times —
``ip_route_input_noref`` → ``fib_lookup`` → ``no_route``, an unreachable
``rtable`` made and dropped each time, as the kernel's. With
``--callgrind``, the instructions per lookup (two runs under callgrind,
counting on only around N lookups and around none).

    python benchmarks/router_hop.py [--packets N] [--callgrind] [--kernel] [--profile]
    python benchmarks/router_hop.py --bystander [--lookups N] [--callgrind]

The labs are opened as by default, with the NAPI polls a transmit raises at
its ``local_bh_enable`` (``netstack.core.napi``: the router's poll and
forward, and ``b``'s poll, in the sender's ``sendmmsg``, as the kernel runs
them on the sender's CPU); ``--no-bh-polls`` opens them with
``polls_at_bh_enable=False`` (each NAPI instance polled by its task), for
comparison. Each figure's line says which.

The issue's target: a hop of at most 3 µs, i.e. at most 25,000 instructions.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import subprocess
import sys
import time
from pathlib import Path

import netstack
from netstack.core.skbuff import SkBuff
from netstack.ipv4 import ipv4_of
from netstack.ipv4.route import ip_route_input_noref
from netstack.wire.ipv4 import aton

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import anchors, stream

TARGET_US = 3.0
TARGET_INSTRUCTIONS = 25_000
# polls at local_bh_enable (module doc): the lab's default; --no-bh-polls turns them off
BH_POLLS = True


def polls_note() -> str:
    """Which receive the runs measure, for the printed lines."""
    return "polls at local_bh_enable" if BH_POLLS else "NAPI tasks (--no-bh-polls)"


async def run_once(packets: int, routed: bool) -> tuple[float, int]:
    """CPU seconds of one batched run of *packets* datagrams, and drops."""
    async with netstack.open_lab(polls_at_bh_enable=BH_POLLS) as lab:
        a, b = lab.add_host("a"), lab.add_host("b")
        if routed:
            r = lab.add_host("r")
            lab.add_link("a:eth0", "r:eth0")
            lab.add_link("r:eth1", "b:eth0")
            a.ip("addr add 10.0.1.1/24 dev eth0")
            r.ip("addr add 10.0.1.254/24 dev eth0")
            r.ip("addr add 10.0.2.254/24 dev eth1")
            b.ip("addr add 10.0.2.1/24 dev eth0")
            a.ip("route add default via 10.0.1.254")
            b.ip("route add default via 10.0.2.254")
            r.sysctl("net.ipv4.ip_forward=1")
            dst = "10.0.2.1"
        else:
            lab.add_link("a:eth0", "b:eth0")
            a.ip("addr add 10.0.0.1/24 dev eth0")
            b.ip("addr add 10.0.0.2/24 dev eth0")
            dst = "10.0.0.2"
        _, cpu = await stream.udp_stream(a, b, dst, packets)
        drops = a.dev("eth0").statistics().tx_dropped + b.snmp()["Udp"].RcvbufErrors
        if routed:
            fwd = r.snmp()["Ip"].ForwDatagrams
            if fwd != packets + 1:
                raise RuntimeError(f"router forwarded {fwd}, expected {packets + 1}")
        return cpu, drops


def callgrind_instructions(packets: int, routed: bool) -> int:
    """Instructions of one run under callgrind."""
    one = "routed" if routed else "direct"
    polls = "--bh-polls" if BH_POLLS else "--no-bh-polls"
    return anchors.callgrind_instructions(
        [__file__, "--packets", str(packets), "--one", one, polls]
    )


def callgrind(packets: int) -> float:
    """The hop in instructions per packet (routed less direct), printed and returned."""
    per = {}
    for routed in (False, True):
        base = callgrind_instructions(0, routed)
        total = callgrind_instructions(packets, routed)
        per[routed] = (total - base) / packets
    hop = per[True] - per[False]
    print(
        f"callgrind, {packets} packets less 0: direct {per[False]:,.0f}, routed "
        f"{per[True]:,.0f} instructions per packet; the hop {hop:,.0f} instructions "
        f"(target ≤ {TARGET_INSTRUCTIONS:,}; {polls_note()})"
    )
    return hop


def cpu_times(packets: int, profile: bool) -> float:
    """The hop in µs of CPU per packet (routed less direct), printed and returned."""
    per = {}
    for routed in (False, True):
        if profile and routed:
            prof = cProfile.Profile()
            prof.enable()
        cpu, drops = netstack.run(run_once, packets, routed)
        if profile and routed:
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(30)
        per[routed] = 1e6 * cpu / packets
        print(
            f"{'routed' if routed else 'direct'}: {packets} packets, CPU {cpu:6.2f} s = "
            f"{per[routed]:5.2f} µs/packet ({drops} dropped)"
        )
    print(
        f"netstack: the hop {per[True] - per[False]:.2f} µs of CPU per packet "
        f"(target ≤ {TARGET_US} µs; {polls_note()})"
    )
    return per[True] - per[False]


# ---------------------------------------------------------------------------
# A bystander's route of an overheard ARP request's target
# ---------------------------------------------------------------------------


async def bystander_once(lookups: int, instrument: bool) -> float:
    """CPU seconds of *lookups* input routes of another host's address."""
    async with netstack.open_lab() as lab:
        h = lab.add_host("h", sysctls={"net.ipv6.conf.all.disable_ipv6": 1})
        lab.add_host("leaf", sysctls={"net.ipv6.conf.all.disable_ipv6": 1})
        lab.add_link("h:eth0", "leaf:p0")
        h.ip("addr add 10.0.0.1/24 dev eth0")
        h.ip("route add default via 10.0.0.254")
        ipv4 = ipv4_of(h.net)
        dev = h.dev("eth0")
        skb = SkBuff(bytearray(64), 0, 64)
        tip, sip = aton("10.0.0.2"), aton("10.0.0.3")

        def loop(n: int) -> None:
            for _ in range(n):
                # arp_process's route of the target, then consume_skb's dst drop
                ip_route_input_noref(ipv4, skb, tip, sip, 0, dev)
                skb.dst.release()  # type: ignore[union-attr]
                skb.dst = None

        loop(64)  # the interpreter's specialised instructions warm up
        if instrument:
            stream.callgrind_instrumentation(True)
        start = time.process_time()
        loop(lookups)
        cpu = time.process_time() - start
        if instrument:
            stream.callgrind_instrumentation(False)
        if ipv4.in_no_route != lookups + 64:
            raise RuntimeError(f"in_no_route {ipv4.in_no_route}, expected {lookups + 64}")
        return cpu


def bystander(lookups: int, callgrind_: bool) -> None:
    """Print a bystander's route of an ARP target, in µs or in instructions."""
    if not callgrind_:
        cpu = netstack.run(bystander_once, lookups, False)
        print(f"bystander route: {lookups} lookups, {1e6 * cpu / lookups:.2f} µs of CPU each")
        return

    def count(n: int) -> int:
        argv = [__file__, "--bystander", "--lookups", str(n), "--one", "bystander"]
        return anchors.callgrind_instructions(argv, instr_atstart=False)

    per = (count(lookups) - count(0)) / lookups
    print(f"callgrind, {lookups} lookups less 0: {per:,.0f} instructions per bystander route")


# ---------------------------------------------------------------------------
# The real kernel
# ---------------------------------------------------------------------------

_SENDER = """
import socket, sys
n = int(sys.argv[1]); s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect((sys.argv[2], 9000)); p = b"\\x5a" * 200
for _ in range(n):
    try:
        s.send(p)
    except OSError:
        pass
"""

_RECEIVER = """
import socket, sys
n = int(sys.argv[1]); s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 24)
s.bind(("0.0.0.0", 9000)); s.settimeout(2.0); got = 0
print("ready", flush=True)
try:
    while got < n:
        s.recv(2048); got += 1
except OSError:
    pass
print(got, flush=True)
"""


def _sh(*cmd: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise OSError(f"{' '.join(cmd)}: {done.stderr.strip()}")


def _veth(ns: str, name: str, peer_ns: str, peer: str) -> None:
    _sh(*f"ip link add {name} netns {ns} type veth peer name {peer} netns {peer_ns}".split())


def _cpu_of(proc: subprocess.Popen[str]) -> float:
    """User + system CPU seconds of a finished child, from wait4()."""
    _pid, _status, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0
    return usage.ru_utime + usage.ru_stime


def _kernel_run(prefix: str, routed: bool, packets: int) -> tuple[float, int]:
    """CPU seconds of the sender and the receiver in one run, and datagrams received."""
    a, r, b = (f"{prefix}{x}" for x in "arb")
    names = [a, b] + ([r] if routed else [])
    for ns in names:
        _sh("ip", "netns", "add", ns)
    try:
        if routed:
            _veth(a, "a-r", r, "r-a")
            _veth(r, "r-b", b, "b-r")
            plan = [
                (a, "a-r", "10.0.1.1/24"),
                (r, "r-a", "10.0.1.254/24"),
                (r, "r-b", "10.0.2.254/24"),
                (b, "b-r", "10.0.2.1/24"),
            ]
            dst = "10.0.2.1"
        else:
            _veth(a, "a-b", b, "b-a")
            plan = [(a, "a-b", "10.0.0.1/24"), (b, "b-a", "10.0.0.2/24")]
            dst = "10.0.0.2"
        for ns, dev, addr in plan:
            _sh("ip", "-n", ns, "addr", "add", addr, "dev", dev)
            _sh("ip", "-n", ns, "link", "set", dev, "up")
        if routed:
            _sh("ip", "-n", a, "route", "add", "default", "via", "10.0.1.254")
            _sh("ip", "-n", b, "route", "add", "default", "via", "10.0.2.254")
            _sh("ip", "netns", "exec", r, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        # warm-up: ARP both ways
        _sh("ip", "netns", "exec", a, "ping", "-c1", "-W1", dst)
        rx = subprocess.Popen(
            ["ip", "netns", "exec", b, sys.executable, "-c", _RECEIVER, str(packets)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert rx.stdout is not None
        rx.stdout.readline()
        tx = subprocess.Popen(
            ["ip", "netns", "exec", a, sys.executable, "-c", _SENDER, str(packets), dst],
            text=True,
        )
        busy = _cpu_of(tx)
        got = int(rx.stdout.readline() or 0)
        busy += _cpu_of(rx)
        return busy, got
    finally:
        for ns in names:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def kernel_anchor(packets: int) -> float | None:
    """The real kernel's hop in µs of CPU per packet, or None when it cannot run."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        print("real kernel: skipped (needs root and iproute2 for ip netns)")
        return None
    prefix = f"rhop{os.getpid()}"
    try:
        per = {}
        for routed in (False, True):
            busy, got = _kernel_run(prefix, routed, packets)
            per[routed] = 1e6 * busy / packets
            print(
                f"real kernel {'routed' if routed else 'direct'}: {got}/{packets} received, "
                f"sender + receiver CPU {busy:.2f} s = {per[routed]:.2f} µs/packet"
            )
    except OSError as exc:
        print(f"real kernel: skipped ({exc})")
        return None
    print(
        f"real kernel: the hop {per[True] - per[False]:.2f} µs of CPU per packet "
        "(sender + receiver CPU; the router's softirq runs on the sender's)"
    )
    return per[True] - per[False]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=50_000)
    parser.add_argument("--profile", action="store_true", help="cProfile of the routed run")
    parser.add_argument(
        "--callgrind", action="store_true", help="instructions per packet under callgrind"
    )
    parser.add_argument("--kernel", action="store_true", help="also measure the real kernel")
    parser.add_argument(
        "--bystander", action="store_true", help="a bystander's route of an ARP target"
    )
    parser.add_argument("--lookups", type=int, default=2000, help="with --bystander")
    parser.add_argument(
        "--bh-polls",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="NAPI polls at the transmit's local_bh_enable (default: on, as a lab's)",
    )
    parser.add_argument("--one", choices=("direct", "routed", "bystander"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    global BH_POLLS
    BH_POLLS = args.bh_polls
    anchors.repeatable_scheduling()  # the same task order from the first step
    if args.one == "bystander":
        netstack.run(bystander_once, args.lookups, True)
        return
    if args.bystander:
        bystander(args.lookups, args.callgrind)
        return
    if args.one:
        netstack.run(run_once, args.packets, args.one == "routed")
        return
    if args.callgrind:
        packets = args.packets if args.packets != parser.get_default("packets") else 1280
        callgrind(packets)
        return
    cpu_times(args.packets, args.profile)
    if args.kernel:
        kernel_anchor(max(args.packets, 200_000))


if __name__ == "__main__":
    main()
