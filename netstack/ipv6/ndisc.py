"""Neighbor Discovery (RFC 4861): the IPv6 neighbour table and its messages.

Theory of operation: ``nd_tbl`` is the shared :class:`NeighTable` with
128-bit keys, driven by the same NUD machine as ARP. Its constructor
(``ndisc_constructor``) picks how an entry works: devices without a
link-layer header (sit, ipip) get NOARP entries sent with
``neigh_direct_output``; multicast destinations get NOARP entries with the
33:33:xx mapped MAC; ``IFF_NOARP`` and loopback devices use their own
address; everything else resolves through ``neigh_resolve_output`` and then
takes the ``neigh_hh_output`` fast path with a cached 0x86DD header.

Resolution (``ndisc_solicit``) multicasts a Neighbor Solicitation to the
target's solicited-node group while INCOMPLETE and unicasts it while PROBE.
Received messages (``ndisc_rcv``, hop limit 255 and code 0 required):

* NS: DAD probes (from ::) for a tentative address of ours fail our DAD
  (unless the nonce says it is our own probe looped back), for an address
  of ours are answered with an NA to all-nodes; other NSs for an address of
  ours (or a subnet-router anycast we serve) create or refresh the sender's
  entry (STALE) and are answered with a solicited NA;
* NA: fails DAD of a tentative target; else updates the existing entry
  (solicited → REACHABLE, else STALE; override and router flags as sent);
* RS (routers only): refreshes the sender's entry and clears its router flag;
* RA (hosts, ``accept_ra``): default router with the RA's lifetime
  (``default via fe80::… proto ra metric 1024 expires …``), hop limit,
  reachable/retrans times, MTU option, prefix information to addrconf
  (on-link routes, SLAAC), the router's entry STALE with NTF_ROUTER;
* Redirect (hosts, ``accept_redirects``): a per-destination exception
  whose gateway is the redirect target.

Kernel: net/ipv6/ndisc.c, include/net/ndisc.h.
"""

from __future__ import annotations

import struct
from types import MethodType
from typing import TYPE_CHECKING, Final

from netstack.core.dev import NETDEV_CHANGE, NETDEV_CHANGEADDR
from netstack.core.netdevice import IFF_LOOPBACK, IFF_NOARP, IFF_POINTOPOINT
from netstack.core.skbuff import (
    PACKET_HOST,
    PACKET_LOOPBACK,
    DropReason,
    SkBuff,
    consume_skb,
    kfree_skb,
)
from netstack.core.sock import AF_INET6
from netstack.ipv6.constants import (
    IF_RA_MANAGED,
    IF_RA_OTHERCONF,
    IF_RA_RCVD,
    IF_RS_SENT,
    RTF_ADDRCONF,
    RTF_DEFAULT,
    RTF_EXPIRES,
    RTF_GATEWAY,
    RTF_PREF,
    RTF_PREF_MASK,
    RTF_UP,
)
from netstack.ipv6.ip6_input import IP6SKB_FRAGMENTED, Inet6SkbParm
from netstack.ipv6.route import Fib6Config, Fib6Info, Rt6Info, ip6_del_rt, ip6_route_add
from netstack.neigh.neighbour import (
    LOCALLY_ENQUEUED,
    NTF_ROUTER,
    Neighbour,
    NeighCb,
    NeighOps,
    NeighTable,
    PneighEntry,
    neigh_connected_output,
    neigh_direct_output,
    neigh_resolve_output,
    neigh_update,
    pneigh_enqueue,
    pneigh_lookup,
)
from netstack.neigh.nud import (
    NEIGH_UPDATE_F_ISROUTER,
    NEIGH_UPDATE_F_OVERRIDE,
    NEIGH_UPDATE_F_OVERRIDE_ISROUTER,
    NEIGH_UPDATE_F_WEAK_OVERRIDE,
    NUD_FAILED,
    NUD_NOARP,
    NUD_REACHABLE,
    NUD_STALE,
    NUD_VALID,
    NeighParms,
)
from netstack.sites import kernel
from netstack.wire.checksum import csum_partial
from netstack.wire.ethernet import ETH_P_IPV6
from netstack.wire.icmpv6 import (
    ICMPV6_ROUTER_PREF_INVALID,
    ICMPV6_ROUTER_PREF_MEDIUM,
    MTU_OPT,
    ND_MSG_LEN,
    ND_NA_FLAG_OVERRIDE,
    ND_NA_FLAG_ROUTER,
    ND_NA_FLAG_SOLICITED,
    ND_OPT_REDIRECT_HDR,
    ND_OPT_SOURCE_LL_ADDR,
    ND_OPT_TARGET_LL_ADDR,
    NDISC_NEIGHBOUR_ADVERTISEMENT,
    NDISC_NEIGHBOUR_SOLICITATION,
    NDISC_REDIRECT,
    NDISC_ROUTER_ADVERTISEMENT,
    NDISC_ROUTER_SOLICITATION,
    RA_FIXED,
    RA_MSG_LEN,
    REDIRECT_MSG_LEN,
    RS_MSG_LEN,
    NdOptions,
    ndisc_fill_addr_option,
    ndisc_opt_addr_data,
    ndisc_parse_options,
    nonce_option,
)
from netstack.wire.ipv6 import (
    IPPROTO_ICMPV6,
    IPV6_ADDR_LINKLOCAL,
    IPV6_HLEN,
    IPV6_MIN_MTU,
    addr_at,
    csum_ipv6_magic,
    ip6_flow_hdr,
    ipv6_addr_is_multicast,
    ipv6_addr_is_solict_mult,
    ipv6_addr_type,
    ipv6_eth_mc_map,
    ntoa,
    put_addr,
    solicited_node,
)
from netstack.wire.rtnetlink import (
    IFA_F_OPTIMISTIC,
    IFA_F_TENTATIVE,
    RT_TABLE_MAIN,
    RTN_MULTICAST,
    RTN_UNICAST,
    RTPROT_RA,
)

if TYPE_CHECKING:
    from netstack.core.netdevice import NetDevice
    from netstack.ipv6.addrconf import Inet6Dev
    from netstack.ipv6.netns import Ipv6

