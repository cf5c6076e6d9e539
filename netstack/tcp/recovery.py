"""TCP loss detection: RACK-TLP (RFC 8985) and NewReno, as Linux 6.x does it.

Theory of operation::

    ACK ─► tcp_sacktag_write_queue / tcp_clean_rtx_queue
             └─ tcp_rack_advance: remember the latest (re)sent skb that was
                (s)acked (RACK.xmit_time, RACK.end_seq) and its RTT
        ─► tcp_rack_update_reo_wnd: a D-SACK after reordering widens the
           reordering window by min_rtt/4 (once per round trip), for 16
           recoveries
        ─► tcp_fastretrans_alert ─► tcp_identify_packet_loss
             ├─ SACK: tcp_rack_mark_lost ─► tcp_rack_detect_loss: walk the
             │  skbs in send-time order; one sent before RACK.xmit_time and
             │  not (s)acked RACK.rtt + reo_wnd after it was sent is lost
             │  (tcp_mark_skb_lost); one still inside that time arms the
             │  REO timer for what remains (+2 ms)
             └─ no SACK: tcp_newreno_mark_lost: the head is lost after
                ``reordering`` dupacks, and again on each partial ACK
    REO timer ─► tcp_rack_reo_timeout: detect again; what became lost starts
           Recovery (PRR's first step) and is retransmitted

The reordering window is 0 — RACK marks at once — while no reordering has
been seen and either the connection is in Recovery or ``reordering`` (3)
segments are SACKed (the "dupthresh" rule, unless ``tcp_recovery`` has
``TCP_RACK_NO_DUPTHRESH``); otherwise it is min_rtt/4 per step, at most
srtt. With ``tcp_recovery`` bit 0 (RACK, the default since 4.18) off, SACK
connections use the dupthresh scoreboard of 4.18–6.1 in
:mod:`netstack.tcp.input` (``tcp_update_scoreboard``: the head is lost once
``reordering`` segments above it are SACKed), which later 6.x kernels
removed; NewReno is the same either way.

The kernel keeps sent skbs on a list ordered by send time; here the
retransmit queue (sequence order) is sorted by ``mstamp`` when RACK walks it
(a stable sort: skbs sent in one burst keep their order), and
``TcpSkbCb.tsorted`` says whether an skb is still on that list (RACK takes
off what it marks lost; a retransmission puts it back).

This module also holds the parts of recovery that the REO timer needs
without importing the ACK path: tcp_mark_skb_lost, undo bookkeeping
(tcp_init_undo, tcp_any_retrans_done), tcp_enter_recovery and PRR
(tcp_cwnd_reduction).

Kernel: net/ipv4/tcp_recovery.c; net/ipv4/tcp_input.c (the functions named).
"""

from __future__ import annotations

from typing import Final

from netstack.sites import kernel
from netstack.tcp.helpers import (
    inet_csk_reset_xmit_timer,
    tcp_current_ssthresh,
    tcp_in_cwnd_reduction,
    tcp_init_cwnd_reduction,
    tcp_min_rtt,
    tcp_packets_in_flight,
    tcp_rearm_rto,
    tcp_set_ca_state,
)
from netstack.tcp.output import tcp_fragment, tcp_xmit_retransmit_queue
from netstack.tcp.sock import (
    ICSK_TIME_REO_TIMEOUT,
    ICSK_TIME_RETRANS,
    TCPCB_EVER_RETRANS,
    TCPCB_LOST,
    TCPCB_RETRANS,
    TCPCB_SACKED_ACKED,
    TCPCB_SACKED_RETRANS,
    TCP_CA_Recovery,
    TcpSkbCb,
    TcpSock,
    after,
    before,
)

