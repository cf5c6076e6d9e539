"""VXLAN (RFC 7348): Ethernet frames in UDP, with a forwarding database of remote VTEPs.

Theory of operation — configuration: ``ip link add vxlan0 type vxlan id 42
dstport 4789 remote 10.0.0.2 dev eth0`` loads the ``vxlan`` module
(``rtnl-link-vxlan``) and creates an Ethernet device (random MAC) carrying a
:class:`VxlanConfig` (the kernel's ``struct vxlan_config``): VNI, remote or
multicast group, local address, underlay device, UDP destination port
(8472, the Linux default, unless ``dstport`` says otherwise; iproute2 warns),
source port range, TTL, TOS, flags (learning, UDP checksum) and FDB ageing
(300 s). With an underlay device the MTU is the device's less the 50 bytes
of outer IPv4, UDP, VXLAN and inner Ethernet headers (1450 on 1500). A
remote or group becomes the FDB's *default entry*: the all-zeros MAC,
``self permanent``.

The FDB (``bridge fdb``, through :mod:`netstack.core.rtnetlink`'s
``ndo_fdb_add``/``del``/``dump`` contract) maps an inner destination MAC to
one or more remote destinations (:class:`VxlanRdst`: IP, port, VNI, outgoing
ifindex). ``bridge fdb append 00:00:00:00:00:00 dev vxlan0 dst 10.0.0.3``
adds a destination to the all-zeros entry: head-end replication, one copy
per remote, for broadcast, multicast and unknown unicast. Entries are dumped
newest first (6.16+ keeps them on one list besides the hash table).

Opening the device opens (or shares) the UDP socket for its port
(:mod:`.udp_tunnel`: ``udp_sock_create`` + ``setup_udp_tunnel_sock``;
``ss -uan`` shows ``0.0.0.0:4789``), joins the multicast group of a ``group``
device on the socket, on the ``dev`` given (``vxlan_igmp_join`` →
``ip_mc_join_group``, :mod:`netstack.ipv4.igmp`; ``ip maddr show dev eth0``
lists it; a second device sharing socket, group and ``dev`` joins once) and
starts the ageing timer, which runs
every 10 s (``FDB_AGE_INTERVAL``) and deletes learned entries not refreshed
for ``ageing`` seconds; stopping it flushes every entry but the permanent
ones, leaves the group unless another running device on the socket still
uses it (``vxlan_multicast_leave``) and releases the socket. So in group mode
the encapsulated broadcast (ARP) goes to the group, every VTEP that joined it
receives it and learns the sender, and the reply comes back unicast.

Transmit::

    vxlan_xmit: FDB lookup by inner destination MAC (a hit refreshes "used"),
      else the all-zeros entry, else drop (tx_dropped); one copy per remote
    ─► vxlan_xmit_one: UDP source port from the inner flow hash, route the
      outer packet (no route: tx_carrier_errors; back into this device:
      collisions), TTL (0: the route's hop limit; 1 for a multicast group),
      TOS (inherit: the inner one), ECN ─► vxlan_build_skb: headroom,
      offload marks (SKB_GSO_UDP_TUNNEL[_CSUM]), the 8-byte VXLAN header
      (flags 0x08: I, the VNI is valid; VNI << 8) ─► udp_tunnel_xmit_skb

Offloads: the device offers TSO (``NETIF_F_GSO_SOFTWARE``); a GSO skb
leaves marked ``SKB_GSO_UDP_TUNNEL[_CSUM]`` for the underlay or software GSO
(``skb_udp_tunnel_segment`` in :mod:`netstack.ipv4.offload`) to cut. GRO on
the underlay reaches :func:`vxlan_gro_receive` through ``udp4_gro_receive``
and the socket's ``gro_receive``.

Receive (``encap_rcv`` of the socket, ``skb.data`` at the UDP header)::

    vxlan_rcv: UDP + VXLAN header present (VXLAN_INVALID_HDR), the I flag set
      and no other flag or reserved bit (VXLAN_INVALID_HDR), a device for the
      VNI on this port (VXLAN_VNI_NOT_FOUND) ─► pull both headers ─►
      vxlan_set_mac: eth_type_trans on the VXLAN device; a frame from our own
      MAC is a loop (LOCAL_MAC); learning (vxlan_snoop: inner source MAC →
      outer source IP; a static entry never migrates) ─► inner network header
      present (rx_length_errors) ─► ECN decapsulation (rx_frame_errors) ─►
      device up? (rx_dropped) ─► rx stats ─► gro_cells_receive

The UDP checksum is on by default for IPv4 (``udpcsum``; ``noudpcsum`` sends
0), which is what Linux does since the flag became ``VXLAN_F_UDP_ZERO_CSUM_TX``
(an opt-out).

Not here: IPv6 underlays, ``external`` (collect-metadata) mode and VNI
filtering, GPE, GBP, remote checksum offload, ARP/ND proxy, route
short-circuit, L2/L3 miss notifications, nexthop groups, the
local-bypass of a remote that is this host, and PMTU checks of the outer path
(``skb_tunnel_check_pmtu``).

Kernel: drivers/net/vxlan/vxlan_core.c, include/net/vxlan.h,
ip/iplink_vxlan.c (iproute2).
"""

from __future__ import annotations

import errno
import os
import struct
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Final

import attrs

from netstack.core.dev import (
    NETDEV_UNREGISTER,
    register_netdevice,
    skb_scrub_packet,
    unregister_netdevice,
)
from netstack.core.dst import DstCache
from netstack.core.ethernet import LL_RESERVED_SPACE, eth_type_trans, ether_setup
from netstack.core.features import (
    NETIF_F_FRAGLIST,
    NETIF_F_GSO_SOFTWARE,
    NETIF_F_HW_CSUM,
    NETIF_F_LLTX,
    NETIF_F_RXCSUM,
    NETIF_F_SG,
    SKB_GSO_UDP_TUNNEL,
    SKB_GSO_UDP_TUNNEL_CSUM,
)
from netstack.core.gro_cells import GroCells, gro_cells_receive
from netstack.core.inet_ecn import IP_ECN_decapsulate
from netstack.core.net_generic import NetKey
from netstack.core.netdevice import (
    IFF_LIVE_ADDR_CHANGE,
    IFF_NO_QUEUE,
    IFF_TX_SKB_SHARING,
    IFF_UP,
    NET_ADDR_RANDOM,
    NET_ADDR_SET,
    NETDEV_TX_OK,
    NetDevice,
    NetDeviceOps,
    NetDeviceStats,
)
from netstack.core.rtnetlink import (
    NDA_DST,
    NDA_IFINDEX,
    NDA_PORT,
    NDA_SRC_VNI,
    NDA_VNI,
    NLM_F_APPEND,
    NLM_F_CREATE,
    NLM_F_EXCL,
    NLM_F_REPLACE,
    NTF_SELF,
    NUD_NOARP,
    NUD_PERMANENT,
    NUD_REACHABLE,
    NUD_STALE,
    FdbMsg,
    KernelModule,
    RtnlLinkOps,
    fdb_errno,
    fdb_extack,
    rtnl_link_register,
)
from netstack.core.skbuff import DropReason, SkBuff, kfree_skb
from netstack.core.timer import TimerList
from netstack.drivers.common import eth_random_addr
from netstack.errors import ConfigError
from netstack.gro.core import NapiGroCb, call_gro_receive
from netstack.gro.eth import eth_gro_complete, eth_gro_receive
from netstack.ipv4 import ipv4_of
from netstack.ipv4.igmp import IpMreqn, ip_mc_join_group, ip_mc_leave_group
from netstack.ipv4.route import Rtable
from netstack.ipv4.udp import UdpSock
from netstack.sites import TIMED, kernel, spend
from netstack.tunnels.ip_tunnel import (
    ip_tunnel_ecn_encap,
    iptunnel_handle_offloads,
    iptunnel_pull_header,
)
from netstack.tunnels.udp_tunnel import (
    UdpTunnelSockCfg,
    setup_udp_tunnel_sock,
    udp_flow_src_port,
    udp_sock_create,
    udp_tunnel_dst_lookup,
    udp_tunnel_sock_release,
    udp_tunnel_xmit_skb,
)
from netstack.wire.checksum import csum_block_sub, csum_partial
from netstack.wire.ethernet import ETH_HLEN, ETH_P_IP, ETH_P_IPV6
from netstack.wire.ipv4 import IP_DF, IPV4_HLEN, ipv4_is_multicast

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = [
    "FDB_AGE_DEFAULT",
    "IANA_VXLAN_UDP_PORT",
    "VXLAN_HEADROOM",
    "VXLAN_HF_VNI",
    "VXLAN_MODULE",
    "VXLAN_N_VID",
    "VxlanConfig",
    "VxlanDev",
    "VxlanFdb",
    "VxlanParms",
    "VxlanRdst",
    "VxlanStats",
    "vxlan_fill_info",
    "vxlan_gro_complete",
    "vxlan_gro_receive",
    "vxlan_init_net",
    "vxlan_newlink",
    "vxlan_rcv",
    "vxlan_xmit",
    "vxlan_xmit_one",
]

