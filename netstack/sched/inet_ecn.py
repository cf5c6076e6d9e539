"""ECN marking by AQM disciplines: set Congestion Experienced instead of dropping.

Theory of operation: fq_codel (and netem with ``ecn``) mark a packet whose
IP header says the sender understands ECN (ECT(0) or ECT(1)); a Not-ECT
packet cannot be marked and is dropped instead. IPv4 patches the header
checksum incrementally (RFC 1624) exactly as the kernel does; IPv6 has no
header checksum. The header may be shared with a clone (a capture tap, a
netem duplicate), so the skb is made writable first.

Kernel: include/net/inet_ecn.h (INET_ECN_set_ce, IP_ECN_set_ce, IP6_ECN_set_ce).
"""

from __future__ import annotations

from typing import Final

from netstack.core.skbuff import CHECKSUM_COMPLETE, SkBuff
from netstack.sites import kernel
from netstack.wire.checksum import csum_add, csum_sub
from netstack.wire.ethernet import ETH_P_IP, ETH_P_IPV6

__all__ = [
    "INET_ECN_CE",
    "INET_ECN_ECT_0",
    "INET_ECN_ECT_1",
    "INET_ECN_MASK",
    "INET_ECN_NOT_ECT",
    "INET_ECN_set_ce",
]

INET_ECN_NOT_ECT: Final = 0
INET_ECN_ECT_1: Final = 1
INET_ECN_ECT_0: Final = 2
INET_ECN_CE: Final = 3
INET_ECN_MASK: Final = 3


@kernel("include/net/inet_ecn.h", "IP_ECN_set_ce")
def IP_ECN_set_ce(skb: SkBuff, nh: int) -> int:
    """Mark an IPv4 header CE; 1 if it is (now) CE, 0 if Not-ECT.

    Kernel: include/net/inet_ecn.h, IP_ECN_set_ce().
    """
    buf = skb.buf
    ecn = (buf[nh + 1] + 1) & INET_ECN_MASK
    # NOT_ECT → 01, ECT(1) → 10, ECT(0) → 11, CE → 00
    if not ecn & 2:
        return int(not ecn)
    skb.make_writable()
    buf = skb.buf
    check = buf[nh + 10] << 8 | buf[nh + 11]
    # ECT(1) → CE adds 2 to the tos byte, ECT(0) → CE adds 1: subtract it from the sum.
    add = 0xFFFB + ecn
    res = (check + add) & 0xFFFF
    res = (res + (res < add)) & 0xFFFF
    buf[nh + 10] = res >> 8
    buf[nh + 11] = res & 0xFF
    buf[nh + 1] |= INET_ECN_CE
    return 1


@kernel("IP6_ECN_set_ce")
def IP6_ECN_set_ce(skb: SkBuff, nh: int) -> int:
    """Mark an IPv6 header CE; 0 if Not-ECT. Kernel: IP6_ECN_set_ce()."""
    buf = skb.buf
    if not (buf[nh + 1] >> 4) & INET_ECN_MASK:  # ipv6_get_dsfield() & INET_ECN_MASK
        return 0
    skb.make_writable()
    buf = skb.buf
    old = buf[nh] << 8 | buf[nh + 1]
    buf[nh + 1] |= INET_ECN_CE << 4
    new = buf[nh] << 8 | buf[nh + 1]
    if skb.ip_summed == CHECKSUM_COMPLETE:
        skb.csum = csum_add(csum_sub(skb.csum, old), new)
    return 1


@kernel("include/net/inet_ecn.h", "INET_ECN_set_ce")
def INET_ECN_set_ce(skb: SkBuff) -> int:
    """Set CE on an ECN-capable IPv4/IPv6 packet; 0 if it cannot be marked.

    Kernel: include/net/inet_ecn.h, INET_ECN_set_ce().
    """
    nh = skb.network_header
    if nh < 0:
        return 0
    proto = skb.protocol
    if proto == ETH_P_IP:
        if nh + 20 <= skb.tail:
            return IP_ECN_set_ce(skb, nh)
    elif proto == ETH_P_IPV6 and nh + 40 <= skb.tail:
        return IP6_ECN_set_ce(skb, nh)
    return 0
