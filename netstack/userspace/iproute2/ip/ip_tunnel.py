"""``ip tunnel``: add, change, del, show IPv4 tunnels through the tunnel ioctls.

Theory of operation: unlike ``ip link``, ``ip tunnel`` does not speak
rtnetlink to create or change a tunnel. It fills a ``struct ip_tunnel_parm``
(:func:`parse_args`, with iproute2's defaults: version 4, IHL 5, DF set) and
issues ``SIOCADDTUNNEL`` / ``SIOCCHGTUNNEL`` / ``SIOCDELTUNNEL`` /
``SIOCGETTUNNEL`` on a device: the mode's fallback device (``gre0``, ``tunl0``,
``sit0``), or the named tunnel itself. The kernel's ``dev_ioctl`` loads the
module behind a missing fallback device (``netdev-gre0``) first, which is
why ``ip tunnel add … mode gre`` works on a fresh host. Errors are printed
as ``add tunnel "gre0" failed: File exists`` with the errno's text.

``ip tunnel show`` without a mode lists every tunnel-type device (ARPHRD
TUNNEL, IPGRE, SIT — not gretap) that answers SIOCGETTUNNEL, in link-dump
order, filtered by the given parameters; ``-s`` adds the tunnel statistics
block (from ``rtnl_link_stats64``).

iproute2: ip/iptunnel.c, ip/tunnel.c (6.1). Kernel: net/core/dev_ioctl.c
(dev_load → request_module("netdev-NAME")).
"""

from __future__ import annotations

import errno
import os
from typing import TYPE_CHECKING, Final, NoReturn

from netstack.core.rtnetlink import dev_load
from netstack.errors import ConfigError
from netstack.tunnels.ip_tunnel import (
    SIOCADDTUNNEL,
    SIOCCHGTUNNEL,
    SIOCDELTUNNEL,
    SIOCGETTUNNEL,
    IpTunnelParm,
)
from netstack.userspace.iproute2.ip.ip_common import (
    AF_INET,
    AF_INET6,
    AF_UNSPEC,
    Args,
    devices,
    duparg2,
    get_addr_1,
    get_u8,
    get_unsigned,
    invarg,
    matches,
)
from netstack.userspace.iproute2.ip.ip_route import rtnl_dsfield_a2n
from netstack.userspace.iproute2.status import Iproute2Exit
from netstack.userspace.iproute2.utils import Iproute2Options
from netstack.wire.arp import ARPHRD_IPGRE, ARPHRD_SIT, ARPHRD_TUNNEL
from netstack.wire.gre import GRE_CSUM, GRE_KEY, GRE_SEQ
from netstack.wire.ipv4 import IP_DF, IPPROTO_GRE, IPPROTO_IPIP, IPPROTO_IPV6, ntoa

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetDevice

__all__ = ["IPTUNNEL_USAGE", "do_iptunnel", "parse_args", "print_tunnel", "tnl_parse_key"]

IPTUNNEL_USAGE: Final = (
    "Usage: ip tunnel { add | change | del | show | prl | 6rd } [ NAME ]\n"
    "        [ mode { gre | ipip | isatap | sit | vti } ]\n"
    "        [ remote ADDR ] [ local ADDR ]\n"
    "        [ [i|o]seq ] [ [i|o]key KEY ] [ [i|o]csum ]\n"
    "        [ prl-default ADDR ] [ prl-nodefault ADDR ] [ prl-delete ADDR ]\n"
    "        [ 6rd-prefix ADDR ] [ 6rd-relay_prefix ADDR ] [ 6rd-reset ]\n"
    "        [ ttl TTL ] [ tos TOS ] [ [no]pmtudisc ] [ dev PHYS_DEV ]\n"
    "\n"
    "Where: NAME := STRING\n"
    "       ADDR := { IP_ADDRESS | any }\n"
    "       TOS  := { STRING | 00..ff | inherit | inherit/STRING | inherit/00..ff }\n"
    "       TTL  := { 1..255 | inherit }\n"
    "       KEY  := { DOTTED_QUAD | NUMBER }"
)

