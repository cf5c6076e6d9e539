"""The fragments of one datagram under reassembly, as runs: O(log n) insertion.

Theory of operation: the kernel keeps a queue's fragments in an rb-tree of
*runs* — maximal chains of fragments each starting where the previous one
ended. A fragment that starts exactly at the end of the last fragment joins
the last run (the common, in-order case: O(1)); one beyond it starts a new
run; any other is placed by a binary search over the runs, where it is a
duplicate if it lies wholly inside one run (dropped alone) and an overlap
otherwise (the whole datagram is dropped: RFC 5722, and IPv4 since 4.19).
A fragment placed by the search is a run of its own even when it touches a
neighbour, as in the kernel.

Here the runs are a list sorted by start offset, searched with ``bisect``: the
same decisions as the rb-tree walk (runs never overlap, so the run before
the fragment and the one after are the only candidates), O(log n)
comparisons per fragment where a sorted list of fragments re-sorted at each
insertion was O(n log n), and crafted datagrams of thousands of fragments
cost milliseconds instead of seconds.

Kernel: net/ipv4/inet_fragment.c (inet_frag_queue_insert, fragrun_*),
include/net/inet_frag.h.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from typing import TYPE_CHECKING, Final

from netstack.sites import kernel

if TYPE_CHECKING:
    from netstack.core.skbuff import SkBuff

__all__ = ["IPFRAG_DUP", "IPFRAG_OK", "IPFRAG_OVERLAP", "FragRun", "FragRuns"]

IPFRAG_OK: Final = 0
IPFRAG_DUP: Final = 1
IPFRAG_OVERLAP: Final = 2


class FragRun:
    """Contiguous fragments: ``frags`` are ``(offset, end, skb)`` in order."""

    __slots__ = ("end", "frags", "start")

    def __init__(self, offset: int, end: int, skb: SkBuff) -> None:
        self.start = offset
        self.end = end  # FRAG_CB(head)->ip_defrag_offset + frag_run_len
        self.frags: list[tuple[int, int, SkBuff]] = [(offset, end, skb)]


class FragRuns:
    """The runs of one queue (kernel: ``rb_fragments`` + ``fragments_tail``)."""

    __slots__ = ("runs", "starts", "tail_end")

    def __init__(self) -> None:
        self.runs: list[FragRun] = []
        self.starts: list[int] = []  # runs[i].start, for bisect
        self.tail_end = 0  # end of fragments_tail (the last fragment of the last run)

    def __len__(self) -> int:
        return sum(len(r.frags) for r in self.runs)

    def __bool__(self) -> bool:
        return bool(self.runs)

    def __iter__(self) -> Iterator[tuple[int, int, SkBuff]]:
        """Every fragment in offset order."""
        for run in self.runs:
            yield from run.frags

    def head(self) -> tuple[int, int, SkBuff] | None:
        """The fragment of lowest offset."""
        return self.runs[0].frags[0] if self.runs else None

    def clear(self) -> None:
        self.runs = []
        self.starts = []
        self.tail_end = 0

    @kernel("net/ipv4/inet_fragment.c", "inet_frag_queue_insert")
    def insert(self, skb: SkBuff, offset: int, end: int) -> int:
        """Place a fragment: IPFRAG_OK, IPFRAG_DUP or IPFRAG_OVERLAP (not placed).

        Kernel: net/ipv4/inet_fragment.c, inet_frag_queue_insert().
        """
        runs = self.runs
        if not runs:  # first fragment: fragrun_create()
            runs.append(FragRun(offset, end, skb))
            self.starts.append(offset)
            self.tail_end = end
            return IPFRAG_OK
        last_end = self.tail_end
        if last_end < end:
            # the common case: the fragment goes to the end
            if offset < last_end:
                return IPFRAG_OVERLAP
            if offset == last_end:  # fragrun_append_to_last()
                run = runs[-1]
                run.frags.append((offset, end, skb))
                run.end = end
            else:
                runs.append(FragRun(offset, end, skb))
                self.starts.append(offset)
            self.tail_end = end
            return IPFRAG_OK
        # binary search: it may become the first fragment, never the last
        starts = self.starts
        i = bisect_right(starts, offset) - 1  # the run starting at or before offset
        if i >= 0:
            prev = runs[i]
            if offset < prev.end:
                if end <= prev.end:
                    return IPFRAG_DUP
                return IPFRAG_OVERLAP
        j = i + 1
        if j < len(runs) and end > starts[j]:
            return IPFRAG_OVERLAP
        runs.insert(j, FragRun(offset, end, skb))
        starts.insert(j, offset)
        return IPFRAG_OK
