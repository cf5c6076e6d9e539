"""The shell's own commands: ``help``, ``hosts``, ``sleep``, jobs, ``exit``, and ``expect``.

Theory of operation: these are what a shell (bash's builtins) or the lab
itself provides, not programs on a host: each ``_cmd_*`` coroutine takes a
:class:`~netstack.labs.session.Context` and the argv after the command's
name, prints through ``ctx.out``/``ctx.err`` and returns an exit status.
``expect COUNTER OP VALUE`` is the check lab files make (it reads a host's
counters: nstat names, device and qdisc statistics, drop reasons). The
programs that run on a host live in :mod:`netstack.userspace`;
:func:`~netstack.labs.commands.default_commands` maps names to both.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import trio
import trio.testing

from netstack.errors import ConfigError, NetstackError
from netstack.userspace.iproute2.nstat import nstat_counters

if TYPE_CHECKING:
    from netstack.host import Host
    from netstack.labs.session import Context

__all__ = [
    "EXPECT_OPS",
    "cmd_exit",
    "cmd_expect",
    "cmd_help",
    "cmd_hosts",
    "cmd_jobs",
    "cmd_kill",
    "cmd_quit",
    "cmd_sleep",
    "cmd_wait",
    "counter_names",
    "read_counter",
]


# -- expect: assertions on counters ---------------------------------------------------------
EXPECT_OPS: Final[dict[str, Callable[[int, int], bool]]] = {
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
    names = list(nstat_counters(host.net))
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
    counters = nstat_counters(host.net)
    if name not in counters:
        close = [n for n in counters if n.lower() == name.lower()]
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ConfigError(f"expect: unknown counter {name!r}{hint}")
    return counters[name]


async def cmd_expect(ctx: Context, argv: list[str]) -> int:
    """``expect COUNTER OP VALUE``: exit 0 if the counter compares as asked."""
    host = ctx.need_host()
    if len(argv) != 3 or argv[1] not in EXPECT_OPS:
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
    ok = EXPECT_OPS[op](value, want)
    ctx.out(f"{name} = {value}" + ("" if ok else f", expected {op} {want}"))
    return 0 if ok else 1


# -- lab-level commands ---------------------------------------------------------------------------
_TIME: Final = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)([smhd]?)$")


async def cmd_sleep(ctx: Context, argv: list[str]) -> int:
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


async def cmd_help(ctx: Context, argv: list[str]) -> int:
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


async def cmd_hosts(ctx: Context, argv: list[str]) -> int:
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


async def cmd_jobs(ctx: Context, argv: list[str]) -> int:
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


async def cmd_kill(ctx: Context, argv: list[str]) -> int:
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


async def cmd_wait(ctx: Context, argv: list[str]) -> int:
    jobs = [_job_of(ctx, a) for a in argv] if argv else ctx.session.pending_jobs()
    status = 0
    with ctx.interrupt:
        for job in jobs:
            if job is None:
                continue
            await job.done.wait()
            status = job.status if job.status is not None else 143
    return 130 if ctx.interrupt.cancelled_caught else status


async def cmd_quit(ctx: Context, argv: list[str]) -> int:
    ctx.session.exit_requested = True
    return int(argv[0]) if argv and argv[0].isdigit() else 0


async def cmd_exit(ctx: Context, argv: list[str]) -> int:
    session = ctx.session
    if session.current is not None:
        session.current = None
    else:
        session.exit_requested = True
    return int(argv[0]) if argv and argv[0].isdigit() else 0
