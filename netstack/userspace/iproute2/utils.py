"""The global options every iproute2 tool shares, and its stdout.

Theory of operation: iproute2 keeps one set of global option variables —
``show_stats``, ``show_details``, ``show_raw``, ``oneline``, ``brief``,
``json``, ``pretty``, ``use_iec``, ``numeric``… — declared once in
``include/utils.h`` and set by each tool's ``main()`` (``ip/ip.c``,
``tc/tc.c``, ``bridge/bridge.c``) from its own argv loop, in its own order
and with its own error texts. Here they are one :class:`Iproute2Options`
object per run, created by the tool's entry point, filled by its option loop
and handed to every printer; it also collects what the tool writes to stdout.
The argv loops stay with their tools; what they share beyond this object
(``matches()``, ``matches_color()``) is the library's.

iproute2: include/utils.h, lib/utils.c, lib/color.c.
"""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["Iproute2Options", "matches_color"]


@attrs.define
class Iproute2Options:
    """The global options of one ``ip``/``tc``/``bridge`` run and its stdout."""

    family: int = 0  # preferred_family (AF_UNSPEC): ip -4/-6/-0/-M/-B/-family
    stats: int = 0  # show_stats: -s, repeatable
    details: int = 0  # show_details: -d, repeatable
    raw: int = 0  # show_raw: tc -r
    oneline: bool = False  # -o: one record per line (_SL_ is "\")
    brief: bool = False  # ip -br
    human: bool = False  # human_readable: ip -h
    iec: bool = False  # use_iec: -iec
    numeric: bool = False  # ip -N
    graph: bool = False  # tc -g
    compress: bool = False  # compress_vlans: bridge -c
    json: bool = False  # -j: listings print JSON
    pretty: bool = False  # -p: indented JSON
    json_list: bool = False  # a listing ran: the output is its JSON array
    records: list[dict[str, Any]] = attrs.Factory(list)  # the array's objects, as they come
    out: list[str] = attrs.Factory(list)
    err: list[str] = attrs.Factory(list)  # warnings printed on stderr before carrying on

    @property
    def sl(self) -> str:
        """``_SL_``: the line break inside one record (``\\`` with ``-oneline``)."""
        return "\\" if self.oneline else "\n"

    def write(self, text: str) -> None:
        """``fprintf(stdout, …)``."""
        self.out.append(text)

    def text(self) -> str:
        """Everything written so far."""
        return "".join(self.out)

    def warn(self, text: str) -> None:
        """``fprintf(stderr, …)`` of a warning after which the tool carries on."""
        self.err.append(text)


def matches_color(opt: str) -> bool:
    """``-c[olor][=always|auto|never]``. iproute2: lib/color.c, matches_color()."""
    name, eq, value = opt.partition("=")
    if not (name and "-color".startswith(name)):
        return False
    return not eq or value in ("", "always", "auto", "never")
