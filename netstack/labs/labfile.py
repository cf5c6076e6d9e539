"""Lab files: a topology, its configuration, a scenario and its checks, in TOML.

Theory of operation: :func:`load_lab` reads a file with the standard library's
``tomllib``, finds where every key starts (:mod:`.tomlpos`), and validates the
document against :data:`SCHEMA` — a table of tables, each key with its type,
a check and a one-line description (the lab file reference in the docs is
generated from it, and a feature that adds a key adds one :class:`Key` line).
Every problem is reported as ``FILE:LINE:COL: message`` (:class:`LabFileError`),
all of them at once when they are static (unknown key, wrong type, duplicate
host, a link to an undeclared host or a device used twice).

:func:`build_lab` creates the hosts and links on a :class:`~netstack.host.Lab`,
starts the captures, and runs each host's ``commands`` through a
:class:`~netstack.labs.session.Session` — the same table of commands the shell
offers — stopping at the first failing command with its line and the tool's
own message (``demo.toml:14:5: a: ip addr add 10.0.0.1/33 dev eth0: Error:
any valid prefix is expected rather than "10.0.0.1/33".``). :func:`run_lab`
then runs the ``steps`` (a scenario, shell lines) and the ``checks`` (shell
lines that must succeed: ``a ping -c 3 b``, ``r expect IpForwDatagrams >= 3``,
``! a ping -c 1 -W 1 10.9.9.9``) and returns a :class:`LabReport`.
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs
import trio

from netstack.core.dev import dev_valid_name
from netstack.core.patches import Patches
from netstack.cpu.cpu import NR_CPUS
from netstack.errors import ConfigError, NetstackError
from netstack.labs.tomlpos import locate
from netstack.labs.units import parse_rate, parse_time

if TYPE_CHECKING:
    from netstack.cpu.timed import TimedModel
    from netstack.host import Lab
    from netstack.labs.session import Session

__all__ = [
    "SCHEMA",
    "CheckResult",
    "Key",
    "LabFileError",
    "LabReport",
    "LabSpec",
    "build_lab",
    "load_lab",
    "parse_lab",
    "run_lab",
    "timed_model",
]


class LabFileError(ConfigError):
    """Problems in a lab file; ``str()`` is one ``FILE:LINE:COL: message`` line per problem."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


# -- the schema -----------------------------------------------------------------------------------
Check = Callable[[Any], str | None]


@attrs.frozen
class Key:
    """One key of a lab-file table.

    Attributes:
        name: the key.
        types: accepted Python types after TOML parsing.
        doc: one line for the reference.
        check: returns an error message for a bad value (None if fine).
        required: the table must have it.
        example: a value for the reference.
    """

    name: str
    types: tuple[type, ...]
    doc: str
    check: Check | None = None
    required: bool = False
    example: str = ""


def _positive_int(v: Any) -> str | None:
    return None if v >= 1 else "must be at least 1"


def _cpus(v: Any) -> str | None:
    if not 1 <= v <= NR_CPUS:
        return f"must be 1..{NR_CPUS} (NR_CPUS)"
    return None


def _one_of(*choices: str) -> Check:
    def check(v: Any) -> str | None:
        return None if v in choices else f"must be one of {', '.join(choices)}"

    return check


def _rate(v: Any) -> str | None:
    try:
        parse_rate(v)
    except ValueError as e:
        return str(e)
    return None


def _time(v: Any) -> str | None:
    try:
        parse_time(v)
    except ValueError as e:
        return str(e)
    return None


def _mtu(v: Any) -> str | None:
    return None if 68 <= v <= 65535 else "must be between 68 and 65535"


def _strings(v: Any) -> str | None:
    bad = [i for i, x in enumerate(v) if not isinstance(x, str)]
    return f"item {bad[0] + 1} is not a string" if bad else None


def _ends(v: Any) -> str | None:
    if len(v) != 2 or not all(isinstance(x, str) for x in v):
        return 'must be two "host:device" strings'
    for end in v:
        if ":" not in end:
            continue  # a switch: its next port (checked against [switches])
        if end.count(":") != 1:
            return f'{end!r} is not "host:device"'
        if not dev_valid_name(end.split(":")[1]):
            return f"{end.split(':')[1]!r} is not a valid device name"
    return None


