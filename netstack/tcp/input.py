"""TCP input: ACK processing, loss recovery, the receive queue, the state machine.

Theory of operation::

    tcp_rcv_established (ESTABLISHED) │ tcp_rcv_state_process (every other state)
      ─► tcp_validate_incoming: PAWS, sequence window, RST (RFC 5961: exact
         rcv_nxt resets, in-window ones get a challenge ACK), SYN (challenge ACK)
      ─► tcp_ack: too old (challenge) / unsent data (drop) ─► window update
         ─► tcp_sacktag_write_queue (SACK blocks mark the scoreboard, splitting
            GSO skbs at MSS boundaries) ─► tcp_clean_rtx_queue (acked skbs
            freed, RTT sampled: RFC 6298 srtt/rttvar/RTO) ─► tcp_fastretrans_alert
            (dupacks/SACK ≥ reordering: Recovery with PRR; NewReno partial ACKs
            retransmit the next hole; Loss after an RTO) ─► cwnd: PRR in
            Recovery/CWR, else the socket's congestion control (Reno, CUBIC)
      ─► tcp_data_queue: in order ─► receive queue (+ out-of-order queue
         drained, SACK blocks trimmed); duplicate ─► D-SACK; ahead ─► ofo queue
         + SACK block; FIN ─► tcp_fin (state change)
      ─► tcp_data_snd_check (send what the new window allows)
      ─► tcp_ack_snd_check: ACK now (two full segments, quickack, ofo data) or
         delayed (tcp_send_delayed_ack)

Header prediction (the fast path) is not separate: every segment takes the
slow path, which computes the same result.

Kernel: net/ipv4/tcp_input.c.
"""

from __future__ import annotations

import struct
from typing import Any, Final

from netstack.core.skbuff import DropReason, SkBuff, consume_skb, kfree_skb
from netstack.core.sock import SOCK_RCVBUF_LOCK, SOCK_SNDBUF_LOCK, net_tx_rndhash
from netstack.sites import TIMED, kernel, spend
from netstack.tcp import syncookies as _syncookies
from netstack.tcp.cong import CA_EVENT_COMPLETE_CWR, CA_EVENT_LOSS, tcp_init_congestion_control
from netstack.tcp.helpers import (
    TCP_CHRONO_BUSY,
    inet_csk_reset_xmit_timer,
    tcp_check_space,
    tcp_chrono_stop,
    tcp_current_ssthresh,
    tcp_enter_cwr,
    tcp_in_cwnd_reduction,
    tcp_init_cwnd,
    tcp_init_cwnd_reduction,
    tcp_initialize_rcv_mss,
    tcp_packets_in_flight,
    tcp_rearm_rto,
    tcp_set_ca_state,
    tcp_set_window_clamp,
    tcp_sndbuf_expand,
)
from netstack.tcp.output import (
    __tcp_select_window,
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
    tcp_write_queue_purge,
    tcp_xmit_retransmit_queue,
)
from netstack.tcp.sock import (
    ICSK_ACK_NOMEM,
    ICSK_ACK_NOW,
    ICSK_ACK_PUSHED,
    ICSK_ACK_PUSHED2,
    ICSK_TIME_PROBE0,
    RCV_SHUTDOWN,
    SEND_SHUTDOWN,
    TCP_CA_CWR,
    TCP_CLOSE,
    TCP_CLOSE_WAIT,
    TCP_CLOSING,
    TCP_ESTABLISHED,
    TCP_FIN_WAIT1,
    TCP_FIN_WAIT2,
    TCP_INFINITE_SSTHRESH,
    TCP_INIT_CWND,
    TCP_LAST_ACK,
    TCP_LISTEN,
    TCP_MAX_QUICKACKS,
    TCP_MAX_WSCALE,
    TCP_MIN_MSS,
    TCP_MSS_DEFAULT,
    TCP_NUM_SACKS,
    TCP_RMEM_TO_WIN_SCALE,
    TCP_SYN_RECV,
    TCP_SYN_SENT,
    TCP_TIME_WAIT,
    TCPCB_LOST,
    TCPCB_RETRANS,
    TCPCB_SACKED_ACKED,
    TCPCB_SACKED_RETRANS,
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
    TCPOLEN_MSS,
    TCPOLEN_SACK_BASE,
    TCPOLEN_SACK_PERBLOCK,
    TCPOLEN_SACK_PERM,
    TCPOLEN_TIMESTAMP,
    TCPOLEN_TSTAMP_ALIGNED,
    TCPOLEN_WINDOW,
    TCPOPT_MSS,
    TCPOPT_SACK,
    TCPOPT_SACK_PERM,
    TCPOPT_TIMESTAMP,
    TCPOPT_WINDOW,
    iter_options,
)

__all__ = [
    "TcpOptionsReceived",
    "tcp_ack",
    "tcp_conn_request",
    "tcp_enter_loss",
    "tcp_err_report",
    "tcp_parse_options",
    "tcp_rcv_established",
    "tcp_rcv_state_process",
    "tcp_reset",
]

M32: Final = 0xFFFFFFFF
# TCP_REMNANT: a segment with these flags may be short of a full MSS
_TCP_REMNANT: Final = TCPHDR_FIN | TCPHDR_URG | TCPHDR_SYN | TCPHDR_PSH
_II: Final = struct.Struct("!II")
_H: Final = struct.Struct("!H")

# tcp_ack() flags
FLAG_DATA: Final = 0x01
FLAG_WIN_UPDATE: Final = 0x02
FLAG_DATA_ACKED: Final = 0x04
FLAG_RETRANS_DATA_ACKED: Final = 0x08
FLAG_SYN_ACKED: Final = 0x10
FLAG_DATA_SACKED: Final = 0x20
FLAG_ECE: Final = 0x40
FLAG_LOST_RETRANS: Final = 0x80
FLAG_SLOWPATH: Final = 0x100
FLAG_ORIG_SACK_ACKED: Final = 0x200
FLAG_SND_UNA_ADVANCED: Final = 0x400
FLAG_DSACKING_ACK: Final = 0x800
FLAG_SET_XMIT_TIMER: Final = 0x1000
FLAG_SACK_RENEGING: Final = 0x2000
FLAG_UPDATE_TS_RECENT: Final = 0x4000
FLAG_NO_CHALLENGE_ACK: Final = 0x8000
FLAG_ACKED: Final = FLAG_DATA_ACKED | FLAG_SYN_ACKED
FLAG_NOT_DUP: Final = FLAG_DATA | FLAG_WIN_UPDATE | FLAG_ACKED
FLAG_CA_ALERT: Final = FLAG_DATA_SACKED | FLAG_ECE | FLAG_DSACKING_ACK
FLAG_FORWARD_PROGRESS: Final = FLAG_ACKED | FLAG_DATA_SACKED

