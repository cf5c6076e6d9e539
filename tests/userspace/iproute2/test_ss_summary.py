"""``ss -s``: the summary ss builds from /proc/net/sockstat, sockstat6 and the Tcp MIB."""

from __future__ import annotations

import pytest
import trio.testing
from helpers import Term

EMPTY = (
    "Total: 0\n"
    "TCP:   0 (estab 0, closed 0, orphaned 0, timewait 0)\n"
    "\n"
    "Transport Total     IP        IPv6\n"
    "RAW\t  0         0         0        \n"
    "UDP\t  0         0         0        \n"
    "TCP\t  0         0         0        \n"
    "INET\t  0         0         0        \n"
    "FRAG\t  0         0         0        \n"
)


@pytest.mark.slow
async def test_ss_summary(term: Term, autojump_clock: trio.testing.MockClock) -> None:
    assert await term.run("h1 ss -s") == (0, EMPTY)
    assert await term.run("h1 ss --summary") == (0, EMPTY)
    await term.run("h1 netperf -H h2 -t TCP_RR -l 1")
    # netperf closes first on both connections, and each FIN is received inside
    # its close (the transmits' local_bh_enable, through the router at one
    # instant): netserver closes from CLOSE_WAIT, so h1 holds both TIME_WAITs
    # (before, the closes crossed on the wire: one TIME_WAIT on each side)
    _status, out = await term.run("h1 ss -s")
    assert out.split("\n")[1] == "TCP:   2 (estab 0, closed 2, orphaned 0, timewait 2)"
    _status, out = await term.run("h2 ss -s")
    lines = out.split("\n")
    # h2 keeps its netserver listening on [::]:12865 (dual stack: an IPv6 socket)
    assert lines[1] == "TCP:   1 (estab 0, closed 0, orphaned 0, timewait 0)"
    assert lines[6] == "TCP\t  1         0         1        "
    _status, out = await term.run("h2 cat /proc/net/sockstat /proc/net/sockstat6")
    assert out.split("\n") == [
        "sockets: used 1",
        "TCP: inuse 0 orphan 0 tw 0 alloc 1 mem 0",
        "UDP: inuse 0 mem 0",
        "UDPLITE: inuse 0",
        "RAW: inuse 0",
        "FRAG: inuse 0 memory 0",
        "TCP6: inuse 1",
        "UDP6: inuse 0",
        "UDPLITE6: inuse 0",
        "RAW6: inuse 0",
        "FRAG6: inuse 0 memory 0",
    ]
    _status, out = await term.run("h1 ss -s -t -a")
    assert out.startswith("Total: ") and "\nState " in out  # the summary, then the sockets
    assert (await term.run("h1 ss -x"))[0] == 255
