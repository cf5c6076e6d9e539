"""``tc`` for netem: delay/jitter/correlation, loss models, duplicate, corrupt,
reorder with gap, rate with overheads, slot, ecn, seed, limit.

Probabilities become ``u32`` fractions (``rint(p * UINT32_MAX)``), delays
psched ticks (64 ns), slot times ns. An optional number after a keyword is
recognised by its first character being a digit, as tc does — so
``delay 100ms 10ms 25%`` is delay, jitter and correlation.

iproute2: tc/q_netem.c.
"""

from __future__ import annotations

from typing import Any, Final

import attrs

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
from netstack.userspace.iproute2.ip.ip_common import Args, get_u32, matches
from netstack.userspace.iproute2.keywords import KeywordTable, parse_keywords
from netstack.userspace.iproute2.tc.netem_dist import netem_dist_table
from netstack.userspace.iproute2.tc.tc_common import DevSpeed, QdiscUtil, fail
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
from netstack.userspace.iproute2.utils import Iproute2Options

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


class _NetemArgs(Args):
    """argc/argv as q_netem.c walks them: ``NEXT_ARG`` and the ``NEXT_IS_NUMBER`` peeks."""

    def next_is_number(self) -> bool:
        """``NEXT_ARG_OK() && isdigit(argv[1][0])``."""
        return bool(self) and _isdigit0(self.peek())

    def next_is_signed_number(self) -> bool:
        """``NEXT_ARG_OK() && (isdigit(argv[1][0]) || argv[1][0] == '-')``."""
        return bool(self) and (_isdigit0(self.peek()) or self.peek()[:1] == "-")


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


@attrs.define
class _NetemRequest:
    """What ``netem_parse_opt`` has read so far (its locals)."""

    speed: DevSpeed
    dev: str
    limit: int = 1000
    latency: int = 0
    jitter: int = 0
    loss: int = 0
    gap: int = 0
    duplicate: int = 0
    delay_corr: int = 0
    loss_corr: int = 0
    dup_corr: int = 0
    reorder_p: int = 0
    reorder_c: int = 0
    corrupt_p: int = 0
    corrupt_c: int = 0
    present_corr: bool = False
    present_reorder: bool = False
    present_corrupt: bool = False
    present_ecn: bool = False
    present_rate: bool = False
    present_seed: bool = False
    present_slot: bool = False
    gimodel: list[int] = attrs.Factory(list)
    gemodel: list[int] = attrs.Factory(list)
    loss_type: str = ""
    rate64: int = 0
    packet_overhead: int = 0
    cell_size: int = 0
    cell_overhead: int = 0
    slot: dict[str, int] = attrs.Factory(
        lambda: {"min_delay": 0, "max_delay": 0, "max_packets": 0, "max_bytes": 0}
    )
    seed: int = 0
    delay_dist: tuple[int, ...] | None = None
    slot_dist: tuple[int, ...] | None = None


_NETEM: Final = KeywordTable[_NetemRequest, _NetemArgs]()
"""netem_parse_opt()'s loop, in iproute2's order (``l`` is ``limit``, ``d`` is ``delay``)."""


@_NETEM.keyword("limit*")
def _netem_limit(req: _NetemRequest, a: _NetemArgs, word: str) -> None:
    size = get_size(a.value())
    if size is None:
        fail(_illegal("limit"))
    req.limit = size


@_NETEM.keyword("latency*", "delay*")
def _netem_delay(req: _NetemRequest, a: _NetemArgs, word: str) -> None:
    req.latency = _get_ticks(a.value(), "latency")
    if a.next_is_number():
        req.jitter = _get_ticks(a.value(), "latency")
        if a.next_is_number():
            req.present_corr = True
            req.delay_corr = _percent(a.value(), "latency")


