"""``udpflood`` at the prompt: counts, ports, rates, the time limit and its budget."""

from __future__ import annotations

import pytest
import trio.testing
from helpers import Term

from netstack.userspace import udpflood


async def test_udpflood_count_port_and_time_limit(
    term: Term, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    status, text = await term.run("h1 udpflood -c 5 h2:7")
    out = text.split("\n")
    assert status == 0
    assert out == ["udpflood: 5 datagrams of 64 bytes to 10.0.2.2:7 in 0.000000 s of virtual time"]
    assert (await term.run("h2 expect UdpNoPorts == 5"))[0] == 0
    status, text = await term.run("h1 udpflood -l 0.5 -r 100 -s 10 h2")
    out = text.split("\n")
    assert out == [
        "udpflood: 50 datagrams of 10 bytes to 10.0.2.2:9 in 0.500000 s of virtual time, 100 pps"
    ]
    monkeypatch.setattr(udpflood, "UDPFLOOD_BUDGET", 30)
    status, text = await term.run("h1 udpflood -l 5 h2")  # no rate: no time passes
    out = text.split("\n")
    assert status == 0 and out[0].startswith("udpflood: stopped after 30 datagrams, 0.000000 s")
    assert out[1].startswith("udpflood: 30 datagrams")
    status, text = await term.run("h1 udpflood -x h2")
    out = text.split("\n")
    assert status == 2 and out[0] == "udpflood: invalid option -- 'x'"
