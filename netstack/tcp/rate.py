"""Delivery rate sampling: how fast the path delivered data, per ACK.

Theory of operation: every skb remembers, when it is sent
(:func:`tcp_rate_skb_sent`), the socket's ``delivered`` count, when that
count last grew (``delivered_mstamp``), when the latest (S)ACKed skb had
been sent (``first_tx_mstamp``) and whether the sender was
application-limited. When an ACK (S)ACKs skbs, the most recently sent of
them (``tcp_rate_skb_delivered`` in tcp_input.c) gives the sample's start;
:func:`tcp_rate_gen` then takes

* the packets delivered since that skb was sent (``delivered`` now minus
  ``tx.delivered``), over
* the longer of the send phase (that skb's send time minus the send time
  of the (S)ACKed skb before it) and the ACK phase (now minus
  ``tx.delivered_mstamp``) — ACK compression can make either too short —

and keeps it as the socket's rate (``rate_delivered``/``rate_interval_us``)
unless the interval is shorter than min_rtt (a spurious retransmission's
early ACK), or the sample was application-limited and slower than the one
kept. A sender is application-limited (:func:`tcp_rate_check_app_limited`,
at each ``sendmsg``) when it has less than an MSS unsent, nothing in the
qdisc/NIC, room in the cwnd and no lost segment awaiting retransmission;
the mark (``app_limited``) ends when the packets then in flight are
delivered. ``tcp_info`` reports the kept rate in bytes per second
(:func:`tcp_compute_delivery_rate`) and its app-limited bit.

Netstack's clock starts at 0, so "no timing information" is -1 in the rate
sample where the kernel uses 0.

Kernel: net/ipv4/tcp_rate.c, net/ipv4/tcp.c (tcp_compute_delivery_rate).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from netstack.core.skbuff import SKB_TRUESIZE
from netstack.sites import kernel
from netstack.tcp.helpers import tcp_min_rtt, tcp_packets_in_flight

if TYPE_CHECKING:
    from netstack.tcp.sock import TcpSkbCb, TcpSock

__all__ = [
    "RateSample",
    "tcp_compute_delivery_rate",
    "tcp_rate_check_app_limited",
    "tcp_rate_gen",
    "tcp_rate_skb_sent",
]

M32: Final = 0xFFFFFFFF


def _after(a: int, b: int) -> bool:
    return 0 < ((a - b) & M32) < 0x80000000


@kernel("net/ipv4/tcp_rate.c", "tcp_rate_skb_sent")
def tcp_rate_skb_sent(sk: TcpSock, tcb: TcpSkbCb) -> None:
    """Snapshot the delivery state into a skb being (re)sent; the first send
    after everything was delivered starts a new sampling phase.

    Kernel: net/ipv4/tcp_rate.c, tcp_rate_skb_sent().
    """
    if not sk.packets_out:
        sk.first_tx_mstamp = tcb.mstamp
        sk.delivered_mstamp = tcb.mstamp
    tcb.tx_first_tx_mstamp = sk.first_tx_mstamp
    tcb.tx_delivered_mstamp = sk.delivered_mstamp
    tcb.tx_delivered = sk.delivered
    tcb.tx_is_app_limited = bool(sk.app_limited)


class RateSample:
    """The sample one ACK makes (kernel: ``struct rate_sample``, the fields tcp_info needs)."""

    __slots__ = (
        "delivered",
        "interval_us",
        "is_app_limited",
        "is_retrans",
        "prior_delivered",
        "prior_mstamp",
    )

    def __init__(self) -> None:
        self.prior_delivered = 0  # tx.delivered of the chosen skb
        self.prior_mstamp = -1  # tx.delivered_mstamp of the chosen skb; -1: none
        self.interval_us = -1
        self.delivered = -1
        self.is_app_limited = False
        self.is_retrans = False


@kernel("net/ipv4/tcp_rate.c", "tcp_rate_gen")
def tcp_rate_gen(sk: TcpSock, delivered: int, is_sack_reneg: bool, rs: RateSample) -> None:
    """Finish the ACK's rate sample and keep it if it is the one to report.

    Kernel: net/ipv4/tcp_rate.c, tcp_rate_gen().
    """
    if sk.app_limited and _after(sk.delivered, sk.app_limited):
        sk.app_limited = 0  # the bubble is acked and gone
    if delivered:
        sk.delivered_mstamp = sk.tcp_mstamp
    # no timing: no skb was (S)ACKed, or the one chosen was sent before the first
    # delivery was stamped (the SYN: delivered_mstamp still 0, "none" to the kernel)
    if rs.prior_mstamp <= 0 or is_sack_reneg:
        rs.delivered = -1
        rs.interval_us = -1
        return
    rs.delivered = (sk.delivered - rs.prior_delivered) & M32
    # send and ACK phases of the window: the longer is the safe interval
    snd_us = rs.interval_us
    ack_us = sk.tcp_mstamp - rs.prior_mstamp
    rs.interval_us = max(snd_us, ack_us)
    if rs.interval_us < tcp_min_rtt(sk):
        rs.interval_us = -1  # e.g. a spurious retransmission's early ACK
        return
    # keep the last non-app-limited sample or the highest app-limited one
    if (
        not rs.is_app_limited
        or rs.delivered * sk.rate_interval_us >= sk.rate_delivered * rs.interval_us
    ):
        sk.rate_delivered = rs.delivered
        sk.rate_interval_us = rs.interval_us
        sk.rate_app_limited = rs.is_app_limited


@kernel("net/ipv4/tcp_rate.c", "tcp_rate_check_app_limited")
def tcp_rate_check_app_limited(sk: TcpSock) -> None:
    """Mark the socket application-limited when a gap opens between sends.

    Kernel: net/ipv4/tcp_rate.c, tcp_rate_check_app_limited().
    """
    if (
        ((sk.write_seq - sk.snd_nxt) & M32) < sk.mss_cache  # less than an MSS unsent
        and sk.sk_wmem_alloc < SKB_TRUESIZE(1)  # nothing in the qdisc or NIC
        and tcp_packets_in_flight(sk) < sk.snd_cwnd  # room in the cwnd
        and sk.lost_out <= sk.retrans_out  # every loss retransmitted
    ):
        sk.app_limited = ((sk.delivered + tcp_packets_in_flight(sk)) & M32) or 1


@kernel("net/ipv4/tcp.c", "tcp_compute_delivery_rate")
def tcp_compute_delivery_rate(sk: TcpSock) -> int:
    """The kept rate sample in bytes per second (0: none yet).

    Kernel: net/ipv4/tcp.c, tcp_compute_delivery_rate().
    """
    rate = sk.rate_delivered
    intv = sk.rate_interval_us
    if rate and intv:
        return rate * sk.mss_cache * 1_000_000 // intv
    return 0
