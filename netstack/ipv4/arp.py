"""ARP (RFC 826): the IPv4 neighbour table's resolution protocol.

Theory of operation: ``arp_constructor`` chooses how a new neighbour entry
works — devices without a link-layer header (tunnels) get NOARP entries and
direct output; ``IFF_NOARP`` and loopback devices get NOARP entries with the
device's own address; broadcast destinations get NOARP entries with the
broadcast address; everything else starts in NONE and resolves through
``neigh_resolve_output``. ``arp_solicit`` sends the requests the NUD machine
asks for: broadcast while INCOMPLETE, unicast to the known address while
PROBE. ``arp_rcv`` validates, answers requests for any local address (the
weak host model, ``arp_ignore=0``), records the sender of a request as STALE,
and updates existing entries from replies (REACHABLE for a unicast reply) —
but, with ``arp_accept=0``, never creates an entry from an unsolicited reply
or a gratuitous ARP. Failed resolution reports each queued packet with ICMP
host unreachable (``arp_error_report``).

Kernel: net/ipv4/arp.c.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from netstack.core.dev import NETDEV_CHANGE, NETDEV_CHANGEADDR, dev_queue_xmit
from netstack.core.ethernet import LL_RESERVED_SPACE
from netstack.core.netdevice import IFF_LOOPBACK, IFF_NOARP, IFF_POINTOPOINT, IFF_UP
from netstack.core.skbuff import (
    PACKET_HOST,
    PACKET_LOOPBACK,
    PACKET_OTHERHOST,
    DropReason,
    SkBuff,
    consume_skb,
    kfree_skb,
)
from netstack.ipv4.devinet import inet_select_addr
from netstack.ipv4.route import ip_route_input_noref
from netstack.neigh.neighbour import (
    LOCALLY_ENQUEUED,
    Neighbour,
    NeighCb,
    NeighOps,
    NeighTable,
    neigh_connected_output,
    neigh_direct_output,
    neigh_event_ns,
    neigh_resolve_output,
    neigh_update,
    pneigh_enqueue,
    pneigh_lookup,
)
from netstack.neigh.nud import (
    NEIGH_UPDATE_F_OVERRIDE,
    NUD_NOARP,
    NUD_REACHABLE,
    NUD_STALE,
    NUD_VALID,
    NeighParms,
)
from netstack.sites import kernel
from netstack.wire.arp import (
    ARP_ETH_IP,
    ARP_ETH_IP_LEN,
    ARPHRD_ETHER,
    ARPOP_REPLY,
    ARPOP_REQUEST,
)
from netstack.wire.ethernet import ETH_P_ARP, ETH_P_IP, ip_eth_mc_map
from netstack.wire.ipv4 import ntoa
from netstack.wire.rtnetlink import (
    RT_SCOPE_LINK,
    RTN_BROADCAST,
    RTN_LOCAL,
    RTN_MULTICAST,
    RTN_UNICAST,
)

if TYPE_CHECKING:
    from netstack.core.net import PacketType
    from netstack.core.netdevice import NetDevice
    from netstack.ipv4.devinet import InDevice
    from netstack.ipv4.netns import Ipv4
    from netstack.ipv4.route import Rtable

__all__ = ["arp_create", "arp_netdev_event", "arp_rcv", "arp_send", "make_arp_tbl"]

ARPHRD_IEEE802: Final = 6
_I: Final = struct.Struct("!I")


def make_arp_tbl(ipv4: Ipv4) -> NeighTable:
    """Create the Net's ``arp_cache``. Kernel: arp_tbl."""
    hz = ipv4.net.clock.hz

    def solicit(n: Neighbour, skb: SkBuff | None) -> None:
        arp_solicit(ipv4, n, skb)

    def error_report(n: Neighbour, skb: SkBuff) -> None:
        arp_error_report(ipv4, n, skb)

    ops_generic = NeighOps(2, solicit, error_report, neigh_resolve_output, neigh_connected_output)
    ops_hh = NeighOps(2, solicit, error_report, neigh_resolve_output, neigh_resolve_output)
    ops_direct = NeighOps(2, None, None, neigh_direct_output, neigh_direct_output)

    def constructor(n: Neighbour) -> bool:
        return arp_constructor(ipv4, n, ops_generic, ops_hh, ops_direct)

    parms = NeighParms(
        hz=hz,
        base_reachable_time=30 * hz,
        reachable_time=30 * hz,
        retrans_time=hz,
        delay_probe_time=5 * hz,
        gc_staletime=60 * hz,
        locktime=hz,
        anycast_delay=hz,
        proxy_delay=8 * hz // 10,
        interval_probe_time=5 * hz,
    )
    tbl = NeighTable(ipv4.net, "arp_cache", 2, ETH_P_IP, 32, constructor, ops_generic, parms, ntoa)

    def proxy_redo(skb: SkBuff) -> None:
        parp_redo(ipv4, skb)

    tbl.proxy_redo = proxy_redo  # arp_tbl.proxy_redo = parp_redo
    return tbl


