"""The ``bridge`` command (iproute2): ``bridge link``, ``bridge fdb``, ``bridge vlan``.

Theory of operation: like :mod:`.ip`, each object plays both halves of the
netlink conversation. ``bridge fdb add|append|replace|del`` builds the
request iproute2 would (``ndm_state`` NUD_NOARP by default, ``self`` assumed
when neither ``self`` nor ``master`` is given, ``permanent`` assumed when no
state is) and hands it to the kernel's generic
:func:`~netstack.core.rtnetlink.rtnl_fdb_add` / ``rtnl_fdb_del``, which call
the bridge's (or any device's) ``ndo_fdb_*``; ``bridge fdb show`` prints
:func:`~netstack.core.rtnetlink.rtnl_fdb_dump`. ``bridge link`` lists bridge
ports (RTM_GETLINK for ``AF_BRIDGE``) and ``bridge link set`` changes their
port options; ``bridge vlan`` shows and edits the VLAN sets. Output and error
texts are iproute2 6.1's (``print_fdb``, ``print_linkinfo``,
``print_vlan_info``); ``-s``, ``-d``, ``-j`` and ``-c`` are understood.

One difference: only IPv4 groups put their MAC on a device's multicast list
(``01:00:5e:00:00:01 dev eth0 self permanent`` for 224.0.0.1, joined at
device up, and one per group joined); the ``33:33:…`` entries Linux shows for
IPv6 groups are absent.

iproute2: bridge/bridge.c, bridge/fdb.c, bridge/link.c, bridge/vlan.c (6.1).
"""

from __future__ import annotations

import errno
import json
from typing import TYPE_CHECKING, Any, Final

from netstack.bridge.br_netlink import BridgePortOpts, br_setport
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
    BRIDGE_VLAN_INFO_BRENTRY,
    BRIDGE_VLAN_INFO_PVID,
    BRIDGE_VLAN_INFO_UNTAGGED,
    NetBridge,
    br_port_get_rcu,
)
from netstack.bridge.br_vlan import (
    br_vlan_add,
    br_vlan_delete,
    br_vlan_valid_id,
    nbp_vlan_add,
    nbp_vlan_delete,
)
from netstack.core.netdevice import IFF_EBRIDGE
from netstack.core.rtnetlink import (
    NDA_DST,
    NDA_IFINDEX,
    NDA_LLADDR,
    NDA_PORT,
    NDA_SRC_VNI,
    NDA_VLAN,
    NDA_VNI,
    NLM_F_APPEND,
    NLM_F_CREATE,
    NLM_F_EXCL,
    NLM_F_REPLACE,
    NTF_EXT_LEARNED,
    NTF_MASTER,
    NTF_OFFLOADED,
    NTF_ROUTER,
    NTF_SELF,
    NTF_STICKY,
    NTF_USE,
    NUD_NOARP,
    NUD_PERMANENT,
    NUD_REACHABLE,
    NUD_STALE,
    FdbMsg,
    rtnl_fdb_add,
    rtnl_fdb_del,
    rtnl_fdb_dump,
)
from netstack.errors import ConfigError
from netstack.userspace.iproute2.ip.ip_common import get_unsigned, matches, split_words
from netstack.userspace.iproute2.ip.ip_link import link_attrs, name_and_link, print_link_flags
from netstack.userspace.iproute2.utils import Iproute2Options
from netstack.wire.ipv4 import aton, ntoa

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetDevice
    from netstack.userspace.process import Machine, Process

__all__ = ["BRIDGE_USAGE", "bridge", "main"]