VXLAN_N_VID: Final = 1 << 24
VXLAN_VID_MASK: Final = VXLAN_N_VID - 1
VXLAN_HF_VNI: Final = 0x08000000  # the I flag: "the VNI is valid"
VXLAN_HDR_LEN: Final = 8
VXLAN_HLEN: Final = 8 + VXLAN_HDR_LEN  # UDP + VXLAN (the kernel's VXLAN_HLEN)
VXLAN_HEADROOM: Final = IPV4_HLEN + VXLAN_HLEN + ETH_HLEN  # 50: vxlan_headroom() for IPv4
IANA_VXLAN_UDP_PORT: Final = 4789
VXLAN_PORT_DEFAULT: Final = 8472  # module parameter udp_port: "for early adopters"
FDB_AGE_DEFAULT: Final = 300
FDB_AGE_INTERVAL_S: Final = 10
ETH_MIN_MTU: Final = 68
ETH_MAX_MTU: Final = 0xFFFF
USER_HZ: Final = 100

# include/net/vxlan.h
VXLAN_F_LEARN: Final = 0x01
VXLAN_F_PROXY: Final = 0x02
VXLAN_F_RSC: Final = 0x04
VXLAN_F_L2MISS: Final = 0x08
VXLAN_F_L3MISS: Final = 0x10
VXLAN_F_IPV6: Final = 0x20
VXLAN_F_UDP_ZERO_CSUM_TX: Final = 0x40
VXLAN_F_UDP_ZERO_CSUM6_TX: Final = 0x80
VXLAN_F_UDP_ZERO_CSUM6_RX: Final = 0x100
VXLAN_F_REMCSUM_TX: Final = 0x200
VXLAN_F_REMCSUM_RX: Final = 0x400
VXLAN_F_GBP: Final = 0x800
VXLAN_F_REMCSUM_NOPARTIAL: Final = 0x1000
VXLAN_F_COLLECT_METADATA: Final = 0x2000
VXLAN_F_GPE: Final = 0x4000
VXLAN_F_TTL_INHERIT: Final = 0x10000
VXLAN_F_VNIFILTER: Final = 0x20000
VXLAN_F_LOCALBYPASS: Final = 0x80000
VXLAN_F_RCV_FLAGS: Final = (
    VXLAN_F_GBP
    | VXLAN_F_GPE
    | VXLAN_F_UDP_ZERO_CSUM6_RX
    | VXLAN_F_REMCSUM_RX
    | VXLAN_F_REMCSUM_NOPARTIAL
    | VXLAN_F_COLLECT_METADATA
    | VXLAN_F_VNIFILTER
)
NTF_VXLAN_ADDED_BY_USER: Final = 0x100  # not in the dumped u8 ndm_flags
ALL_ZEROS_MAC: Final = bytes(6)
VXLAN_DF_UNSET: Final = 0
VXLAN_DF_SET: Final = 1
VXLAN_DF_INHERIT: Final = 2

_HDR: Final = struct.Struct("!II")
_I: Final = struct.Struct("!I")


@attrs.frozen
class VxlanParms:
    """``IFLA_INFO_DATA`` of a vxlan link: the ``IFLA_VXLAN_*`` iproute2 sends (None: absent).

    ``group`` is ``IFLA_VXLAN_GROUP``: the remote VTEP or the multicast group.
    """

    vni: int | None = None
    group: int | None = None
    local: int | None = None
    link: int | None = None
    ttl: int | None = None
    tos: int | None = None
    learning: bool | None = None
    ageing: int | None = None
    limit: int | None = None
    port_range: tuple[int, int] | None = None
    port: int | None = None
    udp_csum: bool | None = None
    udp_zero_csum6_tx: bool | None = None
    udp_zero_csum6_rx: bool | None = None
    ttl_inherit: bool = False
    df: int | None = None


@attrs.define
class VxlanConfig:
    """The device's configuration (kernel: ``struct vxlan_config``); addresses as int."""

    remote_ip: int = 0
    saddr: int = 0
    vni: int = 0
    remote_ifindex: int = 0
    mtu: int = 0
    dst_port: int = 0
    port_min: int = 0
    port_max: int = 0
    tos: int = 0
    ttl: int = 0
    flags: int = 0
    age_interval: int = 0
    addrmax: int = 0
    df: int = 0  # VXLAN_DF_UNSET / _SET / _INHERIT


@attrs.define(eq=False)
class VxlanRdst:
    """One remote destination of an FDB entry (kernel: ``struct vxlan_rdst``)."""

    remote_ip: int
    remote_port: int
    remote_vni: int
    remote_ifindex: int
    dst_cache: DstCache[Rtable] = attrs.Factory(DstCache)

    def key(self) -> tuple[int, int, int, int]:
        return (self.remote_ip, self.remote_port, self.remote_vni, self.remote_ifindex)


@attrs.define(eq=False)
class VxlanFdb:
    """An FDB entry: a MAC and its remotes (kernel: ``struct vxlan_fdb``). Times in jiffies."""

    eth_addr: bytes
    state: int
    flags: int
    updated: int
    used: int
    vni: int
    remotes: list[VxlanRdst] = attrs.Factory(list)


@attrs.frozen
class VxlanStats:
    """The FDB's size (``addrcnt``) next to the device counters."""

    addrcnt: int
    device: NetDeviceStats


class VxlanSock:
    """A shared UDP socket and the devices listening on it (kernel: ``struct vxlan_sock``)."""

    def __init__(self, sock: UdpSock, flags: int) -> None:
        self.sock = sock
        self.flags = flags
        self.refcnt = 1
        self.vni_list: dict[int, VxlanDev] = {}


class VxlanNet:
    """The module's per-Net state (kernel: ``struct vxlan_net``)."""

    def __init__(self) -> None:
        self.vxlan_list: list[VxlanDev] = []
        self.sock_list: dict[int, list[VxlanSock]] = {}


def vxlan_net_of(net: Net) -> VxlanNet:
    return VXLAN_NET.get_or_create(net, VxlanNet)


VXLAN_NET: NetKey[VxlanNet] = NetKey("vxlan")


class VxlanDev:
    """Per-device VXLAN state (kernel: ``struct vxlan_dev``, the netdev private area)."""

    def __init__(self, dev: NetDevice) -> None:
        self.dev = dev
        self.net = dev.net
        self.cfg = VxlanConfig()
        self.default_dst = VxlanRdst(0, 0, 0, 0)
        self.fdb: dict[bytes, VxlanFdb] = {}  # insertion order; dumped newest first
        self.addrcnt = 0
        self.vn4_sock: VxlanSock | None = None
        self.gro_cells: GroCells | None = None
        self.age_timer: TimerList = dev.net.timers.timer(
            lambda: vxlan_cleanup(self), "vxlan_cleanup"
        )

    def statistics(self) -> VxlanStats:
        """The FDB's entry count and the device's ``rtnl_link_stats64``."""
        return VxlanStats(self.addrcnt, self.dev.statistics())

    def __repr__(self) -> str:
        return f"<VxlanDev {self.dev.name} vni {self.cfg.vni}>"


