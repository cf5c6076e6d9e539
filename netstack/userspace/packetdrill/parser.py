"""The packetdrill script language: lexer and parser.

Theory of operation: the lexer follows packetdrill's ``lexer.l`` rule for rule
and, as flex does, takes the longest match at each position (a tie goes to the
rule listed first): so ``ack`` is a keyword but ``ackx`` a word,
``192.168.0.1`` an IPv4 address rather than the float ``192.168``, and
``1:1001`` two integers around a colon rather than an IPv6 address. ``--define``
symbols replace words as they are scanned. The parser is a recursive-descent
version of ``parser.y``'s grammar with the same semantic checks and the same
messages (``FILE:LINE: parse error at 'TOKEN': …``, ``FILE:LINE: semantic
error: …``). Constructs of the grammar this runner does not run (encapsulation
prefixes, UDP and ICMP packets, fuzzing, AccECN flags, epoll/pipe-style
arguments) stop the parse with ``FILE:LINE: unsupported: …``.
"""

from __future__ import annotations

import re
from typing import Final, NoReturn

import attrs

from netstack.userspace.packetdrill.errors import ScriptError, Unsupported
from netstack.userspace.packetdrill.script import (
    NO_TIME_RANGE,
    CodeSpec,
    CommandSpec,
    Event,
    Expr,
    IpInfo,
    Script,
    SyscallSpec,
    TcpOption,
    TcpPacketSpec,
    TimeType,
)

__all__ = ["Token", "parse_script", "tokenize"]

# TCP option kinds and lengths (include/net/tcp.h)
TCPOPT_EOL: Final = 0
TCPOPT_NOP: Final = 1
TCPOPT_MAXSEG: Final = 2
TCPOPT_WINDOW: Final = 3
TCPOPT_SACK_PERM: Final = 4
TCPOPT_SACK: Final = 5
TCPOPT_TIMESTAMP: Final = 8
TCPOPT_MD5SIG: Final = 19
TCPOPT_FASTOPEN: Final = 34
TCPOPT_EXP: Final = 254
TCPOPT_FASTOPEN_MAGIC: Final = 0xF989
MAX_TCP_HEADER_BYTES: Final = 60

VALID_TCP_FLAGS: Final = ".FSRPEWAU01234567"

_KEYWORDS: Final = {
    "sa_family": "SA_FAMILY", "sin_port": "SIN_PORT", "sin_addr": "SIN_ADDR",
    "msg_name": "MSG_NAME", "msg_iov": "MSG_IOV", "msg_flags": "MSG_FLAGS",
    "msg_control": "MSG_CONTROL", "cmsg_data": "CMSG_DATA", "cmsg_level": "CMSG_LEVEL",
    "cmsg_type": "CMSG_TYPE", "ee_errno": "EE_ERRNO", "ee_origin": "EE_ORIGIN",
    "ee_type": "EE_TYPE", "ee_code": "EE_CODE", "ee_info": "EE_INFO", "ee_data": "EE_DATA",
    "scm_sec": "SCM_SEC", "scm_nsec": "SCM_NSEC", "fd": "FD", "u32": "U32", "u64": "U64",
    "ptr": "PTR", "events": "EVENTS", "revents": "REVENTS", "onoff": "ONOFF",
    "linger": "LINGER", "htons": "HTONS", "ipv4": "IPV4", "ipv6": "IPV6", "icmp": "ICMP",
    "udp": "UDP", "GREv0": "GRE", "gre": "GRE", "raw": "RAW", "sum": "SUM", "off": "OFF",
    "key": "KEY", "seq": "SEQ", "none": "NONE", "checksum": "CHECKSUM",
    "sequence#": "SEQUENCE", "present": "PRESENT", "mpls": "MPLS", "label": "LABEL",
    "tc": "TC", "ttl": "TTL", "inet_addr": "INET_ADDR", "inet6_addr": "INET6_ADDR",
    "ack": "ACK", "eol": "EOL", "ecr": "ECR", "mss": "MSS", "mtu": "MTU", "nop": "NOP",
    "sack": "SACK", "sackOK": "SACKOK", "md5": "MD5", "TS": "TIMESTAMP", "FO": "FAST_OPEN",
    "FOEXP": "FAST_OPEN_EXP", "tos": "TOS", "flowlabel": "FLOWLABEL", "flags": "FLAGS",
    "Flags": "FLAGS", "val": "VAL", "win": "WIN", "urg": "URG", "wscale": "WSCALE",
    "ect01": "ECT01", "ect0": "ECT0", "ect1": "ECT1", "noecn": "NO_ECN", "ce": "CE",
    "id": "ID", "mut": "MUTATE", "trun": "TRUNCATE", "ins": "INSERT", "ip": "IP",
    "tcp": "TCP", "ihl": "IHL", "source_port": "SOURCE_PORT",
}  # fmt: skip