ECONNREFUSED: Final = 111
ECONNRESET: Final = 104
EPIPE: Final = 32


# -- options ------------------------------------------------------------------------------


class TcpOptionsReceived:
    """What a SYN's options said (kernel: ``struct tcp_options_received``)."""

    __slots__ = (
        "mss_clamp",
        "rcv_tsecr",
        "rcv_tsval",
        "sack_ok",
        "saw_tstamp",
        "snd_wscale",
        "user_mss",
        "wscale_ok",
    )  # fmt: skip

    def __init__(self) -> None:
        self.saw_tstamp = False
        self.rcv_tsval = 0
        self.rcv_tsecr = 0
        self.sack_ok = 0
        self.wscale_ok = False
        self.snd_wscale = 0
        self.mss_clamp = 0
        self.user_mss = 0


@kernel("net/ipv4/tcp_input.c", "tcp_parse_options")
def tcp_parse_options(
    buf: bytes | bytearray, th: int, rx: Any, estab: bool, tcb: TcpSkbCb | None = None
) -> None:
    """Read the option area of the header at *th* into *rx* (a socket or TcpOptionsReceived).

    Options that only matter in a SYN (MSS, window scale, SACK-permitted) are
    skipped on an established connection; a SACK block's offset is left in
    ``tcb.sacked_off``. Lengths are checked as the kernel does; a malformed
    option ends the walk (iter_options).

    Kernel: net/ipv4/tcp_input.c, tcp_parse_options().
    """
    rx.saw_tstamp = False
    end = th + (buf[th + 12] >> 4) * 4
    syn = bool(buf[th + 13] & TCPHDR_SYN)
    for kind, off, size in iter_options(buf, th + 20, end):
        if kind == TCPOPT_TIMESTAMP:
            if size == TCPOLEN_TIMESTAMP:
                rx.saw_tstamp = True
                rx.rcv_tsval, rx.rcv_tsecr = _II.unpack_from(buf, off + 2)
        elif kind == TCPOPT_SACK:
            if (
                size >= TCPOLEN_SACK_BASE + TCPOLEN_SACK_PERBLOCK
                and not (size - TCPOLEN_SACK_BASE) % TCPOLEN_SACK_PERBLOCK
                and tcb is not None
            ):
                tcb.sacked_off = off
        elif estab or not syn:
            continue
        elif kind == TCPOPT_MSS:
            if size == TCPOLEN_MSS:
                in_mss = (buf[off + 2] << 8) | buf[off + 3]
                if in_mss:
                    user = rx.user_mss
                    if user and user < in_mss:
                        in_mss = user
                    rx.mss_clamp = in_mss
        elif kind == TCPOPT_WINDOW:
            if size == TCPOLEN_WINDOW:
                rx.wscale_ok = True
                rx.snd_wscale = min(buf[off + 2], TCP_MAX_WSCALE)
        elif kind == TCPOPT_SACK_PERM:
            if size == TCPOLEN_SACK_PERM:
                rx.sack_ok = 1


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
    room = min(sk.window_clamp, tcp_space(sk)) - sk.rcv_ssthresh
    if room <= 0:
        return
    length = skb.tail - skb.data
    truesize = skb.truesize
    if tcp_win_from_space(sk, truesize) <= length:
        incr = 2 * sk.advmss
    else:
        incr = __tcp_grow_window(sk, skb, truesize)
    if incr:
        incr = max(incr, 2 * length)
        sk.rcv_ssthresh += min(room, incr)
        sk.icsk_ack_quick |= 1


@kernel("tcp_cwnd_reduction")
def tcp_cwnd_reduction(sk: TcpSock, newly_acked_sacked: int, newly_lost: int, flag: int) -> None:
    """Proportional Rate Reduction (RFC 6937). Kernel: tcp_cwnd_reduction()."""
    if newly_acked_sacked <= 0 or not sk.prior_cwnd:
        return
    sk.prr_delivered += newly_acked_sacked
    in_flight = tcp_packets_in_flight(sk)
    delta = sk.snd_ssthresh - in_flight
    if delta < 0:
        dividend = sk.snd_ssthresh * sk.prr_delivered + sk.prior_cwnd - 1
        sndcnt = dividend // sk.prior_cwnd - sk.prr_out
    elif flag & FLAG_SND_UNA_ADVANCED and not newly_lost:
        sndcnt = min(delta, max(sk.prr_delivered - sk.prr_out, newly_acked_sacked) + 1)
    else:
        sndcnt = min(delta, newly_acked_sacked)
    sndcnt = max(sndcnt, 0 if sk.prr_out else 1)  # force a fast retransmit on entry
    sk.snd_cwnd = in_flight + sndcnt


@kernel("net/ipv4/tcp_input.c", "tcp_end_cwnd_reduction")
def tcp_end_cwnd_reduction(sk: TcpSock) -> None:
    """Kernel: net/ipv4/tcp_input.c, tcp_end_cwnd_reduction()."""
    if sk.icsk_ca_state == TCP_CA_CWR or (
        sk.icsk_ca_state == TCP_CA_Recovery and sk.snd_ssthresh < TCP_INFINITE_SSTHRESH
    ):
        sk.snd_cwnd = sk.snd_ssthresh
        sk.snd_cwnd_stamp = sk.net.clock.jiffies
    sk.icsk_ca_ops.cwnd_event(sk, CA_EVENT_COMPLETE_CWR)


# -- RTT and RTO (RFC 6298) -------------------------------------------------------------------


def tcp_rto_min_us(sk: TcpSock) -> int:
    return sk.tcp.jiffies_to_usecs(sk.tcp.TCP_RTO_MIN)


@kernel("net/ipv4/tcp_input.c", "tcp_rtt_estimator")
def tcp_rtt_estimator(sk: TcpSock, mrtt_us: int) -> None:
    """Van Jacobson's smoothed RTT, as the kernel keeps it (srtt×8, mdev×4).

    Kernel: net/ipv4/tcp_input.c, tcp_rtt_estimator().
    """
    m = mrtt_us
    srtt = sk.srtt_us
    if srtt:
        m -= srtt >> 3
        srtt += m
        if m < 0:
            m = -m
            m -= sk.mdev_us >> 2
            if m > 0:
                m >>= 3
        else:
            m -= sk.mdev_us >> 2
        sk.mdev_us += m
        if sk.mdev_us > sk.mdev_max_us:
            sk.mdev_max_us = sk.mdev_us
            if sk.mdev_max_us > sk.rttvar_us:
                sk.rttvar_us = sk.mdev_max_us
        if after(sk.snd_una, sk.rtt_seq):
            if sk.mdev_max_us < sk.rttvar_us:
                sk.rttvar_us -= (sk.rttvar_us - sk.mdev_max_us) >> 2
            sk.rtt_seq = sk.snd_nxt
            sk.mdev_max_us = tcp_rto_min_us(sk)
    else:
        srtt = m << 3
        sk.mdev_us = m << 1
        sk.rttvar_us = max(sk.mdev_us, tcp_rto_min_us(sk))
        sk.mdev_max_us = sk.rttvar_us
        sk.rtt_seq = sk.snd_nxt
    sk.srtt_us = max(1, srtt)


