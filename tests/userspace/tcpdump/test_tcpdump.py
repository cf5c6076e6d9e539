"""tcpdump's printer, filter and command line, against the real tcpdump where installed.

The project's corpus of captures (tests/pcap_corpus.py) covers every header
the printer knows — ARP of any sizes, 802.3/LLC/STP, VLAN, IPv4 with options
and malformed headers, ICMP, TCP, UDP, GRE v0/v1 (PPTP) with PPP, IPIP, 6in4,
IPv6 extension headers with RT6 and the final destination in checksums,
ICMPv6 with ND, redirects and MLD, the mobility header, DNS, PIM, VXLAN —
and the link types people bring (Linux cooked v1/v2, raw IPv4/IPv6). With
tcpdump installed, netstack's output must equal tcpdump's line for line for
each flag set and link type, and a truncated capture file must end as
tcpdump's does; golden lines keep the main cases checked without it.
"""

from __future__ import annotations

import io
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
from netstack.userspace.tcpdump.tcpdump import ether_view, parse_tcpdump_args, read_file, read_pcap
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
    read_file(opts, lines.append, lambda _s: None)
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


FLAG_SETS = [[], ["-v"], ["-vv"], ["-vvv"], ["-e"], ["-q"], ["-e", "-v"], ["-q", "-v"],
             ["-e", "-q"], ["-x"], ["-xx"], ["-X"], ["-t"], ["-tt"], ["-ttt"], ["-tttt"],
             ["-ttttt"], ["-S"], ["-c", "5"], ["-e", "-vv", "-X"]]  # fmt: skip


def _same(mine: list[str], ref: list[str]) -> None:
    """Line for line, with the first differing lines in the failure message."""
    diff = [
        f"line {i}\nours: {a}\nref:  {b}"
        for i, (a, b) in enumerate(zip(mine, ref, strict=False))
        if a != b
    ]
    assert (len(mine), diff[:5]) == (len(ref), [])


@needs_tcpdump
@pytest.mark.parametrize("flags", FLAG_SETS, ids=lambda f: " ".join(f) or "plain")
def test_printer_matches_tcpdump(corpus: Path, flags: list[str]) -> None:
    _same(ours(corpus, flags), theirs(corpus, flags))


LINK_FLAG_SETS = [[], ["-v"], ["-vv"], ["-e"], ["-q"], ["-e", "-q"], ["-e", "-v"], ["-x"],
                  ["-xx"]]  # fmt: skip


@needs_tcpdump
@pytest.mark.parametrize("name", sorted(pcap_corpus.captures()))
@pytest.mark.parametrize("flags", LINK_FLAG_SETS, ids=lambda f: " ".join(f) or "plain")
def test_link_types_match_tcpdump(tmp_path: Path, name: str, flags: list[str]) -> None:
    """Linux cooked v1/v2 (``tcpdump -i any``), raw IPv4/IPv6 and raw IP captures."""
    linktype, records = pcap_corpus.captures()[name]
    path = pcap_corpus.write(tmp_path / f"{name}.pcap", records, linktype)
    _same(ours(path, flags), theirs(path, flags))


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


