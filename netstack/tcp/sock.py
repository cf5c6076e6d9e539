"""``struct tcp_sock`` and friends: TCP's per-connection state, family-agnostic.

Theory of operation: a :class:`TcpSock` is the kernel's ``tcp_sock`` (with
its ``inet_connection_sock`` and ``inet_sock`` parts) on top of
:class:`~netstack.core.sock.Sock`. Everything that differs between IPv4 and
IPv6 — routing, the header, the pseudo-header checksum, replies without a
socket — goes through its ``af_ops`` (kernel: ``icsk_af_ops``, an
:class:`InetConnectionSockAfOps`), so the TCP engine in this package is shared
by both families, as ``tcp_input.c``/``tcp_output.c`` are.

Data waiting to be sent sits in ``write_queue`` (skbs without headers, sized
by ``tcp_sendmsg``); sent, unacknowledged data moves to ``rtx_queue``
(kernel: ``tcp_rtx_queue``), ordered by sequence; received in-order data is in
``receive_queue``, out-of-order data in ``out_of_order_queue`` (kept sorted).
Each queued skb carries a :class:`TcpSkbCb` in ``skb.cb`` (``TCP_SKB_CB``).

Sequence numbers are 32-bit and compared with :func:`before`/:func:`after`
(wrap-around arithmetic). Times: ``jiffies`` for timers, microseconds
(``tcp_mstamp``) for RTT samples, milliseconds for the timestamp option.

Kernel: include/linux/tcp.h, include/net/tcp.h, include/net/inet_connection_sock.h,
include/net/request_sock.h, include/net/inet_timewait_sock.h.

**The socket lock** (``lock_sock``/``release_sock``). Every socket call of
:class:`TcpSock` owns the socket while it runs (``sk_lock_owned``:
``sock_owned_by_user``), as the kernel's ``tcp_sendmsg``, ``tcp_recvmsg``,
``inet_stream_connect``, ``tcp_close``, ``inet_shutdown``, ``do_tcp_setsockopt``
and the others take ``lock_sock``. A segment ``tcp_v4_rcv``/``tcp_v6_rcv``
finds for an owned socket goes to its backlog (:func:`tcp_add_backlog`:
``sk_add_backlog`` with the 6.x limit, ``TCPBacklogDrop`` beyond it) and an
ICMP "fragmentation needed"/"packet too big" sets ``TCP_MTU_REDUCED_DEFERRED``;
:func:`release_sock` runs the backlog through the family's ``do_rcv``
(``__release_sock``: ``sk_backlog_rcv``) and then :func:`tcp_release_cb`
before it gives the socket up. A call's waits are outside the lock: the
protocol call returns (or raises :class:`SockWouldBlock`) and the Trio socket
waits, as the kernel's ``sk_wait_event`` releases the lock while it sleeps.
Something can reach an owned socket only with the polls at
``local_bh_enable`` (``netstack.core.napi``, "Polls at local_bh_enable":
functional mode's default; never in a lab opened with
``polls_at_bh_enable=False`` or in timed mode), and then only while its own
call runs: the NAPI polls
that call's transmit raises run at the end of ``dev_queue_xmit`` in the
caller's task; a timer or a NAPI task never runs while a call is inside.
``release_sock`` runs ``tcp_release_cb`` with bottom halves disabled and the
polls it raised after the socket is given up, as the kernel's holds
``spin_lock_bh(slock)`` across both; a segment whose processing raises
leaves the rest on the backlog and the socket given up.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias

import attrs

from netstack.core.dst import skb_dst_drop
from netstack.core.napi import BH, BH_DISABLED, BH_ENABLED, do_softirq, wakeup_softirqd
from netstack.core.skbuff import DropReason, SkBuff, kfree_skb
from netstack.core.sock import Sock, SockWouldBlock
from netstack.core.win_minmax import Minmax
from netstack.sites import kernel

if TYPE_CHECKING:
    from netstack.core.dst import DstEntry
    from netstack.core.hrtimer import HrTimer
    from netstack.core.net import Net
    from netstack.core.timer import TimerList
    from netstack.tcp.cong import TcpCongestionOps
    from netstack.tcp.proto import Tcp

__all__ = [
    "TCPF_MTU_REDUCED_DEFERRED",
    "TCP_CLOSE",
    "TCP_ESTABLISHED",
    "TCP_LISTEN",
    "TCP_STATE_NAMES",
    "InetConnectionSockAfOps",
    "RequestSock",
    "SockCommon",
    "TcpProt",
    "TcpSkbCb",
    "TcpSock",
    "TimewaitSock",
    "after",
    "before",
    "between",
    "lock_sock",
    "release_sock",
    "tcp_add_backlog",
    "tcp_release_cb",
]

# sk_state (include/net/tcp_states.h)
V4MAPPED_PREFIX: Final = 0xFFFF << 32  # ::ffff:0.0.0.0/96 (ipv6_addr_set_v4mapped)
TCP_ESTABLISHED: Final = 1
TCP_SYN_SENT: Final = 2
TCP_SYN_RECV: Final = 3
TCP_FIN_WAIT1: Final = 4
TCP_FIN_WAIT2: Final = 5
TCP_TIME_WAIT: Final = 6
TCP_CLOSE: Final = 7
TCP_CLOSE_WAIT: Final = 8
TCP_LAST_ACK: Final = 9
TCP_LISTEN: Final = 10
TCP_CLOSING: Final = 11
TCP_NEW_SYN_RECV: Final = 12

# sk_tsq_flags (include/linux/tcp.h, enum tsq_enum): the work a softirq found the
# socket owned for, done by tcp_release_cb(); netstack's timers and TSQ handler run
# in tasks of their own, never inside a socket call, so only tcp_v4_err/tcp_v6_err's
# PMTU update is ever deferred
TCPF_MTU_REDUCED_DEFERRED: Final = 1 << 5  # TCP_MTU_REDUCED_DEFERRED

# sk_backlog_rcv: tcp_v4_do_rcv / tcp_v6_do_rcv (tcp, sk, skb), as tcp_add_backlog's
# caller names it
BacklogRcv: TypeAlias = "Callable[[Tcp, TcpSock, SkBuff], int]"

TCP_STATE_NAMES: Final = {
    TCP_ESTABLISHED: "ESTAB",
    TCP_SYN_SENT: "SYN-SENT",
    TCP_SYN_RECV: "SYN-RECV",
    TCP_FIN_WAIT1: "FIN-WAIT-1",
    TCP_FIN_WAIT2: "FIN-WAIT-2",
    TCP_TIME_WAIT: "TIME-WAIT",
    TCP_CLOSE: "UNCONN",
    TCP_CLOSE_WAIT: "CLOSE-WAIT",
    TCP_LAST_ACK: "LAST-ACK",
    TCP_LISTEN: "LISTEN",
    TCP_CLOSING: "CLOSING",
    TCP_NEW_SYN_RECV: "NEW-SYN-RECV",
}
"""State names as ``ss`` prints them (misc/ss.c, sstate_name[])."""

# icsk_ca_state (enum tcp_ca_state)
TCP_CA_Open: Final = 0
TCP_CA_Disorder: Final = 1
TCP_CA_CWR: Final = 2
TCP_CA_Recovery: Final = 3
TCP_CA_Loss: Final = 4
CA_STATE_NAMES: Final = ("open", "disorder", "cwr", "recovery", "loss")

# icsk_pending (ICSK_TIME_*)
ICSK_TIME_RETRANS: Final = 1
ICSK_TIME_DACK: Final = 2
ICSK_TIME_PROBE0: Final = 3
ICSK_TIME_LOSS_PROBE: Final = 5
ICSK_TIME_REO_TIMEOUT: Final = 6

# icsk_ack.pending (enum inet_csk_ack_state_t)
ICSK_ACK_SCHED: Final = 1
ICSK_ACK_TIMER: Final = 2
ICSK_ACK_PUSHED: Final = 4
ICSK_ACK_PUSHED2: Final = 8
ICSK_ACK_NOW: Final = 16
ICSK_ACK_NOMEM: Final = 32

# TCP_SKB_CB(skb)->sacked
TCPCB_SACKED_ACKED: Final = 0x01
TCPCB_SACKED_RETRANS: Final = 0x02
TCPCB_LOST: Final = 0x04
TCPCB_TAGBITS: Final = 0x07
TCPCB_REPAIRED: Final = 0x10
TCPCB_EVER_RETRANS: Final = 0x80
TCPCB_RETRANS: Final = TCPCB_SACKED_RETRANS | TCPCB_EVER_RETRANS

# tp->nonagle
TCP_NAGLE_OFF: Final = 1
TCP_NAGLE_CORK: Final = 2
TCP_NAGLE_PUSH: Final = 4

# tp->rx_opt.sack_ok
TCP_SACK_SEEN: Final = 1 << 0
TCP_DSACK_SEEN: Final = 1 << 2

# sk_shutdown
RCV_SHUTDOWN: Final = 1
SEND_SHUTDOWN: Final = 2
SHUTDOWN_MASK: Final = 3

# ECN (tp->ecn_flags)
TCP_ECN_OK: Final = 1
TCP_ECN_QUEUE_CWR: Final = 2
TCP_ECN_DEMAND_CWR: Final = 4
TCP_ECN_SEEN: Final = 8

TCP_MSS_DEFAULT: Final = 536
TCP_MIN_MSS: Final = 88
TCP_MAX_QUICKACKS: Final = 16
TCP_INIT_CWND: Final = 10
TCP_INFINITE_SSTHRESH: Final = 0x7FFFFFFF
TCP_MAX_WSCALE: Final = 14
TCP_RMEM_TO_WIN_SCALE: Final = 8
# 6.11+: skb->len is assumed half of skb->truesize until a segment is measured
TCP_DEFAULT_SCALING_RATIO: Final = 1 << (TCP_RMEM_TO_WIN_SCALE - 1)
TCP_NUM_SACKS: Final = 4
TCP_SACK_BLOCKS_EXPECTED: Final = 2  # more SACK blocks than this: send the compressed ACK
TCP_FASTRETRANS_THRESH: Final = 3
TCP_PAWS_24DAYS: Final = 60 * 60 * 24 * 24
TCP_PAWS_MSL: Final = 60
TCP_PAWS_WINDOW: Final = 1
MAX_TCP_HEADER: Final = 320  # L1_CACHE_ALIGN(128 + MAX_HEADER)
MAX_TCP_WINDOW: Final = 32767
TCP_TS_HZ: Final = 1000
# TCP_MAXSEG's bounds
TCP_MAXSEG_MAX: Final = 65535 - 40


@kernel("before")
def before(seq1: int, seq2: int) -> bool:
    """``seq1`` comes before ``seq2`` in 32-bit sequence space. Kernel: before()."""
    return ((seq1 - seq2) & 0xFFFFFFFF) > 0x7FFFFFFF


@kernel("after")
def after(seq1: int, seq2: int) -> bool:
    """Kernel: after()."""
    return ((seq2 - seq1) & 0xFFFFFFFF) > 0x7FFFFFFF


@kernel("between")
def between(seq1: int, seq2: int, seq3: int) -> bool:
    """``seq2 <= seq1 <= seq3`` in sequence space. Kernel: between()."""
    return ((seq3 - seq2) & 0xFFFFFFFF) >= ((seq1 - seq2) & 0xFFFFFFFF)


class TcpSkbCb:
    """Per-skb TCP state (kernel: ``struct tcp_skb_cb``, ``TCP_SKB_CB(skb)``).

    Attributes:
        seq, end_seq: the segment's sequence range (SYN and FIN count one).
        tcp_flags: the header's flag byte.
        sacked: TCPCB_* scoreboard bits (sent skbs).
        ack_seq: received skbs: the ACK number.
        pcount: segments this skb will be (``tcp_gso_segs``).
        gso_size: its MSS when ``pcount > 1`` (``tcp_gso_size``).
        mstamp: microseconds when (re)sent (``skb->skb_mstamp``).
        sacked_off: received skbs: offset of the SACK option in the header
            (the kernel overloads ``sacked``), 0 if none.
        tw_isn: received SYNs that reopen a TIME_WAIT port: the ISN to use.
        dsfield: received skbs: the IP TOS byte.
        in_flight: bytes outstanding when this skb was sent.
        tsorted: on the socket's time-sorted list of sent skbs (the kernel's
            ``tcp_tsorted_anchor`` linked into ``tsorted_sent_queue``): set
            when (re)sent, cleared when RACK marks it lost or it is SACKed.
        tx_delivered: the socket's ``delivered`` when this skb was last sent
            (``tx.delivered`` of tcp_rate.c).
        tx_first_tx_mstamp, tx_delivered_mstamp, tx_is_app_limited: the
            socket's ``first_tx_mstamp``, ``delivered_mstamp`` and whether it
            was application-limited, at that send (``tx.*``, tcp_rate.c).
        tx_order: the socket's count of transmissions when this skb was last
            sent: the order of the kernel's time-sorted list where virtual
            time gives two sends the same stamp.
    """

    __slots__ = (
        "ack_seq",
        "dsfield",
        "end_seq",
        "gso_size",
        "in_flight",
        "mstamp",
        "pcount",
        "sacked",
        "sacked_off",
        "seq",
        "tcp_flags",
        "tsorted",
        "tw_isn",
        "tx_delivered",
        "tx_delivered_mstamp",
        "tx_first_tx_mstamp",
        "tx_is_app_limited",
        "tx_order",
    )

    def __init__(self, seq: int, end_seq: int, tcp_flags: int) -> None:
        self.seq = seq
        self.end_seq = end_seq
        self.tcp_flags = tcp_flags
        self.sacked = 0
        self.ack_seq = 0
        self.pcount = 1
        self.gso_size = 0
        self.mstamp = 0
        self.sacked_off = 0
        self.tw_isn = 0
        self.dsfield = 0
        self.in_flight = 0
        self.tsorted = False
        self.tx_delivered = 0
        self.tx_first_tx_mstamp = 0
        self.tx_delivered_mstamp = 0
        self.tx_is_app_limited = False
        self.tx_order = 0

    def __repr__(self) -> str:
        return f"<TcpSkbCb {self.seq}-{self.end_seq} f={self.tcp_flags:#x} s={self.sacked:#x}>"


class InetConnectionSockAfOps(Protocol):
    """What TCP needs from an address family (kernel: ``inet_connection_sock_af_ops``).

    IPv4 provides ``ipv4_specific``; IPv6 will provide ``ipv6_specific``.
    """

    net_header_len: int
    family: int
    rsk_slab_name: str  # the request_sock_ops' slab_name (tcp_syn_flood_action's message)

    def queue_xmit(self, sk: TcpSock, skb: SkBuff) -> int:
        """Add the network header and send (``ip_queue_xmit``); NET_XMIT_* / -errno."""

    def send_check(self, sk: TcpSock, skb: SkBuff) -> None:
        """Put the pseudo-header sum in the TCP checksum field (CHECKSUM_PARTIAL)."""

    def rebuild_header(self, sk: TcpSock) -> int:
        """Make sure the socket has a valid route; 0 or a negative errno."""

    def conn_request(self, sk: TcpSock, skb: SkBuff) -> int:
        """A SYN for a listener: create a request sock and answer."""

    def syn_recv_sock(
        self, sk: TcpSock, skb: SkBuff, req: RequestSock, dst: DstEntry | None
    ) -> TcpSock | None:
        """The handshake completed: build the child socket."""

    def send_reset(self, sk: SockCommon | None, skb: SkBuff) -> None:
        """Answer *skb* with a RST built from its headers alone."""

    def send_ack(
        self,
        sk: SockCommon | None,
        skb: SkBuff,
        seq: int,
        ack: int,
        win: int,
        tsval: int,
        tsecr: int,
    ) -> None:
        """Send an ACK without a full socket (TIME_WAIT, SYN_RECV)."""

    def send_synack(self, sk: TcpSock, req: RequestSock, dst: DstEntry | None) -> int:
        """Build and send the SYN-ACK of *req*."""

    def connect(self, sk: TcpSock, addr: Any, port: int) -> None:
        """``connect()``: route, bind a local port, send the SYN."""

    def bind(self, sk: TcpSock, addr: Any, port: int) -> None:
        """``bind()``."""

    def mtu_reduced(self, sk: TcpSock) -> None:
        """An ICMP frag-needed lowered the path MTU."""

    def dst_mtu(self, sk: TcpSock) -> int:
        """The cached route's path MTU (0 if none)."""

    def advmss(self, sk: TcpSock) -> int:
        """The MSS the route allows to advertise (``dst_metric_advmss``)."""

    # the request-sock half (kernel: ``tcp_request_sock_ops`` / ``tcp_request_sock_ipv4_ops``)
    def init_req(self, req: RequestSock, skb: SkBuff) -> None:
        """Fill a request's addresses from the SYN (``tcp_v4_init_req``)."""

    def init_seq(self, skb: SkBuff) -> int:
        """The ISN for a SYN's 4-tuple (``tcp_v4_init_seq``)."""

    def init_ts_off(self, skb: SkBuff) -> int:
        """The timestamp offset for a SYN's address pair (``tcp_v4_init_ts_off``)."""

    def route_req(self, req: RequestSock) -> DstEntry | None:
        """The route a SYN-ACK takes, or None (``inet_csk_route_req``)."""

    def cookie_init_seq(self, sk: TcpSock, skb: SkBuff, mss: int) -> tuple[int, int]:
        """A SYN cookie ISN and the MSS it encodes (``cookie_v4_init_sequence``)."""


