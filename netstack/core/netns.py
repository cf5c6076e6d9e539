"""What the rest of the stack may use of ``net->ipv4`` and ``net->ipv6``: typed Protocols.

Theory of operation: in the kernel ``struct net`` embeds ``struct
netns_ipv4`` and ``struct netns_ipv6``, declared in headers every layer can
include (include/net/netns/ipv4.h, ipv6.h). Here the concrete classes
(:class:`netstack.ipv4.netns.Ipv4`, :class:`netstack.ipv6.netns.Ipv6`) are
built from the family's own modules, above ``core``, so ``core`` cannot name
them. ``Net.ipv4`` and ``Net.ipv6`` are therefore typed by the Protocols
below: the part of each family that lower layers (``core``'s socket, ``tcp``)
and the other family (IPv6's dual-stack sockets and ICMPv6, which read IPv4's
state as the kernel's IPv6 code reads ``net->ipv4``) use, and what a
family-independent caller needs (``socket``, the PRE_ROUTING hook). Code
that needs more of one family takes its concrete state from
``ipv4_of(net)`` / ``ipv6_of(net)``; mypy checks that the concrete classes
satisfy these Protocols where ``inet_init``/``inet6_init`` install them.

This module imports nothing of netstack at run time.

Kernel: include/net/netns/ipv4.h (struct netns_ipv4), include/net/netns/ipv6.h
(struct netns_ipv6), include/net/net_namespace.h (struct net).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from netstack.core.skbuff import SkBuff
    from netstack.core.snmp import UdpMib
    from netstack.core.sock import Sock

__all__ = ["IcmpRateLimitMib", "NetnsIpv4", "NetnsIpv6", "UdpPortTable"]


class IcmpRateLimitMib(Protocol):
    """The ``Icmp:`` counter IPv6 bumps in IPv4's MIB (``ICMP_MIB_RATELIMITGLOBAL``)."""

    OutRateLimitGlobal: int


class UdpPortTable(Protocol):
    """IPv4's ``udp_table`` as a dual-stack AF_INET6 socket sees it (one table per port
    space in the kernel: an AF_INET6 socket not ``IPV6_V6ONLY`` also takes IPv4 datagrams).
    """

    @property
    def ports(self) -> Mapping[int, Sequence[Sock]]: ...

    def hash_mapped(self, sk: Sock, port: int) -> None:
        """Put an AF_INET6 socket on *port* of the IPv4 table too."""

    def unhash(self, sk: Sock) -> None: ...


class NetnsIpv4(Protocol):
    """``net->ipv4`` as seen from below and from IPv6 (kernel: ``struct netns_ipv4``)."""

    # NF_INET_PRE_ROUTING: a verdict per received datagram (False = NF_DROP)
    nf_prerouting: Callable[[SkBuff], bool] | None
    ip_default_ttl: int
    ip_nonlocal_bind: int
    ip_local_port_range: tuple[int, int]
    ip_no_pmtu_disc: int
    ping_group_range: tuple[int, int]

    @property
    def icmp_mib(self) -> IcmpRateLimitMib: ...

    @property
    def udp_mib(self) -> UdpMib: ...

    @property
    def udp_table(self) -> UdpPortTable: ...

    def socket(self, sock_type: int, protocol: int) -> Sock:
        """An AF_INET socket (``inet_create``)."""

    def inet_addr_type(self, addr: int) -> int:
        """``inet_addr_type()``: RTN_LOCAL, RTN_UNICAST … of *addr* in this Net."""

    def icmp_global_allow(self) -> bool:
        """The per-Net ICMP token bucket both families draw from (``icmp_global_allow``)."""

    def icmp_global_consume(self) -> None:
        """Take 0 to 2 credits from that bucket (``icmp_global_consume``)."""

    def ip_mc_setsockopt(self, sk: Sock, optname: int, optval: bytes) -> int:
        """IP_ADD_MEMBERSHIP / IP_DROP_MEMBERSHIP: 0 or -errno."""

    def ip_mc_drop_socket(self, sk: Sock) -> None:
        """A socket with memberships closes."""

    def udp_sendmsg(
        self,
        sk: Sock,
        data: bytes | bytearray | memoryview,
        dest: tuple[int, int] | None,
        flags: int,
    ) -> int:
        """IPv4's ``udp_sendmsg``, for ``udpv6_sendmsg`` to a v4-mapped peer."""

    def ip4_datagram_connect(self, sk: Sock, addr: int, port: int) -> None:
        """IPv4's ``__ip4_datagram_connect``, for ``__ip6_datagram_connect``."""

    def udp_csum_ok(self, skb: SkBuff) -> bool:
        """IPv4's ``udp_lib_checksum_complete``, for ``udpv6_recvmsg``."""


class NetnsIpv6(Protocol):
    """``net->ipv6`` as seen by family-independent callers (kernel: ``struct netns_ipv6``)."""

    nf_prerouting: Callable[[SkBuff], bool] | None

    def socket(self, sock_type: int, protocol: int) -> Sock:
        """An AF_INET6 socket (``inet6_create``)."""