@kernel("net/ipv4/tcp_input.c", "tcp_set_rto", "__tcp_set_rto", "tcp_bound_rto")
def tcp_set_rto(sk: TcpSock) -> None:
    """RTO = srtt + 4·rttvar (rttvar ≥ RTO_min/4), at most TCP_RTO_MAX.

    Kernel: net/ipv4/tcp_input.c, tcp_set_rto() / __tcp_set_rto() / tcp_bound_rto().
    """
    tcp = sk.tcp
    rto = tcp.usecs_to_jiffies((sk.srtt_us >> 3) + sk.rttvar_us)
    sk.icsk_rto = min(rto, tcp.TCP_RTO_MAX)


@kernel("net/ipv4/tcp_input.c", "tcp_ack_update_rtt")
def tcp_ack_update_rtt(sk: TcpSock, flag: int, seq_rtt_us: int, ca_rtt_us: int) -> bool:
    """Take an RTT sample: the timestamp echo first (Karn-safe), else the skb's send time.

    Kernel: net/ipv4/tcp_input.c, tcp_ack_update_rtt().
    """
    if seq_rtt_us < 0 and sk.saw_tstamp and sk.rcv_tsecr and flag & FLAG_ACKED:
        now_ms = sk.tcp.tcp_time_stamp_ms()
        delta = (now_ms + sk.tsoffset - sk.rcv_tsecr) & M32
        if delta < 0x7FFFFFFF:
            seq_rtt_us = delta * 1000
    if seq_rtt_us < 0:
        return False
    if not sk.rtt_min or seq_rtt_us < sk.rtt_min:
        sk.rtt_min = max(seq_rtt_us, 1)
    tcp_rtt_estimator(sk, seq_rtt_us)
    tcp_set_rto(sk)
    sk.icsk_backoff = 0
    return True


# -- the scoreboard -----------------------------------------------------------------------------


@kernel("net/ipv4/tcp_input.c", "tcp_mark_skb_lost")
def tcp_mark_skb_lost(sk: TcpSock, skb: SkBuff) -> None:
    """Kernel: net/ipv4/tcp_input.c, tcp_mark_skb_lost()."""
    tcb: TcpSkbCb = skb.cb
    sacked = tcb.sacked
    if sacked & TCPCB_SACKED_ACKED:
        return
    if sacked & TCPCB_SACKED_RETRANS:
        tcb.sacked &= ~TCPCB_SACKED_RETRANS
        sk.retrans_out -= tcb.pcount
        sk.ext.TCPLostRetransmit += 1
    if not tcb.sacked & TCPCB_LOST:
        tcb.sacked |= TCPCB_LOST
        sk.lost_out += tcb.pcount


@kernel("net/ipv4/tcp_input.c", "tcp_mark_head_lost")
def tcp_mark_head_lost(sk: TcpSock, packets: int, mark_head: bool) -> None:
    """Mark un-SACKed segments at the head lost until *packets* are counted.

    Kernel: net/ipv4/tcp_input.c, tcp_mark_head_lost().
    """
    cnt = 0
    for skb in sk.rtx_queue:
        tcb: TcpSkbCb = skb.cb
        cnt += tcb.pcount  # FACK and Reno count every segment
        if cnt > packets and not (mark_head and skb is sk.rtx_queue[0]):
            break
        if not tcb.sacked & (TCPCB_SACKED_ACKED | TCPCB_LOST):
            tcb.sacked |= TCPCB_LOST
            sk.lost_out += tcb.pcount
        if mark_head:
            break


@kernel("include/net/tcp.h")
def tcp_fackets_out(sk: TcpSock) -> int:
    """Segments from snd_una up to the highest SACKed one, holes included (FACK).

    Kernel: include/net/tcp.h, tp->fackets_out (kept incrementally there; 2.6–4.14).
    """
    hs = sk.highest_sack
    if hs is None or not sk.sacked_out:
        return 0
    end = hs.cb.end_seq
    n = 0
    for skb in sk.rtx_queue:
        tcb: TcpSkbCb = skb.cb
        if after(tcb.end_seq, end):
            break
        n += tcb.pcount
    return n


@kernel("net/ipv4/tcp_input.c", "tcp_update_scoreboard")
def tcp_update_scoreboard(sk: TcpSock, fast_rexmit: bool) -> None:
    """Mark segments lost: FACK's holes below the highest SACK, Reno's head.

    Kernel: net/ipv4/tcp_input.c, tcp_update_scoreboard() (4.x, tcp_fack=1, no RACK).
    """
    if tcp_is_sack(sk):
        lost = tcp_fackets_out(sk) - sk.reordering
        tcp_mark_head_lost(sk, max(lost, 1), False)
    else:
        tcp_mark_head_lost(sk, 1, True)


@kernel("tcp_add_reno_sack")
def tcp_add_reno_sack(sk: TcpSock) -> None:
    """A duplicate ACK without SACK counts as one segment received. Kernel: tcp_add_reno_sack()."""
    sk.sacked_out += 1
    sk.sacked_out = min(sk.sacked_out, max(sk.packets_out - sk.lost_out, 0))


@kernel("net/ipv4/tcp_input.c", "tcp_remove_reno_sacks")
def tcp_remove_reno_sacks(sk: TcpSock, acked: int) -> None:
    """Kernel: net/ipv4/tcp_input.c, tcp_remove_reno_sacks()."""
    if acked > 0:
        sk.sacked_out = max(sk.sacked_out - (acked - 1), 0)


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


@kernel("net/ipv4/tcp_input.c", "tcp_mark_lost_retrans")
def tcp_mark_lost_retrans(sk: TcpSock) -> None:
    """A retransmission is lost too if data sent after it has been SACKed.

    Each retransmitted skb remembers ``snd_nxt`` at the time it went out; once
    the highest SACKed sequence passes that, the retransmission must have
    been lost, and it is marked for another one.

    Kernel: net/ipv4/tcp_input.c, tcp_mark_lost_retrans() (3.x–4.3, before RACK).
    """
    hs = sk.highest_sack
    if hs is None or not sk.retrans_out:
        return
    received_upto = hs.cb.end_seq
    for skb in sk.rtx_queue:
        tcb: TcpSkbCb = skb.cb
        if not after(tcb.seq, received_upto):
            if tcb.sacked & TCPCB_SACKED_RETRANS and after(received_upto, tcb.ack_seq):
                tcb.sacked &= ~TCPCB_SACKED_RETRANS
                sk.retrans_out -= tcb.pcount
                if not tcb.sacked & (TCPCB_LOST | TCPCB_SACKED_ACKED):
                    tcb.sacked |= TCPCB_LOST
                    sk.lost_out += tcb.pcount
                sk.ext.TCPLostRetransmit += 1
        else:
            break


