"""The runner: packets as bytes (dpkt as oracle), matching, reports, bad input, hangs, the CLI."""

from __future__ import annotations

import io
from pathlib import Path

import dpkt
import pytest

from netstack.cli.packetdrill import packetdrill
from netstack.testing.packetdrill import cmdline_options, run_file, xfail_reason
from netstack.userspace.packetdrill.packet import (
    Packet,
    build_packet,
    packet_to_string,
    parse_packet,
    parse_tcp_options,
)
from netstack.userspace.packetdrill.script import TcpOption

HERE = Path(__file__).parent

PASSIVE = """\
0     socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
+0    setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0
+0    bind(3, ..., ...) = 0
+0    listen(3, 1) = 0
+0    < S 0:0(0) win 65535 <mss 1000,sackOK,nop,nop,nop,wscale 7>
+0    > S. 0:0(0) ack 1 <mss 1460,nop,nop,sackOK,nop,wscale 10>
+.1   < . 1:1(0) ack 1 win 1024
+0    accept(3, ..., ...) = 4
"""


def run(text: str, *options: tuple[str, str | None]) -> tuple[str, str]:
    r = run_file("t.pkt", list(options), text=text)
    return r.status, r.message


# -- packets as bytes ------------------------------------------------------------------


def _opts() -> list[TcpOption]:
    return [
        TcpOption(2, 4, (1460).to_bytes(2, "big")),
        TcpOption(4, 2),
        TcpOption(8, 10, (7).to_bytes(4, "big") + (9).to_bytes(4, "big")),
        TcpOption(1, 1),
        TcpOption(3, 3, b"\x07"),
    ]


def test_inbound_ipv4_packet_bytes_checked_by_dpkt() -> None:
    p = Packet(
        4,
        bytes([192, 0, 2, 1]),
        bytes([192, 168, 0, 1]),
        40000,
        8080,
        0x01020304,
        0,
        0x02,
        65535,
        _opts(),
        bytes(10),
    )
    raw = build_packet(p)
    ip = dpkt.ip.IP(raw)
    tcp = ip.data
    assert (ip.len, ip.p, ip.src, ip.dst) == (len(raw), 6, p.src, p.dst)
    assert (tcp.sport, tcp.dport, tcp.seq, tcp.flags, tcp.win) == (
        40000,
        8080,
        0x01020304,
        2,
        65535,
    )
    assert dpkt.tcp.parse_opts(tcp.opts) == [
        (2, b"\x05\xb4"),
        (4, b""),
        (8, bytes(3) + b"\x07" + bytes(3) + b"\x09"),
        (1, b""),
        (3, b"\x07"),
    ]
    # checksums: dpkt recomputes them when the fields are zeroed
    got_ip, got_tcp = ip.sum, tcp.sum
    ip.sum = 0
    tcp.sum = 0
    again = dpkt.ip.IP(bytes(ip))
    assert (again.sum, again.data.sum) == (got_ip, got_tcp)


def test_inbound_ipv6_packet_bytes_checked_by_dpkt() -> None:
    src = bytes.fromhex("20010db8000000000000000000000001")
    dst = bytes.fromhex("fd3dfa7bd17d00000000000000000001")
    p = Packet(6, src, dst, 40000, 8080, 5, 6, 0x18, 100, [], b"hello", tos=0x10, flow_label=7)
    raw = build_packet(p)
    ip6 = dpkt.ip6.IP6(raw)
    assert (ip6.plen, ip6.nxt, ip6.fc, ip6.flow, ip6.hlim) == (25, 6, 0x10, 7, 64)
    tcp = ip6.data
    assert (tcp.seq, tcp.ack, tcp.flags, bytes(tcp.data)) == (5, 6, 0x18, b"hello")
    got = tcp.sum
    tcp.sum = 0
    ip6.data = tcp
    assert dpkt.ip6.IP6(bytes(ip6)).data.sum == got


