"""Packet checkers: say what the next frame must be, get a readable failure if it is not.

Theory of operation (gVisor's ``checker`` package, in Python): a test lists
*matchers*, one per layer it cares about — ``Ether(dst=…)``, ``IPv4(src=…,
ttl=…)``, ``ICMP.echo_reply(seq=1)``, ``UDP(dport=…)``, ``ARP.reply(…)``,
``IPv6``/``ICMPv6``, ``GRE(key=…)`` — and :func:`check_frame` parses the frame
with dpkt (the independent oracle) and matches each matcher against the next
layer of its kind, so ``IPv4(src=outer), GRE(), IPv4(src=inner), ICMP…``
walks into a tunnel. A mismatch raises ``AssertionError`` naming the field,
the value found and the one expected, under tcpdump's one-line decode of the
frame::

    frame = await expect_frame(port, IPv4(src="10.0.0.1"), ICMP.echo_reply(seq=1))

    frames = Frames(host.capture("eth0"))        # the next frames a capture saw
    await frames.expect(ARP.request(tpa="10.0.0.2"))
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Any

import attrs
import dpkt
import trio

from netstack.host.capture import Capture
from netstack.host.port import Port
from netstack.userspace.tcpdump.tcpdump_print import Printer

__all__ = [
    "ARP",
    "GRE",
    "ICMP",
    "UDP",
    "Ether",
    "Frames",
    "ICMPv6",
    "IPv4",
    "IPv6",
    "Matcher",
    "check_frame",
    "decode",
    "expect_frame",
]


def decode(frame: bytes) -> str:
    """tcpdump's one-line decode of *frame* (without timestamp)."""
    return Printer(tstyle=1, eflag=True).packet(0.0, frame)


def _addr(value: Any) -> Any:
    if isinstance(value, bytes) and len(value) in (4, 16):
        return str(ipaddress.ip_address(value))
    if isinstance(value, bytes) and len(value) == 6:
        return ":".join(f"{b:02x}" for b in value)
    return value


@attrs.frozen
class Matcher:
    """Expected field values of one layer (``None`` = don't care)."""

    layer: type
    name: str
    fields: tuple[tuple[str, Any], ...]

    def mismatches(self, obj: Any) -> list[str]:
        out = []
        for field, want in self.fields:
            got = _addr(_get(obj, field))
            if isinstance(want, bytes) and len(want) in (4, 6, 16):
                want = _addr(want)
            if got != want:
                out.append(f"{self.name}.{field} is {got!r}, expected {want!r}")
        return out

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.fields)
        return f"{self.name}({inner})"


def _get(obj: Any, field: str) -> Any:
    if field == "payload":
        data = obj.data
        return bytes(data) if not isinstance(data, bytes) else data
    if field == "df":
        return bool(obj.df)
    return getattr(obj, field)


def _make(layer: type, name: str, **kw: Any) -> Matcher:
    return Matcher(layer, name, tuple((k, v) for k, v in kw.items() if v is not None))


def Ether(src: str | None = None, dst: str | None = None, type: int | None = None) -> Matcher:  # noqa: A002
    """The Ethernet header (MACs as ``"02:00:…"``)."""
    return _make(dpkt.ethernet.Ethernet, "ether", src=src, dst=dst, type=type)


def IPv4(
    src: str | None = None,
    dst: str | None = None,
    ttl: int | None = None,
    p: int | None = None,
    id: int | None = None,  # noqa: A002
    df: bool | None = None,
    tos: int | None = None,
) -> Matcher:
    """The IPv4 header (``p`` is the protocol number)."""
    return _make(dpkt.ip.IP, "ip", src=src, dst=dst, ttl=ttl, p=p, id=id, df=df, tos=tos)


def IPv6(
    src: str | None = None, dst: str | None = None, hlim: int | None = None, nxt: int | None = None
) -> Matcher:
    """The IPv6 header."""
    return _make(dpkt.ip6.IP6, "ip6", src=src, dst=dst, hlim=hlim, nxt=nxt)


def UDP(
    sport: int | None = None, dport: int | None = None, payload: bytes | None = None
) -> Matcher:
    """The UDP header (and, optionally, the exact payload)."""
    return _make(dpkt.udp.UDP, "udp", sport=sport, dport=dport, payload=payload)


def GRE(key: int | None = None, p: int | None = None) -> Matcher:
    """A GRE header (``p``: the protocol type, e.g. 0x0800)."""
    return _make(dpkt.gre.GRE, "gre", p=p, **({} if key is None else {"key": key}))


class _IcmpMatchers:
    """``ICMP(type=…, code=…)``, ``ICMP.echo_request(id=…, seq=…)``, ``ICMP.echo_reply(…)``."""

    def __call__(self, type: int | None = None, code: int | None = None) -> Matcher:  # noqa: A002
        return _make(dpkt.icmp.ICMP, "icmp", type=type, code=code)

    def echo_request(self, id: int | None = None, seq: int | None = None) -> Matcher:  # noqa: A002
        return self._echo(8, "echo_request", id, seq)

    def echo_reply(self, id: int | None = None, seq: int | None = None) -> Matcher:  # noqa: A002
        return self._echo(0, "echo_reply", id, seq)

    @staticmethod
    def _echo(t: int, name: str, ident: int | None, seq: int | None) -> Matcher:
        fields = [("type", t), ("code", 0)]
        fields += [(k, v) for k, v in (("data.id", ident), ("data.seq", seq)) if v is not None]
        return Matcher(dpkt.icmp.ICMP, f"icmp.{name}", tuple(fields))

    def unreachable(self, code: int | None = None) -> Matcher:
        return _make(dpkt.icmp.ICMP, "icmp.unreachable", type=3, code=code)

    def time_exceeded(self, code: int = 0) -> Matcher:
        return _make(dpkt.icmp.ICMP, "icmp.time_exceeded", type=11, code=code)


