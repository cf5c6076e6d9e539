"""GRO and GSO for IP-in-IP and 6in4: the ``ipip_offload`` and ``sit_offload``
entries of IPv4's offload table.

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

SIT (IPv6 in IPv4, protocol 41) has the same shape: ``sit_gro_receive``
marks the encapsulation and runs ``ipv6_gro_receive`` on the inner header,
which (with the same patch) clears the ``flush_id`` the outer IPv4 header
stored — IPv6 has no IP ID, and without the clearing the outer header's ID
verdict would reach the inner TCP check. ``sit_gro_complete`` marks the
aggregate ``SKB_GSO_IPXIP4`` and completes the inner IPv6 header. Before the
patch ``sit_offload`` too had only ``gso_segment`` (``ipv6_gso_segment`` for
the inner header of a 6in4 GSO skb), so 6in4 packets were flushed from GRO on
the physical device and aggregated only later, in the sit device's gro_cells.

Kernel: net/ipv4/af_inet.c (ipip_gro_receive, ipip_gro_complete,
ipip_offload, ipv4_offload_init), net/ipv6/ip6_offload.c (sit_gro_receive
— sit_ip6ip6_gro_receive since 4.6 —, sit_gro_complete, sit_offload).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from netstack.core.features import SKB_GSO_IPXIP4
from netstack.gro.core import NapiGroCb, NetOffload
from netstack.ipv4 import ipv4_of
from netstack.ipv4.offload import inet_gro_complete, inet_gro_receive, inet_gso_segment
from netstack.ipv6 import ipv6_of
from netstack.ipv6.offload import ipv6_gro_complete, ipv6_gro_receive, ipv6_gso_segment
from netstack.wire.ipv4 import IPPROTO_IPIP
from netstack.wire.ipv6 import NEXTHDR_IPV6

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.skbuff import SkBuff
    from netstack.ipv4.protocol import Ipv4
    from netstack.ipv6.protocol import Ipv6

__all__ = [
    "ipip_gro_complete",
    "ipip_gro_receive",
    "ipip_offload_init",
    "sit_gro_complete",
    "sit_gro_receive",
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
            partial(inet_gso_segment, ipv4),
            partial(ipip_gro_receive, ipv4),
            partial(ipip_gro_complete, ipv4),
        )
    else:
        offload = NetOffload(partial(inet_gso_segment, ipv4))
    ipv4.inet_add_offload(IPPROTO_IPIP, offload)


def sit_gro_receive(ipv6: Ipv6, head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """GRO for the inner IPv6 header of a 6in4 packet (one level of encapsulation).

    Kernel: net/ipv6/ip6_offload.c, sit_gro_receive() (4.6+: sit_ip6ip6_gro_receive()).
    """
    cb: NapiGroCb = skb.cb
    if cb.encap_mark:
        cb.flush = 1
        return None
    cb.encap_mark = 1
    return ipv6_gro_receive(ipv6, head, skb)


def sit_gro_complete(ipv6: Ipv6, skb: SkBuff, nhoff: int) -> int:
    """Kernel: net/ipv6/ip6_offload.c, sit_gro_complete()."""
    skb.encapsulation = True
    skb.gso_type |= SKB_GSO_IPXIP4  # 3.18: SKB_GSO_SIT
    return ipv6_gro_complete(ipv6, skb, nhoff)


def sit_offload_init(net: Net) -> None:
    """Register ``sit_offload`` for IPPROTO_IPV6 in IPv4's table — with its GRO
    callbacks only under the ``ipip_sit_gro`` patch.

    Kernel: net/ipv6/ip6_offload.c, ipv6_offload_init() (inet_add_offload(&sit_offload,
    IPPROTO_IPV6)).
    """
    ipv4 = ipv4_of(net)
    ipv6 = ipv6_of(net)
    if net.patches.ipip_sit_gro:
        offload = NetOffload(
            partial(ipv6_gso_segment, ipv6),
            partial(sit_gro_receive, ipv6),
            partial(sit_gro_complete, ipv6),
        )
    else:
        offload = NetOffload(partial(ipv6_gso_segment, ipv6))
    ipv4.inet_add_offload(NEXTHDR_IPV6, offload)
