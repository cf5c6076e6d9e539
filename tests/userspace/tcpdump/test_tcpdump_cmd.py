"""``tcpdump`` at the prompt: a live capture as a background job, and its errors."""

from __future__ import annotations

import trio.testing
from helpers import Term


async def test_tcpdump_job_sees_the_ping(
    term: Term, autojump_clock: trio.testing.MockClock
) -> None:
    status, out = await term.run("h2 tcpdump -i eth0 -c 4 icmp &")
    assert (status, out) == (0, "[1] 1\ntcpdump: verbose output suppressed, use -v[v]... "
                             "for full protocol decode\nlistening on eth0, link-type EN10MB "
                             "(Ethernet), snapshot length 262144 bytes")  # fmt: skip
    status, out = await term.run("h1 ping -c 2 h2")
    dump = [line for line in out.split("\n") if " IP " in line]
    assert [line.split(" ", 1)[1] for line in dump] == [
        "IP 10.0.1.1 > 10.0.2.2: ICMP echo request, id 1, seq 1, length 64",
        "IP 10.0.2.2 > 10.0.1.1: ICMP echo reply, id 1, seq 1, length 64",
        "IP 10.0.1.1 > 10.0.2.2: ICMP echo request, id 1, seq 2, length 64",
        "IP 10.0.2.2 > 10.0.1.1: ICMP echo reply, id 1, seq 2, length 64",
    ]
    assert "4 packets captured" in out
    assert term.session.finished_jobs() == [
        "[1]+  Done                    h2 tcpdump -i eth0 -c 4 icmp"
    ]


async def test_tcpdump_errors(term: Term, autojump_clock: trio.testing.MockClock) -> None:
    assert await term.run("h1 tcpdump -i eth9") == (
        1,
        "tcpdump: eth9: No such device exists\n(No such device exists)",
    )
    assert await term.run("h1 tcpdump -i eth0 port 99999") == (
        2,
        "tcpdump: illegal port number 99999 > 65535",
    )
    await term.run("h1 ip link set eth0 down")
    assert await term.run("h1 tcpdump -i eth0") == (1, "tcpdump: eth0: That device is not up")