def _lans(v: Any) -> str | None:
    for dev, lan in v.items():
        if not dev_valid_name(dev):
            return f"{dev!r} is not a valid device name"
        if not isinstance(lan, str) or not lan or ":" in lan or " " in lan:
            return f"LAN of {dev} must be a name (a string without ':' or spaces)"
    return None


def _nonneg(v: Any) -> str | None:
    return None if v >= 0 else "must not be negative"


def _u16(v: Any) -> str | None:
    return None if 0 <= v <= 65535 else "must be between 0 and 65535"


def _end(v: Any) -> str | None:
    return None if v.count(":") == 1 else f'{v!r} is not "host:device"'


def _patches(v: Any) -> str | None:
    for name, value in v.items():
        if name not in Patches.names():
            return f"unknown patch {name!r} (patches: {', '.join(Patches.names())})"
        if not isinstance(value, bool):
            return f"patch {name!r} must be true or false"
    return None


def _names(v: Any) -> str | None:
    import socket

    for name, value in v.items():
        addrs = value if isinstance(value, list) else [value]
        if not addrs or not all(isinstance(a, str) for a in addrs):
            return f"name {name!r} must map to an address or a list of addresses"
        for a in addrs:
            for fam in (socket.AF_INET, socket.AF_INET6):
                try:
                    socket.inet_pton(fam, a)
                    break
                except OSError:
                    pass
            else:
                return f"name {name!r}: {a!r} is not an IPv4 or IPv6 address"
    return None


def _sysctls(v: Any) -> str | None:
    for name, value in v.items():
        if not isinstance(value, str | int | bool):
            return f"sysctl {name!r} must be a string or a number"
    return None


SCHEMA: Final[dict[str, tuple[Key, ...]]] = {
    "": (
        Key("lab", (dict,), "the lab's name, description and defaults ([lab] table)"),
        Key("hosts", (dict,), "one [hosts.NAME] table per host"),
        Key("switches", (dict,), "one [switches.NAME] table per switch (a host running a "
            "bridge br0)"),
        Key("links", (list,), "one [[links]] table per link"),
        Key("captures", (list,), "one [[captures]] table per pcap file to write"),
        Key("names", (dict,), "extra host names every host resolves (its /etc/hosts)", _names,
            example='{ web = "10.0.0.80", db = ["10.0.0.81", "2001:db8::81"] }'),
        Key("steps", (list,), "shell lines run after the hosts are configured", _strings,
            example='["a ping -c 3 b", "sleep 1"]'),
        Key("checks", (list,), "shell lines that must succeed (exit status 0)", _strings,
            example='["a ping -c 1 b", "r expect IpForwDatagrams >= 1"]'),
    ),
    "lab": (
        Key("name", (str,), "a short name (default: the file name)", example='"demo"'),
        Key("description", (str,), "what the lab shows", example='"two hosts and a router"'),
        Key("seed", (int,), "base seed of the hosts' random numbers", example="0"),
        Key("hz", (int,), "default CONFIG_HZ of the hosts", _positive_int, example="1000"),
        Key("timed", (bool,), "run the hosts' CPUs in timed mode (2 x Xeon E5540): CPU time "
            "exists, netperf reports CPU utilisation", example="true"),
    ),
    "host": (
        Key("cpus", (int,), f"emulated CPUs (1..{NR_CPUS})", _cpus, example="2"),
        Key("hz", (int,), "CONFIG_HZ", _positive_int, example="250"),
        Key("seed", (int,), "RNG seed (default: the lab's)", example="7"),
        Key("patches", (dict,), "seed patches to switch (all on by default)", _patches,
            example="{ hh_fast_copy = false }"),
        Key("sysctls", (dict,), "sysctls set when the host is created", _sysctls,
            example='{ "net.ipv4.ip_forward" = 1 }'),
        Key("commands", (list,), "commands run on the host, in order (ip, sysctl, tc…)",
            _strings, example='["ip addr add 10.0.0.1/24 dev eth0"]'),
        Key("lans", (dict,), "Kathará-style shared segments: interface = LAN name; every "
            "interface on one LAN joins one implicit switch of that name", _lans,
            example='{ eth0 = "A" }'),
    ),
    "switch": (
        Key("stp", (bool,), "run 802.1D spanning tree (stp_state 1)", example="true"),
        Key("vlan_filtering", (bool,), "filter by VLAN (ports start with PVID 1)",
            example="true"),
        Key("ageing_time", (int, float), "FDB ageing time in seconds (default 300)",
            _nonneg, example="30"),
        Key("priority", (int,), "bridge priority for the STP root election (default 32768)",
            _u16, example="4096"),
        Key("seed", (int,), "RNG seed (default: the lab's)", example="7"),
        Key("commands", (list,), "commands run on the switch after its ports exist "
            "(bridge vlan add…)", _strings,
            example='["bridge vlan add dev s1-eth1 vid 10 pvid untagged"]'),
    ),
    "link": (
        Key("ends", (list,), 'the two ends, "host:device"', _ends, required=True,
            example='["a:eth0", "b:eth0"]'),
        Key("kind", (str,), "veth (default) or nic (Ethernet NICs and a cable)",
            _one_of("veth", "nic"), example='"nic"'),
        Key("rate", (str, int, float), "cable rate (nic), tc units", _rate, example='"100mbit"'),
        Key("delay", (str, int, float), "one-way propagation delay (nic), tc units", _time,
            example='"5ms"'),
        Key("mtu", (int,), "both ends' MTU", _mtu, example="9000"),
        Key("rx_csum", (str,), "the NICs' receive checksum report",
            _one_of("unnecessary", "complete", "none"), example='"complete"'),
        Key("up", (bool,), "bring both ends up (default true)", example="false"),
    ),
    "capture": (
        Key("dev", (str,), 'the device to capture, "host:device"', _end, required=True,
            example='"r:eth1"'),
        Key("file", (str,), "pcap file (default HOST-DEV.pcap in the capture directory)",
            example='"router.pcap"'),
    ),
}  # fmt: skip