def test_parse_round_trip_and_packetdrill_text() -> None:
    p = Packet(4, bytes(4), bytes(4), 1, 2, 0, 1, 0x12, 64240, _opts())
    q = parse_packet(build_packet(p))
    assert q is not None
    assert (
        packet_to_string(q)
        == "S. 0:0(0) ack 1 win 64240 <mss 1460,sackOK,TS val 7 ecr 9,nop,wscale 7>"
    )
    assert packet_to_string(q, win_nocheck=True) == (
        "S. 0:0(0) ack 1 <mss 1460,sackOK,TS val 7 ecr 9,nop,wscale 7>"
    )
    sack = TcpOption(5, 18, bytes.fromhex("00000001000003e9000007d100000bb9"))
    q.options = [TcpOption(1, 1), TcpOption(1, 1), sack]
    q.flags, q.payload = 0x11, bytes(3)
    assert packet_to_string(q) == "F. 0:3(3) ack 1 win 64240 <nop,nop,sack 1:1001 2001:3001>"


def test_tcp_options_bad_length() -> None:
    assert parse_tcp_options(b"\x01\x00") == [TcpOption(1, 1), TcpOption(0, 1)]
    with pytest.raises(ValueError, match="bad length"):
        parse_tcp_options(b"\x02\x09\x05\xb4")
    with pytest.raises(ValueError, match="no length"):
        parse_tcp_options(b"\x02")
    assert parse_packet(b"\x45" + bytes(10)) is None  # short: not a TCP packet


# -- matching and the failure report ---------------------------------------------------


def test_passing_script() -> None:
    assert run(PASSIVE) == ("pass", "")


def test_packet_mismatch_report() -> None:
    status, msg = run(PASSIVE.replace("ack 1 <mss 1460", "ack 1 win 65535 <mss 1460"))
    assert status == "fail"
    assert msg == (
        "t.pkt:6: error handling packet: live packet field tcp_window: expected: 65535 (0xffff) "
        "vs actual: 64240 (0xfaf0)\n"
        "script packet:  0.000000 S. 0:0(0) ack 1 win 65535 <mss 1460,nop,nop,sackOK,nop,wscale 10>\n"
        "actual packet:  0.000000 S. 0:0(0) ack 1 win 64240 <mss 1460,nop,nop,sackOK,nop,wscale 10>"
    )


def test_option_mismatch_report() -> None:
    status, msg = run(PASSIVE.replace("nop,wscale 10>\n+.1", "nop,wscale 6>\n+.1"))
    assert status == "fail"
    assert msg.splitlines()[0] == "t.pkt:6: error handling packet: bad value outbound TCP option 3"


def test_timing_error_report() -> None:
    text = PASSIVE + "+0 write(4, ..., 1000) = 1000\n+.2 > P. 1:1001(1000) ack 1\n"
    status, msg = run(text)
    assert status == "fail"
    assert msg.splitlines()[0] == (
        "t.pkt:10: error handling packet: timing error: expected outbound packet at 0.300000 sec "
        "but happened at 0.100000 sec; tolerance 0.025000 sec"
    )
    # a range that holds the time passes; --tolerance_usecs widens the window
    assert (
        run(PASSIVE + "+0 write(4, ..., 1000) = 1000\n0.05~0.15 > P. 1:1001(1000) ack 1\n")[0]
        == "pass"
    )
    assert run(text, ("tolerance_usecs", "250000"))[0] == "pass"


def test_syscall_mismatch_report() -> None:
    status, msg = run(
        PASSIVE + "+0 fcntl(4, F_SETFL, O_RDWR|O_NONBLOCK) = 0\n+0 read(4, ..., 10) = 0\n"
    )
    assert (status, msg) == (
        "fail",
        "t.pkt:10: runtime error in read call: Expected result 0 but got -1 with errno 11 "
        "(Resource temporarily unavailable)",
    )
    status, msg = run(PASSIVE + "+0 close(4) = -1 EBADF (Bad file descriptor)\n")
    assert msg == (
        "t.pkt:9: runtime error in close call: Expected result -1 but got 0 with errno 0 (Success)"
    )


def test_blocking_call_return_time_is_checked() -> None:
    ok = PASSIVE + "+0...0.2 read(4, ..., 100) = 100\n+.2 < P. 1:101(100) ack 1 win 1024\n"
    assert run(ok)[0] == "pass"
    late = ok.replace("+0...0.2 read", "+0...0.1 read")
    status, msg = run(late)
    assert status == "fail"
    assert msg == (
        "t.pkt:9: timing error: expected system call return at 0.200000 sec but happened at "
        "0.300000 sec; tolerance 0.012500 sec"
    )


