"""IPv6 GSO/TSO on the way out and GRO on the way in, with a real TCPv6 flow.

- TSO on (the NIC's TSO6 engine), TSO off with GSO on (``ipv6_gso_segment`` in
  ``validate_xmit_skb``), both off (TCP builds MSS-sized skbs): the frames on
  the wire are byte-identical (payload lengths, sequence numbers, flags,
  checksums, timestamps) but for PSH, which TCP forces on every skb of more
  than one segment (``__tcp_transmit_skb``) and the cut leaves on its last.
- GRO on a veth (the receiver's NAPI threaded, polled apart from the sender): a
  bulk TCPv6 flow reaches TCP as ~64 KB skbs; the counters say so.
- ``ipv6_gro_receive``'s rules, packet by packet on one NAPI instance: what
  merges, what is another flow, what flushes; and a fuzz of the GRO receive
  path with mutated frames.
"""

from __future__ import annotations

import contextlib
import functools
import struct

import dpkt
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

import netstack
from netstack.core.features import SKB_GSO_TCPV6
from netstack.core.skbuff import CHECKSUM_COMPLETE, SkBuff
from netstack.core.xmit import skb_gso_segment
from netstack.errors import ConfigError
from netstack.gro import GRO_HELD, GRO_MERGED_FREE, GRO_NORMAL, GroNode, gro_statistics
from netstack.host import Host, Lab
from netstack.ipv6.sock import IPV6_DSTOPTS
from netstack.socket import AF_INET6, IPPROTO_IPV6, SOCK_STREAM
from netstack.tcp import TcpSock, tcp_of
from netstack.testing import builders
from netstack.wire.checksum import csum_partial
from netstack.wire.ethernet import ETH_P_IPV6
from netstack.wire.ipv6 import aton as aton6
from netstack.wire.ipv6 import csum_ipv6_magic

PORT = 5302
A6 = "2001:db8::1"
B6 = "2001:db8::2"


def with_psh(frame: bytes, l4: int) -> bytes:
    """*frame* with PSH set in the TCP header at offset *l4*, the checksum
    updated incrementally (RFC 1624: the flags word grows by 0x0008)."""
    b = bytearray(frame)
    if b[l4 + 13] & 0x08:
        return frame
    b[l4 + 13] |= 0x08
    s = (~int.from_bytes(b[l4 + 16 : l4 + 18], "big") & 0xFFFF) + 0x0008
    s = (s & 0xFFFF) + (s >> 16)
    b[l4 + 16 : l4 + 18] = (~s & 0xFFFF).to_bytes(2, "big")
    return bytes(b)


# a (A6) — b (B6) on a NIC cable, IPv6 on, no DAD, seeds 7 and 8
pair6 = functools.partial(builders.pair, kind="nic", family=6, ipv4_only=False, nodad=True, seed=7)


def ethtool(host: Host, cmd: str) -> None:
    with contextlib.suppress(ConfigError):  # "Could not change any device features"
        host.ethtool(cmd)


async def burst6(
    lab: Lab, tso: str, gso: str, dstopts: bytes = b"", mss: int = 1428
) -> tuple[list[bytes], list[bytes]]:
    """One 10-segment write right after the handshake; (sender, receiver) frames."""
    a, b = pair6(lab)
    ethtool(a, f"-K eth0 tso {tso} gso {gso}")
    # with MSS-sized skbs the 1000-byte tail would wait for the NIC's TX
    # completion (autocorking) and leave with a newer TSecr: compare cuts only
    a.sysctl("net.ipv4.tcp_autocorking=0")
    ethtool(b, "-K eth0 gro off")
    await trio.sleep(2)
    srv = b.socket(AF_INET6, SOCK_STREAM)
    await srv.bind(("::", PORT))
    srv.listen(1)
    c = a.socket(AF_INET6, SOCK_STREAM)
    await c.connect((B6, PORT))
    conn, _ = await srv.accept()
    if dstopts:
        c.setsockopt(IPPROTO_IPV6, IPV6_DSTOPTS, dstopts)
    await trio.sleep(1)
    cap_a = a.capture("eth0")
    cap_b = b.capture("eth0")
    payload = bytes(i % 251 for i in range(mss * 9 + 1000))
    await c.sendall(payload)
    got = bytearray()
    while len(got) < len(payload):
        got += await conn.recv(1 << 16)
    assert got == payload
    await trio.sleep(0.01)
    cap_a.stop()
    cap_b.stop()
    sent = [f for _, f, out in cap_a.frames if out]
    rcvd = [f for _, f, out in cap_b.frames if not out and len(f) > 100]
    return sent, rcvd


