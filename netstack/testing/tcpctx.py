"""A TCP test context: one host under test, a hand-driven peer, segments as bytes.

Theory of operation: :class:`TcpContext` is modelled on gVisor's
``pkg/tcpip/transport/tcp/testing/context``. It builds one host (``stack``,
10.0.0.1/24 and 2001:db8::1/64) whose ``eth0`` cable ends in a
:class:`~netstack.host.Port`, and plays the peer (10.0.0.2, 2001:db8::2, port
40000) by hand: :meth:`TcpContext.send_segment` builds a real TCP segment —
IP and TCP headers with valid checksums (:func:`build_packet`, the packetdrill
runner's builder), in an Ethernet frame to ``eth0`` — and
:meth:`TcpContext.expect_segment` reads the next TCP segment the stack sent
and checks the fields a test names (flags, sequence and acknowledgment
numbers, window, options, payload), failing with the segment in packetdrill's
notation and a field-by-field diff. Frames that are not TCP (IPv6's MLD and
router solicitations) are kept in :attr:`TcpContext.other_frames` and
skipped. The peer's neighbour entry is permanent, so no ARP or ND runs.

Sequence numbers are relative, as packetdrill and tcpdump print them: the
peer's own numbers count from its ISS (:data:`PEER_ISS`), the stack's from the
ISS its SYN or SYN-ACK carried (learnt when :meth:`expect_segment` sees it), so
a SYN is ``seq=0`` and the first data byte is ``seq=1``. The context tracks
what the peer has sent (:attr:`snd_nxt`) and what it has received in order
(:attr:`rcv_nxt`): they are the defaults of ``seq`` and ``ack``.

:meth:`create_connected` (the stack connects, as gVisor's ``CreateConnected``)
and :meth:`create_accepted` (the stack listens and accepts) run the
three-way handshake, checking every segment of it. The NIC leaves checksum
verification to the stack (``rx_csum="none"``), so a corrupted segment is
counted where Linux counts it. Everything runs on the lab's clock: use it
under Trio's autojump clock (the plugin's ``lab`` fixture), where a timeout of
five seconds costs nothing.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final, TypeAlias

import attrs
import trio

from netstack.core.sock import AF_INET, AF_INET6, SOCK_STREAM
from netstack.testing import floods
from netstack.testing.builders import IPV4_ONLY
from netstack.userspace.packetdrill.packet import (
    TCP_ACK,
    TCP_FIN,
    TCP_SYN,
    Packet,
    build_packet,
    flags_from_string,
    flags_to_string,
    parse_packet,
    tcp_options_to_string,
)
from netstack.userspace.packetdrill.script import TcpOption
from netstack.wire import ipv4 as wire4
from netstack.wire import ipv6 as wire6
from netstack.wire.ethernet import ETH_P_IP, ETH_P_IPV6, mac_aton

if TYPE_CHECKING:
    from netstack.host import Host, Lab, Port
    from netstack.socket import Socket
    from netstack.tcp.sock import TcpSock

__all__ = [
    "PEER_ISS",
    "OptionsMatcher",
    "Segment",
    "TcpContext",
    "TcpOption",
    "linux_synack_options",
    "opt_mss",
    "opt_nop",
    "opt_sack",
    "opt_sack_perm",
    "opt_timestamp",
    "opt_wscale",
]

STACK_ADDR: Final = {4: "10.0.0.1", 6: "2001:db8::1"}
PEER_ADDR: Final = {4: "10.0.0.2", 6: "2001:db8::2"}
PEER_MAC: Final = "02:00:00:00:00:02"
PEER_PORT: Final = 40000
STACK_PORT: Final = 8000  # what create_accepted() listens on
PEER_ISS: Final = 1000  # the peer's initial sequence number (gVisor's is 789)
SETTLE: Final = 1e-6  # virtual time send_segment() waits: the stack has reacted by then
MOD: Final = 1 << 32


def opt_mss(mss: int) -> TcpOption:
    """``mss N`` (kind 2)."""
    return TcpOption(2, 4, struct.pack("!H", mss))


# the peer's SYN or SYN-ACK options by default: no timestamps, SACK or window scaling
MSS_ONLY: Final = (opt_mss(1460),)


def opt_wscale(shift: int) -> TcpOption:
    """``wscale N`` (kind 3)."""
    return TcpOption(3, 3, bytes([shift]))


def opt_sack_perm() -> TcpOption:
    """``sackOK`` (kind 4)."""
    return TcpOption(4, 2)


def opt_timestamp(val: int, ecr: int) -> TcpOption:
    """``TS val V ecr E`` (kind 8)."""
    return TcpOption(8, 10, struct.pack("!II", val, ecr))


def opt_nop() -> TcpOption:
    """``nop`` (kind 1)."""
    return TcpOption(1, 1)


def opt_sack(blocks: Sequence[tuple[int, int]]) -> TcpOption:
    """``sack L:R …`` (kind 5) with absolute edges; see :meth:`TcpContext.sack`."""
    data = b"".join(struct.pack("!II", lo % MOD, hi % MOD) for lo, hi in blocks)
    return TcpOption(5, 2 + len(data), data)


def linux_synack_options(syn: Segment) -> list[TcpOption]:
    """What a Linux peer answers a Linux SYN with: ``mss 1460,sackOK,TS val 1 ecr
    <the SYN's TSval>,nop,wscale 7`` (no timestamp if the SYN had none)."""
    ts = next((o for o in syn.options if o.kind == 8), None)
    if ts is None:
        return [opt_mss(1460), opt_nop(), opt_nop(), opt_sack_perm(), opt_nop(), opt_wscale(7)]
    ecr = struct.unpack("!I", ts.data[:4])[0]
    return [opt_mss(1460), opt_sack_perm(), opt_timestamp(1, ecr), opt_nop(), opt_wscale(7)]


