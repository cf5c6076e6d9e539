"""Captures are Wireshark-clean: every frame dissects, every checksum verifies.

Runs tshark when it is installed (``apt install tshark``); skipped otherwise.
The dpkt-based checks in tests/host/test_capture.py cover the same ground without it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from netstack.cli.demo import demo

TSHARK = shutil.which("tshark")
pytestmark = pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")


def dissect(path: Path) -> list[list[str]]:
    """One row per frame: malformed?, IP, UDP, ICMP checksum status, ARP opcode,
    IPv6 version, ICMPv6 checksum status."""
    assert TSHARK is not None
    out = subprocess.run(
        [
            TSHARK,
            "-r",
            str(path),
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "udp.check_checksum:TRUE",
            "-T",
            "fields",
            "-E",
            "separator=|",
            "-e",
            "_ws.malformed",
            "-e",
            "ip.checksum.status",
            "-e",
            "udp.checksum.status",
            "-e",
            "icmp.checksum.status",
            "-e",
            "arp.opcode",
            "-e",
            "ipv6.version",
            "-e",
            "icmpv6.checksum.status",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line.split("|") for line in out.splitlines()]


@pytest.mark.slow
def test_demo_captures_are_clean(tmp_path: Path) -> None:
    with open(tmp_path / "out.txt", "w") as out:
        assert demo(pcap_dir=str(tmp_path), out=out) == 0
    pcaps = sorted(tmp_path.glob("*.pcap"))
    assert len(pcaps) == 4
    for pcap in pcaps:
        rows = dissect(pcap)
        assert len(rows) >= 18, pcap
        for n, (malformed, ip, udp, icmp, arp, ipv6, icmpv6) in enumerate(rows, 1):
            where = f"{pcap.name} frame {n}"
            assert not malformed, where
            if arp:
                continue
            if ipv6 == "6":  # the hosts' neighbour discovery (DAD, router solicitations)
                assert (udp.split(",")[0] or icmpv6.split(",")[0]) == "1", where
                continue
            # status 1 = good; ICMP errors also carry the quoted header's fields
            assert ip.split(",")[0] == "1", where
            assert (udp.split(",")[0] or icmp.split(",")[0]) == "1", where


def _tunnel_capture(tmp_path: Path, kind: str, opts: str) -> Path:
    """Ping and a UDP datagram s1 → s2 through a *kind* tunnel; r's capture."""
    import trio
    from helpers import build_sites

    import netstack

    path = tmp_path / f"{kind}.pcap"

    async def main() -> None:
        async with netstack.open_lab() as lab:
            h = build_sites(lab, opts, kind=kind)
            # s1 fills its own UDP checksum: over veth a CHECKSUM_PARTIAL datagram
            # would cross the routers and an IPIP tunnel unfilled (IPIP devices take
            # HW_CSUM), and s2's port unreachable would quote it so, as Linux does
            h["s1"].ethtool("-K eth0 tx off")
            with h["r"].capture("eth0", path):
                await h["s1"].ping("10.2.0.1", count=2)
                s = h["s1"].socket()
                await s.bind(("10.1.0.1", 5000))
                await s.sendto(b"hello" * 10, ("10.2.0.1", 9))
                await trio.sleep(1)

    netstack.run(main)
    return path


@pytest.mark.parametrize(("kind", "opts"), [("gre", "key 42 csum seq"), ("ipip", "ttl 64")])
def test_tunnel_captures_are_clean(tmp_path: Path, kind: str, opts: str) -> None:
    """Outer and inner headers dissect; GRE checksum, key and sequence as configured."""
    assert TSHARK is not None
    pcap = _tunnel_capture(tmp_path, kind, opts)
    fields = ["_ws.malformed", "_ws.expert.severity", "ip.proto", "ip.checksum.status"]
    fields += ["gre.checksum.status", "gre.key", "gre.sequence_number"]
    fields += ["icmp.type", "udp.checksum.status"]
    argv = [TSHARK, "-r", str(pcap), "-o", "ip.check_checksum:TRUE"]
    argv += ["-o", "udp.check_checksum:TRUE", "-T", "fields", "-E", "separator=|"]
    for f in fields:
        argv += ["-e", f]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    rows = [dict(zip(fields, line.split("|"), strict=True)) for line in out.splitlines()]
    tunnelled = [r for r in rows if r["ip.proto"]]
    # 2 echo requests, 2 replies, the datagram, its port unreachable
    assert len(tunnelled) == 6
    seqs = []
    for r in tunnelled:
        assert not r["_ws.malformed"] and not r["_ws.expert.severity"], r
        assert set(r["ip.checksum.status"].split(",")) == {"1"}, r  # outer, inner, quoted
        outer = r["ip.proto"].split(",")[0]
        if kind == "gre":
            assert outer == "47"
            assert r["gre.checksum.status"] == "1" and r["gre.key"] == "0x0000002a", r
            seqs.append(int(r["gre.sequence_number"]))
        else:
            assert outer == "4" and not r["gre.key"], r
    if kind == "gre":  # one sequence per direction: 1, 1, 2, 2, 3, 3
        assert seqs == [1, 1, 2, 2, 3, 3]
    assert tunnelled[4]["udp.checksum.status"] == "1"
    assert tunnelled[5]["icmp.type"].split(",")[0] == "3"
