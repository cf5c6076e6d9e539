"""The IPv4 tunnel core shared by GRE, gretap, IPIP (and SIT): parameters, lookup, xmit, rcv.

Theory of operation — configuration: every tunnel device carries an
:class:`IpTunnel` (``netdev_priv``) with its :class:`IpTunnelParm` (the ioctl
``struct ip_tunnel_parm``: remote, local, keys, GRE flags, TTL, TOS, DF,
underlay link). Each driver keeps, per Net, an :class:`IpTunnelNet`: a
128-bucket hash of its tunnels keyed by ``hash_32(i_key ^ remote)`` and its
fallback device (``gre0``, ``gretap0``, ``tunl0``). The MTU comes from
:func:`ip_tunnel_bind_dev`: the underlay's MTU (found by routing to the remote)
minus the outer IPv4 header and the tunnel header (``hlen``).

Transmit (the tunnel's ``ndo_start_xmit`` has pushed its own header)::

    ip_tunnel_xmit: NBMA destination from the inner route, TOS inherit,
      route the outer packet (no route: tx_carrier_errors; back onto this
      device: collisions), DF/PMTU (tnl_update_pmtu: the inner route learns
      the tunnel's path MTU; an inner DF packet too big → ICMP frag-needed),
      ECN encapsulation, TTL inherit, headroom ─► iptunnel_xmit: scrub, outer
      IPv4 header, IP ID, ip_local_out ─► the underlay

Receive (the driver has parsed its header and found the tunnel)::

    ip_tunnel_rcv: checksum policy (rx_crc_errors), sequence policy
      (rx_fifo_errors), inner header present (rx_length_errors), ECN
      decapsulation (rx_frame_errors), rx stats, scrub, Ethernet devices:
      eth_type_trans ─► gro_cells_receive ─► the tunnel's NAPI cell

Kernel: net/ipv4/ip_tunnel.c, net/ipv4/ip_tunnel_core.c (iptunnel_xmit,
__iptunnel_pull_header), include/net/ip_tunnels.h.
"""

from __future__ import annotations

import errno
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import attrs

from netstack.core.dev import NETDEV_CHANGE, netif_rx, skb_scrub_packet, unregister_netdevice
from netstack.core.dst import DstCache
from netstack.core.ethernet import HH_DATA_MOD, eth_type_trans
from netstack.core.features import NETIF_F_GRO, NETIF_F_NETNS_LOCAL
from netstack.core.gro_cells import GroCells
from netstack.core.inet_ecn import (
    INET_ECN_CE,
    INET_ECN_ECT_0,
    INET_ECN_MASK,
    INET_ECN_NOT_ECT,
    IP_ECN_decapsulate,
)
from netstack.core.netdevice import (
    IFF_BROADCAST,
    IFF_POINTOPOINT,
    IFF_UP,
    IFF_XMIT_DST_RELEASE,
    NET_XMIT_CN,
    NETDEV_TX_OK,
    NetDevice,
    NetDeviceOps,
    NetDeviceStats,
)
from netstack.core.skbuff import (
    CHECKSUM_COMPLETE,
    CHECKSUM_NONE,
    CHECKSUM_PARTIAL,
    PACKET_BROADCAST,
    DropReason,
    SkBuff,
    kfree_skb,
)
from netstack.errors import ConfigError
from netstack.ipv4 import ipv4_of
from netstack.ipv4.ip_output import ip_local_out
from netstack.ipv4.route import Flowi4, Rtable
from netstack.sites import TIMED, kernel, spend
from netstack.wire.arp import ARPHRD_ETHER
from netstack.wire.checksum import csum_partial, csum_sub
from netstack.wire.ethernet import ETH_HLEN, ETH_P_IP, ETH_P_IPV6
from netstack.wire.gre import GRE_CSUM, GRE_KEY, GRE_SEQ
from netstack.wire.icmp import ICMP_DEST_UNREACH, ICMP_FRAG_NEEDED
from netstack.wire.ipv4 import (
    IP_DF,
    IP_MAX_MTU,
    IPV4_HLEN,
    IPV4_MIN_MTU,
    ipv4_is_multicast,
)
from netstack.wire.ipv6 import IPV6_HLEN

if TYPE_CHECKING:
    from mypy_extensions import i64

    from netstack.core.net import Net

__all__ = [
    "IPTUNNEL_ERR_TIMEO",
    "IPV4_ADDRS",
    "IPV4_ADDRS_UNPACK",
    "IP_TNL_HASH_BITS",
    "SIOCADDTUNNEL",
    "SIOCCHGTUNNEL",
    "SIOCDELTUNNEL",
    "SIOCGETTUNNEL",
    "IpTunnel",
    "IpTunnelNet",
    "IpTunnelOps",
    "IpTunnelParm",
    "IpTunnelStats",
    "TnlPtkInfo",
    "ip_tunnel_bind_dev",
    "ip_tunnel_ctl",
    "ip_tunnel_ecn_encap",
    "ip_tunnel_find",
    "ip_tunnel_hash",
    "ip_tunnel_lookup",
    "ip_tunnel_rcv",
    "ip_tunnel_xmit",
    "iptunnel_xmit",
]

# ioctls on the fallback device or the tunnel itself (include/uapi/linux/if_tunnel.h)
SIOCDEVPRIVATE: Final = 0x89F0
SIOCGETTUNNEL: Final = SIOCDEVPRIVATE + 0
SIOCADDTUNNEL: Final = SIOCDEVPRIVATE + 1
SIOCDELTUNNEL: Final = SIOCDEVPRIVATE + 2
SIOCCHGTUNNEL: Final = SIOCDEVPRIVATE + 3

IP_TNL_HASH_BITS: Final = 7
IP_TNL_HASH_SIZE: Final = 1 << IP_TNL_HASH_BITS
_HASH_SHIFT: Final = 32 - IP_TNL_HASH_BITS
GOLDEN_RATIO_32: Final = 0x61C88647
IPTUNNEL_ERR_TIMEO_S: Final = 30  # IPTUNNEL_ERR_TIMEO = 30*HZ
IPTUNNEL_ERR_TIMEO: Final = IPTUNNEL_ERR_TIMEO_S

_I: Final = struct.Struct("!I")
IPV4_ADDRS: Final = struct.Struct("!II")  # an IPv4 header's saddr, daddr (at offset 12)
# The struct methods a tunnelled packet calls, bound once: compiled code calls them
# without looking the method up by name, and the reads are typed with what their
# formats give (ints, not Any: no boxed arithmetic after them); the pure package
# gets a global load instead of a global and a method load
IPV4_ADDRS_UNPACK: Final[Callable[[bytearray, int], tuple[int, int]]] = IPV4_ADDRS.unpack_from
# the outer IPv4 header written as its five 32-bit words (version/IHL and TOS; the ID
# and frag_off; TTL and protocol; the addresses), total length and checksum 0 until
# ip_local_out: five arguments where IPV4_HDR's fields are twelve
_IPV4_WORDS_PACK: Final[Callable[[bytearray, int, int, int, int, int, int], None]] = struct.Struct(
    "!5I"
).pack_into
_NOT_ECN_MASK: Final = 0xFF & ~INET_ECN_MASK
_HH_DATA_MASK: Final = ~(HH_DATA_MOD - 1)


