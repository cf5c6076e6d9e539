"""``cat FILE…``: the kernel's files a netstack host has, printed as ``cat`` prints them.

Theory of operation: a host has no file system; ``cat`` knows the files the
kernel exposes and reads each through the kernel's own view of it:
``/proc/sys/…`` (the sysctl table, as procfs shows it), ``/proc/net/snmp``
(the IPv4 MIBs, two lines per MIB: names then values, as
``snmp_seq_show`` prints them) and ``/sys/…`` (:mod:`netstack.core.net_sysfs`).
Anything else is ``No such file or directory``, exit status 1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from netstack.core.net_sysfs import sysfs
from netstack.errors import ConfigError, NetstackError
from netstack.ipv4 import ipv4_of
from netstack.userspace.procps.sysctl import sysctl_spec

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.userspace.process import Machine, Process

__all__ = ["main", "proc_net_snmp"]


def proc_net_snmp(net: Net) -> str:
    """``/proc/net/snmp``: for each MIB (IpExt is in ``/proc/net/netstat``), names then values."""
    lines = []
    for mib, snap in ipv4_of(net).snmp().items():
        if mib == "IpExt":
            continue
        names = " ".join(k for k, _ in snap.values)
        values = " ".join(str(v) for _, v in snap.values)
        lines += [f"{mib}: {names}", f"{mib}: {values}"]
    return "\n".join(lines)


async def main(proc: Process, host: Machine, argv: list[str]) -> int:
    """``cat /proc/sys/…``, ``/proc/net/snmp``, ``/sys/…``."""
    net = host.net
    status = 0
    for path in argv:
        if path.startswith("/proc/sys/"):
            try:
                proc.out(sysctl_spec(net, path[len("/proc/sys/") :]))
            except ConfigError:
                proc.err(f"cat: {path}: No such file or directory")
                status = 1
        elif path == "/proc/net/snmp":
            proc.out(proc_net_snmp(net))
        elif path.startswith("/sys/"):
            try:
                proc.out(sysfs(net, path[len("/sys/") :]).rstrip("\n"))
            except (ConfigError, NetstackError, OSError):
                proc.err(f"cat: {path}: No such file or directory")
                status = 1
        else:
            proc.err(f"cat: {path}: No such file or directory")
            status = 1
    return status
