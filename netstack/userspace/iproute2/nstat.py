"""``nstat``: the kernel's SNMP counters, as increments since the last run.

Theory of operation: ``nstat`` reads the counters of ``/proc/net/snmp`` (the
IPv4 MIBs ``Ip``, ``Icmp``, ``IcmpMsg``, ``Udp`` and ``IpExt``; ``Forwarding``
and ``DefaultTTL`` are settings, not counters, and are left out) under their
nstat names (``IpInReceives``…), prints those that changed since the history
it kept from its previous run (``#kernel`` then ``NAME VALUE RATE``), and
saves the new values as the history. The history is per host and per
session, as the real one is a file per user (``/tmp/.nstat.u$UID``).
``-a`` ignores the history, ``-z`` shows zeros, ``-n`` only updates, ``-s``
does not update, ``-r`` resets; PATTERNs select names (shell globs).

iproute2: misc/nstat.c.
"""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING, Final

from netstack.ipv4 import ipv4_of

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.userspace.process import Machine, Process

__all__ = ["NSTAT_USAGE", "main", "nstat_counters"]

NSTAT_USAGE: Final = (
    "Usage: nstat [OPTION] [ PATTERN [ PATTERN ] ]\n"
    "   -h, --help           this message\n"
    "   -a, --ignore         ignore history\n"
    "   -n, --nooutput       do history only\n"
    "   -r, --reset          reset history\n"
    "   -s, --noupdate       don't update history\n"
    "   -z, --zeros          show entries with zero activity"
)

_LONG: Final = {
    "--absolute": "a",
    "--zeros": "z",
    "--nooutput": "n",
    "--noupdate": "s",
    "--reset": "r",
    "--help": "h",
}


def nstat_counters(net: Net) -> dict[str, int]:
    """Every counter nstat reads, by its nstat name (zeros included)."""
    out: dict[str, int] = {}
    for mib, snap in ipv4_of(net).snmp().items():
        for key, value in snap.values:
            if key in ("Forwarding", "DefaultTTL"):
                continue
            out[f"{mib}{key}"] = value
    return out


async def main(proc: Process, host: Machine, argv: list[str]) -> int:
    """The ``nstat`` command (see the module docstring)."""
    absolute = zeros = no_output = no_update = reset = False
    patterns: list[str] = []
    for a in argv:
        if a.startswith("--"):
            long = _LONG.get(a)
            if long is None:
                proc.err(f"nstat: unrecognized option '{a}'")
                return 255
            flags = long
        elif a.startswith("-") and len(a) > 1:
            flags = a[1:]
        else:
            patterns.append(a)
            continue
        for c in flags:
            if c == "a":
                absolute = True
            elif c == "z":
                zeros = True
            elif c == "n":
                no_output = True
            elif c == "s":
                no_update = True
            elif c == "r":
                reset = True
            elif c == "h":
                proc.err(NSTAT_USAGE)
                return 255
            else:
                proc.err(f"nstat: invalid option -- '{c}'")
                return 255
    history: dict[str, dict[str, int]] = proc.state.setdefault("nstat", {})
    now = nstat_counters(host.net)
    old = {} if reset or absolute else history.get(host.name, {})
    if not no_output:
        proc.out("#kernel")
        for name, value in now.items():
            delta = value - old.get(name, 0)
            if not delta and not zeros:
                continue
            if patterns and not any(fnmatch.fnmatchcase(name, p) for p in patterns):
                continue
            proc.out(f"{name:<32}{delta:<16}{0.0:6.1f}")
    if not no_update:
        history[host.name] = now
    return 0