# The fields in struct order; keep in step: each class below lists them again in its
# __init__ and _fields() (equality, repr; IpTunnelParm.copy() passes them to __init__)
_PARM_FIELDS: Final = (
    "name",
    "link",
    "i_flags",
    "o_flags",
    "i_key",
    "o_key",
    "version",
    "ihl",
    "tos",
    "frag_off",
    "ttl",
    "protocol",
    "saddr",
    "daddr",
)
_TPI_FIELDS: Final = ("flags", "proto", "key", "seq", "hdr_len", "csum_err", "no_key")


def _fields_repr(kind: str, names: tuple[str, ...], values: tuple[object, ...]) -> str:
    """``Kind(name=value, ...)``: the attrs-style ``repr`` of both records below."""
    pairs = ", ".join(f"{name}={value!r}" for name, value in zip(names, values, strict=True))
    return f"{kind}({pairs})"


_ParmTuple = tuple[str, int, int, int, int, int, int, int, int, int, int, int, int, int]
"""IpTunnelParm's fields in ``__init__``'s order (``_fields()``, ``copy()``)."""


class IpTunnelParm:
    """``struct ip_tunnel_parm``: what ``ip tunnel`` and ``ip link`` configure.

    ``i_flags``/``o_flags`` are GRE flag words (``GRE_CSUM|GRE_KEY|GRE_SEQ``);
    the ``iph`` template is flattened into ``saddr``… ``protocol``.

    A plain slotted class, not attrs (the same keyword constructor, ``repr`` and
    field equality as the attrs class it was): mypyc compiles a decorated class
    as a Python class, whose fields compiled code reads generically
    (``ip_tunnel_lookup`` reads some twenty a received packet); this one is
    native in the build.
    """

    __slots__ = _PARM_FIELDS

    def __init__(
        self,
        name: str = "",
        link: int = 0,
        i_flags: int = 0,
        o_flags: int = 0,
        i_key: int = 0,
        o_key: int = 0,
        version: int = 4,
        ihl: int = 5,
        tos: int = 0,
        frag_off: int = 0,
        ttl: int = 0,
        protocol: int = 0,
        saddr: int = 0,
        daddr: int = 0,
    ) -> None:
        self.name: str = name
        self.link: int = link
        self.i_flags: int = i_flags
        self.o_flags: int = o_flags
        self.i_key: int = i_key
        self.o_key: int = o_key
        self.version: int = version
        self.ihl: int = ihl
        self.tos: int = tos
        self.frag_off: int = frag_off
        self.ttl: int = ttl
        self.protocol: int = protocol
        self.saddr: int = saddr
        self.daddr: int = daddr

    def _fields(
        self,
    ) -> tuple[str, int, int, int, int, int, int, int, int, int, int, int, int, int]:
        return (
            self.name,
            self.link,
            self.i_flags,
            self.o_flags,
            self.i_key,
            self.o_key,
            self.version,
            self.ihl,
            self.tos,
            self.frag_off,
            self.ttl,
            self.protocol,
            self.saddr,
            self.daddr,
        )

    def copy(self) -> IpTunnelParm:
        return IpTunnelParm(*self._fields())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IpTunnelParm):
            return NotImplemented
        return self._fields() == other._fields()

    def __repr__(self) -> str:
        return _fields_repr("IpTunnelParm", _PARM_FIELDS, self._fields())


class TnlPtkInfo:
    """What a tunnel's receive handler parsed from its header (``struct tnl_ptk_info``).

    A plain slotted class, native in the build (``gre_parse_header`` writes six
    of its fields a packet, ``ip_tunnel_rcv`` reads three), with the keyword
    constructor, ``repr`` and field equality of the attrs class it was.
    """

    __slots__ = _TPI_FIELDS

    def __init__(
        self,
        flags: int = 0,
        proto: int = 0,
        key: int = 0,
        seq: int = 0,
        hdr_len: int = 0,
        csum_err: bool = False,
        no_key: bool = False,
    ) -> None:
        self.flags: int = flags  # GRE flags present in the packet (GRE_CSUM/KEY/SEQ)
        self.proto: int = proto
        self.key: int = key
        self.seq: int = seq
        self.hdr_len: int = hdr_len
        self.csum_err: bool = csum_err  # netstack: a C-flagged packet whose checksum is wrong
        self.no_key: bool = no_key  # IP_TUNNEL_NO_KEY (IPIP, SIT)

    def _fields(self) -> tuple[object, ...]:
        return (
            self.flags,
            self.proto,
            self.key,
            self.seq,
            self.hdr_len,
            self.csum_err,
            self.no_key,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TnlPtkInfo):
            return NotImplemented
        return self._fields() == other._fields()

    def __repr__(self) -> str:
        return _fields_repr("TnlPtkInfo", _TPI_FIELDS, self._fields())


class IpTunnelOps(NetDeviceOps):
    """The ``net_device_ops`` every IPv4 tunnel shares; drivers override ``ndo_start_xmit``."""

    def ndo_init(self, dev: NetDevice) -> None:
        ip_tunnel_init(dev)

    def ndo_uninit(self, dev: NetDevice) -> None:
        ip_tunnel_uninit(dev)

    def ndo_change_mtu(self, dev: NetDevice, new_mtu: int) -> None:
        ip_tunnel_change_mtu(dev, new_mtu)

    @kernel("ip_tunnel_get_iflink")
    def ndo_get_iflink(self, dev: NetDevice) -> int:
        """Kernel: ip_tunnel_get_iflink()."""
        return int(dev.priv.parms.link)

    @kernel("ip_tunnel_siocdevprivate")
    def ndo_do_ioctl(self, dev: NetDevice, cmd: int, arg: Any) -> Any:
        """Kernel: ip_tunnel_siocdevprivate() → the driver's ``ndo_tunnel_ctl``."""
        t: IpTunnel = dev.priv
        return t.itn.tunnel_ctl(dev, arg, cmd)


@attrs.frozen
class IpTunnelStats:
    """A tunnel's own state next to its device counters (``dev.statistics()``)."""

    i_seqno: int  # the next sequence number expected (iseq)
    o_seqno: int  # the last sequence number sent (oseq)
    err_count: int  # ICMP errors about outer packets not yet reported inward
    hlen: int  # the tunnel header's length (GRE: 4–16)
    device: NetDeviceStats


class IpTunnel:
    """Per-device tunnel state (kernel: ``struct ip_tunnel``, the netdev private area)."""

    def __init__(self, dev: NetDevice, itn: IpTunnelNet, parms: IpTunnelParm) -> None:
        self.dev = dev
        self.net = dev.net
        self.itn = itn
        self.parms = parms
        self.tun_hlen = 0  # the driver's own header (GRE: 4–16)
        self.hlen = 0  # tun_hlen + encapsulation header
        self.i_seqno = 0
        self.o_seqno = 0
        self.err_count = 0
        self.err_time = 0
        self.ignore_df = False
        self.gro_cells: GroCells | None = None
        self.hashed = False
        self.dst_cache: DstCache[Rtable] = DstCache()  # the outer route of a connected tunnel

    def statistics(self) -> IpTunnelStats:
        """Sequence numbers, error back-off and the device's ``rtnl_link_stats64``."""
        return IpTunnelStats(
            self.i_seqno, self.o_seqno, self.err_count, self.hlen, self.dev.statistics()
        )

    def __repr__(self) -> str:
        return f"<IpTunnel {self.dev.name}>"


