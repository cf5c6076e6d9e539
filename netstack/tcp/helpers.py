"""The small TCP helpers both directions use (``include/net/tcp.h`` and friends).

Theory of operation: ``tcp_input.c`` and ``tcp_output.c`` call each other in
the kernel, through the inline helpers of ``include/net/tcp.h``,
``include/net/sock.h`` and ``include/net/inet_connection_sock.h`` and a few
``tcp_input.c`` functions ``tcp_output.c`` calls back into (``tcp_enter_cwr``,
``tcp_rearm_rto``, ``tcp_check_space``, ``tcp_initialize_rcv_mss``). Those live
here, below both ``input`` and ``output``, so that neither module needs a
function-level or bottom-of-module import of the other: ``output`` imports
nothing of ``input`` (the no-sibling-cycles rule, docs/design.md). The RTT
estimator (``tcp_ack_update_rtt`` with the ``FLAG_*`` bits ``tcp_ack`` passes
it, ``tcp_rtt_estimator``, ``tcp_set_rto``) and ``__tcp_oow_rate_limited``
live here for the same reason: the minisocks take the handshake's RTT sample
(``tcp_synack_rtt_meas``) and rate-limit their out-of-window ACKs without
importing ``input``. They read and write the socket only; nothing here sends
a segment.

Kernel: include/net/tcp.h, include/net/sock.h, include/net/inet_connection_sock.h,
net/ipv4/tcp_input.c, net/core/stream.c.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from netstack.core.sock import SOCK_MIN_RCVBUF, SOCK_SNDBUF_LOCK
from netstack.core.win_minmax import minmax_get, minmax_running_min
from netstack.sites import kernel
from netstack.tcp.sock import (
    ICSK_ACK_TIMER,
    ICSK_TIME_DACK,
    ICSK_TIME_LOSS_PROBE,
    ICSK_TIME_PROBE0,
    ICSK_TIME_REO_TIMEOUT,
    ICSK_TIME_RETRANS,
    TCP_CA_CWR,
    TCP_INIT_CWND,
    TCP_MSS_DEFAULT,
    TCP_CA_Recovery,
    after,
)

if TYPE_CHECKING:
    from netstack.tcp.sock import TcpSock

M32: Final = 0xFFFFFFFF
PAGE_SIZE: Final = 4096
U32: Final = 0xFFFFFFFF

__all__ = [
    "inet_csk_reset_xmit_timer",
    "sk_stream_is_writeable",
    "sk_stream_memory_free",
    "sk_stream_min_wspace",
    "sk_stream_write_space",
    "sk_stream_wspace",
    "sk_wmem_charge",
    "sk_wmem_uncharge",
    "tcp_ack_update_rtt",
    "tcp_check_space",
    "tcp_chrono_start",
    "tcp_chrono_stop",
    "tcp_current_ssthresh",
    "tcp_enter_cwr",
    "tcp_in_cwnd_reduction",
    "tcp_init_cwnd",
    "tcp_init_cwnd_reduction",
    "tcp_initialize_rcv_mss",
    "tcp_min_rtt",
    "tcp_oow_rate_limited",
    "tcp_packets_in_flight",
    "tcp_rearm_rto",
    "tcp_rto_delta",
    "tcp_rto_min_us",
    "tcp_rtt_estimator",
    "tcp_set_ca_state",
    "tcp_set_rto",
    "tcp_set_window_clamp",
    "tcp_should_expand_sndbuf",
    "tcp_sndbuf_expand",
    "tcp_update_rtt_min",
]


@kernel("tcp_packets_in_flight")
def tcp_packets_in_flight(sk: TcpSock) -> int:
    """packets_out - left_out + retrans_out. Kernel: tcp_packets_in_flight().

    Written out on the per-segment path (keep those in step with it):
    tcp_cwnd_test, tcp_write_xmit, tcp_event_data_sent, tcp_should_expand_sndbuf.
    """
    return sk.packets_out - (sk.sacked_out + sk.lost_out) + sk.retrans_out


@kernel("tcp_in_cwnd_reduction")
def tcp_in_cwnd_reduction(sk: TcpSock) -> bool:
    """Kernel: tcp_in_cwnd_reduction()."""
    return sk.icsk_ca_state in (TCP_CA_CWR, TCP_CA_Recovery)


@kernel("include/net/inet_connection_sock.h", "inet_csk_reset_xmit_timer")
def inet_csk_reset_xmit_timer(sk: TcpSock, what: int, when: int, max_when: int) -> None:
    """Arm the retransmit timer (RTO, window probe, TLP) or the delayed ACK.

    Kernel: include/net/inet_connection_sock.h, inet_csk_reset_xmit_timer().
    """
    if when > max_when:
        when = max_when
    expires = sk.net.clock.jiffies + when
    if what in (ICSK_TIME_RETRANS, ICSK_TIME_PROBE0, ICSK_TIME_LOSS_PROBE, ICSK_TIME_REO_TIMEOUT):
        sk.icsk_pending = what
        sk.icsk_timeout = expires
        sk.retransmit_timer.mod(expires)
    elif what == ICSK_TIME_DACK:
        sk.icsk_ack_pending |= ICSK_ACK_TIMER
        sk.icsk_ack_timeout = expires
        sk.delack_timer.mod(expires)


@kernel("tcp_rto_delta_us")
def tcp_rto_delta(sk: TcpSock) -> int:
    """Jiffies until the RTO of the head would fire. Kernel: tcp_rto_delta_us()."""
    if not sk.rtx_queue:
        return sk.icsk_rto
    rto_time_stamp_us = sk.rtx_queue[0].cb.mstamp + sk.tcp.jiffies_to_usecs(sk.icsk_rto)
    delta_us = rto_time_stamp_us - sk.tcp_mstamp
    return sk.tcp.usecs_to_jiffies(delta_us) if delta_us > 0 else delta_us


@kernel("include/net/tcp.h", "tcp_init_cwnd")
def tcp_init_cwnd(sk: TcpSock) -> int:
    """Kernel: include/net/tcp.h, tcp_init_cwnd() (no route metric: TCP_INIT_CWND)."""
    return min(TCP_INIT_CWND, sk.snd_cwnd_clamp)


@kernel("include/net/tcp.h", "tcp_current_ssthresh")
def tcp_current_ssthresh(sk: TcpSock) -> int:
    """Kernel: include/net/tcp.h, tcp_current_ssthresh()."""
    if tcp_in_cwnd_reduction(sk):
        return sk.snd_ssthresh
    return max(sk.snd_ssthresh, (sk.snd_cwnd >> 1) + (sk.snd_cwnd >> 2))


@kernel("net/ipv4/tcp_input.c", "tcp_set_ca_state")
def tcp_set_ca_state(sk: TcpSock, state: int) -> None:
    """Kernel: net/ipv4/tcp_input.c, tcp_set_ca_state()."""
    sk.icsk_ca_ops.set_state(sk, state)
    sk.icsk_ca_state = state


@kernel("net/ipv4/tcp_input.c", "tcp_init_cwnd_reduction")
def tcp_init_cwnd_reduction(sk: TcpSock) -> None:
    """Kernel: net/ipv4/tcp_input.c, tcp_init_cwnd_reduction()."""
    sk.high_seq = sk.snd_nxt
    sk.tlp_high_seq = 0
    sk.snd_cwnd_cnt = 0
    sk.prior_cwnd = sk.snd_cwnd
    sk.prr_delivered = 0
    sk.prr_out = 0
    sk.snd_ssthresh = sk.icsk_ca_ops.ssthresh(sk)


@kernel("tcp_enter_cwr")
def tcp_enter_cwr(sk: TcpSock) -> None:
    """Reduce cwnd for local congestion or ECN. Kernel: tcp_enter_cwr()."""
    sk.prior_ssthresh = 0
    if sk.icsk_ca_state < TCP_CA_CWR:
        sk.undo_marker = 0
        tcp_init_cwnd_reduction(sk)
        tcp_set_ca_state(sk, TCP_CA_CWR)


@kernel("tcp_initialize_rcv_mss")
def tcp_initialize_rcv_mss(sk: TcpSock) -> None:
    """A first guess of the peer's segment size. Kernel: tcp_initialize_rcv_mss()."""
    hint = min(sk.advmss, sk.mss_cache)
    hint = min(hint, sk.rcv_wnd // 2)
    hint = min(hint, TCP_MSS_DEFAULT)
    sk.icsk_ack_rcv_mss = max(hint, 88)


@kernel("net/ipv4/tcp_input.c", "tcp_rearm_rto")
def tcp_rearm_rto(sk: TcpSock) -> None:
    """Arm the RTO for the head of the retransmit queue, or stop it.

    Kernel: net/ipv4/tcp_input.c, tcp_rearm_rto().
    """
    if not sk.packets_out:
        sk.icsk_pending = 0
        sk.retransmit_timer.delete()
        return
    rto = sk.icsk_rto
    if sk.icsk_pending in (ICSK_TIME_REO_TIMEOUT, ICSK_TIME_LOSS_PROBE):
        delta = tcp_rto_delta(sk)
        rto = max(delta, 1)
    inet_csk_reset_xmit_timer(sk, ICSK_TIME_RETRANS, rto, sk.tcp.TCP_RTO_MAX)


@kernel("include/net/sock.h", "sk_wmem_queued_add", "sk_wmem_schedule", "sk_mem_charge")
def sk_wmem_charge(sk: TcpSock, size: int) -> None:
    """Queue *size* bytes of send memory, taken from ``sk_forward_alloc``.

    The send and receive sides share the socket's forward allocation: what is
    missing is reserved in whole pages (``sk_wmem_schedule`` /
    ``sk_forced_mem_schedule``: no global limit is modelled, so both succeed
    alike), then charged. What a sender keeps reserved this way is what lets
    the data it is answered with take the receive fast path
    (``tcp_rcv_established``: ``skb->truesize <= sk->sk_forward_alloc``).
    Kernel: include/net/sock.h, sk_wmem_queued_add() / sk_wmem_schedule() / sk_mem_charge().
    """
    sk.sk_wmem_queued += size
    fwd = sk.sk_forward_alloc - size
    if fwd < 0:  # __sk_mem_schedule(): whole pages
        fwd += (-fwd + PAGE_SIZE - 1) & -PAGE_SIZE
    sk.sk_forward_alloc = fwd


@kernel("include/net/sock.h", "sk_wmem_queued_add", "sk_mem_uncharge", "sk_mem_reclaim")
def sk_wmem_uncharge(sk: TcpSock, size: int) -> None:
    """Free *size* bytes of send memory: back to ``sk_forward_alloc``, whole pages
    beyond it to the protocol (6.x: ``sk_mem_uncharge`` reclaims at once).

    Kernel: include/net/sock.h, sk_wmem_queued_add() / sk_mem_uncharge() / sk_mem_reclaim().
    """
    sk.sk_wmem_queued -= size
    fwd = sk.sk_forward_alloc + size
    if fwd >= PAGE_SIZE:
        fwd &= PAGE_SIZE - 1  # __sk_mem_reclaim() of the whole pages
    sk.sk_forward_alloc = fwd


@kernel("include/net/sock.h", "sk_stream_memory_free")
def sk_stream_memory_free(sk: TcpSock) -> bool:
    """Kernel: include/net/sock.h, sk_stream_memory_free() (+ tcp_stream_memory_free)."""
    if sk.sk_wmem_queued >= sk.sk_sndbuf:
        return False
    notsent = (sk.write_seq - sk.snd_nxt) & M32
    lowat = sk.notsent_lowat or sk.tcp.sysctl_tcp_notsent_lowat
    return notsent < (lowat if lowat < 0xFFFFFFFF else 0xFFFFFFFF)  # min()


@kernel("include/net/sock.h", "sk_stream_wspace")
def sk_stream_wspace(sk: TcpSock) -> int:
    """Kernel: include/net/sock.h, sk_stream_wspace()."""
    return sk.sk_sndbuf - sk.sk_wmem_queued


@kernel("include/net/sock.h", "sk_stream_min_wspace")
def sk_stream_min_wspace(sk: TcpSock) -> int:
    """Kernel: include/net/sock.h, sk_stream_min_wspace()."""
    return sk.sk_wmem_queued >> 1


@kernel("include/net/sock.h", "__sk_stream_is_writeable")
def sk_stream_is_writeable(sk: TcpSock) -> bool:
    """Free send buffer at least half of what is queued, and memory free.

    Kernel: include/net/sock.h, __sk_stream_is_writeable() (wake = 1).
    """
    return sk_stream_wspace(sk) >= sk_stream_min_wspace(sk) and sk_stream_memory_free(sk)


@kernel("net/core/stream.c", "sk_stream_write_space")
def sk_stream_write_space(sk: TcpSock) -> None:
    """TCP's sk_write_space: wake writers only once the socket is writeable,
    so that a blocked writer copies in large chunks, not byte by byte.

    Kernel: net/core/stream.c, sk_stream_write_space().
    """
    if sk_stream_is_writeable(sk):
        sk.sk_socket_nospace = False
        sk.sk_write_space()


@kernel("net/ipv4/tcp_input.c", "tcp_sndbuf_expand")
def tcp_sndbuf_expand(sk: TcpSock) -> None:
    """Room for twice the congestion window in the send buffer.

    Kernel: net/ipv4/tcp_input.c, tcp_sndbuf_expand().
    """
    mss, advmss = sk.mss_cache, sk.advmss
    per_mss = (mss if mss > advmss else advmss) + 320 + 256 + 64  # max(), as a conditional
    per_mss = 1 << (per_mss - 1).bit_length()  # roundup_pow_of_two
    per_mss += 512  # SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) + sk_buff
    nr_segs = sk.snd_cwnd
    reo = sk.reordering + 1
    if reo > nr_segs:
        nr_segs = reo
    if nr_segs < TCP_INIT_CWND:  # max(TCP_INIT_CWND, snd_cwnd, reordering + 1)
        nr_segs = TCP_INIT_CWND
    sndmem = 2 * nr_segs * per_mss
    if sk.sk_sndbuf < sndmem:
        sk.sk_sndbuf = min(sndmem, sk.tcp.tcp_wmem[2])


# enum tcp_chrono: what limits the sender now (the higher, the more interesting)
TCP_CHRONO_UNSPEC: Final = 0
TCP_CHRONO_BUSY: Final = 1  # actively sending data (non-empty write queue)
TCP_CHRONO_RWND_LIMITED: Final = 2  # stalled by an insufficient receive window
TCP_CHRONO_SNDBUF_LIMITED: Final = 3  # stalled by an insufficient send buffer


@kernel("net/ipv4/tcp_output.c", "tcp_chrono_set")
def tcp_chrono_set(sk: TcpSock, new: int) -> None:
    """Close the running chronograph's interval, start *new*'s.

    Kernel: net/ipv4/tcp_output.c, tcp_chrono_set().
    """
    now = sk.net.clock.jiffies
    old = sk.chrono_type
    if old > TCP_CHRONO_UNSPEC:
        sk.chrono_stat[old - 1] += now - sk.chrono_start
    sk.chrono_start = now
    sk.chrono_type = new


@kernel("net/ipv4/tcp_output.c", "tcp_chrono_start")
def tcp_chrono_start(sk: TcpSock, chrono: int) -> None:
    """A limit starts; the most interesting one running is timed.

    Kernel: net/ipv4/tcp_output.c, tcp_chrono_start().
    """
    if chrono > sk.chrono_type:
        tcp_chrono_set(sk, chrono)


@kernel("net/ipv4/tcp_output.c", "tcp_chrono_stop")
def tcp_chrono_stop(sk: TcpSock, chrono: int) -> None:
    """A limit ends: nothing is timed once both queues are empty, else busy.

    Kernel: net/ipv4/tcp_output.c, tcp_chrono_stop().
    """
    if not sk.rtx_queue and not sk.write_queue:
        tcp_chrono_set(sk, TCP_CHRONO_UNSPEC)
    elif chrono == sk.chrono_type:
        tcp_chrono_set(sk, TCP_CHRONO_BUSY)


@kernel("net/ipv4/tcp.c", "tcp_set_window_clamp", "__tcp_adjust_rcv_ssthresh")
def tcp_set_window_clamp(sk: TcpSock, val: int) -> None:
    """Set the largest window to offer; a smaller clamp pulls rcv_ssthresh down,
    a larger one lets it up to what was already offered.

    Kernel: net/ipv4/tcp.c, tcp_set_window_clamp() (``val > 0``; no reserved
    memory, so __tcp_adjust_rcv_ssthresh() is a plain min).
    """
    old_window_clamp = sk.window_clamp
    new_window_clamp = max(SOCK_MIN_RCVBUF // 2, val)
    if new_window_clamp == old_window_clamp:
        return
    sk.window_clamp = new_window_clamp
    if new_window_clamp < old_window_clamp:
        sk.rcv_ssthresh = min(sk.rcv_ssthresh, new_window_clamp)
    else:
        sk.rcv_ssthresh = max(min(sk.rcv_wnd, new_window_clamp), sk.rcv_ssthresh)


@kernel(
    "net/ipv4/tcp_input.c",
    "tcp_should_expand_sndbuf",
    "include/net/tcp.h",
    "tcp_packets_in_flight",
)
def tcp_should_expand_sndbuf(sk: TcpSock) -> bool:
    """Not if the user set SO_SNDBUF, nor while the flight fills the cwnd.

    Kernel: net/ipv4/tcp_input.c, tcp_should_expand_sndbuf() (no memory pressure
    here); include/net/tcp.h, tcp_packets_in_flight() (written out: once per ACK).
    """
    if sk.sk_userlocks & SOCK_SNDBUF_LOCK:
        return False
    # tcp_packets_in_flight(), written out (keep in step with it, above)
    return sk.packets_out - (sk.sacked_out + sk.lost_out) + sk.retrans_out < sk.snd_cwnd


@kernel("net/ipv4/tcp_input.c", "tcp_check_space", "tcp_new_space")
def tcp_check_space(sk: TcpSock) -> None:
    """A writer ran out of send buffer (SOCK_NOSPACE): grow sndbuf with the
    cwnd, and wake it once it can write again (sk_stream_write_space).

    Kernel: net/ipv4/tcp_input.c, tcp_check_space() / tcp_new_space().
    """
    if sk.sk_socket_nospace:
        if tcp_should_expand_sndbuf(sk):
            tcp_sndbuf_expand(sk)
            sk.snd_cwnd_stamp = sk.net.clock.jiffies
        sk_stream_write_space(sk)  # may clear SOCK_NOSPACE
        if not _sock_nospace(sk):
            tcp_chrono_stop(sk, TCP_CHRONO_SNDBUF_LIMITED)


def _sock_nospace(sk: TcpSock) -> bool:
    """test_bit(SOCK_NOSPACE, &sk->sk_socket->flags)."""
    return bool(sk.sk_socket_nospace)


# -- RTT and RTO (RFC 6298; net/ipv4/tcp_input.c) -------------------------------------------

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
FLAG_ACK_MAYBE_DELAYED: Final = 0x10000
FLAG_DSACK_TLP: Final = 0x20000
FLAG_ACKED: Final = FLAG_DATA_ACKED | FLAG_SYN_ACKED
FLAG_NOT_DUP: Final = FLAG_DATA | FLAG_WIN_UPDATE | FLAG_ACKED
FLAG_CA_ALERT: Final = FLAG_DATA_SACKED | FLAG_ECE | FLAG_DSACKING_ACK
FLAG_FORWARD_PROGRESS: Final = FLAG_ACKED | FLAG_DATA_SACKED


@kernel("tcp_min_rtt")
def tcp_min_rtt(sk: TcpSock) -> int:
    """The minimum RTT of the last ``tcp_min_rtt_wlen`` seconds, µs; ~0U before
    any sample. Kernel: tcp_min_rtt().
    """
    return minmax_get(sk.rtt_min)


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


@kernel("net/ipv4/tcp_input.c", "tcp_update_rtt_min")
def tcp_update_rtt_min(sk: TcpSock, rtt_us: int, flag: int) -> None:
    """Feed an RTT sample to the windowed min filter (``tcp_min_rtt_wlen`` s,
    in jiffies). A suspected delayed ACK does not count when it is above the
    minimum: a peer that keeps delaying ACKs would otherwise have the filter
    overestimate the propagation delay once the true minimum expires.

    Kernel: net/ipv4/tcp_input.c, tcp_update_rtt_min().
    """
    if flag & FLAG_ACK_MAYBE_DELAYED and rtt_us > tcp_min_rtt(sk):
        return
    tcp = sk.tcp
    wlen = tcp.sysctl_tcp_min_rtt_wlen * tcp.hz
    minmax_running_min(sk.rtt_min, wlen, tcp.jiffies() & U32, rtt_us or tcp.jiffies_to_usecs(1))


@kernel("net/ipv4/tcp_input.c", "tcp_ack_update_rtt")
def tcp_ack_update_rtt(
    sk: TcpSock, flag: int, seq_rtt_us: int, ca_rtt_us: int, sack_rtt_us: int = -1
) -> bool:
    """Take an RTT sample: the ACKed skb's send time (Karn: never a retransmitted
    one), else the SACKed one's, else the timestamp echo.

    Kernel: net/ipv4/tcp_input.c, tcp_ack_update_rtt().
    """
    if seq_rtt_us < 0:
        seq_rtt_us = sack_rtt_us
    if seq_rtt_us < 0 and sk.saw_tstamp and sk.rcv_tsecr and flag & FLAG_ACKED:
        now_ms = sk.tcp.tcp_time_stamp_ms()
        delta = (now_ms + sk.tsoffset - sk.rcv_tsecr) & M32
        if delta < 0x7FFFFFFF:
            seq_rtt_us = ca_rtt_us = delta * 1000
    if seq_rtt_us < 0:
        return False
    if ca_rtt_us < 0:
        ca_rtt_us = seq_rtt_us
    tcp_update_rtt_min(sk, ca_rtt_us, flag)
    tcp_rtt_estimator(sk, seq_rtt_us)
    tcp_set_rto(sk)
    sk.icsk_backoff = 0  # RFC 6298: only a valid RTT sample resets the back-off
    return True


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
