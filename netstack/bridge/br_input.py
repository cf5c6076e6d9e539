"""Frames arriving on a bridge port: ``br_handle_frame``, learning, the forwarding decision.

Theory of operation: enslaving a device installs :func:`br_handle_frame` as
its ``rx_handler``, which ``__netif_receive_skb_core`` calls before any
protocol handler. It drops frames with a multicast or zero source MAC,
passes link-local frames (``01:80:c2:00:00:0X``) up — BPDUs reach the STP
code that way — unless STP is off, in which case BPDUs are *forwarded*
like any multicast, as 802.1D requires of a bridge that does not run STP.
Everything else goes to :func:`br_handle_frame_finish` if the port is
learning or forwarding: VLAN ingress filtering, learning the source MAC,
then the decision: broadcast floods (and goes up), multicast floods (and
goes up: no querier, so no snooping), unicast to a known port is forwarded,
to a local address goes up (``br_pass_frame_up``: the skb re-enters the
receive core as the bridge device's, so the host's IP stack sees ``br0``),
to an unknown address floods. A learning port learns but forwards nothing.

**The softirq's time limit.** In functional mode forwarding costs no virtual
time, so frames circling a loop (a ring without STP) would run forever at
one instant and the lab could not advance. The kernel's receive softirq
stops after ``netdev_budget`` packets (300) or 2 ms and leaves the rest to
ksoftirqd; the bridge keeps that bound: after ``net.core.netdev_budget``
frames in one jiffy, further frames wait on a backlog (at most
``net.core.netdev_max_backlog``, 1000; beyond it they are dropped and
counted, ``softnet_dropped``) for the next jiffy (``time_squeeze``). A storm
therefore runs at 300 frames per jiffy per bridge, virtual time advances, and
queues fill and drop as on Linux.

Kernel: net/bridge/br_input.c, net/core/dev.c (net_rx_action's time limit).
"""

from __future__ import annotations

from typing import Final

from netstack.bridge.br_fdb import br_fdb_update
from netstack.bridge.br_forward import (
    BR_PKT_BROADCAST,
    BR_PKT_MULTICAST,
    BR_PKT_UNICAST,
    br_flood,
    br_forward,
)
from netstack.bridge.br_private import (
    BR_ISOLATED,
    BR_LEARNING,
    BR_NO_STP,
    BR_STATE_DISABLED,
    BR_STATE_FORWARDING,
    BR_STATE_LEARNING,
    NetBridge,
    NetBridgePort,
)
from netstack.bridge.br_vlan import br_allowed_egress, br_allowed_ingress, br_handle_vlan
from netstack.core.dev import (
    RX_HANDLER_CONSUMED,
    RX_HANDLER_PASS,
    deliver_ptype_list_skb,
    netif_receive_skb,
)
from netstack.core.skbuff import PACKET_HOST, PACKET_LOOPBACK, DropReason, SkBuff, kfree_skb

__all__ = ["br_handle_frame", "br_handle_frame_finish", "br_pass_frame_up"]

_BCAST: Final = b"\xff\xff\xff\xff\xff\xff"
_LINK_LOCAL: Final = b"\x01\x80\xc2\x00\x00"
ETH_P_PAUSE: Final = 0x8808


def br_pass_frame_up(skb: SkBuff, br: NetBridge) -> None:
    """Deliver to the host: the skb becomes the bridge device's and is received again.

    Kernel: net/bridge/br_input.c, br_pass_frame_up().
    """
    brdev = br.dev
    st = brdev.stats
    st.rx_packets += 1
    st.rx_bytes += skb.tail - skb.data
    if not brdev.flags & 0x100 and not br_allowed_egress(br.vlgrp, skb):  # IFF_PROMISC
        kfree_skb(skb, DropReason.VLAN_FILTER)
        return
    skb.dev = brdev
    nskb = br_handle_vlan(br, None, br.vlgrp, skb)
    if nskb is None:
        return
    nskb.cb = None
    netif_receive_skb(nskb)