def _jiffies_to_clock_t(net: Net, j: int) -> int:
    return j * USER_HZ // net.clock.hz


@kernel("is_valid_ether_addr")
def _valid_ether(addr: bytes) -> bool:
    """Kernel: is_valid_ether_addr()."""
    return not addr[0] & 1 and addr != ALL_ZEROS_MAC


# ---------------------------------------------------------------------------
# The forwarding database
# ---------------------------------------------------------------------------


@kernel("drivers/net/vxlan/vxlan_core.c", "vxlan_find_mac", "__vxlan_find_mac")
def vxlan_find_mac(vxlan: VxlanDev, mac: bytes, *, touch: bool = True) -> VxlanFdb | None:
    """The entry for *mac*; a transmit lookup (*touch*) refreshes its "used" time.

    Kernel: drivers/net/vxlan/vxlan_core.c, vxlan_find_mac() / __vxlan_find_mac().
    """
    f = vxlan.fdb.get(mac)
    if f is not None and touch:
        f.used = vxlan.net.clock.jiffies
    return f


@kernel("vxlan_fdb_find_rdst")
def _find_rdst(f: VxlanFdb, key: tuple[int, int, int, int]) -> VxlanRdst | None:
    """Kernel: vxlan_fdb_find_rdst()."""
    for rd in f.remotes:
        if rd.key() == key:
            return rd
    return None


@kernel("vxlan_fdb_create", "vxlan_fdb_insert")
def vxlan_fdb_create(
    vxlan: VxlanDev, mac: bytes, rd: VxlanRdst, state: int, ndm_flags: int, src_vni: int
) -> VxlanFdb:
    """A new entry with one remote, hashed. Kernel: vxlan_fdb_create() + vxlan_fdb_insert()."""
    cfg = vxlan.cfg
    if cfg.addrmax and vxlan.addrcnt >= cfg.addrmax:
        raise fdb_errno(errno.ENOSPC)
    now = vxlan.net.clock.jiffies
    f = VxlanFdb(bytes(mac), state, ndm_flags, now, now, src_vni, [rd])
    vxlan.addrcnt += 1
    vxlan.fdb[f.eth_addr] = f
    return f


@kernel("vxlan_fdb_destroy")
def vxlan_fdb_destroy(vxlan: VxlanDev, f: VxlanFdb) -> None:
    """Kernel: vxlan_fdb_destroy() (and __vxlan_fdb_free's dst_cache_destroy)."""
    vxlan.addrcnt -= 1
    vxlan.fdb.pop(f.eth_addr, None)
    for rd in f.remotes:
        rd.dst_cache.reset()


@kernel("drivers/net/vxlan/vxlan_core.c", "vxlan_fdb_update")
def vxlan_fdb_update(
    vxlan: VxlanDev, mac: bytes, rd: VxlanRdst, state: int, nlflags: int, ndm_flags: int
) -> None:
    """Add or change an entry as RTM_NEWNEIGH asks (*nlflags*: NLM_F_*).

    Kernel: drivers/net/vxlan/vxlan_core.c, vxlan_fdb_update() and its
    _existing/_create halves.
    """
    fdb_flags = ndm_flags & ~0x01  # ~NTF_USE
    f = vxlan.fdb.get(mac)
    now = vxlan.net.clock.jiffies
    nonunicast = bool(mac[0] & 1) or mac == ALL_ZEROS_MAC
    if f is not None:
        if nlflags & NLM_F_EXCL:
            raise fdb_errno(errno.EEXIST)
        if f.state != state:
            f.state = state
            f.updated = now
        if f.flags != fdb_flags:
            f.flags = fdb_flags
            f.updated = now
        if nlflags & NLM_F_REPLACE:
            if nonunicast:
                raise fdb_extack("Cannot replace non-unicast fdb entries", errno.EOPNOTSUPP)
            if _find_rdst(f, rd.key()) is None and f.remotes:  # vxlan_fdb_replace()
                f.remotes[0].dst_cache.reset()
                f.remotes[0] = rd
        if nlflags & NLM_F_APPEND and nonunicast and _find_rdst(f, rd.key()) is None:
            f.remotes.append(rd)  # vxlan_fdb_append()
        if ndm_flags & 0x01:  # NTF_USE
            f.updated = now
        return
    if not nlflags & NLM_F_CREATE:
        raise fdb_errno(errno.ENOENT)
    if nlflags & NLM_F_REPLACE and nonunicast:
        raise fdb_errno(errno.EOPNOTSUPP)
    vxlan_fdb_create(vxlan, mac, rd, state, fdb_flags, vxlan.default_dst.remote_vni)


@kernel("vxlan_fdb_parse")
def vxlan_fdb_parse(vxlan: VxlanDev, tb: Mapping[int, Any]) -> VxlanRdst:
    """The remote an RTM_NEWNEIGH/DELNEIGH names. Kernel: vxlan_fdb_parse()."""
    dst = tb.get(NDA_DST)
    if dst is not None:
        if len(dst) != 4:
            raise fdb_extack("Unsupported address family", errno.EAFNOSUPPORT)
        ip = int.from_bytes(dst, "big")
    else:
        ip = 0
    port = tb.get(NDA_PORT)
    vni = tb.get(NDA_VNI)
    ifindex = tb.get(NDA_IFINDEX)
    if ifindex is not None:
        if vxlan.net.dev_get_by_index(int(ifindex)) is None:
            raise fdb_extack("Device not found", errno.EADDRNOTAVAIL)
    return VxlanRdst(
        ip,
        int(port) if port is not None else vxlan.cfg.dst_port,
        int(vni) if vni is not None else vxlan.default_dst.remote_vni,
        int(ifindex) if ifindex is not None else 0,
    )


@kernel("drivers/net/vxlan/vxlan_core.c", "__vxlan_fdb_delete")
def _vxlan_fdb_delete(vxlan: VxlanDev, mac: bytes, rd: VxlanRdst) -> None:
    """Remove one remote, or the whole entry with its last (or with ``dst`` absent).

    Kernel: drivers/net/vxlan/vxlan_core.c, __vxlan_fdb_delete().
    """
    f = vxlan.fdb.get(mac)
    if f is None:
        raise fdb_errno(errno.ENOENT)
    found = None
    if rd.remote_ip:
        found = _find_rdst(f, rd.key())
        if found is None:
            return
    if found is not None and len(f.remotes) > 1:
        f.remotes.remove(found)  # vxlan_fdb_dst_destroy()
        found.dst_cache.reset()
        return
    vxlan_fdb_destroy(vxlan, f)


@kernel("drivers/net/vxlan/vxlan_core.c", "vxlan_snoop")
def vxlan_snoop(vxlan: VxlanDev, src_ip: int, src_mac: bytes) -> DropReason | None:
    """Learn (or refresh, or migrate) inner source MAC → outer source IP.

    Returns a drop reason when the frame must be dropped: an invalid source
    MAC, or one a static entry pins to another VTEP.

    Kernel: drivers/net/vxlan/vxlan_core.c, vxlan_snoop() (6.16+: a hit
    refreshes ``updated``, which is what ageing looks at).
    """
    if not _valid_ether(src_mac):
        return DropReason.MAC_INVALID_SOURCE
    f = vxlan.fdb.get(src_mac)
    now = vxlan.net.clock.jiffies
    if f is not None:
        f.updated = now
        rdst = f.remotes[0]
        if rdst.remote_ip == src_ip and rdst.remote_ifindex == 0:
            return None
        if f.state & (NUD_PERMANENT | NUD_NOARP):  # "Don't migrate static entries"
            return DropReason.VXLAN_ENTRY_EXISTS
        if vxlan.net.net_ratelimit():
            vxlan.dev.log.info(
                "vxlan_migrated",
                msg=f"{':'.join(f'{b:02x}' for b in src_mac)} migrated from "
                f"{_ntoa(rdst.remote_ip)} to {_ntoa(src_ip)}",
            )
        rdst.remote_ip = src_ip
        rdst.dst_cache.reset()  # (the cached route was toward the old VTEP)
        return None
    if vxlan.dev.flags & IFF_UP:  # "close off race between vxlan_flush and incoming packets"
        try:
            vxlan_fdb_update(
                vxlan,
                src_mac,
                VxlanRdst(src_ip, vxlan.cfg.dst_port, vxlan.default_dst.remote_vni, 0),
                NUD_REACHABLE,
                NLM_F_EXCL | NLM_F_CREATE,
                NTF_SELF,
            )
        except ConfigError:
            pass  # maxaddress reached: not learned, the frame still passes
    return None


