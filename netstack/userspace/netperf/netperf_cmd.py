"""``netperf`` and ``netserver`` at the shell prompt, in netperf 2.7's syntax and words.

Theory of operation: ``a netperf -H b -t TCP_STREAM -l 10 -- -m 16384``
parses netperf's global options (before ``--``) and the test's own (after
it), finds the lab host that owns the destination address, and runs
:func:`netstack.userspace.netperf.netperf.netperf` between the two hosts — real sockets,
TCP, qdiscs, links — in virtual time. It prints netperf's banner
(``MIGRATED TCP STREAM TEST from … to …``) and its classic result table
(``nettest_bsd.c``'s titles and formats: ``tput_title``/``tput_fmt_1``, or
``cpu_title``/``cpu_fmt_1`` with the CPU columns when the lab runs in timed
mode, where CPU time exists).

The netserver and the control connection: every host runs a netserver on
TCP port 12865, as the Debian/Ubuntu package starts it at boot, so
``netperf -H HOST`` works against any lab host. It is a real listening socket
(``[::]``, dual-stack, as netserver's on Linux; ``0.0.0.0`` on a host
without IPv6), started the first time
the session needs it — a ``netperf`` to the host or a ``netserver`` on it —
and listening from then on (``ss -ltn`` shows it). ``netserver [-p PORT]
[-L ADDR] [-4|-6]`` starts another one (or says it cannot, for a port
already bound). ``netperf`` first connects to ``-p PORT`` (12865) on the
target — a real TCP connection, in captures and in ``ss`` — and sends the
test there; the netserver opens the data socket, and sends its side's
results back when the test ends (:func:`netstack.userspace.netperf.netperf.netserver`).
When nothing listens there the connection is refused, and netperf fails as
it does on Linux (``establish control: are you sure there is a netserver
listening…``, exit status 255).

Virtual time only passes when something on the path takes time (a link rate
or delay, a qdisc's rate, timed mode's CPU costs). On a path where nothing
does, a time-limited test (``-l 10``) would send forever without the clock
moving, so every run has a *budget* (``--budget BYTES``, 16 MB by default;
TCP_RR: one transaction per 1 KiB of it): the test ends at whichever comes
first, and netperf says on stderr when the budget, not the time, ended it.
A run in which no virtual time passed at all reports no throughput (it
would be infinite) and says why.
"""

from __future__ import annotations

import errno
import math
from functools import partial
from typing import TYPE_CHECKING, Final

from netstack.errors import ConfigError
from netstack.ipv4 import ipv4_of
from netstack.ipv6 import ipv6_of
from netstack.socket import AF_INET, AF_INET6, AF_UNSPEC
from netstack.userspace.netperf.netperf import (
    NETSERVER_PORT,
    NetperfControlError,
    NetperfResult,
    netperf,
    netserver,
)
from netstack.userspace.procps.sysctl import sysctl_spec
from netstack.userspace.progress import Progress
from netstack.wire.ipv4 import aton
from netstack.wire.ipv6 import aton as aton6
from netstack.wire.rtnetlink import RTN_LOCAL

if TYPE_CHECKING:
    from netstack.userspace.process import Machine, Process

__all__ = ["NETPERF_USAGE", "NETSERVER_PORT", "main", "netserver_main"]

DEFAULT_BUDGET: Final = 16_000_000
DATA_PORT: Final = 12866  # the first data port; each run takes the next one

NETPERF_USAGE: Final = """
Usage: netperf [global options] -- [test options]

Global options:
    -c [cpu_rate]     Report local CPU usage (timed mode)
    -C [cpu_rate]     Report remote CPU usage (timed mode)
    -f G|M|K|g|m|k    Set the output units
    -h                Display this text
    -H name|ip        Specify the target machine
    -l testlen        Specify test duration (>0 secs) (<0 bytes|trans)
    -p port           Specify netserver port number
    -P 0|1            Don't/Do display test headers
    -t testname       Specify test to perform (TCP_STREAM, TCP_RR, UDP_STREAM)
    -V                Display version information and exit
    --budget bytes    netstack: stop a run after this many bytes (default 16000000)

Test options (after --):
    -m bytes          Set the send size (TCP_STREAM, UDP_STREAM)
    -M bytes          Set the recv size (accepted, not used)
    -r req[,rsp]      Set request/response sizes (TCP_RR)
    -P port           Set the data port (default 12866)
    -D                Set TCP_NODELAY (TCP_RR always sets it)

For those options taking two parms, at least one must be specified;
specifying one value without a comma will set both parms to that
value, specifying a value with a leading comma will set just the second
parm, a value with a trailing comma will set just the first. To set
each parm to unique values, specify both and separate them with a
comma.
""".strip("\n")

