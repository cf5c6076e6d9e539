"""Names inside a lab: getaddrinfo as glibc answers it (the real glibc is the oracle)."""

from __future__ import annotations

import socket as s
from typing import Any

import pytest
import trio

import netstack
from netstack import Lab
from netstack.socket.resolver import Names, Resolver

# Numeric hosts, services, flags and errors: no name lookup, so the machine's own
# glibc must give exactly the same answer (its /etc/hosts is not consulted).
GLIBC_CASES: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((None, 80), {}),
    ((None, 80), {"flags": s.AI_PASSIVE}),
    ((None, 80), {"type": s.SOCK_STREAM, "flags": s.AI_PASSIVE}),
    (("127.1", 80), {"type": s.SOCK_STREAM}),
    (("0x7f.1", 80), {"type": s.SOCK_STREAM}),
    (("10.0.0.1", 80, s.AF_INET6, s.SOCK_STREAM), {}),
    (("10.0.0.1", 80, s.AF_INET6, s.SOCK_STREAM), {"flags": s.AI_V4MAPPED}),
    (("::1", 80, s.AF_INET, s.SOCK_STREAM), {}),
    (("::ffff:1.2.3.4", 53, s.AF_INET), {}),
    (("10.0.0.1", "http"), {}),
    (("10.0.0.1", "domain"), {}),
    (("10.0.0.1", "http"), {"type": s.SOCK_RAW}),
    (("10.0.0.1", 80), {"type": s.SOCK_RAW}),
    (("10.0.0.1", "nosuchsvc"), {}),
    (("10.0.0.1", "http"), {"flags": s.AI_NUMERICSERV}),
    (("nosuch.invalid", 80), {"flags": s.AI_NUMERICHOST}),
    ((None, None), {}),
    (("10.0.0.1", 80, 99), {}),
    (("10.0.0.1", 80), {"flags": 0x10000}),
    ((None, 80), {"flags": s.AI_CANONNAME}),
    (("10.0.0.1", 80), {"type": s.SOCK_STREAM, "flags": s.AI_CANONNAME}),
    (("fe80::1%lo", 80), {"type": s.SOCK_STREAM}),
    (("fe80::1%nosuch", 80), {"type": s.SOCK_STREAM}),
    (("fe80::1%3", 80), {"type": s.SOCK_STREAM}),
    (("10.0.0.1", 80), {"type": s.SOCK_STREAM, "proto": 17}),
    (("10.0.0.1", 80), {"type": s.SOCK_DGRAM, "proto": 17}),
    (("10.0.0.1", 80), {"proto": 17}),
    (("10.0.0.1", 53), {"proto": 6}),
    (("10.0.0.1", 53), {"type": s.SOCK_RAW, "proto": 6}),
    ((None, 53), {"type": s.SOCK_RAW}),
    (("10.0.0.1", 80), {"type": 99}),
    (("1.2.3.4 ", 80), {"type": s.SOCK_STREAM, "flags": s.AI_NUMERICHOST}),
    (("", 80), {"type": s.SOCK_STREAM}),
    (("10.0.0.1", -1), {"type": s.SOCK_STREAM}),
    (("10.0.0.1", 70000), {"type": s.SOCK_STREAM}),
    (("10.0.0.1", b"80"), {"type": s.SOCK_STREAM}),
    (("*", 80, 0, s.SOCK_STREAM), {}),
    (("10.0.0.1", "*", 0, s.SOCK_STREAM), {}),
    (("10.0.0.1", "", 0, s.SOCK_STREAM), {}),
    (("10.0.0.1", " 80", 0, s.SOCK_STREAM), {}),
]


