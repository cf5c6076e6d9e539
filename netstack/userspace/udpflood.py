"""``udpflood``: netstack's own UDP load generator (no upstream tool; a tiny pktgen).

Theory of operation: ``udpflood [-c COUNT] [-l SECS] [-s SIZE] [-r PPS] [-p
PORT] DEST[:PORT]`` sends UDP datagrams from an unbound socket on the host,
as fast as the socket takes them (a full send buffer blocks, as it does on
Linux) or at ``-r`` per second, and prints what it sent in how much virtual
time. A host name resolves through ``/etc/hosts``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import trio
import trio.lowlevel

from netstack.core.sock import AF_INET, SOCK_DGRAM
from netstack.userspace.progress import Progress
from netstack.wire.ipv4 import aton

if TYPE_CHECKING:
    from netstack.userspace.process import Machine, Process

__all__ = ["UDPFLOOD_BUDGET", "UDPFLOOD_USAGE", "main"]

UDPFLOOD_BUDGET: Final = 100_000  # datagrams a time-limited flood sends at most


async def main(proc: Process, host: Machine, argv: list[str]) -> int:
    """``udpflood [-c COUNT] [-l SECS] [-s SIZE] [-r PPS] [-p PORT] DEST[:PORT]``.

    Sends UDP datagrams from an unbound socket, as fast as the socket takes
    them (a full send buffer blocks, as it does on Linux) or at ``-r`` per
    second: *COUNT* of them (1000 by default), or for *SECS* of virtual time.
    A time-limited flood on a path where nothing takes time would never see
    the clock move, so it also stops at ``UDPFLOOD_BUDGET`` datagrams and says so.
    """
    count: int | None = None
    size, port, rate = 64, 9, 0.0
    seconds: float | None = None
    dest: str | None = None
    it = iter(argv)
    for a in it:
        try:
            if a in ("-n", "-c"):
                count = int(next(it))
            elif a == "-s":
                size = int(next(it))
            elif a == "-p":
                port = int(next(it))
            elif a == "-r":
                rate = float(next(it))
            elif a == "-l":
                seconds = float(next(it))
                if seconds <= 0:
                    raise ValueError
            elif a in ("-h", "--help"):
                proc.out(UDPFLOOD_USAGE)
                return 0
            elif a.startswith("-"):
                proc.err(f"udpflood: invalid option -- '{a.lstrip('-')}'\n{UDPFLOOD_USAGE}")
                return 2
            else:
                dest = a
        except (StopIteration, ValueError):
            proc.err(f"udpflood: bad value for {a}\n{UDPFLOOD_USAGE}")
            return 2
    if dest is not None and dest.count(":") == 1:
        dest, _, port_text = dest.partition(":")
        port = int(port_text) if port_text.isdigit() else -1
    if count is None:
        count = UDPFLOOD_BUDGET if seconds is not None else 1000
    if dest is None or count < 1 or not 0 <= size <= 65507 or not 0 < port < 65536:
        proc.err(UDPFLOOD_USAGE)
        return 2
    try:
        aton(dest)
        addr = dest
    except ValueError:
        resolved = proc.resolve(dest)
        if resolved is None:
            proc.err(f"udpflood: {dest}: Name or service not known")
            return 2
        addr = resolved
    sock = host.socket(AF_INET, SOCK_DGRAM)
    payload = bytes(size)
    clock = host.net.clock
    start = clock.now()
    sent = errors = 0
    progress = Progress(count, "udpflood", enabled=False if proc.background else None)
    try:
        with proc.interrupt:
            for i in range(count):
                if seconds is not None and clock.now() - start >= seconds:
                    break
                try:
                    await sock.sendto(payload, (addr, port))
                    sent += 1
                except OSError:
                    errors += 1
                if rate > 0:
                    await trio.sleep_until(start + (i + 1) / rate)
                progress.update(i + 1)
            await trio.lowlevel.checkpoint()
    finally:
        progress.close()
        sock.close()
    elapsed = clock.now() - start
    if seconds is not None and sent + errors >= count and elapsed < seconds:
        proc.err(
            f"udpflood: stopped after {count} datagrams, {elapsed:.6f} s into the {seconds:g} s "
            "asked: nothing on the path takes virtual time fast enough (no rate or delay); "
            "give -c COUNT or -r PPS"
        )
    rate_text = f", {sent / elapsed:.0f} pps" if elapsed > 0 else ""
    proc.out(
        f"udpflood: {sent} datagrams of {size} bytes to {addr}:{port} in {elapsed:.6f} s "
        f"of virtual time{rate_text}" + (f", {errors} send errors" if errors else "")
    )
    return 0 if sent else 1


UDPFLOOD_USAGE: Final = (
    "Usage: udpflood [-c COUNT] [-l SECONDS] [-s SIZE] [-r PPS] [-p PORT] DESTINATION[:PORT]\n"
    "  -c COUNT    datagrams to send (default 1000; -n COUNT too)\n"
    "  -l SECONDS  send for SECONDS of virtual time instead (at most 100000 datagrams)\n"
    "  -s SIZE     UDP payload bytes (default 64)\n"
    "  -r PPS      datagrams per second (default: as fast as the socket takes them)\n"
    "  -p PORT     destination port (default 9, discard)"
)
