"""What a packetdrill script says, once parsed: options, events, expressions.

Theory of operation: :mod:`.parser` turns a script into a :class:`Script` —
the ``--option=value`` lines, an optional init command, the list of
:class:`Event` (each with its time and one action: a TCP packet, a system call,
a shell command or a code snippet) and an optional cleanup command. Packets are
kept as the script wrote them (:class:`TcpPacketSpec`, with sequence numbers in
script space); system-call arguments and results are :class:`Expr` trees that
the runner evaluates against its symbol table.

Times are in microseconds, as packetdrill keeps them (``event->time_usecs``).
"""

from __future__ import annotations

from typing import Literal

import attrs

__all__ = [
    "ANY_TIME",
    "NO_TIME_RANGE",
    "CodeSpec",
    "CommandSpec",
    "Event",
    "Expr",
    "IpInfo",
    "Script",
    "SyscallSpec",
    "TcpOption",
    "TcpPacketSpec",
    "TimeType",
]

NO_TIME_RANGE = -1
"""``time_usecs_end`` of an event without a range (packetdrill's NO_TIME_RANGE)."""

TimeType = Literal["absolute", "relative", "any", "absolute_range", "relative_range"]
ANY_TIME: TimeType = "any"


@attrs.define
class Expr:
    """A system-call argument or result (packetdrill's ``struct expression``).

    ``kind`` is one of ``ellipsis``, ``int``, ``word``, ``string``, ``list``,
    ``binary`` (``op`` is ``|``, ``=`` or ``.``), ``struct`` (``{…}``: ``items``
    holds ``(name, Expr)`` pairs; ``name`` is ``""`` for positional members,
    ``tag`` says which C struct: ``linger``, ``iovec``, ``msghdr``, ``pollfd``,
    ``sockaddr`` or ``list``) and ``inet_addr``.
    """

    kind: str
    value: object = None
    items: list[tuple[str, Expr]] = attrs.field(factory=list)
    op: str = ""
    tag: str = ""
    line: int = 0

    def __repr__(self) -> str:
        if self.kind == "int":
            return str(self.value)
        if self.kind == "ellipsis":
            return "..."
        if self.kind == "word":
            return str(self.value)
        if self.kind == "string":
            return f'"{self.value}"'
        if self.kind == "list":
            return "[" + ", ".join(repr(e) for _, e in self.items) + "]"
        if self.kind == "binary":
            return f"{self.items[0][1]!r}{self.op}{self.items[1][1]!r}"
        inner = ", ".join(f"{k}={e!r}" if k else repr(e) for k, e in self.items)
        return "{" + inner + "}"


@attrs.define
class TcpOption:
    """One TCP option of a script packet (``<mss 1460,sackOK,…>``)."""

    kind: int
    length: int
    data: bytes = b""  # the bytes after kind and length

    def encode(self) -> bytes:
        if self.kind in (0, 1):
            return bytes([self.kind])
        return bytes([self.kind, self.length]) + self.data


@attrs.define
class IpInfo:
    """``(ect0)``, ``[tos 0x10]``, ``(flowlabel 0x1)``, ``[ttl 64]`` after the direction."""

    tos_check: Literal["none", "ecn", "ect01", "tos"] = "none"
    tos: int = 0
    flow_label: int = 0
    ttl: int = 0


@attrs.define
class TcpPacketSpec:
    """A ``<`` (inbound) or ``>`` (outbound) TCP packet line."""

    direction: Literal["inbound", "outbound"]
    flags: str
    start_seq: int
    payload: int
    ack: int
    window: int  # -1: not given (outbound only: not checked)
    urg_ptr: int = 0
    options: list[TcpOption] | None = attrs.field(factory=list)  # None: <...>, not checked
    ip: IpInfo = attrs.field(factory=IpInfo)
    src_port: int = 0
    dst_port: int = 0

    @property
    def options_len(self) -> int:
        return sum(len(o.encode()) for o in self.options or ())


@attrs.define
class SyscallSpec:
    """``[...END] name(args) = result [ERRNO (text)] [(note)]``."""

    name: str
    args: list[Expr] | None
    result: Expr
    errno: str | None = None
    strerror: str | None = None
    end_usecs: int | None = None  # not None: a blocking call (``...0.1``)
    note: str | None = None

    @property
    def blocking(self) -> bool:
        return self.end_usecs is not None


@attrs.define
class CommandSpec:
    """A backtick shell line."""

    command: str


@attrs.define
class CodeSpec:
    """A ``%{ … }%`` snippet (Python, run when the script ends)."""

    text: str


Action = TcpPacketSpec | SyscallSpec | CommandSpec | CodeSpec


@attrs.define
class Event:
    """One timed line of a script."""

    line: int
    time_type: TimeType
    time_usecs: int
    action: Action
    time_usecs_end: int = NO_TIME_RANGE
    offset_usecs: int = NO_TIME_RANGE  # set by the runner for relative times

    @property
    def description(self) -> str:
        """packetdrill's event_description()."""
        a = self.action
        if isinstance(a, TcpPacketSpec):
            return f"{a.direction} packet"
        if isinstance(a, SyscallSpec):
            return "system call start"
        if isinstance(a, CommandSpec):
            return "command"
        return "data collection for code"


@attrs.define
class Script:
    """A parsed script."""

    path: str
    options: list[tuple[str, str | None, int]] = attrs.field(factory=list)  # name, value, line
    init_command: CommandSpec | None = None
    init_line: int = 0
    events: list[Event] = attrs.field(factory=list)
    cleanup_command: CommandSpec | None = None
    cleanup_line: int = 0