VTI_ISVTI: Final = 0x0001  # i_flags marker for "mode vti" (no vti driver here)
SIT_ISATAP: Final = 0x0001


def _usage() -> NoReturn:
    raise ConfigError(IPTUNNEL_USAGE, errno.EINVAL)


def get_addr32(name: str) -> int:
    """iproute2: lib/utils.c, get_addr32()."""
    pfx = get_addr_1(name, AF_INET)
    if pfx is None:
        raise Iproute2Exit(
            f'Error: an IP address is expected rather than "{name}".', errno.EINVAL, 1
        )
    data = pfx.data or bytes(4)
    return int.from_bytes(data[:4].ljust(4, b"\0"), "big")


def tnl_parse_key(name: str, key: str) -> int:
    """A key as a dotted quad or an unsigned number. iproute2: ip/tunnel.c, tnl_parse_key()."""
    if "." in key:
        return get_addr32(key)
    value = get_unsigned(key, 0)
    if value is None or value > 0xFFFFFFFF:
        raise ConfigError(
            f'invalid value for "{name}": "{key}"; it should be an unsigned integer',
            errno.EINVAL,
        )
    return value


def _set_tunnel_proto(p: IpTunnelParm, proto: int) -> None:
    if p.protocol and p.protocol != proto:
        raise ConfigError("You managed to ask for more than one tunnel mode.", errno.EINVAL)
    p.protocol = proto


def _ioctl(net: Net, ifname: str, cmd: int, p: IpTunnelParm) -> IpTunnelParm | None:
    """``ioctl(fd, cmd, &ifr)`` with ``ifr_name = ifname``: find (or load) the device."""
    dev = dev_load(net, ifname)
    if dev is None:
        raise OSError(errno.ENODEV, os.strerror(errno.ENODEV))
    result: IpTunnelParm | None = dev.ops.ndo_do_ioctl(dev, cmd, p)
    return result


def _ioctl_failed(what: str, ifname: str, e: OSError) -> ConfigError:
    code = e.errno or errno.EINVAL
    return ConfigError(f'{what} tunnel "{ifname}" failed: {os.strerror(code)}', code)


def tnl_get_ioctl(net: Net, basedev: str, p: IpTunnelParm) -> IpTunnelParm:
    """SIOCGETTUNNEL. iproute2: ip/tunnel.c, tnl_get_ioctl()."""
    try:
        out = _ioctl(net, basedev, SIOCGETTUNNEL, p)
    except OSError as e:
        raise _ioctl_failed("get", basedev, e) from None
    assert out is not None
    return out


