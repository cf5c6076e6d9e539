"""``traceroute``: the path to a host, hop by hop, as Debian's traceroute 2.1 prints it.

Theory of operation: for each TTL from ``-f`` (1) to ``-m`` (30) traceroute
sends ``-q`` (3) probes and waits for what comes back: an ICMP *time
exceeded* from the router where the TTL ran out, or, from the destination
itself, an ICMP *port unreachable* (the default method: UDP datagrams to
port 33434, one port higher for every probe) or an echo reply (``-I``:
ICMP echo requests). ``-U`` sends UDP to one port (53). The answers arrive
as the kernel reports them to a socket with ``IP_RECVERR`` set — the error
queue gives the ICMP type and code and the *offender*, the router that sent
it — so the probes are ordinary datagram sockets with ``IP_TTL`` set, as
traceroute's ``default``, ``udp`` and ``icmp`` modules use them (the icmp
one over a ping socket here).

Each hop prints on one line: ``%2u`` and, per probe, the address (after a
reverse lookup, ``name (addr)``; ``-n``: the address alone) when it differs
from the previous probe's, the round trip ``  %.3f ms``, or `` *`` when
nothing came within the wait (``-w``, 5 s). An unreachable other than the
destination's port adds ``!H``, ``!N``, ``!P``, ``!X``, ``!F-mtu``… after
the time and ends the trace, as reaching the destination does. The three
probes of a hop go out together; a hop ends when all have an answer or the
wait is over (traceroute's ``-N 16`` window over several hops only changes
the timing).

Debian traceroute: traceroute/traceroute.c (print_header(), print_probe(),
parse_icmp_res()), traceroute/mod-udp.c, mod-icmp.c.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any, Final

import attrs
import trio

from netstack.core.sock import IP_RECVERR, IP_TTL, IPPROTO_IP, SOCK_DGRAM
from netstack.ipv6.sock import IPPROTO_IPV6, IPV6_RECVERR, IPV6_UNICAST_HOPS
from netstack.userspace import netdb
from netstack.userspace.netdb import AF_INET, AF_INET6, AF_UNSPEC
from netstack.wire.ipv4 import IPPROTO_ICMP, ntoa
from netstack.wire.ipv6 import IPPROTO_ICMPV6
from netstack.wire.ipv6 import ntoa as ntoa6

if TYPE_CHECKING:
    from netstack.socket import Socket
    from netstack.userspace.process import Machine, Process

__all__ = ["TRACEROUTE_USAGE", "main"]

_EE: Final = struct.Struct("=IBBBBII")

TRACEROUTE_USAGE: Final = (
    "Usage:\n"
    "  traceroute [ -46dFITnreAUDV ] [ -f first_ttl ] [ -g gate,... ] [ -i device ] "
    "[ -m max_ttl ] [ -N squeries ] [ -p port ] [ -t tos ] [ -l flow_label ] "
    "[ -w MAX,HERE,NEAR ] [ -q nqueries ] [ -s src_addr ] [ -z sendwait ] [ --fwmark=num ] "
    "host [ packetlen ]\n"
    "Options:\n"
    "  -4                          Use IPv4\n"
    "  -6                          Use IPv6\n"
    "  -f first_ttl  --first=first_ttl\n"
    "                              Start from the first_ttl hop (instead from 1)\n"
    "  -I  --icmp                  Use ICMP ECHO for tracerouting\n"
    "  -m max_ttl  --max-hops=max_ttl\n"
    "                              Set the max number of hops (max TTL to be\n"
    "                              reached). Default is 30\n"
    "  -N squeries  --sim-queries=squeries\n"
    "                              Set the number of probes to be tried\n"
    "                              simultaneously (default is 16)\n"
    "  -n                          Do not resolve IP addresses to their domain names\n"
    "  -p port  --port=port        Set the destination port to use. It is either\n"
    '                              initial udp port value for "default" method\n'
    "                              (incremented by each probe, default is 33434), or\n"
    '                              initial seq for "icmp" (incremented as well,\n'
    "                              default from 1), or some constant destination\n"
    "                              port for other methods (with default of 80 for\n"
    '                              "tcp", 53 for "udp", etc.)\n'
    "  -w MAX,HERE,NEAR  --wait=MAX,HERE,NEAR\n"
    "                              Wait for a probe no more than HERE (default 3)\n"
    "                              times longer than a response from the same hop,\n"
    "                              or no more than NEAR (default 10) times than some\n"
    "                              next hop, or MAX (default 5.0) seconds (float\n"
    "                              point values allowed too)\n"
    "  -q nqueries  --queries=nqueries\n"
    "                              Set the number of probes per each hop. Default is\n"
    "                              3\n"
    "  -U  --udp                   Use UDP to particular port for tracerouting\n"
    "                              (instead of increasing the port per each probe),\n"
    "                              default port is 53\n"
    "  -V  --version               Print version info and exit\n"
    "  --help                      Read this help and exit\n"
    "\n"
    "Arguments:\n"
    "+     host          The host to traceroute to\n"
    "      packetlen     The full packet length (default is the length of an IP\n"
    "                    header plus 40). Can be ignored or increased to a minimal\n"
    "                    allowed value"
)

_VERSION: Final = "Modern traceroute for Linux, version 2.1.2"
_FLAGS: Final = "46dFITnreAUDV"
_WITH_VALUE: Final = "fgimNptlwqsz"
_LONG: Final = {
    "--icmp": "-I",
    "--udp": "-U",
    "--version": "-V",
    "--first": "-f",
    "--max-hops": "-m",
    "--port": "-p",
    "--queries": "-q",
    "--wait": "-w",
    "--sim-queries": "-N",
}
# parse_icmp_res(): the ICMP unreachable codes and their marks (IPv4, then IPv6)
_UNREACH4: Final = {0: "!N", 1: "!H", 2: "!P", 5: "!S", 6: "!N", 7: "!H", 8: "!H", 9: "!X",
                    10: "!X", 11: "!N", 12: "!H", 13: "!X", 14: "!V", 15: "!C"}  # fmt: skip
_UNREACH6: Final = {0: "!N", 1: "!X", 2: "!S", 3: "!H", 5: "!X", 6: "!X"}


@attrs.define
class _Probe:
    """One probe: where its answer came from, when, and its mark (traceroute's ``probe``)."""

    sock: Socket
    seq: int
    sent: float
    addr: str = ""
    rtt: float | None = None
    mark: str = ""
    final: bool = False
    done: bool = False


@attrs.define
class _Options:
    family: int = AF_UNSPEC
    method: str = "default"  # "default" (UDP, port per probe), "udp" (-U), "icmp" (-I)
    numeric: bool = False
    first: int = 1
    max_ttl: int = 30
    queries: int = 3
    port: int | None = None
    wait: float = 5.0
    host: str | None = None
    packetlen: int | None = None


class _Usage(Exception):
    """traceroute gives up with a message (exit status 2)."""


def _number(opt: str, value: str) -> float:
    try:
        return float(value) if opt == "w" else int(value, 0)
    except ValueError:
        raise _Usage(f"Cannot handle `-{opt}' option with arg `{value}' (argc 2)") from None


def _parse(argv: list[str]) -> _Options | str:
    o = _Options()
    i = 0
    positional = 0
    while i < len(argv):
        word = _LONG.get(argv[i].split("=")[0], argv[i])
        if "=" in argv[i] and argv[i].startswith("--"):
            argv = [*argv[:i], word, argv[i].split("=", 1)[1], *argv[i + 1 :]]
        i += 1
        if word == "--help":
            return "help"
        if word.startswith("-") and len(word) > 1:
            j = 1
            while j < len(word):
                c = word[j]
                j += 1
                if c in _FLAGS:
                    if c == "V":
                        return "version"
                    if c in "46":
                        o.family = AF_INET if c == "4" else AF_INET6
                    elif c == "I":
                        o.method = "icmp"
                    elif c == "U":
                        o.method = "udp"
                    elif c == "n":
                        o.numeric = True
                    continue
                if c not in _WITH_VALUE:
                    raise _Usage(f"Bad option `-{c}' (argc {i})")
                if j < len(word):
                    value, j = word[j:], len(word)
                elif i < len(argv):
                    value = argv[i]
                    i += 1
                else:
                    raise _Usage(f"Option `-{c}' (argc {i}) requires an argument: `-{c} ...'")
                n = _number(c, value)
                if c == "f":
                    o.first = int(n)
                elif c == "m":
                    o.max_ttl = int(n)
                elif c == "q":
                    o.queries = int(n)
                elif c == "p":
                    o.port = int(n)
                elif c == "w":
                    o.wait = float(n)
            continue
        positional += 1
        if positional == 1:
            o.host = word
        elif positional == 2:
            try:
                o.packetlen = int(word)
            except ValueError:
                raise _Usage(
                    f'Cannot handle "packetlen" cmdline arg `{word}\' on position 2 (argc {i})'
                ) from None
        else:
            raise _Usage(f"Extra arg `{word}' (position {positional}, argc {i})")
    if o.host is None:
        return "help"
    if not 1 <= o.queries <= 10:
        raise _Usage("no more than 10 probes per hop")
    if not 1 <= o.max_ttl <= 255:
        raise _Usage(
            "max hops cannot be more than 255" if o.max_ttl > 255 else "first hop out of range"
        )
    if not 1 <= o.first <= o.max_ttl:
        raise _Usage("first hop out of range")
    return o


async def _send_probe(
    host: Machine, o: _Options, family: int, addr: str, ttl: int, seq: int, data: bytes
) -> _Probe:
    """One probe on its own socket (mod-udp.c / mod-icmp.c, *_send_probe())."""
    v6 = family == AF_INET6
    if o.method == "icmp":
        sock = host.socket(family, SOCK_DGRAM, IPPROTO_ICMPV6 if v6 else IPPROTO_ICMP)
    else:
        sock = host.socket(family, SOCK_DGRAM, 0)
    if v6:
        sock.setsockopt(IPPROTO_IPV6, IPV6_RECVERR, 1)
        sock.setsockopt(IPPROTO_IPV6, IPV6_UNICAST_HOPS, ttl)
    else:
        sock.setsockopt(IPPROTO_IP, IP_RECVERR, 1)
        sock.setsockopt(IPPROTO_IP, IP_TTL, ttl)
    clock = host.net.clock
    if o.method == "icmp":
        echo = struct.pack("!BBHHH", 128 if v6 else 8, 0, 0, 0, seq) + data
        probe = _Probe(sock, seq, clock.now())
        await sock.sendto(echo, (addr, 0))
        return probe
    port = (o.port if o.port is not None else 33434) + (seq - 1 if o.method == "default" else 0)
    if o.method == "udp" and o.port is None:
        port = 53
    await sock.connect((addr, port))
    probe = _Probe(sock, seq, clock.now())
    try:
        await sock.send(data)
    except OSError:
        pass  # an error already queued (EHOSTUNREACH…) is read from the error queue
    return probe


def _collect(probe: _Probe, family: int, dest: str, now: float) -> None:
    """Read what came back for *probe*. traceroute.c: recv_reply() + parse_icmp_res()."""
    sk = probe.sock.sock
    v6 = family == AF_INET6
    while sk.error_queue and not probe.done:
        _payload, anc, _flags, _addr = sk.recv_errqueue(65535)
        for _level, _type, raw in anc:
            _err, origin, etype, ecode, _pad, info, _data = _EE.unpack_from(raw)
            if v6:
                offender = ntoa6(int.from_bytes(raw[_EE.size + 8 : _EE.size + 24], "big"))
            else:
                offender = ntoa(int.from_bytes(raw[_EE.size + 4 : _EE.size + 8], "big"))
            probe.addr, probe.rtt, probe.done = offender, now - probe.sent, True
            if origin not in (2, 3):  # a local error, no ICMP: nothing came back
                probe.addr, probe.rtt = "", None
                continue
            unreach = etype == (1 if v6 else 3)
            if unreach:
                port_unreach = ecode == (4 if v6 else 3)
                if port_unreach:
                    probe.final = True  # the destination's own answer
                elif ecode == 4 and not v6:
                    probe.mark, probe.final = f"!F-{info}", True
                else:
                    probe.mark = (_UNREACH6 if v6 else _UNREACH4).get(ecode, f"!<{ecode}>")
                    probe.final = True
            elif v6 and etype == 2:
                probe.mark, probe.final = f"!F-{info}", True
    if probe.done:
        return
    if probe.sock.type == SOCK_DGRAM and probe.sock.proto in (IPPROTO_ICMP, IPPROTO_ICMPV6):
        try:
            data, _anc, _flags, peer = probe.sock.recvmsg_nowait(65535)
        except OSError:
            return
        if len(data) >= 8 and (data[6] << 8 | data[7]) == probe.seq:
            probe.addr, probe.rtt, probe.done, probe.final = peer[0], now - probe.sent, True, True


async def _await_answer(probe: _Probe, family: int, dest: str, clock: Any) -> None:
    """Wait until *probe*'s socket has its answer (poll() in traceroute.c's do_it())."""
    _collect(probe, family, dest, clock.now())
    while not probe.done:
        await probe.sock.wait_readable()
        _collect(probe, family, dest, clock.now())


def _hop_line(ttl: int, probes: list[_Probe], show: dict[str, str]) -> str:
    """traceroute.c, print_probe() for the probes of one hop."""
    out = [f"{ttl:2d} "]
    previous = ""
    for p in probes:
        if not p.addr:
            out.append(" *")
            continue
        if p.addr != previous:
            out.append(" " + show[p.addr])
            previous = p.addr
        if p.rtt is not None:
            out.append(f"  {p.rtt * 1000:.3f} ms")
        if p.mark:
            out.append(f" {p.mark}")
    return "".join(out)


async def main(proc: Process, host: Machine, argv: list[str]) -> int:
    """The ``traceroute`` command (see the module docstring)."""
    try:
        parsed = _parse(list(argv))
    except _Usage as e:
        proc.err(str(e))
        return 2
    if parsed == "version":
        proc.out(_VERSION)
        return 0
    if isinstance(parsed, str):
        proc.err(TRACEROUTE_USAGE)
        return 0
    o = parsed
    assert o.host is not None
    try:
        family, addr = netdb.getaddrinfo(proc, o.host, o.family)[0]
    except netdb.GaiError as e:
        proc.err(f"{o.host}: {e}")
        proc.err(f'Cannot handle "host" cmdline arg `{o.host}\' on position 1 (argc 1)')
        return 2
    header_len = 40 if family == AF_INET6 else 20
    proto_len = 8
    default_len = header_len + 40
    total = max(o.packetlen if o.packetlen is not None else default_len, header_len + proto_len)
    data = bytes((0x40 + i) & 0xFF for i in range(total - header_len - proto_len))
    proc.out(f"traceroute to {o.host} ({addr}), {o.max_ttl} hops max, {total} byte packets")

    def show(address: str) -> str:
        if o.numeric:
            return address
        return f"{netdb.getnameinfo(proc, address) or address} ({address})"

    clock = host.net.clock
    seq = (o.first - 1) * o.queries
    for ttl in range(o.first, o.max_ttl + 1):
        probes: list[_Probe] = []
        for _ in range(o.queries):
            seq += 1
            try:
                probes.append(await _send_probe(host, o, family, addr, ttl, seq, data))
            except OSError as e:
                proc.err(f"send: {e.strerror or e}")
                return 1
        with trio.move_on_at(clock.now() + o.wait):
            async with trio.open_nursery() as nursery:
                for p in probes:
                    nursery.start_soon(_await_answer, p, family, addr, clock)
        for p in probes:
            p.sock.close()
        names = {p.addr: show(p.addr) for p in probes if p.addr}
        proc.out(_hop_line(ttl, probes, names))
        if any(p.final for p in probes):
            break
    return 0