def br_handle_frame_finish(skb: SkBuff, p: NetBridgePort) -> None:
    """VLAN ingress, learning, and the forwarding decision.

    Kernel: net/bridge/br_input.c, br_handle_frame_finish().
    """
    state = p.state
    if state == BR_STATE_DISABLED:
        p.br.rx_dropped_stp_state += 1
        kfree_skb(skb, DropReason.BRIDGE_INGRESS_STP_STATE)
        return
    br = p.br
    vid = br_allowed_ingress(br, p.vlgrp, skb)
    if vid < 0:
        return
    buf = skb.buf
    m = skb.mac_header
    if p.flags & BR_LEARNING:  # "insert into forwarding database after filtering"
        br_fdb_update(br, p, bytes(buf[m + 6 : m + 12]), vid, 0)
    brdev = br.dev
    promisc = bool(brdev.flags & 0x100)
    local_rcv = promisc
    if buf[m] & 1:
        if buf[m : m + 6] == _BCAST:
            pkt_type = BR_PKT_BROADCAST
            local_rcv = True
        else:
            pkt_type = BR_PKT_MULTICAST
            # no IGMP/MLD querier on the segment: multicast floods and goes up
            local_rcv = True
            brdev.stats.multicast += 1
    else:
        pkt_type = BR_PKT_UNICAST
    if state == BR_STATE_LEARNING:
        br.rx_dropped_stp_state += 1
        kfree_skb(skb, DropReason.BRIDGE_INGRESS_STP_STATE)
        return
    isolated = bool(p.flags & BR_ISOLATED)
    if pkt_type == BR_PKT_UNICAST:
        dst = br.fdb.get((bytes(buf[m : m + 6]), vid))
        if dst is not None:
            if dst.flags & 0x1:  # BR_FDB_LOCAL
                br_pass_frame_up(skb, br)
                return
            now = brdev.net.clock.jiffies
            if dst.used != now:
                dst.used = now
            br_forward(dst.dst, skb, local_rcv, False, isolated)
            if local_rcv:
                br_pass_frame_up(skb, br)
            return
    br_flood(br, skb, pkt_type, local_rcv, False, isolated)
    if local_rcv:
        br_pass_frame_up(skb, br)


def _br_handle_local_finish(skb: SkBuff, p: NetBridgePort) -> None:
    """Learn from a link-local frame going up. Kernel: __br_handle_local_finish()."""
    if p.flags & BR_LEARNING and p.state in (BR_STATE_LEARNING, BR_STATE_FORWARDING):
        vid = 0
        if p.br.vlan_enabled:
            vid = (skb.vlan_tci & 0x0FFF) if skb.vlan_proto else p.vlgrp.pvid
            if not vid or p.vlgrp.find(vid) is None:
                return  # br_should_learn()
        m = skb.mac_header
        br_fdb_update(p.br, p, bytes(skb.buf[m + 6 : m + 12]), vid, 0)


