"""``tc`` for netem: delay/jitter/correlation, loss models, duplicate, corrupt,
reorder with gap, rate with overheads, slot, ecn, seed, limit.

Probabilities become ``u32`` fractions (``rint(p * UINT32_MAX)``), delays
psched ticks (64 ns), slot times ns. An optional number after a keyword is
recognised by its first character being a digit, as tc does — so
``delay 100ms 10ms 25%`` is delay, jitter and correlation.

iproute2: tc/q_netem.c.
"""

from __future__ import annotations

from typing import Any

from netstack.sched.pkt_sched import (
    NetemOptions,
    TcNetemCorr,
    TcNetemCorrupt,
    TcNetemGemodel,
    TcNetemGimodel,
    TcNetemQopt,
    TcNetemRate,
    TcNetemReorder,
    TcNetemSlot,
)
from netstack.userspace.iproute2.ip.ip_common import get_u32, matches
from netstack.userspace.iproute2.tc.netem_dist import netem_dist_table
from netstack.userspace.iproute2.tc.tc_common import DevSpeed, QdiscUtil, TcOptions, fail
from netstack.userspace.iproute2.tc.tc_util import (
    UINT32_MAX,
    get_percent,
    get_rate64,
    get_s32,
    get_size,
    get_time,
    get_time64,
    get_u64,
    parse_percent,
    set_percent,
    sprint_percent,
    sprint_rate,
    sprint_ticks,
    sprint_time64,
    tc_core_time2big,
    tc_core_time2tick,
)

__all__ = ["NETEM_USAGE", "NetemUtil"]

NETEM_USAGE = (
    "Usage: ... netem [ limit PACKETS ]\n"
    "                 [ delay TIME [ JITTER [CORRELATION]]]\n"
    "                 [ distribution {uniform|normal|pareto|paretonormal} ]\n"
    "                 [ corrupt PERCENT [CORRELATION]]\n"
    "                 [ duplicate PERCENT [CORRELATION]]\n"
    "                 [ loss random PERCENT [CORRELATION]]\n"
    "                 [ loss state P13 [P31 [P32 [P23 P14]]]\n"
    "                 [ loss gemodel PERCENT [R [1-H [1-K]]]\n"
    "                 [ seed SEED \n]"
    "                 [ ecn ]\n"
    "                 [ reorder PERCENT [CORRELATION] [ gap DISTANCE ]]\n"
    "                 [ rate RATE [PACKETOVERHEAD] [CELLSIZE] [CELLOVERHEAD]]\n"
    "                 [ slot MIN_DELAY [MAX_DELAY] [packets MAX_PACKETS] [bytes MAX_BYTES]]\n"
    "                 [ slot distribution {uniform|normal|pareto|paretonormal|custom}\n"
    "                   DELAY JITTER [packets MAX_PACKETS] [bytes MAX_BYTES]]"
)

_DIGITS = "0123456789"


def _isdigit0(s: str) -> bool:
    """C ``isdigit(s[0])``."""
    return bool(s) and s[0] in _DIGITS


def _get_distribution(name: str) -> tuple[int, ...]:
    """The table of ``/usr/lib/tc/NAME.dist``. iproute2: q_netem.c, get_distribution()."""
    table = netem_dist_table(name)
    if table is None:
        path = f"/usr/lib/tc//{name}.dist"
        fail(f"No distribution data for {name} ({path}: No such file or directory)")
    return table


def _illegal(arg: str) -> str:
    """iproute2: q_netem.c, explain1()."""
    return f'Illegal "{arg}"'


def _s32(x: int) -> int:
    x &= UINT32_MAX
    return x - (1 << 32) if x & 0x80000000 else x


