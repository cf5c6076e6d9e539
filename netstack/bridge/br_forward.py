"""The forwarding decision's second half: to one port (``br_forward``) or to all (``br_flood``).

Theory of operation: a port gets a frame if it is forwarding, is not the
port the frame came in on (unless hairpin), and has the frame's VLAN
(``should_deliver``). ``br_flood`` walks the ports in order, cloning for
every port but the last (``maybe_deliver`` / ``deliver_clone``), and honours
the per-port ``flood`` / ``mcast_flood`` / ``bcast_flood`` switches (frames
the bridge itself sends are not held back by the last two). The frame then
gets its Ethernet header back and leaves through ``dev_queue_xmit`` on the
port device. Each delivery is counted on the port (``flood_unicast``,
``flood_multicast``, ``flood_broadcast`` or ``forward``).

Kernel: net/bridge/br_forward.c.
"""

from __future__ import annotations

from typing import Final

from netstack.bridge.br_private import (
    BR_BCAST_FLOOD,
    BR_FLOOD,
    BR_HAIRPIN_MODE,
    BR_ISOLATED,
    BR_MCAST_FLOOD,
    BR_STATE_FORWARDING,
    NetBridge,
    NetBridgePort,
)
from netstack.bridge.br_vlan import br_allowed_egress, br_handle_vlan
from netstack.core.dev import dev_queue_xmit, is_skb_forwardable
from netstack.core.netdevice import IFF_UP
from netstack.core.skbuff import DropReason, SkBuff, kfree_skb
from netstack.core.slotcopy import instance_allocator
from netstack.errors import SkbPanic
from netstack.sites import kernel

__all__ = [
    "BR_PKT_BROADCAST",
    "BR_PKT_MULTICAST",
    "BR_PKT_UNICAST",
    "br_dev_queue_push_xmit",
    "br_flood",
    "br_forward",
]

# enum br_pkt_type
BR_PKT_UNICAST: Final = 0
BR_PKT_MULTICAST: Final = 1
BR_PKT_BROADCAST: Final = 2
ETH_HLEN: Final = 14
# object.__new__ for br_flood's written-out skb_clone(); None for the mypyc build's
# native SkBuff (br_flood then calls skb.clone())
_new_skb: Final = instance_allocator(SkBuff)


@kernel("net/bridge/br_forward.c", "should_deliver")
def should_deliver(p: NetBridgePort, skb: SkBuff, src_isolated: bool) -> bool:
    """Kernel: net/bridge/br_forward.c, should_deliver()."""
    return bool(
        (p.flags & BR_HAIRPIN_MODE or skb.dev is not p.dev)
        and p.state == BR_STATE_FORWARDING
        and br_allowed_egress(p.vlgrp, skb)
        and not (src_isolated and p.flags & BR_ISOLATED)
    )


@kernel("net/bridge/br_forward.c", "br_dev_queue_push_xmit")
def br_dev_queue_push_xmit(skb: SkBuff) -> None:
    """Put the Ethernet header back and transmit on the port.

    Kernel: net/bridge/br_forward.c, br_dev_queue_push_xmit().
    """
    skb.data -= ETH_HLEN  # skb_push(skb, ETH_HLEN)
    dev = skb.dev
    assert dev is not None
    if not is_skb_forwardable(dev, skb):
        dev.stats.tx_dropped += 1
        kfree_skb(skb, DropReason.PKT_TOO_BIG)
        return
    dev_queue_xmit(skb)


@kernel("net/bridge/br_forward.c", "__br_forward")
def __br_forward(to: NetBridgePort, skb: SkBuff, local_orig: bool) -> None:
    """Kernel: net/bridge/br_forward.c, __br_forward()."""
    nskb = skb
    # br_handle_vlan()'s first test, here: a frame not VLAN-filtered at input
    # (BR_INPUT_SKB_CB(skb)->vlan_filtered, skb.cb True) passes as it is
    if skb.cb is True:
        vskb = br_handle_vlan(to.br, to, to.vlgrp, skb)
        if vskb is None:
            return
        nskb = vskb
    nskb.dev = to.dev
    if not local_orig and nskb.ip_summed == 2:  # skb_forward_csum(): CHECKSUM_COMPLETE
        nskb.ip_summed = 0
    br_dev_queue_push_xmit(nskb)


@kernel("deliver_clone")
def deliver_clone(prev: NetBridgePort, skb: SkBuff, local_orig: bool) -> None:
    """Kernel: deliver_clone() (``skb_clone`` copies the bridge's cb too)."""
    skb2 = skb.clone()
    skb2.cb = skb.cb
    __br_forward(prev, skb2, local_orig)