async def test_v6_segments_are_byte_identical_to_mss_sends(autojump_clock: object) -> None:
    from netstack.host import open_lab

    frames = {}

    async def run(tso: str, gso: str) -> None:
        async with open_lab(debug_skb=True) as lab_m:
            frames[(tso, gso)] = await burst6(lab_m, tso, gso)

    async with trio.open_nursery() as n:
        for tso, gso in (("on", "on"), ("off", "on"), ("off", "off")):
            n.start_soon(run, tso, gso)
    tso_sent, tso_wire = frames[("on", "on")]
    gso_sent, gso_wire = frames[("off", "on")]
    _, mss_wire = frames[("off", "off")]
    hdr = 14 + 40 + 32
    data = [f for f in tso_sent if len(f) > 100]
    assert len(data) == 2 and sum(len(f) - hdr for f in data) == 1428 * 9 + 1000  # TSO skbs
    assert len([f for f in gso_sent if len(f) > 100]) == 10  # cut before the tap
    assert len(mss_wire) == 10
    assert tso_wire == gso_wire
    # PSH on each 5-segment skb (__tcp_transmit_skb) stays on its last segment
    tso_flags = [dpkt.ethernet.Ethernet(f).data.data.flags for f in tso_wire]
    assert [i for i, fl in enumerate(tso_flags) if fl & dpkt.tcp.TH_PUSH] == [4, 9]
    assert tso_wire == [with_psh(f, 14 + 40) if i == 4 else f for i, f in enumerate(mss_wire)]
    pkts = [dpkt.ethernet.Ethernet(f).data for f in mss_wire]
    assert [p.plen for p in pkts] == [32 + 1428] * 9 + [32 + 1000]
    for p in pkts:
        seg = bytes(p)[40:]
        pseudo = p.src + p.dst + struct.pack("!I3xB", len(seg), 6)
        assert dpkt.in_cksum(pseudo + seg) == 0
    seqs = [p.data.seq for p in pkts]
    assert seqs == [(seqs[0] + 1428 * i) & 0xFFFFFFFF for i in range(10)]
    assert len({p.flow for p in pkts}) == 1 and pkts[0].flow  # GSO copies the flow label
    flags = [p.data.flags for p in pkts]
    assert flags[-1] & dpkt.tcp.TH_PUSH and not any(fl & dpkt.tcp.TH_PUSH for fl in flags[:-1])


# a destination options header: next header (rewritten on send), length 1 (16 bytes),
# a PadN of 4 and an unknown option of type 0x1e ("skip if unrecognized") with 8 bytes
DSTOPTS = bytes([0, 1, 1, 2, 0, 0, 0x1E, 8]) + b"netstack"


async def test_v6_gso_with_destination_options(autojump_clock: object) -> None:
    """IPV6_DSTOPTS on a live connection: the MSS shrinks by 16 and every segment
    carries the header; ipv6_gso_segment pulls it (ipv6_gso_pull_exthdrs) and the
    segments equal what TCP sends MSS by MSS, as dpkt reads them."""
    from netstack.host import open_lab

    frames = {}

    async def run(gso: str) -> None:
        async with open_lab(debug_skb=True) as lab_m:
            frames[gso] = await burst6(lab_m, "off", gso, DSTOPTS, mss=1412)

    async with trio.open_nursery() as n:
        for gso in ("on", "off"):
            n.start_soon(run, gso)
    gso_sent, gso_wire = frames["on"]
    _, mss_wire = frames["off"]
    assert len([f for f in gso_sent if len(f) > 100]) == 10
    assert len(mss_wire) == 10
    assert gso_wire == [with_psh(f, 14 + 40 + 16) if i == 4 else f for i, f in enumerate(mss_wire)]
    pkts = [dpkt.ethernet.Ethernet(f).data for f in mss_wire]
    for p in pkts:
        assert p.nxt == 60 and p.p == 6 and isinstance(p.data, dpkt.tcp.TCP)
        raw = bytes(p)
        assert raw[40:56] == bytes([6]) + DSTOPTS[1:]  # next header: TCP
        seg = raw[56 : 40 + p.plen]
        pseudo = p.src + p.dst + struct.pack("!I3xB", len(seg), 6)
        assert dpkt.in_cksum(pseudo + seg) == 0
    assert [p.plen for p in pkts] == [16 + 32 + 1412] * 9 + [16 + 32 + 1000]
    assert max(len(f) for f in mss_wire) == 1514


