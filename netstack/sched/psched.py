"""Packet-scheduler time and rate arithmetic shared by the shaping disciplines.

Theory of operation: ``tc`` speaks *psched ticks* (64 ns since 2.6.23:
``PSCHED_SHIFT`` 6) for times and bytes/s for rates; the kernel converts to
nanoseconds at once. A rate becomes a ``psched_ratecfg``: a multiplier and a
shift chosen so that ``(len * mult) >> shift`` is the transmission time of
``len`` bytes in ns with 31 significant bits — integer arithmetic with the
kernel's exact rounding, so tbf and netem's ``rate`` pace packets to the
nanosecond the kernel would.

Kernel: include/net/pkt_sched.h (PSCHED_*), include/net/sch_generic.h
(psched_l2t_ns, struct psched_ratecfg), net/sched/sch_generic.c
(psched_ratecfg_precompute).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from netstack.sched.pkt_sched import TC_LINKLAYER_ATM, TC_LINKLAYER_MASK, TcRatespec
from netstack.sites import kernel

if TYPE_CHECKING:
    from netstack.core.netdevice import NetDevice

__all__ = [
    "NSEC_PER_SEC",
    "PSCHED_NS2TICKS",
    "PSCHED_SHIFT",
    "PSCHED_TICKS2NS",
    "PschedRatecfg",
    "psched_mtu",
]

NSEC_PER_SEC: Final = 1_000_000_000
PSCHED_SHIFT: Final = 6
U32_MAX: Final = 0xFFFFFFFF


@kernel("include/net/pkt_sched.h", "PSCHED_TICKS2NS")
def PSCHED_TICKS2NS(x: int) -> int:
    """Kernel: include/net/pkt_sched.h, PSCHED_TICKS2NS()."""
    return x << PSCHED_SHIFT


@kernel("include/net/pkt_sched.h", "PSCHED_NS2TICKS")
def PSCHED_NS2TICKS(x: int) -> int:
    """Kernel: include/net/pkt_sched.h, PSCHED_NS2TICKS()."""
    return x >> PSCHED_SHIFT


@kernel("psched_mtu")
def psched_mtu(dev: NetDevice) -> int:
    """The largest frame a device sends: MTU plus link header. Kernel: psched_mtu()."""
    return dev.mtu + dev.hard_header_len


class PschedRatecfg:
    """A rate ready for integer time arithmetic (kernel: ``struct psched_ratecfg``)."""

    __slots__ = ("linklayer", "mpu", "mult", "overhead", "rate_bytes_ps", "shift")

    @kernel("net/sched/sch_generic.c", "psched_ratecfg_precompute")
    def __init__(self, conf: TcRatespec | None = None, rate64: int = 0) -> None:
        """Kernel: net/sched/sch_generic.c, psched_ratecfg_precompute()."""
        self.rate_bytes_ps = 0
        self.mult = 0  # memset(r, 0): "no rate" (tbf without peakrate)
        self.shift = 0
        self.overhead = 0
        self.mpu = 0
        self.linklayer = 0
        if conf is None:
            return
        self.mult = 1
        self.overhead = conf.overhead
        self.mpu = conf.mpu
        self.rate_bytes_ps = max(conf.rate, rate64)
        self.linklayer = conf.linklayer & TC_LINKLAYER_MASK
        rate = self.rate_bytes_ps
        if rate <= 0:
            return
        factor = NSEC_PER_SEC
        while True:
            self.mult = factor // rate
            if self.mult & (1 << 31) or factor & (1 << 63):
                break
            factor <<= 1
            self.shift += 1

    @kernel("psched_l2t_ns")
    def l2t_ns(self, length: int) -> int:
        """Nanoseconds to send *length* bytes at this rate. Kernel: psched_l2t_ns()."""
        length += self.overhead
        if length < self.mpu:
            length = self.mpu
        if self.linklayer == TC_LINKLAYER_ATM:
            return (((length + 47) // 48) * 53 * self.mult) >> self.shift
        return (length * self.mult) >> self.shift

    @kernel("sch_tbf.c", "psched_ns_t2l")
    def t2l(self, time_ns: int) -> int:
        """Bytes that fit in *time_ns* at this rate. Kernel: sch_tbf.c, psched_ns_t2l()."""
        length = time_ns * self.rate_bytes_ps // NSEC_PER_SEC
        if self.linklayer == TC_LINKLAYER_ATM:
            length = length // 53 * 48
        return length - self.overhead if length > self.overhead else 0

    @kernel("psched_ratecfg_getrate")
    def getrate(self) -> TcRatespec:
        """The ratespec a dump reports. Kernel: psched_ratecfg_getrate()."""
        return TcRatespec(
            linklayer=self.linklayer,
            overhead=self.overhead,
            mpu=self.mpu,
            rate=min(self.rate_bytes_ps, U32_MAX),
        )

    def __bool__(self) -> bool:
        return self.rate_bytes_ps != 0
