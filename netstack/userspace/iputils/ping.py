"""``ping``: ICMP echo over a ping socket, as iputils does it.

Theory of operation: one ping socket (``SOCK_DGRAM``/``IPPROTO_ICMP``) with
``IP_RECVERR`` set, like iputils; every ``interval`` seconds an echo request
with a timestamp in its payload goes out; replies are matched by sequence
number, and ICMP errors about our requests (host unreachable, TTL exceeded…)
are read from the error queue and reported per probe, as ``ping`` prints
``From 10.0.0.1 icmp_seq=1 Destination Host Unreachable``.

An IPv6 destination (``2001:db8::2``, ``fe80::1%eth0``) takes an ICMPv6
ping socket (``IPPROTO_ICMPV6``, echo request 128, ``IPV6_RECVERR`` and
``IPV6_RECVHOPLIMIT``) and iputils' IPv6 wording (``PING a(a) 56 data
bytes``, ``Destination unreachable: Address unreachable``, ``Packet too big:
mtu=1280``, ``Time exceeded: Hop limit``).

All timing is on the host's Trio clock (virtual under ``MockClock``).

:func:`main` is the ``ping`` command: iputils' option letters (``-c -i -W -s
-t -w -q``, bundled or not, the value attached or the next word), its range
checks and messages, a host name resolved through ``/etc/hosts``, the lines
printed as they happen, and exit status 0 when a reply came, 1 when none did,
2 for a usage error. :func:`ping` is the library behind it (``await
host.ping(…)`` calls it).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final

import attrs
import trio

from netstack.core.sock import (
    IP_RECVERR,
    IP_RECVTTL,
    IP_TTL,
    IPPROTO_IP,
    SOCK_DGRAM,
)
from netstack.errors import ConfigError
from netstack.ipv6.sock import (
    IPPROTO_IPV6,
    IPV6_RECVERR,
    IPV6_RECVHOPLIMIT,
    IPV6_UNICAST_HOPS,
    SO_EE_ORIGIN_ICMP6,
)
from netstack.socket.socket import parse_inet6_addr, socket_create
from netstack.wire.icmp import (
    ICMP_DEST_UNREACH,
    ICMP_FRAG_NEEDED,
    ICMP_HOST_UNREACH,
    ICMP_NET_UNREACH,
    ICMP_PORT_UNREACH,
    ICMP_PROT_UNREACH,
    ICMP_TIME_EXCEEDED,
)
from netstack.wire.icmpv6 import (
    ICMPV6_ADDR_UNREACH,
    ICMPV6_ADM_PROHIBITED,
    ICMPV6_DEST_UNREACH,
    ICMPV6_EXC_HOPLIMIT,
    ICMPV6_NOROUTE,
    ICMPV6_NOT_NEIGHBOUR,
    ICMPV6_PARAMPROB,
    ICMPV6_PKT_TOOBIG,
    ICMPV6_PORT_UNREACH,
    ICMPV6_TIME_EXCEED,
)
from netstack.wire.ipv4 import IPPROTO_ICMP, aton, ntoa
from netstack.wire.ipv6 import IPPROTO_ICMPV6
from netstack.wire.ipv6 import ntoa as ntoa6

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.userspace.process import Machine, Process

__all__ = ["PING_USAGE", "PingReply", "PingResult", "main", "ping"]

_EE: Final = struct.Struct("=IBBBBII")
_TS: Final = struct.Struct("!d")

UNREACH_TEXT: Final = {
    ICMP_NET_UNREACH: "Destination Net Unreachable",
    ICMP_HOST_UNREACH: "Destination Host Unreachable",
    ICMP_PROT_UNREACH: "Destination Protocol Unreachable",
    ICMP_PORT_UNREACH: "Destination Port Unreachable",
    ICMP_FRAG_NEEDED: "Frag needed",
}


@attrs.frozen
class PingReply:
    """One probe's outcome: a reply (``rtt`` in seconds) or an error."""

    seq: int
    rtt: float | None
    ttl: int = 0
    size: int = 0
    source: str = ""
    error: str = ""


