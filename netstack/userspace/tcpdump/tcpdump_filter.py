"""tcpdump's filter expressions (the pcap-filter(7) language), the common subset.

Theory of operation: :func:`compile_filter` parses an expression such as
``icmp or (udp and port 9000)`` or ``host 10.0.0.1 and not arp`` into a
predicate over Ethernet frames. The parser follows libpcap's grammar for the
primitives it supports — ``[src|dst] host|net|port|portrange``, ``ether
[src|dst] host``, the protocols ``ether ip ip6 arp rarp icmp icmp6 tcp udp
sctp igmp gre``, ``[ip|ip6] proto N|NAME``, ``vlan [ID]``, ``less N``,
``greater N``, combined with ``and``/``&&``, ``or``/``||``, ``not``/``!`` and
parentheses — including libpcap's implicit qualifiers (``host 10.0.0.1 or
10.0.0.2`` repeats ``host``). Matching looks at the outermost headers, as a
BPF program does (a tunnelled packet matches ``proto gre``, not ``icmp``),
past any 802.1Q tags.

Errors carry libpcap's wording (``can't parse filter expression: syntax
error``, ``illegal port number 99999 > 65535``, ``invalid IPv4 address
'10.0.0.300'``, ``mask length must be <= 32``, ``unknown host 'x'``), without
the ``tcpdump: `` prefix the tool adds.

libpcap: grammar.y, gencode.c, scanner.l.
"""

from __future__ import annotations

import ipaddress
import re
import struct
from collections.abc import Callable
from typing import Final

import attrs

from netstack.errors import ConfigError

__all__ = ["FilterError", "Packet", "compile_filter", "dissect"]

Predicate = Callable[["Packet"], bool]

_PROTO_NAMES: Final = {
    "icmp": 1,
    "igmp": 2,
    "ipip": 4,
    "tcp": 6,
    "udp": 17,
    "ipv6": 41,
    "gre": 47,
    "esp": 50,
    "ah": 51,
    "icmp6": 58,
    "sctp": 132,
}
_KEYWORDS: Final = frozenset(
    {"and", "or", "not", "host", "net", "port", "portrange", "src", "dst", "ether", "proto"}
    | {"ip", "ip6", "arp", "rarp", "icmp", "icmp6", "tcp", "udp", "sctp", "igmp", "vlan", "less"}
    | {"greater", "gre", "mask", "len", "broadcast", "multicast"}
)


class FilterError(ConfigError):
    """A filter expression libpcap would refuse; ``str()`` is its message."""


@attrs.define(slots=True)
class Packet:
    """The outer headers of one frame, as far as they were captured."""

    length: int
    ether_src: bytes = b""
    ether_dst: bytes = b""
    ethertype: int = -1
    vlans: tuple[int, ...] = ()
    ip_version: int = 0
    ip_src: bytes = b""
    ip_dst: bytes = b""
    proto: int = -1
    first_fragment: bool = True
    sport: int = -1
    dport: int = -1
    arp_spa: bytes = b""
    arp_tpa: bytes = b""
    frag_proto: int = -1  # IPv6: the protocol after a fragment header
    inner: Packet | None = None  # what follows an 802.1Q tag (for ``vlan …`` filters)


def dissect(frame: bytes, wirelen: int | None = None) -> Packet:
    """Read the outer headers of an Ethernet *frame*; short frames give a partial result.

    As in a BPF program, the headers are read at the offsets an untagged frame
    has; the headers after an 802.1Q tag are in :attr:`Packet.inner`, which only
    primitives after ``vlan`` look at.
    """
    p = Packet(wirelen if wirelen is not None else len(frame))
    if len(frame) < 14:
        return p
    p.ether_dst, p.ether_src = frame[0:6], frame[6:12]
    (etype,) = struct.unpack_from("!H", frame, 12)
    _dissect_l3(p, frame, 14, etype)
    if etype in (0x8100, 0x88A8) and len(frame) >= 18:
        tci, inner_type = struct.unpack_from("!HH", frame, 14)
        p.vlans = (tci & 0xFFF,)
        inner = Packet(p.length, p.ether_src, p.ether_dst)
        _dissect_l3(inner, frame, 18, inner_type)
        p.inner = inner
    return p


