"""``ping``'s output, byte for byte, as iputils 20221126 printed it on Linux 6.18.

The recorded texts were made with the real ``ping`` (``ping from iputils
20221126``) on a ping socket (``SOCK_DGRAM``/``IPPROTO_ICMP``, as netstack's
``ping`` uses: run as an unprivileged user, ``net.ipv4.ping_group_range``
open to it; as root it takes a raw socket, which also reads the ICMP errors
themselves and so prints ``pipe 4`` where a ping socket prints ``pipe 3``)
in a network namespace laid out
as ``h1`` of ``routed_hosts`` is: ``10.0.1.1/24`` on a veth whose peer answers
nothing. Only the ``time …ms`` of the statistics line varies between runs; it
is masked when netstack's output is compared with the recording, and checked
exactly on netstack's virtual clock.

- ``10.0.1.9`` never resolves: the kernel gives up on ARP after three
  probes a second apart, and each queued echo request comes back on the error
  queue as an ``EHOSTUNREACH`` with an ICMP host-unreachable from the local
  address (``ip_error``/``icmp_send`` of ``neigh_invalidate``), which
  ``ping4_receive_error`` prints as ``From 10.0.1.1 icmp_seq=N Destination
  Host Unreachable`` and counts in ``+N errors``; exit status 1, since no
  reply came (``finish()`` returns ``!nreceived``).
- No route: the ``connect()`` probe fails before any probe is sent:
  ``ping: connect: Network is unreachable`` on stderr, exit status 2.
- ``-W``: with no reply at all ping lingers ``-W`` seconds (10 by default)
  after its last probe.
- ``finish()`` ends the rtt/pipe line with a newline even when it has nothing
  on it: a summary without figures ends with an empty line.

As root with ``ping`` and ``ip`` installed, :func:`test_linux_prints_the_same`
reruns the commands in a fresh namespace and compares them with the recording.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import AsyncIterator
from subprocess import PIPE

import attrs
import pytest
import trio
import trio.testing

import netstack
from netstack.labs.session import Session
from netstack.testing import routed_hosts

_TIME = re.compile(rb", time \d+ms\n")


def _mask(out: bytes) -> bytes:
    return _TIME.sub(b", time Tms\n", out)


# (ping's arguments, exit status, stdout, stderr, seconds it took) of the real ping.
REAL: list[tuple[str, int, bytes, bytes, float]] = [
    (
        "-c 2 -i 0.2 10.0.1.9",
        1,
        b"PING 10.0.1.9 (10.0.1.9) 56(84) bytes of data.\n"
        b"From 10.0.1.1 icmp_seq=1 Destination Host Unreachable\n"
        b"From 10.0.1.1 icmp_seq=2 Destination Host Unreachable\n"
        b"\n"
        b"--- 10.0.1.9 ping statistics ---\n"
        b"2 packets transmitted, 0 received, +2 errors, 100% packet loss, time 212ms\n"
        b"pipe 2\n",
        b"",
        3.0,
    ),
    (
        "-c 1 10.0.1.9",
        1,
        b"PING 10.0.1.9 (10.0.1.9) 56(84) bytes of data.\n"
        b"From 10.0.1.1 icmp_seq=1 Destination Host Unreachable\n"
        b"\n"
        b"--- 10.0.1.9 ping statistics ---\n"
        b"1 packets transmitted, 0 received, +1 errors, 100% packet loss, time 0ms\n"
        b"\n",
        b"",
        3.0,
    ),
    (
        "-q -c 1 10.0.1.9",
        1,
        b"PING 10.0.1.9 (10.0.1.9) 56(84) bytes of data.\n"
        b"\n"
        b"--- 10.0.1.9 ping statistics ---\n"
        b"1 packets transmitted, 0 received, +1 errors, 100% packet loss, time 0ms\n"
        b"\n",
        b"",
        3.0,
    ),
    (
        "-c 5 10.0.1.9",
        1,
        b"PING 10.0.1.9 (10.0.1.9) 56(84) bytes of data.\n"
        b"From 10.0.1.1 icmp_seq=1 Destination Host Unreachable\n"
        b"From 10.0.1.1 icmp_seq=2 Destination Host Unreachable\n"
        b"From 10.0.1.1 icmp_seq=3 Destination Host Unreachable\n"
        b"From 10.0.1.1 icmp_seq=4 Destination Host Unreachable\n"
        b"From 10.0.1.1 icmp_seq=5 Destination Host Unreachable\n"
        b"\n"
        b"--- 10.0.1.9 ping statistics ---\n"
        b"5 packets transmitted, 0 received, +5 errors, 100% packet loss, time 4083ms\n"
        b"pipe 3\n",
        b"",
        # the entry fails at 3 s, and ping reads the three errors (2 in flight after
        # the 3rd probe: pipe 3) before its 4th probe, which starts a new resolution
        # that fails at 6 s with the 5th probe queued too (ping.py: the timer softirq
        # of an instant runs before the process it wakes)
        6.0,
    ),
    (
        # -W 1: the probes are gone before ARP gives up (at 3 s): no error reached ping
        "-c 2 -W 1 10.0.1.9",
        1,
        b"PING 10.0.1.9 (10.0.1.9) 56(84) bytes of data.\n"
        b"\n"
        b"--- 10.0.1.9 ping statistics ---\n"
        b"2 packets transmitted, 0 received, 100% packet loss, time 1020ms\n"
        b"\n",
        b"",
        2.0,
    ),
    (
        # a permanent neighbour that never answers: the default -W, 10 s
        "-c 1 10.0.1.8",
        1,
        b"PING 10.0.1.8 (10.0.1.8) 56(84) bytes of data.\n"
        b"\n"
        b"--- 10.0.1.8 ping statistics ---\n"
        b"1 packets transmitted, 0 received, 100% packet loss, time 0ms\n"
        b"\n",
        b"",
        10.0,
    ),
    ("-c 1 192.168.7.7", 2, b"", b"ping: connect: Network is unreachable\n", 0.0),
]
IDS = [args for args, *_ in REAL]
# What Linux prints instead when its timer wheel runs ping's wait out (SO_RCVTIMEO,
# 1 s after the 3rd probe) a tick before the neighbour's timer fails it (both round
# up to the wheel's 32 ms granularity at HZ=250; seen under load): the 4th probe
# finds sk_err set (sock_alloc_send_pskb → sock_error), no error ever reports it,
# and ping lingers 10 s. netstack's virtual clock has no such skew: the tie goes to
# the timer softirq, the outcome above (the unloaded machine's, 5 runs of 5).
RACY: dict[str, tuple[int, bytes, bytes]] = {
    "-c 5 10.0.1.9": (
        1,
        b"PING 10.0.1.9 (10.0.1.9) 56(84) bytes of data.\n"
        b"From 10.0.1.1 icmp_seq=1 Destination Host Unreachable\n"
        b"From 10.0.1.1 icmp_seq=2 Destination Host Unreachable\n"
        b"From 10.0.1.1 icmp_seq=3 Destination Host Unreachable\n"
        b"From 10.0.1.1 icmp_seq=5 Destination Host Unreachable\n"
        b"\n"
        b"--- 10.0.1.9 ping statistics ---\n"
        b"5 packets transmitted, 0 received, +4 errors, 100% packet loss, time 4074ms\n"
        b"pipe 3\n",
        b"ping: sendmsg: No route to host\n",
    )
}
SETUP = [
    "ip route del default",  # h1 has only its link: 192.168.7.7 has no route
    "ip neigh add 10.0.1.8 lladdr 02:00:00:00:00:08 dev eth0 nud permanent",
]


@attrs.define
class Shell:
    session: Session
    stdout: list[str]
    stderr: list[str]

    async def run(self, line: str) -> tuple[int, bytes, bytes]:
        self.stdout.clear()
        self.stderr.clear()
        status = await self.session.run_line(line)
        out = "".join(s + "\n" for s in self.stdout).encode()
        return status, out, "".join(s + "\n" for s in self.stderr).encode()


@pytest.fixture
async def shell(lab: netstack.Lab) -> AsyncIterator[Shell]:
    routed_hosts(lab)  # h1 10.0.1.1/24 on eth0 — router — h2
    stdout: list[str] = []
    stderr: list[str] = []
    async with trio.open_nursery() as nursery:
        clock = trio.lowlevel.current_clock()
        assert isinstance(clock, trio.testing.MockClock)
        session = Session(lab, nursery, out=stdout.append, err=stderr.append, clock=clock)
        sh = Shell(session, stdout, stderr)
        for line in SETUP:
            assert await sh.run(f"h1 {line}") == (0, b"", b"")
        yield sh
        nursery.cancel_scope.cancel()
    clock.autojump_threshold = 0


@pytest.mark.parametrize(("args", "status", "stdout", "stderr", "took"), REAL, ids=IDS)
async def test_ping_prints_what_iputils_prints(
    shell: Shell,
    autojump_clock: trio.testing.MockClock,
    args: str,
    status: int,
    stdout: bytes,
    stderr: bytes,
    took: float,
) -> None:
    t0 = trio.current_time()
    got_status, got_out, got_err = await shell.run(f"h1 ping {args}")
    assert (got_status, _mask(got_out), got_err) == (status, _mask(stdout), stderr)
    assert trio.current_time() - t0 == took
    # the virtual clock's own figure: probes exactly -i apart (1 s by default)
    times = {"-c 2 -i 0.2 10.0.1.9": 200, "-c 5 10.0.1.9": 4000, "-c 2 -W 1 10.0.1.9": 1000}
    if stdout:
        assert f", time {times.get(args, 0)}ms\n".encode() in got_out


def _can_run_linux() -> str | None:
    if not (hasattr(os, "geteuid") and os.geteuid() == 0):
        return "needs root for a network namespace"
    for tool in ("ip", "ping", "setpriv"):
        if not shutil.which(tool):
            return f"needs {tool}(8)"
    return None


_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"]


def _namespace(ns: str, peer: str) -> None:
    """h1's link: 10.0.1.1/24 on a veth whose peer is up and answers nothing."""
    subprocess.run(["ip", "netns", "add", peer], check=True)
    for line in (
        f"link add eth0 netns {ns} type veth peer name eth0 netns {peer}",
        f"-n {ns} link set lo up",
        f"-n {ns} addr add 10.0.1.1/24 dev eth0",
        f"-n {ns} link set eth0 up",
        f"-n {peer} link set eth0 up",
        f"-n {ns} neigh add 10.0.1.8 lladdr 02:00:00:00:00:08 dev eth0 nud permanent",
    ):
        subprocess.run(["ip", *line.split()], check=True, capture_output=True)
    subprocess.run(
        ["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.ping_group_range=0 2147483647"],
        check=True,
    )


