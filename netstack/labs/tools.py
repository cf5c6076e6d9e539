"""The commands of the table: Linux tools on a host, and the session's own.

Theory of operation: each ``_cmd_*`` coroutine takes a
:class:`~netstack.labs.session.Context` and the argv after the command's
name, prints through ``ctx.out``/``ctx.err`` what the Linux tool prints on
stdout/stderr, and returns the tool's exit status. Kernel-side work goes
through the host's API (``host.ip``, ``host.sysctl``, ``host.capture``…) and
the user-space tools in :mod:`netstack.iproute2`; nothing here knows a
kernel structure the tools do not.

:func:`default_commands` builds the table. To add a tool: write its
coroutine and add one :class:`~netstack.labs.commands.Command` line there.
"""

from __future__ import annotations

import fnmatch
import operator
import re
import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import trio
import trio.lowlevel

from netstack.core.sock import AF_INET, SOCK_DGRAM
from netstack.errors import ConfigError, NetstackError
from netstack.host.capture import Capture
from netstack.iproute2 import sysctl as _sysctl
from netstack.iproute2.ethtool import NETDEV_FEATURES_STRINGS, OFF_FLAG_DEF
from netstack.iproute2.ping import ping as _ping
from netstack.iproute2.tcpdump import TCPDUMP_USAGE, TCPDUMP_VERSION, Dumper, parse_tcpdump_args
from netstack.ipv4 import ipv4_of
from netstack.labs import mininet
from netstack.labs.commands import Command, CommandTable
from netstack.labs.netperf_cmd import cmd_netperf, cmd_netserver
from netstack.labs.progress import Progress
from netstack.wire.arp import ARPHRD_LOOPBACK
from netstack.wire.ipv4 import aton, ntoa

if TYPE_CHECKING:
    from netstack.host import Host
    from netstack.labs.session import Context

__all__ = ["counter_names", "default_commands", "read_counter"]


# -- ip, sysctl, and the front ends that arrive with other parts ------------------------------
async def _cmd_ip(ctx: Context, argv: list[str]) -> int:
    text = ctx.need_host().ip(shlex.join(argv))
    if text:
        ctx.out(text.rstrip("\n"))
    return 0


async def _cmd_sysctl(ctx: Context, argv: list[str]) -> int:
    text = _sysctl.sysctl(ctx.need_host().net, argv)
    if text:
        ctx.out(text)
    return 0


def _front_end(attr: str, tool: str) -> Callable[[Context, list[str]], Any]:
    """A command that runs ``host.<attr>("…")`` if the host has that front end."""

    async def run(ctx: Context, argv: list[str]) -> int:
        fn = getattr(ctx.need_host(), attr, None)
        if fn is None:
            ctx.err(f"{tool}: not available yet in netstack (this host has no {tool} front end)")
            return 127
        text = fn(shlex.join(argv))
        if text:
            ctx.out(str(text).rstrip("\n"))
        return 0

    return run


async def _cmd_hostname(ctx: Context, argv: list[str]) -> int:
    ctx.out(ctx.need_host().name)
    return 0


async def _cmd_cat(ctx: Context, argv: list[str]) -> int:
    """``cat /proc/sys/…``, ``/proc/net/snmp``, ``/sys/…`` (when the host has sysfs)."""
    host = ctx.need_host()
    status = 0
    for path in argv:
        if path.startswith("/proc/sys/"):
            try:
                ctx.out(host.sysctl(path[len("/proc/sys/") :]))
            except ConfigError:
                ctx.err(f"cat: {path}: No such file or directory")
                status = 1
        elif path == "/proc/net/snmp":
            ctx.out(_proc_net_snmp(host))
        elif path.startswith("/sys/"):
            try:
                ctx.out(host.sysfs(path[len("/sys/") :]).rstrip("\n"))
            except (ConfigError, NetstackError, OSError):
                ctx.err(f"cat: {path}: No such file or directory")
                status = 1
        else:
            ctx.err(f"cat: {path}: No such file or directory")
            status = 1
    return status


def _proc_net_snmp(host: Host) -> str:
    lines = []
    for mib, snap in host.snmp().items():
        if mib == "IpExt":
            continue
        names = " ".join(k for k, _ in snap.values)
        values = " ".join(str(v) for _, v in snap.values)
        lines += [f"{mib}: {names}", f"{mib}: {values}"]
    return "\n".join(lines)


# -- ping ---------------------------------------------------------------------------------
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

    def extend(self, lines: Any) -> None:
        for line in lines:
            self.append(line)


def _ping_number(flag: str, value: str, kind: type, low: float, high: float) -> Any:
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