def _dissect_l3(p: Packet, frame: bytes, off: int, etype: int) -> None:
    # Each field is read only if it was captured, as a BPF load at a fixed offset
    # fails (and the filter does not match) when the frame is shorter.
    p.ethertype = etype
    n = len(frame)
    l4 = -1
    if etype == 0x0800:
        p.ip_version = 4
        if n >= off + 10:
            p.proto = frame[off + 9]
        if n >= off + 8:
            (fragoff,) = struct.unpack_from("!H", frame, off + 6)
            p.first_fragment = fragoff & 0x1FFF == 0
        if n >= off + 16:
            p.ip_src = frame[off + 12 : off + 16]
        if n >= off + 20:
            p.ip_dst = frame[off + 16 : off + 20]
        if n > off:
            l4 = off + (frame[off] & 0xF) * 4
    elif etype == 0x86DD:
        p.ip_version = 6
        if n >= off + 7:
            p.proto = frame[off + 6]
        if n >= off + 24:
            p.ip_src = frame[off + 8 : off + 24]
        if n >= off + 40:
            p.ip_dst = frame[off + 24 : off + 40]
        l4 = off + 40
        if p.proto == 44 and n >= l4 + 1:
            p.frag_proto = frame[l4]
    elif etype in (0x0806, 0x8035):
        if n >= off + 18:
            p.arp_spa = frame[off + 14 : off + 18]
        if n >= off + 28:
            p.arp_tpa = frame[off + 24 : off + 28]
        return
    if p.proto in (6, 17, 132) and p.first_fragment and l4 >= 0 and n >= l4 + 4:
        p.sport, p.dport = struct.unpack_from("!HH", frame, l4)


# -- the parser ------------------------------------------------------------------------------------
_TOKEN: Final = re.compile(r"\s*(&&|\|\||!=|<=|>=|==|[()!<>=]|[^\s()!<>=&|]+)")


