"""``ip link … type vxlan``: options parsed and ``ip -d link``'s line.

iproute2: ip/iplink_vxlan.c (6.1).
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Final

from netstack.errors import ConfigError
from netstack.tunnels.vxlan import (
    VXLAN_DF_INHERIT,
    VXLAN_DF_SET,
    VXLAN_F_LEARN,
    VXLAN_F_TTL_INHERIT,
    VXLAN_F_UDP_ZERO_CSUM6_RX,
    VXLAN_F_UDP_ZERO_CSUM6_TX,
    VXLAN_F_UDP_ZERO_CSUM_TX,
    VxlanParms,
    vxlan_fill_info,
)
from netstack.userspace.iproute2.ip.ip_common import (
    Args,
    duparg2,
    get_unsigned,
    invarg,
    matches,
)
from netstack.userspace.iproute2.ip.ip_route import rtnl_dsfield_a2n
from netstack.wire.ipv4 import aton, ipv4_is_multicast, ntoa

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetDevice

__all__ = ["VXLAN_DSTPORT_WARNING", "VXLAN_KINDS", "VXLAN_USAGE", "print_opt", "vxlan_parse_opt"]

VXLAN_KINDS: Final = ("vxlan",)
VXLAN_USAGE: Final = (
    "Usage: ... vxlan id VNI\n"
    "\t\t[ { group | remote } IP_ADDRESS ]\n"
    "\t\t[ local ADDR ]\n"
    "\t\t[ ttl TTL ]\n"
    "\t\t[ tos TOS ]\n"
    "\t\t[ df DF ]\n"
    "\t\t[ flowlabel LABEL ]\n"
    "\t\t[ dev PHYS_DEV ]\n"
    "\t\t[ dstport PORT ]\n"
    "\t\t[ srcport MIN MAX ]\n"
    "\t\t[ [no]learning ]\n"
    "\t\t[ [no]proxy ]\n"
    "\t\t[ [no]rsc ]\n"
    "\t\t[ [no]l2miss ]\n"
    "\t\t[ [no]l3miss ]\n"
    "\t\t[ ageing SECONDS ]\n"
    "\t\t[ maxaddress NUMBER ]\n"
    "\t\t[ [no]udpcsum ]\n"
    "\t\t[ [no]udp6zerocsumtx ]\n"
    "\t\t[ [no]udp6zerocsumrx ]\n"
    "\t\t[ [no]remcsumtx ] [ [no]remcsumrx ]\n"
    "\t\t[ [no]external ] [ gbp ] [ gpe ]\n"
    "\t\t[ [no]vnifilter ]\n"
    "\n"
    "Where:\tVNI\t:= 0-16777215\n"
    "\tADDR\t:= { IP_ADDRESS | any }\n"
    "\tTOS\t:= { NUMBER | inherit }\n"
    "\tTTL\t:= { 1..255 | auto | inherit }\n"
    "\tDF\t:= { unset | set | inherit }\n"
    "\tLABEL := 0-1048575"
)
VXLAN_DSTPORT_WARNING: Final = (
    "vxlan: destination port not specified\n"
    "Will use Linux kernel default (non-standard value)\n"
    "Use 'dstport 4789' to get the IANA assigned value\n"
    "Use 'dstport 0' to get default and quiet this message"
)
_UNSUPPORTED: Final = (
    "flowlabel",
    "label",
    "proxy",
    "noproxy",
    "rsc",
    "norsc",
    "l2miss",
    "nol2miss",
    "l3miss",
    "nol3miss",
    "remcsumtx",
    "noremcsumtx",
    "remcsumrx",
    "noremcsumrx",
    "external",
    "noexternal",
    "gbp",
    "gpe",
    "vnifilter",
    "novnifilter",
)


# iplink_vxlan.c's on/off words, in its order (the first whose prefix matches wins):
# word, the attribute it sets (each at most once), the value
_FLAG_WORDS: Final = (
    ("nolearning", "learning", False),
    ("learning", "learning", True),
    ("udpcsum", "udp_csum", True),
    ("noudpcsum", "udp_csum", False),
    ("udp6zerocsumtx", "csum6tx", True),
    ("noudp6zerocsumtx", "csum6tx", False),
    ("udp6zerocsumrx", "csum6rx", True),
    ("noudp6zerocsumrx", "csum6rx", False),
)


def _flag_word(word: str) -> tuple[str, bool] | None:
    for name, key, value in _FLAG_WORDS:
        if matches(word, name):
            return key, value
    return None


def _addr(value: str) -> int | None:
    """An IPv4 address (``any``: 0), or None if it is not one (iproute2: get_addr)."""
    if value in ("any", "all", "default"):
        return 0
    try:
        return aton(value)
    except (ValueError, OSError):
        return None


def vxlan_parse_opt(net: Net, args: Args, *, create: bool = True) -> tuple[VxlanParms, str | None]:
    """The words after ``type vxlan``, and the warning iproute2 prints on stderr.

    With *create* False (``ip link set DEV type vxlan …``: iproute2's
    ``set_op``) only what is said is sent: no VNI is required, no port warned
    about, learning left alone unless named.

    iproute2: ip/iplink_vxlan.c, vxlan_parse_opt().
    """
    seen: set[str] = set()

    def once(attr: str, key: str, arg: str) -> None:  # check_duparg()
        if attr in seen:
            duparg2(key, arg)
        seen.add(attr)

    vni: int | None = None
    group: int | None = None
    is_multi = False
    local: int | None = None
    link: int | None = None
    ttl: int | None = None
    ttl_inherit = False
    tos: int | None = None
    df: int | None = None
    flags: dict[str, bool] = {}  # the [no]learning / [no]udpcsum / [no]udp6zerocsum{tx,rx} words
    ageing: int | None = None
    limit: int | None = None
    port_range: tuple[int, int] | None = None
    dstport = 0
    while args:
        word = args.take()
        if matches(word, "id") or matches(word, "vni"):
            value = args.value()
            once("id", "id", value)
            v = get_unsigned(value)
            if v is None or v >= 1 << 24:
                invarg("invalid id", value)
            vni = v
        elif matches(word, "group"):
            if group is not None and not is_multi:
                raise ConfigError("vxlan: both group and remote cannot be specified", errno.EINVAL)
            value = args.value()
            once("group", "group", value)
            a = _addr(value)
            if a is None or not ipv4_is_multicast(a):
                invarg("invalid group address", value)
            group, is_multi = a, True
        elif matches(word, "remote"):
            if group is not None and is_multi:
                raise ConfigError("vxlan: both group and remote cannot be specified", errno.EINVAL)
            value = args.value()
            once("group", "remote", value)
            a = _addr(value)
            if a is None or ipv4_is_multicast(a) or not a:
                invarg("invalid remote address", value)
            group = a
        elif matches(word, "local"):
            value = args.value()
            once("local", "local", value)
            a = _addr(value)
            if a is None or ipv4_is_multicast(a):
                invarg("invalid local address", value)
            local = a
        elif matches(word, "dev"):
            value = args.value()
            once("link", "dev", value)
            dev = net.dev_get_by_name(value)
            if dev is None:
                raise ConfigError(f'Cannot find device "{value}"', errno.ENODEV)
            link = dev.ifindex
        elif matches(word, "ttl") or matches(word, "hoplimit"):
            value = args.value()
            once("ttl", "ttl", value)
            if value == "inherit":
                ttl_inherit = True
            elif value == "auto":
                ttl = 0
            else:
                t = get_unsigned(value)
                if t is None:
                    invarg("invalid TTL", value)
                if t > 255:
                    invarg("TTL must be <= 255", value)
                ttl = t
        elif matches(word, "tos") or matches(word, "dsfield"):
            value = args.value()
            once("tos", "tos", value)
            if value == "inherit":
                tos = 1
            else:
                t = rtnl_dsfield_a2n(value)
                if t is None:
                    invarg("bad TOS value", value)
                tos = t
        elif word == "df":
            value = args.value()
            once("df", "df", value)
            if value == "unset":
                df = 0
            elif value == "set":
                df = VXLAN_DF_SET
            elif value == "inherit":
                df = VXLAN_DF_INHERIT
            else:
                invarg("DF must be 'unset', 'set' or 'inherit'", value)
        elif matches(word, "ageing"):
            value = args.value()
            once("ageing", "ageing", value)
            if value == "none":
                ageing = 0
            else:
                age = get_unsigned(value)
                if age is None:
                    invarg("ageing timer", value)
                ageing = age
        elif matches(word, "maxaddress"):
            value = args.value()
            once("limit", "maxaddress", value)
            if value == "unlimited":
                limit = 0
            else:
                m = get_unsigned(value)
                if m is None:
                    invarg("max addresses", value)
                limit = m
        elif matches(word, "port") or matches(word, "srcport"):
            value = args.value()
            once("port_range", "srcport", value)
            low = get_unsigned(value)
            if low is None or low > 0xFFFF:
                invarg("min port", value)
            value = args.value()
            high = get_unsigned(value)
            if high is None or high > 0xFFFF:
                invarg("max port", value)
            if low or high:
                port_range = (low, high)
        elif matches(word, "dstport"):
            value = args.value()
            once("port", "dstport", value)
            p = get_unsigned(value)
            if p is None or p > 0xFFFF:
                invarg("dst port", value)
            dstport = p
        elif (flag := _flag_word(word)) is not None:
            attr, on = flag
            once(attr, word, word)
            flags[attr] = on
        elif word in _UNSUPPORTED:
            raise ConfigError(f'netstack: "vxlan {word}" is not supported', errno.EOPNOTSUPP)
        elif matches(word, "help"):
            raise ConfigError(VXLAN_USAGE, errno.EINVAL)
        else:
            raise ConfigError(f'vxlan: unknown command "{word}"?\n{VXLAN_USAGE}', errno.EINVAL)
    if "id" not in seen and create:
        raise ConfigError("vxlan: missing virtual network identifier", errno.EINVAL)
    if is_multi and "link" not in seen:
        raise ConfigError("vxlan: 'group' requires 'dev' to be specified", errno.EINVAL)
    warning = None if "port" in seen or not create else VXLAN_DSTPORT_WARNING
    parms = VxlanParms(
        vni=vni,
        group=group,
        local=local,
        link=link,
        ttl=ttl,
        tos=tos,
        learning=flags.get("learning", True) if create or "learning" in seen else None,
        ageing=ageing,
        limit=limit,
        port_range=port_range,
        port=dstport or None,
        udp_csum=flags.get("udp_csum"),
        udp_zero_csum6_tx=flags.get("csum6tx"),
        udp_zero_csum6_rx=flags.get("csum6rx"),
        ttl_inherit=ttl_inherit,
        df=df,
    )
    return parms, warning


def print_opt(dev: NetDevice) -> str:
    """``ip -d link``'s VXLAN line (after ``vxlan ``). iproute2: vxlan_print_opt()."""
    c = vxlan_fill_info(dev)
    o = [f"id {c.vni} "]
    if c.remote_ip:
        o.append(f"{'group' if ipv4_is_multicast(c.remote_ip) else 'remote'} {ntoa(c.remote_ip)} ")
    if c.saddr:
        o.append(f"local {ntoa(c.saddr)} ")
    if c.remote_ifindex:
        lower = dev.net.dev_get_by_index(c.remote_ifindex)
        o.append(f"dev {lower.name if lower is not None else f'if{c.remote_ifindex}'} ")
    o.append(f"srcport {c.port_min} {c.port_max} ")
    o.append(f"dstport {c.dst_port} ")
    if not c.flags & VXLAN_F_LEARN:
        o.append("nolearning ")
    if c.tos:
        o.append("tos inherit " if c.tos == 1 else f"tos {c.tos:#x} ")
    if c.flags & VXLAN_F_TTL_INHERIT:
        o.append("ttl inherit ")
    else:
        o.append(f"ttl {c.ttl} " if c.ttl else "ttl auto ")
    if c.df == VXLAN_DF_SET:
        o.append("df set ")
    elif c.df == VXLAN_DF_INHERIT:
        o.append("df inherit ")
    o.append(f"ageing {c.age_interval} " if c.age_interval else "ageing none ")
    if c.addrmax:
        o.append(f"maxaddr {c.addrmax} ")
    o.append("noudpcsum " if c.flags & VXLAN_F_UDP_ZERO_CSUM_TX else "udpcsum ")
    o.append("udp6zerocsumtx " if c.flags & VXLAN_F_UDP_ZERO_CSUM6_TX else "noudp6zerocsumtx ")
    o.append("udp6zerocsumrx " if c.flags & VXLAN_F_UDP_ZERO_CSUM6_RX else "noudp6zerocsumrx ")
    return "".join(o)
