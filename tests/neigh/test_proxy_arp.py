"""Proxy ARP as Linux 6.x: ``arp_process``'s IN_DEV_FORWARD branch.

A router R with ``proxy_arp=1`` on its A-side device (and forwarding on)
answers A's request for B — which A believes on-link, through a /16 — with
its own MAC: ``arp_fwd_proxy``. A broadcast request waits a random delay
below ``proxy_delay`` on the table's proxy queue (``pneigh_enqueue``) and is
answered when ``neigh_proxy_process`` hands it back to ``arp_process``
(``parp_redo``), LOCALLY_ENQUEUED; a unicast one (PACKET_HOST), or any with
``proxy_delay`` 0, is answered at once. ``ip neigh add proxy ADDR dev DEV``
makes a ``pneigh`` entry that answers for one address without ``proxy_arp``.
The figures match Linux 6.18 between network namespaces (see
``test_proxy_arp_real_kernel``).
"""

from __future__ import annotations

import json

import dpkt
import pytest
import trio
import trio.testing
from helpers import IPV4_ONLY

import netstack
from netstack.errors import ConfigError
from netstack.host import open_lab
from netstack.host.host import Host
from netstack.ipv4 import ipv4_of
from netstack.ipv4.arp import arp_send
from netstack.neigh.nud import NUD_STALE
from netstack.wire.arp import ARPOP_REPLY, ARPOP_REQUEST
from netstack.wire.ethernet import ETH_P_ARP
from netstack.wire.ipv4 import aton

A_MAC = bytes.fromhex("02000000000a")
RA_MAC = bytes.fromhex("020000000101")
BCAST = b"\xff" * 6


def topology(lab: netstack.Lab, *, proxy_arp: int = 1) -> tuple[Host, Host, Host]:
    """A (10.0.1.1/16) — R (10.0.1.254/24 ra, 10.0.2.254/24 rb) — B (10.0.2.1/24)."""
    a = lab.add_host("a", sysctls=IPV4_ONLY)
    r = lab.add_host("r", sysctls=IPV4_ONLY)
    b = lab.add_host("b", sysctls=IPV4_ONLY)
    lab.add_link("a:eth0", "r:ra")
    lab.add_link("b:eth0", "r:rb")
    a.ip("link set eth0 address 02:00:00:00:00:0a")
    r.ip("link set ra address 02:00:00:00:01:01")
    r.ip("link set rb address 02:00:00:00:02:02")
    a.ip("addr add 10.0.1.1/16 dev eth0")
    r.ip("addr add 10.0.1.254/24 dev ra")
    r.ip("addr add 10.0.2.254/24 dev rb")
    b.ip("addr add 10.0.2.1/24 dev eth0")
    b.ip("route add default via 10.0.2.254")
    r.sysctl("net.ipv4.ip_forward=1")
    r.sysctl(f"net.ipv4.conf.ra.proxy_arp={proxy_arp}")
    return a, r, b


def ask(a: Host, target: str, dest_hw: bytes = BCAST) -> None:
    """A asks who has *target* (broadcast unless *dest_hw*)."""
    dev = a.dev("eth0")
    arp_send(
        ipv4_of(a.net), ARPOP_REQUEST, ETH_P_ARP, aton(target), dev,
        aton("10.0.1.1"), dest_hw, dev.dev_addr, None,
    )  # fmt: skip


def replies(cap: netstack.host.capture.Capture, t0: float) -> list[tuple[float, bytes]]:
    """(time after t0, frame) of each ARP reply R sent on ra."""
    out = []
    for ts, frame, outgoing in cap.frames:
        eth = dpkt.ethernet.Ethernet(frame)
        if outgoing and eth.type == 0x0806 and eth.data.op == ARPOP_REPLY:
            out.append((ts - t0, bytes(frame)))
    return out


def proxy_reply_bytes(target: str) -> bytes:
    """R's reply for *target*, as Linux sends it (captured between namespaces)."""
    arp = (
        bytes.fromhex("0001080006040002") + RA_MAC + aton(target).to_bytes(4, "big")
        + A_MAC + aton("10.0.1.1").to_bytes(4, "big")
    )  # fmt: skip
    return A_MAC + RA_MAC + b"\x08\x06" + arp


