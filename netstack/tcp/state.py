"""Connection state changes, socket teardown, and the small shared helpers.

Theory of operation: :func:`tcp_set_state` is the one place ``sk.state``
changes for a full socket; it keeps ``CurrEstab``/``EstabResets`` right and,
on the way to CLOSE, takes the socket out of the hash tables and gives back
its local port (unless the user bound it explicitly). :func:`tcp_done` ends
a connection (timers stopped, waiters woken) and destroys an orphaned
socket. The PAWS tests and the keepalive helpers live here because the
input path, the minisocks and the timers all use them (the kernel keeps them
in ``include/net/tcp.h``).

Kernel: net/ipv4/tcp.c (tcp_set_state, tcp_done), include/net/tcp.h,
net/ipv4/inet_connection_sock.c (inet_csk_destroy_sock).
"""

from __future__ import annotations

from typing import Any, Final

from netstack.sites import kernel
from netstack.tcp.sock import (
    SHUTDOWN_MASK,
    TCP_CLOSE,
    TCP_CLOSE_WAIT,
    TCP_ESTABLISHED,
    TCP_LISTEN,
    TCP_PAWS_24DAYS,
    TCP_PAWS_MSL,
    TCP_SYN_RECV,
    TCP_SYN_SENT,
    TcpSock,
)

__all__ = [
    "inet_csk_destroy_sock",
    "tcp_done",
    "tcp_paws_check",
    "tcp_paws_reject",
    "tcp_set_state",
]

M32: Final = 0xFFFFFFFF
SOCK_BINDPORT_LOCK: Final = 4


def _s32(x: int) -> int:
    x &= M32
    return x - (1 << 32) if x & 0x80000000 else x


@kernel("inet_unhash")
def inet_unhash(sk: TcpSock) -> None:
    """Take *sk* out of the established or listening table. Kernel: inet_unhash()."""
    hashinfo = sk.tcp.hashinfo
    if sk.state == TCP_LISTEN:
        hashinfo.listen_del(sk)
    key = sk.ehash_key
    if key is not None:
        if hashinfo.ehash.get(key) is sk:
            del hashinfo.ehash[key]
        sk.ehash_key = None


@kernel("net/ipv4/tcp.c", "tcp_set_state")
def tcp_set_state(sk: TcpSock, state: int) -> None:
    """Change state, keeping the SNMP gauges and the tables right.

    Kernel: net/ipv4/tcp.c, tcp_set_state().
    """
    oldstate = sk.state
    mib = sk.mib
    if state == TCP_ESTABLISHED:
        if oldstate != TCP_ESTABLISHED:
            mib.CurrEstab += 1
    else:
        if state == TCP_CLOSE:
            if oldstate in (TCP_CLOSE_WAIT, TCP_ESTABLISHED):
                mib.EstabResets += 1
            inet_unhash(sk)
            if sk.bind_port and not sk.sk_userlocks & SOCK_BINDPORT_LOCK:
                inet_put_port(sk)
        if oldstate == TCP_ESTABLISHED:
            mib.CurrEstab -= 1
    sk.state = state


@kernel("net/ipv4/inet_hashtables.c", "inet_put_port")
def inet_put_port(sk: TcpSock) -> None:
    """Give the local port back. Kernel: net/ipv4/inet_hashtables.c, inet_put_port()."""
    port = sk.bind_port
    if port:
        sk.tcp.hashinfo.inet_put_port(sk, port)
        sk.bind_port = 0
        sk.inet_num = 0  # __inet_put_port(): inet_sport stays, a RST sent next still names it


@kernel("include/net/tcp.h", "tcp_clear_xmit_timers", "inet_csk_clear_xmit_timers")
def tcp_clear_xmit_timers(sk: TcpSock) -> None:
    """Kernel: include/net/tcp.h, tcp_clear_xmit_timers() / inet_csk_clear_xmit_timers()."""
    sk.icsk_pending = 0
    sk.icsk_ack_pending = 0
    sk.retransmit_timer.delete()
    sk.delack_timer.delete()
    if sk.tsq_timer is not None:
        sk.tsq_timer.delete()
    if sk.compressed_ack_timer is not None:  # hrtimer_try_to_cancel()
        sk.compressed_ack_timer.cancel()


@kernel("sock_def_wakeup")
def sk_state_change(sk: TcpSock) -> None:
    """Wake everyone waiting on the socket. Kernel: sock_def_wakeup()."""
    sk.sk_data_ready()
    sk.sk_write_space()


@kernel("net/ipv4/tcp.c", "tcp_done")
def tcp_done(sk: TcpSock) -> None:
    """The connection is over: CLOSE, stop timers, wake or destroy.

    Kernel: net/ipv4/tcp.c, tcp_done().
    """
    if sk.state in (TCP_SYN_SENT, TCP_SYN_RECV):
        sk.mib.AttemptFails += 1
    req = sk.fastopen_rsk
    if req is not None:
        from netstack.tcp.fastopen import reqsk_fastopen_remove

        reqsk_fastopen_remove(sk, req, False)
    tcp_set_state(sk, TCP_CLOSE)
    tcp_clear_xmit_timers(sk)
    sk.sk_shutdown = SHUTDOWN_MASK
    if not sk.dead:
        sk_state_change(sk)
    else:
        inet_csk_destroy_sock(sk)