BRIDGE_USAGE: Final = (
    "Usage: bridge [ OPTIONS ] OBJECT { COMMAND | help }\n"
    "       bridge [ -force ] -batch filename\n"
    "where  OBJECT := { link | fdb | mdb | vlan | monitor }\n"
    "       OPTIONS := { -V[ersion] | -s[tatistics] | -d[etails] |\n"
    "                    -o[neline] | -t[imestamp] | -n[etns] name |\n"
    "                    -c[ompressvlans] -color -p[retty] -j[son] }"
)
LINK_USAGE: Final = (
    "Usage: bridge link set dev DEV [ cost COST ] [ priority PRIO ] [ state STATE ]\n"
    "                               [ guard {on | off} ]\n"
    "                               [ hairpin {on | off} ]\n"
    "                               [ fastleave {on | off} ]\n"
    "                               [ root_block {on | off} ]\n"
    "                               [ learning {on | off} ]\n"
    "                               [ learning_sync {on | off} ]\n"
    "                               [ flood {on | off} ]\n"
    "                               [ mcast_router MULTICAST_ROUTER ]\n"
    "                               [ mcast_flood {on | off} ]\n"
    "                               [ bcast_flood {on | off} ]\n"
    "                               [ mcast_to_unicast {on | off} ]\n"
    "                               [ neigh_suppress {on | off} ]\n"
    "                               [ vlan_tunnel {on | off} ]\n"
    "                               [ isolated {on | off} ]\n"
    "                               [ locked {on | off} ]\n"
    "                               [ hwmode {vepa | veb} ]\n"
    "                               [ backup_port DEVICE ] [ nobackup_port ]\n"
    "                               [ self ] [ master ]\n"
    "       bridge link show [dev DEV]"
)
FDB_USAGE: Final = (
    "Usage: bridge fdb { add | append | del | replace } ADDR dev DEV\n"
    "              [ self ] [ master ] [ use ] [ router ] [ extern_learn ]\n"
    "              [ sticky ] [ local | static | dynamic ] [ vlan VID ]\n"
    "              { [ dst IPADDR ] [ port PORT] [ vni VNI ] | [ nhid NHID ] }\n"
    "\t       [ via DEV ] [ src_vni VNI ]\n"
    "       bridge fdb [ show [ br BRDEV ] [ brport DEV ] [ vlan VID ]\n"
    "              [ state STATE ] [ dynamic ] ]\n"
    "       bridge fdb get [ to ] LLADDR [ br BRDEV ] { brport | dev } DEV\n"
    "              [ vlan VID ] [ vni VNI ] [ self ] [ master ] [ dynamic ]\n"
    "       bridge fdb flush dev DEV [ brport DEV ] [ vlan VID ]\n"
    "              [ self ] [ master ] [ [no]permanent | [no]static | [no]dynamic ]\n"
    "              [ [no]added_by_user ] [ [no]extern_learn ] [ [no]sticky ]\n"
    "              [ [no]offloaded ]"
)
VLAN_USAGE: Final = (
    "Usage: bridge vlan { add | del } vid VLAN_ID dev DEV [ tunnel_info id TUNNEL_ID ]\n"
    "                                                     [ pvid ] [ untagged ]\n"
    "                                                     [ self ] [ master ]\n"
    "       bridge vlan { set } vid VLAN_ID dev DEV [ state STP_STATE ]\n"
    "                                               [ mcast_router MULTICAST_ROUTER ]\n"
    "       bridge vlan { show } [ dev DEV ] [ vid VLAN_ID ]\n"
    "       bridge vlan { tunnelshow } [ dev DEV ] [ vid VLAN_ID ]\n"
    "       bridge vlan global { set } vid VLAN_ID dev DEV\n"
    "                      [ mcast_snooping MULTICAST_SNOOPING ]\n"
    "                      [ mcast_querier MULTICAST_QUERIER ]\n"
    "                      [ mcast_igmp_version IGMP_VERSION ]\n"
    "                      [ mcast_mld_version MLD_VERSION ]\n"
    "                      [ mcast_last_member_count LAST_MEMBER_COUNT ]\n"
    "                      [ mcast_last_member_interval LAST_MEMBER_INTERVAL ]\n"
    "                      [ mcast_startup_query_count STARTUP_QUERY_COUNT ]\n"
    "                      [ mcast_startup_query_interval STARTUP_QUERY_INTERVAL ]\n"
    "                      [ mcast_membership_interval MEMBERSHIP_INTERVAL ]\n"
    "                      [ mcast_querier_interval QUERIER_INTERVAL ]\n"
    "                      [ mcast_query_interval QUERY_INTERVAL ]\n"
    "                      [ mcast_query_response_interval QUERY_RESPONSE_INTERVAL ]\n"
    "       bridge vlan global { show } [ dev DEV ] [ vid VLAN_ID ]"
)
BRIDGE_FLAGS_MASTER: Final = 1
BRIDGE_FLAGS_SELF: Final = 2
IFNAMSIZ: Final = 16
VLAN_ID_LEN: Final = 9


def _fail(msg: str, err: int = errno.EINVAL) -> ConfigError:
    return ConfigError(msg, err)


def _mac(addr: bytes) -> str:
    return addr.hex(":")


def _name(net: Net, ifindex: int) -> str:
    dev = net.dev_get_by_index(ifindex)
    return dev.name if dev is not None else f"if{ifindex}"


# -- bridge fdb -----------------------------------------------------------------------------------
def _state_n2a(s: int) -> str:
    """iproute2: bridge/fdb.c, state_n2a()."""
    if s & NUD_PERMANENT:
        return "permanent"
    if s & NUD_NOARP:
        return "static"
    if s & NUD_STALE:
        return "stale"
    if s & NUD_REACHABLE:
        return ""
    return f"state={s:#x}"


def _state_a2n(arg: str) -> int | None:
    if matches(arg, "permanent"):
        return NUD_PERMANENT
    if matches(arg, "static") or matches(arg, "temp"):
        return NUD_NOARP
    if matches(arg, "stale"):
        return NUD_STALE
    if matches(arg, "reachable") or matches(arg, "dynamic"):
        return NUD_REACHABLE
    if arg == "all":
        return 0xFFFF
    return get_unsigned(arg)


