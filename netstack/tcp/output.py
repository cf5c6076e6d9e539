"""TCP output: building segments, the send engine, ACKs, retransmissions.

Theory of operation::

    tcp_push ─► tcp_write_xmit: for each skb at the send head
      cwnd test (tcp_cwnd_test) ─► receive-window test (tcp_snd_wnd_test)
      ─► Nagle (one segment) | TSO deferral (tcp_tso_should_defer)
      ─► split at what may go now (tso_fragment) ─► TCP Small Queues
      ─► tcp_transmit_skb(clone) ─► tcp_event_new_data_sent: skb moves to
         the retransmit queue, snd_nxt advances, the RTO timer is armed
    tcp_transmit_skb: clone (or copy, if a previous clone is still in a queue
      below), push the header (options: tcp_syn_options |
      tcp_established_options), window from tcp_select_window, checksum left
      to the device (send_check: the pseudo-header sum, CHECKSUM_PARTIAL),
      gso_size/gso_segs from the skb's MSS ─► af_ops.queue_xmit (ip_queue_xmit)

The skbs TCP queues are headerless payload (``data`` at the first payload
byte, ``MAX_TCP_HEADER`` of headroom); a transmitted clone pushes TCP, IP and
link headers into that headroom. With GSO/TSO a queued skb holds up to 64 KB
(``tcp_xmit_size_goal``) and goes down as one GSO skb of ``pcount``
segments; without, one MSS.

Kernel: net/ipv4/tcp_output.c.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Final

from netstack.core.skbuff import (
    CHECKSUM_PARTIAL,
    SKB_TRUESIZE_OVERHEAD,
    SkBuff,
    consume_skb,
)
from netstack.core.sock import SOCK_RCVBUF_LOCK
from netstack.sites import TIMED, kernel, spend
from netstack.tcp import fastopen as _fastopen
from netstack.tcp.cong import CA_EVENT_CWND_RESTART, CA_EVENT_TX_START, tcp_is_cwnd_limited
from netstack.tcp.helpers import (
    TCP_CHRONO_BUSY,
    TCP_CHRONO_RWND_LIMITED,
    TCP_CHRONO_SNDBUF_LIMITED,
    inet_csk_reset_xmit_timer,
    sk_wmem_charge,
    sk_wmem_uncharge,
    tcp_check_space,
    tcp_chrono_start,
    tcp_chrono_stop,
    tcp_current_ssthresh,
    tcp_enter_cwr,
    tcp_in_cwnd_reduction,
    tcp_init_cwnd,
    tcp_initialize_rcv_mss,
    tcp_packets_in_flight,
    tcp_rearm_rto,
    tcp_rto_delta,
)
from netstack.tcp.rate import tcp_rate_skb_sent
from netstack.tcp.sock import (
    ICSK_ACK_NOMEM,
    ICSK_ACK_PUSHED,
    ICSK_ACK_SCHED,
    ICSK_ACK_TIMER,
    ICSK_TIME_DACK,
    ICSK_TIME_LOSS_PROBE,
    ICSK_TIME_PROBE0,
    ICSK_TIME_REO_TIMEOUT,
    ICSK_TIME_RETRANS,
    MAX_TCP_HEADER,
    MAX_TCP_WINDOW,
    TCP_CA_CWR,
    TCP_CLOSE,
    TCP_CLOSE_WAIT,
    TCP_ESTABLISHED,
    TCP_MAX_WSCALE,
    TCP_NAGLE_CORK,
    TCP_NAGLE_OFF,
    TCP_NAGLE_PUSH,
    TCP_RMEM_TO_WIN_SCALE,
    TCPCB_EVER_RETRANS,
    TCPCB_LOST,
    TCPCB_RETRANS,
    TCPCB_SACKED_ACKED,
    TCPCB_SACKED_RETRANS,
    TCP_CA_Loss,
    TCP_CA_Open,
    TCP_CA_Recovery,
    TcpSkbCb,
    TcpSock,
    after,
    before,
)
from netstack.tcp.syncookies import cookie_init_timestamp
from netstack.wire.tcp import (
    MAX_TCP_OPTION_SPACE,
    TCP_HDR,
    TCPHDR_ACK,
    TCPHDR_FIN,
    TCPHDR_PSH,
    TCPHDR_RST,
    TCPHDR_SYN,
    TCPOLEN_SACK_BASE_ALIGNED,
    TCPOLEN_SACK_PERBLOCK,
    TCPOPT_NOP,
    TCPOPT_TIMESTAMP,
    TcpOutOptions,
    fastopen_option_space,
)

# struct tcphdr followed by the aligned timestamp option (tcp_transmit_skb's common case)
_TCP_HDR_TS: Final = struct.Struct("!HHIIBBHHHIII")
_NOP_NOP_TS: Final = (TCPOPT_NOP << 24) | (TCPOPT_NOP << 16) | (TCPOPT_TIMESTAMP << 8) | 10

if TYPE_CHECKING:
    from netstack.tcp.sock import RequestSock

__all__ = [
    "tcp_bare_segment",
    "tcp_connect",
    "tcp_current_mss",
    "tcp_fragment",
    "tcp_make_synack",
    "tcp_push",
    "tcp_retransmit_skb",
    "tcp_select_initial_window",
    "tcp_send_ack",
    "tcp_send_active_reset",
    "tcp_send_delayed_ack",
    "tcp_send_fin",
    "tcp_sync_mss",
    "tcp_transmit_skb",
    "tcp_write_xmit",
    "tcp_xmit_retransmit_queue",
]

M32: Final = 0xFFFFFFFF
TCP_TIMEOUT_MIN_US: Final = 2000  # include/net/tcp.h: 2 ms
_H: Final = struct.Struct("!H")
U16_MAX: Final = 65535
TCP_SKB_HEAD: Final = MAX_TCP_HEADER + SKB_TRUESIZE_OVERHEAD  # alloc_skb_fclone(MAX_TCP_HEADER)
_TSOPT: Final = struct.Struct("!III")
_TSOPT_HDR: Final = 0x0101080A  # NOP, NOP, TCPOPT_TIMESTAMP, TCPOLEN_TIMESTAMP


def tcp_bare_segment(
    sport: int, dport: int, seq: int, ack: int, flags: int, win: int, ts: tuple[int, int] | None
) -> SkBuff:
    """A header-only segment for a reply sent without a full socket (RST, the
    ACKs of TIME_WAIT and request socks): the TCP header, the timestamp option
    if *ts* is ``(tsval, tsecr)``, headroom for the network headers, and a
    zero checksum field the family's caller fills from its pseudo-header.

    The header both families' ``send_reset``/``send_ack`` build
    (tcp_v4_send_ack()'s ``rep.th``, tcp_v6_send_response()'s ``t1``).
    """
    hlen = 32 if ts is not None else 20
    head = 128
    out = SkBuff(bytearray(head + hlen), head, head + hlen)
    out.transport_header = head
    buf = out.buf
    TCP_HDR.pack_into(buf, head, sport, dport, seq & M32, ack & M32, (hlen >> 2) << 4, flags,
                      win, 0, 0)  # fmt: skip
    if ts is not None:
        _TSOPT.pack_into(buf, head + 20, _TSOPT_HDR, ts[0] & M32, ts[1] & M32)
    return out


@kernel("tcp_wnd_end")
def tcp_wnd_end(sk: TcpSock) -> int:
    """The right edge of the peer's window. Kernel: tcp_wnd_end()."""
    return (sk.snd_una + sk.snd_wnd) & M32


@kernel("sk_stream_alloc_skb")
def tcp_stream_alloc_skb(sk: TcpSock, size: int = 0) -> SkBuff:
    """An empty send-queue skb with room for the headers. Kernel: sk_stream_alloc_skb()."""
    if TIMED:
        spend("sk_stream_alloc_skb")
    skb = SkBuff(bytearray(MAX_TCP_HEADER + size), MAX_TCP_HEADER, MAX_TCP_HEADER)
    skb.ip_summed = CHECKSUM_PARTIAL
    skb.truesize = TCP_SKB_HEAD
    return skb


@kernel("net/ipv4/tcp_output.c", "tcp_init_nondata_skb")
def tcp_init_nondata_skb(skb: SkBuff, seq: int, flags: int) -> TcpSkbCb:
    """Control skb (SYN, FIN, RST, ACK): SYN and FIN take a sequence number.

    Kernel: net/ipv4/tcp_output.c, tcp_init_nondata_skb().
    """
    skb.ip_summed = CHECKSUM_PARTIAL
    end = (seq + 1) & M32 if flags & (TCPHDR_SYN | TCPHDR_FIN) else seq
    tcb = TcpSkbCb(seq, end, flags)
    skb.cb = tcb
    return tcb


# -- MSS --------------------------------------------------------------------------------


@kernel("net/ipv4/tcp_output.c", "tcp_mtu_to_mss", "__tcp_mtu_to_mss")
def tcp_mtu_to_mss(sk: TcpSock, pmtu: int) -> int:
    """The MSS for a path MTU, counting the usual options but not SACKs.

    Kernel: net/ipv4/tcp_output.c, tcp_mtu_to_mss() / __tcp_mtu_to_mss().
    """
    mss = pmtu - sk.af_ops.net_header_len - 20
    if mss > sk.mss_clamp:
        mss = sk.mss_clamp
    mss -= sk.icsk_ext_hdr_len
    mss = max(mss, sk.tcp.sysctl_tcp_min_snd_mss)
    return mss - (sk.tcp_header_len - 20)


@kernel("net/ipv4/tcp_output.c", "tcp_mss_to_mtu")
def tcp_mss_to_mtu(sk: TcpSock, mss: int) -> int:
    """Kernel: net/ipv4/tcp_output.c, tcp_mss_to_mtu()."""
    return mss + sk.tcp_header_len + sk.icsk_ext_hdr_len + sk.af_ops.net_header_len


@kernel("include/net/tcp.h", "tcp_bound_to_half_wnd")
def tcp_bound_to_half_wnd(sk: TcpSock, pktsize: int) -> int:
    """Do not let one segment be more than half the largest window seen.

    Kernel: include/net/tcp.h, tcp_bound_to_half_wnd().
    """
    cutoff = sk.max_window >> 1 if sk.max_window > 536 else sk.max_window
    if cutoff and pktsize > cutoff:
        return max(cutoff, 68 - sk.tcp_header_len)
    return pktsize


@kernel("net/ipv4/tcp_output.c", "tcp_mtup_init")
def tcp_mtup_init(sk: TcpSock) -> None:
    """Kernel: net/ipv4/tcp_output.c, tcp_mtup_init()."""
    tcp = sk.tcp
    sk.icsk_mtup_enabled = tcp.sysctl_tcp_mtu_probing > 1
    sk.icsk_mtup_search_high = sk.mss_clamp + 20 + sk.af_ops.net_header_len
    sk.icsk_mtup_search_low = tcp_mss_to_mtu(sk, tcp.sysctl_tcp_base_mss)
    sk.icsk_mtup_probe_size = 0


@kernel("net/ipv4/tcp_output.c", "tcp_sync_mss")
def tcp_sync_mss(sk: TcpSock, pmtu: int) -> int:
    """Recompute ``mss_cache`` for a path MTU. Kernel: net/ipv4/tcp_output.c, tcp_sync_mss()."""
    if sk.icsk_mtup_search_high > pmtu:
        sk.icsk_mtup_search_high = pmtu
    mss = tcp_bound_to_half_wnd(sk, tcp_mtu_to_mss(sk, pmtu))
    sk.icsk_pmtu_cookie = pmtu
    if sk.icsk_mtup_enabled:
        mss = min(mss, tcp_mtu_to_mss(sk, sk.icsk_mtup_search_low))
    sk.mss_cache = mss
    return mss