__all__ = [
    "TCP_RACK_LOSS_DETECTION",
    "TCP_RACK_NO_DUPTHRESH",
    "TCP_RACK_STATIC_REO_WND",
    "tcp_any_retrans_done",
    "tcp_cwnd_reduction",
    "tcp_enter_recovery",
    "tcp_init_undo",
    "tcp_is_rack",
    "tcp_mark_skb_lost",
    "tcp_newreno_mark_lost",
    "tcp_rack_advance",
    "tcp_rack_mark_lost",
    "tcp_rack_reo_timeout",
    "tcp_rack_skb_timeout",
    "tcp_rack_update_reo_wnd",
]

# net.ipv4.tcp_recovery bits (include/net/tcp.h)
TCP_RACK_LOSS_DETECTION: Final = 0x1
TCP_RACK_STATIC_REO_WND: Final = 0x2
TCP_RACK_NO_DUPTHRESH: Final = 0x4
TCP_RACK_RECOVERY_THRESH: Final = 16
TCP_TIMEOUT_MIN_US: Final = 2000  # include/net/tcp.h: 2 ms

# tcp_ack() flags this module sets or reads (the values of netstack.tcp.input's)
FLAG_SND_UNA_ADVANCED: Final = 0x400
U32: Final = 0xFFFFFFFF


@kernel("tcp_is_rack")
def tcp_is_rack(sk: TcpSock) -> bool:
    """RACK loss detection on (``tcp_recovery`` bit 0). Kernel: tcp_is_rack() (4.18–6.x)."""
    return bool(sk.tcp.sysctl_tcp_recovery & TCP_RACK_LOSS_DETECTION)


def _sent_after(t1: int, o1: int, seq1: int, t2: int, o2: int, seq2: int) -> bool:
    """tcp_skb_sent_after(): later in time, or the same time and later in sequence.

    netstack: virtual time does not pass between two ACKs processed in the
    same instant, so skbs the kernel would stamp a few µs apart share a
    stamp; the send order (``TcpSkbCb.tx_order``) breaks such ties before
    the sequence does (within one burst both orders agree).
    """
    if t1 != t2:
        return t1 > t2
    if o1 != o2:
        return o1 > o2
    return after(seq1, seq2)


# -- the scoreboard's loss mark (tcp_input.c) --------------------------------------------------


@kernel("net/ipv4/tcp_input.c", "tcp_verify_retransmit_hint")
def tcp_verify_retransmit_hint(sk: TcpSock, skb: object) -> None:
    """Move the retransmit hint back to a newly lost skb before it.

    Kernel: net/ipv4/tcp_input.c, tcp_verify_retransmit_hint().
    """
    hint = sk.retransmit_skb_hint
    tcb: TcpSkbCb = skb.cb  # type: ignore[attr-defined]
    if (hint is None and sk.retrans_out >= sk.lost_out) or (
        hint is not None and before(tcb.seq, hint.cb.seq)
    ):
        sk.retransmit_skb_hint = skb  # type: ignore[assignment]


@kernel("net/ipv4/tcp_input.c", "tcp_mark_skb_lost", "tcp_notify_skb_loss_event")
def tcp_mark_skb_lost(sk: TcpSock, skb: object) -> None:
    """Mark *skb* lost; a lost retransmission is counted (TCPLostRetransmit).

    Kernel: net/ipv4/tcp_input.c, tcp_mark_skb_lost() / tcp_notify_skb_loss_event().
    """
    tcb: TcpSkbCb = skb.cb  # type: ignore[attr-defined]
    sacked = tcb.sacked
    if sacked & TCPCB_SACKED_ACKED:
        return
    tcp_verify_retransmit_hint(sk, skb)
    if sacked & TCPCB_LOST:
        if sacked & TCPCB_SACKED_RETRANS:  # a retransmission lost again
            tcb.sacked &= ~TCPCB_SACKED_RETRANS
            sk.retrans_out -= tcb.pcount
            sk.ext.TCPLostRetransmit += tcb.pcount
            sk.lost += tcb.pcount
    else:
        sk.lost_out += tcb.pcount
        tcb.sacked |= TCPCB_LOST
        sk.lost += tcb.pcount


