"""The minisocks: request socks (SYN_RECV) and TIME_WAIT socks, and the child a handshake makes.

Theory of operation: a SYN to a listener leaves a
:class:`~netstack.tcp.sock.RequestSock` in the established hash; the
handshake's ACK finds it there (:func:`tcp_check_req`), which builds the full
child socket (:func:`tcp_create_openreq_child`, through the family's
``syn_recv_sock``), queues it on the listener's accept queue and lets the
child process the ACK itself (:func:`tcp_child_process`: SYN_RECV →
ESTABLISHED). A closed connection that must linger (TIME_WAIT, or FIN_WAIT2
after close) gives up its full socket for a
:class:`~netstack.tcp.sock.TimewaitSock` (:func:`tcp_time_wait`) that keeps
the 4-tuple and the port, re-ACKs a retransmitted FIN, and lets a new SYN
with a higher sequence number reopen the connection.

This module imports nothing of :mod:`netstack.tcp.input`, which calls it:
options are parsed by :mod:`netstack.tcp.options`, the RTT sample and the
out-of-window rate limit come from :mod:`netstack.tcp.helpers`, and the child
reaches ``tcp_rcv_state_process`` through ``sk.sk_prot`` (the no-sibling-cycles
rule, docs/design.md).

Kernel: net/ipv4/tcp_minisocks.c, net/ipv4/inet_timewait_sock.c,
net/ipv4/inet_connection_sock.c (inet_csk_reqsk_queue_*).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from netstack.core.skbuff import DropReason, SkBuff, kfree_skb
from netstack.core.sock import SOCK_RCVBUF_LOCK, net_tx_rndhash
from netstack.sites import TIMED, kernel, spend
from netstack.tcp.helpers import tcp_ack_update_rtt, tcp_oow_rate_limited
from netstack.tcp.options import TcpOptionsReceived, tcp_parse_options
from netstack.tcp.output import tcp_full_space, tcp_select_initial_window
from netstack.tcp.sock import (
    TCP_CLOSE,
    TCP_FIN_WAIT2,
    TCP_INFINITE_SSTHRESH,
    TCP_INIT_CWND,
    TCP_SYN_RECV,
    TCP_TIME_WAIT,
    RequestSock,
    TcpSkbCb,
    TcpSock,
    TimewaitSock,
    after,
    before,
)
from netstack.tcp.state import destroyed_timer, tcp_done, tcp_paws_reject
from netstack.tcp.syncookies import (
    cookie_ecn_ok,
    cookie_timestamp_decode,
    tcp_synq_no_recent_overflow,
)
from netstack.wire.tcp import TCPHDR_ACK, TCPHDR_FIN, TCPHDR_RST, TCPHDR_SYN

if TYPE_CHECKING:
    from netstack.core.dst import DstEntry
    from netstack.tcp.sock import InetConnectionSockAfOps

__all__ = [
    "TCP_TW_ACK",
    "TCP_TW_RST",
    "TCP_TW_SUCCESS",
    "TCP_TW_SYN",
    "cookie_tcp_check",
    "inet_csk_complete_hashdance",
    "inet_csk_reqsk_queue_add",
    "inet_csk_reqsk_queue_drop",
    "inet_twsk_kill",
    "reqsk_queue_added",
    "reqsk_queue_removed",
    "reqsk_queue_unlink",
    "tcp_check_req",
    "tcp_child_process",
    "tcp_create_openreq_child",
    "tcp_get_cookie_sock",
    "tcp_time_wait",
    "tcp_timewait_state_process",
]

M32: Final = 0xFFFFFFFF
TCP_TW_SUCCESS: Final = 0
TCP_TW_RST: Final = 1
TCP_TW_ACK: Final = 2
TCP_TW_SYN: Final = 3


@kernel("net/ipv4/tcp_minisocks.c", "tcp_in_window")
def tcp_in_window(seq: int, end_seq: int, s_win: int, e_win: int) -> bool:
    """Kernel: net/ipv4/tcp_minisocks.c, tcp_in_window()."""
    if seq == s_win:
        return True
    if after(end_seq, s_win) and before(seq, e_win):
        return True
    return seq == e_win and seq == end_seq


# -- request socks ------------------------------------------------------------------------------


@kernel("include/net/request_sock.h", "reqsk_queue_added")
def reqsk_queue_added(listener: TcpSock) -> None:
    """A new request joins the SYN queue, young (no SYN-ACK timeout yet).

    Kernel: include/net/request_sock.h, reqsk_queue_added().
    """
    listener.syn_queue_young += 1
    listener.syn_queue_len += 1


@kernel("include/net/request_sock.h", "reqsk_queue_removed")
def reqsk_queue_removed(listener: TcpSock, req: RequestSock) -> None:
    """A request leaves the SYN queue (its count, not its hash entry).

    Kernel: include/net/request_sock.h, reqsk_queue_removed().
    """
    if req.num_timeout == 0:
        listener.syn_queue_young -= 1
    listener.syn_queue_len -= 1


@kernel("net/ipv4/inet_connection_sock.c", "reqsk_queue_unlink")
def reqsk_queue_unlink(req: RequestSock) -> bool:
    """Out of the established hash (if it still is there), timer stopped.

    Returns whether the request was found in the hash: after a handshake the
    child's ``inet_ehash_nolisten()`` has already replaced it there, and the
    caller (``inet_csk_complete_hashdance``) accounts for the queue itself.

    Kernel: net/ipv4/inet_connection_sock.c, reqsk_queue_unlink().
    """
    found = False
    if req.hashed:
        req.hashed = False
        key = req.ehash_key
        ehash = req.listener.tcp.hashinfo.ehash
        if key is not None and ehash.get(key) is req:
            del ehash[key]
        found = True
    if req.timer is not None:
        req.timer.delete()
        req.timer.function = destroyed_timer  # the cycle req -> timer -> closure -> req, cut
    return found


@kernel("net/ipv4/inet_connection_sock.c", "inet_csk_reqsk_queue_drop")
def inet_csk_reqsk_queue_drop(listener: TcpSock, req: RequestSock) -> bool:
    """Forget a request: out of the hash and the SYN queue, timer stopped.

    Kernel: net/ipv4/inet_connection_sock.c, inet_csk_reqsk_queue_drop().
    """
    unlinked = reqsk_queue_unlink(req)
    if unlinked:
        reqsk_queue_removed(listener, req)
    return unlinked


@kernel("net/ipv4/inet_connection_sock.c", "inet_csk_reqsk_queue_add")
def inet_csk_reqsk_queue_add(listener: TcpSock, req: RequestSock, child: TcpSock) -> TcpSock:
    """Queue an established child for accept().

    Kernel: net/ipv4/inet_connection_sock.c, inet_csk_reqsk_queue_add().
    """
    req.child = child
    child.parent = listener
    listener.accept_queue.append(req)
    listener.sk_ack_backlog += 1  # sk_acceptq_added()
    return child


@kernel("net/ipv4/inet_connection_sock.c", "inet_csk_complete_hashdance")
def inet_csk_complete_hashdance(
    listener: TcpSock, child: TcpSock, req: RequestSock, own_req: bool
) -> TcpSock | None:
    """The child owns the 4-tuple: the request leaves the SYN queue, the child
    joins the accept queue.

    ``syn_recv_sock`` already replaced the request by the child in the
    established hash (``inet_ehash_nolisten``), so the drop below only stops
    the timer; the SYN queue's count goes down in ``reqsk_queue_removed``.

    Kernel: net/ipv4/inet_connection_sock.c, inet_csk_complete_hashdance().
    """
    if own_req:
        inet_csk_reqsk_queue_drop(req.listener, req)
        reqsk_queue_removed(req.listener, req)
        return inet_csk_reqsk_queue_add(listener, req, child)
    return None


@kernel("net/ipv4/tcp_minisocks.c", "tcp_check_req")
def tcp_check_req(listener: TcpSock, skb: SkBuff, req: RequestSock) -> Any:
    """A segment for a connection in SYN_RECV.

    Returns None (the skb is the caller's to free), the listener (the caller
    answers with a RST), or the new child socket.

    Kernel: net/ipv4/tcp_minisocks.c, tcp_check_req().
    """
    if TIMED:
        spend("tcp_check_req")
    tcb: TcpSkbCb = skb.cb
    flags = tcb.tcp_flags
    ops = req.af_specific  # req->rsk_ops / af_specific: the family of the SYN
    tcp = listener.tcp
    if tcb.seq == req.rcv_isn and flags & TCPHDR_SYN and not flags & TCPHDR_RST:
        # a retransmitted SYN: our SYN-ACK was lost
        if not tcp_oow_rate_limited(req_ratelimit(req, listener), "TCPACKSkippedSynRecv"):
            req.txhash = net_tx_rndhash(listener.net.rng)  # tcp_rtx_synack()
            if ops.send_synack(listener, req, None) == 0:
                tcp.mib.RetransSegs += 1
                tcp.ext.TCPSynRetrans += 1
                req.num_retrans += 1
        return None
    if flags & TCPHDR_ACK and tcb.ack_seq != (req.snt_isn + 1) & M32:
        return listener
    if not tcp_in_window(tcb.seq, tcb.end_seq, req.rcv_nxt, (req.rcv_nxt + req.rsk_rcv_wnd) & M32):
        if not flags & TCPHDR_RST:
            ops.send_ack(
                None,
                skb,
                (req.snt_isn + 1) & M32,
                req.rcv_nxt,
                req.rsk_rcv_wnd >> req.rcv_wscale,
                -1,
                0,
            )
        tcp.ext.TCPACKSkippedSynRecv += 0
        return None
    if flags & (TCPHDR_RST | TCPHDR_SYN):
        tcp.mib.AttemptFails += 1
        if not flags & TCPHDR_RST:
            ops.send_reset(None, skb)
        inet_csk_reqsk_queue_drop(listener, req)
        tcp.ext.EmbryonicRsts += 1
        return None
    if not flags & TCPHDR_ACK:
        return None
    child = listener.af_ops.syn_recv_sock(listener, skb, req, None)
    if child is None:
        if tcp.sysctl_tcp_abort_on_overflow:
            inet_csk_reqsk_queue_drop(listener, req)
            return listener
        req.acked = True
        return None
    return inet_csk_complete_hashdance(listener, child, req, not req.hashed)


class _RateHolder:
    """Per-request out-of-window rate limiting state (``req->rsk_ops`` borrows tcp's)."""

    def __init__(self, listener: TcpSock) -> None:
        self.tcp = listener.tcp
        self.net = listener.net
        self.ext = listener.ext
        self.last_oow_ack_time = 0


def req_ratelimit(req: RequestSock, listener: TcpSock) -> Any:
    holder = getattr(req, "_oow", None)
    if holder is None:
        holder = _RateHolder(listener)
        req._oow = holder  # type: ignore[attr-defined]
    holder.last_oow_ack_time = req.last_oow_ack_time
    return holder


@kernel("net/ipv4/tcp_minisocks.c", "tcp_child_process")
def tcp_child_process(parent: TcpSock, child: TcpSock, skb: SkBuff) -> int:
    """The child handles the handshake's ACK (and any data on it); wake the listener.

    Kernel: net/ipv4/tcp_minisocks.c, tcp_child_process().
    """
    state = child.state
    ret = child.sk_prot.rcv_state_process(child, skb)  # tcp_rcv_state_process()
    if state == TCP_SYN_RECV and child.state != state:
        parent.sk_data_ready()
    return ret


@kernel("net/ipv4/tcp_minisocks.c", "tcp_create_openreq_child", "inet_csk_clone_lock")
def tcp_create_openreq_child(listener: TcpSock, req: RequestSock, skb: SkBuff) -> TcpSock:
    """The full socket of an accepted connection, from its request and the listener.

    Kernel: net/ipv4/tcp_minisocks.c, tcp_create_openreq_child() /
    inet_csk_clone_lock().
    """
    if TIMED:
        spend("tcp_create_openreq_child")
    tcp = listener.tcp
    sk = TcpSock(tcp, listener.family, listener.af_ops)
    for attr in (
        "sk_rcvbuf",
        "sk_sndbuf",
        "sk_userlocks",
        "sk_bound_dev_if",
        "sk_priority",
        "sk_mark",
        "uc_ttl",
        "nonagle",
        "keepalive_time",
        "keepalive_intvl",
        "keepalive_probes",
        "sock_flag_keepopen",
        "user_mss",
        "linger2",
        "sk_reuse",
        "pmtudisc",
        "recverr",
        "icsk_user_timeout",
        "sock_flag_linger",
        "sk_lingertime",
        "ipv6only",
        "recverr6",  # ipv6_pinfo, copied whole by tcp_v6_syn_recv_sock()
        "autoflowlabel",
        "flow_label",
    ):
        setattr(sk, attr, getattr(listener, attr))
    sk.icsk_ca_ops = listener.icsk_ca_ops
    sk.state = TCP_SYN_RECV
    sk.inet_num = sk.inet_sport = req.num
    sk.inet_dport = req.rmt_port
    sk.rcv_nxt = req.rcv_nxt
    sk.copied_seq = sk.rcv_wup = req.rcv_nxt
    isn1 = (req.snt_isn + 1) & M32
    sk.snd_sml = sk.snd_una = sk.snd_nxt = sk.snd_up = isn1
    sk.write_seq = sk.pushed_seq = isn1
    sk.snd_wl1 = req.rcv_isn
    buf = skb.buf
    th = skb.transport_header
    window = (buf[th + 14] << 8) | buf[th + 15]
    sk.tstamp_ok = req.tstamp_ok
    sk.sack_ok = req.sack_ok
    sk.wscale_ok = req.wscale_ok
    if req.wscale_ok:
        sk.snd_wscale = req.snd_wscale
        sk.rcv_wscale = req.rcv_wscale
    else:
        sk.snd_wscale = sk.rcv_wscale = 0
    sk.snd_wnd = window << sk.snd_wscale
    sk.max_window = sk.snd_wnd
    sk.rcv_wnd = req.rsk_rcv_wnd
    sk.window_clamp = req.rsk_window_clamp
    sk.rcv_ssthresh = req.rsk_rcv_wnd
    if sk.tstamp_ok:
        sk.ts_recent = req.ts_recent
        sk.ts_recent_stamp = tcp.seconds()
        sk.tcp_header_len = 32
    else:
        sk.tcp_header_len = 20
    sk.tsoffset = req.ts_off
    sk.mss_clamp = req.mss
    sk.icsk_rto = tcp.TCP_TIMEOUT_INIT
    sk.snd_cwnd = TCP_INIT_CWND
    sk.snd_ssthresh = TCP_INFINITE_SSTHRESH
    sk.icsk_ack_lrcvtime = sk.net.clock.jiffies
    sk.lsndtime = sk.net.clock.jiffies
    sk.total_retrans = req.num_retrans
    if req.num_timeout:  # the SYN-ACK timed out: one RTO recovery so far
        sk.total_rto = req.num_timeout
        sk.total_rto_recoveries = 1
        if req.snt_synack >= 0:  # ms since the first SYN-ACK went out
            sk.total_rto_time = tcp.tcp_time_stamp_ms() - req.snt_synack // 1000
    sk.sk_txhash = req.txhash
    sk.ever_connected = True
    # tcp_synack_rtt_meas(): the handshake's RTT, if the SYN-ACK was not resent
    tcp_parse_options(buf, th, sk, True)
    if not req.num_retrans and req.snt_synack >= 0:
        sk.tcp_mstamp = tcp.tcp_clock_us()
        sk.snd_una = isn1
        tcp_ack_update_rtt(sk, 0x10, max(sk.tcp_mstamp - req.snt_synack, 1), -1)
    tcp.mib.PassiveOpens += 1
    tcp.sockets.add(sk)
    return sk


# -- TIME_WAIT ----------------------------------------------------------------------------------


@kernel("net/ipv4/tcp_minisocks.c", "tcp_time_wait")
def tcp_time_wait(sk: TcpSock, state: int, timeo: int) -> None:
    """Leave the 4-tuple to a TIME_WAIT sock and free the full socket.

    Kernel: net/ipv4/tcp_minisocks.c, tcp_time_wait().
    """
    tcp = sk.tcp
    if tcp.tw_count >= tcp.sysctl_max_tw_buckets:
        tcp.ext.TCPTimeWaitOverflow += 1
        tcp_done(sk)
        return
    tw = TimewaitSock(sk, state)
    hashinfo = tcp.hashinfo
    key = sk.ehash_key
    if key is not None:
        hashinfo.ehash[key] = tw
        sk.ehash_key = None
    port = sk.bind_port
    if port:
        lst = hashinfo.bhash.get(port)
        if lst is not None and sk in lst:
            lst[lst.index(sk)] = tw
        sk.bind_port = 0
    rto = (sk.icsk_rto << 2) - (sk.icsk_rto >> 1)
    if timeo < rto:
        timeo = rto
    if state == TCP_TIME_WAIT:
        timeo = tcp.TCP_TIMEWAIT_LEN
    tw.timer.mod(sk.net.clock.jiffies + timeo)
    tcp.tw_count += 1
    tcp.sockets.add(tw)
    tcp_done(sk)


@kernel("inet_twsk_kill")
def inet_twsk_kill(tw: TimewaitSock) -> None:
    """Take a TIME_WAIT sock out of the tables. Kernel: inet_twsk_kill()."""
    if tw.killed:
        return
    tw.killed = True
    tw.timer.delete()
    tw.timer.function = (
        destroyed_timer  # the cycle tw -> timer -> method -> tw, cut (inet_csk_destroy_sock)
    )
    hashinfo = tw.tcp.hashinfo
    key = tw.ehash_key
    if key is not None and hashinfo.ehash.get(key) is tw:
        del hashinfo.ehash[key]
    if tw.bind_port:
        hashinfo.inet_put_port(tw, tw.bind_port)
        tw.bind_port = 0
    tw.tcp.tw_count -= 1
    tw.tcp.sockets.discard(tw)


@kernel("net/ipv4/inet_timewait_sock.c", "tw_timer_handler")
def tw_timer_handler(tw: TimewaitSock) -> None:
    """TIME_WAIT is over. Kernel: net/ipv4/inet_timewait_sock.c, tw_timer_handler()."""
    tw.tcp.ext.TW += 1
    inet_twsk_kill(tw)


@kernel("inet_twsk_deschedule_put")
def inet_twsk_deschedule_put(tw: TimewaitSock) -> None:
    """Killed before its time. Kernel: inet_twsk_deschedule_put()."""
    tw.tcp.ext.TWKilled += 1
    inet_twsk_kill(tw)


@kernel("net/ipv4/tcp_minisocks.c", "tcp_timewait_state_process")
def tcp_timewait_state_process(tw: TimewaitSock, skb: SkBuff, tcb: TcpSkbCb) -> int:
    """A segment for a connection in TIME_WAIT (or orphaned FIN_WAIT2). Returns TCP_TW_*.

    Kernel: net/ipv4/tcp_minisocks.c, tcp_timewait_state_process().
    """
    tcp = tw.tcp
    flags = tcb.tcp_flags
    rx = TcpOptionsReceived()
    tcp_parse_options(skb.buf, skb.transport_header, rx, True)
    paws_reject = False
    if rx.saw_tstamp and tw.tstamp_ok and tw.ts_recent_stamp:
        holder = _TwRx(tw, rx.rcv_tsval)
        paws_reject = tcp_paws_reject(holder, bool(flags & TCPHDR_RST))
    if tw.tw_substate == TCP_FIN_WAIT2:
        if paws_reject or not tcp_in_window(
            tcb.seq, tcb.end_seq, tw.rcv_nxt, (tw.rcv_nxt + tw.rcv_wnd) & M32
        ):
            return _oow(tw, "TCPACKSkippedFinWait2")
        if flags & TCPHDR_RST:
            inet_twsk_deschedule_put(tw)
            return TCP_TW_SUCCESS
        if flags & TCPHDR_SYN and not before(tcb.seq, tw.rcv_nxt):
            inet_twsk_deschedule_put(tw)
            return TCP_TW_RST
        if not flags & TCPHDR_ACK or not after(tcb.end_seq, tw.rcv_nxt) or tcb.end_seq == tcb.seq:
            return TCP_TW_SUCCESS
        if not flags & TCPHDR_FIN or tcb.end_seq != (tw.rcv_nxt + 1) & M32:
            return TCP_TW_RST  # new data after close
        tw.tw_substate = TCP_TIME_WAIT
        tw.rcv_nxt = tcb.end_seq
        if rx.saw_tstamp:
            tw.ts_recent_stamp = tcp.seconds()
            tw.ts_recent = rx.rcv_tsval
        tw.timer.mod(tw.net.clock.jiffies + tcp.TCP_TIMEWAIT_LEN)
        return TCP_TW_ACK
    # TIME_WAIT proper (RFC 1122 4.2.2.13, RFC 1337)
    if not paws_reject and tcb.seq == tw.rcv_nxt and (tcb.seq == tcb.end_seq or flags & TCPHDR_RST):
        if flags & TCPHDR_RST:
            if not tcp.sysctl_tcp_rfc1337:
                inet_twsk_deschedule_put(tw)
                return TCP_TW_SUCCESS
        else:
            tw.timer.mod(tw.net.clock.jiffies + tcp.TCP_TIMEWAIT_LEN)
        if rx.saw_tstamp:
            tw.ts_recent = rx.rcv_tsval
            tw.ts_recent_stamp = tcp.seconds()
        return TCP_TW_SUCCESS
    if (
        flags & TCPHDR_SYN
        and not flags & (TCPHDR_RST | TCPHDR_ACK)
        and not paws_reject
        and (
            after(tcb.seq, tw.rcv_nxt)
            or (rx.saw_tstamp and ((tw.ts_recent - rx.rcv_tsval) & M32) > 0x7FFFFFFF)
        )
    ):
        isn = (tw.snd_nxt + 65535 + 2) & M32
        tcb.tw_isn = isn or 1
        return TCP_TW_SYN
    if paws_reject:
        tcp.ext.PAWSEstab += 1
    if not flags & TCPHDR_RST:
        if paws_reject or flags & TCPHDR_ACK:
            tw.timer.mod(tw.net.clock.jiffies + tcp.TCP_TIMEWAIT_LEN)
        return _oow(tw, "TCPACKSkippedTimeWait")
    return TCP_TW_SUCCESS


def _oow(tw: TimewaitSock, mib: str) -> int:

    holder = _TwHolder(tw)
    if tcp_oow_rate_limited(holder, mib):
        return TCP_TW_SUCCESS
    tw.last_oow_ack_time = holder.last_oow_ack_time
    return TCP_TW_ACK


class _TwHolder:
    def __init__(self, tw: TimewaitSock) -> None:
        self.tcp = tw.tcp
        self.net = tw.net
        self.ext = tw.tcp.ext
        self.last_oow_ack_time = tw.last_oow_ack_time


class _TwRx:
    """The PAWS inputs of a TIME_WAIT sock (``tcp_paws_reject`` takes a socket)."""

    def __init__(self, tw: TimewaitSock, tsval: int) -> None:
        self.tcp = tw.tcp
        self.ts_recent = tw.ts_recent
        self.ts_recent_stamp = tw.ts_recent_stamp
        self.rcv_tsval = tsval


@kernel("net/ipv4/tcp_ipv4.c", "tcp_twsk_unique")
def tcp_twsk_unique(sk: TcpSock, tw: TimewaitSock) -> bool:
    """May a new connection take over this TIME_WAIT 4-tuple (``tcp_tw_reuse``)?

    Kernel: net/ipv4/tcp_ipv4.c, tcp_twsk_unique().
    """
    tcp = tw.tcp
    reuse = tcp.sysctl_tcp_tw_reuse
    if reuse == 2:
        loopback = (tw.daddr >> 24) == 127 or tw.daddr == tw.rcv_saddr
        reuse = 1 if loopback else 0
    if tw.ts_recent_stamp and reuse and tcp.seconds() > tw.ts_recent_stamp:
        seq = (tw.snd_nxt + 65535 + 2) & M32
        sk.write_seq = seq or 1
        sk.ts_recent = tw.ts_recent
        sk.ts_recent_stamp = tw.ts_recent_stamp
        tcp.ext.TWRecycled += 1
        return True
    return False


@kernel("net/ipv4/inet_connection_sock.c", "inet_csk_listen_stop")
def inet_csk_listen_stop(sk: TcpSock) -> None:
    """Closing a listener: reset the unaccepted children, forget the requests.

    Kernel: net/ipv4/inet_connection_sock.c, inet_csk_listen_stop().
    """
    from netstack.tcp.state import inet_csk_destroy_sock

    while sk.accept_queue:
        req = sk.accept_queue.popleft()
        child = req.child
        sk.sk_ack_backlog -= 1
        if child is None:
            continue
        child.parent = None
        sk.sk_prot.disconnect(child)  # inet_child_forget()
        child.dead = True
        if child.state == TCP_CLOSE:
            inet_csk_destroy_sock(child)
    hashinfo = sk.tcp.hashinfo
    for other in list(hashinfo.ehash.values()):
        if isinstance(other, RequestSock) and other.listener is sk:
            inet_csk_reqsk_queue_drop(sk, other)


@kernel("net/ipv4/syncookies.c", "tcp_get_cookie_sock")
def tcp_get_cookie_sock(
    sk: TcpSock, skb: SkBuff, req: RequestSock, dst: DstEntry | None, tsoff: int
) -> TcpSock | None:
    """Build the child of a valid cookie and queue it for accept().

    Kernel: net/ipv4/syncookies.c, tcp_get_cookie_sock().
    """
    child: TcpSock | None = sk.af_ops.syn_recv_sock(sk, skb, req, dst)
    if child is None:
        return None
    child.tsoffset = tsoff
    inet_csk_reqsk_queue_add(sk, req, child)
    return child


@kernel(
    "net/ipv4/syncookies.c",
    "cookie_v4_check",
    "cookie_tcp_check",
    "cookie_tcp_reqsk_init",
    "net/ipv6/syncookies.c",
    "cookie_v6_check",
)
def cookie_tcp_check(
    ops: InetConnectionSockAfOps, sk: TcpSock, skb: SkBuff, mss_check: Callable[[int], int]
) -> TcpSock | None:
    """An ACK to a listener that may carry a SYN cookie: the child, the listener, or None.

    ``mss_check(cookie)`` is the family's ``__cookie_v4_check`` /
    ``__cookie_v6_check``. Returns the listener when the segment is no
    cookie's (the caller goes on and answers it with a RST); None when the
    cookie was good but no child could be made (the skb is dropped here,
    ``NO_SOCKET``); else the child, in SYN_RECV, queued for accept().

    Kernel: net/ipv4/syncookies.c, cookie_v4_check() / cookie_tcp_check() /
    cookie_tcp_reqsk_init(); net/ipv6/syncookies.c, cookie_v6_check().
    """
    tcp = sk.tcp
    buf = skb.buf
    th = skb.transport_header
    flags = buf[th + 13]
    if not tcp.sysctl_tcp_syncookies or not flags & TCPHDR_ACK or flags & TCPHDR_RST:
        return sk
    if tcp_synq_no_recent_overflow(sk):
        return sk
    tcb: TcpSkbCb = skb.cb
    cookie = (tcb.ack_seq - 1) & M32
    mss = mss_check(cookie)
    if not mss:
        sk.ext.SyncookiesFailed += 1
        return sk
    sk.ext.SyncookiesRecv += 1
    rx = TcpOptionsReceived()
    tcp_parse_options(buf, th, rx, False)
    tsoff = 0
    if rx.saw_tstamp and rx.rcv_tsecr:
        tsoff = ops.init_ts_off(skb)  # secure_tcp_ts_off(daddr, saddr)
        rx.rcv_tsecr = (rx.rcv_tsecr - tsoff) & M32
    if not cookie_timestamp_decode(tcp, rx):
        return sk
    # cookie_tcp_reqsk_init(): the request the SYN never got
    req = RequestSock(sk)
    req.af_specific = ops
    req.cookie_ts = True  # req->syncookie
    ops.init_req(req, skb)  # addresses, TOS, and for IPv6 the link-local interface
    req.num = (buf[th + 2] << 8) | buf[th + 3]
    req.rmt_port = (buf[th] << 8) | buf[th + 1]
    if not req.iif:
        req.iif = sk.sk_bound_dev_if  # inet_request_bound_dev_if()
    req.rcv_isn = (tcb.seq - 1) & M32
    req.rcv_nxt = tcb.seq
    req.snt_isn = cookie
    req.ts_off = tsoff  # the child's tsoffset (tcp_get_cookie_sock)
    req.txhash = net_tx_rndhash(sk.net.rng)
    req.mss = mss
    req.snd_wscale = rx.snd_wscale
    req.sack_ok = rx.sack_ok
    req.wscale_ok = rx.wscale_ok
    req.tstamp_ok = rx.saw_tstamp
    req.ts_recent = rx.rcv_tsval if rx.saw_tstamp else 0
    req.snt_synack = -1  # no RTT sample from a cookie's handshake
    req.num_retrans = 0
    # "We need to lookup the route here to get at the correct window size."
    rt = ops.route_req(req)
    if rt is None:
        kfree_skb(skb, DropReason.NO_SOCKET)
        return None
    full_space = tcp_full_space(sk)
    req.rsk_window_clamp = sk.window_clamp
    if sk.sk_userlocks & SOCK_RCVBUF_LOCK and (
        req.rsk_window_clamp > full_space or not req.rsk_window_clamp
    ):
        req.rsk_window_clamp = full_space
    adv_mss = max(int(rt.mtu()) - ops.net_header_len - 20, 256)  # what the SYN-ACK offered
    if sk.user_mss and sk.user_mss < adv_mss:
        adv_mss = sk.user_mss
    req.adv_mss = adv_mss
    req.rsk_rcv_wnd, req.rsk_window_clamp, req.rcv_wscale = tcp_select_initial_window(
        sk, full_space, req.mss, req.rsk_window_clamp, req.wscale_ok, 0
    )
    if not req.wscale_ok:
        req.rcv_wscale = 0
    req.ecn_ok = cookie_ecn_ok(tcp, rx)
    child = tcp_get_cookie_sock(sk, skb, req, rt, tsoff)
    if child is None:
        rt.release()
        kfree_skb(skb, DropReason.NO_SOCKET)
    return child