# -- the validated lab ----------------------------------------------------------------------------
@attrs.frozen
class Line:
    """A command line from the file, with where it is."""

    text: str
    where: str  # "FILE:LINE:COL"


@attrs.frozen
class HostSpec:
    name: str
    where: str
    cpus: int = 1
    hz: int | None = None
    seed: int | None = None
    patches: Patches | None = None
    sysctls: dict[str, str | int] = attrs.Factory(dict)
    commands: tuple[Line, ...] = ()
    lans: dict[str, str] = attrs.Factory(dict)


@attrs.frozen
class SwitchSpec:
    """A ``[switches.NAME]`` table (or an implicit switch for a LAN)."""

    name: str
    where: str
    stp: bool = False
    vlan_filtering: bool = False
    ageing_time: float | None = None
    priority: int | None = None
    seed: int | None = None
    commands: tuple[Line, ...] = ()


@attrs.frozen
class LinkSpec:
    a: str
    b: str
    where: str
    kind: str = "veth"
    rate: float | None = None
    delay: float = 0.0
    mtu: int | None = None
    rx_csum: str = "unnecessary"
    up: bool = True


@attrs.frozen
class CaptureSpec:
    dev: str
    file: str | None
    where: str


@attrs.frozen
class LabSpec:
    """A validated lab file."""

    path: Path
    name: str
    description: str
    seed: int
    hz: int
    hosts: tuple[HostSpec, ...]
    links: tuple[LinkSpec, ...]
    captures: tuple[CaptureSpec, ...]
    steps: tuple[Line, ...]
    checks: tuple[Line, ...]
    timed: bool = False
    #: ``[names]``: (name, addresses) in file order
    names: tuple[tuple[str, tuple[str, ...]], ...] = ()
    switches: tuple[SwitchSpec, ...] = ()


