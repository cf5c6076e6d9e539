"""Host names for the user-space tools: what ``getaddrinfo``/``getnameinfo`` answer in a lab.

Theory of operation: a tool given ``ping h2`` asks the C library for h2's
addresses, and prints replies as ``64 bytes from h2 (10.0.2.2)`` after a
reverse lookup. In a lab the hosts database is every host's name mapped to
the addresses it has now (IPv4 first, then global IPv6, by device; not
loopback, not link-local), as if each host had the others in ``/etc/hosts``;
a reverse lookup gives the host that has the address. Numeric addresses are
read as glibc does (``inet_aton``'s strict dotted quad, ``inet_pton`` with a
``%zone`` for IPv6) and are never looked up.

:func:`getaddrinfo` and :func:`getnameinfo` are the only two doors: the lab
resolver of :mod:`netstack.socket` (glibc's ``getaddrinfo`` with its sorting
rules) will answer behind them once it lands, without touching the tools.
:func:`suggest` is netstack's own: the host name closest to a mistyped one,
for the hint a tool prints under glibc's message.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

from netstack.wire.ipv4 import aton
from netstack.wire.ipv4 import ntoa as ntoa4
from netstack.wire.ipv6 import aton as aton6
from netstack.wire.ipv6 import ntoa as ntoa6

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.userspace.process import Process

__all__ = [
    "AF_INET",
    "AF_INET6",
    "AF_UNSPEC",
    "EAI_ADDRFAMILY",
    "EAI_NONAME",
    "GaiError",
    "getaddrinfo",
    "getnameinfo",
    "host_addresses",
    "numeric",
    "suggest",
]

AF_UNSPEC: Final = 0
AF_INET: Final = 2
AF_INET6: Final = 10

EAI_NONAME: Final = -2
EAI_ADDRFAMILY: Final = -9
_GAI_TEXT: Final = {
    EAI_NONAME: "Name or service not known",
    EAI_ADDRFAMILY: "Address family for hostname not supported",
}


class GaiError(Exception):
    """A failed lookup: ``code`` is glibc's ``EAI_*``, ``str()`` its ``gai_strerror``."""

    def __init__(self, code: int) -> None:
        super().__init__(_GAI_TEXT[code])
        self.code = code


def numeric(text: str) -> tuple[int, str] | None:
    """``(family, canonical text)`` of a numeric address (``fe80::1%eth0`` keeps its zone)."""
    try:
        return AF_INET, ntoa4(aton(text))
    except ValueError:
        pass
    addr, sep, zone = text.partition("%")
    try:
        value = aton6(addr)
    except ValueError:
        return None
    return AF_INET6, ntoa6(value) + sep + zone


def host_addresses(net: Net) -> list[tuple[int, str]]:
    """What a host's name resolves to: its IPv4 addresses, then its global IPv6 ones."""
    v4: list[tuple[int, str]] = []
    v6: list[tuple[int, str]] = []
    for dev in net.devices.values():
        in_dev = dev.ip_ptr
        ifas = in_dev.ifa_list if in_dev is not None else ()
        v4.extend((AF_INET, ntoa4(ifa.ifa_local)) for ifa in ifas if ifa.ifa_local >> 24 != 127)
        idev = dev.ip6_ptr
        ifps = idev.addr_list if idev is not None else ()
        v6.extend(  # global scope, not ::1, not IFA_F_DADFAILED
            (AF_INET6, ntoa6(ifp.addr))
            for ifp in ifps
            if ifp.scope == 0 and ifp.addr != 1 and not ifp.flags & 0x08
        )
    return v4 + v6


def _hosts(proc: Process) -> Iterable[tuple[str, Net]]:
    for machine in proc.peers():
        yield machine.name, machine.net


def getaddrinfo(proc: Process, name: str, family: int = AF_UNSPEC) -> list[tuple[int, str]]:
    """The addresses of *name* (numeric, or a host of the lab) of *family*, best first.

    Raises:
        GaiError: ``EAI_NONAME`` for a name nobody has, ``EAI_ADDRFAMILY`` for a
            numeric address or a host with no address of the family asked for.
    """
    num = numeric(name)
    if num is not None:
        if family not in (AF_UNSPEC, num[0]):
            raise GaiError(EAI_ADDRFAMILY)
        return [num]
    for host_name, net in _hosts(proc):
        if host_name.lower() == name.lower().rstrip("."):
            found = [a for a in host_addresses(net) if family in (AF_UNSPEC, a[0])]
            if not found:
                raise GaiError(EAI_ADDRFAMILY if host_addresses(net) else EAI_NONAME)
            return found
    raise GaiError(EAI_NONAME)


def getnameinfo(proc: Process, address: str) -> str | None:
    """The name of the host that has *address* (a reverse lookup), or None."""
    for host_name, net in _hosts(proc):
        if any(a == address for _, a in host_addresses(net)):
            return host_name
    return None


def suggest(proc: Process, name: str) -> str | None:
    """The lab host name closest to *name*, if one is close enough (a typo)."""
    names = [host_name for host_name, _ in _hosts(proc)]
    close = difflib.get_close_matches(name.lower(), names, n=1, cutoff=0.5)
    if close:
        return close[0]
    for host_name in names:  # "host2" for "h2"… no; "routerA" for "router": yes
        if name.lower().startswith(host_name.lower()) or host_name.lower().startswith(name.lower()):
            return host_name
    return None
