"""The RX-skb ledger the fuzzers use tells consumed, dropped, queued and lost apart."""

from __future__ import annotations

import pytest
import trio
import trio.lowlevel

from netstack.core.skbuff import DropReason, SkBuff, consume_skb, kfree_skb
from netstack.host import Lab
from netstack.testing.ledger import SkbLedger


@pytest.mark.pure_python_layout(
    "SkbLedger replaces SkBuff.__init__ and tags skbs with an undeclared attribute"
)
async def test_the_ledger_sorts_skbs(lab: Lab, autojump_clock: object) -> None:
    h = lab.add_host("h")
    h.ip("link add d0 type dummy")
    dev = h.dev("d0")
    held: list[SkBuff] = []
    with SkbLedger() as ledger:
        for _ in range(4):
            skb = SkBuff(bytearray(64), 0, 64)
            skb.dev = dev
            held.append(skb)
        consume_skb(held[0])
        kfree_skb(held[1], DropReason.DUP_FRAG)
        queued = held[2]  # something still holds it
        SkBuff(bytearray(64), 0, 64)  # created and forgotten: lost
        del held[3]  # forgotten too
        del skb
    await trio.lowlevel.checkpoint()
    audit = ledger.audit()
    assert audit.consumed == 1
    assert audit.dropped == {"DUP_FRAG": 1}
    assert audit.queued == 1 and queued in held
    assert len(audit.lost) == 2