def test_linux_prints_the_same() -> None:
    why = _can_run_linux()
    if why is not None:
        pytest.skip(why)
    # a namespace pair per command, all run at once (the longest takes 10 s)
    # (named per process: another checkout's run at once must not delete this one's)
    tag = os.getpid()
    names = [(f"nsping-{tag}-{i}", f"nsping-{tag}-{i}p") for i in range(len(REAL))]
    for n in (n for pair in names for n in pair):
        subprocess.run(["ip", "netns", "del", n], capture_output=True)
    if subprocess.run(["ip", "netns", "add", names[0][0]], capture_output=True).returncode:
        pytest.skip("cannot create a network namespace")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for i, ((ns, peer), (args, *_)) in enumerate(zip(names, REAL, strict=True)):
            if i:
                subprocess.run(["ip", "netns", "add", ns], check=True)
            _namespace(ns, peer)
            # an unprivileged user: iputils' ping takes a ping socket, as netstack's does
            argv = ["ip", "netns", "exec", ns, *_NOBODY, "ping", *args.split()]
            env = {**os.environ, "LC_ALL": "C"}
            procs.append(subprocess.Popen(argv, stdout=PIPE, stderr=PIPE, env=env))
        for p, (args, status, stdout, stderr, _took) in zip(procs, REAL, strict=True):
            out, err = p.communicate(timeout=30)
            got = (p.returncode, _mask(out), err)
            if args in RACY and got != (status, _mask(stdout), stderr):
                status, stdout, stderr = RACY[args]
            assert got == (status, _mask(stdout), stderr), args
    finally:
        for p in procs:  # a failed comparison leaves the others running: no leaked pipes
            if p.poll() is None:
                p.kill()
            p.communicate()
        for n in (n for pair in names for n in pair):
            subprocess.run(["ip", "netns", "del", n], capture_output=True)
