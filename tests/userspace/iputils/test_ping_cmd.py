"""``ping`` at the prompt: host names, its lines as they happen, Ctrl-C and its summary."""

from __future__ import annotations

import trio
import trio.testing
from helpers import Term


async def test_ping_by_host_name(term: Term, autojump_clock: trio.testing.MockClock) -> None:
    t0 = trio.current_time()
    status, out = await term.run("h1 ping -c 3 h2")
    lines = out.split("\n")
    assert status == 0
    assert lines[0] == "PING h2 (10.0.2.2) 56(84) bytes of data."
    assert lines[1].startswith("64 bytes from 10.0.2.2: icmp_seq=1 ttl=63 time=")
    assert lines[-3] == "--- h2 ping statistics ---"
    assert lines[-2].startswith("3 packets transmitted, 3 received, 0% packet loss")
    assert 2.0 <= trio.current_time() - t0 < 2.1
    # the form: "ping FROM TO"
    status, out = await term.run("ping h2 h1 -c 1 -q")
    assert status == 0 and out.split("\n")[0] == "PING h1 (10.0.1.1) 56(84) bytes of data."
    status, out = await term.run("h1 ping -c 1 -t 1 h2")
    assert status == 1 and "From 10.0.1.254 icmp_seq=1 Time to live exceeded" in out


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