def test_gso_segments_are_rejoined_unless_strict() -> None:
    text = PASSIVE + (
        "+0 setsockopt(4, SOL_TCP, TCP_NODELAY, [1], 4) = 0\n"
        "+0 write(4, ..., 1000) = 1000\n+0 write(4, ..., 1000) = 1000\n"
        "+0 > P. 1:2001(2000) ack 1\n"
    )
    assert run(text)[0] == "pass"
    status, msg = run(text, ("strict_segments", None))
    assert status == "fail"
    assert msg.splitlines()[0] == (
        "t.pkt:12: error handling packet: live packet payload: expected 2000 bytes vs actual 1000 bytes"
    )


def test_ts_ecr_without_outbound_val_is_an_error() -> None:
    text = """\
0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
+0 fcntl(3, F_SETFL, O_RDWR|O_NONBLOCK) = 0
+0 connect(3, ..., ...) = -1 EINPROGRESS (Operation now in progress)
+0 > S 0:0(0) <mss 1460,sackOK,TS val 100 ecr 0,nop,wscale 10>
+.1 < S. 0:0(0) ack 1 win 5792 <mss 1460,sackOK,TS val 700 ecr 555,nop,wscale 7>
"""
    assert run(text) == (
        "fail",
        "t.pkt:5: error handling packet: unable to infer live TS ecr for script TS ecr 555;  "
        "no matching or preceding outbound TS val",
    )


# -- tcp_info code ---------------------------------------------------------------------


def test_code_asserts_run_at_the_end_with_their_snapshot() -> None:
    text = PASSIVE + (
        "+0 %{ assert tcpi_state == TCP_ESTABLISHED and tcpi_snd_mss == 1000 }%\n"
        "+0 shutdown(4, SHUT_WR) = 0\n+0 > F. 1:1(0) ack 1\n"
        "+0 %{\nprint 'cwnd', tcpi_snd_cwnd\nassert tcpi_unacked == 5, tcpi_unacked\n}%\n"
    )
    r = run_file("t.pkt", text=text)
    assert (r.status, r.message) == ("fail", "t.pkt:12: error in Python code: AssertionError: 1")
    assert r.output == ("cwnd 10",)


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("import os", "unsupported: Import in Python code"),
        ("x = tcpi_rto.bit_length()", "unsupported: Attribute in Python code"),
        ("open('x')", "unsupported: open() in Python code"),
    ],
)
def test_code_outside_the_evaluator_is_unsupported(code: str, message: str) -> None:
    status, msg = run(PASSIVE + f"+0 %{{ {code} }}%\n")
    assert status == "error"
    assert msg == f"t.pkt:9: {message}" or msg.startswith(f"t.pkt:9: {message}")


# -- bad input at run time, hangs ------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "+0 frobnicate(3) = 0",
            "t.pkt:9: runtime error in frobnicate call: Unknown system call: 'frobnicate'",
        ),
        ("+0 epoll_create(1) = 5", "t.pkt:9: unsupported: the epoll_create() system call"),
        (
            "+0 setsockopt(4, SOL_SOCKET, SO_FROB, [1], 4) = 0",
            "t.pkt:9: bad integer expression: unknown symbol 'SO_FROB'",
        ),
        (
            "+0 close(9) = 0",
            "t.pkt:9: runtime error in close call: unable to find fd with script fd 9",
        ),
        ("+0 `nstat -n`", "t.pkt:9: unsupported: the command `nstat -n`"),
        ("+0 ioctl(4, 0x1234, [0]) = 0", "t.pkt:9: unsupported: ioctl 0x1234"),
        (
            "+0 write(4, ..., 10) = 10 EFROB (x)",
            "t.pkt:9: runtime error in write call: unknown errno 'EFROB'",
        ),
        ("+0 socket(..., SOCK_DGRAM, IPPROTO_UDP) = 5", "t.pkt:9: unsupported: non-TCP sockets"),
    ],
)
def test_runtime_bad_input(line: str, message: str) -> None:
    status, msg = run(PASSIVE + line + "\n")
    assert status == "error"
    assert msg.startswith(message), msg


