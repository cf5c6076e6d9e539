"""``nc`` at the prompt: a listener and a client, port checks (-z) for TCP and UDP, netcat's
messages and exit statuses (netcat-openbsd's, compared in namespaces)."""

from __future__ import annotations

import trio
import trio.testing
from helpers import Term


async def test_nc_listener_and_port_checks(
    term: Term, autojump_clock: trio.testing.MockClock
) -> None:
    assert await term.run("h2 nc -lv 5000 &") == (0, "[1] 1\nListening on 0.0.0.0 5000")
    status, out = await term.run("h1 nc -zv h2 5000")
    assert status == 0
    assert out.split("\n") == [
        "Connection to h2 (10.0.2.2) 5000 port [tcp/*] succeeded!",
        "Connection received on h1 " + out.split(" ")[-1],  # the listener's line
    ]
    await term.run("wait")
    assert await term.run("h1 nc -zv 10.0.2.2 5001") == (
        1,
        "nc: connect to 10.0.2.2 port 5001 (tcp) failed: Connection refused",
    )
    assert await term.run("h1 nc -zv 10.0.2.2 5001") == await term.run("h1 nc -zvn h2 5001")
    t0 = trio.current_time()
    assert await term.run("h1 nc -zv -w 2 10.0.1.9 80") == (
        1,
        "nc: connect to 10.0.1.9 port 80 (tcp) timed out: Operation now in progress",
    )
    assert trio.current_time() - t0 == 2.0


async def test_nc_udp(term: Term, autojump_clock: trio.testing.MockClock) -> None:
    assert (await term.run("h1 nc -zvu h2 7"))[0] == 1  # ICMP port unreachable: refused
    await term.run("h2 nc -lu 7000 &")
    status, out = await term.run("h1 nc -zvu h2 7000")
    assert status == 0
    # the listener prints the four probes as they come; the background job's last one
    # shows after the client's report
    assert sorted(out.split("\n")) == sorted(
        ["X", "X", "X", "X", "Connection to h2 (10.0.2.2) 7000 port [udp/*] succeeded!"]
    )


async def test_nc_refuses(term: Term, autojump_clock: trio.testing.MockClock) -> None:
    assert await term.run("h1 nc -zv nosuch 80") == (
        1,
        'nc: getaddrinfo for host "nosuch" port 80: Name or service not known',
    )
    assert await term.run("h1 nc -zv h2 x") == (1, "nc: port number invalid: x")
    status, out = await term.run("h1 nc")
    assert status == 1 and out.startswith("usage: nc [-46CDdFhklNnrStUuvZz]")
    assert (await term.run("h1 nc -Y h2 1"))[1].startswith("nc: invalid option -- 'Y'")
