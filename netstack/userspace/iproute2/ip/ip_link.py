"""``ip link``: show, add (veth, dummy), set and delete network devices.

Theory of operation: ``ip link`` talks RTM_NEWLINK/RTM_DELLINK/RTM_GETLINK to
the kernel; here the "netlink message" is read straight off the
:class:`~netstack.core.netdevice.NetDevice` by :func:`link_attrs` (the
equivalent of the kernel's ``rtnl_fill_ifinfo``: flags as ``dev_get_flags``
reports them, the operstate a dump carries, ``IFLA_LINK`` and the link netns of
a veth peer, the qdisc, the statistics), and :func:`print_linkinfo` prints it
exactly as iproute2's ``print_linkinfo`` does: each field ``"%s "`` with its
trailing space, ``qlen`` last on the first line, the ``link/…`` line, and with
``-d`` / ``-s`` / ``-br`` / ``-o`` the details, statistics, brief and one-line
layouts. ``ip addr`` reuses the same printer (``do_link`` false: no ``mode``).

Changes go through the kernel-side functions in the order the kernel's
``do_setlink`` applies one RTM_NEWLINK: address, MTU, group, name, alias,
flags (up/down, arp, multicast, promisc…), carrier, txqueuelen.

iproute2: ip/iplink.c, ip/ipaddress.c (print_linkinfo, print_stats64),
ip/link_veth.c. Kernel: net/core/rtnetlink.c (rtnl_fill_ifinfo, do_setlink,
rtnl_newlink, rtnl_dellink).
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Any, Final

import attrs

from netstack.core.dev import (
    dev_change_flags,
    dev_change_name,
    dev_change_tx_queue_len,
    dev_set_mac_address,
    dev_set_mtu,
    netif_carrier_off,
    netif_carrier_on,
    unregister_netdevice,
)
from netstack.core.net_generic import NetKey
from netstack.core.netdevice import (
    IF_OPER_DOWN,
    IF_OPER_UNKNOWN,
    IF_OPER_UP,
    IFF_ALLMULTI,
    IFF_DORMANT,
    IFF_DYNAMIC,
    IFF_LOWER_UP,
    IFF_MULTICAST,
    IFF_NOARP,
    IFF_NOTRAILERS,
    IFF_POINTOPOINT,
    IFF_PROMISC,
    IFF_RUNNING,
    IFF_UP,
    OPERSTATE_NAMES,
)
from netstack.core.rtnetlink import request_module, rtnl_link_ops_get
from netstack.drivers.dummy import dummy_newlink
from netstack.drivers.veth import veth_newlink
from netstack.errors import ConfigError
from netstack.sites import kernel
from netstack.userspace.iproute2.ip import link_bridge, link_tunnel, link_vlan, link_vxlan
from netstack.userspace.iproute2.ip.ip_common import (
    AF_PACKET,
    AF_UNSPEC,
    IFNAMSIZ,
    Args,
    check_altifname,
    check_ifname,
    duparg,
    duparg2,
    get_integer,
    invarg,
    ll_addr_a2n,
    ll_addr_n2a,
    ll_name_to_dev,
    ll_type_n2a,
    matches,
    nodev,
    rtnl_error,
    rtnl_group_a2n,
    rtnl_group_n2a,
    strtol,
)
from netstack.userspace.iproute2.ip.ip_json import stats64_json
from netstack.userspace.iproute2.status import EXIT_USAGE, Iproute2Exit
from netstack.userspace.iproute2.utils import Iproute2Options

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetDevice, NetDeviceStats

__all__ = [
    "IPLINK_USAGE",
    "LinkAttrs",
    "LinkFilter",
    "do_iplink",
    "link_attrs",
    "print_link_stats",
    "print_linkinfo",
]

IPLINK_TYPES_USAGE: Final = (
    "TYPE := { amt | bareudp | bond | bond_slave | bridge | bridge_slave |\n"
    "          dsa | dummy | erspan | geneve | gre | gretap | gtp | hsr |\n"
    "          ifb | ip6erspan | ip6gre | ip6gretap | ip6tnl |\n"
    "          ipip | ipoib | ipvlan | ipvtap |\n"
    "          macsec | macvlan | macvtap | netdevsim |\n"
    "          netkit | nlmon | ovpn | pfcp | rmnet | sit | team | team_slave |\n"
    "          vcan | veth | vlan | vrf | vti | vxcan | vxlan | wwan |\n"
    "          xfrm | virt_wifi }"
)

IPLINK_USAGE: Final = (
    "Usage: ip link add [link DEV | parentdev NAME] [ name ] NAME\n"
    "\t\t    [ txqueuelen PACKETS ]\n"
    "\t\t    [ address LLADDR ]\n"
    "\t\t    [ broadcast LLADDR ]\n"
    "\t\t    [ mtu MTU ] [index IDX ]\n"
    "\t\t    [ numtxqueues QUEUE_COUNT ]\n"
    "\t\t    [ numrxqueues QUEUE_COUNT ]\n"
    "\t\t    [ netns { PID | NETNSNAME | NETNSFILE } ]\n"
    "\t\t    type TYPE [ ARGS ]\n"
    "\n"
    "\tip link delete { DEVICE | dev DEVICE | group DEVGROUP } type TYPE [ ARGS ]\n"
    "\n"
    "\tip link { set | change } { DEVICE | dev DEVICE | group DEVGROUP }\n"
    "\t\t\t[ { up | down } ]\n"
    "\t\t\t[ type TYPE ARGS ]\n"
    "\t\t[ arp { on | off } ]\n"
    "\t\t[ dynamic { on | off } ]\n"
    "\t\t[ multicast { on | off } ]\n"
    "\t\t[ allmulticast { on | off } ]\n"
    "\t\t[ promisc { on | off } ]\n"
    "\t\t[ trailers { on | off } ]\n"
    "\t\t[ carrier { on | off } ]\n"
    "\t\t[ txqueuelen PACKETS ]\n"
    "\t\t[ name NEWNAME ]\n"
    "\t\t[ address LLADDR ]\n"
    "\t\t[ broadcast LLADDR ]\n"
    "\t\t[ mtu MTU ]\n"
    "\t\t[ netns { PID | NETNSNAME | NETNSFILE } ]\n"
    "\t\t[ link-netns NAME | link-netnsid ID ]\n"
    "\t\t[ alias NAME ]\n"
    "\t\t[ master DEVICE ][ vrf NAME ]\n"
    "\t\t[ nomaster ]\n"
    "\t\t[ protodown { on | off } ]\n"
    "\t\t[ gso_max_size BYTES ] [ gso_ipv4_max_size BYTES ] [ gso_max_segs PACKETS ]\n"
    "\t\t[ gro_max_size BYTES ] [ gro_ipv4_max_size BYTES ]\n"
    "\n"
    "\tip link show [ DEVICE | group GROUP ] [ { up | down } ] [master DEV] [vrf NAME]\n"
    "\t\t[type TYPE] [nomaster] [ novf ]\n"
    "\n"
    "\tip link help [ TYPE ]\n"
    "\n" + IPLINK_TYPES_USAGE
)

VETH_USAGE: Final = (
    "Usage: ip link <options> type veth [peer <options>]\nTo get <options> type 'ip link add help'"
)

# Link kinds this kernel can create (rtnl_link_ops registered by drivers).
KERNEL_KINDS: Final = ("veth", "dummy")
# iproute2 link_util modules without a parse_opt: extra arguments are garbage.
NO_PARSE_OPT_KINDS: Final = ("dummy", "ifb", "nlmon", "vcan", "netdevsim", "virt_wifi")
# Device kinds created by the lab rather than rtnetlink (no rtnl_link_ops).
HARDWARE_KINDS: Final = ("", "nic")

GSO_MAX_SIZE: Final = 524280
TSO_LEGACY_MAX_SIZE: Final = 65536
IFALIASZ: Final = 256
LINK_MODES: Final = ("DEFAULT", "DORMANT")

# print_link_flags order (ip/ipaddress.c)
_FLAG_ORDER: Final = (
    (0x8, "LOOPBACK"),
    (0x2, "BROADCAST"),
    (0x10, "POINTOPOINT"),
    (0x1000, "MULTICAST"),
    (0x80, "NOARP"),
    (0x200, "ALLMULTI"),
    (0x100, "PROMISC"),
    (0x400, "MASTER"),
    (0x800, "SLAVE"),
    (0x4, "DEBUG"),
    (0x8000, "DYNAMIC"),
    (0x4000, "AUTOMEDIA"),
    (0x2000, "PORTSEL"),
    (0x20, "NOTRAILERS"),
    (0x1, "UP"),
    (0x10000, "LOWER_UP"),
    (0x20000, "DORMANT"),
    (0x40000, "ECHO"),
)


# ---------------------------------------------------------------------------
# What the kernel reports about a device (rtnl_fill_ifinfo)
# ---------------------------------------------------------------------------


@attrs.frozen
class LinkAttrs:
    """One device as an RTM_NEWLINK message carries it."""

    dev: NetDevice
    ifindex: int
    name: str
    flags: int
    operstate: int
    iflink: int | None  # IFLA_LINK (None: attribute absent)
    link_netnsid: int | None  # IFLA_LINK_NETNSID
    link_name: str | None  # the IFLA_LINK device's name in our Net
    link_up: bool
    kind: str | None  # IFLA_INFO_KIND


@kernel("rtnl_fill_ifinfo")
def operstate_of(dev: NetDevice) -> int:
    """``IFLA_OPERSTATE``: DOWN unless running. Kernel: rtnl_fill_ifinfo().

    A device whose driver never reports carrier keeps IF_OPER_UNKNOWN (lo,
    dummy), as in the kernel.
    """
    if not dev.running:
        return IF_OPER_DOWN
    return int(dev.operstate)


@kernel("net/core/dev.c", "dev_get_flags")
def dev_get_flags(dev: NetDevice) -> int:
    """The flags a link dump reports. Kernel: net/core/dev.c, dev_get_flags()."""
    flags = dev.flags & ~(IFF_RUNNING | IFF_LOWER_UP | IFF_DORMANT)
    if dev.running:
        if operstate_of(dev) in (IF_OPER_UP, IF_OPER_UNKNOWN):
            flags |= IFF_RUNNING
        if dev.carrier:
            flags |= IFF_LOWER_UP
    return int(flags)


_NETNS_IDS: NetKey[dict[Net, int]] = NetKey("netns_ids")


@kernel("peernet2id_alloc")
def netns_id(net: Net, peer_net: Net) -> int:
    """The id *net* knows *peer_net* by, allocated on first use. Kernel: peernet2id_alloc()."""
    ids = _NETNS_IDS.get_or_create(net, dict)
    if peer_net not in ids:
        ids[peer_net] = len(ids)
    return ids[peer_net]


def link_kind(dev: NetDevice) -> str | None:
    """``IFLA_INFO_KIND``: only devices created through rtnl_link_ops have one."""
    return None if dev.kind in HARDWARE_KINDS else str(dev.kind)


def link_attrs(dev: NetDevice) -> LinkAttrs:
    """Read what the kernel's rtnl_fill_ifinfo would report for *dev*."""
    net = dev.net
    iflink = int(dev.ops.ndo_get_iflink(dev))
    if iflink == dev.ifindex and dev.iflink and dev.iflink != dev.ifindex:
        iflink = int(dev.iflink)
    peer = dev.ops.ndo_get_peer_dev(dev)
    netnsid: int | None = None
    link_name: str | None = None
    link_up = True
    has_link = iflink != dev.ifindex
    if peer is not None and peer.net is not net:
        netnsid = netns_id(net, peer.net)
        has_link = True
    elif has_link and iflink:
        lower = net.dev_get_by_index(iflink)
        if lower is not None:
            link_name = lower.name
            link_up = bool(dev_get_flags(lower) & IFF_UP)
    return LinkAttrs(
        dev=dev,
        ifindex=dev.ifindex,
        name=dev.name,
        flags=dev_get_flags(dev),
        operstate=operstate_of(dev),
        iflink=iflink if has_link else None,
        link_netnsid=netnsid,
        link_name=link_name,
        link_up=link_up,
        kind=link_kind(dev),
    )