@kernel("net/ipv4/tcp_output.c", "tcp_current_mss")
def tcp_current_mss(sk: TcpSock) -> int:
    """The MSS for the next segment, counting this moment's SACK blocks.

    Kernel: net/ipv4/tcp_output.c, tcp_current_mss().
    """
    mss = sk.mss_cache
    mtu = sk.af_ops.dst_mtu(sk)
    if mtu and mtu != sk.icsk_pmtu_cookie:
        mss = tcp_sync_mss(sk, mtu)
    header_len = tcp_established_options_size(sk) + 20
    if header_len != sk.tcp_header_len:
        mss -= header_len - sk.tcp_header_len
    return mss


@kernel("net/ipv4/tcp.c", "tcp_xmit_size_goal")
def tcp_xmit_size_goal(sk: TcpSock, mss_now: int, large_allowed: bool) -> int:
    """How much one send-queue skb may hold: an MSS, or a GSO skb's worth.

    Kernel: net/ipv4/tcp.c, tcp_xmit_size_goal().
    """
    if not large_allowed:
        return mss_now
    new_size_goal = sk.sk_gso_max_size - 1 - MAX_TCP_HEADER
    new_size_goal = tcp_bound_to_half_wnd(sk, new_size_goal)
    size_goal = max(new_size_goal // mss_now, 1) * mss_now
    segs = min(tcp_tso_autosize(sk, mss_now, sk.tcp.sysctl_tcp_min_tso_segs), sk.sk_gso_max_segs)
    return max(min(size_goal, segs * mss_now), mss_now)


@kernel("net/ipv4/tcp.c", "tcp_send_mss")
def tcp_send_mss(sk: TcpSock) -> tuple[int, int]:
    """``(mss_now, size_goal)`` for tcp_sendmsg. Kernel: net/ipv4/tcp.c, tcp_send_mss()."""
    mss_now = tcp_current_mss(sk)
    return mss_now, tcp_xmit_size_goal(sk, mss_now, sk_can_gso(sk))


@kernel("sk_can_gso")
def sk_can_gso(sk: TcpSock) -> bool:
    """The route's device (or software GSO) takes large TCP skbs. Kernel: sk_can_gso()."""
    feature = sk.sk_gso_type << 16
    return bool(feature) and (sk.sk_route_caps & feature) == feature


@kernel("net/ipv4/tcp_output.c", "tcp_tso_autosize")
def tcp_tso_autosize(sk: TcpSock, mss_now: int, min_tso_segs: int) -> int:
    """Segments per TSO skb so that about one goes out per millisecond.

    Kernel: net/ipv4/tcp_output.c, tcp_tso_autosize().
    """
    nbytes = sk.sk_pacing_rate >> sk.sk_pacing_shift
    cap = sk.sk_gso_max_size - 1 - MAX_TCP_HEADER
    if nbytes > cap:
        nbytes = cap
    segs = nbytes // mss_now
    return segs if segs > min_tso_segs else min_tso_segs


@kernel("net/ipv4/tcp_output.c", "tcp_tso_segs")
def tcp_tso_segs(sk: TcpSock, mss_now: int) -> int:
    """Kernel: net/ipv4/tcp_output.c, tcp_tso_segs()."""
    segs = tcp_tso_autosize(sk, mss_now, sk.tcp.sysctl_tcp_min_tso_segs)
    return min(segs, sk.sk_gso_max_segs)


@kernel("net/ipv4/tcp_output.c", "tcp_set_skb_tso_segs")
def tcp_set_skb_tso_segs(skb: SkBuff, mss_now: int) -> None:
    """Kernel: net/ipv4/tcp_output.c, tcp_set_skb_tso_segs()."""
    tcb: TcpSkbCb = skb.cb
    length = skb.tail - skb.data
    if length <= mss_now:
        tcb.pcount = 1
        tcb.gso_size = 0
    else:
        tcb.pcount = (length + mss_now - 1) // mss_now
        tcb.gso_size = mss_now


@kernel("net/ipv4/tcp_output.c", "tcp_init_tso_segs")
def tcp_init_tso_segs(skb: SkBuff, mss_now: int) -> int:
    """Kernel: net/ipv4/tcp_output.c, tcp_init_tso_segs()."""
    tcb: TcpSkbCb = skb.cb
    segs = tcb.pcount
    if not segs or (segs > 1 and tcb.gso_size != mss_now):
        tcp_set_skb_tso_segs(skb, mss_now)
        segs = tcb.pcount
    return segs


# -- windows ------------------------------------------------------------------------------


@kernel("include/net/tcp.h", "__tcp_win_from_space")
def __tcp_win_from_space(scaling_ratio: int, space: int) -> int:
    """Kernel: include/net/tcp.h, __tcp_win_from_space()."""
    return (space * scaling_ratio) >> TCP_RMEM_TO_WIN_SCALE


@kernel("include/net/tcp.h", "tcp_win_from_space")
def tcp_win_from_space(sk: TcpSock, space: int) -> int:
    """The part of a buffer offered as window: ``space * scaling_ratio / 256``.

    ``scaling_ratio`` is the payload share of the memory an skb costs
    (``skb->len / skb->truesize``), 50 % until a segment was measured
    (``tcp_measure_rcv_mss``); ``tcp_adv_win_scale`` is no longer used (6.6+).
    Kernel: include/net/tcp.h, tcp_win_from_space().
    """
    return (space * sk.scaling_ratio) >> TCP_RMEM_TO_WIN_SCALE  # __tcp_win_from_space()


@kernel("include/net/tcp.h", "tcp_space_from_win", "__tcp_space_from_win")
def tcp_space_from_win(sk: TcpSock, win: int) -> int:
    """The buffer a window needs (the inverse of tcp_win_from_space()).

    Kernel: include/net/tcp.h, tcp_space_from_win() / __tcp_space_from_win().
    """
    return (win << TCP_RMEM_TO_WIN_SCALE) // sk.scaling_ratio


@kernel("tcp_space")
def tcp_space(sk: TcpSock) -> int:
    """Free receive buffer, as window. Kernel: tcp_space()."""
    return tcp_win_from_space(sk, sk.sk_rcvbuf - sk.sk_rmem_alloc)


@kernel("tcp_full_space")
def tcp_full_space(sk: TcpSock) -> int:
    """Kernel: tcp_full_space()."""
    return tcp_win_from_space(sk, sk.sk_rcvbuf)


@kernel("tcp_receive_window")
def tcp_receive_window(sk: TcpSock) -> int:
    """What is left of the window we advertised. Kernel: tcp_receive_window()."""
    win = sk.rcv_wup + sk.rcv_wnd - sk.rcv_nxt
    win = ((win + 0x80000000) & M32) - 0x80000000
    return win if win > 0 else 0


@kernel("net/ipv4/tcp_output.c", "tcp_select_initial_window")
def tcp_select_initial_window(
    sk: TcpSock, space: int, mss: int, window_clamp: int, wscale_ok: bool, init_rcv_wnd: int
) -> tuple[int, int, int]:
    """The first window to offer and the scale: ``(rcv_wnd, window_clamp, rcv_wscale)``.

    Kernel: net/ipv4/tcp_output.c, tcp_select_initial_window().
    """
    tcp = sk.tcp
    space = max(space, 0)
    if window_clamp == 0:
        window_clamp = U16_MAX << TCP_MAX_WSCALE
    space = min(window_clamp, space)
    if space > mss:
        space = space // mss * mss
    if tcp.sysctl_tcp_workaround_signed_windows:
        rcv_wnd = min(space, MAX_TCP_WINDOW)
    else:
        rcv_wnd = min(space, U16_MAX)
    if init_rcv_wnd:
        rcv_wnd = min(rcv_wnd, init_rcv_wnd * mss)
    rcv_wscale = 0
    if wscale_ok:
        ipv4 = sk.net.ipv4
        rmem_max = sk.net.rmem_max if ipv4 is not None else 0
        space = max(space, tcp.tcp_rmem[2], rmem_max)
        space = min(space, window_clamp)
        # clamp_t(int, ilog2(space) - 15, 0, TCP_MAX_WSCALE)
        rcv_wscale = min(max(space.bit_length() - 1 - 15, 0), TCP_MAX_WSCALE)
    window_clamp = min(U16_MAX << rcv_wscale, window_clamp)
    return rcv_wnd, window_clamp, rcv_wscale


@kernel("net/ipv4/tcp_output.c", "__tcp_select_window")
def __tcp_select_window(sk: TcpSock) -> int:
    """The window we can offer now (receiver-side SWS avoidance).

    Kernel: net/ipv4/tcp_output.c, __tcp_select_window().
    """
    mss = sk.icsk_ack_rcv_mss
    # tcp_space() and tcp_full_space(), their tcp_win_from_space() written out
    ratio = sk.scaling_ratio
    rcvbuf = sk.sk_rcvbuf
    free_space = ((rcvbuf - sk.sk_rmem_alloc) * ratio) >> TCP_RMEM_TO_WIN_SCALE
    allowed_space = (rcvbuf * ratio) >> TCP_RMEM_TO_WIN_SCALE
    clamp = sk.window_clamp
    full_space = clamp if clamp < allowed_space else allowed_space  # min()
    if mss > full_space:
        mss = full_space
        if mss <= 0:
            return 0
    wscale = sk.rcv_wscale
    if free_space < (full_space >> 1):
        sk.icsk_ack_quick = 0
        free_space = free_space >> wscale << wscale
        if free_space < (allowed_space >> 4) or free_space < mss:
            return 0
    if free_space > sk.rcv_ssthresh:
        free_space = sk.rcv_ssthresh
    if wscale:
        window = free_space
        # advertise enough that it is not scaled away
        window = (window + (1 << wscale) - 1) >> wscale << wscale
    else:
        window = sk.rcv_wnd
        if window <= free_space - mss or window > free_space:
            window = free_space // mss * mss if mss else free_space
        elif mss == full_space and free_space > window + (full_space >> 1):
            window = free_space
    return window


@kernel("tcp_select_window")
def tcp_select_window(sk: TcpSock) -> int:
    """Choose the window for an outgoing segment; never shrink the offered one.

    Returns the scaled value for the header. Kernel: tcp_select_window().
    """
    old_win = sk.rcv_wnd
    if sk.icsk_ack_pending & ICSK_ACK_NOMEM:
        # a segment was refused for lack of memory: offer a zero window now
        sk.pred_flags = 0
        sk.rcv_wnd = 0
        sk.rcv_wup = sk.rcv_nxt
        return 0
    cur_win = tcp_receive_window(sk)
    new_win = __tcp_select_window(sk)
    wscale = sk.rcv_wscale
    if new_win < cur_win:
        if new_win == 0:
            sk.ext.TCPWantZeroWindowAdv += 1
        new_win = (cur_win + (1 << wscale) - 1) >> wscale << wscale  # ALIGN()
    sk.rcv_wnd = new_win
    sk.rcv_wup = sk.rcv_nxt
    # min(), written out
    if not wscale and sk.tcp.sysctl_tcp_workaround_signed_windows:
        if new_win > MAX_TCP_WINDOW:
            new_win = MAX_TCP_WINDOW
    elif new_win > U16_MAX << wscale:
        new_win = U16_MAX << wscale
    new_win >>= wscale
    if new_win == 0:
        sk.pred_flags = 0
        if old_win:
            sk.ext.TCPToZeroWindowAdv += 1
    elif old_win == 0:
        sk.ext.TCPFromZeroWindowAdv += 1
    return new_win


# -- options ------------------------------------------------------------------------------


def tcp_established_options_size(sk: TcpSock) -> int:
    """Option bytes of an established segment now (timestamps, SACKs)."""
    size = 12 if sk.tstamp_ok else 0
    eff_sacks = sk.num_sacks + sk.dsack
    if eff_sacks:
        remaining = MAX_TCP_OPTION_SPACE - size
        n = min(eff_sacks, (remaining - TCPOLEN_SACK_BASE_ALIGNED) // TCPOLEN_SACK_PERBLOCK)
        if n:
            size += TCPOLEN_SACK_BASE_ALIGNED + n * TCPOLEN_SACK_PERBLOCK
    return size


@kernel("net/ipv4/tcp_output.c", "tcp_established_options")
def tcp_established_options(sk: TcpSock, tsval: int) -> TcpOutOptions | None:
    """Timestamps and SACK blocks for an established segment.

    Kernel: net/ipv4/tcp_output.c, tcp_established_options().
    """
    ts = None
    size = 0
    if sk.tstamp_ok:
        ts = (tsval, sk.ts_recent)
        size = 12
    eff_sacks = sk.num_sacks + sk.dsack
    sacks: tuple[tuple[int, int], ...] = ()
    if eff_sacks:
        remaining = MAX_TCP_OPTION_SPACE - size
        n = min(eff_sacks, (remaining - TCPOLEN_SACK_BASE_ALIGNED) // TCPOLEN_SACK_PERBLOCK)
        if n:
            if sk.dsack:
                blocks = [tuple(sk.duplicate_sack), *(tuple(b) for b in sk.selective_acks)]
            else:
                blocks = [tuple(b) for b in sk.selective_acks]
            sacks = tuple((b[0], b[1]) for b in blocks[:n])
            sk.dsack = 0  # tcp_options_write(): the D-SACK goes out once
    if ts is None and not sacks:
        return None
    return TcpOutOptions(ts=ts, sacks=sacks)


@kernel("net/ipv4/tcp_output.c", "tcp_syn_options")
def tcp_syn_options(sk: TcpSock, tsval: int) -> TcpOutOptions:
    """MSS, timestamps, window scale and SACK-permitted for our SYN.

    Kernel: net/ipv4/tcp_output.c, tcp_syn_options().
    """
    tcp = sk.tcp
    opts = TcpOutOptions(mss=tcp_advertise_mss(sk))
    if tcp.sysctl_tcp_timestamps:
        opts.ts = (tsval, sk.ts_recent)
    if tcp.sysctl_tcp_window_scaling:
        opts.ws = sk.rcv_wscale
    if tcp.sysctl_tcp_sack:
        opts.sack_perm = True
    if sk.fastopen_req is not None:
        opts.fastopen = _fastopen.tcp_syn_options_fastopen(sk, MAX_TCP_OPTION_SPACE - opts.size())
    return opts


@kernel("net/ipv4/tcp_output.c", "tcp_advertise_mss")
def tcp_advertise_mss(sk: TcpSock) -> int:
    """Kernel: net/ipv4/tcp_output.c, tcp_advertise_mss()."""
    mss = sk.advmss
    metric = sk.af_ops.advmss(sk)
    if metric and metric < mss:
        mss = sk.advmss = metric
    return mss & 0xFFFF


# -- transmit -------------------------------------------------------------------------------


@kernel("net/ipv4/tcp_output.c", "tcp_wfree")
def tcp_wfree(skb: SkBuff) -> None:
    """A transmitted segment left the host: uncharge it; TSQ may send more.

    Kernel: net/ipv4/tcp_output.c, tcp_wfree().
    """
    sk = skb.sk
    if not isinstance(sk, TcpSock):
        return
    sk.sk_wmem_alloc -= skb.wmem_charge
    if sk.tsq_throttled:
        sk.tsq_throttled = False
        tsq_schedule(sk)


def tsq_schedule(sk: TcpSock) -> None:
    """Run ``tcp_tsq_handler`` soon, from softirq context (the TSQ tasklet)."""
    timer = sk.tsq_timer
    if timer is None:
        timer = sk.tsq_timer = sk.net.timers.timer(lambda: tcp_tsq_handler(sk), "tcp_tsq")
    if not timer.pending:
        timer.mod(sk.net.clock.jiffies)


@kernel("net/ipv4/tcp_output.c", "tcp_tsq_handler")
def tcp_tsq_handler(sk: TcpSock) -> None:
    """Send what TCP Small Queues held back. Kernel: net/ipv4/tcp_output.c, tcp_tsq_handler()."""
    if sk.state in (1, 4, 11, 8, 9):  # ESTABLISHED FIN_WAIT1 CLOSING CLOSE_WAIT LAST_ACK
        sk.tcp_mstamp = sk.tcp.tcp_clock_us()
        if sk.lost_out > sk.retrans_out and sk.snd_cwnd > tcp_packets_in_flight(sk):
            tcp_xmit_retransmit_queue(sk)
        tcp_write_xmit(sk, tcp_current_mss(sk), sk.nonagle, 0)


@kernel("net/core/sock.c", "__sock_wfree")
def __sock_wfree(skb: SkBuff) -> None:
    """Kernel: net/core/sock.c, __sock_wfree() (pure ACKs: no TSQ callback)."""
    sk = skb.sk
    if sk is not None:
        sk.sk_wmem_alloc -= skb.wmem_charge


@kernel("net/ipv4/tcp_output.c", "__tcp_transmit_skb")
def tcp_transmit_skb(sk: TcpSock, skb: SkBuff, clone_it: bool, rcv_nxt: int | None = None) -> int:
    """Build the TCP header of *skb* (a clone of it) and hand it to IP.

    Returns 0, a negative errno when nothing went out, or NET_XMIT_DROP (1)
    when a local qdisc refused it.

    Kernel: net/ipv4/tcp_output.c, __tcp_transmit_skb().
    """
    if TIMED:
        spend("__tcp_transmit_skb")
    tcb: TcpSkbCb = skb.cb
    if rcv_nxt is None:
        rcv_nxt = sk.rcv_nxt
    oskb: SkBuff | None = None
    if clone_it:
        # skb->skb_mstamp_ns = tp->tcp_wstamp_ns, before the clone is sent: a
        # transmission the qdisc refuses still dates the skb (retrans_stamp)
        tcb.mstamp = sk.tcp_mstamp
        tcb.in_flight = (tcb.end_seq - sk.snd_una) & M32
        oskb = skb
        skb = skb.copy() if skb.cloned else skb.clone()
    tsval = (sk.tcp_mstamp // 1000 + sk.tsoffset) & M32
    flags = tcb.tcp_flags
    # timestamps and no SACK block, nearly every established segment: header and
    # option in one pack below, no TcpOutOptions (tcp_established_options' result)
    ts_only = not flags & TCPHDR_SYN and sk.tstamp_ok and not (sk.num_sacks or sk.dsack)
    opts: TcpOutOptions | None = None
    if ts_only:
        hlen = 32
    else:
        if flags & TCPHDR_SYN:
            opts = tcp_syn_options(sk, tsval)
        else:
            opts = tcp_established_options(sk, tsval)
        hlen = 20 + (opts.size() if opts is not None else 0)
    # A GSO skb always carries PSH (on its last segment once cut): it flushes
    # the receiver's GRO at once. A single segment is not forced, as it may be
    # going out under congestion. Only the clone's flags.
    if tcb.pcount > 1 and not flags & TCPHDR_SYN:
        flags |= TCPHDR_PSH
    length = skb.tail - skb.data
    skb.data -= hlen  # skb_push()
    th = skb.data
    skb.transport_header = th
    # skb_orphan + ownership by the socket: the segment is charged until freed
    pure_ack = length == 0 and flags == TCPHDR_ACK
    skb.sk = sk
    charge = skb.truesize if length else TCP_SKB_HEAD
    skb.wmem_charge = charge
    sk.sk_wmem_alloc += charge
    skb.destructor = __sock_wfree if pure_ack else tcp_wfree
    skb.hash = sk.sk_txhash
    if sk.dst_pending_confirm:
        skb.dst_pending_confirm = True
    if flags & TCPHDR_SYN:
        window = min(sk.rcv_wnd, U16_MAX)  # RFC 7323: never scaled in a SYN
    else:
        window = tcp_select_window(sk)
    buf = skb.buf
    if ts_only:  # tcp_options_write(): NOP, NOP, TSval, TSecr
        _TCP_HDR_TS.pack_into(
            buf,
            th,
            sk.inet_sport,
            sk.inet_dport,
            tcb.seq,
            rcv_nxt,
            0x80,  # doff 8: 32 bytes
            flags,
            window,
            0,
            0,
            _NOP_NOP_TS,
            tsval,
            sk.ts_recent & M32,
        )
    else:
        TCP_HDR.pack_into(
            buf,
            th,
            sk.inet_sport,
            sk.inet_dport,
            tcb.seq,
            rcv_nxt,
            (hlen >> 2) << 4,
            flags,
            window,
            0,
            0,
        )
        if opts is not None:
            opts.write(buf, th + 20)
    skb.gso_type = sk.sk_gso_type
    sk.af_ops.send_check(sk, skb)
    if flags & TCPHDR_ACK:
        tcp_event_ack_sent(sk, tcb.pcount, rcv_nxt)
    if length:
        tcp_event_data_sent(sk)
        sk.data_segs_out += tcb.pcount
        sk.bytes_sent += length
    if after(tcb.end_seq, sk.snd_nxt) or tcb.seq == tcb.end_seq:
        sk.mib.OutSegs += tcb.pcount
    sk.segs_out += tcb.pcount
    skb.gso_segs = tcb.pcount
    skb.gso_size = tcb.gso_size if tcb.pcount > 1 else 0
    skb.cb = None  # our debris is not IP's business
    err = sk.af_ops.queue_xmit(sk, skb)
    if err > 0:  # NET_XMIT_DROP / NET_XMIT_CN: local congestion
        tcp_enter_cwr(sk)
        # net_xmit_eval(): CN is success; DROP stays NET_XMIT_DROP (1), > 0, which
        # tells the timers "refused locally" (TCP_RESOURCE_PROBE_INTERVAL)
        err = 0 if err == 2 else err
    if not err and oskb is not None:
        tcb.mstamp = sk.tcp_mstamp  # tcp_update_skb_after_send()
        tcb.tsorted = True  # list_move_tail() onto tsorted_sent_queue
        tcp_rate_skb_sent(sk, tcb)
        sk.tx_order += 1
        tcb.tx_order = sk.tx_order
    return err


@kernel("tcp_event_ack_sent")
def tcp_event_ack_sent(sk: TcpSock, pkts: int, rcv_nxt: int) -> None:
    """An ACK went out: no delayed ACK is owed, and the ACKs that SACK
    compression held back count in TCPAckCompressed. Kernel: tcp_event_ack_sent().
    """
    if sk.compressed_ack:
        sk.ext.TCPAckCompressed += sk.compressed_ack
        sk.compressed_ack = 0
        timer = sk.compressed_ack_timer
        if timer is not None:
            timer.cancel()
    if rcv_nxt != sk.rcv_nxt:
        return
    # tcp_dec_quickack_mode()
    if sk.icsk_ack_quick:
        if pkts >= sk.icsk_ack_quick:
            sk.icsk_ack_quick = 0
            sk.icsk_ack_ato = sk.tcp.TCP_ATO_MIN  # leaving quickack mode
        else:
            sk.icsk_ack_quick -= pkts
    # inet_csk_clear_xmit_timer(ICSK_TIME_DACK)
    sk.icsk_ack_pending = 0
    sk.delack_timer.delete()


@kernel(
    "net/ipv4/tcp_output.c", "tcp_event_data_sent", "include/net/tcp.h", "tcp_packets_in_flight"
)
def tcp_event_data_sent(sk: TcpSock) -> None:
    """Congestion state after sending data. Kernel: net/ipv4/tcp_output.c,
    tcp_event_data_sent(); include/net/tcp.h, tcp_packets_in_flight() (written out:
    once per segment sent).
    """
    now = sk.net.clock.jiffies
    # tcp_packets_in_flight(), written out (keep in step with helpers.tcp_packets_in_flight)
    if sk.packets_out - (sk.sacked_out + sk.lost_out) + sk.retrans_out == 0:
        sk.icsk_ca_ops.cwnd_event(sk, CA_EVENT_TX_START)
    sk.lsndtime = now
    # a reply within the ATO of the last received packet: interactive (pingpong)
    if now - sk.icsk_ack_lrcvtime < sk.icsk_ack_ato:
        sk.icsk_ack_pingpong = 1


@kernel("net/ipv4/tcp_output.c", "tcp_cwnd_restart")
def tcp_cwnd_restart(sk: TcpSock, delta: int) -> None:
    """RFC 2861: after an idle period longer than the RTO, restart the window.

    Kernel: net/ipv4/tcp_output.c, tcp_cwnd_restart().
    """
    restart_cwnd = tcp_init_cwnd(sk)
    cwnd = sk.snd_cwnd
    sk.icsk_ca_ops.cwnd_event(sk, CA_EVENT_CWND_RESTART)
    sk.snd_ssthresh = tcp_current_ssthresh(sk)
    restart_cwnd = min(restart_cwnd, cwnd)
    delta -= sk.icsk_rto
    while delta > 0 and cwnd > restart_cwnd:
        cwnd >>= 1
        delta -= sk.icsk_rto
    sk.snd_cwnd = max(cwnd, restart_cwnd)
    sk.snd_cwnd_stamp = sk.net.clock.jiffies
    sk.snd_cwnd_used = 0


@kernel("include/net/tcp.h", "tcp_slow_start_after_idle_check")
def tcp_slow_start_after_idle_check(sk: TcpSock) -> None:
    """A write after an idle period (nothing in flight for more than an RTO)
    restarts the congestion window (RFC 2861; tcp_slow_start_after_idle).

    Kernel: include/net/tcp.h, tcp_slow_start_after_idle_check() (from
    tcp_skb_entail; no congestion control here has its own cong_control).
    """
    if not sk.tcp.sysctl_tcp_slow_start_after_idle or sk.packets_out:
        return
    delta = sk.net.clock.jiffies - sk.lsndtime
    if delta > sk.icsk_rto:
        tcp_cwnd_restart(sk, delta)


@kernel("net/ipv4/tcp_output.c", "tcp_event_new_data_sent")
def tcp_event_new_data_sent(sk: TcpSock, skb: SkBuff) -> None:
    """A new segment went out: move it to the retransmit queue, arm the RTO.

    Kernel: net/ipv4/tcp_output.c, tcp_event_new_data_sent().
    """
    if TIMED:
        spend("tcp_event_new_data_sent")
    tcb: TcpSkbCb = skb.cb
    prior_packets = sk.packets_out
    sk.snd_nxt = tcb.end_seq
    wq = sk.write_queue
    if wq and wq[0] is skb:
        wq.popleft()
    else:
        wq.remove(skb)
    sk.rtx_queue.append(skb)
    if sk.highest_sack is None:
        sk.highest_sack = skb
    sk.packets_out += tcb.pcount
    if not prior_packets or sk.icsk_pending == ICSK_TIME_LOSS_PROBE:
        tcp_rearm_rto(sk)
    sk.ext.TCPOrigDataSent += tcb.pcount
    tcp_check_space(sk)


@kernel("include/net/inet_connection_sock.h", "inet_csk_clear_xmit_timer")
def inet_csk_clear_xmit_timer(sk: TcpSock, what: int) -> None:
    """Kernel: include/net/inet_connection_sock.h, inet_csk_clear_xmit_timer()."""
    if what in (ICSK_TIME_RETRANS, ICSK_TIME_PROBE0):
        sk.icsk_pending = 0
        sk.retransmit_timer.delete()
    elif what == ICSK_TIME_DACK:
        sk.icsk_ack_pending = 0
        sk.delack_timer.delete()


@kernel("net/ipv4/tcp_output.c", "tcp_queue_skb")
def tcp_queue_skb(sk: TcpSock, skb: SkBuff) -> None:
    """Append to the write queue. Kernel: net/ipv4/tcp_output.c, tcp_queue_skb()."""
    tcb: TcpSkbCb = skb.cb
    sk.write_seq = tcb.end_seq
    sk.write_queue.append(skb)
    sk_wmem_charge(sk, skb.truesize)
    if len(sk.write_queue) == 1:  # tcp_add_write_queue_tail(): a new send head
        tcp_chrono_start(sk, TCP_CHRONO_BUSY)


@kernel("net/ipv4/tcp_output.c", "tcp_adjust_pcount")
def tcp_adjust_pcount(sk: TcpSock, skb: SkBuff, decr: int) -> None:
    """Fix the counters when a sent skb's segment count changes.

    Kernel: net/ipv4/tcp_output.c, tcp_adjust_pcount().
    """
    sk.packets_out -= decr
    sacked = skb.cb.sacked
    if sacked & TCPCB_SACKED_ACKED:
        sk.sacked_out -= decr
    if sacked & TCPCB_SACKED_RETRANS:
        sk.retrans_out -= decr
    if sacked & TCPCB_LOST:
        sk.lost_out -= decr
    if not sk.sack_ok and decr > 0:  # Reno
        sk.sacked_out -= min(sk.sacked_out, decr)
    hint = sk.lost_skb_hint
    if hint is not None and before(skb.cb.seq, hint.cb.seq) and sacked & TCPCB_SACKED_ACKED:
        sk.lost_cnt_hint -= decr


@kernel("net/ipv4/tcp_output.c", "tcp_fragment")
def tcp_fragment(sk: TcpSock, in_rtx: bool, skb: SkBuff, length: int, mss_now: int) -> int:
    """Split *skb* after *length* bytes; the tail becomes a new skb behind it.

    Returns 0 or a negative errno. Kernel: net/ipv4/tcp_output.c, tcp_fragment().
    """
    cur = skb.tail - skb.data
    if length > cur:
        return -22
    tcb: TcpSkbCb = skb.cb
    nsize = cur - length
    buff = tcp_stream_alloc_skb(sk)
    buff.buf += memoryview(skb.buf)[skb.data + length : skb.tail]  # one copy of the tail
    buff.tail = MAX_TCP_HEADER + nsize
    skb.tail = skb.data + length  # skb_trim() (a shared buffer is not written)
    buff.truesize = TCP_SKB_HEAD + nsize
    skb.truesize = max(skb.truesize - nsize, TCP_SKB_HEAD)
    sk_wmem_charge(sk, TCP_SKB_HEAD)  # sk_forced_mem_schedule() in tcp_stream_alloc_skb()
    nseq = (tcb.seq + length) & M32
    btcb = TcpSkbCb(nseq, tcb.end_seq, tcb.tcp_flags)
    buff.cb = btcb
    tcb.end_seq = nseq
    tcb.tcp_flags &= ~(TCPHDR_FIN | TCPHDR_PSH)  # only the second part keeps them
    btcb.sacked = tcb.sacked
    btcb.mstamp = tcb.mstamp
    btcb.in_flight = tcb.in_flight
    btcb.tsorted = tcb.tsorted
    btcb.tx_delivered = tcb.tx_delivered
    btcb.tx_first_tx_mstamp = tcb.tx_first_tx_mstamp
    btcb.tx_delivered_mstamp = tcb.tx_delivered_mstamp
    btcb.tx_is_app_limited = tcb.tx_is_app_limited
    btcb.tx_order = tcb.tx_order
    buff.ip_summed = skb.ip_summed
    old_factor = tcb.pcount
    tcp_set_skb_tso_segs(skb, mss_now)
    tcp_set_skb_tso_segs(buff, mss_now)
    if not before(sk.snd_nxt, btcb.end_seq):  # already sent: fix the counters
        diff = old_factor - tcb.pcount - btcb.pcount
        if diff:
            tcp_adjust_pcount(sk, skb, diff)
    if in_rtx:
        q = sk.rtx_queue
        q.insert(q.index(skb) + 1, buff)
    else:
        wq = sk.write_queue
        i = wq.index(skb)
        wq.insert(i + 1, buff)
    return 0


@kernel("net/ipv4/tcp_output.c", "tso_fragment")
def tso_fragment(sk: TcpSock, skb: SkBuff, length: int, mss_now: int) -> int:
    """Split a never-sent write-queue skb. Kernel: net/ipv4/tcp_output.c, tso_fragment()."""
    return tcp_fragment(sk, False, skb, length, mss_now)


@kernel("net/ipv4/tcp_output.c", "tcp_trim_head", "__pskb_trim_head")
def tcp_trim_head(sk: TcpSock, skb: SkBuff, length: int) -> int:
    """Drop *length* acknowledged bytes from the front of *skb*; their memory
    goes back to the socket at once.

    A write-queue skb's payload is page fragments (6.x's ``tcp_sendmsg``
    copies into ``sk_page_frag``, ``tcp_fragment`` and ``skb_shift`` move
    fragments), so ``__pskb_trim_head`` returns *length* as ``delta_truesize``
    (only bytes in a linear head would give back nothing): the skb's truesize,
    ``sk_wmem_queued`` and, through ``sk_mem_uncharge``, ``sk_forward_alloc``
    shrink by it, whole pages beyond going back to the protocol. ``ip_summed``
    is left as it is: CHECKSUM_PARTIAL since ``tcp_stream_alloc_skb`` (Linux
    5.16, "tcp: factorize ip_summed setting", dropped the store here).
    Kernel: net/ipv4/tcp_output.c, tcp_trim_head() / __pskb_trim_head().
    """
    skb.data += length  # __pskb_trim_head(): delta_truesize = length
    tcb: TcpSkbCb = skb.cb
    tcb.seq = (tcb.seq + length) & M32
    skb.truesize -= length
    sk_wmem_uncharge(sk, length)  # sk_wmem_queued_add(sk, -delta) + sk_mem_uncharge()
    if tcb.pcount > 1:
        tcp_set_skb_tso_segs(skb, tcb.gso_size)
    return 0


# -- Nagle, cwnd and window tests ---------------------------------------------------------


@kernel("tcp_minshall_check")
def tcp_minshall_check(sk: TcpSock) -> bool:
    """A small segment is still unacknowledged. Kernel: tcp_minshall_check()."""
    return after(sk.snd_sml, sk.snd_una) and not after(sk.snd_sml, sk.snd_nxt)


@kernel("net/ipv4/tcp_output.c", "tcp_minshall_update")
def tcp_minshall_update(sk: TcpSock, mss_now: int, skb: SkBuff) -> None:
    """Kernel: net/ipv4/tcp_output.c, tcp_minshall_update()."""
    if skb.tail - skb.data < skb.cb.pcount * mss_now:
        sk.snd_sml = skb.cb.end_seq


@kernel("tcp_nagle_check")
def tcp_nagle_check(partial: bool, sk: TcpSock, nonagle: int) -> bool:
    """True if Nagle holds a partial segment back. Kernel: tcp_nagle_check()."""
    return partial and (
        bool(nonagle & TCP_NAGLE_CORK)
        or (not nonagle and bool(sk.packets_out) and tcp_minshall_check(sk))
    )


@kernel("tcp_nagle_test")
def tcp_nagle_test(sk: TcpSock, skb: SkBuff, cur_mss: int, nonagle: int) -> bool:
    """May this (one-segment) skb go now? Kernel: tcp_nagle_test()."""
    if nonagle & TCP_NAGLE_PUSH:
        return True
    if sk.snd_una != sk.snd_up or skb.cb.tcp_flags & TCPHDR_FIN:  # urgent mode, FIN
        return True
    return not tcp_nagle_check(skb.tail - skb.data < cur_mss, sk, nonagle)


@kernel("net/ipv4/tcp_output.c", "tcp_cwnd_test", "include/net/tcp.h", "tcp_packets_in_flight")
def tcp_cwnd_test(sk: TcpSock, skb: SkBuff) -> int:
    """Segments the congestion window allows now (0: none).

    Kernel: net/ipv4/tcp_output.c, tcp_cwnd_test(); include/net/tcp.h,
    tcp_packets_in_flight() (written out: once per skb tcp_write_xmit looks at).
    """
    tcb: TcpSkbCb = skb.cb
    if tcb.tcp_flags & TCPHDR_FIN and tcb.pcount == 1:
        return 1  # do not be strict about the final FIN
    # tcp_packets_in_flight(), written out (keep in step with helpers.tcp_packets_in_flight)
    in_flight = sk.packets_out - (sk.sacked_out + sk.lost_out) + sk.retrans_out
    cwnd = sk.snd_cwnd
    if in_flight >= cwnd:
        return 0
    halfcwnd = cwnd >> 1 or 1  # max(cwnd >> 1, 1): at least two GSO packets in flight
    room = cwnd - in_flight
    return halfcwnd if halfcwnd < room else room  # min()


@kernel("tcp_snd_wnd_test", "after")
def tcp_snd_wnd_test(sk: TcpSock, skb: SkBuff, cur_mss: int) -> bool:
    """Does the first segment of *skb* fit the peer's window? Kernel: tcp_snd_wnd_test();
    after(), written out."""
    tcb: TcpSkbCb = skb.cb
    end_seq = tcb.end_seq
    if skb.tail - skb.data > cur_mss:
        end_seq = (tcb.seq + cur_mss) & M32
    return ((tcp_wnd_end(sk) - end_seq) & M32) <= 0x7FFFFFFF  # not after()


@kernel("tcp_mss_split_point")
def tcp_mss_split_point(sk: TcpSock, skb: SkBuff, mss_now: int, max_segs: int, nonagle: int) -> int:
    """How much of *skb* may go right away. Kernel: tcp_mss_split_point()."""
    window: int = (tcp_wnd_end(sk) - skb.cb.seq) & M32
    max_len: int = mss_now * max_segs
    if max_len <= window and skb is not sk.write_queue[-1]:
        return max_len
    needed: int = min(skb.tail - skb.data, window)
    if max_len <= needed:
        return max_len
    partial = needed % mss_now
    if tcp_nagle_check(partial != 0, sk, nonagle):
        return needed - partial
    return needed


@kernel("net/ipv4/tcp_output.c", "tcp_tso_should_defer")
def tcp_tso_should_defer(sk: TcpSock, skb: SkBuff, max_segs: int) -> tuple[bool, bool, bool]:
    """Wait for more window instead of sending a small TSO skb now?

    Returns ``(defer, cwnd_limited, rwnd_limited)``. Kernel:
    net/ipv4/tcp_output.c, tcp_tso_should_defer() (John Heffner's TSO Nagle).
    """
    if sk.icsk_ca_state >= TCP_CA_Recovery:
        return False, False, False
    if sk.net.clock.jiffies - sk.lsndtime > 0:  # only defer if the last write was recent
        return False, False, False
    in_flight = tcp_packets_in_flight(sk)
    tcb: TcpSkbCb = skb.cb
    send_win = (tcp_wnd_end(sk) - tcb.seq) & M32
    cong_win = (sk.snd_cwnd - in_flight) * sk.mss_cache
    limit = send_win if send_win < cong_win else cong_win
    length = skb.tail - skb.data
    if limit >= max_segs * sk.mss_cache:
        return False, False, False
    if skb is not sk.write_queue[-1] and limit >= length:
        return False, False, False
    win_divisor = sk.tcp.sysctl_tcp_tso_win_divisor
    if win_divisor:
        chunk = min(sk.snd_wnd, sk.snd_cwnd * sk.mss_cache) // win_divisor
        if limit >= chunk:
            return False, False, False
    elif limit > 3 * sk.mss_cache:
        return False, False, False
    if not sk.rtx_queue:
        return False, False, False
    age = sk.tcp_mstamp - sk.rtx_queue[0].cb.mstamp
    if age < (sk.srtt_us >> 4):  # the next ACK may come too late: do not defer
        return False, False, False
    if cong_win < send_win:
        if cong_win <= length:
            return True, True, False
    elif send_win <= length:
        return True, False, True
    if tcb.tcp_flags & TCPHDR_FIN:
        return False, False, False
    return True, False, False


@kernel("net/ipv4/tcp_output.c", "tcp_small_queue_check")
def tcp_small_queue_check(sk: TcpSock, skb: SkBuff, factor: int) -> bool:
    """TCP Small Queues: hold back when too much is queued below TCP.

    Kernel: net/ipv4/tcp_output.c, tcp_small_queue_check().
    """
    limit = 2 * skb.truesize
    paced = sk.sk_pacing_rate >> sk.sk_pacing_shift
    if paced > limit:  # max(), min() as conditionals
        limit = paced
    cap = sk.tcp.sysctl_tcp_limit_output_bytes
    limit = (limit if limit < cap else cap) << factor
    if sk.sk_wmem_alloc > limit:
        if not sk.rtx_queue:
            return False
        sk.tsq_throttled = True
        if sk.sk_wmem_alloc > limit:
            return True
        sk.tsq_throttled = False
    return False


@kernel("net/ipv4/tcp_output.c", "tcp_cwnd_validate")
def tcp_cwnd_validate(sk: TcpSock, is_cwnd_limited: bool) -> None:
    """Remember whether the flight was cwnd-limited (RFC 7661 style).

    Kernel: net/ipv4/tcp_output.c, tcp_cwnd_validate().
    """
    if (
        not before(sk.snd_una, sk.max_packets_seq)
        or sk.packets_out > sk.max_packets_out
        or is_cwnd_limited
    ):
        sk.max_packets_out = sk.packets_out
        sk.max_packets_seq = sk.snd_nxt
        sk.is_cwnd_limited = is_cwnd_limited
    if tcp_is_cwnd_limited(sk):
        sk.snd_cwnd_used = 0
        sk.snd_cwnd_stamp = sk.net.clock.jiffies
    else:
        if sk.packets_out > sk.snd_cwnd_used:
            sk.snd_cwnd_used = sk.packets_out
        if (
            sk.tcp.sysctl_tcp_slow_start_after_idle
            and sk.net.clock.jiffies - sk.snd_cwnd_stamp >= sk.icsk_rto
        ):
            tcp_cwnd_application_limited(sk)
        # the application hits the send buffer: nothing left to send, a writer waits
        if (
            not sk.write_queue
            and sk.sk_socket_nospace
            and sk.state in (TCP_ESTABLISHED, TCP_CLOSE_WAIT)
        ):
            tcp_chrono_start(sk, TCP_CHRONO_SNDBUF_LIMITED)


@kernel("net/ipv4/tcp_output.c", "tcp_cwnd_application_limited")
def tcp_cwnd_application_limited(sk: TcpSock) -> None:
    """RFC 2861: shrink a window the application did not use for an RTO.

    Kernel: net/ipv4/tcp_output.c, tcp_cwnd_application_limited().
    """
    if sk.icsk_ca_state == TCP_CA_Open and not sk.sk_socket_nospace:
        init_win = tcp_init_cwnd(sk)
        win_used = max(sk.snd_cwnd_used, init_win)
        if win_used < sk.snd_cwnd:
            sk.snd_ssthresh = tcp_current_ssthresh(sk)
            sk.snd_cwnd = (sk.snd_cwnd + win_used) >> 1
        sk.snd_cwnd_used = 0
    sk.snd_cwnd_stamp = sk.net.clock.jiffies


@kernel("net/ipv4/tcp_output.c", "tcp_write_xmit", "include/net/tcp.h", "tcp_packets_in_flight")
def tcp_write_xmit(sk: TcpSock, mss_now: int, nonagle: int, push_one: int) -> bool:
    """Send what the windows, Nagle and TSO deferral allow from the send head.

    Returns True if nothing is in flight, data is queued, and nothing could be
    sent (the caller arms the zero-window probe).

    Kernel: net/ipv4/tcp_output.c, tcp_write_xmit(); include/net/tcp.h,
    tcp_packets_in_flight() (written out at the end).
    """
    if TIMED:
        spend("tcp_write_xmit")
    sent_pkts = 0
    sk.tcp_mstamp = sk.tcp.tcp_clock_us()
    is_cwnd_limited = False
    is_rwnd_limited = False
    max_segs = tcp_tso_segs(sk, mss_now)
    wq = sk.write_queue
    while wq:
        skb = wq[0]
        tcb: TcpSkbCb = skb.cb
        tso_segs = tcp_init_tso_segs(skb, mss_now)
        cwnd_quota = tcp_cwnd_test(sk, skb)
        if not cwnd_quota:
            if push_one == 2:
                cwnd_quota = 1  # force out a loss probe
            else:
                break
        if not tcp_snd_wnd_test(sk, skb, mss_now):
            is_rwnd_limited = True
            break
        if tso_segs == 1:
            last = skb is wq[-1]
            if not tcp_nagle_test(sk, skb, mss_now, nonagle if last else TCP_NAGLE_PUSH):
                break
        elif not push_one:
            defer, cl, rl = tcp_tso_should_defer(sk, skb, max_segs)
            if defer:
                is_cwnd_limited |= cl
                is_rwnd_limited |= rl
                break
        limit = mss_now
        if tso_segs > 1 and sk.snd_una == sk.snd_up:
            limit = tcp_mss_split_point(sk, skb, mss_now, min(cwnd_quota, max_segs), nonagle)
        if skb.tail - skb.data > limit and tso_fragment(sk, skb, limit, mss_now):
            break
        if tcp_small_queue_check(sk, skb, 0):
            break
        if tcb.end_seq == tcb.seq:  # an empty skb: a writer sleeps in sendmsg
            break
        if tcp_transmit_skb(sk, skb, True):
            break
        tcp_event_new_data_sent(sk, skb)
        tcp_minshall_update(sk, mss_now, skb)
        sent_pkts += tcb.pcount
        if push_one:
            break
    if is_rwnd_limited:
        tcp_chrono_start(sk, TCP_CHRONO_RWND_LIMITED)
    else:
        tcp_chrono_stop(sk, TCP_CHRONO_RWND_LIMITED)
    # tcp_packets_in_flight(), written out (keep in step with helpers.tcp_packets_in_flight)
    in_flight = sk.packets_out - (sk.sacked_out + sk.lost_out) + sk.retrans_out
    is_cwnd_limited |= in_flight >= sk.snd_cwnd
    if sent_pkts or is_cwnd_limited:
        tcp_cwnd_validate(sk, is_cwnd_limited)
    if sent_pkts:
        if tcp_in_cwnd_reduction(sk):
            sk.prr_out += sent_pkts
        if push_one != 2:
            tcp_schedule_loss_probe(sk, False)
        return False
    return not sk.packets_out and bool(wq)


@kernel("net/ipv4/tcp_output.c", "tcp_schedule_loss_probe")
def tcp_schedule_loss_probe(sk: TcpSock, advancing_rto: bool) -> bool:
    """Arm a tail loss probe in about two RTTs (SACK flows, Open/CWR state).

    Returns False when no probe is due (the caller arms the RTO instead).

    Kernel: net/ipv4/tcp_output.c, tcp_schedule_loss_probe().
    """
    early_retrans = sk.tcp.sysctl_tcp_early_retrans
    if (
        early_retrans not in (3, 4)
        or not sk.packets_out
        or not sk.sack_ok
        or sk.icsk_ca_state not in (TCP_CA_Open, TCP_CA_CWR)
    ):
        return False
    tcp = sk.tcp
    # PTO = 2·srtt, + RTO_min for a delayed ACK when one segment is out
    # (+ 2 ms otherwise); TCP_TIMEOUT_INIT without an RTT sample
    if sk.srtt_us:
        timeout_us = sk.srtt_us >> 2
        if sk.packets_out == 1:
            timeout_us += tcp.jiffies_to_usecs(tcp.TCP_RTO_MIN)  # tcp_rto_min_us()
        else:
            timeout_us += TCP_TIMEOUT_MIN_US
        timeout = tcp.usecs_to_jiffies(timeout_us)
    else:
        timeout = tcp.TCP_TIMEOUT_INIT
    # if the RTO formula yields an earlier time, use that
    if advancing_rto:
        rto_delta = sk.icsk_rto
    else:
        rto_delta = tcp_rto_delta(sk)
    if 0 < rto_delta < timeout:  # min()
        timeout = rto_delta
    inet_csk_reset_xmit_timer(sk, ICSK_TIME_LOSS_PROBE, timeout, tcp.TCP_RTO_MAX)
    return True


@kernel("net/ipv4/tcp_output.c", "skb_still_in_host_queue")
def skb_still_in_host_queue(sk: TcpSock, skb: SkBuff) -> bool:
    """A previous clone of *skb* still sits in a qdisc or device queue.

    The kernel knows this from fast clones; here the clone shares the buffer
    and has not been freed. Kernel: net/ipv4/tcp_output.c, skb_still_in_host_queue().
    """
    if skb.cloned and getattr(skb, "_in_host", False):
        sk.ext.TCPSpuriousRtxHostQueues += 1
        return True
    return False


@kernel("net/ipv4/tcp_output.c", "tcp_send_loss_probe")
def tcp_send_loss_probe(sk: TcpSock) -> None:
    """The probe timeout fired: send new data, or retransmit the last segment
    (one probe per episode: ``tlp_high_seq`` is snd_nxt until an ACK ends it,
    tcp_process_tlp_ack).

    Kernel: net/ipv4/tcp_output.c, tcp_send_loss_probe().
    """
    mss = tcp_current_mss(sk)
    if sk.tlp_high_seq:
        tcp_rearm_rto(sk)
        return
    sk.tlp_retrans = 0
    wq = sk.write_queue
    if wq and tcp_snd_wnd_test(sk, wq[0], mss):
        pcount = sk.packets_out
        tcp_write_xmit(sk, mss, TCP_NAGLE_OFF, 2)
        if sk.packets_out > pcount:
            _probe_sent(sk)
            return
        tcp_rearm_rto(sk)
        return
    if not sk.rtx_queue:
        sk.icsk_pending = 0
        return
    skb = sk.rtx_queue[-1]
    if skb_still_in_host_queue(sk, skb):
        tcp_rearm_rto(sk)
        return
    pcount = skb.cb.pcount
    if pcount > 1 and skb.tail - skb.data > (pcount - 1) * mss:
        if tcp_fragment(sk, True, skb, (pcount - 1) * mss, mss):
            tcp_rearm_rto(sk)
            return
        skb = sk.rtx_queue[-1]
    if __tcp_retransmit_skb(sk, skb, 1):
        tcp_rearm_rto(sk)
        return
    sk.tlp_retrans = 1
    _probe_sent(sk)


def _probe_sent(sk: TcpSock) -> None:
    sk.tlp_high_seq = sk.snd_nxt
    sk.ext.TCPLossProbes += 1
    sk.icsk_pending = 0  # tcp_rearm_rto restarts the timer from now
    tcp_rearm_rto(sk)


@kernel("net/ipv4/tcp_output.c", "__tcp_push_pending_frames")
def __tcp_push_pending_frames(sk: TcpSock, cur_mss: int, nonagle: int) -> None:
    """Kernel: net/ipv4/tcp_output.c, __tcp_push_pending_frames()."""
    if sk.state == TCP_CLOSE:
        return
    if tcp_write_xmit(sk, cur_mss, nonagle, 0):
        tcp_check_probe_timer(sk)


@kernel("include/net/tcp.h", "tcp_push_pending_frames")
def tcp_push_pending_frames(sk: TcpSock) -> None:
    """Kernel: include/net/tcp.h, tcp_push_pending_frames()."""
    if sk.write_queue:
        __tcp_push_pending_frames(sk, tcp_current_mss(sk), sk.nonagle)


@kernel("include/net/tcp.h", "tcp_check_probe_timer")
def tcp_check_probe_timer(sk: TcpSock) -> None:
    """Nothing in flight and data waiting: arm the zero-window probe.

    Kernel: include/net/tcp.h, tcp_check_probe_timer().
    """
    if not sk.packets_out and not sk.icsk_pending:
        inet_csk_reset_xmit_timer(sk, ICSK_TIME_PROBE0, tcp_probe0_base(sk), sk.tcp.TCP_RTO_MAX)


@kernel("include/net/tcp.h", "tcp_probe0_base")
def tcp_probe0_base(sk: TcpSock) -> int:
    """Kernel: include/net/tcp.h, tcp_probe0_base()."""
    return max(sk.icsk_rto, sk.tcp.TCP_RTO_MIN)


@kernel("include/net/tcp.h", "tcp_probe0_when")
def tcp_probe0_when(sk: TcpSock, max_when: int) -> int:
    """Kernel: include/net/tcp.h, tcp_probe0_when()."""
    return min(tcp_probe0_base(sk) << min(sk.icsk_backoff, 31), max_when)


@kernel("net/ipv4/tcp.c", "tcp_mark_push")
def tcp_mark_push(sk: TcpSock, skb: SkBuff) -> None:
    """Kernel: net/ipv4/tcp.c, tcp_mark_push()."""
    skb.cb.tcp_flags |= TCPHDR_PSH
    sk.pushed_seq = sk.write_seq


@kernel("net/ipv4/tcp.c", "forced_push", "after")
def forced_push(sk: TcpSock) -> bool:
    """Kernel: net/ipv4/tcp.c, forced_push(); after(), written out."""
    return ((sk.pushed_seq + (sk.max_window >> 1) - sk.write_seq) & M32) > 0x7FFFFFFF


@kernel("net/ipv4/tcp.c", "tcp_should_autocork")
def tcp_should_autocork(sk: TcpSock, skb: SkBuff, size_goal: int) -> bool:
    """Hold a small tail back while earlier segments still sit below TCP.

    Autocorking (``net.ipv4.tcp_autocorking``): when the last write left an
    skb smaller than the size goal and transmitted skbs are still charged to
    the socket (in a qdisc, a device ring, a veth peer's queue: they are
    uncharged when the receiver's ``ip_rcv`` orphans them or the driver frees
    them), more writes will likely grow it; the TX completion
    (``tcp_wfree`` → TSQ handler) sends it. Small writes thus leave as large
    GSO skbs, and a GRO receiver sees fewer PSH boundaries.

    Kernel: net/ipv4/tcp.c, tcp_should_autocork().
    """
    return (
        skb.tail - skb.data < size_goal
        and bool(sk.tcp.sysctl_tcp_autocorking)
        and bool(sk.rtx_queue)
        and sk.sk_wmem_alloc > skb.truesize
    )  # tcp_skb_can_collapse_to(): no MSG_EOR here


@kernel("net/ipv4/tcp.c", "tcp_push")
def tcp_push(sk: TcpSock, flags: int, mss_now: int, nonagle: int, size_goal: int) -> None:
    """End of a sendmsg: mark PSH and send (or cork for a bit: autocorking).

    Kernel: net/ipv4/tcp.c, tcp_push().
    """
    wq = sk.write_queue
    if not wq:
        return
    skb = wq[-1]
    if not flags & 0x8000 or forced_push(sk):  # !MSG_MORE
        tcp_mark_push(sk, skb)
    if tcp_should_autocork(sk, skb, size_goal):
        if not sk.tsq_throttled:  # the TX completion (tcp_wfree) sends it
            sk.ext.TCPAutoCorking += 1
            sk.tsq_throttled = True
        if sk.sk_wmem_alloc > skb.truesize:  # no completion came in between
            return
    if flags & 0x8000:
        nonagle = TCP_NAGLE_CORK
    __tcp_push_pending_frames(sk, mss_now, nonagle)


# -- ACKs ----------------------------------------------------------------------------------


@kernel("net/ipv4/tcp_output.c", "tcp_send_delayed_ack")
def tcp_send_delayed_ack(sk: TcpSock) -> None:
    """Arm the delayed-ACK timer (or ACK now if it is overdue).

    Kernel: net/ipv4/tcp_output.c, tcp_send_delayed_ack().
    """
    tcp = sk.tcp
    ato = sk.icsk_ack_ato
    if ato > tcp.TCP_DELACK_MIN:
        max_ato = tcp.hz // 2
        if sk.icsk_ack_pingpong or sk.icsk_ack_pending & ICSK_ACK_PUSHED:
            max_ato = tcp.TCP_DELACK_MAX
        if sk.srtt_us:
            rtt = max(tcp.usecs_to_jiffies(sk.srtt_us >> 3), tcp.TCP_DELACK_MIN)
            if rtt < max_ato:
                max_ato = rtt
        ato = min(ato, max_ato)
    now = sk.net.clock.jiffies
    timeout = now + ato
    if sk.icsk_ack_pending & ICSK_ACK_TIMER:
        if sk.icsk_ack_timeout <= now + (ato >> 2):
            tcp_send_ack(sk)
            return
        if timeout >= sk.icsk_ack_timeout:
            timeout = sk.icsk_ack_timeout
    sk.icsk_ack_pending |= ICSK_ACK_SCHED | ICSK_ACK_TIMER
    sk.icsk_ack_timeout = timeout
    sk.delack_timer.mod(timeout)


@kernel("tcp_acceptable_seq")
def tcp_acceptable_seq(sk: TcpSock) -> int:
    """The sequence number for a segment without data. Kernel: tcp_acceptable_seq()."""
    wnd_end = tcp_wnd_end(sk)
    if not before(wnd_end, sk.snd_nxt) or (
        sk.wscale_ok and ((sk.snd_nxt - wnd_end) & M32) < (1 << sk.rcv_wscale)
    ):
        return sk.snd_nxt
    return wnd_end


@kernel("net/ipv4/tcp_output.c", "__tcp_send_ack")
def tcp_send_ack(sk: TcpSock, rcv_nxt: int | None = None) -> None:
    """Send a pure ACK (it carries the window and SACKs).

    Kernel: net/ipv4/tcp_output.c, __tcp_send_ack().
    """
    if TIMED:
        spend("__tcp_send_ack")
    if sk.state == TCP_CLOSE:
        return
    skb = tcp_stream_alloc_skb(sk)
    tcp_init_nondata_skb(skb, tcp_acceptable_seq(sk), TCPHDR_ACK)
    sk.tcp_mstamp = sk.tcp.tcp_clock_us()
    tcp_transmit_skb(sk, skb, False, rcv_nxt)


@kernel("net/ipv4/tcp_output.c", "tcp_xmit_probe_skb")
def tcp_xmit_probe_skb(sk: TcpSock, urgent: int, mib: str) -> int:
    """An out-of-date ACK that makes the peer answer (keepalive, window probe).

    Kernel: net/ipv4/tcp_output.c, tcp_xmit_probe_skb().
    """
    skb = tcp_stream_alloc_skb(sk)
    tcp_init_nondata_skb(skb, (sk.snd_una - (0 if urgent else 1)) & M32, TCPHDR_ACK)
    setattr(sk.ext, mib, getattr(sk.ext, mib) + 1)
    return tcp_transmit_skb(sk, skb, False)


@kernel("net/ipv4/tcp_output.c", "tcp_write_wakeup")
def tcp_write_wakeup(sk: TcpSock, mib: str) -> int:
    """Probe a (zero) window or keep alive: send data if the window allows, else a probe.

    Kernel: net/ipv4/tcp_output.c, tcp_write_wakeup().
    """
    if sk.state == TCP_CLOSE:
        return -1
    wq = sk.write_queue
    if wq and before(wq[0].cb.seq, tcp_wnd_end(sk)):
        skb = wq[0]
        tcb: TcpSkbCb = skb.cb
        mss = tcp_current_mss(sk)
        seg_size = (tcp_wnd_end(sk) - tcb.seq) & M32
        if before(sk.pushed_seq, tcb.end_seq):
            sk.pushed_seq = tcb.end_seq
        if seg_size < ((tcb.end_seq - tcb.seq) & M32) or skb.tail - skb.data > mss:
            seg_size = min(seg_size, mss)
            tcb.tcp_flags |= TCPHDR_PSH
            if tcp_fragment(sk, False, skb, seg_size, mss):
                return -1
        elif not tcb.pcount:
            tcp_set_skb_tso_segs(skb, mss)
        tcb.tcp_flags |= TCPHDR_PSH
        err = tcp_transmit_skb(sk, skb, True)
        if not err:
            tcp_event_new_data_sent(sk, skb)
        return err
    return tcp_xmit_probe_skb(sk, 0, mib)


@kernel("net/ipv4/tcp_output.c", "tcp_send_probe0")
def tcp_send_probe0(sk: TcpSock) -> None:
    """The zero-window probe timer fired. Kernel: net/ipv4/tcp_output.c, tcp_send_probe0()."""
    err = tcp_write_wakeup(sk, "TCPWinProbe")
    if sk.packets_out or not sk.write_queue:
        sk.icsk_probes_out = 0
        sk.icsk_backoff = 0
        sk.icsk_probes_tstamp = 0
        return
    tcp = sk.tcp
    sk.icsk_probes_out += 1
    if err <= 0:
        if sk.icsk_backoff < tcp.sysctl_tcp_retries2:
            sk.icsk_backoff += 1
        timeout = tcp_probe0_when(sk, tcp.TCP_RTO_MAX)
    else:  # refused locally: "let senders fight for local resources conservatively"
        timeout = tcp.TCP_RESOURCE_PROBE_INTERVAL
    timeout = tcp_clamp_probe0_to_user_timeout(sk, timeout)
    inet_csk_reset_xmit_timer(sk, ICSK_TIME_PROBE0, timeout, tcp.TCP_RTO_MAX)


@kernel("net/ipv4/tcp_timer.c", "tcp_clamp_probe0_to_user_timeout")
def tcp_clamp_probe0_to_user_timeout(sk: TcpSock, when: int) -> int:
    """The next probe, cut short to fire when TCP_USER_TIMEOUT runs out (counted
    from the first probe, ``icsk_probes_tstamp``), at least TCP_TIMEOUT_MIN.

    Kernel: net/ipv4/tcp_timer.c, tcp_clamp_probe0_to_user_timeout().
    """
    user_timeout = sk.icsk_user_timeout
    if not user_timeout or not sk.icsk_probes_tstamp:
        return when
    tcp = sk.tcp
    elapsed = max(sk.net.clock.jiffies - sk.icsk_probes_tstamp, 0)
    remaining = (user_timeout * tcp.hz + 999) // 1000 - elapsed  # msecs_to_jiffies()
    return min(max(remaining, tcp.TCP_TIMEOUT_MIN), when)


# -- connection setup and teardown ----------------------------------------------------------


@kernel("net/ipv4/tcp_output.c", "tcp_connect_init")
def tcp_connect_init(sk: TcpSock) -> None:
    """Everything of connect() that does not depend on the family.

    Kernel: net/ipv4/tcp_output.c, tcp_connect_init().
    """
    tcp = sk.tcp
    sk.tcp_header_len = 20 + (12 if tcp.sysctl_tcp_timestamps else 0)
    if sk.user_mss:
        sk.mss_clamp = sk.user_mss
    sk.max_window = 0
    tcp_mtup_init(sk)
    tcp_sync_mss(sk, sk.af_ops.dst_mtu(sk))
    sk.advmss = tcp_mss_clamp(sk, sk.af_ops.advmss(sk))
    tcp_initialize_rcv_mss(sk)
    if sk.sk_userlocks & SOCK_RCVBUF_LOCK and (
        sk.window_clamp > tcp_full_space(sk) or sk.window_clamp == 0
    ):
        sk.window_clamp = tcp_full_space(sk)
    mss = sk.advmss - (sk.tcp_header_len - 20 if sk.ts_recent_stamp else 0)
    sk.rcv_wnd, sk.window_clamp, sk.rcv_wscale = tcp_select_initial_window(
        sk, tcp_full_space(sk), mss, sk.window_clamp, bool(tcp.sysctl_tcp_window_scaling), 0
    )
    sk.rcv_ssthresh = sk.rcv_wnd
    sk.sk_err = 0
    sk.sock_flag_done = False
    sk.snd_wnd = 0
    sk.snd_wl1 = 0
    tcp_write_queue_purge(sk)
    sk.snd_una = sk.write_seq
    sk.snd_sml = sk.write_seq
    sk.snd_up = sk.write_seq
    sk.snd_nxt = sk.write_seq
    sk.rcv_nxt = 0
    sk.rcv_wup = 0
    sk.copied_seq = 0
    sk.icsk_rto = tcp.TCP_TIMEOUT_INIT
    sk.icsk_retransmits = 0
    sk.retrans_out = sk.lost_out = sk.sacked_out = 0
    sk.undo_marker = 0
    sk.undo_retrans = -1


@kernel("include/net/tcp.h", "tcp_mss_clamp")
def tcp_mss_clamp(sk: TcpSock, mss: int) -> int:
    """Kernel: include/net/tcp.h, tcp_mss_clamp()."""
    user_mss = sk.user_mss
    return user_mss if user_mss and user_mss < mss else mss


@kernel("net/ipv4/tcp.c", "tcp_write_queue_purge")
def tcp_write_queue_purge(sk: TcpSock) -> None:
    """Free everything queued for sending. Kernel: net/ipv4/tcp.c, tcp_write_queue_purge()."""
    for skb in sk.write_queue:
        consume_skb(skb)
    sk.write_queue.clear()
    for skb in sk.rtx_queue:
        consume_skb(skb)
    sk.rtx_queue.clear()
    sk_wmem_uncharge(sk, sk.sk_wmem_queued)  # tcp_wmem_free_skb() of each
    sk.highest_sack = None
    sk.lost_skb_hint = None
    sk.retransmit_skb_hint = None
    sk.packets_out = 0
    sk.retrans_out = sk.lost_out = sk.sacked_out = 0


@kernel("net/ipv4/tcp_output.c", "tcp_connect")
def tcp_connect(sk: TcpSock) -> int:
    """Build and send the SYN; arm its retransmission timer.

    Kernel: net/ipv4/tcp_output.c, tcp_connect().
    """
    if sk.af_ops.rebuild_header(sk):
        return -113  # -EHOSTUNREACH
    tcp_connect_init(sk)
    skb = tcp_stream_alloc_skb(sk)
    tcb = tcp_init_nondata_skb(skb, sk.write_seq, TCPHDR_SYN)
    sk.write_seq = (sk.write_seq + 1) & M32
    sk.tcp_mstamp = sk.tcp.tcp_clock_us()
    sk.retrans_stamp = sk.tcp_mstamp // 1000
    tcb.end_seq = sk.write_seq
    sk_wmem_charge(sk, skb.truesize)  # tcp_connect_queue_skb()
    sk.packets_out += 1
    sk.rtx_queue.append(skb)
    # send off the SYN; with Fast Open, with data
    if sk.fastopen_req is not None:
        err = tcp_send_syn_data(sk, skb)
    else:
        err = tcp_transmit_skb(sk, skb, True)
    if err == -111:  # -ECONNREFUSED
        return err
    sk.snd_nxt = sk.write_seq
    sk.pushed_seq = sk.write_seq
    sk.mib.ActiveOpens += 1
    inet_csk_reset_xmit_timer(sk, ICSK_TIME_RETRANS, sk.icsk_rto, sk.tcp.TCP_RTO_MAX)
    return 0


@kernel("net/ipv4/tcp_output.c", "tcp_send_synack")
def tcp_send_synack(sk: TcpSock) -> int:
    """Simultaneous open: turn our SYN into a SYN-ACK and send it.

    Kernel: net/ipv4/tcp_output.c, tcp_send_synack().
    """
    if not sk.rtx_queue or not sk.rtx_queue[0].cb.tcp_flags & TCPHDR_SYN:
        return -14
    skb = sk.rtx_queue[0]
    tcb: TcpSkbCb = skb.cb
    if not tcb.tcp_flags & TCPHDR_ACK:
        if skb.cloned:
            nskb = skb.copy()
            nskb.cb = tcb
            sk.rtx_queue[0] = nskb
            if sk.highest_sack is skb:
                sk.highest_sack = nskb
            consume_skb(skb)
            skb = nskb
        tcb.tcp_flags |= TCPHDR_ACK
    return tcp_transmit_skb(sk, skb, True)


@kernel("net/ipv4/tcp_output.c", "tcp_make_synack", "tcp_synack_options")
def tcp_make_synack(sk: TcpSock, req: RequestSock, mss: int) -> SkBuff:
    """Build the SYN-ACK answering *req* (headers only; IP is added by the caller).

    Kernel: net/ipv4/tcp_output.c, tcp_make_synack() / tcp_synack_options().
    """
    skb = tcp_stream_alloc_skb(sk)
    opts = TcpOutOptions(mss=mss)
    if req.wscale_ok:
        opts.ws = req.rcv_wscale
    tsval_ms = sk.tcp.tcp_time_stamp_ms()
    if req.tstamp_ok:
        if req.cookie_ts:  # TCP_SYNACK_COOKIE: the SYN's options in the low bits
            tsval_ms = cookie_init_timestamp(req, tsval_ms)
        opts.ts = ((tsval_ms + req.ts_off) & M32, req.ts_recent)
    if req.sack_ok:
        opts.sack_perm = True
    foc = req.fastopen_cookie
    if foc is not None and foc.len >= 0:
        if MAX_TCP_OPTION_SPACE - opts.size() >= fastopen_option_space(foc.len, foc.exp):
            opts.fastopen = foc.option()
    hlen = 20 + opts.size()
    skb.data -= hlen
    th = skb.data
    skb.transport_header = th
    buf = skb.buf
    flags = TCPHDR_SYN | TCPHDR_ACK
    TCP_HDR.pack_into(
        buf,
        th,
        req.num,
        req.rmt_port,
        req.snt_isn,
        req.rcv_nxt,
        (hlen >> 2) << 4,
        flags,
        min(req.rsk_rcv_wnd, U16_MAX),  # never scaled in a SYN-ACK
        0,
        0,
    )
    opts.write(buf, th + 20)
    skb.ip_summed = CHECKSUM_PARTIAL
    skb.hash = req.txhash
    sk.mib.OutSegs += 1
    return skb


@kernel("net/ipv4/tcp_output.c", "tcp_send_fin")
def tcp_send_fin(sk: TcpSock) -> None:
    """Queue our FIN (on the last unsent skb if there is one) and push.

    Kernel: net/ipv4/tcp_output.c, tcp_send_fin().
    """
    wq = sk.write_queue
    if wq:
        tskb = wq[-1]
        tcb: TcpSkbCb = tskb.cb
        tcb.tcp_flags |= TCPHDR_FIN
        tcb.end_seq = (tcb.end_seq + 1) & M32
        sk.write_seq = (sk.write_seq + 1) & M32
    else:
        skb = tcp_stream_alloc_skb(sk)
        tcp_init_nondata_skb(skb, sk.write_seq, TCPHDR_ACK | TCPHDR_FIN)
        tcp_queue_skb(sk, skb)
    __tcp_push_pending_frames(sk, tcp_current_mss(sk), TCP_NAGLE_OFF)


@kernel("net/ipv4/tcp_output.c", "tcp_send_active_reset")
def tcp_send_active_reset(sk: TcpSock) -> None:
    """Abort: send a RST from the socket's state (RFC 2525 §2.17).

    Kernel: net/ipv4/tcp_output.c, tcp_send_active_reset().
    """
    sk.mib.OutRsts += 1
    skb = tcp_stream_alloc_skb(sk)
    tcp_init_nondata_skb(skb, tcp_acceptable_seq(sk), TCPHDR_ACK | TCPHDR_RST)
    sk.tcp_mstamp = sk.tcp.tcp_clock_us()
    if tcp_transmit_skb(sk, skb, False):
        sk.ext.TCPAbortFailed += 1


# -- retransmission -------------------------------------------------------------------------


@kernel("net/ipv4/tcp_output.c", "__tcp_retransmit_skb")
def __tcp_retransmit_skb(sk: TcpSock, skb: SkBuff, segs: int) -> int:
    """Retransmit (part of) one skb. Returns 0 or a negative errno.

    Kernel: net/ipv4/tcp_output.c, __tcp_retransmit_skb().
    """
    tcb: TcpSkbCb = skb.cb
    if sk.icsk_mtup_probe_size:
        sk.icsk_mtup_probe_size = 0
    if sk.sk_wmem_alloc > min(sk.sk_wmem_queued + (sk.sk_wmem_queued >> 2), sk.sk_sndbuf):
        return -11  # -EAGAIN: do not send more than we queued
    if before(tcb.seq, sk.snd_una):
        if before(tcb.end_seq, sk.snd_una):
            return -22
        tcp_trim_head(sk, skb, (sk.snd_una - tcb.seq) & M32)
    if sk.af_ops.rebuild_header(sk):
        return -113
    cur_mss = tcp_current_mss(sk)
    # the peer shrank its window and this is out of it (a probe at snd_una is fine)
    if not before(tcb.seq, tcp_wnd_end(sk)) and tcb.seq != sk.snd_una:
        return -11
    length = cur_mss * segs
    if skb.tail - skb.data > length:
        if tcp_fragment(sk, True, skb, length, cur_mss):
            return -12
    else:
        diff = tcb.pcount
        tcp_set_skb_tso_segs(skb, cur_mss)
        diff -= tcb.pcount
        if diff:
            tcp_adjust_pcount(sk, skb, diff)
        if skb.tail - skb.data < cur_mss:
            tcp_retrans_try_collapse(sk, skb, cur_mss)
    segs = tcb.pcount
    sk.mib.RetransSegs += segs
    if tcb.tcp_flags & TCPHDR_SYN:
        sk.ext.TCPSynRetrans += 1
    sk.total_retrans += segs
    sk.bytes_retrans += skb.tail - skb.data
    err = tcp_transmit_skb(sk, skb, True)
    # always: no spuriously low RTT sample from a timestamp of a transmit that
    # never happened (the skb was stamped even if the qdisc refused it)
    tcb.sacked |= TCPCB_EVER_RETRANS
    if err and err != -16:
        sk.ext.TCPRetransFail += segs
    return err


@kernel("net/ipv4/tcp_output.c", "tcp_retrans_try_collapse", "tcp_collapse_retrans")
def tcp_retrans_try_collapse(sk: TcpSock, to: SkBuff, space: int) -> None:
    """Merge small following skbs into a retransmitted one (fewer packets).

    Kernel: net/ipv4/tcp_output.c, tcp_retrans_try_collapse() / tcp_collapse_retrans().
    """
    if not sk.tcp.sysctl_tcp_retrans_collapse:
        return
    tcb: TcpSkbCb = to.cb
    if tcb.tcp_flags & TCPHDR_SYN:
        return
    q = sk.rtx_queue
    i = q.index(to)
    space -= to.tail - to.data
    while i + 1 < len(q):
        nxt = q[i + 1]
        ncb: TcpSkbCb = nxt.cb
        if ncb.pcount > 1 or nxt.cloned or ncb.sacked & TCPCB_SACKED_ACKED:
            break
        if tcb.pcount > 1 or to.cloned or tcb.sacked & TCPCB_SACKED_ACKED:
            break
        if tcb.tcp_flags & TCPHDR_FIN:
            break
        nlen = nxt.tail - nxt.data
        space -= nlen
        if space < 0:
            break
        if after(ncb.end_seq, tcp_wnd_end(sk)):
            break
        # tcp_collapse_retrans(): append next's data, take over its range and flags
        if to.tail != len(to.buf):
            del to.buf[to.tail :]
        to.buf += nxt.buf[nxt.data : nxt.tail]
        to.tail += nlen
        # tcp_skb_shift() -> skb_shift(): the bytes' truesize moves with them
        # (skb_len_add(skb, -shiftlen); skb_len_add(tgt, shiftlen))
        nxt.truesize = nxt.truesize - nlen
        to.truesize = to.truesize + nlen
        if sk.highest_sack is nxt:
            sk.highest_sack = to
        tcb.end_seq = ncb.end_seq
        tcb.tcp_flags |= ncb.tcp_flags
        tcb.sacked |= ncb.sacked & TCPCB_EVER_RETRANS
        sk.lost_skb_hint = None  # tcp_clear_retrans_hints_partial()
        if sk.retransmit_skb_hint is nxt:
            sk.retransmit_skb_hint = to
        tcp_adjust_pcount(sk, nxt, ncb.pcount)
        del q[i + 1]
        # tcp_rtx_queue_unlink_and_free() -> tcp_wmem_free_skb(): what is left of next
        sk_wmem_uncharge(sk, nxt.truesize)
        consume_skb(nxt)


@kernel("net/ipv4/tcp_output.c", "tcp_retransmit_skb")
def tcp_retransmit_skb(sk: TcpSock, skb: SkBuff, segs: int) -> int:
    """Retransmit and account it. Kernel: net/ipv4/tcp_output.c, tcp_retransmit_skb()."""
    err = __tcp_retransmit_skb(sk, skb, segs)
    tcb: TcpSkbCb = skb.cb
    if err == 0:
        tcb.sacked |= TCPCB_RETRANS
        sk.retrans_out += tcb.pcount
    if not sk.retrans_stamp:  # the first *attempted* retransmission (a local drop too)
        sk.retrans_stamp = tcb.mstamp // 1000
    if sk.undo_retrans < 0:
        sk.undo_retrans = 0
    sk.undo_retrans += tcb.pcount
    return err


@kernel("net/ipv4/tcp_output.c", "tcp_xmit_retransmit_queue")
def tcp_xmit_retransmit_queue(sk: TcpSock) -> None:
    """Retransmit the segments marked lost, as far as cwnd allows.

    Kernel: net/ipv4/tcp_output.c, tcp_xmit_retransmit_queue().
    """
    if not sk.packets_out:
        return
    q = sk.rtx_queue
    if not q:
        return
    rtx_head = q[0]
    start = sk.retransmit_skb_hint
    idx = 0
    if start is not None:
        try:
            idx = q.index(start)
        except ValueError:
            idx = 0
    max_segs = tcp_tso_segs(sk, tcp_current_mss(sk))
    hole: SkBuff | None = None
    rearm_timer = False
    while idx < len(q):
        skb = q[idx]
        if hole is None:
            sk.retransmit_skb_hint = skb
        segs = sk.snd_cwnd - tcp_packets_in_flight(sk)
        if segs <= 0:
            break
        sacked = skb.cb.sacked
        segs = min(segs, max_segs)
        if sk.retrans_out >= sk.lost_out:
            break
        if not sacked & TCPCB_LOST:
            if hole is None and not sacked & (TCPCB_SACKED_RETRANS | TCPCB_SACKED_ACKED):
                hole = skb
            idx += 1
            continue
        mib = "TCPFastRetrans" if sk.icsk_ca_state != TCP_CA_Loss else "TCPSlowStartRetrans"
        if sacked & (TCPCB_SACKED_ACKED | TCPCB_SACKED_RETRANS):
            idx += 1
            continue
        if tcp_small_queue_check(sk, skb, 1):
            break
        if tcp_retransmit_skb(sk, skb, segs):
            break
        setattr(sk.ext, mib, getattr(sk.ext, mib) + skb.cb.pcount)
        if tcp_in_cwnd_reduction(sk):
            sk.prr_out += skb.cb.pcount
        if skb is rtx_head and sk.icsk_pending != ICSK_TIME_REO_TIMEOUT:
            rearm_timer = True
        # the skb may have been split: continue after it
        idx = q.index(skb) + 1
    if rearm_timer:
        inet_csk_reset_xmit_timer(sk, ICSK_TIME_RETRANS, sk.icsk_rto, sk.tcp.TCP_RTO_MAX)


# -- TCP Fast Open (netstack.tcp.fastopen has the theory of operation) ------------------------


@kernel("net/ipv4/tcp_output.c", "tcp_send_syn_data")
def tcp_send_syn_data(sk: TcpSock, syn: SkBuff) -> int:
    """Send the SYN with data when a cookie allows it, else a SYN asking for a cookie.

    *syn* is the SYN skb, already in the retransmit queue. With data, a copy
    carrying the data goes out as the SYN and stays queued as a data skb after
    it (its sequence past the SYN, flags ACK|PSH), both for retransmission.

    Kernel: net/ipv4/tcp_output.c, tcp_send_syn_data().
    """
    fo = sk.fastopen_req
    assert fo is not None
    sk.mss_clamp = sk.advmss  # if no MSS is cached
    ok, cached_mss = _fastopen.tcp_fastopen_cookie_check(sk, fo.cookie)
    if cached_mss:
        sk.mss_clamp = cached_mss
    err = 0
    if ok:
        sk.mss_clamp = tcp_mss_clamp(sk, sk.mss_clamp)
        tcp_sync_mss(sk, sk.icsk_pmtu_cookie)
        # __tcp_mtu_to_mss() less the whole option space: room for middleboxes' options
        mss_now = min(sk.icsk_pmtu_cookie - sk.af_ops.net_header_len - 20, sk.mss_clamp)
        mss_now = max(mss_now - sk.icsk_ext_hdr_len, sk.tcp.sysctl_tcp_min_snd_mss)
        space = min(mss_now - MAX_TCP_OPTION_SPACE, fo.size)
        data = fo.data if fo.data is not None else b""
        syn_data = tcp_stream_alloc_skb(sk)
        scb: TcpSkbCb = syn.cb
        dcb = TcpSkbCb(scb.seq, scb.end_seq, scb.tcp_flags)
        syn_data.cb = dcb
        if space > 0:
            buf = syn_data.buf
            if syn_data.tail != len(buf):
                del buf[syn_data.tail :]
            buf += data[:space]
            syn_data.tail += space
            syn_data.truesize += space
        else:
            space = 0
        if space == fo.size:
            fo.data = None  # nothing left for after the handshake
        fo.copied = space
        # tcp_connect_queue_skb()
        dcb.end_seq = (dcb.end_seq + space) & M32
        sk_wmem_charge(sk, syn_data.truesize)
        sk.write_seq = dcb.end_seq
        sk.packets_out += 1
        err = tcp_transmit_skb(sk, syn_data, True)
        dcb.seq = (dcb.seq + 1) & M32
        dcb.tcp_flags = TCPHDR_ACK | TCPHDR_PSH
        if not err:
            sk.syn_data = fo.copied > 0
            sk.rtx_queue.append(syn_data)
            sk.ext.TCPOrigDataSent += 1
            fo.cookie.len = -1  # no Fast Open option on SYN retransmissions
            return 0
        sk.write_queue.append(syn_data)  # not sent: it waits in the write queue
        sk.packets_out -= 1
    # fallback: a plain SYN with a cookie request
    if fo.cookie.len > 0:
        fo.cookie.len = 0
    err = tcp_transmit_skb(sk, syn, True)
    if err:
        sk.syn_fastopen = False
    fo.cookie.len = -1
    return err