def br_handle_frame(skb: SkBuff) -> tuple[int, SkBuff | None]:
    """The rx_handler of every bridge port. Kernel: net/bridge/br_input.c, br_handle_frame()."""
    if skb.pkt_type == PACKET_LOOPBACK:
        return RX_HANDLER_PASS, skb
    dev = skb.dev
    assert dev is not None
    p: NetBridgePort = dev.rx_handler_data
    br = p.br
    buf = skb.buf
    m = skb.mac_header
    if buf[m + 6] & 1 or buf[m + 6 : m + 12] == b"\x00\x00\x00\x00\x00\x00":
        kfree_skb(skb, DropReason.MAC_INVALID_SOURCE)  # !is_valid_ether_addr(h_source)
        return RX_HANDLER_CONSUMED, None
    # the softirq's time limit (see the module docstring)
    net = br.dev.net
    now = net.clock.jiffies
    if now != br.softirq_jiffy:
        br.softirq_jiffy = now
        br.softirq_count = 0
    br.softirq_count += 1
    if br.softirq_count > net.netdev_budget and not br.softirq_draining:
        br_backlog_enqueue(br, skb)
        return RX_HANDLER_CONSUMED, None
    skb.cb = None  # memset(skb->cb, 0, sizeof(struct br_input_skb_cb))
    if buf[m : m + 5] == _LINK_LOCAL and not buf[m + 5] & 0xF0:
        last = buf[m + 5]
        fwd_mask = br.group_fwd_mask_required | p.group_fwd_mask
        if last == 0x00:  # Bridge Group Address (STP)
            if br.stp_enabled == BR_NO_STP or fwd_mask & 1:
                return _forward(skb, p, br)
            _br_handle_local_finish(skb, p)
            return RX_HANDLER_PASS, skb
        if last == 0x01:  # IEEE MAC (Pause)
            kfree_skb(skb, DropReason.MAC_IEEE_MAC_CONTROL)
            return RX_HANDLER_CONSUMED, None
        fwd_mask |= br.group_fwd_mask
        if fwd_mask & (1 << last):
            return _forward(skb, p, br)
        if p.state != BR_STATE_DISABLED:
            _br_handle_local_finish(skb, p)
        return RX_HANDLER_PASS, skb
    return _forward(skb, p, br)


def _forward(skb: SkBuff, p: NetBridgePort, br: NetBridge) -> tuple[int, SkBuff | None]:
    """The ``forward:`` label of br_handle_frame: by port state."""
    state = p.state
    m = skb.mac_header
    if state == BR_STATE_FORWARDING or state == BR_STATE_LEARNING:
        if skb.buf[m : m + 6] == br.dev.dev_addr:
            skb.pkt_type = PACKET_HOST
        br_handle_frame_finish(skb, p)
        return RX_HANDLER_CONSUMED, None
    if state == BR_STATE_DISABLED:
        # br_handle_local_finish() learns nothing on a disabled port; the frame
        # goes up the port's own stack
        if skb.buf[m : m + 6] == br.dev.dev_addr:
            skb.pkt_type = PACKET_HOST
        return RX_HANDLER_PASS, skb
    br.rx_dropped_stp_state += 1
    kfree_skb(skb, DropReason.BRIDGE_INGRESS_STP_STATE)
    return RX_HANDLER_CONSUMED, None


# -- the backlog behind the softirq's time limit -------------------------------------------------
def br_backlog_enqueue(br: NetBridge, skb: SkBuff) -> None:
    """Defer a frame to the next jiffy, or drop it when the backlog is full."""
    net = br.dev.net
    if len(br.backlog) >= net.netdev_max_backlog:
        br.softnet_dropped += 1
        br.dev.stats.rx_dropped += 1
        kfree_skb(skb, DropReason.CPU_BACKLOG)
        return
    if not br.backlog:
        br.time_squeeze += 1
    br.backlog.append(skb)
    if not br.backlog_timer.pending:
        br.backlog_timer.mod(net.clock.jiffies + 1)


def br_backlog_run(br: NetBridge) -> None:
    """ksoftirqd's turn: this jiffy's budget of deferred frames. Timer callback."""
    net = br.dev.net
    backlog = br.backlog
    budget = net.netdev_budget
    br.softirq_jiffy = net.clock.jiffies
    br.softirq_count = 0
    br.softirq_draining = True
    try:
        while backlog and br.softirq_count < budget:
            skb = backlog.popleft()
            br.softirq_count += 1
            dev = skb.dev
            if dev is None or dev.rx_handler is not br_handle_frame:
                kfree_skb(skb, DropReason.DEV_READY)  # the port left meanwhile
                continue
            ret, rskb = br_handle_frame(skb)
            if ret == RX_HANDLER_PASS and rskb is not None:
                # a link-local frame (a BPDU) continues to the protocol handlers
                deliver_ptype_list_skb(rskb, dev)
    finally:
        br.softirq_draining = False
    if backlog:  # out of budget again: ksoftirqd comes back next jiffy
        br.time_squeeze += 1
        br.backlog_timer.mod(net.clock.jiffies + 1)