__all__ = [
    "icmp6_dst_alloc",
    "ipv6_accept_ra",
    "make_nd_tbl",
    "ndisc_netdev_event",
    "ndisc_rcv",
    "ndisc_send_na",
    "ndisc_send_ns",
    "ndisc_send_redirect",
    "ndisc_send_rs",
    "ndisc_update",
    "rt6_add_dflt_router",
]

_HH: Final = struct.Struct("!HH")
_H: Final = struct.Struct("!H")


def make_nd_tbl(ipv6: Ipv6) -> NeighTable:
    """Create the Net's ``ndisc_cache``.

    Kernel: nd_tbl.
    """
    hz = ipv6.net.clock.hz
    # bound to the family (a 64-byte method, not a closure, a cell and a frame a call)
    solicit = MethodType(ndisc_solicit, ipv6)
    error_report = MethodType(ndisc_error_report, ipv6)
    ops_generic = NeighOps(
        AF_INET6, solicit, error_report, neigh_resolve_output, neigh_connected_output
    )
    ops_hh = NeighOps(AF_INET6, solicit, error_report, neigh_resolve_output, neigh_resolve_output)
    ops_direct = NeighOps(AF_INET6, None, None, neigh_direct_output, neigh_direct_output)

    def constructor(n: Neighbour) -> bool:
        return ndisc_constructor(ipv6, n, ops_generic, ops_hh, ops_direct)

    parms = NeighParms(
        hz=hz,
        base_reachable_time=30 * hz,  # ND_REACHABLE_TIME
        reachable_time=30 * hz,
        retrans_time=hz,  # ND_RETRANS_TIMER
        delay_probe_time=5 * hz,
        gc_staletime=60 * hz,
        locktime=0,
        anycast_delay=hz,
        proxy_delay=8 * hz // 10,
        interval_probe_time=5 * hz,
    )
    tbl = NeighTable(
        ipv6.net, "ndisc_cache", AF_INET6, ETH_P_IPV6, 128, constructor, ops_generic, parms, ntoa
    )
    # the same three functions for every table (they find the family through the
    # device): no bound method a table, as a lab holds thousands of tables
    tbl.pconstructor = pndisc_constructor  # nd_tbl.pconstructor
    tbl.pdestructor = pndisc_destructor  # nd_tbl.pdestructor
    tbl.proxy_redo = pndisc_redo  # nd_tbl.proxy_redo
    return tbl


@kernel("pndisc_constructor")
def pndisc_constructor(n: PneighEntry) -> int:
    """A proxy entry joins its address's solicited-node group on its device
    (so that the proxy hears the multicast NS); one of no device is refused.

    Kernel: pndisc_constructor().
    """
    dev = n.dev
    if dev is None:
        return -22  # -EINVAL
    idev = dev.ip6_ptr
    if idev is None:
        return -22
    idev.ipv6.addrconf.ipv6_dev_mc_inc(dev, solicited_node(n.key))
    return 0


@kernel("pndisc_destructor")
def pndisc_destructor(n: PneighEntry) -> None:
    """Leave the group pndisc_constructor joined. Kernel: pndisc_destructor()."""
    dev = n.dev
    if dev is None:
        return
    idev = dev.ip6_ptr
    if idev is None:
        return
    idev.ipv6.addrconf.ipv6_dev_mc_dec(idev, solicited_node(n.key))  # ipv6_dev_mc_dec()


@kernel("pndisc_redo")
def pndisc_redo(skb: SkBuff) -> None:
    """A delayed proxied NS's turn (the proxy timer): ``ndisc_recv_ns`` again,
    now LOCALLY_ENQUEUED. Kernel: pndisc_redo().
    """
    dev = skb.dev
    idev = dev.ip6_ptr if dev is not None else None
    if idev is None:  # (the proxy timer redoes only for a running device)
        kfree_skb(skb)
        return
    reason = ndisc_recv_ns(idev.ipv6, skb)
    if reason is None:
        consume_skb(skb)
    else:
        kfree_skb(skb, reason)


@kernel("pndisc_is_router")
def pndisc_is_router(ipv6: Ipv6, target: int, dev: NetDevice) -> int:
    """-1 without a proxy entry for *target* on *dev*; else its router flag
    (``ip -6 neigh add proxy ADDR dev DEV router``). Kernel: pndisc_is_router().
    """
    n = pneigh_lookup(ipv6.nd_tbl, target, dev)
    if n is None:
        return -1
    return 1 if n.flags & NTF_ROUTER else 0


@kernel("ndisc_constructor")
def ndisc_constructor(
    ipv6: Ipv6, n: Neighbour, ops_generic: NeighOps, ops_hh: NeighOps, ops_direct: NeighOps
) -> bool:
    """Choose state and output for a new entry.

    Kernel: ndisc_constructor().
    """
    dev = n.dev
    if dev.ip6_ptr is None:
        return False
    addr = n.primary_key
    is_multicast = ipv6_addr_is_multicast(addr)
    n.type = RTN_MULTICAST if is_multicast else RTN_UNICAST
    hops = dev.header_ops
    if hops is None:
        n.nud_state = NUD_NOARP
        n.ops = ops_direct
        n.output = neigh_direct_output
        return True
    if is_multicast:
        n.nud_state = NUD_NOARP
        if dev.addr_len == 6:
            n.ha = ipv6_eth_mc_map(addr)  # ndisc_mc_map()
        else:
            n.ha = bytes(dev.broadcast)
    elif dev.flags & (IFF_NOARP | IFF_LOOPBACK):
        n.nud_state = NUD_NOARP
        n.ha = bytes(dev.dev_addr)
        if dev.flags & IFF_LOOPBACK:
            n.type = 2  # RTN_LOCAL
    elif dev.flags & IFF_POINTOPOINT:
        n.nud_state = NUD_NOARP
        n.ha = bytes(dev.broadcast)
    n.ops = ops_hh if hops.has_cache else ops_generic
    n.output = n.ops.connected_output if n.nud_state & NUD_VALID else n.ops.output
    return True


