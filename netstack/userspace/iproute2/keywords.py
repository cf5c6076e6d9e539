"""Keyword tables: iproute2's long argv loops as data.

Theory of operation: iproute2 parses a command line with one loop per
command, a chain of tests on the current word::

    while (argc > 0) {
        if (strcmp(*argv, "src") == 0) { NEXT_ARG(); … }
        else if (matches(*argv, "metric") == 0 || …) { NEXT_ARG(); … }
        …
        else { /* the positional argument: a prefix, a device… */ }
        argc--; argv++;
    }

A :class:`KeywordTable` is that chain as an ordered table of spellings and
small parsers. Each :class:`Keyword` lists its spellings: ``"src"`` must be
typed whole (``strcmp``), ``"metric*"`` may be abbreviated to any non-empty
prefix (``matches``). :meth:`KeywordTable.find` walks the table in order, so
an abbreviation resolves to the first keyword the C tests first (``pre`` is
``preference`` in ``ip address``, not ``preferred_lft``) and a parser never
has to know about its neighbours. A parser gets the request being built, the
argv cursor (positioned after the keyword) and the word as typed; it takes
the keyword's values, checks them and raises iproute2's own error text
(``invarg``, ``duparg``…). The word no keyword claims goes to the loop's
*fallback*, iproute2's final ``else``.

The tables also answer what the command accepts (:meth:`KeywordTable.names`),
which tab completion and the docs can list.

iproute2: lib/utils.c, matches(); the loops in ip/ipaddress.c, ip/iproute.c,
ip/iplink.c, tc/q_netem.c, tc/q_tbf.c.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

import attrs

__all__ = ["Cursor", "Keyword", "KeywordTable", "parse_keywords"]

R = TypeVar("R")
C = TypeVar("C", bound="Cursor")


class Cursor(Protocol):
    """An argv being consumed left to right (``ip``'s :class:`~.ip.ip_common.Args`)."""

    def __bool__(self) -> bool: ...

    def take(self) -> str: ...


Parser = Callable[[R, C, str], None]
"""``parse(request, args, word)``: consume the keyword's values from *args* into *request*."""


@attrs.frozen
class Keyword(Generic[R, C]):
    """One branch of the chain: the spellings it answers to and its parser.

    Attributes:
        spellings: ``"word"`` must be typed whole, ``"word*"`` may be any
            non-empty prefix of *word* (iproute2's ``matches``).
        parse: ``parse(request, args, word)``.
    """

    spellings: tuple[str, ...]
    parse: Parser[R, C]

    def accepts(self, word: str) -> bool:
        """True if *word* is one of this keyword's spellings, or an allowed abbreviation."""
        for s in self.spellings:
            if s[-1] == "*":
                if word and s[:-1].startswith(word):
                    return True
            elif word == s:
                return True
        return False


class KeywordTable(Generic[R, C]):
    """An ordered chain of keywords (see the module docstring).

    Build it with :meth:`add` (or the :meth:`keyword` decorator) in the order
    iproute2 tests the words; that order decides which keyword an abbreviation
    means.
    """

    def __init__(self) -> None:
        self.keywords: list[Keyword[R, C]] = []
        #: every word some keyword accepts -> the first such keyword's parser (what
        #: walking the chain finds, precomputed: a lab runs the same words by the thousand)
        self._words: dict[str, Parser[R, C]] = {}

    def add(self, *spellings: str, parse: Parser[R, C]) -> None:
        """Append a keyword answering to *spellings* (``"x"`` whole, ``"x*"`` abbreviable)."""
        self.keywords.append(Keyword(spellings, parse))
        for s in spellings:
            if s[-1] == "*":
                for end in range(1, len(s)):
                    self._words.setdefault(s[:end], parse)  # an earlier keyword keeps it
            else:
                self._words.setdefault(s, parse)

    def keyword(self, *spellings: str) -> Callable[[Parser[R, C]], Parser[R, C]]:
        """Decorator form of :meth:`add`."""

        def register(parse: Parser[R, C]) -> Parser[R, C]:
            self.add(*spellings, parse=parse)
            return parse

        return register

    def find(self, word: str) -> Parser[R, C] | None:
        """The parser of the first keyword that accepts *word*, or None (the fallback's turn)."""
        return self._words.get(word)

    def names(self) -> list[str]:
        """Every keyword's spellings as typed in full (for completion and help)."""
        return [s.rstrip("*") for kw in self.keywords for s in kw.spellings]


def parse_keywords(
    table: KeywordTable[R, C],
    request: R,
    args: C,
    fallback: Parser[R, C],
) -> R:
    """Run iproute2's ``while (argc > 0) { if … else if … else … }`` loop over *args*.

    Each word a keyword accepts goes to that keyword's parser; any other word
    to *fallback* (which may raise, or take it as the positional argument).
    Returns *request*.
    """
    while args:
        word = args.take()
        parse = table.find(word)
        if parse is None:
            fallback(request, args, word)
        else:
            parse(request, args, word)
    return request