@_NETEM.keyword("loss*", "drop*")
def _netem_loss(req: _NetemRequest, a: _NetemArgs, word: str) -> None:
    if req.loss > 0 or req.loss_type:
        fail(_illegal("duplicate loss argument\n"))
    arg = a.value()
    if _isdigit0(arg) or arg == "random":
        if arg == "random":
            arg = a.value()
        req.loss = _percent(arg, "loss percent")
        if a.next_is_number():
            req.present_corr = True
            req.loss_corr = _percent(a.value(), "loss correlation")
    elif arg == "state":
        status, p13 = parse_percent(a.value())
        if status:
            fail(_illegal("loss p13"))
        # p13, p31, p32, p23, p14 (defaults: p31 = 1 - p13, p23 = 1)
        req.gimodel = [set_percent(p13), set_percent(1.0 - p13), 0, set_percent(1.0), 0]
        req.loss_type = "gi"
        for idx, name in ((1, "p31"), (2, "p32"), (3, "p23"), (4, "p14")):
            if not a.next_is_number():
                break
            req.gimodel[idx] = _percent(a.value(), f"loss {name}")
    elif arg == "gemodel":
        status, p = parse_percent(a.value())
        if status:
            fail(_illegal("loss gemodel p"))
        req.gemodel = [set_percent(p), set_percent(1.0 - p), 0, 0]  # p, r, h, k1
        req.loss_type = "ge"
        if a.next_is_number():
            req.gemodel[1] = _percent(a.value(), "loss gemodel r")
            if a.next_is_number():
                # the option is "1-h" but the kernel expects "h"
                req.gemodel[2] = UINT32_MAX - _percent(a.value(), "loss gemodel h")
                if a.next_is_number():
                    req.gemodel[3] = _percent(a.value(), "loss gemodel k")
    else:
        fail(f"Unknown loss parameter: {arg}")


@_NETEM.keyword("seed*")
def _netem_seed(req: _NetemRequest, a: _NetemArgs, word: str) -> None:
    req.present_seed = True
    v = get_u64(a.value(), 10)
    if v is None:
        fail(_illegal("seed"))
    req.seed = v


@_NETEM.keyword("ecn*")
def _netem_ecn(req: _NetemRequest, a: _NetemArgs, word: str) -> None:
    req.present_ecn = True


@_NETEM.keyword("reorder*")
def _netem_reorder(req: _NetemRequest, a: _NetemArgs, word: str) -> None:
    req.present_reorder = True
    req.reorder_p = _percent(a.value(), "reorder")
    if a.next_is_number():
        req.present_corr = True
        req.reorder_c = _percent(a.value(), "reorder")


@_NETEM.keyword("corrupt*")
def _netem_corrupt(req: _NetemRequest, a: _NetemArgs, word: str) -> None:
    req.present_corrupt = True
    req.corrupt_p = _percent(a.value(), "corrupt")
    if a.next_is_number():
        req.present_corr = True
        req.corrupt_c = _percent(a.value(), "corrupt")


@_NETEM.keyword("gap*")
def _netem_gap(req: _NetemRequest, a: _NetemArgs, word: str) -> None:
    g = get_u32(a.value(), 0)
    if g is None:
        fail(_illegal("gap"))
    req.gap = g


@_NETEM.keyword("duplicate*")
def _netem_duplicate(req: _NetemRequest, a: _NetemArgs, word: str) -> None:
    req.duplicate = _percent(a.value(), "duplicate")
    if a.next_is_number():
        req.dup_corr = _percent(a.value(), "duplicate")


@_NETEM.keyword("distribution*")
def _netem_distribution(req: _NetemRequest, a: _NetemArgs, word: str) -> None:
    req.delay_dist = _get_distribution(a.value())


def _rate_number(value: int | None) -> int:
    if value is None:
        fail(_illegal("rate"))
    return value


@_NETEM.keyword("rate*")
def _netem_rate(req: _NetemRequest, a: _NetemArgs, word: str) -> None:
    req.present_rate = True
    arg = a.value()
    percent = "%" in arg
    r = req.speed.percent_rate64(arg, req.dev) if percent else get_rate64(arg)
    if r is None:
        fail(*(req.speed.errors if percent else ()), _illegal("rate"))
    req.rate64 = r
    if a.next_is_signed_number():
        req.packet_overhead = _rate_number(get_s32(a.value(), 0))
    if a.next_is_number():
        req.cell_size = _rate_number(get_u32(a.value(), 0))
    if a.next_is_signed_number():
        req.cell_overhead = _rate_number(get_s32(a.value(), 0))


