"""The packetdrill language: the lexer's longest-match rules, the parser, bad input."""

from __future__ import annotations

import pytest

from netstack.userspace.packetdrill import ScriptError, Unsupported, parse_script
from netstack.userspace.packetdrill.parser import tokenize
from netstack.userspace.packetdrill.script import SyscallSpec, TcpPacketSpec


def kinds(text: str) -> list[tuple[str, object]]:
    return [(t.type, t.value) for t in tokenize(text)][:-1]


def test_lexer_longest_match_as_flex() -> None:
    assert kinds("ack ackx") == [("ACK", "ack"), ("WORD", "ackx")]
    assert kinds("192.168.0.1 1.5 .1") == [
        ("IPV4_ADDR", "192.168.0.1"),
        ("FLOAT", 1.5),
        ("FLOAT", 0.1),
    ]
    assert kinds("1:1001(1000)") == [
        ("INTEGER", 1),
        (":", ":"),
        ("INTEGER", 1001),
        ("(", "("),
        ("INTEGER", 1000),
        (")", ")"),
    ]
    assert kinds("0x10 -1 fd3d:fa7b:d17d::1") == [
        ("HEX_INTEGER", 16),
        ("INTEGER", -1),
        ("IPV6_ADDR", "fd3d:fa7b:d17d::1"),
    ]
    assert kinds("S. <...> sackOK TS") == [
        ("WORD", "S"),
        (".", "."),
        ("<", "<"),
        ("ELLIPSIS", "..."),
        (">", ">"),
        ("SACKOK", "sackOK"),
        ("TIMESTAMP", "TS"),
    ]


def test_lexer_strings_commands_code_comments_lines() -> None:
    toks = tokenize('// c\n"a b" `x\ny` /* z\n */ %{ assert 1 }% --mss=10')
    assert [(t.type, t.value, t.line) for t in toks[:-1]] == [
        ("STRING", "a b", 2),
        ("BACK_QUOTED", "x\ny", 2),
        ("CODE", "assert 1", 4),
        ("OPTION", "mss", 4),
        ("=", "=", 4),
        ("INTEGER", 10, 4),
    ]


def test_lexer_defines_replace_words() -> None:
    toks = tokenize("X Y", defines={"X": "SO_REUSEADDR", "Y": '"reno"'})
    assert [(t.type, t.value) for t in toks[:-1]] == [("WORD", "SO_REUSEADDR"), ("STRING", "reno")]


SCRIPT = """\
--tolerance_usecs=10000
`sysctl -q net.ipv4.tcp_sack=1`
0     socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
+0    setsockopt(3, SOL_SOCKET, SO_LINGER, {onoff=1, linger=0}, 8) = 0
+0    < S 0:0(0) win 32792 <mss 1000,sackOK,TS val 1 ecr 0,nop,wscale 7>
0.1~0.2 > S. 0:0(0) ack 1 <...>
*     > . 1:1(0) ack 1 <sack 1:2 3:4,nop,nop>
+0...0.5 read(4, ..., 10) = -1 EAGAIN (Resource temporarily unavailable)
+.1   fcntl(4, F_SETFL, O_RDWR|O_NONBLOCK) = 0
+0    %{ assert tcpi_rto == 300000 }%
`echo done`
"""


def test_parse_events_times_and_actions() -> None:
    s = parse_script(SCRIPT, "t.pkt")
    assert s.options == [("tolerance_usecs", "10000", 1)]
    assert s.init_command is not None and s.init_command.command.startswith("sysctl")
    assert s.cleanup_command is not None and s.cleanup_command.command == "echo done"
    times = [(e.line, e.time_type, e.time_usecs, e.time_usecs_end) for e in s.events]
    assert times == [
        (3, "absolute", 0, -1),
        (4, "relative", 0, -1),
        (5, "relative", 0, -1),
        (6, "absolute_range", 100000, 200000),
        (7, "any", 0, -1),
        (8, "relative", 0, -1),
        (9, "relative", 100000, -1),
        (10, "relative", 0, -1),
    ]
    syn = s.events[2].action
    assert isinstance(syn, TcpPacketSpec)
    assert (syn.direction, syn.flags, syn.start_seq, syn.payload, syn.window) == (
        "inbound",
        "S",
        0,
        0,
        32792,
    )
    assert syn.options is not None
    assert b"".join(o.encode() for o in syn.options) == bytes.fromhex(
        "020403e80402080a000000010000000001030307"
    )
    synack = s.events[3].action
    assert isinstance(synack, TcpPacketSpec) and synack.options is None and synack.window == -1
    sack = s.events[4].action
    assert isinstance(sack, TcpPacketSpec) and sack.options is not None
    assert sack.options[0].encode() == bytes.fromhex("051200000001 00000002 00000003 00000004")
    read = s.events[5].action
    assert isinstance(read, SyscallSpec)
    assert (read.name, read.blocking, read.end_usecs, read.errno, read.strerror) == (
        "read",
        True,
        500000,
        "EAGAIN",
        "Resource temporarily unavailable",
    )
    fcntl = s.events[6].action
    assert isinstance(fcntl, SyscallSpec) and repr(fcntl.args) == "[4, F_SETFL, O_RDWR|O_NONBLOCK]"