@kernel(
    "net/bridge/br_forward.c",
    "br_forward",
    "should_deliver",
    "__br_forward",
    "br_dev_queue_push_xmit",
    "net/core/dev.c",
    "is_skb_forwardable",
)
def br_forward(
    to: NetBridgePort | None, skb: SkBuff, local_rcv: bool, local_orig: bool, src_isolated: bool
) -> None:
    """Send *skb* out of the one port the FDB named (a clone if it also goes up).

    ``should_deliver`` (a static inline) is written out, and for a frame that
    does not go up and was not VLAN-filtered at input so are ``__br_forward``,
    ``br_dev_queue_push_xmit`` and ``is_skb_forwardable`` (none a cost site;
    keep them in step with the functions above, which the other frames take).

    Kernel: net/bridge/br_forward.c, br_forward() / should_deliver() /
    __br_forward() / br_dev_queue_push_xmit(); net/core/dev.c, is_skb_forwardable().
    """
    if to is not None:
        flags = to.flags
        cb = skb.cb
        # should_deliver(): br_allowed_egress() lets an unfiltered frame through
        if (
            (flags & BR_HAIRPIN_MODE or skb.dev is not to.dev)
            and to.state == BR_STATE_FORWARDING
            and (cb is not True or br_allowed_egress(to.vlgrp, skb))
            and not (src_isolated and flags & BR_ISOLATED)
        ):
            to.stats.forward += 1
            if local_rcv:
                deliver_clone(to, skb, local_orig)
            elif cb is True:
                __br_forward(to, skb, local_orig)
            else:
                # __br_forward(): br_handle_vlan() passes an unfiltered frame as it is
                dev = to.dev
                skb.dev = dev
                if not local_orig and skb.ip_summed == 2:  # skb_forward_csum()
                    skb.ip_summed = 0
                # br_dev_queue_push_xmit(): skb_push(skb, ETH_HLEN), is_skb_forwardable()
                d = skb.data - ETH_HLEN
                skb.data = d
                if dev.flags & IFF_UP and (
                    skb.tail - d <= dev.mtu + dev.hard_header_len + 4 or skb.gso_size
                ):
                    dev_queue_xmit(skb)
                else:
                    dev.stats.tx_dropped += 1
                    kfree_skb(skb, DropReason.PKT_TOO_BIG)
            return
    if not local_rcv:
        kfree_skb(skb, DropReason.NOT_SPECIFIED)


