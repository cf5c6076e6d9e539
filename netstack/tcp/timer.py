"""TCP's timers: retransmission (RTO, zero-window probe, loss probe), delayed ACK, keepalive.

Theory of operation: each socket has three :class:`~netstack.core.timer.TimerList`
on the Net's timer base (virtual time). ``retransmit_timer`` serves whatever
``icsk_pending`` names: RACK's reordering timeout
(:func:`~netstack.tcp.recovery.tcp_rack_reo_timeout`), the RTO (:func:`tcp_retransmit_timer`: mark
everything lost, retransmit the head, double the RTO up to TCP_RTO_MAX, give
up with ETIMEDOUT after ``tcp_retries2`` — ``tcp_syn_retries`` for a SYN), the
zero-window probe, or a tail loss probe. ``delack_timer`` sends an ACK that
was held back. ``sk_timer`` is the keepalive timer and, for an orphan in
FIN_WAIT2, its linger time.

Give-up decisions count retransmissions (``icsk_retransmits``) where the
kernel compares elapsed time with the time those retransmissions would take
(``retransmits_timed_out``); with exponential back-off the two agree.

Kernel: net/ipv4/tcp_timer.c.
"""

from __future__ import annotations

from typing import Final

from netstack.core.sock import sk_rethink_txhash
from netstack.sites import TIMED, kernel, spend
from netstack.tcp.fastopen import tcp_fastopen_active_detect_blackhole
from netstack.tcp.helpers import inet_csk_reset_xmit_timer
from netstack.tcp.input import tcp_enter_loss, tcp_sack_compress_send_ack
from netstack.tcp.output import (
    tcp_retransmit_skb,
    tcp_send_ack,
    tcp_send_active_reset,
    tcp_send_loss_probe,
    tcp_send_probe0,
    tcp_write_wakeup,
)
from netstack.tcp.recovery import tcp_rack_reo_timeout
from netstack.tcp.sock import (
    ICSK_ACK_PUSHED,
    ICSK_ACK_TIMER,
    ICSK_TIME_LOSS_PROBE,
    ICSK_TIME_PROBE0,
    ICSK_TIME_REO_TIMEOUT,
    ICSK_TIME_RETRANS,
    TCP_CLOSE,
    TCP_CLOSE_WAIT,
    TCP_ESTABLISHED,
    TCP_FIN_WAIT2,
    TCP_LISTEN,
    TCP_SYN_RECV,
    TCP_SYN_SENT,
    RequestSock,
    TCP_CA_Disorder,
    TCP_CA_Loss,
    TCP_CA_Recovery,
    TcpSock,
)
from netstack.tcp.state import (
    inet_csk_reset_keepalive_timer,
    keepalive_intvl_when,
    keepalive_probes,
    keepalive_time_when,
    tcp_done,
)

__all__ = ["tcp_delack_timer", "tcp_keepalive_timer", "tcp_retransmit_timer", "tcp_write_timer"]

ETIMEDOUT: Final = 110


@kernel("tcp_write_err")
def tcp_write_err(sk: TcpSock) -> None:
    """Give up: report ETIMEDOUT (or the soft error seen). Kernel: tcp_write_err()."""
    sk.sk_err = sk.sk_err_soft or ETIMEDOUT
    sk.sk_error_report()
    from netstack.tcp.output import tcp_write_queue_purge

    tcp_write_queue_purge(sk)
    tcp_done(sk)
    sk.ext.TCPAbortOnTimeout += 1


@kernel("tcp_write_timeout")
def tcp_write_timeout(sk: TcpSock) -> bool:
    """Too many retransmissions? Then the connection is dead. Kernel: tcp_write_timeout()."""
    tcp = sk.tcp
    user_timeout = sk.icsk_user_timeout
    if sk.state in (TCP_SYN_SENT, TCP_SYN_RECV):
        retry_until = sk.icsk_syn_retries or tcp.sysctl_tcp_syn_retries
        max_retransmits = retry_until
        if sk.state == TCP_SYN_SENT:  # the linear SYN timeouts come on top (6.5+)
            max_retransmits += tcp.sysctl_tcp_syn_linear_timeouts
        expired = sk.icsk_retransmits >= max_retransmits or retransmits_timed_out(
            sk, user_timeout or tcp_model_timeout(sk, retry_until, tcp.TCP_TIMEOUT_INIT)
        )
    else:
        limit = tcp.sysctl_tcp_retries2
        if sk.dead:
            limit = tcp.sysctl_tcp_orphan_retries or 8  # tcp_orphan_retries(): 0 means 8
        if user_timeout and not sk.dead:
            expired = retransmits_timed_out(sk, user_timeout)  # instead of tcp_retries2
        else:
            expired = sk.icsk_retransmits >= limit or retransmits_timed_out(sk, user_timeout)
    tcp_fastopen_active_detect_blackhole(sk, expired)
    if expired:
        tcp_write_err(sk)
        return True
    # a new path (ECMP) and a new IPv6 flow label for the retransmission
    if sk_rethink_txhash(sk):
        sk.timeout_rehash += 1
        sk.ext.TcpTimeoutRehash += 1
    return False


