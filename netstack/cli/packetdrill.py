"""``netstack packetdrill [OPTIONS] FILE.pkt|DIR ...``: run packetdrill scripts.

Each script runs on a fresh emulated host in virtual time (no root, no tun
device). Options are packetdrill's own (``--ip_version=ipv6``, ``--mss=1000``,
``--tolerance_usecs=10000``, ``-D SYM=VAL``, ``-v``, …) and apply to every
script, over the scripts' own; ``--timeout=SECS`` bounds, in virtual seconds,
how long a run may wait past a scripted time before it counts as hung.

Output: one line per script (``ok``, ``FAIL`` or ``ERROR`` — bad input) and,
for the failures, packetdrill's report. Exit status: 0 when every script
passed, 1 when one failed, 2 when one was bad input (a syntax error, an unknown
name, an unsupported construct) or no script was found.
"""

from __future__ import annotations

import os
import time
from typing import TextIO

from netstack.testing.packetdrill import cmdline_options, iter_scripts, run_file

__all__ = ["USAGE", "packetdrill"]

USAGE = """\
usage: netstack packetdrill [--OPTION[=VALUE] ...] [-v] [-D SYM=VAL] FILE.pkt|DIR ...
  packetdrill's options: --ip_version=ipv4|ipv6|ipv4-mapped-ipv6 --mss=N --mtu=N
  --tolerance_usecs=N --tolerance_percent=P --bind_port=N --connect_port=N
  --local_ip=A --remote_ip=A --tcp_ts_ecr_scaled --tcp_ts_tick_usecs=N
  --strict_segments --non_fatal=packet,syscall --init_scripts=F,... --define=SYM=VAL
  --dry_run; and --timeout=SECS (virtual seconds a wait may last, default 60)"""


def _parse(argv: list[str]) -> tuple[list[tuple[str, str | None]], list[str]]:
    options: list[tuple[str, str | None]] = []
    paths: list[str] = []
    it = iter(argv)
    for a in it:
        if a in ("-h", "--help"):
            raise SystemExit(USAGE)
        if a == "-v":
            options.append(("verbose", None))
        elif a == "-D":
            options.append(("define", next(it, "")))
        elif a.startswith("-D"):
            options.append(("define", a[2:]))
        elif a.startswith("--") and len(a) > 2:
            name, eq, value = a[2:].partition("=")
            options.append((name, value if eq else None))
        else:
            paths.append(a)
    return options, paths


def packetdrill(argv: list[str], *, out: TextIO, err: TextIO) -> int:
    """Run ``netstack packetdrill ARGV``; returns the exit status."""
    try:
        options, paths = _parse(argv)
    except SystemExit as e:
        print(e.code, file=out)
        return 0
    if not paths:
        print(USAGE, file=err)
        return 2
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        for p in missing:
            print(f"netstack packetdrill: {p}: No such file or directory", file=err)
        return 2
    scripts = list(iter_scripts(paths))
    if not scripts:
        print("netstack packetdrill: no *.pkt scripts found", file=err)
        return 2
    worst = 0
    counts = {"pass": 0, "fail": 0, "error": 0}
    wall = time.perf_counter()
    for path in scripts:
        try:
            with open(path, encoding="utf-8") as f:
                extra = cmdline_options(f.read())
        except OSError:
            extra = []
        result = run_file(path, [*extra, *options])
        counts[result.status] += 1
        for line in result.output:
            print(line, file=out)
        label = {"pass": "ok", "fail": "FAIL", "error": "ERROR"}[result.status]
        print(f"{label:5} {path}  ({result.virtual_seconds:.3f} s virtual)", file=out)
        for w in result.warnings:
            print(w, file=err)
        if not result.passed:
            print(result.message, file=err)
            worst = max(worst, 1 if result.status == "fail" else 2)
    print(
        f"{counts['pass']} passed, {counts['fail']} failed, {counts['error']} errors "
        f"({len(scripts)} scripts, wall {time.perf_counter() - wall:.2f} s)",
        file=out,
    )
    return worst