# -- RACK (tcp_recovery.c) ---------------------------------------------------------------------


@kernel("net/ipv4/tcp_recovery.c", "tcp_rack_reo_wnd")
def tcp_rack_reo_wnd(sk: TcpSock) -> int:
    """The reordering window, µs.

    Kernel: net/ipv4/tcp_recovery.c, tcp_rack_reo_wnd().
    """
    if not sk.reord_seen:
        # no reordering seen: be aggressive in Recovery or past the dupthresh
        if sk.icsk_ca_state >= TCP_CA_Recovery:
            return 0
        if sk.sacked_out >= sk.reordering and not (
            sk.tcp.sysctl_tcp_recovery & TCP_RACK_NO_DUPTHRESH
        ):
            return 0
    return min((tcp_min_rtt(sk) >> 2) * sk.rack_reo_wnd_steps, sk.srtt_us >> 3)


@kernel("net/ipv4/tcp_recovery.c", "tcp_rack_skb_timeout")
def tcp_rack_skb_timeout(sk: TcpSock, tcb: TcpSkbCb, reo_wnd: int) -> int:
    """µs until *skb* is lost by RACK's clock (≤ 0: already).

    Kernel: net/ipv4/tcp_recovery.c, tcp_rack_skb_timeout().
    """
    return sk.rack_rtt_us + reo_wnd - (sk.tcp_mstamp - tcb.mstamp)


@kernel("net/ipv4/tcp_recovery.c", "tcp_rack_detect_loss")
def tcp_rack_detect_loss(sk: TcpSock) -> int:
    """Mark lost what was sent before RACK.xmit_time and has waited RACK.rtt + reo_wnd.

    Returns the longest wait left (µs) of those still inside their window, 0 if none.

    Kernel: net/ipv4/tcp_recovery.c, tcp_rack_detect_loss().
    """
    reo_timeout = 0
    reo_wnd = tcp_rack_reo_wnd(sk)
    rack_mstamp = sk.rack_mstamp
    rack_order = sk.rack_tx_order
    rack_end_seq = sk.rack_end_seq
    # tsorted_sent_queue: the send order (stable: a split skb's parts stay in order)
    for skb in sorted(sk.rtx_queue, key=lambda s: (s.cb.mstamp, s.cb.tx_order)):
        tcb: TcpSkbCb = skb.cb
        if not tcb.tsorted:
            continue
        # skip the ones marked lost but not yet retransmitted
        if tcb.sacked & TCPCB_LOST and not tcb.sacked & TCPCB_SACKED_RETRANS:
            continue
        if not _sent_after(
            rack_mstamp, rack_order, rack_end_seq, tcb.mstamp, tcb.tx_order, tcb.end_seq
        ):
            break
        remaining = tcp_rack_skb_timeout(sk, tcb, reo_wnd)
        if remaining <= 0:
            tcp_mark_skb_lost(sk, skb)
            tcb.tsorted = False  # list_del_init()
        else:
            reo_timeout = max(reo_timeout, remaining)
    return reo_timeout


@kernel("net/ipv4/tcp_recovery.c", "tcp_rack_mark_lost")
def tcp_rack_mark_lost(sk: TcpSock) -> bool:
    """Run RACK if an ACK advanced it; arm the REO timer for what is not yet due.

    Returns True if the REO timer was armed (the caller then leaves the RTO alone).

    Kernel: net/ipv4/tcp_recovery.c, tcp_rack_mark_lost().
    """
    if not sk.rack_advanced:
        return False
    sk.rack_advanced = False  # avoid scanning the queue again for nothing
    timeout = tcp_rack_detect_loss(sk)
    if timeout:
        tcp = sk.tcp
        inet_csk_reset_xmit_timer(
            sk,
            ICSK_TIME_REO_TIMEOUT,
            tcp.usecs_to_jiffies(timeout + TCP_TIMEOUT_MIN_US),
            sk.icsk_rto,
        )
    return bool(timeout)