def _dst_text(dst: bytes) -> str:
    if len(dst) == 4:
        return ntoa(int.from_bytes(dst, "big"))
    from ipaddress import IPv6Address

    return str(IPv6Address(dst))


def print_fdb(net: Net, m: FdbMsg, opts: Iproute2Options, filter_index: int) -> Any:
    """One entry, as iproute2's print_fdb() prints it (or its JSON object)."""
    if opts.json:
        obj: dict[str, Any] = {"mac": _mac(m.lladdr)}
        if not filter_index and m.ifindex:
            obj["ifname"] = _name(net, m.ifindex)
        if m.dst is not None:
            obj["dst"] = _dst_text(m.dst)
        if m.vlan:
            obj["vlan"] = m.vlan
        if m.port is not None:
            obj["port"] = m.port
        if m.vni is not None:
            obj["vni"] = m.vni
        if m.src_vni is not None:
            obj["src_vni"] = m.src_vni
        if m.via:
            obj["viaIf"] = _name(net, m.via)
        if opts.stats and m.used is not None:
            obj["used"] = m.used // 100
            obj["updated"] = (m.updated or 0) // 100
        flags = []
        if m.flags & NTF_SELF:
            flags.append("self")
        if m.flags & NTF_ROUTER:
            flags.append("router")
        if m.flags & NTF_EXT_LEARNED:
            flags.append("extern_learn")
        if m.flags & NTF_OFFLOADED:
            flags.append("offload")
        obj["flags"] = flags
        if m.master is not None:
            obj["master"] = _name(net, m.master)
        if m.flags & NTF_STICKY:
            obj["sticky"] = True
        state = _state_n2a(m.state)
        if state:
            obj["state"] = state
        return obj
    o = [f"{_mac(m.lladdr)} "]
    if not filter_index and m.ifindex:
        o.append(f"dev {_name(net, m.ifindex)} ")
    if m.dst is not None:
        o.append(f"dst {_dst_text(m.dst)} ")
    if m.vlan:
        o.append(f"vlan {m.vlan} ")
    if m.port is not None:
        o.append(f"port {m.port} ")
    if m.vni is not None:
        o.append(f"vni {m.vni} ")
    if m.src_vni is not None:
        o.append(f"src_vni {m.src_vni} ")
    if m.via:
        o.append(f"via {_name(net, m.via)} ")
    if opts.stats and m.used is not None:
        o.append(f"used {m.used // 100}/{(m.updated or 0) // 100} ")
    if m.flags & NTF_SELF:
        o.append("self ")
    if m.flags & NTF_ROUTER:
        o.append("router ")
    if m.flags & NTF_EXT_LEARNED:
        o.append("extern_learn ")
    if m.flags & NTF_OFFLOADED:
        o.append("offload ")
    if m.master is not None:
        o.append(f"master {_name(net, m.master)} ")
    if m.flags & NTF_STICKY:
        o.append("sticky ")
    o.append(f"{_state_n2a(m.state)}\n")
    return "".join(o)


def fdb_show(net: Net, opts: Iproute2Options, argv: list[str]) -> None:
    """iproute2: bridge/fdb.c, fdb_show()."""
    filter_dev: str | None = None
    br_name: str | None = None
    filter_vlan = 0
    filter_state = 0
    filter_dynamic = False
    i = 0
    while i < len(argv):
        w = argv[i]
        if w in ("brport", "dev"):
            i += 1
            if i >= len(argv):
                raise _fail('Command line is not complete. Try option "help"')
            filter_dev = argv[i]
        elif w == "br":
            i += 1
            if i >= len(argv):
                raise _fail('Command line is not complete. Try option "help"')
            br_name = argv[i]
        elif w == "vlan":
            i += 1
            if i >= len(argv):
                raise _fail('Command line is not complete. Try option "help"')
            if filter_vlan:
                raise _fail(f'Error: duplicate "vlan": "{argv[i]}" is the second value.')
            filter_vlan = get_unsigned(argv[i]) or 0
        elif w == "state":
            i += 1
            if i >= len(argv):
                raise _fail('Command line is not complete. Try option "help"')
            st = _state_a2n(argv[i])
            if st is None:
                raise _fail(f'Error: argument "{argv[i]}" is wrong: invalid state')
            filter_state |= st
        elif w == "dynamic":
            filter_dynamic = True
        elif matches(w, "help"):
            raise _fail(FDB_USAGE)
        i += 1
    br: NetDevice | None = None
    if br_name is not None:
        br = net.dev_get_by_name(br_name)
        if br is None:
            raise _fail(f'Cannot find bridge device "{br_name}"', errno.ENODEV)
    brport: NetDevice | None = None
    filter_index = 0
    if filter_dev is not None:
        brport = net.dev_get_by_name(filter_dev)
        if brport is None:
            raise _fail(f'Cannot find device "{filter_dev}"', errno.ENODEV)
        filter_index = brport.ifindex
    objs: list[Any] = []
    for m in rtnl_fdb_dump(net, brport=brport, br=br):
        if filter_index and m.ifindex != filter_index:
            continue
        if filter_state and not m.state & filter_state:
            continue
        if filter_vlan and filter_vlan != m.vlan:
            continue
        if filter_dynamic and m.state & (NUD_PERMANENT | NUD_NOARP):
            continue
        out = print_fdb(net, m, opts, filter_index)
        if opts.json:
            objs.append(out)
        else:
            opts.write(out)
    if opts.json:
        opts.write(_json(objs, opts) + "\n")


