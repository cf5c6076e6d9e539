"""``sysctl``: read and write the Net's ``/proc/sys`` entries (procps-ng syntax).

``sysctl NAME`` prints ``NAME = VALUE``; ``sysctl -n NAME`` only the value;
``sysctl [-w] NAME=VALUE`` sets and prints ``NAME = VALUE`` (procps-ng sets
when the argument contains ``=``, with or without ``-w``); ``sysctl -a
[PREFIX]`` lists. Unknown keys and refused values give procps' messages.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from netstack.errors import ConfigError

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.userspace.process import Machine, Process

__all__ = ["main", "sysctl", "sysctl_spec"]


def sysctl_spec(net: Net, spec: str) -> str:
    """``"NAME"`` → its value; ``"NAME=VALUE"`` → set, and return the new value."""
    if "=" in spec:
        name, _, value = spec.partition("=")
        name = name.strip()
        net.sysctl.write(name, value.strip())
        return net.sysctl.read(name)
    return net.sysctl.read(spec.strip())


def sysctl(net: Net, command: str | list[str]) -> str:
    """Run a ``sysctl`` command line (without the leading ``sysctl``); return its output."""
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    if argv and argv[0] == "sysctl":
        argv = argv[1:]
    values_only = False
    list_all = False
    quiet = False
    args: list[str] = []
    for a in argv:
        if a.startswith("-") and len(a) > 1 and not args:
            for flag in a[1:]:
                if flag == "n":
                    values_only = True
                elif flag == "a" or flag == "A" or flag == "X":
                    list_all = True
                elif flag == "w":
                    pass
                elif flag == "q":
                    quiet = True
                elif flag == "e":
                    pass
                else:
                    raise ConfigError(f"sysctl: invalid option -- '{flag}'")
        else:
            args.append(a)
    out: list[str] = []
    if list_all:
        prefix = args[0] if args else ""
        for name in net.sysctl.names(prefix):
            value = net.sysctl.read(name)
            out.append(value if values_only else f"{name} = {value}")
        return "\n".join(out)
    if not args:
        raise ConfigError(
            "sysctl: no variables specified\nTry `sysctl --help' for more information."
        )
    for a in args:
        if "=" in a:
            name, _, value = a.partition("=")
            name = name.strip()
            net.sysctl.write(name, value.strip())
            if not quiet:
                v = net.sysctl.read(name)
                out.append(v if values_only else f"{name} = {v}")
        else:
            v = net.sysctl.read(a)
            out.append(v if values_only else f"{a.strip()} = {v}")
    return "\n".join(out)


async def main(proc: Process, host: Machine, argv: list[str]) -> int:
    """The ``sysctl`` command: read or set *host*'s ``/proc/sys`` entries and print them."""
    text = sysctl(host.net, argv)
    if text:
        proc.out(text)
    return 0
