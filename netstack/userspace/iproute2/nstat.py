"""``nstat``: the kernel's SNMP counters, as increments since the last run.

Theory of operation: as iproute2's nstat, this one reads the three files the
kernel prints its MIBs in and nothing else: ``/proc/net/snmp`` and
``/proc/net/netstat`` (pairs of lines, names then values: ``Ip``, ``Icmp``,
``IcmpMsg``, ``Tcp``, ``Udp``, ``UdpLite``; ``TcpExt``, ``IpExt`` — nstat's
``load_ugly_table``) and ``/proc/net/snmp6`` (one ``NAME VALUE`` a line —
``load_good_table``), in nstat's order: snmp, then snmp6, then netstat. A
counter's name is its MIB's prefix and its own (``TcpActiveOpens``,
``Ip6InReceives``, ``TcpExtTCPHPHits``); settings that are no counters
(``IpForwarding``, ``IpDefaultTTL``, ``TcpRtoAlgorithm``, ``TcpRtoMin``,
``TcpRtoMax``, ``TcpMaxConn``, ``TcpCurrEstab``) are left out, as nstat's
``useless_numbers`` leaves them.

It prints the counters that changed since the history kept from its
previous run (``#kernel`` then ``NAME VALUE RATE``, ``%-32s%-16llu%6.1f``)
and saves the new values as the history; counters a PATTERN did not select
keep their old history, so a later run still shows their increments. The
history is per host and per session, as the real one is a file per user
(``/tmp/.nstat.u$UID``). ``-a`` ignores the history, ``-z`` shows zeros,
``-n`` only updates, ``-s`` does not update, ``-r`` resets, ``-j`` prints
JSON (``-p`` pretty, as iproute2's json_writer indents). The rate column is
always 0.0: there is no ``-d`` daemon sampling in the background.

:func:`nstat_counters` is what lab files' ``expect`` reads.

iproute2: misc/nstat.c.
"""

from __future__ import annotations

import fnmatch
import json
from typing import TYPE_CHECKING, Final

from netstack.ipv4.proc import netstat_seq_show, snmp_seq_show

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.userspace.process import Machine, Process

__all__ = ["NSTAT_USAGE", "USELESS_NUMBERS", "main", "nstat_counters"]

NSTAT_USAGE: Final = (
    "Usage: nstat [OPTION] [ PATTERN [ PATTERN ] ]\n"
    "   -h, --help\t\tthis message\n"
    "   -a, --ignore\tignore history\n"
    "   -d, --scan=SECS\tsample every statistics every SECS\n"
    "   -j, --json          format output in JSON\n"
    "   -n, --nooutput\tdo history only\n"
    "   -p, --pretty        pretty print\n"
    "   -r, --reset\t\treset history\n"
    "   -s, --noupdate\tdon't update history\n"
    "   -t, --interval=SECS\treport average over the last SECS\n"
    "   -V, --version\toutput version information\n"
    "   -z, --zeros\t\tshow entries with zero activity"
)

USELESS_NUMBERS: Final = frozenset(
    {
        "IpForwarding",
        "IpDefaultTTL",
        "TcpRtoAlgorithm",
        "TcpRtoMin",
        "TcpRtoMax",
        "TcpMaxConn",
        "TcpCurrEstab",
    }
)

_LONG: Final = {
    "--ignore": "a",
    "--zeros": "z",
    "--nooutput": "n",
    "--noupdate": "s",
    "--reset": "r",
    "--json": "j",
    "--pretty": "p",
    "--help": "h",
    "--version": "V",
}


def _ugly_table(text: str) -> list[tuple[str, int]]:
    """``Mib: names`` / ``Mib: values`` pairs → ``[(MibName, value)]``. nstat: load_ugly_table()."""
    lines = text.splitlines()
    out: list[tuple[str, int]] = []
    for head, values in zip(lines[::2], lines[1::2], strict=True):
        prefix, _, names = head.partition(": ")
        for name, value in zip(names.split(), values.partition(": ")[2].split(), strict=True):
            out.append((prefix + name, int(value)))
    return out


def _good_table(text: str) -> list[tuple[str, int]]:
    """``NAME VALUE`` lines → ``[(NAME, value)]``. nstat: load_good_table()."""
    out = []
    for line in text.splitlines():
        name, value = line.split()
        out.append((name, int(value)))
    return out


def nstat_counters(net: Net) -> dict[str, int]:
    """Every counter nstat reads, by its nstat name, in nstat's order (zeros included)."""
    rows = _ugly_table(snmp_seq_show(net))
    ipv6 = getattr(net, "ipv6", None)
    if ipv6 is not None and hasattr(ipv6, "proc_net_snmp6"):
        rows += _good_table(ipv6.proc_net_snmp6())
    rows += _ugly_table(netstat_seq_show(net))
    return {name: value for name, value in rows if name not in USELESS_NUMBERS}


def _json(values: dict[str, int], pretty: bool) -> str:
    """iproute2's json_writer: ``{"kernel":{…}}``, or indented by four with ``-p``."""
    if pretty:
        return json.dumps({"kernel": values}, indent=4)
    return json.dumps({"kernel": values}, separators=(",", ":"))


async def main(proc: Process, host: Machine, argv: list[str]) -> int:
    """The ``nstat`` command (see the module docstring)."""
    flags: set[str] = set()
    patterns: list[str] = []
    for a in argv:
        if a.startswith("--"):
            long = _LONG.get(a)
            if long is None:
                proc.err(f"nstat: unrecognized option '{a}'")
                proc.err(NSTAT_USAGE)
                return 255
            letters = long
        elif a.startswith("-") and len(a) > 1:
            letters = a[1:]
        else:
            patterns.append(a)
            continue
        for c in letters:
            if c in "vV":
                proc.out("nstat utility, iproute2-6.1.0")
                return 0
            if c not in "azrnsjp":
                if c not in "h?":
                    proc.err(f"nstat: invalid option -- '{c}'")
                proc.err(NSTAT_USAGE)
                return 255
            flags.add(c)
    zeros = "z" in flags
    history: dict[str, dict[str, int]] = proc.state.setdefault("nstat", {})
    if "r" in flags:
        history.pop(host.name, None)
    old = history.get(host.name)
    now = nstat_counters(host.net)

    def selected(name: str) -> bool:
        return not patterns or any(fnmatch.fnmatchcase(name, p) for p in patterns)

    if "n" not in flags:
        shown: dict[str, int] = {}
        for name, value in now.items():
            delta = value if old is None or "a" in flags else value - old.get(name, 0)
            if (delta or zeros) and selected(name):
                shown[name] = delta
        if "j" in flags:
            proc.out(_json(shown, "p" in flags))
        else:
            proc.out("#kernel")
            for name, delta in shown.items():
                proc.out(f"{name:<32}{delta:<16}{0.0:6.1f}")
    if "s" not in flags:
        # dump_kern_db(hist, 1): counters a pattern left out keep the history they had
        previous = old or {}
        history[host.name] = {
            name: value if selected(name) else previous.get(name, 0) for name, value in now.items()
        }
    return 0
