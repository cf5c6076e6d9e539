"""IPv4 multicast group membership: which groups a device listens to, and why.

Theory of operation: every :class:`~netstack.ipv4.devinet.InDevice` keeps the
kernel's ``in_dev->mc_list`` — one :class:`IpMcList` per group with a
``users`` count, newest first. ``ip_mc_inc_group`` adds a user (creating the
entry and loading the device's link-layer filter on the first one:
``ip_mc_filter_add`` → ``arp_mc_map`` → ``dev_mc_add``, so 239.1.1.1 puts
``01:00:5e:01:01:01`` on an Ethernet device's ``dev->mc`` list);
``ip_mc_dec_group`` drops one and unloads the filter with the last.

Users come from two places. The device itself: ``ip_mc_up`` (device up)
joins the all-hosts group 224.0.0.1, ``ip_mc_down`` leaves it and unloads
every group's filter (the memberships stay, and are reloaded at the next
up). And sockets: ``setsockopt(IP_ADD_MEMBERSHIP)`` with a ``struct
ip_mreq`` (8 bytes) or ``struct ip_mreqn`` (12 bytes) runs
``ip_mc_join_group``, which finds the device (``ip_mc_find_dev``: the
ifindex, else the device owning the interface address, else the route to the
group), refuses a second identical join (``EADDRINUSE``), records the
membership on the socket (``inet->mc_list``, at most
``igmp_max_memberships`` = 20: ``ENOBUFS``) and adds a user to the device's
group. ``IP_DROP_MEMBERSHIP`` (``ip_mc_leave_group``) undoes it
(``EADDRNOTAVAIL`` without a join; ``ENODEV`` when no device can be found),
and closing the socket drops every membership (``ip_mc_drop_socket``).

Receiving: ``ip_route_input_noref`` asks ``ip_check_mc_rcv`` whether the
input device joined the destination group; only then does the datagram get
a local ``RTN_MULTICAST`` route (``ip_route_input_mc``) and reach UDP's
multicast delivery, where every socket bound to the port gets a copy (the
kernel's default ``IP_MULTICAST_ALL`` = 1). A group nobody joined is dropped
at routing, as before.

Not emulated: IGMP itself — no membership reports are sent on join or leave
(the kernel sends IGMPv3 state-change reports, ``igmp_ifc_event``,
``IGMP_Unsolicited_Report_Count`` = 2), no queries are answered, no source
filters (every membership is EXCLUDE {}), no multicast routing
(``mc_forwarding``) and no ``IP_MULTICAST_IF``/``IP_MULTICAST_LOOP``.

Kernel: net/ipv4/igmp.c, net/ipv4/ip_sockglue.c (IP_ADD_MEMBERSHIP),
net/ipv4/route.c (ip_route_input_mc), net/ipv4/arp.c (arp_mc_map).
"""

from __future__ import annotations

import errno
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from netstack.core.netdevice import IFF_UP
from netstack.sites import kernel
from netstack.wire.arp import ARPHRD_ETHER
from netstack.wire.ethernet import ip_eth_mc_map
from netstack.wire.ipv4 import IPPROTO_IGMP, ipv4_is_multicast

if TYPE_CHECKING:
    from netstack.core.netdevice import NetDevice
    from netstack.core.sock import Sock
    from netstack.ipv4.devinet import InDevice
    from netstack.ipv4.netns import Ipv4

__all__ = [
    "IGMP_ALL_HOSTS",
    "IpMcList",
    "IpMreqn",
    "ip_check_mc_rcv",
    "ip_mc_dec_group",
    "ip_mc_drop_socket",
    "ip_mc_inc_group",
    "ip_mc_join_group",
    "ip_mc_leave_group",
    "ip_mc_setsockopt",
]

IGMP_ALL_HOSTS: Final = 0xE0000001  # 224.0.0.1
IGMP_MAX_MEMBERSHIPS: Final = 20  # net.ipv4.igmp_max_memberships
IP_ADD_MEMBERSHIP: Final = 35
IP_DROP_MEMBERSHIP: Final = 36
_MREQ: Final = struct.Struct("!II")  # struct ip_mreq: imr_multiaddr, imr_interface
_IFINDEX: Final = struct.Struct("=i")  # struct ip_mreqn's imr_ifindex (host order)


class IpMcList:
    """One group joined on a device (kernel: ``struct ip_mc_list``)."""

    __slots__ = ("interface", "loaded", "multiaddr", "users")

    def __init__(self, interface: InDevice, multiaddr: int) -> None:
        self.interface = interface
        self.multiaddr = multiaddr
        self.users = 1
        self.loaded = False  # the link-layer filter is on dev->mc

    def __repr__(self) -> str:
        return f"IpMcList({self.multiaddr:#010x}, users={self.users})"


@dataclass
class IpMreqn:
    """``struct ip_mreqn`` (host-order addresses); a socket's membership (``ip_mc_socklist``)."""

    imr_multiaddr: int
    imr_address: int = 0
    imr_ifindex: int = 0