# ---------------------------------------------------------------------------
# Printing (ip/ipaddress.c)
# ---------------------------------------------------------------------------


@attrs.define
class LinkFilter:
    """``struct link_filter``: what ``ip link``/``ip addr`` show."""

    ifindex: int = 0
    family: int = AF_UNSPEC
    up: bool = False
    down: bool = False
    kind: str | None = None
    label: str | None = None
    group: int = -1
    showqueue: bool = True


def link_flag_names(flags: int, mdown: bool) -> list[str]:
    """The words of ``<BROADCAST,MULTICAST,UP,LOWER_UP>`` (``-j``'s ``"flags"``)."""
    parts: list[str] = []
    if flags & IFF_UP and not flags & IFF_RUNNING:
        parts.append("NO-CARRIER")
    flags &= ~IFF_RUNNING
    for bit, name in _FLAG_ORDER:
        if flags & bit:
            flags &= ~bit
            parts.append(name)
    if flags:
        parts.append(f"{flags:x}")
    if mdown:
        parts.append("M-DOWN")
    return parts


def print_link_flags(flags: int, mdown: bool) -> str:
    """``<BROADCAST,MULTICAST,UP,LOWER_UP> ``. iproute2: print_link_flags()."""
    return f"<{','.join(link_flag_names(flags, mdown))}> "