NETSERVER_USAGE: Final = """
Usage: netserver [options]

Options:
    -h                Display this text
    -D                Do not daemonize (accepted: a netserver is a task of the session)
    -L name,family    Use name to pick listen address and family for family
    -p portnum        Listen for connect requests on portnum.
    -4                Do IPv4
    -6                Do IPv6
    -V                Display version information and exit
""".strip("\n")

_BANNER: Final = {
    "TCP_STREAM": "TCP STREAM TEST",
    "TCP_RR": "TCP REQUEST/RESPONSE TEST",
    "UDP_STREAM": "UDP STREAM TEST",
}
# nettest_bsd.c: format_units() and the divisor of each -f letter
_UNITS: Final = {
    "g": ("10^9bits", 1e9 / 8),
    "m": ("10^6bits", 1e6 / 8),
    "k": ("10^3bits", 1e3 / 8),
    "G": ("GBytes", 1024.0**3),
    "M": ("MBytes", 1024.0**2),
    "K": ("KBytes", 1024.0),
}


# the local end netperf's banner names: the wildcard address of the family
_ANY: Final = {"AF_INET": "0.0.0.0 (0.0.0.0)", "AF_INET6": "::0 (::)"}


class _Usage(Exception):
    """A bad command line: print this message and the usage, exit 255 (netperf's)."""


async def _start_netserver(
    proc: Process, host: Machine, port: int, address: str | None, family: int
) -> OSError | None:
    """Start a netserver daemon on *host*; the bind's error if none could.

    AF_UNSPEC without an address listens on ``[::]``, dual-stack (IPv4
    peers arrive as ``::ffff:a.b.c.d``), as netserver's ``IN(6)ADDR_ANY``
    does on Linux; on a host without IPv6, on ``0.0.0.0``.
    """
    if address is not None:
        family = AF_INET6 if ":" in address else AF_INET
    try:
        await proc.start_daemon(
            partial(
                netserver,
                host,
                port,
                address=address,
                family=AF_INET6 if family == AF_UNSPEC else family,
            )
        )
    except OSError as e:
        if family != AF_UNSPEC or e.errno == errno.EADDRINUSE:
            return e
        # no IPv6 on this host: the IPv4 wildcard
        try:
            await proc.start_daemon(partial(netserver, host, port, family=AF_INET))
        except OSError as e4:
            return e4
    return None


async def _boot_netserver(proc: Process, host: Machine) -> None:
    """The netserver a host runs from boot (port 12865), started when first needed."""
    booted: set[str] = proc.state.setdefault("netserver_boot", set())
    if host.name not in booted:
        booted.add(host.name)
        await _start_netserver(proc, host, NETSERVER_PORT, None, AF_UNSPEC)


async def netserver_main(proc: Process, host: Machine, argv: list[str]) -> int:
    """``netserver [-p PORT] [-L ADDR[,FAMILY]] [-4|-6] [-D]``: serve netperf on this host."""
    port = NETSERVER_PORT
    address: str | None = None
    family = AF_UNSPEC
    it = iter(argv)
    for a in it:
        if a in ("-h", "--help"):
            proc.out(NETSERVER_USAGE)
            return 0
        if a == "-V":
            proc.out("Netperf version 2.7.0")
            return 0
        if a in ("-D", "-f", "-d"):
            continue
        if a in ("-4", "-6"):
            family = AF_INET if a == "-4" else AF_INET6
            continue
        if a.startswith("-p"):
            value = a[2:] or next(it, "")
            if not value.isdigit() or not 0 < int(value) < 65536:
                proc.err(f"netserver: invalid port '{value}'\n{NETSERVER_USAGE}")
                return 1
            port = int(value)
            continue
        if a.startswith("-L"):
            name, _, fam = (a[2:] or next(it, "")).partition(",")
            if fam:
                family = AF_INET6 if fam.lower() in ("6", "inet6", "af_inet6") else AF_INET
            if name:
                address = _listen_address(proc, name, family)
                if address is None:
                    proc.err(f"netserver: could not resolve '{name}'")
                    return 1
            continue
        proc.err(f"netserver: invalid option -- '{a.lstrip('-')[:1]}'\n{NETSERVER_USAGE}")
        return 1
    await _boot_netserver(proc, host)
    shown = address or "IN(6)ADDR_ANY"
    fam_name = {AF_INET: "AF_INET", AF_INET6: "AF_INET6"}.get(family, "AF_UNSPEC")
    error = await _start_netserver(proc, host, port, address, family)
    if error is not None:
        proc.err(f"Unable to start netserver with  '{shown}' port '{port}' and family {fam_name}")
        return 1
    proc.out(f"Starting netserver with host '{shown}' port '{port}' and family {fam_name}")
    return 0


