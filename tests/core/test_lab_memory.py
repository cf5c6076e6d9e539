"""What a 10,000-host lab holds per host and per ping must not show (issue 18):
slotted sockets and TCP state, wait queues made by the first wait."""

from __future__ import annotations

from typing import Literal

import pytest
import trio
import trio.testing
from helpers import IPV4_ONLY

import netstack
from netstack.core.sock import Sock
from netstack.socket import SO_SNDBUF, SOL_SOCKET
from netstack.tcp import tcp_of
from netstack.tcp.proto import Tcp


def _lots(sk: Sock) -> tuple[bool, bool]:
    """Has the socket a readers' and a writers' wait queue?"""
    return sk._readers is not None, sk._writers is not None


def _parked(sk: Sock) -> bool:
    """May a reader be parked (the flag the wake-up tests)?"""
    return sk._readers_parked


def _pair(
    lab: netstack.Lab, kind: Literal["veth", "nic"] = "veth", rate: float | None = None
) -> tuple[netstack.Host, netstack.Host]:
    a, b = lab.add_host("a", sysctls=IPV4_ONLY), lab.add_host("b", sysctls=IPV4_ONLY)
    lab.add_link("a:eth0", "b:eth0", kind=kind, rate=rate)
    a.ip("addr add 10.0.0.1/24 dev eth0")
    b.ip("addr add 10.0.0.2/24 dev eth0")
    return a, b


@pytest.mark.pure_python_layout(
    "reads Sock.__slots__, which a native class a compiled class derives from has not"
)
async def test_a_sockets_fields_are_slots_and_its_wait_queues_come_with_the_first_wait(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with netstack.open_lab() as lab:
        a, b = _pair(lab, kind="nic", rate=1e6)
        assert (await a.ping("10.0.0.2")).received == 1
        ping_sock = a.socket(2, 2, 1)  # AF_INET, SOCK_DGRAM, IPPROTO_ICMP: what ping makes
        sk = ping_sock.sock
        assert isinstance(sk, Sock) and "__dict__" not in Sock.__slots__
        # only the subclasses' own few fields are left in an instance dictionary
        assert not set(Sock.__slots__) & vars(sk).keys() and len(vars(sk)) < 30
        assert _lots(sk) == (False, False)
        ping_sock.close()

        sock = a.socket()
        sock.setsockopt(SOL_SOCKET, SO_SNDBUF, 0)  # SOCK_MIN_SNDBUF: room for 7 datagrams
        sk = sock.sock
        # over veth each datagram is received inside its sendto (the transmit's
        # local_bh_enable polls b) and veth's skb_orphan has freed its wmem: the
        # buffer never fills. A NIC at 1 Mbit/s holds each skb in its qdisc and ring
        # until the transmit completes (its destructor, sock_wfree): the 8th blocks
        sent = 0
        while sent < 100:  # bounded: no endless loop if it never fills
            try:
                sock.sendto_nowait(b"x" * 20, ("10.0.0.2", 9))
            except BlockingIOError:
                break
            sent += 1
        assert sent == 7 and _lots(sk) == (False, False)
        await sock.sendto(b"x" * 20, ("10.0.0.2", 9))  # waits for a completion to free a skb
        assert _lots(sk) == (False, True)
        await trio.sleep(0.1)
        assert b.snmp()["Udp"].NoPorts == 8

        rx = b.socket()
        await rx.bind(("10.0.0.2", 9))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(rx.recvfrom, 100)
            await trio.testing.wait_all_tasks_blocked()
            assert rx.sock._readers is not None and len(rx.sock._readers) == 1
            await sock.sendto(b"y", ("10.0.0.2", 9))
        assert len(rx.sock._readers) == 0


async def test_tcp_state_is_slotted(autojump_clock: trio.testing.MockClock) -> None:
    async with netstack.open_lab() as lab:
        h = lab.add_host("h")
        tcp = tcp_of(h.net)
        # a native Tcp (the compiled build, tcp/proto.py) has no instance dictionary at all
        assert "sysctl_tcp_sack" in Tcp.__slots__ and getattr(tcp, "__dict__", {}) == {}
        assert h.sysctl("net.ipv4.tcp_sack") == "1"
        h.sysctl("net.ipv4.tcp_sack=0")
        assert tcp.sysctl_tcp_sack == 0 and getattr(tcp, "__dict__", {}) == {}


async def test_ping_keeps_its_state_in_one_object_not_closures(
    autojump_clock: trio.testing.MockClock,
) -> None:
    from netstack.userspace.iputils.ping import ping

    assert ping.__code__.co_cellvars == ()  # no closure over the coroutine's locals
    async with netstack.open_lab() as lab:
        a, _b = _pair(lab)
        out: list[str] = []
        result = await a.ping("10.0.0.2", count=2, output=out)
        assert result.received == 2 and result.pipe == 1
        assert out[1].startswith("64 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=")
        assert out[-2] == "2 packets transmitted, 2 received, 0% packet loss, time 1000ms"
        lost = await a.ping("10.0.0.9", count=1, output=out)
        assert lost.received == 0 and lost.errors[0].error == "Destination Host Unreachable"


async def test_ipv6_handlers_are_bound_methods_of_the_family(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A bound method calls as the partial did (no frame of its own), in a third of
    the memory: a host's IPv6 protocol, dst, offload and ND handlers."""
    from types import MethodType

    from netstack.ipv6 import ipv6_of

    async with netstack.open_lab() as lab:
        a = lab.add_host("a")
        b = lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0")
        a.ip("addr add 2001:db8::1/64 dev eth0 nodad")
        b.ip("addr add 2001:db8::2/64 dev eth0 nodad")
        ipv6 = ipv6_of(a.net)
        bound: list[object] = [ipv6.dst_output, ipv6.dst_local_deliver, ipv6.dst_mc_input]
        bound += [ipv6.dst_forward, ipv6.ip6_pkt_discard, ipv6.ip6_pkt_discard_out]
        bound += [ipv6.ip6_pkt_prohibit, ipv6.ip6_pkt_prohibit_out]
        protos = ipv6.inet6_protos
        bound += [p.handler for nh, p in protos.items() if nh != 6]  # TCP's binds two
        ops = ipv6.nd_tbl.default_ops
        bound += [ops.solicit, ops.error_report]
        assert all(isinstance(f, MethodType) and f.__self__ is ipv6 for f in bound)
        assert len(bound) == 8 + 6 + 2
        result = await a.ping("2001:db8::2", count=2)
        assert result.received == 2
        assert a.snmp6()["Icmp6"].InEchoReplies == 2 and b.snmp6()["Icmp6"].OutEchoReplies == 2


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        ("prohibit", "Destination unreachable: Administratively prohibited"),
        ("unreachable", "Destination unreachable: No route"),
    ],
)
async def test_ipv6_reject_routes_answer_through_the_bound_handlers(
    autojump_clock: trio.testing.MockClock, kind: str, text: str
) -> None:
    async with netstack.open_lab() as lab:
        a, r = lab.add_host("a"), lab.add_host("r", sysctls={"net.ipv6.conf.all.forwarding": 1})
        lab.add_link("a:eth0", "r:eth0")
        a.ip("addr add 2001:db8::1/64 dev eth0 nodad")
        r.ip("addr add 2001:db8::2/64 dev eth0 nodad")
        a.ip("route add 2001:db8:9::/64 via 2001:db8::2")
        r.ip(f"route add {kind} 2001:db8:9::/64")
        out: list[str] = []
        result = await a.ping("2001:db8:9::1", count=1, output=out)
        assert result.received == 0 and [e.error for e in result.errors] == [text]
        assert out[1] == f"From 2001:db8::2 icmp_seq=1 {text}"
        with pytest.raises(OSError) as err:  # r's own output through the route
            await r.socket(10, 2).sendto(b"x", ("2001:db8:9::1", 9))
        assert err.value.errno == (13 if kind == "prohibit" else 101)


