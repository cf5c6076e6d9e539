"""What a 10,000-host lab holds per host and per ping must not show (issue 18):
slotted sockets and TCP state, wait queues made by the first wait."""

from __future__ import annotations

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


def _pair(lab: netstack.Lab) -> tuple[netstack.Host, netstack.Host]:
    a, b = lab.add_host("a", sysctls=IPV4_ONLY), lab.add_host("b", sysctls=IPV4_ONLY)
    lab.add_link("a:eth0", "b:eth0")
    a.ip("addr add 10.0.0.1/24 dev eth0")
    b.ip("addr add 10.0.0.2/24 dev eth0")
    return a, b


async def test_a_sockets_fields_are_slots_and_its_wait_queues_come_with_the_first_wait(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with netstack.open_lab() as lab:
        a, b = _pair(lab)
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
        sent = 0
        try:
            while True:
                sock.sendto_nowait(b"x" * 20, ("10.0.0.2", 9))
                sent += 1
        except BlockingIOError:
            pass
        assert sent == 7 and _lots(sk) == (False, False)
        await sock.sendto(b"x" * 20, ("10.0.0.2", 9))  # waits for b's NAPI to free a skb
        assert _lots(sk) == (False, True)
        await trio.sleep(0.01)
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
        assert "sysctl_tcp_sack" in Tcp.__slots__ and vars(tcp) == {}
        assert h.sysctl("net.ipv4.tcp_sack") == "1"
        h.sysctl("net.ipv4.tcp_sack=0")
        assert tcp.sysctl_tcp_sack == 0 and vars(tcp) == {}
