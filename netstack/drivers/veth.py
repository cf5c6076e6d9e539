"""``veth``: a pair of Ethernet devices, each one's transmit the other's receive.

Theory of operation: ``veth_xmit`` forwards the skb itself to the peer
(``__dev_forward_skb``: scrub it — across hosts the socket, dst and mark are
cleared — and ``eth_type_trans`` it for the peer), puts it on the peer's
256-entry ring and schedules the peer's NAPI, whose poll hands it to
``napi_gro_receive``. A virtual device, so its default qdisc is noqueue
(``IFF_NO_QUEUE``): a full ring drops the packet and counts it as the
sender's ``tx_dropped``. When a real qdisc is attached, a full ring instead
stops the tx queue and returns ``NETDEV_TX_BUSY`` (the qdisc requeues), and
the peer's poll wakes the queue once it has drained — the backpressure of
Linux 6.16+.

Checksums are not touched: a locally built CHECKSUM_PARTIAL packet arrives
CHECKSUM_PARTIAL, which the receiver treats as verified, as in the kernel.

netstack's veth always uses the ring and NAPI (the kernel's mode when GRO or
XDP is enabled on the peer) so that receive is batched; GRO itself follows the
peer's ``rx-gro`` flag.

Kernel: drivers/net/veth.c.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Final

from netstack.core import napi as _napi
from netstack.core.dev import (
    dev_forward_skb,
    napi_gro_receive,
    netdev_update_features,
    netif_carrier_off,
    netif_carrier_on,
    register_netdevice,
)
from netstack.core.dst import skb_dst_drop
from netstack.core.ethernet import eth_type_trans, ether_setup
from netstack.core.features import (
    NETIF_F_FRAGLIST,
    NETIF_F_GRO,
    NETIF_F_GSO_ENCAP_ALL,
    NETIF_F_GSO_SOFTWARE,
    NETIF_F_HIGHDMA,
    NETIF_F_HW_CSUM,
    NETIF_F_HW_VLAN_CTAG_RX,
    NETIF_F_HW_VLAN_CTAG_TX,
    NETIF_F_HW_VLAN_STAG_RX,
    NETIF_F_HW_VLAN_STAG_TX,
    NETIF_F_LLTX,
    NETIF_F_RXCSUM,
    NETIF_F_SCTP_CRC,
    NETIF_F_SG,
)
from netstack.core.napi import BH, BH_DISABLED, Napi
from netstack.core.net import Net, PacketType
from netstack.core.netdevice import (
    IFF_LIVE_ADDR_CHANGE,
    IFF_NO_QUEUE,
    IFF_TX_SKB_SHARING,
    IFF_UP,
    NET_ADDR_RANDOM,
    NET_ADDR_SET,
    NET_XMIT_DROP,
    NETDEV_TX_BUSY,
    NETDEV_TX_OK,
    QUEUE_STATE_DRV_XOFF,
    DevStats,
    NetDevice,
    NetDeviceOps,
    netif_tx_stop_queue,
    netif_tx_wake_queue,
)
from netstack.core.skbuff import (
    PACKET_BROADCAST,
    PACKET_HOST,
    PACKET_MULTICAST,
    PACKET_OTHERHOST,
    DropReason,
    SkBuff,
    kfree_skb,
)
from netstack.drivers.common import eth_random_addr
from netstack.sites import TIMED, kernel, spend
from netstack.wire.ethernet import ETH_HLEN, ETH_MAX_MTU, ETH_P_802_3_MIN

__all__ = ["VETH_FEATURES", "VETH_RING_SIZE", "VethOps", "VethPriv", "veth_newlink"]

VETH_RING_SIZE: Final = 256
# an Ethernet header's destination address and type, read at once (no slice, no shifts)
_ETH_DEST_PROTO: Final[Callable[[bytearray, int], tuple[bytes, int]]] = struct.Struct(
    "!6s6xH"
).unpack_from
VETH_FEATURES: Final = (
    NETIF_F_SG
    | NETIF_F_FRAGLIST
    | NETIF_F_HW_CSUM
    | NETIF_F_RXCSUM
    | NETIF_F_SCTP_CRC
    | NETIF_F_HIGHDMA
    | NETIF_F_GSO_SOFTWARE
    | NETIF_F_GSO_ENCAP_ALL
    | NETIF_F_HW_VLAN_CTAG_TX
    | NETIF_F_HW_VLAN_CTAG_RX
    | NETIF_F_HW_VLAN_STAG_TX
    | NETIF_F_HW_VLAN_STAG_RX
)


class VethPriv:
    """Per-device private data (kernel: ``struct veth_priv`` + its ``veth_rq``)."""

    __slots__ = ("dropped", "napi", "peer", "ring", "rx_drops", "tx_bytes", "tx_packets")

    def __init__(self) -> None:
        self.peer: NetDevice | None = None
        # the ring (ptr_ring) as a list: at most VETH_RING_SIZE entries, so taking
        # the head costs little, and an idle device's empty list is 56 bytes
        # where a deque is 600 (a lab of 10,000 hosts has 20,000 rings)
        self.ring: list[SkBuff] = []
        self.napi: Napi | None = None
        self.dropped = 0
        self.rx_drops = 0
        self.tx_packets = 0
        self.tx_bytes = 0


class VethOps(NetDeviceOps):
    """Kernel: veth_netdev_ops."""

    @kernel("veth_open")
    def ndo_open(self, dev: NetDevice) -> None:
        """Carrier on both ends once both are up. Kernel: veth_open()."""
        peer = dev.priv.peer
        if peer is not None and peer.flags & IFF_UP:
            netif_carrier_on(dev)
            netif_carrier_on(peer)

    @kernel("veth_close")
    def ndo_stop(self, dev: NetDevice) -> None:
        """Kernel: veth_close()."""
        netif_carrier_off(dev)
        peer = dev.priv.peer
        if peer is not None:
            netif_carrier_off(peer)

    @kernel(
        "drivers/net/veth.c",
        "veth_xmit",
        "veth_forward_skb",
        "__veth_xdp_flush",
        "net/core/dev.c",
        "__dev_forward_skb2",
        "is_skb_forwardable",
        "skb_scrub_packet",
        "____napi_schedule",
        "net/ethernet/eth.c",
        "eth_type_trans",
    )
    def ndo_start_xmit(self, skb: SkBuff, dev: NetDevice) -> int:
        """Forward to the peer's ring.

        Kernel: drivers/net/veth.c, veth_xmit() / veth_forward_skb() / __veth_xdp_flush();
        net/core/dev.c, __dev_forward_skb2() / is_skb_forwardable() / skb_scrub_packet() /
        ____napi_schedule(); net/ethernet/eth.c, eth_type_trans().
        """
        if TIMED:
            spend("veth_xmit")
        priv: VethPriv = dev.priv
        rcv = priv.peer
        length = skb.tail - skb.data
        if rcv is None or length < ETH_HLEN:
            kfree_skb(skb, DropReason.DEV_READY if rcv is None else DropReason.PKT_TOO_SMALL)
            priv.dropped += 1
            return NET_XMIT_DROP
        rq: VethPriv = rcv.priv
        ring = rq.ring
        if len(ring) >= VETH_RING_SIZE:
            txq = dev._tx[skb.queue_mapping]
            if not txq.qdisc.can_enqueue:  # qdisc_txq_has_no_queue(): drop
                kfree_skb(skb, DropReason.FULL_RING)
                priv.dropped += 1
                return NET_XMIT_DROP
            netif_tx_stop_queue(txq)  # backpressure to the qdisc
            assert rq.napi is not None
            rq.napi.schedule()
            return NETDEV_TX_BUSY
        # veth_forward_skb() / __dev_forward_skb(): for a forwardable skb with no
        # timestamp or mark to clear, __dev_forward_skb2() with is_skb_forwardable(),
        # skb_scrub_packet() and an Ethernet II frame's eth_type_trans() written out
        # as dev_forward_skb() has them (a frame or two less a packet; keep the two
        # in step); any other skb goes there
        if (
            skb.tstamp
            or skb.mark
            or not rcv.flags & IFF_UP
            or (length > rcv.mtu + rcv.hard_header_len + 4 and not skb.gso_size)
        ):
            if dev_forward_skb(rcv, skb):  # NET_RX_DROP
                priv.dropped += 1
                return NET_XMIT_DROP
        else:
            if TIMED:
                spend("__dev_forward_skb2")
            skb.pkt_type = PACKET_HOST  # skb_scrub_packet()
            skb.ignore_df = False
            skb.dst_pending_confirm = False
            skb.skb_iif = 0
            if skb.dst is not None:
                skb_dst_drop(skb)
            skb.cb = None
            skb.priority = 0  # ____dev_forward_skb()
            buf = skb.buf
            d = skb.data
            # the destination address and the type in one read
            h_dest, proto = _ETH_DEST_PROTO(buf, d)
            if proto < ETH_P_802_3_MIN:  # an 802.3 length: eth_type_trans() tells
                skb.protocol = eth_type_trans(skb, rcv)
            else:
                # eth_type_trans()
                if TIMED:
                    spend("eth_type_trans")
                skb.dev = rcv
                skb.mac_header = d
                skb.data = d + ETH_HLEN
                # eth_skb_pkt_type() (a static inline of etherdevice.h, 6.x): our own
                # address first, the common case; a device's address is never a group
                # one (eth_prepare_mac_addr_change refuses it)
                if h_dest != rcv.dev_addr:
                    if h_dest[0] & 1:
                        if h_dest == rcv.broadcast:
                            skb.pkt_type = PACKET_BROADCAST
                        else:
                            skb.pkt_type = PACKET_MULTICAST
                    else:
                        skb.pkt_type = PACKET_OTHERHOST
                skb.protocol = proto
        ring.append(skb)
        priv.tx_packets += 1
        priv.tx_bytes += length
        napi = rq.napi
        assert napi is not None
        if not napi.scheduled:
            # without GRO the kernel's veth has no NAPI: __netif_rx(), whose softirq
            # runs while the reader reads on another CPU; under a real qdisc the ring
            # and its backpressure stay batched. Decided once a poll, by the packet
            # that schedules it (the poll reads it when it starts)
            napi.rx_per_xmit = (
                not rcv.features & NETIF_F_GRO and not dev._tx[skb.queue_mapping].qdisc.can_enqueue
            )
            bh = BH
            if bh.state == BH_DISABLED and rcv.net.polls_at_bh_enable and napi.cpus.model is None:
                # __veth_xdp_flush() / napi_schedule() for a transmit whose
                # local_bh_enable polls the peer (every transmit outside softirq, the
                # default; netstack.core.napi, "Polls at local_bh_enable"): the
                # instance joins this CPU's poll_list (____napi_schedule). Napi.schedule()
                # written out for that case (a frame less a packet; keep in step)
                napi.scheduled = True
                napi.schedules += 1
                bh.poll_list.append(napi)
            else:
                napi.schedule()
        return NETDEV_TX_OK

    @kernel("veth_get_stats64")
    def ndo_get_stats64(self, dev: NetDevice, stats: DevStats) -> None:
        """The peer's tx counters are this end's rx ones. Kernel: veth_get_stats64()."""
        priv: VethPriv = dev.priv
        stats.tx_packets += priv.tx_packets
        stats.tx_bytes += priv.tx_bytes
        stats.tx_dropped += priv.dropped
        stats.rx_dropped += priv.rx_drops
        peer = priv.peer
        if peer is not None:
            pp: VethPriv = peer.priv
            stats.rx_packets += pp.tx_packets
            stats.rx_bytes += pp.tx_bytes

    def ndo_get_iflink(self, dev: NetDevice) -> int:
        peer = dev.priv.peer
        return peer.ifindex if peer is not None else 0

    def ndo_get_peer_dev(self, dev: NetDevice) -> NetDevice | None:
        peer: NetDevice | None = dev.priv.peer
        return peer


VETH_OPS: Final = VethOps()


@kernel(
    "drivers/net/veth.c",
    "veth_poll",
    "net/core/gro.c",
    "napi_gro_receive",
    "net/core/dev.c",
    "__netif_receive_skb_core",
    "include/linux/netdevice.h",
    "netif_tx_queue_stopped",
)
def veth_poll(napi: Napi, budget: int) -> int:
    """Drain the ring into the stack; wake the peer's stopped queue.

    Kernel: drivers/net/veth.c, veth_poll(); net/core/gro.c, napi_gro_receive();
    net/core/dev.c, __netif_receive_skb_core(); include/linux/netdevice.h,
    netif_tx_queue_stopped().
    """
    if TIMED:
        spend("veth_poll")
    dev = napi.dev
    priv: VethPriv = dev.priv
    ring = priv.ring
    done = 0
    # functional mode, no GRO: a poll stops after in-order TCP data
    yield_on_data = napi.yield_on_data
    mark = _napi.data_ready_count if yield_on_data else 0
    net = dev.net
    # napi_gro_receive() with GRO off on the device (veth's default) and
    # __netif_receive_skb_core()'s one round with nothing to do in it (no tag, tap
    # or rx_handler), written out as napi_gro_receive() has them (a frame less a
    # packet; keep the two in step); any other skb goes there. What the device
    # decides is read once a poll: nothing the poll runs (softirq code, no
    # awaits) sets GRO, an rx_handler or a tap
    plain = not (
        (napi.gro is not None and dev.features & NETIF_F_GRO)
        or dev.rx_handler is not None
        or net.ptype_all
        or dev.ptype_all
    )
    while ring and done < budget:
        skb = ring.pop(0)
        done += 1
        proto = skb.protocol
        if not plain or proto == 0x8100 or proto == 0x88A8 or skb.vlan_proto or skb.dev is not dev:
            napi_gro_receive(napi, skb)
        else:
            if TIMED:
                spend("napi_gro_receive")
                spend("__netif_receive_skb_core")
            skb.network_header = skb.data  # skb_reset_network_header
            if skb.transport_header < 0:
                skb.transport_header = skb.data
            skb.skb_iif = dev.ifindex
            handlers = net.ptype_base.get(proto)  # deliver_ptype_list_skb()
            matched: PacketType | None = None
            if handlers:
                for pt in handlers:
                    if pt.dev is None or pt.dev is dev:
                        if matched is not None:
                            matched.func(skb.clone(), dev, matched, dev)
                        matched = pt
            if matched is not None:
                func = matched.func  # a local: a call on an instance attribute is slower
                func(skb, dev, matched, dev)
            else:
                dev.stats.rx_nohandler += 1
                kfree_skb(skb, DropReason.UNHANDLED_PROTO)
        if yield_on_data and _napi.data_ready_count != mark and ring:
            napi.cut_short = True
            break
    # release backpressure per poll: the peer's stopped queue is woken;
    # netif_tx_queue_stopped() (a test_bit) written out (keep in step)
    peer = priv.peer
    if peer is not None and peer._tx:
        txq = peer._tx[0]
        if TIMED:
            spend("netif_tx_queue_stopped")
        if txq.state & QUEUE_STATE_DRV_XOFF:
            netif_tx_wake_queue(txq)
    return done


@kernel("drivers/net/veth.c", "veth_setup")
def veth_setup(dev: NetDevice) -> None:
    """Kernel: drivers/net/veth.c, veth_setup()."""
    ether_setup(dev)
    dev.priv_flags &= ~IFF_TX_SKB_SHARING
    dev.priv_flags |= IFF_LIVE_ADDR_CHANGE | IFF_NO_QUEUE
    dev.features |= NETIF_F_LLTX | VETH_FEATURES
    dev.vlan_features = dev.features & ~(
        NETIF_F_HW_VLAN_CTAG_TX
        | NETIF_F_HW_VLAN_CTAG_RX
        | NETIF_F_HW_VLAN_STAG_TX
        | NETIF_F_HW_VLAN_STAG_RX
    )
    dev.max_mtu = ETH_MAX_MTU
    dev.hw_features = VETH_FEATURES
    dev.hw_enc_features = VETH_FEATURES


@kernel("drivers/net/veth.c", "veth_disable_gro")
def veth_disable_gro(dev: NetDevice) -> None:
    """GRO off, and not wanted either: a later ``ethtool -K`` leaves it off.

    Kernel: drivers/net/veth.c, veth_disable_gro().
    """
    dev.features &= ~NETIF_F_GRO
    dev.wanted_features &= ~NETIF_F_GRO
    netdev_update_features(dev)


def _alloc(net: Net, name: str, addr: bytes | None) -> NetDevice:
    dev = NetDevice(net, name, VETH_OPS, kind="veth")
    veth_setup(dev)
    dev.priv = VethPriv()
    dev.dev_addr = addr if addr is not None else eth_random_addr(net.rng)
    dev.addr_assign_type = NET_ADDR_SET if addr is not None else NET_ADDR_RANDOM
    return dev


@kernel("drivers/net/veth.c", "veth_newlink")
def veth_newlink(
    net: Net,
    name: str,
    peer_net: Net,
    peer_name: str,
    *,
    addr: bytes | None = None,
    peer_addr: bytes | None = None,
    mtu: int | None = None,
) -> tuple[NetDevice, NetDevice]:
    """Create a veth pair, *name* in *net* and *peer_name* in *peer_net*.

    Both ends start down and without carrier, as ``ip link add … type veth``
    leaves them. Kernel: drivers/net/veth.c, veth_newlink().
    """
    peer = _alloc(peer_net, peer_name, peer_addr)
    dev = _alloc(net, name, addr)
    if mtu is not None:
        dev.mtu = peer.mtu = mtu
    register_netdevice(peer)
    try:
        register_netdevice(dev)
    except Exception:
        from netstack.core.dev import unregister_netdevice

        unregister_netdevice(peer)
        raise
    for a, b in ((dev, peer), (peer, dev)):
        a.priv.peer = b
        veth_disable_gro(a)  # "keep GRO disabled by default"
        a.iflink = b.ifindex
        netif_carrier_off(a)
        napi = Napi(a, veth_poll, name=f"{a.net.name}/napi/{a.name}")
        napi.priv = a.priv
        a.priv.napi = napi
        a.napi_list.append(napi)
        a.net.start_napi(napi)
    return dev, peer