class IpTunnelNet:
    """A driver's tunnels in one Net (kernel: ``struct ip_tunnel_net``).

    Args:
        net: the Net.
        kind: the rtnl kind ("gre", "gretap", "ipip").
        type: the ARPHRD type of its devices (``itn->type``).
        fb_name: the fallback device's name, or None.
        tunnel_ctl: the driver's ioctl handler (``ndo_tunnel_ctl``).
    """

    def __init__(
        self,
        net: Net,
        kind: str,
        type: int,  # noqa: A002 (kernel naming: itn->type)
        tunnel_ctl: Callable[[NetDevice, IpTunnelParm, int], IpTunnelParm | None],
    ) -> None:
        self.net = net
        self.kind = kind
        self.type = type
        self.tunnels: list[list[IpTunnel]] = [[] for _ in range(IP_TNL_HASH_SIZE)]
        self.fb_tunnel_dev: NetDevice | None = None
        self.tunnel_ctl = tunnel_ctl
        # netstack: how many hashed tunnels are bound to a link (parms.link); with
        # none, ip_tunnel_lookup's first candidate is its answer (only a tunnel
        # bound to the receiving link could override it)
        self.nlinked = 0

    def all(self) -> list[IpTunnel]:
        return [t for bucket in self.tunnels for t in bucket]


@kernel("include/net/ip_tunnels.h", "ip_tunnel_ecn_encap")
def ip_tunnel_ecn_encap(tos: int, skb: SkBuff, inner_nh: int) -> int:
    """The outer TOS: *tos* with the ECN field of the inner header at *inner_nh*.

    A payload that is neither IPv4 nor IPv6 (gretap's ARP, say) has no DS field:
    ``ip_tunnel_get_dsfield`` gives 0, so the outer ECN bits are cleared.

    Kernel: include/net/ip_tunnels.h, ip_tunnel_ecn_encap() (ip_tunnel_get_dsfield,
    INET_ECN_encapsulate).
    """
    protocol = skb.protocol
    if protocol == ETH_P_IP:
        ecn = skb.buf[inner_nh + 1] & INET_ECN_MASK
    elif protocol == ETH_P_IPV6:
        ecn = (skb.buf[inner_nh + 1] >> 4) & INET_ECN_MASK
    else:
        ecn = INET_ECN_NOT_ECT
    # INET_ECN_encapsulate(tos, inner) inlined: the inner ECN field, CE copied as ECT(0)
    return (tos & ~INET_ECN_MASK | (INET_ECN_ECT_0 if ecn == INET_ECN_CE else ecn)) & 0xFF


# ---------------------------------------------------------------------------
# Hashing and lookup
# ---------------------------------------------------------------------------


@kernel("ip_tunnel_hash", "hash_32")
def ip_tunnel_hash(key: int, remote: int) -> int:
    """Bucket of (key, remote). Kernel: ip_tunnel_hash() = hash_32(key ^ remote, 7)."""
    return (((key ^ remote) * GOLDEN_RATIO_32) & 0xFFFFFFFF) >> (32 - IP_TNL_HASH_BITS)


@kernel("ip_bucket")
def ip_bucket(itn: IpTunnelNet, parms: IpTunnelParm) -> list[IpTunnel]:
    """The bucket a tunnel lives in. Kernel: ip_bucket()."""
    remote = parms.daddr if parms.daddr and not ipv4_is_multicast(parms.daddr) else 0
    return itn.tunnels[ip_tunnel_hash(parms.i_key, remote)]


@kernel("ip_tunnel_add")
def ip_tunnel_add(itn: IpTunnelNet, t: IpTunnel) -> None:
    """Kernel: ip_tunnel_add()."""
    ip_bucket(itn, t.parms).insert(0, t)  # hlist_add_head_rcu
    t.hashed = True
    if t.parms.link:
        itn.nlinked += 1


@kernel("ip_tunnel_del")
def ip_tunnel_del(itn: IpTunnelNet, t: IpTunnel) -> None:
    """Kernel: ip_tunnel_del()."""
    for bucket in itn.tunnels:
        if t in bucket:
            bucket.remove(t)
            if t.parms.link:
                itn.nlinked -= 1
    t.hashed = False


@kernel("ip_tunnel_key_match")
def ip_tunnel_key_match(p: IpTunnelParm, flags: int, key: int) -> bool:
    """Kernel: ip_tunnel_key_match()."""
    if not flags & GRE_KEY:
        return not p.i_flags & GRE_KEY
    return bool(p.i_flags & GRE_KEY) and p.i_key == key


@kernel("net/ipv4/ip_tunnel.c", "ip_tunnel_lookup")
def ip_tunnel_lookup(
    itn: IpTunnelNet,
    link: int,
    flags: int,
    remote: int,
    local: int,
    key: int,
    *,
    no_key: bool = False,
) -> IpTunnel | None:
    """The tunnel a received packet belongs to, or None.

    Four passes, most specific first: remote+local, remote only, local only
    (or a multicast group), wildcard; within a pass a tunnel bound to the
    receiving link wins at once, otherwise the first match is the candidate.
    Then the fallback device, if it is up. netstack ends the passes early
    once it has a candidate and no tunnel of the table is bound to a link
    (``IpTunnelNet.nlinked``): only such a tunnel could take the place of the
    candidate, so the answer is the kernel's.

    Kernel: net/ipv4/ip_tunnel.c, ip_tunnel_lookup().
    """
    if TIMED:
        spend("ip_tunnel_lookup")
    # ip_tunnel_hash() and ip_tunnel_key_match() inlined (a call costs more than either)
    keyed = flags & GRE_KEY
    cand: IpTunnel | None = None
    # hash_32(key ^ remote): a 32-bit value times GOLDEN_RATIO_32 is below 2**63, so
    # the build computes it as a C int64 (as an int, mypyc multiplies a value above
    # 2**30 as a boxed long); the annotation is all the pure package sees
    hashed: i64 = key ^ remote
    head = itn.tunnels[((hashed * GOLDEN_RATIO_32) & 0xFFFFFFFF) >> _HASH_SHIFT]
    for t in head:
        p = t.parms
        if local != p.saddr or remote != p.daddr or not t.dev.flags & IFF_UP:
            continue
        if (p.i_key != key or not p.i_flags & GRE_KEY) if keyed else p.i_flags & GRE_KEY:
            continue
        if p.link == link:
            return t
        cand = t
    if cand is not None and not itn.nlinked:
        # netstack: no tunnel is bound to a link, so no later pass can return
        # one; the kernel's passes would end with this candidate
        return cand
    for t in head:
        p = t.parms
        if remote != p.daddr or p.saddr != 0 or not t.dev.flags & IFF_UP:
            continue
        if (p.i_key != key or not p.i_flags & GRE_KEY) if keyed else p.i_flags & GRE_KEY:
            continue
        if p.link == link:
            return t
        if cand is None:
            cand = t
    if cand is not None and not itn.nlinked:
        return cand
    head = itn.tunnels[((key * GOLDEN_RATIO_32) & 0xFFFFFFFF) >> _HASH_SHIFT]
    for t in head:
        p = t.parms
        if (local != p.saddr or p.daddr != 0) and (
            local != p.daddr or not ipv4_is_multicast(local)
        ):
            continue
        if not t.dev.flags & IFF_UP:
            continue
        if (p.i_key != key or not p.i_flags & GRE_KEY) if keyed else p.i_flags & GRE_KEY:
            continue
        if p.link == link:
            return t
        if cand is None:
            cand = t
    for t in head:
        p = t.parms
        if (
            (not no_key and p.i_key != key)
            or p.saddr != 0
            or p.daddr != 0
            or not t.dev.flags & IFF_UP
        ):
            continue
        if p.link == link:
            return t
        if cand is None:
            cand = t
    if cand is not None:
        return cand
    fb = itn.fb_tunnel_dev
    if fb is not None and fb.flags & IFF_UP:
        fb_t: IpTunnel = fb.priv
        return fb_t
    return None


