"""``tc`` for tbf: ``rate R burst B (limit L | latency T) [peakrate P mtu M]``.

``latency`` is turned into a byte ``limit`` here, in tc (``rate * latency +
burst``), and printed back from the limit as ``lat``; ``burst`` travels both
as psched ticks (``buffer``) and as bytes (``TCA_TBF_BURST``).

iproute2: tc/q_tbf.c.
"""

from __future__ import annotations

from typing import Any

from netstack.sched.pkt_sched import (
    TC_LINKLAYER_ETHERNET,
    TC_LINKLAYER_MASK,
    TbfOptions,
    TcRatespec,
    TcTbfQopt,
)
from netstack.userspace.iproute2.ip.ip_common import matches
from netstack.userspace.iproute2.tc.tc_common import DevSpeed, QdiscUtil, fail
from netstack.userspace.iproute2.tc.tc_util import (
    TIME_UNITS_PER_SEC,
    _to_u32,
    get_linklayer,
    get_rate64,
    get_size,
    get_size_and_cell,
    get_time,
    get_u16,
    sprint_linklayer,
    sprint_rate,
    sprint_size,
    sprint_time,
    tc_calc_cell_log,
    tc_calc_xmitsize,
    tc_calc_xmittime,
    tc_core_tick2time,
)
from netstack.userspace.iproute2.utils import Iproute2Options

__all__ = ["TbfUtil"]

TBF_USAGE = (
    "Usage: ... tbf limit BYTES burst BYTES[/BYTES] rate KBPS [ mtu BYTES[/BYTES] ]\n"
    "               [ peakrate KBPS ] [ latency TIME ] [ overhead BYTES ] [ linklayer TYPE ]"
)


def _explain1(arg: str, val: str) -> str:
    return f'tbf: illegal value for "{arg}": "{val}"'


