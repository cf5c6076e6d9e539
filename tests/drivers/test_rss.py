"""RSS: the Toeplitz hash against the published verification suite, queue choice
on a multi-queue NIC, per-queue NAPI CPUs, and ``ethtool -l/-L/-x/-X/-n/-N/-S``."""

from __future__ import annotations

import ipaddress
import struct

import dpkt
import pytest
import trio
from helpers import IPV4_ONLY

import netstack
from netstack.core.net import PacketType
from netstack.core.skbuff import SkBuff
from netstack.drivers.rss import (
    RSS_INDIR_SIZE,
    RssConfig,
    ethtool_rxfh_indir_default,
    toeplitz,
    toeplitz_tables,
)
from netstack.errors import ConfigError
from netstack.socket import AF_INET, SOCK_DGRAM

# Intel 82599 datasheet §7.1.2.8.3 / Microsoft "Verifying the RSS hash calculation"
MS_KEY = bytes.fromhex(
    "6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa"
)
V4 = [  # src, sport, dst, dport, 2-tuple hash, 4-tuple hash
    ("66.9.149.187", 2794, "161.142.100.80", 1766, 0x323E8FC2, 0x51CCC178),
    ("199.92.111.2", 14230, "65.69.140.83", 4739, 0xD718262A, 0xC626B0EA),
    ("24.19.198.95", 12898, "12.22.207.184", 38024, 0xD2D0A5DE, 0x5C2B394A),
    ("38.27.205.30", 48228, "209.142.163.6", 2217, 0x82989176, 0xAFC7327F),
    ("153.39.163.191", 44251, "202.188.127.2", 1303, 0x5D1809C5, 0x10E828A2),
]
V6 = [
    ("3ffe:2501:200:1fff::7", 2794, "3ffe:2501:200:3::1", 1766, 0x2CC18CD5, 0x40207D3D),
    ("3ffe:501:8::260:97ff:fe40:efab", 14230, "ff02::1", 4739, 0x0F0C461C, 0xDDE51BBF),
    (
        "3ffe:1900:4545:3:200:f8ff:fe21:67cf",
        44251,
        "fe80::200:f8ff:fe21:67cf",
        38024,
        0x4B61E985,
        0x02D1FEEF,
    ),
]


def _frame(src: str, sport: int, dst: str, dport: int, proto: type = dpkt.tcp.TCP) -> bytes:
    """A real frame, built by dpkt."""
    l4 = proto(sport=sport, dport=dport)
    if ":" in src:
        ip6 = dpkt.ip6.IP6(
            src=ipaddress.ip_address(src).packed,
            dst=ipaddress.ip_address(dst).packed,
            nxt=6 if proto is dpkt.tcp.TCP else 17,
            hlim=64,
            data=l4,
        )
        ip6.plen = len(bytes(l4))
        return bytes(dpkt.ethernet.Ethernet(type=0x86DD, data=ip6))
    ip = dpkt.ip.IP(
        src=ipaddress.ip_address(src).packed,
        dst=ipaddress.ip_address(dst).packed,
        p=6 if proto is dpkt.tcp.TCP else 17,
        data=l4,
    )
    return bytes(dpkt.ethernet.Ethernet(type=0x0800, data=ip))


@pytest.mark.parametrize(("src", "sport", "dst", "dport", "h2", "h4"), V4 + V6)
def test_toeplitz_verification_suite(
    src: str, sport: int, dst: str, dport: int, h2: int, h4: int
) -> None:
    addrs = ipaddress.ip_address(src).packed + ipaddress.ip_address(dst).packed
    assert toeplitz(MS_KEY, addrs) == h2
    assert toeplitz(MS_KEY, addrs + struct.pack("!HH", sport, dport)) == h4
    rss = RssConfig(MS_KEY, 4)
    assert rss.hash_frame(_frame(src, sport, dst, dport)) == (h4, True)  # tcp: sdfn
    assert rss.hash_frame(_frame(src, sport, dst, dport, dpkt.udp.UDP)) == (h2, False)  # udp: sd


def test_tables_equal_bitwise_hash() -> None:
    data = bytes(range(7, 43, 1))
    t = toeplitz_tables(MS_KEY, len(data))
    h = 0
    for i, b in enumerate(data):
        h ^= t[i][b]
    assert h == toeplitz(MS_KEY, data)
    with pytest.raises(ValueError, match="at most 36"):
        toeplitz_tables(MS_KEY, 37)