@attrs.frozen
class TcpProt:
    """TCP's operations as a socket reaches them (kernel: ``struct proto tcp_prot``).

    A :class:`TcpSock`'s socket calls and timers go through ``sk.sk_prot``,
    set when the socket is made from the Net's :class:`~netstack.tcp.proto.Tcp`
    (``tcp_prot`` is built in ``tcp/proto.py`` from ``tcp.py``, ``timer.py``,
    ``minisocks.py`` and ``input.py``), so this module imports none of the
    modules that import it. The kernel's ``struct proto`` is the same indirection
    (``sk->sk_prot->disconnect`` in ``inet_child_forget``); the socket layer's
    ``inet_stream_ops`` calls (connect, listen, accept, shutdown) and the
    handlers ``tcp_init_xmit_timers`` arms ride along here, and so does
    ``tcp_rcv_state_process`` for ``tcp_child_process``, the one call the
    minisocks make up into ``tcp/input.py``.
    """

    connect: Callable[[TcpSock, int, int], None]
    disconnect: Callable[[TcpSock], None]
    listen: Callable[[TcpSock, int], None]
    accept: Callable[[TcpSock], TcpSock]
    sendmsg: Callable[[TcpSock, bytes | bytearray | memoryview, int, tuple[int, int] | None], int]
    recvmsg: Callable[[TcpSock, int, int], bytes | None]  # None: the reader waits
    shutdown: Callable[[TcpSock, int], None]
    close: Callable[[TcpSock, int], None]
    readable: Callable[[TcpSock], bool]
    writable: Callable[[TcpSock], bool]
    setsockopt: Callable[[TcpSock, int, int, int | bytes], None]
    getsockopt: Callable[[TcpSock, int, int], int | bytes]
    write_timer: Callable[[TcpSock], None]  # tcp_write_timer (inet_csk_init_xmit_timers)
    delack_timer: Callable[[TcpSock], None]  # tcp_delack_timer
    keepalive_timer: Callable[[TcpSock], None]  # tcp_keepalive_timer
    tw_timer: Callable[[TimewaitSock], None]  # tw_timer_handler (inet_twsk_alloc)
    # tcp_rcv_state_process, for tcp_child_process (no struct proto member: the
    # kernel calls it directly; here the minisocks sit below tcp/input.py)
    rcv_state_process: Callable[[TcpSock, SkBuff], int]