def name_and_link(la: LinkAttrs) -> tuple[str, bool]:
    """``name``, ``name@peer``, ``name@ifN`` or ``name@NONE``; and the M-DOWN flag.

    iproute2: lib/utils.c, print_name_and_link().
    """
    if la.iflink is None:
        return la.name, False
    if not la.iflink:
        return f"{la.name}@NONE", False
    if la.link_netnsid is not None:
        return f"{la.name}@if{la.iflink}", False
    link = la.link_name if la.link_name is not None else f"if{la.iflink}"
    return f"{la.name}@{link}", not la.link_up


def _operstate_name(state: int) -> str:
    return OPERSTATE_NAMES[state] if 0 <= state < len(OPERSTATE_NAMES) else f"{state:#x}"


def print_num(opts: Iproute2Options, width: int, count: int) -> str:
    """One right-aligned counter and a space. iproute2: lib/utils.c, print_num()."""
    base = 1024 if opts.iec else 1000
    if not opts.human or count < base:
        return f"{count:>{width}} "
    prefix = "kMGTPE"
    k = 0
    powi = 1
    while True:
        powi *= base
        if count // base < powi:
            break
        if k + 1 >= len(prefix):
            break
        k += 1
    precision = 2
    powj = 1
    while precision > 0:
        powj *= 10
        if count // powi < powj:
            break
        precision -= 1
    text = f"{count / powi:.{precision}f}{prefix[k]}{'i' if opts.iec else ''}"
    return f"{text:>{width}} "


def _size(cols: list[int], opts: Iproute2Options, *values: int) -> None:
    if opts.human:
        return
    for i, v in enumerate(values):
        cols[i] = max(cols[i], len(str(v)))


def print_stats64(opts: Iproute2Options, s: NetDeviceStats, carrier_changes: int) -> str:
    """The ``RX:``/``TX:`` table of ``-s`` (and the error rows of ``-s -s``).

    The returned text has no final newline. iproute2: ip/ipaddress.c, print_stats64().
    """
    sl = opts.sl
    cols = [10, 7, 6, 7, 7, 7, 10, 9]  # "*X errors:", packets, errors, dropped, heartbt…
    otherhost = 0
    _size(
        cols,
        opts,
        s.rx_bytes,
        s.rx_packets,
        s.rx_errors,
        s.rx_dropped,
        s.rx_missed_errors,
        s.multicast,
        s.rx_compressed,
        0,
    )
    if opts.stats > 1:
        _size(
            cols,
            opts,
            0,
            s.rx_length_errors,
            s.rx_crc_errors,
            s.rx_frame_errors,
            s.rx_fifo_errors,
            s.rx_over_errors,
            s.rx_nohandler,
            otherhost,
        )
    _size(
        cols,
        opts,
        s.tx_bytes,
        s.tx_packets,
        s.tx_errors,
        s.tx_dropped,
        s.tx_carrier_errors,
        s.collisions,
        s.tx_compressed,
        0,
    )
    if opts.stats > 1:
        _size(
            cols,
            opts,
            0,
            0,
            s.tx_aborted_errors,
            s.tx_fifo_errors,
            s.tx_window_errors,
            s.tx_heartbeat_errors,
            carrier_changes,
            0,
        )
    o: list[str] = []
    o.append(
        f"    RX: {'bytes':>{cols[0] - 4}} {'packets':>{cols[1]}} {'errors':>{cols[2]}} "
        f"{'dropped':>{cols[3]}} {'missed':>{cols[4]}} {'mcast':>{cols[5]}} "
        f"{'compressed' if s.rx_compressed else '':>{cols[6]}}{sl}"
    )
    o.append("    ")
    for w, v in zip(
        cols,
        (s.rx_bytes, s.rx_packets, s.rx_errors, s.rx_dropped, s.rx_missed_errors, s.multicast),
        strict=False,
    ):
        o.append(print_num(opts, w, v))
    if s.rx_compressed:
        o.append(print_num(opts, cols[6], s.rx_compressed))
    if opts.stats > 1:
        o.append(sl)
        nohandler = f"{' nohandler':>{cols[6] + 1}}" if s.rx_nohandler else ""
        o.append(
            f"    RX errors:{'':>{cols[0] - 10}} {'length':>{cols[1]}} {'crc':>{cols[2]}} "
            f"{'frame':>{cols[3]}} {'fifo':>{cols[4]}} {'overrun':>{cols[5]}}{nohandler}{sl}"
        )
        o.append(" " * (cols[0] + 5))
        for w, v in zip(
            cols[1:],
            (
                s.rx_length_errors,
                s.rx_crc_errors,
                s.rx_frame_errors,
                s.rx_fifo_errors,
                s.rx_over_errors,
            ),
            strict=False,
        ):
            o.append(print_num(opts, w, v))
        if s.rx_nohandler:
            o.append(print_num(opts, cols[6], s.rx_nohandler))
    o.append(sl)
    o.append(
        f"    TX: {'bytes':>{cols[0] - 4}} {'packets':>{cols[1]}} {'errors':>{cols[2]}} "
        f"{'dropped':>{cols[3]}} {'carrier':>{cols[4]}} {'collsns':>{cols[5]}} "
        f"{'compressed' if s.tx_compressed else '':>{cols[6]}}{sl}"
    )
    o.append("    ")
    for w, v in zip(
        cols,
        (
            s.tx_bytes,
            s.tx_packets,
            s.tx_errors,
            s.tx_dropped,
            s.tx_carrier_errors,
            s.collisions,
        ),
        strict=False,
    ):
        o.append(print_num(opts, w, v))
    if s.tx_compressed:
        o.append(print_num(opts, cols[6], s.tx_compressed))
    if opts.stats > 1:
        o.append(sl)
        o.append(
            f"    TX errors:{'':>{cols[0] - 10}} {'aborted':>{cols[1]}} {'fifo':>{cols[2]}} "
            f"{'window':>{cols[3]}} {'heartbt':>{cols[4]}} {'transns':>{cols[5]}}{sl}"
        )
        o.append(" " * (cols[0] + 5))
        for w, v in zip(
            cols[1:],
            (
                s.tx_aborted_errors,
                s.tx_fifo_errors,
                s.tx_window_errors,
                s.tx_heartbeat_errors,
                carrier_changes,
            ),
            strict=False,
        ):
            o.append(print_num(opts, w, v))
    return "".join(o)


