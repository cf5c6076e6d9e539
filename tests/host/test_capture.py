"""pcap files written by ``host.capture(dev, path)``: readable, complete, checksums right.

Each capture is a tap on one device (both directions). The files must parse
with ``dpkt.pcap.Reader`` (link type Ethernet), hold exactly the frames the
in-memory capture saw, with the host's virtual time as timestamps, and every
IPv4 header, ICMP message and (reassembled) UDP datagram must carry a valid
checksum — including transmitted UDP whose checksum was left to the device
(CHECKSUM_PARTIAL over veth), which the capture fills in as on the wire.
"""

from __future__ import annotations

import struct
from collections import defaultdict
from pathlib import Path
from typing import Literal

import dpkt
import pytest
import trio
import trio.testing

from netstack.host import Host, Lab
from netstack.socket import IP_MTU_DISCOVER, IP_PMTUDISC_DONT, IPPROTO_IP
from netstack.testing.builders import open_test_lab, routed


def routed_for_pcap(lab: Lab, kind: Literal["veth", "nic"]) -> tuple[Host, Host, Host]:
    """a — r — b with IPv6 on (its frames are checked too) and MTU 1000 behind r."""
    if kind == "nic":
        return routed(
            lab,
            kind="nic",
            rate=100e6,
            delay=0.001,
            next_hop={"rate": 10e6, "delay": 0.002, "mtu": 1000},
            ipv4_only=False,
        )
    return routed(lab, next_hop={"mtu": 1000}, ipv4_only=False)


def check_pcap(path: Path) -> tuple[list[tuple[float, bytes]], dict[str, int]]:
    """Read a pcap file, check every checksum; return its frames and what it held."""
    kinds: dict[str, int] = defaultdict(int)
    with path.open("rb") as f:
        reader = dpkt.pcap.Reader(f)
        assert reader.datalink() == dpkt.pcap.DLT_EN10MB
        frames = [(float(ts), bytes(buf)) for ts, buf in reader]
    pending: dict[tuple[bytes, bytes, int, int], list[tuple[int, bytes, bool]]] = defaultdict(list)
    for _, frame in frames:
        eth = dpkt.ethernet.Ethernet(frame)
        if eth.type == 0x0806:
            kinds["arp"] += 1
            assert len(bytes(eth.data)) >= 28
            continue
        if eth.type == 0x86DD:  # the hosts' own IPv6: DAD, router solicitations
            check_ipv6(frame[14:], kinds)
            continue
        assert eth.type == 0x0800, f"unexpected EtherType {eth.type:#x}"
        raw = frame[14:]
        ihl = (raw[0] & 0xF) * 4
        tot = struct.unpack_from("!H", raw, 2)[0]
        assert raw[0] >> 4 == 4
        assert tot <= len(raw)
        assert dpkt.in_cksum(raw[:ihl]) == 0, "bad IP header checksum in the pcap"
        field = struct.unpack_from("!H", raw, 6)[0]
        src, dst, proto = raw[12:16], raw[16:20], raw[9]
        if field & 0x3FFF:  # a fragment: collect, check once complete
            kinds["fragment"] += 1
            key = (src, dst, proto, struct.unpack_from("!H", raw, 4)[0])
            pending[key].append(((field & 0x1FFF) * 8, raw[ihl:tot], bool(field & 0x2000)))
            whole = reassembled(pending[key])
            if whole is not None:
                del pending[key]
                check_l4(src, dst, proto, whole, kinds)
                kinds["reassembled"] += 1
            continue
        check_l4(src, dst, proto, raw[ihl:tot], kinds)
    return frames, dict(kinds)


def check_ipv6(raw: bytes, kinds: dict[str, int]) -> None:
    """An IPv6 packet: dpkt parses it and its ICMPv6 checksum verifies."""
    ip6 = dpkt.ip6.IP6(raw)
    assert raw[0] >> 4 == 6
    plen = struct.unpack_from("!H", raw, 4)[0]
    assert 40 + plen == len(raw), "IPv6 payload length does not match the frame"
    payload = raw[40:]
    if ip6.nxt == 0:  # MLDv2 reports: a hop-by-hop header with the router alert
        assert payload[:8] == bytes.fromhex("3a00050200000100"), "MLD's hop-by-hop header"
        payload = payload[8:]
        assert payload[0] == 143, "only MLDv2 reports carry a hop-by-hop header here"
    else:
        assert ip6.nxt == 58, "only ICMPv6 is expected from these hosts"
    kinds[f"icmp6_{payload[0]}"] += 1
    pseudo = raw[8:40] + struct.pack("!I3xB", len(payload), 58)
    assert dpkt.in_cksum(pseudo + payload) == 0, "bad ICMPv6 checksum in the pcap"


