"""``ip link … type bridge`` and ``type bridge_slave``: options parsed, attributes printed.

Theory of operation: iproute2's ``link_util`` modules for the bridge and
its ports. :func:`bridge_parse_opt` turns the words after ``type bridge``
into :class:`~netstack.bridge.br_netlink.BridgeOpts` (the ``IFLA_BR_*`` of
the request); :func:`bridge_slave_parse_opt` the words after ``type
bridge_slave`` into ``BridgePortOpts``. :func:`print_opt` and
:func:`print_slave_opt` are ``ip -d link``'s lines, in iproute2 6.1's order
and formats: timers as ``%4i.%.2i`` seconds, bridge ids as ``8000.`` plus
``ether_ntoa`` (no leading zeros: ``8000.2:b:…``). The multicast-snooping
attributes print the kernel's defaults (netstack floods multicast as a
bridge without a querier does; see docs).

iproute2: ip/iplink_bridge.c, ip/iplink_bridge_slave.c (6.1).
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Final

from netstack.bridge.br_netlink import (
    BridgeOpts,
    BridgePortOpts,
    br_fill_info,
    br_port_fill_info,
)
from netstack.bridge.br_private import (
    BR_BCAST_FLOOD,
    BR_BPDU_GUARD,
    BR_FLOOD,
    BR_HAIRPIN_MODE,
    BR_ISOLATED,
    BR_LEARNING,
    BR_MCAST_FLOOD,
    BR_ROOT_BLOCK,
    BR_STATE_NAMES,
)
from netstack.errors import ConfigError
from netstack.userspace.iproute2.ip.ip_common import (
    Args,
    get_u8,
    get_unsigned,
    invarg,
    ll_addr_a2n,
    matches,
)
from netstack.userspace.iproute2.status import Iproute2Exit

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetDevice

__all__ = [
    "BRIDGE_KINDS",
    "BRIDGE_SLAVE_USAGE",
    "BRIDGE_USAGE",
    "bridge_parse_opt",
    "bridge_slave_parse_opt",
    "ether_ntoa",
    "print_opt",
    "print_slave_opt",
]

BRIDGE_KINDS: Final = ("bridge",)

BRIDGE_USAGE: Final = (
    "Usage: ... bridge [ fdb_flush ]\n"
    "\t\t  [ forward_delay FORWARD_DELAY ]\n"
    "\t\t  [ hello_time HELLO_TIME ]\n"
    "\t\t  [ max_age MAX_AGE ]\n"
    "\t\t  [ ageing_time AGEING_TIME ]\n"
    "\t\t  [ stp_state STP_STATE ]\n"
    "\t\t  [ priority PRIORITY ]\n"
    "\t\t  [ group_fwd_mask MASK ]\n"
    "\t\t  [ group_address ADDRESS ]\n"
    "\t\t  [ no_linklocal_learn NO_LINKLOCAL_LEARN ]\n"
    "\t\t  [ vlan_filtering VLAN_FILTERING ]\n"
    "\t\t  [ vlan_protocol VLAN_PROTOCOL ]\n"
    "\t\t  [ vlan_default_pvid VLAN_DEFAULT_PVID ]\n"
    "\t\t  [ vlan_stats_enabled VLAN_STATS_ENABLED ]\n"
    "\t\t  [ vlan_stats_per_port VLAN_STATS_PER_PORT ]\n"
    "\t\t  [ mcast_snooping MULTICAST_SNOOPING ]\n"
    "\t\t  [ mcast_vlan_snooping MULTICAST_VLAN_SNOOPING ]\n"
    "\t\t  [ mcast_router MULTICAST_ROUTER ]\n"
    "\t\t  [ mcast_query_use_ifaddr MCAST_QUERY_USE_IFADDR ]\n"
    "\t\t  [ mcast_querier MULTICAST_QUERIER ]\n"
    "\t\t  [ mcast_hash_elasticity HASH_ELASTICITY ]\n"
    "\t\t  [ mcast_hash_max HASH_MAX ]\n"
    "\t\t  [ mcast_last_member_count LAST_MEMBER_COUNT ]\n"
    "\t\t  [ mcast_startup_query_count STARTUP_QUERY_COUNT ]\n"
    "\t\t  [ mcast_last_member_interval LAST_MEMBER_INTERVAL ]\n"
    "\t\t  [ mcast_membership_interval MEMBERSHIP_INTERVAL ]\n"
    "\t\t  [ mcast_querier_interval QUERIER_INTERVAL ]\n"
    "\t\t  [ mcast_query_interval QUERY_INTERVAL ]\n"
    "\t\t  [ mcast_query_response_interval QUERY_RESPONSE_INTERVAL ]\n"
    "\t\t  [ mcast_startup_query_interval STARTUP_QUERY_INTERVAL ]\n"
    "\t\t  [ mcast_stats_enabled MCAST_STATS_ENABLED ]\n"
    "\t\t  [ mcast_igmp_version IGMP_VERSION ]\n"
    "\t\t  [ mcast_mld_version MLD_VERSION ]\n"
    "\t\t  [ nf_call_iptables NF_CALL_IPTABLES ]\n"
    "\t\t  [ nf_call_ip6tables NF_CALL_IP6TABLES ]\n"
    "\t\t  [ nf_call_arptables NF_CALL_ARPTABLES ]\n"
    "\n"
    "Where: VLAN_PROTOCOL := { 802.1Q | 802.1ad }"
)

BRIDGE_SLAVE_USAGE: Final = (
    "Usage: ... bridge_slave [ fdb_flush ]\n"
    "\t\t\t[ state STATE ]\n"
    "\t\t\t[ priority PRIO ]\n"
    "\t\t\t[ cost COST ]\n"
    "\t\t\t[ guard {on | off} ]\n"
    "\t\t\t[ hairpin {on | off} ]\n"
    "\t\t\t[ fastleave {on | off} ]\n"
    "\t\t\t[ root_block {on | off} ]\n"
    "\t\t\t[ learning {on | off} ]\n"
    "\t\t\t[ flood {on | off} ]\n"
    "\t\t\t[ proxy_arp {on | off} ]\n"
    "\t\t\t[ proxy_arp_wifi {on | off} ]\n"
    "\t\t\t[ mcast_router MULTICAST_ROUTER ]\n"
    "\t\t\t[ mcast_fast_leave {on | off} ]\n"
    "\t\t\t[ mcast_flood {on | off} ]\n"
    "\t\t\t[ bcast_flood {on | off} ]\n"
    "\t\t\t[ mcast_to_unicast {on | off} ]\n"
    "\t\t\t[ group_fwd_mask MASK ]\n"
    "\t\t\t[ neigh_suppress {on | off} ]\n"
    "\t\t\t[ vlan_tunnel {on | off} ]\n"
    "\t\t\t[ isolated {on | off} ]\n"
    "\t\t\t[ locked {on | off} ]\n"
    "\t\t\t[ backup_port DEVICE ] [ nobackup_port ]"
)

# accepted by iproute2 and the kernel, but not modelled by netstack's bridge
_UNMODELLED: Final = (
    "no_linklocal_learn",
    "vlan_stats_per_port",
    "mcast_snooping",
    "mcast_vlan_snooping",
    "mcast_router",
    "mcast_query_use_ifaddr",
    "mcast_querier",
    "mcast_hash_elasticity",
    "mcast_hash_max",
    "mcast_last_member_count",
    "mcast_startup_query_count",
    "mcast_last_member_interval",
    "mcast_membership_interval",
    "mcast_querier_interval",
    "mcast_query_interval",
    "mcast_query_response_interval",
    "mcast_startup_query_interval",
    "mcast_stats_enabled",
    "mcast_igmp_version",
    "mcast_mld_version",
    "nf_call_iptables",
    "nf_call_ip6tables",
    "nf_call_arptables",
)


def _unsupported(word: str) -> ConfigError:
    return ConfigError(f'netstack: "ip link ... {word}" is not supported', errno.EOPNOTSUPP)


def _u32(word: str, value: str) -> int:
    v = get_unsigned(value)
    if v is None:
        invarg(f"invalid {word}", value)
    return v


def bridge_parse_opt(net: Net, args: Args) -> BridgeOpts:
    """The words after ``type bridge``. iproute2: ip/iplink_bridge.c, bridge_parse_opt()."""
    o = BridgeOpts()
    while args:
        word = args.take()
        if matches(word, "fdb_flush"):
            o.fdb_flush = True
        elif matches(word, "forward_delay"):
            o.forward_delay = _u32("forward_delay", args.value())
        elif matches(word, "hello_time"):
            o.hello_time = _u32("hello_time", args.value())
        elif matches(word, "max_age"):
            o.max_age = _u32("max_age", args.value())
        elif matches(word, "ageing_time"):
            o.ageing_time = _u32("ageing_time", args.value())
        elif matches(word, "stp_state"):
            o.stp_state = _u32("stp_state", args.value())
        elif matches(word, "priority"):
            value = args.value()
            prio = get_unsigned(value)
            if prio is None or prio > 0xFFFF:
                invarg("invalid priority", value)
            o.priority = prio
        elif matches(word, "vlan_filtering"):
            value = args.value()
            vf = get_u8(value)
            if vf is None:
                invarg("invalid vlan_filtering", value)
            o.vlan_filtering = vf
        elif matches(word, "vlan_protocol"):
            value = args.value()
            proto = {"802.1q": 0x8100, "802.1ad": 0x88A8}.get(value.lower())
            if proto is None:
                invarg("invalid vlan_protocol", value)
            o.vlan_protocol = proto
        elif matches(word, "group_fwd_mask"):
            value = args.value()
            mask = get_unsigned(value)
            if mask is None or mask > 0xFFFF:
                invarg("invalid group_fwd_mask", value)
            o.group_fwd_mask = mask
        elif matches(word, "group_address"):
            o.group_address = ll_addr_a2n(args.value(), 32)
        elif matches(word, "vlan_default_pvid"):
            value = args.value()
            pvid = get_unsigned(value)
            if pvid is None or pvid > 0xFFFF:
                invarg("invalid vlan_default_pvid", value)
            o.vlan_default_pvid = pvid
        elif matches(word, "vlan_stats_enabled"):
            value = args.value()
            st = get_u8(value)
            if st is None:
                invarg("invalid vlan_stats_enabled", value)
            o.vlan_stats_enabled = st
        elif word in _UNMODELLED:
            raise _unsupported(word)
        elif matches(word, "help"):
            raise ConfigError(BRIDGE_USAGE, errno.EINVAL)
        else:
            raise ConfigError(f'bridge: unknown command "{word}"?\n{BRIDGE_USAGE}', errno.EPERM)
    return o


def _on_off(word: str, value: str) -> int:
    if value == "on":
        return 1
    if value == "off":
        return 0
    raise Iproute2Exit(
        f'Error: argument of "{word}" must be "on" or "off", not "{value}"', errno.EINVAL, 1
    )


_PORT_STATES: Final = ("disabled", "listening", "learning", "forwarding", "blocking")


def bridge_slave_parse_opt(net: Net, args: Args) -> BridgePortOpts:
    """The words after ``type bridge_slave``. iproute2: ip/iplink_bridge_slave.c."""
    o = BridgePortOpts()
    flags = {
        "guard": "guard",
        "hairpin": "hairpin",
        "root_block": "root_block",
        "learning": "learning",
        "flood": "flood",
        "mcast_flood": "mcast_flood",
        "bcast_flood": "bcast_flood",
        "isolated": "isolated",
    }
    while args:
        word = args.take()
        if matches(word, "fdb_flush"):
            o.fdb_flush = True
        elif matches(word, "state"):
            value = args.value()
            if value in _PORT_STATES:
                o.state = _PORT_STATES.index(value)
            else:
                st = get_u8(value)
                if st is None:
                    invarg("state is invalid", value)
                o.state = st
        elif matches(word, "priority"):
            value = args.value()
            prio = get_unsigned(value)
            if prio is None or prio > 0xFFFF:
                invarg("priority is invalid", value)
            o.priority = prio
        elif matches(word, "cost"):
            o.cost = _u32("cost", args.value())
        elif word in flags:
            setattr(o, flags[word], _on_off(word, args.value()))
        elif word in (
            "fastleave",
            "proxy_arp",
            "proxy_arp_wifi",
            "mcast_router",
            "mcast_fast_leave",
            "mcast_to_unicast",
            "group_fwd_mask",
            "neigh_suppress",
            "vlan_tunnel",
            "locked",
            "backup_port",
            "nobackup_port",
        ):
            raise _unsupported(word)
        elif matches(word, "help"):
            raise ConfigError(BRIDGE_SLAVE_USAGE, errno.EINVAL)
        else:
            raise ConfigError(
                f'bridge_slave: unknown option "{word}"?\n{BRIDGE_SLAVE_USAGE}', errno.EPERM
            )
    return o


def ether_ntoa(addr: bytes) -> str:
    """glibc ``ether_ntoa_r``: ``%x:%x:…``, no leading zeros."""
    return ":".join(f"{b:x}" for b in addr)


def _bridge_id(bid: bytes) -> str:
    """iproute2: br_dump_bridge_id()."""
    return f"{bid[0]:02x}{bid[1]:02x}.{ether_ntoa(bid[2:])}"


def _timer(name: str, ticks: int) -> str:
    """``%s %4i.%.2i`` of USER_HZ ticks. iproute2: _bridge_print_timer()."""
    return f"{name} {ticks // 100:4d}.{ticks % 100:02d} "


def print_opt(dev: NetDevice) -> str:
    """``ip -d link``'s bridge attributes (after ``bridge ``). iproute2: bridge_print_opt()."""
    i = br_fill_info(dev)
    proto = {0x8100: "802.1Q", 0x88A8: "802.1ad"}.get(i.vlan_protocol, f"{i.vlan_protocol:#x}")
    mask = f"{i.group_fwd_mask:#x}" if i.group_fwd_mask else "0"
    return (
        f"forward_delay {i.forward_delay} hello_time {i.hello_time} max_age {i.max_age} "
        f"ageing_time {i.ageing_time} stp_state {i.stp_state} priority {i.priority} "
        f"vlan_filtering {i.vlan_filtering} vlan_protocol {proto} "
        f"bridge_id {_bridge_id(i.bridge_id)} designated_root {_bridge_id(i.root_id)} "
        f"root_port {i.root_port} root_path_cost {i.root_path_cost} "
        f"topology_change {i.topology_change} "
        f"topology_change_detected {i.topology_change_detected} "
        + _timer("hello_timer", i.hello_timer)
        + _timer("tcn_timer", i.tcn_timer)
        + _timer("topology_change_timer", i.topology_change_timer)
        + _timer("gc_timer", i.gc_timer)
        + f"vlan_default_pvid {i.vlan_default_pvid} "
        f"vlan_stats_enabled {i.vlan_stats_enabled} vlan_stats_per_port 0 "
        f"group_fwd_mask {mask} group_address {i.group_addr.hex(':')} "
        "mcast_snooping 1 no_linklocal_learn 0 mcast_vlan_snooping 0 mcast_router 1 "
        "mcast_query_use_ifaddr 0 mcast_querier 0 mcast_hash_elasticity 16 "
        "mcast_hash_max 4096 mcast_last_member_count 2 mcast_startup_query_count 2 "
        "mcast_last_member_interval 100 mcast_membership_interval 26000 "
        "mcast_querier_interval 25500 mcast_query_interval 12500 "
        "mcast_query_response_interval 1000 mcast_startup_query_interval 3124 "
        "mcast_stats_enabled 0 mcast_igmp_version 2 mcast_mld_version 1 "
        "nf_call_iptables 0 nf_call_ip6tables 0 nf_call_arptables 0 "
    )