BAD = [
    ("0 socket(..., SOCK_STREAM, IPPROTO_TCP) = \n", "t.pkt:2: parse error at 'end of file'"),
    ("0 frob\n", "t.pkt:2: parse error at 'end of file': syntax error, expected '('"),
    ("0 < 1:1(0)\n", "t.pkt:1: parse error at '1': syntax error, expected TCP flags"),
    ("+0 < S 0:0(0) <mss 1460>\n", "t.pkt:1: semantic error: window must be specified"),
    ("+0 < S 0:0(0) win 1 <...>\n", "t.pkt:1: semantic error: <...> for TCP options can only"),
    ("* < S 0:0(0) win 1\n", "t.pkt:1: semantic error: event time <star> can only be used"),
    ("0.2~0.1 > S 0:0(0)\n", "t.pkt:1: semantic error: time range is backwards"),
    ("0~1 write(3, ..., 1) = 1\n", "t.pkt:1: semantic error: event time range can only be used"),
    ("+0 > P. 1:11(9)\n", "t.pkt:1: semantic error: inconsistent TCP sequence numbers"),
    ("+0 > S 0:0(0) <mss 1460,nop>\n", "t.pkt:1: semantic error: TCP options are not padded"),
    ("+0 > SX 0:0(0)\n", "t.pkt:1: semantic error: Invalid TCP flag: 'X'"),
    ("+0 > S 0:0(0) <wscale 300,nop>\n", "t.pkt:1: semantic error: window scale shift count"),
    ('+0 write(3, "x\n', "t.pkt:1: parse error at '\"': unterminated string"),
    ("+0 `sysctl\n", "t.pkt:1: parse error at '`': unterminated command"),
    ("0 socket(..., 1, 6) = 3\n-1 close(3) = 0\n", "t.pkt:2: semantic error: negative time"),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_bad_input_is_reported_at_its_line(text: str, message: str) -> None:
    with pytest.raises(ScriptError) as exc:
        parse_script(text, "t.pkt")
    assert str(exc.value).startswith(message), str(exc.value)
    assert not isinstance(exc.value, Unsupported)


UNSUPPORTED = [
    ("+0 < udp (10)\n", "t.pkt:1: unsupported: UDP packets"),
    ("+0 < icmp unreachable\n", "t.pkt:1: unsupported: ICMP packets"),
    ("+0 < ipv4 1.1.1.1 > 2.2.2.2: S 0:0(0) win 1\n", "t.pkt:1: unsupported: ipv4 encapsulation"),
    ("+0 > S.5 0:0(0)\n", "t.pkt:1: unsupported: AccECN ACE flags"),
    ("+0 > S 0:0(0) {mut ip ihl}\n", "t.pkt:1: unsupported: packet fuzzing"),
    (
        '+0 connect(3, {sa_family=AF_INET, sin_port=htons(8080), sin_addr=inet_addr("1.2.3.4")}, 16) = 0\n',
        "t.pkt:1: unsupported: sockaddr expressions",
    ),
]


@pytest.mark.parametrize(("text", "message"), UNSUPPORTED)
def test_unsupported_constructs_say_what_is_missing(text: str, message: str) -> None:
    with pytest.raises(Unsupported) as exc:
        parse_script(text, "t.pkt")
    assert str(exc.value).startswith(message), str(exc.value)