def _ntoa(a: int) -> str:
    return f"{a >> 24}.{(a >> 16) & 255}.{(a >> 8) & 255}.{a & 255}"


@kernel("drivers/net/vxlan/vxlan_core.c", "vxlan_cleanup")
def vxlan_cleanup(vxlan: VxlanDev) -> None:
    """The ageing timer: delete learned entries not refreshed for ``ageing`` seconds.

    Kernel: drivers/net/vxlan/vxlan_core.c, vxlan_cleanup().
    """
    dev = vxlan.dev
    if not dev.flags & IFF_UP:
        return
    clock = vxlan.net.clock
    now = clock.jiffies
    next_timer = now + FDB_AGE_INTERVAL_S * clock.hz
    for f in list(vxlan.fdb.values()):
        if f.state & (NUD_PERMANENT | NUD_NOARP):
            continue
        if f.flags & 0x10:  # NTF_EXT_LEARNED
            continue
        timeout = f.updated + vxlan.cfg.age_interval * clock.hz
        if timeout <= now:
            f.state = NUD_STALE
            vxlan_fdb_destroy(vxlan, f)
        elif timeout < next_timer:
            next_timer = timeout
    vxlan.age_timer.mod(next_timer)


@kernel("vxlan_flush")
def vxlan_flush(vxlan: VxlanDev, *, keep_permanent: bool, keep_default: bool = True) -> None:
    """Delete entries: all but the default one (dellink), or only the dynamic
    ones as well (stop). Kernel: vxlan_flush()."""
    for f in list(vxlan.fdb.values()):
        if keep_permanent and f.state & (NUD_PERMANENT | NUD_NOARP):
            continue
        if keep_default and f.eth_addr == ALL_ZEROS_MAC and f.vni == vxlan.cfg.vni:
            continue
        vxlan_fdb_destroy(vxlan, f)


@kernel("drivers/net/vxlan/vxlan_core.c", "vxlan_fdb_info")
def vxlan_fdb_info(vxlan: VxlanDev, f: VxlanFdb, rd: VxlanRdst) -> FdbMsg:
    """One dumped entry: the remote's attributes where they differ from the
    device's. Kernel: drivers/net/vxlan/vxlan_core.c, vxlan_fdb_info()."""
    net = vxlan.net
    now = net.clock.jiffies
    cfg = vxlan.cfg
    return FdbMsg(
        vxlan.dev.ifindex,
        f.state,
        f.flags & 0xFF,
        f.eth_addr,
        dst=rd.remote_ip.to_bytes(4, "big") if rd.remote_ip else None,
        port=rd.remote_port if rd.remote_port and rd.remote_port != cfg.dst_port else None,
        vni=rd.remote_vni if rd.remote_vni != vxlan.default_dst.remote_vni else None,
        via=rd.remote_ifindex or None,
        used=_jiffies_to_clock_t(net, now - f.used),
        updated=_jiffies_to_clock_t(net, now - f.updated),
    )


# ---------------------------------------------------------------------------
# Device
# ---------------------------------------------------------------------------


class VxlanOps(NetDeviceOps):
    """Kernel: vxlan_netdev_ether_ops."""

    @kernel("vxlan_init")
    def ndo_init(self, dev: NetDevice) -> None:
        """Kernel: vxlan_init() (the GRO cells)."""
        vxlan: VxlanDev = dev.priv
        vxlan.gro_cells = GroCells(dev)

    @kernel("vxlan_uninit")
    def ndo_uninit(self, dev: NetDevice) -> None:
        """Kernel: vxlan_uninit() (the default entry goes last)."""
        vxlan: VxlanDev = dev.priv
        if vxlan.gro_cells is not None:
            vxlan.gro_cells.destroy()
            vxlan.gro_cells = None
        f = vxlan.fdb.get(ALL_ZEROS_MAC)
        if f is not None:
            vxlan_fdb_destroy(vxlan, f)

    @kernel("vxlan_open")
    def ndo_open(self, dev: NetDevice) -> None:
        """Open (or share) the UDP socket, join the group, start ageing. Kernel: vxlan_open()."""
        vxlan: VxlanDev = dev.priv
        vxlan_sock_add(vxlan)
        err = vxlan_multicast_join(vxlan)
        if err:
            vxlan_sock_release(vxlan)
            raise ConfigError(f"RTNETLINK answers: {os.strerror(-err)}", -err)
        if vxlan.cfg.age_interval:
            clock = dev.net.clock
            vxlan.age_timer.mod(clock.jiffies + FDB_AGE_INTERVAL_S * clock.hz)

    @kernel("vxlan_stop")
    def ndo_stop(self, dev: NetDevice) -> None:
        """Leave the group, stop ageing, flush the dynamic entries, release the socket.

        Kernel: vxlan_stop().
        """
        vxlan: VxlanDev = dev.priv
        vxlan_multicast_leave(vxlan)
        vxlan.age_timer.delete()
        vxlan_flush(vxlan, keep_permanent=True)
        vxlan_sock_release(vxlan)

    def ndo_start_xmit(self, skb: SkBuff, dev: NetDevice) -> int:
        return vxlan_xmit(skb, dev)

    @kernel("vxlan_change_mtu")
    def ndo_change_mtu(self, dev: NetDevice, new_mtu: int) -> None:
        """Not above the underlay's MTU less the headers. Kernel: vxlan_change_mtu()."""
        vxlan: VxlanDev = dev.priv
        lower = dev.net.dev_get_by_index(vxlan.default_dst.remote_ifindex)
        if lower is not None and new_mtu > lower.mtu - VXLAN_HEADROOM:
            raise ConfigError("RTNETLINK answers: Invalid argument", errno.EINVAL)
        dev.mtu = new_mtu

    def ndo_set_mac_address(self, dev: NetDevice, addr: bytes) -> None:
        dev.dev_addr = addr  # eth_mac_addr()

    @kernel("vxlan_fdb_add")
    def ndo_fdb_add(
        self,
        ndm_state: int,
        ndm_flags: int,
        tb: Mapping[int, Any],
        dev: NetDevice,
        addr: bytes,
        vid: int,
        nlflags: int,
    ) -> None:
        """``bridge fdb add|append|replace MAC dev vxlan0 dst IP …``. Kernel: vxlan_fdb_add()."""
        vxlan: VxlanDev = dev.priv
        if not ndm_state & (NUD_PERMANENT | NUD_REACHABLE):
            # pr_info("RTM_NEWNEIGH with invalid state %#x")
            raise fdb_errno(errno.EINVAL)
        if NDA_DST not in tb:
            raise fdb_errno(errno.EINVAL)
        rd = vxlan_fdb_parse(vxlan, tb)
        if NDA_SRC_VNI in tb and int(tb[NDA_SRC_VNI]) != vxlan.default_dst.remote_vni:
            raise fdb_errno(errno.EINVAL)  # only collect-metadata devices key on the VNI
        vxlan_fdb_update(vxlan, addr, rd, ndm_state, nlflags, ndm_flags | NTF_VXLAN_ADDED_BY_USER)

    @kernel("vxlan_fdb_delete")
    def ndo_fdb_del(
        self,
        ndm_state: int,
        ndm_flags: int,
        tb: Mapping[int, Any],
        dev: NetDevice,
        addr: bytes,
        vid: int,
    ) -> None:
        """``bridge fdb del MAC dev vxlan0 [dst IP]``. Kernel: vxlan_fdb_delete()."""
        vxlan: VxlanDev = dev.priv
        _vxlan_fdb_delete(vxlan, addr, vxlan_fdb_parse(vxlan, tb))

    @kernel("vxlan_fdb_dump")
    def ndo_fdb_dump(self, dev: NetDevice, filter_dev: NetDevice | None) -> list[Any]:
        """Every remote of every entry, newest entry first. Kernel: vxlan_fdb_dump()."""
        vxlan: VxlanDev = dev.priv
        return [
            vxlan_fdb_info(vxlan, f, rd) for f in reversed(vxlan.fdb.values()) for rd in f.remotes
        ]