def _json(obj: Any, opts: Iproute2Options) -> str:
    if opts.pretty:
        return json.dumps(obj, indent=4)
    return json.dumps(obj, separators=(",", ":"))


def fdb_modify(net: Net, argv: list[str], nlflags: int, delete: bool) -> None:
    """``bridge fdb add|append|replace|del``. iproute2: bridge/fdb.c, fdb_modify()."""
    ndm_state = NUD_NOARP
    ndm_flags = 0
    addr: str | None = None
    d: str | None = None
    tb: dict[int, Any] = {}
    vid = -1
    i = 0

    def value() -> str:
        nonlocal i
        i += 1
        if i >= len(argv):
            raise _fail('Command line is not complete. Try option "help"')
        return argv[i]

    while i < len(argv):
        w = argv[i]
        if w == "dev":
            d = value()
        elif w == "dst":
            text = value()
            if NDA_DST in tb:
                raise _fail(f'Error: either "dst" is duplicate, or "{text}" is a garbage.')
            tb[NDA_DST] = _parse_addr(text)
        elif w == "port":
            text = value()
            port = get_unsigned(text)
            if port is None or port > 0xFFFF:
                raise _fail(f'Error: argument "{text}" is wrong: invalid port\n')
            tb[NDA_PORT] = port
        elif w == "vni":
            text = value()
            vni = get_unsigned(text)
            if vni is None or vni >> 24:
                raise _fail(f'Error: argument "{text}" is wrong: invalid VNI\n')
            tb[NDA_VNI] = vni
        elif w == "src_vni":
            text = value()
            svni = get_unsigned(text)
            if svni is None or svni >> 24:
                raise _fail(f'Error: argument "{text}" is wrong: invalid src_vni\n')
            tb[NDA_SRC_VNI] = svni
        elif w == "via":
            text = value()
            via = net.dev_get_by_name(text)
            if via is None:
                raise _fail(f'Error: argument "{text}" is wrong: invalid device\n')
            tb[NDA_IFINDEX] = via.ifindex
        elif w == "self":
            ndm_flags |= NTF_SELF
        elif matches(w, "master"):
            ndm_flags |= NTF_MASTER
        elif matches(w, "router"):
            ndm_flags |= NTF_ROUTER
        elif matches(w, "local") or matches(w, "permanent"):
            ndm_state |= NUD_PERMANENT
        elif matches(w, "temp") or matches(w, "static"):
            ndm_state |= NUD_REACHABLE
        elif matches(w, "dynamic"):
            ndm_state |= NUD_REACHABLE
            ndm_state &= ~NUD_NOARP
        elif matches(w, "vlan"):
            if vid >= 0:
                raise _fail(f'Error: either "vlan" is duplicate, or "{argv[i]}" is a garbage.')
            text = value()
            vid = _atoi(text)
        elif matches(w, "use"):
            ndm_flags |= NTF_USE
        elif w == "extern_learn":
            ndm_flags |= NTF_EXT_LEARNED
        elif w == "sticky":
            ndm_flags |= NTF_STICKY
        else:
            if w == "to":
                w = value()
            if matches(w, "help"):
                raise _fail(FDB_USAGE)
            if addr is not None:
                raise _fail(f'Error: either "to" is duplicate, or "{w}" is a garbage.')
            addr = w
        i += 1
    if d is None or addr is None:
        raise _fail("Device and address are required arguments.")
    if not ndm_flags & (NTF_SELF | NTF_MASTER):
        ndm_flags |= NTF_SELF  # "Assume self"
    if not ndm_state & (NUD_PERMANENT | NUD_REACHABLE):
        ndm_state |= NUD_PERMANENT  # "Assume permanent"
    mac = _sscanf_mac(addr)
    if mac is None:
        raise _fail(f"Invalid mac address {addr}")
    tb[NDA_LLADDR] = mac
    if vid >= 0:
        tb[NDA_VLAN] = vid & 0xFFFF
    dev = net.dev_get_by_name(d)
    if dev is None:
        raise _fail(f'Cannot find device "{d}"', errno.ENODEV)
    if delete:
        rtnl_fdb_del(net, dev.ifindex, ndm_state, ndm_flags, tb)
    else:
        rtnl_fdb_add(net, dev.ifindex, ndm_state, ndm_flags, tb, nlflags)


