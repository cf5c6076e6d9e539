"""``ip``: iproute2's front end over the emulated kernel.

Theory of operation: :func:`ip` takes the command line after ``ip`` (shell
quoting allowed), reads the global options exactly as ``ip/ip.c`` does
(``-s``/``-d``/``-o``/``-br``/``-4``/``-f FAMILY``…, each abbreviable to any
prefix that iproute2's ``matches()`` accepts, first match in iproute2's own
order), picks the object the same way (``a`` → address, ``r``/``ro`` →
route, ``n`` → neighbour, ``l`` → link…) and hands the rest of the argv to
the object module:

* :mod:`.ip_link` — ``ip link`` (show/add/set/delete),
* :mod:`.ip_addr` — ``ip address`` (show/add/change/replace/del/flush),
* :mod:`.ip_route` — ``ip route`` (show/add…/del/get/flush),
* :mod:`.ip_neigh` — ``ip neighbour`` (show/add…/del/get/flush).

Those modules play both roles iproute2 splits across a netlink socket: the
user-space parser (with iproute2's error texts) and the kernel's rtnetlink
handler (calling the kernel-side functions of ``netstack.core.dev``,
``netstack.ipv4`` and ``netstack.neigh``, whose own error texts pass through
unchanged). What ``ip`` prints on stdout is returned; what it prints on
stderr before failing is raised as :class:`~netstack.errors.ConfigError`.
Warnings that iproute2 prints on stderr and then carries on from are
returned by :func:`ip_run` beside stdout (``ip`` the command prints them on
stderr; :func:`ip` drops them).

iproute2: ip/ip.c.
"""

from __future__ import annotations

import errno
import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from netstack.errors import ConfigError
from netstack.userspace.iproute2.ip.ip_addr import do_ipaddr
from netstack.userspace.iproute2.ip.ip_common import (
    AF_BRIDGE,
    AF_INET,
    AF_INET6,
    AF_MPLS,
    AF_PACKET,
    AF_UNSPEC,
    Args,
    get_unsigned,
    invarg,
    matches,
    read_family,
    split_words,
)
from netstack.userspace.iproute2.ip.ip_json import jsonw
from netstack.userspace.iproute2.ip.ip_link import do_iplink
from netstack.userspace.iproute2.ip.ip_maddr import do_multiaddr
from netstack.userspace.iproute2.ip.ip_neigh import do_ipneigh
from netstack.userspace.iproute2.ip.ip_route import do_iproute
from netstack.userspace.iproute2.ip.ip_rule import do_iprule
from netstack.userspace.iproute2.ip.ip_tunnel import do_iptunnel
from netstack.userspace.iproute2.status import Iproute2Exit, exit_status
from netstack.userspace.iproute2.utils import Iproute2Options, matches_color

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.userspace.process import Machine, Process

__all__ = ["IP_USAGE", "IP_VERSION", "ip", "ip_run", "main"]

IP_VERSION: Final = "ip utility, iproute2-6.1.0"

IP_USAGE: Final = (
    "Usage: ip [ OPTIONS ] OBJECT { COMMAND | help }\n"
    "       ip [ ip-OPTIONS ] -batch filename\n"
    "where  OBJECT := { address | addrlabel | fou | help | ila | ioam | l2tp | link |\n"
    "                   macsec | maddress | monitor | mptcp | mroute | mrule |\n"
    "                   neighbor | neighbour | netconf | netns | nexthop | ntable |\n"
    "                   ntbl | route | rule | sr | stats | tap | tcpmetrics |\n"
    "                   token | tunnel | tuntap | vrf | xfrm }\n"
    "       OPTIONS := { -V[ersion] | -s[tatistics] | -d[etails] | -r[esolve] |\n"
    "                    -h[uman-readable] | -iec | -j[son] | -p[retty] |\n"
    "                    -f[amily] { inet | inet6 | mpls | bridge | link } |\n"
    "                    -4 | -6 | -M | -B | -0 |\n"
    "                    -l[oops] { maximum-addr-flush-attempts } | -echo | -br[ief] |\n"
    "                    -o[neline] | -t[imestamp] | -ts[hort] | -b[atch] [filename] |\n"
    "                    -rc[vbuf] [size] | -n[etns] name | -N[umeric] | -a[ll] |\n"
    "                    -c[olor]}"
)

Handler = Callable[["Net", Iproute2Options, Args], None]

# ip/ip.c cmds[]: the first entry the word is a prefix of wins
_IMPLEMENTED: Final[dict[str, Handler]] = {
    "address": do_ipaddr,
    "maddress": do_multiaddr,
    "route": do_iproute,
    "rule": do_iprule,
    "neighbor": do_ipneigh,
    "neighbour": do_ipneigh,
    "link": do_iplink,
    "tunnel": do_iptunnel,
    "tunl": do_iptunnel,
}
_OBJECTS: Final = (
    "address",
    "addrlabel",
    "maddress",
    "route",
    "rule",
    "neighbor",
    "neighbour",
    "ntable",
    "ntbl",
    "link",
    "l2tp",
    "fou",
    "ila",
    "macsec",
    "tunnel",
    "tunl",
    "tuntap",
    "tap",
    "token",
    "tcpmetrics",
    "tcp_metrics",
    "monitor",
    "xfrm",
    "mroute",
    "mrule",
    "netns",
    "netconf",
    "vrf",
    "sr",
    "nexthop",
    "mptcp",
    "ioam",
    "help",
    "stats",
)


def _usage() -> ConfigError:
    return ConfigError(IP_USAGE, errno.EINVAL)


