"""Proxy NDP as Linux 6.x: ``ndisc_recv_ns``'s proxy branch and ``ip6_forward``'s.

A router R (forwarding on, ``proxy_ndp`` on) with ``ip -6 neigh add proxy
2001:db8:1::b dev ra`` answers A's Neighbour Solicitations for B — which A
believes on-link, in its /64, while R routes it out of ``rb`` — with its own
MAC. The entry joins ``ff02::1:ff00:b`` on ``ra`` (``pndisc_constructor``),
so R hears the multicast NS; that one waits a random delay below
``proxy_delay`` on the ND table's proxy queue (``pneigh_enqueue``) and is
answered when the proxy timer hands it back (``pndisc_redo``,
LOCALLY_ENQUEUED). A unicast NS to the proxied address reaches
``ip6_forward``, whose proxy check delivers an NDP message locally
(``ip6_forward_proxy_check``) with its hop limit unchanged: answered at once.
The NA is solicited, with the router flag of the entry (not of R's
forwarding) and the override flag clear. A is the test, sending frames into
the :class:`~netstack.host.port.Port` ``r:ra``. Every byte string below is
what Linux 6.18 sent between network namespaces in the same setup (see
``test_proxy_ndp_real_kernel.py``); dpkt builds the requests and checks the
checksums.
"""

from __future__ import annotations

import json
import socket

import dpkt
import pytest
import trio
import trio.testing
from helpers import nstat

import netstack
from netstack.errors import ConfigError
from netstack.host.host import Host
from netstack.host.port import Port
from netstack.ipv6.af_inet6 import ipv6_of
from netstack.neigh.neighbour import pneigh_entries
from netstack.neigh.nud import NUD_VALID
from netstack.wire.ipv6 import aton as aton6

A_MAC = bytes.fromhex("02000000000a")
RA_MAC = bytes.fromhex("020000000101")
SOLICITED_B_MAC = bytes.fromhex("3333ff00000b")


def a6(text: str) -> bytes:
    return socket.inet_pton(socket.AF_INET6, text)


def topology(lab: netstack.Lab) -> tuple[Host, Host, Port]:
    """A (the port, 2001:db8:1::1) — R (ra 2001:db8:1::fe/64, rb 2001:db8:2::fe/64,
    a route to 2001:db8:1::b/128 out of rb) — B (2001:db8:1::b/64)."""
    r = lab.add_host("r")
    b = lab.add_host("b")
    port = lab.add_port("r:ra")
    lab.add_link("b:eth0", "r:rb")
    for dev, mac in (("ra", "02:00:00:00:01:01"), ("rb", "02:00:00:00:02:02")):
        r.ip(f"link set {dev} down")
        r.ip(f"link set {dev} address {mac}")
        r.ip(f"link set {dev} up")
    r.ip("addr add 2001:db8:1::fe/64 dev ra nodad")
    r.ip("addr add 2001:db8:2::fe/64 dev rb nodad")
    b.ip("addr add 2001:db8:1::b/64 dev eth0 nodad")
    r.ip("route add 2001:db8:1::b/128 dev rb")
    r.sysctl("net.ipv6.conf.all.forwarding=1")
    r.sysctl("net.ipv6.conf.all.proxy_ndp=1")
    r.sysctl("net.ipv6.conf.ra.proxy_ndp=1")
    r.ip("-6 neigh add proxy 2001:db8:1::b dev ra")
    return r, b, port


def ns_frame(src: str, dst: str, dst_mac: bytes, target: str, *, slla: bool = True) -> bytes:
    """A's Neighbour Solicitation, built by dpkt (checksum filled)."""
    opt = b"\x01\x01" + A_MAC if slla else b""
    icmp = dpkt.icmp6.ICMP6(type=135, code=0, data=bytes(4) + a6(target) + opt)
    ip = dpkt.ip6.IP6(src=a6(src), dst=a6(dst), nxt=58, hlim=255, data=icmp, plen=len(icmp))
    return bytes(dpkt.ethernet.Ethernet(dst=dst_mac, src=A_MAC, type=0x86DD, data=bytes(ip)))