GOLDEN_NEW = {
    # link layer: ARP of other sizes and truncated, STP, 802.3/LLC behind a VLAN tag
    "ARP, Request who-has 10.0.0.2 (02:00:00:00:00:02) tell 10.0.0.1, length 28",
    "ARP, Reply 10.0.0.1 is-at 00:01:02:03:04:05:06:07:08:09:0a:0b:0c:0d:0e:0f:10:11:12:13, "
    "length 56",
    "ARP, Ethernet (len 6), IPv6 (len 16), length 52",
    " [|arp]",
    "STP 802.1d, Config, Flags [Topology change], bridge-id 8000.02:00:00:00:00:02.8002, length 35",
    "STP 802.1d, Topology Change",
    "STP 802.1w, Rapid STP, Flags [Learn, Forward, Agreement], bridge-id "
    "8000.02:00:00:00:00:02.8002, length 36",
    "STP 802.1d, Config (invalid)",
    # malformed IPv4
    "IP0 (invalid)",
    "IP6, wrong link-layer encapsulation (invalid)",
    "IP bad-hlen 16",
    "IP bad-len 12",
    # GREv1 (PPTP) with PPP inside
    "IP 198.51.100.1 > 198.51.100.2: GREv1, call 7, seq 1, length 52: IP 172.16.0.1 > "
    "172.16.0.2: ICMP echo request, id 2, seq 2, length 16",
    "IP 198.51.100.1 > 198.51.100.2: GREv1, call 7, ack 5, no-payload, length 12",
    "IP 198.51.100.1 > 198.51.100.2: GREv1, call 9, seq 4, length 24: LCP, Echo-Request (0x09), "
    "id 1, length 10",
    # ICMP router advertisement and timestamps
    "IP 10.0.0.254 > 224.0.0.1: ICMP router advertisement lifetime 30:00 2: "
    "{10.0.0.254 0} {10.0.0.253 4294967295}, length 24",
    "IP 10.0.0.254 > 224.0.0.1: ICMP time stamp reply id 7 seq 1: org 12:34:56.789, "
    "recv 12:34:56.790, xmit 23:59:59.999, length 20",
    # IPv6 routing header, mobility, MLD, redirect
    "IP6 2001:db8::1 > 2001:db8:1::fe: RT6 (len=2, type=2, segleft=1, [0]2001:db8:2::2) "
    "5001 > 9002: UDP, length 8",
    "IP6 2001:db8::1 > 2001:db8::2: mobility: BU seq#=7 AH lifetime=400",
    "IP6 fe80::1 > ff02::16: HBH ICMP6, multicast listener report v2, 2 group record(s), length 80",
    "IP6 fe80::1 > 2001:db8::1: ICMP6, redirect, 2001:db8:5::5 to fe80::fe, length 64",
    # DNS, VXLAN, PIM
    "IP 10.0.0.1.40053 > 10.0.0.53.53: 12345+ A? example.com. (29)",
    "IP 10.0.0.53.53 > 10.0.0.1.40053: 12345 1/0/0 A 1.2.3.4 (45)",
    "IP 10.0.0.1 > 224.0.0.13: PIMv2, Hello, length 62",
    "IP 192.0.2.1.51000 > 192.0.2.2.4789: VXLAN, flags [I] (0x08), vni 42\n"
    "IP 10.10.0.1 > 10.10.0.2: ICMP echo request, id 4, seq 1, length 16",
}


def test_golden_lines_of_the_new_printers() -> None:
    """Lines tcpdump 4.99.3 prints for the corpus, checked without tcpdump installed."""
    printer = Printer(tstyle=1)
    lines = {printer.packet(0.0, f) for f in pcap_corpus.frames()}
    assert GOLDEN_NEW - lines == set()


def test_routing_header_final_destination_in_checksums() -> None:
    """RFC 8200 §8.1: the pseudo-header of UDP/TCP/ICMPv6 after a routing header uses the
    last address of the route (type 0/2) or segment 0 (type 4), not the IPv6 destination."""
    printer = Printer(tstyle=1, verbose=1)
    text = "\n".join(printer.packet(0.0, f) for f in pcap_corpus.frames())
    assert (
        "RT6 (len=2, type=2, segleft=1, rsv=0x0, [0]2001:db8:2::2) 5001 > 9002: [udp sum ok]"
        in text
    )
    assert "[1]2001:db8:2::2) 40002 > 9003: Flags [S], cksum 0x90b2 (correct)" in text
    assert "[0]2001:db8:2::2) 5001 > 9002: [bad udp cksum 0xa2df -> 0xa3da!]" in text
    assert "[1]2001:db8:1::fe) [icmp6 sum ok] ICMP6, echo request, id 5, seq 5" in text


def test_link_type_golden_lines() -> None:
    cooked = pcap_corpus.captures()
    frame = cooked["sll"][1][2]
    assert isinstance(frame, bytes)
    sll = Printer(tstyle=1, dlt=113, eflag=True)
    assert sll.packet(0.0, frame) == (
        "  M 02:00:00:00:00:01 ethertype IPv4 (0x0800), length 100: 10.0.0.1 > 10.0.0.2: "
        "ICMP echo request, id 1, seq 1, length 64"
    )
    frame = cooked["sll2"][1][4]
    assert isinstance(frame, bytes)
    sll2 = Printer(tstyle=1, dlt=276)
    assert sll2.packet(0.0, frame) == (
        "lo    Out IP 10.0.0.1.40000 > 10.0.0.2.9000: UDP, length 200"
    )
    raw = Printer(tstyle=1, dlt=229, eflag=True)
    ip6_pkt = cooked["ipv6"][1][0]
    assert isinstance(ip6_pkt, bytes)
    assert raw.packet(0.0, ip6_pkt).startswith("ip: 2001:db8::1 > 2001:db8::2: ICMP6, echo request")


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