def _matches_color(opt: str) -> bool:
    """``-c[olor][=always|auto|never]``. iproute2: lib/color.c, matches_color()."""
    name, eq, value = opt.partition("=")
    if not matches(name, "-color"):
        return False
    return not eq or value in ("", "always", "auto", "never")


def _parse_options(args: Args, opts: Iproute2Options) -> str | None:
    """Consume the global options; return text to print and stop (``-V``), else None.

    iproute2: ip/ip.c, main().
    """
    while args:
        opt = args.peek()
        if opt == "--":
            args.take()
            break
        if not opt.startswith("-"):
            break
        args.take()
        if opt[1:2] == "-":
            opt = opt[1:]
        if matches(opt, "-loops"):
            if not args:
                raise _usage()
            args.take()
        elif matches(opt, "-family"):
            if not args:
                raise _usage()
            value = args.take()
            if value == "help":
                raise _usage()
            opts.family = read_family(value)
            if opts.family == AF_UNSPEC:
                invarg("invalid protocol family", value)
        elif opt in ("-4", "-6", "-0", "-M", "-B"):
            opts.family = {
                "-4": AF_INET,
                "-6": AF_INET6,
                "-0": AF_PACKET,
                "-M": AF_MPLS,
                "-B": AF_BRIDGE,
            }[opt]
        elif matches(opt, "-human") or matches(opt, "-human-readable"):
            opts.human = True
        elif matches(opt, "-iec"):
            opts.iec = True
        elif matches(opt, "-stats") or matches(opt, "-statistics"):
            opts.stats += 1
        elif matches(opt, "-details"):
            opts.details += 1
        elif matches(opt, "-resolve"):
            pass  # no name resolution in an emulated network
        elif matches(opt, "-oneline"):
            opts.oneline = True
        elif matches(opt, "-timestamp") or matches(opt, "-tshort"):
            pass  # only "ip monitor" prints timestamps
        elif matches(opt, "-Version"):
            return IP_VERSION + "\n"
        elif matches(opt, "-force"):
            pass
        elif matches(opt, "-batch"):
            if not args:
                raise _usage()
            raise ConfigError('netstack: "ip -batch" is not supported', errno.EOPNOTSUPP)
        elif matches(opt, "-rcvbuf"):
            if not args:
                raise _usage()
            value = args.take()
            if get_unsigned(value) is None:
                raise ConfigError(f"Invalid rcvbuf size '{value}'", errno.EINVAL)
        elif matches_color(opt):
            pass  # output is never a terminal: no colour
        elif matches(opt, "-help"):
            raise _usage()
        elif matches(opt, "-netns"):
            if not args:
                raise _usage()
            value = args.take()
            raise ConfigError(
                f'Cannot open network namespace "{value}": No such file or directory',
                errno.ENOENT,
            )
        elif matches(opt, "-Numeric"):
            opts.numeric = True
        elif matches(opt, "-all") or opt == "-echo":
            pass
        elif matches(opt, "-brief"):
            opts.brief = True
        elif matches(opt, "-json"):
            opts.json = True
        elif matches(opt, "-pretty"):
            opts.pretty = True
        else:
            raise Iproute2Exit(f'Option "{opt}" is unknown, try "ip -help".', errno.EINVAL, 255)
    return None


def ip(net: Net, command: str) -> str:
    """Run an ``ip`` command line (its stdout; see :func:`ip_run` for the warnings)."""
    return ip_run(net, command)[0]


def ip_run(net: Net, command: str) -> tuple[str, str]:
    """Run an ``ip`` command line (without the leading ``ip``) on *net*; return its output.

    Args:
        net: the host's kernel state.
        command: e.g. ``"-s link show dev eth0"``, ``"addr add 10.0.0.1/24 dev eth0"``.

    Returns:
        What ``ip`` prints on stdout (``""`` for commands that print nothing)
        and the warnings it prints on stderr before carrying on (``""``: none).

    Raises:
        ConfigError: with the exact text iproute2 (or the kernel, through
            iproute2) prints on stderr, and the errno where one applies.
    """
    try:
        argv = split_words(command)
    except ValueError as e:
        raise ConfigError(f"ip: cannot parse command line: {e}", errno.EINVAL) from None
    args = Args(argv)
    opts = Iproute2Options()
    version = _parse_options(args, opts)
    if version is not None:
        return version, ""
    if not args:
        raise _usage()
    word = args.take()
    for obj in _OBJECTS:
        if matches(word, obj):
            break
    else:
        raise ConfigError(f'Object "{word}" is unknown, try "ip help".', errno.EINVAL)
    if obj == "help":
        raise _usage()
    handler = _IMPLEMENTED.get(obj)
    if handler is None:
        raise ConfigError(f'netstack: "ip {obj}" is not implemented', errno.EOPNOTSUPP)
    handler(net, opts, args)
    err = "".join(f"{w}\n" for w in opts.err)
    if opts.json and opts.json_list:
        return jsonw(opts.records, pretty=opts.pretty), err
    return opts.text(), err


async def main(proc: Process, host: Machine, argv: list[str]) -> int:
    """The ``ip`` command: run *argv* on *host*'s kernel and print what ip prints."""
    try:
        text, err = ip_run(host.net, shlex.join(argv))
    except ConfigError as e:  # printed on stderr; the status is iproute2's for that path
        proc.err(str(e))
        return exit_status(e, "ip")
    if err:
        proc.err(err.rstrip("\n"))
    if text:
        proc.out(text.rstrip("\n"))
    return 0
