"""Three hosts and a router: forwarding, TTL, ICMP errors, ip_forward=0.

    a (10.0.1.1) ── eth0 r eth1 ── b (10.0.2.1)
                  10.0.1.254  10.0.2.254

``a`` and ``b`` have a default route via ``r``; ``r`` forwards when
``net.ipv4.ip_forward=1``.
"""

from __future__ import annotations

import struct
from typing import Literal

import dpkt
import pytest
import trio
import trio.testing

from netstack.core.skbuff import SkBuff
from netstack.ipv4 import ipv4_of
from netstack.ipv4.route import Rtable, ip_route_output, ip_rt_update_pmtu
from netstack.socket import IP_RECVERR, IPPROTO_IP, MSG_ERRQUEUE
from netstack.testing.builders import nstat, open_test_lab, routed


def ip_frames(frames: list[tuple[float, bytes, bool]]) -> list[tuple[bytes, bool]]:
    """(IP datagram, outgoing) of every IPv4 frame, with header checks."""
    out = []
    for _, frame, outgoing in frames:
        if frame[12:14] != b"\x08\x00":
            continue
        raw = frame[14:]
        tot = struct.unpack_from("!H", raw, 2)[0]
        assert dpkt.in_cksum(raw[: (raw[0] & 0xF) * 4]) == 0, "bad IP header checksum"
        out.append((raw[:tot], outgoing))
    return out


@pytest.mark.parametrize("kind", ["veth", "nic"])
async def test_router_forwards_and_decrements_ttl(
    autojump_clock: trio.testing.MockClock, kind: Literal["veth", "nic"]
) -> None:
    async with open_test_lab() as lab:
        a, r, b = routed(lab, kind=kind)
        cap_in, cap_out = r.capture("eth0"), r.capture("eth1")
        res = await a.ping("10.0.2.1", count=3, interval=0.2)
        assert res.received == 3
        assert [rep.ttl for rep in res.replies] == [63, 63, 63]  # b's 64, less one hop
        assert nstat(r, "IpForwDatagrams") == 6  # three requests, three replies
        assert nstat(r, "IpInDelivers") == 0
        assert nstat(b, "IcmpInEchos") == 3
        # The same datagrams on both sides of the router, one TTL apart.
        ins = [ip for ip, outgoing in ip_frames(cap_in.frames) if not outgoing]
        outs = [ip for ip, outgoing in ip_frames(cap_out.frames) if outgoing]
        assert len(ins) == len(outs) == 3
        for before, after in zip(ins, outs, strict=True):
            assert before[8] == 64
            assert after[8] == 63
            assert before[:8] == after[:8]  # version … flags/offset, ID unchanged
            assert before[9] == after[9]
            assert before[12:] == after[12:]  # addresses and payload unchanged
        assert r.drops() == {}


async def test_router_forwards_udp_both_ways(autojump_clock: trio.testing.MockClock) -> None:
    async with open_test_lab() as lab:
        a, _r, b = routed(lab)
        srv = b.socket()
        await srv.bind(("0.0.0.0", 7000))
        cli = a.socket()
        await cli.sendto(b"over the router", ("10.0.2.1", 7000))
        data, (src, sport) = await srv.recvfrom(2048)
        assert data == b"over the router"
        assert src == "10.0.1.1"
        await srv.sendto(data.upper(), (src, sport))
        assert await cli.recvfrom(2048) == (b"OVER THE ROUTER", ("10.0.2.1", 7000))