def test_non_ip_fragments_and_tunnels() -> None:
    rss = RssConfig(MS_KEY, 4)
    arp = bytes(dpkt.ethernet.Ethernet(type=0x0806, data=dpkt.arp.ARP()))
    assert rss.hash_frame(arp) == (0, False)
    assert rss.queue_of(0) == 0
    # a fragment hashes on the addresses only
    fr = bytearray(_frame(*V4[0][:4]))
    fr[20] = 0x20  # MF
    assert rss.hash_frame(fr) == (V4[0][4], False)
    # IPIP: the outer protocol is 4, no ports — 2-tuple whatever is inside
    inner = dpkt.ip.IP(src=b"\x0a\x00\x00\x01", dst=b"\x0a\x00\x00\x02", p=6, data=b"x" * 20)
    outer = dpkt.ip.IP(
        src=ipaddress.ip_address(V4[0][0]).packed,
        dst=ipaddress.ip_address(V4[0][2]).packed,
        p=4,
        data=inner,
    )
    ipip = bytes(dpkt.ethernet.Ethernet(type=0x0800, data=outer))
    assert rss.hash_frame(ipip) == (V4[0][4], False)


def test_default_indirection() -> None:
    rss = RssConfig(MS_KEY, 3)
    assert rss.indir == [ethtool_rxfh_indir_default(i, 3) for i in range(RSS_INDIR_SIZE)]
    assert list(rss.spread()) == [43, 43, 42]
    assert rss.queue_of(0x51CCC178) == 0x51CCC178 % 128 % 3


async def _flood(lab: netstack.Lab, ports: range, *, queues: int) -> netstack.Host:
    a = lab.add_host("a", sysctls=IPV4_ONLY)
    b = lab.add_host("b", cpus=4, sysctls=IPV4_ONLY)
    lab.add_link("a:eth0", "b:eth0", kind="nic", rate=1e9, queues=queues)
    a.ip("addr add 10.0.0.1/24 dev eth0")
    b.ip("addr add 10.0.0.2/24 dev eth0")
    rx = b.socket(AF_INET, SOCK_DGRAM)
    await rx.bind(("10.0.0.2", 9000))
    for p in ports:
        s = a.socket(AF_INET, SOCK_DGRAM)
        await s.bind(("10.0.0.1", p))
        await s.sendto(b"x" * 100, ("10.0.0.2", 9000))
        s.close()
    await trio.sleep(0.1)
    rx.close()
    return b


def _queue_packets(host: netstack.Host) -> list[int]:
    stats = {
        line.split(":")[0].strip(): int(line.split(":")[1])
        for line in host.ethtool("-S eth0").splitlines()[1:]
    }
    return [stats[f"rx_queue_{q}_packets"] for q in range(len(host.dev("eth0").priv.rx_rings))]