def _atoi(s: str) -> int:
    digits = ""
    for ch in s.strip():
        if ch.isdigit() or (not digits and ch in "+-"):
            digits += ch
        else:
            break
    try:
        return int(digits)
    except ValueError:
        return 0


def _sscanf_mac(text: str) -> bytes | None:
    """``sscanf("%hhx:%hhx:%hhx:%hhx:%hhx:%hhx")`` must read six numbers."""
    parts = text.split(":")
    if len(parts) < 6:
        return None
    out = []
    for part in parts[:6]:
        hexpart = ""
        for ch in part:
            if ch in "0123456789abcdefABCDEF":
                hexpart += ch
            else:
                break
        if not hexpart:
            return None
        out.append(int(hexpart, 16) & 0xFF)
    return bytes(out)


def _parse_addr(text: str) -> bytes:
    try:
        return aton(text).to_bytes(4, "big")
    except (ValueError, OSError):
        pass
    from ipaddress import AddressValueError, IPv6Address

    try:
        return IPv6Address(text).packed
    except AddressValueError:
        raise _fail(f'Error: any valid address is expected rather than "{text}".') from None


def do_fdb(net: Net, opts: Iproute2Options, argv: list[str]) -> None:
    """iproute2: bridge/fdb.c, do_fdb()."""
    if not argv:
        fdb_show(net, opts, [])
        return
    w, rest = argv[0], argv[1:]
    if matches(w, "add"):
        fdb_modify(net, rest, NLM_F_CREATE | NLM_F_EXCL, False)
    elif matches(w, "append"):
        fdb_modify(net, rest, NLM_F_CREATE | NLM_F_APPEND, False)
    elif matches(w, "replace"):
        fdb_modify(net, rest, NLM_F_CREATE | NLM_F_REPLACE, False)
    elif matches(w, "delete"):
        fdb_modify(net, rest, 0, True)
    elif matches(w, "show") or matches(w, "lst") or matches(w, "list"):
        fdb_show(net, opts, rest)
    elif matches(w, "help"):
        raise _fail(FDB_USAGE)
    elif matches(w, "get") or matches(w, "flush"):
        raise _fail(f'netstack: "bridge fdb {w}" is not supported', errno.EOPNOTSUPP)
    else:
        raise _fail(f'Command "{w}" is unknown, try "bridge fdb help".')


# -- bridge link ---------------------------------------------------------------------------------
def _ports(net: Net) -> list[NetDevice]:
    return [
        net.dev_index[i]
        for i in sorted(net.dev_index)
        if br_port_get_rcu(net.dev_index[i]) is not None
    ]


def _onoff(flags: int, bit: int) -> str:
    return "on" if flags & bit else "off"


def link_show(net: Net, opts: Iproute2Options, argv: list[str]) -> None:
    """iproute2: bridge/link.c, print_linkinfo() over the AF_BRIDGE link dump."""
    filter_dev: NetDevice | None = None
    i = 0
    while i < len(argv):
        if argv[i] == "dev":
            i += 1
            if i >= len(argv):
                raise _fail('Command line is not complete. Try option "help"')
            filter_dev = net.dev_get_by_name(argv[i])
            if filter_dev is None:
                raise _fail(f'Cannot find device "{argv[i]}"', errno.ENODEV)
        i += 1
    objs: list[dict[str, Any]] = []
    for dev in _ports(net):
        if filter_dev is not None and dev is not filter_dev:
            continue
        p = br_port_get_rcu(dev)
        assert p is not None
        assert dev.master is not None
        la = link_attrs(dev)
        name, mdown = name_and_link(la)
        if opts.json:
            obj: dict[str, Any] = {"ifindex": dev.ifindex}
            if "@" in name:
                obj["link"] = name.split("@", 1)[1]
            obj["ifname"] = dev.name
            flags = print_link_flags(la.flags, mdown).strip()[1:-1]
            obj["flags"] = flags.split(",") if flags else []
            obj["mtu"] = dev.mtu
            obj["master"] = dev.master.name
            obj["state"] = BR_STATE_NAMES[p.state]
            obj["priority"] = p.priority
            obj["cost"] = p.path_cost
            if opts.details:
                for key, bit in _LINK_FLAGS:
                    obj[key] = bool(p.flags & bit)
            objs.append(obj)
            continue
        line = (
            f"{dev.ifindex}: {name}: {print_link_flags(la.flags, mdown)}mtu {dev.mtu} "
            f"master {dev.master.name} state {BR_STATE_NAMES[p.state]} "
            f"priority {p.priority} cost {p.path_cost} \n"
        )
        if opts.details:
            f = p.flags
            line += (
                f"    hairpin {_onoff(f, BR_HAIRPIN_MODE)} guard {_onoff(f, BR_BPDU_GUARD)} "
                f"root_block {_onoff(f, BR_ROOT_BLOCK)} fastleave off "
                f"learning {_onoff(f, BR_LEARNING)} flood {_onoff(f, BR_FLOOD)} "
                f"mcast_flood {_onoff(f, BR_MCAST_FLOOD)} "
                f"bcast_flood {_onoff(f, BR_BCAST_FLOOD)} mcast_router 1 "
                "mcast_to_unicast off neigh_suppress off vlan_tunnel off "
                f"isolated {_onoff(f, BR_ISOLATED)} locked off \n"
            )
        opts.write(line)
    if opts.json:
        opts.write(_json(objs, opts) + "\n")


