"""The receive side of 6.x: window-drop counters and drop reasons (issue 16).

The packets themselves are checked by tests/packetdrill/beyond-window.pkt
(against the real kernel too); here the counters the runner cannot read.
"""

from __future__ import annotations

from pathlib import Path

import trio
import trio.testing

from netstack.core.skbuff import DropReason
from netstack.host import open_lab
from netstack.tcp import tcp_of
from netstack.userspace.packetdrill import run_script

SCRIPTS = Path(__file__).parent.parent / "packetdrill"


def _run(name: str) -> tuple[str, dict[str, int], dict[str, int]]:
    async def main() -> tuple[str, dict[str, int], dict[str, int]]:
        async with open_lab(seed=0) as lab:
            host = lab.add_host("pd")
            result = await run_script(host.net, str(SCRIPTS / name), [])
            ext = tcp_of(host.net).snmp()["TcpExt"]
            names = ("BeyondWindow", "TCPACKSkippedSeq", "TCPRcvQDrop", "TCPZeroWindowDrop")
            return result.status, {n: getattr(ext, n) for n in names}, host.net.drop_statistics()

    return trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_segment_ending_beyond_the_window_counts_in_beyond_window() -> None:
    status, counters, drops = _run("beyond-window.pkt")
    assert status == "pass"
    # one segment dropped for its end (TCP_INVALID_END_SEQUENCE); the second,
    # with the queue empty, is taken
    assert counters == {
        "BeyondWindow": 1,
        "TCPACKSkippedSeq": 0,
        "TCPRcvQDrop": 0,
        "TCPZeroWindowDrop": 0,
    }
    assert drops.get(DropReason.TCP_INVALID_END_SEQUENCE.name) == 1
