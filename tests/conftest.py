"""Shared fixtures come from the netstack pytest plugin (netstack.testing.plugin).

``lab`` (an empty lab on the autojump clock, skb poisoning on, pcaps of
failing tests), ``two_hosts``, ``routed_hosts``, ``gre_sites`` and
``topology`` are registered by the ``pytest11`` entry point when netstack is
installed; this file documents that, sets the hypothesis profile, and gives
``term``: a shell session on ``routed_hosts`` (h1 — router — h2) that records
what the commands print, for the tests of the tools at the prompt.

The suite also runs against the optional mypyc build (``scripts/build_compiled.py``,
``scripts/check --compiled``): a test marked ``pure_python_layout("why")`` inspects
or patches the pure-Python implementation (``__slots__``, a class attribute its
compiled callers do not read) and is skipped when ``netstack`` is compiled.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio
import trio.testing
from helpers import Term
from hypothesis import settings

import netstack
import netstack.core.skbuff
from netstack.labs.session import Session
from netstack.testing import routed_hosts

# Every property test is deterministic: the same examples on every run and
# machine, no example database carried between runs.
settings.register_profile("netstack", derandomize=True, database=None, deadline=None)
settings.load_profile("netstack")

COMPILED = not netstack.core.skbuff.__file__.endswith(".py")
"""Whether this run imports the mypyc build (``core/skbuff`` is one of its modules)."""


def pytest_report_header() -> str:
    build = "compiled (mypyc)" if COMPILED else "pure Python"
    return f"netstack: {build}, {netstack.core.skbuff.__file__}"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Against the compiled build, skip the tests of the pure-Python layout."""
    if not COMPILED:
        return
    for item in items:
        marker = item.get_closest_marker("pure_python_layout")
        if marker is not None:
            why = marker.args[0] if marker.args else "inspects the pure-Python layout"
            item.add_marker(pytest.mark.skip(reason=f"compiled build: {why}"))


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