VXLAN_OPS: Final = VxlanOps()


@kernel("vxlan_setup", "vxlan_ether_setup")
def vxlan_setup(dev: NetDevice) -> None:
    """Shape an Ethernet VXLAN device. Kernel: vxlan_setup() + vxlan_ether_setup()."""
    dev.dev_addr = eth_random_addr(dev.net.rng)  # eth_hw_addr_random()
    dev.addr_assign_type = NET_ADDR_RANDOM
    ether_setup(dev)
    dev.features |= NETIF_F_SG | NETIF_F_HW_CSUM | NETIF_F_FRAGLIST | NETIF_F_RXCSUM
    dev.features |= NETIF_F_GSO_SOFTWARE | NETIF_F_LLTX
    dev.vlan_features = dev.features
    dev.hw_features |= NETIF_F_SG | NETIF_F_HW_CSUM | NETIF_F_FRAGLIST | NETIF_F_RXCSUM
    dev.hw_features |= NETIF_F_GSO_SOFTWARE
    dev.priv_flags |= IFF_NO_QUEUE | IFF_LIVE_ADDR_CHANGE
    dev.priv_flags &= ~IFF_TX_SKB_SHARING
    dev.min_mtu = ETH_MIN_MTU
    dev.max_mtu = ETH_MAX_MTU
    dev.priv = VxlanDev(dev)


def _err(msg: str, err: int) -> ConfigError:
    return ConfigError(f"Error: {msg}.", err)


@kernel("vxlan_nl2conf")
def vxlan_nl2conf(
    parms: VxlanParms, tb: Mapping[str, Any], old: VxlanConfig | None = None
) -> VxlanConfig:
    """The request's attributes as a configuration: a new device's, or with *old*
    (``changelink``) the running one's with what may change changed — the VNI,
    TTL inheritance, limit, ports and checksum flags may not (``EOPNOTSUPP``,
    checked in the kernel's attribute order, before anything is applied).

    Kernel: vxlan_nl2conf().
    """
    changelink = old is not None
    conf = attrs.evolve(old) if old is not None else VxlanConfig()
    eop = errno.EOPNOTSUPP
    if parms.vni is not None:
        if changelink and parms.vni != conf.vni:
            raise _err("Cannot change VNI", eop)
        conf.vni = parms.vni
    if parms.group is not None:
        conf.remote_ip = parms.group
    if parms.local is not None:
        conf.saddr = parms.local
    if parms.link is not None:
        conf.remote_ifindex = parms.link
    if parms.tos is not None:
        conf.tos = parms.tos
    if parms.ttl is not None:
        conf.ttl = parms.ttl
    if parms.ttl_inherit:
        if changelink:
            raise _err("vxlan: cannot change TTL_INHERIT flag", eop)
        conf.flags |= VXLAN_F_TTL_INHERIT
    if parms.df is not None:
        conf.df = parms.df
    if parms.learning is not None:
        conf.flags = conf.flags | VXLAN_F_LEARN if parms.learning else conf.flags & ~VXLAN_F_LEARN
    elif not changelink:
        conf.flags |= VXLAN_F_LEARN  # "default to learn on a new device"
    if parms.ageing is not None:
        conf.age_interval = parms.ageing
    if parms.limit is not None:
        if changelink:
            raise _err("Cannot change limit", eop)
        conf.addrmax = parms.limit
    if parms.port_range is not None:
        if changelink:
            raise _err("Cannot change port range", eop)
        conf.port_min, conf.port_max = parms.port_range
    if parms.port is not None:
        if changelink:
            raise _err("Cannot change port", eop)
        conf.dst_port = parms.port
    if parms.udp_csum is not None:
        if changelink:
            raise _err("Cannot change UDP_CSUM flag", eop)
        if not parms.udp_csum:
            conf.flags |= VXLAN_F_UDP_ZERO_CSUM_TX
    if parms.udp_zero_csum6_tx is not None:
        if changelink:
            raise _err("vxlan: cannot change UDP_ZERO_CSUM6_TX flag", eop)
        if parms.udp_zero_csum6_tx:
            conf.flags |= VXLAN_F_UDP_ZERO_CSUM6_TX
    if parms.udp_zero_csum6_rx is not None:
        if changelink:
            raise _err("vxlan: cannot change UDP_ZERO_CSUM6_RX flag", eop)
        if parms.udp_zero_csum6_rx:
            conf.flags |= VXLAN_F_UDP_ZERO_CSUM6_RX
    if not changelink:
        conf.flags |= VXLAN_F_LOCALBYPASS  # "default to local bypass on a new device"
        mtu = tb.get("mtu")
        if mtu is not None:
            conf.mtu = int(mtu)
    return conf


@kernel("vxlan_validate")
def vxlan_validate(parms: VxlanParms, tb: Mapping[str, Any]) -> None:
    """Kernel: vxlan_validate()."""
    address = tb.get("address")
    if address is not None:
        if len(address) != 6:
            raise _err("Provided link layer address is not Ethernet", errno.EINVAL)
        if not _valid_ether(bytes(address)):
            raise _err("Provided Ethernet address is not unicast", errno.EADDRNOTAVAIL)
    mtu = tb.get("mtu")
    if mtu is not None and not ETH_MIN_MTU <= int(mtu) <= ETH_MAX_MTU:
        raise _err("MTU must be between 68 and 65535", errno.EINVAL)
    if parms.vni is not None and parms.vni >= VXLAN_N_VID:
        raise _err("VXLAN ID must be lower than 16777216", errno.ERANGE)
    if parms.port_range is not None and parms.port_range[1] < parms.port_range[0]:
        raise _err("Invalid source port range", errno.EINVAL)


@kernel("drivers/net/vxlan/vxlan_core.c", "vxlan_config_validate", "vxlan_vni_in_use")
def vxlan_config_validate(net: Net, conf: VxlanConfig, old: VxlanDev | None) -> NetDevice | None:
    """Check a configuration; fill its defaults; return the underlay device.

    Kernel: drivers/net/vxlan/vxlan_core.c, vxlan_config_validate() / vxlan_vni_in_use().
    """
    if ipv4_is_multicast(conf.saddr):
        raise _err("Local address cannot be multicast", errno.EINVAL)
    lower: NetDevice | None = None
    if conf.remote_ifindex:
        lower = net.dev_get_by_index(conf.remote_ifindex)
        if lower is None:
            raise _err("Invalid local interface, device not found", errno.ENODEV)
    elif ipv4_is_multicast(conf.remote_ip):
        raise _err("Local interface required for multicast remote destination", errno.EINVAL)
    if not conf.dst_port:
        conf.dst_port = VXLAN_PORT_DEFAULT
    if not conf.age_interval:
        conf.age_interval = FDB_AGE_DEFAULT
    for tmp in vxlan_net_of(net).vxlan_list:
        if tmp is old or tmp.cfg.vni != conf.vni or tmp.cfg.dst_port != conf.dst_port:
            continue
        if (tmp.cfg.flags ^ conf.flags) & (VXLAN_F_RCV_FLAGS | VXLAN_F_IPV6):
            continue
        raise _err("A VXLAN device with the specified VNI already exists", errno.EEXIST)
    return lower


@kernel("vxlan_config_apply")
def vxlan_config_apply(
    dev: NetDevice, conf: VxlanConfig, lower: NetDevice | None, *, changelink: bool = False
) -> None:
    """Size the device from its underlay. Kernel: vxlan_config_apply()."""
    vxlan: VxlanDev = dev.priv
    dst = vxlan.default_dst
    needed_headroom = ETH_HLEN
    max_mtu = ETH_MAX_MTU
    if conf.mtu and not changelink:
        dev.mtu = conf.mtu
    dst.remote_vni = conf.vni
    dst.remote_ip = conf.remote_ip
    if lower is not None:
        dst.remote_ifindex = conf.remote_ifindex
        needed_headroom = lower.hard_header_len + lower.needed_headroom
        dev.needed_tailroom = lower.needed_tailroom
        max_mtu = max(lower.mtu - VXLAN_HEADROOM, ETH_MIN_MTU)
        if not changelink and not conf.mtu:
            dev.mtu = max_mtu
    if dev.mtu > max_mtu:
        dev.mtu = max_mtu
    dev.needed_headroom = needed_headroom + VXLAN_HEADROOM
    vxlan.cfg = conf


