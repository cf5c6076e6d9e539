"""Names inside a lab: ``getaddrinfo`` as glibc answers it, from the lab's hosts database.

Theory of operation: a program inside a host asks :meth:`Resolver.getaddrinfo`
(through ``trio.socket.getaddrinfo``, ``socket.getaddrinfo`` or a socket's
``connect(("b", 80))``) and gets what glibc's ``getaddrinfo`` would give on that
host with ``hosts: files`` in ``nsswitch.conf``: the hosts database is
:class:`Names` — the lab's ``/etc/hosts`` (``localhost``, lines added with
``lab.hosts_file(...)`` or a lab file's ``[names]``) and, for every host of
the lab, its name mapped to the addresses it has *now*. Nothing leaves the
process: no DNS, no real ``/etc/hosts``.

The answer follows ``sysdeps/posix/getaddrinfo.c`` step by step: flag and
family checks (``EAI_BADFLAGS``, ``EAI_FAMILY``), ``AI_ADDRCONFIG`` from the
host's own addresses (``__check_pf``: any IPv4 address but 127.0.0.1, any
IPv6 address but ::1), the service (numeric, or ``/etc/services`` through
``getservbyname``; ``EAI_SERVICE``, ``EAI_SOCKTYPE``), numeric hosts
(``inet_aton`` exactly, then ``inet_pton`` with a ``%zone``), then the hosts
database, ``AI_V4MAPPED``/``AI_ALL``, ``AI_CANONNAME``; one entry per address
and socket type (stream/tcp, dgram/udp, raw when neither type nor protocol
is given). Two or more addresses are sorted by ``rfc3484_sort``: for each
destination the source address comes from a UDP socket of the *emulated*
host connected to it (as glibc does), and the rules are glibc's:

1. avoid unusable destinations (no route: no source address);
2. prefer matching scope;
3. avoid deprecated (and optimistic) source addresses;
4. prefer home addresses;
5. prefer matching label;
6. prefer higher precedence;
7. prefer native transport (the source's device is not a tunnel);
8. prefer smaller scope;
9. longest matching prefix — for IPv4 only inside the source's subnet;
10. otherwise keep the order.

These are RFC 6724 §6's rules; glibc's *policy table* is RFC 3484's with
three additions, not RFC 6724 §2.1's, and the difference shows: RFC 6724
gives IPv4 (``::ffff:0:0/96``) precedence 35 and ULAs (``fc00::/7``) 3, so a
name with a ULA and an IPv4 address sorts IPv4 first there, while glibc
gives IPv4 10 and ULAs the default 40 and sorts the ULA first. We follow
glibc (the resolver Linux programs really get); the tests pin both cases.

Kernel: glibc sysdeps/posix/getaddrinfo.c (getaddrinfo(), gaih_inet(),
rfc3484_sort()), sysdeps/unix/sysv/linux/check_pf.c.
"""

from __future__ import annotations

import functools
import socket as _stdsocket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from netstack.core.sock import AF_INET, AF_INET6, AF_UNSPEC, SOCK_DGRAM, SOCK_RAW, SOCK_STREAM
from netstack.ipv6.sock import Inet6Sock
from netstack.sites import kernel

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netns import NetnsIpv4, NetnsIpv6

__all__ = [
    "AI_ADDRCONFIG",
    "AI_ALL",
    "AI_CANONNAME",
    "AI_NUMERICHOST",
    "AI_NUMERICSERV",
    "AI_PASSIVE",
    "AI_V4MAPPED",
    "AddrInfo",
    "Names",
    "Resolver",
    "gaierror",
]

# <netdb.h>
AI_PASSIVE: Final = 0x0001
AI_CANONNAME: Final = 0x0002
AI_NUMERICHOST: Final = 0x0004
AI_V4MAPPED: Final = 0x0008
AI_ALL: Final = 0x0010
AI_ADDRCONFIG: Final = 0x0020
AI_IDN: Final = 0x0040
AI_CANONIDN: Final = 0x0080
AI_NUMERICSERV: Final = 0x0400
NI_NUMERICHOST: Final = 1
NI_NUMERICSERV: Final = 2
NI_NOFQDN: Final = 4
NI_NAMEREQD: Final = 8
NI_DGRAM: Final = 16
_AI_KNOWN: Final = (
    AI_PASSIVE
    | AI_CANONNAME
    | AI_NUMERICHOST
    | AI_ADDRCONFIG
    | AI_V4MAPPED
    | AI_IDN
    | AI_CANONIDN
    | AI_NUMERICSERV
    | AI_ALL
)

