"""IPIP and gretap end to end; PMTU through a tunnel; loops and nesting.

Reuses the two-site topology of test_gre_topology (s1 ─ gw1 ═ r ═ gw2 ─ s2).
"""

from __future__ import annotations

import dpkt
import pytest
import trio
import trio.testing
from helpers import build_sites

import netstack


def outer_packets(frames: list[tuple[float, bytes, bool]], proto: int) -> list[dpkt.ip.IP]:
    out = []
    for _, frame, outgoing in frames:
        eth = dpkt.ethernet.Ethernet(frame)
        if outgoing and isinstance(eth.data, dpkt.ip.IP) and eth.data.p == proto:
            out.append(eth.data)
    return out


async def test_ipip_between_two_sites(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = build_sites(lab, "")
    for gw, local, remote, net_ in (
        (h["gw1"], "192.0.2.1", "198.51.100.2", "10.2.0.0/24"),
        (h["gw2"], "198.51.100.2", "192.0.2.1", "10.1.0.0/24"),
    ):
        gw.ip("link del gre1")
        gw.ip(f"tunnel add ipip1 mode ipip remote {remote} local {local} ttl 32")
        gw.ip("link set ipip1 up")
        gw.ip(f"route add {net_} dev ipip1")
    cap = h["gw1"].capture("eth1")
    assert (await h["s1"].ping("10.2.0.1", count=2, interval=0.1)).received == 2
    pkts = outer_packets(cap.frames, 4)
    assert len(pkts) == 2
    for ip in pkts:
        assert ip.ttl == 32 and ip.df and len(ip) == 20 + 84
        inner = ip.data
        assert isinstance(inner, dpkt.ip.IP) and inner.dst == bytes([10, 2, 0, 1])
    assert h["gw1"].dev("ipip1").mtu == 1480
    assert h["gw2"].dev("ipip1").statistics().rx_packets == 2


async def test_ipip_with_no_tunnel_answers_port_unreachable(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = lab.add_host("h")
    port = lab.add_port("h:eth0")
    h.ip("addr add 192.0.2.1/24 dev eth0")
    h.ip("link add ipip1 type ipip remote 192.0.2.2 local 192.0.2.1")
    h.ip("link set ipip1 up")
    h.ip("neigh add 192.0.2.9 lladdr 02:00:00:00:00:09 dev eth0")
    inner = dpkt.ip.IP(src=bytes([10, 0, 0, 1]), dst=bytes([10, 0, 0, 2]), p=17, data=b"12345678")
    outer = dpkt.ip.IP(src=bytes([192, 0, 2, 9]), dst=bytes([192, 0, 2, 1]), p=4, data=inner)
    eth = dpkt.ethernet.Ethernet(dst=h.dev("eth0").dev_addr, src=bytes(6), data=outer)
    await port.send(bytes(eth))
    await trio.sleep(0.01)
    (reply,) = [dpkt.ethernet.Ethernet(f) for f in port.drain()]
    assert (reply.data.data.type, reply.data.data.code) == (3, 3)
    assert h.drops() == {"IP_TUNNEL_NO_MATCH": 1}


async def test_gretap_carries_arp_and_ipv4(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, b = lab.add_host("a"), lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0")
    a.ip("addr add 192.0.2.1/24 dev eth0")
    b.ip("addr add 192.0.2.2/24 dev eth0")
    for h, local, remote, addr in ((a, "1", "2", "10.7.0.1/24"), (b, "2", "1", "10.7.0.2/24")):
        h.ip(f"link add gt1 type gretap remote 192.0.2.{remote} local 192.0.2.{local} key 3")
        h.ip("link set gt1 up")
        h.ip(f"addr add {addr} dev gt1")
    cap = a.capture("eth0")
    assert (await a.ping("10.7.0.2", count=1)).received == 1
    pkts = outer_packets(cap.frames, 47)
    assert len(pkts) == 2  # the ARP request and the echo request, each in its Ethernet frame
    kinds = []
    for ip in pkts:
        g = ip.data
        assert g.p == 0x6558 and g.key == 3
        inner_eth = dpkt.ethernet.Ethernet(bytes(g.data))
        assert inner_eth.src == a.dev("gt1").dev_addr
        kinds.append(inner_eth.type)
    assert kinds == [0x0806, 0x0800]
    assert a.dev("gt1").mtu == 1500 - 24 - 4 - 14
    entry = a.ip("neigh show dev gt1")
    assert entry.startswith(
        "10.7.0.2 lladdr " + ":".join(f"{x:02x}" for x in b.dev("gt1").dev_addr)
    )


async def test_pmtu_a_df_packet_too_big_for_the_tunnel(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """The underlay shrinks after the tunnel was sized: tnl_update_pmtu answers frag-needed
    with the tunnel's path MTU, the gateway's inner route learns it, and so does the sender's."""
    h = build_sites(lab, "")
    gw1, s1 = h["gw1"], h["s1"]
    assert gw1.dev("gre1").mtu == 1476
    gw1.ip("link set eth1 mtu 1400")  # the tunnel keeps 1476: it was sized before
    out: list[str] = []
    result = await s1.ping("10.2.0.1", count=1, size=1476 - 28, output=out)
    assert result.received == 0
    assert [e.error for e in result.errors] == ["Frag needed and DF set (mtu = 1376)"]
    assert result.errors[0].source == "10.1.0.254"
    assert gw1.dev("gre1").statistics().tx_errors == 1
    # the sender's route to s2 learnt 1376 for ten minutes
    assert "mtu 1376" in s1.ip("route get 10.2.0.1")
    # and its next ping of that size is refused locally, smaller ones go through
    ok = await s1.ping("10.2.0.1", count=1, size=1376 - 28)
    assert ok.received == 1


async def test_a_tunnel_routed_over_itself_counts_a_collision(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a = lab.add_host("a")
    a.ip("link add gre1 type gre remote 10.9.0.2")
    a.ip("link set gre1 up")
    a.ip("addr add 10.9.0.1/24 dev gre1")  # the remote is reached through the tunnel itself
    s = a.socket()
    s.sendto_nowait(b"x", ("10.9.0.7", 9))
    st = a.dev("gre1").statistics()
    assert st.collisions == 1 and st.tx_errors == 1
    lines = a.ip("-s tunnel show").splitlines()
    assert lines[-2] == "TX: Packets    Bytes        Errors DeadLoop NoRoute  NoBufs"
    assert lines[-1].split() == ["0", "0", "1", "1", "0", "0"]


@pytest.mark.parametrize("lltx", [True, False])
async def test_nested_tunnels_looping_are_stopped_by_the_recursion_limit(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, lltx: bool
) -> None:
    """gre1's remote is routed via gre2 and gre2's via gre1: the core's recursion guard
    (LLTX: the per-CPU counter) or the dead-loop check (xmit_lock_owner) ends it."""
    patches = netstack.Patches() if lltx else netstack.Patches.before("gre_lltx")
    a = lab.add_host("a", patches=patches)
    a.ip("link add gre1 type gre remote 10.20.0.1 key 1")
    a.ip("link add gre2 type gre remote 10.10.0.1 key 2")
    for dev, addr in (("gre1", "10.10.0.2/24"), ("gre2", "10.20.0.2/24")):
        a.ip(f"link set {dev} up")
        a.ip(f"addr add {addr} dev {dev}")
    s = a.socket()
    s.sendto_nowait(b"x", ("10.10.0.7", 9))
    assert a.drops() == {"XMIT_RECURSION": 1}
    # dropped where the loop was caught; the level above saw -ENETDOWN from ip_local_out
    assert sum(a.dev(d).statistics().tx_dropped for d in ("gre1", "gre2")) == 2
    # with LLTX only the per-CPU counter stops it: 9 nested transmits got through first
    sent = sum(a.dev(d).statistics().tx_packets for d in ("gre1", "gre2"))
    assert sent == (8 if lltx else 1)


async def test_pmtu_learnt_from_the_underlay_reaches_the_inner_sender(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """r's next hop has a smaller MTU: r answers gw1's outer packet with frag-needed,
    ipgre_err teaches gw1's outer route, and gw1's tunnel then answers s1."""
    h = build_sites(lab, "")
    h["r"].ip("link set eth1 mtu 1400")
    h["gw2"].ip("link set eth1 mtu 1400")
    s1 = h["s1"]
    first = await s1.ping("10.2.0.1", count=1, size=1448)  # 1476 bytes: fits gre1, not r
    assert first.received == 0 and not first.errors  # lost at r; r told gw1, not s1
    assert "mtu 1400" in h["gw1"].ip("route get 198.51.100.2")
    second = await s1.ping("10.2.0.1", count=1, size=1448)
    assert [e.error for e in second.errors] == ["Frag needed and DF set (mtu = 1376)"]
    assert "mtu 1376" in s1.ip("route get 10.2.0.1")
    assert (await s1.ping("10.2.0.1", count=1, size=1376 - 28)).received == 1


async def test_icmp_errors_about_outer_packets_back_off_the_tunnel(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """r loses its route to gw2: its net-unreachable reaches ipgre_err, and for the next
    30 s the tunnel reports dst_link_failure (host unreachable) to inner senders."""
    h = build_sites(lab, "")
    assert (await h["s1"].ping("10.2.0.1", count=1)).received == 1
    h["r"].ip("link set eth1 down")
    lost = await h["s1"].ping("10.2.0.1", count=1)
    assert lost.received == 0 and not lost.errors
    await trio.sleep(0.1)
    t = h["gw1"].dev("gre1").priv
    assert t.err_count == 1
    told = await h["s1"].ping("10.2.0.1", count=1)
    assert [e.error for e in told.errors] == ["Destination Host Unreachable"]
    assert told.errors[0].source == "10.1.0.254"
    # the packet itself still went out, and r complained again
    await trio.sleep(0.1)
    assert t.err_count == 1


async def test_replayed_ipip_is_decapsulated_and_delivered(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = lab.add_host("h")
    port = lab.add_port("h:eth0")
    h.ip("addr add 192.0.2.1/24 dev eth0")
    h.ip("tunnel add ipip1 mode ipip remote 192.0.2.2 local 192.0.2.1")
    h.ip("link set ipip1 up")
    h.ip("addr add 10.0.0.1/30 dev ipip1")
    sock = h.socket()
    await sock.bind(("0.0.0.0", 5000))
    udp = dpkt.udp.UDP(sport=4000, dport=5000, ulen=8 + 6, data=b"in-ip!")
    inner = dpkt.ip.IP(src=bytes([10, 0, 0, 2]), dst=bytes([10, 0, 0, 1]), p=17, data=udp)
    outer = dpkt.ip.IP(src=bytes([192, 0, 2, 2]), dst=bytes([192, 0, 2, 1]), p=4, data=inner)
    eth = dpkt.ethernet.Ethernet(dst=h.dev("eth0").dev_addr, src=bytes(6), data=outer)
    await port.send(bytes(eth))
    with trio.fail_after(1):
        data, peer = await sock.recvfrom(100)
    assert (data, peer) == (b"in-ip!", ("10.0.0.2", 4000))
    st = h.dev("ipip1").statistics()
    assert st.rx_packets == 1 and st.rx_bytes == 20 + 14