_V4 = r"[0-9]+[.][0-9]+[.][0-9]+[.][0-9]+"
_SEG = r"[0-9a-fA-F]{1,4}"
_V6_PARTS = [
    r"[:][:]",
    rf"(?:{_SEG}[:]){{7}}{_SEG}",
    rf"(?:{_SEG}[:]){{1,7}}[:]",
    rf"(?:{_SEG}[:]){{1,6}}[:]{_SEG}",
    rf"(?:{_SEG}[:]){{1,5}}(?:[:]{_SEG}){{1,2}}",
    rf"(?:{_SEG}[:]){{1,4}}(?:[:]{_SEG}){{1,3}}",
    rf"(?:{_SEG}[:]){{1,3}}(?:[:]{_SEG}){{1,4}}",
    rf"(?:{_SEG}[:]){{1,2}}(?:[:]{_SEG}){{1,5}}",
    rf"{_SEG}[:](?:(?:[:]{_SEG}){{1,6}})",
    rf"[:](?:[:]{_SEG}){{1,7}}",
    rf"[:][:]ffff[:]{_V4}",
    rf"[:][:]ffff[:](?:0){{1,4}}[:]{_V4}",
    rf"(?:{_SEG}[:]){{1,4}}[:]{_V4}",
]

# (token type, regex) in lexer.l's order: on equal length the first one wins.
_RULES: Final[list[tuple[str, re.Pattern[str] | None]]] = [
    ("KEYWORD", None),  # the literal keywords of lexer.l (matched in _longest)
    ("ELLIPSIS", re.compile(r"\.\.\.")),
    ("OPTION", re.compile(r"--[a-zA-Z0-9_]+")),
    ("FLOAT", re.compile(r"-?[0-9]*[.][0-9]+")),
    ("INTEGER", re.compile(r"-?[0-9]+")),
    ("HEX_INTEGER", re.compile(r"0x[0-9a-fA-F]+")),
    ("WORD", re.compile(r"[a-zA-Z0-9_]+")),
    ("STRING", re.compile(r'"(?:\\.|[^"])*"', re.S)),
    ("BACK_QUOTED", re.compile(r"`(?:\\.|[^`])*`", re.S)),
    ("CHAR", re.compile(r"[^ \t\n]")),
    ("SPACE", re.compile(r"[ \t\n]+")),
    ("COMMENT", re.compile(r"//[^\n]*\n")),
    ("COMMENT", re.compile(r"/\*(?:[^*]|\*[^/])*\*/", re.S)),
    ("CODE", re.compile(r"%\{(?:[^}]|\}[^%])*\}%", re.S)),
    ("IPV4_ADDR", re.compile(_V4)),
    ("IPV6_ADDR", None),  # the alternatives of _V6, each tried (flex takes the longest)
]
_V6: Final = [re.compile(p) for p in _V6_PARTS]


