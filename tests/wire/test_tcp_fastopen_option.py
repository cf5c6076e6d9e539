"""The TCP Fast Open option (RFC 7413, kind 34, and the experimental 254/0xF989) on the wire.

Byte literals as Linux writes them (tcp_options_write), with dpkt as the oracle.
"""

from __future__ import annotations

import dpkt
import pytest

from netstack.wire.tcp import (
    TCPOPT_EXP,
    TCPOPT_FASTOPEN,
    TcpOutOptions,
    fastopen_option_space,
    parse_fastopen_option,
    parse_options,
)

COOKIE = bytes.fromhex("0123456789abcdef")


def test_syn_with_cookie_request_bytes() -> None:
    # a Linux client's SYN asking for a cookie: <mss 1460,sackOK,TS,nop,wscale 7,FO,nop,nop>
    opts = TcpOutOptions(mss=1460, ws=7, sack_perm=True, ts=(100, 0), fastopen=(b"", False))
    wire = opts.tobytes()
    assert wire == bytes.fromhex("020405b4 0402080a 00000064 00000000 01030307 22020101")
    parsed = dpkt.tcp.parse_opts(wire)
    assert (TCPOPT_FASTOPEN, b"") in parsed
    assert parse_options(wire, 0, len(wire)).fastopen == b""


def test_eight_byte_cookie_is_padded_with_two_nops() -> None:
    wire = TcpOutOptions(fastopen=(COOKIE, False)).tobytes()
    assert wire == bytes.fromhex("220a0123456789abcdef0101")
    assert dpkt.tcp.parse_opts(wire) == [
        (TCPOPT_FASTOPEN, COOKIE),
        (dpkt.tcp.TCP_OPT_NOP, b""),
        (dpkt.tcp.TCP_OPT_NOP, b""),
    ]
    assert parse_options(wire, 0, len(wire)).fastopen == COOKIE


def test_experimental_form() -> None:
    wire = TcpOutOptions(fastopen=(COOKIE, True)).tobytes()
    assert wire == bytes.fromhex("fe0cf9890123456789abcdef")
    assert dpkt.tcp.parse_opts(wire) == [(TCPOPT_EXP, bytes.fromhex("f989") + COOKIE)]
    assert parse_options(wire, 0, len(wire)).fastopen == COOKIE
    request = TcpOutOptions(fastopen=(b"", True)).tobytes()
    assert request == bytes.fromhex("fe04f989")


def test_poisoned_buffer_is_fully_written() -> None:
    opts = TcpOutOptions(mss=1460, fastopen=(COOKIE[:4], False))
    buf = bytearray(b"\xa5" * opts.size())
    opts.write(buf, 0)
    assert bytes(buf) == bytes.fromhex("020405b4 22060123 4567 0101")


@pytest.mark.parametrize(
    ("length", "expected"),
    [(0, 0), (4, 4), (8, 8), (16, 16), (2, -1), (18, -1), (7, -1), (-1, -1)],
)
def test_parse_fastopen_option_lengths(length: int, expected: int) -> None:
    assert parse_fastopen_option(length, bytes(range(20)), False)[0] == expected


def test_option_space() -> None:
    assert fastopen_option_space(0, False) == 4
    assert fastopen_option_space(8, False) == 12
    assert fastopen_option_space(8, True) == 12
    assert fastopen_option_space(0, True) == 4