def reassembled(pieces: list[tuple[int, bytes, bool]]) -> bytes | None:
    """The datagram, once its fragments cover it from 0 to the last one."""
    data = b""
    for off, chunk, more in sorted(pieces):
        if off != len(data):
            return None
        data += chunk
        if not more:
            return data
    return None


def check_l4(src: bytes, dst: bytes, proto: int, payload: bytes, kinds: dict[str, int]) -> None:
    if proto == 1:
        kinds[f"icmp{payload[0]}"] += 1
        assert dpkt.in_cksum(payload) == 0, "bad ICMP checksum in the pcap"
    elif proto == 17:
        kinds["udp"] += 1
        ulen = struct.unpack_from("!H", payload, 4)[0]
        check = struct.unpack_from("!H", payload, 6)[0]
        pseudo = src + dst + struct.pack("!BBH", 0, 17, ulen)
        assert check == 0 or dpkt.in_cksum(pseudo + payload[:ulen]) == 0, (
            "bad UDP checksum in the pcap"
        )


@pytest.mark.parametrize("kind", ["veth", "nic"])
async def test_pcap_files_parse_and_carry_valid_checksums(
    autojump_clock: trio.testing.MockClock,
    tmp_path: Path,
    kind: Literal["veth", "nic"],
) -> None:
    async with open_test_lab() as lab:
        a, r, b = routed_for_pcap(lab, kind)
        paths = {
            "a": tmp_path / "a-eth0.pcap",
            "r0": tmp_path / "r-eth0.pcap",
            "r1": tmp_path / "r-eth1.pcap",
            "b": tmp_path / "sub" / "b-eth0.pcap",  # parent directories are created
        }
        caps = {
            "a": a.capture("eth0", paths["a"]),
            "r0": r.capture("eth0", paths["r0"]),
            "r1": r.capture("eth1", paths["r1"]),
            "b": b.capture("eth0", paths["b"], keep=True),
        }
        await trio.sleep(1.0)
        srv = b.socket()
        await srv.bind(("0.0.0.0", 9000))
        cli = a.socket()
        cli.setsockopt(IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DONT)  # no DF: r may fragment
        assert (await a.ping("10.0.2.1", count=2, interval=0.1)).received == 2
        for size in (10, 1400, 3000):  # small, fragmented by the router, by a itself
            await cli.sendto(bytes(size), ("10.0.2.1", 9000))
            with trio.fail_after(5):
                assert len((await srv.recvfrom(4000))[0]) == size
        await cli.sendto(b"closed", ("10.0.2.1", 9))  # port unreachable back to a
        await trio.sleep(0.5)
        assert (await a.ping("10.0.2.1", ttl=1)).errors  # time exceeded from r
        in_memory = list(caps["b"].frames)
        counts = {name: cap.count for name, cap in caps.items()}
        for cap in caps.values():
            cap.stop()
    contents = {name: check_pcap(path) for name, path in paths.items()}
    for name, (frames, _) in contents.items():
        assert len(frames) == counts[name], name
        times = [ts for ts, _ in frames]
        assert times == sorted(times), f"{name}: timestamps go backwards"
    # The file holds what the in-memory copy holds, timestamps included.
    assert [f for _, f, _ in in_memory] == [f for _, f in contents["b"][0]]
    assert [ts for ts, _, _ in in_memory] == pytest.approx([ts for ts, _ in contents["b"][0]])
    kinds_a, kinds_b = contents["a"][1], contents["b"][1]
    assert kinds_a["arp"] == 2
    assert kinds_a["icmp8"] == 3  # two pings and the TTL-1 probe
    assert kinds_a["icmp0"] == 2
    assert kinds_a["icmp3"] == 1  # port unreachable from b
    assert kinds_a["icmp11"] == 1  # time exceeded from r
    # 10, 1400, 3000 (a cut it: reassembled from its fragments here) and "closed"
    assert (kinds_a["udp"], kinds_a["reassembled"]) == (4, 1)
    assert kinds_b["reassembled"] == 2  # 1400 (cut by r) and 3000 (cut by a)
    # 1428 bytes: 2 fragments at MTU 1000; 3028: 3 at 1500, the two full ones cut again
    assert kinds_b["fragment"] == 2 + 5
    # each end of a's link (a and r) also ran DAD for its link-local address (135) and
    # solicited routers (133), and sent its MLDv2 reports at bring-up (143: their
    # schedule, as Linux sends it, is tests/ipv6/test_mld_reports.py's)
    assert (kinds_a["icmp6_135"], kinds_a["icmp6_133"], kinds_a["icmp6_143"]) == (2, 2, 7)
