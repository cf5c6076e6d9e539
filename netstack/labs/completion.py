"""Tab completion for the shell's commands (what bash-completion is to the Linux tools).

Theory of operation: a completer takes the running
:class:`~netstack.labs.session.Context`, the words typed after the command's
name and the word being completed, and returns the candidates: the objects,
verbs and keywords of ``ip``/``tc``, ethtool's options and feature names, a
host's devices, the lab's host names, counter names for ``expect``. Like
bash-completion, completion is the shell's business and lives apart from the
tools (:mod:`netstack.userspace`), reading their tables where they have them
(ethtool's feature names).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from netstack.labs.builtins import EXPECT_OPS, counter_names
from netstack.userspace.ethtool.ethtool import NETDEV_FEATURES_STRINGS, OFF_FLAG_DEF

if TYPE_CHECKING:
    from netstack.labs.session import Context

__all__ = [
    "complete_devices",
    "complete_ethtool",
    "complete_expect",
    "complete_hosts",
    "complete_ip",
    "complete_netperf",
    "complete_tc",
    "complete_tcpdump",
]


def complete_devices(ctx: Context, words: list[str], text: str) -> list[str]:
    host = ctx.host
    if host is None:
        return []
    return [d.name for d in host.devices if d.name.startswith(text)]


_IP_OBJECTS: Final = ("address", "link", "neighbour", "route", "tunnel", "help")
_IP_VERBS: Final = ("show", "add", "del", "set", "change", "replace", "flush", "get")
_IP_KEYWORDS: Final = ("dev", "via", "up", "down", "mtu", "type")
# ip tunnel add NAME mode MODE remote ADDR local ADDR …; ip link add NAME type KIND …
_IP_TUNNEL_KEYWORDS: Final = (
    "mode", "remote", "local", "ttl", "tos", "key", "ikey", "okey", "csum", "seq",
    "pmtudisc", "nopmtudisc", "dev",
)  # fmt: skip
_IP_TUNNEL_MODES: Final = ("gre", "ipip", "sit")
_IP_LINK_KINDS: Final = ("veth", "dummy", "gre", "gretap", "ipip", "sit")


def complete_ip(ctx: Context, words: list[str], text: str) -> list[str]:
    args = [w for w in words if not w.startswith("-")]
    if not args:
        return [o for o in _IP_OBJECTS if o.startswith(text)]
    if len(args) == 1:
        return [v for v in _IP_VERBS if v.startswith(text)]
    if args[-1] == "mode":
        return [m for m in _IP_TUNNEL_MODES if m.startswith(text)]
    if args[-1] == "type":
        return [k for k in _IP_LINK_KINDS if k.startswith(text)]
    keywords = _IP_TUNNEL_KEYWORDS if "tunnel".startswith(args[0]) else _IP_KEYWORDS
    return complete_devices(ctx, words, text) + [k for k in keywords if k.startswith(text)]


_TC_OBJECTS: Final = ("qdisc", "class", "help")
_TC_VERBS: Final = ("add", "del", "change", "replace", "show", "link")
_TC_KINDS: Final = (
    "pfifo", "bfifo", "pfifo_fast", "pfifo_head_drop", "prio", "tbf", "fq_codel", "netem",
    "noqueue",
)  # fmt: skip
_TC_KEYWORDS: Final = ("dev", "root", "parent", "handle", "limit", "delay", "loss", "rate")


def complete_tc(ctx: Context, words: list[str], text: str) -> list[str]:
    args = [w for w in words if not w.startswith("-")]
    if not args:
        return [o for o in _TC_OBJECTS if o.startswith(text)]
    if len(args) == 1:
        return [v for v in _TC_VERBS if v.startswith(text)]
    if args[-1] == "dev":
        return complete_devices(ctx, words, text)
    return [k for k in _TC_KINDS + _TC_KEYWORDS if k.startswith(text)]


def complete_ethtool(ctx: Context, words: list[str], text: str) -> list[str]:
    if not words:
        options = ("-k", "-K", "-c", "-C", "-l", "-L", "-x", "-X", "-n", "-N", "-S")
        return [o for o in options if o.startswith(text)]
    if len(words) == 1:
        return complete_devices(ctx, words, text)
    if words[0] == "-K" and len(words) % 2 == 0:  # -K DEV NAME on|off NAME on|off …
        names = [short for short, _, _ in OFF_FLAG_DEF] + [n for n in NETDEV_FEATURES_STRINGS if n]
        return sorted({n for n in names if n.startswith(text)})
    if words[0] == "-K":
        return [v for v in ("on", "off") if v.startswith(text)]
    if words[0] == "-C" and len(words) % 2 == 0:  # -C DEV rx-usecs N tx-usecs N
        return [k for k in ("rx-usecs", "tx-usecs") if k.startswith(text)]
    return []


def complete_tcpdump(ctx: Context, words: list[str], text: str) -> list[str]:
    if words and words[-1] == "-i":
        return complete_devices(ctx, words, text)
    return [
        k
        for k in ("icmp", "arp", "udp", "tcp", "host", "port", "ip6", "and", "or", "not")
        if k.startswith(text)
    ]


def complete_expect(ctx: Context, words: list[str], text: str) -> list[str]:
    if ctx.host is None or words:
        return [o for o in EXPECT_OPS if o.startswith(text)] if len(words) == 1 else []
    return [n for n in counter_names(ctx.host) if n.startswith(text)]


def complete_hosts(ctx: Context, words: list[str], text: str) -> list[str]:
    return [h for h in ctx.lab.hosts if h.startswith(text)]


_NETPERF_TESTS: Final = ("TCP_STREAM", "TCP_RR", "UDP_STREAM")


def complete_netperf(ctx: Context, words: list[str], text: str) -> list[str]:
    if words and words[-1] == "-H":
        return complete_hosts(ctx, words, text)
    if words and words[-1] == "-t":
        return [t for t in _NETPERF_TESTS if t.startswith(text.upper())]
    if "--" in words:
        return [o for o in ("-m", "-r", "-P", "-D") if o.startswith(text)]
    return [o for o in ("-H", "-t", "-l", "-f", "-p", "-c", "-C", "--") if o.startswith(text)]
