"""MLDv2 reports a host sends for the groups it joins (RFC 3810), as Linux does.

Theory of operation: a group joined on a device (``ipv6_dev_mc_inc``: the
solicited-node group of every address in ``addrconf_dad_begin``, ff02::2 on
a router, a socket's ``IPV6_ADD_MEMBERSHIP``) is "added" to MLD
(``igmp6_group_added``) when the device is up and the group is reportable —
not ff02::1, not interface-local (``MAF_NOREPORT``). In MLDv2 mode the group
gets ``mca_crcount = mc_qrv`` (robustness 2) state-change retransmissions and
the device's interface-change work (``mld_ifc_event``) runs 2 jiffies later,
then again after a random part of ``mldv2_unsolicited_report_interval``
(1 s) until ``mc_ifc_count`` (also ``mc_qrv``) runs out; each run sends one
report (``mld_send_cr``) with a CHANGE_TO_EXCLUDE record of every group
still owing retransmissions, newest group first.

While the link-local address is tentative, reports leave from ``::``
(``mld_sendpack`` finds no usable link-local). When DAD of the first
link-local completes, ``ipv6_mc_dad_complete`` resends the state of every
reportable group from the link-local (``mld_send_initial_cr``) at once and
``mc_qrv - 1`` more times, a random part of the interval apart. So a
device brought up with one EUI-64 link-local address sends four reports of
76 bytes, as Linux 6.x does on a veth. Device up (``ipv6_find_idev`` →
``ipv6_mc_up``) re-adds every group; device down (``ipv6_mc_down``) stops
the pending works.

Each report is IPv6 (hop limit 1) + a hop-by-hop header with the router
alert option + ICMPv6 type 143, to ff02::16, counted as ``Ip6OutRequests``,
``Icmp6OutMsgs`` and ``Icmp6OutMLDv2Reports``/``Icmp6OutType143``.

Not emulated: MLDv1 (``force_mld_version=1`` sends nothing), queries and
the reports that answer them, source filters (every group is EXCLUDE {}),
and the leave records (CHANGE_TO_INCLUDE {}) of a group left while up.

Kernel: net/ipv6/mcast.c, net/ipv6/addrconf.c (ipv6_mc_dad_complete's caller).
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Final

from netstack.core.netdevice import IFF_UP
from netstack.core.skbuff import SkBuff
from netstack.sites import kernel
from netstack.wire.checksum import csum_partial
from netstack.wire.ethernet import ETH_P_IPV6
from netstack.wire.icmpv6 import ICMPV6_MLD2_REPORT
from netstack.wire.ipv6 import (
    IN6ADDR_LINKLOCAL_ALLNODES,
    IPPROTO_ICMPV6,
    IPV6_ADDR_SCOPE_LINKLOCAL,
    IPV6_HLEN,
    csum_ipv6_magic,
    ip6_flow_hdr,
    ipv6_addr_mc_scope,
    put_addr,
)
from netstack.wire.rtnetlink import IFA_F_TENTATIVE

if TYPE_CHECKING:
    from netstack.core.netdevice import NetDevice
    from netstack.core.timer import TimerList
    from netstack.ipv6.addrconf import Inet6Dev
    from netstack.ipv6.netns import Ipv6

MLD_QRV_DEFAULT: Final = 2  # sysctl_mld_qrv
MLD2_CHANGE_TO_EXCLUDE: Final = 4
MLD2_ALL_MCR: Final = 0xFF02_0000_0000_0000_0000_0000_0000_0016  # ff02::16
NEXTHDR_HOP: Final = 0
# hop-by-hop: next header ICMPv6, length 0, router alert (MLD), PadN
_HBH_RA: Final = bytes((IPPROTO_ICMPV6, 0, 5, 2, 0, 0, 1, 0))
MLD2_REPORT_HLEN: Final = 8
MLD2_GREC_LEN: Final = 20
_H: Final = struct.Struct("!H")
_HH: Final = struct.Struct("!HH")
_TC_PRIO_CONTROL: Final = 7


@kernel("net/ipv6/mcast.c", "mld_in_v1_mode")
def mld_in_v1_mode(idev: Inet6Dev) -> bool:
    """MLDv1 only when forced (no querier is ever seen here).

    Kernel: net/ipv6/mcast.c, mld_in_v1_mode().
    """
    all_ = idev.ipv6.devconf_all.force_mld_version
    forced = idev.cnf.force_mld_version or all_
    return bool(forced == 1)


@kernel("net/ipv6/mcast.c", "unsolicited_report_interval")
def unsolicited_report_interval(idev: Inet6Dev) -> int:
    """The unsolicited report interval in jiffies (at least 1).

    Kernel: net/ipv6/mcast.c, unsolicited_report_interval().
    """
    ms = (
        idev.cnf.mldv1_unsolicited_report_interval
        if mld_in_v1_mode(idev)
        else idev.cnf.mldv2_unsolicited_report_interval
    )
    iv = ms * idev.ipv6.net.clock.hz // 1000
    return iv if iv > 0 else 1


def _noreport(group: int) -> bool:
    """``MAF_NOREPORT``: all-nodes and scopes below link-local are never reported."""
    return (
        group == IN6ADDR_LINKLOCAL_ALLNODES or ipv6_addr_mc_scope(group) < IPV6_ADDR_SCOPE_LINKLOCAL
    )


class MldState:
    """The MLD fields of ``struct inet6_dev`` and the groups' ``mca_crcount``.

    The two delayed works are made the first time one is armed: most devices
    of a large lab never send a report (IPv6 disabled, or a loopback)."""

    __slots__ = (
        "_dad_work",
        "_ifc_work",
        "crcount",
        "idev",
        "ipv6",
        "mc_dad_count",
        "mc_ifc_count",
        "mc_qrv",
    )

    def __init__(self, ipv6: Ipv6, idev: Inet6Dev) -> None:
        self.ipv6 = ipv6
        self.idev = idev
        self.mc_qrv = MLD_QRV_DEFAULT
        self.mc_ifc_count = 0
        self.mc_dad_count = 0
        self.crcount: dict[int, int] = {}  # group -> mca_crcount
        self._ifc_work: TimerList | None = None
        self._dad_work: TimerList | None = None

    @property
    def ifc_work(self) -> TimerList:
        """``mc_ifc_work``."""
        work = self._ifc_work
        if work is None:
            ipv6, idev = self.ipv6, self.idev
            work = self._ifc_work = ipv6.net.timers.timer(
                lambda: mld_ifc_work(ipv6, idev), "mld_ifc"
            )
        return work

    @property
    def dad_work(self) -> TimerList:
        """``mc_dad_work``."""
        work = self._dad_work
        if work is None:
            ipv6, idev = self.ipv6, self.idev
            work = self._dad_work = ipv6.net.timers.timer(
                lambda: mld_dad_work(ipv6, idev), "mld_dad"
            )
        return work


def _start_work(ipv6: Ipv6, work: object, delay: int) -> None:
    """``mld_*_start_work``: run in ``get_random_u32_below(delay) + 2`` jiffies."""
    tv = ipv6.net.rng.randrange(delay) if delay > 1 else 0
    work.mod(ipv6.net.clock.jiffies + tv + 2)  # type: ignore[attr-defined]


@kernel("net/ipv6/mcast.c", "igmp6_group_added")
def igmp6_group_added(ipv6: Ipv6, idev: Inet6Dev, group: int) -> None:
    """A group joined (or the device came up with it): report the change.

    Kernel: net/ipv6/mcast.c, igmp6_group_added().
    """
    if not idev.dev.flags & IFF_UP or _noreport(group):
        return
    if mld_in_v1_mode(idev):
        return  # MLDv1's igmp6_join_group: not emulated
    idev.mld.crcount[group] = idev.mld.mc_qrv  # mca_sfmode == MCAST_EXCLUDE
    mld_ifc_event(ipv6, idev)


@kernel("net/ipv6/mcast.c", "mld_ifc_event")
def mld_ifc_event(ipv6: Ipv6, idev: Inet6Dev) -> None:
    """Kernel: net/ipv6/mcast.c, mld_ifc_event()."""
    if mld_in_v1_mode(idev):
        return
    idev.mld.mc_ifc_count = idev.mld.mc_qrv
    _start_work(ipv6, idev.mld.ifc_work, 1)


@kernel("net/ipv6/mcast.c", "mld_ifc_work")
def mld_ifc_work(ipv6: Ipv6, idev: Inet6Dev) -> None:
    """Kernel: net/ipv6/mcast.c, mld_ifc_work()."""
    if idev.dead:
        return
    mld_send_cr(ipv6, idev)
    mld = idev.mld
    if mld.mc_ifc_count:
        mld.mc_ifc_count -= 1
        if mld.mc_ifc_count:
            _start_work(ipv6, mld.ifc_work, unsolicited_report_interval(idev))


@kernel("net/ipv6/mcast.c", "mld_send_cr")
def mld_send_cr(ipv6: Ipv6, idev: Inet6Dev) -> None:
    """One report with a record of every group still owing a retransmission.

    Kernel: net/ipv6/mcast.c, mld_send_cr().
    """
    crcount = idev.mld.crcount
    groups: list[int] = []
    for group in reversed(list(idev.mc_list)):  # the kernel's list: newest first
        if crcount.get(group, 0) > 0:
            groups.append(group)
            crcount[group] -= 1
    if groups:
        mld_sendpack(ipv6, idev, groups)


@kernel("net/ipv6/mcast.c", "ipv6_mc_dad_complete")
def ipv6_mc_dad_complete(ipv6: Ipv6, idev: Inet6Dev) -> None:
    """The link-local is usable: resend every group's state from it.

    Kernel: net/ipv6/mcast.c, ipv6_mc_dad_complete().
    """
    mld = idev.mld
    mld.mc_dad_count = mld.mc_qrv
    if mld.mc_dad_count:
        mld_send_initial_cr(ipv6, idev)
        mld.mc_dad_count -= 1
        if mld.mc_dad_count:
            _start_work(ipv6, mld.dad_work, unsolicited_report_interval(idev))


@kernel("net/ipv6/mcast.c", "mld_dad_work")
def mld_dad_work(ipv6: Ipv6, idev: Inet6Dev) -> None:
    """Kernel: net/ipv6/mcast.c, mld_dad_work()."""
    if idev.dead:
        return
    mld_send_initial_cr(ipv6, idev)
    mld = idev.mld
    if mld.mc_dad_count:
        mld.mc_dad_count -= 1
        if mld.mc_dad_count:
            _start_work(ipv6, mld.dad_work, unsolicited_report_interval(idev))


@kernel("net/ipv6/mcast.c", "mld_send_initial_cr")
def mld_send_initial_cr(ipv6: Ipv6, idev: Inet6Dev) -> None:
    """Kernel: net/ipv6/mcast.c, mld_send_initial_cr()."""
    if mld_in_v1_mode(idev):
        return
    groups = [g for g in reversed(list(idev.mc_list)) if not _noreport(g)]
    if groups:
        mld_sendpack(ipv6, idev, groups)


@kernel("net/ipv6/mcast.c", "ipv6_mc_up")
def ipv6_mc_up(ipv6: Ipv6, idev: Inet6Dev) -> None:
    """Device up: every group is added again. Kernel: net/ipv6/mcast.c, ipv6_mc_up()."""
    idev.mld.mc_qrv = MLD_QRV_DEFAULT  # ipv6_mc_reset()
    for group in list(idev.mc_list):
        igmp6_group_added(ipv6, idev, group)


@kernel("net/ipv6/mcast.c", "ipv6_mc_down")
def ipv6_mc_down(idev: Inet6Dev) -> None:
    """Device down: the pending reports are dropped. Kernel: net/ipv6/mcast.c, ipv6_mc_down()."""
    mld = idev.mld
    mld.mc_ifc_count = 0
    if mld._ifc_work is not None:  # never made, never armed
        mld._ifc_work.delete()
    if mld._dad_work is not None:
        mld._dad_work.delete()


@kernel("net/ipv6/mcast.c", "mld_newpack", "add_grec", "mld_sendpack")
def mld_sendpack(ipv6: Ipv6, idev: Inet6Dev, groups: list[int]) -> None:
    """Build and send one MLDv2 report with a CHANGE_TO_EXCLUDE {} record per group.

    Kernel: net/ipv6/mcast.c, mld_newpack(), add_grec(), mld_sendpack().
    """
    from netstack.ipv6.ndisc import icmp6_dst_alloc

    dev: NetDevice = idev.dev
    saddr = ipv6.addrconf.ipv6_get_lladdr(dev, IFA_F_TENTATIVE)
    if saddr is None:
        saddr = 0  # "use unspecified address as the source address"
    mldlen = MLD2_REPORT_HLEN + MLD2_GREC_LEN * len(groups)
    payload = len(_HBH_RA) + mldlen
    hlen = ((dev.hard_header_len + dev.needed_headroom) & ~15) + 16  # LL_RESERVED_SPACE
    total = IPV6_HLEN + payload
    skb = SkBuff(bytearray(hlen + total), hlen, hlen + total)
    skb.network_header = hlen
    th = hlen + IPV6_HLEN + len(_HBH_RA)
    skb.transport_header = th
    skb.protocol = ETH_P_IPV6
    skb.dev = dev
    skb.priority = _TC_PRIO_CONTROL
    buf = skb.buf
    ip6_flow_hdr(buf, hlen, 0, 0)
    _HH.pack_into(buf, hlen + 4, payload, (NEXTHDR_HOP << 8) | 1)  # ip6_mc_hdr: hop limit 1
    put_addr(buf, hlen + 8, saddr)
    put_addr(buf, hlen + 24, MLD2_ALL_MCR)
    buf[hlen + IPV6_HLEN : th] = _HBH_RA
    buf[th] = ICMPV6_MLD2_REPORT
    _H.pack_into(buf, th + 6, len(groups))  # ngrec
    off = th + MLD2_REPORT_HLEN
    for group in groups:
        buf[off] = MLD2_CHANGE_TO_EXCLUDE  # aux words 0, no sources
        put_addr(buf, off + 4, group)
        off += MLD2_GREC_LEN
    c = csum_ipv6_magic(
        saddr, MLD2_ALL_MCR, mldlen, IPPROTO_ICMPV6, csum_partial(buf, th, th + mldlen)
    )
    _H.pack_into(buf, th + 2, c)
    ipv6.ip6_mib.OutRequests += 1
    skb.dst = icmp6_dst_alloc(ipv6, dev)
    rc = ipv6.dst_output(skb)
    if rc >= 0:
        ipv6.icmp6msg.out_types[ICMPV6_MLD2_REPORT] += 1
        ipv6.icmp6_mib.OutMsgs += 1
    else:
        ipv6.ip6_mib.OutDiscards += 1