class TcpSock(Sock):
    """A TCP socket (kernel: ``struct tcp_sock`` / ``inet_connection_sock``).

    Created by a family's socket() (IPv4: ``Ipv4.socket(SOCK_STREAM)``), or
    as the child of a listener when a handshake completes.
    """

    def __init__(self, tcp: Tcp, family: int, af_ops: InetConnectionSockAfOps) -> None:
        net = tcp.net
        super().__init__(net, family, 1, 6)  # SOCK_STREAM, IPPROTO_TCP
        self.sk_prot: TcpProt = tcp.prot  # sk->sk_prot = &tcp_prot (sk_alloc)
        self.tcp = tcp
        self.af_ops = af_ops
        self.ipv6only = False  # sk_ipv6only (AF_INET6: IPV6_V6ONLY / net.ipv6.bindv6only)
        # inet6 RECVERR6 (IPV6_RECVERR): what tcp_v6_err reads; IP_RECVERR (recverr)
        # is tcp_v4_err's
        self.recverr6 = False
        self.mib = tcp.mib
        self.ext = tcp.ext
        # tcp_init_sock()
        self.sk_sndbuf = tcp.tcp_wmem[1]
        self.sk_rcvbuf = tcp.tcp_rmem[1]
        self.sk_wmem_queued = 0
        self.sk_max_ack_backlog = 0
        self.sk_ack_backlog = 0
        self.sock_flag_keepopen = False
        self.sock_flag_done = False
        self.sock_flag_linger = False
        self.sk_lingertime = 0
        self.sk_gso_type = 0
        self.sk_route_caps = 0
        self.sk_gso_max_size = 65536
        self.sk_gso_max_segs = 1
        self.sk_pacing_rate = 0xFFFFFFFFFFFFFFFF
        self.sk_pacing_shift = 10
        self.sk_socket_nospace = False  # SOCK_NOSPACE
        self.sk_err_soft = 0
        self.sk_rcvlowat = 1
        self.sk_txhash = 0
        # ipv6_pinfo: the flow label (np->flow_label), IPV6_AUTOFLOWLABEL (-1: not
        # set) and the label ip6_xmit last made, for the txhash and sysctl generation
        self.flow_label = 0
        self.autoflowlabel = -1
        self.fl6_hash = -1
        self.fl6_gen = -1
        self.fl6_label = 0
        self.opt_dst1opt = b""  # np->opt->dst1opt: IPV6_DSTOPTS, sent before TCP
        self.timeout_rehash = 0
        self.parent: TcpSock | None = None  # the listener a child is queued on
        # inet_connection_sock
        self.icsk_ca_ops: TcpCongestionOps = tcp.default_ca()
        self.icsk_ca_priv: Any = None
        self.icsk_ca_state = TCP_CA_Open
        self.icsk_ca_initialized = False
        self.icsk_retransmits = 0
        self.total_rto = 0  # tp->total_rto: RTOs over the connection's life
        self.total_rto_recoveries = 0  # RTO recoveries (CA_Loss entered by a timeout)
        self.total_rto_time = 0  # ms spent in completed RTO recoveries
        self.rto_stamp = 0  # ms: start of the RTO recovery under way, 0: none
        self.icsk_pending = 0
        self.icsk_backoff = 0
        self.icsk_syn_retries = 0
        self.icsk_probes_out = 0
        self.icsk_probes_tstamp = 0  # jiffies of the first zero-window/local-drop probe
        self.icsk_ext_hdr_len = 0
        self.icsk_user_timeout = 0
        self.icsk_pmtu_cookie = 0
        self.mtu_info = 0  # tp->mtu_info: the MTU an ICMP frag-needed announced
        self.icsk_timeout = 0
        self.icsk_rto = tcp.TCP_TIMEOUT_INIT
        self.icsk_ack_pending = 0
        self.icsk_ack_quick = 0
        self.icsk_ack_pingpong = 0
        self.icsk_ack_ato = 0
        self.icsk_ack_timeout = 0
        self.icsk_ack_lrcvtime = 0
        self.icsk_ack_last_seg_size = 0
        self.icsk_ack_rcv_mss = 0
        self.icsk_mtup_enabled = False
        self.icsk_mtup_search_high = 0
        self.icsk_mtup_search_low = 0
        self.icsk_mtup_probe_size = 0
        self.accept_queue: collections.deque[RequestSock] = collections.deque()
        self.syn_queue_len = 0  # reqsk_queue_len(): icsk_accept_queue.qlen
        self.syn_queue_young = 0  # reqsk_queue_len_young(): requests not yet timed out
        self.synflood_warned = False  # icsk_accept_queue.synflood_warned
        self.synq_overflow_stamp: int | None = None  # tcp_synq_overflow(): last jiffies
        self.retransmit_timer: TimerList = net.timers.timer(self._write_timer, "tcp_write_timer")
        self.delack_timer: TimerList = net.timers.timer(self._delack_timer, "tcp_delack_timer")
        self.sk_timer: TimerList = net.timers.timer(self._keepalive_timer, "tcp_keepalive")
        self.tsq_timer: TimerList | None = None
        # the socket lock (the module doc's "The socket lock"): owned by a socket call,
        # the segments that came meanwhile (each with the do_rcv of its family), their
        # truesize (sk_backlog.len), and the work deferred to release_sock (sk_tsq_flags)
        self.sk_lock_owned = False
        self.sk_backlog: list[tuple[BacklogRcv, SkBuff]] = []
        self.sk_backlog_len = 0
        self.sk_tsq_flags = 0
        # SACK compression (6.x): ACKs held back while out-of-order data arrives
        self.compressed_ack = 0
        self.compressed_ack_rcv_nxt = 0
        self.dup_ack_counter = 0
        self.compressed_ack_timer: HrTimer | None = None  # made on first use
        # tcp_sock: sequence space
        self.snd_una = 0
        self.snd_nxt = 0
        self.snd_sml = 0
        self.snd_up = 0
        self.snd_wnd = 0
        self.snd_wl1 = 0
        self.max_window = 0
        self.write_seq = 0
        self.pushed_seq = 0
        self.rcv_nxt = 0
        self.copied_seq = 0
        self.rcv_wup = 0
        self.rcv_wnd = 0
        self.rcv_ssthresh = 0
        self.window_clamp = 0
        self.scaling_ratio = TCP_DEFAULT_SCALING_RATIO  # tcp_scaling_ratio_init()
        self.chrono_start = 0  # jiffies the running chronograph started
        self.chrono_type = 0  # enum tcp_chrono (TCP_CHRONO_UNSPEC)
        self.chrono_stat = [0, 0, 0]  # jiffies busy, rwnd-limited, sndbuf-limited
        self.rcv_ooopack = 0  # segments queued out of order
        self.bytes_acked = 0
        self.bytes_received = 0
        self.bytes_sent = 0
        self.bytes_retrans = 0
        self.segs_in = 0
        self.segs_out = 0
        self.data_segs_in = 0
        self.data_segs_out = 0
        # MSS and options
        self.mss_cache = TCP_MSS_DEFAULT
        self.advmss = 0
        self.tcp_header_len = 20
        self.user_mss = 0  # rx_opt.user_mss (TCP_MAXSEG)
        self.mss_clamp = TCP_MSS_DEFAULT  # rx_opt.mss_clamp
        self.tstamp_ok = False
        self.wscale_ok = False
        self.sack_ok = 0
        self.snd_wscale = 0
        self.rcv_wscale = 0
        self.saw_tstamp = False
        self.rcv_tsval = 0
        self.rcv_tsecr = 0
        self.ts_recent = 0
        self.ts_recent_stamp = 0
        self.tsoffset = 0
        self.num_sacks = 0
        self.dsack = 0
        self.selective_acks: list[list[int]] = []
        self.duplicate_sack = [0, 0]
        self.recv_sack_cache: list[tuple[int, int]] = []
        self.pred_flags = 0
        # memory reserved in whole pages and not yet charged, shared by the receive and the
        # send side (sk->sk_forward_alloc; see tcp.helpers.sk_wmem_charge)
        self.sk_forward_alloc = 0
        # RTT and RTO (µs)
        self.srtt_us = 0
        self.mdev_us = 0
        self.mdev_max_us = 0
        self.rttvar_us = 0
        self.rtt_seq = 0
        # windowed min of RTT samples (µs): minmax_reset(&tp->rtt_min, tcp_jiffies32, ~0U)
        self.rtt_min = Minmax(tcp.jiffies(), 0xFFFFFFFF)
        # delivery rate sampling (net/ipv4/tcp_rate.c)
        self.first_tx_mstamp = 0  # send time of the latest (S)ACKed skb, µs
        self.delivered_mstamp = 0  # when ``delivered`` last grew, µs
        self.app_limited = 0xFFFFFFFF  # ``delivered`` mark ending a limited phase; 0: none
        self.rate_delivered = 0  # the reported sample: packets delivered …
        self.rate_interval_us = 0  # … in this interval
        self.rate_app_limited = True  # … while application-limited
        self.tcp_mstamp = 0
        self.retrans_stamp = 0
        self.rcv_tstamp = 0
        self.lsndtime = 0
        self.rcv_rtt_est_rtt_us = 0
        self.rcv_rtt_est_seq = 0
        self.rcv_rtt_est_time = 0
        self.rcv_rtt_last_tsecr = 0
        self.rcvq_space_space = 0
        self.rcvq_space_seq = 0
        self.rcvq_space_time = 0
        # congestion control
        self.snd_cwnd = TCP_INIT_CWND
        self.snd_ssthresh = TCP_INFINITE_SSTHRESH
        self.snd_cwnd_cnt = 0
        self.snd_cwnd_clamp = 0xFFFFFFFF
        self.snd_cwnd_used = 0
        self.snd_cwnd_stamp = 0
        self.prior_cwnd = 0
        self.prior_ssthresh = 0
        self.high_seq = 0
        self.undo_marker = 0
        self.undo_retrans = -1
        self.prr_delivered = 0
        self.prr_out = 0
        self.packets_out = 0
        self.retrans_out = 0
        self.sacked_out = 0
        self.lost_out = 0
        self.lost = 0
        self.delivered = 0
        self.total_retrans = 0
        self.reordering = tcp.sysctl_tcp_reordering
        self.max_packets_out = 0
        self.max_packets_seq = 0
        self.is_cwnd_limited = False
        self.is_sack_reneg = False
        self.frto = False
        self.tlp_high_seq = 0
        # RACK (struct tcp_rack, tcp_recovery.c) and reordering/D-SACK history
        self.rack_mstamp = -1  # rack.mstamp: (re)sent time of the latest (s)acked skb, µs
        self.rack_rtt_us = 0  # rack.rtt_us: its RTT
        self.rack_end_seq = 0  # rack.end_seq
        self.rack_tx_order = 0  # the send order of that skb (TcpSkbCb.tx_order)
        self.tx_order = 0  # transmissions so far (for TcpSkbCb.tx_order)
        self.rack_last_delivered = 0  # rack.last_delivered: when reo_wnd last grew
        self.rack_reo_wnd_steps = 1  # rack.reo_wnd_steps: reo_wnd in min_rtt/4 steps
        self.rack_reo_wnd_persist = 0  # rack.reo_wnd_persist: recoveries left to keep it
        self.rack_dsack_seen = False  # rack.dsack_seen
        self.rack_advanced = False  # rack.advanced
        self.reord_seen = 0  # reordering events seen (tcpi_reord_seen)
        self.dsack_dups = 0  # segments D-SACKed (tcpi_dsack_dups)
        self.highest_sack: SkBuff | None = None
        self.lost_skb_hint: SkBuff | None = None
        self.lost_cnt_hint = 0
        self.retransmit_skb_hint: SkBuff | None = None
        self.ecn_flags = 0
        # sending
        self.nonagle = 0
        self.thin_lto = False
        self.linger2 = 0
        self.keepalive_time = 0
        self.keepalive_intvl = 0
        self.keepalive_probes = 0
        self.last_oow_ack_time = 0
        self.tsq_throttled = False
        self.notsent_lowat = 0
        self.write_queue: collections.deque[SkBuff] = collections.deque()
        self.rtx_queue: list[SkBuff] = []
        self.out_of_order_queue: list[SkBuff] = []
        self.defer_connect = False  # TCP_FASTOPEN_CONNECT: the SYN waits for the first write
        # TCP Fast Open (netstack.tcp.fastopen)
        self.fastopenq = FastopenQueue()  # icsk_accept_queue.fastopenq
        self.fastopen_rsk: RequestSock | None = None  # a passive child's request
        self.fastopen_req: Any = None  # TcpFastopenRequest of an active open
        self.fastopen_connect = False
        self.fastopen_no_cookie = False
        self.syn_fastopen = False  # our SYN carried a Fast Open option
        self.syn_fastopen_exp = False
        self.syn_fastopen_child = False
        self.syn_fastopen_ch = False  # opened after a black-hole pause ended
        self.syn_data = False  # our SYN carried data
        self.syn_data_acked = False
        self.fastopen_client_fail = 0
        self.connect_pending = False  # a blocking connect() waits
        self.rst_sent = False
        self.tlp_retrans = 0
        self.ehash_key: tuple[int, int, int, int, int] | None = None
        self.bind_port = 0  # the port held in bhash (0: none)
        self.orphaned = False  # closed by the user, still finishing (orphan_count)
        self.hash_connect = False  # the port came from inet_hash_connect
        self.ever_connected = False

    # -- ICSK helpers --------------------------------------------------------------------
    @property
    def state_name(self) -> str:
        return TCP_STATE_NAMES.get(self.state, str(self.state))

    def _write_timer(self) -> None:
        self.sk_prot.write_timer(self)

    def _delack_timer(self) -> None:
        self.sk_prot.delack_timer(self)

    def _keepalive_timer(self) -> None:
        self.sk_prot.keepalive_timer(self)

    # -- the socket API (struct proto) are bound in netstack.tcp.tcp -------------------
    # Each takes the socket lock for the protocol call, as the kernel's does (the
    # module doc's "The socket lock"); a wait happens outside it, in the Trio socket.
    @kernel("include/net/sock.h", "sk_wait_event")
    def _locked(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` under the socket lock. A call that would block first runs
        what came while it held the lock and looks again, as ``sk_wait_event``
        releases the lock before it sleeps: what came may be what it waits for
        (a SYN-ACK for a connect, an ACK that frees send space), and its wake-up
        was before the Trio socket's wait.

        Kernel: include/net/sock.h, sk_wait_event().
        """
        taken = lock_sock(self)
        try:
            while True:
                try:
                    return fn(*args)
                except SockWouldBlock:
                    if not taken or not (self.sk_backlog or self.sk_tsq_flags):
                        raise
                    release_sock(self)
                    self.sk_lock_owned = True
        finally:
            if taken and self.sk_lock_owned:  # (a release_sock that raised gave it up)
                release_sock(self)

    def bind(self, addr: int, port: int) -> None:
        self._locked(self.af_ops.bind, self, addr, port)  # inet_bind(): lock_sock

    def connect(self, addr: int, port: int) -> None:
        self._locked(self.sk_prot.connect, self, addr, port)  # inet_stream_connect()

    def disconnect(self) -> None:
        self._locked(self.sk_prot.disconnect, self)  # tcp_disconnect's callers lock

    def listen(self, backlog: int) -> None:
        self._locked(self.sk_prot.listen, self, backlog)  # inet_listen()

    def accept(self) -> TcpSock:
        child: TcpSock = self._locked(self.sk_prot.accept, self)  # inet_csk_accept()
        return child

    @kernel("include/net/sock.h", "lock_sock", "net/core/sock.c", "release_sock")
    def sendmsg(
        self, data: bytes | bytearray | memoryview, dest: tuple[int, int] | None, flags: int
    ) -> int:
        """``tcp_sendmsg``: the protocol's call under the socket lock (lock_sock() and,
        with nothing to run at the end, release_sock() written out: keep in step).

        Kernel: include/net/sock.h, lock_sock(); net/core/sock.c, release_sock()."""
        clock = self.net.clock  # one instant for the call (cpu/clock.py, "Held time")
        held = clock.hold()
        owned = self.sk_lock_owned  # lock_sock()
        self.sk_lock_owned = True
        try:
            while True:
                try:
                    return self.sk_prot.sendmsg(self, data, flags, dest)
                except SockWouldBlock:
                    if owned or not (self.sk_backlog or self.sk_tsq_flags):
                        raise
                    release_sock(self)  # sk_wait_event(), as _locked: keep in step
                    self.sk_lock_owned = True
        finally:
            if not owned and self.sk_lock_owned:  # (a release_sock that raised gave it up)
                if self.sk_backlog or self.sk_tsq_flags:
                    release_sock(self)
                else:
                    self.sk_lock_owned = False  # release_sock(): nothing came meanwhile
            clock.release(held)

    def recvmsg(
        self, bufsize: int, flags: int
    ) -> tuple[bytes, tuple[int, int], int, list[tuple[int, int, bytes]]]:
        result = self.recvmsg_or_none(bufsize, flags)
        if result is None:
            raise SockWouldBlock(write=False)
        return result

    @kernel("include/net/sock.h", "lock_sock", "net/core/sock.c", "release_sock")
    def recvmsg_or_none(
        self, bufsize: int, flags: int
    ) -> tuple[bytes, tuple[int, int], int, list[tuple[int, int, bytes]]] | None:
        """``tcp_recvmsg`` under the socket lock (as :meth:`sendmsg`: keep in step);
        ``None`` where it would block (no exception per empty read:
        Sock.recvmsg_or_none). :meth:`recvmsg` raises instead.

        Kernel: include/net/sock.h, lock_sock(); net/core/sock.c, release_sock()."""
        clock = self.net.clock  # one instant for the call (sendmsg)
        held = clock.hold()
        owned = self.sk_lock_owned  # lock_sock()
        self.sk_lock_owned = True
        try:
            data = self.sk_prot.recvmsg(self, bufsize, flags)
            while data is None and not owned and (self.sk_backlog or self.sk_tsq_flags):
                release_sock(self)  # sk_wait_event(), as _locked: keep in step
                self.sk_lock_owned = True
                data = self.sk_prot.recvmsg(self, bufsize, flags)
        finally:
            if not owned and self.sk_lock_owned:  # (a release_sock that raised gave it up)
                if self.sk_backlog or self.sk_tsq_flags:
                    release_sock(self)
                else:
                    self.sk_lock_owned = False  # release_sock(): nothing came meanwhile
            clock.release(held)
        if data is None:
            return None
        daddr = self.inet_daddr
        if self.family != self.af_ops.family:  # an AF_INET6 socket talking IPv4
            daddr |= V4MAPPED_PREFIX
        return data, (daddr, self.inet_dport), 0, []

    def shutdown(self, how: int) -> None:
        self._locked(self.sk_prot.shutdown, self, how)  # inet_shutdown()

    def close(self) -> None:
        timeout = self.sk_lingertime if self.sock_flag_linger else -1
        self._locked(self.sk_prot.close, self, timeout)  # tcp_close()

    def getpeername(self) -> tuple[int, int]:
        if self.state in (TCP_CLOSE, TCP_SYN_SENT, TCP_LISTEN):
            from netstack.core.sock import sock_oserror

            raise sock_oserror(107)  # ENOTCONN
        return (self.user_addr(self.inet_daddr), self.inet_dport)

    def getsockname(self) -> tuple[int, int]:
        return (self.user_addr(self.inet_rcv_saddr), self.inet_num)

    def user_addr(self, addr: int) -> int:
        """An address as the socket's user sees it: an IPv4 address of an AF_INET6
        socket talking IPv4 (``ipv6_mapped`` af_ops) is ``::ffff:a.b.c.d``, as
        inet6_getname reports the kernel's ``sk_v6_daddr``/``sk_v6_rcv_saddr``
        (a helper, not a kernel function: timed mode charges nothing for it).
        """
        if self.family != self.af_ops.family and addr:
            return V4MAPPED_PREFIX | addr
        return addr

    def readable(self) -> bool:
        return self.sk_prot.readable(self)

    def writable(self) -> bool:
        return self.sk_prot.writable(self)

    def setsockopt(self, level: int, optname: int, value: int | bytes) -> None:
        # sockopt_lock_sock() of sock_setsockopt() / do_tcp_setsockopt()
        self._locked(self.sk_prot.setsockopt, self, level, optname, value)

    def getsockopt(self, level: int, optname: int) -> int | bytes:
        value: int | bytes = self._locked(self.sk_prot.getsockopt, self, level, optname)
        return value  # do_tcp_getsockopt() locks for TCP_INFO and the like

    def default_ttl(self) -> int:
        return self.tcp.default_ttl()

    def __repr__(self) -> str:
        return (
            f"<TcpSock {self.net.name} {self.state_name} "
            f"{self.inet_rcv_saddr:#x}:{self.inet_num} -> {self.inet_daddr:#x}:{self.inet_dport}>"
        )


class FastopenQueue:
    """``struct fastopen_queue``: a listener's pending Fast Open children.

    *qlen* counts children still in SYN_RECV (and requests that were reset,
    kept 60 s in *rskq_rst* as a defence against spoofed SYNs); *max_qlen* is
    ``TCP_FASTOPEN``'s value, 0 when Fast Open is off on the listener; *ctx*
    the listener's own keys (``TCP_FASTOPEN_KEY``), None for the Net's.
    """

    __slots__ = ("ctx", "max_qlen", "qlen", "rskq_rst")

    def __init__(self) -> None:
        self.max_qlen = 0
        self.qlen = 0
        self.rskq_rst: collections.deque[tuple[RequestSock, int]] = collections.deque()
        self.ctx: list[tuple[int, int]] | None = None


class RequestSock:
    """A connection request in SYN_RECV (kernel: ``struct tcp_request_sock``).

    It lives in the established hash (``TCP_NEW_SYN_RECV``) until the
    handshake's ACK creates the child, or its SYN-ACK retransmissions run out.
    """

    def __init__(self, listener: TcpSock) -> None:
        self.listener = listener
        self.state = TCP_NEW_SYN_RECV
        self.family = listener.family
        # tcp_rsk(req)->af_specific: the family of the SYN (IPv4 on a dual-stack listener)
        self.af_specific: InetConnectionSockAfOps = listener.af_ops
        self.loc_addr = 0
        self.rmt_addr = 0
        self.num = 0  # local port
        self.rmt_port = 0
        self.iif = 0
        self.rcv_isn = 0
        self.rcv_nxt = 0
        self.snt_isn = 0
        # µs of the first SYN-ACK; -1: none to measure from (the kernel's 0 — a
        # virtual clock starts at 0, so a SYN-ACK may well leave at 0 µs)
        self.snt_synack = -1
        self.ts_off = 0
        self.ts_recent = 0
        self.mss = 0
        self.tstamp_ok = False
        self.sack_ok = 0
        self.wscale_ok = False
        self.snd_wscale = 0
        self.rcv_wscale = 0
        self.rsk_rcv_wnd = 0
        self.rsk_window_clamp = 0
        self.num_retrans = 0
        self.num_timeout = 0
        self.acked = False
        self.ecn_ok = False
        self.cookie_ts = False
        self.last_oow_ack_time = 0
        self.txhash = 0
        self.tos = 0
        self.child: TcpSock | None = None
        self.timer: TimerList | None = None
        self.hashed = False
        self.adv_mss = 536  # the MSS our SYN-ACK offers
        self.ehash_key: tuple[int, int, int, int, int] | None = None
        self.tfo_listener = False  # a Fast Open child was created from it
        self.fastopen_cookie: Any = None  # the cookie the first SYN-ACK carries
        self.timeout = 0

    @property
    def state_name(self) -> str:
        """What ``ss`` shows: sock_diag reports a request as ``TCP_SYN_RECV``."""
        return "SYN-RECV"

    def __repr__(self) -> str:
        return f"<RequestSock {self.rmt_addr:#x}:{self.rmt_port} -> :{self.num}>"


@kernel("include/net/inet_timewait_sock.h")
class TimewaitSock:
    """A connection in TIME_WAIT (or FIN_WAIT2 after close) without its full socket.

    Kernel: include/net/inet_timewait_sock.h, struct inet_timewait_sock +
    struct tcp_timewait_sock.
    """

    def __init__(self, sk: TcpSock, state: int) -> None:
        self.net: Net = sk.net
        self.tw_prot: TcpProt = sk.sk_prot  # tw->tw_prot
        self.tcp = sk.tcp
        self.family = sk.family
        self.af_ops = sk.af_ops
        self.ipv6only = sk.ipv6only  # tw_ipv6only
        self.state = TCP_TIME_WAIT
        self.tw_substate = state
        self.rcv_saddr = sk.inet_rcv_saddr
        self.daddr = sk.inet_daddr
        self.num = sk.inet_num
        self.dport = sk.inet_dport
        self.bound_dev_if = sk.sk_bound_dev_if
        self.rcv_nxt = sk.rcv_nxt
        self.snd_nxt = sk.snd_nxt
        self.rcv_wnd = (sk.rcv_wnd - ((sk.rcv_nxt - sk.rcv_wup) & 0xFFFFFFFF)) if sk.rcv_wnd else 0
        self.rcv_wnd = max(self.rcv_wnd, 0)
        self.rcv_wscale = sk.rcv_wscale
        self.ts_recent = sk.ts_recent
        self.ts_recent_stamp = sk.ts_recent_stamp
        self.ts_offset = sk.tsoffset
        self.tstamp_ok = sk.tstamp_ok
        self.tos = sk.tos
        self.mark = sk.sk_mark
        self.priority = sk.sk_priority
        self.ehash_key = sk.ehash_key
        self.bind_port = sk.bind_port
        self.last_oow_ack_time = 0
        self.reuse = sk.sk_reuse
        self.reuseport = sk.sk_reuseport
        self.tw_txhash = sk.sk_txhash  # the connection's flow label lives on
        self.tw_flowlabel = sk.flow_label
        self.timer: TimerList = sk.net.timers.timer(self._expire, "tw_timer")
        self.killed = False

    def _expire(self) -> None:
        self.tw_prot.tw_timer(self)

    @property
    def state_name(self) -> str:
        return "TIME-WAIT" if self.tw_substate == TCP_TIME_WAIT else "FIN-WAIT-2"

    def __repr__(self) -> str:
        return f"<TimewaitSock {self.rcv_saddr:#x}:{self.num} -> {self.daddr:#x}:{self.dport}>"


# A socket of any kind the established hash holds and a bare reply may answer for
# (kernel: the ``struct sock_common`` of a full, a request or a timewait sock).
SockCommon: TypeAlias = "TcpSock | RequestSock | TimewaitSock"


# -- the socket lock (the module doc's "The socket lock") ------------------------------------


@kernel("include/net/sock.h", "lock_sock", "net/core/sock.c", "lock_sock_nested")
def lock_sock(sk: TcpSock) -> bool:
    """Own *sk* for a socket call; False when the caller owns it already (a call
    made inside another: the outer one releases it). :class:`TcpSock`'s
    ``sendmsg``/``recvmsg`` have it written out (keep them in step).

    Kernel: include/net/sock.h, lock_sock(); net/core/sock.c, lock_sock_nested().
    """
    if sk.sk_lock_owned:
        return False
    sk.sk_lock_owned = True
    return True


@kernel(
    "net/core/sock.c",
    "release_sock",
    "__release_sock",
    "include/net/sock.h",
    "sk_backlog_rcv",
    "sock_release_ownership",
)
def release_sock(sk: TcpSock) -> None:
    """Run what came while *sk* was owned, then give it up: the backlog, each
    segment through its family's ``do_rcv`` (``sk_backlog_rcv``), until no more
    comes (what it transmits may bring more: its polls run in this task, as
    ``__release_sock`` runs the batches with bottom halves enabled), then the
    deferred work (``sk_prot->release_cb``: :func:`tcp_release_cb`) with bottom
    halves disabled, and the socket is given up before the polls that work
    raised run (``spin_unlock_bh(slock)`` after ``sock_release_ownership``): the
    segments they bring to *sk* are received at once, not left on a backlog
    nobody runs. ``sk_backlog.len`` is cleared only after the last batch, as the
    kernel's ``__release_sock`` does, so a backlog that keeps refilling meets its
    limit. If a segment's processing raises, the ones not yet run go back on the
    backlog (the next call's ``release_sock`` runs them) and the socket is given
    up all the same. :class:`TcpSock`'s ``sendmsg``/``recvmsg`` call it only
    when there is something to run, and otherwise clear the flag themselves
    (keep in step).

    Kernel: net/core/sock.c, release_sock() / __release_sock(); include/net/sock.h,
    sk_backlog_rcv() / sock_release_ownership().
    """
    backlog = sk.sk_backlog
    if backlog:
        tcp = sk.tcp
        while backlog:
            sk.sk_backlog = []  # sk_backlog.head = sk_backlog.tail = NULL
            entries = iter(backlog)
            try:
                for do_rcv, skb in entries:
                    do_rcv(tcp, sk, skb)
            except BaseException:
                sk.sk_backlog = [*entries, *sk.sk_backlog]  # what was not run waits
                sk.sk_lock_owned = False
                raise
            backlog = sk.sk_backlog
        sk.sk_backlog_len = 0
    if sk.sk_tsq_flags:
        bh = BH
        if bh.state == BH_ENABLED:  # process context (a socket call)
            bh.state = BH_DISABLED  # spin_lock_bh(&sk->sk_lock.slock)
            try:
                tcp_release_cb(sk)
            except BaseException:
                sk.sk_lock_owned = False
                bh.state = BH_ENABLED
                wakeup_softirqd()  # the list must not outlive the section (napi)
                raise
            sk.sk_lock_owned = False  # sock_release_ownership()
            bh.state = BH_ENABLED  # spin_unlock_bh(): the polls release_cb raised
            if bh.poll_list:
                do_softirq(sk.net)
            return
        try:  # inside a section already: its end runs the polls
            tcp_release_cb(sk)
        finally:
            sk.sk_lock_owned = False
        return
    sk.sk_lock_owned = False


@kernel("net/ipv4/tcp_output.c", "tcp_release_cb")
def tcp_release_cb(sk: TcpSock) -> None:
    """The work a softirq deferred while *sk* was owned (``sk_tsq_flags``): here the
    PMTU update of an ICMP error (``TCP_MTU_REDUCED_DEFERRED``).

    Kernel: net/ipv4/tcp_output.c, tcp_release_cb().
    """
    flags = sk.sk_tsq_flags
    sk.sk_tsq_flags = 0
    if flags & TCPF_MTU_REDUCED_DEFERRED:
        sk.af_ops.mtu_reduced(sk)


@kernel(
    "net/ipv4/tcp_ipv4.c",
    "tcp_add_backlog",
    "include/net/sock.h",
    "sk_add_backlog",
    "sk_rcvqueues_full",
    "__sk_add_backlog",
    "sk_drops_add",
)
def tcp_add_backlog(sk: TcpSock, skb: SkBuff, do_rcv: BacklogRcv) -> None:
    """Queue a segment for an owned socket (``tcp_v4_rcv``/``tcp_v6_rcv`` when
    ``sock_owned_by_user``); its owner runs it at :func:`release_sock`. Beyond
    twice ``sk_rcvbuf``, half ``sk_sndbuf`` and 64 KB of backlog and receive
    queue the segment is dropped (``TCPBacklogDrop``, and ``sk_drops`` as the
    caller's ``discard_and_relse`` counts it). The route is dropped, as
    the kernel's does before the segment leaves RCU. Not done: the coalescing
    of a segment with the backlog's tail (6.x), which needs the checksum
    verified and the headers compared; each segment is queued as it came.

    Kernel: net/ipv4/tcp_ipv4.c, tcp_add_backlog(); include/net/sock.h,
    sk_add_backlog() / sk_rcvqueues_full() / __sk_add_backlog() / sk_drops_add().
    """
    skb_dst_drop(skb)
    limit = (sk.sk_rcvbuf << 1) + (sk.sk_sndbuf >> 1) + 64 * 1024
    if sk.sk_backlog_len + sk.sk_rmem_alloc > limit:  # sk_rcvqueues_full()
        sk.ext.TCPBacklogDrop += 1
        sk.sk_drops += max(skb.gso_segs, 1)  # tcp_v4_rcv's discard_and_relse: sk_drops_add()
        kfree_skb(skb, DropReason.SOCKET_BACKLOG)
        return
    sk.sk_backlog.append((do_rcv, skb))
    sk.sk_backlog_len += skb.truesize