@kernel("net/ipv4/tcp_recovery.c", "tcp_rack_advance")
def tcp_rack_advance(
    sk: TcpSock, sacked: int, end_seq: int, xmit_time: int, tx_order: int = 0
) -> None:
    """An skb sent at *xmit_time* was (s)acked: RACK.xmit_time/end_seq/rtt follow it.

    A retransmitted skb acknowledged sooner than min_rtt after the
    retransmission may have been the original's delivery: it is not used.
    *tx_order* is the skb's place in the send order (see :func:`_sent_after`).

    Kernel: net/ipv4/tcp_recovery.c, tcp_rack_advance().
    """
    rtt_us = sk.tcp_mstamp - xmit_time
    if rtt_us < tcp_min_rtt(sk) and sacked & TCPCB_RETRANS:
        return
    sk.rack_advanced = True
    sk.rack_rtt_us = rtt_us
    if _sent_after(xmit_time, tx_order, end_seq, sk.rack_mstamp, sk.rack_tx_order, sk.rack_end_seq):
        sk.rack_mstamp = xmit_time
        sk.rack_tx_order = tx_order
        sk.rack_end_seq = end_seq


@kernel("net/ipv4/tcp_recovery.c", "tcp_rack_reo_timeout")
def tcp_rack_reo_timeout(sk: TcpSock) -> None:
    """The REO timer fired: mark what has now waited long enough, and retransmit it.

    Kernel: net/ipv4/tcp_recovery.c, tcp_rack_reo_timeout().
    """
    lost = sk.lost
    prior_inflight = tcp_packets_in_flight(sk)
    tcp_rack_detect_loss(sk)
    if prior_inflight != tcp_packets_in_flight(sk):
        if sk.icsk_ca_state != TCP_CA_Recovery:
            tcp_enter_recovery(sk, False)
            tcp_cwnd_reduction(sk, 1, sk.lost - lost, 0)
        tcp_xmit_retransmit_queue(sk)
    if sk.icsk_pending != ICSK_TIME_RETRANS:
        tcp_rearm_rto(sk)


@kernel("net/ipv4/tcp_recovery.c", "tcp_rack_update_reo_wnd")
def tcp_rack_update_reo_wnd(sk: TcpSock, prior_delivered: int) -> None:
    """Widen the reordering window after a D-SACK (at most once a round trip).

    *prior_delivered* is ``rs->prior_delivered``: ``delivered`` when the
    newest skb this ACK covers was sent (0: none).

    Kernel: net/ipv4/tcp_recovery.c, tcp_rack_update_reo_wnd().
    """
    if sk.tcp.sysctl_tcp_recovery & TCP_RACK_STATIC_REO_WND or not prior_delivered:
        return
    # disregard a D-SACK if a round trip has not passed since the last change
    if before(prior_delivered, sk.rack_last_delivered):
        sk.rack_dsack_seen = False
    if sk.rack_dsack_seen:
        sk.rack_reo_wnd_steps = min(0xFF, sk.rack_reo_wnd_steps + 1)
        sk.rack_dsack_seen = False
        sk.rack_last_delivered = sk.delivered
        sk.rack_reo_wnd_persist = TCP_RACK_RECOVERY_THRESH
    elif not sk.rack_reo_wnd_persist:
        sk.rack_reo_wnd_steps = 1


@kernel("net/ipv4/tcp_recovery.c", "tcp_newreno_mark_lost")
def tcp_newreno_mark_lost(sk: TcpSock, snd_una_advanced: bool) -> None:
    """RFC 6582 NewReno without SACK: the head is lost after ``reordering``
    dupacks, and again on each ACK of new data in Recovery.

    Kernel: net/ipv4/tcp_recovery.c, tcp_newreno_mark_lost().
    """
    state = sk.icsk_ca_state
    if (state < TCP_CA_Recovery and sk.sacked_out >= sk.reordering) or (
        state == TCP_CA_Recovery and snd_una_advanced
    ):
        skb = sk.rtx_queue[0]
        tcb: TcpSkbCb = skb.cb
        if tcb.sacked & TCPCB_LOST:
            return
        mss = tcb.gso_size or sk.mss_cache  # tcp_skb_mss()
        if tcb.pcount > 1 and skb.tail - skb.data > mss:
            tcp_fragment(sk, True, skb, mss, mss)
        tcp_mark_skb_lost(sk, skb)