@kernel(
    "net/ipv4/inet_connection_sock.c",
    "inet_csk_destroy_sock",
    "net/ipv4/tcp_ipv4.c",
    "tcp_v4_destroy_sock",
)
def inet_csk_destroy_sock(sk: TcpSock) -> None:
    """Free an orphaned, closed socket's queues and timers.

    Kernel: net/ipv4/inet_connection_sock.c, inet_csk_destroy_sock() +
    net/ipv4/tcp_ipv4.c, tcp_v4_destroy_sock().
    """
    from netstack.core.skbuff import consume_skb
    from netstack.tcp.fastopen import tcp_fastopen_active_disable_ofo_check
    from netstack.tcp.output import tcp_write_queue_purge

    tcp_clear_xmit_timers(sk)
    sk.sk_timer.delete()
    sk.icsk_ca_ops.release(sk)
    tcp_write_queue_purge(sk)
    tcp_fastopen_active_disable_ofo_check(sk)  # check if we want to disable active TFO
    for skb in sk.out_of_order_queue:
        consume_skb(skb)
    sk.out_of_order_queue.clear()
    while sk.receive_queue:
        consume_skb(sk.receive_queue.popleft())
    sk.sk_rmem_alloc = 0
    sk.sk_forward_alloc = 0  # sk_mem_reclaim()
    if sk.bind_port:
        inet_put_port(sk)
    if sk.dst_cache is not None:
        sk.dst_cache.release()
        sk.dst_cache = None
    if sk.orphaned:
        sk.orphaned = False
        sk.tcp.orphan_count -= 1
    sk.tcp.sockets.discard(sk)
    # sk_free() gives the memory back at once. The one cycle through a socket here is
    # its timers' bound methods (socket -> timer -> method -> socket): cut, so that
    # reference counting frees it when its last user lets go, and a frozen lab, whose
    # young collections are far apart, holds no closed connections (netstack.host.lab).
    for timer in (sk.retransmit_timer, sk.delack_timer, sk.sk_timer):
        timer.function = destroyed_timer


def destroyed_timer() -> None:
    """What a destroyed socket's timers run: nothing (they were deleted with it)."""


@kernel("include/net/tcp.h", "tcp_paws_check")
def tcp_paws_check(rx: Any, paws_win: int) -> bool:
    """Is the segment's timestamp recent enough (or PAWS not applicable)?

    *rx* holds ``ts_recent``, ``ts_recent_stamp`` and ``rcv_tsval``.
    Kernel: include/net/tcp.h, tcp_paws_check().
    """
    if _s32(rx.ts_recent - rx.rcv_tsval) <= paws_win:
        return True
    if rx.tcp.seconds() >= rx.ts_recent_stamp + TCP_PAWS_24DAYS:
        return True
    return not rx.ts_recent


@kernel("include/net/tcp.h", "tcp_paws_reject")
def tcp_paws_reject(rx: Any, rst: bool) -> bool:
    """Reject the segment for an old timestamp? RSTs get a grace of TCP_PAWS_MSL.

    Kernel: include/net/tcp.h, tcp_paws_reject().
    """
    if tcp_paws_check(rx, 0):
        return False
    return not (rst and rx.tcp.seconds() >= rx.ts_recent_stamp + TCP_PAWS_MSL)


@kernel("keepalive_time_when")
def keepalive_time_when(sk: TcpSock) -> int:
    """Jiffies of idleness before the first keepalive. Kernel: keepalive_time_when()."""
    return sk.keepalive_time or sk.tcp.sysctl_tcp_keepalive_time * sk.tcp.hz


@kernel("include/net/tcp.h", "keepalive_intvl_when")
def keepalive_intvl_when(sk: TcpSock) -> int:
    """Kernel: include/net/tcp.h, keepalive_intvl_when()."""
    return sk.keepalive_intvl or sk.tcp.sysctl_tcp_keepalive_intvl * sk.tcp.hz


@kernel("include/net/tcp.h", "keepalive_probes")
def keepalive_probes(sk: TcpSock) -> int:
    """Kernel: include/net/tcp.h, keepalive_probes()."""
    return sk.keepalive_probes or sk.tcp.sysctl_tcp_keepalive_probes


@kernel("net/ipv4/inet_connection_sock.c", "inet_csk_reset_keepalive_timer")
def inet_csk_reset_keepalive_timer(sk: TcpSock, timeout: int) -> None:
    """Kernel: net/ipv4/inet_connection_sock.c, inet_csk_reset_keepalive_timer()."""
    sk.sk_timer.mod(sk.net.clock.jiffies + timeout)


@kernel("net/ipv4/inet_connection_sock.c", "inet_csk_delete_keepalive_timer")
def inet_csk_delete_keepalive_timer(sk: TcpSock) -> None:
    """Kernel: net/ipv4/inet_connection_sock.c, inet_csk_delete_keepalive_timer()."""
    sk.sk_timer.delete()


@kernel("include/net/tcp.h", "tcp_fin_time")
def tcp_fin_time(sk: TcpSock) -> int:
    """How long an orphan waits in FIN_WAIT2. Kernel: include/net/tcp.h, tcp_fin_time()."""
    fin_timeout = sk.linger2 if sk.linger2 else sk.tcp.sysctl_tcp_fin_timeout * sk.tcp.hz
    rto = sk.icsk_rto
    if fin_timeout < (rto << 2) - (rto >> 1):
        fin_timeout = (rto << 2) - (rto >> 1)
    return fin_timeout


@kernel("include/net/inet_connection_sock.h", "inet_csk_schedule_ack")
def inet_csk_schedule_ack(sk: TcpSock) -> None:
    """Kernel: include/net/inet_connection_sock.h, inet_csk_schedule_ack()."""
    sk.icsk_ack_pending |= 1  # ICSK_ACK_SCHED


@kernel("include/net/inet_connection_sock.h", "inet_csk_ack_scheduled")
def inet_csk_ack_scheduled(sk: TcpSock) -> bool:
    """Kernel: include/net/inet_connection_sock.h, inet_csk_ack_scheduled()."""
    return bool(sk.icsk_ack_pending & 1)
