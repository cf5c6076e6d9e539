"""``ip link … type vlan``: options parsed and ``ip -d link``'s line.

iproute2: ip/iplink_vlan.c (6.1).
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Final

from netstack.core.vlan_core import VLAN_FLAG_REORDER_HDR
from netstack.drivers.vlan import (
    VLAN_FLAG_BRIDGE_BINDING,
    VLAN_FLAG_GVRP,
    VLAN_FLAG_LOOSE_BINDING,
    VLAN_FLAG_MVRP,
    VlanParms,
    vlan_fill_info,
)
from netstack.errors import ConfigError
from netstack.userspace.iproute2.ip.ip_common import Args, get_unsigned, invarg, matches
from netstack.userspace.iproute2.status import Iproute2Exit

if TYPE_CHECKING:
    from netstack.core.netdevice import NetDevice

__all__ = ["VLAN_KINDS", "VLAN_USAGE", "print_opt", "vlan_parse_opt"]

VLAN_KINDS: Final = ("vlan",)
VLAN_USAGE: Final = (
    "Usage: ... vlan id VLANID\n"
    "\t\t[ protocol VLANPROTO ]\n"
    "\t\t[ reorder_hdr { on | off } ]\n"
    "\t\t[ gvrp { on | off } ]\n"
    "\t\t[ mvrp { on | off } ]\n"
    "\t\t[ loose_binding { on | off } ]\n"
    "\t\t[ bridge_binding { on | off } ]\n"
    "\t\t[ ingress-qos-map QOS-MAP ]\n"
    "\t\t[ egress-qos-map QOS-MAP ]\n"
    "\n"
    "VLANID := 0-4095\n"
    "VLANPROTO: [ 802.1Q | 802.1ad ]\n"
    "QOS-MAP := [ QOS-MAP ] QOS-MAPPING\n"
    "QOS-MAPPING := FROM:TO"
)
_PROTOS: Final = {"802.1q": 0x8100, "802.1ad": 0x88A8}
_FLAG_WORDS: Final = {
    "reorder_hdr": VLAN_FLAG_REORDER_HDR,
    "gvrp": VLAN_FLAG_GVRP,
    "mvrp": VLAN_FLAG_MVRP,
    "loose_binding": VLAN_FLAG_LOOSE_BINDING,
    "bridge_binding": VLAN_FLAG_BRIDGE_BINDING,
}


def _proto(value: str) -> int:
    """iproute2: ll_proto_a2n() for the two TPIDs (a number is accepted too)."""
    proto = _PROTOS.get(value.lower())
    if proto is None:
        num = get_unsigned(value, 0)
        if num is None or num > 0xFFFF:
            invarg("protocol is invalid", value)
        proto = num
    return proto


def _qos_map(args: Args) -> tuple[tuple[int, int], ...]:
    out = []
    while args and ":" in args.peek():
        a, b = args.take().split(":", 1)
        fa, fb = get_unsigned(a), get_unsigned(b)
        if fa is None or fb is None:
            raise ConfigError(VLAN_USAGE, errno.EINVAL)
        out.append((fa, fb))
    return tuple(out)


def vlan_parse_opt(args: Args) -> VlanParms:
    """The words after ``type vlan``. iproute2: ip/iplink_vlan.c, vlan_parse_opt()."""
    vid: int | None = None
    proto: int | None = None
    flags = 0
    mask = 0
    ingress: tuple[tuple[int, int], ...] = ()
    egress: tuple[tuple[int, int], ...] = ()
    while args:
        word = args.take()
        if matches(word, "protocol"):
            proto = _proto(args.value())
        elif matches(word, "id"):
            value = args.value()
            v = get_unsigned(value)
            if v is None or v > 0xFFFF:
                invarg("id is invalid", value)
            vid = v
        elif word in _FLAG_WORDS:
            value = args.value()
            bit = _FLAG_WORDS[word]
            mask |= bit
            if value == "on":
                flags |= bit
            elif value == "off":
                flags &= ~bit
            else:
                raise Iproute2Exit(
                    f'Error: argument of "{word}" must be "on" or "off", not "{value}"',
                    errno.EINVAL,
                    1,
                )
        elif matches(word, "ingress-qos-map"):
            ingress = _qos_map(args)
        elif matches(word, "egress-qos-map"):
            egress = _qos_map(args)
        elif matches(word, "help"):
            raise ConfigError(VLAN_USAGE, errno.EINVAL)
        else:
            raise ConfigError(f'vlan: unknown command "{word}"?\n{VLAN_USAGE}', errno.EPERM)
    return VlanParms(vid, proto, flags, mask, ingress, egress)


_FLAG_NAMES: Final = (
    (VLAN_FLAG_REORDER_HDR, "REORDER_HDR"),
    (VLAN_FLAG_GVRP, "GVRP"),
    (VLAN_FLAG_LOOSE_BINDING, "LOOSE_BINDING"),
    (VLAN_FLAG_MVRP, "MVRP"),
    (VLAN_FLAG_BRIDGE_BINDING, "BRIDGE_BINDING"),
)


def print_opt(dev: NetDevice) -> str:
    """``ip -d link``'s VLAN line (after ``vlan ``). iproute2: vlan_print_opt()."""
    p = vlan_fill_info(dev)
    proto = {0x8100: "802.1Q", 0x88A8: "802.1ad"}.get(p.proto or 0, f"{p.proto:#x}")
    names = [n for bit, n in _FLAG_NAMES if p.flags & bit]
    text = f"protocol {proto} id {p.vid} <{','.join(names)}> "
    if p.ingress_qos:
        text += "\n      ingress-qos-map { " + " ".join(f"{a}:{b}" for a, b in p.ingress_qos)
        text += " } "
    if p.egress_qos:
        text += "\n      egress-qos-map { " + " ".join(f"{a}:{b}" for a, b in p.egress_qos)
        text += " } "
    return text