async def _cmd_ping(ctx: Context, argv: list[str]) -> int:
    host = ctx.need_host()
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
                    ctx.err(f"ping: invalid option -- '{c}'{PING_USAGE}")
                    return 2
                if j < len(a):
                    value, j = a[j:], len(a)
                elif i < len(argv):
                    value = argv[i]
                    i += 1
                else:
                    ctx.err(f"ping: option requires an argument -- '{c}'{PING_USAGE}")
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
        ctx.err("ping: usage error: Destination address required")
        return 2
    addr = dest
    rename = None
    try:
        aton(dest)
    except ValueError:
        resolved = ctx.resolve(dest)
        if resolved is None:
            ctx.err(f"ping: {dest}: Name or service not known")
            return 2
        addr, rename = resolved, (resolved, dest)
    if "count" not in opts:
        opts["count"] = 65535 if "deadline" not in opts else 2**31
    lines: list[str] = _LiveLines(ctx.out, rename) if not quiet else []
    result = await _ping(host.net, addr, output=lines, interrupt=ctx.interrupt, **opts)
    if quiet:
        summary = result.summary().split("\n")
        if rename is not None:
            summary[0] = f"--- {dest} ping statistics ---"
        ctx.out(lines[0].replace(f"PING {addr} ", f"PING {dest} ", 1) if lines else "")
        ctx.out("\n" + "\n".join(summary))
    return 0 if result.received else 1


# -- tcpdump -------------------------------------------------------------------------------------
async def _cmd_tcpdump(ctx: Context, argv: list[str]) -> int:
    host = ctx.need_host()
    opts = parse_tcpdump_args(argv)
    if opts.show_version:
        ctx.out(TCPDUMP_VERSION)
        return 0
    if opts.show_help:
        ctx.err(TCPDUMP_USAGE)
        return 0
    if opts.read_file is not None:
        from netstack.iproute2.tcpdump import read_pcap

        head, frames = read_pcap(opts.read_file)
        dumper = Dumper(opts, ctx.out, ctx.resolve)
        ctx.err(head)
        try:
            for ts, data, wirelen in frames:
                dumper.frame(ts, data, wirelen)
                if dumper.done:
                    break
        finally:
            dumper.close()
            frames.close()
        return 0
    name = opts.interface
    if name is None:
        up = [d for d in host.devices if d.name != "lo" and d.is_up()]
        if not up:
            ctx.err("tcpdump: no suitable device found")
            return 1
        name = up[0].name
    if host.net.dev_get_by_name(name) is None:
        ctx.err(f"tcpdump: {name}: No such device exists\n(No such device exists)")
        return 1
    dev = host.dev(name)
    if not dev.is_up():
        ctx.err(f"tcpdump: {name}: That device is not up")
        return 1
    # devices without a link-layer header (gre, ipip, sit) capture raw IP, as in their pcaps
    raw = dev.header_ops is None and dev.type != ARPHRD_LOOPBACK
    dumper = Dumper(opts, ctx.out, ctx.resolve, raw=raw)
    link = "RAW (Raw IP)" if raw else "EN10MB (Ethernet)"
    if opts.verbose or opts.write_file is not None:
        ctx.err(
            f"tcpdump: listening on {name}, link-type {link}, snapshot length {opts.snaplen} bytes"
        )
    else:
        ctx.err("tcpdump: verbose output suppressed, use -v[v]... for full protocol decode")
        ctx.err(f"listening on {name}, link-type {link}, snapshot length {opts.snaplen} bytes")
    done = trio.Event()

    def on_frame(ts: float, frame: bytes, outgoing: bool) -> None:
        if (opts.direction == "in" and outgoing) or (opts.direction == "out" and not outgoing):
            return
        if raw:  # the printer and filter read Ethernet: give the packet an empty header
            etype = b"\x86\xdd" if frame[:1] and frame[0] >> 4 == 6 else b"\x08\x00"
            frame = bytes(12) + etype + frame
        dumper.frame(ts, frame)
        if dumper.done:
            done.set()

    cap = Capture(host.net, dev, None, callback=on_frame, snaplen=opts.snaplen)
    host.captures.append(cap)
    interrupted = False
    try:
        with ctx.interrupt:
            await done.wait()
        interrupted = ctx.interrupt.cancelled_caught
    finally:
        cap.stop()
        host.captures.remove(cap)
        dumper.close()
    ctx.err(("\n" if interrupted and not ctx.background else "") + dumper.summary())
    return 0


# -- nstat ---------------------------------------------------------------------------------------
def _all_counters(host: Host) -> dict[str, int]:
    out: dict[str, int] = {}
    for mib, snap in host.snmp().items():
        for key, value in snap.values:
            if key in ("Forwarding", "DefaultTTL"):
                continue
            out[f"{mib}{key}"] = value
    return out