@kernel(
    "net/bridge/br_forward.c",
    "br_flood",
    "maybe_deliver",
    "deliver_clone",
    "__br_forward",
    "br_dev_queue_push_xmit",
    "net/core/dev.c",
    "is_skb_forwardable",
    "net/core/skbuff.c",
    "skb_clone",
)
def br_flood(
    br: NetBridge,
    skb: SkBuff,
    pkt_type: int,
    local_rcv: bool,
    local_orig: bool,
    src_isolated: bool = False,
) -> None:
    """Send *skb* to every port that should have it.

    For a frame not VLAN-filtered at input, every port but the last gets its
    clone through ``deliver_clone``, ``__br_forward``, ``br_dev_queue_push_xmit``
    and ``is_skb_forwardable`` written out in the loop (four Python frames less a
    port; none of them is a cost site; keep them in step with the functions
    above, which the last port, a VLAN-filtered frame and ``br_forward`` take),
    and ``skb_clone`` too (``SkBuff.clone``, keep in step; not a cost site): the
    original's fields read once a flood, each clone's stored once.

    Kernel: net/bridge/br_forward.c, br_flood() / maybe_deliver() /
    deliver_clone() / __br_forward() / br_dev_queue_push_xmit();
    net/core/dev.c, is_skb_forwardable(); net/core/skbuff.c, skb_clone().
    """
    prev: NetBridgePort | None = None
    indev = skb.dev  # neither it nor the skb's cb changes until the last port
    from_br = indev is br.dev
    # the port flag that lets this kind of frame flood; frames the bridge itself
    # sends ignore the multicast and broadcast ones
    if pkt_type == BR_PKT_UNICAST:
        flood_flag = BR_FLOOD
    else:
        flood_flag = (
            0 if from_br else BR_MCAST_FLOOD if pkt_type == BR_PKT_MULTICAST else BR_BCAST_FLOOD
        )
    # br_allowed_egress() lets every frame through that was not VLAN-filtered at
    # input (its first test, BR_INPUT_SKB_CB(skb)->vlan_filtered: skb.cb True)
    cb = skb.cb
    vlan_filtered = cb is True
    # what the written-out steps below test of each clone, the same for every port
    # (the original is not touched until the last port)
    d = skb.data - ETH_HLEN  # skb_push(skb, ETH_HLEN)
    tail = skb.tail
    length = tail - d
    gso_size = skb.gso_size
    ip_summed = skb.ip_summed
    if not local_orig and ip_summed == 2:  # skb_forward_csum(): CHECKSUM_COMPLETE
        ip_summed = 0
    # skb_clone() written out below needs the original's fields: read once a flood
    # (keep in step with SkBuff.clone; the mypyc build's native SkBuff calls it)
    new_skb = None if vlan_filtered else _new_skb
    if new_skb is not None:
        if skb._freed:
            raise SkbPanic("skb_clone() of a freed skb")
        ref = skb._dataref
        buf = skb.buf
        dst = skb.dst
        noref = skb.dst_noref
        protocol = skb.protocol
        sk_pkt_type = skb.pkt_type
        mac_header = skb.mac_header
        network_header = skb.network_header
        transport_header = skb.transport_header
        csum_start = skb.csum_start
        csum_offset = skb.csum_offset
        priority = skb.priority
        queue_mapping = skb.queue_mapping
        ignore_df = skb.ignore_df
        vlan_proto = skb.vlan_proto
        encapsulation = skb.encapsulation
        truesize = skb._truesize
        rare = skb.__dict__
    for p in br.port_list:
        flags = p.flags
        if flood_flag and not flags & flood_flag:
            continue
        # should_deliver(), a static inline: no frame of its own per port
        if not (
            (flags & BR_HAIRPIN_MODE or indev is not p.dev)
            and p.state == BR_STATE_FORWARDING
            and (not vlan_filtered or br_allowed_egress(p.vlgrp, skb))
            and not (src_isolated and flags & BR_ISOLATED)
        ):
            continue
        st = p.stats
        if pkt_type == BR_PKT_BROADCAST:
            st.flood_broadcast += 1
        elif pkt_type == BR_PKT_UNICAST:
            st.flood_unicast += 1
        else:
            st.flood_multicast += 1
        if prev is not None:
            if new_skb is not None:
                # deliver_clone(): skb_clone() (which copies the bridge's cb too)
                # written out, each field stored once with the value __br_forward()
                # leaves: br_handle_vlan() passes an unfiltered frame as it is, the
                # device is the port's, skb_forward_csum() and skb_push(skb, ETH_HLEN)
                # of br_dev_queue_push_xmit() applied (a test compares the clone
                # with SkBuff.clone()'s field by field)
                if ref is None:
                    ref = skb._dataref = [1]
                ref[0] += 1
                dev = prev.dev
                skb2 = new_skb(SkBuff)
                skb2.buf = buf
                skb2.data = d
                skb2.tail = tail
                skb2.dev = dev
                skb2.sk = None
                if dst is not None and not noref:
                    dst.hold()  # skb_dst_copy(): the copy holds its own reference (or none)
                skb2.dst = dst
                skb2.dst_noref = noref
                skb2.next = None
                skb2.protocol = protocol
                skb2.pkt_type = sk_pkt_type
                skb2.mac_header = mac_header
                skb2.network_header = network_header
                skb2.transport_header = transport_header
                skb2.ip_summed = ip_summed
                skb2.csum_start = csum_start
                skb2.csum_offset = csum_offset
                skb2.priority = priority
                skb2._freed = False
                skb2._dataref = ref
                skb2.cb = cb
                skb2.queue_mapping = queue_mapping
                skb2.skb_iif = 0
                skb2.gso_size = gso_size
                skb2.ignore_df = ignore_df
                skb2.vlan_proto = vlan_proto
                skb2.encapsulation = encapsulation
                skb2._truesize = truesize
                skb2.dst_pending_confirm = False
                skb2.destructor = None
                skb2.wmem_charge = 0
                skb2.rmem_charge = 0
                if rare:  # the rare fields
                    skb2.__dict__.update(rare)
                # br_dev_queue_push_xmit(): is_skb_forwardable()
                if dev.flags & IFF_UP and (length <= dev.mtu + dev.hard_header_len + 4 or gso_size):
                    dev_queue_xmit(skb2)
                else:
                    dev.stats.tx_dropped += 1
                    kfree_skb(skb2, DropReason.PKT_TOO_BIG)
            elif vlan_filtered:
                deliver_clone(prev, skb, local_orig)
            else:
                # the mypyc build: skb_clone() called (deliver_clone(): it copies the
                # bridge's cb too), then __br_forward()'s changes
                skb2 = skb.clone()
                skb2.cb = cb
                dev = prev.dev
                skb2.dev = dev
                skb2.ip_summed = ip_summed
                skb2.data = d
                if dev.flags & IFF_UP and (length <= dev.mtu + dev.hard_header_len + 4 or gso_size):
                    dev_queue_xmit(skb2)
                else:
                    dev.stats.tx_dropped += 1
                    kfree_skb(skb2, DropReason.PKT_TOO_BIG)
        prev = p
    if prev is None:
        if not local_rcv:
            kfree_skb(skb, DropReason.NOT_SPECIFIED)
        return
    if local_rcv:
        deliver_clone(prev, skb, local_orig)
    else:
        __br_forward(prev, skb, local_orig)
