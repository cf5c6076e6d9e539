"""``tc``: traffic control's front end over the emulated kernel.

Theory of operation: :func:`tc` takes the command line after ``tc`` (shell
quoting allowed), reads the global options as ``tc/tc.c`` does (``-s``,
``-d``, ``-r``, ``-iec``, ``-o``…, each abbreviable to any prefix that
iproute2's ``matches()`` accepts, first match in tc's own order) and
dispatches on the object: ``qdisc`` (:mod:`.tc_qdisc`) and ``class``
(:mod:`.tc_class`); filters, actions and the monitor are not emulated. What
tc prints on stdout is returned; what it prints on stderr before failing is
raised as :class:`~netstack.errors.ConfigError`, with the kernel's
``Error: …``/``RTNETLINK answers: …`` text when the kernel refused.

iproute2: tc/tc.c.
"""

from __future__ import annotations

import errno
import shlex
from typing import TYPE_CHECKING, Final

from netstack.errors import ConfigError
from netstack.userspace.iproute2.ip.ip_common import matches, split_words
from netstack.userspace.iproute2.status import exit_status
from netstack.userspace.iproute2.tc.q_fifo import FifoUtil, NoqueueUtil, PfifoFastUtil
from netstack.userspace.iproute2.tc.q_fq_codel import FqCodelUtil
from netstack.userspace.iproute2.tc.q_netem import NetemUtil
from netstack.userspace.iproute2.tc.q_prio import PrioUtil
from netstack.userspace.iproute2.tc.q_tbf import TbfUtil
from netstack.userspace.iproute2.tc.tc_class import do_class
from netstack.userspace.iproute2.tc.tc_common import (
    DevSpeed,
    QdiscUtil,
    UnknownQdiscUtil,
    fail,
)
from netstack.userspace.iproute2.tc.tc_qdisc import do_qdisc
from netstack.userspace.iproute2.utils import Iproute2Options, matches_color

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.userspace.process import Machine, Process

__all__ = ["TC_USAGE", "TC_VERSION", "TcKinds", "main", "tc"]

TC_VERSION: Final = "tc utility, iproute2-6.6.0"

TC_USAGE: Final = (
    "Usage:\ttc [ OPTIONS ] OBJECT { COMMAND | help }\n"
    "\ttc [-force] -batch filename\n"
    "where  OBJECT := { qdisc | class | filter | chain |\n"
    "\t\t    action | monitor | exec }\n"
    "       OPTIONS := { -V[ersion] | -s[tatistics] | -d[etails] | -r[aw] |\n"
    "\t\t    -o[neline] | -j[son] | -p[retty] | -c[olor]\n"
    "\t\t    -b[atch] [filename] | -n[etns] name | -N[umeric] |\n"
    "\t\t     -nm | -nam[es] | { -cf | -conf } path\n"
    "\t\t     -br[ief] | -echo }"
)


class TcKinds:
    """The ``qdisc_util`` registry of one tc run. iproute2: tc/tc.c, get_qdisc_kind()."""

    def __init__(self, net: Net) -> None:
        speed = DevSpeed(net)
        self._utils: dict[str, QdiscUtil] = {
            "pfifo": FifoUtil("pfifo"),
            "bfifo": FifoUtil("bfifo"),
            "pfifo_head_drop": FifoUtil("pfifo_head_drop"),
            "pfifo_fast": PfifoFastUtil(),
            "noqueue": NoqueueUtil(),
            "prio": PrioUtil(),
            "tbf": TbfUtil(speed),
            "netem": NetemUtil(speed),
            "fq_codel": FqCodelUtil(),
        }

    def get(self, kind: str) -> QdiscUtil:
        util = self._utils.get(kind)
        if util is None:
            util = self._utils[kind] = UnknownQdiscUtil(kind)
        return util