async def test_gro_aggregates_a_flow_with_destination_options(
    lab: Lab, autojump_clock: object
) -> None:
    """Set before connect: the MSS leaves room from the first segment; GRO pulls the
    destination options (ipv6_gro_pull_exthdrs) and still aggregates the flow; the
    merged skbs reach TCP through ipv6_rcv's destination options parser."""
    a, b = pair6(lab, kind="veth")
    ethtool(a, "-K eth0 tso off gso off")
    b.ethtool("-K eth0 gro on")
    # threaded NAPI on b (its own task, polls_at_bh_enable False); polled at the
    # sender's local_bh_enable, one poll takes one transmit, one MSS-sized skb from
    # sendall: only what the ACK clock sends from softirq shares a poll (4.6 segments
    # an aggregate; test_tcp_gso_gro.py's acceptance test pins napi="softirq")
    b.net.polls_at_bh_enable = False
    await trio.sleep(2)
    srv = b.socket(AF_INET6, SOCK_STREAM)
    await srv.bind(("::", PORT))
    srv.listen(1)
    payload = bytes(range(256)) * 2048  # 512 KiB
    got = bytearray()
    async with trio.open_nursery() as n:

        async def server() -> None:
            conn, _ = await srv.accept()
            while d := await conn.recv(1 << 17):
                got.extend(d)

        n.start_soon(server)
        c = a.socket(AF_INET6, SOCK_STREAM)
        c.setsockopt(IPPROTO_IPV6, IPV6_DSTOPTS, DSTOPTS + b"\0" * 8)  # kept: 16 bytes
        assert c.getsockopt(IPPROTO_IPV6, IPV6_DSTOPTS) == DSTOPTS
        await c.connect((B6, PORT))
        csk = c.sock
        assert isinstance(csk, TcpSock) and csk.icsk_ext_hdr_len == 16
        assert csk.mss_cache == 1440 - 16 - 12
        await c.sendall(payload)
        c.close()
    assert got == payload
    gro = gro_statistics(b.net, "eth0")
    assert gro.merged > len(payload) // 1412 // 2
    assert gro.complete_segs / gro.complete > 5
    assert b.snmp6()["Ip6"].InHdrErrors == 0


async def test_dstopts_sockopt_validation(lab: Lab, autojump_clock: object) -> None:
    a, _ = pair6(lab)
    s = a.socket(AF_INET6, SOCK_STREAM)
    for bad in (b"\0" * 4, b"\0" * 12, bytes([0, 2]) + b"\0" * 14):  # short, odd, too long
        with pytest.raises(OSError) as e:
            s.setsockopt(IPPROTO_IPV6, IPV6_DSTOPTS, bad)
        assert e.value.errno == 22
    s.setsockopt(IPPROTO_IPV6, IPV6_DSTOPTS, DSTOPTS)
    s.setsockopt(IPPROTO_IPV6, IPV6_DSTOPTS, b"")  # RFC 3542: empty removes it
    assert s.getsockopt(IPPROTO_IPV6, IPV6_DSTOPTS) == b""


