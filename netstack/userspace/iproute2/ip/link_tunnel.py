"""``ip link … type gre|gretap|ipip|sit``: the tunnel options, parsed and printed.

Theory of operation: these are iproute2's ``link_util`` modules for the IPv4
tunnels. :func:`gre_parse_opt` / :func:`iptnl_parse_opt` turn the words after
``type KIND`` into the kind's ``IFLA_INFO_DATA`` (a
:class:`~netstack.tunnels.ip_gre.GreParms` or
:class:`~netstack.tunnels.ipip.IptunParms`), starting — for ``ip link set`` —
from what the kernel reports for the device, as iproute2 does with its
RTM_GETLINK round trip. :func:`print_opt` is ``ip -d link``'s line for a
tunnel (``gre remote 10.0.0.2 local 10.0.0.1 ttl inherit …``).

iproute2: ip/link_gre.c, ip/link_iptnl.c (6.1).
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Any, Final

from netstack.errors import ConfigError
from netstack.tunnels.ip_gre import GreParms
from netstack.tunnels.ip_tunnel import IpTunnel
from netstack.tunnels.ipip import IptunParms
from netstack.userspace.iproute2.ip.ip_common import Args, get_u8, invarg, matches
from netstack.userspace.iproute2.ip.ip_route import rtnl_dsfield_a2n
from netstack.userspace.iproute2.ip.ip_tunnel import get_addr32, tnl_parse_key
from netstack.wire.gre import GRE_CSUM, GRE_KEY, GRE_SEQ
from netstack.wire.ipv4 import IP_DF, IPPROTO_IPIP, IPPROTO_IPV6, ntoa

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetDevice

__all__ = [
    "GRE_USAGE",
    "TUNNEL_KINDS",
    "gre_parse_opt",
    "iptnl_parse_opt",
    "iptnl_usage",
    "parse_opt",
    "print_opt",
]

TUNNEL_KINDS: Final = ("gre", "gretap", "ipip", "sit")
IPPROTO_MPLS: Final = 137

GRE_USAGE: Final = (
    "Usage: ... { gre | gretap | erspan } [ remote ADDR ]\n"
    "                            [ local ADDR ]\n"
    "                            [ [no][i|o]seq ]\n"
    "                            [ [i|o]key KEY | no[i|o]key ]\n"
    "                            [ [no][i|o]csum ]\n"
    "                            [ ttl TTL ]\n"
    "                            [ tos TOS ]\n"
    "                            [ [no]pmtudisc ]\n"
    "                            [ [no]ignore-df ]\n"
    "                            [ dev PHYS_DEV ]\n"
    "                            [ fwmark MARK ]\n"
    "                            [ external ]\n"
    "                            [ noencap ]\n"
    "                            [ encap { fou | gue | none } ]\n"
    "                            [ encap-sport PORT ]\n"
    "                            [ encap-dport PORT ]\n"
    "                            [ [no]encap-csum ]\n"
    "                            [ [no]encap-csum6 ]\n"
    "                            [ [no]encap-remcsum ]\n"
    "                            [ erspan_ver version ]\n"
    "                            [ erspan IDX ]\n"
    "                            [ erspan_dir { ingress | egress } ]\n"
    "                            [ erspan_hwid hwid ]\n"
    "\n"
    "Where: ADDR := { IP_ADDRESS | any }\n"
    "       TOS  := { NUMBER | inherit }\n"
    "       TTL  := { 1..255 | inherit }\n"
    "       KEY  := { DOTTED_QUAD | NUMBER }\n"
    "       MARK := { 0x0..0xffffffff }"
)


def iptnl_usage(kind: str) -> str:
    """iproute2: ip/link_iptnl.c, iptunnel_print_help()."""
    text = (
        f"Usage: ... {kind:<6}\t[ remote ADDR ]\n"
        "\t\t\t[ local ADDR ]\n"
        "\t\t\t[ ttl TTL ]\n"
        "\t\t\t[ tos TOS ]\n"
        "\t\t\t[ [no]pmtudisc ]\n"
        "\t\t\t[ 6rd-prefix ADDR ]\n"
        "\t\t\t[ 6rd-relay_prefix ADDR ]\n"
        "\t\t\t[ 6rd-reset ]\n"
        "\t\t\t[ dev PHYS_DEV ]\n"
        "\t\t\t[ fwmark MARK ]\n"
        "\t\t\t[ external ]\n"
        "\t\t\t[ noencap ]\n"
        "\t\t\t[ encap { fou | gue | none } ]\n"
        "\t\t\t[ encap-sport PORT ]\n"
        "\t\t\t[ encap-dport PORT ]\n"
        "\t\t\t[ [no]encap-csum ]\n"
        "\t\t\t[ [no]encap-csum6 ]\n"
        "\t\t\t[ [no]encap-remcsum ]\n"
    )
    if kind == "sit":
        text += "\t\t\t[ mode { ip6ip | ipip | mplsip | any } ]\n\t\t\t[ isatap ]\n"
    else:
        text += "\t\t\t[ mode { ipip | mplsip | any } ]\n"
    text += (
        "\n"
        "Where:\tADDR := { IP_ADDRESS | any }\n"
        "\tTOS  := { NUMBER | inherit }\n"
        "\tTTL  := { 1..255 | inherit }\n"
        "\tMARK := { 0x0..0xffffffff }"
    )
    return text


def _unsupported(word: str) -> ConfigError:
    return ConfigError(f'netstack: "ip link ... {word}" is not supported', errno.EOPNOTSUPP)


def _ttl(value: str) -> int:
    if value == "inherit":
        return 0
    ttl = get_u8(value, 0)
    if ttl is None:
        invarg("invalid TTL\n", value)
    return ttl


def _tos(value: str) -> int:
    if value == "inherit":
        return 1
    tos = rtnl_dsfield_a2n(value)
    if tos is None:
        invarg("bad TOS value", value)
    return tos


def _link_index(net: Net, name: str) -> int:
    dev = net.dev_get_by_name(name)
    if dev is None:
        raise ConfigError(f'Cannot find device "{name}"', errno.ENODEV)
    return dev.ifindex


def gre_parse_opt(net: Net, args: Args, existing: NetDevice | None) -> GreParms:
    """The words after ``type gre|gretap``. iproute2: ip/link_gre.c, gre_parse_opt()."""
    iflags = oflags = ikey = okey = saddr = daddr = link = ttl = tos = 0
    pmtudisc = 1
    ignore_df = 0
    if existing is not None:  # RTM_GETLINK first: options keep their values
        t: IpTunnel = existing.priv
        p = t.parms
        iflags, oflags, ikey, okey = p.i_flags, p.o_flags, p.i_key, p.o_key
        saddr, daddr, link, ttl, tos = p.saddr, p.daddr, p.link, p.ttl, p.tos
        pmtudisc = 1 if p.frag_off & IP_DF else 0
        ignore_df = 1 if t.ignore_df else 0
    while args:
        word = args.take()
        if word == "key":
            iflags |= GRE_KEY
            oflags |= GRE_KEY
            ikey = okey = tnl_parse_key("key", args.value())
        elif word == "nokey":
            iflags &= ~GRE_KEY
            oflags &= ~GRE_KEY
            ikey = okey = 0
        elif word == "ikey":
            iflags |= GRE_KEY
            ikey = tnl_parse_key("ikey", args.value())
        elif word == "noikey":
            iflags &= ~GRE_KEY
            ikey = 0
        elif word == "okey":
            oflags |= GRE_KEY
            okey = tnl_parse_key("okey", args.value())
        elif word == "nookey":
            oflags &= ~GRE_KEY
            okey = 0
        elif word == "seq":
            iflags |= GRE_SEQ
            oflags |= GRE_SEQ
        elif word == "noseq":
            iflags &= ~GRE_SEQ
            oflags &= ~GRE_SEQ
        elif word == "iseq":
            iflags |= GRE_SEQ
        elif word == "noiseq":
            iflags &= ~GRE_SEQ
        elif word == "oseq":
            oflags |= GRE_SEQ
        elif word == "nooseq":
            oflags &= ~GRE_SEQ
        elif word == "csum":
            iflags |= GRE_CSUM
            oflags |= GRE_CSUM
        elif word == "nocsum":
            iflags &= ~GRE_CSUM
            oflags &= ~GRE_CSUM
        elif word == "icsum":
            iflags |= GRE_CSUM
        elif word == "noicsum":
            iflags &= ~GRE_CSUM
        elif word == "ocsum":
            oflags |= GRE_CSUM
        elif word == "noocsum":
            oflags &= ~GRE_CSUM
        elif word == "nopmtudisc":
            pmtudisc = 0
        elif word == "pmtudisc":
            pmtudisc = 1
        elif word == "remote":
            daddr = get_addr32(args.value())
        elif word == "local":
            saddr = get_addr32(args.value())
        elif word == "dev":
            link = _link_index(net, args.value())
        elif word in ("ttl", "hoplimit", "hlim"):
            ttl = _ttl(args.value())
        elif word in ("tos", "tclass") or matches(word, "dsfield"):
            tos = _tos(args.value())
        elif word == "ignore-df":
            ignore_df = 1
        elif word == "noignore-df":
            ignore_df = 2
        elif word in ("noencap",):
            pass
        elif word == "encap":
            value = args.value()
            if value == "none":
                continue
            if value in ("fou", "gue"):
                raise _unsupported(f"encap {value}")
            invarg("Invalid encap type.", value)
        elif word in (
            "external",
            "fwmark",
            "erspan",
            "erspan_ver",
            "erspan_dir",
            "erspan_hwid",
            "encap-sport",
            "encap-dport",
            "encap-csum",
            "encap-udp6-csum",
            "encap-remcsum",
        ):
            raise _unsupported(word)
        elif word in ("noencap-csum", "noencap-udp6-csum", "noencap-remcsum"):
            pass
        else:
            raise ConfigError(GRE_USAGE, errno.EINVAL)
    if not ikey and (daddr & 0xF0000000) == 0xE0000000:
        ikey = daddr
        iflags |= GRE_KEY
    if not okey and (daddr & 0xF0000000) == 0xE0000000:
        okey = daddr
        oflags |= GRE_KEY
    if (daddr & 0xF0000000) == 0xE0000000 and not saddr:
        raise ConfigError("A broadcast tunnel requires a source address.", errno.EINVAL)
    return GreParms(
        link=link or None,
        iflags=iflags,
        oflags=oflags,
        ikey=ikey,
        okey=okey,
        local=saddr,
        remote=daddr,
        ttl=ttl,
        tos=tos,
        pmtudisc=pmtudisc,
        ignore_df=(ignore_df & 1) if ignore_df else None,
    )


def iptnl_parse_opt(net: Net, kind: str, args: Args, existing: NetDevice | None) -> IptunParms:
    """The words after ``type ipip|sit``. iproute2: ip/link_iptnl.c, iptunnel_parse_opt()."""
    saddr = daddr = link = ttl = tos = 0
    pmtudisc = 1
    proto = IPPROTO_IPV6 if kind == "sit" else IPPROTO_IPIP
    if existing is not None:
        p = existing.priv.parms
        saddr, daddr, link, ttl, tos = p.saddr, p.daddr, p.link, p.ttl, p.tos
        pmtudisc = 1 if p.frag_off & IP_DF else 0
        proto = p.protocol
    while args:
        word = args.take()
        if word == "remote":
            daddr = get_addr32(args.value())
        elif word == "local":
            saddr = get_addr32(args.value())
        elif matches(word, "dev"):
            link = _link_index(net, args.value())
        elif word in ("ttl", "hoplimit", "hlim"):
            ttl = _ttl(args.value())
        elif word in ("tos", "tclass") or matches(word, "dsfield"):
            tos = _tos(args.value())
        elif word == "nopmtudisc":
            pmtudisc = 0
        elif word == "pmtudisc":
            pmtudisc = 1
        elif kind == "sit" and word == "isatap":
            raise _unsupported("isatap")
        elif word == "mode":
            value = args.value()
            if kind == "sit" and value in ("ipv6/ipv4", "ip6ip"):
                proto = IPPROTO_IPV6
            elif value in ("ipv4/ipv4", "ipip", "ip4ip4"):
                proto = IPPROTO_IPIP
            elif value in ("mpls/ipv4", "mplsip"):
                proto = IPPROTO_MPLS
            elif value in ("any/ipv4", "any"):
                proto = 0
            else:
                invarg("Cannot guess tunnel mode.", value)
        elif word in ("noencap", "noencap-csum", "noencap-csum6", "noencap-remcsum"):
            pass
        elif word == "encap":
            value = args.value()
            if value != "none":
                if value in ("fou", "gue"):
                    raise _unsupported(f"encap {value}")
                invarg("Invalid encap type.", value)
        elif word in (
            "external",
            "fwmark",
            "encap-sport",
            "encap-dport",
            "encap-csum",
            "encap-csum6",
            "encap-remcsum",
            "6rd-prefix",
            "6rd-relay_prefix",
            "6rd-reset",
        ):
            raise _unsupported(word)
        else:
            if word == "help":
                raise ConfigError(iptnl_usage(kind), errno.EINVAL)
            raise ConfigError(iptnl_usage(kind), errno.EINVAL)
    if ttl and pmtudisc == 0:
        raise ConfigError("ttl != 0 and nopmtudisc are incompatible", errno.EINVAL)
    return IptunParms(
        link=link or None,
        local=saddr,
        remote=daddr,
        ttl=ttl,
        tos=tos,
        proto=proto,
        pmtudisc=pmtudisc,
    )


def parse_opt(net: Net, kind: str, args: Args, existing: NetDevice | None) -> Any:
    """Dispatch to the kind's parser."""
    if kind in ("gre", "gretap"):
        return gre_parse_opt(net, args, existing)
    return iptnl_parse_opt(net, kind, args, existing)