@kernel("drivers/net/vxlan/vxlan_core.c", "vxlan_validate", "vxlan_newlink", "__vxlan_dev_create")
def vxlan_newlink(net: Net, name: str | None, data: Any, tb: dict[str, Any]) -> NetDevice:
    """``ip link add NAME type vxlan id VNI …``: validate, set up, register.

    Kernel: drivers/net/vxlan/vxlan_core.c, vxlan_validate(), vxlan_newlink(),
    __vxlan_dev_create().
    """
    parms: VxlanParms = data if data is not None else VxlanParms()
    vxlan_validate(parms, tb)
    dev = NetDevice(net, name or "vxlan%d", VXLAN_OPS, kind="vxlan")
    vxlan_setup(dev)
    address = tb.get("address")
    if address is not None:
        dev.dev_addr = bytes(address)
        dev.addr_assign_type = NET_ADDR_SET
    conf = vxlan_nl2conf(parms, tb)
    vxlan: VxlanDev = dev.priv
    lower = vxlan_config_validate(net, conf, None)
    vxlan_config_apply(dev, conf, lower)
    dst = vxlan.default_dst
    register_netdevice(dev)
    if dst.remote_ip:  # "create an fdb entry for a valid default destination"
        vxlan_fdb_create(
            vxlan,
            ALL_ZEROS_MAC,
            VxlanRdst(dst.remote_ip, conf.dst_port, dst.remote_vni, dst.remote_ifindex),
            NUD_REACHABLE | NUD_PERMANENT,
            NTF_SELF,
            dst.remote_vni,
        )
    vxlan_net_of(net).vxlan_list.append(vxlan)
    return dev


@kernel("drivers/net/vxlan/vxlan_core.c", "vxlan_changelink")
def vxlan_changelink(dev: NetDevice, data: Any, tb: dict[str, Any]) -> None:
    """``ip link set DEV type vxlan …``: remote, local, dev, TTL, TOS, DF,
    learning and ageing change; the VNI, ports, checksum flag and limit do not.

    Kernel: drivers/net/vxlan/vxlan_core.c, vxlan_changelink() (vxlan_nl2conf
    with changelink set, vxlan_config_validate, the default entry moved).
    """
    parms: VxlanParms = data
    vxlan: VxlanDev = dev.priv
    conf = vxlan_nl2conf(parms, tb, vxlan.cfg)
    lower = vxlan_config_validate(dev.net, conf, vxlan)
    dst = vxlan.default_dst
    if conf.remote_ip != dst.remote_ip:  # "handle default dst entry"
        if conf.remote_ip:
            vxlan_fdb_update(
                vxlan,
                ALL_ZEROS_MAC,
                VxlanRdst(conf.remote_ip, vxlan.cfg.dst_port, conf.vni, conf.remote_ifindex),
                NUD_REACHABLE | NUD_PERMANENT,
                NLM_F_APPEND | NLM_F_CREATE,
                NTF_SELF,
            )
        if dst.remote_ip:
            _vxlan_fdb_delete(
                vxlan,
                ALL_ZEROS_MAC,
                VxlanRdst(dst.remote_ip, vxlan.cfg.dst_port, dst.remote_vni, dst.remote_ifindex),
            )
    if conf.age_interval != vxlan.cfg.age_interval and dev.flags & IFF_UP:
        vxlan.age_timer.mod(dev.net.clock.jiffies)
    vxlan_config_apply(dev, conf, lower, changelink=True)


@kernel("vxlan_dellink")
def vxlan_dellink(dev: NetDevice) -> None:
    """``ip link del``. Kernel: vxlan_dellink()."""
    vxlan: VxlanDev = dev.priv
    vxlan_flush(vxlan, keep_permanent=False)
    vn = vxlan_net_of(dev.net)
    if vxlan in vn.vxlan_list:
        vn.vxlan_list.remove(vxlan)
    unregister_netdevice(dev)


@kernel("vxlan_netdevice_event")
def vxlan_netdevice_event(event: int, dev: NetDevice) -> None:
    """The underlay goes away: so do the devices on it. Kernel: vxlan_netdevice_event()."""
    if event != NETDEV_UNREGISTER:
        return
    for vxlan in list(vxlan_net_of(dev.net).vxlan_list):
        if vxlan.default_dst.remote_ifindex == dev.ifindex:
            vxlan_dellink(vxlan.dev)


@kernel("vxlan_fill_info")
def vxlan_fill_info(dev: NetDevice) -> VxlanConfig:
    """What ``ip -d link`` shows (``IFLA_VXLAN_*``). Kernel: vxlan_fill_info()."""
    vxlan: VxlanDev = dev.priv
    return attrs.evolve(
        vxlan.cfg,
        remote_ip=vxlan.default_dst.remote_ip,
        remote_ifindex=vxlan.default_dst.remote_ifindex,
        vni=vxlan.default_dst.remote_vni,
    )


# ---------------------------------------------------------------------------
# Sockets
# ---------------------------------------------------------------------------


@kernel("drivers/net/vxlan/vxlan_core.c", "vxlan_socket_create", "vxlan_create_sock")
def vxlan_socket_create(net: Net, port: int, flags: int, ifindex: int) -> VxlanSock:
    """Open the UDP socket for *port* and make it decapsulate.

    Kernel: drivers/net/vxlan/vxlan_core.c, vxlan_socket_create() / vxlan_create_sock().
    """
    try:
        sock = udp_sock_create(net, port, ifindex)
    except OSError as e:
        code = e.errno or errno.EINVAL
        raise ConfigError(f"RTNETLINK answers: {e.strerror}", code) from None
    vs = VxlanSock(sock, flags & VXLAN_F_RCV_FLAGS)
    vxlan_net_of(net).sock_list.setdefault(port, []).append(vs)
    setup_udp_tunnel_sock(
        sock,
        UdpTunnelSockCfg(
            vs,
            1,
            vxlan_rcv,
            partial(vxlan_gro_receive, net),
            partial(vxlan_gro_complete, net),
        ),
    )
    return vs


@kernel("vxlan_sock_add", "__vxlan_sock_add", "vxlan_find_sock", "vxlan_vs_add_dev")
def vxlan_sock_add(vxlan: VxlanDev) -> None:
    """Share the socket of another device on this port, or open one.

    Kernel: vxlan_sock_add() / __vxlan_sock_add() / vxlan_find_sock() / vxlan_vs_add_dev().
    """
    cfg = vxlan.cfg
    flags = cfg.flags & VXLAN_F_RCV_FLAGS
    vs = None
    for cand in vxlan_net_of(vxlan.net).sock_list.get(cfg.dst_port, ()):
        if cand.flags == flags and cand.sock.sk_bound_dev_if == 0:
            vs = cand
            vs.refcnt += 1
            break
    if vs is None:
        vs = vxlan_socket_create(vxlan.net, cfg.dst_port, cfg.flags, 0)
    vxlan.vn4_sock = vs
    vs.vni_list[vxlan.default_dst.remote_vni] = vxlan


@kernel("vxlan_sock_release", "__vxlan_sock_release_prep")
def vxlan_sock_release(vxlan: VxlanDev) -> None:
    """Kernel: vxlan_sock_release() / __vxlan_sock_release_prep()."""
    vs = vxlan.vn4_sock
    vxlan.vn4_sock = None
    if vs is None:
        return
    if vs.vni_list.get(vxlan.default_dst.remote_vni) is vxlan:
        del vs.vni_list[vxlan.default_dst.remote_vni]
    vs.refcnt -= 1
    if vs.refcnt:
        return
    lst = vxlan_net_of(vxlan.net).sock_list.get(vxlan.cfg.dst_port, [])
    if vs in lst:
        lst.remove(vs)
    udp_tunnel_sock_release(vs.sock)