async def test_ttl_1_gets_time_exceeded_from_the_router(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_test_lab() as lab:
        a, r, b = routed(lab)
        await trio.sleep(1.0)
        cap = a.capture("eth0")
        out: list[str] = []
        res = await a.ping("10.0.2.1", ttl=1, output=out)
        assert res.received == 0
        assert [(e.source, e.error) for e in res.errors] == [
            ("10.0.1.254", "Time to live exceeded")
        ]
        assert "From 10.0.1.254 icmp_seq=1 Time to live exceeded" in out
        assert nstat(r, "IcmpOutTimeExcds") == 1
        assert nstat(r, "IpInHdrErrors") == 1
        assert nstat(r, "IpForwDatagrams") == 0
        assert nstat(b, "IpInReceives") == 0
        # The error on the wire: valid checksums, quoting our echo request.
        errors = [ip for ip, outgoing in ip_frames(cap.frames) if not outgoing]
        assert len(errors) == 1
        err = dpkt.ip.IP(errors[0])
        assert (err.src, err.dst, err.p) == (bytes([10, 0, 1, 254]), bytes([10, 0, 1, 1]), 1)
        assert dpkt.in_cksum(bytes(err.data)) == 0
        assert (err.data.type, err.data.code) == (11, 0)
        quoted = dpkt.ip.IP(bytes(err.data.data)[4:])
        assert quoted.ttl == 1
        assert quoted.dst == bytes([10, 0, 2, 1])
        # TTL 2 is enough.
        assert (await a.ping("10.0.2.1", ttl=2)).received == 1


async def test_ttl_exceeded_right_after_boot(autojump_clock: trio.testing.MockClock) -> None:
    """The very first ICMP error of a host is sent, not rate limited.

    Linux starts jiffies at INITIAL_JIFFIES, so icmp_global_allow()'s first call
    sees a full second since its stamp and refills the burst (regression: with
    jiffies and the stamp both starting at 0, every rate-limited error of a
    host's first 20 ms was dropped).
    """
    async with open_test_lab() as lab:
        a, r, _b = routed(lab)
        res = await a.ping("10.0.2.1", ttl=1)
    assert nstat(r, "IcmpOutRateLimitGlobal") == 0
    assert [e.error for e in res.errors] == ["Time to live exceeded"]


async def test_router_without_a_route_sends_net_unreachable(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_test_lab() as lab:
        a, r, _b = routed(lab)
        await trio.sleep(1.0)
        res = await a.ping("10.9.9.9")
        assert [(e.source, e.error) for e in res.errors] == [
            ("10.0.1.254", "Destination Net Unreachable")
        ]
        assert nstat(r, "IpExtInNoRoutes") == 1
        assert nstat(r, "IcmpOutDestUnreachs") == 1
        assert nstat(r, "IpForwDatagrams") == 0
        assert r.drops() == {"IP_INNOROUTES": 1}
        # A UDP socket connected there learns it (net unreachable is a soft error:
        # reported only with IP_RECVERR).
        sock = a.socket()
        sock.setsockopt(IPPROTO_IP, IP_RECVERR, 1)
        await sock.connect(("10.9.9.9", 53))
        await trio.sleep(1.0)  # the router's per-source ICMP error budget refills
        await sock.send(b"query")
        with pytest.raises(OSError, match="Network is unreachable") as exc:
            with trio.fail_after(1):
                await sock.recv(100)
        assert exc.value.errno == 101
        data, anc, flags, _addr = await sock.recvmsg(100, 1024, MSG_ERRQUEUE)
        assert data == b"query"
        assert flags & MSG_ERRQUEUE
        ee_errno, origin, icmp_type, icmp_code = struct.unpack_from("=IBBB", anc[0][2])
        assert (ee_errno, origin, icmp_type, icmp_code) == (101, 2, 3, 0)


async def test_host_without_a_route_fails_locally(autojump_clock: trio.testing.MockClock) -> None:
    async with open_test_lab() as lab:
        a, _r, _b = routed(lab, default_routes=False)
        cap = a.capture("eth0")
        res = await a.ping("10.0.2.1")
        assert res.received == 0
        assert [e.error for e in res.errors] == ["Network is unreachable"]
        assert nstat(a, "IpOutNoRoutes") == 1
        sock = a.socket()
        with pytest.raises(OSError, match="Network is unreachable"):
            await sock.sendto(b"x", ("10.0.2.1", 9))
        with pytest.raises(OSError, match="Network is unreachable"):
            await sock.connect(("10.0.2.1", 9))
        assert cap.frames == []  # nothing left the host


async def test_no_forwarding_when_ip_forward_is_off(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_test_lab() as lab:
        a, r, b = routed(lab, forward=False)
        await trio.sleep(1.0)
        cap_b = b.capture("eth0")
        res = await a.ping("10.0.2.1", timeout=2.0)
        assert res.received == 0
        assert res.errors == ()  # a host that does not forward stays silent
        assert nstat(r, "IpInAddrErrors") == 1
        assert nstat(r, "IpForwDatagrams") == 0
        assert nstat(r, "IcmpOutMsgs") == 0
        assert r.drops() == {"IP_INADDRERRORS": 1}
        assert cap_b.frames == []
        # The router itself still answers on both of its addresses.
        assert (await a.ping("10.0.1.254")).received == 1
        assert (await a.ping("10.0.2.254")).received == 1  # weak host model
        # Turning forwarding on takes effect at once.
        r.sysctl("net.ipv4.ip_forward=1")
        assert (await a.ping("10.0.2.1")).received == 1
        assert r.sysctl("net.ipv4.ip_forward") == "1"


async def test_icmp_errors_to_one_source_are_rate_limited(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """icmp_ratelimit (1 s) with a burst of 6 per destination, frag-needed exempt."""
    async with open_test_lab() as lab:
        a, r, _b = routed(lab)
        await trio.sleep(1.0)
        res = await a.ping("10.9.9.9", count=10, interval=0.01, timeout=1.0)
        assert res.received == 0
        sent = nstat(r, "IcmpOutDestUnreachs")
        assert sent == len(res.errors)
        assert 1 <= sent < 10
        assert nstat(r, "IpExtInNoRoutes") == 10


async def test_forwarding_route_is_cached_on_the_nexthop_until_the_fib_changes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """ip_route_input_slow finds the nexthop's cached input route (nhc_rth_input) per
    packet and sets it without a reference (skb_dst_set_noref: the cache's is the
    only one); a new rt_genid (``ip route flush cache``, any FIB change) makes the
    next packet build a new one, and a deleted route's cached entry is never
    used again.
    """
    async with open_test_lab() as lab:
        a, r, b = routed(lab)
        ipv4 = ipv4_of(r.net)
        srv = b.socket()
        await srv.bind(("0.0.0.0", 7000))
        cli = a.socket()
        await cli.connect(("10.0.2.1", 7000))

        async def one() -> None:
            await cli.send(b"x")
            assert await srv.recv(100) == b"x"

        await one()
        res = ipv4.fib.lookup(0x0A000201)
        assert res is not None and res.nh is not None
        nh = res.nh
        first = nh.rth_input
        assert first is not None
        assert first.input == ipv4.dst_forward
        assert first.dev is r.dev("eth1")
        used: list[object] = []

        def counted(rt: Rtable) -> None:
            forward = rt.input

            def input(skb: SkBuff) -> object:  # noqa: A001 (dst->input)
                used.append(rt)
                return forward(skb)

            rt.input = input

        counted(first)
        holds = first.holds
        await one()
        await one()
        assert nh.rth_input is first and used == [first, first]  # reused: no new rtable
        assert first.holds == holds and first.refcnt == 1  # no reference per packet
        r.ip("route flush cache")
        await one()
        second = nh.rth_input
        assert second is not None and second is not first
        assert used == [first, first]  # the stale entry is not taken again
        counted(second)
        # The route goes: no route, ICMP net unreachable; it comes back: a new entry.
        r.ip("route del 10.0.2.0/24 dev eth1")
        await cli.send(b"lost")
        await trio.sleep(0.5)
        assert nstat(r, "IpExtInNoRoutes") == 1
        assert nstat(r, "IcmpOutDestUnreachs") == 1
        assert used == [first, first]  # not taken for the unroutable packet
        r.ip("route add 10.0.2.0/24 dev eth1")
        await one()
        res = ipv4.fib.lookup(0x0A000201)
        assert res is not None and res.nh is not None
        nh2 = res.nh
        assert nh2 is not nh
        assert nh2.rth_input is not None and nh2.rth_input not in (first, second)
        assert nstat(r, "IpForwDatagrams") == 5
        assert nstat(b, "UdpInDatagrams") == 5


async def test_forwarding_ignores_a_learnt_pmtu_unless_ip_forward_use_pmtu(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """ip_dst_mtu_maybe_forward(): a router's PMTU exception towards a destination
    does not shrink the MTU it forwards other hosts' packets with
    (``net.ipv4.ip_forward_use_pmtu`` = 0, f87c10a8aa1e); with 1 it does.
    """
    async with open_test_lab() as lab:
        a, r, b = routed(lab)
        ipv4 = ipv4_of(r.net)
        rt = ip_route_output(ipv4, 0x0A000201)
        assert not isinstance(rt, int)
        ip_rt_update_pmtu(ipv4, rt, 0x0A000201, 1000)  # r learnt 1000 towards b
        assert r.sysctl("net.ipv4.ip_forward_use_pmtu") == "0"
        srv = b.socket()
        await srv.bind(("0.0.0.0", 7000))
        cli = a.socket()
        cli.setsockopt(IPPROTO_IP, IP_RECVERR, 1)
        await cli.connect(("10.0.2.1", 7000))
        big = b"\x5a" * 1400  # 1,428 bytes with DF: fits 1500, not 1000
        await cli.send(big)
        with trio.fail_after(1):
            assert await srv.recv(2048) == big
        assert nstat(r, "IpForwDatagrams") == 1
        assert nstat(r, "IpFragFails") == 0
        r.sysctl("net.ipv4.ip_forward_use_pmtu=1")
        await trio.sleep(1.0)
        await cli.send(big)
        await trio.sleep(0.5)
        assert nstat(r, "IpFragFails") == 1
        assert nstat(r, "IcmpOutDestUnreachs") == 1
        assert nstat(r, "IpForwDatagrams") == 1


def test_forwarding_priority_per_tos_byte_is_rt_tos2priority() -> None:
    """ip_forward reads rt_tos2priority() from a table per TOS byte: the same
    priority for every one of the 256 (ECN bits and the low bit ignored)."""
    from netstack.ipv4.ip_input import _TOS_PRIORITY, rt_tos2priority

    assert [_TOS_PRIORITY[tos] for tos in range(256)] == [rt_tos2priority(t) for t in range(256)]
    assert _TOS_PRIORITY[0x10] == 6  # IPTOS_LOWDELAY: TC_PRIO_INTERACTIVE
    assert _TOS_PRIORITY[0x08 | 3] == 2  # IPTOS_THROUGHPUT, CE: TC_PRIO_BULK