def _onoff(flags: int, bit: int) -> str:
    return "on" if flags & bit else "off"


def print_slave_opt(dev: NetDevice) -> str:
    """``ip -d link``'s bridge-port attributes (after ``bridge_slave ``).

    iproute2: ip/iplink_bridge_slave.c, bridge_slave_print_opt().
    """
    i = br_port_fill_info(dev)
    if i is None:
        return ""
    f = i.flags
    return (
        f"state {BR_STATE_NAMES[i.state]} priority {i.priority} cost {i.cost} "
        f"hairpin {_onoff(f, BR_HAIRPIN_MODE)} guard {_onoff(f, BR_BPDU_GUARD)} "
        f"root_block {_onoff(f, BR_ROOT_BLOCK)} fastleave off "
        f"learning {_onoff(f, BR_LEARNING)} flood {_onoff(f, BR_FLOOD)} "
        f"port_id {i.port_id:#x} port_no {i.port_no:#x} designated_port {i.designated_port} "
        f"designated_cost {i.designated_cost} "
        f"designated_bridge {_bridge_id(i.designated_bridge)} "
        f"designated_root {_bridge_id(i.designated_root)} "
        + _timer("hold_timer", i.hold_timer)
        + _timer("message_age_timer", i.message_age_timer)
        + _timer("forward_delay_timer", i.forward_delay_timer)
        + f"topology_change_ack {i.topology_change_ack} config_pending {i.config_pending} "
        "proxy_arp off proxy_arp_wifi off mcast_router 1 mcast_fast_leave off "
        f"mcast_flood {_onoff(f, BR_MCAST_FLOOD)} bcast_flood {_onoff(f, BR_BCAST_FLOOD)} "
        "mcast_to_unicast off neigh_suppress off "
        f"group_fwd_mask {i.group_fwd_mask} group_fwd_mask_str {i.group_fwd_mask:#x} "
        f"vlan_tunnel off isolated {_onoff(f, BR_ISOLATED)} locked off "
    )