class _Validator:
    def __init__(self, path: str, text: str, data: dict[str, Any]) -> None:
        self.path = path
        self.data = data
        self.pos = locate(text)
        self.problems: list[str] = []

    def where(self, *path: str | int) -> str:
        while path and path not in self.pos:
            path = path[:-1]
        line, col = self.pos.get(path, (1, 1))
        return f"{self.path}:{line}:{col}"

    def problem(self, path: tuple[str | int, ...], message: str) -> None:
        self.problems.append(f"{self.where(*path)}: {message}")

    def table(
        self, kind: str, table: dict[str, Any], path: tuple[str | int, ...], title: str
    ) -> None:
        keys = {k.name: k for k in SCHEMA[kind]}
        for name, value in table.items():
            key = keys.get(name)
            if key is None:
                near = difflib.get_close_matches(name, keys, n=1)
                hint = f" (did you mean '{near[0]}'?)" if near else ""
                self.problem((*path, name), f"unknown key '{name}' in {title}{hint}")
                continue
            if not isinstance(value, key.types) or (
                isinstance(value, bool) and bool not in key.types
            ):
                want = " or ".join(_TYPE_NAMES[t] for t in key.types)
                self.problem((*path, name), f"'{name}' must be {want}, not {_type_name(value)}")
                continue
            if key.check is not None:
                msg = key.check(value)
                if msg is not None:
                    self.problem((*path, name), f"{name}: {msg}")
        for key in keys.values():
            if key.required and key.name not in table:
                self.problem(path, f"{title} needs '{key.name}'")


_TYPE_NAMES: Final = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "true or false",
    list: "an array",
    dict: "a table",
}


def _type_name(v: Any) -> str:
    for t, name in _TYPE_NAMES.items():
        if isinstance(v, t) and not (t is int and isinstance(v, bool)):
            return name
    return type(v).__name__