def _tokenize(expr: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    expr = expr.strip()
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if m is None:
            raise FilterError("can't parse filter expression: syntax error")
        tokens.append(m.group(1))
        pos = m.end()
        while pos < len(expr) and expr[pos].isspace():
            pos += 1
    return tokens


@attrs.define
class _Qual:
    """The qualifiers of the last primitive (libpcap reuses them for a bare ID)."""

    proto: str = ""  # "ip", "ip6", "arp", "ether", "tcp", "udp", ""
    dir: str = ""  # "src", "dst", "" (either)
    kind: str = "host"  # "host", "net", "port", "portrange"


class _Parser:
    def __init__(self, tokens: list[str], resolve: Callable[[str], str | None]) -> None:
        self.t = tokens
        self.i = 0
        self.resolve = resolve
        self.last = _Qual()
        self.vlan = False  # after "vlan", primitives look past the tag (libpcap)
        self.names: list[tuple[str, list[bytes]]] = []  # host names, resolved at the end

    def peek(self) -> str | None:
        return self.t[self.i] if self.i < len(self.t) else None

    def take(self) -> str:
        tok = self.peek()
        if tok is None:
            raise FilterError("can't parse filter expression: syntax error")
        self.i += 1
        return tok

    def parse(self) -> Predicate:
        pred = self.expr()
        if self.peek() is not None:
            raise FilterError("can't parse filter expression: syntax error")
        for name, cell in self.names:  # like libpcap: names are looked up after parsing
            cell.append(_host(name, self.resolve))
        return pred

    def expr(self) -> Predicate:
        left = self.term()
        while self.peek() in ("or", "||"):
            self.take()
            right = self.term()
            left = _or(left, right)
        return left

    def term(self) -> Predicate:
        left = self.factor()
        while True:
            tok = self.peek()
            if tok in ("and", "&&"):
                self.take()
            elif tok is None or tok in ("or", "||", ")"):
                return left
            else:
                raise FilterError("can't parse filter expression: syntax error")
            right = self.factor()
            left = _and(left, right)

    def factor(self) -> Predicate:
        tok = self.peek()
        if tok in ("not", "!"):
            self.take()
            inner = self.factor()
            return lambda p: not inner(p)
        if tok == "(":
            self.take()
            inner = self.expr()
            if self.take() != ")":
                raise FilterError("can't parse filter expression: syntax error")
            return inner
        return self.primitive()

    def primitive(self) -> Predicate:
        tok = self.take()
        if tok in ("less", "greater"):
            n = self.number(self.take())
            return (lambda p: p.length <= n) if tok == "less" else (lambda p: p.length >= n)
        if tok == "vlan":
            already = self.vlan
            self.vlan = True
            self._vlan_primitive = not already
            nxt = self.peek()
            if nxt is not None and nxt.isdigit():
                vid = self.number(self.take())
                return lambda p: vid in p.vlans
            return lambda p: bool(p.vlans)
        proto = ""
        if tok in ("ip", "ip6", "arp", "rarp", "ether", "tcp", "udp", "sctp"):
            proto = tok
            nxt = self.peek()
            if nxt not in ("src", "dst", "host", "net", "port", "portrange", "proto"):
                return _proto_pred(tok)
            tok = self.take()
        if tok in ("icmp", "icmp6", "igmp", "gre"):
            return _proto_pred(tok)
        if tok == "proto":
            return self.proto_number(proto)
        direction = ""
        if tok in ("src", "dst"):
            direction = tok
            if self.peek() in ("or", "and"):  # "src or dst host X"
                self.take()
                self.take()
                direction = ""
            tok = self.take()
        if tok in ("host", "net", "port", "portrange"):
            kind = tok
            tok = self.take()
        elif direction:
            kind = "host"
        elif tok in _KEYWORDS or tok in ("(", ")", "!", "&&", "||"):
            raise FilterError("can't parse filter expression: syntax error")
        else:  # a bare ID: the qualifiers of the previous primitive apply
            proto, direction, kind = self.last.proto, self.last.dir, self.last.kind
        self.last = _Qual(proto, direction, kind)
        return self.value(proto, direction, kind, tok)

    def proto_number(self, family: str) -> Predicate:
        tok = self.take()
        tok = tok.lstrip("\\")
        num = _PROTO_NAMES.get(tok)
        if num is None:
            if not tok.isdigit():
                raise FilterError(f"unknown ip proto '{tok}'")
            num = self.number(tok)
        version = {"ip": 4, "ip6": 6}.get(family, 0)
        return lambda p: _proto_is(p, num) and (version == 0 or p.ip_version == version)

    @staticmethod
    def number(tok: str) -> int:
        try:
            return int(tok, 0)
        except ValueError:
            raise FilterError("can't parse filter expression: syntax error") from None

    def value(self, proto: str, direction: str, kind: str, tok: str) -> Predicate:
        if kind in ("port", "portrange"):
            if kind == "portrange":
                lo_s, sep, hi_s = tok.partition("-")
                if not sep:
                    raise FilterError("can't parse filter expression: syntax error")
                lo, hi = self.port(lo_s), self.port(hi_s)
            else:
                lo = hi = self.port(tok)
            protos = {"tcp": (6,), "udp": (17,), "sctp": (132,)}.get(proto, (6, 17, 132))
            version = {"ip": 4, "ip6": 6}.get(proto, 0)

            def port_pred(p: Packet) -> bool:
                if p.proto not in protos or p.sport < 0:
                    return False
                if version and p.ip_version != version:
                    return False
                s = lo <= p.sport <= hi
                d = lo <= p.dport <= hi
                return s if direction == "src" else d if direction == "dst" else s or d

            return port_pred
        if proto == "ether":
            mac = _mac(tok)

            def ether_pred(p: Packet) -> bool:
                s, d = p.ether_src == mac, p.ether_dst == mac
                return s if direction == "src" else d if direction == "dst" else s or d

            return ether_pred
        if kind == "net":
            net = _network(tok, self.take_mask)
            return _addr_pred(proto, direction, lambda a: _in_net(a, net))
        if re.fullmatch(r"[0-9.]+", tok) or ":" in tok:
            addr = _host(tok, self.resolve)
            return _addr_pred(proto, direction, lambda a: a == addr)
        cell: list[bytes] = []
        self.names.append((tok, cell))
        return _addr_pred(proto, direction, lambda a: a == cell[0])

    def take_mask(self) -> str | None:
        if self.peek() == "mask":
            self.take()
            return self.take()
        return None

    @staticmethod
    def port(tok: str) -> int:
        try:
            n = int(tok)
        except ValueError:
            raise FilterError(f"unknown port '{tok}'") from None
        if n > 65535:
            raise FilterError(f"illegal port number {n} > 65535")
        return n


def _or(a: Predicate, b: Predicate) -> Predicate:
    return lambda p: a(p) or b(p)


def _and(a: Predicate, b: Predicate) -> Predicate:
    return lambda p: a(p) and b(p)


def _proto_pred(name: str) -> Predicate:
    if name == "ip":
        return lambda p: p.ethertype == 0x0800
    if name == "ip6":
        return lambda p: p.ethertype == 0x86DD
    if name == "arp":
        return lambda p: p.ethertype == 0x0806
    if name == "rarp":
        return lambda p: p.ethertype == 0x8035
    if name == "ether":
        return lambda p: True
    if name == "icmp":
        return lambda p: p.ip_version == 4 and p.proto == 1
    if name == "icmp6":
        return lambda p: p.ip_version == 6 and _proto_is(p, 58)
    if name == "igmp":
        return lambda p: p.ip_version == 4 and p.proto == 2
    num = _PROTO_NAMES[name]
    return lambda p: _proto_is(p, num)


def _proto_is(p: Packet, num: int) -> bool:
    """``ip proto N``/``ip6 proto N``; for IPv6 libpcap also looks past a fragment header."""
    return p.proto == num or (p.ip_version == 6 and p.proto == 44 and p.frag_proto == num)


def _addr_pred(proto: str, direction: str, match: Callable[[bytes], bool]) -> Predicate:
    want_ip = proto in ("", "ip", "ip6", "tcp", "udp", "sctp")
    want_arp = proto in ("", "arp", "rarp")

    def pred(p: Packet) -> bool:
        if want_ip and p.ip_version:
            if not p.ip_src and not p.ip_dst:
                return False
            if (proto == "ip" and p.ip_version != 4) or (proto == "ip6" and p.ip_version != 6):
                return False
            if proto in ("tcp", "udp", "sctp") and p.proto != _PROTO_NAMES[proto]:
                return False
            s = bool(p.ip_src) and match(p.ip_src)
            d = bool(p.ip_dst) and match(p.ip_dst)
        elif want_arp and p.ethertype in (0x0806, 0x8035):
            s, d = bool(p.arp_spa) and match(p.arp_spa), bool(p.arp_tpa) and match(p.arp_tpa)
        else:
            return False
        return s if direction == "src" else d if direction == "dst" else s or d

    return pred


def _host(tok: str, resolve: Callable[[str], str | None]) -> bytes:
    if ":" in tok:
        try:
            return ipaddress.IPv6Address(tok).packed
        except ValueError:
            raise FilterError(f"invalid IPv6 address '{tok}'") from None
    if re.fullmatch(r"[0-9.]+", tok):
        try:
            return ipaddress.IPv4Address(tok).packed
        except ValueError:
            raise FilterError(f"invalid IPv4 address '{tok}'") from None
    resolved = resolve(tok)
    if resolved is None:
        raise FilterError(f"unknown host '{tok}'")
    return _host(resolved, resolve)


def _network(tok: str, take_mask: Callable[[], str | None]) -> tuple[int, int, int]:
    """(version, network int, prefix length)."""
    addr, sep, plen_s = tok.partition("/")
    version = 6 if ":" in addr else 4
    bits = 128 if version == 6 else 32
    if sep:
        try:
            plen = int(plen_s)
        except ValueError:
            raise FilterError("can't parse filter expression: syntax error") from None
        if plen > bits:
            raise FilterError(f"mask length must be <= {bits}")
    else:
        mask = take_mask()
        if mask is not None:
            plen = bin(int(ipaddress.IPv4Address(mask))).count("1")
        elif version == 4:
            octets = addr.split(".")
            plen = 8 * len(octets)
            addr = ".".join([*octets, *["0"] * (4 - len(octets))])
        else:
            plen = 128
    try:
        net = ipaddress.ip_network(f"{addr}/{plen}", strict=True)
    except ValueError:
        raise FilterError('non-network bits set in "' + tok + '"') from None
    return version, int(net.network_address), plen


def _in_net(addr: bytes, net: tuple[int, int, int]) -> bool:
    version, base, plen = net
    if (len(addr) == 4) != (version == 4) or not addr:
        return False
    bits = len(addr) * 8
    return int.from_bytes(addr, "big") >> (bits - plen) == base >> (bits - plen) if plen else True


def _mac(tok: str) -> bytes:
    parts = re.split(r"[:.-]", tok)
    try:
        if len(parts) == 6:
            return bytes(int(x, 16) for x in parts)
    except ValueError:
        pass
    raise FilterError(f"bogus ethernet address '{tok}'")


def compile_filter(
    expr: str | list[str], resolve: Callable[[str], str | None] | None = None
) -> Predicate | None:
    """Compile a filter expression; None for an empty one (everything matches).

    Args:
        expr: the expression, as one string or as argv words (tcpdump joins them).
        resolve: host name → address text (a lab's hosts), for ``host NAME``.

    Raises:
        FilterError: with libpcap's message.
    """
    text = " ".join(expr) if isinstance(expr, list) else expr
    tokens = _tokenize(text)
    if not tokens:
        return None
    return _Parser(tokens, resolve or (lambda _name: None)).parse()
