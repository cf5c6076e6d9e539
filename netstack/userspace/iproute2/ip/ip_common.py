"""Shared machinery of the ``ip`` front end: argument cursor, parsers, names, errors.

Theory of operation: iproute2's ``ip`` parses its argv with a handful of helpers
from ``lib/utils.c`` (``matches``, ``get_unsigned``, ``get_prefix``,
``invarg``…), and every bad input ends in one of a few fixed messages. This
module re-implements those helpers with the same acceptance rules (C
``strtoul`` semantics, iproute2's lenient dotted-quad parser that reads
``10.8`` as ``10.8.0.0``) and the same texts, so that the object modules
(:mod:`.ip_link`, :mod:`.ip_addr`, :mod:`.ip_route`, :mod:`.ip_neigh`) read like
their C counterparts. Errors are raised as
:class:`~netstack.errors.ConfigError` carrying exactly what ``ip`` prints on
stderr (without the trailing newline); kernel refusals that carry no extack
message become ``RTNETLINK answers: <strerror>``.

:class:`~netstack.userspace.iproute2.utils.Iproute2Options`, shared with
``tc`` and ``bridge``, holds the global options (``-s``, ``-d``, ``-o``,
``-br``, ``-4``…) and the output buffer; ``_SL_`` (the in-record line
separator that ``-oneline`` turns into a backslash) is its ``sl``.

Kernel/iproute2: lib/utils.c, lib/rt_names.c, lib/ll_addr.c, lib/ll_types.c,
lib/libnetlink.c.
"""

from __future__ import annotations

import errno
import os
import shlex
import socket
from collections.abc import Iterator
from typing import TYPE_CHECKING, Final, NoReturn

import attrs

from netstack.errors import ConfigError
from netstack.ipv4 import Ipv4
from netstack.ipv4.constants import RTN_NAMES
from netstack.ipv6 import Ipv6
from netstack.userspace.iproute2.status import EXIT_USAGE, Iproute2Exit
from netstack.wire.ipv6 import ntoa as ntoa6

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetDevice

__all__ = [
    "AF_BRIDGE",
    "AF_INET",
    "AF_INET6",
    "AF_MPLS",
    "AF_PACKET",
    "AF_UNSPEC",
    "ARPHRD_NAMES",
    "IFNAMSIZ",
    "INFINITY_LIFE_TIME",
    "INT_MAX",
    "INT_MIN",
    "LONG_MAX",
    "LONG_MIN",
    "RT_PROTOS",
    "RT_SCOPES",
    "RT_TABLES",
    "UINT_MAX",
    "ULONG_MAX",
    "USER_HZ",
    "Args",
    "InetPrefix",
    "addr_text",
    "check_altifname",
    "check_ifname",
    "devices",
    "duparg",
    "duparg2",
    "extack_error",
    "family_name",
    "get_addr",
    "get_addr_1",
    "get_integer",
    "get_prefix",
    "get_prefix_1",
    "get_u8",
    "get_u32",
    "get_unsigned",
    "incomplete_command",
    "inet6_addr_match",
    "inet_addr_match",
    "invarg",
    "ipv6_or_error",
    "ll_addr_a2n",
    "ll_addr_n2a",
    "ll_name_to_dev",
    "ll_type_n2a",
    "matches",
    "missarg",
    "nodev",
    "ntoa",
    "read_family",
    "rtnl_error",
    "rtnl_group_a2n",
    "rtnl_group_n2a",
    "rtnl_rtntype_n2a",
    "rtnl_rtprot_a2n",
    "rtnl_rtprot_n2a",
    "rtnl_rtscope_a2n",
    "rtnl_rtscope_n2a",
    "rtnl_rttable_a2n",
    "rtnl_rttable_n2a",
    "strtol",
    "strtoul",
]

AF_UNSPEC: Final = 0
AF_INET: Final = 2
AF_BRIDGE: Final = 7
AF_INET6: Final = 10
AF_PACKET: Final = 17
AF_MPLS: Final = 28