@pytest.mark.parametrize("sender_gso", ["on", "off"])
async def test_gro_aggregates_a_bulk_tcpv6_flow_over_veth(
    lab: Lab, autojump_clock: object, sender_gso: str
) -> None:
    """With the sender's GSO on, its super-skbs cross the veth whole, each with the
    PSH that TCP forces on a skb of more than one segment (__tcp_transmit_skb), so
    GRO passes them up as they are; with it off, 1428-byte segments are merged one
    by one up to a PSH or the end of a NAPI poll."""
    a, b = pair6(lab, kind="veth")
    ethtool(a, f"-K eth0 tso {sender_gso} gso {sender_gso}")
    b.ethtool("-K eth0 gro on")  # veth does GRO in its NAPI when asked to
    # threaded NAPI on b (its own task, polls_at_bh_enable False): the ring fills
    # while the sender goes on; polled at the sender's local_bh_enable, one poll
    # holds one transmit (test_tcp_gso_gro.py's acceptance test, napi="softirq")
    b.net.polls_at_bh_enable = False
    await trio.sleep(2)
    srv = b.socket(AF_INET6, SOCK_STREAM)
    await srv.bind(("::", PORT))
    srv.listen(1)
    payload = bytes(range(256)) * 8192  # 2 MiB
    got = bytearray()
    in_segs = tcp_of(b.net).mib.InSegs
    async with trio.open_nursery() as n:

        async def server() -> None:
            conn, _ = await srv.accept()
            while d := await conn.recv(1 << 17):
                got.extend(d)

        n.start_soon(server)
        c = a.socket(AF_INET6, SOCK_STREAM)
        await c.connect((B6, PORT))
        csk = c.sock
        assert isinstance(csk, TcpSock) and csk.sk_gso_type == SKB_GSO_TCPV6
        assert (csk.sk_gso_max_segs > 1) == (sender_gso == "on")
        await c.sendall(payload)
        c.close()
    assert got == payload
    gro = gro_statistics(b.net, "eth0")
    if sender_gso == "off":
        assert gro.merged > len(payload) // 1428 // 2  # segment by segment
        assert gro.complete_segs / gro.complete > 10  # aggregates of many segments
    else:
        # every GSO skb carries PSH (a final segment): GRO merges nothing
        assert gro.merged == 0 and gro.received > 10
    skbs = tcp_of(b.net).mib.InSegs - in_segs  # what tcp_v6_rcv was handed
    # large skbs, not 1428-byte segments: the sender's GSO skbs as they are (25 KB
    # on average), or aggregates that a PSH or the end of a NAPI poll close (19 KB)
    assert len(payload) / skbs > (25000 if sender_gso == "on" else 15000)
    rsk = [s for s in tcp_of(b.net).sockets if isinstance(s, TcpSock) and s.data_segs_in]
    # every data segment once (nothing retransmitted): 2 MB in 1428-byte segments is 1469;
    # with the sender's GSO on, three of its skbs ended in a short segment
    assert tcp_of(a.net).snmp()["Tcp"].RetransSegs == 0
    assert rsk and rsk[0].data_segs_in == (1472 if sender_gso == "on" else 1469)


# -- ipv6_gro_receive rules, one packet at a time ------------------------------------


def frame6(
    seq: int,
    payload: bytes = b"x" * 1000,
    *,
    tclass: int = 0,
    flow: int = 0,
    hlim: int = 64,
    src: str = "2001:db8::9",
    dst: str = "2001:db8::2",
    flags: int = dpkt.tcp.TH_ACK,
    trailer: bytes = b"",
    nxt: int = 6,
    pad: int = 0,
) -> bytes:
    s = aton6(src)
    d = aton6(dst)
    tcp = dpkt.tcp.TCP(sport=4000, dport=PORT, seq=seq, ack=1, flags=flags, win=500)
    tcp.data = payload
    raw = bytearray(bytes(tcp))
    raw[16:18] = b"\0\0"
    csum = csum_ipv6_magic(s, d, len(raw), 6, csum_partial(raw, 0, len(raw)))
    raw[16:18] = csum.to_bytes(2, "big")
    body = bytes(raw)
    if nxt in (0, 43, 60):  # a hop-by-hop, routing or destination options header
        body = bytes([6, 0, 1, 4, pad, 0, 0, 0]) + body  # PadN (or its bytes as routing)
    first = (6 << 28) | (tclass << 20) | flow
    hdr = struct.pack("!IHBB", first, len(body), nxt, hlim) + s.to_bytes(16, "big")
    hdr += d.to_bytes(16, "big")
    eth = b"\x02\0\0\0\0\x02" + b"\x02\0\0\0\0\x09" + b"\x86\xdd"
    return eth + hdr + body + trailer