def _listen_address(proc: Process, name: str, family: int) -> str | None:
    """netserver -L's name as an address literal (a lab host name resolves)."""
    for parse in (aton, aton6):
        try:
            parse(name)
            return name
        except ValueError:
            continue
    if family == AF_INET6:
        return None
    return proc.resolve(name)


def _int(flag: str, value: str) -> int:
    try:
        return int(value, 0)
    except ValueError:
        raise _Usage(f"netperf: invalid value '{value}' for {flag}") from None


def _pair(flag: str, value: str, first: int, second: int) -> tuple[int, int]:
    """netperf's two-value options: ``A``, ``A,B``, ``,B`` or ``A,``."""
    if "," not in value:
        n = _int(flag, value)
        return n, n
    a, b = value.split(",", 1)
    return (_int(flag, a) if a else first), (_int(flag, b) if b else second)


class _Options:
    def __init__(self) -> None:
        self.host: str | None = None
        self.test = "TCP_STREAM"
        self.length = 10.0
        self.control_port = NETSERVER_PORT
        self.data_port: int | None = None
        self.units = "m"
        self.banner = True
        self.cpu_asked = False
        self.send_size: int | None = None
        self.request, self.response = 1, 1
        self.budget = DEFAULT_BUDGET


def _parse(argv: list[str]) -> _Options | str:
    """The options, or a text to print and exit 0 with (``-h``, ``-V``)."""
    opts = _Options()
    globals_, _, test_args = (
        (argv[: argv.index("--")], "--", argv[argv.index("--") + 1 :])
        if "--" in argv
        else (argv, "", [])
    )
    i = 0

    def value(flag: str, attached: str = "") -> str:
        nonlocal i
        if attached:
            return attached
        i += 1
        if i >= len(args):
            raise _Usage(f"netperf: option requires an argument -- '{flag.lstrip('-')}'")
        return args[i]

    args = globals_
    while i < len(args):
        a = args[i]
        flag, att = (a[:2], a[2:]) if a.startswith("-") and not a.startswith("--") else (a, "")
        if flag == "--budget":
            opts.budget = _int(flag, value(flag))
            if opts.budget <= 0:
                raise _Usage("netperf: --budget must be positive")
        elif flag == "-h":
            return NETPERF_USAGE
        elif flag == "-V":
            return "Netperf version 2.7.0"
        elif flag == "-H":
            opts.host = value(flag, att).split(",")[0]
        elif flag == "-t":
            opts.test = value(flag, att).upper()
        elif flag == "-l":
            text = value(flag, att)
            try:
                opts.length = float(text)
            except ValueError:
                raise _Usage(f"netperf: invalid test length '{text}'") from None
        elif flag == "-p":
            opts.control_port = _pair(flag, value(flag, att), NETSERVER_PORT, 0)[0]
        elif flag == "-f":
            units = value(flag, att)
            if units not in _UNITS:
                raise _Usage(f"netperf: unknown output units '{units}'")
            opts.units = units
        elif flag == "-P":
            opts.banner = value(flag, att) != "0"
        elif flag in ("-c", "-C"):
            opts.cpu_asked = True
            # an optional rate follows ("-c 2400"): netperf's own calibration, not needed
            if not att and i + 1 < len(args) and _is_number(args[i + 1]):
                i += 1
        elif flag in ("-4", "-6"):
            pass  # the family follows the address given to -H
        else:
            raise _Usage(f"netperf: invalid option -- '{a.lstrip('-')[:1] or a}'")
        i += 1
    i, args = 0, test_args
    while i < len(args):
        a = args[i]
        flag, att = a[:2], a[2:]
        if flag == "-m":
            opts.send_size = _int(flag, value(flag, att))
        elif flag == "-M":
            value(flag, att)
        elif flag == "-r":
            opts.request, opts.response = _pair(flag, value(flag, att), 1, 1)
        elif flag == "-P":
            opts.data_port = _pair(flag, value(flag, att), DATA_PORT, 0)[0] or None
        elif flag == "-D":
            pass
        else:
            raise _Usage(f"netperf: invalid option -- '{a.lstrip('-')[:1] or a}'")
        i += 1
    if opts.test not in _BANNER:
        raise _Usage(
            f"netperf: test {opts.test} is not supported by netstack "
            "(TCP_STREAM, TCP_RR and UDP_STREAM are)"
        )
    if opts.length == 0:
        raise _Usage("netperf: the test length (-l) must not be 0")
    for name, size in (("-m", opts.send_size), ("-r", opts.request), ("-r", opts.response)):
        if size is not None and not 1 <= size <= (65507 if opts.test == "UDP_STREAM" else 1 << 24):
            raise _Usage(f"netperf: bad size {size} for {name}")
    return opts


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _owner(proc: Process, addr: str) -> Machine | None:
    """The lab host that has *addr* (IPv4 or IPv6) as a local address."""
    v6 = ":" in addr
    a = aton6(addr) if v6 else aton(addr)
    for host in proc.peers():
        try:
            if v6 and ipv6_of(host.net).ipv6_chk_addr(a, None):
                return host
            if not v6 and ipv4_of(host.net).fib.inet_addr_type(a) == RTN_LOCAL:
                return host
        except (AttributeError, ConfigError):
            continue
    return None


