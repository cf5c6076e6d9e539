"""``tc`` for prio: ``bands N priomap P1 P2 …``.

iproute2: tc/q_prio.c.
"""

from __future__ import annotations

from typing import Any

from netstack.sched.pkt_sched import TcPrioQopt
from netstack.userspace.iproute2.ip.ip_common import get_integer, get_unsigned
from netstack.userspace.iproute2.tc.tc_common import QdiscUtil, fail
from netstack.userspace.iproute2.utils import Iproute2Options

__all__ = ["PrioUtil", "print_prio_opt"]

PRIO_USAGE = "Usage: ... prio bands NUMBER priomap P1 P2...[multiqueue]"
TC_PRIO_MAX = 15


def print_prio_opt(opt: TcPrioQopt) -> str:
    """``bands 3 priomap  1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1`` — two spaces: tc prints
    ``"priomap "`` and then ``" %d"`` for each entry. iproute2: prio_print_opt()."""
    return f"bands {opt.bands} priomap " + "".join(f" {b}" for b in opt.priomap)


class PrioUtil(QdiscUtil):
    """iproute2: tc/q_prio.c, prio_parse_opt() / prio_print_opt()."""

    id = "prio"

    def parse_qopt(self, argv: list[str], dev: str) -> Any:
        bands = 3
        priomap = [1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1]
        pmap_mode = False
        idx = 0
        usage_printed: list[str] = []
        i = 0
        while i < len(argv):
            word = argv[i]
            if word == "bands":
                if pmap_mode:
                    usage_printed.append(PRIO_USAGE)  # explain(), and carry on
                i += 1
                if i >= len(argv):
                    fail(*usage_printed, 'Command line is not complete. Try option "help"')
                value = get_integer(argv[i], 10)
                if value is None:
                    fail(*usage_printed, 'Illegal "bands"')
                bands = value
            elif word == "priomap":
                if pmap_mode:
                    fail(*usage_printed, "Error: duplicate priomap")
                pmap_mode = True
            elif word == "multiqueue":
                pass  # TCA_PRIO_MQ: no multiqueue devices here
            elif word == "help":
                fail(*usage_printed, PRIO_USAGE)
            else:
                if not pmap_mode:
                    fail(*usage_printed, f'What is "{word}"?', PRIO_USAGE)
                band = get_unsigned(word, 10)
                if band is None:
                    fail(*usage_printed, 'Illegal "priomap" element')
                if band >= (bands & 0xFFFFFFFF):
                    fail(*usage_printed, '"priomap" element is out of bands')
                if idx > TC_PRIO_MAX:
                    fail(*usage_printed, f'"priomap" index > TC_PRIO_MAX={TC_PRIO_MAX}')
                priomap[idx] = band & 0xFF
                idx += 1
            i += 1
        return TcPrioQopt(bands, tuple(priomap))

    def print_qopt(self, opt: Any, o: Iproute2Options) -> str:
        return print_prio_opt(opt) if isinstance(opt, TcPrioQopt) else ""
