"""CUBIC congestion control with HyStart (the Linux default).

Theory of operation: after a loss at window ``W_max`` CUBIC cuts the window
to ``beta`` (717/1024 ≈ 0.7) of it and then grows it along a cubic curve of
the time since the loss, ``W(t) = C (t - K)^3 + W_max`` with ``K`` the time to
get back to ``W_max`` — flat near ``W_max``, fast away from it — computed in
the kernel's fixed point (time in 1/1024 s, ``C = bic_scale/1024``). "TCP
friendliness" keeps it at least as fast as Reno would be. Fast convergence
lowers ``W_max`` when a loss comes before the previous maximum was reached.
HyStart leaves slow start early when ACK trains stretch (the pipe is full) or
the RTT rises by more than an eighth of the minimum.

Kernel: net/ipv4/tcp_cubic.c.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from netstack.sites import kernel
from netstack.tcp.cong import (
    CA_EVENT_TX_START,
    TcpCongestionOps,
    tcp_cong_avoid_ai,
    tcp_is_cwnd_limited,
    tcp_reno_undo_cwnd,
    tcp_slow_start,
)

if TYPE_CHECKING:
    from netstack.tcp.sock import TcpSock

__all__ = ["BicTcp", "TcpCubic", "cubic_root"]

BICTCP_BETA_SCALE: Final = 1024
BICTCP_HZ: Final = 10
HYSTART_ACK_TRAIN: Final = 0x1
HYSTART_DELAY: Final = 0x2
HYSTART_MIN_SAMPLES: Final = 8
HYSTART_DELAY_MIN: Final = 4000
HYSTART_DELAY_MAX: Final = 16000

# module parameters (their defaults)
FAST_CONVERGENCE: Final = 1
BETA: Final = 717
BIC_SCALE: Final = 41
TCP_FRIENDLINESS: Final = 1
HYSTART: Final = 1
HYSTART_DETECT: Final = HYSTART_ACK_TRAIN | HYSTART_DELAY
HYSTART_LOW_WINDOW: Final = 16
HYSTART_ACK_DELTA_US: Final = 2000

BETA_SCALE: Final = 8 * (BICTCP_BETA_SCALE + BETA) // 3 // (BICTCP_BETA_SCALE - BETA)
CUBE_RTT_SCALE: Final = BIC_SCALE * 10
CUBE_FACTOR: Final = (1 << (10 + 3 * BICTCP_HZ)) // (BIC_SCALE * 10)

_V: Final = (
    0, 54, 54, 54, 118, 118, 118, 118, 123, 129, 134, 138, 143, 147, 151, 156,
    157, 161, 164, 168, 170, 173, 176, 179, 181, 185, 187, 190, 192, 194, 197, 199,
    200, 202, 204, 206, 209, 211, 213, 215, 217, 219, 221, 222, 224, 225, 227, 229,
    231, 232, 234, 236, 237, 239, 240, 242, 244, 245, 246, 248, 250, 251, 252, 254,
)  # fmt: skip


class BicTcp:
    """CUBIC's per-socket state (kernel: ``struct bictcp``)."""

    __slots__ = (
        "ack_cnt",
        "bic_K",
        "bic_origin_point",
        "cnt",
        "curr_rtt",
        "delay_min",
        "end_seq",
        "epoch_start",
        "found",
        "last_ack",
        "last_cwnd",
        "last_max_cwnd",
        "last_time",
        "round_start",
        "sample_cnt",
        "tcp_cwnd",
    )

    def __init__(self) -> None:
        self.reset()
        self.round_start = 0
        self.end_seq = 0
        self.last_ack = 0
        self.curr_rtt = 0xFFFFFFFF
        self.sample_cnt = 0

    @kernel("bictcp_reset")
    def reset(self) -> None:
        """Kernel: bictcp_reset()."""
        self.cnt = 0
        self.last_max_cwnd = 0
        self.last_cwnd = 0
        self.last_time = 0
        self.bic_origin_point = 0
        self.bic_K = 0
        self.delay_min = 0
        self.epoch_start = 0
        self.ack_cnt = 0
        self.tcp_cwnd = 0
        self.found = 0