async def _cmd_nstat(ctx: Context, argv: list[str]) -> int:
    host = ctx.need_host()
    absolute = zeros = no_output = no_update = reset = False
    patterns: list[str] = []
    for a in argv:
        if a.startswith("--"):
            long = {
                "--absolute": "a",
                "--zeros": "z",
                "--nooutput": "n",
                "--noupdate": "s",
                "--reset": "r",
                "--help": "h",
            }.get(a)
            if long is None:
                ctx.err(f"nstat: unrecognized option '{a}'")
                return 255
            flags = long
        elif a.startswith("-") and len(a) > 1:
            flags = a[1:]
        else:
            patterns.append(a)
            continue
        for c in flags:
            if c == "a":
                absolute = True
            elif c == "z":
                zeros = True
            elif c == "n":
                no_output = True
            elif c == "s":
                no_update = True
            elif c == "r":
                reset = True
            elif c == "h":
                ctx.err(
                    "Usage: nstat [OPTION] [ PATTERN [ PATTERN ] ]\n"
                    "   -h, --help           this message\n"
                    "   -a, --ignore         ignore history\n"
                    "   -n, --nooutput       do history only\n"
                    "   -r, --reset          reset history\n"
                    "   -s, --noupdate       don't update history\n"
                    "   -z, --zeros          show entries with zero activity"
                )
                return 255
            else:
                ctx.err(f"nstat: invalid option -- '{c}'")
                return 255
    history: dict[str, dict[str, int]] = ctx.session.state.setdefault("nstat", {})
    now = _all_counters(host)
    old = {} if reset or absolute else history.get(host.name, {})
    if not no_output:
        ctx.out("#kernel")
        for name, value in now.items():
            delta = value - old.get(name, 0)
            if not delta and not zeros:
                continue
            if patterns and not any(fnmatch.fnmatchcase(name, p) for p in patterns):
                continue
            ctx.out(f"{name:<32}{delta:<16}{0.0:6.1f}")
    if not no_update:
        history[host.name] = now
    return 0


# -- ss ----------------------------------------------------------------------------------------
# iproute2 misc/ss.c, _usage(): the options netstack's ss implements, in ss's words
SS_USAGE: Final = (
    "Usage: ss [ OPTIONS ]\n"
    "       ss [ OPTIONS ] [ FILTER ]\n"
    "   -h, --help          this message\n"
    "   -V, --version       output version information\n"
    "   -n, --numeric       don't resolve service names\n"
    "   -a, --all           display all sockets\n"
    "   -l, --listening     display listening sockets\n"
    "   -e, --extended      show detailed socket information\n"
    "   -i, --info          show internal TCP information\n"
    "\n"
    "   -4, --ipv4          display only IP version 4 sockets\n"
    "   -6, --ipv6          display only IP version 6 sockets\n"
    "   -t, --tcp           display only TCP sockets\n"
    "   -u, --udp           display only UDP sockets"
)


async def _cmd_ss(ctx: Context, argv: list[str]) -> int:
    host = ctx.need_host()
    if "-h" in argv or "--help" in argv:  # ss.c: help() prints the usage on stdout, exit 0
        ctx.out(SS_USAGE)
        return 0
    if "-V" in argv or "--version" in argv:
        ctx.out("ss utility, iproute2-6.1.0")
        return 0
    long = {"--tcp": "-t", "--udp": "-u", "--all": "-a", "--listening": "-l", "--info": "-i",
            "--numeric": "-n", "--extended": "-e", "--ipv4": "-4", "--ipv6": "-6"}  # fmt: skip
    argv = [long.get(a, a) for a in argv]
    for a in argv:
        bad = a if a.startswith("--") else next((c for c in a[1:] if c not in "tuali46ne"), None)
        if not a.startswith("-") or bad is not None:
            what = f"unrecognized option '{a}'" if a.startswith("--") else (
                f"invalid option -- '{bad}'" if a.startswith("-") else f'unknown argument "{a}"'
            )  # fmt: skip
            ctx.err(f"ss: {what}\n{SS_USAGE}")
            return 255
    flags = "".join(a[1:] for a in argv if a.startswith("-") and not a.startswith("--"))
    if "t" in flags or "--tcp" in argv:  # TCP sockets: the host's ss front end (iproute2/ss.py)
        return await _front_end("ss", "ss")(ctx, argv)  # type: ignore[no-any-return]
    listening = "l" in flags
    show_all = "a" in flags
    rows = [("State", "Recv-Q", "Send-Q", "Local Address:Port", "Peer Address:Port")]
    ipv4 = ipv4_of(host.net)
    for sk in sorted(ipv4.udp_table.sockets(), key=lambda s: s.inet_num):
        if sk.family != 2:
            continue  # a dual-stack AF_INET6 socket (IPv6 UDP is not listed here)
        connected = bool(sk.inet_dport)
        if (listening and connected) or not (show_all or listening or connected):
            continue
        local = f"{ntoa(sk.inet_rcv_saddr) if sk.inet_rcv_saddr else '0.0.0.0'}:{sk.inet_num}"
        peer = f"{ntoa(sk.inet_daddr)}:{sk.inet_dport}" if connected else "0.0.0.0:*"
        state = "ESTAB" if connected else "UNCONN"
        rows.append((state, str(sk.sk_rmem_alloc), str(sk.sk_wmem_alloc), local, peer))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for r in rows:
        ctx.out(
            f"{r[0]:<{widths[0]}} {r[1]:<{widths[1]}} {r[2]:<{widths[2]}} "
            f"{r[3]:>{widths[3]}} {r[4]:<{widths[4]}}".rstrip()
        )
    return 0


