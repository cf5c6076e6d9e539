"""GRO and GSO for Ethernet frames carried inside a tunnel (``ETH_P_TEB``).

Theory of operation: a gretap packet's GRE header says ``ETH_P_TEB``
(0x6558, "transparent Ethernet bridging"): an Ethernet frame follows. The
``eth_packet_offload`` entry of ``offload_base`` lets GRO look through it:
``gre_gro_receive`` finds it by the GRE protocol and calls
``eth_gro_receive``, which makes every held packet whose inner Ethernet
header (destination, source, EtherType) differs another flow, pulls the 14
bytes and hands the frame's payload to the offload of its EtherType (IPv4 or
IPv6), whose own rules decide the merge. ``eth_gro_complete`` notes where the
inner frame starts (``inner_mac_header``) and completes the inner L3 header.
So a TCP flow over gretap reaches the decapsulating host as ~64 KB
aggregates, as a flow over gre does.

GSO: when a GRE aggregate of Ethernet frames leaves through a device without
GRE segmentation (a router that merged it, forwarding it on),
``gre_gso_segment`` calls ``teb_gso_segment`` on the inner frame, which skips
its Ethernet header and cuts the payload with the EtherType's offload; each
segment keeps a copy of every header above the cut (netstack's
``skb_segment``), the inner Ethernet header included.

Kernel: net/ethernet/eth.c (eth_gro_receive, eth_gro_complete,
eth_packet_offload, eth_offload_init); the GSO half is the ``ETH_P_TEB``
branch of net/core/dev.c ``__skb_network_protocol`` used by
``skb_mac_gso_segment``.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from netstack.core.net import PacketOffload
from netstack.gro.core import NapiGroCb, call_gro_receive
from netstack.gro.segment import skb_gso_cb
from netstack.sites import kernel
from netstack.wire.checksum import csum_block_sub, csum_partial
from netstack.wire.ethernet import ETH_HLEN, ETH_P_TEB

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.skbuff import SkBuff

__all__ = ["eth_gro_complete", "eth_gro_receive", "eth_offload_init", "teb_gso_segment"]


@kernel("net/ethernet/eth.c", "eth_gro_receive")
def eth_gro_receive(net: Net, head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """GRO for an Ethernet header inside a tunnel and the packet it carries.

    Kernel: net/ethernet/eth.c, eth_gro_receive().
    """
    cb: NapiGroCb = skb.cb
    off = cb.off
    buf = skb.buf
    pp: SkBuff | None = None
    flush = 1
    if skb.tail - off >= ETH_HLEN:
        flush = 0
        eh = buf[off : off + ETH_HLEN]
        rel = off - skb.data
        for p in head:
            pcb: NapiGroCb = p.cb
            if not pcb.same_flow:
                continue
            o2 = p.data + rel
            if p.buf[o2 : o2 + ETH_HLEN] != eh:  # compare_ether_header()
                pcb.same_flow = 0
        ptype = net.offload_base.get((eh[12] << 8) | eh[13])
        if ptype is None or ptype.gro_receive is None:
            flush = 1
        else:
            cb.off = off + ETH_HLEN  # skb_gro_pull()
            if cb.csum_valid:  # skb_gro_postpull_rcsum()
                cb.csum = csum_block_sub(cb.csum, csum_partial(buf, off, off + ETH_HLEN), 0)
            pp = call_gro_receive(ptype.gro_receive, head, skb)
    cb.flush |= flush  # skb_gro_flush_final()
    return pp


@kernel("net/ethernet/eth.c", "eth_gro_complete")
def eth_gro_complete(net: Net, skb: SkBuff, nhoff: int) -> int:
    """Kernel: net/ethernet/eth.c, eth_gro_complete()."""
    eh = skb.data + nhoff
    buf = skb.buf
    if skb.encapsulation:
        skb.inner_mac_header = eh  # skb_set_inner_mac_header(skb, nhoff)
    ptype = net.offload_base.get((buf[eh + 12] << 8) | buf[eh + 13])
    if ptype is None or ptype.gro_complete is None:
        return -38  # -ENOSYS
    return int(ptype.gro_complete(skb, nhoff + ETH_HLEN))


@kernel("net/core/dev.c", "__skb_network_protocol", "skb_mac_gso_segment")
def teb_gso_segment(net: Net, skb: SkBuff, features: int) -> SkBuff | None:
    """Segment a tunnelled Ethernet frame: skip its header, cut what it carries.

    ``data`` is at the inner Ethernet header (``gre_gso_segment`` pulled the
    GRE header).

    Kernel: net/core/dev.c, __skb_network_protocol() (``ETH_P_TEB``) as
    skb_mac_gso_segment() uses it.
    """
    eh = skb.data
    if skb.tail - eh < ETH_HLEN:
        return None
    buf = skb.buf
    ptype = net.offload_base.get((buf[eh + 12] << 8) | buf[eh + 13])
    if ptype is None or ptype.gso_segment is None:
        return None
    skb_gso_cb(skb).encap_level += ETH_HLEN
    skb.data = eh + ETH_HLEN
    segs = ptype.gso_segment(skb, features)
    skb.data = eh
    return segs


@kernel("net/ethernet/eth.c", "eth_offload_init")
def eth_offload_init(net: Net) -> None:
    """Register ``eth_packet_offload`` for ``ETH_P_TEB`` (built in, at boot).

    Kernel: net/ethernet/eth.c, eth_offload_init().
    """
    net.dev_add_offload(
        PacketOffload(
            ETH_P_TEB,
            partial(teb_gso_segment, net),
            partial(eth_gro_receive, net),
            partial(eth_gro_complete, net),
        )
    )
