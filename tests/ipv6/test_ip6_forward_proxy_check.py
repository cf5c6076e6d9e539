"""``ip6_forward_proxy_check`` on any packet: deliver NDP, refuse link-local, else forward.

For a packet to a proxied address ``ip6_forward`` asks it: 1 for an NDP
message (router/neighbour solicitation or advertisement, redirect), found
past any extension headers; -1 for a link-local destination (the sender is
told, through the route's ``link_failure``); 0 otherwise — and 0 whenever the
header chain or the ICMPv6 type byte is cut short (or the chain ends in "no
next header"). Hypothesis feeds it random chains of hop-by-hop, routing,
destination, fragment and authentication headers, cut anywhere, and checks
it against a model of the kernel function.
"""

from __future__ import annotations

import socket
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netstack.core.skbuff import SkBuff
from netstack.ipv6.ip6_input import ip6_forward_proxy_check

NDP = (133, 134, 135, 136, 137)
EXT = {0: "hop", 43: "routing", 60: "dest", 44: "fragment", 51: "auth"}


class _Dst:
    def __init__(self) -> None:
        self.failures = 0

    def link_failure(self, skb: SkBuff) -> None:
        self.failures += 1


def packet(chain: list[tuple[int, int]], last: int, payload: bytes, dst: str) -> bytes:
    """An IPv6 header, the extension headers of *chain* ((type, 8-octet units)),
    then protocol *last* with *payload*."""
    types = [t for t, _ in chain] + [last]
    body = b""
    for (t, units), nxt in zip(chain, types[1:], strict=True):
        if t == 44:  # fragment: 8 bytes, offset 0
            body += struct.pack("!BBHI", nxt, 0, 0, 1)
        elif t == 51:  # authentication: (len + 2) * 4 bytes
            body += bytes([nxt, 2 * units]) + bytes(8 * units + 6)
        else:
            body += bytes([nxt, units - 1]) + bytes(8 * units - 2)
    body += payload
    src = socket.inet_pton(socket.AF_INET6, "2001:db8:1::1")
    daddr = socket.inet_pton(socket.AF_INET6, dst)
    return struct.pack("!IHBB", 0x60000000, len(body), types[0], 64) + src + daddr + body


def check(raw: bytes) -> tuple[int, int]:
    buf = bytearray(16) + bytearray(raw)
    skb = SkBuff(buf, 16, len(buf))
    skb.network_header = 16
    dst = _Dst()
    skb.dst = dst  # type: ignore[assignment]
    return ip6_forward_proxy_check(skb), dst.failures


@pytest.mark.pure_python_layout(
    "passes a stand-in dst, which the compiled ip6_forward_proxy_check refuses"
)
@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    chain=st.lists(
        st.tuples(st.sampled_from(sorted(EXT)), st.integers(1, 3)), min_size=0, max_size=3
    ),
    last=st.sampled_from([58, 58, 58, 17, 6, 59]),
    icmp_type=st.sampled_from([*NDP, 128, 129, 1, 2, 3]),
    dst=st.sampled_from(["2001:db8:1::b", "fe80::b"]),
    cut=st.one_of(st.none(), st.integers(0, 80)),
)
def test_proxy_check_matches_the_kernels_rules(
    chain: list[tuple[int, int]], last: int, icmp_type: int, dst: str, cut: int | None
) -> None:
    payload = bytes([icmp_type, 0, 0, 0]) + bytes(4)
    raw = packet(chain, last, payload, dst)
    if cut is not None:
        raw = raw[: 40 + cut]
    verdict, failures = check(raw)
    # the model: walk the chain as ipv6_skip_exthdr does (59, "no next header", fails it)
    offset, nexthdr, ok = 40, raw[6], True
    for t, _units in chain:
        if nexthdr == 59 or offset + 2 > len(raw):
            ok = False
            break
        if t == 44:
            length = 8
        elif t == 51:
            length = (raw[offset + 1] + 2) * 4
        else:
            length = (raw[offset + 1] + 1) * 8
        nexthdr = raw[offset]
        offset += length
    if ok and (offset > len(raw) or nexthdr == 59):
        ok = False  # cut short, or "no next header" (an extension header to the kernel)
    if not ok:
        assert (verdict, failures) == (0, 0)
        return
    if nexthdr == 58 and offset + 1 > len(raw):
        assert (verdict, failures) == (0, 0)  # pskb_may_pull() of the type byte fails
    elif nexthdr == 58 and raw[offset] in NDP:
        assert (verdict, failures) == (1, 0)
    elif dst == "fe80::b":
        assert (verdict, failures) == (-1, 1)
    else:
        assert (verdict, failures) == (0, 0)


@pytest.mark.pure_python_layout(
    "passes a stand-in dst, which the compiled ip6_forward_proxy_check refuses"
)
def test_the_plain_cases() -> None:
    ns = bytes([135, 0, 0, 0]) + bytes(20)
    echo = bytes([128, 0, 0, 0]) + bytes(4)
    assert check(packet([], 58, ns, "2001:db8:1::b")) == (1, 0)
    assert check(packet([], 58, ns, "fe80::b")) == (1, 0)  # NDP first: delivered
    assert check(packet([(60, 1)], 58, ns, "2001:db8:1::b")) == (1, 0)
    assert check(packet([], 58, echo, "2001:db8:1::b")) == (0, 0)
    assert check(packet([], 58, echo, "fe80::b")) == (-1, 1)
    assert check(packet([], 17, bytes(8), "fe80::b")) == (-1, 1)
    assert check(packet([(0, 1)], 58, ns, "fe80::b")[:41]) == (0, 0)  # cut in the header
