"""The GRE example's capture is Wireshark-clean: outer and inner IPv4, GRE and UDP/ICMP
checksums all verify. Runs tshark when it is installed; skipped otherwise."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

import netstack

TSHARK = shutil.which("tshark")
pytestmark = pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gre_two_sites.py"


@pytest.mark.slow
def test_gre_capture_dissects_cleanly(tmp_path: Path) -> None:
    assert TSHARK is not None
    spec = importlib.util.spec_from_file_location("example_gre_two_sites", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    pcap = tmp_path / "gre.pcap"
    netstack.run(module.main, str(pcap))
    out = subprocess.run(
        [
            TSHARK,
            "-r",
            str(pcap),
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "udp.check_checksum:TRUE",
            "-Y",
            "gre",
            "-T",
            "fields",
            "-E",
            "separator=|",
            "-e",
            "_ws.malformed",
            "-e",
            "ip.checksum.status",
            "-e",
            "gre.key",
            "-e",
            "gre.checksum.status",
            "-e",
            "icmp.checksum.status",
            "-e",
            "udp.checksum.status",
            "-e",
            "icmpv6.checksum.status",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = [line.split("|") for line in out.splitlines()]
    # 7 IPv4 packets, and the router solicitations IPv6 sends on gre1 as it comes up
    assert sum(row[1] == "1,1" for row in rows) == 7
    for malformed, ip_status, key, gre_status, icmp_status, udp_status, icmp6_status in rows:
        assert malformed == ""
        assert int(key, 16) == 42
        assert gre_status == "1"
        if ip_status == "1,1":  # outer and inner header checksums good
            assert "1" in (icmp_status, udp_status)
        else:  # outer IPv4 good, IPv6 inside
            assert ip_status == "1" and icmp6_status == "1"