# ---------------------------------------------------------------------------
# The device's link-layer filter
# ---------------------------------------------------------------------------


@kernel("arp_mc_map")
def _mc_map(dev: NetDevice, addr: int) -> bytes | None:
    """Kernel: arp_mc_map(addr, buf, dev, 0): Ethernet maps, others have no filter."""
    if dev.type == ARPHRD_ETHER:
        return ip_eth_mc_map(addr)
    return None


@kernel("net/ipv4/igmp.c", "ip_mc_filter_add", "net/core/dev_addr_lists.c", "dev_mc_add")
def ip_mc_filter_add(in_dev: InDevice, addr: int) -> None:
    """Add the group's MAC to ``dev->mc`` (one reference per group).

    Kernel: net/ipv4/igmp.c, ip_mc_filter_add(); net/core/dev_addr_lists.c, dev_mc_add().
    """
    mac = _mc_map(in_dev.dev, addr)
    if mac is None:
        return
    refs = in_dev.mc_hw_refs
    refs[mac] = refs.get(mac, 0) + 1
    if refs[mac] == 1 and mac not in in_dev.dev.mc:
        in_dev.dev.mc.append(mac)


@kernel("ip_mc_filter_del", "dev_mc_del")
def ip_mc_filter_del(in_dev: InDevice, addr: int) -> None:
    """Drop the group's reference on its MAC. Kernel: ip_mc_filter_del() / dev_mc_del()."""
    mac = _mc_map(in_dev.dev, addr)
    if mac is None:
        return
    refs = in_dev.mc_hw_refs
    n = refs.get(mac, 0) - 1
    if n > 0:
        refs[mac] = n
        return
    refs.pop(mac, None)
    if mac in in_dev.dev.mc:
        in_dev.dev.mc.remove(mac)


@kernel("igmp_group_added")
def igmp_group_added(im: IpMcList) -> None:
    """Load the filter (reports are not emulated). Kernel: igmp_group_added()."""
    if not im.loaded:
        im.loaded = True
        ip_mc_filter_add(im.interface, im.multiaddr)


@kernel("__igmp_group_dropped")
def igmp_group_dropped(im: IpMcList) -> None:
    """Unload the filter. Kernel: __igmp_group_dropped()."""
    if im.loaded:
        im.loaded = False
        ip_mc_filter_del(im.interface, im.multiaddr)


# ---------------------------------------------------------------------------
# Device membership
# ---------------------------------------------------------------------------


@kernel("____ip_mc_inc_group")
def ip_mc_inc_group(in_dev: InDevice, addr: int) -> None:
    """One more user of *addr* on the device. Kernel: ____ip_mc_inc_group()."""
    for im in in_dev.mc_list:
        if im.multiaddr == addr:
            im.users += 1
            return
    im = IpMcList(in_dev, addr)
    in_dev.mc_list.insert(0, im)  # the kernel's list: newest first
    igmp_group_added(im)
    in_dev.ipv4.rt_cache_flush()  # ip_rt_multicast_event()


@kernel("__ip_mc_dec_group")
def ip_mc_dec_group(in_dev: InDevice, addr: int) -> None:
    """One user fewer; the last removes the group. Kernel: __ip_mc_dec_group()."""
    for im in in_dev.mc_list:
        if im.multiaddr == addr:
            im.users -= 1
            if im.users == 0:
                in_dev.mc_list.remove(im)
                igmp_group_dropped(im)
                if not in_dev.dead:
                    in_dev.ipv4.rt_cache_flush()
            return


@kernel("ip_mc_up")
def ip_mc_up(in_dev: InDevice) -> None:
    """Device up: join all-hosts, reload every group's filter. Kernel: ip_mc_up()."""
    ip_mc_inc_group(in_dev, IGMP_ALL_HOSTS)
    for im in list(in_dev.mc_list):
        igmp_group_added(im)


@kernel("ip_mc_down")
def ip_mc_down(in_dev: InDevice) -> None:
    """Device down: unload every filter, leave all-hosts. Kernel: ip_mc_down()."""
    for im in list(in_dev.mc_list):
        igmp_group_dropped(im)
    ip_mc_dec_group(in_dev, IGMP_ALL_HOSTS)


@kernel("ip_mc_destroy_dev")
def ip_mc_destroy_dev(in_dev: InDevice) -> None:
    """Device unregistered: forget every group. Kernel: ip_mc_destroy_dev()."""
    if in_dev.dev.flags & IFF_UP:
        ip_mc_down(in_dev)
    for im in in_dev.mc_list:
        igmp_group_dropped(im)
    in_dev.mc_list.clear()


@kernel("net/ipv4/igmp.c", "ip_check_mc_rcv")
def ip_check_mc_rcv(in_dev: InDevice, mc_addr: int, src_addr: int, proto: int) -> bool:
    """Did the device join *mc_addr*? (No source filters: every join is EXCLUDE {}.)

    Kernel: net/ipv4/igmp.c, ip_check_mc_rcv().
    """
    for im in in_dev.mc_list:
        if im.multiaddr == mc_addr:
            return proto == IPPROTO_IGMP or im.users > 0
    return False