@_NETEM.keyword("slot*")
def _netem_slot(req: _NetemRequest, a: _NetemArgs, word: str) -> None:
    slot = req.slot
    if a.next_is_number():
        req.present_slot = True
        t = get_time64(a.value())
        if t is None:
            fail(_illegal("slot min_delay"))
        slot["min_delay"] = t
        if a.next_is_number():
            t2 = get_time64(a.value())
            if t2 is None or t2 < t:
                fail(_illegal("slot max_delay"))
            slot["max_delay"] = t2
        else:
            slot["max_delay"] = t
    else:
        arg = a.value()
        if arg != "distribution":
            fail(f"Unknown slot parameter: {arg}")
        req.present_slot = True
        req.slot_dist = _get_distribution(a.value())
        t = get_time64(a.value())
        if t is None:
            fail(_illegal("slot delay"))
        slot["dist_delay"] = t
        t = get_time64(a.value())
        if t is None:
            fail(_illegal("slot jitter"))
        if t <= 0:
            fail("Non-positive jitter")
        slot["dist_jitter"] = t
    if a and matches(a.peek(), "packets"):
        a.take()
        v = get_s32(a.peek(), 0) if a else None
        if v is None:
            fail(_illegal("slot packets"))
        slot["max_packets"] = v
        a.take()
    if a and matches(a.peek(), "bytes"):
        a.take()
        v = get_size(a.peek()) if a else None
        if v is None:
            fail(_illegal("slot bytes"))
        slot["max_bytes"] = _s32(v)
        a.take()


def _netem_other(req: _NetemRequest, a: _NetemArgs, word: str) -> None:
    """The final ``else``: ``help``, or a word netem does not know."""
    if word != "help":
        fail(f'What is "{word}"?', NETEM_USAGE)
    fail(NETEM_USAGE)


def _netem_check(req: _NetemRequest) -> None:
    """The checks after the loop, which need every option read."""
    if req.reorder_p:
        if req.latency == 0:
            fail("reordering not possible without specifying some delay", NETEM_USAGE)
        if req.gap == 0:
            req.gap = 1
    elif req.gap > 0:
        fail("gap specified without reorder probability", NETEM_USAGE)
    if req.present_ecn and req.loss <= 0 and not req.loss_type:
        fail("ecn requested without loss model", NETEM_USAGE)
    if req.delay_dist is not None and (req.latency == 0 or req.jitter == 0):
        fail("distribution specified but no latency and jitter values", NETEM_USAGE)


def _netem_options(req: _NetemRequest) -> NetemOptions:
    """The TCA_OPTIONS netem_parse_opt() builds from what it read."""
    gi = req.gimodel
    rate64 = req.rate64
    return NetemOptions(
        qopt=TcNetemQopt(
            latency=req.latency,
            limit=req.limit,
            loss=req.loss,
            gap=req.gap,
            duplicate=req.duplicate,
            jitter=req.jitter,
        ),
        corr=(
            TcNetemCorr(req.delay_corr, req.loss_corr, req.dup_corr) if req.present_corr else None
        ),
        reorder=TcNetemReorder(req.reorder_p, req.reorder_c) if req.present_reorder else None,
        corrupt=TcNetemCorrupt(req.corrupt_p, req.corrupt_c) if req.present_corrupt else None,
        ecn=1 if req.present_ecn else None,
        slot=TcNetemSlot(**req.slot) if req.present_slot else None,
        loss_gi=(
            TcNetemGimodel(p13=gi[0], p31=gi[1], p32=gi[2], p23=gi[3], p14=gi[4])
            if req.loss_type == "gi"
            else None
        ),
        loss_ge=TcNetemGemodel(*req.gemodel) if req.loss_type == "ge" else None,
        rate=(
            TcNetemRate(
                UINT32_MAX if rate64 >= 1 << 32 else rate64,
                req.packet_overhead,
                req.cell_size,
                req.cell_overhead,
            )
            if req.present_rate
            else None
        ),
        rate64=rate64 if req.present_rate and rate64 >= 1 << 32 else None,
        seed=req.seed if req.present_seed else None,
        delay_dist=req.delay_dist,
        slot_dist=req.slot_dist,
    )


class NetemUtil(QdiscUtil):
    """iproute2: tc/q_netem.c, netem_parse_opt() / netem_print_opt()."""

    id = "netem"

    def __init__(self, speed: DevSpeed) -> None:
        self.speed = speed

    def parse_qopt(self, argv: list[str], dev: str) -> Any:
        req = _NetemRequest(self.speed, dev)
        parse_keywords(_NETEM, req, _NetemArgs(argv), _netem_other)
        _netem_check(req)
        return _netem_options(req)

    def print_qopt(self, opt: Any, o: Iproute2Options) -> str:
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