EAI_BADFLAGS: Final = -1
EAI_NONAME: Final = -2
EAI_AGAIN: Final = -3
EAI_FAIL: Final = -4
EAI_FAMILY: Final = -6
EAI_SOCKTYPE: Final = -7
EAI_SERVICE: Final = -8
EAI_ADDRFAMILY: Final = -9

# gai_strerror()
_GAI_MESSAGES: Final = {
    EAI_BADFLAGS: "Bad value for ai_flags",
    EAI_NONAME: "Name or service not known",
    EAI_AGAIN: "Temporary failure in name resolution",
    EAI_FAIL: "Non-recoverable failure in name resolution",
    EAI_FAMILY: "ai_family not supported",
    EAI_SOCKTYPE: "ai_socktype not supported",
    EAI_SERVICE: "Servname not supported for ai_socktype",
    EAI_ADDRFAMILY: "Address family for hostname not supported",
}

IPPROTO_TCP: Final = 6
IPPROTO_UDP: Final = 17
IPPROTO_DCCP: Final = 33
IPPROTO_UDPLITE: Final = 136
IPPROTO_SCTP: Final = 132
SOCK_SEQPACKET: Final = 5
SOCK_DCCP: Final = 6

# gaih_inet_typeproto: (socktype, protocol, protoany, noservice, default, name)
_TYPEPROTO: Final = (
    (SOCK_STREAM, IPPROTO_TCP, False, False, True, "tcp"),
    (SOCK_DGRAM, IPPROTO_UDP, False, False, True, "udp"),
    (SOCK_DCCP, IPPROTO_DCCP, False, False, False, "dccp"),
    (SOCK_DGRAM, IPPROTO_UDPLITE, False, False, False, "udplite"),
    (SOCK_STREAM, IPPROTO_SCTP, False, False, False, "sctp"),
    (SOCK_SEQPACKET, IPPROTO_SCTP, False, False, False, "sctp"),
    (SOCK_RAW, 0, True, True, True, "raw"),
)

_MAPPED: Final = 0xFFFF << 32
_LOOPBACK6: Final = 1
_LOOPBACK4: Final = 0x7F000001

#: One ``getaddrinfo`` entry: (family, type, proto, canonname, sockaddr).
AddrInfo = tuple[Any, Any, int, str, tuple[Any, ...]]


def gaierror(code: int) -> _stdsocket.gaierror:
    """``socket.gaierror(code, gai_strerror(code))``, as Python raises it."""
    return _stdsocket.gaierror(code, _GAI_MESSAGES.get(code, "Unknown error"))


# -- the hosts database ------------------------------------------------------------------
class Names:
    """A lab's hosts database: ``/etc/hosts`` lines, then each host's own addresses.

    *dynamic* maps a host name to the addresses that host has now
    (``[(family, address_int)]``) or None; the lab supplies it, so a name
    follows ``ip addr add``/``del`` during a run. Lines added with :meth:`add`
    or :meth:`load` come first, as ``/etc/hosts`` does before DNS: a name
    they define is answered from them alone.
    """

    def __init__(
        self,
        dynamic: Callable[[str], list[tuple[int, int]] | None] | None = None,
        reverse: Callable[[int, int], str | None] | None = None,
    ) -> None:
        self._dynamic = dynamic
        self._reverse_dynamic = reverse
        # (address family, address, canonical name, aliases) in file order
        self._lines: list[tuple[int, int, str, tuple[str, ...]]] = []
        self.add("127.0.0.1", "localhost")
        self.add("::1", "localhost", "ip6-localhost", "ip6-loopback")

    def add(self, address: str, name: str, *aliases: str) -> None:
        """One ``/etc/hosts`` line: ``ADDRESS NAME [ALIAS…]``.

        Raises:
            ValueError: the address is not a numeric IPv4 or IPv6 address, or a name is empty.
        """
        family, value = _parse_numeric_line(address)
        for n in (name, *aliases):
            if not isinstance(n, str) or not n or any(c.isspace() for c in n):
                raise ValueError(f"invalid host name {n!r} in hosts line for {address}")
        self._lines.append((family, value, name, tuple(aliases)))

    def load(self, text: str) -> None:
        """Add the lines of an ``/etc/hosts`` text (``#`` comments, blank lines)."""
        for lineno, raw in enumerate(text.splitlines(), 1):
            line = raw.split("#", 1)[0].split()
            if not line:
                continue
            if len(line) < 2:
                raise ValueError(f"hosts line {lineno}: {raw.strip()!r} has an address and no name")
            try:
                self.add(*line)
            except ValueError as e:
                raise ValueError(f"hosts line {lineno}: {e}") from None

    def lines(self) -> list[str]:
        """The static lines as ``/etc/hosts`` prints them."""
        out = []
        for family, value, name, aliases in self._lines:
            addr = _fmt(family, value)
            out.append("\t".join([addr, " ".join((name, *aliases))]))
        return out

    def lookup(self, name: str) -> tuple[str, list[tuple[int, int]]] | None:
        """``(canonical name, [(family, address)])`` for *name* (any case, a trailing dot
        allowed), or None if the database does not know it."""
        key = name.lower()
        if key.endswith(".") and len(key) > 1:
            key = key[:-1]
        canon = None
        found: list[tuple[int, int]] = []
        for family, value, cname, aliases in self._lines:
            if cname.lower() == key or any(a.lower() == key for a in aliases):
                if canon is None:
                    canon = cname
                if (family, value) not in found:
                    found.append((family, value))
        if canon is not None:
            return canon, found
        if self._dynamic is not None:
            addrs = self._dynamic(key)
            if addrs is not None:
                return key, addrs
        return None

    def reverse(self, family: int, addr: int) -> str | None:
        """The first name the static lines give *addr*, or the host that has it."""
        for f, value, cname, _ in self._lines:
            if f == family and value == addr:
                return cname
        if self._reverse_dynamic is not None:
            return self._reverse_dynamic(family, addr)
        return None


