"""ECN on tunnels: INET_ECN_encapsulate and the RFC 6040 decapsulation table."""

from __future__ import annotations

import pytest

from netstack.core.inet_ecn import (
    INET_ECN_CE,
    INET_ECN_ECT_0,
    INET_ECN_ECT_1,
    INET_ECN_NOT_ECT,
    INET_ECN_encapsulate,
    IP_ECN_decapsulate,
)
from netstack.core.skbuff import CHECKSUM_COMPLETE, SkBuff
from netstack.tunnels.ip_tunnel import ip_tunnel_ecn_encap
from netstack.wire.checksum import csum_fold, csum_partial, ip_fast_csum
from netstack.wire.ipv4 import IPV4_HDR

NOT, E1, E0, CE = INET_ECN_NOT_ECT, INET_ECN_ECT_1, INET_ECN_ECT_0, INET_ECN_CE


@pytest.mark.parametrize(("inner", "outer"), [(NOT, NOT), (E1, E1), (E0, E0), (CE, E0)])
def test_encapsulate_copies_ecn_but_ce_goes_out_as_ect0(inner: int, outer: int) -> None:
    assert INET_ECN_encapsulate(0xB8, inner) == 0xB8 | outer
    assert INET_ECN_encapsulate(0xB8 | 3, 0x20 | inner) == 0xB8 | outer  # DSCP kept


def test_tunnel_encap_clears_the_outer_ecn_bits_for_a_non_ip_payload() -> None:
    """ip_tunnel_get_dsfield() is 0 for ARP: a configured ECT/CE in the outer TOS goes."""
    skb = SkBuff(bytearray(28), 0, 28)
    skb.protocol = 0x0806
    assert ip_tunnel_ecn_encap(0xB8 | CE, skb, 0) == 0xB8
    assert ip_tunnel_ecn_encap(0xB8 | E1, skb, 0) == 0xB8


def inner_skb(ecn: int) -> SkBuff:
    buf = bytearray(20)
    IPV4_HDR.pack_into(buf, 0, 0x45, 0x28 | ecn, 20, 1, 0, 64, 17, 0, 0x0A000001, 0x0A000002)
    buf[10:12] = ip_fast_csum(buf, 0, 20).to_bytes(2, "big")
    skb = SkBuff(buf, 0, 20)
    skb.network_header = 0
    skb.protocol = 0x0800
    return skb


# RFC 6040 §4.2: (inner, outer) -> (result code, resulting inner ECN)
TABLE = [
    (NOT, NOT, 0, NOT),
    (NOT, E0, 1, NOT),
    (NOT, E1, 1, NOT),
    (NOT, CE, 2, NOT),
    (E0, NOT, 0, E0),
    (E0, E0, 0, E0),
    (E0, E1, 0, E1),
    (E0, CE, 0, CE),
    (E1, NOT, 0, E1),
    (E1, E0, 0, E1),
    (E1, E1, 0, E1),
    (E1, CE, 0, CE),
    (CE, NOT, 0, CE),
    (CE, E0, 0, CE),
    (CE, E1, 0, CE),
    (CE, CE, 0, CE),
]


@pytest.mark.parametrize(("inner", "outer", "rc", "after"), TABLE)
def test_decapsulate_rfc6040(inner: int, outer: int, rc: int, after: int) -> None:
    skb = inner_skb(inner)
    assert IP_ECN_decapsulate(0x28 | outer, skb) == rc
    assert skb.buf[1] == 0x28 | after
    assert ip_fast_csum(skb.buf, 0, 20) == 0  # the header checksum was fixed incrementally


def test_decapsulate_rewrites_the_checksum_as_the_kernel_does() -> None:
    """CE over ECT(1) via IP_ECN_set_ce(): the kernel's sum gives 0xffff where
    RFC 1624's formula gave 0x0000 (both valid; the bytes are the kernel's)."""
    skb = inner_skb(E1)
    skb.buf[10:12] = b"\x00\x02"  # a header whose ECT(1) → CE sum lands on ±0
    assert IP_ECN_decapsulate(CE, skb) == 0
    assert skb.buf[1] == 0x28 | CE
    assert bytes(skb.buf[10:12]) == b"\xff\xff"


def test_decapsulate_ipv6_ce_updates_a_complete_checksum() -> None:
    """IP6_ECN_set_ce() folds the traffic-class change into skb->csum (CHECKSUM_COMPLETE)."""
    buf = bytearray(40)
    buf[0], buf[1] = 0x60 | 0x0A, 0x00 | (E0 << 4)  # traffic class 0xA0 | ECT(0)
    skb = SkBuff(buf, 0, 40)
    skb.network_header = 0
    skb.protocol = 0x86DD
    skb.ip_summed = CHECKSUM_COMPLETE
    skb.csum = csum_partial(buf, 0, 40, 0)
    assert IP_ECN_decapsulate(CE, skb) == 0
    assert (skb.buf[1] >> 4) & 3 == CE
    assert csum_fold(skb.csum) == csum_fold(csum_partial(skb.buf, 0, 40, 0))
