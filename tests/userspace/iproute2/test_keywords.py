"""KeywordTable.find: the precomputed word map answers what walking the chain answers."""

from __future__ import annotations

from typing import Any

import pytest

from netstack.userspace.iproute2.ip import ip_addr, ip_route
from netstack.userspace.iproute2.keywords import KeywordTable
from netstack.userspace.iproute2.tc import q_netem

TABLES: list[KeywordTable[Any, Any]] = [
    ip_addr._IPADDR_MODIFY,
    ip_route._IPROUTE_SELECTOR,
    ip_route._IPROUTE_MODIFY,
    ip_route._IPROUTE_GET,
    q_netem._NETEM,
]


def walk(table: KeywordTable[Any, Any], word: str) -> Any:
    """iproute2's ``if … else if …`` chain, in order: the first keyword that accepts."""
    for kw in table.keywords:
        if kw.accepts(word):
            return kw.parse
    return None


@pytest.mark.parametrize("table", TABLES, ids=["addr", "route-sel", "route", "get", "netem"])
def test_find_is_the_first_keyword_in_order(table: KeywordTable[Any, Any]) -> None:
    words = {s.rstrip("*")[:end] for kw in table.keywords for s in kw.spellings for end in range(8)}
    words |= {"", "10.0.0.1/24", "dev0", "x", "metricx", "srcs", "default"}
    for word in sorted(words):
        assert table.find(word) is walk(table, word), word


def test_an_abbreviation_goes_to_the_earlier_keyword() -> None:
    table: KeywordTable[list[str], Any] = KeywordTable()
    table.add("preference*", parse=lambda r, a, w: r.append("pref"))
    table.add("preferred_lft", "prefix*", parse=lambda r, a, w: r.append("lft"))
    table.add("src", parse=lambda r, a, w: r.append("src"))
    got: list[str] = []
    for word in ("pre", "preferred_lft", "prefi", "src", "sr"):
        parse = table.find(word)
        if parse is not None:
            parse(got, None, word)
    assert got == ["pref", "lft", "lft", "src"]