ULONG_MAX: Final = (1 << 64) - 1
UINT_MAX: Final = 0xFFFFFFFF
INT_MAX: Final = 0x7FFFFFFF
INT_MIN: Final = -0x80000000
LONG_MAX: Final = (1 << 63) - 1
LONG_MIN: Final = -(1 << 63)
IFNAMSIZ: Final = 16
INFINITY_LIFE_TIME: Final = 0xFFFFFFFF
USER_HZ: Final = 100

_C_SPACE: Final = " \t\n\v\f\r"


# ---------------------------------------------------------------------------
# Errors (lib/utils.c, lib/libnetlink.c)
# ---------------------------------------------------------------------------


def incomplete_command() -> NoReturn:
    """``Command line is not complete.`` Kernel/iproute2: lib/utils.c, incomplete_command()."""
    raise Iproute2Exit('Command line is not complete. Try option "help"', errno.EINVAL, EXIT_USAGE)


def invarg(msg: str, arg: str) -> NoReturn:
    """``Error: argument "ARG" is wrong: MSG``. iproute2: lib/utils.c, invarg()."""
    raise Iproute2Exit(
        f'Error: argument "{arg}" is wrong: {msg.rstrip()}', errno.EINVAL, EXIT_USAGE
    )


def missarg(key: str) -> NoReturn:
    """iproute2: lib/utils.c, missarg()."""
    raise Iproute2Exit(f'Error: argument "{key}" is required', errno.EINVAL, EXIT_USAGE)


def duparg(key: str, arg: str) -> NoReturn:
    """iproute2: lib/utils.c, duparg()."""
    raise Iproute2Exit(
        f'Error: duplicate "{key}": "{arg}" is the second value.', errno.EINVAL, EXIT_USAGE
    )


def duparg2(key: str, arg: str) -> NoReturn:
    """iproute2: lib/utils.c, duparg2()."""
    raise Iproute2Exit(
        f'Error: either "{key}" is duplicate, or "{arg}" is a garbage.', errno.EINVAL, EXIT_USAGE
    )


def nodev(dev: str) -> NoReturn:
    """``Cannot find device "DEV"``. iproute2: lib/utils.c, nodev()."""
    raise ConfigError(f'Cannot find device "{dev}"', errno.ENODEV)


def rtnl_error(err: int) -> ConfigError:
    """A kernel refusal without an extack message: ``RTNETLINK answers: <strerror>``.

    iproute2: lib/libnetlink.c, rtnl_talk_error().
    """
    return ConfigError(f"RTNETLINK answers: {os.strerror(err)}", err)


def ipv4_or_error(net: Net) -> Ipv4:
    """The Net's IPv4 state; a Net without IPv4 has no rtnetlink handler for it."""
    ipv4 = net.ipv4
    if not isinstance(ipv4, Ipv4):
        raise rtnl_error(errno.EOPNOTSUPP)
    return ipv4


def ipv6_or_error(net: Net) -> Ipv6:
    """The Net's IPv6 state; a Net without IPv6 has no rtnetlink handler for it."""
    ipv6 = net.ipv6
    if not isinstance(ipv6, Ipv6):
        raise rtnl_error(errno.EAFNOSUPPORT)
    return ipv6


def extack_error(msg: str, err: int) -> ConfigError:
    """A kernel refusal with an extack message, as print_ext_ack_msg() shows it."""
    if not msg.endswith("."):
        msg += "."
    return ConfigError(f"Error: {msg}", err)


# ---------------------------------------------------------------------------
# The argv cursor (NEXT_ARG / PREV_ARG)
# ---------------------------------------------------------------------------


