"""``traceroute`` at the prompt: UDP (default, -U) and ICMP (-I), IPv4 and IPv6, names,
unreachables as marks, and its refusals — the lines Debian's traceroute 2.1.2 prints
(compared in namespaces: ``1  10.0.0.2 (10.0.0.2)  0.090 ms !H  0.009 ms !H *``, the third
probe lost to the router's ICMP rate limit, as here)."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from helpers import Term

HEAD = "traceroute to h2 (10.0.2.2), 30 hops max, 60 byte packets"
TWO_HOPS = [
    " 1  router (10.0.1.254)  0.000 ms  0.000 ms  0.000 ms",
    " 2  h2 (10.0.2.2)  0.000 ms  0.000 ms  0.000 ms",
]


@pytest.mark.parametrize("options", ["", "-I ", "-U ", "-4 "])
async def test_traceroute_two_hops(
    term: Term, autojump_clock: trio.testing.MockClock, options: str
) -> None:
    t0 = trio.current_time()
    assert await term.run(f"h1 traceroute {options}h2") == (0, "\n".join([HEAD, *TWO_HOPS]))
    assert trio.current_time() - t0 == 0.0  # veth links: no time passes


async def test_traceroute_numeric_first_max_and_packetlen(
    term: Term, autojump_clock: trio.testing.MockClock
) -> None:
    status, out = await term.run("h1 traceroute -n -f 2 -q 1 10.0.2.2 100")
    assert (status, out) == (
        0,
        "traceroute to 10.0.2.2 (10.0.2.2), 30 hops max, 100 byte packets\n 2  10.0.2.2  0.000 ms",
    )
    status, out = await term.run("h1 traceroute -m 1 h2")
    assert out.split("\n") == [
        "traceroute to h2 (10.0.2.2), 1 hops max, 60 byte packets",
        TWO_HOPS[0],
    ]


async def test_traceroute_unreachables(term: Term, autojump_clock: trio.testing.MockClock) -> None:
    await term.run("router ip route add unreachable 10.8.0.0/16")
    t0 = trio.current_time()
    _status, out = await term.run("h1 traceroute 10.8.0.1")
    assert out.split("\n")[1] == " 1  router (10.0.1.254)  0.000 ms !H  0.000 ms !H *"
    assert trio.current_time() - t0 == 5.0  # the third probe waits its 5 s
    _status, out = await term.run("h1 traceroute -n -q 1 -m 3 10.0.1.9")
    assert out.split("\n")[1] == " 1  10.0.1.1  3000.000 ms !H"  # ARP failed: from ourselves
    _status, out = await term.run("h1 traceroute -n -q 1 -w 1 -m 2 10.0.1.9")
    assert out.split("\n")[1:] == [" 1  *", " 2  *"]  # gave up before ARP did
    # the router has no route to 192.0.2.1: net unreachable (its ICMP rate limit has refilled
    # two tokens in the 5 s since the last run, so the third probe gets no answer)
    _status, out = await term.run("h1 traceroute -n -m 2 -w 2 192.0.2.1")
    assert out.split("\n")[1:] == [" 1  10.0.1.254  0.000 ms !N  0.000 ms !N *"]


async def test_traceroute_silent_hops(term: Term, autojump_clock: trio.testing.MockClock) -> None:
    await term.run("h2 ip route add blackhole 10.0.1.1/32")  # h2's answers go nowhere
    t0 = trio.current_time()
    status, out = await term.run("h1 traceroute -n -m 3 h2")
    assert status == 0
    assert out.split("\n")[1:] == [" 1  10.0.1.254  0.000 ms  0.000 ms  0.000 ms",
                                   " 2  * * *", " 3  * * *"]  # fmt: skip
    assert trio.current_time() - t0 == 10.0


@pytest.mark.parametrize(
    ("line", "status", "message"),
    [
        ("h1 traceroute nosuch", 2,
         "nosuch: Name or service not known\n"
         "Cannot handle \"host\" cmdline arg `nosuch' on position 1 (argc 1)"),
        ("h1 traceroute -q 11 h2", 2, "no more than 10 probes per hop"),
        ("h1 traceroute -Z h2", 2, "Bad option `-Z' (argc 1)"),
        ("h1 traceroute -q x h2", 2, "Cannot handle `-q' option with arg `x' (argc 2)"),
        ("h1 traceroute -V", 0, "Modern traceroute for Linux, version 2.1.2"),
    ],
)  # fmt: skip
async def test_traceroute_refuses(
    term: Term, autojump_clock: trio.testing.MockClock, line: str, status: int, message: str
) -> None:
    assert await term.run(line) == (status, message)
    assert (await term.run("h1 traceroute"))[1].startswith(
        "Usage:\n  traceroute [ -46dFITnreAUDV ]"
    )
