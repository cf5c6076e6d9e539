"""A switched LAN: hosts on a bridge learn, flood, forward, age out — counted and captured.

h1, h2, h3 (10.0.0.1–3, IPv4 only) each on a port of switch s1 (a host
running br0). Every exchange is checked by the frames each switch port's
capture saw, the bridge's per-port counters and the FDB as ``bridge fdb
show`` prints it.
"""

from __future__ import annotations

import dpkt
import trio
import trio.testing
from helpers import IPV4_ONLY

import netstack
from netstack.bridge.br_private import NetBridge

PORTS = ("s1-eth1", "s1-eth2", "s1-eth3")


def lan(lab: netstack.Lab, *, ageing_time: float | None = None) -> tuple[netstack.Host, ...]:
    s1 = lab.add_switch("s1", sysctls=IPV4_ONLY, ageing_time=ageing_time)
    hosts = [lab.add_host(f"h{i}", sysctls=IPV4_ONLY) for i in (1, 2, 3)]
    for i, h in enumerate(hosts, 1):
        lab.add_link(f"h{i}:eth0", "s1")
        h.ip(f"addr add 10.0.0.{i}/24 dev eth0")
    return (s1, *hosts)


def bridge_of(host: netstack.Host) -> NetBridge:
    br: NetBridge = host.dev("br0").priv
    return br


def learned(host: netstack.Host) -> list[str]:
    """The dynamic (learnt) lines of ``bridge fdb show``."""
    return [
        line
        for line in host.bridge("fdb show br br0").splitlines()
        if not line.endswith(("permanent", "static"))
    ]


