"""Two hosts pinging each other over a veth pair and over an emulated NIC cable.

Over ``kind="nic"`` links the round-trip time is exact in virtual time: twice
the propagation delay plus the serialisation of the request and of the reply
(``(max(len, 60) + 24) · 8 / rate`` per frame: preamble, FCS and inter-frame
gap included, short frames padded). The first ping also pays for the ARP
exchange that precedes it.
"""

from __future__ import annotations

import struct

import dpkt
import pytest
import trio
import trio.testing

from netstack.core.dev import dev_close, dev_open
from netstack.drivers.nic import TX_USECS_DEFAULT, RxCsumMode
from netstack.testing.builders import nstat, open_test_lab, pair

ETH_WIRE_OVERHEAD = 24


def serialisation(frame_len: int, rate: float | None) -> float:
    if rate is None:
        return 0.0
    return (max(frame_len, 60) + ETH_WIRE_OVERHEAD) * 8 / rate


async def test_ping_over_veth(autojump_clock: trio.testing.MockClock) -> None:
    async with open_test_lab() as lab:
        a, b = pair(lab)
        cap = b.capture("eth0")
        out: list[str] = []
        res = await a.ping("10.0.0.2", count=3, interval=0.5, output=out)
        assert res.transmitted == 3
        assert res.received == 3
        assert res.loss == 0.0
        assert not res.errors
        assert [r.seq for r in res.replies] == [1, 2, 3]
        assert all(r.ttl == 64 and r.size == 64 and r.source == "10.0.0.2" for r in res.replies)
        assert all(rtt < 1e-6 for rtt in res.rtts)  # veth: no time on the wire
        assert out[0] == "PING 10.0.0.2 (10.0.0.2) 56(84) bytes of data."
        assert "3 packets transmitted, 3 received, 0% packet loss" in out[-2]
        # Counters on both ends
        assert nstat(a, "IcmpOutEchos") == 3
        assert nstat(a, "IcmpInEchoReps") == 3
        assert nstat(b, "IcmpInEchos") == 3
        assert nstat(b, "IcmpOutEchoReps") == 3
        assert nstat(b, "IpInReceives") == 3
        assert nstat(b, "IpInDelivers") == 3
        assert a.drops() == {}
        assert b.drops() == {}
        # What crossed the wire: one ARP exchange, then three echo pairs
        kinds = []
        for _, frame, outgoing in cap.frames:
            eth = dpkt.ethernet.Ethernet(frame)
            if eth.type == 0x0806:
                kinds.append(("arp", eth.data.op, outgoing))
            else:
                ip = eth.data
                assert dpkt.in_cksum(bytes(ip)[: ip.hl * 4]) == 0
                assert dpkt.in_cksum(bytes(ip.data)) == 0
                kinds.append(("icmp", ip.data.type, outgoing))
        assert kinds == [
            ("arp", 1, False),
            ("arp", 2, True),
            *[("icmp", 8, False), ("icmp", 0, True)] * 3,
        ]
        stats_a, stats_b = a.dev("eth0").statistics(), b.dev("eth0").statistics()
        assert stats_a.tx_packets == stats_b.rx_packets == 4
        assert stats_b.tx_packets == stats_a.rx_packets == 4


def first_ping_rtt(rate: float | None, delay: float, size: int) -> float:
    """The first ping's RTT: ARP exchange, then the echo, with BQL's start-up stall.

    Byte Queue Limits start at 0 (kernel: dql_reset, min_limit 0), so after a NIC's
    first frame its queue stays stopped until that frame's TX completion, which the
    interrupt coalescing fires ``tx_usecs`` after the frame has gone out. A frame
    queued meanwhile (a's echo request behind its ARP request, b's echo reply behind
    its ARP reply) leaves at that completion.
    """
    s_arp = serialisation(42, rate)
    s_echo = serialisation(14 + 20 + 8 + size, rate)
    a_out = max(2 * s_arp + 2 * delay, s_arp + TX_USECS_DEFAULT)
    at_b = a_out + s_echo + delay
    b_out = max(at_b, (s_arp + delay) + s_arp + TX_USECS_DEFAULT)
    return b_out + s_echo + delay


