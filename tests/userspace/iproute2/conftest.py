"""Fixtures for the ``ip`` front-end tests (``lab`` comes from tests/conftest.py)."""

from __future__ import annotations

import pytest

from netstack.host import Host, Lab
from netstack.testing import builders


@pytest.fixture
async def pair(lab: Lab) -> tuple[Host, Host]:
    """Hosts ``a`` and ``b`` joined by a veth pair ``a:eth0`` — ``b:eth0`` (both up, no address).

    They boot with IPv6 disabled, so listings are the IPv4 ones these tests
    compare byte for byte (``ip -6`` is tested in tests/ipv6/).
    """
    return builders.pair(lab, addresses=False)
