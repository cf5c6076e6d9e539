"""CoDel, the Controlled-Delay AQM: drop (or mark) by sojourn time, not queue length.

Theory of operation: every packet is stamped when it is queued; at dequeue its
*sojourn time* (now − stamp) is compared with ``target`` (5 ms). While the
sojourn time has stayed above target for a whole ``interval`` (100 ms) — and
the queue holds more than one MTU — CoDel enters the *dropping* state: it
drops (or ECN-marks) the head packet and schedules the next drop at
``interval / sqrt(count)`` later, ``count`` growing with each drop, until a
packet's sojourn time falls below target. ``1/sqrt(count)`` is kept as a
16-bit fixed-point value refined by one Newton step per drop, and the drop
schedule is computed with a reciprocal multiply, exactly as the kernel does.
Times are ``codel_time_t``: nanoseconds >> 10 in a ``u32`` that wraps,
compared with signed differences.

The caller (fq_codel, one instance per flow) supplies the dequeue and drop
operations; this module is the algorithm only.

Kernel: include/net/codel.h, include/net/codel_impl.h.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from netstack.core.inet_ecn import INET_ECN_set_ce
from netstack.core.skbuff import SkBuff
from netstack.sites import kernel
from netstack.wire.ethernet import ETH_P_IP, ETH_P_IPV6

if TYPE_CHECKING:
    from netstack.core.qdisc import Qdisc

__all__ = [
    "CODEL_DISABLED_THRESHOLD",
    "CODEL_SHIFT",
    "MS2TIME",
    "CodelParams",
    "CodelStats",
    "CodelVars",
    "codel_dequeue",
    "codel_time_to_us",
    "us2time",
]

CODEL_SHIFT: Final = 10
REC_INV_SQRT_BITS: Final = 16
REC_INV_SQRT_SHIFT: Final = 32 - REC_INV_SQRT_BITS
CODEL_DISABLED_THRESHOLD: Final = 0x7FFFFFFF  # INT_MAX
_M32: Final = 0xFFFFFFFF
_M64: Final = (1 << 64) - 1
NSEC_PER_USEC: Final = 1000


@kernel("include/net/codel.h", "MS2TIME")
def MS2TIME(ms: int) -> int:
    """Kernel: include/net/codel.h, MS2TIME()."""
    return (ms * 1_000_000) >> CODEL_SHIFT


def us2time(us: int) -> int:
    """Microseconds (as tc sends them) to codel time, as fq_codel_change() converts."""
    return ((us * NSEC_PER_USEC) >> CODEL_SHIFT) & _M32


@kernel("include/net/codel.h", "codel_time_to_us")
def codel_time_to_us(val: int) -> int:
    """Kernel: include/net/codel.h, codel_time_to_us()."""
    return ((val & _M32) << CODEL_SHIFT) // NSEC_PER_USEC


@kernel("codel_get_time", "ktime_get_ns")
def codel_get_time(now_ns: int) -> int:
    """Kernel: codel_get_time() (from ``ktime_get_ns()``)."""
    return (now_ns >> CODEL_SHIFT) & _M32


def _s32(x: int) -> int:
    x &= _M32
    return x - (1 << 32) if x & 0x80000000 else x


@kernel("codel_time_after")
def codel_time_after(a: int, b: int) -> bool:
    """Kernel: codel_time_after()."""
    return _s32(a - b) > 0


@kernel("codel_time_after_eq")
def codel_time_after_eq(a: int, b: int) -> bool:
    """Kernel: codel_time_after_eq()."""
    return _s32(a - b) >= 0


class CodelParams:
    """Kernel: struct codel_params (times in codel units)."""

    __slots__ = ("ce_threshold", "ce_threshold_mask", "ce_threshold_selector", "ecn", "interval",
                 "mtu", "target")  # fmt: skip

    @kernel("codel_params_init")
    def __init__(self) -> None:
        """Kernel: codel_params_init()."""
        self.interval = MS2TIME(100)
        self.target = MS2TIME(5)
        self.ce_threshold = CODEL_DISABLED_THRESHOLD
        self.ce_threshold_mask = 0
        self.ce_threshold_selector = 0
        self.ecn = False
        self.mtu = 0


class CodelVars:
    """One queue's CoDel state (kernel: struct codel_vars)."""

    __slots__ = ("count", "drop_next", "dropping", "first_above_time", "lastcount", "ldelay",
                 "rec_inv_sqrt")  # fmt: skip

    @kernel("codel_vars_init")
    def __init__(self) -> None:
        """Kernel: codel_vars_init()."""
        self.count = 0
        self.lastcount = 0
        self.dropping = False
        self.rec_inv_sqrt = 0
        self.first_above_time = 0
        self.drop_next = 0
        self.ldelay = 0


class CodelStats:
    """Kernel: struct codel_stats."""

    __slots__ = ("ce_mark", "drop_count", "drop_len", "ecn_mark", "maxpacket")

    def __init__(self) -> None:
        self.maxpacket = 0
        self.drop_count = 0
        self.drop_len = 0
        self.ecn_mark = 0
        self.ce_mark = 0


@kernel("include/net/codel_impl.h", "codel_Newton_step")
def codel_newton_step(v: CodelVars) -> None:
    """rec_inv_sqrt ← rec_inv_sqrt/2 · (3 − count·rec_inv_sqrt²), in Q0.32.

    Kernel: include/net/codel_impl.h, codel_Newton_step().
    """
    invsqrt = (v.rec_inv_sqrt << REC_INV_SQRT_SHIFT) & _M32
    invsqrt2 = (invsqrt * invsqrt) >> 32
    val = ((3 << 32) - v.count * invsqrt2) & _M64
    val >>= 2  # avoid overflow in the following multiply
    val = ((val * invsqrt) & _M64) >> (32 - 2 + 1)
    v.rec_inv_sqrt = (val >> REC_INV_SQRT_SHIFT) & 0xFFFF


