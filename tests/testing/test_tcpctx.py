"""The TCP test context: segments as real bytes (dpkt as oracle), relative numbers, diffs."""

from __future__ import annotations

import struct

import dpkt
import pytest

from netstack.host import Lab
from netstack.testing.tcpctx import (
    PEER_ISS,
    TcpContext,
    linux_synack_options,
    opt_mss,
    opt_nop,
    opt_sack_perm,
    opt_timestamp,
    opt_wscale,
)


def tcp_checksum_ok(ip: dpkt.ip.IP | dpkt.ip6.IP6) -> bool:
    """The TCP checksum over dpkt's own pseudo-header (dpkt recomputes it on bytes())."""
    tcp = ip.data
    raw = bytes(tcp)
    tcp.sum = 0
    ip.data = tcp
    if isinstance(ip, dpkt.ip6.IP6):
        ip.plen = 0  # let dpkt fill it
    else:
        ip.sum = 0  # dpkt fills the TCP checksum only with the IP header's
    fresh = bytes(ip)
    hl = 40 if isinstance(ip, dpkt.ip6.IP6) else ip.hl * 4
    return fresh[hl + 16 : hl + 18] == raw[16:18]


@pytest.mark.parametrize("family", [4, 6])
async def test_segments_are_real_bytes(lab: Lab, autojump_clock: object, family: int) -> None:
    ctx = TcpContext(lab, family=family)
    await ctx.create_connected()
    frame = ctx.build_segment(
        "P.", seq=1, ack=1, window=1000, payload=b"abc", options=[opt_nop(), opt_nop()] * 2
    )
    eth = dpkt.ethernet.Ethernet(frame)
    ip = eth.data
    tcp = ip.data
    assert isinstance(tcp, dpkt.tcp.TCP)
    assert (tcp.sport, tcp.dport) == (40000, ctx.stack_port)
    assert tcp.seq == PEER_ISS + 1
    assert ctx.stack_iss is not None and tcp.ack == ctx.stack_iss + 1
    assert tcp.flags == dpkt.tcp.TH_PUSH | dpkt.tcp.TH_ACK
    assert (tcp.win, tcp.opts, tcp.data) == (1000, b"\x01" * 4, b"abc")
    assert tcp_checksum_ok(ip)
    if family == 4:  # dpkt filled the IP header checksum again too
        assert isinstance(ip, dpkt.ip.IP) and ip.sum == struct.unpack("!H", frame[24:26])[0]
    bad = dpkt.ethernet.Ethernet(ctx.build_segment(".", corrupt_checksum=True)).data
    assert not tcp_checksum_ok(bad)
    with pytest.raises(ValueError, match="options take 3 bytes"):
        ctx.build_segment(".", options=[opt_wscale(7)])


async def test_relative_numbers_and_defaults(lab: Lab, autojump_clock: object) -> None:
    ctx = TcpContext(lab)
    sock = await ctx.create_connected()
    syn, ack = ctx.received
    assert (syn.flags, syn.seq, syn.window) == ("S", 0, 64240)
    assert str(ack) == ". 1:1(0) ack 1 win 64240"
    assert ctx.stack_iss == syn.packet.seq and syn.packet.ack == 0
    await sock.send(b"hello")
    await ctx.expect_segment("P.", seq=1, ack=1, payload=b"hello")
    assert ctx.rcv_nxt == 6
    await ctx.send_segment("P.", payload=b"world")  # seq 1, ack 6: the defaults
    assert ctx.snd_nxt == 6
    await ctx.expect_segment(".", seq=6, ack=6, length=0)
    assert await sock.recv(10) == b"world"


async def test_a_mismatch_names_each_field(lab: Lab, autojump_clock: object) -> None:
    ctx = TcpContext(lab)
    sock = await ctx.create_connected()
    await sock.send(b"x" * 10)
    with pytest.raises(AssertionError) as exc:
        await ctx.expect_segment(".", seq=2, window=100, options="mss *")
    assert str(exc.value) == (
        "segment 3 from the stack differs: P. 1:11(10) ack 1 win 64240\n"
        "  flags    expected ., got P.\n"
        "  seq      expected 2, got 1\n"
        "  win      expected 100, got 64240\n"
        "  options  expected <mss *>, got <>"
    )