# -- udpflood ----------------------------------------------------------------------------------
UDPFLOOD_BUDGET: Final = 100_000  # datagrams a time-limited flood sends at most


async def _cmd_udpflood(ctx: Context, argv: list[str]) -> int:
    """``udpflood [-c COUNT] [-l SECS] [-s SIZE] [-r PPS] [-p PORT] DEST[:PORT]``.

    Sends UDP datagrams from an unbound socket, as fast as the socket takes
    them (a full send buffer blocks, as it does on Linux) or at ``-r`` per
    second: *COUNT* of them (1000 by default), or for *SECS* of virtual time.
    A time-limited flood on a path where nothing takes time would never see
    the clock move, so it also stops at ``UDPFLOOD_BUDGET`` datagrams and says so.
    """
    host = ctx.need_host()
    count: int | None = None
    size, port, rate = 64, 9, 0.0
    seconds: float | None = None
    dest: str | None = None
    it = iter(argv)
    for a in it:
        try:
            if a in ("-n", "-c"):
                count = int(next(it))
            elif a == "-s":
                size = int(next(it))
            elif a == "-p":
                port = int(next(it))
            elif a == "-r":
                rate = float(next(it))
            elif a == "-l":
                seconds = float(next(it))
                if seconds <= 0:
                    raise ValueError
            elif a in ("-h", "--help"):
                ctx.out(_UDPFLOOD_USAGE)
                return 0
            elif a.startswith("-"):
                ctx.err(f"udpflood: invalid option -- '{a.lstrip('-')}'\n{_UDPFLOOD_USAGE}")
                return 2
            else:
                dest = a
        except (StopIteration, ValueError):
            ctx.err(f"udpflood: bad value for {a}\n{_UDPFLOOD_USAGE}")
            return 2
    if dest is not None and dest.count(":") == 1:
        dest, _, port_text = dest.partition(":")
        port = int(port_text) if port_text.isdigit() else -1
    if count is None:
        count = UDPFLOOD_BUDGET if seconds is not None else 1000
    if dest is None or count < 1 or not 0 <= size <= 65507 or not 0 < port < 65536:
        ctx.err(_UDPFLOOD_USAGE)
        return 2
    try:
        aton(dest)
        addr = dest
    except ValueError:
        resolved = ctx.resolve(dest)
        if resolved is None:
            ctx.err(f"udpflood: {dest}: Name or service not known")
            return 2
        addr = resolved
    sock = host.socket(AF_INET, SOCK_DGRAM)
    payload = bytes(size)
    clock = host.net.clock
    start = clock.now()
    sent = errors = 0
    progress = Progress(count, "udpflood", enabled=False if ctx.background else None)
    try:
        with ctx.interrupt:
            for i in range(count):
                if seconds is not None and clock.now() - start >= seconds:
                    break
                try:
                    await sock.sendto(payload, (addr, port))
                    sent += 1
                except OSError:
                    errors += 1
                if rate > 0:
                    await trio.sleep_until(start + (i + 1) / rate)
                progress.update(i + 1)
            await trio.lowlevel.checkpoint()
    finally:
        progress.close()
        sock.close()
    elapsed = clock.now() - start
    if seconds is not None and sent + errors >= count and elapsed < seconds:
        ctx.err(
            f"udpflood: stopped after {count} datagrams, {elapsed:.6f} s into the {seconds:g} s "
            "asked: nothing on the path takes virtual time fast enough (no rate or delay); "
            "give -c COUNT or -r PPS"
        )
    rate_text = f", {sent / elapsed:.0f} pps" if elapsed > 0 else ""
    ctx.out(
        f"udpflood: {sent} datagrams of {size} bytes to {addr}:{port} in {elapsed:.6f} s "
        f"of virtual time{rate_text}" + (f", {errors} send errors" if errors else "")
    )
    return 0 if sent else 1