def _parse_numeric_line(address: str) -> tuple[int, int]:
    if not isinstance(address, str):
        raise ValueError(f"invalid address {address!r}")
    v4 = _inet_aton_exact(address)
    if v4 is not None:
        return AF_INET, v4
    try:
        return AF_INET6, int.from_bytes(_stdsocket.inet_pton(_stdsocket.AF_INET6, address), "big")
    except (OSError, ValueError):
        raise ValueError(f"invalid address {address!r} in hosts line") from None


def _inet_aton_exact(text: str) -> int | None:
    """glibc's ``__inet_aton_exact``: ``inet_aton`` forms (``127.1``, ``0x7f.1``), nothing after."""
    if not text or any(c.isspace() for c in text) or "\0" in text:
        return None
    try:
        return int.from_bytes(_stdsocket.inet_aton(text), "big")
    except (OSError, ValueError, UnicodeError):
        return None


def _inet_pton6(text: str) -> int | None:
    try:
        return int.from_bytes(_stdsocket.inet_pton(_stdsocket.AF_INET6, text), "big")
    except (OSError, ValueError, UnicodeError):
        return None


def _fmt(family: int, value: int) -> str:
    if family == AF_INET:
        return _stdsocket.inet_ntop(_stdsocket.AF_INET, value.to_bytes(4, "big"))
    return _stdsocket.inet_ntop(_stdsocket.AF_INET6, value.to_bytes(16, "big"))


# -- RFC 3484/6724 sorting as glibc does it ---------------------------------------------------
# glibc's default_labels / default_precedence: (prefix, bits, value), first match wins
_LABELS: Final = (
    (1, 128, 0),
    (0x2002 << 112, 16, 2),
    (0, 96, 3),
    (_MAPPED, 96, 4),
    (0xFEC0 << 112, 10, 5),
    (0xFC00 << 112, 7, 6),
    (0x2001 << 112, 32, 7),
    (0, 0, 1),
)
_PRECEDENCE: Final = (
    (1, 128, 50),
    (0x2002 << 112, 16, 30),
    (0, 96, 20),
    (_MAPPED, 96, 10),
    (0, 0, 40),
)
# default_scopes for IPv4: (address, netmask, scope)
_SCOPES4: Final = (
    (0xA9FE0000, 0xFFFF0000, 2),
    (0x7F000000, 0xFF000000, 2),
    (0x0A000000, 0xFF000000, 5),
    (0xAC100000, 0xFFF00000, 5),
    (0xC0A80000, 0xFFFF0000, 5),
    (0, 0, 14),
)
_IN6AI_DEPRECATED: Final = 1
_IN6AI_HOMEADDRESS: Final = 2
# ARPHRD types glibc's __check_native counts as tunnels
_ARPHRD_TUNNEL: Final = 768
_ARPHRD_TUNNEL6: Final = 769
_ARPHRD_SIT: Final = 776


def _as6(family: int, addr: int) -> int:
    return _MAPPED | addr if family == AF_INET else addr


