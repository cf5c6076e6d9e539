"""``nstat`` at the prompt: increments since the last run, patterns, ``-a`` and ``-z``."""

from __future__ import annotations

import trio.testing
from helpers import Term


async def test_nstat_shows_increments(term: Term, autojump_clock: trio.testing.MockClock) -> None:
    await term.run("h1 ping -c 2 h2")
    _status, out = await term.run("router nstat IpForw*")
    assert out == "#kernel\nIpForwDatagrams                 4                  0.0"
    assert (await term.run("router nstat IpForw*"))[1] == "#kernel"
    await term.run("h1 ping -c 1 h2")
    assert (await term.run("router nstat IpForw*"))[1].split()[-2] == "2"
    assert (await term.run("router nstat -a IpForw*"))[1].split()[-2] == "6"
    assert "IpForwDatagrams" in (await term.run("router nstat -az IpForw*"))[1]