def test_bad_options() -> None:
    assert run("--frob=1\n" + PASSIVE) == ("error", "t.pkt: option 'frob' unknown")
    assert run("--mss=0\n" + PASSIVE) == ("error", "t.pkt: bad --mss: 0")
    assert run("--wire_client\n" + PASSIVE) == (
        "error",
        "t.pkt: unsupported: --wire_client: remote (wire client/server) mode",
    )
    assert run(PASSIVE, ("ip_version", "ipv5")) == ("error", "Command Line: bad --ip_version: ipv5")


def test_first_event_at_zero_and_time_going_backwards() -> None:
    assert run("1 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n") == (
        "error",
        "t.pkt:1: first event should be at time 0",
    )
    assert (
        run("0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n0.5 close(3) = 0\n0.4 close(3) = 0\n")[1]
        == "t.pkt:3: time goes backward in script from 500000 usec to 400000 usec"
    )


def test_a_missing_packet_ends_at_the_virtual_time_limit() -> None:
    r = run_file("t.pkt", [("timeout", "5")], text=PASSIVE + "+0 > P. 1:11(10) ack 1\n")
    assert r.status == "fail"
    assert r.message == (
        "t.pkt:9: error handling packet: Timed out waiting for packet "
        "(nothing for 5 s of virtual time past the scripted time)"
    )
    assert r.virtual_seconds == pytest.approx(5.1)


def test_a_call_that_never_returns_ends_at_the_virtual_time_limit() -> None:
    r = run_file("t.pkt", [("timeout", "3")], text=PASSIVE + "+0 read(4, ..., 10) = 10\n")
    assert r.status == "fail"
    assert r.message.startswith("t.pkt:9: runtime error in read call: the call blocked for 3 s")
    r = run_file("t.pkt", text=PASSIVE + "+0...1 read(4, ..., 10) = 10\n")
    assert (
        r.message == "t.pkt:9: runtime error: exiting while a blocking system call is in progress"
    )


def test_commands_run_on_the_host() -> None:
    text = "`sysctl -q net.ipv4.tcp_sack=0`\n" + PASSIVE.replace(
        "<mss 1460,nop,nop,sackOK,nop,wscale 10>", "<mss 1460,nop,wscale 10>"
    )
    assert run(text)[0] == "pass"
    status, msg = run("`sysctl -q net.ipv4.tcp_frob=1`\n" + PASSIVE)
    assert status == "fail"
    assert msg.startswith("t.pkt:1: error executing `sysctl -q net.ipv4.tcp_frob=1` command: ")


# -- collection conventions and the CLI ----------------------------------------------------


def test_script_comments_for_the_collector() -> None:
    text = "// xfail: issue 16, PSH\n// cmdline: --ip_version=ipv6 --strict_segments\n0 x() = 0\n"
    assert xfail_reason(text) == "issue 16, PSH"
    assert cmdline_options(text) == [("ip_version", "ipv6"), ("strict_segments", None)]


def test_cli_exit_status_and_lines(tmp_path: Path) -> None:
    (tmp_path / "a.pkt").write_text(PASSIVE)
    (tmp_path / "b.pkt").write_text(PASSIVE.replace("win 1024", "win 1024 <frob>"))
    out, err = io.StringIO(), io.StringIO()
    assert packetdrill([str(tmp_path / "a.pkt")], out=out, err=err) == 0
    assert out.getvalue().splitlines()[0] == f"ok    {tmp_path / 'a.pkt'}  (0.100 s virtual)"
    out, err = io.StringIO(), io.StringIO()
    assert packetdrill([str(tmp_path)], out=out, err=err) == 2
    assert out.getvalue().splitlines()[-1].startswith("1 passed, 0 failed, 1 errors (2 scripts")
    assert "b.pkt:7: parse error at 'frob'" in err.getvalue()
    out, err = io.StringIO(), io.StringIO()
    assert packetdrill(["--ip_version=ipv6", str(tmp_path / "a.pkt")], out=out, err=err) == 1
    assert packetdrill([str(tmp_path / "nope.pkt")], out=out, err=err) == 2
    assert packetdrill([], out=out, err=err) == 2


def test_msg_fastopen_on_a_connected_socket_is_eisconn() -> None:
    # Fast Open is supported now (issue 16): on a connected socket Linux answers EISCONN
    status, msg = run(PASSIVE + "+0 send(4, ..., 10, MSG_FASTOPEN) = -1 EISCONN (connected)\n")
    assert status == "pass", msg
