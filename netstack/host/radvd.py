"""A one-shot router advertisement, as radvd sends it (Linux itself never sends RAs).

Theory of operation: :func:`send_router_advertisement` opens a raw ICMPv6
socket on the router, builds an RA (RFC 4861 §4.2: hop limit, router
lifetime, a Source Link-Layer Address option, one Prefix Information option
per prefix with the on-link and autonomous flags, optionally an MTU option)
and sends it to ff02::1 on one device with hop limit 255 — what radvd does
on every interval. Hosts with ``accept_ra`` then learn a default route
(``proto ra``, expiring with the router lifetime) and, with ``autoconf``,
form SLAAC addresses from the prefix and their EUI-64 interface identifier.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from netstack.core.sock import SOCK_RAW
from netstack.ipv6.sock import IPPROTO_IPV6, IPV6_MULTICAST_HOPS, IPV6_MULTICAST_IF
from netstack.wire.icmpv6 import (
    ND_OPT_SOURCE_LL_ADDR,
    NDISC_ROUTER_ADVERTISEMENT,
    RA_FIXED,
    mtu_option,
    ndisc_fill_addr_option,
    prefix_info_option,
)
from netstack.wire.ipv6 import IPPROTO_ICMPV6, aton

if TYPE_CHECKING:
    from netstack.host.host import Host

__all__ = ["send_router_advertisement"]


async def send_router_advertisement(
    host: Host,
    dev: str,
    prefixes: tuple[str, ...] = (),
    *,
    router_lifetime: int = 1800,
    hop_limit: int = 64,
    valid_lft: int = 86400,
    preferred_lft: int = 14400,
    mtu: int | None = None,
    autonomous: bool = True,
) -> None:
    """Send one RA from *host* on *dev* to all nodes (``ff02::1``).

    Args:
        prefixes: ``"2001:db8:1::/64"`` strings, each sent as a Prefix Information option.
        router_lifetime: seconds receivers keep us as a default router (0: not a router).
    """
    d = host.dev(dev)
    body = bytearray(
        RA_FIXED.pack(NDISC_ROUTER_ADVERTISEMENT, 0, 0, hop_limit, 0, router_lifetime, 0, 0)
    )
    body += ndisc_fill_addr_option(ND_OPT_SOURCE_LL_ADDR, bytes(d.dev_addr))
    if mtu is not None:
        body += mtu_option(mtu)
    for p in prefixes:
        addr, _, plen = p.partition("/")
        body += prefix_info_option(
            aton(addr),
            int(plen or 64),
            onlink=True,
            autoconf=autonomous,
            valid=valid_lft,
            preferred=preferred_lft,
        )
    sock = host.socket(10, SOCK_RAW, IPPROTO_ICMPV6)
    try:
        sock.setsockopt(IPPROTO_IPV6, IPV6_MULTICAST_HOPS, 255)
        sock.setsockopt(IPPROTO_IPV6, IPV6_MULTICAST_IF, d.ifindex)
        await sock.sendto(bytes(body), ("ff02::1", 0, 0, d.ifindex))
    finally:
        sock.close()
