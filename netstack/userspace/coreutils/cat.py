"""``cat FILE…``: the kernel's files a netstack host has, printed as ``cat`` prints them.

Theory of operation: a host has no file system; ``cat`` knows the files the
kernel exposes and reads each through the kernel's own view of it:
``/proc/sys/…`` (the sysctl table, as procfs shows it), ``/proc/net/snmp``
and ``/proc/net/netstat`` (two lines per MIB: names then values, as
``snmp_seq_show``/``netstat_seq_show`` print them: :mod:`netstack.ipv4.proc`),
``/proc/net/snmp6`` (``NAME<TAB>VALUE`` lines) and ``/sys/…``
(:mod:`netstack.core.net_sysfs`).
Anything else is ``No such file or directory``, exit status 1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from netstack.core.net_sysfs import sysfs
from netstack.errors import ConfigError, NetstackError
from netstack.ipv4.proc import (
    netstat_seq_show,
    snmp_seq_show,
    sockstat6_seq_show,
    sockstat_seq_show,
)
from netstack.userspace.procps.sysctl import sysctl_spec

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.userspace.process import Machine, Process

__all__ = ["main", "proc_net_file"]


def proc_net_file(net: Net, name: str) -> str | None:
    """The text of ``/proc/net/NAME`` (``snmp``, ``netstat``, ``snmp6``), or None."""
    if name == "snmp":
        return snmp_seq_show(net)
    if name == "netstat":
        return netstat_seq_show(net)
    if name == "sockstat":
        return sockstat_seq_show(net)
    if name == "sockstat6":
        return sockstat6_seq_show(net)
    if name == "snmp6":
        ipv6 = getattr(net, "ipv6", None)
        if ipv6 is not None and hasattr(ipv6, "proc_net_snmp6"):
            return str(ipv6.proc_net_snmp6())
    return None


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
        elif path.startswith("/proc/net/") and (
            text := proc_net_file(net, path[len("/proc/net/") :])
        ):
            proc.out(text.rstrip("\n"))
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