@kernel("arp_constructor")
def arp_constructor(
    ipv4: Ipv4, n: Neighbour, ops_generic: NeighOps, ops_hh: NeighOps, ops_direct: NeighOps
) -> bool:
    """Choose state and output for a new entry. Kernel: arp_constructor()."""
    dev = n.dev
    addr = n.primary_key
    if dev.ip_ptr is None:
        return False
    n.type = ipv4.fib.inet_addr_type(addr, dev)
    if dev.header_ops is None:
        n.nud_state = NUD_NOARP
        n.ops = ops_direct
        n.output = neigh_direct_output
        return True
    if n.type == RTN_MULTICAST:
        n.nud_state = NUD_NOARP
        n.ha = ip_eth_mc_map(addr)
    elif dev.flags & (IFF_NOARP | IFF_LOOPBACK):
        n.nud_state = NUD_NOARP
        n.ha = dev.dev_addr
    elif n.type == RTN_BROADCAST or dev.flags & IFF_POINTOPOINT:
        n.nud_state = NUD_NOARP
        n.ha = dev.broadcast
    n.ops = ops_hh if dev.header_ops.has_cache else ops_generic
    n.output = n.ops.connected_output if n.nud_state & NUD_VALID else n.ops.output
    return True


@kernel("arp_create")
def arp_create(
    op: int,
    ptype: int,
    dest_ip: int,
    dev: NetDevice,
    src_ip: int,
    dest_hw: bytes | None,
    src_hw: bytes | None,
    target_hw: bytes | None,
) -> SkBuff:
    """Build an ARP packet with its Ethernet header. Kernel: arp_create()."""
    hlen = LL_RESERVED_SPACE(dev)
    skb = SkBuff(bytearray(hlen + ARP_ETH_IP_LEN), hlen, hlen + ARP_ETH_IP_LEN)
    skb.network_header = hlen
    skb.dev = dev
    skb.protocol = ETH_P_ARP
    if src_hw is None:
        src_hw = dev.dev_addr
    if dest_hw is None:
        dest_hw = dev.broadcast
    ARP_ETH_IP.pack_into(
        skb.buf,
        hlen,
        ARPHRD_ETHER,
        ETH_P_IP,
        6,
        4,
        op,
        src_hw,
        src_ip,
        target_hw if target_hw is not None else bytes(6),
        dest_ip,
    )
    hops = dev.header_ops
    if hops is not None:
        hops.create(skb, dev, ptype, dest_hw, src_hw, ARP_ETH_IP_LEN)
    return skb


@kernel("arp_send_dst", "arp_xmit")
def arp_send(
    ipv4: Ipv4,
    op: int,
    ptype: int,
    dest_ip: int,
    dev: NetDevice,
    src_ip: int,
    dest_hw: bytes | None,
    src_hw: bytes | None,
    target_hw: bytes | None,
) -> None:
    """Send an ARP packet. Kernel: arp_send_dst() / arp_xmit()."""
    if dev.flags & IFF_NOARP:
        return
    skb = arp_create(op, ptype, dest_ip, dev, src_ip, dest_hw, src_hw, target_hw)
    ipv4.arp_out += 1
    dev_queue_xmit(skb)


