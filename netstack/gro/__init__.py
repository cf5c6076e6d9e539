"""GRO and GSO: receive coalescing and software segmentation.

:mod:`netstack.gro.core` is the engine (``dev_gro_receive``, the hold lists,
``napi_gro_flush``) with its per-Net offload tables; :mod:`netstack.gro.segment`
cuts GSO skbs (``skb_segment``); :mod:`netstack.gro.tcp` holds the TCP
callbacks both IP families share (``tcp_gro_receive``, ``tcp_gso_segment``).
The IPv4 callbacks (``inet_gro_receive`` …) live in ``netstack.ipv4.offload``
and register per Net, as tunnels and IPv6 will.
"""

from netstack.gro.core import (
    GRO_HELD,
    GRO_MERGED,
    GRO_MERGED_FREE,
    GRO_NORMAL,
    MAX_GRO_SKBS,
    GroNode,
    GroStats,
    NapiGroCb,
    NetOffload,
    gro_init,
    gro_statistics,
    skb_gro_checksum_validate,
    skb_gro_receive,
)
from netstack.gro.segment import skb_segment

__all__ = [
    "GRO_HELD",
    "GRO_MERGED",
    "GRO_MERGED_FREE",
    "GRO_NORMAL",
    "MAX_GRO_SKBS",
    "GroNode",
    "GroStats",
    "NapiGroCb",
    "NetOffload",
    "gro_init",
    "gro_statistics",
    "skb_gro_checksum_validate",
    "skb_gro_receive",
    "skb_segment",
]