def carrier_changes(dev: NetDevice) -> int:
    """``IFLA_CARRIER_CHANGES``: carrier up + down transitions, if the device counts them."""
    up = getattr(dev, "carrier_up_count", 0)
    down = getattr(dev, "carrier_down_count", 0)
    return int(up) + int(down)


def print_link_stats(opts: Iproute2Options, dev: NetDevice) -> str:
    """The statistics block (``ip -s addr`` prints it after the addresses)."""
    return print_stats64(opts, dev.statistics(), carrier_changes(dev))


def _details(opts: Iproute2Options, la: LinkAttrs) -> str:
    dev = la.dev
    o: list[str] = []
    # the kernel's counters include the user's flag (dev->gflags)
    promisc = dev.promiscuity + (1 if dev.flags & IFF_PROMISC else 0)
    allmulti = dev.allmulti + (1 if dev.flags & IFF_ALLMULTI else 0)
    o.append(f" promiscuity {promisc} ")
    o.append(f"allmulti {allmulti} ")
    o.append(f"minmtu {dev.min_mtu} ")
    o.append(f"maxmtu {dev.max_mtu} ")
    if la.kind is not None:
        o.append(f"{opts.sl}    {la.kind} ")
        if la.kind in link_tunnel.TUNNEL_KINDS:
            o.append(link_tunnel.print_opt(dev))
        elif la.kind in link_bridge.BRIDGE_KINDS:
            o.append(link_bridge.print_opt(dev))
        elif la.kind in link_vlan.VLAN_KINDS:
            o.append(link_vlan.print_opt(dev))
        elif la.kind in link_vxlan.VXLAN_KINDS:
            o.append(link_vxlan.print_opt(dev))
    if dev.master is not None and dev.master.kind == "bridge":
        o.append(f"{opts.sl}    bridge_slave {link_bridge.print_slave_opt(dev)}")
    big_tso = dev.type == 772 or la.kind in ("veth", "bridge")  # they raise tso_max_size
    tso_default = GSO_MAX_SIZE if big_tso else TSO_LEGACY_MAX_SIZE
    o.append(f"numtxqueues {dev.num_tx_queues} ")
    o.append(f"numrxqueues {dev.num_rx_queues} ")
    o.append(f"gso_max_size {dev.gso_max_size} ")
    o.append(f"gso_max_segs {dev.gso_max_segs} ")
    o.append(f"tso_max_size {getattr(dev, 'tso_max_size', tso_default)} ")
    o.append(f"tso_max_segs {getattr(dev, 'tso_max_segs', 65535)} ")
    o.append(f"gro_max_size {dev.gro_max_size} ")
    o.append(f"gso_ipv4_max_size {getattr(dev, 'gso_ipv4_max_size', dev.gso_max_size)} ")
    o.append(f"gro_ipv4_max_size {getattr(dev, 'gro_ipv4_max_size', dev.gro_max_size)} ")
    return "".join(o)


def print_linkinfo(opts: Iproute2Options, la: LinkAttrs, filt: LinkFilter, *, do_link: bool) -> int:
    """Print one device; return -1 if filtered out, 0 if only its addresses show, 1 if printed.

    iproute2: ip/ipaddress.c, print_linkinfo().
    """
    dev = la.dev
    if filt.ifindex and la.ifindex != filt.ifindex:
        return -1
    if filt.up and not la.flags & IFF_UP:
        return -1
    if filt.down and la.flags & IFF_UP:
        return -1
    if filt.label is not None:
        return 0
    if filt.group != -1 and dev.group != filt.group:
        return -1
    if filt.kind is not None and la.kind != filt.kind:
        return -1
    name, mdown = name_and_link(la)
    if opts.json:
        opts.records.append(link_json(opts, la, filt, do_link=do_link, mdown=mdown))
        return 0 if opts.brief else 1
    sl = opts.sl
    o: list[str] = []
    if opts.brief:
        o.append(f"{name:<16} ")
        o.append(f"{_operstate_name(la.operstate):<14} ")
        if filt.family == AF_PACKET:
            if dev.addr_len:
                o.append(f"{ll_addr_n2a(dev.dev_addr, dev.type)} ")
            o.append(print_link_flags(la.flags, mdown))
            o.append("\n")
        opts.write("".join(o))
        return 0
    o.append(f"{la.ifindex}: ")
    o.append(f"{name}: ")
    o.append(print_link_flags(la.flags, mdown))
    o.append(f"mtu {dev.mtu} ")
    o.append(f"qdisc {dev.qdisc.kind} ")
    if dev.master is not None:
        o.append(f"master {dev.master.name} ")
    o.append(f"state {_operstate_name(la.operstate)} ")
    if do_link:
        o.append(f"mode {LINK_MODES[0]} ")
    o.append(f"group {rtnl_group_n2a(dev.group)} ")
    qlen = dev.tx_queue_len & 0xFFFFFFFF
    if qlen >= 0x80000000:
        qlen -= 1 << 32
    if filt.showqueue and qlen:
        o.append(f"qlen {qlen}")
    if not filt.family or filt.family == AF_PACKET or opts.details:
        o.append(f"{sl}    link/{ll_type_n2a(dev.type)} ")
        if dev.addr_len:
            o.append(ll_addr_n2a(dev.dev_addr, dev.type))
            o.append(" peer " if la.flags & IFF_POINTOPOINT else " brd ")
            o.append(ll_addr_n2a(dev.broadcast, dev.type))
            perm = bytes(dev.perm_addr)
            if dev.kind == "nic" and any(perm) and perm != bytes(dev.dev_addr):
                o.append(f" permaddr {ll_addr_n2a(perm, dev.type)}")
    if la.link_netnsid is not None:
        o.append(f" link-netnsid {la.link_netnsid}")
    if opts.details:
        o.append(_details(opts, la))
    if (do_link or opts.details) and dev.ifalias:
        o.append(f"{sl}    alias {dev.ifalias}")
    if do_link and opts.stats:
        o.append(sl)
        o.append(print_link_stats(opts, dev))
    o.append("\n")
    opts.write("".join(o))
    return 1