_UDPFLOOD_USAGE: Final = (
    "Usage: udpflood [-c COUNT] [-l SECONDS] [-s SIZE] [-r PPS] [-p PORT] DESTINATION[:PORT]\n"
    "  -c COUNT    datagrams to send (default 1000; -n COUNT too)\n"
    "  -l SECONDS  send for SECONDS of virtual time instead (at most 100000 datagrams)\n"
    "  -s SIZE     UDP payload bytes (default 64)\n"
    "  -r PPS      datagrams per second (default: as fast as the socket takes them)\n"
    "  -p PORT     destination port (default 9, discard)"
)


# -- expect: assertions on counters ---------------------------------------------------------
_OPS: Final[dict[str, Callable[[int, int], bool]]] = {
    "==": operator.eq,
    "=": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}


def counter_names(host: Host) -> list[str]:
    """Every name :func:`read_counter` accepts on *host* (for completion and errors)."""
    names = list(_all_counters(host))
    for dev in host.devices:
        names += [f"{dev.name}.{f}" for f in _stat_fields(dev.statistics())]
        qdisc = getattr(dev, "qdisc", None)
        if qdisc is not None and hasattr(qdisc, "statistics"):
            names += [f"{dev.name}.qdisc.{f}" for f in _stat_fields(qdisc.statistics())]
    names += [f"drops.{r}" for r in host.drops()]
    return names


def _stat_fields(stats: Any) -> list[str]:
    import attrs

    if attrs.has(type(stats)):
        return [
            f.name for f in attrs.fields(type(stats)) if isinstance(getattr(stats, f.name), int)
        ]
    return []


def read_counter(host: Host, name: str) -> int:
    """The value of counter *name* on *host*.

    Names: an ``nstat`` name (``IpForwDatagrams``, ``UdpInDatagrams``…), a
    device counter ``DEV.FIELD`` (``eth0.rx_packets``, the
    ``rtnl_link_stats64`` names), a qdisc counter ``DEV.qdisc.FIELD``
    (``eth0.qdisc.drops``) or a drop reason ``drops.REASON``
    (``drops.NO_SOCKET``; 0 if it never happened).

    Raises:
        ConfigError: unknown counter.
    """
    if name.startswith("drops."):
        return host.drops().get(name[len("drops.") :], 0)
    if "." in name:
        dev_name, _, field = name.partition(".")
        dev = host.net.dev_get_by_name(dev_name)
        if dev is None:
            raise ConfigError(f'Cannot find device "{dev_name}"')
        stats: Any = dev.statistics()
        if field.startswith("qdisc."):
            field = field[len("qdisc.") :]
            stats = dev.qdisc.statistics()
        value = getattr(stats, field, None)
        if not isinstance(value, int):
            raise ConfigError(f"expect: unknown counter {name!r}")
        return value
    counters = _all_counters(host)
    if name not in counters:
        close = [n for n in counters if n.lower() == name.lower()]
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ConfigError(f"expect: unknown counter {name!r}{hint}")
    return counters[name]


async def _cmd_expect(ctx: Context, argv: list[str]) -> int:
    """``expect COUNTER OP VALUE``: exit 0 if the counter compares as asked."""
    host = ctx.need_host()
    if len(argv) != 3 or argv[1] not in _OPS:
        ctx.err(
            "Usage: expect COUNTER OP VALUE   (OP: == != > >= < <=; COUNTER: an nstat name,\n"
            "       DEV.FIELD, DEV.qdisc.FIELD or drops.REASON)"
        )
        return 2
    name, op, text = argv
    try:
        want = int(text, 0)
    except ValueError:
        ctx.err(f"expect: {text!r} is not a number")
        return 2
    value = read_counter(host, name)
    ok = _OPS[op](value, want)
    ctx.out(f"{name} = {value}" + ("" if ok else f", expected {op} {want}"))
    return 0 if ok else 1


# -- lab-level commands ---------------------------------------------------------------------------
_TIME: Final = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)([smhd]?)$")


async def _cmd_sleep(ctx: Context, argv: list[str]) -> int:
    if not argv:
        ctx.err("sleep: missing operand\nTry 'sleep --help' for more information.")
        return 1
    total = 0.0
    for a in argv:
        m = _TIME.match(a)
        if m is None:
            ctx.err(f"sleep: invalid time interval '{a}'\nTry 'sleep --help' for more information.")
            return 1
        total += float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
    with ctx.interrupt:
        await trio.sleep(total)
    return 130 if ctx.interrupt.cancelled_caught else 0