@kernel("net/ipv4/ip_tunnel.c", "ip_tunnel_find")
def ip_tunnel_find(itn: IpTunnelNet, parms: IpTunnelParm, type: int) -> IpTunnel | None:  # noqa: A002
    """An existing tunnel with the same addresses, link, type and key.

    Kernel: net/ipv4/ip_tunnel.c, ip_tunnel_find().
    """
    for t in ip_bucket(itn, parms):
        p = t.parms
        if (
            parms.saddr == p.saddr
            and parms.daddr == p.daddr
            and parms.link == p.link
            and type == t.dev.type
            and ip_tunnel_key_match(p, parms.i_flags, parms.i_key)
        ):
            return t
    return None


# ---------------------------------------------------------------------------
# Device life cycle
# ---------------------------------------------------------------------------


@kernel("ip_tunnel_setup")
def ip_tunnel_setup(dev: NetDevice, itn: IpTunnelNet, parms: IpTunnelParm | None = None) -> None:
    """The common part of every tunnel's setup. Kernel: ip_tunnel_setup()."""
    dev.priv = IpTunnel(dev, itn, parms if parms is not None else IpTunnelParm())
    dev.priv_flags &= ~IFF_XMIT_DST_RELEASE  # netif_keep_dst(): PMTU needs the inner route
    dev.features |= NETIF_F_NETNS_LOCAL


@kernel("ip_tunnel_init")
def ip_tunnel_init(dev: NetDevice) -> None:
    """``ndo_init``: name, IPv4 template, GRO cells. Kernel: ip_tunnel_init()."""
    t: IpTunnel = dev.priv
    t.parms.name = dev.name
    t.parms.version = 4
    t.parms.ihl = 5
    t.gro_cells = GroCells(dev)


@kernel("ip_tunnel_uninit")
def ip_tunnel_uninit(dev: NetDevice) -> None:
    """``ndo_uninit``: unhash; forget the fallback device. Kernel: ip_tunnel_uninit()."""
    t: IpTunnel = dev.priv
    itn = t.itn
    ip_tunnel_del(itn, t)
    if itn.fb_tunnel_dev is dev:
        itn.fb_tunnel_dev = None
    t.dst_cache.reset()
    if t.gro_cells is not None:
        t.gro_cells.destroy()
        t.gro_cells = None


@kernel("net/ipv4/ip_tunnel.c", "ip_tunnel_bind_dev")
def ip_tunnel_bind_dev(dev: NetDevice) -> int:
    """Guess the underlay to size headroom and MTU; return the MTU.

    Kernel: net/ipv4/ip_tunnel.c, ip_tunnel_bind_dev().
    """
    t: IpTunnel = dev.priv
    net = dev.net
    p = t.parms
    tdev: NetDevice | None = None
    hlen = 128  # LL_MAX_HEADER
    mtu = 1500  # ETH_DATA_LEN
    t_hlen = t.hlen + IPV4_HLEN
    if p.daddr:
        ipv4 = ipv4_of(net)
        fl4 = Flowi4(p.daddr, p.saddr, oif=p.link, tos=p.tos & 0x1E, proto=p.protocol)
        rt = ipv4.ip_route_output_key(fl4)
        if not isinstance(rt, int):
            tdev = rt.dev
            rt.release()
        if dev.type != ARPHRD_ETHER:
            dev.flags |= IFF_POINTOPOINT
    if tdev is None and p.link:
        tdev = net.dev_get_by_index(p.link)
    if tdev is not None:
        hlen = tdev.hard_header_len + tdev.needed_headroom
        mtu = min(tdev.mtu, IP_MAX_MTU)
    dev.needed_headroom = t_hlen + hlen
    mtu -= t_hlen + (dev.hard_header_len if dev.type == ARPHRD_ETHER else 0)
    return max(mtu, IPV4_MIN_MTU)


def ip_tunnel_max_mtu(dev: NetDevice) -> int:
    """``IP_MAX_MTU - t_hlen`` (less the Ethernet header for gretap)."""
    t: IpTunnel = dev.priv
    max_mtu = IP_MAX_MTU - (t.hlen + IPV4_HLEN)
    if dev.type == ARPHRD_ETHER:
        max_mtu -= dev.hard_header_len
    return max_mtu


@kernel("net/ipv4/ip_tunnel.c", "__ip_tunnel_change_mtu")
def __ip_tunnel_change_mtu(dev: NetDevice, new_mtu: int, *, strict: bool) -> None:
    """Kernel: net/ipv4/ip_tunnel.c, __ip_tunnel_change_mtu()."""
    max_mtu = ip_tunnel_max_mtu(dev)
    if new_mtu < IPV4_MIN_MTU:
        raise ConfigError("RTNETLINK answers: Invalid argument", errno.EINVAL)
    if new_mtu > max_mtu:
        if strict:
            raise ConfigError("RTNETLINK answers: Invalid argument", errno.EINVAL)
        new_mtu = max_mtu
    dev.mtu = new_mtu


@kernel("ip_tunnel_change_mtu")
def ip_tunnel_change_mtu(dev: NetDevice, new_mtu: int) -> None:
    """``ndo_change_mtu`` of every tunnel. Kernel: ip_tunnel_change_mtu()."""
    __ip_tunnel_change_mtu(dev, new_mtu, strict=True)


def ip_tunnel_set_mtu_bounds(dev: NetDevice) -> None:
    """``dev->min_mtu`` / ``max_mtu`` as ``__ip_tunnel_create`` sets them."""
    dev.min_mtu = IPV4_MIN_MTU
    dev.max_mtu = ip_tunnel_max_mtu(dev)


@kernel("net/ipv4/ip_tunnel.c", "ip_tunnel_update")
def ip_tunnel_update(
    itn: IpTunnelNet, t: IpTunnel, dev: NetDevice, p: IpTunnelParm, set_mtu: bool
) -> None:
    """Apply new parameters (``ip tunnel change``, ``ip link set type gre``).

    Kernel: net/ipv4/ip_tunnel.c, ip_tunnel_update().
    """
    ip_tunnel_del(itn, t)
    t.parms.saddr = p.saddr
    t.parms.daddr = p.daddr
    t.parms.i_key = p.i_key
    t.parms.o_key = p.o_key
    if dev.type != ARPHRD_ETHER:
        dev.dev_addr = p.saddr.to_bytes(4, "big")
        dev.broadcast = p.daddr.to_bytes(4, "big")
    ip_tunnel_add(itn, t)
    t.parms.ttl = p.ttl
    t.parms.tos = p.tos
    t.parms.frag_off = p.frag_off
    if t.parms.link != p.link:
        itn.nlinked += bool(p.link) - bool(t.parms.link)  # t is hashed (added above)
        t.parms.link = p.link
        mtu = ip_tunnel_bind_dev(dev)
        if set_mtu:
            dev.mtu = mtu
    t.dst_cache.reset()
    dev.net.call_netdevice_notifiers(NETDEV_CHANGE, dev)  # netdev_state_change()