def mcast_ns(target: str = "2001:db8:1::b") -> bytes:
    return ns_frame("2001:db8:1::1", "ff02::1:ff00:b", SOLICITED_B_MAC, target)


def ucast_ns(target: str = "2001:db8:1::b") -> bytes:
    """A NUD probe: to the proxied address, at R's MAC (so through ip6_forward)."""
    return ns_frame("2001:db8:1::1", target, RA_MAC, target)


def dad_ns() -> bytes:
    return ns_frame("::", "ff02::1:ff00:b", SOLICITED_B_MAC, "2001:db8:1::b", slla=False)


# R's answers, byte for byte as Linux 6.18 sent them (solicited, no router or
# override flag; the NA to a multicast NS carries the target link-layer option)
NA_TO_MCAST_NS = bytes.fromhex(
    "02000000000a02000000010186dd6000000000203aff20010db80001000000000000000000fe"
    "20010db80001000000000000000000018800a86a4000000020010db800010000000000000000"
    "000b0201020000000101"
)
NA_TO_UCAST_NS = bytes.fromhex(
    "02000000000a02000000010186dd6000000000183aff20010db80001000000000000000000fe"
    "20010db80001000000000000000000018800ad744000000020010db800010000000000000000"
    "000b"
)
# to a DAD probe: to all-nodes, from ra's link-local, no flag at all
NA_TO_DAD_NS = bytes.fromhex(
    "33330000000102000000010186dd6000000000203afffe80000000000000000000fffe000101"
    "ff020000000000000000000000000001880047580000000020010db800010000000000000000"
    "000b0201020000000101"
)


def nas(cap: netstack.host.capture.Capture, t0: float) -> list[tuple[float, bytes]]:
    """(time after t0, frame) of each NA R sent on ra."""
    out = []
    for ts, frame, outgoing in cap.frames:
        eth = dpkt.ethernet.Ethernet(frame)
        if outgoing and eth.type == 0x86DD and eth.data.nxt == 58 and eth.data.data.type == 136:
            out.append((ts - t0, bytes(frame)))
    return out


def na_flags(frame: bytes) -> int:
    flags: int = dpkt.ethernet.Ethernet(frame).data.data.data[0]
    return flags


async def ready(lab: netstack.Lab) -> tuple[Host, Host, Port, netstack.host.capture.Capture]:
    r, b, port = topology(lab)
    await trio.sleep(3)  # link-local addresses through DAD
    port.drain()
    return r, b, port, r.capture("ra")


async def ask(
    port: Port, cap: netstack.host.capture.Capture, frame: bytes, wait: float = 1.0
) -> list[tuple[float, bytes]]:
    """Send *frame* from A, wait, and return the NAs R sent (as :func:`nas`)."""
    cap.frames.clear()
    t0 = trio.current_time()
    await port.send(frame)
    await trio.sleep(wait)
    return nas(cap, t0)


def test_the_literals_are_well_formed() -> None:
    # dpkt as the oracle: each captured NA parses, and its checksum is right
    for frame in (NA_TO_MCAST_NS, NA_TO_UCAST_NS, NA_TO_DAD_NS):
        ip = dpkt.ethernet.Ethernet(frame).data
        icmp = ip.data
        assert icmp.type == 136 and icmp.data[4:20] == a6("2001:db8:1::b")
        wire = icmp.sum
        icmp.sum = 0
        assert dpkt.ip6.IP6(bytes(ip)).data.sum == wire
    assert na_flags(NA_TO_MCAST_NS) == na_flags(NA_TO_UCAST_NS) == 0x40  # S
    assert na_flags(NA_TO_DAD_NS) == 0


