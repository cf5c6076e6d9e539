"""Shared fixtures come from the netstack pytest plugin (netstack.testing.plugin).

``lab`` (an empty lab on the autojump clock, skb poisoning on, pcaps of
failing tests), ``two_hosts``, ``routed_hosts``, ``gre_sites`` and
``topology`` are registered by the ``pytest11`` entry point when netstack is
installed; this file documents that, sets the hypothesis profile, and gives
``term``: a shell session on ``routed_hosts`` (h1 — router — h2) that records
what the commands print, for the tests of the tools at the prompt.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio
import trio.testing
from helpers import Term
from hypothesis import settings

import netstack
from netstack.labs.session import Session
from netstack.testing import routed_hosts

# Every property test is deterministic: the same examples on every run and
# machine, no example database carried between runs.
settings.register_profile("netstack", derandomize=True, database=None, deadline=None)
settings.load_profile("netstack")


@pytest.fixture
async def term(lab: netstack.Lab) -> AsyncIterator[Term]:
    routed_hosts(lab)  # h1 10.0.1.1 — router — h2 10.0.2.2
    lines: list[str] = []
    async with trio.open_nursery() as nursery:
        clock = trio.lowlevel.current_clock()
        assert isinstance(clock, trio.testing.MockClock)
        session = Session(lab, nursery, out=lines.append, err=lines.append, clock=clock)
        yield Term(session, lines)
        nursery.cancel_scope.cancel()
    clock.autojump_threshold = 0  # the lab's teardown runs on the autojump clock again