async def test_proxy_arp_broadcast_request_is_answered_after_a_random_delay(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, r, _b = topology(lab)
    await trio.sleep(1)
    cap = r.capture("ra")
    hz = r.net.clock.hz
    proxy_delay = ipv4_of(r.net).arp_tbl.parms_for(r.dev("ra")).proxy_delay
    assert proxy_delay == 8 * hz // 10  # 80 jiffies at HZ 100: 0.8 s
    delays = []
    for i in range(1, 9):
        t0 = trio.current_time()
        cap.frames.clear()
        ask(a, f"10.0.2.{i}")
        await trio.sleep(1)
        got = replies(cap, t0)
        assert [f for _, f in got] == [proxy_reply_bytes(f"10.0.2.{i}")]
        delays.append(got[0][0])
    assert all(0 <= d < proxy_delay / hz for d in delays)
    assert len(set(delays)) > 1  # drawn, not fixed
    # the sender was learnt (neigh_event_ns): STALE
    n = ipv4_of(r.net).arp_tbl.lookup(aton("10.0.1.1"), r.dev("ra"))
    assert n is not None and n.nud_state == NUD_STALE and bytes(n.ha) == A_MAC


async def test_ping_across_the_proxy(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, _r, _b = topology(lab)
    await trio.sleep(1)
    assert (await a.ping("10.0.2.1", count=1)).received == 1
    na = ipv4_of(a.net).arp_tbl.lookup(aton("10.0.2.1"), a.dev("eth0"))
    assert na is not None and bytes(na.ha) == RA_MAC  # B's address at R's MAC


async def delays_with_seed(seed: int) -> list[int]:
    """The proxy delays (in jiffies) of four requests in a lab of *seed*."""
    async with open_lab(seed=seed, debug_skb=True) as lab:
        a, r, _b = topology(lab)
        await trio.sleep(1)
        cap = r.capture("ra")
        out = []
        for i in range(1, 5):
            t0 = trio.current_time()
            cap.frames.clear()
            ask(a, f"10.0.2.{i}")
            await trio.sleep(1)
            out.append(round(replies(cap, t0)[0][0] * r.net.clock.hz))
        return out


async def test_proxy_delay_is_deterministic_per_seed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    first = await delays_with_seed(7)
    assert await delays_with_seed(7) == first
    assert await delays_with_seed(8) != first


async def test_unicast_request_and_zero_proxy_delay_are_answered_at_once(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, r, _b = topology(lab)
    await trio.sleep(1)
    cap = r.capture("ra")
    t0 = trio.current_time()
    ask(a, "10.0.2.1", dest_hw=RA_MAC)  # PACKET_HOST
    await trio.sleep(0.001)
    assert [f for _, f in replies(cap, t0)] == [proxy_reply_bytes("10.0.2.1")]
    assert replies(cap, t0)[0][0] == 0
    r.sysctl("net.ipv4.neigh.ra.proxy_delay=0")
    cap.frames.clear()
    t0 = trio.current_time()
    ask(a, "10.0.2.2")
    await trio.sleep(0.001)
    assert [(t, f) for t, f in replies(cap, t0)] == [(0, proxy_reply_bytes("10.0.2.2"))]


async def test_no_proxy_arp_no_reply_and_no_forwarding_no_reply(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, r, _b = topology(lab, proxy_arp=0)
    await trio.sleep(1)
    cap = r.capture("ra")
    t0 = trio.current_time()
    ask(a, "10.0.2.1")
    await trio.sleep(2)
    assert replies(cap, t0) == []
    r.sysctl("net.ipv4.conf.ra.proxy_arp=1")
    r.sysctl("net.ipv4.ip_forward=0")
    ask(a, "10.0.2.1")
    await trio.sleep(2)
    assert replies(cap, t0) == []
    # all.proxy_arp counts too (IN_DEV_ORCONF)
    r.sysctl("net.ipv4.ip_forward=1")
    r.sysctl("net.ipv4.conf.ra.proxy_arp=0")
    r.sysctl("net.ipv4.conf.all.proxy_arp=1")
    ask(a, "10.0.2.1", dest_hw=RA_MAC)
    await trio.sleep(0.001)
    assert [f for _, f in replies(cap, t0)] == [proxy_reply_bytes("10.0.2.1")]


async def test_no_proxy_for_a_route_back_out_of_the_same_device_unless_pvlan(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, r, _b = topology(lab)
    await trio.sleep(1)
    cap = r.capture("ra")
    t0 = trio.current_time()
    ask(a, "10.0.1.9", dest_hw=RA_MAC)  # routed out of ra itself
    await trio.sleep(0.001)
    assert replies(cap, t0) == []
    r.sysctl("net.ipv4.conf.ra.proxy_arp_pvlan=1")
    ask(a, "10.0.1.9", dest_hw=RA_MAC)
    await trio.sleep(0.001)
    assert [f for _, f in replies(cap, t0)] == [proxy_reply_bytes("10.0.1.9")]


async def test_ip_neigh_proxy_entry_answers_for_one_address(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, r, _b = topology(lab, proxy_arp=0)
    await trio.sleep(1)
    r.ip("neigh add proxy 10.0.2.9 dev ra")
    cap = r.capture("ra")
    t0 = trio.current_time()
    ask(a, "10.0.2.9")
    ask(a, "10.0.2.10")
    await trio.sleep(1)
    got = replies(cap, t0)
    assert [f for _, f in got] == [proxy_reply_bytes("10.0.2.9")]
    assert 0 <= got[0][0] < 0.8


async def test_ip_neigh_proxy_add_show_del(lab: netstack.Lab) -> None:
    r = lab.add_host("r", sysctls=IPV4_ONLY)
    r.ip("link add ra type dummy")
    # the outputs and errors of iproute2 6.1 on Linux 6.18
    r.ip("neigh add proxy 10.0.1.77 dev ra")
    r.ip("neigh add proxy 10.0.9.9")
    assert r.ip("neigh show proxy") == "10.0.1.77 dev ra proxy \n10.0.9.9 proxy \n"
    assert r.ip("neigh show proxy dev ra") == "10.0.1.77 proxy \n"
    assert r.ip("neigh") == ""  # proxy entries are a dump of their own
    assert r.ip("neigh get proxy 10.0.1.77 dev ra") == "10.0.1.77 dev ra proxy \n"
    r.ip("neigh add proxy 10.0.1.77 dev ra")  # again: no error
    r.ip("neigh add proxy 10.0.1.77")
    assert r.ip("neigh show proxy") == (
        "10.0.1.77 proxy \n10.0.1.77 dev ra proxy \n10.0.9.9 proxy \n"
    )
    with pytest.raises(ConfigError, match=r"^RTNETLINK answers: No such file or directory$"):
        r.ip("neigh del proxy 10.0.1.78 dev ra")
    with pytest.raises(ConfigError, match=r"^RTNETLINK answers: No such file or directory$"):
        r.ip("neigh del proxy 10.0.9.9 dev ra")
    with pytest.raises(
        ConfigError, match=r'^Error: any valid address is expected rather than "bogus"\.$'
    ):
        r.ip("neigh add proxy bogus dev ra")
    with pytest.raises(ConfigError, match=r'^Cannot find device "nodev"$'):
        r.ip("neigh add proxy 10.0.1.5 dev nodev")
    r.ip("neigh del proxy 10.0.9.9")
    r.ip("neigh del proxy 10.0.1.77")
    assert r.ip("neigh show proxy") == "10.0.1.77 dev ra proxy \n"
    from netstack.neigh.neighbour import pneigh_entries

    assert [e.key for e in pneigh_entries(ipv4_of(r.net).arp_tbl)] == [aton("10.0.1.77")]


async def test_proxy_qlen_bounds_the_queue(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    # p->qlen > proxy_qlen drops: with proxy_qlen 1, two of four wait, two are dropped
    # (as Linux 6.18)
    a, r, _b = topology(lab)
    await trio.sleep(1)
    r.sysctl("net.ipv4.neigh.ra.proxy_qlen=1")
    cap = r.capture("ra")
    t0 = trio.current_time()
    for i in range(11, 15):
        ask(a, f"10.0.2.{i}")
    await trio.sleep(0.001)
    assert replies(cap, t0) == []
    await trio.sleep(1)
    got = replies(cap, t0)
    assert sorted(f for _, f in got) == sorted(proxy_reply_bytes(f"10.0.2.{i}") for i in (11, 12))
    assert all(0 <= t < 0.8 for t, _ in got)
    tbl = ipv4_of(r.net).arp_tbl
    assert tbl.proxy_queue == [] and tbl.proxy_qlen == {r.dev("ra").ifindex: 0}


async def test_ip_neigh_show_proxy_in_hash_order(lab: netstack.Lab) -> None:
    r = lab.add_host("r", sysctls=IPV4_ONLY)
    r.ip("link add ra type dummy")
    r.ip("neigh add proxy 10.0.9.9")
    r.ip("neigh add proxy 10.0.2.9 dev ra")
    # the dump walks pneigh_hash()'s buckets, as Linux 6.18 printed it
    assert r.ip("neigh show proxy") == "10.0.2.9 dev ra proxy \n10.0.9.9 proxy \n"


async def test_device_down_takes_its_proxy_entries_and_the_queue(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, r, _b = topology(lab)
    await trio.sleep(1)
    r.ip("neigh add proxy 10.0.2.9 dev ra")
    r.ip("neigh add proxy 10.0.9.9")
    cap = r.capture("ra")
    t0 = trio.current_time()
    ask(a, "10.0.2.1")
    await trio.sleep(0.001)
    tbl = ipv4_of(r.net).arp_tbl
    assert tbl.proxy_queue is not None and len(tbl.proxy_queue) == 1
    r.ip("link set ra down")  # as Linux 6.18: only the entry of no device stays
    assert r.ip("neigh show proxy") == "10.0.9.9 proxy \n"
    assert tbl.proxy_queue == []
    assert tbl.proxy_timer is not None and not tbl.proxy_timer.pending
    r.ip("link set ra up")
    await trio.sleep(1)
    assert replies(cap, t0) == []


async def test_ip_neigh_proxy_get_brief_filters_and_flush(lab: netstack.Lab) -> None:
    # iproute2 6.1 on Linux 6.18, byte for byte
    r = lab.add_host("r", sysctls=IPV4_ONLY)
    r.ip("link add d0 type dummy")
    r.ip("neigh add proxy 10.0.0.5 dev d0")
    r.ip("neigh add proxy 10.0.0.6")
    r.ip("neigh add proxy 10.1.0.6 dev d0")
    assert r.ip("neigh get proxy 10.0.0.6 dev d0") == "10.0.0.6 proxy \n"
    assert r.ip("neigh get proxy 10.0.0.5 dev d0") == "10.0.0.5 dev d0 proxy \n"
    with pytest.raises(ConfigError, match=r"^Error: Proxy neighbour entry not found\.$"):
        r.ip("neigh get proxy 10.0.0.9 dev d0")
    assert r.ip("neigh show proxy 10.0.0.6") == "10.0.0.6 proxy \n"
    assert r.ip("neigh show proxy to 10.0.0.0/16") == ("10.0.0.6 proxy \n10.0.0.5 dev d0 proxy \n")
    assert r.ip("-br neigh show proxy") == (
        f"{'10.0.0.6':<40}\n{'10.1.0.6':<40}{'d0':<17}\n{'10.0.0.5':<40}{'d0':<17}\n"
    )
    assert json.loads(r.ip("-j neigh show proxy")) == [
        {"dst": "10.0.0.6", "proxy": None},
        {"dst": "10.1.0.6", "dev": "d0", "proxy": None},
        {"dst": "10.0.0.5", "dev": "d0", "proxy": None},
    ]
    assert r.ip("-s neigh flush proxy dev d0") == (
        "\n*** Round 1, deleting 2 entries ***\n*** Flush is complete after 1 round ***\n"
    )
    assert r.ip("neigh show proxy") == "10.0.0.6 proxy \n"
    assert r.ip("-s neigh flush proxy dev d0") == "Nothing to flush.\n"
    assert r.ip("neigh flush proxy") == ""
    assert r.ip("neigh show proxy") == ""


async def test_medium_id_rules(lab: netstack.Lab, autojump_clock: trio.testing.MockClock) -> None:
    # arp_fwd_proxy: no proxy between devices of one medium, none from medium -1
    # (the same five answers as Linux 6.18)
    a, r, _b = topology(lab)
    await trio.sleep(1)
    r.sysctl("net.ipv4.neigh.ra.proxy_delay=0")
    cap = r.capture("ra")
    answered = []
    for ra_id, rb_id in ((1, 1), (1, 2), (1, 0), (-1, 2), (0, 1)):
        r.sysctl(f"net.ipv4.conf.ra.medium_id={ra_id}")
        r.sysctl(f"net.ipv4.conf.rb.medium_id={rb_id}")
        t0 = trio.current_time()
        cap.frames.clear()
        ask(a, "10.0.2.20")
        await trio.sleep(0.01)
        answered.append(bool(replies(cap, t0)))
    assert answered == [False, True, True, False, True]
