"""GRO and GSO for IP-in-IP: the ``ipip_offload`` entry of IPv4's offload table.

Theory of operation: IPv4's ``inet_gro_receive`` looks up the outer header's
protocol in ``inet_offloads``. For IPPROTO_IPIP (4) it finds
``ipip_gro_receive``, which marks the packet as encapsulated (a second
encapsulation is flushed) and runs ``inet_gro_receive`` again on the inner
header: the outer and the inner headers must both match a held packet's, and
the inner TCP header decides the merge. ``ipip_gro_complete`` marks the
aggregate ``encapsulation`` with ``SKB_GSO_IPXIP4`` and completes the inner
header; the outer one was completed by the caller. The merged super-packet
then crosses ``ip_rcv`` and ``ipip_rcv`` once instead of once per segment.

Before Tom Herbert's 2014 patch (``Patches.ipip_sit_gro``) the entry had only
``gso_segment``: outer IPIP packets were flushed from GRO at once and each
went up the stack alone; their inner packets met GRO again only in the
tunnel's ``gro_cells``.

SIT (IPv6 in IPv4, protocol 41) has the same shape with ``ipv6_gro_receive``
for the inner header; IPv6 GRO is not built yet, so SIT has no GRO here.

Kernel: net/ipv4/af_inet.c (ipip_gro_receive, ipip_gro_complete,
ipip_offload, ipv4_offload_init).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from netstack.core.features import SKB_GSO_IPXIP4
from netstack.gro.core import NapiGroCb, NetOffload
from netstack.ipv4 import ipv4_of
from netstack.ipv4.offload import inet_gro_complete, inet_gro_receive, ipip_gso_segment
from netstack.wire.ethernet import ETH_P_IPV6
from netstack.wire.ipv4 import IPPROTO_IPIP, IPPROTO_IPV6

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.skbuff import SkBuff
    from netstack.ipv4.protocol import Ipv4

__all__ = [
    "ipip_gro_complete",
    "ipip_gro_receive",
    "ipip_offload_init",
    "sit_gso_segment",
    "sit_offload_init",
]


def ipip_gro_receive(ipv4: Ipv4, head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """GRO for the inner IPv4 header of an IPIP packet (one level of encapsulation).

    Kernel: net/ipv4/af_inet.c, ipip_gro_receive().
    """
    cb: NapiGroCb = skb.cb
    if cb.encap_mark:
        cb.flush = 1
        return None
    cb.encap_mark = 1
    return inet_gro_receive(ipv4, head, skb)


def ipip_gro_complete(ipv4: Ipv4, skb: SkBuff, nhoff: int) -> int:
    """Kernel: net/ipv4/af_inet.c, ipip_gro_complete()."""
    skb.encapsulation = True
    skb.gso_type |= SKB_GSO_IPXIP4
    return inet_gro_complete(ipv4, skb, nhoff)


def ipip_offload_init(net: Net) -> None:
    """Register ``ipip_offload`` in IPv4's table — with its GRO callbacks
    only under the ``ipip_sit_gro`` patch.

    Kernel: net/ipv4/af_inet.c, ipv4_offload_init() (inet_add_offload(&ipip_offload, ...)).
    """
    ipv4 = ipv4_of(net)
    if net.patches.ipip_sit_gro:
        offload = NetOffload(
            partial(ipip_gso_segment, ipv4),
            partial(ipip_gro_receive, ipv4),
            partial(ipip_gro_complete, ipv4),
        )
    else:
        offload = NetOffload(partial(ipip_gso_segment, ipv4))
    ipv4.inet_add_offload(IPPROTO_IPIP, offload)


def sit_gso_segment(net: Net, skb: SkBuff, features: int) -> SkBuff | None:
    """Segment the inner IPv6 packet of a SIT GSO skb (``SKB_GSO_IPXIP4``).

    ``ipv6_gso_segment`` is IPv6's GSO callback, reached through the Net's
    ``offload_base``; without one (no IPv6 GSO built) the skb cannot be cut.

    Kernel: net/ipv6/ip6_offload.c, sit_gso_segment().
    """
    if not skb.gso_type & SKB_GSO_IPXIP4:
        return None
    ipv6_offload = net.offload_base.get(ETH_P_IPV6)
    if ipv6_offload is None or ipv6_offload.gso_segment is None:
        return None
    return ipv6_offload.gso_segment(skb, features)


def sit_offload_init(net: Net) -> None:
    """Register ``sit_offload`` (protocol 41) in IPv4's table: GSO only here.

    Kernel: net/ipv6/ip6_offload.c, ipv6_offload_init() (inet_add_offload(&sit_offload, ...)).
    """
    ipv4_of(net).inet_add_offload(IPPROTO_IPV6, NetOffload(partial(sit_gso_segment, net)))