def _sysctl_middle(host: Machine, name: str) -> int:
    """The middle value of ``tcp_rmem``/``tcp_wmem`` (the default buffer size)."""
    return int(sysctl_spec(host.net, name).split()[1])


async def main(proc: Process, client: Machine, argv: list[str]) -> int:
    """``netperf -H HOST [-t TEST] [-l SECS|-BYTES] [-f UNITS] [-- -m SIZE -r REQ,RSP]``."""
    try:
        opts = _parse(argv)
    except _Usage as e:
        proc.err(f"{e}\n{NETPERF_USAGE}")
        return 255
    if isinstance(opts, str):
        proc.out(opts)
        return 0
    target = opts.host or "localhost"
    addr: str | None
    if target == "localhost":
        addr = "127.0.0.1"
    elif ":" in target:  # an IPv6 literal: the test runs over IPv6 (netperf -6)
        try:
            aton6(target)
            addr = target
        except ValueError:
            addr = None
    else:
        try:
            aton(target)
            addr = target
        except ValueError:
            addr = proc.resolve(target)
    if addr is None:
        proc.err(
            f"establish_control could not resolve remote '{target}' port '{opts.control_port}' "
            "af AF_UNSPEC\ngetaddrinfo returned -2 Name or service not known"
        )
        return 1
    family = "AF_INET6" if ":" in addr else "AF_INET"
    server = client if addr.startswith("127.") or addr == "::1" else _owner(proc, addr)
    if server is None:  # no lab host has the address: nobody can answer (netperf's
        # connect would time out; the words are the same)
        proc.err(_no_netserver(target, opts.control_port, family))
        return 255
    await _boot_netserver(proc, server)
    timed = client.net.cpus[0].model is not None
    if opts.cpu_asked and not timed:
        proc.err(
            "netperf: CPU utilisation exists in timed mode only; functional mode costs no time"
        )
    udp = opts.test == "UDP_STREAM"
    if udp:
        sndbuf, rcvbuf = client.net.wmem_default, server.net.rmem_default
        send_size = opts.send_size or min(sndbuf, 65507)
    else:
        sndbuf = _sysctl_middle(client, "net.ipv4.tcp_wmem")
        rcvbuf = _sysctl_middle(server, "net.ipv4.tcp_rmem")
        send_size = opts.send_size or sndbuf
    seconds = opts.length if opts.length > 0 else None
    limit = int(-opts.length) if opts.length < 0 else None
    rr = opts.test == "TCP_RR"
    # the budget: bytes for the streams, transactions for TCP_RR (one per KiB)
    budget = opts.budget if not rr else max(opts.budget // 1024, 1)
    if limit is None or limit > budget:
        cap, capped = budget, True
    else:
        cap, capped = limit, False
    port = opts.data_port
    if port is None:  # netperf's data connections use a fresh port each run
        port = proc.state.get("netperf_port", DATA_PORT)
        proc.state["netperf_port"] = DATA_PORT + (port + 1 - DATA_PORT) % 1000

    def banner() -> None:  # once the control connection is up, as netperf prints it
        if opts.banner:
            proc.out(
                f"MIGRATED {_BANNER[opts.test]} from {_ANY[family]} port 0 {family} to "
                f"{target} ({addr}) port 0 {family}" + (" : first burst 0" if rr else "")
            )

    bar = Progress(1000, "netperf", enabled=False if proc.background else None)

    def progress(done: int, elapsed: float) -> None:
        frac = done / cap
        if seconds is not None:
            frac = max(frac, elapsed / seconds)
        bar.update(int(1000 * min(frac, 1.0)))

    try:
        with proc.interrupt:
            result = await netperf(
                client,
                server,
                addr,
                test=opts.test,
                port=port,
                seconds=seconds,
                total_bytes=None if rr else cap,
                transactions=cap if rr else None,
                send_size=send_size,
                request_size=opts.request,
                response_size=opts.response,
                progress=progress,
                control_port=opts.control_port,
                started=banner,
            )
    except NetperfControlError:
        proc.err(_no_netserver(target, opts.control_port, family))
        return 255
    except OSError as e:
        proc.err(f"netperf: send_omni: data connection to {addr} port {port}: {e}")
        return 1
    finally:
        bar.close()
    if proc.interrupt.cancelled_caught:
        return 130
    done = result.transactions if rr else result.bytes_sent
    if capped and done >= cap and (seconds is None or result.virtual_seconds < seconds):
        what = f"{cap} transactions" if rr else f"{cap} bytes"
        proc.err(
            f"netperf: stopped at the budget of {what} after {result.virtual_seconds:.6f} s of "
            f"virtual time (--budget BYTES changes it)"
        )
    if result.virtual_seconds <= 0:
        proc.err(
            "netperf: no virtual time passed: nothing on the path takes virtual time (no link "
            "rate or delay, no shaping qdisc), so the throughput is unbounded; give a link a "
            "rate or delay, or shape it (tc qdisc add dev DEV root tbf rate 1gbit burst 64k "
            "latency 10ms)"
        )
    cpu = timed and result.local_cpu is not None
    proc.out(_table(opts, result, send_size, sndbuf, rcvbuf, cpu, client, server))
    return 0


def _no_netserver(target: str, port: int, family: str) -> str:
    """netlib.c establish_control_internal()'s and establish_control()'s words."""
    return (
        f"establish control: are you sure there is a netserver listening on {target} at "
        f"port {port}?\nestablish_control could not establish the control connection from "
        f"0.0.0.0 port 0 address family AF_UNSPEC to {target} port {port} address family "
        f"{family}"
    )


def _table(
    opts: _Options,
    r: NetperfResult,
    send_size: int,
    sndbuf: int,
    rcvbuf: int,
    cpu: bool,
    client: Machine,
    server: Machine,
) -> str:
    """netperf's result table: nettest_bsd.c's titles and formats for the test."""
    label, divisor = _UNITS[opts.units]
    secs = r.virtual_seconds
    lcpu, rcpu = r.local_cpu or 0.0, r.remote_cpu or 0.0
    ncl, ncr = len(client.net.cpus), len(server.net.cpus)

    def tput(nbytes: int) -> float:
        return nbytes / divisor / secs if secs > 0 else math.inf  # C's x/0.0, as netperf

    def sdem(util: float, ncpus: int, units: float) -> float:
        """calc_service_demand(): us of CPU per KB (or per transaction)."""
        return util / 100 * ncpus * secs * 1e6 / units if units > 0 else 0.0

    if opts.test == "TCP_STREAM":
        if not cpu:
            return (
                "Recv   Send    Send                          \n"
                "Socket Socket  Message  Elapsed              \n"
                "Size   Size    Size     Time     Throughput  \n"
                f"bytes  bytes   bytes    secs.    {label}/sec  \n\n"
                f"{rcvbuf:6d} {sndbuf:6d} {send_size:6d}    {secs:<6.2f}   "
                f"{tput(r.bytes_received):7.2f}   "
            )
        kb = r.bytes_received / 1024
        return (
            "Recv   Send    Send                          Utilization       Service Demand\n"
            "Socket Socket  Message  Elapsed              Send     Recv     Send    Recv\n"
            "Size   Size    Size     Time     Throughput  local    remote   local   remote\n"
            f"bytes  bytes   bytes    secs.    {label:<8.8s}/s  % S      % S      us/KB   us/KB\n\n"
            f"{rcvbuf:6d} {sndbuf:6d} {send_size:6d}    {secs:<6.2f}     "
            f"{tput(r.bytes_received):7.2f}   {lcpu:<6.2f}   {rcpu:<6.2f}   "
            f"{sdem(lcpu, ncl, kb):<6.3f}  {sdem(rcpu, ncr, kb):<6.3f}"
        )
    if opts.test == "TCP_RR":
        rate = r.transactions / secs if secs > 0 else math.inf
        if not cpu:
            return (
                "Local /Remote\n"
                "Socket Size   Request  Resp.   Elapsed  Trans.\n"
                "Send   Recv   Size     Size    Time     Rate         \n"
                "bytes  Bytes  bytes    bytes   secs.    per sec   \n\n"
                f"{sndbuf:<6d} {rcvbuf:<6d} {opts.request:<6d}   {opts.response:<6d}  "
                f"{secs:<6.2f}   {rate:7.2f}   \n"
                f"{sndbuf:<6d} {rcvbuf:<6d}"
            )
        return (
            "Local /Remote\n"
            "Socket Size   Request Resp.  Elapsed Trans.   CPU    CPU    S.dem   S.dem\n"
            "Send   Recv   Size    Size   Time    Rate     local  remote local   remote\n"
            "bytes  bytes  bytes   bytes  secs.   per sec  % S    % S    us/Tr   us/Tr\n\n"
            f"{sndbuf:<6d} {rcvbuf:<6d} {opts.request:<6d}  {opts.response:<6d} {secs:<6.2f}  "
            f"{rate:<6.2f}  {lcpu:<6.2f} {rcpu:<6.2f} "
            f"{sdem(lcpu, ncl, r.transactions):<6.3f}  {sdem(rcpu, ncr, r.transactions):<6.3f}\n"
            f"{sndbuf:<6d} {rcvbuf:<6d}"
        )
    sent = r.bytes_sent // send_size
    got = r.messages_received  # the netserver's count
    if not cpu:
        return (
            "Socket  Message  Elapsed      Messages                \n"
            "Size    Size     Time         Okay Errors   Throughput\n"
            f"bytes   bytes    secs            #      #   {label}/sec\n\n"
            f"{sndbuf:6d}  {send_size:6d}   {secs:<7.2f}   {sent:7d} {r.send_errors:6d}    "
            f"{tput(r.bytes_sent):7.2f}\n"
            f"{rcvbuf:6d}           {secs:<7.2f}   {got:7d}           {tput(r.bytes_received):7.2f}"
        )
    return (
        "Socket  Message  Elapsed      Messages                   CPU      Service\n"
        "Size    Size     Time         Okay Errors   Throughput   Util     Demand\n"
        f"bytes   bytes    secs            #      #   {label}/sec % SS     us/KB\n\n"
        f"{sndbuf:6d}  {send_size:6d}   {secs:<7.2f}   {sent:7d} {r.send_errors:6d}    "
        f"{tput(r.bytes_sent):7.1f}     {lcpu:<6.2f}   "
        f"{sdem(lcpu, ncl, r.bytes_sent / 1024):<6.3f}\n"
        f"{rcvbuf:6d}           {secs:<7.2f}   {got:7d}           {tput(r.bytes_received):7.1f}"
        f"     {rcpu:<6.2f}   {sdem(rcpu, ncr, r.bytes_received / 1024):<6.3f}"
    )
