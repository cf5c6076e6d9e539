"""Issue #4's acceptance: the qdiscs on real topologies, in virtual time.

tbf shapes a UDP flood to its rate; netem's delay, jitter and loss show in
ping and in counts; duplicate, corrupt and reorder show in captures taken on
both sides of a router; the same seed gives the same capture byte for byte;
fq_codel keeps a sparse flow's latency near nothing where pfifo makes it wait
behind the whole queue; and ``tc -s qdisc show`` adds up against the device.
"""

from __future__ import annotations

import collections
import contextlib
import io
import itertools
import re
import statistics as stats
from pathlib import Path

import dpkt
import pytest
import trio
import trio.testing

import netstack
from netstack.socket import IP_TOS, IPPROTO_IP
from netstack.socket.socket import Socket
from netstack.testing.builders import pair, routed

PAYLOAD = 1000
FRAME = 14 + 20 + 8 + PAYLOAD  # what tbf and the device count per packet


async def receiver(host: netstack.Host, port: int = 9) -> tuple[Socket, list[tuple[float, bytes]]]:
    sock = host.socket()
    await sock.bind(("0.0.0.0", port))
    return sock, []


async def collect(sock: Socket, got: list[tuple[float, bytes]]) -> None:
    while True:
        data = await sock.recv(4096)
        got.append((trio.current_time(), data))