OptionsMatcher: TypeAlias = str | Sequence[TcpOption] | Callable[[list[TcpOption]], bool]
"""What ``expect_segment(options=…)`` accepts: packetdrill's notation, where
``*`` stands for any number (``"mss 1460,sackOK,TS val * ecr *,nop,wscale *"``),
the exact list of options, or a predicate."""


@attrs.frozen
class Segment:
    """A TCP segment the stack sent, with the peer's view of its numbers."""

    flags: str  # packetdrill's letters: "S.", "P.", "F.", "R"
    seq: int  # relative to the stack's ISS
    ack: int  # relative to the peer's ISS
    window: int  # the 16-bit field as on the wire (not scaled)
    options: list[TcpOption]
    payload: bytes
    packet: Packet  # the decoded IP/TCP packet, absolute numbers
    frame: bytes  # the Ethernet frame as it left eth0
    time: float  # virtual time it was read

    def __str__(self) -> str:
        end = self.seq + len(self.payload)
        s = f"{self.flags} {self.seq}:{end}({len(self.payload)})"
        if self.packet.flags & TCP_ACK:
            s += f" ack {self.ack}"
        s += f" win {self.window}"
        if self.options:
            s += f" <{tcp_options_to_string(self.options)}>"
        return s


def _options_match(expected: OptionsMatcher, got: list[TcpOption]) -> bool:
    if isinstance(expected, str):
        pattern = r"\d+".join(re.escape(part) for part in expected.split("*"))
        return re.fullmatch(pattern, tcp_options_to_string(got)) is not None
    if callable(expected):
        return expected(got)
    return list(expected) == got


def _describe_options(expected: OptionsMatcher) -> str:
    if isinstance(expected, str):
        return f"<{expected}>"
    if callable(expected):
        return f"{getattr(expected, '__name__', 'predicate')}(options)"
    return f"<{tcp_options_to_string(list(expected))}>"