# -- undo bookkeeping and entering Recovery (tcp_input.c) -------------------------------------


@kernel("net/ipv4/tcp_input.c", "tcp_any_retrans_done")
def tcp_any_retrans_done(sk: TcpSock) -> bool:
    """Something is retransmitted and not yet acknowledged.

    Kernel: net/ipv4/tcp_input.c, tcp_any_retrans_done().
    """
    if sk.retrans_out:
        return True
    q = sk.rtx_queue
    return bool(q) and bool(q[0].cb.sacked & TCPCB_EVER_RETRANS)


@kernel("net/ipv4/tcp_input.c", "tcp_init_undo")
def tcp_init_undo(sk: TcpSock) -> None:
    """Start counting retransmissions that a D-SACK may prove spurious.

    Kernel: net/ipv4/tcp_input.c, tcp_init_undo().
    """
    sk.undo_marker = sk.snd_una
    sk.undo_retrans = sk.retrans_out
    if sk.tlp_high_seq and sk.tlp_retrans:  # a TLP retransmission in flight
        sk.undo_retrans += 1
    if not sk.undo_retrans:  # 0 means "can undo now"
        sk.undo_retrans = -1


@kernel("net/ipv4/tcp_input.c", "tcp_enter_recovery", "tcp_retrans_stamp_cleanup")
def tcp_enter_recovery(sk: TcpSock, ece_ack: bool) -> None:
    """Start fast recovery: remember cwnd/ssthresh for undo, start PRR.

    Kernel: net/ipv4/tcp_input.c, tcp_enter_recovery() / tcp_retrans_stamp_cleanup().
    """
    if not tcp_any_retrans_done(sk):
        sk.retrans_stamp = 0  # the clock starts with this fast retransmit
    if sk.sack_ok:
        sk.ext.TCPSackRecovery += 1
    else:
        sk.ext.TCPRenoRecovery += 1
    sk.prior_ssthresh = 0
    tcp_init_undo(sk)
    if not tcp_in_cwnd_reduction(sk):
        if not ece_ack:
            sk.prior_ssthresh = tcp_current_ssthresh(sk)
        tcp_init_cwnd_reduction(sk)
    tcp_set_ca_state(sk, TCP_CA_Recovery)


@kernel("net/ipv4/tcp_input.c", "tcp_cwnd_reduction")
def tcp_cwnd_reduction(sk: TcpSock, newly_acked_sacked: int, newly_lost: int, flag: int) -> None:
    """Proportional Rate Reduction (RFC 6937).

    Kernel: net/ipv4/tcp_input.c, tcp_cwnd_reduction().
    """
    if newly_acked_sacked <= 0 or not sk.prior_cwnd:
        return
    delta = sk.snd_ssthresh - tcp_packets_in_flight(sk)
    sk.prr_delivered += newly_acked_sacked
    if delta < 0:
        dividend = sk.snd_ssthresh * sk.prr_delivered + sk.prior_cwnd - 1
        sndcnt = dividend // sk.prior_cwnd - sk.prr_out
    else:
        sndcnt = max(sk.prr_delivered - sk.prr_out, newly_acked_sacked)
        if flag & FLAG_SND_UNA_ADVANCED and not newly_lost:
            sndcnt += 1
        sndcnt = min(delta, sndcnt)
    sndcnt = max(sndcnt, 0 if sk.prr_out else 1)  # force a fast retransmit on entry
    sk.snd_cwnd = tcp_packets_in_flight(sk) + sndcnt