def parse_args(net: Net, args: Args, cmd: int) -> IpTunnelParm:
    """Build the ``ip_tunnel_parm``. iproute2: ip/iptunnel.c, parse_args()."""
    p = IpTunnelParm(version=4, ihl=5, frag_off=IP_DF)
    medium = ""
    isatap = 0
    count = 0
    while args:
        word = args.take()
        if word == "mode":
            mode = args.value()
            if mode in ("ipip", "ip/ip"):
                _set_tunnel_proto(p, IPPROTO_IPIP)
            elif mode in ("gre", "gre/ip"):
                _set_tunnel_proto(p, IPPROTO_GRE)
            elif mode in ("sit", "ipv6/ip"):
                _set_tunnel_proto(p, IPPROTO_IPV6)
            elif mode == "isatap":
                _set_tunnel_proto(p, IPPROTO_IPV6)
                isatap += 1
            elif mode == "vti":
                _set_tunnel_proto(p, IPPROTO_IPIP)
                p.i_flags |= VTI_ISVTI
            else:
                raise ConfigError(f'Unknown tunnel mode "{mode}"', errno.EINVAL)
        elif word == "key":
            value = args.value()
            p.i_flags |= GRE_KEY
            p.o_flags |= GRE_KEY
            p.i_key = p.o_key = tnl_parse_key("key", value)
        elif word == "ikey":
            value = args.value()
            p.i_flags |= GRE_KEY
            p.i_key = tnl_parse_key("ikey", value)
        elif word == "okey":
            value = args.value()
            p.o_flags |= GRE_KEY
            p.o_key = tnl_parse_key("okey", value)
        elif word == "seq":
            p.i_flags |= GRE_SEQ
            p.o_flags |= GRE_SEQ
        elif word == "iseq":
            p.i_flags |= GRE_SEQ
        elif word == "oseq":
            p.o_flags |= GRE_SEQ
        elif word == "csum":
            p.i_flags |= GRE_CSUM
            p.o_flags |= GRE_CSUM
        elif word == "icsum":
            p.i_flags |= GRE_CSUM
        elif word == "ocsum":
            p.o_flags |= GRE_CSUM
        elif word == "nopmtudisc":
            p.frag_off = 0
        elif word == "pmtudisc":
            p.frag_off = IP_DF
        elif word == "remote":
            value = args.value()
            p.daddr = get_addr32(value) if value != "any" else 0
        elif word == "local":
            value = args.value()
            p.saddr = get_addr32(value) if value != "any" else 0
        elif word == "dev":
            medium = args.value()[:15]
        elif word in ("ttl", "hoplimit", "hlim"):
            value = args.value()
            if value != "inherit":
                ttl = get_u8(value, 0)
                if ttl is None:
                    invarg("invalid TTL\n", value)
                p.ttl = ttl
            else:
                p.ttl = 0
        elif word in ("tos", "tclass") or matches(word, "dsfield"):
            value = args.value()
            head, slash, tail = value.partition("/")
            dsfield: str | None
            if head != "inherit":
                dsfield = value
                p.tos = 0
            else:
                p.tos = 1
                dsfield = tail if slash else None
            if dsfield is not None:
                tos = rtnl_dsfield_a2n(dsfield)
                if tos is None:
                    invarg("bad TOS value", value)
                p.tos |= tos
        else:
            if word == "name":
                word = args.value()
            elif matches(word, "help"):
                _usage()
            if p.name:
                duparg2("name", word)
            p.name = word[:15]
            if cmd == SIOCCHGTUNNEL and count == 0:
                p = tnl_get_ioctl(net, word, IpTunnelParm())
        count += 1
    if p.protocol == 0:
        if p.name.startswith("gre"):
            p.protocol = IPPROTO_GRE
        elif p.name.startswith("ipip"):
            p.protocol = IPPROTO_IPIP
        elif p.name.startswith("sit"):
            p.protocol = IPPROTO_IPV6
        elif p.name.startswith("isatap"):
            p.protocol = IPPROTO_IPV6
            isatap += 1
        elif p.name.startswith("vti"):
            p.protocol = IPPROTO_IPIP
            p.i_flags |= VTI_ISVTI
    if (p.i_flags | p.o_flags) & GRE_KEY:
        if not p.i_flags & VTI_ISVTI and p.protocol != IPPROTO_GRE:
            raise ConfigError("Keys are not allowed with ipip and sit tunnels", errno.EINVAL)
    if medium:
        dev = net.dev_get_by_name(medium)
        if dev is None:
            raise ConfigError(f'Cannot find device "{medium}"', errno.ENODEV)
        p.link = dev.ifindex
    multicast = (p.daddr & 0xF0000000) == 0xE0000000
    if p.i_key == 0 and multicast:
        p.i_key = p.daddr
        p.i_flags |= GRE_KEY
    if p.o_key == 0 and multicast:
        p.o_key = p.daddr
        p.o_flags |= GRE_KEY
    if multicast and not p.saddr:
        raise ConfigError("A broadcast tunnel requires a source address", errno.EINVAL)
    if isatap:
        p.i_flags |= SIT_ISATAP
    return p


def tnl_defname(p: IpTunnelParm) -> str | None:
    """The mode's fallback device. iproute2: ip/iptunnel.c, tnl_defname()."""
    if p.protocol == IPPROTO_IPIP:
        return "ip_vti0" if p.i_flags & VTI_ISVTI else "tunl0"
    if p.protocol == IPPROTO_GRE:
        return "gre0"
    if p.protocol == IPPROTO_IPV6:
        return "sit0"
    return None


