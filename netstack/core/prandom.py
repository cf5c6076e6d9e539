"""The kernel's seedable pseudo-random generator (``prandom_u32_state``).

Theory of operation: a combined Tausworthe generator (L'Ecuyer's lfsr113,
period about 2^113) over four 32-bit words. ``prandom_seed_state`` derives
the four words from one 64-bit seed, so the same seed gives the same sequence
as in Linux — netem draws its loss, duplication, reordering and jitter
decisions from it, which is what makes ``netem … seed N`` reproducible there
and here.

Kernel: lib/random32.c (prandom_u32_state), include/linux/prandom.h
(prandom_seed_state).
"""

from __future__ import annotations

from typing import Final

from netstack.sites import kernel

__all__ = ["RndState"]

_M32: Final = 0xFFFFFFFF


def _seed(x: int, m: int) -> int:
    return x + m if x < m else x


class RndState:
    """``struct rnd_state``: the four Tausworthe components."""

    __slots__ = ("s1", "s2", "s3", "s4")

    def __init__(self, seed: int = 0) -> None:
        self.s1 = self.s2 = self.s3 = self.s4 = 0
        self.seed_state(seed)

    @kernel("prandom_seed_state")
    def seed_state(self, seed: int) -> None:
        """Set the state from a 64-bit seed. Kernel: prandom_seed_state()."""
        seed &= (1 << 64) - 1
        i = ((seed >> 32) ^ (seed << 10) ^ seed) & _M32
        self.s1 = _seed(i, 2)
        self.s2 = _seed(i, 8)
        self.s3 = _seed(i, 16)
        self.s4 = _seed(i, 128)

    @kernel("prandom_u32_state")
    def u32(self) -> int:
        """The next 32-bit value. Kernel: prandom_u32_state()."""
        s1, s2, s3, s4 = self.s1, self.s2, self.s3, self.s4
        s1 = (((s1 & 4294967294) << 18) & _M32) ^ ((((s1 << 6) & _M32) ^ s1) >> 13)
        s2 = (((s2 & 4294967288) << 2) & _M32) ^ ((((s2 << 2) & _M32) ^ s2) >> 27)
        s3 = (((s3 & 4294967280) << 7) & _M32) ^ ((((s3 << 13) & _M32) ^ s3) >> 21)
        s4 = (((s4 & 4294967168) << 13) & _M32) ^ ((((s4 << 3) & _M32) ^ s4) >> 12)
        self.s1, self.s2, self.s3, self.s4 = s1, s2, s3, s4
        return s1 ^ s2 ^ s3 ^ s4
