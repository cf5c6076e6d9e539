"""The TCP socket calls: connect, listen, accept, send, recv, shutdown, close, options.

Theory of operation: these are the synchronous halves of the socket API; the
Trio-facing :class:`~netstack.socket.socket.Socket` retries them when they
raise :class:`~netstack.core.sock.SockWouldBlock` (no room in the send buffer,
no connection to accept) or, for a read with no data yet, return ``None``.
``tcp_sendmsg`` copies user data into send-queue skbs of up to ``size_goal``
bytes (an MSS, or a GSO skb's worth when the route allows it) and pushes;
like ``send(2)`` on a non-blocking socket it accepts what fits and returns
that count. ``tcp_recvmsg`` copies from the receive queue, frees what was
read (which may open the window: an ACK goes out if the offer grows enough,
``tcp_cleanup_rbuf``), and returns ``b""`` at end of stream. Errors come back
as the socket API gives them: ECONNREFUSED, ECONNRESET, ETIMEDOUT, EPIPE,
ENOTCONN.

Kernel: net/ipv4/tcp.c, net/ipv4/af_inet.c (inet_stream_connect,
inet_listen, inet_shutdown), net/ipv4/inet_connection_sock.c (inet_csk_accept).
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from netstack.core.skbuff import consume_skb
from netstack.core.sock import SOL_SOCKET, SockWouldBlock, sock_oserror
from netstack.sites import TIMED, kernel, spend
from netstack.tcp import fastopen as _fo
from netstack.tcp.cong import tcp_set_congestion_control
from netstack.tcp.helpers import (
    PAGE_SIZE,
    sk_stream_is_writeable,
    sk_stream_memory_free,
    sk_wmem_charge,
    tcp_min_rtt,
)
from netstack.tcp.input import tcp_rcv_space_adjust
from netstack.tcp.output import (
    __tcp_push_pending_frames,
    __tcp_select_window,
    forced_push,
    tcp_mark_push,
    tcp_push,
    tcp_push_pending_frames,
    tcp_queue_skb,
    tcp_receive_window,
    tcp_send_ack,
    tcp_send_active_reset,
    tcp_send_fin,
    tcp_send_mss,
    tcp_slow_start_after_idle_check,
    tcp_stream_alloc_skb,
    tcp_write_queue_purge,
    tcp_write_xmit,
)
from netstack.tcp.rate import tcp_compute_delivery_rate, tcp_rate_check_app_limited
from netstack.tcp.rcvmem import tcp_rmem_free
from netstack.tcp.sock import (
    CA_STATE_NAMES,
    RCV_SHUTDOWN,
    SEND_SHUTDOWN,
    SHUTDOWN_MASK,
    TCP_CLOSE,
    TCP_CLOSE_WAIT,
    TCP_CLOSING,
    TCP_ESTABLISHED,
    TCP_FIN_WAIT1,
    TCP_FIN_WAIT2,
    TCP_LAST_ACK,
    TCP_LISTEN,
    TCP_NAGLE_CORK,
    TCP_NAGLE_OFF,
    TCP_NAGLE_PUSH,
    TCP_STATE_NAMES,
    TCP_SYN_RECV,
    TCP_SYN_SENT,
    TcpSkbCb,
    TcpSock,
)
from netstack.tcp.state import (
    inet_csk_delete_keepalive_timer,
    inet_csk_destroy_sock,
    inet_csk_reset_keepalive_timer,
    keepalive_time_when,
    sk_state_change,
    tcp_done,
    tcp_fin_time,
    tcp_set_state,
)
from netstack.wire.tcp import TCPHDR_ACK

__all__ = [
    "TcpInfo",
    "inet_csk_accept",
    "inet_listen",
    "inet_shutdown",
    "inet_stream_connect",
    "tcp_close",
    "tcp_get_info",
    "tcp_recvmsg",
    "tcp_sendmsg",
]

M32: Final = 0xFFFFFFFF
SOMAXCONN: Final = 4096
MSG_PEEK: Final = 0x2
MSG_DONTWAIT: Final = 0x40
MSG_WAITALL: Final = 0x100
MSG_MORE: Final = 0x8000
MSG_NOSIGNAL: Final = 0x4000
MSG_FASTOPEN: Final = 0x20000000

IPPROTO_TCP: Final = 6
TCP_NODELAY: Final = 1
TCP_MAXSEG: Final = 2
TCP_CORK: Final = 3
TCP_KEEPIDLE: Final = 4
TCP_KEEPINTVL: Final = 5
TCP_KEEPCNT: Final = 6
TCP_LINGER2: Final = 8
TCP_WINDOW_CLAMP: Final = 10
TCP_INFO: Final = 11
TCP_QUICKACK: Final = 12
TCP_CONGESTION: Final = 13
TCP_USER_TIMEOUT: Final = 18
TCP_FASTOPEN: Final = 23
TCP_FASTOPEN_CONNECT: Final = 30
TCP_FASTOPEN_KEY: Final = 33
TCP_FASTOPEN_NO_COOKIE: Final = 34
SO_KEEPALIVE: Final = 9
SO_LINGER: Final = 13

EINVAL: Final = 22
EISCONN: Final = 106
EALREADY: Final = 114
EINPROGRESS: Final = 115
ENOTCONN: Final = 107
EPIPE: Final = 32
ENOENT: Final = 2
EAGAIN: Final = 11
EOPNOTSUPP: Final = 95


# -- connect / listen / accept -------------------------------------------------------------------


@kernel("net/ipv4/af_inet.c", "__inet_stream_connect")
def inet_stream_connect(sk: TcpSock, addr: int, port: int) -> None:
    """Start a connection (the Trio socket waits for it to finish).

    Kernel: net/ipv4/af_inet.c, __inet_stream_connect().
    """
    state = sk.state
    if state == TCP_SYN_SENT:
        raise sock_oserror(EALREADY)
    if state != TCP_CLOSE:
        raise sock_oserror(EISCONN if state != TCP_LISTEN else EINVAL)
    if sk.ever_connected and sk.sk_err == 0 and sk.inet_dport:
        raise sock_oserror(EISCONN)
    sk.af_ops.connect(sk, addr, port)
    sk.connect_pending = True


def inet_stream_connect_result(sk: TcpSock) -> bool:
    """True once the connection is established; raise its error if it failed.

    A connect() that ``TCP_FASTOPEN_CONNECT`` deferred (a cookie is cached:
    the SYN waits for the first write) is done at once.
    """
    if sk.defer_connect:
        return True
    if sk.state == TCP_SYN_SENT or sk.state == TCP_SYN_RECV:
        return False
    sk.connect_pending = False
    err = sk.sock_error()
    if err:
        raise sock_oserror(err)
    if sk.state == TCP_CLOSE:
        raise sock_oserror(111)  # ECONNREFUSED (reset before the handshake ended)
    return True


@kernel("net/ipv4/af_inet.c", "inet_listen", "inet_csk_listen_start")
def inet_listen(sk: TcpSock, backlog: int) -> None:
    """Kernel: net/ipv4/af_inet.c, inet_listen() / inet_csk_listen_start()."""
    if sk.state not in (TCP_CLOSE, TCP_LISTEN):
        raise sock_oserror(EINVAL)
    backlog = min(max(backlog, 0), SOMAXCONN)
    sk.sk_max_ack_backlog = backlog
    if sk.state == TCP_LISTEN:
        return
    tcp = sk.tcp
    # Fast Open on every listener, without TCP_FASTOPEN (0x400 with 0x2)
    tfo = tcp.sysctl_tcp_fastopen
    if (
        tfo & _fo.TFO_SERVER_WO_SOCKOPT1
        and tfo & _fo.TFO_SERVER_ENABLE
        and not sk.fastopenq.max_qlen
    ):
        _fo.fastopen_queue_tune(sk, backlog)
        _fo.tcp_fastopen_init_key_once(tcp)
    if not sk.inet_num:
        tcp.hashinfo.inet_csk_get_port(sk, 0)
    elif sk.bind_port and tcp.hashinfo._conflict(sk, sk.inet_num, False, True):
        raise sock_oserror(98)  # EADDRINUSE
    sk.sk_ack_backlog = 0
    tcp_set_state(sk, TCP_LISTEN)
    tcp.hashinfo.listen_add(sk)
    tcp.sockets.add(sk)


@kernel("inet_csk_accept")
def inet_csk_accept(sk: TcpSock) -> TcpSock:
    """Take an established child off the accept queue. Kernel: inet_csk_accept()."""
    if sk.state != TCP_LISTEN:
        raise sock_oserror(EINVAL)
    q = sk.accept_queue
    while q:
        req = q.popleft()
        sk.sk_ack_backlog -= 1
        child = req.child
        if child is None:
            continue
        child.parent = None
        return child
    raise SockWouldBlock(write=False)


@kernel("net/ipv4/tcp.c", "tcp_poll")
def tcp_readable(sk: TcpSock) -> bool:
    """Kernel: net/ipv4/tcp.c, tcp_poll() (EPOLLIN)."""
    if sk.state == TCP_LISTEN:
        return bool(sk.accept_queue)
    return bool(
        sk.receive_queue
        or sk.sk_err
        or sk.sk_shutdown & RCV_SHUTDOWN
        or (sk.state == TCP_CLOSE and not sk.connect_pending)
    )


@kernel("net/ipv4/tcp.c", "tcp_poll")
def tcp_writable(sk: TcpSock) -> bool:
    """Kernel: net/ipv4/tcp.c, tcp_poll() (EPOLLOUT)."""
    if sk.sk_err or sk.sk_shutdown & SEND_SHUTDOWN:
        return True
    if sk.state == TCP_SYN_SENT and sk.defer_connect:
        return True  # a deferred Fast Open connect: the first write sends the SYN
    if sk.state in (TCP_SYN_SENT, TCP_LISTEN) or (
        sk.state == TCP_SYN_RECV and sk.fastopen_rsk is None
    ):  # (a passive Fast Open child may write in SYN_RECV)
        return False
    if sk.state == TCP_CLOSE:
        return True
    if sk_stream_is_writeable(sk):
        return True
    sk.sk_socket_nospace = True  # a poller waits: tcp_check_space wakes it
    return False


# -- send ------------------------------------------------------------------------------------------


@kernel("net/ipv4/tcp.c", "tcp_sendmsg_locked")
def tcp_sendmsg(
    sk: TcpSock,
    data: bytes | bytearray | memoryview,
    flags: int,
    dest: tuple[int, int] | None = None,
) -> int:
    """Queue as much of *data* as the send buffer takes; return the count.

    ``MSG_FASTOPEN`` (or a connect that ``TCP_FASTOPEN_CONNECT`` deferred)
    connects first, with data in the SYN when a cookie allows
    (netstack.tcp.fastopen); the count includes what the SYN carried.

    Kernel: net/ipv4/tcp.c, tcp_sendmsg_locked().
    """
    if TIMED:
        spend("tcp_sendmsg_locked")
    copied_syn = 0
    if flags & MSG_FASTOPEN or sk.defer_connect:
        err, copied_syn = tcp_sendmsg_fastopen(
            sk, bytes(data), flags, dest, bool(flags & MSG_DONTWAIT)
        )
        if err == -EINPROGRESS and copied_syn > 0:
            return copied_syn
        if err:
            raise sock_oserror(-err)
        if copied_syn:
            data = memoryview(data).cast("B")[copied_syn:]
            if not len(data):
                return copied_syn
            try:
                return copied_syn + tcp_sendmsg(sk, data, flags & ~MSG_FASTOPEN)
            except (OSError, SockWouldBlock):
                return copied_syn
    tcp_rate_check_app_limited(sk)  # is sending application-limited?
    state = sk.state
    if state not in (TCP_ESTABLISHED, TCP_CLOSE_WAIT) and not _fo.tcp_passive_fastopen(
        sk
    ):  # sk_stream_wait_connect(); a passive Fast Open child may send in SYN_RECV
        if sk.sk_err:
            raise sock_oserror(sk.sock_error())
        if state not in (TCP_SYN_SENT, TCP_SYN_RECV):
            raise sock_oserror(EPIPE)  # never connected, or closed: EPIPE, not ENOTCONN
        if flags & MSG_DONTWAIT:
            raise sock_oserror(EAGAIN)
        raise SockWouldBlock(write=True)
    if sk.sk_err:
        raise sock_oserror(sk.sock_error())
    if sk.sk_shutdown & SEND_SHUTDOWN:
        raise sock_oserror(EPIPE)
    mv = memoryview(data).cast("B") if not isinstance(data, bytes | bytearray) else data
    total = len(mv)
    if not total:
        return 0
    mss_now, size_goal = tcp_send_mss(sk)
    copied = 0
    wq = sk.write_queue
    while copied < total:
        skb = wq[-1] if wq else None
        copy = 0
        if skb is not None:
            tcb: TcpSkbCb = skb.cb
            copy = size_goal - (skb.tail - skb.data)
            if tcb.tcp_flags & 0x01:  # a FIN is queued: nothing goes after it
                copy = 0
        if copy <= 0 or skb is None:
            if not sk_stream_memory_free(sk):
                break
            skb = tcp_stream_alloc_skb(sk, 0)
            skb.cb = TcpSkbCb(sk.write_seq, sk.write_seq, TCPHDR_ACK)
            tcp_queue_skb(sk, skb)  # tcp_skb_entail()
            tcp_slow_start_after_idle_check(sk)
            copy = size_goal
        n = total - copied
        if copy < n:  # min()
            n = copy
        buf = skb.buf
        if skb.tail != len(buf):
            del buf[skb.tail :]
        buf += mv[copied : copied + n]
        skb.tail += n
        skb.truesize = skb.truesize + n
        sk_wmem_charge(sk, n)  # skb_copy_to_page_nocache()
        tcb = skb.cb
        tcb.end_seq = (tcb.end_seq + n) & M32
        tcb.pcount = 0  # tcp_init_tso_segs() recomputes it
        sk.write_seq = (sk.write_seq + n) & M32
        copied += n
        if skb.tail - skb.data >= size_goal:
            if forced_push(sk):
                tcp_mark_push(sk, skb)
                __tcp_push_pending_frames(sk, mss_now, TCP_NAGLE_PUSH)
            elif skb is wq[0]:
                tcp_write_xmit(sk, mss_now, sk.nonagle, 1)  # tcp_push_one()
    if copied:
        tcp_push(sk, flags, mss_now, sk.nonagle, size_goal)
        return copied
    sk.sk_socket_nospace = True
    if flags & MSG_DONTWAIT:
        raise sock_oserror(EAGAIN)
    raise SockWouldBlock(write=True)


# -- receive ---------------------------------------------------------------------------------------


@kernel("net/ipv4/tcp.c", "tcp_cleanup_rbuf")
def tcp_cleanup_rbuf(sk: TcpSock, copied: int) -> None:
    """After reading: ACK now if the window we could offer grew enough.

    Kernel: net/ipv4/tcp.c, tcp_cleanup_rbuf().
    """
    if TIMED:
        spend("tcp_cleanup_rbuf")
    time_to_ack = False
    pending = sk.icsk_ack_pending
    if pending & 1 and (  # an ACK is owed (inet_csk_ack_scheduled)
        # the once-per-two-segments ACK that tcp_input.c did not send
        ((sk.rcv_nxt - sk.rcv_wup) & M32) > sk.icsk_ack_rcv_mss
        # this read emptied the buffer after a small (pushed) segment
        or (
            copied > 0
            and (pending & 8 or (pending & 4 and not sk.icsk_ack_pingpong))  # PUSHED2 / PUSHED
            and not sk.sk_rmem_alloc
        )
    ):
        time_to_ack = True
    if copied > 0 and not time_to_ack and not sk.sk_shutdown & RCV_SHUTDOWN:
        rcv_window_now = tcp_receive_window(sk)
        if 2 * rcv_window_now <= sk.window_clamp:
            new_window = __tcp_select_window(sk)
            if new_window and new_window >= 2 * rcv_window_now:
                time_to_ack = True
    if time_to_ack:
        tcp_send_ack(sk)


@kernel("net/ipv4/tcp.c", "tcp_recvmsg_locked")
def tcp_recvmsg(sk: TcpSock, bufsize: int, flags: int) -> bytes | None:
    """Copy up to *bufsize* bytes of the stream; ``b""`` at its end; ``None``
    when a blocking reader must wait (the kernel's ``sk_wait_data()``): the
    socket layer waits without an exception per empty read, ``TcpSock.recvmsg``
    raises :class:`~netstack.core.sock.SockWouldBlock` for its other callers.

    Kernel: net/ipv4/tcp.c, tcp_recvmsg_locked().
    """
    if TIMED:
        spend("tcp_recvmsg_locked")
    if sk.state == TCP_LISTEN:
        raise sock_oserror(ENOTCONN)
    if bufsize < 0:
        raise sock_oserror(EINVAL)
    q = sk.receive_queue
    peek = bool(flags & MSG_PEEK)
    if not q:
        if sk.sk_err:
            raise sock_oserror(sk.sock_error())
        if sk.sk_shutdown & RCV_SHUTDOWN or sk.sock_flag_done:
            return b""
        if sk.state == TCP_CLOSE:
            if not sk.ever_connected:
                raise sock_oserror(ENOTCONN)
            return b""
        if flags & MSG_DONTWAIT:
            raise sock_oserror(EAGAIN)
        return None  # sk_wait_data()
    if bufsize == 0:
        return b""
    # views of the skbs' data, joined once: one copy to the caller (kernel:
    # skb_copy_datagram_msg), none for the slices
    parts: list[memoryview] = []
    copied = 0
    seq = sk.copied_seq
    i = 0
    while copied < bufsize and i < len(q):
        skb = q[i]
        tcb: TcpSkbCb = skb.cb
        offset = (seq - tcb.seq) & M32
        length = skb.tail - skb.data
        # the SYN does not occupy the data area
        avail = length - offset
        if avail > 0:
            n = bufsize - copied
            if avail < n:  # min()
                n = avail
            start = skb.data + offset
            parts.append(memoryview(skb.buf)[start : start + n])
            copied += n
            seq = (seq + n) & M32
            if n < avail:
                break
        if peek:
            i += 1
            continue
        # the whole skb was read: free it
        q.popleft()
        tcp_rmem_free(sk, skb)  # sock_rfree()
        consume_skb(skb)
        if tcb.tcp_flags & 0x01:  # FIN: stop at the end of the stream
            break
    data = b"".join(parts)
    del parts  # release the views before anything may resize a buffer
    if peek:
        return data
    sk.copied_seq = seq
    if copied:
        tcp_rcv_space_adjust(sk)
        tcp_cleanup_rbuf(sk, copied)
    return data


# -- shutdown and close ----------------------------------------------------------------------------

# tcp.c: new_state[] — the state a close leads to, with TCP_ACTION_FIN set if a FIN goes out
_TCP_ACTION_FIN: Final = 1 << 7
_NEW_STATE: Final = {
    TCP_ESTABLISHED: TCP_FIN_WAIT1 | _TCP_ACTION_FIN,
    TCP_SYN_SENT: TCP_CLOSE,
    TCP_SYN_RECV: TCP_FIN_WAIT1 | _TCP_ACTION_FIN,
    TCP_FIN_WAIT1: TCP_FIN_WAIT1,
    TCP_FIN_WAIT2: TCP_FIN_WAIT2,
    TCP_CLOSE: TCP_CLOSE,
    TCP_CLOSE_WAIT: TCP_LAST_ACK | _TCP_ACTION_FIN,
    TCP_LAST_ACK: TCP_LAST_ACK,
    TCP_LISTEN: TCP_CLOSE,
    TCP_CLOSING: TCP_CLOSING,
}


@kernel("tcp_close_state")
def tcp_close_state(sk: TcpSock) -> bool:
    """Move to the closing state; True if a FIN must be sent. Kernel: tcp_close_state()."""
    nxt = _NEW_STATE.get(sk.state, TCP_CLOSE)
    tcp_set_state(sk, nxt & 0xF)
    return bool(nxt & _TCP_ACTION_FIN)


@kernel("net/ipv4/tcp.c", "tcp_shutdown")
def tcp_shutdown(sk: TcpSock, how: int) -> None:
    """Half-close: send our FIN. Kernel: net/ipv4/tcp.c, tcp_shutdown()."""
    if not how & SEND_SHUTDOWN:
        return
    if sk.state in (TCP_ESTABLISHED, TCP_SYN_SENT, TCP_SYN_RECV, TCP_CLOSE_WAIT):
        if tcp_close_state(sk):
            tcp_send_fin(sk)


@kernel("net/ipv4/af_inet.c", "inet_shutdown")
def inet_shutdown(sk: TcpSock, how: int) -> None:
    """``shutdown(2)``: how = SHUT_RD (0), SHUT_WR (1), SHUT_RDWR (2).

    Kernel: net/ipv4/af_inet.c, inet_shutdown().
    """
    if how not in (0, 1, 2):
        raise sock_oserror(EINVAL)
    how += 1  # maps 0->1 (RCV_SHUTDOWN), 1->2 (SEND_SHUTDOWN), 2->3
    state = sk.state
    if state in (TCP_CLOSE, TCP_SYN_SENT) and not sk.connect_pending:
        if state == TCP_CLOSE:
            sk.sk_shutdown |= how
            sk_state_change(sk)
            raise sock_oserror(ENOTCONN)
    sk.sk_shutdown |= how
    if state == TCP_LISTEN:
        if how & RCV_SHUTDOWN:
            tcp_disconnect(sk)
    elif state == TCP_SYN_SENT:
        tcp_disconnect(sk)
    else:
        tcp_shutdown(sk, how)
    sk_state_change(sk)


@kernel("net/ipv4/tcp.c", "tcp_disconnect")
def tcp_disconnect(sk: TcpSock) -> None:
    """Abort (``connect(AF_UNSPEC)``, closing with unread data, listener children).

    Kernel: net/ipv4/tcp.c, tcp_disconnect().
    """
    old_state = sk.state
    if old_state != TCP_CLOSE:
        tcp_set_state(sk, TCP_CLOSE)
    if old_state == TCP_LISTEN:
        from netstack.tcp.minisocks import inet_csk_listen_stop

        inet_csk_listen_stop(sk)
    elif old_state in (
        TCP_ESTABLISHED,
        TCP_CLOSE_WAIT,
        TCP_FIN_WAIT1,
        TCP_FIN_WAIT2,
        TCP_SYN_RECV,
    ) or (old_state in (TCP_CLOSING, TCP_LAST_ACK) and sk.snd_nxt != sk.write_seq):
        tcp_send_active_reset_closed(sk)
        sk.sk_err = 104  # ECONNRESET
    elif old_state == TCP_SYN_SENT:
        sk.sk_err = 104
    from netstack.tcp.state import tcp_clear_xmit_timers

    tcp_clear_xmit_timers(sk)
    for skb in sk.receive_queue:
        consume_skb(skb)
    sk.receive_queue.clear()
    tcp_write_queue_purge(sk)
    _fo.tcp_fastopen_active_disable_ofo_check(sk)
    for skb in sk.out_of_order_queue:
        consume_skb(skb)
    sk.out_of_order_queue.clear()
    sk.sk_rmem_alloc = 0
    sk.sk_forward_alloc = 0  # sk_mem_reclaim()
    # tcp_clear_retrans(): the RTO statistics start again
    sk.rto_stamp = sk.total_rto = sk.total_rto_recoveries = sk.total_rto_time = 0
    sk.inet_dport = 0
    sk.sk_shutdown = 0
    sk.sock_flag_done = False
    sk.srtt_us = 0
    sk.write_seq = (sk.write_seq + sk.max_window + 2) & M32 or 1
    sk.snd_cwnd = 2
    sk.icsk_backoff = 0
    sk.icsk_probes_out = 0
    sk.icsk_rto = sk.tcp.TCP_TIMEOUT_INIT
    sk.snd_ssthresh = 0x7FFFFFFF
    sk.snd_cwnd_cnt = 0
    sk.icsk_ca_state = 0
    sk.app_limited = 0xFFFFFFFF  # a bubble in the pipe until at least the first ACK
    sk.rate_app_limited = True
    sk.selective_acks = []
    sk.num_sacks = 0
    sk.connect_pending = False
    if sk.dst_cache is not None:
        sk.dst_cache.release()
        sk.dst_cache = None
    # clean up the Fast Open fields
    sk.fastopen_req = None  # tcp_free_fastopen_req()
    sk.syn_data_acked = False
    sk.defer_connect = False
    sk.fastopen_client_fail = 0
    sk.sk_error_report()


def tcp_send_active_reset_closed(sk: TcpSock) -> None:
    """Send a RST from a socket being torn down (its state is already CLOSE)."""
    state = sk.state
    sk.state = TCP_ESTABLISHED  # tcp_send_ack & co. refuse CLOSE sockets
    sk.tcp_mstamp = sk.tcp.tcp_clock_us()
    tcp_send_active_reset(sk)
    sk.state = state


@kernel("net/ipv4/tcp.c", "tcp_close", "__tcp_close")
def tcp_close(sk: TcpSock, timeout: int) -> None:
    """``close(2)``: FIN (or RST with unread data / zero linger), then orphan.

    Tasks blocked on the socket are woken (they find it closed: EBADF).

    Kernel: net/ipv4/tcp.c, tcp_close() / __tcp_close().
    """
    try:
        _tcp_close(sk)
    finally:
        sk.sk_error_report()


def _tcp_close(sk: TcpSock) -> None:
    sk.sk_shutdown = SHUTDOWN_MASK
    tcp = sk.tcp
    if sk.state == TCP_LISTEN:
        tcp_set_state(sk, TCP_CLOSE)
        from netstack.tcp.minisocks import inet_csk_listen_stop

        inet_csk_listen_stop(sk)
        sk.dead = True
        inet_csk_destroy_sock(sk)
        return
    data_was_unread = 0
    while sk.receive_queue:
        skb = sk.receive_queue.popleft()
        tcb: TcpSkbCb = skb.cb
        length = (tcb.end_seq - tcb.seq) & M32
        if tcb.tcp_flags & 0x01:
            length -= 1
        data_was_unread += length
        consume_skb(skb)
    # sock_rfree() of each gave its truesize back (sk_mem_uncharge()); sk_mem_reclaim()
    # returns the whole pages and keeps the rest, which the send queue still charged
    # (data in flight past close) stands on
    fwd = sk.sk_forward_alloc + sk.sk_rmem_alloc
    sk.sk_rmem_alloc = 0
    if fwd >= PAGE_SIZE:
        fwd &= PAGE_SIZE - 1
    sk.sk_forward_alloc = fwd
    if sk.state == TCP_CLOSE:
        pass
    elif data_was_unread:
        # RFC 2525 §2.17: unread data is lost: tell the peer with a RST
        tcp_set_state(sk, TCP_CLOSE)
        tcp_send_active_reset_closed(sk)
        tcp.ext.TCPAbortOnClose += 1
    elif sk.sock_flag_linger and not sk.sk_lingertime:
        tcp.ext.TCPAbortOnData += 1
        tcp_disconnect(sk)
    elif tcp_close_state(sk):
        tcp_send_fin(sk)
    # sock_orphan()
    sk.dead = True
    if not sk.orphaned:
        sk.orphaned = True
        tcp.orphan_count += 1
    state = sk.state
    if state == TCP_FIN_WAIT2:
        if sk.linger2 < 0:
            tcp_set_state(sk, TCP_CLOSE)
            tcp_send_active_reset_closed(sk)
            tcp.ext.TCPAbortOnLinger += 1
        else:
            tmo = tcp_fin_time(sk)
            if tmo > tcp.TCP_TIMEWAIT_LEN:
                inet_csk_reset_keepalive_timer(sk, tmo - tcp.TCP_TIMEWAIT_LEN)
            else:
                from netstack.tcp.minisocks import tcp_time_wait

                tcp_time_wait(sk, TCP_FIN_WAIT2, tmo)
                return
    if sk.state == TCP_CLOSE:
        inet_csk_destroy_sock(sk)
    elif sk.state in (TCP_SYN_SENT,):
        tcp_done(sk)


# -- options ---------------------------------------------------------------------------------------


@kernel("net/ipv4/tcp.c", "do_tcp_setsockopt")
def tcp_setsockopt(sk: TcpSock, level: int, optname: int, value: int | bytes) -> None:
    """Kernel: net/ipv4/tcp.c, do_tcp_setsockopt() (+ SO_KEEPALIVE, SO_LINGER)."""
    from netstack.core.sock import Sock

    if level == SOL_SOCKET:
        if optname == SO_KEEPALIVE:
            val = sk._int(value)
            sk.sock_flag_keepopen = bool(val)
            if sk.state not in (TCP_CLOSE, TCP_LISTEN):
                if val:
                    inet_csk_reset_keepalive_timer(sk, keepalive_time_when(sk))
                else:
                    inet_csk_delete_keepalive_timer(sk)
            return
        if optname == SO_LINGER:
            if isinstance(value, int) or len(value) < 8:
                raise sock_oserror(EINVAL)
            onoff = int.from_bytes(value[:4], "little", signed=True)
            linger = int.from_bytes(value[4:8], "little", signed=True)
            sk.sock_flag_linger = bool(onoff)
            sk.sk_lingertime = max(linger, 0) * sk.tcp.hz
            return
        Sock.setsockopt(sk, level, optname, value)
        if optname == 7 or optname == 8:  # SO_SNDBUF / SO_RCVBUF: the window follows
            sk.sk_write_space()
        return
    if level != IPPROTO_TCP:
        af_set = getattr(sk.af_ops, "setsockopt", None)  # icsk_af_ops->setsockopt (IPv6)
        if af_set is not None:
            af_set(sk, level, optname, value)
            return
        Sock.setsockopt(sk, level, optname, value)
        return
    if optname == TCP_CONGESTION:
        name = value.rstrip(b"\0").decode() if isinstance(value, bytes) else str(value)
        ops = sk.tcp.congestion_controls.get(name)
        if ops is None:
            raise sock_oserror(ENOENT)
        tcp_set_congestion_control(sk, ops)
        return
    if optname == TCP_FASTOPEN_KEY:  # a primary key, or a primary and a backup
        if not isinstance(value, bytes) or len(value) not in (16, 32):
            raise sock_oserror(EINVAL)
        _fo.tcp_fastopen_reset_cipher(sk.tcp, sk, value)
        return
    val = sk._int(value)
    if optname == TCP_NODELAY:
        if val:
            sk.nonagle |= TCP_NAGLE_OFF | TCP_NAGLE_PUSH
            tcp_push_pending_frames(sk)
        else:
            sk.nonagle &= ~TCP_NAGLE_OFF
    elif optname == TCP_CORK:
        if val:
            sk.nonagle |= TCP_NAGLE_CORK
        else:
            sk.nonagle &= ~TCP_NAGLE_CORK
            if sk.nonagle & TCP_NAGLE_OFF:
                sk.nonagle |= TCP_NAGLE_PUSH
            tcp_push_pending_frames(sk)
    elif optname == TCP_MAXSEG:
        if val and (val < 88 or val > 65535 - 40):
            raise sock_oserror(EINVAL)
        sk.user_mss = val
    elif optname == TCP_KEEPIDLE:
        if val < 1 or val > 32767:
            raise sock_oserror(EINVAL)
        sk.keepalive_time = val * sk.tcp.hz
        if sk.sock_flag_keepopen and sk.state not in (TCP_CLOSE, TCP_LISTEN):
            inet_csk_reset_keepalive_timer(sk, keepalive_time_when(sk))
    elif optname == TCP_KEEPINTVL:
        if val < 1 or val > 32767:
            raise sock_oserror(EINVAL)
        sk.keepalive_intvl = val * sk.tcp.hz
    elif optname == TCP_KEEPCNT:
        if val < 1 or val > 127:
            raise sock_oserror(EINVAL)
        sk.keepalive_probes = val
    elif optname == TCP_LINGER2:
        sk.linger2 = -1 if val < 0 else val * sk.tcp.hz
    elif optname == TCP_WINDOW_CLAMP:
        if val and val < 2048 // 2:
            raise sock_oserror(EINVAL)
        sk.window_clamp = val
    elif optname == TCP_QUICKACK:  # __tcp_sock_set_quickack()
        if val:
            sk.icsk_ack_pingpong = 0
        else:
            sk.icsk_ack_pingpong = 1  # inet_csk_enter_pingpong_mode(): ACKs are delayed
    elif optname == TCP_USER_TIMEOUT:
        if val < 0:
            raise sock_oserror(EINVAL)
        sk.icsk_user_timeout = val
    elif optname == TCP_FASTOPEN:
        _fo.tcp_fastopen_sockopt_check(sk, val)
    elif optname == TCP_FASTOPEN_CONNECT:
        if val > 1 or val < 0:
            raise sock_oserror(EINVAL)
        if not sk.tcp.sysctl_tcp_fastopen & 1:  # TFO_CLIENT_ENABLE
            raise sock_oserror(EOPNOTSUPP)
        if sk.state != TCP_CLOSE:
            raise sock_oserror(EINVAL)
        sk.fastopen_connect = bool(val)
    elif optname == TCP_FASTOPEN_NO_COOKIE:
        if val > 1 or val < 0 or sk.state not in (TCP_CLOSE, TCP_LISTEN):
            raise sock_oserror(EINVAL)
        sk.fastopen_no_cookie = bool(val)
    else:
        raise sock_oserror(92)  # ENOPROTOOPT


@kernel("net/ipv4/tcp.c", "do_tcp_getsockopt")
def tcp_getsockopt(sk: TcpSock, level: int, optname: int) -> int | bytes:
    """Kernel: net/ipv4/tcp.c, do_tcp_getsockopt()."""
    from netstack.core.sock import Sock

    if level == SOL_SOCKET:
        if optname == SO_KEEPALIVE:
            return int(sk.sock_flag_keepopen)
        if optname == SO_LINGER:
            return int(sk.sock_flag_linger).to_bytes(4, "little") + (
                sk.sk_lingertime // sk.tcp.hz
            ).to_bytes(4, "little")
        return Sock.getsockopt(sk, level, optname)
    if level != IPPROTO_TCP:
        af_get = getattr(sk.af_ops, "getsockopt", None)  # icsk_af_ops->getsockopt (IPv6)
        if af_get is not None:
            return af_get(sk, level, optname)  # type: ignore[no-any-return]
        return Sock.getsockopt(sk, level, optname)
    if optname == TCP_NODELAY:
        return int(bool(sk.nonagle & TCP_NAGLE_OFF))
    if optname == TCP_CORK:
        return int(bool(sk.nonagle & TCP_NAGLE_CORK))
    if optname == TCP_MAXSEG:
        if sk.state in (TCP_CLOSE, TCP_LISTEN):
            return sk.user_mss or 536
        return sk.mss_cache
    if optname == TCP_KEEPIDLE:
        return keepalive_time_when(sk) // sk.tcp.hz
    if optname == TCP_KEEPINTVL:
        from netstack.tcp.state import keepalive_intvl_when

        return keepalive_intvl_when(sk) // sk.tcp.hz
    if optname == TCP_KEEPCNT:
        from netstack.tcp.state import keepalive_probes

        return keepalive_probes(sk)
    if optname == TCP_CONGESTION:
        return sk.icsk_ca_ops.name.encode()
    if optname == TCP_WINDOW_CLAMP:
        return sk.window_clamp
    if optname == TCP_INFO:
        return repr(tcp_get_info(sk)).encode()
    if optname == TCP_FASTOPEN:
        return sk.fastopenq.max_qlen
    if optname == TCP_FASTOPEN_CONNECT:
        return int(sk.fastopen_connect)
    if optname == TCP_FASTOPEN_NO_COOKIE:
        return int(sk.fastopen_no_cookie)
    if optname == TCP_FASTOPEN_KEY:
        keys = sk.fastopenq.ctx if sk.fastopenq.ctx is not None else sk.tcp.tcp_fastopen_ctx
        return b"".join(a.to_bytes(8, "little") + b.to_bytes(8, "little") for a, b in keys or [])
    raise sock_oserror(92)


# -- tcp_info --------------------------------------------------------------------------------------


@attrs.frozen
class TcpInfo:
    """What ``ss -ti`` shows of a connection (kernel: ``struct tcp_info``)."""

    state: str
    ca_state: str
    cong: str
    retransmits: int
    backoff: int
    rto_ms: float
    ato_ms: float
    snd_mss: int
    rcv_mss: int
    advmss: int
    pmtu: int
    unacked: int
    sacked: int
    lost: int
    retrans: int
    rtt_ms: float
    rttvar_ms: float
    min_rtt_ms: float
    snd_ssthresh: int
    snd_cwnd: int
    rcv_space: int
    rcv_ssthresh: int
    snd_wscale: int
    rcv_wscale: int
    total_retrans: int
    bytes_sent: int
    bytes_retrans: int
    bytes_acked: int
    bytes_received: int
    segs_out: int
    segs_in: int
    data_segs_out: int
    data_segs_in: int
    delivered: int
    snd_wnd: int
    rcv_wnd: int
    options: tuple[str, ...]
    delivery_rate: int = 0  # bytes/s (tcpi_delivery_rate)
    delivery_rate_app_limited: bool = False


@kernel("net/ipv4/tcp.c", "tcp_get_info")
def tcp_get_info(sk: Any) -> TcpInfo:
    """Kernel: net/ipv4/tcp.c, tcp_get_info()."""
    if not isinstance(sk, TcpSock):
        zeros = (0,) * 18
        return TcpInfo(sk.state_name, "open", "", 0, 0, 0.0, 0.0, 0, 0, 0, 0, 0, 0, 0, 0,
                       0.0, 0.0, 0.0, *zeros, ())  # fmt: skip
    hz = sk.tcp.hz
    min_rtt = tcp_min_rtt(sk)
    opts: list[str] = []
    if sk.tstamp_ok:
        opts.append("ts")
    if sk.sack_ok:
        opts.append("sack")
    if sk.wscale_ok:
        opts.append(f"wscale:{sk.snd_wscale},{sk.rcv_wscale}")
    return TcpInfo(
        state=TCP_STATE_NAMES.get(sk.state, str(sk.state)),
        ca_state=CA_STATE_NAMES[sk.icsk_ca_state],
        cong=sk.icsk_ca_ops.name,
        retransmits=sk.icsk_retransmits,
        backoff=sk.icsk_backoff,
        rto_ms=sk.icsk_rto * 1000 / hz,
        ato_ms=sk.icsk_ack_ato * 1000 / hz,
        snd_mss=sk.mss_cache,
        rcv_mss=sk.icsk_ack_rcv_mss,
        advmss=sk.advmss,
        pmtu=sk.icsk_pmtu_cookie,
        unacked=sk.packets_out,
        sacked=sk.sacked_out,
        lost=sk.lost_out,
        retrans=sk.retrans_out,
        rtt_ms=(sk.srtt_us >> 3) / 1000,
        rttvar_ms=(sk.mdev_us >> 2) / 1000,
        min_rtt_ms=(0 if min_rtt == 0xFFFFFFFF else min_rtt / 1000),
        snd_ssthresh=sk.snd_ssthresh,
        snd_cwnd=sk.snd_cwnd,
        rcv_space=sk.rcvq_space_space,
        rcv_ssthresh=sk.rcv_ssthresh,
        snd_wscale=sk.snd_wscale,
        rcv_wscale=sk.rcv_wscale,
        total_retrans=sk.total_retrans,
        bytes_sent=sk.bytes_sent,
        bytes_retrans=sk.bytes_retrans,
        bytes_acked=sk.bytes_acked,
        bytes_received=sk.bytes_received,
        segs_out=sk.segs_out,
        segs_in=sk.segs_in,
        data_segs_out=sk.data_segs_out,
        data_segs_in=sk.data_segs_in,
        delivered=sk.delivered,
        snd_wnd=sk.snd_wnd,
        rcv_wnd=sk.rcv_wnd,
        options=tuple(opts),
        delivery_rate=tcp_compute_delivery_rate(sk),
        delivery_rate_app_limited=sk.rate_app_limited,
    )


# -- TCP Fast Open (netstack.tcp.fastopen has the theory of operation) ------------------------


@kernel("net/ipv4/tcp.c", "tcp_sendmsg_fastopen", "net/ipv4/af_inet.c", "__inet_stream_connect")
def tcp_sendmsg_fastopen(
    sk: TcpSock, data: bytes, flags: int, dest: tuple[int, int] | None, nonblock: bool
) -> tuple[int, int]:
    """``MSG_FASTOPEN`` or a deferred ``TCP_FASTOPEN_CONNECT``: connect with the data.

    Returns ``(err, copied_syn)``: err 0 once connected (a blocking call;
    the caller sends what the SYN did not carry), -EINPROGRESS while the
    handshake is on (non-blocking), another negative errno on failure. A
    blocking call that must wait raises ``SockWouldBlock`` and is called
    again with the same data; the request stays on the socket meanwhile.

    Kernel: net/ipv4/tcp.c, tcp_sendmsg_fastopen(); net/ipv4/af_inet.c,
    __inet_stream_connect() (is_sendmsg).
    """
    from netstack.core.sock import SockWouldBlock
    from netstack.tcp.output import tcp_connect
    from netstack.tcp.sock import TCP_SYN_RECV, TCP_SYN_SENT
    from netstack.tcp.state import tcp_set_state

    fo = sk.fastopen_req
    if fo is not None and fo.waiting:  # a blocking call, called again
        if sk.state in (TCP_SYN_SENT, TCP_SYN_RECV):
            raise SockWouldBlock(write=True)
        return _fastopen_done(sk, fo)
    if not sk.tcp.sysctl_tcp_fastopen & _fo.TFO_CLIENT_ENABLE:
        return -_fo.EOPNOTSUPP, 0
    if fo is not None:
        return -_fo.EALREADY, 0  # another Fast Open is in progress
    fo = sk.fastopen_req = _fo.TcpFastopenRequest(bytes(data))
    if sk.defer_connect:
        err = tcp_connect(sk)
        if err:
            tcp_set_state(sk, TCP_CLOSE)
            sk.inet_dport = 0
            sk.fastopen_req = None
            sk.defer_connect = False
            return err, 0
        err = -_fo.EINPROGRESS
    elif sk.state == TCP_CLOSE and not sk.connect_pending:
        if dest is None:
            sk.fastopen_req = None
            return -EINVAL, 0  # no address: tcp_v4_connect()'s addr_len check
        try:
            sk.af_ops.connect(sk, dest[0], dest[1])
        except OSError as e:
            sk.fastopen_req = None
            return -(e.errno or EINVAL), 0
        err = -_fo.EINPROGRESS
    elif sk.state in (TCP_SYN_SENT, TCP_SYN_RECV):
        sk.fastopen_req = None
        return -_fo.EALREADY, 0
    else:
        sk.fastopen_req = None
        return -_fo.EISCONN, 0
    if sk.state in (TCP_SYN_SENT, TCP_SYN_RECV):
        if nonblock:
            copied = fo.copied
            sk.fastopen_req = None
            sk.defer_connect = False
            sk.connect_pending = True
            return err, copied
        fo.waiting = True
        sk.connect_pending = True
        raise SockWouldBlock(write=True)
    return _fastopen_done(sk, fo)


def _fastopen_done(sk: TcpSock, fo: _fo.TcpFastopenRequest) -> tuple[int, int]:
    """The handshake is over: free the request; the connection's error, if it failed."""
    sk.fastopen_req = None
    sk.defer_connect = False
    sk.connect_pending = False
    if sk.state == TCP_CLOSE:  # reset, timed out, refused
        err = sk.sock_error()
        return -(err or _fo.ECONNREFUSED), 0
    return 0, fo.copied