class _Argv:
    """argc/argv as q_netem.c walks them (``NEXT_ARG``, ``NEXT_IS_NUMBER``)."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.i = 0

    @property
    def cur(self) -> str:
        return self.argv[self.i]

    def next_arg(self) -> str:
        self.i += 1
        if self.i >= len(self.argv):
            fail('Command line is not complete. Try option "help"')
        return self.argv[self.i]

    def next_ok(self) -> bool:
        return self.i + 1 < len(self.argv)

    def next_is_number(self) -> bool:
        """``NEXT_ARG_OK() && isdigit(argv[1][0])``."""
        return self.next_ok() and _isdigit0(self.argv[self.i + 1])

    def next_is_signed_number(self) -> bool:
        """``NEXT_ARG_OK() && (isdigit(argv[1][0]) || argv[1][0] == '-')``."""
        return self.next_ok() and (
            _isdigit0(self.argv[self.i + 1]) or self.argv[self.i + 1][:1] == "-"
        )


def _get_ticks(text: str, what: str) -> int:
    """Time → psched ticks, refusing what does not fit. iproute2: q_netem.c, get_ticks()."""
    t = get_time(text)
    if t is None:
        fail(_illegal(what))
    if tc_core_time2big(t):
        fail(f"Illegal {t} time (too large)", _illegal(what))
    return tc_core_time2tick(t)


def _percent(text: str, what: str) -> int:
    p = get_percent(text)
    if p is None:
        fail(_illegal(what))
    return p


class NetemUtil(QdiscUtil):
    """iproute2: tc/q_netem.c, netem_parse_opt() / netem_print_opt()."""

    id = "netem"

    def __init__(self, speed: DevSpeed) -> None:
        self.speed = speed

    def parse_qopt(self, argv: list[str], dev: str) -> Any:
        a = _Argv(argv)
        limit = 1000
        latency = jitter = loss = gap = duplicate = 0
        delay_corr = loss_corr = dup_corr = 0
        reorder_p = reorder_c = corrupt_p = corrupt_c = 0
        present_corr = present_reorder = present_corrupt = present_ecn = False
        present_rate = present_seed = present_slot = False
        gimodel: list[int] = []
        gemodel: list[int] = []
        loss_type = ""
        rate64 = 0
        packet_overhead = cell_size = cell_overhead = 0
        slot = {"min_delay": 0, "max_delay": 0, "max_packets": 0, "max_bytes": 0}
        seed = 0
        delay_dist: tuple[int, ...] | None = None
        slot_dist: tuple[int, ...] | None = None
        while a.i < len(argv):
            word = a.cur
            if matches(word, "limit"):
                size = get_size(a.next_arg())
                if size is None:
                    fail(_illegal("limit"))
                limit = size
            elif matches(word, "latency") or matches(word, "delay"):
                latency = _get_ticks(a.next_arg(), "latency")
                if a.next_is_number():
                    jitter = _get_ticks(a.next_arg(), "latency")
                    if a.next_is_number():
                        present_corr = True
                        delay_corr = _percent(a.next_arg(), "latency")
            elif matches(word, "loss") or matches(word, "drop"):
                if loss > 0 or loss_type:
                    fail(_illegal("duplicate loss argument\n"))
                arg = a.next_arg()
                if _isdigit0(arg) or arg == "random":
                    if arg == "random":
                        arg = a.next_arg()
                    loss = _percent(arg, "loss percent")
                    if a.next_is_number():
                        present_corr = True
                        loss_corr = _percent(a.next_arg(), "loss correlation")
                elif arg == "state":
                    status, p13 = parse_percent(a.next_arg())
                    if status:
                        fail(_illegal("loss p13"))
                    # p13, p31, p32, p23, p14 (defaults: p31 = 1 - p13, p23 = 1)
                    gimodel = [set_percent(p13), set_percent(1.0 - p13), 0, set_percent(1.0), 0]
                    loss_type = "gi"
                    for idx, name in ((1, "p31"), (2, "p32"), (3, "p23"), (4, "p14")):
                        if not a.next_is_number():
                            break
                        gimodel[idx] = _percent(a.next_arg(), f"loss {name}")
                elif arg == "gemodel":
                    status, p = parse_percent(a.next_arg())
                    if status:
                        fail(_illegal("loss gemodel p"))
                    gemodel = [set_percent(p), set_percent(1.0 - p), 0, 0]  # p, r, h, k1
                    loss_type = "ge"
                    if a.next_is_number():
                        gemodel[1] = _percent(a.next_arg(), "loss gemodel r")
                        if a.next_is_number():
                            # the option is "1-h" but the kernel expects "h"
                            h = _percent(a.next_arg(), "loss gemodel h")
                            gemodel[2] = UINT32_MAX - h
                            if a.next_is_number():
                                gemodel[3] = _percent(a.next_arg(), "loss gemodel k")
                else:
                    fail(f"Unknown loss parameter: {arg}")
            elif matches(word, "seed"):
                present_seed = True
                v = get_u64(a.next_arg(), 10)
                if v is None:
                    fail(_illegal("seed"))
                seed = v
            elif matches(word, "ecn"):
                present_ecn = True
            elif matches(word, "reorder"):
                present_reorder = True
                reorder_p = _percent(a.next_arg(), "reorder")
                if a.next_is_number():
                    present_corr = True
                    reorder_c = _percent(a.next_arg(), "reorder")
            elif matches(word, "corrupt"):
                present_corrupt = True
                corrupt_p = _percent(a.next_arg(), "corrupt")
                if a.next_is_number():
                    present_corr = True
                    corrupt_c = _percent(a.next_arg(), "corrupt")
            elif matches(word, "gap"):
                g = get_u32(a.next_arg(), 0)
                if g is None:
                    fail(_illegal("gap"))
                gap = g
            elif matches(word, "duplicate"):
                duplicate = _percent(a.next_arg(), "duplicate")
                if a.next_is_number():
                    dup_corr = _percent(a.next_arg(), "duplicate")
            elif matches(word, "distribution"):
                delay_dist = _get_distribution(a.next_arg())
            elif matches(word, "rate"):
                present_rate = True
                arg = a.next_arg()
                r = self.speed.percent_rate64(arg, dev) if "%" in arg else get_rate64(arg)
                if r is None:
                    fail(*(self.speed.errors if "%" in arg else ()), _illegal("rate"))
                rate64 = r
                if a.next_is_signed_number():
                    v = get_s32(a.next_arg(), 0)
                    if v is None:
                        fail(_illegal("rate"))
                    packet_overhead = v
                if a.next_is_number():
                    v = get_u32(a.next_arg(), 0)
                    if v is None:
                        fail(_illegal("rate"))
                    cell_size = v
                if a.next_is_signed_number():
                    v = get_s32(a.next_arg(), 0)
                    if v is None:
                        fail(_illegal("rate"))
                    cell_overhead = v
            elif matches(word, "slot"):
                if a.next_is_number():
                    present_slot = True
                    t = get_time64(a.next_arg())
                    if t is None:
                        fail(_illegal("slot min_delay"))
                    slot["min_delay"] = t
                    if a.next_is_number():
                        t2 = get_time64(a.next_arg())
                        if t2 is None or t2 < t:
                            fail(_illegal("slot max_delay"))
                        slot["max_delay"] = t2
                    else:
                        slot["max_delay"] = t
                else:
                    arg = a.next_arg()
                    if arg != "distribution":
                        fail(f"Unknown slot parameter: {arg}")
                    present_slot = True
                    slot_dist = _get_distribution(a.next_arg())
                    t = get_time64(a.next_arg())
                    if t is None:
                        fail(_illegal("slot delay"))
                    slot["dist_delay"] = t
                    t = get_time64(a.next_arg())
                    if t is None:
                        fail(_illegal("slot jitter"))
                    if t <= 0:
                        fail("Non-positive jitter")
                    slot["dist_jitter"] = t
                if a.next_ok() and matches(argv[a.i + 1], "packets"):
                    a.next_arg()
                    v = get_s32(argv[a.i + 1], 0) if a.next_ok() else None
                    if v is None:
                        fail(_illegal("slot packets"))
                    slot["max_packets"] = v
                    a.next_arg()
                if a.next_ok() and matches(argv[a.i + 1], "bytes"):
                    a.next_arg()
                    v = get_size(argv[a.i + 1]) if a.next_ok() else None
                    if v is None:
                        fail(_illegal("slot bytes"))
                    slot["max_bytes"] = _s32(v)
                    a.next_arg()
            else:
                if word != "help":
                    fail(f'What is "{word}"?', NETEM_USAGE)
                fail(NETEM_USAGE)
            a.i += 1

        if reorder_p:
            if latency == 0:
                fail("reordering not possible without specifying some delay", NETEM_USAGE)
            if gap == 0:
                gap = 1
        elif gap > 0:
            fail("gap specified without reorder probability", NETEM_USAGE)
        if present_ecn and loss <= 0 and not loss_type:
            fail("ecn requested without loss model", NETEM_USAGE)
        if delay_dist is not None and (latency == 0 or jitter == 0):
            fail("distribution specified but no latency and jitter values", NETEM_USAGE)

        return NetemOptions(
            qopt=TcNetemQopt(
                latency=latency,
                limit=limit,
                loss=loss,
                gap=gap,
                duplicate=duplicate,
                jitter=jitter,
            ),
            corr=TcNetemCorr(delay_corr, loss_corr, dup_corr) if present_corr else None,
            reorder=TcNetemReorder(reorder_p, reorder_c) if present_reorder else None,
            corrupt=TcNetemCorrupt(corrupt_p, corrupt_c) if present_corrupt else None,
            ecn=1 if present_ecn else None,
            slot=TcNetemSlot(**slot) if present_slot else None,
            loss_gi=(
                TcNetemGimodel(
                    p13=gimodel[0], p31=gimodel[1], p32=gimodel[2], p23=gimodel[3], p14=gimodel[4]
                )
                if loss_type == "gi"
                else None
            ),
            loss_ge=TcNetemGemodel(*gemodel) if loss_type == "ge" else None,
            rate=(
                TcNetemRate(
                    UINT32_MAX if rate64 >= 1 << 32 else rate64,
                    packet_overhead,
                    cell_size,
                    cell_overhead,
                )
                if present_rate
                else None
            ),
            rate64=rate64 if present_rate and rate64 >= 1 << 32 else None,
            seed=seed if present_seed else None,
            delay_dist=delay_dist,
            slot_dist=slot_dist,
        )

    def print_qopt(self, opt: Any, o: TcOptions) -> str:
        if not isinstance(opt, NetemOptions):
            return ""
        q = opt.qopt
        cor = opt.corr
        parts = [f"limit {_s32(q.limit)}"]
        if q.latency:
            parts.append(f" delay {sprint_ticks(q.latency)}")
            if q.jitter:
                parts.append(f"  {sprint_ticks(q.jitter)}")
                if cor is not None and cor.delay_corr:
                    parts.append(f" {sprint_percent(cor.delay_corr)}")
        if q.loss:
            parts.append(f" loss {sprint_percent(q.loss)}")
            if cor is not None and cor.loss_corr:
                parts.append(f" {sprint_percent(cor.loss_corr)}")
        if opt.loss_gi is not None:
            gi = opt.loss_gi
            parts.append(
                f" loss state p13 {sprint_percent(gi.p13)} p31 {sprint_percent(gi.p31)}"
                f" p32 {sprint_percent(gi.p32)} p23 {sprint_percent(gi.p23)}"
                f" p14 {sprint_percent(gi.p14)}"
            )
        if opt.loss_ge is not None:
            ge = opt.loss_ge
            parts.append(
                f" loss gemodel p {sprint_percent(ge.p)} r {sprint_percent(ge.r)}"
                f" 1-h {sprint_percent(UINT32_MAX - ge.h)} 1-k {sprint_percent(ge.k1)}"
            )
        if q.duplicate:
            parts.append(f" duplicate {sprint_percent(q.duplicate)}")
            if cor is not None and cor.dup_corr:
                parts.append(f" {sprint_percent(cor.dup_corr)}")
        if opt.reorder is not None and opt.reorder.probability:
            parts.append(f" reorder {sprint_percent(opt.reorder.probability)}")
            if opt.reorder.correlation:
                parts.append(f" {sprint_percent(opt.reorder.correlation)}")
        if opt.corrupt is not None and opt.corrupt.probability:
            parts.append(f" corrupt {sprint_percent(opt.corrupt.probability)}")
            if opt.corrupt.correlation:
                parts.append(f" {sprint_percent(opt.corrupt.correlation)}")
        rate = opt.rate
        if rate is not None and rate.rate:
            rate64 = opt.rate64 or rate.rate
            parts.append(f" rate {sprint_rate(rate64, o.iec)}")
            if rate.packet_overhead:
                parts.append(f" packetoverhead {rate.packet_overhead}")
            if rate.cell_size:
                parts.append(f" cellsize {rate.cell_size}")
            if rate.cell_overhead:
                parts.append(f" celloverhead {rate.cell_overhead}")
        if opt.slot is not None:
            s = opt.slot
            if s.dist_jitter > 0:
                delay, jit = sprint_time64(s.dist_delay), sprint_time64(s.dist_jitter)
                parts.append(f" slot distribution {delay} {jit}")
            else:
                parts.append(f" slot {sprint_time64(s.min_delay)} {sprint_time64(s.max_delay)}")
            if s.max_packets:
                parts.append(f" packets {s.max_packets}")
            if s.max_bytes:
                parts.append(f" bytes {s.max_bytes}")
        if opt.seed is not None:  # after slot, as the manual lists it
            parts.append(f" seed {opt.seed}")
        if opt.ecn:
            parts.append(" ecn ")
        if q.gap:
            parts.append(f" gap {q.gap}")
        return "".join(parts)