_LINK_FLAGS: Final = (
    ("hairpin", BR_HAIRPIN_MODE),
    ("guard", BR_BPDU_GUARD),
    ("root_block", BR_ROOT_BLOCK),
    ("learning", BR_LEARNING),
    ("flood", BR_FLOOD),
    ("mcast_flood", BR_MCAST_FLOOD),
    ("bcast_flood", BR_BCAST_FLOOD),
    ("isolated", BR_ISOLATED),
)
_STATES: Final = ("disabled", "listening", "learning", "forwarding", "blocking")


def link_set(net: Net, argv: list[str]) -> None:
    """``bridge link set dev DEV …``. iproute2: bridge/link.c, brlink_modify()."""
    o = BridgePortOpts()
    d: str | None = None
    i = 0

    def value() -> str:
        nonlocal i
        i += 1
        if i >= len(argv):
            raise _fail('Command line is not complete. Try option "help"')
        return argv[i]

    def onoff(word: str) -> int:
        v = value()
        if v not in ("on", "off"):
            raise _fail(f'Error: argument of "{word}" must be "on" or "off", not "{v}"')
        return 1 if v == "on" else 0

    flag_words = {
        "guard": "guard",
        "hairpin": "hairpin",
        "root_block": "root_block",
        "learning": "learning",
        "flood": "flood",
        "mcast_flood": "mcast_flood",
        "bcast_flood": "bcast_flood",
        "isolated": "isolated",
    }
    while i < len(argv):
        w = argv[i]
        if w == "dev":
            d = value()
        elif w in flag_words:
            setattr(o, flag_words[w], onoff(w))
        elif w == "cost":
            text = value()
            cost = get_unsigned(text)
            if cost is None:
                raise _fail(f'Error: argument "{text}" is wrong: Invalid "cost" value\n')
            o.cost = cost
        elif w == "priority":
            text = value()
            prio = get_unsigned(text)
            if prio is None or prio > 0xFFFF:
                raise _fail(f'Error: argument "{text}" is wrong: Invalid "priority" value\n')
            o.priority = prio
        elif w == "state":
            text = value()
            if text in _STATES:
                o.state = _STATES.index(text)
            else:
                st = get_unsigned(text)
                if st is None or st > 0xFF:
                    raise _fail(f'Error: argument "{text}" is wrong: Invalid "state" value\n')
                o.state = st
        elif w in ("self", "master"):
            pass
        elif w in (
            "fastleave",
            "learning_sync",
            "mcast_router",
            "mcast_to_unicast",
            "neigh_suppress",
            "vlan_tunnel",
            "locked",
            "hwmode",
            "backup_port",
            "nobackup_port",
        ):
            raise _fail(f'netstack: "bridge link set ... {w}" is not supported', errno.EOPNOTSUPP)
        else:
            raise _fail(LINK_USAGE)
        i += 1
    if d is None:
        raise _fail("Device is a required argument.")
    dev = net.dev_get_by_name(d)
    if dev is None:
        raise _fail(f'Cannot find bridge device "{d}"', errno.ENODEV)
    p = br_port_get_rcu(dev)
    if p is None:
        raise _fail("RTNETLINK answers: Operation not supported", errno.EOPNOTSUPP)
    br_setport(p, o)


def do_link(net: Net, opts: Iproute2Options, argv: list[str]) -> None:
    """iproute2: bridge/link.c, do_link()."""
    if not argv:
        link_show(net, opts, [])
        return
    w, rest = argv[0], argv[1:]
    if matches(w, "set") or matches(w, "change"):
        link_set(net, rest)
    elif matches(w, "show") or matches(w, "lst") or matches(w, "list"):
        link_show(net, opts, rest)
    elif matches(w, "help"):
        raise _fail(LINK_USAGE)
    else:
        raise _fail(f'Command "{w}" is unknown, try "bridge link help".')


# -- bridge vlan ---------------------------------------------------------------------------------
def _vlan_rows(dev: NetDevice) -> list[tuple[int, int]]:
    """(vid, flags) the kernel reports for *dev*: a port's VLANs, or a bridge's BRENTRYs."""
    p = br_port_get_rcu(dev)
    if p is not None:
        vg = p.vlgrp
    elif dev.priv_flags & IFF_EBRIDGE:
        br: NetBridge = dev.priv
        vg = br.vlgrp
    else:
        return []
    rows = []
    for v in vg.sorted():
        if not v.should_use():
            continue
        flags = v.flags & BRIDGE_VLAN_INFO_UNTAGGED
        if vg.pvid == v.vid:
            flags |= BRIDGE_VLAN_INFO_PVID
        rows.append((v.vid, flags))
    return rows


