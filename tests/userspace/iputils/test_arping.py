"""``arping`` at the prompt: replies, unicast after the first, DAD, announcements, errors
(the lines of iputils 20221126's arping, compared in namespaces)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest
import trio
import trio.testing
from helpers import Term

from netstack.host import mac_for
from netstack.userspace.iputils.arping import _elapsed


def mac(host: str, dev: str) -> str:
    return ":".join(f"{x:02X}" for x in mac_for(host, dev))


async def test_arping_replies(term: Term, autojump_clock: trio.testing.MockClock) -> None:
    t0 = trio.current_time()
    status, out = await term.run("h1 arping -c 2 -I eth0 10.0.1.254")
    assert status == 0
    assert out.split("\n") == [
        "ARPING 10.0.1.254 from 10.0.1.1 eth0",
        # the reply is received inside the request's transmit (the router's poll at
        # its local_bh_enable), read after sendto() returns: 0 µs, which recv_pack()'s
        # arithmetic prints as 0.500 ms (this machine's arping over a veth: 0.529ms)
        f"Unicast reply from 10.0.1.254 [{mac('router', 'eth0')}]  0.500ms",
        f"Unicast reply from 10.0.1.254 [{mac('router', 'eth0')}]  0.500ms",
        "Sent 2 probes (1 broadcast(s))",  # the second one went unicast
        "Received 2 response(s)",
    ]
    assert trio.current_time() - t0 == 2.0
    # by name, the device from the route; -f: stop at the first reply
    status, out = await term.run("h1 arping -f router")
    assert status == 0 and out.split("\n")[0] == "ARPING 10.0.1.254 from 10.0.1.1 eth0"
    assert out.endswith("Sent 1 probes (1 broadcast(s))\nReceived 1 response(s)")
    assert (await term.run("h1 arping -q -c 1 router")) == (0, "")


async def test_arping_no_answer_dad_and_unsolicited(
    term: Term, autojump_clock: trio.testing.MockClock
) -> None:
    assert await term.run("h1 arping -c 1 -w 1 10.0.1.9") == (
        1,
        "ARPING 10.0.1.9 from 10.0.1.1 eth0\nSent 1 probes (1 broadcast(s))\n"
        "Received 0 response(s)",
    )
    status, out = await term.run("h1 arping -D -c 1 -I eth0 10.0.1.254")
    assert status == 1 and out.startswith("ARPING 10.0.1.254 from 0.0.0.0 eth0\nUnicast reply")
    assert (await term.run("h1 arping -D -c 1 -I eth0 10.0.1.7"))[0] == 0  # the address is free
    status, out = await term.run("h1 arping -U -c 1 -I eth0 10.0.1.1")
    assert status == 0 and out.startswith("ARPING 10.0.1.1 from 10.0.1.1 eth0")
    # with arp_accept 0 (Linux's default) an announcement updates entries, creates none
    assert (await term.run("router ip neigh"))[1] == ""


async def test_arping_refuses(term: Term, autojump_clock: trio.testing.MockClock) -> None:
    status, out = await term.run("h1 arping")
    assert status == 2 and out.startswith("\nUsage:\n  arping [options] <destination>")
    assert await term.run("h1 arping -c 1 nosuch") == (
        2,
        "arping: nosuch: Name or service not known",
    )
    assert (await term.run("h1 arping -Z router"))[1].startswith("arping: invalid option -- 'Z'")
    assert await term.run("h1 arping -c 1 -I eth7 router") == (2, "arping: eth7: No such device")


def test_arping_prints_the_time_as_iputils_computes_it() -> None:
    # recv_pack(): usecs rounded, msecs = (usecs + 500) / 1000, usecs -= msecs * 1000 - 500
    assert _elapsed(2.0, 2.000029) == " 0.529ms"  # this machine's arping, over a veth
    assert _elapsed(1.0, 1.0) == " 0.500ms"
    # 800 µs across a second: the nanoseconds differ by -999,199,500, which C divides
    # towards zero (-999,199 µs): 801 µs
    assert _elapsed(0.9995, 1.0003) == " 1.301ms"
    assert _elapsed(3.0, 3.445) == " 445.500ms"


_MS = re.compile(r"\[[0-9A-F:]{17}\]  (\d+)\.(\d{3})ms")


def test_linux_arping_prints_the_same() -> None:
    """This machine's arping (root, iputils) over a veth whose peer is 10.0.1.254:
    the lines of test_arping_replies, MAC and time masked; each time's last three
    digits are at least 500 (recv_pack()'s half millisecond)."""
    if not (hasattr(os, "geteuid") and os.geteuid() == 0):
        pytest.skip("needs root for a network namespace")
    for tool in ("ip", "arping"):
        if not shutil.which(tool):
            pytest.skip(f"needs {tool}(8)")
    ns, peer = f"nsarping{os.getpid()}", f"nsarping{os.getpid()}p"  # per process
    for n in (ns, peer):
        subprocess.run(["ip", "netns", "del", n], capture_output=True)
    if subprocess.run(["ip", "netns", "add", ns], capture_output=True).returncode:
        pytest.skip("cannot create a network namespace")
    try:
        subprocess.run(["ip", "netns", "add", peer], check=True)
        for line in (
            f"link add eth0 netns {ns} type veth peer name eth0 netns {peer}",
            f"-n {ns} addr add 10.0.1.1/24 dev eth0",
            f"-n {peer} addr add 10.0.1.254/24 dev eth0",
            f"-n {ns} link set eth0 up",
            f"-n {peer} link set eth0 up",
        ):
            subprocess.run(["ip", *line.split()], check=True, capture_output=True)
        argv = ["ip", "netns", "exec", ns, "arping", "-c", "2", "-I", "eth0", "10.0.1.254"]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    finally:
        for n in (ns, peer):
            subprocess.run(["ip", "netns", "del", n], capture_output=True)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.rstrip("\n").split("\n")
    assert [int(m.group(2)) >= 500 for m in map(_MS.search, lines[1:3]) if m] == [True, True]
    assert [_MS.sub("[MAC]  Tms", line) for line in lines] == [
        "ARPING 10.0.1.254 from 10.0.1.1 eth0",
        "Unicast reply from 10.0.1.254 [MAC]  Tms",
        "Unicast reply from 10.0.1.254 [MAC]  Tms",
        "Sent 2 probes (1 broadcast(s))",
        "Received 2 response(s)",
    ]