async def test_options_matchers(lab: Lab, autojump_clock: object) -> None:
    ctx = TcpContext(lab)
    await ctx.listen()
    syn = [opt_mss(1400), opt_sack_perm(), opt_timestamp(7, 0), opt_nop(), opt_wscale(2)]
    await ctx.send_segment("S", seq=0, options=syn)
    synack = await ctx.expect_segment(
        "S.", seq=0, ack=1, options="mss 1460,sackOK,TS val * ecr 7,nop,wscale *"
    )
    assert synack.options[0] == opt_mss(1460)
    await ctx.send_segment("S", seq=0, options=syn)  # a retransmitted SYN: SYN-ACK again
    with pytest.raises(AssertionError, match="options  expected <mss 1460>"):
        await ctx.expect_segment(options=[opt_mss(1460)])


async def test_expect_no_segment(lab: Lab, autojump_clock: object) -> None:
    ctx = TcpContext(lab)
    sock = await ctx.create_connected()
    await ctx.expect_no_segment(within=10)
    await sock.send(b"x")
    with pytest.raises(AssertionError, match=r"should not have: P\. 1:2"):
        await ctx.expect_no_segment()
    first = ctx.received[-1]
    rtx = await ctx.expect_segment("P.", seq=1, payload=b"x")  # ACKed by nobody: sent again
    # the RTO is TCP_RTO_MIN (the RTT is ~0), the timer fires on a jiffy (1 ms)
    assert rtx.time - first.time == pytest.approx(0.2, abs=1e-3)
    with pytest.raises(AssertionError, match=r"no TCP segment within 0.1 s \(last one: P. 1:2"):
        await ctx.expect_segment(within=0.1)  # the next retransmission is 0.4 s later


@pytest.mark.parametrize("family", [4, 6])
async def test_icmp_errors_are_valid(lab: Lab, autojump_clock: object, family: int) -> None:
    ctx = TcpContext(lab, family=family)
    await ctx.create_connected()
    frame = ctx.build_icmp_error(3 if family == 4 else 2, 4 if family == 4 else 0, seq=1, info=1280)
    ip = dpkt.ethernet.Ethernet(frame).data
    icmp = ip.data
    raw = bytes(icmp)
    icmp.sum = 0
    if family == 4:
        assert isinstance(icmp, dpkt.icmp.ICMP) and (icmp.type, icmp.code) == (3, 4)
        assert bytes(icmp)[2:4] == raw[2:4]  # dpkt's ICMP checksum
        quoted = dpkt.ip.IP(raw[8:])
    else:
        assert isinstance(icmp, dpkt.icmp6.ICMP6) and (icmp.type, icmp.code) == (2, 0)
        ip.plen = 0
        assert bytes(ip)[42:44] == raw[2:4]  # dpkt's ICMPv6 checksum over its pseudo-header
        quoted = dpkt.ip6.IP6(raw[8:])
    assert struct.unpack("!I", raw[4:8])[0] == 1280
    tcp = quoted.data
    assert ctx.stack_iss is not None
    assert (tcp.sport, tcp.dport, tcp.seq) == (ctx.stack_port, 40000, ctx.stack_iss + 1)


async def test_linux_synack_options_echo_the_timestamp(lab: Lab, autojump_clock: object) -> None:
    ctx = TcpContext(lab)
    await ctx.create_connected(options=linux_synack_options)
    syn, ack = ctx.received
    tsval = struct.unpack("!I", syn.options[2].data[:4])[0]
    assert ack.options[2:] == [opt_timestamp(tsval, 1)]  # nop, nop, TS val … ecr 1
    assert ctx.sk.mss_cache == 1460 - 12  # timestamps on


async def test_a_syn_inside_a_connection_takes_no_number(lab: Lab, autojump_clock: object) -> None:
    ctx = TcpContext(lab)
    await ctx.create_connected()
    await ctx.send_segment("S")
    assert ctx.snd_nxt == 1
    await ctx.expect_segment(".", seq=1, ack=1)  # RFC 5961's challenge ACK