class GroRig:
    """One host with a veth end whose NAPI instance's GRO engine is driven by hand."""

    def __init__(self, lab: Lab) -> None:
        self.h = lab.add_host("h")
        lab.add_host("p")
        lab.add_link("h:eth0", "p:eth0")
        self.h.ip("-6 addr add 2001:db8::2/64 dev eth0 nodad")
        self.h.ethtool("-K eth0 gro on")
        self.dev = self.h.dev("eth0")
        self.napi = self.dev.napi_list[0]
        node = self.napi.gro
        assert isinstance(node, GroNode)
        self.node = node

    def rx(self, frame: bytes) -> int:
        skb = SkBuff(bytearray(64) + bytearray(frame), 64, 64 + len(frame))
        skb.mac_header = 64
        skb.data = 64 + 14
        skb.network_header = skb.data
        skb.protocol = ETH_P_IPV6
        skb.dev = self.dev
        return self.node.receive(self.napi, skb)


async def test_ipv6_gro_rules(lab: Lab, autojump_clock: object) -> None:
    r = GroRig(lab)
    assert r.rx(frame6(1000)) == GRO_HELD
    assert r.rx(frame6(2000)) == GRO_MERGED_FREE  # contiguous, same size: merged
    assert r.rx(frame6(3000, tclass=4)) == GRO_HELD  # traffic class: held one flushed
    assert r.node.statistics().flush_final == 1
    assert r.rx(frame6(4000, tclass=4, flow=7)) == GRO_HELD  # flow label: another flow
    assert r.rx(frame6(5000, tclass=4, hlim=63)) == GRO_HELD  # hop limit: another flow
    assert r.node.held_skbs() == 3
    # a payload length mismatch: delivered alone, and it ends the flow it matches
    assert r.rx(frame6(4000, tclass=4, trailer=b"\0" * 6)) == GRO_NORMAL
    assert r.node.statistics().flush_final == 2
    assert r.rx(frame6(9000, nxt=0)) == GRO_NORMAL  # hop-by-hop: not pulled (since 6.6)
    assert r.rx(frame6(4000, tclass=4, src="2001:db8::8")) == GRO_HELD  # other address
    assert r.rx(frame6(6000, b"y" * 500, tclass=4, hlim=63)) == GRO_MERGED_FREE  # short: ends
    st_ = r.node.statistics()
    assert st_.flush_final == 3 and st_.merged == 2
    bad = bytearray(frame6(5000, tclass=4, flow=7))
    bad[-1] ^= 0xFF  # a bad TCP checksum is never merged
    assert r.rx(bytes(bad)) == GRO_NORMAL
    r.node.flush(r.napi, False)
    assert r.node.held_skbs() == 0


@pytest.mark.parametrize("nxt", [60, 43])
async def test_ipv6_gro_pulls_destination_options_and_routing(
    lab: Lab, autojump_clock: object, nxt: int
) -> None:
    """ipv6_gro_pull_exthdrs: TCP behind a destination options or routing header
    merges; other extension header bytes, or none, are another flow."""
    r = GroRig(lab)
    assert r.rx(frame6(1000, nxt=nxt)) == GRO_HELD
    assert r.rx(frame6(2000, nxt=nxt)) == GRO_MERGED_FREE
    assert r.rx(frame6(3000, nxt=nxt, pad=1)) == GRO_HELD  # other option bytes
    assert r.rx(frame6(3000)) == GRO_HELD  # no extension header
    assert r.node.held_skbs() == 3
    r.node.flush(r.napi, False)
    assert r.node.statistics().merged == 1
    assert r.node.held_skbs() == 0