async def _cmd_help(ctx: Context, argv: list[str]) -> int:
    table = ctx.session.commands
    if argv:
        cmd = table.get(argv[0])
        if cmd is None:
            ctx.err(f"help: no help topics match `{argv[0]}'.")
            return 1
        ctx.out(f"{cmd.name}: {cmd.summary}")
        if cmd.usage:
            ctx.out(cmd.usage)
        if not cmd.available:
            ctx.out(f"(not available yet: {cmd.missing})")
        return 0
    hosts = ", ".join(ctx.lab.hosts) or "none yet"
    ctx.out(f"Hosts: {hosts}.  Type 'HOST COMMAND [ARGS]' (e.g. 'a ip -s link'), or a host's")
    ctx.out("name alone to make it current (prompt 'a#'; 'exit' leaves it).")
    ctx.out("")
    ctx.out("Commands on a host:")
    for cmd in table:
        if cmd.scope == "host":
            note = "" if cmd.available else "  [not available yet]"
            ctx.out(f"  {cmd.name:<10} {cmd.summary}{note}")
    ctx.out("Session commands:")
    for cmd in table:
        if cmd.scope == "lab":
            ctx.out(f"  {cmd.name:<10} {cmd.summary}")
    ctx.out("")
    ctx.out("Time is virtual: it stands still at the prompt and runs while a command runs")
    ctx.out("('ping -c 3' takes about 2 virtual seconds; 'sleep N' lets N seconds pass).")
    ctx.out("Background jobs ('CMD &') advance only while a foreground command runs.")
    ctx.out("Ctrl-C stops the running command; Ctrl-D or 'exit' leaves. 'help CMD' for usage.")
    return 0


async def _cmd_hosts(ctx: Context, argv: list[str]) -> int:
    for host in ctx.lab.hosts.values():
        devs = []
        for dev in host.devices:
            if dev.name == "lo":
                continue
            try:
                devs.append(f"{dev.name} {host.addr(dev.name)}")
            except NetstackError:
                devs.append(dev.name)
        ctx.out(f"{host.name:<10} {', '.join(devs) or '(no devices)'}")
    return 0


async def _cmd_jobs(ctx: Context, argv: list[str]) -> int:
    numbers = sorted(ctx.session.jobs)
    for job in ctx.session.jobs.values():
        state = "Running" if job.status is None else "Done"
        # bash marks the current job (the newest) with +, the previous one with -
        mark = "+" if job.number == numbers[-1] else "-" if job.number in numbers[-2:] else " "
        ctx.out(f"[{job.number}]{mark}  {state:<24}{job.line} &")
    for line in ctx.session.finished_jobs():
        ctx.out(line)
    return 0


def _job_of(ctx: Context, spec: str) -> Any:
    try:
        number = int(spec.lstrip("%"))
    except ValueError:
        return None
    return ctx.session.jobs.get(number)


async def _cmd_kill(ctx: Context, argv: list[str]) -> int:
    specs = [a for a in argv if not a.startswith("-") or a.startswith("%")]
    if not specs:
        ctx.err("kill: usage: kill %JOB ...")
        return 2
    status = 0
    for spec in specs:
        job = _job_of(ctx, spec)
        if job is None or not spec.startswith("%"):
            ctx.err(f"kill: {spec}: no such job")
            status = 1
            continue
        job.interrupt.cancel()
        await trio.testing.wait_all_tasks_blocked()
        if job.status is None:
            job.scope.cancel()
            await trio.testing.wait_all_tasks_blocked()
    return status


async def _cmd_wait(ctx: Context, argv: list[str]) -> int:
    jobs = [_job_of(ctx, a) for a in argv] if argv else ctx.session.pending_jobs()
    status = 0
    with ctx.interrupt:
        for job in jobs:
            if job is None:
                continue
            await job.done.wait()
            status = job.status if job.status is not None else 143
    return 130 if ctx.interrupt.cancelled_caught else status


async def _cmd_quit(ctx: Context, argv: list[str]) -> int:
    ctx.session.exit_requested = True
    return int(argv[0]) if argv and argv[0].isdigit() else 0


async def _cmd_exit(ctx: Context, argv: list[str]) -> int:
    session = ctx.session
    if session.current is not None:
        session.current = None
    else:
        session.exit_requested = True
    return int(argv[0]) if argv and argv[0].isdigit() else 0


# -- completion ------------------------------------------------------------------------------------
def _complete_devices(ctx: Context, words: list[str], text: str) -> list[str]:
    host = ctx.host
    if host is None:
        return []
    return [d.name for d in host.devices if d.name.startswith(text)]


_IP_OBJECTS: Final = ("address", "link", "neighbour", "route", "tunnel", "help")
_IP_VERBS: Final = ("show", "add", "del", "set", "change", "replace", "flush", "get")
_IP_KEYWORDS: Final = ("dev", "via", "up", "down", "mtu", "type")
# ip tunnel add NAME mode MODE remote ADDR local ADDR …; ip link add NAME type KIND …
_IP_TUNNEL_KEYWORDS: Final = (
    "mode", "remote", "local", "ttl", "tos", "key", "ikey", "okey", "csum", "seq",
    "pmtudisc", "nopmtudisc", "dev",
)  # fmt: skip
_IP_TUNNEL_MODES: Final = ("gre", "ipip", "sit")
_IP_LINK_KINDS: Final = ("veth", "dummy", "gre", "gretap", "ipip", "sit")


