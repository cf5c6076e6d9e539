"""The 6in4 example's capture is Wireshark-clean: outer IPv4 header checksums, inner
ICMPv6 and UDP checksums over the IPv6 pseudo-header all verify, nothing malformed.
Runs tshark when it is installed; skipped otherwise."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

import netstack

TSHARK = shutil.which("tshark")
pytestmark = pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sit_6in4.py"


def test_6in4_capture_dissects_cleanly(tmp_path: Path) -> None:
    assert TSHARK is not None
    spec = importlib.util.spec_from_file_location("example_sit_6in4", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    pcap = tmp_path / "sit.pcap"
    netstack.run(module.main, str(pcap))
    fields = ["_ws.malformed", "ip.checksum.status", "ip.proto", "ipv6.nxt"]
    fields += ["icmpv6.checksum.status", "udp.checksum.status"]
    cmd = [TSHARK, "-r", str(pcap), "-o", "ip.check_checksum:TRUE"]
    cmd += ["-o", "udp.check_checksum:TRUE", "-Y", "ip.proto == 41", "-T", "fields"]
    cmd += ["-E", "separator=|"] + [a for f in fields for a in ("-e", f)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rows = [line.split("|") for line in out.splitlines()]
    assert len(rows) >= 10
    kinds = set()
    for malformed, ip_status, proto, nxt, icmp6_status, udp_status in rows:
        assert malformed == ""
        assert ip_status.split(",")[0] == "1"  # the outer header (and a quoted one) verify
        assert "41" in proto.split(",")  # 6in4, or r's frag-needed quoting a 6in4 header
        kinds.add(nxt.split(",")[0])
        # 1 good; 2 unverified (the truncated packet r's frag-needed quotes); never 0, bad
        if icmp6_status:
            assert icmp6_status.split(",")[0] == ("2" if "," in proto else "1")
        if udp_status:
            assert udp_status.split(",")[0] == "1"
    assert {"58", "17", "44"} <= kinds  # ICMPv6, UDP and fragments inside