def usage(kind: str) -> str:
    return GRE_USAGE if kind in ("gre", "gretap") else iptnl_usage(kind)


def _host(addr: int) -> str:
    return ntoa(addr) if addr else "any"


def print_opt(dev: NetDevice) -> str:
    """``ip -d link``'s tunnel line (after ``KIND ``).

    iproute2: ip/link_gre.c, gre_print_opt(); ip/link_iptnl.c, iptunnel_print_opt().
    """
    t: IpTunnel = dev.priv
    p = t.parms
    kind = dev.kind
    o: list[str] = []
    if kind not in ("gre", "gretap"):
        o.append(
            {IPPROTO_IPIP: "ipip ", IPPROTO_IPV6: "ip6ip ", IPPROTO_MPLS: "mplsip ", 0: "any "}.get(
                p.protocol, ""
            )
        )
    o.append(f"remote {_host(p.daddr)} ")
    o.append(f"local {_host(p.saddr)} ")
    if p.link:
        lower = dev.net.dev_get_by_index(p.link)
        o.append(f"dev {lower.name if lower is not None else p.link} ")
    o.append(f"ttl {p.ttl} " if p.ttl else "ttl inherit ")
    if p.tos:
        o.append(f"tos {p.tos:#x} " if p.tos != 1 else "tos inherit ")
    if kind in ("gre", "gretap"):
        if not p.frag_off & IP_DF:
            o.append("nopmtudisc ")
        if t.ignore_df:
            o.append("ignore-df ")
        if p.i_flags & GRE_KEY:
            o.append(f"ikey {ntoa(p.i_key)} ")
        if p.o_flags & GRE_KEY:
            o.append(f"okey {ntoa(p.o_key)} ")
        if p.i_flags & GRE_SEQ:
            o.append("iseq ")
        if p.o_flags & GRE_SEQ:
            o.append("oseq ")
        if p.i_flags & GRE_CSUM:
            o.append("icsum ")
        if p.o_flags & GRE_CSUM:
            o.append("ocsum ")
    else:
        o.append("pmtudisc " if p.frag_off & IP_DF else "nopmtudisc ")
    return "".join(o)