@attrs.frozen
class PingResult:
    """What ``ping`` reports: per-probe outcomes and the summary figures."""

    destination: str
    transmitted: int
    replies: tuple[PingReply, ...]
    errors: tuple[PingReply, ...]
    time: float

    @property
    def received(self) -> int:
        return len(self.replies)

    @property
    def rtts(self) -> list[float]:
        """Round-trip times of the replies, in seconds, in sequence order."""
        return [r.rtt for r in self.replies if r.rtt is not None]

    @property
    def loss(self) -> float:
        """Fraction of probes without a reply."""
        return 1.0 - self.received / self.transmitted if self.transmitted else 0.0

    def __bool__(self) -> bool:
        return self.received > 0

    def summary(self) -> str:
        """The closing lines ``ping`` prints.

        iputils: ping/ping_common.c, ping_print_finish() and
        ping_print_statistics(): *time* is the last transmission's time less
        the start (``cur_time - start_time``: one probe takes 0 ms, waiting for
        its reply does not count), the loss is printed with ``%g``, and the
        rtt figures are integer microseconds, the deviation
        ``llsqrt(tsum2/n - tavg²)`` as iputils computes it.
        """
        lines = [f"--- {self.destination} ping statistics ---"]
        err = f"+{len(self.errors)} errors, " if self.errors else ""
        loss = f"{100.0 * (self.transmitted - self.received) / self.transmitted:g}%"
        ms = int(self.time * 1000 + 0.5)
        lines.append(
            f"{self.transmitted} packets transmitted, {self.received} received, "
            f"{err}{loss} packet loss, time {ms}ms"
        )
        usecs = [int(r * 1_000_000) for r in self.rtts]
        if usecs:
            n = len(usecs)
            tsum, tsum2 = sum(usecs), sum(u * u for u in usecs)
            tavg = tsum // n
            if tsum < 2**31 - 1:  # "this slightly clumsy computation order" of iputils
                tvar = (tsum2 - (tsum * tsum) // n) // n
            else:
                tvar = tsum2 // n - tavg * tavg
            tdev = math.isqrt(max(tvar, 0))
            figures = "/".join(f"{u // 1000}.{u % 1000:03d}" for u in (min(usecs), tavg))
            figures += "/" + "/".join(f"{u // 1000}.{u % 1000:03d}" for u in (max(usecs), tdev))
            lines.append(f"rtt min/avg/max/mdev = {figures} ms")
        return "\n".join(lines)


def _ms(rtt: float) -> str:
    """iputils' precision: 3 significant digits below 100 ms, whole ms above."""
    ms = rtt * 1000
    if ms >= 100:
        return f"{ms:.0f}"
    if ms >= 10:
        return f"{ms:.1f}"
    if ms >= 1:
        return f"{ms:.2f}"
    return f"{ms:.3f}"


UNREACH6_TEXT: Final = {
    ICMPV6_NOROUTE: "No route",
    ICMPV6_ADM_PROHIBITED: "Administratively prohibited",
    ICMPV6_NOT_NEIGHBOUR: "Beyond scope of source address",
    ICMPV6_ADDR_UNREACH: "Address unreachable",
    ICMPV6_PORT_UNREACH: "Port unreachable",
}


def _error6_text(icmp_type: int, code: int, info: int) -> str:
    """iputils: ping/ping6_common.c, print_icmp()."""
    if icmp_type == ICMPV6_DEST_UNREACH:
        return "Destination unreachable: " + UNREACH6_TEXT.get(code, f"Unknown code {code}")
    if icmp_type == ICMPV6_PKT_TOOBIG:
        return f"Packet too big: mtu={info}"
    if icmp_type == ICMPV6_TIME_EXCEED:
        if code == ICMPV6_EXC_HOPLIMIT:
            return "Time exceeded: Hop limit"
        return (
            "Time exceeded: Defragmentation failure" if code == 1 else f"Time exceeded: code {code}"
        )
    if icmp_type == ICMPV6_PARAMPROB:
        return f"Parameter problem: code {code} at {info}"
    return f"Bad ICMP type: {icmp_type}"


def _error_text(icmp_type: int, code: int, info: int) -> str:
    if icmp_type == ICMP_DEST_UNREACH:
        if code == ICMP_FRAG_NEEDED:
            return f"Frag needed and DF set (mtu = {info})"
        return UNREACH_TEXT.get(code, f"Dest Unreachable, Bad Code: {code}")
    if icmp_type == ICMP_TIME_EXCEEDED:
        return "Time to live exceeded" if code == 0 else "Frag reassembly time exceeded"
    return f"Bad ICMP type: {icmp_type}"


async def ping(
    net: Net,
    destination: str,
    *,
    count: int = 1,
    interval: float = 1.0,
    timeout: float | None = None,
    size: int = 56,
    ttl: int | None = None,
    deadline: float | None = None,
    output: list[str] | None = None,
    interrupt: trio.CancelScope | None = None,
) -> PingResult:
    """Ping *destination* from *net*; optionally collect ``ping``'s output lines.

    Args:
        count: probes to send (``-c``).
        interval: seconds between probes (``-i``).
        timeout: seconds to wait for the last reply (``-W``); default ``max(2·interval, 1)``.
        size: payload bytes (``-s``), at least 8 for the timestamp.
        ttl: IP TTL (``-t``).
        deadline: stop after this many seconds in total (``-w``).
        output: if given, receives the lines ``ping`` would print.
        interrupt: a cancel scope the caller may cancel to stop pinging, as
            Ctrl-C (SIGINT) stops iputils' ping: the summary is still made.
    """
    v6 = ":" in destination
    try:
        if v6:
            parse_inet6_addr(net, (destination, 0))
        else:
            aton(destination)
    except (ValueError, OSError):
        raise ValueError(f"ping: {destination}: Name or service not known") from None
    if count < 1:
        raise ValueError("ping: invalid argument: count must be at least 1")
    size = max(size, 0)
    if v6:
        sock = socket_create(net, 10, SOCK_DGRAM, IPPROTO_ICMPV6)
        sock.setsockopt(IPPROTO_IPV6, IPV6_RECVERR, 1)
        sock.setsockopt(IPPROTO_IPV6, IPV6_RECVHOPLIMIT, 1)
        if ttl is not None:
            sock.setsockopt(IPPROTO_IPV6, IPV6_UNICAST_HOPS, ttl)
    else:
        sock = socket_create(net, 2, SOCK_DGRAM, IPPROTO_ICMP)
        sock.setsockopt(IPPROTO_IP, IP_RECVERR, 1)
        sock.setsockopt(IPPROTO_IP, IP_RECVTTL, 1)
        if ttl is not None:
            sock.setsockopt(IPPROTO_IP, IP_TTL, ttl)
    zone = destination.partition("%")[2]
    if timeout is None:
        timeout = max(2 * interval, 1.0)
    clock = net.clock
    start = last_sent = clock.now()
    sent: dict[int, float] = {}
    replies: dict[int, PingReply] = {}
    errors: list[PingReply] = []
    if output is not None:
        if v6:
            output.append(f"PING {destination}({destination}) {size} data bytes")
        else:
            output.append(f"PING {destination} ({destination}) {size}({size + 28}) bytes of data.")

    def emit(line: str) -> None:
        if output is not None:
            output.append(line)

    def drain() -> None:
        sk = sock.sock
        while sk.error_queue:
            payload, anc, _flags, _addr = sk.recv_errqueue(65535)
            for _level, _type, raw in anc:
                err, origin, etype, ecode, _pad, info, _data = _EE.unpack_from(raw)
                seq = (payload[6] << 8) | payload[7] if len(payload) >= 8 else -1
                if v6:
                    offender = ntoa6(int.from_bytes(raw[_EE.size + 8 : _EE.size + 24], "big"))
                    if origin == SO_EE_ORIGIN_ICMP6:
                        text = _error6_text(etype, ecode, info)
                    else:
                        text = f"local error: Message too long, mtu={info}"
                else:
                    offender = ntoa(int.from_bytes(raw[_EE.size + 4 : _EE.size + 8], "big"))
                    text = _error_text(etype, ecode, info) if origin == 2 else f"local error: {err}"
                errors.append(PingReply(seq, None, source=offender, error=text))
                emit(f"From {offender} icmp_seq={seq} {text}")
        while True:
            try:
                data, anc, _flags, peer = sock.recvmsg_nowait(65535)
            except OSError:
                break
            src = f"{peer[0]}%{zone}" if v6 and zone and peer[0].startswith("fe80") else peer[0]
            if len(data) < 8:
                continue
            seq = (data[6] << 8) | data[7]
            if seq in sent and seq not in replies:
                t0 = _TS.unpack_from(data, 8)[0] if len(data) >= 16 else sent[seq]
                rtt = clock.now() - t0
                ttl_ = int.from_bytes(anc[0][2], "little") if anc else 0
                replies[seq] = PingReply(seq, rtt, ttl_, len(data), src)
                emit(f"{len(data)} bytes from {src}: icmp_seq={seq} ttl={ttl_} time={_ms(rtt)} ms")

    try:
        with (
            interrupt if interrupt is not None else trio.CancelScope(),
            trio.move_on_at(start + deadline if deadline is not None else math.inf),
        ):
            for seq in range(1, count + 1):
                payload = _TS.pack(clock.now()) + bytes(max(size - 8, 0))
                header = struct.pack("!BBHHH", 128 if v6 else 8, 0, 0, 0, seq)
                try:
                    await sock.sendto(
                        header + payload[:size] if size >= 8 else header + bytes(size),
                        (destination, 0),
                    )
                except OSError as e:
                    errors.append(PingReply(seq, None, error=e.strerror or str(e)))
                    emit(f"ping: sendmsg: {e.strerror}")
                sent[seq] = last_sent = clock.now()
                end = clock.now() + (interval if seq < count else timeout)
                while clock.now() < end and not (
                    seq == count and len(replies) + len(errors) >= count
                ):
                    with trio.move_on_at(end):
                        await sock.wait_readable()
                    drain()
                drain()
    finally:
        sock.close()
    # iputils reports cur_time - start_time: cur_time is the last probe's send time
    elapsed = last_sent - start
    result = PingResult(
        destination, len(sent), tuple(replies[s] for s in sorted(replies)), tuple(errors), elapsed
    )
    if output is not None:
        output.append("")
        output.extend(result.summary().split("\n"))
    return result


# -- the command ---------------------------------------------------------------------------
PING_USAGE: Final = (
    "\nUsage\n  ping [options] <destination>\n\nOptions:\n"
    "  <destination>      dns name or ip address\n"
    "  -c <count>         stop after <count> replies\n"
    "  -i <interval>      seconds between sending each packet\n"
    "  -n                 no dns name resolution\n"
    "  -q                 quiet output\n"
    "  -s <size>          use <size> as number of data bytes to be sent\n"
    "  -t <ttl>           define time to live\n"
    "  -w <deadline>      reply wait <deadline> in seconds\n"
    "  -W <timeout>       time to wait for response"
)


class _LiveLines(list[str]):
    """A list whose appends print at once (ping's output as it happens)."""

    def __init__(self, write: Callable[[str], None], rename: tuple[str, str] | None) -> None:
        super().__init__()
        self._write = write
        self._rename = rename

    def append(self, line: str) -> None:
        if self._rename is not None:
            addr, name = self._rename
            if line.startswith(f"PING {addr} ({addr})"):
                line = line.replace(f"PING {addr} ", f"PING {name} ", 1)
            elif line == f"--- {addr} ping statistics ---":
                line = f"--- {name} ping statistics ---"
        super().append(line)
        self._write(line)

    def extend(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.append(line)


def _ping_number(flag: str, value: str, kind: type, low: float, high: float) -> Any:
    """iputils' strtol_or_err()/strtod checks: the value, or ping's message."""
    try:
        n = kind(value)
    except ValueError:
        raise ConfigError(f"ping: invalid argument: '{value}'") from None
    if not low <= n <= high:
        if kind is int:
            raise ConfigError(
                f"ping: invalid argument: '{value}': out of range: "
                f"{int(low)} <= value <= {int(high)}"
            )
        raise ConfigError(f"ping: bad timing interval: {value}")
    return n


async def main(proc: Process, host: Machine, argv: list[str]) -> int:
    """The ``ping`` command (see the module docstring)."""
    opts: dict[str, Any] = {}
    quiet = False
    dest: str | None = None
    i = 0
    while i < len(argv):
        a = argv[i]
        i += 1
        if a.startswith("-") and len(a) > 1:
            j = 1
            while j < len(a):
                c = a[j]
                j += 1
                if c in "nvDO4":
                    continue
                if c == "q":
                    quiet = True
                    continue
                if c not in "ciWstw":
                    proc.err(f"ping: invalid option -- '{c}'{PING_USAGE}")
                    return 2
                if j < len(a):
                    value, j = a[j:], len(a)
                elif i < len(argv):
                    value = argv[i]
                    i += 1
                else:
                    proc.err(f"ping: option requires an argument -- '{c}'{PING_USAGE}")
                    return 2
                if c == "c":
                    opts["count"] = _ping_number(c, value, int, 1, 2**63 - 1)
                elif c == "i":
                    opts["interval"] = _ping_number(c, value, float, 0, 2**31)
                elif c == "W":
                    opts["timeout"] = _ping_number(c, value, float, 0, 2**31)
                elif c == "s":
                    opts["size"] = _ping_number(c, value, int, 0, 65507)
                elif c == "t":
                    opts["ttl"] = _ping_number(c, value, int, 0, 255)
                elif c == "w":
                    opts["deadline"] = _ping_number(c, value, float, 0, 2**31)
        elif dest is None:
            dest = a
        else:
            dest = a  # iputils takes the last operand as the destination
    if dest is None:
        proc.err("ping: usage error: Destination address required")
        return 2
    addr = dest
    rename = None
    try:
        aton(dest)
    except ValueError:
        resolved = proc.resolve(dest)
        if resolved is None:
            proc.err(f"ping: {dest}: Name or service not known")
            return 2
        addr, rename = resolved, (resolved, dest)
    if "count" not in opts:
        opts["count"] = 65535 if "deadline" not in opts else 2**31
    lines: list[str] = _LiveLines(proc.out, rename) if not quiet else []
    result = await ping(host.net, addr, output=lines, interrupt=proc.interrupt, **opts)
    if quiet:
        summary = result.summary().split("\n")
        if rename is not None:
            summary[0] = f"--- {dest} ping statistics ---"
        proc.out(lines[0].replace(f"PING {addr} ", f"PING {dest} ", 1) if lines else "")
        proc.out("\n" + "\n".join(summary))
    return 0 if result.received else 1
