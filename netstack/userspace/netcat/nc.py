"""``nc``: TCP and UDP connections and listeners, as OpenBSD's netcat (Debian's netcat-openbsd).

Theory of operation: ``nc HOST PORT`` connects a TCP socket (``-u``: a UDP
one) and prints what arrives until the peer closes (or ``-w`` seconds pass
without data); ``nc -l [-p] PORT`` listens (``-u``: binds), takes one
connection and prints what it sends until it closes. ``-z`` only checks
that something listens: a TCP connection that succeeds, or a UDP probe
(``X``) no ICMP port unreachable answered; ``-v`` says so on stderr in
netcat's words (``Connection to h2 (10.0.2.2) 5000 port [tcp/*]
succeeded!``, ``Listening on 0.0.0.0 5000``, ``Connection received on
10.0.1.1 40000``) and failures are netcat's (``nc: connect to 10.0.2.2 port
5001 (tcp) failed: Connection refused``, exit status 1). A shell command
has no standard input here, so a client sends nothing: pair it with a
listener (``b nc -l 5000 &``) or a server of the lab (netserver's 12865).

netcat-openbsd: netcat.c (main(), remote_connect(), local_listen(), readwrite(),
udptest(), report_sock(), report_connect()).
"""

from __future__ import annotations

import errno
import os
from typing import TYPE_CHECKING, Final

import attrs
import trio

from netstack.core.sock import SOCK_DGRAM, SOCK_STREAM
from netstack.userspace import netdb
from netstack.userspace.netdb import AF_INET, AF_INET6, AF_UNSPEC

if TYPE_CHECKING:
    from netstack.socket import Socket
    from netstack.userspace.process import Machine, Process

__all__ = ["NC_USAGE", "main"]

NC_USAGE: Final = (
    "usage: nc [-46CDdFhklNnrStUuvZz] [-I length] [-i interval] [-M ttl]\n"
    "\t  [-m minttl] [-O length] [-P proxy_username] [-p source_port]\n"
    "\t  [-q seconds] [-s sourceaddr] [-T keyword] [-V rtable] [-W recvlimit]\n"
    "\t  [-w timeout] [-X proxy_protocol] [-x proxy_address[:port]]\n"
    "\t  [destination] [port]"
)
_FLAGS: Final = "46CDdFhklNnrStUuvZz"
_WITH_VALUE: Final = "IiMmOPpqsTVWwXx"


@attrs.define
class _Args:
    family: int = AF_UNSPEC
    listen: bool = False
    udp: bool = False
    zero: bool = False
    verbose: bool = False
    numeric: bool = False
    timeout: float | None = None
    source_port: int | None = None
    host: str | None = None
    port: str | None = None


def _port(text: str) -> int | None:
    return int(text) if text.isdigit() and 0 < int(text) < 65536 else None


def _parse(proc: Process, argv: list[str]) -> _Args | int:
    a = _Args()
    operands: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if not word.startswith("-") or len(word) == 1:
            operands.append(word)
            continue
        j = 1
        while j < len(word):
            c = word[j]
            j += 1
            if c in _FLAGS:
                if c == "h":
                    proc.err(NC_USAGE)
                    return 1
                if c in "46":
                    a.family = AF_INET if c == "4" else AF_INET6
                a.listen |= c == "l"
                a.udp |= c == "u"
                a.zero |= c == "z"
                a.verbose |= c == "v"
                a.numeric |= c == "n"
                continue
            if c not in _WITH_VALUE:
                proc.err(f"nc: invalid option -- '{c}'")
                proc.err(NC_USAGE)
                return 1
            if j < len(word):
                value, j = word[j:], len(word)
            elif i < len(argv):
                value = argv[i]
                i += 1
            else:
                proc.err(f"nc: option requires an argument -- '{c}'")
                proc.err(NC_USAGE)
                return 1
            if c == "w":
                try:
                    a.timeout = float(int(value))
                except ValueError:
                    proc.err(f"nc: timeout {value}: invalid")  # strtonum(): "invalid"
                    return 1
            elif c == "p":
                a.source_port = _port(value)
                if a.source_port is None:
                    proc.err(f"nc: port number invalid: {value}")
                    return 1
    if a.listen:
        if len(operands) == 1 and a.source_port is None:
            a.port = operands[0]
        elif len(operands) <= 1 and a.source_port is not None:
            a.host = operands[0] if operands else None
            a.port = str(a.source_port)
        elif len(operands) == 2:
            a.host, a.port = operands
    elif len(operands) == 2:
        a.host, a.port = operands
    if a.port is None or (not a.listen and a.host is None):
        proc.err(NC_USAGE)
        return 1
    return a


