"""An address with no host behind it: ARP resolution fails after three probes.

Linux sends ``mcast_solicit`` (3) broadcast requests ``retrans_time`` (1 s)
apart; when the last one times out the neighbour becomes FAILED and every
packet queued on it is reported to its sender with ICMP host unreachable
(``arp_error_report``), which a ping prints as "Destination Host Unreachable"
and a connected UDP socket with IP_RECVERR reads as EHOSTUNREACH.
"""

from __future__ import annotations

import errno
import struct

import dpkt
import pytest
import trio
import trio.testing

from netstack.host import Host
from netstack.ipv4 import ipv4_of
from netstack.neigh.nud import NUD_FAILED, NUD_REACHABLE
from netstack.socket import IP_RECVERR, IPPROTO_IP, MSG_ERRQUEUE
from netstack.testing.builders import nstat, open_test_lab, pair
from netstack.wire.ipv4 import aton

GHOST = "10.0.0.77"


def neigh_state(host: Host, addr: str) -> int | None:
    n = ipv4_of(host.net).arp_tbl.lookup(aton(addr), host.dev("eth0"))
    return None if n is None else n.nud_state


async def test_ping_to_a_missing_host_reports_host_unreachable(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_test_lab() as lab:
        a, b = pair(lab)
        await trio.sleep(1.0)
        cap = a.capture("eth0")
        t0 = trio.current_time()
        out: list[str] = []
        res = await a.ping(GHOST, timeout=10.0, output=out)
        assert res.received == 0
        assert [(e.source, e.error) for e in res.errors] == [
            ("10.0.0.1", "Destination Host Unreachable")
        ]
        assert "From 10.0.0.1 icmp_seq=1 Destination Host Unreachable" in out
        # the error came after three ARP probes, one second apart; ping's own "time" is
        # iputils' last-send-minus-start: 0 ms for one probe
        assert trio.current_time() - t0 == pytest.approx(3.0)
        assert res.time == 0.0
        assert neigh_state(a, GHOST) == NUD_FAILED
        # Three broadcast requests for the ghost, one second apart, and nothing else.
        requests = []
        for ts, frame, outgoing in cap.frames:
            eth = dpkt.ethernet.Ethernet(frame)
            assert eth.type == 0x0806, "only ARP should leave while resolving"
            assert outgoing
            arp = eth.data
            assert eth.dst == b"\xff" * 6
            assert (arp.op, arp.spa, arp.tpa) == (1, bytes([10, 0, 0, 1]), bytes([10, 0, 0, 77]))
            requests.append(ts - t0)
        assert requests == pytest.approx([0.0, 1.0, 2.0])
        assert nstat(a, "IcmpOutDestUnreachs") == 1  # to itself, through lo
        assert nstat(a, "IcmpInDestUnreachs") == 1
        assert a.drops().get("NEIGH_FAILED") == 1
        assert b.nstat().get("IpInReceives", 0) == 0
        # The real neighbour still works …
        assert (await a.ping("10.0.0.2")).received == 1
        assert neigh_state(a, "10.0.0.2") == NUD_REACHABLE
        # … and the failed one is resolved again from scratch on the next attempt.
        t1 = trio.current_time()
        again = await a.ping(GHOST, timeout=10.0)
        assert [e.error for e in again.errors] == ["Destination Host Unreachable"]
        assert trio.current_time() - t1 == pytest.approx(3.0)  # three probes again
        assert neigh_state(a, GHOST) == NUD_FAILED


@pytest.mark.slow
async def test_connected_udp_with_recverr_sees_ehostunreach(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_test_lab() as lab:
        a, _b = pair(lab)
        await trio.sleep(1.0)
        sock = a.socket()
        sock.setsockopt(IPPROTO_IP, IP_RECVERR, 1)
        await sock.connect((GHOST, 5000))
        t0 = trio.current_time()
        await sock.send(b"is anybody there")
        with pytest.raises(OSError) as exc:
            with trio.fail_after(10):
                await sock.recv(100)
        assert exc.value.errno == errno.EHOSTUNREACH
        assert trio.current_time() - t0 == pytest.approx(3.0)
        data, anc, flags, addr = await sock.recvmsg(100, 1024, MSG_ERRQUEUE)
        assert data == b"is anybody there"
        assert flags & MSG_ERRQUEUE
        assert addr == (GHOST, 5000)
        ee_errno, origin, icmp_type, icmp_code = struct.unpack_from("=IBBB", anc[0][2])
        assert (ee_errno, origin, icmp_type, icmp_code) == (errno.EHOSTUNREACH, 2, 3, 1)
        offender = anc[0][2][20:24]  # sin_addr of SO_EE_OFFENDER
        assert offender == bytes([10, 0, 0, 1])
        assert neigh_state(a, GHOST) == NUD_FAILED


async def test_connected_udp_without_recverr_is_not_told(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Host unreachable is a soft error: without IP_RECVERR, Linux does not report it."""
    async with open_test_lab() as lab:
        a, _b = pair(lab)
        await trio.sleep(1.0)
        sock = a.socket()
        await sock.connect((GHOST, 5000))
        await sock.send(b"hello?")
        with trio.move_on_after(10) as scope:
            await sock.recv(100)
        assert scope.cancelled_caught
        assert neigh_state(a, GHOST) == NUD_FAILED
        await sock.send(b"still allowed")  # no pending error