@pytest.mark.parametrize(
    ("rate", "delay", "size"),
    [
        (10e6, 0.005, 56),  # 10 Mbit/s, 5 ms
        (1e6, 0.001, 1400),  # a slow link: serialisation dominates
        (None, 0.002, 56),  # no rate limit: propagation only
        (100e6, 0.000_5, 0),  # the smallest echo: padded to 60 bytes on the wire
        (1e9, 0.0, 56),  # the ARP exchange is faster than a's first TX completion …
        (100e6, 0.000_01, 56),  # … and here b's too
    ],
)
async def test_ping_rtt_over_nic_is_twice_the_delay_plus_serialisation(
    autojump_clock: trio.testing.MockClock, rate: float | None, delay: float, size: int
) -> None:
    async with open_test_lab() as lab:
        a, b = pair(lab, kind="nic", rate=rate, delay=delay)
        res = await a.ping("10.0.0.2", count=4, interval=0.5, size=size)
        assert res.received == 4
        frame = 14 + 20 + 8 + size
        echo_rtt = 2 * delay + 2 * serialisation(frame, rate)
        arp_rtt = 2 * delay + 2 * serialisation(42, rate)
        assert res.rtts[0] == pytest.approx(first_ping_rtt(rate, delay, size), rel=1e-9)
        if arp_rtt > serialisation(42, rate) + TX_USECS_DEFAULT:  # no stall: simply both
            assert res.rtts[0] == pytest.approx(arp_rtt + echo_rtt, rel=1e-9)
        assert res.rtts[1:] == pytest.approx([echo_rtt] * 3, rel=1e-9, abs=1e-12)
        await trio.sleep(0.001)  # tx_packets counts at TX completion (coalesced)
        assert a.dev("eth0").statistics().tx_packets == 5  # ARP request + 4 echoes
        assert b.dev("eth0").statistics().rx_packets == 5


async def test_ping_over_nic_with_checksum_offload_modes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Every RX checksum report the NIC can give leads to the same, valid, exchange."""
    modes: tuple[RxCsumMode, ...] = ("unnecessary", "complete", "none")
    for rx_csum in modes:
        async with open_test_lab() as lab:
            a, b = pair(lab, kind="nic", rate=1e9, delay=0.001, rx_csum=rx_csum)
            cap = a.capture("eth0")
            res = await a.ping("10.0.0.2", count=2, size=1000)
            assert res.received == 2, rx_csum
            assert nstat(b, "IcmpInCsumErrors") == 0
            for _, frame, _ in cap.frames:
                eth = dpkt.ethernet.Ethernet(frame)
                if eth.type == 0x0800:
                    raw = bytes(eth.data)
                    tot = struct.unpack_from("!H", raw, 2)[0]
                    assert dpkt.in_cksum(raw[:20]) == 0
                    assert dpkt.in_cksum(raw[20:tot]) == 0


async def test_ping_survives_a_link_that_goes_down_and_up(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Linux drops what is sent while the carrier is off (noop qdisc) and carries on.

    (Regression: dequeue_skb asserted on the noop qdisc's missing tx queue, and the
    AssertionError ended the lab.)
    """
    async with open_test_lab() as lab:
        a, b = pair(lab, kind="nic", rate=1e8, delay=0.001)
        before = await a.ping("10.0.0.2")
        dev_close(b.dev("eth0"))  # a's NIC loses its carrier
        during = await a.ping("10.0.0.2", timeout=2.0)
        dev_open(b.dev("eth0"))
        await trio.sleep(1.0)
        after = await a.ping("10.0.0.2", count=2)
    assert before.received == 1
    assert during.received == 0
    assert after.received == 2


async def test_nic_frame_sent_before_the_previous_tx_completion_arrives_on_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A frame posted while the previous one still awaits its (coalesced) TX completion
    reaches the far end after its own serialisation, not at that completion.

    (Regression: the wire task was woken only when the TX ring was empty, so such a
    frame waited up to tx_usecs = 50 us.)
    """
    async with open_test_lab() as lab:
        a, b = pair(lab, kind="nic", rate=1e9, delay=0.0)
        srv = b.socket()
        await srv.bind(("0.0.0.0", 9))
        cli = a.socket()
        for _ in range(30):  # warm up: resolve ARP, let BQL's limit grow past one frame
            await cli.sendto(bytes(100), ("10.0.0.2", 9))
        await trio.sleep(0.01)
        cap = b.capture("eth0")
        sent = []
        for gap in (0.0, 10e-6, 10e-6):  # each well inside the previous tx_usecs window
            await trio.sleep(gap)
            sent.append(trio.current_time())
            await cli.sendto(bytes(100), ("10.0.0.2", 9))
        await trio.sleep(0.001)
        arrived = [ts for ts, _, outgoing in cap.frames if not outgoing]
    wire = serialisation(14 + 20 + 8 + 100, 1e9)
    assert arrived == pytest.approx([t + wire for t in sent], rel=1e-9)