@attrs.frozen
class Token:
    """A lexical token: ``type`` (``WORD``, ``INTEGER``, ``'<'``, ``ACK``…), its value and line."""

    type: str
    value: object
    text: str
    line: int


def _longest(text: str, pos: int) -> tuple[str, int]:
    best, best_len = "", 0
    for kind, rx in _RULES:
        if kind == "KEYWORD":
            # a keyword matches only as a whole: let the word rule compete on length
            n = max((len(k) for k in _KEYWORDS if text.startswith(k, pos)), default=0)
        elif kind == "IPV6_ADDR":
            n = max((m.end() - pos for r in _V6 if (m := r.match(text, pos))), default=0)
        else:
            assert rx is not None
            mm = rx.match(text, pos)
            n = mm.end() - pos if mm else 0
        if n > best_len:
            best, best_len = kind, n
    return best, best_len


def tokenize(
    text: str, path: str = "<script>", defines: dict[str, str] | None = None
) -> list[Token]:
    """Scan *text* as packetdrill's flex lexer does.

    Raises:
        ScriptError: an unterminated string, command or comment.
    """
    defines = defines or {}
    out: list[Token] = []
    pos, line = 0, 1
    n = len(text)
    while pos < n:
        kind, length = _longest(text, pos)
        lexeme = text[pos : pos + length]
        start_line = line
        line += lexeme.count("\n")
        pos += length
        if kind in ("SPACE", "COMMENT"):
            continue
        if kind == "CHAR" and lexeme in '"`':
            raise ScriptError(
                f"{path}:{start_line}: parse error at '{lexeme}': unterminated "
                + ("string" if lexeme == '"' else "command"),
                path=path,
                line=start_line,
            )
        if kind == "CHAR" and lexeme == "%" and text.startswith("{", pos):
            raise ScriptError(
                f"{path}:{start_line}: parse error at '%{{': code snippet without '}}%'",
                path=path,
                line=start_line,
            )
        value: object = lexeme
        if kind == "KEYWORD":
            out.append(Token(_KEYWORDS[lexeme], lexeme, lexeme, start_line))
            continue
        if kind == "CHAR":
            out.append(Token(lexeme, lexeme, lexeme, start_line))
            continue
        if kind == "OPTION":
            value = lexeme[2:]
        elif kind == "FLOAT":
            value = float(lexeme)
        elif kind == "INTEGER":
            value = int(lexeme)
        elif kind == "HEX_INTEGER":
            value = int(lexeme, 16)
        elif kind in ("STRING", "BACK_QUOTED"):
            value = lexeme[1:-1]
        elif kind == "CODE":
            value = lexeme[2:-2].strip(" \t")
        elif kind == "WORD" and lexeme in defines:
            v = defines[lexeme]
            if v[:1] == '"' and v[-1:] == '"':
                kind, value = "STRING", v[1:-1]
            elif v[:1] == "`" and v[-1:] == "`":
                kind, value = "BACK_QUOTED", v[1:-1]
            else:
                value = v
        out.append(Token(kind, value, lexeme, start_line))
    out.append(Token("EOF", None, "", line))
    return out


def _num(tok: Token) -> int:
    assert isinstance(tok.value, int)
    return tok.value