# ---------------------------------------------------------------------------
# Socket membership
# ---------------------------------------------------------------------------


@kernel("ip_mc_find_dev")
def ip_mc_find_dev(ipv4: Ipv4, imr: IpMreqn) -> InDevice | None:
    """The device a membership is for; fills in ``imr_ifindex``. Kernel: ip_mc_find_dev()."""
    net = ipv4.net
    if imr.imr_ifindex:
        d = net.dev_get_by_index(imr.imr_ifindex)
        idev: InDevice | None = d.ip_ptr if d is not None else None  # inetdev_by_index()
        return idev
    dev: NetDevice | None = None
    if imr.imr_address:
        dev = ipv4.ip_dev_find(imr.imr_address)  # __ip_dev_find()
        if dev is None:
            return None
    if dev is None:
        rt = ipv4.ip_route_output(imr.imr_multiaddr)  # route.c: igmp stays below it
        if not isinstance(rt, int):
            dev = rt.dev
            rt.release()
    if dev is None:
        return None
    imr.imr_ifindex = dev.ifindex
    in_dev: InDevice | None = dev.ip_ptr
    return in_dev


@kernel("__ip_mc_join_group")
def ip_mc_join_group(ipv4: Ipv4, sk: Sock, imr: IpMreqn) -> int:
    """Join *imr* on behalf of *sk*: 0 or -errno. Kernel: __ip_mc_join_group()."""
    addr = imr.imr_multiaddr
    if not ipv4_is_multicast(addr):
        return -errno.EINVAL
    in_dev = ip_mc_find_dev(ipv4, imr)
    if in_dev is None:
        return -errno.ENODEV
    ifindex = imr.imr_ifindex
    for i in sk.mc_list:
        if i.imr_multiaddr == addr and i.imr_ifindex == ifindex:
            return -errno.EADDRINUSE
    if len(sk.mc_list) >= IGMP_MAX_MEMBERSHIPS:
        return -errno.ENOBUFS
    sk.mc_list.insert(0, IpMreqn(imr.imr_multiaddr, imr.imr_address, imr.imr_ifindex))
    ip_mc_inc_group(in_dev, addr)
    return 0


@kernel("ip_mc_leave_group")
def ip_mc_leave_group(ipv4: Ipv4, sk: Sock, imr: IpMreqn) -> int:
    """Leave *imr*: 0 or -errno. Kernel: ip_mc_leave_group()."""
    group = imr.imr_multiaddr
    in_dev = ip_mc_find_dev(ipv4, imr)
    if not imr.imr_ifindex and not imr.imr_address and in_dev is None:
        return -errno.ENODEV
    ifindex = imr.imr_ifindex
    for iml in sk.mc_list:
        if iml.imr_multiaddr != group:
            continue
        if ifindex:
            if iml.imr_ifindex != ifindex:
                continue
        elif imr.imr_address and imr.imr_address != iml.imr_address:
            continue
        sk.mc_list.remove(iml)
        if in_dev is not None:
            ip_mc_dec_group(in_dev, group)
        return 0
    return -errno.EADDRNOTAVAIL


@kernel("ip_mc_drop_socket")
def ip_mc_drop_socket(ipv4: Ipv4, sk: Sock) -> None:
    """The socket closes: drop its memberships. Kernel: ip_mc_drop_socket()."""
    while sk.mc_list:
        iml = sk.mc_list.pop(0)
        dev = ipv4.net.dev_get_by_index(iml.imr_ifindex)
        in_dev = dev.ip_ptr if dev is not None else None
        if in_dev is not None:
            ip_mc_dec_group(in_dev, iml.imr_multiaddr)


@kernel("net/ipv4/ip_sockglue.c", "do_ip_setsockopt")
def ip_mc_setsockopt(ipv4: Ipv4, sk: Sock, optname: int, optval: bytes) -> int:
    """IP_ADD_MEMBERSHIP / IP_DROP_MEMBERSHIP with ``struct ip_mreq[n]`` bytes.

    Kernel: net/ipv4/ip_sockglue.c, do_ip_setsockopt().
    """
    if sk.type == 1:  # SOCK_STREAM: inet_test_bit(IS_ICSK, sk)
        return -errno.EPROTO
    if len(optval) < _MREQ.size:
        return -errno.EINVAL
    multiaddr, address = _MREQ.unpack_from(optval)
    ifindex = _IFINDEX.unpack_from(optval, 8)[0] if len(optval) >= 12 else 0
    mreq = IpMreqn(multiaddr, address, ifindex)
    if optname == IP_ADD_MEMBERSHIP:
        return ip_mc_join_group(ipv4, sk, mreq)
    return ip_mc_leave_group(ipv4, sk, mreq)