def _link_member(la: LinkAttrs) -> dict[str, Any]:
    """``"link"``/``"link_index"`` (print_linkinfo()): what ``name@…`` says in text."""
    if la.iflink is None:
        return {}
    if not la.iflink:
        return {"link": None}
    if la.link_netnsid is not None:
        return {"link_index": la.iflink}
    return {"link": la.link_name if la.link_name is not None else f"if{la.iflink}"}


def link_json(
    opts: Iproute2Options, la: LinkAttrs, filt: LinkFilter, *, do_link: bool, mdown: bool
) -> dict[str, Any]:
    """One link as ``ip -j link``/``ip -j addr`` prints it. iproute2: print_linkinfo()."""
    dev = la.dev
    flags = link_flag_names(la.flags, mdown)
    if opts.brief:
        obj: dict[str, Any] = {**_link_member(la), "ifname": la.name}
        obj["operstate"] = _operstate_name(la.operstate)
        if filt.family == AF_PACKET:
            if dev.addr_len:
                obj["address"] = ll_addr_n2a(dev.dev_addr, dev.type)
            obj["flags"] = flags
        else:
            obj["addr_info"] = []
        return obj
    obj = {"ifindex": la.ifindex, **_link_member(la), "ifname": la.name, "flags": flags}
    obj["mtu"] = dev.mtu
    obj["qdisc"] = dev.qdisc.kind
    master = getattr(dev, "master", None)
    if master is not None:
        obj["master"] = master.name
    obj["operstate"] = _operstate_name(la.operstate)
    if do_link:
        obj["linkmode"] = LINK_MODES[0]
    obj["group"] = rtnl_group_n2a(dev.group)
    qlen = dev.tx_queue_len & 0xFFFFFFFF
    if filt.showqueue and qlen:
        obj["txqlen"] = qlen - (1 << 32) if qlen >= 0x80000000 else qlen
    if not filt.family or filt.family == AF_PACKET or opts.details:
        obj["link_type"] = ll_type_n2a(dev.type)
        if dev.addr_len:
            obj["address"] = ll_addr_n2a(dev.dev_addr, dev.type)
            if la.flags & IFF_POINTOPOINT:
                obj["link_pointtopoint"] = True
            obj["broadcast"] = ll_addr_n2a(dev.broadcast, dev.type)
            perm = bytes(dev.perm_addr)
            if dev.kind == "nic" and any(perm) and perm != bytes(dev.dev_addr):
                obj["permaddr"] = ll_addr_n2a(perm, dev.type)
    if la.link_netnsid is not None:
        obj["link_netnsid"] = la.link_netnsid
    if (do_link or opts.details) and dev.ifalias:
        obj["ifalias"] = dev.ifalias
    if do_link and opts.stats:
        obj["stats64"] = stats64_json(dev.statistics())
    if not do_link and filt.family != AF_PACKET:
        obj["addr_info"] = []
    return obj


# ---------------------------------------------------------------------------
# ip link show (ipaddr_list_link → ipaddr_list_flush_or_save with do_link)
# ---------------------------------------------------------------------------


def iplink_show(net: Net, opts: Iproute2Options, args: Args) -> None:
    """``ip link show``: delegate to the shared lister with ``do_link``."""
    from netstack.userspace.iproute2.ip.ip_addr import ipaddr_list

    saved = opts.family
    opts.family = AF_PACKET
    try:
        ipaddr_list(net, opts, args, do_link=True)
    finally:
        opts.family = saved


# ---------------------------------------------------------------------------
# Parsing a link request (iplink_parse)
# ---------------------------------------------------------------------------


@attrs.define
class LinkReq:
    """An RTM_NEWLINK/RTM_DELLINK request as iplink_parse builds it."""

    name: str | None = None
    dev: str | None = None
    link: str | None = None
    index: int = 0
    ifi_flags: int = 0
    ifi_change: int = 0
    address: bytes | None = None
    broadcast: bytes | None = None
    txqlen: int | None = None
    mtu: int | None = None
    alias: str | None = None
    group: int | None = None
    carrier: int | None = None
    kind: str | None = None
    master: int | None = None  # IFLA_MASTER: an ifindex, 0 for nomaster
    consumed: int = 0


_ON_OFF_FLAGS: Final = {
    "multicast": (IFF_MULTICAST, False),
    "allmulticast": (IFF_ALLMULTI, False),
    "promisc": (IFF_PROMISC, False),
    "trailers": (IFF_NOTRAILERS, True),
    "arp": (IFF_NOARP, True),
}

_UNSUPPORTED: Final = (
    "netns",
    "inet",
    "xdp",
    "xdpgeneric",
    "xdpdrv",
    "xdpoffload",
    "vf",
    "vrf",
    "addrgenmode",
    "link-netns",
    "link-netnsid",
    "protodown",
    "protodown_reason",
    "gso_max_size",
    "gso_max_segs",
    "gro_max_size",
    "gso_ipv4_max_size",
    "gro_ipv4_max_size",
    "parentdev",
    "numtxqueues",
    "numrxqueues",
)


def _unsupported(word: str) -> ConfigError:
    return ConfigError(f'netstack: "ip link ... {word}" is not supported', errno.EOPNOTSUPP)


def atoi(s: str) -> int:
    """C ``atoi``: leading digits, 0 when there are none."""
    value, end, _ = strtol(s, 10)
    return value if end else 0


def _on_off(word: str, value: str) -> ConfigError:
    return Iproute2Exit(
        f'Error: argument of "{word}" must be "on" or "off", not "{value}"', errno.EINVAL, 1
    )