@kernel("net/ipv4/tcp_cubic.c", "cubic_root")
def cubic_root(a: int) -> int:
    """Integer cube root: a table lookup and one Newton-Raphson step.

    Kernel: net/ipv4/tcp_cubic.c, cubic_root().
    """
    b = a.bit_length()  # fls64()
    if b < 7:
        return (_V[a] + 35) >> 6
    b = ((b * 84) >> 8) - 1
    shift = a >> (b * 3)
    x = ((_V[shift] + 10) << b) >> 6
    x = 2 * x + a // (x * (x - 1))
    return (x * 341) >> 10


@kernel("bictcp_hystart_reset")
def _hystart_reset(sk: TcpSock, ca: BicTcp) -> None:
    """Kernel: bictcp_hystart_reset()."""
    ca.round_start = ca.last_ack = sk.tcp_mstamp
    ca.end_seq = sk.snd_nxt
    ca.curr_rtt = 0xFFFFFFFF
    ca.sample_cnt = 0


@kernel("bictcp_update")
def bictcp_update(sk: TcpSock, ca: BicTcp, cwnd: int, acked: int) -> None:
    """Compute ``ca.cnt``: ACKs per one-segment increase. Kernel: bictcp_update()."""
    ca.ack_cnt += acked
    jiffies = sk.net.clock.jiffies
    hz = sk.net.clock.hz
    if ca.last_cwnd == cwnd and jiffies - ca.last_time <= hz // 32:
        return
    if not (ca.epoch_start and jiffies == ca.last_time):
        ca.last_cwnd = cwnd
        ca.last_time = jiffies
        if ca.epoch_start == 0:
            ca.epoch_start = jiffies
            ca.ack_cnt = acked
            ca.tcp_cwnd = cwnd
            if ca.last_max_cwnd <= cwnd:
                ca.bic_K = 0
                ca.bic_origin_point = cwnd
            else:
                ca.bic_K = cubic_root(CUBE_FACTOR * (ca.last_max_cwnd - cwnd))
                ca.bic_origin_point = ca.last_max_cwnd
        t = jiffies - ca.epoch_start
        t += -(-ca.delay_min * hz // 1000000)  # usecs_to_jiffies()
        t = (t << BICTCP_HZ) // hz
        offs = ca.bic_K - t if t < ca.bic_K else t - ca.bic_K
        delta = (CUBE_RTT_SCALE * offs * offs * offs) >> (10 + 3 * BICTCP_HZ)
        if t < ca.bic_K:
            bic_target = ca.bic_origin_point - delta
        else:
            bic_target = ca.bic_origin_point + delta
        if bic_target > cwnd:
            ca.cnt = cwnd // (bic_target - cwnd)
        else:
            ca.cnt = 100 * cwnd
        if ca.last_max_cwnd == 0 and ca.cnt > 20:
            ca.cnt = 20  # the initial growth may be too conservative
    if TCP_FRIENDLINESS:
        delta = (cwnd * BETA_SCALE) >> 3
        if delta:
            while ca.ack_cnt > delta:
                ca.ack_cnt -= delta
                ca.tcp_cwnd += 1
        if ca.tcp_cwnd > cwnd:  # Reno would be faster
            max_cnt = cwnd // (ca.tcp_cwnd - cwnd)
            if ca.cnt > max_cnt:
                ca.cnt = max_cnt
    ca.cnt = max(ca.cnt, 2)


@kernel("net/ipv4/tcp_cubic.c", "hystart_update")
def hystart_update(sk: TcpSock, ca: BicTcp, delay: int) -> None:
    """Leave slow start early on a stretched ACK train or a rising RTT.

    Kernel: net/ipv4/tcp_cubic.c, hystart_update().
    """
    if ((ca.end_seq - sk.snd_una) & 0xFFFFFFFF) > 0x7FFFFFFF:  # after(snd_una, end_seq)
        _hystart_reset(sk, ca)
    ext = sk.ext
    if HYSTART_DETECT & HYSTART_ACK_TRAIN:
        now = sk.tcp_mstamp
        if now - ca.last_ack <= HYSTART_ACK_DELTA_US:
            ca.last_ack = now
            # delay_min plus the TSO/GRO aggregation cushion (hystart_ack_delay),
            # halved: there is no internal pacing
            rate = sk.sk_pacing_rate
            ack_delay = min(1000, sk.sk_gso_max_size * 4 * 1000000 // rate) if rate else 0
            threshold = (ca.delay_min + ack_delay) >> 1
            if now - ca.round_start > threshold:
                ca.found = 1
                ext.TCPHystartTrainDetect += 1
                ext.TCPHystartTrainCwnd += sk.snd_cwnd
                sk.snd_ssthresh = sk.snd_cwnd
    if HYSTART_DETECT & HYSTART_DELAY:
        if ca.curr_rtt > delay:
            ca.curr_rtt = delay
        if ca.sample_cnt < HYSTART_MIN_SAMPLES:
            ca.sample_cnt += 1
        else:
            thresh = min(max(ca.delay_min >> 3, HYSTART_DELAY_MIN), HYSTART_DELAY_MAX)
            if ca.curr_rtt > ca.delay_min + thresh:
                ca.found = 1
                ext.TCPHystartDelayDetect += 1
                ext.TCPHystartDelayCwnd += sk.snd_cwnd
                sk.snd_ssthresh = sk.snd_cwnd


class TcpCubic(TcpCongestionOps):
    """CUBIC (kernel: ``cubictcp``)."""

    name = "cubic"

    def _ca(self, sk: TcpSock) -> BicTcp:
        ca = sk.icsk_ca_priv
        if not isinstance(ca, BicTcp):
            ca = sk.icsk_ca_priv = BicTcp()
        return ca

    @kernel("cubictcp_init")
    def init(self, sk: TcpSock) -> None:
        """Kernel: cubictcp_init()."""
        ca = self._ca(sk)
        ca.reset()
        if HYSTART:
            _hystart_reset(sk, ca)

    @kernel("cubictcp_cwnd_event")
    def cwnd_event(self, sk: TcpSock, event: int) -> None:
        """After an idle period, shift the epoch so growth stays on the curve.

        Kernel: cubictcp_cwnd_event().
        """
        if event == CA_EVENT_TX_START:
            ca = self._ca(sk)
            now = sk.net.clock.jiffies
            delta = now - sk.lsndtime
            if ca.epoch_start and delta > 0:
                ca.epoch_start += delta
                if ca.epoch_start > now:
                    ca.epoch_start = now

    @kernel("cubictcp_cong_avoid")
    def cong_avoid(self, sk: TcpSock, ack: int, acked: int) -> None:
        """Kernel: cubictcp_cong_avoid()."""
        if not tcp_is_cwnd_limited(sk):
            return
        ca = self._ca(sk)
        if sk.snd_cwnd < sk.snd_ssthresh:
            acked = tcp_slow_start(sk, acked)
            if not acked:
                return
        bictcp_update(sk, ca, sk.snd_cwnd, acked)
        tcp_cong_avoid_ai(sk, ca.cnt, acked)

    @kernel("cubictcp_recalc_ssthresh")
    def ssthresh(self, sk: TcpSock) -> int:
        """Kernel: cubictcp_recalc_ssthresh()."""
        ca = self._ca(sk)
        ca.epoch_start = 0
        cwnd = sk.snd_cwnd
        if cwnd < ca.last_max_cwnd and FAST_CONVERGENCE:
            ca.last_max_cwnd = (cwnd * (BICTCP_BETA_SCALE + BETA)) // (2 * BICTCP_BETA_SCALE)
        else:
            ca.last_max_cwnd = cwnd
        return max((cwnd * BETA) // BICTCP_BETA_SCALE, 2)

    @kernel("cubictcp_state")
    def set_state(self, sk: TcpSock, new_state: int) -> None:
        """Kernel: cubictcp_state()."""
        if new_state == 4:  # TCP_CA_Loss
            ca = self._ca(sk)
            ca.reset()
            _hystart_reset(sk, ca)

    @kernel("cubictcp_acked")
    def pkts_acked(self, sk: TcpSock, pkts_acked: int, rtt_us: int) -> None:
        """Track the minimum delay; feed HyStart. Kernel: cubictcp_acked()."""
        if rtt_us < 0:
            return
        ca = self._ca(sk)
        if ca.epoch_start and sk.net.clock.jiffies - ca.epoch_start < sk.net.clock.hz:
            return  # discard delay samples right after fast recovery
        delay = rtt_us or 1
        if ca.delay_min == 0 or ca.delay_min > delay:
            ca.delay_min = delay
        if (
            not ca.found
            and sk.snd_cwnd < sk.snd_ssthresh
            and HYSTART
            and sk.snd_cwnd >= HYSTART_LOW_WINDOW
        ):
            hystart_update(sk, ca, delay)

    def undo_cwnd(self, sk: TcpSock) -> int:
        return tcp_reno_undo_cwnd(sk)
