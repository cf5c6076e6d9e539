"""ECN rules for tunnels: copy on encapsulation, RFC 6040 on decapsulation.

Theory of operation: when a packet is encapsulated the outer header takes
the inner ECN field, except that an inner CE becomes ECT(0) (the outer header
must not claim congestion the inner one already records). When it is
decapsulated the outer field is folded back in: CE on the outer header marks
an ECN-capable inner packet CE; an outer ECT(1) turns an inner ECT(0) into
ECT(1); and a CE outer header over a not-ECT inner packet means the
congestion cannot be signalled — the packet is dropped (return 2). An ECT
outer over a not-ECT inner packet passes but is worth a log line (return 1).

Kernel: include/net/inet_ecn.h.
"""

from __future__ import annotations

from typing import Final

from netstack.core.skbuff import SkBuff
from netstack.sites import kernel
from netstack.wire.checksum import csum_fold
from netstack.wire.ethernet import ETH_P_IP, ETH_P_IPV6

__all__ = [
    "INET_ECN_CE",
    "INET_ECN_ECT_0",
    "INET_ECN_ECT_1",
    "INET_ECN_MASK",
    "INET_ECN_NOT_ECT",
    "INET_ECN_decapsulate",
    "INET_ECN_encapsulate",
    "IP_ECN_decapsulate",
    "ip_tunnel_ecn_encap",
]

INET_ECN_NOT_ECT: Final = 0
INET_ECN_ECT_1: Final = 1
INET_ECN_ECT_0: Final = 2
INET_ECN_CE: Final = 3
INET_ECN_MASK: Final = 3


@kernel("INET_ECN_encapsulate")
def INET_ECN_encapsulate(outer: int, inner: int) -> int:
    """The outer TOS for inner TOS/traffic class *inner*. Kernel: INET_ECN_encapsulate()."""
    outer &= ~INET_ECN_MASK
    outer |= INET_ECN_ECT_0 if (inner & INET_ECN_MASK) == INET_ECN_CE else inner & INET_ECN_MASK
    return outer & 0xFF


@kernel("include/net/ip_tunnels.h", "ip_tunnel_ecn_encap")
def ip_tunnel_ecn_encap(tos: int, skb: SkBuff, inner_nh: int) -> int:
    """Kernel: include/net/ip_tunnels.h, ip_tunnel_ecn_encap()."""
    buf = skb.buf
    if skb.protocol == ETH_P_IP:
        inner = buf[inner_nh + 1]
    elif skb.protocol == ETH_P_IPV6:
        inner = ((buf[inner_nh] & 0x0F) << 4) | (buf[inner_nh + 1] >> 4)
    else:
        return tos
    return INET_ECN_encapsulate(tos, inner)


@kernel("IP_ECN_set_ce", "IP_ECN_set_ect1")
def _ipv4_change_dsfield(skb: SkBuff, nh: int, ecn: int) -> None:
    """Set the ECN bits of the IPv4 header at *nh*, fixing its checksum incrementally.

    Kernel: IP_ECN_set_ce() / IP_ECN_set_ect1().
    """
    skb.make_writable()
    buf = skb.buf
    old = buf[nh + 1]
    new = (old & ~INET_ECN_MASK) | ecn
    if new == old:
        return
    buf[nh + 1] = new
    check = (buf[nh + 10] << 8) | buf[nh + 11]
    # RFC 1624: HC' = ~(~HC + ~m + m'), on the 16-bit word holding version/ihl/tos
    word_old = (buf[nh] << 8) | old
    word_new = (buf[nh] << 8) | new
    s = (~check & 0xFFFF) + (~word_old & 0xFFFF) + word_new
    fixed = csum_fold(s)
    buf[nh + 10] = fixed >> 8
    buf[nh + 11] = fixed & 0xFF


def _ipv6_change_ecn(skb: SkBuff, nh: int, ecn: int) -> None:
    skb.make_writable()
    buf = skb.buf
    buf[nh + 1] = (buf[nh + 1] & ~0x30) | (ecn << 4)


@kernel("include/net/inet_ecn.h", "INET_ECN_decapsulate", "__INET_ECN_decapsulate")
def INET_ECN_decapsulate(skb: SkBuff, outer: int, inner: int, inner_nh: int) -> int:
    """Fold the outer ECN field into the inner header; 0 ok, 1 ok but log, 2 drop.

    Kernel: include/net/inet_ecn.h, INET_ECN_decapsulate() / __INET_ECN_decapsulate().
    """
    if inner & INET_ECN_MASK == INET_ECN_NOT_ECT:
        o = outer & INET_ECN_MASK
        if o == INET_ECN_NOT_ECT:
            return 0
        if o == INET_ECN_CE:
            return 2
        return 1
    if outer & INET_ECN_MASK == INET_ECN_CE:
        _set_ecn(skb, inner_nh, INET_ECN_CE, inner)
    elif outer & INET_ECN_MASK == INET_ECN_ECT_1 and inner & INET_ECN_MASK == INET_ECN_ECT_0:
        _set_ecn(skb, inner_nh, INET_ECN_ECT_1, inner)
    return 0


def _set_ecn(skb: SkBuff, nh: int, ecn: int, inner: int) -> None:
    if inner & INET_ECN_MASK == INET_ECN_CE:
        return
    if skb.protocol == ETH_P_IP:
        _ipv4_change_dsfield(skb, nh, ecn)
    elif skb.protocol == ETH_P_IPV6:
        _ipv6_change_ecn(skb, nh, ecn)


@kernel("IP_ECN_decapsulate")
def IP_ECN_decapsulate(outer_tos: int, skb: SkBuff) -> int:
    """Decapsulate the ECN field of an IPv4 outer header. Kernel: IP_ECN_decapsulate()."""
    nh = skb.network_header
    buf = skb.buf
    if skb.protocol == ETH_P_IP:
        inner = buf[nh + 1]
    elif skb.protocol == ETH_P_IPV6:
        inner = ((buf[nh] & 0x0F) << 4) | (buf[nh + 1] >> 4)
    else:
        return 0
    return INET_ECN_decapsulate(skb, outer_tos, inner, nh)
