"""Pluggable congestion control: the ops table, Reno, and the helpers CUBIC shares.

Theory of operation: each socket points at a :class:`TcpCongestionOps`
(kernel: ``icsk_ca_ops``) chosen at creation from ``net.ipv4.tcp_congestion_control``
or later with the ``TCP_CONGESTION`` socket option; per-socket algorithm state
lives in ``sk.icsk_ca_priv``. The algorithms are registered per Net
(``tcp_register_congestion_control``) when a host is built. TCP calls
``ssthresh`` when it reduces the window (entering recovery or loss),
``cong_avoid`` to grow it on ACKs that deliver data, ``undo_cwnd`` when a
reduction proves spurious, ``set_state``/``cwnd_event``/``pkts_acked`` to keep
the algorithm informed.

Reno: slow start adds one segment per segment acknowledged up to ``ssthresh``
(``tcp_slow_start``), congestion avoidance one per window
(``tcp_cong_avoid_ai``), and a loss halves the window (``tcp_reno_ssthresh``).

Kernel: net/ipv4/tcp_cong.c, include/net/tcp.h (struct tcp_congestion_ops).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from netstack.sites import kernel

if TYPE_CHECKING:
    from netstack.tcp.sock import TcpSock

__all__ = [
    "CA_EVENT_COMPLETE_CWR",
    "CA_EVENT_CWND_RESTART",
    "CA_EVENT_LOSS",
    "CA_EVENT_TX_START",
    "TcpCongestionOps",
    "TcpReno",
    "tcp_cong_avoid_ai",
    "tcp_is_cwnd_limited",
    "tcp_reno_cong_avoid",
    "tcp_reno_ssthresh",
    "tcp_reno_undo_cwnd",
    "tcp_slow_start",
]

# enum tcp_ca_event
CA_EVENT_TX_START = 0
CA_EVENT_CWND_RESTART = 1
CA_EVENT_COMPLETE_CWR = 2
CA_EVENT_LOSS = 3
CA_EVENT_ECN_NO_CE = 4
CA_EVENT_ECN_IS_CE = 5


class TcpCongestionOps:
    """A congestion control algorithm (kernel: ``struct tcp_congestion_ops``).

    Subclasses override what their algorithm implements; the defaults are
    what a NULL op does in the kernel.
    """

    name = ""

    def init(self, sk: TcpSock) -> None:
        """New connection (``tcp_init_congestion_control``)."""

    def release(self, sk: TcpSock) -> None:
        """Socket destroyed or algorithm changed."""

    def ssthresh(self, sk: TcpSock) -> int:
        """The slow-start threshold after a loss."""
        raise NotImplementedError

    def cong_avoid(self, sk: TcpSock, ack: int, acked: int) -> None:
        """Grow the window for *acked* newly delivered segments."""
        raise NotImplementedError

    def set_state(self, sk: TcpSock, new_state: int) -> None:
        """The CA state is changing (``tcp_set_ca_state``)."""

    def cwnd_event(self, sk: TcpSock, event: int) -> None:
        """An event (CA_EVENT_*)."""

    def pkts_acked(self, sk: TcpSock, pkts_acked: int, rtt_us: int) -> None:
        """Segments were acknowledged; *rtt_us* is the last RTT sample or -1."""

    def undo_cwnd(self, sk: TcpSock) -> int:
        """The window to restore when a reduction was spurious."""
        return tcp_reno_undo_cwnd(sk)

    def __repr__(self) -> str:
        return f"<TcpCongestionOps {self.name}>"


@kernel("include/net/tcp.h", "tcp_is_cwnd_limited")
def tcp_is_cwnd_limited(sk: TcpSock) -> bool:
    """Was the last flight limited by cwnd (so cwnd may grow)?

    In slow start cwnd may grow up to twice what was in flight.

    Kernel: include/net/tcp.h, tcp_is_cwnd_limited().
    """
    if sk.is_cwnd_limited:
        return True
    if sk.snd_cwnd < sk.snd_ssthresh:
        return sk.snd_cwnd < 2 * sk.max_packets_out
    return False


@kernel("net/ipv4/tcp_cong.c", "tcp_slow_start")
def tcp_slow_start(sk: TcpSock, acked: int) -> int:
    """Grow cwnd by *acked* up to ssthresh; return the acked count left over.

    Kernel: net/ipv4/tcp_cong.c, tcp_slow_start().
    """
    cwnd = min(sk.snd_cwnd + acked, sk.snd_ssthresh)
    acked -= cwnd - sk.snd_cwnd
    sk.snd_cwnd = min(cwnd, sk.snd_cwnd_clamp)
    return acked


@kernel("net/ipv4/tcp_cong.c", "tcp_cong_avoid_ai")
def tcp_cong_avoid_ai(sk: TcpSock, w: int, acked: int) -> None:
    """Additive increase: one segment per *w* segments acknowledged.

    Kernel: net/ipv4/tcp_cong.c, tcp_cong_avoid_ai().
    """
    if sk.snd_cwnd_cnt >= w:  # credits accumulated at a higher w: apply them gently
        sk.snd_cwnd_cnt = 0
        sk.snd_cwnd += 1
    sk.snd_cwnd_cnt += acked
    if sk.snd_cwnd_cnt >= w:
        delta = sk.snd_cwnd_cnt // w
        sk.snd_cwnd_cnt -= delta * w
        sk.snd_cwnd += delta
    sk.snd_cwnd = min(sk.snd_cwnd, sk.snd_cwnd_clamp)


@kernel("tcp_reno_cong_avoid")
def tcp_reno_cong_avoid(sk: TcpSock, ack: int, acked: int) -> None:
    """Slow start below ssthresh, additive increase above. Kernel: tcp_reno_cong_avoid()."""
    if not tcp_is_cwnd_limited(sk):
        return
    if sk.snd_cwnd < sk.snd_ssthresh:  # tcp_in_slow_start()
        acked = tcp_slow_start(sk, acked)
        if not acked:
            return
    tcp_cong_avoid_ai(sk, sk.snd_cwnd, acked)


@kernel("net/ipv4/tcp_cong.c", "tcp_reno_ssthresh")
def tcp_reno_ssthresh(sk: TcpSock) -> int:
    """Half the window, at least 2. Kernel: net/ipv4/tcp_cong.c, tcp_reno_ssthresh()."""
    return max(sk.snd_cwnd >> 1, 2)


@kernel("net/ipv4/tcp_cong.c", "tcp_reno_undo_cwnd")
def tcp_reno_undo_cwnd(sk: TcpSock) -> int:
    """Kernel: net/ipv4/tcp_cong.c, tcp_reno_undo_cwnd()."""
    return max(sk.snd_cwnd, sk.prior_cwnd)


class TcpReno(TcpCongestionOps):
    """NewReno (kernel: ``tcp_reno``, always built in)."""

    name = "reno"

    def ssthresh(self, sk: TcpSock) -> int:
        return tcp_reno_ssthresh(sk)

    def cong_avoid(self, sk: TcpSock, ack: int, acked: int) -> None:
        tcp_reno_cong_avoid(sk, ack, acked)


@kernel("net/ipv4/tcp_cong.c", "tcp_init_congestion_control")
def tcp_init_congestion_control(sk: TcpSock) -> None:
    """Start the socket's algorithm. Kernel: net/ipv4/tcp_cong.c, tcp_init_congestion_control()."""
    sk.icsk_ca_initialized = True
    sk.icsk_ca_ops.init(sk)


@kernel("net/ipv4/tcp_cong.c", "tcp_set_congestion_control", "tcp_reinit_congestion_control")
def tcp_set_congestion_control(sk: TcpSock, ops: TcpCongestionOps) -> None:
    """Switch a socket's algorithm (``TCP_CONGESTION``).

    Kernel: net/ipv4/tcp_cong.c, tcp_set_congestion_control() / tcp_reinit_congestion_control().
    """
    old = sk.icsk_ca_ops
    if old is ops:
        return
    old.release(sk)
    sk.icsk_ca_ops = ops
    sk.icsk_ca_priv = None
    if sk.state != 10 and sk.state != 7 and sk.icsk_ca_initialized:  # not LISTEN/CLOSE
        ops.init(sk)


@kernel("inet_csk_ca")
def ca_priv(sk: TcpSock) -> Any:
    """The algorithm's per-socket state. Kernel: inet_csk_ca()."""
    return sk.icsk_ca_priv