def _call(fn: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> Any:
    try:
        return fn(*args, **kw)
    except Exception as e:  # the error is part of the answer
        return (type(e).__name__, e.args)


def test_numeric_answers_match_the_real_glibc() -> None:
    async def main() -> list[Any]:
        async with netstack.open_lab() as lab:
            h = lab.add_host("h")
            r = Resolver(h.net, Names())
            return [
                (args, kw, _call(s.getaddrinfo, args, kw), _call(r.getaddrinfo, args, kw))
                for args, kw in GLIBC_CASES
            ]

    for args, kw, real, ours in netstack.run(main):
        assert ours == real, (args, kw)


def two_stacks(lab: Lab) -> tuple[netstack.Host, netstack.Host]:
    a, b = lab.add_host("a"), lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0")
    for h, n in ((a, 1), (b, 2)):
        h.ip(f"addr add 10.0.0.{n}/24 dev eth0")
        h.ip(f"-6 addr add 2001:db8::{n}/64 dev eth0 nodad")
    return a, b


async def test_host_names_ipv6_first_as_glibc(lab: Lab) -> None:
    a, b = two_stacks(lab)
    r = a.context.resolver
    assert r.getaddrinfo("b", 80, type=s.SOCK_STREAM) == [
        (s.AF_INET6, s.SOCK_STREAM, 6, "", ("2001:db8::2", 80, 0, 0)),
        (s.AF_INET, s.SOCK_STREAM, 6, "", ("10.0.0.2", 80)),
    ]
    assert r.getaddrinfo("B.", "http", s.AF_INET, flags=s.AI_CANONNAME) == [
        (s.AF_INET, s.SOCK_STREAM, 6, "b", ("10.0.0.2", 80)),
    ]
    assert r.getaddrinfo("b", 53, s.AF_INET6, s.SOCK_DGRAM, flags=s.AI_V4MAPPED | s.AI_ALL) == [
        (s.AF_INET6, s.SOCK_DGRAM, 17, "", ("2001:db8::2", 53, 0, 0)),
        (s.AF_INET6, s.SOCK_DGRAM, 17, "", ("::ffff:10.0.0.2", 53, 0, 0)),
    ]
    assert r.getaddrinfo("localhost", 1, type=s.SOCK_DGRAM) == [
        (s.AF_INET6, s.SOCK_DGRAM, 17, "", ("::1", 1, 0, 0)),
        (s.AF_INET, s.SOCK_DGRAM, 17, "", ("127.0.0.1", 1)),
    ]
    with pytest.raises(s.gaierror) as e:
        r.getaddrinfo("c", 80)
    assert e.value.args == (-2, "Name or service not known")
    b.ip("-6 addr flush dev eth0 scope global")  # names follow the addresses
    assert [x[4][0] for x in r.getaddrinfo("b", 80, type=s.SOCK_STREAM)] == ["10.0.0.2"]


async def test_unreachable_destinations_sort_last(lab: Lab) -> None:
    """Rule 1: a destination without a route (no source address) goes after one with."""
    a, _ = two_stacks(lab)
    lab.hosts_file("2001:db8:99::9 far\n10.0.0.9 far")
    got = a.context.resolver.getaddrinfo("far", 1, type=s.SOCK_STREAM)
    assert [x[4][0] for x in got] == ["10.0.0.9", "2001:db8:99::9"]


async def test_ula_before_ipv4_as_glibc_not_rfc6724(lab: Lab) -> None:
    """glibc's policy table (RFC 3484's, extended) gives a ULA precedence 40 and
    IPv4 10; RFC 6724 §2.1 would give 3 and 35 and put IPv4 first."""
    a, _ = two_stacks(lab)
    a.ip("-6 addr add fd00::1/64 dev eth0 nodad")
    lab.hosts_file("fd00::2 ula\n10.0.0.2 ula")
    got = a.context.resolver.getaddrinfo("ula", 1, type=s.SOCK_STREAM)
    assert [x[4][0] for x in got] == ["fd00::2", "10.0.0.2"]


async def test_addrconfig_and_numerichost(lab: Lab) -> None:
    _, b = two_stacks(lab)
    r = b.context.resolver
    b.ip("-6 addr flush dev eth0")  # no IPv6 address but ::1 (and lo's)
    got = r.getaddrinfo(None, 80, type=s.SOCK_STREAM, flags=s.AI_PASSIVE | s.AI_ADDRCONFIG)
    assert [x[4][0] for x in got] == ["0.0.0.0"]
    with pytest.raises(s.gaierror) as e:
        r.getaddrinfo("a", 80, flags=s.AI_NUMERICHOST)
    assert e.value.args[0] == s.EAI_NONAME


async def test_hosts_file_and_getnameinfo(lab: Lab) -> None:
    a, _ = two_stacks(lab)
    text = lab.hosts_file("192.0.2.80 web www # the web server\n")
    assert text.splitlines() == [
        "127.0.0.1\tlocalhost",
        "::1\tlocalhost ip6-localhost ip6-loopback",
        "192.0.2.80\tweb www",
        "10.0.0.1\ta",
        "2001:db8::1\ta",
        "10.0.0.2\tb",
        "2001:db8::2\tb",
    ]
    r = a.context.resolver
    assert r.getaddrinfo("www", 80, s.AF_INET, s.SOCK_STREAM)[0][4] == ("192.0.2.80", 80)
    assert r.getnameinfo(("10.0.0.2", 80), 0) == ("b", "http")
    assert r.getnameinfo(("192.0.2.80", 53), s.NI_DGRAM) == ("web", "domain")
    assert r.getnameinfo(("10.9.9.9", 80), s.NI_NUMERICSERV) == ("10.9.9.9", "80")
    with pytest.raises(s.gaierror):
        r.getnameinfo(("10.9.9.9", 80), s.NI_NAMEREQD)
    with pytest.raises(ValueError, match="hosts line 1"):
        lab.hosts_file("999.1.1.1 bad")
    async with a.as_current():
        assert (await trio.socket.getnameinfo(("10.0.0.2", 22), 0)) == ("b", "ssh")