def iplink_parse(args: Args, create: bool, net: Net | None = None) -> LinkReq:
    """Parse link options up to (and including) ``type KIND``. iproute2: iplink_parse()."""
    req = LinkReq()
    start = args.i
    name: str | None = None
    dev: str | None = None
    while args:
        word = args.take()
        if word == "up":
            req.ifi_change |= IFF_UP
            req.ifi_flags |= IFF_UP
        elif word == "down":
            req.ifi_change |= IFF_UP
            req.ifi_flags &= ~IFF_UP
        elif word == "name":
            value = args.value()
            if name is not None:
                duparg("name", value)
            if not check_ifname(value):
                invarg('"name" not a valid ifname', value)
            name = value
            if dev is None:
                dev = name
        elif word == "index":
            value = args.value()
            if req.index:
                duparg("index", value)
            req.index = atoi(value)
            if req.index <= 0:
                invarg('Invalid "index" value', value)
        elif matches(word, "link"):
            req.link = args.value()
        elif matches(word, "address"):
            req.address = ll_addr_a2n(args.value(), 32)
        elif matches(word, "broadcast") or word == "brd":
            req.broadcast = ll_addr_a2n(args.value(), 32)
        elif matches(word, "txqueuelen") or word == "qlen" or matches(word, "txqlen"):
            value = args.value()
            if req.txqlen is not None:
                duparg("txqueuelen", value)
            qlen = get_integer(value)
            if qlen is None:
                invarg('Invalid "txqueuelen" value\n', value)
            req.txqlen = qlen
        elif word == "mtu":
            value = args.value()
            if req.mtu is not None:
                duparg("mtu", value)
            mtu = get_integer(value)
            if mtu is None:
                invarg('Invalid "mtu" value\n', value)
            req.mtu = mtu
        elif word in _ON_OFF_FLAGS:
            bit, inverted = _ON_OFF_FLAGS[word]
            value = args.value()
            req.ifi_change |= bit
            if value not in ("on", "off"):
                raise _on_off(word, value)
            if (value == "on") != inverted:
                req.ifi_flags |= bit
            else:
                req.ifi_flags &= ~bit
        elif word == "carrier":
            value = args.value()
            if value not in ("on", "off"):
                raise _on_off("carrier", value)
            req.carrier = 1 if value == "on" else 0
        elif matches(word, "master"):
            value = args.value()
            master = net.dev_get_by_name(value) if net is not None else None
            if master is None:
                invarg("Device does not exist\n", value)
            req.master = master.ifindex
        elif matches(word, "nomaster"):
            req.master = 0
        elif matches(word, "dynamic"):
            value = args.value()
            req.ifi_change |= IFF_DYNAMIC
            if value == "on":
                req.ifi_flags |= IFF_DYNAMIC
            elif value == "off":
                req.ifi_flags &= ~IFF_DYNAMIC
            else:
                raise _on_off("dynamic", value)
        elif matches(word, "type"):
            req.kind = args.value()
            break
        elif matches(word, "alias"):
            value = args.value()
            if len(value.encode()) >= IFALIASZ:
                invarg("alias too long\n", value)
            req.alias = value
        elif word == "group":
            value = args.value()
            if req.group is not None:
                duparg("group", value)
            group = rtnl_group_a2n(value)
            if group is None:
                invarg('Invalid "group" value\n', value)
            req.group = group
        elif word == "mode":
            value = args.value()
            if value.lower() not in ("default", "dormant"):
                invarg("Invalid link mode\n", value)
            if value.lower() == "dormant":
                raise _unsupported("mode dormant")
        elif word == "state":
            value = args.value()
            if value.upper() not in OPERSTATE_NAMES:
                invarg("Invalid operstate\n", value)
            raise _unsupported("state")
        elif word in _UNSUPPORTED or matches(word, "numtxqueues") or matches(word, "numrxqueues"):
            raise _unsupported(word)
        else:
            if matches(word, "help"):
                raise ConfigError(IPLINK_USAGE)
            if word == "dev":
                word = args.value()
            if dev != name:
                duparg2("dev", word)
            if not check_altifname(word):
                invarg('"dev" not a valid ifname', word)
            dev = word
    req.consumed = args.i - start
    if name is None:
        name = dev
    elif dev is None:
        dev = name
    elif name == dev:
        name = dev
    req.name = name
    req.dev = dev
    return req


# ---------------------------------------------------------------------------
# ip link add|set|delete (iplink_modify)
# ---------------------------------------------------------------------------


@kernel("do_setlink")
def _apply_flags(dev: NetDevice, req: LinkReq) -> None:
    """``dev_change_flags(dev, rtnl_dev_combine_flags(dev, ifm))``. Kernel: do_setlink()."""
    if req.ifi_flags or req.ifi_change:
        mask = req.ifi_change
        dev_change_flags(dev, req.ifi_flags & mask, mask)


def _apply_txqlen(dev: NetDevice, qlen: int) -> None:
    dev_change_tx_queue_len(dev, qlen & 0xFFFFFFFF)


@kernel("dev_validate_mtu")
def _check_mtu(dev: NetDevice, mtu: int) -> None:
    """Kernel: dev_validate_mtu()."""
    if mtu < 0 or mtu < dev.min_mtu:
        raise ConfigError("Error: mtu less than device minimum.", errno.EINVAL)
    if dev.max_mtu > 0 and mtu > dev.max_mtu:
        raise ConfigError("Error: mtu greater than device maximum.", errno.EINVAL)


@kernel("net/core/rtnetlink.c", "rtnl_create_link", "rtnl_configure_link")
def _configure_new(dev: NetDevice, req: LinkReq) -> None:
    """Attributes of a new device, then its flags.

    Kernel: net/core/rtnetlink.c, rtnl_create_link() + rtnl_configure_link().
    """
    if req.mtu is not None:
        _check_mtu(dev, req.mtu)
        dev.mtu = req.mtu
    if req.txqlen is not None:
        dev.tx_queue_len = req.txqlen & 0xFFFFFFFF
    if req.group is not None:
        dev.group = req.group
    if req.alias:
        dev.ifalias = req.alias
    _apply_flags(dev, req)
    if req.master:
        do_set_master(dev, req.master)


def _lladdr_for(req_addr: bytes | None) -> bytes | None:
    if req_addr is None:
        return None
    if len(req_addr) != 6:
        raise rtnl_error(errno.EINVAL)
    return req_addr