def _matches_color(opt: str) -> bool:
    """``-c[olor][=always|auto|never]``. iproute2: lib/color.c, matches_color()."""
    name, eq, value = opt.partition("=")
    if not matches(name, "-color"):
        return False
    return not eq or value in ("", "always", "auto", "never")


def _not_supported(what: str) -> ConfigError:
    return ConfigError(f'netstack: "tc {what}" is not supported', errno.EOPNOTSUPP)


def tc(net: Net, command: str) -> str:
    """Run a ``tc`` command line (without the leading ``tc``) on *net*; return its output.

    Raises:
        ConfigError: with the exact text tc (or the kernel, through tc)
            prints on stderr, and the errno where one applies.

    iproute2: tc/tc.c, main() / do_cmd().
    """
    try:
        argv = split_words(command)
    except ValueError as e:
        raise ConfigError(f"tc: cannot parse command line: {e}", errno.EINVAL) from None
    o = Iproute2Options()
    i = 0
    while i < len(argv):
        opt = argv[i]
        if not opt.startswith("-"):
            break
        if matches(opt, "-stats") or matches(opt, "-statistics"):
            o.stats += 1
        elif matches(opt, "-details"):
            o.details += 1
        elif matches(opt, "-raw"):
            o.raw += 1
        elif matches(opt, "-pretty"):
            pass
        elif matches(opt, "-graph"):
            o.graph = True
        elif matches(opt, "-Version"):
            return TC_VERSION + "\n"
        elif matches(opt, "-iec"):
            o.iec = True
        elif matches(opt, "-help"):
            fail(TC_USAGE)
        elif matches(opt, "-force"):
            pass
        elif matches(opt, "-batch"):
            i += 1
            if i >= len(argv):
                fail(TC_USAGE)
            raise _not_supported("-batch")
        elif matches(opt, "-netns"):
            i += 1
            if i >= len(argv):
                fail('Command line is not complete. Try option "help"', status=255)
            fail(f'Cannot open network namespace "{argv[i]}": No such file or directory')
        elif matches(opt, "-Numeric") or matches(opt, "-names") or matches(opt, "-nm"):
            pass
        elif matches(opt, "-cf") or matches(opt, "-conf"):
            i += 1
            if i >= len(argv):
                fail('Command line is not complete. Try option "help"', status=255)
        elif matches_color(opt):
            pass  # output is never a terminal: no colour
        elif matches(opt, "-timestamp") or matches(opt, "-tshort"):
            pass
        elif matches(opt, "-json"):
            raise _not_supported("-json")
        elif matches(opt, "-oneline"):
            o.oneline = True
        elif matches(opt, "-brief") or opt == "-echo":
            pass
        else:
            fail(f'Option "{opt}" is unknown, try "tc -help".', status=255)
        i += 1
    rest = argv[i:]
    if not rest:
        fail(TC_USAGE)
    obj, args = rest[0], rest[1:]
    kinds = TcKinds(net)
    if matches(obj, "qdisc"):
        do_qdisc(net, kinds, o, args)
    elif matches(obj, "class"):
        do_class(net, kinds, o, args)
    elif matches(obj, "filter") or matches(obj, "chain"):
        raise _not_supported("filter")
    elif matches(obj, "actions"):
        raise _not_supported("actions")
    elif matches(obj, "monitor"):
        raise _not_supported("monitor")
    elif matches(obj, "exec"):
        raise _not_supported("exec")
    elif matches(obj, "help"):
        fail(TC_USAGE)
    else:
        fail(f'Object "{obj}" is unknown, try "tc help".', status=255)
    return o.text()


async def main(proc: Process, host: Machine, argv: list[str]) -> int:
    """The ``tc`` command: run *argv* on *host*'s kernel and print what tc prints."""
    try:
        text = tc(host.net, shlex.join(argv))
    except ConfigError as e:  # printed on stderr; the status is tc's for that path
        proc.err(str(e))
        return exit_status(e, "tc")
    if text:
        proc.out(text.rstrip("\n"))
    return 0