@kernel("net/ipv6/ndisc.c", "ndisc_solicit")
def ndisc_solicit(ipv6: Ipv6, n: Neighbour, skb: SkBuff | None) -> None:
    """Send one NS for *n*: multicast while INCOMPLETE, unicast while PROBE.

    Kernel: net/ipv6/ndisc.c, ndisc_solicit().
    """
    dev = n.dev
    target = n.primary_key
    saddr: int | None = None
    if skb is not None and skb.network_header >= 0:
        cand = addr_at(skb.buf, skb.network_header + 8)
        if ipv6.ipv6_chk_addr(cand, dev, strict=True, banned=IFA_F_TENTATIVE | IFA_F_OPTIMISTIC):
            saddr = cand
    parms = n.tbl.parms_for(dev)
    probes = n.probes - parms.ucast_probes
    if probes < 0:
        ndisc_send_ns(ipv6, dev, target, target, saddr)
    elif probes - parms.app_probes < 0:
        return  # user-space (ndisc daemon) probe: none here
    else:
        ndisc_send_ns(ipv6, dev, target, solicited_node(target), saddr)


@kernel("ndisc_error_report")
def ndisc_error_report(ipv6: Ipv6, n: Neighbour, skb: SkBuff) -> None:
    """Resolution failed for a queued packet: tell its sender.

    Kernel: ndisc_error_report().
    """
    dst = skb.dst
    if dst is not None:
        dst.link_failure(skb)
    kfree_skb(skb, DropReason.NEIGH_FAILED)


# ---------------------------------------------------------------------------
# Sending
# ---------------------------------------------------------------------------


@kernel("net/ipv6/route.c", "icmp6_dst_alloc")
def icmp6_dst_alloc(ipv6: Ipv6, dev: NetDevice) -> Rt6Info:
    """A dst for an ND message on *dev* (no gateway: the destination is resolved).

    Kernel: net/ipv6/route.c, icmp6_dst_alloc().
    """
    rt = Rt6Info(ipv6, dev, RTF_UP)
    rt.rt6i_idev = dev.ip6_ptr
    rt.output = ipv6.dst_output
    rt.input = ipv6.dst_discard_in
    return rt


@kernel("net/ipv6/ndisc.c", "ndisc_alloc_skb", "ndisc_send_skb", "ip6_nd_hdr")
def ndisc_send_skb(ipv6: Ipv6, dev: NetDevice, msg: bytes, daddr: int, saddr: int) -> None:
    """Wrap *msg* in an IPv6 header (hop limit 255) and send it on *dev*.

    Kernel: net/ipv6/ndisc.c, ndisc_alloc_skb() + ndisc_send_skb() + ip6_nd_hdr().
    """
    hlen = ((dev.hard_header_len + dev.needed_headroom) & ~15) + 16  # LL_RESERVED_SPACE
    total = IPV6_HLEN + len(msg)
    skb = SkBuff(bytearray(hlen + total), hlen, hlen + total)
    skb.network_header = hlen
    skb.transport_header = hlen + IPV6_HLEN
    skb.protocol = ETH_P_IPV6
    skb.dev = dev
    skb.priority = 7  # TC_PRIO_CONTROL (ndisc_alloc_skb via sk_priority)
    buf = skb.buf
    th = hlen + IPV6_HLEN
    buf[th : th + len(msg)] = msg
    buf[th + 2] = buf[th + 3] = 0
    c = csum_ipv6_magic(
        saddr, daddr, len(msg), IPPROTO_ICMPV6, csum_partial(buf, th, th + len(msg))
    )
    _H.pack_into(buf, th + 2, c)
    idev = dev.ip6_ptr
    tclass = idev.cnf.ndisc_tclass if idev is not None else 0
    ip6_flow_hdr(buf, hlen, tclass, 0)
    _HH.pack_into(buf, hlen + 4, len(msg), (IPPROTO_ICMPV6 << 8) | 255)
    put_addr(buf, hlen + 8, saddr)
    put_addr(buf, hlen + 24, daddr)
    skb.dst = icmp6_dst_alloc(ipv6, dev)
    skb.sk = ipv6.ndisc_sk  # skb_set_owner_w(): mc_loop 0, ND is never looped back
    ipv6.ip6_mib.OutRequests += 1
    icmp_type = msg[0]
    rc = ipv6.ip6_output_nd(skb)
    if rc >= 0:
        ipv6.icmp6msg.out_types[icmp_type] += 1
        ipv6.icmp6_mib.OutMsgs += 1


@kernel("net/ipv6/ndisc.c", "ndisc_send_ns")
def ndisc_send_ns(
    ipv6: Ipv6, dev: NetDevice, solicit: int, daddr: int, saddr: int | None, nonce: bytes = b""
) -> None:
    """A Neighbor Solicitation; *saddr* None: the device's link-local; 0: :: (DAD).

    Kernel: net/ipv6/ndisc.c, ndisc_send_ns().
    """
    if saddr is None:
        saddr = ipv6.addrconf.ipv6_get_lladdr(dev, IFA_F_TENTATIVE | IFA_F_OPTIMISTIC)
        if saddr is None:
            return
    inc_opt = dev.addr_len and saddr != 0
    msg = bytearray(ND_MSG_LEN)
    msg[0] = NDISC_NEIGHBOUR_SOLICITATION
    put_addr(msg, 8, solicit)
    if inc_opt:
        msg += ndisc_fill_addr_option(ND_OPT_SOURCE_LL_ADDR, bytes(dev.dev_addr))
    if nonce:
        msg += nonce_option(nonce)
    ndisc_send_skb(ipv6, dev, bytes(msg), daddr, saddr)