@kernel("rtnl_newlink")
def _newlink(net: Net, req: LinkReq, type_args: Args) -> None:
    """Create a device of ``req.kind``. Kernel: rtnl_newlink()."""
    kind = req.kind
    assert kind is not None
    peer_req: LinkReq | None = None
    if kind == "veth" and type_args:
        if type_args.peek() != "peer":
            raise ConfigError(VETH_USAGE, errno.EINVAL)
        type_args.take()
        peer_req = iplink_parse(type_args, create=True)
        if peer_req.kind is not None:
            duparg("type", peer_req.kind)
    elif kind in link_tunnel.TUNNEL_KINDS:
        _newlink_rtnl(net, req, link_tunnel.parse_opt(net, kind, type_args, None))
        return
    elif kind in link_bridge.BRIDGE_KINDS:
        _newlink_rtnl(net, req, link_bridge.bridge_parse_opt(net, type_args))
        return
    elif kind in link_vlan.VLAN_KINDS:
        _newlink_rtnl(net, req, link_vlan.vlan_parse_opt(type_args))
        return
    elif type_args:
        word = type_args.peek()
        if kind in NO_PARSE_OPT_KINDS or kind not in KERNEL_KINDS:
            if matches(word, "help"):
                raise ConfigError(IPLINK_USAGE)
            raise ConfigError(
                f'Garbage instead of arguments "{word} ...". Try "ip link help".', errno.EINVAL
            )
    name = req.name
    if name is not None and len(name.encode()) >= IFNAMSIZ:  # ifla_policy[IFLA_IFNAME]
        raise ConfigError("Error: Attribute failed policy validation.", errno.ERANGE)
    if name is not None and net.dev_get_by_name(name) is not None:
        raise rtnl_error(errno.EEXIST)
    if kind not in KERNEL_KINDS:
        raise ConfigError("Error: Unknown device type.", errno.EOPNOTSUPP)
    if req.index:
        raise ConfigError('netstack: "ip link add ... index N" is not supported', errno.EOPNOTSUPP)
    if kind == "dummy":
        dev = dummy_newlink(net, name or "dummy%d", addr=_lladdr_for(req.address))
        try:
            _configure_new(dev, req)
        except ConfigError:
            unregister_netdevice(dev)
            raise
        return
    # veth: without "peer", the peer gets the same attributes (kernel: tbp = tb)
    preq = peer_req if peer_req is not None else attrs.evolve(req, name=None, address=None)
    pname = preq.name
    if pname is not None:
        if len(pname.encode()) >= IFNAMSIZ:
            raise ConfigError("Error: Attribute failed policy validation.", errno.ERANGE)
        if net.dev_get_by_name(pname) is not None or pname == name:
            raise rtnl_error(errno.EEXIST)
    dev, peer = veth_newlink(
        net,
        name or "veth%d",
        net,
        pname or "veth%d",
        addr=_lladdr_for(req.address),
        peer_addr=_lladdr_for(preq.address),
    )
    try:
        _configure_new(peer, preq)
        _configure_new(dev, req)
    except ConfigError:
        unregister_netdevice(dev)
        unregister_netdevice(peer)
        raise


@kernel("net/core/rtnetlink.c", "rtnl_newlink", "request_module")
def _newlink_rtnl(net: Net, req: LinkReq, data: object) -> None:
    """Create a device of a kind a module registers (``rtnl_link_ops``).

    Kernel: net/core/rtnetlink.c, rtnl_newlink(): look the kind up, else
    ``request_module("rtnl-link-KIND")`` and look again; then the common
    attributes (name, MTU, address) and the kind's own ``newlink``.
    """
    kind = req.kind
    assert kind is not None
    name = req.name
    if name is not None and len(name.encode()) >= IFNAMSIZ:  # ifla_policy[IFLA_IFNAME]
        raise ConfigError("Error: Attribute failed policy validation.", errno.ERANGE)
    if name is not None and net.dev_get_by_name(name) is not None:
        raise rtnl_error(errno.EEXIST)
    ops = rtnl_link_ops_get(net, kind)
    if ops is None and request_module(net, f"rtnl-link-{kind}"):
        ops = rtnl_link_ops_get(net, kind)
    if ops is None:
        raise ConfigError("Error: Unknown device type.", errno.EOPNOTSUPP)
    if req.index:
        raise ConfigError('netstack: "ip link add ... index N" is not supported', errno.EOPNOTSUPP)
    tb = {"mtu": req.mtu, "address": req.address, "link": req.link}
    dev = ops.newlink(net, name, data, tb)
    try:
        _configure_new(dev, attrs.evolve(req, mtu=None))
    except ConfigError:
        unregister_netdevice(dev)
        raise


@kernel("do_setlink")
def _setlink(net: Net, dev: NetDevice, req: LinkReq) -> None:
    """Apply a change request in the kernel's order. Kernel: do_setlink()."""
    if req.broadcast is not None and len(req.broadcast) < dev.addr_len:
        raise rtnl_error(errno.EINVAL)  # validate_linkmsg()
    if req.address is not None:
        if len(req.address) != dev.addr_len:
            raise ConfigError(
                f"Invalid address length {len(req.address)} - must be {dev.addr_len} bytes",
                errno.EINVAL,
            )
        dev_set_mac_address(dev, req.address)
    if req.mtu is not None:
        dev_set_mtu(dev, req.mtu)
    if req.group is not None:
        dev.group = req.group
    if req.name is not None and req.name != dev.name:
        dev_change_name(dev, req.name)
    if req.alias is not None:
        dev.ifalias = req.alias
    if req.broadcast is not None:
        dev.broadcast = bytes(req.broadcast[: dev.addr_len])
    _apply_flags(dev, req)
    if req.master is not None:
        do_set_master(dev, req.master)
    if req.carrier is not None:
        if dev.kind != "dummy":  # only dummy implements ndo_change_carrier here
            raise rtnl_error(errno.EOPNOTSUPP)
        if req.carrier:
            netif_carrier_on(dev)
        else:
            netif_carrier_off(dev)
    if req.txqlen is not None:
        _apply_txqlen(dev, req.txqlen)


@kernel("net/core/rtnetlink.c", "do_set_master")
def do_set_master(dev: NetDevice, ifindex: int) -> None:
    """``master DEV`` / ``nomaster``: leave the old master, join the new one.

    Kernel: net/core/rtnetlink.c, do_set_master().
    """
    upper = dev.master
    if upper is not None:
        if upper.ifindex == ifindex:
            return
        if not upper.ops.has_add_slave:
            raise rtnl_error(errno.EOPNOTSUPP)
        upper.ops.ndo_del_slave(upper, dev)
    if ifindex:
        upper = dev.net.dev_get_by_index(ifindex)
        if upper is None:
            raise rtnl_error(errno.EINVAL)
        if not upper.ops.has_add_slave:
            raise rtnl_error(errno.EOPNOTSUPP)
        upper.ops.ndo_add_slave(upper, dev)