@kernel("drivers/net/vxlan/vxlan_multicast.c", "vxlan_igmp_join")
def vxlan_igmp_join(vxlan: VxlanDev, rip: int, rifindex: int) -> int:
    """Join *rip* on the device's socket, on *rifindex*: 0 or -errno.

    Kernel: drivers/net/vxlan/vxlan_multicast.c, vxlan_igmp_join().
    """
    vs = vxlan.vn4_sock
    assert vs is not None
    return ip_mc_join_group(ipv4_of(vxlan.net), vs.sock, IpMreqn(rip, 0, rifindex))


@kernel("drivers/net/vxlan/vxlan_multicast.c", "vxlan_igmp_leave")
def vxlan_igmp_leave(vxlan: VxlanDev, rip: int, rifindex: int) -> int:
    """Kernel: drivers/net/vxlan/vxlan_multicast.c, vxlan_igmp_leave()."""
    vs = vxlan.vn4_sock
    assert vs is not None
    return ip_mc_leave_group(ipv4_of(vxlan.net), vs.sock, IpMreqn(rip, 0, rifindex))


@kernel("drivers/net/vxlan/vxlan_multicast.c", "vxlan_multicast_join")
def vxlan_multicast_join(vxlan: VxlanDev) -> int:
    """A multicast default destination: join it (a shared socket's second join is fine).

    Kernel: drivers/net/vxlan/vxlan_multicast.c, vxlan_multicast_join().
    """
    rd = vxlan.default_dst
    if not ipv4_is_multicast(rd.remote_ip):
        return 0
    err = vxlan_igmp_join(vxlan, rd.remote_ip, rd.remote_ifindex)
    return 0 if err == -errno.EADDRINUSE else err


@kernel("drivers/net/vxlan/vxlan_multicast.c", "vxlan_group_used")
def vxlan_group_used(vxlan: VxlanDev) -> bool:
    """Does another running device on the same socket use the same group and device?

    Kernel: drivers/net/vxlan/vxlan_multicast.c, vxlan_group_used().
    """
    vs = vxlan.vn4_sock
    if vs is None or vs.refcnt == 1:
        return False
    rd = vxlan.default_dst
    for other in vxlan_net_of(vxlan.net).vxlan_list:
        if other is vxlan or not other.dev.running or other.vn4_sock is not vs:
            continue
        od = other.default_dst
        if od.remote_ip == rd.remote_ip and od.remote_ifindex == rd.remote_ifindex:
            return True
    return False


@kernel("vxlan_multicast_leave")
def vxlan_multicast_leave(vxlan: VxlanDev) -> None:
    """Leave the group unless another device still uses it. Kernel: vxlan_multicast_leave()."""
    rd = vxlan.default_dst
    if vxlan.vn4_sock is None or not ipv4_is_multicast(rd.remote_ip):
        return
    if not vxlan_group_used(vxlan):
        vxlan_igmp_leave(vxlan, rd.remote_ip, rd.remote_ifindex)


# ---------------------------------------------------------------------------
# Transmit
# ---------------------------------------------------------------------------


@kernel("drivers/net/vxlan/vxlan_core.c", "vxlan_xmit")
def vxlan_xmit(skb: SkBuff, dev: NetDevice) -> int:
    """Find the remotes for the inner destination MAC and send a copy to each.

    Kernel: drivers/net/vxlan/vxlan_core.c, vxlan_xmit().
    """
    if TIMED:
        spend("vxlan_xmit")
    vxlan: VxlanDev = dev.priv
    d = skb.data
    skb.mac_header = d  # skb_reset_mac_header()
    if skb.tail - d < ETH_HLEN:
        dev.stats.tx_dropped += 1
        kfree_skb(skb, DropReason.PKT_TOO_SMALL)
        return NETDEV_TX_OK
    f = vxlan_find_mac(vxlan, bytes(skb.buf[d : d + 6]))
    if f is None:
        f = vxlan_find_mac(vxlan, ALL_ZEROS_MAC)
        if f is None:
            dev.stats.tx_dropped += 1  # dev_core_stats_tx_dropped_inc()
            kfree_skb(skb, DropReason.NO_TX_TARGET)
            return NETDEV_TX_OK
    remotes = f.remotes
    for rdst in remotes[1:]:
        vxlan_xmit_one(skb.clone(), dev, 0, rdst)  # skb_clone()
    vxlan_xmit_one(skb, dev, 0, remotes[0])
    return NETDEV_TX_OK


@kernel("vxlan_xmit_one", "vxlan_build_skb")
def vxlan_xmit_one(skb: SkBuff, dev: NetDevice, default_vni: int, rdst: VxlanRdst) -> None:
    """Encapsulate toward one remote. Kernel: vxlan_xmit_one() + vxlan_build_skb()."""
    if TIMED:
        spend("vxlan_xmit_one")
    vxlan: VxlanDev = dev.priv
    cfg = vxlan.cfg
    stats = dev.stats
    net = dev.net
    d = skb.data
    buf = skb.buf
    # skb_vlan_inet_prepare(): the inner network header follows the Ethernet one
    skb.network_header = d + ETH_HLEN
    if not rdst.remote_ip:  # a "bridge-local" entry (dst 0.0.0.0): nothing to send to
        stats.tx_dropped += 1
        kfree_skb(skb, DropReason.NOT_SPECIFIED)
        return
    dst_port = rdst.remote_port or cfg.dst_port
    vni = rdst.remote_vni or default_vni
    ifindex = rdst.remote_ifindex
    inner_proto = (buf[d + 12] << 8) | buf[d + 13]
    skb.protocol = inner_proto
    inner_nh = d + ETH_HLEN
    has_ip = inner_proto == ETH_P_IP and skb.tail - inner_nh >= IPV4_HLEN
    if cfg.flags & VXLAN_F_TTL_INHERIT and has_ip:
        ttl = buf[inner_nh + 8]
    else:
        ttl = cfg.ttl
        if not ttl and ipv4_is_multicast(rdst.remote_ip):
            ttl = 1
    tos = cfg.tos
    if tos == 1:  # inherit: ip_tunnel_get_dsfield()
        if has_ip:
            tos = buf[inner_nh + 1]
        elif inner_proto == ETH_P_IPV6 and skb.tail - inner_nh >= 2:
            tos = ((buf[inner_nh] & 0x0F) << 4) | (buf[inner_nh + 1] >> 4)
        else:
            tos = 0
    udp_sum = not cfg.flags & VXLAN_F_UDP_ZERO_CSUM_TX
    src_port = udp_flow_src_port(net, skb, cfg.port_min, cfg.port_max)
    vs = vxlan.vn4_sock
    if vs is None:  # not open (the core does not call a stopped device's xmit)
        stats.tx_dropped += 1
        kfree_skb(skb, DropReason.DEV_READY)
        return
    if not ifindex:
        ifindex = vs.sock.sk_bound_dev_if
    # the per-remote route cache, unless a TOS makes the route per packet
    cache = rdst.dst_cache if not tos else None
    got = udp_tunnel_dst_lookup(
        dev, net, ifindex, cfg.saddr, rdst.remote_ip, src_port, dst_port, tos, cache
    )
    if isinstance(got, int):  # tx_error
        if got == -errno.ELOOP:
            stats.collisions += 1
            reason = DropReason.XMIT_RECURSION
        else:
            stats.tx_carrier_errors += 1
            reason = DropReason.IP_OUTNOROUTES
        stats.tx_errors += 1
        kfree_skb(skb, reason)
        return
    rt, saddr = got
    df = 0
    if cfg.df == VXLAN_DF_SET:
        df = IP_DF
    elif cfg.df == VXLAN_DF_INHERIT:
        if inner_proto == ETH_P_IPV6 or (has_ip and buf[inner_nh + 6] & 0x40):
            df = IP_DF
    tos = ip_tunnel_ecn_encap(tos, skb, inner_nh) if has_ip else tos
    if not ttl:
        ttl = ipv4_of(net).ip_default_ttl  # ip4_dst_hoplimit()
    # vxlan_build_skb(): headroom, offload marks, the VXLAN header
    rdev = rt.dev
    assert rdev is not None
    min_headroom = LL_RESERVED_SPACE(rdev) + rt.header_len + VXLAN_HLEN + IPV4_HLEN
    if skb.data < min_headroom or skb.cloned:
        skb.cow_head(min_headroom)
    iptunnel_handle_offloads(skb, SKB_GSO_UDP_TUNNEL_CSUM if udp_sum else SKB_GSO_UDP_TUNNEL)
    vh = skb.push(VXLAN_HDR_LEN)
    _HDR.pack_into(skb.buf, vh, VXLAN_HF_VNI, (vni & VXLAN_VID_MASK) << 8)
    skb.inner_protocol = 0x6558  # ETH_P_TEB
    udp_tunnel_xmit_skb(
        rt, skb, saddr, rdst.remote_ip, tos, ttl, df, src_port, dst_port, not udp_sum, dev
    )


