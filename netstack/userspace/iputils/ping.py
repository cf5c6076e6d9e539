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

All timing is on the host's Trio clock (virtual under ``MockClock``). The
payload's timestamp is taken before ``sendto`` and the round trip measured
from it, so a reply received inside the request's transmit (the peer's poll
at its ``local_bh_enable``) reads 0 ms. A probe due at an instant when a
kernel timer fires (a neighbour's NUD timer failing the resolution) goes out
after it, and after ping has read what it queued, as ``pinger()`` runs in
process context after the tick's timer softirq.

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
from collections.abc import Callable, Iterable, MutableSequence
from contextlib import nullcontext
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
from netstack.userspace import netdb
from netstack.userspace.netdb import AF_INET, AF_INET6, AF_UNSPEC
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
    from netstack.cpu.clock import Clock
    from netstack.socket.socket import Socket
    from netstack.userspace.process import Machine, Process

__all__ = ["MAXWAIT", "PING_USAGE", "PingReply", "PingResult", "main", "main6", "ping"]

_EE: Final = struct.Struct("=IBBBBII")
_TS: Final = struct.Struct("!d")
_ECHO: Final = struct.Struct("!BBHHH")  # type, code, checksum (the kernel's), id (its), seq

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
    pipe: int = 0

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
        ``llsqrt(tsum2/n - tavg²)`` as iputils computes it. The last line (rtt,
        ``pipe``) is always there, empty when it has no figures.
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
            last = f"rtt min/avg/max/mdev = {figures} ms"
        else:
            last = ""
        if self.pipe > 1:  # more than one probe was in flight when an answer came
            last += f"{', ' if last else ''}pipe {self.pipe}"
        # finish() ends this line with putchar('\n') even when it printed nothing on
        # it: with neither rtt nor pipe figures, the summary ends with an empty line
        lines.append(last)
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


MAXWAIT: Final = 10.0
"""Seconds ``ping`` waits after its last probe when nothing came back (iputils' lingertime)."""


def _identity(addr: str) -> str:
    return addr


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
    output: MutableSequence[str] | None = None,
    interrupt: trio.CancelScope | None = None,
    hostname: str | None = None,
    pr_addr: Callable[[str], str] | None = None,
) -> PingResult:
    """Ping *destination* from *net*; optionally collect ``ping``'s output lines.

    Args:
        destination: a numeric IPv4 or IPv6 address (``fe80::1%eth0`` with its zone).
        count: probes to send (``-c``).
        interval: seconds between probes (``-i``).
        timeout: seconds to wait after the last probe when no reply came at
            all (``-W``, iputils' lingertime: 10 by default); once replies came,
            ping waits twice the longest round trip, at least one interval.
        size: payload bytes (``-s``), at least 8 for the timestamp.
        ttl: IP TTL (``-t``).
        deadline: stop after this many seconds in total (``-w``); an error
            stops it too.
        output: if given, receives the lines ``ping`` would print (the command's
            ``_LiveLines`` prints each as it is appended: typed as a sequence, not
            ``list``, so that the compiled build calls its ``append``, where a
            ``list`` annotation has mypyc append to the list directly).
        interrupt: a cancel scope the caller may cancel to stop pinging, as
            Ctrl-C (SIGINT) stops iputils' ping: the summary is still made.
        hostname: the target as the user named it (``PING h2 (10.0.2.2)``, the
            statistics line); the address by default.
        pr_addr: how an address is printed in reply and error lines
            (``h2 (10.0.2.2)`` after a reverse lookup); the address by default.
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
    name = destination if hostname is None else hostname
    show = _identity if pr_addr is None else pr_addr
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
    lingertime = MAXWAIT if timeout is None else timeout
    clock = net.clock
    start = last_sent = clock.now()
    st = _PingState(sock, v6, destination.partition("%")[2], clock, output, show, count, deadline)
    if output is not None:
        if v6:
            output.append(f"PING {name}({show(destination)}) {size} data bytes")
        else:
            output.append(f"PING {name} ({destination}) {size}({size + 28}) bytes of data.")
    sent, replies, errors = st.sent, st.replies, st.errors
    try:
        # no scope where none is needed: a scope nobody cancels, or one with an
        # infinite deadline, never fires, and each costs a CancelStatus and two sets
        with (
            interrupt if interrupt is not None else _NO_SCOPE,
            trio.move_on_at(start + deadline) if deadline is not None else _NO_SCOPE,
        ):
            for seq in range(1, count + 1):
                if seq > 1:
                    # The probe's time has come. The kernel's timers due at this
                    # instant have fired first: ping runs in process context, after
                    # the tick's timer softirq (and real ping's send time drifts
                    # a few ms later each interval: pinger() counts whole ms), and
                    # what they queued woke it (POLLERR) to be read before
                    # pinger() sends (main_loop()). Trio wakes this task and a
                    # timer base's at one virtual instant in the lab's seeded
                    # order: a checkpoint puts it after them, then it reads.
                    await trio.lowlevel.checkpoint()
                    st.drain()
                    if st.finished():
                        break
                payload = _TS.pack(clock.now()) + bytes(max(size - 8, 0))
                header = _ECHO.pack(128 if v6 else 8, 0, 0, 0, seq)
                try:
                    await sock.sendto(
                        header + payload[:size] if size >= 8 else header + bytes(size),
                        (destination, 0),
                    )
                except OSError as e:
                    errors.append(PingReply(seq, None, error=e.strerror or str(e)))
                    st.emit(f"ping: sendmsg: {e.strerror}")
                sent[seq] = last_sent = clock.now()
                if seq < count:
                    wait = interval
                elif replies:  # __schedule_exit(): two round trips, at least an interval
                    wait = max(2 * st.tmax, interval)
                else:
                    wait = lingertime
                end = clock.now() + wait
                while clock.now() < end and not st.finished():
                    # the one scope that fires: the wait for a reply ends at *end*
                    with trio.move_on_at(end):
                        await sock.wait_readable()
                    st.drain()
                st.drain()
                if st.finished():
                    break
    finally:
        sock.close()
    # iputils reports cur_time - start_time: cur_time is the last probe's send time
    elapsed = last_sent - start
    result = PingResult(
        name,
        len(sent),
        tuple(map(replies.__getitem__, sorted(replies))),  # no closure over replies
        tuple(errors),
        elapsed,
        pipe=st.pipesize,
    )
    if output is not None:
        output.append("")
        output.extend(result.summary().split("\n"))
    return result


_NO_SCOPE: Final = nullcontext()  # stateless and reentrant: one for every ping


class _PingState:
    """One ``ping`` run's probes, answers and output (iputils' globals).

    A slotted object with methods rather than closures over the coroutine's
    locals: a closure and a cell per shared variable were 1.1 KB a ping.
    """

    __slots__ = (
        "clock",
        "count",
        "deadline",
        "errors",
        "output",
        "pipesize",
        "replies",
        "sent",
        "show",
        "sock",
        "tmax",
        "v6",
        "zone",
    )

    def __init__(
        self,
        sock: Socket,
        v6: bool,
        zone: str,
        clock: Clock,
        output: MutableSequence[str] | None,
        show: Callable[[str], str],
        count: int,
        deadline: float | None,
    ) -> None:
        self.sock = sock
        self.v6 = v6
        self.zone = zone
        self.clock = clock
        self.output = output
        self.show = show
        self.count = count
        self.deadline = deadline
        self.sent: dict[int, float] = {}
        self.replies: dict[int, PingReply] = {}
        self.errors: list[PingReply] = []
        self.pipesize = 0  # iputils' acknowledge() and gather_statistics()
        self.tmax = 0.0

    def emit(self, line: str) -> None:
        if self.output is not None:
            self.output.append(line)

    def acknowledge(self, seq: int) -> None:
        self.pipesize = max(self.pipesize, len(self.sent) - seq + 1)

    def drain(self) -> None:
        sock, v6, show = self.sock, self.v6, self.show
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
                self.errors.append(PingReply(seq, None, source=offender, error=text))
                self.acknowledge(seq)
                self.emit(f"From {show(offender)} icmp_seq={seq} {text}")
        sent, replies, zone = self.sent, self.replies, self.zone
        # recvmsg(MSG_DONTWAIT) until it fails, as iputils reads; with nothing
        # queued and no pending error ping_recvmsg() can only say EAGAIN (its
        # first two tests, no side effect), known here without the two
        # exceptions (SockWouldBlock, then BlockingIOError) that ended each drain
        while sk.receive_queue or sk.sk_err:
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
                rtt = self.clock.now() - t0
                ttl_ = int.from_bytes(anc[0][2], "little") if anc else 0
                replies[seq] = PingReply(seq, rtt, ttl_, len(data), src)
                self.acknowledge(seq)
                self.tmax = max(self.tmax, rtt)
                if self.output is not None:  # (the line only when someone reads it)
                    self.output.append(
                        f"{len(data)} bytes from {show(src)}: icmp_seq={seq} ttl={ttl_} "
                        f"time={_ms(rtt)} ms"
                    )

    def finished(self) -> bool:
        # main_loop()'s exit conditions
        return len(self.replies) + len(self.errors) >= self.count or (
            self.deadline is not None and bool(self.errors)
        )


# -- the command ---------------------------------------------------------------------------
PING_USAGE: Final = (
    "\n"
    "Usage\n"
    "  ping [options] <destination>\n"
    "\n"
    "Options:\n"
    "  <destination>      dns name or ip address\n"
    "  -a                 use audible ping\n"
    "  -A                 use adaptive ping\n"
    "  -B                 sticky source address\n"
    "  -c <count>         stop after <count> replies\n"
    "  -C                 call connect() syscall on socket creation\n"
    "  -D                 print timestamps\n"
    "  -d                 use SO_DEBUG socket option\n"
    "  -e <identifier>    define identifier for ping session, default is random for\n"
    "                     SOCK_RAW and kernel defined for SOCK_DGRAM\n"
    "                     Imply using SOCK_RAW (for IPv4 only for identifier 0)\n"
    "  -f                 flood ping\n"
    "  -h                 print help and exit\n"
    "  -I <interface>     either interface name or address\n"
    "  -i <interval>      seconds between sending each packet\n"
    "  -L                 suppress loopback of multicast packets\n"
    "  -l <preload>       send <preload> number of packages while waiting replies\n"
    "  -m <mark>          tag the packets going out\n"
    "  -M <pmtud opt>     define mtu discovery, can be one of <do|dont|want>\n"
    "  -n                 no dns name resolution\n"
    "  -O                 report outstanding replies\n"
    "  -p <pattern>       contents of padding byte\n"
    "  -q                 quiet output\n"
    "  -Q <tclass>        use quality of service <tclass> bits\n"
    "  -s <size>          use <size> as number of data bytes to be sent\n"
    "  -S <size>          use <size> as SO_SNDBUF socket option value\n"
    "  -t <ttl>           define time to live\n"
    "  -U                 print user-to-user latency\n"
    "  -v                 verbose output\n"
    "  -V                 print version and exit\n"
    "  -w <deadline>      reply wait <deadline> in seconds\n"
    "  -W <timeout>       time to wait for response\n"
    "\n"
    "IPv4 options:\n"
    "  -4                 use IPv4\n"
    "  -b                 allow pinging broadcast\n"
    "  -R                 record route\n"
    "  -T <timestamp>     define timestamp, can be one of <tsonly|tsandaddr|tsprespec>\n"
    "\n"
    "IPv6 options:\n"
    "  -6                 use IPv6\n"
    "  -F <flowlabel>     define flow label, default is random\n"
    "  -N <nodeinfo opt>  use icmp6 node info query, try <help> as argument\n"
    "\n"
    "For more details see ping(8)."
)


class _LiveLines(list[str]):
    """A list whose appends print at once (ping's output as it happens)."""

    def __init__(self, write: Callable[[str], None]) -> None:
        super().__init__()
        self._write = write

    def append(self, line: str) -> None:
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


_FLAGS: Final = "nvDOaAq46"
_WITH_VALUE: Final = "ciWstw"


@attrs.define
class _PingArgs:
    """What ``ping``'s command line asked for."""

    family: int = AF_UNSPEC
    numeric: bool = False
    quiet: bool = False
    dest: str | None = None
    opts: dict[str, Any] = attrs.Factory(dict)


def _parse_argv(proc: Process, argv: list[str], family: int) -> _PingArgs | int:
    """getopt(3) over iputils' option letters; an exit status when ping gives up."""
    a = _PingArgs(family=family)
    i = 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if not word.startswith("-") or len(word) == 1:
            a.dest = word  # iputils takes the last operand as the destination
            continue
        j = 1
        while j < len(word):
            c = word[j]
            j += 1
            if c in _FLAGS:
                if c in "46":
                    fam = AF_INET if c == "4" else AF_INET6
                    if a.family not in (AF_UNSPEC, fam):
                        proc.err("ping: only one -4 or -6 option may be specified")
                        return 2
                    a.family = fam
                a.numeric |= c == "n"
                a.quiet |= c == "q"
                continue
            if c == "h":
                proc.err(PING_USAGE)
                return 2
            if c not in _WITH_VALUE:
                proc.err(f"ping: invalid option -- '{c}'{PING_USAGE}")
                return 2
            if j < len(word):
                value, j = word[j:], len(word)
            elif i < len(argv):
                value = argv[i]
                i += 1
            else:
                proc.err(f"ping: option requires an argument -- '{c}'{PING_USAGE}")
                return 2
            if c == "c":
                a.opts["count"] = _ping_number(c, value, int, 1, 2**63 - 1)
            elif c in "iWw":
                key = {"i": "interval", "W": "timeout", "w": "deadline"}[c]
                a.opts[key] = _ping_number(c, value, float, 0, 2**31)
            elif c == "s":
                a.opts["size"] = _ping_number(c, value, int, 0, 65507)
            else:
                a.opts["ttl"] = _ping_number(c, value, int, 0, 255)
    return a


async def _connect_probe(host: Machine, family: int, addr: str) -> str | None:
    """iputils' UDP ``connect()`` that finds the source address: None, or why it failed."""
    sock = host.socket(family, SOCK_DGRAM, 0)
    try:
        await sock.connect((addr, 1025))
    except OSError as e:
        return e.strerror or str(e)
    finally:
        sock.close()
    return None


async def main(proc: Process, host: Machine, argv: list[str], *, family: int = AF_UNSPEC) -> int:
    """The ``ping`` command (see the module docstring); ``ping6`` is ``family=AF_INET6``."""
    a = _parse_argv(proc, argv, family)
    if isinstance(a, int):
        return a
    if a.dest is None:
        proc.err("ping: usage error: Destination address required")
        return 2
    dest = a.dest
    try:
        fam, addr = netdb.getaddrinfo(proc, dest, a.family)[0]
    except netdb.GaiError as e:
        proc.err(f"ping: {dest}: {e}")
        hint = netdb.suggest(proc, dest) if e.code == netdb.EAI_NONAME else None
        if hint is not None and hint != dest:
            proc.err(f'ping: did you mean "{hint}"?')
        return 2
    is_name = netdb.numeric(dest) is None
    why = await _connect_probe(host, fam, addr)
    if why is not None:
        proc.err(f"ping: connect: {why}")
        return 2

    def pr_addr(address: str) -> str:
        """iputils' pr_addr(): ``name (address)`` when the reverse lookup finds one."""
        if a.numeric or not is_name:
            return address
        name = netdb.getnameinfo(proc, address.partition("%")[0])
        return address if name is None else f"{name} ({address})"

    opts = dict(a.opts)
    count_given = "count" in opts
    if not count_given:
        opts["count"] = 2**31 if "deadline" in opts else 65535
    lines: list[str] = _LiveLines(proc.out) if not a.quiet else []
    paced = proc.paced() if not count_given and "deadline" not in opts else nullcontext()
    with paced:
        result = await ping(
            host.net,
            addr,
            output=lines,
            interrupt=proc.interrupt,
            hostname=dest,
            pr_addr=pr_addr,
            **opts,
        )
    if a.quiet:
        proc.out(lines[0] if lines else "")
        proc.out("\n" + result.summary())
    if not result.received:
        return 1
    deadline_short = "deadline" in opts and count_given and result.received < opts["count"]
    return 1 if deadline_short else 0


async def main6(proc: Process, host: Machine, argv: list[str]) -> int:
    """``ping6``: ``ping -6`` (iputils installs it as a link to ping)."""
    return await main(proc, host, argv, family=AF_INET6)