@kernel("rtnl_dellink")
def _dellink(dev: NetDevice) -> None:
    """Kernel: rtnl_dellink() → rtnl_link_ops->dellink (veth_dellink takes the peer too)."""
    kind = link_kind(dev)
    if kind is None:
        raise rtnl_error(errno.EOPNOTSUPP)
    ops = rtnl_link_ops_get(dev.net, kind)
    if ops is not None and ops.dellink is not None:
        ops.dellink(dev)
        return
    peer = dev.ops.ndo_get_peer_dev(dev)
    unregister_netdevice(dev)
    if peer is not None:
        unregister_netdevice(peer)


def iplink_modify(net: Net, opts: Iproute2Options, args: Args, *, cmd: str) -> None:
    """``ip link add|set|change|delete``. iproute2: ip/iplink.c, iplink_modify()."""
    create = cmd == "add"
    req = iplink_parse(args, create, net)
    if req.kind is not None:
        pass
    elif create:
        raise ConfigError('Not enough information: "type" argument is required', errno.EINVAL)
    if not create:
        if req.dev is None:
            raise Iproute2Exit(  # iplink_modify(): missarg-style exit(-1)
                'Not enough information: "dev" argument is required.', errno.EINVAL, EXIT_USAGE
            )
        dev = ll_name_to_dev(net, req.dev)
        if dev is None:
            nodev(req.dev)
        if req.name == req.dev:
            req.name = None
        if req.index:
            raise ConfigError(
                "index can be used only when creating devices or when moving device "
                "to another netns.",
                errno.EINVAL,
            )
        if cmd == "delete":
            _dellink(dev)
            return
        if req.kind is not None and req.kind in link_tunnel.TUNNEL_KINDS and args:
            if req.kind != link_kind(dev):
                raise rtnl_error(errno.EOPNOTSUPP)
            ops = rtnl_link_ops_get(net, req.kind)
            data = link_tunnel.parse_opt(net, req.kind, args, dev)
            if ops is None or ops.changelink is None:
                raise rtnl_error(errno.EOPNOTSUPP)
            _setlink(net, dev, req)
            ops.changelink(dev, data, {"mtu": req.mtu})
            return
        if req.kind == "bridge_slave":
            from netstack.bridge.br_netlink import br_port_slave_changelink

            data = link_bridge.bridge_slave_parse_opt(net, args)
            _setlink(net, dev, req)
            if dev.master is None or dev.master.kind != "bridge":
                raise rtnl_error(errno.EOPNOTSUPP)
            br_port_slave_changelink(dev, data)
            return
        if req.kind is not None and req.kind in link_vlan.VLAN_KINDS and args:
            if req.kind != link_kind(dev):
                raise rtnl_error(errno.EOPNOTSUPP)
            vops = rtnl_link_ops_get(net, req.kind)
            vdata = link_vlan.vlan_parse_opt(args)
            if vops is None or vops.changelink is None:
                raise rtnl_error(errno.EOPNOTSUPP)
            _setlink(net, dev, req)
            vops.changelink(dev, vdata, {"mtu": req.mtu})
            return
        if req.kind is not None and req.kind in link_vxlan.VXLAN_KINDS and args:
            if req.kind != link_kind(dev):
                raise rtnl_error(errno.EOPNOTSUPP)
            xops = rtnl_link_ops_get(net, req.kind)
            xdata, _ = link_vxlan.vxlan_parse_opt(net, args, create=False)
            if xops is None or xops.changelink is None:
                raise rtnl_error(errno.EOPNOTSUPP)
            _setlink(net, dev, req)
            xops.changelink(dev, xdata, {"mtu": req.mtu})
            return
        if req.kind is not None and req.kind in link_bridge.BRIDGE_KINDS and args:
            if req.kind != link_kind(dev):
                raise rtnl_error(errno.EOPNOTSUPP)
            bops = rtnl_link_ops_get(net, req.kind)
            bdata = link_bridge.bridge_parse_opt(net, args)
            if bops is None or bops.changelink is None:
                raise rtnl_error(errno.EOPNOTSUPP)
            _setlink(net, dev, req)
            bops.changelink(dev, bdata, {"mtu": req.mtu})
            return
        if req.kind is not None and (args or req.kind != link_kind(dev)):
            raise rtnl_error(errno.EOPNOTSUPP)
        _setlink(net, dev, req)
        return
    if req.name != req.dev:
        raise ConfigError(
            'both "name" and "dev" cannot be used when creating devices.', errno.EINVAL
        )
    if req.link is not None and ll_name_to_dev(net, req.link) is None:
        nodev(req.link)
    if req.kind in link_vxlan.VXLAN_KINDS:
        parms, warning = link_vxlan.vxlan_parse_opt(net, args)
        if warning is not None:
            opts.warn(warning)  # iproute2 warns on stderr and creates the device
        _newlink_rtnl(net, req, parms)
        return
    _newlink(net, req, args)


def do_iplink(net: Net, opts: Iproute2Options, args: Args) -> None:
    """``ip link …``. iproute2: ip/iplink.c, do_iplink()."""
    if not args:
        iplink_show(net, opts, args)
        return
    word = args.take()
    if matches(word, "add"):
        iplink_modify(net, opts, args, cmd="add")
    elif matches(word, "set") or matches(word, "change"):
        iplink_modify(net, opts, args, cmd="set")
    elif matches(word, "replace"):
        raise ConfigError('netstack: "ip link replace" is not supported', errno.EOPNOTSUPP)
    elif matches(word, "delete"):
        iplink_modify(net, opts, args, cmd="delete")
    elif matches(word, "show") or matches(word, "lst") or matches(word, "list"):
        iplink_show(net, opts, args)
    elif matches(word, "help"):
        if args and args.peek() == "veth":
            raise ConfigError(VETH_USAGE)
        if args and args.peek() in link_tunnel.TUNNEL_KINDS:
            raise ConfigError(link_tunnel.usage(args.peek()))
        if args and args.peek() == "vlan":
            raise ConfigError(link_vlan.VLAN_USAGE)
        if args and args.peek() == "vxlan":
            raise ConfigError(link_vxlan.VXLAN_USAGE)
        if args and args.peek() == "bridge":
            raise ConfigError(link_bridge.BRIDGE_USAGE)
        if args and args.peek() == "bridge_slave":
            raise ConfigError(link_bridge.BRIDGE_SLAVE_USAGE)
        raise ConfigError(IPLINK_USAGE)
    elif matches(word, "xstats") or matches(word, "afstats") or matches(word, "property"):
        raise ConfigError(f'netstack: "ip link {word}" is not supported', errno.EOPNOTSUPP)
    else:
        raise ConfigError(f'Command "{word}" is unknown, try "ip link help".', errno.EINVAL)