async def test_ipv6_gro_merges_labelled_flows(lab: Lab, autojump_clock: object) -> None:
    """Automatic flow labels do not stop GRO: same label, same flow (ipv6_gro_receive
    compares the first word under 0xF00FFFFF)."""
    r = GroRig(lab)
    assert r.rx(frame6(1000, flow=0xABCDE)) == GRO_HELD
    assert r.rx(frame6(2000, flow=0xABCDE)) == GRO_MERGED_FREE
    assert r.rx(frame6(3000, flow=0xABCDF)) == GRO_HELD  # a new label: another flow
    assert r.node.held_skbs() == 2


@settings(max_examples=25)  # a lab per example
@given(
    pos=st.lists(st.integers(0, 14 + 40 + 8 + 20 + 40), min_size=1, max_size=4),
    val=st.integers(0, 255),
    cut=st.integers(0, 48),
    nxt=st.sampled_from([6, 60, 43, 0]),
)
@pytest.mark.slow
def test_fuzz_ipv6_gro_receive(pos: list[int], val: int, cut: int, nxt: int) -> None:
    """Mutated or truncated IPv6/TCP frames, with or without an extension header in
    front of TCP (destination options, routing, hop-by-hop), never break the GRO
    engine or the stack."""

    async def main() -> None:
        async with netstack.open_lab() as lab:
            r = GroRig(lab)
            r.rx(frame6(1000, nxt=nxt))
            f = bytearray(frame6(2000, nxt=nxt))
            for p in pos:
                if p < len(f):
                    f[p] = val
            if cut:
                f = f[: 14 + 40 + cut]
            r.rx(bytes(f))
            r.rx(frame6(3000, nxt=nxt))
            r.node.flush(r.napi, False)
            assert r.node.held_skbs() == 0

    trio.run(main)


@pytest.mark.parametrize("tso", ["on", "off"])
async def test_gso_off_builds_mss_skbs(autojump_clock: object, tso: str) -> None:
    """TSO/GSO off: sk_setup_caps gives TCPv6 one-segment skbs; on: GSO skbs."""
    async with netstack.open_lab() as lab:
        a, b = pair6(lab)
        ethtool(a, f"-K eth0 tso {tso} gso {tso}")
        srv = b.socket(AF_INET6, SOCK_STREAM)
        await srv.bind(("::", PORT))
        srv.listen(1)
        c = a.socket(AF_INET6, SOCK_STREAM)
        await c.connect((B6, PORT))
        sk = c.sock
        assert isinstance(sk, TcpSock)
        assert (sk.sk_gso_max_segs > 1) == (tso == "on")