@kernel("net/ipv4/ip_tunnel.c", "ip_tunnel_ctl")
def ip_tunnel_ctl(
    itn: IpTunnelNet,
    dev: NetDevice,
    p: IpTunnelParm,
    cmd: int,
    create: Callable[[IpTunnelParm], IpTunnel],
) -> IpTunnelParm | None:
    """SIOCGETTUNNEL / SIOCADDTUNNEL / SIOCCHGTUNNEL / SIOCDELTUNNEL.

    *create* makes a new tunnel for SIOCADDTUNNEL (``ip_tunnel_create``, or
    GRE's ``ipgre_tunnel_locate``). Raises ``OSError(errno)`` as the ioctl
    fails; returns the parameters copied back to user space.

    Kernel: net/ipv4/ip_tunnel.c, ip_tunnel_ctl().
    """
    t: IpTunnel | None = dev.priv
    assert t is not None
    fb = itn.fb_tunnel_dev
    if cmd == SIOCGETTUNNEL:
        if dev is fb:
            found = ip_tunnel_find(itn, p, fb.type)
            if found is not None:
                t = found
        return t.parms.copy()
    if cmd in (SIOCADDTUNNEL, SIOCCHGTUNNEL):
        if p.ttl:
            p.frag_off |= IP_DF
        if not p.i_flags & GRE_KEY:
            p.i_key = 0
        if not p.o_flags & GRE_KEY:
            p.o_key = 0
        found = ip_tunnel_find(itn, p, itn.type)
        if cmd == SIOCADDTUNNEL:
            if found is None:
                return create(p).parms.copy()
            raise OSError(errno.EEXIST, "File exists")
        if dev is not fb:
            if found is not None:
                if found.dev is not dev:
                    raise OSError(errno.EEXIST, "File exists")
            else:
                nflags = 0
                if ipv4_is_multicast(p.daddr):
                    nflags = IFF_BROADCAST
                elif p.daddr:
                    nflags = IFF_POINTOPOINT
                if (dev.flags ^ nflags) & (IFF_POINTOPOINT | IFF_BROADCAST):
                    raise OSError(errno.EINVAL, "Invalid argument")
                found = t
        if found is None:
            raise OSError(errno.ENOENT, "No such file or directory")
        ip_tunnel_update(itn, found, found.dev, p, True)
        return found.parms.copy()
    if cmd == SIOCDELTUNNEL:
        if dev is fb:
            found = ip_tunnel_find(itn, p, fb.type)
            if found is None:
                raise OSError(errno.ENOENT, "No such file or directory")
            if found is fb.priv:
                raise OSError(errno.EPERM, "Operation not permitted")
            dev = found.dev
        unregister_netdevice(dev)
        return None
    raise OSError(errno.EINVAL, "Invalid argument")


# ---------------------------------------------------------------------------
# Transmit
# ---------------------------------------------------------------------------


@kernel("net/ipv4/ip_tunnel_core.c", "iptunnel_handle_offloads")
def iptunnel_handle_offloads(skb: SkBuff, gso_type_mask: int) -> bool:
    """Prepare *skb* for encapsulation; False if it must be dropped.

    Remembers where the inner headers are (``skb_reset_inner_headers``) and
    marks the skb ``encapsulation``. A GSO skb gets *gso_type_mask*
    (``SKB_GSO_IPXIP4`` for IPIP and SIT, ``SKB_GSO_GRE`` for GRE) added to its
    ``gso_type``, so that the device below either segments it in hardware
    (``hw_enc_features``) or ``skb_gso_segment`` finds the tunnel's
    ``gso_segment`` under the outer header's protocol. A non-GSO skb whose
    checksum is already complete is sent as plain data (CHECKSUM_NONE, not
    encapsulated); a CHECKSUM_PARTIAL one keeps its inner checksum for the
    device or ``skb_checksum_help`` below.

    Kernel: net/ipv4/ip_tunnel_core.c, iptunnel_handle_offloads().
    """
    if TIMED:
        spend("iptunnel_handle_offloads")
    if not skb.encapsulation:
        skb.inner_network_header = skb.network_header  # skb_reset_inner_headers()
        skb.inner_transport_header = skb.transport_header
        skb.inner_mac_header = skb.mac_header
        skb.inner_protocol = skb.protocol
        skb.encapsulation = True
    if skb.gso_size:
        # (skb_header_unclone() is not needed: gso_type is the skb's own field
        # here, not shared info, and ip_tunnel_xmit's skb_cow_head() unshares
        # the headers it writes)
        skb.gso_type |= gso_type_mask
        return True
    if skb.ip_summed != CHECKSUM_PARTIAL:
        skb.ip_summed = CHECKSUM_NONE
        skb.encapsulation = False
    return True


