"""``skb_gro_checksum_validate``: the GRO-time L4 checksum check, case by case.

The check (``__skb_gro_checksum_validate`` with ``csum_add``/``csum_fold`` and
``__skb_incr_checksum_unnecessary`` written in) on a UDP datagram built by
dpkt: a good or corrupted payload, with the device's checksum state NONE,
COMPLETE (right or stale) or UNNECESSARY.
"""

from __future__ import annotations

import dpkt
import pytest

from netstack.core.skbuff import (
    CHECKSUM_COMPLETE,
    CHECKSUM_NONE,
    CHECKSUM_PARTIAL,
    CHECKSUM_UNNECESSARY,
    SkBuff,
)
from netstack.gro.core import NapiGroCb, skb_gro_checksum_validate
from netstack.ipv4.offload import inet_gro_compute_pseudo
from netstack.wire.checksum import csum_partial


def datagram(*, corrupt: bool = False) -> tuple[SkBuff, int]:
    ip = dpkt.ip.IP(
        src=bytes([10, 0, 0, 1]),
        dst=bytes([10, 0, 0, 2]),
        p=17,
        ttl=64,
        data=dpkt.udp.UDP(sport=4000, dport=9000, data=b"payload of a datagram" * 3),
    )
    ip.data.ulen = len(bytes(ip.data))
    raw = bytearray(bytes(ip))
    if corrupt:
        raw[-1] ^= 0x40
    skb = SkBuff(raw, 0, len(raw))
    skb.network_header = 0
    skb.cb = NapiGroCb(20)
    return skb, inet_gro_compute_pseudo(skb, 17)


@pytest.mark.parametrize("corrupt", [False, True])
def test_summed_in_software_when_the_device_did_not(corrupt: bool) -> None:
    skb, pseudo = datagram(corrupt=corrupt)
    assert skb_gro_checksum_validate(skb, pseudo) is not corrupt
    cb = skb.cb
    if corrupt:  # left to udp_rcv, which counts it
        assert (skb.ip_summed, cb.csum_valid) == (CHECKSUM_NONE, 0)
    else:
        assert (skb.ip_summed, skb.csum_level) == (CHECKSUM_UNNECESSARY, 0)
        assert (cb.csum_valid, cb.csum) == (1, csum_partial(skb.buf, 20, skb.tail))


@pytest.mark.parametrize("corrupt", [False, True])
def test_a_complete_checksum_is_folded_not_summed_again(corrupt: bool) -> None:
    skb, pseudo = datagram(corrupt=corrupt)
    skb.ip_summed = CHECKSUM_COMPLETE
    cb = skb.cb
    cb.csum, cb.csum_valid = csum_partial(skb.buf, 20, skb.tail), 1
    assert skb_gro_checksum_validate(skb, pseudo) is not corrupt
    assert skb.ip_summed == CHECKSUM_COMPLETE  # only NONE becomes UNNECESSARY


def test_a_stale_complete_checksum_falls_back_to_summing() -> None:
    skb, pseudo = datagram()
    skb.ip_summed = CHECKSUM_COMPLETE
    cb = skb.cb
    cb.csum, cb.csum_valid = 0x1234, 1
    assert skb_gro_checksum_validate(skb, pseudo)
    assert cb.csum == csum_partial(skb.buf, 20, skb.tail)


def test_a_verified_level_is_spent_and_a_partial_checksum_needs_nothing() -> None:
    skb, _ = datagram(corrupt=True)
    skb.ip_summed = CHECKSUM_UNNECESSARY
    skb.cb.csum_cnt = 1
    assert skb_gro_checksum_validate(skb, 0) and skb.cb.csum_cnt == 0
    skb, _ = datagram(corrupt=True)
    skb.ip_summed, skb.csum_start = CHECKSUM_PARTIAL, 20
    assert skb_gro_checksum_validate(skb, 0) and skb.ip_summed == CHECKSUM_PARTIAL


def test_a_verified_level_is_added_when_one_more_is_checked() -> None:
    skb, pseudo = datagram()
    skb.ip_summed, skb.csum_level = CHECKSUM_UNNECESSARY, 0
    assert skb_gro_checksum_validate(skb, pseudo)  # csum_cnt 0: summed, one level more
    assert (skb.ip_summed, skb.csum_level) == (CHECKSUM_UNNECESSARY, 1)