@kernel("net/ipv4/tcp_input.c", "tcp_sacktag_write_queue")
def tcp_sacktag_write_queue(sk: TcpSock, skb: SkBuff, prior_snd_una: int) -> int:
    """Mark what the SACK blocks of *skb* cover; return FLAG_* bits.

    D-SACKs (RFC 2883) are counted and otherwise ignored; blocks outside
    ``snd_una..snd_nxt`` are discarded (TCPSACKDiscard).

    Kernel: net/ipv4/tcp_input.c, tcp_sacktag_write_queue() (without the
    SACK-shifting of skbs and the block cache).
    """
    if TIMED:
        spend("tcp_sacktag_write_queue")
    tcb: TcpSkbCb = skb.cb
    blocks = _sack_blocks(skb.buf, tcb.sacked_off)
    flag = 0
    if not blocks or not sk.packets_out:
        return 0
    first_start, first_end = blocks[0]
    # tcp_check_dsack()
    if before(first_start, tcb.ack_seq) or (
        len(blocks) > 1
        and not after(first_end, blocks[1][1])
        and not before(first_start, blocks[1][0])
    ):
        sk.ext.TCPDSACKRecv += 1
        flag |= FLAG_DSACKING_ACK
        blocks = blocks[1:]
    q = sk.rtx_queue
    for start, end in blocks:
        if not after(end, start) or not before(start, sk.snd_nxt) or after(end, sk.snd_nxt):
            sk.ext.TCPSACKDiscard += 1
            continue
        if not after(end, prior_snd_una):
            sk.ext.TCPSACKDiscard += 1
            continue
        i = 0
        while i < len(q):
            s = q[i]
            scb: TcpSkbCb = s.cb
            if not after(scb.end_seq, start):
                i += 1
                continue
            if not before(scb.seq, end):
                break
            if not _match_skb_to_sack(sk, s, start, end):
                i += 1
                continue
            sacked = scb.sacked
            if not sacked & TCPCB_SACKED_ACKED:
                if sacked & TCPCB_SACKED_RETRANS:
                    scb.sacked &= ~TCPCB_SACKED_RETRANS
                    sk.retrans_out -= scb.pcount
                if sacked & TCPCB_LOST:
                    scb.sacked &= ~TCPCB_LOST
                    sk.lost_out -= scb.pcount
                elif not sacked & TCPCB_RETRANS:
                    flag |= FLAG_ORIG_SACK_ACKED
                scb.sacked |= TCPCB_SACKED_ACKED
                sk.sacked_out += scb.pcount
                sk.delivered += scb.pcount
                flag |= FLAG_DATA_SACKED
                hs = sk.highest_sack
                if hs is None or after(scb.end_seq, hs.cb.end_seq):
                    sk.highest_sack = s
                if sk.lost_skb_hint is s:
                    sk.lost_skb_hint = None
            i += 1
    if flag & FLAG_DATA_SACKED and sk.retrans_out and sk.icsk_ca_state == TCP_CA_Recovery:
        tcp_mark_lost_retrans(sk)
    return flag


# -- ACK processing ---------------------------------------------------------------------------


@kernel("net/ipv4/tcp_input.c", "tcp_clean_rtx_queue")
def tcp_clean_rtx_queue(sk: TcpSock, prior_snd_una: int) -> tuple[int, int]:
    """Free what the cumulative ACK covers; sample the RTT. Returns (flag, pkts_acked).

    Kernel: net/ipv4/tcp_input.c, tcp_clean_rtx_queue().
    """
    if TIMED:
        spend("tcp_clean_rtx_queue")
    now = sk.tcp_mstamp
    first_ackt = -1
    last_ackt = -1
    flag = 0
    pkts_acked = 0
    q = sk.rtx_queue
    snd_una = sk.snd_una
    n = 0
    freed = 0
    while n < len(q):
        skb = q[n]
        tcb: TcpSkbCb = skb.cb
        fully_acked = True
        if after(tcb.end_seq, snd_una):
            if tcb.pcount == 1 or not after(snd_una, tcb.seq):
                break
            # tcp_tso_acked(): trim the acknowledged whole segments
            packets = tcb.pcount
            tcp_trim_head(sk, skb, (snd_una - tcb.seq) & M32)
            acked_pcount = packets - tcb.pcount
            if not acked_pcount:
                break
            sk.packets_out -= acked_pcount
            if tcb.sacked & TCPCB_SACKED_RETRANS:
                sk.retrans_out -= acked_pcount
            if tcb.sacked & TCPCB_LOST:
                sk.lost_out -= acked_pcount
            fully_acked = False
        else:
            acked_pcount = tcb.pcount
        sacked = tcb.sacked
        if sacked & TCPCB_RETRANS:
            if sacked & TCPCB_SACKED_RETRANS and fully_acked:
                sk.retrans_out -= acked_pcount
            flag |= FLAG_RETRANS_DATA_ACKED
        elif not sacked & TCPCB_SACKED_ACKED:
            last_ackt = tcb.mstamp
            if first_ackt < 0:
                first_ackt = last_ackt
        if fully_acked:
            if sacked & TCPCB_SACKED_ACKED:
                sk.sacked_out -= acked_pcount
            if sacked & TCPCB_LOST:
                sk.lost_out -= acked_pcount
            sk.packets_out -= acked_pcount
        pkts_acked += acked_pcount
        if not sacked & TCPCB_SACKED_ACKED:
            sk.delivered += acked_pcount
        if tcb.tcp_flags & TCPHDR_SYN:
            flag |= FLAG_SYN_ACKED
            sk.retrans_stamp = 0
        else:
            flag |= FLAG_DATA_ACKED
        if not fully_acked:
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
        sk.sk_wmem_queued -= freed
        if sk.highest_sack is None and q:
            sk.highest_sack = q[0]
    if not q:
        tcp_chrono_stop(sk, TCP_CHRONO_BUSY)  # everything sent was acknowledged
    if flag & FLAG_ACKED:
        flag |= FLAG_SET_XMIT_TIMER
    if not after(sk.snd_una, sk.high_seq) and flag & FLAG_RETRANS_DATA_ACKED:
        pass
    seq_rtt_us = now - first_ackt if first_ackt >= 0 else -1
    ca_rtt_us = now - last_ackt if last_ackt >= 0 else -1
    if flag & FLAG_ACKED or seq_rtt_us >= 0:
        tcp_ack_update_rtt(sk, flag, seq_rtt_us, ca_rtt_us)
    if flag & FLAG_ACKED:
        if not tcp_is_sack(sk):
            tcp_remove_reno_sacks(sk, pkts_acked)
        sk.icsk_ca_ops.pkts_acked(sk, pkts_acked, ca_rtt_us)
    if sk.sacked_out < 0:
        sk.sacked_out = 0
    if sk.lost_out < 0:
        sk.lost_out = 0
    if sk.retrans_out < 0:
        sk.retrans_out = 0
    return flag, pkts_acked


