"""Faults as a test asks for them: partitions between sets of hosts.

Theory of operation: a partition between host sets A and B makes every IP
datagram from an address of one set vanish when it reaches a host of the
other — silently, as a cut cable or a dead switch does: no ICMP, no error at
the sender, so a client sees its own timeouts and retries. Each host of A
and B gets a filter on its ``NF_INET_PRE_ROUTING`` hook (both families) that
drops datagrams whose source is an address the other side had when the
partition began; the drops are counted under the ``NETFILTER_DROP`` reason
(``host.drops()``), as ``nft add rule … ip saddr @peers drop`` would count
them. Hosts in neither set, routers and ARP/ND are untouched, and
:meth:`Partition.heal` removes exactly this partition's filters.

Kernel: net/netfilter/core.c (nf_hook_slow: NF_DROP →
SKB_DROP_REASON_NETFILTER_DROP), net/ipv4/ip_input.c (ip_rcv's NF_HOOK).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from netstack.core.sock import AF_INET, AF_INET6

if TYPE_CHECKING:
    from netstack.core.skbuff import SkBuff
    from netstack.host.host import Host

__all__ = ["HostFilter", "Partition"]


class HostFilter:
    """A host's PRE_ROUTING filter: the source addresses the partitions it is in drop."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.blocked4: dict[int, int] = {}  # address → how many partitions block it
        self.blocked6: dict[int, int] = {}

    def hook4(self, skb: SkBuff) -> bool:
        nh = skb.network_header
        return int.from_bytes(skb.buf[nh + 12 : nh + 16], "big") not in self.blocked4

    def hook6(self, skb: SkBuff) -> bool:
        nh = skb.network_header
        return int.from_bytes(skb.buf[nh + 8 : nh + 24], "big") not in self.blocked6

    def block(self, addrs: Iterable[tuple[int, int]], delta: int) -> None:
        for family, addr in addrs:
            table = self.blocked4 if family == AF_INET else self.blocked6
            n = table.get(addr, 0) + delta
            if n > 0:
                table[addr] = n
            else:
                table.pop(addr, None)
        net = self.host.net
        if net.ipv4 is not None:
            net.ipv4.nf_prerouting = self.hook4 if self.blocked4 else None
        if net.ipv6 is not None:
            net.ipv6.nf_prerouting = self.hook6 if self.blocked6 else None


class Partition:
    """Two sets of hosts that cannot reach each other until :meth:`heal`."""

    def __init__(self, side_a: list[Host], side_b: list[Host]) -> None:
        self.side_a = side_a
        self.side_b = side_b
        self.active = False
        self._blocked: list[tuple[HostFilter, list[tuple[int, int]]]] = []

    def apply(self) -> None:
        """Cut (idempotent)."""
        if self.active:
            return
        self.active = True
        for mine, theirs in ((self.side_a, self.side_b), (self.side_b, self.side_a)):
            addrs = [a for h in theirs for a in _all_addresses(h)]
            for h in mine:
                f = _filter(h)
                f.block(addrs, +1)
                self._blocked.append((f, addrs))

    def heal(self) -> None:
        """Reconnect (idempotent)."""
        if not self.active:
            return
        self.active = False
        for f, addrs in self._blocked:
            f.block(addrs, -1)
        self._blocked.clear()

    def __repr__(self) -> str:
        a = ",".join(h.name for h in self.side_a)
        b = ",".join(h.name for h in self.side_b)
        return f"<Partition {{{a}}} | {{{b}}} {'active' if self.active else 'healed'}>"


def _filter(host: Host) -> HostFilter:
    f = getattr(host, "_nf_filter", None)
    if f is None:
        f = HostFilter(host)
        host._nf_filter = f  # type: ignore[attr-defined]
    return f


def _all_addresses(host: Host) -> list[tuple[int, int]]:
    """Every address of *host* but loopback: IPv4 and IPv6 (link-local included)."""
    out: list[tuple[int, int]] = []
    for dev in host.net.devices.values():
        in_dev = dev.ip_ptr
        ifas = in_dev.ifa_list if in_dev is not None else ()
        out.extend((AF_INET, ifa.ifa_local) for ifa in ifas if ifa.ifa_local >> 24 != 127)
        idev = dev.ip6_ptr
        ifps = idev.addr_list if idev is not None else ()
        out.extend((AF_INET6, ifp.addr) for ifp in ifps if ifp.addr != 1)
    return out