def parse_lab(text: str, path: str | Path = "<lab>") -> LabSpec:
    """Validate lab-file *text*; *path* names it in messages.

    Raises:
        LabFileError: every problem found, ``FILE:LINE:COL: message`` each.
    """
    name = str(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise LabFileError([_toml_error(name, text, e)]) from None
    v = _Validator(name, text, data)
    v.table("", data, (), "the lab file")
    lab = data.get("lab", {}) if isinstance(data.get("lab", {}), dict) else {}
    v.table("lab", lab, ("lab",), "[lab]")
    hosts_t = data.get("hosts", {}) if isinstance(data.get("hosts", {}), dict) else {}
    hosts: list[HostSpec] = []
    for hname, htable in hosts_t.items():
        where = v.where("hosts", hname)
        if not isinstance(htable, dict):
            v.problem(("hosts", hname), f"host '{hname}' must be a table ([hosts.{hname}])")
            continue
        if not hname or ":" in hname or hname.strip() != hname or " " in hname:
            v.problem(("hosts", hname), f"invalid host name {hname!r}")
        v.table("host", htable, ("hosts", hname), f"[hosts.{hname}]")
        cmds = htable.get("commands", [])
        cmd_lines = tuple(
            Line(c, v.where("hosts", hname, "commands", i))
            for i, c in enumerate(cmds if isinstance(cmds, list) else [])
            if isinstance(c, str)
        )
        patches = htable.get("patches")
        try:
            patch_value = (
                Patches().evolve(**patches) if isinstance(patches, dict) and patches else None
            )
        except (TypeError, ValueError):
            patch_value = None
        sysctls = htable.get("sysctls", {})
        lans = htable.get("lans", {})
        hosts.append(
            HostSpec(
                hname,
                where,
                cpus=htable.get("cpus", 1) if isinstance(htable.get("cpus", 1), int) else 1,
                hz=htable.get("hz") if isinstance(htable.get("hz"), int) else None,
                seed=htable.get("seed") if isinstance(htable.get("seed"), int) else None,
                patches=patch_value,
                sysctls=dict(sysctls) if isinstance(sysctls, dict) else {},
                commands=cmd_lines,
                lans=dict(lans) if isinstance(lans, dict) else {},
            )
        )
    host_names = {h.name for h in hosts}
    switches: list[SwitchSpec] = []
    sw_t = data.get("switches", {}) if isinstance(data.get("switches", {}), dict) else {}
    for sname, stable in sw_t.items():
        if not isinstance(stable, dict):
            v.problem(("switches", sname), f"switch '{sname}' must be a table ([switches.{sname}])")
            continue
        if not sname or ":" in sname or " " in sname:
            v.problem(("switches", sname), f"invalid switch name {sname!r}")
        if sname in host_names:
            v.problem(("switches", sname), f"'{sname}' is both a host and a switch")
        v.table("switch", stable, ("switches", sname), f"[switches.{sname}]")
        scmds = stable.get("commands", [])
        switches.append(
            SwitchSpec(
                sname,
                v.where("switches", sname),
                stp=stable.get("stp") is True,
                vlan_filtering=stable.get("vlan_filtering") is True,
                ageing_time=stable.get("ageing_time")
                if isinstance(stable.get("ageing_time"), int | float)
                else None,
                priority=stable.get("priority")
                if isinstance(stable.get("priority"), int)
                else None,
                seed=stable.get("seed") if isinstance(stable.get("seed"), int) else None,
                commands=tuple(
                    Line(c, v.where("switches", sname, "commands", i))
                    for i, c in enumerate(scmds if isinstance(scmds, list) else [])
                    if isinstance(c, str)
                ),
            )
        )
    switch_names = {sw.name for sw in switches}
    for h in hosts:  # Kathará-style LANs: an implicit switch per LAN name
        for lan in h.lans.values():
            if lan in host_names:
                v.problem(("hosts", h.name, "lans"), f"LAN '{lan}' has the name of a host")
            elif lan not in switch_names:
                switches.append(SwitchSpec(lan, v.where("hosts", h.name, "lans")))
                switch_names.add(lan)
    host_names |= switch_names
    links: list[LinkSpec] = []
    used: dict[str, str] = {}
    links_t = data.get("links", [])
    for i, ltable in enumerate(links_t if isinstance(links_t, list) else []):
        if not isinstance(ltable, dict):
            v.problem(("links", i), "each link must be a table ([[links]])")
            continue
        before = len(v.problems)
        v.table("link", ltable, ("links", i), "[[links]]")
        ends = ltable.get("ends")
        if len(v.problems) > before or not isinstance(ends, list):
            continue
        for j, end in enumerate(ends):
            hname = end.split(":")[0]
            if ":" not in end and hname not in switch_names:
                v.problem(("links", i, "ends", j), f"'{end}' is not \"host:device\" nor a switch")
                continue
            if ":" not in end:
                continue  # a switch's next port
            if hname not in host_names:
                known = ", ".join(sorted(host_names)) or "none"
                v.problem(
                    ("links", i, "ends", j), f"link to unknown host '{hname}' (hosts: {known})"
                )
            elif end in used:
                v.problem(
                    ("links", i, "ends", j),
                    f"device {end} is already used by the link at {used[end]}",
                )
            else:
                used[end] = v.where("links", i)
        if ends[0] == ends[1]:
            v.problem(("links", i, "ends"), "a link needs two different ends")
        kind = ltable.get("kind", "veth")
        if kind == "veth" and ("rate" in ltable or "delay" in ltable):
            v.problem(("links", i, "rate" if "rate" in ltable else "delay"),
                      'veth links have no rate or delay; use kind = "nic"')  # fmt: skip
        links.append(
            LinkSpec(
                ends[0],
                ends[1],
                v.where("links", i),
                kind=kind,
                rate=parse_rate(ltable["rate"]) if "rate" in ltable else None,
                delay=parse_time(ltable["delay"]) if "delay" in ltable else 0.0,
                mtu=ltable.get("mtu"),
                rx_csum=ltable.get("rx_csum", "unnecessary"),
                up=ltable.get("up", True),
            )
        )
    captures: list[CaptureSpec] = []
    caps_t = data.get("captures", [])
    for i, ctable in enumerate(caps_t if isinstance(caps_t, list) else []):
        if not isinstance(ctable, dict):
            v.problem(("captures", i), "each capture must be a table ([[captures]])")
            continue
        before = len(v.problems)
        v.table("capture", ctable, ("captures", i), "[[captures]]")
        if len(v.problems) > before:
            continue
        hname = ctable["dev"].split(":")[0]
        if hname not in host_names:
            v.problem(("captures", i, "dev"), f"capture on unknown host '{hname}'")
        captures.append(CaptureSpec(ctable["dev"], ctable.get("file"), v.where("captures", i)))

    def lines(key: str) -> tuple[Line, ...]:
        items = data.get(key, [])
        if not isinstance(items, list):
            return ()
        return tuple(Line(t, v.where(key, i)) for i, t in enumerate(items) if isinstance(t, str))

    if v.problems:
        raise LabFileError(v.problems)
    return LabSpec(
        path=Path(path),
        name=lab.get("name", Path(path).stem),
        description=lab.get("description", ""),
        seed=lab.get("seed", 0),
        hz=lab.get("hz", 1000),
        hosts=tuple(hosts),
        links=tuple(links),
        captures=tuple(captures),
        steps=lines("steps"),
        checks=lines("checks"),
        timed=lab.get("timed", False) is True,
        names=tuple(
            (n, tuple(a if isinstance(a, list) else [a]))
            for n, a in (data.get("names") or {}).items()
        ),
        switches=tuple(switches),
    )


def _toml_error(path: str, text: str, e: tomllib.TOMLDecodeError) -> str:
    """``FILE:LINE:COL: message`` for a TOML syntax error (tomllib gives the position in text)."""
    import re

    msg = str(e)
    m = re.search(r"\(at line (\d+), column (\d+)\)", msg)
    if m is None:
        m2 = re.search(r"\(at end of document\)", msg)
        line = text.count("\n") + 1
        return f"{path}:{line}:1: {msg.replace(' (at end of document)', '') if m2 else msg}"
    lineno, col = m.group(1), m.group(2)
    body = msg[: m.start()].strip()
    dup = re.match(r"Cannot declare \('hosts', '([^']*)'\) twice", body)
    if dup:
        body = f"duplicate host '{dup.group(1)}' (a [hosts.{dup.group(1)}] table already exists)"
    elif body.startswith("Cannot overwrite a value"):
        body = "duplicate key (this key is already set)"
    return f"{path}:{lineno}:{col}: {body}"


def load_lab(path: str | Path) -> LabSpec:
    """Read and validate the lab file at *path* (see :func:`parse_lab`)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise LabFileError([f"{path}: {e.strerror}"]) from None
    except UnicodeDecodeError as e:
        raise LabFileError([f"{path}: not UTF-8 text ({e.reason})"]) from None
    return parse_lab(text, path)


# -- building and running -------------------------------------------------------------------------
class _Recorder:
    """Collects what a command writes (to show it under a failing check or command)."""

    def __init__(self, echo: Callable[[str], None] | None = None) -> None:
        self.lines: list[str] = []
        self.echo = echo

    def __call__(self, text: str) -> None:
        self.lines.append(text)
        if self.echo is not None:
            self.echo(text)

    def take(self) -> str:
        text = "\n".join(self.lines)
        self.lines = []
        return text


def timed_model(spec: LabSpec) -> TimedModel | None:
    """The timed-mode model a lab with ``[lab] timed = true`` runs on (the reference
    machine, 2 x Xeon E5540), or None for functional mode."""
    if not spec.timed:
        return None
    from netstack.cpu.timed import Machine, TimedModel

    return TimedModel(Machine())


async def build_lab(
    spec: LabSpec,
    lab: Lab,
    session: Session,
    *,
    pcap_dir: str | Path | None = None,
    echo: Callable[[str], None] | None = None,
    captures: bool = True,
) -> None:
    """Create *spec*'s hosts, links and captures on *lab*, and run the hosts' commands.

    Args:
        session: runs the commands (its out/err are replaced while building).
        pcap_dir: where the ``[[captures]]`` go (default: next to the lab file);
            a lab without ``[[captures]]`` given a *pcap_dir* captures every
            link end there (``HOST-DEV.pcap``).
        captures: False to start no capture at all (``netstack check``).
        echo: if given, each command (``a# ip addr add …``) and its output is written here.

    Raises:
        LabFileError: the first command that failed (or a wiring error), with its line.
    """
    for name, addrs in spec.names:
        lab.hosts_file("".join(f"{a} {name}\n" for a in addrs))
    for h in spec.hosts:
        try:
            lab.add_host(h.name, cpus=h.cpus, hz=h.hz, seed=h.seed, patches=h.patches)
            for key, value in h.sysctls.items():
                lab.hosts[h.name].sysctl(
                    f"{key}={int(value) if isinstance(value, bool) else value}"
                )
        except NetstackError as e:
            raise LabFileError([f"{h.where}: {e}"]) from None
    for sw in spec.switches:
        try:
            lab.add_switch(
                sw.name,
                stp=sw.stp,
                vlan_filtering=sw.vlan_filtering,
                ageing_time=sw.ageing_time,
                priority=sw.priority,
                seed=sw.seed,
            )
        except NetstackError as e:
            raise LabFileError([f"{sw.where}: {e}"]) from None
    for h in spec.hosts:
        for ifname, lan in h.lans.items():
            try:
                lab.add_link(f"{h.name}:{ifname}", lan)
            except NetstackError as e:
                raise LabFileError([f"{h.where}: {e}"]) from None
    for link in spec.links:
        try:
            lab.add_link(
                link.a,
                link.b,
                kind=link.kind,  # type: ignore[arg-type]
                rate=link.rate,
                delay=link.delay,
                mtu=link.mtu,
                rx_csum=link.rx_csum,  # type: ignore[arg-type]
                up=link.up,
            )
        except NetstackError as e:
            raise LabFileError([f"{link.where}: {e}"]) from None
    out, err = _Recorder(echo), _Recorder(echo)
    saved = session.out, session.err
    session.out, session.err = out, err
    try:
        runs = [(h.name, h.commands) for h in spec.hosts]
        runs += [(sw.name, sw.commands) for sw in spec.switches]
        for hname, commands in runs:
            for cmd in commands:
                if echo is not None:
                    echo(f"{hname}# {cmd.text}")
                status = await session.run_line(f"{hname} {cmd.text}")
                if status != 0:
                    message = err.take() or out.take() or f"exit status {status}"
                    raise LabFileError([f"{cmd.where}: {hname}: {cmd.text}: {message}"])
                out.take()
                err.take()
    finally:
        session.out, session.err = saved
    if not captures:
        return
    base = Path(pcap_dir) if pcap_dir is not None else spec.path.parent
    wanted = list(spec.captures)
    if not wanted and pcap_dir is not None:
        # every link end, switch ports included (a bare switch end got its port name)
        wanted = [
            CaptureSpec(f"{dev.net.name}:{dev.name}", None, str(spec.path))
            for link in lab.links
            for dev in (link.a, link.b)
        ]
    for cap in wanted:
        hname, dname = cap.dev.split(":")
        host = lab.hosts[hname]
        if host.net.dev_get_by_name(dname) is None:
            raise LabFileError([f'{cap.where}: capture: Cannot find device "{dname}" on {hname}'])
        target = base / (cap.file or f"{hname}-{dname}.pcap")
        host.capture(dname, target)


@attrs.frozen
class CheckResult:
    """One check's outcome."""

    line: Line
    status: int
    output: str

    @property
    def passed(self) -> bool:
        return self.status == 0


@attrs.frozen
class LabReport:
    """What :func:`run_lab` found."""

    spec: LabSpec
    checks: tuple[CheckResult, ...]
    virtual_time: float

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def summary(self) -> str:
        n = len(self.checks)
        failed = sum(not c.passed for c in self.checks)
        return (
            f"{n} check{'s' if n != 1 else ''}: {n - failed} passed, {failed} failed "
            f"({self.virtual_time:.3f} s of virtual time)"
        )


async def run_lab(
    spec: LabSpec,
    session: Session,
    *,
    step_output: Callable[[str], None] | None = None,
    on_check: Callable[[CheckResult], None] | None = None,
) -> LabReport:
    """Run *spec*'s steps, then its checks, on a lab built by :func:`build_lab`.

    Args:
        step_output: where steps' commands and output go (default: dropped).
        on_check: called with each result as it is known (for live reports).

    Raises:
        LabFileError: a step failed (steps must succeed; checks may fail).
    """
    out, err = _Recorder(step_output), _Recorder(step_output)
    saved = session.out, session.err
    session.out, session.err = out, err
    results: list[CheckResult] = []
    try:
        for step in spec.steps:
            if step_output is not None:
                step_output(f"{session.prompt}{step.text}")
            status = await session.run_line(step.text)
            if status != 0 and not step.text.rstrip().endswith("&"):
                message = err.take() or out.take() or f"exit status {status}"
                raise LabFileError([f"{step.where}: step failed: {step.text}: {message}"])
            out.take()
            err.take()
        out.echo = err.echo = None
        for check in spec.checks:
            status = await session.run_line(check.text)
            text = "\n".join(filter(None, (out.take(), err.take())))
            result = CheckResult(check, status, text)
            results.append(result)
            if on_check is not None:
                on_check(result)
    finally:
        session.out, session.err = saved
        await session.aclose()
    await trio.lowlevel.checkpoint()
    return LabReport(spec, tuple(results), trio.current_time())