@kernel("net/ipv4/tcp_timer.c", "tcp_model_timeout")
def tcp_model_timeout(sk: TcpSock, boundary: int, rto_base: int) -> int:
    """Milliseconds that *boundary* exponentially backed-off RTOs from *rto_base*
    (jiffies) take, capped per RTO at TCP_RTO_MAX: when the SYN states give up.

    Kernel: net/ipv4/tcp_timer.c, tcp_model_timeout().
    """
    tcp = sk.tcp
    linear_backoff_thresh = (tcp.TCP_RTO_MAX // rto_base).bit_length() - 1  # ilog2()
    if boundary <= linear_backoff_thresh:
        timeout = ((2 << boundary) - 1) * rto_base
    else:
        timeout = ((2 << linear_backoff_thresh) - 1) * rto_base + (
            boundary - linear_backoff_thresh
        ) * tcp.TCP_RTO_MAX
    return timeout * 1000 // tcp.hz  # jiffies_to_msecs()


@kernel("net/ipv4/tcp_timer.c", "retransmits_timed_out")
def retransmits_timed_out(sk: TcpSock, timeout_ms: int) -> bool:
    """Has the first retransmission been waiting *timeout_ms* (TCP_USER_TIMEOUT)?

    Kernel: net/ipv4/tcp_timer.c, retransmits_timed_out() with a timeout (the
    boundary form, tcp_model_timeout, is counted in retransmissions here).
    """
    if not timeout_ms or not sk.icsk_retransmits:
        return False
    if not sk.rtx_queue and not sk.write_queue:  # tcp_rtx_and_write_queues_empty()
        return False
    delta = (sk.tcp.tcp_time_stamp_ms() - sk.retrans_stamp) & 0xFFFFFFFF
    return delta < 0x80000000 and delta >= timeout_ms


@kernel("net/ipv4/tcp_timer.c", "tcp_clamp_rto_to_user_timeout")
def tcp_clamp_rto_to_user_timeout(sk: TcpSock) -> int:
    """The next RTO, cut short to fire when TCP_USER_TIMEOUT runs out.

    Kernel: net/ipv4/tcp_timer.c, tcp_clamp_rto_to_user_timeout().
    """
    user_timeout = sk.icsk_user_timeout
    if not user_timeout:
        return sk.icsk_rto
    tcp = sk.tcp
    elapsed = (tcp.tcp_time_stamp_ms() - sk.retrans_stamp) & 0xFFFFFFFF
    remaining = user_timeout - elapsed
    if remaining <= 0:
        return 1  # the user timeout has passed: fire at once
    return min(sk.icsk_rto, (remaining * tcp.hz + 999) // 1000)  # msecs_to_jiffies()


@kernel("net/ipv4/tcp_timer.c", "tcp_update_rto_stats")
def tcp_update_rto_stats(sk: TcpSock) -> None:
    """One more RTO; the first of a recovery starts its clock (tcpi_total_rto*).

    Kernel: net/ipv4/tcp_timer.c, tcp_update_rto_stats().
    """
    if not sk.icsk_retransmits:
        sk.total_rto_recoveries += 1
        sk.rto_stamp = sk.tcp.tcp_time_stamp_ms()
    sk.icsk_retransmits += 1
    sk.total_rto += 1


@kernel("net/ipv4/tcp_timer.c", "tcp_retransmit_timer")
def tcp_retransmit_timer(sk: TcpSock) -> None:
    """The RTO fired: enter Loss, retransmit the head, back off (RTO × 2).

    Each expiry counts once in TCPTimeouts and once in ``icsk_retransmits``
    (tcp_update_rto_stats), and doubles ``icsk_rto`` (``icsk_backoff`` + 1)
    up to TCP_RTO_MAX; an RTT sample from a later ACK undoes the back-off.
    A zero window turns the retransmissions into window probes, which back
    off the same way but do not time the connection out.

    Kernel: net/ipv4/tcp_timer.c, tcp_retransmit_timer()
    (no thin-stream linear timeouts; the SYN linear timeouts of 6.5+ are).
    """
    if TIMED:
        spend("tcp_retransmit_timer")
    tcp = sk.tcp
    req = sk.fastopen_rsk
    if req is not None:  # a Fast Open child: only its SYN-ACK goes again before the ACK
        tcp_fastopen_synack_timer(sk, req)
        return
    if not sk.packets_out or not sk.rtx_queue:
        return
    if (
        not sk.snd_wnd
        and not sk.dead
        and sk.state not in (TCP_SYN_SENT, TCP_SYN_RECV)
        and sk.icsk_retransmits < tcp.sysctl_tcp_retries2
    ):
        # the peer shrank its window to zero: probe, do not give up yet
        tcp_enter_loss(sk)
        tcp_retransmit_skb(sk, sk.rtx_queue[0], 1)
        sk.icsk_retransmits += 1
    else:
        sk.ext.TCPTimeouts += 1
        if tcp_write_timeout(sk):
            return
        if sk.icsk_retransmits == 0:
            state = sk.icsk_ca_state
            if state == TCP_CA_Recovery:
                if sk.sack_ok:
                    sk.ext.TCPSackRecoveryFail += 1
                else:
                    sk.ext.TCPRenoRecoveryFail += 1
            elif state == TCP_CA_Loss:
                sk.ext.TCPLossFailures += 1
            elif state == TCP_CA_Disorder or sk.sacked_out:
                if sk.sack_ok:
                    sk.ext.TCPSackFailures += 1
                else:
                    sk.ext.TCPRenoFailures += 1
        tcp_enter_loss(sk)
        tcp_update_rto_stats(sk)
        if tcp_retransmit_skb(sk, sk.rtx_queue[0], 1) > 0:
            # local congestion: let senders fight for local resources conservatively
            inet_csk_reset_xmit_timer(
                sk, ICSK_TIME_RETRANS, tcp.TCP_RESOURCE_PROBE_INTERVAL, tcp.TCP_RTO_MAX
            )
            return
    # out_reset_timer: exponential back-off, except for a connecting socket's first
    # tcp_syn_linear_timeouts RTOs (6.5+), which keep the initial RTO
    if sk.state != TCP_SYN_SENT or sk.total_rto > tcp.sysctl_tcp_syn_linear_timeouts:
        sk.icsk_backoff += 1
        sk.icsk_rto = min(sk.icsk_rto << 1, tcp.TCP_RTO_MAX)
    inet_csk_reset_xmit_timer(
        sk, ICSK_TIME_RETRANS, tcp_clamp_rto_to_user_timeout(sk), tcp.TCP_RTO_MAX
    )


@kernel("net/ipv4/tcp_timer.c", "tcp_probe_timer")
def tcp_probe_timer(sk: TcpSock) -> None:
    """Probing while nothing is in flight and data waits: a zero window, or a
    transmission a local qdisc refused.

    With TCP_USER_TIMEOUT the connection is aborted once the user timeout has
    passed since the first probe (``icsk_probes_tstamp``), whatever the count.

    Kernel: net/ipv4/tcp_timer.c, tcp_probe_timer().
    """
    if sk.packets_out or not sk.write_queue:
        sk.icsk_probes_out = 0
        sk.icsk_probes_tstamp = 0
        return
    now = sk.net.clock.jiffies
    if not sk.icsk_probes_tstamp:
        sk.icsk_probes_tstamp = now
    elif (
        sk.icsk_user_timeout
        and now - sk.icsk_probes_tstamp >= (sk.icsk_user_timeout * sk.tcp.hz + 999) // 1000
    ):
        tcp_write_err(sk)
        return
    max_probes = sk.tcp.sysctl_tcp_retries2
    if sk.dead:
        max_probes = sk.tcp.sysctl_tcp_orphan_retries or 8
    if sk.icsk_probes_out >= max_probes:
        tcp_write_err(sk)
    else:
        tcp_send_probe0(sk)


@kernel("tcp_write_timer_handler")
def tcp_write_timer(sk: TcpSock) -> None:
    """Dispatch on what the retransmit timer was armed for. Kernel: tcp_write_timer_handler()."""
    if sk.state in (TCP_CLOSE, TCP_LISTEN) or not sk.icsk_pending:
        return
    now = sk.net.clock.jiffies
    if sk.icsk_timeout > now:
        sk.retransmit_timer.mod(sk.icsk_timeout)
        return
    event = sk.icsk_pending
    sk.tcp_mstamp = sk.tcp.tcp_clock_us()
    if event == ICSK_TIME_REO_TIMEOUT:
        tcp_rack_reo_timeout(sk)
    elif event == ICSK_TIME_LOSS_PROBE:
        tcp_send_loss_probe(sk)
    elif event == ICSK_TIME_RETRANS:
        sk.icsk_pending = 0
        tcp_retransmit_timer(sk)
    elif event == ICSK_TIME_PROBE0:
        sk.icsk_pending = 0
        tcp_probe_timer(sk)


@kernel("tcp_delack_timer_handler")
def tcp_delack_timer(sk: TcpSock) -> None:
    """Send the ACK that was being delayed. Kernel: tcp_delack_timer_handler()."""
    if TIMED:
        spend("tcp_delack_timer_handler")
    if sk.state in (TCP_CLOSE, TCP_LISTEN):
        return
    if sk.compressed_ack:  # the SACK compression case
        tcp_sack_compress_send_ack(sk)
        return
    if not sk.icsk_ack_pending & ICSK_ACK_TIMER:
        return
    now = sk.net.clock.jiffies
    if sk.icsk_ack_timeout > now:
        sk.delack_timer.mod(sk.icsk_ack_timeout)
        return
    sk.icsk_ack_pending &= ~ICSK_ACK_TIMER
    if sk.icsk_ack_pending & 1:  # inet_csk_ack_scheduled()
        if not sk.icsk_ack_pingpong:
            sk.icsk_ack_ato = min(sk.icsk_ack_ato << 1, sk.icsk_rto)
        else:
            sk.icsk_ack_pingpong = 0  # delayed ACK missed: leave interactive mode
            sk.icsk_ack_ato = sk.tcp.TCP_ATO_MIN
        sk.icsk_ack_pending &= ~ICSK_ACK_PUSHED
        sk.ext.DelayedACKs += 1
        tcp_send_ack(sk)


@kernel("tcp_keepalive_timer")
def tcp_keepalive_timer(sk: TcpSock) -> None:
    """Keepalive probes; an orphan's FIN_WAIT2 linger. Kernel: tcp_keepalive_timer()."""
    tcp = sk.tcp
    state = sk.state
    if state == TCP_LISTEN:
        return
    if state == TCP_FIN_WAIT2 and sk.dead:
        if sk.linger2 >= 0:
            from netstack.tcp.state import tcp_fin_time

            tmo = tcp_fin_time(sk) - tcp.TCP_TIMEWAIT_LEN
            if tmo > 0:
                from netstack.tcp.minisocks import tcp_time_wait

                tcp_time_wait(sk, TCP_FIN_WAIT2, tmo)
                return
        tcp_send_active_reset(sk)
        tcp_done(sk)
        return
    if not sk.sock_flag_keepopen or state not in (TCP_ESTABLISHED, TCP_CLOSE_WAIT, 4):
        return
    elapsed_t = keepalive_time_when(sk)
    if sk.packets_out or sk.write_queue:
        inet_csk_reset_keepalive_timer(sk, elapsed_t)
        return
    now = sk.net.clock.jiffies
    idle = now - max(sk.rcv_tstamp, sk.icsk_ack_lrcvtime)
    if idle >= elapsed_t:
        if sk.icsk_probes_out >= keepalive_probes(sk):
            tcp_send_active_reset(sk)
            tcp_write_err(sk)
            return
        if tcp_write_wakeup(sk, "TCPKeepAlive") <= 0:
            sk.icsk_probes_out += 1
            elapsed_t = keepalive_intvl_when(sk)
        else:
            elapsed_t = tcp.TCP_RESOURCE_PROBE_INTERVAL
    else:
        elapsed_t = elapsed_t - idle
    inet_csk_reset_keepalive_timer(sk, elapsed_t)


# -- TCP Fast Open (netstack.tcp.fastopen has the theory of operation) ------------------------


@kernel("net/ipv4/tcp_timer.c", "tcp_fastopen_synack_timer")
def tcp_fastopen_synack_timer(sk: TcpSock, req: RequestSock) -> None:
    """A Fast Open child's SYN-ACK timed out: resend it with back-off, or give up.

    Kernel: net/ipv4/tcp_timer.c, tcp_fastopen_synack_timer().
    """
    from netstack.tcp.helpers import inet_csk_reset_xmit_timer
    from netstack.tcp.input import tcp_enter_loss

    tcp = sk.tcp
    tcp.ext.TCPTimeouts += 1  # tcp_syn_ack_timeout()
    max_retries = tcp.sysctl_tcp_synack_retries + 1  # one more for Fast Open
    if req.num_timeout >= max_retries:
        tcp_write_err(sk)
        return
    if sk.icsk_retransmits == 1:
        tcp_enter_loss(sk)
    ops = req.af_specific
    if ops.send_synack(sk, req, None) == 0:  # inet_rtx_syn_ack()
        tcp.mib.RetransSegs += 1
        tcp.ext.TCPSynRetrans += 1
        req.num_retrans += 1
    req.num_timeout += 1
    tcp_update_rto_stats(sk)
    if not sk.retrans_stamp:
        sk.retrans_stamp = tcp.tcp_time_stamp_ms()
    inet_csk_reset_xmit_timer(
        sk, ICSK_TIME_RETRANS, min(req.timeout << req.num_timeout, tcp.TCP_RTO_MAX), tcp.TCP_RTO_MAX
    )
