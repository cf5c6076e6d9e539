"""TCP input: ACK processing, loss recovery, the receive queue, the state machine.

Theory of operation::

    tcp_rcv_established (ESTABLISHED) │ tcp_rcv_state_process (every other state)
      ─► tcp_validate_incoming: PAWS, sequence window, RST (RFC 5961: exact
         rcv_nxt resets, in-window ones get a challenge ACK), SYN (challenge ACK)
      ─► tcp_ack: too old (challenge) / unsent data (drop) ─► window update
         ─► tcp_sacktag_write_queue (SACK and D-SACK blocks mark the
            scoreboard, splitting GSO skbs at MSS boundaries; RACK advances;
            reordering detected) ─► tcp_clean_rtx_queue (acked skbs freed, RTT
            sampled: RFC 6298 srtt/rttvar/RTO) ─► tcp_process_tlp_ack (a tail
            loss probe's outcome) ─► tcp_fastretrans_alert (undo what D-SACKs
            or timestamps prove spurious; loss detection: RACK-TLP with SACK,
            NewReno without, :mod:`netstack.tcp.recovery`; Recovery with PRR;
            Loss after an RTO, with F-RTO) ─► TLP or RTO timer ─► cwnd: PRR in
            Recovery/CWR, else the socket's congestion control (Reno, CUBIC)
            ─► tcp_xmit_recovery (retransmit what is lost, or F-RTO's new data)
      ─► tcp_data_queue: in order ─► receive queue (+ out-of-order queue
         drained, SACK blocks trimmed); duplicate ─► D-SACK; ahead ─► ofo queue
         + SACK block; FIN ─► tcp_fin (state change)
      ─► tcp_data_snd_check (send what the new window allows)
      ─► tcp_ack_snd_check: ACK now (two full segments, quickack, ofo data) or
         delayed (tcp_send_delayed_ack)

Header prediction (the fast path) is not separate: every segment takes the
slow path, which computes the same result.

The server side of TCP Fast Open that runs on this path — ``tcp_try_fastopen``
and the child it makes (``tcp_fastopen_create_child``,
``tcp_fastopen_add_skb``), and the screening of the child's segments before
its handshake ends (``tcp_check_req_fastopen``) — is at the end of this
module: it calls ``tcp_fin``, ``tcp_init_transfer`` and ``tcp_reset``, as the
kernel's ``tcp_fastopen.c`` does, and only this module calls it. Option
parsing is :mod:`netstack.tcp.options`.

Kernel: net/ipv4/tcp_input.c; net/ipv4/tcp_fastopen.c (the passive open).
"""

from __future__ import annotations

import struct
from typing import Final

from netstack.core import napi as _napi
from netstack.core.hrtimer import ktime_get_ns
from netstack.core.skbuff import DropReason, SkBuff, consume_skb, kfree_skb
from netstack.core.sock import SOCK_RCVBUF_LOCK, SOCK_SNDBUF_LOCK, net_tx_rndhash
from netstack.sites import TIMED, kernel, spend
from netstack.tcp import fastopen as _fastopen
from netstack.tcp import syncookies as _syncookies
from netstack.tcp.cong import CA_EVENT_COMPLETE_CWR, CA_EVENT_LOSS, tcp_init_congestion_control
from netstack.tcp.helpers import (
    FLAG_ACK_MAYBE_DELAYED,
    FLAG_ACKED,
    FLAG_CA_ALERT,
    FLAG_DATA,
    FLAG_DATA_ACKED,
    FLAG_DATA_SACKED,
    FLAG_DSACK_TLP,
    FLAG_DSACKING_ACK,
    FLAG_ECE,
    FLAG_FORWARD_PROGRESS,
    FLAG_LOST_RETRANS,
    FLAG_NO_CHALLENGE_ACK,
    FLAG_NOT_DUP,
    FLAG_ORIG_SACK_ACKED,
    FLAG_RETRANS_DATA_ACKED,
    FLAG_SACK_RENEGING,
    FLAG_SET_XMIT_TIMER,
    FLAG_SLOWPATH,
    FLAG_SND_UNA_ADVANCED,
    FLAG_SYN_ACKED,
    FLAG_UPDATE_TS_RECENT,
    FLAG_WIN_UPDATE,
    TCP_CHRONO_BUSY,
    inet_csk_reset_xmit_timer,
    sk_wmem_uncharge,
    tcp_ack_update_rtt,
    tcp_check_space,
    tcp_chrono_stop,
    tcp_current_ssthresh,
    tcp_enter_cwr,
    tcp_in_cwnd_reduction,
    tcp_init_cwnd,
    tcp_init_cwnd_reduction,
    tcp_initialize_rcv_mss,
    tcp_oow_rate_limited,
    tcp_packets_in_flight,
    tcp_rearm_rto,
    tcp_set_ca_state,
    tcp_set_window_clamp,
    tcp_sndbuf_expand,
)
from netstack.tcp.minisocks import (
    inet_csk_reqsk_queue_add,
    inet_csk_reqsk_queue_drop,
    tcp_in_window,
    tcp_time_wait,
)
from netstack.tcp.options import TcpOptionsReceived, tcp_parse_options
from netstack.tcp.output import (
    __tcp_push_pending_frames,
    __tcp_select_window,
    tcp_clamp_probe0_to_user_timeout,
    tcp_current_mss,
    tcp_fragment,
    tcp_full_space,
    tcp_mtup_init,
    tcp_probe0_when,
    tcp_push_pending_frames,
    tcp_receive_window,
    tcp_schedule_loss_probe,
    tcp_select_initial_window,
    tcp_send_ack,
    tcp_send_delayed_ack,
    tcp_send_synack,
    tcp_snd_wnd_test,
    tcp_space,
    tcp_space_from_win,
    tcp_sync_mss,
    tcp_trim_head,
    tcp_win_from_space,
    tcp_wnd_end,
    tcp_write_queue_purge,
    tcp_xmit_retransmit_queue,
)
from netstack.tcp.rate import RateSample, tcp_rate_gen
from netstack.tcp.rcvmem import (
    HP_DATA,
    HP_MISS,
    HP_PURE_ACK,
    sk_forced_mem_schedule,
    skb_set_owner_r,
    tcp_fast_path_check,
    tcp_fast_path_data,
    tcp_fast_path_on,
    tcp_rmem_free,
    tcp_try_coalesce,
    tcp_try_rmem_schedule,
)
from netstack.tcp.recovery import (
    TCP_RACK_RECOVERY_THRESH,
    tcp_any_retrans_done,
    tcp_cwnd_reduction,
    tcp_enter_recovery,
    tcp_init_undo,
    tcp_is_rack,
    tcp_mark_skb_lost,
    tcp_newreno_mark_lost,
    tcp_rack_advance,
    tcp_rack_mark_lost,
    tcp_rack_skb_timeout,
    tcp_rack_update_reo_wnd,
)
from netstack.tcp.sock import (
    ICSK_ACK_NOMEM,
    ICSK_ACK_NOW,
    ICSK_ACK_PUSHED,
    ICSK_ACK_PUSHED2,
    ICSK_TIME_DACK,
    ICSK_TIME_PROBE0,
    ICSK_TIME_RETRANS,
    RCV_SHUTDOWN,
    SEND_SHUTDOWN,
    TCP_CA_CWR,
    TCP_CLOSE,
    TCP_CLOSE_WAIT,
    TCP_CLOSING,
    TCP_ESTABLISHED,
    TCP_FASTRETRANS_THRESH,
    TCP_FIN_WAIT1,
    TCP_FIN_WAIT2,
    TCP_INFINITE_SSTHRESH,
    TCP_INIT_CWND,
    TCP_LAST_ACK,
    TCP_LISTEN,
    TCP_MAX_QUICKACKS,
    TCP_MIN_MSS,
    TCP_MSS_DEFAULT,
    TCP_NAGLE_OFF,
    TCP_NUM_SACKS,
    TCP_RMEM_TO_WIN_SCALE,
    TCP_SACK_BLOCKS_EXPECTED,
    TCP_SYN_RECV,
    TCP_SYN_SENT,
    TCP_TIME_WAIT,
    TCPCB_LOST,
    TCPCB_RETRANS,
    TCPCB_SACKED_ACKED,
    TCPCB_SACKED_RETRANS,
    TCPF_MTU_REDUCED_DEFERRED,
    InetConnectionSockAfOps,
    RequestSock,
    TCP_CA_Disorder,
    TCP_CA_Loss,
    TCP_CA_Open,
    TCP_CA_Recovery,
    TcpSkbCb,
    TcpSock,
    after,
    before,
    between,
)
from netstack.tcp.state import (
    inet_csk_reset_keepalive_timer,
    inet_csk_schedule_ack,
    keepalive_time_when,
    sk_state_change,
    tcp_done,
    tcp_fin_time,
    tcp_paws_reject,
    tcp_set_state,
)
from netstack.wire.tcp import (
    TCPHDR_ACK,
    TCPHDR_FIN,
    TCPHDR_PSH,
    TCPHDR_RST,
    TCPHDR_SYN,
    TCPHDR_URG,
    TCPOLEN_TSTAMP_ALIGNED,
)

__all__ = [
    "tcp_ack",
    "tcp_conn_request",
    "tcp_enter_loss",
    "tcp_err_report",
    "tcp_rcv_established",
    "tcp_rcv_state_process",
    "tcp_reset",
]

M32: Final = 0xFFFFFFFF
# TCP_REMNANT: a segment with these flags may be short of a full MSS
_TCP_REMNANT: Final = TCPHDR_FIN | TCPHDR_URG | TCPHDR_SYN | TCPHDR_PSH
_II: Final = struct.Struct("!II")
_H: Final = struct.Struct("!H")


# what tcp_ack() (re)transmits after cwnd is updated (tcp_xmit_recovery)
REXMIT_NONE: Final = 0  # no loss recovery to do
REXMIT_LOST: Final = 1  # retransmit packets marked lost
REXMIT_NEW: Final = 2  # F-RTO: send new data

ECONNREFUSED: Final = 111
ECONNRESET: Final = 104
EPIPE: Final = 32


def _sack_blocks(buf: bytearray, off: int) -> list[tuple[int, int]]:
    n = (buf[off + 1] - 2) // 8
    return [_II.unpack_from(buf, off + 2 + 8 * i) for i in range(n)]


# -- small helpers (include/net/tcp.h) ------------------------------------------------------


def tcp_is_sack(sk: TcpSock) -> bool:
    return bool(sk.sack_ok)


def tcp_left_out(sk: TcpSock) -> int:
    return sk.sacked_out + sk.lost_out


@kernel("net/ipv4/tcp_input.c", "tcp_init_buffer_space")
def tcp_init_buffer_space(sk: TcpSock) -> None:
    """The receive window's start: the clamp at the full space less one
    segment (``tcp_app_win``), rcv_ssthresh under it, and DRS's first
    measure (``rcvq_space``) at ten segments.

    Kernel: net/ipv4/tcp_input.c, tcp_init_buffer_space().
    """
    tcp = sk.tcp
    if not sk.sk_userlocks & SOCK_SNDBUF_LOCK:
        tcp_sndbuf_expand(sk)
    sk.rcvq_space_time = tcp.tcp_clock_us()
    sk.rcvq_space_seq = sk.copied_seq
    maxwin = tcp_full_space(sk)
    app_win = tcp.sysctl_tcp_app_win
    advmss = sk.advmss
    if sk.window_clamp >= maxwin:
        sk.window_clamp = maxwin
        if app_win and maxwin > 4 * advmss:
            sk.window_clamp = max(maxwin - (maxwin >> app_win), 4 * advmss)
    # force reservation of one segment
    if app_win and sk.window_clamp > 2 * advmss and sk.window_clamp + advmss > maxwin:
        sk.window_clamp = max(2 * advmss, maxwin - advmss)
    sk.rcv_ssthresh = min(sk.rcv_ssthresh, sk.window_clamp)
    sk.snd_cwnd_stamp = sk.net.clock.jiffies
    sk.rcvq_space_space = min(sk.rcv_ssthresh, sk.rcv_wnd, TCP_INIT_CWND * advmss)


@kernel("net/ipv4/tcp_input.c", "tcp_rcvbuf_grow")
def tcp_rcvbuf_grow(sk: TcpSock) -> None:
    """Size sk_rcvbuf for twice what was read in the last RTT (plus what
    waits out of order), up to ``tcp_rmem[2]``; the window clamp follows.

    Kernel: net/ipv4/tcp_input.c, tcp_rcvbuf_grow().
    """
    tcp = sk.tcp
    if not tcp.sysctl_tcp_moderate_rcvbuf or sk.sk_userlocks & SOCK_RCVBUF_LOCK:
        return
    rcvwin = sk.rcvq_space_space << 1  # slow start: the sender may double its rate
    if sk.out_of_order_queue:
        rcvwin += (sk.out_of_order_queue[-1].cb.end_seq - sk.rcv_nxt) & M32
    rcvbuf = min(tcp_space_from_win(sk, rcvwin), tcp.tcp_rmem[2])
    if rcvbuf > sk.sk_rcvbuf:
        sk.sk_rcvbuf = rcvbuf
        sk.window_clamp = tcp_win_from_space(sk, rcvbuf)


@kernel("net/ipv4/tcp_input.c", "tcp_rcv_space_adjust")
def tcp_rcv_space_adjust(sk: TcpSock) -> None:
    """Dynamic right-sizing (DRS), called as the reader copies data.

    Once per receiver RTT (``rcv_rtt_est``), what the application read in
    it (less what still waits in the queue) is compared with the last
    measure; if larger it becomes the measure and the buffer grows
    (tcp_rcvbuf_grow). Kernel: net/ipv4/tcp_input.c, tcp_rcv_space_adjust().
    """
    rtt_us = sk.rcv_rtt_est_rtt_us
    if not rtt_us:
        return
    now = sk.tcp.tcp_clock_us()
    if now - sk.rcvq_space_time < (rtt_us >> 3):
        return
    copied = (sk.copied_seq - sk.rcvq_space_seq) & M32
    inq = (sk.rcv_nxt - sk.copied_seq) & M32
    copied -= inq
    if copied > sk.rcvq_space_space:
        sk.rcvq_space_space = copied
        tcp_rcvbuf_grow(sk)
    sk.rcvq_space_seq = sk.copied_seq
    sk.rcvq_space_time = now


@kernel("net/ipv4/tcp_input.c", "__tcp_grow_window")
def __tcp_grow_window(sk: TcpSock, skb: SkBuff, skbtruesize: int) -> int:
    """Kernel: net/ipv4/tcp_input.c, __tcp_grow_window()."""
    truesize = tcp_win_from_space(sk, skbtruesize) >> 1
    window = tcp_win_from_space(sk, sk.tcp.tcp_rmem[2]) >> 1
    length = skb.tail - skb.data
    while sk.rcv_ssthresh <= window:
        if truesize <= length:
            return 2 * sk.icsk_ack_rcv_mss
        truesize >>= 1
        window >>= 1
    return 0


@kernel("net/ipv4/tcp_input.c", "tcp_grow_window", "truesize_adjust")
def tcp_grow_window(sk: TcpSock, skb: SkBuff) -> None:
    """Open the offered window as data arrives (rcv_ssthresh toward window_clamp).

    Segments whose memory cost fits the buffer's payload share earn two
    segments (at least twice their length) of window; ones with more
    overhead earn it only while rcv_ssthresh is small (__tcp_grow_window).
    Kernel: net/ipv4/tcp_input.c, tcp_grow_window() (skbs are linear here,
    so truesize_adjust() keeps skb->truesize; no memory pressure).
    """
    space = tcp_space(sk)
    clamp = sk.window_clamp
    room = (clamp if clamp < space else space) - sk.rcv_ssthresh  # min()
    if room <= 0:
        return
    length = skb.tail - skb.data
    truesize = skb.truesize
    if tcp_win_from_space(sk, truesize) <= length:
        incr = 2 * sk.advmss
    else:
        incr = __tcp_grow_window(sk, skb, truesize)
    if incr:
        if incr < 2 * length:  # max()
            incr = 2 * length
        sk.rcv_ssthresh += room if room < incr else incr  # min()
        sk.icsk_ack_quick |= 1


@kernel("net/ipv4/tcp_input.c", "tcp_end_cwnd_reduction")
def tcp_end_cwnd_reduction(sk: TcpSock) -> None:
    """cwnd = ssthresh at the end of CWR or Recovery, unless the reduction was undone.

    Kernel: net/ipv4/tcp_input.c, tcp_end_cwnd_reduction().
    """
    if sk.snd_ssthresh < TCP_INFINITE_SSTHRESH and (
        sk.icsk_ca_state == TCP_CA_CWR or sk.undo_marker
    ):
        sk.snd_cwnd = sk.snd_ssthresh
        sk.snd_cwnd_stamp = sk.net.clock.jiffies
    sk.icsk_ca_ops.cwnd_event(sk, CA_EVENT_COMPLETE_CWR)


# -- the scoreboard -----------------------------------------------------------------------------


class TcpSacktagState:
    """What one ACK's SACK and cumulative parts found (kernel: ``struct tcp_sacktag_state``
    with the ``rate_sample`` fields loss detection reads).

    Attributes:
        flag: FLAG_* bits found.
        reord: the lowest never-retransmitted sequence delivered out of order.
        first_sackt, last_sackt: send times (µs) of the first and last newly
            SACKed never-retransmitted skbs (-1: none): the SACK RTT sample.
        prior_delivered: ``delivered`` when the latest-sent skb delivered by
            this ACK was sent (``rs->prior_delivered``; 0: none).
        prior_mstamp, prior_end_seq: that skb's send time and end (for the choice).
        rate: the ACK's delivery rate sample (``sack_state.rate``).
    """

    __slots__ = (
        "first_sackt",
        "flag",
        "last_sackt",
        "prior_delivered",
        "prior_end_seq",
        "prior_mstamp",
        "rate",
        "reord",
    )

    def __init__(self, snd_nxt: int) -> None:
        self.flag = 0
        self.reord = snd_nxt
        self.first_sackt = -1  # the clock starts at 0 here: -1 is "none"
        self.last_sackt = -1
        self.prior_delivered = 0
        self.prior_mstamp = 0
        self.prior_end_seq = 0
        self.rate = RateSample()


@kernel("net/ipv4/tcp_rate.c", "tcp_rate_skb_delivered")
def tcp_rate_skb_delivered(sk: TcpSock, state: TcpSacktagState, tcb: TcpSkbCb) -> None:
    """An skb was (S)ACKed: the most recently sent of this ACK's skbs starts
    the rate sample (its ``delivered`` stamp also feeds RACK's reordering window).

    Kernel: net/ipv4/tcp_rate.c, tcp_rate_skb_delivered().
    """
    if not state.prior_delivered or (
        tcb.mstamp > state.prior_mstamp
        or (tcb.mstamp == state.prior_mstamp and after(tcb.end_seq, state.prior_end_seq))
    ):
        state.prior_delivered = tcb.tx_delivered
        state.prior_mstamp = tcb.mstamp
        state.prior_end_seq = tcb.end_seq
        rs = state.rate
        rs.prior_delivered = tcb.tx_delivered
        rs.prior_mstamp = tcb.tx_delivered_mstamp
        rs.is_app_limited = tcb.tx_is_app_limited
        rs.is_retrans = bool(tcb.sacked & TCPCB_RETRANS)
        sk.first_tx_mstamp = tcb.mstamp  # send time of the most recently (S)ACKed skb
        rs.interval_us = tcb.mstamp - tcb.tx_first_tx_mstamp  # the send phase


