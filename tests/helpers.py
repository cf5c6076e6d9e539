"""Small helpers shared by the tests (importable as ``helpers``: tests/ is on pythonpath)."""

from __future__ import annotations

import netstack
from netstack.ipv4 import ipv4_of
from netstack.wire.ipv4 import aton

# Hosts of tests that count every frame, counter or drop of an IPv4 exchange:
# Linux would also send IPv6 DAD and router solicitations on every link and
# drop the neighbours' solicited-node multicast it has not joined, so these
# hosts boot with IPv6 off (``sysctl net.ipv6.conf.all.disable_ipv6=1``).
IPV4_ONLY: dict[str, str | int] = {"net.ipv6.conf.all.disable_ipv6": 1}


def add_addr(host: netstack.Host, dev: str, cidr: str) -> None:
    """``ip addr add CIDR dev DEV`` through the kernel API."""
    addr, _, plen = cidr.partition("/")
    ipv4_of(host.net).add_address(host.dev(dev), aton(addr), int(plen or 32))