def _match_prefix(family: int, addr: int, table: tuple[tuple[int, int, int], ...]) -> int:
    a = _as6(family, addr)
    for prefix, bits, value in table:
        shift = 128 - bits
        if (a >> shift) == (prefix >> shift):
            return value
    return table[-1][2]  # pragma: no cover - ::/0 always matches


@kernel("getaddrinfo.c", "get_scope")
def _get_scope(family: int, addr: int) -> int:
    """Kernel: glibc getaddrinfo.c, get_scope()."""
    if family == AF_INET6:
        if addr >> 120 != 0xFF:
            if addr >> 118 == 0xFE80 >> 6 or addr == _LOOPBACK6:
                return 2
            if addr >> 118 == 0xFEC0 >> 6:
                return 5
            return 14
        return (addr >> 112) & 0xF
    for value, mask, scope in _SCOPES4:
        if addr & mask == value:
            return scope
    return 14  # pragma: no cover


def _fls(a: int) -> int:
    """glibc's local ``fls``: the number of leading zero bits of a 32-bit word."""
    return 32 - a.bit_length() if a else 32


class _SortResult:
    __slots__ = (
        "addr",
        "family",
        "flags",
        "got_source",
        "index",
        "native",
        "prefixlen",
        "src",
        "src_family",
    )

    def __init__(self, family: int, addr: int) -> None:
        self.family = family
        self.addr = addr
        self.got_source = False
        self.src_family = 0
        self.src = 0
        self.flags = 0
        self.prefixlen = 0
        self.index = 0xFFFFFFFF
        self.native = -1


