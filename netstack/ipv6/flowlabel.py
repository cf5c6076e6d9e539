"""Automatic IPv6 flow labels, as Linux puts them in the headers it sends.

Theory of operation: every IPv6 header Linux builds for a socket (TCP's
``ip6_xmit``, UDP/raw/ping/ICMPv6 through ``__ip6_make_skb``) gets its flow
label from ``ip6_make_flowlabel``: a label the user set wins; otherwise,
when automatic labels apply, the label is the packet's flow hash, rotated by
16 bits and masked to 20 bits. Whether they apply is
``net.ipv6.auto_flowlabels``:

* 0 (``IP6_AUTO_FLOW_LABEL_OFF``): never;
* 1 (``OPTOUT``, the default): yes, unless the socket says
  ``IPV6_AUTOFLOWLABEL = 0``;
* 2 (``OPTIN``): only for sockets that set ``IPV6_AUTOFLOWLABEL = 1``;
* 3 (``FORCED``): always, whatever the socket says.

``net.ipv6.flowlabel_state_ranges`` (default 0) sets the top bit of an
automatic label, the stateless half of RFC 6437's split.

The flow hash is ``skb->hash``. TCP puts the socket's ``sk_txhash`` there
(a random number drawn at connect, kept across the connection and redrawn by
``sk_rethink_txhash`` after each RTO), so a connection's label is stable and
changes when TCP suspects its path (RFC 6438's reason for labels). An skb with
no hash (UDP, ICMPv6, TCP replies without a socket) gets the flow dissector's
hash of the flow keys (``__get_hash_from_flowi6``): addresses, ports (ICMP
type and code), protocol, ordered so both directions hash alike
(``__flow_hash_consistentify``) and keyed by a per-boot random ``hashrnd``.
The kernel's keyed function is siphash; netstack uses keyed BLAKE2s with the
same inputs, so labels are stable per flow and unpredictable without the
key, and reproducible for a given ``Net`` seed.

The kernel casts the host-order hash to ``__be32`` before masking, so on a
little-endian machine the label is made of the hash's bytes in memory order;
``ip6_make_flowlabel`` reproduces what an x86 host sends.

Kernel: include/net/ipv6.h (ip6_make_flowlabel, ip6_default_np_autolabel),
net/ipv6/ip6_output.c (ip6_autoflowlabel), net/core/flow_dissector.c
(__get_hash_from_flowi6, flow_hash_from_keys), include/net/sock.h
(net_tx_rndhash, sk_set_txhash, sk_rethink_txhash).
"""

from __future__ import annotations

import random
from hashlib import blake2s
from typing import TYPE_CHECKING, Final

from netstack.sites import kernel

if TYPE_CHECKING:
    from netstack.ipv6.netns import Ipv6

__all__ = [
    "IP6_AUTO_FLOW_LABEL_FORCED",
    "IP6_AUTO_FLOW_LABEL_OFF",
    "IP6_AUTO_FLOW_LABEL_OPTIN",
    "IP6_AUTO_FLOW_LABEL_OPTOUT",
    "IPV6_AUTOFLOWLABEL",
    "IPV6_FLOWLABEL_MASK",
    "IPV6_FLOWLABEL_STATELESS_FLAG",
    "FlowHash",
    "ip6_autoflowlabel",
    "ip6_default_np_autolabel",
    "ip6_make_flowlabel",
]

IP6_AUTO_FLOW_LABEL_OFF: Final = 0
IP6_AUTO_FLOW_LABEL_OPTOUT: Final = 1
IP6_AUTO_FLOW_LABEL_OPTIN: Final = 2
IP6_AUTO_FLOW_LABEL_FORCED: Final = 3
IPV6_AUTOFLOWLABEL: Final = 70  # include/uapi/linux/in6.h
IPV6_FLOWLABEL_MASK: Final = 0x000FFFFF  # the label's 20 bits (host order)
IPV6_FLOWLABEL_STATELESS_FLAG: Final = 0x00080000
_M32: Final = 0xFFFFFFFF
_CACHE_MAX: Final = 4096