@kernel("tcp_highest_sack_seq")
def tcp_highest_sack_seq(sk: TcpSock) -> int:
    """The end of the highest SACKed data (snd_una with none). Kernel: tcp_highest_sack_seq()."""
    if not sk.sacked_out:
        return sk.snd_una
    hs = sk.highest_sack
    if hs is None:
        return sk.snd_nxt
    end: int = hs.cb.end_seq  # netstack's highest_sack is the SACKed skb, the kernel's the next
    return end


@kernel("net/ipv4/tcp_input.c", "tcp_check_sack_reordering")
def tcp_check_sack_reordering(sk: TcpSock, low_seq: int, ts: int) -> None:
    """Data above never-retransmitted *low_seq* was delivered first: reordering.

    ``reordering`` becomes the distance in segments (up to tcp_max_reordering).

    Kernel: net/ipv4/tcp_input.c, tcp_check_sack_reordering().
    """
    mss = sk.mss_cache
    fack = tcp_highest_sack_seq(sk)
    if not before(low_seq, fack):
        return
    metric = (fack - low_seq) & M32
    if metric > sk.reordering * mss and mss:
        sk.reordering = min((metric + mss - 1) // mss, sk.tcp.sysctl_tcp_max_reordering)
    sk.reord_seen += 1
    if ts:
        sk.ext.TCPTSReorder += 1
    else:
        sk.ext.TCPSACKReorder += 1


@kernel("net/ipv4/tcp_input.c", "tcp_mark_head_lost")
def tcp_mark_head_lost(sk: TcpSock, packets: int, mark_head: bool) -> None:
    """Mark skbs from the head lost until more than *packets* SACKed segments
    are passed (the dupthresh scoreboard, used only with ``tcp_recovery`` 0).

    Kernel: net/ipv4/tcp_input.c, tcp_mark_head_lost() (4.18–6.1, without hints).
    """
    cnt = 0
    for skb in sk.rtx_queue:
        tcb: TcpSkbCb = skb.cb
        if after(tcb.end_seq, sk.high_seq):
            break
        if tcb.sacked & TCPCB_SACKED_ACKED:
            cnt += tcb.pcount
        if cnt > packets:
            break
        if not tcb.sacked & TCPCB_LOST:
            tcp_mark_skb_lost(sk, skb)
        if mark_head:
            break


@kernel("net/ipv4/tcp_input.c", "tcp_update_scoreboard")
def tcp_update_scoreboard(sk: TcpSock, fast_rexmit: bool) -> None:
    """Without RACK (``tcp_recovery`` 0), SACK: mark the head lost up to
    ``sacked_out - reordering`` SACKed segments, or just the head on entry.

    Kernel: net/ipv4/tcp_input.c, tcp_update_scoreboard() (4.18–6.1, the
    RACK-less path later kernels removed).
    """
    if tcp_is_sack(sk):
        sacked_upto = sk.sacked_out - sk.reordering
        if sacked_upto >= 0:
            tcp_mark_head_lost(sk, sacked_upto, False)
        elif fast_rexmit:
            tcp_mark_head_lost(sk, 1, True)


@kernel("net/ipv4/tcp_input.c", "tcp_limit_reno_sacked")
def tcp_limit_reno_sacked(sk: TcpSock) -> bool:
    """Keep sacked_out + lost_out ≤ packets_out.

    Kernel: net/ipv4/tcp_input.c, tcp_limit_reno_sacked().
    """
    holes = min(max(sk.lost_out, 1), sk.packets_out)
    if sk.sacked_out + holes > sk.packets_out:
        sk.sacked_out = sk.packets_out - holes
        return True
    return False


@kernel("net/ipv4/tcp_input.c", "tcp_check_reno_reordering")
def tcp_check_reno_reordering(sk: TcpSock, addend: int) -> None:
    """More dupacks than segments out: that was reordering.

    Kernel: net/ipv4/tcp_input.c, tcp_check_reno_reordering().
    """
    if not tcp_limit_reno_sacked(sk):
        return
    sk.reordering = min(sk.packets_out + addend, sk.tcp.sysctl_tcp_max_reordering)
    sk.reord_seen += 1
    sk.ext.TCPRenoReorder += 1


@kernel("net/ipv4/tcp_input.c", "tcp_add_reno_sack")
def tcp_add_reno_sack(sk: TcpSock, num_dupack: int) -> None:
    """Without SACK a duplicate ACK counts as one segment received.

    Kernel: net/ipv4/tcp_input.c, tcp_add_reno_sack().
    """
    if num_dupack:
        prior_sacked = sk.sacked_out
        sk.sacked_out += num_dupack
        tcp_check_reno_reordering(sk, 0)
        delivered = sk.sacked_out - prior_sacked
        if delivered > 0:
            sk.delivered += delivered


@kernel("net/ipv4/tcp_input.c", "tcp_remove_reno_sacks")
def tcp_remove_reno_sacks(sk: TcpSock, acked: int) -> None:
    """An ACK of new data without SACK: one segment filled the hole, the rest
    had been counted by dupacks. Kernel: net/ipv4/tcp_input.c, tcp_remove_reno_sacks()."""
    if acked > 0:
        sk.delivered += max(acked - sk.sacked_out, 1)
        if acked - 1 >= sk.sacked_out:
            sk.sacked_out = 0
        else:
            sk.sacked_out -= acked - 1
    tcp_check_reno_reordering(sk, acked)


@kernel("net/ipv4/tcp_input.c", "tcp_match_skb_to_sack")
def _match_skb_to_sack(sk: TcpSock, skb: SkBuff, start: int, end: int) -> bool:
    """Split a GSO skb so that a SACK block covers whole skbs; True if *skb* is in it.

    Kernel: net/ipv4/tcp_input.c, tcp_match_skb_to_sack().
    """
    tcb: TcpSkbCb = skb.cb
    in_sack = not after(start, tcb.seq) and not before(end, tcb.end_seq)
    if tcb.pcount > 1 and not in_sack and after(tcb.end_seq, start):
        mss = tcb.gso_size or sk.mss_cache
        in_sack = not after(start, tcb.seq)
        if not in_sack:
            pkt_len = (start - tcb.seq) & M32
            pkt_len = max(pkt_len, mss)
        else:
            pkt_len = (end - tcb.seq) & M32
            if pkt_len < mss:
                return False
        if pkt_len > mss:
            new_len = pkt_len // mss * mss
            if not in_sack and new_len < pkt_len:
                new_len += mss
            pkt_len = new_len
        if pkt_len >= skb.tail - skb.data and not in_sack:
            return False
        if pkt_len < skb.tail - skb.data:
            tcp_fragment(sk, True, skb, pkt_len, mss)
    return in_sack


@kernel("net/ipv4/tcp_input.c", "tcp_dsack_seen")
def tcp_dsack_seen(sk: TcpSock, start: int, end: int, state: TcpSacktagState) -> int:
    """Count a D-SACK; 0 if it is dubious (wider than any window, or more than
    was retransmitted). Kernel: net/ipv4/tcp_input.c, tcp_dsack_seen()."""
    if not before(start, end):
        return 0
    seq_len = (end - start) & M32
    if seq_len > sk.max_window:
        return 0
    dup_segs = 1
    if seq_len > sk.mss_cache:
        dup_segs = -(-seq_len // sk.mss_cache)
    elif sk.tlp_high_seq and sk.tlp_high_seq == end:
        state.flag |= FLAG_DSACK_TLP
    sk.dsack_dups += dup_segs
    if sk.dsack_dups > sk.total_retrans:
        return 0
    # RACK widens its window only for D-SACKs that follow reordering, not TLP's
    if sk.reord_seen and not state.flag & FLAG_DSACK_TLP:
        sk.rack_dsack_seen = True
    state.flag |= FLAG_DSACKING_ACK
    sk.delivered += dup_segs  # a spurious retransmission was delivered
    return dup_segs


@kernel("net/ipv4/tcp_input.c", "tcp_check_dsack")
def tcp_check_dsack(
    sk: TcpSock,
    ack_seq: int,
    blocks: list[tuple[int, int]],
    prior_snd_una: int,
    state: TcpSacktagState,
) -> bool:
    """Is the first SACK block a D-SACK (RFC 2883)? A valid one counts down the
    retransmissions that undo waits for. Kernel: net/ipv4/tcp_input.c, tcp_check_dsack()."""
    start0, end0 = blocks[0]
    if before(start0, ack_seq):
        sk.ext.TCPDSACKRecv += 1
    elif len(blocks) > 1:
        start1, end1 = blocks[1]
        if after(end0, end1) or before(start0, start1):
            return False
        sk.ext.TCPDSACKOfoRecv += 1
    else:
        return False
    dup_segs = tcp_dsack_seen(sk, start0, end0, state)
    if not dup_segs:
        sk.ext.TCPDSACKIgnoredDubious += 1
        return False
    sk.ext.TCPDSACKRecvSegs += dup_segs
    # a D-SACK for data already forgotten: dumb counting
    if (
        sk.undo_marker
        and sk.undo_retrans > 0
        and not after(end0, prior_snd_una)
        and after(end0, sk.undo_marker)
    ):
        sk.undo_retrans = max(0, sk.undo_retrans - dup_segs)
    return True


@kernel("net/ipv4/tcp_input.c", "tcp_is_sackblock_valid")
def tcp_is_sackblock_valid(sk: TcpSock, is_dsack: bool, start: int, end: int) -> bool:
    """Kernel: net/ipv4/tcp_input.c, tcp_is_sackblock_valid()."""
    if after(end, sk.snd_nxt) or not before(start, end):
        return False
    if not before(start, sk.snd_nxt):
        return False
    if after(start, sk.snd_una):
        return True
    if not is_dsack or not sk.undo_marker:
        return False
    if after(end, sk.snd_una):
        return False
    if not before(start, sk.undo_marker):
        return True
    if not after(end, sk.undo_marker):
        return False
    return not before(start, (end - sk.max_window) & M32)


@kernel("net/ipv4/tcp_input.c", "tcp_sacktag_one")
def tcp_sacktag_one(sk: TcpSock, state: TcpSacktagState, tcb: TcpSkbCb, dup_sack: bool) -> None:
    """Tag one skb a (D-)SACK block covers, keeping the counters and RACK up to date.

    Kernel: net/ipv4/tcp_input.c, tcp_sacktag_one().
    """
    sacked = tcb.sacked
    pcount = tcb.pcount
    start_seq = tcb.seq
    end_seq = tcb.end_seq
    if dup_sack and sacked & TCPCB_RETRANS:  # a D-SACK for a retransmitted skb
        if sk.undo_marker and sk.undo_retrans > 0 and after(end_seq, sk.undo_marker):
            sk.undo_retrans = max(0, sk.undo_retrans - pcount)
        if sacked & TCPCB_SACKED_ACKED and before(start_seq, state.reord):
            state.reord = start_seq
    if not after(end_seq, sk.snd_una):  # about to be freed by the cumulative ACK
        return
    if not sacked & TCPCB_SACKED_ACKED:
        tcp_rack_advance(sk, sacked, end_seq, tcb.mstamp, tcb.tx_order)
        if sacked & TCPCB_SACKED_RETRANS:
            # not lost: the retransmission is believed still in flight
            if sacked & TCPCB_LOST:
                sacked &= ~(TCPCB_LOST | TCPCB_SACKED_RETRANS)
                sk.lost_out -= pcount
                sk.retrans_out -= pcount
        else:
            if not sacked & TCPCB_RETRANS:
                # a new SACK for a never-retransmitted skb in a hole: reordering
                if before(start_seq, tcp_highest_sack_seq(sk)) and before(start_seq, state.reord):
                    state.reord = start_seq
                if not after(end_seq, sk.high_seq):
                    state.flag |= FLAG_ORIG_SACK_ACKED
                if state.first_sackt < 0:
                    state.first_sackt = tcb.mstamp
                state.last_sackt = tcb.mstamp
            if sacked & TCPCB_LOST:
                sacked &= ~TCPCB_LOST
                sk.lost_out -= pcount
        sacked |= TCPCB_SACKED_ACKED
        state.flag |= FLAG_DATA_SACKED
        sk.sacked_out += pcount
        sk.delivered += pcount  # out-of-order segments delivered
    # D-SACK: a redundant retransmission (S|R or R) no longer counts as in flight
    if dup_sack and sacked & TCPCB_SACKED_RETRANS:
        sacked &= ~TCPCB_SACKED_RETRANS
        sk.retrans_out -= pcount
    tcb.sacked = sacked


def _sacktag_walk(
    sk: TcpSock, state: TcpSacktagState, start: int, end: int, dup_sack: bool
) -> None:
    """tcp_sacktag_walk(): tag the skbs of one block (without SACK shifting)."""
    q = sk.rtx_queue
    i = 0
    while i < len(q):
        s = q[i]
        scb: TcpSkbCb = s.cb
        if not after(scb.end_seq, start):
            i += 1
            continue
        if not before(scb.seq, end):
            break
        if _match_skb_to_sack(sk, s, start, end):
            was_sacked = scb.sacked & TCPCB_SACKED_ACKED
            tcp_sacktag_one(sk, state, scb, dup_sack)
            if not was_sacked and scb.sacked & TCPCB_SACKED_ACKED:
                tcp_rate_skb_delivered(sk, state, scb)
            if scb.sacked & TCPCB_SACKED_ACKED:
                scb.tsorted = False  # list_del_init(): RACK is done with it
                hs = sk.highest_sack
                if hs is None or not before(scb.end_seq, tcp_highest_sack_seq(sk)):
                    sk.highest_sack = s  # tcp_advance_highest_sack()
            if sk.lost_skb_hint is s:
                sk.lost_skb_hint = None
        i += 1


@kernel("net/ipv4/tcp_input.c", "tcp_sacktag_write_queue", "tcp_sacktag_walk")
def tcp_sacktag_write_queue(
    sk: TcpSock, skb: SkBuff, prior_snd_una: int, state: TcpSacktagState
) -> int:
    """Mark what the SACK blocks of *skb* cover; return FLAG_* bits.

    A D-SACK (RFC 2883) is validated, counted toward undo and tags the skbs it
    covers; blocks outside ``snd_una..snd_nxt`` are discarded (TCPSACKDiscard);
    the blocks are walked in sequence order; reordering is detected.

    Kernel: net/ipv4/tcp_input.c, tcp_sacktag_write_queue() / tcp_sacktag_walk()
    (without the SACK-shifting of skbs and the block cache).
    """
    if TIMED:
        spend("tcp_sacktag_write_queue")
    tcb: TcpSkbCb = skb.cb
    blocks = _sack_blocks(skb.buf, tcb.sacked_off)
    state.flag = 0
    state.reord = sk.snd_nxt
    if not blocks:
        return 0
    if not sk.sacked_out and sk.rtx_queue:
        sk.highest_sack = sk.rtx_queue[0]  # tcp_highest_sack_reset()
    found_dup_sack = tcp_check_dsack(sk, tcb.ack_seq, blocks, prior_snd_una, state)
    if before(tcb.ack_seq, (prior_snd_una - sk.max_window) & M32):
        return 0
    if not sk.packets_out:
        return state.flag
    used: list[tuple[int, int, bool]] = []
    for i, (start, end) in enumerate(blocks):
        dup_sack = not i and found_dup_sack
        if not tcp_is_sackblock_valid(sk, dup_sack, start, end):
            if dup_sack:
                if not sk.undo_marker:
                    sk.ext.TCPDSACKIgnoredNoUndo += 1
                else:
                    sk.ext.TCPDSACKIgnoredOld += 1
            else:
                # do not count old ones caused by ACK reordering
                if tcb.ack_seq != sk.snd_una and not after(end, sk.snd_una):
                    continue
                sk.ext.TCPSACKDiscard += 1
            continue
        if not after(end, prior_snd_una):  # ignore very old stuff early
            continue
        used.append((start, end, dup_sack))
    una = sk.snd_una
    used.sort(key=lambda b: (b[0] - una) & M32)  # in-order walk of the queue
    for start, end, dup_sack in used:
        _sacktag_walk(sk, state, start, end, dup_sack)
    if sk.icsk_ca_state != TCP_CA_Loss or sk.undo_marker:
        tcp_check_sack_reordering(sk, state.reord, 0)
    return state.flag


# -- ACK processing ---------------------------------------------------------------------------


@kernel(
    "net/ipv4/tcp_input.c",
    "tcp_clean_rtx_queue",
    "tcp_tso_acked",
    "include/net/tcp.h",
    "before",
    "after",
)
def tcp_clean_rtx_queue(
    sk: TcpSock, prior_fack: int, prior_snd_una: int, state: TcpSacktagState
) -> tuple[int, int]:
    """Free what the cumulative ACK covers; sample the RTT. Returns (flag, pkts_acked).

    Kernel: net/ipv4/tcp_input.c, tcp_clean_rtx_queue() / tcp_tso_acked();
    include/net/tcp.h, before() / after() (written out in the loop).
    """
    if TIMED:
        spend("tcp_clean_rtx_queue")
    now = sk.tcp_mstamp
    first_ackt = -1  # the clock starts at 0 here: -1 is "none"
    last_ackt = -1
    flag = 0
    pkts_acked = 0
    prior_sacked = sk.sacked_out
    reord = sk.snd_nxt  # the lowest acked un-retransmitted un-SACKed sequence
    sack_ok = tcp_is_sack(sk)
    q = sk.rtx_queue
    snd_una = sk.snd_una
    n = 0
    freed = 0
    fully_acked = True
    head: SkBuff | None = None
    while n < len(q):
        skb = q[n]
        tcb: TcpSkbCb = skb.cb
        start_seq = tcb.seq
        if ((snd_una - tcb.end_seq) & M32) > 0x7FFFFFFF:  # after(end_seq, snd_una)
            if tcb.pcount == 1 or ((tcb.seq - snd_una) & M32) <= 0x7FFFFFFF:
                head = skb
                break
            # tcp_tso_acked(): trim the acknowledged whole segments
            packets = tcb.pcount
            tcp_trim_head(sk, skb, (snd_una - tcb.seq) & M32)
            acked_pcount = packets - tcb.pcount
            if not acked_pcount:
                head = skb
                break
            fully_acked = False
        else:
            acked_pcount = tcb.pcount
        sacked = tcb.sacked
        if sacked & TCPCB_RETRANS:
            if sacked & TCPCB_SACKED_RETRANS:
                sk.retrans_out -= acked_pcount
            flag |= FLAG_RETRANS_DATA_ACKED
        elif not sacked & TCPCB_SACKED_ACKED:
            last_ackt = tcb.mstamp
            if first_ackt < 0:
                first_ackt = last_ackt
            if ((start_seq - reord) & M32) > 0x7FFFFFFF:  # before(start_seq, reord)
                reord = start_seq
            if ((sk.high_seq - tcb.end_seq) & M32) <= 0x7FFFFFFF:  # !after(end_seq, high_seq)
                flag |= FLAG_ORIG_SACK_ACKED
        if sacked & TCPCB_SACKED_ACKED:
            sk.sacked_out -= acked_pcount
        elif sack_ok:
            sk.delivered += acked_pcount
            if not tcp_skb_spurious_retrans(sk, tcb):
                tcp_rack_advance(sk, sacked, tcb.end_seq, tcb.mstamp, tcb.tx_order)
        if sacked & TCPCB_LOST:
            sk.lost_out -= acked_pcount
        sk.packets_out -= acked_pcount
        pkts_acked += acked_pcount
        if not sacked & TCPCB_SACKED_ACKED:
            tcp_rate_skb_delivered(sk, state, tcb)
        if tcb.tcp_flags & TCPHDR_SYN:
            flag |= FLAG_SYN_ACKED
            sk.retrans_stamp = 0
        else:
            flag |= FLAG_DATA_ACKED
        if not fully_acked:
            head = skb
            break
        n += 1
        freed += skb.truesize
        if sk.retransmit_skb_hint is skb:
            sk.retransmit_skb_hint = None
        if sk.lost_skb_hint is skb:
            sk.lost_skb_hint = None
        if sk.highest_sack is skb:
            sk.highest_sack = None
        consume_skb(skb)
    if n:
        del q[:n]
        sk_wmem_uncharge(sk, freed)  # tcp_wmem_free_skb() of each
        if sk.highest_sack is None and q:
            sk.highest_sack = q[0]
    if between(sk.snd_up, prior_snd_una, sk.snd_una):
        sk.snd_up = sk.snd_una  # urgent mode is over
    if head is not None and head.cb.sacked & TCPCB_SACKED_ACKED:
        flag |= FLAG_SACK_RENEGING
    seq_rtt_us = sack_rtt_us = ca_rtt_us = -1
    if first_ackt >= 0 and not flag & FLAG_RETRANS_DATA_ACKED:  # Karn
        seq_rtt_us = now - first_ackt
        ca_rtt_us = now - last_ackt
        if (
            pkts_acked == 1
            and fully_acked
            and not prior_sacked
            and ((sk.snd_una - prior_snd_una) & M32) < sk.mss_cache
            and state.prior_delivered + 1 == sk.delivered
            and not flag & (FLAG_CA_ALERT | FLAG_SYN_ACKED)
        ):
            flag |= FLAG_ACK_MAYBE_DELAYED  # likely a delayed ACK of a lone runt
    if state.first_sackt >= 0:
        sack_rtt_us = now - state.first_sackt
        ca_rtt_us = now - state.last_sackt
    rtt_update = tcp_ack_update_rtt(sk, flag, seq_rtt_us, ca_rtt_us, sack_rtt_us)
    if not q:
        tcp_chrono_stop(sk, TCP_CHRONO_BUSY)  # everything sent was acknowledged
    if flag & FLAG_ACKED:
        flag |= FLAG_SET_XMIT_TIMER  # set the TLP or RTO timer
        if not sack_ok:
            tcp_remove_reno_sacks(sk, pkts_acked)
            # a cumulative ACK of anything retransmitted proves nothing without SACK
            if flag & FLAG_RETRANS_DATA_ACKED:
                flag &= ~FLAG_ORIG_SACK_ACKED
        elif before(reord, prior_fack):  # a never-retransmitted hole filled: reordering
            tcp_check_sack_reordering(sk, reord, 0)
    elif (
        head is not None and rtt_update and sack_rtt_us >= 0 and sack_rtt_us > now - head.cb.mstamp
    ):
        # the SACK RTT comes from data sent before the head was last
        # (re)transmitted: re-arm, else the timeout keeps being pushed back
        flag |= FLAG_SET_XMIT_TIMER
    sk.icsk_ca_ops.pkts_acked(sk, pkts_acked, ca_rtt_us)
    if sk.sacked_out < 0:
        sk.sacked_out = 0
    if sk.lost_out < 0:
        sk.lost_out = 0
    if sk.retrans_out < 0:
        sk.retrans_out = 0
    return flag, pkts_acked


@kernel("net/ipv4/tcp_input.c", "tcp_may_update_window", "after")
def tcp_may_update_window(sk: TcpSock, ack: int, ack_seq: int, nwin: int) -> bool:
    """Kernel: net/ipv4/tcp_input.c, tcp_may_update_window(); after(), written out."""
    return (
        ((sk.snd_una - ack) & M32) > 0x7FFFFFFF  # after(ack, snd_una)
        or ((sk.snd_wl1 - ack_seq) & M32) > 0x7FFFFFFF  # after(ack_seq, snd_wl1)
        # 6.x: a zero window (a receiver out of memory, ICSK_ACK_NOMEM) is taken too
        or (ack_seq == sk.snd_wl1 and (nwin > sk.snd_wnd or not nwin))
    )


@kernel("net/ipv4/tcp_input.c", "tcp_ack_update_window")
def tcp_ack_update_window(sk: TcpSock, skb: SkBuff, ack: int, ack_seq: int) -> int:
    """Kernel: net/ipv4/tcp_input.c, tcp_ack_update_window()."""
    th = skb.transport_header
    buf = skb.buf
    nwin = (buf[th + 14] << 8) | buf[th + 15]
    if not buf[th + 13] & TCPHDR_SYN:
        nwin <<= sk.snd_wscale
    flag = 0
    if tcp_may_update_window(sk, ack, ack_seq, nwin):
        flag |= FLAG_WIN_UPDATE
        sk.snd_wl1 = ack_seq
        if sk.snd_wnd != nwin:
            sk.snd_wnd = nwin
            # the only place the fast path is recovered for a sender
            sk.pred_flags = 0
            tcp_fast_path_check(sk)
            if nwin > sk.max_window:
                sk.max_window = nwin
                tcp_sync_mss(sk, sk.icsk_pmtu_cookie)
    sk.bytes_acked += (ack - sk.snd_una) & M32  # tcp_snd_una_update()
    sk.snd_una = ack
    return flag


@kernel("net/ipv4/tcp_input.c", "tcp_send_challenge_ack")
def tcp_send_challenge_ack(sk: TcpSock) -> None:
    """RFC 5961 challenge ACK, per-socket and host-wide rate limited.

    Kernel: net/ipv4/tcp_input.c, tcp_send_challenge_ack().
    """
    if tcp_oow_rate_limited(sk, "TCPACKSkippedChallenge"):
        return
    tcp = sk.tcp
    now = sk.net.clock.jiffies // tcp.hz
    if now != tcp.challenge_timestamp:
        limit = tcp.sysctl_tcp_challenge_ack_limit
        half = (limit + 1) >> 1
        tcp.challenge_timestamp = now
        tcp.challenge_count = half + (sk.net.rng.randrange(limit) if limit else 0)
    if tcp.challenge_count > 0:
        tcp.challenge_count -= 1
        sk.ext.TCPChallengeACK += 1
        tcp_send_ack(sk)


@kernel("net/ipv4/tcp_input.c", "tcp_process_tlp_ack")
def tcp_process_tlp_ack(sk: TcpSock, ack: int, flag: int) -> None:
    """An ACK during a tail-loss-probe episode; ends the episode (RFC 8985 TLP).

    A probe of new data, or a retransmission that D-SACKs or dupacks show
    arrived with the original, ends it quietly; an ACK beyond the probe means
    a loss was repaired by it: a cwnd reduction (CWR, at once ended) and
    TCPLossProbeRecovery.

    Kernel: net/ipv4/tcp_input.c, tcp_process_tlp_ack().
    """
    if before(ack, sk.tlp_high_seq):
        return
    if not sk.tlp_retrans:
        sk.tlp_high_seq = 0  # the TLP of new data was acknowledged
    elif flag & FLAG_DSACK_TLP:
        sk.tlp_high_seq = 0  # the original and the probe arrived: no loss
    elif after(ack, sk.tlp_high_seq):
        # the ACK advances: there was a loss; reduce cwnd (tlp_high_seq is
        # cleared in tcp_init_cwnd_reduction)
        tcp_init_cwnd_reduction(sk)
        tcp_set_ca_state(sk, TCP_CA_CWR)
        tcp_end_cwnd_reduction(sk)
        tcp_try_keep_open(sk)
        sk.ext.TCPLossProbeRecovery += 1
    elif not flag & (FLAG_SND_UNA_ADVANCED | FLAG_NOT_DUP | FLAG_DATA_SACKED):
        sk.tlp_high_seq = 0  # a pure dupack: the original and the probe arrived


@kernel("net/ipv4/tcp_input.c", "tcp_xmit_recovery")
def tcp_xmit_recovery(sk: TcpSock, rexmit: int) -> None:
    """After cwnd is updated: new data (F-RTO) or retransmissions in recovery.

    Kernel: net/ipv4/tcp_input.c, tcp_xmit_recovery().
    """
    if rexmit == REXMIT_NONE or sk.state == TCP_SYN_SENT:
        return
    if rexmit == REXMIT_NEW:
        __tcp_push_pending_frames(sk, tcp_current_mss(sk), TCP_NAGLE_OFF)
        if after(sk.snd_nxt, sk.high_seq):
            return
        sk.frto = False
    tcp_xmit_retransmit_queue(sk)


@kernel(
    "net/ipv4/tcp_input.c",
    "tcp_ack",
    "tcp_set_xmit_timer",
    "tcp_cong_control",
    "include/net/tcp.h",
    "before",
    "after",
)
def tcp_ack(sk: TcpSock, skb: SkBuff, flag: int) -> int:
    """Process the ACK field of an incoming segment. >0: acceptable, 0: old, <0: invalid.

    Kernel: net/ipv4/tcp_input.c, tcp_ack() / tcp_set_xmit_timer() /
    tcp_cong_control(); include/net/tcp.h, before() / after() (written out on
    the path every ACK takes).
    """
    if TIMED:
        spend("tcp_ack")
    tcb: TcpSkbCb = skb.cb
    prior_snd_una = sk.snd_una
    ack = tcb.ack_seq
    ack_seq = tcb.seq
    prior_packets = sk.packets_out
    prior_delivered = sk.delivered
    prior_lost = sk.lost
    is_sack_reneg = sk.is_sack_reneg
    rexmit = REXMIT_NONE
    num_dupack = 0
    # the kernel's sack_state and rate sample live on its stack: made here only
    # for an ACK that uses them (not a receiver's ACK with nothing in flight);
    # snd_nxt does not move before they are made
    state: TcpSacktagState | None = None
    sack_ok = tcp_is_sack(sk)
    if ((ack - prior_snd_una) & M32) > 0x7FFFFFFF:  # before(ack, prior_snd_una)
        # do not accept an ACK for bytes we never sent (6.2: min with bytes_acked)
        max_window = sk.max_window if sk.max_window < sk.bytes_acked else sk.bytes_acked
        if before(ack, (prior_snd_una - max_window) & M32):
            if not flag & FLAG_NO_CHALLENGE_ACK:
                tcp_send_challenge_ack(sk)
            return -1
        # old ACK: SACK information may still be useful, a D-SACK may undo
        if tcb.sacked_off and sack_ok:
            state = TcpSacktagState(sk.snd_nxt)
            flag |= tcp_sacktag_write_queue(sk, skb, prior_snd_una, state)
            flag, rexmit = tcp_fastretrans_alert(sk, prior_snd_una, num_dupack, flag)
            tcp_xmit_recovery(sk, rexmit)
        return 0
    if ((sk.snd_nxt - ack) & M32) > 0x7FFFFFFF:  # after(ack, snd_nxt)
        # RFC 5961 5.2 for an ACK of unsent data too (Linux 6.18)
        if not flag & FLAG_NO_CHALLENGE_ACK:
            tcp_send_challenge_ack(sk)
        return -1
    if ack != prior_snd_una:  # after(ack, prior_snd_una): not before it, checked above
        flag |= FLAG_SND_UNA_ADVANCED
        sk.icsk_retransmits = 0
    prior_fack = tcp_highest_sack_seq(sk) if sack_ok else sk.snd_una
    if (
        flag & FLAG_UPDATE_TS_RECENT
        and sk.saw_tstamp
        and ((sk.rcv_wup - tcb.seq) & M32) <= 0x7FFFFFFF  # !after(seq, rcv_wup)
    ):
        sk.ts_recent = sk.rcv_tsval  # tcp_replace_ts_recent()
        sk.ts_recent_stamp = sk.tcp.seconds()
    if not flag & FLAG_SLOWPATH and flag & FLAG_SND_UNA_ADVANCED:
        # header prediction's pure ACK: the window is the predicted one, a pure
        # forward advance
        sk.snd_wl1 = ack_seq  # tcp_update_wl()
        sk.bytes_acked += (ack - prior_snd_una) & M32  # tcp_snd_una_update()
        sk.snd_una = ack
        flag |= FLAG_WIN_UPDATE
        sk.ext.TCPHPAcks += 1
    else:
        if tcb.seq != tcb.end_seq:
            flag |= FLAG_DATA
        else:
            sk.ext.TCPPureAcks += 1
        flag |= tcp_ack_update_window(sk, skb, ack, ack_seq)
        if tcb.sacked_off and sack_ok:
            state = TcpSacktagState(sk.snd_nxt)
            flag |= tcp_sacktag_write_queue(sk, skb, prior_snd_una, state)
    sk.rcv_tstamp = sk.net.clock.jiffies
    sk.icsk_probes_out = 0
    if not prior_packets:
        # no_queue: a D-SACK may still undo a cwnd reduction
        if flag & FLAG_DSACKING_ACK:
            flag, rexmit = tcp_fastretrans_alert(sk, prior_snd_una, num_dupack, flag)
        if sk.write_queue:
            tcp_ack_probe(sk)
        if sk.tlp_high_seq:
            tcp_process_tlp_ack(sk, ack, flag)
        return 1
    if state is None:
        state = TcpSacktagState(sk.snd_nxt)
    f, pkts_acked = tcp_clean_rtx_queue(sk, prior_fack, prior_snd_una, state)
    flag |= f
    tcp_rack_update_reo_wnd(sk, state.prior_delivered)
    if sk.tlp_high_seq:
        tcp_process_tlp_ack(sk, ack, flag)
    # tcp_ack_is_dubious()
    if not flag & FLAG_NOT_DUP or flag & FLAG_CA_ALERT or sk.icsk_ca_state != TCP_CA_Open:
        if not flag & (FLAG_SND_UNA_ADVANCED | FLAG_NOT_DUP | FLAG_DSACKING_ACK):
            num_dupack = 1
        flag, rexmit = tcp_fastretrans_alert(sk, prior_snd_una, num_dupack, flag)
    if flag & FLAG_SET_XMIT_TIMER:  # tcp_set_xmit_timer(): unless RACK armed its own
        if not tcp_schedule_loss_probe(sk, True):
            tcp_rearm_rto(sk)
    delivered = sk.delivered - prior_delivered
    sk.ext.TCPDelivered += delivered  # tcp_newly_delivered()
    tcp_rate_gen(sk, delivered, is_sack_reneg, state.rate)
    # tcp_cong_control()
    if tcp_in_cwnd_reduction(sk):
        tcp_cwnd_reduction(sk, delivered, sk.lost - prior_lost, flag)
    elif flag & FLAG_DATA_ACKED or (sk.reordering > sk.tcp.sysctl_tcp_reordering and
                                    flag & FLAG_FORWARD_PROGRESS):  # fmt: skip
        sk.icsk_ca_ops.cong_avoid(sk, ack, delivered)  # tcp_cong_avoid()
        sk.snd_cwnd_stamp = sk.net.clock.jiffies
    tcp_xmit_recovery(sk, rexmit)
    # netstack: the send buffer follows the cwnd on every ACK, not only when a
    # writer ran out of room (tcp_new_space), unless the user set SO_SNDBUF
    if sk.icsk_ca_state == TCP_CA_Open and pkts_acked and not sk.sk_userlocks & SOCK_SNDBUF_LOCK:
        tcp_sndbuf_expand(sk)
    return 1


@kernel("tcp_ack_probe")
def tcp_ack_probe(sk: TcpSock) -> None:
    """The window opened (or not): stop or re-arm the zero-window probe. Kernel: tcp_ack_probe()."""
    head = sk.write_queue[0]
    if tcp_snd_wnd_test(sk, head, tcp_current_mss(sk)):
        sk.icsk_backoff = 0
        sk.icsk_probes_tstamp = 0
        if sk.icsk_pending == ICSK_TIME_PROBE0:
            sk.icsk_pending = 0
            sk.retransmit_timer.delete()
    else:
        when = tcp_clamp_probe0_to_user_timeout(sk, tcp_probe0_when(sk, sk.tcp.TCP_RTO_MAX))
        inet_csk_reset_xmit_timer(sk, ICSK_TIME_PROBE0, when, sk.tcp.TCP_RTO_MAX)


# -- the loss-recovery state machine ------------------------------------------------------------


@kernel("net/ipv4/tcp_input.c", "tcp_time_to_recover", "tcp_dupack_heuristics")
def tcp_time_to_recover(sk: TcpSock) -> bool:
    """Has loss detection marked a segment lost? Without RACK (``tcp_recovery``
    0) also: more than ``reordering`` dupacks or SACKed segments.

    Kernel: net/ipv4/tcp_input.c, tcp_time_to_recover() / tcp_dupack_heuristics()
    (6.x; the dupthresh term is 4.18–6.1's RACK-less path).
    """
    if sk.lost_out:
        return True
    return not tcp_is_rack(sk) and sk.sacked_out + 1 > sk.reordering


@kernel("net/ipv4/tcp_input.c", "tcp_tsopt_ecr_before")
def tcp_tsopt_ecr_before(sk: TcpSock, when: int) -> bool:
    """The echoed timestamp predates *when* (ms, without the offset).

    Kernel: net/ipv4/tcp_input.c, tcp_tsopt_ecr_before().
    """
    if not (sk.saw_tstamp and sk.rcv_tsecr):
        return False
    return before((sk.rcv_tsecr - sk.tsoffset) & M32, when & M32)


@kernel("net/ipv4/tcp_input.c", "tcp_skb_spurious_retrans")
def tcp_skb_spurious_retrans(sk: TcpSock, tcb: TcpSkbCb) -> bool:
    """A retransmitted skb whose echo predates the retransmission.

    Kernel: net/ipv4/tcp_input.c, tcp_skb_spurious_retrans().
    """
    return bool(tcb.sacked & TCPCB_RETRANS) and tcp_tsopt_ecr_before(sk, tcb.mstamp // 1000)


@kernel("net/ipv4/tcp_input.c", "tcp_packet_delayed")
def tcp_packet_delayed(sk: TcpSock) -> bool:
    """Nothing was retransmitted, or the echo predates the first retransmission.

    Kernel: net/ipv4/tcp_input.c, tcp_packet_delayed().
    """
    if sk.retrans_stamp:
        return tcp_tsopt_ecr_before(sk, sk.retrans_stamp)
    if not tcp_is_sack(sk) and not before(sk.snd_una, sk.high_seq):
        return False  # tcp_is_non_sack_preventing_reopen() cleared retrans_stamp
    return sk.state != TCP_SYN_SENT


@kernel("net/ipv4/tcp_input.c", "tcp_undo_cwnd_reduction")
def tcp_undo_cwnd_reduction(sk: TcpSock, unmark_loss: bool) -> None:
    """The reduction was spurious: cwnd and ssthresh back to before it.

    Kernel: net/ipv4/tcp_input.c, tcp_undo_cwnd_reduction().
    """
    if unmark_loss:
        for skb in sk.rtx_queue:
            skb.cb.sacked &= ~TCPCB_LOST
        sk.lost_out = 0
        sk.retransmit_skb_hint = None  # tcp_clear_all_retrans_hints()
        sk.lost_skb_hint = None
    if sk.prior_ssthresh:
        sk.snd_cwnd = sk.icsk_ca_ops.undo_cwnd(sk)
        if sk.prior_ssthresh > sk.snd_ssthresh:
            sk.snd_ssthresh = sk.prior_ssthresh
    sk.snd_cwnd_stamp = sk.net.clock.jiffies
    sk.undo_marker = 0
    sk.rack_advanced = True  # force RACK to re-examine losses


@kernel("net/ipv4/tcp_input.c", "tcp_may_undo")
def tcp_may_undo(sk: TcpSock) -> bool:
    """Kernel: net/ipv4/tcp_input.c, tcp_may_undo()."""
    return bool(sk.undo_marker) and (not sk.undo_retrans or tcp_packet_delayed(sk))


@kernel("net/ipv4/tcp_input.c", "tcp_is_non_sack_preventing_reopen")
def tcp_is_non_sack_preventing_reopen(sk: TcpSock) -> bool:
    """Without SACK, hold the state until something above high_seq is ACKed
    (RFC 6582: no false fast retransmits).

    Kernel: net/ipv4/tcp_input.c, tcp_is_non_sack_preventing_reopen().
    """
    if sk.snd_una == sk.high_seq and not tcp_is_sack(sk):
        if not tcp_any_retrans_done(sk):
            sk.retrans_stamp = 0
        return True
    return False


@kernel("net/ipv4/tcp_input.c", "tcp_try_undo_recovery")
def tcp_try_undo_recovery(sk: TcpSock) -> bool:
    """Recovery or Loss is over: undo if nothing needed retransmitting.

    Returns True if the state is kept (NewReno waits for more).

    Kernel: net/ipv4/tcp_input.c, tcp_try_undo_recovery().
    """
    if tcp_may_undo(sk):
        # happy end: the retransmissions were not needed
        tcp_undo_cwnd_reduction(sk, False)
        if sk.icsk_ca_state == TCP_CA_Loss:
            sk.ext.TCPLossUndo += 1
        else:
            sk.ext.TCPFullUndo += 1
    elif sk.rack_reo_wnd_persist:
        sk.rack_reo_wnd_persist -= 1
    if tcp_is_non_sack_preventing_reopen(sk):
        return True
    tcp_set_ca_state(sk, TCP_CA_Open)
    sk.is_sack_reneg = False
    return False


@kernel("net/ipv4/tcp_input.c", "tcp_try_undo_dsack")
def tcp_try_undo_dsack(sk: TcpSock) -> bool:
    """D-SACKs acknowledged every retransmission: undo.

    Kernel: net/ipv4/tcp_input.c, tcp_try_undo_dsack().
    """
    if sk.undo_marker and not sk.undo_retrans:
        sk.rack_reo_wnd_persist = min(TCP_RACK_RECOVERY_THRESH, sk.rack_reo_wnd_persist + 1)
        tcp_undo_cwnd_reduction(sk, False)
        sk.ext.TCPDSACKUndo += 1
        return True
    return False


@kernel("net/ipv4/tcp_input.c", "tcp_try_undo_loss")
def tcp_try_undo_loss(sk: TcpSock, frto_undo: bool) -> bool:
    """Undo in Loss after a partial ACK, or when F-RTO found the RTO spurious.

    Kernel: net/ipv4/tcp_input.c, tcp_try_undo_loss().
    """
    if frto_undo or tcp_may_undo(sk):
        tcp_undo_cwnd_reduction(sk, True)
        sk.ext.TCPLossUndo += 1
        if frto_undo:
            sk.ext.TCPSpuriousRTOs += 1
        sk.icsk_retransmits = 0
        if tcp_is_non_sack_preventing_reopen(sk):
            return True
        if frto_undo or tcp_is_sack(sk):
            tcp_set_ca_state(sk, TCP_CA_Open)
            sk.is_sack_reneg = False
        return True
    return False


@kernel("net/ipv4/tcp_input.c", "tcp_try_undo_partial")
def tcp_try_undo_partial(sk: TcpSock, prior_snd_una: int) -> bool:
    """A partial ACK in Recovery for data that was only delayed.

    Kernel: net/ipv4/tcp_input.c, tcp_try_undo_partial().
    """
    if sk.undo_marker and tcp_packet_delayed(sk):
        # plain luck: the hole was filled by a delayed packet, not a retransmission
        tcp_check_sack_reordering(sk, prior_snd_una, 1)
        if sk.retrans_out:
            return True  # clock out new data, but mark and retransmit nothing more
        if not tcp_any_retrans_done(sk):
            sk.retrans_stamp = 0
        tcp_undo_cwnd_reduction(sk, True)
        sk.ext.TCPPartialUndo += 1
        tcp_try_keep_open(sk)
    return False


@kernel("net/ipv4/tcp_input.c", "tcp_try_keep_open")
def tcp_try_keep_open(sk: TcpSock) -> None:
    """Open, or Disorder while anything is SACKed, lost or retransmitted.

    Kernel: net/ipv4/tcp_input.c, tcp_try_keep_open().
    """
    state = TCP_CA_Open
    if tcp_left_out(sk) or tcp_any_retrans_done(sk):
        state = TCP_CA_Disorder
    if sk.icsk_ca_state != state:
        tcp_set_ca_state(sk, state)
        sk.high_seq = sk.snd_nxt


@kernel("net/ipv4/tcp_input.c", "tcp_try_to_open")
def tcp_try_to_open(sk: TcpSock, flag: int) -> None:
    """Kernel: net/ipv4/tcp_input.c, tcp_try_to_open()."""
    if not tcp_any_retrans_done(sk):
        sk.retrans_stamp = 0
    if flag & FLAG_ECE:
        tcp_enter_cwr(sk)
    if sk.icsk_ca_state != TCP_CA_CWR:
        tcp_try_keep_open(sk)


@kernel("net/ipv4/tcp_input.c", "tcp_check_sack_reneging")
def tcp_check_sack_reneging(sk: TcpSock, flag: int) -> tuple[bool, int]:
    """The ACK points at a SACKed skb: the receiver may have reneged. Give it
    max(srtt/2, 10 ms) to fix its SACKs before the RTO clears them.

    Kernel: net/ipv4/tcp_input.c, tcp_check_sack_reneging().
    """
    if flag & FLAG_SACK_RENEGING and flag & FLAG_SND_UNA_ADVANCED:
        tcp = sk.tcp
        delay = max(tcp.usecs_to_jiffies(sk.srtt_us >> 4), tcp.msecs_to_jiffies(10))
        inet_csk_reset_xmit_timer(sk, ICSK_TIME_RETRANS, delay, tcp.TCP_RTO_MAX)
        return True, flag & ~FLAG_SET_XMIT_TIMER
    return False, flag


@kernel("net/ipv4/tcp_input.c", "tcp_identify_packet_loss")
def tcp_identify_packet_loss(sk: TcpSock, flag: int) -> int:
    """Mark lost segments: RACK with SACK, NewReno's head without. Returns the flag.

    Kernel: net/ipv4/tcp_input.c, tcp_identify_packet_loss().
    """
    if not sk.rtx_queue:
        return flag
    if not tcp_is_sack(sk):
        tcp_newreno_mark_lost(sk, bool(flag & FLAG_SND_UNA_ADVANCED))
    elif tcp_is_rack(sk):
        prior_retrans = sk.retrans_out
        if tcp_rack_mark_lost(sk):
            flag &= ~FLAG_SET_XMIT_TIMER
        if prior_retrans > sk.retrans_out:
            flag |= FLAG_LOST_RETRANS
    return flag


@kernel("net/ipv4/tcp_input.c", "tcp_fastretrans_alert")
def tcp_fastretrans_alert(
    sk: TcpSock, prior_snd_una: int, num_dupack: int, flag: int
) -> tuple[int, int]:
    """The loss-recovery state machine (Open, Disorder, CWR, Recovery, Loss).

    Leaves states whose high_seq is acknowledged (undoing what proved
    spurious), finds lost segments (tcp_identify_packet_loss) and enters
    Recovery when one is. Returns the ACK's flag and what to (re)transmit
    (REXMIT_*); cwnd is set by the caller.

    Kernel: net/ipv4/tcp_input.c, tcp_fastretrans_alert() (no MTU probing).
    """
    if TIMED:
        spend("tcp_fastretrans_alert")
    ece_ack = bool(flag & FLAG_ECE)
    rexmit = REXMIT_NONE
    do_lost = False
    fast_rexmit = False
    if not sk.packets_out and sk.sacked_out:
        sk.sacked_out = 0
    # A. ECE: the reduction is required, no undo
    if ece_ack:
        sk.prior_ssthresh = 0
    # B. reneging SACKs
    reneg, flag = tcp_check_sack_reneging(sk, flag)
    if reneg:
        return flag, rexmit
    # D. leave a state whose high_seq is acknowledged
    state = sk.icsk_ca_state
    if state == TCP_CA_Open:
        sk.retrans_stamp = 0
    elif not before(sk.snd_una, sk.high_seq):
        if state == TCP_CA_CWR:
            # CWR is held until something above high_seq is acknowledged
            if sk.snd_una != sk.high_seq:
                tcp_end_cwnd_reduction(sk)
                tcp_set_ca_state(sk, TCP_CA_Open)
        elif state == TCP_CA_Recovery:
            if not tcp_is_sack(sk):
                sk.sacked_out = 0  # tcp_reset_reno_sack()
            if tcp_try_undo_recovery(sk):
                return flag, rexmit
            tcp_end_cwnd_reduction(sk)
    # E. process the state
    state = sk.icsk_ca_state
    if state == TCP_CA_Recovery:
        if not flag & FLAG_SND_UNA_ADVANCED:
            if not tcp_is_sack(sk):
                tcp_add_reno_sack(sk, num_dupack)
        elif tcp_try_undo_partial(sk, prior_snd_una):
            return flag, rexmit
        do_lost = not tcp_is_rack(sk)  # the RACK-less scoreboard marks more
        if tcp_try_undo_dsack(sk):
            tcp_try_to_open(sk, flag)
        flag = tcp_identify_packet_loss(sk, flag)
        if sk.icsk_ca_state != TCP_CA_Recovery:
            if not tcp_time_to_recover(sk):
                return flag, rexmit
            # undo reverted the state; loss is evident: a new recovery
            tcp_enter_recovery(sk, ece_ack)
    else:
        fall_through = True
        if state == TCP_CA_Loss:
            rexmit = tcp_process_loss(sk, flag, num_dupack)
            if sk.icsk_ca_state != TCP_CA_Loss:
                tcp_update_rto_time(sk)
            flag = tcp_identify_packet_loss(sk, flag)
            # change state if cwnd is undone or retransmits are lost
            fall_through = sk.icsk_ca_state == TCP_CA_Open or bool(flag & FLAG_LOST_RETRANS)
            if not fall_through:
                return flag, rexmit
        if not tcp_is_sack(sk):
            if flag & FLAG_SND_UNA_ADVANCED:
                sk.sacked_out = 0  # tcp_reset_reno_sack()
            tcp_add_reno_sack(sk, num_dupack)
        if sk.icsk_ca_state <= TCP_CA_Disorder:
            tcp_try_undo_dsack(sk)
        flag = tcp_identify_packet_loss(sk, flag)
        if not tcp_time_to_recover(sk):
            tcp_try_to_open(sk, flag)
            return flag, rexmit
        tcp_enter_recovery(sk, ece_ack)
        fast_rexmit = do_lost = True
    if do_lost and not tcp_is_rack(sk):
        tcp_update_scoreboard(sk, fast_rexmit)
    return flag, REXMIT_LOST


@kernel("net/ipv4/tcp_input.c", "tcp_update_rto_time")
def tcp_update_rto_time(sk: TcpSock) -> None:
    """An RTO recovery ended: add its time to tcpi_total_rto_time.

    Kernel: net/ipv4/tcp_input.c, tcp_update_rto_time().
    """
    if sk.rto_stamp:
        sk.total_rto_time += (sk.tcp.tcp_time_stamp_ms() - sk.rto_stamp) & M32
        sk.rto_stamp = 0


@kernel("net/ipv4/tcp_input.c", "tcp_process_loss")
def tcp_process_loss(sk: TcpSock, flag: int, num_dupack: int) -> int:
    """An ACK in Loss: undo a spurious RTO (F-RTO, RFC 5682, SACK-enhanced),
    leave Loss once everything sent before it is acknowledged, else
    retransmit more. Returns what to (re)transmit (REXMIT_*).

    Kernel: net/ipv4/tcp_input.c, tcp_process_loss().
    """
    recovered = not before(sk.snd_una, sk.high_seq)
    if flag & FLAG_SND_UNA_ADVANCED and tcp_try_undo_loss(sk, False):
        return REXMIT_NONE
    if sk.frto:  # F-RTO RFC 5682 sec 3.1 (SACK-enhanced version)
        # step 3.b: a timeout is spurious if never-retransmitted data is (s)acked
        if flag & FLAG_ORIG_SACK_ACKED and tcp_try_undo_loss(sk, True):
            return REXMIT_NONE
        if after(sk.snd_nxt, sk.high_seq):
            if flag & FLAG_DATA_SACKED or num_dupack:
                sk.frto = False  # step 3.a: the loss was real
        elif flag & FLAG_SND_UNA_ADVANCED and not recovered:
            sk.high_seq = sk.snd_nxt
            # step 2.b: try to send new data (after cwnd is updated), else
            # fall back to conventional recovery
            if sk.write_queue and after(tcp_wnd_end(sk), sk.snd_nxt):
                return REXMIT_NEW
            sk.frto = False
    if recovered:
        # F-RTO RFC 5682 sec 3.1 step 2.a and the first part of step 3.a
        tcp_try_undo_recovery(sk)
        return REXMIT_NONE
    if not tcp_is_sack(sk):
        # a NewReno dupack means new data of F-RTO step 2.b were delivered
        if after(sk.snd_nxt, sk.high_seq) and num_dupack:
            tcp_add_reno_sack(sk, num_dupack)
        elif flag & FLAG_SND_UNA_ADVANCED:
            sk.sacked_out = 0  # tcp_reset_reno_sack()
    return REXMIT_LOST


@kernel("net/ipv4/tcp_input.c", "tcp_enter_loss", "tcp_timeout_mark_lost")
def tcp_enter_loss(sk: TcpSock) -> None:
    """The retransmission timer fired: what is outstanding is presumed lost
    (except, with RACK, what was sent less than RACK.rtt ago), cwnd is 1 more
    than what is in flight, and F-RTO may prove the timeout spurious.

    Kernel: net/ipv4/tcp_input.c, tcp_enter_loss() / tcp_timeout_mark_lost().
    """
    state = sk.icsk_ca_state
    new_recovery = state < TCP_CA_Recovery
    # tcp_timeout_mark_lost(): forget SACKs if the receiver reneged, else keep them
    q = sk.rtx_queue
    head = q[0] if q else None
    is_reneg = head is not None and bool(head.cb.sacked & TCPCB_SACKED_ACKED)
    if is_reneg:
        sk.ext.TCPSACKReneging += 1
        sk.sacked_out = 0
        sk.is_sack_reneg = True  # until this loss event is recovered
    elif not tcp_is_sack(sk):
        sk.sacked_out = 0
    rack = tcp_is_rack(sk)
    for skb in q:
        tcb: TcpSkbCb = skb.cb
        if is_reneg:
            tcb.sacked &= ~TCPCB_SACKED_ACKED
        elif rack and skb is not head and tcp_rack_skb_timeout(sk, tcb, 0) > 0:
            continue  # do not mark recently sent ones lost yet
        tcp_mark_skb_lost(sk, skb)
    sk.retransmit_skb_hint = None  # tcp_clear_all_retrans_hints()
    sk.lost_skb_hint = None
    # reduce ssthresh if it has not yet been made inside this window
    if (
        state <= TCP_CA_Disorder
        or not after(sk.high_seq, sk.snd_una)
        or (state == TCP_CA_Loss and not sk.icsk_retransmits)
    ):
        sk.prior_ssthresh = tcp_current_ssthresh(sk)
        sk.prior_cwnd = sk.snd_cwnd
        sk.snd_ssthresh = sk.icsk_ca_ops.ssthresh(sk)
        sk.icsk_ca_ops.cwnd_event(sk, CA_EVENT_LOSS)
        tcp_init_undo(sk)
    sk.snd_cwnd = tcp_packets_in_flight(sk) + 1
    sk.snd_cwnd_cnt = 0
    sk.snd_cwnd_stamp = sk.net.clock.jiffies
    # a timeout in Disorder after many dupacks: reordering was over-estimated
    reordering = sk.tcp.sysctl_tcp_reordering
    if state <= TCP_CA_Disorder and sk.sacked_out >= reordering:
        sk.reordering = min(sk.reordering, reordering)
    tcp_set_ca_state(sk, TCP_CA_Loss)
    sk.high_seq = sk.snd_nxt
    sk.tlp_high_seq = 0
    # F-RTO RFC 5682 sec 3.1 step 1: retransmit SND.UNA unless a recovery is
    # already under way, except for repeated timeouts of the same SND.UNA
    sk.frto = bool(sk.tcp.sysctl_tcp_frto) and (new_recovery or bool(sk.icsk_retransmits))


@kernel("net/ipv4/tcp_input.c", "tcp_simple_retransmit", "tcp_non_congestion_loss_retransmit")
def tcp_simple_retransmit(sk: TcpSock) -> None:
    """The path MTU dropped: resend what no longer fits, without a cwnd cut.

    Kernel: net/ipv4/tcp_input.c, tcp_simple_retransmit() /
    tcp_non_congestion_loss_retransmit().
    """
    mss = tcp_current_mss(sk)
    for skb in sk.rtx_queue:
        tcb: TcpSkbCb = skb.cb
        # tcp_skb_seglen(): a GSO skb's segments are gso_size long. Its segment
        # count stays until __tcp_retransmit_skb re-cuts it (tcp_adjust_pcount),
        # so that lost_out and packets_out keep counting the same segments.
        seglen = skb.tail - skb.data if tcb.pcount == 1 else tcb.gso_size
        if seglen > mss:
            tcp_mark_skb_lost(sk, skb)
    if not sk.lost_out:
        return
    if not tcp_is_sack(sk):
        tcp_limit_reno_sacked(sk)
    if sk.icsk_ca_state != TCP_CA_Loss:
        sk.high_seq = sk.snd_nxt
        sk.snd_ssthresh = tcp_current_ssthresh(sk)
        sk.prior_ssthresh = 0
        sk.undo_marker = 0
        tcp_set_ca_state(sk, TCP_CA_Loss)
    tcp_xmit_retransmit_queue(sk)


# -- receiving data ---------------------------------------------------------------------------


@kernel("net/ipv4/tcp_input.c", "tcp_incr_quickack")
def tcp_incr_quickack(sk: TcpSock, max_quickacks: int) -> None:
    """Quick-ACK the next rcv_wnd / (2 * rcv_mss) segments, at most *max_quickacks*.

    A window under two segments gives one quick ACK; only a window under one
    gives the floor of two. Kernel: net/ipv4/tcp_input.c, tcp_incr_quickack().
    """
    rcv_mss = max(sk.icsk_ack_rcv_mss, 1)
    quickacks = sk.rcv_wnd // (2 * rcv_mss)
    if quickacks == 0:
        quickacks = 2
    quickacks = min(quickacks, max_quickacks)
    if quickacks > sk.icsk_ack_quick:
        sk.icsk_ack_quick = quickacks


@kernel("net/ipv4/tcp_input.c", "tcp_enter_quickack_mode")
def tcp_enter_quickack_mode(sk: TcpSock, max_quickacks: int) -> None:
    """Kernel: net/ipv4/tcp_input.c, tcp_enter_quickack_mode()."""
    tcp_incr_quickack(sk, max_quickacks)
    sk.icsk_ack_pingpong = 0
    sk.icsk_ack_ato = sk.tcp.TCP_ATO_MIN


@kernel("net/ipv4/tcp_input.c", "tcp_in_quickack_mode")
def tcp_in_quickack_mode(sk: TcpSock) -> bool:
    """Kernel: net/ipv4/tcp_input.c, tcp_in_quickack_mode()."""
    return bool(sk.icsk_ack_quick) and not sk.icsk_ack_pingpong


@kernel("net/ipv4/tcp_input.c", "tcp_measure_rcv_mss")
def tcp_measure_rcv_mss(sk: TcpSock, skb: SkBuff) -> None:
    """The peer's segment size (GRO skbs: gso_size), and the payload share
    of an skb's memory (``scaling_ratio``) that turns buffer into window.

    A segment larger than the current estimate sets ``scaling_ratio`` to
    ``len * 256 / truesize``; when that changes, the window clamp and
    rcv_ssthresh follow the buffer's new worth (tcp_set_window_clamp), and
    DRS's measure (rcvq_space) stays under the clamp.
    Kernel: net/ipv4/tcp_input.c, tcp_measure_rcv_mss().
    """
    lss = sk.icsk_ack_last_seg_size
    sk.icsk_ack_last_seg_size = 0
    skb_len = skb.tail - skb.data
    length = skb.gso_size or skb_len
    if length >= sk.icsk_ack_rcv_mss:
        if length != sk.icsk_ack_rcv_mss:
            old_ratio = sk.scaling_ratio
            sk.scaling_ratio = ((skb_len << TCP_RMEM_TO_WIN_SCALE) // skb.truesize) or 1
            if old_ratio != sk.scaling_ratio:
                tcp_set_window_clamp(sk, tcp_win_from_space(sk, sk.sk_rcvbuf))
                if sk.window_clamp < sk.rcvq_space_space:
                    sk.rcvq_space_space = sk.window_clamp
        advmss = sk.advmss
        sk.icsk_ack_rcv_mss = length if length < advmss else advmss  # min()
        # one full segment with PSH: likely the end of a write; ACK once read
        if skb.cb.tcp_flags & TCPHDR_PSH:
            sk.icsk_ack_pending |= ICSK_ACK_PUSHED
    else:
        # the segment with its header, less the invariant header (SACK jitter aside)
        length += skb.data - skb.transport_header
        if length >= TCP_MSS_DEFAULT + 20 or (
            length >= TCP_MIN_MSS + 20 and not skb.cb.tcp_flags & _TCP_REMNANT
        ):
            length -= sk.tcp_header_len
            sk.icsk_ack_last_seg_size = length
            if length == lss:
                sk.icsk_ack_rcv_mss = length
                return
        if sk.icsk_ack_pending & ICSK_ACK_PUSHED:
            sk.icsk_ack_pending |= ICSK_ACK_PUSHED2
        sk.icsk_ack_pending |= ICSK_ACK_PUSHED


@kernel("net/ipv4/tcp_input.c", "tcp_rcv_rtt_update")
def tcp_rcv_rtt_update(sk: TcpSock, sample: int, win_dep: bool) -> None:
    """The receiver's RTT estimate (<< 3): the minimum, or a slow average
    of timestamp samples. Kernel: net/ipv4/tcp_input.c, tcp_rcv_rtt_update().
    """
    old_sample = sk.rcv_rtt_est_rtt_us
    m = sample << 3
    if not old_sample or m < old_sample:
        new_sample = m
    else:
        if win_dep:
            return
        if sk.rcv_nxt != sk.copied_seq:  # not while the receive queue holds data
            return
        new_sample = old_sample - (old_sample >> 3) + sample
    sk.rcv_rtt_est_rtt_us = new_sample


@kernel("net/ipv4/tcp_input.c", "tcp_rcv_rtt_measure")
def tcp_rcv_rtt_measure(sk: TcpSock) -> None:
    """Without timestamps: the time a window's worth of data takes to arrive.

    The clock is the segment's ``tcp_mstamp`` (``tcp_mstamp_refresh()`` at the
    top of ``tcp_rcv_established`` / ``tcp_rcv_state_process``), not a read of
    its own. Kernel: net/ipv4/tcp_input.c, tcp_rcv_rtt_measure().
    """
    now = sk.tcp_mstamp
    if sk.rcv_rtt_est_time:
        if before(sk.rcv_nxt, sk.rcv_rtt_est_seq):
            return
        tcp_rcv_rtt_update(sk, max(now - sk.rcv_rtt_est_time, 1), True)
    sk.rcv_rtt_est_seq = (sk.rcv_nxt + sk.rcv_wnd) & M32
    sk.rcv_rtt_est_time = now


@kernel("net/ipv4/tcp_input.c", "tcp_rcv_rtt_measure_ts")
def tcp_rcv_rtt_measure_ts(sk: TcpSock, skb: SkBuff) -> None:
    """The receiver's RTT from a new timestamp echo on a full segment.

    Kernel: net/ipv4/tcp_input.c, tcp_rcv_rtt_measure_ts().
    """
    if sk.rcv_tsecr == sk.rcv_rtt_last_tsecr:
        return
    sk.rcv_rtt_last_tsecr = sk.rcv_tsecr
    tcb: TcpSkbCb = skb.cb
    if ((tcb.end_seq - tcb.seq) & M32) >= sk.icsk_ack_rcv_mss:
        delta = (sk.tcp.tcp_time_stamp_ms() + sk.tsoffset - sk.rcv_tsecr) & M32
        if delta < 0x7FFFFFFF // 1000:  # tcp_rtt_tsopt_us(tp, 0)
            if delta:
                tcp_rcv_rtt_update(sk, delta * 1000, False)


@kernel("net/ipv4/tcp_input.c", "tcp_event_data_recv")
def tcp_event_data_recv(sk: TcpSock, skb: SkBuff) -> None:
    """Delayed-ACK bookkeeping for a data segment; the window may grow.

    Kernel: net/ipv4/tcp_input.c, tcp_event_data_recv().
    """
    if TIMED:
        spend("tcp_event_data_recv")
    inet_csk_schedule_ack(sk)
    tcp_measure_rcv_mss(sk, skb)
    tcp_rcv_rtt_measure(sk)
    tcp = sk.tcp
    now = sk.net.clock.jiffies
    if not sk.icsk_ack_ato:
        tcp_incr_quickack(sk, TCP_MAX_QUICKACKS)
        sk.icsk_ack_ato = tcp.TCP_ATO_MIN
    else:
        m = now - sk.icsk_ack_lrcvtime
        if m <= tcp.TCP_ATO_MIN // 2:
            sk.icsk_ack_ato = (sk.icsk_ack_ato >> 1) + tcp.TCP_ATO_MIN // 2
        elif m < sk.icsk_ack_ato:
            sk.icsk_ack_ato = (sk.icsk_ack_ato >> 1) + m
            if sk.icsk_ack_ato > sk.icsk_rto:
                sk.icsk_ack_ato = sk.icsk_rto
        elif m > sk.icsk_rto:
            tcp_incr_quickack(sk, TCP_MAX_QUICKACKS)
    sk.icsk_ack_lrcvtime = now
    if skb.tail - skb.data >= 128:
        tcp_grow_window(sk, skb)


@kernel("tcp_dsack_set")
def tcp_dsack_set(sk: TcpSock, seq: int, end_seq: int) -> None:
    """Report a duplicate segment in the next ACK (RFC 2883). Kernel: tcp_dsack_set()."""
    if tcp_is_sack(sk) and sk.tcp.sysctl_tcp_dsack:
        if before(seq, sk.rcv_nxt):
            sk.ext.TCPDSACKOldSent += 1
        else:
            sk.ext.TCPDSACKOfoSent += 1
        sk.dsack = 1
        sk.duplicate_sack = [seq, end_seq]


@kernel("tcp_sack_extend")
def tcp_sack_extend(block: list[int], seq: int, end_seq: int) -> bool:
    """Grow *block* by ``[seq, end_seq)`` if they touch. Kernel: tcp_sack_extend()."""
    if not after(seq, block[1]) and not after(block[0], end_seq):
        if before(seq, block[0]):
            block[0] = seq
        if after(end_seq, block[1]):
            block[1] = end_seq
        return True
    return False


@kernel("tcp_dsack_extend")
def tcp_dsack_extend(sk: TcpSock, seq: int, end_seq: int) -> None:
    """Another duplicate before the ACK: the D-SACK block grows if it touches,
    else the first range stays reported. Kernel: tcp_dsack_extend().
    """
    if not sk.dsack:
        tcp_dsack_set(sk, seq, end_seq)
    else:
        tcp_sack_extend(sk.duplicate_sack, seq, end_seq)


@kernel("net/ipv4/tcp_input.c", "tcp_sack_new_ofo_skb", "tcp_sack_maybe_coalesce")
def tcp_sack_new_ofo_skb(sk: TcpSock, seq: int, end_seq: int) -> None:
    """Report an out-of-order segment first in our SACK blocks.

    Kernel: net/ipv4/tcp_input.c, tcp_sack_new_ofo_skb() / tcp_sack_maybe_coalesce().
    """
    if not tcp_is_sack(sk):
        return
    blocks = sk.selective_acks
    # the block this segment extends (tcp_sack_extend), or a new one after them all;
    # beyond the second, the held-back ACK goes now, with the blocks as they stand
    this_sack = len(blocks)
    for i, b in enumerate(blocks):
        if not after(b[0], end_seq) and not after(seq, b[1]):
            this_sack = i
            break
    if this_sack >= TCP_SACK_BLOCKS_EXPECTED and sk.compressed_ack:
        if this_sack < len(blocks):
            ext = blocks[this_sack]
            if before(seq, ext[0]):
                ext[0] = seq
            if after(end_seq, ext[1]):
                ext[1] = end_seq
        tcp_sack_compress_send_ack(sk)
    new = [seq, end_seq]
    keep: list[list[int]] = []
    for b in blocks:
        # tcp_sack_extend(): overlapping or adjacent blocks merge
        if not after(b[0], new[1]) and not after(new[0], b[1]):
            if before(b[0], new[0]):
                new[0] = b[0]
            if after(b[1], new[1]):
                new[1] = b[1]
        else:
            keep.append(b)
    sk.selective_acks = [new, *keep][:TCP_NUM_SACKS]
    sk.num_sacks = len(sk.selective_acks)


@kernel("tcp_sack_remove")
def tcp_sack_remove(sk: TcpSock) -> None:
    """Drop SACK blocks rcv_nxt has passed. Kernel: tcp_sack_remove()."""
    if not sk.out_of_order_queue:
        sk.selective_acks = []
    else:
        sk.selective_acks = [b for b in sk.selective_acks if before(sk.rcv_nxt, b[0])]
    sk.num_sacks = len(sk.selective_acks)


@kernel("net/ipv4/tcp_input.c", "tcp_queue_rcv")
def _queue_rcv(sk: TcpSock, skb: SkBuff) -> bool:
    """Append to the receive queue, into its tail skb if it fits; True if merged there.

    A merged *skb* is the caller's to free (``kfree_skb_partial``).
    Kernel: net/ipv4/tcp_input.c, tcp_queue_rcv().
    """
    tcb: TcpSkbCb = skb.cb
    rq = sk.receive_queue
    eaten = bool(rq) and tcp_try_coalesce(sk, rq[-1], skb)
    sk.bytes_received += (tcb.end_seq - sk.rcv_nxt) & M32
    sk.rcv_nxt = tcb.end_seq
    if not eaten:
        skb.sk = None
        rq.append(skb)
        skb_set_owner_r(sk, skb)
    return eaten


def _queue_and_out_nomem(sk: TcpSock, skb: SkBuff) -> bool:
    """``tcp_data_queue``'s ``queue_and_out`` when ``tcp_try_rmem_schedule``
    failed: the next ACK offers a zero window (ICSK_ACK_NOMEM) and the reader is
    woken; with data already queued the segment is dropped (True), an empty
    queue takes it anyway (``sk_forced_mem_schedule``)."""
    sk.icsk_ack_pending |= ICSK_ACK_NOMEM | ICSK_ACK_NOW
    inet_csk_schedule_ack(sk)
    if not sk.dead:
        sk.sk_data_ready()
    if sk.receive_queue and skb.tail > skb.data:
        sk.ext.TCPRcvQDrop += 1
        sk.sk_drops += 1
        kfree_skb(skb, DropReason.PROTO_MEM)
        return True
    sk_forced_mem_schedule(sk, skb.truesize)
    return False


@kernel("net/ipv4/tcp_input.c", "tcp_data_queue")
def tcp_data_queue(sk: TcpSock, skb: SkBuff) -> None:
    """Queue a segment's data in order, out of order, or report it as a duplicate.

    The skb is consumed. Kernel: net/ipv4/tcp_input.c, tcp_data_queue().
    """
    if TIMED:
        spend("tcp_data_queue")
    tcb: TcpSkbCb = skb.cb
    if tcb.seq == tcb.end_seq:
        consume_skb(skb)
        return
    th = skb.transport_header
    skb.data = th + (skb.buf[th + 12] >> 4) * 4  # __skb_pull(skb, th->doff * 4)
    sk.dsack = 0  # a D-SACK is reported for the duplicates of this segment only
    sk.data_segs_in += skb.gso_segs or 1  # max(gso_segs, 1)
    if tcb.seq == sk.rcv_nxt:
        if tcp_receive_window(sk) == 0:
            sk.ext.TCPZeroWindowDrop += 1
            _out_of_window(sk, skb, DropReason.TCP_ZEROWINDOW)
            return
        elif not tcp_try_rmem_schedule(sk, skb) and _queue_and_out_nomem(sk, skb):
            return
        fin = tcb.tcp_flags & TCPHDR_FIN
        eaten = _queue_rcv(sk, skb)
        if skb.tail > skb.data:
            tcp_event_data_recv(sk, skb)
        if fin:
            tcp_fin(sk)
        if sk.out_of_order_queue:
            tcp_ofo_queue(sk)
            if not sk.out_of_order_queue:
                sk.icsk_ack_pending |= ICSK_ACK_NOW  # RFC 5681 4.2: the gap is filled
        if sk.num_sacks:
            tcp_sack_remove(sk)
        tcp_fast_path_check(sk)
        if eaten:
            consume_skb(skb)  # kfree_skb_partial()
        if not sk.dead:
            tcp_data_ready(sk)
        return
    if not after(tcb.end_seq, sk.rcv_nxt):
        # a retransmission of what we already have
        sk.ext.DelayedACKLost += 1
        tcp_dsack_set(sk, tcb.seq, tcb.end_seq)
        _out_of_window(sk, skb, DropReason.TCP_OLD_DATA)
        return
    if not before(tcb.seq, (sk.rcv_nxt + tcp_receive_window(sk)) & M32):
        _out_of_window(sk, skb, DropReason.TCP_OVERWINDOW)  # f.e. a zero window probe
        return
    if before(tcb.seq, sk.rcv_nxt):
        # partial overlap: report the old part, queue the rest
        tcp_dsack_set(sk, tcb.seq, sk.rcv_nxt)
        if not tcp_receive_window(sk):
            sk.ext.TCPZeroWindowDrop += 1
            _out_of_window(sk, skb, DropReason.TCP_ZEROWINDOW)
            return
        if not tcp_try_rmem_schedule(sk, skb) and _queue_and_out_nomem(sk, skb):
            return  # the kernel's goto queue_and_out: the same refusal
        fin = tcb.tcp_flags & TCPHDR_FIN
        eaten = _queue_rcv(sk, skb)
        tcp_event_data_recv(sk, skb)
        if fin:
            tcp_fin(sk)
        if sk.out_of_order_queue:
            tcp_ofo_queue(sk)
        if sk.num_sacks:
            tcp_sack_remove(sk)
        tcp_fast_path_check(sk)
        if eaten:
            consume_skb(skb)
        if not sk.dead:
            tcp_data_ready(sk)
        return
    tcp_data_queue_ofo(sk, skb)


@kernel("net/ipv4/tcp_input.c", "tcp_data_ready")
def tcp_data_ready(sk: TcpSock) -> None:
    """In-order data was queued: wake the reader.

    Each such wake-up is counted (``napi.data_ready_count``): a NAPI
    instance taking packets one at a time (``rx_per_xmit``, a veth without
    GRO) ends its poll there, so that the reader reads before the next
    packet, as a reader on another CPU keeps up on a real machine. TCP's ACKs
    depend on when the reader reads (``tcp_cleanup_rbuf``'s window updates,
    ``__tcp_ack_snd_check``'s window test); a UDP reader's timing changes only
    its recvmmsg batches, so UDP keeps the poll's batches. Counting only the
    wake-ups of a parked reader would not do: a reader whose ``recv`` just
    returned data is runnable, not parked (Trio's checkpoint), when the next
    packet comes, and the poll would run on. See docs/timed.md.
    Kernel: net/ipv4/tcp_input.c, tcp_data_ready() (SO_RCVLOWAT is always 1
    here, so any data is enough).
    """
    _napi.data_ready_count += 1
    sk.sk_data_ready()


def _out_of_window(sk: TcpSock, skb: SkBuff, reason: DropReason) -> None:
    """The out_of_window label of tcp_data_queue(): ACK at once, drop for *reason*."""
    tcp_enter_quickack_mode(sk, TCP_MAX_QUICKACKS)
    inet_csk_schedule_ack(sk)
    kfree_skb(skb, reason)


@kernel("net/ipv4/tcp_input.c", "tcp_data_queue_ofo")
def tcp_data_queue_ofo(sk: TcpSock, skb: SkBuff) -> None:
    """Keep a segment that arrived ahead of a hole; SACK it.

    Kernel: net/ipv4/tcp_input.c, tcp_data_queue_ofo() (a sorted list for the
    rbtree: the skb before the insertion point is the one the walk could coalesce).
    """
    if TIMED:
        spend("tcp_data_queue_ofo")
    tcb: TcpSkbCb = skb.cb
    if not tcp_try_rmem_schedule(sk, skb):
        sk.ext.TCPOFODrop += 1
        if not sk.dead:
            sk.sk_data_ready()
        sk.sk_drops += 1
        kfree_skb(skb, DropReason.PROTO_MEM)
        return
    sk.pred_flags = 0  # no header prediction while a hole is open
    tcp_measure_rcv_mss(sk, skb)  # 6.16+: ofo segments tune rcv_mss and scaling_ratio too
    sk.rcv_ooopack += max(skb.gso_segs, 1)
    sk.ext.TCPOFOQueue += 1
    inet_csk_schedule_ack(sk)  # now or compressed: __tcp_ack_snd_check()
    q = sk.out_of_order_queue
    seq = tcb.seq
    end_seq = tcb.end_seq
    base = sk.rcv_nxt
    rel = (seq - base) & M32
    i = len(q)
    while i > 0 and ((q[i - 1].cb.seq - base) & M32) > rel:
        i -= 1
    # an earlier skb already covers this one: a duplicate; overlaps it: D-SACK the overlap
    if i > 0:
        prev: TcpSkbCb = q[i - 1].cb
        if not after(end_seq, prev.end_seq) and not before(seq, prev.seq):
            sk.ext.TCPOFOMerge += 1
            tcp_dsack_set(sk, seq, end_seq)
            sk.sk_drops += max(skb.gso_segs, 1)  # tcp_drop_reason(): sk_drops_add()
            kfree_skb(skb, DropReason.TCP_OFOMERGE)
            return
        if after(prev.end_seq, seq):
            tcp_dsack_set(sk, seq, prev.end_seq)
    # it continues the skb before it (the last one, or the one the tree walk meets):
    # copied into it (tcp_ooo_try_coalesce), coalesce_done, and no merge to the right
    if i > 0 and tcp_try_coalesce(sk, q[i - 1], skb):
        prev_skb = q[i - 1]
        prev_skb.gso_segs = min(max(prev_skb.gso_segs, 1) + max(skb.gso_segs, 1), 0xFFFF)
        if tcp_is_sack(sk):
            tcp_grow_window(sk, skb)  # the window may grow for what waits out of order
        tcp_sack_new_ofo_skb(sk, seq, end_seq)
        consume_skb(skb)
        tcp_rcvbuf_grow(sk)
        return
    # later skbs this one covers are dropped (the first duplicate range stays reported)
    while i < len(q):
        nxt: TcpSkbCb = q[i].cb
        if not after(end_seq, nxt.seq):
            break
        if before(end_seq, nxt.end_seq):
            tcp_dsack_extend(sk, nxt.seq, end_seq)
            break
        victim = q.pop(i)
        tcp_rmem_free(sk, victim)
        tcp_dsack_extend(sk, nxt.seq, nxt.end_seq)
        sk.ext.TCPOFOMerge += 1
        sk.sk_drops += max(victim.gso_segs, 1)
        kfree_skb(victim, DropReason.TCP_OFOMERGE)
    skb.sk = None
    q.insert(i, skb)
    tcp_sack_new_ofo_skb(sk, seq, end_seq)
    if tcp_is_sack(sk):
        tcp_grow_window(sk, skb)
    skb_set_owner_r(sk, skb)
    tcp_rcvbuf_grow(sk)  # 6.16+: room for what waits out of order


@kernel("tcp_ofo_queue")
def tcp_ofo_queue(sk: TcpSock) -> None:
    """Move what the new rcv_nxt reaches from the out-of-order queue. Kernel: tcp_ofo_queue()."""
    q = sk.out_of_order_queue
    dsack_high = sk.rcv_nxt
    while q:
        skb = q[0]
        tcb: TcpSkbCb = skb.cb
        if after(tcb.seq, sk.rcv_nxt):
            break
        if before(tcb.seq, dsack_high):
            dsack = dsack_high
            if before(tcb.end_seq, dsack_high):
                dsack_high = tcb.end_seq
            tcp_dsack_extend(sk, tcb.seq, dsack)
        q.pop(0)
        if not after(tcb.end_seq, sk.rcv_nxt):
            tcp_rmem_free(sk, skb)
            kfree_skb(skb, DropReason.TCP_OFO_DROP)
            continue
        fin = tcb.tcp_flags & TCPHDR_FIN
        rq = sk.receive_queue
        sk.bytes_received += (tcb.end_seq - sk.rcv_nxt) & M32
        sk.rcv_nxt = tcb.end_seq
        if rq and tcp_try_coalesce(sk, rq[-1], skb):
            tcp_rmem_free(sk, skb)  # kfree_skb_partial(): its charge goes back
            consume_skb(skb)
        else:
            rq.append(skb)  # still charged from the out-of-order queue
        if fin:
            tcp_fin(sk)
            break


@kernel("net/ipv4/tcp_input.c", "tcp_fin")
def tcp_fin(sk: TcpSock) -> None:
    """The peer finished sending. Kernel: net/ipv4/tcp_input.c, tcp_fin()."""
    inet_csk_schedule_ack(sk)
    sk.sk_shutdown |= RCV_SHUTDOWN
    sk.sock_flag_done = True
    state = sk.state
    if state in (TCP_SYN_RECV, TCP_ESTABLISHED):
        tcp_set_state(sk, TCP_CLOSE_WAIT)
        sk.icsk_ack_pingpong = 1
    elif state == TCP_FIN_WAIT1:
        tcp_send_ack(sk)
        tcp_set_state(sk, TCP_CLOSING)
    elif state == TCP_FIN_WAIT2:
        tcp_send_ack(sk)
        tcp_time_wait(sk, TCP_TIME_WAIT, 0)
    for s in sk.out_of_order_queue:
        tcp_rmem_free(sk, s)
        consume_skb(s)
    sk.out_of_order_queue.clear()
    sk.selective_acks = []
    sk.num_sacks = 0
    if not sk.dead:
        sk_state_change(sk)


@kernel("net/ipv4/tcp_input.c", "__tcp_ack_snd_check")
def __tcp_ack_snd_check(sk: TcpSock, ofo_possible: bool) -> None:
    """ACK now, later (delayed ACK), or, with out-of-order data, compressed.

    Now: more than one segment since the last ACK and the window does not
    shrink (or fewer than SO_RCVLOWAT bytes wait unread), quick-ACK mode, or
    ICSK_ACK_NOW. With a hole (SACK on), the first TCP_FASTRETRANS_THRESH
    duplicate ACKs for one rcv_nxt go now, later ones are held (at most
    tcp_comp_sack_nr) for min(tcp_comp_sack_delay_ns, RTT / 20) on the
    compressed-ACK hrtimer, which fires at the end of its
    tcp_comp_sack_slack_ns range (hrtimer_start_range_ns on an idle CPU).
    Kernel: net/ipv4/tcp_input.c, __tcp_ack_snd_check().
    """
    if TIMED:
        spend("__tcp_ack_snd_check")
    if (
        (
            ((sk.rcv_nxt - sk.rcv_wup) & M32) > sk.icsk_ack_rcv_mss
            and (
                ((sk.rcv_nxt - sk.copied_seq) & M32) < sk.sk_rcvlowat
                or __tcp_select_window(sk) >= sk.rcv_wnd
            )
        )
        or tcp_in_quickack_mode(sk)
        or sk.icsk_ack_pending & ICSK_ACK_NOW
    ):
        tcp_send_ack(sk)
        return
    if not ofo_possible or not sk.out_of_order_queue:
        tcp_send_delayed_ack(sk)
        return
    tcp = sk.tcp
    if not tcp_is_sack(sk) or sk.compressed_ack >= tcp.sysctl_tcp_comp_sack_nr:
        tcp_send_ack(sk)
        return
    if sk.compressed_ack_rcv_nxt != sk.rcv_nxt:
        sk.compressed_ack_rcv_nxt = sk.rcv_nxt
        sk.dup_ack_counter = 0
    if sk.dup_ack_counter < TCP_FASTRETRANS_THRESH:
        sk.dup_ack_counter += 1
        tcp_send_ack(sk)
        return
    sk.compressed_ack += 1
    timer = sk.compressed_ack_timer
    if timer is None:
        timer = sk.compressed_ack_timer = sk.net.hrtimers.timer(
            lambda: tcp_compressed_ack_kick(sk), "tcp_compressed_ack"
        )
    if timer.is_queued():
        return
    # 5 % of the RTT (both << 3), at most tcp_comp_sack_delay_ns
    rtt = sk.rcv_rtt_est_rtt_us
    if sk.srtt_us and sk.srtt_us < rtt:
        rtt = sk.srtt_us
    delay = min(tcp.sysctl_tcp_comp_sack_delay_ns, rtt * (1000 >> 3) // 20)
    timer.start(ktime_get_ns(sk.net) + delay + tcp.sysctl_tcp_comp_sack_slack_ns)


@kernel("net/ipv4/tcp_timer.c", "tcp_compressed_ack_kick")
def tcp_compressed_ack_kick(sk: TcpSock) -> None:
    """The compressed-ACK hrtimer: send the ACK held back (the one sent is not
    counted in TCPAckCompressed). Kernel: net/ipv4/tcp_timer.c,
    tcp_compressed_ack_kick().
    """
    if sk.compressed_ack:
        sk.compressed_ack -= 1
        tcp_send_ack(sk)


@kernel("net/ipv4/tcp_input.c", "tcp_sack_compress_send_ack")
def tcp_sack_compress_send_ack(sk: TcpSock) -> None:
    """Send the held-back ACK now (a SACK block is about to be lost, or the
    delayed-ACK timer fired). Kernel: net/ipv4/tcp_input.c, tcp_sack_compress_send_ack().
    """
    if not sk.compressed_ack:
        return
    timer = sk.compressed_ack_timer
    if timer is not None:
        timer.cancel()
    sk.ext.TCPAckCompressed += sk.compressed_ack - 1
    sk.compressed_ack = 0
    tcp_send_ack(sk)


@kernel("net/ipv4/tcp_input.c", "tcp_ack_snd_check")
def tcp_ack_snd_check(sk: TcpSock) -> None:
    """Kernel: net/ipv4/tcp_input.c, tcp_ack_snd_check()."""
    if not sk.icsk_ack_pending & 1:  # inet_csk_ack_scheduled()
        return
    __tcp_ack_snd_check(sk, True)


@kernel("net/ipv4/tcp_input.c", "tcp_data_snd_check")
def tcp_data_snd_check(sk: TcpSock) -> None:
    """Kernel: net/ipv4/tcp_input.c, tcp_data_snd_check()."""
    tcp_push_pending_frames(sk)
    tcp_check_space(sk)


# -- RST, validation ----------------------------------------------------------------------------


@kernel("net/ipv4/tcp_input.c", "tcp_reset")
def tcp_reset(sk: TcpSock) -> None:
    """The peer reset the connection: report the errno the state calls for.

    Kernel: net/ipv4/tcp_input.c, tcp_reset().
    """
    state = sk.state
    if state == TCP_SYN_SENT:
        err = ECONNREFUSED
    elif state == TCP_CLOSE_WAIT:
        err = EPIPE
    elif state == TCP_CLOSE:
        return
    else:
        err = ECONNRESET
    sk.sk_err = err
    tcp_write_queue_purge(sk)
    tcp_done(sk)
    if not sk.dead:
        sk.sk_error_report()


@kernel("net/ipv4/tcp_input.c", "tcp_sequence")
def tcp_sequence(sk: TcpSock, seq: int, end_seq: int) -> DropReason | None:
    """Why the segment is outside the receive window, or None if it is not.

    A segment that starts inside but ends beyond the window is taken only
    while the receive queue is empty (6.17). Kernel: net/ipv4/tcp_input.c,
    tcp_sequence().
    """
    if before(end_seq, sk.rcv_wup):
        return DropReason.TCP_OLD_SEQUENCE
    right = (sk.rcv_nxt + tcp_receive_window(sk)) & M32
    if after(end_seq, right):
        if after(seq, right):
            return DropReason.TCP_INVALID_SEQUENCE
        if sk.receive_queue:
            return DropReason.TCP_INVALID_END_SEQUENCE
    return None


@kernel("net/ipv4/tcp_input.c", "tcp_send_dupack")
def tcp_send_dupack(sk: TcpSock, skb: SkBuff) -> None:
    """Kernel: net/ipv4/tcp_input.c, tcp_send_dupack()."""
    tcb: TcpSkbCb = skb.cb
    if tcb.end_seq != tcb.seq and before(tcb.seq, sk.rcv_nxt):
        sk.ext.DelayedACKLost += 1
        tcp_enter_quickack_mode(sk, TCP_MAX_QUICKACKS)
        end = tcb.end_seq
        if after(end, sk.rcv_nxt):
            end = sk.rcv_nxt
        tcp_dsack_set(sk, tcb.seq, end)
    tcp_send_ack(sk)


@kernel("net/ipv4/tcp_input.c", "tcp_validate_incoming")
def tcp_validate_incoming(sk: TcpSock, skb: SkBuff) -> bool:
    """PAWS, the window, RST and SYN checks (RFC 5961). False: the skb was consumed.

    Kernel: net/ipv4/tcp_input.c, tcp_validate_incoming().
    """
    tcb: TcpSkbCb = skb.cb
    flags = tcb.tcp_flags
    if sk.saw_tstamp and sk.ts_recent and tcp_paws_discard(sk, skb):
        if not flags & TCPHDR_RST:
            sk.ext.PAWSEstab += 1
            if not tcp_oow_rate_limited(sk, "TCPACKSkippedPAWS"):
                tcp_send_dupack(sk, skb)
            kfree_skb(skb, DropReason.TCP_RFC7323_PAWS)
            return False
    reason = tcp_sequence(sk, tcb.seq, tcb.end_seq)
    if reason is not None:
        if not flags & TCPHDR_RST:
            if flags & TCPHDR_SYN:
                return _syn_challenge(sk, skb)
            if reason in (
                DropReason.TCP_INVALID_SEQUENCE,
                DropReason.TCP_INVALID_END_SEQUENCE,
            ):
                sk.ext.BeyondWindow += 1
            if not tcp_oow_rate_limited(sk, "TCPACKSkippedSeq"):
                tcp_send_dupack(sk, skb)
        kfree_skb(skb, reason)
        return False
    if flags & TCPHDR_RST:
        if tcb.seq == sk.rcv_nxt or (
            tcb.seq == ((sk.rcv_nxt - 1) & M32) and sk.state == TCP_CLOSE_WAIT
        ):
            tcp_reset(sk)
            consume_skb(skb)  # the reset label: __kfree_skb()
        else:
            tcp_send_challenge_ack(sk)
            kfree_skb(skb, DropReason.TCP_RESET)
        return False
    if flags & TCPHDR_SYN:
        return _syn_challenge(sk, skb)
    return True


def _syn_challenge(sk: TcpSock, skb: SkBuff) -> bool:
    sk.ext.TCPSYNChallenge += 1
    tcp_send_challenge_ack(sk)
    kfree_skb(skb, DropReason.TCP_INVALID_SYN)
    return False


@kernel("net/ipv4/tcp_input.c", "tcp_paws_discard")
def tcp_paws_discard(sk: TcpSock, skb: SkBuff) -> bool:
    """Kernel: net/ipv4/tcp_input.c, tcp_paws_discard() (no disordered-ACK exception)."""
    return tcp_paws_reject(sk, False)


# -- the state machine -----------------------------------------------------------------------------


@kernel(
    "net/ipv4/tcp_input.c",
    "tcp_rcv_established",
    "tcp_store_ts_recent",
    "tcp_update_wl",
    "net/ipv4/tcp_output.c",
    "tcp_mstamp_refresh",
    "include/net/inet_connection_sock.h",
    "inet_csk_ack_scheduled",
)
def tcp_rcv_established(sk: TcpSock, skb: SkBuff) -> None:
    """A segment for an established connection.

    Header prediction (``tcp_fast_path_data``) sends a predicted pure ACK
    through ``tcp_ack(sk, skb, 0)`` and queues predicted data whose truesize
    fits ``sk_forward_alloc`` at once (``tcp_queue_rcv``), acknowledging
    through ``tcp_ack(sk, skb, FLAG_DATA)`` only when the segment acknowledges
    something new (else ``tcp_update_wl``), as Linux; other data goes the slow
    way (from step 5 when only the memory was missing).
    Kernel: net/ipv4/tcp_input.c, tcp_rcv_established() / tcp_store_ts_recent() /
    tcp_update_wl(); net/ipv4/tcp_output.c, tcp_mstamp_refresh();
    include/net/inet_connection_sock.h, inet_csk_ack_scheduled().
    """
    if TIMED:
        spend("tcp_rcv_established")
    sk.tcp_mstamp = sk.tcp.tcp_clock_us()  # tcp_mstamp_refresh()
    tcb: TcpSkbCb = skb.cb
    hp = tcp_fast_path_data(sk, skb)  # header prediction, before anything changes
    if hp == HP_MISS:  # the slow path's tcp_fast_parse_options(), in full
        tcp_parse_options(skb.buf, skb.transport_header, sk, True, tcb)
    sk.segs_in += skb.gso_segs or 1  # max(gso_segs, 1)
    if hp == HP_PURE_ACK:  # bulk data transfer: the sender
        if sk.tcp_header_len == 32 and sk.rcv_nxt == sk.rcv_wup:
            sk.ts_recent = sk.rcv_tsval  # tcp_store_ts_recent()
            sk.ts_recent_stamp = sk.tcp.seconds()
        tcp_ack(sk, skb, 0)
        consume_skb(skb)  # __kfree_skb(): no tcp_data_queue() for a pure ACK
        tcp_data_snd_check(sk)
        sk.rcv_rtt_last_tsecr = sk.rcv_tsecr  # not tcp_rcv_rtt_measure_ts()
        return
    if hp == HP_DATA:  # bulk data transfer: the receiver
        if sk.tcp_header_len == 32 and sk.rcv_nxt == sk.rcv_wup:
            sk.ts_recent = sk.rcv_tsval  # tcp_store_ts_recent()
            sk.ts_recent_stamp = sk.tcp.seconds()
        tcp_rcv_rtt_measure_ts(sk, skb)
        sk.ext.TCPHPHits += 1
        skb.data = skb.transport_header + sk.tcp_header_len  # __skb_pull()
        sk.data_segs_in += skb.gso_segs or 1  # tcp_segs_in()
        eaten = _queue_rcv(sk, skb)
        tcp_event_data_recv(sk, skb)
        if tcb.ack_seq != sk.snd_una:  # only one small jumplet in the fast path
            tcp_ack(sk, skb, FLAG_DATA)
            tcp_data_snd_check(sk)
            if sk.icsk_ack_pending & 1:  # inet_csk_ack_scheduled()
                __tcp_ack_snd_check(sk, False)
        else:
            sk.snd_wl1 = tcb.seq  # tcp_update_wl()
            __tcp_ack_snd_check(sk, False)
        if eaten:
            consume_skb(skb)  # kfree_skb_partial()
        if not sk.dead:
            tcp_data_ready(sk)
        return
    if hp == HP_MISS and not tcp_validate_incoming(sk, skb):
        return
    flags = tcb.tcp_flags
    if flags & TCPHDR_ACK:
        if tcp_ack(sk, skb, FLAG_SLOWPATH | FLAG_UPDATE_TS_RECENT) < 0:
            # tcp_ack()'s reason: beyond what we sent, or older than a window
            if after(tcb.ack_seq, sk.snd_nxt):
                kfree_skb(skb, DropReason.TCP_ACK_UNSENT_DATA)
            else:
                kfree_skb(skb, DropReason.TCP_TOO_OLD_ACK)
            return
    elif not flags & (TCPHDR_RST | TCPHDR_SYN):
        kfree_skb(skb, DropReason.TCP_FLAGS)
        return
    tcp_rcv_rtt_measure_ts(sk, skb)
    tcp_data_queue(sk, skb)
    if sk.state != TCP_CLOSE:
        tcp_data_snd_check(sk)
        tcp_ack_snd_check(sk)


@kernel("net/ipv4/tcp_input.c", "tcp_init_transfer")
def tcp_init_transfer(sk: TcpSock) -> None:
    """Kernel: net/ipv4/tcp_input.c, tcp_init_transfer()."""
    tcp_mtup_init(sk)
    tcp_init_buffer_space(sk)
    if sk.total_retrans > 1:
        sk.snd_cwnd = 1
    else:
        sk.snd_cwnd = tcp_init_cwnd(sk)
    sk.snd_cwnd_stamp = sk.net.clock.jiffies
    tcp_init_congestion_control(sk)


@kernel("net/ipv4/tcp_input.c", "tcp_finish_connect")
def tcp_finish_connect(sk: TcpSock) -> None:
    """Kernel: net/ipv4/tcp_input.c, tcp_finish_connect()."""
    tcp_set_state(sk, TCP_ESTABLISHED)
    sk.icsk_ack_lrcvtime = sk.net.clock.jiffies
    sk.ever_connected = True
    tcp_init_transfer(sk)
    sk.lsndtime = sk.net.clock.jiffies
    if sk.sock_flag_keepopen:
        inet_csk_reset_keepalive_timer(sk, keepalive_time_when(sk))
    if not sk.snd_wscale:
        tcp_fast_path_on(sk)  # __tcp_fast_path_on(tp, tp->snd_wnd)
    else:
        sk.pred_flags = 0
    if not sk.dead:
        sk_state_change(sk)


@kernel("net/ipv4/tcp_input.c", "tcp_rcv_synsent_state_process")
def tcp_rcv_synsent_state_process(sk: TcpSock, skb: SkBuff) -> int:
    """Our SYN is out: a SYN-ACK completes the connection, a SYN is a simultaneous open.

    Returns 1 to have the caller send a RST, 0 when done (skb consumed).

    Kernel: net/ipv4/tcp_input.c, tcp_rcv_synsent_state_process().
    """
    tcb: TcpSkbCb = skb.cb
    flags = tcb.tcp_flags
    th = skb.transport_header
    buf = skb.buf
    rx = TcpOptionsReceived()
    rx.user_mss = sk.user_mss
    foc = _fastopen.TcpFastopenCookie()
    tcp_parse_options(buf, th, rx, False, None, foc)
    sk.saw_tstamp = rx.saw_tstamp
    sk.rcv_tsval = rx.rcv_tsval
    sk.rcv_tsecr = rx.rcv_tsecr
    window = (buf[th + 14] << 8) | buf[th + 15]
    if flags & TCPHDR_ACK:
        if not after(tcb.ack_seq, sk.snd_una) or after(tcb.ack_seq, sk.snd_nxt):
            return 1  # reset_and_undo
        if (
            rx.saw_tstamp
            and rx.rcv_tsecr
            and not between(
                (rx.rcv_tsecr - sk.tsoffset) & M32,
                sk.retrans_stamp,
                sk.tcp.tcp_time_stamp_ms(),
            )
        ):
            sk.ext.PAWSActive += 1
            return 1
        if flags & TCPHDR_RST:
            tcp_reset(sk)
            consume_skb(skb)  # consume: __kfree_skb()
            return 0
        if not flags & TCPHDR_SYN:
            kfree_skb(skb, DropReason.TCP_FLAGS)  # discard_and_undo
            return 0
        # the SYN-ACK
        sk.snd_wl1 = tcb.seq
        sk.rcv_nxt = (tcb.seq + 1) & M32
        sk.rcv_wup = sk.rcv_nxt
        tcp_ack(sk, skb, FLAG_SLOWPATH)
        sk.snd_wnd = window
        if not rx.wscale_ok:
            sk.snd_wscale = sk.rcv_wscale = 0
            sk.window_clamp = min(sk.window_clamp, 65535)
        else:
            sk.wscale_ok = True
            sk.snd_wscale = rx.snd_wscale
        if rx.saw_tstamp:
            sk.tstamp_ok = True
            sk.tcp_header_len = 32
            sk.advmss -= TCPOLEN_TSTAMP_ALIGNED
            sk.ts_recent = rx.rcv_tsval
            sk.ts_recent_stamp = sk.tcp.seconds()
        else:
            sk.tstamp_ok = False
            sk.tcp_header_len = 20
        sk.sack_ok = rx.sack_ok if sk.tcp.sysctl_tcp_sack else 0
        sk.mss_clamp = rx.mss_clamp or TCP_MSS_DEFAULT
        tcp_sync_mss(sk, sk.icsk_pmtu_cookie)
        tcp_initialize_rcv_mss(sk)
        sk.copied_seq = sk.rcv_nxt
        sk.max_window = max(sk.max_window, sk.snd_wnd)
        tcp_finish_connect(sk)
        fastopen_fail = (sk.syn_fastopen or sk.syn_data) and tcp_rcv_fastopen_synack(sk, skb, foc)
        if fastopen_fail:  # the SYN's data goes again, and carries the ACK
            consume_skb(skb)
            return 0
        if _fastopen.tcp_fastopen_write_pending(sk):
            # "Save one ACK": the blocked writer's data will carry it
            inet_csk_schedule_ack(sk)
            tcp_enter_quickack_mode(sk, TCP_MAX_QUICKACKS)
            inet_csk_reset_xmit_timer(sk, ICSK_TIME_DACK, sk.tcp.TCP_DELACK_MAX, sk.tcp.TCP_RTO_MAX)
            consume_skb(skb)
            return 0
        tcp_send_ack(sk)
        consume_skb(skb)
        tcp_data_snd_check(sk)
        return 0
    if flags & TCPHDR_RST:
        kfree_skb(skb, DropReason.TCP_RESET)  # discard_and_undo: no ACK, a RST
        return 0
    if flags & TCPHDR_SYN:
        # simultaneous open (RFC 9293 §3.10.7.3)
        tcp_set_state(sk, TCP_SYN_RECV)
        if rx.saw_tstamp:
            sk.tstamp_ok = True
            sk.ts_recent = rx.rcv_tsval
            sk.ts_recent_stamp = sk.tcp.seconds()
            sk.tcp_header_len = 32
        else:
            sk.tcp_header_len = 20
        sk.rcv_nxt = (tcb.seq + 1) & M32
        sk.copied_seq = sk.rcv_nxt
        sk.rcv_wup = sk.rcv_nxt
        sk.snd_wnd = window
        sk.snd_wl1 = tcb.seq
        sk.max_window = sk.snd_wnd
        if rx.wscale_ok:
            sk.wscale_ok = True
            sk.snd_wscale = rx.snd_wscale
        else:
            sk.snd_wscale = sk.rcv_wscale = 0
            sk.window_clamp = min(sk.window_clamp, 65535)
        sk.sack_ok = rx.sack_ok if sk.tcp.sysctl_tcp_sack else 0
        sk.mss_clamp = rx.mss_clamp or TCP_MSS_DEFAULT
        tcp_sync_mss(sk, sk.icsk_pmtu_cookie)
        tcp_initialize_rcv_mss(sk)
        tcp_send_synack(sk)
        consume_skb(skb)
        return 0
    kfree_skb(skb, DropReason.TCP_FLAGS)  # neither SYN nor RST: discard_and_undo
    return 0


@kernel(
    "net/ipv4/tcp_input.c", "tcp_rcv_state_process", "net/ipv4/tcp_output.c", "tcp_mstamp_refresh"
)
def tcp_rcv_state_process(sk: TcpSock, skb: SkBuff) -> int:
    """Every state but ESTABLISHED (and TIME_WAIT, handled by its minisock).

    Returns 0 when the skb was consumed, else the reason the caller answers
    with a RST and then drops the skb for (a ``DropReason``; 1, the
    kernel's SKB_CONSUMED, from SYN_SENT: the skb is consumed after the RST).

    Kernel: net/ipv4/tcp_input.c, tcp_rcv_state_process(); net/ipv4/tcp_output.c,
    tcp_mstamp_refresh().
    """
    if TIMED:
        spend("tcp_rcv_state_process")
    tcb: TcpSkbCb = skb.cb
    flags = tcb.tcp_flags
    state = sk.state
    if state == TCP_CLOSE:
        return DropReason.TCP_CLOSE
    if state == TCP_LISTEN:
        if flags & TCPHDR_ACK:
            return DropReason.TCP_FLAGS
        if flags & TCPHDR_RST:
            kfree_skb(skb, DropReason.TCP_RESET)
            return 0
        if flags & TCPHDR_SYN:
            if flags & TCPHDR_FIN:
                kfree_skb(skb, DropReason.TCP_FLAGS)
                return 0
            sk.af_ops.conn_request(sk, skb)
            return 0
        kfree_skb(skb, DropReason.TCP_FLAGS)
        return 0
    if state == TCP_SYN_SENT:
        sk.tcp_mstamp = sk.tcp.tcp_clock_us()  # tcp_mstamp_refresh()
        return tcp_rcv_synsent_state_process(sk, skb)
    sk.tcp_mstamp = sk.tcp.tcp_clock_us()  # tcp_mstamp_refresh()
    req = sk.fastopen_rsk
    if req is not None:
        if not tcp_check_req_fastopen(sk, skb, req):
            kfree_skb(skb, DropReason.TCP_FASTOPEN)
            return 0
    tcp_parse_options(skb.buf, skb.transport_header, sk, True, tcb)
    sk.segs_in += 1
    if not tcp_validate_incoming(sk, skb):
        return 0
    if not flags & (TCPHDR_ACK | TCPHDR_RST | TCPHDR_SYN):
        kfree_skb(skb, DropReason.TCP_FLAGS)
        return 0
    if not flags & TCPHDR_ACK:
        kfree_skb(skb, DropReason.TCP_FLAGS)
        return 0
    ret = tcp_ack(sk, skb, FLAG_SLOWPATH | FLAG_UPDATE_TS_RECENT | FLAG_NO_CHALLENGE_ACK)
    if ret <= 0:
        if state == TCP_SYN_RECV:
            return DropReason.TCP_OLD_ACK  # "send one RST"
    if ret < 0:  # an old ACK (0) is accepted during closing; an invalid one is not
        tcp_send_challenge_ack(sk)
        if after(tcb.ack_seq, sk.snd_nxt):
            kfree_skb(skb, DropReason.TCP_ACK_UNSENT_DATA)
        else:
            kfree_skb(skb, DropReason.TCP_TOO_OLD_ACK)
        return 0
    th = skb.transport_header
    buf = skb.buf
    if state == TCP_SYN_RECV:
        sk.delivered += 1  # the SYN-ACK's delivery is not tracked in tcp_ack()
        if req is not None:
            if not sk.srtt_us:
                tcp_synack_rtt_meas(sk, req)
            tcp_rcv_synrecv_state_fastopen(sk)
        tcp_set_state(sk, TCP_ESTABLISHED)
        sk.ever_connected = True
        sk.snd_una = tcb.ack_seq
        sk.snd_wnd = ((buf[th + 14] << 8) | buf[th + 15]) << sk.snd_wscale
        sk.snd_wl1 = tcb.seq
        sk.max_window = max(sk.max_window, sk.snd_wnd)
        if sk.tstamp_ok:
            # the advertised MSS leaves room for the option (before
            # tcp_init_buffer_space, which sizes rcv_space/window_clamp by it)
            sk.advmss -= TCPOLEN_TSTAMP_ALIGNED
        if sk.parent is None and not sk.icsk_ca_initialized:
            tcp_init_transfer(sk)  # simultaneous open
        elif not sk.icsk_ca_initialized:
            tcp_init_transfer(sk)
        sk.lsndtime = sk.net.clock.jiffies
        tcp_initialize_rcv_mss(sk)
        tcp_fast_path_on(sk)
        if sk.sock_flag_keepopen:
            inet_csk_reset_keepalive_timer(sk, keepalive_time_when(sk))
        if not sk.dead:
            sk_state_change(sk)
    elif state == TCP_FIN_WAIT1:
        if req is not None:
            tcp_rcv_synrecv_state_fastopen(sk)
        if sk.snd_una == sk.write_seq:
            tcp_set_state(sk, TCP_FIN_WAIT2)
            sk.sk_shutdown |= SEND_SHUTDOWN
            if not sk.dead:
                sk_state_change(sk)
            else:
                if sk.linger2 < 0:
                    tcp_done(sk)
                    sk.ext.TCPAbortOnData += 1
                    return DropReason.TCP_ABORT_ON_DATA
                if tcb.end_seq != tcb.seq and after(
                    (tcb.end_seq - (flags & TCPHDR_FIN)) & M32, sk.rcv_nxt
                ):
                    tcp_done(sk)
                    sk.ext.TCPAbortOnData += 1
                    return DropReason.TCP_ABORT_ON_DATA
                tmo = tcp_fin_time(sk)
                tw_len = sk.tcp.TCP_TIMEWAIT_LEN
                if tmo > tw_len:
                    inet_csk_reset_keepalive_timer(sk, tmo - tw_len)
                elif flags & TCPHDR_FIN:
                    inet_csk_reset_keepalive_timer(sk, tmo)
                else:
                    tcp_time_wait(sk, TCP_FIN_WAIT2, tmo)
                    consume_skb(skb)
                    return 0
    elif state == TCP_CLOSING:
        if sk.snd_una == sk.write_seq:
            tcp_time_wait(sk, TCP_TIME_WAIT, 0)
            consume_skb(skb)
            return 0
    elif state == TCP_LAST_ACK:
        if sk.snd_una == sk.write_seq:
            tcp_done(sk)
            consume_skb(skb)
            return 0
    state = sk.state
    queued = False
    if state in (TCP_CLOSE_WAIT, TCP_CLOSING, TCP_LAST_ACK):
        if before(tcb.seq, sk.rcv_nxt):
            state = -1  # fall through to the FIN_WAIT checks
    if state in (-1, TCP_FIN_WAIT1, TCP_FIN_WAIT2, TCP_ESTABLISHED):
        if state != TCP_ESTABLISHED and sk.sk_shutdown & RCV_SHUTDOWN:
            if tcb.end_seq != tcb.seq and after(
                (tcb.end_seq - (flags & TCPHDR_FIN)) & M32, sk.rcv_nxt
            ):
                sk.ext.TCPAbortOnData += 1
                tcp_reset(sk)
                return DropReason.TCP_ABORT_ON_DATA
        tcp_data_queue(sk, skb)
        queued = True
    if sk.state != TCP_CLOSE:
        tcp_data_snd_check(sk)
        tcp_ack_snd_check(sk)
    if not queued:
        consume_skb(skb)
    return 0


# -- passive open --------------------------------------------------------------------------------


@kernel("net/ipv4/tcp_input.c", "tcp_conn_request")
def tcp_conn_request(
    sk: TcpSock, skb: SkBuff, af_ops: InetConnectionSockAfOps | None = None
) -> int:
    """A SYN for a listener: a request sock in the established hash, and a SYN-ACK;
    or, when the SYN queue is full and ``tcp_syncookies`` allows, a SYN cookie.

    *af_ops* is the family of the SYN (``tcp_request_sock_ipv4_ops`` for an
    IPv4 SYN on a dual-stack AF_INET6 listener); the listener's by default.

    The SYN queue holds at most the listen backlog (``qlen >
    sk_max_ack_backlog`` is full, as in Linux 6.x). A SYN beyond it gets a
    cookie SYN-ACK (``tcp_syncookies`` 1, the default; always with 2) and
    keeps no state, or is dropped (0: ``TCPReqQFullDrop``). Without cookies
    the last quarter of ``tcp_max_syn_backlog`` is also kept for peers
    proven alive (none are remembered here, so it is refused).

    Kernel: net/ipv4/tcp_input.c, tcp_conn_request().
    """
    if TIMED:
        spend("tcp_conn_request")
    tcp = sk.tcp
    ops = af_ops if af_ops is not None else sk.af_ops
    tcb: TcpSkbCb = skb.cb
    isn = tcb.tw_isn
    syncookies = tcp.sysctl_tcp_syncookies
    want_cookie = False
    # TW buckets are converted to open requests without limitations
    if (syncookies == 2 or sk.syn_queue_len > sk.sk_max_ack_backlog) and not isn:
        want_cookie = _syncookies.tcp_syn_flood_action(sk, ops.rsk_slab_name)
        if not want_cookie:
            sk.ext.ListenDrops += 1  # tcp_listendrop()
            consume_skb(skb)  # tcp_rcv_state_process(): conn_request() >= 0
            return 0
    if sk.sk_ack_backlog > sk.sk_max_ack_backlog:  # sk_acceptq_is_full()
        sk.ext.ListenOverflows += 1
        sk.ext.ListenDrops += 1
        consume_skb(skb)
        return 0
    th = skb.transport_header
    buf = skb.buf
    rx = TcpOptionsReceived()
    rx.user_mss = sk.user_mss
    rx.mss_clamp = TCP_MSS_DEFAULT
    foc = _fastopen.TcpFastopenCookie()
    tcp_parse_options(buf, th, rx, False, None, None if want_cookie else foc)
    if want_cookie and not rx.saw_tstamp:
        rx.sack_ok = 0  # tcp_clear_options(): the options need the timestamp to come back
        rx.wscale_ok = False
        rx.snd_wscale = 0
    req = RequestSock(sk)
    req.af_specific = ops
    req.cookie_ts = want_cookie  # req->syncookie
    ops.init_req(req, skb)
    req.num = sk.inet_num
    req.rmt_port = (buf[th] << 8) | buf[th + 1]
    req.iif = skb.dev.ifindex if skb.dev is not None else 0
    req.rcv_isn = tcb.seq
    req.rcv_nxt = (tcb.seq + 1) & M32
    req.tstamp_ok = rx.saw_tstamp and bool(tcp.sysctl_tcp_timestamps)
    req.ts_recent = rx.rcv_tsval if req.tstamp_ok else 0
    req.sack_ok = rx.sack_ok if tcp.sysctl_tcp_sack else 0
    req.wscale_ok = rx.wscale_ok and bool(tcp.sysctl_tcp_window_scaling)
    req.snd_wscale = rx.snd_wscale if req.wscale_ok else 0
    req.mss = rx.mss_clamp
    rt = ops.route_req(req)
    if rt is None:
        sk.ext.ListenDrops += 1
        kfree_skb(skb, DropReason.IP_OUTNOROUTES)
        return 0
    req.ts_off = ops.init_ts_off(skb) if req.tstamp_ok else 0
    if not want_cookie and not isn:
        max_syn_backlog = tcp.sysctl_max_syn_backlog
        # "Kill the following clause, if you dislike this way." (no peer is proven here)
        if not syncookies and max_syn_backlog - sk.syn_queue_len < max_syn_backlog >> 2:
            rt.release()
            sk.ext.ListenDrops += 1
            consume_skb(skb)
            return 0
        isn = ops.init_seq(skb)
    if want_cookie:
        # cookie_init_sequence(): the MSS goes down to the cookie's table value
        _syncookies.tcp_synq_overflow(sk)
        sk.ext.SyncookiesSent += 1
        isn, req.mss = ops.cookie_init_seq(sk, skb, req.mss)
        if not req.tstamp_ok:
            req.ecn_ok = False
    req.snt_isn = isn
    req.txhash = net_tx_rndhash(sk.net.rng)
    # tcp_openreq_init_rwin()
    mss = max(int(rt.mtu()) - ops.net_header_len - 20, 256)  # dst_metric_advmss()
    if sk.user_mss and sk.user_mss < mss:
        mss = sk.user_mss
    req.adv_mss = mss
    full_space = tcp_full_space(sk)
    req.rsk_window_clamp = sk.window_clamp
    # a receive buffer the user set (SO_RCVBUF) limits the window and its scale
    if sk.sk_userlocks & SOCK_RCVBUF_LOCK and (
        req.rsk_window_clamp > full_space or not req.rsk_window_clamp
    ):
        req.rsk_window_clamp = full_space
    req.rsk_rcv_wnd, req.rsk_window_clamp, req.rcv_wscale = tcp_select_initial_window(
        sk,
        full_space,
        mss - (12 if req.tstamp_ok else 0),
        req.rsk_window_clamp,
        req.wscale_ok,
        0,
    )
    if not req.wscale_ok:
        req.rcv_wscale = 0
    fastopen_sk = None if want_cookie else tcp_try_fastopen(sk, skb, req, foc, rt)
    req.fastopen_cookie = foc  # the first SYN-ACK's cookie (tcp_synack_options)
    if fastopen_sk is not None:
        req.snt_synack = tcp.tcp_clock_us()
        ops.send_synack(fastopen_sk, req, rt)
        req.fastopen_cookie = None
        rt.release()
        # the child goes straight onto the accept queue
        inet_csk_reqsk_queue_add(sk, req, fastopen_sk)
        sk.sk_data_ready()
        consume_skb(skb)
        return 0
    if not want_cookie:  # inet_csk_reqsk_queue_hash_add()
        key = (ops.family, req.loc_addr, req.num, req.rmt_addr, req.rmt_port)
        tcp.hashinfo.ehash[key] = req
        req.hashed = True
        req.ehash_key = key
        sk.syn_queue_young += 1  # inet_csk_reqsk_queue_added() -> reqsk_queue_added()
        sk.syn_queue_len += 1
    req.snt_synack = tcp.tcp_clock_us()
    ops.send_synack(sk, req, rt)
    req.fastopen_cookie = None  # retransmitted SYN-ACKs carry no cookie
    rt.release()
    if not want_cookie:
        req.timer = sk.net.timers.timer(lambda: reqsk_timer_handler(req), "reqsk_timer")
        req.timer.mod(sk.net.clock.jiffies + tcp.TCP_TIMEOUT_INIT)
    consume_skb(skb)
    return 0


@kernel("net/ipv4/inet_connection_sock.c", "reqsk_timer_handler", "syn_ack_recalc")
def reqsk_timer_handler(req: RequestSock) -> None:
    """Retransmit the SYN-ACK with back-off, or give up.

    When the SYN queue is more than half full, old requests get fewer
    retransmissions (down to 2) unless enough of the queue is young: the
    kernel's "reserve half of room for young embryons" rule.

    Kernel: net/ipv4/inet_connection_sock.c, reqsk_timer_handler() /
    syn_ack_recalc().
    """
    if not req.hashed:
        return
    listener = req.listener
    tcp = listener.tcp
    if listener.state != TCP_LISTEN:
        inet_csk_reqsk_queue_drop(listener, req)
        return
    max_syn_ack_retries = tcp.sysctl_tcp_synack_retries
    qlen = listener.syn_queue_len
    if (qlen << 1) > max(8, listener.sk_max_ack_backlog):
        young = listener.syn_queue_young << 1
        while max_syn_ack_retries > 2:
            if qlen < young:
                break
            max_syn_ack_retries -= 1
            young <<= 1
    if req.num_timeout >= max_syn_ack_retries:  # syn_ack_recalc(), no defer_accept
        inet_csk_reqsk_queue_drop(listener, req)
        return
    ops = req.af_specific
    req.txhash = net_tx_rndhash(listener.net.rng)  # tcp_rtx_synack(): a new flow label
    if ops.send_synack(listener, req, None) == 0 or True:
        tcp.mib.RetransSegs += 1
        tcp.ext.TCPSynRetrans += 1
        req.num_retrans += 1
    if req.num_timeout == 0:
        listener.syn_queue_young -= 1
    req.num_timeout += 1
    timeo = min(tcp.TCP_TIMEOUT_INIT << req.num_timeout, tcp.TCP_RTO_MAX)
    assert req.timer is not None
    req.timer.mod(listener.net.clock.jiffies + timeo)


# -- ICMP errors ---------------------------------------------------------------------------------

# icmp_err_convert[] (net/ipv4/icmp.c): errno and whether it is fatal
_ICMP_UNREACH: Final = (
    (101, False),  # NET_UNREACH: ENETUNREACH
    (113, False),  # HOST_UNREACH: EHOSTUNREACH
    (92, True),  # PROT_UNREACH: ENOPROTOOPT
    (111, True),  # PORT_UNREACH: ECONNREFUSED
    (90, False),  # FRAG_NEEDED: EMSGSIZE
    (22, False),  # SR_FAILED: EOPNOTSUPP -> EINVAL in icmp_err_convert? kept soft
    (101, True),  # NET_UNKNOWN
    (113, True),  # HOST_UNKNOWN
    (64, True),  # HOST_ISOLATED: ENONET
    (101, True),  # NET_ANO
    (113, True),  # HOST_ANO
    (101, False),  # NET_UNR_TOS
    (113, False),  # HOST_UNR_TOS
    (113, True),  # PKT_FILTERED
    (113, False),  # PREC_VIOLATION
    (113, False),  # PREC_CUTOFF
)


def tcp_err_report(sk: TcpSock, err: int, fatal: bool, recverr: bool) -> None:
    """Hand an ICMP error (an errno) to the socket: a fatal one aborts a
    connection still being set up; otherwise it is reported at once only with
    *recverr* (tcp_v4_err: IP_RECVERR, ``inet_test_bit(RECVERR)``; tcp_v6_err:
    IPV6_RECVERR, ``inet6_test_bit(RECVERR6)``), else kept as the soft error a
    timeout returns.

    The tail tcp_v4_err() and tcp_v6_err() share.
    """
    owned = sk.sk_lock_owned  # sock_owned_by_user(): only the soft error is kept
    if sk.state in (TCP_SYN_SENT, TCP_SYN_RECV):
        if fatal and not owned:
            sk.sk_err = err
            sk.sk_error_report()
            tcp_done(sk)
        else:
            sk.sk_err_soft = err
        return
    if recverr and not owned:
        sk.sk_err = err
        sk.sk_error_report()
    else:
        sk.sk_err_soft = err


@kernel("net/ipv4/tcp_ipv4.c", "tcp_req_err")
def tcp_req_err(req: RequestSock, seq: int, abort: bool) -> None:
    """An ICMP error about a SYN-ACK of a request sock (SYN_RECV).

    An error quoting another sequence number than our SYN-ACK's is out of
    window; a fatal one (*abort*) quoting it drops the request silently: the
    error cannot reach a child that does not exist yet, and POSIX does not
    want network errors from accept().

    Kernel: net/ipv4/tcp_ipv4.c, tcp_req_err().
    """
    listener = req.listener
    if seq != req.snt_isn:
        listener.ext.OutOfWindowIcmps += 1
    elif abort:
        inet_csk_reqsk_queue_drop(listener, req)
        listener.ext.ListenDrops += 1  # tcp_listendrop()


@kernel("net/ipv4/tcp_ipv4.c", "tcp_v4_err")
def tcp_v4_err_state(sk: TcpSock, seq: int, icmp_type: int, code: int, info: int) -> None:
    """Apply an ICMP error to a connection. Kernel: net/ipv4/tcp_ipv4.c, tcp_v4_err()."""
    if sk.sk_lock_owned and not (icmp_type == 3 and code == 4):
        # "we can receive locally generated ICMP messages while socket is held":
        # the PMTU update is deferred to release_sock; any other error is counted
        sk.ext.LockDroppedIcmps += 1
    if sk.state == TCP_CLOSE:
        return
    if sk.state != TCP_SYN_SENT and not between(seq, sk.snd_una, sk.snd_nxt):
        sk.ext.OutOfWindowIcmps += 1
        return
    if icmp_type == 3:  # ICMP_DEST_UNREACH
        if code == 4:  # ICMP_FRAG_NEEDED: PMTU discovery
            if sk.state == TCP_LISTEN:
                return
            sk.mtu_info = info
            if sk.sk_lock_owned:  # the socket call in progress runs it (tcp_release_cb)
                sk.sk_tsq_flags |= TCPF_MTU_REDUCED_DEFERRED
            else:
                sk.af_ops.mtu_reduced(sk)
            return
        if code >= len(_ICMP_UNREACH):
            return
        err, fatal = _ICMP_UNREACH[code]
    elif icmp_type == 11:  # ICMP_TIME_EXCEEDED
        err, fatal = 113, False
    elif icmp_type == 12:  # ICMP_PARAMETERPROB
        err, fatal = 71, True  # EPROTO
    else:
        return
    tcp_err_report(sk, err, fatal, sk.recverr)


# -- TCP Fast Open (netstack.tcp.fastopen has the theory of operation) ------------------------


@kernel("net/ipv4/tcp_input.c", "tcp_rcv_synrecv_state_fastopen")
def tcp_rcv_synrecv_state_fastopen(sk: TcpSock) -> None:
    """The ACK of a Fast Open child's SYN-ACK: the request is released.

    Kernel: net/ipv4/tcp_input.c, tcp_rcv_synrecv_state_fastopen().
    """
    req = sk.fastopen_rsk
    tcp_update_rto_time(sk)
    sk.icsk_retransmits = 0
    if not sk.retrans_out:  # tcp_retrans_stamp_cleanup(): nothing was retransmitted
        sk.retrans_stamp = 0
    if req is not None:
        _fastopen.reqsk_fastopen_remove(sk, req, False)
    tcp_rearm_rto(sk)


@kernel("tcp_synack_rtt_meas")
def tcp_synack_rtt_meas(sk: TcpSock, req: RequestSock) -> None:
    """The handshake's RTT from the SYN-ACK not resent. Kernel: tcp_synack_rtt_meas()."""

    rtt_us = -1
    if not req.num_retrans and req.snt_synack >= 0:
        rtt_us = max(sk.tcp.tcp_clock_us() - req.snt_synack, 1)
    if rtt_us > 0:
        tcp_ack_update_rtt(sk, 0x10, rtt_us, -1)  # FLAG_SYN_ACKED


@kernel("net/ipv4/tcp_input.c", "tcp_rcv_fastopen_synack")
def tcp_rcv_fastopen_synack(
    sk: TcpSock, synack: SkBuff, cookie: _fastopen.TcpFastopenCookie
) -> bool:
    """The SYN-ACK of a Fast Open SYN: cache its cookie and MSS; resend data it did
    not acknowledge (returns True then: the data carries the ACK).

    Kernel: net/ipv4/tcp_input.c, tcp_rcv_fastopen_synack().
    """
    data = sk.rtx_queue[0] if sk.syn_data and sk.rtx_queue else None
    mss = sk.mss_clamp
    try_exp = 0
    syn_drop = False
    if mss == sk.user_mss:
        opt = TcpOptionsReceived()
        tcp_parse_options(synack.buf, synack.transport_header, opt, False)
        mss = opt.mss_clamp
    if not sk.syn_fastopen:
        cookie.len = -1  # an unsolicited cookie is ignored
    elif sk.total_retrans:
        syn_drop = cookie.len < 0 and data is not None
    elif cookie.len < 0 and not sk.syn_data:
        try_exp = 2 if sk.syn_fastopen_exp else 1
    _fastopen.tcp_fastopen_cache_set(sk, mss, cookie, syn_drop, try_exp)
    if data is not None:
        sk.fastopen_client_fail = (
            _fastopen.TFO_SYN_RETRANSMITTED if sk.total_retrans else _fastopen.TFO_DATA_NOT_ACKED
        )
        for skb in list(sk.rtx_queue):
            tcp_mark_skb_lost(sk, skb)
        # tcp_non_congestion_loss_retransmit()
        if sk.icsk_ca_state != 4:  # TCP_CA_Loss
            sk.high_seq = sk.snd_nxt
            sk.snd_ssthresh = tcp_current_ssthresh(sk)
            sk.prior_ssthresh = 0
            sk.undo_marker = 0
            tcp_set_ca_state(sk, 4)
        tcp_xmit_retransmit_queue(sk)
        sk.ext.TCPFastOpenActiveFail += 1
        return True
    sk.syn_data_acked = sk.syn_data
    if sk.syn_data_acked:
        sk.ext.TCPFastOpenActive += 1
        if sk.delivered > 1:  # SYN-data is counted as two packets in tcp_ack()
            sk.delivered -= 1
    tcp_fastopen_add_skb(sk, synack)
    return False


# -- TCP Fast Open (netstack.tcp.fastopen has the theory of operation) ------------------------


@kernel("net/ipv4/tcp_fastopen.c", "tcp_fastopen_add_skb")
def tcp_fastopen_add_skb(sk: TcpSock, skb: SkBuff) -> None:
    """Queue the data (and FIN) a SYN or SYN-ACK carries.

    Kernel: net/ipv4/tcp_fastopen.c, tcp_fastopen_add_skb().
    """
    tcb: TcpSkbCb = skb.cb
    if tcb.end_seq == sk.rcv_nxt:
        return

    clone = skb.clone()
    th = skb.transport_header
    clone.transport_header = th
    clone.data = th + (skb.buf[th + 12] >> 4) * 4  # __skb_pull(skb, tcp_hdrlen(skb))
    flags = tcb.tcp_flags & ~TCPHDR_SYN
    ccb = TcpSkbCb((tcb.seq + 1) & M32, tcb.end_seq, flags)
    clone.cb = ccb
    sk.segs_in = 1  # tcp_segs_in(): the SYN, counted once
    if clone.tail > clone.data:
        sk.data_segs_in = 1
    sk.rcv_nxt = ccb.end_seq
    clone.sk = None
    sk.receive_queue.append(clone)  # tcp_add_receive_queue() (sk_forced_mem_schedule)
    sk_forced_mem_schedule(sk, clone.truesize)  # tcp_fastopen_add_skb() does both
    skb_set_owner_r(sk, clone)
    sk.syn_data_acked = True
    sk.bytes_received = clone.tail - clone.data
    if flags & TCPHDR_FIN:
        tcp_fin(sk)


@kernel("net/ipv4/tcp_fastopen.c", "tcp_fastopen_create_child")
def tcp_fastopen_create_child(sk: TcpSock, skb: SkBuff, req: RequestSock) -> TcpSock | None:
    """The full child of a Fast Open SYN, in SYN_RECV with the SYN's data queued.

    Kernel: net/ipv4/tcp_fastopen.c, tcp_fastopen_create_child().
    """
    from netstack.tcp.helpers import inet_csk_reset_xmit_timer

    child: TcpSock | None = sk.af_ops.syn_recv_sock(sk, skb, req, None)
    if child is None:
        return None
    sk.fastopenq.qlen += 1
    child.fastopen_rsk = req
    req.tfo_listener = True
    buf = skb.buf
    th = skb.transport_header
    child.snd_wnd = (buf[th + 14] << 8) | buf[th + 15]  # RFC 7323: never scaled in a SYN
    child.max_window = child.snd_wnd
    # the retransmission timer resends the SYN-ACK (the request is in no hash)
    req.timeout = sk.tcp.TCP_TIMEOUT_INIT
    inet_csk_reset_xmit_timer(child, ICSK_TIME_RETRANS, req.timeout, sk.tcp.TCP_RTO_MAX)
    tcp_init_transfer(child)
    tcb: TcpSkbCb = skb.cb
    child.rcv_nxt = (tcb.seq + 1) & M32
    tcp_fastopen_add_skb(child, skb)
    req.rcv_nxt = child.rcv_nxt
    child.rcv_wup = child.rcv_nxt
    return child


@kernel("net/ipv4/tcp_fastopen.c", "tcp_try_fastopen")
def tcp_try_fastopen(
    sk: TcpSock, skb: SkBuff, req: RequestSock, foc: _fastopen.TcpFastopenCookie, dst: object
) -> TcpSock | None:
    """Decide on a SYN's Fast Open: the child if its data is taken now, else None;
    *foc* becomes the cookie the SYN-ACK carries (len -1: none).

    Kernel: net/ipv4/tcp_fastopen.c, tcp_try_fastopen().
    """
    tcb: TcpSkbCb = skb.cb
    syn_data = tcb.end_seq != (tcb.seq + 1) & M32
    tfo = sk.tcp.sysctl_tcp_fastopen
    valid_foc = _fastopen.TcpFastopenCookie()
    ret = 0
    if foc.len == 0:  # the client asks for a cookie
        sk.ext.TCPFastOpenCookieReqd += 1
    if not (
        tfo & _fastopen.TFO_SERVER_ENABLE
        and (syn_data or foc.len >= 0)
        and _fastopen.tcp_fastopen_queue_check(sk)
    ):
        foc.len = -1
        return None
    if _fastopen.tcp_fastopen_no_cookie(sk, dst, _fastopen.TFO_SERVER_COOKIE_NOT_REQD):
        return _tfo_child(sk, skb, req, foc, valid_foc, 0)
    if foc.len == 0:
        ctx = _fastopen.tcp_fastopen_get_ctx(sk)
        if ctx:
            valid_foc.set(_fastopen.tcp_fastopen_cookie_gen_cipher(skb, ctx[0]))
    elif foc.len > 0:
        ret = _fastopen.tcp_fastopen_cookie_gen_check(sk, skb, foc, valid_foc)
        if not ret:
            sk.ext.TCPFastOpenPassiveFail += 1
        else:
            return _tfo_child(sk, skb, req, foc, valid_foc, ret)
    valid_foc.exp = foc.exp
    foc.set(valid_foc)
    return None


def _tfo_child(
    sk: TcpSock,
    skb: SkBuff,
    req: RequestSock,
    foc: _fastopen.TcpFastopenCookie,
    valid_foc: _fastopen.TcpFastopenCookie,
    ret: int,
) -> TcpSock | None:
    """tcp_try_fastopen()'s ``fastopen:`` label."""
    child = tcp_fastopen_create_child(sk, skb, req)
    if child is not None:
        if ret == 2:  # a backup key's cookie: send the primary's
            valid_foc.exp = foc.exp
            foc.set(valid_foc)
            sk.ext.TCPFastOpenPassiveAltKey += 1
        else:
            foc.len = -1
        sk.ext.TCPFastOpenPassive += 1
        child.syn_fastopen_child = True
        return child
    sk.ext.TCPFastOpenPassiveFail += 1
    valid_foc.exp = foc.exp
    foc.set(valid_foc)
    return None


@kernel("net/ipv4/tcp_minisocks.c", "tcp_check_req")
def tcp_check_req_fastopen(sk: TcpSock, skb: SkBuff, req: RequestSock) -> bool:
    """A segment for a Fast Open child before its handshake ends (``tcp_check_req``
    with ``fastopen`` true): False to drop it, True to process it on the child.

    Kernel: net/ipv4/tcp_minisocks.c, tcp_check_req().
    """

    tcb: TcpSkbCb = skb.cb
    flags = tcb.tcp_flags
    tcp = sk.tcp
    if tcb.seq == req.rcv_isn and flags & TCPHDR_SYN and not flags & TCPHDR_RST:
        # a retransmitted SYN: our SYN-ACK was lost
        if not tcp_oow_rate_limited(sk, "TCPACKSkippedSynRecv"):
            ops = req.af_specific
            if ops.send_synack(sk, req, None) == 0:  # inet_rtx_syn_ack()
                tcp.mib.RetransSegs += 1
                tcp.ext.TCPSynRetrans += 1
                req.num_retrans += 1
        return False
    if not tcp_in_window(tcb.seq, tcb.end_seq, req.rcv_nxt, (req.rcv_nxt + req.rsk_rcv_wnd) & M32):
        if not flags & TCPHDR_RST and not tcp_oow_rate_limited(sk, "TCPACKSkippedSynRecv"):
            from netstack.tcp.output import tcp_send_ack

            tcp_send_ack(sk)  # req->rsk_ops->send_ack(): the child's sequence numbers
        return False
    if flags & (TCPHDR_RST | TCPHDR_SYN):
        tcp.mib.AttemptFails += 1
        if not flags & TCPHDR_RST:
            sk.af_ops.send_reset(None, skb)
        else:
            _fastopen.reqsk_fastopen_remove(sk, req, True)
            tcp_reset(sk)
        return False
    return bool(flags & TCPHDR_ACK)