def do_add(net: Net, args: Args, cmd: int) -> None:
    """``ip tunnel add|change``. iproute2: ip/iptunnel.c, do_add() + tnl_add_ioctl()."""
    p = parse_args(net, args, cmd)
    if p.ttl and p.frag_off == 0:
        raise ConfigError("ttl != 0 and nopmtudisc are incompatible", errno.EINVAL)
    basedev = tnl_defname(p)
    if basedev is None:
        raise ConfigError("cannot determine tunnel mode (ip, gre, vti or sit)", errno.EINVAL)
    ifname = p.name if cmd == SIOCCHGTUNNEL and p.name else basedev
    try:
        _ioctl(net, ifname, cmd, p)
    except OSError as e:
        raise _ioctl_failed("add", ifname, e) from None


def do_del(net: Net, args: Args) -> None:
    """``ip tunnel del``. iproute2: ip/iptunnel.c, do_del() + tnl_del_ioctl()."""
    p = parse_args(net, args, SIOCDELTUNNEL)
    ifname = p.name or tnl_defname(p) or ""
    try:
        _ioctl(net, ifname, SIOCDELTUNNEL, p)
    except OSError as e:
        raise _ioctl_failed("delete", ifname, e) from None


def rtnl_dsfield_n2a(tos: int) -> str:
    """iproute2: lib/rt_names.c, rtnl_dsfield_n2a() (no names file: hex)."""
    return f"0x{tos:02x}"


def tnl_print_gre_flags(opts: Iproute2Options, p: IpTunnelParm) -> str:
    """iproute2: ip/tunnel.c, tnl_print_gre_flags()."""
    o: list[str] = []
    if p.i_flags & GRE_KEY and p.o_flags & GRE_KEY and p.o_key == p.i_key:
        o.append(f" key {p.i_key}")
    else:
        if p.i_flags & GRE_KEY:
            o.append(f" ikey {p.i_key}")
        if p.o_flags & GRE_KEY:
            o.append(f" okey {p.o_key}")
    if p.protocol != IPPROTO_GRE:
        return "".join(o)
    sl = opts.sl
    if p.i_flags & GRE_SEQ:
        o.append(f"{sl}  Drop packets out of sequence.")
    if p.i_flags & GRE_CSUM:
        o.append(f"{sl}  Checksum in received packet is required.")
    if p.o_flags & GRE_SEQ:
        o.append(f"{sl}  Sequence packets on output.")
    if p.o_flags & GRE_CSUM:
        o.append(f"{sl}  Checksum output packets.")
    return "".join(o)


def tnl_strproto(proto: int) -> str:
    """iproute2: ip/tunnel.c, tnl_strproto()."""
    return {IPPROTO_IPIP: "ip", IPPROTO_GRE: "gre", IPPROTO_IPV6: "ipv6", 50: "esp", 0: "any"}.get(
        proto, "unknown"
    )


def print_tunnel(net: Net, opts: Iproute2Options, p: IpTunnelParm) -> str:
    """One tunnel's line. iproute2: ip/iptunnel.c, print_tunnel()."""
    o = [f"{p.name}: {tnl_strproto(p.protocol)}/ip "]
    o.append(f"remote {ntoa(p.daddr) if p.daddr else 'any'} ")
    o.append(f"local {ntoa(p.saddr) if p.saddr else 'any'}")
    if p.link:
        lower = net.dev_get_by_index(p.link)
        if lower is not None:
            o.append(f" dev {lower.name}")
    o.append(f" ttl {p.ttl}" if p.ttl else " ttl inherit")
    if p.tos:
        if p.tos != 1:
            if p.tos & 1:
                o.append(f" tos inherit/{rtnl_dsfield_n2a(p.tos & ~1)}")
            else:
                o.append(f" tos {rtnl_dsfield_n2a(p.tos)}")
        else:
            o.append(" tos inherit")
    if not p.frag_off & IP_DF:
        o.append(" nopmtudisc")
    o.append(tnl_print_gre_flags(opts, p))
    return "".join(o)


