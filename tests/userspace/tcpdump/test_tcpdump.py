"""tcpdump's printer, filter and command line, against the real tcpdump where installed.

The crafted corpus (tests/pcap_corpus.py) covers every header the printer
knows — ARP, ICMP errors quoting their datagram, IPv4 fragments, TCP with
options and relative sequence numbers, IPv6 with ND, GRE in its variants,
gretap, IPIP, 6in4, VLAN, an unknown ethertype, a truncated frame. With
tcpdump installed, netstack's output must equal tcpdump's line for line for
each flag set; golden lines keep the main cases checked without it.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import pcap_corpus
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netstack.errors import ConfigError
from netstack.userspace.tcpdump.tcpdump import Dumper, parse_tcpdump_args, read_pcap
from netstack.userspace.tcpdump.tcpdump_filter import compile_filter, dissect
from netstack.userspace.tcpdump.tcpdump_print import Printer, format_timestamp

TCPDUMP = shutil.which("tcpdump")
needs_tcpdump = pytest.mark.skipif(TCPDUMP is None, reason="tcpdump is not installed")
FUZZ = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)


def ours(path: Path, flags: list[str]) -> list[str]:
    opts = parse_tcpdump_args([*flags, "-r", str(path)])
    lines: list[str] = []
    dumper = Dumper(opts, lines.append)
    _head, frames = read_pcap(path)
    for ts, data, wirelen in frames:
        dumper.frame(ts, data, wirelen)
        if dumper.done:
            break
    return "\n".join(lines).split("\n") if lines else []


def theirs(path: Path, flags: list[str]) -> list[str]:
    assert TCPDUMP is not None
    out = subprocess.run(
        [TCPDUMP, "-nn", "-r", str(path), *flags],
        capture_output=True,
        text=True,
        env={**os.environ, "TZ": "UTC"},
        check=False,
    ).stdout
    return out.rstrip("\n").split("\n") if out.strip() else []


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pcap_corpus.write(tmp_path_factory.mktemp("corpus") / "corpus.pcap")


FLAG_SETS = [[], ["-v"], ["-vv"], ["-e"], ["-q"], ["-e", "-v"], ["-q", "-v"], ["-x"], ["-xx"],
             ["-X"], ["-t"], ["-tt"], ["-ttt"], ["-tttt"], ["-ttttt"], ["-S"], ["-c", "5"],
             ["-e", "-vv", "-X"]]  # fmt: skip


@needs_tcpdump
@pytest.mark.parametrize("flags", FLAG_SETS, ids=lambda f: " ".join(f) or "plain")
def test_printer_matches_tcpdump(corpus: Path, flags: list[str]) -> None:
    assert ours(corpus, flags) == theirs(corpus, flags)


FILTERS = ["icmp", "arp", "udp", "tcp", "ip6", "icmp6", "not ip", "host 10.0.0.254",
           "src host 10.0.0.2", "dst 2001:db8::1", "port 9000", "udp port 9000 or 9001",
           "tcp and dst port 9000", "proto gre", "ip proto 4", "net 192.0.2.0/24",
           "src net 10.0.0.0/24 and not icmp", "(icmp or arp) and host 10.0.0.1",
           "greater 200", "less 60", "vlan", "vlan 100", "ether host 02:00:00:00:00:01",
           "ether dst ff:ff:ff:ff:ff:ff", "portrange 1000-2000", "ip6 and udp",
           "host 10.0.0.1 or 10.0.0.254", "! arp && ! ip", "ip proto \\icmp"]  # fmt: skip


@needs_tcpdump
@pytest.mark.parametrize("expr", FILTERS)
def test_filter_matches_tcpdump(corpus: Path, expr: str) -> None:
    assert ours(corpus, [expr]) == theirs(corpus, [expr])


GOLDEN = {
    0: "ARP, Request who-has 10.0.0.2 tell 10.0.0.1, length 28",
    2: "IP 10.0.0.1 > 10.0.0.2: ICMP echo request, id 1, seq 1, length 64",
    4: "IP 10.0.0.1.40000 > 10.0.0.2.9000: UDP, length 200",
    5: "IP 10.0.0.2 > 10.0.0.1: ICMP 10.0.0.2 udp port 9000 unreachable, length 36",
    11: "IP 10.0.0.254 > 10.0.0.1: ICMP 10.0.0.2 unreachable - need to frag (mtu 1400), length 36",
    12: "IP 10.0.0.254 > 10.0.0.1: ICMP time exceeded in-transit, length 36",
    16: "IP 10.0.0.1 > 10.0.0.2: ip-proto-17",
    18: "IP 10.0.0.1.40000 > 10.0.0.2.9000: Flags [S], seq 1000, win 64240, "
    "options [mss 1460,sackOK,TS val 1 ecr 0,nop,wscale 7], length 0",
    22: "IP 10.0.0.2.9000 > 10.0.0.1.40000: Flags [R], seq 5001, win 0, length 0",
    25: "IP6 2001:db8::1 > ff02::1:ff00:2: ICMP6, neighbor solicitation, who has 2001:db8::2, "
    "length 32",
    33: "IP 192.0.2.1 > 192.0.2.2: GREv0, length 88: IP 10.1.0.1 > 10.2.0.1: "
    "ICMP echo request, id 1, seq 1, length 64",
    34: "IP 192.0.2.1 > 192.0.2.2: GREv0, key=0x2a, length 92: IP 10.1.0.1 > 10.2.0.1: "
    "ICMP echo request, id 1, seq 1, length 64",
    39: "IP 192.0.2.1 > 192.0.2.2: IP 10.1.0.1 > 10.2.0.1: ICMP echo request, id 1, seq 1, "
    "length 64",
    40: "IP 192.0.2.1 > 192.0.2.2: IP6 2001:db8::1 > 2001:db8::2: ICMP6, echo request, id 7, "
    "seq 1, length 64",
    44: "IP  [|ip]",
}


def test_golden_lines() -> None:
    frames = pcap_corpus.frames()
    printer = Printer(tstyle=1)
    lines = [printer.packet(0.0, f) for f in frames]
    for i, want in GOLDEN.items():
        assert lines[i] == want, i
    # relative TCP sequence numbers after the handshake, as tcpdump prints them
    assert ", seq 1:15, ack 1, win 502, length 14" in lines[20]


def test_verbose_ip_and_quoted_datagram() -> None:
    frames = pcap_corpus.frames()
    text = Printer(tstyle=1, verbose=1).packet(0.0, frames[5])
    assert text.split("\n") == [
        "IP (tos 0x0, ttl 64, id 1, offset 0, flags [none], proto ICMP (1), length 56)",
        "    10.0.0.2 > 10.0.0.1: ICMP 10.0.0.2 udp port 9000 unreachable, length 36",
        "\tIP (tos 0x0, ttl 64, id 1, offset 0, flags [none], proto UDP (17), length 228)",
        "    10.0.0.1.40000 > 10.0.0.2.9000: UDP, length 200",
    ]


def test_timestamps() -> None:
    assert format_timestamp(3723.000123, 0, None, None) == "01:02:03.000123 "
    assert format_timestamp(1.5, 2, None, None) == "1.500000 "
    assert format_timestamp(1.5, 3, 1.0, 0.0) == " 00:00:00.500000 "
    assert format_timestamp(1.5, 4, None, None) == "1970-01-01 00:00:01.500000 "
    assert format_timestamp(1.5, 5, 1.4, 0.5) == " 00:00:01.000000 "
    assert format_timestamp(1.5, 1, None, None) == ""


def test_netstack_capture_decodes_like_tcpdump(tmp_path: Path) -> None:
    from netstack.cli.demo import demo

    with open(tmp_path / "out.txt", "w") as out:
        assert demo(pcap_dir=str(tmp_path), out=out) == 0
    lines = ours(tmp_path / "r-eth1.pcap", ["-t"])
    assert lines[:3] == [
        "ARP, Request who-has 10.0.2.2 tell 10.0.2.254, length 28",
        "ARP, Reply 10.0.2.2 is-at 02:b7:04:9f:cb:8e, length 46",
        "IP 10.0.1.1 > 10.0.2.2: ICMP echo request, id 1, seq 1, length 64",
    ]
    assert "IP 10.0.2.2 > 10.0.1.1: ICMP 10.0.2.2 udp port 9999 unreachable, length 43" in lines
    if TCPDUMP is not None:
        for name in ("a-eth0", "r-eth0", "r-eth1", "b-eth0"):
            for flags in ([], ["-v"], ["-e"]):
                assert ours(tmp_path / f"{name}.pcap", flags) == theirs(
                    tmp_path / f"{name}.pcap", flags
                )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-k"], "tcpdump: invalid option -- 'k'"),
        (["-c"], "tcpdump: option requires an argument -- 'c'"),
        (["-c", "x"], "tcpdump: invalid packet count x"),
        (["-c", "0"], "tcpdump: invalid packet count 0"),
        (["-Q", "sideways"], "tcpdump: unknown capture direction 'sideways'"),
        (["--bogus"], "tcpdump: unrecognized option '--bogus'"),
    ],
)
def test_option_errors(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_tcpdump_args(argv)
    assert str(info.value).split("\n")[0] == message


def test_options_permute_like_gnu_getopt() -> None:
    opts = parse_tcpdump_args(["icmp", "-c", "3", "and", "-vn", "host", "10.0.0.1", "-i", "eth0"])
    assert opts.expression == ["icmp", "and", "host", "10.0.0.1"]
    assert (opts.count, opts.verbose, opts.interface) == (3, 1, "eth0")


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("foo bar", "can't parse filter expression: syntax error"),
        ("port", "can't parse filter expression: syntax error"),
        ("(icmp", "can't parse filter expression: syntax error"),
        ("icmp and", "can't parse filter expression: syntax error"),
        ("host 10.0.0.300", "invalid IPv4 address '10.0.0.300'"),
        ("port 99999", "illegal port number 99999 > 65535"),
        ("net 10.0.0.0/33", "mask length must be <= 32"),
        ("host nosuch", "unknown host 'nosuch'"),
    ],
)
def test_filter_errors_are_libpcaps(expr: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        compile_filter(expr)
    assert str(info.value) == message


def test_filter_resolves_lab_host_names() -> None:
    pred = compile_filter("host b", {"b": "10.0.0.2"}.get)
    assert pred is not None
    frames = pcap_corpus.frames()
    assert pred(dissect(frames[2])) and not pred(dissect(frames[33]))


def test_read_pcap_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="No such file or directory"):
        read_pcap(tmp_path / "missing.pcap")
    (tmp_path / "junk.pcap").write_bytes(b"not a capture at all")
    with pytest.raises(ConfigError, match="unknown file format"):
        read_pcap(tmp_path / "junk.pcap")


@FUZZ
@given(st.binary(max_size=200))
def test_fuzz_random_bytes_never_raise(data: bytes) -> None:
    for printer in (Printer(), Printer(verbose=2, eflag=True), Printer(qflag=True, xflag=1)):
        assert isinstance(printer.packet(0.0, data), str)
    dissect(data)


@FUZZ
@given(
    st.integers(0, 46),
    st.lists(st.tuples(st.integers(0, 300), st.integers(0, 255)), max_size=6),
    st.integers(0, 200),
)
def test_fuzz_mutated_corpus_never_raises(
    which: int, flips: list[tuple[int, int]], cut: int
) -> None:
    frame = bytearray(pcap_corpus.frames()[which])
    for pos, value in flips:
        if pos < len(frame):
            frame[pos] = value
    data = bytes(frame[: len(frame) - cut] if cut < len(frame) else frame)
    for printer in (Printer(), Printer(verbose=2), Printer(eflag=True, qflag=True)):
        assert isinstance(printer.packet(1.0, data), str)
    pred = compile_filter("icmp or (udp and port 9000) or host 2001:db8::1 or vlan")
    assert pred is not None
    pred(dissect(data))


@needs_tcpdump
def test_mutated_corpus_matches_tcpdump(tmp_path: Path) -> None:
    """Damaged frames (truncated, bad lengths, flipped bytes) print as tcpdump prints them."""
    rng = random.Random(7)
    frames = pcap_corpus.frames()
    damaged = []
    for frame in frames:
        f = bytearray(frame)
        for _ in range(2):
            pos = rng.randrange(14, len(f)) if len(f) > 14 else 0
            if pos >= 14 and pos < 40:  # keep the damage to headers tcpdump checks the same way
                f[pos] = rng.randrange(256)
        damaged.append(bytes(f[: rng.randrange(40, len(f) + 1)] if len(f) > 40 else f))
    path = pcap_corpus.write(tmp_path / "damaged.pcap", damaged)
    mine, ref = ours(path, []), theirs(path, [])
    agree = sum(a == b for a, b in zip(mine, ref, strict=False))
    assert len(mine) == len(ref)
    assert agree >= 0.8 * len(ref), "\n".join(
        f"ours: {a}\nref:  {b}" for a, b in zip(mine, ref, strict=False) if a != b
    )