class _Parser:
    def __init__(self, tokens: list[Token], path: str) -> None:
        self.toks = tokens
        self.i = 0
        self.path = path

    # -- helpers ---------------------------------------------------------------------
    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def peek(self, k: int = 1) -> Token:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def at(self, *types: str) -> bool:
        return self.tok.type in types

    def take(self) -> Token:
        t = self.tok
        self.i += 1
        return t

    def error(self, message: str = "syntax error", tok: Token | None = None) -> NoReturn:
        t = tok or self.tok
        text = t.text if t.type != "EOF" else "end of file"
        raise ScriptError(
            f"{self.path}:{t.line}: parse error at '{text}': {message}", path=self.path, line=t.line
        )

    def semantic(self, line: int, message: str) -> NoReturn:
        raise ScriptError(
            f"{self.path}:{line}: semantic error: {message}", path=self.path, line=line
        )

    def unsupported(self, line: int, message: str) -> NoReturn:
        raise Unsupported(f"{self.path}:{line}: unsupported: {message}", path=self.path, line=line)

    def expect(self, type_: str, what: str = "") -> Token:
        if not self.at(type_):
            self.error(f"syntax error, expected {what or repr(type_)}")
        return self.take()

    # -- script ----------------------------------------------------------------------
    def script(self) -> Script:
        s = Script(self.path)
        while self.at("OPTION"):
            t = self.take()
            value: str | None = None
            if self.at("="):
                self.take()
                v = self.take()
                if v.type in ("INTEGER", "HEX_INTEGER"):
                    value = v.text
                elif v.type in ("WORD", "STRING", "IPV4_ADDR", "IPV6_ADDR", "IPV4", "IPV6"):
                    value = str(v.value)
                else:
                    self.error("syntax error, expected an option value", v)
                if v.type == "WORD" and self.at("="):
                    self.take()
                    r = self.take()
                    if r.type == "STRING":
                        value = f'{value}="{r.value}"'
                    elif r.type == "BACK_QUOTED":
                        value = f"{value}=`{r.value}`"
                    else:
                        value = f"{value}={r.text}"
            s.options.append((str(t.value), value, t.line))
        if self.at("BACK_QUOTED"):
            t = self.take()
            s.init_command = CommandSpec(str(t.value))
            s.init_line = t.line
        while not self.at("EOF"):
            if self.at("BACK_QUOTED") and self.peek().type == "EOF":
                t = self.take()
                s.cleanup_command = CommandSpec(str(t.value))
                s.cleanup_line = t.line
                break
            s.events.append(self.event())
        if not s.events:
            self.error("syntax error, a script needs at least one event")
        return s

    def time(self) -> int:
        t = self.tok
        if t.type == "FLOAT":
            self.take()
            v = float(t.value)  # type: ignore[arg-type]
            if v < 0:
                self.semantic(t.line, "negative time")
            return int(v * 1e6)
        if t.type == "INTEGER":
            self.take()
            iv = _num(t)
            if iv < 0:
                self.semantic(t.line, "negative time")
            return iv * 1_000_000
        self.error("syntax error, expected a time")

    def event(self) -> Event:
        t = self.tok
        line = t.line
        time_type: TimeType
        end = NO_TIME_RANGE
        if t.type == "+":
            self.take()
            line = self.tok.line
            start = self.time()
            time_type = "relative"
            if self.at("~"):
                self.take()
                self.expect("+", "'+' (a relative time range is +a~+b)")
                end = self.time()
                time_type = "relative_range"
        elif t.type == "*":
            self.take()
            start, time_type = 0, "any"
        elif t.type in ("FLOAT", "INTEGER"):
            start = self.time()
            time_type = "absolute"
            if self.at("~"):
                self.take()
                end = self.time()
                time_type = "absolute_range"
        else:
            self.error("syntax error, expected an event time (0.1, +0.1, *, a~b)")
        action = self.action()
        ev = Event(line, time_type, start, action, time_usecs_end=end)
        if end != NO_TIME_RANGE and end < start:
            self.semantic(line, "time range is backwards")
        outbound = isinstance(action, TcpPacketSpec) and action.direction == "outbound"
        if time_type == "any" and not outbound:
            self.semantic(line, "event time <star> can only be used with outbound packets")
        if time_type in ("absolute_range", "relative_range") and not outbound:
            self.semantic(line, "event time range can only be used with outbound packets")
        return ev

    def action(self) -> TcpPacketSpec | SyscallSpec | CommandSpec | CodeSpec:
        t = self.tok
        if t.type in ("<", ">"):
            return self.packet()
        if t.type == "BACK_QUOTED":
            self.take()
            return CommandSpec(str(t.value))
        if t.type == "CODE":
            self.take()
            return CodeSpec(str(t.value))
        if t.type in ("ELLIPSIS", "WORD"):
            return self.syscall()
        self.error("syntax error, expected a packet, a system call, a `command` or %{ code }%")

    # -- packets ---------------------------------------------------------------------
    def ip_info(self) -> IpInfo:
        info = IpInfo()
        close = {"(": ")", "[": "]"}[self.take().type]
        t = self.tok
        ecn = {"NO_ECN": 0, "ECT0": 2, "ECT1": 1, "CE": 3}
        if t.type in ecn:
            self.take()
            info.tos_check, info.tos = "ecn", ecn[t.type]
        elif t.type == "ECT01":
            self.take()
            info.tos_check = "ect01"
        elif t.type == "TOS":
            self.take()
            v = self.expect("HEX_INTEGER", "a hex TOS value")
            if not 0 <= int(v.value) <= 255:  # type: ignore[call-overload]
                self.semantic(v.line, "tos out of range for 8 bits")
            info.tos_check, info.tos = "tos", _num(v)
        elif t.type == "TTL":
            self.take()
            info.ttl = int(self.expect("INTEGER", "a TTL").value)  # type: ignore[call-overload]
            self.expect(close)
            return info
        if self.at(","):
            self.take()
        if self.at("FLOWLABEL"):
            self.take()
            v = self.expect("HEX_INTEGER", "a hex flow label")
            if not 0 <= int(v.value) < 1 << 20:  # type: ignore[call-overload]
                self.semantic(v.line, "flowlabel out of range for 20 bits")
            info.flow_label = _num(v)
        self.expect(close, f"'{close}'")
        return info

    def packet(self) -> TcpPacketSpec:
        d = self.take()
        line = d.line
        direction = "inbound" if d.type == "<" else "outbound"
        if self.at("IPV4", "IPV6", "GRE", "MPLS"):
            self.unsupported(line, f"{self.tok.text} encapsulation headers in packets")
        ip = IpInfo()
        if self.at("(", "["):
            ip = self.ip_info()
        if self.at("UDP"):
            self.unsupported(line, "UDP packets (the runner checks TCP packets)")
        if self.at("ICMP"):
            self.unsupported(line, "ICMP packets (the runner checks TCP packets)")
        src_port = dst_port = 0
        if self.at("INTEGER") and self.peek().type == ">":
            a = _num(self.take())
            self.take()
            b = int(self.expect("INTEGER", "a destination port").value)  # type: ignore[call-overload]
            if not 0 <= a <= 0xFFFF:
                self.semantic(line, "src port out of range")
            if not 0 <= b <= 0xFFFF:
                self.semantic(line, "dst port out of range")
            src_port, dst_port = a, b
        # flags: WORD ['.'] | '.' | '-' | [WORD] FLOAT (AccECN)
        t = self.tok
        if t.type == "WORD":
            self.take()
            flags = t.text
            if self.at("."):
                self.take()
                flags += "."
            elif self.at("FLOAT"):
                self.unsupported(line, "AccECN ACE flags")
        elif t.type == ".":
            self.take()
            flags = "."
        elif t.type == "-":
            self.take()
            flags = ""
        elif t.type == "FLOAT":
            self.unsupported(line, "AccECN ACE flags")
        else:
            self.error("syntax error, expected TCP flags (S, ., P., F., R, -…)")
        for c in flags:
            if c not in VALID_TCP_FLAGS:
                self.semantic(line, f"Invalid TCP flag: '{c}'")
        if any(c in "01234567" for c in flags):
            self.unsupported(line, "AccECN ACE flags")
        if "A" in flags:
            self.unsupported(line, "the AccECN AE flag")
        start = self.integer("a start sequence number")
        self.expect(":", "':' (start:end(length))")
        end = self.integer("an end sequence number")
        self.expect("(", "'(' (start:end(length))")
        plen = self.integer("a payload length")
        self.expect(")", "')'")
        if not 0 <= start <= 0xFFFFFFFF:
            self.semantic(line, "TCP start sequence number out of range")
        if not 0 <= end <= 0xFFFFFFFF:
            self.semantic(line, "TCP end sequence number out of range")
        if not 0 <= plen <= 0xFFFF:
            self.semantic(line, "TCP payload size out of range")
        if end != start + plen:
            self.semantic(line, "inconsistent TCP sequence numbers and payload size")
        ack = 0
        if self.at("ACK"):
            self.take()
            ack = self.integer("an ACK number")
            if not 0 <= ack <= 0xFFFFFFFF:
                self.semantic(line, "TCP ack sequence number out of range")
        window = -1
        if self.at("WIN"):
            self.take()
            window = self.integer("a window")
            if not 0 <= window <= 0xFFFF:
                self.semantic(line, "TCP window value out of range")
        urg = 0
        if self.at("URG"):
            self.take()
            urg = self.integer("an urgent pointer")
            if not 0 <= urg <= 0xFFFF:
                self.semantic(line, "urg_ptr value out of range")
        options: list[TcpOption] | None = []
        if self.at("<"):
            self.take()
            if self.at("ELLIPSIS"):
                self.take()
                options = None
            else:
                options = [self.tcp_option()]
                while self.at(","):
                    self.take()
                    options.append(self.tcp_option())
            self.expect(">", "'>' after the TCP options")
        if self.at("{"):
            self.unsupported(line, "packet fuzzing ({mut|trun|ins …})")
        if options is None and direction == "inbound":
            self.semantic(line, "<...> for TCP options can only be used with outbound packets")
        spec = TcpPacketSpec(
            direction,  # type: ignore[arg-type]
            flags,
            start,
            plen,
            ack,
            window,
            urg,
            options,
            ip,
            src_port,
            dst_port,
        )
        if window == -1 and direction == "inbound":
            self.semantic(line, "window must be specified for inbound packets")
        olen = spec.options_len
        if olen & 3:
            self.semantic(
                line,
                "TCP options are not padded correctly to ensure TCP header is a multiple "
                f"of 4 bytes: {olen & 3} excess bytes",
            )
        if 20 + olen > MAX_TCP_HEADER_BYTES:
            self.semantic(line, "TCP header too large")
        if ip.tos_check == "ect01" and direction != "outbound":
            self.semantic(line, "[ect01] can only be used with outbound packets")
        return spec

    def integer(self, what: str) -> int:
        t = self.tok
        if t.type not in ("INTEGER", "HEX_INTEGER"):
            self.error(f"syntax error, expected {what}")
        self.take()
        assert isinstance(t.value, int)
        return t.value

    def tcp_option(self) -> TcpOption:
        t = self.take()
        line = t.line
        if t.type == "NOP":
            return TcpOption(TCPOPT_NOP, 1)
        if t.type == "EOL":
            return TcpOption(TCPOPT_EOL, 1)
        if t.type == "MSS":
            v = self.integer("an MSS value")
            if not 0 <= v <= 0xFFFF:
                self.semantic(line, "mss value out of range")
            return TcpOption(TCPOPT_MAXSEG, 4, v.to_bytes(2, "big"))
        if t.type == "WSCALE":
            v = self.integer("a window scale shift count")
            if not 0 <= v <= 255:
                self.semantic(line, "window scale shift count out of range")
            return TcpOption(TCPOPT_WINDOW, 3, bytes([v]))
        if t.type == "SACKOK":
            return TcpOption(TCPOPT_SACK_PERM, 2)
        if t.type == "SACK":
            data = b""
            while self.at("INTEGER") and self.peek().type == ":":
                left = self.integer("a SACK left edge")
                self.take()
                right = self.integer("a SACK right edge")
                if not 0 <= left <= 0xFFFFFFFF:
                    self.semantic(line, "TCP SACK left sequence number out of range")
                if not 0 <= right <= 0xFFFFFFFF:
                    self.semantic(line, "TCP SACK right sequence number out of range")
                data += left.to_bytes(4, "big") + right.to_bytes(4, "big")
            if not data:
                self.error("syntax error, expected SACK blocks (left:right)")
            return TcpOption(TCPOPT_SACK, 2 + len(data), data)
        if t.type == "TIMESTAMP":
            self.expect("VAL", "'val'")
            val = self.integer("a TS val")
            self.expect("ECR", "'ecr'")
            ecr = self.integer("a TS ecr")
            if not 0 <= val <= 0xFFFFFFFF:
                self.semantic(line, "ts val out of range")
            if not 0 <= ecr <= 0xFFFFFFFF:
                self.semantic(line, "ecr val out of range")
            return TcpOption(TCPOPT_TIMESTAMP, 10, val.to_bytes(4, "big") + ecr.to_bytes(4, "big"))
        if t.type in ("FAST_OPEN", "FAST_OPEN_EXP"):
            exp = t.type == "FAST_OPEN_EXP"
            cookie = ""
            if self.at("WORD", "INTEGER"):
                cookie = self.take().text
            if len(cookie) & 1:
                self.semantic(line, "TCP fast open cookie has an odd number of digits")
            maxb = 16  # MAX_TCP_FAST_OPEN_COOKIE_BYTES (and _EXP_)
            if len(cookie) // 2 > maxb:
                self.semantic(
                    line,
                    f"TCP fast open cookie of {len(cookie) // 2} bytes exceeds maximum "
                    f"cookie length of {maxb} bytes",
                )
            try:
                raw = bytes.fromhex(cookie)
            except ValueError:
                self.semantic(line, f"TCP fast open cookie '{cookie}' is not a valid hex string")
            if exp:
                return TcpOption(TCPOPT_EXP, 4 + len(raw), b"\xf9\x89" + raw)
            return TcpOption(TCPOPT_FASTOPEN, 2 + len(raw), raw)
        if t.type == "MD5":
            digest = self.take().text if self.at("WORD", "INTEGER") else ""
            try:
                raw = bytes.fromhex(digest)
            except ValueError:
                self.semantic(line, "TCP MD5 digest is not a valid hex string")
            if len(raw) > 16:
                self.semantic(line, "TCP MD5 digest longer than 16 bytes")
            return TcpOption(TCPOPT_MD5SIG, 2 + len(raw), raw)
        self.error("syntax error, expected a TCP option", t)

    # -- system calls ------------------------------------------------------------------
    def syscall(self) -> SyscallSpec:
        end: int | None = None
        if self.at("ELLIPSIS"):
            self.take()
            end = self.time()
        name_tok = self.expect("WORD", "a system call name")
        self.expect("(", "'(' after the system call name")
        args: list[Expr] | None = None
        if self.at(")"):
            self.take()
        else:
            args = [self.expression()]
            while self.at(","):
                self.take()
                args.append(self.expression())
            self.expect(")", "')' after the arguments")
        self.expect("=", "'= result' after the call")
        result = self.expression()
        errno_name = strerror = note = None
        if self.at("WORD"):
            errno_name = str(self.take().value)
            if not self.at("("):
                self.error("syntax error, expected '(' and the error text after the errno name")
            strerror = self.note()
        if self.at("("):
            note = self.note()
        return SyscallSpec(str(name_tok.value), args, result, errno_name, strerror, end, note)

    def note(self) -> str:
        self.take()  # '('
        words = []
        while not self.at(")"):
            if self.at("EOF"):
                self.error("syntax error, unterminated '(' note")
            words.append(self.take().text)
        self.take()
        return " ".join(words)

    def expression(self) -> Expr:
        e = self.primary()
        while self.at("|"):
            line = self.take().line
            rhs = self.primary()
            e = Expr("binary", op="|", items=[("", e), ("", rhs)], line=line)
        return e

    def primary(self) -> Expr:
        t = self.tok
        line = t.line
        if t.type == "ELLIPSIS":
            self.take()
            return Expr("ellipsis", line=line)
        if t.type in ("INTEGER", "HEX_INTEGER"):
            self.take()
            return Expr("int", int(t.value), line=line)  # type: ignore[call-overload]
        if t.type == "WORD":
            self.take()
            if self.at("="):
                self.take()
                rhs = self.expression()
                return Expr(
                    "binary", op="=", items=[("", Expr("word", t.value, line=line)), ("", rhs)]
                )
            return Expr("word", t.value, line=line)
        if t.type == "STRING":
            self.take()
            s = str(t.value)
            if self.at("ELLIPSIS"):
                self.take()
                return Expr("string", s, tag="prefix", line=line)
            while self.at("STRING"):
                s += str(self.take().value)
            return Expr("string", s, line=line)
        if t.type == "[":
            self.take()
            items: list[tuple[str, Expr]] = []
            if not self.at("]"):
                items.append(("", self.expression()))
                while self.at(","):
                    self.take()
                    items.append(("", self.expression()))
            self.expect("]", "']'")
            return Expr("list", items=items, line=line)
        if t.type == "INET_ADDR":
            self.take()
            self.expect("(", "'('")
            addr = self.expect("STRING", "an address string")
            self.expect(")", "')'")
            return Expr("inet_addr", str(addr.value), line=line)
        if t.type == "{":
            return self.struct()
        if t.type == "-":
            self.error("syntax error, a negative number needs no space after '-'")
        self.error("syntax error, expected an expression")

    def struct(self) -> Expr:
        line = self.take().line  # '{'
        items: list[tuple[str, Expr]] = []
        tag = "list"
        first = self.tok
        if first.type in ("SA_FAMILY", "SIN_PORT", "SIN_ADDR"):
            self.unsupported(first.line, "sockaddr expressions (write ... for addresses)")
        if first.type in ("CMSG_LEVEL", "EE_ERRNO", "SCM_SEC", "EVENTS", "GRE", "FLAGS"):
            self.unsupported(
                first.line, f"'{{{first.text}=…}}' structures in system-call arguments"
            )
        while True:
            t = self.tok
            if (
                t.type in ("ONOFF", "LINGER", "FD", "REVENTS", "MSG_FLAGS")
                and self.peek().type == "="
            ):
                self.take()
                self.take()
                items.append((t.text, self.expression()))
                tag = {
                    "ONOFF": "linger",
                    "LINGER": "linger",
                    "FD": "pollfd",
                    "REVENTS": "pollfd",
                }.get(t.type, tag)
                if t.type == "MSG_FLAGS":
                    tag = "msghdr"
            elif t.type == "EVENTS" and self.peek().type == "=":
                self.take()
                self.take()
                items.append(("events", self.expression()))
            elif t.type in ("MSG_NAME", "MSG_IOV", "MSG_CONTROL"):
                self.take()
                tag = "msghdr"
                if self.at("("):
                    self.take()
                    arg = self.expression()
                    self.expect(")", "')'")
                    items.append((t.text + "_len", arg))
                self.expect("=", "'='")
                items.append((t.text, self.expression()))
            else:
                items.append(("", self.expression()))
            if self.at(","):
                self.take()
                continue
            self.expect("}", "'}'")
            break
        if tag == "list" and len(items) == 2 and items[0][1].kind == "ellipsis":
            tag = "iovec"
        return Expr("struct", items=items, tag=tag, line=line)


def parse_script(
    text: str, path: str = "<script>", defines: dict[str, str] | None = None
) -> Script:
    """Parse a packetdrill script.

    Raises:
        ScriptError: syntax or semantic error (``FILE:LINE: …``).
        Unsupported: a construct of the language this runner does not run.
    """
    return _Parser(tokenize(text, path, defines), path).script()
