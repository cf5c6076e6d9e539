"""``PrefixBuckets``: routes by prefix length and masked destination, for both FIBs.

Theory of operation: the kernel keeps IPv4 routes in an LC-trie (fib_trie.c)
and IPv6 routes in a radix tree (ip6_fib.c). The emulator stands both in
with one structure: a dict per prefix length in use, from the masked
destination to the bucket (a list) of entries for that prefix, and the
lengths in use longest first (``lens``), so a longest-prefix match is one
dict probe per length. :class:`~netstack.ipv4.fib.FibTable` and
:class:`~netstack.ipv6.route.Fib6Table` are built on it; each keeps its own
lookup (the masks and the checks of an entry are the family's) and its own
order within a bucket.

This is an emulator structure, not a kernel one: it has no ``Kernel:`` line.
"""

from __future__ import annotations

from typing import Generic, TypeVar

__all__ = ["PrefixBuckets"]

E = TypeVar("E")


class PrefixBuckets(Generic[E]):
    """Entries by prefix length, then masked destination (longest lengths first)."""

    def __init__(self) -> None:
        self.by_len: dict[int, dict[int, list[E]]] = {}
        self.lens: list[int] = []  # the prefix lengths in use, longest first

    def bucket(self, dst: int, dst_len: int, create: bool = False) -> list[E] | None:
        """The entries of prefix *dst*/*dst_len* (created empty if *create*), or None."""
        level = self.by_len.get(dst_len)
        if level is None:
            if not create:
                return None
            level = self.by_len[dst_len] = {}
            self.lens = sorted(self.by_len, reverse=True)
        bucket = level.get(dst)
        if bucket is None and create:
            bucket = level[dst] = []
        return bucket

    def prune(self, dst: int, dst_len: int) -> None:
        """Forget the bucket of *dst*/*dst_len* if it is empty (and its length if unused)."""
        level = self.by_len.get(dst_len)
        if level is not None and not level.get(dst, True):
            del level[dst]
            if not level:
                del self.by_len[dst_len]
                self.lens = sorted(self.by_len, reverse=True)

    def entries(self) -> list[E]:
        """Every entry, bucket by bucket (in no route order)."""
        return [e for level in self.by_len.values() for bucket in level.values() for e in bucket]