@kernel("arp_solicit")
def arp_solicit(ipv4: Ipv4, n: Neighbour, skb: SkBuff | None) -> None:
    """Send one request for *n* (broadcast, or unicast while PROBE). Kernel: arp_solicit()."""
    dev = n.dev
    target = n.primary_key
    saddr = 0
    in_dev = dev.ip_ptr
    if in_dev is None:
        return
    announce = in_dev.maxconf("arp_announce")
    if announce == 0 and skb is not None and skb.network_header >= 0:
        (cand,) = _I.unpack_from(skb.buf, skb.network_header + 12)
        if ipv4.fib.inet_addr_type(cand, dev) == RTN_LOCAL:
            saddr = cand
    elif announce == 1 and skb is not None and skb.network_header >= 0:
        (cand,) = _I.unpack_from(skb.buf, skb.network_header + 12)
        if ipv4.fib.inet_addr_type(cand, dev) == RTN_LOCAL and any(
            ifa.match(target) and ifa.match(cand) for ifa in in_dev.primaries()
        ):
            saddr = cand
    if not saddr:
        saddr = inet_select_addr(ipv4, dev, target, RT_SCOPE_LINK)
    parms = n.tbl.parms_for(dev)
    probes = n.probes - parms.ucast_probes
    dst_hw: bytes | None = None  # broadcast
    if probes < 0:
        dst_hw = n.ha  # unicast probe of a known address
    elif probes - parms.app_probes < 0:
        return  # user-space (arpd) probe: none here
    arp_send(ipv4, ARPOP_REQUEST, ETH_P_ARP, target, dev, saddr, dst_hw, dev.dev_addr, None)


@kernel("arp_error_report")
def arp_error_report(ipv4: Ipv4, n: Neighbour, skb: SkBuff) -> None:
    """Resolution failed for a queued packet: ICMP host unreachable. Kernel: arp_error_report()."""
    ipv4.ipv4_link_failure(skb)
    kfree_skb(skb, DropReason.NEIGH_FAILED)


@kernel("parp_redo")
def parp_redo(ipv4: Ipv4, skb: SkBuff) -> None:
    """A delayed proxy request's turn: ``arp_process`` again, now LOCALLY_ENQUEUED.

    It enters through :func:`arp_rcv`'s checks (which the packet passed
    already: the same bytes) as ``arp_process`` is written out there.
    Kernel: parp_redo().
    """
    dev = skb.dev
    assert dev is not None
    arp_rcv(ipv4, skb, dev, None, dev)  # (the kernel calls arp_process without a pt)


@kernel("arp_fwd_proxy")
def arp_fwd_proxy(in_dev: InDevice, dev: NetDevice, rt: Rtable) -> bool:
    """Proxy ARP for a route out of another device? Kernel: arp_fwd_proxy()."""
    if rt.dev is dev:
        return False
    if not in_dev.orconf("proxy_arp"):  # IN_DEV_PROXY_ARP: IN_DEV_ORCONF
        return False
    imi = in_dev.cnf.medium_id  # IN_DEV_MEDIUM_ID: the device's own
    if imi == 0:
        return True
    if imi == -1:
        return False
    out = rt.dev  # a route has a device
    out_dev = out.ip_ptr if out is not None else None
    omi = out_dev.cnf.medium_id if out_dev is not None else -1
    return bool(omi != imi and omi != -1)


@kernel("arp_fwd_pvlan")
def arp_fwd_pvlan(in_dev: InDevice, dev: NetDevice, rt: Rtable, sip: int, tip: int) -> bool:
    """RFC 3069 private VLAN: proxy back out of the same device. Kernel: arp_fwd_pvlan()."""
    if rt.dev is not dev:
        return False
    if sip == tip:  # no replies to self probes
        return False
    return bool(in_dev.orconf("proxy_arp_pvlan"))  # IN_DEV_PROXY_ARP_PVLAN: ORCONF


# ARP_ETH_IP without the hardware addresses (sha at 8, tha at 18): what arp_process
# reads, seven ints in one read (bound once and typed so: compiled code compares them
# as ints, not through the generic comparison)
_ARP_ETH_IP_NO_HW: Final[Callable[[bytearray, int], tuple[int, int, int, int, int, int, int]]] = (
    struct.Struct("!HHBBH6xI6xI").unpack_from
)