async def test_three_hosts_ping_each_other(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    s1, h1, h2, h3 = lan(lab)
    caps = {p: s1.capture(p) for p in PORTS}
    for src, dst in ((h1, "10.0.0.2"), (h1, "10.0.0.3"), (h2, "10.0.0.3")):
        result = await src.ping(dst, count=2, interval=0.1)
        assert result.received == 2
    mac = {h.name: h.dev("eth0").dev_addr.hex(":") for h in (h1, h2, h3)}
    assert learned(s1) == [
        f"{mac['h1']} dev s1-eth1 master br0 ",
        f"{mac['h2']} dev s1-eth2 master br0 ",
        f"{mac['h3']} dev s1-eth3 master br0 ",
    ]
    st = bridge_of(s1).statistics()
    # three ARP requests flooded to the two other ports; everything else switched
    assert {p: st.ports[p].flood_broadcast for p in PORTS} == {
        "s1-eth1": 1,  # h2's request for 10.0.0.3
        "s1-eth2": 2,  # h1's two requests
        "s1-eth3": 3,  # all three
    }
    assert sum(st.ports[p].flood_unicast for p in PORTS) == 0
    assert {p: st.ports[p].forward for p in PORTS} == {
        "s1-eth1": 6,  # the 2 ARP replies and 4 echo replies h1 got
        "s1-eth2": 5,  # h1's 2 echo requests, h3's ARP reply and 2 echo replies
        "s1-eth3": 4,  # the 4 echo requests (the ARP requests were flooded)
    }
    # each port's capture: what it received from its host and what the bridge sent it
    counts = {p: len(c.frames) for p, c in caps.items()}
    # rx from its host 6 + tx to it 7 (floods + switched), on every port
    assert counts == {"s1-eth1": 13, "s1-eth2": 13, "s1-eth3": 13}
    assert st.fdb_learned == 3


async def test_unknown_unicast_floods_then_is_switched(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    s1, h1, h2, h3 = lan(lab)
    # h1 knows h3's MAC without asking, so the switch has never seen h3
    h3mac = h3.dev("eth0").dev_addr.hex(":")
    h1.ip(f"neigh add 10.0.0.3 lladdr {h3mac} dev eth0 nud permanent")
    h3.ip(f"neigh add 10.0.0.1 lladdr {h1.dev('eth0').dev_addr.hex(':')} dev eth0 nud permanent")
    caps = {p: s1.capture(p) for p in PORTS}
    result = await h1.ping("10.0.0.3", count=3, interval=0.1)
    assert result.received == 3
    st = bridge_of(s1).statistics()
    # the first echo request: unknown destination, flooded to both other ports
    assert (st.ports["s1-eth2"].flood_unicast, st.ports["s1-eth3"].flood_unicast) == (1, 1)
    # the reply taught the switch where h3 is: the next two requests are switched
    assert st.ports["s1-eth3"].forward == 2
    assert st.ports["s1-eth2"].forward == 0
    assert st.ports["s1-eth1"].forward == 3  # the three replies (h1 learnt from request 1)
    # h2's port saw the one flooded request, and nothing else
    (frame,) = [f for _, f, out in caps["s1-eth2"].frames if out]
    eth = dpkt.ethernet.Ethernet(frame)
    assert eth.dst.hex(":") == h3mac
    assert isinstance(eth.data, dpkt.ip.IP) and isinstance(eth.data.data, dpkt.icmp.ICMP)
    assert h2.dev("eth0").statistics().rx_packets == 1  # delivered as OTHERHOST, dropped
    assert h2.drops() == {"OTHERHOST": 1}


async def test_fdb_ages_out_on_the_clock(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    s1, h1, _h2, _h3 = lan(lab, ageing_time=30)
    caps = [s1.capture(p) for p in PORTS]
    await trio.sleep(1)
    assert (await h1.ping("10.0.0.2", count=1)).received == 1
    await trio.sleep(10)
    # the last frames: h2's ARP probe for h1 (its entry went DELAY after the
    # reply) and h1's answer, 5 s after the ping; they refreshed both entries
    last = max(ts for cap in caps for ts, _, _ in cap.frames)
    assert last == 6.0
    assert len(learned(s1)) == 2
    assert s1.bridge("-s fdb show brport s1-eth1").splitlines()[0].endswith("used 5/5 master br0 ")
    await trio.sleep_until(last + 29.999)
    assert len(learned(s1)) == 2
    assert "used 29/29" in s1.bridge("-s fdb show brport s1-eth1")
    await trio.sleep_until(last + 30.0)
    # expired at this jiffy: "stale" until the collector (due now too) deletes them
    await trio.sleep_until(last + 30.001)
    assert learned(s1) == []
    assert bridge_of(s1).statistics().fdb_aged == 2
    # the collector's next run: a whole ageing_time later (no entry left to age)
    assert "gc_timer   29.99 " in s1.ip("-d link show br0")  # 1 ms after it ran


async def test_static_and_local_entries_never_age(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    s1, _h1, _h2, _h3 = lan(lab, ageing_time=10)
    s1.bridge("fdb add 02:00:00:00:00:01 dev s1-eth2 master static")
    s1.bridge("fdb add 02:00:00:00:00:02 dev s1-eth2 master")
    s1.bridge("fdb add 02:00:00:00:00:03 dev s1-eth3 master dynamic")
    await trio.sleep(60)
    out = s1.bridge("fdb show brport s1-eth2")
    # without "vlan", the kernel adds the entry for VID 0 and every VLAN of the port
    assert out.splitlines()[:4] == [
        "02:00:00:00:00:02 vlan 1 master br0 permanent",
        "02:00:00:00:00:02 master br0 permanent",
        "02:00:00:00:00:01 vlan 1 master br0 static",
        "02:00:00:00:00:01 master br0 static",
    ]
    assert "02:00:00:00:00:03" not in s1.bridge("fdb show")  # dynamic: aged out


async def test_bridge_device_routes_like_a_host(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """An address on br0: the switch host answers through its bridge, as Linux does."""
    s1, h1, _h2, _h3 = lan(lab)
    s1.ip("addr add 10.0.0.254/24 dev br0")
    result = await h1.ping("10.0.0.254", count=2, interval=0.1)
    assert result.received == 2
    br0 = s1.dev("br0").statistics()
    assert (br0.rx_packets, br0.tx_packets) == (3, 3)  # ARP request + 2 echoes; reply + 2
    assert (await s1.ping("10.0.0.3", count=1)).received == 1


async def test_link_down_disables_the_port_and_flushes_it(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    s1, h1, _h2, h3 = lan(lab)
    assert (await h1.ping("10.0.0.3", count=1)).received == 1
    h3.ip("link set eth0 down")
    link = s1.bridge("link show dev s1-eth3")
    assert "state disabled" in link and "NO-CARRIER" in link
    assert all("s1-eth3" not in line for line in learned(s1))
    h3.ip("link set eth0 up")
    assert "state forwarding" in s1.bridge("link show dev s1-eth3")