async def test_multicast_ns_is_answered_after_a_random_delay(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    r, _b, port, cap = await ready(lab)
    tbl = ipv6_of(r.net).nd_tbl
    hz = r.net.clock.hz
    proxy_delay = tbl.parms_for(r.dev("ra")).proxy_delay
    assert proxy_delay == 8 * hz // 10
    before = r.nstat()
    delays = []
    for _ in range(6):
        cap.frames.clear()
        t0 = trio.current_time()
        await port.send(mcast_ns())
        await trio.sleep(0.001)
        if not nas(cap, t0):  # waiting on the proxy queue (delays below 1 ms answer here)
            assert tbl.proxy_queue is not None and len(tbl.proxy_queue) == 1
        await trio.sleep(1)
        got = nas(cap, t0)
        assert [f for _, f in got] == [NA_TO_MCAST_NS]
        delays.append(got[0][0])
    assert all(0 <= d < proxy_delay / hz for d in delays)
    assert len(set(delays)) > 1  # drawn, not fixed
    after = r.nstat()
    for name in (
        "Icmp6InNeighborSolicits",
        "Icmp6InType135",
        "Icmp6OutNeighborAdvertisements",
        "Icmp6OutType136",
    ):
        assert after.get(name, 0) - before.get(name, 0) == 6, name
    assert tbl.proxy_queue == [] and tbl.proxy_qlen == {r.dev("ra").ifindex: 0}
    # the sender was learnt from its source link-layer option (STALE, then DELAY and
    # PROBE as the NAs used it and the port never answered)
    neigh = tbl.lookup(aton6("2001:db8:1::1"), r.dev("ra"))
    assert neigh is not None and neigh.nud_state & NUD_VALID and bytes(neigh.ha) == A_MAC


async def test_unicast_ns_through_ip6_forward_is_answered_at_once(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    r, b, port, cap = await ready(lab)
    before_r, before_b = r.nstat(), b.nstat()
    got = await ask(port, cap, ucast_ns(), 0.5)
    assert got == [(0, NA_TO_UCAST_NS)]
    after_r, after_b = r.nstat(), b.nstat()

    def delta(before: dict[str, int], after: dict[str, int], name: str) -> int:
        return after.get(name, 0) - before.get(name, 0)

    # delivered on R (hop limit 255 kept: ndisc_rcv took it), not forwarded to B
    assert delta(before_r, after_r, "Icmp6InNeighborSolicits") == 1
    assert delta(before_r, after_r, "Ip6InDelivers") == 1
    assert delta(before_r, after_r, "Ip6OutForwDatagrams") == 0
    assert delta(before_b, after_b, "Icmp6InNeighborSolicits") == 0
    assert ipv6_of(r.net).nd_tbl.proxy_queue is None  # never queued


async def test_dad_probe_for_a_proxied_address_is_defended(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    _r, _b, port, cap = await ready(lab)
    got = await ask(port, cap, dad_ns())
    assert [f for _, f in got] == [NA_TO_DAD_NS]
    assert 0 <= got[0][0] < 0.8


async def test_router_flag_comes_from_the_entry(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    r, _b, port, cap = await ready(lab)
    r.ip("-6 neigh add proxy 2001:db8:1::b dev ra router")  # an existing entry: flags replaced
    assert r.ip("-6 neigh show proxy") == "2001:db8:1::b dev ra router proxy \n"
    assert [na_flags(f) for _, f in await ask(port, cap, mcast_ns())] == [0xC0]  # R, S
    assert [na_flags(f) for _, f in await ask(port, cap, ucast_ns())] == [0xC0]
    assert [na_flags(f) for _, f in await ask(port, cap, dad_ns())] == [0x80]  # R
    r.ip("-6 neigh add proxy 2001:db8:1::b dev ra")
    assert [na_flags(f) for _, f in await ask(port, cap, mcast_ns())] == [0x40]


# R's answer to a multicast NS for its subnet-router anycast address 2001:db8:1::
# (R, S; no override): the same wait as a proxy's (Linux 6.18)
NA_TO_ANYCAST_NS = bytes.fromhex(
    "02000000000a02000000010186dd6000000000203aff20010db80001000000000000000000fe"
    "20010db800010000000000000000000188002875c000000020010db800010000000000000000"
    "00000201020000000101"
)


def anycast_ns() -> bytes:
    return ns_frame(
        "2001:db8:1::1", "ff02::1:ff00:0", bytes.fromhex("3333ff000000"), "2001:db8:1::"
    )


async def test_multicast_ns_for_an_anycast_address_waits_too(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    # ndisc_recv_ns takes the anycast and the proxy case down one branch: "for anycast
    # or proxy, sender should delay its response"; a unicast one is answered at once
    r, _b, port, cap = await ready(lab)
    tbl = ipv6_of(r.net).nd_tbl
    delays = []
    for _ in range(3):
        cap.frames.clear()
        t0 = trio.current_time()
        await port.send(anycast_ns())
        await trio.sleep(0.001)
        assert nas(cap, t0) == [] or nas(cap, t0)[0][0] < 0.001
        await trio.sleep(1)
        got = nas(cap, t0)
        assert [f for _, f in got] == [NA_TO_ANYCAST_NS]
        delays.append(got[0][0])
    assert all(0 <= d < 0.8 for d in delays) and max(delays) > 0
    assert tbl.proxy_queue == []
    unicast = ns_frame("2001:db8:1::1", "2001:db8:1::", RA_MAC, "2001:db8:1::")
    got = await ask(port, cap, unicast, 0.1)
    assert [(t, na_flags(f), len(f)) for t, f in got] == [(0, 0xC0, 78)]


async def test_zero_proxy_delay_answers_at_once(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    r, _b, port, cap = await ready(lab)
    r.sysctl("net.ipv6.neigh.ra.proxy_delay=0")
    assert await ask(port, cap, mcast_ns(), 0.1) == [(0, NA_TO_MCAST_NS)]
    assert await ask(port, cap, dad_ns(), 0.1) == [(0, NA_TO_DAD_NS)]


async def test_which_proxy_ndp_and_forwarding_settings_answer(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    # as Linux 6.18: ndisc_recv_ns reads all.proxy_ndp or the device's and the
    # device's forwarding; ip6_forward's proxy check reads all.proxy_ndp alone
    r, _b, port, cap = await ready(lab)
    answered = []
    for all_ndp, ra_ndp, ra_fwd in ((0, 1, 1), (0, 0, 1), (1, 0, 1), (1, 1, 0)):
        r.sysctl(f"net.ipv6.conf.all.proxy_ndp={all_ndp}")
        r.sysctl(f"net.ipv6.conf.ra.proxy_ndp={ra_ndp}")
        r.sysctl(f"net.ipv6.conf.ra.forwarding={ra_fwd}")
        fwd = nstat(r, "Ip6OutForwDatagrams")
        answered.append(
            (
                bool(await ask(port, cap, mcast_ns())),
                bool(await ask(port, cap, ucast_ns())),
                nstat(r, "Ip6OutForwDatagrams") - fwd,
            )
        )
    # all.proxy_ndp 0: the unicast NS is forwarded to B (which drops it: hop limit 254)
    assert answered == [(True, False, 1), (False, False, 1), (True, True, 0), (False, False, 0)]


async def test_ns_for_an_address_not_proxied_on_that_device(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    r, _b, port, cap = await ready(lab)
    r.ip("-6 neigh del proxy 2001:db8:1::b dev ra")
    r.ip("-6 neigh add proxy 2001:db8:1::b dev rb")
    assert await ask(port, cap, ucast_ns()) == []
    assert await ask(port, cap, mcast_ns()) == []
    ra, rb = r.dev("ra").ip6_ptr, r.dev("rb").ip6_ptr
    assert ra is not None and rb is not None
    group = aton6("ff02::1:ff00:b")
    assert group not in ra.mc_list and rb.mc_list[group] == 1  # the entry's group moved
    assert ipv6_of(r.net).nd_tbl.proxy_queue is None


def link_local_echo() -> bytes:
    """A's echo request to the proxied link-local fe80::b, at R's MAC."""
    echo = dpkt.icmp6.ICMP6(type=128, code=0, data=b"\x12\x34\x00\x01hello")
    ip = dpkt.ip6.IP6(
        src=a6("fe80::ff:fe00:a"), dst=a6("fe80::b"), nxt=58, hlim=64, data=echo, plen=len(echo)
    )
    return bytes(dpkt.ethernet.Ethernet(dst=RA_MAC, src=A_MAC, type=0x86DD, data=bytes(ip)))


# R's answer to it (the IPv6 packet): destination unreachable, address unreachable
# (ip6_link_failure), as Linux 6.18 sent it; its first 7 bytes hold the flow label,
# the kernel's a hash of its own
ADDRESS_UNREACHABLE = bytes.fromhex(
    "60083212003d3a40fe80000000000000000000fffe000101fe80000000000000000000fffe00000a"
    "010368720000000060000000000d3a40fe80000000000000000000fffe00000afe8000000000000000"
    "0000000000000b80002d9a1234000168656c6c6f"
)


async def test_link_local_proxied_address_gets_address_unreachable(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    # ip6_forward_proxy_check: "the proxying router can't forward traffic sent to a
    # link-local address, so signal the sender and discard the packet"
    r, _b, port, _cap = await ready(lab)
    r.ip("-6 neigh add proxy fe80::b dev ra")
    r.ip("-6 neigh add fe80::ff:fe00:a lladdr 02:00:00:00:00:0a dev ra")  # (Linux had learnt it)
    before = r.nstat()
    await port.send(link_local_echo())
    await trio.sleep(0.1)
    frames = [f for f in port.drain() if f[12:14] == b"\x86\xdd" and f[20] == 58 and f[54] == 1]
    assert len(frames) == 1
    err = dpkt.ethernet.Ethernet(frames[0]).data
    assert (err.data.type, err.data.code) == (1, 3)
    assert bytes(err)[7:] == ADDRESS_UNREACHABLE[7:]
    after = r.nstat()
    assert after.get("Ip6InDiscards", 0) - before.get("Ip6InDiscards", 0) == 1
    assert after.get("Icmp6OutDestUnreachs", 0) - before.get("Icmp6OutDestUnreachs", 0) == 1
    assert after.get("Ip6OutForwDatagrams", 0) == before.get("Ip6OutForwDatagrams", 0)


async def test_other_traffic_to_a_proxied_address_is_forwarded(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    r, b, port, cap = await ready(lab)
    b.ip("route add default via fe80::ff:fe00:202 dev eth0")
    await ask(port, cap, mcast_ns())  # R learns A
    echo = dpkt.icmp6.ICMP6(type=128, code=0, data=b"\x12\x34\x00\x01hello")
    ip = dpkt.ip6.IP6(
        src=a6("2001:db8:1::1"), dst=a6("2001:db8:1::b"), nxt=58, hlim=64, data=echo,
        plen=len(echo),
    )  # fmt: skip
    fwd = nstat(r, "Ip6OutForwDatagrams")
    await port.send(
        bytes(dpkt.ethernet.Ethernet(dst=RA_MAC, src=A_MAC, type=0x86DD, data=bytes(ip)))
    )
    await trio.sleep(1)
    assert nstat(r, "Ip6OutForwDatagrams") - fwd == 1
    assert nstat(b, "Icmp6InEchos") == 1


async def test_proxy_qlen_bounds_the_queue(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    # p->qlen > proxy_qlen drops: with proxy_qlen 1, two of four wait, two are dropped
    r, _b, port, cap = await ready(lab)
    r.sysctl("net.ipv6.neigh.ra.proxy_qlen=1")
    cap.frames.clear()
    t0 = trio.current_time()
    for _ in range(4):
        await port.send(mcast_ns())
    await trio.sleep(1)
    assert [f for _, f in nas(cap, t0)] == [NA_TO_MCAST_NS] * 2
    tbl = ipv6_of(r.net).nd_tbl
    assert tbl.proxy_queue == [] and tbl.proxy_qlen == {r.dev("ra").ifindex: 0}


async def test_proxy_na_from_ourselves_does_not_update_the_entry(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    # ndisc_recv_na: an NA for a proxied address carrying our own MAC (all.forwarding
    # and all.proxy_ndp on) leaves the entry alone
    r, _b, port, _cap = await ready(lab)
    r.ip("-6 neigh add 2001:db8:1::b lladdr 02:00:00:00:00:0b dev ra nud stale")

    def na(tlla: bytes) -> bytes:
        icmp = dpkt.icmp6.ICMP6(
            type=136, code=0, data=b"\x20\0\0\0" + a6("2001:db8:1::b") + b"\x02\x01" + tlla
        )  # override, unsolicited
        ip = dpkt.ip6.IP6(
            src=a6("2001:db8:1::1"), dst=a6("ff02::1"), nxt=58, hlim=255, data=icmp,
            plen=len(icmp),
        )  # fmt: skip
        return bytes(dpkt.ethernet.Ethernet(dst=bytes.fromhex("333300000001"), src=A_MAC,
                                            type=0x86DD, data=bytes(ip)))  # fmt: skip

    tbl = ipv6_of(r.net).nd_tbl
    await port.send(na(RA_MAC))
    await trio.sleep(0.01)
    n = tbl.lookup(aton6("2001:db8:1::b"), r.dev("ra"))
    assert n is not None and bytes(n.ha) == bytes.fromhex("02000000000b")
    r.sysctl("net.ipv6.conf.all.proxy_ndp=0")
    await port.send(na(RA_MAC))
    await trio.sleep(0.01)
    assert bytes(n.ha) == RA_MAC


async def test_proxy_entry_joins_the_solicited_node_group(lab: netstack.Lab) -> None:
    r = lab.add_host("r")
    r.ip("link add d0 type veth peer name e0")
    r.ip("link set d0 up")
    tbl = ipv6_of(r.net).nd_tbl
    r.ip("-6 neigh add proxy 2001:db8::b dev d0")
    r.ip("-6 neigh add proxy fe80::b dev d0")  # the same group: two users
    idev = r.dev("d0").ip6_ptr
    group = aton6("ff02::1:ff00:b")
    assert idev.mc_list[group] == 2
    r.ip("-6 neigh del proxy fe80::b dev d0")
    assert idev.mc_list[group] == 1
    assert "ff02::1:ff00:b" in r.ip("-6 maddr show dev d0")
    r.ip("link set d0 down")  # __neigh_ifdown: the entry and its membership go
    assert pneigh_entries(tbl) == []
    assert group not in idev.mc_list
    assert r.ip("-6 neigh show proxy") == ""


async def test_ip_6_neigh_proxy_commands(lab: netstack.Lab) -> None:
    h = lab.add_host("h")
    for command, _ in SETUP_COMMANDS:
        h.ip(command)
    for command, expected in SESSION:
        try:
            out = h.ip(command)
        except ConfigError as e:
            out = str(e)
        assert out == expected, command


SETUP_COMMANDS = [
    ("link add d0 type veth peer name e0", ""),
    ("link add d1 type veth peer name e1", ""),
    ("link set d0 up", ""),
    ("link set d1 up", ""),
]

# iproute2 6.1 on Linux 6.18, byte for byte (test_proxy_ndp_real_kernel runs it there)
SESSION = [
    ("-6 neigh add proxy 2001:db8::5 dev d0", ""),
    ("-6 neigh add proxy 2001:db8::6 dev d0 router", ""),
    ("-6 neigh add proxy 2001:db8::1:5 dev d1", ""),
    ("neigh add proxy 10.0.0.5 dev d0", ""),
    (
        "-6 neigh show proxy",
        "2001:db8::1:5 dev d1 proxy \n2001:db8::5 dev d0 proxy \n"
        "2001:db8::6 dev d0 router proxy \n",
    ),
    (
        "neigh show proxy",
        "10.0.0.5 dev d0 proxy \n2001:db8::1:5 dev d1 proxy \n2001:db8::5 dev d0 proxy \n"
        "2001:db8::6 dev d0 router proxy \n",
    ),
    ("-6 neigh show proxy dev d0", "2001:db8::5 proxy \n2001:db8::6 router proxy \n"),
    (
        "-6 neigh show proxy 2001:db8::/112",
        "2001:db8::5 dev d0 proxy \n2001:db8::6 dev d0 router proxy \n",
    ),
    ("-6 neigh show proxy to 2001:db8::6", "2001:db8::6 dev d0 router proxy \n"),
    (
        "-br -6 neigh show proxy",
        f"{'2001:db8::1:5':<40}{'d1':<17}\n{'2001:db8::5':<40}{'d0':<17}\n"
        f"{'2001:db8::6':<40}{'d0':<17}\n",
    ),
    (
        "-j -6 neigh show proxy",
        json.dumps(
            [
                {"dst": "2001:db8::1:5", "dev": "d1", "proxy": None},
                {"dst": "2001:db8::5", "dev": "d0", "proxy": None},
                {"dst": "2001:db8::6", "dev": "d0", "router": None, "proxy": None},
            ],
            separators=(",", ":"),
        )
        + "\n",
    ),
    ("-6 neigh get proxy 2001:db8::6 dev d0", "2001:db8::6 dev d0 router proxy \n"),
    ("-6 neigh get proxy 2001:db8::6 dev d1", "Error: Proxy neighbour entry not found."),
    ("-6 neigh add proxy 2001:db8::6 dev d0", ""),
    ("-6 neigh show proxy dev d0", "2001:db8::5 proxy \n2001:db8::6 proxy \n"),
    (
        "-6 maddr show dev d0",
        "3:\td0\n\tinet6 ff02::1:ff00:6\n\tinet6 ff02::1:ff00:5\n\tinet6 ff02::1\n"
        "\tinet6 ff01::1\n",
    ),
    ("-6 neigh del proxy 2001:db8::6 dev d1", "RTNETLINK answers: No such file or directory"),
    ("-6 neigh del proxy 2001:db8::6 dev d0", ""),
    # pndisc_constructor wants a device: neigh_add answers -ENOBUFS
    ("-6 neigh add proxy 2001:db8::7", "RTNETLINK answers: No buffer space available"),
    (
        "-6 neigh add proxy 10.0.0.9 dev d0",
        'Error: inet6 address is expected rather than "10.0.0.9".',
    ),
    ("-6 neigh", ""),
    (
        "-s -6 neigh flush proxy dev d0",
        "\n*** Round 1, deleting 1 entries ***\n*** Flush is complete after 1 round ***\n",
    ),
    ("-6 neigh show proxy", "2001:db8::1:5 dev d1 proxy \n"),
    ("-6 maddr show dev d0", "3:\td0\n\tinet6 ff02::1\n\tinet6 ff01::1\n"),
    ("link set d1 down", ""),
    ("-6 neigh show proxy", ""),
    ("neigh show proxy", "10.0.0.5 dev d0 proxy \n"),
    ("neigh flush proxy", ""),
    ("neigh show proxy", ""),
    # the flags the entry was added with, extern_learn too
    ("-6 neigh add proxy 2001:db8::8 dev d0 extern_learn router", ""),
    ("-6 neigh show proxy", "2001:db8::8 dev d0 router proxy extern_learn \n"),
    (
        "-j -6 neigh show proxy",
        '[{"dst":"2001:db8::8","dev":"d0","router":null,"proxy":null,"extern_learn":null}]\n',
    ),
    ("-6 neigh del proxy 2001:db8::8 dev d0", ""),
    # two entries of one solicited-node group: two users; down, the group goes too
    ("-6 neigh add proxy 2001:db8::5 dev d0", ""),
    ("-6 neigh add proxy fe80::5 dev d0", ""),
    (
        "-6 maddr show dev d0",
        "3:\td0\n\tinet6 ff02::1:ff00:5 users 2\n\tinet6 ff02::1\n\tinet6 ff01::1\n",
    ),
    ("link set d0 down", ""),
    ("-6 neigh show proxy", ""),
    ("-6 maddr show dev d0", "3:\td0\n\tinet6 ff02::1\n\tinet6 ff01::1\n"),
]


@pytest.mark.parametrize("seed", [7])
async def test_proxy_delay_is_deterministic_per_seed(
    autojump_clock: trio.testing.MockClock, seed: int
) -> None:
    async def delays(s: int) -> list[float]:
        async with netstack.host.open_lab(seed=s, debug_skb=True) as lab:
            _r, _b, port, cap = await ready(lab)
            hz = lab.hosts["r"].net.clock.hz
            return [round((await ask(port, cap, mcast_ns()))[0][0] * hz) for _ in range(4)]

    first = await delays(seed)
    assert await delays(seed) == first
    assert await delays(seed + 1) != first