@kernel("net/ipv4/arp.c", "arp_rcv", "arp_process", "arp_accept")
def arp_rcv(
    ipv4: Ipv4, skb: SkBuff, dev: NetDevice, pt: PacketType | None, orig_dev: NetDevice
) -> None:
    """Validate a received ARP packet, then answer, learn, update.

    ``arp_process`` (static, the ``NF_HOOK`` okfn: called directly when no
    netfilter hook is registered) is written out after the checks: a frame less
    for every request a host hears. So are ``arp_accept``'s modes 0 and 1.

    Kernel: net/ipv4/arp.c, arp_rcv() / arp_process() / arp_accept().
    """
    # comparisons, not "in (A, B)": that builds a tuple of the two globals per packet
    pkt_type = skb.pkt_type
    if dev.flags & IFF_NOARP or pkt_type == PACKET_OTHERHOST or pkt_type == PACKET_LOOPBACK:
        consume_skb(skb)
        return
    alen = dev.addr_len
    buf = skb.buf
    d = skb.data
    if alen == 6 and skb.tail - d >= 28:
        # an Ethernet-sized header (arp_hdr_len() 28) is there: its fields in one
        # unpack, the length fields checked from it (the hardware addresses are
        # copied out only where used: most requests a host hears are for another
        # host, from a sender it does not know)
        hrd, pro, hln, pln, op, sip, tip = _ARP_ETH_IP_NO_HW(buf, d)
        if hln != 6 or pln != 4:
            ipv4.arp_invalid += 1
            kfree_skb(skb, DropReason.ARP_INVALID)
            return
        skb.network_header = d
        # arp_process()
        in_dev = dev.ip_ptr
        if in_dev is None:
            kfree_skb(skb, DropReason.ARP_INVALID)
            return
    else:
        if skb.tail - d < 8 + 2 * (alen + 4):
            ipv4.arp_invalid += 1
            kfree_skb(skb, DropReason.ARP_INVALID)
            return
        if buf[d + 4] != alen or buf[d + 5] != 4:
            ipv4.arp_invalid += 1
            kfree_skb(skb, DropReason.ARP_INVALID)
            return
        skb.network_header = d
        # arp_process(): only Ethernet-sized hardware addresses here (alen != 6)
        kfree_skb(skb, DropReason.ARP_INVALID)
        return
    if dev.type == ARPHRD_ETHER:
        if (hrd != ARPHRD_ETHER and hrd != ARPHRD_IEEE802) or pro != ETH_P_IP:  # (arp_rcv)
            ipv4.arp_invalid += 1
            kfree_skb(skb, DropReason.ARP_INVALID)
            return
    elif pro != ETH_P_IP or hrd != dev.type:
        ipv4.arp_invalid += 1
        kfree_skb(skb, DropReason.ARP_INVALID)
        return
    if op != ARPOP_REQUEST and op != ARPOP_REPLY:
        ipv4.arp_invalid += 1
        kfree_skb(skb, DropReason.ARP_INVALID)
        return
    # ipv4_is_multicast() and ipv4_is_loopback(): static inlines, on the first octet
    # (a small int, where masks above 2**30 take CPython's slow path)
    t8 = tip >> 24
    if 224 <= t8 < 240 or (t8 == 127 and not in_dev.orconf("route_localnet")):
        kfree_skb(skb, DropReason.ARP_INVALID)
        return
    if sip == tip and in_dev.orconf("drop_gratuitous_arp"):
        kfree_skb(skb, DropReason.ARP_INVALID)
        return
    tbl = ipv4.arp_tbl
    # RFC 2131 / RFC 5227 duplicate address detection: sender 0.0.0.0
    if sip == 0:
        if (
            op == ARPOP_REQUEST
            and ipv4.fib.inet_addr_type(tip, dev) == RTN_LOCAL
            and not arp_ignore(ipv4, in_dev, sip, tip)
        ):
            sha = bytes(buf[d + 8 : d + 14])
            arp_send(ipv4, ARPOP_REPLY, ETH_P_ARP, sip, dev, tip, sha, dev.dev_addr, sha)
        consume_skb(skb)
        return
    # Route the request as an IP packet from sip to tip: martian senders fail here.
    rt: Rtable | None  # ip_route_input_noref's: an IPv4 input route
    if (
        op == ARPOP_REQUEST
        and ip_route_input_noref(ipv4, skb, tip, sip, 0, dev) == 0
        and (rt := skb.dst) is not None  # type: ignore[assignment]
    ):
        addr_type = rt.rt_type
        if addr_type == RTN_LOCAL:
            if skb.pkt_type == PACKET_HOST:
                tbl.rcv_probes_ucast += 1
            else:
                tbl.rcv_probes_mcast += 1
            if not arp_ignore(ipv4, in_dev, sip, tip):
                sha = bytes(buf[d + 8 : d + 14])
                n = neigh_event_ns(tbl, sha, sip, dev)
                if n is not None:
                    arp_send(ipv4, ARPOP_REPLY, ETH_P_ARP, sip, dev, tip, sha, dev.dev_addr, sha)
            consume_skb(skb)
            return
        if (
            in_dev.cnf.forwarding  # IN_DEV_FORWARD
            and addr_type == RTN_UNICAST
            and (
                arp_fwd_proxy(in_dev, dev, rt)
                or arp_fwd_pvlan(in_dev, dev, rt, sip, tip)
                or (rt.dev is not dev and pneigh_lookup(tbl, tip, dev) is not None)
            )
        ):
            # proxy ARP: answer with our own address for a host we route to
            sha = bytes(buf[d + 8 : d + 14])
            neigh_event_ns(tbl, sha, sip, dev)
            cb = skb.cb
            if (
                (type(cb) is NeighCb and cb.flags & LOCALLY_ENQUEUED)
                or skb.pkt_type == PACKET_HOST
                or tbl.parms_for(dev).proxy_delay == 0  # NEIGH_VAR(in_dev->arp_parms, ...)
            ):
                arp_send(ipv4, ARPOP_REPLY, ETH_P_ARP, sip, dev, tip, sha, dev.dev_addr, sha)
            else:
                pneigh_enqueue(tbl, dev, skb)
                return
            consume_skb(skb)
            return
    # Everything else updates an existing entry (__neigh_lookup(..., creat=0)); new
    # ones only if arp_accept allows. A request for another host, as every host
    # on a segment hears, ends here: a lookup, and an update if the sender is known.
    n = tbl.lookup(sip, dev)
    addr_type = -1
    is_garp = False
    # arp_accept() (the kernel asks twice; it reads only conf), written out for
    # its modes 0 and 1 (IN_DEV_ARP_ACCEPT, a macro: IN_DEV_MAXCONF); a frame less
    # for every request a host hears (keep the two in step)
    accept_mode = in_dev.ipv4.devconf_all.arp_accept
    dev_mode = in_dev.cnf.arp_accept
    if dev_mode > accept_mode:
        accept_mode = dev_mode
    accept = accept_mode == 1 or (accept_mode == 2 and arp_accept(ipv4, in_dev, sip))
    if n is not None or accept:  # (so sha is set below when n is)
        sha = bytes(buf[d + 8 : d + 14])
        tha = bytes(buf[d + 18 : d + 24])
        is_garp, addr_type = arp_is_garp(ipv4, dev, op, sip, tip, sha, tha)
    if (
        accept
        and n is None
        and (
            is_garp
            or (
                op == ARPOP_REPLY
                and (
                    addr_type == RTN_UNICAST
                    # postponed as late as possible, as the kernel does
                    or (addr_type < 0 and ipv4.fib.inet_addr_type(sip, dev) == RTN_UNICAST)
                )
            )
        )
    ):
        n = tbl.lookup_or_create(sip, dev, True)
    if n is not None:
        state = NUD_REACHABLE
        now = ipv4.net.clock.jiffies
        override = now > n.updated + tbl.parms_for(dev).locktime or is_garp
        if op != ARPOP_REPLY or skb.pkt_type != PACKET_HOST:
            state = NUD_STALE
        neigh_update(n, sha, state, NEIGH_UPDATE_F_OVERRIDE if override else 0)
    consume_skb(skb)