@kernel("ndisc_send_na")
def ndisc_send_na(
    ipv6: Ipv6,
    dev: NetDevice,
    daddr: int,
    solicited_addr: int,
    *,
    router: bool,
    solicited: bool,
    override: bool,
    inc_opt: bool,
) -> None:
    """A Neighbor Advertisement for *solicited_addr*.

    Kernel: ndisc_send_na().
    """
    ifp = ipv6.addrconf.ipv6_get_ifaddr(solicited_addr, dev, True)
    if ifp is not None:
        src = solicited_addr
        if ifp.flags & IFA_F_OPTIMISTIC:
            override = False
        inc_opt = inc_opt or bool(ifp.idev.cnf.force_tllao)
    else:
        sel = ipv6.ipv6_dev_get_saddr(dev, daddr)
        if sel is None:
            return
        src = sel
    if not dev.addr_len:
        inc_opt = False
    msg = bytearray(ND_MSG_LEN)
    msg[0] = NDISC_NEIGHBOUR_ADVERTISEMENT
    msg[4] = (
        (ND_NA_FLAG_ROUTER if router else 0)
        | (ND_NA_FLAG_SOLICITED if solicited else 0)
        | (ND_NA_FLAG_OVERRIDE if override else 0)
    )
    put_addr(msg, 8, solicited_addr)
    if inc_opt:
        msg += ndisc_fill_addr_option(ND_OPT_TARGET_LL_ADDR, bytes(dev.dev_addr))
    ndisc_send_skb(ipv6, dev, bytes(msg), daddr, src)


@kernel("ndisc_send_rs")
def ndisc_send_rs(ipv6: Ipv6, dev: NetDevice, saddr: int, daddr: int) -> None:
    """A Router Solicitation.

    Kernel: ndisc_send_rs().
    """
    msg = bytearray(RS_MSG_LEN)
    msg[0] = NDISC_ROUTER_SOLICITATION
    if dev.addr_len:
        msg += ndisc_fill_addr_option(ND_OPT_SOURCE_LL_ADDR, bytes(dev.dev_addr))
    ndisc_send_skb(ipv6, dev, bytes(msg), daddr, saddr)


@kernel("ndisc_send_redirect")
def ndisc_send_redirect(ipv6: Ipv6, skb: SkBuff, target: int) -> None:
    """Tell the sender of *skb* about a better first hop.

    Kernel: ndisc_send_redirect().
    """
    dev = skb.dev
    if dev is None:
        return
    nh = skb.network_header
    buf = skb.buf
    saddr_pkt = addr_at(buf, nh + 8)
    daddr_pkt = addr_at(buf, nh + 24)
    saddr = ipv6.addrconf.ipv6_get_lladdr(dev, IFA_F_TENTATIVE | IFA_F_OPTIMISTIC)
    if saddr is None:
        return  # "Redirect: no link-local address on %s"
    if not ipv6_addr_type(target) & IPV6_ADDR_LINKLOCAL and target != daddr_pkt:
        return  # "Redirect: target address is not link-local unicast"
    from netstack.ipv6.route import Flowi6, ip6_route_output

    rt = ip6_route_output(ipv6, Flowi6(saddr_pkt, saddr, oif=dev.ifindex, proto=IPPROTO_ICMPV6))
    try:
        if rt.error or rt.rt6i_flags & RTF_GATEWAY:
            return  # "Redirect: destination is not a neighbour"
    finally:
        rt.release()
    if not ipv6.inet_peer_xrlim_allow(saddr_pkt, ipv6.net.clock.hz):
        return
    msg = bytearray(REDIRECT_MSG_LEN)
    msg[0] = NDISC_REDIRECT
    put_addr(msg, 8, target)
    put_addr(msg, 24, daddr_pkt)
    n = ipv6.nd_tbl.lookup(target, dev)
    if n is not None and n.nud_state & NUD_VALID and dev.addr_len:
        msg += ndisc_fill_addr_option(ND_OPT_TARGET_LL_ADDR, bytes(n.ha))
    room = IPV6_MIN_MTU - IPV6_HLEN - len(msg) - 8
    quote = bytes(buf[nh : min(skb.tail, nh + max(room, 0))])
    quote = quote[: len(quote) & ~7]
    if quote:
        msg += bytes((ND_OPT_REDIRECT_HDR, (len(quote) + 8) >> 3, 0, 0, 0, 0, 0, 0)) + quote
    ndisc_send_skb(ipv6, dev, bytes(msg), saddr_pkt, saddr)


# ---------------------------------------------------------------------------
# Receiving
# ---------------------------------------------------------------------------


@kernel("ndisc_update", "neigh_update")
def ndisc_update(ipv6: Ipv6, n: Neighbour, lladdr: bytes | None, new: int, flags: int) -> None:
    """Update an entry, with the router flag when asked.

    Kernel: ndisc_update() → neigh_update().
    """
    had = n.flags & NTF_ROUTER
    ok = neigh_update(n, lladdr, new, flags)
    if ok and flags & NEIGH_UPDATE_F_OVERRIDE_ISROUTER:
        if flags & NEIGH_UPDATE_F_ISROUTER:
            n.flags |= NTF_ROUTER
        else:
            n.flags &= ~NTF_ROUTER
        if had and not n.flags & NTF_ROUTER:
            ipv6.rt6_clean_tohost(n.primary_key)


def _drop(skb: SkBuff, reason: DropReason) -> int:
    kfree_skb(skb, reason)
    return 0


@kernel("net/ipv6/ndisc.c", "ndisc_rcv")
def ndisc_rcv(ipv6: Ipv6, skb: SkBuff) -> int:
    """Validate and dispatch an ND message (``skb.data`` at the ICMPv6 header).

    Kernel: net/ipv6/ndisc.c, ndisc_rcv().
    """
    nh = skb.network_header
    buf = skb.buf
    idev = skb.dev.ip6_ptr if skb.dev is not None else None
    if idev is None:
        return _drop(skb, DropReason.NOT_SPECIFIED)
    cb = skb.cb
    if (
        isinstance(cb, Inet6SkbParm)
        and cb.flags & IP6SKB_FRAGMENTED
        and idev.cnf.suppress_frag_ndisc
    ):
        return _drop(skb, DropReason.IPV6_NDISC_FRAG)  # ndisc_suppress_frag_ndisc()
    if buf[nh + 7] != 255:
        return _drop(skb, DropReason.IPV6_NDISC_HOP_LIMIT)
    th = skb.transport_header
    if buf[th + 1] != 0:
        return _drop(skb, DropReason.IPV6_NDISC_BAD_CODE)
    t = buf[th]
    if t == NDISC_NEIGHBOUR_SOLICITATION:
        reason = ndisc_recv_ns(ipv6, skb)
    elif t == NDISC_NEIGHBOUR_ADVERTISEMENT:
        reason = ndisc_recv_na(ipv6, skb)
    elif t == NDISC_ROUTER_SOLICITATION:
        reason = ndisc_recv_rs(ipv6, skb)
    elif t == NDISC_ROUTER_ADVERTISEMENT:
        reason = ndisc_router_discovery(ipv6, skb)
    else:
        reason = ndisc_redirect_rcv(ipv6, skb)
    if reason is None:
        consume_skb(skb)
    else:
        kfree_skb(skb, reason)
    return 0


