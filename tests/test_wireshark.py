"""Captures are Wireshark-clean: every frame dissects, every checksum verifies.

Runs tshark when it is installed (``apt install tshark``); skipped otherwise.
The dpkt-based checks in tests/integration cover the same ground without it.
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
