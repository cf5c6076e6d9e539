# ruff: noqa: E501 - expected output lines read best whole
"""The ``netstack`` command: run, check, decode, draw, demo, through main() and a fresh process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pcap_corpus
import pytest

from netstack.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "demo.toml"


def netstack(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``python -m netstack.cli.main ARGS`` in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "netstack.cli.main", *args],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=120,
        check=False,
    )


def test_run_demo_lab(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(DEMO)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"lab demo ({DEMO}): 3 hosts, 2 links\n")
    assert "PASS  a ping -c 3 b" in out
    assert "PASS  r expect IcmpOutTimeExcds == 1" in out
    assert "7 checks: 7 passed, 0 failed" in out


def test_run_verbose_shows_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "-v", str(DEMO)]) == 0
    out = capsys.readouterr().out
    assert "  r# sysctl -w net.ipv4.ip_forward=1\n  net.ipv4.ip_forward = 1\n" in out
    assert "      --- b ping statistics ---" in out


def test_run_failing_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lab = tmp_path / "lab.toml"
    lab.write_text(
        DEMO.read_text().replace(
            '"b expect eth0.rx_packets >= 3"', '"b expect eth0.rx_packets == 1"'
        )
    )
    assert main(["run", str(lab)]) == 1
    out = capsys.readouterr().out
    assert "FAIL  b expect eth0.rx_packets == 1" in out
    assert ", expected == 1" in out and "examples/demo.toml" not in out and "exit status 1)" in out
    assert "7 checks: 6 passed, 1 failed" in out


def test_run_writes_captures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(DEMO), "--pcap", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.glob("*.pcap")) == [
        "a-eth0.pcap", "b-eth0.pcap", "r-eth0.pcap", "r-eth1.pcap",
    ]  # fmt: skip


def test_check_good_and_bad(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(DEMO)]) == 0
    assert capsys.readouterr().out == f"{DEMO}: OK (3 hosts, 2 links, 0 steps, 7 checks)\n"
    bad = tmp_path / "bad.toml"
    bad.write_text('[hosts.a]\ncommands = ["ip route add 10.0.0.0/8 via 10.1.1.1"]\n')
    assert main(["check", str(bad)]) == 2
    assert capsys.readouterr().err == (
        f"{bad}:2:13: a: ip route add 10.0.0.0/8 via 10.1.1.1: Error: Nexthop has invalid gateway.\n"
    )
    bad.write_text('checks = ["a pingg b", "z ip link", "tc qdisc"]\n[hosts.a]\n')
    assert main(["check", str(bad)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"{bad}:1:11: pingg: command not found",
        f"{bad}:1:24: z: command not found",
        f"{bad}:1:37: tc: which host? (write 'HOST tc …')",
    ]


def test_decode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = pcap_corpus.write(tmp_path / "c.pcap")
    assert main(["decode", str(path), "-c", "2"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        "00:00:00.000123 ARP, Request who-has 10.0.0.2 tell 10.0.0.1, length 28",
        "00:00:00.500123 ARP, Reply 10.0.0.2 is-at 02:00:00:00:00:02, length 28",
    ]
    assert captured.err.startswith(f"reading from file {path}, link-type EN10MB (Ethernet)")
    assert main(["decode", "-t", str(path), "proto", "gre", "-v"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert (
        out[0] == "IP (tos 0x0, ttl 64, id 1, offset 0, flags [none], proto GRE (47), length 108)"
    )
    assert main(["decode", str(tmp_path / "none.pcap")]) == 1
    assert (
        capsys.readouterr().err == f"tcpdump: {tmp_path / 'none.pcap'}: No such file or directory\n"
    )
    assert main(["decode"]) == 2


def test_draw_svg_and_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    svg = tmp_path / "demo.svg"
    assert main(["draw", str(DEMO), "-o", str(svg)]) == 0
    text = svg.read_text()
    assert text.startswith("<svg ") and text.rstrip().endswith("</svg>")
    for item in (
        'id="host-a"',
        'id="host-r"',
        'id="host-b"',
        "10.0.2.254/24",
        "nic, 100 Mbit/s, 5 ms",
    ):
        assert item in text
    assert text.count('class="edge link"') == 2
    import xml.dom.minidom

    xml.dom.minidom.parseString(text)  # well-formed
    png = tmp_path / "demo.png"
    rc = main(["draw", str(DEMO), "-o", str(png)])
    if rc == 0:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    else:  # without the 'draw' extra
        assert "pip install 'netstack[draw]'" in capsys.readouterr().err
    assert main(["draw", str(DEMO), "-o", str(tmp_path / "x.gif")]) == 2


@pytest.mark.slow
def test_fresh_process_commands(tmp_path: Path) -> None:
    """What a user types after `pip install`: subcommands in processes of their own."""
    r = netstack("shell", str(DEMO), "-c", "a ping -c 1 b", "-c", "r nstat IpForw*")
    assert r.returncode == 0, r.stderr
    assert "1 packets transmitted, 1 received" in r.stdout
    assert "IpForwDatagrams                 2" in r.stdout
    r = netstack("shell", str(DEMO), stdin="a ip -br addr show dev eth0\nbogus\nb hostname\n")
    assert r.stdout.split("\n")[0].split() == ["eth0@if2", "UP", "10.0.1.1/24"]
    assert "b\n" in r.stdout and r.stderr == "bogus: command not found\n"


def test_version_and_missing_lab(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.startswith("netstack ")
    assert main(["run", str(tmp_path / "missing.toml")]) == 2
    assert "No such file or directory" in capsys.readouterr().err


def test_experiment_at_the_prompt(capsys: pytest.CaptureFixture[str]) -> None:
    """`experiment` in the shell: the list, usage errors, and a run while the lab's time stands still."""
    assert main(["shell", "--empty", "-c", "experiment", "-c", "help experiment"]) == 0
    out = capsys.readouterr().out
    assert "neigh-confirm  seed 2 (2012): net: output path optimizations" in out
    assert "experiment [--before|--after|--both] [--cpus N] [--json] [--plot FILE] NAME" in out
    assert main(["shell", "--empty", "-c", "experiment bogus"]) == 2
    assert "experiment: argument NAME: invalid choice: 'bogus'" in capsys.readouterr().err
    assert main(["shell", "--empty", "-c", "experiment --cpus 99 neigh-confirm"]) == 2
    assert "experiment: cpus must be 1..24" in capsys.readouterr().err
    line = "experiment --after --cpus 2 --json neigh-confirm"
    assert main(["shell", str(DEMO), "-c", line, "-c", "a ping -c 1 b"]) == 0
    out = capsys.readouterr().out
    assert '"experiment": "neigh-confirm"' in out and "1 packets transmitted, 1 received" in out
