"""Fixtures for the ``ip`` front-end tests (``lab`` comes from tests/conftest.py)."""

from __future__ import annotations

import pytest

from netstack.host import Host, Lab


@pytest.fixture
async def pair(lab: Lab) -> tuple[Host, Host]:
    """Hosts ``a`` and ``b`` joined by a veth pair ``a:eth0`` — ``b:eth0`` (both up, no address)."""
    a = lab.add_host("a")
    b = lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0")
    return a, b