# -- the resolver ----------------------------------------------------------------------------------
class Resolver:
    """``getaddrinfo`` for the programs of one host (*net*), from *names*."""

    def __init__(self, net: Net, names: Names) -> None:
        self.net = net
        self.names = names

    # -- the host's addresses (check_pf) --------------------------------------------------------
    @kernel("sysdeps/unix/sysv/linux/check_pf.c", "make_request")
    def _interfaces(self) -> tuple[bool, bool, list[tuple[int, int, int, int, int]]]:
        """(seen_ipv4, seen_ipv6, [(family, addr, flags, prefixlen, ifindex)]).

        Kernel: glibc sysdeps/unix/sysv/linux/check_pf.c, make_request().
        """
        seen4 = seen6 = False
        info: list[tuple[int, int, int, int, int]] = []
        for dev in self.net.devices.values():
            in_dev = dev.ip_ptr
            for ifa in in_dev.ifa_list if in_dev is not None else ():
                if ifa.ifa_local != _LOOPBACK4:
                    seen4 = True
                info.append((AF_INET, ifa.ifa_local, 0, ifa.ifa_prefixlen, dev.ifindex))
            idev = dev.ip6_ptr
            for ifp in idev.addr_list if idev is not None else ():
                if ifp.addr != _LOOPBACK6:
                    seen6 = True
                flags = 0
                if ifp.flags & (0x20 | 0x04):  # IFA_F_DEPRECATED | IFA_F_OPTIMISTIC
                    flags |= _IN6AI_DEPRECATED
                if ifp.flags & 0x10:  # IFA_F_HOMEADDRESS
                    flags |= _IN6AI_HOMEADDRESS
                info.append((AF_INET6, ifp.addr, flags, ifp.prefix_len, dev.ifindex))
        return seen4, seen6, info

    def _source_for(self, family: int, addr: int, scope_id: int) -> tuple[int, int] | None:
        """The source address the host would use towards *addr*, from a connected UDP socket."""
        inet: NetnsIpv4 | NetnsIpv6 | None = self.net.ipv4 if family == AF_INET else self.net.ipv6
        if inet is None:
            return None
        try:
            sk = inet.socket(SOCK_DGRAM, 0)
        except OSError:
            return None
        try:
            if family == AF_INET:
                sk.connect(addr, 9)
                return AF_INET, sk.getsockname()[0]
            if not isinstance(sk, Inet6Sock):
                return None
            sk.connect6(addr, 9, 0, scope_id)
            src = sk.getsockname6()[0]
            return AF_INET6, src
        except OSError:
            return None
        finally:
            sk.close()

    @kernel("sysdeps/unix/sysv/linux/check_native.c", "__check_native")
    def _native(self, index: int) -> int:
        """Kernel: glibc sysdeps/unix/sysv/linux/check_native.c, __check_native()."""
        for dev in self.net.devices.values():
            if dev.ifindex == index:
                return int(dev.type not in (_ARPHRD_TUNNEL, _ARPHRD_TUNNEL6, _ARPHRD_SIT))
        return 0

    @kernel("sysdeps/posix/getaddrinfo.c", "getaddrinfo", "rfc3484_sort")
    def _sort(self, entries: list[tuple[int, int, int]]) -> list[int]:
        """The order ``rfc3484_sort`` gives *entries* ``(family, addr, scope_id)``.

        Kernel: glibc sysdeps/posix/getaddrinfo.c, getaddrinfo() (the sorting block)
        and rfc3484_sort().
        """
        _, seen6, info = self._interfaces()
        in6ai = {_as6(f, a): (fl, plen, idx) for f, a, fl, plen, idx in info} if seen6 else None
        results: list[_SortResult] = []
        last: tuple[int, int, int] | None = None
        for entry in entries:
            r = _SortResult(entry[0], entry[1])
            if last == entry:
                prev = results[-1]
                r.got_source, r.src_family, r.src = prev.got_source, prev.src_family, prev.src
                r.flags, r.prefixlen, r.index = prev.flags, prev.prefixlen, prev.index
            else:
                src = self._source_for(*entry)
                if src is not None:
                    r.got_source = True
                    r.src_family, r.src = src
                    if in6ai is not None:
                        found = in6ai.get(_as6(*src))
                        if found is not None:
                            r.flags, r.prefixlen, r.index = found
            results.append(r)
            last = entry

        def cmp(i1: int, i2: int) -> int:
            a1, a2 = results[i1], results[i2]
            # Rule 1: avoid unusable destinations
            if a1.got_source and not a2.got_source:
                return -1
            if not a1.got_source and a2.got_source:
                return 1
            # Rule 2: prefer matching scope
            d1 = _get_scope(a1.family, a1.addr)
            d2 = _get_scope(a2.family, a2.addr)
            if a1.got_source:
                s1 = _get_scope(a1.src_family, a1.src)
                s2 = _get_scope(a2.src_family, a2.src)
                if d1 == s1 and d2 != s2:
                    return -1
                if d1 != s1 and d2 == s2:
                    return 1
            # Rule 3: avoid deprecated addresses
            if a1.got_source:
                dep1 = a1.flags & _IN6AI_DEPRECATED
                dep2 = a2.flags & _IN6AI_DEPRECATED
                if not dep1 and dep2:
                    return -1
                if dep1 and not dep2:
                    return 1
            # Rule 4: prefer home addresses
            if a1.got_source:
                h1 = a1.flags & _IN6AI_HOMEADDRESS
                h2 = a2.flags & _IN6AI_HOMEADDRESS
                if not h1 and h2:
                    return 1
                if h1 and not h2:
                    return -1
            # Rule 5: prefer matching label
            if a1.got_source:
                l1 = _match_prefix(a1.family, a1.addr, _LABELS)
                ls1 = _match_prefix(a1.src_family, a1.src, _LABELS)
                l2 = _match_prefix(a2.family, a2.addr, _LABELS)
                ls2 = _match_prefix(a2.src_family, a2.src, _LABELS)
                if l1 == ls1 and l2 != ls2:
                    return -1
                if l1 != ls1 and l2 == ls2:
                    return 1
            # Rule 6: prefer higher precedence
            p1 = _match_prefix(a1.family, a1.addr, _PRECEDENCE)
            p2 = _match_prefix(a2.family, a2.addr, _PRECEDENCE)
            if p1 > p2:
                return -1
            if p1 < p2:
                return 1
            # Rule 7: prefer native transport
            if a1.got_source and a1.index != a2.index:
                if a1.native == -1:
                    a1.native = self._native(a1.index)
                if a2.native == -1:
                    a2.native = self._native(a2.index)
                if a1.native and not a2.native:
                    return -1
                if not a1.native and a2.native:
                    return 1
            # Rule 8: prefer smaller scope
            if d1 < d2:
                return -1
            if d1 > d2:
                return 1
            # Rule 9: use longest matching prefix
            if a1.got_source and a1.family == a2.family:
                bit1 = bit2 = 0
                if a1.family == AF_INET:
                    # (0xffffffff << 32) is 0xffffffff on x86: prefix length 0 matches nothing
                    m1 = (
                        (0xFFFFFFFF << (32 - a1.prefixlen)) & 0xFFFFFFFF
                        if a1.prefixlen
                        else 0xFFFFFFFF
                    )
                    m2 = (
                        (0xFFFFFFFF << (32 - a2.prefixlen)) & 0xFFFFFFFF
                        if a2.prefixlen
                        else 0xFFFFFFFF
                    )
                    if a1.src & m1 == a1.addr & m1:
                        bit1 = _fls(a1.addr ^ a1.src)
                    if a2.src & m2 == a2.addr & m2:
                        bit2 = _fls(a2.addr ^ a2.src)
                else:
                    for i in range(4):
                        shift = 96 - 32 * i
                        w1d, w1s = (a1.addr >> shift) & 0xFFFFFFFF, (a1.src >> shift) & 0xFFFFFFFF
                        w2d, w2s = (a2.addr >> shift) & 0xFFFFFFFF, (a2.src >> shift) & 0xFFFFFFFF
                        if w1d != w1s or w2d != w2s:
                            bit1 = _fls(w1d ^ w1s)
                            bit2 = _fls(w2d ^ w2s)
                            break
                if bit1 > bit2:
                    return -1
                if bit1 < bit2:
                    return 1
            # Rule 10: leave the order unchanged
            return -1 if i1 < i2 else 1

        return sorted(range(len(results)), key=functools.cmp_to_key(cmp))

    # -- getaddrinfo -------------------------------------------------------------------------------
    @kernel("sysdeps/posix/getaddrinfo.c", "getaddrinfo", "gaih_inet")
    def getaddrinfo(
        self,
        host: bytes | str | None,
        port: bytes | str | int | None,
        family: int = 0,
        type: int = 0,  # noqa: A002
        proto: int = 0,
        flags: int = 0,
    ) -> list[AddrInfo]:
        """``socket.getaddrinfo`` on this host: same arguments, results and ``gaierror``\\ s.

        Kernel: glibc sysdeps/posix/getaddrinfo.c, getaddrinfo() and gaih_inet().
        """
        name = _host_text(host)
        service = _port_text(port)
        if name == "*":
            name = None
        if service == "*":
            service = None
        if name is None and service is None:
            raise gaierror(EAI_NONAME)
        if flags & ~_AI_KNOWN:
            raise gaierror(EAI_BADFLAGS)
        if flags & AI_CANONNAME and name is None:
            raise gaierror(EAI_BADFLAGS)
        if family not in (AF_UNSPEC, AF_INET, AF_INET6):
            raise gaierror(EAI_FAMILY)
        if flags & AI_ADDRCONFIG:
            seen4, seen6, _ = self._interfaces()
            if family == AF_UNSPEC and (seen4 or seen6):
                if not (seen4 and seen6):
                    family = AF_INET if seen4 else AF_INET6
            elif (family == AF_INET and not seen4) or (family == AF_INET6 and not seen6):
                raise gaierror(EAI_NONAME)
        num: int | None = None
        if service is not None and service != "":
            num = _strtoul_int(service)
            if num is None and flags & AI_NUMERICSERV:
                raise gaierror(EAI_NONAME)
        else:
            service = None
        servs = _services(service, num, type, proto)
        addrs, canon = self._addresses(name, family, flags)
        out: list[AddrInfo] = []
        for i, (fam, addr, scope_id) in enumerate(addrs):
            for socktype, protocol, sport in servs:
                if fam == AF_INET:
                    sockaddr: tuple[Any, ...] = (_fmt(AF_INET, addr), sport)
                else:
                    sockaddr = (_fmt(AF_INET6, addr), sport, 0, scope_id)
                out.append((fam, socktype, protocol, canon if i == 0 and not out else "", sockaddr))
        if len(addrs) > 1:
            keys = [(fam, addr, scope) for fam, addr, scope in addrs for _ in servs]
            order = self._sort(keys)
            first_canon = out[0][3]
            out = [out[i] for i in order]
            out = [(f, t, p, "", sa) for f, t, p, _, sa in out]
            if first_canon:
                f, t, p, _, sa = out[0]
                out[0] = (f, t, p, first_canon, sa)
        return [(_stdsocket.AddressFamily(f), _socktype(t), p, c, sa) for f, t, p, c, sa in out]

    def _addresses(
        self, name: str | None, family: int, flags: int
    ) -> tuple[list[tuple[int, int, int]], str]:
        """The address tuples ``(family, addr, scope_id)`` gaih_inet() collects, and canon."""
        if name is None:
            out = []
            if family in (AF_UNSPEC, AF_INET6):
                out.append((AF_INET6, 0 if flags & AI_PASSIVE else _LOOPBACK6, 0))
            if family in (AF_UNSPEC, AF_INET):
                out.append((AF_INET, 0 if flags & AI_PASSIVE else _LOOPBACK4, 0))
            return out, ""
        canon = name if flags & AI_CANONNAME else ""
        v4 = _inet_aton_exact(name)
        if v4 is not None:
            if family in (AF_UNSPEC, AF_INET):
                return [(AF_INET, v4, 0)], canon
            if family == AF_INET6 and flags & AI_V4MAPPED:
                return [(AF_INET6, _MAPPED | v4, 0)], canon
            raise gaierror(EAI_ADDRFAMILY)
        text, sep, zone = name.partition("%")
        v6 = _inet_pton6(text)
        if v6 is not None:
            if family in (AF_UNSPEC, AF_INET6):
                fam, addr = AF_INET6, v6
            elif family == AF_INET and v6 >> 32 == 0xFFFF:
                fam, addr = AF_INET, v6 & 0xFFFFFFFF
            else:
                raise gaierror(EAI_ADDRFAMILY)
            scope_id = 0
            if sep:
                linklocal = v6 >> 118 == 0xFE80 >> 6 or v6 >> 112 == 0xFF02
                dev = self.net.dev_get_by_name(zone) if linklocal else None
                if dev is not None:
                    scope_id = dev.ifindex
                else:
                    sid = _strtoul_int(zone)
                    if sid is None or not zone:
                        raise gaierror(EAI_NONAME)
                    scope_id = sid & 0xFFFFFFFF
            return [(fam, addr, scope_id)], canon
        if flags & AI_NUMERICHOST:
            raise gaierror(EAI_NONAME)
        found = self.names.lookup(name)
        if found is None:
            raise gaierror(EAI_NONAME)
        cname, addrs = found
        v6s = [(AF_INET6, a, 0) for f, a in addrs if f == AF_INET6]
        v4s = [(AF_INET, a, 0) for f, a in addrs if f == AF_INET]
        if family == AF_INET:
            out = v4s
        elif family == AF_INET6:
            out = v6s
            if flags & AI_V4MAPPED and (flags & AI_ALL or not v6s):
                out = out + [(AF_INET6, _MAPPED | a, 0) for _, a, _ in v4s]
        else:
            out = [(AF_INET6 if f == AF_INET6 else AF_INET, a, 0) for f, a in addrs]
        if not out:
            raise gaierror(EAI_NONAME)
        return out, cname if flags & AI_CANONNAME else ""

    @kernel("inet/getnameinfo.c", "getnameinfo")
    def getnameinfo(self, sockaddr: tuple[Any, ...], flags: int) -> tuple[str, str]:
        """``socket.getnameinfo`` on this host: the hosts database backwards.

        Kernel: glibc inet/getnameinfo.c, getnameinfo().
        """
        if not isinstance(sockaddr, tuple) or not 2 <= len(sockaddr) <= 4:
            raise TypeError("getnameinfo() argument 1 must be a tuple")
        host, port = sockaddr[0], sockaddr[1]
        res = self.getaddrinfo(host, port, 0, SOCK_DGRAM, 0, AI_NUMERICHOST)
        family, _, _, _, sa = res[0]
        value = _inet_aton_exact(sa[0]) if family == AF_INET else _inet_pton6(sa[0])
        name = None
        if not flags & NI_NUMERICHOST:
            name = self.names.reverse(int(family), value or 0)
            if name is not None and flags & NI_NOFQDN:
                name = name.split(".", 1)[0]
        if name is None:
            if flags & NI_NAMEREQD:
                raise gaierror(EAI_NONAME)
            name = sa[0]
            if family == AF_INET6 and len(sa) == 4 and sa[3]:
                name = f"{name}%{sa[3]}"
        if flags & NI_NUMERICSERV:
            serv = str(sa[1])
        else:
            try:
                serv = _stdsocket.getservbyport(sa[1], "udp" if flags & NI_DGRAM else "tcp")
            except (OSError, OverflowError):
                serv = str(sa[1])
        return name, serv

    def sockaddr(
        self,
        address: Any,
        family: int,
        type: int,  # noqa: A002
        proto: int,
        *,
        local: bool,
    ) -> tuple[Any, ...]:
        """Resolve a socket call's ``(host, port[, flowinfo, scope_id])`` *address* to
        a numeric one, as ``socket.connect``/``bind`` and Trio's socket methods do
        (the first ``getaddrinfo`` answer; ``AI_PASSIVE`` for a local address;
        ``AI_V4MAPPED`` on an ``AF_INET6`` socket)."""
        host, port, *rest = address
        if host == "":
            host = None
        elif host == "<broadcast>":
            host = "255.255.255.255"
        flags = AI_PASSIVE if local else 0
        if family == AF_INET6:
            flags |= AI_V4MAPPED
        res = self.getaddrinfo(host, port, family, type, proto, flags)
        normed = res[0][4]
        if family == AF_INET6:
            lst = list(normed)
            if len(rest) >= 1:
                lst[2] = rest[0]
            if len(rest) >= 2:
                lst[3] = rest[1]
            return tuple(lst)
        return normed