def _complete_ip(ctx: Context, words: list[str], text: str) -> list[str]:
    args = [w for w in words if not w.startswith("-")]
    if not args:
        return [o for o in _IP_OBJECTS if o.startswith(text)]
    if len(args) == 1:
        return [v for v in _IP_VERBS if v.startswith(text)]
    if args[-1] == "mode":
        return [m for m in _IP_TUNNEL_MODES if m.startswith(text)]
    if args[-1] == "type":
        return [k for k in _IP_LINK_KINDS if k.startswith(text)]
    keywords = _IP_TUNNEL_KEYWORDS if "tunnel".startswith(args[0]) else _IP_KEYWORDS
    return _complete_devices(ctx, words, text) + [k for k in keywords if k.startswith(text)]


_TC_OBJECTS: Final = ("qdisc", "class", "help")
_TC_VERBS: Final = ("add", "del", "change", "replace", "show", "link")
_TC_KINDS: Final = (
    "pfifo", "bfifo", "pfifo_fast", "pfifo_head_drop", "prio", "tbf", "fq_codel", "netem",
    "noqueue",
)  # fmt: skip
_TC_KEYWORDS: Final = ("dev", "root", "parent", "handle", "limit", "delay", "loss", "rate")


def _complete_tc(ctx: Context, words: list[str], text: str) -> list[str]:
    args = [w for w in words if not w.startswith("-")]
    if not args:
        return [o for o in _TC_OBJECTS if o.startswith(text)]
    if len(args) == 1:
        return [v for v in _TC_VERBS if v.startswith(text)]
    if args[-1] == "dev":
        return _complete_devices(ctx, words, text)
    return [k for k in _TC_KINDS + _TC_KEYWORDS if k.startswith(text)]


def _complete_ethtool(ctx: Context, words: list[str], text: str) -> list[str]:
    if not words:
        options = ("-k", "-K", "-c", "-C", "-l", "-L", "-x", "-X", "-n", "-N", "-S")
        return [o for o in options if o.startswith(text)]
    if len(words) == 1:
        return _complete_devices(ctx, words, text)
    if words[0] == "-K" and len(words) % 2 == 0:  # -K DEV NAME on|off NAME on|off …
        names = [short for short, _, _ in OFF_FLAG_DEF] + [n for n in NETDEV_FEATURES_STRINGS if n]
        return sorted({n for n in names if n.startswith(text)})
    if words[0] == "-K":
        return [v for v in ("on", "off") if v.startswith(text)]
    if words[0] == "-C" and len(words) % 2 == 0:  # -C DEV rx-usecs N tx-usecs N
        return [k for k in ("rx-usecs", "tx-usecs") if k.startswith(text)]
    return []


def _complete_tcpdump(ctx: Context, words: list[str], text: str) -> list[str]:
    if words and words[-1] == "-i":
        return _complete_devices(ctx, words, text)
    return [
        k
        for k in ("icmp", "arp", "udp", "tcp", "host", "port", "ip6", "and", "or", "not")
        if k.startswith(text)
    ]


def _complete_expect(ctx: Context, words: list[str], text: str) -> list[str]:
    if ctx.host is None or words:
        return [o for o in _OPS if o.startswith(text)] if len(words) == 1 else []
    return [n for n in counter_names(ctx.host) if n.startswith(text)]


def _complete_hosts(ctx: Context, words: list[str], text: str) -> list[str]:
    return [h for h in ctx.lab.hosts if h.startswith(text)]


_NETPERF_TESTS: Final = ("TCP_STREAM", "TCP_RR", "UDP_STREAM")


def _complete_netperf(ctx: Context, words: list[str], text: str) -> list[str]:
    if words and words[-1] == "-H":
        return _complete_hosts(ctx, words, text)
    if words and words[-1] == "-t":
        return [t for t in _NETPERF_TESTS if t.startswith(text.upper())]
    if "--" in words:
        return [o for o in ("-m", "-r", "-P", "-D") if o.startswith(text)]
    return [o for o in ("-H", "-t", "-l", "-f", "-p", "-c", "-C", "--") if o.startswith(text)]


