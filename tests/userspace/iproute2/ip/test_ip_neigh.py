"""``ip neighbour``: the ARP table as ``ip neigh`` shows it, and its changes."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
import trio
import trio.testing

from netstack.errors import ConfigError
from netstack.host import Host, Lab, mac_for
from netstack.ipv4 import ipv4_of
from netstack.testing import builders
from netstack.wire.ipv4 import aton


@contextlib.contextmanager
def fails(message: str) -> Iterator[None]:
    """Expect a ConfigError whose text is exactly *message*."""
    with pytest.raises(ConfigError) as exc:
        yield
    assert str(exc.value) == message


def mac(host: str, dev: str) -> str:
    return ":".join(f"{x:02x}" for x in mac_for(host, dev))


@pytest.fixture
async def pair4(lab: Lab) -> tuple[Host, Host]:
    """a (10.0.0.1/24) — b (10.0.0.2/24)."""
    return builders.pair(lab)


async def test_learned_entry(
    autojump_clock: trio.testing.MockClock, pair4: tuple[Host, Host]
) -> None:
    a, _ = pair4
    assert a.ip("neigh") == ""
    assert await a.ping("10.0.0.2")
    line = f"10.0.0.2 dev eth0 lladdr {mac('b', 'eth0')} REACHABLE \n"
    assert a.ip("neigh") == line
    assert a.ip("n") == a.ip("neighbour show") == a.ip("neighbor list") == a.ip("nei ls")
    assert a.ip("neigh show dev eth0") == f"10.0.0.2 lladdr {mac('b', 'eth0')} REACHABLE \n"
    assert a.ip("neigh show 10.0.0.0/24") == line
    assert a.ip("neigh show to 10.0.1.0/24") == ""
    assert a.ip("neigh show nud reachable") == line
    assert a.ip("neigh show nud stale") == ""
    assert a.ip("-br neigh") == f"{'10.0.0.2':<39} eth0             {mac('b', 'eth0')}\n"
    assert a.ip("-br neigh show dev eth0") == f"{'10.0.0.2':<39} {mac('b', 'eth0')}\n"
    assert a.ip("-s neigh") == (
        f"10.0.0.2 dev eth0 lladdr {mac('b', 'eth0')}  used 0/0/0probes 4 REACHABLE \n"
    )
    await trio.sleep(3)
    assert a.ip("-s neigh") == (
        f"10.0.0.2 dev eth0 lladdr {mac('b', 'eth0')}  used 3/3/3probes 4 REACHABLE \n"
    )
    await trio.sleep(60)  # reachable_time runs out
    assert a.ip("neigh") == f"10.0.0.2 dev eth0 lladdr {mac('b', 'eth0')} STALE \n"


async def test_failed_and_incomplete(
    autojump_clock: trio.testing.MockClock, pair4: tuple[Host, Host]
) -> None:
    a, _ = pair4
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: a.ping("10.0.0.9", count=1, timeout=10))
        await trio.sleep(0.5)
        assert a.ip("neigh") == "10.0.0.9 dev eth0 INCOMPLETE \n"
    assert a.ip("neigh") == "10.0.0.9 dev eth0 FAILED \n"
    assert a.ip("-s neigh").startswith("10.0.0.9 dev eth0  used ")


async def test_add_change_replace_delete(
    autojump_clock: trio.testing.MockClock, pair4: tuple[Host, Host]
) -> None:
    a, _ = pair4
    a.ip("neigh add 10.0.0.7 lladdr 02:00:00:00:00:07 dev eth0")
    a.ip("neigh add 10.0.0.8 lladdr 2:0:0:0:0:8 dev eth0 nud reachable")
    a.ip("neigh add 10.0.0.6 lladdr 02:00:00:00:00:06 dev eth0 nud stale router")
    assert a.ip("neigh") == (
        "10.0.0.7 dev eth0 lladdr 02:00:00:00:00:07 PERMANENT \n"
        "10.0.0.8 dev eth0 lladdr 02:00:00:00:00:08 REACHABLE \n"
        "10.0.0.6 dev eth0 lladdr 02:00:00:00:00:06 router STALE \n"
    )
    with fails("RTNETLINK answers: File exists"):
        a.ip("neigh add 10.0.0.7 lladdr 02:00:00:00:00:07 dev eth0")
    a.ip("neigh replace 10.0.0.7 lladdr 02:00:00:00:00:17 dev eth0 nud noarp")
    a.ip("neigh change 10.0.0.8 lladdr 02:00:00:00:00:18 dev eth0")
    with fails("RTNETLINK answers: No such file or directory"):
        a.ip("neigh change 10.0.0.99 lladdr 02:00:00:00:00:18 dev eth0")
    a.ip("neigh replace 10.0.0.5 lladdr 02:00:00:00:00:05 dev eth0")
    assert a.ip("neigh show nud all") == (
        "10.0.0.7 dev eth0 lladdr 02:00:00:00:00:17 NOARP \n"
        "10.0.0.8 dev eth0 lladdr 02:00:00:00:00:18 PERMANENT \n"
        "10.0.0.6 dev eth0 lladdr 02:00:00:00:00:06 router STALE \n"
        "10.0.0.5 dev eth0 lladdr 02:00:00:00:00:05 PERMANENT \n"
    )
    assert "10.0.0.7" not in a.ip("neigh")  # NOARP hidden by default
    assert a.ip("neigh show nud noarp").startswith("10.0.0.7 ")
    a.ip("neigh del 10.0.0.6 dev eth0")
    with fails("RTNETLINK answers: No such file or directory"):
        a.ip("neigh delete 10.0.0.6 dev eth0")
    assert a.ip("neigh get 10.0.0.5 dev eth0") == (
        "10.0.0.5 dev eth0 lladdr 02:00:00:00:00:05 PERMANENT \n"
    )


async def test_static_entry_is_used(
    autojump_clock: trio.testing.MockClock, pair4: tuple[Host, Host]
) -> None:
    a, b = pair4
    a.ip(f"neigh add 10.0.0.2 lladdr {mac('b', 'eth0')} dev eth0")
    assert await a.ping("10.0.0.2")
    assert ipv4_of(a.net).arp_tbl.lookup(aton("10.0.0.2"), a.dev("eth0")) is not None
    assert a.ip("neigh") == f"10.0.0.2 dev eth0 lladdr {mac('b', 'eth0')} PERMANENT \n"
    # a wrong static address blackholes the traffic
    a.ip("neigh replace 10.0.0.2 lladdr 02:00:00:00:00:99 dev eth0")
    assert not await a.ping("10.0.0.2", count=1, timeout=1)
    del b


async def test_flush(autojump_clock: trio.testing.MockClock, pair4: tuple[Host, Host]) -> None:
    a, _ = pair4
    assert await a.ping("10.0.0.2")
    a.ip("neigh add 10.0.0.7 lladdr 02:00:00:00:00:07 dev eth0")
    assert a.ip("-s neigh flush dev eth0") == (
        "\n*** Round 1, deleting 1 entries ***\n*** Flush is complete after 1 round ***\n"
    )
    assert a.ip("neigh") == "10.0.0.7 dev eth0 lladdr 02:00:00:00:00:07 PERMANENT \n"
    assert a.ip("-s neigh flush dev eth0") == "Nothing to flush.\n"
    assert a.ip("neigh flush all") == ""  # "all" is an address prefix here: 0.0.0.0/0
    assert "10.0.0.7" in a.ip("neigh")  # permanent entries survive a plain flush
    assert a.ip("neigh flush nud permanent") == ""  # unless asked for explicitly
    assert a.ip("neigh show nud all") == ""


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("neigh add 10.0.0.9 dev eth0", "Error: No link layer address given."),
        ("neigh add 10.0.0.9 lladdr 02:zz dev eth0", '"zz" is invalid lladdr.'),
        ("neigh add 10.0.0.9 lladdr 02:00 dev eth0", "Error: Invalid link address."),
        (
            "neigh add 10.0.0.9 lladdr 02:00:00:00:00:09",
            "Device and destination are required arguments.",
        ),
        (
            "neigh add lladdr 02:00:00:00:00:09 dev eth0",
            "Device and destination are required arguments.",
        ),
        ("neigh add 10.0.0.9 lladdr 02:00:00:00:00:09 dev eth9", 'Cannot find device "eth9"'),
        (
            "neigh add 10.0.0.9 lladdr 02:00:00:00:00:09 dev eth0 nud bogus",
            'Error: argument "bogus" is wrong: nud state is bad',
        ),
        (
            "neigh add 10.0.0.9 10.0.0.8 dev eth0",
            'Error: either "to" is duplicate, or "10.0.0.8" is a garbage.',
        ),
        (
            "neigh add 10.0.0.9 lladdr 1 lladdr 2 dev eth0",
            'Error: duplicate "lladdr": "2" is the second value.',
        ),
        (
            "neigh add x lladdr 02:00:00:00:00:09 dev eth0",
            'Error: any valid address is expected rather than "x".',
        ),
        ("neigh del 10.0.0.9 dev eth0", "RTNETLINK answers: No such file or directory"),
        ("neigh get 10.0.0.9 dev eth0", "Error: Neighbour entry not found."),
        ("neigh get 10.0.0.9", "Device and address are required arguments."),
        ("neigh get 10.0.0.9 dev eth9", 'Cannot find device "eth9"'),
        ("neigh show dev eth9", 'Cannot find device "eth9"'),
        ("neigh show dev eth0 dev lo", 'Error: duplicate "dev": "lo" is the second value.'),
        ("neigh show nud bogus", 'Error: argument "bogus" is wrong: nud state is bad'),
        ("neigh flush", "Flush requires arguments."),
        ("neigh foo", 'Command "foo" is unknown, try "ip neigh help".'),
    ],
)
async def test_errors(
    autojump_clock: trio.testing.MockClock, pair4: tuple[Host, Host], command: str, message: str
) -> None:
    a, _ = pair4
    with pytest.raises(ConfigError) as exc:
        a.ip(command)
    assert str(exc.value) == message


async def test_usage(autojump_clock: trio.testing.MockClock, pair4: tuple[Host, Host]) -> None:
    a, _ = pair4
    with pytest.raises(ConfigError) as exc:
        a.ip("neigh help")
    assert str(exc.value).startswith("Usage: ip neigh { add | del | change | replace }\n")