async def test_a_wake_up_tests_a_flag_not_the_lot_and_wakes_exactly_whom_the_lot_held(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """sk_data_ready() asks "may anyone be parked?" of a flag a wait sets and the
    wake-up clears (the lot's truth is a Python-level __bool__): every reader
    parked is woken, a cancelled one leaves only a wake-up of an empty lot, and a
    reader that parks after a wake-up is woken by the next datagram."""
    async with netstack.open_lab() as lab:
        a, b = _pair(lab)
        tx = a.socket()
        rx = b.socket()
        await rx.bind(("10.0.0.2", 9))
        sk = rx.sock
        got: list[bytes] = []

        async def reader() -> None:
            got.append(await rx.recv(100))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(reader)
            nursery.start_soon(reader)
            await trio.testing.wait_all_tasks_blocked()
            assert sk._readers is not None and len(sk._readers) == 2 and _parked(sk)
            await tx.sendto(b"1", ("10.0.0.2", 9))
            await tx.sendto(b"2", ("10.0.0.2", 9))
        assert sorted(got) == [b"1", b"2"] and not _parked(sk)

        with trio.move_on_after(1):
            await rx.recv(100)  # parks, then is cancelled: the flag stays set
        assert len(sk._readers) == 0 and _parked(sk)
        await tx.sendto(b"3", ("10.0.0.2", 9))
        await trio.testing.wait_all_tasks_blocked()
        assert not _parked(sk)  # the wake-up found the lot empty
        assert await rx.recv(100) == b"3"  # queued, no wait
        async with trio.open_nursery() as nursery:
            nursery.start_soon(reader)
            await trio.testing.wait_all_tasks_blocked()
            assert _parked(sk)
            await tx.sendto(b"4", ("10.0.0.2", 9))
        assert got[-1] == b"4" and b.snmp()["Udp"].InDatagrams == 4