@kernel("arp_is_garp")
def arp_is_garp(
    ipv4: Ipv4, dev: NetDevice, op: int, sip: int, tip: int, sha: bytes, tha: bytes
) -> tuple[bool, int]:
    """Is this a gratuitous ARP, and *sip*'s address type if that was asked.

    Returns ``(is_garp, addr_type)``, ``addr_type`` -1 when not looked up (the
    kernel's ``int *addr_type`` out-parameter). Kernel: arp_is_garp().
    """
    is_garp = tip == sip
    if is_garp and op == ARPOP_REPLY:  # gratuitous replies also need tha == sha
        is_garp = tha == sha
    addr_type = -1
    if is_garp:
        addr_type = ipv4.fib.inet_addr_type(sip, dev)
        if addr_type != RTN_UNICAST:
            is_garp = False
    return is_garp, addr_type


@kernel("arp_ignore")
def arp_ignore(ipv4: Ipv4, in_dev: Any, sip: int, tip: int) -> bool:
    """Should a request for *tip* go unanswered? Kernel: arp_ignore()."""
    # IN_DEV_ARP_IGNORE(), a macro: IN_DEV_MAXCONF read here, not through maxconf()
    mode = in_dev.ipv4.devconf_all.arp_ignore
    dev_mode = in_dev.cnf.arp_ignore
    if dev_mode > mode:
        mode = dev_mode
    if mode == 0:
        return False
    if mode == 1:
        return not any(ifa.ifa_local == tip for ifa in in_dev.ifa_list)
    if mode == 2:
        return not any(ifa.ifa_local == tip and ifa.match(sip) for ifa in in_dev.ifa_list)
    if mode == 3:
        return any(ifa.ifa_local == tip and ifa.ifa_scope == 254 for ifa in in_dev.ifa_list)
    return bool(mode == 8)