@kernel(
    "net/ipv4/ip_tunnel.c",
    "ip_tunnel_xmit",
    "tnl_update_pmtu",
    "net/ipv4/ip_tunnel_core.c",
    "iptunnel_xmit",
    "include/net/ip_tunnels.h",
    "ip_tunnel_ecn_encap",
)
def ip_tunnel_xmit(skb: SkBuff, dev: NetDevice, tnl_params: IpTunnelParm, protocol: int) -> None:
    """Route, check the path MTU, then hand the packet to :func:`iptunnel_xmit`.

    ``skb.data`` is at the tunnel's own header (GRE) or at the inner packet
    (IPIP); ``skb.inner_network_header`` marks the inner IP header. Written
    in it: tnl_update_pmtu() (a static function of ip_tunnel.c, this its one
    caller: the inner route learns the tunnel's path MTU, and an inner DF
    packet too big is refused with an ICMP error), iptunnel_xmit() (the outer
    header and ip_local_out; :func:`iptunnel_xmit` for its other callers) and
    the static inlines ip_tunnel_ecn_encap(), LL_RESERVED_SPACE(), skb_cloned().

    Kernel: net/ipv4/ip_tunnel.c, ip_tunnel_xmit() / tnl_update_pmtu();
    net/ipv4/ip_tunnel_core.c, iptunnel_xmit(); include/net/ip_tunnels.h,
    ip_tunnel_ecn_encap().
    """
    if TIMED:
        spend("ip_tunnel_xmit")
    t: IpTunnel = dev.priv
    net = dev.net
    stats = dev.stats
    buf = skb.buf
    inner_nh = skb.inner_network_header
    payload_protocol = skb.protocol
    # "connected": a fixed remote and a fixed TOS route every packet alike, so the
    # outer route comes from the tunnel's dst_cache (3.14+). Timed mode measures
    # the seeds' kernels (2.6.36-3.3), which routed every packet: no cache there.
    dst = tnl_params.daddr
    connected = dst != 0 and not TIMED
    if dst == 0:
        # NBMA tunnel: the inner route's next hop is the remote end
        rt_in: Any = skb.dst
        if rt_in is None:
            stats.tx_fifo_errors += 1
            stats.tx_errors += 1
            kfree_skb(skb, DropReason.NOT_SPECIFIED)
            return
        if payload_protocol == ETH_P_IP and isinstance(rt_in, Rtable):
            inner_daddr = _I.unpack_from(buf, inner_nh + 16)[0]
            dst = rt_in.nexthop(inner_daddr)
        if dst == 0:
            rt_in.link_failure(skb)  # tx_error_icmp: dst_link_failure()
            stats.tx_errors += 1
            kfree_skb(skb, DropReason.NOT_SPECIFIED)
            return
    tos = tnl_params.tos
    if tos & 0x1:
        tos &= ~0x1
        if payload_protocol == ETH_P_IP:
            tos = buf[inner_nh + 1]
            connected = False
        elif payload_protocol == ETH_P_IPV6:
            tos = ((buf[inner_nh] & 0x0F) << 4) | (buf[inner_nh + 1] >> 4)
            connected = False
    cached = t.dst_cache.get_ip4() if connected else None
    if cached is not None:
        rt = cached
        saddr = t.dst_cache.saddr
    else:
        # ip_tunnel_init_flow(): the flow is only needed to route
        fl4 = Flowi4(dst, tnl_params.saddr, oif=t.parms.link, tos=tos & 0x1E, proto=protocol)
        got = ipv4_of(net).ip_route_output_key(fl4)
        if isinstance(got, int):
            stats.tx_carrier_errors += 1
            stats.tx_errors += 1
            kfree_skb(skb, DropReason.IP_OUTNOROUTES)
            return
        rt = got
        saddr, dst = fl4.saddr, fl4.daddr
        if connected:
            t.dst_cache.set_ip4(rt, saddr)
    if rt.dev is dev:
        rt.release()
        stats.collisions += 1
        stats.tx_errors += 1
        kfree_skb(skb, DropReason.XMIT_RECURSION)
        return
    df = tnl_params.frag_off
    if payload_protocol == ETH_P_IP and not t.ignore_df:
        df |= (buf[inner_nh + 6] & 0x40) << 8  # frag_off & htons(IP_DF)
    # tnl_update_pmtu(), written out
    if TIMED:
        spend("tnl_update_pmtu")
    tunnel_hlen = t.hlen
    pkt_size = skb.tail - skb.data - tunnel_hlen
    ether = dev.type == ARPHRD_ETHER
    if ether:
        pkt_size -= dev.hard_header_len
    dst_in = skb.dst
    if df:
        mtu = rt.mtu() - (IPV4_HLEN + tunnel_hlen)
        if ether:
            mtu -= dev.hard_header_len
    else:
        mtu = dst_in.mtu() if dst_in is not None else dev.mtu
    if dst_in is not None:
        dst_in.update_pmtu(skb, mtu)  # skb_dst_update_pmtu_no_confirm()
    if (
        payload_protocol == ETH_P_IP
        and not skb.gso_size
        and buf[inner_nh + 6] & 0x40
        and mtu < pkt_size
    ):
        ipv4_of(net).icmp_send(skb, ICMP_DEST_UNREACH, ICMP_FRAG_NEEDED, mtu)
        rt.release()
        stats.tx_errors += 1
        kfree_skb(skb, DropReason.PKT_TOO_BIG)
        return
    if t.err_count > 0:
        jiffies = net.clock.jiffies
        if jiffies < t.err_time + IPTUNNEL_ERR_TIMEO_S * net.clock.hz:
            t.err_count -= 1
            dst_in = skb.dst
            if dst_in is not None:
                dst_in.link_failure(skb)  # dst_link_failure()
        else:
            t.err_count = 0
    # ip_tunnel_ecn_encap(), inline: the outer ECN field from the inner one
    # (ip_tunnel_get_dsfield; INET_ECN_encapsulate copies CE as ECT(0))
    if payload_protocol == ETH_P_IP:
        ecn = buf[inner_nh + 1] & INET_ECN_MASK
    elif payload_protocol == ETH_P_IPV6:
        ecn = (buf[inner_nh + 1] >> 4) & INET_ECN_MASK
    else:
        ecn = INET_ECN_NOT_ECT
    tos = (tos & _NOT_ECN_MASK) | (INET_ECN_ECT_0 if ecn == INET_ECN_CE else ecn)
    ttl = tnl_params.ttl
    if ttl == 0:
        if payload_protocol == ETH_P_IP:
            ttl = buf[inner_nh + 8]
        elif payload_protocol == ETH_P_IPV6:
            ttl = buf[inner_nh + 7]
        else:
            ttl = rt.ipv4.ip_default_ttl  # ip4_dst_hoplimit()
    rdev = rt.dev
    assert rdev is not None
    # LL_RESERVED_SPACE(rdev), inline: the link header's room, 16-byte aligned
    max_headroom = (
        ((rdev.hard_header_len + rdev.needed_headroom) & _HH_DATA_MASK)
        + HH_DATA_MOD
        + IPV4_HLEN
        + rt.header_len
    )
    headroom = dev.needed_headroom
    if max_headroom > headroom:
        dev.needed_headroom = headroom = max_headroom
    ref = skb._dataref  # skb_cloned(), inline
    if skb.data < headroom or (ref is not None and ref[0] > 1):
        skb.cow_head(headroom)
    # iptunnel_xmit(), written out (a frame less a packet; its other callers, SIT and
    # UDP tunnels, call it: keep the two in step)
    if TIMED:
        spend("iptunnel_xmit")
    pkt_len = skb.tail - skb.inner_network_header
    skb_scrub_packet(skb, False)
    skb.dst = rt  # skb_dst_set(): the route's reference passes to the skb
    nh = skb.push(IPV4_HLEN)
    skb.network_header = nh
    buf = skb.buf
    frag_off = 0 if (rt.rt_mtu_locked or rt.metric_mtu_locked) else df  # ip_mtu_locked()
    ipv4 = rt.ipv4
    ident = ipv4.idents.reserve(dst, saddr, protocol, skb.gso_segs or 1)  # __ip_select_ident()
    _IPV4_WORDS_PACK(
        buf,
        nh,
        0x45000000 | tos << 16,
        ident << 16 | frag_off,
        ttl << 24 | protocol << 16,
        saddr,
        dst,
    )
    skb.protocol = ETH_P_IP
    err = ip_local_out(ipv4, skb)
    if err != 0 and err != NET_XMIT_CN:  # net_xmit_eval(): congestion counts as sent
        stats.tx_dropped += 1
        return
    stats.tx_packets += 1
    stats.tx_bytes += pkt_len