def _host_text(host: bytes | str | None) -> str | None:
    if host is None:
        return None
    if isinstance(host, bytes | bytearray):
        return bytes(host).decode("ascii", "surrogateescape")
    if not isinstance(host, str):
        raise TypeError("getaddrinfo() argument 1 must be string or None")
    try:
        host.encode("ascii")
    except UnicodeEncodeError:
        return host.encode("idna").decode("ascii")
    return host


def _port_text(port: bytes | str | int | None) -> str | None:
    if port is None:
        return None
    if isinstance(port, bool) or not isinstance(port, int | str | bytes):
        raise OSError("Int or String expected")
    if isinstance(port, int):
        return str(port)
    if isinstance(port, bytes):
        return port.decode("ascii", "surrogateescape")
    return port


def _strtoul_int(text: str) -> int | None:
    """``strtoul(text, &end, 10)`` with ``*end == '\\0'``, stored in an ``int``
    (glibc's ``gaih_service.num``); None if text is not all number."""
    s = text.lstrip(" \t\n\v\f\r")
    neg = False
    if s[:1] in ("+", "-"):
        neg = s[0] == "-"
        s = s[1:]
    if not s or not (s.isascii() and s.isdigit()):
        return None
    value = int(s)
    if value > 0xFFFFFFFFFFFFFFFF:
        value = 0xFFFFFFFFFFFFFFFF  # ULONG_MAX on overflow
    elif neg:
        value = (-value) & 0xFFFFFFFFFFFFFFFF
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def _services(
    service: str | None,
    num: int | None,
    type: int,  # noqa: A002
    proto: int,
) -> list[tuple[int, int, int]]:
    """The (socktype, protocol, port) tuples gaih_inet() builds for a service."""
    tp = None
    if type or proto:
        for entry in _TYPEPROTO:
            socktype, protocol, protoany, _, _, _ = entry
            if (type and type != socktype) or (proto and not protoany and proto != protocol):
                continue
            tp = entry
            break
        if tp is None:
            raise gaierror(EAI_SOCKTYPE if type else EAI_SERVICE)
    if service is not None:
        if tp is not None and tp[3]:  # GAI_PROTO_NOSERVICE
            raise gaierror(EAI_SERVICE)
        if num is None or num < 0:
            if tp is not None:
                port = _getservbyname(service, tp[5])
                if port is None:
                    raise gaierror(EAI_SERVICE)
                return [(tp[0], proto if tp[2] else tp[1], port)]
            out = []
            for socktype, protocol, protoany, noservice, _, pname in _TYPEPROTO:
                if noservice:
                    continue
                port = _getservbyname(service, pname)
                if port is not None:
                    out.append((socktype, proto if protoany else protocol, port))
            if not out:
                raise gaierror(EAI_SERVICE)
            return out
        port = num & 0xFFFF
    else:
        port = 0
    if tp is not None:
        return [(tp[0], proto if tp[2] else tp[1], port)]
    return [(s, p, port) for s, p, _, _, default, _ in _TYPEPROTO if default]