class TcpContext:
    """One host under test and a hand-driven TCP peer on its ``eth0``.

    Args:
        lab: the lab to build in (run it on the autojump clock).
        family: 4 or 6: the addresses the peer and the stack talk over.
        mtu: ``eth0``'s MTU (None: 1500).
        name: the host's name.
        sysctls: more sysctls for the host (IPv4 hosts boot with IPv6 off).
    """

    def __init__(
        self,
        lab: Lab,
        *,
        family: int = 4,
        mtu: int | None = None,
        name: str = "stack",
        sysctls: dict[str, str | int] | None = None,
    ) -> None:
        if family not in (4, 6):
            raise ValueError(f"family must be 4 or 6, not {family!r}")
        self.family = family
        boot: dict[str, str | int] = dict(IPV4_ONLY) if family == 4 else {}
        boot.update(sysctls or {})
        self.host: Host = lab.add_host(name, sysctls=boot)
        self.port: Port = lab.add_port(f"{name}:eth0", mtu=mtu, rx_csum="none")
        host = self.host
        if family == 4:
            host.ip(f"addr add {STACK_ADDR[4]}/24 dev eth0")
            host.ip(f"neigh add {PEER_ADDR[4]} lladdr {PEER_MAC} dev eth0 nud permanent")
        else:
            host.ip(f"-6 addr add {STACK_ADDR[6]}/64 dev eth0 nodad")
            host.ip(f"-6 neigh add {PEER_ADDR[6]} lladdr {PEER_MAC} dev eth0 nud permanent")
        self.stack_addr = STACK_ADDR[family]
        self.peer_addr = PEER_ADDR[family]
        self._src = self._wire_addr(self.peer_addr)
        self._dst = self._wire_addr(self.stack_addr)
        self._stack_mac = bytes(host.dev("eth0").dev_addr)
        self._proto = ETH_P_IP if family == 4 else ETH_P_IPV6
        self.peer_port = PEER_PORT
        self.stack_port = STACK_PORT
        self.peer_iss = PEER_ISS
        self.stack_iss: int | None = None
        self.snd_nxt = 0  # the peer's next sequence number (relative)
        self.rcv_nxt = 0  # what the peer has received of the stack's (relative)
        self.received: list[Segment] = []  # every TCP segment read, in order
        self.other_frames: list[bytes] = []  # frames that were not TCP
        self.sock: Socket | None = None  # the stack's connected socket
        self.listener: Socket | None = None

    # ------------------------------------------------------------------ addresses
    def _wire_addr(self, text: str) -> bytes:
        if self.family == 4:
            return wire4.aton(text).to_bytes(4, "big")
        return wire6.aton(text).to_bytes(16, "big")

    @property
    def af(self) -> int:
        """AF_INET or AF_INET6: the stack's socket family."""
        return AF_INET if self.family == 4 else AF_INET6

    @property
    def sk(self) -> TcpSock:
        """The kernel sock of :attr:`sock`."""
        from netstack.tcp.sock import TcpSock

        assert self.sock is not None, "no connection yet: create_connected() or create_accepted()"
        sk = self.sock.sock
        assert isinstance(sk, TcpSock)
        return sk

    def sack(self, *blocks: tuple[int, int]) -> TcpOption:
        """A SACK option for blocks of the stack's data, in relative numbers."""
        base = self._stack_iss()
        return opt_sack([(base + lo, base + hi) for lo, hi in blocks])

    def _stack_iss(self) -> int:
        if self.stack_iss is None:
            raise AssertionError("the stack's ISS is unknown: expect its SYN or SYN-ACK first")
        return self.stack_iss

    # ------------------------------------------------------------------ sending
    def build_segment(
        self,
        flags: str = ".",
        *,
        seq: int | None = None,
        ack: int | None = None,
        window: int = 65535,
        payload: bytes = b"",
        options: Sequence[TcpOption] = (),
        sport: int | None = None,
        dport: int | None = None,
        corrupt_checksum: bool = False,
    ) -> bytes:
        """The Ethernet frame :meth:`send_segment` would send (nothing is tracked)."""
        size = sum(len(o.encode()) for o in options)
        if size % 4:
            raise ValueError(f"options take {size} bytes: pad them to a multiple of 4 (nop)")
        bits = flags_from_string(flags)
        rel_seq = self.snd_nxt if seq is None else seq
        if ack is None:
            ack = self.rcv_nxt if bits & TCP_ACK else 0
        abs_ack = (self.stack_iss or 0) + ack if bits & TCP_ACK or ack else 0
        pkt = Packet(
            4 if self.family == 4 else 6,
            self._src,
            self._dst,
            self.peer_port if sport is None else sport,
            self.stack_port if dport is None else dport,
            (self.peer_iss + rel_seq) % MOD,
            abs_ack % MOD,
            bits,
            window,
            list(options),
            payload,
        )
        ip = bytearray(build_packet(pkt))
        if corrupt_checksum:
            at = (20 if self.family == 4 else 40) + 16
            ip[at] ^= 0xFF
        return floods.eth(self._stack_mac, mac_aton(PEER_MAC), self._proto, bytes(ip))

    async def send_segment(
        self,
        flags: str = ".",
        *,
        seq: int | None = None,
        ack: int | None = None,
        window: int = 65535,
        payload: bytes = b"",
        options: Sequence[TcpOption] = (),
        sport: int | None = None,
        dport: int | None = None,
        corrupt_checksum: bool = False,
    ) -> None:
        """Send one segment from the peer; return once the stack has processed it.

        *flags* are packetdrill's letters (``"S"``, ``"S."``, ``"."``, ``"P."``,
        ``"F."``, ``"R"``, ``"R."``); *seq* and *ack* are relative (defaults:
        :attr:`snd_nxt` and, with an ACK, :attr:`rcv_nxt`). A segment sent at
        :attr:`snd_nxt` advances it by its payload and FIN, and by its SYN at
        the ISS (a SYN inside a connection takes no number).
        *corrupt_checksum* flips a byte of the TCP checksum.

        Raises:
            ValueError: *options* do not fill a multiple of 4 bytes.
        """
        rel_seq = self.snd_nxt if seq is None else seq
        frame = self.build_segment(
            flags,
            seq=rel_seq,
            ack=ack,
            window=window,
            payload=payload,
            options=options,
            sport=sport,
            dport=dport,
            corrupt_checksum=corrupt_checksum,
        )
        if rel_seq == self.snd_nxt and not corrupt_checksum:
            bits = flags_from_string(flags)
            syn = bool(bits & TCP_SYN) and rel_seq == 0  # a SYN takes a number at the ISS only
            self.snd_nxt += len(payload) + syn + bool(bits & TCP_FIN)
        self.port.send_nowait(frame)
        await trio.sleep(SETTLE)

    def build_icmp_error(
        self,
        icmp_type: int,
        code: int,
        *,
        seq: int,
        info: int = 0,
        quote: int = 20,
        flags: str = "S.",
        dport: int | None = None,
    ) -> bytes:
        """The frame of an ICMP (or ICMPv6) error from the peer about a stack's segment.

        The error quotes the IP header of a segment stack → peer and *quote*
        bytes of its TCP header (*flags*, relative sequence *seq*; *dport*: the
        peer port it went to). *info* is the 32-bit field after the checksum
        (the next-hop MTU of "fragmentation needed" in its low 16 bits, the MTU
        of a Packet Too Big).
        """
        quoted = Packet(
            4 if self.family == 4 else 6,
            self._dst,
            self._src,
            self.stack_port,
            self.peer_port if dport is None else dport,
            (self._stack_iss() + seq) % MOD,
            0,
            flags_from_string(flags),
            65535,
            [],
        )
        hlen = 20 if self.family == 4 else 40
        inner = build_packet(quoted)[: hlen + quote]
        if self.family == 4:
            src, dst = wire4.aton(self.peer_addr), wire4.aton(self.stack_addr)
            ip = floods.icmp_error(src, dst, icmp_type, code, inner, info=info)
        else:
            src, dst = wire6.aton(self.peer_addr), wire6.aton(self.stack_addr)
            ip = floods.icmp6_error(src, dst, icmp_type, code, inner, info=info)
        return floods.eth(self._stack_mac, mac_aton(PEER_MAC), self._proto, ip)

    async def send_icmp_error(
        self,
        icmp_type: int,
        code: int,
        *,
        seq: int,
        info: int = 0,
        quote: int = 20,
        flags: str = "S.",
        dport: int | None = None,
    ) -> None:
        """Send :meth:`build_icmp_error`'s frame; return once the stack has processed it."""
        frame = self.build_icmp_error(
            icmp_type, code, seq=seq, info=info, quote=quote, flags=flags, dport=dport
        )
        self.port.send_nowait(frame)
        await trio.sleep(SETTLE)

    # ------------------------------------------------------------------ receiving
    async def next_segment(self, within: float = 5.0) -> Segment:
        """The next TCP segment the stack sends (frames of anything else are set aside).

        Raises:
            AssertionError: none within *within* seconds of virtual time.
        """
        with trio.move_on_after(within):
            while True:
                frame = await self.port.receive()
                seg = self._segment(frame)
                if seg is not None:
                    self.received.append(seg)
                    return seg
                self.other_frames.append(frame)
        raise AssertionError(
            f"the stack sent no TCP segment within {within} s"
            + (f" (last one: {self.received[-1]})" if self.received else "")
        )

    def _segment(self, frame: bytes) -> Segment | None:
        etype = struct.unpack_from("!H", frame, 12)[0] if len(frame) >= 14 else 0
        if etype not in (ETH_P_IP, ETH_P_IPV6):
            return None
        pkt = parse_packet(frame[14:], trio.current_time())
        if pkt is None:
            return None
        if pkt.flags & TCP_SYN:
            self.stack_iss = pkt.seq
            self.stack_port = pkt.sport
        base = self.stack_iss or 0  # absolute numbers until the stack's ISS is known
        seq = (pkt.seq - base) % MOD
        ack = (pkt.ack - self.peer_iss) % MOD if pkt.flags & TCP_ACK else 0
        end = seq + len(pkt.payload) + bool(pkt.flags & TCP_SYN) + bool(pkt.flags & TCP_FIN)
        if seq <= self.rcv_nxt < end:
            self.rcv_nxt = end
        return Segment(
            flags_to_string(pkt.flags),
            seq,
            ack,
            pkt.window,
            pkt.options,
            pkt.payload,
            pkt,
            frame,
            pkt.time,
        )

    async def expect_segment(
        self,
        flags: str | None = None,
        *,
        seq: int | None = None,
        ack: int | None = None,
        window: int | None = None,
        options: OptionsMatcher | None = None,
        payload: bytes | None = None,
        length: int | None = None,
        within: float = 5.0,
    ) -> Segment:
        """The next TCP segment the stack sends, checked field by field.

        Only the fields given are checked: *flags* exactly (packetdrill's
        letters, in any order), *seq* and *ack* relative, *window* as on the
        wire, *options* (see :data:`OptionsMatcher`), *payload* or its
        *length*.

        Raises:
            AssertionError: no segment within *within* seconds, or one that
                differs; the message gives the segment and each difference.
        """
        seg = await self.next_segment(within)
        diffs: list[tuple[str, str, str]] = []
        if flags is not None and flags_from_string(flags) != seg.packet.flags:
            diffs.append(("flags", flags, seg.flags))
        for name, want, got in (
            ("seq", seq, seg.seq),
            ("ack", ack, seg.ack),
            ("win", window, seg.window),
            ("length", length, len(seg.payload)),
        ):
            if want is not None and want != got:
                diffs.append((name, str(want), str(got)))
        if payload is not None and payload != seg.payload:
            diffs.append(("payload", repr(payload[:32]), repr(seg.payload[:32])))
        if options is not None and not _options_match(options, seg.options):
            diffs.append(
                ("options", _describe_options(options), f"<{tcp_options_to_string(seg.options)}>")
            )
        if diffs:
            width = max(len(d[0]) for d in diffs)
            lines = [f"  {n:<{width}}  expected {w}, got {g}" for n, w, g in diffs]
            raise AssertionError(
                f"segment {len(self.received)} from the stack differs: {seg}\n" + "\n".join(lines)
            )
        return seg

    async def expect_no_segment(self, within: float = 1.0) -> None:
        """The stack sends no TCP segment for *within* seconds (virtual time)."""
        with trio.move_on_after(within):
            seg = await self.next_segment(within=float("inf"))
            raise AssertionError(f"the stack sent a segment it should not have: {seg}")

    # ------------------------------------------------------------------ set-up
    async def create_connected(
        self,
        *,
        window: int = 65535,
        options: Sequence[TcpOption] | Callable[[Segment], Sequence[TcpOption]] = MSS_ONLY,
        configure: Callable[[Socket], None] | None = None,
    ) -> Socket:
        """The stack connects to the peer (gVisor's ``CreateConnected``).

        The stack's SYN is checked and its ISS learnt; the peer answers with a
        SYN-ACK carrying *window* and *options* (an MSS of 1460 alone by
        default: no timestamps, SACK or window scaling unless given; a
        function of the stack's SYN, such as :func:`linux_synack_options`,
        to echo its timestamp); the stack's ACK is checked. *configure* sees
        the socket before connect.
        """
        sock = self.host.socket(self.af, SOCK_STREAM)
        if configure is not None:
            configure(sock)
        self.sock = sock
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sock.connect, (self.peer_addr, self.peer_port))
            syn = await self.expect_segment("S", seq=0)
            opts = options(syn) if callable(options) else options
            await self.send_segment("S.", seq=0, ack=1, window=window, options=opts)
            await self.expect_segment(".", seq=1, ack=1)
        return sock

    async def listen(
        self, backlog: int = 8, configure: Callable[[Socket], None] | None = None
    ) -> Socket:
        """A listener on the stack's :data:`STACK_PORT` (kept as :attr:`listener`)."""
        srv = self.host.socket(self.af, SOCK_STREAM)
        if configure is not None:
            configure(srv)
        await srv.bind(("::" if self.family == 6 else "0.0.0.0", self.stack_port))
        srv.listen(backlog)
        self.listener = srv
        return srv

    async def create_accepted(
        self,
        *,
        window: int = 65535,
        options: Sequence[TcpOption] = MSS_ONLY,
        configure: Callable[[Socket], None] | None = None,
    ) -> Socket:
        """The peer connects to a listener on the stack, which accepts.

        The peer's SYN carries *window* and *options*; the stack's SYN-ACK is
        checked (its ISS learnt), the peer's ACK completes the handshake and
        the accepted socket becomes :attr:`sock`. *configure* sees the
        listener before listen.
        """
        srv = self.listener or await self.listen(configure=configure)
        await self.send_segment("S", seq=0, window=window, options=options)
        await self.expect_segment("S.", seq=0, ack=1)
        await self.send_segment(".", seq=1, ack=1, window=window)
        self.sock, _ = await srv.accept()
        return self.sock