def _options(skb: SkBuff, fixed: int) -> NdOptions | None:
    start = skb.transport_header + fixed
    return ndisc_parse_options(skb.buf, start, skb.tail)


@kernel("net/ipv6/ndisc.c", "ndisc_recv_ns")
def ndisc_recv_ns(ipv6: Ipv6, skb: SkBuff) -> DropReason | None:
    """Kernel: net/ipv6/ndisc.c, ndisc_recv_ns()."""
    buf = skb.buf
    nh = skb.network_header
    th = skb.transport_header
    dev = skb.dev
    assert dev is not None
    if skb.tail - th < ND_MSG_LEN:
        return DropReason.PKT_TOO_SMALL
    saddr = addr_at(buf, nh + 8)
    daddr = addr_at(buf, nh + 24)
    target = addr_at(buf, th + 8)
    dad = saddr == 0
    if ipv6_addr_is_multicast(target):
        return DropReason.NOT_SPECIFIED  # "NS: multicast target address"
    if dad and not ipv6_addr_is_solict_mult(daddr):
        return DropReason.NOT_SPECIFIED  # "NS: bad DAD packet (wrong destination)"
    opts = _options(skb, ND_MSG_LEN)
    if opts is None:
        return DropReason.IPV6_NDISC_BAD_OPTIONS
    lladdr: bytes | None = None
    if opts.src_lladdr is not None:
        lladdr = ndisc_opt_addr_data(buf, opts.src_lladdr, dev.addr_len)
        if lladdr is None:
            return DropReason.NOT_SPECIFIED  # "NS: invalid link-layer address length"
        if dad:
            return DropReason.NOT_SPECIFIED  # "NS: bad DAD packet (link-layer address option)"
    nonce = b""
    if opts.nonce is not None and buf[opts.nonce + 1] == 1:
        nonce = bytes(buf[opts.nonce + 2 : opts.nonce + 8])
    inc = ipv6_addr_is_multicast(daddr)
    addrconf = ipv6.addrconf
    ifp = addrconf.ipv6_get_ifaddr(target, dev, True)
    idev = dev.ip6_ptr
    is_router = -1
    if ifp is not None:
        if ifp.flags & (IFA_F_TENTATIVE | IFA_F_OPTIMISTIC):
            if dad:
                if nonce and any(nonce) and ifp.dad_nonce == nonce:
                    # "IPv6 DAD loopback for address … nonce … ignored"
                    return DropReason.NOT_SPECIFIED
                addrconf.addrconf_dad_failure(skb, ifp)
                return DropReason.NOT_SPECIFIED
            if not ifp.flags & IFA_F_OPTIMISTIC:
                return DropReason.NOT_SPECIFIED
        idev = ifp.idev
    else:
        if idev is None:
            return DropReason.NOT_SPECIFIED
        if addrconf.ipv6_chk_acast_addr(dev, target) or (
            idev.cnf.forwarding
            and (ipv6.devconf_all.proxy_ndp or idev.cnf.proxy_ndp)
            and (is_router := pndisc_is_router(ipv6, target, dev)) >= 0
        ):
            cb = skb.cb
            if (
                not (type(cb) is NeighCb and cb.flags & LOCALLY_ENQUEUED)
                and skb.pkt_type != PACKET_HOST
                and inc
                and ipv6.nd_tbl.parms_for(dev).proxy_delay  # NEIGH_VAR(idev->nd_parms, …)
            ):
                # "for anycast or proxy, sender should delay its response by a
                # random time between 0 and MAX_ANYCAST_DELAY_TIME seconds"
                pneigh_enqueue(ipv6.nd_tbl, dev, skb.clone())
                return DropReason.NOT_SPECIFIED
        else:
            return DropReason.IPV6_NDISC_NS_OTHERHOST
    if is_router < 0:
        is_router = idev.cnf.forwarding
    if dad:
        ndisc_send_na(
            ipv6,
            dev,
            0xFF02_0000_0000_0000_0000_0000_0000_0001,
            target,
            router=bool(is_router),
            solicited=False,
            override=ifp is not None,
            inc_opt=True,
        )
        return DropReason.NOT_SPECIFIED
    tbl = ipv6.nd_tbl
    if inc:
        tbl.rcv_probes_mcast += 1
    else:
        tbl.rcv_probes_ucast += 1
    n = tbl.lookup_or_create(saddr, dev, (not inc) or lladdr is not None or not dev.addr_len)
    if n is not None:
        ndisc_update(
            ipv6, n, lladdr, NUD_STALE, NEIGH_UPDATE_F_WEAK_OVERRIDE | NEIGH_UPDATE_F_OVERRIDE
        )
    if n is not None or dev.header_ops is None:
        ndisc_send_na(
            ipv6,
            dev,
            saddr,
            target,
            router=bool(is_router),
            solicited=True,
            override=ifp is not None and inc,
            inc_opt=inc,
        )
        return None
    return DropReason.NOT_SPECIFIED


