"""The command table: every command the shell, lab files and checks can run.

Theory of operation: a :class:`Command` names a program a user would type on
a Linux host (``ip``, ``tc``, ``ping``, ``tcpdump``, ``nstat``…) or a lab-level
one (``help``, ``sleep``, ``jobs``), with a one-line summary for ``help``, the
usage text, tab completion, and an async ``run(ctx, argv) -> exit status``.
The table is one dict built per :class:`~netstack.labs.session.Session` by
:func:`default_commands`, and it only maps names to entry points: a program
on a host is its tool's ``main(proc, host, argv)`` in :mod:`netstack.userspace`
(wrapped by :func:`tool`, which hands it the session's
:class:`~netstack.labs.session.Context` as its process and the host it runs
on); a lab-level command is one of :mod:`netstack.labs.builtins`; completers
are in :mod:`netstack.labs.completion`. A feature that adds a tool adds one
entry there (or calls :meth:`CommandTable.register`). A command known but not
available yet (``run=None``) answers ``NAME: not available yet in netstack
(…)`` with exit status 127, the way a shell answers a command it cannot find.

Commands write through the context (``ctx.out`` for stdout, ``ctx.err`` for
stderr), never to ``sys.stdout``: the shell prints, the lab runner records.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Literal

import attrs

from netstack.labs import mininet
from netstack.labs.builtins import (
    ADD_USAGE,
    cmd_add,
    cmd_clear,
    cmd_exit,
    cmd_expect,
    cmd_help,
    cmd_history,
    cmd_hosts,
    cmd_jobs,
    cmd_kill,
    cmd_quit,
    cmd_sleep,
    cmd_wait,
)
from netstack.labs.completion import (
    complete_ethtool,
    complete_expect,
    complete_hosts,
    complete_ip,
    complete_netperf,
    complete_tc,
    complete_tcpdump,
)
from netstack.userspace import hostname, udpflood
from netstack.userspace.coreutils import cat
from netstack.userspace.ethtool import ethtool
from netstack.userspace.iproute2 import nstat, ss, tc
from netstack.userspace.iproute2.bridge import bridge
from netstack.userspace.iproute2.ip import ip
from netstack.userspace.iputils import arping, ping
from netstack.userspace.netcat import nc
from netstack.userspace.netperf import netperf_cmd
from netstack.userspace.procps import sysctl
from netstack.userspace.tcpdump import tcpdump
from netstack.userspace.traceroute import traceroute

if TYPE_CHECKING:
    from netstack.labs.session import Context
    from netstack.userspace.process import ToolMain

__all__ = ["Command", "CommandFn", "CommandTable", "Completer", "default_commands", "tool"]

CommandFn = Callable[["Context", list[str]], Awaitable[int]]
Completer = Callable[["Context", list[str], str], list[str]]


@attrs.frozen
class Command:
    """One command of the table.

    Attributes:
        name: what the user types.
        summary: one line for ``help``.
        run: ``await run(ctx, argv)`` → exit status (argv excludes the name);
            None when the command is known but not available yet.
        scope: ``"host"`` (runs on a host: ``a ip link``) or ``"lab"``.
        usage: the usage text (``help NAME`` prints it).
        missing: for an unavailable command, what brings it (shown in the error).
        complete: optional tab completion of the arguments (context, words so
            far, the word being completed) → candidates.
        linux: the Linux tool it mirrors, for the command reference
            (``"iproute2 ip"``, ``"iputils ping"``…); empty for emulator-only commands.
    """

    name: str
    summary: str
    run: CommandFn | None
    scope: Literal["host", "lab"] = "host"
    usage: str = ""
    missing: str = ""
    complete: Completer | None = None
    linux: str = ""

    @property
    def available(self) -> bool:
        return self.run is not None


class CommandTable:
    """Commands by name (the one table the shell, lab files and checks share)."""

    def __init__(self, commands: list[Command] | None = None) -> None:
        self._commands: dict[str, Command] = {}
        for cmd in commands or ():
            self.register(cmd)

    def register(self, command: Command, *, replace: bool = False) -> None:
        """Add *command*; *replace* swaps out an existing entry of that name."""
        if command.name in self._commands and not replace:
            raise ValueError(f"command {command.name!r} is already registered")
        self._commands[command.name] = command

    def get(self, name: str) -> Command | None:
        return self._commands.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._commands

    def __iter__(self) -> Iterator[Command]:
        return iter(sorted(self._commands.values(), key=lambda c: c.name))

    def names(self, scope: str | None = None) -> list[str]:
        return sorted(c.name for c in self if scope is None or c.scope == scope)


def tool(main: ToolMain) -> CommandFn:
    """A command that runs a user-space tool's ``main(proc, host, argv)`` on the context's host."""

    async def run(ctx: Context, argv: list[str]) -> int:
        return await main(ctx, ctx.need_host(), argv)

    # (a mypyc-compiled function's __module__ is None)
    run.__name__ = run.__qualname__ = (getattr(main, "__module__", None) or "tool") + ".main"
    return run


def default_commands() -> CommandTable:
    """The command table every session starts with."""
    return CommandTable(
        [
            Command("ip", "show and change devices, addresses, routes, neighbours",
                    tool(ip.main), usage="ip [ OPTIONS ] OBJECT { COMMAND | help }",
                    complete=complete_ip, linux="iproute2 ip"),
            Command("sysctl", "read and set kernel parameters (net.ipv4.ip_forward…)",
                    tool(sysctl.main), usage="sysctl [-n] [-a] [-w] NAME[=VALUE] ...",
                    linux="procps sysctl"),
            Command("ping", "send ICMP echo requests (IPv4 or IPv6)", tool(ping.main),
                    usage="ping [-4|-6] [-c count] [-i interval] [-W timeout] [-s size] "
                    "[-t ttl] [-w deadline] [-n] [-q] DESTINATION", complete=complete_hosts,
                    linux="iputils ping"),
            Command("ping6", "send ICMPv6 echo requests (ping -6)", tool(ping.main6),
                    usage="ping6 [-c count] [-i interval] [-W timeout] [-s size] [-t hops] "
                    "[-w deadline] [-n] [-q] DESTINATION", complete=complete_hosts,
                    linux="iputils ping6"),
            Command("arping", "send ARP requests to a neighbour (iputils)", tool(arping.main),
                    usage="arping [-fqbDUA] [-c count] [-w timeout] [-i interval] [-I device] "
                    "[-s source] DESTINATION", complete=complete_hosts, linux="iputils arping"),
            Command("nc", "TCP/UDP connections and listeners (netcat-openbsd)", tool(nc.main),
                    usage="nc [-46lnuvz] [-p port] [-w timeout] [destination] [port]",
                    complete=complete_hosts, linux="netcat-openbsd nc"),
            Command("traceroute", "print the route packets take to a host (UDP, -I ICMP)",
                    tool(traceroute.main), usage="traceroute [-46InU] [-f first_ttl] "
                    "[-m max_ttl] [-p port] [-q nqueries] [-w waittime] host [packetlen]",
                    complete=complete_hosts, linux="traceroute"),
            Command("tcpdump", "print the packets a device sends and receives",
                    tool(tcpdump.main), usage="tcpdump [-eqSvxX] [-t…] [-c count] [-i interface] "
                    "[-r file] [-w file] [-Q in|out|inout] [expression]",
                    complete=complete_tcpdump, linux="tcpdump"),
            Command("nstat", "SNMP counters (increments since the last nstat)", tool(nstat.main),
                    usage="nstat [-a] [-z] [-n] [-r] [-s] [PATTERN ...]", linux="iproute2 nstat"),
            Command("ss", "socket statistics (-t TCP, -i tcp_info; -u UDP)", tool(ss.main),
                    usage="ss [-t|-u] [-a] [-l] [-i] [-n]", linux="iproute2 ss"),
            Command("cat", "read /proc/sys/…, /proc/net/snmp, /sys/class/net/…",
                    tool(cat.main), usage="cat FILE ...", linux="coreutils cat"),
            Command("hostname", "print the host's name", tool(hostname.main), linux="hostname"),
            Command("udpflood", "send UDP datagrams: -c COUNT or -l SECS, as fast as possible "
                    "(or at -r PPS)",
                    tool(udpflood.main),
                    usage=udpflood.UDPFLOOD_USAGE.split("\n")[0][len("Usage: ") :],
                    complete=complete_hosts),
            Command("expect", "check a counter: expect IpForwDatagrams >= 3", cmd_expect,
                    usage="expect COUNTER OP VALUE", complete=complete_expect),
            Command("tc", "show and change queueing disciplines", tool(tc.main),
                    usage="tc [ OPTIONS ] OBJECT { COMMAND | help }", complete=complete_tc,
                    linux="iproute2 tc"),
            Command("ethtool", "device features, coalescing, channels, RSS (-k -K -c -C -l -x -S…)",
                    tool(ethtool.main),
                    usage="ethtool -k|-K|-c|-C|-l|-L|-x|-X|-n|-N|-S DEVNAME ...",
                    complete=complete_ethtool,
                    linux="ethtool"),
            Command("netperf", "TCP_STREAM, TCP_RR, UDP_STREAM tests to a host's netserver",
                    tool(netperf_cmd.main),
                    usage="netperf -H HOST [-t TCP_STREAM|TCP_RR|UDP_STREAM] "
                    "[-l SECS|-BYTES] [-f g|m|k|G|M|K] [-p PORT] [-c] [-C] [--budget BYTES] "
                    "[-- -m SIZE -r REQ,RSP -P PORT]", complete=complete_netperf,
                    linux="netperf"),
            Command("netserver", "serve netperf on another port or address (every host serves "
                    "12865)", tool(netperf_cmd.netserver_main),
                    usage="netserver [-p PORT] [-L ADDR[,4|6]] [-4|-6] [-D]",
                    linux="netperf netserver"),
            Command("help", "list the commands, or show one's usage", cmd_help, scope="lab"),
            Command("hosts", "list the hosts and their addresses", cmd_hosts, scope="lab"),
            Command("sleep", "let N seconds of virtual time pass", cmd_sleep, scope="lab",
                    usage="sleep NUMBER[smhd] ...", linux="coreutils sleep"),
            Command("jobs", "list background jobs", cmd_jobs, scope="lab", linux="bash jobs"),
            Command("kill", "stop a background job: kill %1", cmd_kill, scope="lab",
                    usage="kill %JOB ...", linux="bash kill"),
            Command("wait", "let time run until background jobs end", cmd_wait, scope="lab",
                    usage="wait [%JOB ...]", linux="bash wait"),
            Command("exit", "leave the current host, or the shell", cmd_exit, scope="lab",
                    linux="bash exit"),
            Command("quit", "leave the shell", cmd_quit, scope="lab"),
            Command("add", "add a host or a link to the lab: add host c; add link a:eth1 c:eth0",
                    cmd_add, scope="lab", usage=ADD_USAGE),
            Command("clear", "clear the terminal screen", cmd_clear, scope="lab",
                    linux="ncurses clear"),
            Command("history", "the lines typed so far, numbered", cmd_history, scope="lab",
                    usage="history [N]", linux="bash history"),
            Command("bridge", "show and change bridge ports, the FDB and bridge VLANs",
                    tool(bridge.main), usage="bridge [ OPTIONS ] OBJECT { COMMAND | help }",
                    linux="iproute2 bridge"),
            Command("nodes", "list the hosts and switches (Mininet)", mininet.cmd_nodes,
                    scope="lab", linux="mininet nodes"),
            Command("net", "each node's interfaces and their peers (Mininet)", mininet.cmd_net,
                    scope="lab", linux="mininet net"),
            Command("links", "the links and their state (Mininet)", mininet.cmd_links,
                    scope="lab", linux="mininet links"),
            Command("dump", "each node and its addresses (Mininet)", mininet.cmd_dump,
                    scope="lab", linux="mininet dump"),
            Command("pingall", "every host pings every other once (Mininet)", mininet.cmd_pingall,
                    scope="lab", usage="pingall [TIMEOUT]", linux="mininet pingall"),
            Command("link", "take the links between two nodes down or up (Mininet)",
                    mininet.cmd_link, scope="lab", usage="link NODE1 NODE2 up|down",
                    linux="mininet link"),
        ]
    )  # fmt: skip
