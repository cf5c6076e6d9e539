"""RX-skb accounting for fuzzers: every skb is consumed, dropped with a reason, or still queued.

Theory of operation: while a :class:`SkbLedger` is open, every
:class:`~netstack.core.skbuff.SkBuff` created (by a driver, a clone, a copy,
reassembly, a reply) is recorded, and every drop is noted with its reason
(``Net.note_drop``, which ``kfree_skb`` calls). :meth:`SkbLedger.audit`
sorts the recorded skbs into

* **consumed** — freed with ``consume_skb`` (delivered, used, sent);
* **dropped** — freed with ``kfree_skb(skb, reason)``, by reason;
* **queued** — not freed, and something other than the ledger still holds
  it (a socket, a reassembly or out-of-order queue, a qdisc, a neighbour's
  ``arp_queue``, a timer);
* **lost** — not freed and held by nothing but the ledger: an skb the stack
  forgot without a reason. A correct stack has none.

The ledger holds strong references, so it is for tests and short fuzz runs.
"""

from __future__ import annotations

import collections
import sys
from types import TracebackType
from typing import Any

from netstack.core.net import Net
from netstack.core.skbuff import DropReason, SkBuff

__all__ = ["LedgerAudit", "SkbLedger"]


class LedgerAudit:
    """What became of the skbs a ledger saw."""

    __slots__ = ("consumed", "dropped", "lost", "queued")

    def __init__(self) -> None:
        self.consumed = 0
        self.dropped: collections.Counter[str] = collections.Counter()
        self.queued = 0
        self.lost: list[SkBuff] = []

    def __repr__(self) -> str:
        return (
            f"<LedgerAudit consumed={self.consumed} dropped={dict(self.dropped)} "
            f"queued={self.queued} lost={len(self.lost)}>"
        )


class SkbLedger:
    """Record the skbs created and dropped while open (a context manager)."""

    def __init__(self) -> None:
        self.skbs: list[SkBuff] = []
        self._init: Any = None
        self._note: Any = None

    def __enter__(self) -> SkbLedger:
        init = SkBuff.__init__
        note = Net.note_drop
        skbs = self.skbs

        def recording_init(skb: SkBuff, buf: bytearray, data: int, tail: int) -> None:
            init(skb, buf, data, tail)
            skbs.append(skb)

        def recording_note(net: Net, skb: SkBuff, reason: DropReason) -> None:
            skb._ledger_reason = reason  # type: ignore[attr-defined]
            note(net, skb, reason)

        self._init, self._note = init, note
        SkBuff.__init__ = recording_init  # type: ignore[method-assign,assignment]
        Net.note_drop = recording_note  # type: ignore[method-assign,assignment]
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        SkBuff.__init__ = self._init  # type: ignore[method-assign]
        Net.note_drop = self._note  # type: ignore[method-assign]

    def audit(self) -> LedgerAudit:
        """Sort every skb seen so far (call with nothing else referring to them)."""
        out = LedgerAudit()
        # references a lone skb has here: the ledger's list, the loop variable, and
        # getrefcount's argument
        alone = 3
        for skb in self.skbs:
            if skb._freed:
                reason: DropReason | None = getattr(skb, "_ledger_reason", None)
                if reason is None:
                    out.consumed += 1
                else:
                    out.dropped[reason.name] += 1
            elif sys.getrefcount(skb) > alone:
                out.queued += 1
            else:
                out.lost.append(skb)
        return out