@kernel("arp_accept")
def arp_accept(ipv4: Ipv4, in_dev: Any, sip: int) -> bool:
    """Kernel: arp_accept()."""
    # IN_DEV_ARP_ACCEPT(), a macro: IN_DEV_MAXCONF read here, not through maxconf()
    # (every host on a segment asks this for every broadcast request it hears)
    mode = in_dev.ipv4.devconf_all.arp_accept
    dev_mode = in_dev.cnf.arp_accept
    if dev_mode > mode:
        mode = dev_mode
    if mode == 1:
        return True
    if mode != 2:  # 0, and any other value: the switch's default
        return False
    return any(ifa.match(sip) for ifa in in_dev.primaries())


@kernel("inetdev_send_gratuitous_arp")
def arp_send_gratuitous(ipv4: Ipv4, dev: NetDevice) -> None:
    """Announce every address of *dev* (``arping -U``, address change).

    Kernel: inetdev_send_gratuitous_arp().
    """
    in_dev = dev.ip_ptr
    if in_dev is None or not dev.flags & IFF_UP or dev.flags & IFF_NOARP:
        return
    for ifa in in_dev.ifa_list:
        arp_send(
            ipv4,
            ARPOP_REQUEST,
            ETH_P_ARP,
            ifa.ifa_local,
            dev,
            ifa.ifa_local,
            None,
            dev.dev_addr,
            None,
        )


@kernel("arp_netdev_event")
def arp_netdev_event(ipv4: Ipv4, event: int, dev: NetDevice) -> None:
    """ARP's part of a device event: NETDEV_CHANGEADDR flushes *dev*'s entries
    (``neigh_changeaddr``) and the route cache; NETDEV_CHANGE with the carrier
    lost evicts *dev*'s entries but the PERMANENT ones (``neigh_carrier_down``),
    unless ``arp_evict_nocarrier`` is 0 for it (all AND device: IN_DEV_ANDCONF).

    The caller (:meth:`Ipv4.netdev_event`) passes NETDEV_CHANGE of an up
    device only, as the kernel sends it (linkwatch, ``__dev_notify_flags``).
    Not modelled:
    NETDEV_CHANGE's ``flags_changed & IFF_NOARP`` (netstack's notifier passes
    no change info).

    Kernel: arp_netdev_event().
    """
    if event == NETDEV_CHANGEADDR:
        ipv4.arp_tbl.neigh_changeaddr(dev)
        ipv4.rt_cache_flush()
    elif event == NETDEV_CHANGE:
        in_dev = dev.ip_ptr
        if in_dev is None:
            evict_nocarrier = True
        else:
            # (a DevConf slot without an annotation: read by name)
            all_evict = getattr(ipv4.devconf_all, "arp_evict_nocarrier")  # noqa: B009
            evict_nocarrier = bool(all_evict and in_dev.cnf.arp_evict_nocarrier)
        if evict_nocarrier and not dev.carrier:
            ipv4.arp_tbl.neigh_carrier_down(dev)