@kernel("net/ipv4/tcp_input.c", "tcp_may_update_window")
def tcp_may_update_window(sk: TcpSock, ack: int, ack_seq: int, nwin: int) -> bool:
    """Kernel: net/ipv4/tcp_input.c, tcp_may_update_window()."""
    return (
        after(ack, sk.snd_una)
        or after(ack_seq, sk.snd_wl1)
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


@kernel("net/ipv4/tcp_input.c", "__tcp_oow_rate_limited")
def tcp_oow_rate_limited(sk: Any, mib: str) -> bool:
    """At most one out-of-window ACK per ``tcp_invalid_ratelimit`` ms.

    Kernel: net/ipv4/tcp_input.c, __tcp_oow_rate_limited().
    """
    tcp = sk.tcp
    now = sk.net.clock.jiffies
    last = sk.last_oow_ack_time
    if last:
        elapsed = now - last
        if 0 <= elapsed < tcp.msecs_to_jiffies(tcp.sysctl_tcp_invalid_ratelimit):
            setattr(sk.ext if hasattr(sk, "ext") else tcp.ext, mib, getattr(tcp.ext, mib) + 1)
            return True
    sk.last_oow_ack_time = now or 1
    return False


@kernel("net/ipv4/tcp_input.c", "tcp_ack")
def tcp_ack(sk: TcpSock, skb: SkBuff, flag: int) -> int:
    """Process the ACK field of an incoming segment. >0: acceptable, 0: old, <0: invalid.

    Kernel: net/ipv4/tcp_input.c, tcp_ack().
    """
    if TIMED:
        spend("tcp_ack")
    tcb: TcpSkbCb = skb.cb
    prior_snd_una = sk.snd_una
    ack = tcb.ack_seq
    ack_seq = tcb.seq
    prior_packets = sk.packets_out
    prior_delivered = sk.delivered
    prior_lost = sk.lost_out
    sk.tcp_mstamp = sk.tcp.tcp_clock_us()
    if before(ack, prior_snd_una):
        if before(ack, (prior_snd_una - sk.max_window) & M32):
            if not flag & FLAG_NO_CHALLENGE_ACK:
                tcp_send_challenge_ack(sk)
            return -1
        # old ACK: SACK information may still be useful
        if tcb.sacked_off and tcp_is_sack(sk):
            tcp_sacktag_write_queue(sk, skb, prior_snd_una)
        return 0
    if after(ack, sk.snd_nxt):
        return -1
    if after(ack, prior_snd_una):
        flag |= FLAG_SND_UNA_ADVANCED
        sk.icsk_retransmits = 0
    if flag & FLAG_UPDATE_TS_RECENT and sk.saw_tstamp and not after(tcb.seq, sk.rcv_wup):
        sk.ts_recent = sk.rcv_tsval  # tcp_replace_ts_recent()
        sk.ts_recent_stamp = sk.tcp.seconds()
    if tcb.seq != tcb.end_seq:
        flag |= FLAG_DATA
    else:
        sk.ext.TCPPureAcks += 1
    flag |= tcp_ack_update_window(sk, skb, ack, ack_seq)
    if tcb.sacked_off and tcp_is_sack(sk):
        flag |= tcp_sacktag_write_queue(sk, skb, prior_snd_una)
    sk.rcv_tstamp = sk.net.clock.jiffies
    sk.icsk_probes_out = 0
    if not prior_packets:
        if sk.write_queue:
            tcp_ack_probe(sk)
        return 1
    f, pkts_acked = tcp_clean_rtx_queue(sk, prior_snd_una)
    flag |= f
    if between(sk.snd_up, prior_snd_una, sk.snd_una):
        sk.snd_up = sk.snd_una  # tcp_clean_rtx_queue(): urgent mode is over
    if sk.tlp_high_seq and not before(ack, sk.tlp_high_seq):
        sk.tlp_high_seq = 0  # tcp_process_tlp_ack(), simplified
    delivered = sk.delivered - prior_delivered
    is_dupack = not flag & (FLAG_SND_UNA_ADVANCED | FLAG_NOT_DUP)
    rexmit = False
    if not flag & FLAG_NOT_DUP or flag & FLAG_CA_ALERT or sk.icsk_ca_state != TCP_CA_Open:
        rexmit = tcp_fastretrans_alert(sk, prior_snd_una, is_dupack, flag)
    if not tcp_is_sack(sk) and flag & FLAG_SND_UNA_ADVANCED and sk.icsk_ca_state < TCP_CA_CWR:
        sk.sacked_out = 0  # tcp_reset_reno_sack(): dupacks ended
    # tcp_cong_control()
    if tcp_in_cwnd_reduction(sk):
        tcp_cwnd_reduction(sk, delivered, max(sk.lost_out - prior_lost, 0), flag)
    elif flag & FLAG_DATA_ACKED or (sk.reordering > sk.tcp.sysctl_tcp_reordering and
                                    flag & FLAG_FORWARD_PROGRESS):  # fmt: skip
        sk.icsk_ca_ops.cong_avoid(sk, ack, delivered)
    if flag & FLAG_SET_XMIT_TIMER:
        tcp_rearm_rto(sk)
        if sk.icsk_ca_state in (TCP_CA_Open, TCP_CA_CWR):
            tcp_schedule_loss_probe(sk, True)
    if rexmit or (sk.lost_out > sk.retrans_out and sk.icsk_ca_state >= TCP_CA_Recovery):
        tcp_xmit_retransmit_queue(sk)
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
        if sk.icsk_pending == ICSK_TIME_PROBE0:
            sk.icsk_pending = 0
            sk.retransmit_timer.delete()
    else:
        when = tcp_probe0_when(sk, sk.tcp.TCP_RTO_MAX)
        inet_csk_reset_xmit_timer(sk, ICSK_TIME_PROBE0, when, sk.tcp.TCP_RTO_MAX)


@kernel("net/ipv4/tcp_input.c", "tcp_enter_recovery")
def tcp_enter_recovery(sk: TcpSock) -> None:
    """Kernel: net/ipv4/tcp_input.c, tcp_enter_recovery()."""
    if tcp_is_sack(sk):
        sk.ext.TCPSackRecovery += 1
    else:
        sk.ext.TCPRenoRecovery += 1
    sk.prior_ssthresh = 0
    sk.undo_marker = sk.snd_una
    sk.undo_retrans = sk.retrans_out or -1
    if not tcp_in_cwnd_reduction(sk):
        sk.prior_ssthresh = tcp_current_ssthresh(sk)
        tcp_init_cwnd_reduction(sk)
    tcp_set_ca_state(sk, TCP_CA_Recovery)


@kernel("net/ipv4/tcp_input.c", "tcp_time_to_recover")
def tcp_time_to_recover(sk: TcpSock) -> bool:
    """Enough duplicate ACKs / SACKed data to start fast recovery?

    dupthresh is ``reordering`` counted FACK's way (segments up to the highest
    SACK) or Reno's (dupacks + 1); with fewer than four segments out and
    nothing new to send, early retransmit (RFC 5827) lowers it.

    Kernel: net/ipv4/tcp_input.c, tcp_time_to_recover() (4.x, tcp_fack=1).
    """
    if sk.lost_out:
        return True
    heuristics = tcp_fackets_out(sk) if tcp_is_sack(sk) else sk.sacked_out + 1
    if heuristics > sk.reordering:
        return True
    # early retransmit (tcp_early_retrans): all but one of a small flight acknowledged
    return bool(
        sk.tcp.sysctl_tcp_early_retrans
        and not sk.retrans_out
        and sk.sacked_out
        and sk.sacked_out + 1 >= sk.packets_out
        and sk.packets_out < 4
        and not _may_send_now(sk)
    )


def _may_send_now(sk: TcpSock) -> bool:
    """New data can go out now (tcp_may_send_now, without Nagle's subtleties)."""
    wq = sk.write_queue
    if not wq:
        return False
    return tcp_packets_in_flight(sk) < sk.snd_cwnd and tcp_snd_wnd_test(
        sk, wq[0], tcp_current_mss(sk)
    )


@kernel("net/ipv4/tcp_input.c", "tcp_try_to_open")
def tcp_try_to_open(sk: TcpSock, flag: int) -> None:
    """Kernel: net/ipv4/tcp_input.c, tcp_try_to_open()."""
    if not tcp_is_sack(sk):
        pass
    if flag & FLAG_ECE:
        tcp_enter_cwr(sk)
    if sk.icsk_ca_state != TCP_CA_CWR:
        state = TCP_CA_Open
        if tcp_left_out(sk) or sk.retrans_out:
            state = TCP_CA_Disorder
        if sk.icsk_ca_state != state:
            tcp_set_ca_state(sk, state)
            sk.high_seq = sk.snd_nxt


@kernel("net/ipv4/tcp_input.c", "tcp_fastretrans_alert")
def tcp_fastretrans_alert(sk: TcpSock, prior_snd_una: int, is_dupack: bool, flag: int) -> bool:
    """The loss-recovery state machine. Returns True if lost segments should go out now.

    Kernel: net/ipv4/tcp_input.c, tcp_fastretrans_alert() (NewReno and SACK
    recovery; no RACK, no F-RTO, no undo).
    """
    if TIMED:
        spend("tcp_fastretrans_alert")
    if not sk.packets_out and sk.sacked_out:
        sk.sacked_out = 0
    state = sk.icsk_ca_state
    do_lost = False
    fast_rexmit = False
    if state != TCP_CA_Open and not before(sk.snd_una, sk.high_seq) and state != TCP_CA_Loss:
        if state == TCP_CA_CWR:
            tcp_end_cwnd_reduction(sk)
            tcp_set_ca_state(sk, TCP_CA_Open)
        elif state == TCP_CA_Recovery:
            if not tcp_is_sack(sk):
                sk.sacked_out = 0
            tcp_end_cwnd_reduction(sk)
            tcp_set_ca_state(sk, TCP_CA_Open)
        elif state == TCP_CA_Disorder:
            tcp_set_ca_state(sk, TCP_CA_Open)
        state = sk.icsk_ca_state
    if state == TCP_CA_Recovery:
        if not flag & FLAG_SND_UNA_ADVANCED:
            if not tcp_is_sack(sk) and is_dupack:
                tcp_add_reno_sack(sk)
        else:
            # a partial ACK: NewReno retransmits the next hole at once
            do_lost = not tcp_is_sack(sk) or tcp_fackets_out(sk) > sk.reordering
            if not tcp_is_sack(sk):
                fast_rexmit = True
        if tcp_is_sack(sk):
            do_lost = True
    elif state == TCP_CA_Loss:
        return tcp_process_loss(sk, flag, is_dupack)
    else:
        if not tcp_is_sack(sk):
            if flag & FLAG_SND_UNA_ADVANCED:
                sk.sacked_out = 0
            if is_dupack:
                tcp_add_reno_sack(sk)
        if not tcp_time_to_recover(sk):
            tcp_try_to_open(sk, flag)
            return False
        tcp_enter_recovery(sk)
        fast_rexmit = True
        do_lost = True
    if do_lost:
        tcp_update_scoreboard(sk, fast_rexmit)
    return True


@kernel("net/ipv4/tcp_input.c", "tcp_process_loss")
def tcp_process_loss(sk: TcpSock, flag: int, is_dupack: bool) -> bool:
    """After an RTO: leave Loss once everything sent before it is acknowledged.

    Kernel: net/ipv4/tcp_input.c, tcp_process_loss() (no F-RTO, no undo).
    """
    if not before(sk.snd_una, sk.high_seq):
        tcp_set_ca_state(sk, TCP_CA_Open)
        sk.is_sack_reneg = False
        return False
    if not tcp_is_sack(sk):
        if after(sk.snd_nxt, sk.high_seq) and is_dupack:
            tcp_add_reno_sack(sk)
        elif flag & FLAG_SND_UNA_ADVANCED:
            sk.sacked_out = 0
    return True


@kernel("net/ipv4/tcp_input.c", "tcp_enter_loss", "tcp_timeout_mark_lost")
def tcp_enter_loss(sk: TcpSock) -> None:
    """The retransmission timer fired: everything outstanding is presumed lost.

    Kernel: net/ipv4/tcp_input.c, tcp_enter_loss() / tcp_timeout_mark_lost().
    """
    q = sk.rtx_queue
    is_reneg = bool(q) and bool(q[0].cb.sacked & TCPCB_SACKED_ACKED)
    if is_reneg:
        sk.ext.TCPSACKReneging += 1
        sk.sacked_out = 0
        sk.is_sack_reneg = True
    elif not tcp_is_sack(sk):
        sk.sacked_out = 0
    for skb in q:
        tcb: TcpSkbCb = skb.cb
        if is_reneg:
            tcb.sacked &= ~TCPCB_SACKED_ACKED
        tcp_mark_skb_lost(sk, skb)
    sk.retransmit_skb_hint = None
    sk.lost_skb_hint = None
    state = sk.icsk_ca_state
    if (
        state <= TCP_CA_Disorder
        or not before(sk.snd_una, sk.high_seq)
        or (state == TCP_CA_Loss and not sk.icsk_retransmits)
    ):
        sk.prior_ssthresh = tcp_current_ssthresh(sk)
        sk.prior_cwnd = sk.snd_cwnd
        sk.snd_ssthresh = sk.icsk_ca_ops.ssthresh(sk)
        sk.icsk_ca_ops.cwnd_event(sk, CA_EVENT_LOSS)
    sk.snd_cwnd = tcp_packets_in_flight(sk) + 1
    sk.snd_cwnd_cnt = 0
    sk.snd_cwnd_stamp = sk.net.clock.jiffies
    sk.undo_marker = 0
    sk.reordering = min(sk.reordering, sk.tcp.sysctl_tcp_reordering)
    tcp_set_ca_state(sk, TCP_CA_Loss)
    sk.high_seq = sk.snd_nxt


@kernel("net/ipv4/tcp_input.c", "tcp_simple_retransmit")
def tcp_simple_retransmit(sk: TcpSock) -> None:
    """The path MTU dropped: resend what no longer fits, without a cwnd cut.

    Kernel: net/ipv4/tcp_input.c, tcp_simple_retransmit().
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
    """Kernel: net/ipv4/tcp_input.c, tcp_incr_quickack()."""
    rcv_mss = max(sk.icsk_ack_rcv_mss, 1)
    quickacks = sk.rcv_wnd // (2 * rcv_mss)
    quickacks = max(quickacks, 2)
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
    rcv_ssthresh follow the buffer's new worth (tcp_set_window_clamp).
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
                if sk.window_clamp < sk.rcv_ssthresh:
                    sk.rcv_ssthresh = sk.window_clamp
        sk.icsk_ack_rcv_mss = min(length, sk.advmss)
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

    Kernel: net/ipv4/tcp_input.c, tcp_rcv_rtt_measure().
    """
    now = sk.tcp.tcp_clock_us()
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


@kernel("net/ipv4/tcp_input.c", "tcp_try_rmem_schedule", "tcp_prune_queue")
def tcp_try_rmem_schedule(sk: TcpSock, skb: SkBuff) -> bool:
    """Room in the receive buffer? Prune the out-of-order queue if not.

    Kernel: net/ipv4/tcp_input.c, tcp_try_rmem_schedule() / tcp_prune_queue()
    (collapsing is not done: skbs are already linear).
    """
    if sk.sk_rmem_alloc + skb.truesize <= sk.sk_rcvbuf:
        return True
    sk.ext.PruneCalled += 1
    if sk.out_of_order_queue:
        for s in sk.out_of_order_queue:
            sk.sk_rmem_alloc -= s.truesize
            consume_skb(s)
        sk.out_of_order_queue.clear()
        sk.ext.OfoPruned += 1
        sk.selective_acks = []
        sk.num_sacks = 0
    if sk.sk_rmem_alloc + skb.truesize <= sk.sk_rcvbuf:
        return True
    sk.ext.RcvPruned += 1
    return False


def _queue_rcv(sk: TcpSock, skb: SkBuff) -> None:
    tcb: TcpSkbCb = skb.cb
    skb.sk = None
    sk.receive_queue.append(skb)
    sk.sk_rmem_alloc += skb.truesize
    sk.bytes_received += (tcb.end_seq - sk.rcv_nxt) & M32
    sk.rcv_nxt = tcb.end_seq


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
    sk.data_segs_in += max(skb.gso_segs, 1)
    if tcb.seq == sk.rcv_nxt:
        if tcp_receive_window(sk) == 0:
            sk.ext.TCPZeroWindowDrop += 1
            _out_of_window(sk, skb, DropReason.TCP_ZEROWINDOW)
            return
        if not tcp_try_rmem_schedule(sk, skb):
            # no memory: the next ACK offers a zero window (ICSK_ACK_NOMEM)
            sk.icsk_ack_pending |= ICSK_ACK_NOMEM | ICSK_ACK_NOW
            inet_csk_schedule_ack(sk)
            if not sk.dead:
                sk.sk_data_ready()
            if sk.receive_queue and skb.tail > skb.data:
                sk.ext.TCPRcvQDrop += 1
                sk.sk_drops += 1
                kfree_skb(skb, DropReason.PROTO_MEM)
                return
            # an empty queue takes it anyway (sk_forced_mem_schedule)
        fin = tcb.tcp_flags & TCPHDR_FIN
        _queue_rcv(sk, skb)
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
        if not sk.dead:
            sk.sk_data_ready()
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
        if not tcp_try_rmem_schedule(sk, skb):
            kfree_skb(skb, DropReason.SOCKET_RCVBUFF)
            return
        fin = tcb.tcp_flags & TCPHDR_FIN
        _queue_rcv(sk, skb)
        tcp_event_data_recv(sk, skb)
        if fin:
            tcp_fin(sk)
        if sk.out_of_order_queue:
            tcp_ofo_queue(sk)
        if sk.num_sacks:
            tcp_sack_remove(sk)
        if not sk.dead:
            sk.sk_data_ready()
        return
    tcp_data_queue_ofo(sk, skb)


def _out_of_window(sk: TcpSock, skb: SkBuff, reason: DropReason) -> None:
    """The out_of_window label of tcp_data_queue(): ACK at once, drop for *reason*."""
    tcp_enter_quickack_mode(sk, TCP_MAX_QUICKACKS)
    inet_csk_schedule_ack(sk)
    kfree_skb(skb, reason)


@kernel("net/ipv4/tcp_input.c", "tcp_data_queue_ofo")
def tcp_data_queue_ofo(sk: TcpSock, skb: SkBuff) -> None:
    """Keep a segment that arrived ahead of a hole; SACK it.

    Kernel: net/ipv4/tcp_input.c, tcp_data_queue_ofo() (no coalescing).
    """
    if TIMED:
        spend("tcp_data_queue_ofo")
    tcb: TcpSkbCb = skb.cb
    if not tcp_try_rmem_schedule(sk, skb):
        sk.ext.TCPOFODrop += 1
        kfree_skb(skb, DropReason.SOCKET_RCVBUFF)
        return
    tcp_measure_rcv_mss(sk, skb)  # 6.16+: ofo segments tune rcv_mss and scaling_ratio too
    sk.rcv_ooopack += max(skb.gso_segs, 1)
    sk.ext.TCPOFOQueue += 1
    sk.icsk_ack_pending |= ICSK_ACK_NOW  # tcp_data_queue_ofo(): ACK at once (dupack/SACK)
    inet_csk_schedule_ack(sk)
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
            kfree_skb(skb, DropReason.TCP_OFOMERGE)
            return
        if after(prev.end_seq, seq):
            tcp_dsack_set(sk, seq, prev.end_seq)
    # later skbs this one covers are dropped (the first duplicate range stays reported)
    while i < len(q):
        nxt: TcpSkbCb = q[i].cb
        if not after(end_seq, nxt.seq):
            break
        if before(end_seq, nxt.end_seq):
            tcp_dsack_extend(sk, nxt.seq, end_seq)
            break
        victim = q.pop(i)
        sk.sk_rmem_alloc -= victim.truesize
        tcp_dsack_extend(sk, nxt.seq, nxt.end_seq)
        sk.ext.TCPOFOMerge += 1
        kfree_skb(victim, DropReason.TCP_OFOMERGE)
    skb.sk = None
    q.insert(i, skb)
    sk.sk_rmem_alloc += skb.truesize
    tcp_sack_new_ofo_skb(sk, seq, end_seq)
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
            sk.sk_rmem_alloc -= skb.truesize
            kfree_skb(skb, DropReason.TCP_OFO_DROP)
            continue
        sk.sk_rmem_alloc -= skb.truesize  # _queue_rcv charges it again
        fin = tcb.tcp_flags & TCPHDR_FIN
        _queue_rcv(sk, skb)
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
        from netstack.tcp.minisocks import tcp_time_wait

        tcp_time_wait(sk, TCP_TIME_WAIT, 0)
    for s in sk.out_of_order_queue:
        sk.sk_rmem_alloc -= s.truesize
        consume_skb(s)
    sk.out_of_order_queue.clear()
    sk.selective_acks = []
    sk.num_sacks = 0
    if not sk.dead:
        sk_state_change(sk)


@kernel("net/ipv4/tcp_input.c", "__tcp_ack_snd_check")
def __tcp_ack_snd_check(sk: TcpSock, ofo_possible: bool) -> None:
    """ACK now or later. Kernel: net/ipv4/tcp_input.c, __tcp_ack_snd_check()."""
    if TIMED:
        spend("__tcp_ack_snd_check")
    if (
        (
            ((sk.rcv_nxt - sk.rcv_wup) & M32) > sk.icsk_ack_rcv_mss
            and __tcp_select_window(sk) >= sk.rcv_wnd
        )
        or tcp_in_quickack_mode(sk)
        or sk.icsk_ack_pending & ICSK_ACK_NOW
        or (ofo_possible and sk.out_of_order_queue)
    ):
        tcp_send_ack(sk)
        return
    tcp_send_delayed_ack(sk)


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


@kernel("tcp_rcv_established")
def tcp_rcv_established(sk: TcpSock, skb: SkBuff) -> None:
    """A segment for an established connection. Kernel: tcp_rcv_established()."""
    if TIMED:
        spend("tcp_rcv_established")
    tcb: TcpSkbCb = skb.cb
    tcp_parse_options(skb.buf, skb.transport_header, sk, True, tcb)
    sk.segs_in += max(skb.gso_segs, 1)
    if not tcp_validate_incoming(sk, skb):
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
    tcp_parse_options(buf, th, rx, False)
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


@kernel("net/ipv4/tcp_input.c", "tcp_rcv_state_process")
def tcp_rcv_state_process(sk: TcpSock, skb: SkBuff) -> int:
    """Every state but ESTABLISHED (and TIME_WAIT, handled by its minisock).

    Returns 0 when the skb was consumed, else the reason the caller answers
    with a RST and then drops the skb for (a ``DropReason``; 1, the
    kernel's SKB_CONSUMED, from SYN_SENT: the skb is consumed after the RST).

    Kernel: net/ipv4/tcp_input.c, tcp_rcv_state_process().
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
        return tcp_rcv_synsent_state_process(sk, skb)
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
        if sk.sock_flag_keepopen:
            inet_csk_reset_keepalive_timer(sk, keepalive_time_when(sk))
        if not sk.dead:
            sk_state_change(sk)
    elif state == TCP_FIN_WAIT1:
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
                    from netstack.tcp.minisocks import tcp_time_wait

                    tcp_time_wait(sk, TCP_FIN_WAIT2, tmo)
                    consume_skb(skb)
                    return 0
    elif state == TCP_CLOSING:
        if sk.snd_una == sk.write_seq:
            from netstack.tcp.minisocks import tcp_time_wait

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
def tcp_conn_request(sk: TcpSock, skb: SkBuff, af_ops: Any = None) -> int:
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
    ops: Any = af_ops if af_ops is not None else sk.af_ops
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
    tcp_parse_options(buf, th, rx, False)
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
    if not want_cookie:  # inet_csk_reqsk_queue_hash_add()
        key = (ops.family, req.loc_addr, req.num, req.rmt_addr, req.rmt_port)
        tcp.hashinfo.ehash[key] = req
        req.hashed = True
        req.ehash_key = key
        sk.syn_queue_young += 1  # inet_csk_reqsk_queue_added() -> reqsk_queue_added()
        sk.syn_queue_len += 1
    req.snt_synack = tcp.tcp_clock_us()
    ops.send_synack(sk, req, rt)
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
        from netstack.tcp.minisocks import inet_csk_reqsk_queue_drop

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
        from netstack.tcp.minisocks import inet_csk_reqsk_queue_drop

        inet_csk_reqsk_queue_drop(listener, req)
        return
    ops: Any = req.af_specific
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


def tcp_err_report(sk: TcpSock, err: int, fatal: bool) -> None:
    """Hand an ICMP error (an errno) to the socket: a fatal one aborts a
    connection still being set up; otherwise it is reported at once only with
    IP_RECVERR/IPV6_RECVERR, else kept as the soft error a timeout returns.

    The tail tcp_v4_err() and tcp_v6_err() share.
    """
    if sk.state in (TCP_SYN_SENT, TCP_SYN_RECV):
        if fatal:
            sk.sk_err = err
            sk.sk_error_report()
            tcp_done(sk)
        else:
            sk.sk_err_soft = err
        return
    if sk.recverr:
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
        from netstack.tcp.minisocks import inet_csk_reqsk_queue_drop

        inet_csk_reqsk_queue_drop(listener, req)
        listener.ext.ListenDrops += 1  # tcp_listendrop()


@kernel("net/ipv4/tcp_ipv4.c", "tcp_v4_err")
def tcp_v4_err_state(sk: TcpSock, seq: int, icmp_type: int, code: int, info: int) -> None:
    """Apply an ICMP error to a connection. Kernel: net/ipv4/tcp_ipv4.c, tcp_v4_err()."""
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
    tcp_err_report(sk, err, fatal)