def tnl_print_stats(opts: Iproute2Options, dev: NetDevice) -> str:
    """The ``-s`` block. iproute2: ip/tunnel.c, tnl_print_stats() (CsumErrs is rx_frame_errors)."""
    s = dev.statistics()
    sl = opts.sl
    return (
        f"{sl}RX: Packets    Bytes        Errors CsumErrs OutOfSeq Mcasts{sl}"
        f"    {s.rx_packets:<10} {s.rx_bytes:<12} {s.rx_errors:<6} {s.rx_frame_errors:<8} "
        f"{s.rx_fifo_errors:<8} {s.multicast:<8}{sl}"
        f"TX: Packets    Bytes        Errors DeadLoop NoRoute  NoBufs{sl}"
        f"    {s.tx_packets:<10} {s.tx_bytes:<12} {s.tx_errors:<6} {s.collisions:<8} "
        f"{s.tx_carrier_errors:<8} {s.tx_dropped:<6}"
    )


def _match(p1: IpTunnelParm, p2: IpTunnelParm) -> bool:
    """iproute2: ip/iptunnel.c, ip_tunnel_parm_match()."""
    return (
        (not p1.link or p1.link == p2.link)
        and (not p1.name or p1.name == p2.name)
        and (not p1.daddr or p1.daddr == p2.daddr)
        and (not p1.saddr or p1.saddr == p2.saddr)
        and (not p1.i_key or p1.i_key == p2.i_key)
    )


def do_tunnels_list(net: Net, opts: Iproute2Options, p: IpTunnelParm) -> None:
    """Every IPv4 tunnel device, filtered by *p*.

    iproute2: ip/iptunnel.c, do_tunnels_list() + ip/tunnel.c, print_nlmsg_tunnel().
    """
    for dev in devices(net):
        if dev.type not in (ARPHRD_TUNNEL, ARPHRD_IPGRE, ARPHRD_SIT):
            continue
        try:
            p2 = _ioctl(net, dev.name, SIOCGETTUNNEL, IpTunnelParm())
        except OSError:
            continue
        if p2 is None or not _match(p, p2):
            continue
        text = print_tunnel(net, opts, p2)
        if opts.stats:
            text += tnl_print_stats(opts, dev)
        opts.write(text + "\n")


def do_show(net: Net, opts: Iproute2Options, args: Args) -> None:
    """``ip tunnel show [NAME]``. iproute2: ip/iptunnel.c, do_show()."""
    p = parse_args(net, args, SIOCGETTUNNEL)
    basedev = tnl_defname(p)
    if basedev is None:
        do_tunnels_list(net, opts, p)
        return
    ifname = p.name or basedev
    out = tnl_get_ioctl(net, ifname, p)
    opts.write(print_tunnel(net, opts, out) + "\n")


def do_iptunnel(net: Net, opts: Iproute2Options, args: Args) -> None:
    """``ip tunnel …``. iproute2: ip/iptunnel.c, do_iptunnel()."""
    if opts.family == AF_INET6:
        raise ConfigError('netstack: "ip -6 tunnel" is not supported yet', errno.EOPNOTSUPP)
    if opts.family not in (AF_UNSPEC, AF_INET):
        raise ConfigError(f"Unsupported protocol family: {opts.family}", errno.EINVAL)
    if not args:
        do_show(net, opts, args)
        return
    word = args.take()
    if matches(word, "add"):
        do_add(net, args, SIOCADDTUNNEL)
    elif matches(word, "change"):
        do_add(net, args, SIOCCHGTUNNEL)
    elif matches(word, "delete"):
        do_del(net, args)
    elif matches(word, "show") or matches(word, "lst") or matches(word, "list"):
        do_show(net, opts, args)
    elif matches(word, "prl") or matches(word, "6rd"):
        raise ConfigError(f'netstack: "ip tunnel {word}" is not supported', errno.EOPNOTSUPP)
    elif matches(word, "help"):
        _usage()
    else:
        raise ConfigError(f'Command "{word}" is unknown, try "ip tunnel help"', errno.EINVAL)