@kernel("net/ipv4/ip_tunnel_core.c", "iptunnel_xmit")
def iptunnel_xmit(
    ipv4: Any,
    rt: Rtable,
    skb: SkBuff,
    src: int,
    dst: int,
    proto: int,
    tos: int,
    ttl: int,
    df: int,
    dev: NetDevice,
) -> None:
    """Push the outer IPv4 header and send it; count the inner bytes as sent.

    Kernel: net/ipv4/ip_tunnel_core.c, iptunnel_xmit().
    """
    if TIMED:
        spend("iptunnel_xmit")
    pkt_len = skb.tail - skb.inner_network_header
    skb_scrub_packet(skb, False)
    skb.dst = rt  # skb_dst_set(): the route's reference passes to the skb
    nh = skb.push(IPV4_HLEN)
    skb.network_header = nh
    buf = skb.buf
    frag_off = 0 if (rt.rt_mtu_locked or rt.metric_mtu_locked) else df  # ip_mtu_locked()
    ident = ipv4.idents.reserve(dst, src, proto, skb.gso_segs or 1)  # __ip_select_ident()
    _IPV4_WORDS_PACK(
        buf, nh, 0x45000000 | tos << 16, ident << 16 | frag_off, ttl << 24 | proto << 16, src, dst
    )
    skb.protocol = ETH_P_IP
    err = ip_local_out(ipv4, skb)
    stats = dev.stats
    if err != 0 and err != NET_XMIT_CN:  # net_xmit_eval(): congestion counts as sent
        stats.tx_dropped += 1
        return
    stats.tx_packets += 1
    stats.tx_bytes += pkt_len


# ---------------------------------------------------------------------------
# Receive
# ---------------------------------------------------------------------------


@kernel("net/ipv4/ip_tunnel_core.c", "__iptunnel_pull_header")
def iptunnel_pull_header(skb: SkBuff, hdr_len: int, inner_proto: int, raw_proto: bool) -> bool:
    """Pull the tunnel header; set ``skb.protocol`` to the inner protocol.

    For Ethernet payloads (``ETH_P_TEB``) the protocol is the inner frame's
    EtherType. Returns False if the packet is too short.

    Kernel: net/ipv4/ip_tunnel_core.c, __iptunnel_pull_header().
    """
    if TIMED:
        spend("__iptunnel_pull_header")
    if skb.tail - skb.data < hdr_len:
        return False
    if skb.ip_summed == CHECKSUM_COMPLETE:  # skb_pull_rcsum()
        skb.csum = csum_sub(skb.csum, csum_partial(skb.buf, skb.data, skb.data + hdr_len))
    skb.data += hdr_len
    if not raw_proto and inner_proto == 0x6558:
        if skb.tail - skb.data < ETH_HLEN:
            return False
        d = skb.data
        proto = (skb.buf[d + 12] << 8) | skb.buf[d + 13]
        skb.protocol = proto if proto >= 0x0600 else 0x0004  # ETH_P_802_2
    else:
        skb.protocol = inner_proto
    skb.queue_mapping = 0
    skb_scrub_packet(skb, False)
    return True


# pskb_inet_may_pull(), a static inline (also written in ip_tunnel_rcv and
# __gre_xmit): the bytes of the inner network header that must be present, by
# skb->protocol; any other protocol needs none past the network offset
# (pskb_network_may_pull(skb, 0))
INET_HLEN: Final[dict[int, int]] = {ETH_P_IP: IPV4_HLEN, ETH_P_IPV6: IPV6_HLEN}


@kernel("pskb_inet_may_pull")
def pskb_inet_may_pull(skb: SkBuff) -> bool:
    """The inner network header is all there. Kernel: pskb_inet_may_pull()."""
    return skb.network_header + INET_HLEN.get(skb.protocol, 0) <= skb.tail


@kernel(
    "net/ipv4/ip_tunnel.c",
    "ip_tunnel_rcv",
    "pskb_inet_may_pull",
    "IP_ECN_decapsulate",
    "net/core/gro_cells.c",
    "gro_cells_receive",
)
def ip_tunnel_rcv(t: IpTunnel, skb: SkBuff, tpi: TnlPtkInfo, outer_nh: int) -> None:
    """Apply the tunnel's receive policies and pass the inner packet up.

    ``skb.data`` is at the inner packet; *outer_nh* is the outer IPv4 header.
    pskb_inet_may_pull() and gro_cells_receive() (VXLAN calls
    :func:`~netstack.core.gro_cells.gro_cells_receive`) are written in, and
    IP_ECN_decapsulate() is called only for an ECN-capable outer header (with
    a Not-ECT one it is a no-op).

    Kernel: net/ipv4/ip_tunnel.c, ip_tunnel_rcv(); pskb_inet_may_pull();
    IP_ECN_decapsulate(); net/core/gro_cells.c, gro_cells_receive().
    """
    if TIMED:
        spend("ip_tunnel_rcv")
    dev = t.dev
    stats = dev.stats
    buf = skb.buf
    if buf[outer_nh + 16] & 0xF0 == 0xE0:  # ipv4_is_multicast(iph->daddr)
        stats.multicast += 1
        skb.pkt_type = PACKET_BROADCAST
    # Checksum policy (2.6.3x–3.9 also counted a wrong checksum here; see docs/tunnels.md)
    if tpi.csum_err or (t.parms.i_flags ^ tpi.flags) & GRE_CSUM:
        stats.rx_crc_errors += 1
        stats.rx_errors += 1
        kfree_skb(skb, DropReason.IP_TUNNEL_CSUM)
        return
    if t.parms.i_flags & GRE_SEQ:
        seq = tpi.seq
        if not tpi.flags & GRE_SEQ or (
            t.i_seqno and ((seq - t.i_seqno) & 0xFFFFFFFF) >= 0x80000000
        ):
            stats.rx_fifo_errors += 1
            stats.rx_errors += 1
            kfree_skb(skb, DropReason.IP_TUNNEL_SEQ)
            return
        t.i_seqno = (seq + 1) & 0xFFFFFFFF
    outer_tos = buf[outer_nh + 1]
    ether = dev.type == ARPHRD_ETHER
    nh = skb.data + (ETH_HLEN if ether else 0)
    skb.network_header = nh
    # pskb_inet_may_pull(), inline: the inner network header is all there (its
    # length by protocol tested in line, where INET_HLEN.get is a call; keep in step
    # with INET_HLEN and pskb_inet_may_pull above, and __gre_xmit's copy)
    protocol = skb.protocol
    hlen = IPV4_HLEN if protocol == ETH_P_IP else IPV6_HLEN if protocol == ETH_P_IPV6 else 0
    if nh + hlen > skb.tail:
        stats.rx_length_errors += 1
        stats.rx_errors += 1
        kfree_skb(skb, DropReason.PKT_TOO_SMALL)
        return
    # IP_ECN_decapsulate(): with a Not-ECT outer header it changes nothing and
    # accepts every inner header (INET_ECN_decapsulate's first cases)
    err = IP_ECN_decapsulate(outer_tos, skb) if outer_tos & INET_ECN_MASK else 0
    if err:
        if err > 1:
            stats.rx_frame_errors += 1
            stats.rx_errors += 1
            kfree_skb(skb, DropReason.IP_TUNNEL_ECN)
            return
        if dev.net.net_ratelimit():  # log_ecn_error: net_info_ratelimited()
            dev.log.info(
                "tunnel_non_ect",
                msg=f"non-ECT from {'.'.join(str(b) for b in buf[outer_nh + 12 : outer_nh + 16])}"
                f" with TOS={outer_tos:#x}",
            )
    stats.rx_packets += 1
    stats.rx_bytes += skb.tail - skb.data
    skb_scrub_packet(skb, False)
    if ether:
        d = skb.data
        skb.protocol = eth_type_trans(skb, dev)
        if skb.ip_summed == CHECKSUM_COMPLETE:  # skb_postpull_rcsum()
            skb.csum = csum_sub(skb.csum, csum_partial(buf, d, d + ETH_HLEN))
    else:
        skb.dev = dev
        skb.mac_header = skb.data
    cells = t.gro_cells
    if cells is None:
        kfree_skb(skb, DropReason.DEV_READY)
        return
    # gro_cells_receive(), written out (a frame less a packet; VXLAN calls it: keep
    # the two in step): this CPU's cell, or netif_rx for a clone or without GRO
    if TIMED:
        spend("gro_cells_receive")
    queues = cells.queues
    ref = skb._dataref  # skb_cloned(), inline
    if not queues or (ref is not None and ref[0] > 1) or not dev.features & NETIF_F_GRO:
        netif_rx(skb)
        return
    net = dev.net
    cpu = net.cpus.current.id
    queue = queues[cpu]
    n = len(queue)
    if n > net.netdev_max_backlog:
        stats.rx_dropped += 1
        kfree_skb(skb, DropReason.CPU_BACKLOG)
        return
    queue.append(skb)
    if not n:
        cells.napis[cpu].schedule()


