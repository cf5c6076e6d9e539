"""A router forwarding a sender's GSO skbs onto a smaller MTU checks each
skb's *segments* against it (``skb_gso_validate_network_len`` in
``ip_exceeds_mtu`` / ``ip6_pkt_too_big``): too big, and the sender gets a
Fragmentation Needed / Packet Too Big and lowers its MSS; nothing longer than
the MTU ever crosses the small link (the router segments in software, so
its capture shows each segment).

    a ── veth ── r (eth1 mtu 1400) ── veth ── b
"""

from __future__ import annotations

import dpkt
import pytest
import trio
from helpers import stream_transfer

from netstack.core.sock import AF_INET, AF_INET6
from netstack.host import Lab
from netstack.tcp import TcpSock

PORT = 5601
MTU = 1400


@pytest.mark.parametrize("family", [AF_INET, AF_INET6])
async def test_forwarded_gso_skbs_are_checked_per_segment(
    lab: Lab, autojump_clock: object, family: int
) -> None:
    a, r, b = lab.add_host("a"), lab.add_host("r"), lab.add_host("b")
    lab.add_link("a:eth0", "r:eth0")
    lab.add_link("r:eth1", "b:eth0")
    if family == AF_INET6:
        a.ip("-6 addr add 2001:db8:1::1/64 dev eth0 nodad")
        r.ip("-6 addr add 2001:db8:1::fe/64 dev eth0 nodad")
        r.ip("-6 addr add 2001:db8:2::fe/64 dev eth1 nodad")
        b.ip("-6 addr add 2001:db8:2::2/64 dev eth0 nodad")
        a.ip("-6 route add default via 2001:db8:1::fe")
        b.ip("-6 route add default via 2001:db8:2::fe")
        r.sysctl("net.ipv6.conf.all.forwarding=1")
        dst = "2001:db8:2::2"
    else:
        a.ip("addr add 192.0.2.1/24 dev eth0")
        r.ip("addr add 192.0.2.254/24 dev eth0")
        r.ip("addr add 198.51.100.254/24 dev eth1")
        b.ip("addr add 198.51.100.2/24 dev eth0")
        a.ip("route add default via 192.0.2.254")
        b.ip("route add default via 198.51.100.254")
        r.sysctl("net.ipv4.ip_forward=1")
        dst = "198.51.100.2"
    r.ip(f"link set eth1 mtu {MTU}")
    r.ethtool("-K eth1 tso off gso off")  # cut before the tap: it sees what the wire gets
    await trio.sleep(2)
    cap = r.capture("eth1")
    payload = bytes(range(256)) * 1024
    # a's first skbs are GSO skbs of 1440- (IPv6: 1428-) byte segments
    got, c = await stream_transfer(a, b, family, dst, PORT, payload)
    sk = c.sock
    assert isinstance(sk, TcpSock)
    assert got == payload
    cap.stop()
    ips = [dpkt.ethernet.Ethernet(f).data for _, f, out in cap.frames if out]
    assert ips and max(len(bytes(ip)) for ip in ips) <= MTU
    # one per GSO skb r refused: a's first two; the first's error comes back inside
    # the send (at its local_bh_enable) while tcp_sendmsg owns the socket, and
    # tcp_v4_err / tcp_v6_err defer the MTU update to tcp_release_cb
    if family == AF_INET6:
        assert r.nstat()["Icmp6OutPktTooBigs"] == r.nstat()["Ip6FragFails"] == 2
        assert sk.mss_cache == MTU - 60 - 12
    else:
        assert r.nstat()["IcmpOutDestUnreachs"] == r.nstat()["IpFragFails"] == 2
        assert sk.mss_cache == MTU - 40 - 12


@pytest.mark.parametrize("family", [AF_INET, AF_INET6])
async def test_fragmentation_needed_retransmits_at_once_and_keeps_cwnd(
    lab: Lab, autojump_clock: object, family: int
) -> None:
    """tcp_v4_mtu_reduced / tcp_v6_mtu_reduced → tcp_simple_retransmit: the
    segments too big for the new MSS are marked lost and resent at once, in
    CA_Loss without a cwnd cut; nothing waits for the RTO. The GSO skbs keep
    their segment counts until the retransmission re-cuts them, so lost_out
    and packets_out agree (the part that cwnd held back goes out on the next
    ACKs, not after an RTO with cwnd 1)."""
    a, r, b = lab.add_host("a"), lab.add_host("r"), lab.add_host("b")
    lab.add_link("a:eth0", "r:eth0", kind="nic", delay=0.0005)
    lab.add_link("r:eth1", "b:eth0", kind="nic", delay=0.0005)
    if family == AF_INET6:
        a.ip("-6 addr add 2001:db8:1::1/64 dev eth0 nodad")
        r.ip("-6 addr add 2001:db8:1::fe/64 dev eth0 nodad")
        r.ip("-6 addr add 2001:db8:2::fe/64 dev eth1 nodad")
        b.ip("-6 addr add 2001:db8:2::2/64 dev eth0 nodad")
        a.ip("-6 route add default via 2001:db8:1::fe")
        b.ip("-6 route add default via 2001:db8:2::fe")
        r.sysctl("net.ipv6.conf.all.forwarding=1")
        dst = "2001:db8:2::2"
    else:
        a.ip("addr add 192.0.2.1/24 dev eth0")
        r.ip("addr add 192.0.2.254/24 dev eth0")
        r.ip("addr add 198.51.100.254/24 dev eth1")
        b.ip("addr add 198.51.100.2/24 dev eth0")
        a.ip("route add default via 192.0.2.254")
        b.ip("route add default via 198.51.100.254")
        r.sysctl("net.ipv4.ip_forward=1")
        dst = "198.51.100.2"
    r.ip(f"link set eth1 mtu {MTU}")
    await trio.sleep(2)
    payload = bytes(range(256)) * 1024
    start = trio.current_time()
    got, c = await stream_transfer(a, b, family, dst, PORT, payload)
    elapsed = trio.current_time() - start
    sk = c.sock
    assert isinstance(sk, TcpSock)
    assert got == payload
    ext = a.nstat()
    # the initial window of 10 segments was too big: all resent (as 12 smaller
    # ones), in slow start after loss, never by the retransmit timer
    assert ext.get("TcpExtTCPTimeouts", 0) == 0 and ext.get("TcpExtTCPLossFailures", 0) == 0
    assert ext["TcpExtTCPSlowStartRetrans"] == ext["TcpRetransSegs"] == 12
    # no cwnd cut: slow start went on until HyStart ended it (ssthresh 40)
    assert sk.snd_ssthresh == ext["TcpExtTCPHystartTrainCwnd"] == 40 < sk.snd_cwnd
    assert elapsed < 0.02  # 18 ms of 2 ms RTTs, not an RTO of 200 ms
