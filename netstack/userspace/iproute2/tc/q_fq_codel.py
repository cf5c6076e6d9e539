"""``tc`` for fq_codel: limit, flows, quantum, target, interval, [no]ecn,
ce_threshold, ce_threshold_selector, memory_limit, drop_batch.

Only the options given are sent; the kernel keeps its defaults (and, on
``change``, the current values) for the rest.

iproute2: tc/q_fq_codel.c.
"""

from __future__ import annotations

from typing import Any

from netstack.sched.pkt_sched import FqCodelClassXstats, FqCodelOptions, FqCodelXstats
from netstack.userspace.iproute2.ip.ip_common import get_u8, get_unsigned
from netstack.userspace.iproute2.tc.tc_common import QdiscUtil, fail
from netstack.userspace.iproute2.tc.tc_util import get_size, get_time, sprint_size, sprint_time
from netstack.userspace.iproute2.utils import Iproute2Options

__all__ = ["FqCodelUtil"]

FQ_CODEL_USAGE = (
    "Usage: ... fq_codel\t[ limit PACKETS ] [ flows NUMBER ]\n"
    "\t\t\t[ memory_limit BYTES ]\n"
    "\t\t\t[ target TIME ] [ interval TIME ]\n"
    "\t\t\t[ quantum BYTES ] [ [no]ecn ]\n"
    "\t\t\t[ ce_threshold TIME ]\n"
    "\t\t\t[ ce_threshold_selector VALUE/MASK ]\n"
    "\t\t\t[ drop_batch SIZE ]"
)


class FqCodelUtil(QdiscUtil):
    """iproute2: tc/q_fq_codel.c, fq_codel_parse_opt() / fq_codel_print_opt()."""

    id = "fq_codel"

    def parse_qopt(self, argv: list[str], dev: str) -> Any:
        limit = flows = target = interval = quantum = drop_batch = 0
        ce_threshold = memory = 0xFFFFFFFF
        ce_mask = 0
        ce_selector = 0xFF
        ecn = -1
        i = 0

        def value() -> str:
            nonlocal i
            i += 1
            if i >= len(argv):
                fail('Command line is not complete. Try option "help"')
            return argv[i]

        while i < len(argv):
            word = argv[i]
            if word in ("limit", "flows", "quantum", "drop_batch"):
                v = get_unsigned(value(), 0)
                if v is None:
                    fail(f'Illegal "{word}"')
                if word == "limit":
                    limit = v
                elif word == "flows":
                    flows = v
                elif word == "quantum":
                    quantum = v
                else:
                    drop_batch = v
            elif word in ("target", "ce_threshold", "interval"):
                t = get_time(value())
                if t is None:
                    fail(f'Illegal "{word}"')
                if word == "target":
                    target = t
                elif word == "interval":
                    interval = t
                else:
                    ce_threshold = t
            elif word == "ce_threshold_selector":
                sel, slash, mask_text = value().partition("/")
                if not slash:
                    fail('Missing mask for "ce_threshold_selector"')
                m = get_u8(mask_text, 0)
                if m is None:
                    fail('Illegal mask for "ce_threshold_selector"')
                s = get_u8(sel, 0)
                if s is None:
                    fail('Illegal "ce_threshold_selector"')
                ce_mask, ce_selector = m, s
            elif word == "memory_limit":
                size = get_size(value())
                if size is None:
                    fail('Illegal "memory_limit"')
                memory = size
            elif word == "ecn":
                ecn = 1
            elif word == "noecn":
                ecn = 0
            elif word == "help":
                fail(FQ_CODEL_USAGE)
            else:
                fail(f'What is "{word}"?', FQ_CODEL_USAGE)
            i += 1
        return FqCodelOptions(
            limit=limit or None,
            flows=flows or None,
            quantum=quantum or None,
            interval=interval or None,
            target=target or None,
            ecn=ecn if ecn != -1 else None,
            ce_threshold=ce_threshold if ce_threshold != 0xFFFFFFFF else None,
            ce_threshold_mask=ce_mask if ce_selector != 0xFF else None,
            ce_threshold_selector=ce_selector if ce_selector != 0xFF else None,
            memory_limit=memory if memory != 0xFFFFFFFF else None,
            drop_batch_size=drop_batch or None,
        )

    def print_qopt(self, opt: Any, o: Iproute2Options) -> str:
        if not isinstance(opt, FqCodelOptions):
            return ""
        parts = []
        if opt.limit is not None:
            parts.append(f"limit {opt.limit}p ")
        if opt.flows is not None:
            parts.append(f"flows {opt.flows} ")
        if opt.quantum is not None:
            parts.append(f"quantum {opt.quantum} ")
        if opt.target is not None:
            parts.append(f"target {sprint_time(opt.target)} ")
        if opt.ce_threshold is not None:
            parts.append(f"ce_threshold {sprint_time(opt.ce_threshold)} ")
        if opt.ce_threshold_mask or opt.ce_threshold_selector:
            sel = opt.ce_threshold_selector or 0
            mask = opt.ce_threshold_mask or 0
            parts.append(f"ce_threshold_selector {sel:#x}/{mask:#x} ")
        if opt.interval is not None:
            parts.append(f"interval {sprint_time(opt.interval)} ")
        if opt.memory_limit is not None:
            parts.append(f"memory_limit {sprint_size(opt.memory_limit)} ")
        if opt.ecn:
            parts.append("ecn ")
        if opt.drop_batch_size is not None:
            parts.append(f"drop_batch {opt.drop_batch_size} ")
        return "".join(parts)

    def print_xstats(self, xstats: Any, o: Iproute2Options) -> str | None:
        if isinstance(xstats, FqCodelXstats):
            st = xstats
            s = (
                f"  maxpacket {st.maxpacket} drop_overlimit {st.drop_overlimit}"
                f" new_flow_count {st.new_flow_count} ecn_mark {st.ecn_mark}"
            )
            if st.ce_mark:
                s += f" ce_mark {st.ce_mark}"
            if st.memory_usage:
                s += f" memory_used {st.memory_usage}"
            if st.drop_overmemory:
                s += f" drop_overmemory {st.drop_overmemory}"
            return (
                s + o.sl + (f"  new_flows_len {st.new_flows_len} old_flows_len {st.old_flows_len}")
            )
        if isinstance(xstats, FqCodelClassXstats):
            c = xstats
            s = (
                f"  deficit {c.deficit} count {c.count} lastcount {c.lastcount}"
                f" ldelay {sprint_time(c.ldelay)}"
            )
            if c.dropping:
                s += " dropping"
                if c.drop_next < 0:
                    s += f" drop_next -{sprint_time(-c.drop_next)}"
                else:
                    s += f" drop_next {sprint_time(c.drop_next)}"
            return s
        return None