@kernel("codel_control_law")
def codel_control_law(t: int, interval: int, rec_inv_sqrt: int) -> int:
    """t + interval/sqrt(count). Kernel: codel_control_law()."""
    return (t + ((interval * ((rec_inv_sqrt << REC_INV_SQRT_SHIFT) & _M32)) >> 32)) & _M32


@kernel("skb_get_dsfield")
def skb_get_dsfield(skb: SkBuff) -> int:
    """The IPv4 TOS / IPv6 traffic class byte, or -1. Kernel: skb_get_dsfield()."""
    nh = skb.network_header
    if nh < 0 or nh + 2 > skb.tail:
        return -1
    buf = skb.buf
    if skb.protocol == ETH_P_IP:
        return buf[nh + 1]
    if skb.protocol == ETH_P_IPV6:
        return ((buf[nh] & 0xF) << 4) | (buf[nh + 1] >> 4)
    return -1


SkbLen = Callable[[SkBuff], int]
SkbTime = Callable[[SkBuff], int]


@kernel("include/net/codel_impl.h", "codel_should_drop")
def codel_should_drop(
    skb: SkBuff | None,
    sch: Qdisc,
    v: CodelVars,
    p: CodelParams,
    stats: CodelStats,
    skb_len: SkbLen,
    skb_time: SkbTime,
    now: int,
) -> bool:
    """Kernel: include/net/codel_impl.h, codel_should_drop()."""
    if skb is None:
        v.first_above_time = 0
        return False
    length = skb_len(skb)
    v.ldelay = (now - skb_time(skb)) & _M32
    if length > stats.maxpacket:
        stats.maxpacket = length
    if codel_time_after(p.target, v.ldelay) or sch.backlog <= p.mtu:
        # went below - stay below for at least interval
        v.first_above_time = 0
        return False
    if v.first_above_time == 0:
        # just went above from below: drop if it stays above for an interval
        v.first_above_time = (now + p.interval) & _M32
        return False
    return codel_time_after(now, v.first_above_time)


@kernel("include/net/codel_impl.h", "codel_dequeue")
def codel_dequeue(
    sch: Qdisc,
    p: CodelParams,
    v: CodelVars,
    stats: CodelStats,
    skb_len: SkbLen,
    skb_time: SkbTime,
    drop_func: Callable[[SkBuff], None],
    dequeue_func: Callable[[CodelVars], SkBuff | None],
    now: int,
) -> SkBuff | None:
    """Dequeue the next packet of one CoDel queue, dropping or marking as the law says.

    ``sch.backlog`` is the byte count compared with the MTU (fq_codel passes
    the whole qdisc's).

    Kernel: include/net/codel_impl.h, codel_dequeue().
    """
    skb: SkBuff | None = dequeue_func(v)
    if skb is None:
        v.dropping = False
        return None
    drop = codel_should_drop(skb, sch, v, p, stats, skb_len, skb_time, now)
    if v.dropping:
        if not drop:
            # sojourn time below target - leave dropping state
            v.dropping = False
        elif codel_time_after_eq(now, v.drop_next):
            # Time for the next drop: drop this one and dequeue the next; a
            # large backlog may call for several drops at once.
            while skb is not None and v.dropping and codel_time_after_eq(now, v.drop_next):
                v.count = (v.count + 1) & _M32
                codel_newton_step(v)
                if p.ecn and INET_ECN_set_ce(skb):
                    stats.ecn_mark += 1
                    v.drop_next = codel_control_law(v.drop_next, p.interval, v.rec_inv_sqrt)
                    break
                stats.drop_len += skb_len(skb)
                drop_func(skb)
                stats.drop_count += 1
                skb = dequeue_func(v)
                if not codel_should_drop(skb, sch, v, p, stats, skb_len, skb_time, now):
                    v.dropping = False  # leave dropping state
                else:
                    v.drop_next = codel_control_law(v.drop_next, p.interval, v.rec_inv_sqrt)
    elif drop:
        if p.ecn and INET_ECN_set_ce(skb):
            stats.ecn_mark += 1
        else:
            stats.drop_len += skb_len(skb)
            drop_func(skb)
            stats.drop_count += 1
            skb = dequeue_func(v)
            codel_should_drop(skb, sch, v, p, stats, skb_len, skb_time, now)
        v.dropping = True
        # If min went above target close to when we last went below it,
        # assume the drop rate that controlled the queue then is a good start.
        delta = (v.count - v.lastcount) & _M32
        if delta > 1 and codel_time_after(16 * p.interval, now - v.drop_next):
            v.count = delta
            codel_newton_step(v)
        else:
            v.count = 1
            v.rec_inv_sqrt = 0xFFFFFFFF >> REC_INV_SQRT_SHIFT
        v.lastcount = v.count
        v.drop_next = codel_control_law(now, p.interval, v.rec_inv_sqrt)
    if skb is not None and codel_time_after(v.ldelay, p.ce_threshold):
        set_ce = True
        if p.ce_threshold_mask:
            dsfield = skb_get_dsfield(skb)
            set_ce = dsfield >= 0 and (dsfield & p.ce_threshold_mask) == p.ce_threshold_selector
        if set_ce and INET_ECN_set_ce(skb):
            stats.ce_mark += 1
    return skb
