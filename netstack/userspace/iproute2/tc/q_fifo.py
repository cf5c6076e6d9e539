"""``tc`` for pfifo, bfifo, pfifo_head_drop, pfifo_fast and noqueue.

iproute2: tc/q_fifo.c (and pfifo_fast's printer, prio_print_opt).
"""

from __future__ import annotations

from typing import Any

from netstack.sched.pkt_sched import TcFifoQopt, TcPrioQopt
from netstack.userspace.iproute2.tc.q_prio import print_prio_opt
from netstack.userspace.iproute2.tc.tc_common import QdiscUtil, fail
from netstack.userspace.iproute2.tc.tc_util import get_size, sprint_size
from netstack.userspace.iproute2.utils import Iproute2Options

__all__ = ["FifoUtil", "NoqueueUtil", "PfifoFastUtil"]

FIFO_USAGE = "Usage: ... <[p|b]fifo | pfifo_head_drop> [ limit NUMBER ]"


class FifoUtil(QdiscUtil):
    """iproute2: tc/q_fifo.c, fifo_parse_opt() / fifo_print_opt()."""

    def __init__(self, kind: str) -> None:
        self.id = kind

    def parse_qopt(self, argv: list[str], dev: str) -> Any:
        limit: int | None = None
        i = 0
        while i < len(argv):
            word = argv[i]
            if word == "limit":
                i += 1
                if i >= len(argv):
                    fail('Command line is not complete. Try option "help"')
                size = get_size(argv[i])
                if size is None:
                    fail(f'{self.id}: Illegal value for "limit": "{argv[i]}"')
                limit = size
            elif word == "help":
                fail(FIFO_USAGE)
            else:
                fail(f'{self.id}: unknown parameter "{word}"', FIFO_USAGE)
            i += 1
        return TcFifoQopt(limit) if limit is not None else None

    def print_qopt(self, opt: Any, o: Iproute2Options) -> str:
        if not isinstance(opt, TcFifoQopt):
            return ""
        if self.id == "bfifo":
            return f"limit {sprint_size(opt.limit)}"
        return f"limit {opt.limit}p"


class PfifoFastUtil(QdiscUtil):
    """pfifo_fast: no options; printed as a prio. iproute2: tc/q_fifo.c, pfifo_fast_qdisc_util."""

    id = "pfifo_fast"
    has_parse_qopt = False

    def print_qopt(self, opt: Any, o: Iproute2Options) -> str:
        return print_prio_opt(opt) if isinstance(opt, TcPrioQopt) else ""


class NoqueueUtil(QdiscUtil):
    """noqueue: tc has no q_noqueue.c, so the fallback util serves it."""

    id = "noqueue"

    def parse_qopt(self, argv: list[str], dev: str) -> Any:
        if argv:
            fail(f'Unknown qdisc "noqueue", hence option "{argv[0]}" is unparsable')
        return None
