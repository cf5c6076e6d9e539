"""``hostname``: print the host's name (the UTS name, ``uname -n``).

Kernel/userland: hostname (Debian's ``hostname`` package); kernel: kernel/utsname.c.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from netstack.userspace.process import Machine, Process

__all__ = ["main"]


async def main(proc: Process, host: Machine, argv: list[str]) -> int:
    """``hostname``: the host's name on stdout."""
    proc.out(host.name)
    return 0