async def _print_until_eof(proc: Process, sock: Socket, idle_limit: float | None) -> None:
    """readwrite(): what arrives goes to stdout, line by line, until EOF (or -w idle)."""
    pending = b""
    while True:
        with trio.move_on_after(idle_limit if idle_limit is not None else float("inf")) as idle:
            data = await sock.recv(65536)
        if idle.cancelled_caught or not data:
            break
        pending += data
        *lines, pending = pending.split(b"\n")
        for line in lines:
            proc.out(line.decode(errors="replace"))
    if pending:
        proc.out(pending.decode(errors="replace"))


async def _listen(proc: Process, host: Machine, a: _Args, port: int) -> int:
    family = a.family if a.family != AF_UNSPEC else AF_INET
    bind_addr = "0.0.0.0" if family == AF_INET else "::"
    if a.host is not None:
        try:
            family, bind_addr = netdb.getaddrinfo(proc, a.host, a.family)[0]
        except netdb.GaiError as e:
            proc.err(f'nc: getaddrinfo for host "{a.host}" port {port}: {e}')
            return 1
    sock = host.socket(family, SOCK_DGRAM if a.udp else SOCK_STREAM, 0)
    try:
        await sock.bind((bind_addr, port))
    except OSError as e:
        proc.err(f"nc: {e.strerror or os.strerror(e.errno or 0)}")
        sock.close()
        return 1
    if a.verbose:
        proc.err(f"{'Bound' if a.udp else 'Listening'} on {bind_addr} {port}")
    with proc.interrupt:
        if a.udp:
            while True:
                data, peer = await sock.recvfrom(65536)
                proc.out(data.decode(errors="replace").rstrip("\n"))
        sock.listen(1)
        conn, peer = await sock.accept()
        sock.close()
        if a.verbose:  # report_sock(): the peer's name unless -n
            name = None if a.numeric else netdb.getnameinfo(proc, str(peer[0]))
            proc.err(f"Connection received on {name or peer[0]} {peer[1]}")
        await _print_until_eof(proc, conn, None)
        conn.close()
        return 0
    sock.close()
    return 0


async def main(proc: Process, host: Machine, argv: list[str]) -> int:
    """The ``nc`` command (see the module docstring)."""
    a = _parse(proc, argv)
    if isinstance(a, int):
        return a
    assert a.port is not None
    port = _port(a.port)
    if port is None:
        proc.err(f"nc: port number invalid: {a.port}")
        return 1
    if a.listen:
        return await _listen(proc, host, a, port)
    assert a.host is not None
    try:
        family, addr = netdb.getaddrinfo(proc, a.host, a.family)[0]
    except netdb.GaiError as e:
        proc.err(f'nc: getaddrinfo for host "{a.host}" port {port}: {e}')
        return 1
    proto = "udp" if a.udp else "tcp"
    sock = host.socket(family, SOCK_DGRAM if a.udp else SOCK_STREAM, 0)
    try:
        if a.source_port is not None:
            await sock.bind(("0.0.0.0" if family == AF_INET else "::", a.source_port))
        with trio.move_on_after(a.timeout if a.timeout is not None else float("inf")) as t:
            await sock.connect((addr, port))
        if t.cancelled_caught:
            proc.err(
                f"nc: connect to {addr} port {port} ({proto}) timed out: "
                f"{os.strerror(errno.EINPROGRESS)}"
            )
            return 1
        if a.udp and a.zero:  # udptest(): a probe; an ICMP port unreachable refuses it
            for _ in range(3):
                await sock.send(b"X")
                await trio.sleep(1)
            await sock.send(b"X")
    except OSError as e:
        if not (a.udp and a.zero):
            proc.err(f"nc: connect to {addr} port {port} ({proto}) failed: {e.strerror}")
        return 1
    finally:
        if a.zero:
            sock.close()
    if a.verbose:
        name = a.host if netdb.numeric(a.host) is not None or a.numeric else f"{a.host} ({addr})"
        proc.err(f"Connection to {name} {port} port [{proto}/*] succeeded!")
    if a.zero:
        return 0
    with proc.interrupt:
        if a.udp:
            while True:
                data = await sock.recv(65536)
                proc.out(data.decode(errors="replace").rstrip("\n"))
        await _print_until_eof(proc, sock, a.timeout)
    sock.close()
    return 0