@kernel("include/net/ipv6.h", "ip6_default_np_autolabel")
def ip6_default_np_autolabel(ipv6: Ipv6) -> bool:
    """Do sockets that did not say get automatic labels?

    Kernel: include/net/ipv6.h, ip6_default_np_autolabel().
    """
    return ipv6.auto_flowlabels in (IP6_AUTO_FLOW_LABEL_OPTOUT, IP6_AUTO_FLOW_LABEL_FORCED)


@kernel("net/ipv6/ip6_output.c", "ip6_autoflowlabel")
def ip6_autoflowlabel(ipv6: Ipv6, autoflowlabel: int) -> bool:
    """The socket's choice (``IPV6_AUTOFLOWLABEL``; -1: not set, the sysctl's default).

    Kernel: net/ipv6/ip6_output.c, ip6_autoflowlabel().
    """
    if autoflowlabel < 0:  # !np->autoflowlabel_set
        return ip6_default_np_autolabel(ipv6)
    return bool(autoflowlabel)


@kernel("include/net/ipv6.h", "ip6_make_flowlabel")
def ip6_make_flowlabel(ipv6: Ipv6, flowhash: int, flowlabel: int, autolabel: bool) -> int:
    """The flow label to send: the user's, else one made from the flow hash, else 0.

    Kernel: include/net/ipv6.h, ip6_make_flowlabel().
    """
    flowlabel &= IPV6_FLOWLABEL_MASK
    if flowlabel:
        return flowlabel
    auto = ipv6.auto_flowlabels
    if auto == IP6_AUTO_FLOW_LABEL_OFF or (not autolabel and auto != IP6_AUTO_FLOW_LABEL_FORCED):
        return 0
    h = ((flowhash << 16) | (flowhash >> 16)) & _M32  # rol32(hash, 16)
    # (__force __be32)hash & IPV6_FLOWLABEL_MASK on a little-endian host
    flowlabel = int.from_bytes(h.to_bytes(4, "little"), "big") & IPV6_FLOWLABEL_MASK
    if ipv6.flowlabel_state_ranges:
        flowlabel |= IPV6_FLOWLABEL_STATELESS_FLAG
    return flowlabel


@kernel("net/core/flow_dissector.c")
class FlowHash:
    """The flow dissector's keyed hash of a flow's keys, per Net.

    Kernel: net/core/flow_dissector.c (hashrnd, __flow_hash_consistentify,
    flow_hash_from_keys, __get_hash_from_flowi6).
    """

    __slots__ = ("_cache", "_key")

    def __init__(self, seed: int, name: str) -> None:
        # net_get_random_once(&hashrnd): its own stream, so drawing it does not
        # move the Net's other random numbers (IP IDs, ports, ISN secrets)
        self._key = random.Random(f"{seed}/{name}/flow_dissector_hashrnd").randbytes(16)
        self._cache: dict[tuple[int, int, int, int, int, int], int] = {}

    @kernel("net/core/flow_dissector.c", "__get_hash_from_flowi6")
    def flowi6(
        self, saddr: int, daddr: int, sport: int, dport: int, proto: int, flowlabel: int = 0
    ) -> int:
        """The hash of an IPv6 flow; *sport*/*dport* are ICMP type/code for ICMPv6.

        Kernel: net/core/flow_dissector.c, __get_hash_from_flowi6().
        """
        key = (saddr, daddr, sport, dport, proto, flowlabel & IPV6_FLOWLABEL_MASK)
        h = self._cache.get(key)
        if h is not None:
            return h
        # __flow_hash_consistentify(): the lower address (then port) first
        a, b, pa, pb = saddr, daddr, sport, dport
        if b < a or (a == b and pb < pa):
            a, b, pa, pb = b, a, pb, pa
        data = (
            a.to_bytes(16, "big")
            + b.to_bytes(16, "big")
            + bytes((pa >> 8, pa & 0xFF, pb >> 8, pb & 0xFF, proto))
            + key[5].to_bytes(4, "big")
        )
        h = int.from_bytes(blake2s(data, digest_size=4, key=self._key).digest(), "little")
        h = h or 1  # flow_hash_from_keys(): 0 means "no hash"
        if len(self._cache) >= _CACHE_MAX:
            self._cache.clear()
        self._cache[key] = h
        return h