@kernel("net/ipv6/ndisc.c", "ndisc_recv_na")
def ndisc_recv_na(ipv6: Ipv6, skb: SkBuff) -> DropReason | None:
    """Kernel: net/ipv6/ndisc.c, ndisc_recv_na()."""
    buf = skb.buf
    nh = skb.network_header
    th = skb.transport_header
    dev = skb.dev
    assert dev is not None
    if skb.tail - th < ND_MSG_LEN:
        return DropReason.PKT_TOO_SMALL
    daddr = addr_at(buf, nh + 24)
    target = addr_at(buf, th + 8)
    flags = buf[th + 4]
    solicited = bool(flags & ND_NA_FLAG_SOLICITED)
    if ipv6_addr_is_multicast(target):
        return DropReason.NOT_SPECIFIED  # "NA: target address is multicast"
    if ipv6_addr_is_multicast(daddr) and solicited:
        return DropReason.NOT_SPECIFIED  # "NA: solicited NA is multicasted"
    idev = dev.ip6_ptr
    if not solicited and idev is not None and idev.cnf.drop_unsolicited_na:
        return DropReason.NOT_SPECIFIED
    opts = _options(skb, ND_MSG_LEN)
    if opts is None:
        return DropReason.IPV6_NDISC_BAD_OPTIONS
    lladdr: bytes | None = None
    if opts.tgt_lladdr is not None:
        lladdr = ndisc_opt_addr_data(buf, opts.tgt_lladdr, dev.addr_len)
        if lladdr is None:
            return DropReason.NOT_SPECIFIED  # "NA: invalid link-layer address length"
    ifp = ipv6.addrconf.ipv6_get_ifaddr(target, dev, True)
    if ifp is not None:
        if skb.pkt_type != PACKET_LOOPBACK and ifp.flags & IFA_F_TENTATIVE:
            ipv6.addrconf.addrconf_dad_failure(skb, ifp)
            return DropReason.NOT_SPECIFIED
        if skb.pkt_type != PACKET_LOOPBACK and ipv6.net.net_ratelimit():
            ipv6.net.log.warning(
                "ndisc_na_own_address",
                msg=f"NA: advertised our address {ntoa(target)} on {dev.name}!",
            )
        return DropReason.NOT_SPECIFIED
    tbl = ipv6.nd_tbl
    n = tbl.lookup(target, dev)
    if n is None and lladdr is not None and idev is not None and idev.cnf.forwarding:
        if idev.cnf.accept_untracked_na:
            n = tbl.create(target, dev)
            solicited = False
    if n is None:
        return DropReason.NOT_SPECIFIED
    if n.nud_state & NUD_FAILED:
        return DropReason.NOT_SPECIFIED
    # "Don't update the neighbor cache entry on a proxy NA from ourselves because
    # either the proxied node is off link or it has already sent a NA to us."
    all_cnf = ipv6.devconf_all
    if (
        lladdr is not None
        and lladdr == bytes(dev.dev_addr[: dev.addr_len])
        and all_cnf.forwarding
        and all_cnf.proxy_ndp
        and pneigh_lookup(tbl, target, dev) is not None
    ):
        return DropReason.NOT_SPECIFIED  # XXX: idev->cnf.proxy_ndp
    ndisc_update(
        ipv6,
        n,
        lladdr,
        NUD_REACHABLE if solicited else NUD_STALE,
        NEIGH_UPDATE_F_WEAK_OVERRIDE
        | (NEIGH_UPDATE_F_OVERRIDE if flags & ND_NA_FLAG_OVERRIDE else 0)
        | NEIGH_UPDATE_F_OVERRIDE_ISROUTER
        | (NEIGH_UPDATE_F_ISROUTER if flags & ND_NA_FLAG_ROUTER else 0),
    )
    return None


@kernel("ndisc_recv_rs")
def ndisc_recv_rs(ipv6: Ipv6, skb: SkBuff) -> DropReason | None:
    """Routers refresh the soliciting host's entry.

    Kernel: ndisc_recv_rs().
    """
    buf = skb.buf
    th = skb.transport_header
    dev = skb.dev
    assert dev is not None
    if skb.tail - th < RS_MSG_LEN:
        return DropReason.PKT_TOO_SMALL
    idev = dev.ip6_ptr
    if idev is None or not idev.cnf.forwarding:
        return DropReason.NOT_SPECIFIED
    saddr = addr_at(buf, skb.network_header + 8)
    if saddr == 0:
        return DropReason.NOT_SPECIFIED
    opts = _options(skb, RS_MSG_LEN)
    if opts is None:
        return DropReason.IPV6_NDISC_BAD_OPTIONS
    lladdr: bytes | None = None
    if opts.src_lladdr is not None:
        lladdr = ndisc_opt_addr_data(buf, opts.src_lladdr, dev.addr_len)
        if lladdr is None:
            return DropReason.NOT_SPECIFIED
    n = ipv6.nd_tbl.lookup_or_create(saddr, dev, True)
    if n is None:
        return DropReason.NOT_SPECIFIED
    ndisc_update(
        ipv6,
        n,
        lladdr,
        NUD_STALE,
        NEIGH_UPDATE_F_WEAK_OVERRIDE | NEIGH_UPDATE_F_OVERRIDE | NEIGH_UPDATE_F_OVERRIDE_ISROUTER,
    )
    return None


@kernel("rt6_get_dflt_router")
def rt6_get_dflt_router(ipv6: Ipv6, gw: int, dev: NetDevice) -> Fib6Info | None:
    """The RA-learned default route via *gw*.

    Kernel: rt6_get_dflt_router().
    """
    table = ipv6.fib6.tables.get(RT_TABLE_MAIN)
    b = table.bucket(0, 0) if table is not None else None
    for f in b or ():
        if (
            f.nh.dev is dev
            and f.nh.gw == gw
            and f.flags & (RTF_ADDRCONF | RTF_DEFAULT) == (RTF_ADDRCONF | RTF_DEFAULT)
        ):
            return f
    return None