@pytest.mark.pure_python_layout(
    "replaces gro.core.csum_partial, which compiled GRO does not read (it would pass untested)"
)
async def test_checksum_complete_settles_tcp6_without_summing_again(
    lab: Lab, autojump_clock: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A device's CHECKSUM_COMPLETE sum (from the IPv6 header on) minus the header
    (skb_gro_postpull_rcsum) verifies the TCP checksum: GRO sums nothing itself."""
    import netstack.gro.core as gro_core

    r = GroRig(lab)
    frames = [frame6(1000), frame6(2000)]

    def no_sum(*args: object) -> int:
        raise AssertionError("GRO summed the packet again")

    monkeypatch.setattr(gro_core, "csum_partial", no_sum)
    results = []
    for f in frames:
        skb = SkBuff(bytearray(64) + bytearray(f), 64, 64 + len(f))
        skb.mac_header = 64
        skb.data = skb.network_header = 64 + 14
        skb.protocol = ETH_P_IPV6
        skb.dev = r.dev
        skb.ip_summed = CHECKSUM_COMPLETE
        skb.csum = csum_partial(skb.buf, skb.data, skb.tail)
        results.append(r.node.receive(r.napi, skb))
    assert results == [GRO_HELD, GRO_MERGED_FREE]


@pytest.mark.parametrize("test", ["TCP_STREAM", "TCP_RR", "UDP_STREAM"])
async def test_netperf_over_ipv6(lab: Lab, autojump_clock: object, test: str) -> None:
    from netstack.userspace.netperf import netperf

    a, b = pair6(lab, kind="veth")
    await trio.sleep(2)
    if test == "TCP_RR":
        res = await netperf(a, b, B6, test=test, transactions=100)
        assert res.transactions == 100
    else:
        res = await netperf(a, b, B6, test=test, total_bytes=1 << 20, send_size=1024)
        assert res.bytes_received == res.bytes_sent == 1 << 20
    assert res.wall_seconds > 0


def _gso6_skb(dev: object, chain: list[int], payload: bytes, mss: int) -> SkBuff:
    """A TCPv6 GSO skb as dev_queue_xmit sees it: Ethernet, IPv6, the extension
    headers of *chain* (8 bytes each, PadN), TCP, *payload*."""
    s, d = aton6(A6), aton6(B6)
    tcp = struct.pack("!HHIIBBHHH", 5001, PORT, 0xFFFFF000, 7, 5 << 4, 0x18, 512, 0, 0)
    nexts = [*chain[1:], 6] if chain else []
    ext = b"".join(bytes([n, 0, 1, 4, 0, 0, 0, 0]) for n in nexts)
    body = ext + tcp + payload
    hdr = struct.pack("!IHBB", 6 << 28, len(body), chain[0] if chain else 6, 64)
    hdr += s.to_bytes(16, "big") + d.to_bytes(16, "big")
    frame = b"\x02\0\0\0\0\x02\x02\0\0\0\0\x01\x86\xdd" + hdr + body
    headroom = 64
    skb = SkBuff(bytearray(headroom) + frame, headroom, headroom + len(frame))
    skb.mac_header = headroom
    skb.network_header = headroom + 14
    skb.transport_header = headroom + 54 + len(ext)
    skb.protocol = ETH_P_IPV6
    skb.dev = dev  # type: ignore[assignment]
    skb.gso_size = mss
    skb.gso_segs = -(-len(payload) // mss)
    skb.gso_type = SKB_GSO_TCPV6
    return skb


@given(
    chain=st.sampled_from([[], [0], [60], [43], [0, 60], [0, 43, 60], [60, 43]]),
    size=st.integers(2, 5000),
    mss=st.integers(1, 1400),
)
@settings(max_examples=30)
def test_ipv6_gso_segment_pulls_extension_headers(chain: list[int], size: int, mss: int) -> None:
    """ipv6_gso_pull_exthdrs: hop-by-hop, destination options and routing headers
    are copied into every segment; payload lengths count them; TCP checksums
    over the pseudo-header, sequence numbers and flags as dpkt reads them."""
    payload = bytes(i * 13 % 256 for i in range(size))
    if size <= mss:
        mss = max(1, size - 1)
    segs: list[SkBuff] = []

    async def main() -> None:
        async with netstack.open_lab() as lab:
            h = lab.add_host("h")
            s = skb_gso_segment(_gso6_skb(h.dev("lo"), chain, payload, mss), 0)
            while s is not None:
                segs.append(s)
                s = s.next

    netstack.run(main)
    assert len(segs) == -(-size // mss)
    data = b""
    for k, s in enumerate(segs):
        frame = bytes(s.buf[s.data : s.tail])
        p = dpkt.ethernet.Ethernet(frame).data
        assert isinstance(p, dpkt.ip6.IP6) and p.p == 6
        assert p.nxt == (chain[0] if chain else 6) and p.plen == len(frame) - 14 - 40
        raw = bytes(p)
        nexts = [*chain[1:], 6] if chain else []
        assert raw[40 : 40 + 8 * len(chain)] == bytes(
            b for n in nexts for b in (n, 0, 1, 4, 0, 0, 0, 0)
        )
        seg = raw[40 + 8 * len(chain) :]
        pseudo = p.src + p.dst + struct.pack("!I3xB", len(seg), 6)
        assert dpkt.in_cksum(pseudo + seg) == 0
        tcp = dpkt.tcp.TCP(seg)
        assert tcp.seq == (0xFFFFF000 + k * mss) & 0xFFFFFFFF
        assert tcp.flags == (0x18 if k == len(segs) - 1 else 0x10)
        data += tcp.data
    assert data == payload