@kernel("ipgre_err", "ipip_err")
def ip_tunnel_err_note(t: IpTunnel) -> None:
    """An ICMP error about one of our outer packets: back off. Kernel: ipgre_err()/ipip_err()."""
    net = t.net
    if t.err_time and net.clock.jiffies < t.err_time + IPTUNNEL_ERR_TIMEO_S * net.clock.hz:
        t.err_count += 1
    else:
        t.err_count = 1
    t.err_time = net.clock.jiffies


def tunnel_xmit_drop(dev: NetDevice, skb: SkBuff, *, errors: bool = False) -> int:
    """``goto free_skb`` / ``tx_error`` of a driver's xmit: count and free."""
    if errors:
        dev.stats.tx_errors += 1
    else:
        dev.stats.tx_dropped += 1
    kfree_skb(skb, DropReason.NOT_SPECIFIED)
    return NETDEV_TX_OK


# ---------------------------------------------------------------------------
# Generic creation (IPIP, SIT; GRE keeps its own 3.x paths in ip_gre.py)
# ---------------------------------------------------------------------------

TunnelSetup = Callable[[NetDevice, "IpTunnelNet", "IpTunnelParm | None"], None]


@kernel("net/ipv4/ip_tunnel.c", "ip_tunnel_create", "__ip_tunnel_create")
def ip_tunnel_create(
    itn: IpTunnelNet, parms: IpTunnelParm, ops: NetDeviceOps, setup: TunnelSetup
) -> IpTunnel:
    """SIOCADDTUNNEL's create step: alloc, register, bind, hash.

    Raises ``OSError`` as the ioctl fails.

    Kernel: net/ipv4/ip_tunnel.c, ip_tunnel_create() / __ip_tunnel_create().
    """
    from netstack.core.dev import dev_valid_name, register_netdevice

    net = itn.net
    if parms.name:
        if not dev_valid_name(parms.name):
            raise OSError(errno.EINVAL, "Invalid argument")
        name = parms.name
    else:
        name = f"{itn.kind}%d"
    dev = NetDevice(net, name, ops, kind=itn.kind)
    setup(dev, itn, parms.copy())
    try:
        register_netdevice(dev)
    except ConfigError as e:
        code = e.errno or errno.EINVAL
        raise OSError(code, errno.errorcode.get(code, "")) from None
    t: IpTunnel = dev.priv
    dev.mtu = ip_tunnel_bind_dev(dev)
    ip_tunnel_set_mtu_bounds(dev)
    ip_tunnel_add(itn, t)
    return t


@kernel("net/ipv4/ip_tunnel.c", "ip_tunnel_newlink")
def ip_tunnel_newlink(dev: NetDevice, p: IpTunnelParm, tb: dict[str, Any]) -> None:
    """rtnetlink's newlink for the generic tunnels: refuse duplicates, register, size.

    Kernel: net/ipv4/ip_tunnel.c, ip_tunnel_newlink().
    """
    from netstack.core.dev import register_netdevice

    t: IpTunnel = dev.priv
    itn = t.itn
    if ip_tunnel_find(itn, p, dev.type) is not None:
        raise ConfigError("RTNETLINK answers: File exists", errno.EEXIST)
    t.parms = p
    register_netdevice(dev)
    mtu = ip_tunnel_bind_dev(dev)
    ip_tunnel_set_mtu_bounds(dev)
    if tb.get("mtu") is not None:
        mtu = max(IPV4_MIN_MTU, min(int(tb["mtu"]), dev.max_mtu))  # clamp()
    dev.mtu = mtu
    ip_tunnel_add(itn, t)


@kernel("net/ipv4/ip_tunnel.c", "ip_tunnel_changelink")
def ip_tunnel_changelink(dev: NetDevice, p: IpTunnelParm, tb: dict[str, Any]) -> None:
    """``ip link set DEV type KIND …``. Kernel: net/ipv4/ip_tunnel.c, ip_tunnel_changelink()."""
    t: IpTunnel = dev.priv
    itn = t.itn
    if dev is itn.fb_tunnel_dev:
        raise ConfigError("RTNETLINK answers: Invalid argument", errno.EINVAL)
    found = ip_tunnel_find(itn, p, dev.type)
    if found is not None:
        if found is not t:
            raise ConfigError("RTNETLINK answers: File exists", errno.EEXIST)
    elif dev.type != ARPHRD_ETHER:
        nflags = 0
        if ipv4_is_multicast(p.daddr):
            nflags = IFF_BROADCAST
        elif p.daddr:
            nflags = IFF_POINTOPOINT
        if (dev.flags ^ nflags) & (IFF_POINTOPOINT | IFF_BROADCAST):
            raise ConfigError("RTNETLINK answers: Invalid argument", errno.EINVAL)
    ip_tunnel_update(itn, t, dev, p, tb.get("mtu") is None)


@kernel("ip_tunnel_init_net")
def ip_tunnel_init_net(
    itn: IpTunnelNet, name: str, ops: NetDeviceOps, setup: TunnelSetup
) -> NetDevice:
    """Create the fallback device (``tunl0``, ``sit0``). Kernel: ip_tunnel_init_net()."""
    from netstack.core.dev import register_netdevice

    dev = NetDevice(itn.net, name, ops, kind=itn.kind)
    setup(dev, itn, IpTunnelParm(name=name))
    register_netdevice(dev)
    t: IpTunnel = dev.priv
    dev.mtu = ip_tunnel_bind_dev(dev)
    ip_tunnel_set_mtu_bounds(dev)
    itn.fb_tunnel_dev = dev
    ip_tunnel_add(itn, t)
    return dev


@kernel("ip_tunnel_dellink")
def ip_tunnel_dellink(dev: NetDevice) -> None:
    """``ip link del``: every tunnel but the fallback device. Kernel: ip_tunnel_dellink()."""
    t: IpTunnel = dev.priv
    if t.itn.fb_tunnel_dev is not dev:
        unregister_netdevice(dev)
