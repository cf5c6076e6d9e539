"""Small helpers shared by the tests (importable as ``helpers``: tests/ is on pythonpath)."""

from __future__ import annotations

import netstack
from netstack.ipv4 import ipv4_of
from netstack.wire.ipv4 import aton


def add_addr(host: netstack.Host, dev: str, cidr: str) -> None:
    """``ip addr add CIDR dev DEV`` through the kernel API."""
    addr, _, plen = cidr.partition("/")
    ipv4_of(host.net).add_address(host.dev(dev), aton(addr), int(plen or 32))