TRUNCATIONS = [
    # (bytes kept of the two-frame corpus file, tcpdump's stderr message)
    (24 + 16 + 42 + 10, "tcpdump: pcap_loop: truncated dump file; tried to read 16 header bytes, "
     "only got 10"),
    (24 + 16 + 42 + 16 + 30, "tcpdump: pcap_loop: truncated dump file; tried to read 42 captured "
     "bytes, only got 30"),
    (10, "tcpdump: truncated dump file; tried to read 24 file header bytes, only got 6"),
    (0, "tcpdump: truncated dump file; tried to read 4 file header bytes, only got 0"),
]  # fmt: skip


@pytest.mark.parametrize(("keep", "message"), TRUNCATIONS)
def test_truncated_capture_file(tmp_path: Path, keep: int, message: str) -> None:
    """``netstack decode`` of a cut file: the whole frames, libpcap's message, exit 1."""
    from netstack.cli.decode import decode

    whole = pcap_corpus.write(tmp_path / "whole.pcap", pcap_corpus.frames()[:2])
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(whole.read_bytes()[:keep])
    out, err = io.StringIO(), io.StringIO()
    assert decode(["-t", str(cut)], out=out, err=err) == 1
    assert err.getvalue().rstrip("\n").split("\n")[-1] == message
    lines = out.getvalue().splitlines()
    assert lines == (
        ["ARP, Request who-has 10.0.0.2 tell 10.0.0.1, length 28"] if keep > 82 else []
    )
    if TCPDUMP is not None:
        ref = subprocess.run([TCPDUMP, "-nn", "-t", "-r", str(cut)], capture_output=True,
                             text=True, check=False)  # fmt: skip
        assert (ref.returncode, ref.stdout.splitlines()) == (1, lines)
        assert ref.stderr.rstrip("\n").split("\n")[-1] == message


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
@given(st.sampled_from([1, 12, 101, 113, 228, 229, 276]), st.binary(max_size=300),
       st.integers(0, 400))  # fmt: skip
def test_fuzz_every_link_type_never_raises(dlt: int, data: bytes, wirelen: int) -> None:
    """Any bytes, any claimed length, any link type: a line, never an exception."""
    for printer in (Printer(dlt=dlt), Printer(dlt=dlt, verbose=3, eflag=True, xflag=2)):
        assert isinstance(printer.packet(0.0, data, wirelen), str)
    ether_view(dlt, data)


@FUZZ
@given(st.integers(0, 10_000), st.binary(min_size=1, max_size=120), st.integers(0, 300))
@pytest.mark.slow
def test_fuzz_new_printers_behind_valid_headers(seed: int, payload: bytes, cut: int) -> None:
    """Garbage after valid IPv4/IPv6/UDP headers reaches each application printer."""
    frames = pcap_corpus.frames()
    base = frames[seed % len(frames)]
    hdr = 14 + (40 if base[12:14] == b"\x86\xdd" else 20)
    for ports in (b"\x00\x35\x00\x35", b"\x12\xb5\x12\xb5", b"\x14\xe9\x14\xe9"):
        data = base[:hdr] + ports + payload
        for printer in (Printer(), Printer(verbose=3), Printer(eflag=True, qflag=True)):
            assert isinstance(printer.packet(0.0, data[: max(1, len(data) - cut)]), str)


@FUZZ
@given(
    st.integers(0, len(pcap_corpus.frames()) - 1),
    st.lists(st.tuples(st.integers(0, 300), st.integers(0, 255)), max_size=6),
    st.integers(0, 200),
)
@pytest.mark.slow
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
    for flags in ([], ["-v"], ["-x"]):
        mine, ref = ours(path, flags), theirs(path, flags)
        assert len(mine) == len(ref)
        # the only disagreements: damage that turned a header into a protocol netstack
        # does not decode (tcpdump's IGRP, PGM, IPComp…), which netstack prints as ip-proto-N
        wrong = [(a, b) for a, b in zip(mine, ref, strict=True) if a != b and "ip-proto-" not in a]
        assert wrong == []
