"""ECN in IP headers: AQM marking, tunnel encapsulation and RFC 6040 decapsulation.

Theory of operation: the two ECN bits of the IPv4 TOS byte / IPv6 traffic
class say whether the sender understands ECN (ECT(0), ECT(1)), whether a
router has marked Congestion Experienced (CE), or neither (Not-ECT). Three
users, one set of helpers, as ``include/net/inet_ecn.h`` is one header:

* **AQM marking.** fq_codel (and netem with ``ecn``) call
  :func:`INET_ECN_set_ce` instead of dropping: an ECN-capable packet is
  marked CE, a Not-ECT one cannot be and is dropped by the caller.
* **Encapsulation.** The outer header takes the inner ECN field
  (:func:`INET_ECN_encapsulate`), except that an inner CE goes out as ECT(0):
  the outer header must not claim congestion the inner one already records.
* **Decapsulation** (:func:`INET_ECN_decapsulate`, RFC 6040): CE on the
  outer header marks an ECN-capable inner packet CE; an outer ECT(1) turns
  an inner ECT(0) into ECT(1); a CE outer header over a Not-ECT inner packet
  means the congestion cannot be signalled — the packet is dropped (return
  2); an ECT outer over a Not-ECT inner packet passes but is worth a log line
  (return 1).

Rewriting the field patches the IPv4 header checksum incrementally exactly as
the kernel does (IPv6 has none, but a ``CHECKSUM_COMPLETE`` sum over the
header is updated). The header may be shared with a clone (a capture tap, a
netem duplicate), so the skb is made writable first.

Kernel: include/net/inet_ecn.h.
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
    "INET_ECN_decapsulate",
    "INET_ECN_encapsulate",
    "INET_ECN_set_ce",
    "INET_ECN_set_ect1",
    "IP_ECN_decapsulate",
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


@kernel("IP_ECN_set_ect1")
def IP_ECN_set_ect1(skb: SkBuff, nh: int) -> int:
    """Turn an IPv4 ECT(0) header into ECT(1); 0 if it is not ECT(0).

    Kernel: IP_ECN_set_ect1().
    """
    if skb.buf[nh + 1] & INET_ECN_MASK != INET_ECN_ECT_0:
        return 0
    skb.make_writable()
    buf = skb.buf
    # tos goes down by one: csum16_add(check, htons(1))
    check = buf[nh + 10] << 8 | buf[nh + 11]
    res = (check + 1) & 0xFFFF
    res = (res + (res < 1)) & 0xFFFF
    buf[nh + 10] = res >> 8
    buf[nh + 11] = res & 0xFF
    buf[nh + 1] ^= INET_ECN_MASK
    return 1


def _ipv6_set_ecn(skb: SkBuff, nh: int, ecn: int) -> None:
    """OR *ecn*'s bits into the traffic class of the IPv6 header at *nh* (XOR for ECT(1))."""
    skb.make_writable()
    buf = skb.buf
    old = buf[nh] << 8 | buf[nh + 1]
    if ecn == INET_ECN_CE:
        buf[nh + 1] |= INET_ECN_CE << 4
    else:
        buf[nh + 1] ^= INET_ECN_MASK << 4
    new = buf[nh] << 8 | buf[nh + 1]
    if skb.ip_summed == CHECKSUM_COMPLETE:
        skb.csum = csum_add(csum_sub(skb.csum, old), new)


@kernel("IP6_ECN_set_ce")
def IP6_ECN_set_ce(skb: SkBuff, nh: int) -> int:
    """Mark an IPv6 header CE; 0 if Not-ECT. Kernel: IP6_ECN_set_ce()."""
    if not (skb.buf[nh + 1] >> 4) & INET_ECN_MASK:  # ipv6_get_dsfield() & INET_ECN_MASK
        return 0
    _ipv6_set_ecn(skb, nh, INET_ECN_CE)
    return 1


@kernel("IP6_ECN_set_ect1")
def IP6_ECN_set_ect1(skb: SkBuff, nh: int) -> int:
    """Turn an IPv6 ECT(0) header into ECT(1); 0 if it is not ECT(0).

    Kernel: IP6_ECN_set_ect1().
    """
    if (skb.buf[nh + 1] >> 4) & INET_ECN_MASK != INET_ECN_ECT_0:
        return 0
    _ipv6_set_ecn(skb, nh, INET_ECN_ECT_1)
    return 1


def _set_at(skb: SkBuff, nh: int, ecn: int) -> int:
    """Set CE or ECT(1) on the IPv4/IPv6 header at *nh* (``skb->protocol`` says which)."""
    if nh < 0:
        return 0
    proto = skb.protocol
    if proto == ETH_P_IP:
        if nh + 20 <= skb.tail:
            return IP_ECN_set_ce(skb, nh) if ecn == INET_ECN_CE else IP_ECN_set_ect1(skb, nh)
    elif proto == ETH_P_IPV6 and nh + 40 <= skb.tail:
        return IP6_ECN_set_ce(skb, nh) if ecn == INET_ECN_CE else IP6_ECN_set_ect1(skb, nh)
    return 0


@kernel("include/net/inet_ecn.h", "INET_ECN_set_ce")
def INET_ECN_set_ce(skb: SkBuff) -> int:
    """Set CE on an ECN-capable IPv4/IPv6 packet; 0 if it cannot be marked.

    Kernel: include/net/inet_ecn.h, INET_ECN_set_ce().
    """
    return _set_at(skb, skb.network_header, INET_ECN_CE)


@kernel("INET_ECN_set_ect1")
def INET_ECN_set_ect1(skb: SkBuff) -> int:
    """ECT(0) → ECT(1) on an IPv4/IPv6 packet; 0 if it is not ECT(0).

    Kernel: INET_ECN_set_ect1().
    """
    return _set_at(skb, skb.network_header, INET_ECN_ECT_1)


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
        _set_at(skb, inner_nh, INET_ECN_CE)
    elif outer & INET_ECN_MASK == INET_ECN_ECT_1:
        _set_at(skb, inner_nh, INET_ECN_ECT_1)
    return 0


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