def ip_checksum(header: bytes) -> int:
    total = sum(int.from_bytes(header[i : i + 2], "big") for i in range(0, len(header), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def seq_payload(i: int, size: int = 64) -> bytes:
    return i.to_bytes(4, "big") + b"p" * (size - 4)


# -- tbf --------------------------------------------------------------------------------


async def test_tbf_delivers_a_udp_flood_at_its_rate(
    autojump_clock: trio.testing.MockClock, lab: netstack.Lab
) -> None:
    a, b = pair(lab, kind="nic")
    a.tc("qdisc replace dev eth0 root tbf rate 1mbit burst 32kb latency 50ms")
    assert await a.ping("10.0.0.2")  # ARP resolved: only the flood from here on
    srv, got = await receiver(b)
    cli = a.socket()
    offered = 0
    async with trio.open_nursery() as nursery:
        nursery.start_soon(collect, srv, got)
        t0 = trio.current_time()
        while trio.current_time() - t0 < 12:  # ~1.9 Mbit/s offered into 1 Mbit/s
            for _ in range(23):
                try:
                    cli.sendto_nowait(b"x" * PAYLOAD, ("10.0.0.2", 9))
                    offered += 1
                except OSError:
                    pass
            await trio.sleep(0.1)
        await trio.sleep(0.5)
        nursery.cancel_scope.cancel()
    # 10 virtual seconds once the 32 kB bucket has emptied
    window = [len(d) for t, d in got if t0 + 1 <= t < t0 + 11]
    rate = len(window) * FRAME * 8 / 10
    assert abs(rate - 1_000_000) / 1_000_000 < 0.02, rate
    st = a.dev("eth0").qdisc.statistics()
    # it was a flood: 121 rounds of 23 datagrams offered, 1507 delivered, the rest dropped
    # at tbf's limit; overlimits counts every dequeue that found the bucket short
    # (the watchdog's schedule, exact in virtual time)
    assert (offered, len(got), st.drops, st.qlen, st.overlimits) == (2783, 1507, 1276, 0, 5639)
    # every datagram was sent, dropped or still queued; the rest is the ARP request, the
    # ping and the reply to b's unicast ARP probe when its entry went stale (at 5.2 s)
    assert st.packets + st.drops + st.qlen - offered == 3


# -- netem ------------------------------------------------------------------------------


async def test_netem_delay_and_jitter_in_ping_rtts(
    autojump_clock: trio.testing.MockClock, lab: netstack.Lab
) -> None:
    a, _ = pair(lab)
    assert await a.ping("10.0.0.2")
    a.tc("qdisc add dev eth0 root netem delay 100ms 10ms")
    result = await a.ping("10.0.0.2", count=300, interval=0.05)
    assert result.received == 300
    rtts = [r * 1000 for r in result.rtts]
    # uniform on [90, 110] ms (no distribution table): mean 100, sd 10/sqrt(3)
    assert abs(stats.mean(rtts) - 100) < 1.5
    assert abs(stats.pstdev(rtts) - 10 / 3**0.5) < 1.0
    assert min(rtts) >= 90 and max(rtts) <= 110.5


async def test_netem_distribution_normal_in_ping_rtts(
    autojump_clock: trio.testing.MockClock, lab: netstack.Lab
) -> None:
    a, _ = pair(lab)
    assert await a.ping("10.0.0.2")
    a.tc("qdisc add dev eth0 root netem delay 100ms 10ms distribution normal")
    result = await a.ping("10.0.0.2", count=400, interval=0.05)
    rtts = [r * 1000 for r in result.rtts]
    assert result.received == 400
    assert abs(stats.mean(rtts) - 100) < 1.5
    assert abs(stats.pstdev(rtts) - 10) < 1.5
    within = sum(1 for r in rtts if 90 <= r <= 110) / len(rtts)
    assert 0.61 < within < 0.75  # ±1 sigma of a normal: 68%, not the uniform's 100%
    assert min(rtts) < 85 and max(rtts) > 115


@pytest.mark.slow
async def test_netem_loss_ten_percent_of_ten_thousand(
    autojump_clock: trio.testing.MockClock, lab: netstack.Lab
) -> None:
    a, b = pair(lab)
    assert await a.ping("10.0.0.2")
    a.tc("qdisc add dev eth0 root netem loss 10%")
    srv, got = await receiver(b)
    cli = a.socket()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(collect, srv, got)
        for i in range(10_000):
            cli.sendto_nowait(seq_payload(i, 16), ("10.0.0.2", 9))
            if i % 100 == 99:
                await trio.sleep(0.001)
        await trio.sleep(0.1)
        nursery.cancel_scope.cancel()
    lost = 10_000 - len(got)
    assert 800 <= lost <= 1200, lost
    st = a.dev("eth0").qdisc.statistics()
    assert st.drops == lost and st.packets == len(got)
    out = a.tc("-s qdisc show dev eth0")
    assert f"Sent {st.bytes} bytes {st.packets} pkt (dropped {lost}," in out


async def test_netem_with_a_tbf_child_delays_then_shapes(
    autojump_clock: trio.testing.MockClock, lab: netstack.Lab
) -> None:
    """netem is classful: ``parent 1:1`` grafts a tbf under it. The burst waits
    50 ms in netem, then leaves at tbf's rate; what overflows tbf's limit is
    dropped and counted by both."""
    a, b = pair(lab)
    assert await a.ping("10.0.0.2")
    a.tc("qdisc add dev eth0 root handle 1: netem delay 50ms")
    a.tc("qdisc add dev eth0 parent 1:1 handle 10: tbf rate 1mbit burst 5kb latency 100ms")
    assert a.tc("class show dev eth0").splitlines() == [
        "class netem 1:1 parent 1: leaf 10: ",
        "class tbf 10:1 parent 10: ",
    ]
    srv, got = await receiver(b)
    cli = a.socket()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(collect, srv, got)
        t0 = trio.current_time()
        for _ in range(100):
            cli.sendto_nowait(b"x" * PAYLOAD, ("10.0.0.2", 9))
        await trio.sleep(3)
        nursery.cancel_scope.cancel()
    # tbf's limit: rate * latency + burst = 12,500 + 5,120 bytes: 16 frames of 1042
    assert len(got) == 16
    assert got[0][0] - t0 == pytest.approx(0.050, abs=1e-6)
    gaps = [t2 - t1 for (t1, _), (t2, _) in itertools.pairwise(got[5:])]  # past the burst
    assert all(g == pytest.approx(FRAME * 8 / 1e6, rel=1e-3) for g in gaps)
    netem, tbf = a.dev("eth0").qdisc, a.dev("eth0").qdisc.cl_leaf(1)
    assert tbf is not None
    assert netem.statistics().drops == tbf.statistics().drops == 84


async def _through_router(
    lab: netstack.Lab, netem: str, count: int, *, gap: float = 0.001
) -> tuple[list[bytes], list[bytes], list[tuple[float, bytes]]]:
    """Send *count* numbered datagrams a → b with ``netem NETEM`` on r's egress;
    return the frames r received, the frames r sent, and what b got."""
    a, r, b = routed(lab)
    assert await a.ping("10.0.2.1")
    r.tc(f"qdisc add dev eth1 root {netem}")
    srv, got = await receiver(b)
    cli = a.socket()
    with r.capture("eth0") as rx, r.capture("eth1") as tx:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(collect, srv, got)
            for i in range(count):
                await cli.sendto(seq_payload(i), ("10.0.2.1", 9))
                await trio.sleep(gap)
            await trio.sleep(1)
            nursery.cancel_scope.cancel()
    ins = [f for _, f, out in rx.frames if not out and f[12:14] == b"\x08\x00" and f[23] == 17]
    size = len(ins[0])  # a flipped bit changes no length: match the datagrams by theirs
    outs = [f for _, f, out in tx.frames if out and len(f) == size]
    return ins, outs, got


def _ip_id(frame: bytes) -> int:
    return int.from_bytes(frame[18:20], "big")


def _seq(frame: bytes) -> int:
    return int.from_bytes(frame[42:46], "big")


async def test_netem_duplicate_shows_in_the_capture(
    autojump_clock: trio.testing.MockClock, lab: netstack.Lab
) -> None:
    ins, outs, got = await _through_router(lab, "netem duplicate 30%", 300)
    assert len(ins) == 300
    ids = [_ip_id(f) for f in outs]
    dups = len(ids) - len(set(ids))
    assert 60 <= dups <= 120, dups  # ~30% of 300 sent twice
    assert set(ids) == {_ip_id(f) for f in ins}
    assert len(got) == len(outs)  # b received every copy
    assert r_stats_sent(lab) == len(outs)


def r_stats_sent(lab: netstack.Lab) -> int:
    return lab.host("r").dev("eth1").qdisc.statistics().packets


async def test_netem_corrupt_flips_one_bit_per_packet(
    autojump_clock: trio.testing.MockClock, lab: netstack.Lab
) -> None:
    ins, outs, got = await _through_router(lab, "netem corrupt 100%", 50)
    assert len(ins) == len(outs) == 50
    r, b = lab.host("r"), lab.host("b")
    smac, dmac = r.dev("eth1").dev_addr, b.dev("eth0").dev_addr
    flipped = 0
    for fin, fout in zip(ins, outs, strict=True):
        # what r would have sent uncorrupted: new MACs, TTL - 1, IP checksum redone
        want = bytearray(fin)
        want[0:12] = bytes(dmac) + bytes(smac)
        want[22] -= 1
        want[24:26] = b"\0\0"
        want[24:26] = ip_checksum(bytes(want[14:34])).to_bytes(2, "big")
        diff = int.from_bytes(bytes(x ^ y for x, y in zip(want, fout, strict=True)), "big")
        assert diff.bit_count() == 1
        flipped += 1
    assert flipped == 50
    assert len(got) < 50  # some flips hit headers or payload checksums and are dropped at b


async def test_netem_reorder_sends_some_packets_early(
    autojump_clock: trio.testing.MockClock, lab: netstack.Lab
) -> None:
    _, outs, got = await _through_router(lab, "netem delay 10ms reorder 25%", 200)
    seqs = [_seq(f) for f in outs]
    assert sorted(seqs) == list(range(200))
    # a packet went early when a lower-numbered one comes after it
    later_min = [min(seqs[i + 1 :], default=200) for i in range(len(seqs))]
    early = sum(1 for s, m in zip(seqs, later_min, strict=True) if m < s)
    assert 30 <= early <= 70, early  # about a quarter jump the queue
    assert [int.from_bytes(d[:4], "big") for _, d in got] == seqs


async def _seeded_capture(path: Path, seed: int) -> None:
    async with netstack.open_lab(seed=seed) as lab:
        a, _ = pair(lab)
        assert await a.ping("10.0.0.2")
        a.tc(
            "qdisc add dev eth0 root netem"
            " delay 20ms 5ms loss 5% duplicate 5% corrupt 5% reorder 10% gap 3"
        )
        cli = a.socket()
        with a.capture("eth0", path):
            for i in range(300):
                cli.sendto_nowait(seq_payload(i), ("10.0.0.2", 9))
                await trio.sleep(0.002)
            await trio.sleep(1)


def test_the_same_seed_gives_the_same_capture_byte_for_byte(tmp_path: Path) -> None:
    """Each run starts its own virtual clock at 0, as a script would."""
    captures = []
    for name, seed in (("first", 11), ("again", 11), ("other", 12)):
        path = tmp_path / f"{name}.pcap"
        trio.run(_seeded_capture, path, seed, clock=trio.testing.MockClock(autojump_threshold=0))
        captures.append(path.read_bytes())
    first, again, other = captures
    assert first == again
    assert first != other
    frames = list(dpkt.pcap.Reader(io.BytesIO(first)))
    assert 250 < len(frames) < 350


# -- fq_codel against pfifo -----------------------------------------------------------


async def _sparse_rtts(lab: netstack.Lab, leaf: str) -> tuple[list[float], str]:
    """tbf shapes a veth to 2 Mbit/s with *leaf* as its child qdisc (the usual
    shaper + AQM set-up); UDP floods from four sockets (2.7 Mbit/s offered)
    saturate it while a sparse ping (one probe every 200 ms) crosses it; the
    ping's RTTs in ms. Four sockets, because one UDP socket's send buffer
    alone holds fewer packets than the pfifo's limit, on Linux as here."""
    a, b = pair(lab)
    a.tc("qdisc add dev eth0 root handle 1: tbf rate 2mbit burst 3000 latency 2s")
    a.tc(f"qdisc add dev eth0 parent 1:1 handle 10: {leaf}")
    assert await a.ping("10.0.0.2")
    srv, got = await receiver(b)
    socks = [a.socket() for _ in range(4)]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(collect, srv, got)

        async def flood() -> None:
            while True:
                for sock in socks:  # 320 pps of 1042 B frames
                    for _ in range(4):
                        try:
                            sock.sendto_nowait(b"x" * PAYLOAD, ("10.0.0.2", 9))
                        except OSError:
                            pass
                await trio.sleep(0.05)

        nursery.start_soon(flood)
        await trio.sleep(1.525)  # the standing queue builds up; probes between bursts
        result = await a.ping("10.0.0.2", count=10, interval=0.2, timeout=2)
        nursery.cancel_scope.cancel()
    return [r * 1000 for r in result.rtts], a.tc("-s qdisc show dev eth0")


async def test_fq_codel_keeps_a_sparse_flow_near_target_where_pfifo_does_not(
    autojump_clock: trio.testing.MockClock, lab: netstack.Lab
) -> None:
    fq, fq_out = await _sparse_rtts(lab, "fq_codel")
    async with netstack.open_lab() as lab2:
        fifo, fifo_out = await _sparse_rtts(lab2, "pfifo limit 100")
    # fq_codel (target 5ms): the sparse flow is served first and waits for the
    # bulk packet already leaving the shaper (1042 B at 2 Mbit/s = 4.2 ms) and,
    # at worst, for bulk flows that emptied and came back as new flows too.
    # (Its CoDel sees the whole qdisc's backlog, as in the kernel, so a sparse
    # flow whose sojourn stays above target for an interval is dropped too.)
    assert len(fq) == 10 and max(fq) < 2 * 5.0, fq
    # pfifo: every probe waits behind the full queue, 100 x 1042 B at 2 Mbit/s = 417 ms
    assert len(fifo) == 10 and min(fifo) > 380, fifo
    assert "new_flows_len" in fq_out and "drop_overlimit" in fq_out
    dropped = re.findall(r"dropped (\d+)", fifo_out)
    # the pfifo child overflowed (320 pps offered, 240 pps leave the shaper, 100 queued):
    # 212 drops in this virtual run, which tbf, its parent, counts too
    assert dropped == ["212", "212"]


async def test_fq_codel_marks_ect_flows_and_drops_the_others(
    autojump_clock: trio.testing.MockClock, lab: netstack.Lab
) -> None:
    """Two bulk flows over a 2 Mbit/s tbf + fq_codel: the ECT(0) one comes out
    with CE marks (valid IP checksums: the kernel's incremental update) and
    loses nothing in the qdisc; the Not-ECT one is dropped instead."""
    a, b = pair(lab)
    assert await a.ping("10.0.0.2")
    a.tc("qdisc add dev eth0 root handle 1: tbf rate 2mbit burst 3000 latency 2s")
    a.tc("qdisc add dev eth0 parent 1:1 handle 10: fq_codel")
    srv, got = await receiver(b)
    ect, plain = a.socket(), a.socket()
    ect.setsockopt(IPPROTO_IP, IP_TOS, 0x02)  # ECT(0)
    with b.capture("eth0") as cap:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(collect, srv, got)
            for _ in range(60):  # 2.7 Mbit/s offered
                for _ in range(8):
                    for sock in (ect, plain):
                        with contextlib.suppress(OSError):  # a full send buffer
                            sock.sendto_nowait(b"x" * PAYLOAD, ("10.0.0.2", 9))
                await trio.sleep(0.05)
            await trio.sleep(2)
            nursery.cancel_scope.cancel()
    udp = [f for _, f, _ in cap.frames if f[12:14] == b"\x08\x00" and f[23] == 17]
    ecn = collections.Counter(f[15] & 3 for f in udp)
    assert all(ip_checksum(f[14:34]) == 0 for f in udp)  # a valid header sums to 0
    st = a.dev("eth0").qdisc.cl_leaf(1)
    assert st is not None
    xstats = a.tc("-s qdisc show dev eth0")
    marks = int(re.search(r"ecn_mark (\d+)", xstats).group(1))  # type: ignore[union-attr]
    assert ecn[3] == marks > 50  # CE, each one counted by fq_codel
    assert ecn[0] + st.statistics().drops == 480  # Not-ECT: sent or dropped
    assert st.statistics().drops > 50


# -- pfifo_fast's bands ------------------------------------------------------------


async def test_pfifo_fast_serves_low_delay_tos_before_the_backlog(
    autojump_clock: trio.testing.MockClock, lab: netstack.Lab
) -> None:
    """IPTOS_LOWDELAY (TC_PRIO_INTERACTIVE, band 0) overtakes a best-effort
    backlog (band 1); IPTOS_THROUGHPUT (TC_PRIO_BULK, band 2) waits behind it."""
    a, b = pair(lab, kind="nic", rate=1_000_000)
    assert await a.ping("10.0.0.2")
    srv, got = await receiver(b)
    bulk, fast, slow = a.socket(), a.socket(), a.socket()
    fast.setsockopt(IPPROTO_IP, IP_TOS, 0x10)
    slow.setsockopt(IPPROTO_IP, IP_TOS, 0x08)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(collect, srv, got)
        for i in range(40):
            bulk.sendto_nowait(b"x" * PAYLOAD, ("10.0.0.2", 9))
            if i == 5:
                slow.sendto_nowait(b"slow", ("10.0.0.2", 9))
        fast.sendto_nowait(b"fast", ("10.0.0.2", 9))
        await trio.sleep(1)
        nursery.cancel_scope.cancel()
    order = [d if len(d) < 10 else b"bulk" for _, d in got]
    assert len(order) == 42
    # the first frame was already on the wire (the queue was empty: bypass) and
    # a few more sit in the NIC's ring behind BQL; then band 0 comes first
    assert order.index(b"fast") < 6
    assert order[-1] == b"slow"  # queued early, but in band 2: after all of band 1
    st = a.dev("eth0").qdisc.statistics()
    assert st.packets == 2 + 42  # + ARP and the ping


# -- tc -s adds up ------------------------------------------------------------------


async def test_tc_statistics_add_up_against_the_device(
    autojump_clock: trio.testing.MockClock, lab: netstack.Lab
) -> None:
    a, b = pair(lab, kind="nic")
    a.tc("qdisc add dev eth0 root handle 1: prio")
    a.tc("qdisc add dev eth0 parent 1:1 handle 10: pfifo limit 5")
    srv, got = await receiver(b)
    cli = a.socket()
    ping = await a.ping("10.0.0.2", count=3, interval=0.01)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(collect, srv, got)
        for i in range(200):
            cli.sendto_nowait(seq_payload(i, 200), ("10.0.0.2", 9))
            if i % 20 == 19:
                await trio.sleep(0.001)
        await trio.sleep(0.5)
        nursery.cancel_scope.cancel()
    q = a.dev("eth0").qdisc.statistics()
    dev = a.dev("eth0").statistics()
    assert (q.bytes, q.packets) == (dev.tx_bytes, dev.tx_packets)
    assert q.qlen == 0 and q.backlog == 0
    out = a.tc("-s qdisc show dev eth0")
    assert f"Sent {dev.tx_bytes} bytes {dev.tx_packets} pkt (dropped {q.drops}," in out
    classes = a.tc("-s class show dev eth0")
    sent = [int(x) for x in re.findall(r"Sent (\d+) bytes", classes)]
    pkts = [int(x) for x in re.findall(r"bytes (\d+) pkt", classes)]
    assert sum(sent) == q.bytes and sum(pkts) == q.packets
    assert ping.received == 3 and len(got) + q.drops == 200
