"""The builders of netstack.testing.builders: what each variant configures."""

from __future__ import annotations

import trio

from netstack.host import Lab
from netstack.testing import builders


def global_addresses(out: str) -> list[str]:
    """The ``inet``/``inet6`` lines of ``ip addr show`` but the link-local one, stripped."""
    return [
        line.strip()
        for line in out.splitlines()
        if line.strip().startswith("inet") and "scope link" not in line
    ]


async def test_pair_families_and_nodad(lab: Lab, autojump_clock: trio.testing.MockClock) -> None:
    a, b = builders.pair(lab, family="dual", ipv4_only=False, nodad=True)
    assert global_addresses(a.ip("addr show dev eth0")) == [
        "inet 10.0.0.1/24 scope global eth0",
        "inet6 2001:db8::1/64 scope global nodad",
    ]
    assert global_addresses(b.ip("addr show dev eth0")) == [
        "inet 10.0.0.2/24 scope global eth0",
        "inet6 2001:db8::2/64 scope global nodad",
    ]


async def test_pair_ipv6_addresses_go_through_dad(
    lab: Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, _ = builders.pair(lab, family=6, ipv4_only=False)
    assert global_addresses(a.ip("addr show dev eth0")) == [
        "inet6 2001:db8::1/64 scope global tentative"
    ]
