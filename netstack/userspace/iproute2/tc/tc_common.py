"""What every part of the ``tc`` front end shares: the per-discipline
parser/printer interface and error helpers (the global options and output are
iproute2's one :class:`~netstack.userspace.iproute2.utils.Iproute2Options`).

Theory of operation: ``tc`` finds the code for a discipline by name
(``get_qdisc_kind``: ``q_netem.c`` provides ``netem_qdisc_util``). Each
:class:`QdiscUtil` turns the options after the kind into the value the
kernel side expects (:mod:`netstack.sched.pkt_sched`) and prints what a dump
returns. A kind netstack's tc does not know gets the fallback util, which
accepts no options ('Unknown qdisc "X", hence option "Y" is unparsable') —
the kernel then refuses the kind itself.

A failing ``tc`` prints to stderr and exits non-zero: here it raises
:class:`~netstack.errors.ConfigError` whose text is what it printed.

iproute2: tc/tc.c, tc/tc_util.h, tc/tc_common.h.
"""

from __future__ import annotations

import errno
import re
from typing import TYPE_CHECKING, Any, Final, NoReturn

from netstack.userspace.iproute2.status import Iproute2Exit
from netstack.userspace.iproute2.utils import Iproute2Options

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = ["DevSpeed", "QdiscUtil", "fail"]

_PERCENT_SCAN: Final = re.compile(r"[0-9.%]+")


def fail(*lines: str, err: int = errno.EINVAL, status: int | None = None) -> NoReturn:
    """What tc printed on stderr before giving up, one argument per line.

    *status* is tc's exit status on that path: 1 by default (a parser's
    ``return -1`` that ``tc_qdisc_modify`` turns into 1), 0 after the usage
    text, 255 where tc returns -1 itself (see netstack.userspace.iproute2.status).
    """
    text = "\n".join(line.rstrip("\n") for line in lines)
    if status is None:
        if text.endswith('Command line is not complete. Try option "help"'):
            status = 255  # incomplete_command(): exit(-1)
        else:
            status = 0 if text.startswith("Usage:") else 1
    raise Iproute2Exit(text, err, status)


class QdiscUtil:
    """A discipline's parser and printers (iproute2: ``struct qdisc_util``).

    ``parse_qopt`` is None for kinds tc sends no options for
    (``pfifo_fast``, ``noqueue``); it returns the ``TCA_OPTIONS`` value, or
    None when tc would send no options attribute.
    """

    id: str = ""
    has_parse_qopt: bool = True
    has_parse_copt: bool = False

    def parse_qopt(self, argv: list[str], dev: str) -> Any:
        raise NotImplementedError

    def print_qopt(self, opt: Any, o: Iproute2Options) -> str:
        return ""

    def print_xstats(self, xstats: Any, o: Iproute2Options) -> str | None:
        return None

    def print_copt(self, opt: Any, o: Iproute2Options) -> str:
        return ""


class UnknownQdiscUtil(QdiscUtil):
    """The util ``get_qdisc_kind`` makes for a kind it cannot find.

    iproute2: tc/tc.c, parse_noqopt() / print_noqopt().
    """

    def __init__(self, kind: str) -> None:
        self.id = kind

    def parse_qopt(self, argv: list[str], dev: str) -> Any:
        if argv:
            fail(f'Unknown qdisc "{self.id}", hence option "{argv[0]}" is unparsable')
        return None

    def print_qopt(self, opt: Any, o: Iproute2Options) -> str:
        return "" if opt is None else "[Unknown qdisc, optlen=0] "


class DevSpeed:
    """Percentage rates (``rate 10%``) against the device's link speed.

    tc reads ``/sys/class/net/DEV/speed`` (Mbit/s): a NIC reports its cable
    rate, veth 10000 (as its ethtool settings say); other devices have no
    speed, which tc reports as an unknown property.

    iproute2: tc/tc_util.c, parse_percent_rate(); lib/utils.c, read_prop().
    """

    def __init__(self, net: Net) -> None:
        self.net = net
        self.errors: list[str] = []

    def read_speed(self, dev: str) -> int | None:
        """iproute2: lib/utils.c, read_prop(dev, "speed")."""
        fname = f"/sys/class/net/{dev}/speed"
        d = self.net.dev_get_by_name(dev)
        if d is None:
            self.errors.append(f"fopen {fname}: No such file or directory")
            return None
        speed: int | None = None
        if d.netif_running() and d.carrier:
            if d.kind == "veth":
                speed = 10000  # veth_get_link_ksettings(): SPEED_10000
            elif d.kind == "nic":
                rate = getattr(d.priv, "rate", None)
                speed = int(rate // 1_000_000) if rate else None
        if speed is None:
            self.errors.append(f'property "speed" in file {fname} is currently unknown')
            self.errors.append(f"Failed to parse {fname}")
        return speed

    def percent_rate64(self, text: str, dev: str) -> int | None:
        """``get_percent_rate64``: bytes/s, or None with :attr:`errors` filled."""
        from netstack.userspace.iproute2.tc.tc_util import get_rate64, parse_percent

        self.errors = []
        if not dev:
            self.errors.append("No device specified; specify device to rate limit by percentage")
            return None
        speed = self.read_speed(dev)
        if speed is None:
            return None
        m = _PERCENT_SCAN.match(text)  # sscanf(str, "%m[0-9.%]", …)
        if m is None:
            self.errors.append("Specified rate value could not be read or is malformed")
            return None
        status, perc = parse_percent(m.group())
        if status == 1:
            self.errors.append(f"Invalid rate specified; should be between [0,100]% but is {text}")
            return None
        if status == -1:
            self.errors.append("Specified rate value could not be read or is malformed")
            return None
        r_str = f"{perc * speed * 1000 * 1000:f}"
        if len(r_str) >= 20:
            self.errors.append("Unable to parse calculated rate")
            return None
        return get_rate64(r_str)