@kernel("rt6_add_dflt_router")
def rt6_add_dflt_router(
    ipv6: Ipv6, gw: int, dev: NetDevice, pref: int, metric: int, lifetime: int
) -> Fib6Info | None:
    """``default via GW dev DEV proto ra metric 1024 expires …``.

    Kernel: rt6_add_dflt_router().
    """
    cfg = Fib6Config(
        0,
        0,
        table=RT_TABLE_MAIN,
        metric=metric,
        flags=RTF_GATEWAY | RTF_ADDRCONF | RTF_DEFAULT | RTF_UP | RTF_EXPIRES | RTF_PREF(pref),
        protocol=RTPROT_RA,
        dev=dev,
        gw=gw,
        expires=lifetime,
        nlflags=0,
    )
    try:
        ip6_route_add(ipv6, cfg)
    except Exception:
        return None
    return rt6_get_dflt_router(ipv6, gw, dev)


@kernel("ipv6_accept_ra")
def ipv6_accept_ra(idev: Inet6Dev) -> bool:
    """RAs are accepted by hosts, and by routers only with accept_ra=2.

    Here rather than in addrconf so ndisc need not import addrconf (which
    imports ndisc through mcast); addrconf re-exports it.

    Kernel: ipv6_accept_ra().
    """
    cnf = idev.cnf
    return cnf.accept_ra == 2 if cnf.forwarding else bool(cnf.accept_ra)


