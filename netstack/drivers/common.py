"""Helpers shared by drivers: random MACs. Kernel: include/linux/etherdevice.h."""

from __future__ import annotations

import random

from netstack.sites import kernel


@kernel("eth_random_addr")
def eth_random_addr(rng: random.Random) -> bytes:
    """A random locally administered unicast MAC. Kernel: eth_random_addr()."""
    b = bytearray(rng.getrandbits(8) for _ in range(6))
    b[0] = (b[0] & 0xFE) | 0x02
    return bytes(b)