async def test_queues_default_to_cpus_and_napi_cpus(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a = lab.add_host("a", sysctls=IPV4_ONLY)
    b = lab.add_host("b", cpus=24, sysctls=IPV4_ONLY)
    lab.add_link("a:eth0", "b:eth0", kind="nic")
    assert len(a.dev("eth0").priv.rx_rings) == 1
    napis = b.dev("eth0").priv.napis
    assert len(napis) == 16  # ixgbe caps the default at 16 RSS queues
    assert [n.cpu for n in napis] == list(range(16))
    with pytest.raises(netstack.TopologyError, match="queues"):
        lab.add_link("a:eth1", "b:eth1", queues=2)


async def test_udp_flows_spread_only_with_4tuple(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    ports = range(40000, 40064)
    b = await _flood(lab, ports, queues=4)
    # udp4 hashes on the 2-tuple by default: every datagram on one queue (ARP too: queue 0)
    per_q = _queue_packets(b)
    rss = b.dev("eth0").priv.rss
    key = rss.key
    src = ipaddress.ip_address("10.0.0.1").packed + ipaddress.ip_address("10.0.0.2").packed
    two_tuple = [0] * 4
    two_tuple[0] += 1  # the ARP request: no hash, queue 0
    two_tuple[rss.indir[toeplitz(key, src) % 128]] += 64
    assert per_q == two_tuple == [1, 64, 0, 0]
    b.ethtool("-N eth0 rx-flow-hash udp4 sdfn")
    a = lab.hosts["a"]
    for p in ports:
        s = a.socket(AF_INET, SOCK_DGRAM)
        await s.bind(("10.0.0.1", p))
        await s.sendto(b"y" * 100, ("10.0.0.2", 9000))
        s.close()
    await trio.sleep(0.1)
    after = [n - o for n, o in zip(_queue_packets(b), per_q, strict=True)]
    expected = [0] * 4
    for p in ports:
        h = toeplitz(key, src + struct.pack("!HH", p, 9000))
        expected[rss.indir[h % 128]] += 1
    assert after == expected
    assert after == [16, 16, 16, 16]  # 64 flows over 4 queues: 16 each, with this key


async def test_rx_hash_recorded_in_skb(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    seen: list[tuple[int, bool, int]] = []
    a = lab.add_host("a", sysctls=IPV4_ONLY)
    b = lab.add_host("b", cpus=2, sysctls=IPV4_ONLY)
    lab.add_link("a:eth0", "b:eth0", kind="nic")
    a.ip("addr add 10.0.0.1/24 dev eth0")
    b.ip("addr add 10.0.0.2/24 dev eth0")

    def tap(skb: SkBuff, dev: object, pt: object, orig: object) -> int:
        if skb.protocol == 0x0800:
            seen.append((skb.hash, skb.l4_hash, skb.queue_mapping))
        return 0

    b.net.dev_add_pack(PacketType(3, tap))  # ETH_P_ALL
    await a.ping("10.0.0.2", count=1)
    key = b.dev("eth0").priv.rss.key
    h = toeplitz(key, bytes([10, 0, 0, 1, 10, 0, 0, 2]))
    assert seen and seen[0][0] == h and seen[0][1] is False
    assert seen[0][2] == b.dev("eth0").priv.rss.queue_of(h) + 1  # skb_record_rx_queue


async def test_ethtool_channels_and_rxfh(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    lab.add_host("a", sysctls=IPV4_ONLY)
    b = lab.add_host("b", cpus=4, sysctls=IPV4_ONLY)
    lab.add_link("a:eth0", "b:eth0", kind="nic")
    assert b.ethtool("-l eth0") == (
        "Channel parameters for eth0:\n"
        "Pre-set maximums:\nRX:\t\t64\nTX:\t\t1\nOther:\t\tn/a\nCombined:\tn/a\n"
        "Current hardware settings:\nRX:\t\t4\nTX:\t\t1\nOther:\t\tn/a\nCombined:\tn/a\n"
    )
    x = b.ethtool("-x eth0").splitlines()
    assert x[0] == "RX flow hash indirection table for eth0 with 4 RX ring(s):"
    assert x[1] == "    0:      0     1     2     3     0     1     2     3"
    assert x[17] == "RSS hash key:"
    assert x[18] == ":".join(f"{v:02x}" for v in b.dev("eth0").priv.rss.key)
    assert x[19:23] == ["RSS hash function:", "    toeplitz: on", "    xor: off", "    crc32: off"]
    assert b.ethtool("-L eth0 rx 2") == ""
    assert len(b.dev("eth0").priv.napis) == 2
    assert b.ethtool("-x eth0").splitlines()[1].split()[1:] == ["0", "1"] * 4
    b.ethtool("-X eth0 weight 1 3")
    indir = b.dev("eth0").priv.rss.indir
    assert indir.count(0) == 32 and indir.count(1) == 96
    with pytest.raises(ConfigError, match="too low for existing indirection table"):
        b.ethtool("-L eth0 rx 1")
    b.ethtool("-X eth0 default")
    b.ethtool("-L eth0 rx 1")
    b.ethtool("-X eth0 equal 1")
    for bad, msg in (
        ("-L eth0 rx 65", "netlink error: requested channel count exceeds maximum\n"),
        ("-L eth0 combined 2", "requested channel count exceeds maximum"),
        ("-L eth0 rx 0", "would result in no RX or TX channel"),
        ("-L eth0 rx two", "bad command line argument"),
        ("-X eth0 equal 2", "exceeds the number of RX rings"),
        ("-X eth0 hkey 01:02", "expected size"),
        ("-N eth0 rx-flow-hash tcp4 sd", "Cannot change RX network flow hashing options"),
        ("-N eth0 rx-flow-hash sctp9 sd", "bad command line argument"),
        ("-l eth9", "No such device"),
    ):
        with pytest.raises(ConfigError, match=msg):
            b.ethtool(bad)
    assert b.ethtool("-n eth0 rx-flow-hash udp4") == (
        "UDP over IPV4 flows use these fields for computing Hash flow key:\nIP SA\nIP DA\n"
    )
    with pytest.raises(ConfigError, match="Operation not supported"):
        b.ethtool("-l lo")


def _timed_flows(hashing: str) -> tuple[set[int], set[int]]:
    """4 UDP flows a → b (4 CPUs, 4 queues) in timed mode: (expected CPUs, busy CPUs)."""
    from netstack.cpu.timed import Machine, Thread, TimedModel

    model = TimedModel(Machine())
    expected: set[int] = set()

    async def main() -> None:
        async with netstack.open_lab(timed=model) as lab:
            a, b = (
                lab.add_host("a", cpus=4, sysctls=IPV4_ONLY),
                lab.add_host("b", cpus=4, sysctls=IPV4_ONLY),
            )
            lab.add_link("a:eth0", "b:eth0", kind="nic", rate=10e9)
            a.ip("addr add 10.0.0.1/24 dev eth0")
            b.ip("addr add 10.0.0.2/24 dev eth0")
            for h, peer, addr in ((a, b, "10.0.0.2"), (b, a, "10.0.0.1")):
                mac = ":".join(f"{x:02x}" for x in peer.dev("eth0").dev_addr)
                h.ip(f"neigh add {addr} lladdr {mac} dev eth0 nud permanent")
            b.ethtool(f"-N eth0 rx-flow-hash udp4 {hashing}")
            rx = b.socket(AF_INET, SOCK_DGRAM)
            await rx.bind(("10.0.0.2", 9))
            rss = b.dev("eth0").priv.rss
            socks = []
            for i in range(4):
                s = a.socket()
                await s.bind(("10.0.0.1", 40000 + i))
                socks.append(s.sock)
                tup = bytes([10, 0, 0, 1, 10, 0, 0, 2])
                if hashing == "sdfn":
                    tup += struct.pack("!HH", 40000 + i, 9)
                expected.add(b.dev("eth0").priv.napis[rss.queue_of(toeplitz(rss.key, tup))].cpu)

            def sender(i: int) -> Thread:
                sk = socks[i]
                return Thread(a.net.cpus, i, lambda: sk.sendmsg(b"x" * 200, (0x0A000002, 9), 0), 50)

            with model.measuring():
                await model.run_threads([sender(i) for i in range(4)])
                await trio.sleep(0.01)

    netstack.run(main)
    busy = {c.cpu for c in model.report().cpus if c.host == "b" and c.softirq > 0}
    return expected, busy


@pytest.mark.parametrize("hashing", ["sd", "sdfn"])
def test_timed_receive_runs_on_the_cpu_rss_chose(hashing: str) -> None:
    expected, busy = _timed_flows(hashing)
    assert busy == expected
    assert len(busy) == (1 if hashing == "sd" else 4)


async def test_rx_interrupt_coalescing_batches_napi_polls(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """With rx-usecs 25, frames arriving 1.2 µs apart are polled in batches."""
    a = lab.add_host("a")
    b = lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0", kind="nic", rate=10e9)
    a.ip("addr add 10.0.0.1/24 dev eth0")
    b.ip("addr add 10.0.0.2/24 dev eth0")
    assert b.ethtool("-c eth0").splitlines()[7:9] == ["rx-usecs:\t0", "rx-frames:\tn/a"]
    assert b.ethtool("-C eth0 rx-usecs 25") == ""
    assert b.ethtool("-c eth0").splitlines()[7] == "rx-usecs:\t25"
    await a.ping("10.0.0.2", count=1)  # ARP both ways
    napi = b.dev("eth0").priv.napis[0]
    polls = napi.polls
    rx = b.socket(AF_INET, SOCK_DGRAM)
    await rx.bind(("10.0.0.2", 9))
    s = a.socket(AF_INET, SOCK_DGRAM)
    for _ in range(100):
        await s.sendto(b"x" * 1400, ("10.0.0.2", 9))
    await trio.sleep(0.01)
    # the 100 datagrams, the ARP request, the echo request and a's MLDv2 report (at 2 ms)
    assert b.dev("eth0").stats.rx_packets == 100 + 3
    assert napi.polls - polls == 10  # ten frames a poll (exact in virtual time)
    for bad, msg in (
        ("-C eth0 rx-frames 8", "Operation not supported"),
        ("-C eth0 rx-usecs 5000", "Invalid argument"),
        ("-C eth0 rx-usecs", "bad command line"),
        ("-c lo", "Operation not supported"),
    ):
        with pytest.raises(ConfigError, match=msg):
            b.ethtool(bad)
