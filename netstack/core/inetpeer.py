"""inetpeer: long-lived per-address state (ICMP and redirect rate tokens), bounded.

Theory of operation: each Net keeps one :class:`InetPeerBase` per family
(``net->ipv4.peers``, ``net->ipv6.peers``). A peer is found by address and its
``dtime`` (last use) refreshed; a missing one is created. The kernel keeps the
peers in an rb-tree and, whenever it must create one, offers the (at most
``PEER_MAX_GC`` = 32) nodes it walked past to the garbage collector
(``inet_peer_gc``): a node unused for longer than a TTL is freed. The TTL
shrinks linearly from ``inet_peer_maxttl`` (10 min) towards
``inet_peer_minttl`` (2 min) as the pool fills, and is 0 once the pool holds
``inet_peer_threshold`` peers: then every node walked past goes, so a flood
of new sources keeps the pool at the threshold instead of growing it.

Here the tree is a sorted list of addresses searched by bisection: the
entries a binary search probes are the path of a balanced search tree, and
they are what the GC examines. Nothing holds a reference to a peer beyond a
call (the kernel's ``refcount_dec_if_one`` always succeeds), so every
examined peer older than the TTL is freed.

The thresholds are the kernel's global sysctls ``net.ipv4.inet_peer_threshold``,
``inet_peer_minttl`` and ``inet_peer_maxttl``; both families of a Net read them
from one :class:`InetPeerParams`.

A peer's ``rate_tokens`` feed one token bucket per destination,
:func:`inet_peer_xrlim_allow`, which ICMP and ICMPv6 errors, redirects and
ndisc share: tokens accrue one per jiffy up to ``XRLIM_BURST_FACTOR`` times
the interval, and each allowed message spends one interval's worth.

Kernel: net/ipv4/inetpeer.c, include/net/inetpeer.h.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING, Final

from netstack.core.net_generic import NetKey
from netstack.sites import kernel

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = [
    "INET_PEER_THRESHOLD",
    "InetPeer",
    "InetPeerBase",
    "InetPeerParams",
    "inet_peer_params",
    "inet_peer_xrlim_allow",
]

PEER_MAX_GC: Final = 32
# clamp(1 % of RAM / sizeof(struct inet_peer), 4096, 65536 + 128): the upper end on any
# machine with more than ~800 MB
INET_PEER_THRESHOLD: Final = 65536 + 128
INET_PEER_MINTTL_S: Final = 120
INET_PEER_MAXTTL_S: Final = 600
XRLIM_BURST_FACTOR: Final = 6


class InetPeerParams:
    """The inetpeer sysctls (global in the kernel; one per Net here)."""

    __slots__ = ("inet_peer_maxttl", "inet_peer_minttl", "inet_peer_threshold")

    def __init__(self) -> None:
        self.inet_peer_threshold = INET_PEER_THRESHOLD
        self.inet_peer_minttl = INET_PEER_MINTTL_S  # seconds (proc_dointvec_jiffies)
        self.inet_peer_maxttl = INET_PEER_MAXTTL_S


def inet_peer_params(net: Net) -> InetPeerParams:
    """The Net's inetpeer sysctls, created on first use."""
    return _INET_PEER_NET.get_or_create(net, InetPeerParams)


_INET_PEER_NET: NetKey[InetPeerParams] = NetKey("inet_peer")


class InetPeer:
    """Per-address state: ICMP rate tokens and redirects (kernel: ``struct inet_peer``)."""

    __slots__ = ("daddr", "dtime", "n_redirects", "rate_last", "rate_tokens")

    def __init__(self, daddr: int, now: int, hz: int) -> None:
        self.daddr = daddr
        self.dtime = now
        self.rate_tokens = 0
        # "60*HZ is arbitrary, but chosen enough high so that the first
        # calculation of tokens is at its maximum."
        self.rate_last = now - 60 * hz
        self.n_redirects = 0


class InetPeerBase:
    """The peers of one family of one Net (kernel: ``struct inet_peer_base``)."""

    def __init__(self, net: Net) -> None:
        self.net = net
        self.params = inet_peer_params(net)
        self.peers: dict[int, InetPeer] = {}
        self.keys: list[int] = []  # sorted addresses: the rb-tree's in-order walk
        self.created = 0
        self.reclaimed = 0

    @property
    def total(self) -> int:
        """``base->total``."""
        return len(self.peers)

    def __len__(self) -> int:
        return len(self.peers)

    def get(self, daddr: int) -> InetPeer | None:
        """The peer of *daddr* if there is one (no creation, no GC)."""
        return self.peers.get(daddr)

    def inet_getpeer(self, daddr: int) -> InetPeer:
        """Find or create the peer of *daddr*; a creation runs the GC on the path.

        This is net/ipv4/inetpeer.c's inet_getpeer(). Its timed-mode cost is the
        one IPv4's ``inet_getpeer_v4`` wrapper already charges (and IPv6 charged
        none for its lookup before), so it is no cost site of its own: the
        seed experiments' figures stay where they were.
        """
        now = self.net.clock.jiffies
        p = self.peers.get(daddr)
        if p is not None:
            p.dtime = now
            return p
        keys = self.keys
        peers = self.peers
        gc_stack: list[InetPeer] = []
        lo, hi = 0, len(keys)
        while lo < hi:  # lookup(): the nodes walked past on the way down
            mid = (lo + hi) >> 1
            if len(gc_stack) < PEER_MAX_GC:
                gc_stack.append(peers[keys[mid]])
            if keys[mid] < daddr:
                lo = mid + 1
            else:
                hi = mid
        p = InetPeer(daddr, now, self.net.clock.hz)
        keys.insert(lo, daddr)
        peers[daddr] = p
        self.created += 1
        if gc_stack:
            self.inet_peer_gc(gc_stack)
        return p

    @kernel("net/ipv4/inetpeer.c", "inet_peer_gc")
    def inet_peer_gc(self, gc_stack: list[InetPeer]) -> None:
        """Free the examined peers unused for longer than the load's TTL.

        Kernel: net/ipv4/inetpeer.c, inet_peer_gc().
        """
        params = self.params
        hz = self.net.clock.hz
        threshold = params.inet_peer_threshold
        maxttl = params.inet_peer_maxttl * hz
        minttl = params.inet_peer_minttl * hz
        total = len(self.peers)
        if total >= threshold:
            ttl = 0  # be aggressive
        else:
            ttl = maxttl - (maxttl - minttl) // hz * total // threshold * hz
        now = self.net.clock.jiffies
        keys = self.keys
        for p in gc_stack:
            if now - p.dtime < ttl:
                continue
            del self.peers[p.daddr]
            del keys[bisect_left(keys, p.daddr)]
            self.reclaimed += 1


@kernel("net/ipv4/inetpeer.c", "inet_peer_xrlim_allow")
def inet_peer_xrlim_allow(peer: InetPeer, timeout: int, now: int) -> bool:
    """Per-destination token bucket: may *peer* get another message, *timeout* jiffies apart?

    *now* is the Net's jiffies.

    Kernel: net/ipv4/inetpeer.c, inet_peer_xrlim_allow().
    """
    token = peer.rate_tokens + now - peer.rate_last
    peer.rate_last = now
    if token > XRLIM_BURST_FACTOR * timeout:
        token = XRLIM_BURST_FACTOR * timeout
    rc = False
    if token >= timeout:
        token -= timeout
        rc = True
    peer.rate_tokens = token
    return rc
