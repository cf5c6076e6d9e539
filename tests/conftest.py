"""Shared fixtures: labs on the autojump clock, addressed through the kernel API."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio.testing
from helpers import add_addr
from hypothesis import settings

import netstack

# Every property test is deterministic: the same examples on every run and
# machine, no example database carried between runs.
settings.register_profile("netstack", derandomize=True, database=None, deadline=None)
settings.load_profile("netstack")


@pytest.fixture
async def lab() -> AsyncIterator[netstack.Lab]:
    """An empty lab with skb poisoning on.

    The test itself must request ``autojump_clock`` (pytest-trio gives a
    clock to ``trio.run`` only when the test function takes it).
    """
    if not isinstance(trio.lowlevel.current_clock(), trio.testing.MockClock):
        raise RuntimeError("tests using the lab fixture must also take autojump_clock")
    async with netstack.open_lab(debug_skb=True) as lab:
        yield lab


@pytest.fixture
async def two_hosts(lab: netstack.Lab) -> tuple[netstack.Host, netstack.Host]:
    """a (10.0.0.1/24) and b (10.0.0.2/24) joined by veth."""
    a, b = lab.add_host("a"), lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0")
    add_addr(a, "eth0", "10.0.0.1/24")
    add_addr(b, "eth0", "10.0.0.2/24")
    return a, b