class Args:
    """An argv being consumed left to right, as iproute2's ``argc``/``argv`` pair."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.i = 0

    def __bool__(self) -> bool:
        return self.i < len(self.argv)

    def __len__(self) -> int:
        return len(self.argv) - self.i

    def peek(self) -> str:
        """``*argv``."""
        return self.argv[self.i]

    def take(self) -> str:
        """Return the current word and move past it (``argc--; argv++``)."""
        word = self.argv[self.i]
        self.i += 1
        return word

    def value(self) -> str:
        """``NEXT_ARG()`` then ``*argv``: the word after a keyword, or incomplete_command."""
        if self.i >= len(self.argv):
            incomplete_command()
        return self.take()

    def back(self) -> None:
        """``PREV_ARG()``."""
        self.i -= 1

    def rest(self) -> list[str]:
        """What is left."""
        return self.argv[self.i :]


def split_words(command: str) -> list[str]:
    """The words of a command line, as a POSIX shell splits them (``shlex.split``).

    A line of printable ASCII without quotes or backslashes splits on its
    spaces, which is what shlex does with it, ten times faster (a large lab is
    built through thousands of ``ip`` commands).

    Raises:
        ValueError: an unterminated quote (shlex's).
    """
    if command.isascii() and command.isprintable() and not _QUOTING.intersection(command):
        return command.split()
    return shlex.split(command)


_QUOTING: Final = frozenset("'\"\\")


def matches(prefix: str, word: str) -> bool:
    """True if *prefix* is a non-empty prefix of *word*. iproute2: lib/utils.c, matches()."""
    return bool(prefix) and word.startswith(prefix)


# ---------------------------------------------------------------------------
# Numbers with C strtoul/strtol semantics
# ---------------------------------------------------------------------------


def strtoul(s: str, base: int = 0) -> tuple[int, int, bool]:
    """C ``strtoul``: ``(value, end index, overflow)``; end 0 when no digits were read.

    Leading white space and a sign are accepted; a negative number wraps
    modulo 2**64, as ``unsigned long`` does on x86-64.
    """
    if s.isascii() and s.isdigit() and (base == 10 or (base == 0 and (s[0] != "0" or len(s) == 1))):
        value = int(s)  # all decimal digits (an address's octet, a metric): the loop's result
        if value > ULONG_MAX:
            return ULONG_MAX, len(s), True
        return value, len(s), False
    i = 0
    n = len(s)
    while i < n and s[i] in _C_SPACE:
        i += 1
    neg = False
    if i < n and s[i] in "+-":
        neg = s[i] == "-"
        i += 1
    if base in (0, 16) and s[i : i + 2].lower() == "0x" and i + 2 < n and _digit(s[i + 2]) < 16:
        i += 2
        base = 16
    elif base == 0:
        base = 8 if i < n and s[i] == "0" else 10
    start = i
    value = 0
    while i < n and _digit(s[i]) < base:
        value = value * base + _digit(s[i])
        i += 1
    if i == start:
        return 0, 0, False
    overflow = value > ULONG_MAX
    if overflow:
        value = ULONG_MAX
    elif neg:
        value = (-value) & ULONG_MAX
    return value, i, overflow


def _digit(c: str) -> int:
    if "0" <= c <= "9":
        return ord(c) - 48
    if "a" <= c <= "z":
        return ord(c) - 87
    if "A" <= c <= "Z":
        return ord(c) - 55
    return 99


def strtol(s: str, base: int = 0) -> tuple[int, int, bool]:
    """C ``strtol``: ``(value, end index, overflow)``."""
    value, end, overflow = strtoul(s, base)
    if end == 0:
        return 0, 0, False
    neg = s.lstrip(_C_SPACE).startswith("-")
    if overflow:
        return (LONG_MIN if neg else LONG_MAX), end, True
    if neg:
        magnitude = (-value) & ULONG_MAX if value else 0
        if magnitude > -LONG_MIN:
            return LONG_MIN, end, True
        return -magnitude, end, False
    if value > LONG_MAX:
        return LONG_MAX, end, True
    return value, end, False


def get_unsigned(arg: str, base: int = 0) -> int | None:
    """``get_unsigned``: a 32-bit unsigned number, or None. iproute2: lib/utils.c."""
    if not arg:
        return None
    value, end, overflow = strtoul(arg, base)
    if end == 0 or end != len(arg) or overflow or value > UINT_MAX:
        return None
    return value


get_u32 = get_unsigned


def get_u8(arg: str, base: int = 0) -> int | None:
    """``get_u8``. iproute2: lib/utils.c."""
    value = get_unsigned(arg, base)
    return value if value is not None and value <= 0xFF else None


def get_integer(arg: str, base: int = 0) -> int | None:
    """``get_integer``: a C ``int``, or None. iproute2: lib/utils.c."""
    if not arg:
        return None
    value, end, overflow = strtol(arg, base)
    if end == 0 or end != len(arg) or overflow or not INT_MIN <= value <= INT_MAX:
        return None
    return value


# ---------------------------------------------------------------------------
# Addresses and prefixes (inet_prefix)
# ---------------------------------------------------------------------------


@attrs.frozen
class InetPrefix:
    """iproute2's ``inet_prefix``: family, address bytes, bit length, flags."""

    family: int
    data: bytes = b""
    bitlen: int = -1
    prefixlen_specified: bool = False

    @property
    def bytelen(self) -> int:
        """Address length in bytes (0 for ``any``/``all``)."""
        return len(self.data)

    @property
    def v4(self) -> int:
        """The IPv4 address as an int (0 when absent)."""
        return int.from_bytes(self.data[:4], "big") if len(self.data) >= 4 else 0

    @property
    def v6(self) -> int:
        """The IPv6 address as an int (0 when absent)."""
        return int.from_bytes(self.data[:16], "big") if len(self.data) >= 16 else 0


def family_name(family: int) -> str:
    """iproute2: lib/utils.c, family_name()."""
    return {
        AF_INET: "inet",
        AF_INET6: "inet6",
        AF_PACKET: "link",
        AF_MPLS: "mpls",
        AF_BRIDGE: "bridge",
    }.get(family, "???")


def _family_name_verbose(family: int) -> str:
    return "any valid" if family == AF_UNSPEC else family_name(family)


def read_family(name: str) -> int:
    """iproute2: lib/utils.c, read_family()."""
    return {
        "inet": AF_INET,
        "inet6": AF_INET6,
        "link": AF_PACKET,
        "mpls": AF_MPLS,
        "bridge": AF_BRIDGE,
    }.get(name, AF_UNSPEC)


def _get_addr_ipv4(cp: str) -> bytes | None:
    """The legacy parser that reads ``10.8`` as 10.8.0.0. iproute2: get_addr_ipv4()."""
    parts = cp.split(".")
    if len(parts) <= 4 and all(
        p.isascii() and p.isdigit() and (p[0] != "0" or len(p) == 1) for p in parts
    ):
        # one to four decimal numbers without a leading zero (what a lab types):
        # what the strtoul loop below reads from them
        octets = [int(p) for p in parts]
        if max(octets) > 255:
            return None
        return bytes(octets) + bytes(4 - len(octets))
    out = bytearray(4)
    for i in range(4):
        n, end, _ = strtoul(cp)
        if n > 255 or end == 0:
            return None
        out[i] = n
        if end == len(cp):
            break
        if i == 3 or cp[end] != ".":
            return None
        cp = cp[end + 1 :]
    return bytes(out)


def get_addr_1(name: str, family: int) -> InetPrefix | None:
    """Parse an address (``default``/``any``/``all`` included). iproute2: get_addr_1()."""
    if name == "default":
        if family == AF_MPLS:
            return None
        return InetPrefix(
            family,
            bytes({AF_INET: 4, AF_INET6: 16}.get(family, 0)),
            -2,
            True,
        )
    if name in ("all", "any"):
        if family == AF_MPLS:
            return None
        return InetPrefix(family, b"", -2)
    if family == AF_PACKET:
        try:
            return InetPrefix(AF_PACKET, ll_addr_a2n(name, 32))
        except ConfigError:
            return None
    if ":" in name:
        if family not in (AF_UNSPEC, AF_INET6):
            return None
        try:
            data = socket.inet_pton(socket.AF_INET6, name)
        except (OSError, ValueError):
            return None
        return InetPrefix(AF_INET6, data)
    if family == AF_MPLS:
        return None
    if family not in (AF_UNSPEC, AF_INET):
        return None
    data4 = _get_addr_ipv4(name)
    if data4 is None:
        return None
    return InetPrefix(AF_INET, data4)


def _mask2bits(mask: int) -> int:
    host = ~mask & 0xFFFFFFFF
    if host & (host + 1):
        return -1
    return 32 - host.bit_length()


def _get_netmask(arg: str) -> int | None:
    value = get_unsigned(arg)
    if value is not None:
        return value
    addr = get_addr_1(arg, AF_INET)
    if addr is not None and addr.family == AF_INET:
        bits = _mask2bits(addr.v4)
        if bits >= 0:
            return bits
    return None


def get_prefix_1(arg: str, family: int) -> InetPrefix | None:
    """Parse ``ADDR[/LEN|/MASK]``. iproute2: lib/utils.c, get_prefix_1()."""
    addr_part, slash, len_part = arg.partition("/")
    addr = get_addr_1(addr_part, family)
    if addr is None:
        return None
    bitlen = {AF_INET: 32, AF_INET6: 128, AF_MPLS: 20}.get(addr.family, 0)
    specified = False
    if slash:
        if addr.bitlen == -2:
            return None
        plen = _get_netmask(len_part)
        if plen is None or plen > bitlen:
            return None
        specified = True
        bitlen = plen
    elif addr.bitlen == -2:
        bitlen = 0
    return InetPrefix(addr.family, addr.data, bitlen, specified or addr.prefixlen_specified)


def get_prefix(arg: str, family: int) -> InetPrefix:
    """``get_prefix`` or its error. iproute2: lib/utils.c, get_prefix()."""
    if family == AF_PACKET:
        raise Iproute2Exit(
            f'Error: "{arg}" may be inet prefix, but it is not allowed in this context.',
            errno.EINVAL,
            1,  # exit(1)
        )
    pfx = get_prefix_1(arg, family)
    if pfx is None:
        raise Iproute2Exit(
            f'Error: {_family_name_verbose(family)} prefix is expected rather than "{arg}".',
            errno.EINVAL,
            1,  # exit(1)
        )
    return pfx


def get_addr(arg: str, family: int) -> InetPrefix:
    """``get_addr`` or its error. iproute2: lib/utils.c, get_addr()."""
    addr = get_addr_1(arg, family)
    if addr is None:
        raise Iproute2Exit(
            f'Error: {_family_name_verbose(family)} address is expected rather than "{arg}".',
            errno.EINVAL,
            1,  # exit(1)
        )
    return addr


def inet_addr_match(addr: int, pfx: InetPrefix, bits: int) -> bool:
    """True if the first *bits* bits of *addr* equal *pfx*'s (IPv4). iproute2: inet_addr_match()."""
    if bits <= 0:
        return True
    bits = min(bits, 32)
    mask = (0xFFFFFFFF << (32 - bits)) & 0xFFFFFFFF
    return not (addr ^ pfx.v4) & mask


def inet6_addr_match(addr: int, pfx: InetPrefix, bits: int) -> bool:
    """True if the first *bits* bits of *addr* equal *pfx*'s (IPv6). iproute2: inet_addr_match()."""
    if bits <= 0:
        return True
    bits = min(bits, 128)
    mask = ((1 << 128) - 1) ^ ((1 << (128 - bits)) - 1)
    return not (addr ^ pfx.v6) & mask


def addr_text(family: int, addr: int) -> str:
    """``format_host``/``rt_addr_n2a`` without name resolution: dotted quad or RFC 5952."""
    return ntoa6(addr) if family == AF_INET6 else ntoa(addr)


def ntoa(addr: int) -> str:
    """Dotted quad."""
    return f"{addr >> 24}.{(addr >> 16) & 0xFF}.{(addr >> 8) & 0xFF}.{addr & 0xFF}"


# ---------------------------------------------------------------------------
# Link-layer addresses and types (lib/ll_addr.c, lib/ll_types.c)
# ---------------------------------------------------------------------------


def ll_addr_a2n(arg: str, maxlen: int) -> bytes:
    """Parse ``aa:bb:…`` (or a dotted quad). iproute2: lib/ll_addr.c, ll_addr_a2n()."""
    if "." in arg:
        pfx = get_addr_1(arg, AF_INET)
        if pfx is None:
            raise ConfigError(f'"{arg}" is invalid lladdr.', errno.EINVAL)
        if maxlen < 4:
            raise ConfigError(f'"{arg}" is invalid lladdr.', errno.EINVAL)
        return pfx.data
    out = bytearray()
    rest: str | None = arg
    i = 0
    while i < maxlen and rest is not None:
        part, colon, after = rest.partition(":")
        value = _sscanf_hex(part)
        if value is None or not 0 <= value <= 255:
            raise ConfigError(f'"{part}" is invalid lladdr.', errno.EINVAL)
        out.append(value)
        rest = after if colon else None
        i += 1
    if rest is not None:
        out.append(0)  # C returns i + 1 after a full buffer: one byte too many
    return bytes(out)


def _sscanf_hex(s: str) -> int | None:
    """``sscanf(s, "%x", &v)`` for an ``int`` (prefix match, sign and 0x allowed)."""
    value, end, _ = strtoul(s, 16)
    if end == 0:
        return None
    if value > ULONG_MAX >> 1:
        value -= 1 << 64
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


ARPHRD_NAMES: Final = {
    0: "netrom",
    1: "ether",
    2: "eether",
    3: "ax25",
    4: "pronet",
    5: "chaos",
    6: "ieee802",
    7: "arcnet",
    8: "atalk",
    15: "dlci",
    19: "atm",
    23: "metricom",
    24: "ieee1394",
    27: "eui64",
    32: "infiniband",
    256: "slip",
    257: "cslip",
    258: "slip6",
    259: "cslip6",
    260: "rsrvd",
    264: "adapt",
    270: "rose",
    271: "x25",
    272: "hwx25",
    280: "can",
    512: "ppp",
    513: "hdlc",
    516: "lapb",
    517: "ddcmp",
    518: "rawhdlc",
    519: "rawip",
    768: "ipip",
    769: "tunnel6",
    770: "frad",
    771: "skip",
    772: "loopback",
    773: "localtlk",
    774: "fddi",
    775: "bif",
    776: "sit",
    777: "ip/ddp",
    778: "gre",
    779: "pimreg",
    780: "hippi",
    781: "ash",
    782: "econet",
    783: "irda",
    784: "fcpp",
    785: "fcal",
    786: "fcpl",
    787: "fcfb0",
    800: "tr",
    801: "tr+radiotap",
    802: "ieee802.11/radiotap",
    803: "ieee802.11",
    804: "ieee802.15.4",
    805: "ieee802.15.4/monitor",
    820: "phonet",
    821: "phonet_pipe",
    822: "caif",
    823: "gre6",
    824: "netlink",
    825: "6lowpan",
    826: "vsockmon",
    0xFFFE: "none",
    0xFFFF: "void",
}


def ll_type_n2a(arphrd: int) -> str:
    """``link/ether`` etc. iproute2: lib/ll_types.c, ll_type_n2a()."""
    return ARPHRD_NAMES.get(arphrd, f"[{arphrd}]")


def ll_addr_n2a(addr: bytes, arphrd: int) -> str:
    """Print a hardware address. iproute2: lib/ll_addr.c, ll_addr_n2a()."""
    if len(addr) == 4 and arphrd in (768, 778, 776):  # TUNNEL, IPGRE, SIT
        return ntoa(int.from_bytes(addr, "big"))
    if len(addr) == 16 and arphrd in (769, 823):  # TUNNEL6, IP6GRE
        return socket.inet_ntop(socket.AF_INET6, addr)
    return ":".join(f"{b:02x}" for b in addr)


# ---------------------------------------------------------------------------
# Devices by name (lib/ll_map.c)
# ---------------------------------------------------------------------------


def ll_name_to_dev(net: Net, name: str) -> NetDevice | None:
    """The device called *name*, or ``ifN`` by index. iproute2: ll_name_to_index()."""
    dev = net.dev_get_by_name(name)
    if dev is not None:
        return dev
    if name.startswith("if") and name[2:].isdigit():
        return net.dev_get_by_index(int(name[2:]))
    return None


def devices(net: Net) -> Iterator[NetDevice]:
    """Every device in ifindex order (the order a link dump returns them)."""
    return iter(sorted(net.devices.values(), key=lambda d: d.ifindex))


def check_ifname(name: str) -> bool:
    """True when *name* is acceptable as an ifname. iproute2: lib/utils.c, check_ifname()."""
    return len(name) < IFNAMSIZ and check_altifname(name)


def check_altifname(name: str) -> bool:
    """iproute2: lib/utils.c, __check_ifname()."""
    return bool(name) and not any(c == "/" or c in _C_SPACE for c in name)


# ---------------------------------------------------------------------------
# Name tables (lib/rt_names.c and /etc/iproute2)
# ---------------------------------------------------------------------------

RT_SCOPES: Final = {0: "global", 200: "site", 253: "link", 254: "host", 255: "nowhere"}
RT_TABLES: Final = {0: "unspec", 253: "default", 254: "main", 255: "local"}
RT_PROTOS: Final = {
    0: "unspec",
    1: "redirect",
    2: "kernel",
    3: "boot",
    4: "static",
    8: "gated",
    9: "ra",
    10: "mrt",
    11: "zebra",
    12: "bird",
    13: "dnrouted",
    14: "xorp",
    15: "ntk",
    16: "dhcp",
    18: "keepalived",  # RTPROT_KEEPALIVED; 17 (RTPROT_MROUTED) has no name in rt_protos
    42: "babel",
    99: "openr",
    186: "bgp",
    187: "isis",
    188: "ospf",
    189: "rip",
    192: "eigrp",
}


def _lookup_or_number(table: dict[int, str], arg: str, maximum: int) -> int | None:
    for key, name in table.items():
        if name == arg:
            return key
    value, end, _ = strtoul(arg)
    if end == 0 or end != len(arg) or value > maximum:
        return None
    return value


def rtnl_rtscope_a2n(arg: str) -> int | None:
    """iproute2: lib/rt_names.c, rtnl_rtscope_a2n()."""
    return _lookup_or_number(RT_SCOPES, arg, 255)


def rtnl_rtscope_n2a(scope: int) -> str:
    """iproute2: lib/rt_names.c, rtnl_rtscope_n2a()."""
    return RT_SCOPES.get(scope, str(scope))


def rtnl_rttable_a2n(arg: str) -> int | None:
    """iproute2: lib/rt_names.c, rtnl_rttable_a2n()."""
    return _lookup_or_number(RT_TABLES, arg, 0xFFFFFFFF)


def rtnl_rttable_n2a(table: int) -> str:
    """iproute2: lib/rt_names.c, rtnl_rttable_n2a()."""
    return RT_TABLES.get(table, str(table))


def rtnl_rtntype_n2a(rtype: int) -> str:
    """iproute2: lib/rt_names.c, rtnl_rtntype_n2a()."""
    if rtype == 0:  # RTN_UNSPEC
        return "none"
    return RTN_NAMES[rtype] if 0 <= rtype < len(RTN_NAMES) else str(rtype)


def rtnl_rtprot_a2n(arg: str) -> int | None:
    """iproute2: lib/rt_names.c, rtnl_rtprot_a2n()."""
    return _lookup_or_number(RT_PROTOS, arg, 255)


def rtnl_rtprot_n2a(proto: int) -> str:
    """iproute2: lib/rt_names.c, rtnl_rtprot_n2a()."""
    return RT_PROTOS.get(proto, str(proto))


def rtnl_group_a2n(arg: str) -> int | None:
    """iproute2: lib/rt_names.c, rtnl_group_a2n()."""
    if arg == "default":
        return 0
    value, end, _ = strtol(arg)
    if end == 0 or end != len(arg) or not INT_MIN <= value <= INT_MAX:
        return None
    return value & 0xFFFFFFFF


def rtnl_group_n2a(group: int) -> str:
    """iproute2: lib/rt_names.c, rtnl_group_n2a()."""
    return "default" if group == 0 else str(group)