def default_commands() -> CommandTable:
    """The command table every session starts with."""
    return CommandTable(
        [
            Command("ip", "show and change devices, addresses, routes, neighbours",
                    _cmd_ip, usage="ip [ OPTIONS ] OBJECT { COMMAND | help }",
                    complete=_complete_ip, linux="iproute2 ip"),
            Command("sysctl", "read and set kernel parameters (net.ipv4.ip_forward…)",
                    _cmd_sysctl, usage="sysctl [-n] [-a] [-w] NAME[=VALUE] ...",
                    linux="procps sysctl"),
            Command("ping", "send ICMP echo requests", _cmd_ping,
                    usage="ping [-c count] [-i interval] [-W timeout] [-s size] [-t ttl] "
                    "[-w deadline] [-q] DESTINATION", complete=_complete_hosts,
                    linux="iputils ping"),
            Command("tcpdump", "print the packets a device sends and receives",
                    _cmd_tcpdump, usage="tcpdump [-eqSvxX] [-t…] [-c count] [-i interface] "
                    "[-r file] [-w file] [-Q in|out|inout] [expression]",
                    complete=_complete_tcpdump, linux="tcpdump"),
            Command("nstat", "SNMP counters (increments since the last nstat)", _cmd_nstat,
                    usage="nstat [-a] [-z] [-n] [-r] [-s] [PATTERN ...]", linux="iproute2 nstat"),
            Command("ss", "socket statistics (-t TCP, -i tcp_info; -u UDP)", _cmd_ss,
                    usage="ss [-t|-u] [-a] [-l] [-i] [-n]", linux="iproute2 ss"),
            Command("cat", "read /proc/sys/…, /proc/net/snmp, /sys/class/net/…",
                    _cmd_cat, usage="cat FILE ...", linux="coreutils cat"),
            Command("hostname", "print the host's name", _cmd_hostname, linux="hostname"),
            Command("udpflood", "send UDP datagrams: -c COUNT or -l SECS, as fast as possible "
                    "(or at -r PPS)",
                    _cmd_udpflood, usage=_UDPFLOOD_USAGE.split("\n")[0][len("Usage: ") :],
                    complete=_complete_hosts),
            Command("expect", "check a counter: expect IpForwDatagrams >= 3", _cmd_expect,
                    usage="expect COUNTER OP VALUE", complete=_complete_expect),
            Command("tc", "show and change queueing disciplines", _front_end("tc", "tc"),
                    usage="tc [ OPTIONS ] OBJECT { COMMAND | help }", complete=_complete_tc,
                    linux="iproute2 tc"),
            Command("ethtool", "device features, coalescing, channels, RSS (-k -K -c -C -l -x -S…)",
                    _front_end("ethtool", "ethtool"),
                    usage="ethtool -k|-K|-c|-C|-l|-L|-x|-X|-n|-N|-S DEVNAME ...",
                    complete=_complete_ethtool,
                    linux="ethtool"),
            Command("netperf", "TCP_STREAM, TCP_RR, UDP_STREAM tests to a host's netserver",
                    cmd_netperf, usage="netperf -H HOST [-t TCP_STREAM|TCP_RR|UDP_STREAM] "
                    "[-l SECS|-BYTES] [-f g|m|k|G|M|K] [-p PORT] [-c] [-C] [--budget BYTES] "
                    "[-- -m SIZE -r REQ,RSP -P PORT]", complete=_complete_netperf,
                    linux="netperf"),
            Command("netserver", "serve netperf on another port or address (every host serves "
                    "12865)", cmd_netserver, usage="netserver [-p PORT] [-L ADDR[,4|6]] [-4|-6] "
                    "[-D]", linux="netperf netserver"),
            Command("help", "list the commands, or show one's usage", _cmd_help, scope="lab"),
            Command("hosts", "list the hosts and their addresses", _cmd_hosts, scope="lab"),
            Command("sleep", "let N seconds of virtual time pass", _cmd_sleep, scope="lab",
                    usage="sleep NUMBER[smhd] ...", linux="coreutils sleep"),
            Command("jobs", "list background jobs", _cmd_jobs, scope="lab", linux="bash jobs"),
            Command("kill", "stop a background job: kill %1", _cmd_kill, scope="lab",
                    usage="kill %JOB ...", linux="bash kill"),
            Command("wait", "let time run until background jobs end", _cmd_wait, scope="lab",
                    usage="wait [%JOB ...]", linux="bash wait"),
            Command("exit", "leave the current host, or the shell", _cmd_exit, scope="lab",
                    linux="bash exit"),
            Command("quit", "leave the shell", _cmd_quit, scope="lab"),
            mininet.BRIDGE_COMMAND,
            mininet.NODES_COMMAND,
            mininet.NET_COMMAND,
            mininet.LINKS_COMMAND,
            mininet.DUMP_COMMAND,
            mininet.PINGALL_COMMAND,
            mininet.LINK_COMMAND,
        ]
    )  # fmt: skip