@kernel("net/ipv6/ndisc.c", "ndisc_router_discovery")
def ndisc_router_discovery(ipv6: Ipv6, skb: SkBuff) -> DropReason | None:
    """Process a Router Advertisement.

    Kernel: net/ipv6/ndisc.c, ndisc_router_discovery().
    """
    buf = skb.buf
    nh = skb.network_header
    th = skb.transport_header
    dev = skb.dev
    assert dev is not None
    if skb.tail - th < RA_MSG_LEN:
        return DropReason.PKT_TOO_SMALL
    saddr = addr_at(buf, nh + 8)
    if not ipv6_addr_type(saddr) & IPV6_ADDR_LINKLOCAL:
        return DropReason.NOT_SPECIFIED  # "RA: source address is not link-local"
    idev = dev.ip6_ptr
    if idev is None:
        return DropReason.NOT_SPECIFIED
    opts = _options(skb, RA_MSG_LEN)
    if opts is None:
        return DropReason.IPV6_NDISC_BAD_OPTIONS
    _t, _c, _ck, cur_hop_limit, raflags, lifetime, reachable, retrans = RA_FIXED.unpack_from(
        buf, th
    )
    clock = ipv6.net.clock
    hz = clock.hz
    f: Fib6Info | None = None
    n: Neighbour | None = None
    ipv6.ra_received += 1
    if ipv6_accept_ra(idev):
        if idev.if_flags & IF_RS_SENT:
            idev.if_flags |= IF_RA_RCVD
        idev.if_flags = (idev.if_flags & ~(IF_RA_MANAGED | IF_RA_OTHERCONF)) | (
            (IF_RA_MANAGED if raflags & 0x80 else 0) | (IF_RA_OTHERCONF if raflags & 0x40 else 0)
        )
        defrtr = bool(idev.cnf.accept_ra_defrtr)
        if (
            defrtr
            and not idev.cnf.accept_ra_from_local
            and ipv6.ipv6_chk_addr(saddr, dev, banned=0)
        ):
            defrtr = False  # "RA from local address detected … default router ignored"
        if defrtr and lifetime and lifetime < idev.cnf.accept_ra_min_lft:
            lifetime = 0
        if defrtr:
            pref = (raflags >> 3) & 0x3
            if pref == ICMPV6_ROUTER_PREF_INVALID or not idev.cnf.accept_ra_rtr_pref:
                pref = ICMPV6_ROUTER_PREF_MEDIUM
            f = rt6_get_dflt_router(ipv6, saddr, dev)
            metric = idev.cnf.ra_defrtr_metric
            if f is not None and (lifetime == 0 or f.metric != metric):
                ip6_del_rt(ipv6, f)
                f = None
            if f is None and lifetime:
                f = rt6_add_dflt_router(ipv6, saddr, dev, pref, metric, lifetime)
                if f is None:
                    return DropReason.NOT_SPECIFIED
                n = ipv6.nd_tbl.lookup_or_create(saddr, dev, True)
                if n is not None:
                    n.flags |= NTF_ROUTER
            elif f is not None and (f.flags & RTF_PREF_MASK) != RTF_PREF(pref):
                f.flags = (f.flags & ~RTF_PREF_MASK) | RTF_PREF(pref)
            if f is not None:
                f.flags |= RTF_EXPIRES
                f.expires = clock.jiffies + hz * lifetime
                ipv6.fib6.fib6_force_start_gc()
            if idev.cnf.accept_ra_min_hop_limit < 256 and cur_hop_limit:
                if idev.cnf.accept_ra_min_hop_limit <= cur_hop_limit:
                    idev.cnf.hop_limit = cur_hop_limit
                    if f is not None:
                        f.hoplimit = cur_hop_limit
            ipv6.rt6_genid_bump()
        # reachable time and retrans timer (skip_defrtr: still the link parameters)
        tbl = ipv6.nd_tbl
        if retrans:
            rtime = retrans * hz // 1000
            tbl.set_parms(dev, retrans_time=max(rtime, hz // 100))
        if reachable:
            rtime = max(reachable * hz // 1000, hz // 10)
            if rtime != tbl.parms_for(dev).base_reachable_time:
                tbl.set_parms(dev, base_reachable_time=rtime, gc_staletime=3 * rtime)
    # skip_linkparms: the router's entry, then options
    if n is None:
        n = ipv6.nd_tbl.lookup_or_create(saddr, dev, True)
    reason: DropReason | None = DropReason.NOT_SPECIFIED
    if n is not None:
        lladdr: bytes | None = None
        if opts.src_lladdr is not None:
            lladdr = ndisc_opt_addr_data(buf, opts.src_lladdr, dev.addr_len)
            if lladdr is None:
                return DropReason.NOT_SPECIFIED  # "RA: invalid link-layer address length"
        ndisc_update(
            ipv6,
            n,
            lladdr,
            NUD_STALE,
            NEIGH_UPDATE_F_WEAK_OVERRIDE
            | NEIGH_UPDATE_F_OVERRIDE
            | NEIGH_UPDATE_F_OVERRIDE_ISROUTER
            | NEIGH_UPDATE_F_ISROUTER,
        )
        reason = None
    if not ipv6_accept_ra(idev):
        return reason
    if idev.cnf.accept_ra_pinfo:
        for pi in opts.prefix_info:
            ipv6.addrconf.addrconf_prefix_rcv(
                dev, buf, pi, buf[pi + 1] << 3, opts.src_lladdr is not None
            )
    if opts.mtu is not None and idev.cnf.accept_ra_mtu:
        _t, _l, _r, mtu = MTU_OPT.unpack_from(buf, opts.mtu)
        idev.ra_mtu = mtu
        if mtu < IPV6_MIN_MTU or mtu > dev.mtu:
            if ipv6.net.net_ratelimit():  # ND_PRINTK(2, warn, …)
                ipv6.net.log.warning("ndisc_ra_invalid_mtu", mtu=mtu)
        elif idev.cnf.mtu6 != mtu:
            idev.cnf.mtu6 = mtu
            if f is not None:
                f.mtu = mtu
            ipv6.rt6_mtu_change(dev, mtu)
    return reason


@kernel("ndisc_redirect_rcv", "rt6_redirect")
def ndisc_redirect_rcv(ipv6: Ipv6, skb: SkBuff) -> DropReason | None:
    """A router tells us a better first hop.

    Kernel: ndisc_redirect_rcv() → rt6_redirect().
    """
    buf = skb.buf
    nh = skb.network_header
    th = skb.transport_header
    dev = skb.dev
    assert dev is not None
    if skb.tail - th < REDIRECT_MSG_LEN:
        return DropReason.PKT_TOO_SMALL
    saddr = addr_at(buf, nh + 8)
    if not ipv6_addr_type(saddr) & IPV6_ADDR_LINKLOCAL:
        return DropReason.NOT_SPECIFIED  # "Redirect: source address is not link-local"
    opts = _options(skb, REDIRECT_MSG_LEN)
    if opts is None:
        return DropReason.IPV6_NDISC_BAD_OPTIONS
    idev = dev.ip6_ptr
    if idev is None or idev.cnf.forwarding or not idev.cnf.accept_redirects:
        return DropReason.NOT_SPECIFIED
    target = addr_at(buf, th + 8)
    dest = addr_at(buf, th + 24)
    if ipv6_addr_is_multicast(dest):
        return DropReason.NOT_SPECIFIED  # "Redirect: destination address is multicast"
    on_link = target == dest
    if not on_link and not ipv6_addr_type(target) & IPV6_ADDR_LINKLOCAL:
        return DropReason.NOT_SPECIFIED  # "Redirect: target address is not link-local unicast"
    # RFC 4861 §8.1: the redirect must come from our current first hop
    from netstack.ipv6.route import Flowi6, ip6_route_output

    rt = ip6_route_output(ipv6, Flowi6(dest, oif=dev.ifindex))
    try:
        if rt.error or rt.dev is not dev or rt.nexthop(dest) != saddr:
            return DropReason.NOT_SPECIFIED
        f = rt.from_
        if f is None:
            return DropReason.NOT_SPECIFIED
        lladdr: bytes | None = None
        if opts.tgt_lladdr is not None:
            lladdr = ndisc_opt_addr_data(buf, opts.tgt_lladdr, dev.addr_len)
            if lladdr is None:
                return DropReason.NOT_SPECIFIED
        n = ipv6.nd_tbl.lookup_or_create(target, dev, True)
        if n is not None:
            ndisc_update(
                ipv6,
                n,
                lladdr,
                NUD_STALE,
                NEIGH_UPDATE_F_WEAK_OVERRIDE
                | NEIGH_UPDATE_F_OVERRIDE
                | (0 if on_link else NEIGH_UPDATE_F_OVERRIDE_ISROUTER | NEIGH_UPDATE_F_ISROUTER),
            )
        ipv6.rt6_do_redirect(f, dest, target, on_link)
    finally:
        rt.release()
    return None


@kernel("ndisc_netdev_event")
def ndisc_netdev_event(ipv6: Ipv6, event: int, dev: NetDevice) -> None:
    """ndisc's part of a device event. NETDEV_CHANGEADDR: every entry of *dev*
    goes (``neigh_changeaddr``, PERMANENT ones too; proxy entries stay), and
    the route GC runs. NETDEV_CHANGE with the carrier lost evicts *dev*'s
    entries but the PERMANENT ones (``neigh_carrier_down``), unless
    ``ndisc_evict_nocarrier`` is 0 for the device or for ``all``.

    Called after addrconf's notifier (``ndisc_netdev_notifier`` has
    ADDRCONF_NOTIFY_PRIORITY - 5), for NETDEV_CHANGE of an up device only,
    as the kernel sends it. Elsewhere: NETDEV_DOWN's ``neigh_ifdown`` is
    addrconf_ifdown's (``rt6_disable_ip``). Not modelled: the unsolicited NA
    of ``ndisc_notify`` (NETDEV_CHANGEADDR falls through to NETDEV_UP's),
    NETDEV_NOTIFY_PEERS, NETDEV_CHANGE's ``flags_changed & IFF_NOARP``.

    Kernel: ndisc_netdev_event().
    """
    if event == NETDEV_CHANGEADDR:
        ipv6.nd_tbl.neigh_changeaddr(dev)
        ipv6.fib6.fib6_run_gc()  # fib6_run_gc(0, net, false)
    elif event == NETDEV_CHANGE:
        idev = dev.ip6_ptr
        if idev is None:
            evict_nocarrier = True
        else:
            # (a DevConf6 slot without an annotation: read by name)
            all_evict = getattr(ipv6.devconf_all, "ndisc_evict_nocarrier")  # noqa: B009
            evict_nocarrier = bool(idev.cnf.ndisc_evict_nocarrier and all_evict)
        if evict_nocarrier and not dev.carrier:
            ipv6.nd_tbl.neigh_carrier_down(dev)
