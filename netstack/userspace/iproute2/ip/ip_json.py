"""``ip -json`` (``-j``) and ``-pretty`` (``-p``): links, addresses, routes and neighbours as JSON.

Theory of operation: iproute2 prints every field through ``print_*(PRINT_ANY,
key, format, value)``, which writes the text form or, under ``-j``, a JSON
member; the JSON of a listing is one array of objects, one per link, route
or neighbour, written by its ``json_writer`` as the fields come. Here the
printers of :mod:`.ip_link`, :mod:`.ip_addr`, :mod:`.ip6`, :mod:`.ip_route`
and :mod:`.ip_neigh` ask these builders for the object instead of text when
``opts.json`` is set, with the same conditions deciding which members
appear, in iproute2's order and with its value types (numbers as numbers,
flags as an array of strings, address flags as ``true`` members, lifetimes
as seconds with 4294967295 for *forever*); the addresses of ``ip addr`` go
into their link's ``addr_info`` array. :func:`jsonw` writes the result
byte for byte as ``json_writer.c`` does: compact, or with ``-p`` its own
indentation (``[ {``, four spaces a level, ``"flags": [ "UP","LOWER_UP" ]``,
``"flags": [ ]``).

Not in the JSON yet: ``-d`` details (``linkinfo``…), ``-s -s`` error rows,
``ip neigh -s`` cache times, ``ip route get`` of IPv6.

iproute2: lib/json_writer.c, lib/json_print.c; ip/ipaddress.c (print_linkinfo(),
print_addrinfo()), ip/iproute.c (print_route()), ip/ipneigh.c (print_neigh()).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from netstack.core.netdevice import NetDeviceStats

__all__ = ["jsonw", "stats64_json"]

_ESCAPES: Final = {
    "\t": "\\t",
    "\n": "\\n",
    "\r": "\\r",
    "\f": "\\f",
    "\b": "\\b",
    "\\": "\\\\",
    '"': '\\"',
}


class _Writer:
    """lib/json_writer.c: depth, the pending separator, pretty or not."""

    def __init__(self, pretty: bool) -> None:
        self.out: list[str] = []
        self.depth = 0
        self.sep = ""
        self.pretty = pretty

    def eol(self) -> None:
        if self.pretty:
            self.out.append("\n" + "    " * self.depth)

    def eor(self) -> None:
        if self.sep:
            self.out.append(self.sep)
        self.sep = ","

    def begin(self, c: str) -> None:
        self.eor()
        self.out.append(c)
        self.depth += 1
        self.sep = ""

    def end(self, c: str) -> None:
        self.depth -= 1
        if self.sep:
            self.eol()
        self.out.append(c)
        self.sep = ","

    def name(self, name: str) -> None:
        self.eor()
        self.eol()
        self.sep = ""
        self.out.append(_quote(name) + (": " if self.pretty else ":"))

    def value(self, v: Any) -> None:
        if isinstance(v, dict):
            self.begin("{")
            for key, item in v.items():
                self.name(key)
                self.value(item)
            self.end("}")
        elif isinstance(v, list):
            self.begin("[")
            if self.pretty:
                self.out.append(" ")
            for item in v:
                self.value(item)
            if self.pretty and self.sep:
                self.out.append(" ")
            self.sep = ""
            self.end("]")
        else:
            self.eor()
            if isinstance(v, bool):
                self.out.append("true" if v else "false")
            elif v is None:
                self.out.append("null")
            elif isinstance(v, int):
                self.out.append(str(v))
            else:
                self.out.append(_quote(str(v)))


def _quote(text: str) -> str:
    return '"' + "".join(_ESCAPES.get(c, c) for c in text) + '"'


def jsonw(value: Any, *, pretty: bool) -> str:
    """*value* as iproute2's json_writer writes it (with its final newline)."""
    w = _Writer(pretty)
    w.value(value)
    return "".join(w.out) + "\n"


def stats64_json(s: NetDeviceStats) -> dict[str, Any]:
    """``"stats64"`` of ``-s``: rx and tx as print_stats64() writes them."""
    return {
        "rx": {
            "bytes": s.rx_bytes,
            "packets": s.rx_packets,
            "errors": s.rx_errors,
            "dropped": s.rx_dropped,
            "over_errors": s.rx_over_errors,
            "multicast": s.multicast,
        },
        "tx": {
            "bytes": s.tx_bytes,
            "packets": s.tx_packets,
            "errors": s.tx_errors,
            "dropped": s.tx_dropped,
            "carrier_errors": s.tx_carrier_errors,
            "collisions": s.collisions,
        },
    }