class TbfUtil(QdiscUtil):
    """iproute2: tc/q_tbf.c, tbf_parse_opt() / tbf_print_opt()."""

    id = "tbf"

    def __init__(self, speed: DevSpeed) -> None:
        self.speed = speed

    def parse_qopt(self, argv: list[str], dev: str) -> Any:
        limit = 0
        buffer = mtu = mpu = latency = 0
        rcell_log = pcell_log = -1
        overhead = 0
        linklayer = TC_LINKLAYER_ETHERNET
        rate64 = prate64 = 0
        i = 0

        def value() -> str:
            nonlocal i
            i += 1
            if i >= len(argv):
                fail('Command line is not complete. Try option "help"')
            return argv[i]

        while i < len(argv):
            word = argv[i]
            if matches(word, "limit"):
                v = value()
                if limit:
                    fail('tbf: duplicate "limit" specification')
                if latency:
                    fail('tbf: specifying both "latency" and "limit" is not allowed')
                size = get_size(v)
                if size is None:
                    fail(_explain1("limit", v))
                limit = size
            elif matches(word, "latency"):
                v = value()
                if latency:
                    fail('tbf: duplicate "latency" specification')
                if limit:
                    fail('tbf: specifying both "limit" and "/latency" is not allowed')
                t = get_time(v)
                if t is None:
                    fail(_explain1("latency", v))
                latency = t
            elif matches(word, "burst") or word in ("buffer", "maxburst"):
                v = value()
                if buffer:
                    fail('tbf: duplicate "buffer/burst/maxburst" specification')
                sc = get_size_and_cell(v)
                if sc is None:
                    fail(_explain1(word, v))
                buffer, rcell_log = sc
            elif word in ("mtu", "minburst"):
                v = value()
                if mtu:
                    fail('tbf: duplicate "mtu/minburst" specification')
                sc = get_size_and_cell(v)
                if sc is None:
                    fail(_explain1(word, v))
                mtu, pcell_log = sc
            elif word == "mpu":
                v = value()
                if mpu:
                    fail('tbf: duplicate "mpu" specification')
                size = get_size(v)
                if size is None:
                    fail(_explain1("mpu", v))
                mpu = size
            elif word == "rate":
                v = value()
                if rate64:
                    fail('tbf: duplicate "rate" specification')
                r = self.speed.percent_rate64(v, dev) if "%" in v else get_rate64(v)
                if r is None:
                    fail(*self.speed.errors, _explain1("rate", v))
                rate64 = r
            elif matches(word, "peakrate"):
                v = value()
                if prate64:
                    fail('tbf: duplicate "peakrate" specification')
                r = self.speed.percent_rate64(v, dev) if "%" in v else get_rate64(v)
                if r is None:
                    fail(*self.speed.errors, _explain1("peakrate", v))
                prate64 = r
            elif matches(word, "overhead"):
                v = value()
                if overhead:
                    fail('tbf: duplicate "overhead" specification')
                oh = get_u16(v, 10)
                if oh is None:
                    fail(_explain1("overhead", v))
                overhead = oh
            elif matches(word, "linklayer"):
                v = value()
                ll = get_linklayer(v)
                if ll is None:
                    fail(_explain1("linklayer", v))
                linklayer = ll
            elif word == "help":
                fail(TBF_USAGE)
            else:
                fail(f'tbf: unknown parameter "{word}"', TBF_USAGE)
            i += 1

        # "Be nice to the user: try to emit all error messages in one go."
        errors = []
        if rate64 == 0:
            errors.append('tbf: the "rate" parameter is mandatory.')
        if not buffer:
            errors.append('tbf: the "burst" parameter is mandatory.')
        if prate64 and not mtu:
            errors.append('tbf: when "peakrate" is specified, "mtu" must also be specified.')
        if limit == 0 and latency == 0:
            errors.append('tbf: either "limit" or "latency" is required.')
        if errors:
            fail(*errors, TBF_USAGE)

        if limit == 0:
            lim = rate64 * float(latency) / TIME_UNITS_PER_SEC + buffer
            if prate64:
                lim2 = prate64 * float(latency) / TIME_UNITS_PER_SEC + mtu
                lim = min(lim, lim2)
            limit = _to_u32(lim)
        rate32 = 0xFFFFFFFF if rate64 >= 1 << 32 else rate64
        prate32 = 0xFFFFFFFF if prate64 >= 1 << 32 else prate64
        rate = TcRatespec(
            cell_log=tc_calc_cell_log(mtu, rcell_log),
            linklayer=linklayer & TC_LINKLAYER_MASK,
            overhead=overhead,
            cell_align=-1,
            mpu=mpu,
            rate=rate32,
        )
        opt_buffer = tc_calc_xmittime(rate32, buffer)
        peakrate = TcRatespec()
        opt_mtu = 0
        if prate32:
            peakrate = TcRatespec(
                cell_log=tc_calc_cell_log(mtu, pcell_log),
                linklayer=linklayer & TC_LINKLAYER_MASK,
                overhead=overhead,
                cell_align=-1,
                mpu=mpu,
                rate=prate32,
            )
            opt_mtu = tc_calc_xmittime(prate32, mtu)
        return TbfOptions(
            TcTbfQopt(rate=rate, peakrate=peakrate, limit=limit, buffer=opt_buffer, mtu=opt_mtu),
            rate64=rate64 if rate64 >= 1 << 32 else None,
            prate64=prate64 if prate32 and prate64 >= 1 << 32 else None,
            burst=buffer,
            pburst=mtu if prate32 else None,
        )

    def print_qopt(self, opt: Any, o: Iproute2Options) -> str:
        if not isinstance(opt, TbfOptions) or opt.parms is None:
            return ""
        q = opt.parms
        rate64 = opt.rate64 if opt.rate64 is not None else q.rate.rate
        parts = [f"rate {sprint_rate(rate64, o.iec)} "]
        buffer = tc_calc_xmitsize(rate64, q.buffer)
        if o.details:
            parts.append(f"burst {sprint_size(buffer)}/{1 << q.rate.cell_log} ")
            parts.append(f"mpu {sprint_size(q.rate.mpu)} ")
        else:
            parts.append(f"burst {sprint_size(buffer)} ")
        if o.raw:
            parts.append(f"[{q.buffer:08x}] ")
        prate64 = opt.prate64 if opt.prate64 is not None else q.peakrate.rate
        if prate64:
            parts.append(f"peakrate {sprint_rate(prate64, o.iec)} ")
            if q.mtu or q.peakrate.mpu:
                mtu = tc_calc_xmitsize(prate64, q.mtu)
                if o.details:
                    parts.append(f"mtu {sprint_size(mtu)}/{1 << q.peakrate.cell_log} ")
                    parts.append(f"mpu {sprint_size(q.peakrate.mpu)} ")
                else:
                    parts.append(f"minburst {sprint_size(mtu)} ")
                if o.raw:
                    parts.append(f"[{q.mtu:08x}] ")
        latency = (
            TIME_UNITS_PER_SEC * (q.limit / float(rate64)) - tc_core_tick2time(q.buffer)
            if rate64
            else float("inf")
        )
        if prate64:
            lat2 = TIME_UNITS_PER_SEC * (q.limit / float(prate64)) - tc_core_tick2time(q.mtu)
            latency = max(latency, lat2)
        if latency >= 0.0:
            parts.append(f"lat {sprint_time(latency)} ")
        if o.raw or latency < 0.0:
            parts.append(f"limit {sprint_size(q.limit)} ")
        if q.rate.overhead:
            parts.append(f"overhead {q.rate.overhead} ")
        linklayer = q.rate.linklayer & TC_LINKLAYER_MASK
        if linklayer > TC_LINKLAYER_ETHERNET or o.details:
            parts.append(f"linklayer {sprint_linklayer(linklayer)} ")
        return "".join(parts)