class _Icmp6Matchers:
    def __call__(self, type: int | None = None, code: int | None = None) -> Matcher:  # noqa: A002
        return _make(dpkt.icmp6.ICMP6, "icmp6", type=type, code=code)

    def echo_request(self) -> Matcher:
        return _make(dpkt.icmp6.ICMP6, "icmp6.echo_request", type=128, code=0)

    def echo_reply(self) -> Matcher:
        return _make(dpkt.icmp6.ICMP6, "icmp6.echo_reply", type=129, code=0)


class _ArpMatchers:
    def __call__(
        self,
        op: int | None = None,
        spa: str | None = None,
        tpa: str | None = None,
        sha: str | None = None,
        tha: str | None = None,
    ) -> Matcher:
        return _make(dpkt.arp.ARP, "arp", op=op, spa=spa, tpa=tpa, sha=sha, tha=tha)

    def request(self, tpa: str | None = None, spa: str | None = None) -> Matcher:
        return self(op=1, tpa=tpa, spa=spa)

    def reply(self, spa: str | None = None, sha: str | None = None) -> Matcher:
        return self(op=2, spa=spa, sha=sha)


ICMP = _IcmpMatchers()
ICMPv6 = _Icmp6Matchers()
ARP = _ArpMatchers()


def _layers(frame: bytes) -> Iterator[Any]:
    obj: Any = dpkt.ethernet.Ethernet(frame)
    while isinstance(obj, dpkt.Packet):
        yield obj
        obj = obj.data


def check_frame(frame: bytes, *matchers: Matcher) -> None:
    """Assert that *frame* has the layers *matchers* describe, in that order.

    Raises:
        AssertionError: naming the mismatching fields, with the frame's decode.
    """
    problems: list[str] = []
    try:
        layers = list(_layers(frame))
    except (dpkt.UnpackError, dpkt.NeedData) as e:
        raise AssertionError(f"frame does not parse ({e}):\n  {decode(frame)}") from None
    i = 0
    for m in matchers:
        while i < len(layers) and not isinstance(layers[i], m.layer):
            i += 1
        if i == len(layers):
            problems.append(f"no {m.name} layer (expected {m!r})")
            break
        for field, want in m.fields:
            if "." in field:
                head, _, tail = field.partition(".")
                got = _addr(getattr(getattr(layers[i], head), tail, None))
                if got != want:
                    problems.append(f"{m.name}.{tail} is {got!r}, expected {want!r}")
        plain = Matcher(m.layer, m.name, tuple(f for f in m.fields if "." not in f[0]))
        problems += plain.mismatches(layers[i])
        i += 1
    if problems:
        raise AssertionError(
            "frame is not " + " / ".join(map(repr, matchers)) + ":\n  " + decode(frame) + "\n"
            + "\n".join(f"  - {p}" for p in problems)
        )  # fmt: skip


async def expect_frame(port: Port, *matchers: Matcher, timeout: float = 5.0) -> bytes:
    """The next frame *port*'s device sends must match *matchers*; returns it.

    Raises:
        AssertionError: no frame within *timeout* (virtual) seconds, or a mismatch.
    """
    with trio.move_on_after(timeout):
        frame = await port.receive()
        check_frame(frame, *matchers)
        return frame
    raise AssertionError(
        f"no frame from {port.dev.name} within {timeout} s (expected "
        + " / ".join(map(repr, matchers)) + ")"
    )  # fmt: skip


class Frames:
    """The frames a :class:`~netstack.Capture` (in memory) saw, read in order.

    Args:
        capture: a capture that keeps frames (``host.capture("eth0")``).
        direction: ``"in"``, ``"out"`` or None for both.
    """

    def __init__(self, capture: Capture, direction: str | None = None) -> None:
        if not capture.keep:
            raise ValueError("Frames needs a capture that keeps frames (host.capture(dev))")
        self.capture = capture
        self.direction = direction
        self.cursor = 0

    def _next_nowait(self) -> bytes | None:
        frames = self.capture.frames
        while self.cursor < len(frames):
            _ts, data, outgoing = frames[self.cursor]
            self.cursor += 1
            if self.direction is None or (self.direction == "out") == outgoing:
                return data
        return None

    async def next(self, timeout: float = 5.0) -> bytes:
        """The next frame (waiting up to *timeout* virtual seconds)."""
        with trio.move_on_after(timeout):
            while True:
                frame = self._next_nowait()
                if frame is not None:
                    return frame
                await trio.sleep(0.0005)
        raise AssertionError(f"no frame on {self.capture.dev.name} within {timeout} s")

    async def expect(self, *matchers: Matcher, timeout: float = 5.0) -> bytes:
        """The next frame must match *matchers*; returns it."""
        frame = await self.next(timeout)
        check_frame(frame, *matchers)
        return frame

    def rest(self) -> list[bytes]:
        """Every frame not read yet."""
        out = []
        while (frame := self._next_nowait()) is not None:
            out.append(frame)
        return out
