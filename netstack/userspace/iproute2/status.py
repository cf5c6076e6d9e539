"""The exit status of a refused ``ip`` or ``tc`` command, as iproute2's code paths give it.

Theory of operation: iproute2 has no single rule; the status is whatever the
path that printed the message returns. ``ip``'s ``do_cmd`` returns
``-(handler's return)``, so a command the kernel refused (``rtnl_talk``
failed: ``RTNETLINK answers: …`` or the kernel's extack ``Error: …``)
returns -2 and exits 2; a check ip makes itself and answers with ``return
-1`` (``Cannot find device``, ``Device "x" does not exist.``, ``"zz" is
invalid lladdr.``, ``get_prefix``'s ``… prefix is expected rather than …``,
which calls ``exit(1)``) exits 1; ``invarg``, ``duparg``, ``duparg2``,
``missarg``, ``incomplete_command`` and every ``usage()`` call ``exit(-1)``:
255. tc is the same for kernel errors (2) and its parsers' failures (1), but
its usage text is printed with status 0, and ``return -1`` paths in
``tc_qdisc_modify`` (``"root" is duplicate parent ID``), an unknown option
or object exit 255.

A message raised as :class:`Iproute2Exit` carries its status; any other
:class:`~netstack.errors.ConfigError` is classified by its first line:
``RTNETLINK answers:`` or ``Error:`` (the kernel's extack, as
``print_ext_ack_msg`` shows it) → 2, the rest → 1. Statuses checked against
iproute2 6.x's ``ip`` and ``tc`` on Linux 6.18 (tests/userspace/iproute2/
test_exit_status.py runs the same lines on both when run as root).

iproute2: ip/ip.c (do_cmd), lib/utils.c (invarg, duparg, missarg,
incomplete_command, get_prefix), lib/libnetlink.c (rtnl_talk), tc/tc.c.
"""

from __future__ import annotations

from typing import Final

from netstack.errors import ConfigError

__all__ = ["EXIT_KERNEL", "EXIT_USAGE", "Iproute2Exit", "exit_status"]

EXIT_KERNEL: Final = 2  # do_cmd: -(-2)
EXIT_USAGE: Final = 255  # exit(-1)


class Iproute2Exit(ConfigError):
    """A refusal iproute2 printed itself, with the status its code path exits with."""

    def __init__(self, message: str, errno: int | None, status: int) -> None:
        super().__init__(message, errno)
        self.status = status


def exit_status(err: ConfigError, tool: str = "ip") -> int:
    """The status ``ip``/``tc`` exits with after printing ``str(err)``."""
    if isinstance(err, Iproute2Exit):
        return err.status
    first = str(err).split("\n", 1)[0]
    if first.startswith("Usage:"):
        return 0 if tool == "tc" else EXIT_USAGE
    if first.startswith(("RTNETLINK answers:", "Error: ")):
        return EXIT_KERNEL
    return 1