def _compress(rows: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """Ranges of consecutive VIDs with the same flags (``-c``; a PVID stands alone)."""
    out: list[tuple[int, int, int]] = []
    for vid, flags in rows:
        if (
            out
            and out[-1][1] == vid - 1
            and out[-1][2] == flags
            and not flags & BRIDGE_VLAN_INFO_PVID
        ):
            out[-1] = (out[-1][0], vid, flags)
        else:
            out.append((vid, vid, flags))
    return out


def vlan_show(net: Net, opts: Iproute2Options, argv: list[str]) -> None:
    """iproute2: bridge/vlan.c, vlan_show() / print_vlan_info()."""
    filter_dev: NetDevice | None = None
    filter_vlan = 0
    i = 0
    while i < len(argv):
        w = argv[i]
        if w in ("dev", "vid"):
            i += 1
            if i >= len(argv):
                raise _fail('Command line is not complete. Try option "help"')
            if w == "dev":
                filter_dev = net.dev_get_by_name(argv[i])
                if filter_dev is None:
                    raise _fail(f'Cannot find device "{argv[i]}"', errno.ENODEV)
            else:
                filter_vlan = _atoi(argv[i])
        i += 1
    if not opts.json:
        opts.write(f"{'port':<{IFNAMSIZ}}  {'vlan-id':<{VLAN_ID_LEN}}\n")
    result: list[dict[str, Any]] = []
    for ifindex in sorted(net.dev_index):
        dev = net.dev_index[ifindex]
        if filter_dev is not None and dev is not filter_dev:
            continue
        rows = _vlan_rows(dev)
        ranges = _compress(rows) if opts.compress else [(vid, vid, flags) for vid, flags in rows]
        if filter_vlan:
            ranges = [r for r in ranges if r[0] <= filter_vlan <= r[1]]
        if not ranges:
            continue
        vlans = []
        for n, (start, end, flags) in enumerate(ranges):
            text = f"{start}" if start == end else f"{start}-{end}"
            if flags & BRIDGE_VLAN_INFO_PVID:
                text += " PVID"
            if flags & BRIDGE_VLAN_INFO_UNTAGGED:
                text += " Egress Untagged"
            lead = dev.name if n == 0 else ""
            if not opts.json:
                opts.write(f"{lead:<{IFNAMSIZ}}  {text}\n")
            v: dict[str, Any] = {"vlan": start}
            if end != start:
                v["vlanEnd"] = end
            fl = []
            if flags & BRIDGE_VLAN_INFO_PVID:
                fl.append("PVID")
            if flags & BRIDGE_VLAN_INFO_UNTAGGED:
                fl.append("Egress Untagged")
            if fl:
                v["flags"] = fl
            vlans.append(v)
        result.append({"ifname": dev.name, "vlans": vlans})
    if opts.json:
        opts.write(_json(result, opts) + "\n")


def vlan_modify(net: Net, argv: list[str], delete: bool) -> None:
    """``bridge vlan add|del vid V dev DEV [pvid] [untagged] [self] [master]``.

    iproute2: bridge/vlan.c, vlan_modify(); kernel: rtnl_bridge_setlink() /
    rtnl_bridge_dellink() → br_setlink() → br_afspec().
    """
    d: str | None = None
    vid = -1
    vid_end = -1
    vflags = 0
    flags = 0
    i = 0
    while i < len(argv):
        w = argv[i]
        if w == "dev":
            i += 1
            if i >= len(argv):
                raise _fail('Command line is not complete. Try option "help"')
            d = argv[i]
        elif w == "vid":
            i += 1
            if i >= len(argv):
                raise _fail('Command line is not complete. Try option "help"')
            text = argv[i]
            if "-" in text[1:]:
                a, b = text.split("-", 1)
                vid, vid_end = _atoi(a), _atoi(b)
            else:
                vid = _atoi(text)
        elif w == "self":
            flags |= BRIDGE_FLAGS_SELF
        elif w == "master":
            flags |= BRIDGE_FLAGS_MASTER
        elif w == "pvid":
            vflags |= BRIDGE_VLAN_INFO_PVID
        elif w == "untagged":
            vflags |= BRIDGE_VLAN_INFO_UNTAGGED
        elif w == "tunnel_info":
            raise _fail('netstack: "bridge vlan ... tunnel_info" is not supported', 95)
        elif matches(w, "help"):
            raise _fail(VLAN_USAGE)
        i += 1
    if d is None or vid == -1:
        raise _fail("Device and VLAN ID are required arguments.")
    dev = net.dev_get_by_name(d)
    if dev is None:
        raise _fail(f'Cannot find bridge device "{d}"', errno.ENODEV)
    if vid >= 4096 or vid < 0:
        raise _fail(f'Invalid VLAN ID "{vid & 0xFFFF}"')
    vids = [vid]
    if vid_end != -1:
        if vid_end >= 4096 or vid >= vid_end:
            raise _fail(f'Invalid VLAN range "{vid}-{vid_end}"')
        if vflags & BRIDGE_VLAN_INFO_PVID:
            raise _fail("pvid cannot be configured for a vlan range")
        vids = list(range(vid, vid_end + 1))
    # rtnl_bridge_setlink(): the master's ndo for a port (default), then self
    done = False
    if not flags or flags & BRIDGE_FLAGS_MASTER:
        p = br_port_get_rcu(dev)
        if p is None:
            raise _fail("RTNETLINK answers: Operation not supported", errno.EOPNOTSUPP)
        for v in vids:
            br_vlan_valid_id(v)
            if delete:
                nbp_vlan_delete(p, v)
            else:
                nbp_vlan_add(p, v, vflags)
        done = True
    if flags & BRIDGE_FLAGS_SELF:
        if not dev.priv_flags & IFF_EBRIDGE:
            raise _fail("RTNETLINK answers: Operation not supported", errno.EOPNOTSUPP)
        br: NetBridge = dev.priv
        for v in vids:
            br_vlan_valid_id(v)
            if delete:
                br_vlan_delete(br, v)
            else:
                br_vlan_add(br, v, vflags | BRIDGE_VLAN_INFO_BRENTRY)
        done = True
    assert done


def do_vlan(net: Net, opts: Iproute2Options, argv: list[str]) -> None:
    """iproute2: bridge/vlan.c, do_vlan()."""
    if not argv:
        vlan_show(net, opts, [])
        return
    w, rest = argv[0], argv[1:]
    if matches(w, "add"):
        vlan_modify(net, rest, False)
    elif matches(w, "delete"):
        vlan_modify(net, rest, True)
    elif matches(w, "show") or matches(w, "lst") or matches(w, "list"):
        vlan_show(net, opts, rest)
    elif matches(w, "help"):
        raise _fail(VLAN_USAGE)
    elif matches(w, "set") or matches(w, "tunnelshow") or w == "global":
        raise _fail(f'netstack: "bridge vlan {w}" is not supported', errno.EOPNOTSUPP)
    else:
        raise _fail(f'Command "{w}" is unknown, try "bridge vlan help".')


# -- the command ---------------------------------------------------------------------------------
def bridge(net: Net, command: str | list[str]) -> str:
    """Run ``bridge ARGS`` on *net*; return what it prints.

    Raises:
        ConfigError: with the tool's message on bad input.
    """
    argv = split_words(command) if isinstance(command, str) else list(command)
    opts = Iproute2Options()
    while argv and argv[0].startswith("-") and len(argv[0]) > 1:
        opt = argv.pop(0)
        if opt.startswith("--"):
            opt = opt[1:]
        if opt == "-help" or matches(opt, "-help"):
            raise _fail(BRIDGE_USAGE)
        if matches(opt, "-Version") or opt == "-V":
            return "bridge utility, 6.1.0\n"
        if matches(opt, "-stats") or matches(opt, "-statistics"):
            opts.stats += 1
        elif matches(opt, "-details"):
            opts.details += 1
        elif matches(opt, "-json"):
            opts.json = True
        elif matches(opt, "-pretty"):
            opts.pretty = True
        elif matches(opt, "-compressvlans"):
            opts.compress = True
        elif matches(opt, "-oneline") or matches(opt, "-timestamp") or opt == "-color":
            pass
        else:
            raise _fail(f'Option "{opt}" is unknown, try "bridge help".')
    if not argv:
        raise _fail(BRIDGE_USAGE)
    obj, rest = argv[0], argv[1:]
    if matches(obj, "link"):
        do_link(net, opts, rest)
    elif matches(obj, "fdb"):
        do_fdb(net, opts, rest)
    elif matches(obj, "vlan"):
        do_vlan(net, opts, rest)
    elif matches(obj, "help"):
        raise _fail(BRIDGE_USAGE)
    elif matches(obj, "mdb") or matches(obj, "monitor"):
        raise _fail(f'netstack: "bridge {obj}" is not supported', errno.EOPNOTSUPP)
    else:
        raise _fail(f'Object "{obj}" is unknown, try "bridge help".')
    return "".join(opts.out)


async def main(proc: Process, host: Machine, argv: list[str]) -> int:
    """The ``bridge`` command; a refusal prints the tool's text and exits 255 as bridge does."""
    try:
        text = bridge(host.net, argv)
    except ConfigError as e:
        proc.err(str(e))
        return 255
    if text:
        proc.out(text.rstrip("\n"))
    return 0