# ---------------------------------------------------------------------------
# Receive
# ---------------------------------------------------------------------------


@kernel("drivers/net/vxlan/vxlan_core.c", "vxlan_rcv", "vxlan_set_mac")
def vxlan_rcv(sk: UdpSock, skb: SkBuff) -> int:
    """The socket's ``encap_rcv``: check the header, find the device, learn,
    decapsulate, hand the inner frame to the device's GRO cell. Always 0
    (consumed: dropped or delivered).

    Kernel: drivers/net/vxlan/vxlan_core.c, vxlan_rcv() / vxlan_set_mac().
    """
    if TIMED:
        spend("vxlan_rcv")
    th = skb.data
    if skb.tail - th < VXLAN_HLEN:  # pskb_may_pull_reason(skb, VXLAN_HLEN)
        kfree_skb(skb, DropReason.PKT_TOO_SMALL)
        return 0
    flags, vni_field = _HDR.unpack_from(skb.buf, th + 8)
    if not flags & VXLAN_HF_VNI:  # "VNI flag always required to be set"
        kfree_skb(skb, DropReason.VXLAN_INVALID_HDR)
        return 0
    vs: VxlanSock | None = sk.sk_user_data
    if vs is None:
        kfree_skb(skb, DropReason.NOT_SPECIFIED)
        return 0
    vni = vni_field >> 8
    vxlan = vs.vni_list.get(vni)
    if vxlan is None:
        kfree_skb(skb, DropReason.VXLAN_VNI_NOT_FOUND)
        return 0
    outer_nh = skb.network_header
    if not iptunnel_pull_header(skb, VXLAN_HLEN, 0x6558, False):
        kfree_skb(skb, DropReason.PKT_TOO_SMALL)
        return 0
    if flags & ~VXLAN_HF_VNI or vni_field & 0xFF:
        # "any unprocessed flags remaining": malformed (stricter than RFC 7348)
        kfree_skb(skb, DropReason.VXLAN_INVALID_HDR)
        return 0
    dev = vxlan.dev
    buf = skb.buf
    # vxlan_set_mac()
    skb.protocol = eth_type_trans(skb, dev)
    mac = skb.mac_header
    src_mac = bytes(buf[mac + 6 : mac + 12])
    if src_mac == bytes(dev.dev_addr):  # "Ignore packet loops (and multicast echo)"
        kfree_skb(skb, DropReason.LOCAL_MAC)
        return 0
    if vxlan.cfg.flags & VXLAN_F_LEARN:
        (saddr,) = _I.unpack_from(buf, outer_nh + 12)
        reason = vxlan_snoop(vxlan, saddr, src_mac)
        if reason is not None:
            kfree_skb(skb, reason)
            return 0
    skb.network_header = skb.data  # skb_reset_network_header()
    stats = dev.stats
    if skb.protocol == ETH_P_IP:  # pskb_inet_may_pull_reason()
        need = IPV4_HLEN
    elif skb.protocol == ETH_P_IPV6:
        need = 40
    else:
        need = 0
    if skb.data + need > skb.tail:
        stats.rx_length_errors += 1
        stats.rx_errors += 1
        kfree_skb(skb, DropReason.PKT_TOO_SMALL)
        return 0
    outer_tos = buf[outer_nh + 1]
    if IP_ECN_decapsulate(outer_tos, skb) > 1:  # vxlan_ecn_decapsulate()
        stats.rx_frame_errors += 1
        stats.rx_errors += 1
        kfree_skb(skb, DropReason.IP_TUNNEL_ECN)
        return 0
    if not dev.flags & IFF_UP:
        stats.rx_dropped += 1  # dev_core_stats_rx_dropped_inc()
        kfree_skb(skb, DropReason.DEV_READY)
        return 0
    stats.rx_packets += 1  # dev_sw_netstats_rx_add()
    stats.rx_bytes += skb.tail - skb.data
    skb_scrub_packet(skb, False)
    cells = vxlan.gro_cells
    if cells is None:
        kfree_skb(skb, DropReason.DEV_READY)
        return 0
    gro_cells_receive(cells, skb)
    return 0


# ---------------------------------------------------------------------------
# GRO: the socket's gro_receive / gro_complete (udp4_gro_receive calls them)
# ---------------------------------------------------------------------------


@kernel(
    "drivers/net/vxlan/vxlan_core.c",
    "vxlan_gro_receive",
    "vxlan_gro_prepare_receive",
)
def vxlan_gro_receive(net: Net, sk: UdpSock, head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """Pull the VXLAN header and let the inner Ethernet frame's GRO decide.

    Held packets with other flags or another VNI are another flow; the inner
    Ethernet header (``eth_gro_receive``), then IP and TCP, decide the merge.

    Kernel: drivers/net/vxlan/vxlan_core.c, vxlan_gro_receive() /
    vxlan_gro_prepare_receive().
    """
    if TIMED:
        spend("vxlan_gro_receive")
    cb: NapiGroCb = skb.cb
    off = cb.off
    buf = skb.buf
    pp: SkBuff | None = None
    flush = 1
    if skb.tail - off >= VXLAN_HDR_LEN:  # skb_gro_header()
        if cb.csum_valid:  # skb_gro_postpull_rcsum()
            cb.csum = csum_block_sub(cb.csum, csum_partial(buf, off, off + VXLAN_HDR_LEN), 0)
        vh = buf[off : off + VXLAN_HDR_LEN]
        rel = off - skb.data
        cb.off = off + VXLAN_HDR_LEN  # skb_gro_pull()
        for p in head:
            pcb: NapiGroCb = p.cb
            if not pcb.same_flow:
                continue
            o2 = p.data + rel
            if p.buf[o2 : o2 + VXLAN_HDR_LEN] != vh:  # vx_flags, vx_vni
                pcb.same_flow = 0
        pp = call_gro_receive(partial(eth_gro_receive, net), head, skb)
        flush = 0
    cb.flush |= flush  # skb_gro_flush_final_remcsum()
    return pp


@kernel("drivers/net/vxlan/vxlan_core.c", "vxlan_gro_complete")
def vxlan_gro_complete(net: Net, sk: UdpSock, skb: SkBuff, nhoff: int) -> int:
    """Kernel: drivers/net/vxlan/vxlan_core.c, vxlan_gro_complete()."""
    return eth_gro_complete(net, skb, nhoff + VXLAN_HDR_LEN)


@kernel("drivers/net/vxlan/vxlan_core.c", "vxlan_init_module", "vxlan_init_net")
def vxlan_init_net(net: Net) -> None:
    """The ``vxlan`` module's per-Net init: its link kind and netdevice notifier.

    Kernel: drivers/net/vxlan/vxlan_core.c, vxlan_init_module() / vxlan_init_net().
    """
    vxlan_net_of(net)
    net.register_netdevice_notifier(vxlan_netdevice_event)
    rtnl_link_register(
        net,
        RtnlLinkOps(
            "vxlan",
            newlink=vxlan_newlink,
            changelink=vxlan_changelink,
            dellink=vxlan_dellink,
            get_info=vxlan_fill_info,
        ),
    )


VXLAN_MODULE: Final = KernelModule("vxlan", ("rtnl-link-vxlan",), vxlan_init_net)