def _getservbyname(name: str, proto: str) -> int | None:
    """``/etc/services`` (read locally; no network)."""
    try:
        return _stdsocket.getservbyname(name, proto)
    except (OSError, UnicodeError):
        return None


def _socktype(t: int) -> Any:
    try:
        return _stdsocket.SocketKind(t)
    except ValueError:  # pragma: no cover - SOCK_DCCP is not in Python's enum
        return t


def addresses_of(net: Net) -> list[tuple[int, int]]:
    """What a host's own name resolves to: its IPv4 addresses, then its IPv6
    addresses (global and unique-local; not link-local, not loopback), by device."""
    v4: list[tuple[int, int]] = []
    v6: list[tuple[int, int]] = []
    for dev in net.devices.values():
        in_dev = dev.ip_ptr
        ifas = in_dev.ifa_list if in_dev is not None else ()
        v4.extend((AF_INET, ifa.ifa_local) for ifa in ifas if ifa.ifa_local >> 24 != 127)
        idev = dev.ip6_ptr
        ifps = idev.addr_list if idev is not None else ()
        v6.extend(  # global scope, not ::1, not IFA_F_DADFAILED
            (AF_INET6, ifp.addr)
            for ifp in ifps
            if ifp.scope == 0 and ifp.addr != _LOOPBACK6 and not ifp.flags & 0x08
        )
    return v4 + v6
