"""``ping`` at the prompt: IPv4 and IPv6, host names, errors, its timing, Ctrl-C and its summary.

The output lines are iputils 20221126's (compared with the real ping in network
namespaces: ``PING 2001:db8::2(2001:db8::2) 56 data bytes``, ``From 10.0.0.1
icmp_seq=1 Destination Host Unreachable``, ``pipe 2``, ``ping: connect:
Network is unreachable``); the RTTs are 0.000 ms because veth links have no
delay.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio
import trio.testing
from helpers import Term

import netstack
from netstack.labs.session import Session


async def test_ping_by_host_name(term: Term, autojump_clock: trio.testing.MockClock) -> None:
    t0 = trio.current_time()
    status, out = await term.run("h1 ping -c 3 h2")
    lines = out.split("\n")
    assert status == 0
    assert lines[0] == "PING h2 (10.0.2.2) 56(84) bytes of data."
    # a name is printed back after a reverse lookup, as iputils' pr_addr() does
    assert lines[1] == "64 bytes from h2 (10.0.2.2): icmp_seq=1 ttl=63 time=0.000 ms"
    assert lines[-3] == "--- h2 ping statistics ---"
    assert lines[-2] == "3 packets transmitted, 3 received, 0% packet loss, time 2000ms"
    assert trio.current_time() - t0 == 2.0  # the replies are in; no lingering
    # the form: "ping FROM TO"
    status, out = await term.run("ping h2 h1 -c 1 -q")
    assert status == 0 and out.split("\n")[0] == "PING h1 (10.0.1.1) 56(84) bytes of data."
    status, out = await term.run("h1 ping -c 1 -t 1 h2")
    assert status == 1 and "From router (10.0.1.254) icmp_seq=1 Time to live exceeded" in out
    status, out = await term.run("h1 ping -n -c 1 -t 1 h2")
    assert status == 1 and "From 10.0.1.254 icmp_seq=1 Time to live exceeded" in out
    status, out = await term.run("h1 ping -c 1 10.0.2.2")  # an address stays numeric
    assert "64 bytes from 10.0.2.2: icmp_seq=1" in out


async def test_interrupt_stops_ping_with_its_summary(
    term: Term, autojump_clock: trio.testing.MockClock
) -> None:
    scope = trio.CancelScope()
    lines: list[str] = []
    term.session.out = lines.append

    async def press_ctrl_c() -> None:
        await trio.sleep(3.5)
        scope.cancel()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(press_ctrl_c)
        status = await term.session.run_line("h1 ping h2", interrupt=scope)
    assert status == 0
    assert lines[-2].startswith("4 packets transmitted, 4 received, 0% packet loss")


@pytest.fixture
async def dual(lab: netstack.Lab) -> AsyncIterator[Term]:
    """h1 — router — h2 with IPv4 and IPv6 (2001:db8:1::/64, 2001:db8:2::/64)."""
    h1, r, h2 = (lab.add_host(n) for n in ("h1", "router", "h2"))
    r.sysctl("net.ipv4.ip_forward=1")
    r.sysctl("net.ipv6.conf.all.forwarding=1")
    lab.add_link("h1:eth0", "router:eth0")
    lab.add_link("router:eth1", "h2:eth0")
    for host, dev, v4, v6, gw4, gw6 in (
        (h1, "eth0", "10.0.1.1", "2001:db8:1::1", "10.0.1.254", "2001:db8:1::fe"),
        (r, "eth0", "10.0.1.254", "2001:db8:1::fe", None, None),
        (r, "eth1", "10.0.2.254", "2001:db8:2::fe", None, None),
        (h2, "eth0", "10.0.2.2", "2001:db8:2::2", "10.0.2.254", "2001:db8:2::fe"),
    ):
        host.ip(f"addr add {v4}/24 dev {dev}")
        host.ip(f"-6 addr add {v6}/64 dev {dev} nodad")
        if gw4 is not None:
            host.ip(f"route add default via {gw4}")
            host.ip(f"-6 route add default via {gw6}")
    lines: list[str] = []
    async with trio.open_nursery() as nursery:
        clock = trio.lowlevel.current_clock()
        assert isinstance(clock, trio.testing.MockClock)
        session = Session(lab, nursery, out=lines.append, err=lines.append, clock=clock)
        await session.run_line("sleep 2")  # link-local addresses finish DAD
        yield Term(session, lines)
        nursery.cancel_scope.cancel()
    clock.autojump_threshold = 0


async def test_ping_ipv6_address_name_and_ping6(
    dual: Term, autojump_clock: trio.testing.MockClock
) -> None:
    status, out = await dual.run("h1 ping -c 2 2001:db8:2::2")
    assert status == 0
    assert out.split("\n") == [
        "PING 2001:db8:2::2(2001:db8:2::2) 56 data bytes",
        "64 bytes from 2001:db8:2::2: icmp_seq=1 ttl=63 time=0.000 ms",
        "64 bytes from 2001:db8:2::2: icmp_seq=2 ttl=63 time=0.000 ms",
        "",
        "--- 2001:db8:2::2 ping statistics ---",
        "2 packets transmitted, 2 received, 0% packet loss, time 1000ms",
        "rtt min/avg/max/mdev = 0.000/0.000/0.000/0.000 ms",
    ]
    status, out = await dual.run("h1 ping -6 -c 1 h2")
    assert status == 0
    assert out.split("\n")[:2] == [
        "PING h2(h2 (2001:db8:2::2)) 56 data bytes",
        "64 bytes from h2 (2001:db8:2::2): icmp_seq=1 ttl=63 time=0.000 ms",
    ]
    assert (await dual.run("h1 ping6 -c 1 h2"))[1] == out
    status, out = await dual.run("h1 ping -c 1 h2")  # a name without -6: IPv4 first
    assert out.startswith("PING h2 (10.0.2.2) 56(84) bytes of data.\n")
    status, out = await dual.run("h1 ping -4 -c 1 h2")
    assert out.startswith("PING h2 (10.0.2.2) 56(84) bytes of data.\n")
    status, out = await dual.run("h1 ping6 -c 1 -t 1 h2")
    assert status == 1
    assert "From router (2001:db8:1::fe) icmp_seq=1 Time exceeded: Hop limit" in out


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "h1 ping -4 -c 1 2001:db8:2::2",
            "ping: 2001:db8:2::2: Address family for hostname not supported",
        ),
        ("h1 ping6 -c 1 10.0.2.2", "ping: 10.0.2.2: Address family for hostname not supported"),
        ("h1 ping -4 -6 h2", "ping: only one -4 or -6 option may be specified"),
        ("h1 ping -c 1 nosuchhost", "ping: nosuchhost: Name or service not known"),
        ("h1 ping -c 1 h3", 'ping: h3: Name or service not known\nping: did you mean "h2"?'),
        (
            "h1 ping -c 1 rooter",
            'ping: rooter: Name or service not known\nping: did you mean "router"?',
        ),
        ("h1 ping -c 1 2001:db9::1", "ping: connect: Network is unreachable"),
        ("h2 ping", "ping: usage error: Destination address required"),
        ("h2 ping -c", "ping: option requires an argument -- 'c'"),
        ("h2 ping -Z h1", "ping: invalid option -- 'Z'"),
    ],
)
async def test_ping_refuses_as_iputils_does(
    dual: Term, autojump_clock: trio.testing.MockClock, line: str, message: str
) -> None:
    if "2001:db9" in line:
        await dual.run("h1 ip -6 route del default")
    status, out = await dual.run(line)
    assert status == 2
    assert out.split("\nUsage")[0].rstrip("\n") == message


async def test_unresolved_neighbour_and_no_route(
    term: Term, autojump_clock: trio.testing.MockClock
) -> None:
    t0 = trio.current_time()
    status, out = await term.run("h1 ping -c 2 -i 0.2 10.0.1.9")
    assert status == 1
    assert out.split("\n") == [
        "PING 10.0.1.9 (10.0.1.9) 56(84) bytes of data.",
        "From 10.0.1.1 icmp_seq=1 Destination Host Unreachable",
        "From 10.0.1.1 icmp_seq=2 Destination Host Unreachable",
        "",
        "--- 10.0.1.9 ping statistics ---",
        "2 packets transmitted, 0 received, +2 errors, 100% packet loss, time 200ms",
        "pipe 2",
    ]
    assert trio.current_time() - t0 == 3.0  # ARP gives up after 3 probes a second apart
    await term.run("h1 ip route del default")
    assert await term.run("h1 ping -c 1 192.168.7.7") == (
        2,
        "ping: connect: Network is unreachable",
    )


async def test_default_linger_and_w(term: Term, autojump_clock: trio.testing.MockClock) -> None:
    """After its last probe ping waits -W seconds (10 by default) if nothing came back,
    twice the longest round trip (at least an interval) once replies came."""
    await term.run("router ip route add blackhole 10.0.2.2/32")
    t0 = trio.current_time()
    status, out = await term.run("h1 ping -c 1 h2")
    assert status == 1 and trio.current_time() - t0 == 10.0
    assert "1 packets transmitted, 0 received, 100% packet loss, time 0ms" in out
    t0 = trio.current_time()
    await term.run("h1 ping -c 2 -W 3 h2")
    assert trio.current_time() - t0 == 1.0 + 3.0
    await term.run("router ip route del blackhole 10.0.2.2/32")
    t0 = trio.current_time()
    status, out = await term.run("h1 ping -w 2 -c 5 -q h2")
    assert status == 1  # -w with -c: fewer replies than asked is a failure
    assert "2 packets transmitted, 2 received" in out  # as iputils: the third is too late
    assert trio.current_time() - t0 == 2.0
