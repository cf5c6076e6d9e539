"""The receiver's RTT estimate without timestamps (``tcp_rcv_rtt_measure``) dates
a window by the segment's ``tcp_mstamp``, not by a clock read of its own.

Linux 6.x, net/ipv4/tcp_input.c: ``tcp_rcv_rtt_measure(tp)`` takes
``tcp_stamp_us_delta(tp->tcp_mstamp, tp->rcv_rtt_est.time)`` and stores
``tp->rcv_rtt_est.time = tp->tcp_mstamp``: the stamp ``tcp_mstamp_refresh()``
took at the top of ``tcp_rcv_established`` / ``tcp_rcv_state_process`` for the
segment. Before, netstack read ``tcp_clock_us()`` again there, a few
microseconds later on a running clock (and one Python call per data segment).
"""

from __future__ import annotations

from helpers import connected_tcp

from netstack.host import Lab
from netstack.tcp import TcpSock
from netstack.tcp.input import tcp_rcv_rtt_measure
from netstack.testing import builders

PORT = 6021


async def test_rcv_rtt_measure_uses_the_segment_stamp(lab: Lab, autojump_clock: object) -> None:
    a, b = builders.pair(lab)
    _, conn = await connected_tcp(a, b, PORT)
    sk = conn.sock
    assert isinstance(sk, TcpSock)
    stamp = sk.tcp.tcp_clock_us() + 1_000_000  # not what the clock reads now
    sk.tcp_mstamp = stamp
    sk.rcv_rtt_est_time = 0
    sk.rcv_rtt_est_rtt_us = 0
    tcp_rcv_rtt_measure(sk)  # a new measure starts at the segment's stamp
    assert sk.rcv_rtt_est_time == stamp
    assert sk.rcv_rtt_est_seq == (sk.rcv_nxt + sk.rcv_wnd) & 0xFFFFFFFF
    # a window later: the sample is the distance between the two stamps
    sk.rcv_nxt = sk.rcv_rtt_est_seq
    sk.tcp_mstamp = stamp + 5_000
    tcp_rcv_rtt_measure(sk)
    assert sk.rcv_rtt_est_rtt_us == 5_000 << 3  # the first sample, scaled by 8
    assert sk.rcv_rtt_est_time == stamp + 5_000
